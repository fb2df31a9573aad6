//! A raw RESP test client: commands go out as RESP arrays of bulk strings
//! (or as any raw bytes), and a reply comes back as the exact bytes the
//! server sent, framed by a RESP2/RESP3 parser that knows where one reply
//! ends (`+ - : $ * _ , # ! = ( % ~ > |`).
//!
//! The parser also yields a [`Value`] tree, which the differential tests
//! use to normalise replies whose order Redis does not define (KEYS,
//! HGETALL, SCAN pages) before comparing; [`encode`] writes a tree back
//! as bytes.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// How long a reply may take before the read fails (a test must fail,
/// not hang, when the server stops answering).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// One command: its arguments, as bytes.
pub type Args = Vec<Vec<u8>>;

/// A command from a string, split on ASCII whitespace (no quoting: use
/// [`args`] for arguments with spaces or arbitrary bytes).
pub fn cmd(line: &str) -> Args {
    line.split_ascii_whitespace()
        .map(|a| a.as_bytes().to_vec())
        .collect()
}

/// A command from byte-string arguments.
pub fn args<A: AsRef<[u8]>>(parts: &[A]) -> Args {
    parts.iter().map(|a| a.as_ref().to_vec()).collect()
}

/// The RESP encoding of a command: an array of bulk strings.
pub fn encode_command(a: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", a.len()).into_bytes();
    for x in a {
        out.extend_from_slice(format!("${}\r\n", x.len()).as_bytes());
        out.extend_from_slice(x);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Bytes made printable: ASCII as is (with `\r` `\n` escaped), every
/// other byte as `\xNN`.
pub fn show(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// A command as one printable line: its arguments, quoted where needed.
pub fn show_args(a: &[Vec<u8>]) -> String {
    a.iter()
        .map(|x| {
            let s = show(x);
            if x.is_empty() || x.iter().any(|&b| b == b' ' || b == b'"') || s.len() != x.len() {
                format!("\"{}\"", s.replace('"', "\\\""))
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A parsed RESP2/RESP3 reply.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// `+...`
    Simple(Vec<u8>),
    /// `-...`
    Error(Vec<u8>),
    /// `:...` (kept as text, so that the bytes round-trip)
    Int(Vec<u8>),
    /// `$N` with its data
    Bulk(Vec<u8>),
    /// `$-1`
    NullBulk,
    /// `*-1`
    NullArray,
    /// `_` (RESP3)
    Null,
    /// `,...` (RESP3), as text
    Double(Vec<u8>),
    /// `#t` / `#f` (RESP3)
    Bool(bool),
    /// `!N` (RESP3)
    BulkError(Vec<u8>),
    /// `=N` (RESP3), format and text together
    Verbatim(Vec<u8>),
    /// `(...` (RESP3)
    BigNumber(Vec<u8>),
    /// `*N`
    Array(Vec<Value>),
    /// `%N` (RESP3)
    Map(Vec<(Value, Value)>),
    /// `~N` (RESP3)
    Set(Vec<Value>),
    /// `>N` (RESP3)
    Push(Vec<Value>),
    /// `|N` attributes (RESP3), then the reply they annotate
    Attribute(Vec<(Value, Value)>, Box<Value>),
}

impl Value {
    /// The elements of an array, set or push reply.
    pub fn items(&self) -> Option<&[Value]> {
        match self {
            Value::Array(v) | Value::Set(v) | Value::Push(v) => Some(v),
            _ => None,
        }
    }

    /// The bytes of a string-like reply (simple, bulk, verbatim without
    /// its format prefix, double, integer, big number).
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Simple(b)
            | Value::Bulk(b)
            | Value::Int(b)
            | Value::Double(b)
            | Value::BigNumber(b) => Some(b),
            Value::Verbatim(b) => Some(b.get(4..).unwrap_or(b)),
            _ => None,
        }
    }

    /// The text of a string-like reply, lossily.
    pub fn text(&self) -> Option<String> {
        self.bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The value of an integer reply.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// Whether this is an error reply (simple or bulk).
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_) | Value::BulkError(_))
    }
}

/// Why bytes are not RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Parses one complete reply at the start of `buf`: `Ok(Some((value,
/// length)))`, `Ok(None)` when more bytes are needed, or an error when the
/// bytes cannot be RESP.
pub fn parse(buf: &[u8]) -> Result<Option<(Value, usize)>, Malformed> {
    let mut p = Parser { buf, pos: 0 };
    match p.value() {
        Ok(v) => Ok(Some((v, p.pos))),
        Err(Need::More) => Ok(None),
        Err(Need::Bad(m)) => Err(Malformed(m)),
    }
}

/// Parses bytes that must hold exactly one complete reply.
pub fn parse_one(buf: &[u8]) -> Result<Value, Malformed> {
    match parse(buf)? {
        Some((v, n)) if n == buf.len() => Ok(v),
        Some((_, n)) => Err(Malformed(format!(
            "{} bytes after the reply: {}",
            buf.len() - n,
            show(&buf[n..])
        ))),
        None => Err(Malformed(format!("incomplete reply: {}", show(buf)))),
    }
}

enum Need {
    More,
    Bad(String),
}

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    /// The line from `pos` up to `\r\n` (consumed).
    fn line(&mut self) -> Result<&[u8], Need> {
        let rest = &self.buf[self.pos..];
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(i) => {
                self.pos += i + 2;
                Ok(&rest[..i])
            }
            None => Err(Need::More),
        }
    }

    fn number(&mut self, what: char) -> Result<i64, Need> {
        let line = self.line()?;
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| Need::Bad(format!("bad {what} length {}", show(line))))
    }

    /// `n` bytes of data followed by `\r\n`.
    fn data(&mut self, n: usize) -> Result<Vec<u8>, Need> {
        let end = self.pos.checked_add(n).ok_or(Need::More)?;
        if self.buf.len() < end + 2 {
            return Err(Need::More);
        }
        if &self.buf[end..end + 2] != b"\r\n" {
            return Err(Need::Bad(format!("no CRLF after {n} bytes of data")));
        }
        let d = self.buf[self.pos..end].to_vec();
        self.pos = end + 2;
        Ok(d)
    }

    fn values(&mut self, n: usize) -> Result<Vec<Value>, Need> {
        (0..n).map(|_| self.value()).collect()
    }

    fn pairs(&mut self, n: usize) -> Result<Vec<(Value, Value)>, Need> {
        (0..n).map(|_| Ok((self.value()?, self.value()?))).collect()
    }

    fn count(&mut self, what: char) -> Result<usize, Need> {
        let n = self.number(what)?;
        usize::try_from(n).map_err(|_| Need::Bad(format!("negative {what} length {n}")))
    }

    fn value(&mut self) -> Result<Value, Need> {
        let Some(&kind) = self.buf.get(self.pos) else {
            return Err(Need::More);
        };
        self.pos += 1;
        Ok(match kind {
            b'+' => Value::Simple(self.line()?.to_vec()),
            b'-' => Value::Error(self.line()?.to_vec()),
            b':' => Value::Int(self.line()?.to_vec()),
            b',' => Value::Double(self.line()?.to_vec()),
            b'(' => Value::BigNumber(self.line()?.to_vec()),
            b'_' => {
                let l = self.line()?;
                if !l.is_empty() {
                    return Err(Need::Bad(format!("null with data {}", show(l))));
                }
                Value::Null
            }
            b'#' => match self.line()? {
                b"t" => Value::Bool(true),
                b"f" => Value::Bool(false),
                l => return Err(Need::Bad(format!("bad boolean {}", show(l)))),
            },
            b'$' => match self.number('$')? {
                -1 => Value::NullBulk,
                n if n >= 0 => Value::Bulk(self.data(n as usize)?),
                n => return Err(Need::Bad(format!("bad bulk length {n}"))),
            },
            b'!' => {
                let n = self.count('!')?;
                Value::BulkError(self.data(n)?)
            }
            b'=' => {
                let n = self.count('=')?;
                Value::Verbatim(self.data(n)?)
            }
            b'*' => match self.number('*')? {
                -1 => Value::NullArray,
                n if n >= 0 => Value::Array(self.values(n as usize)?),
                n => return Err(Need::Bad(format!("bad array length {n}"))),
            },
            b'~' => {
                let n = self.count('~')?;
                Value::Set(self.values(n)?)
            }
            b'>' => {
                let n = self.count('>')?;
                Value::Push(self.values(n)?)
            }
            b'%' => {
                let n = self.count('%')?;
                Value::Map(self.pairs(n)?)
            }
            b'|' => {
                let n = self.count('|')?;
                let attrs = self.pairs(n)?;
                Value::Attribute(attrs, Box::new(self.value()?))
            }
            other => {
                return Err(Need::Bad(format!(
                    "unknown RESP type byte {}",
                    show(&[other])
                )))
            }
        })
    }
}

/// The RESP bytes of a [`Value`] (the inverse of [`parse`]).
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(v, &mut out);
    out
}

fn encode_into(v: &Value, out: &mut Vec<u8>) {
    fn line(out: &mut Vec<u8>, kind: u8, b: &[u8]) {
        out.push(kind);
        out.extend_from_slice(b);
        out.extend_from_slice(b"\r\n");
    }
    fn blob(out: &mut Vec<u8>, kind: u8, b: &[u8]) {
        line(out, kind, b.len().to_string().as_bytes());
        out.extend_from_slice(b);
        out.extend_from_slice(b"\r\n");
    }
    match v {
        Value::Simple(b) => line(out, b'+', b),
        Value::Error(b) => line(out, b'-', b),
        Value::Int(b) => line(out, b':', b),
        Value::Double(b) => line(out, b',', b),
        Value::BigNumber(b) => line(out, b'(', b),
        Value::Null => out.extend_from_slice(b"_\r\n"),
        Value::NullBulk => out.extend_from_slice(b"$-1\r\n"),
        Value::NullArray => out.extend_from_slice(b"*-1\r\n"),
        Value::Bool(t) => out.extend_from_slice(if *t { b"#t\r\n" } else { b"#f\r\n" }),
        Value::Bulk(b) => blob(out, b'$', b),
        Value::BulkError(b) => blob(out, b'!', b),
        Value::Verbatim(b) => blob(out, b'=', b),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            let kind = match v {
                Value::Array(_) => b'*',
                Value::Set(_) => b'~',
                _ => b'>',
            };
            line(out, kind, items.len().to_string().as_bytes());
            for i in items {
                encode_into(i, out);
            }
        }
        Value::Map(pairs) => {
            line(out, b'%', pairs.len().to_string().as_bytes());
            for (k, x) in pairs {
                encode_into(k, out);
                encode_into(x, out);
            }
        }
        Value::Attribute(pairs, inner) => {
            line(out, b'|', pairs.len().to_string().as_bytes());
            for (k, x) in pairs {
                encode_into(k, out);
                encode_into(x, out);
            }
            encode_into(inner, out);
        }
    }
}

/// A connection to a RESP server.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    addr: String,
}

impl Conn {
    /// Connects to `addr` (`127.0.0.1:PORT`).
    pub fn connect(addr: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        stream.set_write_timeout(Some(REPLY_TIMEOUT))?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
            addr: addr.to_string(),
        })
    }

    /// Connects, panicking on failure.
    #[track_caller]
    pub fn open(addr: &str) -> Conn {
        Conn::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"))
    }

    /// The address this connection was opened to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends one command (an array of bulk strings) without reading.
    pub fn send(&mut self, a: &[Vec<u8>]) -> io::Result<()> {
        self.stream.write_all(&encode_command(a))
    }

    /// Sends raw bytes (inline commands, malformed frames, pipelines).
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads ONE complete reply and returns its exact bytes. Fails on a
    /// timeout, on end of stream before a complete reply (the partial
    /// bytes are in the error text), and on bytes that are not RESP.
    pub fn read_reply(&mut self) -> io::Result<Vec<u8>> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match parse(&self.buf) {
                Ok(Some((_, n))) => return Ok(self.buf.drain(..n).collect()),
                Ok(None) => {}
                Err(Malformed(m)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("not RESP ({m}): {}", show(&self.buf)),
                    ))
                }
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "connection closed{}",
                        if self.buf.is_empty() {
                            String::new()
                        } else {
                            format!(" after a partial reply {}", show(&self.buf))
                        }
                    ),
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and reads its reply's bytes.
    pub fn request(&mut self, a: &[Vec<u8>]) -> io::Result<Vec<u8>> {
        self.send(a)?;
        self.read_reply()
    }

    /// [`Conn::request`], panicking on an I/O error.
    #[track_caller]
    pub fn call(&mut self, a: &[Vec<u8>]) -> Vec<u8> {
        self.request(a)
            .unwrap_or_else(|e| panic!("{} on {}: {e}", show_args(a), self.addr))
    }

    /// [`Conn::call`] with a whitespace-split command, parsed.
    #[track_caller]
    pub fn call_str(&mut self, line: &str) -> Value {
        let raw = self.call(&cmd(line));
        parse_one(&raw).expect("a complete reply")
    }

    /// Everything the server sends until it closes the connection or
    /// `within` passes: `(bytes, closed)`. A reset counts as closed.
    pub fn drain_until_close(&mut self, within: Duration) -> (Vec<u8>, bool) {
        let mut out = std::mem::take(&mut self.buf);
        let deadline = Instant::now() + within;
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (out, false);
            }
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut chunk) {
                Ok(0) => return (out, true),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    let _ = self.stream.set_read_timeout(Some(REPLY_TIMEOUT));
                    return (out, false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return (out, true),
            }
        }
    }

    /// A second handle on the socket, for writing from another thread
    /// while this one reads.
    pub fn writer(&self) -> io::Result<TcpStream> {
        self.stream.try_clone()
    }

    /// Closes the writing half (the server sees end of stream).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}
