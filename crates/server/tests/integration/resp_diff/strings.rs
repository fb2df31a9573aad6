//! String commands, HINCRBYFLOAT, and strings beside the other key types.

use super::*;

fn get_set(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("GET s");
    d.same("SET s v");
    d.same("GET s");
    d.same("TYPE s");
    d.same("EXISTS s");
    d.same_args(&["SET", "empty", ""]);
    d.same("GET empty");
    d.same("STRLEN empty");
    d.same("EXISTS empty");
    d.same_args(&[&b"SET"[..], b"bin\x00\xff", b"\r\n\x00\xff"]);
    d.same_args(&[&b"GET"[..], b"bin\x00\xff"]);
    d.same_args(&["SET", "long", &"x".repeat(10_000)]);
    d.same("STRLEN long");
    d.same("GET");
    d.same("GET a b");
    d.same("SET");
    d.same("SET k");
    // Options, and their clashes.
    d.same("SET s v2 NX");
    d.same("SET fresh v NX");
    d.same("SET s v3 XX");
    d.same("SET nosuch v XX");
    d.same("GET nosuch");
    d.same("SET s v4 GET");
    d.same("SET s v5 XX GET");
    d.same("SET s v6 NX GET");
    d.same("SET newget v NX GET");
    d.same("SET nosuch2 v XX GET");
    d.same("SET s v NX XX");
    d.same("SET s v XX NX");
    d.same("SET s v nx nx");
    d.same("SET s v get get");
    d.same("SET s v EX 10 PX 10");
    d.same("SET s v EX 10 EXAT 10");
    d.same("SET s v PXAT 10 EX 10");
    d.same("SET s v KEEPTTL EX 10");
    d.same("SET s v EX 10 KEEPTTL");
    d.same("SET s v PERSIST");
    d.same("SET s v EX");
    d.same("SET s v FOO");
    d.same("SET s v EX abc");
    d.same("SET s v EX 0");
    d.same("SET s v EX -1");
    d.same("SET s v PX 0");
    d.same("SET s v EXAT 0");
    d.same("SET s v PXAT -5");
    d.same("SET s v EX 9223372036854775");
    d.same("SET s v EX 9223372036854775807");
    d.same("SET s v PX 9223372036854775807");
    d.same("SET s v EX 1.5");
    d.same("SET s v GET EX 0");
    d.same("GET s");
    // Expiry.
    d.same("SET e v EX 100");
    d.ttl("TTL e", 1);
    d.ttl("PTTL e", 1500);
    d.same("SET e v2 KEEPTTL");
    d.ttl("TTL e", 1);
    d.same("SET e v3");
    d.same("TTL e");
    d.same("SET e v PX 100000");
    d.ttl("TTL e", 1);
    d.same("SET e v EXAT 4102444800");
    d.same("EXPIRETIME e");
    d.same("SET e v PXAT 4102444800123");
    d.same("PEXPIRETIME e");
    d.same("SET e v ex 100 ex 200");
    d.ttl("TTL e", 1);
    d.same("SET gone v PXAT 1");
    d.same("GET gone");
    d.same("EXISTS gone");
    d.same("SET gone2 v EXAT 1 GET");
    d.same("GET gone2");
    d.same("SET e v XX KEEPTTL GET");
    d.ttl("TTL e", 1);
    // SETNX, SETEX, PSETEX, GETSET.
    d.same("SETNX s x");
    d.same("SETNX nx1 x");
    d.same("GET nx1");
    d.same("SETNX nx1");
    d.same("SETEX se 100 v");
    d.ttl("TTL se", 1);
    d.same("SETEX se 0 v");
    d.same("SETEX se -10 v");
    d.same("SETEX se abc v");
    d.same("SETEX se 9223372036854775807 v");
    d.same("SETEX se 100");
    d.same("PSETEX pse 100000 v");
    d.ttl("PTTL pse", 1500);
    d.same("PSETEX pse 0 v");
    d.same("PSETEX pse 9223372036854775807 v");
    d.same("GET pse");
    d.same("GETSET se new");
    d.same("TTL se");
    d.same("GETSET nogs v");
    d.same("GETSET nogs");
    // MGET, MSET, MSETNX.
    d.same("MSET a 1 b 2 c 3");
    d.same("MGET a b c nosuch");
    d.same("MSET a 10 a 11");
    d.same("GET a");
    d.same("MSET a");
    d.same("MSET a 1 b");
    d.same("MSET");
    d.same("MSETNX a 1 x 2");
    d.same("GET x");
    d.same("MSETNX x 1 y 2");
    d.same("MGET x y");
    d.same("MSETNX x");
    d.same("MSETNX x 1 y");
    d.same("MGET");
    d.same("SET e v EX 100");
    d.same("MSET e w");
    d.same("TTL e");
}

fn getdel_getex(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("SET k v");
    d.same("GETDEL k");
    d.same("GETDEL k");
    d.same("EXISTS k");
    d.same("GETDEL");
    d.same("GETDEL a b");
    d.same("SET k v");
    d.same("GETEX k");
    d.same("GETEX k EX 100");
    d.ttl("TTL k", 1);
    d.same("GETEX k PX 200000");
    d.ttl("TTL k", 1);
    d.same("GETEX k EXAT 4102444800");
    d.same("EXPIRETIME k");
    d.same("GETEX k PXAT 4102444800999");
    d.same("PEXPIRETIME k");
    d.same("GETEX k PERSIST");
    d.same("TTL k");
    d.same("GETEX k PERSIST");
    d.same("GETEX k persist persist");
    d.same("GETEX k EX 0");
    d.same("GETEX k EX -1");
    d.same("GETEX k EX abc");
    d.same("GETEX k PX 9223372036854775807");
    d.same("GETEX k EX 10 PX 10");
    d.same("GETEX k PERSIST EX 10");
    d.same("GETEX k EX 10 PERSIST");
    d.same("GETEX k NX");
    d.same("GETEX k KEEPTTL");
    d.same("GETEX k GET");
    d.same("GETEX k EX");
    d.same("GETEX nosuch EX 0");
    d.same("GETEX nosuch EX abc");
    d.same("GETEX nosuch PERSIST");
    d.same("GETEX nosuch");
    d.same("GETEX");
    d.same("GETEX k EXAT 1");
    d.same("EXISTS k");
    d.same("SET k v");
    d.same("GETEX k PXAT 1");
    d.same("GET k");
}

fn counters(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("INCR n");
    d.same("INCR n");
    d.same("DECR n");
    d.same("DECR n");
    d.same("DECR n");
    d.same("INCRBY n 100");
    d.same("INCRBY n -50");
    d.same("DECRBY n 7");
    d.same("DECRBY n -7");
    d.same("GET n");
    d.same("INCRBY n abc");
    d.same("INCRBY n 1.5");
    d.same("INCRBY n 9223372036854775808");
    d.same("DECRBY n -9223372036854775808");
    d.same("DECRBY nosuch -9223372036854775808");
    d.same("DECRBY n 9223372036854775807");
    d.same("SET big 9223372036854775807");
    d.same("INCR big");
    d.same("INCRBY big 0");
    d.same("DECRBY big -1");
    d.same("SET small -9223372036854775808");
    d.same("DECR small");
    d.same("INCRBY small -1");
    d.same("INCRBY small 9223372036854775807");
    for v in [
        "abc",
        "",
        "1.0",
        " 1",
        "1 ",
        "01",
        "-0",
        "+1",
        "0x10",
        "99999999999999999999",
    ] {
        d.same_args(&["SET", "bad", v]);
        d.same("INCR bad");
        d.same("INCRBYFLOAT bad 1");
    }
    d.same("SET e 5 EX 100");
    d.same("INCR e");
    d.ttl("TTL e", 1);
    d.same("INCRBYFLOAT e 1.5");
    d.ttl("TTL e", 1);
    d.same("INCR");
    d.same("INCR a b");
    d.same("INCRBY n");
    d.same("DECR");
    d.same("DECRBY n");
    // INCRBYFLOAT: C long double arithmetic and `%.17Lf` printing.
    d.same("SET f 10.5");
    d.same("INCRBYFLOAT f 0.1");
    d.same("GET f");
    for (start, by) in [
        ("0", "0.1"),
        ("0.1", "0.2"),
        ("1.1", "2.2"),
        ("3", "-3"),
        ("1", "-1.5"),
        ("5", "0x10"),
        ("0", "1e-18"),
        ("0", "-1e-18"),
        ("0", "1.5e-17"),
        ("0", "2.5e-17"),
        ("10", "1e20"),
        ("0", "3.0e3"),
        ("0", "123456789.123456789"),
        ("0", "18446744073709551617"),
        ("0", ".5"),
        ("0", "5."),
        ("0", "+7"),
        ("0", "0x1.8p1"),
        ("0", "0X1P-2"),
        ("0", "0x1p-18"),
        ("0", "0x3p-18"),
        ("0", "-0x3p-18"),
        ("-5", "0.000001"),
        ("3.0e-1", "1e10"),
        ("1.5e4931", "0"),
        ("1e4932", "1e4932"),
        ("1", "inf"),
        ("1", "-inf"),
        ("1", "Infinity"),
        ("1", "nan"),
        ("1", "abc"),
        ("1", ""),
        ("1", " 1"),
        ("1", "1 "),
        ("1", "1e"),
        ("1", "0x"),
        ("1", "1e5000"),
        ("1", "1e-5000"),
        ("1", "0x1p-16445"),
        ("inf", "1"),
        ("1e5000", "1"),
        ("10", "1e-4940"),
        ("9223372036854775807", "1"),
    ] {
        d.same_args(&["SET", "f", start]);
        d.same_args(&["INCRBYFLOAT", "f", by]);
        d.same("GET f");
    }
    d.same("INCRBYFLOAT nofloat 2.5");
    d.same("INCRBYFLOAT nofloat2 5");
    d.same("GET nofloat2");
    d.same_args(&[&b"INCRBYFLOAT"[..], b"f", b"1\x002"]);
    d.same_args(&["INCRBYFLOAT", "f", &"1".repeat(5119)]);
    d.same_args(&["INCRBYFLOAT", "f", &"1".repeat(5120)]);
    d.same("INCRBYFLOAT f");
    d.same("INCRBYFLOAT");
    // HINCRBYFLOAT.
    d.same("HINCRBYFLOAT h f 10.5");
    d.same("HINCRBYFLOAT h f 0.1");
    d.same("HGET h f");
    d.same("HINCRBYFLOAT h f -10.6");
    d.same("HINCRBYFLOAT h g 0x10");
    d.same("HINCRBYFLOAT h f inf");
    d.same("HINCRBYFLOAT h f -inf");
    d.same("HINCRBYFLOAT h f nan");
    d.same("HINCRBYFLOAT h f abc");
    d.same("HINCRBYFLOAT h f 1e5000");
    d.same("HSET h bad abc big 1e4932 int 7");
    d.same("HINCRBYFLOAT h bad 1");
    d.same("HINCRBYFLOAT h big 1e4932");
    d.same("HINCRBYFLOAT h int 0.5");
    d.same("HINCRBYFLOAT nohash f 1");
    d.same("HINCRBYFLOAT nohash2 f inf");
    d.same("EXISTS nohash2");
    d.same("HINCRBYFLOAT h f");
    d.same("HINCRBYFLOAT h f 1 2");
    d.same("HGETALL nohash");
}

fn ranges(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("APPEND a hello");
    d.same("APPEND a ' world'");
    d.same("GET a");
    d.same_args(&["APPEND", "a", ""]);
    d.same_args(&["APPEND", "new", ""]);
    d.same("EXISTS new");
    d.same("TYPE new");
    d.same_args(&[&b"APPEND"[..], b"a", b"\x00\xff"]);
    d.same("STRLEN a");
    d.same("STRLEN nosuch");
    d.same("STRLEN");
    d.same("APPEND a");
    d.same("SET n 10 EX 100");
    d.same("APPEND n 5");
    d.same("GET n");
    d.ttl("TTL n", 1);
    d.same("INCR n");
    d.same("SET s 'Hello World'");
    for (start, end) in [
        ("0", "3"),
        ("-3", "-1"),
        ("0", "-1"),
        ("10", "100"),
        ("5", "3"),
        ("-1", "-5"),
        ("-100", "-50"),
        ("-100", "2"),
        ("3", "-100"),
        ("100", "200"),
        ("0", "0"),
        ("-1", "-1"),
        ("-9223372036854775808", "9223372036854775807"),
        ("9223372036854775807", "-9223372036854775808"),
        ("a", "1"),
        ("1", "b"),
        ("1.5", "2"),
    ] {
        d.same_args(&["GETRANGE", "s", start, end]);
        d.same_args(&["SUBSTR", "s", start, end]);
    }
    d.same("GETRANGE nosuch 0 -1");
    d.same("GETRANGE nosuch a 1");
    d.same("GETRANGE empty 0 -1");
    d.same_args(&["SET", "empty", ""]);
    d.same("GETRANGE empty 0 -1");
    d.same("GETRANGE empty -1 -1");
    d.same("GETRANGE s 0");
    d.same("SUBSTR s 0 1 2");
    // SETRANGE.
    d.same("SETRANGE s 6 Redis");
    d.same("GET s");
    d.same("SETRANGE s 20 tail");
    d.same("GET s");
    d.same("SETRANGE s 0 ''");
    d.same("SETRANGE s 100 ''");
    d.same("STRLEN s");
    d.same("SETRANGE fresh 5 x");
    d.same("GET fresh");
    d.same("SETRANGE fresh2 0 ''");
    d.same("EXISTS fresh2");
    d.same("SETRANGE fresh2 536870912 ''");
    d.same("SETRANGE s -1 x");
    d.same("SETRANGE s abc x");
    d.same("SETRANGE s 1.5 x");
    // (536870911 + 1 byte is allowed: 512 MB exactly.)
    d.same("SETRANGE s 536870911 xx");
    d.same("SETRANGE s 536870910 xyz");
    d.same("SETRANGE s 536870912 x");
    d.same("SETRANGE nosuch3 536870912 x");
    d.same("SETRANGE s 9223372036854775807 x");
    d.same("SETRANGE s 9223372036854775808 x");
    d.same("SETRANGE s 0");
    d.same("SETRANGE far 1000000 x");
    d.same("STRLEN far");
    d.same("GETRANGE far 999995 -1");
    d.same_args(&[&b"SETRANGE"[..], b"far", b"3", b"\x00\xffz"]);
    d.same("GETRANGE far 0 7");
    d.same("SET e v EX 100");
    d.same("SETRANGE e 1 x");
    d.ttl("TTL e", 1);
}

/// Strings beside sorted sets and hashes: WRONGTYPE both ways, SET and
/// its family replacing a key of another type, the key commands.
fn across_types(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("ZADD z 1 a 2 b");
    d.same("HSET h f v");
    d.same("SET s v");
    for cmd in [
        "GET z",
        "GET h",
        "GETSET z v",
        "GETDEL z",
        "GETDEL h",
        "GETEX z",
        "GETEX h PERSIST",
        "GETEX z EX 10",
        "GETEX z EX 0",
        "GETEX z EX abc",
        "SET z v GET",
        "SET h v NX GET",
        "SET z v XX GET EX 0",
        "INCR z",
        "INCRBY h 1",
        "DECR z",
        "DECRBY h 2",
        "INCRBYFLOAT z 1",
        "INCRBYFLOAT h abc",
        "APPEND z x",
        "STRLEN h",
        "GETRANGE z 0 -1",
        "SUBSTR h 0 -1",
        "SETRANGE z 0 x",
        "SETRANGE h 0 ''",
        "SETRANGE z 536870912 x",
        "ZADD s 1 a",
        "ZINCRBY s 1 a",
        "ZSCORE s a",
        "ZCARD s",
        "ZRANGE s 0 -1",
        "ZREM s a",
        "ZPOPMIN s",
        "ZRANDMEMBER s",
        "ZSCAN s 0",
        "ZUNIONSTORE out 2 z s",
        "ZINTERSTORE out 1 s",
        "ZMPOP 1 s MIN",
        "ZADD s XX 1 a",
        "HSET s f v",
        "HGET s f",
        "HGETALL s",
        "HDEL s f",
        "HLEN s",
        "HINCRBY s f 1",
        "HINCRBYFLOAT s f 1",
        "HSETNX s f v",
        "HSCAN s 0",
        "HRANDFIELD s",
    ] {
        d.same(cmd);
    }
    d.same("MGET z h s nosuch");
    d.same("SETNX z v");
    d.same("MSETNX z v other w");
    d.same("EXISTS other");
    d.same("TYPE s");
    d.same("TYPE z");
    d.same("TYPE h");
    d.sorted("KEYS *");
    d.same("DBSIZE");
    d.scan_union(|c| args(&["SCAN", c, "TYPE", "string"]), false);
    d.scan_union(|c| args(&["SCAN", c, "TYPE", "STRING"]), false);
    d.scan_union(|c| args(&["SCAN", c, "TYPE", "zset"]), false);
    // A store into a string replaces it.
    d.same("SET dest v");
    d.same("ZUNIONSTORE dest 1 z");
    d.same("TYPE dest");
    d.same("ZRANGE dest 0 -1 WITHSCORES");
    // SET over a sorted set and a hash replaces it.
    d.same("EXPIRE z 100");
    d.same("SET z now-a-string KEEPTTL");
    d.same("TYPE z");
    d.same("GET z");
    d.ttl("TTL z", 1);
    d.same("ZCARD z");
    d.same("SET h now-a-string");
    d.same("TYPE h");
    d.same("HGET h f");
    d.same("ZADD z2 1 a");
    d.same("HSET h2 f v");
    d.same("SETEX z2 100 v");
    d.same("TYPE z2");
    d.same("PSETEX h2 100000 v");
    d.same("TYPE h2");
    d.same("ZADD z3 1 a");
    d.same("HSET h3 f v");
    d.same("MSET z3 a h3 b");
    d.same("MGET z3 h3");
    d.same("ZADD z4 1 a");
    d.same("SET z4 v NX");
    d.same("SET z4 v XX");
    d.same("TYPE z4");
    d.same("ZADD z5 1 a");
    d.same("APPEND z5 x");
    d.same("ZADD z5 2 b");
    // DEL, EXISTS, TOUCH, expiry and RANDOMKEY on strings.
    d.same("SET t v");
    d.same("EXISTS t t s");
    d.same("TOUCH t s nosuch");
    d.same("EXPIRE t 100");
    d.ttl("TTL t", 1);
    d.same("PERSIST t");
    d.same("TTL t");
    d.same("PEXPIRE t 100000");
    d.ttl("PTTL t", 1500);
    d.same("EXPIRETIME nosuch");
    d.same("DEL t s nosuch");
    d.same("UNLINK z");
    d.same("EXISTS t");
    d.same("FLUSHALL");
    d.same("SET only v");
    d.same("RANDOMKEY");
    d.same("DBSIZE");
    d.same("FLUSHDB");
    d.same("DBSIZE");
    d.same("GET only");
}

fn transactions(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("MULTI");
    d.same("SET k 1");
    d.same("INCR k");
    d.same("INCRBYFLOAT k 0.5");
    d.same("SET k v EX 0");
    d.same("MSET a");
    d.same("GET k");
    d.same("EXEC");
    d.same("MULTI");
    d.same("GET");
    d.same("EXEC");
}

/// LCS: the subsequence, LEN, IDX with MINMATCHLEN and WITHMATCHLEN, and
/// the errors in Redis's order (types, then options).
fn lcs(d: &mut Diff) {
    d.same("SET a ohmytext");
    d.same("SET b mynewtext");
    d.same("SET c abcXdefYghi");
    d.same("SET e abcZdefWghi");
    d.same_args(&[&b"SET"[..], b"bin", b"a\0b\xffc"]);
    d.same_args(&[&b"SET"[..], b"bin2", b"\xffa\0c"]);
    d.same("ZADD z 1 x");
    d.same("HSET h f v");
    for c in [
        "LCS a b",
        "LCS b a",
        "LCS a b LEN",
        "LCS a b len",
        "LCS a b IDX",
        "LCS a b IDX WITHMATCHLEN",
        "LCS a b IDX MINMATCHLEN 4",
        "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
        "LCS a b IDX MINMATCHLEN -5 WITHMATCHLEN",
        "LCS a b MINMATCHLEN 4",
        "LCS a b WITHMATCHLEN",
        "LCS c e IDX WITHMATCHLEN",
        "LCS c e IDX MINMATCHLEN 3",
        "LCS c c IDX",
        "LCS bin bin2",
        "LCS bin bin2 IDX WITHMATCHLEN",
        "LCS a nokey",
        "LCS nokey nokey2 IDX",
        "LCS nokey nokey2 LEN",
        "LCS a b LEN IDX",
        "LCS a b IDX LEN",
        "LCS a b foo",
        "LCS a b MINMATCHLEN",
        "LCS a b MINMATCHLEN x",
        "LCS a b MINMATCHLEN 99999999999999999999",
        "LCS a z",
        "LCS z a",
        "LCS h a IDX",
        "LCS z a foo",
        "LCS a h LEN IDX",
        "LCS a",
        "LCS",
    ] {
        d.same(c);
    }
    d.same("EXISTS nokey");
    d.same("DEL a b c e bin bin2 z h");
}

#[test]
fn string_lcs() {
    run_group("strings-lcs", lcs);
}

#[test]
fn string_commands() {
    run_group("strings", get_set);
}

#[test]
fn string_getdel_getex() {
    run_group("strings-getex", getdel_getex);
}

#[test]
fn string_counters() {
    run_group("strings-counters", counters);
}

#[test]
fn string_ranges() {
    run_group("strings-ranges", ranges);
}

#[test]
fn strings_across_types() {
    run_group("strings-types", across_types);
}

#[test]
fn strings_in_transactions() {
    run_group("strings-multi", transactions);
}
