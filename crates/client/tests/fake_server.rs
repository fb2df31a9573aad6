//! The client against a scripted MessagePack-RPC server written here
//! (a thread on a std socket): answers out of order, errors, a connection
//! that breaks with calls in flight, oversized and dribbled responses, and
//! the blocking wrapper. podium itself is driven by the client in
//! `crates/server/tests/integration/cli.rs`, where Cargo provides the `podium` binary.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::Duration;

use podium_client::{blocking, Client, ClientError, Config, Ser};
use rmpv::Value;

/// A request as the fake server saw it.
#[derive(Debug, Clone)]
struct Req {
    msgid: u64,
    method: String,
    params: Value,
}

fn read_req(rd: &mut impl std::io::Read) -> Option<Req> {
    let v = rmpv::decode::read_value(rd).ok()?;
    let a = v.as_array().expect("a request is an array");
    assert_eq!(a.len(), 4, "{v}");
    assert_eq!(a[0], Value::from(0));
    Some(Req {
        msgid: a[1].as_u64().expect("msgid"),
        method: a[2].as_str().expect("method").to_string(),
        params: a[3].clone(),
    })
}

fn response(msgid: u64, error: Value, result: Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(
        &mut b,
        &Value::Array(vec![1.into(), msgid.into(), error, result]),
    )
    .unwrap();
    b
}

/// Runs `script` on the first connection to a fresh listener; returns the
/// address.
fn serve(script: impl FnOnce(TcpStream) + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        script(s);
    });
    addr
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn out_of_order_answers_reach_their_callers() {
    const N: usize = 500;
    let addr = serve(|s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let reqs: Vec<Req> = (0..N).map(|_| read_req(&mut rd).unwrap()).collect();
        let ids: std::collections::HashSet<u64> = reqs.iter().map(|r| r.msgid).collect();
        assert_eq!(ids.len(), N, "msgids are distinct");
        // Answer last first, each with its own params echoed.
        let mut out = Vec::new();
        for r in reqs.iter().rev() {
            out.extend(response(
                r.msgid,
                Value::Nil,
                Value::Array(vec![r.method.as_str().into(), r.params.clone()]),
            ));
        }
        w.write_all(&out).unwrap();
        // Then wait for the client to go.
        let _ = read_req(&mut rd);
    });
    rt().block_on(async move {
        let c = Client::connect(addr).await.unwrap();
        // All issued before any is awaited: pipelined.
        let futs: Vec<_> = (0..N)
            .map(|i| c.call(&format!("m{i}"), &vec![Value::from(i)]))
            .collect();
        for (i, f) in futs.into_iter().enumerate() {
            let v = f.await.unwrap();
            assert_eq!(
                v,
                Value::Array(vec![format!("m{i}").into(), Value::Array(vec![i.into()])])
            );
        }
    });
}

#[test]
fn server_errors_are_typed_and_the_connection_goes_on() {
    let addr = serve(|s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let r = read_req(&mut rd).unwrap();
        assert_eq!(r.method, "rank");
        assert_eq!(r.params, Value::Array(vec!["lb".into(), "zed".into()]));
        w.write_all(&response(
            r.msgid,
            Value::Array(vec![
                "member_not_found".into(),
                "member \"zed\" not found on board \"lb\"".into(),
            ]),
            Value::Nil,
        ))
        .unwrap();
        let r = read_req(&mut rd).unwrap();
        // A notification in between is ignored by the client.
        let mut note = Vec::new();
        rmpv::encode::write_value(
            &mut note,
            &Value::Array(vec![2.into(), "hello".into(), Value::Array(vec![])]),
        )
        .unwrap();
        w.write_all(&note).unwrap();
        w.write_all(&response(
            r.msgid,
            Value::Nil,
            Value::Map(vec![("scope".into(), "admin".into())]),
        ))
        .unwrap();
        let _ = read_req(&mut rd);
    });
    let c = blocking::Client::connect(addr).unwrap();
    let e = c.rank("lb", "zed").unwrap_err();
    assert_eq!(e.code(), Some("member_not_found"));
    assert_eq!(
        e.to_string(),
        "member \"zed\" not found on board \"lb\" (member_not_found)"
    );
    assert_eq!(c.auth("some key").unwrap(), "admin");
}

#[test]
fn a_broken_connection_fails_every_call_in_flight_and_later() {
    let addr = serve(|s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let a = read_req(&mut rd).unwrap();
        let _b = read_req(&mut rd).unwrap();
        w.write_all(&response(a.msgid, Value::Nil, 1.into()))
            .unwrap();
        // Half of the next response, then gone.
        let half = response(_b.msgid, Value::Nil, "x".repeat(1000).into());
        w.write_all(&half[..500]).unwrap();
        drop(w);
        drop(rd);
    });
    let c = blocking::Client::connect(addr).unwrap();
    let out = c.pipeline(vec![("a", vec![]), ("b", vec![])]);
    assert_eq!(out[0].as_ref().unwrap(), &Value::from(1));
    let e = out[1].as_ref().unwrap_err();
    assert!(matches!(e, ClientError::Io(_)), "{e}");
    assert!(e.to_string().contains("closed"), "{e}");
    let e = c.call("c", &Vec::new()).unwrap_err();
    assert!(matches!(e, ClientError::Io(_)), "{e}");
}

#[test]
fn responses_over_the_limit_are_refused() {
    let addr = serve(|s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let r = read_req(&mut rd).unwrap();
        // Only the header of a 2 GiB string: refused from the header.
        let mut b = response(r.msgid, Value::Nil, Value::Nil);
        b.pop();
        b.extend([0xdb, 0x80, 0, 0, 0]);
        let _ = w.write_all(&b);
        thread::sleep(Duration::from_millis(500));
    });
    let cfg = Config {
        max_message_bytes: 1 << 20,
        ..Config::default()
    };
    let c = blocking::Client::connect_with(addr, cfg).unwrap();
    let e = c.call("export", &Ser(("b",))).unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e}");
    assert!(e.to_string().contains("limit"), "{e}");
}

#[test]
fn a_large_response_dribbled_in_small_pieces_arrives_whole() {
    // 200k export-like entries (~8 MB), written in pieces of 1-4,000 bytes.
    let entries: Vec<Value> = (0..200_000u64)
        .map(|i| {
            Value::Map(vec![
                ("member".into(), format!("m{i}").into()),
                ("score".into(), (i as f64).into()),
                ("rank".into(), (i + 1).into()),
            ])
        })
        .collect();
    let want = entries.clone();
    let addr = serve(move |s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let r = read_req(&mut rd).unwrap();
        let mut b = response(r.msgid, Value::Nil, Value::Array(entries));
        // A nil item, as a removal during an export leaves.
        b.push(0xc0);
        // Patch the array 32 header's count (entries + 1).
        let at = b.iter().position(|&x| x == 0xdd).unwrap();
        b[at + 1..at + 5].copy_from_slice(&200_001u32.to_be_bytes());
        let mut rng = 7u64;
        let mut pos = 0;
        while pos < b.len() {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let step = 1 + (rng >> 33) as usize % 4000;
            let end = (pos + step).min(b.len());
            w.write_all(&b[pos..end]).unwrap();
            pos = end;
        }
        let _ = read_req(&mut rd);
    });
    let c = blocking::Client::connect(addr).unwrap();
    let got = c.export("b").unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(Value::from(g.member.as_str()), w["member"]);
        assert_eq!(Value::from(g.rank), w["rank"]);
    }
    assert!(c.bytes_received() > 6_000_000);
}

/// Large answers (1 to 5 MB, each one's bytes its own), some written in
/// one piece with a small message after them, so a large message's end and
/// the next message's start arrive together: read one at a time and
/// dropped (their buffer then serves the next), or all held at once while
/// more arrive, growing and shrinking, every one arrives whole and stays
/// intact.
#[test]
fn large_answers_held_or_dropped_arrive_whole_and_stay_intact() {
    // 5 MB down to 1.5 MB, then up again: a buffer given back is large
    // enough for the next answers, until one is not.
    let size = |k: u64| 1_500_000 + (5_000_000 + k as usize * 3_100_000) % 3_500_000;
    let body = move |k: u64| -> String {
        (0..size(k))
            .map(|i| char::from(b'a' + ((i as u64 * 7 + k) % 26) as u8))
            .collect()
    };
    let addr = serve(move |s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(r) = read_req(&mut rd) {
            let k = r.params[0].as_u64().unwrap();
            let mut b = match r.method.as_str() {
                "big" => response(r.msgid, Value::Nil, body(k).into()),
                _ => response(r.msgid, Value::Nil, k.into()),
            };
            if k % 3 == 2 {
                // An answer to no call: ignored by the client.
                b.extend(response(u64::from(u32::MAX), Value::Nil, Value::Nil));
            }
            w.write_all(&b).unwrap();
        }
    });
    rt().block_on(async move {
        let c = Client::connect(addr).await.unwrap();
        let big = |k: u64| c.call_raw("big", &vec![Value::from(k)]);
        let check = |r: &podium_client::RawResponse, k: u64| {
            let v = r.value().unwrap();
            assert!(v.as_str() == Some(body(k).as_str()), "answer {k}");
        };
        // One at a time, each dropped before the next.
        for k in 0..9 {
            let r = big(k).await.unwrap();
            check(&r, k);
        }
        // Eight in flight, all held until the last has arrived.
        let calls: Vec<_> = (10..18).map(big).collect();
        let mut held = Vec::new();
        for f in calls {
            held.push(f.await.unwrap());
        }
        for (k, r) in (10..).zip(&held) {
            check(r, k);
        }
        drop(held);
        // A small answer after large ones, then a large one again.
        let r = c.call_raw("small", &vec![Value::from(5)]).await.unwrap();
        assert_eq!(r.value().unwrap(), Value::from(5));
        check(&big(20).await.unwrap(), 20);
    });
}

#[test]
fn a_started_call_is_answered_at_the_next_wait() {
    let addr = serve(|s| {
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        while let Some(r) = read_req(&mut rd) {
            w.write_all(&response(r.msgid, Value::Nil, r.params))
                .unwrap();
        }
    });
    let c = blocking::Client::connect(addr).unwrap();
    let a = c.start("x", &vec![Value::from(1)]);
    let b = c.start("x", &vec![Value::from(2)]);
    assert_eq!(
        c.wait(b).unwrap().value().unwrap(),
        Value::Array(vec![2.into()])
    );
    assert_eq!(
        c.wait(a).unwrap().value().unwrap(),
        Value::Array(vec![1.into()])
    );
    let mut ticks = 0;
    let r = c
        .wait_with_progress(
            c.start("x", &vec![Value::from(3)]),
            Duration::from_millis(1),
            |_| ticks += 1,
        )
        .unwrap();
    assert_eq!(r.value().unwrap(), Value::Array(vec![3.into()]));
}
