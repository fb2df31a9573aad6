//! Requests to commands: the command table and Redis's dispatch checks on
//! it (`table`: names, arities, what a command needs; unknown command,
//! arity), and each command's argument parsing into a typed [`Cmd`], with
//! Redis 7.0's error replies in Redis's order of checks.
//!
//! Two kinds of refusal exist, as in Redis: [`lookup`] refuses what
//! `processCommand` refuses before running anything (unknown command, wrong
//! arity — inside MULTI these abort the transaction), [`parse`] refuses
//! what the command itself refuses when it runs (syntax, numbers — inside
//! MULTI these are queued and answered in EXEC's reply). Errors that Redis
//! only reports after looking at the keys (ZUNIONSTORE's options come
//! after its WRONGTYPE check; ZSCAN's after the key lookup) are carried in
//! the command as a deferred `Result` for the executor to report in order.

mod keyops;
mod table;

use std::ops::Bound;

use bytes::Bytes;
use podium_engine::{Aggregate, ScoreRange};

use super::command_strings::StrCmd;
use super::num::{parse_bound, parse_double, parse_i64};
use super::reply::Reply;
use super::zparse;
use podium_core::keystore::{LexRange, SetOp};

pub use keyops::ObjectSub;
pub use table::{
    arity_error, index, lookup, lower, resolve, unknown_command, Access, Spec, COMMANDS,
};

fn eq(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// `'%.*s'` of C: at most `max` bytes, stopping at a NUL.
fn c_str(a: &[u8], max: usize) -> &[u8] {
    let a = &a[..a.len().min(max)];
    match a.iter().position(|&c| c == 0) {
        Some(i) => &a[..i],
        None => a,
    }
}

/// EXPIRE family conditions (any combination Redis allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExpireFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// Which end a ZRANGE-family read counts from, and over what.
#[derive(Debug, Clone, PartialEq)]
pub enum RangeBy {
    /// Indexes (0-based, negative from the end), inclusive.
    Rank(i64, i64),
    /// Scores, with LIMIT offset and count (-1: no limit).
    Score {
        range: ScoreRange,
        offset: i64,
        count: i64,
    },
    /// Members (BYLEX), with LIMIT offset and count (negative: no limit).
    Lex {
        range: LexRange,
        offset: i64,
        count: i64,
    },
}

/// ZSCAN's / SCAN's options.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanOpts {
    pub pattern: Option<Bytes>,
    pub count: usize,
    pub ty: Option<Bytes>,
}

/// ZUNIONSTORE / ZINTERSTORE options.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreOpts {
    pub weights: Vec<f64>,
    pub agg: Aggregate,
}

/// ZUNION / ZINTER / ZDIFF options (ZDIFF takes only WITHSCORES).
#[derive(Debug, Clone, PartialEq)]
pub struct AlgebraOpts {
    pub weights: Vec<f64>,
    pub agg: Aggregate,
    pub withscores: bool,
}

/// ZADD's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZaddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub ch: bool,
    pub incr: bool,
}

/// A parsed command, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Ping(Option<Bytes>),
    Echo(Bytes),
    /// Parsed while running (its options have side effects in order).
    Hello(Vec<Bytes>),
    Auth {
        user: Option<Bytes>,
        pass: Bytes,
    },
    Select(Bytes),
    /// FLUSHDB (FLUSHALL is [`Cmd::Flush`]).
    FlushDb,
    SwapDb(Bytes, Bytes),
    Move {
        key: Bytes,
        db: Bytes,
    },
    Quit,
    Command(Vec<Bytes>),
    Info(Vec<Bytes>),
    ConfigGet(Vec<Bytes>),
    ClientSetName(Bytes),
    ClientGetName,
    /// CLIENT SETINFO LIB-NAME|LIB-VER value (attribute lower-cased).
    ClientSetInfo(String, Bytes),
    ClientId,
    /// CLIENT LIST [TYPE t] [ID id …]: `ids` `None` for all; `none` when
    /// the type has no clients here (master, replica); `pubsub` when the
    /// type is `pubsub` (`Some(true)`) or `normal` (`Some(false)`).
    ClientList {
        ids: Option<Vec<u64>>,
        none: bool,
        pubsub: Option<bool>,
    },
    ClientInfo,
    ClientKill(Vec<Bytes>),
    ClientNoEvict(bool),
    /// CLIENT REPLY ON|OFF|SKIP (lower-cased).
    ClientReply(String),
    /// CLIENT PAUSE ms [WRITE|ALL]: `all` unless WRITE.
    ClientPause {
        ms: u64,
        all: bool,
    },
    ClientUnpause,
    /// CONFIG SET parameter value … (names lower-cased).
    ConfigSet(Vec<(String, Bytes)>),
    ConfigResetStat,
    /// SLOWLOG GET [count] (-1: all).
    SlowlogGet(i64),
    SlowlogLen,
    SlowlogReset,
    Time,
    Role,
    Lolwut,
    Reset,
    /// SUBSCRIBE (`pattern`: PSUBSCRIBE) channel …
    Subscribe {
        names: Vec<Bytes>,
        pattern: bool,
    },
    /// UNSUBSCRIBE / PUNSUBSCRIBE [name …] (none: all).
    Unsubscribe {
        names: Vec<Bytes>,
        pattern: bool,
    },
    Publish(Bytes, Bytes),
    /// PUBSUB CHANNELS [pattern].
    PubsubChannels(Option<Bytes>),
    PubsubNumsub(Vec<Bytes>),
    PubsubNumpat,
    PubsubHelp,
    Save,
    BgSave,
    LastSave,
    DbSize,
    Flush,
    Exists(Vec<Bytes>),
    Del(Vec<Bytes>),
    Type(Bytes),
    Keys(Bytes),
    Scan {
        cursor: u64,
        opts: ScanOpts,
    },
    /// `at`: the argument (seconds or ms); `base`: add the current time;
    /// `ms`: the argument is in milliseconds.
    Expire {
        key: Bytes,
        at: i64,
        relative: bool,
        ms: bool,
        flags: ExpireFlags,
        name: &'static str,
    },
    /// TTL, PTTL, EXPIRETIME, PEXPIRETIME.
    Ttl {
        key: Bytes,
        ms: bool,
        /// The expiry itself (EXPIRETIME), not the time left.
        abs: bool,
    },
    RandomKey,
    Persist(Bytes),
    Multi,
    Exec,
    Discard,
    ZAdd {
        key: Bytes,
        flags: ZaddFlags,
        pairs: Vec<(f64, Bytes)>,
    },
    ZScore(Bytes, Bytes),
    ZMScore(Bytes, Vec<Bytes>),
    ZRank {
        key: Bytes,
        member: Bytes,
        rev: bool,
        withscore: bool,
    },
    ZCard(Bytes),
    ZCount(Bytes, ScoreRange),
    ZRange {
        key: Bytes,
        by: RangeBy,
        rev: bool,
        withscores: bool,
    },
    ZRem(Bytes, Vec<Bytes>),
    ZRemRangeByRank(Bytes, i64, i64),
    ZRemRangeByScore(Bytes, ScoreRange),
    /// `max`: ZPOPMAX. `count`: None without the argument.
    ZPop {
        key: Bytes,
        max: bool,
        count: Option<i64>,
    },
    ZStore {
        dest: Bytes,
        keys: Vec<Bytes>,
        inter: bool,
        opts: Result<StoreOpts, Reply>,
    },
    ZScan {
        key: Bytes,
        cursor: u64,
        opts: Result<ScanOpts, Reply>,
    },
    HSet {
        key: Bytes,
        pairs: Vec<(Bytes, Bytes)>,
        hmset: bool,
    },
    HGet(Bytes, Bytes),
    HMGet(Bytes, Vec<Bytes>),
    HDel(Bytes, Vec<Bytes>),
    HGetAll(Bytes),
    HExists(Bytes, Bytes),
    HLen(Bytes),
    HKeys(Bytes),
    HVals(Bytes),
    /// ZMPOP: pops from the first of `keys` that is not empty.
    ZMPop {
        keys: Vec<Bytes>,
        max: bool,
        count: u64,
    },
    /// ZRANDMEMBER; `count: None` for the form without one.
    ZRandMember {
        key: Bytes,
        count: Option<i64>,
        scores: bool,
    },
    HSetNx(Bytes, Bytes, Bytes),
    HIncrBy(Bytes, Bytes, i64),
    HStrLen(Bytes, Bytes),
    /// HRANDFIELD; `count: None` for the form without one.
    HRandField {
        key: Bytes,
        count: Option<i64>,
        values: bool,
    },
    HScan {
        key: Bytes,
        cursor: u64,
        /// Refused options are answered after the key's lookup, as Redis
        /// does (a missing key is an empty scan whatever they are).
        opts: Result<ScanOpts, Reply>,
    },
    /// BZPOPMIN / BZPOPMAX (`count: None`: one member, answered as key,
    /// member, score) and BZMPOP (answered as ZMPOP); `timeout_ms` 0
    /// waits for ever.
    BZPop {
        keys: Vec<Bytes>,
        max: bool,
        count: Option<u64>,
        timeout_ms: u64,
    },
    /// RENAME, or RENAMENX with `nx`.
    Rename {
        src: Bytes,
        dst: Bytes,
        nx: bool,
    },
    Copy {
        src: Bytes,
        dst: Bytes,
        replace: bool,
        /// DB: the destination's database (`None`: the selected one).
        db: Option<u8>,
    },
    Object {
        sub: ObjectSub,
        key: Bytes,
    },
    ObjectHelp,
    MemoryUsage(Bytes),
    MemoryHelp,
    /// CLIENT UNBLOCK: the client's id, and whether it gets an error (else
    /// its timeout's reply).
    ClientUnblock {
        id: i64,
        error: bool,
    },
    ZLexCount(Bytes, LexRange),
    ZRemRangeByLex(Bytes, LexRange),
    /// ZUNION / ZINTER / ZDIFF; refused options are answered after the
    /// sources' type check, as Redis does.
    ZAlgebra {
        keys: Vec<Bytes>,
        op: SetOp,
        opts: Result<AlgebraOpts, Reply>,
    },
    /// ZINTERCARD; `limit` 0: none (refused after the type check).
    ZInterCard {
        keys: Vec<Bytes>,
        limit: Result<u64, Reply>,
    },
    /// ZDIFFSTORE: any argument after the keys is refused after their
    /// type check.
    ZDiffStore {
        dest: Bytes,
        keys: Vec<Bytes>,
        extra: Result<(), Reply>,
    },
    ZRangeStore {
        dest: Bytes,
        src: Bytes,
        by: RangeBy,
        rev: bool,
    },
    /// The string commands and HINCRBYFLOAT.
    Str(StrCmd),
    // Scripting (parsed by `resp::script`).
    /// EVAL / EVALSHA (`by_sha`: `script` is a SHA1) and their `_RO` forms.
    Eval {
        script: Bytes,
        by_sha: bool,
        read_only: bool,
        keys: Vec<Bytes>,
        args: Vec<Bytes>,
    },
    ScriptLoad(Bytes),
    ScriptExists(Vec<Bytes>),
    ScriptFlush,
    ScriptKill,
}

fn not_int() -> Reply {
    Reply::err("value is not an integer or out of range")
}

fn not_float() -> Reply {
    Reply::err("value is not a valid float")
}

fn int(a: &[u8]) -> Result<i64, Reply> {
    parse_i64(a).ok_or_else(not_int)
}

fn range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Reply> {
    match (parse_bound(min), parse_bound(max)) {
        (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
        _ => Err(Reply::err("min or max is not a float")),
    }
}

/// `parseScanCursorOrReply`: C `strtoul` in base 10 over the whole
/// argument (a sign is allowed, `-n` wraps), no leading space, no overflow.
fn cursor(a: &[u8]) -> Result<u64, Reply> {
    let bad = || Reply::err("invalid cursor");
    let a = match a.iter().position(|&c| c == 0) {
        Some(i) => &a[..i],
        None => a,
    };
    if a.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match a[0] {
        b'-' => (true, &a[1..]),
        b'+' => (false, &a[1..]),
        _ => (false, a),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let v: u64 = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .ok_or_else(bad)?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// SCAN/ZSCAN options from `args[from..]` (`scanGenericCommand`).
fn scan_opts(args: &[Bytes], from: usize, allow_type: bool) -> Result<ScanOpts, Reply> {
    let mut o = ScanOpts {
        pattern: None,
        count: 10,
        ty: None,
    };
    let mut i = from;
    while i < args.len() {
        let more = args.len() - i - 1;
        if eq(&args[i], "count") && more >= 1 {
            let n = int(&args[i + 1])?;
            if n < 1 {
                return Err(Reply::syntax());
            }
            o.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if eq(&args[i], "match") && more >= 1 {
            // "*" matches everything: Redis skips matching then.
            o.pattern = (args[i + 1][..] != b"*"[..]).then(|| args[i + 1].clone());
        } else if allow_type && eq(&args[i], "type") && more >= 1 {
            o.ty = Some(args[i + 1].clone());
        } else {
            return Err(Reply::syntax());
        }
        i += 2;
    }
    Ok(o)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count], checked as
/// `zmpopGenericCommand`.
fn zmpop(a: &[Bytes]) -> Result<Cmd, Reply> {
    let numkeys = match int(&a[1]) {
        Ok(n) if n > 0 => n as usize,
        _ => return Err(Reply::err("numkeys should be greater than 0")),
    };
    let Some(where_at) = numkeys.checked_add(2).filter(|&w| w < a.len()) else {
        return Err(Reply::syntax());
    };
    let max = match &a[where_at] {
        w if eq(w, "min") => false,
        w if eq(w, "max") => true,
        _ => return Err(Reply::syntax()),
    };
    let count = match &a[where_at + 1..] {
        [] => 1,
        [c, n] if eq(c, "count") => match int(n) {
            Ok(n) if n > 0 => n as u64,
            _ => return Err(Reply::err("count should be greater than 0")),
        },
        _ => return Err(Reply::syntax()),
    };
    Ok(Cmd::ZMPop {
        keys: a[2..where_at].to_vec(),
        max,
        count,
    })
}

/// The count of HRANDFIELD and ZRANDMEMBER (`None`: none given) and
/// whether `word` (WITHVALUES, WITHSCORES) follows it, checked as
/// `hrandfieldCommand` and `zrandmemberCommand` do.
fn rand_count(a: &[Bytes], word: &str) -> Result<(Option<i64>, bool), Reply> {
    if a.len() == 2 {
        return Ok((None, false));
    }
    let count = int(&a[2])?;
    if count < -i64::MAX {
        return Err(Reply::err(format!(
            "value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        )));
    }
    let with = match &a[3..] {
        [] => false,
        [w] if eq(w, word) => true,
        _ => return Err(Reply::syntax()),
    };
    // A negative count's pairs are counted twice in a RESP2 reply.
    if with && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Reply::err("value is out of range"));
    }
    Ok((Some(count), with))
}

fn zadd(key: &Bytes, args: &[Bytes], mut flags: ZaddFlags) -> Result<Cmd, Reply> {
    // `args`: everything after the key.
    let mut i = 0;
    while i < args.len() {
        let a = &args[i][..];
        if eq(a, "nx") {
            flags.nx = true;
        } else if eq(a, "xx") {
            flags.xx = true;
        } else if eq(a, "ch") {
            flags.ch = true;
        } else if eq(a, "incr") {
            flags.incr = true;
        } else if eq(a, "gt") {
            flags.gt = true;
        } else if eq(a, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || rest.len() % 2 == 1 {
        return Err(Reply::syntax());
    }
    if flags.nx && flags.xx {
        return Err(Reply::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(Reply::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && rest.len() > 2 {
        return Err(Reply::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        let score = parse_double(&p[0]).ok_or_else(not_float)?;
        pairs.push((score, p[1].clone()));
    }
    Ok(Cmd::ZAdd {
        key: key.clone(),
        flags,
        pairs,
    })
}

/// What a ZRANGE-family command ranges over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// `zrangeGenericCommand`'s parsing. `kind`: the command's own kind
/// (ZRANGEBYSCORE…) or None for ZRANGE; `rev`: ZREV* commands.
fn zrange(args: &[Bytes], kind: Option<RangeKind>, rev: bool) -> Result<Cmd, Reply> {
    zrange_from(args, 1, kind, rev)
}

/// `zrangeGenericCommand`'s parsing with the source key at `start`: 1, or
/// 2 for ZRANGESTORE (which stores scores, so takes no WITHSCORES).
fn zrange_from(
    args: &[Bytes],
    start: usize,
    fixed: Option<RangeKind>,
    rev: bool,
) -> Result<Cmd, Reply> {
    let store = start == 2;
    let key = args[start].clone();
    let (mut withscores, mut offset, mut count) = (false, 0, -1);
    let (mut rev, mut kind) = (rev, fixed);
    // Commands other than ZRANGE and ZRANGESTORE fix both.
    let mut dir_open = fixed.is_none();
    let mut j = start + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j][..];
        if !store && eq(a, "withscores") {
            withscores = true;
        } else if eq(a, "limit") && left >= 2 {
            offset = int(&args[j + 1])?;
            count = int(&args[j + 2])?;
            j += 2;
        } else if dir_open && eq(a, "rev") {
            rev = true;
            dir_open = false;
        } else if kind.is_none() && eq(a, "bylex") {
            kind = Some(RangeKind::Lex);
        } else if kind.is_none() && eq(a, "byscore") {
            kind = Some(RangeKind::Score);
        } else {
            return Err(Reply::syntax());
        }
        j += 1;
    }
    let kind = kind.unwrap_or(RangeKind::Rank);
    if count != -1 && kind == RangeKind::Rank {
        return Err(Reply::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == RangeKind::Lex {
        return Err(Reply::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Reversed score and lex ranges are given as max, min.
    let (lo, hi) = if rev && kind != RangeKind::Rank {
        (&args[start + 2], &args[start + 1])
    } else {
        (&args[start + 1], &args[start + 2])
    };
    let by = match kind {
        RangeKind::Rank => RangeBy::Rank(int(lo)?, int(hi)?),
        RangeKind::Score => RangeBy::Score {
            range: range(lo, hi)?,
            offset,
            count,
        },
        RangeKind::Lex => RangeBy::Lex {
            range: zparse::lex_range(lo, hi)?,
            offset,
            count,
        },
    };
    Ok(if store {
        Cmd::ZRangeStore {
            dest: args[1].clone(),
            src: key,
            by,
            rev,
        }
    } else {
        Cmd::ZRange {
            key,
            by,
            rev,
            withscores,
        }
    })
}

fn expire(args: &[Bytes], relative: bool, ms: bool, name: &'static str) -> Result<Cmd, Reply> {
    let mut f = ExpireFlags::default();
    for a in &args[3..] {
        if eq(a, "nx") {
            f.nx = true;
        } else if eq(a, "xx") {
            f.xx = true;
        } else if eq(a, "gt") {
            f.gt = true;
        } else if eq(a, "lt") {
            f.lt = true;
        } else {
            let mut msg = b"ERR Unsupported option ".to_vec();
            msg.extend_from_slice(c_str(a, usize::MAX));
            return Err(Reply::Error(msg));
        }
    }
    if f.nx && (f.xx || f.gt || f.lt) {
        return Err(Reply::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if f.gt && f.lt {
        return Err(Reply::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(Cmd::Expire {
        key: args[1].clone(),
        at: int(&args[2])?,
        relative,
        ms,
        flags: f,
        name,
    })
}

/// The command's own argument checks (what Redis reports when the command
/// runs). `spec` comes from [`lookup`] on the same `args`.
/// CLIENT LIST's options.
fn client_list(a: &[Bytes]) -> Result<Cmd, Reply> {
    let mut ids = None;
    let mut none = false;
    let mut pubsub = None;
    let mut i = 2;
    while i < a.len() {
        if eq(&a[i], "type") && i + 1 < a.len() {
            match lower(&a[i + 1]).as_deref() {
                Some("normal") => pubsub = Some(false),
                Some("pubsub") => pubsub = Some(true),
                Some("master" | "replica" | "slave") => none = true,
                _ => {
                    let mut msg = b"ERR Unknown client type '".to_vec();
                    msg.extend_from_slice(c_str(&a[i + 1], 128));
                    msg.push(b'\'');
                    return Err(Reply::Error(msg));
                }
            }
            i += 2;
        } else if eq(&a[i], "id") && i + 1 < a.len() {
            let ids = ids.get_or_insert_with(Vec::new);
            for id in &a[i + 1..] {
                match parse_i64(id) {
                    // (No client has an id below 1: such ids match none.)
                    Some(n) => ids.extend(u64::try_from(n).ok()),
                    None => return Err(Reply::err("Invalid client ID")),
                }
            }
            i = a.len();
        } else {
            return Err(Reply::syntax());
        }
    }
    Ok(Cmd::ClientList { ids, none, pubsub })
}

pub fn parse(spec: &Spec, args: &[Bytes]) -> Result<Cmd, Reply> {
    let a = args;
    let key = || a[1].clone();
    let tail = |from: usize| a[from..].to_vec();
    Ok(match spec.name {
        "ping" => match a.len() {
            1 => Cmd::Ping(None),
            2 => Cmd::Ping(Some(key())),
            _ => return Err(arity_error("ping")),
        },
        "echo" => Cmd::Echo(key()),
        "hello" => Cmd::Hello(tail(1)),
        "auth" => match a.len() {
            2 => Cmd::Auth {
                user: None,
                pass: key(),
            },
            3 => Cmd::Auth {
                user: Some(key()),
                pass: a[2].clone(),
            },
            _ => return Err(Reply::syntax()),
        },
        "select" => Cmd::Select(key()),
        "quit" => Cmd::Quit,
        "subscribe" | "psubscribe" => Cmd::Subscribe {
            names: tail(1),
            pattern: spec.name == "psubscribe",
        },
        "unsubscribe" | "punsubscribe" => Cmd::Unsubscribe {
            names: tail(1),
            pattern: spec.name == "punsubscribe",
        },
        "publish" => Cmd::Publish(key(), a[2].clone()),
        "pubsub|channels" => match a.len() {
            2 => Cmd::PubsubChannels(None),
            3 => Cmd::PubsubChannels(Some(a[2].clone())),
            _ => {
                // Redis's own check (the table allows more).
                let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
                msg.extend_from_slice(c_str(&a[1], 128));
                msg.extend_from_slice(b"'. Try PUBSUB HELP.");
                return Err(Reply::Error(msg));
            }
        },
        "pubsub|numsub" => Cmd::PubsubNumsub(tail(2)),
        "pubsub|numpat" => Cmd::PubsubNumpat,
        "pubsub|help" => Cmd::PubsubHelp,
        "command" | "command|count" | "command|docs" | "command|info" | "command|list" => {
            Cmd::Command(tail(1))
        }
        "info" => Cmd::Info(tail(1)),
        "config|get" => Cmd::ConfigGet(tail(2)),
        "client|setname" => Cmd::ClientSetName(a[2].clone()),
        "client|getname" => Cmd::ClientGetName,
        "client|id" => Cmd::ClientId,
        "client|setinfo" => {
            if !(eq(&a[2], "lib-name") || eq(&a[2], "lib-ver")) {
                let mut msg = b"ERR Unrecognized option '".to_vec();
                msg.extend_from_slice(c_str(&a[2], 128));
                msg.push(b'\'');
                return Err(Reply::Error(msg));
            }
            Cmd::ClientSetInfo(lower(&a[2]).unwrap_or_default(), a[3].clone())
        }
        "client|list" => client_list(a)?,
        "client|info" => Cmd::ClientInfo,
        "client|pause" => {
            let ms = match parse_i64(&a[2]) {
                Some(n) if n >= 0 => n as u64,
                Some(_) => return Err(Reply::err("timeout is negative")),
                None => return Err(Reply::err("timeout is not an integer or out of range")),
            };
            let all = match (a.len(), a.get(3).and_then(|m| lower(m))) {
                (3, _) => true,
                (4, Some(m)) if m == "all" => true,
                (4, Some(m)) if m == "write" => false,
                (4, _) => return Err(Reply::err("CLIENT PAUSE mode must be WRITE or ALL")),
                _ => {
                    let mut msg =
                        b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
                    msg.extend_from_slice(c_str(&a[1], 128));
                    msg.extend_from_slice(b"'. Try CLIENT HELP.");
                    return Err(Reply::Error(msg));
                }
            };
            Cmd::ClientPause { ms, all }
        }
        "client|unpause" => Cmd::ClientUnpause,
        "client|kill" => Cmd::ClientKill(tail(2)),
        "client|no-evict" => match lower(&a[2]).as_deref() {
            Some("on") => Cmd::ClientNoEvict(true),
            Some("off") => Cmd::ClientNoEvict(false),
            _ => return Err(Reply::syntax()),
        },
        "client|reply" => match lower(&a[2]).as_deref() {
            Some(m @ ("on" | "off" | "skip")) => Cmd::ClientReply(m.to_string()),
            _ => return Err(Reply::syntax()),
        },
        "config|set" => {
            if !a.len().is_multiple_of(2) {
                return Err(Reply::syntax());
            }
            let mut pairs: Vec<(String, Bytes)> = Vec::new();
            for p in a[2..].chunks(2) {
                let name = String::from_utf8_lossy(&p[0]).to_ascii_lowercase();
                if pairs.iter().any(|(n, _)| *n == name) {
                    return Err(Reply::err(format!(
                        "CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                    )));
                }
                pairs.push((name, p[1].clone()));
            }
            Cmd::ConfigSet(pairs)
        }
        "config|resetstat" => Cmd::ConfigResetStat,
        "slowlog|get" => match a.len() {
            2 => Cmd::SlowlogGet(10),
            3 => match parse_i64(&a[2]) {
                Some(n) if n >= -1 => Cmd::SlowlogGet(n),
                _ => return Err(Reply::err("count should be greater than or equal to -1")),
            },
            _ => {
                let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
                msg.extend_from_slice(c_str(&a[1], 128));
                msg.extend_from_slice(b"'. Try SLOWLOG HELP.");
                return Err(Reply::Error(msg));
            }
        },
        "slowlog|len" => Cmd::SlowlogLen,
        "slowlog|reset" => Cmd::SlowlogReset,
        "time" => Cmd::Time,
        "role" => Cmd::Role,
        "lolwut" => Cmd::Lolwut,
        "reset" => Cmd::Reset,
        "save" => Cmd::Save,
        "bgsave" => match a.len() {
            1 => Cmd::BgSave,
            2 if eq(&a[1], "schedule") => Cmd::BgSave,
            _ => return Err(Reply::syntax()),
        },
        "lastsave" => Cmd::LastSave,
        "dbsize" => Cmd::DbSize,
        "flushdb" | "swapdb" | "move" => super::exec::databases::parse(spec.name, a)?,
        "flushall" => match a.len() {
            1 => Cmd::Flush,
            2 if eq(&a[1], "sync") || eq(&a[1], "async") => Cmd::Flush,
            _ => return Err(Reply::syntax()),
        },
        "exists" => Cmd::Exists(tail(1)),
        "del" | "unlink" => Cmd::Del(tail(1)),
        "type" => Cmd::Type(key()),
        "keys" => Cmd::Keys(key()),
        "scan" => Cmd::Scan {
            cursor: cursor(&a[1])?,
            opts: scan_opts(a, 2, true)?,
        },
        "expire" => expire(a, true, false, "expire")?,
        "pexpire" => expire(a, true, true, "pexpire")?,
        "expireat" => expire(a, false, false, "expireat")?,
        "pexpireat" => expire(a, false, true, "pexpireat")?,
        "ttl" | "pttl" | "expiretime" | "pexpiretime" => Cmd::Ttl {
            key: key(),
            ms: spec.name.starts_with('p'),
            abs: spec.name.ends_with("expiretime"),
        },
        // TOUCH counts the keys that exist, as EXISTS (there is no access
        // time to update).
        "touch" => Cmd::Exists(tail(1)),
        "randomkey" => Cmd::RandomKey,
        "persist" => Cmd::Persist(key()),
        "multi" => Cmd::Multi,
        "exec" => Cmd::Exec,
        "discard" => Cmd::Discard,
        "zadd" => zadd(&a[1], &a[2..], ZaddFlags::default())?,
        "zincrby" => zadd(
            &a[1],
            &a[2..],
            ZaddFlags {
                incr: true,
                ..Default::default()
            },
        )?,
        "zscore" => Cmd::ZScore(key(), a[2].clone()),
        "zmscore" => Cmd::ZMScore(key(), tail(2)),
        "zrank" | "zrevrank" => {
            if a.len() > 4 {
                return Err(arity_error(spec.name));
            }
            let withscore = match a.get(3) {
                None => false,
                Some(o) if eq(o, "withscore") => true,
                Some(_) => return Err(Reply::syntax()),
            };
            Cmd::ZRank {
                key: key(),
                member: a[2].clone(),
                rev: spec.name == "zrevrank",
                withscore,
            }
        }
        "zcard" => Cmd::ZCard(key()),
        "zcount" => Cmd::ZCount(key(), range(&a[2], &a[3])?),
        "zrange" => zrange(a, None, false)?,
        "zrevrange" => zrange(a, Some(RangeKind::Rank), true)?,
        "zrangebyscore" => zrange(a, Some(RangeKind::Score), false)?,
        "zrevrangebyscore" => zrange(a, Some(RangeKind::Score), true)?,
        "zrem" => Cmd::ZRem(key(), tail(2)),
        "zremrangebyrank" => Cmd::ZRemRangeByRank(key(), int(&a[2])?, int(&a[3])?),
        "zremrangebyscore" => Cmd::ZRemRangeByScore(key(), range(&a[2], &a[3])?),
        "zpopmin" | "zpopmax" => {
            if a.len() > 3 {
                return Err(Reply::syntax());
            }
            let count = match a.get(2) {
                None => None,
                Some(c) => match parse_i64(c) {
                    Some(n) if n >= 0 => Some(n),
                    _ => return Err(Reply::err("value is out of range, must be positive")),
                },
            };
            Cmd::ZPop {
                key: key(),
                max: spec.name == "zpopmax",
                count,
            }
        }
        "zmpop" => zmpop(a)?,
        "zunionstore" => zparse::store(a, false)?,
        "zinterstore" => zparse::store(a, true)?,
        "zscan" => Cmd::ZScan {
            key: key(),
            cursor: cursor(&a[2])?,
            opts: scan_opts(a, 3, false),
        },
        "hset" | "hmset" => {
            if a.len() % 2 == 1 {
                return Err(arity_error(spec.name));
            }
            Cmd::HSet {
                key: key(),
                pairs: a[2..]
                    .chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
                hmset: spec.name == "hmset",
            }
        }
        "hget" => Cmd::HGet(key(), a[2].clone()),
        "hmget" => Cmd::HMGet(key(), tail(2)),
        "hdel" => Cmd::HDel(key(), tail(2)),
        "hgetall" => Cmd::HGetAll(key()),
        "hexists" => Cmd::HExists(key(), a[2].clone()),
        "hlen" => Cmd::HLen(key()),
        "hkeys" => Cmd::HKeys(key()),
        "hvals" => Cmd::HVals(key()),
        "hsetnx" => Cmd::HSetNx(key(), a[2].clone(), a[3].clone()),
        "hincrby" => Cmd::HIncrBy(key(), a[2].clone(), int(&a[3])?),
        "hstrlen" => Cmd::HStrLen(key(), a[2].clone()),
        "hrandfield" => {
            let (count, values) = rand_count(a, "withvalues")?;
            Cmd::HRandField {
                key: key(),
                count,
                values,
            }
        }
        "zrandmember" => {
            let (count, scores) = rand_count(a, "withscores")?;
            Cmd::ZRandMember {
                key: key(),
                count,
                scores,
            }
        }
        "hscan" => Cmd::HScan {
            key: key(),
            cursor: cursor(&a[2])?,
            opts: scan_opts(a, 3, false),
        },
        name if keyops::NAMES.contains(&name) => keyops::parse(name, a)?,
        "zrangebylex" => zrange(a, Some(RangeKind::Lex), false)?,
        "zrevrangebylex" => zrange(a, Some(RangeKind::Lex), true)?,
        "zlexcount" => Cmd::ZLexCount(key(), zparse::lex_range(&a[2], &a[3])?),
        "zremrangebylex" => Cmd::ZRemRangeByLex(key(), zparse::lex_range(&a[2], &a[3])?),
        "zunion" => zparse::algebra(a, SetOp::Union, spec.name)?,
        "zinter" => zparse::algebra(a, SetOp::Inter, spec.name)?,
        "zdiff" => zparse::algebra(a, SetOp::Diff, spec.name)?,
        "zintercard" => zparse::intercard(a)?,
        "zdiffstore" => zparse::diffstore(a)?,
        "zrangestore" => zrange_from(a, 2, None, false)?,
        name if super::command_strings::NAMES.contains(&name) => {
            Cmd::Str(super::command_strings::parse(spec.name, a)?)
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "script|load" | "script|exists"
        | "script|flush" | "script|kill" => super::script::parse(spec.name, a)?,
        // Containers reached without a subcommand have failed arity.
        _ => return Err(unknown_command(a)),
    })
}

/// Both stages at once (tests, and callers outside MULTI).
pub fn parse_args(args: &[Bytes]) -> Result<Cmd, Reply> {
    let spec = lookup(args)?;
    parse(spec, args)
}

/// A score range in Redis's ascending terms, for tests and callers.
pub fn bounds(min: f64, max: f64) -> ScoreRange {
    ScoreRange {
        min: Bound::Included(min),
        max: Bound::Included(max),
    }
}

/// Parsing a space-separated command line, for the parsers' unit tests.
#[cfg(test)]
pub(super) mod test_parse {
    use super::*;

    /// The command `s` parses to.
    pub fn p(s: &str) -> Result<Cmd, Reply> {
        let args: Vec<Bytes> = s
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        parse_args(&args)
    }

    /// The error `s` is refused with.
    pub fn e(s: &str) -> String {
        match p(s) {
            Err(Reply::Error(m)) => String::from_utf8(m).unwrap(),
            other => panic!("{s}: expected an error, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_parse::{e, p};
    use super::*;
    use podium_core::keystore::Writes;

    /// A transaction's ZMPOP names its keys to the gate, whose count is an
    /// argument.
    #[test]
    fn movable_keys_follow_their_count() {
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let spec = lookup(&args("zmpop 2 a b min")).unwrap();
        let keys =
            |s: &str| -> Vec<Vec<u8>> { spec.key_args(&args(s)).map(<[u8]>::to_vec).collect() };
        assert_eq!(keys("zmpop 2 a b min"), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(keys("zmpop 1 a min count 3"), vec![b"a".to_vec()]);
        assert_eq!(keys("zmpop 9 a min"), vec![b"a".to_vec(), b"min".to_vec()]);
        assert!(keys("zmpop x a min").is_empty());
        let mut w = Writes::none();
        spec.add_writes(&args("zmpop 2 a b max"), &mut w);
        assert!(w.may_change(b"a") && w.may_change(b"b") && !w.may_change(b"c"));
    }

    #[test]
    fn unknown_commands_quote_their_arguments() {
        assert_eq!(
            e("foo a b"),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(
            e("FOO"),
            "ERR unknown command 'FOO', with args beginning with: "
        );
        let long = format!("foo {}", "x".repeat(200));
        assert_eq!(
            e(&long),
            format!(
                "ERR unknown command 'foo', with args beginning with: '{}' ",
                "x".repeat(128)
            )
        );
        assert_eq!(
            e("config foo"),
            "ERR unknown subcommand 'foo'. Try CONFIG HELP."
        );
        assert_eq!(
            e("client|id"),
            "ERR unknown command 'client|id', with args beginning with: "
        );
    }

    #[test]
    fn arity_is_checked_for_every_command() {
        for s in COMMANDS {
            let name = s.name.split('|').collect::<Vec<_>>();
            let base = name.len();
            // One argument too few (or, for fixed arity, one too many).
            let n = if s.arity > 0 {
                s.arity as usize + 1
            } else {
                (-s.arity) as usize - 1
            };
            if n < base {
                continue;
            }
            let mut words: Vec<String> = name.iter().map(|w| w.to_string()).collect();
            while words.len() < n {
                words.push("1".into());
            }
            let args: Vec<Bytes> = words
                .iter()
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect();
            let r = lookup(&args);
            if base == 2 && n == 1 {
                continue;
            }
            match r {
                Err(Reply::Error(m)) => assert_eq!(
                    String::from_utf8(m).unwrap(),
                    format!("ERR wrong number of arguments for '{}' command", s.name),
                    "{words:?}"
                ),
                other => panic!("{words:?}: {other:?}"),
            }
        }
        assert_eq!(
            e("zadd k"),
            "ERR wrong number of arguments for 'zadd' command"
        );
        assert_eq!(
            e("ZADD k 1"),
            "ERR wrong number of arguments for 'zadd' command"
        );
        assert_eq!(
            e("config"),
            "ERR wrong number of arguments for 'config' command"
        );
        assert_eq!(
            e("config get"),
            "ERR wrong number of arguments for 'config|get' command"
        );
        assert_eq!(
            e("ping a b"),
            "ERR wrong number of arguments for 'ping' command"
        );
        assert_eq!(
            e("hset k f v f2"),
            "ERR wrong number of arguments for 'hset' command"
        );
        assert_eq!(
            e("zrank k m withscore x"),
            "ERR wrong number of arguments for 'zrank' command"
        );
    }

    #[test]
    fn zadd_options_and_errors() {
        assert_eq!(
            e("zadd k nx xx 1 a"),
            "ERR XX and NX options at the same time are not compatible"
        );
        assert_eq!(
            e("zadd k gt lt 1 a"),
            "ERR GT, LT, and/or NX options at the same time are not compatible"
        );
        assert_eq!(
            e("zadd k nx gt 1 a"),
            "ERR GT, LT, and/or NX options at the same time are not compatible"
        );
        assert_eq!(
            e("zadd k incr 1 a 2 b"),
            "ERR INCR option supports a single increment-element pair"
        );
        assert_eq!(e("zadd k 1 a 2"), "ERR syntax error");
        assert_eq!(e("zadd k nx xx 1"), "ERR syntax error");
        assert_eq!(e("zadd k x a"), "ERR value is not a valid float");
        assert_eq!(e("zadd k nan a"), "ERR value is not a valid float");
        assert_eq!(e("zincrby k nx a"), "ERR syntax error");
        assert_eq!(e("zincrby k abc a"), "ERR value is not a valid float");
        match p("zadd k XX CH gt 1.5 a -inf b").unwrap() {
            Cmd::ZAdd { flags, pairs, .. } => {
                assert!(flags.xx && flags.ch && flags.gt && !flags.incr);
                assert_eq!(pairs.len(), 2);
                assert_eq!(pairs[1].0, f64::NEG_INFINITY);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zrange_options_and_errors() {
        assert_eq!(
            e("zrange k 0 1 limit 0 1"),
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        );
        assert_eq!(
            e("zrange k a 1"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(e("zrange k 0 1 foo"), "ERR syntax error");
        assert_eq!(e("zrange k 0 1 byscore byscore"), "ERR syntax error");
        assert_eq!(e("zrangebyscore k a 1"), "ERR min or max is not a float");
        assert_eq!(e("zrangebyscore k 0 1 rev"), "ERR syntax error");
        assert_eq!(
            e("zrevrange k 0 1 limit 0 1"),
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        );
        assert_eq!(
            e("zrange k 0 1 byscore limit 0 x"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            e("zrange k [a [b bylex withscores"),
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
        );
        assert_eq!(
            e("zrange k a b bylex"),
            "ERR min or max not valid string range item"
        );
        match p("zrange k (5 -inf byscore rev limit 1 2 withscores").unwrap() {
            Cmd::ZRange {
                by:
                    RangeBy::Score {
                        range,
                        offset,
                        count,
                    },
                rev,
                withscores,
                ..
            } => {
                assert!(rev && withscores);
                assert_eq!((offset, count), (1, 2));
                assert_eq!(range.min, Bound::Included(f64::NEG_INFINITY));
                assert_eq!(range.max, Bound::Excluded(5.0));
            }
            other => panic!("{other:?}"),
        }
        match p("zrevrangebyscore k 10 (1").unwrap() {
            Cmd::ZRange {
                by: RangeBy::Score { range, .. },
                rev: true,
                ..
            } => {
                assert_eq!(
                    (range.min, range.max),
                    (Bound::Excluded(1.0), Bound::Included(10.0))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_option_errors() {
        assert_eq!(e("zcount k x 1"), "ERR min or max is not a float");
        assert_eq!(
            e("zremrangebyrank k 0 x"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            e("zpopmin k -1"),
            "ERR value is out of range, must be positive"
        );
        assert_eq!(e("zpopmin k 1 2"), "ERR syntax error");
        assert_eq!(
            e("zunionstore d 0 a"),
            "ERR at least 1 input key is needed for 'zunionstore' command"
        );
        assert_eq!(
            e("zinterstore d x a"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(e("zunionstore d 3 a b"), "ERR syntax error");
        assert!(matches!(
            p("zunionstore d 2 a b weights 1").unwrap(),
            Cmd::ZStore { opts: Err(_), .. }
        ));
        assert!(
            matches!(p("zunionstore d 1 a weights x").unwrap(), Cmd::ZStore { opts: Err(Reply::Error(m)), .. } if m == b"ERR weight value is not a float")
        );
        assert!(matches!(
            p("zunionstore d 1 a aggregate avg").unwrap(),
            Cmd::ZStore { opts: Err(_), .. }
        ));
        assert!(matches!(
            p("zunionstore d 2 a b weights 1 2 aggregate max").unwrap(),
            Cmd::ZStore {
                opts: Ok(StoreOpts {
                    agg: Aggregate::Max,
                    ..
                }),
                ..
            }
        ));
        assert_eq!(e("expire k 10 foo"), "ERR Unsupported option foo");
        assert_eq!(
            e("expire k 10 nx xx"),
            "ERR NX and XX, GT or LT options at the same time are not compatible"
        );
        assert_eq!(
            e("expire k 10 gt lt"),
            "ERR GT and LT options at the same time are not compatible"
        );
        assert_eq!(
            e("expire k 1.5"),
            "ERR value is not an integer or out of range"
        );
        assert!(p("expire k 10 xx gt").is_ok());
        assert_eq!(e("scan x"), "ERR invalid cursor");
        assert_eq!(e("scan 0 count 0"), "ERR syntax error");
        assert_eq!(e("scan 0 count"), "ERR syntax error");
        assert_eq!(e("zscan k x"), "ERR invalid cursor");
        assert!(matches!(
            p("zscan k 0 type zset").unwrap(),
            Cmd::ZScan { opts: Err(_), .. }
        ));
        assert_eq!(e("flushall now"), "ERR syntax error");
        assert_eq!(e("auth a b c"), "ERR syntax error");
        assert_eq!(e("zrank k m foo"), "ERR syntax error");
        assert_eq!(e("client setinfo foo bar"), "ERR Unrecognized option 'foo'");
        assert!(p("client setinfo LIB-NAME redis-py").is_ok());
        assert!(p("hset k f v f2 v2").is_ok());
    }
}
