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
