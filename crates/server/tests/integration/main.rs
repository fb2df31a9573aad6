//! podium-server's integration tests, one module per subject, in one test
//! binary: each test binary links the whole server and its dependencies,
//! and as 23 binaries they took a sixth of a fresh release build of the
//! tests. Every test starts the real `podium` binary (or the library's
//! parts) on free ports and shares nothing with another beyond the
//! machine, so scripts/rust-tests.sh runs each module as a process of its
//! own, side by side, where `cargo test` runs them all as threads of one.
//!
//! The modules behind the `external` feature need programs beyond the Rust
//! toolchain (redis-server, redis-cli, Python with redis-py and msgpack,
//! Node.js and the Redis leaderboard libraries); scripts/test.sh installs
//! them and turns the feature on.
//!
//! Two tests stay binaries of their own: `memory_per_member` (a counting
//! global allocator) and `fuzz` (an allocator that records the peak).

#[cfg(feature = "external")]
mod backend_conformance;
#[cfg(feature = "external")]
mod backend_faults;
#[cfg(feature = "external")]
mod backend_serve;
mod bench_smoke;
#[cfg(feature = "external")]
mod bench_smoke_redis;
#[cfg(feature = "external")]
mod chaos;
mod cli;
mod crash;
mod http_api;
mod limits;
#[cfg(feature = "external")]
mod metrics_python;
mod rate_limits;
mod resp_blocking;
#[cfg(feature = "external")]
mod resp_clients;
#[cfg(feature = "external")]
mod resp_diff;
mod resp_durability;
mod resp_events;
mod resp_script_sandbox;
mod resp_scripting;
mod rpc;
#[cfg(feature = "external")]
mod rpc_python;
mod service;
mod startup;
mod support;
