//! Replies out: a [`Reply`] value encoded in RESP2 or RESP3, byte for byte
//! as Redis 7.0 sends it.
//!
//! RESP2 has no null, double or map types, so the same value encodes
//! differently per protocol: a missing value is `$-1` (or `*-1` for a
//! missing array) in RESP2 and `_` in RESP3; a score is a bulk string in
//! RESP2 and a `,` double in RESP3, both formatted as C's `%.17g` (what
//! Redis 7.0's `addReplyDouble` prints); a map is a flat array in RESP2 and
//! `%` in RESP3; scored members (WITHSCORES) are a flat member, score, …
//! array in RESP2 and an array of `[member, score]` pairs in RESP3.

use bytes::{BufMut, BytesMut};

/// What a command answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+text`.
    Status(&'static str),
    /// `-text` (text includes the code: `ERR …`, `WRONGTYPE …`).
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    /// A score: RESP2 bulk, RESP3 double.
    Double(f64),
    /// A missing bulk: RESP2 `$-1`, RESP3 `_`.
    Null,
    /// A missing array: RESP2 `*-1`, RESP3 `_`.
    NullArray,
    Array(Vec<Reply>),
    /// RESP2 flat array of keys and values, RESP3 map.
    Map(Vec<(Reply, Reply)>),
    /// Members only (no scores): an array of bulks.
    Members(Vec<Vec<u8>>),
    /// Members with scores: RESP2 flat `m, s, m, s`; RESP3 `[[m, s], …]`
    /// when `nested` (ZRANGE WITHSCORES, ZPOPMIN with a count), flat
    /// otherwise.
    Scored {
        items: Vec<(Vec<u8>, f64)>,
        nested: bool,
    },
    /// Field/value pairs: RESP2 flat `f, v, f, v`; RESP3 `[[f, v], …]`
    /// (HRANDFIELD WITHVALUES).
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    /// Text: RESP2 bulk, RESP3 verbatim string of format `txt` (INFO).
    Verbatim(String),
    // What scripts return beyond the commands' replies.
    /// `+text` of any text (a script's `{ok=…}`).
    StatusText(Vec<u8>),
    /// RESP3 `#t` / `#f`; RESP2 `:1` / `:0`.
    Bool(bool),
    /// RESP3 set `~`; RESP2 array.
    Set(Vec<Reply>),
    /// RESP3 big number `(`; RESP2 bulk.
    BigNumber(Vec<u8>),
    /// Out-of-band data (pub/sub confirmations and messages): RESP3 push
    /// `>`; RESP2 array.
    Push(Vec<Reply>),
    /// Several replies to one command, one after the other (SUBSCRIBE
    /// confirms each channel with its own frame).
    Seq(Vec<Reply>),
}

impl Reply {
    pub const OK: Reply = Reply::Status("OK");

    /// An `ERR` error: `-ERR <msg>`.
    pub fn err(msg: impl AsRef<str>) -> Reply {
        let mut v = b"ERR ".to_vec();
        v.extend_from_slice(msg.as_ref().as_bytes());
        Reply::Error(v)
    }

    /// An error with its own code (`WRONGTYPE …`, `NOAUTH …`).
    pub fn coded(text: impl AsRef<str>) -> Reply {
        Reply::Error(text.as_ref().as_bytes().to_vec())
    }

    pub fn syntax() -> Reply {
        Reply::err("syntax error")
    }

    pub fn bulk(b: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(b.as_ref().to_vec())
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the encoding of `self` to `out` (`proto` is 2 or 3).
    pub fn encode(&self, proto: u8, out: &mut BytesMut) {
        let resp3 = proto >= 3;
        match self {
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(e) => {
                // As addReplyErrorLength: no CR/LF may break the line.
                out.put_u8(b'-');
                out.extend(
                    e.iter()
                        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
                );
                out.put_slice(b"\r\n");
            }
            Reply::Int(i) => int_line(out, b':', *i),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Double(d) => double(out, *d, resp3),
            Reply::Null => out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" }),
            Reply::NullArray => out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" }),
            Reply::Array(items) => {
                int_line(out, b'*', items.len() as i64);
                for r in items {
                    r.encode(proto, out);
                }
            }
            Reply::Map(pairs) => {
                if resp3 {
                    int_line(out, b'%', pairs.len() as i64);
                } else {
                    int_line(out, b'*', 2 * pairs.len() as i64);
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Reply::Members(ms) => {
                int_line(out, b'*', ms.len() as i64);
                for m in ms {
                    bulk(out, m);
                }
            }
            Reply::Scored { items, nested } => {
                let nested = *nested && resp3;
                let n = if nested { items.len() } else { 2 * items.len() };
                int_line(out, b'*', n as i64);
                for (m, s) in items {
                    if nested {
                        out.put_slice(b"*2\r\n");
                    }
                    bulk(out, m);
                    double(out, *s, resp3);
                }
            }
            Reply::Pairs(items) => {
                let n = if resp3 { items.len() } else { 2 * items.len() };
                int_line(out, b'*', n as i64);
                for (f, v) in items {
                    if resp3 {
                        out.put_slice(b"*2\r\n");
                    }
                    bulk(out, f);
                    bulk(out, v);
                }
            }
            Reply::Verbatim(text) => {
                if resp3 {
                    int_line(out, b'=', text.len() as i64 + 4);
                    out.put_slice(b"txt:");
                } else {
                    int_line(out, b'$', text.len() as i64);
                }
                out.put_slice(text.as_bytes());
                out.put_slice(b"\r\n");
            }
            Reply::StatusText(t) => line(out, b'+', t),
            Reply::Bool(b) => match (resp3, b) {
                (true, true) => out.put_slice(b"#t\r\n"),
                (true, false) => out.put_slice(b"#f\r\n"),
                (false, b) => int_line(out, b':', i64::from(*b)),
            },
            Reply::Set(items) => {
                int_line(out, if resp3 { b'~' } else { b'*' }, items.len() as i64);
                for r in items {
                    r.encode(proto, out);
                }
            }
            Reply::BigNumber(n) if resp3 => line(out, b'(', n),
            Reply::BigNumber(n) => bulk(out, n),
            Reply::Push(items) => {
                int_line(out, if resp3 { b'>' } else { b'*' }, items.len() as i64);
                for r in items {
                    r.encode(proto, out);
                }
            }
            Reply::Seq(items) => {
                for r in items {
                    r.encode(proto, out);
                }
            }
        }
    }
}

fn line(out: &mut BytesMut, kind: u8, body: &[u8]) {
    out.put_u8(kind);
    out.put_slice(body);
    out.put_slice(b"\r\n");
}

fn int_line(out: &mut BytesMut, kind: u8, i: i64) {
    out.put_u8(kind);
    out.put_slice(itoa::Buffer::new().format(i).as_bytes());
    out.put_slice(b"\r\n");
}

fn bulk(out: &mut BytesMut, b: &[u8]) {
    int_line(out, b'$', b.len() as i64);
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

fn double(out: &mut BytesMut, d: f64, resp3: bool) {
    // Replies of scores are mostly integral: format those without a heap
    // string (the same digits `fmt_double` gives).
    let mut ibuf = itoa::Buffer::new();
    let owned;
    let s: &str = if is_plain_integer(d) {
        ibuf.format(d as i64)
    } else {
        owned = fmt_double(d);
        &owned
    };
    if resp3 {
        line(out, b',', s.as_bytes());
    } else {
        bulk(out, s.as_bytes());
    }
}

/// An integral value that `%.17g` prints as plain digits (not -0).
pub(crate) fn is_plain_integer(d: f64) -> bool {
    d == d.trunc() && d.abs() < 1e17 && !(d == 0.0 && d.is_sign_negative())
}

/// A double as C's `printf("%.17g")` prints it (Redis 7.0 `addReplyDouble`
/// and, for every finite value, `d2string`): 17 significant digits, trailing
/// zeros dropped, exponent form below 1e-4 and from 1e17 on; `inf`, `-inf`,
/// `-0`.
pub fn fmt_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Integral scores are the common case in leaderboards, and below 1e17
    // `%.17g` prints every digit of them: skip the float formatter.
    if is_plain_integer(d) {
        return itoa::Buffer::new().format(d as i64).to_string();
    }
    if d == 0.0 {
        return "-0".into();
    }
    // Correctly rounded to 17 significant digits, as glibc does; `%g`
    // rounds to the same digits in fixed and exponent form, so one
    // formatting serves both.
    let sci = format!("{d:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..17).contains(&exp) {
        let (sign, mant) = match mant.strip_prefix('-') {
            Some(m) => ("-", m),
            None => ("", mant),
        };
        let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
        let fixed = if exp >= 0 {
            let (int, frac) = digits.split_at(exp as usize + 1);
            format!("{sign}{int}.{frac}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        trim_fraction(&fixed).to_string()
    } else {
        let m = trim_fraction(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    }
}

/// A score as Redis 7.0 stores it in a small sorted set (`d2string`), which
/// ZSCAN returns as is: an integral value within ±2^62 in integer form
/// (`100000000000000000`, not `1e+17`), else as [`fmt_double`]; -0 reads
/// back as 0.
pub fn fmt_d2string(d: f64) -> String {
    const LIM: f64 = (i64::MAX / 2) as f64;
    if d == 0.0 {
        return "0".into();
    }
    if (-LIM..=LIM).contains(&d) && d == d.trunc() {
        return format!("{}", d as i64);
    }
    fmt_double(d)
}

fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: &Reply, proto: u8) -> String {
        let mut b = BytesMut::new();
        r.encode(proto, &mut b);
        String::from_utf8_lossy(&b).into_owned()
    }

    #[test]
    fn doubles_format_as_printf_17g() {
        let cases: &[(f64, &str)] = &[
            (0.1, "0.10000000000000001"),
            (1.5, "1.5"),
            (1.0, "1"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1e300, "1.0000000000000001e+300"),
            (5e-324, "4.9406564584124654e-324"),
            (1.0 / 3.0, "0.33333333333333331"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (12345678901234567.0, "12345678901234568"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (100.0, "100"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for &(d, want) in cases {
            assert_eq!(fmt_double(d), want, "{d:e}");
        }
    }

    /// C's own `snprintf("%.17g")` on random bit patterns, integers and
    /// short decimals: the fast paths must not change a single byte.
    #[test]
    fn doubles_match_the_c_library() {
        use rand::{Rng, SeedableRng};
        fn c_17g(d: f64) -> String {
            let mut buf = [0u8; 64];
            // SAFETY: the format takes one double; the buffer is bounded.
            let n =
                unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), d) };
            String::from_utf8_lossy(&buf[..n as usize]).into_owned()
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(17);
        for i in 0..200_000u32 {
            let d = match i % 4 {
                0 => f64::from_bits(rng.random()),
                1 => rng.random_range(-1e18..1e18_f64).trunc(),
                2 => rng.random_range(-100_000i64..100_000) as f64 / 100.0,
                _ => rng.random_range(-1e-3..1e-3_f64),
            };
            if d.is_nan() {
                continue;
            }
            assert_eq!(fmt_double(d), c_17g(d), "{d:e} ({:#x})", d.to_bits());
        }
    }

    #[test]
    fn stored_scores_format_as_d2string() {
        assert_eq!(fmt_d2string(123456789012345678.0), "123456789012345680");
        assert_eq!(fmt_d2string(1e17), "100000000000000000");
        assert_eq!(fmt_d2string(-3.0), "-3");
        assert_eq!(fmt_d2string(-0.0), "0");
        assert_eq!(fmt_d2string(1e19), "1e+19");
        assert_eq!(fmt_d2string(0.1), "0.10000000000000001");
        assert_eq!(fmt_d2string(f64::INFINITY), "inf");
    }

    #[test]
    fn resp2_and_resp3_encodings() {
        assert_eq!(enc(&Reply::OK, 2), "+OK\r\n");
        assert_eq!(enc(&Reply::Null, 2), "$-1\r\n");
        assert_eq!(enc(&Reply::Null, 3), "_\r\n");
        assert_eq!(enc(&Reply::NullArray, 2), "*-1\r\n");
        assert_eq!(enc(&Reply::Double(1.5), 2), "$3\r\n1.5\r\n");
        assert_eq!(enc(&Reply::Double(f64::NEG_INFINITY), 3), ",-inf\r\n");
        assert_eq!(enc(&Reply::Double(-0.0), 2), "$2\r\n-0\r\n");
        assert_eq!(enc(&Reply::err("a\r\nb"), 2), "-ERR a  b\r\n");
        let m = Reply::Map(vec![(Reply::bulk("k"), Reply::Int(1))]);
        assert_eq!(enc(&m, 2), "*2\r\n$1\r\nk\r\n:1\r\n");
        assert_eq!(enc(&m, 3), "%1\r\n$1\r\nk\r\n:1\r\n");
        let s = Reply::Scored {
            items: vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 2.5)],
            nested: true,
        };
        assert_eq!(
            enc(&s, 2),
            "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n"
        );
        assert_eq!(
            enc(&s, 3),
            "*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n"
        );
        let v = Reply::Verbatim("a:1\r\n".into());
        assert_eq!(enc(&v, 2), "$5\r\na:1\r\n\r\n");
        assert_eq!(enc(&v, 3), "=9\r\ntxt:a:1\r\n\r\n");
    }
}
