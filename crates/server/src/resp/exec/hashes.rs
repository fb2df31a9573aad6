//! The hash commands: HSET/HMSET, HGET, HMGET, HDEL, HGETALL, HEXISTS,
//! HLEN, HKEYS, HVALS, HSETNX, HINCRBY, HSTRLEN, HRANDFIELD and HSCAN.

use podium_core::keystore::KeyStore;

use super::super::command::Cmd;
use super::super::notify::{Events, HASH};
use super::super::reply::Reply;
use super::keys::scan_reply;
use super::{done, refs, Run};
use podium_core::error::ApiError;

/// Runs a hash command (one of those [`super::Session`] hands here).
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd, ev: &Events) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::HSet { key, pairs, hmset } => {
            let p: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
            let before = ev.before(store, &key);
            let (n, lsn) = store.hset(&key, &p)?;
            ev.created(store, &key, before);
            ev.emit(HASH, "hset", &key);
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
            if n > 0 {
                ev.emit(HASH, "hdel", &key);
                ev.emptied(store, &key);
            }
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
        Cmd::HSetNx(key, f, v) => {
            let before = ev.before(store, &key);
            let (set, lsn) = store.hsetnx(&key, &f, &v)?;
            if set {
                ev.created(store, &key, before);
                ev.emit(HASH, "hset", &key);
            }
            (Reply::Int(set as i64), lsn)
        }
        Cmd::HIncrBy(key, f, by) => {
            let before = ev.before(store, &key);
            let (n, lsn) = store.hincrby(&key, &f, by)?;
            ev.created(store, &key, before);
            ev.emit(HASH, "hincrby", &key);
            (Reply::Int(n), lsn)
        }
        Cmd::HStrLen(key, f) => done(Reply::Int(
            store.hget(&key, &f)?.map_or(0, |v| v.len() as i64),
        )),
        Cmd::HRandField {
            key, count: None, ..
        } => done(match store.hrandfield(&key, 1, false)? {
            Some(mut picked) if !picked.is_empty() => Reply::Bulk(picked.swap_remove(0).0),
            _ => Reply::Null,
        }),
        Cmd::HRandField {
            key,
            count: Some(count),
            values,
        } => done(match store.hrandfield(&key, count, values)? {
            None => Reply::Array(Vec::new()),
            Some(p) if values => Reply::Pairs(p),
            Some(p) => Reply::Members(p.into_iter().map(|(f, _)| f).collect()),
        }),
        Cmd::HScan { key, cursor, opts } => {
            let opts = match opts {
                Ok(o) => o,
                // (HLEN: the key's type is checked, and a missing key has
                // no fields.)
                Err(r) if store.hlen(&key)? > 0 => return Ok(done(r)),
                Err(_) => return Ok(done(scan_reply(0, Vec::new()))),
            };
            let (next, page) = store.hscan(&key, cursor, opts.pattern.as_deref(), opts.count)?;
            let flat = page.into_iter().flat_map(|(f, v)| [f, v]).collect();
            done(scan_reply(next, flat))
        }
        _ => unreachable!("not a hash command"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn hsetnx_hincrby_hstrlen() {
        let mut s = session();
        assert_eq!(run(&mut s, "hsetnx h f abc"), R::Int(1));
        assert_eq!(run(&mut s, "hsetnx h f xyz"), R::Int(0));
        assert_eq!(run(&mut s, "hstrlen h f"), R::Int(3));
        assert_eq!(run(&mut s, "hstrlen h nope"), R::Int(0));
        assert_eq!(run(&mut s, "hincrby h n 4"), R::Int(4));
        assert_eq!(run(&mut s, "hincrby h n -10"), R::Int(-6));
        assert_eq!(
            run(&mut s, "hincrby h f 1"),
            R::err("hash value is not an integer")
        );
        assert_eq!(
            run(&mut s, "hincrby h n x"),
            R::err("value is not an integer or out of range")
        );
        assert_eq!(run(&mut s, "hset h m 9223372036854775807"), R::Int(1));
        assert_eq!(
            run(&mut s, "hincrby h m 1"),
            R::err("increment or decrement would overflow")
        );
    }

    #[test]
    fn hrandfield_counts() {
        let mut s = session();
        assert_eq!(run(&mut s, "hrandfield h"), R::Null);
        assert_eq!(run(&mut s, "hrandfield h 5"), R::Array(vec![]));
        run(&mut s, "hset h a 1 b 2 c 3");
        let Reply::Bulk(f) = run(&mut s, "hrandfield h") else {
            panic!()
        };
        assert!([&b"a"[..], b"b", b"c"].contains(&&f[..]));
        assert_eq!(run(&mut s, "hrandfield h 0"), R::Members(vec![]));
        let Reply::Members(m) = run(&mut s, "hrandfield h 2") else {
            panic!()
        };
        assert_eq!(m.len(), 2);
        assert_ne!(m[0], m[1]);
        let Reply::Members(m) = run(&mut s, "hrandfield h -7") else {
            panic!()
        };
        assert_eq!(m.len(), 7);
        let Reply::Pairs(mut p) = run(&mut s, "hrandfield h 9 withvalues") else {
            panic!()
        };
        p.sort();
        assert_eq!(
            p,
            vec![
                (b"a".to_vec(), b"1".to_vec()),
                (b"b".to_vec(), b"2".to_vec()),
                (b"c".to_vec(), b"3".to_vec())
            ]
        );
        assert_eq!(run(&mut s, "hrandfield h 1 withscores"), R::syntax());
        assert_eq!(
            run(&mut s, "hrandfield h -9223372036854775807 withvalues"),
            R::err("value is out of range")
        );
    }

    #[test]
    fn hscan_pages_a_large_hash() {
        let mut s = session();
        assert_eq!(run(&mut s, "hscan h 0"), scan(0, &[]));
        run(&mut s, "hset h a 1 b 2");
        let R::Array(page) = run(&mut s, "hscan h 0 count 1") else {
            panic!()
        };
        assert_eq!(page[0], R::bulk("0"), "a small hash comes whole");
        for i in 0..510 {
            run(&mut s, &format!("hset h f{i} {i}"));
        }
        let R::Array(page) = run(&mut s, "hscan h 0 count 1") else {
            panic!()
        };
        assert_eq!(page[0], R::bulk("0"), "512 short fields still come whole");
        for i in 0..600 {
            run(&mut s, &format!("hset h f{i} {i}"));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = "0".to_string();
        loop {
            let R::Array(page) = run(&mut s, &format!("hscan h {cursor} count 25")) else {
                panic!()
            };
            let R::Members(flat) = &page[1] else { panic!() };
            assert!(flat.len() <= 50);
            seen.extend(flat.chunks(2).map(|p| p[0].clone()));
            let R::Bulk(next) = &page[0] else { panic!() };
            cursor = String::from_utf8(next.clone()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 602);
        assert_eq!(run(&mut s, "hscan h 0 count 0"), R::syntax());
    }

    fn scan(next: u64, items: &[&str]) -> Reply {
        super::scan_reply(next, items.iter().map(|i| i.as_bytes().to_vec()).collect())
    }
}
