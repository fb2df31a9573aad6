//! Pub/Sub: SUBSCRIBE, PSUBSCRIBE and their UNSUBSCRIBE forms (one
//! confirmation frame per name), RESP2's subscribed mode and its refusals,
//! PING there, RESET, messages and pattern messages delivered to second
//! connections in publish order from two publishers, PUBLISH's counts,
//! PUBSUB's introspection, MULTI and scripts; and a subscriber that stops
//! reading, which is disconnected rather than buffered for.

use std::time::Instant;

use super::*;

/// Sends `line` on `(redis, podium)` and reads `n` frames from each.
fn frames_on(r: &mut Conn, p: &mut Conn, line: &str, n: usize) -> (Vec<u8>, Vec<u8>) {
    r.send(&cmd(line)).expect("writing to redis");
    let _ = p.send(&cmd(line));
    (read_frames(r, n), read_frames(p, n))
}

/// `n` frames from `c`, concatenated (an error's text when one is missing,
/// marked so that two missing frames never compare equal).
fn read_frames(c: &mut Conn, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..n {
        match c.read_reply() {
            Ok(f) => out.extend_from_slice(&f),
            Err(e) => {
                out.extend_from_slice(format!("<missing: {e} on {}>", c.addr()).as_bytes());
                break;
            }
        }
    }
    out
}

fn missing(r: &[u8]) -> bool {
    r.windows(9).any(|w| w == b"<missing:")
}

/// `line` on the group's own connections, answered with `n` frames.
fn frames(d: &mut Diff, line: &str, n: usize) {
    let (r, p) = frames_on(&mut d.redis, &mut d.podium, line, n);
    if r != p || missing(&r) {
        d.record("frames", line, &r, &p);
    }
}

/// `line` on a second pair, answered with `n` frames, compared.
fn on(d: &mut Diff, pair: &mut (Conn, Conn), line: &str, n: usize) {
    let (r, p) = frames_on(&mut pair.0, &mut pair.1, line, n);
    if r != p || missing(&r) {
        d.record("frames on a second connection", line, &r, &p);
    }
}

/// Reads `n` deliveries a subscriber pair got, compared.
fn delivered(d: &mut Diff, pair: &mut (Conn, Conn), what: &str, n: usize) {
    let r = read_frames(&mut pair.0, n);
    let p = read_frames(&mut pair.1, n);
    if r != p || missing(&r) {
        d.record("messages delivered", what, &r, &p);
    }
}

/// The value of `field` in `INFO stats` on a connection.
fn info_field(c: &mut Conn, field: &str) -> String {
    let info = c.call_str("INFO stats").text().unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("?")
        .trim()
        .to_string()
}

/// Waits until `PUBSUB NUMSUB channel` is `n` on both servers (a closed
/// connection's subscriptions go when its task ends).
fn wait_numsub(d: &mut Diff, channel: &str, n: i64) {
    let line = format!("PUBSUB NUMSUB {channel}");
    let count = |c: &mut Conn| {
        c.call_str(&line)
            .items()
            .and_then(|v| v.get(1).and_then(|x| x.int()))
            .unwrap_or(-1)
    };
    let t = Instant::now();
    loop {
        let (r, p) = (count(&mut d.redis), count(&mut d.podium));
        if r == n && p == n {
            return;
        }
        if t.elapsed() > Duration::from_secs(10) {
            d.fail(&line, &format!("redis has {r}, podium {p}, not {n}"), b"");
            return;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn subscribed_mode(d: &mut Diff) {
    // Nothing to leave: a null name and 0.
    frames(d, "UNSUBSCRIBE", 1);
    frames(d, "PUNSUBSCRIBE", 1);
    frames(d, "UNSUBSCRIBE nope other", 2);
    // A name twice is confirmed twice, counted once.
    frames(d, "SUBSCRIBE a a b", 3);
    frames(d, "PSUBSCRIBE h* x?", 2);
    frames(d, "SUBSCRIBE a", 1);
    // RESP2 allows only the subscription commands, PING (an array),
    // QUIT and RESET; RESP3 allows everything.
    d.same("PING");
    d.same("PING hello");
    d.same("GET a");
    d.same("ECHO x");
    d.same("CONFIG GET maxclients");
    d.same("MULTI");
    d.same("DISCARD");
    d.same("PUBSUB NUMSUB a b c");
    d.same("PUBSUB NUMPAT");
    d.same("PUBLISH nowhere x");
    d.same("NOSUCHCOMMAND x");
    d.same("SUBSCRIBE");
    frames(d, "UNSUBSCRIBE a", 1);
    frames(d, "PUNSUBSCRIBE h* nope", 2);
    frames(d, "UNSUBSCRIBE b", 1);
    frames(d, "PUNSUBSCRIBE", 1);
    // Out of subscribed mode again.
    d.same("PING");
    d.same("ECHO x");
    // UNSUBSCRIBE with no names leaves each channel (one here: Redis's
    // order of several is its hash table's).
    frames(d, "SUBSCRIBE only", 1);
    frames(d, "PSUBSCRIBE p*", 1);
    frames(d, "UNSUBSCRIBE", 1);
    frames(d, "PUNSUBSCRIBE", 1);
    // RESET leaves every subscription, without confirmations.
    frames(d, "SUBSCRIBE r1 r2", 2);
    frames(d, "PSUBSCRIBE r*", 1);
    d.same("RESET");
    if d.proto == 3 {
        d.hello("HELLO 3");
    }
    d.same("PING");
    d.same("PUBSUB NUMSUB r1 r2");
    d.same("PUBSUB NUMPAT");
    d.same("PUBLISH r1 x");
    // Confirmations and messages are pushed even with replies off.
    d.redis
        .send(&cmd("CLIENT REPLY OFF"))
        .expect("writing to redis");
    let _ = d.podium.send(&cmd("CLIENT REPLY OFF"));
    frames(d, "SUBSCRIBE quiet", 1);
    d.redis.send(&cmd("PING")).expect("writing to redis");
    let _ = d.podium.send(&cmd("PING"));
    frames(d, "UNSUBSCRIBE quiet", 1);
    d.same("CLIENT REPLY ON");
    d.same("PING");
    // Argument errors.
    for line in [
        "PSUBSCRIBE",
        "PUBLISH a",
        "PUBLISH a b c",
        "PUBSUB",
        "PUBSUB FOO",
        "PUBSUB CHANNELS a b",
        "PUBSUB channels a b c",
        "PUBSUB NUMPAT x",
        "PUBSUB HELP x",
        "PUBSUB HELP",
        "PUBSUB NUMSUB",
        "PUBSUB CHANNELS",
    ] {
        d.same(line);
    }
}

fn delivery(d: &mut Diff) {
    let mut sub = second(d);
    on(d, &mut sub, "SUBSCRIBE news", 1);
    on(d, &mut sub, "PSUBSCRIBE n*", 1);
    d.same("PUBLISH news hello");
    d.same("PUBLISH nope x");
    d.same("PUBLISH other x");
    d.same_args(&["PUBLISH", "news", "a\r\nb\0c"]);
    delivered(d, &mut sub, "news hello, nope x, news a\\r\\nb\\0c", 5);
    d.sorted("PUBSUB CHANNELS");
    d.same("PUBSUB CHANNELS n*");
    d.same("PUBSUB CHANNELS x*");
    d.same("PUBSUB NUMSUB news other news");
    d.same("PUBSUB NUMPAT");
    for field in ["pubsub_channels", "pubsub_patterns"] {
        let (r, p) = (
            info_field(&mut d.redis, field),
            info_field(&mut d.podium, field),
        );
        if r != p {
            d.record("INFO stats", field, r.as_bytes(), p.as_bytes());
        }
    }
    // Two publishers, one after the other: the subscriber gets their
    // messages in that order.
    let mut other = second(d);
    for i in 0..20 {
        if i % 2 == 0 {
            d.same(&format!("PUBLISH news m{i}"));
        } else {
            on(d, &mut other, &format!("PUBLISH news m{i}"), 1);
        }
    }
    delivered(d, &mut sub, "m0 … m19 (and their pmessages)", 40);
    // A second subscriber on the same channel.
    let mut sub2 = second(d);
    on(d, &mut sub2, "SUBSCRIBE news", 1);
    d.same("PUBSUB NUMSUB news");
    d.same("PUBLISH news both");
    delivered(d, &mut sub, "both", 2);
    delivered(d, &mut sub2, "both", 1);
    on(d, &mut sub, "UNSUBSCRIBE news", 1);
    d.same("PUBLISH news after");
    delivered(d, &mut sub, "after (pattern only)", 1);
    delivered(d, &mut sub2, "after", 1);
    // A closed connection's subscriptions end.
    drop(sub2);
    wait_numsub(d, "news", 0);
    d.same("PUBLISH news gone");
    delivered(d, &mut sub, "gone (pattern only)", 1);
    drop(sub);
    thread::sleep(Duration::from_millis(50));
    d.same("PUBSUB NUMPAT");
    // In RESP3 a subscriber may block, and gets its messages meanwhile.
    if d.proto == 3 {
        let mut blocked = second(d);
        on(d, &mut blocked, "SUBSCRIBE waiting", 1);
        blocked
            .0
            .send(&cmd("BZPOPMIN bk 0"))
            .expect("writing to redis");
        let _ = blocked.1.send(&cmd("BZPOPMIN bk 0"));
        thread::sleep(Duration::from_millis(100));
        d.same("PUBLISH waiting while-blocked");
        delivered(d, &mut blocked, "a message while blocked", 1);
        d.same("ZADD bk 1 m");
        delivered(d, &mut blocked, "the pop", 1);
    }
    // In RESP3 a connection may publish to itself: the message comes
    // before PUBLISH's reply.
    if d.proto == 3 {
        frames(d, "SUBSCRIBE self", 1);
        frames(d, "PUBLISH self me", 2);
        d.same("GET self");
        frames(d, "UNSUBSCRIBE self", 1);
    }
}

fn patterns(d: &mut Diff) {
    let channels = [
        "abc", "abd", "ab", "acx", "a", "*x", "zed", "hello", "h\\llo", "[x]", "a-b",
    ];
    for pattern in [
        "a[bc]?", "\\*x", "[^z]*", "h?llo", "a*", "*", "[a-c]-b", "\\[x]", "h\\\\llo", "a[",
    ] {
        let mut sub = second(d);
        on(d, &mut sub, &format!("PSUBSCRIBE {pattern}"), 1);
        let mut got = 0;
        for ch in channels {
            if let Some(v) = d.same_args(&["PUBLISH", ch, "m"]) {
                got += v.int().unwrap_or(0) as usize;
            }
        }
        delivered(d, &mut sub, &format!("pattern {pattern}"), got);
        on(d, &mut sub, &format!("PUNSUBSCRIBE {pattern}"), 1);
    }
}

fn transactions_and_scripts(d: &mut Diff) {
    // Redis 7.0 runs SUBSCRIBE queued in MULTI; EXEC's reply holds each
    // confirmation (an array of two commands' replies, followed by a
    // third frame: SUBSCRIBE of two channels answers twice).
    d.same("MULTI");
    d.same("SUBSCRIBE t1 t2");
    d.same("PSUBSCRIBE t*");
    frames(d, "EXEC", 2);
    frames(d, "UNSUBSCRIBE t1 t2", 2);
    frames(d, "PUNSUBSCRIBE t*", 1);
    // Scripts may publish, never subscribe.
    d.same_args(&["EVAL", "return redis.call('subscribe','x')", "0"]);
    d.same_args(&["EVAL", "return redis.pcall('psubscribe','x')", "0"]);
    d.same_args(&["EVAL", "return redis.call('unsubscribe')", "0"]);
    d.same_args(&["EVAL", "return redis.call('publish','x','y')", "0"]);
    let mut sub = second(d);
    on(d, &mut sub, "SUBSCRIBE x", 1);
    d.same_args(&[
        "EVAL",
        "return redis.call('publish','x','from-a-script')",
        "0",
    ]);
    d.same_args(&[
        "EVAL_RO",
        "return redis.call('publish','x','read-only')",
        "0",
    ]);
    d.same_args(&["EVAL", "return redis.call('pubsub','numsub','x')", "0"]);
    delivered(d, &mut sub, "from scripts", 1);
}

#[test]
fn pubsub_subscribed_mode() {
    run_group("pubsub subscribed mode", subscribed_mode);
}

#[test]
fn pubsub_delivery() {
    run_group("pubsub delivery", delivery);
}

#[test]
fn pubsub_patterns() {
    run_group("pubsub patterns", patterns);
}

#[test]
fn pubsub_transactions_and_scripts() {
    run_group("pubsub in MULTI and scripts", transactions_and_scripts);
}

/// `used_memory_rss` of INFO memory.
fn rss(c: &mut Conn) -> u64 {
    let info = c.call_str("INFO memory").text().unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory_rss:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// A subscriber that never reads is disconnected once 32 MB of messages
/// wait for it (Redis's pub/sub output limit); the server's memory does
/// not grow with what is published after.
#[test]
fn pubsub_a_subscriber_that_stops_reading_is_disconnected() {
    let mut pair = Pair::start();
    let addr = pair.other_addr();
    let mut publisher = Conn::open(&addr);
    let mut slow = Conn::open(&addr);
    slow.call(&cmd("SUBSCRIBE flood"));
    let before = rss(&mut publisher);
    let payload = vec![b'x'; 1 << 20];
    let mut cut_off = None;
    for i in 0..400 {
        let reply = publisher.call(&args(&[b"PUBLISH".as_slice(), b"flood", &payload]));
        if reply == b":0\r\n" {
            cut_off = Some(i);
            break;
        }
    }
    let after = rss(&mut publisher);
    let cut_off = cut_off.expect("the subscriber was not disconnected after 400 MB");
    assert!(cut_off < 200, "disconnected only after {cut_off} MB");
    // What the socket buffers held plus at most the 32 MB queue, the
    // batch being written and the allocator's slack.
    assert!(
        after < before + (160 << 20),
        "rss grew from {before} to {after} bytes"
    );
    let (_, closed) = slow.drain_until_close(Duration::from_secs(10));
    assert!(closed, "the slow subscriber's connection stays open");
    assert_eq!(
        publisher.call(&cmd("PUBSUB NUMSUB flood")),
        b"*2\r\n$5\r\nflood\r\n:0\r\n"
    );
    assert!(pair.other_running(), "{}", pair.other_output());
}
