//! Numbers in arguments, parsed as Redis 7.0 parses them: integers by
//! `string2ll` (strict), scores by `strtod` with Redis's extra checks.

use std::ops::Bound;

pub use super::codec::string2ll;

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

/// A score argument (`getDoubleFromObject`): the whole argument is one
/// number, no leading space, not NaN, and not out of range.
pub fn parse_double(s: &[u8]) -> Option<f64> {
    if s.is_empty() || matches!(s[0], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        return None;
    }
    let (v, n, range) = strtod(s);
    if n != s.len() || v.is_nan() || (range && (v.is_infinite() || v == 0.0)) {
        return None;
    }
    Some(v)
}

/// One end of a score range (`zslParseRange`): `(` makes it exclusive; the
/// rest goes through strtod, which here may skip leading space, overflow
/// to ±inf, and read "" as 0 — only trailing bytes and NaN are refused.
/// (`-inf`/`+inf` are ordinary strtod input.)
pub fn parse_bound(s: &[u8]) -> Option<Bound<f64>> {
    // A C string: it ends at a NUL byte.
    let s = match s.iter().position(|&c| c == 0) {
        Some(i) => &s[..i],
        None => s,
    };
    let (excl, body) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let (v, n, _) = strtod(body);
    if n != body.len() || v.is_nan() {
        return None;
    }
    Some(if excl {
        Bound::Excluded(v)
    } else {
        Bound::Included(v)
    })
}

/// `getLongLongFromObject`.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    string2ll(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_like_redis() {
        let ok: &[(&str, f64)] = &[
            ("1", 1.0),
            ("-1.5", -1.5),
            ("+2", 2.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("inf", f64::INFINITY),
            ("-INF", f64::NEG_INFINITY),
            ("+infinity", f64::INFINITY),
            ("5e-324", 5e-324),
            ("1e-310", 1e-310),
            ("0x10", 16.0),
            ("0x1p3", 8.0),
            ("0", 0.0),
            ("0e500", 0.0),
        ];
        for &(s, want) in ok {
            assert_eq!(parse_double(s.as_bytes()), Some(want), "{s}");
        }
        for bad in [
            "", " 1", "1 ", "abc", "nan", "NaN", "1e400", "-1e400", "1e-400", "1e", "--1", "1.2.3",
            "e5", ".",
        ] {
            assert_eq!(parse_double(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn range_bounds_parse_like_zslparserange() {
        assert_eq!(parse_bound(b"(1.5"), Some(Bound::Excluded(1.5)));
        assert_eq!(
            parse_bound(b"-inf"),
            Some(Bound::Included(f64::NEG_INFINITY))
        );
        assert_eq!(parse_bound(b"+inf"), Some(Bound::Included(f64::INFINITY)));
        assert_eq!(parse_bound(b"(+inf"), Some(Bound::Excluded(f64::INFINITY)));
        assert_eq!(parse_bound(b""), Some(Bound::Included(0.0)));
        assert_eq!(parse_bound(b"("), Some(Bound::Excluded(0.0)));
        assert_eq!(parse_bound(b" 5"), Some(Bound::Included(5.0)));
        assert_eq!(parse_bound(b"1e400"), Some(Bound::Included(f64::INFINITY)));
        assert_eq!(parse_bound(b"x"), None);
        assert_eq!(parse_bound(b"[1"), None);
        assert_eq!(parse_bound(b"nan"), None);
        assert_eq!(parse_bound(b"5 "), None);
        assert_eq!(parse_bound(b" "), None);
    }
}
