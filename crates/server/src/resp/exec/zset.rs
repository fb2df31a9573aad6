//! The sorted-set commands on boards: ZADD/ZINCRBY, the reads (ZSCORE,
//! ZMSCORE, ZRANK, ZCARD, ZCOUNT, ZRANGE, ZSCAN), the removals (ZREM, the
//! ZREMRANGEBY family, ZPOPMIN/ZPOPMAX) and ZUNIONSTORE/ZINTERSTORE, in
//! Redis's order (see the parent module for how it maps to a board's).

use bytes::Bytes;
use podium_engine::{
    check_member, Board, Cond, Entry, Order, Presence, UpdateOp, MAX_MEMBER_BYTES,
};

use super::super::command::{Cmd, RangeBy, ZaddFlags};
use super::super::notify::{Events, GENERIC, ZSET};
use super::super::reply::{fmt_d2string, Reply};
use super::keys::scan_reply;
use super::{api_err, done, refs, Run};
use podium_core::entry::{MemberBytes, SubmitRec};
use podium_core::error::{ApiError, Code};
use podium_core::keystore::{glob_match, KeyStore, KeyType, Lsn, RedisView, Writes};

/// Largest sorted set Redis keeps compact (`zset-max-listpack-entries`):
/// ZSCAN returns such a set in one reply with cursor 0, and its scores are
/// stored as text, where -0 reads back as 0.
const SMALL_ZSET: usize = 128;

/// A stored score as Redis reads it back from a set of `len` members: -0
/// is 0 in a small set. (A computed reply, ZINCRBY's, keeps -0.)
pub(super) fn stored(score: f64, len: usize) -> f64 {
    if score == 0.0 && len <= SMALL_ZSET {
        0.0
    } else {
        score
    }
}

/// Runs a sorted-set command (one of those [`super::Session`] hands here).
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd, ev: &Events) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::ZAdd { key, flags, pairs } => zadd(store, &key, flags, pairs, ev)?,
        Cmd::ZScore(key, m) => done(
            match store.zread(&key, |b| b.score(&m).map(|x| stored(x, b.len())))? {
                Some(Some(s)) => Reply::Double(s),
                _ => Reply::Null,
            },
        ),
        Cmd::ZMScore(key, ms) => {
            let scores = store.zread(&key, |b| {
                ms.iter()
                    .map(|m| b.score(m).map(|x| stored(x, b.len())))
                    .collect::<Vec<_>>()
            })?;
            let scores = scores.unwrap_or_else(|| vec![None; ms.len()]);
            done(Reply::Array(
                scores
                    .into_iter()
                    .map(|s| s.map_or(Reply::Null, Reply::Double))
                    .collect(),
            ))
        }
        Cmd::ZRank {
            key,
            member,
            rev,
            withscore,
        } => {
            let hit = store.zread(&key, |b| {
                let idx = b.score_order_index(&member, rev)?;
                Some((idx as i64, stored(b.score(&member).unwrap_or(0.0), b.len())))
            })?;
            done(match (hit.flatten(), withscore) {
                (Some((i, _)), false) => Reply::Int(i),
                (Some((i, s)), true) => Reply::Array(vec![Reply::Int(i), Reply::Double(s)]),
                (None, false) => Reply::Null,
                (None, true) => Reply::NullArray,
            })
        }
        Cmd::ZCard(key) => done(Reply::Int(
            store.zread(&key, |b| b.len() as i64)?.unwrap_or(0),
        )),
        Cmd::ZCount(key, range) => {
            let n = store.zread(&key, |b| b.count_range(&range))?.transpose()?;
            done(Reply::Int(n.unwrap_or(0) as i64))
        }
        Cmd::ZRange {
            key,
            by,
            rev,
            withscores,
        } => {
            let entries = store
                .zread(&key, |b| Ok::<_, ApiError>((range(b, &by, rev)?, b.len())))?
                .transpose()?
                .unwrap_or_default();
            done(entries_reply(entries.0, withscores, true, entries.1))
        }
        Cmd::ZRem(key, ms) => {
            let (n, lsn) = store.zrem(&key, &refs(&ms))?;
            removed(store, ev, &key, n, "zrem");
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZRemRangeByRank(key, start, end) => {
            // The length and the removal must see the same board.
            let (n, lsn) =
                store.atomically(Writes::key(&key), || -> Result<(u64, Lsn), ApiError> {
                    let Some((len, desc)) =
                        store.zread(&key, |b| (b.len() as i64, b.config().order == Order::Desc))?
                    else {
                        return Ok((0, 0));
                    };
                    let Some((s, e)) = rank_span(len, start, end) else {
                        return Ok((0, 0));
                    };
                    let (lo, hi) = if desc {
                        (len - 1 - e, len - s)
                    } else {
                        (s, e + 1)
                    };
                    store.zrem_positions(&key, lo as u64, hi as u64)
                })?;
            removed(store, ev, &key, n, "zremrangebyrank");
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZRemRangeByScore(key, range) => {
            let (n, lsn) = store.zrem_score_range(&key, range)?;
            removed(store, ev, &key, n, "zremrangebyscore");
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZPop { key, max, count } => match pop(store, &key, max, count.unwrap_or(1) as u64)? {
            Some((entries, len, lsn)) => {
                popped(store, ev, &key, entries.len(), max);
                (entries_reply(entries, true, count.is_some(), len), lsn)
            }
            None => done(Reply::Array(Vec::new())),
        },
        Cmd::ZStore {
            dest,
            keys,
            inter,
            opts,
        } => {
            // Redis checks the sources' types before the options.
            for k in &keys {
                if matches!(store.key_type(k), Some(KeyType::Hash | KeyType::String)) {
                    return Ok(done(api_err(ApiError::new(Code::WrongType, ""))));
                }
            }
            let opts = match opts {
                Ok(o) => o,
                Err(r) => return Ok(done(r)),
            };
            let sources: Vec<(&[u8], f64)> = keys
                .iter()
                .map(|k| &k[..])
                .zip(opts.weights.iter().copied())
                .collect();
            let before = ev.on().then(|| store.key_type(&dest).is_some());
            let (n, lsn) = store.zstore(&dest, &sources, opts.agg, inter)?;
            stored_into(
                store,
                ev,
                &dest,
                n,
                before,
                if inter { "zinterstore" } else { "zunionstore" },
            );
            (Reply::Int(n as i64), lsn)
        }
        Cmd::ZScan { key, cursor, opts } => {
            let page = store.zread(&key, |b| {
                let len = b.len();
                if len <= SMALL_ZSET {
                    // Whole, in score order, as Redis's listpack.
                    let desc = b.config().order == Order::Desc;
                    let all = b.range_by_rank(1, len as u64, desc);
                    return (0, all.into_iter().map(|e| (e.member, e.score)).collect());
                }
                let count = opts.as_ref().map_or(10, |o| o.count);
                b.scan(cursor, count)
            })?;
            let Some((next, items)) = page else {
                return Ok(done(scan_reply(0, Vec::new())));
            };
            let opts = match opts {
                Ok(o) => o,
                Err(r) => return Ok(done(r)),
            };
            let mut flat = Vec::with_capacity(items.len() * 2);
            for (member, score) in items {
                if opts
                    .pattern
                    .as_deref()
                    .is_none_or(|p| glob_match(p, &member))
                {
                    flat.push(member);
                    flat.push(fmt_d2string(score).into_bytes());
                }
            }
            done(scan_reply(next, flat))
        }
        Cmd::ZRandMember { key, count, scores } => zrandmember(store, &key, count, scores)?,
        Cmd::ZMPop { keys, max, count } => {
            // The first key that holds a sorted set; a key of another type
            // met before it is WRONGTYPE.
            for key in &keys {
                let Some((entries, len, lsn)) = pop(store, key, max, count)? else {
                    continue;
                };
                popped(store, ev, key, entries.len(), max);
                return Ok((zmpop_reply(key, entries, len), lsn));
            }
            done(Reply::NullArray)
        }
        _ => unreachable!("not a sorted-set command"),
    })
}

/// The events of a removal of `n` members from `key` by the command
/// whose event is `event`: it, then `del` if the set is now empty.
pub(super) fn removed(store: &dyn KeyStore, ev: &Events, key: &[u8], n: u64, event: &str) {
    if n > 0 {
        ev.emit(ZSET, event, key);
        ev.emptied(store, key);
    }
}

/// The events of a pop of `n` members (ZPOPMIN/ZPOPMAX, ZMPOP and the
/// blocking pops all name theirs by the end popped).
pub(super) fn popped(store: &dyn KeyStore, ev: &Events, key: &[u8], n: usize, max: bool) {
    removed(
        store,
        ev,
        key,
        n as u64,
        if max { "zpopmax" } else { "zpopmin" },
    );
}

/// The events of a STORE form that left `n` members in `dest` (`before`:
/// whether it existed, when events are on): `new` and the command's
/// event, or `del` when an empty result deleted what was there.
pub(super) fn stored_into(
    store: &dyn KeyStore,
    ev: &Events,
    dest: &[u8],
    n: u64,
    before: Option<bool>,
    event: &str,
) {
    if n > 0 {
        if ev.wants(super::super::notify::NEW) {
            ev.created(store, dest, before);
        }
        ev.emit(ZSET, event, dest);
    } else if before == Some(true) {
        ev.emit(GENERIC, "del", dest);
    }
}

/// ZMPOP's (and BZMPOP's) reply: the key, then the pairs popped from a set
/// of `len` members, nested in both protocols (Redis's
/// `use_nested_array`).
pub(super) fn zmpop_reply(key: &[u8], entries: Vec<Entry>, len: usize) -> Reply {
    let popped = Reply::Array(
        entries
            .into_iter()
            .map(|e| {
                Reply::Array(vec![
                    Reply::Bulk(e.member),
                    Reply::Double(stored(e.score, len)),
                ])
            })
            .collect(),
    );
    Reply::Array(vec![Reply::Bulk(key.to_vec()), popped])
}

/// A ZRANGE-family read of a board, in the reply's order.
pub(super) fn range(b: &Board, by: &RangeBy, rev: bool) -> Result<Vec<Entry>, ApiError> {
    // Board reads from the worst end give Redis's ascending order on a
    // desc board.
    let from_worst = (b.config().order == Order::Desc) != rev;
    Ok(match *by {
        RangeBy::Rank(start, end) => match rank_span(b.len() as i64, start, end) {
            Some((s, e)) => b.range_by_rank(s as u64 + 1, e as u64 + 1, from_worst),
            None => Vec::new(),
        },
        RangeBy::Score {
            ref range,
            offset,
            count,
        } => {
            if offset < 0 {
                return Ok(Vec::new());
            }
            let limit = u64::try_from(count).unwrap_or(u64::MAX);
            b.range_by_score(range, from_worst, offset as u64, limit)?
        }
        RangeBy::Lex {
            ref range,
            offset,
            count,
        } => RedisView::new(b).range(range, rev, offset, count),
    })
}

/// ZPOPMIN/ZPOPMAX of `count` members from `key` (its best or worst end
/// by `max`, whatever the board's order), with the set's size before;
/// `None` when there is no such set (or `count` is 0).
pub(super) fn pop(
    store: &dyn KeyStore,
    key: &[u8],
    max: bool,
    count: u64,
) -> Result<Option<(Vec<Entry>, usize, Lsn)>, ApiError> {
    let Some((desc, len)) = store.zread(key, |b| (b.config().order == Order::Desc, b.len()))?
    else {
        return Ok(None);
    };
    if count == 0 {
        return Ok(None);
    }
    let (entries, lsn) = store.zpop(key, count, desc != max)?;
    Ok(Some((entries, len, lsn)))
}

/// ZRANDMEMBER: without a count one member (nil without the key); with a
/// count that many distinct members (the whole set when it has no more),
/// or for a negative count that many picks that may repeat.
fn zrandmember(
    store: &dyn KeyStore,
    key: &[u8],
    count: Option<i64>,
    scores: bool,
) -> Result<Run, ApiError> {
    use rand::seq::index::sample;
    use rand::Rng;
    let picked = store
        .zread(key, |b| {
            let len = b.len();
            let desc = b.config().order == Order::Desc;
            let at = |i: usize| b.range_by_rank(i as u64 + 1, i as u64 + 1, desc);
            let mut rng = rand::rng();
            let entries: Vec<Entry> = match count {
                None => at(rng.random_range(0..len)),
                Some(n) if n < 0 => {
                    match podium_core::memory::collect_within(n.unsigned_abs(), || {
                        at(rng.random_range(0..len))
                    }) {
                        Ok(picks) => picks.into_iter().flatten().collect(),
                        Err(e) => return Err(e),
                    }
                }
                Some(n) if n as usize >= len => b.range_by_rank(1, len as u64, desc),
                Some(n) => sample(&mut rng, len, n as usize)
                    .into_iter()
                    .flat_map(at)
                    .collect(),
            };
            Ok((entries, len))
        })?
        .transpose()?;
    Ok(done(match (picked, count) {
        (None, None) => Reply::Null,
        (None, Some(_)) => Reply::Array(Vec::new()),
        (Some((mut e, _)), None) => e.pop().map_or(Reply::Null, |e| Reply::Bulk(e.member)),
        (Some((e, len)), Some(_)) => entries_reply(e, scores, true, len),
    }))
}

/// Members, with their stored scores when `withscores` (`len`: the set's
/// size, see [`stored`]).
pub(super) fn entries_reply(
    entries: Vec<Entry>,
    withscores: bool,
    nested: bool,
    len: usize,
) -> Reply {
    if withscores {
        Reply::Scored {
            items: entries
                .into_iter()
                .map(|e| (e.member, stored(e.score, len)))
                .collect(),
            nested,
        }
    } else {
        Reply::Members(entries.into_iter().map(|e| e.member).collect())
    }
}

/// Redis's index sanitising for ZRANGE/ZREMRANGEBYRANK: inclusive
/// ascending indexes `(start, end)` within `0..len`, or `None` if empty.
fn rank_span(len: i64, mut start: i64, mut end: i64) -> Option<(i64, i64)> {
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    if start > end || start >= len {
        return None;
    }
    Some((start, end.min(len - 1)))
}

fn zadd(
    store: &dyn KeyStore,
    key: &[u8],
    f: ZaddFlags,
    pairs: Vec<(f64, Bytes)>,
    ev: &Events,
) -> Result<Run, ApiError> {
    let nothing = || if f.incr { Reply::Null } else { Reply::Int(0) };
    if f.xx {
        // No key + XX: nothing to do (and no board to create).
        match store.key_type(key) {
            None => return Ok(done(nothing())),
            Some(KeyType::Hash | KeyType::String) => {
                return Err(ApiError::new(Code::WrongType, ""))
            }
            Some(KeyType::Zset) => {}
        }
    }
    let presence = if f.nx {
        Presence::OnlyNew
    } else if f.xx {
        Presence::OnlyExisting
    } else {
        Presence::Any
    };
    let cond = if f.gt {
        Cond::Greater
    } else if f.lt {
        Cond::Less
    } else {
        Cond::Always
    };
    let op = Some(if f.incr {
        UpdateOp::Incr
    } else {
        UpdateOp::Set
    });
    // An id the engine would refuse is refused before it is copied (an
    // argument may be hundreds of MB), after the key's type as the store
    // checks it.
    if let Some((_, m)) = pairs.iter().find(|(_, m)| m.len() > MAX_MEMBER_BYTES) {
        if matches!(store.key_type(key), Some(KeyType::Hash | KeyType::String)) {
            return Err(ApiError::new(Code::WrongType, ""));
        }
        check_member(m)?;
    }
    // INCR takes one pair: its increment, for the reply.
    let incr = pairs.first().map_or(0.0, |p| p.0);
    let entries = pairs
        .into_iter()
        .map(|(score, m)| SubmitRec {
            scores: None,
            member: MemberBytes::from_slice(&m),
            score,
            op,
            presence,
            cond,
            name: None,
            data: None,
        })
        .collect();
    let before = ev.before(store, key);
    let (results, lsn) = store.zadd(key, entries)?;
    let (mut added, mut updated, mut last) = (0i64, 0i64, None);
    for r in results {
        match r {
            Ok(r) => {
                added += r.created as i64;
                updated += (r.changed && !r.created) as i64;
                last = if f.incr {
                    // The reply is the sum as computed (a stored -0 reads
                    // as 0), even where the stored score did not change.
                    r.applied.then(|| {
                        r.previous
                            .map_or(incr, |p| if p == 0.0 { 0.0 } else { p } + incr)
                    })
                } else {
                    None
                };
            }
            Err(e) if f.incr && e.code == Code::InvalidScore => {
                return Ok((Reply::err("resulting score is not a number (NaN)"), lsn));
            }
            Err(e) => return Ok((api_err(e), lsn)),
        }
    }
    let reply = if f.incr {
        last.map_or(Reply::Null, Reply::Double)
    } else {
        Reply::Int(if f.ch { added + updated } else { added })
    };
    if added + updated > 0 {
        ev.created(store, key, before);
        ev.emit(ZSET, if f.incr { "zincr" } else { "zadd" }, key);
    }
    Ok((reply, lsn))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn ranges_follow_redis_order_on_a_desc_board() {
        let mut s = session();
        assert_eq!(run(&mut s, "zadd lb 1 a 2 b 2 c 3 d"), R::Int(4));
        assert_eq!(
            run(&mut s, "zrange lb 0 -1"),
            members(&["a", "b", "c", "d"])
        );
        assert_eq!(run(&mut s, "zrevrange lb 0 1"), members(&["d", "c"]));
        assert_eq!(run(&mut s, "zrange lb -2 -1"), members(&["c", "d"]));
        assert_eq!(run(&mut s, "zrange lb 5 10"), members(&[]));
        assert_eq!(run(&mut s, "zrank lb a"), R::Int(0));
        assert_eq!(run(&mut s, "zrevrank lb a"), R::Int(3));
        assert_eq!(
            run(&mut s, "zrank lb c withscore"),
            R::Array(vec![R::Int(2), R::Double(2.0)])
        );
        assert_eq!(run(&mut s, "zrank lb zz"), R::Null);
        assert_eq!(run(&mut s, "zrank lb zz withscore"), R::NullArray);
        assert_eq!(
            run(&mut s, "zrangebyscore lb (1 +inf limit 1 5"),
            members(&["c", "d"])
        );
        assert_eq!(
            run(&mut s, "zrevrangebyscore lb 2 -inf"),
            members(&["c", "b", "a"])
        );
        assert_eq!(
            run(&mut s, "zrange lb 2 (1 byscore rev"),
            members(&["c", "b"])
        );
        assert_eq!(
            run(&mut s, "zrangebyscore lb -inf +inf limit -1 5"),
            members(&[])
        );
        assert_eq!(
            run(&mut s, "zrange lb 0 0 withscores"),
            R::Scored {
                items: vec![(b"a".to_vec(), 1.0)],
                nested: true
            }
        );
        assert_eq!(run(&mut s, "zcount lb (1 3"), R::Int(3));
        assert_eq!(run(&mut s, "zscore lb b"), R::Double(2.0));
        assert_eq!(
            run(&mut s, "zmscore lb b nope"),
            R::Array(vec![R::Double(2.0), R::Null])
        );
        assert_eq!(run(&mut s, "zcard lb"), R::Int(4));
        assert_eq!(run(&mut s, "zremrangebyrank lb 0 0"), R::Int(1));
        assert_eq!(run(&mut s, "zrange lb 0 -1"), members(&["b", "c", "d"]));
        assert_eq!(
            run(&mut s, "zpopmin lb"),
            R::Scored {
                items: vec![(b"b".to_vec(), 2.0)],
                nested: false
            }
        );
        assert_eq!(
            run(&mut s, "zpopmax lb 5"),
            R::Scored {
                items: vec![(b"d".to_vec(), 3.0), (b"c".to_vec(), 2.0)],
                nested: true
            }
        );
        assert_eq!(run(&mut s, "exists lb"), R::Int(0));
        assert_eq!(run(&mut s, "zpopmin lb"), R::Array(vec![]));
    }

    #[test]
    fn zadd_flags_and_incr() {
        let mut s = session();
        assert_eq!(run(&mut s, "zadd z xx 1 a"), R::Int(0));
        assert_eq!(run(&mut s, "exists z"), R::Int(0));
        assert_eq!(run(&mut s, "zadd z 1 a 2 b"), R::Int(2));
        assert_eq!(run(&mut s, "zadd z ch 1 a 5 b 1 c"), R::Int(2));
        assert_eq!(run(&mut s, "zadd z gt ch 0 a 9 b"), R::Int(1));
        assert_eq!(run(&mut s, "zadd z nx incr 1 a"), R::Null);
        assert_eq!(run(&mut s, "zadd z incr 1.5 a"), R::Double(2.5));
        assert_eq!(run(&mut s, "zincrby z -0.5 a"), R::Double(2.0));
        assert_eq!(run(&mut s, "zincrby z inf a"), R::Double(f64::INFINITY));
        assert_eq!(
            run(&mut s, "zincrby z -inf a"),
            R::err("resulting score is not a number (NaN)")
        );
        assert_eq!(run(&mut s, "hset h f v"), R::Int(1));
        let wrong = R::coded("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(run(&mut s, "zadd h 1 a"), wrong);
        assert_eq!(run(&mut s, "zadd h xx 1 a"), wrong);
        assert_eq!(run(&mut s, "zscore h a"), wrong);
        assert_eq!(run(&mut s, "hget z a"), wrong);
        assert_eq!(run(&mut s, "zunionstore d 1 h weights x"), wrong);
        assert_eq!(
            run(&mut s, "zunionstore d 1 z weights x"),
            R::err("weight value is not a float")
        );
        assert_eq!(run(&mut s, "zunionstore d 2 z nope weights 2 1"), R::Int(3));
        assert_eq!(run(&mut s, "zscore d b"), R::Double(18.0));
    }

    #[test]
    fn zrandmember_counts() {
        let mut s = session();
        assert_eq!(run(&mut s, "zrandmember z"), R::Null);
        assert_eq!(run(&mut s, "zrandmember z 3"), R::Array(vec![]));
        run(&mut s, "zadd z 1 a 2 b 3 c");
        let R::Bulk(m) = run(&mut s, "zrandmember z") else {
            panic!()
        };
        assert!([&b"a"[..], b"b", b"c"].contains(&&m[..]));
        let R::Members(m) = run(&mut s, "zrandmember z 2") else {
            panic!()
        };
        assert_eq!(m.len(), 2);
        assert_ne!(m[0], m[1]);
        let R::Members(m) = run(&mut s, "zrandmember z -9") else {
            panic!()
        };
        assert_eq!(m.len(), 9);
        let R::Scored { items, nested } = run(&mut s, "zrandmember z 5 withscores") else {
            panic!()
        };
        assert!(nested);
        assert_eq!(items.len(), 3);
        assert_eq!(run(&mut s, "zrandmember z 1 withvalues"), R::syntax());
    }

    #[test]
    fn zscan_and_scan() {
        let mut s = session();
        run(&mut s, "zadd z 1 a 2 b 3 ab");
        assert_eq!(
            run(&mut s, "zscan z 0 match a*"),
            R::Array(vec![b("0"), members(&["a", "1", "ab", "3"])])
        );
        assert_eq!(
            run(&mut s, "zscan nope 0"),
            R::Array(vec![b("0"), members(&[])])
        );
        assert_eq!(run(&mut s, "zscan z 0 type zset"), R::syntax());
        run(&mut s, "hset h f v");
        // (In scan order: the names' fixed hashes.)
        let R::Array(page) = run(&mut s, "scan 0") else {
            panic!()
        };
        assert_eq!(page[0], b("0"));
        let R::Members(mut keys) = page[1].clone() else {
            panic!()
        };
        keys.sort();
        assert_eq!(keys, vec![b"h".to_vec(), b"z".to_vec()]);
        assert_eq!(
            run(&mut s, "scan 0 type hash"),
            R::Array(vec![b("0"), members(&["h"])])
        );
        assert_eq!(
            run(&mut s, "scan 0 type string"),
            R::Array(vec![b("0"), members(&[])])
        );
    }
}
