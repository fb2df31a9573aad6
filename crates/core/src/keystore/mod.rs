//! The Redis data model an engine serves in process, as the Redis
//! protocol frontend calls it: [`KeyStore`], with the plain types its
//! commands take and answer (key types, EXPIRE's conditions, log
//! positions) and Redis's glob patterns.
//!
//! Sorted-set keys are boards; hashes and key expiry sit beside them in the
//! same store. Every method is synchronous and returns the log position
//! ([`Lsn`]) its write must wait for, so a connection runs a whole
//! pipeline batch — or a MULTI/EXEC queue inside
//! [`KeyStore::run_atomically`] — and waits once for one durable commit
//! ([`KeyStore::wait_durable`]).

mod cursor;
mod glob;
mod waiters;

use std::collections::HashSet;

use async_trait::async_trait;
use podium_engine::{Aggregate, Board, Entry, ScoreRange, SubmitResult};

use crate::entry::SubmitRec;
use crate::error::ApiError;

pub use cursor::{scan_order, scan_page};
pub use glob::glob_match;
pub use waiters::{Waiter, Waiters};

/// Redis's `string2ll`: an optional `-`, then digits without a leading zero
/// (or just `0`), at most 20 bytes, no overflow.
pub fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

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

impl ExpireCond {
    /// Whether an expiry at `at_ms` may replace `current`.
    pub fn allows(self, current: Option<i64>, at_ms: i64) -> bool {
        match self {
            ExpireCond::Always => true,
            ExpireCond::Nx => current.is_none(),
            ExpireCond::Xx => current.is_some(),
            ExpireCond::Gt => current.is_some_and(|c| at_ms > c),
            ExpireCond::Lt => current.is_none_or(|c| at_ms < c),
        }
    }
}

/// The keys a transaction may change ([`KeyStore::run_atomically`]):
/// other clients' reads of every other key run beside it instead of
/// waiting for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    /// Possibly any key (FLUSHALL, or not known): every read waits.
    Any,
    /// Only these; none for a transaction that only reads.
    Keys(HashSet<Vec<u8>>),
}

impl Writes {
    /// A transaction that changes nothing.
    pub fn none() -> Writes {
        Writes::Keys(HashSet::new())
    }

    /// A transaction that may change `key` only.
    pub fn key(key: &[u8]) -> Writes {
        Writes::Keys(HashSet::from([key.to_vec()]))
    }

    /// Adds `key` to what may change.
    pub fn add(&mut self, key: &[u8]) {
        if let Writes::Keys(keys) = self {
            keys.insert(key.to_vec());
        }
    }

    /// Whether `key` may change.
    pub fn may_change(&self, key: &[u8]) -> bool {
        match self {
            Writes::Any => true,
            Writes::Keys(keys) => keys.contains(key),
        }
    }

    /// Whether any key may change (a read of the whole keyspace waits).
    pub fn changes_some(&self) -> bool {
        match self {
            Writes::Any => true,
            Writes::Keys(keys) => !keys.is_empty(),
        }
    }
}

/// What OBJECT and MEMORY USAGE report of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInfo {
    pub ty: KeyType,
    /// Members or fields.
    pub len: usize,
    /// Small enough that Redis would keep it compact (a listpack): at most
    /// 128 members or 512 fields, none (and no hash value) over 64 bytes.
    pub compact: bool,
    /// podium's estimate of the bytes the key and its value hold.
    pub bytes: u64,
}

/// What INFO's persistence section reports of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Persistence {
    /// How many times the log was synced (0 without a log).
    pub log_fsyncs: u64,
    /// A snapshot is being written (it rotates the log, as an AOF
    /// rewrite does).
    pub snapshot_in_progress: bool,
}

/// The Redis data model: sorted sets (boards), hashes and key expiry in
/// one namespace. Redis's semantics are the implementation's: an empty
/// board is no key, an emptied hash is deleted, an expired key is gone on
/// first access, a command on a key of the other type is `WrongType`.
///
/// Object safe; the generic forms of [`KeyStore::zvisit`] and
/// [`KeyStore::run_atomically`] are `zread` and `atomically` on
/// `dyn KeyStore`.
#[async_trait]
pub trait KeyStore: Send + Sync {
    // --------------------------------------------------------- sorted sets

    /// Runs `f` on the board `key` if it exists and has members (else
    /// `f` is not called).
    fn zvisit(&self, key: &[u8], f: &mut dyn FnMut(&Board)) -> Result<(), ApiError>;

    /// ZADD / ZINCRBY: the entries in order, each with its own result. The
    /// caller sets each entry's `op` (Redis always sets or increments,
    /// whatever the board's `update`).
    fn zadd(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Lsn), ApiError>;

    /// ZREM: how many members were removed.
    fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<(u64, Lsn), ApiError>;

    /// Removes board positions `lo..hi` (0-based, half-open, best first).
    fn zrem_positions(&self, key: &[u8], lo: u64, hi: u64) -> Result<(u64, Lsn), ApiError>;

    /// ZREMRANGEBYSCORE.
    fn zrem_score_range(&self, key: &[u8], range: ScoreRange) -> Result<(u64, Lsn), ApiError>;

    /// ZPOPMIN / ZPOPMAX: up to `count` entries from the best end, or the
    /// worst end with `worst`.
    fn zpop(&self, key: &[u8], count: u64, worst: bool) -> Result<(Vec<Entry>, Lsn), ApiError>;

    /// ZUNIONSTORE / ZINTERSTORE: `dest` becomes the aggregate of the
    /// weighted sources; an empty result deletes it. Returns its size.
    fn zstore(
        &self,
        dest: &[u8],
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<(u64, Lsn), ApiError>;

    // ---------------------------------------------------------------- keys

    /// The key's type (`None`: no such key).
    fn key_type(&self, key: &[u8]) -> Option<KeyType>;

    /// Whether `key` names a board, empty or not (an empty board is no
    /// key, but deleting the key drops its config).
    fn names_board(&self, key: &[u8]) -> bool;

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    fn exists(&self, keys: &[&[u8]]) -> u64;

    /// DEL / UNLINK: how many keys existed.
    fn del(&self, keys: &[&[u8]]) -> Result<(u64, Lsn), ApiError>;

    /// KEYS pattern (Redis glob).
    fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>>;

    /// SCAN: the next cursor and the page's keys; `count` is how many keys
    /// to visit, matching or not.
    fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        ty: Option<KeyType>,
    ) -> (u64, Vec<Vec<u8>>);

    /// DBSIZE.
    fn dbsize(&self) -> u64;

    /// FLUSHALL / FLUSHDB: every board, hash and expiry.
    fn flushall(&self) -> Result<Lsn, ApiError>;

    /// EXPIREAT in ms; a time not in the future deletes the key now.
    /// Whether the expiry was set (or the key deleted).
    fn expire_at_ms(
        &self,
        key: &[u8],
        at_ms: i64,
        cond: ExpireCond,
    ) -> Result<(bool, Lsn), ApiError>;

    /// PERSIST: whether an expiry was removed.
    fn persist(&self, key: &[u8]) -> Result<(bool, Lsn), ApiError>;

    /// PTTL: -2 no such key, -1 no expiry, else milliseconds left.
    fn pttl(&self, key: &[u8]) -> i64;

    /// PEXPIRETIME: -2 no such key, -1 no expiry, else the expiry in ms
    /// since the epoch.
    fn expire_time_ms(&self, key: &[u8]) -> i64;

    /// RANDOMKEY: any key (`None`: there is none).
    fn random_key(&self) -> Option<Vec<u8>>;

    /// RENAME / RENAMENX: moves `src` with its expiry to `dst`, replacing
    /// whatever `dst` holds (with `nx`, only if `dst` does not exist).
    /// `None`: no key `src`; `Some(false)`: not moved (`nx`, or `src` is
    /// `dst` with `nx`).
    fn rename(&self, src: &[u8], dst: &[u8], nx: bool) -> Result<(Option<bool>, Lsn), ApiError>;

    /// COPY: a copy of `src` with its expiry as `dst` (`replace`: even if
    /// `dst` exists). Whether it was copied.
    fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> Result<(bool, Lsn), ApiError>;

    /// OBJECT / MEMORY USAGE (`None`: no such key).
    fn key_info(&self, key: &[u8]) -> Option<KeyInfo>;

    /// Milliseconds since the epoch by the store's clock (the one expiry
    /// follows).
    fn now_ms(&self) -> i64;

    /// How many keys have an expiry (INFO's `expires`).
    fn expiring_keys(&self) -> usize;

    // -------------------------------------------------------------- hashes

    /// HSET / HMSET: how many fields were added (not updated).
    fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<(u64, Lsn), ApiError>;

    /// HDEL: how many fields were removed; an emptied hash is deleted.
    fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(u64, Lsn), ApiError>;

    fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ApiError>;

    fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, ApiError>;

    /// HGETALL (in no particular order, as Redis's hash tables).
    fn hgetall(&self, key: &[u8]) -> Result<Fields, ApiError>;

    fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool, ApiError>;

    fn hlen(&self, key: &[u8]) -> Result<u64, ApiError>;

    /// HSETNX: whether `field` was absent, and so set.
    fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<(bool, Lsn), ApiError>;

    /// HINCRBY: the field's value after adding `by` (an absent field is
    /// 0); refused when the value is not an integer or the sum overflows.
    fn hincrby(&self, key: &[u8], field: &[u8], by: i64) -> Result<(i64, Lsn), ApiError>;

    /// HRANDFIELD with a count: that many distinct fields (all of them
    /// when there are no more), or for a negative count that many picks
    /// that may repeat; values are empty unless `values`. `None`: no such
    /// key.
    fn hrandfield(&self, key: &[u8], count: i64, values: bool) -> Result<Option<Fields>, ApiError>;

    /// HSCAN: the next cursor (0: done) and the page's fields and values.
    fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Fields), ApiError>;

    // ---------------------------------------------------------- durability

    /// Runs `f` with every other client's writes excluded, and their
    /// reads of the keys in `writes` (Redis MULTI/EXEC: no other client
    /// sees a half-done transaction; reads of other keys run beside it).
    /// Calls of this store inside `f` run within it, and must change only
    /// keys in `writes`. `f` must not await: the exclusion is per thread.
    fn run_atomically(&self, writes: Writes, f: &mut dyn FnMut());

    /// Waits until log position `lsn` is durable (per the fsync policy).
    async fn wait_durable(&self, lsn: Lsn) -> Result<(), ApiError>;

    /// INFO's persistence figures.
    fn persistence(&self) -> Persistence;

    // ------------------------------------------------------------ blocking

    /// The clients blocked on keys (BZPOPMIN…): every write that adds
    /// members to a key signals it here, whichever frontend made it.
    fn waiters(&self) -> &std::sync::Arc<Waiters>;
}

/// The generic forms of the closure-taking methods, as callers write them.
impl dyn KeyStore + '_ {
    /// Runs a read on the board `key` (`None`: no such key, or empty).
    pub fn zread<R>(&self, key: &[u8], f: impl FnOnce(&Board) -> R) -> Result<Option<R>, ApiError> {
        let mut f = Some(f);
        let mut out = None;
        self.zvisit(key, &mut |b| {
            if let Some(f) = f.take() {
                out = Some(f(b));
            }
        })?;
        Ok(out)
    }

    /// [`KeyStore::run_atomically`] of a closure with a result.
    pub fn atomically<R>(&self, writes: Writes, f: impl FnOnce() -> R) -> R {
        let mut f = Some(f);
        let mut out = None;
        self.run_atomically(writes, &mut || {
            if let Some(f) = f.take() {
                out = Some(f());
            }
        });
        out.expect("run_atomically runs its closure")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string2ll_is_strict() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"00",
            b"+1",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1.0",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
