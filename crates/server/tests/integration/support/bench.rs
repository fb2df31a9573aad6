//! `podium bench SCENARIO --json FILE` at smoke scale, and the figures
//! each scenario must report.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A scenario at smoke scale may still take a while on a loaded machine.
pub const LIMIT: Duration = Duration::from_secs(300);

/// `podium bench` runs the podium-bench binary beside podium. `cargo test
/// --workspace` builds it (the bench package has tests of its own); a run
/// of this package alone may not have, so then it is built here, once,
/// into the directory and profile podium was built in. (After changing
/// the bench crate, test the workspace or build podium-bench: a binary
/// already there is used as it is.)
fn build_podium_bench() {
    static BUILT: Once = Once::new();
    BUILT.call_once(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_podium")).parent().unwrap();
        if dir.join("podium-bench").exists() {
            return;
        }
        let profile = match dir.file_name().unwrap().to_str().unwrap() {
            "debug" => "dev",
            p => p,
        };
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "podium-bench",
                "--bin",
                "podium-bench",
            ])
            .args(["--profile", profile, "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
            .env("CARGO_TARGET_DIR", dir.parent().unwrap())
            .stdin(Stdio::null())
            .status()
            .expect("running cargo build -p podium-bench");
        assert!(status.success(), "cargo build -p podium-bench failed");
    });
}

/// Runs `podium bench ARGS --json FILE`; returns the records and stdout.
pub fn bench(args: &[&str]) -> (Vec<Value>, String) {
    build_podium_bench();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("out.json");
    let out = tmp.path().join("stdout");
    let err = tmp.path().join("stderr");
    let mut child = Command::new(super::bin())
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawning podium bench");
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("podium bench {args:?} still running after {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.success(),
        "podium bench {args:?} failed ({status}):\n{stdout}\n{stderr}"
    );
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}\n{stdout}"));
    (records, stdout)
}

/// Every record names its scenario and a figure and has a positive podium
/// figure (errors excepted: those must be 0); with Redis, a positive Redis
/// figure too.
pub fn check(records: &[Value], scenario: &str, figures: &[&str], redis: bool) {
    assert!(!records.is_empty(), "{scenario}: no records");
    for r in records {
        assert_eq!(r["scenario"], scenario, "{r}");
        let figure = r["figure"].as_str().expect("figure");
        assert!(r["unit"].is_string(), "{r}");
        let p = r["podium"].as_f64().unwrap_or_else(|| panic!("{r}"));
        if figure.contains("errors") {
            assert_eq!(p, 0.0, "{r}");
        } else {
            assert!(p > 0.0 && p.is_finite(), "{r}");
        }
        if redis && !figure.contains("errors") {
            let v = r["redis"].as_f64().unwrap_or_else(|| panic!("{r}"));
            assert!(v > 0.0, "{r}");
            assert!(r["ratio"].as_f64().is_some_and(|x| x > 0.0), "{r}");
        } else if !redis {
            assert!(r["redis"].is_null(), "{r}");
        }
    }
    for f in figures {
        assert!(
            records.iter().any(|r| r["figure"] == *f),
            "{scenario}: no figure {f} in {records:?}"
        );
    }
}

pub fn rank10m(redis: bool) -> (Vec<Value>, String) {
    let mut a = vec![
        "rank10m",
        "--members",
        "20k",
        "--reads",
        "500",
        "--batch",
        "500",
        "--quiet",
    ];
    if !redis {
        a.push("--no-redis");
    }
    bench(&a)
}

pub fn http_updates(redis: bool) -> (Vec<Value>, String) {
    let mut a = vec![
        "http-updates",
        "--clients",
        "4",
        "--members",
        "1000",
        "--seconds",
        "0.5",
        "--quiet",
    ];
    if !redis {
        a.push("--no-redis");
    }
    bench(&a)
}

pub fn rpc_payload(redis: bool) -> (Vec<Value>, String) {
    let mut a = vec![
        "rpc-payload",
        "--members",
        "1000,5000",
        "--seconds",
        "0.05",
        "--quiet",
    ];
    if !redis {
        a.push("--no-redis");
    }
    bench(&a)
}

pub fn import(redis: bool) -> (Vec<Value>, String) {
    let mut a = vec!["import", "--members", "1000,25k", "--quiet"];
    if !redis {
        a.push("--no-redis");
    }
    bench(&a)
}

pub const SEARCH: &[&str] = &[
    "index_build",
    "index_memory",
    "queries_a_a_a",
    "http_queries_a",
    "http_queries_a_a",
    "http_p99_a_a_a",
    "http_errors_a",
];

pub const RANK10M: &[&str] = &[
    "load_sequential_s",
    "load_random_s",
    "page_read_mean_us",
    "page_read_p99_us",
];
pub const HTTP: &[&str] = &[
    "updates_per_s",
    "latency_p50_ms",
    "latency_max_ms",
    "errors",
];
pub const PAYLOAD: &[&str] = &[
    "1000_entries_sync",
    "1000_entries_pipelined",
    "1000_entries_parallel",
    "5000_entries_sync_decoded",
    "5000_entries_sync_entries",
];
pub const IMPORT: &[&str] = &["import_1000_s", "import_25000_s", "import_25000_rate"];
