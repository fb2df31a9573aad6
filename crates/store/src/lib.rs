//! The embedded durable store: the board service over the engine
//! (`service`), the Redis data model beside it (`keyspace`), the
//! write-ahead log, snapshots, recovery and repair (`storage`), and the
//! storage interface's embedded implementation (`embedded`) and the webhook
//! deliveries it owes (`outbox`).

pub mod embedded;
pub mod keyspace;
pub mod outbox;
pub mod service;
pub mod storage;
// (core's; most of the store's waits go through it.)
use podium_core::wait;

use std::fmt;
use std::str::FromStr;

pub use embedded::EmbeddedBackend;

/// When the embedded store's log is flushed to disk (`--fsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// A write is acknowledged only after its record is on disk (group commit).
    #[default]
    Always,
    /// The log is flushed once a second; a crash may lose the last second.
    EverySec,
    /// Flushing is left to the operating system.
    No,
}

impl FsyncPolicy {
    /// The name used on the command line and in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }
}

impl FromStr for FsyncPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" => Ok(FsyncPolicy::Always),
            "everysec" => Ok(FsyncPolicy::EverySec),
            "no" => Ok(FsyncPolicy::No),
            _ => Err(format!(
                "unknown fsync policy {s:?}: expected always, everysec or no"
            )),
        }
    }
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read from the config file through `FromStr`, as on the command line.
impl<'de> serde::Deserialize<'de> for FsyncPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl From<storage::StorageError> for podium_core::error::ApiError {
    fn from(e: storage::StorageError) -> Self {
        podium_core::error::ApiError::new(
            podium_core::error::Code::StorageUnavailable,
            e.to_string(),
        )
    }
}
