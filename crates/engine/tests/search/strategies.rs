//! The generators of names, boards, configs, queries and write
//! operations.

use super::*;

// ================================================================ strategy

pub(crate) const SYLLABLES: &[&str] = &[
    "a", "al", "an", "ana", "b", "bo", "bob", "jo", "jos", "jose", "li", "lu", "x",
];

/// A name word: syllables, sometimes with a case, diacritic or width
/// variant that folds to the same word.
pub(crate) fn word() -> BoxedStrategy<String> {
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

pub(crate) fn text(max_words: usize) -> BoxedStrategy<String> {
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

pub(crate) fn member() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => (0..60u32).prop_map(|i| format!("p{i}").into_bytes()),
        2 => text(2).prop_map(String::into_bytes),
        1 => text(1).prop_map(|t| [b"\xff".as_slice(), t.as_bytes()].concat()),
    ]
    .boxed()
}

pub(crate) fn name() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(String::new())),
        6 => text(3).prop_map(Some),
        1 => Just(Some("--".to_string())),
    ]
    .boxed()
}

pub(crate) fn data() -> BoxedStrategy<Option<String>> {
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

pub(crate) const SCORES: &[f64] = &[0.0, 1.0, 2.0, 3.0, 5.0, -1.0, 0.5];

#[derive(Clone)]
pub(crate) struct Sub {
    pub(crate) member: Vec<u8>,
    pub(crate) score: f64,
    pub(crate) op: Option<UpdateOp>,
    pub(crate) name: Option<String>,
    pub(crate) data: Option<String>,
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
    pub(crate) fn as_submit(&self) -> Submit<'_> {
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

pub(crate) fn sub() -> BoxedStrategy<Sub> {
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

pub(crate) const FIELD_SETS: &[&[&str]] = &[
    &["name"],
    &["name"],
    &["name", "team"],
    &["team", "name"],
    &["team"],
    &[],
];

pub(crate) fn fields_of(i: usize) -> Vec<String> {
    FIELD_SETS[i % FIELD_SETS.len()]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[derive(Debug, Clone)]
pub(crate) struct Cfg {
    pub(crate) order: Order,
    pub(crate) ranking: Ranking,
    pub(crate) tiebreak: Tiebreak,
    pub(crate) fields: usize,
    pub(crate) cap: Option<u64>,
}

impl Cfg {
    pub(crate) fn config(&self) -> BoardConfig {
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

pub(crate) fn cfg() -> BoxedStrategy<Cfg> {
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

pub(crate) fn raw_tok() -> BoxedStrategy<RawTok> {
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

pub(crate) fn query() -> BoxedStrategy<Query> {
    (
        prop_oneof![3 => vec(raw_tok(), 1..=2), 1 => vec(raw_tok(), 3..=4)],
        select(vec![0u64, 1, 2, 3, 5, 25, 1000]),
        select(vec![0u64, 0, 0, 1, 2, 5, 100]),
    )
        .prop_map(|(raw, limit, offset)| Query { raw, limit, offset })
        .boxed()
}

/// Short prefixes of single chars, as the planes answer.
pub(crate) fn plane_query() -> BoxedStrategy<Query> {
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

pub(crate) fn queries() -> BoxedStrategy<Vec<Query>> {
    vec(prop_oneof![3 => query(), 1 => plane_query()], 1..=3).boxed()
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
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

pub(crate) fn op() -> BoxedStrategy<Op> {
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
