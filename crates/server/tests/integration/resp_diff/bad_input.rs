//! Hostile input: huge bulk lengths, truncated frames, megabyte inline
//! commands, malformed frames.

use super::*;

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
