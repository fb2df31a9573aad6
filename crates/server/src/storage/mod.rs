//! Durable storage of the embedded backend (SPEC §5): the data directory,
//! recovery (newest snapshot, then the log after it, a torn tail cut off),
//! and snapshots with log rotation. The write path itself — apply, append,
//! wait for the fsync — lives in [`crate::service`], which owns the order.
//!
//! A data directory holds `snapshot-<lsn>.pdms` (every board as of log
//! position `lsn`), `log-<lsn>.pdml` segments (records from `lsn` on) and a
//! `LOCK` file held while a server uses it. docs/storage.md has the bytes.

pub mod log;
pub mod record;
pub mod snapshot;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use podium_engine::Store;
use thiserror::Error;

use crate::settings::FsyncPolicy;
use log::{Log, SegmentEnd};
use record::{LogOp, Replayed};
use snapshot::SnapAux;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("storage failed: {0}")]
    Failed(String),
    #[error("data directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("data directory {0} is in use by another podium process")]
    Locked(PathBuf),
    #[error("cannot recover {path}: {why}")]
    Corrupt { path: PathBuf, why: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StorageError + '_ {
    move |source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Files `PREFIX<number>SUFFIX` in `dir`, by number.
fn list_numbered(dir: &Path, prefix: &str, suffix: &str) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name
            .strip_prefix(prefix)
            .and_then(|s| s.strip_suffix(suffix))
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push((n, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// What recovery found, for the startup log line and tests.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RecoveryReport {
    pub snapshot_lsn: u64,
    pub boards: usize,
    pub replayed: u64,
    /// `(segment file, bytes cut off, why)` for a damaged tail.
    pub truncated: Option<(PathBuf, u64, String)>,
}

/// The state recovery rebuilds beside the boards.
#[derive(Debug, Default)]
pub struct Aux {
    /// Reset period of each scheduled board.
    pub periods: HashMap<String, String>,
    /// Redis hashes.
    pub hashes: HashMap<Vec<u8>, HashMap<Vec<u8>, Vec<u8>>>,
    /// Key expiry times, ms since the epoch.
    pub expires: HashMap<Vec<u8>, i64>,
}

impl Aux {
    /// Applies a replayed record's non-board part.
    pub fn apply(&mut self, op: &LogOp) {
        match op {
            LogOp::Period { board, label } if label.is_empty() => {
                self.periods.remove(board);
            }
            LogOp::Period { board, label } => {
                self.periods.insert(board.clone(), label.clone());
            }
            LogOp::HSet { key, pairs } => {
                let h = self.hashes.entry(key.clone()).or_default();
                for (f, v) in pairs {
                    h.insert(f.clone(), v.clone());
                }
            }
            LogOp::HDel { key, fields } => {
                if let Some(h) = self.hashes.get_mut(key) {
                    for f in fields {
                        h.remove(f);
                    }
                    if h.is_empty() {
                        self.hashes.remove(key);
                        self.expires.remove(key);
                    }
                }
            }
            LogOp::DelKey { key } => {
                self.hashes.remove(key);
                self.expires.remove(key);
                if let Ok(name) = std::str::from_utf8(key) {
                    self.periods.remove(name);
                }
            }
            LogOp::Delete { board } => {
                self.expires.remove(board.as_bytes());
                self.periods.remove(board);
            }
            LogOp::Expire { key, at_ms } => {
                self.expires.insert(key.clone(), *at_ms);
            }
            LogOp::Persist { key } => {
                self.expires.remove(key);
            }
            LogOp::FlushAll => {
                self.hashes.clear();
                self.expires.clear();
                self.periods.clear();
            }
            _ => {}
        }
    }
}

/// An open data directory.
pub struct Storage {
    pub dir: PathBuf,
    pub log: Log,
    _lock: File,
}

/// Opens (creating if needed) and recovers `dir` into `store`.
/// Returns the storage, the reset periods recorded for boards, and a report.
pub fn open(
    dir: &Path,
    policy: FsyncPolicy,
    store: &Store,
) -> Result<(Storage, Aux, RecoveryReport), StorageError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let lock_path = dir.join("LOCK");
    let lock = File::create(&lock_path).map_err(io_err(&lock_path))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(StorageError::Locked(dir.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
    }
    let mut report = RecoveryReport::default();
    let mut aux = Aux::default();

    // Leftovers of a snapshot interrupted before its rename.
    for e in fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        if e.file_name().to_string_lossy().ends_with(".pdms.tmp") {
            let _ = fs::remove_file(e.path());
        }
    }

    let snaps = snapshot::list_snapshots(dir).map_err(io_err(dir))?;
    if let Some((_, path)) = snaps.last() {
        // The newest snapshot was synced before its rename: damage here is
        // disk corruption, and older segments are gone, so refuse to guess.
        let (lsn, boards, snap_aux) =
            snapshot::read(path).map_err(|why| StorageError::Corrupt {
                path: path.clone(),
                why,
            })?;
        report.snapshot_lsn = lsn;
        report.boards = boards.len();
        for (key, fields) in snap_aux.hashes {
            aux.hashes.insert(key, fields.into_iter().collect());
        }
        aux.expires.extend(snap_aux.expires);
        for b in boards {
            if let Some(p) = b.period {
                aux.periods.insert(b.name.clone(), p);
            }
            store
                .insert(&b.name, b.board)
                .map_err(|e| StorageError::Corrupt {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
        }
        // The log after a snapshot names archives itself; the snapshot's
        // own may predate archives recording whose they are.
        store.adopt_legacy_archives();
    }

    let segments = log::list_segments(dir).map_err(io_err(dir))?;
    let mut last = report.snapshot_lsn;
    let mut live_bytes = 0;
    for (i, (start, path)) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        if *start > last + 1 {
            return Err(StorageError::Corrupt {
                path: path.clone(),
                why: format!("log records {} to {} are missing", last + 1, start - 1),
            });
        }
        let mut replayed = 0;
        let end = log::read_segment(path, |lsn, op| {
            if lsn > last {
                if let Replayed::Aux(op) = op.replay(store) {
                    aux.apply(op);
                }
                last = lsn;
                replayed += 1;
            }
        })
        .map_err(io_err(path))?;
        report.replayed += replayed;
        match end {
            SegmentEnd::Clean { .. } => {}
            SegmentEnd::Damaged {
                valid_len,
                file_len,
                why,
                ..
            } => {
                if !is_last {
                    return Err(StorageError::Corrupt {
                        path: path.clone(),
                        why: format!("{why} at byte {valid_len}, and later segments exist"),
                    });
                }
                if valid_len < log::SEGMENT_MAGIC.len() as u64 {
                    // Not even a header (a crash while creating it): no records.
                    fs::remove_file(path).map_err(io_err(path))?;
                } else {
                    let f = fs::OpenOptions::new()
                        .write(true)
                        .open(path)
                        .map_err(io_err(path))?;
                    f.set_len(valid_len).map_err(io_err(path))?;
                    f.sync_all().map_err(io_err(path))?;
                }
                let dropped = file_len - valid_len;
                tracing::warn!(
                    segment = %path.display(),
                    dropped_bytes = dropped,
                    "log tail damaged ({why}): kept {valid_len} bytes, dropped {dropped}"
                );
                report.truncated = Some((path.clone(), dropped, why));
            }
        }
        live_bytes += fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    }
    let log = Log::open(dir, last + 1, policy, live_bytes).map_err(io_err(dir))?;
    Ok((
        Storage {
            dir: dir.to_path_buf(),
            log,
            _lock: lock,
        },
        aux,
        report,
    ))
}

impl Storage {
    /// Writes the snapshot of log position `lsn` and deletes the snapshots
    /// and segments it replaces. `boards` must be exactly the state after
    /// record `lsn`, and [`Log::rotate`] must have returned `lsn`.
    pub fn snapshot<B: snapshot::WriteBoard>(
        &self,
        lsn: u64,
        boards: &[snapshot::SnapBoard<B>],
        aux: &SnapAux,
    ) -> io::Result<u64> {
        let size = snapshot::write(&self.dir, lsn, boards, aux)?;
        for (l, p) in snapshot::list_snapshots(&self.dir)? {
            if l < lsn {
                fs::remove_file(p)?;
            }
        }
        let mut freed = 0;
        for (start, p) in log::list_segments(&self.dir)? {
            if start <= lsn {
                freed += fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                fs::remove_file(p)?;
            }
        }
        self.log.forget_bytes(freed);
        Ok(size)
    }
}
