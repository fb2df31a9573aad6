//! What podium's operations are, whatever serves or stores them: the
//! request and result shapes (`api`), errors and their stable codes, the
//! score and strict-JSON rules, CSV import records (`csv`), reset
//! schedules, the operations' key scopes (`op`), the storage interface
//! every engine implements (`backend`) and the Redis data model an engine
//! may serve in process (`keystore`), the token buckets of the rate
//! limits (`rate`), the per-thread counters of hot paths (`counters`)
//! and the write policy every engine is held to: the per-member
//! submission limit and whether writes create boards (`write_policy`),
//! the backup format (`backup`), the MessagePack forms of results
//! written straight from the engine's entries (`msgpack`), and how a
//! runtime worker waits for what another thread holds (`wait`).

pub mod api;
pub mod backend;
pub mod backup;
pub mod counters;
pub mod csv;
pub mod entry;
pub mod error;
pub mod events;
pub mod json;
pub mod keystore;
pub mod memory;
pub mod msgpack;
pub mod op;
pub mod ops;
pub mod private_fs;
pub mod rate;
pub mod schedule;
pub mod score;
pub mod wait;
pub mod write_policy;
