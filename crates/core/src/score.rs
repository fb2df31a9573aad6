//! The one reading of a score from text, shared by every way a score comes
//! in: JSON strings and number literals over HTTP, `min`/`max` bounds, CSV
//! and NDJSON import, the CLI, MessagePack-RPC strings, and the Redis
//! protocol. The syntax is C `strtod`'s (what Redis accepts: decimal,
//! hexadecimal, `inf`, `infinity`); the whole text must be the number.
//! Refused: empty text, white space around it, NaN, and a finite spelling
//! that does not fit a double (`1e400` overflows to infinity and `1e-400`
//! to zero in `strtod`, which reports both as out of range) — an infinity
//! is stored only when it is written as one. [`Refusal`]'s text is podium's;
//! the Redis protocol answers each refusal with Redis's own text.

use std::fmt;

/// Why a text is not a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Empty,
    /// Leading or trailing white space.
    Padded,
    NotANumber,
    NaN,
    /// A finite spelling beyond a double's range.
    OutOfRange,
}

/// A refused score text with why, displayed in podium's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadScore {
    pub text: String,
    pub why: Refusal,
}

impl fmt::Display for BadScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.text;
        match self.why {
            Refusal::Empty => write!(f, "score is empty"),
            Refusal::Padded => write!(f, "score {t:?} has white space around the number"),
            Refusal::NotANumber => write!(f, "score {t:?} is not a number"),
            Refusal::NaN => write!(f, "score is not a number (NaN)"),
            Refusal::OutOfRange => write!(
                f,
                "score {t:?} is out of range of a double (±1.8e308, down to 5e-324); \
                 write inf or -inf for an infinity"
            ),
        }
    }
}

impl std::error::Error for BadScore {}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// A score from its text, or why not.
pub fn parse(s: &[u8]) -> Result<f64, Refusal> {
    match (s.first(), s.last()) {
        (None, _) => return Err(Refusal::Empty),
        (Some(&a), Some(&z)) if is_space(a) || is_space(z) => return Err(Refusal::Padded),
        _ => {}
    }
    let (v, n, range) = strtod(s);
    if n != s.len() {
        return Err(Refusal::NotANumber);
    }
    if v.is_nan() {
        return Err(Refusal::NaN);
    }
    // As Redis: strtod's ERANGE counts for an overflow (±HUGE_VAL) or an
    // underflow to zero; a subnormal result is kept.
    if range && (v.is_infinite() || v == 0.0) {
        return Err(Refusal::OutOfRange);
    }
    Ok(v)
}

/// [`parse`] with the refusal in podium's words.
pub fn parse_str(s: &str) -> Result<f64, BadScore> {
    parse(s.as_bytes()).map_err(|why| BadScore {
        text: s.to_string(),
        why,
    })
}

/// C `strtod` on a prefix of `s` (C locale): `(value, bytes consumed,
/// out of range)`; consumed is 0 when no number starts there. Leading
/// white space is skipped, as strtod does.
pub fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let start = i;
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let starts_ci = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if starts_ci(b"infinity") {
        return (sign * f64::INFINITY, i + 8, false);
    }
    if starts_ci(b"inf") {
        return (sign * f64::INFINITY, i + 3, false);
    }
    if starts_ci(b"nan") {
        let mut j = i + 3;
        if s.get(j) == Some(&b'(') {
            let mut k = j + 1;
            while k < s.len() && (s[k].is_ascii_alphanumeric() || s[k] == b'_') {
                k += 1;
            }
            if s.get(k) == Some(&b')') {
                j = k + 1;
            }
        }
        return (f64::NAN, j, false);
    }
    if (starts_ci(b"0x")) && rest.len() > 2 {
        if let Some((v, n, range)) = hex_float(&rest[2..]) {
            return (sign * v, i + 2 + n, range);
        }
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one digit.
    let mut j = i;
    let mut digits = 0;
    let mut nonzero = false;
    while j < s.len() && s[j].is_ascii_digit() {
        nonzero |= s[j] != b'0';
        j += 1;
        digits += 1;
    }
    if s.get(j) == Some(&b'.') {
        j += 1;
        while j < s.len() && s[j].is_ascii_digit() {
            nonzero |= s[j] != b'0';
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0.0, 0, false);
    }
    if matches!(s.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if s.get(k).is_some_and(u8::is_ascii_digit) {
            while k < s.len() && s[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let text = std::str::from_utf8(&s[start..j]).unwrap_or("0");
    // Rust's parser rejects a bare trailing "." ("5.") and ".e1" shapes
    // that C accepts; normalise them.
    let v: f64 = text
        .parse()
        .or_else(|_| {
            text.replace(".e", "e")
                .replace(".E", "E")
                .trim_end_matches('.')
                .parse()
        })
        .unwrap_or(0.0);
    let range = (v.is_infinite()) || (v == 0.0 && nonzero);
    (v, j, range)
}

/// The digits of a hex float after `0x`: `(value, consumed, out of range)`.
fn hex_float(s: &[u8]) -> Option<(f64, usize, bool)> {
    let mut j = 0;
    let mut v = 0.0f64;
    let mut digits = 0;
    let mut scale = 0i32;
    while let Some(d) = s.get(j).and_then(|&c| (c as char).to_digit(16)) {
        v = v * 16.0 + f64::from(d);
        j += 1;
        digits += 1;
    }
    if s.get(j) == Some(&b'.') {
        j += 1;
        while let Some(d) = s.get(j).and_then(|&c| (c as char).to_digit(16)) {
            v = v * 16.0 + f64::from(d);
            scale -= 4;
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(s.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let neg = match s.get(k) {
            Some(b'-') => {
                k += 1;
                true
            }
            Some(b'+') => {
                k += 1;
                false
            }
            _ => false,
        };
        if s.get(k).is_some_and(u8::is_ascii_digit) {
            let mut e: i32 = 0;
            while let Some(c) = s.get(k).filter(|c| c.is_ascii_digit()) {
                e = e.saturating_mul(10).saturating_add(i32::from(c - b'0'));
                k += 1;
            }
            scale = scale.saturating_add(if neg { -e } else { e });
            j = k;
        }
    }
    let nonzero = v != 0.0;
    let r = v * 2f64.powi(scale);
    Some((r, j, r.is_infinite() || (r == 0.0 && nonzero)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals() {
        for (s, why) in [
            ("", Refusal::Empty),
            (" 5", Refusal::Padded),
            ("5 ", Refusal::Padded),
            ("\t5", Refusal::Padded),
            ("5\n", Refusal::Padded),
            ("abc", Refusal::NotANumber),
            ("5x", Refusal::NotANumber),
            ("1\0", Refusal::NotANumber),
            ("nan", Refusal::NaN),
            ("-NaN", Refusal::NaN),
            ("1e400", Refusal::OutOfRange),
            ("-1e999", Refusal::OutOfRange),
            ("1e-400", Refusal::OutOfRange),
            ("0x1p99999", Refusal::OutOfRange),
        ] {
            assert_eq!(parse(s.as_bytes()), Err(why), "{s:?}");
        }
        for (s, v) in [
            ("5", 5.0),
            ("-1.5e3", -1500.0),
            ("inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("1.7976931348623157e308", f64::MAX),
            ("4.9e-324", 5e-324),
            ("0e999", 0.0),
            ("0x10", 16.0),
        ] {
            assert_eq!(parse(s.as_bytes()), Ok(v), "{s:?}");
        }
    }
}
