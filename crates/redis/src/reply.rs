//! What comes back from a call: Redis's errors as the API's (the script's
//! `PODIUM` refusals as the engine's errors, a lost or busy Redis as
//! `storage_unavailable`), and replies decoded into the API's shapes.

use std::sync::Arc;

use podium_core::api::{parse_score, ranking_str, EntryOut, NamedScores, RangeOut, Score};
use podium_core::error::{ApiError, Code};
use podium_engine::Ranking;
use redis::{ErrorKind, RedisError, Value};

use crate::sorted::{ranking_keys, Layout};

pub(crate) fn unavailable(e: &RedisError) -> ApiError {
    ApiError::new(Code::StorageUnavailable, format!("redis unavailable: {e}"))
}

pub(crate) fn protocol(what: &str) -> ApiError {
    ApiError::new(
        Code::Internal,
        format!("unexpected reply from redis ({what})"),
    )
}

/// A Redis error as the API reports it: the script's `PODIUM` refusals
/// become the engine's errors (same codes and messages as the embedded
/// engine); a lost, refused or timed-out connection, a cluster that is
/// down or resharding, or a server still loading is `storage_unavailable`
/// (503), which the client retries.
pub(crate) fn map_err(board: &str, e: RedisError) -> ApiError {
    if e.code() == Some("PODIUM") {
        return podium_err(board, e.detail().unwrap_or(""));
    }
    let transient = e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(
            e.kind(),
            ErrorKind::TryAgain
                | ErrorKind::ClusterDown
                | ErrorKind::MasterDown
                | ErrorKind::BusyLoadingError
                | ErrorKind::ClusterConnectionNotFound
                | ErrorKind::ReadOnly
        );
    if transient {
        unavailable(&e)
    } else {
        ApiError::new(Code::Internal, format!("redis: {e}"))
    }
}

/// The script's answer when a board's config changed since podium read
/// it to encode the call (podium reads it again and retries).
const STALE: &str = "the board changed while podium encoded the call; try again";

pub(crate) fn is_stale(e: &ApiError) -> bool {
    e.code == Code::Internal && e.message == STALE
}

/// A write refused while its board is re-sorted (retried: see `call`).
pub(crate) fn is_resorting(e: &ApiError) -> bool {
    e.code == Code::StorageUnavailable
        && e.message
            .ends_with("is being re-sorted (its sort keys changed); try again")
}

/// A reply's bytes as they are (codes of sort keys hold any byte).
pub(crate) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn num(s: &str) -> f64 {
    parse_score(s).unwrap_or(f64::NAN)
}

/// The script's refusal `kind args...` as the engine's error.
pub(crate) fn podium_err(board: &str, detail: &str) -> ApiError {
    use podium_engine::Error as E;
    let mut w = detail.split(' ');
    let kind = w.next().unwrap_or("");
    let args: Vec<&str> = w.collect();
    let arg = |i: usize| args.get(i).copied().unwrap_or("");
    let e = match kind {
        "noboard" => return ApiError::no_board(board),
        "ro" => E::ReadOnly(board.to_string()),
        "exists" => E::BoardExists(board.to_string()),
        "staging" => {
            return ApiError::new(
                Code::Internal,
                format!(
                    "an earlier reset of board {board:?} (by a podium from before resets \
                     could be finished) did not finish: its content waits in the staging keys \
                     (see docs/redis-backend.md)"
                ),
            )
        }
        "member" => E::BadMember {
            len: arg(0).parse().unwrap_or(0),
            max: podium_engine::MAX_MEMBER_BYTES,
        },
        "nan" => E::NanScore,
        "nanres" => E::NanResult,
        "name" => E::BadName {
            max: podium_engine::MAX_NAME_BYTES,
        },
        "data" => E::DataTooLarge {
            max: arg(0).parse().unwrap_or(0),
            len: arg(1).parse().unwrap_or(0),
        },
        "dataobj" => {
            return ApiError::new(Code::InvalidData, "data must be a JSON object");
        }
        "stale" => return ApiError::new(Code::Internal, STALE),
        "resorting" | "resortlost" => {
            return ApiError::new(
                Code::StorageUnavailable,
                format!("board {board:?} is being re-sorted (its sort keys changed); try again"),
            )
        }
        "combsort" => E::WrongKind(
            "merge and intersect combine single scores; boards with sort keys cannot be combined"
                .into(),
        ),
        "oob" => {
            let mut score = num(arg(0));
            if arg(1) != "-" {
                score += num(arg(1));
            }
            E::OutOfBounds {
                score,
                min: num(arg(2)),
                max: num(arg(3)),
            }
        }
        _ => return ApiError::new(Code::Internal, format!("redis script: {detail}")),
    };
    e.into()
}

pub(crate) fn arr(v: Value) -> Result<Vec<Value>, ApiError> {
    match v {
        Value::Array(a) | Value::Set(a) => Ok(a),
        Value::Nil => Ok(Vec::new()),
        _ => Err(protocol("array")),
    }
}

/// The array that ends `a`, taken off it (a missing one is empty).
pub(crate) fn arr_last(a: &mut Vec<Value>) -> Result<Vec<Value>, ApiError> {
    arr(a.pop().unwrap_or(Value::Nil))
}

pub(crate) fn int(v: &Value) -> Result<u64, ApiError> {
    match v {
        Value::Int(i) => Ok((*i).max(0) as u64),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| protocol("integer")),
        _ => Err(protocol("integer")),
    }
}

pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

pub(crate) fn score(v: &Value) -> Result<f64, ApiError> {
    match v {
        Value::BulkString(b) => score_bytes(b),
        Value::SimpleString(s) => score_bytes(s.as_bytes()),
        _ => Err(protocol("score")),
    }
}

/// A score as Redis prints it (`%.17g`, `inf`, `-inf`), read from the
/// reply's bytes without an intermediate `String`.
pub(crate) fn score_bytes(b: &[u8]) -> Result<f64, ApiError> {
    std::str::from_utf8(b)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|x| !x.is_nan())
        .ok_or_else(|| protocol("score"))
}

pub(crate) fn json_data(v: Option<&Value>) -> Option<serde_json::Value> {
    v.and_then(text).and_then(|d| serde_json::from_str(&d).ok())
}

pub(crate) fn ranking_of(v: Option<&Value>) -> Result<Ranking, ApiError> {
    v.and_then(text)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| protocol("ranking"))
}

/// The rank of a member from its best-first position and the script's
/// count of what is strictly better (members; distinct scores on a dense
/// board), per the board's ranking.
pub(crate) fn rank_of(ranking: Ranking, pos: u64, better: u64) -> u64 {
    match ranking {
        Ranking::Competition | Ranking::Dense => better + 1,
        Ranking::Unique => pos + 1,
    }
}

/// A ranked entry of `member`, `[member, position, score, better, name,
/// data]` (at least six elements: `ranks`' and `search`'s), with its
/// position.
pub(crate) fn ranked_entry(
    f: &[Value],
    member: String,
    ranking: Ranking,
    layout: Option<&Layout>,
    with_data: bool,
) -> Result<(u64, EntryOut), ApiError> {
    let (pos, better) = (int(&f[1])?, int(&f[3])?);
    let (score, scores) = score_of(&f[2], layout)?;
    Ok((
        pos,
        EntryOut {
            scores,
            member,
            score,
            rank: rank_of(ranking, pos, better),
            name: text(&f[4]),
            data: if with_data { json_data(f.get(5)) } else { None },
        },
    ))
}

/// A reply's score, or on a board with sort keys its codes read as the
/// score (the first key) and the scores.
pub(crate) fn score_of(
    v: &Value,
    layout: Option<&Layout>,
) -> Result<(Score, Option<NamedScores>), ApiError> {
    match layout {
        None => Ok((Score(score(v)?), None)),
        Some(l) => {
            let (s, named) = l.score_of(bytes(v).ok_or_else(|| protocol("codes"))?)?;
            Ok((s, Some(named)))
        }
    }
}

/// A member's bytes as its id, taking the reply's buffer when it is
/// UTF-8 (podium writes only UTF-8 ids).
fn member_of(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A page's (member, score) pairs from the script's `packed`: `{}` for
/// none, else `{entries, members and scores joined by byte 0xFF}` (no
/// UTF-8 id holds that byte; a count that does not match means a member
/// that podium did not write, refused rather than misread).
fn page_pairs(v: Value) -> Result<Vec<(String, f64)>, ApiError> {
    let mut a = arr(v)?;
    if a.is_empty() {
        return Ok(Vec::new());
    }
    let (Some(Value::BulkString(b)), Some(n)) = (a.pop(), a.first()) else {
        return Err(protocol("window entries"));
    };
    let n = int(n)? as usize;
    if b.iter().filter(|&&c| c == 0xFF).count() + 1 != 2 * n {
        return Err(ApiError::new(
            Code::Internal,
            "a page of the board holds a member with byte 0xFF, which podium never writes",
        ));
    }
    let mut out = Vec::with_capacity(n);
    let mut parts = b.split(|&c| c == 0xFF);
    while let (Some(m), Some(sc)) = (parts.next(), parts.next()) {
        out.push((member_of(m.to_vec()), score_bytes(sc)?));
    }
    Ok(out)
}

/// What ties compare in a page: a score, or a tuple's codes.
#[derive(PartialEq)]
enum ScoreKey {
    Float(f64),
    Codes(Vec<u8>),
}

type PageEntry = (String, ScoreKey, Option<(Score, NamedScores)>);

/// A page of a board with sort keys: `{'s', member, ...}`, each member
/// its codes then its id.
fn keyed_page(v: Value, l: &Layout) -> Result<Vec<PageEntry>, ApiError> {
    let a = arr(v)?;
    let mut out = Vec::with_capacity(a.len().saturating_sub(1));
    for e in a.into_iter().skip(1) {
        let Value::BulkString(mut b) = e else {
            return Err(protocol("page member"));
        };
        if b.len() < l.len() {
            return Err(protocol("page member"));
        }
        let id = b.split_off(l.len());
        let scores = l.score_of(&b)?;
        out.push((member_of(id), ScoreKey::Codes(b), Some(scores)));
    }
    Ok(out)
}

/// A decoded `window` reply.
pub(crate) struct Window {
    pub(crate) total: u64,
    pub(crate) ranking: Ranking,
    /// The board's, when it has sort keys.
    pub(crate) layout: Option<Arc<Layout>>,
    pub(crate) entries: Vec<EntryOut>,
    /// Elements after the window's own seven (around's centre).
    pub(crate) rest: Vec<Value>,
}

pub(crate) fn window(v: Value, with_data: bool) -> Result<Window, ApiError> {
    let mut a = arr(v)?;
    if a.len() < 7 {
        return Err(protocol("window"));
    }
    let rest = a.split_off(7);
    let (ranking, layout) = ranking_keys(a.get(6))?;
    let total = int(&a[0])?;
    let first = int(&a[1])?;
    let better_first = int(&a[3])?;
    // 0: no member of the page has a name (data), or data not asked for.
    let values = |v: Value| match v {
        Value::Int(_) => Ok(Vec::new()),
        v => arr(v),
    };
    let names = values(std::mem::replace(&mut a[4], Value::Nil))?;
    let data = if with_data {
        values(std::mem::replace(&mut a[5], Value::Nil))?
    } else {
        Vec::new()
    };
    // A board with sort keys sends its page as a list of members (codes,
    // then id) after a marker; the codes stand for the score.
    let page = match &layout {
        None => page_pairs(std::mem::replace(&mut a[2], Value::Nil))?
            .into_iter()
            .map(|(m, sc)| (m, ScoreKey::Float(sc), None))
            .collect(),
        Some(l) => keyed_page(std::mem::replace(&mut a[2], Value::Nil), l)?,
    };
    let mut entries: Vec<EntryOut> = Vec::with_capacity(page.len());
    let mut prev: Option<(ScoreKey, u64)> = None;
    for (i, (member, key, scores)) in page.into_iter().enumerate() {
        let pos = first + i as u64;
        // Ties share a rank; after them a competition rank is the
        // position + 1 and a dense rank the next number, so only the
        // window's first needs a count.
        let rank = match (ranking, &prev) {
            (Ranking::Unique, _) => pos + 1,
            (_, Some((p, r))) if *p == key => *r,
            (Ranking::Competition, Some(_)) => pos + 1,
            (Ranking::Dense, Some((_, r))) => r + 1,
            (_, None) => better_first + 1,
        };
        let score = match (&key, &scores) {
            (ScoreKey::Float(x), _) => Score(*x),
            (ScoreKey::Codes(_), Some((s, _))) => *s,
            (ScoreKey::Codes(_), None) => return Err(protocol("page")),
        };
        prev = Some((key, rank));
        entries.push(EntryOut {
            scores: scores.map(|s| s.1),
            member,
            score,
            rank,
            name: names.get(i).and_then(text),
            data: if with_data {
                json_data(data.get(i))
            } else {
                None
            },
        });
    }
    Ok(Window {
        total,
        ranking,
        layout,
        entries,
        rest,
    })
}

/// A range's answer from its window; a `from_worst` range's entries are
/// reversed here to come worst first, as the embedded engine gives them.
pub(crate) fn range_out(board: &str, mut w: Window, from_worst: bool) -> RangeOut {
    if from_worst {
        w.entries.reverse();
    }
    RangeOut {
        board: board.to_string(),
        ranking: ranking_str(w.ranking).to_string(),
        total: w.total,
        entries: w.entries,
    }
}
