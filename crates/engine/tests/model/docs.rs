//! The model itself against the documented examples.

use super::*;

// ------------------------------------------- the model against the docs

pub(crate) fn model_with(cfg: BoardConfig, subs: &[(&str, f64)]) -> Model {
    let mut m = Model::new(cfg).unwrap();
    for &(k, s) in subs {
        m.submit(&Sub {
            member: Mem(k.as_bytes().to_vec()),
            score: s,
            scores: None,
            keyed: None,
            op: None,
            presence: Presence::Any,
            cond: Cond::Always,
            name: None,
            data: None,
        })
        .unwrap();
    }
    m
}

pub(crate) fn order_of(m: &Model) -> Vec<String> {
    m.entries
        .iter()
        .map(|e| String::from_utf8(e.member.clone()).unwrap())
        .collect()
}

/// Pins the model to the documented examples, so agreement with the
/// engine means agreement with the docs.
#[test]
pub(crate) fn the_model_itself_follows_the_documented_examples() {
    let subs = [("b", 1.0), ("a", 1.0), ("c", 2.0), ("d", 0.0)];
    let mk = |order, ranking, tiebreak| {
        model_with(
            config(order, ranking, tiebreak, UpdateOp::Set, (None, None, None)),
            &subs,
        )
    };
    // Member tiebreak: ascending bytes on asc, the exact reverse on desc.
    let m = mk(Order::Asc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(order_of(&m), ["d", "a", "b", "c"]);
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    // first / last: arrival order among equal scores.
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::First);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Last);
    assert_eq!(order_of(&m), ["c", "a", "b", "d"]);
    // Ranks: unique 1,2,3,4; dense 1,2,2,3; competition 1,2,2,4.
    let ranks = |r| {
        let m = mk(Order::Desc, r, Tiebreak::Member);
        m.view().iter().map(|v| v.0).collect::<Vec<_>>()
    };
    assert_eq!(ranks(Ranking::Unique), [1, 2, 3, 4]);
    assert_eq!(ranks(Ranking::Dense), [1, 2, 2, 3]);
    assert_eq!(ranks(Ranking::Competition), [1, 2, 2, 4]);
    // Percentile: share not better; the best is at 100.
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(m.percentile(b"c"), Some(100.0));
    assert_eq!(m.percentile(b"a"), Some(75.0));
    assert_eq!(m.percentile(b"d"), Some(25.0));
    // score_at_percentile: 100 → the best, 0 → the worst.
    assert_eq!(m.score_at_percentile(100.0).unwrap().unwrap().member, b"c");
    assert_eq!(m.score_at_percentile(0.0).unwrap().unwrap().member, b"d");
    // around: page_size entries from page_size/2 above, clipped at the end.
    let a = m.around(b"d", 3).unwrap();
    assert_eq!(a.entries.len(), 2);
    assert_eq!(a.entries[0].member, b"a");
    // `first` follows the last actual score change, not the last write.
    let mut m = mk(Order::Desc, Ranking::Unique, Tiebreak::First);
    let resubmit = |m: &mut Model, k: &str, s: f64| {
        m.submit(&Sub {
            member: Mem(k.as_bytes().to_vec()),
            score: s,
            scores: None,
            keyed: None,
            op: None,
            presence: Presence::Any,
            cond: Cond::Always,
            name: None,
            data: None,
        })
        .unwrap()
    };
    assert!(!resubmit(&mut m, "b", 1.0).changed);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    resubmit(&mut m, "b", 5.0);
    resubmit(&mut m, "b", 1.0);
    assert_eq!(order_of(&m), ["c", "a", "b", "d"]);
    // max_members evicts the worst; a worse newcomer is evicted itself.
    let mut m = model_with(
        config(
            Order::Desc,
            Ranking::Unique,
            Tiebreak::First,
            UpdateOp::Set,
            (None, None, Some(2)),
        ),
        &[("a", 1.0), ("b", 2.0)],
    );
    let r = resubmit(&mut m, "c", 1.0);
    assert_eq!((r.created, r.evicted, r.rank), (false, 1, None));
    let r = resubmit(&mut m, "d", 3.0);
    assert_eq!((r.created, r.evicted, r.rank), (true, 1, Some(1)));
    assert_eq!(order_of(&m), ["d", "b"]);
}

/// A keyed submission of `vals` by key name.
pub(crate) fn keyed(k: &str, vals: &[(&str, Num)], op: Option<UpdateOp>) -> Sub {
    Sub {
        member: Mem(k.as_bytes().to_vec()),
        score: 0.0,
        scores: Some(vals.iter().map(|(n, v)| (n.to_string(), *v)).collect()),
        keyed: None,
        op,
        presence: Presence::Any,
        cond: Cond::Always,
        name: None,
        data: None,
    }
}

/// Pins the model to the semantics of boards with sort keys.
#[test]
pub(crate) fn the_model_itself_follows_the_sort_key_semantics() {
    use Num::{Float as F, Int as I};
    let race = |ranking| BoardConfig {
        order: Order::Desc,
        ranking,
        update: UpdateOp::Best,
        sort: vec![
            SortKey::new("laps", Order::Desc, KeyType::Int, KeyOp::Set),
            SortKey::new("time", Order::Asc, KeyType::Float, KeyOp::Set),
        ],
        ..BoardConfig::default()
    };
    let mut m = Model::new(race(Ranking::Competition)).unwrap();
    for (k, laps, time) in [("ann", 10, 61.0), ("bob", 10, 62.0), ("cat", 9, 50.0)] {
        m.submit(&keyed(k, &[("laps", I(laps)), ("time", F(time))], None))
            .unwrap();
    }
    // Names in any order; an int key takes a double holding an integer.
    let r = m
        .submit(&keyed("dan", &[("time", F(61.0)), ("laps", F(10.0))], None))
        .unwrap();
    assert_eq!(r.scores, Some(Scores::new(&[I(10), F(61.0)])));
    // Laps first (more is better), then time (less is better), then the
    // member bytes (descending on a desc board).
    assert_eq!(order_of(&m), ["dan", "ann", "bob", "cat"]);
    let ranks: Vec<u64> = m.view().iter().map(|v| v.0).collect();
    assert_eq!(ranks, [1, 1, 3, 4]);
    assert_eq!(m.percentile(b"bob"), Some(50.0));
    assert_eq!(m.score(b"cat"), Some(9.0));
    // `best`: a slower run of 10 laps changes nothing.
    let r = m
        .submit(&keyed("ann", &[("laps", I(10)), ("time", F(63.0))], None))
        .unwrap();
    assert!(!r.applied && !r.changed);
    // `set` and `best` need every key and no key the board lacks (a
    // submission of another board's kind); no key given twice; an int key
    // refuses a fraction.
    for (bad, why) in [
        (keyed("ann", &[("laps", I(11))], None), MErr::WrongKind),
        (
            keyed(
                "ann",
                &[("laps", I(11)), ("time", F(1.0)), ("x", I(1))],
                None,
            ),
            MErr::WrongKind,
        ),
        (
            keyed("ann", &[("laps", I(11)), ("laps", I(11))], None),
            MErr::BadArgument,
        ),
        (
            keyed("ann", &[("laps", F(10.5)), ("time", F(1.0))], None),
            MErr::BadArgument,
        ),
    ] {
        assert_eq!(m.submit(&bad), Err(why), "{bad:?}");
    }
    // A bare score sets the first key and keeps the others.
    let bare = Sub {
        scores: None,
        score: 11.0,
        ..keyed("cat", &[], Some(UpdateOp::Set))
    };
    m.submit(&bare).unwrap();
    assert_eq!(m.entries[0].vals, Vals::new(&[I(11), F(50.0)]));
    // Dense: 1 + distinct better tuples.
    let mut d = Model::new(race(Ranking::Dense)).unwrap();
    for k in ["p", "q"] {
        d.submit(&keyed(k, &[("laps", I(3)), ("time", F(1.0))], None))
            .unwrap();
    }
    d.submit(&keyed("r", &[("laps", I(3)), ("time", F(2.0))], None))
        .unwrap();
    assert_eq!(d.rank(b"r"), Some(2));

    // `incr` applies each key's operator; a new member takes the values
    // given, 0 for the others; an int overflow is refused.
    let kills = BoardConfig {
        update: UpdateOp::Incr,
        sort: vec![
            SortKey::new("kills", Order::Desc, KeyType::Int, KeyOp::Incr),
            SortKey::new("best", Order::Desc, KeyType::Float, KeyOp::Max),
            SortKey::new("at", Order::Asc, KeyType::Int, KeyOp::Set),
        ],
        ..BoardConfig::default()
    };
    let mut k = Model::new(kills).unwrap();
    k.submit(&keyed("a", &[("kills", I(2)), ("best", F(-5.0))], None))
        .unwrap();
    assert_eq!(k.entries[0].vals, Vals::new(&[I(2), F(-5.0), I(0)]));
    let three = [("kills", I(1)), ("best", F(-7.0)), ("at", I(9))];
    k.submit(&keyed("a", &three, None)).unwrap();
    assert_eq!(k.entries[0].vals, Vals::new(&[I(3), F(-5.0), I(9)]));
    let over = keyed("a", &[("kills", I(i64::MAX))], None);
    assert_eq!(k.submit(&over), Err(MErr::BadArgument));
    // GT compares whole tuples numerically, ignoring directions.
    let lower = Sub {
        cond: Cond::Greater,
        ..keyed("a", &[("kills", I(0)), ("at", I(8))], Some(UpdateOp::Set))
    };
    assert_eq!(
        k.submit(&lower),
        Err(MErr::WrongKind),
        "set needs every key"
    );
    let lower = Sub {
        cond: Cond::Greater,
        ..keyed(
            "a",
            &[("kills", I(3)), ("best", F(-5.0)), ("at", I(8))],
            Some(UpdateOp::Set),
        )
    };
    assert!(!k.submit(&lower).unwrap().applied);

    // Past 2^53, integers one apart rank apart and report the same score.
    let big = 1i64 << 53;
    let mut x = Model::new(BoardConfig {
        sort: vec![SortKey::new("xp", Order::Desc, KeyType::Int, KeyOp::Set)],
        ..BoardConfig::default()
    })
    .unwrap();
    x.submit(&keyed("lo", &[("xp", I(big))], None)).unwrap();
    x.submit(&keyed("hi", &[("xp", I(big + 1))], None)).unwrap();
    assert_eq!(order_of(&x), ["hi", "lo"]);
    assert_eq!(x.score(b"hi"), x.score(b"lo"));
    // An int first key's range admits the integers its bounds cover,
    // though `big + 1` has no double of its own.
    let r = ScoreRange {
        min: Bound::Excluded(big as f64),
        max: Bound::Unbounded,
    };
    assert_eq!(x.count_range(&r), Ok(1));

    // A new sort keeps values by name; new keys start at 0; a plain score
    // is the key `score`.
    let mut p = model_with(
        config(
            Order::Desc,
            Ranking::Unique,
            Tiebreak::Member,
            UpdateOp::Set,
            (None, None, None),
        ),
        &[("a", 2.0), ("b", 1.5)],
    );
    let to_int = BoardConfig {
        sort: vec![SortKey::new(
            "score",
            Order::Desc,
            KeyType::Int,
            KeyOp::Incr,
        )],
        ..p.cfg.clone()
    };
    assert_eq!(p.set_config(to_int), Err(MErr::WrongKind));
    assert_eq!(p.entries[1].vals, Vals::new(&[F(1.5)]));
    let two = BoardConfig {
        sort: vec![
            SortKey::new("t", Order::Asc, KeyType::Int, KeyOp::Incr),
            SortKey::new("score", Order::Desc, KeyType::Float, KeyOp::Incr),
        ],
        order: Order::Asc,
        ..p.cfg.clone()
    };
    p.set_config(two).unwrap();
    assert_eq!(order_of(&p), ["a", "b"]);
    assert_eq!(p.entries[0].vals, Vals::new(&[I(0), F(2.0)]));
    // Between sorted boards, a sort sharing no key name is refused.
    let other = BoardConfig {
        sort: vec![SortKey::new("u", Order::Asc, KeyType::Int, KeyOp::Incr)],
        ..p.cfg.clone()
    };
    assert_eq!(p.set_config(other), Err(MErr::WrongKind));
}
