//! In-process tests of the HTTP frontend: requests through the router
//! with `tower::ServiceExt::oneshot`, against a memory-only service.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::*;
use crate::settings::{ApiKey, Scope};
use podium_store::service::Service;
use podium_store::EmbeddedBackend;

fn embedded() -> Arc<dyn Backend> {
    Arc::new(EmbeddedBackend::new(Arc::new(Service::in_memory())))
}

fn app() -> Router {
    router(embedded(), HttpConfig::default(), None)
}

fn app_with(cfg: HttpConfig) -> Router {
    router(embedded(), cfg, None)
}

struct Resp {
    status: StatusCode,
    headers: HeaderMap,
    body: bytes::Bytes,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
    fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code in {}", self.json()))
            .to_string()
    }
}

async fn send(app: &Router, req: Request<Body>) -> Resp {
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    Resp {
        status,
        headers,
        body,
    }
}

fn req(method: &str, uri: &str, body: Option<&str>) -> Request<Body> {
    let b = Request::builder().method(method).uri(uri);
    match body {
        Some(s) => b
            .header("content-type", "application/json")
            .body(Body::from(s.to_string()))
            .unwrap(),
        None => b.body(Body::empty()).unwrap(),
    }
}

async fn call(app: &Router, method: &str, uri: &str, body: Option<Value>) -> Resp {
    let s = body.map(|v| v.to_string());
    send(app, req(method, uri, s.as_deref())).await
}

/// Asserts status and error code.
async fn expect_err(
    app: &Router,
    method: &str,
    uri: &str,
    body: Option<&str>,
    status: u16,
    code: &str,
) {
    let r = send(app, req(method, uri, body)).await;
    assert_eq!(
        r.status.as_u16(),
        status,
        "{method} {uri}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.code(), code, "{method} {uri}");
    assert!(r.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
}

async fn seed(app: &Router, board: &str, n: usize) {
    let entries: Vec<Value> = (1..=n)
        .map(|i| json!({"member": format!("m{i}"), "score": i as f64, "name": format!("Name {i}")}))
        .collect();
    let r = call(
        app,
        "POST",
        &format!("/v1/boards/{board}/scores"),
        Some(Value::Array(entries)),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
}

#[tokio::test]
async fn health_and_openapi() {
    let app = app();
    let r = call(&app, "GET", "/healthz", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"status": "ok", "backend": "embedded"}));
    let r = call(&app, "GET", "/openapi.json", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["openapi"], "3.1.0");
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
    let r = call(&app, "GET", "/healthz", None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.code(), "storage_unavailable");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("No space left"), "{msg}");
    svc.storage().unwrap().log.faults().write = false;
    let t = std::time::Instant::now();
    loop {
        let r = call(&app, "GET", "/healthz", None).await;
        if r.status == 200 {
            assert_eq!(r.json(), json!({"status": "ok", "backend": "embedded"}));
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

    let r = call(&app, "GET", "/v1/boards/r/range?start=2&stop=4", None).await;
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
        "/v1/boards/r/range?by=rank&start=1&stop=2&from=worst",
        None,
    )
    .await;
    assert_eq!(r.json()["entries"][0]["member"], "m1");
    assert_eq!(r.json()["total"], 30);
    let r = call(
        &app,
        "GET",
        "/v1/boards/r/range?by=score&min=(5&max=7",
        None,
    )
    .await;
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
        "/v1/boards/r/range?by=score&min=-inf&max=%2Binf&from=worst&offset=1&limit=2",
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
    let r = call(&app, "GET", "/v1/boards/r/range?by=score&max=inf", None).await;
    assert_eq!(r.json()["entries"].as_array().unwrap().len(), 25);
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range?by=score&min=abc",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range?by=rank&start=1",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range?start=1&stop=2&min=3",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range?by=height",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/r/range?start=1&stop=2&from=middle",
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
        "/v1/boards/d/range?by=rank&start=1&stop=2",
        None,
    )
    .await;
    assert_eq!(r.json()["removed"], 2);
    let r = call(
        &app,
        "DELETE",
        "/v1/boards/d/range?by=score&min=4&max=(6",
        None,
    )
    .await;
    assert_eq!(r.json()["removed"], 2);
    let r = call(&app, "GET", "/v1/boards/d/count", None).await;
    assert_eq!(r.json()["count"], 13);
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/d/range?by=score&min=4",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/d/range?start=0&stop=1",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards/nope/range?start=1&stop=1",
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
async fn error_cases() {
    let app = app();
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":"nan"}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":"abc"}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":null}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a"}"#),
        400,
        "malformed_request",
    )
    .await;

    let r = call(
        &app,
        "PUT",
        "/v1/boards/bounded",
        Some(json!({"min_score": 0, "max_score": 100})),
    )
    .await;
    assert_eq!(r.status, 201);
    expect_err(
        &app,
        "POST",
        "/v1/boards/bounded/scores",
        Some(r#"{"member":"a","score":-1}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/bounded/scores",
        Some(r#"{"member":"a","score":101}"#),
        400,
        "invalid_score",
    )
    .await;

    let long_member = "m".repeat(513);
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(&json!({"member": long_member, "score": 1}).to_string()),
        400,
        "invalid_member",
    )
    .await;
    let long_board = "b".repeat(201);
    expect_err(
        &app,
        "POST",
        &format!("/v1/boards/{long_board}/scores"),
        Some(r#"{"member":"a","score":1}"#),
        400,
        "invalid_board_name",
    )
    .await;
    expect_err(
        &app,
        "GET",
        &format!("/v1/boards/{long_board}/top"),
        None,
        400,
        "invalid_board_name",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/a%01b",
        None,
        400,
        "invalid_board_name",
    )
    .await;

    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","#),
        400,
        "malformed_request",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(""),
        400,
        "malformed_request",
    )
    .await;
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/e/scores")
            .header("content-type", "application/xml")
            .body(Body::from("<a/>"))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "malformed_request");
    // `curl -d` sends form-urlencoded: accepted as JSON.
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/e/scores")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(r#"{"member":"a","score":1}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);

    expect_err(&app, "GET", "/v1/boards/nope", None, 404, "board_not_found").await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/top",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/export",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/members/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/rank/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/around/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/percentile/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;

    expect_err(&app, "GET", "/nope", None, 404, "not_found").await;
    expect_err(&app, "GET", "/v1/boards/e/nope", None, 404, "not_found").await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/top",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    let r = send(&app, req("PATCH", "/v1/boards/e", None)).await;
    assert_eq!(r.status, 405);
    let allow = r.headers["allow"].to_str().unwrap().to_string();
    assert!(allow.contains("PUT") && allow.contains("DELETE"), "{allow}");

    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page=x",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page=0",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page_size=0",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?with_data=maybe",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/members/%FF",
        None,
        400,
        "malformed_request",
    )
    .await;
}

#[tokio::test]
async fn body_limit() {
    let app = app_with(HttpConfig {
        api_keys: vec![],
        max_body_bytes: 64,
    });
    let big = json!({"member": "x".repeat(100), "score": 1}).to_string();
    expect_err(
        &app,
        "POST",
        "/v1/boards/l/scores",
        Some(&big),
        413,
        "payload_too_large",
    )
    .await;
    // Without a Content-Length (a streamed body) too.
    let stream = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::from(
        big.clone(),
    ))]);
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/l/scores")
            .body(Body::from_stream(stream))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.code(), "payload_too_large");
    let r = call(
        &app,
        "POST",
        "/v1/boards/l/scores",
        Some(json!({"member": "a", "score": 1})),
    )
    .await;
    assert_eq!(r.status, 200);
    // Import streams and is not bound by the limit.
    let body: String = (0..100)
        .map(|i| format!("{{\"member\":\"m{i}\",\"score\":{i}}}\n"))
        .collect();
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/l/import")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["imported"], 100);
}

const READ_KEY: &str = "read-key-0123456789";
const WRITE_KEY: &str = "write-key-0123456789";
const ADMIN_KEY: &str = "admin-key-0123456789";

fn authed(method: &str, uri: &str, key: Option<&str>, body: Option<&str>) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    b.body(body.map_or_else(Body::empty, |s| Body::from(s.to_string())))
        .unwrap()
}

/// Every route of the table, requested with no key and with a key of each
/// scope, against the scope of its operation: allowed, or refused with 401
/// (no key) or 403 and the scopes named.
#[tokio::test]
async fn every_route_against_every_scope() {
    let app = app_with(HttpConfig {
        api_keys: vec![
            ApiKey::new(READ_KEY, Scope::Read).unwrap(),
            ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
            ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
        ],
        max_body_bytes: 1 << 20,
    });
    let keys = [
        (None, None),
        (Some(Scope::Read), Some(READ_KEY)),
        (Some(Scope::Write), Some(WRITE_KEY)),
        (Some(Scope::Admin), Some(ADMIN_KEY)),
    ];
    for r in ROUTES {
        for (scope, key) in keys {
            let uri = concrete(r.path);
            let got = send(&app, authed(r.method, &uri, key, Some("{}"))).await;
            let ctx = format!("{} {uri} with {scope:?}: {}", r.method, got.status);
            match (r.op.scope(), scope) {
                (None, _) => assert!(![401, 403].contains(&got.status.as_u16()), "{ctx}"),
                (Some(_), None) => {
                    assert_eq!(got.status, 401, "{ctx}");
                    assert_eq!(got.code(), "unauthorized", "{ctx}");
                    assert_eq!(got.headers["www-authenticate"], "Bearer", "{ctx}");
                }
                (Some(needed), Some(s)) if s.allows(needed) => {
                    assert!(![401, 403].contains(&got.status.as_u16()), "{ctx}")
                }
                (Some(needed), Some(s)) => {
                    assert_eq!(got.status, 403, "{ctx}");
                    assert_eq!(got.code(), "forbidden", "{ctx}");
                    assert_eq!(
                        got.json()["error"]["message"],
                        format!(
                            "this request needs a key of scope {}; this key has scope {}",
                            needed.as_str(),
                            s.as_str()
                        ),
                        "{ctx}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn auth_scopes() {
    let app = app_with(HttpConfig {
        api_keys: vec![
            ApiKey::new(READ_KEY, Scope::Read).unwrap(),
            ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
            ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
        ],
        max_body_bytes: 1 << 20,
    });
    let score = Some(r#"{"member":"a","score":1}"#);
    // Open routes.
    assert_eq!(
        send(&app, authed("GET", "/healthz", None, None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&app, authed("GET", "/openapi.json", None, None))
            .await
            .status,
        200
    );
    // No key, a wrong key, a wrong scheme: 401 with WWW-Authenticate.
    for r in [
        authed("GET", "/v1/boards", None, None),
        authed("GET", "/v1/boards", Some("not-a-key-at-all-xx"), None),
        authed("GET", "/metrics", None, None),
        Request::builder()
            .uri("/v1/boards")
            .header("authorization", format!("Basic {READ_KEY}"))
            .body(Body::empty())
            .unwrap(),
    ] {
        let r = send(&app, r).await;
        assert_eq!(r.status, 401);
        assert_eq!(r.code(), "unauthorized");
        assert_eq!(r.headers["www-authenticate"], "Bearer");
    }
    // Scopes.
    assert_eq!(
        send(&app, authed("GET", "/v1/boards", Some(READ_KEY), None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&app, authed("GET", "/metrics", Some(READ_KEY), None))
            .await
            .status,
        200
    );
    let r = send(
        &app,
        authed("POST", "/v1/boards/s/scores", Some(READ_KEY), score),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "forbidden".to_string())
    );
    assert_eq!(
        send(
            &app,
            authed("POST", "/v1/boards/s/scores", Some(WRITE_KEY), score)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("GET", "/v1/boards/s/top", Some(READ_KEY), None)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed(
                "POST",
                "/v1/boards/s/ranks",
                Some(READ_KEY),
                Some(r#"{"members":["a"]}"#)
            )
        )
        .await
        .status,
        200
    );
    for (m, uri) in [
        ("PUT", "/v1/boards/s"),
        ("POST", "/v1/boards/s/reset"),
        ("DELETE", "/v1/boards/s"),
    ] {
        let r = send(&app, authed(m, uri, Some(WRITE_KEY), None)).await;
        assert_eq!(r.status, 403, "{m} {uri}");
        assert_eq!(r.code(), "forbidden");
    }
    let r = send(
        &app,
        authed(
            "POST",
            "/v1/boards/t/merge",
            Some(WRITE_KEY),
            Some(r#"{"sources":["s"]}"#),
        ),
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        send(
            &app,
            authed(
                "POST",
                "/v1/boards/t/merge",
                Some(ADMIN_KEY),
                Some(r#"{"sources":["s"]}"#)
            )
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(&app, authed("PUT", "/v1/boards/s", Some(ADMIN_KEY), None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("DELETE", "/v1/boards/s", Some(ADMIN_KEY), None)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("POST", "/v1/boards/s/import", Some(READ_KEY), Some("{}"))
        )
        .await
        .status,
        403
    );
    // Unknown routes are 404 either way.
    assert_eq!(
        send(&app, authed("GET", "/v1/nothing", None, None))
            .await
            .status,
        404
    );

    // No keys configured: everything open.
    let open = super::tests::app();
    assert_eq!(
        send(&open, authed("PUT", "/v1/boards/s", None, None))
            .await
            .status,
        201
    );
    assert_eq!(
        send(&open, authed("GET", "/metrics", None, None))
            .await
            .status,
        200
    );
}

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

#[tokio::test]
async fn metrics_are_exported() {
    let handle = install_metrics();
    let app = router(embedded(), HttpConfig::default(), Some(handle));
    seed(&app, "met", 4).await;
    call(&app, "GET", "/v1/boards/met/top", None).await;
    call(&app, "GET", "/nowhere", None).await;
    let r = call(&app, "GET", "/metrics", None).await;
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let has = |needle: &str| text.lines().any(|l| l.contains(needle));
    assert!(
        has(
            r#"podium_http_requests_total{route="/v1/boards/{board}/top",method="GET",status="200"}"#
        ),
        "{text}"
    );
    assert!(has(r#"route="unmatched""#), "{text}");
    assert!(has("podium_http_request_seconds_bucket{"), "{text}");
    assert!(has(r#"podium_board_members{board="met"} 4"#), "{text}");
    assert!(has("podium_boards "), "{text}");
    assert!(has("podium_snapshot_pending 0"), "{text}");
    // A board nobody searched has no index yet; its first search builds
    // one, which the gauges then count.
    let gauge = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert_eq!(
        gauge(&text, r#"podium_search_index_bytes{board="met"}"#),
        0.0
    );
    let r = call(&app, "GET", "/v1/boards/met/search?q=name", None).await;
    assert_eq!(r.json()["total"], 4);
    let r = call(&app, "GET", "/metrics", None).await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let met = gauge(&text, r#"podium_search_index_bytes{board="met"}"#);
    assert!(met > 0.0, "{text}");
    // Deleted boards drop to 0.
    call(&app, "DELETE", "/v1/boards/met", None).await;
    let r = call(&app, "GET", "/metrics", None).await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(
        text.lines()
            .any(|l| l == r#"podium_board_members{board="met"} 0"#),
        "{text}"
    );
    assert_eq!(
        gauge(&text, r#"podium_search_index_bytes{board="met"}"#),
        0.0
    );
}

#[test]
fn panics_become_internal_errors() {
    let r = error::panic_response(Box::new("boom"));
    assert_eq!(r.status(), 500);
}

#[tokio::test]
async fn a_panicking_handler_answers_500_json() {
    // The layers router() puts around routes, around a route that panics.
    let app: Router = Router::new()
        .route(
            "/boom",
            axum::routing::get(|| async {
                if true {
                    panic!("boom");
                }
                "unreachable"
            }),
        )
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            error::panic_response,
        ))
        .layer(axum::middleware::from_fn(
            |req: axum::extract::Request, next: axum::middleware::Next| async move {
                error::json_errors(next.run(req).await).await
            },
        ));
    let r = send(&app, req("GET", "/boom", None)).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.code(), "internal");
}

// ------------------------------------------------- routes vs. OpenAPI

fn concrete(path: &str) -> String {
    path.replace("{board}", "b").replace("{member}", "m")
}

#[tokio::test]
async fn openapi_and_router_list_the_same_routes() {
    let doc = openapi::document();
    let mut in_doc = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            in_doc.insert((method.to_ascii_uppercase(), path.clone()));
            assert!(op["operationId"].is_string());
            assert!(
                op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .any(|k| k.starts_with('2')),
                "{method} {path}"
            );
        }
    }
    let in_table: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(in_doc, in_table);
    assert_eq!(ROUTES.len(), in_table.len(), "a route is listed twice");
    for r in ROUTES {
        assert!(
            openapi::operation(r.op.name()).is_some(),
            "{} has no OpenAPI operation",
            r.op.name()
        );
    }

    // Every documented route is served: a request with placeholder
    // parameters is never a routing 404 or a 405.
    let app = app();
    for (method, path) in &in_doc {
        let r = send(&app, req(method, &concrete(path), Some("{}"))).await;
        assert_ne!(r.status, 405, "{method} {path}");
        if r.status == 404 {
            assert_ne!(r.code(), "not_found", "{method} {path} is not routed");
        }
    }
    // And every other method on those paths is a 405.
    let paths: BTreeSet<&String> = in_doc.iter().map(|(_, p)| p).collect();
    for path in paths {
        for method in ["GET", "PUT", "POST", "DELETE", "PATCH"] {
            if in_doc.contains(&(method.to_string(), path.clone())) {
                continue;
            }
            let r = send(&app, req(method, &concrete(path), None)).await;
            assert_eq!(r.status, 405, "{method} {path} should not be routed");
            assert_eq!(r.code(), "method_not_allowed");
        }
    }

    // Every $ref points at a component.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "$ref" {
                        out.push(x.as_str().unwrap().to_string());
                    }
                    refs(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let ptr = r.strip_prefix('#').unwrap();
        assert!(doc.pointer(ptr).is_some(), "dangling $ref {r}");
    }
    // Every path parameter is declared.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            let params = op["parameters"].to_string();
            for name in ["board", "member"] {
                if path.contains(&format!("{{{name}}}")) {
                    assert!(
                        params.contains(&format!("parameters/{name}")),
                        "{path} misses {name}"
                    );
                }
            }
        }
    }
}

/// `GET /v1/boards/{board}/search`: diacritics folded, prefix on the last
/// word, leaderboard order with ranks and `total`, paging, the index
/// following writes made after the first search, and clear errors.
#[tokio::test]
async fn search_finds_members_by_name_in_rank_order() {
    let app = app();
    let entries = json!([
        {"member": "p1", "score": 50, "name": "José Álvarez"},
        {"member": "p2", "score": 70, "name": "Josephine Baker"},
        {"member": "p3", "score": 60, "name": "Ann Jones", "data": {"team": "red"}},
        {"member": "p4", "score": 90, "name": "Bob Marley"}
    ]);
    let r = call(&app, "POST", "/v1/boards/s/scores", Some(entries)).await;
    assert_eq!(r.status, StatusCode::OK);

    let r = call(&app, "GET", "/v1/boards/s/search?q=jose", None).await;
    let j = r.json();
    assert_eq!(j["total"], 2, "{j}");
    let found: Vec<(String, u64)> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_string(),
                e["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    // Best first: Josephine (70, rank 2) before José (50, rank 4).
    assert_eq!(found, vec![("p2".to_string(), 2), ("p1".to_string(), 4)]);
    assert_eq!(j["ranking"], "unique");

    // An exact first word, a prefix last word; paging.
    let r = call(&app, "GET", "/v1/boards/s/search?q=jose%20alv", None).await;
    assert_eq!(r.json()["entries"][0]["member"], "p1");
    let r = call(
        &app,
        "GET",
        "/v1/boards/s/search?q=j&limit=1&offset=1",
        None,
    )
    .await;
    let j = r.json();
    assert_eq!(
        (j["total"].as_u64(), j["entries"].as_array().unwrap().len()),
        (Some(3), 1)
    );
    assert_eq!(j["entries"][0]["member"], "p3");

    // Writes after the first search are found at once.
    let r = call(
        &app,
        "POST",
        "/v1/boards/s/scores",
        Some(json!({"member": "p5", "score": 100, "name": "Jörg Müller"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = call(&app, "GET", "/v1/boards/s/search?q=jorg%20mu", None).await;
    assert_eq!(r.json()["entries"][0]["rank"], 1);
    let r = call(&app, "DELETE", "/v1/boards/s/members/p2", None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = call(&app, "GET", "/v1/boards/s/search?q=jose", None).await;
    assert_eq!(r.json()["total"], 1);

    expect_err(
        &app,
        "GET",
        "/v1/boards/s/search?q=%20-%20",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/s/search?q=team:red",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/search?q=a",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/s/search",
        None,
        400,
        "invalid_argument",
    )
    .await;
}

/// The first search of a board (which builds its index and answers from
/// the engine's owned page) and the later ones (encoded straight from the
/// board) answer the same bytes, with and without data, for every paging.
#[tokio::test]
async fn first_and_later_searches_answer_the_same_bytes() {
    for with_data in ["", "&with_data=true"] {
        let app = app();
        let entries = json!([
            {"member": "p1", "score": 50, "name": "José \"Jo\" Álvarez"},
            {"member": "p2", "score": 70, "name": "Josephine Baker", "data": {"team": "red", "n": [1, 2.5]}},
            {"member": "p\u{7}3", "score": -1.5, "name": "Jo\\nes"},
            {"member": "p4", "score": 90}
        ]);
        let r = call(&app, "POST", "/v1/boards/s/scores", Some(entries)).await;
        assert_eq!(r.status, StatusCode::OK);
        for (i, q) in [
            "jo",
            "jo&limit=1&offset=1",
            "jo&offset=9",
            "jo&limit=0",
            "zz",
        ]
        .iter()
        .enumerate()
        {
            let uri = format!("/v1/boards/s/search?q={q}{with_data}");
            let first = call(&app, "GET", &uri, None).await;
            let later = call(&app, "GET", &uri, None).await;
            assert_eq!(first.status, StatusCode::OK, "{uri}");
            assert_eq!(first.body, later.body, "{uri}");
            if i == 0 {
                let j = later.json();
                assert_eq!(j["total"], 3, "{j}");
                assert_eq!(j["entries"][0]["name"], "Josephine Baker");
                assert_eq!(j["entries"][0].get("data").is_some(), !with_data.is_empty());
            }
        }
        expect_err(
            &app,
            "GET",
            "/v1/boards/s/search?q=jo&limit=10001",
            None,
            400,
            "invalid_argument",
        )
        .await;
    }
}

async fn import_body(app: &Router, board: &str, format: &str, body: &str) -> Value {
    let r = send(
        app,
        Request::builder()
            .method("POST")
            .uri(format!("/v1/boards/{board}/import?format={format}"))
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

async fn search_members(app: &Router, board: &str, q: &str) -> Vec<String> {
    let r = call(
        app,
        "GET",
        &format!("/v1/boards/{board}/search?q={q}"),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let j = r.json();
    let found: Vec<String> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(j["total"], found.len() as u64, "{j}");
    found
}

/// Names arrive by import (NDJSON and CSV `member,score,name`) and are
/// searchable right after, whether the board's index is built by that
/// search or already existed before the import; a re-import that renames
/// a member moves it in the index.
#[tokio::test]
async fn imported_names_are_searchable_at_once() {
    let app = app();
    // No index yet: the first search builds it from the imported names.
    let j = import_body(
        &app,
        "imp",
        "ndjson",
        "{\"member\":\"a1\",\"score\":5,\"name\":\"Ada Lovelace\"}\n\
         {\"member\":\"a2\",\"score\":9,\"name\":\"Alan Turing\"}\n",
    )
    .await;
    assert_eq!(j["imported"], 2, "{j}");
    let j = import_body(
        &app,
        "imp",
        "csv",
        "member,score,name\nc1,7,\"Grace Hopper, RADM\"\nc2,3,Adèle Lovelace\n",
    )
    .await;
    assert_eq!(j["imported"], 2, "{j}");
    assert_eq!(search_members(&app, "imp", "love").await, ["a1", "c2"]);
    assert_eq!(search_members(&app, "imp", "radm").await, ["c1"]);
    assert_eq!(search_members(&app, "imp", "adele").await, ["c2"]);

    // The index exists now: later imports, both formats, are found at once.
    import_body(
        &app,
        "imp",
        "csv",
        "n1,100,Linus Lovelace\nn2,1,Barbara Liskov\n",
    )
    .await;
    import_body(
        &app,
        "imp",
        "ndjson",
        "{\"member\":\"n3\",\"score\":50,\"name\":\"Ada Byron\"}\n",
    )
    .await;
    assert_eq!(
        search_members(&app, "imp", "love").await,
        ["n1", "a1", "c2"]
    );
    assert_eq!(search_members(&app, "imp", "liskov").await, ["n2"]);
    assert_eq!(search_members(&app, "imp", "ada").await, ["n3", "a1"]);
    // A re-import with another name replaces the old words.
    import_body(&app, "imp", "csv", "a1,5,Countess Augusta\n").await;
    assert_eq!(search_members(&app, "imp", "love").await, ["n1", "c2"]);
    assert_eq!(search_members(&app, "imp", "augusta").await, ["a1"]);
}

// ------------------------------------------------------- strict input

/// The text every path gives for a finite spelling beyond a double.
const OUT_OF_RANGE: &str = "is out of range of a double";

/// A raw body (not built from a `Value`, which could not hold 1e400 or a
/// repeated key).
async fn post_raw(app: &Router, uri: &str, body: &str) -> Resp {
    send(app, req("POST", uri, Some(body))).await
}

/// Each of `(body, score text)` answers 400 `invalid_score` with the one
/// message of that refusal.
async fn expect_bad_score(app: &Router, uri: &str, body: &str, needle: &str) {
    let r = post_raw(app, uri, body).await;
    assert_eq!(
        r.status,
        400,
        "{body}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.code(), "invalid_score", "{body}: {}", r.json());
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains(needle), "{body}: {msg}");
}

/// A finite score that overflows a double is refused with the same text
/// as a JSON number, a JSON string, in a batch, in an NDJSON or CSV import
/// line and as a range bound; an explicit infinity is still stored.
#[tokio::test]
async fn out_of_range_scores_are_refused_on_every_path() {
    let app = app();
    let scores = "/v1/boards/oor/scores";
    for body in [
        r#"{"member":"a","score":1e400}"#,
        r#"{"member":"a","score":"1e400"}"#,
        r#"[{"member":"b","score":1},{"member":"a","score":"1e400"}]"#,
        r#"[{"member":"b","score":1},{"member":"a","score":1e400}]"#,
    ] {
        expect_bad_score(
            &app,
            scores,
            body,
            &format!("score \"1e400\" {OUT_OF_RANGE}"),
        )
        .await;
    }
    for body in [
        r#"{"member":"a","score":-1e999}"#,
        r#"{"member":"a","score":"-1e999"}"#,
    ] {
        expect_bad_score(
            &app,
            scores,
            body,
            &format!("score \"-1e999\" {OUT_OF_RANGE}"),
        )
        .await;
    }
    // Nothing was stored.
    let r = call(&app, "GET", "/v1/boards/oor", None).await;
    assert_eq!(r.status, 404, "{}", r.json());

    // Explicit infinities are kept.
    let r = post_raw(&app, scores, r#"{"member":"top","score":"inf"}"#).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["score"], "inf");

    let r = import_body(
        &app,
        "oor",
        "ndjson",
        "{\"member\":\"n1\",\"score\":1e400}\n{\"member\":\"n2\",\"score\":\"1e400\"}\n{\"member\":\"n3\",\"score\":3}\n",
    )
    .await;
    assert_eq!(r["imported"], 1, "{r}");
    for (i, line) in [(0, 1), (1, 2)] {
        assert_eq!(r["errors"][i]["line"], line, "{r}");
        assert_eq!(r["errors"][i]["error"]["code"], "invalid_score", "{r}");
        let msg = r["errors"][i]["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("score \"1e400\" {OUT_OF_RANGE}")),
            "{r}"
        );
    }
    let r = import_body(&app, "oor", "csv", "c1,1e400\nc2,-1e999\nc3,4\n").await;
    assert_eq!(r["imported"], 1, "{r}");
    assert_eq!(r["failed"], 2, "{r}");
    for i in 0..2 {
        assert_eq!(r["errors"][i]["error"]["code"], "invalid_score", "{r}");
        let msg = r["errors"][i]["error"]["message"].as_str().unwrap();
        assert!(msg.contains(OUT_OF_RANGE), "{r}");
    }
    let r = call(&app, "GET", "/v1/boards/oor/count?min=1e400", None).await;
    assert_eq!(r.status, 400, "{}", r.json());
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains(OUT_OF_RANGE));
    // Every member stored is one of the accepted ones.
    let r = call(&app, "GET", "/v1/boards/oor/top", None).await;
    assert_eq!(r.json()["total"], 3, "{}", r.json());
}

/// White space around a score, or an empty one, is refused everywhere a
/// score is text, with one message.
#[tokio::test]
async fn padded_scores_are_refused() {
    let app = app();
    for s in [" 5", "5 ", "\t5", "5\n"] {
        let body = json!({"member": "a", "score": s}).to_string();
        expect_bad_score(
            &app,
            "/v1/boards/pad/scores",
            &body,
            &format!("score {s:?} has white space around the number"),
        )
        .await;
    }
    expect_bad_score(
        &app,
        "/v1/boards/pad/scores",
        r#"{"member":"a","score":""}"#,
        "score is empty",
    )
    .await;
    let r = import_body(&app, "pad", "csv", "a, 5\nb,5 \nc,\nd,6\n").await;
    assert_eq!(r["imported"], 1, "{r}");
    assert_eq!(r["failed"], 3, "{r}");
    assert!(r["errors"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("white space"));
    let r = import_body(
        &app,
        "pad",
        "ndjson",
        "{\"member\":\"e\",\"score\":\" 7\"}\n",
    )
    .await;
    assert_eq!(r["failed"], 1, "{r}");
    assert_eq!(r["errors"][0]["error"]["code"], "invalid_score", "{r}");
    let r = call(&app, "GET", "/v1/boards/pad/count?min=%205", None).await;
    assert_eq!(r.status, 400, "{}", r.json());
}

/// A key repeated in any object of a body or import line is refused with
/// podium's 400, naming the key; nothing is written.
#[tokio::test]
async fn repeated_json_keys_are_refused() {
    let app = app();
    for (method, uri, body, key) in [
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"{"member":"a","score":1,"score":9}"#,
            "score",
        ),
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"[{"member":"a","member":"b","score":1}]"#,
            "member",
        ),
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"{"member":"a","score":1,"data":{"k":1,"k":2}}"#,
            "k",
        ),
        (
            "PUT",
            "/v1/boards/dup",
            r#"{"order":"asc","order":"desc"}"#,
            "order",
        ),
        (
            "POST",
            "/v1/boards/dup/ranks",
            r#"{"members":["a"],"members":["b"]}"#,
            "members",
        ),
    ] {
        let r = send(&app, req(method, uri, Some(body))).await;
        assert_eq!(
            r.status,
            400,
            "{body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.code(), "malformed_request", "{body}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(
            msg.contains(&format!("key {key:?} is repeated")),
            "{body}: {msg}"
        );
    }
    let r = call(&app, "GET", "/v1/boards/dup", None).await;
    assert_eq!(r.status, 404, "nothing was written: {}", r.json());
    let r = import_body(
        &app,
        "dup",
        "ndjson",
        "{\"member\":\"a\",\"score\":1,\"score\":2}\n{\"member\":\"b\",\"score\":1}\n",
    )
    .await;
    assert_eq!(
        (r["imported"].clone(), r["failed"].clone()),
        (json!(1), json!(1)),
        "{r}"
    );
    assert_eq!(r["errors"][0]["error"]["code"], "malformed_request");
    assert!(r["errors"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("key \"score\" is repeated"));
}

/// What axum answers on its own (no route, wrong method, a query string
/// serde cannot read) is podium's JSON error, in podium's words, with the
/// status kept.
#[tokio::test]
async fn framework_answers_are_podium_errors() {
    let app = app();
    seed(&app, "fw", 3).await;
    expect_err(&app, "GET", "/nowhere", None, 404, "not_found").await;
    expect_err(
        &app,
        "PATCH",
        "/v1/boards/fw/top",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    for (uri, needle) in [
        (
            "/v1/boards/fw/top?page=99999999999999999999",
            "page must be a non-negative integer below 2^64, got \"99999999999999999999\"",
        ),
        (
            "/v1/boards/fw/top?page_size=-1",
            "page_size must be a non-negative integer below 2^64, got \"-1\"",
        ),
        (
            "/v1/boards/fw/score_at_percentile?p=x",
            "p must be a number, got \"x\"",
        ),
        (
            "/v1/boards/fw/search?q=a&limt=3",
            "unknown query parameter \"limt\"",
        ),
        (
            "/v1/boards/fw/search?limit=3",
            "the query parameter q is required",
        ),
    ] {
        let r = call(&app, "GET", uri, None).await;
        assert_eq!(r.status, 400, "{uri}: {}", r.json());
        assert_eq!(r.code(), "invalid_argument", "{uri}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(needle), "{uri}: {msg}");
        assert!(!msg.contains("Failed to deserialize"), "{uri}: {msg}");
    }
}

/// A compressed request body is refused with 415 (it would be read as
/// JSON as it is); `identity` and no body are fine.
#[tokio::test]
async fn content_encoding_is_refused_unless_identity() {
    let app = app();
    for (uri, body) in [
        ("/v1/boards/enc/scores", r#"{"member":"a","score":1}"#),
        ("/v1/boards/enc/import", "{\"member\":\"a\",\"score\":1}\n"),
    ] {
        for coding in ["gzip", "br", "identity, gzip", "x-custom"] {
            let r = send(
                &app,
                Request::builder()
                    .method("POST")
                    .uri(uri)
                    .header("content-encoding", coding)
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
            assert_eq!(
                r.status,
                415,
                "{uri} {coding}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.code(), "unsupported_media_type");
        }
    }
    let r = call(&app, "GET", "/v1/boards/enc", None).await;
    assert_eq!(r.status, 404, "nothing was written: {}", r.json());
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/enc/scores")
            .header("content-encoding", "identity")
            .body(Body::from(r#"{"member":"a","score":1}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = send(
        &app,
        Request::builder()
            .method("GET")
            .uri("/v1/boards/enc/top")
            .header("content-encoding", "gzip")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "no body, nothing to decode");
}

/// The server as `podium serve` runs it, on a real socket: what hyper
/// answers itself for a request it cannot parse.
async fn serve_on_socket() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(super::wire::JsonErrorListener(listener), app())
            .await
            .unwrap();
    });
    addr
}

/// Sends `request` on a new connection and reads the answer until the
/// server closes it (or sends a whole answer): status line, head, body.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (String, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before reading everything.
    let _ = c.write_all(request).await;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), c.read(&mut buf));
        match read.await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|n| n.trim().parse::<usize>().ok());
            if len.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    (status, head.to_string(), body.to_string())
}

/// A URI too long, a head too large and a request that is not HTTP are
/// answered by hyper before any route: each is podium's JSON error.
#[tokio::test]
async fn hyper_answers_are_podium_errors() {
    let addr = serve_on_socket().await;
    let long = format!(
        "GET /v1/boards/b/top?q={} HTTP/1.1\r\nhost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(600_000)
    );
    for (request, status, code) in [
        (long.as_bytes(), "HTTP/1.1 414 ", "uri_too_long"),
        (big_header.as_bytes(), "HTTP/1.1 431 ", "headers_too_large"),
        (
            &b"NOT HTTP AT ALL\r\n\r\n"[..],
            "HTTP/1.1 400 ",
            "malformed_request",
        ),
        (
            &b"GET / HTTP/1.1\r\nbad header\r\n\r\n"[..],
            "HTTP/1.1 400 ",
            "malformed_request",
        ),
    ] {
        let (line, head, body) = raw_exchange(addr, request).await;
        assert!(line.starts_with(status), "{code}: {line:?}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{code}: {head}"
        );
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{code}: not JSON ({e}): {body:?}"));
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    // The server goes on answering.
    let (line, _, body) = raw_exchange(addr, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(line.starts_with("HTTP/1.1 200 "), "{line}");
    assert!(body.contains("\"ok\""), "{body}");
}
