//! The Redis commands on keys of any type and on hashes: TYPE, EXISTS,
//! DEL, KEYS, SCAN, DBSIZE, FLUSHALL, the EXPIRE family and the background
//! expiry sweep, and the hash commands. The [`Keyspace`] holds the data;
//! these add the gate, the log and the service clock around it, and the
//! boards reach it through [`BoardKeys`].
//!
//! Every method is synchronous and returns the LSN to wait for, so a
//! Redis connection can run a whole pipeline batch — or a MULTI/EXEC queue
//! inside [`Service::atomically`] — and wait for one durable commit.

use crate::keyspace::{glob_match, BoardKeys, ExpireCond, Fields, KeyType, Lsn};
use crate::storage::record::LogOp;
use podium_core::error::{ApiError, Code};
use podium_core::keystore::{
    scan_page, string2ll, KeyStats, LongDouble, SMALL_HASH, SMALL_HASH_VALUE,
};
use podium_core::memory;

use super::{Service, EXPIRED_KEYS, KEY_HITS, KEY_MISSES};

/// The boards as keys of the Redis view.
impl BoardKeys for Service {
    fn board_len(&self, name: &str) -> Option<usize> {
        self.store.get(name).map(|b| b.read().len())
    }

    fn boards_with_members(&self) -> Vec<String> {
        self.store
            .list()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, _)| name)
            .collect()
    }

    fn drop_board(&self, name: &str) -> Option<bool> {
        let b = self.store.get(name)?;
        let had_members = !b.read().is_empty();
        self.store.delete(name);
        self.periods.lock().remove(name);
        Some(had_members)
    }

    fn drop_all_boards(&self) {
        for (name, _) in self.store.list() {
            self.store.delete(&name);
        }
        self.periods.lock().clear();
    }
}

impl Service {
    /// Milliseconds since the epoch by the service clock.
    pub fn now_ms(&self) -> i64 {
        self.now().timestamp_millis()
    }

    // ------------------------------------------------------------- expiry

    /// Deletes `key` if its expiry has passed. Every keyed operation calls
    /// it first, so an expired key is gone for every command.
    pub(crate) fn purge_if_expired(&self, key: &[u8]) {
        let due = || {
            self.keyspace
                .expiry(key)
                .is_some_and(|at| at <= self.now_ms())
        };
        if due() {
            let _gate = self.exclusive();
            // Re-check under the gate: another thread may have won.
            if due() {
                // Not refused while the log cannot write: the key is gone
                // for readers either way, and its record waits with the
                // others until the log recovers.
                let (existed, _) = self.delete_key_locked(key);
                self.key_counts.add(EXPIRED_KEYS, 1);
                if existed {
                    if let Some(sink) = &*self.expiry_sink.read() {
                        sink.expired(key);
                    }
                }
            }
        }
    }

    /// Counts a read command's lookup of a key (INFO's keyspace hits and
    /// misses).
    pub(super) fn note_lookup(&self, found: bool) {
        self.key_counts
            .add(if found { KEY_HITS } else { KEY_MISSES }, 1);
    }

    pub fn key_stats(&self) -> KeyStats {
        KeyStats {
            hits: self.key_counts.get(KEY_HITS),
            misses: self.key_counts.get(KEY_MISSES),
            expired: self.key_counts.get(EXPIRED_KEYS),
        }
    }

    pub fn reset_key_stats(&self) {
        self.key_counts.reset();
    }

    /// The average time to live of up to 1024 of the keys that have one.
    pub fn avg_ttl_ms(&self) -> i64 {
        self.keyspace.avg_ttl_ms(self.now_ms(), 1024)
    }

    /// How many keys have an expiry (INFO's `expires`).
    pub fn expiring_keys(&self) -> usize {
        self.keyspace.expiring()
    }

    /// Deletes every key whose expiry has passed (the background sweep).
    /// Returns how many were deleted.
    pub fn sweep_expired(&self) -> usize {
        let due = self.keyspace.due(self.now_ms());
        for k in &due {
            self.purge_if_expired(k);
        }
        due.len()
    }

    /// Removes a key of either type with its expiry and period; logs it.
    /// Call with the gate held exclusively. Returns whether it existed.
    pub(super) fn delete_key_locked(&self, key: &[u8]) -> (bool, Lsn) {
        let d = self.keyspace.delete(key, self);
        if !d.changed {
            return (false, 0);
        }
        let lsn = self.append(&LogOp::DelKey { key: key.to_vec() });
        (d.existed, lsn)
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
        let _gate = self.reading(key);
        self.keyspace.key_type(key, self)
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    pub fn exists(&self, keys: &[&[u8]]) -> u64 {
        keys.iter().filter(|k| self.key_type(k).is_some()).count() as u64
    }

    /// DEL / UNLINK.
    pub fn del(&self, keys: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        // An expired key is gone before DEL looks (Redis counts it as
        // missing and publishes `expired`, not `del`).
        for k in keys {
            self.purge_if_expired(k);
        }
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

    /// KEYS pattern (Redis glob).
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let _gate = self.reading_all();
        self.keyspace
            .all_keys(self, self.now_ms())
            .into_iter()
            .filter(|k| glob_match(pattern, k))
            .collect()
    }

    /// SCAN: the keys in scan order from `cursor` ([`scan_page`]), so a
    /// full iteration returns every key that existed throughout it, as
    /// Redis guarantees. `count` is how many keys to visit, matching or
    /// not.
    pub fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        ty: Option<KeyType>,
    ) -> (u64, Vec<Vec<u8>>) {
        let _gate = self.reading_all();
        let keys = self.keyspace.all_keys(self, self.now_ms());
        let (next, mut page) = scan_page(keys, |k| k, cursor, count);
        page.retain(|k| {
            pattern.is_none_or(|p| glob_match(p, k))
                && ty.is_none_or(|t| self.keyspace.key_type(k, self) == Some(t))
        });
        (next, page)
    }

    /// DBSIZE.
    pub fn dbsize(&self) -> u64 {
        let _gate = self.reading_all();
        self.keyspace.all_keys(self, self.now_ms()).len() as u64
    }

    /// FLUSHALL / FLUSHDB: every board, hash and expiry.
    pub fn flushall(&self) -> Result<Lsn, ApiError> {
        self.writable()?;
        let _gate = self.exclusive();
        self.keyspace.flush(self);
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
        if self.keyspace.key_type(key, self).is_none() {
            return Ok((false, 0));
        }
        if !cond.allows(self.keyspace.expiry(key), at_ms) {
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
        self.keyspace.set_expiry(key, at_ms);
        Ok((true, lsn))
    }

    /// PERSIST: whether an expiry was removed.
    pub fn persist(&self, key: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.exclusive();
        if self.keyspace.key_type(key, self).is_none() || self.keyspace.expiry(key).is_none() {
            return Ok((false, 0));
        }
        let lsn = self.append(&LogOp::Persist { key: key.to_vec() });
        self.keyspace.forget_expiry(key);
        Ok((true, lsn))
    }

    /// PTTL: -2 no such key, -1 no expiry, else milliseconds left.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        if self.keyspace.key_type(key, self).is_none() {
            return -2;
        }
        match self.keyspace.expiry(key) {
            None => -1,
            Some(at) => (at - self.now_ms()).max(0),
        }
    }

    /// PEXPIRETIME: -2 no such key, -1 no expiry, else the expiry in ms
    /// since the epoch.
    pub fn expire_time_ms(&self, key: &[u8]) -> i64 {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        if self.keyspace.key_type(key, self).is_none() {
            return -2;
        }
        self.keyspace.expiry(key).unwrap_or(-1)
    }

    /// RANDOMKEY: any live key (`None`: there is none).
    pub fn random_key(&self) -> Option<Vec<u8>> {
        use rand::seq::IteratorRandom;
        let _gate = self.reading_all();
        self.keyspace
            .all_keys(self, self.now_ms())
            .into_iter()
            .choose(&mut rand::rng())
    }

    // -------------------------------------------------------------- hashes

    /// HSET / HMSET: returns how many fields were added (not updated).
    pub fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.keyspace.check_not_zset(key, self)?;
        Ok(self.keyspace.hset(key, pairs, || {
            self.append(&LogOp::HSet {
                key: key.to_vec(),
                pairs: pairs
                    .iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            })
        }))
    }

    /// HDEL: how many fields were removed; an emptied hash is deleted.
    pub fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.keyspace.check_not_zset(key, self)?;
        Ok(self.keyspace.hdel(key, fields, || {
            self.append(&LogOp::HDel {
                key: key.to_vec(),
                fields: fields.iter().map(|f| f.to_vec()).collect(),
            })
        }))
    }

    fn with_hash<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&std::collections::HashMap<Vec<u8>, Vec<u8>>>) -> R,
    ) -> Result<R, ApiError> {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        self.keyspace.check_not_zset(key, self)?;
        Ok(self.keyspace.read_hash(key, |h| {
            self.note_lookup(h.is_some());
            f(h)
        }))
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

    /// HSETNX: whether `field` was absent, and so set.
    pub fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<(bool, Lsn), ApiError> {
        let (set, lsn) =
            self.hupdate(key, field, |old| Ok(old.is_none().then(|| value.to_vec())))?;
        Ok((set.is_some(), lsn))
    }

    /// HINCRBY: the field's value after adding `by` (an absent field is 0),
    /// with Redis's refusals of a value that is not an integer and of an
    /// overflow.
    pub fn hincrby(&self, key: &[u8], field: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        let mut sum = 0;
        let (_, lsn) = self.hupdate(key, field, |old| {
            let old = match old {
                None => 0,
                Some(v) => string2ll(v).ok_or_else(|| {
                    ApiError::new(Code::InvalidArgument, "hash value is not an integer")
                })?,
            };
            sum = old.checked_add(by).ok_or_else(|| {
                ApiError::new(
                    Code::InvalidArgument,
                    "increment or decrement would overflow",
                )
            })?;
            Ok(Some(sum.to_string().into_bytes()))
        })?;
        Ok((sum, lsn))
    }

    /// HINCRBYFLOAT: the field's value after adding `by`, read and summed
    /// as C `long double`s and printed as Redis prints them, with Redis's
    /// refusals of a value that is not a float and of a NaN or infinite
    /// sum.
    pub fn hincrbyfloat(
        &self,
        key: &[u8],
        field: &[u8],
        by: LongDouble,
    ) -> Result<(Vec<u8>, Lsn), ApiError> {
        let mut out = Vec::new();
        let (_, lsn) = self.hupdate(key, field, |old| {
            let old = match old {
                None => LongDouble::from_i64(0),
                Some(v) => LongDouble::parse(v).ok_or_else(|| {
                    ApiError::new(Code::InvalidArgument, "hash value is not a float")
                })?,
            };
            let sum = old + by;
            if sum.is_nan_or_inf() {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "increment would produce NaN or Infinity",
                ));
            }
            out = sum.to_human().into_bytes();
            Ok(Some(out.clone()))
        })?;
        Ok((out, lsn))
    }

    /// A read-modify-write of one field, logged as the HSET of its result
    /// (as Redis propagates HINCRBY), under the gate like every write.
    fn hupdate(
        &self,
        key: &[u8],
        field: &[u8],
        update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, ApiError>,
    ) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.keyspace.check_not_zset(key, self)?;
        self.keyspace.hupdate(key, field, update, |value| {
            self.append(&LogOp::HSet {
                key: key.to_vec(),
                pairs: vec![(field.to_vec(), value.to_vec())],
            })
        })
    }

    /// HRANDFIELD with a count: `count` distinct fields (all of them when
    /// the hash has no more), or with a negative count that many picks
    /// that may repeat; with their values when `values`. `None`: no such
    /// key.
    pub fn hrandfield(
        &self,
        key: &[u8],
        count: i64,
        values: bool,
    ) -> Result<Option<Fields>, ApiError> {
        use rand::seq::IteratorRandom;
        use rand::Rng;
        self.with_hash(key, |h| {
            let h = h?;
            let pick = |(f, v): (&Vec<u8>, &Vec<u8>)| {
                (f.clone(), if values { v.clone() } else { Vec::new() })
            };
            let mut rng = rand::rng();
            Some(Ok(if count < 0 {
                let all: Vec<_> = h.iter().collect();
                match memory::collect_within(count.unsigned_abs(), || {
                    pick(all[rng.random_range(0..all.len())])
                }) {
                    Ok(picks) => picks,
                    Err(e) => return Some(Err(e)),
                }
            } else if count as usize >= h.len() {
                h.iter().map(pick).collect()
            } else {
                h.iter()
                    .choose_multiple(&mut rng, count as usize)
                    .into_iter()
                    .map(pick)
                    .collect()
            }))
        })
        .map(Option::transpose)?
    }

    /// HSCAN: as Redis, a small hash (one Redis keeps as a listpack: at
    /// most 128 fields, none and no value over 64 bytes) comes whole in one
    /// page with cursor 0; a larger one in scan order from `cursor`
    /// ([`scan_page`]), `count` fields visited a page, matching or not.
    pub fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Fields), ApiError> {
        self.with_hash(key, |h| {
            let Some(h) = h else {
                return (0, Vec::new());
            };
            let small = h.len() <= SMALL_HASH
                && h.iter()
                    .all(|(f, v)| f.len() <= SMALL_HASH_VALUE && v.len() <= SMALL_HASH_VALUE);
            let (next, mut page): (u64, Fields) = if small {
                (0, h.iter().map(|(f, v)| (f.clone(), v.clone())).collect())
            } else {
                let (next, page) = scan_page(h.iter(), |(f, _)| f, cursor, count);
                (
                    next,
                    page.into_iter()
                        .map(|(f, v)| (f.clone(), v.clone()))
                        .collect(),
                )
            };
            page.retain(|(f, _)| pattern.is_none_or(|p| glob_match(p, f)));
            (next, page)
        })
    }

    pub fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool, ApiError> {
        self.with_hash(key, |h| h.is_some_and(|h| h.contains_key(field)))
    }

    pub fn hlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        self.with_hash(key, |h| h.map_or(0, |h| h.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::rec;
    use crate::service::ZaddOpts;
    use crate::FsyncPolicy;
    use chrono::TimeZone;
    use podium_core::error::Code;
    use podium_core::keystore::Writes;
    use podium_core::schedule::ManualClock;
    use podium_engine::{Aggregate, Store};
    use std::sync::Arc;

    fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Service {
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(dir, FsyncPolicy::Always, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX).with_clock(clock)
    }

    #[test]
    fn hash_updates_are_logged_as_their_results() {
        let dir = std::env::temp_dir().join(format!("podium-hupd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 25, 12, 0, 0)
                .unwrap(),
        ));
        {
            let svc = open(&dir, clock.clone());
            assert_eq!(svc.hincrby(b"h", b"n", 5).unwrap().0, 5);
            assert_eq!(svc.hincrby(b"h", b"n", -7).unwrap().0, -2);
            assert!(svc.hsetnx(b"h", b"s", b"first").unwrap().0);
            assert!(!svc.hsetnx(b"h", b"s", b"second").unwrap().0);
            svc.hset(b"h", &[(b"max", b"9223372036854775807")]).unwrap();
            let e = svc.hincrby(b"h", b"max", 1).unwrap_err();
            assert_eq!(e.message, "increment or decrement would overflow");
            let e = svc.hincrby(b"h", b"s", 1).unwrap_err();
            assert_eq!(e.message, "hash value is not an integer");
            assert!(svc.hincrby(b"none", b"x", i64::MAX).is_ok());
            assert!(svc.hincrby(b"none", b"x", 1).is_err());
            assert_eq!(svc.hincrby(b"z", b"x", 1).unwrap().0, 1);
            svc.zadd(b"board", vec![rec("a", 1.0)], ZaddOpts::default())
                .unwrap();
            assert_eq!(
                svc.hincrby(b"board", b"x", 1).unwrap_err().code,
                Code::WrongType
            );
            assert_eq!(
                svc.hsetnx(b"board", b"x", b"v").unwrap_err().code,
                Code::WrongType
            );
        }
        // Replayed from the log: the results, not the increments.
        let svc = open(&dir, clock.clone());
        assert_eq!(svc.hget(b"h", b"n").unwrap(), Some(b"-2".to_vec()));
        assert_eq!(svc.hget(b"h", b"s").unwrap(), Some(b"first".to_vec()));
        assert_eq!(
            svc.hget(b"none", b"x").unwrap(),
            Some(i64::MAX.to_string().into_bytes())
        );
        assert_eq!(svc.hget(b"z", b"x").unwrap(), Some(b"1".to_vec()));
        drop(svc);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_scan_returns_every_key_present_throughout() {
        let svc = Service::in_memory();
        for i in 0..100 {
            svc.hset(format!("k{i}").as_bytes(), &[(b"f", b"v")])
                .unwrap();
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = 0;
        let mut removed = 0;
        loop {
            let (next, page) = svc.scan(cursor, None, 7, None);
            seen.extend(page);
            // Keys go away (the first ones visited) and come, between pages.
            if removed < 50 {
                let first = seen.iter().next().cloned().unwrap();
                svc.del(&[&first]).unwrap();
                removed += 1;
            }
            svc.hset(format!("new{cursor}").as_bytes(), &[(b"f", b"v")])
                .unwrap();
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..100 {
            let k = format!("k{i}").into_bytes();
            assert!(
                seen.contains(&k) || svc.exists(&[&k]) == 0,
                "k{i} was there throughout and not returned"
            );
        }
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
            svc.zadd(
                b"z",
                vec![rec("a", 1.0), rec("b", 2.0)],
                ZaddOpts::default(),
            )
            .unwrap();
            svc.hset(b"h", &[(b"f", b"v"), (b"g", b"w")]).unwrap();
            assert_eq!(svc.key_type(b"z"), Some(KeyType::Zset));
            assert_eq!(svc.key_type(b"h"), Some(KeyType::Hash));
            assert_eq!(
                svc.hset(b"z", &[(b"f", b"v")]).unwrap_err().code,
                Code::WrongType
            );
            assert_eq!(
                svc.zadd(b"h", vec![rec("a", 1.0)], ZaddOpts::default())
                    .unwrap_err()
                    .error
                    .code,
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
            svc.zadd(b"gone", vec![rec("x", 1.0)], ZaddOpts::default())
                .unwrap();
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

    /// Every key deleted for its expiry reaches the sink once, as stored,
    /// whether a read found it or the sweep did; a deletion by a command
    /// does not.
    #[test]
    fn expired_keys_are_reported_to_the_sink() {
        #[derive(Default)]
        struct Heard(parking_lot::Mutex<Vec<Vec<u8>>>);
        impl podium_core::keystore::ExpirySink for Heard {
            fn expired(&self, stored: &[u8]) {
                self.0.lock().push(stored.to_vec());
            }
        }
        let clock = Arc::new(ManualClock::new(
            chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        ));
        let svc = Service::in_memory().with_clock(clock.clone());
        use podium_core::keystore::KeyStore as _;
        let heard = Arc::new(Heard::default());
        svc.set_expiry_sink(Some(heard.clone()));
        let now = svc.now_ms();
        for key in [&b"a"[..], b"b", b"\x01\x03c", b"d"] {
            svc.hset(key, &[(b"f", b"v")]).unwrap();
            svc.expire_at_ms(key, now + 1_000, ExpireCond::Always)
                .unwrap();
        }
        svc.del(&[b"d"]).unwrap();
        clock.advance(chrono::Duration::seconds(2));
        assert_eq!(svc.key_type(b"a"), None);
        assert_eq!(heard.0.lock().clone(), vec![b"a".to_vec()]);
        assert_eq!(svc.sweep_expired(), 2);
        let mut all = heard.0.lock().clone();
        all.sort();
        assert_eq!(
            all,
            vec![b"\x01\x03c".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
        // EXPIRE to a time past deletes as the command's own doing.
        svc.hset(b"e", &[(b"f", b"v")]).unwrap();
        svc.expire_at_ms(b"e", now, ExpireCond::Always).unwrap();
        assert_eq!(svc.key_type(b"e"), None);
        assert_eq!(heard.0.lock().len(), 3);
    }

    #[test]
    fn atomically_excludes_other_writers_and_nests_service_calls() {
        let svc = Arc::new(Service::in_memory());
        svc.atomically(Writes::Any, || {
            svc.zadd(b"z", vec![rec("a", 1.0)], ZaddOpts::default())
                .unwrap();
            svc.del(&[b"z"]).unwrap();
            svc.zadd(b"z", vec![rec("b", 1.0)], ZaddOpts::default())
                .unwrap();
        });
        assert_eq!(svc.zread(b"z", |b| b.len()).unwrap(), Some(1));
        // Another thread's write waits for the transaction to end.
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = svc.clone();
        svc.atomically(Writes::Any, || {
            let h = std::thread::spawn(move || {
                s2.zadd(b"z", vec![rec("c", 1.0)], ZaddOpts::default())
                    .unwrap();
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

    /// Whether `f` finishes on another thread while a transaction that may
    /// change `writes` runs.
    fn runs_during(svc: &Arc<Service>, writes: Writes, f: fn(&Service)) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = svc.clone();
        let (ran, h) = svc.atomically(writes, || {
            let h = std::thread::spawn(move || {
                f(&s2);
                tx.send(()).unwrap();
            });
            let ran = rx
                .recv_timeout(std::time::Duration::from_millis(300))
                .is_ok();
            (ran, h)
        });
        h.join().unwrap();
        ran
    }

    #[test]
    fn reads_of_keys_a_transaction_does_not_change_run_beside_it() {
        let svc = Arc::new(Service::in_memory());
        for k in [&b"a"[..], b"b"] {
            svc.zadd(k, vec![rec("m", 1.0)], ZaddOpts::default())
                .unwrap();
        }
        svc.hset(b"h", &[(b"f", b"v")]).unwrap();
        let reads_b = |s: &Service| {
            assert_eq!(s.zread(b"b", |b| b.len()).unwrap(), Some(1));
            assert_eq!(s.key_type(b"h"), Some(KeyType::Hash));
            assert_eq!(s.hget(b"h", b"f").unwrap(), Some(b"v".to_vec()));
        };
        assert!(runs_during(&svc, Writes::key(b"a"), reads_b));
        assert!(!runs_during(&svc, Writes::key(b"b"), |s| {
            s.zread(b"b", |b| b.len()).unwrap();
        }));
        assert!(!runs_during(&svc, Writes::Any, |s| {
            s.zread(b"b", |b| b.len()).unwrap();
        }));
        // The whole keyspace waits for a transaction that changes a key,
        // not for one that only reads.
        assert!(!runs_during(&svc, Writes::key(b"a"), |s| {
            s.keys(b"*");
        }));
        assert!(runs_during(&svc, Writes::none(), |s| {
            assert_eq!(s.dbsize(), 3);
        }));
        // Writes wait, whatever the transaction changes.
        assert!(!runs_during(&svc, Writes::none(), |s| {
            s.zadd(b"b", vec![rec("n", 1.0)], ZaddOpts::default())
                .unwrap();
        }));
    }
}
