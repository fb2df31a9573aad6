//! The string commands (and HINCRBYFLOAT): each [`StrCmd`] as a store
//! call and its reply. Expiry arguments are checked and made absolute
//! here, at Redis's point in each command (`getExpireMillisecondsOrReply`).

use podium_core::error::ApiError;
use podium_core::keystore::{GetExpiry, KeyStore, SetExpiry, SetOpts};

use super::super::command_strings::{ExpireArg, GetexTtl, SetTtl, StrCmd};
use super::super::num::string2ll;
use super::super::reply::Reply;
use super::{done, refs, Run};

/// `getExpireMillisecondsOrReply`: the expiry as ms since the epoch, or
/// Redis's refusal (`name` is the command's, for the error).
fn expire_at(store: &dyn KeyStore, e: &ExpireArg, name: &str) -> Result<i64, Reply> {
    let v =
        string2ll(&e.value).ok_or_else(|| Reply::err("value is not an integer or out of range"))?;
    let bad = || Reply::err(format!("invalid expire time in '{name}' command"));
    if v <= 0 || (!e.ms && v > i64::MAX / 1000) {
        return Err(bad());
    }
    let mut ms = if e.ms { v } else { v * 1000 };
    if e.relative {
        // (Redis adds in C, where an overflow wraps to a negative time.)
        ms = ms.wrapping_add(store.now_ms());
    }
    if ms <= 0 {
        return Err(bad());
    }
    Ok(ms)
}

fn bulk_or_null(v: Option<Vec<u8>>) -> Reply {
    v.map_or(Reply::Null, Reply::Bulk)
}

/// Runs a string command.
pub(super) fn run(store: &dyn KeyStore, cmd: StrCmd) -> Result<Run, ApiError> {
    Ok(match cmd {
        StrCmd::Get(key) => done(bulk_or_null(store.get(&key)?)),
        StrCmd::Set {
            key,
            value,
            cond,
            ttl,
            get,
            name,
        } => {
            let expiry = match ttl {
                SetTtl::Clear => SetExpiry::Clear,
                SetTtl::Keep => SetExpiry::Keep,
                SetTtl::At(e) => match expire_at(store, &e, name) {
                    Ok(at) => SetExpiry::At(at),
                    Err(r) => return Ok(done(r)),
                },
            };
            let (d, lsn) = store.set(&key, &value, SetOpts { cond, expiry, get })?;
            let reply = if get {
                bulk_or_null(d.old)
            } else if name == "setnx" {
                Reply::Int(d.set as i64)
            } else if d.set {
                Reply::OK
            } else {
                Reply::Null
            };
            (reply, lsn)
        }
        StrCmd::GetSet(key, value) => {
            let opts = SetOpts {
                get: true,
                ..Default::default()
            };
            let (d, lsn) = store.set(&key, &value, opts)?;
            (bulk_or_null(d.old), lsn)
        }
        StrCmd::GetDel(key) => {
            let (v, lsn) = store.getdel(&key)?;
            (bulk_or_null(v), lsn)
        }
        StrCmd::GetEx(key, ttl) => {
            let expiry = match ttl {
                GetexTtl::Keep => GetExpiry::Keep,
                GetexTtl::Persist => GetExpiry::Persist,
                GetexTtl::At(e) => match expire_at(store, &e, "getex") {
                    Ok(at) => GetExpiry::At(at),
                    // Reported after the key's lookup: a missing key is
                    // nil whatever the time.
                    Err(r) => {
                        return Ok(done(match store.get(&key)? {
                            None => Reply::Null,
                            Some(_) => r,
                        }))
                    }
                },
            };
            let (v, lsn) = store.getex(&key, expiry)?;
            (bulk_or_null(v), lsn)
        }
        StrCmd::MGet(keys) => done(Reply::Array(
            store
                .mget(&refs(&keys))
                .into_iter()
                .map(bulk_or_null)
                .collect(),
        )),
        StrCmd::MSet { pairs, nx } => {
            let p: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let (set, lsn) = store.mset(&p, nx)?;
            (
                if nx {
                    Reply::Int(set as i64)
                } else {
                    Reply::OK
                },
                lsn,
            )
        }
        StrCmd::IncrBy(key, by) => {
            let (n, lsn) = store.incrby(&key, by)?;
            (Reply::Int(n), lsn)
        }
        StrCmd::IncrByFloat(key, by) => {
            let (v, lsn) = store.incrbyfloat(&key, &by)?;
            (Reply::Bulk(v), lsn)
        }
        StrCmd::Append(key, value) => {
            let (n, lsn) = store.append(&key, &value)?;
            (Reply::Int(n as i64), lsn)
        }
        StrCmd::StrLen(key) => done(Reply::Int(store.strlen(&key)? as i64)),
        StrCmd::GetRange(key, start, end) => done(Reply::Bulk(store.getrange(&key, start, end)?)),
        StrCmd::SetRange(key, offset, value) => {
            let (n, lsn) = store.setrange(&key, offset, &value)?;
            (Reply::Int(n as i64), lsn)
        }
        StrCmd::HIncrByFloat(key, field, by) => {
            let (v, lsn) = store.hincrbyfloat(&key, &field, by)?;
            (Reply::Bulk(v), lsn)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    fn wrongtype() -> R {
        R::coded("WRONGTYPE Operation against a key holding the wrong kind of value")
    }

    #[test]
    fn strings_end_to_end() {
        let mut s = session();
        assert_eq!(run(&mut s, "set k 10.5"), R::OK);
        assert_eq!(run(&mut s, "incrbyfloat k 0.1"), b("10.6"));
        assert_eq!(run(&mut s, "get k"), b("10.6"));
        assert_eq!(run(&mut s, "type k"), R::Status("string"));
        assert_eq!(run(&mut s, "set k v nx"), R::Null);
        assert_eq!(run(&mut s, "set k v xx get"), b("10.6"));
        assert_eq!(run(&mut s, "setnx k w"), R::Int(0));
        assert_eq!(run(&mut s, "setnx n 1"), R::Int(1));
        assert_eq!(run(&mut s, "incr n"), R::Int(2));
        assert_eq!(run(&mut s, "decrby n 5"), R::Int(-3));
        assert_eq!(
            run(&mut s, "incr k"),
            R::err("value is not an integer or out of range")
        );
        assert_eq!(
            run(&mut s, "set k v ex 0"),
            R::err("invalid expire time in 'set' command")
        );
        assert_eq!(
            run(&mut s, "setex k 0 v"),
            R::err("invalid expire time in 'setex' command")
        );
        assert_eq!(run(&mut s, "setex k 100 v"), R::OK);
        assert_eq!(run(&mut s, "ttl k"), R::Int(100));
        assert_eq!(run(&mut s, "set k w keepttl"), R::OK);
        assert_eq!(run(&mut s, "ttl k"), R::Int(100));
        assert_eq!(run(&mut s, "getex k persist"), b("w"));
        assert_eq!(run(&mut s, "ttl k"), R::Int(-1));
        assert_eq!(run(&mut s, "getex nokey ex 0"), R::Null);
        assert_eq!(
            run(&mut s, "getex k ex 0"),
            R::err("invalid expire time in 'getex' command")
        );
        assert_eq!(run(&mut s, "getex k pxat 1"), b("w"));
        assert_eq!(run(&mut s, "exists k"), R::Int(0));
        assert_eq!(run(&mut s, "zadd z 1 m"), R::Int(1));
        assert_eq!(
            run(&mut s, "mget n z nokey"),
            R::Array(vec![b("-3"), R::Null, R::Null])
        );
        assert_eq!(run(&mut s, "get z"), wrongtype());
        assert_eq!(run(&mut s, "set z s"), R::OK);
        assert_eq!(run(&mut s, "zcard z"), wrongtype());
        assert_eq!(run(&mut s, "append z tail"), R::Int(5));
        assert_eq!(run(&mut s, "getrange z 1 -2"), b("tai"));
        assert_eq!(run(&mut s, "substr z -100 100"), b("stail"));
        assert_eq!(run(&mut s, "setrange z 1 X"), R::Int(5));
        assert_eq!(run(&mut s, "strlen z"), R::Int(5));
        assert_eq!(run(&mut s, "getdel z"), b("sXail"));
        assert_eq!(run(&mut s, "mset a 1 b 2"), R::OK);
        assert_eq!(run(&mut s, "msetnx a 1 c 2"), R::Int(0));
        assert_eq!(run(&mut s, "getset a 9"), b("1"));
        assert_eq!(run(&mut s, "hincrbyfloat h f 1.5"), b("1.5"));
        assert_eq!(run(&mut s, "hincrbyfloat h f 0.1"), b("1.6"));
        assert_eq!(run(&mut s, "hset h g x"), R::Int(1));
        assert_eq!(
            run(&mut s, "hincrbyfloat h g 1"),
            R::err("hash value is not a float")
        );
        assert_eq!(run(&mut s, "hincrbyfloat a f 1"), wrongtype());
    }
}
