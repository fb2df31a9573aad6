//! Lua scripting as Redis 7.0 has it: the interpreter (Lua 5.1 through
//! mlua) with Redis's environment, the script cache by SHA1, and the state
//! of the script running now, which other connections read to answer
//! `BUSY` and which `SCRIPT KILL` sets.
//!
//! One Lua state serves a listener, as Redis has one: scripts run one at a
//! time, each with every other client excluded from the store (the
//! connection side, in `exec::scripting`, runs them inside
//! [`podium_core::keystore::KeyStore::run_atomically`]). The environment is
//! built by `bootstrap.lua`: a fresh environment per run over read-only
//! globals and libraries, the `redis` table, Redis's error handler. No
//! script can change what a later one sees, whoever runs it.
//!
//! A script is stopped (SCRIPT KILL, the hard limit, shutdown) by the
//! count hook between VM instructions and by [`Watch`] inside the library
//! functions that can run long without executing any (pattern matching,
//! string.rep, cjson, cmsgpack…), so no call escapes the time limit.
//! `redis.call` and the entry into a run are on Lua's C API, in
//! [`bridge`]; conversions are in [`convert`], the libraries mlua lacks
//! or whose C versions run unbounded in [`libs`] and [`pattern`].

mod bridge;
pub mod convert;
mod libs;
mod pattern;
mod structlib;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed, Ordering::SeqCst,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mlua::{ffi, Function, Lua, LuaOptions, MultiValue, StdLib, Value};
use parking_lot::{Condvar, MappedMutexGuard, Mutex, MutexGuard};

use super::command::Cmd;
use super::exec::REDIS_VERSION;
use super::num::parse_i64;
use super::reply::Reply;

pub use crate::settings::DEFAULT_SCRIPT_TIME_LIMIT_MS;

/// A script still running this many times the time limit is stopped,
/// written or not: nothing else may stall the store for ever.
pub const HARD_LIMIT_FACTOR: u32 = 10;

/// The Lua heap's bound when the server has no memory budget.
const LUA_MEMORY: usize = 256 << 20;

/// VM instructions between two looks at the kill flag and the clock
/// (Redis's count hook interval).
const HOOK_EVERY: u32 = 100_000;

/// A script runs on the async worker that read it (most take
/// microseconds); one still running after this hands the worker's other
/// duties — among them polling the sockets, so that other clients get
/// `BUSY` and SCRIPT KILL gets through — to another thread.
const LEAVE_WORKER_AFTER: Duration = Duration::from_millis(1);

/// Redis's reply to other clients while a script runs past the limit.
pub const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const KILLED: &[u8] = b"ERR Script killed by user with SCRIPT KILL...";

/// Why a running script is being stopped.
const GO_ON: u8 = 0;
const KILL: u8 = 1;
const TOO_LONG: u8 = 2;
const SHUTDOWN: u8 = 3;

/// The script running now, as every connection sees it.
pub struct Running {
    /// The running script's connection id; 0: none.
    runner: AtomicU64,
    /// When it started, in ms since `epoch`.
    started_ms: AtomicU64,
    epoch: Instant,
    /// It ran a write command: SCRIPT KILL refuses it.
    wrote: AtomicBool,
    /// [`GO_ON`], [`KILL`], [`TOO_LONG`] or [`SHUTDOWN`].
    stop: AtomicU8,
    /// The server is shutting down: a script running now or later stops
    /// at its next look at the clock, as at the hard limit.
    closing: AtomicBool,
    /// The protocol the script reads replies in (`redis.setresp`).
    resp: AtomicU8,
    ended: Mutex<()>,
    ended_cv: Condvar,
}

impl Running {
    fn new() -> Running {
        Running {
            runner: AtomicU64::new(0),
            started_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            wrote: AtomicBool::new(false),
            stop: AtomicU8::new(GO_ON),
            closing: AtomicBool::new(false),
            resp: AtomicU8::new(2),
            ended: Mutex::new(()),
            ended_cv: Condvar::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The connection running a script, if any.
    pub fn runner(&self) -> Option<u64> {
        Some(self.runner.load(SeqCst)).filter(|&id| id != 0)
    }

    /// How long the running script has run.
    pub fn elapsed(&self) -> Duration {
        Duration::from_millis(self.now_ms().saturating_sub(self.started_ms.load(SeqCst)))
    }

    /// Waits up to `d` for the running script to end.
    pub fn wait_end(&self, d: Duration) {
        let mut g = self.ended.lock();
        if self.runner().is_some() {
            self.ended_cv.wait_for(&mut g, d);
        }
    }

    pub fn mark_written(&self) {
        self.wrote.store(true, SeqCst);
    }

    pub fn resp(&self) -> u8 {
        self.resp.load(SeqCst)
    }

    /// SCRIPT KILL.
    pub fn kill(&self) -> Reply {
        if self.runner().is_none() {
            return Reply::coded("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(SeqCst) {
            return Reply::coded(
                "UNKILLABLE Sorry the script already executed write commands against the \
                 dataset. You can either wait the script termination or kill the server in a \
                 hard way using the SHUTDOWN NOSAVE command.",
            );
        }
        let _ = self.stop.compare_exchange(GO_ON, KILL, SeqCst, SeqCst);
        Reply::OK
    }

    /// The server is shutting down: the running script, and any that
    /// starts after, is stopped whether it wrote or not (its writes stay,
    /// as at the hard limit).
    pub fn shut_down(&self) {
        self.closing.store(true, SeqCst);
        let _ = self.stop.compare_exchange(GO_ON, SHUTDOWN, SeqCst, SeqCst);
    }
}

/// VM-free work between two looks at the stop flag and the clock by
/// [`Watch::step`] (a step is a pattern item tried, a value encoded…:
/// tens of nanoseconds at most).
const STEPS_EVERY: u32 = 4096;

/// The looks the count hook takes, for Rust code that runs on a script's
/// behalf without executing VM instructions: whether the script is to
/// stop (SCRIPT KILL, past the hard limit, shutdown), and the worker's
/// other duties handed over once the script has run a while. Also the
/// bound on what such code may build outside the Lua heap.
pub struct Watch {
    running: Arc<Running>,
    hard_limit: Duration,
    /// The Lua heap's bound, which also bounds what a library builds.
    pub memory: usize,
    /// Steps left before the next look (one thread steps at a time: the
    /// script's).
    left: AtomicU32,
}

/// A script is being stopped: the error the hook raises.
pub fn stopped() -> mlua::Error {
    mlua::Error::runtime("script stopped")
}

impl Watch {
    pub fn new(running: Arc<Running>, hard_limit: Duration, memory: usize) -> Watch {
        Watch {
            running,
            hard_limit,
            memory,
            left: AtomicU32::new(STEPS_EVERY),
        }
    }

    /// A watch of no running script (the libraries' own tests).
    #[cfg(test)]
    pub fn idle() -> Watch {
        Watch::new(
            Arc::new(Running::new()),
            Duration::from_secs(3600),
            LUA_MEMORY,
        )
    }

    /// The count hook's look: an error once the script is to stop.
    pub fn check(&self) -> mlua::Result<()> {
        let r = &self.running;
        if r.runner().is_some() {
            let elapsed = r.elapsed();
            if elapsed > self.hard_limit {
                let _ = r.stop.compare_exchange(GO_ON, TOO_LONG, SeqCst, SeqCst);
            }
            if r.closing.load(SeqCst) {
                let _ = r.stop.compare_exchange(GO_ON, SHUTDOWN, SeqCst, SeqCst);
            }
            if elapsed >= LEAVE_WORKER_AFTER {
                podium_core::wait::leave_worker();
            }
        }
        match r.stop.load(SeqCst) {
            GO_ON => Ok(()),
            _ => Err(stopped()),
        }
    }

    /// One step of work: every [`STEPS_EVERY`], a [`Watch::check`].
    #[inline]
    pub fn step(&self) -> mlua::Result<()> {
        let left = self.left.load(Relaxed);
        if left > 0 {
            self.left.store(left - 1, Relaxed);
            return Ok(());
        }
        self.left.store(STEPS_EVERY, Relaxed);
        self.check()
    }

    /// `n` steps at once (bytes copied, in [`STEPS_EVERY`]ths of 64 KiB).
    pub fn steps(&self, n: usize) -> mlua::Result<()> {
        let n = n.min(u32::MAX as usize) as u32;
        let left = self.left.load(Relaxed);
        if left > n {
            self.left.store(left - n, Relaxed);
            return Ok(());
        }
        self.left.store(STEPS_EVERY, Relaxed);
        self.check()
    }

    /// Whether `bytes` more fit in the Lua heap now: what a library
    /// builds in Rust before handing it to Lua is refused up front rather
    /// than built and then refused.
    pub fn fits(&self, lua: &Lua, bytes: usize) -> bool {
        bytes <= self.memory.saturating_sub(lua.used_memory())
    }
}

/// A listener's scripting: the Lua state and its cache, and the running
/// script's state.
pub struct Scripts {
    engine: Mutex<Option<Engine>>,
    /// A connection's turn to run a script: awaited before it takes the
    /// store's gate, so connections waiting for the running script park
    /// as tasks while the worker serves the others' sockets, instead of
    /// holding threads at the gate (scripts run one at a time anyway).
    pub turn: tokio::sync::Mutex<()>,
    pub running: Arc<Running>,
    /// Past this, other clients are answered `BUSY` and SCRIPT KILL works.
    pub busy_after: Duration,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts::new(Duration::from_millis(DEFAULT_SCRIPT_TIME_LIMIT_MS))
    }
}

/// The Lua state with Redis's environment and the scripts compiled in it.
pub struct Engine {
    lua: Lua,
    /// The state's main thread, which runs are entered on.
    state: *mut ffi::lua_State,
    /// What the count hook and the libraries look at while a script runs.
    watch: Arc<Watch>,
    /// Registry references of [`bridge::enter`], of the environment's run
    /// function, and of the field names results are read by.
    enter: std::ffi::c_int,
    run: std::ffi::c_int,
    names: convert::Names,
    cache: HashMap<String, Script>,
    /// The bound on the Lua state's memory, and on a result's size as a
    /// reply.
    limit: usize,
}

// SAFETY: `state` belongs to `lua` (Send with mlua's `send` feature) and
// is used only through `&mut Engine`, which the `Scripts` mutex hands to
// one thread at a time.
unsafe impl Send for Engine {}

/// A compiled script: its function's reference in the registry.
#[derive(Clone, Copy, Debug)]
pub struct Script(std::ffi::c_int);

/// A script's SHA1 in lower-case hex.
pub fn sha1hex(body: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Scripts {
    pub fn new(busy_after: Duration) -> Scripts {
        Scripts {
            engine: Mutex::new(None),
            turn: tokio::sync::Mutex::new(()),
            running: Arc::new(Running::new()),
            busy_after,
        }
    }

    /// Waits for this connection's turn to run a script. Not past the
    /// time limit of the script running now: a request still waiting then
    /// goes on without its turn, to be answered `BUSY` as Redis answers it.
    pub async fn wait_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        if let Ok(g) = self.turn.try_lock() {
            return Some(g);
        }
        let left = match self.running.runner() {
            Some(_) => self.busy_after.saturating_sub(self.running.elapsed()),
            None => self.busy_after,
        };
        tokio::time::timeout(left, self.turn.lock()).await.ok()
    }

    /// The hard limit past which a script is stopped.
    pub fn hard_limit(&self) -> Duration {
        (self.busy_after * HARD_LIMIT_FACTOR).max(Duration::from_secs(1))
    }

    /// The engine, created on first use.
    pub fn engine(&self) -> Result<MappedMutexGuard<'_, Engine>, Reply> {
        let mut g = self.engine.lock();
        if g.is_none() {
            let e = Engine::new(self.running.clone(), self.hard_limit())
                .map_err(|e| Reply::err(format!("cannot start the Lua engine: {e}")))?;
            *g = Some(e);
        }
        Ok(MutexGuard::map(g, |e| e.as_mut().expect("created above")))
    }

    /// SCRIPT FLUSH: a new Lua state, as Redis's.
    pub fn flush(&self) {
        *self.engine.lock() = None;
    }
}

fn lua_err(e: mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message,
        mlua::Error::RuntimeError(m) => m,
        mlua::Error::MemoryError(_) => "not enough memory".into(),
        other => other.to_string(),
    }
}

impl Engine {
    fn new(running: Arc<Running>, hard_limit: Duration) -> mlua::Result<Engine> {
        // SAFETY: the debug library is loaded for the error handler only;
        // the environment removes it from the globals before any script.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        let budget = podium_core::memory::max();
        let limit = if budget > 0 {
            LUA_MEMORY.min((budget / 4) as usize)
        } else {
            LUA_MEMORY
        };
        lua.set_memory_limit(limit)?;
        let watch = Arc::new(Watch::new(running.clone(), hard_limit, limit));
        libs::install(&lua, &watch)?;
        let imp = lua.create_table()?;
        // redis.call and redis.pcall: C functions on Lua's API, with the
        // function that pushes a reply as their upvalue.
        for (name, f) in [
            ("redis_call", bridge::redis_call as ffi::lua_CFunction),
            ("redis_pcall", bridge::redis_pcall),
        ] {
            // SAFETY: pushes one C closure, inside mlua's protected call.
            let func: Function = unsafe {
                lua.exec_raw((), |state| {
                    ffi::lua_pushcfunction(state, convert::push_prepared);
                    ffi::lua_pushcclosure(state, f, 1);
                })?
            };
            imp.raw_set(name, func)?;
        }
        imp.raw_set(
            "take_error",
            lua.create_function(|lua, ()| {
                let v: Value = lua.named_registry_value(PENDING_NAME)?;
                lua.set_named_registry_value(PENDING_NAME, Value::Nil)?;
                Ok(v)
            })?,
        )?;
        imp.raw_set(
            "error_reply",
            lua.create_function(|lua, args: MultiValue| match (args.len(), args.front()) {
                (1, Some(Value::String(s))) => {
                    let s = s.as_bytes();
                    let mut e = Vec::with_capacity(s.len() + 1);
                    if !s.starts_with(b"-") {
                        e.push(b'-');
                    }
                    e.extend_from_slice(&s);
                    error_table(lua, &convert::error_text(&e))
                }
                _ => error_table(lua, b"ERR wrong number or type of arguments"),
            })?,
        )?;
        imp.raw_set(
            "status_reply",
            lua.create_function(|lua, args: MultiValue| match (args.len(), args.front()) {
                (1, Some(Value::String(s))) => {
                    let t = lua.create_table()?;
                    t.raw_set("ok", s.clone())?;
                    Ok(t)
                }
                _ => error_table(lua, b"ERR wrong number or type of arguments"),
            })?,
        )?;
        imp.raw_set(
            "sha1hex",
            raising(&lua, |lua, args: MultiValue| {
                if args.len() != 1 {
                    let e = error_table(lua, b"ERR wrong number of arguments")?;
                    return Ok((Value::Table(e), true));
                }
                let body = match &args[0] {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => lua_number_text(*n).into_bytes(),
                    _ => Vec::new(),
                };
                Ok((Value::String(lua.create_string(sha1hex(&body))?), false))
            })?,
        )?;
        imp.raw_set(
            "log",
            raising(&lua, |lua, args: MultiValue| {
                let fail = |m: &[u8]| -> mlua::Result<(Value, bool)> {
                    Ok((Value::Table(error_table(lua, m)?), true))
                };
                if args.len() < 2 {
                    return fail(b"ERR redis.log() requires two arguments or more.");
                }
                let Some(level) = number(&args[0]) else {
                    return fail(b"ERR First argument must be a number (log level).");
                };
                let level = level as i64;
                if !(0..=3).contains(&level) {
                    return fail(b"ERR Invalid debug level.");
                }
                let text = args
                    .iter()
                    .skip(1)
                    .filter_map(|v| match v {
                        Value::String(s) => {
                            Some(String::from_utf8_lossy(&s.as_bytes()).into_owned())
                        }
                        Value::Integer(i) => Some(i.to_string()),
                        Value::Number(n) => Some(lua_number_text(*n)),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                match level {
                    0 | 1 => tracing::debug!(target: "podium::script", "{text}"),
                    2 => tracing::info!(target: "podium::script", "{text}"),
                    _ => tracing::warn!(target: "podium::script", "{text}"),
                }
                Ok((Value::Nil, false))
            })?,
        )?;
        let r = running.clone();
        imp.raw_set(
            "setresp",
            raising(&lua, move |lua, args: MultiValue| {
                let fail = |m: &[u8]| -> mlua::Result<(Value, bool)> {
                    Ok((Value::Table(error_table(lua, m)?), true))
                };
                if args.len() != 1 {
                    return fail(b"ERR redis.setresp() requires one argument.");
                }
                match number(&args[0]).map(|n| n as i64) {
                    Some(v @ (2 | 3)) => r.resp.store(v as u8, SeqCst),
                    _ => return fail(b"ERR RESP version must be 2 or 3."),
                }
                Ok((Value::Nil, false))
            })?,
        )?;
        imp.raw_set(
            "set_repl",
            raising(&lua, |lua, args: MultiValue| {
                let fail = |m: &[u8]| -> mlua::Result<(Value, bool)> {
                    Ok((Value::Table(error_table(lua, m)?), true))
                };
                if args.len() != 1 {
                    return fail(b"ERR redis.set_repl() requires two arguments.");
                }
                // Nothing to propagate to: the flags are only checked.
                match number(&args[0]).map(|n| n as i64) {
                    Some(0..=3) => Ok((Value::Nil, false)),
                    _ => fail(
                        b"ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                    ),
                }
            })?,
        )?;
        let r = running.clone();
        imp.raw_set(
            "stopping",
            lua.create_function(move |_, ()| Ok(r.stop.load(SeqCst) != GO_ON))?,
        )?;
        imp.raw_set("version", REDIS_VERSION)?;
        imp.raw_set("version_num", version_num())?;
        let run: Function = lua
            .load(include_str!("bootstrap.lua"))
            .set_name("=podium")
            .call(imp)?;
        // SAFETY: sets the hook of the main thread, and puts the bridge's
        // functions and names in the registry, inside mlua's protected
        // call (which runs on the main thread: the state runs are entered
        // on).
        let mut state = std::ptr::null_mut();
        let (mut enter, mut run_ref, mut names) = (0, 0, None);
        unsafe {
            lua.exec_raw::<()>(run, |s| {
                state = s;
                run_ref = ffi::luaL_ref(s, ffi::LUA_REGISTRYINDEX);
                ffi::lua_pushcfunction(s, bridge::enter);
                enter = ffi::luaL_ref(s, ffi::LUA_REGISTRYINDEX);
                names = Some(convert::Names::intern(s));
                ffi::lua_sethook(
                    s,
                    Some(count_hook),
                    ffi::LUA_MASKCOUNT,
                    HOOK_EVERY as std::ffi::c_int,
                );
            })?;
        }
        Ok(Engine {
            lua,
            state,
            watch,
            enter,
            run: run_ref,
            names: names.expect("interned above"),
            cache: HashMap::new(),
            limit,
        })
    }

    /// The compiled script of `sha`, if cached.
    pub fn cached(&self, sha: &str) -> Option<Script> {
        self.cache.get(sha).copied()
    }

    /// Compiles `body` (once) and caches it; Redis's error when it does
    /// not compile.
    pub fn load(&mut self, body: &[u8]) -> Result<(String, Script), Reply> {
        let sha = sha1hex(body);
        if let Some(f) = self.cache.get(&sha) {
            return Ok((sha, *f));
        }
        let compile_error = |e| {
            Reply::err(format!(
                "Error compiling script (new function): {}",
                lua_err(e)
            ))
        };
        let f = self
            .lua
            .load(body)
            .set_name("@user_script")
            .into_function()
            .map_err(compile_error)?;
        let mut r = 0;
        // SAFETY: moves the function from the arguments mlua pushed into
        // the registry, inside its protected call.
        unsafe {
            self.lua
                .exec_raw::<()>(f, |s| r = ffi::luaL_ref(s, ffi::LUA_REGISTRYINDEX))
                .map_err(compile_error)?;
        }
        self.cache.insert(sha.clone(), Script(r));
        Ok((sha, Script(r)))
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha)
            .map(|s| self.cache.contains_key(&s.to_ascii_lowercase()))
            .unwrap_or(false)
    }

    /// Runs `f` with `keys` and `argv` as KEYS and ARGV, `call` running
    /// each command the script sends (it answers the reply). Returns the
    /// reply to the script's caller. `running` must already name the
    /// caller.
    ///
    /// The run is entered on Lua's C API ([`bridge::enter`] under one
    /// `lua_pcall`), and the Lua heap's bound holds throughout: KEYS and
    /// ARGV, each command's reply and what the libraries make count
    /// against it as the script's own values do.
    pub fn run(
        &mut self,
        running: &Running,
        sha: &str,
        f: Script,
        keys: &[Bytes],
        argv: &[Bytes],
        mut call: impl FnMut(&[Bytes]) -> Reply,
    ) -> Reply {
        let state = self.state;
        let _watched = Watched::set(&self.watch);
        let _current = bridge::Current::set(&mut call);
        let watch = &self.watch;
        let mut go_on = || watch.step().is_ok();
        let mut args = bridge::RunArgs {
            keys,
            argv,
            running,
            names: self.names,
            limit: self.limit,
            go_on: &mut go_on,
            out: None,
        };
        // SAFETY: `state` is the main thread of the engine's Lua, used by
        // this thread alone (`&mut self`), its stack balanced between
        // calls; the four values pushed fit in the LUA_MINSTACK slots a
        // balanced stack has, and nothing here raises outside the
        // protected call. `args` outlives the call that reads it.
        let failure = unsafe {
            let top = ffi::lua_gettop(state);
            ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, self.enter);
            ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, self.run);
            ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, f.0);
            ffi::lua_pushlightuserdata(state, &mut args as *mut bridge::RunArgs as *mut c_void);
            let status = ffi::lua_pcall(state, 3, 0, 0);
            let failure = match status {
                ffi::LUA_OK => None,
                ffi::LUA_ERRMEM => Some(b"not enough memory".to_vec()),
                _ => Some(match ffi::lua_type(state, -1) {
                    ffi::LUA_TSTRING => convert::string_at(state, -1).to_vec(),
                    _ => b"unknown error".to_vec(),
                }),
            };
            ffi::lua_settop(state, top);
            failure
        };
        // Lua 5.1 has no emergency collection: a run that filled the heap
        // leaves its garbage there, and the next script would fail to
        // compile or run for want of memory it does not use. A full
        // collection now, when the heap is more than half full, costs what
        // is still live (little between runs).
        if self.lua.used_memory() > self.limit / 2 {
            let _ = self.lua.gc_collect();
        }
        if let Some(p) = bridge::take_panic() {
            std::panic::resume_unwind(p);
        }
        let stopped = |msg: &mut Vec<u8>| match running.stop.load(SeqCst) {
            KILL => *msg = KILLED.to_vec(),
            SHUTDOWN => *msg = b"ERR Script stopped: the server is shutting down".to_vec(),
            TOO_LONG => {
                *msg = format!(
                    "ERR Script stopped: it ran past {} ms, {HARD_LIMIT_FACTOR} times \
                     the script time limit (script_time_limit)",
                    running.elapsed().as_millis()
                )
                .into_bytes()
            }
            _ => {}
        };
        match (failure, args.out) {
            (None, Some(bridge::Outcome::Returned(Some(reply)))) => reply,
            (None, Some(bridge::Outcome::Raised(mut e))) => {
                stopped(&mut e.msg);
                e.reply(sha)
            }
            // Stopped while its result was read.
            (None, _) => {
                let mut msg = KILLED.to_vec();
                stopped(&mut msg);
                Reply::Error(msg)
            }
            (Some(text), _) => {
                let mut msg = b"ERR Error running script: ".to_vec();
                msg.extend_from_slice(&text);
                stopped(&mut msg);
                Reply::Error(msg)
            }
        }
    }
}

impl Running {
    /// Marks `id`'s script as running from now.
    pub fn begin(&self, id: u64) {
        self.started_ms.store(self.now_ms(), SeqCst);
        self.wrote.store(false, SeqCst);
        let stop = match self.closing.load(SeqCst) {
            true => SHUTDOWN,
            false => GO_ON,
        };
        self.stop.store(stop, SeqCst);
        self.resp.store(2, SeqCst);
        self.runner.store(id, SeqCst);
    }

    /// The script ended: waiting clients go on.
    pub fn end(&self) {
        let _g = self.ended.lock();
        self.runner.store(0, SeqCst);
        self.stop.store(GO_ON, SeqCst);
        self.ended_cv.notify_all();
    }
}

thread_local! {
    /// The watch of the script running on this thread (set by
    /// [`Engine::run`]), which the count hook looks at.
    static WATCH: std::cell::Cell<*const Watch> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// [`WATCH`] set for as long as this lives.
struct Watched;

impl Watched {
    fn set(w: &Arc<Watch>) -> Watched {
        WATCH.set(Arc::as_ptr(w));
        Watched
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        WATCH.set(std::ptr::null());
    }
}

/// The count hook, set on the state's main thread and so inherited by
/// every coroutine a script creates: mlua's own hook runs on the thread
/// it was set on only, and a loop inside a coroutine ran unseen by it.
unsafe extern "C-unwind" fn count_hook(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    let w = WATCH.get();
    if w.is_null() {
        return;
    }
    // SAFETY: `Watched` keeps the engine's watch, which outlives the run,
    // set on this thread for the length of the run.
    let stop = unsafe { (*w).check().is_err() };
    if stop {
        // Nothing here is left to drop: the error unwinds as Lua's own.
        unsafe {
            ffi::lua_pushstring(state, c"script stopped".as_ptr());
            ffi::lua_error(state);
        }
    }
}

/// Registry slot of the error table a Rust function raises.
const PENDING_NAME: &str = "podium.error";
const PENDING: &std::ffi::CStr = c"podium.error";

/// A Lua function of `f`, raising the value `f` answers with `true` as a
/// Lua error (through [`PENDING_NAME`], which the environment reads back).
fn raising<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> mlua::Result<(Value, bool)> + Send + 'static,
{
    lua.create_function(move |lua, args: MultiValue| {
        let (v, raise) = f(lua, args)?;
        if raise {
            lua.set_named_registry_value(PENDING_NAME, v)?;
            return Err(mlua::Error::runtime("script error"));
        }
        Ok(v)
    })
}

/// `{err = text}`.
fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(text)?)?;
    Ok(t)
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes()).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Lua 5.1's own text of a number (`%.14g`).
fn lua_number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e14 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// REDIS_VERSION_NUM: 0x00MMmmpp.
fn version_num() -> i64 {
    let mut parts = REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// Whether a request runs a script (EVAL and its kin), by its name alone.
pub fn is_script(args: &[Bytes]) -> bool {
    args.first().is_some_and(|n| {
        ["eval", "evalsha", "eval_ro", "evalsha_ro"]
            .iter()
            .any(|s| n.eq_ignore_ascii_case(s.as_bytes()))
    })
}

// ------------------------------------------------------------- parsing

/// The scripting commands' arguments, in Redis's order of checks.
pub fn parse(name: &str, a: &[Bytes]) -> Result<Cmd, Reply> {
    Ok(match name {
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" => {
            let n = parse_i64(&a[2])
                .ok_or_else(|| Reply::err("value is not an integer or out of range"))?;
            if n > a.len() as i64 - 3 {
                return Err(Reply::err(
                    "Number of keys can't be greater than number of args",
                ));
            }
            if n < 0 {
                return Err(Reply::err("Number of keys can't be negative"));
            }
            let n = n as usize;
            Cmd::Eval {
                script: a[1].clone(),
                by_sha: name.starts_with("evalsha"),
                read_only: name.ends_with("_ro"),
                keys: a[3..3 + n].to_vec(),
                args: a[3 + n..].to_vec(),
            }
        }
        "script|load" => Cmd::ScriptLoad(a[2].clone()),
        "script|exists" => Cmd::ScriptExists(a[2..].to_vec()),
        "script|flush" => {
            let ok = match a.get(2) {
                None => a.len() == 2,
                Some(o) => {
                    a.len() == 3
                        && (o.eq_ignore_ascii_case(b"sync") || o.eq_ignore_ascii_case(b"async"))
                }
            };
            if !ok {
                return Err(Reply::err("SCRIPT FLUSH only support SYNC|ASYNC option"));
            }
            Cmd::ScriptFlush
        }
        _ => Cmd::ScriptKill,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> Reply {
        let s = Scripts::default();
        let mut e = s.engine().unwrap();
        let (sha, f) = match e.load(src.as_bytes()) {
            Ok(x) => x,
            Err(r) => return r,
        };
        s.running.begin(1);
        let r = e.run(
            &s.running,
            &sha,
            f,
            &[Bytes::from("k")],
            &[Bytes::from("a")],
            |args| {
                if &args[0][..] == b"ping" {
                    Reply::Status("PONG")
                } else {
                    Reply::err("unknown")
                }
            },
        );
        s.running.end();
        r
    }

    fn err(src: &str) -> String {
        match run(src) {
            Reply::Error(e) => String::from_utf8(e).unwrap(),
            other => panic!("{src}: {other:?}"),
        }
    }

    /// Runs `src` on `s`'s engine (one Lua state across calls, as on a
    /// listener), `ping` answering PONG and `echo` its argument.
    fn run_on(s: &Scripts, src: &str) -> Reply {
        let mut e = s.engine().unwrap();
        let (sha, f) = match e.load(src.as_bytes()) {
            Ok(x) => x,
            Err(r) => return r,
        };
        s.running.begin(1);
        let r = e.run(
            &s.running,
            &sha,
            f,
            &[Bytes::from("k")],
            &[Bytes::from("a")],
            |args| match &args[0][..] {
                b"ping" => Reply::Status("PONG"),
                b"echo" => Reply::Bulk(args[1].to_vec()),
                _ => Reply::err("unknown"),
            },
        );
        s.running.end();
        r
    }

    fn text(r: &Reply) -> String {
        match r {
            Reply::Error(e) | Reply::Bulk(e) | Reply::StatusText(e) => {
                String::from_utf8_lossy(e).into_owned()
            }
            other => format!("{other:?}"),
        }
    }

    /// What a hostile script tried on the shared state, and what a later
    /// script sees: the environment as it was.
    #[test]
    fn no_script_changes_what_a_later_script_sees() {
        let s = Scripts::default();
        let pristine = |s: &Scripts| {
            assert_eq!(
                run_on(s, "return redis.call('ping')"),
                Reply::StatusText(b"PONG".to_vec())
            );
            assert_eq!(
                run_on(s, "return string.format('%d-%s', 7, 'x')"),
                Reply::bulk("7-x")
            );
            assert_eq!(run_on(s, "return ('ab'):upper()"), Reply::bulk("AB"));
            assert_eq!(run_on(s, "return tonumber('12') + 1"), Reply::Int(13));
            assert_eq!(run_on(s, "return KEYS[1] .. ARGV[1]"), Reply::bulk("ka"));
            assert_eq!(run_on(s, "return type(_G)"), Reply::bulk("table"));
            assert!(text(&run_on(s, "return evil")).contains("nonexistent global variable 'evil'"));
            assert_eq!(
                run_on(s, "return collectgarbage('count') > 0"),
                Reply::Int(1)
            );
        };
        pristine(&s);
        let readonly = "Attempt to modify a readonly table";
        for (attack, refusal) in [
            (
                "local r = redis; redis = {call = function() return 'evil' end}",
                readonly,
            ),
            ("_G.redis = {}", readonly),
            ("_G.tonumber = function() return 7 end", readonly),
            ("tonumber = function() return 7 end", readonly),
            (
                "getmetatable('').__index.format = function() return 'evil' end",
                readonly,
            ),
            (
                "getmetatable('').__index.upper = function() return 'evil' end",
                readonly,
            ),
            ("getmetatable('').__index = {}", readonly),
            ("rawset(getmetatable(''), '__index', {})", readonly),
            ("setmetatable(_G, {})", readonly),
            ("local g = getmetatable(_G); g.__index = {}", readonly),
            ("rawset(_G, 'redis', {})", readonly),
            ("loadstring('redis = nil')()", readonly),
            ("loadstring('tonumber = nil')()", readonly),
            (
                "load(function() return nil end); loadstring('evil = 1')()",
                readonly,
            ),
            ("setfenv(0, {})", "nonexistent global variable 'setfenv'"),
            (
                "getfenv(0).redis = nil",
                "nonexistent global variable 'getfenv'",
            ),
            ("newproxy(true)", "nonexistent global variable 'newproxy'"),
            ("collectgarbage('stop')", "collectgarbage"),
            ("collectgarbage('setpause', 100000)", "collectgarbage"),
        ] {
            let r = run_on(&s, attack);
            assert!(text(&r).contains(refusal), "{attack}: {r:?}");
            pristine(&s);
        }
        // What a script may change is its own: gone for the next one.
        assert_eq!(run_on(&s, "KEYS = {'x'}; return KEYS[1]"), Reply::bulk("x"));
        pristine(&s);
        // Iterating the globals sees them, and none of the removed ones.
        let names = run_on(
            &s,
            "local t = {} for k in pairs(_G) do t[#t + 1] = k end table.sort(t) return t",
        );
        let Reply::Array(names) = names else {
            panic!("{names:?}")
        };
        let names: Vec<String> = names.iter().map(text).collect();
        for want in [
            "redis",
            "KEYS",
            "ARGV",
            "_G",
            "string",
            "tonumber",
            "loadstring",
        ] {
            assert!(names.contains(&want.to_string()), "{want} in {names:?}");
        }
        for gone in [
            "setfenv", "getfenv", "newproxy", "debug", "print", "os", "io",
        ] {
            assert!(!names.contains(&gone.to_string()), "{gone} in {names:?}");
        }
    }

    /// A finalizer set by one script must never run in another's: the
    /// only way to make one (`newproxy`) is gone, and the error values of
    /// the Rust functions do not let their metatable be changed.
    #[test]
    fn no_finalizer_outlives_its_script() {
        let s = Scripts::default();
        let r = run_on(
            &s,
            "local p = newproxy(true); getmetatable(p).__gc = function() redis.call('echo', 'gc') end",
        );
        assert!(
            text(&r).contains("nonexistent global variable 'newproxy'"),
            "{r:?}"
        );
        let r = run_on(
            &s,
            "local ok, e = pcall(cjson.decode, '{'); local m = getmetatable(e); \
             if type(m) == 'table' then m.__gc = function() redis.call('echo', 'gc') end end \
             return type(m)",
        );
        assert!(matches!(&r, Reply::Bulk(b) if b != b"table"), "{r:?}");
    }

    /// redis.call and redis.pcall take every argument Lua can pass them
    /// (`unpack` stops at LUAI_MAXCSTACK, 8000 values, as in Redis), and a
    /// reply of any length: the conversion of each argument into a Lua
    /// reference ran out of room short of that and panicked.
    #[test]
    fn redis_call_takes_as_many_arguments_as_lua_passes() {
        let s = Scripts::default();
        let mut e = s.engine().unwrap();
        let mut run_counting = |src: &str| {
            let (sha, f) = e.load(src.as_bytes()).unwrap();
            s.running.begin(1);
            let r = e.run(&s.running, &sha, f, &[], &[], |args| match &args[0][..] {
                b"count" => Reply::Int(args.len() as i64),
                b"last" => Reply::Bulk(args[args.len() - 1].to_vec()),
                b"range" => {
                    Reply::Members((0..100_000).map(|i| format!("m{i}").into_bytes()).collect())
                }
                _ => Reply::err("unknown"),
            });
            s.running.end();
            r
        };
        for (call, fill) in [
            ("redis.call", "tostring(i)"),
            ("redis.pcall", "tostring(i)"),
            ("redis.call", "i"),
            ("redis.pcall", "i + 0.5"),
        ] {
            let src = |n: usize, cmd: &str| {
                format!(
                    "local t = {{}} for i = 1, {n} do t[i] = {fill} end \
                     return {call}('{cmd}', unpack(t))"
                )
            };
            assert_eq!(
                run_counting(&src(7998, "count")),
                Reply::Int(7999),
                "{call} {fill}"
            );
            let last = match fill {
                "i + 0.5" => "7998.5",
                _ => "7998",
            };
            assert_eq!(
                run_counting(&src(7998, "last")),
                Reply::bulk(last),
                "{call} {fill}"
            );
            let r = run_counting(&src(8000, "count"));
            assert!(
                text(&r).contains("too many results to unpack"),
                "{call} {fill}: {r:?}"
            );
        }
        let r = run_counting("local t = redis.call('range') return {#t, t[1], t[#t]}");
        assert_eq!(
            r,
            Reply::Array(vec![
                Reply::Int(100_000),
                Reply::bulk("m0"),
                Reply::bulk("m99999")
            ])
        );
    }

    #[test]
    fn bytecode_is_refused() {
        let s = Scripts::default();
        assert_eq!(run_on(&s, "return type(string.dump)"), Reply::bulk("nil"));
        let r = run_on(
            &s,
            "local f, e = loadstring('\\27Lua\\81\\0') return {tostring(f), e}",
        );
        assert_eq!(
            r,
            Reply::Array(vec![
                Reply::bulk("nil"),
                Reply::bulk("loadstring refuses a binary chunk: scripts are Lua source")
            ])
        );
        let r = run_on(
            &s,
            "local parts = {'\\27Lua', 'rest'} local i = 0 \
             local f, e = load(function() i = i + 1 return parts[i] end) return {tostring(f), e}",
        );
        assert_eq!(
            r,
            Reply::Array(vec![
                Reply::bulk("nil"),
                Reply::bulk("load refuses a binary chunk: scripts are Lua source")
            ])
        );
        // Source still loads, in the script's own environment.
        assert_eq!(
            run_on(
                &s,
                "return loadstring('return KEYS[1] .. redis.call(\\'echo\\', \\'e\\')')()"
            ),
            Reply::bulk("ke")
        );
        assert_eq!(
            run_on(&s, "local n = 0 return load(function() n = n + 1 if n == 1 then return 'return 5' end end)()"),
            Reply::Int(5)
        );
    }

    #[test]
    fn globals_are_protected() {
        let sha = |s: &str| sha1hex(s.as_bytes());
        assert_eq!(
            err("a=1"),
            format!(
                "ERR user_script:1: Attempt to modify a readonly table script: {}, on @user_script:1.",
                sha("a=1")
            )
        );
        assert_eq!(
            err("return a"),
            format!(
                "ERR user_script:1: Script attempted to access nonexistent global variable 'a' \
                 script: {}, on @user_script:1.",
                sha("return a")
            )
        );
        for src in [
            "redis.foo = 1",
            "string.foo = 1",
            "rawset(_G, 'x', 1)",
            "cjson.x = 1",
        ] {
            assert!(
                err(src).contains("Attempt to modify a readonly table"),
                "{src}"
            );
        }
        for g in [
            "os", "io", "loadfile", "dofile", "print", "debug", "require",
        ] {
            assert!(
                err(&format!("return {g}")).contains("nonexistent global variable"),
                "{g}"
            );
        }
        assert_eq!(run("local x = 1; return x"), Reply::Int(1));
        assert_eq!(run("return KEYS[1] .. ARGV[1]"), Reply::bulk("ka"));
        assert_eq!(run("return string.upper('x')"), Reply::bulk("X"));
    }

    #[test]
    fn redis_functions() {
        assert_eq!(
            run("return redis.call('ping')"),
            Reply::StatusText(b"PONG".to_vec())
        );
        assert_eq!(
            run("return redis.pcall('nosuch')"),
            Reply::coded("ERR unknown")
        );
        assert!(err("return redis.call('nosuch')").starts_with("ERR unknown script: "));
        assert_eq!(
            run("return {pcall(redis.call, 'x')}"),
            Reply::Array(vec![Reply::Null, Reply::bulk("ERR unknown")])
        );
        assert!(err("redis.call()").starts_with(
            "ERR Please specify at least one argument for this redis lib call script:"
        ));
        assert!(err("redis.call({})").starts_with(
            "ERR Lua redis lib command arguments must be strings or integers script:"
        ));
        assert_eq!(
            run("return redis.sha1hex('')"),
            Reply::bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
        );
        assert_eq!(run("return redis.error_reply('x')"), Reply::coded("ERR x"));
        assert_eq!(
            run("return redis.error_reply('MY bad')"),
            Reply::coded("MY bad")
        );
        assert_eq!(
            run("return redis.status_reply(1)"),
            Reply::coded("ERR wrong number or type of arguments")
        );
        assert!(err("redis.setresp(4)").starts_with("ERR RESP version must be 2 or 3. script:"));
        assert_eq!(run("redis.setresp(3); return true"), Reply::Bool(true));
        assert_eq!(
            run("redis.log(redis.LOG_WARNING, 'hi'); return redis.LOG_NOTICE"),
            Reply::Int(2)
        );
        assert_eq!(
            run("redis.set_repl(redis.REPL_ALL); return 1"),
            Reply::Int(1)
        );
        assert_eq!(
            run("return error({err='MY fault'})"),
            Reply::coded(format!(
                "MY fault script: {}, on @user_script:1.",
                sha1hex(b"return error({err='MY fault'})")
            ))
        );
        assert!(err("error('boom')").starts_with("ERR user_script:1: boom script:"));
        assert_eq!(
            run("return +"),
            Reply::err(
                "Error compiling script (new function): user_script:1: unexpected symbol near '+'"
            )
        );
    }

    #[test]
    fn struct_errors_are_lua_errors_at_the_calling_line() {
        let src = "\nreturn struct.pack('>X', 1)";
        assert_eq!(
            err(src),
            format!(
                "ERR user_script:2: bad argument #1 to 'pack' (invalid format option 'X') \
                 script: {}, on @user_script:2.",
                sha1hex(src.as_bytes())
            )
        );
        assert_eq!(
            run("return {pcall(function() return struct.unpack('i4', 'ab') end)}"),
            Reply::Array(vec![
                Reply::Null,
                Reply::bulk("user_script:1: bad argument #2 to 'unpack' (data string too short)")
            ])
        );
        assert_eq!(
            run("return {struct.unpack('>i2', struct.pack('>i2', 513))}"),
            Reply::Array(vec![Reply::Int(513), Reply::Int(3)])
        );
        assert_eq!(run("return struct.size('!4bi')"), Reply::Int(8));
        assert!(err("struct.x = 1").contains("Attempt to modify a readonly table"));
    }

    #[test]
    fn a_killed_script_stops_even_inside_pcall() {
        let s = Scripts::default();
        let mut e = s.engine().unwrap();
        let src = "while true do pcall(function() while true do end end) end";
        let (sha, f) = e.load(src.as_bytes()).unwrap();
        s.running.begin(1);
        let running = s.running.clone();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            running.kill()
        });
        let r = e.run(&s.running, &sha, f, &[], &[], |_| Reply::OK);
        s.running.end();
        assert_eq!(killer.join().unwrap(), Reply::OK);
        let Reply::Error(m) = r else { panic!("{r:?}") };
        assert!(m.starts_with(KILLED), "{}", String::from_utf8_lossy(&m));
    }

    /// Runs `src` on a fresh engine whose hard limit is 1 s, failing the
    /// test (rather than hanging it) if the script is not over within
    /// `within`.
    fn run_bounded(src: &'static str, within: Duration) -> (Reply, Duration) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let s = Scripts::new(Duration::from_millis(50));
            let started = Instant::now();
            let r = run_on(&s, src);
            let _ = tx.send((r, started.elapsed()));
        });
        rx.recv_timeout(within)
            .unwrap_or_else(|_| panic!("still running after {within:?}: {src}"))
    }

    /// Library calls that ran long in C without the count hook firing:
    /// each is stopped at the hard limit, fails cleanly, or ends at once.
    #[test]
    fn library_calls_stop_at_the_hard_limit() {
        let stopped = "ERR Script stopped: it ran past";
        for src in [
            "return string.find(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b')",
            "return string.match(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b')",
            "return string.gsub(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b', 'x')",
            "for w in string.gmatch(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b') do end",
            "return string.find(string.rep('a', 5000), string.rep('.-', 30) .. 'b')",
            "local t = {1} for i = 1, 30 do t = {t, t, t} end return #cjson.encode(t)",
            "local t = {1} for i = 1, 15 do t = {t, t, t, t, t, t, t, t} end return #cmsgpack.pack(t)",
            "local t = {1} for i = 1, 40 do t = {t, t} end return t",
            "local co = coroutine.wrap(function() while true do end end) co()",
        ] {
            let (r, took) = run_bounded(src, Duration::from_secs(20));
            let t = text(&r);
            assert!(
                t.starts_with(stopped)
                    || t.contains("not enough memory")
                    || t.contains("larger than a script's memory bound"),
                "{src}: {t}"
            );
            assert!(took < Duration::from_secs(5), "{src}: took {took:?}");
        }
        // Work that C did in time proportional to its size or worse ends
        // at once here.
        for (src, want) in [
            (
                "return string.find(string.rep('a', 300000), string.rep('a', 150000) .. 'b', 1, true)",
                Reply::Null,
            ),
            ("return #string.rep('', 2^31 - 1)", Reply::Int(0)),
            ("return #string.rep('ab', 3, ',')", Reply::Int(6)),
        ] {
            let (r, took) = run_bounded(src, Duration::from_secs(20));
            assert_eq!(r, want, "{src}");
            assert!(took < Duration::from_secs(1), "{src}: took {took:?}");
        }
        for src in [
            "return #string.rep('x', 2^31 - 1)",
            "return #string.rep('abcdefgh', 2^28)",
            "local t = {} for i = 1, 300 do t[i] = 'x' end return #table.concat(t, string.rep('y', 1e6))",
        ] {
            let (r, took) = run_bounded(src, Duration::from_secs(20));
            assert!(text(&r).contains("not enough memory"), "{src}: {r:?}");
            assert!(took < Duration::from_secs(2), "{src}: took {took:?}");
        }
    }

    #[test]
    fn a_killed_script_stops_inside_pattern_matching() {
        let s = Scripts::default();
        let mut e = s.engine().unwrap();
        let src = "return string.find(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40) .. 'b')";
        let (sha, f) = e.load(src.as_bytes()).unwrap();
        s.running.begin(1);
        let running = s.running.clone();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let started = Instant::now();
            (running.kill(), started)
        });
        let r = e.run(&s.running, &sha, f, &[], &[], |_| Reply::OK);
        s.running.end();
        let (killed, at) = killer.join().unwrap();
        assert_eq!(killed, Reply::OK);
        assert!(
            at.elapsed() < Duration::from_millis(500),
            "{:?}",
            at.elapsed()
        );
        let Reply::Error(m) = r else { panic!("{r:?}") };
        assert!(m.starts_with(KILLED), "{}", String::from_utf8_lossy(&m));
    }

    #[test]
    fn lua_memory_is_bounded() {
        let r = run("local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1e6) .. i end");
        let Reply::Error(m) = r else { panic!("{r:?}") };
        assert!(
            String::from_utf8_lossy(&m).contains("not enough memory"),
            "{}",
            String::from_utf8_lossy(&m)
        );
        // The state goes on serving scripts.
        assert_eq!(run("return 1"), Reply::Int(1));
    }

    #[test]
    fn numkeys_is_checked_in_redis_order() {
        let a = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let e = |s: &str| match parse("eval", &a(s)) {
            Err(Reply::Error(m)) => String::from_utf8(m).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            e("eval x 2 a"),
            "ERR Number of keys can't be greater than number of args"
        );
        assert_eq!(e("eval x -1"), "ERR Number of keys can't be negative");
        assert_eq!(e("eval x y"), "ERR value is not an integer or out of range");
        assert!(
            matches!(parse("eval", &a("eval x 1 k v")), Ok(Cmd::Eval { keys, args, .. }) if keys.len() == 1 && args.len() == 1)
        );
    }
}
