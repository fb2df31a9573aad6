//! The chaos test: the release `podium serve` with all three protocols,
//! one writer on each (HTTP submit, MessagePack-RPC submit, RESP ZADD)
//! recording every acknowledged write, while the server meets a flood of
//! idle connections on every listener, a full disk, a data directory it
//! may not write, `kill -9` while the disk is full and `kill -9` in the
//! middle of acknowledged writes. After each kill every acknowledged write
//! is read back on each protocol; after the disk episodes, writes must
//! resume without a restart (and `/healthz`, `podium_log_failed` say so);
//! every refused write must be refused with a clear error, never a hang.
//!
//! The disk episodes need a filesystem the test can fill and flip: a 64 MiB
//! tmpfs mounted on the data directory, which needs root (CI runs as
//! root). Without it the test says why and runs the rest.
//!
//! A tmpfs (like every Linux filesystem) refuses `mount -o remount,ro`
//! with EBUSY while a file on it is open for writing, and the server
//! keeps its log segment open: the read-only episode therefore tries the
//! remount, and when it is refused makes the data directory immutable
//! (`chattr +i`, which binds root too) so the log's next segment and the
//! snapshot cannot be created, then clears the flag. The one time the
//! kernel lets the filesystem go read-only is while the server is down:
//! after the `kill -9` the test remounts it read-only, checks that the
//! server refuses to start there with a clear error, and remounts it
//! read-write before the restart.

use crate::support;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};
use support::launch::launch;
use support::resp::wire::{self, Conn};
use support::{serve_command, START_TIMEOUT};

const HTTP_LISTENING: &str = "podium: http listening on ";
const RPC_LISTENING: &str = "podium: rpc listening on ";
const RESP_LISTENING: &str = "podium: resp listening on ";

/// Longest a writer's request may take: longer is a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections opened to each listener during the flood.
const FLOOD: usize = 300;
/// Size of the tmpfs holding the data directory.
const TMPFS_SIZE: &str = "64m";
/// Pause between one writer's requests: enough writes to reach snapshots
/// and fill segments, few enough to stay far from the tmpfs's size.
const WRITE_PAUSE: Duration = Duration::from_millis(3);
/// How long writes may stay refused once the cause is gone (the log
/// retries after 50 ms, doubling up to every second).
const RESUME_WITHIN: Duration = Duration::from_secs(15);

// ------------------------------------------------------------ the server

/// `podium serve` with its three listeners on free ports.
struct Serve {
    child: Option<Child>,
    data_dir: PathBuf,
    logs: PathBuf,
    starts: u32,
    http: String,
    rpc: String,
    resp: String,
}

impl Serve {
    fn command(data_dir: &Path) -> Command {
        serve_command(
            data_dir,
            &[
                "--http",
                "127.0.0.1:0",
                "--rpc",
                "127.0.0.1:0",
                "--resp",
                "127.0.0.1:0",
            ],
            // Snapshots (and with them the log's rotation to a new
            // segment file) fall due every few seconds of writing.
            &["--snapshot-every".into(), "256KiB".into()],
        )
    }

    fn start(data_dir: &Path, logs: &Path) -> Serve {
        let mut s = Serve {
            child: None,
            data_dir: data_dir.to_path_buf(),
            logs: logs.to_path_buf(),
            starts: 0,
            http: String::new(),
            rpc: String::new(),
            resp: String::new(),
        };
        s.spawn();
        s
    }

    fn stderr_path(&self) -> PathBuf {
        self.logs.join(format!("stderr-{}.log", self.starts))
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "already running");
        self.starts += 1;
        // The RESP line is printed last.
        let l = launch(
            Self::command(&self.data_dir),
            &self.stderr_path(),
            RESP_LISTENING,
            START_TIMEOUT,
        );
        let out = l.stdout.lock().unwrap().clone();
        let addr = |prefix: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"))
                .trim()
                .to_string()
        };
        self.http = addr(HTTP_LISTENING);
        self.rpc = addr(RPC_LISTENING);
        self.resp = l.addr;
        self.child = Some(l.child);
    }

    fn kill9(&mut self) {
        let mut c = self.child.take().expect("running");
        c.kill().expect("SIGKILL");
        c.wait().expect("reaping");
    }

    /// `podium_log_failed` on `/metrics`: 1 while the log cannot write.
    fn log_failed(&self) -> String {
        let text = support::http::client()
            .get(format!("http://{}/metrics", self.http))
            .timeout(REQUEST_TIMEOUT)
            .send()
            .and_then(|r| r.text())
            .unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("podium_log_failed "))
            .unwrap_or("missing")
            .to_string()
    }

    /// `/healthz`'s status and `podium_log_failed`, as a pair to compare.
    fn health(&self) -> (u16, String) {
        (self.healthz(), self.log_failed())
    }

    fn healthz(&self) -> u16 {
        support::http::client()
            .get(format!("http://{}/healthz", self.http))
            .timeout(REQUEST_TIMEOUT)
            .send()
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ------------------------------------------------------------ the tmpfs

/// The tmpfs the data directory lives on; on drop, made writable again
/// and unmounted (the server is dropped before it).
struct Tmpfs {
    mnt: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs on `mnt`, or says why it cannot.
    fn mount(mnt: &Path) -> Result<Tmpfs, String> {
        // SAFETY: geteuid(2) cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: mounting a tmpfs needs root".into());
        }
        let (ok, out) = run(&[
            "mount",
            "-t",
            "tmpfs",
            "-o",
            &format!("size={TMPFS_SIZE}"),
            "tmpfs",
            &mnt.display().to_string(),
        ]);
        if ok {
            Ok(Tmpfs {
                mnt: mnt.to_path_buf(),
            })
        } else {
            Err(format!("mount -t tmpfs refused: {out}"))
        }
    }

    fn remount(&self, mode: &str) -> (bool, String) {
        run(&[
            "mount",
            "-o",
            &format!("remount,{mode}"),
            &self.mnt.display().to_string(),
        ])
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = run(&["chattr", "-i", &self.mnt.join("data").display().to_string()]);
        let _ = self.remount("rw");
        let (ok, out) = run(&["umount", &self.mnt.display().to_string()]);
        if !ok {
            eprintln!("chaos: umount {} failed: {out}", self.mnt.display());
        }
    }
}

/// Runs a command to its end: whether it succeeded, and what it printed.
fn run(argv: &[&str]) -> (bool, String) {
    match Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .to_string(),
        ),
        Err(e) => (false, format!("{}: {e}", argv[0])),
    }
}

/// Idle connections to open to each listener: [`FLOOD`], or fewer when
/// the descriptor limit (the server inherits the test's) would not leave
/// the server room for its files; running out of descriptors is a test
/// of its own (crash.rs).
fn flood_size() -> usize {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return FLOOD;
    }
    let spare = (rl.rlim_cur as usize).saturating_sub(256) / 3;
    FLOOD.min(spare)
}

/// Fills the filesystem of `path` until a write fails with ENOSPC.
fn fill(path: &Path) -> u64 {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .expect("creating the filler");
    let mut total = 0u64;
    for chunk in [1 << 20, 4096, 1] {
        let buf = vec![0xa5u8; chunk];
        loop {
            match f.write(&buf) {
                Ok(0) => break,
                Ok(n) => total += n as u64,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
    total
}

// ------------------------------------------------------------ the writers

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Proto {
    Http,
    Rpc,
    Resp,
}

const PROTOS: [Proto; 3] = [Proto::Http, Proto::Rpc, Proto::Resp];

impl Proto {
    fn board(self) -> &'static str {
        match self {
            Proto::Http => "chaos-http",
            Proto::Rpc => "chaos-rpc",
            Proto::Resp => "chaos-resp",
        }
    }
}

/// What one write came to.
enum Outcome {
    /// Acknowledged: it must survive anything that follows.
    Acked,
    /// Refused with this error: not acknowledged.
    Refused(String),
    /// The connection failed (or the answer took longer than
    /// [`REQUEST_TIMEOUT`]): expected only when the server is killed.
    Broken(String),
}

/// One connection of one protocol, opened before any chaos.
enum Client {
    Http(reqwest::blocking::Client, String),
    Rpc(Rpc),
    Resp(Conn),
}

impl Client {
    fn open(proto: Proto, s: &Serve) -> Client {
        match proto {
            Proto::Http => {
                let c = reqwest::blocking::Client::builder()
                    .timeout(REQUEST_TIMEOUT)
                    .pool_max_idle_per_host(1)
                    .build()
                    .unwrap();
                Client::Http(c, format!("http://{}", s.http))
            }
            Proto::Rpc => Client::Rpc(Rpc::connect(&s.rpc)),
            Proto::Resp => {
                let c = Conn::open(&s.resp);
                Client::Resp(c)
            }
        }
    }

    /// Submits `member` with score `n` on the board of `proto`.
    fn submit(&mut self, proto: Proto, n: u64) -> Outcome {
        let member = format!("m{n}");
        match self {
            Client::Http(c, base) => {
                let r = c
                    .post(format!("{base}/v1/boards/{}/scores", proto.board()))
                    .json(&json!({"member": member, "score": n}))
                    .send();
                let r = match r {
                    Ok(r) => r,
                    Err(e) => return Outcome::Broken(e.to_string()),
                };
                let status = r.status().as_u16();
                let body: Json = match r.json() {
                    Ok(b) => b,
                    Err(e) => return Outcome::Broken(format!("{status}: {e}")),
                };
                match status {
                    200 if body["score"].as_f64() == Some(n as f64) => Outcome::Acked,
                    503 if body["error"]["code"] == "storage_unavailable" => {
                        Outcome::Refused(body["error"]["message"].as_str().unwrap_or("").into())
                    }
                    _ => panic!("HTTP submit of {member} answered {status}: {body}"),
                }
            }
            Client::Rpc(c) => {
                let entry = rmpv::Value::Map(vec![
                    ("member".into(), member.as_str().into()),
                    ("score".into(), n.into()),
                ]);
                match c.call("submit", vec![proto.board().into(), entry]) {
                    Err(e) => Outcome::Broken(e),
                    Ok(Ok(_)) => Outcome::Acked,
                    Ok(Err((code, msg))) if code == "storage_unavailable" => Outcome::Refused(msg),
                    Ok(Err((code, msg))) => panic!("RPC submit of {member}: {code}: {msg}"),
                }
            }
            Client::Resp(c) => {
                let a = wire::args(&["ZADD", proto.board(), &n.to_string(), &member]);
                match c.request(&a) {
                    Err(e) => Outcome::Broken(e.to_string()),
                    Ok(r) if r == b":1\r\n" => Outcome::Acked,
                    Ok(r) if r.starts_with(b"-") => {
                        Outcome::Refused(String::from_utf8_lossy(&r).trim().to_string())
                    }
                    Ok(r) => panic!("ZADD {member} answered {}", wire::show(&r)),
                }
            }
        }
    }
}

/// A MessagePack-RPC connection.
struct Rpc {
    rd: BufReader<TcpStream>,
    wr: TcpStream,
    next_id: u32,
}

type RpcResult = Result<rmpv::Value, (String, String)>;

impl Rpc {
    fn connect(addr: &str) -> Rpc {
        let s = TcpStream::connect(addr).expect("connecting to the RPC port");
        s.set_read_timeout(Some(REQUEST_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(REQUEST_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Rpc {
            rd: BufReader::new(s.try_clone().unwrap()),
            wr: s,
            next_id: 1,
        }
    }

    /// The call's result or its `(code, message)` error; `Err` when the
    /// connection failed.
    fn call(&mut self, method: &str, params: Vec<rmpv::Value>) -> Result<RpcResult, String> {
        let id = self.next_id;
        self.next_id += 1;
        let req = rmpv::Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            rmpv::Value::Array(params),
        ]);
        let mut buf = Vec::new();
        rmpv::encode::write_value(&mut buf, &req).unwrap();
        self.wr.write_all(&buf).map_err(|e| e.to_string())?;
        let v = rmpv::decode::read_value(&mut self.rd).map_err(|e| e.to_string())?;
        let a = v.as_array().expect("a response array");
        assert_eq!(a[1].as_u64(), Some(u64::from(id)), "{v}");
        if a[2].is_nil() {
            return Ok(Ok(a[3].clone()));
        }
        let e = a[2].as_array().expect("error is [code, message]");
        Ok(Err((
            e[0].as_str().unwrap_or("").to_string(),
            e[1].as_str().unwrap_or("").to_string(),
        )))
    }
}

/// What one writer has seen so far.
#[derive(Default)]
struct Tally {
    /// Every acknowledged `n` (member `m{n}`, score `n`).
    acked: Vec<u64>,
    /// Refusals by message, with their count.
    refused: HashMap<String, u64>,
    refusals: u64,
    /// Why the connection failed, if it did (the writer stops then).
    broken: Option<String>,
    /// The slowest answer so far.
    slowest: Duration,
    /// Times the server closed the connection after refusing a write
    /// that was applied but could not be made durable (the Redis
    /// protocol's answer: the reply, then the close), and the writer
    /// connected again.
    reconnects: u64,
}

struct Writer {
    proto: Proto,
    tally: Arc<Mutex<Tally>>,
    thread: Option<JoinHandle<()>>,
}

/// A writer on `proto` whose members are `m{first}`, `m{first + 1}`, …
fn start_writer(proto: Proto, s: &Serve, stop: Arc<AtomicBool>, first: u64) -> Writer {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut client = Client::open(proto, s);
    // The connection is up before any chaos: one acknowledged write.
    assert!(
        matches!(client.submit(proto, first), Outcome::Acked),
        "{proto:?}: the first write was not acknowledged"
    );
    tally.lock().unwrap().acked.push(first);
    let t = tally.clone();
    let thread = thread::spawn(move || {
        let mut n = first;
        let mut closing = false;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let started = Instant::now();
            let outcome = client.submit(proto, n);
            let took = started.elapsed();
            let mut t = t.lock().unwrap();
            t.slowest = t.slowest.max(took);
            match outcome {
                Outcome::Acked => {
                    t.acked.push(n);
                    closing = false;
                }
                Outcome::Refused(why) => {
                    // RESP answers a write it applied but could not make
                    // durable, then closes the connection.
                    closing = why.starts_with("-ERR storage unavailable:");
                    t.refusals += 1;
                    *t.refused.entry(why).or_default() += 1;
                }
                Outcome::Broken(_) if closing => match &client {
                    Client::Resp(c) => match Conn::connect(c.addr()) {
                        Ok(c) => {
                            client = Client::Resp(c);
                            t.reconnects += 1;
                            closing = false;
                        }
                        Err(e) => {
                            t.broken = Some(format!("reconnecting after a refusal: {e}"));
                            return;
                        }
                    },
                    _ => unreachable!("only RESP closes after a refusal"),
                },
                Outcome::Broken(why) => {
                    t.broken = Some(why);
                    return;
                }
            }
            drop(t);
            thread::sleep(WRITE_PAUSE);
        }
    });
    Writer {
        proto,
        tally,
        thread: Some(thread),
    }
}

impl Writer {
    fn counts(&self) -> (usize, u64) {
        let t = self.tally.lock().unwrap();
        (t.acked.len(), t.refusals)
    }

    #[track_caller]
    fn alive(&self, during: &str, s: &Serve) {
        let t = self.tally.lock().unwrap();
        if let Some(why) = &t.broken {
            panic!(
                "{:?} writer lost its connection {during}: {why}\nserver log:\n{}",
                self.proto,
                s.stderr()
            );
        }
        assert!(
            t.slowest < REQUEST_TIMEOUT,
            "{:?}: an answer took {:?} {during}",
            self.proto,
            t.slowest
        );
    }
}

/// Waits until `ok` holds for every writer's `(acked, refused)` counts
/// compared with `before`; fails after `within`, saying `what`.
fn wait_all(
    writers: &[Writer],
    what: &str,
    within: Duration,
    ok: impl Fn((usize, u64), (usize, u64)) -> bool,
    s: &Serve,
) -> Duration {
    let before: Vec<_> = writers.iter().map(Writer::counts).collect();
    let t = Instant::now();
    loop {
        for w in writers {
            w.alive(what, s);
        }
        if writers.iter().zip(&before).all(|(w, b)| ok(*b, w.counts())) {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < within,
            "{what}: not within {within:?} (counts {:?} → {:?})\nserver log:\n{}",
            before,
            writers.iter().map(Writer::counts).collect::<Vec<_>>(),
            s.stderr()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Every writer gets `n` more acknowledgements.
fn acks(writers: &[Writer], n: usize, what: &str, within: Duration, s: &Serve) -> Duration {
    wait_all(writers, what, within, |b, a| a.0 >= b.0 + n, s)
}

/// Every writer gets a refusal.
fn refusals(writers: &[Writer], what: &str, within: Duration, s: &Serve) -> Duration {
    wait_all(writers, what, within, |b, a| a.1 > b.1, s)
}

/// Every writer's refusals all say the log cannot write, and one of them
/// at least says `needle`.
fn refusals_say(writers: &[Writer], needle: &str) {
    for w in writers {
        let t = w.tally.lock().unwrap();
        for why in t.refused.keys() {
            assert!(
                why.contains("the log cannot write"),
                "{:?}: unclear refusal {why:?}",
                w.proto
            );
        }
        assert!(
            t.refused.keys().any(|why| why.contains(needle)),
            "{:?}: no refusal says {needle:?}: {:?}",
            w.proto,
            t.refused
        );
    }
}

/// One writer per protocol, the members of each numbered from `first`.
fn start_writers(s: &Serve, stop: &Arc<AtomicBool>, first: u64) -> Vec<Writer> {
    PROTOS
        .iter()
        .map(|&p| start_writer(p, s, stop.clone(), first))
        .collect()
}

/// After a kill: the writers stop (their connections are gone) and join
/// the ones whose acknowledged writes are checked at the end.
fn retire(writers: &mut Vec<Writer>, stop: &AtomicBool, retired: &mut Vec<Writer>) {
    stop.store(true, Ordering::Relaxed);
    for mut w in writers.drain(..) {
        w.thread.take().unwrap().join().unwrap();
        retired.push(w);
    }
}

// ------------------------------------------------------------ reading back

/// Every `(member, score)` of `board`, read on `proto`.
fn read_back(proto: Proto, s: &Serve, board: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    match proto {
        Proto::Http => {
            let r = support::http::client()
                .get(format!("http://{}/v1/boards/{board}/export", s.http))
                .send()
                .expect("export");
            assert_eq!(r.status().as_u16(), 200);
            for line in r.text().unwrap().lines().filter(|l| !l.is_empty()) {
                let v: Json = serde_json::from_str(line).unwrap();
                out.insert(
                    v["member"].as_str().unwrap().to_string(),
                    v["score"].as_f64().unwrap(),
                );
            }
        }
        Proto::Rpc => {
            let v = Rpc::connect(&s.rpc)
                .call("export", vec![board.into()])
                .expect("the RPC connection")
                .expect("export");
            for e in v.as_array().expect("export's array") {
                let field = |k: &str| {
                    e.as_map()
                        .unwrap()
                        .iter()
                        .find(|(f, _)| f.as_str() == Some(k))
                        .map(|(_, v)| v.clone())
                        .unwrap()
                };
                out.insert(
                    field("member").as_str().unwrap().to_string(),
                    field("score").as_f64().unwrap(),
                );
            }
        }
        Proto::Resp => {
            let mut c = Conn::open(&s.resp);
            let v =
                wire::parse_one(&c.call(&wire::args(&["ZRANGE", board, "0", "-1", "WITHSCORES"])))
                    .unwrap();
            let items = v.items().expect("ZRANGE's array");
            for pair in items.chunks(2) {
                out.insert(
                    pair[0].text().unwrap(),
                    pair[1].text().unwrap().parse().unwrap(),
                );
            }
        }
    }
    out
}

/// Every write acknowledged to `writers` is on `s`, read on every
/// protocol, with its score; whatever else is there (writes answered with
/// an error, or cut by a kill) has the score its member was written with.
fn every_ack_is_there(writers: &[Writer], s: &Serve, after: &str) {
    for proto in PROTOS {
        let board = proto.board();
        let mut acked = Vec::new();
        let (mut refusals, mut reconnects, mut slowest) = (0, 0, Duration::ZERO);
        for w in writers.iter().filter(|w| w.proto == proto) {
            let t = w.tally.lock().unwrap();
            acked.extend_from_slice(&t.acked);
            refusals += t.refusals;
            reconnects += t.reconnects;
            slowest = slowest.max(t.slowest);
        }
        for reader in PROTOS {
            let got = read_back(reader, s, board);
            let lost: Vec<&u64> = acked
                .iter()
                .filter(|n| got.get(&format!("m{n}")) != Some(&(**n as f64)))
                .collect();
            assert!(
                lost.is_empty(),
                "{board} {after}: {} of {} acknowledged writes missing or changed \
                 (read on {reader:?}), e.g. m{}\nserver log:\n{}",
                lost.len(),
                acked.len(),
                lost[0],
                s.stderr()
            );
            for (m, score) in &got {
                assert_eq!(m[1..].parse::<f64>().ok(), Some(*score), "{board}: {m}");
            }
        }
        eprintln!(
            "chaos: {after}: {board}: {} acknowledged writes all read back on every \
             protocol ({refusals} refused, {reconnects} reconnections after a refusal, \
             slowest answer {slowest:?})",
            acked.len(),
        );
    }
}

// ------------------------------------------------------------ the test

#[test]
fn acknowledged_writes_survive_floods_full_and_unwritable_disks_and_kill_9() {
    let started = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("podium-chaos-")
        .tempdir()
        .unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let tmpfs = match Tmpfs::mount(&mnt) {
        Ok(t) => Some(t),
        Err(why) => {
            eprintln!(
                "chaos: SKIPPED the disk-full and read-only episodes ({why}); \
                 running the flood and kill -9"
            );
            None
        }
    };
    let data_dir = mnt.join("data");
    let mut s = Serve::start(&data_dir, tmp.path());
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = start_writers(&s, &stop, 0);
    let mut retired = Vec::new();
    acks(
        &writers,
        20,
        "before any chaos",
        Duration::from_secs(30),
        &s,
    );
    let healthy = (200, "0".to_string());
    let failing = (503, "1".to_string());
    assert_eq!(
        s.health(),
        healthy,
        "/healthz and podium_log_failed at first"
    );

    // (1) Hundreds of idle connections on every listener. A refused one
    // is fine (a connection limit may be set); the writers, connected
    // before, go on being answered.
    let mut flood = Vec::new();
    let mut refused_flood = 0;
    let per_listener = flood_size();
    for addr in [&s.http, &s.rpc, &s.resp] {
        for _ in 0..per_listener {
            match TcpStream::connect(addr) {
                Ok(c) => flood.push(c),
                Err(_) => refused_flood += 1,
            }
        }
    }
    let took = acks(
        &writers,
        50,
        "during the connection flood",
        RESUME_WITHIN,
        &s,
    );
    eprintln!(
        "chaos: flood of {} idle connections ({refused_flood} refused): \
         50 more acknowledged writes on each protocol in {took:?}",
        flood.len()
    );
    drop(flood);

    let filler = mnt.join("filler");
    if let Some(fs) = &tmpfs {
        // (2) The disk fills up: every protocol's writes are refused
        // with the reason, and accepted again once space is freed.
        let filled = fill(&filler);
        let took = refusals(
            &writers,
            "after the disk filled up",
            Duration::from_secs(30),
            &s,
        );
        assert_eq!(s.health(), failing, "while the disk is full");
        refusals_say(&writers, "No space left on device");
        eprintln!("chaos: disk full ({filled} filler bytes): writes refused after {took:?}");
        thread::sleep(Duration::from_millis(500));
        std::fs::remove_file(&filler).unwrap();
        let took = acks(&writers, 5, "after space was freed", RESUME_WITHIN, &s);
        assert_eq!(s.health(), healthy, "after space was freed");
        eprintln!("chaos: space freed: writes acknowledged again after {took:?}, no restart");

        // (3) The data directory becomes unwritable.
        let (ro, why) = fs.remount("ro");
        let dir = data_dir.display().to_string();
        let undo: Option<Box<dyn Fn()>> = if ro {
            eprintln!("chaos: remounted read-only while the server runs");
            Some(Box::new(|| {
                let (ok, out) = fs.remount("rw");
                assert!(ok, "remount rw: {out}");
            }))
        } else {
            eprintln!(
                "chaos: remount,ro refused while the server holds its log open \
                 for writing ({}): making the data directory immutable instead",
                why.lines().next().unwrap_or("")
            );
            match run(&["chattr", "+i", &dir]) {
                (true, _) => Some(Box::new(|| {
                    let (ok, out) = run(&["chattr", "-i", &dir]);
                    assert!(ok, "chattr -i {dir}: {out}");
                })),
                (false, out) => {
                    eprintln!(
                        "chaos: SKIPPED the unwritable-directory episode: \
                         chattr +i {dir} failed: {out}"
                    );
                    None
                }
            }
        };
        if let Some(undo) = undo {
            // The log fails at its next new file: the rotation of the
            // next snapshot, due after --snapshot-every of log.
            let took = refusals(
                &writers,
                "with the data directory unwritable",
                Duration::from_secs(60),
                &s,
            );
            assert_eq!(s.health(), failing, "while unwritable");
            refusals_say(
                &writers,
                if ro {
                    "Read-only file system"
                } else {
                    "Operation not permitted"
                },
            );
            eprintln!("chaos: data directory unwritable: writes refused after {took:?}");
            undo();
            let took = acks(
                &writers,
                5,
                "after the directory was writable again",
                RESUME_WITHIN,
                &s,
            );
            assert_eq!(s.health(), healthy, "once writable");
            eprintln!("chaos: writable again: writes acknowledged after {took:?}, no restart");
        }

        // (4a) kill -9 while the disk is full: whatever the failing log
        // held in memory or half wrote was never acknowledged; the
        // restart (once there is room to create its log segment) keeps
        // every acknowledged write.
        fill(&filler);
        refusals(
            &writers,
            "after the disk filled up again",
            Duration::from_secs(30),
            &s,
        );
        s.kill9();
        retire(&mut writers, &stop, &mut retired);
        std::fs::remove_file(&filler).unwrap();
        s.spawn();
        every_ack_is_there(&retired, &s, "after kill -9 on a full disk");
        stop.store(false, Ordering::Relaxed);
        writers = start_writers(&s, &stop, 1_000_000);
    }

    // (4b) kill -9 in the middle of acknowledged writes.
    acks(&writers, 20, "before the kill", RESUME_WITHIN, &s);
    s.kill9();
    retire(&mut writers, &stop, &mut retired);
    if let Some(fs) = &tmpfs {
        // Nothing holds a file open now: the kernel lets the filesystem
        // go read-only. The server must refuse to start there, saying why.
        let (ok, out) = fs.remount("ro");
        assert!(ok, "remount,ro with the server down: {out}");
        let err = tmp.path().join("stderr-ro.log");
        let mut child = Serve::command(&data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let t = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("podium serve on a read-only data directory neither started nor exited");
            }
            thread::sleep(Duration::from_millis(20));
        };
        let said = std::fs::read_to_string(&err).unwrap();
        assert!(!status.success(), "started on a read-only data directory");
        assert_eq!(said.matches("Read-only file system").count(), 1, "{said}");
        eprintln!(
            "chaos: read-only data directory at start refused: {}",
            said.lines().last().unwrap_or("")
        );
        let (ok, out) = fs.remount("rw");
        assert!(ok, "remount,rw: {out}");
    }
    s.spawn();
    every_ack_is_there(&retired, &s, "after the last kill -9");
    assert_eq!(s.health(), healthy, "after the restart");

    // And the restarted server takes writes on every protocol.
    for p in PROTOS {
        let mut c = Client::open(p, &s);
        assert!(
            matches!(c.submit(p, 9_000_000), Outcome::Acked),
            "{p:?}: a write after the restart was not acknowledged"
        );
    }
    eprintln!("chaos: done in {:?}", started.elapsed());
    drop(s);
    drop(tmpfs);
}
