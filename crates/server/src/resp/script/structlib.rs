//! The `struct` library Redis gives scripts (`struct.pack`,
//! `struct.unpack`, `struct.size`): a port of Redis 7.0's
//! `deps/lua/src/lua_struct.c`, byte for byte in what it packs and word for
//! word in its errors. No crate packs this format (it is neither Lua 5.3's
//! `string.pack` nor Python's `struct`), hence the port.
//!
//! The C library's behaviour on the platform Redis runs on (x86-64,
//! LP64) is the reference, including what looks accidental: sizes that are
//! not powers of two aligned by the same bit trick, shifts masked to six
//! bits for integers wider than eight bytes, C's casts of out-of-range
//! numbers.

use mlua::{Lua, MultiValue, Value};

/// `MAXINTSIZE`: the widest `i`/`I`.
const MAX_INT_SIZE: usize = 32;
/// `MAXALIGN` on x86-64: `!` alone.
const MAX_ALIGN: usize = 8;
/// Lua 5.1's `LUAI_MAXCSTACK`: a C function's stack slots.
const MAX_C_STACK: usize = 8000;

/// Why a call fails: Lua's `luaL_argerror` (argument number and text) or
/// `luaL_error`.
#[derive(Debug, PartialEq)]
pub enum Fail {
    Arg(usize, String),
    Plain(String),
    /// Lua's out-of-memory error: no position.
    Memory,
}

impl Fail {
    /// The message as Lua words it, without the caller's position.
    pub fn text(&self, func: &str) -> String {
        match self {
            Fail::Arg(n, m) => format!("bad argument #{n} to '{func}' ({m})"),
            Fail::Plain(m) => m.clone(),
            Fail::Memory => "not enough memory".into(),
        }
    }
}

/// The arguments as the C function sees its stack: `extra_nil` is the
/// `nil` `b_pack` pushes right above them, which its missing arguments
/// read.
struct Args<'a> {
    lua: &'a Lua,
    v: &'a [Value],
    extra_nil: bool,
}

pub(super) fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

impl Args<'_> {
    fn get(&self, n: usize) -> Option<Value> {
        match self.v.get(n - 1) {
            Some(v) => Some(v.clone()),
            None if self.extra_nil && n == self.v.len() + 1 => Some(Value::Nil),
            None => None,
        }
    }

    fn type_error(&self, n: usize, want: &str) -> Fail {
        Fail::Arg(
            n,
            format!("{want} expected, got {}", type_name(self.get(n).as_ref())),
        )
    }

    /// `luaL_checknumber`: numbers, and strings Lua reads as numbers.
    fn number(&self, n: usize) -> Result<f64, Fail> {
        let v = self.get(n).unwrap_or(Value::Nil);
        match self.lua.coerce_number(v) {
            Ok(Some(x)) => Ok(x),
            _ => Err(self.type_error(n, "number")),
        }
    }

    /// `luaL_checklstring`: strings, and numbers in Lua's `%.14g`.
    fn string(&self, n: usize) -> Result<Vec<u8>, Fail> {
        let v = self.get(n).unwrap_or(Value::Nil);
        match v {
            Value::String(_) | Value::Integer(_) | Value::Number(_) => {
                match self.lua.coerce_string(v) {
                    Ok(Some(s)) => Ok(s.as_bytes().to_vec()),
                    _ => Err(self.type_error(n, "string")),
                }
            }
            _ => Err(self.type_error(n, "string")),
        }
    }

    /// The format: C reads it up to its first NUL.
    fn format(&self) -> Result<Vec<u8>, Fail> {
        let mut f = self.string(1)?;
        if let Some(end) = f.iter().position(|&c| c == 0) {
            f.truncate(end);
        }
        Ok(f)
    }
}

/// The format being read, with `Header`'s endianness and alignment.
struct Format {
    f: Vec<u8>,
    at: usize,
    big: bool,
    align: usize,
}

impl Format {
    fn new(f: Vec<u8>) -> Format {
        // Native order: little-endian, as on the platforms Redis ships for.
        Format {
            f,
            at: 0,
            big: false,
            align: 1,
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.f.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    /// `getnum`: the digits after an option, into a C `int`.
    fn num(&mut self, default: usize) -> Result<usize, Fail> {
        if !self.f.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&c) = self.f.get(self.at).filter(|c| c.is_ascii_digit()) {
            let d = i32::from(c - b'0');
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(Fail::Plain("integral size overflow".into()));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a as usize)
    }

    /// `optsize`: the bytes an option takes (0 for the control options and
    /// any other character).
    fn size(&mut self, opt: u8) -> Result<usize, Fail> {
        Ok(match opt {
            b'b' | b'B' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'x' => 1,
            b'c' => self.num(1)?,
            b'i' | b'I' => {
                let sz = self.num(4)?;
                if sz > MAX_INT_SIZE {
                    return Err(Fail::Plain(format!(
                        "integral size {sz} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                sz
            }
            _ => 0,
        })
    }

    /// `gettoalign`: padding before an item of `size` bytes at `len`; the
    /// bit trick is kept for sizes that are not powers of two.
    fn to_align(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        (size.wrapping_sub(len & (size - 1))) & (size - 1)
    }

    /// `controloptions`: endianness, alignment, spaces; anything else is
    /// an invalid option.
    fn control(&mut self, opt: u8) -> Result<(), Fail> {
        match opt {
            b' ' => {}
            b'>' => self.big = true,
            b'<' => self.big = false,
            b'!' => {
                let a = self.num(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(Fail::Plain(format!("alignment {a} is not a power of 2")));
                }
                self.align = a;
            }
            _ => {
                return Err(Fail::Arg(
                    1,
                    format!("invalid format option '{}'", char::from(opt)),
                ))
            }
        }
        Ok(())
    }
}

/// 2^63, exactly.
const TWO63: f64 = 9_223_372_036_854_775_808_u64 as f64;

/// C's `(long)n` on x86-64: out of range and NaN give `LONG_MIN`.
fn c_long(n: f64) -> i64 {
    if n.is_nan() || !(-TWO63..TWO63).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// C's `(unsigned long)n` for `n >= 0` as gcc compiles it for x86-64.
fn c_ulong(n: f64) -> u64 {
    if n < TWO63 || n.is_nan() {
        c_long(n) as u64
    } else {
        (c_long(n - TWO63) as u64) ^ (1 << 63)
    }
}

fn put_integer(out: &mut Vec<u8>, n: f64, big: bool, size: usize) {
    let mut value = if n < 0.0 {
        c_long(n) as u64
    } else {
        c_ulong(n)
    };
    let start = out.len();
    out.resize(start + size, 0);
    let buf = &mut out[start..];
    for i in 0..size {
        let at = if big { size - 1 - i } else { i };
        buf[at] = (value & 0xff) as u8;
        value >>= 8;
    }
}

fn get_integer(buf: &[u8], big: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut add = |b: u8| l = (l << 8) | u64::from(b);
    if big {
        buf.iter().for_each(|&b| add(b));
    } else {
        buf.iter().rev().for_each(|&b| add(b));
    }
    if !signed {
        return l as f64;
    }
    // `size*8 - 1` as the shift count: x86 masks it to six bits.
    let shift = ((buf.len() * 8) as u32).wrapping_sub(1) & 63;
    let mask = u64::MAX << shift;
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn ordered<const N: usize>(mut b: [u8; N], big: bool) -> [u8; N] {
    if big {
        b.reverse();
    }
    b
}

/// `struct.pack(fmt, ...)`.
pub fn pack(lua: &Lua, v: &[Value]) -> Result<Vec<u8>, Fail> {
    let args = Args {
        lua,
        v,
        extra_nil: true,
    };
    let mut fmt = Format::new(args.format()?);
    let mut arg = 2;
    let mut out = Vec::new();
    let mut total = 0usize;
    while let Some(opt) = fmt.next() {
        let mut size = fmt.size(opt)?;
        let pad = fmt.to_align(total, opt, size);
        total += pad;
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = args.number(arg)?;
                arg += 1;
                put_integer(&mut out, n, fmt.big, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = args.number(arg)? as f32;
                arg += 1;
                out.extend_from_slice(&ordered(n.to_le_bytes(), fmt.big));
            }
            b'd' => {
                let n = args.number(arg)?;
                arg += 1;
                out.extend_from_slice(&ordered(n.to_le_bytes(), fmt.big));
            }
            b'c' | b's' => {
                let s = args.string(arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // The C code names the argument after the string.
                    return Err(Fail::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => fmt.control(opt)?,
        }
        total += size;
    }
    Ok(out)
}

/// What `struct.unpack` answers: numbers and strings, then the position
/// after the last item.
#[derive(Debug, PartialEq)]
pub enum Item {
    Num(f64),
    Str(Vec<u8>),
}

/// `struct.unpack(fmt, data [, pos])`.
pub fn unpack(lua: &Lua, v: &[Value]) -> Result<Vec<Item>, Fail> {
    let args = Args {
        lua,
        v,
        extra_nil: false,
    };
    let mut fmt = Format::new(args.format()?);
    let data = args.string(2)?;
    let ld = data.len();
    let start = match args.get(3) {
        None | Some(Value::Nil) => 1,
        Some(v) => match lua.coerce_number(v) {
            Ok(Some(n)) => c_long(n),
            _ => return Err(args.type_error(3, "number")),
        },
    };
    // A size_t in C: a negative offset wraps and fails the length check.
    if start == 0 {
        return Err(Fail::Arg(3, "offset must be 1 or greater".into()));
    }
    let mut pos = (start as u64 as usize).wrapping_sub(1);
    let short = || Fail::Arg(2, "data string too short".into());
    let mut out: Vec<Item> = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = fmt.size(opt)?;
        pos = pos.wrapping_add(fmt.to_align(pos, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(short());
        }
        // Two arguments and the items on a C function's stack.
        if 2 + out.len() + 1 > MAX_C_STACK {
            return Err(Fail::Plain("stack overflow (too many results)".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                out.push(Item::Num(get_integer(
                    &data[pos..pos + size],
                    fmt.big,
                    signed,
                )));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                out.push(Item::Num(f64::from(f32::from_le_bytes(ordered(
                    b, fmt.big,
                )))));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                out.push(Item::Num(f64::from_le_bytes(ordered(b, fmt.big))));
            }
            b'c' => {
                if size == 0 {
                    let prev = match out.last() {
                        Some(Item::Num(n)) => Some(*n),
                        Some(Item::Str(s)) => match lua.create_string(s) {
                            Ok(s) => lua.coerce_number(Value::String(s)).ok().flatten(),
                            Err(_) => None,
                        },
                        None => None,
                    };
                    let Some(n) = prev else {
                        return Err(Fail::Plain("format 'c0' needs a previous size".into()));
                    };
                    size = if n < 0.0 {
                        c_long(n) as u64
                    } else {
                        c_ulong(n)
                    } as usize;
                    out.pop();
                    if !(size <= ld && pos <= ld - size) {
                        return Err(short());
                    }
                }
                out.push(Item::Str(data[pos..pos + size].to_vec()));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(Fail::Plain("unfinished string in data".into()));
                };
                size = end + 1;
                out.push(Item::Str(data[pos..pos + end].to_vec()));
            }
            _ => fmt.control(opt)?,
        }
        pos = pos.wrapping_add(size);
    }
    out.push(Item::Num(pos.wrapping_add(1) as i64 as f64));
    Ok(out)
}

/// `struct.size(fmt)`.
pub fn size(lua: &Lua, v: &[Value]) -> Result<usize, Fail> {
    let args = Args {
        lua,
        v,
        extra_nil: false,
    };
    let mut fmt = Format::new(args.format()?);
    let mut pos = 0usize;
    while let Some(opt) = fmt.next() {
        let size = fmt.size(opt)?;
        pos = pos.wrapping_add(fmt.to_align(pos, opt, size));
        if opt == b's' {
            return Err(Fail::Arg(1, "option 's' has no fixed size".into()));
        }
        if opt == b'c' && size == 0 {
            return Err(Fail::Arg(1, "option 'c0' has no fixed size".into()));
        }
        // Letters and digits it does not know count for nothing here.
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos)
}

/// Lua's `luaL_where(L, 1)`: the calling Lua line, empty when the caller
/// is a C function (as `pcall`, here a function of the environment).
fn caller(lua: &Lua) -> String {
    let Some(d) = lua.inspect_stack(1) else {
        return String::new();
    };
    let line = d.curr_line();
    let src = d.source();
    match src.short_src {
        Some(s) if line > 0 && s != "podium" => format!("{s}:{line}: "),
        _ => String::new(),
    }
}

/// Raises `fail` as Lua's string error with the caller's position.
pub(super) fn raise(lua: &Lua, func: &str, fail: Fail) -> mlua::Error {
    let at = match fail {
        Fail::Memory => String::new(),
        _ => caller(lua),
    };
    let msg = format!("{at}{}", fail.text(func));
    match lua.create_string(&msg) {
        Ok(s) => {
            if let Err(e) = lua.set_named_registry_value(super::PENDING_NAME, s) {
                return e;
            }
            mlua::Error::runtime(msg)
        }
        Err(e) => e,
    }
}

/// The `struct` table.
pub fn table(lua: &Lua) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, a: MultiValue| {
            let a: Vec<Value> = a.into_iter().collect();
            match pack(lua, &a) {
                Ok(b) => lua.create_string(&b),
                Err(f) => Err(raise(lua, "pack", f)),
            }
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, a: MultiValue| {
            let a: Vec<Value> = a.into_iter().collect();
            match unpack(lua, &a) {
                Ok(items) => items
                    .into_iter()
                    .map(|i| match i {
                        Item::Num(n) => Ok(Value::Number(n)),
                        Item::Str(s) => lua.create_string(&s).map(Value::String),
                    })
                    .collect::<mlua::Result<MultiValue>>(),
                Err(f) => Err(raise(lua, "unpack", f)),
            }
        })?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|lua, a: MultiValue| {
            let a: Vec<Value> = a.into_iter().collect();
            match size(lua, &a) {
                Ok(n) => Ok(n as i64 as f64),
                Err(f) => Err(raise(lua, "size", f)),
            }
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> Lua {
        Lua::new()
    }

    fn s(lua: &Lua, x: &[u8]) -> Value {
        Value::String(lua.create_string(x).unwrap())
    }

    fn n(x: f64) -> Value {
        Value::Number(x)
    }

    #[test]
    fn packs_as_lua_struct_does() {
        let l = lua();
        let p = |f: &str, rest: Vec<Value>| {
            let mut a = vec![s(&l, f.as_bytes())];
            a.extend(rest);
            pack(&l, &a)
        };
        assert_eq!(p(">i2", vec![n(258.0)]).unwrap(), [1, 2]);
        assert_eq!(p("<i2", vec![n(258.0)]).unwrap(), [2, 1]);
        assert_eq!(p("i3", vec![n(1.0)]).unwrap(), [1, 0, 0]);
        assert_eq!(p("b", vec![n(-1.0)]).unwrap(), [0xff]);
        assert_eq!(p(">I10", vec![n(-1.0)]).unwrap()[..2], [0, 0]);
        assert_eq!(
            p("b!4i", vec![n(1.0), n(2.0)]).unwrap(),
            [1, 0, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(p("bi", vec![n(1.0), n(2.0)]).unwrap(), [1, 2, 0, 0, 0]);
        assert_eq!(p("s", vec![s(&l, b"ab")]).unwrap(), b"ab\0");
        assert_eq!(p("c0", vec![s(&l, b"ab")]).unwrap(), b"ab");
        assert_eq!(p("c1x", vec![s(&l, b"ab")]).unwrap(), b"a\0");
        assert_eq!(p(">d", vec![n(1.0)]).unwrap(), 1f64.to_be_bytes());
        assert_eq!(p("f", vec![n(1.5)]).unwrap(), 1.5f32.to_le_bytes());
        assert_eq!(p("b", vec![s(&l, b" 0x10 ")]).unwrap(), [0x10]);
        // The format ends at a NUL.
        assert_eq!(p("\0X", vec![]).unwrap(), b"");
    }

    #[test]
    fn pack_errors_are_lua_structs() {
        let l = lua();
        let p = |f: &str, rest: Vec<Value>| {
            let mut a = vec![s(&l, f.as_bytes())];
            a.extend(rest);
            pack(&l, &a).unwrap_err().text("pack")
        };
        assert_eq!(
            p(">X", vec![n(1.0)]),
            "bad argument #1 to 'pack' (invalid format option 'X')"
        );
        assert_eq!(
            p("i40", vec![]),
            "integral size 40 is larger than limit of 32"
        );
        assert_eq!(p("i99999999999", vec![]), "integral size overflow");
        assert_eq!(
            p("c5", vec![s(&l, b"ab")]),
            "bad argument #3 to 'pack' (string too short)"
        );
        assert_eq!(p("!3i", vec![]), "alignment 3 is not a power of 2");
        assert_eq!(
            p("i", vec![s(&l, b"x")]),
            "bad argument #2 to 'pack' (number expected, got string)"
        );
        // b_pack's own nil above the arguments, then nothing.
        assert_eq!(
            p("i", vec![]),
            "bad argument #2 to 'pack' (number expected, got nil)"
        );
        assert_eq!(
            p("ii", vec![n(1.0)]),
            "bad argument #3 to 'pack' (number expected, got nil)"
        );
        assert_eq!(
            pack(&l, &[Value::Nil]).unwrap_err().text("pack"),
            "bad argument #1 to 'pack' (string expected, got nil)"
        );
    }

    #[test]
    fn unpacks_as_lua_struct_does() {
        let l = lua();
        let u = |f: &str, d: &[u8], rest: Vec<Value>| {
            let mut a = vec![s(&l, f.as_bytes()), s(&l, d)];
            a.extend(rest);
            unpack(&l, &a)
        };
        assert_eq!(
            u(">i2", &[1, 2], vec![]).unwrap(),
            [Item::Num(258.0), Item::Num(3.0)]
        );
        assert_eq!(
            u("bB", &[0xff, 0xff], vec![]).unwrap(),
            [Item::Num(-1.0), Item::Num(255.0), Item::Num(3.0)]
        );
        assert_eq!(
            u("i", b"abcd", vec![n(1.9)]).unwrap(),
            [Item::Num(1684234849.0), Item::Num(5.0)]
        );
        assert_eq!(
            u("sb", b"hi\0\x07", vec![]).unwrap(),
            [Item::Str(b"hi".to_vec()), Item::Num(7.0), Item::Num(5.0)]
        );
        assert_eq!(
            u("bc0", b"\x02xyz", vec![]).unwrap(),
            [Item::Str(b"xy".to_vec()), Item::Num(4.0)]
        );
        assert_eq!(
            u("!4bi", &[1, 9, 9, 9, 2, 0, 0, 0], vec![]).unwrap(),
            [Item::Num(1.0), Item::Num(2.0), Item::Num(9.0)]
        );
        assert_eq!(
            u("<d", &2.5f64.to_le_bytes(), vec![]).unwrap(),
            [Item::Num(2.5), Item::Num(9.0)]
        );
        // Twelve bytes: the low eight, signed from bit 31 (the masked shift).
        assert_eq!(
            u("<i12", &[0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0], vec![]).unwrap()[0],
            Item::Num(-2147483648.0)
        );
        let e = |f: &str, d: &[u8], rest: Vec<Value>| u(f, d, rest).unwrap_err().text("unpack");
        assert_eq!(
            e("i4", b"ab", vec![]),
            "bad argument #2 to 'unpack' (data string too short)"
        );
        assert_eq!(
            e("b", b"abc", vec![n(0.0)]),
            "bad argument #3 to 'unpack' (offset must be 1 or greater)"
        );
        assert_eq!(
            e("b", b"abc", vec![n(-5.0)]),
            "bad argument #2 to 'unpack' (data string too short)"
        );
        assert_eq!(e("c0", b"0", vec![]), "format 'c0' needs a previous size");
        assert_eq!(e("s", b"ab", vec![]), "unfinished string in data");
        assert_eq!(
            e("b", b"a", vec![s(&l, b"2x")]),
            "bad argument #3 to 'unpack' (number expected, got string)"
        );
        assert_eq!(
            unpack(&l, &[s(&l, b"b")]).unwrap_err().text("unpack"),
            "bad argument #2 to 'unpack' (string expected, got no value)"
        );
        let many = vec![0u8; 9000];
        assert_eq!(
            e(&"b".repeat(9000), &many, vec![]),
            "stack overflow (too many results)"
        );
    }

    #[test]
    fn sizes_as_lua_struct_does() {
        let l = lua();
        let z = |f: &str| size(&l, &[s(&l, f.as_bytes())]);
        for (f, want) in [
            ("X", 0),
            ("!4i3", 5),
            ("!4i3c", 6),
            ("bXi", 5),
            ("b!4Xh", 4),
            ("b!Xd", 16),
            ("i3", 3),
        ] {
            assert_eq!(z(f), Ok(want), "{f}");
        }
        assert_eq!(
            z("s").unwrap_err().text("size"),
            "bad argument #1 to 'size' (option 's' has no fixed size)"
        );
        assert_eq!(
            z("c0").unwrap_err().text("size"),
            "bad argument #1 to 'size' (option 'c0' has no fixed size)"
        );
        assert_eq!(
            z("#").unwrap_err().text("size"),
            "bad argument #1 to 'size' (invalid format option '#')"
        );
    }
}
