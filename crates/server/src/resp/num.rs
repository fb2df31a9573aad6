//! Numbers in arguments, parsed as Redis 7.0 parses them: integers by
//! `string2ll` (strict), scores by `strtod` with Redis's extra checks.

use std::ops::Bound;

pub use super::codec::string2ll;
pub use podium_core::score::strtod;

/// A score argument (`getDoubleFromObject`): the whole argument is one
/// number, no leading space, not NaN, and not out of range — the rule every
/// protocol reads scores by, with Redis's error texts left to the caller.
pub fn parse_double(s: &[u8]) -> Option<f64> {
    podium_core::score::parse(s).ok()
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
