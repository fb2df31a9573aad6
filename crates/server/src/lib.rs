//! podium-server: the pieces of the `podium` binary.

pub mod api;
pub mod error;
pub mod schedule;
pub mod service;
pub mod settings;
pub mod storage;
