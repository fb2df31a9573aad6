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
