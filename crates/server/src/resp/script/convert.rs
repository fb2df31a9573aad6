//! Redis's type conversions between replies and Lua values, both ways.
//!
//! A command's reply reaches the script as Redis hands it over: encoded in
//! the script's protocol (2 unless `redis.setresp(3)`), then read back as
//! Lua values (`redisProtocolToLuaType`), so every reply a command can give
//! converts without a case per reply kind. A script's result becomes a
//! [`Reply`] by `luaReplyToRedisReply`'s rules: numbers truncated to
//! integers, tables cut at the first nil, `{err=…}` / `{ok=…}` /
//! `{double=…}` / `{map=…}` / `{set=…}` tables.

use bytes::BytesMut;
use mlua::{Lua, Table, Value};

use super::super::reply::Reply;

/// How deep a reply or a result may nest (Redis's Lua stack limit).
const MAX_DEPTH: usize = 1000;

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

/// `{err = text}`.
pub fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(text)?)?;
    Ok(t)
}

/// A command's reply as the script sees it under protocol `resp`.
pub fn reply_to_lua(lua: &Lua, reply: &Reply, resp: u8) -> mlua::Result<Value> {
    // The commonest replies directly, as their wire form converts.
    match reply {
        Reply::Int(i) => return Ok(Value::Number(*i as f64)),
        Reply::Bulk(b) => return Ok(Value::String(lua.create_string(b)?)),
        Reply::Null if resp == 2 => return Ok(Value::Boolean(false)),
        Reply::Null => return Ok(Value::Nil),
        Reply::Members(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, m) in items.iter().enumerate() {
                t.raw_set(i + 1, lua.create_string(m)?)?;
            }
            return Ok(Value::Table(t));
        }
        _ => {}
    }
    via_wire(lua, reply, resp)
}

/// `reply` as Lua reads its wire form: Redis converts what it would send.
fn via_wire(lua: &Lua, reply: &Reply, resp: u8) -> mlua::Result<Value> {
    let mut buf = BytesMut::new();
    reply.encode(resp, &mut buf);
    let mut p = Parser { buf: &buf, at: 0 };
    p.value(lua, 0)
}

struct Parser<'a> {
    buf: &'a [u8],
    at: usize,
}

fn bad() -> mlua::Error {
    mlua::Error::runtime("malformed reply")
}

impl Parser<'_> {
    fn line(&mut self) -> mlua::Result<&[u8]> {
        let rest = &self.buf[self.at..];
        let end = memchr::memmem::find(rest, b"\r\n").ok_or_else(bad)?;
        self.at += end + 2;
        Ok(&rest[..end])
    }

    fn int(&mut self) -> mlua::Result<i64> {
        let l = self.line()?;
        std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    }

    fn bulk(&mut self) -> mlua::Result<Option<&[u8]>> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        let n = n as usize;
        let b = self.buf.get(self.at..self.at + n).ok_or_else(bad)?;
        self.at += n + 2;
        Ok(Some(b))
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > MAX_DEPTH {
            return Err(mlua::Error::runtime("reply nests too deep"));
        }
        let kind = *self.buf.get(self.at).ok_or_else(bad)?;
        self.at += 1;
        Ok(match kind {
            b'+' => {
                let t = lua.create_table()?;
                t.raw_set("ok", lua.create_string(self.line()?)?)?;
                Value::Table(t)
            }
            b'-' => {
                let mut e = b"-".to_vec();
                e.extend_from_slice(self.line()?);
                Value::Table(error_table(lua, &error_text(&e))?)
            }
            b':' => Value::Number(self.int()? as f64),
            b'$' => match self.bulk()? {
                Some(b) => Value::String(lua.create_string(b)?),
                None => Value::Boolean(false),
            },
            b'=' => {
                let b = self.bulk()?.ok_or_else(bad)?.to_vec();
                let (fmt, text) = b.split_at(b.len().min(4));
                let inner = lua.create_table()?;
                inner.raw_set("string", lua.create_string(text)?)?;
                inner.raw_set("format", lua.create_string(&fmt[..fmt.len().min(3)])?)?;
                let t = lua.create_table()?;
                t.raw_set("verbatim_string", inner)?;
                Value::Table(t)
            }
            b'*' => {
                let n = self.int()?;
                if n < 0 {
                    return Ok(Value::Boolean(false));
                }
                let t = lua.create_table()?;
                for i in 0..n {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(i + 1, v)?;
                }
                Value::Table(t)
            }
            b'%' | b'~' => {
                let n = self.int()?;
                let inner = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua, depth + 1)?;
                    let v = if kind == b'%' {
                        self.value(lua, depth + 1)?
                    } else {
                        Value::Boolean(true)
                    };
                    inner.raw_set(k, v)?;
                }
                let t = lua.create_table()?;
                t.raw_set(if kind == b'%' { "map" } else { "set" }, inner)?;
                Value::Table(t)
            }
            b'_' => {
                self.line()?;
                Value::Nil
            }
            b'#' => Value::Boolean(self.line()? == b"t"),
            b',' => {
                let l = self.line()?;
                let d = match l {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    _ => std::str::from_utf8(l)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(bad)?,
                };
                let t = lua.create_table()?;
                t.raw_set("double", d)?;
                Value::Table(t)
            }
            b'(' => {
                let t = lua.create_table()?;
                t.raw_set("big_number", lua.create_string(self.line()?)?)?;
                Value::Table(t)
            }
            _ => return Err(bad()),
        })
    }
}

/// What a script's error carries: its text and where it was raised.
pub struct ScriptError {
    pub msg: Vec<u8>,
    pub source: Option<Vec<u8>>,
    pub line: Option<i64>,
}

impl ScriptError {
    /// The error the handler made of what the script raised.
    pub fn from_value(v: &Value) -> ScriptError {
        let mut e = ScriptError {
            msg: b"ERR unknown error".to_vec(),
            source: None,
            line: None,
        };
        // Lua 5.1 raises out-of-memory without calling the handler.
        if let Value::String(s) = v {
            e.msg = b"ERR ".to_vec();
            e.msg.extend_from_slice(&s.as_bytes());
        }
        if let Value::Table(t) = v {
            if let Ok(Value::String(s)) = t.raw_get::<Value>("err") {
                e.msg = s.as_bytes().to_vec();
            }
            if let Ok(Value::String(s)) = t.raw_get::<Value>("source") {
                e.source = Some(s.as_bytes().to_vec());
            }
            e.line = match t.raw_get::<Value>("line") {
                Ok(Value::Integer(n)) => Some(n),
                Ok(Value::Number(n)) => Some(n as i64),
                _ => None,
            };
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

/// A Lua number as Redis makes it an integer (C's cast, saturating).
fn int_of(n: f64) -> i64 {
    n as i64
}

/// A script's result as the reply to its caller; `resp` is the script's
/// protocol (it decides what a Lua boolean is).
pub fn lua_to_reply(v: &Value, resp: u8) -> Reply {
    lua_to_reply_within(v, resp, usize::MAX, &mut || true).unwrap_or(Reply::Null)
}

/// What a reply node costs besides its text, in bytes.
const NODE_BYTES: usize = 48;

/// [`lua_to_reply`], refused when the reply would take more than `bytes`:
/// a table that holds the same table many times over (`t = {t, t}`, forty
/// deep) is small in Lua and immense as a reply. `go_on` is asked before
/// each value; `None` once it says no (the script is being stopped).
pub fn lua_to_reply_within(
    v: &Value,
    resp: u8,
    bytes: usize,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<Reply> {
    let mut left = bytes;
    let mut to = To {
        left: &mut left,
        go_on,
        stopped: false,
    };
    let r = to.reply(v, resp, 0);
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
    left: &'a mut usize,
    go_on: &'a mut dyn FnMut() -> bool,
    stopped: bool,
}

fn field(t: &Table, name: &str) -> Value {
    t.raw_get::<Value>(name).unwrap_or(Value::Nil)
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

impl To<'_> {
    fn reply(&mut self, v: &Value, resp: u8, depth: usize) -> Reply {
        if depth > MAX_DEPTH {
            return Reply::err("reached lua stack limit");
        }
        let text = match v {
            Value::String(s) => s.as_bytes().len(),
            _ => 0,
        };
        if !(self.go_on)() {
            self.stopped = true;
            *self.left = 0;
        }
        if !charge(self.left, NODE_BYTES + text) {
            return Reply::Null;
        }
        match v {
            Value::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
            Value::Boolean(b) => match (resp, b) {
                (2, true) => Reply::Int(1),
                (2, false) => Reply::Null,
                (_, b) => Reply::Bool(*b),
            },
            Value::Integer(n) => Reply::Int(*n),
            Value::Number(n) => Reply::Int(int_of(*n)),
            Value::Table(t) => {
                if let Value::String(e) = field(t, "err") {
                    return Reply::Error(e.as_bytes().to_vec());
                }
                if let Value::String(s) = field(t, "ok") {
                    return Reply::StatusText(
                        s.as_bytes()
                            .iter()
                            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                            .collect(),
                    );
                }
                match field(t, "double") {
                    Value::Number(d) => return Reply::Double(d),
                    Value::Integer(d) => return Reply::Double(d as f64),
                    _ => {}
                }
                if let Value::String(s) = field(t, "big_number") {
                    return Reply::BigNumber(
                        s.as_bytes()
                            .iter()
                            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
                            .collect(),
                    );
                }
                if let Value::Table(vt) = field(t, "verbatim_string") {
                    if let (Value::String(f), Value::String(s)) =
                        (field(&vt, "format"), field(&vt, "string"))
                    {
                        let text = String::from_utf8_lossy(&s.as_bytes()).into_owned();
                        return if &f.as_bytes()[..] == b"txt" {
                            Reply::Verbatim(text)
                        } else {
                            Reply::Bulk(s.as_bytes().to_vec())
                        };
                    }
                }
                if let Value::Table(m) = field(t, "map") {
                    let pairs = m
                        .pairs::<Value, Value>()
                        .filter_map(Result::ok)
                        .map(|(k, v)| {
                            (
                                self.reply(&k, resp, depth + 1),
                                self.reply(&v, resp, depth + 1),
                            )
                        })
                        .collect();
                    return Reply::Map(pairs);
                }
                if let Value::Table(s) = field(t, "set") {
                    let items = s
                        .pairs::<Value, Value>()
                        .filter_map(Result::ok)
                        .map(|(k, _)| self.reply(&k, resp, depth + 1))
                        .collect();
                    return Reply::Set(items);
                }
                let mut items = Vec::new();
                for i in 1.. {
                    if *self.left == 0 {
                        break;
                    }
                    match t.raw_get::<Value>(i) {
                        Ok(Value::Nil) | Err(_) => break,
                        Ok(v) => items.push(self.reply(&v, resp, depth + 1)),
                    }
                }
                Reply::Array(items)
            }
            _ => Reply::Null,
        }
    }
}

/// C's `%.17g` (how Redis turns a Lua number into a command argument).
pub fn g17(n: f64) -> Vec<u8> {
    super::super::reply::fmt_double(n).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        Lua::new()
    }

    #[test]
    fn error_texts_take_a_code() {
        assert_eq!(error_text(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(error_text(b"-x"), b"ERR x");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
        assert_eq!(error_text(b"-MY bad\r\n"), b"MY bad");
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = lua();
        let v = reply_to_lua(&lua, &Reply::Int(7), 2).unwrap();
        assert_eq!(v, Value::Number(7.0));
        let v = reply_to_lua(&lua, &Reply::Null, 2).unwrap();
        assert_eq!(v, Value::Boolean(false));
        let v = reply_to_lua(&lua, &Reply::Null, 3).unwrap();
        assert_eq!(v, Value::Nil);
        let Value::Table(t) = reply_to_lua(&lua, &Reply::Status("OK"), 2).unwrap() else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>("ok").unwrap(), "OK");
        let Value::Table(t) = reply_to_lua(&lua, &Reply::err("no"), 2).unwrap() else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>("err").unwrap(), "ERR no");
        // A score: a string under RESP2, {double=…} under RESP3.
        let v = reply_to_lua(&lua, &Reply::Double(1.5), 2).unwrap();
        assert_eq!(v.as_str().unwrap(), "1.5");
        let Value::Table(t) = reply_to_lua(&lua, &Reply::Double(1.5), 3).unwrap() else {
            panic!()
        };
        assert_eq!(t.raw_get::<f64>("double").unwrap(), 1.5);
        let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        let Value::Table(t) = reply_to_lua(&lua, &map, 2).unwrap() else {
            panic!()
        };
        assert_eq!(t.raw_get::<std::string::String>(1).unwrap(), "a");
        let Value::Table(t) = reply_to_lua(&lua, &map, 3).unwrap() else {
            panic!()
        };
        let m: Table = t.raw_get("map").unwrap();
        assert_eq!(m.raw_get::<i64>("a").unwrap(), 1);
    }

    #[test]
    fn results_become_replies() {
        let lua = lua();
        let eval = |src: &str, resp: u8| -> Reply {
            let v: Value = lua.load(src).eval().unwrap();
            lua_to_reply(&v, resp)
        };
        assert_eq!(eval("return 3.99", 2), Reply::Int(3));
        assert_eq!(eval("return -3.99", 2), Reply::Int(-3));
        assert_eq!(eval("return 'x'", 2), Reply::bulk("x"));
        assert_eq!(eval("return true", 2), Reply::Int(1));
        assert_eq!(eval("return false", 2), Reply::Null);
        assert_eq!(eval("return true", 3), Reply::Bool(true));
        assert_eq!(eval("return nil", 2), Reply::Null);
        assert_eq!(
            eval("return {1, 'a', nil, 4}", 2),
            Reply::Array(vec![Reply::Int(1), Reply::bulk("a")])
        );
        assert_eq!(eval("return {err='MY bad'}", 2), Reply::coded("MY bad"));
        assert_eq!(
            eval("return {ok='fi\\r\\nne'}", 2),
            Reply::StatusText(b"fi  ne".to_vec())
        );
        assert_eq!(eval("return {double=1.5}", 2), Reply::Double(1.5));
        assert_eq!(
            eval("return {map={a=1}}", 2),
            Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))])
        );
        assert_eq!(
            eval("return {set={a=true}}", 2),
            Reply::Set(vec![Reply::bulk("a")])
        );
        // A table that holds itself is cut at the stack limit.
        let r = eval("local t = {}; t[1] = t; return t", 2);
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
            Reply::Members(vec![b"a".to_vec(), Vec::new(), b"c".to_vec()]),
            Reply::Members(Vec::new()),
        ];
        fn same(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Table(x), Value::Table(y)) => {
                    x.raw_len() == y.raw_len()
                        && (1..=x.raw_len())
                            .all(|i| same(&x.raw_get(i).unwrap(), &y.raw_get(i).unwrap()))
                }
                (Value::String(x), Value::String(y)) => x.as_bytes() == y.as_bytes(),
                _ => a == b,
            }
        }
        for resp in [2, 3] {
            for r in &replies {
                let direct = reply_to_lua(&lua, r, resp).unwrap();
                let wire = via_wire(&lua, r, resp).unwrap();
                assert!(
                    same(&direct, &wire),
                    "{r:?} in RESP{resp}: {direct:?} vs {wire:?}"
                );
            }
        }
    }
}
