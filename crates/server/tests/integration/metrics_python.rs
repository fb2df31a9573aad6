//! `/metrics` of a real `podium serve` read by Prometheus's own parser
//! (`prometheus_client`, `tests/python/metrics_test.py`): every family has
//! HELP and TYPE, and the Grafana dashboard in docs/ uses only series the
//! server exports. Needs python3 with prometheus_client and msgpack (the
//! `external` feature).

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::launch::launch;
use support::serve_command;

#[test]
fn metrics_parse_with_prometheus_client_and_the_dashboard_uses_only_them() {
    let ok = Command::new("python3")
        .args(["-c", "import prometheus_client, msgpack"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with prometheus_client and msgpack is needed: run scripts/test.sh, which \
         installs them (or: python3 -m pip install prometheus_client msgpack)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let any = "127.0.0.1:0";
    let cmd = serve_command(
        &tmp.path().join("data"),
        &["--http", any, "--rpc", any, "--resp", any],
        &[],
    );
    let mut s = launch(
        cmd,
        &tmp.path().join("stderr"),
        "podium: resp listening on ",
        Duration::from_secs(30),
    );
    let printed = s.stdout.lock().unwrap().clone();
    let addr = |what: &str| {
        printed
            .lines()
            .find_map(|l| l.strip_prefix(&format!("podium: {what} listening on ")))
            .unwrap_or_else(|| panic!("no {what} line in {printed}"))
            .trim()
            .to_string()
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("tests/python/metrics_test.py"))
        .args([addr("http"), addr("rpc"), s.addr.clone()])
        .arg(root.join("../../docs/grafana/podium-dashboard.json"))
        .output()
        .expect("running the metrics test script");
    let _ = s.child.kill();
    let _ = s.child.wait();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "metrics_test.py failed:\n{text}");
}
