//! Notifications, deep pipelines answered by msgid, bulk writes applied in
//! order, hostile frames, slow and large exports.

use super::*;

#[test]
fn notifications_run_writes_and_unknown_ones_are_ignored() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let mut batch = notification("nvim_client_hello", vec![map(&[("name", "x".into())])]);
    batch.extend(notification("submit", vec!["lb".into(), entry("n", 4.0)]));
    batch.extend(notification("rank", vec!["lb".into(), "n".into()]));
    batch.extend(notification("submit", vec![1.into()]));
    batch.extend(request(9, "rank", vec!["lb".into(), "n".into()]));
    c.send(&batch);
    // Only the request is answered.
    let (id, r) = c.response();
    assert_eq!(id, 9);
    assert_eq!(get(&r.unwrap(), "score"), &Value::F64(4.0));
    c.call("boards", vec![]);
}

#[test]
fn pipelines_of_1000_requests_are_answered_by_msgid() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    // msgids over the whole u32 range, 0 and u32::MAX included.
    let ids: Vec<u32> = (0..1000u32)
        .map(|i| match i {
            0 => 0,
            1 => u32::MAX,
            i => i.wrapping_mul(2_654_435_761),
        })
        .collect();
    let mut bytes = Vec::new();
    let mut want: HashMap<u32, String> = HashMap::new();
    for (i, &id) in ids.iter().enumerate() {
        let member = format!("m{:04}", i / 2);
        if i % 2 == 0 {
            bytes.extend(request(
                id,
                "submit",
                vec!["pipe".into(), entry(&member, i as f64)],
            ));
            want.insert(id, format!("submit {member}"));
        } else {
            // Pipelined behind its own submit: writes apply in the order
            // sent, so the member is there.
            bytes.extend(request(
                id,
                "score",
                vec!["pipe".into(), member.as_str().into()],
            ));
            want.insert(id, format!("score {member} {}", (i - 1) as f64));
        }
    }
    assert_eq!(want.len(), 1000, "distinct msgids");
    c.send(&bytes);
    for _ in 0..1000 {
        let (id, r) = c.response();
        let what = want
            .remove(&id)
            .unwrap_or_else(|| panic!("unexpected msgid {id}"));
        let v = r.unwrap_or_else(|e| panic!("{what}: {e:?}"));
        let mut words = what.split(' ');
        match words.next().unwrap() {
            "submit" => assert_eq!(get(&v, "member"), &Value::from(words.next().unwrap())),
            _ => {
                assert_eq!(get(&v, "member"), &Value::from(words.next().unwrap()));
                let s: f64 = words.next().unwrap().parse().unwrap();
                assert_eq!(get(&v, "score"), &Value::F64(s));
            }
        }
    }
    assert!(want.is_empty());
    assert_eq!(
        get(&c.call("count", vec!["pipe".into()]), "count"),
        &Value::from(500)
    );
}

/// Bulk writes of the common shape are applied by the connection's applier
/// while the reader reads on: every other request pipelined behind them
/// must still see them applied, and a general-path write between them
/// must keep its place in the order.
#[test]
fn pipelined_bulk_writes_apply_in_order_with_other_requests() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let mut bytes = Vec::new();
    let mut want: HashMap<u32, f64> = HashMap::new();
    let mut id = 0;
    for i in 0..300u32 {
        let batch: Vec<Value> = (0..50)
            .map(|k| entry(&format!("b{k}"), f64::from(i * 100 + k)))
            .chain([entry("a", f64::from(i))])
            .collect();
        id += 1;
        bytes.extend(request(
            id,
            "submit_many",
            vec!["order".into(), Value::Array(batch)],
        ));
        // Read behind the batch: its score for "a".
        id += 1;
        bytes.extend(request(id, "score", vec!["order".into(), "a".into()]));
        want.insert(id, f64::from(i));
        if i % 3 == 0 {
            // A general-path write, then a read that must see it, and
            // the next batch must overwrite it again.
            id += 1;
            bytes.extend(request(
                id,
                "submit",
                vec!["order".into(), entry("a", f64::from(i) + 0.5)],
            ));
            id += 1;
            bytes.extend(request(id, "score", vec!["order".into(), "a".into()]));
            want.insert(id, f64::from(i) + 0.5);
        }
    }
    c.send(&bytes);
    for _ in 0..id {
        let (rid, r) = c.response();
        let v = r.unwrap_or_else(|e| panic!("request {rid}: {e:?}"));
        if let Some(s) = want.remove(&rid) {
            assert_eq!(get(&v, "score"), &Value::F64(s), "read {rid}");
        }
    }
    assert!(want.is_empty());
    let last = c.call("score", vec!["order".into(), "a".into()]);
    assert_eq!(get(&last, "score"), &Value::F64(299.0));
    assert_eq!(
        get(&c.call("count", vec!["order".into()]), "count"),
        &Value::from(51)
    );
}

#[test]
fn hostile_frames_close_only_their_connection() {
    let mut p = Podium::start(&[]);
    let mut bystander = p.client();
    bystander.call("submit", vec!["lb".into(), entry("ann", 1.0)]);
    let check = |bystander: &mut Client, p: &mut Podium, what: &str| {
        let r = bystander.call("rank", vec!["lb".into(), "ann".into()]);
        assert_eq!(get(&r, "rank"), &Value::from(1), "after {what}");
        assert!(p.running(), "podium exited after {what}:\n{}", p.output());
    };

    // Truncated at EOF: the server just closes.
    let mut c = p.client();
    let full = request(1, "rank", vec!["lb".into(), "ann".into()]);
    c.send(&full[..full.len() - 3]);
    c.wr.shutdown(Shutdown::Write).unwrap();
    assert!(c.closed(), "truncated frame");
    check(&mut bystander, &mut p, "a truncated frame");

    // A str 32 declaring 2^31 bytes, in a small frame.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x02, 0xa4];
    f.extend_from_slice(b"rank");
    f.extend_from_slice(&[0x92, 0xa2, b'l', b'b', 0xdb]);
    f.extend_from_slice(&(1u32 << 31).to_be_bytes());
    f.extend_from_slice(b"ann");
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (2, "payload_too_large"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "a 2^31 string length");

    // 10,000 levels of nesting.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x03, 0xa4];
    f.extend_from_slice(b"rank");
    f.extend(std::iter::repeat_n(0x91u8, 10_000));
    f.push(0xc0);
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (3, "malformed_request"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "10,000 levels of nesting");

    // An array declaring 2^32-1 items.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x04, 0xa4];
    f.extend_from_slice(b"rank");
    f.push(0xdd);
    f.extend_from_slice(&u32::MAX.to_be_bytes());
    f.extend_from_slice(&[0xa2, b'l', b'b']);
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (4, "payload_too_large"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "an array of 2^32-1 items");

    // A map of 2^32-1 pairs, and no request id to answer to.
    let mut c = p.client();
    let mut f = vec![0xdf];
    f.extend_from_slice(&u32::MAX.to_be_bytes());
    c.send(&f);
    assert!(c.closed());
    check(&mut bystander, &mut p, "a map of 2^32-1 pairs");

    // Not a request at all; a response sent to the server; byte 0xc1.
    for (what, f) in [
        ("a bare string", enc(&Value::from("hello"))),
        (
            "a response",
            enc(&Value::Array(vec![
                1.into(),
                1.into(),
                Value::Nil,
                Value::Nil,
            ])),
        ),
        ("byte 0xc1", vec![0x94, 0x00, 0x05, 0xc1]),
    ] {
        let mut c = p.client();
        c.send(&f);
        if what == "byte 0xc1" {
            let (id, r) = c.response();
            assert_eq!((id, r.unwrap_err().code.as_str()), (5, "malformed_request"));
        }
        assert!(c.closed(), "{what}");
        check(&mut bystander, &mut p, what);
    }
}

#[test]
fn a_slow_export_reader_stalls_only_its_own_connection() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let n = 200_000usize;
    for batch in 0..10 {
        let entries: Vec<Value> = (0..n / 10)
            .map(|i| {
                let i = batch * (n / 10) + i;
                map(&[
                    ("member", format!("member-{i:07}").into()),
                    ("score", (i as f64).into()),
                    ("name", format!("Player number {i}").into()),
                ])
            })
            .collect();
        c.call("submit_many", vec!["big".into(), Value::Array(entries)]);
    }
    // The slow client asks for the export and reads only its first bytes.
    let mut slow = p.client();
    slow.send(&request(1, "export", vec!["big".into()]));
    let mut head = vec![0u8; 64 << 10];
    slow.rd
        .read_exact(&mut head)
        .expect("the export's first bytes");
    // Meanwhile other connections are answered, reads and writes.
    let mut fast = p.client();
    for i in 0..200 {
        let r = fast.call(
            "rank",
            vec!["big".into(), format!("member-{i:07}").as_str().into()],
        );
        assert_eq!(get(&r, "rank"), &Value::from((n - i) as u64));
        fast.call(
            "submit",
            vec!["other".into(), entry(&format!("x{i}"), i as f64)],
        );
    }
    let top = fast.call("top", vec!["big".into(), map(&[("page_size", 100.into())])]);
    assert_eq!(get(&top, "entries").as_array().unwrap().len(), 100);
    // A write to the exported board itself: the stalled answer holds no
    // lock on it (chunks read ahead of the writer are read and let go). It
    // ranks last, past the export's declared count, so the export below
    // is unchanged.
    let late = fast.call("submit", vec!["big".into(), entry("late", -1.0)]);
    assert_eq!(get(&late, "rank"), &Value::from(n as u64 + 1));
    // Then the slow client reads the rest: exactly n entries, best first.
    let mut counted = Counted {
        inner: std::io::Cursor::new(head).chain(&mut slow.rd),
        n: 0,
    };
    let response = rmpv::decode::read_value(&mut counted).expect("a whole response");
    assert!(
        counted.n > 8 << 20,
        "the export is over 8 MiB: {}",
        counted.n
    );
    let (id, r) = parse_response(response);
    assert_eq!(id, 1);
    let entries = r.unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), n);
    assert_eq!(
        get(&entries[0], "member"),
        &Value::from(format!("member-{:07}", n - 1))
    );
    assert_eq!(get(&entries[n - 1], "rank"), &Value::from(n as u64));
    assert_eq!(
        get(&entries[1], "name"),
        &Value::from(format!("Player number {}", n - 2))
    );
}

/// An export of bare entries (no name, no data: the encoder's fast path)
/// long enough to stream in many chunks, ranks crossing every integer
/// width up to uint 32, ids short, at the one-byte header's limit, past
/// it and not ASCII: byte for byte the encoding of the same entries built
/// here, whatever the chunk seams; a long range of them pipelined with it
/// comes whole, before or after it.
#[test]
fn a_bare_export_streams_byte_for_byte_across_chunks() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let n = 70_000usize;
    let id = |i: usize| match i % 1000 {
        1 => format!("{i:0>31}"),
        2 => format!("{i:0>32}"),
        3 => format!("é{i}"),
        _ => format!("m{i}"),
    };
    // Distinct scores in an order unrelated to the ids, a few infinite.
    let score = |i: usize| match i {
        7 => f64::INFINITY,
        8 => f64::NEG_INFINITY,
        _ => ((i * 7919) % 70_001) as f64 - 35_000.5,
    };
    for batch in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let entries = batch.iter().map(|&i| entry(&id(i), score(i))).collect();
        c.call("submit_many", vec!["bare".into(), Value::Array(entries)]);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
    let entries: Vec<Value> = order
        .iter()
        .enumerate()
        .map(|(r, &i)| {
            map(&[
                ("member", id(i).into()),
                ("score", Value::F64(score(i))),
                ("rank", (r as u64 + 1).into()),
            ])
        })
        .collect();
    let want = enc(&Value::Array(vec![
        1.into(),
        41.into(),
        Value::Nil,
        Value::Array(entries.clone()),
    ]));
    let mut both = request(41, "export", vec!["bare".into()]);
    both.extend(request(
        42,
        "range_by_rank",
        vec!["bare".into(), 3.into(), 66_000.into()],
    ));
    c.send(&both);
    // Both stream, each in one piece, in the order they start.
    let mut answered = Vec::new();
    for _ in 0..2 {
        let mut seen = Recorded {
            inner: &mut c.rd,
            bytes: Vec::new(),
        };
        let v = rmpv::decode::read_value(&mut seen).expect("a response");
        let (id, r) = parse_response(v);
        match id {
            41 => {
                assert_eq!(seen.bytes.len(), want.len());
                assert!(seen.bytes == want, "the export's bytes differ");
            }
            42 => {
                let r = r.unwrap();
                assert_eq!(get(&r, "total"), &Value::from(n as u64));
                assert_eq!(
                    get(&r, "entries").as_array().unwrap()[..],
                    entries[2..66_000]
                );
            }
            _ => panic!("an answer to {id}: {r:?}"),
        }
        answered.push(id);
    }
    answered.sort();
    assert_eq!(answered, [41, 42]);
}

/// Keeps the bytes read through it.
struct Recorded<R> {
    inner: R,
    bytes: Vec<u8>,
}

impl<R: Read> Read for Recorded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..k]);
        Ok(k)
    }
}

/// Counts the bytes read through it.
struct Counted<R> {
    inner: R,
    n: usize,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k;
        Ok(k)
    }
}
