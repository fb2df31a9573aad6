//! The common shape of a bulk write, read straight from the frame's bytes.
//!
//! A `submit_many` or `import` request is almost always `[0, msgid,
//! "submit_many", [board, [{member, score[, name]}, …]]]`. Decoding it the general
//! way builds an `rmpv::Value` tree (a map, two keys and two values per
//! entry), re-encodes each entry and runs serde on it: at a million entries
//! a second that was most of the server's time. This reads exactly that
//! shape in one pass and yields the same [`SubmitIn`]s; anything else
//! (another key, a string score, NaN, a bad board name, a notification,
//! a binary member…) is left to the general path, which gives every error
//! its usual code and text. So this decides nothing: it only gets to the
//! same call sooner.

use podium_engine::{Cond, Presence};
use rmp::Marker;

use podium_core::entry::{MemberBytes, SubmitRec};

/// What [`bulk_write`] read, borrowed from the frame.
pub struct BulkWrite<'a> {
    pub msgid: u32,
    pub import: bool,
    pub board: &'a str,
    /// For `import`: every entry parsed (the fast path takes no failing one).
    pub entries: Vec<Plain<'a>>,
}

/// One `{member, score[, name]}` entry.
pub struct Plain<'a> {
    pub member: &'a str,
    pub score: f64,
    pub name: Option<&'a str>,
}

impl Plain<'_> {
    /// The checked submission every engine applies for it: what
    /// [`SubmitRec::from_entry`] makes of the parsed entry, without the
    /// `String`.
    pub fn rec(&self) -> SubmitRec {
        SubmitRec {
            scores: None,
            member: MemberBytes::from_slice(self.member.as_bytes()),
            score: self.score,
            op: None,
            presence: Presence::Any,
            cond: Cond::Always,
            name: self.name.map(str::to_owned),
            data: None,
        }
    }
}

struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Rd<'a> {
    fn byte(&mut self) -> Option<u8> {
        let x = *self.b.get(self.at)?;
        self.at += 1;
        Some(x)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn be(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
        )
    }

    /// A `str` (not `bin`: the general path decides what binary means).
    fn str(&mut self) -> Option<&'a [u8]> {
        let n = match Marker::from_u8(self.byte()?) {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 => self.be(1)? as usize,
            Marker::Str16 => self.be(2)? as usize,
            Marker::Str32 => self.be(4)? as usize,
            _ => return None,
        };
        self.take(n)
    }

    fn array_len(&mut self) -> Option<usize> {
        match Marker::from_u8(self.byte()?) {
            Marker::FixArray(n) => Some(usize::from(n)),
            Marker::Array16 => Some(self.be(2)? as usize),
            Marker::Array32 => Some(self.be(4)? as usize),
            _ => None,
        }
    }

    fn map_len(&mut self) -> Option<usize> {
        match Marker::from_u8(self.byte()?) {
            Marker::FixMap(n) => Some(usize::from(n)),
            Marker::Map16 => Some(self.be(2)? as usize),
            Marker::Map32 => Some(self.be(4)? as usize),
            _ => None,
        }
    }

    fn uint(&mut self) -> Option<u64> {
        match Marker::from_u8(self.byte()?) {
            Marker::FixPos(n) => Some(u64::from(n)),
            Marker::U8 => self.be(1),
            Marker::U16 => self.be(2),
            Marker::U32 => self.be(4),
            Marker::U64 => self.be(8),
            _ => None,
        }
    }

    /// A score as the general path reads one from a number: any float
    /// (not NaN) or integer.
    fn score(&mut self) -> Option<f64> {
        let v = match Marker::from_u8(self.byte()?) {
            Marker::F64 => f64::from_bits(self.be(8)?),
            Marker::F32 => f64::from(f32::from_bits(self.be(4)? as u32)),
            Marker::FixPos(n) => f64::from(n),
            Marker::FixNeg(n) => f64::from(n),
            Marker::U8 => self.be(1)? as f64,
            Marker::U16 => self.be(2)? as f64,
            Marker::U32 => self.be(4)? as f64,
            Marker::U64 => self.be(8)? as f64,
            Marker::I8 => self.be(1)? as u8 as i8 as f64,
            Marker::I16 => self.be(2)? as u16 as i16 as f64,
            Marker::I32 => self.be(4)? as u32 as i32 as f64,
            Marker::I64 => self.be(8)? as i64 as f64,
            _ => return None,
        };
        (!v.is_nan()).then_some(v)
    }
}

/// Reads a `submit_many` or `import` request of plain `{member, score[, name]}`
/// entries (`import`'s may carry `rank`, which it ignores); `None` for any
/// other message, left to the general path.
pub fn bulk_write(frame: &[u8]) -> Option<BulkWrite<'_>> {
    let mut r = Rd { b: frame, at: 0 };
    if r.byte()? != 0x94 || r.byte()? != 0x00 {
        return None;
    }
    let msgid = u32::try_from(r.uint()?).ok()?;
    let import = match r.str()? {
        b"submit_many" => false,
        b"import" => true,
        _ => return None,
    };
    // `import` takes an optional options map, which the general path checks.
    if r.array_len()? != 2 {
        return None;
    }
    let board = std::str::from_utf8(r.str()?).ok()?;
    if podium_engine::Store::validate_user_name(board).is_err() {
        return None;
    }
    let n = r.array_len()?;
    // Each entry takes 15 bytes at least: the count cannot reserve more
    // than the frame could hold.
    let mut entries = Vec::with_capacity(n.min(frame.len() / 15));
    for _ in 0..n {
        let fields = r.map_len()?;
        let (mut member, mut score, mut name, mut rank) = (None, None, None, false);
        for _ in 0..fields {
            match r.str()? {
                b"member" if member.is_none() => {
                    member = Some(std::str::from_utf8(r.str()?).ok()?);
                }
                b"score" if score.is_none() => score = Some(r.score()?),
                // A display name (a named import); its length is the
                // engine's to check, on either path.
                b"name" if name.is_none() => {
                    name = Some(std::str::from_utf8(r.str()?).ok()?);
                }
                // `import` ignores an export line's rank, whatever its type
                // (the general path checks nothing else of it); an unsigned
                // integer is what `export` writes.
                b"rank" if import && !rank => {
                    r.uint()?;
                    rank = true;
                }
                _ => return None,
            }
        }
        entries.push(Plain {
            member: member?,
            score: score?,
            name,
        });
    }
    (r.at == frame.len()).then_some(BulkWrite {
        msgid,
        import,
        board,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::codec::{decode_frame, envelope, Message};
    use crate::rpc::method::{parse, Call, Method};
    use podium_core::api::SubmitIn;
    use rmpv::Value;

    fn enc(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    fn request(id: u32, method: &str, params: Vec<Value>) -> Vec<u8> {
        enc(&Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            Value::Array(params),
        ]))
    }

    fn entry(kv: &[(&str, Value)]) -> Value {
        Value::Map(
            kv.iter()
                .map(|(k, v)| (Value::from(*k), v.clone()))
                .collect(),
        )
    }

    /// What the general path makes of the same frame.
    fn general(frame: &[u8]) -> (u32, Result<Call, podium_core::error::ApiError>) {
        let Ok(Message::Request {
            msgid,
            method,
            params,
        }) = envelope(decode_frame(frame).unwrap())
        else {
            panic!("not a request")
        };
        (msgid, parse(Method::from_name(&method).unwrap(), params))
    }

    /// Either the fast path declines, or it reads exactly what the general
    /// path reads.
    fn agrees(frame: &[u8]) -> bool {
        let Some(f) = bulk_write(frame) else {
            return false;
        };
        let (id, call) = general(frame);
        assert_eq!(id, f.msgid);
        let fast: Vec<SubmitIn> = f.entries.iter().map(|p| p.rec().to_entry()).collect();
        let entries = match call.expect("the general path accepts what the fast path took") {
            Call::SubmitMany(podium_core::ops::SubmitMany { board, entries }) => {
                assert!(!f.import);
                assert_eq!(board, f.board);
                entries
            }
            Call::Import { board, entries } => {
                assert!(f.import);
                assert_eq!(board, f.board);
                entries.into_iter().map(|e| e.unwrap()).collect()
            }
            other => panic!("unexpected call {other:?}"),
        };
        assert_eq!(entries, fast);
        // The records are what every other path makes of the entries.
        let recs: Vec<SubmitRec> = f.entries.iter().map(Plain::rec).collect();
        let made: Vec<SubmitRec> = entries
            .into_iter()
            .map(|e| SubmitRec::from_entry(e).unwrap())
            .collect();
        assert_eq!(recs, made);
        true
    }

    #[test]
    fn plain_entries_read_as_the_general_path_reads_them() {
        let scores = [
            Value::F64(2.5),
            Value::F32(-1.25),
            Value::F64(f64::INFINITY),
            Value::F64(f64::NEG_INFINITY),
            Value::from(0),
            Value::from(-5),
            Value::from(-200),
            Value::from(-70000),
            Value::from(i64::MIN),
            Value::from(255),
            Value::from(70000),
            Value::from(u64::MAX),
        ];
        let entries: Vec<Value> = scores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let m = Value::from("m".repeat(i * 20 + 1).as_str());
                if i % 2 == 0 {
                    entry(&[("member", m), ("score", s.clone())])
                } else {
                    entry(&[("score", s.clone()), ("member", m)])
                }
            })
            .collect();
        for id in [0u32, 7, 300, 70000, u32::MAX] {
            let f = request(
                id,
                "submit_many",
                vec!["lb".into(), Value::Array(entries.clone())],
            );
            assert!(agrees(&f));
        }
        // A long board name and many entries (array 16 and str 8 headers).
        let many: Vec<Value> = (0..1000)
            .map(|i| entry(&[("member", format!("é{i}").into()), ("score", i.into())]))
            .collect();
        let board = "b".repeat(200);
        let f = request(
            1,
            "submit_many",
            vec![board.as_str().into(), Value::Array(many.clone())],
        );
        assert!(agrees(&f));
        assert!(agrees(&request(
            1,
            "submit_many",
            vec!["lb".into(), Value::Array(vec![])]
        )));
        // Named entries (a named import), the name anywhere in the map.
        let named: Vec<Value> = (0..40)
            .map(|i| {
                let n = Value::from(format!("José Ñandú {i}").as_str());
                if i % 2 == 0 {
                    entry(&[
                        ("name", n),
                        ("member", format!("m{i}").into()),
                        ("score", i.into()),
                    ])
                } else {
                    entry(&[
                        ("member", format!("m{i}").into()),
                        ("score", i.into()),
                        ("name", n),
                    ])
                }
            })
            .collect();
        assert!(agrees(&request(
            3,
            "submit_many",
            vec!["lb".into(), Value::Array(named.clone())]
        )));
        assert!(agrees(&request(
            3,
            "import",
            vec!["lb".into(), Value::Array(named)]
        )));
        // import, with and without export's ranks.
        let ranked: Vec<Value> = (0..50)
            .map(|i| {
                entry(&[
                    ("member", format!("m{i}").into()),
                    ("score", Value::F64(i as f64)),
                    ("rank", (i + 1).into()),
                ])
            })
            .collect();
        assert!(agrees(&request(
            2,
            "import",
            vec!["lb".into(), Value::Array(ranked)]
        )));
        assert!(agrees(&request(
            2,
            "import",
            vec!["lb".into(), Value::Array(many)]
        )));
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        let ok = || entry(&[("member", "a".into()), ("score", 1.into())]);
        let batch = |e: Value| Value::Array(vec![ok(), e]);
        let declined = [
            // Other keys, repeated keys, a missing key, other value types.
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("op", "incr".into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("member", "c".into()),
                        ("score", 1.into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("score", 2.into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec!["lb".into(), batch(entry(&[("member", "b".into())]))],
            ),
            // A repeated or nil name, a name that is not a str.
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("name", "x".into()),
                        ("name", "y".into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("name", Value::Nil),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("name", 5.into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[("member", "b".into()), ("score", "inf".into())])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", Value::F64(f64::NAN)),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", Value::Binary(b"b".to_vec())),
                        ("score", 1.into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[("member", 5.into()), ("score", 1.into())])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec![
                    "lb".into(),
                    batch(entry(&[
                        ("member", "b".into()),
                        ("score", 1.into()),
                        ("rank", 1.into()),
                    ])),
                ],
            ),
            request(
                1,
                "submit_many",
                vec!["lb".into(), batch(Value::Array(vec![]))],
            ),
            // Bad board names, arity, other methods.
            request(1, "submit_many", vec!["".into(), batch(ok())]),
            request(1, "submit_many", vec!["a\u{1}".into(), batch(ok())]),
            request(1, "submit_many", vec!["lb".into()]),
            request(1, "submit_many", vec!["lb".into(), batch(ok()), Value::Nil]),
            request(
                1,
                "import",
                vec!["lb".into(), batch(ok()), Value::Map(vec![])],
            ),
            request(1, "submit", vec!["lb".into(), ok()]),
        ];
        for f in &declined {
            assert!(!agrees(f), "{:?}", decode_frame(f));
        }
        // A notification, invalid UTF-8, trailing bytes.
        let mut n = enc(&Value::Array(vec![
            2.into(),
            "submit_many".into(),
            Value::Array(vec!["lb".into(), batch(ok())]),
        ]));
        assert!(bulk_write(&n).is_none());
        n = request(
            1,
            "submit_many",
            vec!["lb".into(), Value::Array(vec![ok()])],
        );
        let at = n.windows(2).position(|w| w == [0xa1, b'a']).unwrap();
        n[at + 1] = 0xff;
        assert!(bulk_write(&n).is_none());
        let mut t = request(
            1,
            "submit_many",
            vec!["lb".into(), Value::Array(vec![ok()])],
        );
        t.push(0xc0);
        assert!(bulk_write(&t).is_none());
        // Every truncation of a good frame.
        let g = request(
            9,
            "submit_many",
            vec!["lb".into(), Value::Array(vec![ok(), ok()])],
        );
        assert!(agrees(&g));
        for k in 0..g.len() {
            assert!(bulk_write(&g[..k]).is_none());
        }
    }
}
