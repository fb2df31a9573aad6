//! MULTI, EXEC and DISCARD.

use super::*;

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
