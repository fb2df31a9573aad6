//! podium-server: the operations' frontends (HTTP/JSON, MessagePack-RPC,
//! the Redis protocol), the settings, the request rate limits the
//! frontends share, and `serve`, which puts a storage engine behind them. The `podium` binary's client commands are
//! podium-cli's; its `bench` runs the podium-bench binary.

pub mod http;
pub mod limits;
mod listen;
pub mod rate;
pub mod resp;
pub mod rpc;
pub mod server;
pub mod settings;
