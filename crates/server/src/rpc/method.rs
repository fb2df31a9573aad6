//! A request's method name and params, turned into a typed [`Call`] of one
//! docs/spec.md §2 operation, with the errors HTTP gives for the same mistakes.
//!
//! Params are positional, board first; most methods take an options map
//! last, whose keys are the HTTP API's query or body field names for the
//! same operation. Which positional values stand for an HTTP path segment,
//! a query parameter or a body decides the error code of a bad one, as it
//! does over HTTP: path and body values → `malformed_request` (or
//! `invalid_score`, `invalid_board_name`), query values → `invalid_argument`.

use rmpv::Value;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::settings::Scope;
use podium_core::api::{check_entry_score, CombineIn, Num, Score, SetDataIn, SubmitIn};
use podium_core::backend::RangeBounds;
use podium_core::entry::SubmitRec;
use podium_core::error::{ApiError, Code};
use podium_core::events::{EventId, Filter};
use podium_core::op::Op;
use podium_core::ops::{self, range};

/// Every method. The names are docs/spec.md §2's operation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Submit,
    SubmitMany,
    Remove,
    RemoveRange,
    SetData,
    BoardCreate,
    BoardUpdate,
    BoardPatch,
    BoardDelete,
    Reset,
    Merge,
    Intersect,
    Import,
    Entry,
    Rank,
    Score,
    Count,
    Top,
    RangeByRank,
    RangeByScore,
    Around,
    Ranks,
    Percentile,
    ScoreAtPercentile,
    Search,
    Boards,
    BoardInfo,
    ResortStatus,
    Export,
    Subscribe,
    Unsubscribe,
    Auth,
}

use Method as M;

/// `(name, method, operation)`: the operation's scope is the one a key
/// needs, as for every protocol.
#[rustfmt::skip]
pub const METHODS: &[(&str, Method, Op)] = &[
    ("submit", M::Submit, Op::Submit),
    ("submit_many", M::SubmitMany, Op::Submit),
    ("remove", M::Remove, Op::Remove),
    ("remove_range", M::RemoveRange, Op::RemoveRange),
    ("set_data", M::SetData, Op::SetData),
    ("board_create", M::BoardCreate, Op::BoardPut),
    ("board_update", M::BoardUpdate, Op::BoardPut),
    ("board_patch", M::BoardPatch, Op::BoardPatch),
    ("board_delete", M::BoardDelete, Op::BoardDelete),
    ("reset", M::Reset, Op::Reset),
    ("merge", M::Merge, Op::Merge),
    ("intersect", M::Intersect, Op::Intersect),
    ("import", M::Import, Op::Import),
    ("entry", M::Entry, Op::Entry),
    ("rank", M::Rank, Op::Rank),
    ("score", M::Score, Op::Rank),
    ("count", M::Count, Op::Count),
    ("top", M::Top, Op::Top),
    ("range_by_rank", M::RangeByRank, Op::Range),
    ("range_by_score", M::RangeByScore, Op::Range),
    ("around", M::Around, Op::Around),
    ("ranks", M::Ranks, Op::Ranks),
    ("percentile", M::Percentile, Op::Percentile),
    ("score_at_percentile", M::ScoreAtPercentile, Op::ScoreAtPercentile),
    ("search", M::Search, Op::Search),
    ("boards", M::Boards, Op::Boards),
    ("board_info", M::BoardInfo, Op::BoardInfo),
    ("resort_status", M::ResortStatus, Op::ResortStatus),
    ("export", M::Export, Op::Export),
    // Ending a subscription needs what starting one did.
    ("subscribe", M::Subscribe, Op::Subscribe),
    ("unsubscribe", M::Unsubscribe, Op::Subscribe),
    ("auth", M::Auth, Op::Auth),
];

impl Method {
    pub fn from_name(name: &str) -> Option<Method> {
        METHODS
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|&(_, m, _)| m)
    }

    pub fn name(self) -> &'static str {
        METHODS
            .iter()
            .find(|(_, m, _)| *m == self)
            .map_or("?", |(n, ..)| n)
    }

    /// The operation the method performs.
    pub fn op(self) -> Option<Op> {
        METHODS
            .iter()
            .find(|(_, m, _)| *m == self)
            .map(|&(.., op)| op)
    }

    /// The scope a key needs; `None`: callable before `auth`.
    pub fn scope(self) -> Option<Scope> {
        match self.op() {
            Some(op) => op.scope(),
            // Unreachable (a test checks every method has a row);
            // refusing all but admin keys is the safe answer.
            None => Some(Scope::Admin),
        }
    }

    /// Whether the method changes state: notifications of reads have
    /// nothing to show and are not run.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            M::Submit
                | M::SubmitMany
                | M::Remove
                | M::RemoveRange
                | M::SetData
                | M::BoardCreate
                | M::BoardUpdate
                | M::BoardPatch
                | M::BoardDelete
                | M::Reset
                | M::Merge
                | M::Intersect
                | M::Import
                | M::Auth
        )
    }

    /// Whether a notification of the method is run: writes change state,
    /// and so does `unsubscribe` (its notification form ends the
    /// subscription unanswered). A notification of `subscribe` is not
    /// run: its caller could not learn the id its events carry.
    pub fn runs_as_notification(self) -> bool {
        self.is_write() || self == M::Unsubscribe
    }
}

/// `remove_range`: by 1-based rank or by score.
pub use podium_core::ops::range::RangeBy;

/// One entry of an `import` batch: parsed, or refused with its member id
/// (when one could be read) — refused entries fail alone.
pub type ImportEntry = Result<SubmitIn, (Option<String>, ApiError)>;

/// A typed call of one operation.
#[derive(Debug, Clone)]
pub enum Call {
    Submit(ops::Submit),
    SubmitMany(ops::SubmitMany),
    /// `submit_many` (or, with `import`, an `import` batch) whose plain
    /// entries the connection's reader already made into the records the
    /// embedded engine applies and logs (`rpc::fast`): the conversion and
    /// its allocations stay off the thread that holds the board. Only the
    /// reader makes it, and only for the embedded engine.
    Records {
        board: String,
        recs: Vec<SubmitRec>,
        import: bool,
    },
    Remove(ops::Remove),
    RemoveRange(ops::RemoveRange),
    SetData(ops::SetData),
    BoardCreate(ops::CreateBoard),
    BoardUpdate(ops::PutBoard),
    BoardPatch(ops::PatchBoard),
    BoardDelete(ops::DeleteBoard),
    Reset(ops::Reset),
    Combine(ops::Combine),
    /// `import` of one batch: each entry as read, or why it could not be
    /// (with its member id when one could be read).
    Import {
        board: String,
        entries: Vec<ImportEntry>,
    },
    Entry(ops::GetEntry),
    Rank(ops::Rank),
    Count(ops::Count),
    Top(ops::Top),
    RangeByRank(ops::RangeByRank),
    RangeByScore(ops::RangeByScore),
    Around(ops::Around),
    Search(ops::Search),
    Ranks(ops::Ranks),
    Percentile(ops::Percentile),
    ScoreAtPercentile(ops::ScoreAtPercentile),
    Boards(ops::ListBoards),
    BoardInfo(ops::BoardInfo),
    ResortStatus(ops::ResortStatus),
    Export {
        board: String,
    },
    /// `subscribe`: the connection runs it (its events become
    /// notifications on it).
    Subscribe(ops::Subscribe),
    /// `unsubscribe` of a subscription id of the connection.
    Unsubscribe {
        id: u64,
    },
    Auth {
        key: String,
    },
}

fn malformed(m: impl Into<String>) -> ApiError {
    ApiError::new(Code::MalformedRequest, m)
}

/// What a value is, for error messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "a boolean",
        Value::Integer(_) => "an integer",
        Value::F32(_) | Value::F64(_) => "a float",
        Value::String(_) => "a string",
        Value::Binary(_) => "binary",
        Value::Array(_) => "an array",
        Value::Map(_) => "a map",
        Value::Ext(..) => "an extension value",
    }
}

/// A value into `T` through rmp-serde, which reads enums as MessagePack
/// clients write them (a unit variant as its name) where rmpv's own serde
/// support wants an array. The value is re-encoded first: it is one entry
/// or options map, small next to the frame it came from.
fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    let mut buf = Vec::new();
    rmpv::encode::write_value(&mut buf, &v).map_err(|e| e.to_string())?;
    rmp_serde::from_slice(&buf).map_err(|e| e.to_string())
}

/// A string value (binary holding UTF-8 is taken too: older clients send
/// strings as raw bytes).
fn into_string(v: Value) -> Result<String, Value> {
    match v {
        Value::String(s) => match s.into_str() {
            Some(s) => Ok(s),
            None => Err(Value::Nil),
        },
        Value::Binary(b) => String::from_utf8(b).map_err(|_| Value::Nil),
        other => Err(other),
    }
}

/// Positional params of one call, consumed front to back.
struct Params {
    method: Method,
    /// Human list of the positional params, for arity errors.
    usage: &'static str,
    items: std::vec::IntoIter<Value>,
    /// 1-based position of the next param.
    pos: usize,
}

impl Params {
    /// Checks the count: `required` positional params, then up to
    /// `optional` more (the options map, or an optional config).
    fn new(
        method: Method,
        params: Vec<Value>,
        required: usize,
        optional: usize,
        usage: &'static str,
    ) -> Result<Params, ApiError> {
        let n = params.len();
        if n < required || n > required + optional {
            let takes = if optional == 0 {
                format!("{required}")
            } else {
                format!("{required} to {}", required + optional)
            };
            return Err(malformed(format!(
                "{} takes {takes} params ({usage}), got {n}",
                method.name()
            )));
        }
        Ok(Params {
            method,
            usage,
            items: params.into_iter(),
            pos: 1,
        })
    }

    fn next(&mut self) -> Option<(usize, Value)> {
        let v = self.items.next()?;
        let pos = self.pos;
        self.pos += 1;
        Some((pos, v))
    }

    fn err(&self, pos: usize, what: &str, msg: impl std::fmt::Display) -> String {
        format!("{}: param {pos} ({what}) {msg}", self.method.name())
    }

    fn string(&mut self, what: &str) -> Result<String, ApiError> {
        let (pos, v) = self.required(what)?;
        into_string(v).map_err(|v| {
            malformed(self.err(
                pos,
                what,
                match v {
                    Value::Nil => "must be a string of valid UTF-8".to_string(),
                    v => format!("must be a string, got {}", kind(&v)),
                },
            ))
        })
    }

    fn required(&mut self, what: &str) -> Result<(usize, Value), ApiError> {
        self.next().ok_or_else(|| {
            malformed(format!(
                "{}: {what} is missing ({})",
                self.method.name(),
                self.usage
            ))
        })
    }

    /// A board name, checked as HTTP checks the `{board}` path segment.
    fn board(&mut self, what: &str) -> Result<String, ApiError> {
        let b = self.string(what)?;
        podium_engine::Store::validate_user_name(&b)?;
        Ok(b)
    }

    fn strings(&mut self, what: &str) -> Result<Vec<String>, ApiError> {
        let (pos, v) = self.required(what)?;
        let Value::Array(items) = v else {
            return Err(malformed(self.err(
                pos,
                what,
                format!("must be an array of strings, got {}", kind(&v)),
            )));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                into_string(v).map_err(|_| {
                    malformed(self.err(
                        pos,
                        what,
                        format!("item {i} is not a string of valid UTF-8"),
                    ))
                })
            })
            .collect()
    }

    fn array(&mut self, what: &str) -> Result<Vec<Value>, ApiError> {
        let (pos, v) = self.required(what)?;
        match v {
            Value::Array(items) => Ok(items),
            v => Err(malformed(self.err(
                pos,
                what,
                format!("must be an array, got {}", kind(&v)),
            ))),
        }
    }

    /// A query-like positional number (HTTP: `invalid_argument`).
    fn u64(&mut self, what: &str) -> Result<u64, ApiError> {
        let (pos, v) = self.required(what)?;
        v.as_u64().ok_or_else(|| {
            ApiError::bad(self.err(
                pos,
                what,
                format!("must be a non-negative integer, got {}", kind(&v)),
            ))
        })
    }

    fn f64(&mut self, what: &str) -> Result<f64, ApiError> {
        let (pos, v) = self.required(what)?;
        v.as_f64().ok_or_else(|| {
            ApiError::bad(self.err(pos, what, format!("must be a number, got {}", kind(&v))))
        })
    }

    /// The optional trailing map: `nil` or absent is empty.
    fn map(&mut self, what: &str) -> Result<Vec<(Value, Value)>, ApiError> {
        match self.next() {
            None | Some((_, Value::Nil)) => Ok(Vec::new()),
            Some((_, Value::Map(m))) => Ok(m),
            Some((pos, v)) => Err(malformed(self.err(
                pos,
                what,
                format!("must be a map, got {}", kind(&v)),
            ))),
        }
    }

    /// The trailing options map, its keys checked against `allowed` (the
    /// HTTP query parameters of the same operation).
    fn options(&mut self, allowed: &'static [&'static str]) -> Result<Opts, ApiError> {
        let method = self.method.name();
        let raw = self.map("options")?;
        let mut got = Vec::with_capacity(raw.len());
        for (k, v) in raw {
            let Ok(k) = into_string(k) else {
                return Err(ApiError::bad(format!(
                    "{method}: option names must be strings"
                )));
            };
            let Some(&name) = allowed.iter().find(|a| **a == k) else {
                let expected = if allowed.is_empty() {
                    "it takes none".to_string()
                } else {
                    format!("expected {}", allowed.join(", "))
                };
                return Err(ApiError::bad(format!(
                    "{method}: unknown option {k:?}; {expected}"
                )));
            };
            if got.iter().any(|(n, _)| *n == name) {
                return Err(ApiError::bad(format!(
                    "{method}: option {name:?} given twice"
                )));
            }
            // nil stands for "not given", as JSON null does.
            if !v.is_nil() {
                got.push((name, v));
            }
        }
        Ok(Opts { method, got })
    }
}

/// The options given, by name.
struct Opts {
    method: &'static str,
    got: Vec<(&'static str, Value)>,
}

impl Opts {
    fn take(&mut self, name: &str) -> Option<Value> {
        let i = self.got.iter().position(|(n, _)| *n == name)?;
        Some(self.got.swap_remove(i).1)
    }

    fn has(&self, name: &str) -> bool {
        self.got.iter().any(|(n, _)| *n == name)
    }

    fn u64(&mut self, name: &str) -> Result<Option<u64>, ApiError> {
        self.take(name)
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    ApiError::bad(format!(
                        "{}: {name} must be a non-negative integer, got {}",
                        self.method,
                        kind(&v)
                    ))
                })
            })
            .transpose()
    }

    fn flag(&mut self, name: &str) -> Result<bool, ApiError> {
        match self.take(name) {
            None => Ok(false),
            Some(Value::Boolean(b)) => Ok(b),
            Some(v) => Err(ApiError::bad(format!(
                "{}: {name} must be true or false, got {}",
                self.method,
                kind(&v)
            ))),
        }
    }

    fn string(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        self.take(name)
            .map(|v| {
                into_string(v)
                    .map_err(|_| ApiError::bad(format!("{}: {name} must be a string", self.method)))
            })
            .transpose()
    }

    /// A score bound: a number, or a string in Redis syntax (`-inf`,
    /// `+inf`, `(5` for an exclusive bound), as HTTP's `min` / `max`.
    fn bound(&mut self, name: &str) -> Result<(Option<Num>, bool), ApiError> {
        let bad = |e: String| range::bad_bound(name, &e);
        match self.take(name) {
            None => Ok((None, false)),
            // An integer stays exact (a bound on an `int` sort key).
            Some(v) if v.as_i64().is_some() => Ok((v.as_i64().map(Num::Int), false)),
            Some(v) if v.is_number() => {
                let x = v.as_f64().unwrap_or(f64::NAN);
                if x.is_nan() {
                    return Err(bad("score is not a number (NaN)".into()));
                }
                Ok((Some(Num::Float(x)), false))
            }
            Some(v) => {
                let s = into_string(v).map_err(|v| bad(format!("got {}", kind(&v))))?;
                let (x, exclusive) = range::bound(name, &s)?;
                Ok((Some(x), exclusive))
            }
        }
    }

    fn bounds(&mut self) -> Result<RangeBounds, ApiError> {
        let (min, min_exclusive) = self.bound("min")?;
        let (max, max_exclusive) = self.bound("max")?;
        Ok(RangeBounds {
            min,
            max,
            min_exclusive,
            max_exclusive,
        })
    }

    fn worst_first(&mut self) -> Result<bool, ApiError> {
        range::from_worst(self.string("from")?.as_deref())
    }
}

/// Refuses a key repeated within any map, as a repeated key in an HTTP
/// body is refused: a decoder would keep one of the two silently.
fn unique_keys(values: &[Value]) -> Result<(), ApiError> {
    for v in values {
        match v {
            Value::Array(items) => unique_keys(items)?,
            Value::Map(m) => {
                if let Some(k) = repeated_key(m) {
                    let k = match k.as_str() {
                        Some(s) => format!("{s:?}"),
                        None => k.to_string(),
                    };
                    return Err(malformed(format!("the key {k} is repeated in a map")));
                }
                for (_, v) in m {
                    unique_keys(std::slice::from_ref(v))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The first key of `m` seen twice. Maps are small (an entry, options):
/// compared pairwise without allocating; a large one goes through a set
/// of the keys' encodings.
fn repeated_key(m: &[(Value, Value)]) -> Option<&Value> {
    if m.len() <= 16 {
        return m
            .iter()
            .enumerate()
            .find(|(i, (k, _))| m[..*i].iter().any(|(seen, _)| seen == k))
            .map(|(_, (k, _))| k);
    }
    let mut seen = std::collections::HashSet::with_capacity(m.len());
    m.iter().map(|(k, _)| k).find(|k| {
        let mut b = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = rmpv::encode::write_value(&mut b, k);
        !seen.insert(b)
    })
}

/// One submission from a map, with HTTP's codes: a bad `score` is
/// `invalid_score`, any other shape error `malformed_request`. `drop_rank`
/// accepts `export`'s entries, which carry a `rank`.
pub fn submit_in(v: Value, drop_rank: bool) -> Result<SubmitIn, ApiError> {
    let Value::Map(mut map) = v else {
        return Err(malformed(format!(
            "an entry must be a map, got {}",
            kind(&v)
        )));
    };
    if drop_rank {
        map.retain(|(k, _)| k.as_str() != Some("rank"));
    }
    if let Some((_, s)) = map.iter().find(|(k, _)| k.as_str() == Some("score")) {
        check_entry_score(s.as_str(), || from_value::<Score>(s.clone()))?;
    }
    from_value(Value::Map(map)).map_err(malformed)
}

/// `merge` / `intersect` options: the HTTP body less `sources`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CombineOpts {
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    aggregate: Option<String>,
}

/// A body-like map into `T` (HTTP: a malformed body).
fn body<T: DeserializeOwned>(
    method: Method,
    what: &str,
    m: Vec<(Value, Value)>,
) -> Result<T, ApiError> {
    from_value(Value::Map(m)).map_err(|e| malformed(format!("{}: {what}: {e}", method.name())))
}

const PAGE: &[&str] = &["page", "page_size", "with_data"];

/// `subscribe`'s options, checked as HTTP checks the event route's query
/// (`invalid_argument` for a bad value, podium's words from
/// [`Filter::new`] and the event id parser).
fn subscribe(board: String, o: &mut Opts) -> Result<ops::Subscribe, ApiError> {
    let top = match o.take("top") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    let got = match &v {
                        Value::Integer(i) => i.to_string(),
                        v => kind(v).to_string(),
                    };
                    ApiError::bad(format!(
                        "top must be between 1 and {} (got {got})",
                        podium_core::events::MAX_TOP
                    ))
                })?,
        ),
    };
    let members = match o.take("members") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                into_string(v).map_err(|_| {
                    ApiError::bad(format!(
                        "subscribe: members item {i} is not a string of valid UTF-8"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(v) => {
            return Err(ApiError::bad(format!(
                "subscribe: members must be an array of strings, got {}",
                kind(&v)
            )))
        }
    };
    let snapshot = o.flag("snapshot")?;
    let since = o
        .string("since")?
        .map(|s| s.parse::<EventId>())
        .transpose()?;
    let req = ops::Subscribe {
        board,
        filter: Filter::new(top, members, snapshot)?,
        since,
    };
    req.check()?;
    Ok(req)
}

/// Turns a method's params into a [`Call`].
pub fn parse(method: Method, params: Vec<Value>) -> Result<Call, ApiError> {
    unique_keys(&params)?;
    let p = |req, opt, usage| Params::new(method, params, req, opt, usage);
    Ok(match method {
        M::Submit => {
            let mut p = p(2, 0, "board, entry")?;
            let board = p.board("board")?;
            let (_, v) = p.required("entry")?;
            Call::Submit(ops::Submit {
                board,
                entry: submit_in(v, false)?,
            })
        }
        M::SubmitMany => {
            let mut p = p(2, 0, "board, [entry, ...]")?;
            let board = p.board("board")?;
            let entries =
                podium_core::ops::submit::batch(p.array("entries")?, |v| submit_in(v, false))?;
            Call::SubmitMany(ops::SubmitMany { board, entries })
        }
        M::Remove => {
            let mut p = p(2, 0, "board, [member, ...]")?;
            Call::Remove(ops::Remove {
                board: p.board("board")?,
                members: p.strings("members")?,
            })
        }
        M::RemoveRange => {
            let mut p = p(2, 0, "board, {by, start, stop | min, max}")?;
            let board = p.board("board")?;
            let mut o = p.options(&["by", "start", "stop", "min", "max"])?;
            let by = match o.string("by")?.as_deref().unwrap_or("rank") {
                "rank" => {
                    if o.has("min") || o.has("max") {
                        return Err(ApiError::bad(
                            "min and max go with by=score; by=rank takes start and stop",
                        ));
                    }
                    match (o.u64("start")?, o.u64("stop")?) {
                        (Some(start), Some(stop)) => RangeBy::Rank { start, stop },
                        _ => {
                            return Err(ApiError::bad(
                                "by=rank needs start and stop (1-based ranks)",
                            ))
                        }
                    }
                }
                "score" => {
                    if o.has("start") || o.has("stop") {
                        return Err(ApiError::bad(
                            "start and stop go with by=rank; by=score takes min and max",
                        ));
                    }
                    if !o.has("min") || !o.has("max") {
                        return Err(ApiError::bad(
                            "removing by=score needs both min and max (use -inf / +inf for no bound)",
                        ));
                    }
                    RangeBy::Score(o.bounds()?)
                }
                other => {
                    return Err(ApiError::bad(format!(
                        "by must be rank or score, got {other:?}"
                    )))
                }
            };
            Call::RemoveRange(ops::RemoveRange { board, by })
        }
        M::SetData => {
            let mut p = p(2, 1, "board, member, {name, data}")?;
            let board = p.board("board")?;
            let member = p.string("member")?;
            let req: SetDataIn = body(method, "options", p.map("options")?)?;
            Call::SetData(ops::SetData {
                board,
                member,
                name: req.name,
                data: req.data,
            })
        }
        M::BoardCreate | M::BoardUpdate => {
            let mut p = p(1, 1, "board, config")?;
            let board = p.board("board")?;
            let config: serde_json::Value = body(method, "config", p.map("config")?)?;
            if method == M::BoardCreate {
                Call::BoardCreate(ops::CreateBoard { board, config })
            } else {
                Call::BoardUpdate(ops::PutBoard::from_body(board, config)?)
            }
        }
        M::BoardPatch => {
            let mut p = p(2, 0, "board, {config fields to change}")?;
            let board = p.board("board")?;
            let patch: serde_json::Value = body(method, "patch", p.map("patch")?)?;
            Call::BoardPatch(ops::PatchBoard::from_body(board, patch)?)
        }
        M::BoardDelete => Call::BoardDelete(ops::DeleteBoard {
            board: p(1, 0, "board")?.board("board")?,
        }),
        M::Reset => Call::Reset(ops::Reset {
            board: p(1, 0, "board")?.board("board")?,
        }),
        M::Merge | M::Intersect => {
            let mut p = p(
                2,
                1,
                "destination board, [source board, ...], {aggregate, weights}",
            )?;
            let dest = p.board("destination board")?;
            let sources = p.strings("sources")?;
            let o: CombineOpts = body(method, "options", p.map("options")?)?;
            Call::Combine(ops::Combine {
                dest,
                req: CombineIn {
                    sources,
                    weights: o.weights,
                    aggregate: o.aggregate,
                },
                intersect: method == M::Intersect,
            })
        }
        M::Import => {
            let mut p = p(2, 1, "board, [entry, ...], {}")?;
            let board = p.board("board")?;
            let items = p.array("entries")?;
            p.options(&[])?;
            let entries = items
                .into_iter()
                .map(|v| {
                    let member = match &v {
                        Value::Map(m) => m
                            .iter()
                            .find(|(k, _)| k.as_str() == Some("member"))
                            .and_then(|(_, v)| v.as_str())
                            .map(str::to_string),
                        _ => None,
                    };
                    submit_in(v, true).map_err(|e| (member, e))
                })
                .collect();
            Call::Import { board, entries }
        }
        M::Entry => {
            let mut p = p(2, 1, "board, member, {page_size}")?;
            let board = p.board("board")?;
            let member = p.string("member")?;
            // with_data is accepted for symmetry: entry always has its data.
            let mut o = p.options(&["page_size", "with_data"])?;
            o.flag("with_data")?;
            Call::Entry(ops::GetEntry {
                board,
                member,
                page_size: o.u64("page_size")?,
            })
        }
        M::Rank | M::Score | M::Percentile => {
            let mut p = p(2, 1, "board, member")?;
            let board = p.board("board")?;
            let member = p.string("member")?;
            p.options(&[])?;
            if method == M::Percentile {
                Call::Percentile(ops::Percentile { board, member })
            } else {
                Call::Rank(ops::Rank { board, member })
            }
        }
        M::Count => {
            let mut p = p(1, 1, "board, {min, max}")?;
            let board = p.board("board")?;
            let bounds = p.options(&["min", "max"])?.bounds()?;
            Call::Count(ops::Count { board, bounds })
        }
        M::Top => {
            let mut p = p(1, 1, "board, {page, page_size, with_data}")?;
            let board = p.board("board")?;
            let mut o = p.options(PAGE)?;
            Call::Top(ops::Top {
                board,
                page: o.u64("page")?,
                page_size: o.u64("page_size")?,
                with_data: o.flag("with_data")?,
            })
        }
        M::RangeByRank => {
            let mut p = p(3, 1, "board, start, stop, {from, with_data}")?;
            let board = p.board("board")?;
            let start = p.u64("start")?;
            let stop = p.u64("stop")?;
            let mut o = p.options(&["from", "with_data"])?;
            Call::RangeByRank(ops::RangeByRank {
                board,
                start,
                stop,
                from_worst: o.worst_first()?,
                with_data: o.flag("with_data")?,
            })
        }
        M::RangeByScore => {
            let mut p = p(1, 1, "board, {min, max, from, offset, limit, with_data}")?;
            let board = p.board("board")?;
            let mut o = p.options(&["min", "max", "from", "offset", "limit", "with_data"])?;
            Call::RangeByScore(ops::RangeByScore {
                board,
                bounds: o.bounds()?,
                from_worst: o.worst_first()?,
                offset: o.u64("offset")?,
                limit: o.u64("limit")?,
                with_data: o.flag("with_data")?,
            })
        }
        M::Around => {
            let mut p = p(2, 1, "board, member, {page_size, with_data}")?;
            let board = p.board("board")?;
            let member = p.string("member")?;
            let mut o = p.options(&["page_size", "with_data"])?;
            Call::Around(ops::Around {
                board,
                member,
                page_size: o.u64("page_size")?,
                with_data: o.flag("with_data")?,
            })
        }
        M::Ranks => {
            let mut p = p(2, 1, "board, [member, ...], {with_data}")?;
            let board = p.board("board")?;
            let members = p.strings("members")?;
            let mut o = p.options(&["with_data"])?;
            Call::Ranks(ops::Ranks {
                board,
                members,
                with_data: o.flag("with_data")?,
            })
        }
        M::ScoreAtPercentile => {
            let mut p = p(2, 1, "board, p")?;
            let board = p.board("board")?;
            let pct = p.f64("p")?;
            p.options(&[])?;
            Call::ScoreAtPercentile(ops::ScoreAtPercentile { board, p: pct })
        }
        M::Boards => {
            p(0, 1, "")?.options(&[])?;
            Call::Boards(ops::ListBoards)
        }
        M::BoardInfo => {
            let mut p = p(1, 1, "board")?;
            let board = p.board("board")?;
            p.options(&[])?;
            Call::BoardInfo(ops::BoardInfo { board })
        }
        M::ResortStatus => {
            let mut p = p(1, 1, "board")?;
            let board = p.board("board")?;
            p.options(&[])?;
            Call::ResortStatus(ops::ResortStatus { board })
        }
        M::Export => {
            let mut p = p(1, 1, "board")?;
            let board = p.board("board")?;
            p.options(&[])?;
            Call::Export { board }
        }
        M::Auth => Call::Auth {
            key: p(1, 0, "key")?.string("key")?,
        },
        M::Subscribe => {
            let mut p = p(1, 1, "board, {top, members, snapshot, since}")?;
            let board = p.board("board")?;
            let mut o = p.options(&["top", "members", "snapshot", "since"])?;
            Call::Subscribe(subscribe(board, &mut o)?)
        }
        M::Unsubscribe => Call::Unsubscribe {
            id: p(1, 0, "subscription id")?.u64("subscription id")?,
        },
        M::Search => {
            let mut p = p(2, 1, "board, query, {limit, offset, with_data}")?;
            let board = p.board("board")?;
            let query = p.string("query")?;
            let mut o = p.options(&["limit", "offset", "with_data"])?;
            Call::Search(ops::Search {
                board,
                query,
                limit: o.u64("limit")?,
                offset: o.u64("offset")?,
                with_data: o.flag("with_data")?,
            })
        }
    })
}

#[cfg(test)]
mod tests;
