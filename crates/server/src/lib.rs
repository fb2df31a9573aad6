//! podium-server: the operations' frontends (HTTP/JSON, MessagePack-RPC,
//! the Redis protocol), the settings, and `serve`, which puts a storage
//! engine behind them; and the client commands of the `podium` binary.

pub mod client;
pub mod http;
pub mod hugepages;
mod listen;
pub mod resp;
pub mod rpc;
pub mod server;
pub mod settings;
