//! The Redis view of the store: keys of two types (a board is a sorted
//! set, a hash holds free-form fields), key expiry, and the sorted-set
//! operations in the shapes Redis commands need (bytes in, engine types
//! out). Every method is synchronous and returns the LSN to wait for, so a
//! Redis connection can run a whole pipeline batch — or a MULTI/EXEC queue
//! inside [`Service::atomically`] — and wait for one durable commit.
//!
//! Redis semantics kept here, not in the frontend: an empty board does not
//! exist as a key (boards keep their config when emptied, but EXISTS, TYPE,
//! KEYS and SCAN do not see them); an emptied hash is deleted; an expired
//! key is deleted on first access and by [`Service::sweep_expired`], with
//! the deletion logged like any other.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use podium_engine::{
    Aggregate, Board, BoardConfig, Entry, ScoreRange, Store, Submit, SubmitResult,
};

use crate::service::Service;
use crate::storage::record::{LogOp, SubmitRec};
use podium_core::error::{ApiError, Code};

/// A log position to wait for (0: nothing was logged).
pub type Lsn = u64;

/// A hash's fields and values.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Zset,
    Hash,
}

impl KeyType {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Zset => "zset",
            KeyType::Hash => "hash",
        }
    }
}

/// EXPIRE's options (Redis 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpireCond {
    #[default]
    Always,
    /// Only if the key has no expiry.
    Nx,
    /// Only if it has one.
    Xx,
    /// Only if the new time is later (no expiry counts as infinite).
    Gt,
    /// Only if the new time is earlier.
    Lt,
}

fn wrong_type() -> ApiError {
    ApiError::new(
        Code::WrongType,
        "Operation against a key holding the wrong kind of value",
    )
}

/// A sorted-set key as a board name.
fn board_name(key: &[u8]) -> Result<&str, ApiError> {
    let name = std::str::from_utf8(key).map_err(|_| {
        ApiError::new(
            Code::InvalidBoardName,
            "a sorted-set key must be UTF-8 (it names a board)",
        )
    })?;
    Store::validate_name(name)?;
    Ok(name)
}

impl Service {
    /// Milliseconds since the epoch by the service clock.
    pub fn now_ms(&self) -> i64 {
        self.now().timestamp_millis()
    }

    // ------------------------------------------------------------- expiry

    fn expiry_of(&self, key: &[u8]) -> Option<i64> {
        if self.expiring.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.expires.lock().get(key).copied()
    }

    pub(crate) fn forget_expiry(&self, key: &[u8]) {
        if self.expiring.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut e = self.expires.lock();
        e.remove(key);
        self.expiring.store(e.len(), Ordering::Relaxed);
    }

    /// Deletes `key` if its expiry has passed. Every keyed operation calls
    /// it first, so an expired key is gone for every command.
    pub(crate) fn purge_if_expired(&self, key: &[u8]) {
        if self.expiry_of(key).is_some_and(|at| at <= self.now_ms()) {
            let _gate = self.exclusive();
            // Re-check under the gate: another thread may have won.
            if self.expiry_of(key).is_some_and(|at| at <= self.now_ms()) {
                // Not refused while the log cannot write: the key is gone
                // for readers either way, and its record waits with the
                // others until the log recovers.
                self.delete_key_locked(key);
            }
        }
    }

    /// How many keys have an expiry (INFO's `expires`).
    pub fn expiring_keys(&self) -> usize {
        self.expiring.load(Ordering::Relaxed)
    }

    /// Deletes every key whose expiry has passed (the background sweep).
    /// Returns how many were deleted.
    pub fn sweep_expired(&self) -> usize {
        if self.expiring.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let now = self.now_ms();
        let due: Vec<Vec<u8>> = self
            .expires
            .lock()
            .iter()
            .filter(|(_, &at)| at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &due {
            self.purge_if_expired(k);
        }
        due.len()
    }

    /// Removes a key of either type with its expiry and period; logs it.
    /// Call with the gate held exclusively. Returns whether it existed.
    fn delete_key_locked(&self, key: &[u8]) -> (bool, Lsn) {
        let had_board = match std::str::from_utf8(key) {
            Ok(name) => match self.store.get(name) {
                Some(b) => {
                    let visible = !b.read().is_empty();
                    self.store.delete(name);
                    self.periods.lock().remove(name);
                    Some(visible)
                }
                None => None,
            },
            Err(_) => None,
        };
        let had_hash = self.hashes.remove(key).is_some();
        let had_expiry = self.expiry_of(key).is_some();
        self.forget_expiry(key);
        if had_board.is_none() && !had_hash && !had_expiry {
            return (false, 0);
        }
        let lsn = self.append(&LogOp::DelKey { key: key.to_vec() });
        (had_hash || had_board == Some(true), lsn)
    }

    // ------------------------------------------------------------ keyspace

    /// Whether `key` names a board, empty or not: an empty board is no
    /// key of the Redis view, but deleting the key drops its config.
    pub fn names_board(&self, key: &[u8]) -> bool {
        self.purge_if_expired(key);
        std::str::from_utf8(key).is_ok_and(|name| self.store.get(name).is_some())
    }

    /// The key's type in the Redis view (`None`: no such key).
    pub fn key_type(&self, key: &[u8]) -> Option<KeyType> {
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.type_locked(key)
    }

    fn type_locked(&self, key: &[u8]) -> Option<KeyType> {
        if self.hashes.contains_key(key) {
            return Some(KeyType::Hash);
        }
        let name = std::str::from_utf8(key).ok()?;
        let b = self.store.get(name)?;
        let empty = b.read().is_empty();
        (!empty).then_some(KeyType::Zset)
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    pub fn exists(&self, keys: &[&[u8]]) -> u64 {
        keys.iter().filter(|k| self.key_type(k).is_some()).count() as u64
    }

    /// DEL / UNLINK.
    pub fn del(&self, keys: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        let _gate = self.exclusive();
        let mut n = 0;
        let mut lsn = 0;
        for k in keys {
            let (existed, l) = self.delete_key_locked(k);
            n += existed as u64;
            lsn = lsn.max(l);
        }
        Ok((n, lsn))
    }

    /// Every key (boards that are not empty, hashes), unexpired.
    fn all_keys(&self) -> Vec<Vec<u8>> {
        let now = self.now_ms();
        let expired = |k: &[u8]| self.expiry_of(k).is_some_and(|at| at <= now);
        let mut keys: Vec<Vec<u8>> = self
            .store
            .list()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, _)| name.into_bytes())
            .chain(self.hashes.iter().map(|e| e.key().clone()))
            .filter(|k| !expired(k))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// KEYS pattern (Redis glob).
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let _gate = self.shared();
        self.all_keys()
            .into_iter()
            .filter(|k| glob_match(pattern, k))
            .collect()
    }

    /// SCAN: the cursor is a position in the sorted key list, so a full
    /// iteration returns every key that existed throughout it, as Redis
    /// guarantees. `count` is how many keys to visit, matching or not.
    pub fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        ty: Option<KeyType>,
    ) -> (u64, Vec<Vec<u8>>) {
        let _gate = self.shared();
        let keys = self.all_keys();
        let start = (cursor as usize).min(keys.len());
        let end = start.saturating_add(count.max(1)).min(keys.len());
        let page = keys[start..end]
            .iter()
            .filter(|k| pattern.is_none_or(|p| glob_match(p, k)))
            .filter(|k| ty.is_none_or(|t| self.type_locked(k) == Some(t)))
            .cloned()
            .collect();
        let next = if end >= keys.len() { 0 } else { end as u64 };
        (next, page)
    }

    /// DBSIZE.
    pub fn dbsize(&self) -> u64 {
        let _gate = self.shared();
        self.all_keys().len() as u64
    }

    /// FLUSHALL / FLUSHDB: every board, hash and expiry.
    pub fn flushall(&self) -> Result<Lsn, ApiError> {
        self.writable()?;
        let _gate = self.exclusive();
        for (name, _) in self.store.list() {
            self.store.delete(&name);
        }
        self.hashes.clear();
        self.periods.lock().clear();
        {
            let mut e = self.expires.lock();
            e.clear();
            self.expiring.store(0, Ordering::Relaxed);
        }
        Ok(self.append(&LogOp::FlushAll))
    }

    /// EXPIREAT in ms. A time not in the future deletes the key now.
    /// Returns whether the expiry was set (or the key deleted).
    pub fn expire_at_ms(
        &self,
        key: &[u8],
        at_ms: i64,
        cond: ExpireCond,
    ) -> Result<(bool, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.exclusive();
        if self.type_locked(key).is_none() {
            return Ok((false, 0));
        }
        let current = self.expiry_of(key);
        let ok = match cond {
            ExpireCond::Always => true,
            ExpireCond::Nx => current.is_none(),
            ExpireCond::Xx => current.is_some(),
            ExpireCond::Gt => current.is_some_and(|c| at_ms > c),
            ExpireCond::Lt => current.is_none_or(|c| at_ms < c),
        };
        if !ok {
            return Ok((false, 0));
        }
        if at_ms <= self.now_ms() {
            let (_, lsn) = self.delete_key_locked(key);
            return Ok((true, lsn));
        }
        let lsn = self.append(&LogOp::Expire {
            key: key.to_vec(),
            at_ms,
        });
        let mut e = self.expires.lock();
        e.insert(key.to_vec(), at_ms);
        self.expiring.store(e.len(), Ordering::Relaxed);
        Ok((true, lsn))
    }

    /// PERSIST: whether an expiry was removed.
    pub fn persist(&self, key: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.exclusive();
        if self.type_locked(key).is_none() || self.expiry_of(key).is_none() {
            return Ok((false, 0));
        }
        let lsn = self.append(&LogOp::Persist { key: key.to_vec() });
        self.forget_expiry(key);
        Ok((true, lsn))
    }

    /// PTTL: -2 no such key, -1 no expiry, else milliseconds left.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        self.purge_if_expired(key);
        let _gate = self.shared();
        if self.type_locked(key).is_none() {
            return -2;
        }
        match self.expiry_of(key) {
            None => -1,
            Some(at) => (at - self.now_ms()).max(0),
        }
    }

    // -------------------------------------------------------------- hashes

    fn check_not_zset(&self, key: &[u8]) -> Result<(), ApiError> {
        if self.type_locked(key) == Some(KeyType::Zset) {
            return Err(wrong_type());
        }
        Ok(())
    }

    /// HSET / HMSET: returns how many fields were added (not updated).
    pub fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.check_not_zset(key)?;
        let mut h = self.hashes.entry(key.to_vec()).or_default();
        let mut added = 0;
        for (f, v) in pairs {
            added += h.insert(f.to_vec(), v.to_vec()).is_none() as u64;
        }
        // Appended while the entry (its shard) is locked: log order is
        // apply order for this key.
        let lsn = self.append(&LogOp::HSet {
            key: key.to_vec(),
            pairs: pairs
                .iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect(),
        });
        Ok((added, lsn))
    }

    /// HDEL: how many fields were removed; an emptied hash is deleted.
    pub fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.check_not_zset(key)?;
        let (removed, lsn, emptied) = {
            let Some(mut h) = self.hashes.get_mut(key) else {
                return Ok((0, 0));
            };
            let removed = fields.iter().filter(|f| h.remove(**f).is_some()).count() as u64;
            if removed == 0 {
                return Ok((0, 0));
            }
            let lsn = self.append(&LogOp::HDel {
                key: key.to_vec(),
                fields: fields.iter().map(|f| f.to_vec()).collect(),
            });
            (removed, lsn, h.is_empty())
        };
        if emptied {
            // Replay drops an emptied hash and its expiry the same way.
            self.hashes.remove_if(key, |_, h| h.is_empty());
            self.forget_expiry(key);
        }
        Ok((removed, lsn))
    }

    fn with_hash<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&HashMap<Vec<u8>, Vec<u8>>>) -> R,
    ) -> Result<R, ApiError> {
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.check_not_zset(key)?;
        let h = self.hashes.get(key);
        Ok(f(h.as_deref()))
    }

    pub fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        self.with_hash(key, |h| h.and_then(|h| h.get(field).cloned()))
    }

    pub fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, ApiError> {
        self.with_hash(key, |h| {
            fields
                .iter()
                .map(|f| h.and_then(|h| h.get(*f).cloned()))
                .collect()
        })
    }

    /// HGETALL (in no particular order, as Redis's hash tables).
    pub fn hgetall(&self, key: &[u8]) -> Result<Fields, ApiError> {
        self.with_hash(key, |h| {
            h.map(|h| h.iter().map(|(f, v)| (f.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }

    pub fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool, ApiError> {
        self.with_hash(key, |h| h.is_some_and(|h| h.contains_key(field)))
    }

    pub fn hlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        self.with_hash(key, |h| h.map_or(0, |h| h.len() as u64))
    }

    // --------------------------------------------------------- sorted sets

    fn check_not_hash(&self, key: &[u8]) -> Result<(), ApiError> {
        if self.hashes.contains_key(key) {
            return Err(wrong_type());
        }
        Ok(())
    }

    /// Runs a read on the board `key` (`None`: no such key, or empty).
    pub fn zread<R>(&self, key: &[u8], f: impl FnOnce(&Board) -> R) -> Result<Option<R>, ApiError> {
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.check_not_hash(key)?;
        let Ok(name) = std::str::from_utf8(key) else {
            return Ok(None);
        };
        let Some(b) = self.store.get(name) else {
            return Ok(None);
        };
        let g = b.read();
        Ok((!g.is_empty()).then(|| f(&g)))
    }

    /// A write on an existing board; `None` when the key does not exist.
    fn zwrite_existing<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut Board) -> Result<(R, Option<LogOp>), ApiError>,
    ) -> Result<Option<(R, Lsn)>, ApiError> {
        self.purge_if_expired(key);
        self.check_not_hash(key)?;
        let Ok(name) = std::str::from_utf8(key) else {
            return Ok(None);
        };
        if self.store.get(name).is_none() {
            return Ok(None);
        }
        self.write_board(name, f).map(Some)
    }

    /// ZADD / ZINCRBY: the entries in order, each with its own result. The
    /// caller sets each entry's `op` (Redis always sets or increments,
    /// whatever the board's `update`).
    #[allow(clippy::type_complexity)]
    pub fn zadd(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Lsn), ApiError> {
        self.zadd_keep(key, entries).map(|(r, lsn, _)| (r, lsn))
    }

    /// [`Service::zadd`], handing the entries back once applied and
    /// logged, for a caller that answers from them.
    #[allow(clippy::type_complexity)]
    pub fn zadd_keep(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Lsn, Vec<SubmitRec>), ApiError> {
        self.zadd_keep_or_back(key, entries).map_err(|(e, _)| e)
    }

    /// [`Service::zadd_keep`] that also hands the entries back when the
    /// call fails before they are applied (a batch the engine refused as a
    /// whole), for a caller that retries parts of them (RPC's `import`)
    /// without having kept a copy of every entry.
    #[allow(clippy::type_complexity)]
    pub fn zadd_keep_or_back(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<
        (Vec<Result<SubmitResult, ApiError>>, Lsn, Vec<SubmitRec>),
        (ApiError, Vec<SubmitRec>),
    > {
        // `write_board` takes the gate and drops an expired key; the type
        // check needs neither. Refused before the entries move into the
        // closure, so they come back.
        if let Err(e) = self.writable() {
            return Err((e, entries));
        }
        self.purge_if_expired(key);
        if let Err(e) = self.check_not_hash(key) {
            return Err((e, entries));
        }
        let name = match board_name(key) {
            Ok(n) => n,
            Err(e) => return Err((e, entries)),
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
        let ((out, unlogged), lsn, rec) = done.map_err(|e| (e, back))?;
        let entries = match rec {
            Some(LogOp::Submit { entries, .. }) => entries,
            _ => unlogged,
        };
        Ok((out, lsn, entries))
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
            if self.hashes.contains_key(*k) {
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
        // Redis replaces a hash destination rather than refusing it.
        let mut lsn = 0;
        if self.hashes.contains_key(dest) {
            lsn = self.delete_key_locked(dest).1;
        }
        // The destination is a new key, as in Redis: no expiry carries over.
        if self.expiry_of(dest).is_some() {
            lsn = self.append(&LogOp::Persist { key: dest.to_vec() });
            self.forget_expiry(dest);
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
        }
        Ok((n, lsn))
    }
}

/// Redis's glob match (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`,
/// `[a-z]`, and `\x` for a literal `x`. Byte-wise.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    // Backtracking point for the last `*`: (pattern index after it, string index).
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, s[i]) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Matches `c` against the class starting at `pattern[p] == b'['`; returns
/// (matched, index after the class). An unterminated class runs to the end
/// of the pattern, as in Redis.
fn class_match(pattern: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let not = pattern.get(j) == Some(&b'^');
    if not {
        j += 1;
    }
    let mut matched = false;
    while j < pattern.len() && pattern[j] != b']' {
        if pattern[j] == b'\\' && j + 1 < pattern.len() {
            matched |= pattern[j + 1] == c;
            j += 2;
        } else if j + 2 < pattern.len() && pattern[j + 1] == b'-' && pattern[j + 2] != b']' {
            let (mut lo, mut hi) = (pattern[j], pattern[j + 2]);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            matched |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            matched |= pattern[j] == c;
            j += 1;
        }
    }
    let next = if j < pattern.len() { j + 1 } else { j };
    Some((matched != not, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FsyncPolicy;
    use chrono::TimeZone;
    use podium_core::schedule::ManualClock;
    use podium_engine::{Cond, Presence, UpdateOp};
    use std::sync::Arc;

    fn rec(m: &str, s: f64) -> SubmitRec {
        SubmitRec {
            member: m.as_bytes().into(),
            score: s,
            op: Some(UpdateOp::Set),
            presence: Presence::Any,
            cond: Cond::Always,
            name: None,
            data: None,
        }
    }

    #[test]
    fn glob() {
        for (p, s, want) in [
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("board:*:week", "board:x:week", true),
            ("*a*b", "xxaxxbxb", true),
            ("", "", true),
            ("a", "", false),
        ] {
            assert_eq!(glob_match(p.as_bytes(), s.as_bytes()), want, "{p} ~ {s}");
        }
    }

    fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Service {
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(dir, FsyncPolicy::Always, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX).with_clock(clock)
    }

    #[test]
    fn types_hashes_expiry_and_restart() {
        let dir = std::env::temp_dir().join(format!("podium-ks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        {
            let svc = open(&dir, clock.clone());
            svc.zadd(b"z", vec![rec("a", 1.0), rec("b", 2.0)]).unwrap();
            svc.hset(b"h", &[(b"f", b"v"), (b"g", b"w")]).unwrap();
            assert_eq!(svc.key_type(b"z"), Some(KeyType::Zset));
            assert_eq!(svc.key_type(b"h"), Some(KeyType::Hash));
            assert_eq!(
                svc.hset(b"z", &[(b"f", b"v")]).unwrap_err().code,
                Code::WrongType
            );
            assert_eq!(
                svc.zadd(b"h", vec![rec("a", 1.0)]).unwrap_err().code,
                Code::WrongType
            );
            assert_eq!(svc.exists(&[b"z", b"h", b"z", b"nope"]), 3);
            let now = svc.now_ms();
            assert!(
                svc.expire_at_ms(b"h", now + 10_000, ExpireCond::Always)
                    .unwrap()
                    .0
            );
            assert!(
                !svc.expire_at_ms(b"h", now + 20_000, ExpireCond::Nx)
                    .unwrap()
                    .0
            );
            assert!(
                svc.expire_at_ms(b"z", now + 60_000, ExpireCond::Always)
                    .unwrap()
                    .0
            );
            assert!(svc.persist(b"z").unwrap().0);
            assert_eq!(svc.pttl(b"h"), 10_000);
            assert_eq!(svc.pttl(b"z"), -1);
            assert_eq!(svc.pttl(b"nope"), -2);
            // Emptying a sorted set removes the key from the Redis view.
            svc.zadd(b"gone", vec![rec("x", 1.0)]).unwrap();
            svc.zrem(b"gone", &[b"x"]).unwrap();
            assert_eq!(svc.key_type(b"gone"), None);
            assert_eq!(svc.keys(b"*"), vec![b"h".to_vec(), b"z".to_vec()]);
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            svc.hdel(b"h", &[b"g"]).unwrap();
            svc.close().unwrap();
        }
        // After a restart (snapshot + log), the hash, its expiry and the
        // zset are back; then time passes and the hash expires.
        let svc = open(&dir, clock.clone());
        assert_eq!(
            svc.hgetall(b"h").unwrap(),
            vec![(b"f".to_vec(), b"v".to_vec())]
        );
        assert_eq!(svc.pttl(b"h"), 10_000);
        assert_eq!(svc.zread(b"z", |b| b.len()).unwrap(), Some(2));
        clock.advance(chrono::Duration::seconds(11));
        assert_eq!(svc.sweep_expired(), 1);
        assert_eq!(svc.key_type(b"h"), None);
        assert_eq!(svc.dbsize(), 1);
        svc.close().unwrap();
        drop(svc);
        let svc = open(&dir, clock);
        assert_eq!(svc.key_type(b"h"), None, "the expiry's deletion was logged");
        let (n, _) = svc
            .zstore(
                b"u",
                &[(b"z", 2.0), (b"missing", 1.0)],
                Aggregate::Sum,
                false,
            )
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(svc.zread(b"u", |b| b.score(b"b")).unwrap(), Some(Some(4.0)));
        let (n, _) = svc
            .zstore(
                b"u",
                &[(b"z", 1.0), (b"missing", 1.0)],
                Aggregate::Sum,
                true,
            )
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(
            svc.key_type(b"u"),
            None,
            "an empty result deletes the destination"
        );
        assert!(svc.flushall().unwrap() > 0);
        assert_eq!(svc.dbsize(), 0);
    }

    #[test]
    fn atomically_excludes_other_writers_and_nests_service_calls() {
        let svc = Arc::new(Service::in_memory());
        svc.atomically(|| {
            svc.zadd(b"z", vec![rec("a", 1.0)]).unwrap();
            svc.del(&[b"z"]).unwrap();
            svc.zadd(b"z", vec![rec("b", 1.0)]).unwrap();
        });
        assert_eq!(svc.zread(b"z", |b| b.len()).unwrap(), Some(1));
        // Another thread's write waits for the transaction to end.
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = svc.clone();
        svc.atomically(|| {
            let h = std::thread::spawn(move || {
                s2.zadd(b"z", vec![rec("c", 1.0)]).unwrap();
                tx.send(()).unwrap();
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(
                rx.try_recv().is_err(),
                "the other writer ran inside the transaction"
            );
            assert_eq!(svc.zread(b"z", |b| b.len()).unwrap(), Some(1));
            h
        })
        .join()
        .unwrap();
        assert_eq!(svc.zread(b"z", |b| b.len()).unwrap(), Some(2));
    }
}
