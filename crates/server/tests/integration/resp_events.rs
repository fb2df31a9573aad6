//! podium's live board events on named Redis channels, against the real
//! binary with a raw RESP client: SUBSCRIBE `__podium__:BOARD?top=…`
//! delivers each event as a message whose payload is the event's JSON,
//! in write order, to every subscriber of the channel and to a matching
//! pattern; a refused filter is said on the channel; the forwarder stops
//! once nobody listens (PUBSUB NUMSUB) and starts again for a newcomer.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value as Json;
use support::resp::wire::{cmd, parse_one, Conn, Value};

use support::resp::Podium;

/// The next message frame: (channel, payload as JSON).
fn message(c: &mut Conn) -> (String, Json) {
    loop {
        let v = parse_one(&c.read_reply().expect("a message")).unwrap();
        let items = v.items().expect("an array").to_vec();
        let kind = items[0].text().unwrap();
        let (channel, payload) = match kind.as_str() {
            "message" => (&items[1], &items[2]),
            "pmessage" => (&items[2], &items[3]),
            _ => continue,
        };
        return (
            channel.text().unwrap(),
            serde_json::from_slice(payload.bytes().unwrap()).unwrap(),
        );
    }
}

fn subscribe(addr: &str, channel: &str, pattern: bool) -> Conn {
    let mut c = Conn::open(addr);
    let verb = if pattern { "PSUBSCRIBE" } else { "SUBSCRIBE" };
    c.send(&cmd(&format!("{verb} {channel}"))).unwrap();
    let v: Value = parse_one(&c.read_reply().unwrap()).unwrap();
    assert_eq!(v.items().unwrap()[0].text().unwrap(), verb.to_lowercase());
    c
}

#[test]
fn board_events_on_named_channels() {
    let p = Podium::start(&[]);
    let addr = p.addr();
    let mut w = Conn::open(&addr);
    w.call_str("ZADD b 10 a 20 b");
    let chan = "__podium__:b?top=2&snapshot=true";
    let mut s1 = subscribe(&addr, chan, false);
    let (ch, snap) = message(&mut s1);
    assert_eq!(ch, chan);
    assert_eq!(snap["type"], "snapshot");
    assert_eq!(snap["top"][0]["member"], "b");
    let mut pat = subscribe(&addr, "__podium__:b*", true);
    let mut s2 = subscribe(&addr, chan, false);

    // Written once SUBSCRIBE answered: delivered.
    w.call_str("ZADD b 30 c");
    for c in [&mut s1, &mut s2, &mut pat] {
        let (ch, e) = message(c);
        assert_eq!(ch, chan);
        assert_eq!(
            (e["type"].as_str(), e["member"].as_str()),
            (Some("leave"), Some("a"))
        );
        let (_, e) = message(c);
        assert_eq!(
            (e["type"].as_str(), e["member"].as_str()),
            (Some("enter"), Some("c"))
        );
        assert_eq!(e["rank"], 1);
        let (_, e) = message(c);
        assert_eq!(
            (e["type"].as_str(), e["rank"].as_u64()),
            (Some("move"), Some(2))
        );
    }

    // Every change, by board name alone.
    let mut all = subscribe(&addr, "__podium__:b", false);
    w.call_str("ZINCRBY b 1 a");
    let (_, e) = message(&mut all);
    assert_eq!(
        (e["type"].as_str(), e["member"].as_str()),
        (Some("change"), Some("a"))
    );
    assert_eq!(e["score"], 11.0);

    // A refused filter is said on the channel.
    let mut bad = subscribe(&addr, "__podium__:b?top=0", false);
    let (_, e) = message(&mut bad);
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["code"], "invalid_argument");

    // Nobody left on the channel: its forwarder stops; a newcomer gets
    // the events again.
    drop(s1);
    drop(s2);
    drop(pat);
    let t = Instant::now();
    loop {
        let v = w.call_str(&format!("PUBSUB NUMSUB {chan}"));
        if v.items().unwrap()[1].int() == Some(0) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "subscribers stayed");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let mut s3 = subscribe(&addr, "__podium__:b?top=1", false);
    w.call_str("ZADD b 100 z");
    let (_, e) = message(&mut s3);
    assert_eq!(
        (e["type"].as_str(), e["member"].as_str()),
        (Some("leave"), Some("c"))
    );
    let (_, e) = message(&mut s3);
    assert_eq!(
        (e["type"].as_str(), e["member"].as_str()),
        (Some("enter"), Some("z"))
    );
}
