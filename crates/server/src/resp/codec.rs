//! Requests in: the bytes a Redis client sends, split into commands (a list
//! of byte-string arguments), exactly as Redis 7.0's `processInputBuffer`
//! splits them, with the same limits and the same protocol-error texts.
//!
//! Two request forms exist. A buffer starting with `*` is a *multibulk*
//! frame, `*<n>\r\n` then `n` times `$<len>\r\n<len bytes>\r\n`; anything
//! else is an *inline* command, one line split like a shell would
//! (`sdssplitargs`: spaces, `"…"` with C escapes, `'…'`).
//!
//! A multibulk frame is decoded by the `redis-protocol` crate
//! ([`decode_range`]), but only once a scan here has seen the whole frame.
//! The crate alone cannot serve a server: it reports a frame whose declared
//! length has not arrived as "incomplete" (correctly, but so a client
//! announcing `$1099511627776` would have us buffer forever), it parses from
//! the start again on every call (quadratic on a large frame arriving in
//! pieces), it accepts frames Redis refuses (nested arrays, `+`/`:` items)
//! and its errors are not Redis's. So [`Decoder`] first scans the headers,
//! incrementally and with Redis's checks, and keeps where it stopped:
//! nothing is allocated from a declared length, a frame is scanned once, and
//! every refusal carries the text Redis sends before it closes the
//! connection.

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;

/// Longest inline request, and longest `*`/`$` header line (Redis's
/// `PROTO_INLINE_MAX_SIZE`).
pub const MAX_INLINE: usize = 64 * 1024;
/// Largest bulk argument (`proto-max-bulk-len`, 512 MB).
pub const MAX_BULK: i64 = 512 * 1024 * 1024;
/// Most arguments in one multibulk frame (Redis 7.0: `INT_MAX`; the argv
/// array grows as arguments arrive, it is not sized from this number).
pub const MAX_MULTIBULK: i64 = i32::MAX as i64;
/// Before AUTH, when a password is required, Redis limits requests further.
pub const UNAUTH_MAX_MULTIBULK: i64 = 10;
pub const UNAUTH_MAX_BULK: i64 = 16 * 1024;

/// A refused request: Redis replies `-ERR <message>` and closes the
/// connection after the replies of the commands before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub Vec<u8>);

impl ProtocolError {
    fn new(msg: &str) -> Self {
        ProtocolError(format!("Protocol error: {msg}").into_bytes())
    }
    /// The error line's text, without the leading `-` and trailing CRLF.
    pub fn reply_text(&self) -> Vec<u8> {
        let mut v = b"ERR ".to_vec();
        v.extend_from_slice(&self.0);
        v
    }
}

/// One request: its arguments (empty for the no-op requests Redis skips
/// silently: an empty line, `*0`, `*-1`).
pub type Args = Vec<Bytes>;

/// Splits requests off the front of a read buffer. Keeps the progress of a
/// partly received multibulk frame between calls.
#[derive(Debug, Default)]
pub struct Decoder {
    /// A multibulk frame's header has been read: bytes of the frame scanned
    /// so far (all complete arguments) and arguments still to come.
    frame: Option<(usize, i64)>,
    /// The buffer length needed before scanning can go on (a bulk body).
    need: usize,
}

pub use podium_core::keystore::string2ll;

/// Where the header line starting at `from` ends: its `\r`. Redis looks
/// with `strchr`, so a NUL byte first means "no line end yet" (the client
/// then waits, until the line is too long).
fn find_line_end(buf: &[u8], from: usize) -> Option<usize> {
    let i = buf
        .get(from..)?
        .iter()
        .position(|&c| c == b'\r' || c == 0)?;
    (buf[from + i] == b'\r').then_some(from + i)
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The buffer length the request being received needs before it can
    /// be decoded further: the end of a declared bulk body; 0 when
    /// unknown.
    pub fn need(&self) -> usize {
        self.need
    }

    /// The next complete request at the front of `buf`, removing its bytes;
    /// `Ok(None)` when more bytes are needed. `authed`: false while the
    /// connection must still authenticate (the tighter limits apply).
    pub fn decode(
        &mut self,
        buf: &mut BytesMut,
        authed: bool,
    ) -> Result<Option<Args>, ProtocolError> {
        if buf.is_empty() || buf.len() < self.need {
            return Ok(None);
        }
        if self.frame.is_none() && buf[0] != b'*' {
            return decode_inline(buf);
        }
        self.decode_multibulk(buf, authed)
    }

    fn decode_multibulk(
        &mut self,
        buf: &mut BytesMut,
        authed: bool,
    ) -> Result<Option<Args>, ProtocolError> {
        let (mut pos, mut left) = match self.frame {
            Some(f) => f,
            None => {
                let Some(nl) = find_line_end(buf, 0) else {
                    if buf.len() > MAX_INLINE {
                        return Err(ProtocolError::new("too big mbulk count string"));
                    }
                    return Ok(None);
                };
                if nl + 2 > buf.len() {
                    return Ok(None);
                }
                let n = match string2ll(&buf[1..nl]) {
                    Some(n) if n <= MAX_MULTIBULK => n,
                    _ => return Err(ProtocolError::new("invalid multibulk length")),
                };
                if n > UNAUTH_MAX_MULTIBULK && !authed {
                    return Err(ProtocolError::new("unauthenticated multibulk length"));
                }
                if n <= 0 {
                    let _ = buf.split_to(nl + 2);
                    return Ok(Some(Vec::new()));
                }
                (nl + 2, n)
            }
        };
        while left > 0 {
            let line_end = find_line_end(buf, pos).filter(|&nl| nl + 2 <= buf.len());
            let Some(nl) = line_end else {
                self.frame = Some((pos, left));
                if buf.len() - pos > MAX_INLINE {
                    return Err(ProtocolError::new("too big bulk count string"));
                }
                return Ok(None);
            };
            if buf[pos] != b'$' {
                let got = match buf[pos] {
                    b'\r' | b'\n' => b' ',
                    c => c,
                };
                let mut msg = b"Protocol error: expected '$', got '".to_vec();
                msg.push(got);
                msg.push(b'\'');
                return Err(ProtocolError(msg));
            }
            let len = match string2ll(&buf[pos + 1..nl]) {
                Some(n) if (0..=MAX_BULK).contains(&n) => n,
                _ => return Err(ProtocolError::new("invalid bulk length")),
            };
            if len > UNAUTH_MAX_BULK && !authed {
                return Err(ProtocolError::new("unauthenticated bulk length"));
            }
            // The body and its (unchecked, as in Redis) two-byte terminator.
            let end = nl + 2 + len as usize + 2;
            if buf.len() < end {
                // Resume at this argument's header once the body is here.
                self.frame = Some((pos, left));
                self.need = end;
                return Ok(None);
            }
            pos = end;
            left -= 1;
        }
        self.frame = None;
        self.need = 0;
        // The whole frame is in `buf[..pos]` and well formed: let the
        // codec crate cut it into arguments (zero-copy ranges).
        let frame = match decode_range(&buf[..pos]) {
            Ok(Some((RangeFrame::Array(items), used))) if used == pos => items,
            _ => return Err(ProtocolError::new("invalid multibulk length")),
        };
        let bytes = buf.split_to(pos).freeze();
        let mut args = Vec::with_capacity(frame.len());
        for item in frame {
            match item {
                RangeFrame::BulkString((a, b)) => args.push(bytes.slice(a..b)),
                _ => return Err(ProtocolError::new("invalid bulk length")),
            }
        }
        Ok(Some(args))
    }
}

/// An inline request: one line, up to `\n` (a `\r` before it is dropped).
fn decode_inline(buf: &mut BytesMut) -> Result<Option<Args>, ProtocolError> {
    // `strchr` again: a NUL before the newline hides it.
    let window = &buf[..buf.len().min(MAX_INLINE + 1)];
    let nl = window
        .iter()
        .position(|&c| c == b'\n' || c == 0)
        .filter(|&i| window[i] == b'\n');
    let Some(nl) = nl else {
        if buf.len() > MAX_INLINE {
            return Err(ProtocolError::new("too big inline request"));
        }
        return Ok(None);
    };
    let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    let args = split_args(&buf[..line_end])
        .ok_or_else(|| ProtocolError::new("unbalanced quotes in request"))?;
    let _ = buf.split_to(nl + 1);
    Ok(Some(args.into_iter().map(Bytes::from).collect()))
}

fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Redis's `sdssplitargs`: `None` for unbalanced quotes (or a closing quote
/// not followed by a space). Like the C original, a NUL byte ends the line.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match line.iter().position(|&c| c == 0) {
        Some(i) => &line[..i],
        None => line,
    };
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_c_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(out);
        }
        let mut cur = Vec::new();
        // The open quote, if any: double quotes take `\xHH` and C escapes,
        // single quotes only `\'`.
        let mut quote = None;
        loop {
            let c = at(p);
            if let Some(q) = quote {
                let double = q == b'"';
                if double && c == b'\\' && at(p + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(at(p + 2)), hex_val(at(p + 3))) {
                        cur.push(h * 16 + l);
                        p += 4;
                        continue;
                    }
                }
                if double && c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    cur.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if !double && c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if c == q {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        if c != 0 {
                            p += 1;
                        }
                        break;
                    }
                    b'"' | b'\'' => quote = Some(c),
                    _ => cur.push(c),
                }
            }
            p += 1;
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(input: &[u8]) -> (Result<Option<Args>, ProtocolError>, usize) {
        let mut d = Decoder::new();
        let mut b = BytesMut::from(input);
        let r = d.decode(&mut b, true);
        (r, b.len())
    }

    fn args(v: &[&str]) -> Args {
        v.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    fn err(msg: &str) -> ProtocolError {
        ProtocolError(format!("Protocol error: {msg}").into_bytes())
    }

    #[test]
    fn multibulk_frames_decode_and_leave_the_rest() {
        let (r, left) = dec(b"*2\r\n$4\r\nECHO\r\n$3\r\nhey\r\n*1\r\n");
        assert_eq!(r.unwrap().unwrap(), args(&["ECHO", "hey"]));
        assert_eq!(left, 4);
        // Binary and empty arguments.
        let (r, _) = dec(b"*2\r\n$0\r\n\r\n$3\r\n\x00\r\n\r\n");
        assert_eq!(
            r.unwrap().unwrap(),
            vec![Bytes::new(), Bytes::from_static(b"\x00\r\n")]
        );
    }

    #[test]
    fn every_prefix_of_a_frame_is_incomplete_and_the_whole_decodes_once() {
        let frame = b"*3\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$10\r\n0123456789\r\n";
        let mut d = Decoder::new();
        let mut b = BytesMut::new();
        for (i, &c) in frame.iter().enumerate() {
            b.extend_from_slice(&[c]);
            let r = d.decode(&mut b, true).unwrap();
            if i + 1 < frame.len() {
                assert!(r.is_none(), "decoded early at byte {i}");
            } else {
                assert_eq!(r.unwrap(), args(&["ZADD", "lb", "0123456789"]));
            }
        }
        assert!(b.is_empty());
    }

    #[test]
    fn empty_and_negative_multibulk_are_skipped() {
        let (r, left) = dec(b"*0\r\n");
        assert_eq!((r.unwrap().unwrap(), left), (vec![], 0));
        let (r, left) = dec(b"*-10\r\nPING\r\n");
        assert_eq!((r.unwrap().unwrap(), left), (vec![], 6));
    }

    #[test]
    fn huge_lengths_are_refused_before_any_bytes_arrive() {
        assert_eq!(
            dec(b"*1\r\n$1099511627776\r\n").0,
            Err(err("invalid bulk length"))
        );
        assert_eq!(
            dec(b"*1\r\n$536870913\r\n").0,
            Err(err("invalid bulk length"))
        );
        assert_eq!(dec(b"*1\r\n$536870912\r\n").0, Ok(None));
        assert_eq!(dec(b"*1\r\n$-1\r\n").0, Err(err("invalid bulk length")));
        assert_eq!(
            dec(b"*3000000000\r\n").0,
            Err(err("invalid multibulk length"))
        );
        assert_eq!(dec(b"*2147483647\r\n").0, Ok(None));
        assert_eq!(dec(b"*x\r\n").0, Err(err("invalid multibulk length")));
        assert_eq!(dec(b"*01\r\n").0, Err(err("invalid multibulk length")));
        assert_eq!(dec(b"*+1\r\n").0, Err(err("invalid multibulk length")));
        assert_eq!(dec(b"*1\r\n$abc\r\n").0, Err(err("invalid bulk length")));
        assert_eq!(
            dec(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n").0,
            Err(ProtocolError(
                b"Protocol error: expected '$', got 'f'".to_vec()
            ))
        );
        assert_eq!(
            dec(b"*1\r\n\r\n").0,
            Err(ProtocolError(
                b"Protocol error: expected '$', got ' '".to_vec()
            ))
        );
    }

    #[test]
    fn header_lines_without_end_are_bounded() {
        let mut long = b"*".to_vec();
        long.extend(std::iter::repeat_n(b'1', MAX_INLINE + 1));
        assert_eq!(dec(&long).0, Err(err("too big mbulk count string")));
        let mut long = b"*1\r\n$".to_vec();
        long.extend(std::iter::repeat_n(b'1', MAX_INLINE + 1));
        assert_eq!(dec(&long).0, Err(err("too big bulk count string")));
    }

    #[test]
    fn unauthenticated_clients_get_the_tighter_limits() {
        let mut d = Decoder::new();
        let mut b = BytesMut::from(&b"*11\r\n"[..]);
        assert_eq!(
            d.decode(&mut b, false),
            Err(err("unauthenticated multibulk length"))
        );
        let mut d = Decoder::new();
        let mut b = BytesMut::from(&b"*1\r\n$16385\r\n"[..]);
        assert_eq!(
            d.decode(&mut b, false),
            Err(err("unauthenticated bulk length"))
        );
    }

    #[test]
    fn inline_commands_split_like_redis() {
        let (r, left) = dec(b"PING\r\nrest");
        assert_eq!((r.unwrap().unwrap(), left), (args(&["PING"]), 4));
        let (r, _) = dec(b"  set  \"a b\" 'c d'\n");
        assert_eq!(r.unwrap().unwrap(), args(&["set", "a b", "c d"]));
        let (r, _) = dec(b"echo \"\\x41\\n\\\"q\" 'it\\'s'\r\n");
        assert_eq!(r.unwrap().unwrap(), args(&["echo", "A\n\"q", "it's"]));
        let (r, left) = dec(b"\r\n");
        assert_eq!((r.unwrap().unwrap(), left), (vec![], 0));
        assert_eq!(dec(b"PING").0, Ok(None));
        // Redis searches the line end with strchr: a NUL hides it.
        assert_eq!(dec(b"foo\x00bar\r\n").0, Ok(None));
        assert_eq!(dec(b"*1\x00\r\n").0, Ok(None));
    }

    #[test]
    fn inline_errors() {
        assert_eq!(
            dec(b"get \"unclosed\r\n").0,
            Err(err("unbalanced quotes in request"))
        );
        assert_eq!(
            dec(b"get \"a\"b\r\n").0,
            Err(err("unbalanced quotes in request"))
        );
        assert_eq!(
            dec(b"get 'a\r\n").0,
            Err(err("unbalanced quotes in request"))
        );
        let big = vec![b'a'; 3 * 1024 * 1024];
        assert_eq!(dec(&big).0, Err(err("too big inline request")));
        let mut big = vec![b'a'; MAX_INLINE + 10];
        big.extend_from_slice(b"\r\n");
        assert_eq!(dec(&big).0, Err(err("too big inline request")));
    }

    #[test]
    fn random_bytes_never_panic() {
        // A small deterministic fuzz: random bytes, random RESP-ish tokens,
        // fed in random pieces.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let tokens: [&[u8]; 12] = [
            b"*",
            b"$",
            b"\r\n",
            b"\r",
            b"\n",
            b"1",
            b"3",
            b"-1",
            b"\"",
            b"'",
            b"99999999999",
            b"x",
        ];
        for _ in 0..3000 {
            let mut input = Vec::new();
            for _ in 0..rnd() % 40 {
                if rnd() % 3 == 0 {
                    input.push(rnd() as u8);
                } else {
                    input.extend_from_slice(tokens[(rnd() % tokens.len() as u64) as usize]);
                }
            }
            let mut d = Decoder::new();
            let mut b = BytesMut::new();
            let mut i = 0;
            while i < input.len() {
                let n = 1 + (rnd() as usize % 8);
                b.extend_from_slice(&input[i..(i + n).min(input.len())]);
                i += n;
                while let Ok(Some(_)) = d.decode(&mut b, rnd() % 2 == 0) {}
            }
        }
    }
}
