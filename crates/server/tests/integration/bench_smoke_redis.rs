//! `podium bench` end to end at a tiny scale with Redis beside podium: the
//! network scenarios also measure redis-server (the `external` feature).

use crate::support;

use support::bench::*;

/// The same with Redis beside podium: needs `redis-server` (the
/// `external` feature, which scripts/test.sh turns on after installing it).
#[test]
fn network_scenarios_with_redis_smoke() {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("redis-server").is_file()));
    assert!(
        found,
        "redis-server is needed: run scripts/test.sh, which installs it"
    );
    let (r, out) = rank10m(true);
    check(&r, "rank10m", RANK10M, true);
    assert!(out.contains("Redis 7"), "{out}");
    let (r, _) = http_updates(true);
    check(&r, "http-updates", HTTP, true);
    let (r, _) = rpc_payload(true);
    check(&r, "rpc-payload", PAYLOAD, true);
    let (r, _) = import(true);
    check(&r, "import", IMPORT, true);
}
