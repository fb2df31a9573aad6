//! The Redis data model an engine serves in process, as the Redis
//! protocol frontend calls it: [`KeyStore`], with the plain types its
//! commands take and answer (key types, EXPIRE's conditions, log
//! positions) and Redis's glob patterns.
//!
//! Sorted-set keys are boards; hashes, strings and key expiry sit beside
//! them in the same store. Every method is synchronous and returns the log position
//! ([`Lsn`]) its write must wait for, so a connection runs a whole
//! pipeline batch — or a MULTI/EXEC queue inside
//! [`KeyStore::run_atomically`] — and waits once for one durable commit
//! ([`KeyStore::wait_durable`]).

mod cursor;
pub mod database;
mod glob;
mod lcs;
mod lex;
mod longdouble;
pub mod notify;
mod strings;
mod waiters;

use std::collections::HashSet;

use async_trait::async_trait;
use podium_engine::{Aggregate, Board, Entry, ScoreRange, SubmitResult};

use crate::entry::SubmitRec;
use crate::error::ApiError;

pub use cursor::{scan_order, scan_page};
pub use glob::glob_match;
pub use lcs::{lcs, Lcs, LcsRange};
pub use lex::{LexBound, LexRange, RedisView, SMALL_ZSET};
pub use longdouble::LongDouble;
pub use strings::{GetExpiry, SetCond, SetDone, SetExpiry, SetOpts, MAX_STRING_LEN};
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

/// Largest hash Redis keeps compact (`hash-max-listpack-entries`, whose
/// default CONFIG GET reports): HSCAN answers such a hash in one page.
pub const SMALL_HASH: usize = 512;
/// Longest field or value of a compact hash (`hash-max-listpack-value`).
pub const SMALL_HASH_VALUE: usize = 64;

/// A log position to wait for (0: nothing was logged).
pub type Lsn = u64;

/// A hash's fields and values.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Zset,
    Hash,
    String,
}

impl KeyType {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Zset => "zset",
            KeyType::Hash => "hash",
            KeyType::String => "string",
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

/// Told of every key the store deletes because its expiry passed, lazily
/// on access or by the background sweep, whichever protocol's request
/// found it (Redis's `expired` keyspace event). Called with the store's
/// write exclusion held, so it sees expiries in the order they happen; it
/// must not call back into the store.
pub trait ExpirySink: Send + Sync {
    /// `stored` is the key as stored (a Redis database's namespace
    /// included, see [`database::decode`]).
    fn expired(&self, stored: &[u8]);
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
    /// Members, fields, or a string's bytes.
    pub len: usize,
    /// Small enough that Redis would keep it compact: a listpack (at most
    /// 128 members or 512 fields, none and no hash value over 64 bytes),
    /// or a string of at most 44 bytes (embedded in its object).
    pub compact: bool,
    /// The integer Redis would keep a string as (`string2ll` reads it).
    pub int: Option<i64>,
    /// podium's estimate of the bytes the key and its value hold.
    pub bytes: u64,
}

/// The set operation of ZUNION, ZINTER and ZDIFF (and their STORE forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Inter,
    /// The first set's members in none of the others, with its scores.
    Diff,
}

/// Members with their scores, in Redis's order (ascending score, ties by
/// member bytes) where a method says so.
pub type Scored = Vec<(Vec<u8>, f64)>;

/// What INFO's persistence section reports of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Persistence {
    /// How many times the log was synced (0 without a log).
    pub log_fsyncs: u64,
    /// A snapshot is being written (it rotates the log, as an AOF
    /// rewrite does).
    pub snapshot_in_progress: bool,
}

/// INFO's keyspace statistics: lookups by read commands that found their
/// key or not (Redis's `keyspace_hits` / `keyspace_misses`), and keys
/// deleted because their expiry passed (`expired_keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyStats {
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
}

/// The Redis data model: sorted sets (boards), hashes, strings and key
/// expiry in one namespace. Redis's semantics are the implementation's: an empty
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

    /// ZUNION / ZINTER / ZDIFF: the weighted sources combined as Redis
    /// combines them (sources of a union or intersection taken from the
    /// smallest, a weighted NaN counted as 0, `agg` across sources), in
    /// Redis's order. A missing key is an empty set; a hash is WrongType.
    /// Built within the memory budget.
    fn zalgebra(
        &self,
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        op: SetOp,
    ) -> Result<Scored, ApiError>;

    /// ZINTERCARD: how many members are in every one of `keys`, counting
    /// no further than `limit` (0: no limit).
    fn zintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64, ApiError>;

    /// ZDIFFSTORE / ZRANGESTORE: `dest` becomes a sorted set of exactly
    /// `entries` (keeping its config if it is a board already; a hash there
    /// is replaced, an expiry dropped); no entries delete it. Returns its
    /// size.
    fn zreplace(&self, dest: &[u8], entries: Scored) -> Result<(u64, Lsn), ApiError>;

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

    // ------------------------------------------------------------- strings

    /// GET (`None`: no such key).
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ApiError>;

    /// MGET: a key of another type reads as no key.
    fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>>;

    /// SET and its family: a key of any other type is replaced (a board
    /// dropped as DEL drops it), except with [`SetOpts::get`].
    fn set(&self, key: &[u8], value: &[u8], opts: SetOpts) -> Result<(SetDone, Lsn), ApiError>;

    /// MSET, or with `nx` MSETNX (nothing is set when any key exists):
    /// whether the values were set. Each key loses its expiry.
    fn mset(&self, pairs: &[(&[u8], &[u8])], nx: bool) -> Result<(bool, Lsn), ApiError>;

    /// GETDEL: the value, and the key deleted.
    fn getdel(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn), ApiError>;

    /// GETEX: the value, then the expiry changed as `expiry` says.
    fn getex(&self, key: &[u8], expiry: GetExpiry) -> Result<(Option<Vec<u8>>, Lsn), ApiError>;

    /// INCRBY and family: the value after adding `by` (no key is 0);
    /// refused when the value is not an integer or the sum overflows.
    fn incrby(&self, key: &[u8], by: i64) -> Result<(i64, Lsn), ApiError>;

    /// INCRBYFLOAT: the value after adding `by` (the argument, parsed
    /// after the stored value as Redis does), as Redis prints it.
    fn incrbyfloat(&self, key: &[u8], by: &[u8]) -> Result<(Vec<u8>, Lsn), ApiError>;

    /// APPEND: the length after.
    fn append(&self, key: &[u8], value: &[u8]) -> Result<(u64, Lsn), ApiError>;

    /// SETRANGE: the length after (zero bytes fill any gap).
    fn setrange(&self, key: &[u8], offset: u64, value: &[u8]) -> Result<(u64, Lsn), ApiError>;

    /// GETRANGE with Redis's index rules (inclusive, negative from the
    /// end).
    fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>, ApiError>;

    /// STRLEN (0: no such key).
    fn strlen(&self, key: &[u8]) -> Result<u64, ApiError>;

    /// LCS of two string keys (a missing key reads as empty): `WrongType`
    /// when either holds another type, else [`lcs`]'s answer.
    fn lcs(&self, key1: &[u8], key2: &[u8]) -> Result<Lcs, ApiError>;

    /// HINCRBYFLOAT: the field's value after adding `by`, as Redis prints
    /// it.
    fn hincrbyfloat(
        &self,
        key: &[u8],
        field: &[u8],
        by: LongDouble,
    ) -> Result<(Vec<u8>, Lsn), ApiError>;

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

    /// What holds the store's memory, part by part (INFO memory's
    /// breakdown); the process-wide parts are
    /// [`crate::memory::MemoryUse::with_process_parts`]'s.
    fn memory_use(&self) -> crate::memory::MemoryUse;

    // ------------------------------------------------------------ blocking

    /// The clients blocked on keys (BZPOPMIN…): every write that adds
    /// members to a key signals it here, whichever frontend made it.
    fn waiters(&self) -> &std::sync::Arc<Waiters>;

    /// Where expired keys are reported from now on (`None`: nowhere).
    fn set_expiry_sink(&self, sink: Option<std::sync::Arc<dyn ExpirySink>>);

    /// A board's live events (database 0's boards: the names HTTP uses),
    /// for podium's own Redis channels. A store without events refuses.
    fn subscribe_events(
        &self,
        req: &crate::ops::Subscribe,
    ) -> Result<crate::events::Subscription, ApiError> {
        let _ = req;
        Err(ApiError::new(
            crate::error::Code::Unsupported,
            "live events are not available on this store",
        ))
    }

    /// The name under which `key` is stored, which [`Waiters`] are keyed
    /// by (a store that is a namespace of another encodes it).
    fn stored_key<'a>(&self, key: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        std::borrow::Cow::Borrowed(key)
    }

    /// The key a stored name is in this store (`None`: not one of its
    /// keys): the inverse of [`KeyStore::stored_key`].
    fn user_key<'a>(&self, stored: &'a [u8]) -> Option<&'a [u8]> {
        Some(stored)
    }
    /// SAVE / BGSAVE: writes a snapshot now (blocking: BGSAVE runs it on
    /// a thread of its own). `false`: one was already being written.
    fn save(&self) -> Result<bool, ApiError>;

    /// LASTSAVE: when the last snapshot was written, in seconds since the
    /// epoch (the start of the process when none was written since).
    fn last_save(&self) -> i64;

    // -------------------------------------------------------- statistics

    /// INFO's keyspace statistics since the start or the last reset.
    fn key_stats(&self) -> KeyStats;

    /// CONFIG RESETSTAT.
    fn reset_key_stats(&self);

    /// The average time to live of the keys that have one, in ms, from a
    /// sample of them (INFO keyspace's `avg_ttl`; 0: none).
    fn avg_ttl_ms(&self) -> i64;

    // ----------------------------------------------------------- databases
    // Redis's numbered databases are namespaces of stored names
    // ([`database`]); the store sees only names and these predicates.

    /// FLUSHDB: every key of this store's database (of a store that is
    /// one database, every key).
    fn flushdb(&self) -> Result<Lsn, ApiError> {
        self.flushall()
    }

    /// How many keys `within` accepts.
    fn dbsize_where(&self, within: &dyn Fn(&[u8]) -> bool) -> u64 {
        self.keys(b"*").iter().filter(|k| within(k)).count() as u64
    }

    /// How many of the keys `within` accepts have an expiry, and their
    /// average time to live in ms (0: none has one).
    fn expiring_where(&self, within: &dyn Fn(&[u8]) -> bool) -> (usize, i64) {
        let ttls: Vec<i64> = self
            .keys(b"*")
            .iter()
            .filter(|k| within(k))
            .map(|k| self.pttl(k))
            .filter(|t| *t >= 0)
            .collect();
        let avg = match ttls.len() {
            0 => 0,
            n => (ttls.iter().map(|t| i128::from(*t)).sum::<i128>() / n as i128) as i64,
        };
        (ttls.len(), avg)
    }

    /// Deletes every key `within` accepts, as one logged unit.
    fn flush_where(&self, within: &dyn Fn(&[u8]) -> bool) -> Result<Lsn, ApiError> {
        let keys: Vec<Vec<u8>> = self.keys(b"*").into_iter().filter(|k| within(k)).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut out = Ok(0);
        self.run_atomically(Writes::Any, &mut || {
            out = self.del(&refs).map(|(_, lsn)| lsn)
        });
        out
    }

    /// Renames key `from` (with its expiry, a board with its config) to
    /// `to` unless `to` exists or `from` does not; whether it was renamed.
    fn rename_nx(&self, from: &[u8], to: &[u8]) -> Result<(bool, Lsn), ApiError>;

    /// Renames every key `rename` gives a new name, all at once (so names
    /// may be swapped), as one logged unit; a key already at a new name
    /// that is not itself renamed is replaced.
    fn rename_where(&self, rename: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Result<Lsn, ApiError>;
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
