//! The bridge between a running script and the server, on Lua's C API:
//! `redis.call` and `redis.pcall` (arguments read straight off the Lua
//! stack, the reply pushed straight onto it), and the entry into a run
//! (KEYS and ARGV made, the script called, its result read). No mlua
//! value, reference, lock or protected-call closure is made per value or
//! per call: a short script's cost is mostly its commands.
//!
//! Lua raises errors with `longjmp`, which must never cross a Rust frame
//! that owns anything. Each function here therefore does its Rust work
//! (reading arguments, running the command, reading the result) in calls
//! that never raise, and its Lua work (making values, raising) only where
//! no Rust frame between it and the enclosing `lua_pcall` owns anything:
//! a reply is pushed by [`convert::push_prepared`] under a `lua_pcall` of
//! its own, and only once everything the bridge owns is dropped does it
//! raise. Everything made in Lua counts against the Lua heap's bound.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::{Bytes, BytesMut};
use mlua::ffi::{self, lua_State};

use super::super::reply::Reply;
use super::convert::{self, Names, Prepared, ScriptError};
use super::{Running, WATCH};

/// The running script's command function: the command's words, its reply.
pub type CallFnOf<'a> = dyn FnMut(&[Bytes]) -> Reply + 'a;
/// The same with its lifetime erased.
type CallFn = CallFnOf<'static>;

thread_local! {
    /// Set by [`Current`] while a script runs on this thread.
    static CALL: Cell<Option<*mut CallFn>> = const { Cell::new(None) };
    /// A command that panicked inside a script: the panic goes on once
    /// the script is over (it cannot unwind through Lua's C frames).
    static PANIC: RefCell<Option<Box<dyn Any + Send>>> = const { RefCell::new(None) };
    /// A command's words, and where each ends in their one buffer: kept
    /// from call to call (a command a script runs does not run Lua, so
    /// one call at a time uses them).
    static WORDS: RefCell<(Vec<Bytes>, Vec<usize>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// [`CALL`] set for as long as this lives.
pub struct Current;

impl Current {
    pub fn set<'a>(f: &'a mut CallFnOf<'a>) -> Current {
        let p: *mut CallFnOf<'a> = f;
        // SAFETY: only the lifetime is erased; `Current` clears the slot
        // when dropped, before `f`'s borrow ends.
        let p: *mut CallFn = unsafe { std::mem::transmute(p) };
        CALL.set(Some(p));
        Current
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        CALL.set(None);
    }
}

/// The panic of a command run by the script that just ended, if any.
pub fn take_panic() -> Option<Box<dyn Any + Send>> {
    PANIC.with(|p| p.borrow_mut().take())
}

/// The protocol the running script reads replies in.
fn resp() -> u8 {
    let w = WATCH.get();
    if w.is_null() {
        return 2;
    }
    // SAFETY: `Watched` keeps the watch set for the length of the run.
    unsafe { (*w).running.resp() }
}

/// `redis.call`: the command's error is raised (as its `{err=…}` table).
/// Its one upvalue is [`convert::push_prepared`].
pub unsafe extern "C-unwind" fn redis_call(state: *mut lua_State) -> c_int {
    unsafe { call(state, true) }
}

/// `redis.pcall`: the command's error is returned.
pub unsafe extern "C-unwind" fn redis_pcall(state: *mut lua_State) -> c_int {
    unsafe { call(state, false) }
}

unsafe fn call(state: *mut lua_State, raise: bool) -> c_int {
    // A C function has LUA_MINSTACK free slots above its arguments: the
    // two pushed here need no check (which could raise).
    let (status, failed) = {
        // SAFETY (all below): `state` is the calling thread; `prepared`
        // outlives the protected call that reads it.
        let prepared = unsafe { command(state) };
        let failed = prepared.is_error();
        unsafe {
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
            ffi::lua_pushlightuserdata(state, &prepared as *const Prepared as *mut c_void);
            (ffi::lua_pcall(state, 1, 1, 0), failed)
        }
        // `prepared` is dropped here, before anything can raise.
    };
    if status != ffi::LUA_OK || (raise && failed) {
        // The pushing's own error (memory), or the reply's error table.
        unsafe { ffi::lua_error(state) }
    }
    1
}

/// Reads the command off the stack and runs it. Never raises: every
/// refusal is an error reply.
///
/// The words are copied into one buffer, shared by the `Bytes` the
/// command sees: one allocation per call however many words, and a
/// command keeping a word (a member's name) clones a reference, not the
/// bytes.
unsafe fn command(state: *mut lua_State) -> Prepared {
    let refuse = |msg: &str| Prepared::new(Reply::err(msg), resp());
    let n = unsafe { ffi::lua_gettop(state) };
    let mut size = 0;
    for i in 1..=n {
        // SAFETY: `i` is a valid index.
        match unsafe { ffi::lua_type(state, i) } {
            ffi::LUA_TSTRING => size += unsafe { ffi::lua_objlen(state, i) },
            // What `%.17g` prints at most.
            ffi::LUA_TNUMBER => size += 32,
            _ => return refuse("Lua redis lib command arguments must be strings or integers"),
        }
    }
    if n == 0 {
        return refuse("Please specify at least one argument for this redis lib call");
    }
    let Some(f) = CALL.get() else {
        return refuse("redis.call/pcall can only be called inside a script invocation");
    };
    let reply = WORDS.with(|w| {
        let (words, ends) = &mut *w.borrow_mut();
        let mut buf = BytesMut::with_capacity(size);
        for i in 1..=n {
            // SAFETY: strings are read without conversion, numbers as
            // numbers (the types were checked above).
            unsafe {
                if ffi::lua_type(state, i) == ffi::LUA_TSTRING {
                    buf.extend_from_slice(convert::string_at(state, i));
                } else {
                    convert::number_text(ffi::lua_tonumber(state, i), &mut buf);
                }
            }
            ends.push(buf.len());
        }
        let all = buf.split().freeze();
        let mut start = 0;
        for &end in ends.iter() {
            words.push(all.slice(start..end));
            start = end;
        }
        ends.clear();
        // SAFETY: set by `Current` for the length of the run on this
        // thread, to a closure that outlives it; nothing else calls it
        // meanwhile (a command a script runs does not run Lua).
        let reply = catch_unwind(AssertUnwindSafe(|| unsafe { (*f)(words) }));
        words.clear();
        reply
    });
    let reply = reply.unwrap_or_else(|p| {
        PANIC.with(|slot| *slot.borrow_mut() = Some(p));
        Reply::err("the command failed")
    });
    Prepared::new(reply, resp())
}

/// What a run hands [`enter`], and what it answers.
pub struct RunArgs<'a> {
    pub keys: &'a [Bytes],
    pub argv: &'a [Bytes],
    pub running: &'a Running,
    pub names: Names,
    /// The bound on the result's size as a reply.
    pub limit: usize,
    pub go_on: &'a mut dyn FnMut() -> bool,
    pub out: Option<Outcome>,
}

/// How a script ended.
pub enum Outcome {
    /// Its result as a reply; `None` when it was being stopped meanwhile.
    Returned(Option<Reply>),
    /// The error the handler made of what it raised.
    Raised(ScriptError),
}

/// Pushes `items` as a Lua list. May raise (memory).
unsafe fn push_list(state: *mut lua_State, items: &[Bytes]) {
    unsafe {
        ffi::lua_createtable(state, items.len().min(1 << 24) as c_int, 0);
        for (i, a) in items.iter().enumerate() {
            convert::push_bytes(state, a);
            ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
        }
    }
}

/// Lua C function, called under `lua_pcall` with the environment's run
/// function, the script's function and a light userdata of [`RunArgs`]:
/// makes KEYS and ARGV, runs the script through the run function, and
/// leaves its outcome in the [`RunArgs`]. Raises only before anything
/// Rust-owned is made (KEYS and ARGV, the script's own stray errors).
pub unsafe extern "C-unwind" fn enter(state: *mut lua_State) -> c_int {
    unsafe {
        let a = &mut *(ffi::lua_touserdata(state, 3) as *mut RunArgs);
        ffi::lua_settop(state, 2);
        // What a library function left for the error handler is stale.
        ffi::lua_pushnil(state);
        ffi::lua_setfield(state, ffi::LUA_REGISTRYINDEX, super::PENDING.as_ptr());
        push_list(state, a.keys);
        push_list(state, a.argv);
        ffi::lua_call(state, 3, 2);
        let ok = ffi::lua_toboolean(state, 1) != 0;
        if ok
            && ffi::lua_type(state, 2) == ffi::LUA_TTABLE
            && ffi::lua_checkstack(state, convert::RESULT_STACK) == 0
        {
            ffi::lua_pushstring_(state, c"the script's reply nests too deep".as_ptr());
            ffi::lua_error(state);
        }
        // Nothing raises from here on.
        a.out = Some(if ok {
            Outcome::Returned(convert::to_reply_within(
                state,
                2,
                a.running.resp(),
                a.limit,
                &a.names,
                a.go_on,
            ))
        } else {
            Outcome::Raised(ScriptError::at(state, 2, &a.names))
        });
    }
    0
}
