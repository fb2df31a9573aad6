//! Key commands and expiry.

use super::*;

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

/// EXPIRETIME, PEXPIRETIME, TOUCH and RANDOMKEY.
fn more_keys(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("RANDOMKEY");
    d.same("RANDOMKEY extra");
    d.same("ZADD only 1 a");
    d.same("RANDOMKEY");
    d.same("HSET h f v");
    d.same("EXPIRETIME nokey");
    d.same("PEXPIRETIME nokey");
    d.same("EXPIRETIME h");
    d.same("PEXPIRETIME only");
    // An absolute expiry far ahead reads back as set.
    d.same("EXPIREAT h 4102444800");
    d.same("EXPIRETIME h");
    d.same("PEXPIRETIME h");
    d.same("PEXPIREAT only 4102444800123");
    d.same("PEXPIRETIME only");
    d.same("EXPIRETIME only");
    d.same("PEXPIREAT only 4102444800499");
    d.same("EXPIRETIME only");
    d.same("PEXPIREAT only 4102444800500");
    d.same("EXPIRETIME only");
    d.same("PERSIST only");
    d.same("EXPIRETIME only");
    d.same("EXPIRETIME");
    d.same("EXPIRETIME h extra");
    d.same("TOUCH h");
    d.same("TOUCH h only nokey h");
    d.same("TOUCH nokey");
    d.same("TOUCH");
    d.podium_check(&cmd("RANDOMKEY"), |v| match v.bytes() {
        Some(b"h") | Some(b"only") => Ok(()),
        _ => Err(format!("{v:?} is not a key")),
    });
}

#[test]
fn more_key_commands() {
    run_group("more keys", more_keys);
}

/// MEMORY USAGE: podium's estimate is its own, so only the reply's shape
/// is compared (a number, or null for no key).
fn memory_usage_shape(d: &mut Diff, line: &str) {
    let a = cmd(line);
    let Some((r, p)) = d.both(&a) else { return };
    let shape = |raw: &[u8]| match parse_one(raw) {
        Ok(v) if v.int().is_some_and(|n| n > 0) => "a positive integer".to_string(),
        Ok(v) => format!("{v:?}"),
        Err(e) => e.0,
    };
    if shape(&r) != shape(&p) {
        d.record("MEMORY USAGE's shape", line, &r, &p);
    }
}

fn renames_copies_objects(d: &mut Diff) {
    d.same("ZADD z 1 a 2 b -0 c");
    d.same("HSET h f v g w");
    d.same("RENAME");
    d.same("RENAME z");
    d.same("RENAME z y x");
    d.same("RENAME nokey other");
    d.same("RENAME nokey nokey");
    d.same("RENAMENX nokey other");
    d.same("RENAME z z");
    d.same("RENAMENX z z");
    d.same("RENAMENX z h");
    d.same("RENAME z z2");
    d.same("EXISTS z z2");
    d.same("ZRANGE z2 0 -1 WITHSCORES");
    d.same("RENAMENX z2 z");
    d.same("ZSCORE z c");
    // The destination is replaced whatever its type; the expiry moves.
    d.same("EXPIRE z 1000");
    d.same("RENAME z h");
    d.same("TYPE h");
    d.ttl("TTL h", 1);
    d.same("TTL z");
    d.same("HSET h2 f v");
    d.same("RENAME h2 h");
    d.same("TYPE h");
    d.same("TTL h");
    d.same("HGETALL h");
    d.same("ZADD z 3 m");
    d.same("RENAME h z");
    d.same("TYPE z");
    d.same("ZADD z 1 x");
    d.same("PEXPIRE z 100000");
    d.same("RENAMENX z z3");
    d.same("RENAME z3 z");
    // COPY.
    d.same("COPY");
    d.same("COPY z");
    d.same("COPY z z");
    d.same("COPY nokey z");
    d.same("COPY nokey nokey2");
    d.same("COPY z zc");
    d.same("ZRANGE zc 0 -1 WITHSCORES");
    d.ttl("PTTL zc", 100);
    d.same("COPY z zc");
    d.same("ZADD zc 9 only");
    d.same("COPY z zc REPLACE");
    d.same("ZRANGE zc 0 -1 WITHSCORES");
    d.same("ZCARD z");
    d.same("HSET hc f v");
    d.same("COPY hc z");
    d.same("COPY hc z replace");
    d.same("TYPE z");
    d.same("HGETALL z");
    d.same("COPY zc hc REPLACE");
    d.same("TYPE hc");
    d.same("COPY zc x DB 0");
    d.same("COPY zc x db 0 replace");
    d.same("COPY zc x DB x");
    d.same("COPY zc x DB 99999999999");
    d.same("COPY zc x DB");
    d.same("COPY zc x FOO");
    d.same("COPY zc x REPLACE FOO");
    d.same("COPY zc zc DB 0");
    // OBJECT and MEMORY USAGE.
    d.same("ZADD small 1 a 2 b");
    d.same("OBJECT ENCODING small");
    let long = "m".repeat(65);
    d.same(&format!("ZADD long 1 {long}"));
    d.same("OBJECT ENCODING long");
    let mut big = vec!["ZADD".to_string(), "big".to_string()];
    for i in 0..129 {
        big.push(i.to_string());
        big.push(format!("m{i}"));
    }
    d.same_args(&big);
    d.same("OBJECT ENCODING big");
    d.same("HSET hs f v");
    d.same("OBJECT ENCODING hs");
    d.same(&format!("HSET hl f {long}"));
    d.same("OBJECT ENCODING hl");
    let mut bigh = vec!["HSET".to_string(), "bigh".to_string()];
    for i in 0..512 {
        bigh.push(format!("f{i}"));
        bigh.push("v".to_string());
    }
    d.same_args(&bigh);
    d.same("OBJECT encoding bigh");
    d.same("HSET bigh one-more v");
    d.same("OBJECT ENCODING bigh");
    d.same("OBJECT ENCODING nokey");
    d.same("OBJECT REFCOUNT small");
    d.same("OBJECT REFCOUNT hs");
    d.same("OBJECT REFCOUNT nokey");
    // Whole seconds since the last touch: a loaded machine can put the
    // two servers on either side of a second.
    d.ttl("OBJECT IDLETIME small", 2);
    d.same("OBJECT IDLETIME nokey");
    d.same("OBJECT FREQ small");
    d.same("OBJECT FREQ nokey");
    d.same("OBJECT HELP");
    d.same("OBJECT help extra");
    d.same("OBJECT");
    d.same("OBJECT FOO");
    d.same("OBJECT ENCODING");
    d.same("OBJECT ENCODING a b");
    d.same("MEMORY");
    d.same("MEMORY FOO");
    d.same("MEMORY HELP");
    d.same("MEMORY USAGE");
    for line in [
        "MEMORY USAGE small",
        "MEMORY USAGE big",
        "MEMORY USAGE hs",
        "MEMORY USAGE bigh",
        "MEMORY USAGE nokey",
        "MEMORY USAGE small SAMPLES 0",
        "MEMORY USAGE small samples 5",
        "MEMORY USAGE nokey SAMPLES 5",
    ] {
        memory_usage_shape(d, line);
    }
    d.same("MEMORY USAGE small SAMPLES -1");
    d.same("MEMORY USAGE small SAMPLES x");
    d.same("MEMORY USAGE small SAMPLES");
    d.same("MEMORY USAGE small FOO");
    d.same("MEMORY USAGE nokey FOO");
    // Strings: moved and copied with their expiry, over any type, and
    // their encodings by Redis's rules.
    d.same("SET s1 hello");
    d.same("PEXPIRE s1 100000");
    d.same("RENAME s1 s2");
    d.same("EXISTS s1");
    d.same("GET s2");
    d.ttl("PTTL s2", 100);
    d.same("RENAMENX s2 hs");
    d.same("COPY s2 hs");
    d.same("COPY s2 hs REPLACE");
    d.same("TYPE hs");
    d.same("GET hs");
    d.ttl("PTTL hs", 100);
    d.same("HSET hs f v");
    d.same("ZADD hs 1 a");
    d.same("RENAME hs small");
    d.same("TYPE small");
    d.same("ZADD small 1 a");
    d.same("ZRANGE small 0 -1");
    d.same("APPEND small !");
    d.same("COPY big small REPLACE");
    d.same("TYPE small");
    d.same("ZCARD small");
    d.same("SET s3 v");
    d.same("RENAME small s3");
    d.same("TYPE s3");
    d.same("COPY s2 s3 REPLACE");
    d.same("GET s3");
    d.same("RENAME s3 z");
    d.same("GET z");
    d.same("ZSCORE z m");
    d.same("SET small v");
    d.same("ZADD small 1 a 2 b");
    d.same("DEL small");
    d.same("ZADD small 1 a 2 b");
    for (key, value) in [
        ("si", "12345"),
        ("sn", "-9223372036854775808"),
        ("so", "9223372036854775808"),
        ("sz", "0"),
        ("sm", "-0"),
        ("sl", "012"),
        ("sp", "+1"),
        ("sf", "1.5"),
        ("sb", "10000"),
        ("s44", "abcdefghijabcdefghijabcdefghijabcdefghij1234"),
        ("s45", "abcdefghijabcdefghijabcdefghijabcdefghij12345"),
        ("se", ""),
    ] {
        d.same_args(&["SET", key, value]);
        d.same_args(&["OBJECT", "ENCODING", key]);
        d.same_args(&["OBJECT", "REFCOUNT", key]);
        d.same_args(&["TYPE", key]);
        memory_usage_shape(d, &format!("MEMORY USAGE {key}"));
    }
    d.same("INCR counter");
    d.same("OBJECT ENCODING counter");
    d.same("OBJECT REFCOUNT counter");
    d.same("INCRBY counter 99999");
    d.same("OBJECT ENCODING counter");
    d.same("OBJECT REFCOUNT counter");
    d.same("MSET m1 7 m2 seven");
    d.same("OBJECT ENCODING m1");
    d.same("OBJECT ENCODING m2");
    d.same("RENAME m1 m3");
    d.same("OBJECT ENCODING m3");
    d.same("COPY s45 m4");
    d.same("OBJECT ENCODING m4");
    d.ttl("OBJECT IDLETIME m4", 2);
    // Inside a transaction.
    d.same("MULTI");
    d.same("RENAME small s2");
    d.same("COPY s2 s3");
    d.same("OBJECT ENCODING s3");
    d.same("RENAME nokey x");
    d.same("SET t1 1");
    d.same("RENAME t1 t2");
    d.same("COPY t2 t3");
    d.same("OBJECT ENCODING t3");
    d.same("EXEC");
    d.same("ZRANGE s3 0 -1 WITHSCORES");
    d.same("MGET t1 t2 t3");
}

#[test]
fn renames_copies_and_objects() {
    run_group("renames copies objects", renames_copies_objects);
}
