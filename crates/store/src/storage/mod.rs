//! Durable storage of the embedded backend: the data directory and its
//! lock, recovery (newest snapshot, then the log after it; a torn final
//! write cut off, any other damage refused with every file left as it
//! was), and snapshots with log rotation. The write path itself — apply,
//! append, wait for the fsync — lives in [`crate::service`], which owns the
//! order; `podium repair` lives in [`repair`].
//!
//! A data directory holds `snapshot-<lsn>.pdms` (every board as of log
//! position `lsn`), `log-<lsn>.pdml` segments (records from `lsn` on) and a
//! `LOCK` file. docs/storage.md has the bytes, docs/operations.md the
//! recovery messages.

pub mod log;
pub mod record;
pub mod repair;
pub mod snapshot;

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use podium_engine::Store;
use thiserror::Error;

use crate::FsyncPolicy;
use log::{Log, SegmentEnd};
use podium_core::keystore::KeyType;
use record::{LogOp, Replayed, StrExpiry};
use snapshot::SnapAux;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("storage failed: {0}")]
    Failed(String),
    /// The reason is in the message and not a `source`: a chain printer
    /// (`{:#}`) would print it twice.
    #[error("data directory {path}: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("data directory {0} is in use by another podium process")]
    Locked(PathBuf),
    #[error("cannot recover {path}: {why}")]
    Corrupt { path: PathBuf, why: String },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StorageError + '_ {
    move |error| StorageError::Io {
        path: path.to_path_buf(),
        error,
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
    /// `(segment file, bytes cut off, why)` for a torn tail.
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
    /// Redis strings.
    pub strings: HashMap<Vec<u8>, Vec<u8>>,
    /// Webhook deliveries due.
    pub outbox: crate::outbox::Outboxes,
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
                self.strings.remove(key);
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
                self.strings.clear();
                self.expires.clear();
                self.periods.clear();
            }
            LogOp::RenameKey { from, to, kind } | LogOp::CopyKey { from, to, kind } => {
                if from == to {
                    return;
                }
                let copy = matches!(op, LogOp::CopyKey { .. });
                let name = |k: &[u8]| String::from_utf8(k.to_vec()).ok();
                self.hashes.remove(to);
                self.strings.remove(to);
                self.expires.remove(to);
                if let Some(to) = name(to) {
                    self.periods.remove(&to);
                }
                let expiry = match copy {
                    true => self.expires.get(from).copied(),
                    false => self.expires.remove(from),
                };
                if let Some(at) = expiry {
                    self.expires.insert(to.clone(), at);
                }
                match kind {
                    KeyType::Hash => {
                        let h = match copy {
                            true => self.hashes.get(from).cloned(),
                            false => self.hashes.remove(from),
                        };
                        if let Some(h) = h {
                            self.hashes.insert(to.clone(), h);
                        }
                    }
                    KeyType::String => {
                        let v = match copy {
                            true => self.strings.get(from).cloned(),
                            false => self.strings.remove(from),
                        };
                        if let Some(v) = v {
                            self.strings.insert(to.clone(), v);
                        }
                    }
                    KeyType::Zset => {
                        if let (Some(from), Some(to)) = (name(from), name(to)) {
                            let label = match copy {
                                true => self.periods.get(&from).cloned(),
                                false => self.periods.remove(&from),
                            };
                            if let Some(label) = label {
                                self.periods.insert(to, label);
                            }
                        }
                    }
                }
            }
            LogOp::SetString { key, value, expiry } => {
                self.replace_with_string(key, value.clone());
                match expiry {
                    StrExpiry::Clear => {
                        self.expires.remove(key);
                    }
                    StrExpiry::Keep => {}
                    StrExpiry::At(at_ms) => {
                        self.expires.insert(key.clone(), *at_ms);
                    }
                }
            }
            LogOp::MSet { pairs } => {
                for (key, value) in pairs {
                    self.replace_with_string(key, value.clone());
                    self.expires.remove(key);
                }
            }
            LogOp::Rename { pairs } => crate::service::databases::rename_aux(self, pairs),
            LogOp::HookEvents { board, hooks } => {
                for h in hooks {
                    self.outbox.add(board, h);
                }
            }
            LogOp::HookAck { board, hook, upto } => self.outbox.ack(board, hook, *upto),
            _ => {}
        }
    }
}

impl Aux {
    /// `key` becomes a string (the store part, dropping a board of that
    /// name, is [`LogOp::replay`]'s).
    fn replace_with_string(&mut self, key: &[u8], value: Vec<u8>) {
        self.hashes.remove(key);
        if let Ok(name) = std::str::from_utf8(key) {
            self.periods.remove(name);
        }
        self.strings.insert(key.to_vec(), value);
    }
}

/// The exclusive lock of a data directory, held while this value lives.
///
/// The lock is an OS lock (`flock`) on the directory itself, so no file
/// anyone could delete carries it: two podium processes on one directory
/// would hand out the same LSNs. The OS drops it when the process dies.
/// `LOCK` is locked as well, which keeps out a podium older than this one
/// (it locks only that file).
pub struct DirLock {
    _dir: File,
    _file: File,
}

fn try_lock(f: &File, dir: &Path, what: &Path) -> Result<(), StorageError> {
    match f.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(StorageError::Locked(dir.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => Err(io_err(what)(e)),
    }
}

/// Takes the lock of an existing data directory, or fails with
/// [`StorageError::Locked`] when another process holds it.
pub fn lock_dir(dir: &Path) -> Result<DirLock, StorageError> {
    let d = File::open(dir).map_err(io_err(dir))?;
    try_lock(&d, dir, dir)?;
    let lock_path = dir.join("LOCK");
    let f = podium_core::private_fs::options()
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(io_err(&lock_path))?;
    try_lock(&f, dir, &lock_path)?;
    Ok(DirLock { _dir: d, _file: f })
}

/// An open data directory.
pub struct Storage {
    pub dir: PathBuf,
    pub log: Log,
    _lock: DirLock,
}

/// Where reading the log from a snapshot had to stop.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// Segment `index` starts after LSN `from`, which is the next one
    /// needed: records `from` to its start − 1 are nowhere.
    Gap {
        index: usize,
        segment: PathBuf,
        from: u64,
        start: u64,
    },
    /// Segment `index` holds something other than a valid frame at
    /// `offset` (0: its header), and this is not a torn final write.
    Damage {
        index: usize,
        segment: PathBuf,
        offset: u64,
        why: String,
        /// The LSN the frame at `offset` should hold.
        expected: u64,
        /// Whole frames found after `offset` in the same segment.
        beyond: Option<log::Beyond>,
    },
}

impl Stop {
    pub fn segment(&self) -> &Path {
        match self {
            Stop::Gap { segment, .. } | Stop::Damage { segment, .. } => segment,
        }
    }

    /// Position of the segment in the list the walk read.
    pub fn index(&self) -> usize {
        match self {
            Stop::Gap { index, .. } | Stop::Damage { index, .. } => *index,
        }
    }
}

/// What reading the log found. Reading changes no file; [`open`] acts on
/// it, and so does `podium repair`.
#[derive(Debug, Default)]
pub struct Walk {
    /// The last LSN read (the snapshot's when no record follows it).
    pub last: u64,
    /// Records read after the snapshot.
    pub replayed: u64,
    /// The last segment ends in a torn write: `(segment, bytes to keep,
    /// file length, why)`.
    pub torn: Option<(PathBuf, u64, u64, String)>,
    /// The last segment is shorter than its header: a crash while it was
    /// being created; it holds no record.
    pub headless: Option<PathBuf>,
    /// Damaged segments whose records all precede the next segment's
    /// start and were read before them: nothing of theirs is needed.
    pub stale_damage: Vec<(PathBuf, u64, String)>,
    /// Bytes of the segments read.
    pub bytes: u64,
    pub stop: Option<Stop>,
}

/// Replays one record onto `store` and `aux`, a unit's parts in order.
fn replay_record(store: &Store, aux: &mut Aux, op: &LogOp) {
    match op.replay(store) {
        Replayed::Done => {}
        Replayed::Aux(op) => aux.apply(op),
        Replayed::Unit(parts) => {
            for p in parts {
                replay_record(store, aux, p);
            }
        }
    }
}

/// Reads `segments` (by start) after a snapshot of LSN `base`, calling
/// `replay` for each record after it in order, until the end of the log or
/// the first point past which the log cannot be trusted. `read` gives a
/// segment's bytes (repair looks at patched copies).
pub fn walk_log(
    segments: &[(u64, PathBuf)],
    base: u64,
    mut read: impl FnMut(&Path) -> io::Result<Vec<u8>>,
    mut replay: impl FnMut(u64, LogOp),
) -> Result<Walk, StorageError> {
    let mut w = Walk {
        last: base,
        ..Walk::default()
    };
    for (i, (start, path)) in segments.iter().enumerate() {
        let is_last = i + 1 == segments.len();
        if *start > w.last + 1 {
            w.stop = Some(Stop::Gap {
                index: i,
                segment: path.clone(),
                from: w.last + 1,
                start: *start,
            });
            return Ok(w);
        }
        let data = read(path).map_err(io_err(path))?;
        w.bytes += data.len() as u64;
        let mut last = w.last;
        let mut replayed = 0;
        let end = log::parse_segment(&data, |lsn, op| {
            if lsn > last {
                replay(lsn, op);
                last = lsn;
                replayed += 1;
            }
        });
        w.last = last;
        w.replayed += replayed;
        let SegmentEnd::Damaged {
            last_lsn,
            valid_len,
            file_len,
            why,
        } = end
        else {
            continue;
        };
        let expected = last_lsn.map_or(*start, |l| l + 1);
        if valid_len == 0 && is_last && file_len < log::SEGMENT_MAGIC.len() as u64 {
            w.headless = Some(path.clone());
            continue;
        }
        // The rest of this segment holds records below the next segment's
        // start; when those are all read already, it is not needed.
        if let Some((next, _)) = segments.get(i + 1) {
            if *next <= w.last + 1 {
                w.stale_damage.push((path.clone(), valid_len, why));
                continue;
            }
        }
        let beyond = log::frames_beyond(&data, valid_len as usize, expected);
        if is_last && valid_len > 0 && beyond.is_none() {
            w.torn = Some((path.clone(), valid_len, file_len, why));
            continue;
        }
        w.stop = Some(Stop::Damage {
            index: i,
            segment: path.clone(),
            offset: valid_len,
            why,
            expected,
            beyond,
        });
        return Ok(w);
    }
    Ok(w)
}

/// Why a start was refused at `stop`, with what to do about it.
fn refusal(dir: &Path, stop: &Stop, later: usize) -> StorageError {
    let what = match stop {
        Stop::Gap { from, start, .. } => format!(
            "log records {from} to {} are missing (the segment before ended early or is gone)",
            start - 1
        ),
        Stop::Damage {
            offset,
            why,
            beyond,
            ..
        } => {
            let mut s = if *offset == 0 {
                format!("damaged segment header ({why}) at byte 0")
            } else {
                format!("damaged log at byte {offset} ({why})")
            };
            if let Some(b) = beyond {
                s += &format!(
                    ", followed by {} valid record(s) up to LSN {} in the same segment, so this is \
                     damage, not a torn write",
                    b.frames, b.last_lsn
                );
            }
            s
        }
    };
    let later = if later > 0 {
        format!("; {later} later segment(s) hold newer records")
    } else {
        String::new()
    };
    StorageError::Corrupt {
        path: stop.segment().to_path_buf(),
        why: format!(
            "{what}{later}. No file was changed. `podium repair {0}` shows what a repair \
             would keep and lose; `podium repair --apply {0}` does it",
            dir.display()
        ),
    }
}

/// Opens (creating if needed) and recovers `dir` into `store`.
/// Returns the storage, the reset periods recorded for boards, and a report.
///
/// Recovery changes files only once it knows it can finish: a torn final
/// write of the last segment is cut off; any other damage refuses the
/// start with every file as it was.
pub fn open(
    dir: &Path,
    policy: FsyncPolicy,
    store: &Store,
) -> Result<(Storage, Aux, RecoveryReport), StorageError> {
    podium_core::private_fs::create_dir_all(dir).map_err(io_err(dir))?;
    let lock = lock_dir(dir)?;
    let mut report = RecoveryReport::default();
    let mut aux = Aux::default();

    let snaps = snapshot::list_snapshots(dir).map_err(io_err(dir))?;
    if let Some((_, path)) = snaps.last() {
        // The newest snapshot was synced before its rename: damage here is
        // disk corruption, and the segments before it are gone.
        let (lsn, boards, snap_aux) =
            snapshot::read(path).map_err(|why| StorageError::Corrupt {
                path: path.clone(),
                why: format!(
                    "{why}. No file was changed. This snapshot holds every record up to its \
                     LSN; `podium repair {}` says whether an older snapshot and the log can \
                     replace it",
                    dir.display()
                ),
            })?;
        report.snapshot_lsn = lsn;
        report.boards = boards.len();
        for (key, fields) in snap_aux.hashes {
            aux.hashes.insert(key, fields.into_iter().collect());
        }
        aux.expires.extend(snap_aux.expires);
        aux.strings.extend(snap_aux.strings);
        aux.outbox = snap_aux.outbox;
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
    let walk = walk_log(
        &segments,
        report.snapshot_lsn,
        |p| fs::read(p),
        |_, op| replay_record(store, &mut aux, &op),
    )?;
    report.replayed = walk.replayed;
    if let Some(stop) = &walk.stop {
        return Err(refusal(dir, stop, segments.len() - stop.index() - 1));
    }
    for (path, at, why) in &walk.stale_damage {
        tracing::warn!(
            segment = %path.display(),
            "log segment damaged at byte {at} ({why}), but every record it could hold is \
             already read from the next segment: ignored; the next snapshot deletes it"
        );
    }
    let mut live_bytes = walk.bytes;
    if let Some(path) = &walk.headless {
        // A crash while it was created: not even a header, so no record.
        live_bytes -= fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        fs::remove_file(path).map_err(io_err(path))?;
        tracing::warn!(
            segment = %path.display(),
            "log segment shorter than its header (a crash while it was created): removed"
        );
    }
    if let Some((path, kept, file_len, why)) = &walk.torn {
        let f = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err(path))?;
        f.set_len(*kept).map_err(io_err(path))?;
        f.sync_all().map_err(io_err(path))?;
        let dropped = file_len - kept;
        live_bytes -= dropped;
        tracing::warn!(
            segment = %path.display(),
            dropped_bytes = dropped,
            "torn log tail cut off ({why}): kept {kept} bytes, dropped {dropped}"
        );
        report.truncated = Some((path.clone(), dropped, why.clone()));
    }
    // Leftovers of a snapshot interrupted before its rename: removed only
    // now, so a refused start leaves every file as it was.
    for e in fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        if e.file_name().to_string_lossy().ends_with(".pdms.tmp") {
            let _ = fs::remove_file(e.path());
        }
    }
    let log = Log::open(dir, walk.last + 1, policy, live_bytes).map_err(io_err(dir))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    pub(super) fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("podium-rec-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn an_io_error_says_its_reason_once_along_its_chain() {
        let dir = tmp("io-err").join("missing");
        let Err(e) = lock_dir(&dir) else {
            panic!("locked a directory that does not exist");
        };
        let mut chain = e.to_string();
        let mut next = std::error::Error::source(&e);
        while let Some(s) = next {
            chain.push_str(&format!(": {s}"));
            next = s.source();
        }
        assert_eq!(
            chain.matches("No such file or directory").count(),
            1,
            "{chain}"
        );
        assert!(chain.contains(&dir.display().to_string()), "{chain}");
    }

    /// Record `i` sets field `f<i>` of hash `h`: what survives recovery
    /// says exactly which records were kept.
    pub(super) fn op(i: u64) -> LogOp {
        LogOp::HSet {
            key: b"h".to_vec(),
            pairs: vec![(format!("f{i}").into_bytes(), vec![b'x'; 40])],
        }
    }

    /// Opens `dir`, appends `n` records (each acknowledged: synced), closes.
    pub(super) fn write_records(dir: &Path, n: u64) {
        let store = Store::new();
        let (s, _, _) = open(dir, FsyncPolicy::Always, &store).unwrap();
        let first = s.log.next_lsn();
        for i in first..first + n {
            assert_eq!(s.log.append(&op(i)), i);
        }
        s.log.wait_blocking(first + n - 1).unwrap();
        s.log.close().unwrap();
    }

    /// Every file of the data directory and its bytes.
    pub(super) fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read(&p).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_flip_in_the_middle_of_the_last_segment_refuses_to_start() {
        let dir = tmp("mid");
        write_records(&dir, 1000);
        let (_, seg) = log::list_segments(&dir).unwrap().pop().unwrap();
        let mut bytes = fs::read(&seg).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x10;
        fs::write(&seg, &bytes).unwrap();
        let before = files(&dir);
        let r = open(&dir, FsyncPolicy::Always, &Store::new());
        let Err(StorageError::Corrupt { path, why }) = r else {
            panic!("recovery went on past damage followed by valid records");
        };
        assert_eq!(path, seg);
        assert!(why.contains("podium repair"), "{why}");
        assert_eq!(files(&dir), before, "a refused start changed a file");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_flip_in_the_segment_header_refuses_to_start() {
        let dir = tmp("hdr");
        write_records(&dir, 1000);
        let (_, seg) = log::list_segments(&dir).unwrap().pop().unwrap();
        let mut bytes = fs::read(&seg).unwrap();
        bytes[3] ^= 0x01;
        fs::write(&seg, &bytes).unwrap();
        let before = files(&dir);
        let r = open(&dir, FsyncPolicy::Always, &Store::new());
        assert!(
            matches!(&r, Err(StorageError::Corrupt { path, .. }) if *path == seg),
            "a damaged segment header did not refuse the start"
        );
        assert_eq!(files(&dir), before, "a refused start changed a file");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn deleting_the_lock_file_does_not_let_a_second_opener_in() {
        let dir = tmp("lock");
        let (_first, _, _) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
        let _ = fs::remove_file(dir.join("LOCK"));
        let second = open(&dir, FsyncPolicy::Always, &Store::new());
        assert!(
            matches!(second, Err(StorageError::Locked(_))),
            "a second opener got in after LOCK was deleted"
        );
        drop(_first);
        let _ = fs::remove_dir_all(&dir);
    }

    /// A unit's records come back together: all of them when its frame is
    /// whole, none when any byte of it is torn off the tail.
    #[test]
    fn a_unit_is_replayed_whole_or_dropped_whole() {
        let dir = tmp("unit");
        write_records(&dir, 3);
        {
            let store = Store::new();
            let (s, _, _) = open(&dir, FsyncPolicy::Always, &store).unwrap();
            let lsn = s.log.append(&LogOp::Unit((10..15).map(op).collect()));
            s.log.wait_blocking(lsn).unwrap();
            s.log.close().unwrap();
        }
        let fields = |aux: &Aux| -> Vec<String> {
            let mut f: Vec<String> = aux.hashes[&b"h"[..]]
                .keys()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            f.sort();
            f
        };
        let whole = files(&dir);
        let (_, seg) = log::list_segments(&dir).unwrap().pop().unwrap();
        let full = fs::read(&seg).unwrap();
        {
            let (_, aux, report) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
            assert_eq!(report.replayed, 4);
            assert_eq!(
                fields(&aux),
                ["f1", "f10", "f11", "f12", "f13", "f14", "f2", "f3"]
            );
        }
        // The unit is the segment's last frame: cut it anywhere inside.
        let unit_len = {
            let mut b = Vec::new();
            log::encode_frame(&mut b, 4, &LogOp::Unit((10..15).map(op).collect()));
            b.len()
        };
        for cut in [1, unit_len / 2, unit_len - 1] {
            for (name, bytes) in &whole {
                fs::write(dir.join(name), bytes).unwrap();
            }
            // Later segments (opened by the recoveries above) hold nothing.
            for (_, p) in log::list_segments(&dir).unwrap() {
                if p != seg && !whole.contains_key(p.file_name().unwrap().to_str().unwrap()) {
                    fs::remove_file(p).unwrap();
                }
            }
            fs::write(&seg, &full[..full.len() - cut]).unwrap();
            let (_, aux, report) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
            assert_eq!(report.replayed, 3, "cut {cut}");
            assert_eq!(fields(&aux), ["f1", "f2", "f3"], "cut {cut}");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
