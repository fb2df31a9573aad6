//! Framing: where one MessagePack value ends in a buffer that grows as bytes
//! arrive, and the response envelope `[1, msgid, error, result]`.
//!
//! MessagePack-RPC has no length prefix: a message ends where its outermost
//! value ends. [`Scanner`] walks the item headers of the value being
//! received and keeps its place between calls, so a 128 MiB response that
//! arrives in thousands of reads is walked once in total (not re-decoded
//! from its start after each read), and nothing is decoded or allocated
//! until the whole message is there. A string or binary item's length is
//! known from its header, so the reader can reserve room for it at once.

use bytes::Bytes;
use rmpv::Value;

use crate::ClientError;

/// Deepest nesting of arrays and maps accepted in a response (rmpv's own
/// decoding limit is 1,024; podium's results nest a few levels).
pub const MAX_DEPTH: usize = 512;

/// Walks one MessagePack value at a time through a growing buffer.
#[derive(Debug)]
pub struct Scanner {
    /// Bytes of the current value walked so far.
    pos: usize,
    /// Items still expected in each open array or map (a map counts its
    /// keys and values).
    open: Vec<u64>,
    /// The largest value accepted, in bytes.
    max: usize,
    /// The value needs at least this many bytes in the buffer (known when
    /// a string or binary item's header has arrived but not its payload).
    need: usize,
}

/// How an item header reads: its size, and either the payload bytes that
/// follow it or the number of items of the container it opens.
enum Item {
    Scalar { header: usize, payload: u64 },
    Container { header: usize, items: u64 },
}

impl Scanner {
    pub fn new(max: usize) -> Scanner {
        Scanner {
            pos: 0,
            open: Vec::new(),
            max,
            need: 0,
        }
    }

    /// Bytes the current value is known to need in total (0 when unknown):
    /// the reader reserves that much before its next read.
    pub fn need(&self) -> usize {
        self.need
    }

    /// Continues walking the value that starts at `buf[0]`. Returns its
    /// length once all of it is in `buf` (and resets for the next value),
    /// `None` while more bytes are needed. `buf` must be the same buffer as
    /// before, grown at its end, until a length has been returned.
    pub fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, ClientError> {
        let len = buf.len();
        // The bound on positions: past it, a value is too large.
        let max = self.max.min(len);
        let mut pos = self.pos;
        loop {
            // Entries of podium's own shape, one after another inside an
            // array (an export, a page): walked in a run without the
            // per-item steps below. The last item of the container is left
            // to them, as they close it.
            if let Some(left) = self.open.last_mut() {
                let mut l = *left;
                while l > 1 {
                    match entry_end(buf, pos) {
                        Some(end) if end <= max => pos = end,
                        _ => break,
                    }
                    l -= 1;
                }
                *left = l;
            }
            let Some(&b) = buf.get(pos) else {
                self.pos = pos;
                return Ok(None);
            };
            // Fast paths: the scalars a result is mostly made of, and a
            // small map of them (an entry) walked whole when all of it is
            // in the buffer.
            let mut end = scalar_end(b, pos);
            if (0x80..=0x8f).contains(&b) {
                let mut p = pos + 1;
                for _ in 0..usize::from(b & 0x0f) * 2 {
                    let e = match buf.get(p) {
                        Some(&c) => scalar_end(c, p),
                        None => 0,
                    };
                    if e == 0 || e > max {
                        p = 0;
                        break;
                    }
                    p = e;
                }
                end = p;
            }
            if end > 0 {
                if end > max {
                    self.check(end as u64)?;
                    self.pos = pos;
                    return Ok(None);
                }
                pos = end;
            } else {
                let Some(item) = header(b, &buf[pos..])? else {
                    self.pos = pos;
                    return Ok(None);
                };
                match item {
                    Item::Scalar { header, payload } => {
                        let end = (pos as u64)
                            .saturating_add(header as u64)
                            .saturating_add(payload);
                        self.check(end)?;
                        let end = end as usize;
                        if end > len {
                            self.pos = pos;
                            self.need = end;
                            return Ok(None);
                        }
                        pos = end;
                    }
                    Item::Container { header, items } => {
                        let end = (pos + header) as u64;
                        // Each item takes a byte at least: a container
                        // cannot declare more items than the size bound
                        // leaves room for.
                        self.check(end.saturating_add(items))?;
                        pos = end as usize;
                        if items > 0 {
                            if self.open.len() >= MAX_DEPTH {
                                return Err(ClientError::Protocol(format!(
                                    "a response nests more than {MAX_DEPTH} arrays and maps"
                                )));
                            }
                            self.open.push(items);
                            continue;
                        }
                    }
                }
            }
            // One item is complete: count it in the containers it closes.
            loop {
                match self.open.last_mut() {
                    None => {
                        self.pos = 0;
                        self.need = 0;
                        return Ok(Some(pos));
                    }
                    Some(left) => {
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                        self.open.pop();
                    }
                }
            }
        }
    }

    fn check(&self, end: u64) -> Result<(), ClientError> {
        if end > self.max as u64 {
            return Err(ClientError::Protocol(format!(
                "a response is larger than the client's limit of {} bytes",
                self.max
            )));
        }
        Ok(())
    }
}

/// Where the entry starting at `buf[pos]` ends, if it is podium's entry
/// `{member: fixstr, score: float 64, rank: uint}` (the map header, keys
/// and markers are fixed bytes, compared a word at a time) and all of it
/// is in `buf`; `None` for anything else, which the general walk reads.
#[inline(always)]
fn entry_end(buf: &[u8], pos: usize) -> Option<usize> {
    const HEAD: &[u8; 8] = b"\x83\xa6member";
    let head = buf.get(pos..pos + 9)?;
    let id = head[8];
    if head[..8] != HEAD[..] || id & 0xe0 != 0xa0 {
        return None;
    }
    // "score", its float 64, "rank", the rank's marker.
    let at = pos + 9 + usize::from(id & 0x1f);
    let rest = buf.get(at..at + 21)?;
    if rest[..7] != b"\xa5score\xcb"[..] || rest[15..20] != b"\xa4rank"[..] {
        return None;
    }
    let rank = match rest[20] {
        0x00..=0x7f => 1,
        0xcc => 2,
        0xcd => 3,
        0xce => 5,
        0xcf => 9,
        _ => return None,
    };
    let end = at + 20 + rank;
    (end <= buf.len()).then_some(end)
}

/// Size of the scalar a marker byte starts, when the marker alone tells
/// it (small ints, nil, bools, fixstr, floats, ints); 0 for the others.
static SCALAR_SIZE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0usize;
    while b < 256 {
        t[b] = match b as u8 {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 1,
            0xa0..=0xbf => 1 + (b as u8 & 0x1f),
            0xcb | 0xcf | 0xd3 => 9,
            0xca | 0xce | 0xd2 => 5,
            0xcc | 0xd0 => 2,
            0xcd | 0xd1 => 3,
            _ => 0,
        };
        b += 1;
    }
    t
};

/// Where a scalar of [`SCALAR_SIZE`] starting at `pos` ends; 0 when its
/// marker `b` is of another kind.
#[inline(always)]
fn scalar_end(b: u8, pos: usize) -> usize {
    match SCALAR_SIZE[usize::from(b)] {
        0 => 0,
        n => pos + usize::from(n),
    }
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// Reads the item header starting at `rest[0]` (= `b`); `None` when the
/// header itself is not all there yet.
fn header(b: u8, rest: &[u8]) -> Result<Option<Item>, ClientError> {
    // (header bytes, bytes of the length field after the marker, kind)
    #[derive(Clone, Copy)]
    enum K {
        Fixed(u64),
        Str,
        Ext,
        Array,
        Map,
    }
    let (size_bytes, kind) = match b {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, K::Fixed(0)),
        0x80..=0x8f => {
            return Ok(Some(Item::Container {
                header: 1,
                items: u64::from(b & 0x0f) * 2,
            }))
        }
        0x90..=0x9f => {
            return Ok(Some(Item::Container {
                header: 1,
                items: u64::from(b & 0x0f),
            }))
        }
        0xa0..=0xbf => {
            return Ok(Some(Item::Scalar {
                header: 1,
                payload: u64::from(b & 0x1f),
            }))
        }
        0xc1 => {
            return Err(ClientError::Protocol(
                "byte 0xc1 (never used by MessagePack) in a response".into(),
            ))
        }
        0xc4 | 0xd9 => (1, K::Str),
        0xc5 | 0xda => (2, K::Str),
        0xc6 | 0xdb => (4, K::Str),
        0xc7 => (1, K::Ext),
        0xc8 => (2, K::Ext),
        0xc9 => (4, K::Ext),
        0xca => (0, K::Fixed(4)),
        0xcb => (0, K::Fixed(8)),
        0xcc | 0xd0 => (0, K::Fixed(1)),
        0xcd | 0xd1 => (0, K::Fixed(2)),
        0xce | 0xd2 => (0, K::Fixed(4)),
        0xcf | 0xd3 => (0, K::Fixed(8)),
        // fixext 1, 2, 4, 8, 16: a type byte, then the data.
        0xd4 => (0, K::Fixed(2)),
        0xd5 => (0, K::Fixed(3)),
        0xd6 => (0, K::Fixed(5)),
        0xd7 => (0, K::Fixed(9)),
        0xd8 => (0, K::Fixed(17)),
        0xdc => (2, K::Array),
        0xdd => (4, K::Array),
        0xde => (2, K::Map),
        0xdf => (4, K::Map),
    };
    if rest.len() < 1 + size_bytes {
        return Ok(None);
    }
    let n = be(&rest[1..1 + size_bytes]);
    let header = 1 + size_bytes;
    Ok(Some(match kind {
        K::Fixed(payload) => Item::Scalar { header, payload },
        K::Str => Item::Scalar { header, payload: n },
        // The ext type byte counts as payload.
        K::Ext => Item::Scalar {
            header,
            payload: n + 1,
        },
        K::Array => Item::Container { header, items: n },
        K::Map => Item::Container {
            header,
            items: n * 2,
        },
    }))
}

/// A message read from the server.
pub enum Incoming {
    /// `[1, msgid, error, result]`.
    Response { msgid: u32, outcome: Outcome },
    /// `[2, method, params]`: podium sends none; ignored.
    Notification,
}

/// A response's error or its result.
pub enum Outcome {
    /// `error` is nil: the result is `frame[at..]`.
    Ok {
        frame: Bytes,
        at: usize,
    },
    Err(ClientError),
}

fn protocol(what: impl std::fmt::Display) -> ClientError {
    ClientError::Protocol(what.to_string())
}

/// Reads a complete message's envelope. Only the error (small) is decoded
/// here; the result stays bytes until the caller asks for it.
pub fn parse_incoming(frame: Bytes) -> Result<Incoming, ClientError> {
    let mut rd: &[u8] = &frame;
    let len = rmp::decode::read_array_len(&mut rd).map_err(|e| {
        // An HTTP server answering the request as bad HTTP: its
        // "HTTP/1.1 400" reads as the lone MessagePack integer 72 ('H').
        if frame.first() == Some(&b'H') {
            protocol("an answer that starts like HTTP, not MessagePack-RPC (is this an HTTP port?)")
        } else if matches!(frame.first(), Some(b'+' | b'-')) {
            // A Redis server's "+OK" / "-ERR …" reads as the lone integer
            // 43 or 45.
            protocol("an answer in the Redis protocol, not MessagePack-RPC (is this a Redis port?)")
        } else {
            protocol(format!("a message that is not an array ({e:?})"))
        }
    })?;
    let kind: u8 = rmp::decode::read_int(&mut rd)
        .map_err(|e| protocol(format!("a message without a valid type ({e:?})")))?;
    match (kind, len) {
        (2, 3) => return Ok(Incoming::Notification),
        (1, 4) => {}
        _ => {
            return Err(protocol(format!(
                "unexpected message of type {kind} with {len} items (expected a response, [1, msgid, error, result])"
            )))
        }
    }
    let msgid: u32 = rmp::decode::read_int(&mut rd)
        .map_err(|e| protocol(format!("a response without a valid msgid ({e:?})")))?;
    if rd.first() == Some(&0xc0) {
        let at = frame.len() - rd.len() + 1;
        return Ok(Incoming::Response {
            msgid,
            outcome: Outcome::Ok { frame, at },
        });
    }
    let err = rmpv::decode::read_value(&mut rd)
        .map_err(|e| protocol(format!("a response with an unreadable error ({e})")))?;
    Ok(Incoming::Response {
        msgid,
        outcome: Outcome::Err(server_error(err)),
    })
}

/// podium's errors are `[code, message]`; anything else is kept as text.
fn server_error(v: Value) -> ClientError {
    if let Value::Array(items) = &v {
        if let [Value::String(code), Value::String(message)] = items.as_slice() {
            if let (Some(code), Some(message)) = (code.as_str(), message.as_str()) {
                return ClientError::Server {
                    code: code.to_string(),
                    message: message.to_string(),
                };
            }
        }
    }
    let message = match &v {
        Value::String(s) => s
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
        _ => v.to_string(),
    };
    ClientError::Server {
        code: String::new(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `stream` to a scanner `step` bytes at a time for each step:
    /// every message comes out whole, equal to `values`, ending at `ends`.
    fn scan_in_steps(stream: &[u8], values: &[rmpv::Value], ends: &[usize], steps: &[usize]) {
        for &step in steps {
            let mut sc = Scanner::new(1 << 30);
            let (mut start, mut fed) = (0, 0);
            let mut found = Vec::new();
            while fed < stream.len() {
                fed = (fed + step).min(stream.len());
                while let Some(len) = sc.scan(&stream[start..fed]).unwrap() {
                    let v = rmpv::decode::read_value(&mut &stream[start..start + len]).unwrap();
                    assert_eq!(v, values[found.len()]);
                    start += len;
                    found.push(start);
                }
            }
            assert_eq!(found, ends, "step {step}");
        }
    }

    fn enc(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    fn sample() -> Vec<Value> {
        vec![
            Value::Nil,
            Value::from(true),
            Value::from(-1),
            Value::from(u64::MAX),
            Value::from(i64::MIN),
            Value::from(1.5f32),
            Value::from(f64::INFINITY),
            Value::from("é".repeat(40)),
            Value::from("x".repeat(70_000)),
            Value::Binary(vec![1; 300]),
            Value::Ext(5, vec![1]),
            Value::Ext(5, vec![1, 2]),
            Value::Ext(5, vec![1; 4]),
            Value::Ext(5, vec![1; 8]),
            Value::Ext(5, vec![1; 16]),
            Value::Ext(5, vec![1; 3]),
            Value::Ext(5, vec![1; 300]),
            Value::Ext(5, vec![1; 70_000]),
            Value::Array(vec![]),
            Value::Map(vec![]),
            Value::Array((0..20).map(Value::from).collect()),
            Value::Array((0..70_000).map(Value::from).collect()),
            Value::Map(
                (0..20)
                    .map(|i| (Value::from(format!("k{i}")), Value::Array(vec![Value::Nil])))
                    .collect(),
            ),
            Value::Map(
                (0..70_000)
                    .map(|i| (Value::from(i), Value::Map(vec![])))
                    .collect(),
            ),
            Value::Array(vec![Value::Array(vec![Value::Array(vec![
                Value::Map(vec![(Value::Nil, Value::Array(vec![]))]),
                Value::from(3),
            ])])]),
        ]
    }

    #[test]
    fn finds_the_end_of_every_kind_of_value_fed_in_pieces() {
        // All values back to back, fed in pieces of odd sizes: the scanner
        // must stop exactly at each value's end.
        let values = sample();
        let mut stream = Vec::new();
        let mut ends = Vec::new();
        for v in &values {
            stream.extend(enc(v));
            ends.push(stream.len());
        }
        scan_in_steps(&stream, &values, &ends, &[1, 2, 3, 7, 64, 1000, 1 << 20]);
    }

    /// podium's entries, walked by the scanner's run of whole entries, and
    /// maps that nearly have their shape (walked item by item), in arrays
    /// and a map, fed in pieces that cut them anywhere: every value ends
    /// exactly where it does.
    #[test]
    fn entries_and_near_entries_are_framed_whatever_the_pieces() {
        let entry = |id: Value, score: Value, rank: Value| {
            Value::Map(vec![
                ("member".into(), id),
                ("score".into(), score),
                ("rank".into(), rank),
            ])
        };
        let ranks = [0u64, 127, 128, 255, 256, 65_535, 65_536, 1 << 32, u64::MAX];
        let mut entries: Vec<Value> = (0..40usize)
            .map(|n| {
                entry(
                    "m".repeat(n).into(),
                    (n as f64 * -1.5).into(),
                    ranks[n % ranks.len()].into(),
                )
            })
            .collect();
        // Near misses: a str 8 id, a float 32 score, a negative rank, a nil
        // rank, another key, a fourth field, keys in another order.
        entries.extend([
            entry("x".repeat(40).into(), 1.5f64.into(), 1.into()),
            entry("a".into(), 1.5f32.into(), 1.into()),
            entry("a".into(), 1.5f64.into(), (-1).into()),
            entry("a".into(), 1.5f64.into(), Value::Nil),
            Value::Map(vec![
                ("member".into(), "a".into()),
                ("score".into(), 1.5f64.into()),
                ("rang".into(), 1.into()),
            ]),
            Value::Map(vec![
                ("member".into(), "a".into()),
                ("score".into(), 1.5f64.into()),
                ("rank".into(), 1.into()),
                ("name".into(), "A".into()),
            ]),
            Value::Map(vec![
                ("score".into(), 1.5f64.into()),
                ("member".into(), "a".into()),
                ("rank".into(), 1.into()),
            ]),
        ]);
        let values = vec![
            Value::Array(entries.clone()),
            Value::Array(vec![
                1.into(),
                2.into(),
                Value::Nil,
                Value::Array(entries.clone()),
            ]),
            Value::Map(vec![("entries".into(), Value::Array(entries))]),
        ];
        let mut stream = Vec::new();
        let mut ends = Vec::new();
        for v in &values {
            stream.extend(enc(v));
            ends.push(stream.len());
        }
        scan_in_steps(
            &stream,
            &values,
            &ends,
            &[1, 2, 5, 9, 20, 29, 64, 1000, 1 << 20],
        );
        // The size limit holds inside a run of entries too.
        let b = enc(&values[0]);
        let mut sc = Scanner::new(b.len() - 1);
        assert!(sc.scan(&b).is_err());
    }

    #[test]
    fn knows_how_much_a_long_string_needs() {
        let b = enc(&Value::Array(vec![Value::from("y".repeat(100_000))]));
        let mut sc = Scanner::new(1 << 30);
        assert_eq!(sc.scan(&b[..10]).unwrap(), None);
        assert_eq!(sc.need(), b.len());
        assert_eq!(sc.scan(&b).unwrap(), Some(b.len()));
        assert_eq!(sc.need(), 0);
    }

    #[test]
    fn refuses_what_is_too_large_or_too_deep_or_invalid() {
        // A str 32 announcing 2 GiB: refused from its header alone.
        let mut sc = Scanner::new(1 << 30);
        let e = sc.scan(&[0xdb, 0x80, 0, 0, 0]).unwrap_err();
        assert!(matches!(e, ClientError::Protocol(_)), "{e}");
        // An array 32 of 2^32-1 items, 5 bytes in all.
        let mut sc = Scanner::new(1 << 20);
        assert!(sc.scan(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        // The limit is on the whole value.
        let b = enc(&Value::Array(vec![Value::from("z".repeat(600)); 2]));
        let mut sc = Scanner::new(1000);
        assert!(sc.scan(&b).is_err());
        let mut sc = Scanner::new(b.len());
        assert_eq!(sc.scan(&b).unwrap(), Some(b.len()));
        // Nesting.
        let deep = vec![0x91u8; MAX_DEPTH + 1];
        let mut sc = Scanner::new(1 << 20);
        assert!(sc.scan(&deep).is_err());
        let mut ok = vec![0x91u8; MAX_DEPTH];
        ok.push(0xc0);
        let mut sc = Scanner::new(1 << 20);
        assert_eq!(sc.scan(&ok).unwrap(), Some(ok.len()));
        // 0xc1.
        let mut sc = Scanner::new(1 << 20);
        assert!(sc.scan(&[0x92, 0x01, 0xc1]).is_err());
    }

    #[test]
    fn envelopes() {
        let ok = enc(&Value::Array(vec![
            1.into(),
            7.into(),
            Value::Nil,
            Value::Map(vec![("rank".into(), 3.into())]),
        ]));
        match parse_incoming(Bytes::from(ok)).unwrap() {
            Incoming::Response {
                msgid: 7,
                outcome: Outcome::Ok { frame, at },
            } => {
                let v = rmpv::decode::read_value(&mut &frame[at..]).unwrap();
                assert_eq!(v["rank"], Value::from(3));
            }
            _ => panic!("not an ok response"),
        }
        let err = enc(&Value::Array(vec![
            1.into(),
            u32::MAX.into(),
            Value::Array(vec![
                "member_not_found".into(),
                "member \"zed\" not found".into(),
            ]),
            Value::Nil,
        ]));
        match parse_incoming(Bytes::from(err)).unwrap() {
            Incoming::Response {
                msgid: u32::MAX,
                outcome: Outcome::Err(e),
            } => assert_eq!(e.to_string(), "member \"zed\" not found (member_not_found)"),
            _ => panic!("not an error response"),
        }
        let note = enc(&Value::Array(vec![
            2.into(),
            "x".into(),
            Value::Array(vec![]),
        ]));
        assert!(matches!(
            parse_incoming(Bytes::from(note)).unwrap(),
            Incoming::Notification
        ));
        // An HTTP server's answer ("HTTP/1.1 400 …") is named as such.
        let http = parse_incoming(Bytes::from_static(b"H")).err().unwrap();
        assert!(http.to_string().contains("starts like HTTP"), "{http}");
        for redis in [&b"-"[..], b"+"] {
            let e = parse_incoming(Bytes::from_static(redis)).err().unwrap();
            assert!(e.to_string().contains("Redis protocol"), "{e}");
        }
        for bad in [
            Value::from(1),
            Value::Array(vec![0.into(), 1.into(), "m".into(), Value::Array(vec![])]),
            Value::Array(vec![1.into(), (-1).into(), Value::Nil, Value::Nil]),
            Value::Array(vec![1.into(), (1u64 << 32).into(), Value::Nil, Value::Nil]),
            Value::Array(vec![1.into(), 1.into(), Value::Nil]),
        ] {
            assert!(parse_incoming(Bytes::from(enc(&bad))).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    use std::time::Instant;

    #[test]
    #[ignore = "a measurement; run by hand"]
    fn scan_speed() {
        let mut body = Vec::new();
        let mut n = 0u64;
        while body.len() < 128 << 20 {
            let e = Value::Map(vec![
                ("member".into(), format!("m{n}").into()),
                ("score".into(), (n as f64).into()),
                ("rank".into(), (n + 1).into()),
            ]);
            rmpv::encode::write_value(&mut body, &e).unwrap();
            n += 1;
        }
        let mut b = Vec::new();
        rmp::encode::write_array_len(&mut b, n as u32).unwrap();
        b.extend_from_slice(&body);
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut sc = Scanner::new(1 << 30);
            let mut fed = 0;
            let mut done = None;
            while done.is_none() {
                fed = (fed + (64 << 10)).min(b.len());
                done = sc.scan(&b[..fed]).unwrap();
            }
            assert_eq!(done, Some(b.len()));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("scan, best of 5: {:.0} MB/s", b.len() as f64 / best / 1e6);
        let t = Instant::now();
        let v: Vec<Option<crate::Entry>> = rmp_serde::from_slice(&b).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "rmp_serde into entries: {:.0} MB/s ({} entries)",
            b.len() as f64 / s / 1e6,
            v.len()
        );
        drop(v);
        let mut frame = vec![0x94, 1, 0, 0xc0];
        frame.extend_from_slice(&b);
        let raw = crate::RawResponse {
            frame: Bytes::from(frame),
            at: 4,
        };
        let t = Instant::now();
        let v = crate::decode_export(&raw).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "decode_export: {:.0} MB/s ({} entries)",
            b.len() as f64 / s / 1e6,
            v.len()
        );
        let t = Instant::now();
        let v = rmpv::decode::read_value(&mut b.as_slice()).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!("rmpv::Value: {:.0} MB/s", b.len() as f64 / s / 1e6);
        drop(v);
        let t = Instant::now();
        let mut dst = vec![0u8; b.len()];
        dst.copy_from_slice(&b);
        let s = t.elapsed().as_secs_f64();
        println!(
            "memcpy into fresh memory: {:.0} MB/s",
            b.len() as f64 / s / 1e6
        );
        let t = Instant::now();
        dst.copy_from_slice(&b);
        let s = t.elapsed().as_secs_f64();
        println!("memcpy again: {:.0} MB/s", b.len() as f64 / s / 1e6);
    }
}
