//! Keyspace notifications: CONFIG SET / GET of `notify-keyspace-events`
//! (its letters, its refusals, the string Redis rebuilds from the bits),
//! and the `__keyspace@<db>__:<key>` / `__keyevent@<db>__:<event>`
//! messages a subscriber on a second connection gets for the writes of
//! every command family, under several flag sets, in numbered databases,
//! inside MULTI/EXEC and scripts, and for keys that expire (on access and
//! by the background sweep).
//!
//! A subscriber's messages are read up to a marker published after the
//! writes, and compared byte for byte (RESP2 arrays, RESP3 pushes).

use super::*;
use std::time::Instant;

/// The channel of the marker that ends each batch of events.
const MARK: &str = "zz-mark";

/// Reads `c`'s frames up to and including the marker message.
fn until_marker(c: &mut Conn) -> Vec<u8> {
    let end = format!("\r\n{MARK}\r\n");
    let mut out = Vec::new();
    loop {
        match c.read_reply() {
            Ok(f) => {
                let done = f.windows(end.len()).any(|w| w == end.as_bytes());
                out.extend_from_slice(&f);
                if done {
                    return out;
                }
            }
            Err(e) => {
                out.extend_from_slice(format!("<missing: {e} on {}>", c.addr()).as_bytes());
                return out;
            }
        }
    }
}

fn missing(r: &[u8]) -> bool {
    r.windows(9).any(|w| w == b"<missing:")
}

/// A subscriber pair listening on `subs` (SUBSCRIBE or PSUBSCRIBE
/// lines) and on the marker channel.
fn subscriber(d: &mut Diff, subs: &[&str]) -> (Conn, Conn) {
    let mut pair = second(d);
    // The previous group's subscriber, just dropped, is counted by a
    // server until it has read the close: the marker's PUBLISH would then
    // count it on one server and not the other.
    no_marker_subscriber(&mut pair.0);
    no_marker_subscriber(&mut pair.1);
    for line in subs.iter().copied().chain([&*format!("SUBSCRIBE {MARK}")]) {
        let a = cmd(line);
        pair.0.send(&a).expect("writing to redis");
        let _ = pair.1.send(&a);
        // A confirmation for each name.
        let n = a.len() - 1;
        let (r, p) = (read_n(&mut pair.0, n), read_n(&mut pair.1, n));
        if r != p || missing(&r) {
            d.record("subscription", line, &r, &p);
        }
    }
    pair
}

/// Waits (up to 10 s) until no connection is subscribed to the marker.
fn no_marker_subscriber(c: &mut Conn) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let numsub = cmd(&format!("PUBSUB NUMSUB {MARK}"));
    while !c.call(&numsub).ends_with(b":0\r\n") && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
}

fn read_n(c: &mut Conn, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..n {
        match c.read_reply() {
            Ok(f) => out.extend_from_slice(&f),
            Err(e) => {
                out.extend_from_slice(format!("<missing: {e}>").as_bytes());
                break;
            }
        }
    }
    out
}

/// Publishes the marker and compares what the subscriber got since the
/// last one.
fn events(d: &mut Diff, sub: &mut (Conn, Conn), what: &str) {
    d.same(&format!("PUBLISH {MARK} end"));
    let r = until_marker(&mut sub.0);
    let p = until_marker(&mut sub.1);
    if r != p || missing(&r) {
        eprintln!(
            "{what}:\n  redis:  {}\n  podium: {}",
            compact(&r),
            compact(&p)
        );
        d.record("keyspace events", what, &r, &p);
    }
}

/// The messages of `frames`, one `channel=payload` each, for a failure's
/// report (the compared bytes are clipped there).
fn compact(mut frames: &[u8]) -> String {
    let mut out = Vec::new();
    while let Ok(Some((v, n))) = support::resp::wire::parse(frames) {
        frames = &frames[n..];
        let items = v.items().unwrap_or_default();
        let text = |i: usize| {
            items
                .get(i)
                .and_then(|x| x.bytes())
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let k = items.len();
        out.push(format!(
            "{}={}",
            text(k.saturating_sub(2)),
            text(k.saturating_sub(1))
        ));
    }
    out.push(show(frames));
    out.join(" ")
}

/// A line's arguments: split on whitespace, `''` an empty argument.
fn line_args(line: &str) -> Vec<&str> {
    line.split_ascii_whitespace()
        .map(|a| if a == "''" { "" } else { a })
        .collect()
}

/// Runs each line on the group's connections (replies compared).
fn run(d: &mut Diff, lines: &[&str]) {
    for line in lines {
        d.same_args(&line_args(line));
    }
}

fn config(d: &mut Diff) {
    d.same("CONFIG GET notify-keyspace-events");
    for flags in [
        "KEA",
        "Kz",
        "Eg",
        "A",
        "KA",
        "Ex",
        "n",
        "m",
        "KEAnm",
        "K$lshzxetd",
        "g$lshzxetdE",
        "EKhgn",
        "g$",
        "AKE",
        "KKzz",
        "xyz",
        "a",
        "K E",
        "",
    ] {
        d.same_args(&["CONFIG", "SET", "notify-keyspace-events", flags]);
        d.same("CONFIG GET notify-keyspace-events");
    }
    d.same("CONFIG GET notify-*");
    // Every value is checked before any is applied.
    d.same("CONFIG SET notify-keyspace-events KEA timeout 0");
    d.same("CONFIG GET notify-keyspace-events");
    d.same("CONFIG SET timeout 0 notify-keyspace-events Kq");
    d.same("CONFIG GET notify-keyspace-events");
    d.same("CONFIG SET notify-keyspace-events");
    d.same_args(&["CONFIG", "SET", "NOTIFY-KEYSPACE-EVENTS", "Eg"]);
    d.same("CONFIG GET notify-keyspace-events");
    d.same_args(&["CONFIG", "SET", "notify-keyspace-events", ""]);
}

const SORTED_SETS: &[&str] = &[
    "ZADD z 1 a 2 b 3 c",
    "ZADD z 1 a",
    "ZADD z 5 a",
    "ZADD z CH 6 a",
    "ZADD z XX 1 nope",
    "ZADD z NX 9 a",
    "ZADD z GT 1 a",
    "ZADD nokey XX 1 a",
    "ZADD z INCR 1 b",
    "ZINCRBY z 2 c",
    "ZINCRBY z2 2 c",
    "ZREM z nope",
    "ZREM z a",
    "ZREMRANGEBYSCORE z 100 200",
    "ZADD z 10 d 11 e 12 f",
    "ZREMRANGEBYSCORE z 10 10",
    "ZREMRANGEBYRANK z 0 0",
    "ZADD lex 0 a 0 b 0 c",
    "ZREMRANGEBYLEX lex [a [b",
    "ZREMRANGEBYLEX lex - +",
    "ZPOPMIN z",
    "ZPOPMAX z 1",
    "ZPOPMIN nokey",
    "ZPOPMIN z 0",
    "ZADD src 1 a 2 b",
    "ZADD src2 2 b 3 c",
    "ZUNIONSTORE u 2 src src2",
    "ZINTERSTORE i 2 src src2",
    "ZDIFFSTORE df 2 src src2",
    "ZRANGESTORE rs src 0 0",
    "ZINTERSTORE i 2 src nokey",
    "ZINTERSTORE i 2 src nokey",
    "ZUNIONSTORE u 1 nokey",
    "ZDIFFSTORE df 2 src src",
    "ZRANGESTORE rs src 5 6",
    "ZMPOP 2 nokey src MIN COUNT 5",
    "ZMPOP 1 src2 MAX",
    "BZPOPMIN src2 0",
    "BZMPOP 0 1 z MAX COUNT 10",
    "ZUNION 2 src src2",
    "ZSCORE z a",
];

const HASHES: &[&str] = &[
    "HSET h f v",
    "HSET h f v g w",
    "HMSET h a 1",
    "HSETNX h f x",
    "HSETNX h n x",
    "HSETNX h2 n x",
    "HDEL h nope",
    "HDEL h f g",
    "HINCRBY h c 5",
    "HINCRBYFLOAT h d 1.5",
    "HINCRBY h f2 x",
    "HINCRBY h2 c 1",
    "HDEL h a n c d",
    "HDEL h2 n c",
    "HGET h2 n",
];

const STRINGS: &[&str] = &[
    "SET s v",
    "SET s v2 EX 100",
    "SET s v3 KEEPTTL",
    "SET s v4 PX 100000 GET",
    "SET s v NX",
    "SET s2 v XX",
    "SET s2 v NX",
    "SETNX s3 v",
    "SETNX s3 v",
    "SETEX s4 100 v",
    "PSETEX s5 100000 v",
    "GETSET s6 v",
    "GETSET s6 w",
    "MSET m1 a m2 b m1 c",
    "MSETNX m1 a m9 b",
    "MSETNX m7 a m8 b",
    "INCR n",
    "INCRBY n 5",
    "DECR n",
    "DECRBY n 2",
    "INCRBYFLOAT f 1.5",
    "INCRBYFLOAT f 1",
    "INCR s",
    "APPEND a x",
    "APPEND a yz",
    "SETRANGE a 1 Q",
    "SETRANGE a 1 ''",
    "SETRANGE r 2 x",
    "SETRANGE r2 0 ''",
    "GETDEL a",
    "GETDEL a",
    "GETEX s EX 100",
    "GETEX s PERSIST",
    "GETEX s PERSIST",
    "GETEX s",
    "GETEX nokey EX 10",
    "GETEX s EXAT 1",
    "SET s v",
    "SET s v PXAT 1",
    "GET s",
    "LCS m1 m2",
];

const GENERIC: &[&str] = &[
    "SET k v",
    "EXPIRE k 100",
    "PEXPIRE k 100000 NX",
    "EXPIRE k 200 GT",
    "EXPIREAT k 99999999999",
    "PERSIST k",
    "PERSIST k",
    "PERSIST nokey",
    "EXPIRE nokey 10",
    "PEXPIREAT k 1",
    "SET k v",
    "EXPIRE k -1",
    "SET k v",
    "SET k2 v",
    "DEL k nokey k2 k",
    "SET k v",
    "UNLINK k",
    "SET a 1",
    "RENAME a b",
    "RENAME b b",
    "RENAMENX b b",
    "SET c 1",
    "RENAME b c",
    "RENAMENX c d",
    "SET e 1",
    "RENAMENX d e",
    "RENAME nokey x",
    "COPY d f",
    "COPY d f",
    "COPY d f REPLACE",
    "COPY nokey g",
    "ZADD zk 1 a",
    "RENAME zk zk2",
    "COPY zk2 zk3",
    "HSET hk f v",
    "RENAME hk hk2",
    "TYPE nokey",
    "EXISTS nokey",
    "DEL d e f zk2 zk3 hk2",
];

/// Every family's writes under `KEA`, then again with new-key events.
fn families(d: &mut Diff) {
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    for flags in ["KEA", "KEAn"] {
        d.same("FLUSHALL");
        d.same(&format!("CONFIG SET notify-keyspace-events {flags}"));
        for (name, lines) in [
            ("sorted sets", SORTED_SETS),
            ("hashes", HASHES),
            ("strings", STRINGS),
            ("generic", GENERIC),
        ] {
            run(d, lines);
            events(d, &mut sub, &format!("{name} under {flags}"));
        }
    }
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Only the classes and kinds of channel the flags name.
fn flag_subsets(d: &mut Diff) {
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    for flags in [
        "Kz", "Eg", "Ex", "E$", "Kh", "KEz", "KEg$", "K", "E", "A", "gz", "KEn", "Kl",
    ] {
        d.same("FLUSHALL");
        d.same(&format!("CONFIG SET notify-keyspace-events {flags}"));
        run(
            d,
            &[
                "ZADD z 1 a 2 b",
                "ZINCRBY z 1 a",
                "ZREM z a b",
                "HSET h f v",
                "HDEL h f",
                "SET s v EX 100",
                "INCR n",
                "DEL s n",
                "SET t v PX 1",
            ],
        );
        thread::sleep(Duration::from_millis(5));
        d.same("GET t");
        events(d, &mut sub, &format!("writes under {flags}"));
    }
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Subscriptions to one key's or one event's channel.
fn specific_channels(d: &mut Diff) {
    d.same("CONFIG SET notify-keyspace-events KEA");
    let mut sub = subscriber(
        d,
        &[
            "SUBSCRIBE __keyspace@0__:watched __keyevent@0__:del",
            "PSUBSCRIBE __keyevent@0__:z*",
        ],
    );
    run(
        d,
        &[
            "ZADD watched 1 a",
            "ZADD other 1 a",
            "SET watched v",
            "DEL other",
            "HSET h f v",
            "DEL watched h",
            "ZADD other 2 b",
            "ZPOPMIN other",
        ],
    );
    events(d, &mut sub, "keyspace of one key, del events, z* events");
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Numbered databases: each key's events name its database.
fn databases(d: &mut Diff) {
    d.same("CONFIG SET notify-keyspace-events KEAn");
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    run(
        d,
        &[
            "SELECT 3",
            "ZADD z 1 a",
            "SET s v",
            "HSET h f v",
            "EXPIRE s 100",
            "MOVE z 5",
            "MOVE s 0",
            "SELECT 0",
            "SET s v2",
            "MOVE s 3",
            "COPY s s2",
            "SELECT 3",
            "COPY h h9 DB 7",
            "SWAPDB 3 4",
            "SELECT 4",
            "DEL h",
            "FLUSHDB",
            "FLUSHALL",
            "SELECT 0",
        ],
    );
    events(d, &mut sub, "databases 0, 3, 4, 5 and 7");
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// MULTI/EXEC and scripts notify per command, in order.
fn transactions_and_scripts(d: &mut Diff) {
    d.same("CONFIG SET notify-keyspace-events KEA");
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    run(
        d,
        &[
            "MULTI",
            "ZADD z 1 a",
            "SET s v",
            "ZINCRBY z 1 a",
            "INCR s",
            "DEL s",
            "HSET h f v",
            "EXEC",
        ],
    );
    events(d, &mut sub, "MULTI/EXEC");
    d.same_args(&[
        "EVAL",
        "redis.call('zadd', KEYS[1], 1, 'x'); redis.call('zrem', KEYS[1], 'x'); \
         redis.call('set', KEYS[2], 'v'); redis.call('expire', KEYS[2], 100); \
         redis.pcall('incr', KEYS[3]); redis.call('select', 2); \
         redis.call('hset', KEYS[3], 'f', 'v'); return 1",
        "3",
        "sz",
        "ss",
        "h",
    ]);
    events(d, &mut sub, "EVAL");
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Keys that expire: found on access, or by the background sweep.
fn expiry(d: &mut Diff) {
    d.same("CONFIG SET notify-keyspace-events KEA");
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    // One key at a time: the sweep may find it first, in an order of its
    // own among several.
    run(d, &["SET a v", "PEXPIRE a 50"]);
    thread::sleep(Duration::from_millis(80));
    run(d, &["GET a"]);
    run(d, &["ZADD z 1 m", "PEXPIRE z 50"]);
    thread::sleep(Duration::from_millis(80));
    run(d, &["ZSCORE z m", "SET z v"]);
    events(
        d,
        &mut sub,
        "expired on access, then a SET of the expired key",
    );
    // Left alone: the sweep finds them (Redis's active expiry and
    // podium's both run ten times a second).
    run(d, &["SELECT 6", "SET b v", "PEXPIRE b 50", "SELECT 0"]);
    thread::sleep(Duration::from_millis(600));
    events(d, &mut sub, "expired by the sweep in database 6");
    d.same("CONFIG SET notify-keyspace-events Kg");
    run(d, &["SET c v", "PEXPIRE c 30"]);
    thread::sleep(Duration::from_millis(60));
    run(d, &["GET c"]);
    d.same("CONFIG SET notify-keyspace-events Ex");
    run(d, &["SET c v", "PEXPIRE c 30"]);
    thread::sleep(Duration::from_millis(60));
    run(d, &["GET c"]);
    events(d, &mut sub, "expiry under Kg, then Ex");
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Key misses (`m`): the reads of missing keys, by reads and by the
/// writes that read a key first.
fn key_misses(d: &mut Diff) {
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    for flags in ["KEm", "Km", "KEAm", "KEA"] {
        d.same("FLUSHALL");
        d.same(&format!("CONFIG SET notify-keyspace-events {flags}"));
        run(
            d,
            &[
                "SET s v",
                "ZADD z 1 a",
                "HSET h f v",
                "GET s",
                "GET nokey",
                "MGET s n1 n2 n1",
                "EXISTS s n1 n1",
                "TYPE n1",
                "TTL n1",
                "PTTL s",
                "STRLEN n1",
                "GETRANGE n1 0 1",
                "ZSCORE nz a",
                "ZSCORE z a",
                "ZRANGE nz 0 -1",
                "ZRANGEBYSCORE nz -inf +inf",
                "ZCARD nz",
                "ZRANK nz a",
                "ZMSCORE nz a b",
                "ZUNION 2 z nz",
                "ZINTERCARD 2 nz z",
                "ZUNIONSTORE d 3 z nz nz2",
                "ZRANGESTORE d2 nz 0 -1",
                "ZRANDMEMBER nz",
                "ZSCAN nz 0",
                "HGET nh f",
                "HMGET nh f g",
                "HGETALL nh",
                "HLEN nh",
                "HSCAN nh 0",
                "LCS s n1",
                "TOUCH n1 s",
                "GETDEL n1",
                "GETEX n1 PERSIST",
                "GETSET n1 v",
                "SET n2 v GET",
                "SET n3 v",
                "COPY n4 n5",
                "MOVE n4 2",
                "OBJECT ENCODING n4",
                "MEMORY USAGE n4",
                "DEL n4",
                "ZADD n6 1 a",
                "HSET n7 f v",
                "EXPIRE n8 10",
                "RENAME n8 n9",
                "ZREM n8 a",
                "ZPOPMIN n8",
                "INCR n10",
            ],
        );
        d.same_args(&["EVAL", "return redis.call('get', KEYS[1])", "1", "n11"]);
        events(d, &mut sub, &format!("key misses under {flags}"));
    }
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

/// Commands at their edges: options that change nothing, errors after a
/// lookup, expired keys a write meets, and a blocked pop served by
/// another client's write.
fn edges(d: &mut Diff) {
    d.same("CONFIG SET notify-keyspace-events KEAn");
    let mut sub = subscriber(d, &["PSUBSCRIBE __key*__:*"]);
    run(
        d,
        &[
            "ZADD z 1 a",
            "ZADD z NX INCR 5 a",
            "ZADD z XX INCR 5 nope",
            "ZADD z LT 2 a",
            "ZADD z GT CH 2 a",
            "ZADD z INCR 0 a",
            "ZINCRBY z 0 a",
            "ZADD z 1 a 1 b 3 c",
            "ZREMRANGEBYRANK z 5 9",
            "ZREMRANGEBYLEX z [x [y",
            "ZPOPMAX z 0",
            "ZPOPMAX z 10",
            "SET s 1.5",
            "INCR s",
            "INCRBYFLOAT s x",
            "INCRBYFLOAT nokey 2",
            "HSET h f x",
            "HINCRBY h f 1",
            "HINCRBYFLOAT h f 1",
            "HINCRBYFLOAT h g 1e400",
            "HDEL s f",
            "ZREM s a",
            "EXPIRE s 0",
            "PEXPIREAT nokey 1",
            "EXPIRE nokey -5",
            "SET s v KEEPTTL GET",
            "SET s v2 XX GET",
            "SET s v3 NX GET",
            "MSETNX s v m v",
            "GETEX s PXAT 1",
            "SET k v",
            "RENAMENX k h",
            "RENAME k h",
            "COPY h h2 REPLACE",
            "COPY h h2",
            "SETRANGE sr 0 ''",
            "SETRANGE sr 3 x",
            "APPEND sr ''",
            "APPEND sr2 ''",
        ],
    );
    events(d, &mut sub, "edges of the write commands");
    // Writes meeting keys that expired meanwhile, one key at a time: the
    // key's `expired` comes before the write's events whether the active
    // expiry cycle or the write found it, but with two keys waiting, when
    // that cycle runs (on either server) decides their interleaving.
    run(d, &["SET e1 v PX 20"]);
    thread::sleep(Duration::from_millis(40));
    run(d, &["SET e1 w"]);
    events(d, &mut sub, "a string write to an expired key");
    run(d, &["ZADD e2 1 a", "PEXPIRE e2 20"]);
    thread::sleep(Duration::from_millis(40));
    run(d, &["ZADD e2 2 b"]);
    events(d, &mut sub, "a sorted-set write to an expired key");
    run(d, &["HSET e3 f v", "PEXPIRE e3 20"]);
    thread::sleep(Duration::from_millis(40));
    run(d, &["DEL e3 e4"]);
    events(d, &mut sub, "DEL of an expired key");
    // A blocked pop served by a ZADD: the pop's events follow the ZADD's.
    let mut blocked = second(d);
    let pop = cmd("BZPOPMIN bk 0");
    blocked.0.send(&pop).expect("writing to redis");
    let _ = blocked.1.send(&pop);
    thread::sleep(Duration::from_millis(100));
    run(d, &["ZADD bk 1 m"]);
    let (r, p) = (read_n(&mut blocked.0, 1), read_n(&mut blocked.1, 1));
    if r != p || missing(&r) {
        d.record("a blocked pop's reply", "BZPOPMIN bk 0", &r, &p);
    }
    events(d, &mut sub, "a blocked pop served by another client");
    run(d, &["CONFIG SET notify-keyspace-events ''"]);
}

#[test]
fn keyspace_config() {
    run_group("keyspace notification flags", config);
}

#[test]
fn keyspace_families() {
    run_group("keyspace events of every family", families);
}

#[test]
fn keyspace_flag_subsets() {
    run_group("keyspace events by flags", flag_subsets);
}

#[test]
fn keyspace_specific_channels() {
    run_group("keyspace events on named channels", specific_channels);
}

#[test]
fn keyspace_databases() {
    run_group("keyspace events in numbered databases", databases);
}

#[test]
fn keyspace_transactions_and_scripts() {
    run_group(
        "keyspace events in MULTI and scripts",
        transactions_and_scripts,
    );
}

#[test]
fn keyspace_edges() {
    run_group("keyspace events at the edges of commands", edges);
}

#[test]
fn keyspace_key_misses() {
    run_group("keyspace events of key misses", key_misses);
}

#[test]
fn keyspace_expiry() {
    run_group("keyspace events of expiry", expiry);
}
