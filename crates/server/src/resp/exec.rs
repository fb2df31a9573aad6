//! Running commands: a [`Session`] (one connection's state: protocol
//! version, authentication, name, MULTI queue) takes a request's
//! arguments, applies Redis's dispatch checks, and runs the parsed
//! [`Cmd`] against the [`Service`], returning the [`Reply`] and the log
//! position the reply must wait for before it is sent.
//!
//! Sorted sets are boards. Redis orders a set by ascending score, ties by
//! member bytes; a board orders best first. On an `asc` board the two
//! orders are the same; on a `desc` board with the default `member`
//! tiebreak Redis's order is exactly the board's reversed. So Redis index
//! `i` is board position `i` (asc) or `len-1-i` (desc), and every range
//! read is a board read from the best or from the worst end. A board whose
//! tiebreak is `first`/`last` orders ties by arrival; the Redis view then
//! follows the board's order (reversed for `desc`), not member bytes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use podium_engine::{Cond, Entry, Order, Presence, UpdateOp};

use super::command::{self, lookup, parse, Cmd, ExpireFlags, RangeBy, Spec, ZaddFlags};
use super::reply::{fmt_d2string, Reply};
use crate::settings::{ApiKey, Scope};
use podium_core::error::{ApiError, Code};
use podium_store::keyspace::{glob_match, ExpireCond, KeyType, Lsn};
use podium_store::service::Service;
use podium_store::storage::record::{MemberBytes, SubmitRec};

/// The version podium reports to Redis clients (the Redis it mirrors).
pub const REDIS_VERSION: &str = "7.0.15";

/// Largest sorted set Redis keeps compact (`zset-max-listpack-entries`):
/// ZSCAN returns such a set in one reply with cursor 0, and its scores are
/// stored as text, where -0 reads back as 0.
const SMALL_ZSET: usize = 128;

/// A stored score as Redis reads it back from a set of `len` members: -0
/// is 0 in a small set. (A computed reply, ZINCRBY's, keeps -0.)
fn stored(score: f64, len: usize) -> f64 {
    if score == 0.0 && len <= SMALL_ZSET {
        0.0
    } else {
        score
    }
}

/// What every connection of one listener shares.
pub struct Shared {
    pub api_keys: Vec<ApiKey>,
    pub clients: AtomicUsize,
    next_id: AtomicU64,
    started: Instant,
    pub port: u16,
}

impl Shared {
    pub fn new(api_keys: Vec<ApiKey>, port: u16) -> Shared {
        Shared {
            api_keys,
            clients: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            started: Instant::now(),
            port,
        }
    }

    /// The scope of the key equal to `presented` (constant time per key).
    fn scope_of(&self, presented: &[u8]) -> Option<Scope> {
        let presented = std::str::from_utf8(presented).ok()?;
        self.api_keys.iter().fold(None, |found, k| {
            if k.matches(presented) {
                Some(k.scope)
            } else {
                found
            }
        })
    }
}

struct Multi {
    queue: Vec<(&'static Spec, Vec<Bytes>)>,
    /// A command was refused while queueing: EXEC will abort.
    failed: bool,
}

/// One connection's state.
pub struct Session {
    svc: Arc<Service>,
    shared: Arc<Shared>,
    pub id: u64,
    /// 2 or 3 (HELLO).
    pub proto: u8,
    name: Option<Vec<u8>>,
    /// The authenticated key's scope; with no keys configured, `Admin`.
    scope: Option<Scope>,
    multi: Option<Multi>,
    /// QUIT was received: reply, then close.
    pub closing: bool,
}

fn api_err(e: ApiError) -> Reply {
    match e.code {
        Code::WrongType => {
            Reply::coded("WRONGTYPE Operation against a key holding the wrong kind of value")
        }
        _ => Reply::err(e.message),
    }
}

type Run = (Reply, Lsn);

fn done(r: Reply) -> Run {
    (r, 0)
}

fn refs(v: &[Bytes]) -> Vec<&[u8]> {
    v.iter().map(|b| &b[..]).collect()
}

/// Redis's `bytesToHuman`.
fn human(n: u64) -> String {
    let units = [
        (1u64 << 10, 'K'),
        (1 << 20, 'M'),
        (1 << 30, 'G'),
        (1 << 40, 'T'),
        (1 << 50, 'P'),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    for (i, &(div, u)) in units.iter().enumerate() {
        if i + 1 == units.len() || n < div << 10 {
            return format!("{:.2}{u}", n as f64 / div as f64);
        }
    }
    unreachable!()
}

/// The highest [`used_memory`] seen, as Redis samples its own peak.
static USED_MEMORY_PEAK: AtomicU64 = AtomicU64::new(0);

/// Heap bytes in use as malloc counts them (the huge-page wrapper
/// allocates through it too): blocks in its arenas plus those it maps on
/// their own. The resident set size where malloc cannot say.
fn used_memory() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let m = unsafe {
        let i = libc::mallinfo2();
        (i.uordblks + i.hblkhd) as u64
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let m = rss();
    USED_MEMORY_PEAK.fetch_max(m, Ordering::Relaxed);
    m
}

/// The peak of [`used_memory`].
fn used_memory_peak() -> u64 {
    USED_MEMORY_PEAK.load(Ordering::Relaxed)
}

/// Resident set size, as Redis's `used_memory_rss`.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

impl Session {
    pub fn new(svc: Arc<Service>, shared: Arc<Shared>) -> Session {
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let scope = shared.api_keys.is_empty().then_some(Scope::Admin);
        Session {
            svc,
            shared,
            id,
            proto: 2,
            name: None,
            scope,
            multi: None,
            closing: false,
        }
    }

    /// Whether the connection may run commands (the codec's tighter
    /// limits apply until then).
    pub fn authenticated(&self) -> bool {
        self.scope.is_some()
    }

    fn flag_multi(&mut self) {
        if let Some(m) = &mut self.multi {
            m.failed = true;
        }
    }

    /// Runs one request (non-empty arguments).
    pub fn handle(&mut self, args: Vec<Bytes>) -> Run {
        let spec = match self.admit(&args) {
            Ok(s) => s,
            Err(r) => {
                self.flag_multi();
                // A refused EXEC discards the transaction (Redis's
                // `execCommandAbort`), with the reason minus its code.
                if command::lower(&args[0]).as_deref() == Some("exec") {
                    self.multi = None;
                    let Reply::Error(e) = r else { return done(r) };
                    let reason = e.strip_prefix(b"ERR ").unwrap_or(&e);
                    let mut msg = b"EXECABORT Transaction discarded because of: ".to_vec();
                    msg.extend_from_slice(reason);
                    return done(Reply::Error(msg));
                }
                return done(r);
            }
        };
        if let Some(m) = &mut self.multi {
            if !matches!(spec.name, "exec" | "discard" | "multi" | "quit") {
                m.queue.push((spec, args));
                return done(Reply::Status("QUEUED"));
            }
        }
        match spec.name {
            "exec" => return self.exec_multi(),
            "discard" => {
                return done(match self.multi.take() {
                    Some(_) => Reply::OK,
                    None => Reply::err("DISCARD without MULTI"),
                })
            }
            _ => {}
        }
        self.run_spec(spec, &args)
    }

    /// Parses and runs a request that passed [`Session::admit`]. A command
    /// whose scope depends on its keys is checked again as it runs, with
    /// every other client excluded, so no board can appear between the
    /// check and the deletion (nor between queueing and EXEC).
    fn run_spec(&mut self, spec: &'static Spec, args: &[Bytes]) -> Run {
        let cmd = match parse(spec, args) {
            Ok(cmd) => cmd,
            Err(r) => return done(r),
        };
        if self.may_touch_boards(spec) {
            return self.run(cmd);
        }
        let svc = self.svc.clone();
        svc.atomically(|| match self.key_refusal(spec, args) {
            Some(r) => done(r),
            None => self.run(cmd),
        })
    }

    /// Whether the key may run `spec` whatever its keys name.
    fn may_touch_boards(&self, spec: &Spec) -> bool {
        match (spec.access.on_boards(), self.scope) {
            (None, _) => true,
            (Some(needed), Some(scope)) => scope.allows(needed),
            (Some(_), None) => false,
        }
    }

    /// Redis's refusal of a key the user may not touch, when one of
    /// `spec`'s keys in `args` names a board and the key may not touch
    /// boards.
    fn key_refusal(&self, spec: &Spec, args: &[Bytes]) -> Option<Reply> {
        if self.may_touch_boards(spec) || !spec.key_args(args).any(|k| self.svc.names_board(k)) {
            return None;
        }
        Some(Reply::coded(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
        ))
    }

    /// `processCommand`'s checks before a command runs or is queued:
    /// known, right arity, authenticated, allowed for the key's scope on
    /// the keys named.
    fn admit(&self, args: &[Bytes]) -> Result<&'static Spec, Reply> {
        let spec = lookup(args)?;
        let Some(needed) = spec.access.least() else {
            return Ok(spec);
        };
        let Some(scope) = self.scope else {
            return Err(Reply::coded("NOAUTH Authentication required."));
        };
        if !scope.allows(needed) {
            return Err(Reply::coded(format!(
                "NOPERM this user has no permissions to run the '{}' command",
                spec.name
            )));
        }
        match self.key_refusal(spec, args) {
            Some(r) => Err(r),
            None => Ok(spec),
        }
    }

    fn exec_multi(&mut self) -> Run {
        let Some(m) = self.multi.take() else {
            return done(Reply::err("EXEC without MULTI"));
        };
        if m.failed {
            return done(Reply::coded(
                "EXECABORT Transaction discarded because of previous errors.",
            ));
        }
        let svc = self.svc.clone();
        let mut lsn = 0;
        let replies = svc.atomically(|| {
            m.queue
                .into_iter()
                .map(|(spec, args)| {
                    let (r, l) = self.run_spec(spec, &args);
                    lsn = lsn.max(l);
                    r
                })
                .collect()
        });
        (Reply::Array(replies), lsn)
    }

    /// Runs a parsed command.
    pub fn run(&mut self, cmd: Cmd) -> Run {
        match self.run_inner(cmd) {
            Ok(r) => r,
            Err(e) => done(api_err(e)),
        }
    }

    fn run_inner(&mut self, cmd: Cmd) -> Result<Run, ApiError> {
        let svc = self.svc.clone();
        let svc = &*svc;
        Ok(match cmd {
            Cmd::Ping(None) => done(Reply::Status("PONG")),
            Cmd::Ping(Some(m)) | Cmd::Echo(m) => done(Reply::bulk(m)),
            Cmd::Hello(args) => done(self.hello(&args)),
            Cmd::Auth { user, pass } => done(self.auth(user.as_deref(), &pass)),
            Cmd::Select(idx) => done(match super::num::parse_i64(&idx) {
                Some(i) if i32::try_from(i).is_ok() => {
                    if i == 0 {
                        Reply::OK
                    } else {
                        Reply::err("DB index is out of range")
                    }
                }
                _ => Reply::err("value is not an integer or out of range"),
            }),
            Cmd::Quit => {
                self.closing = true;
                done(Reply::OK)
            }
            Cmd::Command(args) => done(command_cmd(&args)),
            Cmd::Info(sections) => done(Reply::Verbatim(self.info(&sections))),
            Cmd::ConfigGet(patterns) => done(config_get(&patterns)),
            Cmd::ClientSetName(name) => done(match check_client_name(&name) {
                Ok(()) => {
                    self.name = (!name.is_empty()).then(|| name.to_vec());
                    Reply::OK
                }
                Err(r) => r,
            }),
            Cmd::ClientGetName => done(match &self.name {
                Some(n) => Reply::bulk(n),
                None => Reply::Null,
            }),
            Cmd::ClientSetInfo => done(Reply::OK),
            Cmd::ClientId => done(Reply::Int(self.id as i64)),
            Cmd::DbSize => done(Reply::Int(svc.dbsize() as i64)),
            Cmd::Flush => (Reply::OK, svc.flushall()?),
            Cmd::Exists(keys) => done(Reply::Int(svc.exists(&refs(&keys)) as i64)),
            Cmd::Del(keys) => {
                let (n, lsn) = svc.del(&refs(&keys))?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::Type(key) => done(Reply::Status(
                svc.key_type(&key).map_or("none", KeyType::as_str),
            )),
            Cmd::Keys(pattern) => done(Reply::Members(svc.keys(&pattern))),
            Cmd::Scan { cursor, opts } => {
                let ty = opts.ty.as_deref().map(|t| {
                    if t.eq_ignore_ascii_case(b"zset") {
                        Some(KeyType::Zset)
                    } else if t.eq_ignore_ascii_case(b"hash") {
                        Some(KeyType::Hash)
                    } else {
                        None
                    }
                });
                let (next, mut keys) =
                    svc.scan(cursor, opts.pattern.as_deref(), opts.count, ty.flatten());
                if ty == Some(None) {
                    // A type no key has (Redis 7.0 filters by name, no error).
                    keys.clear();
                }
                done(scan_reply(next, keys))
            }
            Cmd::Expire {
                key,
                at,
                relative,
                ms,
                flags,
                name,
            } => self.expire(&key, at, relative, ms, flags, name)?,
            Cmd::Ttl { key, ms } => done(Reply::Int(match svc.pttl(&key) {
                t if t < 0 => t,
                t if ms => t,
                t => (t + 500) / 1000,
            })),
            Cmd::Persist(key) => {
                let (ok, lsn) = svc.persist(&key)?;
                (Reply::Int(ok as i64), lsn)
            }
            Cmd::Multi => done(if self.multi.is_some() {
                Reply::err("MULTI calls can not be nested")
            } else {
                self.multi = Some(Multi {
                    queue: Vec::new(),
                    failed: false,
                });
                Reply::OK
            }),
            // Handled in `handle` (they need the queue).
            Cmd::Exec => self.exec_multi(),
            Cmd::Discard => done(match self.multi.take() {
                Some(_) => Reply::OK,
                None => Reply::err("DISCARD without MULTI"),
            }),
            Cmd::ZAdd { key, flags, pairs } => zadd(svc, &key, flags, pairs)?,
            Cmd::ZScore(key, m) => done(
                match svc.zread(&key, |b| b.score(&m).map(|x| stored(x, b.len())))? {
                    Some(Some(s)) => Reply::Double(s),
                    _ => Reply::Null,
                },
            ),
            Cmd::ZMScore(key, ms) => {
                let scores = svc.zread(&key, |b| {
                    ms.iter()
                        .map(|m| b.score(m).map(|x| stored(x, b.len())))
                        .collect::<Vec<_>>()
                })?;
                let scores = scores.unwrap_or_else(|| vec![None; ms.len()]);
                done(Reply::Array(
                    scores
                        .into_iter()
                        .map(|s| s.map_or(Reply::Null, Reply::Double))
                        .collect(),
                ))
            }
            Cmd::ZRank {
                key,
                member,
                rev,
                withscore,
            } => {
                let hit = svc.zread(&key, |b| {
                    let pos = b.position(&member)?;
                    let len = b.len();
                    let asc = if b.config().order == Order::Desc {
                        len - 1 - pos
                    } else {
                        pos
                    };
                    let idx = if rev { len - 1 - asc } else { asc };
                    Some((idx as i64, stored(b.score(&member).unwrap_or(0.0), len)))
                })?;
                done(match (hit.flatten(), withscore) {
                    (Some((i, _)), false) => Reply::Int(i),
                    (Some((i, s)), true) => Reply::Array(vec![Reply::Int(i), Reply::Double(s)]),
                    (None, false) => Reply::Null,
                    (None, true) => Reply::NullArray,
                })
            }
            Cmd::ZCard(key) => done(Reply::Int(
                svc.zread(&key, |b| b.len() as i64)?.unwrap_or(0),
            )),
            Cmd::ZCount(key, range) => {
                let n = svc.zread(&key, |b| b.count_range(&range))?.transpose()?;
                done(Reply::Int(n.unwrap_or(0) as i64))
            }
            Cmd::ZRange {
                key,
                by,
                rev,
                withscores,
            } => {
                let entries = svc
                    .zread(&key, |b| -> Result<(Vec<Entry>, usize), ApiError> {
                        // Board reads from the worst end give Redis's
                        // ascending order on a desc board.
                        let from_worst = (b.config().order == Order::Desc) != rev;
                        let entries = match by {
                            RangeBy::Rank(start, end) => {
                                match rank_span(b.len() as i64, start, end) {
                                    Some((s, e)) => {
                                        b.range_by_rank(s as u64 + 1, e as u64 + 1, from_worst)
                                    }
                                    None => Vec::new(),
                                }
                            }
                            RangeBy::Score {
                                range,
                                offset,
                                count,
                            } => {
                                if offset < 0 {
                                    return Ok((Vec::new(), 0));
                                }
                                let limit = u64::try_from(count).unwrap_or(u64::MAX);
                                b.range_by_score(&range, from_worst, offset as u64, limit)?
                            }
                        };
                        Ok((entries, b.len()))
                    })?
                    .transpose()?
                    .unwrap_or_default();
                done(entries_reply(entries.0, withscores, true, entries.1))
            }
            Cmd::ZRem(key, ms) => {
                let (n, lsn) = svc.zrem(&key, &refs(&ms))?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::ZRemRangeByRank(key, start, end) => {
                // The length and the removal must see the same board.
                let (n, lsn) = svc.atomically(|| -> Result<(u64, Lsn), ApiError> {
                    let Some((len, desc)) =
                        svc.zread(&key, |b| (b.len() as i64, b.config().order == Order::Desc))?
                    else {
                        return Ok((0, 0));
                    };
                    let Some((s, e)) = rank_span(len, start, end) else {
                        return Ok((0, 0));
                    };
                    let (lo, hi) = if desc {
                        (len - 1 - e, len - s)
                    } else {
                        (s, e + 1)
                    };
                    svc.zrem_positions(&key, lo as u64, hi as u64)
                })?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::ZRemRangeByScore(key, range) => {
                let (n, lsn) = svc.zrem_score_range(&key, range)?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::ZPop { key, max, count } => {
                let Some((desc, len)) =
                    svc.zread(&key, |b| (b.config().order == Order::Desc, b.len()))?
                else {
                    return Ok(done(Reply::Array(Vec::new())));
                };
                if count == Some(0) {
                    return Ok(done(Reply::Array(Vec::new())));
                }
                let (entries, lsn) = svc.zpop(&key, count.unwrap_or(1) as u64, desc != max)?;
                (entries_reply(entries, true, count.is_some(), len), lsn)
            }
            Cmd::ZStore {
                dest,
                keys,
                inter,
                opts,
            } => {
                // Redis checks the sources' types before the options.
                for k in &keys {
                    if svc.key_type(k) == Some(KeyType::Hash) {
                        return Ok(done(api_err(ApiError::new(Code::WrongType, ""))));
                    }
                }
                let opts = match opts {
                    Ok(o) => o,
                    Err(r) => return Ok(done(r)),
                };
                let sources: Vec<(&[u8], f64)> = keys
                    .iter()
                    .map(|k| &k[..])
                    .zip(opts.weights.iter().copied())
                    .collect();
                let (n, lsn) = svc.zstore(&dest, &sources, opts.agg, inter)?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::ZScan { key, cursor, opts } => {
                let page = svc.zread(&key, |b| {
                    let len = b.len();
                    let desc = b.config().order == Order::Desc;
                    let (from, count) = if len <= SMALL_ZSET {
                        (0, len)
                    } else {
                        let count = opts.as_ref().map_or(10, |o| o.count);
                        ((cursor as usize).min(len), count)
                    };
                    let last = from.saturating_add(count).min(len);
                    let items = if from < last {
                        b.range_by_rank(from as u64 + 1, last as u64, desc)
                    } else {
                        Vec::new()
                    };
                    let next = if last >= len { 0 } else { last as u64 };
                    (next, items)
                })?;
                let Some((next, items)) = page else {
                    return Ok(done(scan_reply(0, Vec::new())));
                };
                let opts = match opts {
                    Ok(o) => o,
                    Err(r) => return Ok(done(r)),
                };
                let mut flat = Vec::with_capacity(items.len() * 2);
                for e in items {
                    if opts
                        .pattern
                        .as_deref()
                        .is_none_or(|p| glob_match(p, &e.member))
                    {
                        flat.push(e.member);
                        flat.push(fmt_d2string(e.score).into_bytes());
                    }
                }
                done(scan_reply(next, flat))
            }
            Cmd::HSet { key, pairs, hmset } => {
                let p: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                let (n, lsn) = svc.hset(&key, &p)?;
                (
                    if hmset {
                        Reply::OK
                    } else {
                        Reply::Int(n as i64)
                    },
                    lsn,
                )
            }
            Cmd::HGet(key, f) => done(svc.hget(&key, &f)?.map_or(Reply::Null, Reply::Bulk)),
            Cmd::HMGet(key, fs) => done(Reply::Array(
                svc.hmget(&key, &refs(&fs))?
                    .into_iter()
                    .map(|v| v.map_or(Reply::Null, Reply::Bulk))
                    .collect(),
            )),
            Cmd::HDel(key, fs) => {
                let (n, lsn) = svc.hdel(&key, &refs(&fs))?;
                (Reply::Int(n as i64), lsn)
            }
            Cmd::HGetAll(key) => done(Reply::Map(
                svc.hgetall(&key)?
                    .into_iter()
                    .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
                    .collect(),
            )),
            Cmd::HExists(key, f) => done(Reply::Int(svc.hexists(&key, &f)? as i64)),
            Cmd::HLen(key) => done(Reply::Int(svc.hlen(&key)? as i64)),
            Cmd::HKeys(key) => done(Reply::Members(
                svc.hgetall(&key)?.into_iter().map(|(f, _)| f).collect(),
            )),
            Cmd::HVals(key) => done(Reply::Members(
                svc.hgetall(&key)?.into_iter().map(|(_, v)| v).collect(),
            )),
        })
    }

    fn auth(&mut self, user: Option<&[u8]>, pass: &[u8]) -> Reply {
        if self.shared.api_keys.is_empty() {
            // Redis without a password: the one-argument form is an
            // error, the two-argument form succeeds for `default`.
            return match user {
                None => Reply::err(
                    "AUTH <password> called without any password configured for the default user. \
                     Are you sure your configuration is correct?",
                ),
                Some(u) if u == b"default" => Reply::OK,
                Some(_) => wrongpass(),
            };
        }
        // With API keys the user name is ignored: the key is the password.
        match self.shared.scope_of(pass) {
            Some(s) => {
                self.scope = Some(s);
                Reply::OK
            }
            None => wrongpass(),
        }
    }

    fn hello(&mut self, args: &[Bytes]) -> Reply {
        let mut ver = None;
        let mut j = 0;
        if let Some(v) = args.first() {
            match super::num::parse_i64(v) {
                Some(v @ 2..=3) => ver = Some(v as u8),
                Some(_) => return Reply::coded("NOPROTO unsupported protocol version"),
                None => return Reply::err("Protocol version is not an integer or out of range"),
            }
            j = 1;
        }
        while j < args.len() {
            let more = args.len() - 1 - j;
            let opt = &args[j];
            if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
                let r = self.auth(Some(&args[j + 1]), &args[j + 2]);
                if r.is_error() {
                    return wrongpass();
                }
                j += 3;
            } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
                if let Err(r) = check_client_name(&args[j + 1]) {
                    return r;
                }
                self.name = (!args[j + 1].is_empty()).then(|| args[j + 1].to_vec());
                j += 2;
            } else {
                let mut msg = b"ERR Syntax error in HELLO option '".to_vec();
                msg.extend_from_slice(opt);
                msg.push(b'\'');
                return Reply::Error(msg);
            }
        }
        if self.scope.is_none() {
            return Reply::coded(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
                 HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
                 select the RESP protocol version at the same time",
            );
        }
        if let Some(v) = ver {
            self.proto = v;
        }
        let s = |x: &str| Reply::bulk(x);
        Reply::Map(vec![
            (s("server"), s("redis")),
            (s("version"), s(REDIS_VERSION)),
            (s("proto"), Reply::Int(i64::from(self.proto))),
            (s("id"), Reply::Int(self.id as i64)),
            (s("mode"), s("standalone")),
            (s("role"), s("master")),
            (s("modules"), Reply::Array(Vec::new())),
        ])
    }

    fn expire(
        &mut self,
        key: &[u8],
        at: i64,
        relative: bool,
        ms: bool,
        f: ExpireFlags,
        name: &str,
    ) -> Result<Run, ApiError> {
        let svc = &*self.svc;
        let bad = || {
            done(Reply::err(format!(
                "invalid expire time in '{name}' command"
            )))
        };
        let mut when = at;
        if !ms {
            if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
                return Ok(bad());
            }
            when *= 1000;
        }
        let base = if relative { svc.now_ms() } else { 0 };
        if when > i64::MAX - base {
            return Ok(bad());
        }
        when += base;
        let cond = match f {
            ExpireFlags { nx: true, .. } => ExpireCond::Nx,
            ExpireFlags { gt: true, .. } => ExpireCond::Gt,
            ExpireFlags { lt: true, xx, .. } => {
                // XX LT: LT alone would also apply to a key without expiry.
                if xx && svc.pttl(key) == -1 {
                    return Ok(done(Reply::Int(0)));
                }
                ExpireCond::Lt
            }
            ExpireFlags { xx: true, .. } => ExpireCond::Xx,
            _ => ExpireCond::Always,
        };
        let (ok, lsn) = svc.expire_at_ms(key, when, cond)?;
        Ok((Reply::Int(ok as i64), lsn))
    }

    fn info(&self, sections: &[Bytes]) -> String {
        let all = [
            "server",
            "clients",
            "memory",
            "persistence",
            "replication",
            "keyspace",
        ];
        let wanted: Vec<String> = sections.iter().filter_map(|s| command::lower(s)).collect();
        let everything = wanted.is_empty()
            || wanted
                .iter()
                .any(|w| matches!(w.as_str(), "all" | "default" | "everything"));
        let mut out = String::new();
        for name in all {
            if !everything && !wanted.iter().any(|w| w == name) {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            let up = self.shared.started.elapsed().as_secs();
            let body = match name {
                "server" => format!(
                    "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_mode:standalone\r\nos:{} {}\r\n\
                     arch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{up}\r\n\
                     uptime_in_days:{}\r\nexecutable:podium\r\n",
                    std::env::consts::OS,
                    std::env::consts::ARCH,
                    std::process::id(),
                    self.shared.port,
                    up / 86400
                ),
                "clients" => format!(
                    "# Clients\r\nconnected_clients:{}\r\nblocked_clients:0\r\n",
                    self.shared.clients.load(Ordering::Relaxed)
                ),
                "memory" => {
                    let (m, peak, rss) = (used_memory(), used_memory_peak(), rss());
                    format!(
                        "# Memory\r\nused_memory:{m}\r\nused_memory_human:{}\r\n\
                         used_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\n\
                         used_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n",
                        human(m),
                        human(rss),
                        human(peak)
                    )
                }
                "persistence" => {
                    // podium_log_fsyncs shows group commit from the outside:
                    // a pipeline batch costs one fsync, not one per write.
                    let fsyncs = self.svc.storage().map_or(0, |s| s.log.syncs());
                    // A snapshot rotates the log, as an AOF rewrite does.
                    let rewriting = self.svc.snapshot_in_progress() as u8;
                    format!(
                        "# Persistence\r\nloading:0\r\nrdb_bgsave_in_progress:0\r\n\
                         aof_enabled:1\r\naof_rewrite_in_progress:{rewriting}\r\n\
                         podium_log_fsyncs:{fsyncs}\r\n"
                    )
                }
                "replication" => "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n".to_string(),
                _ => {
                    let n = self.svc.dbsize();
                    let mut s = "# Keyspace\r\n".to_string();
                    if n > 0 {
                        let e = self.svc.expiring_keys();
                        s.push_str(&format!("db0:keys={n},expires={e},avg_ttl=0\r\n"));
                    }
                    s
                }
            };
            out.push_str(&body);
        }
        out
    }
}

fn wrongpass() -> Reply {
    Reply::coded("WRONGPASS invalid username-password pair or user is disabled.")
}

fn check_client_name(name: &[u8]) -> Result<(), Reply> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(Reply::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn scan_reply(next: u64, items: Vec<Vec<u8>>) -> Reply {
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Members(items)])
}

/// Members, with their stored scores when `withscores` (`len`: the set's
/// size, see [`stored`]).
fn entries_reply(entries: Vec<Entry>, withscores: bool, nested: bool, len: usize) -> Reply {
    if withscores {
        Reply::Scored {
            items: entries
                .into_iter()
                .map(|e| (e.member, stored(e.score, len)))
                .collect(),
            nested,
        }
    } else {
        Reply::Members(entries.into_iter().map(|e| e.member).collect())
    }
}

/// Redis's index sanitising for ZRANGE/ZREMRANGEBYRANK: inclusive
/// ascending indexes `(start, end)` within `0..len`, or `None` if empty.
fn rank_span(len: i64, mut start: i64, mut end: i64) -> Option<(i64, i64)> {
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    if start > end || start >= len {
        return None;
    }
    Some((start, end.min(len - 1)))
}

fn zadd(
    svc: &Service,
    key: &[u8],
    f: ZaddFlags,
    pairs: Vec<(f64, Bytes)>,
) -> Result<Run, ApiError> {
    let nothing = || if f.incr { Reply::Null } else { Reply::Int(0) };
    if f.xx {
        // No key + XX: nothing to do (and no board to create).
        match svc.key_type(key) {
            None => return Ok(done(nothing())),
            Some(KeyType::Hash) => return Err(ApiError::new(Code::WrongType, "")),
            Some(KeyType::Zset) => {}
        }
    }
    let presence = if f.nx {
        Presence::OnlyNew
    } else if f.xx {
        Presence::OnlyExisting
    } else {
        Presence::Any
    };
    let cond = if f.gt {
        Cond::Greater
    } else if f.lt {
        Cond::Less
    } else {
        Cond::Always
    };
    let op = Some(if f.incr {
        UpdateOp::Incr
    } else {
        UpdateOp::Set
    });
    // INCR takes one pair: its increment, for the reply.
    let incr = pairs.first().map_or(0.0, |p| p.0);
    let entries = pairs
        .into_iter()
        .map(|(score, m)| SubmitRec {
            member: MemberBytes::from_slice(&m),
            score,
            op,
            presence,
            cond,
            name: None,
            data: None,
        })
        .collect();
    let (results, lsn) = svc.zadd(key, entries)?;
    let (mut added, mut updated, mut last) = (0i64, 0i64, None);
    for r in results {
        match r {
            Ok(r) => {
                added += r.created as i64;
                updated += (r.changed && !r.created) as i64;
                last = if f.incr {
                    // The reply is the sum as computed (a stored -0 reads
                    // as 0), even where the stored score did not change.
                    r.applied.then(|| {
                        r.previous
                            .map_or(incr, |p| if p == 0.0 { 0.0 } else { p } + incr)
                    })
                } else {
                    None
                };
            }
            Err(e) if f.incr && e.code == Code::InvalidScore => {
                return Ok((Reply::err("resulting score is not a number (NaN)"), lsn));
            }
            Err(e) => return Ok((api_err(e), lsn)),
        }
    }
    let reply = if f.incr {
        last.map_or(Reply::Null, Reply::Double)
    } else {
        Reply::Int(if f.ch { added + updated } else { added })
    };
    Ok((reply, lsn))
}

/// Known configuration parameters for CONFIG GET (glob, case-insensitive).
const CONFIG: [(&str, &str); 4] = [
    ("maxmemory", "0"),
    ("save", ""),
    ("appendonly", "yes"),
    ("databases", "1"),
];

fn config_get(patterns: &[Bytes]) -> Reply {
    let mut out = Vec::new();
    for (k, v) in CONFIG {
        if patterns
            .iter()
            .any(|p| glob_match(&p.to_ascii_lowercase(), k.as_bytes()))
        {
            out.push((Reply::bulk(k), Reply::bulk(v)));
        }
    }
    Reply::Map(out)
}

fn command_info(s: &Spec) -> Reply {
    let flags = match s.access.least() {
        Some(Scope::Write | Scope::Admin) => vec![Reply::Status("write")],
        _ => vec![Reply::Status("readonly")],
    };
    Reply::Array(vec![
        Reply::bulk(s.name),
        Reply::Int(i64::from(s.arity)),
        Reply::Array(flags),
        Reply::Int(i64::from(s.keys.0)),
        Reply::Int(i64::from(s.keys.1)),
        Reply::Int(i64::from(s.keys.2)),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

/// COMMAND, COMMAND COUNT / DOCS / INFO / LIST.
fn command_cmd(args: &[Bytes]) -> Reply {
    let top = || command::COMMANDS.iter().filter(|s| !s.name.contains('|'));
    let Some(sub) = args.first() else {
        return Reply::Array(top().map(command_info).collect());
    };
    let sub = command::lower(sub).unwrap_or_default();
    match sub.as_str() {
        "count" => Reply::Int(top().count() as i64),
        // Documentation is optional for clients (redis-cli uses it for
        // hints only): an empty map.
        "docs" => Reply::Map(Vec::new()),
        "list" => Reply::Members(top().map(|s| s.name.as_bytes().to_vec()).collect()),
        _ => Reply::Array(
            args[1..]
                .iter()
                .map(|n| {
                    let n = command::lower(n).unwrap_or_default();
                    top()
                        .find(|s| s.name == n)
                        .map_or(Reply::Null, command_info)
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::reply::Reply as R;

    fn session() -> Session {
        Session::new(
            Arc::new(Service::in_memory()),
            Arc::new(Shared::new(Vec::new(), 7379)),
        )
    }

    fn run(s: &mut Session, line: &str) -> Reply {
        let args = crate::resp::codec::split_args(line.as_bytes())
            .unwrap()
            .into_iter()
            .map(Bytes::from)
            .collect();
        s.handle(args).0
    }

    fn b(x: &str) -> Reply {
        R::bulk(x)
    }

    fn members(v: &[&str]) -> Reply {
        R::Members(v.iter().map(|x| x.as_bytes().to_vec()).collect())
    }

    #[test]
    fn ranges_follow_redis_order_on_a_desc_board() {
        let mut s = session();
        assert_eq!(run(&mut s, "zadd lb 1 a 2 b 2 c 3 d"), R::Int(4));
        assert_eq!(
            run(&mut s, "zrange lb 0 -1"),
            members(&["a", "b", "c", "d"])
        );
        assert_eq!(run(&mut s, "zrevrange lb 0 1"), members(&["d", "c"]));
        assert_eq!(run(&mut s, "zrange lb -2 -1"), members(&["c", "d"]));
        assert_eq!(run(&mut s, "zrange lb 5 10"), members(&[]));
        assert_eq!(run(&mut s, "zrank lb a"), R::Int(0));
        assert_eq!(run(&mut s, "zrevrank lb a"), R::Int(3));
        assert_eq!(
            run(&mut s, "zrank lb c withscore"),
            R::Array(vec![R::Int(2), R::Double(2.0)])
        );
        assert_eq!(run(&mut s, "zrank lb zz"), R::Null);
        assert_eq!(run(&mut s, "zrank lb zz withscore"), R::NullArray);
        assert_eq!(
            run(&mut s, "zrangebyscore lb (1 +inf limit 1 5"),
            members(&["c", "d"])
        );
        assert_eq!(
            run(&mut s, "zrevrangebyscore lb 2 -inf"),
            members(&["c", "b", "a"])
        );
        assert_eq!(
            run(&mut s, "zrange lb 2 (1 byscore rev"),
            members(&["c", "b"])
        );
        assert_eq!(
            run(&mut s, "zrangebyscore lb -inf +inf limit -1 5"),
            members(&[])
        );
        assert_eq!(
            run(&mut s, "zrange lb 0 0 withscores"),
            R::Scored {
                items: vec![(b"a".to_vec(), 1.0)],
                nested: true
            }
        );
        assert_eq!(run(&mut s, "zcount lb (1 3"), R::Int(3));
        assert_eq!(run(&mut s, "zscore lb b"), R::Double(2.0));
        assert_eq!(
            run(&mut s, "zmscore lb b nope"),
            R::Array(vec![R::Double(2.0), R::Null])
        );
        assert_eq!(run(&mut s, "zcard lb"), R::Int(4));
        assert_eq!(run(&mut s, "zremrangebyrank lb 0 0"), R::Int(1));
        assert_eq!(run(&mut s, "zrange lb 0 -1"), members(&["b", "c", "d"]));
        assert_eq!(
            run(&mut s, "zpopmin lb"),
            R::Scored {
                items: vec![(b"b".to_vec(), 2.0)],
                nested: false
            }
        );
        assert_eq!(
            run(&mut s, "zpopmax lb 5"),
            R::Scored {
                items: vec![(b"d".to_vec(), 3.0), (b"c".to_vec(), 2.0)],
                nested: true
            }
        );
        assert_eq!(run(&mut s, "exists lb"), R::Int(0));
        assert_eq!(run(&mut s, "zpopmin lb"), R::Array(vec![]));
    }

    #[test]
    fn zadd_flags_and_incr() {
        let mut s = session();
        assert_eq!(run(&mut s, "zadd z xx 1 a"), R::Int(0));
        assert_eq!(run(&mut s, "exists z"), R::Int(0));
        assert_eq!(run(&mut s, "zadd z 1 a 2 b"), R::Int(2));
        assert_eq!(run(&mut s, "zadd z ch 1 a 5 b 1 c"), R::Int(2));
        assert_eq!(run(&mut s, "zadd z gt ch 0 a 9 b"), R::Int(1));
        assert_eq!(run(&mut s, "zadd z nx incr 1 a"), R::Null);
        assert_eq!(run(&mut s, "zadd z incr 1.5 a"), R::Double(2.5));
        assert_eq!(run(&mut s, "zincrby z -0.5 a"), R::Double(2.0));
        assert_eq!(run(&mut s, "zincrby z inf a"), R::Double(f64::INFINITY));
        assert_eq!(
            run(&mut s, "zincrby z -inf a"),
            R::err("resulting score is not a number (NaN)")
        );
        assert_eq!(run(&mut s, "hset h f v"), R::Int(1));
        let wrong = R::coded("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(run(&mut s, "zadd h 1 a"), wrong);
        assert_eq!(run(&mut s, "zadd h xx 1 a"), wrong);
        assert_eq!(run(&mut s, "zscore h a"), wrong);
        assert_eq!(run(&mut s, "hget z a"), wrong);
        assert_eq!(run(&mut s, "zunionstore d 1 h weights x"), wrong);
        assert_eq!(
            run(&mut s, "zunionstore d 1 z weights x"),
            R::err("weight value is not a float")
        );
        assert_eq!(run(&mut s, "zunionstore d 2 z nope weights 2 1"), R::Int(3));
        assert_eq!(run(&mut s, "zscore d b"), R::Double(18.0));
    }

    #[test]
    fn hashes_keys_and_expiry() {
        let mut s = session();
        assert_eq!(run(&mut s, "hset h a 1 b 2"), R::Int(2));
        assert_eq!(run(&mut s, "hmset h c 3"), R::OK);
        assert_eq!(run(&mut s, "hget h a"), b("1"));
        assert_eq!(run(&mut s, "hget h x"), R::Null);
        assert_eq!(run(&mut s, "hmget h a x"), R::Array(vec![b("1"), R::Null]));
        assert_eq!(run(&mut s, "hlen h"), R::Int(3));
        assert_eq!(run(&mut s, "hexists h c"), R::Int(1));
        assert_eq!(run(&mut s, "hdel h c x"), R::Int(1));
        assert_eq!(run(&mut s, "type h"), R::Status("hash"));
        assert_eq!(run(&mut s, "type nope"), R::Status("none"));
        assert_eq!(run(&mut s, "ttl h"), R::Int(-1));
        assert_eq!(run(&mut s, "ttl nope"), R::Int(-2));
        assert_eq!(run(&mut s, "expire h 100"), R::Int(1));
        assert_eq!(run(&mut s, "ttl h"), R::Int(100));
        assert_eq!(run(&mut s, "expire h 50 gt"), R::Int(0));
        assert_eq!(run(&mut s, "expire h 50 lt"), R::Int(1));
        assert_eq!(run(&mut s, "expire nope 50"), R::Int(0));
        assert_eq!(run(&mut s, "persist h"), R::Int(1));
        assert_eq!(run(&mut s, "expire h 10 xx lt"), R::Int(0));
        assert_eq!(
            run(&mut s, "expire h 9223372036854775807"),
            R::err("invalid expire time in 'expire' command")
        );
        assert_eq!(run(&mut s, "dbsize"), R::Int(1));
        assert_eq!(run(&mut s, "keys *"), members(&["h"]));
        assert_eq!(run(&mut s, "pexpire h -1"), R::Int(1));
        assert_eq!(run(&mut s, "exists h h"), R::Int(0));
        assert_eq!(run(&mut s, "select 0"), R::OK);
        assert_eq!(run(&mut s, "select 1"), R::err("DB index is out of range"));
        assert_eq!(
            run(&mut s, "select x"),
            R::err("value is not an integer or out of range")
        );
    }

    #[test]
    fn multi_exec_discard() {
        let mut s = session();
        assert_eq!(run(&mut s, "exec"), R::err("EXEC without MULTI"));
        assert_eq!(run(&mut s, "discard"), R::err("DISCARD without MULTI"));
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(
            run(&mut s, "multi"),
            R::err("MULTI calls can not be nested")
        );
        assert_eq!(run(&mut s, "zadd z 1 a"), R::Status("QUEUED"));
        assert_eq!(run(&mut s, "zadd z x a"), R::Status("QUEUED"));
        assert_eq!(run(&mut s, "zscore z a"), R::Status("QUEUED"));
        assert_eq!(
            run(&mut s, "exec"),
            R::Array(vec![
                R::Int(1),
                R::err("value is not a valid float"),
                R::Double(1.0)
            ])
        );
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "zadd z 2 a"), R::Status("QUEUED"));
        assert!(run(&mut s, "nosuch").is_error());
        assert!(run(&mut s, "zadd z").is_error());
        assert_eq!(
            run(&mut s, "exec"),
            R::coded("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(run(&mut s, "zscore z a"), R::Double(1.0));
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "zadd z 2 a"), R::Status("QUEUED"));
        assert_eq!(
            run(&mut s, "exec x"),
            R::coded("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command")
        );
        assert_eq!(run(&mut s, "exec"), R::err("EXEC without MULTI"));
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "zadd z 2 a"), R::Status("QUEUED"));
        assert_eq!(run(&mut s, "discard"), R::OK);
        assert_eq!(run(&mut s, "zscore z a"), R::Double(1.0));
    }

    #[test]
    fn auth_and_scopes() {
        let keys = vec![
            ApiKey::new("readkey-0123456789abcdef", Scope::Read).unwrap(),
            ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap(),
        ];
        let mut s = Session::new(
            Arc::new(Service::in_memory()),
            Arc::new(Shared::new(keys, 7379)),
        );
        assert!(!s.authenticated());
        assert_eq!(
            run(&mut s, "ping"),
            R::coded("NOAUTH Authentication required.")
        );
        assert!(run(&mut s, "foo").is_error());
        assert_eq!(run(&mut s, "auth nope"), wrongpass());
        assert!(matches!(run(&mut s, "hello 3"), R::Error(e) if e.starts_with(b"NOAUTH HELLO")));
        assert_eq!(run(&mut s, "auth readkey-0123456789abcdef"), R::OK);
        assert_eq!(run(&mut s, "zcard z"), R::Int(0));
        assert_eq!(
            run(&mut s, "zadd z 1 a"),
            R::coded("NOPERM this user has no permissions to run the 'zadd' command")
        );
        assert_eq!(run(&mut s, "auth default writekey-0123456789abcdef"), R::OK);
        assert_eq!(run(&mut s, "zadd z 1 a"), R::Int(1));
        assert_eq!(
            run(&mut s, "flushall"),
            R::coded("NOPERM this user has no permissions to run the 'flushall' command")
        );
    }

    #[test]
    fn connection_commands() {
        let mut s = session();
        assert_eq!(run(&mut s, "ping"), R::Status("PONG"));
        assert_eq!(run(&mut s, "ping hi"), b("hi"));
        assert_eq!(run(&mut s, "echo hi"), b("hi"));
        assert!(
            matches!(run(&mut s, "auth x"), R::Error(e) if e.starts_with(b"ERR AUTH <password> called"))
        );
        assert_eq!(run(&mut s, "auth default x"), R::OK);
        assert_eq!(
            run(&mut s, "hello 4"),
            R::coded("NOPROTO unsupported protocol version")
        );
        assert_eq!(
            run(&mut s, "hello x"),
            R::err("Protocol version is not an integer or out of range")
        );
        assert_eq!(
            run(&mut s, "hello 3 foo"),
            R::err("Syntax error in HELLO option 'foo'")
        );
        assert!(matches!(run(&mut s, "hello 3 setname me"), R::Map(m) if m.len() == 7));
        assert_eq!(s.proto, 3);
        assert_eq!(run(&mut s, "client getname"), b("me"));
        assert_eq!(
            run(&mut s, "client setname a b"),
            R::err("wrong number of arguments for 'client|setname' command")
        );
        assert!(run(&mut s, "client setname \"a b\"").is_error());
        assert_eq!(run(&mut s, "client setname \"\""), R::OK);
        assert_eq!(run(&mut s, "client getname"), R::Null);
        assert_eq!(run(&mut s, "client id"), R::Int(s.id as i64));
        assert_eq!(
            run(&mut s, "config get maxmemory"),
            R::Map(vec![(b("maxmemory"), b("0"))])
        );
        assert_eq!(run(&mut s, "config get nope"), R::Map(vec![]));
        assert!(matches!(run(&mut s, "command count"), R::Int(n) if n > 50));
        assert!(
            matches!(run(&mut s, "info"), R::Verbatim(t) if t.contains("redis_version:7.0.15\r\n") && t.contains("used_memory:"))
        );
        assert!(matches!(run(&mut s, "info keyspace"), R::Verbatim(t) if t == "# Keyspace\r\n"));
        assert_eq!(run(&mut s, "flushall async"), R::OK);
        assert_eq!(run(&mut s, "quit"), R::OK);
        assert!(s.closing);
    }

    #[test]
    fn zscan_and_scan() {
        let mut s = session();
        run(&mut s, "zadd z 1 a 2 b 3 ab");
        assert_eq!(
            run(&mut s, "zscan z 0 match a*"),
            R::Array(vec![b("0"), members(&["a", "1", "ab", "3"])])
        );
        assert_eq!(
            run(&mut s, "zscan nope 0"),
            R::Array(vec![b("0"), members(&[])])
        );
        assert_eq!(run(&mut s, "zscan z 0 type zset"), R::syntax());
        run(&mut s, "hset h f v");
        assert_eq!(
            run(&mut s, "scan 0"),
            R::Array(vec![b("0"), members(&["h", "z"])])
        );
        assert_eq!(
            run(&mut s, "scan 0 type hash"),
            R::Array(vec![b("0"), members(&["h"])])
        );
        assert_eq!(
            run(&mut s, "scan 0 type string"),
            R::Array(vec![b("0"), members(&[])])
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(1000), "1000B");
        assert_eq!(human(2048), "2.00K");
        assert_eq!(human(3 << 20), "3.00M");
    }
}
