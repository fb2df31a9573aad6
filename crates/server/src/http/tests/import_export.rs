//! Export streams and imports (NDJSON, CSV, large bodies, refused lines).

use super::*;

async fn export_lines(app: &Router, board: &str) -> Vec<Value> {
    let r = call(app, "GET", &format!("/v1/boards/{board}/export"), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/x-ndjson");
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn export_streams_every_entry_best_first() {
    let app = app();
    let n = 2 * EXPORT_CHUNK + 7;
    let lines: String = (0..n)
        .map(|i| format!("{{\"member\":\"m{i}\",\"score\":{i}}}\n"))
        .collect();
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/big/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(lines))
            .unwrap(),
    )
    .await;
    assert_eq!(r.json()["imported"], n as u64);
    let out = export_lines(&app, "big").await;
    assert_eq!(out.len(), n);
    for (i, l) in out.iter().enumerate() {
        assert_eq!(l["rank"], i as u64 + 1);
        assert_eq!(l["member"], format!("m{}", n - 1 - i));
    }
    // An empty board exports nothing; a missing one is a 404.
    call(&app, "PUT", "/v1/boards/empty", None).await;
    assert!(export_lines(&app, "empty").await.is_empty());
}

#[tokio::test]
async fn export_then_import_round_trips() {
    let app = app();
    seed(&app, "src", 50).await;
    call(
        &app,
        "PATCH",
        "/v1/boards/src/members/m7",
        Some(json!({"data": {"k": "v"}})),
    )
    .await;
    call(
        &app,
        "POST",
        "/v1/boards/src/scores",
        Some(json!({"member": "inf", "score": "inf"})),
    )
    .await;
    let r = call(&app, "GET", "/v1/boards/src/export", None).await;
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/dst/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(r.body))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(
        r.json(),
        json!({"board": "dst", "imported": 51, "failed": 0, "errors": []})
    );
    assert_eq!(
        export_lines(&app, "src").await,
        export_lines(&app, "dst").await
    );
}

#[tokio::test]
async fn import_ndjson_counts_bad_lines() {
    let app = app();
    let long = "x".repeat(MAX_IMPORT_LINE_BYTES + 1);
    let body = format!(
        "{{\"member\":\"a\",\"score\":1}}\n\
         not json\n\
         \n\
         {{\"member\":\"b\",\"score\":\"nan\"}}\r\n\
         {{\"member\":\"c\",\"score\":3,\"rank\":99,\"name\":\"C\"}}\n\
         {{\"member\":\"{long}\",\"score\":1}}\n\
         {{\"member\":\"\",\"score\":1}}\n\
         {{\"member\":\"d\",\"score\":1,\"data\":5}}\n\
         {{\"member\":\"e\",\"score\":5}}"
    );
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/n/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["board"], "n");
    assert_eq!(j["imported"], 3, "{j}");
    assert_eq!(j["failed"], 5);
    let errs: Vec<(u64, String)> = j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["line"].as_u64().unwrap(),
                e["error"]["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        errs,
        [
            (2, "malformed_request".to_string()),
            (4, "invalid_score".to_string()),
            (6, "payload_too_large".to_string()),
            (7, "invalid_member".to_string()),
            (8, "invalid_data".to_string()),
        ]
    );
    assert_eq!(j["errors"][1]["member"], "b");
    assert_eq!(j["errors"][0]["member"], Value::Null);
    let r = call(&app, "GET", "/v1/boards/n/members/c", None).await;
    assert_eq!(r.json()["name"], "C");
    assert_eq!(r.json()["rank"], 2);
}

#[tokio::test]
async fn import_isolates_entries_the_engine_refuses() {
    let app = app();
    call(
        &app,
        "PUT",
        "/v1/boards/bd",
        Some(json!({"min_score": 0, "max_score": 100})),
    )
    .await;
    let body = [
        r#"{"member":"a","score":1}"#,
        r#"{"member":"b","score":1000}"#,
        r#"{"member":"a","score":5,"op":"incr"}"#,
        r#"{"member":"c","score":2,"name":"C"}"#,
        r#"{"member":"d","score":-1}"#,
        r#"{"member":"a","score":200,"op":"incr"}"#,
        r#"{"member":"a","score":1,"op":"incr"}"#,
    ]
    .join("\n");
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/bd/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    let j = r.json();
    assert_eq!(
        (j["imported"].as_u64(), j["failed"].as_u64()),
        (Some(4), Some(3)),
        "{j}"
    );
    let lines: Vec<u64> = j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 5, 6]);
    assert!(j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["error"]["code"] == "invalid_score"));
    // Applied in order: 1, +5, (+200 refused), +1.
    let r = call(&app, "GET", "/v1/boards/bd/rank/a", None).await;
    assert_eq!(r.json()["score"], 7.0);
}

#[tokio::test]
async fn import_csv() {
    let app = app();
    let body = "\u{feff}member,score,name\r\n\
                alice,10,Alice\r\n\
                \"bob, jr\",20,\"Bob \"\"the\"\" builder\"\r\n\
                \"multi\nline\",5\r\n\
                carol,abc\r\n\
                dave,1,x,extra\r\n\
                eve,-inf,\r\n";
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/c/import")
            .header("content-type", "text/csv; charset=utf-8")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["imported"], 4, "{j}");
    assert_eq!(j["failed"], 2);
    assert_eq!(j["errors"][0]["line"], 6);
    assert_eq!(j["errors"][0]["member"], "carol");
    assert_eq!(j["errors"][0]["error"]["code"], "invalid_score");
    assert_eq!(j["errors"][1]["line"], 7);
    let r = call(&app, "GET", "/v1/boards/c/members/bob%2C%20jr", None).await;
    assert_eq!(r.json()["name"], "Bob \"the\" builder");
    assert_eq!(r.json()["rank"], 1);
    let r = call(&app, "GET", "/v1/boards/c/rank/multi%0Aline", None).await;
    assert_eq!(r.json()["score"], 5.0);
    let r = call(&app, "GET", "/v1/boards/c/members/eve", None).await;
    assert_eq!(r.json()["score"], "-inf");
    assert!(r.json().get("name").is_none());

    // ?format=csv wins over the Content-Type; no header line.
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/c2/import?format=csv")
            .header("content-type", "text/csv")
            .body(Body::from("x,1\ny,2"))
            .unwrap(),
    )
    .await;
    assert_eq!(r.json()["imported"], 2);
    expect_err(
        &app,
        "POST",
        "/v1/boards/c2/import?format=xml",
        Some("x"),
        400,
        "invalid_argument",
    )
    .await;
}

#[tokio::test]
async fn import_batches_large_bodies_in_small_chunks() {
    let app = app();
    let n = IMPORT_BATCH * 2 + 3;
    let mut text = String::new();
    for i in 0..n {
        if i == IMPORT_BATCH + 1 {
            text.push_str("{\"member\":\"bad\",\"score\":\"x\"}\n");
        }
        text.push_str(&format!("m{i},{i}\n"));
    }
    // Deliver it in 7-byte pieces, so records straddle chunks.
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = text
        .as_bytes()
        .chunks(7)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/p/import?format=csv")
            .header("content-type", "text/csv")
            .body(Body::from_stream(futures_util::stream::iter(chunks)))
            .unwrap(),
    )
    .await;
    let j = r.json();
    assert_eq!(j["imported"], n as u64, "{j}");
    assert_eq!(j["failed"], 1);
    assert_eq!(j["errors"][0]["line"], IMPORT_BATCH as u64 + 2);
    let r = call(&app, "GET", "/v1/boards/p/count", None).await;
    assert_eq!(r.json()["count"], n as u64);
}

#[tokio::test]
async fn import_errors_are_capped_and_read_only_boards_refused() {
    let app = app();
    let body: String = (0..250).map(|i| format!("bad line {i}\n")).collect();
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/q/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    let j = r.json();
    assert_eq!(j["failed"], 250);
    assert_eq!(j["imported"], 0);
    assert_eq!(j["errors"].as_array().unwrap().len(), 100);
    assert_eq!(j["errors"][99]["line"], 100);

    seed(&app, "ro", 1).await;
    let r = call(&app, "POST", "/v1/boards/ro/reset", None).await;
    let archive = r.json()["archive"].as_str().unwrap().replace(':', "%3A");
    expect_err(
        &app,
        "POST",
        &format!("/v1/boards/{archive}/import"),
        Some(r#"{"member":"a","score":1}"#),
        409,
        "read_only",
    )
    .await;
}
