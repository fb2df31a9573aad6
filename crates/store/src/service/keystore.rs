//! The service as the Redis data model of the storage interface
//! ([`KeyStore`]): each method is the service's own (in [`super::keys`]
//! and [`super::zset`]), the closure-taking ones through a `dyn` closure.

use async_trait::async_trait;
use podium_core::error::ApiError;
use podium_core::keystore::{
    ExpireCond, Fields, KeyStats, KeyStore, KeyType, Lsn, Persistence, Scored, SetOp, Writes,
};
use podium_core::keystore::{GetExpiry, LongDouble, SetDone, SetOpts};
use podium_engine::{Aggregate, Board, Entry, ScoreRange, SubmitResult};

use super::{Service, ZaddOpts};
use crate::storage::record::SubmitRec;

#[async_trait]
impl KeyStore for Service {
    fn zvisit(&self, key: &[u8], f: &mut dyn FnMut(&Board)) -> Result<(), ApiError> {
        Service::zread(self, key, f)?;
        Ok(())
    }

    fn zadd(
        &self,
        key: &[u8],
        entries: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Lsn), ApiError> {
        let z = Service::zadd(self, key, entries, ZaddOpts::default())?;
        Ok((z.results, z.lsn))
    }

    fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        Service::zrem(self, key, members)
    }

    fn zrem_positions(&self, key: &[u8], lo: u64, hi: u64) -> Result<(u64, Lsn), ApiError> {
        Service::zrem_positions(self, key, lo, hi)
    }

    fn zrem_score_range(&self, key: &[u8], range: ScoreRange) -> Result<(u64, Lsn), ApiError> {
        Service::zrem_score_range(self, key, range)
    }

    fn zpop(&self, key: &[u8], count: u64, worst: bool) -> Result<(Vec<Entry>, Lsn), ApiError> {
        Service::zpop(self, key, count, worst)
    }

    fn zstore(
        &self,
        dest: &[u8],
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<(u64, Lsn), ApiError> {
        Service::zstore(self, dest, sources, agg, intersect)
    }

    fn zalgebra(
        &self,
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        op: SetOp,
    ) -> Result<Scored, ApiError> {
        Service::zalgebra(self, sources, agg, op)
    }

    fn zintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64, ApiError> {
        Service::zintercard(self, keys, limit)
    }

    fn zreplace(&self, dest: &[u8], entries: Scored) -> Result<(u64, Lsn), ApiError> {
        Service::zreplace(self, dest, entries)
    }

    fn key_type(&self, key: &[u8]) -> Option<KeyType> {
        Service::key_type(self, key)
    }

    fn names_board(&self, key: &[u8]) -> bool {
        Service::names_board(self, key)
    }

    fn exists(&self, keys: &[&[u8]]) -> u64 {
        Service::exists(self, keys)
    }

    fn del(&self, keys: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        Service::del(self, keys)
    }

    fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        Service::keys(self, pattern)
    }

    fn scan(
        &self,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
        ty: Option<KeyType>,
    ) -> (u64, Vec<Vec<u8>>) {
        Service::scan(self, cursor, pattern, count, ty)
    }

    fn dbsize(&self) -> u64 {
        Service::dbsize(self)
    }

    fn flushall(&self) -> Result<Lsn, ApiError> {
        Service::flushall(self)
    }

    fn expire_at_ms(
        &self,
        key: &[u8],
        at_ms: i64,
        cond: ExpireCond,
    ) -> Result<(bool, Lsn), ApiError> {
        Service::expire_at_ms(self, key, at_ms, cond)
    }

    fn persist(&self, key: &[u8]) -> Result<(bool, Lsn), ApiError> {
        Service::persist(self, key)
    }

    fn pttl(&self, key: &[u8]) -> i64 {
        Service::pttl(self, key)
    }

    fn expire_time_ms(&self, key: &[u8]) -> i64 {
        Service::expire_time_ms(self, key)
    }

    fn random_key(&self) -> Option<Vec<u8>> {
        Service::random_key(self)
    }

    fn now_ms(&self) -> i64 {
        Service::now_ms(self)
    }

    fn expiring_keys(&self) -> usize {
        Service::expiring_keys(self)
    }

    fn hset(&self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<(u64, Lsn), ApiError> {
        Service::hset(self, key, pairs)
    }

    fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(u64, Lsn), ApiError> {
        Service::hdel(self, key, fields)
    }

    fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        Service::hget(self, key, field)
    }

    fn hmget(&self, key: &[u8], fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, ApiError> {
        Service::hmget(self, key, fields)
    }

    fn hgetall(&self, key: &[u8]) -> Result<Fields, ApiError> {
        Service::hgetall(self, key)
    }

    fn hexists(&self, key: &[u8], field: &[u8]) -> Result<bool, ApiError> {
        Service::hexists(self, key, field)
    }

    fn hlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        Service::hlen(self, key)
    }

    fn hsetnx(&self, key: &[u8], field: &[u8], value: &[u8]) -> Result<(bool, Lsn), ApiError> {
        Service::hsetnx(self, key, field, value)
    }

    fn hincrby(&self, key: &[u8], field: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        Service::hincrby(self, key, field, by)
    }

    fn hrandfield(&self, key: &[u8], count: i64, values: bool) -> Result<Option<Fields>, ApiError> {
        Service::hrandfield(self, key, count, values)
    }

    fn hscan(
        &self,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Fields), ApiError> {
        Service::hscan(self, key, cursor, pattern, count)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        Service::get(self, key)
    }

    fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        Service::mget(self, keys)
    }

    fn set(&self, key: &[u8], value: &[u8], opts: SetOpts) -> Result<(SetDone, Lsn), ApiError> {
        Service::set(self, key, value, opts)
    }

    fn mset(&self, pairs: &[(&[u8], &[u8])], nx: bool) -> Result<(bool, Lsn), ApiError> {
        Service::mset(self, pairs, nx)
    }

    fn getdel(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        Service::getdel(self, key)
    }

    fn getex(&self, key: &[u8], expiry: GetExpiry) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        Service::getex(self, key, expiry)
    }

    fn incrby(&self, key: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        Service::incrby(self, key, by)
    }

    fn incrbyfloat(&self, key: &[u8], by: &[u8]) -> Result<(Vec<u8>, Lsn), ApiError> {
        Service::incrbyfloat(self, key, by)
    }

    fn append(&self, key: &[u8], value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        Service::append_string(self, key, value)
    }

    fn setrange(&self, key: &[u8], offset: u64, value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        Service::setrange(self, key, offset, value)
    }

    fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>, ApiError> {
        Service::getrange(self, key, start, end)
    }

    fn strlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        Service::strlen(self, key)
    }

    fn lcs(&self, key1: &[u8], key2: &[u8]) -> Result<podium_core::keystore::Lcs, ApiError> {
        Service::lcs(self, key1, key2)
    }

    fn hincrbyfloat(
        &self,
        key: &[u8],
        field: &[u8],
        by: LongDouble,
    ) -> Result<(Vec<u8>, Lsn), ApiError> {
        Service::hincrbyfloat(self, key, field, by)
    }

    fn run_atomically(&self, writes: Writes, f: &mut dyn FnMut()) {
        Service::atomically(self, writes, f)
    }

    async fn wait_durable(&self, lsn: Lsn) -> Result<(), ApiError> {
        self.durable(lsn).await
    }

    fn persistence(&self) -> Persistence {
        Persistence {
            log_fsyncs: self.storage().map_or(0, |s| s.log.syncs()),
            snapshot_in_progress: self.snapshot_in_progress(),
        }
    }

    fn memory_use(&self) -> podium_core::memory::MemoryUse {
        Service::memory_use(self)
    }

    fn rename(&self, src: &[u8], dst: &[u8], nx: bool) -> Result<(Option<bool>, Lsn), ApiError> {
        Service::rename(self, src, dst, nx)
    }

    fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> Result<(bool, Lsn), ApiError> {
        Service::copy(self, src, dst, replace)
    }

    fn key_info(&self, key: &[u8]) -> Option<podium_core::keystore::KeyInfo> {
        Service::key_info(self, key)
    }

    fn waiters(&self) -> &std::sync::Arc<podium_core::keystore::Waiters> {
        &self.waiters
    }

    fn set_expiry_sink(&self, sink: Option<std::sync::Arc<dyn podium_core::keystore::ExpirySink>>) {
        *self.expiry_sink.write() = sink;
    }

    fn subscribe_events(
        &self,
        req: &podium_core::ops::Subscribe,
    ) -> Result<podium_core::events::Subscription, ApiError> {
        crate::wait::off_workers(|| self.subscribe(req))
    }

    fn save(&self) -> Result<bool, ApiError> {
        Service::save(self)
    }

    fn last_save(&self) -> i64 {
        Service::last_save(self)
    }

    fn key_stats(&self) -> KeyStats {
        Service::key_stats(self)
    }

    fn reset_key_stats(&self) {
        Service::reset_key_stats(self)
    }

    fn avg_ttl_ms(&self) -> i64 {
        Service::avg_ttl_ms(self)
    }

    fn dbsize_where(&self, within: &dyn Fn(&[u8]) -> bool) -> u64 {
        Service::dbsize_where(self, within)
    }

    fn expiring_where(&self, within: &dyn Fn(&[u8]) -> bool) -> (usize, i64) {
        Service::expiring_where(self, within)
    }

    fn flush_where(&self, within: &dyn Fn(&[u8]) -> bool) -> Result<Lsn, ApiError> {
        Service::flush_where(self, within)
    }

    fn rename_nx(&self, from: &[u8], to: &[u8]) -> Result<(bool, Lsn), ApiError> {
        Service::rename_nx(self, from, to)
    }

    fn rename_where(&self, rename: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Result<Lsn, ApiError> {
        Service::rename_where(self, rename)
    }
}
