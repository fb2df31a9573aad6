//! `podium bench SCENARIO` end to end at a tiny scale: each scenario runs,
//! prints its table and writes one JSON record per figure, every figure
//! measured and positive. No timing is asserted (the figures of a smoke
//! run on a shared machine mean nothing); docs/BENCHMARKS.md has the real
//! runs.

use crate::support;

use support::bench::*;

#[test]
fn rank10m_smoke() {
    let (r, out) = rank10m(false);
    check(&r, "rank10m", RANK10M, false);
    assert!(out.contains("goals:"), "{out}");
}

#[test]
fn http_updates_smoke() {
    let (r, _) = http_updates(false);
    check(&r, "http-updates", HTTP, false);
}

#[test]
fn rpc_payload_smoke() {
    let (r, out) = rpc_payload(false);
    check(&r, "rpc-payload", PAYLOAD, false);
    // The in-process copy is beside the framed modes.
    let sync = r
        .iter()
        .find(|r| r["figure"] == "1000_entries_sync")
        .unwrap();
    assert!(sync["baseline"].as_f64().is_some_and(|v| v > 0.0), "{sync}");
    assert!(out.contains("in-process copy"), "{out}");
}

#[test]
fn import_smoke() {
    let (r, _) = import(false);
    check(&r, "import", IMPORT, false);
    assert_eq!(r[0]["members"], 1000);
}

/// In process, then over HTTP against a podium it starts and loads.
#[test]
fn search_smoke() {
    let (r, out) = bench(&[
        "search",
        "--members",
        "2000",
        "--queries",
        "200",
        "--http-members",
        "5000",
        "--clients",
        "2",
        "--http-seconds",
        "0.3",
        "--quiet",
    ]);
    check(&r, "search", SEARCH, false);
    assert!(
        out.contains("search over HTTP: 5,000 named members"),
        "{out}"
    );
    let (r, _) = bench(&[
        "search",
        "--members",
        "1000",
        "--queries",
        "100",
        "--no-http",
    ]);
    assert!(r
        .iter()
        .all(|r| !r["figure"].as_str().unwrap().starts_with("http_")));
}

#[test]
fn engine_smoke() {
    let (r, _) = bench(&["engine", "--members", "2000", "--ops", "2000", "--quiet"]);
    assert_eq!(r.len(), 9);
    assert!(r.iter().all(|r| r["scenario"] == "engine"));
}
