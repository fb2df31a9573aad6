//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: replies, conversions
//! both ways, errors and their decorations, the libraries.

use super::*;

/// `EVAL script numkeys rest…` as arguments (scripts hold spaces).
fn eval(d: &mut Diff, script: &str, rest: &[&str]) {
    let mut a = vec!["EVAL", script];
    a.extend_from_slice(rest);
    d.same_args(&a);
}

fn scripting(d: &mut Diff) {
    d.same("SCRIPT FLUSH");
    // Conversions from Lua.
    for s in [
        "return 1",
        "return 3.99",
        "return -3.99",
        "return 'x'",
        "return true",
        "return false",
        "return nil",
        "return {1, 'a', {2, 3}, true, false, nil, 4}",
        "return {err='MY bad'}",
        "return {ok='fine'}",
        "return {double=1.5}",
        "return {map={a=1}}",
        "return {set={a=true}}",
        "return redis.error_reply('MY bad')",
        "return redis.error_reply('x')",
        "return redis.status_reply('DONE')",
        "return redis.status_reply(1)",
        "return redis.sha1hex('')",
        "return redis.sha1hex('abc')",
        "return redis.REDIS_VERSION",
        "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
        "redis.log(redis.LOG_WARNING, 'from a script'); return 1",
        "return redis.setresp(4)",
        "redis.setresp(3); return true",
        "redis.setresp(3); return false",
        "redis.setresp(3); return {double=2.5}",
        "redis.setresp(3); return {map={k='v'}}",
        "redis.set_repl(redis.REPL_ALL); return redis.replicate_commands()",
        "return tostring(math.huge)",
        "return math.floor(7.5)",
        "return string.format('%05.1f', 3.14159)",
        "return table.concat({'a', 'b'}, ',')",
    ] {
        eval(d, s, &["0"]);
    }
    // KEYS and ARGV; numkeys errors.
    eval(
        d,
        "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}",
        &["2", "k1", "k2", "a1", "a2"],
    );
    eval(d, "return 1", &["2", "k"]);
    eval(d, "return 1", &["-1"]);
    eval(d, "return 1", &["x"]);
    d.same("EVAL");
    d.same("EVAL x");
    // Commands from a script, with their replies converted to Lua and back.
    eval(
        d,
        "return redis.call('ZADD', KEYS[1], 1, 'a', 2.5, 'b')",
        &["1", "sz"],
    );
    eval(
        d,
        "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        &["1", "sz"],
    );
    eval(d, "return redis.call('ZSCORE', KEYS[1], 'b')", &["1", "sz"]);
    eval(
        d,
        "redis.setresp(3); return redis.call('ZSCORE', KEYS[1], 'b')",
        &["1", "sz"],
    );
    eval(
        d,
        "redis.setresp(3); return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
        &["1", "sz"],
    );
    eval(
        d,
        "return redis.call('ZSCORE', KEYS[1], 'nosuch')",
        &["1", "sz"],
    );
    eval(
        d,
        "redis.setresp(3); return redis.call('ZSCORE', KEYS[1], 'nosuch') == nil",
        &["1", "sz"],
    );
    eval(
        d,
        "return redis.call('HSET', 'sh', 'f', 'v', 'g', 'w')",
        &["0"],
    );
    eval(
        d,
        "return redis.call('HMGET', 'sh', 'f', 'nosuch', 'g')",
        &["0"],
    );
    eval(
        d,
        "redis.setresp(3); return redis.call('HMGET', 'sh', 'f', 'nosuch')",
        &["0"],
    );
    eval(d, "return redis.call('PING')", &["0"]);
    eval(d, "return redis.call('ZINCRBY', 'sz', 0.1, 'a')", &["0"]);
    eval(
        d,
        "return redis.call('EXISTS', 'sz', 'sh', 'nosuch')",
        &["0"],
    );
    eval(d, "return redis.call('TYPE', 'sz')", &["0"]);
    // Errors: raised by redis.call (decorated), returned by redis.pcall.
    eval(d, "return redis.call('nosuch')", &["0"]);
    eval(d, "return redis.pcall('nosuch')", &["0"]);
    eval(d, "return redis.call('ZADD', 'sz')", &["0"]);
    eval(d, "return redis.pcall('ZADD', 'sz')", &["0"]);
    eval(d, "return redis.call('HSET', 'sz', 'f', 'v')", &["0"]);
    eval(d, "return redis.pcall('HSET', 'sz', 'f', 'v')", &["0"]);
    eval(d, "return redis.call('ZADD', 'sz', 'x', 'a')", &["0"]);
    eval(d, "return {pcall(redis.call, 'nosuch')}", &["0"]);
    eval(d, "return redis.call()", &["0"]);
    eval(d, "return redis.call({})", &["0"]);
    eval(d, "return redis.call('MULTI')", &["0"]);
    eval(d, "return redis.call('EVAL', 'return 1', '0')", &["0"]);
    eval(d, "return redis.call('SCRIPT', 'FLUSH')", &["0"]);
    eval(d, "return redis.call('AUTH', 'x')", &["0"]);
    eval(d, "error('boom')", &["0"]);
    eval(d, "error({err='MY fault'})", &["0"]);
    eval(d, "local x = nil; return x.y", &["0"]);
    eval(d, "return +", &["0"]);
    eval(d, "return 'unfinished", &["0"]);
    // Globals protection and the read-only tables.
    for s in [
        "a = 1",
        "return a",
        "return x.y",
        "redis.foo = 1",
        "string.foo = 1",
        "cjson.foo = 1",
        "return os",
        "return io",
        "return loadfile",
        "return dofile",
        "return print",
        "local t = {}; t.x = 1; return t.x",
    ] {
        eval(d, s, &["0"]);
    }
    // cjson, cmsgpack and bit.
    for s in [
        "return cjson.encode({1, 2, 3, [5] = 5})",
        "return cjson.encode({})",
        "return cjson.encode({a = {b = 1.5}})",
        "return cjson.encode('a/b\"')",
        "return cjson.encode(1/3)",
        "return cjson.encode({1, cjson.null, 'x'})",
        "return cjson.decode('[1,2,null]')",
        "return cjson.decode('{\"a\":[1,\"x\"]}').a",
        "return cjson.decode(cjson.encode({k = {1, 2}})).k",
        "return cmsgpack.pack({1, 2, 3})",
        "return cmsgpack.pack('abc', -1, 1.5, true)",
        "return {cmsgpack.unpack(cmsgpack.pack({1, 'x'}, 300))}",
        "return cmsgpack.unpack(cmsgpack.pack({a = 'b'})).a",
        "return {bit.tobit(0xffffffff), bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(3, 1)}",
        "return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.bnot(0)}",
        "return {bit.tohex(255), bit.tohex(-1, -4), bit.rol(0x80000000, 1), bit.bswap(0x12345678)}",
    ] {
        eval(d, s, &["0"]);
    }
    // The cache: EVALSHA, SCRIPT LOAD / EXISTS / FLUSH.
    d.same("SCRIPT LOAD \"return 'loaded'\"");
    d.same_args(&["SCRIPT", "LOAD", "return 'loaded'"]);
    let sha = "5b9d5ed9ac3bd26c0da5b9ea7a9d6b4bb4d4b8a0";
    d.same_args(&["EVALSHA", sha, "0"]);
    // The SHA of `return 'loaded'`, as SCRIPT LOAD answers it.
    let loaded = podium_sha("return 'loaded'");
    d.same_args(&["EVALSHA", &loaded, "0"]);
    d.same_args(&["EVALSHA", &loaded.to_uppercase(), "0"]);
    d.same_args(&["EVALSHA_RO", &loaded, "0"]);
    d.same_args(&["SCRIPT", "EXISTS", &loaded, sha]);
    d.same("SCRIPT EXISTS");
    d.same("SCRIPT FLUSH foo");
    d.same("SCRIPT FLUSH SYNC extra");
    d.same("SCRIPT FLUSH ASYNC");
    d.same_args(&["SCRIPT", "EXISTS", &loaded]);
    d.same_args(&["EVALSHA", &loaded, "0"]);
    d.same("SCRIPT FLUSH");
    d.same("SCRIPT KILL");
    d.same("SCRIPT NOSUCH");
    d.same("SCRIPT");
    // EVAL_RO refuses writes and runs reads.
    d.same_args(&["EVAL_RO", "return redis.call('ZADD', 'sz', 1, 'c')", "0"]);
    d.same_args(&["EVAL_RO", "return redis.call('ZCARD', 'sz')", "0"]);
    d.same_args(&["EVAL_RO", "return redis.pcall('DEL', 'sz')", "0"]);
    // A script's writes are seen after it; in MULTI it is one command.
    d.same("MULTI");
    d.same_args(&["EVAL", "return redis.call('ZADD', 'sz', 9, 'z')", "0"]);
    d.same_args(&["EVAL", "return redis.call('nosuch')", "0"]);
    d.same("EXEC");
    d.same("ZRANGE sz 0 -1 WITHSCORES");
    d.same("DEL sz sh");
}

/// A script's SHA1 as both servers compute it.
fn podium_sha(body: &str) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `struct` library: what it packs (as bytes), unpacks and sizes,
/// and its errors.
fn struct_lib(d: &mut Diff) {
    for s in [
        "return struct.pack('>i2', 258)",
        "return struct.pack('<i2', 258)",
        "return struct.pack('bBhHlLT', -1, 255, -2, 65535, -3, 7, 9)",
        "return struct.pack('>I3i5', 70000, -70000)",
        "return struct.pack('i16', -1)",
        "return struct.pack('!4bi!2bhx', 1, 2, 3, 4)",
        "return struct.pack('b!i3', 1, 2)",
        "return struct.pack('s', 'ab')",
        "return struct.pack('c0c2', 'abc', 'xyz')",
        "return struct.pack('>d<df', 1.5, -0.25, 3.75)",
        "return struct.pack('b', ' 0x10 ')",
        "return struct.pack('i', 3.99)",
        "return struct.pack('i', -3.99)",
        "return struct.pack('L', 2^63)",
        "return struct.pack('l', 2^62)",
        "return struct.pack('> < !  i', 1)",
        "return struct.pack(12, 1)",
        "return struct.pack('c', 12)",
        "return {struct.unpack('>i2', '\\1\\2')}",
        "return {struct.unpack('bB', '\\255\\255')}",
        "return {struct.unpack('<i3>I3', '\\1\\2\\128\\1\\2\\128')}",
        "return {struct.unpack('s b', 'hi\\0\\7')}",
        "return {struct.unpack('b c0', '\\2xyz')}",
        "return {struct.unpack('!4bi', '\\1\\9\\9\\9\\2\\0\\0\\0')}",
        "return {struct.unpack('i', 'abcd', 1.9)}",
        "return {struct.unpack('b', 'abcd', 3)}",
        "return {struct.unpack('<i12', '\\0\\0\\0\\128\\0\\0\\0\\0\\0\\0\\0\\0')}",
        "return {struct.unpack('>d', struct.pack('>d', 2.5))}",
        "return {struct.unpack('f', struct.pack('f', 0.1))}",
        "return {struct.unpack('x', 'a')}",
        "return {struct.unpack('c0', '0')}",
        "return struct.size('bhilfdT')",
        "return struct.size('!bhilfd')",
        "return struct.size('!4i3c')",
        "return struct.size('X!4i3zc')",
        "return struct.size('b!Xd')",
        "return struct.size('')",
        // Errors.
        "return struct.pack('>X', 1)",
        "return struct.pack('i40', 1)",
        "return struct.pack('i99999999999', 1)",
        "return struct.pack('c5', 'ab')",
        "return struct.pack('!3i', 1)",
        "return struct.pack('i', 'x')",
        "return struct.pack('i')",
        "return struct.pack('ii', 1)",
        "return struct.pack('iii', 1)",
        "return struct.pack(nil)",
        "return struct.pack({})",
        "return struct.pack('s', true)",
        "return struct.unpack('i4', 'ab')",
        "return struct.unpack('b', 'abc', 0)",
        "return struct.unpack('b', 'abc', -5)",
        "return struct.unpack('b', 'abc', 'x')",
        "return struct.unpack('s', 'ab')",
        "return struct.unpack('b')",
        "return struct.unpack()",
        "return struct.unpack('#', 'a')",
        "return struct.size('s')",
        "return struct.size('c0')",
        "return struct.size('#')",
        "return struct.size('i33')",
        "return {pcall(function() return struct.pack('X') end)}",
        "struct.pack = nil",
        "\nlocal x = 1\nreturn struct.pack('!5')",
    ] {
        eval(d, s, &["0"]);
    }
    eval(
        d,
        "return struct.unpack('>i4', redis.call('GET', KEYS[1]))",
        &["1", "packed"],
    );
    eval(
        d,
        "redis.call('SET', KEYS[1], struct.pack('>i4', ARGV[1])); return redis.call('STRLEN', KEYS[1])",
        &["1", "packed", "-123456"],
    );
    d.same("GET packed");
    d.same("DEL packed");
}

#[test]
fn struct_in_scripts() {
    run_group("scripting-struct", struct_lib);
}

#[test]
fn eval_and_script() {
    run_group("scripting", scripting);
}
