//! Command execution: one method per operation of docs/spec.md §2, called by every
//! protocol frontend. A method validates its arguments, runs one engine
//! call under the board's lock, appends the request to the log while still
//! holding that lock (so the log order is the apply order), and — for
//! writes under `--fsync always` — returns only once the record is on disk.
//!
//! Ordering: ordinary writes hold the `gate` shared; operations that change
//! which boards exist or touch several boards (create, update, delete,
//! reset, merge, intersect) and the snapshot cut hold it exclusively. Those
//! are rare, and holding the gate exclusively means no other write is half
//! done, so the log order is a valid serial order of all boards together
//! and a snapshot taken then is exactly the log up to its cut. Reads hold
//! it shared too, except beside a transaction that named the keys it
//! changes and does not change theirs (see [`gate`]).
//!
//! This module holds the service itself (construction, the gate, the
//! write and read paths every operation goes through, durability); the
//! operations are in the submodules by concern.

mod admin;
pub(crate) mod databases;
mod events;
mod gate;
mod keymove;
mod keys;
mod keystore;
mod reads;
mod snapshot;
mod strings;
mod writes;
mod zalgebra;
mod zset;

pub(crate) use zalgebra::replace as replace_members;
pub use zset::{KeepEntries, ZaddOpts, ZaddRefused, Zadded};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;

use parking_lot::{Mutex, RwLockReadGuard};
use podium_engine::{Board, BoardConfig, Reset, Store};

use crate::keyspace::Keyspace;
use crate::storage::record::{LogOp, SubmitRec};
use crate::storage::{Aux, RecoveryReport, Storage};
use gate::{Exclusive, Gate, Reading};
use podium_core::counters::Counters;
use podium_core::error::{ApiError, Code};
use podium_core::keystore::{Waiters, Writes};
use podium_core::schedule::{Clock, SystemClock};

/// Seconds since the epoch by the system clock (LASTSAVE's unit).
fn unix_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

thread_local! {
    /// Set while this thread runs a transaction under the exclusive gate
    /// (`Service::atomically`): gate acquisitions inside it are no-ops.
    static IN_TX: Cell<bool> = const { Cell::new(false) };
    /// The records of the transaction this thread runs, logged together as
    /// one unit when it ends (`Service::atomically`); `None` outside one.
    static UNIT: RefCell<Option<Vec<LogOp>>> = const { RefCell::new(None) };
}

/// [`Service`]'s key counters.
const KEY_HITS: usize = 0;
const KEY_MISSES: usize = 1;
const EXPIRED_KEYS: usize = 2;

pub struct Service {
    pub(crate) store: Store,
    storage: Option<Storage>,
    gate: Gate,
    /// Reset period each scheduled board is in (`NAME` → label).
    pub(crate) periods: Mutex<HashMap<String, String>>,
    /// The Redis data model beside the boards: hashes and key expiry.
    keyspace: Keyspace,
    clock: Arc<dyn Clock>,
    snapshot_every: u64,
    /// Size of the last snapshot this process wrote.
    last_snapshot_bytes: AtomicU64,
    snapshotting: AtomicBool,
    /// When the last snapshot was written (seconds since the epoch; the
    /// start until one is): LASTSAVE.
    last_save: AtomicI64,
    /// INFO's keyspace statistics (Redis reads only).
    /// Keys found, keys missed ([`KEY_HITS`], [`KEY_MISSES`]) and keys
    /// expired ([`EXPIRED_KEYS`]): INFO's keyspace figures.
    key_counts: Counters,
    pub recovery: RecoveryReport,
    /// The Redis clients blocked on keys, woken by writes that add members.
    pub(crate) waiters: Arc<Waiters>,
    /// Who hears of expired keys (the Redis frontend's keyspace events);
    /// read only when a key expires.
    pub(crate) expiry_sink: parking_lot::RwLock<Option<Arc<dyn podium_core::keystore::ExpirySink>>>,
    /// Boards being re-ranked by a `board_update`: members done, of all.
    resorts: Mutex<HashMap<String, (u64, u64)>>,
    /// Who watches which boards' live events.
    feeds: events::Feeds,
    /// Webhook deliveries due ([`crate::outbox`]), and who waits for them.
    pub(crate) outbox: Mutex<crate::outbox::Outboxes>,
    pub(crate) outbox_notify: tokio::sync::Notify,
}

/// Each entry's result, and the entries as applied.
pub type SubmitOwned = (
    Vec<Result<podium_engine::SubmitResult, ApiError>>,
    Vec<SubmitRec>,
);

impl Service {
    /// A service over `store`, durable through `storage` when given
    /// (`None`: memory only, for tests and benchmarks).
    pub fn new(
        store: Store,
        storage: Option<Storage>,
        aux: Aux,
        recovery: RecoveryReport,
        snapshot_every: u64,
    ) -> Service {
        let mut periods = aux.periods;
        // Data from before a dropped schedule was logged can still hold the
        // period of a board that has no schedule any more.
        periods.retain(|name, _| {
            store
                .read(name, |b| b.config().reset != Reset::Never)
                .unwrap_or(false)
        });
        let svc = Service {
            store,
            storage,
            gate: Gate::default(),
            periods: Mutex::new(periods),
            keyspace: Keyspace::restore(aux.hashes, aux.expires).with_strings(aux.strings),
            clock: Arc::new(SystemClock),
            snapshot_every,
            last_snapshot_bytes: AtomicU64::new(0),
            snapshotting: AtomicBool::new(false),
            last_save: AtomicI64::new(unix_secs()),
            key_counts: Counters::new(3),
            recovery,
            waiters: Arc::default(),
            expiry_sink: Default::default(),
            resorts: Mutex::default(),
            feeds: events::Feeds::default(),
            outbox: Mutex::new(aux.outbox),
            outbox_notify: tokio::sync::Notify::new(),
        };
        // Boards with webhooks are watched from the start: their events
        // are made (and logged) whether or not anybody subscribes.
        for (name, _) in svc.store.list() {
            if svc
                .store
                .read(&name, |b| !b.config().webhooks.is_empty())
                .unwrap_or(false)
            {
                svc.sync_hooks(&name);
            }
        }
        svc
    }

    /// A memory-only service (tests, benchmarks).
    pub fn in_memory() -> Service {
        Service::new(
            Store::new(),
            None,
            Aux::default(),
            RecoveryReport::default(),
            u64::MAX,
        )
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Service {
        self.clock = clock;
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn storage(&self) -> Option<&Storage> {
        self.storage.as_ref()
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    // ------------------------------------------------------------ plumbing

    /// The gate, shared: taken by every ordinary write.
    pub(crate) fn shared(&self) -> Option<RwLockReadGuard<'_, ()>> {
        (!IN_TX.get()).then(|| self.gate.shared())
    }

    /// The gate for a read of `key`: shared, or beside a transaction that
    /// does not change `key`.
    pub(crate) fn reading(&self, key: &[u8]) -> Option<Reading<'_>> {
        (!IN_TX.get()).then(|| self.gate.reading(Some(key)))
    }

    /// The gate for a read of the whole keyspace (KEYS, SCAN, DBSIZE).
    pub(crate) fn reading_all(&self) -> Option<Reading<'_>> {
        (!IN_TX.get()).then(|| self.gate.reading(None))
    }

    /// The gate, exclusive: structural operations.
    pub(crate) fn exclusive(&self) -> Option<Exclusive<'_>> {
        (!IN_TX.get()).then(|| self.gate.exclusive(None))
    }

    /// Runs `f` with every other client's writes excluded, and their reads
    /// of the keys in `writes` (Redis MULTI/EXEC). Service calls inside
    /// `f` run without taking the gate again, and must change only keys in
    /// `writes`. `f` must not await: the exclusion is per thread.
    pub fn atomically<R>(&self, writes: Writes, f: impl FnOnce() -> R) -> R {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                IN_TX.set(false);
            }
        }
        /// Logs what the transaction wrote as one unit, while the gate is
        /// still held (even when `f` panicked: what it applied is logged).
        struct Unit<'a>(&'a Service);
        impl Drop for Unit<'_> {
            fn drop(&mut self) {
                if let Some(parts) = UNIT.take() {
                    self.0.append_unit(parts);
                }
            }
        }
        if IN_TX.get() {
            return f();
        }
        // On the thread it was called from: handing an async worker to
        // another thread for the transaction costs two thread switches,
        // more than most transactions take. Callers whose transactions may
        // be long leave the worker themselves (EXEC before it starts, a
        // script once it has run 1 ms); a wait for the gate happens off
        // the workers.
        let _g = self.gate.exclusive(Some(writes));
        IN_TX.set(true);
        let _reset = Reset;
        if self.storage.is_some() {
            UNIT.set(Some(Vec::new()));
        }
        let _unit = Unit(self);
        f()
    }

    /// Appends a transaction's records: one record as itself, several as
    /// one unit record. Nothing else is appended meanwhile (the gate is
    /// held exclusively), so the unit gets the LSN its parts were promised.
    fn append_unit(&self, mut parts: Vec<LogOp>) {
        let Some(s) = &self.storage else { return };
        match parts.len() {
            0 => {}
            1 => {
                s.log.append(&parts.remove(0));
            }
            _ => {
                let unit = LogOp::Unit(parts);
                let mut probe = Vec::new();
                unit.encode(&mut probe);
                if probe.len() <= crate::storage::log::MAX_PAYLOAD {
                    s.log.append(&unit);
                } else if let LogOp::Unit(parts) = unit {
                    // Past a frame's limit (a gigabyte of writes in one
                    // transaction): each record on its own, rather than a
                    // frame recovery would refuse.
                    tracing::warn!(
                        records = parts.len(),
                        "a transaction's writes exceed one log frame: logged one by one"
                    );
                    for p in &parts {
                        s.log.append(p);
                    }
                }
            }
        }
    }

    /// Refuses a new write while the log cannot make it durable, before
    /// anything is applied: once applied, a write's record is always
    /// appended (see [`crate::storage::log::Log::append`]). Every write
    /// path calls it first.
    pub(crate) fn writable(&self) -> Result<(), ApiError> {
        match &self.storage {
            Some(s) => Ok(s.log.writable()?),
            None => Ok(()),
        }
    }

    /// Appends the record of an operation just applied (0 without
    /// storage), with no board locked: the live events of an operation on
    /// boards as a whole are made here.
    pub(crate) fn append(&self, op: &LogOp) -> u64 {
        let lsn = self.append_record(op);
        // Webhook events it made are logged after it: wait for those too.
        self.structural_events(op, lsn).unwrap_or(0).max(lsn)
    }

    /// [`Service::append`] without the events (a board write makes its
    /// own, under the board's lock).
    fn append_record(&self, op: &LogOp) -> u64 {
        let Some(s) = &self.storage else { return 0 };
        // Inside a transaction the record joins its unit, which is logged
        // with the next LSN when the transaction ends.
        let collected = UNIT.with_borrow_mut(|u| match u {
            Some(parts) => {
                parts.push(op.clone());
                true
            }
            None => false,
        });
        if collected {
            s.log.next_lsn()
        } else {
            s.log.append(op)
        }
    }

    pub(crate) async fn durable(&self, lsn: u64) -> Result<(), ApiError> {
        match &self.storage {
            Some(s) if lsn > 0 => Ok(s.log.wait(lsn).await?),
            _ => Ok(()),
        }
    }

    /// Runs `f` on `board` (created with the defaults if absent), appending
    /// the record `f` returns while the board is still locked. Returns the
    /// result and the LSN to wait for.
    pub(crate) fn write_board<R>(
        &self,
        board: &str,
        f: impl FnOnce(&mut Board) -> Result<(R, Option<LogOp>), ApiError>,
    ) -> Result<(R, u64), ApiError> {
        self.write_board_rec(board, f).map(|(r, lsn, _)| (r, lsn))
    }

    /// [`Service::write_board`], handing back the record once appended.
    pub(crate) fn write_board_rec<R>(
        &self,
        board: &str,
        f: impl FnOnce(&mut Board) -> Result<(R, Option<LogOp>), ApiError>,
    ) -> Result<(R, u64, Option<LogOp>), ApiError> {
        self.writable()?;
        self.purge_if_expired(board.as_bytes());
        let _gate = self.shared();
        let b = match self.store.get(board) {
            Some(b) => b,
            None => {
                match self.store.create(board, BoardConfig::default()) {
                    Ok(_) => {
                        self.append(&LogOp::Create {
                            board: board.to_string(),
                            config: BoardConfig::default(),
                            if_absent: true,
                        });
                    }
                    Err(podium_engine::Error::BoardExists(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                self.store
                    .get(board)
                    .ok_or_else(|| ApiError::no_board(board))?
            }
        };
        // Writers of one board queue here. The lock is held for
        // microseconds, and putting a thread to sleep on it and waking it
        // cost more than that (measured: with 10,000 subscribers watching
        // members, sleeping and waking was a sixth of the server's CPU), so
        // a writer spins a while first, then sleeps on the lock.
        let mut g = crate::wait::spin(|| b.try_write()).unwrap_or_else(|| b.write());
        let (r, rec) = f(&mut g).map_err(|e| match e.code {
            Code::ReadOnly => ApiError::new(
                Code::ReadOnly,
                format!("board {board:?} is a read-only archive"),
            ),
            _ => e,
        })?;
        let mut lsn = match &rec {
            Some(rec) => self.append_record(rec),
            None => 0,
        };
        if self.feeds.any() {
            // Its webhook events are logged after it: wait for those too.
            lsn = self.board_events(board, &mut g, lsn).unwrap_or(0).max(lsn);
        }
        // Every submission of every frontend comes here: the one place
        // clients blocked on the board hear of new members.
        let added = matches!(rec, Some(LogOp::Submit { .. })) && !g.is_empty();
        drop(g);
        if added {
            self.waiters.signal(board.as_bytes());
        }
        Ok((r, lsn, rec))
    }

    pub(crate) fn read<R>(&self, board: &str, f: impl FnOnce(&Board) -> R) -> Result<R, ApiError> {
        self.purge_if_expired(board.as_bytes());
        let _gate = self.reading(board.as_bytes());
        self.store
            .read(board, f)
            .map_err(|_| ApiError::no_board(board))
    }

    /// The LSN of the newest record (0 without storage).
    pub(crate) fn last_lsn(&self) -> u64 {
        self.storage
            .as_ref()
            .map_or(0, |s| s.log.next_lsn().saturating_sub(1))
    }

    /// Whether writes can be made durable now: `/healthz` of the embedded
    /// engine. The error says why not (the log's failure, which the log
    /// retries by itself).
    pub fn health(&self) -> Result<(), ApiError> {
        self.writable()
    }

    /// Flushes and syncs the log (graceful shutdown).
    pub fn close(&self) -> Result<(), ApiError> {
        if let Some(s) = &self.storage {
            s.log.close()?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    pub(crate) use super::Service;
    pub(crate) use crate::FsyncPolicy;
    pub(crate) use podium_core::api::*;
    pub(crate) use podium_core::error::Code;
    pub(crate) use podium_engine::Store;

    pub(crate) fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("podium-svc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    pub(crate) fn open(dir: &std::path::Path) -> Service {
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(dir, FsyncPolicy::Always, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX)
    }

    pub(crate) fn e(m: &str, s: f64) -> SubmitIn {
        SubmitIn::new(m, s)
    }

    /// A sorted-set entry as ZADD hands it to the store: member `m` set to
    /// score `s`, unconditionally.
    pub(crate) fn rec(m: &str, s: f64) -> podium_core::entry::SubmitRec {
        podium_core::entry::SubmitRec {
            scores: None,
            member: m.as_bytes().into(),
            score: s,
            op: Some(podium_engine::UpdateOp::Set),
            presence: podium_engine::Presence::Any,
            cond: podium_engine::Cond::Always,
            name: None,
            data: None,
        }
    }

    pub(crate) fn names(svc: &Service) -> Vec<String> {
        svc.boards().boards.into_iter().map(|b| b.board).collect()
    }

    /// Waits (at most 30 s) until the log has recovered.
    pub(crate) fn until_healthy(svc: &Service) {
        let t = std::time::Instant::now();
        while svc.health().is_err() {
            assert!(t.elapsed().as_secs() < 30, "the log never recovered");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::*;

    #[tokio::test]
    async fn writes_survive_restart_with_and_without_snapshot() {
        let dir = tmp("restart");
        {
            let svc = open(&dir);
            svc.submit("b", &[e("a", 1.0), e("b", 2.0), e("c", 3.0)])
                .await
                .unwrap();
            svc.remove("b", &["a".to_string()]).await.unwrap();
            svc.board_put("asc", &serde_json::json!({"order": "asc"}))
                .await
                .unwrap();
            svc.submit("asc", &[e("x", 5.0), e("y", 1.0)])
                .await
                .unwrap();
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            svc.submit("b", &[e("d", 10.0)]).await.unwrap();
            let mut s = e("b", 5.0);
            s.op = Some("incr".into());
            svc.submit_one("b", &s).await.unwrap();
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(svc.recovery.replayed, 2);
        assert_eq!(svc.rank("b", "d").unwrap().rank, 1);
        assert_eq!(svc.rank("b", "b").unwrap().score, Score(7.0));
        assert!(svc.rank("b", "a").is_err());
        assert_eq!(svc.rank("asc", "y").unwrap().rank, 1);
    }

    #[tokio::test]
    async fn while_the_log_cannot_write_memory_and_log_stay_equal() {
        let dir = tmp("log-cannot-write");
        let (members, hashes) = {
            let svc = open(&dir);
            svc.submit("b", &[e("a", 1.0)]).await.unwrap();
            svc.storage().unwrap().log.faults().write = true;
            // Applied and logged, but not durable: an error, not an ack.
            let err = svc.submit("b", &[e("b", 2.0)]).await.unwrap_err();
            assert_eq!(err.code, Code::StorageUnavailable);
            assert!(err.message.contains("No space left"), "{}", err.message);
            assert_eq!(svc.health().unwrap_err().code, Code::StorageUnavailable);
            // New writes are refused before anything is applied, on every
            // path: board writes, structural ones, the Redis keyspace's.
            let err = svc.submit("b", &[e("c", 3.0)]).await.unwrap_err();
            assert_eq!(err.code, Code::StorageUnavailable);
            assert!(svc.rank("b", "c").is_err(), "a refused write was applied");
            let cfg = serde_json::json!({});
            assert!(svc.board_create("x", &cfg).await.is_err());
            assert!(svc.board_put("y", &cfg).await.is_err());
            assert!(svc.reset("b").await.is_err());
            assert!(svc.board_delete("b").await.is_err());
            assert!(svc
                .hset(b"h", &[(b"f".as_slice(), b"v".as_slice())])
                .is_err());
            assert!(svc.del(&[b"b".as_slice()]).is_err());
            assert!(svc.flushall().is_err());
            assert_eq!(svc.boards().boards.len(), 1);
            svc.storage().unwrap().log.faults().write = false;
            until_healthy(&svc);
            svc.submit("b", &[e("d", 4.0)]).await.unwrap();
            svc.hset(b"h", &[(b"f".as_slice(), b"v".as_slice())])
                .unwrap();
            let members: Vec<String> = svc
                .top(&podium_core::ops::Top {
                    board: "b".to_string(),
                    page: Some(1),
                    page_size: Some(100),
                    with_data: false,
                })
                .unwrap()
                .entries
                .into_iter()
                .map(|e| e.member)
                .collect();
            svc.close().unwrap();
            (members, svc.hgetall(b"h").unwrap())
        };
        // The unacknowledged `b` was applied, so it was logged, and the
        // log replays onto exactly the state memory had.
        assert_eq!(members, ["d", "b", "a"]);
        let svc = open(&dir);
        let after: Vec<String> = svc
            .top(&podium_core::ops::Top {
                board: "b".to_string(),
                page: Some(1),
                page_size: Some(100),
                with_data: false,
            })
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.member)
            .collect();
        assert_eq!(after, members);
        assert_eq!(svc.hgetall(b"h").unwrap(), hashes);
        assert_eq!(svc.boards().boards.len(), 1);
    }
}
