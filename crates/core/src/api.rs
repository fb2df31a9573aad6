//! The request and result shapes of docs/spec.md §2, shared by every protocol
//! frontend: HTTP encodes them as JSON, MessagePack-RPC as maps with the same
//! field names. Conversions from the engine's types live here too, so no
//! frontend formats a result on its own.

use std::fmt;

/// A sort key's value, as the wire carries it (see [`NamedScores`]).
pub use podium_engine::Num;
use podium_engine::{BoardConfig, Entry, Ranking, Scores};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{ApiError, Code};

/// A score on the wire: a JSON number, or `"inf"` / `"-inf"` (JSON has no
/// infinities; Redis accepts them); in MessagePack a float or integer.
/// Strings holding a number are accepted too, so a CSV or form value passes
/// through unchanged; they are read by [`crate::score`], as every other
/// score text is (a finite spelling beyond a double's range, white space
/// around the number, NaN are refused).
#[derive(Debug, Clone, Copy)]
pub struct Score(pub f64);

/// Numeric equality, and an absent score ([`Score::ABSENT`]) equals
/// another absent one (so entries that give `scores` compare equal).
impl PartialEq for Score {
    fn eq(&self, other: &Score) -> bool {
        self.0 == other.0 || (self.is_absent() && other.is_absent())
    }
}

/// A score from text (JSON strings, CSV fields, query bounds, the CLI),
/// with the refusal in podium's words.
pub fn parse_score(s: &str) -> Result<f64, String> {
    crate::score::parse_str(s).map_err(|e| e.to_string())
}

impl Serialize for Score {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Binary formats (MessagePack) carry infinities as floats; only
        // text formats need the strings.
        if self.0.is_finite() || !s.is_human_readable() {
            s.serialize_f64(self.0)
        } else if self.0 > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }
}

impl<'de> Deserialize<'de> for Score {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Score, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Score;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"a number, "inf" or "-inf""#)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Score, E> {
                if v.is_nan() {
                    return Err(E::custom(crate::score::BadScore {
                        text: "NaN".into(),
                        why: crate::score::Refusal::NaN,
                    }));
                }
                Ok(Score(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Score, E> {
                Ok(Score(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Score, E> {
                Ok(Score(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Score, E> {
                parse_score(v).map(Score).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Score {
    /// What an entry that gives `scores` instead holds: no score.
    pub const ABSENT: Score = Score(f64::NAN);

    fn absent() -> Score {
        Score::ABSENT
    }

    /// Whether the entry gave no score (the wire refuses NaN, so only a
    /// left-out field reads as this).
    pub fn is_absent(&self) -> bool {
        self.0.is_nan()
    }
}

/// A board with sort keys' values, by key name: `{"laps": 10,
/// "time_ms": 61234}`. A value is a number, or a string holding one: JSON
/// carries integers beyond ±2^53 as strings (a JSON reader would round
/// them), and infinities as `"inf"` / `"-inf"`; MessagePack carries
/// integers and floats as they are. Integers stay exact.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NamedScores(pub Vec<(String, Num)>);

impl NamedScores {
    /// A member's values with its board's key names.
    pub fn of(keys: &[String], scores: &Scores) -> NamedScores {
        NamedScores(keys.iter().cloned().zip(scores.iter().copied()).collect())
    }
}

/// One value of [`NamedScores`] as the format carries it.
struct NumOut(Num);

impl Serialize for NumOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Num::Int(i)
                if !s.is_human_readable()
                    || i.unsigned_abs() <= podium_engine::sort::MAX_SAFE_INT as u64 =>
            {
                s.serialize_i64(i)
            }
            Num::Int(i) => s.collect_str(&i),
            Num::Float(x) => Score(x).serialize(s),
        }
    }
}

impl Serialize for NamedScores {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, NumOut(*v))))
    }
}

struct NumIn(Num);

impl<'de> Deserialize<'de> for NumIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NumIn, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NumIn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, or a string holding one")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumIn, E> {
                Score::deserialize(de::value::F64Deserializer::<E>::new(v))
                    .map(|s| NumIn(Num::Float(s.0)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumIn, E> {
                Ok(NumIn(Num::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumIn, E> {
                i64::try_from(v)
                    .map(|i| NumIn(Num::Int(i)))
                    .map_err(|_| E::custom(format!("{v} is beyond a 64-bit signed integer")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NumIn, E> {
                match Num::parse(v) {
                    Some(Num::Float(_)) | None => parse_score(v)
                        .map(|x| NumIn(Num::Float(x)))
                        .map_err(E::custom),
                    Some(n) => Ok(NumIn(n)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for NamedScores {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NamedScores, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NamedScores;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    r#"an object of sort key values such as {"laps": 10, "time_ms": 61234}"#,
                )
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut m: A) -> Result<NamedScores, A::Error> {
                let mut v = Vec::new();
                while let Some((k, NumIn(n))) = m.next_entry::<String, NumIn>()? {
                    if v.len() == podium_engine::MAX_SORT_KEYS {
                        return Err(de::Error::custom(format!(
                            "scores may hold at most {} keys",
                            podium_engine::MAX_SORT_KEYS
                        )));
                    }
                    v.push((k, n));
                }
                Ok(NamedScores(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// `only`: which members a submission may touch (Redis NX / XX).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Only {
    New,
    Existing,
}

/// `cond`: update an existing member only if the new score is greater /
/// less (Redis GT / LT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CondIn {
    Gt,
    Lt,
}

/// One entry of `submit` / `submit_many` / `import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitIn {
    pub member: String,
    /// Left out when `scores` is given ([`Score::ABSENT`]).
    #[serde(default = "Score::absent", skip_serializing_if = "Score::is_absent")]
    pub score: Score,
    /// A board with sort keys: the values by key name (then `score` is
    /// ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<NamedScores>,
    /// `set`, `best` or `incr`; the board's `update` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Only>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cond: Option<CondIn>,
    /// Display name; `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A JSON object; `null` leaves it, `{}` stores an empty object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl SubmitIn {
    pub fn new(member: impl Into<String>, score: f64) -> Self {
        SubmitIn {
            member: member.into(),
            score: Score(score),
            scores: None,
            op: None,
            only: None,
            cond: None,
            name: None,
            data: None,
        }
    }
}

/// An entry's `score`, checked before the rest of the entry so that a bad
/// one is `invalid_score` whatever else is wrong: `text` when the wire gave
/// a string (read by the one score rule, in its words), else the value
/// read as a number by `number`.
pub fn check_entry_score(
    text: Option<&str>,
    number: impl FnOnce() -> Result<Score, String>,
) -> Result<(), ApiError> {
    let checked = match text {
        Some(text) => parse_score(text).map(drop),
        None => number().map(drop).map_err(|e| format!("score: {e}")),
    };
    checked.map_err(|m| ApiError::new(Code::InvalidScore, m))
}

/// What one submission did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitOut {
    pub member: String,
    /// The score afterwards; `null` when the member is not on the board
    /// (refused by `only: existing`, or evicted by `max_members`).
    pub score: Option<Score>,
    pub rank: Option<u64>,
    pub previous: Option<Score>,
    /// The member was added or its score changed.
    pub changed: bool,
    pub created: bool,
    /// The operator ran (false when `only`, `cond` or `best` stopped it).
    pub applied: bool,
    /// Members evicted by `max_members` (possibly this one).
    pub evicted: u64,
    /// A board with sort keys: every key's value afterwards (`score` is
    /// the first key's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<NamedScores>,
    /// A board with sort keys: every key's value before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_scores: Option<NamedScores>,
}

/// `submit_many` / `import`: per-entry results, or per-entry errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SubmitItem {
    Ok(SubmitOut),
    Err { member: String, error: ErrorBody },
}

impl SubmitItem {
    /// Each entry's own result as a batch answers it: its `SubmitOut`, or
    /// its member with the error.
    pub fn from_results(
        results: Vec<Result<SubmitOut, ApiError>>,
        entries: &[SubmitIn],
    ) -> Vec<SubmitItem> {
        results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| match r {
                Ok(out) => SubmitItem::Ok(out),
                Err(err) => SubmitItem::Err {
                    member: e.member.clone(),
                    error: ErrorBody::from(&err),
                },
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
}

impl From<&ApiError> for ErrorBody {
    fn from(e: &ApiError) -> Self {
        ErrorBody {
            code: e.code.as_str().to_string(),
            message: e.message.clone(),
        }
    }
}

impl From<ErrorBody> for ApiError {
    /// The error a body stands for; a code this build does not know is
    /// `internal`.
    fn from(b: ErrorBody) -> Self {
        let code = Code::ALL
            .into_iter()
            .find(|c| c.as_str() == b.code)
            .unwrap_or(Code::Internal);
        ApiError::new(code, b.message)
    }
}

/// A member as every read returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryOut {
    pub member: String,
    /// On a board with sort keys, the first key's value.
    pub score: Score,
    /// A board with sort keys: every key's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<NamedScores>,
    pub rank: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// Member ids are bytes in the engine (the Redis protocol allows any);
/// JSON shows them as UTF-8, replacing invalid sequences.
pub fn member_str(m: &[u8]) -> String {
    String::from_utf8_lossy(m).into_owned()
}

/// `keys`: the board's sort key names (none for a plain board).
pub fn entry_out(e: &Entry, keys: &[String], with_data: bool) -> EntryOut {
    EntryOut {
        member: member_str(&e.member),
        score: Score(e.score),
        scores: e.scores.as_ref().map(|s| NamedScores::of(keys, s)),
        rank: e.rank,
        name: e.name.as_deref().map(str::to_string),
        data: if with_data {
            e.data.as_deref().and_then(|d| serde_json::from_str(d).ok())
        } else {
            None
        },
    }
}

pub fn entries_out(v: &[Entry], keys: &[String], with_data: bool) -> Vec<EntryOut> {
    v.iter().map(|e| entry_out(e, keys, with_data)).collect()
}

/// A member's values as an object of its board's key names.
pub struct ScoresJson<'a, K> {
    pub keys: &'a [K],
    pub scores: &'a Scores,
}

/// A key's name, from a list of names or of a board's sort keys.
pub trait KeyName {
    fn key_name(&self) -> &str;
}

impl KeyName for String {
    fn key_name(&self) -> &str {
        self
    }
}

impl KeyName for podium_engine::SortKey {
    fn key_name(&self) -> &str {
        &self.key
    }
}

impl<K: KeyName> Serialize for ScoresJson<'_, K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            self.keys
                .iter()
                .zip(self.scores.iter())
                .map(|(k, v)| (k.key_name(), NumOut(*v))),
        )
    }
}

/// An engine [`Entry`] serialized exactly as its [`EntryOut`] is, without
/// the owned copies [`entry_out`] makes (member, name): for a frontend
/// writing a page straight into its response body.
pub struct EntryJson<'a> {
    pub entry: &'a Entry,
    /// The board's sort key names (none for a plain board).
    pub keys: &'a [String],
    pub with_data: bool,
}

impl Serialize for EntryJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let e = self.entry;
        // As `entry_out`: data that is not valid JSON is left out.
        let data = match (&e.data, self.with_data) {
            (Some(d), true) => serde_json::from_str::<serde_json::Value>(d).ok(),
            _ => None,
        };
        let fields = 3
            + usize::from(e.name.is_some())
            + usize::from(data.is_some())
            + usize::from(e.scores.is_some());
        let mut st = s.serialize_struct("EntryOut", fields)?;
        st.serialize_field("member", &*String::from_utf8_lossy(&e.member))?;
        st.serialize_field("score", &Score(e.score))?;
        match &e.scores {
            Some(scores) => st.serialize_field(
                "scores",
                &ScoresJson {
                    keys: self.keys,
                    scores,
                },
            )?,
            None => st.skip_field("scores")?,
        }
        st.serialize_field("rank", &e.rank)?;
        match e.name.as_deref() {
            Some(name) => st.serialize_field("name", name)?,
            None => st.skip_field("name")?,
        }
        match &data {
            Some(d) => st.serialize_field("data", d)?,
            None => st.skip_field("data")?,
        }
        st.end()
    }
}

/// A page of engine entries as a JSON array of [`EntryJson`].
pub struct EntriesJson<'a> {
    pub entries: &'a [Entry],
    pub keys: &'a [String],
    pub with_data: bool,
}

impl Serialize for EntriesJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.entries.iter().map(|entry| EntryJson {
            entry,
            keys: self.keys,
            with_data: self.with_data,
        }))
    }
}

/// [`SearchOut`]'s encoding, borrowing the engine's page (field for field
/// the same; a test compares the two).
#[derive(Serialize)]
pub struct SearchJson<'a> {
    pub board: &'a str,
    pub ranking: &'static str,
    pub query: &'a str,
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
    pub entries: EntriesJson<'a>,
}

/// A JSON string as serde_json writes it: most strings (names, member
/// ids) need no escape and are copied whole; the rest go through serde_json.
fn json_str(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, s)
    }
}

/// Appends `e` as [`EntryJson`] would serialize it (the same bytes; a
/// test compares them), writing member and name straight from the board.
pub fn write_entry_json(
    out: &mut Vec<u8>,
    e: &podium_engine::EntryRef<'_>,
    with_data: bool,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"member\":");
    match std::str::from_utf8(e.member) {
        Ok(m) => json_str(out, m)?,
        Err(_) => json_str(out, &String::from_utf8_lossy(e.member))?,
    }
    out.extend_from_slice(b",\"score\":");
    serde_json::to_writer(&mut *out, &Score(e.score))?;
    if let Some(scores) = &e.scores {
        out.extend_from_slice(b",\"scores\":");
        serde_json::to_writer(
            &mut *out,
            &ScoresJson {
                keys: e.keys,
                scores,
            },
        )?;
    }
    out.extend_from_slice(b",\"rank\":");
    out.extend_from_slice(itoa::Buffer::new().format(e.rank).as_bytes());
    if let Some(name) = e.name {
        out.extend_from_slice(b",\"name\":");
        json_str(out, name)?;
    }
    // As `entry_out`: data that is not valid JSON is left out.
    if let (Some(d), true) = (e.data, with_data) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(d) {
            out.extend_from_slice(b",\"data\":");
            serde_json::to_writer(&mut *out, &v)?;
        }
    }
    out.push(b'}');
    Ok(())
}

/// A search answer as [`SearchJson`] serializes it (the same bytes; a test
/// compares them), written from the engine's head and its entries in
/// place: no owned page, no serde structs per entry.
pub fn write_search_json(
    out: &mut Vec<u8>,
    board: &str,
    query: &str,
    head: &podium_engine::SearchHead,
    entries: &mut dyn Iterator<Item = podium_engine::EntryRef<'_>>,
    with_data: bool,
) -> serde_json::Result<()> {
    let rows = head.total.saturating_sub(head.offset).min(head.limit);
    // ~70 bytes an entry with a name: one allocation for a page.
    out.reserve(128 + board.len() + query.len() + 80 * rows.min(1024) as usize);
    out.extend_from_slice(b"{\"board\":");
    json_str(out, board)?;
    out.extend_from_slice(b",\"ranking\":");
    json_str(out, ranking_str(head.ranking))?;
    out.extend_from_slice(b",\"query\":");
    json_str(out, query)?;
    let mut num = itoa::Buffer::new();
    for (key, n) in [
        (&b",\"total\":"[..], head.total),
        (b",\"offset\":", head.offset),
        (b",\"limit\":", head.limit),
    ] {
        out.extend_from_slice(key);
        out.extend_from_slice(num.format(n).as_bytes());
    }
    out.extend_from_slice(b",\"entries\":[");
    for (i, e) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_entry_json(out, &e, with_data)?;
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

pub fn ranking_str(r: Ranking) -> &'static str {
    r.as_str()
}

/// `entry`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryInfoOut {
    pub board: String,
    pub ranking: String,
    #[serde(flatten)]
    pub entry: EntryOut,
    /// Share of the board this member is at least as good as, 0–100.
    pub percentile: f64,
    /// The page holding the member at `page_size`.
    pub page: u64,
    pub total: u64,
}

/// `rank`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankOut {
    pub board: String,
    pub ranking: String,
    pub member: String,
    pub rank: u64,
    pub score: Score,
}

/// `top`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopOut {
    pub board: String,
    pub ranking: String,
    pub page: u64,
    pub page_size: u64,
    pub total: u64,
    pub total_pages: u64,
    pub entries: Vec<EntryOut>,
}

/// `range_by_rank`, `range_by_score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeOut {
    pub board: String,
    pub ranking: String,
    /// Members on the board.
    pub total: u64,
    pub entries: Vec<EntryOut>,
}

/// `around`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AroundOut {
    pub board: String,
    pub ranking: String,
    pub member: String,
    pub rank: u64,
    pub total: u64,
    pub entries: Vec<EntryOut>,
}

/// `search`: one page of the members matching a query, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOut {
    pub board: String,
    pub ranking: String,
    pub query: String,
    /// Every member that matches, not only this page.
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
    pub entries: Vec<EntryOut>,
}

/// `ranks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RanksOut {
    pub board: String,
    pub ranking: String,
    pub entries: Vec<EntryOut>,
    pub missing: Vec<String>,
}

/// `count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountOut {
    pub board: String,
    pub count: u64,
}

/// `percentile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileOut {
    pub board: String,
    pub member: String,
    pub percentile: f64,
}

/// `score_at_percentile`: the entry at that percentile, none on an empty
/// board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreAtOut {
    pub board: String,
    pub percentile: f64,
    pub entry: Option<EntryOut>,
}

/// Writes that report a count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemovedOut {
    pub board: String,
    pub removed: u64,
}

/// `board_info`, `board_create`, `board_update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardOut {
    pub board: String,
    pub members: u64,
    pub read_only: bool,
    pub heap_bytes: u64,
    /// The board this one is an archive of, when it is an archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_of: Option<String>,
    pub config: serde_json::Value,
    /// The reset period the board is in, when it has a reset schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
    /// When its schedule resets it next (RFC 3339, UTC), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_reset: Option<String>,
    /// `board_update` (PUT): whether it created the board.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
}

/// `resort_status`: a `board_update` that changed the board's order
/// re-ranks it member by member; while it runs, `done` of `total` members
/// are in place. Not running: `done` = `total` = 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResortOut {
    pub board: String,
    pub running: bool,
    pub done: u64,
    pub total: u64,
}

/// `boards`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardsOut {
    pub boards: Vec<BoardSize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardSize {
    pub board: String,
    pub members: u64,
    /// The board this one is an archive of, when it is an archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_of: Option<String>,
    /// Heap bytes of the board's structures (its search index included),
    /// as `board_info` gives them.
    #[serde(default)]
    pub heap_bytes: u64,
}

/// `reset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResetOut {
    pub board: String,
    pub archive: String,
    pub archived: u64,
}

/// `set_data` request: the fields to set (HTTP's PATCH body, RPC's
/// options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetDataIn {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub data: Option<serde_json::Value>,
}

/// `merge` / `intersect` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CombineIn {
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<f64>>,
    /// `sum` (default), `min` or `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CombineOut {
    pub board: String,
    pub members: u64,
}

/// `set_data` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetDataOut {
    pub board: String,
    pub member: String,
    pub found: bool,
}

/// One line of `export` (NDJSON): the fields `import` reads back, which
/// are a read's entry as it is.
pub type ExportLine = EntryOut;

/// A board config from its JSON form.
pub fn config_from_json(v: &serde_json::Value) -> Result<BoardConfig, ApiError> {
    if ["archive_of", "archive_seq"]
        .iter()
        .any(|f| v.get(f).is_some_and(|x| !x.is_null()))
    {
        return Err(ApiError::new(
            crate::error::Code::InvalidConfig,
            "archive_of and archive_seq are set by reset, not by a config",
        ));
    }
    let c = BoardConfig::from_json(v)?;
    crate::schedule::validate(&c.reset)
        .map_err(|m| ApiError::new(crate::error::Code::InvalidConfig, format!("reset: {m}")))?;
    for h in &c.webhooks {
        crate::events::hooks::check_url(&h.name, &h.url)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_on_the_wire() {
        let s: Score = serde_json::from_str("1.5").unwrap();
        assert_eq!(s.0, 1.5);
        let s: Score = serde_json::from_str("\"-inf\"").unwrap();
        assert_eq!(s.0, f64::NEG_INFINITY);
        let s: Score = serde_json::from_str("\"42\"").unwrap();
        assert_eq!(s.0, 42.0);
        assert!(serde_json::from_str::<Score>("\"nan\"").is_err());
        assert!(serde_json::from_str::<Score>("\"abc\"").is_err());
        assert!(serde_json::from_str::<Score>("null").is_err());
        assert_eq!(
            serde_json::to_string(&Score(f64::INFINITY)).unwrap(),
            "\"inf\""
        );
        assert_eq!(serde_json::to_string(&Score(2.0)).unwrap(), "2.0");
    }

    #[test]
    fn borrowed_and_direct_search_json_are_search_out_json() {
        use std::sync::Arc;
        let entry = |member: &[u8], score, rank, name: Option<&str>, data: Option<&str>| Entry {
            member: member.to_vec(),
            score,
            scores: None,
            rank,
            name: name.map(Arc::from),
            data: data.map(Arc::from),
        };
        let entries = [
            entry(b"alice", 12.5, 1, Some("Alice \"Al\" Smith"), None),
            entry(
                b"bob\xff",
                f64::INFINITY,
                2,
                None,
                Some(r#"{"team":"red"}"#),
            ),
            entry(
                b"carol",
                f64::NEG_INFINITY,
                3,
                Some("Carol"),
                Some("not json"),
            ),
            entry(b"dave", -0.0, 4, Some(""), Some(r#"{"a":[1,2.5,null]}"#)),
            entry(
                b"e\\\"\n\x01\x7f\xc3\xa9",
                1e300,
                5,
                Some("tab\there \u{1f600} \\ \u{7}"),
                Some(r#" {"k" : "v\u00e9", "n": 1e3} "#),
            ),
            entry(b"", 0.1 + 0.2, u64::MAX, None, Some("")),
            Entry {
                scores: Some(Scores::new(&[
                    Num::Int((1 << 60) + 1),
                    Num::Float(f64::NEG_INFINITY),
                ])),
                ..entry(b"k", (1u64 << 60) as f64, 7, Some("K"), None)
            },
            Entry {
                scores: Some(Scores::new(&[Num::Int(-3), Num::Float(0.5)])),
                ..entry(b"l", -3.0, 8, None, None)
            },
        ];
        let keys = ["laps".to_string(), "time \"ms\"".to_string()];
        let sort_keys: Vec<podium_engine::SortKey> = keys
            .iter()
            .map(|k| {
                podium_engine::SortKey::new(
                    k,
                    podium_engine::Order::Desc,
                    podium_engine::KeyType::Int,
                    podium_engine::KeyOp::Incr,
                )
            })
            .collect();
        for with_data in [false, true] {
            for page in [&entries[..], &[], &entries[4..]] {
                let owned = SearchOut {
                    board: "b\u{e9}".into(),
                    ranking: "dense".into(),
                    query: "a\"b \\ c".into(),
                    total: 7,
                    offset: 1,
                    limit: 25,
                    entries: entries_out(page, &keys, with_data),
                };
                let borrowed = SearchJson {
                    board: "b\u{e9}",
                    ranking: "dense",
                    query: "a\"b \\ c",
                    total: 7,
                    offset: 1,
                    limit: 25,
                    entries: EntriesJson {
                        entries: page,
                        keys: &keys,
                        with_data,
                    },
                };
                let want = serde_json::to_string(&owned).unwrap();
                assert_eq!(serde_json::to_string(&borrowed).unwrap(), want);
                for ranking in [Ranking::Unique, Ranking::Competition, Ranking::Dense] {
                    let head = podium_engine::SearchHead {
                        total: 7,
                        offset: 1,
                        limit: 25,
                        ranking,
                        plan: podium_engine::Plan::Scan,
                    };
                    let mut refs = page.iter().map(|e| podium_engine::EntryRef {
                        member: &e.member,
                        score: e.score,
                        scores: e.scores,
                        keys: if e.scores.is_some() { &sort_keys } else { &[] },
                        rank: e.rank,
                        name: e.name.as_deref(),
                        data: e.data.as_deref(),
                    });
                    let mut direct = Vec::new();
                    write_search_json(
                        &mut direct,
                        "b\u{e9}",
                        "a\"b \\ c",
                        &head,
                        &mut refs,
                        with_data,
                    )
                    .unwrap();
                    let owned = SearchOut {
                        ranking: ranking_str(ranking).into(),
                        ..owned.clone()
                    };
                    assert_eq!(
                        String::from_utf8(direct).unwrap(),
                        serde_json::to_string(&owned).unwrap()
                    );
                }
            }
        }
    }

    #[test]
    fn named_scores_on_the_wire() {
        let e: SubmitIn = serde_json::from_str(
            r#"{"member":"a","scores":{"xp":"9007199254740993","t":1.5,"n":-2,"i":"-inf"}}"#,
        )
        .unwrap();
        assert!(e.score.is_absent());
        let s = e.scores.clone().unwrap().0;
        assert_eq!(s[0], ("xp".to_string(), Num::Int(9_007_199_254_740_993)));
        assert_eq!(s[1].1, Num::Float(1.5));
        assert_eq!(s[2].1, Num::Int(-2));
        assert_eq!(s[3].1, Num::Float(f64::NEG_INFINITY));
        // Written back the same way: the large integer as a string, no score.
        let back = serde_json::to_string(&e).unwrap();
        assert_eq!(
            back,
            r#"{"member":"a","scores":{"xp":"9007199254740993","t":1.5,"n":-2,"i":"-inf"}}"#
        );
        // The least i64 too (its magnitude is no i64).
        let low = NamedScores(vec![("k".into(), Num::Int(i64::MIN))]);
        assert_eq!(
            serde_json::to_string(&low).unwrap(),
            r#"{"k":"-9223372036854775808"}"#
        );
        // MessagePack carries the integer as an integer.
        let mp = rmp_serde::to_vec_named(&e).unwrap();
        let again: SubmitIn = rmp_serde::from_slice(&mp).unwrap();
        assert_eq!(again, e);
        for bad in [
            r#"{"member":"a","scores":{"x":"nan"}}"#,
            r#"{"member":"a","scores":{"x":true}}"#,
            r#"{"member":"a","scores":{"x":18446744073709551615}}"#,
            r#"{"member":"a","scores":[1,2]}"#,
            r#"{"member":"a","scores":{"a":1,"b":2,"c":3,"d":4,"e":5}}"#,
        ] {
            assert!(serde_json::from_str::<SubmitIn>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn submit_refuses_unknown_fields() {
        let e = serde_json::from_str::<SubmitIn>(r#"{"member":"a","score":1,"scroe":2}"#);
        assert!(e.unwrap_err().to_string().contains("scroe"));
    }
}
