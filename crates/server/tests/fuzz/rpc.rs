//! MessagePack-RPC frames: the framing walk (`rpc::codec::Decoder`), the
//! value decoder behind it, the envelope, the method parameters, and the
//! bulk-write fast path (`rpc::fast::bulk_write`).

use bytes::BytesMut;
use proptest::prelude::*;
use rmpv::Value;

use crate::bounded;
use crate::damage::{config, corpus, damage, damaged, pieces};
use podium_server::rpc::codec::{
    decode_frame, envelope, peek_msgid, Decoder, FrameError, Message, MAX_FRAME_BYTES,
    UNAUTH_MAX_FRAME_BYTES,
};
use podium_server::rpc::fast::bulk_write;
use podium_server::rpc::method::{self, Method, METHODS};

fn enc(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(&mut b, v).unwrap();
    b
}

/// Everything a connection does with one accepted frame: the fast path,
/// then the general one (value, envelope, method parameters).
fn handle(frame: &[u8]) {
    let fast = bulk_write(frame).map(|w| (w.msgid, w.entries.len()));
    // The walk checked every length, the depth and the value count, so
    // the value decoder must accept what it accepted.
    let v = decode_frame(frame).unwrap_or_else(|e| panic!("accepted frame refused: {e:?}"));
    match envelope(v) {
        Ok(Message::Request {
            msgid,
            method,
            params,
        }) => {
            if let Some((id, _)) = fast {
                assert_eq!(id, msgid);
            }
            if let Some(m) = Method::from_name(&method) {
                let _ = method::parse(m, params);
            }
        }
        Ok(Message::Notification { method, params }) => {
            assert!(fast.is_none(), "the fast path took a notification");
            if let Some(m) = Method::from_name(&method) {
                let _ = method::parse(m, params);
            }
        }
        Err(_) => assert!(fast.is_none(), "the fast path took a bad envelope"),
    }
}

/// Feeds `input` in pieces as a connection does: frames until the first
/// refusal (after which the connection closes).
fn run(input: &[u8], sizes: &[usize], max: usize) -> (Vec<Vec<u8>>, Option<FrameError>) {
    bounded(input.len(), || {
        let mut d = Decoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in pieces(input, sizes) {
            buf.extend_from_slice(piece);
            loop {
                match d.decode(&mut buf, max) {
                    Ok(Some(frame)) => {
                        assert!(!frame.is_empty() && frame.len() <= max);
                        handle(&frame);
                        out.push(frame.to_vec());
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = e.to_api();
                        let _ = peek_msgid(&buf);
                        return (out, Some(e));
                    }
                }
            }
        }
        // What a connection closing on a partial frame looks at.
        let _ = peek_msgid(&buf);
        (out, None)
    })
}

/// MessagePack values of every kind, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f32>()
            .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
            .prop_map(Value::from),
        any::<f64>()
            .prop_filter("NaN is not equal to itself", |f| !f.is_nan())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Value::from),
        (any::<i8>(), prop::collection::vec(any::<u8>(), 0..20))
            .prop_map(|(t, d)| Value::Ext(t, d)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((inner.clone(), inner), 0..6).prop_map(Value::Map),
        ]
    })
}

/// A request to a real method with random parameters.
fn request() -> impl Strategy<Value = Value> {
    let names: Vec<&str> = METHODS.iter().map(|(n, ..)| *n).collect();
    (
        any::<u32>(),
        prop::sample::select(names),
        prop::collection::vec(value(), 0..4),
    )
        .prop_map(|(id, m, params)| {
            Value::Array(vec![0.into(), id.into(), m.into(), Value::Array(params)])
        })
}

/// A plain `submit_many`/`import` entry: member, score, maybe a name.
type Entry = (String, f64, Option<String>);

fn entries() -> impl Strategy<Value = Vec<Entry>> {
    let score = any::<f64>().prop_filter("not NaN", |f| !f.is_nan());
    prop::collection::vec((".{0,12}", score, prop::option::of(".{0,8}")), 0..40)
}

fn bulk_request(id: u32, import: bool, board: &str, entries: &[Entry]) -> Value {
    let items = entries
        .iter()
        .map(|(m, s, n)| {
            let mut kv = vec![
                (Value::from("member"), Value::from(m.as_str())),
                (Value::from("score"), Value::from(*s)),
            ];
            if let Some(n) = n {
                kv.push((Value::from("name"), Value::from(n.as_str())));
            }
            Value::Map(kv)
        })
        .collect();
    let m = if import { "import" } else { "submit_many" };
    Value::Array(vec![
        0.into(),
        id.into(),
        m.into(),
        Value::Array(vec![board.into(), Value::Array(items)]),
    ])
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..64, 1..8)
}

/// Headers that declare lengths and counts, so random input reaches the
/// length checks.
fn msgpack_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        prop::sample::select(vec![
            &[0x94u8, 0x00][..],
            &[0xdb, 0xff, 0xff, 0xff, 0xff],
            &[0xdb, 0x80, 0, 0, 0],
            &[0xdd, 0xff, 0xff, 0xff, 0xff],
            &[0xdf, 0x7f, 0xff, 0xff, 0xff],
            &[0xc6, 0xff, 0xff, 0xff, 0xff],
            &[0xc9, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0xdc, 0xff, 0xff],
            &[0x9f],
            &[0x8f],
            &[0xc1],
            &[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &[0xab, b's', b'u', b'b', b'm', b'i', b't', b'_', b'm', b'a', b'n', b'y'],
        ])
        .prop_map(<[u8]>::to_vec),
        prop::collection::vec(any::<u8>(), 1..4),
    ];
    prop::collection::vec(token, 0..32).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_rpc_random_bytes(
        input in prop::collection::vec(any::<u8>(), 0..512),
        sizes in sizes(),
        authed in any::<bool>(),
    ) {
        let max = if authed { MAX_FRAME_BYTES } else { UNAUTH_MAX_FRAME_BYTES };
        run(&input, &sizes, max);
    }

    #[test]
    fn fuzz_rpc_header_soup(input in msgpack_soup(), sizes in sizes(), authed in any::<bool>()) {
        let max = if authed { MAX_FRAME_BYTES } else { UNAUTH_MAX_FRAME_BYTES };
        run(&input, &sizes, max);
    }

    #[test]
    fn fuzz_rpc_damaged_requests(
        reqs in prop::collection::vec(request(), 1..4),
        damages in prop::collection::vec(damage(), 1..4),
        sizes in sizes(),
    ) {
        let valid: Vec<u8> = reqs.iter().flat_map(enc).collect();
        run(&damaged(valid, &damages), &sizes, MAX_FRAME_BYTES);
    }

    #[test]
    fn fuzz_rpc_damaged_bulk_writes(
        entries in entries(),
        import in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
        sizes in sizes(),
    ) {
        let valid = enc(&bulk_request(7, import, "lb", &entries));
        let bytes = damaged(valid, &damages);
        // The fast path also reads frames whole, never through the walk.
        bounded(bytes.len(), || bulk_write(&bytes).map(|w| w.entries.len()));
        run(&bytes, &sizes, MAX_FRAME_BYTES);
    }

    #[test]
    fn fuzz_rpc_values_round_trip(vals in prop::collection::vec(value(), 1..4), sizes in sizes()) {
        let input: Vec<u8> = vals.iter().flat_map(enc).collect();
        let (frames, err) = run(&input, &sizes, MAX_FRAME_BYTES);
        prop_assert_eq!(err, None);
        prop_assert_eq!(frames.len(), vals.len());
        for (frame, v) in frames.iter().zip(&vals) {
            prop_assert_eq!(frame, &enc(v));
            prop_assert_eq!(&decode_frame(frame).unwrap(), v);
        }
    }

    #[test]
    fn fuzz_rpc_envelopes_round_trip(
        id in any::<u32>(),
        method in ".{0,16}",
        params in prop::collection::vec(value(), 0..4),
        notify in any::<bool>(),
    ) {
        let v = if notify {
            Value::Array(vec![2.into(), method.as_str().into(), Value::Array(params.clone())])
        } else {
            Value::Array(vec![0.into(), id.into(), method.as_str().into(), Value::Array(params.clone())])
        };
        let frame = enc(&v);
        prop_assert_eq!(peek_msgid(&frame), (!notify).then_some(id));
        let want = if notify {
            Message::Notification { method, params }
        } else {
            Message::Request { msgid: id, method, params }
        };
        prop_assert_eq!(envelope(decode_frame(&frame).unwrap()), Ok(want));
    }

    #[test]
    fn fuzz_rpc_bulk_writes_round_trip(
        id in any::<u32>(),
        import in any::<bool>(),
        board in "[a-z][a-z0-9_]{0,10}",
        entries in entries(),
    ) {
        let frame = enc(&bulk_request(id, import, &board, &entries));
        let w = bulk_write(&frame).expect("a plain bulk write takes the fast path");
        prop_assert_eq!(w.msgid, id);
        prop_assert_eq!(w.import, import);
        prop_assert_eq!(w.board, board.as_str());
        let got: Vec<Entry> = w
            .entries
            .iter()
            .map(|e| (e.member.to_string(), e.score, e.name.map(str::to_string)))
            .collect();
        prop_assert_eq!(got, entries);
    }
}

/// Declared lengths and counts no frame could hold are refused as soon as
/// their header is read, without reserving them.
#[test]
fn fuzz_rpc_huge_declared_lengths_are_cheap() {
    for count in [1u32 << 31, u32::MAX, 1 << 24] {
        let n = count.to_be_bytes();
        for marker in [0xdbu8, 0xc6, 0xdd, 0xdf, 0xc9] {
            let mut frame = vec![0x94, 0x00, 0x01, marker];
            frame.extend_from_slice(&n);
            frame.push(1);
            for max in [MAX_FRAME_BYTES, UNAUTH_MAX_FRAME_BYTES] {
                let (frames, err) = run(&frame, &[usize::MAX], max);
                assert!(frames.is_empty());
                // 2^24 is a length a large frame may have: waited for.
                if count as usize > max {
                    assert!(err.is_some(), "{frame:x?} was waited for");
                }
            }
            // The fast path reads the same claims from a whole frame.
            let mut bulk = enc(&bulk_request(1, false, "lb", &[]));
            bulk.truncate(bulk.len() - 1);
            bulk.push(marker);
            bulk.extend_from_slice(&n);
            bounded(bulk.len(), || bulk_write(&bulk).map(|w| w.entries.len()));
        }
    }
}

#[test]
fn fuzz_rpc_corpus_replays() {
    for (path, input) in corpus("rpc") {
        for max in [MAX_FRAME_BYTES, UNAUTH_MAX_FRAME_BYTES] {
            for sizes in [&[usize::MAX][..], &[1], &[7, 3]] {
                let _ = (&path, run(&input, sizes, max));
            }
        }
        bounded(input.len(), || bulk_write(&input).map(|w| w.entries.len()));
    }
}
