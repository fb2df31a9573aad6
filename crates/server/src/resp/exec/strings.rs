//! The string commands (and HINCRBYFLOAT): each [`StrCmd`] as a store
//! call and its reply. Expiry arguments are checked and made absolute
//! here, at Redis's point in each command (`getExpireMillisecondsOrReply`).

use podium_core::error::{ApiError, Code};
use podium_core::keystore::{GetExpiry, KeyStore, SetExpiry, SetOpts};

use super::super::command_strings::{ExpireArg, GetexTtl, LcsOpts, SetTtl, StrCmd};
use super::super::notify::{Events, GENERIC, HASH, STRING};
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

/// LCS: Redis checks both keys' types before its options.
fn lcs(
    store: &dyn KeyStore,
    key1: &[u8],
    key2: &[u8],
    opts: Result<LcsOpts, Reply>,
) -> Result<Reply, ApiError> {
    let wrong = || Reply::err("The specified keys must contain string values");
    let opts = match opts {
        Ok(o) => o,
        Err(r) => {
            return Ok(match (store.strlen(key1), store.strlen(key2)) {
                (Err(e), _) | (_, Err(e)) if e.code == Code::WrongType => wrong(),
                (Err(e), _) | (_, Err(e)) => return Err(e),
                _ => r,
            })
        }
    };
    let l = match store.lcs(key1, key2) {
        Ok(l) => l,
        Err(e) if e.code == Code::WrongType => return Ok(wrong()),
        Err(e) if matches!(e.code, Code::InvalidArgument | Code::OutOfMemory) => {
            return Ok(Reply::err(e.message))
        }
        Err(e) => return Err(e),
    };
    Ok(if opts.idx {
        let matches = l
            .ranges
            .iter()
            .filter(|r| opts.min_match_len == 0 || i64::from(r.match_len()) >= opts.min_match_len)
            .map(|r| {
                let pair = |(x, y): (u32, u32)| {
                    Reply::Array(vec![Reply::Int(i64::from(x)), Reply::Int(i64::from(y))])
                };
                let mut m = vec![pair(r.a), pair(r.b)];
                if opts.with_match_len {
                    m.push(Reply::Int(i64::from(r.match_len())));
                }
                Reply::Array(m)
            })
            .collect();
        Reply::Map(vec![
            (Reply::bulk("matches"), Reply::Array(matches)),
            (Reply::bulk("len"), Reply::Int(l.text.len() as i64)),
        ])
    } else if opts.len {
        Reply::Int(l.text.len() as i64)
    } else {
        Reply::Bulk(l.text)
    })
}

/// Runs a string command.
pub(super) fn run(store: &dyn KeyStore, cmd: StrCmd, ev: &Events) -> Result<Run, ApiError> {
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
            let before = ev.before(store, &key);
            let (d, lsn) = store.set(&key, &value, SetOpts { cond, expiry, get })?;
            if d.set {
                ev.created(store, &key, before);
                ev.emit(STRING, "set", &key);
                if matches!(expiry, SetExpiry::At(_)) {
                    ev.emit(GENERIC, "expire", &key);
                }
            }
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
            let before = ev.before(store, &key);
            let (d, lsn) = store.set(&key, &value, opts)?;
            ev.created(store, &key, before);
            ev.emit(STRING, "set", &key);
            (bulk_or_null(d.old), lsn)
        }
        StrCmd::GetDel(key) => {
            let (v, lsn) = store.getdel(&key)?;
            if v.is_some() {
                ev.emit(GENERIC, "del", &key);
            }
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
            // PERSIST notifies only when there was an expiry to remove.
            let had_expiry =
                ev.wants(GENERIC) && expiry == GetExpiry::Persist && store.pttl(&key) >= 0;
            let (v, lsn) = store.getex(&key, expiry)?;
            if v.is_some() {
                match expiry {
                    GetExpiry::At(at) if at <= store.now_ms() => ev.emit(GENERIC, "del", &key),
                    GetExpiry::At(_) => ev.emit(GENERIC, "expire", &key),
                    GetExpiry::Persist if had_expiry => ev.emit(GENERIC, "persist", &key),
                    _ => {}
                }
            }
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
            let before: Vec<Option<bool>> = p.iter().map(|(k, _)| ev.before(store, k)).collect();
            let (set, lsn) = store.mset(&p, nx)?;
            if set {
                for (i, (k, _)) in p.iter().enumerate() {
                    // A key named twice is new the first time only.
                    if !p[..i].iter().any(|(earlier, _)| earlier == k) {
                        ev.created(store, k, before[i]);
                    }
                    ev.emit(STRING, "set", k);
                }
            }
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
            let before = ev.before(store, &key);
            let (n, lsn) = store.incrby(&key, by)?;
            ev.created(store, &key, before);
            ev.emit(STRING, "incrby", &key);
            (Reply::Int(n), lsn)
        }
        StrCmd::IncrByFloat(key, by) => {
            let before = ev.before(store, &key);
            let (v, lsn) = store.incrbyfloat(&key, &by)?;
            ev.created(store, &key, before);
            ev.emit(STRING, "incrbyfloat", &key);
            (Reply::Bulk(v), lsn)
        }
        StrCmd::Append(key, value) => {
            let before = ev.before(store, &key);
            let (n, lsn) = store.append(&key, &value)?;
            ev.created(store, &key, before);
            ev.emit(STRING, "append", &key);
            (Reply::Int(n as i64), lsn)
        }
        StrCmd::StrLen(key) => done(Reply::Int(store.strlen(&key)? as i64)),
        StrCmd::GetRange(key, start, end) => done(Reply::Bulk(store.getrange(&key, start, end)?)),
        StrCmd::SetRange(key, offset, value) => {
            let before = ev.before(store, &key);
            let (n, lsn) = store.setrange(&key, offset, &value)?;
            // An empty value changes nothing and creates nothing.
            if !value.is_empty() {
                ev.created(store, &key, before);
                ev.emit(STRING, "setrange", &key);
            }
            (Reply::Int(n as i64), lsn)
        }
        StrCmd::HIncrByFloat(key, field, by) => {
            let before = ev.before(store, &key);
            let (v, lsn) = store.hincrbyfloat(&key, &field, by)?;
            ev.created(store, &key, before);
            ev.emit(HASH, "hincrbyfloat", &key);
            (Reply::Bulk(v), lsn)
        }
        StrCmd::Lcs { key1, key2, opts } => done(lcs(store, &key1, &key2, opts)?),
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
