//! Boards, members and reads: health, the board lifecycle, submits, reads,
//! removals, resets and combines, percent-encoded ids.

use super::*;

#[tokio::test]
async fn health_and_openapi() {
    let app = app();
    let r = call(&app, "GET", "/healthz", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"status": "ok", "backend": "embedded", "version": env!("CARGO_PKG_VERSION"), "commit": crate::COMMIT})
    );
    let r = call(&app, "GET", "/openapi.json", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["openapi"], "3.1.0");
}

#[tokio::test]
async fn readyz_is_200_while_serving_and_503_once_the_server_stops() {
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let cfg = HttpConfig {
        stop: Some(stop_rx),
        ..HttpConfig::default()
    };
    let app = app_with(cfg);
    let r = call(&app, "GET", "/readyz", None).await;
    assert_eq!(
        (r.status, r.json()),
        (StatusCode::OK, json!({"status": "ready"}))
    );
    stop.send(true).unwrap();
    let r = call(&app, "GET", "/readyz", None).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready".into())
    );
    // Liveness is not readiness: the process still answers.
    assert_eq!(call(&app, "GET", "/healthz", None).await.status, 200);
}

#[tokio::test]
async fn healthz_is_503_while_the_log_cannot_write_and_200_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = podium_engine::Store::new();
    let (storage, aux, report) =
        podium_store::storage::open(dir.path(), crate::settings::FsyncPolicy::Always, &store)
            .unwrap();
    let svc = Arc::new(Service::new(store, Some(storage), aux, report, u64::MAX));
    let app = router(
        Arc::new(EmbeddedBackend::new(svc.clone())),
        HttpConfig::default(),
        None,
    );
    let write = json!({"member": "a", "score": 1});
    assert_eq!(call(&app, "GET", "/healthz", None).await.status, 200);
    svc.storage().unwrap().log.faults().write = true;
    let r = call(&app, "POST", "/v1/boards/b/scores", Some(write.clone())).await;
    assert_eq!(
        (r.status, r.code()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable".into()
        )
    );
    for probe in ["/healthz", "/readyz"] {
        let r = call(&app, "GET", probe, None).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{probe}");
        assert_eq!(r.code(), "storage_unavailable", "{probe}");
    }
    let r = call(&app, "GET", "/healthz", None).await;
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("No space left"), "{msg}");
    svc.storage().unwrap().log.faults().write = false;
    let t = std::time::Instant::now();
    loop {
        let r = call(&app, "GET", "/healthz", None).await;
        if r.status == 200 {
            assert_eq!(
                r.json(),
                json!({"status": "ok", "backend": "embedded", "version": env!("CARGO_PKG_VERSION"), "commit": crate::COMMIT})
            );
            let r = call(&app, "GET", "/readyz", None).await;
            assert_eq!(
                (r.status, r.json()),
                (StatusCode::OK, json!({"status": "ready"}))
            );
            break;
        }
        assert!(
            t.elapsed().as_secs() < 30,
            "still {}: {}",
            r.status,
            r.json()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let r = call(&app, "POST", "/v1/boards/b/scores", Some(write)).await;
    assert_eq!(r.status, 200, "{}", r.json());
}

#[tokio::test]
async fn board_lifecycle() {
    let app = app();
    let r = call(
        &app,
        "PUT",
        "/v1/boards/laps",
        Some(json!({"order": "asc", "ranking": "dense"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.json());
    let j = r.json();
    assert_eq!(j["board"], "laps");
    assert_eq!(j["created"], true);
    assert_eq!(j["config"]["order"], "asc");
    assert_eq!(j["members"], 0);

    let r = call(
        &app,
        "PUT",
        "/v1/boards/laps",
        Some(json!({"order": "asc"})),
    )
    .await;
    assert_eq!(r.status, 409, "a re-rank unconfirmed");
    assert_eq!(r.json()["error"]["code"], "confirm_rerank_required");
    let r = call(
        &app,
        "PUT",
        "/v1/boards/laps",
        Some(json!({"order": "asc", "confirm_rerank": true})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["created"], false);
    // An empty body is the default config.
    let r = send(&app, req("PUT", "/v1/boards/plain", None)).await;
    assert_eq!(r.status, 201);
    let r = call(&app, "PUT", "/v1/boards/plain2", Some(json!({}))).await;
    assert_eq!(r.status, 201);

    let r = call(&app, "GET", "/v1/boards/laps", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["read_only"], false);
    assert!(r.json().get("created").is_none());

    let r = call(&app, "GET", "/v1/boards", None).await;
    let names: Vec<String> = r.json()["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["board"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["laps", "plain", "plain2"]);

    let r = call(&app, "DELETE", "/v1/boards/laps", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"board": "laps", "deleted": true}));
    expect_err(&app, "GET", "/v1/boards/laps", None, 404, "board_not_found").await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/laps",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "PUT",
        "/v1/boards/x",
        Some(r#"{"order":"sideways"}"#),
        400,
        "invalid_config",
    )
    .await;
    expect_err(
        &app,
        "PUT",
        "/v1/boards/x",
        Some("[1]"),
        400,
        "invalid_config",
    )
    .await;
}

#[tokio::test]
async fn submit_one_and_batch() {
    let app = app();
    let r = call(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(json!({"member": "alice", "score": 10})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"member": "alice", "score": 10.0, "rank": 1, "previous": null,
               "changed": true, "created": true, "applied": true, "evicted": 0})
    );
    let r = call(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(json!({"member": "alice", "score": "5", "op": "incr"})),
    )
    .await;
    assert_eq!(r.json()["score"], 15.0);
    assert_eq!(r.json()["previous"], 10.0);

    let r = call(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(json!([{"member": "bob", "score": 20}, {"member": "carol", "score": "-inf"}])),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let j = r.json();
    assert_eq!(j["board"], "g");
    let res = j["results"].as_array().unwrap();
    assert_eq!(res.len(), 2);
    assert_eq!(res[0]["rank"], 1);
    assert_eq!(res[1]["score"], "-inf");
    assert_eq!(res[1]["rank"], 3);
    // A bad entry refuses the whole batch (nothing applied)…
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(r#"[{"member":"zed","score":1},{"member":"","score":1}]"#),
        400,
        "invalid_member",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/g/rank/zed",
        None,
        404,
        "member_not_found",
    )
    .await;
    // …while an entry that fails on the board's state fails alone.
    call(
        &app,
        "PUT",
        "/v1/boards/capped",
        Some(json!({"max_score": 10})),
    )
    .await;
    let r = call(
        &app,
        "POST",
        "/v1/boards/capped/scores",
        Some(json!([{"member": "a", "score": 8}, {"member": "a", "score": 5, "op": "incr"}, {"member": "b", "score": 1}])),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let res = r.json()["results"].clone();
    assert_eq!(res[0]["score"], 8.0);
    assert_eq!(res[1]["member"], "a");
    assert_eq!(res[1]["error"]["code"], "invalid_score");
    assert_eq!(res[2]["rank"], 2);
    // A NaN inside a batch fails the request.
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(r#"[{"member":"x","score":"nan"}]"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some("42"),
        400,
        "malformed_request",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(r#"{"member":"x","score":1,"scroe":2}"#),
        400,
        "malformed_request",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(r#"{"member":"x","score":1,"op":"double"}"#),
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/g/scores",
        Some(r#"{"member":"x","score":1,"data":[1]}"#),
        400,
        "invalid_data",
    )
    .await;
}

#[tokio::test]
async fn reads() {
    let app = app();
    seed(&app, "r", 30).await;

    let r = call(&app, "GET", "/v1/boards/r/top?page=2&page_size=10", None).await;
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(
        (
            j["page"].as_u64(),
            j["page_size"].as_u64(),
            j["total"].as_u64(),
            j["total_pages"].as_u64()
        ),
        (Some(2), Some(10), Some(30), Some(3))
    );
    assert_eq!(j["ranking"], "unique");
    assert_eq!(
        j["entries"][0],
        json!({"member": "m20", "score": 20.0, "rank": 11, "name": "Name 20"})
    );
    let r = call(&app, "GET", "/v1/boards/r/top", None).await;
    assert_eq!(r.json()["entries"].as_array().unwrap().len(), 25);

    // Data only with with_data.
    let r = call(
        &app,
        "PATCH",
        "/v1/boards/r/members/m30",
        Some(json!({"data": {"lvl": 3}})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"board": "r", "member": "m30", "found": true})
    );
    let r = call(&app, "GET", "/v1/boards/r/top?page_size=1", None).await;
    assert!(r.json()["entries"][0].get("data").is_none());
    let r = call(
        &app,
        "GET",
        "/v1/boards/r/top?page_size=1&with_data=true",
        None,
    )
    .await;
    assert_eq!(r.json()["entries"][0]["data"], json!({"lvl": 3}));
    expect_err(
        &app,
        "PATCH",
        "/v1/boards/r/members/nobody",
        Some(r#"{"name":"x"}"#),
        404,
        "member_not_found",
    )
    .await;

    let r = call(&app, "GET", "/v1/boards/r/members/m30?page_size=10", None).await;
    let j = r.json();
    assert_eq!(j["board"], "r");
    assert_eq!(j["member"], "m30");
    assert_eq!(j["rank"], 1);
    assert_eq!(j["page"], 1);
    assert_eq!(j["total"], 30);
    assert_eq!(j["data"], json!({"lvl": 3}));
    assert!(j["percentile"].is_number());

    let r = call(&app, "GET", "/v1/boards/r/rank/m28", None).await;
    assert_eq!(
        r.json(),
        json!({"board": "r", "ranking": "unique", "member": "m28", "rank": 3, "score": 28.0})
    );
    let r = call(&app, "GET", "/v1/boards/r/percentile/m30", None).await;
    assert_eq!(r.json()["percentile"], 100.0);
    let r = call(&app, "GET", "/v1/boards/r/score_at_percentile?p=100", None).await;
    assert_eq!(r.json()["entry"]["member"], "m30");
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/score_at_percentile?p=101",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/score_at_percentile",
        None,
        400,
        "invalid_argument",
    )
    .await;

    let r = call(&app, "GET", "/v1/boards/r/around/m15?page_size=5", None).await;
    let j = r.json();
    assert_eq!(j["rank"], 16);
    let ms: Vec<&str> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].as_str().unwrap())
        .collect();
    assert!(ms.contains(&"m15") && ms.len() == 5, "{ms:?}");

    let r = call(&app, "GET", "/v1/boards/r/range/rank?start=2&count=3", None).await;
    let ms: Vec<String> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ms, ["m29", "m28", "m27"]);
    let r = call(
        &app,
        "GET",
        "/v1/boards/r/range/rank?start=1&count=2&from=worst",
        None,
    )
    .await;
    assert_eq!(r.json()["entries"][0]["member"], "m1");
    assert_eq!(r.json()["total"], 30);
    let r = call(&app, "GET", "/v1/boards/r/range/score?min=(5&max=7", None).await;
    let ms: Vec<Value> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].clone())
        .collect();
    assert_eq!(ms, [json!("m7"), json!("m6")]);
    let r = call(
        &app,
        "GET",
        "/v1/boards/r/range/score?min=-inf&max=%2Binf&from=worst&offset=1&limit=2",
        None,
    )
    .await;
    let ms: Vec<Value> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].clone())
        .collect();
    assert_eq!(ms, [json!("m2"), json!("m3")]);
    let r = call(&app, "GET", "/v1/boards/r/range/score?max=inf", None).await;
    assert_eq!(r.json()["entries"].as_array().unwrap().len(), 25);
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range/score?min=abc",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range/rank?count=2",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range/rank?start=1&count=2&min=3",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range/rank?start=1&count=0",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range/rank?start=1&count=2&from=middle",
        None,
        400,
        "invalid_argument",
    )
    .await;

    let r = call(&app, "GET", "/v1/boards/r/count", None).await;
    assert_eq!(r.json(), json!({"board": "r", "count": 30}));
    let r = call(&app, "GET", "/v1/boards/r/count?min=10&max=(20", None).await;
    assert_eq!(r.json()["count"], 10);

    let r = call(
        &app,
        "POST",
        "/v1/boards/r/ranks",
        Some(json!({"members": ["m3", "ghost", "m30"], "with_data": true})),
    )
    .await;
    let j = r.json();
    assert_eq!(j["entries"][0]["member"], "m30");
    assert_eq!(j["entries"][0]["data"], json!({"lvl": 3}));
    assert_eq!(j["entries"][1]["member"], "m3");
    assert_eq!(j["missing"], json!(["ghost"]));
}

#[tokio::test]
async fn removals() {
    let app = app();
    seed(&app, "d", 20).await;
    let r = call(&app, "DELETE", "/v1/boards/d/members/m1", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"board": "d", "removed": 1}));
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/d/members/m1",
        None,
        404,
        "member_not_found",
    )
    .await;
    let r = call(
        &app,
        "POST",
        "/v1/boards/d/remove",
        Some(json!({"members": ["m2", "m3", "zzz"]})),
    )
    .await;
    assert_eq!(r.json()["removed"], 2);
    // Ranks 1..=2 are m20, m19.
    let r = call(
        &app,
        "DELETE",
        "/v1/boards/d/range/rank?start=1&count=2",
        None,
    )
    .await;
    assert_eq!(r.json()["removed"], 2);
    let r = call(
        &app,
        "DELETE",
        "/v1/boards/d/range/score?min=4&max=(6",
        None,
    )
    .await;
    assert_eq!(r.json()["removed"], 2);
    let r = call(&app, "GET", "/v1/boards/d/count", None).await;
    assert_eq!(r.json()["count"], 13);
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/d/range/score?min=4",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/d/range/rank?start=0&count=2",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/nope/range/rank?start=1&count=1",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/d/remove",
        Some(r#"{"member":["x"]}"#),
        400,
        "malformed_request",
    )
    .await;
}

#[tokio::test]
async fn reset_merge_intersect() {
    let app = app();
    seed(&app, "a", 3).await;
    seed(&app, "b", 5).await;
    let r = call(
        &app,
        "POST",
        "/v1/boards/u/merge",
        Some(json!({"sources": ["a", "b"]})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json(), json!({"board": "u", "members": 5}));
    let r = call(&app, "GET", "/v1/boards/u/rank/m3", None).await;
    assert_eq!(r.json()["score"], 6.0);
    let r = call(
        &app,
        "POST",
        "/v1/boards/i/intersect",
        Some(json!({"sources": ["a", "b"], "weights": [1, 2], "aggregate": "max"})),
    )
    .await;
    assert_eq!(r.json()["members"], 3);
    let r = call(&app, "GET", "/v1/boards/i/rank/m3", None).await;
    assert_eq!(r.json()["score"], 6.0);
    expect_err(
        &app,
        "POST",
        "/v1/boards/i/merge",
        Some(r#"{"sources":["a"],"aggregate":"avg"}"#),
        400,
        "invalid_argument",
    )
    .await;

    let r = call(&app, "POST", "/v1/boards/a/reset", None).await;
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["board"], "a");
    assert_eq!(j["archived"], 3);
    let archive = j["archive"].as_str().unwrap().to_string();
    assert!(archive.starts_with("a@"));
    let enc: String = archive.replace(':', "%3A");
    let r = call(&app, "GET", &format!("/v1/boards/{enc}"), None).await;
    assert_eq!(r.json()["read_only"], true);
    expect_err(
        &app,
        "POST",
        &format!("/v1/boards/{enc}/scores"),
        Some(r#"{"member":"x","score":1}"#),
        409,
        "read_only",
    )
    .await;
    let r = call(&app, "GET", "/v1/boards/a/count", None).await;
    assert_eq!(r.json()["count"], 0);
    expect_err(
        &app,
        "POST",
        "/v1/boards/nope/reset",
        None,
        404,
        "board_not_found",
    )
    .await;
}

#[tokio::test]
async fn percent_encoded_members_and_boards() {
    let app = app();
    let r = call(
        &app,
        "POST",
        "/v1/boards/my%20board%2Fx/scores",
        Some(json!({"member": "team/red/1", "score": 3})),
    )
    .await;
    assert_eq!(r.status, 200);
    let r = call(
        &app,
        "GET",
        "/v1/boards/my%20board%2Fx/members/team%2Fred%2F1",
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["member"], "team/red/1");
    assert_eq!(r.json()["board"], "my board/x");
    let r = call(
        &app,
        "GET",
        "/v1/boards/my%20board%2Fx/rank/team%2Fred%2F1",
        None,
    )
    .await;
    assert_eq!(r.json()["rank"], 1);
    let r = call(
        &app,
        "DELETE",
        "/v1/boards/my%20board%2Fx/members/team%2Fred%2F1",
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    // A literal '/' is another path: no such route.
    expect_err(
        &app,
        "GET",
        "/v1/boards/b/members/team/red",
        None,
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn boards_of_redis_databases_other_than_0_are_not_served() {
    use podium_core::entry::{MemberBytes, SubmitRec};
    use podium_core::keystore::database::Database;
    use podium_core::keystore::KeyStore;
    let svc = Arc::new(Service::in_memory());
    let app = router(
        Arc::new(EmbeddedBackend::new(svc.clone())),
        HttpConfig::default(),
        None,
    );
    let rec = |m: &str| SubmitRec {
        scores: None,
        member: MemberBytes::from_slice(m.as_bytes()),
        score: 1.0,
        op: Some(podium_engine::UpdateOp::Set),
        presence: podium_engine::Presence::Any,
        cond: podium_engine::Cond::Always,
        name: None,
        data: None,
    };
    let root: Arc<dyn KeyStore> = svc.clone();
    Database::new(root.clone(), 0)
        .zadd(b"lb", vec![rec("zero")])
        .unwrap();
    Database::new(root, 15)
        .zadd(b"lb", vec![rec("fifteen")])
        .unwrap();
    let r = call(&app, "GET", "/v1/boards", None).await;
    assert_eq!(r.status, 200);
    let names: Vec<&str> = r.json()["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["board"].as_str().unwrap().to_string().leak() as &str)
        .collect();
    assert_eq!(names, ["lb"]);
    let r = call(&app, "GET", "/v1/boards/lb/top", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["entries"][0]["member"], "zero");
    // Database 15's board by its stored name: not a name users may give.
    for path in ["/v1/boards/%01%0Flb/top", "/v1/boards/%01%0Flb"] {
        let r = call(&app, "GET", path, None).await;
        assert_eq!(r.status, 400, "{path}: {}", r.json());
    }
    let r = call(&app, "PUT", "/v1/boards/%01%0Fnew", Some(json!({}))).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn a_memory_only_server_has_nothing_to_back_up() {
    let r = call(&app(), "GET", "/v1/backup", None).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_IMPLEMENTED, "unsupported".into())
    );
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("memory only"), "{msg}");
}

/// An event stream hands the connection small pieces (a slow reader's
/// buffer is a few of them), not a batch of events copied whole.
#[tokio::test]
async fn an_event_stream_hands_over_small_pieces() {
    use futures_util::StreamExt;
    let app = app();
    seed(&app, "b", 1).await;
    let resp = app
        .clone()
        .oneshot(req("GET", "/v1/boards/b/events", None))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body().into_data_stream();
    let retry = body.next().await.unwrap().unwrap();
    assert!(retry.starts_with(b"retry:"));
    // One write of 300 entries (m1 unchanged): 299 events, read in
    // batches.
    seed(&app, "b", 300).await;
    let mut events = 0;
    while events < 299 {
        let piece = tokio::time::timeout(std::time::Duration::from_secs(5), body.next())
            .await
            .expect("events within 5 s")
            .unwrap()
            .unwrap();
        let n = piece.windows(7).filter(|w| w == b"\nevent:").count();
        assert!(
            n == 1 || piece.len() <= crate::http::events::SSE_PIECE,
            "a piece of {} bytes holds {n} events",
            piece.len()
        );
        events += n;
    }
}

/// Every route with `{member}` in its path answers the same with the
/// member in the query, on the collection path: the form for ids a URL
/// path cannot carry (`.` and `..`, which every WHATWG URL parser drops
/// from a path, percent-encoded or not).
#[tokio::test]
async fn members_named_in_the_query() {
    let app = app();
    let r = call(
        &app,
        "POST",
        "/v1/boards/q/scores",
        Some(json!([
            {"member": ".", "score": 30},
            {"member": "..", "score": 20},
            {"member": "a b+c", "score": 10},
            {"member": "x", "score": 5},
        ])),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());

    // Each route both ways: the same status and body.
    let routes: [(&str, &str, &str, Option<Value>); 6] = [
        ("GET", "members", "page_size=2", None),
        ("PATCH", "members", "", Some(json!({"data": {"k": 1}}))),
        ("GET", "rank", "", None),
        ("GET", "percentile", "", None),
        ("GET", "around", "page_size=3&with_data=true", None),
        ("GET", "members", "", None),
    ];
    for member in [".", "..", "a b+c", "x"] {
        let in_path =
            percent_encoding::utf8_percent_encode(member, percent_encoding::NON_ALPHANUMERIC)
                .to_string();
        let in_query = url_query(member);
        for (method, route, extra, body) in &routes {
            let amp = if extra.is_empty() { "" } else { "&" };
            let by_path = call(
                &app,
                method,
                &format!("/v1/boards/q/{route}/{in_path}?{extra}"),
                body.clone(),
            )
            .await;
            let by_query = call(
                &app,
                method,
                &format!("/v1/boards/q/{route}?member={in_query}{amp}{extra}"),
                body.clone(),
            )
            .await;
            assert_eq!(
                by_path.status,
                200,
                "{method} {route} {member:?}: {}",
                by_path.json()
            );
            assert_eq!(
                (by_query.status, by_query.json()),
                (by_path.status, by_path.json()),
                "{method} {route} {member:?}"
            );
            if by_path.json().get("member").is_some() {
                assert_eq!(by_path.json()["member"], *member);
            }
        }
    }
    let r = call(&app, "GET", "/v1/boards/q/members?member=..", None).await;
    assert_eq!(r.json()["data"], json!({"k": 1}));
    assert_eq!(r.json()["rank"], 2);
    // `+` is a space in a query, as forms send it.
    let r = call(&app, "GET", "/v1/boards/q/rank?member=a+b%2Bc", None).await;
    assert_eq!(r.json()["member"], "a b+c");

    // Errors: the same as the path form's.
    for (method, route, body) in [
        ("GET", "members", None),
        ("PATCH", "members", Some(r#"{"name":"n"}"#)),
        ("DELETE", "members", None),
        ("GET", "rank", None),
        ("GET", "percentile", None),
        ("GET", "around", None),
    ] {
        let by_path = send(
            &app,
            req(method, &format!("/v1/boards/q/{route}/nobody"), body),
        )
        .await;
        let by_query = send(
            &app,
            req(method, &format!("/v1/boards/q/{route}?member=nobody"), body),
        )
        .await;
        assert_eq!(by_path.status, 404, "{method} {route}");
        assert_eq!(
            (by_query.status, by_query.json()),
            (by_path.status, by_path.json()),
            "{method} {route}"
        );
        let by_path = send(
            &app,
            req(method, &format!("/v1/boards/none/{route}/m"), body),
        )
        .await;
        let by_query = send(
            &app,
            req(method, &format!("/v1/boards/none/{route}?member=m"), body),
        )
        .await;
        assert_eq!(
            (by_query.status, by_query.json()),
            (by_path.status, by_path.json()),
            "{method} {route} on a missing board"
        );
        // An invalid board name is refused first, as in the path form.
        let by_path = send(
            &app,
            req(method, &format!("/v1/boards/a%01/{route}/m"), body),
        )
        .await;
        let by_query = send(
            &app,
            req(method, &format!("/v1/boards/a%01/{route}?member=m"), body),
        )
        .await;
        assert_eq!(
            (by_query.status, by_query.json()),
            (by_path.status, by_path.json()),
            "{method} {route} on a bad board name"
        );
        // A request naming no member, an empty one, two, or one that is
        // not UTF-8: a clear 400.
        for (query, needle) in [
            ("", "the query parameter member (the member id) is required"),
            (
                "?page_size=3",
                "the query parameter member (the member id) is required",
            ),
            ("?member=", "the query parameter member is empty"),
            (
                "?member=a&member=b",
                "the query parameter member is given twice",
            ),
            ("?member=%FF", "the query parameter member is not UTF-8"),
        ] {
            let uri = format!("/v1/boards/q/{route}{query}");
            let r = send(&app, req(method, &uri, body)).await;
            assert_eq!(r.status, 400, "{method} {uri}: {}", r.json());
            let code = if query.contains("%FF") {
                "malformed_request"
            } else {
                "invalid_argument"
            };
            assert_eq!(r.code(), code, "{method} {uri}");
            let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
            assert!(msg.contains(needle), "{method} {uri}: {msg}");
        }
    }
    // A path's member that is not UTF-8 is the same code.
    expect_err(
        &app,
        "GET",
        "/v1/boards/q/rank/%FF",
        None,
        400,
        "malformed_request",
    )
    .await;

    // Removal by query, then the member is gone both ways.
    for member in [".", ".."] {
        let r = call(
            &app,
            "DELETE",
            &format!("/v1/boards/q/members?member={member}"),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.json());
        assert_eq!(r.json()["removed"], 1);
        expect_err(
            &app,
            "DELETE",
            &format!("/v1/boards/q/members?member={member}"),
            None,
            404,
            "member_not_found",
        )
        .await;
        expect_err(
            &app,
            "GET",
            &format!("/v1/boards/q/rank?member={member}"),
            None,
            404,
            "member_not_found",
        )
        .await;
    }
    let r = call(&app, "GET", "/v1/boards/q", None).await;
    assert_eq!(r.json()["members"], 2);
}

/// A query value, percent-encoded but for the unreserved characters.
fn url_query(s: &str) -> String {
    const Q: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(s, Q).to_string()
}
