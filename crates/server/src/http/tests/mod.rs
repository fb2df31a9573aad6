//! In-process tests of the HTTP frontend: requests through the router
//! with `tower::ServiceExt::oneshot`, against a memory-only service; the
//! helpers here, the tests by topic in the submodules.

mod auth;
mod boards;
mod errors;
mod fuzz_bodies;
mod import_export;
mod operations;
mod search;

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
    // An event stream does not end: its head is the answer.
    let streams = headers
        .get("content-type")
        .is_some_and(|v| v == "text/event-stream");
    let body = if streams {
        Default::default()
    } else {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
    };
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

fn concrete(path: &str) -> String {
    path.replace("{board}", "b").replace("{member}", "m")
}

async fn import_body(app: &Router, board: &str, format: &str, body: &str) -> Value {
    let r = send(
        app,
        Request::builder()
            .method("POST")
            .uri(format!("/v1/boards/{board}/import?format={format}"))
            .header(
                "content-type",
                if format == "csv" {
                    "text/csv"
                } else {
                    "application/x-ndjson"
                },
            )
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}
