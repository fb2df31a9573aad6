//! Real Redis clients against podium's Redis protocol (docs/spec.md §4): the
//! redis-cli of Debian's redis-tools and redis-py (its current version),
//! each run the same way against a real redis-server for comparison.
//!
//! The leaderboard libraries of agoragames run unchanged the same way:
//! the Python one (`leaderboard`, in the venv target/py-leaderboard) and
//! the Node.js one (`agoragames-leaderboard`, under
//! target/node-leaderboard/node_modules), and mlomb's `redis-rank` on
//! ioredis with its Lua scripts and its boards in database 15 (under
//! target/node-redis-rank/node_modules).
//!
//! redis-cli, redis-server, redis-py, node and those libraries must be
//! installed: `scripts/test.sh` installs them; without them these tests
//! fail and say so.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use support::redis::{require, RedisServer, INSTALL_HINT};
use support::resp::Podium;

/// Runs `redis-cli -p PORT ARGS` with `stdin`, returning (success,
/// stdout, stderr).
fn cli(port: u16, args: &[&str], stdin: &[u8]) -> (bool, String, String) {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning redis-cli");
    {
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin);
    }
    let out = child.wait_with_output().expect("redis-cli output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One redis-cli invocation, its expected output on podium (if given),
/// and whether it must equal what redis-server prints.
struct Case {
    args: &'static [&'static str],
    stdin: &'static [u8],
    expect: Option<&'static str>,
    same_as_redis: bool,
}

const fn case(args: &'static [&'static str], expect: &'static str) -> Case {
    Case {
        args,
        stdin: b"",
        expect: Some(expect),
        same_as_redis: true,
    }
}

#[test]
fn redis_cli() {
    require("redis-cli");
    let redis = RedisServer::start();
    let mut podium = Podium::start(&[]);
    let cases = [
        case(&["PING"], "PONG\n"),
        case(&["FLUSHALL"], "OK\n"),
        case(
            &["ZADD", "lb", "10", "alice", "20", "bob", "15", "carol"],
            "3\n",
        ),
        case(&["ZADD", "lb", "XX", "CH", "12", "alice"], "1\n"),
        case(
            &["ZRANGE", "lb", "0", "-1", "WITHSCORES"],
            "alice\n12\ncarol\n15\nbob\n20\n",
        ),
        case(
            &["ZREVRANGE", "lb", "0", "1", "WITHSCORES"],
            "bob\n20\ncarol\n15\n",
        ),
        case(&["ZREVRANK", "lb", "bob"], "0\n"),
        case(&["ZREVRANK", "lb", "alice"], "2\n"),
        case(&["ZRANK", "lb", "nobody"], "\n"),
        case(&["ZSCORE", "lb", "carol"], "15\n"),
        case(&["ZINCRBY", "lb", "0.5", "carol"], "15.5\n"),
        case(&["ZCARD", "lb"], "3\n"),
        case(&["HSET", "user:1", "name", "Alice", "country", "FR"], "2\n"),
        case(&["HGET", "user:1", "name"], "Alice\n"),
        case(&["--no-raw", "ZSCORE", "lb", "alice"], "\"12\"\n"),
        case(&["--no-raw", "ZSCORE", "lb", "nobody"], "(nil)\n"),
        case(&["--no-raw", "ZREVRANK", "lb", "bob"], "(integer) 0\n"),
        case(
            &["--no-raw", "ZRANGE", "lb", "0", "-1", "WITHSCORES"],
            "1) \"alice\"\n2) \"12\"\n3) \"carol\"\n4) \"15.5\"\n5) \"bob\"\n6) \"20\"\n",
        ),
        case(
            &["--no-raw", "ZADD", "lb", "x", "dave"],
            "(error) ERR value is not a valid float\n",
        ),
        case(
            &["--no-raw", "HSET", "lb", "f", "v"],
            "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n",
        ),
        case(
            &["--no-raw", "NOSUCH", "a"],
            "(error) ERR unknown command 'NOSUCH', with args beginning with: 'a' \n",
        ),
        // RESP3 (redis-cli -3 sends HELLO 3): doubles and nested pairs.
        case(
            &["-3", "--no-raw", "ZSCORE", "lb", "carol"],
            "(double) 15.5\n",
        ),
        case(
            &["-3", "--no-raw", "ZRANGE", "lb", "0", "1", "WITHSCORES"],
            "1) 1) \"alice\"\n   2) (double) 12\n2) 1) \"carol\"\n   2) (double) 15.5\n",
        ),
        case(&["-3", "--no-raw", "ZSCORE", "lb", "nobody"], "(nil)\n"),
        case(&["-3", "HGET", "user:1", "country"], "FR\n"),
        // Repeated commands, commands from stdin.
        case(&["-r", "3", "ZINCRBY", "lb", "1", "bob"], "21\n22\n23\n"),
        Case {
            args: &[],
            stdin: b"ZADD s 1 a 2 b\nZCARD s\nZRANGE s 0 -1 WITHSCORES\n",
            expect: Some("2\n2\na\n1\nb\n2\n"),
            same_as_redis: true,
        },
        // Mass insertion: raw RESP through --pipe (ends with an ECHO).
        Case {
            args: &["--pipe"],
            stdin: b"*4\r\n$4\r\nZADD\r\n$4\r\npipe\r\n$1\r\n1\r\n$1\r\na\r\n\
                     *4\r\n$4\r\nZADD\r\n$4\r\npipe\r\n$1\r\n2\r\n$1\r\nb\r\n\
                     *4\r\n$4\r\nHSET\r\n$2\r\nph\r\n$1\r\nf\r\n$1\r\nv\r\n",
            expect: None,
            same_as_redis: true,
        },
        case(&["ZCARD", "pipe"], "2\n"),
        case(&["--scan", "--pattern", "user:*"], "user:1\n"),
        case(&["DBSIZE"], "5\n"),
        case(&["EXPIRE", "s", "100"], "1\n"),
        case(&["PERSIST", "s"], "1\n"),
        case(&["TTL", "s"], "-1\n"),
        case(&["TYPE", "user:1"], "hash\n"),
        case(&["DEL", "s", "pipe"], "2\n"),
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let (ok_p, out_p, err_p) = cli(podium.port(), c.args, c.stdin);
        let (_, out_r, _) = cli(redis.port(), c.args, c.stdin);
        let label = format!("redis-cli {}", c.args.join(" "));
        if !ok_p {
            failures.push(format!("{label}: exit failure, stderr {err_p:?}"));
        }
        if let Some(want) = c.expect {
            if out_p != want {
                failures.push(format!(
                    "{label}: expected {want:?}, podium printed {out_p:?}"
                ));
            }
        }
        if c.same_as_redis && out_p != out_r {
            failures.push(format!(
                "{label}: redis-server printed {out_r:?}, podium printed {out_p:?}"
            ));
        }
    }
    // HGETALL: field order is not defined; compare as pairs.
    let hgetall = |port| {
        let (_, out, _) = cli(port, &["HGETALL", "user:1"], b"");
        let lines: Vec<String> = out.lines().map(str::to_string).collect();
        let mut pairs: Vec<(String, String)> = lines
            .chunks(2)
            .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
            .collect();
        pairs.sort();
        pairs
    };
    let want = vec![
        ("country".to_string(), "FR".to_string()),
        ("name".to_string(), "Alice".to_string()),
    ];
    if hgetall(podium.port()) != want {
        failures.push(format!(
            "redis-cli HGETALL user:1: podium printed {:?}",
            hgetall(podium.port())
        ));
    }
    // --pipe reports its replies.
    let (_, piped, _) = cli(
        podium.port(),
        &["--pipe"],
        b"*2\r\n$4\r\nPING\r\n$1\r\nx\r\n*3\r\n$5\r\nZCARD\r\n$2\r\nlb\r\n$1\r\ny\r\n",
    );
    if !piped.contains("errors: 1, replies: 2") {
        failures.push(format!(
            "redis-cli --pipe with one arity error: expected `errors: 1, replies: 2`, got {piped:?}"
        ));
    }
    // INFO as redis-cli shows it.
    let (_, info, _) = cli(podium.port(), &["INFO"], b"");
    for needle in [
        "# Server",
        "# Clients",
        "# Memory",
        "used_memory:",
        "# Keyspace",
        "db0:keys=",
    ] {
        if !info.contains(needle) {
            failures.push(format!("redis-cli INFO: no {needle:?} in {info:?}"));
        }
    }
    assert!(
        podium.running(),
        "podium exited under redis-cli:\n{}",
        podium.output()
    );
    assert!(
        failures.is_empty(),
        "{} redis-cli checks failed against podium:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn redis_py() {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import redis; assert int(redis.__version__.split('.')[0]) >= 5",
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "python3 with redis-py >= 5 is needed: {INSTALL_HINT}");
    let redis = RedisServer::start();
    let mut podium = Podium::start(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/redis_py_test.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(podium.port().to_string())
        .args(["--redis-port", &redis.port().to_string()])
        .output()
        .expect("running the redis-py test script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "redis-py against podium failed ({}):\n{stdout}{stderr}",
        out.status
    );
    assert!(
        podium.running(),
        "podium exited under redis-py:\n{}",
        podium.output()
    );
}

/// agoragames' `leaderboard` library for Python, unchanged, runs its
/// leaderboard flow (rank_member, leaders, around_me, ranked_in_list,
/// percentile, score ranges, tie ranking) against real Redis and against
/// podium with the same assertions.
#[test]
fn python_leaderboard_library() {
    let python =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-leaderboard/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import leaderboard"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the `leaderboard` library's venv is missing at {}: {INSTALL_HINT}",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/leaderboard_lib_test.py");
    let redis = RedisServer::start();
    let mut podium = Podium::start(&[]);
    for (who, port) in [("redis", redis.port()), ("podium", podium.port())] {
        let out = Command::new(&python)
            .arg(&script)
            .arg(port.to_string())
            .output()
            .expect("running the leaderboard library test");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("leaderboard library OK"),
            "the leaderboard library against {who} failed ({}):\n{text}",
            out.status
        );
    }
    assert!(podium.running(), "podium exited:\n{}", podium.output());
}

/// agoragames' leaderboard library for Node.js (`agoragames-leaderboard`
/// 2.1.0 on node_redis 0.8), unchanged, runs the same leaderboard flow
/// (plus its reverse, tie and competition ranking variants, merges and
/// intersections) against real Redis and against podium with the same
/// assertions.
#[test]
fn node_leaderboard_library() {
    let node_modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/node-leaderboard/node_modules");
    let ok = Command::new("node")
        .args(["-e", "require('agoragames-leaderboard')"])
        .env("NODE_PATH", &node_modules)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "node or the `agoragames-leaderboard` npm package is missing at {}: run scripts/test.sh, \
         which installs it (npm install --prefix target/node-leaderboard \
         agoragames-leaderboard@2.1.0)",
        node_modules.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/leaderboard_lib_test.js");
    let redis = RedisServer::start();
    let mut podium = Podium::start(&[]);
    for (who, port) in [("redis", redis.port()), ("podium", podium.port())] {
        let out = Command::new("node")
            .arg(&script)
            .arg(port.to_string())
            .env("NODE_PATH", &node_modules)
            .output()
            .expect("running the node leaderboard library test");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains("node leaderboard library OK"),
            "the node leaderboard library against {who} failed ({}):\n{text}",
            out.status
        );
    }
    assert!(podium.running(), "podium exited:\n{}", podium.output());
}

/// mlomb's `redis-rank` 2.2.3 on ioredis 5.6.1 (under
/// target/node-redis-rank/node_modules), unchanged: boards of both sort
/// policies, each update policy (two of them Lua scripts sent as EVALSHA),
/// top N limits, lists, around, export, periodic boards and a matrix, in
/// the database `db` of the server on `port`.
fn redis_rank(who: &str, port: u16, db: u8) {
    let node_modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/node-redis-rank/node_modules");
    let ok = Command::new("node")
        .args(["-e", "require('redis-rank'); require('ioredis')"])
        .env("NODE_PATH", &node_modules)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "node or the `redis-rank` / `ioredis` npm packages are missing at {}: run scripts/test.sh, \
         which installs them (npm install --prefix target/node-redis-rank \
         redis-rank@2.2.3 ioredis@5.6.1)",
        node_modules.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/redis_rank_test.js");
    let out = Command::new("node")
        .arg(&script)
        .args([port.to_string(), db.to_string()])
        .env("NODE_PATH", &node_modules)
        .output()
        .expect("running the redis-rank test");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains(&format!("redis-rank library OK (db {db})")),
        "redis-rank on database {db} of {who} failed ({}):\n{text}",
        out.status
    );
}

/// `redis-rank` with its boards in database 15 (where its own tests keep
/// them), on redis-server and on podium.
#[test]
fn node_redis_rank_library() {
    let redis = RedisServer::start();
    redis_rank("redis", redis.port(), 15);
    let mut podium = Podium::start(&[]);
    redis_rank("podium", podium.port(), 15);
    assert!(podium.running(), "podium exited:\n{}", podium.output());
}

/// redis-py's own tests (`tests/test_commands.py`'s key, string, scan,
/// sorted-set, hash and server families, and `tests/test_scripting.py`,
/// from the source distribution scripts/test.sh unpacks under
/// target/redis-py) in RESP2 and RESP3: every case that passes on
/// redis-server passes on podium, except the cases docs/server.md lists
/// with their reason (`tests/python/redis_py_suite.py` does the
/// comparison).
#[test]
fn redis_py_own_test_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tests = root.join("target/redis-py/redis-5.2.1/tests");
    assert!(
        tests.join("test_commands.py").exists(),
        "redis-py's test suite is missing at {}: {INSTALL_HINT}",
        tests.display()
    );
    let ok = Command::new("python3")
        .args(["-c", "import pytest, pytest_timeout, packaging"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with pytest, pytest-timeout and packaging is needed: {INSTALL_HINT}"
    );
    let redis = RedisServer::start();
    let mut podium = Podium::start(&[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/redis_py_suite.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--tests")
        .arg(&tests)
        .args(["--redis", &redis.port().to_string()])
        .args(["--podium", &podium.port().to_string()])
        .arg("--docs")
        .arg(root.join("docs/server.md"))
        .output()
        .expect("running redis-py's test suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(
        out.status.success(),
        "redis-py's own tests pass on redis-server and not on podium ({}):\n{stdout}{stderr}",
        out.status
    );
    assert!(
        podium.running(),
        "podium exited under redis-py's tests:\n{}",
        podium.output()
    );
}
