//! Durability over the Redis protocol: every acknowledged write — sorted
//! sets, hashes, strings, expiries, MULTI/EXEC, a deep pipeline, renames
//! and copies — survives `kill -9`,
//! and a pipeline batch costs one fsync, not one per command.

mod support;

use support::resp::wire::{cmd, Conn};
use support::resp::Podium;

fn fsyncs(c: &mut Conn) -> u64 {
    let info = c.call_str("INFO persistence").text().expect("INFO text");
    info.lines()
        .find_map(|l| l.strip_prefix("podium_log_fsyncs:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no podium_log_fsyncs in {info:?}"))
}

#[test]
fn acknowledged_writes_survive_kill_9_and_a_pipeline_is_one_fsync() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());

    // A pipeline of 200 ZADDs sent in one write, then the 200 replies.
    let before = fsyncs(&mut c);
    let mut bytes = Vec::new();
    for i in 0..200 {
        bytes.extend(support::resp::wire::encode_command(&cmd(&format!(
            "ZADD lb {i} m{i}"
        ))));
    }
    c.send_raw(&bytes).unwrap();
    for _ in 0..200 {
        assert_eq!(c.read_reply().unwrap(), b":1\r\n");
    }
    // The batch waits once, for its last record, and only that wait wakes
    // the log's flusher: one fsync. The flusher also collects unwaited
    // records every 10 ms, so a batch whose execution a loaded machine
    // stretches across such a tick may take a second one (or a third if
    // the 200 commands arrive in two reads) — never one per write.
    let used = fsyncs(&mut c) - before;
    assert!(
        (1..=3).contains(&used),
        "200 pipelined writes took {used} fsyncs (a batch shares its fsyncs)"
    );

    assert_eq!(c.call_str("HSET h:alice name Alice level 7").int(), Some(2));
    assert_eq!(c.call_str("EXPIRE h:alice 1000").int(), Some(1));
    assert_eq!(
        c.call_str("ZINCRBY lb 1000 m0").text().as_deref(),
        Some("1000")
    );
    assert_eq!(c.call_str("MULTI").text().as_deref(), Some("OK"));
    c.call_str("ZADD lb 5000 tx1");
    c.call_str("ZREM lb m1");
    let exec = c.call(&cmd("EXEC"));
    assert_eq!(exec, b"*2\r\n:1\r\n:1\r\n");

    p.restart(); // SIGKILL, then start on the same data directory
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call_str("ZCARD lb").int(), Some(200));
    assert_eq!(c.call_str("ZREVRANK lb tx1").int(), Some(0));
    assert_eq!(c.call_str("ZREVRANK lb m0").int(), Some(1));
    assert_eq!(c.call(&cmd("ZSCORE lb m1")), b"$-1\r\n");
    assert_eq!(c.call(&cmd("ZSCORE lb m199")), b"$3\r\n199\r\n");
    assert_eq!(c.call(&cmd("HGET h:alice level")), b"$1\r\n7\r\n");
    let ttl = c.call_str("TTL h:alice").int().unwrap();
    assert!((990..=1000).contains(&ttl), "TTL after restart: {ttl}");
}

#[test]
fn acknowledged_string_writes_survive_kill_9() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());
    let ok = |c: &mut Conn, line: &str| {
        let r = c.call_str(line);
        assert!(!r.is_error(), "{line}: {r:?}");
    };
    ok(&mut c, "SET plain v");
    c.call(&support::resp::wire::args(&["SET", "bin\x00", ""]));
    ok(&mut c, "SET ex v EX 1000");
    ok(&mut c, "SET px v PX 2000000");
    ok(&mut c, "SET exat v EXAT 4102444800");
    ok(&mut c, "SET pxat v PXAT 4102444800123");
    ok(&mut c, "SET kept old EX 1000");
    ok(&mut c, "SET kept new KEEPTTL");
    ok(&mut c, "SET cleared v EX 1000");
    ok(&mut c, "SET cleared v2");
    ok(&mut c, "SETNX nx v");
    ok(&mut c, "SETEX setex 1000 v");
    ok(&mut c, "PSETEX psetex 1000000 v");
    ok(&mut c, "GETSET nx v2");
    ok(&mut c, "MSET m1 a m2 b");
    ok(&mut c, "MSETNX m3 c m4 d");
    ok(&mut c, "INCR n");
    ok(&mut c, "INCRBY n 41");
    ok(&mut c, "DECR n");
    ok(&mut c, "SET f 10.5 EX 1000");
    ok(&mut c, "INCRBYFLOAT f 0.1");
    ok(&mut c, "APPEND app hello");
    ok(&mut c, "SETRANGE app 8 !");
    ok(&mut c, "SET gone v");
    ok(&mut c, "GETDEL gone");
    ok(&mut c, "SET exd v");
    ok(&mut c, "GETEX exd EX 1000");
    ok(&mut c, "SET per v EX 1000");
    ok(&mut c, "GETEX per PERSIST");
    ok(&mut c, "SET past v");
    ok(&mut c, "GETEX past PXAT 1");
    ok(&mut c, "ZADD board 1 a");
    ok(&mut c, "SET board now-a-string");
    ok(&mut c, "HSET hash f v");
    ok(&mut c, "MSET hash s");
    ok(&mut c, "HINCRBYFLOAT h x 2.5");
    ok(&mut c, "HINCRBYFLOAT h x 0.1");

    p.restart(); // SIGKILL, then start on the same data directory
    let mut c = Conn::open(&p.addr());
    let get = |c: &mut Conn, key: &str| c.call(&cmd(&format!("GET {key}")));
    assert_eq!(get(&mut c, "plain"), b"$1\r\nv\r\n");
    assert_eq!(
        c.call(&support::resp::wire::args(&["GET", "bin\x00"])),
        b"$0\r\n\r\n"
    );
    let ttl = |c: &mut Conn, key: &str| c.call_str(&format!("TTL {key}")).int().unwrap();
    for (key, want) in [
        ("ex", 1000),
        ("px", 2000),
        ("kept", 1000),
        ("setex", 1000),
        ("psetex", 1000),
        ("f", 1000),
        ("exd", 1000),
    ] {
        let t = ttl(&mut c, key);
        assert!(
            (want - 10..=want).contains(&t),
            "TTL {key} after restart: {t}"
        );
    }
    assert_eq!(c.call_str("EXPIRETIME exat").int(), Some(4102444800));
    assert_eq!(c.call_str("PEXPIRETIME pxat").int(), Some(4102444800123));
    for key in [
        "plain", "cleared", "nx", "m1", "n", "app", "per", "board", "hash",
    ] {
        assert_eq!(ttl(&mut c, key), -1, "TTL {key}");
    }
    assert_eq!(get(&mut c, "kept"), b"$3\r\nnew\r\n");
    assert_eq!(get(&mut c, "cleared"), b"$2\r\nv2\r\n");
    assert_eq!(get(&mut c, "nx"), b"$2\r\nv2\r\n");
    assert_eq!(
        c.call(&cmd("MGET m1 m2 m3 m4")),
        b"*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"
    );
    assert_eq!(get(&mut c, "n"), b"$2\r\n41\r\n");
    assert_eq!(get(&mut c, "f"), b"$4\r\n10.6\r\n");
    assert_eq!(get(&mut c, "app"), b"$9\r\nhello\x00\x00\x00!\r\n");
    assert_eq!(c.call_str("EXISTS gone past").int(), Some(0));
    assert_eq!(get(&mut c, "per"), b"$1\r\nv\r\n");
    assert_eq!(c.call_str("TYPE board").text().as_deref(), Some("string"));
    assert_eq!(
        c.call(&cmd("ZCARD board")),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(get(&mut c, "hash"), b"$1\r\ns\r\n");
    assert_eq!(c.call(&cmd("HGET h x")), b"$3\r\n2.6\r\n");
}

#[test]
fn api_keys_gate_the_redis_protocol_by_scope() {
    let p = Podium::start(&[
        "--api-key",
        "readerkey0000000000:read",
        "--api-key",
        "writerkey000000000:write",
    ]);
    let mut c = Conn::open(&p.addr());
    assert_eq!(
        c.call(&cmd("ZADD lb 1 a")),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        c.call(&cmd("AUTH nottherightkey0000")),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(c.call(&cmd("AUTH readerkey0000000000")), b"+OK\r\n");
    assert_eq!(
        c.call(&cmd("ZADD lb 1 a")),
        b"-NOPERM this user has no permissions to run the 'zadd' command\r\n"
    );
    assert_eq!(c.call(&cmd("ZCARD lb")), b":0\r\n");
    // AUTH user key: the user name is ignored, the key decides.
    assert_eq!(c.call(&cmd("AUTH default writerkey000000000")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("ZADD lb 1 a")), b":1\r\n");
    assert_eq!(
        c.call(&cmd("FLUSHALL")),
        b"-NOPERM this user has no permissions to run the 'flushall' command\r\n"
    );
    // Deleting, expiring or overwriting a board is admin work.
    for line in ["DEL lb", "UNLINK lb", "PEXPIRE lb 1"] {
        assert_eq!(
            c.call(&cmd(line)),
            b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
            "{line}"
        );
    }
    assert_eq!(
        c.call(&cmd("ZUNIONSTORE lb 1 lb")),
        b"-NOPERM this user has no permissions to run the 'zunionstore' command\r\n"
    );
    assert_eq!(c.call(&cmd("ZCARD lb")), b":1\r\n");
    // A hash is member data: a write key's to delete.
    assert_eq!(c.call(&cmd("HSET h f v")), b":1\r\n");
    assert_eq!(c.call(&cmd("DEL h")), b":1\r\n");
    // Renaming or copying a board, or onto one, is admin work; a hash is
    // a write key's to move.
    for line in ["RENAME lb x", "RENAMENX lb x", "COPY lb x", "COPY nokey lb"] {
        assert_eq!(
            c.call(&cmd(line)),
            b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
            "{line}"
        );
    }
    assert_eq!(c.call(&cmd("HSET h f v")), b":1\r\n");
    assert_eq!(c.call(&cmd("RENAME h h2")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("COPY h2 h3")), b":1\r\n");
    assert_eq!(
        c.call(&cmd("BZPOPMIN lb 0")),
        b"*3\r\n$2\r\nlb\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(c.call(&cmd("ZADD lb 1 a")), b":1\r\n");
    // Another connection starts unauthenticated.
    let mut d = Conn::open(&p.addr());
    assert_eq!(
        d.call(&cmd("ZCARD lb")),
        b"-NOAUTH Authentication required.\r\n"
    );
}

#[test]
fn renamed_and_copied_keys_survive_kill_9() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call_str("ZADD lb 1 a 2 b 3 c").int(), Some(3));
    assert_eq!(c.call_str("HSET h f v").int(), Some(1));
    assert_eq!(c.call_str("EXPIRE lb 1000").int(), Some(1));
    assert_eq!(c.call(&cmd("RENAME lb season")), b"+OK\r\n");
    assert_eq!(c.call_str("COPY season copy").int(), Some(1));
    assert_eq!(c.call_str("ZADD copy 4 d").int(), Some(1));
    assert_eq!(c.call_str("COPY h season REPLACE").int(), Some(1));
    assert_eq!(c.call_str("RENAMENX copy h").int(), Some(0));
    assert_eq!(c.call(&cmd("RENAME copy board2")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("RENAME h h2")), b"+OK\r\n");

    p.restart();
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call(&cmd("TYPE season")), b"+hash\r\n");
    assert_eq!(c.call(&cmd("HGET season f")), b"$1\r\nv\r\n");
    assert_eq!(c.call(&cmd("HGET h2 f")), b"$1\r\nv\r\n");
    assert_eq!(c.call_str("EXISTS lb copy h").int(), Some(0));
    assert_eq!(c.call_str("ZCARD board2").int(), Some(4));
    let ttl = c.call_str("TTL board2").int().unwrap();
    assert!((990..=1000).contains(&ttl), "the copied expiry: {ttl}");
    assert_eq!(c.call_str("TTL season").int(), Some(-1));
}
