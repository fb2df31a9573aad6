//! Running a sequence on a board and on the model side by side, and the
//! checks after each step.

use super::*;

// ==================================================================== runner

/// Whole-board agreement: invariants, config, every entry and every
/// per-member read.
pub(crate) fn check_board(b: &Board, m: &Model, page_size: u64) -> Result<(), TestCaseError> {
    b.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(b.config(), &m.cfg);
    prop_assert_eq!(b.ranking(), m.cfg.ranking);
    prop_assert_eq!(b.is_read_only(), m.read_only);
    prop_assert_eq!(b.len(), m.len());
    prop_assert_eq!(b.is_empty(), m.len() == 0);
    prop_assert_eq!(b.info().members, m.len() as u64);
    prop_assert_eq!(board_rows(b), m.rows());
    // A full scan sees every member once, with its score.
    let mut scanned = Vec::new();
    let mut cursor = 0;
    let count = if m.len() > 100 { 97 } else { 7 };
    loop {
        let (next, page) = b.scan(cursor, count);
        scanned.extend(page);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    scanned.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want: Vec<(Vec<u8>, f64)> = m
        .entries
        .iter()
        .map(|e| (e.member.clone(), e.score()))
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    prop_assert_eq!(scanned, want);
    let view = m.view();
    let all: Vec<&[u8]> = m.entries.iter().map(|e| e.member.as_slice()).collect();
    let ranks: Vec<Option<u64>> = view.iter().map(|v| Some(v.0)).collect();
    prop_assert_eq!(b.rank_many(&all), ranks);
    let scores: Vec<Option<f64>> = m.entries.iter().map(|e| Some(e.score())).collect();
    prop_assert_eq!(b.score_many(&all), scores);
    // Every member of a small board; a spread sample of a big one.
    let stride = (m.len() / 500).max(1);
    // Every cut of the order, as a predicate on entries (the position of
    // each member in the model), is found by one descent.
    let at: HashMap<&[u8], usize> = m
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.member.as_slice(), i))
        .collect();
    for k in (0..=m.len()).step_by(stride).chain([m.len()]) {
        // The predicate is also given each member's score.
        let mut wrong = None;
        let got = b.partition_point(|mem, s| {
            let want = m.entries[at[mem]].score();
            if s != want {
                wrong = Some((Mem(mem.to_vec()), s, want));
            }
            at[mem] < k
        });
        prop_assert_eq!(wrong, None);
        prop_assert_eq!(got, k);
    }
    // A predicate that holds for no prefix still answers a position.
    let odd = b.partition_point(|mem, s| (mem.len() + s.to_bits() as usize) % 2 == 1);
    prop_assert!(odd <= m.len());
    for (i, e) in m.entries.iter().enumerate().step_by(stride) {
        let mem = &e.member;
        prop_assert_eq!(
            b.entry(mem, page_size),
            Some(m.info_at(i, page_size, &view))
        );
        prop_assert_eq!(b.position(mem), Some(i));
        prop_assert_eq!(b.rank(mem), Some(view[i].0));
        prop_assert_eq!(b.score(mem), Some(e.score()));
        prop_assert_eq!(b.scores(mem).map(|v| Vals::new(&v)), Some(e.vals));
        prop_assert_eq!(b.percentile(mem), Some(m.percentile_at(i, &view)));
    }
    Ok(())
}

pub(crate) fn check_read(b: &Board, m: &Model, r: &Read) -> Result<(), TestCaseError> {
    match r {
        Read::Entry(x, ps) => prop_assert_eq!(b.entry(&x.0, *ps), m.entry(&x.0, *ps)),
        Read::Rank(x) => prop_assert_eq!(b.rank(&x.0), m.rank(&x.0)),
        Read::Score(x) => prop_assert_eq!(b.score(&x.0), m.score(&x.0)),
        Read::Position(x) => prop_assert_eq!(b.position(&x.0), m.find(&x.0)),
        Read::Percentile(x) => prop_assert_eq!(b.percentile(&x.0), m.percentile(&x.0)),
        Read::Count(rg) => prop_assert_eq!(b.count_range(rg).map_err(kind), m.count_range(rg)),
        Read::Top(p, ps) => prop_assert_eq!(b.top(*p, *ps).map_err(kind), m.top(*p, *ps)),
        Read::RangeByRank(a, z, w) => {
            prop_assert_eq!(b.range_by_rank(*a, *z, *w), m.range_by_rank(*a, *z, *w))
        }
        Read::RangeByScore(rg, w, o, l) => prop_assert_eq!(
            b.range_by_score(rg, *w, *o, *l).map_err(kind),
            m.range_by_score(rg, *w, *o, *l)
        ),
        Read::Around(x, ps) => prop_assert_eq!(b.around(&x.0, *ps), m.around(&x.0, *ps)),
        Read::Ranks(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            prop_assert_eq!(b.ranks(&raw), m.ranks(xs))
        }
        Read::ScoreAtPercentile(p) => prop_assert_eq!(
            b.score_at_percentile(*p).map_err(kind),
            m.score_at_percentile(*p)
        ),
        Read::RankMany(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            let want: Vec<Option<u64>> = xs.iter().map(|x| m.rank(&x.0)).collect();
            prop_assert_eq!(b.rank_many(&raw), want)
        }
        Read::ScoreMany(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            let want: Vec<Option<f64>> = xs.iter().map(|x| m.score(&x.0)).collect();
            prop_assert_eq!(b.score_many(&raw), want)
        }
        Read::EntriesFrom(pos, lim) => {
            let want = m.entries_at(m.span(*pos, *lim));
            // The borrowing visitor sees exactly what the copying read returns.
            let mut seen = Vec::new();
            let n = b.visit(*pos, *lim, false, |e| {
                seen.push(Entry {
                    member: e.member.to_vec(),
                    score: e.score,
                    scores: e.scores,
                    rank: e.rank,
                    name: e.name.map(Into::into),
                    data: e.data.map(Into::into),
                })
            });
            prop_assert_eq!(n, want.len());
            prop_assert_eq!(&seen, &want);
            prop_assert_eq!(b.entries_from(*pos, *lim), want)
        }
    }
    Ok(())
}

pub(crate) fn apply_op(
    b: &mut Board,
    m: &mut Model,
    op: &Op,
    ps: u64,
) -> Result<(), TestCaseError> {
    match op {
        Op::Prefill(subs) => {
            for s in subs {
                let s = s.resolve(m);
                prop_assert_eq!(
                    b.submit(&s.as_submit()).map_err(kind),
                    m.submit(&s),
                    "{:?}",
                    s
                );
            }
        }
        Op::Submit(s) => {
            let s = s.resolve(m);
            prop_assert_eq!(
                b.submit(&s.as_submit()).map_err(kind),
                m.submit(&s),
                "{:?}",
                s
            );
        }
        Op::SubmitMany(batch) => {
            let batch: Vec<Sub> = batch.iter().map(|s| s.resolve(m)).collect();
            let subs: Vec<Submit> = batch.iter().map(Sub::as_submit).collect();
            let got = b
                .submit_many(&subs)
                .map(|v| v.into_iter().map(|r| r.map_err(kind)).collect::<Vec<_>>())
                .map_err(kind);
            prop_assert_eq!(got, m.submit_many(&batch), "{:?}", batch);
        }
        Op::Remove(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            prop_assert_eq!(b.remove(&raw).map_err(kind), m.remove(xs));
        }
        Op::RemoveRangeByRank(a, z) => prop_assert_eq!(
            b.remove_range_by_rank(*a, *z).map_err(kind),
            m.remove_range_by_rank(*a, *z)
        ),
        Op::RemoveRangeByScore(r) => prop_assert_eq!(
            b.remove_range_by_score(r).map_err(kind),
            m.remove_range_by_score(r)
        ),
        Op::Pop(c, w) => prop_assert_eq!(b.pop(*c, *w).map_err(kind), m.pop(*c, *w)),
        Op::SetData(x, n, d) => prop_assert_eq!(
            b.set_data(&x.0, n.as_deref(), d.as_deref()).map_err(kind),
            m.set_data(&x.0, n.as_deref(), d.as_deref())
        ),
        Op::Clear => {
            b.clear();
            m.clear();
        }
        Op::Take(keep_taken) => {
            let taken = b.take();
            check_board(&taken, m, ps)?;
            b.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert!(b.is_empty());
            prop_assert!(!b.is_read_only());
            prop_assert_eq!(b.config(), &m.cfg);
            if *keep_taken {
                *b = taken;
            } else {
                m.clear();
                m.read_only = false;
            }
        }
        Op::SetConfig(c) => {
            prop_assert_eq!(
                b.set_config(c.clone()).map_err(kind),
                m.set_config(c.clone())
            )
        }
        Op::Reconfigure(r) => {
            let c = r.apply(&m.cfg);
            let sort = c.sort.clone();
            prop_assert_eq!(
                b.set_config(c.clone()).map_err(kind),
                m.set_config(c),
                "set_config of sort {:?}",
                sort
            )
        }
        Op::Snapshot(keep_restored) => {
            let mut bytes = Vec::new();
            b.write_snapshot(&mut bytes).unwrap();
            // The copy the server snapshots writes the very same bytes.
            let mut from_image = Vec::new();
            b.image().write_snapshot(&mut from_image).unwrap();
            prop_assert!(
                from_image == bytes,
                "a board's image snapshots to other bytes"
            );
            let restored = Board::read_snapshot(&mut bytes.as_slice())
                .map_err(|e| TestCaseError::fail(format!("read_snapshot: {e}")))?;
            check_board(&restored, m, ps)?;
            let mut again = Vec::new();
            restored.write_snapshot(&mut again).unwrap();
            prop_assert!(again == bytes, "a restored board snapshots to other bytes");
            if *keep_restored {
                *b = restored;
            }
        }
        Op::ReadOnly(inner) => {
            b.set_read_only(true);
            m.read_only = true;
            apply_op(b, m, inner, ps)?;
            check_board(b, m, ps)?;
            b.set_read_only(false);
            m.read_only = false;
        }
    }
    Ok(())
}

pub(crate) fn run_steps(b: &mut Board, m: &mut Model, steps: &[Step]) -> Result<(), TestCaseError> {
    for (i, (op, reads)) in steps.iter().enumerate() {
        let ps = (i % 5) as u64;
        let before = (
            m.cfg.order,
            m.cfg.ranking,
            m.cfg.tiebreak,
            m.cfg.update,
            m.cfg.sort.clone(),
        );
        let ctx =
            |e: TestCaseError| TestCaseError::fail(format!("step {i} ({op:?}) on {before:?}: {e}"));
        apply_op(b, m, op, ps).map_err(ctx)?;
        check_board(b, m, ps).map_err(ctx)?;
        for r in reads {
            check_read(b, m, r)
                .map_err(|e| TestCaseError::fail(format!("step {i} ({op:?}), read {r:?}: {e}")))?;
        }
    }
    Ok(())
}

/// Cases per config combination: `PROPTEST_CASES` if set; else `release`
/// (the default run is sized for `cargo test --release`; a debug build is
/// some 20 times slower, so it runs a tenth of the cases).
pub(crate) fn cases(release: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            release.div_ceil(10)
        } else {
            release
        })
}

pub(crate) fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        // Inputs of thousands of submissions shrink slowly: report the best
        // reduction found within a minute rather than hang.
        max_shrink_iters: 20_000,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })
}

pub(crate) const ALL_ORDERS: &[Order] = &[Order::Desc, Order::Asc];
pub(crate) const ALL_UPDATES: &[UpdateOp] = &[UpdateOp::Set, UpdateOp::Best, UpdateOp::Incr];

pub(crate) fn combos(
    orders: &[Order],
    updates: &[UpdateOp],
) -> Vec<(Order, Ranking, Tiebreak, UpdateOp)> {
    let mut v = Vec::new();
    for &o in orders {
        for &r in &[Ranking::Unique, Ranking::Dense, Ranking::Competition] {
            for &t in &[Tiebreak::Member, Tiebreak::First, Tiebreak::Last] {
                for &u in updates {
                    v.push((o, r, t, u));
                }
            }
        }
    }
    v
}

/// Runs random operation sequences from an empty board of each
/// combination of the given orders and updates with every ranking and
/// tiebreak.
pub(crate) fn run_sequences(
    orders: &[Order],
    updates: &[UpdateOp],
    scale: Scale,
    cases_per_combo: u32,
) {
    for (o, r, t, u) in combos(orders, updates) {
        let strategy = (limits(scale), steps(scale, false));
        let result = runner(cases(cases_per_combo)).run(&strategy, |(lim, steps)| {
            let cfg = config(o, r, t, u, lim);
            let mut b = Board::new(cfg.clone()).expect("valid config");
            let mut m = Model::new(cfg).expect("valid config");
            check_board(&b, &m, 1)?;
            run_steps(&mut b, &mut m, &steps)
        });
        if let Err(e) = result {
            panic!("order {o:?}, ranking {r:?}, tiebreak {t:?}, update {u:?}: {e}");
        }
    }
}

/// Runs random operation sequences from an empty board sorted by `n` keys
/// (each key's direction, type and operator drawn per case) of every
/// combination of ranking, tiebreak and the given updates, for each `n`.
pub(crate) fn run_sorted_sequences(
    key_counts: &[usize],
    updates: &[UpdateOp],
    scale: Scale,
    cases_per_combo: u32,
) {
    for &n in key_counts {
        for (_, r, t, u) in combos(&[Order::Desc], updates) {
            let strategy = (sort_keys(n), limits(scale), steps(scale, true));
            let result = runner(cases(cases_per_combo)).run(&strategy, |(keys, lim, steps)| {
                let cfg = BoardConfig {
                    order: keys[0].order,
                    sort: keys,
                    ..config(Order::Desc, r, t, u, lim)
                };
                let mut b = Board::new(cfg.clone()).expect("valid config");
                let mut m = Model::new(cfg).expect("valid config");
                check_board(&b, &m, 1)?;
                run_steps(&mut b, &mut m, &steps)
            });
            if let Err(e) = result {
                panic!("{n} keys, ranking {r:?}, tiebreak {t:?}, update {u:?}: {e}");
            }
        }
    }
}
