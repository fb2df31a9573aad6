//! The Redis sorted-set commands on boards: bytes in, engine types out,
//! each with the LSN to wait for (see [`super::keys`]). A sorted-set key
//! is a board; a key holding a hash is refused, and a key that cannot name
//! a board holds no sorted set.

use podium_engine::{Aggregate, Board, BoardConfig, Entry, ScoreRange, Submit, SubmitResult};

use super::Service;
use crate::keyspace::{board_name, wrong_type, Lsn};
use crate::storage::record::{LogOp, SubmitRec};
use podium_core::error::ApiError;

/// Which of its entries [`Service::zadd`] hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeepEntries {
    /// None: the caller answers from the results alone (Redis's ZADD).
    #[default]
    No,
    /// The entries as applied and logged, in order, for a caller that
    /// answers from them (no member is copied on the way).
    Applied,
    /// Those, and also the entries of a call refused before they were
    /// applied (a batch the engine refused as a whole), for a caller that
    /// retries parts of them without having kept a copy of every entry.
    Always,
}

/// [`Service::zadd`]'s options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZaddOpts {
    pub keep: KeepEntries,
}

/// What [`Service::zadd`] did.
#[derive(Debug)]
pub struct Zadded {
    /// Each entry's own result, in order.
    pub results: Vec<Result<SubmitResult, ApiError>>,
    pub lsn: Lsn,
    /// The entries, as [`ZaddOpts::keep`] asked (else empty).
    pub entries: Vec<SubmitRec>,
}

/// A [`Service::zadd`] refused as a whole: nothing was applied.
#[derive(Debug)]
pub struct ZaddRefused {
    pub error: ApiError,
    /// The entries with [`KeepEntries::Always`] (else empty).
    pub entries: Vec<SubmitRec>,
}

impl From<ZaddRefused> for ApiError {
    fn from(r: ZaddRefused) -> ApiError {
        r.error
    }
}

impl Service {
    /// Runs a read on the board `key` (`None`: no such key, or empty).
    pub fn zread<R>(&self, key: &[u8], f: impl FnOnce(&Board) -> R) -> Result<Option<R>, ApiError> {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        self.keyspace.check_not_hash(key)?;
        let Ok(name) = std::str::from_utf8(key) else {
            self.note_lookup(false);
            return Ok(None);
        };
        let Some(b) = self.store.get(name) else {
            self.note_lookup(false);
            return Ok(None);
        };
        let g = b.read();
        self.note_lookup(!g.is_empty());
        Ok((!g.is_empty()).then(|| f(&g)))
    }

    /// A write on an existing board; `None` when the key does not exist.
    fn zwrite_existing<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut Board) -> Result<(R, Option<LogOp>), ApiError>,
    ) -> Result<Option<(R, Lsn)>, ApiError> {
        self.purge_if_expired(key);
        self.keyspace.check_not_hash(key)?;
        let Ok(name) = std::str::from_utf8(key) else {
            return Ok(None);
        };
        if self.store.get(name).is_none() {
            return Ok(None);
        }
        self.write_board(name, f).map(Some)
    }

    /// ZADD / ZINCRBY, and every submission of the other frontends: the
    /// entries in order, each with its own result. The caller sets each
    /// entry's `op` (Redis always sets or increments, whatever the board's
    /// `update`). `opts` says which entries come back.
    pub fn zadd(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
        opts: ZaddOpts,
    ) -> Result<Zadded, ZaddRefused> {
        let refused = |error, entries| ZaddRefused {
            error,
            entries: match opts.keep {
                KeepEntries::Always => entries,
                _ => Vec::new(),
            },
        };
        // `write_board` takes the gate and drops an expired key; the type
        // check needs neither. Refused before the entries move into the
        // closure, so they come back.
        if let Err(e) = self.writable() {
            return Err(refused(e, entries));
        }
        self.purge_if_expired(key);
        if let Err(e) = self.keyspace.check_not_hash(key) {
            return Err(refused(e, entries));
        }
        let name = match board_name(key) {
            Ok(n) => n,
            Err(e) => return Err(refused(e, entries)),
        };
        let mut back = Vec::new();
        let done = self.write_board_rec(name, |b| {
            let subs: Vec<Submit> = entries.iter().map(SubmitRec::as_submit).collect();
            let results = match b.submit_many(&subs) {
                Ok(r) => r,
                Err(e) => {
                    drop(subs);
                    back = entries;
                    return Err(e.into());
                }
            };
            drop(subs);
            // Only a batch that changed something is logged (e.g. not
            // `best` submissions that were no improvement). A name or data
            // is stored even when the score is not.
            let changed = results.iter().zip(&entries).any(|(r, e)| {
                r.as_ref().is_ok_and(|r| {
                    r.changed || r.evicted > 0 || e.name.is_some() || e.data.is_some()
                })
            });
            let out = results
                .into_iter()
                .map(|r| r.map_err(ApiError::from))
                .collect();
            // The record takes the entries: a batch is not copied to be logged.
            if !changed {
                return Ok(((out, entries), None));
            }
            let rec = LogOp::Submit {
                board: name.to_string(),
                entries,
            };
            Ok(((out, Vec::new()), Some(rec)))
        });
        let ((results, unlogged), lsn, rec) = done.map_err(|e| refused(e, back))?;
        let entries = match (opts.keep, rec) {
            (KeepEntries::No, _) => Vec::new(),
            (_, Some(LogOp::Submit { entries, .. })) => entries,
            _ => unlogged,
        };
        Ok(Zadded {
            results,
            lsn,
            entries,
        })
    }

    /// ZREM.
    pub fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        let board = String::from_utf8_lossy(key).into_owned();
        let r = self.zwrite_existing(key, |b| {
            let n = b.remove(members)?;
            let rec = (n > 0).then(|| LogOp::Remove {
                board,
                members: members.iter().map(|m| m.to_vec()).collect(),
            });
            Ok((n, rec))
        })?;
        Ok(r.unwrap_or((0, 0)))
    }

    /// Removes board positions `lo..hi` (0-based, half-open, best first).
    pub fn zrem_positions(&self, key: &[u8], lo: u64, hi: u64) -> Result<(u64, Lsn), ApiError> {
        if lo >= hi {
            return Ok((0, 0));
        }
        let board = String::from_utf8_lossy(key).into_owned();
        let r = self.zwrite_existing(key, |b| {
            let n = b.remove_range_by_rank(lo + 1, hi)?;
            let rec = (n > 0).then(|| LogOp::RemoveRankRange {
                board,
                start: lo + 1,
                stop: hi,
            });
            Ok((n, rec))
        })?;
        Ok(r.unwrap_or((0, 0)))
    }

    /// ZREMRANGEBYSCORE.
    pub fn zrem_score_range(&self, key: &[u8], range: ScoreRange) -> Result<(u64, Lsn), ApiError> {
        let range = ScoreRange {
            min: range.min.map(podium_engine::Num::Float),
            max: range.max.map(podium_engine::Num::Float),
        };
        self.zrem_score_range_exact(key, range)
    }

    /// [`Service::zrem_score_range`] with bounds that may be exact
    /// integers (an `int` first sort key's), logged as given.
    pub fn zrem_score_range_exact(
        &self,
        key: &[u8],
        range: ScoreRange<podium_engine::Num>,
    ) -> Result<(u64, Lsn), ApiError> {
        let board = String::from_utf8_lossy(key).into_owned();
        let r = self.zwrite_existing(key, |b| {
            let n = b.remove_range_by_score(&range)?;
            let rec = (n > 0).then_some(LogOp::RemoveScoreRange { board, range });
            Ok((n, rec))
        })?;
        Ok(r.unwrap_or((0, 0)))
    }

    /// ZPOPMIN / ZPOPMAX: up to `count` entries from the best end, or the
    /// worst end with `worst`.
    pub fn zpop(&self, key: &[u8], count: u64, worst: bool) -> Result<(Vec<Entry>, Lsn), ApiError> {
        let board = String::from_utf8_lossy(key).into_owned();
        let r = self.zwrite_existing(key, |b| {
            let v = b.pop(count, worst)?;
            let rec = (!v.is_empty()).then_some(LogOp::Pop {
                board,
                count,
                worst,
            });
            Ok((v, rec))
        })?;
        Ok(r.unwrap_or_default())
    }

    /// ZUNIONSTORE / ZINTERSTORE: `dest` becomes the aggregate of the
    /// weighted sources (keeping its config if it is a board already); an
    /// empty result deletes `dest`, as Redis does. Returns its size.
    pub fn zstore(
        &self,
        dest: &[u8],
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        for (k, _) in sources {
            self.purge_if_expired(k);
        }
        self.purge_if_expired(dest);
        let _gate = self.exclusive();
        let dest_name = board_name(dest)?;
        let mut srcs: Vec<(String, f64)> = Vec::with_capacity(sources.len());
        for (k, w) in sources {
            if self.keyspace.holds_other_than_zset(k) {
                return Err(wrong_type());
            }
            // A key that cannot name a board cannot hold a sorted set: it
            // is missing, which counts as empty.
            let name = match board_name(k) {
                Ok(n) => n.to_string(),
                Err(_) => continue,
            };
            srcs.push((name, *w));
        }
        // Redis replaces a hash or string destination rather than
        // refusing it.
        let mut lsn = 0;
        if self.keyspace.holds_other_than_zset(dest) {
            lsn = self.delete_key_locked(dest).1;
        }
        // The destination is a new key, as in Redis: no expiry carries over.
        if self.keyspace.expiry(dest).is_some() {
            lsn = self.append(&LogOp::Persist { key: dest.to_vec() });
            self.keyspace.forget_expiry(dest);
        }
        let created = self.store.get(dest_name).is_none();
        let refs: Vec<(&str, f64)> = srcs.iter().map(|(n, w)| (n.as_str(), *w)).collect();
        let n = if refs.is_empty() {
            0
        } else {
            self.store.combine(dest_name, &refs, agg, intersect)?
        };
        if !refs.is_empty() {
            if created {
                self.append(&LogOp::Create {
                    board: dest_name.to_string(),
                    config: BoardConfig::default(),
                    if_absent: true,
                });
            }
            lsn = self.append(&LogOp::Combine {
                dest: dest_name.to_string(),
                sources: srcs.clone(),
                aggregate: agg,
                intersect,
            });
        }
        if n == 0 {
            let (_, l) = self.delete_key_locked(dest);
            lsn = lsn.max(l);
        } else {
            self.waiters.signal(dest);
        }
        Ok((n, lsn))
    }
}
