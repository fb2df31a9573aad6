//! Blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP): at once when a key has
//! members, their argument errors, timeouts, MULTI (never blocks), and
//! clients blocked on second connections woken by another client's
//! writes — in the order they blocked, one member each, by any write that
//! gives a key members (ZADD, ZUNIONSTORE, RENAME, COPY, a transaction).

use std::time::Instant;

use super::*;

/// `blocked_clients` of INFO on a connection.
fn blocked_clients(c: &mut Conn) -> i64 {
    let info = c.call_str("INFO clients").text().unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

/// Waits until both servers count `n` blocked clients (so the order in
/// which clients blocked is the order they were sent in).
fn wait_blocked(d: &mut Diff, n: i64) {
    let t = Instant::now();
    loop {
        let (r, p) = (
            blocked_clients(&mut d.redis),
            blocked_clients(&mut d.podium),
        );
        if r == n && p == n {
            return;
        }
        if t.elapsed() > Duration::from_secs(10) {
            d.fail(
                &format!("waiting for {n} blocked clients"),
                &format!("redis has {r}, podium {p}"),
                b"",
            );
            return;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `line` on a second pair of connections, where it blocks.
fn block(d: &mut Diff, line: &str) -> (Conn, Conn, String) {
    let (mut r, mut p) = second(d);
    r.send(&cmd(line)).expect("writing to redis");
    p.send(&cmd(line)).expect("writing to podium");
    (r, p, line.to_string())
}

/// Reads the reply a blocked pair got, and compares.
fn served(d: &mut Diff, pair: &mut (Conn, Conn, String)) {
    let r = pair
        .0
        .read_reply()
        .expect("redis answers the blocked client");
    let p = pair
        .1
        .read_reply()
        .unwrap_or_else(|e| e.to_string().into_bytes());
    if r != p {
        let what = format!("blocked {}", pair.2);
        d.record("blocked client's reply", &what, &r, &p);
    }
}

fn at_once(d: &mut Diff) {
    d.same("ZADD bz 1 a 2 b 3 c 4 d");
    d.same("BZPOPMIN bz 0");
    d.same("BZPOPMAX bz 0");
    d.same("BZPOPMIN nokey bz 1");
    d.same("BZPOPMAX nokey other bz 0.5");
    d.same("ZADD bz 10 x 11 y");
    d.same("BZMPOP 0 2 nokey bz MIN");
    d.same("ZADD bz 1 a 2 b 3 c -0 z");
    d.same("BZMPOP 0 2 nokey bz MAX COUNT 2");
    d.same("BZMPOP 1 1 bz MIN COUNT 10");
    d.same("EXISTS bz");
    d.same("HSET hh f v");
    d.same("BZPOPMIN hh 0");
    d.same("BZPOPMIN nokey hh 0");
    d.same("ZADD bz 5 e");
    d.same("BZPOPMIN bz hh 0");
    d.same("BZMPOP 0 1 hh MIN");
    // Arguments.
    d.same("BZPOPMIN");
    d.same("BZPOPMIN bz");
    d.same("BZPOPMAX bz");
    for t in [
        "x", "-1", "inf", "-inf", "nan", "1e400", "9.3e15", "1x", "0x", "",
    ] {
        d.same_args(&["BZPOPMIN", "bz", t]);
        d.same_args(&["BZMPOP", t, "1", "bz", "MIN"]);
    }
    d.same_args(&["BZPOPMAX", "bz", " 1"]);
    d.same("BZMPOP 0 1 bz");
    d.same("BZMPOP 0 0 bz MIN");
    d.same("BZMPOP 0 -1 bz MIN");
    d.same("BZMPOP 0 x bz MIN");
    d.same("BZMPOP 0 2 bz MIN");
    d.same("BZMPOP 0 1 bz FOO");
    d.same("BZMPOP 0 1 bz MIN COUNT 0");
    d.same("BZMPOP 0 1 bz MIN COUNT -1");
    d.same("BZMPOP 0 1 bz MIN COUNT");
    d.same("BZMPOP 0 1 bz MIN LIMIT 1");
    // BZMPOP checks numkeys, the side and the options before the timeout.
    d.same("BZMPOP x 0 bz MIN");
    d.same("BZMPOP x abc bz MIN");
    d.same("BZMPOP -1 5 bz MIN");
    d.same("BZMPOP x 1 bz FOO");
    d.same("BZMPOP x 1 bz MIN COUNT 0");
    d.same("BZMPOP x 1 bz MIN COUNT 1 extra");
    d.same("BZMPOP -1 1 bz MIN COUNT 1");
    d.same("BZMPOP nan 1 bz MIN");
    // A string key is WRONGTYPE, first or after an empty key.
    d.same("SET bs v");
    d.same("BZPOPMIN bs 0");
    d.same("BZPOPMAX nokey bs 0");
    d.same("BZMPOP 0 2 nokey bs MIN");
    // Timeouts: nothing to pop, a null after the time.
    d.same("BZPOPMIN nokey 0.01");
    d.same("BZPOPMAX nokey other 0.02");
    d.same("BZMPOP 0.01 2 nokey other MAX COUNT 3");
    d.same("BZPOPMIN nokey -0.0001x");
    // Inside MULTI they never block.
    d.same("MULTI");
    d.same("BZPOPMIN nokey 0");
    d.same("BZMPOP 0 1 nokey MIN");
    d.same("BZPOPMAX bz 0");
    d.same("BZMPOP 0 2 nokey bs MAX");
    d.same("EXEC");
    // Scripts: BZMPOP answers at once (nil), BZPOPMIN and BZPOPMAX are
    // refused there.
    for (script, key) in [
        ("return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "nokey"),
        (
            "return redis.pcall('bzmpop', 0, 1, KEYS[1], 'max')",
            "nokey",
        ),
        ("return redis.call('bzmpop', 0, 1, KEYS[1], 'max')", "bz"),
        ("return redis.call('bzpopmin', KEYS[1], 0)", "nokey"),
        ("return redis.pcall('bzpopmax', KEYS[1], 0)", "bz"),
        ("return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "bs"),
        (
            "return redis.pcall('bzmpop', 'x', 1, KEYS[1], 'min')",
            "nokey",
        ),
    ] {
        d.same_args(&["EVAL", script, "1", key]);
    }
}

fn woken(d: &mut Diff) {
    // One blocked client, woken by a ZADD.
    let mut b = block(d, "BZPOPMIN wk 0");
    wait_blocked(d, 1);
    d.same("ZADD wk 5 x 6 y");
    served(d, &mut b);
    wait_blocked(d, 0);
    d.same("ZRANGE wk 0 -1 WITHSCORES");

    // Several keys: the one written is popped.
    let mut b = block(d, "BZPOPMAX k1 k2 k3 0");
    wait_blocked(d, 1);
    d.same("HSET k1 f v");
    d.same("ZADD k3 1 a 2 b");
    served(d, &mut b);

    // Three clients on one key, served in the order they blocked, one
    // member each; the third waits for the next write.
    let mut b1 = block(d, "BZPOPMIN q 0");
    wait_blocked(d, 1);
    let mut b2 = block(d, "BZMPOP 0 1 q MIN COUNT 1");
    wait_blocked(d, 2);
    let mut b3 = block(d, "BZPOPMAX other q 0");
    wait_blocked(d, 3);
    d.same("ZADD q 1 a 2 b");
    served(d, &mut b1);
    served(d, &mut b2);
    wait_blocked(d, 1);
    d.same("ZCARD q");
    d.same("ZADD q 3 c");
    served(d, &mut b3);
    d.same("EXISTS q");

    // A client blocked in database 5 is woken by a write to its key in
    // database 5, not by one to the same name in database 0.
    let (mut r, mut p) = second(d);
    for c in [&mut r, &mut p] {
        c.call(&cmd("SELECT 5"));
        c.send(&cmd("BZPOPMAX dbk 0")).expect("writing");
    }
    let mut b = (r, p, "BZPOPMAX dbk 0 (database 5)".to_string());
    wait_blocked(d, 1);
    d.same("ZADD dbk 1 in0");
    wait_blocked(d, 1);
    d.same("SELECT 5");
    d.same("ZADD dbk 2 in5");
    served(d, &mut b);
    wait_blocked(d, 0);
    d.same("ZCARD dbk");
    d.same("SELECT 0");
    d.same("ZRANGE dbk 0 -1 WITHSCORES");

    // BZMPOP with a count takes what there is.
    let mut b = block(d, "BZMPOP 0 2 m1 m2 MAX COUNT 10");
    wait_blocked(d, 1);
    d.same("ZADD m2 1 x 2 y 3 z");
    served(d, &mut b);

    // Stores, renames, copies and transactions wake too.
    let mut b = block(d, "BZPOPMIN un 0");
    wait_blocked(d, 1);
    d.same("ZADD src 1 a 2 b");
    d.same("ZUNIONSTORE un 1 src WEIGHTS 10");
    served(d, &mut b);
    let mut b = block(d, "BZPOPMAX rn 0");
    wait_blocked(d, 1);
    d.same("RENAME src rn");
    served(d, &mut b);
    let mut b = block(d, "BZPOPMIN cp 0");
    wait_blocked(d, 1);
    d.same("COPY rn cp");
    served(d, &mut b);
    let mut b = block(d, "BZPOPMIN mx 0");
    wait_blocked(d, 1);
    d.same("MULTI");
    d.same("ZADD mx 2 b");
    d.same("ZADD mx 1 a");
    d.same("EXEC");
    served(d, &mut b);
    d.same("ZRANGE mx 0 -1 WITHSCORES");

    // A timeout while blocked; then the key gets members nobody takes.
    let mut b = block(d, "BZPOPMIN late 0.05");
    served(d, &mut b);
    wait_blocked(d, 0);
    d.same("ZADD late 1 a");
    d.same("ZCARD late");

    // A client that leaves while blocked is no longer blocked: the next
    // write's member stays.
    let b = block(d, "BZPOPMIN gone 0");
    wait_blocked(d, 1);
    drop(b);
    wait_blocked(d, 0);
    d.same("ZADD gone 1 a");
    d.same("ZCARD gone");

    // Commands sent behind a blocked one wait for it.
    let (mut r, mut p) = second(d);
    let line = b"BZPOPMIN behind 0\r\nPING\r\n";
    r.send_raw(line).unwrap();
    p.send_raw(line).unwrap();
    let mut b = (r, p, "BZPOPMIN behind 0; PING".to_string());
    wait_blocked(d, 1);
    d.same("ZADD behind 4 m");
    served(d, &mut b);
    served(d, &mut b);
    d.same("FLUSHALL");
}

#[test]
fn blocking_pops_at_once() {
    run_group("blocking pops at once", at_once);
}

#[test]
fn blocked_clients_are_woken_in_order() {
    run_group("blocked clients", woken);
}

/// CLIENT UNBLOCK of a client blocked on each server (each by its own
/// id): 1, and the blocked client gets its timeout's null or the
/// UNBLOCKED error; 0 for a client not blocked.
fn unblock(d: &mut Diff) {
    d.same("CLIENT UNBLOCK");
    d.same("CLIENT UNBLOCK x");
    d.same("CLIENT UNBLOCK x foo");
    d.same("CLIENT UNBLOCK 1 foo");
    d.same("CLIENT UNBLOCK x error");
    d.same("CLIENT UNBLOCK 999999 timeout extra");
    d.same("CLIENT UNBLOCK 999999");
    d.same("CLIENT UNBLOCK 999999 ERROR");
    for (line, reason) in [
        ("BZPOPMIN ub 0", ""),
        ("BZPOPMAX ub other 100", "TIMEOUT"),
        ("BZMPOP 0 1 ub MIN COUNT 2", "error"),
        ("BZPOPMIN ub 0", "ERROR"),
    ] {
        let (mut r, mut p) = second(d);
        let id = |c: &mut Conn| {
            c.call_str("CLIENT ID")
                .int()
                .expect("CLIENT ID")
                .to_string()
        };
        let (rid, pid) = (id(&mut r), id(&mut p));
        let mut pair = (r, p, line.to_string());
        pair.0.send(&cmd(line)).expect("writing to redis");
        pair.1.send(&cmd(line)).expect("writing to podium");
        wait_blocked(d, 1);
        let unblock = |id: &str| {
            let mut a = vec!["CLIENT", "UNBLOCK", id];
            if !reason.is_empty() {
                a.push(reason);
            }
            args(&a)
        };
        let r = d.redis.call(&unblock(&rid));
        let p = d.podium.call(&unblock(&pid));
        if r != p {
            d.record("CLIENT UNBLOCK", line, &r, &p);
        }
        served(d, &mut pair);
        wait_blocked(d, 0);
        // No longer blocked: 0, and the connection runs commands again.
        let r = d.redis.call(&unblock(&rid));
        let p = d.podium.call(&unblock(&pid));
        if r != p {
            d.record("CLIENT UNBLOCK of a served client", line, &r, &p);
        }
        let (r, p) = (pair.0.call(&cmd("PING")), pair.1.call(&cmd("PING")));
        if r != p {
            d.record("PING after CLIENT UNBLOCK", line, &r, &p);
        }
    }
    d.same("EXISTS ub");
}

#[test]
fn client_unblock() {
    run_group("client unblock", unblock);
}
