//! Running commands: a [`Session`] (one connection's state: protocol
//! version, authentication, name, MULTI queue) takes a request's
//! arguments, applies Redis's dispatch checks, and runs the parsed
//! [`Cmd`] against the [`KeyStore`], returning the [`Reply`] and the log
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
//!
//! This module holds the session (admission, rate limits, scopes,
//! MULTI/EXEC) and the
//! connection and server commands (PING, HELLO, AUTH, CLIENT, INFO); the
//! command families are in [`keys`], [`hashes`] and [`zset`] (lexicographic
//! ranges and set algebra in [`zsetops`]), COMMAND and CONFIG GET in
//! [`server`].

mod blocking;
mod client;
pub(super) mod databases;
mod hashes;
mod info;
mod keyops;
mod keys;
mod pubsub;
mod scripting;
mod server;
mod strings;
mod zset;
mod zsetops;

pub use blocking::{pass_on, Block};
pub use server::Live;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::clients::{Clients, Registered};
use super::command::{self, lookup, parse, Cmd, Spec};
use super::notify::{self, Events};
use super::reply::Reply;
use super::stats::Stats;
use crate::rate::{ClientRate, RateLimits};
use crate::settings::{ApiKey, Scope};
use podium_core::error::{ApiError, Code};
use podium_core::keystore::{KeyStore, Lsn, Writes};
use podium_core::memory;

/// The version podium reports to Redis clients (the Redis it mirrors).
pub const REDIS_VERSION: &str = "7.0.15";

/// The bounds of one connection's MULTI queue.
#[derive(Debug, Clone, Copy)]
pub struct MultiLimits {
    pub max_commands: usize,
    pub max_bytes: usize,
    /// How long EXEC runs queued commands; the rest are refused (`None`:
    /// no limit).
    pub max_time: Option<Duration>,
}

impl Default for MultiLimits {
    fn default() -> Self {
        MultiLimits {
            max_commands: crate::settings::DEFAULT_MULTI_MAX_COMMANDS,
            max_bytes: crate::settings::DEFAULT_MULTI_MAX_BYTES,
            max_time: Some(Duration::from_millis(
                crate::settings::DEFAULT_EXEC_TIME_LIMIT_MS,
            )),
        }
    }
}

/// Redis's refusal of a command that adds data beyond `maxmemory`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// What every connection of one listener shares.
pub struct Shared {
    pub api_keys: Vec<ApiKey>,
    pub multi: MultiLimits,
    pub clients: AtomicUsize,
    next_id: AtomicU64,
    started: Instant,
    pub port: u16,
    /// The server's rate limits (none unless set).
    pub rate: Arc<RateLimits>,
    /// What INFO, SLOWLOG and CLIENT report of the listener's work.
    pub stats: Stats,
    /// The open connections (CLIENT LIST, KILL).
    pub registry: Arc<Clients>,
    /// The settings CONFIG GET shows and CONFIG SET changes.
    pub config: server::Live,
    /// Lua scripting: the engine, its cache, the script running now.
    pub scripts: Arc<crate::resp::script::Scripts>,
    /// Pub/Sub subscriptions.
    pub pubsub: Arc<crate::resp::pubsub::Hub>,
    /// Keyspace notifications, published on [`Shared::pubsub`].
    pub notify: Arc<crate::resp::notify::Notifier>,
    /// podium's board events on `__podium__:` channels.
    pub events: Arc<crate::resp::events::Forwarders>,
}

impl Shared {
    pub fn new(api_keys: Vec<ApiKey>, port: u16) -> Shared {
        let pubsub: Arc<crate::resp::pubsub::Hub> = Arc::default();
        Shared {
            api_keys,
            multi: MultiLimits::default(),
            clients: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            started: Instant::now(),
            port,
            rate: Arc::default(),
            stats: Stats::default(),
            registry: Arc::default(),
            config: server::Live::default(),
            scripts: Arc::default(),
            notify: Arc::new(crate::resp::notify::Notifier::new(pubsub.clone())),
            events: Arc::default(),
            pubsub,
        }
    }

    /// The position of the key equal to `presented` (constant time per
    /// key).
    fn position_of(&self, presented: &[u8]) -> Option<usize> {
        ApiKey::position_among(&self.api_keys, presented)
    }
}

struct Multi {
    queue: Vec<(&'static Spec, Vec<Bytes>)>,
    /// Argument bytes queued.
    bytes: usize,
    /// A command was refused while queueing: EXEC will abort.
    failed: bool,
}

/// One connection's state.
pub struct Session {
    /// The selected database's store (`db` as the storage interface).
    store: Arc<dyn KeyStore>,
    db: Arc<podium_core::keystore::database::Database>,
    shared: Arc<Shared>,
    pub id: u64,
    /// 2 or 3 (HELLO).
    pub proto: u8,
    /// This connection in the listener's registry (its name lives there).
    pub client: Registered,
    /// CLIENT REPLY OFF / SKIP: replies are not sent (SKIP: the next
    /// command's only).
    pub reply_mode: ReplyMode,
    /// The authenticated key's scope; with no keys configured, `Admin`.
    scope: Option<Scope>,
    multi: Option<Multi>,
    /// QUIT was received: reply, then close.
    pub closing: bool,
    rate: ClientRate,
    /// The command runs straight from the connection (not queued, not in
    /// EXEC or a script): a blocking pop may block.
    may_block: bool,
    /// A blocking pop found nothing: the connection waits on it.
    blocked: Option<Block>,
    /// Pub/Sub channels and patterns, and the queue their messages come
    /// through.
    subs: pubsub::Subs,
    /// `notify-keyspace-events` as the running command found it.
    notify_flags: u32,
}

fn api_err(e: ApiError) -> Reply {
    match e.code {
        Code::WrongType => {
            Reply::coded("WRONGTYPE Operation against a key holding the wrong kind of value")
        }
        Code::OutOfMemory => Reply::coded(OOM),
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

/// CLIENT REPLY's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the next command's reply.
    Skip,
    /// Skipping this command's reply.
    Skipping,
}

impl Session {
    /// A session not limited by client address.
    pub fn new(store: Arc<dyn KeyStore>, shared: Arc<Shared>) -> Session {
        Session::for_conn(store, shared, None, None)
    }

    /// The session of a connection from `peer` to `local`.
    pub fn for_conn(
        store: Arc<dyn KeyStore>,
        shared: Arc<Shared>,
        peer: Option<SocketAddr>,
        local: Option<SocketAddr>,
    ) -> Session {
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let scope = shared.api_keys.is_empty().then_some(Scope::Admin);
        let rate = shared.rate.client(peer.map(|p| p.ip()));
        let client = shared.registry.register(id, peer, local);
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        let db = Arc::new(podium_core::keystore::database::Database::new(store, 0));
        let subs = pubsub::Subs::new(shared.pubsub.clone(), id);
        Session {
            store: db.clone(),
            db,
            shared,
            id,
            proto: 2,
            client,
            reply_mode: ReplyMode::On,
            scope,
            multi: None,
            closing: false,
            rate,
            may_block: false,
            blocked: None,
            subs,
            notify_flags: 0,
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

    /// Runs one request (non-empty arguments), counting it for INFO and
    /// the slow log.
    pub fn handle(&mut self, args: Vec<Bytes>) -> Run {
        if self.reply_mode == ReplyMode::Skip {
            self.reply_mode = ReplyMode::Skipping;
        } else if self.reply_mode == ReplyMode::Skipping {
            self.reply_mode = ReplyMode::On;
        }
        if let Some(r) = self.busy_refusal(&args) {
            self.flag_multi();
            return done(r);
        }
        let spec = match self.admit(&args) {
            Ok(s) => s,
            Err(r) => {
                let index = command::resolve(&args).ok().map(command::index);
                self.shared.stats.rejected(index, &r);
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
            if !matches!(spec.name, "exec" | "discard" | "multi" | "quit" | "reset") {
                let bytes: usize = args.iter().map(|a| a.len() + 16).sum();
                let limits = self.shared.multi;
                if m.queue.len() >= limits.max_commands || m.bytes + bytes > limits.max_bytes {
                    m.failed = true;
                    return done(Reply::err(format!(
                        "MULTI queue is full: a transaction holds at most {} commands and \
                         {} bytes of arguments (multi_max_commands, multi_max_bytes); \
                         EXEC will discard it",
                        limits.max_commands, limits.max_bytes
                    )));
                }
                m.bytes += bytes;
                m.queue.push((spec, args));
                self.client
                    .client
                    .multi
                    .store(m.queue.len() as i64, Ordering::Relaxed);
                return done(Reply::Status("QUEUED"));
            }
        }
        let started = Instant::now();
        let run = match spec.name {
            "exec" => self.exec_multi(),
            "discard" => done(match self.multi.take() {
                Some(_) => Reply::OK,
                None => Reply::err("DISCARD without MULTI"),
            }),
            _ => {
                self.may_block = true;
                let run = self.run_spec(spec, &args);
                self.may_block = false;
                run
            }
        };
        self.counted(spec, &args, started, &run.0);
        run
    }

    /// The store the session runs on.
    pub fn store(&self) -> &Arc<dyn KeyStore> {
        &self.store
    }

    /// Counts a command that ran (INFO's stats, the client's last command,
    /// the slow log).
    fn counted(&self, spec: &'static Spec, args: &[Bytes], started: Instant, reply: &Reply) {
        let ended = Instant::now();
        let usec = ended.saturating_duration_since(started).as_micros() as u64;
        let index = command::index(spec);
        let c = &self.client.client;
        c.ran(index, ended);
        c.multi.store(
            self.multi.as_ref().map_or(-1, |m| m.queue.len() as i64),
            Ordering::Relaxed,
        );
        self.shared.stats.ran(index, usec, reply);
        super::record(index, !matches!(reply, Reply::Error(_)), ended - started);
        // The name is copied only for a command the slow log keeps.
        self.shared.stats.maybe_slow(usec, args, &c.addr, || {
            c.name.lock().clone().unwrap_or_default()
        });
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
        // The one look at the setting a command pays while it is empty.
        self.notify_flags = self.shared.notify.flags();
        // With notifications on, a write runs with other writers excluded,
        // so its events are published in the order of the writes and
        // what it created or emptied is seen as it left it.
        let exclusive = self.notify_flags != 0 && spec.writes();
        if self.may_touch_boards(spec) && !exclusive {
            return self.run_looked_up(spec, args, cmd);
        }
        let store = self.store.clone();
        store.atomically(spec.writes_of(args), || {
            match self.key_refusal(spec, args) {
                Some(r) => done(r),
                None => self.run_looked_up(spec, args, cmd),
            }
        })
    }

    /// Runs `cmd`, first publishing `keymiss` for each key it reads that
    /// is missing, when key-miss events are on (Redis publishes them from
    /// its read lookups, before the command's own events).
    fn run_looked_up(&mut self, spec: &'static Spec, args: &[Bytes], cmd: Cmd) -> Run {
        if self.notify_flags & notify::KEY_MISS != 0 {
            let ev = self.events();
            if ev.wants(notify::KEY_MISS) {
                for key in notify::read_keys(spec, args) {
                    if self.store.key_type(key).is_none() {
                        ev.emit(notify::KEY_MISS, "keymiss", key);
                    }
                }
            }
        }
        self.run(cmd)
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
        if self.may_touch_boards(spec) {
            return None;
        }
        // A key that lands in another database (COPY … DB, MOVE) is
        // checked where it lands: a board there is overwritten as surely.
        let elsewhere = databases::other_database_key(spec, args).is_some_and(|(db, key)| {
            db != self.db.index()
                && podium_core::keystore::database::Database::new(self.db.store().clone(), db)
                    .names_board(key)
        });
        if !elsewhere && !spec.key_args(args).any(|k| self.store.names_board(k)) {
            return None;
        }
        Some(Reply::coded(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
        ))
    }

    /// `processCommand`'s checks before a command runs or is queued:
    /// within the rate limits (every command, AUTH included, takes a
    /// token), known, right arity, authenticated, allowed for the key's
    /// scope on the keys named.
    fn admit(&self, args: &[Bytes]) -> Result<&'static Spec, Reply> {
        if let Err(r) = self.rate.take() {
            return Err(Reply::coded(format!("RATELIMITED {}", r.message())));
        }
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
        if let Some(r) = self.key_refusal(spec, args) {
            return Err(r);
        }
        // Redis's `denyoom` check; for EXEC, when a queued command has it.
        let adds_data = match (&self.multi, spec.name) {
            (Some(m), "exec") => m.queue.iter().any(|(s, _)| s.deny_oom()),
            _ => spec.deny_oom(),
        };
        if adds_data && memory::full() {
            return Err(Reply::coded(OOM));
        }
        if let Some(r) = self.subscribed_refusal(spec) {
            return Err(r);
        }
        Ok(spec)
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
        let store = self.store.clone();
        let mut lsn = 0;
        let mut writes = Writes::none();
        for (spec, args) in &m.queue {
            spec.add_writes(args, &mut writes);
            // Keys after a SELECT are another database's.
            if spec.name == "select" {
                writes = Writes::Any;
            }
        }
        let limit = self.shared.multi.max_time;
        // Off the worker: a transaction's length is the client's to choose,
        // and while it runs here the worker's sockets must still be served
        // (reads beside it, other clients).
        let replies = podium_core::wait::off_workers(|| {
            store.atomically(writes, || {
                let started = Instant::now();
                m.queue
                    .into_iter()
                    .enumerate()
                    .map(|(i, (spec, args))| {
                        // The replies gathered so far are held until EXEC
                        // answers: past the budget the rest are refused
                        // rather than built.
                        if i > 0 && memory::over() {
                            return Reply::coded(OOM);
                        }
                        // Writers wait while a transaction runs: past its time
                        // limit the rest of it is refused.
                        if let Some(limit) = limit.filter(|l| i > 0 && started.elapsed() > *l) {
                            return Reply::coded(format!(
                                "TIMEOUT transaction ran past its time limit of {} ms \
                             (exec_time_limit); this command did not run",
                                limit.as_millis()
                            ));
                        }
                        let started = Instant::now();
                        let (r, l) = self.run_spec(spec, &args);
                        self.counted(spec, &args, started, &r);
                        lsn = lsn.max(l);
                        r
                    })
                    .collect()
            })
        });
        (Reply::Array(replies), lsn)
    }

    /// The keyspace events of the running command, in the selected
    /// database.
    fn events(&self) -> Events<'_> {
        Events::with_flags(&self.shared.notify, self.notify_flags, self.db.index())
    }

    /// Runs a parsed command.
    pub fn run(&mut self, cmd: Cmd) -> Run {
        // Only the command the connection sent may block, never one that a
        // command it sent runs in turn (a script's).
        self.may_block = std::mem::take(&mut self.may_block) && matches!(cmd, Cmd::BZPop { .. });
        match self.run_inner(cmd) {
            Ok(r) => r,
            Err(e) => done(api_err(e)),
        }
    }

    fn run_inner(&mut self, cmd: Cmd) -> Result<Run, ApiError> {
        let store = self.store.clone();
        let store = &*store;
        Ok(match cmd {
            Cmd::Ping(m) => done(self.ping(m)),
            Cmd::Echo(m) => done(Reply::bulk(m)),
            c @ (Cmd::Subscribe { .. }
            | Cmd::Unsubscribe { .. }
            | Cmd::Publish(..)
            | Cmd::PubsubChannels(_)
            | Cmd::PubsubNumsub(_)
            | Cmd::PubsubNumpat
            | Cmd::PubsubHelp) => done(self.pubsub_cmd(c)),
            Cmd::Hello(args) => done(self.hello(&args)),
            Cmd::Auth { user, pass } => done(self.auth(user.as_deref(), &pass)),
            c @ (Cmd::Select(_)
            | Cmd::FlushDb
            | Cmd::SwapDb(..)
            | Cmd::Move { .. }
            | Cmd::Copy { db: Some(_), .. }) => self.database_cmd(c)?,
            Cmd::Quit => {
                self.closing = true;
                done(Reply::OK)
            }
            Cmd::Command(args) => done(server::command_cmd(&args)),
            Cmd::Info(sections) => done(Reply::Verbatim(self.info(&sections))),
            Cmd::ConfigGet(patterns) => done(self.config_get(&patterns)),
            Cmd::ClientSetName(name) => done(match check_client_name(&name) {
                Ok(()) => {
                    *self.client.client.name.lock() = (!name.is_empty()).then(|| name.to_vec());
                    Reply::OK
                }
                Err(r) => r,
            }),
            Cmd::ClientGetName => done(match &*self.client.client.name.lock() {
                Some(n) => Reply::bulk(n),
                None => Reply::Null,
            }),
            Cmd::ClientSetInfo(attr, value) => done(self.client_setinfo(&attr, &value)),
            Cmd::ClientId => done(Reply::Int(self.id as i64)),
            c @ (Cmd::ClientList { .. }
            | Cmd::ClientInfo
            | Cmd::ClientKill(_)
            | Cmd::ClientNoEvict(_)
            | Cmd::ClientReply(_)
            | Cmd::ClientPause { .. }
            | Cmd::ClientUnpause
            | Cmd::Reset) => done(self.client_cmd(c)),
            c @ (Cmd::ConfigSet(_)
            | Cmd::ConfigResetStat
            | Cmd::SlowlogGet(_)
            | Cmd::SlowlogLen
            | Cmd::SlowlogReset
            | Cmd::Time
            | Cmd::Role
            | Cmd::Lolwut
            | Cmd::Save
            | Cmd::BgSave
            | Cmd::LastSave) => done(self.server_cmd(c)),
            c @ (Cmd::DbSize
            | Cmd::Flush
            | Cmd::Exists { .. }
            | Cmd::Del { .. }
            | Cmd::Type { .. }
            | Cmd::Keys { .. }
            | Cmd::Scan { .. }
            | Cmd::Expire { .. }
            | Cmd::Ttl { .. }
            | Cmd::RandomKey
            | Cmd::Persist { .. }) => keys::run(store, c, &self.events())?,
            Cmd::Multi => done(if self.multi.is_some() {
                Reply::err("MULTI calls can not be nested")
            } else {
                self.multi = Some(Multi {
                    queue: Vec::new(),
                    bytes: 0,
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
            c @ (Cmd::ZAdd { .. }
            | Cmd::ZScore { .. }
            | Cmd::ZMScore { .. }
            | Cmd::ZRank { .. }
            | Cmd::ZCard { .. }
            | Cmd::ZCount { .. }
            | Cmd::ZRange { .. }
            | Cmd::ZRem { .. }
            | Cmd::ZRemRangeByRank { .. }
            | Cmd::ZRemRangeByScore { .. }
            | Cmd::ZPop { .. }
            | Cmd::ZStore { .. }
            | Cmd::ZScan { .. }
            | Cmd::ZRandMember { .. }
            | Cmd::ZMPop { .. }) => zset::run(store, c, &self.events())?,
            c @ (Cmd::ZLexCount { .. }
            | Cmd::ZRemRangeByLex { .. }
            | Cmd::ZAlgebra { .. }
            | Cmd::ZInterCard { .. }
            | Cmd::ZDiffStore { .. }
            | Cmd::ZRangeStore { .. }) => zsetops::run(store, c, &self.events())?,
            c @ (Cmd::HSet { .. }
            | Cmd::HGet { .. }
            | Cmd::HMGet { .. }
            | Cmd::HDel { .. }
            | Cmd::HGetAll { .. }
            | Cmd::HExists { .. }
            | Cmd::HLen { .. }
            | Cmd::HKeys { .. }
            | Cmd::HVals { .. }
            | Cmd::HSetNx { .. }
            | Cmd::HIncrBy { .. }
            | Cmd::HStrLen { .. }
            | Cmd::HRandField { .. }
            | Cmd::HScan { .. }) => hashes::run(store, c, &self.events())?,
            c @ Cmd::BZPop { .. } => blocking::run(self, store, c)?,
            Cmd::ClientUnblock { id, error } => done(self.client_unblock(id, error)),
            c @ (Cmd::Rename { .. }
            | Cmd::Copy { .. }
            | Cmd::Object { .. }
            | Cmd::ObjectHelp
            | Cmd::MemoryUsage(_)
            | Cmd::MemoryHelp) => keyops::run(store, c, &self.events())?,
            Cmd::Str(c) => strings::run(store, c, &self.events())?,
            c @ (Cmd::Eval { .. }
            | Cmd::ScriptLoad(_)
            | Cmd::ScriptExists(_)
            | Cmd::ScriptFlush
            | Cmd::ScriptKill) => self.script_cmd(c),
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
        match self.shared.position_of(pass) {
            Some(i) => {
                self.scope = Some(self.shared.api_keys[i].scope);
                self.rate.set_key(Some(i));
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
                *self.client.client.name.lock() =
                    (!args[j + 1].is_empty()).then(|| args[j + 1].to_vec());
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
            self.client.client.resp.store(v, Ordering::Relaxed);
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

#[cfg(test)]
pub(super) mod testutil {
    pub(super) use super::*;
    pub(super) use crate::resp::reply::Reply as R;
    pub(super) use podium_store::service::Service;

    pub(super) fn session() -> Session {
        Session::new(
            Arc::new(Service::in_memory()),
            Arc::new(Shared::new(Vec::new(), 7379)),
        )
    }

    pub(super) fn run(s: &mut Session, line: &str) -> Reply {
        let args = crate::resp::codec::split_args(line.as_bytes())
            .unwrap()
            .into_iter()
            .map(Bytes::from)
            .collect();
        s.handle(args).0
    }

    pub(super) fn b(x: &str) -> Reply {
        R::bulk(x)
    }

    pub(super) fn members(v: &[&str]) -> Reply {
        R::Members(v.iter().map(|x| x.as_bytes().to_vec()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;

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
    fn exec_refuses_what_is_left_past_its_time_limit() {
        let mut shared = Shared::new(Vec::new(), 7379);
        shared.multi.max_time = Some(std::time::Duration::from_nanos(1));
        let mut s = Session::new(Arc::new(Service::in_memory()), Arc::new(shared));
        assert_eq!(run(&mut s, "multi"), R::OK);
        for line in ["zadd z 1 a", "zadd z 1 b", "ping"] {
            assert_eq!(run(&mut s, line), R::Status("QUEUED"));
        }
        let R::Array(replies) = run(&mut s, "exec") else {
            panic!("EXEC answers an array")
        };
        // The first command always runs; the nanosecond is then spent.
        assert_eq!(replies[0], R::Int(1));
        let refused = R::coded(
            "TIMEOUT transaction ran past its time limit of 0 ms (exec_time_limit); \
             this command did not run",
        );
        assert_eq!(replies[1..], [refused.clone(), refused]);
        assert_eq!(run(&mut s, "zcard z"), R::Int(1));
    }

    #[test]
    fn transactions_name_the_keys_they_change() {
        use super::command::lookup;
        let w = |line: &str| {
            let args: Vec<Bytes> = crate::resp::codec::split_args(line.as_bytes())
                .unwrap()
                .into_iter()
                .map(Bytes::from)
                .collect();
            lookup(&args).unwrap().writes_of(&args)
        };
        assert_eq!(w("zadd a 1 m"), Writes::key(b"a"));
        assert_eq!(w("zrange a 0 -1"), Writes::none());
        assert_eq!(w("keys *"), Writes::none());
        assert_eq!(w("zunionstore d 2 a b"), Writes::key(b"d"));
        let mut both = Writes::key(b"a");
        both.add(b"b");
        assert_eq!(w("del a b"), both);
        assert_eq!(w("flushall"), Writes::Any);
        assert_eq!(w("hset h f v"), Writes::key(b"h"));
        assert_eq!(w("expire a 10"), Writes::key(b"a"));
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

    /// Every command takes a token; a refused one is `-RATELIMITED`, a
    /// refusal while queueing aborts the transaction, and the connection
    /// goes on once the bucket has refilled.
    #[test]
    fn commands_are_rate_limited() {
        let keys = vec![ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap()];
        let mut shared = Shared::new(keys, 7379);
        shared.rate = Arc::new(crate::rate::RateLimits::new(
            Some("3/h".parse().unwrap()),
            None,
            1,
        ));
        let mut s = Session::new(Arc::new(Service::in_memory()), Arc::new(shared));
        // Before AUTH no key is known: not limited by it.
        assert!(run(&mut s, "ping").is_error());
        assert_eq!(run(&mut s, "auth writekey-0123456789abcdef"), R::OK);
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "zadd z 1 a"), R::Status("QUEUED"));
        assert_eq!(run(&mut s, "zadd z 2 b"), R::Status("QUEUED"));
        let R::Error(e) = run(&mut s, "zadd z 3 c") else {
            panic!("not refused")
        };
        let e = String::from_utf8(e).unwrap();
        assert!(
            e.starts_with("RATELIMITED rate limit of this API key (3/h) reached: retry in "),
            "{e}"
        );
        let R::Error(e) = run(&mut s, "exec") else {
            panic!("not refused")
        };
        assert!(
            e.starts_with(b"EXECABORT"),
            "{}",
            String::from_utf8_lossy(&e)
        );
        assert!(run(&mut s, "zcard z").is_error());
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
    fn human_sizes() {
        assert_eq!(info::human(1000), "1000B");
        assert_eq!(info::human(2048), "2.00K");
        assert_eq!(info::human(3 << 20), "3.00M");
    }
}
