//! Lua scripts against the real binary: a runaway script makes other
//! clients' commands answer BUSY past `--script-time-limit`, SCRIPT KILL
//! stops one that has not written and refuses one that has, and the hard
//! limit ends that one; under `kill -9` a script's writes are recovered
//! all or none, and every acknowledged script's are there.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use support::resp::wire::{args, cmd, Conn};
use support::resp::Podium;

const BUSY: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

fn eval(script: &str, rest: &[&str]) -> Vec<Vec<u8>> {
    let mut a = vec!["EVAL", script];
    a.extend_from_slice(rest);
    args(&a)
}

/// PINGs until the answer is BUSY, for at most `within`.
fn until_busy(c: &mut Conn, within: Duration) -> Vec<u8> {
    let end = Instant::now() + within;
    loop {
        let r = c.call(&cmd("PING"));
        if r == BUSY || Instant::now() > end {
            return r;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn busy_script_kill_and_the_hard_limit() {
    let p = Podium::start(&["--script-time-limit", "300"]);
    let mut runner = Conn::open(&p.addr());
    let mut other = Conn::open(&p.addr());
    assert_eq!(
        other.call(&cmd("SCRIPT KILL")),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );

    // A loop that writes nothing: BUSY past the limit, then killed. (Five
    // times: the other client's connection may be queued on the worker the
    // script started on, which must be handed over every time.)
    let spin = "local i = 0 while true do i = i + 1 end";
    let sha = sha(spin);
    for _ in 0..5 {
        runner.send(&eval(spin, &["0"])).unwrap();
        assert_eq!(until_busy(&mut other, Duration::from_secs(5)), BUSY);
        assert_eq!(other.call(&cmd("ZCARD z")), BUSY);
        assert_eq!(other.call(&cmd("SCRIPT KILL")), b"+OK\r\n");
        let killed = runner.read_reply().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&killed),
            format!(
                "-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n"
            )
        );
        assert_eq!(other.call(&cmd("PING")), b"+PONG\r\n");
        assert_eq!(runner.call(&cmd("PING")), b"+PONG\r\n");
    }

    // One that has written cannot be killed; the hard limit (ten times the
    // time limit) stops it, and what it wrote stays.
    let writer = "redis.call('HSET', 'h', 'f', 'v') while true do end";
    let started = Instant::now();
    runner.send(&eval(writer, &["0"])).unwrap();
    assert_eq!(until_busy(&mut other, Duration::from_secs(5)), BUSY);
    let refused = other.call(&cmd("SCRIPT KILL"));
    assert!(
        refused.starts_with(b"-UNKILLABLE Sorry the script already executed write commands"),
        "{}",
        String::from_utf8_lossy(&refused)
    );
    let stopped = runner.read_reply().unwrap();
    let took = started.elapsed();
    assert!(
        stopped.starts_with(b"-ERR Script stopped: it ran past "),
        "{}",
        String::from_utf8_lossy(&stopped)
    );
    assert!(
        took >= Duration::from_millis(3000) && took < Duration::from_secs(20),
        "stopped after {took:?}"
    );
    assert_eq!(other.call(&cmd("HGET h f")), b"$1\r\nv\r\n");
}

fn sha(body: &str) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Scripts that each write the same token into N keys and count
/// themselves run from several connections while the server is killed:
/// after recovery every key holds one token (no script half applied) and
/// the count covers every acknowledged script.
#[test]
fn a_script_is_durable_as_one_unit_under_kill_9() {
    const N: usize = 20;
    // (The harness serves with `--fsync always`.)
    let mut p = Podium::start(&[]);
    let script = "for i = 1, tonumber(ARGV[2]) do \
                    redis.call('HSET', 'k' .. i, 'token', ARGV[1]) \
                  end \
                  return redis.call('HINCRBY', 'count', 'n', 1)";
    let acked = Arc::new(Mutex::new(0i64));
    let stop = Arc::new(AtomicBool::new(false));
    let addr = p.addr();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (acked, stop, addr) = (acked.clone(), stop.clone(), addr.clone());
            thread::spawn(move || {
                let Ok(mut c) = Conn::connect(&addr) else {
                    return;
                };
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let token = format!("w{w}-{i}");
                    let n = N.to_string();
                    let Ok(r) = c.request(&eval(script, &["0", &token, &n])) else {
                        return;
                    };
                    let Some(count) = std::str::from_utf8(&r)
                        .ok()
                        .and_then(|s| s.strip_prefix(':'))
                        .and_then(|s| s.trim().parse::<i64>().ok())
                    else {
                        panic!("{}", String::from_utf8_lossy(&r));
                    };
                    let mut a = acked.lock().unwrap();
                    *a = (*a).max(count);
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(1500));
    p.restart();
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let acked = *acked.lock().unwrap();
    assert!(acked > 10, "only {acked} scripts ran before the kill");
    let mut c = Conn::open(&p.addr());
    let count = c.call_str("HGET count n").text().unwrap_or_default();
    let count: i64 = count.parse().unwrap_or(0);
    assert!(
        count >= acked,
        "{acked} scripts were acknowledged, {count} recovered"
    );
    let first = c.call_str("HGET k1 token").text();
    assert!(first.is_some(), "no script's writes were recovered");
    for i in 2..=N {
        assert_eq!(
            c.call_str(&format!("HGET k{i} token")).text(),
            first,
            "key k{i} holds another script's token than k1: a script was half applied"
        );
    }
}
