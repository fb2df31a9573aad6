//! The hash commands: HSET/HMSET, HGET, HMGET, HDEL, HGETALL, HEXISTS,
//! HLEN, HKEYS and HVALS.

use podium_core::keystore::KeyStore;

use super::super::command::Cmd;
use super::super::reply::Reply;
use super::{done, refs, Run};
use podium_core::error::ApiError;

/// Runs a hash command (one of those [`super::Session`] hands here).
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::HSet { key, pairs, hmset } => {
            let p: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
            let (n, lsn) = store.hset(&key, &p)?;
            (
                if hmset {
                    Reply::OK
                } else {
                    Reply::Int(n as i64)
                },
                lsn,
            )
        }
        Cmd::HGet(key, f) => done(store.hget(&key, &f)?.map_or(Reply::Null, Reply::Bulk)),
        Cmd::HMGet(key, fs) => done(Reply::Array(
            store
                .hmget(&key, &refs(&fs))?
                .into_iter()
                .map(|v| v.map_or(Reply::Null, Reply::Bulk))
                .collect(),
        )),
        Cmd::HDel(key, fs) => {
            let (n, lsn) = store.hdel(&key, &refs(&fs))?;
            (Reply::Int(n as i64), lsn)
        }
        Cmd::HGetAll(key) => done(Reply::Map(
            store
                .hgetall(&key)?
                .into_iter()
                .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
                .collect(),
        )),
        Cmd::HExists(key, f) => done(Reply::Int(store.hexists(&key, &f)? as i64)),
        Cmd::HLen(key) => done(Reply::Int(store.hlen(&key)? as i64)),
        Cmd::HKeys(key) => done(Reply::Members(
            store.hgetall(&key)?.into_iter().map(|(f, _)| f).collect(),
        )),
        Cmd::HVals(key) => done(Reply::Members(
            store.hgetall(&key)?.into_iter().map(|(_, v)| v).collect(),
        )),
        _ => unreachable!("not a hash command"),
    })
}
