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
//! and a snapshot taken then is exactly the log up to its cut.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use podium_engine::{Board, BoardConfig, BoardImage, Cond, Presence, Reset, Store, UpdateOp};

use crate::storage::record::{LogOp, MemberBytes, SubmitRec};
use crate::storage::snapshot::{SnapAux, SnapBoard};
use crate::storage::{Aux, RecoveryReport, Storage};
use podium_core::api::*;
use podium_core::backend::{
    check_rank_range, combine_args, RangeBounds, TopHead, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
    MAX_RANGE,
};
use podium_core::error::{ApiError, Code};
use podium_core::schedule::{self, Clock, SystemClock};

thread_local! {
    /// Set while this thread runs a transaction under the exclusive gate
    /// (`Service::atomically`): gate acquisitions inside it are no-ops.
    static IN_TX: Cell<bool> = const { Cell::new(false) };
}

pub struct Service {
    pub(crate) store: Store,
    storage: Option<Storage>,
    gate: RwLock<()>,
    /// Reset period each scheduled board is in (`NAME` → label).
    pub(crate) periods: Mutex<HashMap<String, String>>,
    /// Redis hash keys (the Redis frontend's member data).
    pub(crate) hashes: DashMap<Vec<u8>, HashMap<Vec<u8>, Vec<u8>>>,
    /// Key expiry times in ms since the epoch, any key type.
    pub(crate) expires: Mutex<HashMap<Vec<u8>, i64>>,
    /// `expires.len()`, readable without the lock: most deployments set no
    /// expiry, and then no request touches the mutex.
    pub(crate) expiring: AtomicUsize,
    clock: Arc<dyn Clock>,
    snapshot_every: u64,
    /// Size of the last snapshot this process wrote.
    last_snapshot_bytes: AtomicU64,
    snapshotting: AtomicBool,
    pub recovery: RecoveryReport,
}

/// Each entry's result, and the entries as applied.
pub type SubmitOwned = (
    Vec<Result<podium_engine::SubmitResult, ApiError>>,
    Vec<SubmitRec>,
);

fn op_from_str(s: &str) -> Result<UpdateOp, ApiError> {
    s.parse::<UpdateOp>()
        .map_err(|_| ApiError::bad(format!("op must be set, best or incr, got {s:?}")))
}

fn submit_rec(e: &SubmitIn) -> Result<SubmitRec, ApiError> {
    submit_rec_with(
        e,
        MemberBytes::from_slice(e.member.as_bytes()),
        e.name.clone(),
    )
}

/// [`submit_rec`] taking the entry's member and name instead of copying
/// them (a bulk write's entries are not needed after this).
fn submit_rec_owned(mut e: SubmitIn) -> Result<SubmitRec, ApiError> {
    let member = MemberBytes::from_vec(std::mem::take(&mut e.member).into_bytes());
    let name = e.name.take();
    submit_rec_with(&e, member, name)
}

fn submit_rec_with(
    e: &SubmitIn,
    member: MemberBytes,
    name: Option<String>,
) -> Result<SubmitRec, ApiError> {
    let data = match &e.data {
        None => None,
        Some(v @ serde_json::Value::Object(_)) => Some(v.to_string()),
        Some(serde_json::Value::Null) => None,
        Some(_) => {
            return Err(ApiError::new(
                Code::InvalidData,
                "data must be a JSON object",
            ))
        }
    };
    Ok(SubmitRec {
        member,
        score: e.score.0,
        op: e.op.as_deref().map(op_from_str).transpose()?,
        presence: match e.only {
            None => Presence::Any,
            Some(Only::New) => Presence::OnlyNew,
            Some(Only::Existing) => Presence::OnlyExisting,
        },
        cond: match e.cond {
            None => Cond::Always,
            Some(CondIn::Gt) => Cond::Greater,
            Some(CondIn::Lt) => Cond::Less,
        },
        name,
        data,
    })
}

fn submit_out(member: &str, r: &podium_engine::SubmitResult) -> SubmitOut {
    SubmitOut {
        member: member.to_string(),
        score: r.score.map(Score),
        rank: r.rank,
        previous: r.previous.map(Score),
        changed: r.changed,
        created: r.created,
        applied: r.applied,
        evicted: r.evicted,
    }
}

fn page_size(ps: Option<u64>) -> Result<u64, ApiError> {
    match ps.unwrap_or(DEFAULT_PAGE_SIZE) {
        0 => Err(ApiError::bad("page_size must be at least 1")),
        n if n > MAX_PAGE_SIZE => Err(ApiError::bad(format!(
            "page_size must be at most {MAX_PAGE_SIZE}"
        ))),
        n => Ok(n),
    }
}

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
        Service {
            store,
            storage,
            gate: RwLock::new(()),
            periods: Mutex::new(periods),
            hashes: aux.hashes.into_iter().collect(),
            expiring: AtomicUsize::new(aux.expires.len()),
            expires: Mutex::new(aux.expires),
            clock: Arc::new(SystemClock),
            snapshot_every,
            last_snapshot_bytes: AtomicU64::new(0),
            snapshotting: AtomicBool::new(false),
            recovery,
        }
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

    /// The gate, shared: taken by every ordinary read and write.
    pub(crate) fn shared(&self) -> Option<RwLockReadGuard<'_, ()>> {
        (!IN_TX.get()).then(|| self.gate.read())
    }

    /// The gate, exclusive: structural operations.
    pub(crate) fn exclusive(&self) -> Option<RwLockWriteGuard<'_, ()>> {
        (!IN_TX.get()).then(|| self.gate.write())
    }

    /// Runs `f` with every other operation of every client excluded (Redis
    /// MULTI/EXEC). Service calls inside `f` run without taking the gate
    /// again. `f` must not await: the exclusion is per thread.
    pub fn atomically<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                IN_TX.set(false);
            }
        }
        let _g = self.exclusive();
        let was = IN_TX.replace(true);
        // Not `then_some(Reset)`: that builds a `Reset` either way, and
        // dropping the unused one would end an enclosing transaction.
        let _reset = if was { None } else { Some(Reset) };
        f()
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

    /// Appends the record of an operation just applied (0 without storage).
    pub(crate) fn append(&self, op: &LogOp) -> u64 {
        match &self.storage {
            Some(s) => s.log.append(op),
            None => 0,
        }
    }

    /// Waits until record `lsn` is durable (per the fsync policy).
    pub async fn wait_durable(&self, lsn: u64) -> Result<(), ApiError> {
        self.durable(lsn).await
    }

    async fn durable(&self, lsn: u64) -> Result<(), ApiError> {
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
        let mut g = b.write();
        let (r, rec) = f(&mut g).map_err(|e| match e.code {
            Code::ReadOnly => ApiError::new(
                Code::ReadOnly,
                format!("board {board:?} is a read-only archive"),
            ),
            _ => e,
        })?;
        let lsn = match &rec {
            Some(rec) => self.append(rec),
            None => 0,
        };
        Ok((r, lsn, rec))
    }

    fn read<R>(&self, board: &str, f: impl FnOnce(&Board) -> R) -> Result<R, ApiError> {
        self.purge_if_expired(board.as_bytes());
        let _gate = self.shared();
        self.store
            .read(board, f)
            .map_err(|_| ApiError::no_board(board))
    }

    // -------------------------------------------------------------- writes

    /// `submit` / `submit_many`: entries applied in order, one durable
    /// commit. An entry that fails a check needing no board state (NaN, an
    /// over-long member, name or data, a `set` outside the bounds) refuses
    /// the whole batch before anything is applied; one that fails against
    /// the board's state (an `incr` leaving the bounds) fails alone, in its
    /// item, and the rest apply.
    pub async fn submit(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<SubmitItem>, ApiError> {
        let results = self.submit_results(board, entries).await?;
        Ok(results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| match r {
                Ok(out) => SubmitItem::Ok(out),
                Err(err) => SubmitItem::Err {
                    member: e.member.clone(),
                    error: ErrorBody::from(&err),
                },
            })
            .collect())
    }

    /// `submit` of one entry: an entry error is the call's error.
    pub async fn submit_one(&self, board: &str, entry: &SubmitIn) -> Result<SubmitOut, ApiError> {
        let mut v = self
            .submit_results(board, std::slice::from_ref(entry))
            .await?;
        v.pop()
            .unwrap_or_else(|| Err(ApiError::new(Code::Internal, "no result")))
    }

    /// The engine's submission path (shared with Redis's ZADD), each
    /// entry's own result, once durable.
    async fn submit_results(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
        let results = self.submit_raw(board, entries).await?;
        Ok(results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| r.map(|r| submit_out(&e.member, &r)))
            .collect())
    }

    /// [`Service::submit`] with the engine's results, for a caller that
    /// encodes them itself (RPC's `submit_many`): one result per entry,
    /// once durable.
    pub async fn submit_raw(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<podium_engine::SubmitResult, ApiError>>, ApiError> {
        let recs = entries
            .iter()
            .map(submit_rec)
            .collect::<Result<Vec<_>, _>>()?;
        let (results, lsn) = self.zadd(board.as_bytes(), recs)?;
        self.durable(lsn).await?;
        Ok(results)
    }

    /// [`Service::submit_raw`] of entries already made into records, which
    /// come back as the records that were applied and logged (in the same
    /// order): RPC's bulk write encodes its answer from them, so no member
    /// id is copied on the way.
    pub async fn submit_recs_owned(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<SubmitOwned, ApiError> {
        let (results, lsn, recs) = self.zadd_keep(board.as_bytes(), recs)?;
        self.durable(lsn).await?;
        Ok((results, recs))
    }

    /// The records a bulk write applies, taking each entry's member and
    /// name (see [`Service::import_recs`]).
    pub fn submit_recs(entries: Vec<SubmitIn>) -> Result<Vec<SubmitRec>, ApiError> {
        entries.into_iter().map(submit_rec_owned).collect()
    }

    /// A batch of records applied as [`Service::submit_recs_owned`] applies
    /// them, for RPC's `import`: when the engine refuses the batch as a
    /// whole the records come back with the error, so the caller can retry
    /// parts of them without having copied every entry beforehand.
    pub async fn import_recs(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<SubmitOwned, (ApiError, Vec<SubmitRec>)> {
        let (results, lsn, recs) = self.zadd_keep_or_back(board.as_bytes(), recs)?;
        self.durable(lsn).await.map_err(|e| (e, Vec::new()))?;
        Ok((results, recs))
    }

    /// Answers a removal on an existing board once it is durable.
    async fn removed(
        &self,
        board: &str,
        r: impl FnOnce() -> Result<(u64, u64), ApiError>,
    ) -> Result<RemovedOut, ApiError> {
        if self.store.get(board).is_none() {
            return Err(ApiError::no_board(board));
        }
        let (removed, lsn) = r()?;
        self.durable(lsn).await?;
        Ok(RemovedOut {
            board: board.to_string(),
            removed,
        })
    }

    pub async fn remove(&self, board: &str, members: &[String]) -> Result<RemovedOut, ApiError> {
        let members: Vec<&[u8]> = members.iter().map(|m| m.as_bytes()).collect();
        self.removed(board, || self.zrem(board.as_bytes(), &members))
            .await
    }

    /// `remove_range` by 1-based rank, `start..=stop`.
    pub async fn remove_rank_range(
        &self,
        board: &str,
        start: u64,
        stop: u64,
    ) -> Result<RemovedOut, ApiError> {
        if start == 0 || stop < start {
            return Err(ApiError::bad("ranks start at 1 and stop must be ≥ start"));
        }
        self.removed(board, || {
            self.zrem_positions(board.as_bytes(), start - 1, stop)
        })
        .await
    }

    pub async fn remove_score_range(
        &self,
        board: &str,
        bounds: RangeBounds,
    ) -> Result<RemovedOut, ApiError> {
        self.removed(board, || {
            self.zrem_score_range(board.as_bytes(), bounds.to_range())
        })
        .await
    }

    pub async fn set_data(
        &self,
        board: &str,
        member: &str,
        name: Option<String>,
        data: Option<serde_json::Value>,
    ) -> Result<SetDataOut, ApiError> {
        if self.store.get(board).is_none() {
            return Err(ApiError::no_board(board));
        }
        let data = match data {
            None | Some(serde_json::Value::Null) => None,
            Some(v @ serde_json::Value::Object(_)) => Some(v.to_string()),
            Some(_) => {
                return Err(ApiError::new(
                    Code::InvalidData,
                    "data must be a JSON object",
                ))
            }
        };
        let (found, lsn) = self.write_board(board, |b| {
            let found = b.set_data(member.as_bytes(), name.as_deref(), data.as_deref())?;
            let rec = found.then(|| LogOp::SetData {
                board: board.to_string(),
                member: member.as_bytes().to_vec(),
                name: name.clone(),
                data: data.clone(),
            });
            Ok((found, rec))
        })?;
        self.durable(lsn).await?;
        if !found {
            return Err(ApiError::no_member(board, member));
        }
        Ok(SetDataOut {
            board: board.to_string(),
            member: member.to_string(),
            found,
        })
    }

    /// Starts tracking the reset period of a scheduled board that has none;
    /// for a board without a schedule, drops the period it had (logged, so
    /// a restart does not bring back the period of a schedule dropped).
    fn start_period(&self, board: &str, reset: &Reset) {
        let Some(label) = schedule::period_label(reset, self.clock.now()) else {
            return self.clear_period_locked(board);
        };
        let mut p = self.periods.lock();
        if p.get(board).is_none() {
            self.append(&LogOp::Period {
                board: board.to_string(),
                label: label.clone(),
            });
            p.insert(board.to_string(), label);
        }
    }

    /// Forgets `board`'s period, logging it as a period with an empty label.
    fn clear_period_locked(&self, board: &str) {
        let mut p = self.periods.lock();
        if p.contains_key(board) {
            self.append(&LogOp::Period {
                board: board.to_string(),
                label: String::new(),
            });
            p.remove(board);
        }
    }

    /// `board_create`: fails if it exists.
    pub async fn board_create(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let config = config_from_json(config)?;
        self.writable()?;
        let lsn = {
            let _gate = self.exclusive();
            self.store.create(board, config.clone())?;
            let lsn = self.append(&LogOp::Create {
                board: board.to_string(),
                config: config.clone(),
                if_absent: false,
            });
            self.start_period(board, &config.reset);
            lsn
        };
        self.durable(self.last_lsn().max(lsn)).await?;
        self.board_info(board)
    }

    /// `board_update` (PUT): creates or reconfigures (re-ranking when the
    /// order, ranking or tiebreak changes).
    pub async fn board_put(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let config = config_from_json(config)?;
        self.writable()?;
        let created = {
            let _gate = self.exclusive();
            let before = self.store.read(board, |b| b.config().reset.clone()).ok();
            let created = self.store.put(board, config.clone())?;
            self.append(&LogOp::Put {
                board: board.to_string(),
                config: config.clone(),
            });
            // A new schedule starts with the period of now: the period of
            // the schedule it replaces is not one of its own, and archiving
            // it at the next tick would empty the board at once.
            if before.is_some_and(|r| r != config.reset) {
                self.clear_period_locked(board);
            }
            self.start_period(board, &config.reset);
            created
        };
        self.durable(self.last_lsn()).await?;
        let mut out = self.board_info(board)?;
        out.created = Some(created);
        Ok(out)
    }

    pub async fn board_delete(&self, board: &str) -> Result<(), ApiError> {
        self.writable()?;
        {
            let _gate = self.exclusive();
            if !self.store.delete(board) {
                return Err(ApiError::no_board(board));
            }
            self.append(&LogOp::Delete {
                board: board.to_string(),
            });
            self.periods.lock().remove(board);
            self.forget_expiry(board.as_bytes());
        }
        self.durable(self.last_lsn()).await
    }

    /// `reset`: archives the board now as `NAME@PERIOD` (the current period
    /// of a scheduled board, else the current UTC time) and empties it.
    pub async fn reset(&self, board: &str) -> Result<ResetOut, ApiError> {
        self.writable()?;
        let out = {
            let _gate = self.exclusive();
            let b = self
                .store
                .get(board)
                .ok_or_else(|| ApiError::no_board(board))?;
            let reset = b.read().config().reset.clone();
            let now = self.clock.now();
            let label = match self.periods.lock().get(board) {
                Some(l) => l.clone(),
                None => schedule::period_label(&reset, now)
                    .unwrap_or_else(|| now.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            };
            let out = self.archive_locked(board, &label)?;
            if let Some(next) = schedule::period_label(&reset, now) {
                self.set_period_locked(board, next);
            }
            out
        };
        self.durable(self.last_lsn()).await?;
        Ok(out)
    }

    /// Archives `board` as `board@label` (or `board@label.N` if that name
    /// is taken). Call with the gate held exclusively.
    fn archive_locked(&self, board: &str, label: &str) -> Result<ResetOut, ApiError> {
        let archive = self.store.next_archive_name(board, label);
        let archived = self.store.archive(board, &archive)?;
        self.append(&LogOp::Archive {
            board: board.to_string(),
            archive: archive.clone(),
        });
        Ok(ResetOut {
            board: board.to_string(),
            archive,
            archived,
        })
    }

    fn set_period_locked(&self, board: &str, label: String) {
        self.append(&LogOp::Period {
            board: board.to_string(),
            label: label.clone(),
        });
        self.periods.lock().insert(board.to_string(), label);
    }

    /// Runs every reset that fell due by the clock's now: called every
    /// second by the server, and by tests after moving a manual clock.
    /// Returns the archives made.
    pub async fn run_due_resets(&self) -> Result<Vec<ResetOut>, ApiError> {
        // While the log cannot write, a due reset waits: it runs at the
        // first check after the log recovers (the period is compared, not
        // counted), and failing here every second would only repeat the
        // log's one error line.
        if self.writable().is_err() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let mut made = Vec::new();
        for (name, _) in self.store.list() {
            let Some(b) = self.store.get(&name) else {
                continue;
            };
            let (reset, ro) = {
                let g = b.read();
                (g.config().reset.clone(), g.is_read_only())
            };
            if ro || reset == Reset::Never {
                continue;
            }
            let Some(label) = schedule::period_label(&reset, now) else {
                continue;
            };
            let current = self.periods.lock().get(&name).cloned();
            match current {
                Some(c) if c == label => {}
                None => {
                    let _gate = self.exclusive();
                    self.start_period(&name, &reset);
                }
                Some(c) => {
                    let _gate = self.exclusive();
                    // Re-check under the gate: a manual reset may have won.
                    if self.periods.lock().get(&name) != Some(&c) || self.store.get(&name).is_none()
                    {
                        continue;
                    }
                    made.push(self.archive_locked(&name, &c)?);
                    self.set_period_locked(&name, label);
                }
            }
        }
        if !made.is_empty() {
            self.durable(self.last_lsn()).await?;
        }
        Ok(made)
    }

    /// `merge` (`intersect == false`) or `intersect` into `dest`.
    pub async fn combine(
        &self,
        dest: &str,
        req: &CombineIn,
        intersect: bool,
    ) -> Result<CombineOut, ApiError> {
        let (sources, aggregate) = combine_args(req)?;
        self.writable()?;
        let members = {
            let _gate = self.exclusive();
            let srcs: Vec<(&str, f64)> = sources.iter().map(|(n, w)| (n.as_str(), *w)).collect();
            let created = self.store.get(dest).is_none();
            let n = self.store.combine(dest, &srcs, aggregate, intersect)?;
            if created {
                self.append(&LogOp::Create {
                    board: dest.to_string(),
                    config: BoardConfig::default(),
                    if_absent: true,
                });
            }
            self.append(&LogOp::Combine {
                dest: dest.to_string(),
                sources: sources.clone(),
                aggregate,
                intersect,
            });
            n
        };
        self.durable(self.last_lsn()).await?;
        Ok(CombineOut {
            board: dest.to_string(),
            members,
        })
    }

    /// The LSN of the newest record (0 without storage).
    fn last_lsn(&self) -> u64 {
        self.storage
            .as_ref()
            .map_or(0, |s| s.log.next_lsn().saturating_sub(1))
    }

    // --------------------------------------------------------------- reads

    pub fn board_info(&self, board: &str) -> Result<BoardOut, ApiError> {
        let info = self.read(board, |b| b.info())?;
        Ok(BoardOut {
            board: board.to_string(),
            members: info.members,
            read_only: info.read_only,
            heap_bytes: info.heap_bytes,
            archive_of: info.config.archive.as_ref().map(|a| a.board.clone()),
            config: info.config.to_json(),
            period: self.periods.lock().get(board).cloned(),
            created: None,
        })
    }

    pub fn boards(&self) -> BoardsOut {
        BoardsOut {
            boards: self
                .store
                .list_with_archives()
                .into_iter()
                .map(|(board, members, archive_of)| BoardSize {
                    board,
                    members,
                    archive_of,
                })
                .collect(),
        }
    }

    /// Heap bytes of each board's search index (0 for a board not yet
    /// searched: its index is built by its first search), by board name.
    pub fn search_index_bytes(&self) -> Vec<(String, u64)> {
        self.store
            .list()
            .into_iter()
            .filter_map(|(board, _)| {
                // A board deleted since the listing is skipped.
                let bytes = self.store.read(&board, |b| b.search_heap_bytes()).ok()?;
                Some((board, bytes as u64))
            })
            .collect()
    }

    pub fn entry(
        &self,
        board: &str,
        member: &str,
        page_size_: Option<u64>,
    ) -> Result<EntryInfoOut, ApiError> {
        let ps = page_size(page_size_)?;
        let (info, total) = self.read(board, |b| (b.entry(member.as_bytes(), ps), b.len()))?;
        let info = info.ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(EntryInfoOut {
            board: board.to_string(),
            ranking: ranking_str(info.ranking).to_string(),
            entry: entry_out(&info.entry, true),
            percentile: info.percentile,
            page: info.page,
            total: total as u64,
        })
    }

    pub fn rank(&self, board: &str, member: &str) -> Result<RankOut, ApiError> {
        let (r, s, ranking) = self.read(board, |b| {
            (
                b.rank(member.as_bytes()),
                b.score(member.as_bytes()),
                b.ranking(),
            )
        })?;
        match (r, s) {
            (Some(rank), Some(score)) => Ok(RankOut {
                board: board.to_string(),
                ranking: ranking_str(ranking).to_string(),
                member: member.to_string(),
                rank,
                score: Score(score),
            }),
            _ => Err(ApiError::no_member(board, member)),
        }
    }

    pub fn count(&self, board: &str, bounds: RangeBounds) -> Result<CountOut, ApiError> {
        let range = bounds.to_range();
        let count = self.read(board, |b| b.count_range(&range))??;
        Ok(CountOut {
            board: board.to_string(),
            count,
        })
    }

    pub fn top(
        &self,
        board: &str,
        page: Option<u64>,
        page_size_: Option<u64>,
        with_data: bool,
    ) -> Result<TopOut, ApiError> {
        let ps = page_size(page_size_)?;
        let page = page.unwrap_or(1);
        if page == 0 {
            return Err(ApiError::bad("page starts at 1"));
        }
        let p = self.read(board, |b| b.top(page, ps))??;
        Ok(TopOut {
            board: board.to_string(),
            ranking: ranking_str(p.ranking).to_string(),
            page: p.page,
            page_size: p.page_size,
            total: p.total,
            total_pages: p.total_pages,
            entries: entries_out(&p.entries, with_data),
        })
    }

    /// [`Service::top`] without building the page: `f` sees each entry in
    /// place under the board's read lock (the RPC writes them straight into
    /// its response), and the page's figures come back.
    pub fn top_visit(
        &self,
        board: &str,
        page: Option<u64>,
        page_size_: Option<u64>,
        f: impl FnMut(podium_engine::EntryRef<'_>),
    ) -> Result<TopHead, ApiError> {
        let ps = page_size(page_size_)?;
        let page = page.unwrap_or(1);
        if page == 0 {
            return Err(ApiError::bad("page starts at 1"));
        }
        self.read(board, |b| {
            let total = b.len() as u64;
            let from = (page - 1).saturating_mul(ps);
            if from < total {
                b.visit(from as usize, ps as usize, false, f);
            }
            TopHead {
                ranking: ranking_str(b.ranking()),
                page,
                page_size: ps,
                total,
                total_pages: total.div_ceil(ps),
            }
        })
    }

    /// 1-based ranks `start..=stop` (positions), best first, or counted from
    /// the worst end with `from_worst`.
    pub fn range_by_rank(
        &self,
        board: &str,
        start: u64,
        stop: u64,
        from_worst: bool,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        check_rank_range(start, stop)?;
        let (v, total, ranking) = self.read(board, |b| {
            (
                b.range_by_rank(start, stop, from_worst),
                b.len(),
                b.ranking(),
            )
        })?;
        Ok(RangeOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            total: total as u64,
            entries: entries_out(&v, with_data),
        })
    }

    pub fn range_by_score(
        &self,
        board: &str,
        bounds: RangeBounds,
        from_worst: bool,
        offset: Option<u64>,
        limit: Option<u64>,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        let limit = limit.unwrap_or(DEFAULT_PAGE_SIZE).min(MAX_RANGE);
        let range = bounds.to_range();
        let (v, total, ranking) = self.read(board, |b| {
            (
                b.range_by_score(&range, from_worst, offset.unwrap_or(0), limit),
                b.len(),
                b.ranking(),
            )
        })?;
        Ok(RangeOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            total: total as u64,
            entries: entries_out(&v?, with_data),
        })
    }

    pub fn around(
        &self,
        board: &str,
        member: &str,
        page_size_: Option<u64>,
        with_data: bool,
    ) -> Result<AroundOut, ApiError> {
        let ps = page_size(page_size_)?;
        let a = self
            .read(board, |b| b.around(member.as_bytes(), ps))?
            .ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(AroundOut {
            board: board.to_string(),
            ranking: ranking_str(a.ranking).to_string(),
            member: member.to_string(),
            rank: a.rank,
            total: a.total,
            entries: entries_out(&a.entries, with_data),
        })
    }

    pub fn ranks(
        &self,
        board: &str,
        members: &[String],
        with_data: bool,
    ) -> Result<RanksOut, ApiError> {
        if members.len() as u64 > MAX_RANGE {
            return Err(ApiError::bad(format!(
                "at most {MAX_RANGE} members per call"
            )));
        }
        let r = self.read(board, |b| b.ranks(members))?;
        Ok(RanksOut {
            board: board.to_string(),
            ranking: ranking_str(r.ranking).to_string(),
            entries: entries_out(&r.entries, with_data),
            missing: r.missing.iter().map(|m| member_str(m)).collect(),
        })
    }

    pub fn percentile(&self, board: &str, member: &str) -> Result<PercentileOut, ApiError> {
        let p = self
            .read(board, |b| b.percentile(member.as_bytes()))?
            .ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(PercentileOut {
            board: board.to_string(),
            member: member.to_string(),
            percentile: p,
        })
    }

    pub fn score_at_percentile(&self, board: &str, p: f64) -> Result<ScoreAtOut, ApiError> {
        let e = self.read(board, |b| b.score_at_percentile(p))??;
        Ok(ScoreAtOut {
            board: board.to_string(),
            percentile: p,
            entry: e.as_ref().map(|e| entry_out(e, false)),
        })
    }

    /// One chunk of `export`: up to `limit` entries from position `pos`
    /// (0-based), best first. Export walks the board chunk by chunk so a
    /// huge board never sits in memory twice; a write between chunks can
    /// shift entries across a chunk boundary (like Redis's ZSCAN).
    /// `search` (docs/spec.md §3): a page of the members matching `query`, best
    /// first. A board's index is built by its first search (under the
    /// board's write lock, once) and kept current by every write after.
    pub fn search(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        with_data: bool,
    ) -> Result<SearchOut, ApiError> {
        let page = self.search_page(board, query, limit, offset)?;
        Ok(SearchOut {
            board: board.to_string(),
            ranking: ranking_str(page.ranking).to_string(),
            query: query.to_string(),
            total: page.total,
            offset: page.offset,
            limit: page.limit,
            entries: entries_out(&page.entries, with_data),
        })
    }

    /// [`Service::search`]'s page as the engine returns it, for a frontend
    /// that encodes the entries itself (HTTP writes them straight into the
    /// response body instead of through owned [`SearchOut`] copies).
    pub fn search_page(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
    ) -> Result<podium_engine::search::SearchPage, ApiError> {
        use podium_engine::search::SearchError;
        let opts = search_options(limit, offset)?;
        let mut page = self.read(board, |b| b.search(query, &opts))?;
        if matches!(page, Err(SearchError::NotIndexed)) {
            let arc = self
                .store
                .get(board)
                .ok_or_else(|| ApiError::no_board(board))?;
            {
                let _gate = self.shared();
                // Straight on the lock: an archive (read-only) is searchable.
                let mut b = arc.write();
                if !b.search_enabled() {
                    b.enable_search().map_err(podium_engine::Error::from)?;
                }
            }
            page = self.read(board, |b| b.search(query, &opts))?;
        }
        Ok(page.map_err(podium_engine::Error::from)?)
    }

    /// [`Service::search_page`] with the page handed to `f` in place (the
    /// answer's head, then the entries, best first) under one hold of the
    /// board's read lock, for a frontend encoding it straight into its
    /// response. `Ok(None)`: the board has no index yet and nothing ran;
    /// [`Service::search_page`] builds it, which is slow on a large board
    /// (a caller on async workers hands that to the blocking pool).
    pub fn search_with<R>(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        f: impl FnOnce(
            &podium_engine::SearchHead,
            &mut dyn Iterator<Item = podium_engine::EntryRef<'_>>,
        ) -> R,
    ) -> Result<Option<R>, ApiError> {
        use podium_engine::search::SearchError;
        let opts = search_options(limit, offset)?;
        match self.read(board, |b| b.search_with(query, &opts, f))? {
            Ok(r) => Ok(Some(r)),
            Err(SearchError::NotIndexed) => Ok(None),
            Err(e) => Err(podium_engine::Error::from(e).into()),
        }
    }

    /// Whether [`Service::search`] on `board` answers without building an
    /// index first (the board is indexed, or missing: an error at once), so
    /// a frontend can run it on its async workers like any other read.
    pub fn search_is_cheap(&self, board: &str) -> bool {
        self.store
            .read(board, |b| b.search_enabled())
            .unwrap_or(true)
    }

    /// `limit` entries in place, starting `skip` entries from the best (or,
    /// `from_worst`, from the worst, going up), under one short hold of the
    /// board's read lock: for encoders that write entries straight into
    /// their output. Returns how many `f` saw.
    pub fn visit_entries(
        &self,
        board: &str,
        skip: usize,
        limit: usize,
        from_worst: bool,
        f: impl FnMut(podium_engine::EntryRef<'_>),
    ) -> Result<usize, ApiError> {
        self.read(board, |b| {
            if !from_worst {
                b.visit(skip, limit, false, f)
            } else if skip < b.len() {
                b.visit(b.len() - 1 - skip, limit, true, f)
            } else {
                0
            }
        })
    }

    pub fn export_chunk(
        &self,
        board: &str,
        pos: usize,
        limit: usize,
    ) -> Result<Vec<ExportLine>, ApiError> {
        let v = self.read(board, |b| b.entries_from(pos, limit))?;
        Ok(v.iter()
            .map(|e| {
                let o = entry_out(e, true);
                ExportLine {
                    member: o.member,
                    score: o.score,
                    rank: o.rank,
                    name: o.name,
                    data: o.data,
                }
            })
            .collect())
    }

    // ----------------------------------------------------------- snapshots

    /// Takes a snapshot if the log has grown past the threshold since the
    /// last one (or always, with `force`). Blocking: run it off the async
    /// workers. Returns the snapshot's size, if one was written.
    /// Whether a snapshot is being taken (its copy of the boards held).
    pub fn snapshot_in_progress(&self) -> bool {
        self.snapshotting.load(Ordering::Acquire)
    }

    /// Whether a snapshot is being written or is due at the next check
    /// (the server checks every second): Redis's `aof_rewrite_in_progress`
    /// and `aof_rewrite_scheduled` in one.
    pub fn snapshot_pending(&self) -> bool {
        self.snapshot_in_progress()
            || self
                .storage
                .as_ref()
                .is_some_and(|s| s.log.bytes_since_rotation() >= self.snapshot_due())
    }

    /// Log bytes after which a snapshot is due: `snapshot_every`, or as
    /// many bytes as the last snapshot took if that is more (Redis's AOF
    /// rewrite at 100% growth). Each snapshot writes every board, so a
    /// fixed step would make a bulk load write its data over and over (a
    /// 10M-member load wrote ~7 snapshots of a growing board), while this
    /// keeps the snapshot bytes within a small multiple of the log's, and
    /// the log to replay on recovery no larger than the snapshot.
    fn snapshot_due(&self) -> u64 {
        self.snapshot_every
            .max(self.last_snapshot_bytes.load(Ordering::Relaxed))
    }

    pub fn maybe_snapshot(&self, force: bool) -> Result<Option<u64>, ApiError> {
        let Some(storage) = &self.storage else {
            return Ok(None);
        };
        if !force && storage.log.bytes_since_rotation() < self.snapshot_due() {
            return Ok(None);
        }
        // While the log cannot write, a snapshot would meet the same full
        // disk, missing permission or exhausted descriptors after copying
        // every board. It stays due and is taken at the first check after
        // the log recovers.
        if !force && storage.log.writable().is_err() {
            return Ok(None);
        }
        if self.snapshotting.swap(true, Ordering::AcqRel) {
            return Ok(None);
        }
        let result = (|| {
            let t = std::time::Instant::now();
            let (lsn, boards, aux) = {
                let _gate = self.exclusive();
                let lsn = storage.log.rotate();
                let periods = self.periods.lock().clone();
                let aux = SnapAux {
                    hashes: self
                        .hashes
                        .iter()
                        .map(|e| {
                            let fields = e.value().iter().map(|(f, v)| (f.clone(), v.clone()));
                            (e.key().clone(), fields.collect())
                        })
                        .collect(),
                    expires: self
                        .expires
                        .lock()
                        .iter()
                        .map(|(k, v)| (k.clone(), *v))
                        .collect(),
                };
                let boards: Vec<SnapBoard<BoardImage>> = self
                    .store
                    .list()
                    .into_iter()
                    .filter_map(|(name, _)| {
                        let b = self.store.get(&name)?;
                        let board = b.read().image();
                        Some(SnapBoard {
                            period: periods.get(&name).cloned(),
                            name,
                            board,
                        })
                    })
                    .collect();
                (lsn, boards, aux)
            };
            let paused = t.elapsed();
            let size = storage.snapshot(lsn, &boards, &aux).map_err(|e| {
                ApiError::new(Code::StorageUnavailable, format!("snapshot failed: {e}"))
            })?;
            tracing::info!(
                lsn,
                bytes = size,
                writers_paused_ms = paused.as_millis() as u64,
                total_ms = t.elapsed().as_millis() as u64,
                "snapshot written"
            );
            self.last_snapshot_bytes.store(size, Ordering::Relaxed);
            metrics::gauge!("podium_snapshot_bytes").set(size as f64);
            metrics::histogram!("podium_snapshot_seconds").record(t.elapsed().as_secs_f64());
            Ok(Some(size))
        })();
        self.snapshotting.store(false, Ordering::Release);
        // The copies were nearly as big as the boards. glibc keeps most freed
        // memory mapped unless asked, so without this the resident set
        // would keep a board's size of garbage after every snapshot.
        release_free_memory();
        result
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

/// Hands freed heap memory back to the OS.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: malloc_trim only walks glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

/// A search's page options, the page size checked.
fn search_options(
    limit: u64,
    offset: u64,
) -> Result<podium_engine::search::SearchOptions, ApiError> {
    if limit > MAX_PAGE_SIZE {
        return Err(ApiError::bad(format!("limit is at most {MAX_PAGE_SIZE}")));
    }
    Ok(podium_engine::search::SearchOptions {
        limit,
        offset,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FsyncPolicy;
    use chrono::TimeZone;
    use podium_core::schedule::ManualClock;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("podium-svc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn open(dir: &std::path::Path) -> Service {
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(dir, FsyncPolicy::Always, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX)
    }

    fn e(m: &str, s: f64) -> SubmitIn {
        SubmitIn::new(m, s)
    }

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
    async fn a_snapshot_is_pending_from_its_threshold_until_written() {
        let dir = tmp("pending");
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(&dir, FsyncPolicy::Always, &store).unwrap();
        let svc = Service::new(store, Some(storage), aux, report, 4096);
        assert!(!svc.snapshot_pending());
        let batch: Vec<SubmitIn> = (0..100).map(|i| e(&format!("m{i}"), i as f64)).collect();
        svc.submit("b", &batch).await.unwrap();
        assert!(!svc.snapshot_pending(), "under 4 KiB of log");
        // New scores each time: a batch that changes nothing is not logged.
        for round in 1..=5 {
            let batch: Vec<SubmitIn> = (0..100)
                .map(|i| e(&format!("m{i}"), (i * 10 + round) as f64))
                .collect();
            svc.submit("b", &batch).await.unwrap();
        }
        assert!(svc.snapshot_pending(), "past 4 KiB of log");
        assert!(svc.maybe_snapshot(false).unwrap().is_some());
        assert!(!svc.snapshot_pending(), "written");
        assert!(!Service::in_memory().snapshot_pending());
    }

    #[tokio::test]
    async fn failed_write_on_a_new_board_leaves_the_same_state_after_restart() {
        let dir = tmp("failed");
        {
            let svc = open(&dir);
            let bad = SubmitIn::new("", 1.0);
            assert!(svc.submit_one("fresh", &bad).await.is_err());
            assert_eq!(svc.boards().boards.len(), 1);
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(svc.boards().boards.len(), 1);
    }

    #[tokio::test]
    async fn manual_resets_in_one_second_keep_the_newest_archives() {
        // Same label each time (a frozen clock): names freed by
        // keep_archives must not come back for a newer archive, and `.10`
        // must sort after `.9`.
        let dir = tmp("reset-same-second");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("lb", &serde_json::json!({"keep_archives": 2}))
            .await
            .unwrap();
        let mut made = Vec::new();
        for i in 0..11 {
            svc.submit("lb", &[e(&format!("m{i}"), i as f64)])
                .await
                .unwrap();
            made.push(svc.reset("lb").await.unwrap().archive);
        }
        assert_eq!(made[0], "lb@2026-11-21T12:00:00Z");
        assert_eq!(made[1], "lb@2026-11-21T12:00:00Z.2");
        assert_eq!(made[10], "lb@2026-11-21T12:00:00Z.11");
        let names: Vec<String> = svc.boards().boards.into_iter().map(|b| b.board).collect();
        assert_eq!(
            names,
            vec![
                "lb",
                "lb@2026-11-21T12:00:00Z.10",
                "lb@2026-11-21T12:00:00Z.11"
            ]
        );
        let newest = svc
            .top("lb@2026-11-21T12:00:00Z.11", Some(1), Some(10), false)
            .unwrap();
        assert_eq!(newest.entries[0].member, "m10");
    }

    #[tokio::test]
    async fn scheduled_resets_archive_by_period_and_keep_archives() {
        let dir = tmp("reset");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 23, 59, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create(
            "daily",
            &serde_json::json!({"reset": "daily", "keep_archives": 2}),
        )
        .await
        .unwrap();
        svc.submit("daily", &[e("a", 1.0)]).await.unwrap();
        assert!(svc.run_due_resets().await.unwrap().is_empty());
        for day in 0..3 {
            clock.advance(chrono::Duration::days(1));
            let made = svc.run_due_resets().await.unwrap();
            assert_eq!(made.len(), 1, "day {day}");
            svc.submit("daily", &[e("b", day as f64)]).await.unwrap();
        }
        let names: Vec<String> = svc.boards().boards.into_iter().map(|b| b.board).collect();
        assert_eq!(
            names,
            vec!["daily", "daily@2026-11-21", "daily@2026-11-22"],
            "keep_archives 2 dropped the oldest"
        );
        assert_eq!(svc.board_info("daily@2026-11-22").unwrap().members, 1);
        assert!(svc.board_info("daily@2026-11-22").unwrap().read_only);
        svc.close().unwrap();
        drop(svc);
        // The period survives a restart: a reset that fell due while down
        // runs at the first tick.
        let svc = open(&dir).with_clock(clock.clone());
        assert_eq!(
            svc.board_info("daily").unwrap().period.as_deref(),
            Some("2026-11-23")
        );
        clock.advance(chrono::Duration::days(1));
        let made = svc.run_due_resets().await.unwrap();
        assert_eq!(made[0].archive, "daily@2026-11-23");
        assert_eq!(made[0].archived, 1);
    }

    fn names(svc: &Service) -> Vec<String> {
        svc.boards().boards.into_iter().map(|b| b.board).collect()
    }

    /// Regression: `keep_archives` picked a board's archives by the prefix
    /// `NAME@`, so resetting `v3` deleted the live board `v3@0-live`.
    #[tokio::test]
    async fn a_reset_keeps_a_live_board_named_like_its_archives() {
        let dir = tmp("live-at");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("v3", &serde_json::json!({"keep_archives": 1}))
            .await
            .unwrap();
        svc.submit("v3@0-live", &[e("w", 1.0)]).await.unwrap();
        for _ in 0..2 {
            svc.submit("v3", &[e("a", 1.0)]).await.unwrap();
            assert_eq!(svc.reset("v3").await.unwrap().archived, 1);
            clock.advance(chrono::Duration::seconds(1));
        }
        assert_eq!(names(&svc), ["v3", "v3@0-live", "v3@2026-11-21T12:00:01Z"]);
        assert_eq!(svc.board_info("v3@0-live").unwrap().members, 1);
        svc.submit("v3@0-live", &[e("x", 2.0)]).await.unwrap();
    }

    /// Regression: a writer's `v2@9999` sorted as the newest archive of
    /// `v2`, so `keep_archives` pruned the real ones, the new one included,
    /// while the reset answered `"archived": 1`.
    #[tokio::test]
    async fn a_writers_board_is_not_taken_for_the_newest_archive() {
        let dir = tmp("writer-at");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("v2", &serde_json::json!({"keep_archives": 2}))
            .await
            .unwrap();
        svc.submit("v2@9999", &[e("w", 1.0)]).await.unwrap();
        let mut made = Vec::new();
        for i in 0..3 {
            svc.submit("v2", &[e(&format!("m{i}"), i as f64)])
                .await
                .unwrap();
            let out = svc.reset("v2").await.unwrap();
            assert_eq!(out.archived, 1);
            made.push(out.archive);
            clock.advance(chrono::Duration::seconds(1));
        }
        assert_eq!(
            names(&svc),
            ["v2", made[1].as_str(), made[2].as_str(), "v2@9999"]
        );
        assert_eq!(
            svc.top(&made[2], None, None, false).unwrap().entries[0].member,
            "m2"
        );
        assert_eq!(svc.board_info("v2@9999").unwrap().members, 1);
    }

    /// Archives know whose they are, in info and listings, across restarts
    /// through the log and through a snapshot.
    #[tokio::test]
    async fn archives_show_their_board_and_survive_restarts() {
        let dir = tmp("archive-of");
        {
            let svc = open(&dir);
            svc.submit("v2", &[e("a", 1.0)]).await.unwrap();
            svc.submit("v2@9999", &[e("w", 1.0)]).await.unwrap();
            let made = svc.reset("v2").await.unwrap().archive;
            let info = svc.board_info(&made).unwrap();
            assert_eq!(info.archive_of.as_deref(), Some("v2"));
            assert!(info.read_only);
            assert_eq!(info.config["archive_of"], "v2");
            assert_eq!(info.config["archive_seq"], 1);
            assert_eq!(svc.board_info("v2").unwrap().archive_of, None);
            assert!(svc
                .board_info("v2")
                .unwrap()
                .config
                .get("archive_of")
                .is_none());
            // A client cannot make a board an archive.
            let err = svc
                .board_put(
                    "x",
                    &serde_json::json!({"archive_of": "v2", "archive_seq": 9}),
                )
                .await
                .unwrap_err();
            assert_eq!(err.code, Code::InvalidConfig);
            svc.close().unwrap();
        }
        for snapshot in [false, true] {
            let svc = open(&dir);
            let listed: Vec<(String, Option<String>)> = svc
                .boards()
                .boards
                .into_iter()
                .map(|b| (b.board, b.archive_of))
                .collect();
            assert_eq!(listed.len(), 3);
            assert_eq!(listed[0], ("v2".into(), None));
            assert_eq!(listed[1].1.as_deref(), Some("v2"), "{listed:?}");
            assert_eq!(listed[2], ("v2@9999".into(), None));
            if snapshot {
                break;
            }
            svc.maybe_snapshot(true).unwrap();
            svc.close().unwrap();
        }
    }

    /// Data written before archives recorded whose they are: a read-only
    /// `NAME@LABEL` in a snapshot is recognised as an archive of NAME.
    #[tokio::test]
    async fn archives_of_an_older_snapshot_are_recognised() {
        let dir = tmp("legacy");
        {
            let svc = open(&dir);
            svc.board_create("lb", &serde_json::json!({"keep_archives": 2}))
                .await
                .unwrap();
            for label in ["2026-11-20", "2026-11-21"] {
                let mut old = Board::new(BoardConfig::default()).unwrap();
                old.set_read_only(true);
                svc.store().insert(&format!("lb@{label}"), old).unwrap();
            }
            svc.submit("lb@live", &[e("w", 1.0)]).await.unwrap();
            svc.maybe_snapshot(true).unwrap();
            svc.close().unwrap();
        }
        let svc = open(&dir);
        let info = svc.board_info("lb@2026-11-20").unwrap();
        assert_eq!(info.archive_of.as_deref(), Some("lb"));
        assert_eq!(info.config["archive_seq"], 1);
        assert_eq!(svc.board_info("lb@live").unwrap().archive_of, None);
        let made = svc.reset("lb").await.unwrap().archive;
        assert_eq!(
            names(&svc),
            ["lb", "lb@2026-11-21", made.as_str(), "lb@live"]
        );
    }

    /// Regression: dropping a schedule (`reset: never`) was applied but not
    /// logged, so after a restart the old period came back, and setting a
    /// schedule later archived and emptied the board at the next tick.
    #[tokio::test]
    async fn a_dropped_schedule_stays_dropped_after_restart() {
        let dir = tmp("never");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        {
            let svc = open(&dir).with_clock(clock.clone());
            svc.board_create("s", &serde_json::json!({"reset": "daily"}))
                .await
                .unwrap();
            svc.submit("s", &[e("a", 1.0)]).await.unwrap();
            svc.board_put("s", &serde_json::json!({"reset": "never"}))
                .await
                .unwrap();
            assert_eq!(svc.board_info("s").unwrap().period, None);
            svc.close().unwrap();
        }
        clock.advance(chrono::Duration::days(3));
        let svc = open(&dir).with_clock(clock.clone());
        let info = svc.board_info("s").unwrap();
        assert_eq!(info.config["reset"], "never");
        assert_eq!(info.period, None, "the dropped schedule's period is back");
        svc.board_put("s", &serde_json::json!({"reset": "daily"}))
            .await
            .unwrap();
        assert!(
            svc.run_due_resets().await.unwrap().is_empty(),
            "a new schedule archived at once"
        );
        assert_eq!(svc.board_info("s").unwrap().members, 1);
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-11-23")
        );
        clock.advance(chrono::Duration::days(1));
        assert_eq!(svc.run_due_resets().await.unwrap().len(), 1);
    }

    /// A changed schedule starts a fresh period of its own; an unchanged
    /// one keeps the period it is in.
    #[tokio::test]
    async fn a_changed_schedule_starts_a_fresh_period() {
        let dir = tmp("changed");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("s", &serde_json::json!({"reset": "daily"}))
            .await
            .unwrap();
        svc.submit("s", &[e("a", 1.0)]).await.unwrap();
        clock.advance(chrono::Duration::days(2));
        // Same schedule: the period left while nobody looked is archived.
        svc.board_put(
            "s",
            &serde_json::json!({"reset": "daily", "keep_archives": 3}),
        )
        .await
        .unwrap();
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-11-20")
        );
        svc.board_put("s", &serde_json::json!({"reset": "weekly"}))
            .await
            .unwrap();
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-W47")
        );
        assert!(svc.run_due_resets().await.unwrap().is_empty());
        assert_eq!(svc.board_info("s").unwrap().members, 1);
    }

    /// Every config field survives a restart exactly as last set, whether
    /// set or cleared, through the log and through a snapshot.
    #[tokio::test]
    async fn every_config_change_survives_restart() {
        let dir = tmp("config");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        let full = serde_json::json!({
            "order": "asc", "ranking": "dense", "tiebreak": "first", "update": "best",
            "min_score": "-inf", "max_score": 1e9, "max_members": 100,
            "reset": "0 0 * * 1", "keep_archives": 4,
            "search_fields": ["name", "team"], "max_data_bytes": 1024
        });
        let other = serde_json::json!({
            "order": "desc", "ranking": "competition", "tiebreak": "last", "update": "incr",
            "min_score": -5, "max_score": "inf", "max_members": 7,
            "reset": "weekly", "keep_archives": 0,
            "search_fields": [], "max_data_bytes": 0
        });
        let steps = [
            full.clone(),
            serde_json::json!({}),
            other,
            serde_json::json!({"reset": "never", "search_fields": ["team"]}),
            full,
            serde_json::json!({"reset": "daily"}),
        ];
        for (i, put) in steps.iter().enumerate() {
            let (want, period) = {
                let svc = open(&dir).with_clock(clock.clone());
                svc.submit("c", &[e("a", 1.0), e("b", 2.0)]).await.unwrap();
                let out = svc.board_put("c", put).await.unwrap();
                assert_eq!(
                    out.config,
                    BoardConfig::from_json(put).unwrap().to_json(),
                    "step {i}"
                );
                if i % 2 == 1 {
                    svc.maybe_snapshot(true).unwrap();
                }
                svc.close().unwrap();
                (out.config, out.period)
            };
            let svc = open(&dir).with_clock(clock.clone());
            let info = svc.board_info("c").unwrap();
            assert_eq!(info.config, want, "step {i} after restart");
            assert_eq!(info.period, period, "step {i} after restart");
            svc.close().unwrap();
            clock.advance(chrono::Duration::hours(30));
        }
    }

    /// Waits (at most 30 s) until the log has recovered.
    fn until_healthy(svc: &Service) {
        let t = std::time::Instant::now();
        while svc.health().is_err() {
            assert!(t.elapsed().as_secs() < 30, "the log never recovered");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
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
                .top("b", Some(1), Some(100), false)
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
            .top("b", Some(1), Some(100), false)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.member)
            .collect();
        assert_eq!(after, members);
        assert_eq!(svc.hgetall(b"h").unwrap(), hashes);
        assert_eq!(svc.boards().boards.len(), 1);
    }

    #[tokio::test]
    async fn a_failed_snapshot_removes_its_temporary_file_and_leaves_the_log_writable() {
        let dir = tmp("snapfail");
        let tmps = |dir: &std::path::Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .filter(|e| {
                    let e = e.as_ref().unwrap();
                    e.file_name().to_string_lossy().ends_with(".tmp")
                })
                .count()
        };
        {
            let svc = open(&dir);
            svc.submit("b", &[e("a", 1.0)]).await.unwrap();
            // The snapshot cut is the last record; a directory where its
            // file goes makes the rename fail after the data was written.
            let cut = svc.last_lsn();
            let target = dir.join(crate::storage::snapshot::snapshot_name(cut));
            std::fs::create_dir(&target).unwrap();
            let err = svc.maybe_snapshot(true).unwrap_err();
            assert_eq!(err.code, Code::StorageUnavailable);
            assert_eq!(tmps(&dir), 0, "the failed snapshot left its .tmp");
            assert!(svc.health().is_ok(), "a snapshot failure poisoned the log");
            svc.submit("b", &[e("b", 2.0)]).await.unwrap();
            std::fs::remove_dir(&target).unwrap();
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            svc.submit("b", &[e("c", 3.0)]).await.unwrap();
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(svc.top("b", Some(1), Some(10), false).unwrap().total, 3);
    }
}
