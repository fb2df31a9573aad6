//! The sorted-set commands of lexicographic ranges and set algebra:
//! ZLEXCOUNT, ZREMRANGEBYLEX, ZUNION, ZINTER, ZDIFF, ZINTERCARD,
//! ZDIFFSTORE and ZRANGESTORE (the BYLEX reads of the ZRANGE family are
//! ZRANGE's, in [`super::zset`]). Where a range falls is
//! [`RedisView`]'s to say; the algebra and the stored result are the
//! store's ([`KeyStore::zalgebra`], [`KeyStore::zreplace`]).

use bytes::Bytes;
use podium_core::error::{ApiError, Code};
use podium_core::keystore::{KeyStore, KeyType, Lsn, RedisView, SetOp, Writes};
use podium_engine::Aggregate;

use super::super::command::Cmd;
use super::super::notify::Events;
use super::super::reply::Reply;
use super::zset::{range, removed, stored, stored_into};
use super::{done, Run};

/// Redis checks every source's type before it reads the options.
fn check_sources(store: &dyn KeyStore, keys: &[Bytes]) -> Result<(), ApiError> {
    for k in keys {
        if matches!(store.key_type(k), Some(KeyType::Hash | KeyType::String)) {
            return Err(ApiError::new(Code::WrongType, ""));
        }
    }
    Ok(())
}

/// Runs a command of this family (one of those [`super::Session`] hands
/// here).
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd, ev: &Events) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::ZLexCount(key, r) => done(Reply::Int(
            store
                .zread(&key, |b| RedisView::new(b).count(&r))?
                .unwrap_or(0),
        )),
        Cmd::ZRemRangeByLex(key, r) => {
            // The span and the removal must see the same board.
            let (n, lsn) =
                store.atomically(Writes::key(&key), || -> Result<(u64, Lsn), ApiError> {
                    let span = store.zread(&key, |b| {
                        let v = RedisView::new(b);
                        v.removal(&r).map(|(lo, hi)| v.positions(lo, hi))
                    })?;
                    match span.flatten() {
                        Some((lo, hi)) => store.zrem_positions(&key, lo as u64, hi as u64),
                        None => Ok((0, 0)),
                    }
                })?;
            removed(store, ev, &key, n, "zremrangebylex");
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZAlgebra { keys, op, opts } => {
            check_sources(store, &keys)?;
            let opts = match opts {
                Ok(o) => o,
                Err(r) => return Ok(done(r)),
            };
            let sources: Vec<(&[u8], f64)> =
                keys.iter().map(|k| &k[..]).zip(opts.weights).collect();
            let out = store.zalgebra(&sources, opts.agg, op)?;
            // A computed set: its scores as computed (-0 stays -0).
            done(if opts.withscores {
                Reply::Scored {
                    items: out,
                    nested: true,
                }
            } else {
                Reply::Members(out.into_iter().map(|(m, _)| m).collect())
            })
        }
        Cmd::ZInterCard { keys, limit } => {
            check_sources(store, &keys)?;
            let limit = match limit {
                Ok(l) => l,
                Err(r) => return Ok(done(r)),
            };
            let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            done(Reply::Int(store.zintercard(&keys, limit)? as i64))
        }
        Cmd::ZDiffStore { dest, keys, extra } => {
            check_sources(store, &keys)?;
            if let Err(r) = extra {
                return Ok(done(r));
            }
            let sources: Vec<(&[u8], f64)> = keys.iter().map(|k| (&k[..], 1.0)).collect();
            // The sources read and the destination written at one instant.
            let (n, lsn, before) = store.atomically(Writes::key(&dest), || {
                let out = store.zalgebra(&sources, Aggregate::Sum, SetOp::Diff)?;
                let before = ev.on().then(|| store.key_type(&dest).is_some());
                let (n, lsn) = store.zreplace(&dest, out)?;
                Ok::<_, ApiError>((n, lsn, before))
            })?;
            stored_into(store, ev, &dest, n, before, "zdiffstore");
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZRangeStore { dest, src, by, rev } => {
            let (n, lsn, before) = store.atomically(Writes::key(&dest), || {
                let entries = store
                    .zread(&src, |b| Ok::<_, ApiError>((range(b, &by, rev)?, b.len())))?
                    .transpose()?;
                // The scores as Redis reads them from the source.
                let scored = entries.map_or_else(Vec::new, |(entries, len)| {
                    entries
                        .into_iter()
                        .map(|e| (e.member, stored(e.score, len)))
                        .collect()
                });
                let before = ev.on().then(|| store.key_type(&dest).is_some());
                let (n, lsn) = store.zreplace(&dest, scored)?;
                Ok::<_, ApiError>((n, lsn, before))
            })?;
            stored_into(store, ev, &dest, n, before, "zrangestore");
            (Reply::Int(n as i64), lsn)
        }
        _ => unreachable!("not a command of lexicographic ranges or set algebra"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use podium_core::keystore::KeyStore;
    use podium_engine::Order;

    fn wrong() -> R {
        R::coded("WRONGTYPE Operation against a key holding the wrong kind of value")
    }

    #[test]
    fn lex_commands_on_one_score() {
        let mut s = session();
        run(&mut s, "zadd z 0 a 0 b 0 c 0 d 0 e");
        assert_eq!(run(&mut s, "zrangebylex z [b (d"), members(&["b", "c"]));
        assert_eq!(
            run(&mut s, "zrevrangebylex z + - limit 1 2"),
            members(&["d", "c"])
        );
        assert_eq!(
            run(&mut s, "zrange z [e (a bylex rev"),
            members(&["e", "d", "c", "b"])
        );
        assert_eq!(run(&mut s, "zlexcount z - +"), R::Int(5));
        assert_eq!(run(&mut s, "zlexcount nope - +"), R::Int(0));
        assert_eq!(run(&mut s, "zremrangebylex z (a [c"), R::Int(2));
        assert_eq!(run(&mut s, "zrange z 0 -1"), members(&["a", "d", "e"]));
        assert_eq!(run(&mut s, "zremrangebylex z - +"), R::Int(3));
        assert_eq!(run(&mut s, "exists z"), R::Int(0));
        run(&mut s, "hset h f v");
        assert_eq!(run(&mut s, "zlexcount h - +"), wrong());
        assert_eq!(run(&mut s, "zremrangebylex h - +"), wrong());
        assert_eq!(
            run(&mut s, "zlexcount h a +"),
            R::err("min or max not valid string range item")
        );
    }

    /// BYLEX over 300 members of one score in `key`, in Redis's terms.
    fn lex_over_300(s: &mut Session, key: &str) {
        let line = (0..300)
            .map(|i| format!("0 m{i:03}"))
            .collect::<Vec<_>>()
            .join(" ");
        run(s, &format!("zadd {key} {line}"));
        assert_eq!(
            run(s, &format!("zrange {key} 0 1")),
            members(&["m000", "m001"])
        );
        assert_eq!(
            run(s, &format!("zrangebylex {key} (m100 [m102")),
            members(&["m101", "m102"])
        );
        assert_eq!(
            run(s, &format!("zrevrangebylex {key} [m102 (m100")),
            members(&["m102", "m101"])
        );
        assert_eq!(run(s, &format!("zlexcount {key} [m010 (m020")), R::Int(10));
        assert_eq!(
            run(s, &format!("zremrangebylex {key} [m010 (m020")),
            R::Int(10)
        );
        assert_eq!(run(s, &format!("zcard {key}")), R::Int(290));
        assert_eq!(
            run(s, &format!("zrangebylex {key} (m008 + limit 0 3")),
            members(&["m009", "m020", "m021"])
        );
        assert_eq!(
            run(s, &format!("zrange {key} + (m297 bylex rev")),
            members(&["m299", "m298"])
        );
    }

    fn order(store: &Arc<Service>, key: &[u8]) -> Order {
        let s: &dyn KeyStore = &**store;
        s.zread(key, |b| b.config().order).unwrap().unwrap()
    }

    /// On a `desc` board (the default config, which ZADD creates), Redis's
    /// order is the board's reversed: BYLEX answers as on Redis, through
    /// ZRANGE's view of the board.
    #[test]
    fn lex_ranges_on_a_desc_board() {
        let store = Arc::new(Service::in_memory());
        let mut s = Session::new(store.clone(), Arc::new(Shared::new(Vec::new(), 7379)));
        lex_over_300(&mut s, "lb");
        assert_eq!(order(&store, b"lb"), Order::Desc);
    }

    /// On an `asc` board, Redis's order is the board's own.
    #[tokio::test]
    async fn lex_ranges_on_an_asc_board() {
        let store = Arc::new(Service::in_memory());
        store
            .board_put("up", &serde_json::json!({"order": "asc"}))
            .await
            .unwrap();
        let mut s = Session::new(store.clone(), Arc::new(Shared::new(Vec::new(), 7379)));
        lex_over_300(&mut s, "up");
        assert_eq!(order(&store, b"up"), Order::Asc);
    }

    #[test]
    fn algebra_and_stores() {
        let mut s = session();
        run(&mut s, "zadd a 1 x 2 y 3 z");
        run(&mut s, "zadd b 10 y -1 w");
        assert_eq!(
            run(&mut s, "zunion 2 a b weights 1 2 withscores"),
            R::Scored {
                items: vec![
                    (b"w".to_vec(), -2.0),
                    (b"x".to_vec(), 1.0),
                    (b"z".to_vec(), 3.0),
                    (b"y".to_vec(), 22.0)
                ],
                nested: true
            }
        );
        assert_eq!(run(&mut s, "zinter 2 a b aggregate min"), members(&["y"]));
        assert_eq!(run(&mut s, "zdiff 2 a b"), members(&["x", "z"]));
        assert_eq!(run(&mut s, "zintercard 2 a b"), R::Int(1));
        assert_eq!(run(&mut s, "zintercard 1 a limit 2"), R::Int(2));
        assert_eq!(run(&mut s, "zdiffstore d 2 a b"), R::Int(2));
        assert_eq!(
            run(&mut s, "zrange d 0 -1 withscores"),
            run(&mut s, "zdiff 2 a b withscores")
        );
        assert_eq!(run(&mut s, "zrangestore r a (1 +inf byscore"), R::Int(2));
        assert_eq!(run(&mut s, "zrange r 0 -1"), members(&["y", "z"]));
        assert_eq!(run(&mut s, "zrangestore r nope 0 -1"), R::Int(0));
        assert_eq!(run(&mut s, "exists r"), R::Int(0));
        assert_eq!(run(&mut s, "zdiffstore d 1 nope"), R::Int(0));
        assert_eq!(run(&mut s, "exists d"), R::Int(0));
        run(&mut s, "hset h f v");
        assert_eq!(run(&mut s, "zunion 2 a h weights x"), wrong());
        assert_eq!(run(&mut s, "zintercard 1 h limit -1"), wrong());
        assert_eq!(run(&mut s, "zdiffstore d 1 h x"), wrong());
        assert_eq!(run(&mut s, "zrangestore d h 0 -1"), wrong());
        assert_eq!(
            run(&mut s, "zunion 1 a weights x"),
            R::err("weight value is not a float")
        );
        // A hash destination is replaced.
        assert_eq!(run(&mut s, "zrangestore h a 0 0"), R::Int(1));
        assert_eq!(run(&mut s, "type h"), R::Status("zset"));
    }
}
