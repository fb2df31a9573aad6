//! WRONGTYPE and arity errors.

use super::*;

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
