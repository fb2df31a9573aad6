//! The Redis / Redis Cluster backend: owns the connection (a
//! `ConnectionManager` that reconnects by itself, or a cluster connection
//! that follows MOVED/ASK), the key layout of a board under its hash tag,
//! the Lua function library every compound operation runs in
//! (`podium.lua`, loaded once per node, called by FCALL), and the
//! translation of its replies into the API's shapes and the engine's
//! errors (an import batch goes in as a native ZADD between two of the
//! library's guards), and the scheduled resets of boards kept
//! in Redis (`run_due_resets`, `spawn_reset_scheduler`), safe with any
//! number of podium nodes. Layout and decisions: `docs/redis-backend.md`.
//!
//! By concern: `conn` (connection, function library, FCALL), `keys` (key
//! layout, board registry), `args` (what goes into a call), `reply` (what
//! comes back, and Redis errors as the API's), `config` (board configs and
//! what Redis refuses), `submit` (writes and bulk loads), `combine`,
//! `search`, `sorted` (boards with sort keys: their bytes in Redis, re-sorts),
//! `reset` (resets and their scheduler), `events` (live events: a reader
//! of each watched board's stream, feeding the filters' rings), and `backend` (the
//! [`podium_core::backend::Backend`] implementation over them).

mod args;
mod backend;
mod combine;
mod config;
mod conn;
mod events;
mod keys;
mod reply;
mod reset;
mod search;
mod sorted;
mod submit;

pub use conn::{RedisBackend, RedisOptions};
pub use reset::spawn_reset_scheduler;
#[doc(hidden)]
pub use reset::SeenResets;
