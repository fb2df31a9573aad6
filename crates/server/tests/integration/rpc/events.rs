//! Live events over MessagePack-RPC: `subscribe` answered with an id, then
//! `[2, "event", [id, event]]` notifications interleaved with the answers
//! to other requests; their content and order, `unsubscribe`, a resume with
//! `since` (checked against a subscription that never stopped), a
//! connection that stops reading (its subscription ends with `lagged`),
//! and the refusals, in the same codes and words as the HTTP route.

use std::collections::VecDeque;
use std::io::BufRead;

use super::*;

/// A message of a subscribed connection.
enum Msg {
    Response(u32, Result<Value, RpcError>),
    /// A notification `[2, "event", [subscription id, event]]`.
    Event(u64, Value),
}

fn parse_msg(v: Value) -> Msg {
    if v[0] == Value::from(1) {
        let (id, r) = parse_response(v);
        return Msg::Response(id, r);
    }
    let a = v.as_array().expect("a message is an array");
    assert_eq!(a.len(), 3, "notification arity: {v}");
    assert_eq!(a[0], Value::from(2), "message type: {v}");
    assert_eq!(a[1], Value::from("event"), "notification method: {v}");
    let params = a[2].as_array().expect("params");
    assert_eq!(params.len(), 2, "[subscription id, event]: {v}");
    let sub = params[0].as_u64().expect("a subscription id");
    assert!(params[1].is_map(), "an event is a map: {v}");
    Msg::Event(sub, params[1].clone())
}

/// A client that keeps the notifications read while waiting for an answer.
struct Subscriber {
    c: Client,
    events: VecDeque<(u64, Value)>,
}

impl Subscriber {
    fn new(c: Client) -> Subscriber {
        Subscriber {
            c,
            events: VecDeque::new(),
        }
    }

    fn try_call(&mut self, method: &str, params: Vec<Value>) -> Result<Value, RpcError> {
        let id = self.c.next_id;
        self.c.next_id += 1;
        self.c.send(&request(id, method, params));
        loop {
            match parse_msg(self.c.read().expect("a message, got EOF")) {
                Msg::Event(s, e) => self.events.push_back((s, e)),
                Msg::Response(got, r) => {
                    assert_eq!(got, id, "answer to another request");
                    return r;
                }
            }
        }
    }

    #[track_caller]
    fn call(&mut self, method: &str, params: Vec<Value>) -> Value {
        self.try_call(method, params)
            .unwrap_or_else(|e| panic!("{method} failed: {e:?}"))
    }

    #[track_caller]
    fn call_err(&mut self, method: &str, params: Vec<Value>) -> RpcError {
        match self.try_call(method, params) {
            Ok(v) => panic!("{method} should have failed, got {v}"),
            Err(e) => e,
        }
    }

    fn subscribe(&mut self, board: &str, options: Value) -> u64 {
        let id = self.call("subscribe", vec![board.into(), options]);
        id.as_u64().expect("a subscription id")
    }

    /// The next notification.
    fn event(&mut self) -> (u64, Value) {
        if let Some(e) = self.events.pop_front() {
            return e;
        }
        match parse_msg(self.c.read().expect("an event, got EOF")) {
            Msg::Event(s, e) => (s, e),
            Msg::Response(id, r) => panic!("an event expected, got the answer {id}: {r:?}"),
        }
    }

    /// The events up to the first of type `kind` (included).
    fn until(&mut self, kind: &str) -> Vec<(u64, Value)> {
        let mut out = Vec::new();
        loop {
            let e = self.event();
            let done = e.1["type"] == Value::from(kind);
            out.push(e);
            if done {
                return out;
            }
        }
    }

    /// Whether nothing arrives for a while.
    fn quiet(&mut self) -> bool {
        if !self.events.is_empty() {
            return false;
        }
        self.c
            .wr
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let got = match self.c.rd.fill_buf() {
            Ok(b) => !b.is_empty(),
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "{e}"
                );
                false
            }
        };
        self.c.wr.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        !got
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// An event id's parts, to compare ids in order.
fn parse_id(text: &str) -> (u64, u32) {
    let (a, b) = text.split_once('-').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// An event's id, parsed.
fn id(e: &Value) -> (u64, u32) {
    parse_id(s(&e["id"]))
}

fn submit_http(p: &Podium, member: &str, score: f64) {
    let r = p.post(
        "/v1/boards/b/scores",
        &json!({"member": member, "score": score}),
    );
    assert_eq!(r["member"], member, "{r}");
}

#[test]
fn top_and_members_with_a_snapshot_then_unsubscribe_and_resume() {
    let p = Podium::start(&[]);
    for (m, sc) in [("a", 10.0), ("b", 20.0), ("c", 30.0), ("me", 5.0)] {
        submit_http(&p, m, sc);
    }
    let opts = || {
        map(&[
            ("top", 2.into()),
            ("members", strs(&["me"])),
            ("snapshot", true.into()),
        ])
    };
    let mut c = Subscriber::new(p.client());
    // A second subscription that never stops, to check the resume against.
    let mut all = Subscriber::new(p.client());
    let sub = c.subscribe("b", opts());
    let all_sub = all.subscribe("b", map(&[("top", 2.into()), ("members", strs(&["me"]))]));

    let (got_sub, snap) = c.event();
    assert_eq!(got_sub, sub);
    assert_eq!(snap["type"], Value::from("snapshot"));
    assert_eq!(snap["board"], Value::from("b"));
    let keys: Vec<&str> = snap.as_map().unwrap()[..3]
        .iter()
        .map(|(k, _)| s(k))
        .collect();
    assert_eq!(keys, ["id", "type", "board"], "the envelope first");
    assert_eq!(snap["top"][0]["member"], Value::from("c"));
    assert_eq!(snap["top"][1]["member"], Value::from("b"));
    assert_eq!(snap["members"][0]["member"], Value::from("me"));
    // Integers stay integers, scores are floats.
    assert!(snap["members"][0]["rank"].is_u64(), "{snap}");
    assert_eq!(snap["members"][0]["rank"], Value::from(4));
    assert_eq!(snap["top"][0]["score"], Value::F64(30.0));

    // A write on the same connection: its answer and the events it causes
    // come interleaved, each in its own order.
    let r = c.call("submit", vec!["b".into(), entry("d", 25.0)]);
    assert_eq!(get(&r, "rank"), &Value::from(2));
    let got = c.until("enter");
    assert!(got.iter().all(|(s, _)| *s == sub));
    let me = &got
        .iter()
        .find(|(_, e)| e["type"] == Value::from("member"))
        .unwrap()
        .1;
    assert_eq!(me["member"], Value::from("me"));
    assert_eq!(me["rank"], Value::from(5));
    assert_eq!(me["previous_rank"], Value::from(4));
    assert_eq!(me["by"], Value::from("d"));
    let kinds: Vec<(&str, &str)> = got
        .iter()
        .filter(|(_, e)| e["type"] != Value::from("member"))
        .map(|(_, e)| (s(&e["type"]), s(&e["member"])))
        .collect();
    assert_eq!(kinds, [("leave", "b"), ("enter", "d")]);
    let ids: Vec<_> = got.iter().map(|(_, e)| id(e)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(id(&snap) < ids[0]);
    let seen = got.last().unwrap().1["id"].clone();
    // A write below the top places and below "me" sends nothing.
    submit_http(&p, "low", 1.0);
    assert!(c.quiet());

    // Unsubscribed: true once, and nothing more arrives.
    assert_eq!(c.call("unsubscribe", vec![sub.into()]), Value::from(true));
    assert_eq!(c.call("unsubscribe", vec![sub.into()]), Value::from(false));
    submit_http(&p, "me", 100.0);
    submit_http(&p, "e", 0.5);
    submit_http(&p, "f", 200.0);
    assert!(c.quiet());

    // Resumed after the last event seen: exactly the events the unbroken
    // subscription got after it, no reload, no snapshot.
    let mut resume = opts();
    if let Value::Map(m) = &mut resume {
        m.push(("since".into(), seen.clone()));
    }
    let again = c.subscribe("b", resume);
    assert!(again > sub, "ids are not reused");
    // The writes were applied (their events made) before HTTP answered:
    // both have everything once quiet.
    let seen = parse_id(s(&seen));
    let mut unbroken: Vec<Value> = Vec::new();
    while !all.quiet() {
        let (s_, e) = all.event();
        assert_eq!(s_, all_sub);
        if id(&e) > seen {
            unbroken.push(e);
        }
    }
    let mut resumed = Vec::new();
    while !c.quiet() {
        let (s_, e) = c.event();
        assert_eq!(s_, again);
        resumed.push(e);
    }
    assert!(unbroken.len() >= 4, "{unbroken:?}");
    assert_eq!(resumed, unbroken, "no gap, no duplicate");
    assert_eq!(resumed[0]["type"], Value::from("member"));
    assert_eq!(resumed[0]["rank"], Value::from(1));
    assert!(resumed
        .iter()
        .any(|e| e["type"] == Value::from("enter") && e["member"] == Value::from("f")));
    // The connection still answers, and closing it ends its subscriptions
    // (the server goes on serving the others).
    c.call("boards", vec![]);
    drop(c);
    submit_http(&p, "g", 300.0);
    assert_eq!(
        all.until("enter").last().unwrap().1["member"],
        Value::from("g")
    );
}

/// Every change of a board (no filter) reaches several subscriptions of
/// one connection, each under its own id, and a board's deletion too.
#[test]
fn several_subscriptions_on_one_connection() {
    let p = Podium::start(&[]);
    let mut c = Subscriber::new(p.client());
    let one = c.subscribe("b", Value::Nil);
    let two = c.call("subscribe", vec!["b".into()]).as_u64().unwrap();
    let other = c.subscribe("other", map(&[]));
    assert!(one != two && two != other && one != other);
    // The board's creation, then the change, for each subscription (each
    // subscription's events in order; the two interleave as they may).
    submit_http(&p, "x", 3.0);
    let mut got = Vec::new();
    let mut created = Vec::new();
    while got.len() < 2 {
        let (s_, e) = c.event();
        if e["type"] == Value::from("created") {
            assert!(!got.iter().any(|(g, _)| *g == s_), "created comes first");
            created.push(s_);
        } else {
            got.push((s_, e));
        }
    }
    created.sort_unstable();
    assert_eq!(created, [one, two]);
    got.sort_by_key(|(s, _)| *s);
    for ((s_, e), want) in got.iter().zip([one, two]) {
        assert_eq!(*s_, want);
        assert_eq!(e["type"], Value::from("change"));
        assert_eq!(e["member"], Value::from("x"));
        assert_eq!(e["rank"], Value::from(1));
    }
    assert_eq!(got[0].1, got[1].1, "the same event");
    assert!(c.quiet());
    c.call("unsubscribe", vec![one.into()]);
    c.call("board_delete", vec!["b".into()]);
    let got = c.until("deleted");
    assert!(got.iter().all(|(s_, _)| *s_ == two), "{:?}", got);
    assert!(c.quiet());
}

/// A connection that stops reading while its board changes a lot: the
/// server does not queue for it without bound; the subscription ends with
/// a `lagged` event naming where to resume, and the connection stays
/// usable.
#[test]
fn a_connection_that_stops_reading_gets_lagged() {
    let p = Podium::start(&[]);
    let mut c = Subscriber::new(p.client());
    let sub = c.subscribe("b", Value::Nil);
    // Far more events than the notification budget, the socket buffers and
    // the ring hold together, in writes of fewer events than the ring
    // keeps: a subscription that is read keeps up with them.
    let mut w = p.client();
    let (n, per) = (300_000, 1000);
    for chunk in 0..(n / per) {
        let batch: Vec<Value> = (0..per)
            .map(|i| entry(&format!("m{:06}", chunk * per + i), i as f64))
            .collect();
        w.call("submit_many", vec!["b".into(), Value::Array(batch)]);
    }
    let mut count = 0;
    let mut prev = (0, 0);
    let lagged = loop {
        let (s_, e) = c.event();
        assert_eq!(s_, sub);
        if e["type"] == Value::from("lagged") {
            break e;
        }
        assert!(id(&e) > prev);
        prev = id(&e);
        if e["type"] == Value::from("created") {
            continue;
        }
        assert_eq!(e["type"], Value::from("change"));
        count += 1;
    };
    assert!(count < n, "{count} events before lagged");
    assert_eq!(
        lagged["resume"],
        Value::from(format!("{}-{}", prev.0, prev.1))
    );
    // The stream has ended: its id is no longer open; the connection works.
    assert!(c.quiet());
    assert_eq!(c.call("unsubscribe", vec![sub.into()]), Value::from(false));
    assert_eq!(
        get(&c.call("count", vec!["b".into()]), "count"),
        &Value::from(n)
    );
}

#[test]
fn refusals_in_the_http_routes_words() {
    let p = Podium::start(&[]);
    let mut c = Subscriber::new(p.client());
    let many: Vec<String> = (0..1001).map(|i| format!("m{i}")).collect();
    let many_refs: Vec<&str> = many.iter().map(String::as_str).collect();
    // (options, the same subscription as an HTTP query)
    let cases: Vec<(Value, String)> = vec![
        (map(&[("top", 0.into())]), "top=0".into()),
        (map(&[("top", 1001.into())]), "top=1001".into()),
        (
            map(&[("since", "yesterday".into())]),
            "since=yesterday".into(),
        ),
        (
            map(&[("members", strs(&many_refs))]),
            format!("members={}", many.join(",")),
        ),
    ];
    for (opts, query) in cases {
        let e = c.call_err("subscribe", vec!["b".into(), opts]);
        let http = p.get(&format!("/v1/boards/b/events?{query}"));
        assert_eq!(e.code, "invalid_argument", "{query}");
        assert_eq!(json!(e.code), http["error"]["code"], "{query}");
        assert_eq!(json!(e.message), http["error"]["message"], "{query}");
    }
    for (opts, needle) in [
        (
            map(&[("top", (-3).into())]),
            "top must be between 1 and 1000",
        ),
        (
            map(&[("top", "ten".into())]),
            "top must be between 1 and 1000",
        ),
        (
            map(&[("top", (1u64 << 40).into())]),
            "top must be between 1 and 1000",
        ),
        (
            map(&[("snapshot", "perhaps".into())]),
            "snapshot must be true or false",
        ),
        (map(&[("since", 12.into())]), "since must be a string"),
        (
            map(&[("members", "me".into())]),
            "members must be an array of strings",
        ),
        (map(&[("color", "red".into())]), "unknown option \"color\""),
    ] {
        let e = c.call_err("subscribe", vec!["b".into(), opts.clone()]);
        assert_eq!(e.code, "invalid_argument", "{opts}");
        assert!(e.message.contains(needle), "{opts}: {}", e.message);
    }
    let e = c.call_err("subscribe", vec!["bad\x07name".into()]);
    assert_eq!(e.code, "invalid_board_name");
    let e = c.call_err("subscribe", vec!["b".into(), "top".into()]);
    assert_eq!(e.code, "malformed_request");
    let e = c.call_err("unsubscribe", vec!["x".into()]);
    assert_eq!(e.code, "invalid_argument");
    assert_eq!(
        c.call("unsubscribe", vec![12345.into()]),
        Value::from(false)
    );

    // At most 64 open on one connection; an unsubscribe makes room, and
    // another connection has its own.
    let ids: Vec<u64> = (0..64).map(|_| c.subscribe("b", Value::Nil)).collect();
    let e = c.call_err("subscribe", vec!["b".into()]);
    assert_eq!(e.code, "invalid_argument");
    assert_eq!(
        e.message,
        "a connection has at most 64 subscriptions open: unsubscribe from one first"
    );
    let mut d = Subscriber::new(p.client());
    d.subscribe("b", Value::Nil);
    c.call("unsubscribe", vec![ids[10].into()]);
    let next = c.subscribe("b", Value::Nil);
    assert!(ids.iter().all(|&i| i < next));
    // Refused subscriptions used no place, and the 64 work.
    submit_http(&p, "z", 1.0);
    let mut subs = Vec::new();
    while !c.quiet() {
        let (s_, e) = c.event();
        if e["type"] == Value::from("change") {
            subs.push(s_);
        }
    }
    subs.sort_unstable();
    let mut want: Vec<u64> = ids.iter().copied().filter(|&i| i != ids[10]).collect();
    want.push(next);
    assert_eq!(subs, want);
}

#[test]
fn subscribing_needs_a_read_key_when_keys_are_set() {
    let read = "readkey-0123456789abcdef";
    let p = Podium::start(&["--api-key", &format!("{read}:read")]);
    let mut c = Subscriber::new(p.client());
    let e = c.call_err("subscribe", vec!["b".into()]);
    assert_eq!(e.code, "unauthorized");
    assert_eq!(
        e.message,
        "this request needs an API key: call auth(key) first"
    );
    assert_eq!(
        c.call_err("unsubscribe", vec![1.into()]).code,
        "unauthorized"
    );
    c.call("auth", vec![read.into()]);
    let sub = c.subscribe("b", map(&[("snapshot", true.into()), ("top", 3.into())]));
    let (s_, snap) = c.event();
    assert_eq!((s_, &snap["type"]), (sub, &Value::from("snapshot")));
    assert_eq!(c.call("unsubscribe", vec![sub.into()]), Value::from(true));
}
