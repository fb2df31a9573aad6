//! `merge` / `intersect` of generated boards into every destination
//! config, against the model.

use super::*;

/// One `combine` input: source boards (config index, submissions), the
/// sources to combine (index into the boards, weight), the aggregate, and
/// what happens to the result afterwards.
#[derive(Debug, Clone)]
pub(crate) struct CombineCase {
    pub(crate) boards: Vec<(usize, Vec<Sub>)>,
    pub(crate) picks: Vec<(usize, f64)>,
    pub(crate) agg: Aggregate,
    pub(crate) intersect: bool,
    pub(crate) cap: Option<u64>,
    pub(crate) after: Vec<Step>,
}

pub(crate) fn combine_case() -> BoxedStrategy<CombineCase> {
    let weight = prop_oneof![
        30 => select(vec![1.0, 1.0, 2.0, 0.0, -1.0, 0.5, -0.0, INF, NEG_INF]),
        1 => Just(f64::NAN),
    ];
    let plain_sub =
        (member(SMALL), select(SMALL.scores), name()).prop_map(|(member, score, name)| Sub {
            member,
            score,
            scores: None,
            keyed: None,
            op: Some(UpdateOp::Set),
            presence: Presence::Any,
            cond: Cond::Always,
            name,
            data: None,
        });
    let after = vec((op(SMALL, false), vec(read(SMALL), 0..=2)), 0..=12);
    (
        // Indices past the 54 plain configs: boards with sort keys, which
        // no combination takes.
        vec((0..58usize, vec(plain_sub, 0..=14)), 0..=3),
        vec((0..3usize, weight), 0..=4),
        select(vec![Aggregate::Sum, Aggregate::Min, Aggregate::Max]),
        any::<bool>(),
        prop_oneof![3 => Just(None), 1 => (1..=8u64).prop_map(Some)],
        after,
    )
        .prop_map(|(boards, picks, agg, intersect, cap, after)| CombineCase {
            boards,
            picks,
            agg,
            intersect,
            cap,
            after,
        })
        .boxed()
}

/// The plain configs, then a few with sort keys.
pub(crate) fn nth_config(i: usize) -> BoardConfig {
    let all = combos(ALL_ORDERS, ALL_UPDATES);
    let (o, r, t, u) = all[i % all.len()];
    let cfg = config(o, r, t, u, (None, None, None));
    if i < all.len() {
        return cfg;
    }
    let ty = if i.is_multiple_of(2) {
        KeyType::Float
    } else {
        KeyType::Int
    };
    BoardConfig {
        sort: vec![
            SortKey::new("score", o, ty, KeyOp::Incr),
            SortKey::new("at", Order::Asc, KeyType::Int, KeyOp::Set),
        ],
        ..cfg
    }
}

pub(crate) fn run_combine(dest: BoardConfig, c: &CombineCase) -> Result<(), TestCaseError> {
    let mut boards = Vec::new();
    let mut models = Vec::new();
    for (cfg_idx, subs) in &c.boards {
        let cfg = nth_config(*cfg_idx);
        let mut b = Board::new(cfg.clone()).unwrap();
        let mut m = Model::new(cfg).unwrap();
        for s in subs {
            prop_assert_eq!(b.submit(&s.as_submit()).map_err(kind), m.submit(s));
        }
        check_board(&b, &m, 1)?;
        boards.push(b);
        models.push(m);
    }
    let picks: Vec<(usize, f64)> = if boards.is_empty() {
        Vec::new()
    } else {
        c.picks
            .iter()
            .map(|&(i, w)| (i % boards.len(), w))
            .collect()
    };
    let srcs: Vec<(&Board, f64)> = picks.iter().map(|&(i, w)| (&boards[i], w)).collect();
    let msrcs: Vec<(&Model, f64)> = picks.iter().map(|&(i, w)| (&models[i], w)).collect();
    let dest = BoardConfig {
        max_members: c.cap,
        ..dest
    };
    let got = Board::combine(dest.clone(), &srcs, c.agg, c.intersect);
    let want = Model::combine(dest, &msrcs, c.agg, c.intersect);
    match (got, want) {
        (Ok(mut b), Ok(mut m)) => {
            check_board(&b, &m, 3)?;
            run_steps(&mut b, &mut m, &c.after)
        }
        (got, want) => {
            prop_assert_eq!(got.map(|_| ()).map_err(kind), want.map(|_| ()));
            Ok(())
        }
    }
}

#[test]
pub(crate) fn merge_and_intersect_match_redis_rules_into_every_destination_config() {
    for i in 0..56 {
        let dest = nth_config(i);
        let result = runner(cases(64)).run(&combine_case(), |c| run_combine(dest.clone(), &c));
        if let Err(e) = result {
            panic!("destination {dest:?}: {e}");
        }
    }
}
