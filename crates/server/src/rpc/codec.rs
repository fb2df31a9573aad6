//! MessagePack-RPC framing: the bytes a client sends, split into messages
//! under hard limits, their envelopes checked, and the response envelopes
//! written back.
//!
//! MessagePack has no length prefix: a message ends where its outermost
//! value ends. [`Decoder`] finds that end by walking the value headers of
//! the buffered bytes, incrementally (a 64 MiB frame arriving in 64 KiB
//! reads is walked once, not a thousand times), without allocating from
//! any declared length. Only a frame it has seen whole, with every declared
//! length checked against the bytes present and against [`MAX_FRAME_BYTES`],
//! [`MAX_DEPTH`] and [`MAX_VALUES`], is handed to `rmpv` to decode. So a
//! `str 32` header announcing 2 GiB is refused as soon as it is read, an
//! `array 32` of 2^32-1 items is refused because the frame could never hold
//! them, and rmpv's own recursion never goes deeper than [`MAX_DEPTH`].

use bytes::{Bytes, BytesMut};
use rmp::Marker;
use rmpv::Value;

use podium_core::error::{ApiError, Code};

/// Largest request message (a `submit_many` or `import` batch).
pub const MAX_FRAME_BYTES: usize = 64 << 20;
/// Largest message before `auth` when the server has API keys, so a
/// client without a key cannot make the server buffer much.
pub const UNAUTH_MAX_FRAME_BYTES: usize = 64 << 10;
/// Deepest nesting of arrays and maps in one message: the envelope, the
/// params, an entry map and a `data` object leave room for 28 levels of
/// nesting inside `data`.
pub const MAX_DEPTH: usize = 32;
/// Most values (scalars and containers, map keys included) in one message.
/// A decoded value takes tens of bytes whatever its size on the wire, so
/// this bounds the memory a frame of one-byte values can cost. It admits
/// about 1.6 million `{member, score}` entries in a batch.
pub const MAX_VALUES: u64 = 8 << 20;

/// A message the decoder refuses. The connection answers it (when the
/// message id can be read from the frame's first bytes) and closes: the
/// end of the refused frame cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    TooLarge {
        limit: usize,
    },
    TooDeep,
    TooManyValues,
    /// Byte 0xc1, which MessagePack never uses.
    BadMarker {
        offset: usize,
    },
}

impl FrameError {
    pub fn to_api(&self) -> ApiError {
        match self {
            FrameError::TooLarge { limit } => ApiError::new(
                Code::PayloadTooLarge,
                format!("message is larger than {limit} bytes"),
            ),
            FrameError::TooDeep => ApiError::new(
                Code::MalformedRequest,
                format!("message is nested deeper than {MAX_DEPTH} levels"),
            ),
            FrameError::TooManyValues => ApiError::new(
                Code::PayloadTooLarge,
                format!("message holds more than {MAX_VALUES} values"),
            ),
            FrameError::BadMarker { offset } => ApiError::new(
                Code::MalformedRequest,
                format!("invalid MessagePack: byte 0xc1 at offset {offset}"),
            ),
        }
    }
}

/// Splits complete messages off the front of a read buffer, keeping the
/// walk's progress through a partly received message between calls.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Bytes of the pending frame walked so far (always at a value start).
    walked: usize,
    /// Items still expected by each open array or map, outermost first.
    open: Vec<u64>,
    /// Sum of `open`: each pending item needs at least one more byte.
    pending: u64,
    /// Values seen in the pending frame.
    values: u64,
}

/// How a value starts: header bytes, payload bytes after the header, and
/// child values (arrays: n, maps: 2n).
fn shape(buf: &[u8], at: usize) -> Result<Option<(usize, u64, u64)>, FrameError> {
    let len_at = |n: usize| -> Option<u64> {
        let b = buf.get(at + 1..at + 1 + n)?;
        Some(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let m = Marker::from_u8(buf[at]);
    // (header, payload, children); None when the length bytes are missing.
    let s = match m {
        Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {
            Some((1, 0, 0))
        }
        Marker::Reserved => return Err(FrameError::BadMarker { offset: at }),
        Marker::U8 | Marker::I8 => Some((1, 1, 0)),
        Marker::U16 | Marker::I16 => Some((1, 2, 0)),
        Marker::U32 | Marker::I32 | Marker::F32 => Some((1, 4, 0)),
        Marker::U64 | Marker::I64 | Marker::F64 => Some((1, 8, 0)),
        Marker::FixStr(n) => Some((1, u64::from(n), 0)),
        Marker::Str8 | Marker::Bin8 => len_at(1).map(|n| (2, n, 0)),
        Marker::Str16 | Marker::Bin16 => len_at(2).map(|n| (3, n, 0)),
        Marker::Str32 | Marker::Bin32 => len_at(4).map(|n| (5, n, 0)),
        Marker::FixArray(n) => Some((1, 0, u64::from(n))),
        Marker::Array16 => len_at(2).map(|n| (3, 0, n)),
        Marker::Array32 => len_at(4).map(|n| (5, 0, n)),
        Marker::FixMap(n) => Some((1, 0, 2 * u64::from(n))),
        Marker::Map16 => len_at(2).map(|n| (3, 0, 2 * n)),
        Marker::Map32 => len_at(4).map(|n| (5, 0, 2 * n)),
        // Ext: the type byte counts as header.
        Marker::FixExt1 => Some((2, 1, 0)),
        Marker::FixExt2 => Some((2, 2, 0)),
        Marker::FixExt4 => Some((2, 4, 0)),
        Marker::FixExt8 => Some((2, 8, 0)),
        Marker::FixExt16 => Some((2, 16, 0)),
        Marker::Ext8 => len_at(1).map(|n| (3, n, 0)),
        Marker::Ext16 => len_at(2).map(|n| (4, n, 0)),
        Marker::Ext32 => len_at(4).map(|n| (6, n, 0)),
    };
    Ok(s)
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the pending (incomplete) frame already buffered and walked.
    pub fn pending_bytes(&self) -> usize {
        self.walked
    }

    /// The next complete frame, if one is buffered; `max` is the largest
    /// frame allowed now. After an error the decoder and the buffer are in
    /// no state to go on: the connection closes.
    pub fn decode(&mut self, buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, FrameError> {
        loop {
            let at = self.walked;
            if at >= buf.len() {
                return Ok(None);
            }
            let Some((header, payload, children)) = shape(buf, at)? else {
                return Ok(None);
            };
            // Checked before waiting for the bytes: a declared length that
            // cannot fit is refused now, not after buffering up to it.
            let end = (at as u64)
                .saturating_add(header as u64)
                .saturating_add(payload);
            // Items still to come after this value: each takes a byte at
            // least (this value fills one of the pending slots).
            let after = self.pending - u64::from(!self.open.is_empty()) + children;
            if end.saturating_add(after) > max as u64 {
                return Err(FrameError::TooLarge { limit: max });
            }
            let values = self.values + 1;
            if values.saturating_add(after) > MAX_VALUES {
                return Err(FrameError::TooManyValues);
            }
            if end > buf.len() as u64 {
                return Ok(None);
            }
            self.walked = end as usize;
            self.values = values;
            if children > 0 {
                if self.open.len() >= MAX_DEPTH {
                    return Err(FrameError::TooDeep);
                }
                self.open.push(children);
                self.pending += children;
                continue;
            }
            // A complete value: it fills one slot of its container, which
            // may complete that container, and so on outwards.
            loop {
                match self.open.last_mut() {
                    None => {
                        let frame = buf.split_to(self.walked).freeze();
                        *self = Decoder {
                            open: std::mem::take(&mut self.open),
                            ..Decoder::default()
                        };
                        return Ok(Some(frame));
                    }
                    Some(left) => {
                        *left -= 1;
                        self.pending -= 1;
                        if *left > 0 {
                            break;
                        }
                        self.open.pop();
                    }
                }
            }
        }
    }
}

/// Decodes a frame the [`Decoder`] accepted. Its lengths and depth are
/// already checked, so this cannot over-allocate or recurse too deep; an
/// error here means a bug, reported as a malformed message.
pub fn decode_frame(frame: &[u8]) -> Result<Value, ApiError> {
    let mut rd = frame;
    // rmpv counts a string's body as a level of its own: twice the depth
    // plus slack never trips on a frame the walk accepted.
    let v = rmpv::decode::read_value_with_max_depth(&mut rd, 2 * MAX_DEPTH + 4)
        .map_err(|e| ApiError::new(Code::MalformedRequest, format!("invalid MessagePack: {e}")))?;
    if !rd.is_empty() {
        return Err(ApiError::new(
            Code::MalformedRequest,
            "invalid MessagePack: trailing bytes in a message",
        ));
    }
    Ok(v)
}

/// A message from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `[0, msgid, method, params]`: answered by `[1, msgid, error, result]`.
    Request {
        msgid: u32,
        method: String,
        params: Vec<Value>,
    },
    /// `[2, method, params]`: never answered.
    Notification { method: String, params: Vec<Value> },
}

/// A message that is not a request or notification.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeError {
    /// A request whose id could be read: answered with this error, and the
    /// connection goes on.
    Answer(u32, ApiError),
    /// No id to answer to: the connection closes.
    Close(String),
}

fn msgid_of(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// Checks the envelope of a decoded message.
pub fn envelope(v: Value) -> Result<Message, EnvelopeError> {
    let Value::Array(items) = v else {
        return Err(EnvelopeError::Close(
            "a message must be an array: [0, msgid, method, params] or [2, method, params]".into(),
        ));
    };
    let kind = items.first().and_then(Value::as_u64);
    match kind {
        Some(0) => {
            let Some(msgid) = items.get(1).and_then(msgid_of) else {
                return Err(EnvelopeError::Close(
                    "a request's msgid must be an unsigned 32-bit integer".into(),
                ));
            };
            let bad =
                |m: &str| EnvelopeError::Answer(msgid, ApiError::new(Code::MalformedRequest, m));
            if items.len() != 4 {
                return Err(bad(&format!(
                    "a request is [0, msgid, method, params]: 4 items, got {}",
                    items.len()
                )));
            }
            let mut it = items.into_iter().skip(2);
            let method = method_name(it.next()).map_err(|m| bad(&m))?;
            let params = params_of(it.next()).map_err(|m| bad(&m))?;
            Ok(Message::Request {
                msgid,
                method,
                params,
            })
        }
        Some(2) => {
            if items.len() != 3 {
                return Err(EnvelopeError::Close(format!(
                    "a notification is [2, method, params]: 3 items, got {}",
                    items.len()
                )));
            }
            let mut it = items.into_iter().skip(1);
            let method = method_name(it.next()).map_err(EnvelopeError::Close)?;
            let params = params_of(it.next()).map_err(EnvelopeError::Close)?;
            Ok(Message::Notification { method, params })
        }
        _ => Err(EnvelopeError::Close(
            "a message must start with 0 (request) or 2 (notification)".into(),
        )),
    }
}

fn method_name(v: Option<Value>) -> Result<String, String> {
    match v {
        Some(Value::String(s)) => s
            .into_str()
            .ok_or_else(|| "the method name is not valid UTF-8".to_string()),
        // Some clients send names as binary.
        Some(Value::Binary(b)) => {
            String::from_utf8(b).map_err(|_| "the method name is not valid UTF-8".to_string())
        }
        _ => Err("the method name must be a string".into()),
    }
}

fn params_of(v: Option<Value>) -> Result<Vec<Value>, String> {
    match v {
        Some(Value::Array(p)) => Ok(p),
        _ => Err("params must be an array".into()),
    }
}

/// The msgid of a request whose frame was refused, read from its first
/// bytes (the frame itself may be incomplete or hostile).
pub fn peek_msgid(buf: &[u8]) -> Option<u32> {
    let mut rd = buf;
    if rmp::decode::read_array_len(&mut rd).ok()? != 4 {
        return None;
    }
    if rmp::decode::read_int::<u8, _>(&mut rd).ok()? != 0 {
        return None;
    }
    rmp::decode::read_int::<u32, _>(&mut rd).ok()
}

/// `[1, msgid, nil, ` — a success response up to its result, which the
/// caller appends (already encoded, possibly in pieces).
pub fn ok_head(msgid: u32, out: &mut Vec<u8>) {
    // Writes into a Vec cannot fail.
    let _ = rmp::encode::write_array_len(out, 4);
    let _ = rmp::encode::write_uint(out, 1);
    let _ = rmp::encode::write_uint(out, u64::from(msgid));
    let _ = rmp::encode::write_nil(out);
}

/// A complete success response around an encoded result.
pub fn ok_response(msgid: u32, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + 8);
    ok_head(msgid, &mut out);
    out.extend_from_slice(result);
    out
}

/// `[1, msgid, [code, message], nil]`.
pub fn error_response(msgid: u32, e: &ApiError) -> Vec<u8> {
    let mut out = Vec::with_capacity(e.message.len() + 32);
    let _ = rmp::encode::write_array_len(&mut out, 4);
    let _ = rmp::encode::write_uint(&mut out, 1);
    let _ = rmp::encode::write_uint(&mut out, u64::from(msgid));
    let _ = rmp::encode::write_array_len(&mut out, 2);
    let _ = rmp::encode::write_str(&mut out, e.code.as_str());
    let _ = rmp::encode::write_str(&mut out, &e.message);
    let _ = rmp::encode::write_nil(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    fn request(msgid: u32, method: &str, params: Vec<Value>) -> Value {
        Value::Array(vec![
            0.into(),
            msgid.into(),
            method.into(),
            Value::Array(params),
        ])
    }

    /// Feeds `bytes` in pieces of `chunk`, collecting frames and the error.
    fn split(bytes: &[u8], chunk: usize, max: usize) -> (Vec<Bytes>, Option<FrameError>, usize) {
        let mut d = Decoder::new();
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for piece in bytes.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match d.decode(&mut buf, max) {
                    Ok(Some(f)) => frames.push(f),
                    Ok(None) => break,
                    Err(e) => return (frames, Some(e), buf.len()),
                }
            }
        }
        (frames, None, buf.len())
    }

    #[test]
    fn frames_split_at_value_ends_whatever_the_chunking() {
        let a = enc(&request(
            7,
            "submit",
            vec![
                "lb".into(),
                Value::Map(vec![
                    ("member".into(), "ann".into()),
                    ("score".into(), 1.5.into()),
                    (
                        "data".into(),
                        Value::Map(vec![("x".into(), Value::Binary(vec![1, 2]))]),
                    ),
                ]),
            ],
        ));
        let b = enc(&Value::Array(vec![
            2.into(),
            "hello".into(),
            Value::Array(vec![]),
        ]));
        let c = enc(&request(
            u32::MAX,
            "top",
            vec!["x".repeat(70_000).into(), Value::Ext(3, vec![9; 300])],
        ));
        let all = [a.clone(), b.clone(), c.clone()].concat();
        for chunk in [1, 2, 3, 7, 64, 100_000] {
            let (frames, err, left) = split(&all, chunk, MAX_FRAME_BYTES);
            assert_eq!(err, None, "chunk {chunk}");
            assert_eq!(left, 0);
            assert_eq!(
                frames,
                vec![
                    Bytes::from(a.clone()),
                    Bytes::from(b.clone()),
                    Bytes::from(c.clone())
                ]
            );
        }
        let v = decode_frame(&c).unwrap();
        match envelope(v).unwrap() {
            Message::Request {
                msgid,
                method,
                params,
            } => {
                assert_eq!((msgid, method.as_str(), params.len()), (u32::MAX, "top", 2));
            }
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn truncated_frames_wait_and_never_complete() {
        let a = enc(&request(1, "rank", vec!["lb".into(), "ann".into()]));
        for cut in 0..a.len() {
            let (frames, err, left) = split(&a[..cut], 1, MAX_FRAME_BYTES);
            assert!(frames.is_empty() && err.is_none(), "cut {cut}");
            assert_eq!(left, cut);
        }
    }

    #[test]
    fn a_huge_declared_string_is_refused_before_buffering() {
        // [0, 1, "top", [str32 of 2^31 bytes ...
        let mut f = vec![0x94, 0x00, 0x01, 0xa3, b't', b'o', b'p', 0x91, 0xdb];
        f.extend_from_slice(&(1u32 << 31).to_be_bytes());
        f.extend_from_slice(b"abc");
        let (frames, err, _) = split(&f, 1, MAX_FRAME_BYTES);
        assert!(frames.is_empty());
        assert_eq!(
            err,
            Some(FrameError::TooLarge {
                limit: MAX_FRAME_BYTES
            })
        );
        assert_eq!(peek_msgid(&f), Some(1));
        // Same for bin and ext.
        for marker in [0xc6u8, 0xc9] {
            let mut g = vec![0x94, 0x00, 0x05, 0xa1, b'x', 0x91, marker];
            g.extend_from_slice(&u32::MAX.to_be_bytes());
            let (_, err, _) = split(&g, 3, MAX_FRAME_BYTES);
            assert_eq!(
                err,
                Some(FrameError::TooLarge {
                    limit: MAX_FRAME_BYTES
                }),
                "{marker:x}"
            );
        }
    }

    #[test]
    fn a_huge_declared_array_or_map_is_refused_at_once() {
        let mut f = vec![0x94, 0x00, 0x02, 0xa1, b'x', 0xdd];
        f.extend_from_slice(&u32::MAX.to_be_bytes());
        f.extend_from_slice(&[0xc0; 10]);
        let (_, err, _) = split(&f, 1, MAX_FRAME_BYTES);
        assert_eq!(
            err,
            Some(FrameError::TooLarge {
                limit: MAX_FRAME_BYTES
            })
        );
        let mut m = vec![0xdf];
        m.extend_from_slice(&u32::MAX.to_be_bytes());
        let (_, err, _) = split(&m, 1, usize::MAX);
        assert_eq!(err, Some(FrameError::TooManyValues));
        // Within the byte limit, but too many one-byte values.
        let mut n = vec![0xdd];
        n.extend_from_slice(&((MAX_VALUES as u32) + 1).to_be_bytes());
        let (_, err, _) = split(&n, 1, MAX_FRAME_BYTES);
        assert_eq!(err, Some(FrameError::TooManyValues));
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let mut f = vec![0x94, 0x00, 0x09, 0xa1, b'x'];
        f.extend(std::iter::repeat_n(0x91, 10_000));
        f.push(0xc0);
        let (_, err, _) = split(&f, 4096, MAX_FRAME_BYTES);
        assert_eq!(err, Some(FrameError::TooDeep));
        assert_eq!(peek_msgid(&f), Some(9));
        // Exactly the limit is fine, and rmpv decodes it.
        let mut ok = vec![0x91; MAX_DEPTH];
        ok.push(0xa2);
        ok.extend_from_slice(b"hi");
        let (frames, err, _) = split(&ok, 5, MAX_FRAME_BYTES);
        assert_eq!(err, None);
        assert_eq!(frames.len(), 1);
        decode_frame(&frames[0]).unwrap();
        let mut deep_maps = [0x81, 0xa1, b'k'].repeat(MAX_DEPTH + 1);
        deep_maps.push(0x01);
        let (_, err, _) = split(&deep_maps, 100, MAX_FRAME_BYTES);
        assert_eq!(err, Some(FrameError::TooDeep));
    }

    #[test]
    fn frame_limit_and_reserved_byte() {
        let big = enc(&request(3, "submit_many", vec!["y".repeat(100_000).into()]));
        let (_, err, _) = split(&big, 1000, UNAUTH_MAX_FRAME_BYTES);
        assert_eq!(
            err,
            Some(FrameError::TooLarge {
                limit: UNAUTH_MAX_FRAME_BYTES
            })
        );
        let (frames, err, _) = split(&big, 1000, MAX_FRAME_BYTES);
        assert_eq!((frames.len(), err), (1, None));
        let (_, err, _) = split(&[0x92, 0x01, 0xc1], 1, MAX_FRAME_BYTES);
        assert_eq!(err, Some(FrameError::BadMarker { offset: 2 }));
        let e = FrameError::TooLarge { limit: 10 }.to_api();
        assert_eq!(e.code, Code::PayloadTooLarge);
    }

    #[test]
    fn envelopes() {
        let m = |v: Value| envelope(v);
        assert!(matches!(
            m(Value::Array(vec![2.into(), "hi".into(), Value::Array(vec![1.into()])])),
            Ok(Message::Notification { ref method, ref params }) if method == "hi" && params.len() == 1
        ));
        assert!(matches!(
            m(request(0, "x", vec![])),
            Ok(Message::Request { msgid: 0, .. })
        ));
        // Recoverable id: answered.
        let e = m(Value::Array(vec![0.into(), 5.into(), "rank".into()])).unwrap_err();
        assert!(
            matches!(e, EnvelopeError::Answer(5, ref a) if a.code == Code::MalformedRequest),
            "{e:?}"
        );
        let e = m(Value::Array(vec![
            0.into(),
            6.into(),
            7.into(),
            Value::Array(vec![]),
        ]))
        .unwrap_err();
        assert!(matches!(e, EnvelopeError::Answer(6, _)), "{e:?}");
        let e = m(Value::Array(vec![
            0.into(),
            7.into(),
            "x".into(),
            "p".into(),
        ]))
        .unwrap_err();
        assert!(matches!(e, EnvelopeError::Answer(7, _)), "{e:?}");
        // No id: close.
        for v in [
            Value::from(5),
            Value::Array(vec![]),
            Value::Array(vec![
                0.into(),
                (-1).into(),
                "x".into(),
                Value::Array(vec![]),
            ]),
            Value::Array(vec![
                0.into(),
                (1u64 << 32).into(),
                "x".into(),
                Value::Array(vec![]),
            ]),
            Value::Array(vec![1.into(), 1.into(), Value::Nil, Value::Nil]),
            Value::Array(vec![2.into(), "x".into()]),
            Value::Array(vec![3.into(), 1.into(), "x".into(), Value::Array(vec![])]),
        ] {
            assert!(matches!(m(v.clone()), Err(EnvelopeError::Close(_))), "{v}");
        }
    }

    #[test]
    fn response_envelopes() {
        let ok = ok_response(u32::MAX, &enc(&Value::from("r")));
        let v = decode_frame(&ok).unwrap();
        assert_eq!(
            v,
            Value::Array(vec![1.into(), u32::MAX.into(), Value::Nil, "r".into()])
        );
        let err = error_response(0, &ApiError::new(Code::NotFound, "unknown method \"x\""));
        let v = decode_frame(&err).unwrap();
        assert_eq!(
            v,
            Value::Array(vec![
                1.into(),
                0.into(),
                Value::Array(vec!["not_found".into(), "unknown method \"x\"".into()]),
                Value::Nil
            ])
        );
    }
}
