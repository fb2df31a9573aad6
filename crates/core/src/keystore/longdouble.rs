//! Redis's `long double` arithmetic for INCRBYFLOAT and HINCRBYFLOAT:
//! the x87 80-bit extended format that C's `long double` is on x86-64, its
//! parsing as Redis's `string2ld` (glibc's `strtold` over the whole
//! argument) and its printing as `ld2string` in human mode (`%.17Lf`, then
//! the trailing zeros stripped).
//!
//! The arithmetic is `rustc_apfloat`'s software x87 format, so the results
//! are the same bits on every host; the printing is exact (the binary
//! value's decimal expansion rounded half to even at the 17th fraction
//! digit, as glibc rounds), so `10.5 + 0.1` reads `10.6` as in Redis, where
//! a double would print `10.59999999999999964`.

use num_bigint::BigUint;
use rustc_apfloat::ieee::X87DoubleExtended;
use rustc_apfloat::{Float, Round, Status};

/// Redis's `MAX_LONG_DOUBLE_CHARS`: `string2ld` refuses an argument of
/// this length or more.
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// A C `long double` of x86-64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongDouble(X87DoubleExtended);

/// Rounded to nearest, ties to even (the x87 default).
impl std::ops::Add for LongDouble {
    type Output = LongDouble;
    fn add(self, other: LongDouble) -> LongDouble {
        LongDouble((self.0 + other.0).value)
    }
}

impl LongDouble {
    /// `(long double)v`, exact for every `i64`.
    pub fn from_i64(v: i64) -> LongDouble {
        LongDouble(X87DoubleExtended::from_i128(i128::from(v)).value)
    }

    /// Redis's `string2ld`: the whole of `s` as `strtold` reads it in the
    /// C locale (decimal or hexadecimal, `inf`/`infinity` in any case,
    /// an optional sign), no leading space, not NaN, not out of range (an
    /// overflow, or an underflow to zero). `None`: refused.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_LONG_DOUBLE_CHARS {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = body.to_ascii_lowercase();
        let v = if lower == b"inf" || lower == b"infinity" {
            X87DoubleExtended::INFINITY
        } else {
            parse_finite(&lower)?
        };
        Some(LongDouble(if neg { -v } else { v }))
    }

    /// Whether the value is NaN or infinite (Redis refuses to store one).
    pub fn is_nan_or_inf(self) -> bool {
        self.0.is_nan() || self.0.is_infinite()
    }

    /// `ld2string(…, LD_STR_HUMAN)`: `%.17Lf` with the trailing zeros (and
    /// a trailing point) removed, `-0` written `0`.
    pub fn to_human(self) -> String {
        if self.0.is_nan() {
            return "nan".into();
        }
        if self.0.is_infinite() {
            return if self.0.is_negative() { "-inf" } else { "inf" }.into();
        }
        let mut s = fixed17(self.0);
        if s.contains('.') {
            let kept = s.trim_end_matches('0').trim_end_matches('.').len();
            s.truncate(kept);
        }
        if s == "-0" {
            s = "0".into();
        }
        s
    }
}

/// A finite unsigned number as `strtold` reads one, the whole of `s`
/// (lower case): `None` when any of it is left unread, or the value is out
/// of range.
fn parse_finite(s: &[u8]) -> Option<X87DoubleExtended> {
    let (hex, digits) = match s.strip_prefix(b"0x") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let is_digit = |c: &u8| {
        if hex {
            c.is_ascii_hexdigit()
        } else {
            c.is_ascii_digit()
        }
    };
    let int_len = digits.iter().take_while(|c| is_digit(c)).count();
    let mut at = int_len;
    let mut frac_len = 0;
    if digits.get(at) == Some(&b'.') {
        frac_len = digits[at + 1..].iter().take_while(|c| is_digit(c)).count();
        at += 1 + frac_len;
    }
    if int_len + frac_len == 0 {
        return None;
    }
    let mantissa = &digits[..at];
    let marker = if hex { b'p' } else { b'e' };
    let mut exp = &digits[at..];
    if !exp.is_empty() {
        if exp[0] != marker {
            return None;
        }
        let e = &exp[1..];
        let e_digits = e.strip_prefix(b"-").or(e.strip_prefix(b"+")).unwrap_or(e);
        // (`strtold` stops before an exponent without digits: the rest is
        // left unread, which `string2ld` refuses.)
        if e_digits.is_empty() || !e_digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        exp = e;
    }
    let zero_mantissa = mantissa.iter().all(|&c| c == b'0' || c == b'.');
    if zero_mantissa {
        return Some(X87DoubleExtended::ZERO);
    }
    let exp = clamp_exponent(exp);
    let text = if hex {
        format!("0x{}p{}", std::str::from_utf8(mantissa).ok()?, exp)
    } else {
        format!("{}e{}", std::str::from_utf8(mantissa).ok()?, exp)
    };
    let r = X87DoubleExtended::from_str_r(&text, Round::NearestTiesToEven).ok()?;
    // `strtold`'s ERANGE: an overflow, or an underflow all the way to zero
    // (a denormal result is kept).
    if r.value.is_infinite() || r.value.is_zero() || r.status.contains(Status::OVERFLOW) {
        return None;
    }
    Some(r.value)
}

/// The exponent's digits as a number, clamped where any mantissa of fewer
/// than 5120 digits is out of range either way, so the parser is never
/// handed an exponent that overflows its own arithmetic.
fn clamp_exponent(e: &[u8]) -> i64 {
    const LIMIT: i64 = 100_000;
    let (neg, d) = match e.first() {
        Some(b'-') => (true, &e[1..]),
        Some(b'+') => (false, &e[1..]),
        _ => (false, e),
    };
    let mut v: i64 = 0;
    for &c in d {
        v = (v * 10 + i64::from(c - b'0')).min(LIMIT);
    }
    if neg {
        -v
    } else {
        v
    }
}

/// `%.17Lf` of a finite value, exactly: the binary value's decimal
/// expansion, rounded half to even at the 17th fraction digit.
fn fixed17(x: X87DoubleExtended) -> String {
    const DIGITS: usize = 17;
    let bits = x.to_bits();
    let neg = (bits >> 79) & 1 == 1;
    let biased = ((bits >> 64) & 0x7fff) as i64;
    let mant = bits as u64;
    // value = mant × 2^e (the x87 significand holds its integer bit).
    let e = if biased == 0 {
        1 - 16383 - 63
    } else {
        biased - 16383 - 63
    };
    let ten17 = BigUint::from(10u64).pow(DIGITS as u32);
    let scaled = if e >= 0 {
        (BigUint::from(mant) << e as usize) * &ten17
    } else {
        let k = (-e) as usize;
        let n = BigUint::from(mant) * &ten17;
        let q: BigUint = &n >> k;
        let r: BigUint = &n - (&q << k);
        let half = BigUint::from(1u8) << (k - 1);
        let odd = q.bit(0);
        if r > half || (r == half && odd) {
            q + 1u8
        } else {
            q
        }
    };
    let digits = scaled.to_str_radix(10);
    let digits = format!("{digits:0>width$}", width = DIGITS + 1);
    let (int, frac) = digits.split_at(digits.len() - DIGITS);
    format!("{}{int}.{frac}", if neg { "-" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(s: &str) -> LongDouble {
        LongDouble::parse(s.as_bytes()).unwrap_or_else(|| panic!("{s} refused"))
    }

    fn sum(a: &str, b: &str) -> String {
        (ld(a) + ld(b)).to_human()
    }

    /// Replies of redis-server 7.0.15 (x86-64) to `SET k a` then
    /// `INCRBYFLOAT k b`.
    #[test]
    fn sums_print_as_redis_prints_them() {
        for (a, b, want) in [
            ("10.5", "0.1", "10.6"),
            ("0", "0.1", "0.1"),
            ("5", "0x10", "21"),
            ("3", "-3", "0"),
            ("1", "-1.5", "-0.5"),
            ("0", "1e-18", "0"),
            ("0", "-1e-18", "0"),
            ("0", "5e-18", "0"),
            ("0", "1.5e-17", "0.00000000000000002"),
            ("0", "2.5e-17", "0.00000000000000002"),
            ("10", "1e20", "100000000000000000008"),
            ("0", "3.0e3", "3000"),
            ("0", "1.1", "1.1"),
            ("0", "0.3", "0.3"),
            ("0", "123456789.123456789", "123456789.12345678899873747"),
            ("0", "9223372036854775807", "9223372036854775807"),
            ("0", "18446744073709551617", "18446744073709551616"),
            ("0", ".5", "0.5"),
            ("0", "5.", "5"),
            ("0", "+7", "7"),
            ("0", "0x1.8p1", "3"),
            ("0", "0X1P-2", "0.25"),
            ("0", "0x1p-57", "0.00000000000000001"),
            ("0", "0x1p-58", "0"),
            ("0", "0x3p-58", "0.00000000000000001"),
            ("0", "-0x1p-16445", "0"),
            ("1.1", "2.2", "3.3"),
            ("0.1", "0.2", "0.3"),
            ("-5", "0.000001", "-4.999999"),
            ("3.0e-1", "1e10", "10000000000.29999999981373549"),
            ("99999999999999999999", "1", "100000000000000000000"),
            ("0", "1e-4940", "0"),
            ("0", "0x1.0000000000000001p0", "1"),
            ("1", "1e-17", "1.00000000000000001"),
            ("0", "0.000000000000000015", "0.00000000000000002"),
            ("0", "0.000000000000000025", "0.00000000000000002"),
            ("0", "-0.000000000000000005", "0"),
        ] {
            assert_eq!(sum(a, b), want, "{a} + {b}");
        }
        // The largest values print every integer digit (4932 of them).
        let big = sum("1.5e4931", "0");
        assert!(big.starts_with("15000000000000000000090284240819458369857566613817996"));
        assert!(
            big.ends_with("717068782993408"),
            "{}",
            &big[big.len() - 20..]
        );
        assert_eq!(big.len(), 4932);
    }

    #[test]
    fn parsing_refuses_what_string2ld_refuses() {
        for bad in [
            "",
            " 1",
            "1 ",
            "\t1",
            "nan",
            "NaN",
            "-nan",
            "nan(1)",
            "1e",
            "1e+",
            "0x",
            "0x.",
            ".",
            "-",
            "+",
            "1.2.3",
            "1e5000",
            "-1e5000",
            "1e-5000",
            "0x1p99999",
            "1\x002",
            "abc",
            "1f",
            "0x1q",
            "infinit",
            "--1",
            "1e99999999999999999999",
        ] {
            assert!(
                LongDouble::parse(bad.as_bytes()).is_none(),
                "{bad:?} accepted"
            );
        }
        assert!(LongDouble::parse(&[b'1'; 5120]).is_none());
        assert!(LongDouble::parse(&[b'1'; 4000]).is_some());
        for ok in [
            "inf",
            "-INF",
            "Infinity",
            "0e-99999",
            "0x0p5",
            "0x1p-16445",
            "1e-4940",
        ] {
            assert!(LongDouble::parse(ok.as_bytes()).is_some(), "{ok} refused");
        }
        assert!(ld("inf").is_nan_or_inf());
        assert!((ld("1") + ld("-inf")).is_nan_or_inf());
        assert!((ld("inf") + ld("-inf")).is_nan_or_inf());
        assert!(!ld("1e4000").is_nan_or_inf());
        assert!((ld("1.18e4932") + ld("1e4932")).is_nan_or_inf());
    }

    #[test]
    fn integers_are_exact() {
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human(),
            "-9223372036854775808"
        );
        assert_eq!((LongDouble::from_i64(42) + ld("0.5")).to_human(), "42.5");
    }

    #[test]
    fn rounding_is_half_to_even_on_the_exact_value() {
        // 2^-57 = 6.9e-18 rounds up to one unit of the 17th digit, 2^-58 =
        // 3.5e-18 down; 2.5e-17 is a little under its decimal value in
        // binary, so it rounds down, as glibc does.
        assert_eq!(ld("0x1p-57").to_human(), "0.00000000000000001");
        assert_eq!(ld("0x1p-58").to_human(), "0");
        assert_eq!(ld("2.5e-17").to_human(), "0.00000000000000002");
        // Exact ties (2^-18 = 0.000003814697265625 ends in a 5 at the
        // 18th digit): to the even digit, as redis-server answers.
        assert_eq!(ld("0x1p-18").to_human(), "0.00000381469726562");
        assert_eq!(ld("0x3p-18").to_human(), "0.00001144409179688");
        assert_eq!(ld("-0x3p-18").to_human(), "-0.00001144409179688");
        assert_eq!(fixed17(ld("0x1p-1").0), "0.50000000000000000");
        assert_eq!(ld("0x1p-16445").to_human(), "0");
        assert_eq!(ld("-0x1p-16445").to_human(), "0");
    }
}
