//! Redis's numbered databases over one keyspace: the reversible key
//! encoding that gives each database its own namespace ([`encode`],
//! [`decode`]), and [`Database`], the [`KeyStore`] of one database.
//!
//! A key of database 0 is itself unless it starts with [`MARK`]; every
//! other key is `MARK, db, key`. So database 0 — all that HTTP, RPC and
//! search see — keeps its keys' names, and no two keys of any databases
//! share a name. The store knows nothing of databases: the commands over
//! the whole keyspace take the database as a predicate over stored names
//! ([`KeyStore::dbsize_where`] and its kin), and MOVE and SWAPDB are
//! renames ([`KeyStore::rename_nx`], [`KeyStore::rename_where`]).

use std::borrow::Cow;

use async_trait::async_trait;
use podium_engine::{Aggregate, Board, Entry, ScoreRange, SubmitResult};

use super::{
    scan_page, ExpireCond, Fields, GetExpiry, KeyStats, KeyStore, KeyType, LongDouble, Lsn,
    Persistence, Scored, SetDone, SetOp, SetOpts, Writes,
};
use crate::entry::SubmitRec;
use crate::error::ApiError;

/// How many databases there are (SELECT 0 to 15, as Redis's default).
pub const DATABASES: u8 = 16;

/// The first byte of every stored name that is not a plain key of
/// database 0.
pub const MARK: u8 = 0x01;

/// The stored name of `key` in database `db`: borrowed for a key of
/// database 0 that does not start with [`MARK`], so the common case
/// allocates nothing.
pub fn encode(db: u8, key: &[u8]) -> Cow<'_, [u8]> {
    if db == 0 && key.first() != Some(&MARK) {
        return Cow::Borrowed(key);
    }
    let mut v = Vec::with_capacity(key.len() + 2);
    v.push(MARK);
    v.push(db);
    v.extend_from_slice(key);
    Cow::Owned(v)
}

/// The database and key of a stored name (`None`: a name no database
/// holds, which [`encode`] never makes).
pub fn decode(name: &[u8]) -> Option<(u8, &[u8])> {
    match name {
        [MARK, db, key @ ..] if *db < DATABASES => Some((*db, key)),
        [MARK, ..] => None,
        key => Some((0, key)),
    }
}

/// Whether stored `name` is a key of database `db`.
pub fn in_db(db: u8, name: &[u8]) -> bool {
    decode(name).is_some_and(|(d, _)| d == db)
}

/// Parses SELECT's, MOVE's and SWAPDB's database index as Redis does
/// (`getIntFromObjectOrReply` then the range check): the error text
/// without its `ERR ` code.
pub fn parse_index(arg: &[u8]) -> Result<u8, &'static str> {
    let i = super::string2ll(arg).ok_or("value is not an integer or out of range")?;
    if i32::try_from(i).is_err() {
        return Err("value is out of range, value must between -2147483648 and 2147483647");
    }
    u8::try_from(i)
        .ok()
        .filter(|i| *i < DATABASES)
        .ok_or("DB index is out of range")
}

/// One database of a store: every key it is given is encoded, every key
/// it returns decoded, and the commands over the whole keyspace see only
/// this database's keys. FLUSHALL still empties every database.
pub struct Database {
    inner: std::sync::Arc<dyn KeyStore>,
    db: u8,
}

impl Database {
    pub fn new(inner: std::sync::Arc<dyn KeyStore>, db: u8) -> Database {
        debug_assert!(db < DATABASES);
        Database { inner, db }
    }

    /// The store of every database (database 0's names unencoded).
    pub fn root(&self) -> std::sync::Arc<dyn KeyStore> {
        self.inner.clone()
    }

    /// Which database this is.
    pub fn index(&self) -> u8 {
        self.db
    }

    /// The store of every database.
    pub fn store(&self) -> &std::sync::Arc<dyn KeyStore> {
        &self.inner
    }

    /// MOVE: the key to database `db` unless a key of that name is there
    /// already; whether it moved.
    pub fn move_key(&self, key: &[u8], db: u8) -> Result<(bool, Lsn), ApiError> {
        self.inner.rename_nx(&self.enc(key), &encode(db, key))
    }

    /// COPY … DB: a copy of `src` as `dst` of database `db`.
    pub fn copy_to(
        &self,
        src: &[u8],
        dst: &[u8],
        db: u8,
        replace: bool,
    ) -> Result<(bool, Lsn), ApiError> {
        self.inner.copy(&self.enc(src), &encode(db, dst), replace)
    }

    /// SWAPDB: databases `a` and `b` trade their keys.
    pub fn swap_db(&self, a: u8, b: u8) -> Result<Lsn, ApiError> {
        self.inner.rename_where(&|n| match decode(n) {
            Some((d, k)) if d == a && a != b => Some(encode(b, k).into_owned()),
            Some((d, k)) if d == b && a != b => Some(encode(a, k).into_owned()),
            _ => None,
        })
    }

    fn enc<'a>(&self, key: &'a [u8]) -> Cow<'a, [u8]> {
        encode(self.db, key)
    }

    /// Whether `keys` are stored under their own names (database 0, none
    /// starting with [`MARK`]): then they are passed on as they are.
    fn plain(&self, keys: impl IntoIterator<Item = impl AsRef<[u8]>>) -> bool {
        self.db == 0 && keys.into_iter().all(|k| k.as_ref().first() != Some(&MARK))
    }

    fn with_keys<R>(&self, keys: &[&[u8]], f: impl FnOnce(&[&[u8]]) -> R) -> R {
        if self.plain(keys) {
            return f(keys);
        }
        let enc: Vec<Cow<[u8]>> = keys.iter().map(|k| self.enc(k)).collect();
        let refs: Vec<&[u8]> = enc.iter().map(|k| &k[..]).collect();
        f(&refs)
    }

    fn with_sources<R>(&self, sources: &[(&[u8], f64)], f: impl FnOnce(&[(&[u8], f64)]) -> R) -> R {
        if self.plain(sources.iter().map(|s| s.0)) {
            return f(sources);
        }
        let enc: Vec<(Cow<[u8]>, f64)> = sources.iter().map(|(k, w)| (self.enc(k), *w)).collect();
        let refs: Vec<(&[u8], f64)> = enc.iter().map(|(k, w)| (&k[..], *w)).collect();
        f(&refs)
    }

    fn with_pairs<R>(&self, pairs: &[(&[u8], &[u8])], f: impl FnOnce(&[(&[u8], &[u8])]) -> R) -> R {
        if self.plain(pairs.iter().map(|p| p.0)) {
            return f(pairs);
        }
        let enc: Vec<(Cow<[u8]>, &[u8])> = pairs.iter().map(|(k, v)| (self.enc(k), *v)).collect();
        let refs: Vec<(&[u8], &[u8])> = enc.iter().map(|(k, v)| (&k[..], *v)).collect();
        f(&refs)
    }

    fn within(&self) -> impl Fn(&[u8]) -> bool {
        let db = self.db;
        move |name| in_db(db, name)
    }

    /// This database's keys among stored `names`, decoded.
    fn own(&self, names: Vec<Vec<u8>>) -> impl Iterator<Item = Vec<u8>> + '_ {
        names.into_iter().filter_map(move |mut n| match decode(&n) {
            Some((d, k)) if d == self.db => {
                let skip = n.len() - k.len();
                n.drain(..skip);
                Some(n)
            }
            _ => None,
        })
    }
}

#[async_trait]
impl KeyStore for Database {
    fn zvisit(&self, key: &[u8], f: &mut dyn FnMut(&Board)) -> Result<(), ApiError> {
        self.inner.zvisit(&self.enc(key), f)
    }

    fn zadd(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Lsn), ApiError> {
        self.inner.zadd(&self.enc(key), entries)
    }

    fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.inner.zrem(&self.enc(key), members)
    }

    fn zrem_positions(&self, key: &[u8], lo: u64, hi: u64) -> Result<(u64, Lsn), ApiError> {
        self.inner.zrem_positions(&self.enc(key), lo, hi)
    }

    fn zrem_score_range(&self, key: &[u8], range: ScoreRange) -> Result<(u64, Lsn), ApiError> {
        self.inner.zrem_score_range(&self.enc(key), range)
    }

    fn zpop(&self, key: &[u8], count: u64, worst: bool) -> Result<(Vec<Entry>, Lsn), ApiError> {
        self.inner.zpop(&self.enc(key), count, worst)
    }

    fn zstore(
        &self,
        dest: &[u8],
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<(u64, Lsn), ApiError> {
        let dest = self.enc(dest);
        self.with_sources(sources, |s| self.inner.zstore(&dest, s, agg, intersect))
    }

    fn zalgebra(
        &self,
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        op: SetOp,
    ) -> Result<Scored, ApiError> {
        self.with_sources(sources, |s| self.inner.zalgebra(s, agg, op))
    }

    fn zintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64, ApiError> {
        self.with_keys(keys, |k| self.inner.zintercard(k, limit))
    }

    fn zreplace(&self, dest: &[u8], entries: Scored) -> Result<(u64, Lsn), ApiError> {
        self.inner.zreplace(&self.enc(dest), entries)
    }

    fn key_type(&self, key: &[u8]) -> Option<KeyType> {
        self.inner.key_type(&self.enc(key))
    }

    fn names_board(&self, key: &[u8]) -> bool {
        self.inner.names_board(&self.enc(key))
    }

    fn exists(&self, keys: &[&[u8]]) -> u64 {
        self.with_keys(keys, |k| self.inner.exists(k))
    }

    fn del(&self, keys: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.with_keys(keys, |k| self.inner.del(k))
    }

    fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        // The mark and the index are no glob characters, so a pattern
        // behind them matches stored names exactly as it matches keys.
        let mut prefixed = vec![MARK, self.db];
        prefixed.extend_from_slice(pattern);
        let mut out: Vec<Vec<u8>> = self.own(self.inner.keys(&prefixed)).collect();
        if self.db == 0 {
            out.extend(
                self.inner
                    .keys(pattern)
                    .into_iter()
                    .filter(|k| k.first() != Some(&MARK)),
            );
            out.sort();
        }
        out
    }

    fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        ty: Option<KeyType>,
    ) -> (u64, Vec<Vec<u8>>) {
        // Pages of this database's keys alone: COUNT counts only them, and
        // the cursor is the place of a key's own name, so database 0 pages
        // as it did before there were others.
        let (next, mut page) = scan_page(self.keys(b"*"), |k| k, cursor, count);
        page.retain(|k| {
            pattern.is_none_or(|p| super::glob_match(p, k))
                && ty.is_none_or(|t| self.key_type(k) == Some(t))
        });
        (next, page)
    }

    fn dbsize(&self) -> u64 {
        self.inner.dbsize_where(&self.within())
    }

    fn flushall(&self) -> Result<Lsn, ApiError> {
        self.inner.flushall()
    }

    fn flushdb(&self) -> Result<Lsn, ApiError> {
        self.inner.flush_where(&self.within())
    }

    fn expire_at_ms(
        &self,
        key: &[u8],
        at_ms: i64,
        cond: ExpireCond,
    ) -> Result<(bool, Lsn), ApiError> {
        self.inner.expire_at_ms(&self.enc(key), at_ms, cond)
    }

    fn persist(&self, key: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.inner.persist(&self.enc(key))
    }

    fn pttl(&self, key: &[u8]) -> i64 {
        self.inner.pttl(&self.enc(key))
    }

    fn expire_time_ms(&self, key: &[u8]) -> i64 {
        self.inner.expire_time_ms(&self.enc(key))
    }

    fn random_key(&self) -> Option<Vec<u8>> {
        if self.db == 0 {
            // Mostly database 0 is the only one: one pick, no listing.
            match self.inner.random_key() {
                None => return None,
                Some(k) if k.first() != Some(&MARK) => return Some(k),
                Some(_) => {}
            }
        }
        use rand_pick::pick;
        pick(self.keys(b"*"))
    }

    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    fn expiring_keys(&self) -> usize {
        self.inner.expiring_where(&self.within()).0
    }

    fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<(u64, Lsn), ApiError> {
        self.inner.hset(&self.enc(key), pairs)
    }

    fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        self.inner.hdel(&self.enc(key), fields)
    }

    fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        self.inner.hget(&self.enc(key), field)
    }

    fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, ApiError> {
        self.inner.hmget(&self.enc(key), fields)
    }

    fn hgetall(&self, key: &[u8]) -> Result<Fields, ApiError> {
        self.inner.hgetall(&self.enc(key))
    }

    fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool, ApiError> {
        self.inner.hexists(&self.enc(key), field)
    }

    fn hlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        self.inner.hlen(&self.enc(key))
    }

    fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.inner.hsetnx(&self.enc(key), field, value)
    }

    fn hincrby(&self, key: &[u8], field: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        self.inner.hincrby(&self.enc(key), field, by)
    }

    fn hrandfield(&self, key: &[u8], count: i64, values: bool) -> Result<Option<Fields>, ApiError> {
        self.inner.hrandfield(&self.enc(key), count, values)
    }

    fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Fields), ApiError> {
        self.inner.hscan(&self.enc(key), cursor, pattern, count)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        self.inner.get(&self.enc(key))
    }

    fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        self.with_keys(keys, |k| self.inner.mget(k))
    }

    fn set(&self, key: &[u8], value: &[u8], opts: SetOpts) -> Result<(SetDone, Lsn), ApiError> {
        self.inner.set(&self.enc(key), value, opts)
    }

    fn mset(&self, pairs: &[(&[u8], &[u8])], nx: bool) -> Result<(bool, Lsn), ApiError> {
        self.with_pairs(pairs, |p| self.inner.mset(p, nx))
    }

    fn getdel(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        self.inner.getdel(&self.enc(key))
    }

    fn getex(&self, key: &[u8], expiry: GetExpiry) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        self.inner.getex(&self.enc(key), expiry)
    }

    fn incrby(&self, key: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        self.inner.incrby(&self.enc(key), by)
    }

    fn incrbyfloat(&self, key: &[u8], by: &[u8]) -> Result<(Vec<u8>, Lsn), ApiError> {
        self.inner.incrbyfloat(&self.enc(key), by)
    }

    fn append(&self, key: &[u8], value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        self.inner.append(&self.enc(key), value)
    }

    fn setrange(&self, key: &[u8], offset: u64, value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        self.inner.setrange(&self.enc(key), offset, value)
    }

    fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>, ApiError> {
        self.inner.getrange(&self.enc(key), start, end)
    }

    fn strlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        self.inner.strlen(&self.enc(key))
    }

    fn rename(&self, src: &[u8], dst: &[u8], nx: bool) -> Result<(Option<bool>, Lsn), ApiError> {
        self.inner.rename(&self.enc(src), &self.enc(dst), nx)
    }

    fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> Result<(bool, Lsn), ApiError> {
        self.inner.copy(&self.enc(src), &self.enc(dst), replace)
    }

    fn key_info(&self, key: &[u8]) -> Option<super::KeyInfo> {
        self.inner.key_info(&self.enc(key))
    }

    fn waiters(&self) -> &std::sync::Arc<super::Waiters> {
        self.inner.waiters()
    }

    fn set_expiry_sink(&self, sink: Option<std::sync::Arc<dyn super::ExpirySink>>) {
        self.inner.set_expiry_sink(sink)
    }

    /// Board names here are database 0's whatever the database selected:
    /// Pub/Sub channels belong to no database.
    fn subscribe_events(
        &self,
        req: &crate::ops::Subscribe,
    ) -> Result<crate::events::Subscription, ApiError> {
        self.inner.subscribe_events(req)
    }

    fn stored_key<'a>(&self, key: &'a [u8]) -> Cow<'a, [u8]> {
        self.enc(key)
    }

    fn user_key<'a>(&self, stored: &'a [u8]) -> Option<&'a [u8]> {
        decode(stored).and_then(|(db, key)| (db == self.db).then_some(key))
    }

    fn lcs(&self, key1: &[u8], key2: &[u8]) -> Result<super::Lcs, ApiError> {
        self.inner.lcs(&self.enc(key1), &self.enc(key2))
    }

    fn hincrbyfloat(
        &self,
        key: &[u8],
        field: &[u8],
        by: LongDouble,
    ) -> Result<(Vec<u8>, Lsn), ApiError> {
        self.inner.hincrbyfloat(&self.enc(key), field, by)
    }

    fn run_atomically(&self, writes: Writes, f: &mut dyn FnMut()) {
        let writes = match writes {
            Writes::Keys(keys) if !self.plain(&keys) => {
                Writes::Keys(keys.iter().map(|k| self.enc(k).into_owned()).collect())
            }
            w => w,
        };
        self.inner.run_atomically(writes, f)
    }

    async fn wait_durable(&self, lsn: Lsn) -> Result<(), ApiError> {
        self.inner.wait_durable(lsn).await
    }

    fn persistence(&self) -> Persistence {
        self.inner.persistence()
    }

    fn memory_use(&self) -> crate::memory::MemoryUse {
        self.inner.memory_use()
    }

    fn save(&self) -> Result<bool, ApiError> {
        self.inner.save()
    }

    fn last_save(&self) -> i64 {
        self.inner.last_save()
    }

    fn key_stats(&self) -> KeyStats {
        self.inner.key_stats()
    }

    fn reset_key_stats(&self) {
        self.inner.reset_key_stats()
    }

    fn avg_ttl_ms(&self) -> i64 {
        self.inner.expiring_where(&self.within()).1
    }

    fn rename_nx(&self, from: &[u8], to: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.inner.rename_nx(&self.enc(from), &self.enc(to))
    }

    fn rename_where(&self, rename: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Result<Lsn, ApiError> {
        self.inner.rename_where(&|n| match decode(n) {
            Some((d, k)) if d == self.db => rename(k).map(|to| encode(self.db, &to).into_owned()),
            _ => None,
        })
    }
}

/// A uniform pick among keys.
mod rand_pick {
    /// Any one of `keys` (`None`: there are none), by a clock-seeded
    /// index: RANDOMKEY needs no better randomness than Redis's `rand()`.
    pub fn pick(mut keys: Vec<Vec<u8>>) -> Option<Vec<u8>> {
        if keys.is_empty() {
            return None;
        }
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(keys.len());
        let i = (h.finish() % keys.len() as u64) as usize;
        Some(keys.swap_remove(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn database_0_keys_are_their_own_names() {
        assert!(matches!(encode(0, b"board"), Cow::Borrowed(b"board")));
        assert_eq!(&encode(0, b"\x01x")[..], b"\x01\x00\x01x");
        assert_eq!(&encode(15, b"board")[..], b"\x01\x0fboard");
        assert_eq!(&encode(3, b"")[..], b"\x01\x03");
        assert_eq!(decode(b"\x01"), None);
        assert_eq!(decode(b"\x01\x10k"), None);
        assert_eq!(decode(b""), Some((0, &b""[..])));
    }

    #[test]
    fn indexes_are_checked_as_redis_does() {
        assert_eq!(parse_index(b"0"), Ok(0));
        assert_eq!(parse_index(b"15"), Ok(15));
        assert_eq!(parse_index(b"16"), Err("DB index is out of range"));
        assert_eq!(parse_index(b"-1"), Err("DB index is out of range"));
        assert_eq!(parse_index(b"2147483647"), Err("DB index is out of range"));
        assert_eq!(
            parse_index(b"-2147483649"),
            Err("value is out of range, value must between -2147483648 and 2147483647")
        );
        for bad in [
            &b"99999999999999999999"[..],
            b"x",
            b"1.0",
            b"",
            b" 1",
            b"01",
        ] {
            assert_eq!(
                parse_index(bad),
                Err("value is not an integer or out of range")
            );
        }
    }

    proptest! {
        #[test]
        fn the_encoding_is_a_bijection(
            db1 in 0u8..DATABASES,
            db2 in 0u8..DATABASES,
            k1 in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..6),
            k2 in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..6),
        ) {
            let (e1, e2) = (encode(db1, &k1), encode(db2, &k2));
            prop_assert_eq!(decode(&e1), Some((db1, &k1[..])));
            prop_assert_eq!(e1 == e2, (db1, &k1) == (db2, &k2));
            prop_assert!(in_db(db1, &e1));
            prop_assert_eq!(db1 == 0 && k1.first() != Some(&MARK), matches!(e1, Cow::Borrowed(_)));
        }
    }
}
