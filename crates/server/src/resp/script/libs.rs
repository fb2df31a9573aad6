//! The libraries Redis adds to Lua that mlua lacks, with Redis's
//! behaviour: `cjson` (lua-cjson 2.1's encoding rules on `serde_json`'s
//! parser), `cmsgpack` (lua-cmsgpack's formats on `rmp`) and `bit`
//! (LuaBitOp's 32-bit operations); `struct` is in [`super::structlib`].
//! Encoding counts its steps with the script's [`Watch`] and is bounded
//! by the Lua heap's size: a table reached many times over (`t = {t, t}`
//! nested thirty deep) encodes to more than fits in memory, in more time
//! than a script may run.

use std::sync::Arc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value, Variadic};

use super::Watch;

/// How deep cjson and cmsgpack go into nested tables.
const CJSON_MAX_DEPTH: usize = 1000;
const MSGPACK_MAX_NESTING: usize = 16;
/// How many values cmsgpack.unpack returns at most: each is a slot on a
/// Lua stack, whose size Lua 5.1 bounds (`LUAI_MAXCSTACK`, 8000).
const MSGPACK_MAX_RESULTS: usize = 4000;

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
    t.raw_set(
        "decode",
        lua.create_function(|lua, s: mlua::String| {
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| {
                mlua::Error::runtime(format!(
                    "Expected value but found invalid token at character {}",
                    e.column().max(1)
                ))
            })?;
            json_to_lua(lua, &v)
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

fn json_to_lua(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => null(),
        J::Bool(b) => Value::Boolean(*b),
        J::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        J::String(s) => Value::String(lua.create_string(s)?),
        J::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, json_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        J::Object(m) => {
            let t = lua.create_table_with_capacity(0, m.len())?;
            for (k, item) in m {
                t.raw_set(lua.create_string(k)?, json_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
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
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| {
            let bytes = s.as_bytes();
            let mut rd: &[u8] = &bytes;
            let mut vals = Vec::new();
            while !rd.is_empty() {
                if vals.len() == MSGPACK_MAX_RESULTS {
                    return Err(mlua::Error::runtime(
                        "stack overflow (too many return values at once; use unpack_one or \
                         unpack_limit instead.)",
                    ));
                }
                let v = rmpv::decode::read_value(&mut rd)
                    .map_err(|_| mlua::Error::runtime("Missing bytes in input."))?;
                vals.push(unpack(lua, &v)?);
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

fn unpack(lua: &Lua, v: &rmpv::Value) -> mlua::Result<Value> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || unpack_here(lua, v))
}

fn unpack_here(lua: &Lua, v: &rmpv::Value) -> mlua::Result<Value> {
    use rmpv::Value as M;
    Ok(match v {
        M::Nil => Value::Nil,
        M::Boolean(b) => Value::Boolean(*b),
        M::Integer(i) => Value::Number(i.as_f64().unwrap_or(0.0)),
        M::F32(f) => Value::Number(f64::from(*f)),
        M::F64(f) => Value::Number(*f),
        M::String(s) => Value::String(lua.create_string(s.as_bytes())?),
        M::Binary(b) => Value::String(lua.create_string(b)?),
        M::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, unpack(lua, item)?)?;
            }
            Value::Table(t)
        }
        M::Map(pairs) => {
            let t = lua.create_table()?;
            for (k, item) in pairs {
                let k = unpack(lua, k)?;
                if !k.is_nil() {
                    t.raw_set(k, unpack(lua, item)?)?;
                }
            }
            Value::Table(t)
        }
        M::Ext(..) => Value::Nil,
    })
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
