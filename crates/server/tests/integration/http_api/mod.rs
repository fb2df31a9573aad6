//! The HTTP/JSON API of docs/spec.md §4, end to end: the real `podium serve`
//! binary, real requests, every route and every error code a client can
//! provoke, API-key scopes, and durability across a graceful restart.

use crate::support;

mod access;
mod boards;
mod errors;
mod events;
mod reads;
mod sort_keys;
mod transfer;
mod webhooks;

use reqwest::Method;
use serde_json::{json, Value};
use support::http::{board_path, enc, send, Resp, Server};
use support::run_to_end;

/// The `member` fields of `v["entries"]`, in order.
fn members(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect()
}

/// `(member, score, rank)` of `v["entries"]`, in order.
fn triples(v: &Value) -> Vec<(String, f64, u64)> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_string(),
                e["score"].as_f64().unwrap(),
                e["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Submits `(member, score)` pairs as one batch; every result must be ok.
#[track_caller]
fn seed(s: &Server, board: &str, entries: &[(&str, f64)]) {
    let body: Vec<Value> = entries
        .iter()
        .map(|(m, sc)| json!({"member": m, "score": sc}))
        .collect();
    let v = s
        .post(&board_path(board, "/scores"), &json!(body))
        .expect(200);
    let results = v["results"].as_array().expect("batch results");
    assert_eq!(results.len(), entries.len(), "{v}");
    for r in results {
        assert!(r.get("error").is_none(), "a batch entry failed: {r}");
    }
}

/// The ten members a..j of the read tests: a = 100 (rank 1) … j = 10.
const TEN: [(&str, f64); 10] = [
    ("a", 100.0),
    ("b", 90.0),
    ("c", 80.0),
    ("d", 70.0),
    ("e", 60.0),
    ("f", 50.0),
    ("g", 40.0),
    ("h", 30.0),
    ("i", 20.0),
    ("j", 10.0),
];

fn get_q(s: &Server, path: &str, q: &[(&str, &str)]) -> Resp {
    send(s.req(Method::GET, path).query(q))
}

fn delete_q(s: &Server, path: &str, q: &[(&str, &str)]) -> Resp {
    send(s.req(Method::DELETE, path).query(q))
}
