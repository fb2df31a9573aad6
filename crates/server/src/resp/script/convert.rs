//! Redis's type conversions between replies and Lua values, both ways,
//! on Lua's C API (no mlua value, reference or lock per value: a short
//! script's replies and result are most of what it converts).
//!
//! A command's reply reaches the script as Redis hands it over: encoded in
//! the script's protocol (2 unless `redis.setresp(3)`), then read back as
//! Lua values (`redisProtocolToLuaType`), so every reply a command can give
//! converts without a case per reply kind; the commonest kinds are pushed
//! directly, as their wire form would convert. A script's result becomes a
//! [`Reply`] by `luaReplyToRedisReply`'s rules: numbers truncated to
//! integers, tables cut at the first nil, `{err=…}` / `{ok=…}` /
//! `{double=…}` / `{map=…}` / `{set=…}` tables.
//!
//! Lua raises its errors with `longjmp`, which must never cross a Rust
//! frame that owns anything. So a reply is made ready first on the Rust
//! side ([`Prepared`]: every Rust allocation done), then pushed by
//! [`push_prepared`] under `lua_pcall`, whose frames hold only borrows;
//! and a result is read by functions that never raise (raw reads of
//! values already on a stack whose room was reserved beforehand).

use std::ffi::{c_int, CStr};

use bytes::BytesMut;
use mlua::ffi::{self, lua_State};

use super::super::reply::{fmt_double, is_plain_integer, Reply};

/// How deep a reply or a result may nest (Redis's Lua stack limit).
pub const MAX_DEPTH: usize = 1000;

/// Stack slots reading a result may take: per level of nesting, the
/// table, a map's key and value, and a field looked up.
pub const RESULT_STACK: c_int = 4 * (MAX_DEPTH as c_int + 2);

/// The text of a Redis error table for `buf` (`-CODE msg` or `msg`), as
/// `luaPushErrorBuff` makes it: a code, one space, the message without
/// leading or trailing CR/LF.
pub fn error_text(buf: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match buf.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&c| c == b' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", buf),
    };
    let is_crlf = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = msg.iter().position(|c| !is_crlf(c)).unwrap_or(msg.len());
    let end = msg
        .iter()
        .rposition(|c| !is_crlf(c))
        .map_or(start, |e| e + 1);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(&msg[start..end.max(start)]);
    // Lua's pushstring stops at a NUL.
    if let Some(nul) = out.iter().position(|&c| c == 0) {
        out.truncate(nul);
    }
    out
}

/// C's `%.17g` (how Redis turns a Lua number into a command argument).
pub fn g17(n: f64) -> Vec<u8> {
    fmt_double(n).into_bytes()
}

/// [`g17`] appended to `out`; an integral number without a heap string.
pub fn number_text(n: f64, out: &mut BytesMut) {
    if is_plain_integer(n) {
        out.extend_from_slice(itoa::Buffer::new().format(n as i64).as_bytes());
    } else {
        out.extend_from_slice(fmt_double(n).as_bytes());
    }
}

// ------------------------------------------------------------ the C API

/// Pushes `b` as a Lua string. Allocates in Lua: may raise.
#[inline]
pub(super) unsafe fn push_bytes(state: *mut lua_State, b: &[u8]) {
    // SAFETY: Lua copies `len` bytes from the pointer (none when empty).
    unsafe { ffi::lua_pushlstring_(state, b.as_ptr().cast(), b.len()) }
}

/// Raises `msg` as a Lua error. Only where no Rust frame between here
/// and the enclosing `lua_pcall` owns anything.
unsafe fn raise(state: *mut lua_State, msg: &CStr) -> ! {
    unsafe {
        ffi::lua_pushstring_(state, msg.as_ptr());
        ffi::lua_error(state)
    }
}

/// The bytes of the string at `idx`, which must be a string (a number
/// would be converted in place, which allocates). Valid while it stays
/// on the stack.
#[inline]
pub(super) unsafe fn string_at<'a>(state: *mut lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    unsafe {
        let p = ffi::lua_tolstring(state, idx, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// `{err = text}` on the stack. May raise.
pub(super) unsafe fn push_error_table(state: *mut lua_State, text: &[u8]) {
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_bytes(state, text);
        ffi::lua_setfield(state, -2, c"err".as_ptr());
    }
}

/// `{name = value}` on the stack, the value on top before. May raise.
unsafe fn wrap_in_table(state: *mut lua_State, name: &CStr) {
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_insert(state, -2);
        ffi::lua_setfield(state, -2, name.as_ptr());
    }
}

/// The field names a result is read by, kept in the registry: pushing
/// one is a raw read, where a new string could allocate (and raise).
#[derive(Clone, Copy, Debug)]
pub struct Names([c_int; NAMES.len()]);

const NAMES: [&str; 11] = [
    "err",
    "ok",
    "double",
    "big_number",
    "verbatim_string",
    "map",
    "set",
    "format",
    "string",
    "source",
    "line",
];
const ERR: usize = 0;
const OK: usize = 1;
const DOUBLE: usize = 2;
const BIG_NUMBER: usize = 3;
const VERBATIM: usize = 4;
const MAP: usize = 5;
const SET: usize = 6;
const FORMAT: usize = 7;
const STRING: usize = 8;
const SOURCE: usize = 9;
const LINE: usize = 10;

impl Names {
    /// Puts the names in the registry. Allocates: in a protected call.
    pub(super) unsafe fn intern(state: *mut lua_State) -> Names {
        let mut refs = [0; NAMES.len()];
        for (r, name) in refs.iter_mut().zip(NAMES) {
            unsafe {
                push_bytes(state, name.as_bytes());
                *r = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
            }
        }
        Names(refs)
    }

    /// Pushes `t[NAMES[which]]` (raw) for the table at absolute index
    /// `t`, and answers its type. One slot; never raises.
    #[inline]
    unsafe fn field(&self, state: *mut lua_State, t: c_int, which: usize) -> c_int {
        unsafe {
            ffi::lua_rawgeti_(state, ffi::LUA_REGISTRYINDEX, self.0[which]);
            ffi::lua_rawget_(state, t);
            ffi::lua_type(state, -1)
        }
    }
}

// ------------------------------------------------- replies to Lua values

/// A command's reply made ready to become a Lua value: what the Rust side
/// has to make for it (an error's text, a score's text, the wire form of
/// the kinds read back from it) is made here, so that pushing it
/// ([`push_prepared`]) allocates in Lua only.
pub struct Prepared {
    reply: Reply,
    resp: u8,
    /// A RESP2 score's text.
    short: [u8; 32],
    short_len: u8,
    /// An error's text, or the wire form of a reply read back from it.
    long: Vec<u8>,
}

impl Prepared {
    /// `reply` as the script will see it under protocol `resp`.
    pub fn new(reply: Reply, resp: u8) -> Prepared {
        let mut p = Prepared {
            reply,
            resp,
            short: [0; 32],
            short_len: 0,
            long: Vec::new(),
        };
        match &p.reply {
            Reply::Int(_)
            | Reply::Bulk(_)
            | Reply::Null
            | Reply::NullArray
            | Reply::Members(_)
            | Reply::Status(_) => {}
            Reply::Error(e) => {
                // What its wire line reads back as: CR/LF cannot be in it.
                let mut line = Vec::with_capacity(e.len() + 1);
                line.push(b'-');
                line.extend(
                    e.iter()
                        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
                );
                p.long = error_text(&line);
            }
            Reply::Double(d) if resp == 2 => {
                let mut ibuf = itoa::Buffer::new();
                let owned;
                let text: &[u8] = if is_plain_integer(*d) {
                    ibuf.format(*d as i64).as_bytes()
                } else {
                    owned = fmt_double(*d);
                    owned.as_bytes()
                };
                let n = text.len().min(p.short.len());
                p.short[..n].copy_from_slice(&text[..n]);
                p.short_len = n as u8;
            }
            _ => p.long = wire(&p.reply, resp),
        }
        p
    }

    /// `reply` read back from its wire form whatever its kind (what the
    /// direct conversions must agree with).
    #[cfg(test)]
    fn via_wire(reply: Reply, resp: u8) -> Prepared {
        let long = wire(&reply, resp);
        Prepared {
            reply: Reply::Seq(Vec::new()),
            resp,
            short: [0; 32],
            short_len: 0,
            long,
        }
    }

    pub fn is_error(&self) -> bool {
        self.reply.is_error()
    }
}

fn wire(reply: &Reply, resp: u8) -> Vec<u8> {
    let mut buf = BytesMut::new();
    reply.encode(resp, &mut buf);
    buf.to_vec()
}

/// Lua C function: pushes the [`Prepared`] its one argument (a light
/// userdata) points at. Called under `lua_pcall`: it allocates in Lua,
/// and raises when Lua's memory bound is reached.
pub(super) unsafe extern "C-unwind" fn push_prepared(state: *mut lua_State) -> c_int {
    unsafe {
        let p = ffi::lua_touserdata(state, 1) as *const Prepared;
        ffi::lua_settop(state, 0);
        push(state, &*p);
    }
    1
}

unsafe fn push(state: *mut lua_State, p: &Prepared) {
    unsafe {
        match &p.reply {
            Reply::Int(i) => ffi::lua_pushnumber(state, *i as f64),
            Reply::Bulk(b) => push_bytes(state, b),
            Reply::Null | Reply::NullArray if p.resp == 2 => ffi::lua_pushboolean(state, 0),
            Reply::Null | Reply::NullArray => ffi::lua_pushnil(state),
            Reply::Members(items) => {
                ffi::lua_createtable(state, items.len().min(1 << 24) as c_int, 0);
                for (i, m) in items.iter().enumerate() {
                    push_bytes(state, m);
                    ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
                }
            }
            Reply::Status(s) => {
                push_bytes(state, s.as_bytes());
                wrap_in_table(state, c"ok");
            }
            Reply::Error(_) => push_error_table(state, &p.long),
            Reply::Double(_) if p.resp == 2 => push_bytes(state, &p.short[..p.short_len as usize]),
            _ => Parser {
                buf: &p.long,
                at: 0,
            }
            .value(state, 0),
        }
    }
}

/// Reads a reply's wire form onto the Lua stack. Holds borrows only: a
/// malformed reply (never made by podium) raises.
struct Parser<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    unsafe fn bad(&self, state: *mut lua_State) -> ! {
        unsafe { raise(state, c"malformed reply") }
    }

    unsafe fn line(&mut self, state: *mut lua_State) -> &[u8] {
        let rest = &self.buf[self.at..];
        match memchr::memmem::find(rest, b"\r\n") {
            Some(end) => {
                self.at += end + 2;
                &rest[..end]
            }
            None => unsafe { self.bad(state) },
        }
    }

    unsafe fn int(&mut self, state: *mut lua_State) -> i64 {
        let l = unsafe { self.line(state) };
        match std::str::from_utf8(l).ok().and_then(|s| s.parse().ok()) {
            Some(n) => n,
            None => unsafe { self.bad(state) },
        }
    }

    unsafe fn bulk(&mut self, state: *mut lua_State) -> Option<&[u8]> {
        let n = unsafe { self.int(state) };
        if n < 0 {
            return None;
        }
        let n = n as usize;
        let at = self.at;
        match self.buf.get(at..at + n) {
            Some(b) => {
                self.at += n + 2;
                Some(b)
            }
            None => unsafe { self.bad(state) },
        }
    }

    /// Pushes the next value.
    unsafe fn value(&mut self, state: *mut lua_State, depth: usize) {
        unsafe {
            if depth > MAX_DEPTH || ffi::lua_checkstack(state, 4) == 0 {
                raise(state, c"reply nests too deep");
            }
            let Some(&kind) = self.buf.get(self.at) else {
                self.bad(state)
            };
            self.at += 1;
            match kind {
                b'+' => {
                    let l = self.line(state);
                    push_bytes(state, l);
                    wrap_in_table(state, c"ok");
                }
                b'-' => {
                    let l = self.line(state);
                    // error_text without its allocation: code, space, message.
                    let (code, msg): (&[u8], &[u8]) = match l.iter().position(|&c| c == b' ') {
                        Some(sp) => (&l[..sp], &l[sp + 1..]),
                        None => (b"ERR", l),
                    };
                    push_bytes(state, code);
                    push_bytes(state, b" ");
                    push_bytes(state, msg);
                    ffi::lua_concat(state, 3);
                    // Lua's pushstring stops at a NUL, as error_text does.
                    let text = string_at(state, -1);
                    if let Some(nul) = text.iter().position(|&c| c == 0) {
                        let cut = &text[..nul];
                        push_bytes(state, cut);
                        ffi::lua_remove(state, -2);
                    }
                    wrap_in_table(state, c"err");
                }
                b':' => {
                    let n = self.int(state);
                    ffi::lua_pushnumber(state, n as f64)
                }
                b'$' => match self.bulk(state) {
                    Some(b) => push_bytes(state, b),
                    None => ffi::lua_pushboolean(state, 0),
                },
                b'=' => {
                    let Some(b) = self.bulk(state) else {
                        self.bad(state)
                    };
                    let (fmt, text) = b.split_at(b.len().min(4));
                    ffi::lua_createtable(state, 0, 2);
                    push_bytes(state, text);
                    ffi::lua_setfield(state, -2, c"string".as_ptr());
                    push_bytes(state, &fmt[..fmt.len().min(3)]);
                    ffi::lua_setfield(state, -2, c"format".as_ptr());
                    wrap_in_table(state, c"verbatim_string");
                }
                b'*' => {
                    let n = self.int(state);
                    if n < 0 {
                        ffi::lua_pushboolean(state, 0);
                        return;
                    }
                    ffi::lua_createtable(state, 0, 0);
                    for i in 0..n {
                        self.value(state, depth + 1);
                        ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
                    }
                }
                b'%' | b'~' => {
                    let n = self.int(state);
                    ffi::lua_createtable(state, 0, 0);
                    for _ in 0..n {
                        self.value(state, depth + 1);
                        if kind == b'%' {
                            self.value(state, depth + 1);
                        } else {
                            ffi::lua_pushboolean(state, 1);
                        }
                        ffi::lua_rawset(state, -3);
                    }
                    wrap_in_table(state, if kind == b'%' { c"map" } else { c"set" });
                }
                b'_' => {
                    self.line(state);
                    ffi::lua_pushnil(state)
                }
                b'#' => {
                    let t = self.line(state) == b"t";
                    ffi::lua_pushboolean(state, c_int::from(t))
                }
                b',' => {
                    let l = self.line(state);
                    let d = match l {
                        b"inf" => f64::INFINITY,
                        b"-inf" => f64::NEG_INFINITY,
                        _ => match std::str::from_utf8(l).ok().and_then(|s| s.parse().ok()) {
                            Some(d) => d,
                            None => self.bad(state),
                        },
                    };
                    ffi::lua_pushnumber(state, d);
                    wrap_in_table(state, c"double");
                }
                b'(' => {
                    let l = self.line(state);
                    push_bytes(state, l);
                    wrap_in_table(state, c"big_number");
                }
                _ => self.bad(state),
            }
        }
    }
}

// --------------------------------------------------- results to replies

/// What a script's error carries: its text and where it was raised.
pub struct ScriptError {
    pub msg: Vec<u8>,
    pub source: Option<Vec<u8>>,
    pub line: Option<i64>,
}

impl ScriptError {
    /// The error the handler made of what the script raised, at `idx`.
    /// Never raises; takes two stack slots.
    pub(super) unsafe fn at(state: *mut lua_State, idx: c_int, names: &Names) -> ScriptError {
        let mut e = ScriptError {
            msg: b"ERR unknown error".to_vec(),
            source: None,
            line: None,
        };
        unsafe {
            match ffi::lua_type(state, idx) {
                // Lua 5.1 raises out-of-memory without calling the handler.
                ffi::LUA_TSTRING => {
                    e.msg = b"ERR ".to_vec();
                    e.msg.extend_from_slice(string_at(state, idx));
                }
                ffi::LUA_TTABLE => {
                    let t = ffi::lua_absindex(state, idx);
                    if names.field(state, t, ERR) == ffi::LUA_TSTRING {
                        e.msg = string_at(state, -1).to_vec();
                    }
                    ffi::lua_pop(state, 1);
                    if names.field(state, t, SOURCE) == ffi::LUA_TSTRING {
                        e.source = Some(string_at(state, -1).to_vec());
                    }
                    ffi::lua_pop(state, 1);
                    if names.field(state, t, LINE) == ffi::LUA_TNUMBER {
                        e.line = Some(ffi::lua_tonumber(state, -1) as i64);
                    }
                    ffi::lua_pop(state, 1);
                }
                _ => {}
            }
        }
        e
    }

    /// The reply: Redis's `<msg> script: <sha>, on <source>:<line>.`.
    pub fn reply(&self, sha: &str) -> Reply {
        let mut out = self.msg.clone();
        if let (Some(source), Some(line)) = (&self.source, self.line) {
            out.extend_from_slice(format!(" script: {sha}, on ").as_bytes());
            out.extend_from_slice(source);
            out.extend_from_slice(format!(":{line}.").as_bytes());
        }
        Reply::Error(out)
    }
}

/// What a reply node costs besides its text, in bytes.
const NODE_BYTES: usize = 48;

/// The value at `idx` as the reply to a script's caller, by Redis's rules;
/// `resp` is the script's protocol (it decides what a Lua boolean is).
/// Refused when the reply would take more than `bytes`: a table that holds
/// the same table many times over (`t = {t, t}`, forty deep) is small in
/// Lua and immense as a reply. `go_on` is asked before each value; `None`
/// once it says no (the script is being stopped).
///
/// Never raises. A table needs [`RESULT_STACK`] free stack slots,
/// reserved by the caller.
pub(super) unsafe fn to_reply_within(
    state: *mut lua_State,
    idx: c_int,
    resp: u8,
    bytes: usize,
    names: &Names,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<Reply> {
    let mut left = bytes;
    let mut to = To {
        state,
        names,
        left: &mut left,
        go_on,
        stopped: false,
    };
    let r = unsafe { to.reply(ffi::lua_absindex(state, idx), resp, 0) };
    if to.stopped {
        return None;
    }
    if left == 0 {
        return Some(Reply::err(format!(
            "the script's reply is larger than a script's memory bound ({bytes} bytes)"
        )));
    }
    Some(r)
}

/// A conversion under way: the bytes it may still take, whether to go on.
struct To<'a> {
    state: *mut lua_State,
    names: &'a Names,
    left: &'a mut usize,
    go_on: &'a mut dyn FnMut() -> bool,
    stopped: bool,
}

/// Charges `n` bytes to `left`; false once it is spent (then 0).
fn charge(left: &mut usize, n: usize) -> bool {
    match left.checked_sub(n) {
        Some(l) if l > 0 => {
            *left = l;
            true
        }
        _ => {
            *left = 0;
            false
        }
    }
}

/// CR and LF as spaces (a status line cannot hold them).
fn one_line(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

impl To<'_> {
    /// The value at absolute index `at`; the stack as it was after.
    unsafe fn reply(&mut self, at: c_int, resp: u8, depth: usize) -> Reply {
        let state = self.state;
        if depth > MAX_DEPTH {
            return Reply::err("reached lua stack limit");
        }
        unsafe {
            let kind = ffi::lua_type(state, at);
            let text = match kind {
                ffi::LUA_TSTRING => ffi::lua_objlen(state, at),
                _ => 0,
            };
            if !(self.go_on)() {
                self.stopped = true;
                *self.left = 0;
            }
            if !charge(self.left, NODE_BYTES + text) {
                return Reply::Null;
            }
            match kind {
                ffi::LUA_TSTRING => Reply::Bulk(string_at(state, at).to_vec()),
                ffi::LUA_TBOOLEAN => match (resp, ffi::lua_toboolean(state, at) != 0) {
                    (2, true) => Reply::Int(1),
                    (2, false) => Reply::Null,
                    (_, b) => Reply::Bool(b),
                },
                // C's cast, saturating.
                ffi::LUA_TNUMBER => Reply::Int(ffi::lua_tonumber(state, at) as i64),
                ffi::LUA_TTABLE => self.table(at, resp, depth),
                _ => Reply::Null,
            }
        }
    }

    unsafe fn table(&mut self, t: c_int, resp: u8, depth: usize) -> Reply {
        let (state, names) = (self.state, self.names);
        unsafe {
            // One field at a time: pushed, read, popped.
            let field = |which: usize| names.field(state, t, which);
            let pop = || ffi::lua_pop(state, 1);
            if field(ERR) == ffi::LUA_TSTRING {
                let r = Reply::Error(string_at(state, -1).to_vec());
                pop();
                return r;
            }
            pop();
            if field(OK) == ffi::LUA_TSTRING {
                let r = Reply::StatusText(one_line(string_at(state, -1)));
                pop();
                return r;
            }
            pop();
            if field(DOUBLE) == ffi::LUA_TNUMBER {
                let r = Reply::Double(ffi::lua_tonumber(state, -1));
                pop();
                return r;
            }
            pop();
            if field(BIG_NUMBER) == ffi::LUA_TSTRING {
                let r = Reply::BigNumber(one_line(string_at(state, -1)));
                pop();
                return r;
            }
            pop();
            if field(VERBATIM) == ffi::LUA_TTABLE {
                let vt = ffi::lua_gettop(state);
                let f = names.field(state, vt, FORMAT);
                let s = names.field(state, vt, STRING);
                if f == ffi::LUA_TSTRING && s == ffi::LUA_TSTRING {
                    let text = string_at(state, -1);
                    let r = if string_at(state, -2) == b"txt" {
                        Reply::Verbatim(String::from_utf8_lossy(text).into_owned())
                    } else {
                        Reply::Bulk(text.to_vec())
                    };
                    ffi::lua_pop(state, 3);
                    return r;
                }
                ffi::lua_pop(state, 2);
            }
            pop();
            if field(MAP) == ffi::LUA_TTABLE {
                let m = ffi::lua_gettop(state);
                let mut pairs = Vec::new();
                ffi::lua_pushnil(state);
                while ffi::lua_next(state, m) != 0 {
                    let top = ffi::lua_gettop(state);
                    let k = self.reply(top - 1, resp, depth + 1);
                    let v = self.reply(top, resp, depth + 1);
                    pairs.push((k, v));
                    pop();
                }
                pop();
                return Reply::Map(pairs);
            }
            pop();
            if field(SET) == ffi::LUA_TTABLE {
                let s = ffi::lua_gettop(state);
                let mut items = Vec::new();
                ffi::lua_pushnil(state);
                while ffi::lua_next(state, s) != 0 {
                    let top = ffi::lua_gettop(state);
                    items.push(self.reply(top - 1, resp, depth + 1));
                    pop();
                }
                pop();
                return Reply::Set(items);
            }
            pop();
            let mut items = Vec::new();
            for i in 1..=c_int::MAX {
                if *self.left == 0 {
                    break;
                }
                ffi::lua_rawgeti_(state, t, i);
                if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                    pop();
                    break;
                }
                let top = ffi::lua_gettop(state);
                items.push(self.reply(top, resp, depth + 1));
                pop();
            }
            Reply::Array(items)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{Lua, Table, Value};

    #[test]
    fn error_texts_take_a_code() {
        assert_eq!(error_text(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(error_text(b"-x"), b"ERR x");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
        assert_eq!(error_text(b"-MY bad\r\n"), b"MY bad");
    }

    fn num(v: &Value) -> Option<f64> {
        match v {
            Value::Integer(i) => Some(*i as f64),
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// `p` pushed as the script would see it.
    fn lua_of(lua: &Lua, p: &Prepared) -> Value {
        // SAFETY: `push` runs inside mlua's protected call, and leaves one
        // value.
        unsafe {
            lua.exec_raw::<Value>((), |state| {
                ffi::lua_checkstack(state, 8);
                push(state, p)
            })
        }
        .unwrap()
    }

    fn reply_to_lua(lua: &Lua, r: &Reply, resp: u8) -> Value {
        lua_of(lua, &Prepared::new(r.clone(), resp))
    }

    fn via_wire(lua: &Lua, r: &Reply, resp: u8) -> Value {
        lua_of(lua, &Prepared::via_wire(r.clone(), resp))
    }

    /// The result `src` returns, as its caller gets it.
    fn eval(lua: &Lua, src: &str, resp: u8) -> Reply {
        let v: Value = lua.load(src).eval().unwrap();
        let mut out = None;
        // SAFETY: names are interned and the value read in mlua's
        // protected call, the stack room reserved first.
        unsafe {
            lua.exec_raw::<()>(v, |state| {
                let names = Names::intern(state);
                ffi::lua_checkstack(state, RESULT_STACK);
                out = to_reply_within(state, 1, resp, usize::MAX, &names, &mut || true);
                ffi::lua_settop(state, 0);
            })
        }
        .unwrap();
        out.unwrap()
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = Lua::new();
        let v = reply_to_lua(&lua, &Reply::Int(7), 2);
        assert_eq!(num(&v), Some(7.0));
        let v = reply_to_lua(&lua, &Reply::Null, 2);
        assert_eq!(v, Value::Boolean(false));
        let v = reply_to_lua(&lua, &Reply::Null, 3);
        assert_eq!(v, Value::Nil);
        let Value::Table(t) = reply_to_lua(&lua, &Reply::Status("OK"), 2) else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>("ok").unwrap(), "OK");
        let Value::Table(t) = reply_to_lua(&lua, &Reply::err("no"), 2) else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>("err").unwrap(), "ERR no");
        // A score: a string under RESP2, {double=…} under RESP3.
        let v = reply_to_lua(&lua, &Reply::Double(1.5), 2);
        assert_eq!(v.as_str().unwrap(), "1.5");
        let v = reply_to_lua(&lua, &Reply::Double(3.0), 2);
        assert_eq!(v.as_str().unwrap(), "3");
        let Value::Table(t) = reply_to_lua(&lua, &Reply::Double(1.5), 3) else {
            panic!()
        };
        assert_eq!(t.raw_get::<f64>("double").unwrap(), 1.5);
        let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        let Value::Table(t) = reply_to_lua(&lua, &map, 2) else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>(1).unwrap(), "a");
        let Value::Table(t) = reply_to_lua(&lua, &map, 3) else {
            panic!()
        };
        let m: Table = t.raw_get("map").unwrap();
        assert_eq!(m.raw_get::<i64>("a").unwrap(), 1);
        let Value::Table(t) = reply_to_lua(&lua, &Reply::Verbatim("hi".into()), 3) else {
            panic!()
        };
        let v: Table = t.raw_get("verbatim_string").unwrap();
        assert_eq!(v.raw_get::<std::string::String>("format").unwrap(), "txt");
        assert_eq!(v.raw_get::<std::string::String>("string").unwrap(), "hi");
    }

    #[test]
    fn results_become_replies() {
        let lua = Lua::new();
        assert_eq!(eval(&lua, "return 3.99", 2), Reply::Int(3));
        assert_eq!(eval(&lua, "return -3.99", 2), Reply::Int(-3));
        assert_eq!(eval(&lua, "return 'x'", 2), Reply::bulk("x"));
        assert_eq!(eval(&lua, "return true", 2), Reply::Int(1));
        assert_eq!(eval(&lua, "return false", 2), Reply::Null);
        assert_eq!(eval(&lua, "return true", 3), Reply::Bool(true));
        assert_eq!(eval(&lua, "return nil", 2), Reply::Null);
        assert_eq!(
            eval(&lua, "return {1, 'a', nil, 4}", 2),
            Reply::Array(vec![Reply::Int(1), Reply::bulk("a")])
        );
        assert_eq!(
            eval(&lua, "return {err='MY bad'}", 2),
            Reply::coded("MY bad")
        );
        assert_eq!(
            eval(&lua, "return {ok='fi\\r\\nne'}", 2),
            Reply::StatusText(b"fi  ne".to_vec())
        );
        assert_eq!(eval(&lua, "return {double=1.5}", 2), Reply::Double(1.5));
        assert_eq!(
            eval(&lua, "return {big_number='12'}", 3),
            Reply::BigNumber(b"12".to_vec())
        );
        assert_eq!(
            eval(
                &lua,
                "return {verbatim_string={format='txt', string='hi'}}",
                3
            ),
            Reply::Verbatim("hi".into())
        );
        assert_eq!(
            eval(&lua, "return {map={a=1}}", 2),
            Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))])
        );
        assert_eq!(
            eval(&lua, "return {set={a=true}}", 2),
            Reply::Set(vec![Reply::bulk("a")])
        );
        assert_eq!(
            eval(&lua, "return {{1, {2}}, 'b'}", 2),
            Reply::Array(vec![
                Reply::Array(vec![Reply::Int(1), Reply::Array(vec![Reply::Int(2)])]),
                Reply::bulk("b")
            ])
        );
        // A table that holds itself is cut at the stack limit.
        let r = eval(&lua, "local t = {}; t[1] = t; return t", 2);
        let mut depth = 0;
        let mut at = &r;
        while let Reply::Array(v) = at {
            depth += 1;
            at = &v[0];
        }
        assert_eq!(at, &Reply::err("reached lua stack limit"));
        assert_eq!(depth, MAX_DEPTH + 1);
    }

    #[test]
    fn numbers_as_arguments_keep_their_precision() {
        for n in [3.0, -0.0, 0.1, 1e17, 123456789012.0, -1e300, f64::INFINITY] {
            let mut b = BytesMut::new();
            number_text(n, &mut b);
            assert_eq!(&b[..], &g17(n)[..], "{n}");
        }
        assert_eq!(g17(3.0), b"3");
        assert_eq!(g17(0.1), b"0.10000000000000001");
        assert_eq!(g17(-1e300), b"-1.0000000000000001e+300");
    }

    #[test]
    fn direct_conversions_read_as_the_wire_form() {
        let lua = Lua::new();
        let replies = [
            Reply::Int(-42),
            Reply::Int(1 << 60),
            Reply::Bulk(b"m\r\n1".to_vec()),
            Reply::Bulk(Vec::new()),
            Reply::Null,
            Reply::NullArray,
            Reply::Members(vec![b"a".to_vec(), Vec::new(), b"c".to_vec()]),
            Reply::Members(Vec::new()),
            Reply::Status("OK"),
            Reply::Double(1.5),
            Reply::Double(-0.0),
            Reply::Double(1e300),
            Reply::Double(7.0),
            Reply::err("x\r\ny"),
            Reply::coded("WRONGTYPE Operation against a key"),
            Reply::coded("nocode"),
        ];
        fn same(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Table(x), Value::Table(y)) => {
                    x.raw_len() == y.raw_len()
                        && (1..=x.raw_len())
                            .all(|i| same(&x.raw_get(i).unwrap(), &y.raw_get(i).unwrap()))
                        && ["ok", "err", "double"].iter().all(|k| {
                            same(
                                &x.raw_get::<Value>(*k).unwrap(),
                                &y.raw_get::<Value>(*k).unwrap(),
                            )
                        })
                }
                (Value::String(x), Value::String(y)) => x.as_bytes() == y.as_bytes(),
                (a, b) => num(a).zip(num(b)).map_or(a == b, |(x, y)| x == y),
            }
        }
        for resp in [2, 3] {
            for r in &replies {
                let direct = reply_to_lua(&lua, r, resp);
                let wire = via_wire(&lua, r, resp);
                assert!(
                    same(&direct, &wire),
                    "{r:?} in RESP{resp}: {direct:?} vs {wire:?}"
                );
            }
        }
    }
}
