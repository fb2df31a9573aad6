//! The string and table functions whose C versions can run for ever
//! without executing a VM instruction, so that neither the count hook
//! nor SCRIPT KILL could stop them: Lua 5.1's pattern matching
//! (`string.find`, `match`, `gmatch`, `gsub`, ported from `lstrlib.c`
//! with its results and errors; backtracking is exponential on patterns
//! such as `a?a?…aaa…b`, and plain `find` was quadratic), `string.rep`
//! and `table.concat`. Each step of their work is counted by the
//! script's [`Watch`], which stops them as the hook stops Lua code, and
//! what they build is refused up front past the Lua heap's bound.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value};

use super::structlib::{raise, type_name, Fail};
use super::Watch;

/// `LUA_MAXCAPTURES`.
const MAX_CAPTURES: usize = 32;
/// How deep matching may recurse (Lua 5.2's `MAXCCALLS`; 5.1 recursed
/// until the C stack ran out, which a long pattern of `?` items did).
const MAX_DEPTH: u32 = 200;
const CAP_UNFINISHED: isize = -1;
const CAP_POSITION: isize = -2;
const L_ESC: u8 = b'%';
/// What makes `find` match a pattern rather than plain text.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// Why a call fails: Lua's own error text, or the script being stopped
/// (or a Lua function called by gsub failing), passed on as it is.
enum Err {
    Lua(Fail),
    Stop(mlua::Error),
}

impl From<mlua::Error> for Err {
    fn from(e: mlua::Error) -> Err {
        Err::Stop(e)
    }
}

type R<T> = Result<T, Err>;

fn fail<T>(msg: &str) -> R<T> {
    Err(Err::Lua(Fail::Plain(msg.into())))
}

/// Turns a failure into the error Lua raises, positioned at the caller.
fn raised(lua: &Lua, func: &str, e: Err) -> mlua::Error {
    match e {
        Err::Lua(f) => raise(lua, func, f),
        Err::Stop(e) => e,
    }
}

// ------------------------------------------------------------ arguments

fn arg(args: &MultiValue, n: usize) -> Option<&Value> {
    args.get(n - 1)
}

/// `luaL_checklstring`: strings, and numbers in Lua's `%.14g`.
fn check_string(lua: &Lua, args: &MultiValue, n: usize) -> R<mlua::String> {
    let v = arg(args, n);
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => match lua.coerce_string(v.clone())? {
            Some(s) => Ok(s),
            None => Err(Err::Lua(Fail::Arg(n, "string expected, got number".into()))),
        },
        other => Err(Err::Lua(Fail::Arg(
            n,
            format!("string expected, got {}", type_name(other)),
        ))),
    }
}

/// `luaL_optlstring`.
fn opt_string(lua: &Lua, args: &MultiValue, n: usize) -> R<Option<mlua::String>> {
    match arg(args, n) {
        None | Some(Value::Nil) => Ok(None),
        _ => check_string(lua, args, n).map(Some),
    }
}

/// `luaL_checkinteger`: numbers and numeric strings, truncated.
fn check_int(lua: &Lua, args: &MultiValue, n: usize) -> R<i64> {
    let v = arg(args, n).cloned().unwrap_or(Value::Nil);
    let t = type_name(arg(args, n));
    match lua.coerce_number(v)? {
        Some(x) => Ok(x as i64),
        None => Err(Err::Lua(Fail::Arg(n, format!("number expected, got {t}")))),
    }
}

/// `luaL_optinteger`.
fn opt_int(lua: &Lua, args: &MultiValue, n: usize, default: i64) -> R<i64> {
    match arg(args, n) {
        None | Some(Value::Nil) => Ok(default),
        _ => check_int(lua, args, n),
    }
}

/// `luaL_checkint`: a C `int`.
fn c_int(x: i64) -> i64 {
    x as i32 as i64
}

/// The pattern as C reads it: up to its first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(end) => &b[..end],
        None => b,
    }
}

// ------------------------------------------------------------- matching

fn match_class(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | 9..=13),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_lowercase() {
        res
    } else {
        !res
    }
}

/// A capture's value: its text, or its position (`()`), 1-based.
enum Cap<'a> {
    Text(&'a [u8]),
    Pos(usize),
}

/// `MatchState`.
struct Matcher<'a> {
    src: &'a [u8],
    /// Read up to its first NUL, as C does.
    pat: &'a [u8],
    level: usize,
    /// Each capture's start and length ([`CAP_UNFINISHED`],
    /// [`CAP_POSITION`]).
    capture: [(usize, isize); MAX_CAPTURES],
    depth: u32,
    watch: &'a Watch,
}

impl<'a> Matcher<'a> {
    fn new(src: &'a [u8], pat: &'a [u8], watch: &'a Watch) -> Matcher<'a> {
        Matcher {
            src,
            pat: c_str(pat),
            level: 0,
            capture: [(0, 0); MAX_CAPTURES],
            depth: 0,
            watch,
        }
    }

    /// The pattern's byte at `i`; its end reads as C's NUL.
    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    /// The subject's byte at `i`; its end reads as Lua's trailing NUL.
    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn class_end(&self, mut p: usize) -> R<usize> {
        let c = self.p(p);
        p += 1;
        match c {
            L_ESC => {
                if p >= self.pat.len() {
                    return fail("malformed pattern (ends with '%')");
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= self.pat.len() {
                        return fail("malformed pattern (missing ']')");
                    }
                    let c = self.p(p);
                    p += 1;
                    if c == L_ESC && p < self.pat.len() {
                        p += 1;
                    }
                    if self.p(p) == b']' {
                        break;
                    }
                }
                Ok(p + 1)
            }
            _ => Ok(p),
        }
    }

    fn match_bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut sig = true;
        if self.p(p + 1) == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                break;
            }
            if self.p(p) == L_ESC {
                p += 1;
                if match_class(c, self.p(p)) {
                    return sig;
                }
            } else if self.p(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if self.p(p - 2) <= c && c <= self.p(p) {
                    return sig;
                }
            } else if self.p(p) == c {
                return sig;
            }
        }
        !sig
    }

    fn single_match(&self, c: u8, p: usize, ep: usize) -> bool {
        match self.p(p) {
            b'.' => true,
            L_ESC => match_class(c, self.p(p + 1)),
            b'[' => self.match_bracket_class(c, p, ep - 1),
            pc => pc == c,
        }
    }

    /// `match`: where a match of the pattern from `p` at `s` ends.
    fn do_match(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return fail("pattern too complex");
        }
        let r = self.match_here(s, p);
        self.depth -= 1;
        r
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> R<Option<usize>> {
        loop {
            self.watch.step()?;
            if p >= self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, CAP_POSITION)
                    } else {
                        self.start_capture(s, p + 1, CAP_UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                L_ESC if self.p(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(e) => {
                        s = e;
                        p += 4;
                    }
                    None => return Ok(None),
                },
                L_ESC if self.p(p + 1) == b'f' => {
                    p += 2;
                    if self.p(p) != b'[' {
                        return fail("missing '[' after '%f' in pattern");
                    }
                    let ep = self.class_end(p)?;
                    let prev = if s == 0 { 0 } else { self.s(s - 1) };
                    if self.match_bracket_class(prev, p, ep - 1)
                        || !self.match_bracket_class(self.s(s), p, ep - 1)
                    {
                        return Ok(None);
                    }
                    p = ep;
                }
                L_ESC if self.p(p + 1).is_ascii_digit() => {
                    match self.match_capture(s, self.p(p + 1))? {
                        Some(e) => {
                            s = e;
                            p += 2;
                        }
                        None => return Ok(None),
                    }
                }
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                _ => {
                    let ep = self.class_end(p)?;
                    let m = s < self.src.len() && self.single_match(self.src[s], p, ep);
                    match self.p(ep) {
                        b'?' => {
                            if m {
                                if let Some(e) = self.do_match(s + 1, ep + 1)? {
                                    return Ok(Some(e));
                                }
                            }
                            p = ep + 1;
                        }
                        b'*' => return self.max_expand(s, p, ep),
                        b'+' => {
                            return match m {
                                true => self.max_expand(s + 1, p, ep),
                                false => Ok(None),
                            }
                        }
                        b'-' => return self.min_expand(s, p, ep),
                        _ => {
                            if !m {
                                return Ok(None);
                            }
                            s += 1;
                            p = ep;
                        }
                    }
                }
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        let mut i = 0;
        while s + i < self.src.len() && self.single_match(self.src[s + i], p, ep) {
            self.watch.step()?;
            i += 1;
        }
        loop {
            if let Some(e) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(e));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        loop {
            if let Some(e) = self.do_match(s, ep + 1)? {
                return Ok(Some(e));
            }
            if s < self.src.len() && self.single_match(self.src[s], p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> R<Option<usize>> {
        let level = self.level;
        if level >= MAX_CAPTURES {
            return fail("too many captures");
        }
        self.capture[level] = (s, what);
        self.level = level + 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| self.capture[l].1 == CAP_UNFINISHED)
        else {
            return fail("invalid pattern capture");
        };
        self.capture[l].1 = (s - self.capture[l].0) as isize;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.capture[l].1 = CAP_UNFINISHED;
        }
        Ok(r)
    }

    fn match_balance(&mut self, mut s: usize, p: usize) -> R<Option<usize>> {
        if p + 1 >= self.pat.len() {
            return fail("unbalanced pattern");
        }
        if self.s(s) != self.pat[p] {
            return Ok(None);
        }
        let (b, e) = (self.pat[p], self.pat[p + 1]);
        let mut cont = 1;
        loop {
            s += 1;
            if s >= self.src.len() {
                return Ok(None);
            }
            self.watch.step()?;
            let c = self.src[s];
            if c == e {
                cont -= 1;
                if cont == 0 {
                    return Ok(Some(s + 1));
                }
            } else if c == b {
                cont += 1;
            }
        }
    }

    fn match_capture(&mut self, s: usize, l: u8) -> R<Option<usize>> {
        let l = self.check_capture(l)?;
        let (init, len) = self.capture[l];
        // A position capture's length, read as C's size_t, never fits.
        if len < 0 {
            return Ok(None);
        }
        let len = len as usize;
        self.watch.steps(len / 64)?;
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    fn check_capture(&self, l: u8) -> R<usize> {
        let l = l as i32 - b'1' as i32;
        if l < 0 || l as usize >= self.level || self.capture[l as usize].1 == CAP_UNFINISHED {
            return fail("invalid capture index");
        }
        Ok(l as usize)
    }

    /// Capture `i` of the match `s..e` (`push_onecapture`).
    fn get_capture(&self, i: usize, s: usize, e: usize) -> R<Cap<'a>> {
        if i >= self.level {
            if i == 0 {
                return Ok(Cap::Text(&self.src[s..e]));
            }
            return fail("invalid capture index");
        }
        let (init, len) = self.capture[i];
        match len {
            CAP_UNFINISHED => fail("unfinished capture"),
            CAP_POSITION => Ok(Cap::Pos(init + 1)),
            len => Ok(Cap::Text(&self.src[init..init + len as usize])),
        }
    }

    /// `push_captures`: every capture, or the whole match (when `s` is
    /// given) if there are none.
    fn captures(&self, lua: &Lua, s: Option<usize>, e: usize) -> R<Vec<Value>> {
        let n = if self.level == 0 && s.is_some() {
            1
        } else {
            self.level
        };
        (0..n)
            .map(|i| cap_value(lua, self.get_capture(i, s.unwrap_or(0), e)?))
            .collect()
    }

    /// Ready for a match attempt at a new position.
    fn reset(&mut self) {
        self.level = 0;
        self.depth = 0;
    }
}

fn cap_value(lua: &Lua, c: Cap) -> R<Value> {
    Ok(match c {
        Cap::Text(t) => Value::String(lua.create_string(t)?),
        Cap::Pos(p) => Value::Integer(p as i64),
    })
}

/// `posrelat`: a negative position counts from the end.
fn posrelat(pos: i64, len: usize) -> i64 {
    let pos = if pos < 0 { pos + len as i64 + 1 } else { pos };
    pos.max(0)
}

/// `str_find_aux`.
fn find_aux(lua: &Lua, watch: &Watch, args: &MultiValue, find: bool) -> R<MultiValue> {
    let s = check_string(lua, args, 1)?;
    let p = check_string(lua, args, 2)?;
    let (s, p) = (s.as_bytes(), p.as_bytes());
    let init = posrelat(opt_int(lua, args, 3, 1)?, s.len()) - 1;
    let init = init.clamp(0, s.len() as i64) as usize;
    let plain = arg(args, 4).is_some_and(|v| !matches!(v, Value::Nil | Value::Boolean(false)));
    let mut out = MultiValue::new();
    if find && (plain || !c_str(&p).iter().any(|c| SPECIALS.contains(c))) {
        watch.steps((s.len() - init) / 64)?;
        if let Some(at) = memchr::memmem::find(&s[init..], &p) {
            out.push_back(Value::Integer((init + at + 1) as i64));
            out.push_back(Value::Integer((init + at + p.len()) as i64));
            return Ok(out);
        }
        out.push_back(Value::Nil);
        return Ok(out);
    }
    let mut m = Matcher::new(&s, &p, watch);
    let anchor = m.p(0) == b'^';
    let start = usize::from(anchor);
    let mut s1 = init;
    loop {
        m.reset();
        if let Some(e) = m.do_match(s1, start)? {
            if find {
                out.push_back(Value::Integer(s1 as i64 + 1));
                out.push_back(Value::Integer(e as i64));
                out.extend(m.captures(lua, None, 0)?);
            } else {
                out.extend(m.captures(lua, Some(s1), e)?);
            }
            return Ok(out);
        }
        if s1 >= s.len() || anchor {
            break;
        }
        s1 += 1;
    }
    out.push_back(Value::Nil);
    Ok(out)
}

/// One call of gmatch's iterator: the next match from `at`.
fn gmatch_next(
    lua: &Lua,
    watch: &Watch,
    s: &mlua::String,
    p: &[u8],
    at: &AtomicUsize,
) -> R<MultiValue> {
    let s = s.as_bytes();
    let mut m = Matcher::new(&s, p, watch);
    let mut src = at.load(Relaxed);
    while src <= s.len() {
        m.reset();
        if let Some(e) = m.do_match(src, 0)? {
            // An empty match moves on by one.
            at.store(if e == src { e + 1 } else { e }, Relaxed);
            return Ok(m.captures(lua, Some(src), e)?.into_iter().collect());
        }
        src += 1;
    }
    at.store(src, Relaxed);
    Ok(MultiValue::new())
}

/// Appends `v`, a string or a number, as Lua makes it a string.
fn push_text(lua: &Lua, out: &mut Vec<u8>, v: Value) -> R<()> {
    match v {
        Value::String(s) => out.extend_from_slice(&s.as_bytes()),
        v => {
            if let Some(s) = lua.coerce_string(v)? {
                out.extend_from_slice(&s.as_bytes());
            }
        }
    }
    Ok(())
}

/// `str_gsub`.
fn gsub(lua: &Lua, watch: &Watch, args: &MultiValue) -> R<MultiValue> {
    let src = check_string(lua, args, 1)?;
    let p = check_string(lua, args, 2)?;
    let repl = arg(args, 3).cloned().unwrap_or(Value::Nil);
    let (src, p) = (src.as_bytes(), p.as_bytes());
    let max_s = c_int(opt_int(lua, args, 4, src.len() as i64 + 1)?);
    if !matches!(
        repl,
        Value::Integer(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Function(_)
            | Value::Table(_)
    ) {
        return Err(Err::Lua(Fail::Arg(
            3,
            "string/function/table expected".into(),
        )));
    }
    // A number replacement is its text, with `%` escapes as a string's.
    let news = match &repl {
        Value::Integer(_) | Value::Number(_) | Value::String(_) => {
            Some(check_string(lua, args, 3)?.as_bytes().to_vec())
        }
        _ => None,
    };
    let mut m = Matcher::new(&src, &p, watch);
    let anchor = m.p(0) == b'^';
    let start = usize::from(anchor);
    let mut out = Vec::new();
    let mut s = 0;
    let mut n = 0i64;
    while n < max_s {
        m.reset();
        let e = m.do_match(s, start)?;
        if let Some(e) = e {
            n += 1;
            add_value(lua, &m, &mut out, s, e, &repl, news.as_deref())?;
        }
        match e {
            Some(e) if e > s => s = e,
            _ if s < src.len() => {
                out.push(src[s]);
                s += 1;
            }
            _ => break,
        }
        if out.len() > watch.memory {
            return Err(Err::Lua(Fail::Memory));
        }
        if anchor {
            break;
        }
    }
    out.extend_from_slice(&src[s..]);
    if !watch.fits(lua, out.len()) {
        return Err(Err::Lua(Fail::Memory));
    }
    let mut r = MultiValue::new();
    r.push_back(Value::String(lua.create_string(&out)?));
    r.push_back(Value::Integer(n));
    Ok(r)
}

/// `add_value`: the replacement of the match `s..e`.
fn add_value(
    lua: &Lua,
    m: &Matcher,
    out: &mut Vec<u8>,
    s: usize,
    e: usize,
    repl: &Value,
    news: Option<&[u8]>,
) -> R<()> {
    if let Some(news) = news {
        let mut i = 0;
        while i < news.len() {
            let c = news[i];
            if c != L_ESC {
                out.push(c);
            } else {
                i += 1;
                // A trailing `%` reads C's NUL.
                let d = news.get(i).copied().unwrap_or(0);
                if !d.is_ascii_digit() {
                    out.push(d);
                } else if d == b'0' {
                    out.extend_from_slice(&m.src[s..e]);
                } else {
                    match m.get_capture((d - b'1') as usize, s, e)? {
                        Cap::Text(t) => out.extend_from_slice(t),
                        Cap::Pos(p) => out.extend_from_slice(p.to_string().as_bytes()),
                    }
                }
            }
            i += 1;
        }
        return Ok(());
    }
    let v: Value = match repl {
        Value::Function(f) => f.call(MultiValue::from_iter(m.captures(lua, Some(s), e)?))?,
        Value::Table(t) => t.get(cap_value(lua, m.get_capture(0, s, e)?)?)?,
        _ => Value::Nil,
    };
    match v {
        Value::Nil | Value::Boolean(false) => out.extend_from_slice(&m.src[s..e]),
        v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => push_text(lua, out, v)?,
        other => {
            return fail(&format!(
                "invalid replacement value (a {})",
                type_name(Some(&other))
            ))
        }
    }
    Ok(())
}

/// `str_rep`, its result's size checked before it is built.
fn rep(lua: &Lua, watch: &Watch, args: &MultiValue) -> R<mlua::String> {
    let s = check_string(lua, args, 1)?;
    let n = c_int(check_int(lua, args, 2)?);
    let s = s.as_bytes();
    if n <= 0 || s.is_empty() {
        return Ok(lua.create_string("")?);
    }
    let total = s.len().saturating_mul(n as usize);
    if !watch.fits(lua, total) {
        return Err(Err::Lua(Fail::Memory));
    }
    let mut out = Vec::with_capacity(total);
    for _ in 0..n {
        out.extend_from_slice(&s);
        watch.steps(s.len() / 64)?;
    }
    Ok(lua.create_string(&out)?)
}

/// `tconcat`.
fn concat(lua: &Lua, watch: &Watch, args: &MultiValue) -> R<mlua::String> {
    let sep = opt_string(lua, args, 2)?;
    let sep = sep
        .as_ref()
        .map(|s| s.as_bytes().to_vec())
        .unwrap_or_default();
    let t: Table = match arg(args, 1) {
        Some(Value::Table(t)) => t.clone(),
        other => {
            return Err(Err::Lua(Fail::Arg(
                1,
                format!("table expected, got {}", type_name(other)),
            )))
        }
    };
    let mut i = c_int(opt_int(lua, args, 3, 1)?);
    let last = match arg(args, 4) {
        None | Some(Value::Nil) => c_int(t.raw_len() as i64),
        _ => c_int(check_int(lua, args, 4)?),
    };
    let mut out = Vec::new();
    let field = |out: &mut Vec<u8>, i: i64| -> R<()> {
        watch.step()?;
        let v: Value = t.raw_get(i)?;
        if !matches!(v, Value::String(_) | Value::Integer(_) | Value::Number(_)) {
            return fail(&format!(
                "invalid value ({}) at index {i} in table for 'concat'",
                type_name(Some(&v))
            ));
        }
        push_text(lua, out, v)?;
        if out.len() > watch.memory {
            return Err(Err::Lua(Fail::Memory));
        }
        Ok(())
    };
    while i < last {
        field(&mut out, i)?;
        out.extend_from_slice(&sep);
        i += 1;
    }
    if i == last {
        field(&mut out, i)?;
    }
    if !watch.fits(lua, out.len()) {
        return Err(Err::Lua(Fail::Memory));
    }
    Ok(lua.create_string(&out)?)
}

/// Replaces the C functions in the `string` and `table` libraries.
pub fn install(lua: &Lua, watch: &Arc<Watch>) -> mlua::Result<()> {
    let string: Table = lua.globals().raw_get("string")?;
    let table: Table = lua.globals().raw_get("table")?;
    let w = watch.clone();
    string.raw_set(
        "find",
        lua.create_function(move |lua, a: MultiValue| {
            find_aux(lua, &w, &a, true).map_err(|e| raised(lua, "find", e))
        })?,
    )?;
    let w = watch.clone();
    string.raw_set(
        "match",
        lua.create_function(move |lua, a: MultiValue| {
            find_aux(lua, &w, &a, false).map_err(|e| raised(lua, "match", e))
        })?,
    )?;
    let w = watch.clone();
    string.raw_set(
        "gmatch",
        lua.create_function(move |lua, a: MultiValue| {
            let (s, p) = (|| Ok((check_string(lua, &a, 1)?, check_string(lua, &a, 2)?)))()
                .map_err(|e| raised(lua, "gmatch", e))?;
            let p = p.as_bytes().to_vec();
            let at = AtomicUsize::new(0);
            let w = w.clone();
            lua.create_function(move |lua, ()| {
                gmatch_next(lua, &w, &s, &p, &at).map_err(|e| raised(lua, "gmatch", e))
            })
        })?,
    )?;
    let w = watch.clone();
    string.raw_set(
        "gsub",
        lua.create_function(move |lua, a: MultiValue| {
            gsub(lua, &w, &a).map_err(|e| raised(lua, "gsub", e))
        })?,
    )?;
    let w = watch.clone();
    string.raw_set(
        "rep",
        lua.create_function(move |lua, a: MultiValue| {
            rep(lua, &w, &a).map_err(|e| raised(lua, "rep", e))
        })?,
    )?;
    let w = watch.clone();
    table.raw_set(
        "concat",
        lua.create_function(move |lua, a: MultiValue| {
            concat(lua, &w, &a).map_err(|e| raised(lua, "concat", e))
        })?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every call's results (or error) as one line, the same code run by
    /// Lua 5.1's C functions and by these.
    const PROBE: &str = r#"
        local function ser(...)
          local t = {}
          for i = 1, select('#', ...) do
            local v = select(i, ...)
            local ty, tv = type(v), tostring(v)
            -- A Rust function's error, outside the scripts' environment.
            if ty == 'userdata' then
              ty, tv = 'string', (tv:gsub('\n.*', ''):gsub('^runtime error: ', ''))
            end
            t[#t + 1] = ty .. ':' .. tv
          end
          return table.concat(t, '|')
        end
        local subjects = {'hello world', '', 'aaa', 'a.b-c', '  x  ', 'f(a(b)c)d',
          'THE (quick) fox', 'key=val; k2=v2', 'a\0b\0', 'x1 y22 z333', '[]%^$'}
        local patterns = {'l+', 'o.', '^h', 'd$', '%a+', '%s*', '(h)(e)', '()ll()',
          '%b()', '%f[%w]%w+', '[a-c]+', '[^%s]+', '(%w+)=(%w+)', 'a-b', '.-', 'x*',
          '[%a-]', '%', '[a', '(()', '%1', '(a)%1', '[]', '[^]]', '%d?', '^', '$', '.',
          '(', ')', '%g', '[%]]', '%z', 'a%z', '((a)(b))', '%u+', '%p', '%x+', '%c',
          '[%w_]+', 'a\0b', '%f[%a]', '%bx', '(%d+)', '^(%s*)(.-)(%s*)$', '[a-]', '[-a]',
          '%.', '%%', '^$', 'l*o', 'l-o', 'o?w', '(l)(l)', '%S+', '%W', '[^%d%s]+',
          '(a*(.)%w(%s*))', 'b%f[%z]', '%f[]', '%bxy%b', '[%', '()'}
        local out = {}
        for _, s in ipairs(subjects) do
          for _, p in ipairs(patterns) do
            for _, init in ipairs({1, 3, -2, 50}) do
              out[#out + 1] = ser(pcall(string.find, s, p, init))
            end
            out[#out + 1] = ser(pcall(string.find, s, p, 1, true))
            out[#out + 1] = ser(pcall(string.match, s, p))
            out[#out + 1] = ser(pcall(string.gsub, s, p, '<%0>'))
            out[#out + 1] = ser(pcall(string.gsub, s, p, '%1', 2))
            out[#out + 1] = ser(pcall(string.gsub, s, p, function(a, b) return b end))
            out[#out + 1] = ser(pcall(string.gsub, s, p, {l = 'L', hello = 1, x = false}))
            out[#out + 1] = ser(pcall(function()
              local r = {}
              for a, b in string.gmatch(s, p) do r[#r + 1] = ser(a, b) if #r > 20 then break end end
              return table.concat(r, ';')
            end))
          end
        end
        out[#out + 1] = ser(pcall(string.gsub, 'abc', 'b', 5))
        out[#out + 1] = ser(pcall(string.gsub, 'abc', 'b', true))
        out[#out + 1] = ser(pcall(string.gsub, 'abc', 'b', '%'))
        out[#out + 1] = ser(pcall(string.gsub, 'abc', '()b', '%1'))
        out[#out + 1] = ser(pcall(string.gsub, 'abc', 'b', function() return {} end))
        out[#out + 1] = ser(pcall(string.find, 123456, 34))
        out[#out + 1] = ser(pcall(string.find, nil, 'a'))
        out[#out + 1] = ser(pcall(string.find, 'a', 'a', 'x'))
        out[#out + 1] = ser(pcall(string.rep, 'ab', 3))
        out[#out + 1] = ser(pcall(string.rep, 'ab', -1))
        out[#out + 1] = ser(pcall(string.rep, 7, 2.9))
        out[#out + 1] = ser(pcall(string.rep, 'x'))
        out[#out + 1] = ser(pcall(table.concat, {1, 'a', 2.5}, ', '))
        out[#out + 1] = ser(pcall(table.concat, {1, {}, 3}))
        out[#out + 1] = ser(pcall(table.concat, {1, 2, 3}, '-', 2))
        out[#out + 1] = ser(pcall(table.concat, {1, 2, 3}, '-', 2, 5))
        out[#out + 1] = ser(pcall(table.concat, {1, 2, 3}, '-', 3, 1))
        out[#out + 1] = ser(pcall(table.concat, 'x'))
        out[#out + 1] = ser(pcall(table.concat, {}, {}))
        return table.concat(out, '\n')
    "#;

    #[test]
    fn results_and_errors_are_lua_5_1s() {
        let c = Lua::new();
        let want: String = c.load(PROBE).eval().unwrap();
        let ours = Lua::new();
        install(&ours, &Arc::new(Watch::idle())).unwrap();
        let got: String = ours.load(PROBE).eval().unwrap();
        let mut n = 0;
        for (w, g) in want.lines().zip(got.lines()) {
            n += 1;
            // C cannot name a function pcall calls: these do.
            let g = match (w.contains("to '?'"), g.split_once("to '")) {
                (true, Some((head, tail))) => {
                    format!("{head}to '?{}", &tail[tail.find('\'').unwrap_or(0)..])
                }
                _ => g.to_string(),
            };
            assert_eq!(g, w, "line {n}");
        }
        assert_eq!(got.lines().count(), want.lines().count());
        assert!(n > 4000, "{n}");
    }
}
