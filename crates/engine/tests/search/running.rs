//! Running generated writes and queries on a board against the naive
//! scan.

use super::*;

// ================================================================= running

pub(crate) fn check_board(b: &Board, qs: &[Query]) -> Result<(), TestCaseError> {
    b.check_invariants().map_err(TestCaseError::fail)?;
    b.check_search_invariants().map_err(TestCaseError::fail)?;
    if b.config().search_fields.is_empty() {
        prop_assert!(!b.search_enabled());
    } else {
        prop_assert!(b.search_enabled(), "the index was lost");
    }
    for q in qs {
        check_query(b, q)?;
    }
    Ok(())
}

pub(crate) fn enable(b: &mut Board, planes: usize) {
    if !b.config().search_fields.is_empty() {
        b.enable_search_with_planes(planes).unwrap();
    }
}

pub(crate) fn apply(
    b: &mut Board,
    op: &Op,
    planes: usize,
    qs: &[Query],
) -> Result<(), TestCaseError> {
    match op {
        Op::Submit(s) => {
            let _ = b.submit(&s.as_submit());
        }
        Op::SubmitMany(v) => {
            let subs: Vec<Submit> = v.iter().map(Sub::as_submit).collect();
            let _ = b.submit_many(&subs);
        }
        Op::SetData(m, n, d) => {
            let _ = b.set_data(m, n.as_deref(), d.as_deref());
        }
        Op::Remove(ms) => {
            b.remove(ms).unwrap();
        }
        Op::RemoveRangeByRank(a, z) => {
            b.remove_range_by_rank(*a, *z).unwrap();
        }
        Op::RemoveRangeByScore(lo, hi) => {
            b.remove_range_by_score(&ScoreRange::inclusive(*lo, *hi))
                .unwrap();
        }
        Op::Pop(c, w) => {
            b.pop(*c, *w).unwrap();
        }
        Op::Clear => b.clear(),
        Op::Take(keep) => {
            let taken = b.take();
            check_board(&taken, qs)?;
            check_board(b, qs)?;
            if *keep {
                *b = taken;
            }
        }
        Op::SetConfig(c) => {
            let was = b.search_enabled();
            b.set_config(c.config()).unwrap();
            // A board whose search was disabled by empty fields is enabled
            // again by its next search (the server's NotIndexed retry).
            if !was {
                if b.config().search_fields.is_empty() {
                    prop_assert_eq!(
                        b.search("a", &SearchOptions::default()).unwrap_err(),
                        SearchError::Disabled
                    );
                } else {
                    prop_assert_eq!(
                        b.search("a", &SearchOptions::default()).unwrap_err(),
                        SearchError::NotIndexed
                    );
                }
                enable(b, planes);
            }
        }
        Op::Snapshot(carry_on) => {
            let mut bytes = Vec::new();
            b.write_snapshot(&mut bytes).unwrap();
            let mut restored = Board::read_snapshot(&mut bytes.as_slice()).unwrap();
            // The index is not in the snapshot: rebuilt on demand.
            prop_assert!(!restored.search_enabled());
            enable(&mut restored, planes);
            check_board(&restored, qs)?;
            if *carry_on {
                *b = restored;
            }
        }
        Op::Combine(subs, intersect, agg) => {
            let mut other = Board::new(BoardConfig::default()).unwrap();
            for s in subs {
                let _ = other.submit(&s.as_submit());
            }
            let result = Board::combine(
                b.config().clone(),
                &[(&*b, 1.0), (&other, 2.0)],
                *agg,
                *intersect,
            )
            .unwrap();
            b.replace_content(result);
        }
        Op::Clone => {
            let c = b.clone();
            check_board(&c, qs)?;
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) cfg: Cfg,
    pub(crate) planes: usize,
    /// Index before the prefill (every member arrives through the write
    /// hooks) or after it (bulk build).
    pub(crate) early: bool,
    pub(crate) prefill: Vec<Sub>,
    pub(crate) steps: Vec<(Op, Vec<Query>)>,
}

pub(crate) fn case(prefill: usize, steps: usize) -> BoxedStrategy<Case> {
    (
        cfg(),
        select(vec![0usize, 1, 3, 48]),
        any::<bool>(),
        vec(sub(), prefill / 4..=prefill),
        vec((op(), queries()), 1..=steps),
    )
        .prop_map(|(cfg, planes, early, prefill, steps)| Case {
            cfg,
            planes,
            early,
            prefill,
            steps,
        })
        .boxed()
}

pub(crate) fn run_case(c: &Case) -> Result<(), TestCaseError> {
    let mut b = Board::new(c.cfg.config()).unwrap();
    if b.config().search_fields.is_empty() {
        prop_assert_eq!(b.enable_search(), Err(SearchError::Disabled));
    } else {
        prop_assert_eq!(
            b.search("a", &SearchOptions::default()).unwrap_err(),
            SearchError::NotIndexed
        );
    }
    if c.early {
        enable(&mut b, c.planes);
    }
    for s in &c.prefill {
        let _ = b.submit(&s.as_submit());
    }
    enable(&mut b, c.planes);
    check_board(&b, &[])?;
    for (i, (op, qs)) in c.steps.iter().enumerate() {
        let ctx = |e: TestCaseError| TestCaseError::fail(format!("step {i} ({op:?}): {e}"));
        apply(&mut b, op, c.planes, qs).map_err(ctx)?;
        check_board(&b, qs).map_err(ctx)?;
    }
    Ok(())
}

/// Cases: `PROPTEST_CASES` if set; else `release` (a tenth in debug).
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
        max_shrink_iters: 20_000,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })
}
