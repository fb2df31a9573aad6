//! Model-based property tests of player search (docs/spec.md §3, docs/search.md):
//! random boards and random interleavings of every write, with random
//! queries checked after each step against a naive search written here
//! from the documented semantics — it tokenises every member's text anew
//! and matches query words to distinct words by brute force, over the
//! board's ranking as `top` returns it (itself checked by tests/model.rs).
//!
//! Every query also runs under each plan (`Auto`, forced `Intersect`,
//! forced `Scan`): same entries, same ranks, same total. Boards are built
//! with 0, 1, 3 or the default number of first-character planes, so both
//! the plane-answered and the verified paths run, and the index's own
//! consistency check runs after every step.
//!
//! Names are drawn from a few syllables, so prefixes collide all the time,
//! with case, diacritic and punctuation variants that fold together.
//! `PROPTEST_CASES=N` sets the number of cases per test.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use podium_engine::search::{Plan, SearchError, SearchOptions, SearchPage};
use podium_engine::{
    Aggregate, Board, BoardConfig, Entry, Order, Ranking, ScoreRange, Submit, Tiebreak, UpdateOp,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{TestCaseError, TestRunner};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

// ============================================================ naive search

/// One fold pass: NFKD, drop non-alphabetic combining marks, lowercase.
fn fold_pass(s: &str) -> String {
    s.nfkd()
        .filter(|&c| !is_combining_mark(c) || c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect()
}

fn naive_words(s: &str) -> Vec<String> {
    fold_pass(&fold_pass(s))
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every word occurrence of an entry: `(field name, word)`.
fn entry_words(e: &Entry, fields: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let data: Option<serde_json::Value> =
        e.data.as_deref().and_then(|d| serde_json::from_str(d).ok());
    for f in fields {
        let text = if f == "name" {
            Some(match &e.name {
                Some(n) => n.to_string(),
                None => String::from_utf8_lossy(&e.member).into_owned(),
            })
        } else {
            match data.as_ref().and_then(|d| d.get(f)) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                Some(serde_json::Value::Bool(b)) => Some(b.to_string()),
                _ => None,
            }
        };
        for w in naive_words(text.as_deref().unwrap_or("")) {
            out.push((f.clone(), w));
        }
    }
    out
}

/// A query word as the naive side understands it.
#[derive(Debug, Clone)]
struct NWord {
    word: String,
    prefix: bool,
    field: Option<String>,
}

impl NWord {
    fn matches(&self, field: &str, w: &str) -> bool {
        self.field.as_deref().is_none_or(|f| f == field)
            && if self.prefix {
                w.starts_with(&self.word)
            } else {
                w == self.word
            }
    }
}

/// Brute force: can each query word take a distinct word?
fn assign(q: &[NWord], words: &[(String, String)], used: &mut Vec<bool>) -> bool {
    let Some((first, rest)) = q.split_first() else {
        return true;
    };
    for i in 0..words.len() {
        if !used[i] && first.matches(&words[i].0, &words[i].1) {
            used[i] = true;
            let ok = assign(rest, words, used);
            used[i] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

/// One raw query token, as generated (rendered into the query string).
#[derive(Clone, Debug)]
struct RawTok {
    field: Option<String>,
    text: String,
    quoted: bool,
    star: bool,
}

impl RawTok {
    fn render(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.field {
            s.push_str(f);
            s.push(':');
        }
        if self.quoted {
            s.push('"');
            s.push_str(&self.text);
            s.push('"');
        } else {
            s.push_str(&self.text);
            if self.star {
                s.push('*');
            }
        }
        s
    }
}

#[derive(Clone)]
struct Query {
    raw: Vec<RawTok>,
    limit: u64,
    offset: u64,
}

impl Query {
    fn text(&self) -> String {
        self.raw
            .iter()
            .map(RawTok::render)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Debug for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Query({:?} limit {} offset {})",
            self.text(),
            self.limit,
            self.offset
        )
    }
}

/// Which error the naive parse expects (by kind), or the query words.
fn naive_parse(q: &Query, fields: &[String]) -> Result<Vec<NWord>, &'static str> {
    if fields.is_empty() {
        return Err("Disabled");
    }
    let mut groups = Vec::new();
    for r in &q.raw {
        let words = naive_words(&r.text);
        if let Some(f) = &r.field {
            if !fields.contains(f) {
                return Err("UnknownField");
            }
            if words.is_empty() {
                return Err("EmptyField");
            }
        }
        if !words.is_empty() {
            groups.push((words, r));
        }
    }
    if groups.is_empty() {
        return Err("EmptyQuery");
    }
    let last = groups.len() - 1;
    let mut out = Vec::new();
    for (i, (words, r)) in groups.into_iter().enumerate() {
        for w in words {
            out.push(NWord {
                word: w,
                prefix: !r.quoted && (r.star || i == last),
                field: r.field.clone(),
            });
        }
    }
    Ok(out)
}

fn error_kind(e: &SearchError) -> &'static str {
    match e {
        SearchError::NotIndexed => "NotIndexed",
        SearchError::Disabled => "Disabled",
        SearchError::EmptyQuery => "EmptyQuery",
        SearchError::UnknownField { .. } => "UnknownField",
        SearchError::EmptyField { .. } => "EmptyField",
        SearchError::TooManyTokens { .. } => "TooManyTokens",
        SearchError::TokenTooLong { .. } => "TokenTooLong",
        SearchError::QueryTooLong { .. } => "QueryTooLong",
        _ => "other",
    }
}

/// The naive answer: the board's whole ranking, filtered.
fn naive_search(b: &Board, q: &Query) -> Result<(Vec<Entry>, u64), &'static str> {
    let fields = &b.config().search_fields;
    let words = naive_parse(q, fields)?;
    let all = if b.is_empty() {
        Vec::new()
    } else {
        b.top(1, b.len() as u64).unwrap().entries
    };
    let hits: Vec<Entry> = all
        .into_iter()
        .filter(|e| {
            let w = entry_words(e, fields);
            assign(&words, &w, &mut vec![false; w.len()])
        })
        .collect();
    let total = hits.len() as u64;
    let page = hits
        .into_iter()
        .skip(q.offset.min(usize::MAX as u64) as usize)
        .take(q.limit.min(usize::MAX as u64) as usize)
        .collect();
    Ok((page, total))
}

/// How many pages each plan gave: `[Intersect, Scan, Level]`, forced and
/// chosen by `Auto` (checked after the runs, so the tests are known to
/// reach every path).
static FORCED: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
static AUTO: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];

fn count_plan(ran: Plan, asked: Plan) {
    let i = match ran {
        Plan::Intersect => 0,
        Plan::Scan => 1,
        _ => 2,
    };
    let table = if asked == Plan::Auto { &AUTO } else { &FORCED };
    table[i].fetch_add(1, AtomicOrdering::Relaxed);
}

fn assert_every_plan_ran() {
    let get = |t: &[AtomicUsize; 3]| t.each_ref().map(|c| c.load(AtomicOrdering::Relaxed));
    let (forced, auto) = (get(&FORCED), get(&AUTO));
    assert!(
        forced.iter().all(|&n| n > 0) && auto[2] > 0,
        "plans run (intersect, scan, level): forced {forced:?}, auto {auto:?}"
    );
}

fn check_query(b: &Board, q: &Query) -> Result<(), TestCaseError> {
    let text = q.text();
    let want = naive_search(b, q);
    let mut pages: Vec<SearchPage> = Vec::new();
    for plan in [Plan::Auto, Plan::Intersect, Plan::Scan, Plan::Level] {
        let opts = SearchOptions {
            limit: q.limit,
            offset: q.offset,
            plan,
        };
        let got = b.search(&text, &opts);
        match (&want, got) {
            (Ok((entries, total)), Ok(page)) => {
                prop_assert_eq!(
                    &page.entries,
                    entries,
                    "{:?} plan {:?} ran {:?}",
                    q,
                    plan,
                    page.plan
                );
                prop_assert_eq!(page.total, *total, "{:?} plan {:?}", q, plan);
                prop_assert_eq!(page.ranking, b.ranking());
                prop_assert_eq!((page.offset, page.limit), (q.offset, q.limit));
                prop_assert!(page.plan != Plan::Auto);
                if plan == Plan::Level && page.plan == Plan::Scan {
                    // No ranked level serves this query: documented fallback.
                } else if plan != Plan::Auto {
                    prop_assert_eq!(page.plan, plan);
                }
                count_plan(page.plan, plan);
                // The in-place page is the same page, field by field.
                let (head, seen) = b
                    .search_with(&text, &opts, |head, entries| {
                        let seen: Vec<Entry> = entries
                            .map(|e| Entry {
                                member: e.member.to_vec(),
                                score: e.score,
                                rank: e.rank,
                                name: e.name.map(Into::into),
                                data: e.data.map(Into::into),
                            })
                            .collect();
                        (*head, seen)
                    })
                    .map_err(|e| TestCaseError::fail(format!("{q:?} in place: {e}")))?;
                prop_assert_eq!(&seen, entries, "{:?} plan {:?} visited", q, plan);
                prop_assert_eq!(
                    (head.total, head.offset, head.limit, head.ranking, head.plan),
                    (page.total, page.offset, page.limit, page.ranking, page.plan)
                );
                pages.push(page);
            }
            (Err(kind), Err(e)) => {
                prop_assert_eq!(*kind, error_kind(&e), "{:?}: {}", q, e);
                let in_place = b.search_with(&text, &opts, |_, _| ());
                prop_assert_eq!(in_place.unwrap_err(), e);
            }
            (want, got) => {
                return Err(TestCaseError::fail(format!(
                    "{q:?} plan {plan:?}: expected {:?}, got {:?}",
                    want.as_ref().map(|w| w.1),
                    got.map(|p| p.total)
                )))
            }
        }
    }
    Ok(())
}

// ================================================================ strategy

const SYLLABLES: &[&str] = &[
    "a", "al", "an", "ana", "b", "bo", "bob", "jo", "jos", "jose", "li", "lu", "x",
];

/// A name word: syllables, sometimes with a case, diacritic or width
/// variant that folds to the same word.
fn word() -> BoxedStrategy<String> {
    let parts = prop_oneof![3 => vec(select(SYLLABLES), 1..=1), 1 => vec(select(SYLLABLES), 2..=2)];
    (parts, 0..8u8)
        .prop_map(|(parts, variant)| {
            let w = parts.concat();
            match variant {
                0 => w.to_uppercase(),
                1 => w.replacen('a', "á", 1).replacen('o', "Ö", 1),
                2 => w.replacen('e', "e\u{301}", 1),
                3 => w
                    .chars()
                    .map(|c| char::from_u32(c as u32 + 0xfee0).unwrap_or(c))
                    .collect(), // full width
                _ => w,
            }
        })
        .boxed()
}

fn text(max_words: usize) -> BoxedStrategy<String> {
    (
        vec(word(), 1..=max_words),
        vec(select(vec![" ", "-", "  ", ". ", "'"]), 3),
    )
        .prop_map(|(words, seps)| {
            let mut s = String::new();
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    s.push_str(seps[i % seps.len()]);
                }
                s.push_str(w);
            }
            s
        })
        .boxed()
}

fn member() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => (0..60u32).prop_map(|i| format!("p{i}").into_bytes()),
        2 => text(2).prop_map(String::into_bytes),
        1 => text(1).prop_map(|t| [b"\xff".as_slice(), t.as_bytes()].concat()),
    ]
    .boxed()
}

fn name() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(String::new())),
        6 => text(3).prop_map(Some),
        1 => Just(Some("--".to_string())),
    ]
    .boxed()
}

fn data() -> BoxedStrategy<Option<String>> {
    let value = prop_oneof![
        4 => text(2).prop_map(serde_json::Value::String),
        1 => (0..40i64).prop_map(|n| serde_json::json!(n)),
        1 => Just(serde_json::json!(2.5)),
        1 => any::<bool>().prop_map(|b| serde_json::json!(b)),
        1 => Just(serde_json::Value::Null),
        1 => text(1).prop_map(|t| serde_json::json!({"x": t})),
        1 => text(1).prop_map(|t| serde_json::json!([t])),
    ];
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(String::new())),
        5 => (value, text(1)).prop_map(|(v, other)| Some(
            serde_json::json!({"team": v, "other": other}).to_string()
        )),
    ]
    .boxed()
}

const SCORES: &[f64] = &[0.0, 1.0, 2.0, 3.0, 5.0, -1.0, 0.5];

#[derive(Clone)]
struct Sub {
    member: Vec<u8>,
    score: f64,
    op: Option<UpdateOp>,
    name: Option<String>,
    data: Option<String>,
}

impl fmt::Debug for Sub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Sub({:?} {} {:?} {:?} {:?})",
            String::from_utf8_lossy(&self.member),
            self.score,
            self.op,
            self.name,
            self.data
        )
    }
}

impl Sub {
    fn as_submit(&self) -> Submit<'_> {
        Submit {
            member: &self.member,
            score: self.score,
            op: self.op,
            name: self.name.as_deref(),
            data: self.data.as_deref(),
            ..Submit::new(&self.member, self.score)
        }
    }
}

fn sub() -> BoxedStrategy<Sub> {
    let op = prop_oneof![4 => Just(None), 1 => Just(Some(UpdateOp::Incr)), 1 => Just(Some(UpdateOp::Best))];
    (member(), select(SCORES), op, name(), data())
        .prop_map(|(member, score, op, name, data)| Sub {
            member,
            score,
            op,
            name,
            data,
        })
        .boxed()
}

const FIELD_SETS: &[&[&str]] = &[
    &["name"],
    &["name"],
    &["name", "team"],
    &["team", "name"],
    &["team"],
    &[],
];

fn fields_of(i: usize) -> Vec<String> {
    FIELD_SETS[i % FIELD_SETS.len()]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[derive(Debug, Clone)]
struct Cfg {
    order: Order,
    ranking: Ranking,
    tiebreak: Tiebreak,
    fields: usize,
    cap: Option<u64>,
}

impl Cfg {
    fn config(&self) -> BoardConfig {
        BoardConfig {
            order: self.order,
            ranking: self.ranking,
            tiebreak: self.tiebreak,
            max_members: self.cap,
            search_fields: fields_of(self.fields),
            ..BoardConfig::default()
        }
    }
}

fn cfg() -> BoxedStrategy<Cfg> {
    (
        select(vec![Order::Desc, Order::Asc]),
        select(vec![Ranking::Unique, Ranking::Dense, Ranking::Competition]),
        select(vec![Tiebreak::Member, Tiebreak::First, Tiebreak::Last]),
        0..FIELD_SETS.len() - 1,
        prop_oneof![4 => Just(None), 1 => (3..40u64).prop_map(Some)],
    )
        .prop_map(|(order, ranking, tiebreak, fields, cap)| Cfg {
            order,
            ranking,
            tiebreak,
            fields,
            cap,
        })
        .boxed()
}

fn raw_tok() -> BoxedStrategy<RawTok> {
    let field = prop_oneof![
        16 => Just(None),
        2 => Just(Some("name".to_string())),
        2 => Just(Some("team".to_string())),
        1 => Just(Some("colour".to_string())),
    ];
    let body = prop_oneof![
        12 => select(SYLLABLES).prop_map(str::to_string),
        3 => vec(select(SYLLABLES), 2..=2).prop_map(|v| v.concat()),
        2 => word(),
        1 => Just("jo-se".to_string()),
        1 => Just("-".to_string()),
        1 => text(2),
    ];
    (field, body, 0..6u8, any::<bool>())
        .prop_map(|(field, text, q, star)| {
            let quoted = q == 0;
            // Unquoted text cannot hold spaces (they split tokens).
            let text = if quoted { text } else { text.replace(' ', "-") };
            RawTok {
                field,
                text,
                quoted,
                star,
            }
        })
        .boxed()
}

fn query() -> BoxedStrategy<Query> {
    (
        prop_oneof![3 => vec(raw_tok(), 1..=2), 1 => vec(raw_tok(), 3..=4)],
        select(vec![0u64, 1, 2, 3, 5, 25, 1000]),
        select(vec![0u64, 0, 0, 1, 2, 5, 100]),
    )
        .prop_map(|(raw, limit, offset)| Query { raw, limit, offset })
        .boxed()
}

/// Short prefixes of single chars, as the planes answer.
fn plane_query() -> BoxedStrategy<Query> {
    (
        vec(
            (select(vec!["a", "b", "j", "l", "x"]), any::<bool>()),
            1..=4,
        ),
        select(vec![1u64, 3, 25]),
        select(vec![0u64, 1, 4]),
    )
        .prop_map(|(toks, limit, offset)| Query {
            raw: toks
                .into_iter()
                .map(|(t, star)| RawTok {
                    field: None,
                    text: t.to_string(),
                    quoted: false,
                    star,
                })
                .collect(),
            limit,
            offset,
        })
        .boxed()
}

fn queries() -> BoxedStrategy<Vec<Query>> {
    vec(prop_oneof![3 => query(), 1 => plane_query()], 1..=3).boxed()
}

#[derive(Debug, Clone)]
enum Op {
    Submit(Sub),
    SubmitMany(Vec<Sub>),
    SetData(Vec<u8>, Option<String>, Option<String>),
    Remove(Vec<Vec<u8>>),
    RemoveRangeByRank(u64, u64),
    RemoveRangeByScore(f64, f64),
    Pop(u64, bool),
    Clear,
    /// `true`: carry on with the taken board.
    Take(bool),
    SetConfig(Cfg),
    /// Snapshot round trip; carry on with the restored board (indexed
    /// anew) or check it beside the original.
    Snapshot(bool),
    /// Merge or intersect the board with another into itself.
    Combine(Vec<Sub>, bool, Aggregate),
    /// Searches a clone (snapshots clone boards).
    Clone,
}

fn op() -> BoxedStrategy<Op> {
    prop_oneof![
        30 => sub().prop_map(Op::Submit),
        8 => vec(sub(), 0..=12).prop_map(Op::SubmitMany),
        8 => (member(), name(), data()).prop_map(|(m, n, d)| Op::SetData(m, n, d)),
        4 => vec(member(), 0..=4).prop_map(Op::Remove),
        2 => (1..12u64, 0..4u64).prop_map(|(a, n)| Op::RemoveRangeByRank(a, a + n)),
        2 => (select(SCORES), select(SCORES)).prop_map(|(a, b)| Op::RemoveRangeByScore(a.min(b), a.max(b))),
        2 => (0..4u64, any::<bool>()).prop_map(|(c, w)| Op::Pop(c, w)),
        1 => Just(Op::Clear),
        1 => any::<bool>().prop_map(Op::Take),
        3 => cfg().prop_map(Op::SetConfig),
        2 => any::<bool>().prop_map(Op::Snapshot),
        2 => (vec(sub(), 0..=10), any::<bool>(), select(vec![Aggregate::Sum, Aggregate::Min, Aggregate::Max]))
            .prop_map(|(s, i, a)| Op::Combine(s, i, a)),
        1 => Just(Op::Clone),
    ]
    .boxed()
}

// ================================================================= running

fn check_board(b: &Board, qs: &[Query]) -> Result<(), TestCaseError> {
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

fn enable(b: &mut Board, planes: usize) {
    if !b.config().search_fields.is_empty() {
        b.enable_search_with_planes(planes).unwrap();
    }
}

fn apply(b: &mut Board, op: &Op, planes: usize, qs: &[Query]) -> Result<(), TestCaseError> {
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
struct Case {
    cfg: Cfg,
    planes: usize,
    /// Index before the prefill (every member arrives through the write
    /// hooks) or after it (bulk build).
    early: bool,
    prefill: Vec<Sub>,
    steps: Vec<(Op, Vec<Query>)>,
}

fn case(prefill: usize, steps: usize) -> BoxedStrategy<Case> {
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

fn run_case(c: &Case) -> Result<(), TestCaseError> {
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
fn cases(release: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            release.div_ceil(10)
        } else {
            release
        })
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 20_000,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })
}

#[test]
fn search_matches_a_naive_scan_through_every_write() {
    let result = runner(cases(400)).run(&case(80, 25), |c| run_case(&c));
    if let Err(e) = result {
        panic!("{e}");
    }
    assert_every_plan_ran();
}

/// Found by CI: a bulk build (here by `replace_content`) that added no
/// plane left the per-member "on a ranked level" bits unsized, so a
/// member later reusing a freed id and reaching a level was not marked.
#[test]
fn a_member_reaching_a_level_after_a_bulk_build_is_marked() {
    let sub = |m: &str, data: Option<&str>| Sub {
        member: m.as_bytes().to_vec(),
        score: 0.0,
        op: None,
        name: None,
        data: data.map(str::to_string),
    };
    let q = || Query {
        raw: vec![RawTok {
            field: None,
            text: "a".into(),
            quoted: true,
            star: false,
        }],
        limit: 0,
        offset: 0,
    };
    let c = Case {
        cfg: Cfg {
            order: Order::Desc,
            ranking: Ranking::Unique,
            tiebreak: Tiebreak::Member,
            fields: 4,
            cap: None,
        },
        planes: 1,
        early: false,
        prefill: vec![sub("p0", None); 20],
        steps: vec![
            (
                Op::Combine(
                    (1..=5).map(|i| sub(&format!("p{i}"), None)).collect(),
                    false,
                    Aggregate::Sum,
                ),
                vec![q()],
            ),
            (Op::RemoveRangeByRank(1, 1), vec![q()]),
            (
                Op::Submit(sub("p0", Some(r#"{"other":"A","team":"A A"}"#))),
                vec![q()],
            ),
        ],
    };
    run_case(&c).unwrap();
}

/// Boards of a few thousand members: posting lists split into blocks,
/// planes are promoted and demoted as the board grows and shrinks.
#[test]
fn larger_boards_match_a_naive_scan() {
    let result = runner(cases(6)).run(&case(1500, 6), |c| run_case(&c));
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ======================================================= examples, by hand

fn board_with(names: &[(&str, f64, Option<&str>, Option<&str>)], fields: &[&str]) -> Board {
    let mut b = Board::new(BoardConfig {
        search_fields: fields.iter().map(|s| s.to_string()).collect(),
        ..BoardConfig::default()
    })
    .unwrap();
    for &(m, s, name, data) in names {
        b.submit(&Submit {
            name,
            data,
            ..Submit::new(m.as_bytes(), s)
        })
        .unwrap();
    }
    b.enable_search().unwrap();
    b
}

fn hits(b: &Board, q: &str) -> Vec<String> {
    b.search(q, &SearchOptions::default())
        .unwrap()
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.member).into_owned())
        .collect()
}

#[test]
fn the_documented_examples_hold() {
    let b = board_with(
        &[
            (
                "p1",
                10.0,
                Some("José Álvarez"),
                Some(r#"{"team":"Red Sox"}"#),
            ),
            ("p2", 30.0, Some("Alice Al"), Some(r#"{"team":"blue"}"#)),
            ("p3", 20.0, Some("Al"), Some(r#"{"team":"red","lvl":3}"#)),
            ("p4", 5.0, None, Some(r#"{"team":7}"#)),
            ("jean-luc", 1.0, None, None),
        ],
        &["name", "team"],
    );
    // Prefix on the last word, diacritics and case folded, best first.
    assert_eq!(hits(&b, "al"), ["p2", "p3", "p1"]);
    assert_eq!(hits(&b, "JOSE"), ["p1"]);
    // Non-last words are exact; `*` makes them prefixes.
    assert_eq!(hits(&b, "al a"), ["p2"]);
    assert_eq!(hits(&b, "alv j"), Vec::<String>::new());
    assert_eq!(hits(&b, "alv* j"), ["p1"]);
    // Distinct words: `al al` needs two words, exact "al" and prefix "al".
    assert_eq!(hits(&b, "al al"), ["p2"]);
    assert_eq!(hits(&b, "\"al\""), ["p2", "p3"]);
    // Fields.
    assert_eq!(hits(&b, "team:red"), ["p3", "p1"]);
    assert_eq!(hits(&b, "team:\"red\" al"), ["p3", "p1"]);
    assert_eq!(hits(&b, "name:red"), Vec::<String>::new());
    assert_eq!(hits(&b, "team:7"), ["p4"]);
    // No name: the id is the name.
    assert_eq!(hits(&b, "jean-l"), ["jean-luc"]);
    assert_eq!(hits(&b, "p4"), ["p4"]);
    let page = b
        .search(
            "a",
            &SearchOptions {
                limit: 1,
                offset: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.entries.len(), 1);
    assert_eq!(
        (page.entries[0].member.as_slice(), page.entries[0].rank),
        (&b"p3"[..], 2)
    );
    // Errors.
    let e = b
        .search("colour:red", &SearchOptions::default())
        .unwrap_err();
    assert!(matches!(e, SearchError::UnknownField { .. }), "{e}");
    assert_eq!(
        b.search(" -- ", &SearchOptions::default()).unwrap_err(),
        SearchError::EmptyQuery
    );
}

#[test]
fn the_index_follows_writes_at_once() {
    let mut b = board_with(&[("p1", 1.0, Some("Ann"), None)], &["name"]);
    assert_eq!(hits(&b, "ann"), ["p1"]);
    b.set_data(b"p1", Some("Bob"), None).unwrap();
    assert!(hits(&b, "ann").is_empty());
    assert_eq!(hits(&b, "bo"), ["p1"]);
    b.submit(&Submit {
        name: Some(""),
        ..Submit::new(b"p1", 2.0)
    })
    .unwrap();
    assert_eq!(hits(&b, "p1"), ["p1"]);
    b.remove(&[b"p1"]).unwrap();
    assert!(hits(&b, "p").is_empty());
    // search_fields: [] disables search; back to ["name"] needs enabling.
    let mut c = b.config().clone();
    c.search_fields = vec![];
    b.set_config(c.clone()).unwrap();
    assert_eq!(
        b.search("x", &SearchOptions::default()).unwrap_err(),
        SearchError::Disabled
    );
    assert_eq!(b.enable_search(), Err(SearchError::Disabled));
    assert_eq!(b.search_heap_bytes(), 0);
}

#[test]
fn hostile_queries_are_answered_or_refused_fast() {
    let names: Vec<(String, f64)> = (0..2000)
        .map(|i| (format!("a{i} a a b"), i as f64))
        .collect();
    let mut b = Board::new(BoardConfig::default()).unwrap();
    for (i, (n, s)) in names.iter().enumerate() {
        b.submit(&Submit {
            name: Some(n),
            ..Submit::new(format!("m{i}").as_bytes(), *s)
        })
        .unwrap();
    }
    b.enable_search().unwrap();
    let o = SearchOptions::default();
    // 16 words: answered (every member has only 4 words: none match).
    let q16 = vec!["a"; 16].join(" ");
    assert_eq!(b.search(&q16, &o).unwrap().total, 0);
    // 17 words, a 1 KiB word, a huge query: refused.
    assert!(matches!(
        b.search(&vec!["a"; 17].join(" "), &o),
        Err(SearchError::TooManyTokens { .. })
    ));
    assert!(matches!(
        b.search(&"x".repeat(1024), &o),
        Err(SearchError::TokenTooLong { .. })
    ));
    assert!(matches!(
        b.search(&"ab ".repeat(10_000), &o),
        Err(SearchError::QueryTooLong { .. })
    ));
    // Many identical prefix words matching many words each.
    assert_eq!(b.search("a* a* a* b", &o).unwrap().total, 2000);
    assert_eq!(b.search("a* a* a", &o).unwrap().total, 2000);
    assert_eq!(b.search("a* a* a* a", &o).unwrap().total, 0);
    assert_eq!(b.search("a1* a a", &o).unwrap().total, 1111);
}

/// The bulk build (`enable_search` on a filled board) and indexing write
/// by write must agree: words repeated within a member and across fields
/// (one posting each), posting lists long enough to split into blocks, and
/// members removed and renamed after the index exists.
#[test]
fn bulk_build_agrees_with_indexing_write_by_write() {
    let cfg = BoardConfig {
        search_fields: vec!["name".into(), "team".into()],
        ..BoardConfig::default()
    };
    let mut live = Board::new(cfg.clone()).unwrap();
    live.enable_search().unwrap();
    let words = ["al", "ala", "bo", "al-al", "Ál", "bob", "a"];
    for i in 0..3000u32 {
        let name = format!(
            "{} {} {}",
            words[i as usize % 7],
            words[(i as usize / 7) % 7],
            words[(i as usize / 49) % 7]
        );
        let data = format!(r#"{{"team":"{}"}}"#, words[(i as usize / 3) % 7]);
        live.submit(&Submit {
            name: Some(&name),
            data: Some(&data),
            ..Submit::new(format!("m{i}").as_bytes(), (i % 97) as f64)
        })
        .unwrap();
    }
    for i in (0..3000u32).step_by(5) {
        live.remove(&[format!("m{i}").as_bytes()]).unwrap();
    }
    for i in (1..3000u32).step_by(11) {
        let _ = live.set_data(format!("m{i}").as_bytes(), Some("bo bo x"), None);
    }
    let mut bulk = live.clone();
    bulk.disable_search();
    bulk.enable_search().unwrap();
    // The same build with its text pass on several threads (shares of
    // the ids, one of them cut inside the removed members' gaps).
    let mut sharded = live.clone();
    sharded.enable_search_in_shares(4).unwrap();
    for b in [&live, &bulk, &sharded] {
        b.check_invariants().unwrap();
        b.check_search_invariants().unwrap();
    }
    for q in [
        "a", "al", "al al", "a* a", "a a", "a* a* a", "\"al\"", "team:al", "bo bo", "x", "bob a",
        "ál* b",
    ] {
        for plan in [Plan::Intersect, Plan::Scan, Plan::Level] {
            let o = SearchOptions {
                limit: 40,
                offset: 3,
                plan,
            };
            let want = live.search(q, &o).unwrap();
            assert_eq!(want, bulk.search(q, &o).unwrap(), "{q}");
            assert_eq!(want, sharded.search(q, &o).unwrap(), "{q}");
        }
    }
}
