//! The libraries Redis adds to Lua that mlua lacks, with Redis's
//! behaviour: `cjson` (lua-cjson 2.1's encoding rules on `serde_json`'s
//! parser), `cmsgpack` (lua-cmsgpack's formats on `rmp`) and `bit`
//! (LuaBitOp's 32-bit operations); `struct` is in [`super::structlib`].
//! Encoding counts its steps with the script's [`Watch`] and is bounded
//! by the Lua heap's size: a table reached many times over (`t = {t, t}`
//! nested thirty deep) encodes to more than fits in memory, in more time
//! than a script may run. Decoding makes each Lua value as the input is
//! read, with no tree of its own first: every table and string it makes
//! is in the Lua heap, under its bound (a decoded value takes 16 to 48
//! times its input), and a bomb fails with `not enough memory` as a
//! script making the same tables would.

use std::sync::Arc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value, Variadic};

use super::Watch;

/// How deep cjson and cmsgpack go into nested tables.
const CJSON_MAX_DEPTH: usize = 1000;
const MSGPACK_MAX_NESTING: usize = 16;
/// How many values cmsgpack.unpack returns at most: each is a slot on a
/// Lua stack, whose size Lua 5.1 bounds (`LUAI_MAXCSTACK`, 8000).
const MSGPACK_MAX_RESULTS: usize = 4000;
/// How deep cmsgpack.unpack goes into nested arrays and maps (each level
/// under way holds a table, as the results do, in mlua's reference
/// stack, which shares that bound).
const MSGPACK_MAX_DEPTH: usize = 1000;

/// Installs `cjson`, `cmsgpack`, `bit` and `struct` as globals, and the
/// bounded string and table functions of [`super::pattern`].
pub fn install(lua: &Lua, watch: &Arc<Watch>) -> mlua::Result<()> {
    let g = lua.globals();
    g.raw_set("cjson", cjson(lua, watch)?)?;
    g.raw_set("cmsgpack", cmsgpack(lua, watch)?)?;
    g.raw_set("bit", bit(lua)?)?;
    g.raw_set("struct", super::structlib::table(lua)?)?;
    super::pattern::install(lua, watch)
}

/// The output of an encoder, bounded by the Lua heap's size.
fn grown(watch: &Watch, out: &[u8]) -> mlua::Result<()> {
    watch.step()?;
    if out.len() > watch.memory {
        return Err(mlua::Error::runtime("not enough memory"));
    }
    Ok(())
}

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

fn num_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

// ------------------------------------------------------------------ cjson

fn cjson(lua: &Lua, watch: &Arc<Watch>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("null", null())?;
    let w = watch.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let mut out = Vec::new();
            json_encode(&w, &v, 0, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    let w = watch.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, s: mlua::String| {
            let bytes = s.as_bytes();
            let failed = std::cell::RefCell::new(None);
            let mut de = serde_json::Deserializer::from_slice(&bytes);
            let seed = JsonToLua {
                lua,
                watch: &w,
                failed: &failed,
            };
            let v = serde::de::DeserializeSeed::deserialize(seed, &mut de).and_then(|v| {
                de.end()?;
                Ok(v)
            });
            match (v, failed.into_inner()) {
                (_, Some(e)) => Err(e),
                (Ok(v), None) => Ok(v),
                (Err(e), None) => Err(mlua::Error::runtime(format!(
                    "Expected value but found invalid token at character {}",
                    e.column().max(1)
                ))),
            }
        })?,
    )?;
    Ok(t)
}

/// C's `%.14g`, lua-cjson's number format.
fn g14(n: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: 64 bytes, snprintf writes at most that (NUL included); the
    // format takes one double.
    let len = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.14g".as_ptr(), n) };
    String::from_utf8_lossy(&buf[..(len.max(0) as usize).min(63)]).into_owned()
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// Room a nesting level may need on the stack (a debug build's frames are
/// large), and what is added when less is left: a script's value may nest
/// [`CJSON_MAX_DEPTH`] deep whatever thread runs it.
const STACK_RED_ZONE: usize = 64 * 1024;
const STACK_GROWTH: usize = 1024 * 1024;

fn json_encode(w: &Watch, v: &Value, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    grown(w, out)?;
    stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || {
        json_encode_here(w, v, depth, out).map_err(|e| match e {
            Encode::Lua(e) => e,
            Encode::Text(m) => mlua::Error::runtime(m),
        })
    })
}

/// An encoding failure: cjson's message, or the script being stopped.
enum Encode {
    Text(String),
    Lua(mlua::Error),
}

impl From<String> for Encode {
    fn from(m: String) -> Encode {
        Encode::Text(m)
    }
}

impl From<&str> for Encode {
    fn from(m: &str) -> Encode {
        Encode::Text(m.into())
    }
}

impl From<mlua::Error> for Encode {
    fn from(e: mlua::Error) -> Encode {
        Encode::Lua(e)
    }
}

fn json_encode_here(w: &Watch, v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), Encode> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(g14(*i as f64).as_bytes()),
        Value::Number(n) => {
            if !n.is_finite() {
                return Err("Cannot serialise number: must not be NaN or Inf".into());
            }
            out.extend_from_slice(g14(*n).as_bytes());
        }
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth + 1 > CJSON_MAX_DEPTH {
                return Err(format!("Cannot serialise, excessive nesting ({})", depth + 1).into());
            }
            // lua-cjson's array test: only positive integer keys, not
            // excessively sparse.
            let mut max = 0usize;
            let mut items = 0usize;
            let mut array = true;
            for pair in t.pairs::<Value, Value>() {
                let (k, _) = pair.map_err(|e| e.to_string())?;
                match num_of(&k) {
                    Some(n) if n >= 1.0 && n.fract() == 0.0 && n < 1e15 => {
                        max = max.max(n as usize);
                        items += 1;
                    }
                    _ => {
                        array = false;
                        break;
                    }
                }
            }
            if array && max > items * 2 && max > 10 {
                return Err("Cannot serialise table: excessively sparse array".into());
            }
            if array && max > 0 {
                out.push(b'[');
                for i in 1..=max {
                    if i > 1 {
                        out.push(b',');
                    }
                    let v: Value = t.raw_get(i)?;
                    json_encode(w, &v, depth + 1, out)?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair.map_err(|e| e.to_string())?;
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    match &k {
                        Value::String(s) => json_string(&s.as_bytes(), out),
                        k if num_of(k).is_some() => {
                            json_string(g14(num_of(k).unwrap_or(0.0)).as_bytes(), out)
                        }
                        _ => {
                            return Err(
                                "Cannot serialise table: table key must be a number or string"
                                    .into(),
                            )
                        }
                    }
                    out.push(b':');
                    json_encode(w, &v, depth + 1, out)?;
                }
                out.push(b'}');
            }
        }
        other => {
            return Err(
                format!("Cannot serialise {}: type not supported", other.type_name()).into(),
            )
        }
    }
    Ok(())
}

/// cjson.decode's value under way: JSON read by `serde_json` is made
/// into Lua values as it is read. A Lua error (the heap's bound, the
/// script being stopped) is kept in `failed`, and the parse cut short.
#[derive(Clone, Copy)]
struct JsonToLua<'a> {
    lua: &'a Lua,
    watch: &'a Watch,
    failed: &'a std::cell::RefCell<Option<mlua::Error>>,
}

impl JsonToLua<'_> {
    fn lua_error<E: serde::de::Error>(&self, e: mlua::Error) -> E {
        *self.failed.borrow_mut() = Some(e);
        E::custom("lua")
    }

    fn string<E: serde::de::Error>(self, s: &[u8]) -> Result<Value, E> {
        self.lua
            .create_string(s)
            .map(Value::String)
            .map_err(|e| self.lua_error(e))
    }

    fn table<E: serde::de::Error>(self) -> Result<mlua::Table, E> {
        self.watch.step().map_err(|e| self.lua_error(e))?;
        self.lua.create_table().map_err(|e| self.lua_error(e))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for JsonToLua<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for JsonToLua<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Boolean(b))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n as f64))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(Value::Number(n))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
        self.string(s.as_bytes())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(null())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let t = self.table()?;
        let mut i = 1;
        while let Some(v) = seq.next_element_seed(self)? {
            t.raw_set(i, v).map_err(|e| self.lua_error(e))?;
            i += 1;
        }
        Ok(Value::Table(t))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let t = self.table()?;
        while let Some(k) = map.next_key_seed(self)? {
            let v = map.next_value_seed(self)?;
            t.raw_set(k, v).map_err(|e| self.lua_error(e))?;
        }
        Ok(Value::Table(t))
    }
}

// --------------------------------------------------------------- cmsgpack

fn cmsgpack(lua: &Lua, watch: &Arc<Watch>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let w = watch.clone();
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            if args.is_empty() {
                return Err(mlua::Error::runtime("MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                pack(&w, v, 0, &mut out)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    let w = watch.clone();
    t.raw_set(
        "unpack",
        lua.create_function(move |lua, s: mlua::String| {
            let bytes = s.as_bytes();
            let mut rd = Unpacker {
                lua,
                watch: &w,
                buf: &bytes,
                at: 0,
            };
            let mut vals = Vec::new();
            while rd.at < rd.buf.len() {
                if vals.len() == MSGPACK_MAX_RESULTS {
                    return Err(mlua::Error::runtime(
                        "stack overflow (too many return values at once; use unpack_one or \
                         unpack_limit instead.)",
                    ));
                }
                vals.push(rd.value(0)?);
            }
            Ok(MultiValue::from_iter(vals))
        })?,
    )?;
    Ok(t)
}

fn pack(w: &Watch, v: &Value, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    use rmp::encode as e;
    grown(w, out)?;
    // Writes to a Vec cannot fail.
    match v {
        Value::Boolean(b) => drop(e::write_bool(out, *b)),
        Value::Integer(i) => drop(e::write_sint(out, *i)),
        Value::Number(n) => {
            if n.fract() == 0.0 && n.abs() < 9.2e18 {
                drop(e::write_sint(out, *n as i64));
            } else if f64::from(*n as f32) == *n {
                drop(e::write_f32(out, *n as f32));
            } else {
                drop(e::write_f64(out, *n));
            }
        }
        Value::String(s) => {
            let b = s.as_bytes();
            drop(e::write_str_len(out, b.len() as u32));
            out.extend_from_slice(&b);
        }
        Value::Table(t) if depth < MSGPACK_MAX_NESTING => {
            let mut max = 0usize;
            let mut count = 0usize;
            let mut array = true;
            for (k, _) in t.pairs::<Value, Value>().filter_map(Result::ok) {
                count += 1;
                match num_of(&k) {
                    Some(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
                    _ => array = false,
                }
            }
            if array && max == count {
                drop(e::write_array_len(out, count as u32));
                for i in 1..=count {
                    let v: Value = t.raw_get(i).unwrap_or(Value::Nil);
                    pack(w, &v, depth + 1, out)?;
                }
            } else {
                drop(e::write_map_len(out, count as u32));
                for (k, v) in t.pairs::<Value, Value>().filter_map(Result::ok) {
                    pack(w, &k, depth + 1, out)?;
                    pack(w, &v, depth + 1, out)?;
                }
            }
        }
        _ => drop(e::write_nil(out)),
    }
    Ok(())
}

/// cmsgpack.unpack's input under way: each value made in Lua as it is
/// read (lua-cmsgpack's conversions: integers and floats to numbers,
/// strings and binaries to strings, extensions to nil, map entries with
/// a nil key dropped).
struct Unpacker<'a> {
    lua: &'a Lua,
    watch: &'a Watch,
    buf: &'a [u8],
    at: usize,
}

fn truncated() -> mlua::Error {
    mlua::Error::runtime("Missing bytes in input.")
}

impl<'a> Unpacker<'a> {
    fn take(&mut self, n: usize) -> mlua::Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(truncated)?;
        let b = self.buf.get(self.at..end).ok_or_else(truncated)?;
        self.at = end;
        Ok(b)
    }

    fn fixed<const N: usize>(&mut self) -> mlua::Result<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A length of `N` bytes, big-endian.
    fn len<const N: usize>(&mut self) -> mlua::Result<usize> {
        Ok(self
            .fixed::<N>()?
            .iter()
            .fold(0, |n, &b| (n << 8) | b as usize))
    }

    fn string(&mut self, n: usize) -> mlua::Result<Value> {
        let b = self.take(n)?;
        Ok(Value::String(self.lua.create_string(b)?))
    }

    fn array(&mut self, n: usize, depth: usize) -> mlua::Result<Value> {
        // Every item takes a byte at least: a length no input could fill
        // reserves nothing.
        let t = self
            .lua
            .create_table_with_capacity(n.min(self.buf.len() - self.at), 0)?;
        for i in 1..=n {
            let v = self.value(depth + 1)?;
            t.raw_set(i, v)?;
        }
        Ok(Value::Table(t))
    }

    fn map(&mut self, n: usize, depth: usize) -> mlua::Result<Value> {
        let t = self.lua.create_table()?;
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            if !k.is_nil() {
                t.raw_set(k, v)?;
            }
        }
        Ok(Value::Table(t))
    }

    fn value(&mut self, depth: usize) -> mlua::Result<Value> {
        self.watch.step()?;
        if depth > MSGPACK_MAX_DEPTH {
            return Err(mlua::Error::runtime("MessagePack data nests too deep."));
        }
        stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.value_here(depth))
    }

    fn value_here(&mut self, depth: usize) -> mlua::Result<Value> {
        use rmp::Marker as M;
        let n = |x: f64| Ok(Value::Number(x));
        let [byte] = self.fixed::<1>()?;
        match M::from_u8(byte) {
            M::FixPos(x) => n(f64::from(x)),
            M::FixNeg(x) => n(f64::from(x)),
            M::Null => Ok(Value::Nil),
            M::True => Ok(Value::Boolean(true)),
            M::False => Ok(Value::Boolean(false)),
            M::U8 => n(f64::from(u8::from_be_bytes(self.fixed()?))),
            M::U16 => n(f64::from(u16::from_be_bytes(self.fixed()?))),
            M::U32 => n(f64::from(u32::from_be_bytes(self.fixed()?))),
            M::U64 => n(u64::from_be_bytes(self.fixed()?) as f64),
            M::I8 => n(f64::from(i8::from_be_bytes(self.fixed()?))),
            M::I16 => n(f64::from(i16::from_be_bytes(self.fixed()?))),
            M::I32 => n(f64::from(i32::from_be_bytes(self.fixed()?))),
            M::I64 => n(i64::from_be_bytes(self.fixed()?) as f64),
            M::F32 => n(f64::from(f32::from_be_bytes(self.fixed()?))),
            M::F64 => n(f64::from_be_bytes(self.fixed()?)),
            M::FixStr(len) => self.string(usize::from(len)),
            M::Str8 | M::Bin8 => {
                let len = self.len::<1>()?;
                self.string(len)
            }
            M::Str16 | M::Bin16 => {
                let len = self.len::<2>()?;
                self.string(len)
            }
            M::Str32 | M::Bin32 => {
                let len = self.len::<4>()?;
                self.string(len)
            }
            M::FixArray(len) => self.array(usize::from(len), depth),
            M::Array16 => {
                let len = self.len::<2>()?;
                self.array(len, depth)
            }
            M::Array32 => {
                let len = self.len::<4>()?;
                self.array(len, depth)
            }
            M::FixMap(len) => self.map(usize::from(len), depth),
            M::Map16 => {
                let len = self.len::<2>()?;
                self.map(len, depth)
            }
            M::Map32 => {
                let len = self.len::<4>()?;
                self.map(len, depth)
            }
            ext @ (M::FixExt1 | M::FixExt2 | M::FixExt4 | M::FixExt8 | M::FixExt16) => {
                let size = match ext {
                    M::FixExt1 => 1,
                    M::FixExt2 => 2,
                    M::FixExt4 => 4,
                    M::FixExt8 => 8,
                    _ => 16,
                };
                self.take(1 + size)?;
                Ok(Value::Nil)
            }
            M::Ext8 | M::Ext16 | M::Ext32 => {
                let len = match M::from_u8(byte) {
                    M::Ext8 => self.len::<1>()?,
                    M::Ext16 => self.len::<2>()?,
                    _ => self.len::<4>()?,
                };
                self.take(1)?;
                self.take(len)?;
                Ok(Value::Nil)
            }
            M::Reserved => Err(mlua::Error::runtime("Bad data format in input.")),
        }
    }
}

// -------------------------------------------------------------------- bit

/// LuaBitOp's conversion of a number to a 32-bit integer (modulo 2^32,
/// rounding as the FPU does).
fn tobit(n: f64) -> i32 {
    (n + 6755399441055744.0).to_bits() as u32 as i32
}

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let unary = |f: fn(i32) -> i32| move |_: &Lua, n: f64| Ok(f64::from(f(tobit(n))));
    let fold = |f: fn(i32, i32) -> i32| {
        move |_: &Lua, (first, rest): (f64, Variadic<f64>)| {
            Ok(f64::from(
                rest.iter().fold(tobit(first), |acc, &n| f(acc, tobit(n))),
            ))
        }
    };
    let shift = |f: fn(i32, u32) -> i32| {
        move |_: &Lua, (x, n): (f64, f64)| Ok(f64::from(f(tobit(x), (tobit(n) & 31) as u32)))
    };
    t.raw_set("tobit", lua.create_function(unary(|x| x))?)?;
    t.raw_set("bnot", lua.create_function(unary(|x| !x))?)?;
    t.raw_set("bswap", lua.create_function(unary(i32::swap_bytes))?)?;
    t.raw_set("band", lua.create_function(fold(|a, b| a & b))?)?;
    t.raw_set("bor", lua.create_function(fold(|a, b| a | b))?)?;
    t.raw_set("bxor", lua.create_function(fold(|a, b| a ^ b))?)?;
    t.raw_set(
        "lshift",
        lua.create_function(shift(|x, n| ((x as u32) << n) as i32))?,
    )?;
    t.raw_set(
        "rshift",
        lua.create_function(shift(|x, n| ((x as u32) >> n) as i32))?,
    )?;
    t.raw_set("arshift", lua.create_function(shift(|x, n| x >> n))?)?;
    t.raw_set(
        "rol",
        lua.create_function(shift(|x, n| (x as u32).rotate_left(n) as i32))?,
    )?;
    t.raw_set(
        "ror",
        lua.create_function(shift(|x, n| (x as u32).rotate_right(n) as i32))?,
    )?;
    t.raw_set(
        "tohex",
        lua.create_function(|lua, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let upper = n < 0;
            let digits = n.unsigned_abs().min(8) as usize;
            let x = tobit(x) as u32;
            let s = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            lua.create_string(&s[8 - digits..])
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        let lua = Lua::new();
        install(&lua, &Arc::new(Watch::idle())).unwrap();
        lua
    }

    fn s(lua: &Lua, src: &str) -> std::string::String {
        lua.load(src).eval::<std::string::String>().unwrap()
    }

    #[test]
    fn cjson_encodes_as_lua_cjson() {
        let lua = lua();
        assert_eq!(
            s(&lua, "return cjson.encode({1,2,3,[5]=5})"),
            "[1,2,3,null,5]"
        );
        assert_eq!(s(&lua, "return cjson.encode({})"), "{}");
        assert_eq!(
            s(&lua, "return cjson.encode({a={b=1.5}})"),
            r#"{"a":{"b":1.5}}"#
        );
        assert_eq!(s(&lua, "return cjson.encode('a/b\"\\n')"), r#""a\/b\"\n""#);
        assert_eq!(s(&lua, "return cjson.encode(0.1)"), "0.1");
        assert_eq!(s(&lua, "return cjson.encode(1/3)"), "0.33333333333333");
        assert_eq!(s(&lua, "return cjson.encode(cjson.null)"), "null");
        let e = lua
            .load("return cjson.encode({[1]=1, [100]=2})")
            .eval::<std::string::String>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("excessively sparse array"), "{e}");
        let e = lua
            .load("local t = {}; t[1] = t; return cjson.encode(t)")
            .eval::<std::string::String>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("excessive nesting"), "{e}");
    }

    #[test]
    fn cjson_round_trips() {
        let lua = lua();
        assert_eq!(
            s(&lua, "local t = cjson.decode('[1,\"x\",{\"k\":[true]}]') return t[2] .. tostring(t[3].k[1]) .. t[1]"),
            "xtrue1"
        );
        assert!(lua
            .load("return cjson.decode('[1,null]')[2] == cjson.null")
            .eval::<bool>()
            .unwrap());
        assert!(lua.load("return cjson.decode('{')").exec().is_err());
    }

    #[test]
    fn cmsgpack_round_trips() {
        let lua = lua();
        let hex = |src: &str| -> std::string::String {
            let b: mlua::String = lua.load(src).eval().unwrap();
            b.as_bytes().iter().map(|c| format!("{c:02x}")).collect()
        };
        assert_eq!(hex("return cmsgpack.pack({1,2,3})"), "93010203");
        assert_eq!(hex("return cmsgpack.pack('abc')"), "a3616263");
        assert_eq!(hex("return cmsgpack.pack(-1, 1.5, true)"), "ffca3fc00000c3");
        assert_eq!(hex("return cmsgpack.pack({a=1})"), "81a16101");
        assert_eq!(
            s(&lua, "local a, b = cmsgpack.unpack(cmsgpack.pack({x={1,'y'}}, 300)) return a.x[2] .. a.x[1] .. b"),
            "y1300"
        );
    }

    #[test]
    fn cmsgpack_unpacks_every_format() {
        let lua = lua();
        let unpack = |hex: &str| -> std::string::String {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let f: mlua::Function = lua
                .load("return function(s) local t = {cmsgpack.unpack(s)} for i = 1, select('#', cmsgpack.unpack(s)) do local v = t[i] if type(v) == 'table' then local parts = {} for k, x in pairs(v) do parts[#parts + 1] = tostring(k) .. '=' .. tostring(x) end table.sort(parts) t[i] = '{' .. table.concat(parts, ',') .. '}' else t[i] = tostring(v) end end return table.concat(t, ' ') end")
                .eval()
                .unwrap();
            match f.call::<std::string::String>(lua.create_string(&bytes).unwrap()) {
                Ok(s) => s,
                Err(e) => format!("error: {e}"),
            }
        };
        assert_eq!(unpack("07"), "7");
        assert_eq!(unpack("ff"), "-1");
        assert_eq!(
            unpack("cc80cd0100ce00010000cf0000000100000000"),
            "128 256 65536 4294967296"
        );
        assert_eq!(
            unpack("d080d1ff00d2ffff0000d3ffffffff00000000"),
            "-128 -256 -65536 -4294967296"
        );
        assert_eq!(unpack("ca3fc00000cb3ff8000000000000"), "1.5 1.5");
        assert_eq!(unpack("c0c2c3"), "nil false true");
        assert_eq!(unpack("a161d90162da000162c40163"), "a b b c");
        assert_eq!(unpack("dc000201029201c0"), "{1=1,2=2} {1=1}");
        assert_eq!(unpack("82a16101c002"), "{a=1}");
        assert_eq!(unpack("de0001a16102"), "{a=2}");
        // Extensions read as nil, and are skipped whole.
        assert_eq!(unpack("d401ffc70201000007"), "nil nil 7");
        assert!(unpack("92").starts_with("error: "), "{}", unpack("92"));
        assert!(unpack("92").contains("Missing bytes in input."));
        assert!(unpack("da00ff61").contains("Missing bytes in input."));
        assert!(unpack("c1").contains("Bad data format in input."));
        assert!(unpack(&"91".repeat(2000)).contains("nests too deep"));
    }

    #[test]
    fn cjson_decodes_as_lua_cjson() {
        let lua = lua();
        assert_eq!(
            s(
                &lua,
                "local t = cjson.decode('{\"a\":[1,2.5,-3,\"x\\\\u0041\"],\"b\":{\"c\":false}}') \
                     return t.a[1] + t.a[2] + t.a[3] .. t.a[4] .. tostring(t.b.c)"
            ),
            "0.5xAfalse"
        );
        assert_eq!(s(&lua, "return cjson.decode('\"s\"')"), "s");
        for bad in [
            "'[1,]'",
            "'[1] x'",
            "string.rep('[', 200) .. string.rep(']', 200)",
        ] {
            let e = lua
                .load(format!("return cjson.decode({bad})"))
                .exec()
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("Expected value but found invalid token"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn bit_is_32_bit() {
        let lua = lua();
        let n = |src: &str| lua.load(src).eval::<f64>().unwrap();
        assert_eq!(n("return bit.tobit(0xffffffff)"), -1.0);
        assert_eq!(n("return bit.tobit(2^32 + 1)"), 1.0);
        assert_eq!(n("return bit.bnot(0)"), -1.0);
        assert_eq!(n("return bit.band(0xff, 0x0f, 0x3)"), 3.0);
        assert_eq!(n("return bit.bor(1, 2, 4)"), 7.0);
        assert_eq!(n("return bit.bxor(3, 1)"), 2.0);
        assert_eq!(n("return bit.lshift(1, 31)"), -2147483648.0);
        assert_eq!(n("return bit.rshift(-1, 28)"), 15.0);
        assert_eq!(n("return bit.arshift(-256, 4)"), -16.0);
        assert_eq!(n("return bit.rol(0x80000000, 1)"), 1.0);
        assert_eq!(n("return bit.bswap(0x12345678)"), 2018915346.0);
        assert_eq!(s(&lua, "return bit.tohex(255)"), "000000ff");
        assert_eq!(s(&lua, "return bit.tohex(-1, -4)"), "FFFF");
    }
}
