//! Lexicographic ranges (ZRANGE … BYLEX, ZRANGEBYLEX, ZREVRANGEBYLEX,
//! ZLEXCOUNT, ZREMRANGEBYLEX) and set algebra (ZUNION, ZINTER, ZDIFF,
//! ZINTERCARD, ZDIFFSTORE, ZRANGESTORE): small sets (Redis's listpack)
//! and sets over 128 members (its skiplist), missing keys, WRONGTYPE and
//! every error.

use super::*;

/// `ZADD key` with every `(score, member)`.
fn zadd_all(key: &str, pairs: impl IntoIterator<Item = (String, String)>) -> Vec<String> {
    let mut a = vec!["ZADD".to_string(), key.to_string()];
    for (s, m) in pairs {
        a.push(s);
        a.push(m);
    }
    a
}

/// The range queries of one set, every form.
fn lex_queries(d: &mut Diff, key: &str, items: &[&str]) {
    let pairs: Vec<(&str, &str)> = items
        .iter()
        .flat_map(|a| items.iter().map(move |b| (*a, *b)))
        .collect();
    for (min, max) in pairs {
        d.same(&format!("ZRANGEBYLEX {key} {min} {max}"));
        d.same(&format!("ZREVRANGEBYLEX {key} {max} {min}"));
        d.same(&format!("ZLEXCOUNT {key} {min} {max}"));
    }
    for (off, cnt) in [(0, 1), (1, 2), (2, -1), (0, 0), (-1, 3), (5, 1), (100, 5)] {
        d.same(&format!("ZRANGEBYLEX {key} - + LIMIT {off} {cnt}"));
        d.same(&format!("ZREVRANGEBYLEX {key} + - LIMIT {off} {cnt}"));
        d.same(&format!("ZRANGE {key} [b (x BYLEX LIMIT {off} {cnt}"));
        d.same(&format!("ZRANGE {key} (x [b BYLEX REV LIMIT {off} {cnt}"));
    }
}

fn lex(d: &mut Diff) {
    d.same("FLUSHALL");
    // One score, small.
    d.same("ZADD s 0 a 0 b 0 c 0 d 0 e 0 f 0 g 0 aa 0 ab");
    lex_queries(
        d,
        "s",
        &[
            "-", "+", "[a", "(a", "[b", "(b", "[ab", "(e", "[z", "[", "(",
        ],
    );
    // One score, over 128 members: the skiplist's search.
    let big: Vec<(String, String)> = (0..300)
        .map(|i| ("0".to_string(), format!("m{:03}", (i * 7) % 300)))
        .collect();
    d.same_args(&zadd_all("big", big));
    lex_queries(
        d,
        "big",
        &[
            "-", "+", "[m000", "(m000", "[m150", "(m150", "[m299", "(m299", "[n", "[a",
        ],
    );
    d.same("ZRANGE big [m100 [m110 BYLEX");
    d.same("ZRANGE big [m110 [m100 BYLEX REV");
    // Mixed scores whose members rise with them: the same in both walks.
    let rising: Vec<(String, String)> = (0..200)
        .map(|i| (format!("{}", i / 10), format!("k{i:03}")))
        .collect();
    d.same_args(&zadd_all("rising", rising));
    lex_queries(d, "rising", &["-", "+", "[k050", "(k050", "[k199", "[k"]);
    d.same("ZADD mixsmall 1 c 2 a 3 d 4 b 5 e");
    lex_queries(d, "mixsmall", &["-", "+", "[a", "(b", "[c", "(d", "[e"]);
    // Missing keys, wrong types, errors.
    d.same("ZRANGEBYLEX nokey - +");
    d.same("ZLEXCOUNT nokey - +");
    d.same("ZREMRANGEBYLEX nokey - +");
    d.same("ZRANGE nokey - + BYLEX");
    d.same("HSET h f v");
    d.same("ZRANGEBYLEX h - +");
    d.same("ZREVRANGEBYLEX h + -");
    d.same("ZLEXCOUNT h - +");
    d.same("ZREMRANGEBYLEX h - +");
    d.same("ZRANGEBYLEX h a +");
    d.same("ZLEXCOUNT h - b");
    for bad in ["a", "+a", "-a", "]a", "1", "\"\""] {
        d.same(&format!("ZRANGEBYLEX s {bad} +"));
        d.same(&format!("ZRANGEBYLEX s - {bad}"));
        d.same(&format!("ZLEXCOUNT s {bad} +"));
        d.same(&format!("ZREMRANGEBYLEX s - {bad}"));
        d.same(&format!("ZRANGE s {bad} + BYLEX"));
    }
    d.same("ZRANGEBYLEX s - + WITHSCORES");
    d.same("ZRANGE s - + BYLEX WITHSCORES");
    d.same("ZRANGE s - + BYLEX BYLEX");
    d.same("ZRANGE s - + BYLEX BYSCORE");
    d.same("ZRANGE s - + BYLEX REV REV");
    d.same("ZRANGEBYLEX s - + REV");
    d.same("ZRANGEBYLEX s - + BYLEX");
    d.same("ZRANGEBYLEX s - + LIMIT 0");
    d.same("ZRANGEBYLEX s - + LIMIT x 1");
    d.same("ZRANGEBYLEX s - + LIMIT 0 1 foo");
    d.same("ZRANGEBYLEX s -");
    d.same("ZLEXCOUNT s - + x");
    d.same("ZREMRANGEBYLEX s -");
    d.same("ZRANGE s 0 1 LIMIT 0 -1");
    d.same("ZRANGE s 0 1 LIMIT 1 -1");
    d.same("ZRANGE s 0 1 LIMIT 1 5");
    // Removals, small and big.
    d.same("ZREMRANGEBYLEX s (a [c");
    d.same("ZRANGE s 0 -1");
    d.same("ZREMRANGEBYLEX s [z +");
    d.same("ZREMRANGEBYLEX s [c [a");
    d.same("ZREMRANGEBYLEX s - (a");
    d.same("ZRANGE s 0 -1");
    d.same("ZREMRANGEBYLEX big [m010 (m020");
    d.same("ZREMRANGEBYLEX big (m290 +");
    d.same("ZREMRANGEBYLEX big [m500 +");
    d.same("ZCARD big");
    d.same("ZRANGEBYLEX big [m005 [m025");
    d.same("ZREMRANGEBYLEX rising [k100 [k149");
    d.same("ZRANGE rising 95 105");
    d.same("ZREMRANGEBYLEX mixsmall - [c");
    d.same("ZRANGE mixsmall 0 -1");
    d.same("ZREMRANGEBYLEX s - +");
    d.same("EXISTS s");
}

#[test]
fn lexicographic_ranges() {
    run_group("lex", lex);
}

fn algebra(d: &mut Diff) {
    d.same("FLUSHALL");
    d.same("ZADD a 1 x 2 y 3 z -0 w");
    d.same("ZADD b 10 y -1 w 5 v 3 z");
    d.same("ZADD c 1 y 1 q");
    d.same("ZADD inf +inf x -inf y");
    d.same("HSET h f v");
    for cmd in ["ZUNION", "ZINTER"] {
        d.same(&format!("{cmd} 1 a"));
        d.same(&format!("{cmd} 2 a b"));
        d.same(&format!("{cmd} 2 a b WITHSCORES"));
        d.same(&format!("{cmd} 3 a b c WITHSCORES"));
        d.same(&format!("{cmd} 2 a b WEIGHTS 2 -1 WITHSCORES"));
        d.same(&format!("{cmd} 2 a b WEIGHTS 0 0 WITHSCORES"));
        d.same(&format!("{cmd} 2 a inf WEIGHTS 1 0 WITHSCORES"));
        d.same(&format!("{cmd} 2 inf inf WITHSCORES"));
        d.same(&format!("{cmd} 2 inf inf WEIGHTS 1 -1 WITHSCORES"));
        d.same(&format!("{cmd} 2 a b AGGREGATE MIN WITHSCORES"));
        d.same(&format!("{cmd} 2 a b AGGREGATE max withscores"));
        d.same(&format!(
            "{cmd} 2 a b WEIGHTS 1 2 AGGREGATE SUM WEIGHTS 3 4 WITHSCORES"
        ));
        d.same(&format!("{cmd} 2 a nokey WITHSCORES"));
        d.same(&format!("{cmd} 2 nokey nokey2"));
        d.same(&format!("{cmd} 2 a a WITHSCORES"));
        d.same(&format!("{cmd} 1 a WITHSCORES WITHSCORES"));
        // Errors, in Redis's order.
        d.same(&format!("{cmd} 0 a"));
        d.same(&format!("{cmd} -1 a"));
        d.same(&format!("{cmd} x a"));
        d.same(&format!("{cmd} 3 a b"));
        d.same(&format!("{cmd} 1"));
        d.same(&format!("{cmd} 2 a h"));
        d.same(&format!("{cmd} 2 a h WEIGHTS x"));
        d.same(&format!("{cmd} 2 a b WEIGHTS 1"));
        d.same(&format!("{cmd} 2 a b WEIGHTS 1 x"));
        d.same(&format!("{cmd} 1 a AGGREGATE avg"));
        d.same(&format!("{cmd} 1 a AGGREGATE"));
        d.same(&format!("{cmd} 1 a foo"));
        d.same(&format!("{cmd} 1 a LIMIT 1"));
    }
    d.same("ZDIFF 1 a");
    d.same("ZDIFF 2 a b WITHSCORES");
    d.same("ZDIFF 3 b a c WITHSCORES");
    d.same("ZDIFF 2 a nokey WITHSCORES");
    d.same("ZDIFF 2 nokey a");
    d.same("ZDIFF 2 a a");
    d.same("ZDIFF 2 a h");
    d.same("ZDIFF 2 h a");
    d.same("ZDIFF 1 h foo");
    d.same("ZDIFF 1 a WEIGHTS 1");
    d.same("ZDIFF 1 a AGGREGATE MIN");
    d.same("ZDIFF 0 a");
    d.same("ZDIFF 2 a");
    d.same("ZDIFF x a");
    // ZINTERCARD.
    d.same("ZINTERCARD 2 a b");
    d.same("ZINTERCARD 3 a b c");
    d.same("ZINTERCARD 2 a b LIMIT 1");
    d.same("ZINTERCARD 2 a b LIMIT 0");
    d.same("ZINTERCARD 1 a LIMIT 100");
    d.same("ZINTERCARD 2 a nokey");
    d.same("ZINTERCARD 2 a h");
    d.same("ZINTERCARD 1 h LIMIT -1");
    d.same("ZINTERCARD 1 a LIMIT -1");
    d.same("ZINTERCARD 1 a LIMIT x");
    d.same("ZINTERCARD 1 a LIMIT");
    d.same("ZINTERCARD 1 a WITHSCORES");
    d.same("ZINTERCARD 1 a LIMIT 1 LIMIT 2");
    d.same("ZINTERCARD 0 a");
    d.same("ZINTERCARD x a");
    d.same("ZINTERCARD 2 a");
    // ZDIFFSTORE.
    d.same("ZDIFFSTORE d 2 a b");
    d.same("ZRANGE d 0 -1 WITHSCORES");
    d.same("ZDIFFSTORE d 2 a a");
    d.same("EXISTS d");
    d.same("ZDIFFSTORE h2 1 a");
    d.same("HSET h2 f v");
    d.same("ZDIFFSTORE h2 1 a");
    d.same("TYPE h2");
    d.same("ZDIFFSTORE d 1 h");
    d.same("ZDIFFSTORE d 1 a WITHSCORES");
    d.same("ZDIFFSTORE d 1 a WEIGHTS 1");
    d.same("ZDIFFSTORE d 0 a");
    d.same("ZDIFFSTORE d 2 a");
    d.same("ZDIFFSTORE d x a");
    d.same("ZDIFFSTORE d 1 nokey");
    d.same("ZADD e 1 e");
    d.same("EXPIRE e 100");
    d.same("ZDIFFSTORE e 1 a");
    d.same("TTL e");
    // ZRANGESTORE.
    d.same("ZRANGESTORE r a 0 -1");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZRANGESTORE r a 1 2 REV");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZRANGESTORE r b (1 +inf BYSCORE LIMIT 1 2");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZRANGESTORE r b +inf (1 BYSCORE REV");
    d.same("ZRANGE r 0 -1 WITHSCORES");
    d.same("ZADD lexz 0 a 0 b 0 c 0 d");
    d.same("ZRANGESTORE r lexz [b + BYLEX");
    d.same("ZRANGE r 0 -1");
    d.same("ZRANGESTORE r lexz + [b BYLEX REV LIMIT 0 1");
    d.same("ZRANGE r 0 -1");
    d.same("ZRANGESTORE r nokey 0 -1");
    d.same("EXISTS r");
    d.same("ZRANGESTORE r a 5 10");
    d.same("ZRANGESTORE h a 0 0");
    d.same("TYPE h");
    d.same("HSET h3 f v");
    d.same("ZRANGESTORE r h3 0 -1");
    d.same("ZRANGESTORE r a 0 -1 WITHSCORES");
    d.same("ZRANGESTORE r a 0 -1 LIMIT 0 1");
    d.same("ZRANGESTORE r a x 1");
    d.same("ZRANGESTORE r a a b BYSCORE");
    d.same("ZRANGESTORE r a a b BYLEX");
    d.same("ZRANGESTORE r a 0");
    d.same("ZRANGESTORE r a 0 1 foo");
    // Over 128 members: the skiplist's order and -0.
    let big1: Vec<(String, String)> = (0..300)
        .map(|i| (format!("{}", (i % 40) as f64 / 4.0 - 2.0), format!("p{i}")))
        .collect();
    let big2: Vec<(String, String)> = (150..450)
        .map(|i| (format!("{}", i % 7), format!("p{i}")))
        .collect();
    d.same_args(&zadd_all("big1", big1));
    d.same_args(&zadd_all("big2", big2));
    d.same("ZADD big1 -0 negzero");
    d.same("ZUNION 2 big1 big2 WITHSCORES");
    d.same("ZINTER 2 big1 big2 WEIGHTS 2 3 WITHSCORES");
    d.same("ZINTER 2 big1 big2 AGGREGATE MAX");
    d.same("ZDIFF 2 big1 big2 WITHSCORES");
    d.same("ZDIFF 2 big2 big1");
    d.same("ZINTERCARD 2 big1 big2");
    d.same("ZINTERCARD 2 big1 big2 LIMIT 7");
    d.same("ZDIFFSTORE bd 2 big1 big2");
    d.same("ZCARD bd");
    d.same("ZRANGE bd 0 -1 WITHSCORES");
    d.same("ZRANGESTORE br big1 10 200");
    d.same("ZRANGE br 0 -1 WITHSCORES");
    d.same("ZRANGESTORE br big1 -1 (1 BYSCORE");
    d.same("ZRANGE br 0 -1 WITHSCORES");
}

#[test]
fn set_algebra() {
    run_group("algebra", algebra);
}
