//! The generators of boards, configs, submissions and operation
//! sequences, at several scales.

use super::*;

// ================================================================ strategies

/// How big the generated boards get.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    pub(crate) letters: &'static [u8],
    pub(crate) min_len: usize,
    pub(crate) max_len: usize,
    pub(crate) scores: &'static [f64],
    /// Now and then a score or a bound from here instead.
    pub(crate) far: &'static [f64],
    pub(crate) max_batch: usize,
    /// Most members named by one `remove`.
    pub(crate) max_remove: usize,
    pub(crate) max_steps: usize,
    /// Largest rank / count / page size argument, besides `u64::MAX`.
    pub(crate) max_arg: u64,
    pub(crate) max_cap: u64,
    /// Valid submissions applied as one batch before the random steps
    /// (between half this and this many).
    pub(crate) prefill: usize,
    /// Weights of submit, submit_many, remove, remove_range_by_rank,
    /// remove_range_by_score, pop, set_data, clear, take, set_config,
    /// snapshot, and a change of the sort keys.
    pub(crate) weights: [u32; 12],
}

/// About 20 members, 11 scores: ties, updates and evictions all the time.
pub(crate) const SMALL: Scale = Scale {
    letters: b"abc\xff",
    min_len: 1,
    max_len: 2,
    scores: &[
        -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 0.5, -0.0, INF, NEG_INF,
    ],
    far: &[],
    max_batch: 6,
    max_remove: 3,
    max_steps: 100,
    max_arg: 24,
    max_cap: 12,
    prefill: 30,
    weights: [60, 8, 4, 2, 1, 2, 4, 1, 1, 2, 2, 1],
};

pub(crate) const MANY_SCORES: &[f64] = &[
    -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0,
    8.0, 9.0, 0.5, -0.0, INF, NEG_INF,
];

/// About 580 members: many leaves under one root, long runs of tied
/// scores across leaf boundaries.
pub(crate) const LARGE: Scale = Scale {
    letters: b"abcdefgh",
    min_len: 1,
    max_len: 3,
    scores: MANY_SCORES,
    far: &[],
    max_batch: 250,
    max_remove: 60,
    max_steps: 30,
    max_arg: 700,
    max_cap: 500,
    prefill: 1200,
    weights: [20, 40, 6, 4, 2, 3, 6, 1, 1, 4, 4, 1],
};

/// Thousands of members: three levels, so separators also sit in
/// grandparents and inner nodes merge and split.
pub(crate) const XL: Scale = Scale {
    letters: b"abcdefghijklmnopqrstuvwxyz",
    min_len: 3,
    max_len: 3,
    scores: MANY_SCORES,
    far: &[],
    max_batch: 1500,
    max_remove: 400,
    max_steps: 12,
    max_arg: 6000,
    max_cap: 8000,
    prefill: 9000,
    // No `clear`: trivial, and it would waste the expensive prefill.
    weights: [4, 10, 3, 3, 1, 2, 1, 0, 1, 2, 3, 0],
};

/// SMALL for boards with sort keys: their sort changes often, a plain
/// config now and then.
pub(crate) const SMALL_SORTED: Scale = Scale {
    far: FAR,
    weights: [60, 8, 4, 2, 1, 2, 4, 1, 1, 1, 2, 5],
    ..SMALL
};

/// LARGE for boards with sort keys.
pub(crate) const LARGE_SORTED: Scale = Scale {
    far: FAR,
    weights: [20, 40, 6, 4, 2, 3, 6, 1, 1, 1, 4, 5],
    ..LARGE
};

/// XL for boards with sort keys.
pub(crate) const XL_SORTED: Scale = Scale {
    far: FAR,
    weights: [4, 10, 3, 3, 1, 2, 1, 0, 1, 0, 3, 2],
    ..XL
};

/// Where an int key's values part from their doubles: 2^53 and its
/// neighbours with a double, and i64's ends (2^63 is just past the end).
const FAR: &[f64] = &[
    9_007_199_254_740_992.0,
    9_007_199_254_740_994.0,
    -9_007_199_254_740_994.0,
    9_223_372_036_854_775_808.0,
    -9_223_372_036_854_775_808.0,
    1e300,
];

/// A valid member id (present or absent).
pub(crate) fn member(s: Scale) -> BoxedStrategy<Mem> {
    vec(select(s.letters), s.min_len..=s.max_len)
        .prop_map(Mem)
        .boxed()
}

/// A member id for reads and removals: sometimes an invalid one.
pub(crate) fn any_member(s: Scale) -> BoxedStrategy<Mem> {
    prop_oneof![
        40 => member(s),
        1 => Just(Mem(Vec::new())),
    ]
    .boxed()
}

pub(crate) fn members(s: Scale, max: usize) -> BoxedStrategy<Vec<Mem>> {
    vec(any_member(s), 0..=max).boxed()
}

/// A score for a bound or a percentile-free read: sometimes NaN.
pub(crate) fn score(s: Scale) -> BoxedStrategy<f64> {
    prop_oneof![
        60 => plain_score(s),
        1 => Just(f64::NAN),
    ]
    .boxed()
}

/// A score from the scale's pool, now and then a far one.
pub(crate) fn plain_score(s: Scale) -> BoxedStrategy<f64> {
    if s.far.is_empty() {
        return select(s.scores).boxed();
    }
    prop_oneof![
        12 => select(s.scores),
        1 => select(s.far),
    ]
    .boxed()
}

pub(crate) fn name() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(String::new())),
        1 => Just(Some("Al".to_string())),
        1 => Just(Some("Bo Bo".to_string())),
    ]
    .boxed()
}

pub(crate) fn data() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(String::new())),
        1 => Just(Some("{}".to_string())),
        1 => Just(Some(r#"{"lvl":3}"#.to_string())),
    ]
    .boxed()
}

/// Ways to make a submission (or a `set_data`) invalid.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Flaw {
    NanScore,
    EmptyMember,
    LongMember,
    LongName,
    ArrayData,
    BrokenData,
}

pub(crate) fn flaw() -> impl Strategy<Value = Flaw> {
    select(vec![
        Flaw::NanScore,
        Flaw::EmptyMember,
        Flaw::LongMember,
        Flaw::LongName,
        Flaw::ArrayData,
        Flaw::BrokenData,
    ])
}

impl Sub {
    pub(crate) fn with_flaw(mut self, f: Flaw) -> Sub {
        match f {
            Flaw::NanScore => {
                self.score = f64::NAN;
                if let Some(k) = self.keyed.as_mut() {
                    k.nan = true;
                }
            }
            Flaw::EmptyMember => self.member = Mem(Vec::new()),
            Flaw::LongMember => self.member = Mem(vec![b'm'; MAX_ID_BYTES + 1]),
            Flaw::LongName => self.name = Some("n".repeat(MAX_NAME + 1)),
            Flaw::ArrayData => self.data = Some("[1]".to_string()),
            Flaw::BrokenData => self.data = Some(r#"{"a":"#.to_string()),
        }
        self
    }
}

pub(crate) fn update_op() -> impl Strategy<Value = UpdateOp> {
    select(vec![UpdateOp::Set, UpdateOp::Best, UpdateOp::Incr])
}

/// A well-formed submission (it may still be refused by the board's
/// bounds or produce a NaN).
pub(crate) fn valid_sub(s: Scale) -> BoxedStrategy<Sub> {
    let op = prop_oneof![3 => Just(None), 3 => update_op().prop_map(Some)];
    let presence = prop_oneof![
        6 => Just(Presence::Any),
        1 => Just(Presence::OnlyNew),
        1 => Just(Presence::OnlyExisting),
    ];
    let cond = prop_oneof![
        6 => Just(Cond::Always),
        1 => Just(Cond::Greater),
        1 => Just(Cond::Less),
    ];
    (
        member(s),
        plain_score(s),
        op,
        presence,
        cond,
        name(),
        data(),
    )
        .prop_map(|(member, score, op, presence, cond, name, data)| Sub {
            member,
            score,
            scores: None,
            keyed: None,
            op,
            presence,
            cond,
            name,
            data,
        })
        .boxed()
}

/// A run as a sequential load sends it: plain sets of members, each score
/// beyond the last (ascending or descending, from any of the scale's
/// scores, so past either end of the board or into its middle), and a
/// member repeated now and then.
pub(crate) fn sequential_batch(s: Scale) -> BoxedStrategy<Vec<Sub>> {
    (
        vec(member(s), 1..=s.max_batch),
        select(s.scores),
        any::<bool>(),
    )
        .prop_map(|(members, start, up)| {
            let start = if start.is_finite() { start } else { 0.0 };
            members
                .into_iter()
                .enumerate()
                .map(|(i, member)| Sub {
                    member,
                    score: if up {
                        start + i as f64
                    } else {
                        start - i as f64
                    },
                    scores: None,
                    keyed: None,
                    op: None,
                    presence: Presence::Any,
                    cond: Cond::Always,
                    name: None,
                    data: None,
                })
                .collect()
        })
        .boxed()
}

pub(crate) fn key_type() -> impl Strategy<Value = KeyType> {
    select(vec![KeyType::Float, KeyType::Int])
}

pub(crate) fn key_op() -> impl Strategy<Value = KeyOp> {
    select(vec![KeyOp::Incr, KeyOp::Set, KeyOp::Max, KeyOp::Min])
}

/// How a keyed submission picks one key's value (see [`pick_value`]).
pub(crate) fn pick() -> BoxedStrategy<Pick> {
    prop_oneof![
        20 => (0..SMALL_VALUES).prop_map(Pick::Small),
        3 => (0..ODD_VALUES).prop_map(Pick::Odd),
        1 => (0..SMALL_VALUES + ODD_VALUES).prop_map(Pick::Cross),
    ]
    .boxed()
}

/// `n` sort keys, each with a random direction, type and operator, named
/// `a`, `b`… (one of them now and then `score`, the name a plain board's
/// score goes by when the sort changes).
pub(crate) fn sort_keys(n: usize) -> BoxedStrategy<Vec<SortKey>> {
    let score_at = prop_oneof![2 => Just(None), 1 => (0..n).prop_map(Some)];
    (vec((order(), key_type(), key_op()), n), score_at)
        .prop_map(|(specs, score_at)| {
            specs
                .into_iter()
                .enumerate()
                .map(|(j, (o, t, op))| {
                    let name = if score_at == Some(j) {
                        "score"
                    } else {
                        ["a", "b", "c", "d"][j]
                    };
                    SortKey::new(name, o, t, op)
                })
                .collect()
        })
        .boxed()
}

/// A submission to a board with sort keys: values by key name for the
/// keys the board has when it is sent, in any order, sometimes some left
/// out, a name unknown or given twice, or no values but a bare score.
/// `in_batch`: rarely a shape a `set` refuses (it would refuse the whole
/// batch).
pub(crate) fn keyed_sub(s: Scale, in_batch: bool) -> BoxedStrategy<Sub> {
    let shape = if in_batch {
        prop_oneof![
            14 => Just(Shape::Full),
            1 => Just(Shape::Partial),
            3 => Just(Shape::Bare),
        ]
        .boxed()
    } else {
        prop_oneof![
            14 => Just(Shape::Full),
            3 => Just(Shape::Partial),
            3 => Just(Shape::Bare),
            1 => Just(Shape::Unknown),
            1 => Just(Shape::Twice),
        ]
        .boxed()
    };
    (
        valid_sub(s),
        prop::array::uniform4(pick()),
        shape,
        0..4usize,
        prop::array::uniform4(any::<bool>()),
        0..5usize,
    )
        .prop_map(|(sub, picks, shape, rot, keep, at)| Sub {
            keyed: Some(Keyed {
                picks,
                shape,
                rot,
                keep,
                at,
                nan: false,
            }),
            ..sub
        })
        .boxed()
}

/// A well-formed submission for a plain board, or a keyed one.
pub(crate) fn valid_for(s: Scale, sorted: bool, in_batch: bool) -> BoxedStrategy<Sub> {
    if sorted {
        keyed_sub(s, in_batch)
    } else {
        valid_sub(s)
    }
}

pub(crate) fn sub(s: Scale, sorted: bool) -> BoxedStrategy<Sub> {
    prop_oneof![
        30 => valid_for(s, sorted, false),
        1 => (valid_for(s, sorted, false), flaw()).prop_map(|(x, f)| x.with_flaw(f)),
    ]
    .boxed()
}

/// A batch: well-formed, or with one bad item somewhere (refused whole).
pub(crate) fn batch(s: Scale, sorted: bool) -> BoxedStrategy<Vec<Sub>> {
    prop_oneof![
        10 => vec(valid_for(s, sorted, true), 0..=s.max_batch),
        2 => sequential_batch(s),
        1 => (vec(valid_for(s, sorted, true), 1..=s.max_batch), any::<prop::sample::Index>(), flaw())
            .prop_map(|(mut v, i, f)| {
                let i = i.index(v.len());
                v[i] = v[i].clone().with_flaw(f);
                v
            }),
    ]
    .boxed()
}

pub(crate) fn set_data_args(s: Scale) -> BoxedStrategy<(Mem, Option<String>, Option<String>)> {
    prop_oneof![
        20 => (member(s), name(), data()),
        1 => (valid_sub(s), flaw()).prop_map(|(x, f)| {
            let x = x.with_flaw(f);
            (x.member, x.name, x.data)
        }),
    ]
    .boxed()
}

pub(crate) fn bound(s: Scale) -> BoxedStrategy<Bound<f64>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => score(s).prop_map(Bound::Included),
        3 => score(s).prop_map(Bound::Excluded),
    ]
    .boxed()
}

pub(crate) fn range(s: Scale) -> BoxedStrategy<ScoreRange> {
    (bound(s), bound(s))
        .prop_map(|(min, max)| ScoreRange { min, max })
        .boxed()
}

/// A count, rank or page argument: small, 0, or `u64::MAX`.
pub(crate) fn arg(s: Scale) -> BoxedStrategy<u64> {
    prop_oneof![
        20 => 0..=s.max_arg,
        1 => Just(u64::MAX),
    ]
    .boxed()
}

pub(crate) fn small_arg(s: Scale) -> BoxedStrategy<u64> {
    prop_oneof![
        20 => 0..=(s.max_arg / 3).max(7),
        1 => Just(u64::MAX),
    ]
    .boxed()
}

pub(crate) fn order() -> impl Strategy<Value = Order> {
    select(vec![Order::Desc, Order::Asc])
}
pub(crate) fn ranking() -> impl Strategy<Value = Ranking> {
    select(vec![Ranking::Unique, Ranking::Dense, Ranking::Competition])
}
pub(crate) fn tiebreak() -> impl Strategy<Value = Tiebreak> {
    select(vec![Tiebreak::Member, Tiebreak::First, Tiebreak::Last])
}

/// Bounds and capacity: `(min_score, max_score, max_members)`, always valid.
pub(crate) fn limits(s: Scale) -> BoxedStrategy<(Option<f64>, Option<f64>, Option<u64>)> {
    let min = prop_oneof![
        3 => Just(None),
        1 => Just(Some(-2.0)),
        1 => Just(Some(NEG_INF)),
        1 => Just(Some(0.0)),
    ];
    let max = prop_oneof![
        3 => Just(None),
        1 => Just(Some(2.0)),
        1 => Just(Some(INF)),
        1 => Just(Some(3.0)),
    ];
    let cap = prop_oneof![3 => Just(None), 2 => (1..=s.max_cap).prop_map(Some)];
    if !s.far.is_empty() {
        // Bounds compare a first key as a double: 2^53 + 1 is within 2^53.
        let two_53 = 9_007_199_254_740_992.0;
        let min = prop_oneof![6 => min, 1 => Just(Some(-two_53))];
        let max = prop_oneof![6 => max, 1 => Just(Some(two_53))];
        return prop_oneof![
            2 => Just((None, None, None)),
            3 => (min, max, cap),
        ]
        .boxed();
    }
    prop_oneof![
        2 => Just((None, None, None)),
        3 => (min, max, cap),
    ]
    .boxed()
}

/// Any config `set_config` may be given, sometimes an invalid one.
pub(crate) fn any_config(s: Scale) -> BoxedStrategy<BoardConfig> {
    let lim = prop_oneof![
        8 => limits(s),
        1 => Just((Some(1.0), Some(-1.0), None)),
        1 => Just((None, None, Some(0))),
        1 => Just((Some(f64::NAN), None, None)),
    ];
    (order(), ranking(), tiebreak(), update_op(), lim)
        .prop_map(|(order, ranking, tiebreak, update, (min, max, cap))| {
            config(order, ranking, tiebreak, update, (min, max, cap))
        })
        .boxed()
}

pub(crate) fn config(
    order: Order,
    ranking: Ranking,
    tiebreak: Tiebreak,
    update: UpdateOp,
    (min_score, max_score, max_members): (Option<f64>, Option<f64>, Option<u64>),
) -> BoardConfig {
    BoardConfig {
        order,
        ranking,
        tiebreak,
        update,
        min_score,
        max_score,
        max_members,
        ..BoardConfig::default()
    }
}

/// 1-based ranks `start..=stop` for a removal: mostly short spans.
pub(crate) fn rank_span(s: Scale) -> BoxedStrategy<(u64, u64)> {
    let short = (0..=s.max_arg, 0..=(s.max_arg / 8).max(3)).prop_map(|(a, n)| (a, a + n));
    prop_oneof![
        12 => short,
        1 => (arg(s), arg(s)),
    ]
    .boxed()
}

/// A change of the sort keys (and now and then of the other settings).
pub(crate) fn reconf(s: Scale) -> BoxedStrategy<Reconf> {
    let at = || 0..4usize;
    let name = || select(vec!["a", "b", "c", "d", "e", "score"]).prop_map(String::from);
    let new_key = (name(), order(), key_type(), key_op())
        .prop_map(|(n, o, t, op)| SortKey::new(&n, o, t, op));
    let change = prop_oneof![
        2 => Just(SortChange::Keep),
        3 => (at(), new_key).prop_map(|(j, k)| SortChange::Add(j, k)),
        2 => at().prop_map(SortChange::Drop),
        3 => at().prop_map(SortChange::Flip),
        3 => at().prop_map(SortChange::Retype),
        2 => (at(), key_op()).prop_map(|(j, op)| SortChange::Reop(j, op)),
        1 => (at(), name()).prop_map(|(j, n)| SortChange::Rename(j, n)),
        1 => (at(), at()).prop_map(|(i, j)| SortChange::Swap(i, j)),
        1 => Just(SortChange::Plain),
        1 => Just(SortChange::Contradict),
    ];
    (
        change,
        proptest::option::weighted(0.2, ranking()),
        proptest::option::weighted(0.2, tiebreak()),
        proptest::option::weighted(0.2, update_op()),
        proptest::option::weighted(0.2, limits(s)),
    )
        .prop_map(|(change, ranking, tiebreak, update, limits)| Reconf {
            change,
            ranking,
            tiebreak,
            update,
            limits,
        })
        .boxed()
}

pub(crate) fn write_op(s: Scale, sorted: bool) -> BoxedStrategy<Op> {
    let pop = prop_oneof![
        20 => 0..=s.max_arg / 10 + 4,
        1 => Just(u64::MAX),
    ];
    let ops: [BoxedStrategy<Op>; 12] = [
        sub(s, sorted).prop_map(Op::Submit).boxed(),
        batch(s, sorted).prop_map(Op::SubmitMany).boxed(),
        members(s, s.max_remove).prop_map(Op::Remove).boxed(),
        rank_span(s)
            .prop_map(|(a, b)| Op::RemoveRangeByRank(a, b))
            .boxed(),
        range(s).prop_map(Op::RemoveRangeByScore).boxed(),
        (pop, any::<bool>())
            .prop_map(|(c, w)| Op::Pop(c, w))
            .boxed(),
        set_data_args(s)
            .prop_map(|(m, n, d)| Op::SetData(m, n, d))
            .boxed(),
        Just(Op::Clear).boxed(),
        any::<bool>().prop_map(Op::Take).boxed(),
        any_config(s).prop_map(Op::SetConfig).boxed(),
        any::<bool>().prop_map(Op::Snapshot).boxed(),
        reconf(s).prop_map(Op::Reconfigure).boxed(),
    ];
    let weighted: Vec<(u32, BoxedStrategy<Op>)> = s
        .weights
        .into_iter()
        .zip(ops)
        .filter(|(w, _)| *w > 0)
        .collect();
    proptest::strategy::Union::new_weighted(weighted).boxed()
}

pub(crate) fn op(s: Scale, sorted: bool) -> BoxedStrategy<Op> {
    prop_oneof![
        60 => write_op(s, sorted),
        1 => write_op(s, sorted).prop_map(|o| Op::ReadOnly(Box::new(o))),
    ]
    .boxed()
}

pub(crate) fn read(s: Scale) -> BoxedStrategy<Read> {
    let ps = small_arg(s);
    let p = prop_oneof![
        8 => select(vec![0.0, 0.1, 10.0, 25.0, 33.3, 50.0, 66.7, 75.0, 99.9, 100.0]),
        1 => select(vec![-1.0, 100.5, f64::NAN]),
    ];
    prop_oneof![
        2 => (any_member(s), ps.clone()).prop_map(|(m, p)| Read::Entry(m, p)),
        1 => any_member(s).prop_map(Read::Rank),
        1 => any_member(s).prop_map(Read::Score),
        1 => any_member(s).prop_map(Read::Position),
        1 => any_member(s).prop_map(Read::Percentile),
        2 => range(s).prop_map(Read::Count),
        3 => (small_arg(s), ps.clone()).prop_map(|(a, b)| Read::Top(a, b)),
        3 => (arg(s), arg(s), any::<bool>()).prop_map(|(a, b, w)| Read::RangeByRank(a, b, w)),
        3 => (range(s), any::<bool>(), small_arg(s), small_arg(s))
            .prop_map(|(r, w, o, l)| Read::RangeByScore(r, w, o, l)),
        3 => (any_member(s), ps).prop_map(|(m, p)| Read::Around(m, p)),
        2 => members(s, 6).prop_map(Read::Ranks),
        2 => p.prop_map(Read::ScoreAtPercentile),
        1 => (0..=s.max_arg as usize + 2, 0..=s.max_arg as usize)
            .prop_map(|(a, b)| Read::EntriesFrom(a, b)),
        1 => members(s, 40).prop_map(Read::RankMany),
        1 => members(s, 40).prop_map(Read::ScoreMany),
    ]
    .boxed()
}

/// A sequence of steps; `sorted`: submissions by key name.
pub(crate) fn steps(s: Scale, sorted: bool) -> BoxedStrategy<Vec<Step>> {
    let prefill = vec(valid_for(s, sorted, true), s.prefill / 2..=s.prefill);
    (
        prefill,
        vec((op(s, sorted), vec(read(s), 0..=3)), 1..=s.max_steps),
    )
        .prop_map(|(fill, mut steps)| {
            if !fill.is_empty() {
                steps.insert(0, (Op::Prefill(fill), Vec::new()));
            }
            steps
        })
        .boxed()
}
