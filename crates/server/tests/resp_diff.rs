//! Differential tests of podium's Redis protocol (docs/spec.md §4 "Redis
//! protocol"): the same commands go to a real redis-server (Debian's
//! 7.0) and to podium, and the replies must be the same bytes.
//!
//! - hand-written sequences for every command and option of docs/spec.md §4, each
//!   run in RESP2 and again in RESP3 (after `HELLO 3`);
//! - ZRANK/ZREVRANK WITHSCORE (Redis 7.2, absent from Debian's 7.0)
//!   against hand-written expected bytes;
//! - a seeded random command stream, pipelined in random batches;
//! - bad input (huge bulk lengths, truncated frames, megabyte inline
//!   commands, malformed frames) with a second connection kept open
//!   across the attacks.
//!
//! redis-server must be installed: `scripts/test.sh` installs it. Without
//! it these tests fail and say so. `RESP_DIFF_AGAINST=redis` runs them
//! against a second redis-server instead of podium (the harness checking
//! itself).

mod resp;

use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use resp::diff::{clip, Cmp, Diff};
use resp::wire::{args, cmd, encode_command, parse_one, show, show_args, Args, Conn, Value};
use resp::Pair;

/// Runs `group` in RESP2 and then RESP3 on one pair of servers and fails
/// with every mismatch of both runs.
fn run_group(name: &str, group: fn(&mut Diff)) {
    let mut pair = Pair::start();
    let mut all = Vec::new();
    let mut total = 0;
    for proto in [2, 3] {
        let mut d = pair.diff(proto, name);
        group(&mut d);
        total += d.count();
        all.extend(d.mismatches().iter().cloned());
    }
    assert!(
        pair.other_running(),
        "podium exited during {name}:\n{}",
        pair.other_output()
    );
    eprintln!("{name}: {total} commands, {} mismatches", all.len());
    assert!(
        all.is_empty(),
        "{} of {total} replies differ between redis-server and podium in {name}:\n{}",
        all.len(),
        all.join("\n")
    );
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ------------------------------------------------------------ connection

fn connection(d: &mut Diff) {
    d.same("PING");
    d.same("PING hello");
    d.same("PING a b");
    d.same("ping");
    d.same("PiNg");
    d.same("ECHO hello");
    d.same("ECHO");
    d.same("ECHO a b");
    d.same_args(&[&b"ECHO"[..], b""]);
    d.same_args(&[&b"ECHO"[..], b"a\x00b\xff\r\n"]);
    d.same("SELECT 0");
    d.same("SELECT");
    d.same("SELECT abc");

    // HELLO: without a version it only reports; 2 and 3 switch.
    d.hello("HELLO");
    let back = if d.proto == 3 { "HELLO 3" } else { "HELLO 2" };
    d.hello("HELLO 2");
    d.same("ZADD k 1.5 a");
    d.same("ZSCORE k a");
    d.same("HGETALL nokey");
    d.hello("HELLO 3");
    d.same("ZSCORE k a");
    d.same("ZSCORE k nosuch");
    d.same("ZRANGE k 0 -1 WITHSCORES");
    d.same("HGETALL nokey");
    d.hello(back);
    d.same("HELLO 4");
    d.same("HELLO 1");
    d.same("HELLO abc");
    d.hello(&format!("{back} SETNAME conn1"));
    d.same("CLIENT GETNAME");
    d.same("HELLO 3 FOO");

    // AUTH on a server without passwords / API keys.
    d.same("AUTH onlypassword");
    d.same("AUTH nosuchuser pw");
    d.same("AUTH");

    // CLIENT SETNAME / GETNAME.
    d.same("CLIENT SETNAME myname");
    d.same("CLIENT GETNAME");
    d.same_args(&["CLIENT", "SETNAME", "bad name"]);
    d.same_args(&["CLIENT", "SETNAME", "bad\nname"]);
    d.same("CLIENT GETNAME");
    d.same_args(&["CLIENT", "SETNAME", ""]);
    d.same("CLIENT GETNAME");
    d.same("CLIENT SETNAME");
    d.same("CLIENT");
    d.same("CLIENT NOSUCHSUB");
    d.same("client setname lower");
    d.same("CLIENT GETNAME");

    // CLIENT SETINFO is Redis 7.2 (Debian's 7.0 lacks it): redis-py sends
    // it on connect. podium answers +OK as 7.2 does.
    d.podium_expect(&cmd("CLIENT SETINFO LIB-NAME redis-py"), b"+OK\r\n");
    d.podium_expect(&cmd("CLIENT SETINFO lib-ver 5.0.0"), b"+OK\r\n");
    d.podium_check(&cmd("CLIENT SETINFO nosuchattr x"), |v| {
        if v.is_error() {
            Ok(())
        } else {
            Err("expected an error for an unknown attribute".into())
        }
    });

    // COMMAND, INFO, CONFIG GET: must answer, not diffed.
    d.podium_check(&cmd("COMMAND"), |v| match v.items() {
        Some(items) if !items.is_empty() => Ok(()),
        _ => Err("COMMAND: expected a non-empty array".into()),
    });
    d.podium_check(&cmd("COMMAND COUNT"), |v| match v.int() {
        Some(n) if n > 0 => Ok(()),
        _ => Err("COMMAND COUNT: expected a positive integer".into()),
    });
    d.podium_check(&cmd("COMMAND DOCS"), |_| Ok(()));
    let proto = d.proto;
    d.podium_check(&cmd("CONFIG GET maxmemory"), move |v| match (proto, v) {
        (2, Value::Array(items)) if items.len() % 2 == 0 => Ok(()),
        (3, Value::Map(_)) => Ok(()),
        _ => Err("CONFIG GET: expected an array of pairs (RESP2) or a map (RESP3)".into()),
    });
    d.podium_check(&cmd("CONFIG GET save appendonly"), move |v| {
        match (proto, v) {
            (2, Value::Array(items)) if items.len() % 2 == 0 => Ok(()),
            (3, Value::Map(_)) => Ok(()),
            _ => Err("CONFIG GET: expected an array of pairs (RESP2) or a map (RESP3)".into()),
        }
    });
    d.same("CONFIG GET");
    d.same("ZADD k 2 b");
    d.same("HSET h f v");
    let info_type = if proto == 3 { "verbatim" } else { "bulk" };
    d.podium_check(&cmd("INFO"), move |v| {
        let ok_type = matches!((proto, v), (2, Value::Bulk(_)) | (3, Value::Verbatim(_)));
        if !ok_type {
            return Err(format!("INFO: expected a {info_type} string like Redis"));
        }
        let text = v.text().unwrap_or_default();
        for needle in [
            "# Server\r\n",
            "# Clients\r\n",
            "connected_clients:",
            "# Memory\r\n",
            "used_memory:",
            "# Keyspace\r\n",
            "db0:keys=2,",
        ] {
            if !text.contains(needle) {
                return Err(format!("INFO: no {needle:?}"));
            }
        }
        Ok(())
    });
    d.podium_check(&cmd("INFO memory"), |v| {
        let text = v.text().unwrap_or_default();
        let used = text
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|n| n.trim().parse::<u64>().ok());
        match used {
            Some(n) if n > 0 => Ok(()),
            _ => Err("INFO memory: no positive used_memory".into()),
        }
    });
    d.podium_check(&cmd("INFO keyspace"), |v| {
        let text = v.text().unwrap_or_default();
        if text.contains("# Keyspace") && text.contains("db0:keys=2") {
            Ok(())
        } else {
            Err("INFO keyspace: expected db0:keys=2".into())
        }
    });

    // Unknown commands: the error names the command and its first args,
    // and the connection stays usable.
    d.same("FOO");
    d.same("FOO a b");
    d.same("foo bar");
    d.same_args(&["FOO".to_string(), "x".repeat(200), "y".to_string()]);
    d.same_args(&["NOSUCH", "with space", "it's"]);
    d.same("GETX k");
    d.same("PING");
}

#[test]
fn connection_commands() {
    run_group("connection", connection);
}

/// Inline commands and RESP framing edge cases that keep the connection
/// open, on both servers, plus QUIT.
#[test]
fn inline_and_framing() {
    run_group("framing", |d| {
        d.raw(b"PING\r\n");
        d.raw(b"PING\n");
        d.raw(b"ECHO hello\r\n");
        d.raw(b"ECHO \"a b\"\r\n");
        d.raw(b"ECHO 'a b'\r\n");
        d.raw(b"ECHO \"\\x41\\n\"\r\n");
        d.raw(b"ZADD il 1 a 2 b\r\n");
        d.raw(b"ZRANGE il 0 -1 WITHSCORES\r\n");
        d.raw(b"  zcard   il  \r\n");
        d.raw(b"\r\n\r\nPING\r\n");
        d.raw(b"*0\r\nPING\r\n");
        d.raw(b"*-1\r\nPING\r\n");
        d.raw(b"FOO a b\r\n");
        d.raw(b"*1\r\n$4\r\nPING\r\n");
        d.raw(b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n");
        // One reply per command of a pipeline, in order.
        for _ in 0..3 {
            d.redis
                .send_raw(b"PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nFOO\r\n*1\r\n$4\r\nPING\r\n")
                .unwrap();
            d.podium
                .send_raw(b"PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nFOO\r\n*1\r\n$4\r\nPING\r\n")
                .unwrap();
        }
        for i in 0..12 {
            let r = d.redis.read_reply().unwrap();
            match d.podium.read_reply() {
                Ok(p) if p == r => {}
                Ok(p) => d.record(&format!("pipelined reply {i}"), "mixed pipeline", &r, &p),
                Err(e) => {
                    d.record(
                        &format!("pipelined reply {i}: {e}"),
                        "mixed pipeline",
                        &r,
                        b"",
                    );
                    break;
                }
            }
        }
        // A frame split across writes.
        for part in [&b"*2\r\n$4\r\nEC"[..], b"HO\r\n$5\r", b"\nhel", b"lo\r\n"] {
            d.redis.send_raw(part).unwrap();
            let _ = d.podium.send_raw(part);
            thread::sleep(Duration::from_millis(30));
        }
        let r = d.redis.read_reply().unwrap();
        match d.podium.read_reply() {
            Ok(p) if p == r => {}
            Ok(p) => d.record("split frame", "ECHO hello in 4 writes", &r, &p),
            Err(e) => d.record(&format!("split frame: {e}"), "ECHO hello", &r, b""),
        }
        // QUIT answers +OK and closes (on its own connections).
        d.raw_until_close(b"*1\r\n$4\r\nQUIT\r\n", Duration::from_secs(3));
        d.raw_until_close(b"PING\r\nQUIT\r\nPING\r\n", Duration::from_secs(3));
        d.same("PING");
    });
}

// ----------------------------------------------------------------- keys

fn keys(d: &mut Diff) {
    d.same("DBSIZE");
    d.same("ZADD z1 1 a 2 b");
    d.same("ZADD z2 1 a");
    d.same("ZADD zeta 5 x");
    d.same("HSET h1 f v");
    d.same("HSET h2 f v g w");
    d.same_args(&["ZADD", "star*key", "1", "m"]);
    d.same_args(&["HSET", "sp ace", "f", "v"]);
    d.same("DBSIZE");
    d.same("DBSIZE extra");

    d.same("TYPE z1");
    d.same("TYPE h1");
    d.same("TYPE nosuch");
    d.same("TYPE");
    d.same("TYPE a b");

    d.same("EXISTS z1");
    d.same("EXISTS z1 h1 nosuch");
    d.same("EXISTS z1 z1 z1");
    d.same("EXISTS nosuch");
    d.same("EXISTS");

    for pattern in [
        "*",
        "z*",
        "h?",
        "[zh]1",
        "*[0-9]",
        "z?",
        "[^z]*",
        "[a-h]*",
        "star\\*key",
        "*a*",
        "nomatch*",
        "?",
        "z[!1]",
        "*e*a*",
    ] {
        d.sorted(&format!("KEYS {pattern}"));
    }
    d.same("KEYS");

    // SCAN: the union of all pages to cursor 0.
    d.scan_union(|c| args(&["SCAN", c]), false);
    d.scan_union(|c| args(&["SCAN", c, "COUNT", "1"]), false);
    d.scan_union(|c| args(&["SCAN", c, "MATCH", "z*"]), false);
    d.scan_union(|c| args(&["SCAN", c, "MATCH", "h*", "COUNT", "2"]), false);
    d.scan_union(|c| args(&["SCAN", c, "TYPE", "zset"]), false);
    d.scan_union(|c| args(&["SCAN", c, "TYPE", "hash"]), false);
    d.scan_union(|c| args(&["SCAN", c, "type", "string"]), false);
    d.same("SCAN");
    d.same("SCAN abc");
    d.same("SCAN 0 COUNT 0");
    d.same("SCAN 0 COUNT abc");
    d.same("SCAN 0 MATCH");
    d.same("SCAN 0 FOO bar");

    d.same("DEL z2 nosuch h2");
    d.same("DEL z2");
    d.same("DEL");
    d.same("UNLINK zeta h1 nosuch");
    d.same("UNLINK");
    d.same_args(&["DEL", "star*key", "sp ace", ""]);
    d.sorted("KEYS *");
    d.same("DBSIZE");
    d.same("FLUSHDB");
    d.same("DBSIZE");
    d.same("ZADD a 1 m");
    d.same("HSET b f v");
    d.same("FLUSHALL");
    d.same("DBSIZE");
    d.same("EXISTS a b");
    d.same("FLUSHDB extra");

    // Keys Redis takes as any bytes: empty, and not UTF-8. A hash key may
    // be any bytes in podium too, but a sorted-set key names a board
    // (docs/spec.md §1: 1 to 200 bytes of UTF-8 without control characters), so
    // podium refuses those ZADDs (checked on podium alone; Redis would
    // accept them) and the commands after them use only keys both take.
    d.same("ZADD z1 1 a");
    d.podium_expect(
        &args(&["ZADD", "", "1", "empty-key"]),
        b"-ERR board name must be 1 to 200 bytes of UTF-8 without control characters\r\n",
    );
    d.podium_expect(
        &args(&[&b"ZADD"[..], b"bin\x00\xffkey", b"1", b"m"]),
        b"-ERR a sorted-set key must be UTF-8 (it names a board)\r\n",
    );
    d.podium_expect(
        &args(&["ZADD", "ctl\x01key", "1", "m"]),
        b"-ERR board name must be 1 to 200 bytes of UTF-8 without control characters\r\n",
    );
    d.podium_expect(
        &args(&["ZADD", &"k".repeat(201), "1", "m"]),
        b"-ERR board name must be 1 to 200 bytes of UTF-8 without control characters\r\n",
    );
    d.same_args(&["ZADD", &"k".repeat(200), "1", "m"]);
    d.same_args(&["ZADD", "\u{e9}t\u{e9}", "1", "m"]);
    d.same_args(&["HSET", "", "f", "v"]);
    d.same_args(&["TYPE", ""]);
    d.same_args(&["ZADD", "", "1", "m"]);
    d.same_args(&[&b"HSET"[..], b"hbin\xff", b"f", b"v"]);
    d.same_args(&[&b"ZSCORE"[..], b"bin\x00\xffkey", b"m"]);
    d.same_args(&[&b"TYPE"[..], b"bin\x00\xffkey"]);
    d.same_args(&[&b"TYPE"[..], b"hbin\xff"]);
    d.same_args(&[&b"ZADD"[..], b"hbin\xff", b"1", b"m"]);
    d.same("DBSIZE");
    d.sorted("KEYS *");
    d.scan_union(|c| args(&["SCAN", c]), false);
    d.same_args(&[
        &b"DEL"[..],
        b"",
        b"bin\x00\xffkey",
        b"hbin\xff",
        "k".repeat(200).as_bytes(),
        "\u{e9}t\u{e9}".as_bytes(),
    ]);
    d.same("DBSIZE");
}

#[test]
fn key_commands() {
    run_group("keys", keys);
}

fn expiry(d: &mut Diff) {
    d.same("ZADD k 1 a");
    d.same("HSET h f v");
    d.same("TTL k");
    d.same("PTTL k");
    d.same("TTL nosuch");
    d.same("PTTL nosuch");
    d.same("EXPIRE k 100");
    d.ttl("TTL k", 1);
    d.ttl("PTTL k", 2000);
    // Options (Redis 7): NX XX GT LT.
    d.same("EXPIRE k 200 NX");
    d.same("EXPIRE k 200 XX");
    d.ttl("TTL k", 1);
    d.same("EXPIRE k 50 GT");
    d.same("EXPIRE k 300 GT");
    d.ttl("TTL k", 1);
    d.same("EXPIRE k 400 LT");
    d.same("EXPIRE k 150 LT");
    d.ttl("TTL k", 1);
    d.same("EXPIRE k 150 lt");
    d.same("EXPIRE k 10 NX XX");
    d.same("EXPIRE k 10 NX GT");
    d.same("EXPIRE k 10 GT LT");
    d.same("EXPIRE k 10 XX GT");
    d.ttl("TTL k", 1);
    d.same("EXPIRE k 10 FOO");
    d.same("EXPIRE k abc");
    d.same("EXPIRE k 1.5");
    d.same("EXPIRE k");
    d.same("EXPIRE nosuch 10");
    d.same("EXPIRE nosuch 10 XX");
    d.same("PERSIST k");
    d.same("PERSIST k");
    d.same("PERSIST nosuch");
    d.same("PERSIST");
    d.same("TTL k");
    // On a key without a TTL: XX and GT fail, NX and LT succeed.
    d.same("EXPIRE k 100 XX");
    d.same("EXPIRE k 100 GT");
    d.same("EXPIRE k 100 LT");
    d.same("PERSIST k");
    d.same("EXPIRE k 100 NX");
    d.ttl("TTL k", 1);

    d.same("PEXPIRE h 100000");
    d.ttl("PTTL h", 2000);
    d.ttl("TTL h", 1);
    d.same("PEXPIRE h 500000 GT");
    d.same("PEXPIRE h 5000 GT");
    d.same("PEXPIRE h 5000 NX");
    d.same("PEXPIRE h 5000 XX LT");
    d.ttl("PTTL h", 2000);
    d.same("PEXPIRE h abc");
    d.same("PEXPIRE nosuch 100");

    let at = unix_now() + 1000;
    d.same(&format!("EXPIREAT k {at}"));
    d.ttl("TTL k", 2);
    d.same(&format!("EXPIREAT k {} GT", at + 1000));
    d.same(&format!("EXPIREAT k {} GT", at - 500));
    d.same(&format!("EXPIREAT k {} LT", at - 500));
    d.same(&format!("EXPIREAT k {} NX", at));
    d.same(&format!("EXPIREAT k {} XX", at));
    d.ttl("TTL k", 2);
    d.same(&format!("EXPIREAT nosuch {at}"));
    d.same("EXPIREAT k abc");
    d.same("EXPIREAT k");

    // Out-of-range expire times.
    d.same("EXPIRE k 9223372036854775807");
    d.same("EXPIRE k 9223372036854775");
    d.same("PEXPIRE k 9223372036854775807");
    d.same("EXPIREAT k 9223372036854775807");
    d.same("EXPIRE k 99999999999999999999");
    d.ttl("TTL k", 2);

    // Writes keep the TTL; a store over the key replaces it.
    d.same("ZADD k 2 b");
    d.same("ZINCRBY k 1 a");
    d.ttl("TTL k", 2);
    d.same("HSET h g w");
    d.ttl("PTTL h", 2000);
    d.same("ZADD src 1 x");
    d.same("ZUNIONSTORE k 1 src");
    d.same("TTL k");
    d.same("EXPIRE k 100");
    d.same("ZPOPMIN k");
    d.same("TTL k");
    d.same("DEL k");
    d.same("ZADD k 1 a");
    d.same("TTL k");

    // A zero, negative or past expiry deletes the key at once.
    d.same("ZADD z0 1 a");
    d.same("EXPIRE z0 0");
    d.same("EXISTS z0");
    d.same("ZADD z0 1 a");
    d.same("EXPIRE z0 -5");
    d.same("TYPE z0");
    d.same("HSET h0 f v");
    d.same("PEXPIRE h0 -1");
    d.same("HGET h0 f");
    d.same("ZADD z0 1 a");
    d.same("EXPIREAT z0 1");
    d.same("ZCARD z0");
    d.same("DBSIZE");

    // Keys that expire are gone for every command.
    d.same("ZADD e1 1 a 2 b");
    d.same("ZADD e2 1 a");
    d.same("HSET e3 f v");
    d.same("ZADD e4 1 a");
    d.same("ZADD keep 1 a");
    d.same("PEXPIRE e1 50");
    d.same("PEXPIRE e2 50");
    d.same("PEXPIRE e3 50");
    d.same("PEXPIRE e4 50");
    thread::sleep(Duration::from_millis(300));
    d.same("EXISTS e1");
    d.same("ZCARD e1");
    d.same("ZSCORE e2 a");
    d.same("ZRANGE e2 0 -1");
    d.same("HGET e3 f");
    d.same("HGETALL e3");
    d.same("TTL e4");
    d.same("PTTL e4");
    d.same("TYPE e4");
    d.sorted("KEYS *");
    d.scan_union(|c| args(&["SCAN", c]), false);
    d.same("DBSIZE");
    d.same("ZADD e1 5 z");
    d.same("TTL e1");
    d.same("ZRANGE e1 0 -1 WITHSCORES");
    d.same("HSET e3 g w");
    d.pairs("HGETALL e3");
    d.same("EXPIRE e1 10");
    d.same("DEL e1");
    d.same("TTL e1");
}

#[test]
fn expiry_commands() {
    run_group("expiry", expiry);
}

// --------------------------------------------------------------- sorted sets

fn zadd(d: &mut Diff) {
    d.same("ZADD z 1 a");
    d.same("ZADD z 1 a");
    d.same("ZADD z 2 a");
    d.same("ZADD z 1 b 2 c 3 d");
    d.same("ZADD z 1 a 2 a 3 a");
    d.same("ZSCORE z a");
    d.same("ZCARD z");
    // NX / XX
    d.same("ZADD z NX 10 a 10 e");
    d.same("ZSCORE z a");
    d.same("ZADD z XX 10 a 10 f");
    d.same("ZSCORE z f");
    d.same("ZADD z XX 20 a");
    d.same("ZADD nokey XX 1 a");
    d.same("EXISTS nokey");
    // CH
    d.same("ZADD z CH 20 a 5 b 1 g");
    d.same("ZADD z CH 20 a");
    d.same("ZADD z ch nx 1 a 1 h");
    d.same("ZADD z XX CH 30 a 1 nosuch");
    // GT / LT
    d.same("ZADD z GT 25 a");
    d.same("ZSCORE z a");
    d.same("ZADD z GT CH 35 a");
    d.same("ZADD z LT CH 40 a");
    d.same("ZADD z LT CH 2 a");
    d.same("ZADD z GT 7 newgt");
    d.same("ZADD z LT 7 newlt");
    d.same("ZADD z XX GT CH 100 a 1 b");
    d.same("ZADD z XX LT CH 100 a 1 b");
    d.same("ZRANGE z 0 -1 WITHSCORES");
    // INCR
    d.same("ZADD z INCR 5 a");
    d.same("ZADD z INCR 5 brandnew");
    d.same("ZADD z NX INCR 5 a");
    d.same("ZADD z XX INCR 5 nosuch");
    d.same("ZADD z XX INCR 5 a");
    d.same("ZADD z GT INCR -1 a");
    d.same("ZADD z LT INCR -1 a");
    d.same("ZADD z LT INCR 1 a");
    d.same("ZADD z GT INCR 1 a");
    d.same("ZADD z CH INCR 1 a");
    d.same("ZADD z INCR 0 a");
    d.same("ZADD z INCR 1.5 a");
    d.same("ZADD z INCR -inf a");
    d.same("ZADD z INCR +inf a");
    d.same("ZADD z INCR 1 a 2 b");
    d.same("ZADD z INCR");
    // Invalid combinations and syntax.
    d.same("ZADD z NX XX 1 a");
    d.same("ZADD z NX GT 1 a");
    d.same("ZADD z NX LT 1 a");
    d.same("ZADD z GT LT 1 a");
    d.same("ZADD z NX XX GT LT 1 a");
    d.same("ZADD z XX NX INCR 1 a 2 b");
    d.same("ZADD z 1 a 2");
    d.same("ZADD z 1 a NX");
    d.same("ZADD z 1 a NX 2");
    d.same("ZADD z NX CH");
    d.same("ZADD z CH");
    d.same("ZADD z");
    d.same("ZADD");
    d.same("ZADD z FOO 1 a");
    d.same("ZADD z abc a");
    d.same("ZADD z 1 a abc b");
    d.same("ZADD z nan a");
    d.same("ZADD z NaN a");
    d.same("ZCARD z");
    // Score syntax: what strtod accepts, Redis accepts.
    for score in [
        "+inf",
        "-inf",
        "inf",
        "INF",
        "-Inf",
        "+INF",
        "infinity",
        "-infinity",
        "+1",
        "-1",
        ".5",
        "5.",
        "1e2",
        "1E2",
        "1e-2",
        "-0",
        "+0",
        "0.0",
        "-0.0",
        "1e308",
        "1e309",
        "-1e309",
        "1e-320",
        "1e-400",
        "0x10",
        "0x1p3",
        "1_000",
        "1,5",
        "--1",
        "+-1",
        "1e",
        "e1",
        "1.2.3",
        "00012",
        "123456789012345678901234567890",
        "4.9e-324",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
    ] {
        d.same(&format!("ZADD sc {score} m"));
        d.same("ZSCORE sc m");
    }
    for bad in [" 1", "1 ", "", "\t1", "1\x00"] {
        d.same_args(&["ZADD", "sc", bad, "m"]);
    }
    d.same("ZSCORE sc m");
    // The spellings every podium protocol refuses as a score (a finite
    // number beyond a double, white space around it, empty, NaN), where
    // Redis takes a score, an increment or a weight — and where it does
    // not refuse them: a range bound (strtod's overflow to infinity and
    // its leading white space stand there).
    d.same("ZADD sc 1 a 2 b 3 c");
    for bad in [
        "1e400", "-1e999", "1e-400", " 5", "5 ", "\t5", "5\n", "", "nan", "-nan",
    ] {
        d.same_args(&["ZADD", "sc", bad, "m"]);
        d.same_args(&["ZADD", "sc", "INCR", bad, "a"]);
        d.same_args(&["ZADD", "sc", "1", "x", bad, "y"]);
        d.same_args(&["ZINCRBY", "sc", bad, "a"]);
        d.same_args(&["ZUNIONSTORE", "dst", "1", "sc", "WEIGHTS", bad]);
        d.same_args(&["ZCOUNT", "sc", bad, "+inf"]);
        d.same_args(&["ZRANGEBYSCORE", "sc", "-inf", bad]);
        d.same_args(&["ZRANGE", "sc", bad, "+inf", "BYSCORE"]);
        d.same_args(&["ZREMRANGEBYSCORE", "nokey", bad, "+inf"]);
    }
    d.same("ZRANGE sc 0 -1 WITHSCORES");

    // Long members. A member id is 1 to 512 bytes (docs/spec.md §1): 512 is the
    // longest both take; podium refuses longer ones and the empty one
    // (checked on podium alone; Redis would accept them).
    for len in [1, 100, 511, 512] {
        let m = "x".repeat(len);
        d.same_args(&["ZADD", "long", "1", &m]);
        d.same_args(&["ZSCORE", "long", &m]);
    }
    d.same("ZADD long 5 a");
    for len in [0, 513, 5000] {
        let m = "x".repeat(len);
        d.podium_expect(
            &args(&["ZADD", "long", "1", &m]),
            format!("-ERR member id must be 1 to 512 bytes, got {len}\r\n").as_bytes(),
        );
        d.podium_expect(
            &args(&["ZADD", "long", "XX", "CH", "2", "a", "1", &m]),
            format!("-ERR member id must be 1 to 512 bytes, got {len}\r\n").as_bytes(),
        );
    }
    // Nothing of a refused ZADD is applied.
    d.same_args(&["ZSCORE", "long", "a"]);
    d.same("ZCARD long");

    // ZINCRBY
    d.same("ZINCRBY zi 1 a");
    d.same("ZINCRBY zi 1.5 a");
    d.same("ZINCRBY zi -2.5 a");
    d.same("ZINCRBY zi 0.1 a");
    d.same("ZINCRBY zi 0.2 a");
    d.same("ZINCRBY zi inf b");
    d.same("ZINCRBY zi -inf b");
    d.same("ZINCRBY zi 1 b");
    d.same("ZINCRBY zi abc a");
    d.same("ZINCRBY zi nan a");
    d.same("ZINCRBY zi 1");
    d.same("ZINCRBY zi 1 a extra");
    d.same("ZINCRBY zi 1e308 c");
    d.same("ZINCRBY zi 1e308 c");
    d.same("ZRANGE zi 0 -1 WITHSCORES");

    // ZSCORE, ZMSCORE, ZCARD
    d.same("ZSCORE zi a");
    d.same("ZSCORE zi nosuch");
    d.same("ZSCORE nokey a");
    d.same("ZSCORE zi");
    d.same("ZSCORE zi a b");
    d.same("ZMSCORE zi a nosuch b c");
    d.same("ZMSCORE zi a");
    d.same("ZMSCORE nokey a b");
    d.same("ZMSCORE zi");
    d.same("ZCARD zi");
    d.same("ZCARD nokey");
    d.same("ZCARD");
    d.same("ZCARD zi extra");
}

#[test]
fn zadd_zincrby_zscore() {
    run_group("zadd", zadd);
}

/// Score formatting: integers, fractions, -0, 17 significant digits,
/// huge and tiny magnitudes, infinities, in every reply that carries a
/// score.
fn scores(d: &mut Diff) {
    let values = [
        "1",
        "1.5",
        "-0",
        "0",
        "0.1",
        "0.2",
        "0.30000000000000004",
        "1e300",
        "-1e300",
        "1e-300",
        "inf",
        "-inf",
        "3.141592653589793",
        "2.718281828459045",
        "123456789",
        "12345678901234567",
        "123456789012345678",
        "1e15",
        "1e16",
        "1e17",
        "1e21",
        "1e22",
        "-1.5e-7",
        "0.000001",
        "0.0000001",
        "100",
        "1000000",
        "99.99",
        "-17.25",
        "9007199254740993",
        "5e-324",
        "1.7976931348623157e308",
        "2.5",
        "33.333333333333336",
    ];
    for (i, v) in values.iter().enumerate() {
        d.same(&format!("ZADD fmt {v} m{i:02}"));
        d.same(&format!("ZSCORE fmt m{i:02}"));
    }
    d.same("ZRANGE fmt 0 -1 WITHSCORES");
    d.same("ZREVRANGE fmt 0 -1 WITHSCORES");
    d.same("ZRANGEBYSCORE fmt -inf +inf WITHSCORES");
    d.same("ZMSCORE fmt m00 m01 m02 m03 m04 m07 m10 m11 nosuch");
    d.same("ZINCRBY fmt 0.1 m04");
    d.same("ZINCRBY fmt 1 m01");
    d.same("ZINCRBY fmt 1e300 m07");
    d.same("ZADD fmt INCR 0.7 m00");
    d.same("ZPOPMIN fmt");
    d.same("ZPOPMAX fmt 2");
    d.scan_union(|c| args(&["ZSCAN", "fmt", c]), true);
    d.same("ZUNIONSTORE fmt2 1 fmt WEIGHTS 0.5");
    d.same("ZRANGE fmt2 0 -1 WITHSCORES");
}

#[test]
fn score_formatting() {
    run_group("scores", scores);
}

fn seed_ranges(d: &mut Diff) {
    d.same("ZADD r 1 a 2 b 3 c 4 d 5 e 5 f 5 g 6.5 h -1 i -inf j +inf k 0 l");
}

fn zrange(d: &mut Diff) {
    seed_ranges(d);
    // By rank.
    for (s, e) in [
        ("0", "-1"),
        ("0", "0"),
        ("1", "3"),
        ("-3", "-1"),
        ("-100", "100"),
        ("5", "1"),
        ("20", "30"),
        ("-1", "-1"),
        ("-2", "100"),
        ("0", "-13"),
        ("0", "-12"),
        ("11", "11"),
        ("12", "12"),
    ] {
        d.same(&format!("ZRANGE r {s} {e}"));
        d.same(&format!("ZRANGE r {s} {e} WITHSCORES"));
        d.same(&format!("ZRANGE r {s} {e} REV"));
        d.same(&format!("ZRANGE r {s} {e} REV WITHSCORES"));
        d.same(&format!("ZREVRANGE r {s} {e}"));
        d.same(&format!("ZREVRANGE r {s} {e} WITHSCORES"));
    }
    d.same("ZRANGE r 0 -1 withscores");
    d.same("ZRANGE r 0 -1 WITHSCORES WITHSCORES");
    d.same("ZRANGE r 0 -1 rev withscores");
    d.same("ZRANGE r a 1");
    d.same("ZRANGE r 0 1.5");
    d.same("ZRANGE r 0 99999999999999999999");
    d.same("ZRANGE r 0 -1 FOO");
    d.same("ZRANGE r 0 -1 LIMIT 0 1");
    d.same("ZRANGE r 0 -1 REV LIMIT 0 1");
    d.same("ZRANGE r 0");
    d.same("ZRANGE nokey 0 -1");
    d.same("ZRANGE nokey 0 -1 WITHSCORES");
    d.same("ZREVRANGE r 0 -1 REV");
    d.same("ZREVRANGE r 0");
    d.same("ZREVRANGE r a b");
    d.same("ZREVRANGE nokey 0 -1");

    // By score.
    let bounds = [
        ("-inf", "+inf"),
        ("-inf", "inf"),
        ("1", "5"),
        ("(1", "5"),
        ("1", "(5"),
        ("(1", "(5"),
        ("5", "5"),
        ("(5", "5"),
        ("5", "1"),
        ("(-inf", "(+inf"),
        ("-inf", "-inf"),
        ("+inf", "+inf"),
        ("(0", "(0"),
        ("-1", "0"),
        ("2.5", "6.5"),
        ("(", "5"),
        ("-1e308", "1e308"),
        ("0x1", "0x5"),
    ];
    for (min, max) in bounds {
        d.same(&format!("ZRANGE r {min} {max} BYSCORE"));
        d.same(&format!("ZRANGE r {min} {max} BYSCORE WITHSCORES"));
        d.same(&format!("ZRANGE r {max} {min} BYSCORE REV"));
        d.same(&format!("ZRANGE r {max} {min} BYSCORE REV WITHSCORES"));
        d.same(&format!("ZRANGEBYSCORE r {min} {max}"));
        d.same(&format!("ZRANGEBYSCORE r {min} {max} WITHSCORES"));
        d.same(&format!("ZREVRANGEBYSCORE r {max} {min}"));
        d.same(&format!("ZREVRANGEBYSCORE r {max} {min} WITHSCORES"));
        d.same(&format!("ZCOUNT r {min} {max}"));
    }
    for (o, c) in [
        ("0", "2"),
        ("1", "2"),
        ("2", "-1"),
        ("0", "0"),
        ("-1", "2"),
        ("100", "5"),
        ("3", "100"),
        ("0", "-5"),
    ] {
        d.same(&format!("ZRANGE r -inf +inf BYSCORE LIMIT {o} {c}"));
        d.same(&format!(
            "ZRANGE r -inf +inf BYSCORE LIMIT {o} {c} WITHSCORES"
        ));
        d.same(&format!("ZRANGE r +inf -inf BYSCORE REV LIMIT {o} {c}"));
        d.same(&format!("ZRANGE r (1 5 BYSCORE WITHSCORES LIMIT {o} {c}"));
        d.same(&format!("ZRANGEBYSCORE r -inf +inf LIMIT {o} {c}"));
        d.same(&format!("ZRANGEBYSCORE r 1 6 WITHSCORES LIMIT {o} {c}"));
        d.same(&format!("ZREVRANGEBYSCORE r +inf -inf LIMIT {o} {c}"));
        d.same(&format!("ZREVRANGEBYSCORE r 6 (1 LIMIT {o} {c} WITHSCORES"));
    }
    d.same("ZRANGE r -inf +inf BYSCORE limit 1 2 withscores rev");
    d.same("ZRANGE r 5 1 BYSCORE");
    d.same("ZRANGE r 1 5 BYSCORE REV");
    d.same("ZRANGE r a 5 BYSCORE");
    d.same("ZRANGE r 1 b BYSCORE");
    d.same("ZRANGE r (a 5 BYSCORE");
    d.same("ZRANGE r nan 5 BYSCORE");
    d.same("ZRANGE r 1 5 BYSCORE LIMIT");
    d.same("ZRANGE r 1 5 BYSCORE LIMIT 0");
    d.same("ZRANGE r 1 5 BYSCORE LIMIT a 1");
    d.same("ZRANGE r 1 5 BYSCORE LIMIT 0 b");
    d.same("ZRANGE nokey -inf +inf BYSCORE");
    d.same("ZRANGEBYSCORE r a 5");
    d.same("ZRANGEBYSCORE r 1 5 LIMIT 0");
    d.same("ZRANGEBYSCORE r 1 5 FOO");
    d.same("ZRANGEBYSCORE r 1");
    d.same("ZRANGEBYSCORE nokey -inf +inf");
    d.same("ZREVRANGEBYSCORE r 5 x");
    d.same("ZREVRANGEBYSCORE r 5");
    d.same("ZREVRANGEBYSCORE r +inf -inf LIMIT 0 1 FOO");
    d.same_args(&["ZCOUNT", "r", "", "5"]);
    d.same_args(&["ZRANGEBYSCORE", "r", " 1", "5"]);
    d.same("ZCOUNT r a 5");
    d.same("ZCOUNT r 1");
    d.same("ZCOUNT nokey -inf +inf");

    // ZRANK / ZREVRANK (WITHSCORE: see zrank_withscore).
    for m in ["a", "e", "f", "g", "j", "k", "l", "nosuch"] {
        d.same(&format!("ZRANK r {m}"));
        d.same(&format!("ZREVRANK r {m}"));
    }
    d.same("ZRANK nokey a");
    d.same("ZREVRANK nokey a");
    d.same("ZRANK r");
    d.same("ZREVRANK r");

    // Ties order by member bytes, in both directions.
    d.same("ZADD tie 1 b 1 a 1 c 1 B 1 aa 1 A 1 a0 1 ab 1 Z 1 ~ 1 0 0 zzz 2 yyy");
    // Members Redis takes as any bytes: NUL, not UTF-8. The empty member
    // podium refuses (a member id is 1 to 512 bytes, docs/spec.md §1; checked on
    // podium alone), so below it is looked up as a member neither has.
    d.podium_expect(
        &args(&["ZADD", "tie", "1", ""]),
        b"-ERR member id must be 1 to 512 bytes, got 0\r\n",
    );
    for m in [&b"\x00"[..], b"a\x00", b"\xff", b"\xc3\xa9", b"\x01\x02"] {
        d.same_args(&[&b"ZADD"[..], b"tie", b"1", m]);
    }
    d.same("ZRANGE tie 0 -1 WITHSCORES");
    d.same("ZREVRANGE tie 0 -1 WITHSCORES");
    d.same("ZRANGEBYSCORE tie 1 1");
    d.same("ZREVRANGEBYSCORE tie 1 1");
    d.same("ZRANGE tie 1 1 BYSCORE REV LIMIT 2 3");
    for m in [
        &b"a"[..],
        b"aa",
        b"B",
        b"~",
        b"",
        b"\xff",
        b"a\x00",
        b"\x00",
        b"\xc3\xa9",
    ] {
        d.same_args(&[&b"ZRANK"[..], b"tie", m]);
        d.same_args(&[&b"ZREVRANK"[..], b"tie", m]);
        d.same_args(&[&b"ZSCORE"[..], b"tie", m]);
    }

    // A bigger set (Redis switches to a skiplist above 128 members).
    let mut zadd = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..300u32 {
        zadd.push(format!("{}", (i * 7919) % 50));
        zadd.push(format!("m{:03}", (i * 31) % 300));
    }
    d.same_args(&zadd);
    d.same("ZCARD big");
    d.same("ZRANGE big 0 -1 WITHSCORES");
    d.same("ZREVRANGE big 0 -1");
    d.same("ZRANGE big 100 120 REV WITHSCORES");
    d.same("ZRANGEBYSCORE big (10 20 WITHSCORES LIMIT 5 10");
    d.same("ZREVRANGEBYSCORE big 30 (10 LIMIT 5 10");
    d.same("ZCOUNT big (10 20");
    for m in ["m000", "m001", "m150", "m299", "nosuch"] {
        d.same(&format!("ZRANK big {m}"));
        d.same(&format!("ZREVRANK big {m}"));
    }
}

#[test]
fn zrange_family_zrank_zcount() {
    run_group("zrange", zrange);
}

fn zmutate(d: &mut Diff) {
    // ZREM
    seed_ranges(d);
    d.same("ZREM r a");
    d.same("ZREM r a");
    d.same("ZREM r b c nosuch b");
    d.same("ZREM nokey a");
    d.same("ZREM r");
    d.same("ZADD one 1 x");
    d.same("ZREM one x");
    d.same("EXISTS one");
    d.same("ZRANGE r 0 -1 WITHSCORES");

    // ZREMRANGEBYRANK / ZREMRANGEBYSCORE
    seed_ranges(d);
    d.same("ZREMRANGEBYRANK r 0 0");
    d.same("ZREMRANGEBYRANK r -1 -1");
    d.same("ZREMRANGEBYRANK r 5 1");
    d.same("ZREMRANGEBYRANK r 100 200");
    d.same("ZREMRANGEBYRANK r -100 1");
    d.same("ZREMRANGEBYRANK r a 1");
    d.same("ZREMRANGEBYRANK r 0");
    d.same("ZREMRANGEBYRANK nokey 0 -1");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZREMRANGEBYRANK r 0 -1");
    d.same("EXISTS r");
    seed_ranges(d);
    d.same("ZREMRANGEBYSCORE r (1 3");
    d.same("ZREMRANGEBYSCORE r 5 5");
    d.same("ZREMRANGEBYSCORE r (6 (6.5");
    d.same("ZREMRANGEBYSCORE r 10 1");
    d.same("ZREMRANGEBYSCORE r -inf (0");
    d.same("ZREMRANGEBYSCORE r a 1");
    d.same("ZREMRANGEBYSCORE r 1");
    d.same("ZREMRANGEBYSCORE nokey -inf +inf");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZREMRANGEBYSCORE r -inf +inf");
    d.same("EXISTS r");

    // ZPOPMIN / ZPOPMAX
    seed_ranges(d);
    d.same("ZPOPMIN r");
    d.same("ZPOPMAX r");
    d.same("ZPOPMIN r 2");
    d.same("ZPOPMAX r 3");
    d.same("ZPOPMIN r 0");
    d.same("ZPOPMAX r 0");
    d.same("ZPOPMIN r -1");
    d.same("ZPOPMAX r -5");
    d.same("ZPOPMIN r abc");
    d.same("ZPOPMIN r 1 2");
    d.same("ZPOPMIN");
    d.same("ZPOPMIN nokey");
    d.same("ZPOPMIN nokey 3");
    d.same("ZPOPMAX nokey");
    d.same("ZPOPMAX nokey 0");
    d.same("ZPOPMIN r 1");
    d.same("ZPOPMAX r 100");
    d.same("EXISTS r");
    d.same("ZPOPMIN r");

    // ZUNIONSTORE / ZINTERSTORE
    d.same("ZADD u1 1 a 2 b 3 c");
    d.same("ZADD u2 10 b 20 c 30 d");
    d.same("ZADD u3 -1 c 5 e");
    d.same("ZADD ui 1 a 2 b");
    d.same("ZADD un inf a -inf b 1 c");
    for op in ["ZUNIONSTORE", "ZINTERSTORE"] {
        d.same(&format!("{op} dst 2 u1 u2"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 3 u1 u2 u3"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 2 3"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 0.5 -1"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        for agg in ["SUM", "MIN", "MAX", "min", "max"] {
            d.same(&format!("{op} dst 2 u1 u2 AGGREGATE {agg}"));
            d.same("ZRANGE dst 0 -1 WITHSCORES");
            d.same(&format!(
                "{op} dst 3 u1 u2 u3 WEIGHTS 1 2 -1 AGGREGATE {agg}"
            ));
            d.same("ZRANGE dst 0 -1 WITHSCORES");
        }
        d.same(&format!("{op} dst 2 u1 u2 AGGREGATE MAX WEIGHTS 2 1"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 1 u1"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 2 u1 nokey"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 2 nokey nokey2"));
        d.same("EXISTS dst");
        // Infinities: inf + -inf is 0 in a SUM, inf * 0 is 0.
        d.same(&format!("{op} dst 2 un un WEIGHTS 1 -1"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 1 un WEIGHTS 0"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        d.same(&format!("{op} dst 2 un u1 WEIGHTS inf 1"));
        d.same("ZRANGE dst 0 -1 WITHSCORES");
        // The destination may be a source.
        d.same("ZADD self 1 a 2 b");
        d.same(&format!("{op} self 2 self u1"));
        d.same("ZRANGE self 0 -1 WITHSCORES");
        // Errors.
        d.same(&format!("{op} dst 0 u1"));
        d.same(&format!("{op} dst 0"));
        d.same(&format!("{op} dst -1 u1"));
        d.same(&format!("{op} dst abc u1"));
        d.same(&format!("{op} dst 3 u1 u2"));
        d.same(&format!("{op} dst 1 u1 u2"));
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 1"));
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 1 2 3"));
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 1 x"));
        d.same(&format!("{op} dst 2 u1 u2 WEIGHTS 1 nan"));
        d.same(&format!("{op} dst 2 u1 u2 AGGREGATE"));
        d.same(&format!("{op} dst 2 u1 u2 AGGREGATE AVG"));
        d.same(&format!("{op} dst 2 u1 u2 FOO"));
        d.same(&format!("{op} dst 2 u1 u2 WITHSCORES"));
        d.same(&format!("{op} dst"));
        d.same(&format!("{op} dst 1"));
    }

    // Scores made by arithmetic: inf × 0 is NaN (taken as 0 where Redis
    // takes it so, skipped by MIN/MAX where Redis skips it), and negative
    // zero (the reply of ZINCRBY says -0, later reads say 0).
    d.same("ZADD one 1 a");
    d.same("ZADD pinf inf a");
    d.same("ZADD neg -5 a");
    for c in [
        "ZINTERSTORE d 2 pinf one WEIGHTS 0 1 AGGREGATE MIN",
        "ZINTERSTORE d 2 one pinf WEIGHTS 1 0 AGGREGATE MIN",
        "ZINTERSTORE d 2 one pinf WEIGHTS 1 0 AGGREGATE MAX",
        "ZINTERSTORE d 2 one pinf WEIGHTS 1 0",
        "ZUNIONSTORE d 2 one pinf WEIGHTS 1 0 AGGREGATE MIN",
        "ZUNIONSTORE d 2 pinf one WEIGHTS 0 1 AGGREGATE MAX",
        "ZUNIONSTORE d 2 pinf one WEIGHTS 0 1",
        "ZINTERSTORE d 1 neg WEIGHTS 0",
        "ZUNIONSTORE d 2 neg neg WEIGHTS 0 0 AGGREGATE MIN",
        "ZUNIONSTORE d 2 neg neg WEIGHTS 0 -1",
    ] {
        d.same(c);
        d.same("ZRANGE d 0 -1 WITHSCORES");
    }
    d.same("ZINCRBY negz -0 m");
    d.same("ZSCORE negz m");
    d.same("ZADD negz INCR -0 m2");
    d.same("ZSCORE negz m2");
    d.same("ZADD negz 0 a -0 b 0 c");
    d.same("ZINCRBY negz 0 m");
    d.same("ZRANGE negz 0 -1 WITHSCORES");
    d.same("ZRANGEBYSCORE negz 0 0");
    d.same("ZRANGEBYSCORE negz (-1 (1 WITHSCORES");

    // ZSCAN: the union of all pages.
    seed_ranges(d);
    d.scan_union(|c| args(&["ZSCAN", "r", c]), true);
    d.scan_union(|c| args(&["ZSCAN", "r", c, "COUNT", "2"]), true);
    d.scan_union(|c| args(&["ZSCAN", "r", c, "MATCH", "[a-e]"]), true);
    d.scan_union(|c| args(&["ZSCAN", "nokey", c]), true);
    d.scan_union(|c| args(&["ZSCAN", "big", c, "COUNT", "7"]), true);
    let mut zadd = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..200 {
        zadd.push(format!("{}", i % 13));
        zadd.push(format!("member{i}"));
    }
    d.same_args(&zadd);
    d.scan_union(|c| args(&["ZSCAN", "big", c]), true);
    d.scan_union(
        |c| args(&["ZSCAN", "big", c, "COUNT", "20", "MATCH", "*1*"]),
        true,
    );
    d.same("ZSCAN r");
    d.same("ZSCAN r abc");
    d.same("ZSCAN r 0 COUNT 0");
    d.same("ZSCAN r 0 FOO");
}

#[test]
fn zrem_zpop_zstore_zscan() {
    run_group("zmutate", zmutate);
}

/// -0 as a stored score. Redis 7.0 keeps a sorted set of at most 128
/// members as a listpack, where a score is stored as text and -0 becomes
/// 0 when it is written; a bigger set (a skiplist) keeps -0, and a set
/// does not change encoding back when it shrinks. So what reads back
/// depends on the set's size when the score was written, and a 0 written
/// into a small set stays 0 when the set grows or is copied into a big one.
fn negative_zero(d: &mut Diff) {
    let many =
        |from: u32, n: u32| -> Vec<String> { (from..from + n).map(|i| format!("x{i}")).collect() };
    let zadd_many = |key: &str, members: &[String]| -> Vec<String> {
        let mut a = vec!["ZADD".to_string(), key.to_string()];
        for m in members {
            a.push("1".into());
            a.push(m.clone());
        }
        a
    };

    // Small sets: -0 reads back as 0, from every command.
    d.same("ZADD s -0 m");
    d.same("ZSCORE s m");
    d.same("ZMSCORE s m m");
    d.same("ZRANGE s 0 -1 WITHSCORES");
    d.same("ZINCRBY s -0 m");
    d.same("ZADD s2 -0 m");
    d.same("ZUNIONSTORE u 2 s2 s2");
    d.same("ZSCORE u m");
    d.same("ZINTERSTORE i 1 s2 WEIGHTS -1");
    d.same("ZSCORE i m");

    // Big sets keep -0.
    let x200 = many(0, 200);
    d.same_args(&zadd_many("big", &x200));
    d.same("ZADD big -0 m");
    d.same("ZSCORE big m");
    d.same("ZRANGE big 0 0 WITHSCORES");

    // Not compared (a documented difference, docs/server.md): podium
    // decides -0 versus 0 by the set's size when it is read, Redis by its
    // size when the score was written, so a -0 written into a small set
    // that then grows past 128 members (or the reverse, or copied into a
    // big ZUNIONSTORE result) reads back differently.
}

#[test]
fn negative_zero_scores() {
    run_group("negative-zero", negative_zero);
}

// ---------------------------------------------------------------- hashes

fn hashes(d: &mut Diff) {
    d.same("HSET h f v");
    d.same("HSET h f v2");
    d.same("HSET h a 1 b 2 f v3");
    d.same("HSET h a");
    d.same("HSET h a 1 b");
    d.same("HSET h");
    d.same("HMSET h c 3 d 4");
    d.same("HMSET h c");
    d.same("HMSET h c 3 d");
    d.same_args(&["HSET", "h", "", "empty-field"]);
    d.same_args(&["HSET", "h", "empty-value", ""]);
    d.same_args(&[&b"HSET"[..], b"h", b"bin\x00\xff", b"\r\n\x00"]);
    d.same_args(&["HSET", "h", "long", &"x".repeat(100)]);
    d.same("HGET h f");
    d.same("HGET h nosuch");
    d.same("HGET nokey f");
    d.same_args(&["HGET", "h", ""]);
    d.same_args(&[&b"HGET"[..], b"h", b"bin\x00\xff"]);
    d.same("HGET h");
    d.same("HGET h f extra");
    d.same("HMGET h a nosuch b f");
    d.same("HMGET nokey a b");
    d.same("HMGET h");
    d.same("HEXISTS h a");
    d.same("HEXISTS h nosuch");
    d.same("HEXISTS nokey a");
    d.same("HEXISTS h");
    d.same("HLEN h");
    d.same("HLEN nokey");
    d.same("HLEN");
    d.pairs("HGETALL h");
    d.same("HGETALL nokey");
    d.same("HGETALL");
    d.sorted("HKEYS h");
    d.sorted("HVALS h");
    d.same("HKEYS nokey");
    d.same("HVALS nokey");
    d.same("HKEYS");
    d.same("HDEL h a nosuch b");
    d.same("HDEL h a");
    d.same("HDEL nokey a");
    d.same("HDEL h");
    d.pairs("HGETALL h");
    d.same("HSET small only 1");
    d.same("HDEL small only");
    d.same("EXISTS small");
    d.same("TYPE small");
    // A bigger hash (Redis switches from a listpack above 128 fields).
    let mut hset = vec!["HSET".to_string(), "bigh".to_string()];
    for i in 0..300 {
        hset.push(format!("field{i}"));
        hset.push(format!("value{}", i * 3));
    }
    d.same_args(&hset);
    d.same("HLEN bigh");
    d.pairs("HGETALL bigh");
    d.sorted("HKEYS bigh");
    d.sorted("HVALS bigh");
    d.same("HMGET bigh field0 field299 field300");
}

#[test]
fn hash_commands() {
    run_group("hashes", hashes);
}

/// Every command against a key of the other type, and the error replies
/// common to all commands.
fn errors(d: &mut Diff) {
    d.same("ZADD z 1 a 2 b");
    d.same("HSET h f v");
    for c in [
        "ZADD h 1 a",
        "ZADD h NX INCR 1 a",
        "ZINCRBY h 1 a",
        "ZSCORE h a",
        "ZMSCORE h a",
        "ZRANK h a",
        "ZREVRANK h a",
        "ZCARD h",
        "ZCOUNT h -inf +inf",
        "ZRANGE h 0 -1",
        "ZRANGE h -inf +inf BYSCORE",
        "ZREVRANGE h 0 -1",
        "ZRANGEBYSCORE h -inf +inf",
        "ZREVRANGEBYSCORE h +inf -inf",
        "ZREM h a",
        "ZREMRANGEBYRANK h 0 -1",
        "ZREMRANGEBYSCORE h -inf +inf",
        "ZPOPMIN h",
        "ZPOPMAX h 2",
        "ZUNIONSTORE dst 2 z h",
        "ZINTERSTORE dst 2 z h",
        "ZSCAN h 0",
        "HSET z f v",
        "HMSET z f v",
        "HGET z f",
        "HMGET z f",
        "HDEL z f",
        "HGETALL z",
        "HEXISTS z f",
        "HLEN z",
        "HKEYS z",
        "HVALS z",
        // Argument errors and type errors: which comes first.
        "ZADD h x a",
        "ZRANGE h a b",
        "ZRANGE h 0 -1 LIMIT 0 1",
        "ZCOUNT h a b",
        "ZPOPMIN h -1",
        "ZINCRBY h x a",
        "ZRANGEBYSCORE h a b",
    ] {
        d.same(c);
    }
    // The destination of a store may hold another type: it is replaced.
    d.same("ZUNIONSTORE h 1 z");
    d.same("TYPE h");
    d.same("HSET h2 f v");
    d.same("ZINTERSTORE h2 2 z nokey");
    d.same("TYPE h2");

    // Arity: too few arguments for every command.
    for c in [
        "ECHO",
        "SELECT",
        "AUTH",
        "CONFIG",
        "CLIENT",
        "EXISTS",
        "DEL",
        "UNLINK",
        "TYPE",
        "KEYS",
        "SCAN",
        "EXPIRE",
        "PEXPIRE",
        "EXPIREAT",
        "TTL",
        "PTTL",
        "PERSIST",
        "ZADD",
        "ZINCRBY",
        "ZSCORE",
        "ZMSCORE",
        "ZRANK",
        "ZREVRANK",
        "ZCARD",
        "ZCOUNT",
        "ZRANGE",
        "ZREVRANGE",
        "ZRANGEBYSCORE",
        "ZREVRANGEBYSCORE",
        "ZREM",
        "ZREMRANGEBYRANK",
        "ZREMRANGEBYSCORE",
        "ZPOPMIN",
        "ZPOPMAX",
        "ZUNIONSTORE",
        "ZINTERSTORE",
        "ZSCAN",
        "HSET",
        "HMSET",
        "HGET",
        "HMGET",
        "HDEL",
        "HGETALL",
        "HEXISTS",
        "HLEN",
        "HKEYS",
        "HVALS",
    ] {
        d.same(c);
        d.same(&c.to_lowercase());
        d.same(&format!("{c} k"));
    }
    // Too many arguments for the fixed-arity ones.
    for c in [
        "PING a b",
        "ECHO a b",
        "SELECT 0 1",
        "DBSIZE x",
        "TYPE k x",
        "KEYS a b",
        "TTL k x",
        "PTTL k x",
        "PERSIST k x",
        "ZINCRBY k 1 a b",
        "ZSCORE k a b",
        "ZCARD k x",
        "ZCOUNT k 1 2 3",
        "ZREMRANGEBYRANK k 0 1 2",
        "ZREMRANGEBYSCORE k 0 1 2",
        "HGET k f x",
        "HEXISTS k f x",
        "HLEN k x",
        "HGETALL k x",
        "HKEYS k x",
        "HVALS k x",
        "MULTI x",
        "EXEC x",
        "DISCARD x",
    ] {
        d.same(c);
    }
    d.same("PING");
}

#[test]
fn wrongtype_and_arity_errors() {
    run_group("errors", errors);
}

// ------------------------------------------------------------ transactions

fn transactions(d: &mut Diff) {
    d.same("EXEC");
    d.same("DISCARD");
    d.same("MULTI");
    d.same("ZADD m 1 a 2 b");
    d.same("ZINCRBY m 2.5 a");
    d.same("ZRANGE m 0 -1 WITHSCORES");
    d.same("HSET mh f v");
    d.same("HGETALL mh");
    d.same("ZSCORE m a");
    d.same("ZRANK m nosuch");
    d.same("EXPIRE m 100");
    d.same("PING");
    d.same("EXEC");
    d.ttl("TTL m", 1);

    // Empty transaction.
    d.same("MULTI");
    d.same("EXEC");

    // DISCARD drops the queue.
    d.same("MULTI");
    d.same("ZADD m 100 z");
    d.same("DEL m");
    d.same("DISCARD");
    d.same("ZRANGE m 0 -1 WITHSCORES");
    d.same("EXEC");

    // Nested MULTI is an error and keeps the transaction.
    d.same("MULTI");
    d.same("ZADD m 3 c");
    d.same("MULTI");
    d.same("ZCARD m");
    d.same("EXEC");

    // Errors at queue time (unknown command, arity) abort EXEC.
    d.same("MULTI");
    d.same("ZADD m 4 d");
    d.same("FOO bar");
    d.same("ZCARD m");
    d.same("EXEC");
    d.same("ZSCORE m d");
    d.same("MULTI");
    d.same("ZADD m 4");
    d.same("ZADD m 4 d");
    d.same("EXEC");
    d.same("ZSCORE m d");
    d.same("MULTI");
    d.same("HSET mh f");
    d.same("DISCARD");
    // After an aborted or discarded transaction, a new one works.
    d.same("MULTI");
    d.same("ZADD m 4 d");
    d.same("EXEC");

    // Errors at execution time (wrong type, bad options, bad floats) are
    // replies inside EXEC's array; the other commands run.
    d.same("MULTI");
    d.same("ZADD m 5 e");
    d.same("HSET m f v");
    d.same("ZADD m NX XX 1 x");
    d.same("ZADD m abc x");
    d.same("ZINCRBY mh 1 a");
    d.same("ZRANGE m 0 -1 LIMIT 0 1");
    d.same("ZCARD m");
    d.same("ZADD m INCR 1 e");
    d.same("ZADD m NX INCR 1 e");
    d.same("ZPOPMIN m 2");
    d.same("EXEC");
    d.same("ZRANGE m 0 -1 WITHSCORES");

    // Transactions see their own writes in order; other clients see all
    // or nothing.
    let mut r2 = Conn::open(d.redis.addr());
    let mut p2 = Conn::open(d.podium.addr());
    d.same("MULTI");
    d.same("DEL m");
    d.same("ZADD m 1 x 2 y");
    d.same("ZADD m XX 10 x");
    let other = cmd("ZRANGE m 0 -1 WITHSCORES");
    let (ro, po) = (r2.call(&other), p2.call(&other));
    if ro != po {
        d.record(
            "another client during MULTI",
            "ZRANGE m 0 -1 WITHSCORES",
            &ro,
            &po,
        );
    }
    d.same("ZRANGE m 0 -1 WITHSCORES");
    d.same("EXEC");
    let (ro, po) = (r2.call(&other), p2.call(&other));
    if ro != po {
        d.record(
            "another client after EXEC",
            "ZRANGE m 0 -1 WITHSCORES",
            &ro,
            &po,
        );
    }

    // Commands that are not queued inside MULTI.
    d.same("MULTI");
    d.same("EXEC extra");
    d.same("DISCARD extra");
    d.same("ZADD m 7 q");
    d.same("EXEC");
    d.same("ZSCORE m q");
}

#[test]
fn multi_exec_discard() {
    run_group("multi", transactions);
}

// ----------------------------------------------------- ZRANK … WITHSCORE

/// ZRANK/ZREVRANK WITHSCORE as Redis 7.2 has it (Debian's 7.0 does not):
/// podium's bytes against hand-written expectations.
#[test]
fn zrank_withscore() {
    let mut pair = Pair::start();
    if resp::self_check() {
        return;
    }
    let addr = pair.other_addr();
    for proto in [2u8, 3] {
        let mut c = Conn::open(&addr);
        if proto == 3 {
            c.call(&cmd("HELLO 3"));
        }
        c.call(&cmd("FLUSHALL"));
        let score = |s: &str| {
            if proto == 3 {
                format!(",{s}\r\n")
            } else {
                format!("${}\r\n{s}\r\n", s.len())
            }
        };
        let null_array = if proto == 3 { "_\r\n" } else { "*-1\r\n" };
        let null = if proto == 3 { "_\r\n" } else { "$-1\r\n" };
        let mut failures = Vec::new();
        let mut expect = |c: &mut Conn, line: &str, want: String| {
            let got = c.call(&cmd(line));
            if got != want.as_bytes() {
                failures.push(format!(
                    "resp{proto}: {line}\n    expected: {}\n    podium:   {}",
                    show(want.as_bytes()),
                    show(&got)
                ));
            }
        };
        expect(
            &mut c,
            "ZADD lb 10 a 1.5 b -3 c 10 d inf e",
            ":5\r\n".into(),
        );
        expect(&mut c, "HSET h f v", ":1\r\n".into());
        expect(
            &mut c,
            "ZRANK lb a WITHSCORE",
            format!("*2\r\n:2\r\n{}", score("10")),
        );
        expect(
            &mut c,
            "ZRANK lb b withscore",
            format!("*2\r\n:1\r\n{}", score("1.5")),
        );
        expect(
            &mut c,
            "ZRANK lb c WITHSCORE",
            format!("*2\r\n:0\r\n{}", score("-3")),
        );
        expect(
            &mut c,
            "ZRANK lb e WITHSCORE",
            format!("*2\r\n:4\r\n{}", score("inf")),
        );
        expect(
            &mut c,
            "ZREVRANK lb a WITHSCORE",
            format!("*2\r\n:2\r\n{}", score("10")),
        );
        expect(
            &mut c,
            "ZREVRANK lb d WITHSCORE",
            format!("*2\r\n:1\r\n{}", score("10")),
        );
        expect(
            &mut c,
            "ZREVRANK lb c WithScore",
            format!("*2\r\n:4\r\n{}", score("-3")),
        );
        expect(&mut c, "ZRANK lb nosuch WITHSCORE", null_array.into());
        expect(&mut c, "ZREVRANK lb nosuch WITHSCORE", null_array.into());
        expect(&mut c, "ZRANK nokey a WITHSCORE", null_array.into());
        expect(&mut c, "ZREVRANK nokey a WITHSCORE", null_array.into());
        expect(&mut c, "ZRANK lb nosuch", null.into());
        expect(&mut c, "ZRANK lb a", ":2\r\n".into());
        expect(&mut c, "ZRANK lb a FOO", "-ERR syntax error\r\n".into());
        expect(
            &mut c,
            "ZRANK lb a WITHSCORE x",
            "-ERR wrong number of arguments for 'zrank' command\r\n".into(),
        );
        expect(
            &mut c,
            "ZREVRANK lb a WITHSCORE x",
            "-ERR wrong number of arguments for 'zrevrank' command\r\n".into(),
        );
        expect(
            &mut c,
            "ZRANK h f WITHSCORE",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n".into(),
        );
        expect(&mut c, "MULTI", "+OK\r\n".into());
        expect(&mut c, "ZREVRANK lb b WITHSCORE", "+QUEUED\r\n".into());
        expect(
            &mut c,
            "EXEC",
            format!("*1\r\n*2\r\n:3\r\n{}", score("1.5")),
        );
        assert!(
            failures.is_empty(),
            "ZRANK WITHSCORE:\n{}",
            failures.join("\n")
        );
    }
    assert!(
        pair.other_running(),
        "podium exited:\n{}",
        pair.other_output()
    );
}

// ------------------------------------------------------------- random

/// A seeded generator of commands over a few keys.
struct Gen {
    rng: SmallRng,
}

const ZKEYS: [&str; 3] = ["lb", "lb2", "lb3"];

impl Gen {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn zkey(&mut self) -> String {
        if self.chance(0.04) {
            "h".into()
        } else if self.chance(0.03) {
            "nokey".into()
        } else {
            self.pick(&ZKEYS).into()
        }
    }

    fn hkey(&mut self) -> String {
        if self.chance(0.05) {
            self.pick(&ZKEYS).into()
        } else {
            self.pick(&["h", "h2"]).into()
        }
    }

    /// A member: mostly `m0`..`m23`, sometimes NUL or non-UTF-8 bytes.
    /// (Not the empty member: podium refuses it — reported by the
    /// hand-written `zrange` group — and the stream would stop there.)
    fn member(&mut self) -> Vec<u8> {
        match self.rng.random_range(0..100) {
            0 => b"m\xc3\xa9".to_vec(),
            1 => b"\x00".to_vec(),
            2 => b"\xff\xfe".to_vec(),
            3 => b"m1\x00".to_vec(),
            4 => b"M1".to_vec(),
            _ => format!("m{}", self.rng.random_range(0..24)).into_bytes(),
        }
    }

    fn score(&mut self) -> String {
        match self.rng.random_range(0..100) {
            0..=39 => self.rng.random_range(-5..=5).to_string(),
            40..=54 => format!("{}.5", self.rng.random_range(-5..=5)),
            55..=69 => format!("{}", self.rng.random_range(-1000.0..1000.0f64)),
            70..=74 => format!("{:.2}", self.rng.random_range(-10.0..10.0f64)),
            75..=94 => self
                .pick(&[
                    "0",
                    "0.1",
                    "0.2",
                    "inf",
                    "-inf",
                    "+inf",
                    "1e300",
                    "-1e300",
                    "1e-300",
                    "3.0000000000000004",
                    "12345678901234567",
                    "1e17",
                    "5e-324",
                ])
                .into(),
            _ => self.pick(&["abc", "nan", "", "1x"]).into(),
        }
    }

    fn bound(&mut self) -> String {
        match self.rng.random_range(0..10) {
            0 => "-inf".into(),
            1 => "+inf".into(),
            2..=4 => format!("({}", self.rng.random_range(-6..=6)),
            5 if self.chance(0.1) => "x".into(),
            _ => format!("{}", self.rng.random_range(-6..=6)),
        }
    }

    fn index(&mut self) -> String {
        if self.chance(0.05) {
            self.pick(&["100", "-100", "a"]).into()
        } else {
            self.rng.random_range(-8..=8).to_string()
        }
    }

    fn command(&mut self) -> Args {
        let mut a: Vec<Vec<u8>> = Vec::new();
        let s = |x: &str| x.as_bytes().to_vec();
        let roll = self.rng.random_range(0..1000);
        match roll {
            0..=249 => {
                a.push(s("ZADD"));
                a.push(s(&self.zkey()));
                let incr = self.chance(0.12);
                if self.chance(0.15) {
                    a.push(s(self.pick(&["NX", "XX", "nx", "xx"])));
                }
                if self.chance(0.03) {
                    a.push(s("XX"));
                }
                if self.chance(0.15) {
                    a.push(s(self.pick(&["GT", "LT", "gt"])));
                }
                if self.chance(0.02) {
                    a.push(s("LT"));
                }
                if self.chance(0.2) {
                    a.push(s("CH"));
                }
                if incr {
                    a.push(s("INCR"));
                }
                let pairs = if incr && self.chance(0.9) {
                    1
                } else {
                    self.rng.random_range(1..=4)
                };
                for _ in 0..pairs {
                    a.push(s(&self.score()));
                    a.push(self.member());
                }
            }
            250..=259 => {
                // A large batch pushes Redis past its listpack encoding.
                a.push(s("ZADD"));
                a.push(s("lb3"));
                for _ in 0..60 {
                    a.push(self.rng.random_range(-20..20).to_string().into_bytes());
                    a.push(format!("big{}", self.rng.random_range(0..300)).into_bytes());
                }
            }
            260..=329 => {
                a.push(s("ZINCRBY"));
                a.push(s(&self.zkey()));
                a.push(s(&self.score()));
                a.push(self.member());
            }
            330..=389 => {
                a.push(s("ZREM"));
                a.push(s(&self.zkey()));
                for _ in 0..self.rng.random_range(1..=3) {
                    a.push(self.member());
                }
            }
            390..=489 => {
                a.push(s("ZRANGE"));
                a.push(s(&self.zkey()));
                if self.chance(0.5) {
                    a.push(s(&self.index()));
                    a.push(s(&self.index()));
                    if self.chance(0.4) {
                        a.push(s("REV"));
                    }
                } else {
                    let rev = self.chance(0.4);
                    let (x, y) = (self.bound(), self.bound());
                    a.push(s(&x));
                    a.push(s(&y));
                    a.push(s("BYSCORE"));
                    if rev {
                        a.push(s("REV"));
                    }
                    if self.chance(0.4) {
                        a.push(s("LIMIT"));
                        a.push(self.rng.random_range(-1..5).to_string().into_bytes());
                        a.push(self.rng.random_range(-1..5).to_string().into_bytes());
                    }
                }
                if self.chance(0.5) {
                    a.push(s("WITHSCORES"));
                }
            }
            490..=519 => {
                a.push(s("ZREVRANGE"));
                a.push(s(&self.zkey()));
                a.push(s(&self.index()));
                a.push(s(&self.index()));
                if self.chance(0.5) {
                    a.push(s("WITHSCORES"));
                }
            }
            520..=569 => {
                let rev = self.chance(0.5);
                a.push(s(if rev {
                    "ZREVRANGEBYSCORE"
                } else {
                    "ZRANGEBYSCORE"
                }));
                a.push(s(&self.zkey()));
                a.push(s(&self.bound()));
                a.push(s(&self.bound()));
                if self.chance(0.5) {
                    a.push(s("WITHSCORES"));
                }
                if self.chance(0.3) {
                    a.push(s("LIMIT"));
                    a.push(self.rng.random_range(-1..5).to_string().into_bytes());
                    a.push(self.rng.random_range(-1..5).to_string().into_bytes());
                }
            }
            570..=629 => {
                a.push(s(self.pick(&["ZRANK", "ZREVRANK"])));
                a.push(s(&self.zkey()));
                a.push(self.member());
            }
            630..=669 => {
                a.push(s("ZSCORE"));
                a.push(s(&self.zkey()));
                a.push(self.member());
            }
            670..=684 => {
                a.push(s("ZMSCORE"));
                a.push(s(&self.zkey()));
                for _ in 0..self.rng.random_range(1..=4) {
                    a.push(self.member());
                }
            }
            685..=709 => {
                a.push(s("ZCARD"));
                a.push(s(&self.zkey()));
            }
            710..=749 => {
                a.push(s("ZCOUNT"));
                a.push(s(&self.zkey()));
                a.push(s(&self.bound()));
                a.push(s(&self.bound()));
            }
            750..=764 => {
                a.push(s("ZREMRANGEBYRANK"));
                a.push(s(&self.zkey()));
                a.push(s(&self.index()));
                a.push(s(&self.index()));
            }
            765..=779 => {
                a.push(s("ZREMRANGEBYSCORE"));
                a.push(s(&self.zkey()));
                a.push(s(&self.bound()));
                a.push(s(&self.bound()));
            }
            780..=809 => {
                a.push(s(self.pick(&["ZPOPMIN", "ZPOPMAX"])));
                a.push(s(&self.zkey()));
                if self.chance(0.5) {
                    a.push(self.rng.random_range(-1..4).to_string().into_bytes());
                }
            }
            810..=824 => {
                a.push(s(self.pick(&["ZUNIONSTORE", "ZINTERSTORE"])));
                a.push(s(self.pick(&["lb", "lb2", "lb3", "dst"])));
                let n = self.rng.random_range(1..=3);
                a.push(n.to_string().into_bytes());
                for _ in 0..n {
                    a.push(s(&self.zkey()));
                }
                if self.chance(0.4) {
                    a.push(s("WEIGHTS"));
                    for _ in 0..n {
                        a.push(s(self.pick(&["1", "2", "0.5", "-1", "0"])));
                    }
                }
                if self.chance(0.4) {
                    a.push(s("AGGREGATE"));
                    a.push(s(self.pick(&["SUM", "MIN", "MAX"])));
                }
            }
            825..=874 => {
                a.push(s("HSET"));
                a.push(s(&self.hkey()));
                for _ in 0..self.rng.random_range(1..=3) {
                    a.push(self.member());
                    a.push(s(&self.score()));
                }
            }
            875..=899 => {
                a.push(s("HDEL"));
                a.push(s(&self.hkey()));
                for _ in 0..self.rng.random_range(1..=2) {
                    a.push(self.member());
                }
            }
            900..=929 => {
                a.push(s(self.pick(&["HGET", "HEXISTS"])));
                a.push(s(&self.hkey()));
                a.push(self.member());
            }
            930..=939 => {
                a.push(s("HMGET"));
                a.push(s(&self.hkey()));
                for _ in 0..self.rng.random_range(1..=3) {
                    a.push(self.member());
                }
            }
            940..=949 => {
                a.push(s(self.pick(&["HLEN", "HGETALL"])));
                a.push(s(&self.hkey()));
            }
            950..=959 => {
                a.push(s(self.pick(&["DEL", "UNLINK"])));
                a.push(s(&self.zkey()));
            }
            960..=979 => {
                a.push(s("EXISTS"));
                for _ in 0..self.rng.random_range(1..=3) {
                    let k = if self.chance(0.3) {
                        self.hkey()
                    } else {
                        self.zkey()
                    };
                    a.push(s(&k));
                }
            }
            _ => {
                a.push(s("TYPE"));
                let k = if self.chance(0.3) {
                    self.hkey()
                } else {
                    self.zkey()
                };
                a.push(s(&k));
            }
        }
        a
    }
}

/// How many mismatches one seed reports before it gives up.
const RANDOM_MAX_MISMATCHES: usize = 5;

/// Runs `n` random commands from `seed` against both servers, pipelined
/// in random batches. A mismatch is reported with its seed, index,
/// command, both replies and the commands before it; since the states
/// may diverge after it, both databases are then flushed and the stream
/// goes on (so that one run finds more than one difference), up to
/// [`RANDOM_MAX_MISMATCHES`].
fn random_run(pair: &Pair, seed: u64, n: usize, proto: u8) -> Result<(), String> {
    let mut d = pair.diff(proto, &format!("random seed {seed}"));
    let mut g = Gen {
        rng: SmallRng::seed_from_u64(seed),
    };
    let cmds: Vec<Args> = (0..n).map(|_| g.command()).collect();
    if let Ok(dir) = std::env::var("RESP_DIFF_DUMP") {
        // The stream as RESP, one command after another, to replay by hand.
        let wire: Vec<u8> = cmds.iter().flat_map(|c| encode_command(c)).collect();
        std::fs::write(format!("{dir}/seed-{seed}-resp{proto}.resp"), wire)
            .expect("writing the RESP_DIFF_DUMP file");
    }
    let mut failures: Vec<String> = Vec::new();
    let mut i = 0;
    while i < n && failures.len() < RANDOM_MAX_MISMATCHES {
        let batch = g.rng.random_range(1..=32).min(n - i);
        let mut wire = Vec::new();
        for c in &cmds[i..i + batch] {
            wire.extend_from_slice(&encode_command(c));
        }
        d.redis.send_raw(&wire).expect("writing to redis");
        d.podium
            .send_raw(&wire)
            .map_err(|e| format!("seed {seed}: writing to podium: {e}"))?;
        let mut diverged = false;
        for (j, c) in cmds[i..i + batch].iter().enumerate() {
            let idx = i + j;
            let r = d.redis.read_reply().expect("redis reply");
            let p = d.podium.read_reply().map_err(|e| {
                format!(
                    "random differential test, resp{proto}: seed {seed}, command #{idx}: {}: podium did not answer: {e}",
                    clip(&show_args(c))
                )
            })?;
            let same = r == p
                || (c[0] == b"HGETALL"
                    && matches!(
                        (parse_one(&r), parse_one(&p)),
                        (Ok(rv), Ok(pv)) if resp::diff::pairs(&rv) == resp::diff::pairs(&pv)
                    ));
            if !same && !diverged {
                diverged = true;
                let from = idx.saturating_sub(12);
                let context: Vec<String> = cmds[from..idx]
                    .iter()
                    .enumerate()
                    .map(|(k, c)| format!("      #{} {}", from + k, clip(&show_args(c))))
                    .collect();
                let m = format!(
                    "random differential test, resp{proto}: seed {seed}, command #{idx} of {n}: {}\n    redis:  {}\n    podium: {}\n    preceding commands:\n{}\n    (rerun: RESP_DIFF_SEED={seed} cargo test -p podium-server --release --test resp_diff random)",
                    clip(&show_args(c)),
                    clip(&show(&r)),
                    clip(&show(&p)),
                    context.join("\n")
                );
                eprintln!("MISMATCH {m}");
                failures.push(m);
            }
        }
        if diverged {
            // Start both from the same (empty) state again.
            d.same("FLUSHALL");
        }
        i += batch;
    }
    // The final states agree too.
    for k in ["lb", "lb2", "lb3", "dst"] {
        d.check(&args(&["ZRANGE", k, "0", "-1", "WITHSCORES"]), Cmp::Exact);
    }
    for k in ["h", "h2"] {
        d.check(&args(&["HGETALL", k]), Cmp::Pairs);
    }
    d.check(&cmd("KEYS *"), Cmp::Sorted);
    failures.extend(d.mismatches().iter().cloned());
    eprintln!(
        "random seed {seed} resp{proto}: {i} of {n} commands run, {} mismatches",
        failures.len()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

#[test]
fn random_differential() {
    let pair = Pair::start();
    let n: usize = std::env::var("RESP_DIFF_COMMANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let runs: Vec<(u64, u8)> = match std::env::var("RESP_DIFF_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(seed) => vec![(seed, 2), (seed, 3)],
        None => vec![(1, 2), (2, 2), (3, 2), (4, 3)],
    };
    let failures: Vec<String> = runs
        .into_iter()
        .filter_map(|(seed, proto)| random_run(&pair, seed, n, proto).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ------------------------------------------------------------ bad input

/// Hostile input: each attack on its own connection to both servers,
/// compared with Redis where cheap; afterwards a new connection works
/// and a connection kept open across the attacks is unaffected.
#[test]
fn bad_input() {
    let mut pair = Pair::start();
    let mut keep = pair.diff(2, "bad-input");
    keep.same("ZADD keep 1 a 2 b");
    let within = Duration::from_secs(5);

    let attacks: Vec<(&str, Vec<u8>)> = vec![
        ("bulk length 2^40", b"*1\r\n$1099511627776\r\n".to_vec()),
        (
            "bulk length 2^40 mid-command",
            b"*2\r\n$4\r\nECHO\r\n$1099511627776\r\n".to_vec(),
        ),
        (
            "bulk length 2^63",
            b"*1\r\n$9223372036854775808\r\n".to_vec(),
        ),
        ("multibulk length 3e9", b"*3000000000\r\n".to_vec()),
        ("multibulk length not a number", b"*abc\r\n".to_vec()),
        ("bulk length not a number", b"*1\r\n$abc\r\n".to_vec()),
        ("negative bulk length", b"*1\r\n$-5\r\n".to_vec()),
        ("array of a simple string", b"*1\r\n+PING\r\n".to_vec()),
        (
            "array of an integer",
            b"*2\r\n$4\r\nECHO\r\n:5\r\n".to_vec(),
        ),
        ("unbalanced quotes inline", b"ECHO \"abc\r\n".to_vec()),
        ("4 MiB inline, no newline", vec![b'a'; 4 << 20]),
        ("70 kB inline, no newline", vec![b'a'; 70_000]),
        ("1 MiB inline with a newline", {
            let mut v = b"ECHO ".to_vec();
            v.extend(std::iter::repeat_n(b'a', 1 << 20));
            v.extend_from_slice(b"\r\n");
            v
        }),
        (
            "PING, then 2^40",
            b"PING\r\n*1\r\n$1099511627776\r\n".to_vec(),
        ),
    ];
    for (name, bytes) in &attacks {
        keep.raw_until_close(bytes, within);
        let mut fresh = Conn::open(&pair.other_addr());
        match fresh.request(&cmd("PING")) {
            Ok(r) if r == b"+PONG\r\n" => {}
            other => keep.fail(
                &format!("PING on a new connection after {name}"),
                &format!("{other:?}"),
                b"",
            ),
        }
        keep.same("ZRANGE keep 0 -1 WITHSCORES");
    }

    // Truncated frames, then the client closes (or half-closes): no
    // reply, no effect, the server closes its side.
    for frame in [
        &b"*3\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$1"[..],
        b"*3\r\n$4\r\nZADD\r\n$2\r\nlb",
        b"*3\r\n",
        b"*",
        b"*4\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$1\r\n1\r\n$1\r\n",
        b"*4\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$1\r\n1\r\n$1\r\na",
        b"ZADD lb 1 a",
    ] {
        let mut seen = Vec::new();
        for addr in [pair.redis.addr(), pair.other_addr()] {
            let mut c = Conn::open(&addr);
            let _ = c.send_raw(frame);
            c.shutdown_write();
            seen.push(c.drain_until_close(within));
            // And once more, closing without a half-close.
            let mut c = Conn::open(&addr);
            let _ = c.send_raw(frame);
            thread::sleep(Duration::from_millis(20));
            drop(c);
        }
        if seen[0] != seen[1] {
            let tag = |(b, closed): &(Vec<u8>, bool)| {
                let mut v = b.clone();
                v.extend_from_slice(if *closed {
                    b" <closed>"
                } else {
                    b" <still open>"
                });
                v
            };
            keep.record(
                "truncated frame, then EOF",
                &show(frame),
                &tag(&seen[0]),
                &tag(&seen[1]),
            );
        }
        keep.same("EXISTS lb");
        keep.same("ZRANGE keep 0 -1 WITHSCORES");
    }

    // Lenient framing Redis accepts: the two bytes after bulk data are
    // skipped unchecked.
    keep.raw_until_close(b"*1\r\n$4\r\nPINGxx", Duration::from_millis(500));

    // Deep pipelines: 20 000 commands in one write, replies in order.
    let mut wire = Vec::new();
    for i in 0..20_000 {
        wire.extend_from_slice(&encode_command(&args(&[
            "ZADD".to_string(),
            "pipe".to_string(),
            (i % 97).to_string(),
            format!("m{i}"),
        ])));
    }
    let mut rlast = Vec::new();
    let mut plast = Vec::new();
    for (side, addr) in [("redis", pair.redis.addr()), ("podium", pair.other_addr())] {
        let mut c = Conn::open(&addr);
        // Written from a thread, so that a server answering while it
        // reads cannot deadlock the test on full socket buffers.
        let mut w = c.writer().expect("cloning the socket");
        let bytes = wire.clone();
        let writer = thread::spawn(move || std::io::Write::write_all(&mut w, &bytes));
        let last = if side == "redis" {
            &mut rlast
        } else {
            &mut plast
        };
        for i in 0..20_000 {
            match c.read_reply() {
                Ok(r) => *last = r,
                Err(e) if side == "podium" => {
                    keep.fail("20000-command pipeline", &format!("reply {i}: {e}"), b"");
                    break;
                }
                Err(e) => panic!("redis pipeline reply {i}: {e}"),
            }
        }
        let _ = writer.join();
    }
    if rlast != plast {
        keep.record(
            "last reply of a 20000-command pipeline",
            "ZADD pipe …",
            &rlast,
            &plast,
        );
    }
    keep.same("ZCARD pipe");
    keep.same("ZRANGE pipe 0 9 WITHSCORES");

    // Large but legal bulk arguments.
    let big = vec![b'x'; 3 << 20];
    keep.same_args(&[&b"ECHO"[..], &big]);
    keep.same_args(&[&b"HSET"[..], b"bigv", b"f", &big]);
    keep.same_args(&[&b"HGET"[..], b"bigv", b"f"]);

    keep.same("PING");
    keep.same("ZRANGE keep 0 -1 WITHSCORES");
    assert!(
        pair.other_running(),
        "podium exited under bad input:\n{}",
        pair.other_output()
    );
    keep.finish();
}

/// Without redis-server the differential tests cannot run: they must
/// fail (pointing at scripts/test.sh), never pass vacuously.
#[test]
fn redis_server_is_installed() {
    resp::servers::require("redis-server");
    let r = resp::servers::RedisServer::start();
    let v = r.version();
    assert!(
        v.starts_with('7'),
        "the differential tests expect Redis 7 (Debian's 7.0), found {v}"
    );
}
