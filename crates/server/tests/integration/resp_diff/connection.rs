//! Connection commands (PING, ECHO, HELLO, CLIENT, SELECT, …), inline
//! commands and framing.

use super::*;

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
