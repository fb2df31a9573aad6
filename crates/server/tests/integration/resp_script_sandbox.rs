//! Hostile Lua scripts against the real binary, sent with API keys of
//! each scope (read, write, admin): each fails cleanly or is contained,
//! the scripts after it — another key's — see the environment as it was
//! and run with their own key's rights only, the stored data is what the
//! keys allowed, and while a runaway library call runs the server keeps
//! answering (HTTP, RESP's BUSY, AUTH and SCRIPT KILL on a new
//! connection), SCRIPT KILL and the time limit stop it, and SIGTERM
//! stops the server promptly.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use support::resp::wire::{args, cmd, Conn};
use support::{launch, serve_command, START_TIMEOUT};

const READ: &str = "read-key-0123456789abcdef";
const WRITE: &str = "write-key-0123456789abcdef";
const ADMIN: &str = "admin-key-0123456789abcdef";

const BUSY: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

/// A regular expression whose backtracking takes for ever in Lua 5.1's
/// matcher (its C code never lets the count hook run).
const PATTERN_BOMB: &str = "return string.find(string.rep('a', 40), \
                            string.rep('a?', 40) .. string.rep('a', 40) .. 'b')";

/// podium with HTTP and RESP on, three keys, a script time limit of
/// `limit_ms`.
struct Server {
    child: Child,
    resp: String,
    http: String,
    _tmp: tempfile::TempDir,
}

impl Server {
    fn start(limit_ms: u64) -> Server {
        Server::start_with(limit_ms, &[])
    }

    /// [`Server::start`] with more settings.
    fn start_with(limit_ms: u64, settings: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let keys = [
            format!("{READ}:read"),
            format!("{WRITE}:write"),
            format!("{ADMIN}:admin"),
        ];
        let mut extra = vec!["--script-time-limit".to_string(), limit_ms.to_string()];
        for k in &keys {
            extra.push("--api-key".into());
            extra.push(k.clone());
        }
        extra.extend(settings.iter().map(|s| s.to_string()));
        let cmd = serve_command(
            &tmp.path().join("data"),
            &[
                "--http",
                "127.0.0.1:0",
                "--rpc",
                "off",
                "--resp",
                "127.0.0.1:0",
            ],
            &extra,
        );
        let l = launch::launch(
            cmd,
            &tmp.path().join("stderr.log"),
            "podium: resp listening on ",
            START_TIMEOUT,
        );
        let http = l
            .stdout
            .lock()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("podium: http listening on "))
            .expect("the HTTP listening line")
            .trim()
            .to_string();
        Server {
            child: l.child,
            resp: l.addr,
            http,
            _tmp: tmp,
        }
    }

    /// A connection authenticated with `key`.
    fn conn(&self, key: &str) -> Conn {
        let mut c = Conn::open(&self.resp);
        assert_eq!(c.call(&args(&["AUTH", key])), b"+OK\r\n");
        c
    }

    /// The status code of GET /healthz, within two seconds.
    fn healthz(&self) -> Option<u16> {
        let mut s = TcpStream::connect(&self.http).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).ok()?;
        std::str::from_utf8(&buf[..n])
            .ok()?
            .split(' ')
            .nth(1)?
            .parse()
            .ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn eval(c: &mut Conn, script: &str, rest: &[&str]) -> Vec<u8> {
    let mut a = vec!["EVAL", script];
    a.extend_from_slice(rest);
    c.call(&args(&a))
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Scripts that later scripts of any key run as they would on a fresh
/// server, and what they answer.
fn pristine(c: &mut Conn) {
    assert_eq!(
        show(&eval(
            c,
            "return redis.call('ZSCORE', KEYS[1], 'alice')",
            &["1", "lb"]
        )),
        "$2\r\n10\r\n"
    );
    assert_eq!(
        show(&eval(
            c,
            "return string.format('%d:%s', tonumber('7'), ('x'):upper())",
            &["0"]
        )),
        "$3\r\n7:X\r\n"
    );
    assert_eq!(
        show(&eval(
            c,
            "local function has(f) return (pcall(f)) and 'yes' or 'no' end \
             return {type(redis.call), has(function() return setfenv end), \
             has(function() return newproxy end), #KEYS}",
            &["0"]
        )),
        "*4\r\n$8\r\nfunction\r\n$2\r\nno\r\n$2\r\nno\r\n:0\r\n"
    );
}

/// Each hostile script, by each key: a clean answer within the hard
/// limit; then a probe by every key sees a pristine environment, and the
/// data holds only what was allowed.
#[test]
fn hostile_scripts_are_contained_whatever_the_key() {
    let s = Server::start(200);
    let mut admin = s.conn(ADMIN);
    assert_eq!(admin.call(&cmd("ZADD lb 10 alice")), b":1\r\n");
    assert_eq!(admin.call(&cmd("ZADD other 1 bob")), b":1\r\n");
    let hostile = [
        // Globals a later script uses, replaced.
        "local real = redis; local r = {}; \
         r.call = function(...) real.pcall('ZADD', 'lb', 1, 'mallory'); \
         real.pcall('DEL', 'other'); return real.call(...) end; redis = r; return 1",
        "_G.redis = {call = function() return 'evil' end}",
        "rawset(_G, 'tonumber', function() return 0 end)",
        "tonumber = function() return 0 end",
        "getmetatable('').__index.format = function() redis.pcall('DEL', 'other') return '' end",
        "getmetatable('').__index = {upper = function() return 'evil' end}",
        "setmetatable(_G, {__index = function() return 'evil' end})",
        "local g = getmetatable(_G); g.__index = {}",
        "loadstring('redis = nil')()",
        "setfenv(0, {})",
        "getfenv(tonumber).redis = nil",
        // A finalizer that would run in a later script.
        "local p = newproxy(true); getmetatable(p).__gc = function() redis.pcall('DEL', 'other') end",
        "collectgarbage('stop')",
        // Bytecode.
        "return loadstring(string.dump(function() return 1 end))()",
        "return loadstring('\\27LuaQ\\0\\1\\4\\8\\4\\8\\0')",
        // Library bombs.
        "return #string.rep('x', 2^31 - 1)",
        "local t = {} for i = 1, 300 do t[i] = 'x' end return #table.concat(t, string.rep('y', 1e6))",
        "return cjson.decode(string.rep('[', 100000) .. string.rep(']', 100000))",
        "local t = {1} for i = 1, 30 do t = {t, t, t} end return #cjson.encode(t)",
        "local t = {1} for i = 1, 15 do t = {t, t, t, t, t, t, t, t} end return #cmsgpack.pack(t)",
        "return cmsgpack.unpack(string.rep('\\145', 100000))",
        "return select('#', cmsgpack.unpack(string.rep(cmsgpack.pack('a'), 10000)))",
        "local t = {1} for i = 1, 40 do t = {t, t} end return t",
        // As many arguments as Lua passes to a function.
        "local t = {} for i = 1, 7998 do t[i] = tostring(i) end return redis.call('ECHO', unpack(t))",
        PATTERN_BOMB,
        "return string.find(string.rep('a', 300000), string.rep('a', 150000) .. 'b', 1, true)",
        "local co = coroutine.wrap(function() while true do end end) co()",
    ];
    let keys = [READ, WRITE, ADMIN];
    let mut probes: Vec<Conn> = keys.iter().map(|k| s.conn(k)).collect();
    for (i, key) in keys.iter().enumerate() {
        let mut c = s.conn(key);
        for script in hostile {
            let started = Instant::now();
            let r = eval(&mut c, script, &["0"]);
            // Within the hard limit (2 s here) and a margin wide enough
            // for a loaded machine: beside the memory limits' tests the
            // 300 MB table.concat, 0.7 s alone, once took 12 s. The
            // scripts the time limit stops run for minutes or for ever
            // without it.
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{key}: {script}: {:?}",
                started.elapsed()
            );
            assert!(!r.is_empty(), "{key}: {script}");
            // The connection goes on.
            assert_eq!(c.call(&cmd("PING")), b"+PONG\r\n", "{key}: {script}");
            // The next key's script, and every other, sees nothing of it.
            for j in 1..=3 {
                pristine(&mut probes[(i + j) % 3]);
            }
        }
    }
    assert_eq!(admin.call(&cmd("EXISTS other")), b":1\r\n");
    assert_eq!(admin.call(&cmd("ZSCORE lb mallory")), b"$-1\r\n");
    assert_eq!(admin.call(&cmd("ZCARD lb")), b":1\r\n");
    assert_eq!(s.healthz(), Some(200));
    let log = std::fs::read_to_string(s._tmp.path().join("stderr.log")).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}

/// A runaway pattern match: other clients are answered (BUSY on RESP,
/// HTTP's health check), a connection opened meanwhile can AUTH and
/// SCRIPT KILL it, and the hard limit stops one that wrote.
#[test]
fn script_kill_and_the_time_limit_stop_library_calls() {
    let s = Server::start(200);
    let mut runner = s.conn(READ);
    let mut other = s.conn(READ);
    runner.send(&args(&["EVAL", PATTERN_BOMB, "0"])).unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while other.call(&cmd("PING")) != BUSY {
        assert!(Instant::now() < end, "never BUSY");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.healthz(), Some(200));
    // A connection opened now authenticates and kills the script.
    let mut late = Conn::open(&s.resp);
    assert_eq!(late.call(&args(&["AUTH", READ])), b"+OK\r\n");
    assert_eq!(
        show(&late.call(&args(&["HELLO", "2"])))[..1].to_string(),
        "*"
    );
    assert_eq!(late.call(&cmd("ZCARD lb")), BUSY);
    let killed_at = Instant::now();
    assert_eq!(late.call(&cmd("SCRIPT KILL")), b"+OK\r\n");
    let r = show(&runner.read_reply().unwrap());
    assert!(
        r.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
        "{r}"
    );
    assert!(killed_at.elapsed() < Duration::from_secs(1));
    assert_eq!(other.call(&cmd("PING")), b"+PONG\r\n");

    // One that wrote first is stopped at the hard limit (ten times 200 ms).
    let mut writer = s.conn(WRITE);
    let started = Instant::now();
    let script = format!("redis.call('HSET', 'h', 'f', 'v') {PATTERN_BOMB}");
    let r = show(&eval(&mut writer, &script, &["0"]));
    assert!(r.starts_with("-ERR Script stopped: it ran past "), "{r}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(writer.call(&cmd("HGET h f")), b"$1\r\nv\r\n");
}

/// SIGTERM while a script that cannot be killed runs a runaway pattern:
/// the script is stopped as at the hard limit and the server exits
/// promptly, not after the script (or never).
#[test]
fn sigterm_stops_a_running_script() {
    let mut s = Server::start(5000);
    let mut writer = s.conn(WRITE);
    let script = format!("redis.call('HSET', 'h', 'f', 'v') {PATTERN_BOMB}");
    writer.send(&args(&["EVAL", &script, "0"])).unwrap();
    thread::sleep(Duration::from_millis(300));
    let pid = s.child.id() as i32;
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let started = Instant::now();
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    if let Ok(r) = writer.read_reply() {
        assert!(
            show(&r).starts_with("-ERR Script stopped: the server is shutting down"),
            "{}",
            show(&r)
        );
    }
}

/// The peak resident memory of process `pid` so far (VmHWM), in bytes.
fn peak_resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb * 1024
}

/// cjson.decode and cmsgpack.unpack of inputs small as text and immense
/// as Lua values fail with `not enough memory` inside the Lua heap's
/// bound (a quarter of --maxmemory, 16 MB here), as a script making the
/// same tables itself would: neither builds its whole value outside the
/// bound first (16 to 48 times the input), so the process never holds
/// more than the bound for them.
#[test]
fn decoders_stay_within_the_lua_heap_bound() {
    let s = Server::start_with(5000, &["--maxmemory", "64mb"]);
    let mut c = s.conn(ADMIN);
    let pid = s.child.id();
    // Warm: the Lua state made, a first script run.
    assert_eq!(eval(&mut c, "return 1", &["0"]), b":1\r\n");
    let before = peak_resident(pid);
    for bomb in [
        // 300,000 one-key objects: 2.4 MB of JSON.
        "local s = '[' .. string.rep('{\"a\":1},', 300000) .. '{}]' return #cjson.decode(s)",
        // An array of 1,000,000 one-key maps: 4 MB of MessagePack.
        "local n = 1000000 \
         return #cmsgpack.unpack('\\221' .. struct.pack('>I4', n) .. string.rep('\\129\\161a\\1', n))",
    ] {
        let r = show(&eval(&mut c, bomb, &["0"]));
        assert!(r.contains("not enough memory"), "{bomb}: {r}");
        let grown = peak_resident(pid).saturating_sub(before);
        assert!(
            grown < 40 << 20,
            "{bomb}: the peak resident memory grew by {} MB",
            grown >> 20
        );
        assert_eq!(c.call(&cmd("PING")), b"+PONG\r\n");
    }
    // Within the bound, they decode.
    assert_eq!(
        show(&eval(
            &mut c,
            "return {#cjson.decode('[' .. string.rep('{\"a\":1},', 1000) .. '{}]'), \
             #cmsgpack.unpack(cmsgpack.pack({1, {a = 2}, 'x'}))}",
            &["0"]
        )),
        "*2\r\n:1001\r\n:3\r\n"
    );
}
