//! Hash commands.

use super::*;

fn hashes(d: &mut Diff) {
    d.same("HSET h f v");
    d.same("HSET h f v2");
    d.same("HSET h a 1 b 2 f v3");
    d.same("HSET h a");
    d.same("HSET h a 1 b");
    d.same("HSET h");
    d.same("HMSET h c 3 d 4");
    d.same("HMSET h c");
    d.same("HMSET h c 3 d");
    d.same_args(&["HSET", "h", "", "empty-field"]);
    d.same_args(&["HSET", "h", "empty-value", ""]);
    d.same_args(&[&b"HSET"[..], b"h", b"bin\x00\xff", b"\r\n\x00"]);
    d.same_args(&["HSET", "h", "long", &"x".repeat(100)]);
    d.same("HGET h f");
    d.same("HGET h nosuch");
    d.same("HGET nokey f");
    d.same_args(&["HGET", "h", ""]);
    d.same_args(&[&b"HGET"[..], b"h", b"bin\x00\xff"]);
    d.same("HGET h");
    d.same("HGET h f extra");
    d.same("HMGET h a nosuch b f");
    d.same("HMGET nokey a b");
    d.same("HMGET h");
    d.same("HEXISTS h a");
    d.same("HEXISTS h nosuch");
    d.same("HEXISTS nokey a");
    d.same("HEXISTS h");
    d.same("HLEN h");
    d.same("HLEN nokey");
    d.same("HLEN");
    d.pairs("HGETALL h");
    d.same("HGETALL nokey");
    d.same("HGETALL");
    d.sorted("HKEYS h");
    d.sorted("HVALS h");
    d.same("HKEYS nokey");
    d.same("HVALS nokey");
    d.same("HKEYS");
    d.same("HDEL h a nosuch b");
    d.same("HDEL h a");
    d.same("HDEL nokey a");
    d.same("HDEL h");
    d.pairs("HGETALL h");
    d.same("HSET small only 1");
    d.same("HDEL small only");
    d.same("EXISTS small");
    d.same("TYPE small");
    // A bigger hash (Redis switches from a listpack above 128 fields).
    let mut hset = vec!["HSET".to_string(), "bigh".to_string()];
    for i in 0..300 {
        hset.push(format!("field{i}"));
        hset.push(format!("value{}", i * 3));
    }
    d.same_args(&hset);
    d.same("HLEN bigh");
    d.pairs("HGETALL bigh");
    d.sorted("HKEYS bigh");
    d.sorted("HVALS bigh");
    d.same("HMGET bigh field0 field299 field300");
}

#[test]
fn hash_commands() {
    run_group("hashes", hashes);
}

/// HSETNX, HINCRBY, HSTRLEN, HRANDFIELD and HSCAN.
fn more_hashes(d: &mut Diff) {
    d.same("HSETNX n f v");
    d.same("HSETNX n f other");
    d.same("HGET n f");
    d.same("HSETNX n");
    d.same("HSETNX n f");
    d.same("HSETNX n f v extra");
    d.same("HINCRBY n c 5");
    d.same("HINCRBY n c -7");
    d.same("HINCRBY n c 0");
    d.same("HGET n c");
    d.same("HINCRBY n f 1");
    d.same("HINCRBY n c 1.5");
    d.same("HINCRBY n c x");
    d.same("HINCRBY n c");
    d.same("HSET n big 9223372036854775806 neg -9223372036854775807 lead 01 plus +1 sp 1");
    d.same("HINCRBY n big 1");
    d.same("HINCRBY n big 1");
    d.same("HINCRBY n neg -1");
    d.same("HINCRBY n neg -1");
    d.same("HINCRBY n lead 1");
    d.same("HINCRBY n plus 1");
    d.same("HINCRBY n c 9223372036854775808");
    d.same("HINCRBY fresh c 3");
    d.same("TYPE fresh");
    d.same("HSTRLEN n f");
    d.same("HSTRLEN n big");
    d.same("HSTRLEN n nosuch");
    d.same("HSTRLEN nokey f");
    d.same("HSTRLEN n");
    // Wrong types, both ways.
    d.same("ZADD z 1 a");
    d.same("HSETNX z f v");
    d.same("HINCRBY z f 1");
    d.same("HSTRLEN z f");
    d.same("HRANDFIELD z");
    d.same("HRANDFIELD z 0");
    d.same("HSCAN z 0");
    d.same("HSCAN z 0 COUNT 0");
    // A refused increment leaves no hash behind.
    d.same("HSET s v x");
    d.same("HDEL s v");
    d.same("HINCRBY s v x");
    d.same("EXISTS s");

    // HRANDFIELD: what is not random compares exactly.
    d.same("HRANDFIELD nokey");
    d.same("HRANDFIELD nokey 3");
    d.same("HRANDFIELD nokey -3 WITHVALUES");
    d.same("HRANDFIELD n 0");
    d.same("HRANDFIELD n 0 WITHVALUES");
    d.same("HRANDFIELD n x");
    d.same("HRANDFIELD n 1 WITHSCORES");
    d.same("HRANDFIELD n 1 WITHVALUES extra");
    d.same("HRANDFIELD n -9223372036854775808");
    d.same("HRANDFIELD n -9223372036854775807 WITHVALUES");
    d.same("HRANDFIELD n 9223372036854775807 WITHVALUES");
    d.same("HSET one f v");
    d.same("HRANDFIELD one");
    d.same("HRANDFIELD one 1");
    d.same("HRANDFIELD one 1 WITHVALUES");
    d.same("HRANDFIELD one -3");
    d.same("HRANDFIELD one -2 WITHVALUES");
    // A count at least the hash's size: all of it.
    d.sorted("HRANDFIELD n 100");
    d.pairs("HRANDFIELD n 100 WITHVALUES");
    // Random picks: their number and that each is a field.
    let fields = ["f", "c", "big", "neg", "lead", "plus", "sp"];
    d.random_picks("HRANDFIELD n 3", 3, &fields, true);
    d.random_picks("HRANDFIELD n -20", 20, &fields, false);

    // HSCAN: a small hash comes whole, whatever COUNT says.
    d.pairs_scan("HSCAN n 0");
    d.pairs_scan("HSCAN n 0 COUNT 2");
    d.pairs_scan("HSCAN n 0 MATCH b*");
    d.pairs_scan("HSCAN n 0 MATCH * COUNT 1");
    d.same("HSCAN nokey 0");
    d.same("HSCAN nokey 0 COUNT 0");
    d.same("HSCAN nokey 0 BOGUS");
    d.same("HSCAN n 0 COUNT 0");
    d.same("HSCAN n 0 COUNT x");
    d.same("HSCAN n 0 TYPE hash");
    d.same("HSCAN n 0 MATCH");
    d.same("HSCAN n x");
    d.same("HSCAN n -1 COUNT 0");
    d.same("HSCAN n");
    // Up to 512 short fields Redis keeps a hash compact, and HSCAN
    // answers it whole in one page.
    let mut hset = vec!["HSET".to_string(), "midh".to_string()];
    for i in 0..512 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    d.same_args(&hset);
    d.pairs_scan("HSCAN midh 0 COUNT 10");
    // A large one (a value over 64 bytes, or more than 512 fields) is
    // paged; every page put together is the hash.
    let mut hset = vec!["HSET".to_string(), "hugeh".to_string()];
    for i in 0..600 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    d.same_args(&hset);
    d.same_args(&["HSET", "longv", "a", &"x".repeat(65), "b", "2"]);
    for count in ["1", "10", "37", "1000"] {
        d.scan_union(|c| args(&["HSCAN", "hugeh", c, "COUNT", count]), true);
    }
    d.scan_union(|c| args(&["HSCAN", "hugeh", c, "MATCH", "f1*"]), true);
    d.scan_union(|c| args(&["HSCAN", "longv", c]), true);
}

#[test]
fn more_hash_commands() {
    run_group("more hashes", more_hashes);
}
