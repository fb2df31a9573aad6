//! podium-server: the pieces of the `podium` binary.

pub mod api;
pub mod backend;
pub mod client;
pub mod error;
pub mod http;
pub mod hugepages;
pub mod json;
pub mod keyspace;
pub mod op;
pub mod resp;
pub mod rpc;
pub mod schedule;
pub mod score;
pub mod server;
pub mod service;
pub mod settings;
pub mod storage;
