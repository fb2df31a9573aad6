//! The commands on keys of any type: DBSIZE, FLUSHALL, EXISTS, DEL,
//! TYPE, KEYS, SCAN and the EXPIRE family.

use podium_core::keystore::{ExpireCond, KeyStore, KeyType};

use super::super::command::{Cmd, ExpireFlags};
use super::super::notify::{Events, GENERIC};
use super::super::reply::Reply;
use super::{done, refs, Run};
use podium_core::error::ApiError;

/// Runs a command on keys (one of those [`super::Session`] hands here).
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd, ev: &Events) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::DbSize => done(Reply::Int(store.dbsize() as i64)),
        Cmd::Flush => (Reply::OK, store.flushall()?),
        Cmd::Exists(keys) => done(Reply::Int(store.exists(&refs(&keys)) as i64)),
        Cmd::Del(keys) if ev.wants(GENERIC) => {
            // One at a time: each deleted key's event follows its deletion.
            let (mut n, mut lsn) = (0, 0);
            for k in &keys {
                let (d, l) = store.del(&[&k[..]])?;
                lsn = lsn.max(l);
                if d > 0 {
                    n += d;
                    ev.emit(GENERIC, "del", k);
                }
            }
            (Reply::Int(n as i64), lsn)
        }
        Cmd::Del(keys) => {
            let (n, lsn) = store.del(&refs(&keys))?;
            (Reply::Int(n as i64), lsn)
        }
        Cmd::Type(key) => done(Reply::Status(
            store.key_type(&key).map_or("none", KeyType::as_str),
        )),
        Cmd::Keys(pattern) => done(Reply::Members(store.keys(&pattern))),
        Cmd::Scan { cursor, opts } => {
            let ty = opts.ty.as_deref().map(|t| {
                if t.eq_ignore_ascii_case(b"zset") {
                    Some(KeyType::Zset)
                } else if t.eq_ignore_ascii_case(b"hash") {
                    Some(KeyType::Hash)
                } else if t.eq_ignore_ascii_case(b"string") {
                    Some(KeyType::String)
                } else {
                    None
                }
            });
            let (next, mut keys) =
                store.scan(cursor, opts.pattern.as_deref(), opts.count, ty.flatten());
            if ty == Some(None) {
                // A type no key has (Redis 7.0 filters by name, no error).
                keys.clear();
            }
            done(scan_reply(next, keys))
        }
        Cmd::Expire {
            key,
            at,
            relative,
            ms,
            flags,
            name,
        } => expire(store, &key, at, relative, ms, flags, name, ev)?,
        Cmd::Ttl { key, ms, abs } => {
            let t = if abs {
                store.expire_time_ms(&key)
            } else {
                store.pttl(&key)
            };
            done(Reply::Int(match t {
                t if t < 0 => t,
                t if ms => t,
                t => (t + 500) / 1000,
            }))
        }
        Cmd::RandomKey => done(store.random_key().map_or(Reply::Null, Reply::Bulk)),
        Cmd::Persist(key) => {
            let (ok, lsn) = store.persist(&key)?;
            if ok {
                ev.emit(GENERIC, "persist", &key);
            }
            (Reply::Int(ok as i64), lsn)
        }
        _ => unreachable!("not a key command"),
    })
}

#[allow(clippy::too_many_arguments)]
fn expire(
    store: &dyn KeyStore,
    key: &[u8],
    at: i64,
    relative: bool,
    ms: bool,
    f: ExpireFlags,
    name: &str,
    ev: &Events,
) -> Result<Run, ApiError> {
    let bad = || {
        done(Reply::err(format!(
            "invalid expire time in '{name}' command"
        )))
    };
    let mut when = at;
    if !ms {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Ok(bad());
        }
        when *= 1000;
    }
    let base = if relative { store.now_ms() } else { 0 };
    if when > i64::MAX - base {
        return Ok(bad());
    }
    when += base;
    let cond = match f {
        ExpireFlags { nx: true, .. } => ExpireCond::Nx,
        ExpireFlags { gt: true, .. } => ExpireCond::Gt,
        ExpireFlags { lt: true, xx, .. } => {
            // XX LT: LT alone would also apply to a key without expiry.
            if xx && store.pttl(key) == -1 {
                return Ok(done(Reply::Int(0)));
            }
            ExpireCond::Lt
        }
        ExpireFlags { xx: true, .. } => ExpireCond::Xx,
        _ => ExpireCond::Always,
    };
    let (ok, lsn) = store.expire_at_ms(key, when, cond)?;
    if ok {
        // A time not in the future deleted the key (Redis's
        // `checkAlreadyExpired`).
        let event = if when <= store.now_ms() {
            "del"
        } else {
            "expire"
        };
        ev.emit(GENERIC, event, key);
    }
    Ok((Reply::Int(ok as i64), lsn))
}

pub(super) fn scan_reply(next: u64, items: Vec<Vec<u8>>) -> Reply {
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Members(items)])
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn hashes_keys_and_expiry() {
        let mut s = session();
        assert_eq!(run(&mut s, "hset h a 1 b 2"), R::Int(2));
        assert_eq!(run(&mut s, "hmset h c 3"), R::OK);
        assert_eq!(run(&mut s, "hget h a"), b("1"));
        assert_eq!(run(&mut s, "hget h x"), R::Null);
        assert_eq!(run(&mut s, "hmget h a x"), R::Array(vec![b("1"), R::Null]));
        assert_eq!(run(&mut s, "hlen h"), R::Int(3));
        assert_eq!(run(&mut s, "hexists h c"), R::Int(1));
        assert_eq!(run(&mut s, "hdel h c x"), R::Int(1));
        assert_eq!(run(&mut s, "type h"), R::Status("hash"));
        assert_eq!(run(&mut s, "type nope"), R::Status("none"));
        assert_eq!(run(&mut s, "ttl h"), R::Int(-1));
        assert_eq!(run(&mut s, "ttl nope"), R::Int(-2));
        assert_eq!(run(&mut s, "expire h 100"), R::Int(1));
        assert_eq!(run(&mut s, "ttl h"), R::Int(100));
        assert_eq!(run(&mut s, "expire h 50 gt"), R::Int(0));
        assert_eq!(run(&mut s, "expire h 50 lt"), R::Int(1));
        assert_eq!(run(&mut s, "expire nope 50"), R::Int(0));
        assert_eq!(run(&mut s, "persist h"), R::Int(1));
        assert_eq!(run(&mut s, "expire h 10 xx lt"), R::Int(0));
        assert_eq!(
            run(&mut s, "expire h 9223372036854775807"),
            R::err("invalid expire time in 'expire' command")
        );
        assert_eq!(run(&mut s, "dbsize"), R::Int(1));
        assert_eq!(run(&mut s, "keys *"), members(&["h"]));
        assert_eq!(run(&mut s, "pexpire h -1"), R::Int(1));
        assert_eq!(run(&mut s, "exists h h"), R::Int(0));
        assert_eq!(run(&mut s, "select 0"), R::OK);
        assert_eq!(run(&mut s, "select 16"), R::err("DB index is out of range"));
        assert_eq!(
            run(&mut s, "select x"),
            R::err("value is not an integer or out of range")
        );
    }
}
