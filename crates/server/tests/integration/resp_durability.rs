//! Durability over the Redis protocol: every acknowledged write — sorted
//! sets, hashes, strings, expiries, MULTI/EXEC, a deep pipeline, renames
//! and copies — survives `kill -9`,
//! and a pipeline batch costs one fsync, not one per command.

use crate::support;

use support::resp::wire::{cmd, Conn};
use support::resp::Podium;

fn fsyncs(c: &mut Conn) -> u64 {
    let info = c.call_str("INFO persistence").text().expect("INFO text");
    info.lines()
        .find_map(|l| l.strip_prefix("podium_log_fsyncs:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no podium_log_fsyncs in {info:?}"))
}

#[test]
fn acknowledged_writes_survive_kill_9_and_a_pipeline_is_one_fsync() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());

    // A pipeline of 200 ZADDs sent in one write, then the 200 replies.
    let before = fsyncs(&mut c);
    let mut bytes = Vec::new();
    for i in 0..200 {
        bytes.extend(support::resp::wire::encode_command(&cmd(&format!(
            "ZADD lb {i} m{i}"
        ))));
    }
    c.send_raw(&bytes).unwrap();
    for _ in 0..200 {
        assert_eq!(c.read_reply().unwrap(), b":1\r\n");
    }
    // The batch waits once, for its last record, and only that wait wakes
    // the log's flusher: one fsync. The flusher also collects unwaited
    // records every 10 ms, so a batch whose execution a loaded machine
    // stretches across such a tick may take a second one (or a third if
    // the 200 commands arrive in two reads) — never one per write.
    let used = fsyncs(&mut c) - before;
    assert!(
        (1..=3).contains(&used),
        "200 pipelined writes took {used} fsyncs (a batch shares its fsyncs)"
    );

    assert_eq!(c.call_str("HSET h:alice name Alice level 7").int(), Some(2));
    assert_eq!(c.call_str("EXPIRE h:alice 1000").int(), Some(1));
    assert_eq!(
        c.call_str("ZINCRBY lb 1000 m0").text().as_deref(),
        Some("1000")
    );
    assert_eq!(c.call_str("MULTI").text().as_deref(), Some("OK"));
    c.call_str("ZADD lb 5000 tx1");
    c.call_str("ZREM lb m1");
    let exec = c.call(&cmd("EXEC"));
    assert_eq!(exec, b"*2\r\n:1\r\n:1\r\n");

    p.restart(); // SIGKILL, then start on the same data directory
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call_str("ZCARD lb").int(), Some(200));
    assert_eq!(c.call_str("ZREVRANK lb tx1").int(), Some(0));
    assert_eq!(c.call_str("ZREVRANK lb m0").int(), Some(1));
    assert_eq!(c.call(&cmd("ZSCORE lb m1")), b"$-1\r\n");
    assert_eq!(c.call(&cmd("ZSCORE lb m199")), b"$3\r\n199\r\n");
    assert_eq!(c.call(&cmd("HGET h:alice level")), b"$1\r\n7\r\n");
    let ttl = c.call_str("TTL h:alice").int().unwrap();
    assert!((990..=1000).contains(&ttl), "TTL after restart: {ttl}");
}

#[test]
fn acknowledged_string_writes_survive_kill_9() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());
    let ok = |c: &mut Conn, line: &str| {
        let r = c.call_str(line);
        assert!(!r.is_error(), "{line}: {r:?}");
    };
    ok(&mut c, "SET plain v");
    c.call(&support::resp::wire::args(&["SET", "bin\x00", ""]));
    ok(&mut c, "SET ex v EX 1000");
    ok(&mut c, "SET px v PX 2000000");
    ok(&mut c, "SET exat v EXAT 4102444800");
    ok(&mut c, "SET pxat v PXAT 4102444800123");
    ok(&mut c, "SET kept old EX 1000");
    ok(&mut c, "SET kept new KEEPTTL");
    ok(&mut c, "SET cleared v EX 1000");
    ok(&mut c, "SET cleared v2");
    ok(&mut c, "SETNX nx v");
    ok(&mut c, "SETEX setex 1000 v");
    ok(&mut c, "PSETEX psetex 1000000 v");
    ok(&mut c, "GETSET nx v2");
    ok(&mut c, "MSET m1 a m2 b");
    ok(&mut c, "MSETNX m3 c m4 d");
    ok(&mut c, "INCR n");
    ok(&mut c, "INCRBY n 41");
    ok(&mut c, "DECR n");
    ok(&mut c, "SET f 10.5 EX 1000");
    ok(&mut c, "INCRBYFLOAT f 0.1");
    ok(&mut c, "APPEND app hello");
    ok(&mut c, "SETRANGE app 8 !");
    ok(&mut c, "SET gone v");
    ok(&mut c, "GETDEL gone");
    ok(&mut c, "SET exd v");
    ok(&mut c, "GETEX exd EX 1000");
    ok(&mut c, "SET per v EX 1000");
    ok(&mut c, "GETEX per PERSIST");
    ok(&mut c, "SET past v");
    ok(&mut c, "GETEX past PXAT 1");
    ok(&mut c, "ZADD board 1 a");
    ok(&mut c, "SET board now-a-string");
    ok(&mut c, "HSET hash f v");
    ok(&mut c, "MSET hash s");
    ok(&mut c, "HINCRBYFLOAT h x 2.5");
    ok(&mut c, "HINCRBYFLOAT h x 0.1");

    p.restart(); // SIGKILL, then start on the same data directory
    let mut c = Conn::open(&p.addr());
    let get = |c: &mut Conn, key: &str| c.call(&cmd(&format!("GET {key}")));
    assert_eq!(get(&mut c, "plain"), b"$1\r\nv\r\n");
    assert_eq!(
        c.call(&support::resp::wire::args(&["GET", "bin\x00"])),
        b"$0\r\n\r\n"
    );
    let ttl = |c: &mut Conn, key: &str| c.call_str(&format!("TTL {key}")).int().unwrap();
    for (key, want) in [
        ("ex", 1000),
        ("px", 2000),
        ("kept", 1000),
        ("setex", 1000),
        ("psetex", 1000),
        ("f", 1000),
        ("exd", 1000),
    ] {
        let t = ttl(&mut c, key);
        assert!(
            (want - 10..=want).contains(&t),
            "TTL {key} after restart: {t}"
        );
    }
    assert_eq!(c.call_str("EXPIRETIME exat").int(), Some(4102444800));
    assert_eq!(c.call_str("PEXPIRETIME pxat").int(), Some(4102444800123));
    for key in [
        "plain", "cleared", "nx", "m1", "n", "app", "per", "board", "hash",
    ] {
        assert_eq!(ttl(&mut c, key), -1, "TTL {key}");
    }
    assert_eq!(get(&mut c, "kept"), b"$3\r\nnew\r\n");
    assert_eq!(get(&mut c, "cleared"), b"$2\r\nv2\r\n");
    assert_eq!(get(&mut c, "nx"), b"$2\r\nv2\r\n");
    assert_eq!(
        c.call(&cmd("MGET m1 m2 m3 m4")),
        b"*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"
    );
    assert_eq!(get(&mut c, "n"), b"$2\r\n41\r\n");
    assert_eq!(get(&mut c, "f"), b"$4\r\n10.6\r\n");
    assert_eq!(get(&mut c, "app"), b"$9\r\nhello\x00\x00\x00!\r\n");
    assert_eq!(c.call_str("EXISTS gone past").int(), Some(0));
    assert_eq!(get(&mut c, "per"), b"$1\r\nv\r\n");
    assert_eq!(c.call_str("TYPE board").text().as_deref(), Some("string"));
    assert_eq!(
        c.call(&cmd("ZCARD board")),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    assert_eq!(get(&mut c, "hash"), b"$1\r\ns\r\n");
    assert_eq!(c.call(&cmd("HGET h x")), b"$3\r\n2.6\r\n");
}

#[test]
fn keys_of_several_databases_survive_kill_9_with_swapdb_and_move() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());
    let ok = |c: &mut Conn, line: &str| {
        let r = c.call_str(line);
        assert!(!r.is_error(), "{line}: {r:?}");
    };
    ok(&mut c, "ZADD lb 1 zero");
    ok(&mut c, "SELECT 15");
    ok(&mut c, "ZADD lb 2 fifteen");
    ok(&mut c, "HSET h f fifteen");
    ok(&mut c, "SET s fifteen EX 1000");
    ok(&mut c, "SELECT 3");
    ok(&mut c, "ZADD lb 3 three");
    ok(&mut c, "SET gone v");
    ok(&mut c, "SWAPDB 3 4");
    ok(&mut c, "SELECT 15");
    assert_eq!(c.call_str("MOVE s 7").int(), Some(1));
    assert_eq!(c.call_str("MOVE lb 0").int(), Some(0));
    ok(&mut c, "SELECT 4");
    ok(&mut c, "FLUSHDB");
    ok(&mut c, "ZADD lb 4 four");

    p.restart(); // SIGKILL, then start on the same data directory
    let mut c = Conn::open(&p.addr());
    let range = |c: &mut Conn| c.call(&cmd("ZRANGE lb 0 -1"));
    assert_eq!(range(&mut c), b"*1\r\n$4\r\nzero\r\n");
    assert_eq!(c.call_str("SELECT 15").text().as_deref(), Some("OK"));
    assert_eq!(range(&mut c), b"*1\r\n$7\r\nfifteen\r\n");
    assert_eq!(c.call(&cmd("HGET h f")), b"$7\r\nfifteen\r\n");
    assert_eq!(c.call_str("EXISTS s").int(), Some(0));
    c.call_str("SELECT 7");
    assert_eq!(c.call(&cmd("GET s")), b"$7\r\nfifteen\r\n");
    let ttl = c.call_str("TTL s").int().unwrap();
    assert!((990..=1000).contains(&ttl), "TTL after restart: {ttl}");
    c.call_str("SELECT 3");
    assert_eq!(c.call_str("DBSIZE").int(), Some(0));
    c.call_str("SELECT 4");
    assert_eq!(range(&mut c), b"*1\r\n$4\r\nfour\r\n");
    assert_eq!(c.call_str("DBSIZE").int(), Some(1));
    let info = c.call_str("INFO keyspace").text().expect("INFO text");
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines.len(), 5, "{info:?}");
    assert_eq!(
        lines[..3],
        [
            "# Keyspace",
            "db0:keys=1,expires=0,avg_ttl=0",
            "db4:keys=1,expires=0,avg_ttl=0"
        ]
    );
    assert!(
        lines[3].starts_with("db7:keys=1,expires=1,avg_ttl="),
        "{info:?}"
    );
    assert_eq!(lines[4], "db15:keys=2,expires=0,avg_ttl=0");
}

#[test]
fn api_keys_gate_the_redis_protocol_by_scope() {
    let p = Podium::start(&[
        "--api-key",
        "readerkey0000000000:read",
        "--api-key",
        "writerkey000000000:write",
    ]);
    let mut c = Conn::open(&p.addr());
    assert_eq!(
        c.call(&cmd("ZADD lb 1 a")),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        c.call(&cmd("AUTH nottherightkey0000")),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(c.call(&cmd("AUTH readerkey0000000000")), b"+OK\r\n");
    assert_eq!(
        c.call(&cmd("ZADD lb 1 a")),
        b"-NOPERM this user has no permissions to run the 'zadd' command\r\n"
    );
    assert_eq!(c.call(&cmd("ZCARD lb")), b":0\r\n");
    // AUTH user key: the user name is ignored, the key decides.
    assert_eq!(c.call(&cmd("AUTH default writerkey000000000")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("ZADD lb 1 a")), b":1\r\n");
    assert_eq!(
        c.call(&cmd("FLUSHALL")),
        b"-NOPERM this user has no permissions to run the 'flushall' command\r\n"
    );
    // Deleting, expiring or overwriting a board is admin work.
    for line in ["DEL lb", "UNLINK lb", "PEXPIRE lb 1"] {
        assert_eq!(
            c.call(&cmd(line)),
            b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
            "{line}"
        );
    }
    assert_eq!(
        c.call(&cmd("ZUNIONSTORE lb 1 lb")),
        b"-NOPERM this user has no permissions to run the 'zunionstore' command\r\n"
    );
    assert_eq!(c.call(&cmd("ZCARD lb")), b":1\r\n");
    // A hash is member data: a write key's to delete.
    assert_eq!(c.call(&cmd("HSET h f v")), b":1\r\n");
    assert_eq!(c.call(&cmd("DEL h")), b":1\r\n");
    // Renaming or copying a board, or onto one, is admin work; a hash is
    // a write key's to move.
    for line in ["RENAME lb x", "RENAMENX lb x", "COPY lb x", "COPY nokey lb"] {
        assert_eq!(
            c.call(&cmd(line)),
            b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
            "{line}"
        );
    }
    assert_eq!(c.call(&cmd("HSET h f v")), b":1\r\n");
    assert_eq!(c.call(&cmd("RENAME h h2")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("COPY h2 h3")), b":1\r\n");
    assert_eq!(
        c.call(&cmd("BZPOPMIN lb 0")),
        b"*3\r\n$2\r\nlb\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(c.call(&cmd("ZADD lb 1 a")), b":1\r\n");
    // Another connection starts unauthenticated.
    let mut d = Conn::open(&p.addr());
    assert_eq!(
        d.call(&cmd("ZCARD lb")),
        b"-NOAUTH Authentication required.\r\n"
    );
}

/// Mixed writers under repeated `kill -9`: several clients write strings
/// (SET, INCR, APPEND, MSET), hashes (HSET, HINCRBY), sorted sets (ZADD,
/// ZINCRBY, ZREM), scripts (EVALSHA writing a string, a hash and a board
/// with one token, then counting) and MULTI/EXEC units, each remembering
/// what was acknowledged and what was in flight. After every restart each
/// key holds the last acknowledged value or the in-flight one, counters
/// hold at least what was acknowledged, and every unit (script,
/// transaction, MSET) is whole: all of its writes or none, the
/// unacknowledged last one too. The clients then carry on from what was
/// recovered, for several rounds.
#[test]
fn mixed_writers_survive_repeated_kill_9_with_units_whole() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const WORKERS: usize = 4;
    const ROUNDS: usize = 3;
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("mixed crash test seed {seed} (CRASH_SEED to repeat the op choices)");
    let mut rng = SmallRng::seed_from_u64(seed);

    let mut p = Podium::start(&[]);
    let mut models: Vec<crash::Model> = (0..WORKERS).map(crash::Model::new).collect();
    let mut total_acked = 0u64;
    for round in 0..ROUNDS {
        let stop = Arc::new(AtomicBool::new(false));
        let addr = p.addr();
        let workers: Vec<_> = models
            .drain(..)
            .map(|mut m| {
                let (stop, addr) = (stop.clone(), addr.clone());
                let wseed = rng.random::<u64>();
                thread::spawn(move || {
                    m.run(&addr, &stop, &mut SmallRng::seed_from_u64(wseed));
                    m
                })
            })
            .collect();
        // Kill at a random moment while all of them write.
        let started = Instant::now();
        thread::sleep(Duration::from_millis(rng.random_range(400..1500)));
        p.restart();
        stop.store(true, Ordering::SeqCst);
        let ran = started.elapsed();
        models = workers
            .into_iter()
            .map(|w| w.join().expect("a writer panicked"))
            .collect();
        let acked: u64 = models.iter().map(|m| m.acked_ops).sum();
        assert!(
            acked >= total_acked + 20,
            "round {round}: only {} writes acknowledged in {ran:?}",
            acked - total_acked
        );
        eprintln!(
            "round {round}: killed after {ran:?}, {} writes acknowledged",
            acked - total_acked
        );
        total_acked = acked;

        let mut c = Conn::open(&p.addr());
        for m in &mut models {
            m.verify_and_settle(&mut c, round);
        }
        crash::verify_shared(&mut c, &models, round);
    }
}

/// The clients of [`mixed_writers_survive_repeated_kill_9_with_units_whole`]
/// and what each knows of its writes.
mod crash {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rand::rngs::SmallRng;
    use rand::Rng;

    use super::support::resp::wire::{args, encode_command, parse_one, Args, Conn, Value};

    /// One Lua script writing a string, a hash and a board member with the
    /// same token, then counting itself; its reply is the count.
    pub const SCRIPT: &str = "redis.call('SET', KEYS[1], ARGV[1]) \
         redis.call('HSET', KEYS[2], 'f', ARGV[1], 'g', ARGV[2]) \
         redis.call('ZADD', KEYS[3], ARGV[2], 'tok') \
         return redis.call('INCR', KEYS[4])";

    /// The shared counter every client increments.
    pub const SHARED: &str = "crash:shared";

    /// A value written by one kind of operation: the last acknowledged one
    /// and the one in flight when the server died (equal when none was).
    /// After a crash the key holds one of the two; 0 is "never written".
    #[derive(Default, Clone, Copy, Debug)]
    pub struct Ack {
        pub acked: u64,
        pub tried: u64,
    }

    impl Ack {
        fn begin(&mut self, v: u64) {
            self.tried = v;
        }
        fn ack(&mut self) {
            self.acked = self.tried;
        }
        #[track_caller]
        fn check(&mut self, what: &str, got: u64) {
            assert!(
                got == self.acked || got == self.tried,
                "{what}: recovered {got}, but {} was acknowledged (in flight: {})",
                self.acked,
                self.tried
            );
            self.acked = got;
            self.tried = got;
        }
    }

    pub struct Model {
        pub w: usize,
        /// The last token used (tokens are never reused).
        seq: u64,
        set: Ack,
        mset: Ack,
        hset: Ack,
        zadd: Ack,
        incr: Ack,
        hincrby: Ack,
        zincrby: Ack,
        appends: Ack,
        script_tok: Ack,
        script_count: Ack,
        multi_tok: Ack,
        multi_count: Ack,
        /// Members of `crash:zr:W` whose ZADD was acknowledged and whose
        /// ZREM was not.
        zr_live: BTreeSet<u64>,
        /// A ZADD (`true`) or ZREM (`false`) of `crash:zr:W` in flight.
        zr_pending: Option<(u64, bool)>,
        pub shared_acked: u64,
        pub shared_tried: u64,
        pub acked_ops: u64,
        sha: String,
    }

    fn k(kind: &str, w: usize) -> String {
        format!("crash:{kind}:{w}")
    }

    fn value(raw: &[u8]) -> Value {
        parse_one(raw).expect("a complete reply")
    }

    impl Model {
        pub fn new(w: usize) -> Model {
            Model {
                w,
                seq: 0,
                set: Ack::default(),
                mset: Ack::default(),
                hset: Ack::default(),
                zadd: Ack::default(),
                incr: Ack::default(),
                hincrby: Ack::default(),
                zincrby: Ack::default(),
                appends: Ack::default(),
                script_tok: Ack::default(),
                script_count: Ack::default(),
                multi_tok: Ack::default(),
                multi_count: Ack::default(),
                zr_live: BTreeSet::new(),
                zr_pending: None,
                shared_acked: 0,
                shared_tried: 0,
                acked_ops: 0,
                sha: String::new(),
            }
        }

        fn tok(&self, seq: u64) -> String {
            format!("w{}:{seq}", self.w)
        }

        /// A token read back: this client's, and its number.
        #[track_caller]
        fn untok(&self, what: &str, v: &Value) -> u64 {
            match v {
                Value::NullBulk | Value::Null => 0,
                _ => {
                    let t = v
                        .text()
                        .unwrap_or_else(|| panic!("{what}: not a string: {v:?}"));
                    let prefix = format!("w{}:", self.w);
                    t.strip_prefix(&prefix)
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("{what}: {t:?} is not a token of {prefix}"))
                }
            }
        }

        /// Writes until the server goes away or `stop` is set; a write in
        /// flight when the connection breaks stays `tried`.
        pub fn run(&mut self, addr: &str, stop: &AtomicBool, rng: &mut SmallRng) {
            let Ok(mut c) = Conn::connect(addr) else {
                return;
            };
            let Ok(sha) = c.request(&args(&["SCRIPT", "LOAD", SCRIPT])) else {
                return;
            };
            self.sha = value(&sha).text().expect("SCRIPT LOAD's sha");
            while !stop.load(Ordering::SeqCst) {
                if self.step(&mut c, rng).is_err() {
                    return;
                }
                self.acked_ops += 1;
            }
        }

        /// One write, checked and recorded once acknowledged.
        fn step(&mut self, c: &mut Conn, rng: &mut SmallRng) -> std::io::Result<()> {
            let w = self.w;
            self.seq += 1;
            let seq = self.seq;
            let tok = self.tok(seq);
            let n = seq.to_string();
            match rng.random_range(0..12) {
                0 => {
                    self.set.begin(seq);
                    expect(c, &args(&["SET", &k("s", w), &tok]), b"+OK\r\n")?;
                    self.set.ack();
                }
                1 => {
                    self.incr.begin(self.incr.acked + 1);
                    let want = format!(":{}\r\n", self.incr.tried);
                    expect(c, &args(&["INCR", &k("n", w)]), want.as_bytes())?;
                    self.incr.ack();
                }
                2 => {
                    self.appends.begin(self.appends.acked + 1);
                    let piece = format!("{};", self.appends.tried);
                    let len = appended(self.appends.tried).len();
                    let want = format!(":{len}\r\n");
                    expect(c, &args(&["APPEND", &k("a", w), &piece]), want.as_bytes())?;
                    self.appends.ack();
                }
                3 => {
                    self.mset.begin(seq);
                    expect(
                        c,
                        &args(&["MSET", &k("m1", w), &tok, &k("m2", w), &tok]),
                        b"+OK\r\n",
                    )?;
                    self.mset.ack();
                }
                4 => {
                    self.hset.begin(seq);
                    let first = self.hset.acked == 0;
                    let want: &[u8] = if first { b":1\r\n" } else { b":0\r\n" };
                    expect(c, &args(&["HSET", &k("h", w), "f", &tok]), want)?;
                    self.hset.ack();
                }
                5 => {
                    self.hincrby.begin(self.hincrby.acked + 1);
                    let want = format!(":{}\r\n", self.hincrby.tried);
                    expect(
                        c,
                        &args(&["HINCRBY", &k("h", w), "n", "1"]),
                        want.as_bytes(),
                    )?;
                    self.hincrby.ack();
                }
                6 => {
                    self.zadd.begin(seq);
                    let member = format!("w{w}");
                    let want: &[u8] = if self.zadd.acked == 0 {
                        b":1\r\n"
                    } else {
                        b":0\r\n"
                    };
                    expect(c, &args(&["ZADD", "crash:board", &n, &member]), want)?;
                    self.zadd.ack();
                }
                7 => {
                    self.zincrby.begin(self.zincrby.acked + 1);
                    let member = format!("inc{w}");
                    let want = format!(
                        "${}\r\n{}\r\n",
                        self.zincrby.tried.to_string().len(),
                        self.zincrby.tried
                    );
                    expect(
                        c,
                        &args(&["ZINCRBY", "crash:board", "1", &member]),
                        want.as_bytes(),
                    )?;
                    self.zincrby.ack();
                }
                8 => {
                    // Remove the oldest live member half of the time.
                    let oldest = self.zr_live.first().copied();
                    match oldest.filter(|_| rng.random_bool(0.5)) {
                        Some(old) => {
                            self.zr_pending = Some((old, false));
                            expect(
                                c,
                                &args(&["ZREM", &k("zr", w), &format!("m{old}")]),
                                b":1\r\n",
                            )?;
                            self.zr_live.remove(&old);
                        }
                        None => {
                            self.zr_pending = Some((seq, true));
                            expect(
                                c,
                                &args(&["ZADD", &k("zr", w), &n, &format!("m{seq}")]),
                                b":1\r\n",
                            )?;
                            self.zr_live.insert(seq);
                        }
                    }
                    self.zr_pending = None;
                }
                9 => {
                    self.shared_tried += 1;
                    let r = c.request(&args(&["INCR", SHARED]))?;
                    assert!(value(&r).int().is_some(), "INCR {SHARED}: {r:?}");
                    self.shared_acked += 1;
                }
                10 => {
                    self.script_tok.begin(seq);
                    self.script_count.begin(self.script_count.acked + 1);
                    let want = format!(":{}\r\n", self.script_count.tried);
                    let (s, h, z, cnt) = (k("xs", w), k("xh", w), k("xz", w), k("xc", w));
                    expect(
                        c,
                        &args(&["EVALSHA", &self.sha, "4", &s, &h, &z, &cnt, &tok, &n]),
                        want.as_bytes(),
                    )?;
                    self.script_tok.ack();
                    self.script_count.ack();
                }
                _ => {
                    self.multi_tok.begin(seq);
                    self.multi_count.begin(self.multi_count.acked + 1);
                    let (s, h, z, cnt) = (k("ts", w), k("th", w), k("tz", w), k("tc", w));
                    // The whole unit in one write, the replies after.
                    let mut bytes = encode_command(&args(&["MULTI"]));
                    for a in [
                        args(&["SET", &s, &tok]),
                        args(&["HSET", &h, "f", &tok, "g", &n]),
                        args(&["ZADD", &z, &n, "tok"]),
                        args(&["INCR", &cnt]),
                        args(&["EXEC"]),
                    ] {
                        bytes.extend(encode_command(&a));
                    }
                    c.send_raw(&bytes)?;
                    assert_eq!(c.read_reply()?, b"+OK\r\n");
                    for _ in 0..4 {
                        assert_eq!(c.read_reply()?, b"+QUEUED\r\n");
                    }
                    let exec = c.read_reply()?;
                    let fresh = self.multi_tok.acked == 0;
                    let want = format!(
                        "*4\r\n+OK\r\n:{}\r\n:{}\r\n:{}\r\n",
                        if fresh { 2 } else { 0 },
                        if fresh { 1 } else { 0 },
                        self.multi_count.tried
                    );
                    assert_eq!(String::from_utf8_lossy(&exec), want, "EXEC of client {w}");
                    self.multi_tok.ack();
                    self.multi_count.ack();
                }
            }
            Ok(())
        }

        /// Checks what the restarted server holds of this client's writes,
        /// then takes it as the new starting point.
        pub fn verify_and_settle(&mut self, c: &mut Conn, round: usize) {
            let w = self.w;
            let at = |what: &str| format!("round {round}, client {w}: {what}");
            let get = |c: &mut Conn, a: &[&str]| value(&c.call(&args(a)));
            let int_of = |v: &Value| -> u64 {
                match v {
                    Value::NullBulk | Value::Null => 0,
                    _ => v
                        .text()
                        .and_then(|t| t.parse().ok())
                        .unwrap_or_else(|| panic!("not a number: {v:?}")),
                }
            };

            let v = get(c, &["GET", &k("s", w)]);
            let got = self.untok(&at("SET"), &v);
            self.set.check(&at("SET"), got);

            let v = get(c, &["GET", &k("n", w)]);
            self.incr.check(&at("INCR"), int_of(&v));

            let v = get(c, &["GET", &k("a", w)]);
            let text = v.text().unwrap_or_default();
            let count = text.matches(';').count() as u64;
            assert_eq!(text, appended(count), "{}", at("APPEND's pieces"));
            self.appends.check(&at("APPEND"), count);

            let v1 = get(c, &["GET", &k("m1", w)]);
            let v2 = get(c, &["GET", &k("m2", w)]);
            assert_eq!(v1, v2, "{}", at("an MSET half applied"));
            let got = self.untok(&at("MSET"), &v1);
            self.mset.check(&at("MSET"), got);

            let v = get(c, &["HGET", &k("h", w), "f"]);
            let got = self.untok(&at("HSET"), &v);
            self.hset.check(&at("HSET"), got);
            let v = get(c, &["HGET", &k("h", w), "n"]);
            self.hincrby.check(&at("HINCRBY"), int_of(&v));

            let v = get(c, &["ZSCORE", "crash:board", &format!("w{w}")]);
            self.zadd.check(&at("ZADD"), int_of(&v));
            let v = get(c, &["ZSCORE", "crash:board", &format!("inc{w}")]);
            self.zincrby.check(&at("ZINCRBY"), int_of(&v));

            let v = get(c, &["ZRANGE", &k("zr", w), "0", "-1"]);
            let members: BTreeSet<u64> = v
                .items()
                .expect("ZRANGE's array")
                .iter()
                .map(|m| {
                    m.text()
                        .and_then(|t| t.strip_prefix('m').and_then(|n| n.parse().ok()))
                        .unwrap_or_else(|| panic!("{}", at(&format!("member {m:?}"))))
                })
                .collect();
            let mut with_pending = self.zr_live.clone();
            match self.zr_pending {
                Some((m, true)) => {
                    with_pending.insert(m);
                }
                Some((m, false)) => {
                    with_pending.remove(&m);
                }
                None => {}
            }
            assert!(
                members == self.zr_live || members == with_pending,
                "{}: recovered {members:?}, acknowledged {:?}, in flight {:?}",
                at("ZADD/ZREM"),
                self.zr_live,
                self.zr_pending
            );
            self.zr_live = members;
            self.zr_pending = None;

            for (unit, pre, tok, count) in [
                ("script", "x", &mut self.script_tok, &mut self.script_count),
                (
                    "MULTI/EXEC",
                    "t",
                    &mut self.multi_tok,
                    &mut self.multi_count,
                ),
            ] {
                let s = get(c, &["GET", &k(&format!("{pre}s"), w)]);
                let hf = get(c, &["HGET", &k(&format!("{pre}h"), w), "f"]);
                let hg = get(c, &["HGET", &k(&format!("{pre}h"), w), "g"]);
                let z = get(c, &["ZSCORE", &k(&format!("{pre}z"), w), "tok"]);
                let n = get(c, &["GET", &k(&format!("{pre}c"), w)]);
                let what = at(unit);
                let seq_s = match &s {
                    Value::NullBulk | Value::Null => 0,
                    _ => s
                        .text()
                        .and_then(|t| {
                            t.strip_prefix(&format!("w{w}:"))
                                .and_then(|n| n.parse().ok())
                        })
                        .unwrap_or_else(|| panic!("{what}: {s:?}")),
                };
                assert_eq!(s, hf, "{what}: string and hash field differ: half applied");
                let (g, zs) = (int_of(&hg), int_of(&z));
                assert!(
                    g == seq_s && zs == seq_s,
                    "{what}: token {seq_s} in the string, {g} in the hash, {zs} on the board: half applied"
                );
                let nn = int_of(&n);
                // The count goes with the token: the acknowledged pair or
                // the in-flight pair, never a mix.
                assert!(
                    (seq_s, nn) == (tok.acked, count.acked)
                        || (seq_s, nn) == (tok.tried, count.tried),
                    "{what}: recovered token {seq_s} with count {nn}; acknowledged {:?}/{:?}, in flight {:?}/{:?}",
                    tok.acked,
                    count.acked,
                    tok.tried,
                    count.tried
                );
                tok.check(&what, seq_s);
                count.check(&what, nn);
            }
        }
    }

    /// The string `n` APPENDs leave: `1;2;…;n;`.
    fn appended(n: u64) -> String {
        (1..=n).map(|i| format!("{i};")).collect()
    }

    /// Sends `a`, reads its reply and requires `want` (a wrong reply is a
    /// failure, not a crash).
    fn expect(c: &mut Conn, a: &Args, want: &[u8]) -> std::io::Result<()> {
        let r = c.request(a)?;
        assert_eq!(
            String::from_utf8_lossy(&r),
            String::from_utf8_lossy(want),
            "{:?}",
            a.iter()
                .map(|x| String::from_utf8_lossy(x))
                .collect::<Vec<_>>()
        );
        Ok(())
    }

    /// The shared counter counts at least every acknowledged INCR and at
    /// most every one sent.
    pub fn verify_shared(c: &mut Conn, models: &[Model], round: usize) {
        let v = value(&c.call(&args(&["GET", SHARED])));
        let got: u64 = v.text().and_then(|t| t.parse().ok()).unwrap_or(0);
        let acked: u64 = models.iter().map(|m| m.shared_acked).sum();
        let tried: u64 = models.iter().map(|m| m.shared_tried).sum();
        assert!(
            (acked..=tried).contains(&got),
            "round {round}: {SHARED} is {got}; {acked} INCRs acknowledged, {tried} sent"
        );
    }
}

#[test]
fn renamed_and_copied_keys_survive_kill_9() {
    let mut p = Podium::start(&[]);
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call_str("ZADD lb 1 a 2 b 3 c").int(), Some(3));
    assert_eq!(c.call_str("HSET h f v").int(), Some(1));
    assert_eq!(c.call_str("EXPIRE lb 1000").int(), Some(1));
    assert_eq!(c.call(&cmd("RENAME lb season")), b"+OK\r\n");
    assert_eq!(c.call_str("COPY season copy").int(), Some(1));
    assert_eq!(c.call_str("ZADD copy 4 d").int(), Some(1));
    assert_eq!(c.call_str("COPY h season REPLACE").int(), Some(1));
    assert_eq!(c.call_str("RENAMENX copy h").int(), Some(0));
    assert_eq!(c.call(&cmd("RENAME copy board2")), b"+OK\r\n");
    assert_eq!(c.call(&cmd("RENAME h h2")), b"+OK\r\n");

    p.restart();
    let mut c = Conn::open(&p.addr());
    assert_eq!(c.call(&cmd("TYPE season")), b"+hash\r\n");
    assert_eq!(c.call(&cmd("HGET season f")), b"$1\r\nv\r\n");
    assert_eq!(c.call(&cmd("HGET h2 f")), b"$1\r\nv\r\n");
    assert_eq!(c.call_str("EXISTS lb copy h").int(), Some(0));
    assert_eq!(c.call_str("ZCARD board2").int(), Some(4));
    let ttl = c.call_str("TTL board2").int().unwrap();
    assert!((990..=1000).contains(&ttl), "the copied expiry: {ttl}");
    assert_eq!(c.call_str("TTL season").int(), Some(-1));
}
