//! Numbered databases: SELECT, keys of one name in several databases,
//! the whole-keyspace commands of one database (KEYS, SCAN, DBSIZE,
//! RANDOMKEY, FLUSHDB), FLUSHALL, SWAPDB, MOVE, SELECT inside MULTI and
//! inside a script, and INFO's keyspace lines.

use super::*;

/// INFO keyspace, each line compared with its `avg_ttl` masked: Redis
/// estimates it in its expiry cycle (0 until that has run), podium
/// computes it when asked.
fn keyspace(d: &mut Diff) {
    let a = cmd("INFO keyspace");
    let Some((r, p)) = d.both(&a) else { return };
    let mask = |b: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(b)
            .split("\r\n")
            .skip(1)
            .map(|l| match l.find("avg_ttl=") {
                Some(at) => format!("{}avg_ttl=N", &l[..at]),
                None => l.to_string(),
            })
            .collect()
    };
    if mask(&r) != mask(&p) {
        d.record("INFO keyspace (avg_ttl masked)", "INFO keyspace", &r, &p);
    }
}

fn eval(d: &mut Diff, script: &str) {
    d.same_args(&["EVAL", script, "0"]);
}

fn databases(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("SELECT 0");
    d.same("SELECT 15");
    d.same("SELECT 16");
    d.same("SELECT -1");
    d.same("SELECT 2147483648");
    d.same("SELECT 99999999999999999999");
    d.same("MOVE k 2147483648");
    d.same("SWAPDB 2147483648 0");
    d.same("SELECT x");
    d.same("SELECT 1.5");
    d.same("SELECT");
    d.same("SELECT 1 2");
    d.same("CONFIG GET databases");

    // One name, three databases, three types.
    d.same("SELECT 0");
    d.same("ZADD lb 1 a 2 b");
    d.same("HSET h f v");
    d.same("SET s zero");
    d.same_args(&["SET", "\x01odd", "escaped"]);
    d.same("SELECT 15");
    d.same("ZSCORE lb a");
    d.same("EXISTS lb h s");
    d.same("SET lb fifteen");
    d.same("ZADD board15 3 x 4 y");
    d.same("EXPIRE board15 1000");
    d.ttl("TTL board15", 1);
    d.same("DBSIZE");
    d.sorted("KEYS *");
    d.sorted("KEYS b*");
    d.scan_union(|c| args(&["SCAN", c]), false);
    d.scan_union(|c| args(&["SCAN", c, "COUNT", "1", "TYPE", "zset"]), false);
    d.same("SELECT 3");
    d.same("HSET lb f three");
    d.same("RANDOMKEY");
    d.same("SELECT 7");
    d.same("RANDOMKEY");
    d.same("DBSIZE");
    d.same("KEYS *");
    d.same("SELECT 0");
    d.same("GET lb");
    d.same("ZRANGE lb 0 -1 WITHSCORES");
    d.same("DBSIZE");
    d.sorted("KEYS *");
    d.same("GET \x01odd");
    d.scan_union(|c| args(&["SCAN", c, "COUNT", "2"]), false);
    keyspace(d);

    // MOVE: same database, out of range, missing key, taken name, a move.
    d.same("MOVE lb 0");
    d.same("MOVE lb 16");
    d.same("MOVE lb -1");
    d.same("MOVE lb x");
    d.same("MOVE nosuch 5");
    d.same("MOVE lb 15");
    d.same("MOVE lb 5");
    d.same("MOVE s 15");
    d.same("MOVE");
    d.same("EXISTS lb s");
    d.same("SELECT 5");
    d.same("ZRANGE lb 0 -1 WITHSCORES");
    d.same("SELECT 15");
    d.same("GET s");
    d.ttl("TTL board15", 1);
    d.same("MOVE board15 4");
    d.same("SELECT 4");
    d.ttl("TTL board15", 1);
    d.same("ZCARD board15");

    // COPY … DB: errors, the same name in another database, REPLACE, every
    // type; the copy is in the target database only.
    d.same("HSET ch f v");
    d.same("SET cs 42");
    d.same("COPY board15 board15");
    d.same("COPY board15 board15 DB 4");
    d.same("COPY board15 board15 DB 16");
    d.same("COPY board15 board15 DB x");
    d.same("COPY board15 board15 DB 2147483648");
    d.same("COPY board15 board15 DB 9");
    d.same("COPY board15 board15 DB 9");
    d.same("COPY ch board15 DB 9 REPLACE");
    d.same("COPY cs cs DB 0");
    d.same("COPY nosuch x DB 9");
    d.same("SELECT 9");
    d.same("TYPE board15");
    d.same("HGETALL board15");
    d.same("SELECT 0");
    d.same("GET cs");
    d.same("SELECT 4");
    d.same("DEL ch cs");

    // SWAPDB: errors, a swap with an empty database, a swap of two.
    d.same("SWAPDB x 1");
    d.same("SWAPDB 1 x");
    d.same("SWAPDB 0 16");
    d.same("SWAPDB -1 0");
    d.same("SWAPDB 0");
    d.same("SWAPDB 4 4");
    d.same("SWAPDB 4 9");
    d.same("DBSIZE");
    d.same("SELECT 9");
    d.same("ZCARD board15");
    d.same("SWAPDB 0 15");
    d.sorted("KEYS *");
    d.same("SELECT 0");
    d.sorted("KEYS *");
    d.same("GET s");
    keyspace(d);

    // FLUSHDB empties one database; FLUSHALL every one.
    d.same("SELECT 15");
    d.same("FLUSHDB");
    d.same("FLUSHDB ASYNC");
    d.same("FLUSHDB now");
    d.same("DBSIZE");
    d.same("SELECT 0");
    d.same("DBSIZE");
    keyspace(d);
    d.same("FLUSHALL");
    d.same("SELECT 9");
    d.same("DBSIZE");
    keyspace(d);
    d.same("SELECT 0");
}

fn in_transactions_and_scripts(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("SELECT 0");
    // A SELECT inside MULTI moves the rest of the transaction, and the
    // connection, to that database.
    d.same("MULTI");
    d.same("SET k zero");
    d.same("SELECT 3");
    d.same("SET k three");
    d.same("SELECT 99");
    d.same("GET k");
    d.same("EXEC");
    d.same("GET k");
    d.same("SELECT 0");
    d.same("GET k");
    d.same("MULTI");
    d.same("SELECT 2");
    d.same("ZADD t 1 m");
    d.same("MOVE t 0");
    d.same("SWAPDB 0 2");
    d.same("EXEC");
    d.same("DBSIZE");
    d.same("SELECT 0");
    d.same("ZRANGE t 0 -1");

    // A script's SELECT is its own: the caller stays where it was.
    d.same("FLUSHALL");
    eval(
        d,
        "redis.call('select', 6); redis.call('set', 'k', 'six'); return redis.call('dbsize')",
    );
    d.same("DBSIZE");
    d.same("GET k");
    eval(d, "return redis.call('select', 99)");
    eval(d, "return redis.pcall('select', 'x')");
    d.same("SELECT 6");
    d.same("GET k");
    eval(d, "return redis.call('get', 'k')");
    d.same("SELECT 0");

    // RESET goes back to database 0; HELLO does not.
    d.same("SELECT 6");
    d.hello("HELLO 3");
    d.same("GET k");
    d.same("RESET");
    d.same("GET k");
    d.same("DBSIZE");
    d.same("FLUSHALL");
}

#[test]
fn numbered_databases() {
    run_group("databases", databases);
}

#[test]
fn databases_in_transactions_and_scripts() {
    run_group("databases in transactions", in_transactions_and_scripts);
}
