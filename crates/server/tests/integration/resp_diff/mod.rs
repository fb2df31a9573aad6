//! Differential tests of podium's Redis protocol (docs/spec.md §4 "Redis
//! protocol"): the same commands go to a real redis-server (Debian's
//! 7.0) and to podium, and the replies must be the same bytes.
//!
//! - hand-written sequences for every command and option of docs/spec.md §4, each
//!   run in RESP2 and again in RESP3 (after `HELLO 3`);
//! - ZRANK/ZREVRANK WITHSCORE (Redis 7.2, absent from Debian's 7.0)
//!   against hand-written expected bytes;
//! - a seeded random command stream, pipelined in random batches;
//! - Pub/Sub with subscribers on second connections, and keyspace
//!   notifications;
//! - bad input (huge bulk lengths, truncated frames, megabyte inline
//!   commands, malformed frames) with a second connection kept open
//!   across the attacks.
//!
//! redis-server must be installed: `scripts/test.sh` installs it. Without
//! it these tests fail and say so. `RESP_DIFF_AGAINST=redis` runs them
//! against a second redis-server instead of podium (the harness checking
//! itself).

use crate::support;

mod bad_input;
mod blocking;
mod connection;
mod databases;
mod errors;
mod hashes;
mod keys;
mod keyspace;
mod lex_and_algebra;
mod pubsub;
mod random;
mod scripting;
mod server;
mod sorted_sets;
mod strings;
mod transactions;

use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use support::resp::diff::{clip, Cmp, Diff};
use support::resp::wire::{
    args, cmd, encode_command, parse_one, show, show_args, Args, Conn, Value,
};
use support::resp::Pair;

/// A second connection to each server in the group's protocol: a client
/// that blocks or subscribes while the group's own connections write.
fn second(d: &mut Diff) -> (Conn, Conn) {
    let mut r = Conn::open(d.redis.addr());
    let mut p = Conn::open(d.podium.addr());
    if d.proto == 3 {
        r.call(&cmd("HELLO 3"));
        p.call(&cmd("HELLO 3"));
    }
    (r, p)
}

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

/// Without redis-server the differential tests cannot run: they must
/// fail (pointing at scripts/test.sh), never pass vacuously.
#[test]
fn redis_server_is_installed() {
    support::redis::require("redis-server");
    let r = support::redis::RedisServer::start();
    let v = r.version();
    assert!(
        v.starts_with('7'),
        "the differential tests expect Redis 7 (Debian's 7.0), found {v}"
    );
}

/// The raw RESP client's own parser: every reply type frames, round-trips
/// through [`encode`] and is not complete before its last byte.
mod wire {
    use support::resp::wire::{encode, parse, parse_one, show};

    use super::*;

    #[test]
    fn frames_every_type() {
        let samples: &[&[u8]] = &[
            b"+OK\r\n",
            b"-ERR x\r\n",
            b":-12\r\n",
            b"$3\r\na\r\n\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*2\r\n$1\r\na\r\n:1\r\n",
            b"_\r\n",
            b",1.5\r\n",
            b"#t\r\n",
            b"!5\r\nERR x\r\n",
            b"=7\r\ntxt:abc\r\n",
            b"(123\r\n",
            b"%1\r\n+a\r\n*0\r\n",
            b"~1\r\n:1\r\n",
            b">2\r\n+a\r\n+b\r\n",
            b"|1\r\n+k\r\n+v\r\n:5\r\n",
        ];
        for s in samples {
            let v = parse_one(s).unwrap();
            assert_eq!(encode(&v), *s);
            for cut in 0..s.len() {
                assert_eq!(parse(&s[..cut]).unwrap(), None, "{}", show(&s[..cut]));
            }
        }
    }
}
