//! podium-server: the operations' frontends (HTTP/JSON, MessagePack-RPC,
//! the Redis protocol), the settings, the request rate limits the
//! frontends share, and `serve`, which puts a storage engine behind them. The `podium` binary's client commands are
//! podium-cli's; its `bench` runs the podium-bench binary.

/// The commit the binary was built from (git's short hash, or `unknown`).
pub const COMMIT: &str = env!("PODIUM_COMMIT");
/// `podium --version`: the version and the commit.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("PODIUM_COMMIT"), ")");

pub mod callstats;
// The decoder fuzz tests' support, shared with the other crates' tests.
#[cfg(test)]
#[path = "../../core/tests/fuzz_support/damage.rs"]
mod fuzz_support;
pub mod hooks;
pub mod http;
pub mod limits;
mod listen;
pub mod process;
pub mod rate;
pub mod resp;
pub mod rpc;
pub mod server;
pub mod settings;
