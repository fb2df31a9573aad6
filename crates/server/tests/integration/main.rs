//! podium-server's integration tests, one module per subject, in one test
//! binary: each module was a binary of its own, and linking 23 binaries
//! against the whole server took longer than running most of them. Every
//! test starts the real `podium` binary (or the library's parts) on free
//! ports; none shares state with another beyond the machine, so
//! scripts/rust-tests.sh runs the modules as separate processes side by
//! side (`integration <module>::`), as `cargo test` runs them as threads.
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
