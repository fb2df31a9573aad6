//! The Redis / Redis Cluster backend: owns the connection (a
//! `ConnectionManager` that reconnects by itself, or a cluster connection
//! that follows MOVED/ASK), the key layout of a board under its hash tag,
//! the Lua function library every compound operation runs in
//! (`podium.lua`, loaded once per node, called by FCALL), and the
//! translation of its replies into the API's shapes and the engine's
//! errors (an import batch goes in as a native ZADD between two of the
//! library's guards), and the scheduled resets of boards kept
//! in Redis (`run_due_resets`, `spawn_reset_scheduler`), safe with any
//! number of podium nodes. Layout and decisions: `docs/redis-backend.md`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use podium_engine::search::text::clip;
use podium_engine::search::{parse, tokenize, QToken, SearchError, MAX_MEMBER_WORDS};
use podium_engine::{Aggregate, BoardConfig, Ranking, Store, Tiebreak};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, Value};

use podium_core::api::*;
use podium_core::backend::{Backend, Imported};
use podium_core::backend::{RangeBounds, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_RANGE};
use podium_core::error::{ApiError, Code};
use podium_core::schedule::{self, Clock, DateTime, SystemClock, Utc};

const LUA: &str = include_str!("podium.lua");

/// The function library podium loads into Redis: `podium.lua` under a
/// name and function names that carry a hash of its text, so podium
/// versions with different scripts can serve the same Redis side by side
/// (each calls its own), and loading it again (`FUNCTION LOAD REPLACE`,
/// by any node) never changes what another node calls.
struct Library {
    /// The library's code, `#!lua name=…` line first.
    code: String,
    /// The function every operation can go through, and the one with the
    /// `no-writes` flag, for the operations that only read.
    rw: String,
    ro: String,
}

impl Library {
    fn new() -> Library {
        // FNV-1a: a name, not a defence; any change of the text changes it.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in LUA.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let name = format!("podium_{h:016x}");
        let (rw, ro) = (name.clone(), format!("{name}_ro"));
        Library {
            code: format!("#!lua name={name}\nlocal FN_RW, FN_RO = '{rw}', '{ro}'\n{LUA}"),
            rw,
            ro,
        }
    }
}

/// The operations of the library's `no-writes` function (`READS` in
/// `podium.lua`).
fn reads_only(op: &str) -> bool {
    matches!(
        op,
        "info"
            | "window"
            | "rank_range"
            | "score_range"
            | "around"
            | "entry"
            | "ranks"
            | "score_at"
            | "count"
            | "staged"
    )
}

/// Why a board did not take an import batch by a native ZADD (script op
/// `zadd_open`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    NoBoard,
    ReadOnly,
    /// Its config needs `submit` (bounds, cap, `best`/`incr`, dense).
    Config,
    /// Its search sets are built or being built: new members join them.
    Indexed,
}

/// What [`RedisBackend::scheduled_states`] read: the time and each
/// board's config JSON, read-only flag and period.
#[doc(hidden)]
pub struct SeenResets {
    now: chrono::DateTime<chrono::Utc>,
    names: Vec<String>,
    states: Vec<Result<BoardState, ApiError>>,
}

/// A board's `json`, `ro` and `p` fields.
type BoardState = (Option<String>, Option<String>, Option<String>);

/// What [`RedisBackend::reset_from`] did with the caller's reset.
enum ResetRun {
    /// The config or the period changed since the caller read them:
    /// nothing was done.
    Stale,
    /// Made; `reported`: this node recorded the archive's name (script op
    /// `name`), so it is the one to report it. Another node that found the
    /// reset staged may have named it first, and then reports it.
    Made { out: ResetOut, reported: bool },
    /// Another node that found the reset staged named its archive and
    /// finished it before this one could: that node reports it.
    FinishedElsewhere,
}

const NO_ARGS: [&str; 0] = [];

/// Whether Redis answered that the function called is not loaded: a
/// Redis restarted without its data, a `FUNCTION FLUSH`, or a cluster
/// node that got the board's slot without the library.
fn missing_function(e: &RedisError) -> bool {
    e.kind() == ErrorKind::ResponseError
        && e.detail()
            .is_some_and(|d| d.starts_with("Function not found"))
}

/// Entries of a reset's content copied into the archive per script run.
const COPY_CHUNK: u64 = 10_000;

// The script checks member and name lengths against these, written out.
const _: () = assert!(
    podium_engine::MAX_MEMBER_BYTES == 512 && podium_engine::MAX_NAME_BYTES == 512,
    "update MAX_MEMBER / MAX_NAME in podium.lua"
);

/// The set of board names. It lives in its own slot, so it is written
/// before a board is created and after it is deleted, and every listing
/// checks the board's config key: a crash between the two steps leaves a
/// name that lists nothing, never a board that is not listed.
const REGISTRY: &str = "podium:boards";

/// Connection settings; the defaults suit a LAN.
#[derive(Debug, Clone, Copy)]
pub struct RedisOptions {
    pub connect_timeout: Duration,
    /// A reply slower than this is a 503 (a 10k-entry submit takes tens of
    /// milliseconds inside Redis, so this is far above any normal call).
    pub response_timeout: Duration,
    /// The most any call may take, reconnection included: a call that
    /// finds the connection down waits for the reconnection, which must
    /// not hold a request for longer than a client would wait.
    pub call_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(15),
        }
    }
}

/// One Redis, or a cluster. Both are cheap handles to shared multiplexed
/// connections, cloned per call.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Redis holding the boards; podium nodes on top of it keep no state.
pub struct RedisBackend {
    conn: Conn,
    lib: Arc<Library>,
    call_timeout: Duration,
    /// Names archives (`reset`); injected by tests, as `Service`'s is.
    clock: Arc<dyn Clock>,
}

/// The hash tag of a board: its name with `%` and `}` escaped, so the tag
/// ends at the first `}` and no two boards' keys can coincide.
fn tag(board: &str) -> String {
    board.replace('%', "%25").replace('}', "%7D")
}

/// The board's key of kind `kind`: `{tag}:kind`.
fn board_key(board: &str, kind: &str) -> String {
    let mut k = String::with_capacity(board.len() + 4 + kind.len());
    k.push('{');
    if board.contains(['%', '}']) {
        k.push_str(&tag(board));
    } else {
        k.push_str(board);
    }
    k.push_str("}:");
    k.push_str(kind);
    k
}

/// The board's config hash, `{tag}:c`: the one key of its calls (the
/// script names the others from it).
fn config_key(board: &str) -> String {
    board_key(board, "c")
}

/// The search words of a text as the engine indexes them (folded, each cut
/// to 255 bytes, at most 1,024), space-separated: words hold only
/// alphanumeric chars, so neither spaces nor newlines.
fn words_line(text: &str) -> String {
    let mut out = String::new();
    for w in tokenize(text).iter().take(MAX_MEMBER_WORDS) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(clip(w));
    }
    out
}

/// The tokenised texts of a write, as the script's `sources` reads them:
/// the id's words; the name's (when one is given); then `key words` for
/// each data key that a `search_fields` entry could name (`name` means the
/// display name, and a field name holds no `:`, `"` or whitespace), with
/// the engine's reading of a value: a string's words, a number or a
/// boolean as its JSON text, nothing for the rest. Tokenising happens
/// here because Lua has no Unicode normalisation.
fn entry_words(member: &str, name: Option<&str>, data: Option<&serde_json::Value>) -> String {
    let mut s = words_line(member);
    s.push('\n');
    if let Some(n) = name {
        s.push_str(&words_line(n));
    }
    if let Some(serde_json::Value::Object(o)) = data {
        for (k, v) in o {
            if k.is_empty()
                || k == "name"
                || k.contains([':', '"'])
                || k.contains(char::is_whitespace)
            {
                continue;
            }
            let text = match v {
                serde_json::Value::String(t) => words_line(t),
                serde_json::Value::Number(x) => words_line(&x.to_string()),
                serde_json::Value::Bool(b) => words_line(if *b { "true" } else { "false" }),
                _ => continue,
            };
            s.push('\n');
            s.push_str(k);
            s.push(' ');
            s.push_str(&text);
        }
    }
    s
}

/// Whether an `import` entry can go in by the script's multi-member
/// `ZADD` (op `import`): nothing about the entry itself can be refused (a
/// valid member, a score that is a number), it is a plain `set` with no
/// condition, name or data, and its id tokenises to itself, so its search
/// sources are the plain ones the script leaves unstored. Whether the
/// board takes it (no bounds, cap, `best`/`incr` or dense ranking) is the
/// script's check, once per batch.
fn plain_import(e: &SubmitIn) -> bool {
    matches!(e.op.as_deref(), None | Some("set"))
        && e.only.is_none()
        && e.cond.is_none()
        && e.name.is_none()
        && e.data.is_none()
        && !e.member.is_empty()
        && e.member.len() <= podium_engine::MAX_MEMBER_BYTES
        && !e.score.0.is_nan()
        && id_is_its_word(&e.member)
}

/// Whether a member id tokenises to itself, one word: `words_line(m) ==
/// m`, answered without tokenising for the common id of ASCII lowercase
/// letters and digits (a bulk load checks every entry).
fn id_is_its_word(m: &str) -> bool {
    if m.len() <= 255
        && m.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return true;
    }
    words_line(m) == m
}

/// Whether a query needs each candidate checked against its words. The
/// sets, scored by how many of a member's words each holds, answer every
/// query whose words match a laminar family of word sets (see the script's
/// `search`): any query without a field restriction. A `field:` word on a
/// board with several search fields (the parser drops the restriction on
/// a board with one) matches a set that overlaps others without nesting.
fn needs_verify(toks: &[QToken]) -> bool {
    toks.iter().any(|t| t.field.is_some())
}

/// Buffers for [`score_str`].
#[derive(Default)]
struct ScoreBuf {
    float: ryu::Buffer,
    int: itoa::Buffer,
}

/// A score as Redis parses it back to the same double: the shortest
/// round-tripping form (ryu's; `core::fmt` gives the same digits several
/// times slower, which a bulk load paid per entry), or the integer's
/// digits for an integral score (most leaderboards' scores; itoa is
/// several times faster than ryu again). -0 keeps ryu's `-0.0`.
fn score_str(x: f64, buf: &mut ScoreBuf) -> &str {
    if x == f64::INFINITY {
        "inf"
    } else if x == f64::NEG_INFINITY {
        "-inf"
    } else if x.is_nan() {
        "nan"
    } else if x.fract() == 0.0 && x.abs() < 1e15 && !(x == 0.0 && x.is_sign_negative()) {
        buf.int.format(x as i64)
    } else {
        buf.float.format_finite(x)
    }
}

fn fmt_score(x: f64) -> String {
    score_str(x, &mut ScoreBuf::default()).to_string()
}

/// A reply with Redis's error as an error. Only the top level is
/// looked at: the script returns its refusals there, and an error inside
/// an array (a pipeline's) is the caller's to read.
fn server_reply(r: redis::RedisResult<Value>) -> redis::RedisResult<Value> {
    match r? {
        Value::ServerError(e) => Err(e.into()),
        v => Ok(v),
    }
}

fn unavailable(e: &RedisError) -> ApiError {
    ApiError::new(Code::StorageUnavailable, format!("redis unavailable: {e}"))
}

fn protocol(what: &str) -> ApiError {
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
fn map_err(board: &str, e: RedisError) -> ApiError {
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

fn num(s: &str) -> f64 {
    parse_score(s).unwrap_or(f64::NAN)
}

/// The script's refusal `kind args...` as the engine's error.
fn podium_err(board: &str, detail: &str) -> ApiError {
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
        "data" => E::BadData {
            max: arg(0).parse().unwrap_or(0),
        },
        "dataobj" => {
            return ApiError::new(Code::InvalidData, "data must be a JSON object");
        }
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

// ------------------------------------------------------------ replies

fn arr(v: Value) -> Result<Vec<Value>, ApiError> {
    match v {
        Value::Array(a) | Value::Set(a) => Ok(a),
        Value::Nil => Ok(Vec::new()),
        _ => Err(protocol("array")),
    }
}

fn int(v: &Value) -> Result<u64, ApiError> {
    match v {
        Value::Int(i) => Ok((*i).max(0) as u64),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| protocol("integer")),
        _ => Err(protocol("integer")),
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn score(v: &Value) -> Result<f64, ApiError> {
    match v {
        Value::BulkString(b) => score_bytes(b),
        Value::SimpleString(s) => score_bytes(s.as_bytes()),
        _ => Err(protocol("score")),
    }
}

fn json_data(v: Option<&Value>) -> Option<serde_json::Value> {
    v.and_then(text).and_then(|d| serde_json::from_str(&d).ok())
}

fn ranking_of(v: Option<&Value>) -> Result<Ranking, ApiError> {
    v.and_then(text)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| protocol("ranking"))
}

/// The rank of a member from its best-first position and the script's
/// count of what is strictly better (members; distinct scores on a dense
/// board), per the board's ranking.
fn rank_of(ranking: Ranking, pos: u64, better: u64) -> u64 {
    match ranking {
        Ranking::Competition | Ranking::Dense => better + 1,
        Ranking::Unique => pos + 1,
    }
}

/// A decoded `window` reply.
struct Window {
    total: u64,
    ranking: Ranking,
    entries: Vec<EntryOut>,
    /// Elements after the window's own seven (around's centre).
    rest: Vec<Value>,
}

/// A range's answer from its window; a `from_worst` range's entries are
/// reversed here to come worst first, as the embedded engine gives them.
fn range_out(board: &str, mut w: Window, from_worst: bool) -> RangeOut {
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

/// A score as Redis prints it (`%.17g`, `inf`, `-inf`), read from the
/// reply's bytes without an intermediate `String`.
fn score_bytes(b: &[u8]) -> Result<f64, ApiError> {
    std::str::from_utf8(b)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|x| !x.is_nan())
        .ok_or_else(|| protocol("score"))
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

fn window(v: Value, with_data: bool) -> Result<Window, ApiError> {
    let mut a = arr(v)?;
    if a.len() < 7 {
        return Err(protocol("window"));
    }
    let rest = a.split_off(7);
    let ranking = ranking_of(a.get(6))?;
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
    let pairs = page_pairs(std::mem::replace(&mut a[2], Value::Nil))?;
    let mut entries: Vec<EntryOut> = Vec::with_capacity(pairs.len());
    let mut prev: Option<(f64, u64)> = None;
    for (i, (member, sc)) in pairs.into_iter().enumerate() {
        let pos = first + i as u64;
        // Ties share a rank; after them a competition rank is the
        // position + 1 and a dense rank the next number, so only the
        // window's first needs a count.
        let rank = match (ranking, prev) {
            (Ranking::Unique, _) => pos + 1,
            (_, Some((p, r))) if p == sc => r,
            (Ranking::Competition, Some(_)) => pos + 1,
            (Ranking::Dense, Some((_, r))) => r + 1,
            (_, None) => better_first + 1,
        };
        prev = Some((sc, rank));
        entries.push(EntryOut {
            member,
            score: Score(sc),
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
        entries,
        rest,
    })
}

// ------------------------------------------------------------ configs

/// A config as this backend stored it: an archive's records whose
/// archive it is, which a client's config may not (see
/// [`config_from_json`]).
fn stored_config(v: &serde_json::Value) -> podium_engine::Result<BoardConfig> {
    BoardConfig::from_json(v)
}

/// Whose archive `board` is, by its stored config JSON and read-only
/// flag: the record, or for an archive made before archives recorded it,
/// what its name says (as the embedded backend's recovery reads it).
fn archive_of(board: &str, json: &str, read_only: bool) -> Option<String> {
    if let Some(a) = archive_in_json(json) {
        return Some(a.board);
    }
    if !read_only {
        return None;
    }
    podium_engine::store::legacy_archives(&[board])
        .pop()
        .map(|(_, a)| a.board)
}

/// The archive record in a stored config JSON, if any.
fn archive_in_json(json: &str) -> Option<podium_engine::ArchiveOf> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(podium_engine::ArchiveOf {
        board: v.get("archive_of")?.as_str()?.to_string(),
        seq: v.get("archive_seq")?.as_u64()?,
    })
}

/// The config fields `take` handed over for an archive (the live board's,
/// as staged), made those of its archive number `seq`: read-only, and the
/// JSON recording whose archive it is.
fn archive_fields(mut fields: Vec<String>, board: &str, seq: u64) -> Result<Vec<String>, ApiError> {
    for pair in fields.chunks_mut(2) {
        if let [k, v] = pair {
            if k == "json" {
                let json: serde_json::Value =
                    serde_json::from_str(v).map_err(|_| protocol("staged config"))?;
                let mut c = stored_config(&json).map_err(|_| protocol("staged config"))?;
                c.archive = Some(podium_engine::ArchiveOf {
                    board: board.to_string(),
                    seq,
                });
                *v = c.to_json().to_string();
            }
        }
    }
    fields.extend(["ro".to_string(), "1".to_string()]);
    Ok(fields)
}

/// Configs Redis cannot honour exactly are refused when a board is
/// created or reconfigured, never served approximately.
fn supported(c: &BoardConfig) -> Result<(), ApiError> {
    if c.tiebreak != Tiebreak::Member {
        return Err(ApiError::new(
            Code::InvalidConfig,
            format!(
                "tiebreak {:?} is not available on the redis backend: a Redis sorted set orders \
                 equal scores by member bytes only (use tiebreak \"member\")",
                c.tiebreak.as_str()
            ),
        ));
    }
    Ok(())
}

/// The config hash the script reads, plus the full config as JSON for
/// `board_info`, plus the reset period of now (`p`) for a board with a
/// schedule.
fn config_fields(c: &BoardConfig, now: DateTime<Utc>) -> Vec<String> {
    let mut v = vec![
        "order".into(),
        c.order.as_str().into(),
        "ranking".into(),
        c.ranking.as_str().into(),
        "update".into(),
        c.update.as_str().into(),
        "maxdata".into(),
        c.max_data_bytes.to_string(),
        "json".into(),
        c.to_json().to_string(),
        "sf".into(),
        c.search_fields.join(" "),
    ];
    if let Some(m) = c.min_score {
        v.extend(["min".into(), fmt_score(m)]);
    }
    if let Some(m) = c.max_score {
        v.extend(["max".into(), fmt_score(m)]);
    }
    if let Some(m) = c.max_members {
        v.extend(["cap".into(), m.to_string()]);
    }
    if let Some(p) = schedule::period_label(&c.reset, now) {
        v.extend(["p".into(), p]);
    }
    v
}

/// A name or data argument of the script: `-` leaves the field, `=value`
/// sets it, `=` clears it, `!` is data that is not a JSON object.
fn extra_arg(v: Option<&str>) -> String {
    match v {
        None => "-".into(),
        Some(s) => format!("={s}"),
    }
}

fn data_arg(d: &Option<serde_json::Value>) -> Result<String, ()> {
    match d {
        None | Some(serde_json::Value::Null) => Ok("-".into()),
        Some(v @ serde_json::Value::Object(_)) => Ok(format!("={v}")),
        Some(_) => Err(()),
    }
}

fn bound(v: Option<f64>, exclusive: bool, unbounded: &str) -> String {
    match v {
        None => unbounded.into(),
        Some(x) if exclusive => format!("({}", fmt_score(x)),
        Some(x) => fmt_score(x),
    }
}

fn has_nan(b: &RangeBounds) -> bool {
    b.min.is_some_and(f64::is_nan) || b.max.is_some_and(f64::is_nan)
}

fn page_size(ps: Option<u64>) -> Result<u64, ApiError> {
    match ps.unwrap_or(DEFAULT_PAGE_SIZE) {
        0 => Err(ApiError::bad("page_size must be at least 1")),
        n if n > MAX_PAGE_SIZE => Err(ApiError::bad(format!(
            "page_size must be at most {MAX_PAGE_SIZE}"
        ))),
        n => Ok(n),
    }
}

fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

impl RedisBackend {
    /// Connects to `redis://host:port[/db]` or
    /// `redis+cluster://h1:p1,h2:p2,...` and loads the script.
    pub async fn connect(url: &str) -> Result<RedisBackend, ApiError> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    pub async fn connect_with(url: &str, opts: RedisOptions) -> Result<RedisBackend, ApiError> {
        let conn = if let Some(rest) = url.strip_prefix("redis+cluster://") {
            let nodes: Vec<String> = rest
                .split(',')
                .map(|h| h.trim().trim_end_matches('/'))
                .filter(|h| !h.is_empty())
                .map(|h| format!("redis://{h}"))
                .collect();
            if nodes.is_empty() {
                return Err(ApiError::bad(
                    "redis+cluster:// needs at least one host:port",
                ));
            }
            let client = ClusterClientBuilder::new(nodes)
                .connection_timeout(opts.connect_timeout)
                .response_timeout(opts.response_timeout)
                .build()
                .map_err(|e| ApiError::bad(format!("bad redis cluster address: {e}")))?;
            Conn::Cluster(
                client
                    .get_async_connection()
                    .await
                    .map_err(|e| unavailable(&e))?,
            )
        } else if url.starts_with("redis://") {
            let client = redis::Client::open(url)
                .map_err(|e| ApiError::bad(format!("bad redis address: {e}")))?;
            // The crate's default backoff (factor 100 on a 1 s minimum)
            // sleeps a minute or more between reconnection attempts, and
            // every request waits for the attempt in progress: retry fast
            // and give up soon, so a down Redis is a prompt 503 and a
            // restarted one is used within a second.
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(opts.connect_timeout)
                .set_response_timeout(opts.response_timeout)
                .set_number_of_retries(2)
                .set_factor(2)
                .set_max_delay(500);
            Conn::Single(
                client
                    .get_connection_manager_with_config(config)
                    .await
                    .map_err(|e| unavailable(&e))?,
            )
        } else {
            return Err(ApiError::bad(
                "a redis backend is redis://host:port or redis+cluster://host:port,host:port,...",
            ));
        };
        let backend = RedisBackend {
            conn,
            lib: Arc::new(Library::new()),
            call_timeout: opts.call_timeout,
            clock: Arc::new(SystemClock),
        };
        // Loaded up front (on every primary of a cluster), so requests go
        // straight to FCALL; a call that finds it missing loads it again.
        backend
            .bounded("", backend.load_library(&mut backend.conn.clone()))
            .await?;
        Ok(backend)
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> RedisBackend {
        self.clock = clock;
        self
    }

    /// Copies the staged content of `board` (step 1 of `reset` done) into
    /// the archive, which exists, in chunks.
    async fn copy_staged(&self, board: &str, archive: &str, n: u64) -> Result<(), ApiError> {
        let mut from = 0;
        while from < n {
            let to = (from + COPY_CHUNK).min(n) - 1;
            let mut a = arr(self
                .call(board, "staged", [from.to_string(), to.to_string()])
                .await?)?;
            if a.len() != 4 {
                return Err(protocol("staged"));
            }
            let srcs = arr(a.pop().unwrap_or(Value::Nil))?;
            let data = arr(a.pop().unwrap_or(Value::Nil))?;
            let names = arr(a.pop().unwrap_or(Value::Nil))?;
            let ms = arr(a.pop().unwrap_or(Value::Nil))?;
            let mut args = Vec::with_capacity(ms.len() * 2);
            for (i, pair) in ms.chunks(2).enumerate() {
                let [m, sc] = pair else {
                    return Err(protocol("staged entries"));
                };
                args.extend([
                    text(m).ok_or_else(|| protocol("member"))?,
                    text(sc).ok_or_else(|| protocol("score"))?,
                    names.get(i).and_then(text).unwrap_or_default(),
                    data.get(i).and_then(text).unwrap_or_default(),
                    srcs.get(i).and_then(text).unwrap_or_default(),
                ]);
            }
            self.call(archive, "load", args).await?;
            from = to + 1;
        }
        Ok(())
    }

    /// Builds the search sets of `board` (its first search; see the
    /// script's `index`): one script run per chunk of members, so a big
    /// board does not hold Redis for seconds, while writes from any node
    /// keep the members they touch indexed.
    async fn build_index(&self, board: &str) -> Result<(), ApiError> {
        const CHUNK: &str = "1000";
        // Distinct across builders (nodes, calls): process, clock, count.
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let fresh = || {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("{}.{nanos}.{n}", std::process::id())
        };
        let (mut token, mut cursor) = (fresh(), "0".to_string());
        let mut restarts = 0;
        loop {
            let a = arr(self
                .call(board, "index", [token.as_str(), cursor.as_str(), CHUNK])
                .await?)?;
            match a.first().and_then(text).as_deref() {
                Some("done") => return Ok(()),
                Some("more") if a.len() == 3 => {
                    cursor = text(&a[1]).ok_or_else(|| protocol("index cursor"))?;
                    token = text(&a[2]).ok_or_else(|| protocol("index token"))?;
                }
                // The search fields changed under the build.
                Some("restart") if restarts < 5 => {
                    restarts += 1;
                    (token, cursor) = (fresh(), "0".to_string());
                }
                Some("restart") => return Err(ApiError::new(
                    Code::StorageUnavailable,
                    "the board's search fields kept changing while its index was built; try again",
                )),
                _ => return Err(protocol("index")),
            }
        }
    }

    /// For tests: a reset of `board` that stops as a crash would, after
    /// its first step (`copied: None`: the content moved to the staging
    /// keys, no archive yet) or after naming and creating the archive and
    /// copying the first `copied` entries into it (all of them: only the
    /// staging keys are left). The next `reset` finishes it.
    #[doc(hidden)]
    pub async fn reset_stopped_half_way(
        &self,
        board: &str,
        copied: Option<u64>,
    ) -> Result<(), ApiError> {
        let (info, json) = self.info_raw(board).await?;
        let now = self.clock.now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let taken = arr(self
            .call(board, "take", [json.as_str(), "", now.as_str(), ""])
            .await?)?;
        if info.period.is_some() || taken.len() < 2 {
            return Err(protocol("take (a board without a schedule)"));
        }
        let Some(copied) = copied else {
            return Ok(());
        };
        let base = format!("{board}@{}", text(&taken[1]).unwrap_or_default());
        let existing = self.boards_starting_with(&base).await?;
        let name =
            podium_engine::store::next_archive_name(&base, existing.iter().map(String::as_str));
        let (name, seq, _) = self
            .name_archive(board, &name)
            .await?
            .ok_or_else(|| protocol("name"))?;
        let fields: Vec<String> = taken[2..].iter().filter_map(text).collect();
        let fields = archive_fields(fields, board, seq)?;
        self.registry("SADD", &name).await?;
        self.call(&name, "create", fields).await?;
        self.copy_staged(board, &name, copied).await
    }

    /// For tests: the first step of the scheduled reset that
    /// `run_due_resets` would make of `board` now (its content moved to
    /// the staging keys, the next period entered), left there as a node
    /// that stopped, or has not yet gone on, leaves it.
    #[doc(hidden)]
    pub async fn take_due_reset(&self, board: &str) -> Result<(), ApiError> {
        let (info, json) = self.info_raw(board).await?;
        let reset = stored_config(&info.config)
            .map_err(|_| protocol("config"))?
            .reset;
        let (Some(p), Some(label)) = (
            info.period,
            schedule::period_label(&reset, self.clock.now()),
        ) else {
            return Err(protocol("take (a board with a schedule and a period)"));
        };
        let taken = arr(self
            .call(board, "take", [json.as_str(), &p, &p, &label])
            .await?)?;
        if taken.len() < 2 {
            return Err(protocol("take (a period not yet left)"));
        }
        Ok(())
    }

    /// Runs a Redis call within `call_timeout`, mapping its errors.
    async fn bounded<T>(
        &self,
        board: &str,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ApiError> {
        match tokio::time::timeout(self.call_timeout, f).await {
            Ok(r) => r.map_err(|e| map_err(board, e)),
            Err(_) => Err(ApiError::new(
                Code::StorageUnavailable,
                format!(
                    "redis unavailable: no answer within {:?}",
                    self.call_timeout
                ),
            )),
        }
    }

    /// Loads the function library (on every primary of a cluster).
    /// `REPLACE`: another node may have loaded it first, with the same
    /// text under the same name.
    async fn load_library(&self, conn: &mut Conn) -> redis::RedisResult<()> {
        let mut c = redis::cmd("FUNCTION");
        c.arg("LOAD").arg("REPLACE").arg(&self.lib.code);
        c.query_async::<Value>(conn).await.map(drop)
    }

    /// The FCALL of operation `op` on `board`.
    fn fcall<I, A>(&self, board: &str, op: &str, args: I) -> Cmd
    where
        I: IntoIterator<Item = A>,
        A: redis::ToRedisArgs,
    {
        let mut c = redis::cmd("FCALL");
        let f = if reads_only(op) {
            &self.lib.ro
        } else {
            &self.lib.rw
        };
        c.arg(f.as_str()).arg(1).arg(config_key(board)).arg(op);
        for a in args {
            c.arg(a);
        }
        c
    }

    /// Sends an FCALL; when the node has lost the library (restarted
    /// empty, flushed, or a cluster node new to the slot), loads it and
    /// sends the call again.
    async fn send(&self, cmd: &Cmd) -> redis::RedisResult<Value> {
        let mut conn = self.conn.clone();
        match server_reply(conn.req_packed_command(cmd).await) {
            Err(e) if missing_function(&e) => {
                self.load_library(&mut conn).await?;
                server_reply(conn.req_packed_command(cmd).await)
            }
            r => r,
        }
    }

    /// Runs operation `op` of the script on `board`.
    async fn call<I, A>(&self, board: &str, op: &str, args: I) -> Result<Value, ApiError>
    where
        I: IntoIterator<Item = A>,
        A: redis::ToRedisArgs,
    {
        let cmd = self.fcall(board, op, args);
        self.bounded(board, self.send(&cmd)).await
    }

    async fn registry(&self, cmd: &str, board: &str) -> Result<(), ApiError> {
        let mut c = redis::cmd(cmd);
        c.arg(REGISTRY).arg(board);
        self.bounded(board, c.query_async::<()>(&mut self.conn.clone()))
            .await
    }

    /// The registered boards whose names start with `prefix` (`NAME@LABEL`:
    /// the names a new archive must not take).
    async fn boards_starting_with(&self, prefix: &str) -> Result<Vec<String>, ApiError> {
        Ok(self
            .boards()
            .await?
            .boards
            .into_iter()
            .map(|b| b.board)
            .filter(|b| b.starts_with(prefix))
            .collect())
    }

    /// The archives of `board` with their sequence numbers, oldest first,
    /// as [`Store::archives_of`] orders them; archives made before they
    /// recorded theirs are numbered as [`podium_engine::store::legacy_archives`]
    /// numbers them, before every newer one.
    async fn archives_of(&self, board: &str) -> Result<Vec<(String, u64)>, ApiError> {
        let names = self.registered_boards().await?;
        let states = futures_util::future::join_all(names.iter().map(|n| async move {
            let mut c = redis::cmd("HMGET");
            c.arg(config_key(n)).arg("json").arg("ro");
            self.bounded(
                n,
                c.query_async::<(Option<String>, Option<String>)>(&mut self.conn.clone()),
            )
            .await
        }))
        .await;
        let mut found = Vec::new();
        let mut legacy = Vec::new();
        for (name, state) in names.iter().zip(states) {
            let (Some(json), ro) = state? else {
                continue;
            };
            if ro.as_deref() != Some("1") {
                continue;
            }
            match archive_in_json(&json) {
                Some(a) if a.board == board => found.push((name.clone(), a.seq)),
                Some(_) => {}
                None => legacy.push(name.as_str()),
            }
        }
        for (name, a) in podium_engine::store::legacy_archives(&legacy) {
            if a.board == board {
                found.push((name, a.seq));
            }
        }
        found.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        Ok(found)
    }

    /// Records the name and sequence number of the archive of the reset
    /// staged on `board` (script op `name`), unless an earlier attempt
    /// recorded them. Returns the recorded name, sequence number, and
    /// whether this call recorded them; `None` when the reset was finished
    /// meanwhile.
    async fn name_archive(
        &self,
        board: &str,
        name: &str,
    ) -> Result<Option<(String, u64, bool)>, ApiError> {
        let seq = self
            .archives_of(board)
            .await?
            .last()
            .map_or(1, |(_, s)| s.saturating_add(1));
        match self
            .call(board, "name", [name.to_string(), seq.to_string()])
            .await?
        {
            Value::Nil => Ok(None),
            v => match arr(v)?.as_slice() {
                [a, set, seq] => Ok(Some((
                    text(a).ok_or_else(|| protocol("name"))?,
                    int(seq)?,
                    int(set)? == 1,
                ))),
                _ => Err(protocol("name")),
            },
        }
    }

    /// Creates `board` with `config`; `if_absent` makes an existing board
    /// a success (implicit creation by a first write).
    async fn create(
        &self,
        board: &str,
        config: &BoardConfig,
        if_absent: bool,
    ) -> Result<(), ApiError> {
        Store::validate_name(board)?;
        self.registry("SADD", board).await?;
        match self
            .call(board, "create", config_fields(config, self.clock.now()))
            .await
        {
            Err(e) if if_absent && e.code == Code::BoardExists => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Runs a write, creating the board with the defaults first when it
    /// does not exist (as the embedded engine and Redis's ZADD do).
    async fn write<I, A>(&self, board: &str, op: &str, args: I) -> Result<Value, ApiError>
    where
        I: IntoIterator<Item = A> + Clone,
        A: redis::ToRedisArgs,
    {
        match self.call(board, op, args.clone()).await {
            Err(e) if e.code == Code::BoardNotFound => {
                self.create(board, &BoardConfig::default(), true).await?;
                self.call(board, op, args).await
            }
            r => r,
        }
    }

    async fn submit_results(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
        let mut args: Vec<String> = Vec::with_capacity(2 + entries.len() * 8);
        args.push(entries.len().to_string());
        // The same checks, in the same order, as the embedded service
        // makes before the engine sees the batch.
        for e in entries {
            let op = match e.op.as_deref() {
                None => "",
                Some(s @ ("set" | "best" | "incr")) => s,
                Some(s) => {
                    return Err(ApiError::bad(format!(
                        "op must be set, best or incr, got {s:?}"
                    )))
                }
            };
            let data = data_arg(&e.data)
                .map_err(|()| ApiError::new(Code::InvalidData, "data must be a JSON object"))?;
            args.extend([
                e.member.clone(),
                fmt_score(e.score.0),
                op.to_string(),
                match e.only {
                    None => "a",
                    Some(Only::New) => "n",
                    Some(Only::Existing) => "e",
                }
                .to_string(),
                match e.cond {
                    None => "a",
                    Some(CondIn::Gt) => "g",
                    Some(CondIn::Lt) => "l",
                }
                .to_string(),
                extra_arg(e.name.as_deref()),
                data,
                entry_words(&e.member, e.name.as_deref(), e.data.as_ref()),
            ]);
        }
        if entries.is_empty() {
            // Nothing to apply, but the board springs into existence as an
            // empty write does on the embedded engine.
            self.write(board, "submit", args).await?;
            return Ok(Vec::new());
        }
        let mut items = arr(self.write(board, "submit", args).await?)?;
        if items.is_empty() {
            return Err(protocol("submit"));
        }
        let ranking = ranking_of(items.first())?;
        if items.get(1).and_then(text).as_deref() == Some("fast") {
            return fast_results(ranking, entries, items);
        }
        items.remove(0);
        if items.len() != entries.len() {
            return Err(protocol("submit results"));
        }
        items
            .into_iter()
            .zip(entries)
            .map(|(item, e)| submit_item(board, ranking, &e.member, item))
            .collect()
    }

    async fn info_reply(&self, board: &str) -> Result<(BoardOut, u64), ApiError> {
        let (out, _) = self.info_raw(board).await?;
        let members = out.members;
        Ok((out, members))
    }

    /// `board_info`, and the config JSON exactly as stored (what `take`
    /// compares).
    async fn info_raw(&self, board: &str) -> Result<(BoardOut, String), ApiError> {
        let a = arr(self.call(board, "info", Vec::<String>::new()).await?)?;
        if a.len() < 4 {
            return Err(protocol("info"));
        }
        let json = text(&a[0]).ok_or_else(|| protocol("config"))?;
        let config: serde_json::Value =
            serde_json::from_str(&json).map_err(|_| protocol("config"))?;
        let read_only = int(&a[1])? == 1;
        Ok((
            BoardOut {
                board: board.to_string(),
                members: int(&a[2])?,
                read_only,
                heap_bytes: int(&a[3])?,
                archive_of: archive_of(board, &json, read_only),
                config,
                period: a.get(4).and_then(text),
                created: None,
            },
            json,
        ))
    }

    /// One reset of `board` as seen in `json` (its config) and `period`:
    /// archives the content under the period (or `fallback` when it has
    /// none) and enters period `next`, all in one script run that refuses
    /// ([`ResetRun::Stale`]) if the config or the period changed since
    /// they were read. Then copies the content into the archive and
    /// applies `keep_archives`. A reset found staged first (stopped
    /// half-way, or still being finished by the node that took it) is
    /// finished, and added to `finished` when this call named its archive.
    async fn reset_from(
        &self,
        board: &str,
        json: &str,
        period: Option<&str>,
        fallback: &str,
        next: Option<&str>,
        finished: &mut Vec<ResetOut>,
    ) -> Result<ResetRun, ApiError> {
        // At most one reset that stopped half-way is ever pending (take
        // refuses to start another), so this runs at most twice.
        for _ in 0..3 {
            let mut taken = arr(self
                .call(
                    board,
                    "take",
                    [json, period.unwrap_or(""), fallback, next.unwrap_or("")],
                )
                .await?)?;
            match taken.first().and_then(text).as_deref() {
                Some("stale") if taken.len() == 1 => return Ok(ResetRun::Stale),
                Some("unfinished") if taken.len() >= 4 => {
                    let staged = int(&taken[1])?;
                    let label = text(&taken[2]).ok_or_else(|| protocol("take"))?;
                    let archive = text(&taken[3]).filter(|a| !a.is_empty());
                    let fields = taken.drain(4..).filter_map(|v| text(&v)).collect();
                    let done = self
                        .finish_reset(board, staged, &label, archive, fields)
                        .await?;
                    tracing::warn!(board = %board, archive = ?done, members = staged,
                        "finished a reset found staged");
                    if let Some((archive, true)) = done {
                        finished.push(ResetOut {
                            board: board.to_string(),
                            archive,
                            archived: staged,
                        });
                    }
                    continue;
                }
                _ => {}
            }
            if taken.len() < 2 {
                return Err(protocol("take"));
            }
            let archived = int(&taken[0])?;
            let label = text(&taken[1]).ok_or_else(|| protocol("take"))?;
            let fields = taken.drain(2..).filter_map(|v| text(&v)).collect();
            let Some((archive, reported)) = self
                .finish_reset(board, archived, &label, None, fields)
                .await?
            else {
                return Ok(ResetRun::FinishedElsewhere);
            };
            return Ok(ResetRun::Made {
                out: ResetOut {
                    board: board.to_string(),
                    archive,
                    archived,
                },
                reported,
            });
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "a reset stopped half-way could not be finished; try again",
        ))
    }

    /// Steps 2-4 of a reset whose content `take` moved to the staging
    /// keys (`staged` members, for period `label`, the archive's config
    /// `fields`): names the archive (or uses the name recorded by an
    /// earlier attempt), creates it, copies the content in, drops the
    /// staging keys and applies `keep_archives`. Every step can run again
    /// after a crash: the name is recorded before the archive exists, an
    /// archive already created under it is reused, and copying an entry
    /// again changes nothing. Returns the archive and whether this call
    /// recorded its name, or `None` when another node finished this reset
    /// first.
    async fn finish_reset(
        &self,
        board: &str,
        staged: u64,
        label: &str,
        recorded: Option<String>,
        fields: Vec<String>,
    ) -> Result<Option<(String, bool)>, ApiError> {
        let keep = fields
            .chunks(2)
            .find(|f| f.len() == 2 && f[0] == "json")
            .and_then(|f| serde_json::from_str::<serde_json::Value>(&f[1]).ok())
            .and_then(|c| c.get("keep_archives").and_then(|k| k.as_u64()));
        let name = match recorded {
            Some(a) => a,
            None => {
                // Named as the embedded engine names it (one past the
                // highest taken for the label).
                let base = format!("{board}@{label}");
                let taken = self.boards_starting_with(&base).await?;
                podium_engine::store::next_archive_name(&base, taken.iter().map(String::as_str))
            }
        };
        Store::validate_name(&name)?;
        let Some((archive, seq, named)) = self.name_archive(board, &name).await? else {
            return Ok(None);
        };
        let fields = archive_fields(fields, board, seq)?;
        self.registry("SADD", &archive).await?;
        match self.call(&archive, "create", fields).await {
            // Created by an earlier attempt at this reset (the name is
            // recorded before the archive exists, so it is this one's).
            Err(e) if e.code == Code::BoardExists => {}
            r => drop(r?),
        }
        self.copy_staged(board, &archive, staged).await?;
        self.call(board, "unstage", Vec::<String>::new()).await?;
        if let Some(keep) = keep {
            let archives = self.archives_of(board).await?;
            let excess = archives.len().saturating_sub(keep as usize);
            for (old, _) in &archives[..excess] {
                match self.board_delete(old).await {
                    Err(e) if e.code != Code::BoardNotFound => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(Some((archive, named)))
    }

    /// Every board's name, sorted (the registry set).
    async fn registered_boards(&self) -> Result<Vec<String>, ApiError> {
        let mut c = redis::cmd("SMEMBERS");
        c.arg(REGISTRY);
        let mut names: Vec<String> = self
            .bounded("", c.query_async(&mut self.conn.clone()))
            .await?;
        names.sort();
        Ok(names)
    }

    /// Runs every scheduled reset that fell due by the clock's now, as the
    /// embedded `Service::run_due_resets` does, and returns the archives
    /// this call made. Any number of podium nodes may call it at once on
    /// the same Redis: a board leaves a period in the same script run that
    /// empties it (`take` refuses a period already left), so each period
    /// of each board is archived exactly once, by whichever node gets
    /// there first; the others see it done and make nothing.
    ///
    /// A board that fails (Redis down for its slot, staging keys left by
    /// a reset that crashed) is logged and skipped, so it does not hold up
    /// the others; only a failure to list the boards is an error.
    pub async fn run_due_resets(&self) -> Result<Vec<ResetOut>, ApiError> {
        let seen = self.scheduled_states().await?;
        Ok(self.run_resets_seen(seen).await)
    }

    /// The first half of [`RedisBackend::run_due_resets`]: the clock's
    /// now and what every board's config hash held (public for tests,
    /// which let another node act between the halves).
    #[doc(hidden)]
    pub async fn scheduled_states(&self) -> Result<SeenResets, ApiError> {
        let now = self.clock.now();
        let names = self.registered_boards().await?;
        // Plain reads, concurrently (each board has its own slot); the
        // script re-checks what they saw before it changes anything.
        let states = futures_util::future::join_all(names.iter().map(|n| async move {
            let mut c = redis::cmd("HMGET");
            c.arg(config_key(n)).arg("json").arg("ro").arg("p");
            self.bounded(n, c.query_async::<BoardState>(&mut self.conn.clone()))
                .await
        }))
        .await;
        Ok(SeenResets { now, names, states })
    }

    /// The second half of [`RedisBackend::run_due_resets`]: the resets
    /// due by what was seen; the script re-checks it before it changes
    /// anything.
    #[doc(hidden)]
    pub async fn run_resets_seen(&self, seen: SeenResets) -> Vec<ResetOut> {
        let SeenResets { now, names, states } = seen;
        let mut made = Vec::new();
        for (board, state) in names.iter().zip(states) {
            let (json, ro, period) = match state {
                Ok((Some(json), ro, period)) => (json, ro, period),
                // Listed but not (or no longer) created: see REGISTRY.
                Ok((None, _, _)) => continue,
                Err(e) => {
                    tracing::error!(board = %board, "scheduled reset: {e}");
                    continue;
                }
            };
            if ro.as_deref() == Some("1") {
                continue;
            }
            let Some(reset) = serde_json::from_str::<serde_json::Value>(&json)
                .ok()
                .and_then(|v| stored_config(&v).ok())
                .map(|c| c.reset)
            else {
                continue;
            };
            let Some(label) = schedule::period_label(&reset, now) else {
                continue;
            };
            let r = match period {
                Some(p) if p == label => continue,
                None => self
                    .call(board, "period", [json.as_str(), label.as_str()])
                    .await
                    .map(|_| ResetRun::Stale),
                Some(p) => {
                    self.reset_from(board, &json, Some(&p), &p, Some(&label), &mut made)
                        .await
                }
            };
            match r {
                // Each archive is reported by the one node that named it.
                Ok(ResetRun::Made {
                    out,
                    reported: true,
                }) => made.push(out),
                Ok(_) => {}
                // Deleted or archived meanwhile.
                Err(e) if matches!(e.code, Code::BoardNotFound | Code::ReadOnly) => {}
                Err(e) => tracing::error!(board = %board, "scheduled reset failed: {e}"),
            }
        }
        made
    }

    /// An import batch of plain entries as one native `ZADD`, guarded by
    /// script ops `zadd_open` and `zadd_close` in one MULTI/EXEC (see
    /// them in `podium.lua`): Redis parses the pairs itself, at a direct
    /// ZADD's cost. `None`: applied; else why the board did not take it
    /// (nothing was applied).
    async fn import_native(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Option<Refusal>, ApiError> {
        let zkey = board_key(board, "zw");
        let bytes: usize = entries.iter().map(|e| e.member.len() + 26).sum();
        let mut zadd = Cmd::with_capacity(2 + 2 * entries.len(), 8 + zkey.len() + bytes);
        zadd.arg("ZADD").arg(zkey.as_str());
        let mut buf = ScoreBuf::default();
        for e in entries {
            zadd.arg(score_str(e.score.0, &mut buf))
                .arg(e.member.as_str());
        }
        let mut tx = redis::pipe();
        tx.atomic()
            .add_command(self.fcall(board, "zadd_open", NO_ARGS))
            .add_command(zadd)
            .add_command(self.fcall(board, "zadd_close", NO_ARGS));
        let replies = self.bounded(board, self.transaction(&tx)).await?;
        let [open, added, _close] =
            <[Value; 3]>::try_from(replies).map_err(|_| protocol("import transaction"))?;
        let refusal = match open {
            Value::BulkString(b) => match b.as_slice() {
                b"ok" => None,
                b"noboard" => Some(Refusal::NoBoard),
                b"ro" => Some(Refusal::ReadOnly),
                b"no" => Some(Refusal::Config),
                b"indexed" => Some(Refusal::Indexed),
                _ => return Err(protocol("zadd_open")),
            },
            Value::ServerError(e) => return Err(map_err(board, e.into())),
            _ => return Err(protocol("zadd_open")),
        };
        if let (None, Value::ServerError(e)) = (refusal, added) {
            return Err(map_err(board, e.into()));
        }
        Ok(refusal)
    }

    /// Runs a MULTI/EXEC of FCALLs and commands; returns EXEC's replies.
    /// When the node has lost the function library, no FCALL of it ran
    /// (the caller's commands must be safe then: see `zadd_open`): loads
    /// it and runs the transaction again, once. The missing library shows
    /// as an FCALL's error among the replies on a single Redis, and as the
    /// whole call's error on a cluster (the crate raises errors found in a
    /// pipeline's replies there).
    async fn transaction(&self, tx: &Pipeline) -> redis::RedisResult<Vec<Value>> {
        let mut conn = self.conn.clone();
        let mut reloaded = false;
        loop {
            let r = conn
                .req_packed_commands(tx, tx.len() + 1, 1)
                .await
                .and_then(|mut out| match out.pop() {
                    Some(Value::Array(a)) => Ok(a),
                    Some(Value::ServerError(e)) => Err(e.into()),
                    _ => Err(RedisError::from((
                        ErrorKind::ResponseError,
                        "unexpected reply to EXEC",
                    ))),
                });
            let missing = match &r {
                Ok(items) => items.iter().any(
                    |v| matches!(v, Value::ServerError(e) if missing_function(&e.clone().into())),
                ),
                Err(e) => missing_function(e),
            };
            if !missing || reloaded {
                return r;
            }
            reloaded = true;
            self.load_library(&mut conn).await?;
        }
    }

    /// An import batch through `submit` (its per-entry checks and
    /// paths), answering each entry's error only.
    async fn import_by_submit(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Imported>, ApiError> {
        Ok(self
            .submit_results(board, entries)
            .await?
            .into_iter()
            .map(|r| r.map(|_| ()).map_err(|e| ErrorBody::from(&e)))
            .collect())
    }

    /// Checks that `board` exists (for calls refused before the script
    /// runs, so a missing board still answers `board_not_found` first).
    async fn exists(&self, board: &str) -> Result<(), ApiError> {
        self.info_reply(board).await.map(|_| ())
    }

    async fn removed(&self, board: &str, v: Value) -> Result<RemovedOut, ApiError> {
        Ok(RemovedOut {
            board: board.to_string(),
            removed: int(&v)?,
        })
    }
}

/// Starts the reset scheduler of a Redis-backed server: every second it
/// runs [`RedisBackend::run_due_resets`] and logs the archives it made, as
/// the embedded server's background task does for `Service`. Every podium
/// node on the same Redis runs one; a due period is still archived once
/// (see `run_due_resets`). It runs until the handle is aborted (at
/// shutdown) or the runtime stops.
pub fn spawn_reset_scheduler(backend: Arc<RedisBackend>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match backend.run_due_resets().await {
                Ok(made) => {
                    for r in made {
                        tracing::info!(board = %r.board, archive = %r.archive, members = r.archived, "scheduled reset");
                    }
                }
                Err(e) => tracing::error!("scheduled resets: {e}"),
            }
        }
    })
}

fn aggregate_boards(
    boards: &[(Vec<(String, f64)>, f64)],
    agg: Aggregate,
    intersect: bool,
) -> Vec<(String, f64)> {
    let mut order: Vec<&(Vec<(String, f64)>, f64)> = boards.iter().collect();
    order.sort_by_key(|b| b.0.len());
    let weighted = |w: f64, s: f64| {
        let x = s * w;
        if x.is_nan() {
            0.0
        } else {
            x
        }
    };
    let mut acc: Vec<(String, f64)> = Vec::new();
    if intersect {
        let Some(&&(ref first, w0)) = order.first() else {
            return acc;
        };
        let lookups: Vec<(std::collections::HashMap<&str, f64>, f64)> = order[1..]
            .iter()
            .map(|b| (b.0.iter().map(|(m, x)| (m.as_str(), *x)).collect(), b.1))
            .collect();
        'members: for (m, s) in first {
            let mut total = weighted(w0, *s);
            for (other, w) in &lookups {
                match other.get(m.as_str()) {
                    Some(x) => total = agg.apply(total, w * x),
                    None => continue 'members,
                }
            }
            acc.push((m.clone(), total));
        }
    } else {
        let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (content, w) in order {
            for (m, s) in content {
                let x = weighted(*w, *s);
                match index.get(m) {
                    Some(&i) => acc[i].1 = agg.apply(acc[i].1, x),
                    None => {
                        index.insert(m.clone(), acc.len());
                        acc.push((m.clone(), x));
                    }
                }
            }
        }
    }
    acc
}

/// The results of a batch the script applied by its fast path
/// (`submit_fast`: plain `set`s, each member once, every one applied):
/// from each entry's previous score and its place in the final board,
/// the rank each had right after it was applied, as the engine answers.
fn fast_results(
    ranking: Ranking,
    entries: &[SubmitIn],
    mut items: Vec<Value>,
) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
    if items.len() != 5 {
        return Err(protocol("submit fast"));
    }
    let at = arr(items.pop().unwrap_or(Value::Nil))?;
    let olds = arr(items.pop().unwrap_or(Value::Nil))?;
    let asc = int(&items[2])? == 1;
    if at.len() != entries.len() || olds.len() != entries.len() {
        return Err(protocol("submit fast results"));
    }
    let olds: Vec<Option<f64>> = olds
        .iter()
        .map(|v| match v {
            Value::Nil => Ok(None),
            v => score(v).map(Some),
        })
        .collect::<Result<_, _>>()?;
    let at: Vec<u64> = at.iter().map(int).collect::<Result<_, _>>()?;
    let keys: Vec<(f64, &str)> = entries
        .iter()
        .map(|e| (e.score.0, e.member.as_str()))
        .collect();
    let seq = sequential_places(asc, ranking == Ranking::Unique, &keys, &olds, &at);
    Ok(entries
        .iter()
        .zip(olds)
        .zip(seq)
        .map(|((e, old), place)| {
            Ok(SubmitOut {
                member: e.member.clone(),
                score: Some(e.score),
                rank: Some(place + 1),
                previous: old.map(Score),
                changed: old != Some(e.score.0),
                created: old.is_none(),
                applied: true,
                evicted: 0,
            })
        })
        .collect())
}

/// Whether `a` is ahead of `b` in a board's order: the better score, and
/// between equal scores the member Redis puts first (bytes descending on
/// a desc board read with `REV`, ascending on an asc one). `by_member:
/// false` compares scores only (strictly better).
fn ahead(asc: bool, by_member: bool, a: (f64, &str), b: (f64, &str)) -> bool {
    use std::cmp::Ordering::*;
    let by_score = if asc {
        a.0.partial_cmp(&b.0)
    } else {
        b.0.partial_cmp(&a.0)
    };
    match by_score {
        Some(Less) => true,
        Some(Equal) if by_member => {
            if asc {
                a.1.as_bytes() < b.1.as_bytes()
            } else {
                a.1.as_bytes() > b.1.as_bytes()
            }
        }
        _ => false,
    }
}

/// The place each entry of a batch had right after it was applied, from
/// its place in the final board (`at`: the position on a unique board,
/// else the count of strictly better scores): every later entry `j` of
/// the batch (each member once) was then still at its previous score
/// `olds[j]` (or absent) rather than its new one, so entry `i`'s place is
/// `at[i]` minus the later entries whose new key is ahead of it, plus the
/// later ones whose previous key is. Counted from the last entry back
/// with a Fenwick tree over the keys in board order: O(n log n).
fn sequential_places(
    asc: bool,
    unique: bool,
    keys: &[(f64, &str)],
    olds: &[Option<f64>],
    at: &[u64],
) -> Vec<u64> {
    let mut all: Vec<(f64, &str)> = keys.to_vec();
    all.extend(
        keys.iter()
            .zip(olds)
            .filter_map(|(k, o)| o.map(|x| (x, k.1))),
    );
    // Best first: a key's coordinate is how many keys are strictly ahead
    // of it, so "ahead of q" is "coordinate below q's".
    all.sort_by(|a, b| {
        if ahead(asc, true, *a, *b) {
            std::cmp::Ordering::Less
        } else if ahead(asc, true, *b, *a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let coord =
        |q: (f64, &str), by_member: bool| all.partition_point(|k| ahead(asc, by_member, *k, q));
    let mut tree = vec![0i64; all.len() + 1];
    let add = |tree: &mut Vec<i64>, c: usize, d: i64| {
        let mut i = c + 1;
        while i < tree.len() {
            tree[i] += d;
            i += i & i.wrapping_neg();
        }
    };
    // Sum over coordinates below c.
    let below = |tree: &Vec<i64>, c: usize| {
        let (mut i, mut s) = (c, 0);
        while i > 0 {
            s += tree[i];
            i -= i & i.wrapping_neg();
        }
        s
    };
    let mut out = vec![0; keys.len()];
    for i in (0..keys.len()).rev() {
        let shift = below(&tree, coord(keys[i], unique));
        out[i] = (at[i] as i64 - shift).max(0) as u64;
        add(&mut tree, coord(keys[i], true), 1);
        if let Some(x) = olds[i] {
            add(&mut tree, coord((x, keys[i].1), true), -1);
        }
    }
    out
}

/// One item of the submit script's reply.
fn submit_item(
    board: &str,
    ranking: Ranking,
    member: &str,
    item: Value,
) -> Result<Result<SubmitOut, ApiError>, ApiError> {
    let a = arr(item)?;
    let kind = a.first().and_then(text).ok_or_else(|| protocol("item"))?;
    let out = |score, rank, previous, changed, created, applied, evicted| SubmitOut {
        member: member.to_string(),
        score,
        rank,
        previous,
        changed,
        created,
        applied,
        evicted,
    };
    let get = |i: usize| a.get(i).ok_or_else(|| protocol("item"));
    Ok(Ok(match kind.as_str() {
        "absent" => out(None, None, None, false, false, false, 0),
        "evicted" => out(None, None, None, false, false, true, int(get(1)?)?),
        "new" => out(
            Some(Score(score(get(1)?)?)),
            Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?)),
            None,
            true,
            true,
            true,
            int(get(4)?)?,
        ),
        "upd" => out(
            Some(Score(score(get(1)?)?)),
            Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?)),
            Some(Score(score(get(4)?)?)),
            int(get(6)?)? == 1,
            false,
            int(get(5)?)? == 1,
            0,
        ),
        "err" => {
            let detail: Vec<String> = a[1..].iter().filter_map(text).collect();
            return Ok(Err(podium_err(board, &detail.join(" "))));
        }
        _ => return Err(protocol("item kind")),
    }))
}

#[async_trait]
impl Backend for RedisBackend {
    fn kind(&self) -> &'static str {
        "redis"
    }

    async fn ping(&self) -> Result<(), ApiError> {
        self.bounded(
            "",
            redis::cmd("PING").query_async::<()>(&mut self.conn.clone()),
        )
        .await
    }

    async fn submit(&self, board: &str, entries: &[SubmitIn]) -> Result<Vec<SubmitItem>, ApiError> {
        let results = self.submit_results(board, entries).await?;
        Ok(results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| match r {
                Ok(out) => SubmitItem::Ok(out),
                Err(err) => SubmitItem::Err {
                    member: e.member.clone(),
                    error: ErrorBody::from(&err),
                },
            })
            .collect())
    }

    async fn import(&self, board: &str, entries: &[SubmitIn]) -> Result<Vec<Imported>, ApiError> {
        if !entries.is_empty() && entries.iter().all(plain_import) {
            let mut refusal = self.import_native(board, entries).await?;
            if refusal == Some(Refusal::NoBoard) {
                self.create(board, &BoardConfig::default(), true).await?;
                refusal = self.import_native(board, entries).await?;
            }
            match refusal {
                None => return Ok(vec![Ok(()); entries.len()]),
                Some(Refusal::NoBoard) => return Err(ApiError::no_board(board)),
                Some(Refusal::ReadOnly) => return Err(podium_err(board, "ro")),
                // The board's config needs `submit`'s per-entry path.
                Some(Refusal::Config) => return self.import_by_submit(board, entries).await,
                Some(Refusal::Indexed) => {}
            }
            // New members must join the board's search sets: the script's
            // `import` indexes them.
            let scores: Vec<String> = entries.iter().map(|e| fmt_score(e.score.0)).collect();
            let args = scores
                .iter()
                .zip(entries)
                .flat_map(|(s, e)| [s.as_str(), e.member.as_str()]);
            match self.write(board, "import", args).await? {
                Value::Int(n) if n as usize == entries.len() => {
                    return Ok(vec![Ok(()); entries.len()])
                }
                // The board's config needs `submit`'s per-entry path.
                Value::Array(a) if a.first().and_then(text).as_deref() == Some("no") => {}
                _ => return Err(protocol("import")),
            }
        }
        self.import_by_submit(board, entries).await
    }

    async fn submit_one(&self, board: &str, entry: &SubmitIn) -> Result<SubmitOut, ApiError> {
        let mut v = self
            .submit_results(board, std::slice::from_ref(entry))
            .await?;
        v.pop()
            .unwrap_or_else(|| Err(ApiError::new(Code::Internal, "no result")))
    }

    async fn remove(&self, board: &str, members: &[String]) -> Result<RemovedOut, ApiError> {
        let v = self.call(board, "remove", members).await?;
        self.removed(board, v).await
    }

    async fn remove_rank_range(
        &self,
        board: &str,
        start: u64,
        stop: u64,
    ) -> Result<RemovedOut, ApiError> {
        if start == 0 || stop < start {
            return Err(ApiError::bad("ranks start at 1 and stop must be ≥ start"));
        }
        let v = self
            .call(board, "remove_ranks", [start.to_string(), stop.to_string()])
            .await?;
        self.removed(board, v).await
    }

    async fn remove_score_range(
        &self,
        board: &str,
        bounds: RangeBounds,
    ) -> Result<RemovedOut, ApiError> {
        if has_nan(&bounds) {
            self.exists(board).await?;
            return Err(podium_engine::Error::NanScore.into());
        }
        let v = self
            .call(
                board,
                "remove_scores",
                [
                    bound(bounds.min, bounds.min_exclusive, "-inf"),
                    bound(bounds.max, bounds.max_exclusive, "+inf"),
                ],
            )
            .await?;
        self.removed(board, v).await
    }

    async fn set_data(
        &self,
        board: &str,
        member: &str,
        name: Option<String>,
        data: Option<serde_json::Value>,
    ) -> Result<SetDataOut, ApiError> {
        let words = entry_words(member, name.as_deref(), data.as_ref());
        let data = data_arg(&data).unwrap_or_else(|()| "!".into());
        let v = self
            .call(
                board,
                "set_data",
                [member.to_string(), extra_arg(name.as_deref()), data, words],
            )
            .await?;
        if int(&v)? == 0 {
            return Err(ApiError::no_member(board, member));
        }
        Ok(SetDataOut {
            board: board.to_string(),
            member: member.to_string(),
            found: true,
        })
    }

    async fn board_create(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let config = config_from_json(config)?;
        supported(&config)?;
        self.create(board, &config, false).await?;
        self.board_info(board).await
    }

    async fn board_put(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let config = config_from_json(config)?;
        Store::validate_name(board)?;
        supported(&config)?;
        self.registry("SADD", board).await?;
        let fields = config_fields(&config, self.clock.now());
        let created = int(&self.call(board, "put", fields).await?)? == 1;
        let mut out = self.board_info(board).await?;
        out.created = Some(created);
        Ok(out)
    }

    async fn board_delete(&self, board: &str) -> Result<(), ApiError> {
        self.call(board, "delete", Vec::<String>::new()).await?;
        self.registry("SREM", board).await
    }

    async fn reset(&self, board: &str) -> Result<ResetOut, ApiError> {
        // As the embedded engine: the archive is named after the period
        // the board is in, or the current one, or (no schedule) the time;
        // a scheduled board then enters the current period. The script
        // refuses if another node reset or reconfigured the board between
        // the read and the reset; then the reset is computed again.
        for _ in 0..5 {
            let (info, json) = self.info_raw(board).await?;
            let reset = stored_config(&info.config)
                .map_err(|_| protocol("config"))?
                .reset;
            let now = self.clock.now();
            let next = schedule::period_label(&reset, now);
            let fallback = next
                .clone()
                .unwrap_or_else(|| now.format("%Y-%m-%dT%H:%M:%SZ").to_string());
            let label = info.period.as_deref().unwrap_or(&fallback);
            // Refused before the content moves, as the engine refuses it.
            Store::validate_name(&format!("{board}@{label}"))?;
            match self
                .reset_from(
                    board,
                    &json,
                    info.period.as_deref(),
                    &fallback,
                    next.as_deref(),
                    &mut Vec::new(),
                )
                .await?
            {
                // The caller's reset, whichever node named its archive.
                ResetRun::Made { out, .. } => return Ok(out),
                ResetRun::FinishedElsewhere => return Err(protocol("reset finished elsewhere")),
                ResetRun::Stale => {}
            }
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "the board kept changing during the reset; try again",
        ))
    }

    async fn combine(
        &self,
        dest: &str,
        req: &CombineIn,
        intersect: bool,
    ) -> Result<CombineOut, ApiError> {
        let (sources, aggregate) = podium_core::backend::combine_args(req)?;
        // The sources live in other slots: each is read atomically, then
        // the destination is replaced in one script run. Missing sources
        // count as empty, as in Redis.
        let mut boards: Vec<(Vec<(String, f64)>, f64)> = Vec::with_capacity(sources.len());
        for (name, w) in &sources {
            let content = match self
                .call(
                    name,
                    "window",
                    ["0".to_string(), "-1".to_string(), "0".into()],
                )
                .await
            {
                Err(e) if e.code == Code::BoardNotFound => Vec::new(),
                r => window(r?, false)?
                    .entries
                    .into_iter()
                    .map(|e| (e.member, e.score.0))
                    .collect(),
            };
            boards.push((content, *w));
        }
        let result = aggregate_boards(&boards, aggregate, intersect);
        let args: Vec<String> = result
            .into_iter()
            .flat_map(|(m, x)| {
                let w = words_line(&m);
                [m, fmt_score(x), w]
            })
            .collect();
        self.write(dest, "replace", args).await?;
        let (_, members) = self.info_reply(dest).await?;
        Ok(CombineOut {
            board: dest.to_string(),
            members,
        })
    }

    async fn board_info(&self, board: &str) -> Result<BoardOut, ApiError> {
        Ok(self.info_reply(board).await?.0)
    }

    async fn boards(&self) -> Result<BoardsOut, ApiError> {
        let names = self.registered_boards().await?;
        // One call per board, concurrently: on a cluster each lives in its
        // own slot, so they cannot share a pipeline.
        let infos = futures_util::future::join_all(names.iter().map(|n| self.info_reply(n))).await;
        let mut boards = Vec::with_capacity(names.len());
        for (board, info) in names.into_iter().zip(infos) {
            match info {
                Ok((out, members)) => boards.push(BoardSize {
                    board,
                    members,
                    archive_of: out.archive_of,
                }),
                // Listed but not (or no longer) created: see REGISTRY.
                Err(e) if e.code == Code::BoardNotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(BoardsOut { boards })
    }

    async fn entry(
        &self,
        board: &str,
        member: &str,
        page_size_: Option<u64>,
    ) -> Result<EntryInfoOut, ApiError> {
        let ps = page_size(page_size_)?;
        let a = arr(self.call(board, "entry", [member]).await?)?;
        if a.is_empty() {
            return Err(ApiError::no_member(board, member));
        }
        if a.len() < 8 {
            return Err(protocol("entry"));
        }
        let ranking = ranking_of(a.get(6))?;
        let (pos, better, total) = (int(&a[0])?, int(&a[2])?, int(&a[3])?);
        let rank_better = int(&a[7])?;
        Ok(EntryInfoOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            entry: EntryOut {
                member: member.to_string(),
                score: Score(score(&a[1])?),
                rank: rank_of(ranking, pos, rank_better),
                name: text(&a[4]),
                data: json_data(a.get(5)),
            },
            percentile: 100.0 * (total as f64 - better as f64) / total as f64,
            page: pos / ps + 1,
            total,
        })
    }

    async fn rank(&self, board: &str, member: &str) -> Result<RankOut, ApiError> {
        let e = self.entry(board, member, None).await?;
        Ok(RankOut {
            board: e.board,
            ranking: e.ranking,
            member: e.entry.member,
            rank: e.entry.rank,
            score: e.entry.score,
        })
    }

    async fn count(&self, board: &str, bounds: RangeBounds) -> Result<CountOut, ApiError> {
        if has_nan(&bounds) {
            self.exists(board).await?;
            return Err(podium_engine::Error::NanScore.into());
        }
        let v = self
            .call(
                board,
                "count",
                [
                    bound(bounds.min, bounds.min_exclusive, "-inf"),
                    bound(bounds.max, bounds.max_exclusive, "+inf"),
                ],
            )
            .await?;
        Ok(CountOut {
            board: board.to_string(),
            count: int(&v)?,
        })
    }

    async fn top(
        &self,
        board: &str,
        page: Option<u64>,
        page_size_: Option<u64>,
        with_data: bool,
    ) -> Result<TopOut, ApiError> {
        let ps = page_size(page_size_)?;
        let page = page.unwrap_or(1);
        if page == 0 {
            return Err(ApiError::bad("page starts at 1"));
        }
        let from = (page - 1).saturating_mul(ps);
        let to = from.saturating_add(ps - 1);
        let w = window(
            self.call(
                board,
                "window",
                [from.to_string(), to.to_string(), flag(with_data).into()],
            )
            .await?,
            with_data,
        )?;
        Ok(TopOut {
            board: board.to_string(),
            ranking: ranking_str(w.ranking).to_string(),
            page,
            page_size: ps,
            total: w.total,
            total_pages: w.total.div_ceil(ps),
            entries: w.entries,
        })
    }

    async fn range_by_rank(
        &self,
        board: &str,
        start: u64,
        stop: u64,
        from_worst: bool,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        podium_core::backend::check_rank_range(start, stop)?;
        let w = window(
            self.call(
                board,
                "rank_range",
                [
                    start.to_string(),
                    stop.to_string(),
                    flag(from_worst).into(),
                    flag(with_data).into(),
                ],
            )
            .await?,
            with_data,
        )?;
        Ok(range_out(board, w, from_worst))
    }

    async fn range_by_score(
        &self,
        board: &str,
        bounds: RangeBounds,
        from_worst: bool,
        offset: Option<u64>,
        limit: Option<u64>,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        let limit = limit.unwrap_or(DEFAULT_PAGE_SIZE).min(MAX_RANGE);
        if has_nan(&bounds) {
            self.exists(board).await?;
            return Err(podium_engine::Error::NanScore.into());
        }
        let w = window(
            self.call(
                board,
                "score_range",
                [
                    bound(bounds.min, bounds.min_exclusive, "-inf"),
                    bound(bounds.max, bounds.max_exclusive, "+inf"),
                    offset.unwrap_or(0).to_string(),
                    limit.to_string(),
                    flag(from_worst).into(),
                    flag(with_data).into(),
                ],
            )
            .await?,
            with_data,
        )?;
        Ok(range_out(board, w, from_worst))
    }

    async fn around(
        &self,
        board: &str,
        member: &str,
        page_size_: Option<u64>,
        with_data: bool,
    ) -> Result<AroundOut, ApiError> {
        let ps = page_size(page_size_)?;
        let v = self
            .call(
                board,
                "around",
                [member.to_string(), ps.to_string(), flag(with_data).into()],
            )
            .await?;
        if v == Value::Nil {
            return Err(ApiError::no_member(board, member));
        }
        let w = window(v, with_data)?;
        let (pos, better) = match w.rest.as_slice() {
            [p, b, ..] => (int(p)?, int(b)?),
            _ => return Err(protocol("around")),
        };
        Ok(AroundOut {
            board: board.to_string(),
            ranking: ranking_str(w.ranking).to_string(),
            member: member.to_string(),
            rank: rank_of(w.ranking, pos, better),
            total: w.total,
            entries: w.entries,
        })
    }

    async fn ranks(
        &self,
        board: &str,
        members: &[String],
        with_data: bool,
    ) -> Result<RanksOut, ApiError> {
        if members.len() as u64 > MAX_RANGE {
            return Err(ApiError::bad(format!(
                "at most {MAX_RANGE} members per call"
            )));
        }
        let args = std::iter::once(flag(with_data).to_string()).chain(members.iter().cloned());
        let mut a = arr(self.call(board, "ranks", args).await?)?;
        if a.is_empty() {
            return Err(protocol("ranks"));
        }
        let ranking = ranking_of(a.first())?;
        let mut found: Vec<(u64, EntryOut)> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        for item in a.drain(1..) {
            let f = arr(item)?;
            let member = f.first().and_then(text).ok_or_else(|| protocol("ranks"))?;
            if f.len() < 6 {
                missing.push(member);
                continue;
            }
            let (pos, better) = (int(&f[1])?, int(&f[3])?);
            found.push((
                pos,
                EntryOut {
                    member,
                    score: Score(score(&f[2])?),
                    rank: rank_of(ranking, pos, better),
                    name: text(&f[4]),
                    data: if with_data { json_data(f.get(5)) } else { None },
                },
            ));
        }
        found.sort_by_key(|f| f.0);
        found.dedup_by_key(|f| f.0);
        missing.sort();
        missing.dedup();
        Ok(RanksOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            entries: found.into_iter().map(|f| f.1).collect(),
            missing,
        })
    }

    async fn percentile(&self, board: &str, member: &str) -> Result<PercentileOut, ApiError> {
        let e = self.entry(board, member, None).await?;
        Ok(PercentileOut {
            board: e.board,
            member: e.entry.member,
            percentile: e.percentile,
        })
    }

    async fn score_at_percentile(&self, board: &str, p: f64) -> Result<ScoreAtOut, ApiError> {
        if !(0.0..=100.0).contains(&p) {
            self.exists(board).await?;
            return Err(podium_engine::Error::BadArgument(
                "percentile must be between 0 and 100".into(),
            )
            .into());
        }
        let mut w = window(self.call(board, "score_at", [fmt_score(p)]).await?, false)?;
        Ok(ScoreAtOut {
            board: board.to_string(),
            percentile: p,
            entry: w.entries.pop(),
        })
    }

    async fn search(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        with_data: bool,
    ) -> Result<SearchOut, ApiError> {
        if limit > MAX_PAGE_SIZE {
            return Err(ApiError::bad(format!("limit is at most {MAX_PAGE_SIZE}")));
        }
        // The query is parsed here, with the engine's parser, against the
        // board's search fields; the script refuses (`stale`) if they
        // changed in between, and the search starts again.
        for _ in 0..5 {
            let (info, _) = self.info_reply(board).await?;
            let fields = stored_config(&info.config)
                .map_err(|_| protocol("config"))?
                .search_fields;
            let engine_err = |e: SearchError| ApiError::from(podium_engine::Error::from(e));
            if fields.is_empty() {
                return Err(engine_err(SearchError::Disabled));
            }
            let toks = parse(query, &fields).map_err(engine_err)?;
            let mut args = vec![
                fields.join(" "),
                offset.to_string(),
                limit.to_string(),
                flag(with_data).into(),
                flag(needs_verify(&toks)).into(),
            ];
            for t in toks {
                let field = t.field.map_or(-1, i64::from).to_string();
                args.extend([t.word, flag(t.prefix).into(), field]);
            }
            let mut a = arr(self.call(board, "search", args).await?)?;
            match (a.len(), a.first().and_then(text).as_deref()) {
                (1, Some("stale")) => continue,
                (1, Some("unindexed")) => {
                    self.build_index(board).await?;
                    continue;
                }
                _ => {}
            }
            if a.len() < 2 {
                return Err(protocol("search"));
            }
            let total = int(&a[0])?;
            let ranking = ranking_of(a.get(1))?;
            let mut entries = Vec::with_capacity(a.len() - 2);
            for item in a.drain(2..) {
                let f = arr(item)?;
                if f.len() < 6 {
                    return Err(protocol("search entry"));
                }
                let (pos, better) = (int(&f[1])?, int(&f[3])?);
                entries.push(EntryOut {
                    member: text(&f[0]).ok_or_else(|| protocol("member"))?,
                    score: Score(score(&f[2])?),
                    rank: rank_of(ranking, pos, better),
                    name: text(&f[4]),
                    data: if with_data { json_data(f.get(5)) } else { None },
                });
            }
            return Ok(SearchOut {
                board: board.to_string(),
                ranking: ranking_str(ranking).to_string(),
                query: query.to_string(),
                total,
                offset,
                limit,
                entries,
            });
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "the board's search fields kept changing during the search; try again",
        ))
    }

    async fn export_chunk(
        &self,
        board: &str,
        pos: usize,
        limit: usize,
    ) -> Result<Vec<ExportLine>, ApiError> {
        if limit == 0 {
            self.exists(board).await?;
            return Ok(Vec::new());
        }
        let w = window(
            self.call(
                board,
                "window",
                [
                    pos.to_string(),
                    pos.saturating_add(limit - 1).to_string(),
                    "1".to_string(),
                ],
            )
            .await?,
            true,
        )?;
        Ok(w.entries
            .into_iter()
            .map(|e| ExportLine {
                member: e.member,
                score: e.score,
                rank: e.rank,
                name: e.name,
                data: e.data,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The places `sequential_places` derives from the final board equal
    /// those of applying the batch one entry at a time to a model board
    /// (a sorted list), for random batches with ties, moves both ways,
    /// new members, both orders and both rankings.
    #[test]
    fn plain_ids_are_their_only_word() {
        let long = "a".repeat(255);
        let longer = "a".repeat(256);
        for m in ["m1", "player42", "0", "abc", &long] {
            assert!(id_is_its_word(m), "{m}");
        }
        // The shortcut agrees with the tokeniser, both ways.
        for m in [
            "m1", "M1", "a-b", "a b", "é", "e\u{301}", "", &long, &longer, "Ann-Lee", "x_y", "ab½",
        ] {
            assert_eq!(id_is_its_word(m), words_line(m) == m, "{m:?}");
        }
    }

    /// Every score's text reads back as the same double (what Redis
    /// stores), sign of zero included, on both the integer and the
    /// float path.
    #[test]
    fn scores_are_written_as_they_read_back() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            1e15 - 1.0,
            1e15,
            -1e15,
            1e16,
            9_007_199_254_740_993.0,
            0.1,
            -2.5,
            1e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for _ in 0..10_000 {
            xs.push(rng.random_range(-1e6..1e6));
            xs.push(rng.random_range(-1e6..1e6_f64).round());
            xs.push(f64::from_bits(rng.random::<u64>()));
        }
        for x in xs.into_iter().filter(|x| !x.is_nan()) {
            let s = fmt_score(x);
            let back = score_bytes(s.as_bytes()).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{x:?} written as {s}");
        }
    }

    #[test]
    fn sequential_places_match_applying_one_at_a_time() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let pool: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
        for round in 0..400 {
            let (asc, unique) = (round % 2 == 0, round % 4 < 2);
            let mut board: Vec<(f64, &str)> = Vec::new();
            for m in &pool {
                if rng.random_bool(0.5) {
                    board.push((rng.random_range(0..5) as f64, m));
                }
            }
            let mut order: Vec<&str> = pool.iter().map(String::as_str).collect();
            let n = rng.random_range(1..30);
            let mut keys = Vec::new();
            for _ in 0..n {
                let m = order.swap_remove(rng.random_range(0..order.len()));
                keys.push((rng.random_range(0..5) as f64, m));
            }
            let olds: Vec<Option<f64>> = keys
                .iter()
                .map(|k| board.iter().find(|b| b.1 == k.1).map(|b| b.0))
                .collect();
            // The place of q in a board: what is ahead of it.
            let place = |board: &[(f64, &str)], q: (f64, &str)| {
                board
                    .iter()
                    .filter(|b| b.1 != q.1 && ahead(asc, unique, **b, q))
                    .count() as u64
            };
            let mut want = Vec::new();
            for k in &keys {
                board.retain(|b| b.1 != k.1);
                board.push(*k);
                want.push(place(&board, *k));
            }
            let at: Vec<u64> = keys.iter().map(|k| place(&board, *k)).collect();
            assert_eq!(
                sequential_places(asc, unique, &keys, &olds, &at),
                want,
                "round {round}"
            );
        }
    }
}
