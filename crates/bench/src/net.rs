//! What the network scenarios share: a `podium serve` and a `redis-server`
//! started on free ports with temporary data directories (and stopped when
//! dropped), member ids, latency statistics, a window of requests in
//! flight, progress bars, and the podium-vs-Redis table.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::{self, Better, Record, Table};

/// How long a server may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to finish the snapshot (AOF rewrite) a load
/// set off.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Polls `settled` until it holds (a server's snapshot or AOF rewrite that
/// a load set off is over), so the reads measured next do not measure it
/// too. Both servers are treated alike.
fn wait_settled(what: &str, doing: &str, mut settled: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while !settled()? {
        if Instant::now() > deadline {
            bail!("{what} still {doing} after {SETTLE_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// When both servers flush their logs: podium's `--fsync`, Redis's
/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    #[default]
    EverySec,
    Always,
}

impl Fsync {
    pub fn as_str(self) -> &'static str {
        match self {
            Fsync::EverySec => "everysec",
            Fsync::Always => "always",
        }
    }
}

impl std::str::FromStr for Fsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Fsync, String> {
        match s {
            "everysec" => Ok(Fsync::EverySec),
            "always" => Ok(Fsync::Always),
            _ => Err(format!("{s:?}: expected everysec or always")),
        }
    }
}

impl fmt::Display for Fsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The options every network scenario takes.
#[derive(Debug, Clone)]
pub struct NetOptions {
    /// The `podium` binary to start (`serve`).
    pub exe: PathBuf,
    /// Run Redis beside podium (when `redis-server` is found).
    pub redis: bool,
    /// The `redis-server` binary; looked up in `PATH` when not a path.
    pub redis_server: String,
    pub fsync: Fsync,
    pub seed: u64,
    pub progress: bool,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            exe: PathBuf::from("podium"),
            redis: true,
            redis_server: "redis-server".into(),
            fsync: Fsync::EverySec,
            seed: 42,
            progress: true,
        }
    }
}

// ------------------------------------------------------------- processes

/// Makes the child die with the bench (a Ctrl-C'd run must not leave a
/// server holding gigabytes behind): Linux's parent-death signal.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the child between fork and exec and
        // calls only prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `podium serve` on a temporary data directory: HTTP and MessagePack-RPC
/// on free ports, the Redis protocol off. Killed when dropped.
pub struct PodiumServer {
    child: Child,
    dir: tempfile::TempDir,
    pub rpc: SocketAddr,
    pub http: SocketAddr,
}

impl PodiumServer {
    pub fn start(exe: &Path, fsync: Fsync) -> Result<PodiumServer> {
        Self::start_with(exe, fsync, &[])
    }

    /// [`PodiumServer::start`] with more `serve` flags (e.g. `--backend`).
    pub fn start_with(exe: &Path, fsync: Fsync, extra: &[&str]) -> Result<PodiumServer> {
        let dir = tempfile::Builder::new()
            .prefix("podium-bench-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let stderr = std::fs::File::create(dir.path().join("podium.log"))?;
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--http", "127.0.0.1:0", "--rpc", "127.0.0.1:0"])
            .args(["--resp", "off", "--fsync", fsync.as_str()])
            .args(["--log-level", "warn"])
            .args(extra);
        // Flags alone decide: no config file, API keys or other settings
        // from the environment.
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PODIUM_") {
                cmd.env_remove(k);
            }
        }
        die_with_parent(&mut cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .with_context(|| format!("cannot start {}", exe.display()))?;
        let out = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel::<(String, String)>();
        std::thread::spawn(move || {
            // Read to the end so the server never blocks on a full pipe.
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                for proto in ["http", "rpc"] {
                    if let Some(a) = line.strip_prefix(&format!("podium: {proto} listening on ")) {
                        let _ = tx.send((proto.to_string(), a.trim().to_string()));
                    }
                }
            }
        });
        let (mut http, mut rpc) = (None, None);
        let deadline = Instant::now() + START_TIMEOUT;
        let log = |dir: &tempfile::TempDir| {
            std::fs::read_to_string(dir.path().join("podium.log")).unwrap_or_default()
        };
        while http.is_none() || rpc.is_none() {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((p, a)) => {
                    let a: SocketAddr = a.parse().with_context(|| format!("address {a:?}"))?;
                    if p == "http" {
                        http = Some(a);
                    } else {
                        rpc = Some(a);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let st = child.wait().ok();
                    bail!(
                        "podium serve exited ({st:?}) before listening:\n{}",
                        log(&dir)
                    );
                }
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "podium serve did not start within {START_TIMEOUT:?}:\n{}",
                    log(&dir)
                );
            }
        }
        Ok(PodiumServer {
            child,
            rpc: rpc.expect("set"),
            http: http.expect("set"),
            dir,
        })
    }

    /// The server's process id (e.g. for [`cpu_seconds`]).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("podium.log")).unwrap_or_default()
    }

    /// Waits until no snapshot is due or being written
    /// (`podium_snapshot_pending 0` in `/metrics`).
    pub fn settle(&self) -> Result<()> {
        wait_settled("podium", "snapshotting", || {
            let text = http_get(self.http, "/metrics")?;
            Ok(text.lines().any(|l| l == "podium_snapshot_pending 0"))
        })
    }

    /// The server's used memory (`podium_used_memory_bytes` in
    /// `/metrics`: what its allocations hold, counted as they are made),
    /// `None` from a server that does not count it.
    pub fn used_memory(&self) -> Option<f64> {
        let text = http_get(self.http, "/metrics").ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("podium_used_memory_bytes "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|&v| v > 0.0)
    }

    /// Waits until no HTTP connection is open but the one asking:
    /// thousands of an earlier run's subscribers, closing, would still
    /// hold their descriptors when the next run connects its own, past the
    /// server's open-file limit.
    pub fn quiet(&self) -> Result<()> {
        wait_settled("podium", "closing HTTP connections", || {
            let text = http_get(self.http, "/metrics")?;
            let open = text
                .lines()
                .find_map(|l| l.strip_prefix("podium_connections{protocol=\"http\"} "))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0);
            Ok(open <= 1.0)
        })
    }
}

/// The body of `GET path` over a plain HTTP/1.1 connection.
fn http_get(addr: SocketAddr, path: &str) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP answer from {addr}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("GET {path}: {}", head.lines().next().unwrap_or(head));
    }
    Ok(body.to_string())
}

impl Drop for PodiumServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-server` on a free port with a temporary directory, no RDB
/// snapshots, and an append-only file flushed per `fsync`. Killed when
/// dropped.
pub struct RedisServer {
    child: Child,
    _dir: tempfile::TempDir,
    pub addr: SocketAddr,
    pub version: String,
}

/// `name` itself when it holds a `/`, else the first match in `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl RedisServer {
    /// `Ok(None)` when `redis-server` is not installed.
    pub fn start(program: &str, fsync: Fsync) -> Result<Option<RedisServer>> {
        let Some(bin) = find_program(program) else {
            return Ok(None);
        };
        let dir = tempfile::Builder::new()
            .prefix("podium-bench-redis-")
            .tempdir()?;
        let port = free_port()?;
        let log = dir.path().join("redis.log");
        let mut cmd = Command::new(&bin);
        die_with_parent(&mut cmd);
        let mut child = cmd
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "yes"])
            .args(["--appendfsync", fsync.as_str()])
            .arg("--dir")
            .arg(dir.path())
            .arg("--logfile")
            .arg(&log)
            .args(["--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + START_TIMEOUT;
        let version = loop {
            if let Some(st) = child.try_wait()? {
                bail!(
                    "redis-server exited ({st}):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            if let Ok(v) = redis_version(addr) {
                break v;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("redis-server did not answer within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(Some(RedisServer {
            child,
            _dir: dir,
            addr,
            version,
        }))
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until no AOF rewrite runs or is scheduled (`INFO persistence`).
    pub fn settle(&self) -> Result<()> {
        wait_settled("redis-server", "rewriting its log", || {
            let info = redis_info(self.addr, "persistence")?;
            let zero = |k: &str| info.lines().any(|l| l.trim() == format!("{k}:0"));
            Ok(zero("aof_rewrite_in_progress") && zero("aof_rewrite_scheduled"))
        })
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `INFO server`'s `redis_version`, over a plain socket.
fn redis_version(addr: SocketAddr) -> Result<String> {
    redis_info(addr, "server")?
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| anyhow!("no redis_version in INFO"))
}

/// `INFO section`'s text, over a plain socket.
fn redis_info(addr: SocketAddr, section: &str) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(s, "*2\r\n$4\r\nINFO\r\n${}\r\n{section}\r\n", section.len())?;
    // One bulk string: `$LEN\r\n` then LEN bytes and `\r\n`.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") {
            if buf[0] != b'$' {
                bail!("{}", String::from_utf8_lossy(&buf[..eol]));
            }
            let len: usize = std::str::from_utf8(&buf[1..eol])?.parse()?;
            if buf.len() >= eol + 2 + len {
                return Ok(String::from_utf8_lossy(&buf[eol + 2..eol + 2 + len]).into_owned());
            }
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            bail!("redis closed the connection");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Starts Redis when asked and installed; says so either way.
pub fn maybe_redis(opts: &NetOptions, out: &mut dyn Write) -> Result<Option<RedisServer>> {
    if !opts.redis {
        writeln!(out, "Redis: skipped (--no-redis)")?;
        return Ok(None);
    }
    match RedisServer::start(&opts.redis_server, opts.fsync)? {
        Some(r) => {
            writeln!(
                out,
                "Redis {} on {} (appendonly yes, appendfsync {}, no RDB snapshots)",
                r.version, r.addr, opts.fsync
            )?;
            Ok(Some(r))
        }
        None => {
            writeln!(
                out,
                "Redis: {} not found in PATH, the Redis column stays empty",
                opts.redis_server
            )?;
            Ok(None)
        }
    }
}

/// A tokio runtime for the clients: `threads` workers (0 = one thread,
/// the caller's).
pub fn runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    let rt = if threads == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    };
    Ok(rt)
}

/// CPU time (user + system, all threads) a process has used so far, from
/// `/proc/PID/stat`; `pid` `None`: this process. `None` where there is no
/// such file (not Linux).
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // fields from the last `)`. utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: f64 = f.next()?.parse().ok()?;
    let stime: f64 = f.next()?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) / ticks as f64)
}

// ------------------------------------------------------------- workload

/// Member id `m{i}` written into `buf`, without allocating (the same ids
/// as the engine scenario's [`crate::engine::member_id`]).
pub fn member_id(i: u64, buf: &mut [u8; 24]) -> &[u8] {
    let mut pos = buf.len();
    let mut v = i;
    loop {
        pos -= 1;
        buf[pos] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    pos -= 1;
    buf[pos] = b'm';
    &buf[pos..]
}

/// Up to `depth` futures in flight: push one, and once `depth` are
/// pending the oldest is awaited first (requests of equal work are
/// answered about in order).
pub struct Window<F: Future> {
    depth: usize,
    q: VecDeque<F>,
}

impl<F: Future> Window<F> {
    pub fn new(depth: usize) -> Window<F> {
        Window {
            depth: depth.max(1),
            q: VecDeque::new(),
        }
    }

    /// Queues `f`; returns the oldest's output when the window was full.
    pub async fn push(&mut self, f: F) -> Option<F::Output> {
        self.q.push_back(f);
        if self.q.len() > self.depth {
            let oldest = self.q.pop_front().expect("not empty");
            return Some(oldest.await);
        }
        None
    }

    /// Awaits the rest, oldest first.
    pub async fn drain(&mut self) -> Vec<F::Output> {
        let mut out = Vec::with_capacity(self.q.len());
        while let Some(f) = self.q.pop_front() {
            out.push(f.await);
        }
        out
    }
}

/// What one load-generating client saw: answers, errors (the first one
/// kept to print) and the latency of each answer.
#[derive(Default)]
pub struct Tally {
    pub ok: u64,
    pub errors: u64,
    pub lat: Latencies,
    pub first_error: Option<String>,
}

impl Tally {
    pub fn error(&mut self, e: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }

    /// Adds another client's tally (its first error only if none yet).
    pub fn merge(&mut self, other: Tally) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.lat.extend(other.lat);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// Latencies in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct Latencies(pub Vec<u64>);

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.0.push(d.as_nanos() as u64);
    }

    pub fn extend(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorts (once) so percentiles can be read.
    pub fn summary(mut self) -> Summary {
        self.0.sort_unstable();
        let n = self.0.len();
        let at = |q: f64| -> f64 {
            if n == 0 {
                return f64::NAN;
            }
            // Nearest rank.
            let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
            self.0[k] as f64
        };
        Summary {
            count: n,
            mean_ns: if n == 0 {
                f64::NAN
            } else {
                self.0.iter().map(|&v| v as f64).sum::<f64>() / n as f64
            },
            p50_ns: at(0.50),
            p90_ns: at(0.90),
            p99_ns: at(0.99),
            max_ns: self.0.last().map_or(f64::NAN, |&v| v as f64),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub count: usize,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
}

// ------------------------------------------------------------- progress

pub fn bar(progress: bool, len: u64, what: &str) -> ProgressBar {
    let target = if progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let pb = ProgressBar::with_draw_target(Some(len), target);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{what:>24} [{{bar:30}}] {{human_pos}}/{{human_len}} {{per_sec:>14}} eta {{eta}}"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb
}

// ------------------------------------------------------------- reporting

/// One figure of a network scenario.
pub struct Figure {
    /// JSON key (snake_case).
    pub key: String,
    /// Table label.
    pub label: String,
    pub unit: &'static str,
    pub podium: Option<f64>,
    pub redis: Option<f64>,
    pub better: Better,
    /// Where the ratio makes no sense (error counts): no ratio.
    pub compare: bool,
    pub members: Option<u64>,
    /// A reference figure measured in process, shown beside the two.
    pub baseline: Option<(f64, &'static str)>,
}

impl Figure {
    pub fn new(
        key: impl Into<String>,
        label: impl Into<String>,
        unit: &'static str,
        podium: f64,
        redis: Option<f64>,
        better: Better,
    ) -> Figure {
        Figure {
            key: key.into(),
            label: label.into(),
            unit,
            podium: Some(podium),
            redis,
            better,
            compare: true,
            members: None,
            baseline: None,
        }
    }

    pub fn members(mut self, n: u64) -> Figure {
        self.members = Some(n);
        self
    }

    pub fn no_ratio(mut self) -> Figure {
        self.compare = false;
        self
    }

    pub fn baseline(mut self, v: f64, name: &'static str) -> Figure {
        self.baseline = Some((v, name));
        self
    }

    fn ratio(&self) -> Option<f64> {
        if self.compare {
            report::ratio(self.podium, self.redis, self.better)
        } else {
            None
        }
    }

    pub fn record(&self, scenario: &'static str) -> Record {
        Record {
            scenario,
            figure: self.key.clone(),
            unit: self.unit.into(),
            podium: self.podium,
            redis: self.redis,
            baseline: self.baseline.map(|b| b.0),
            baseline_name: self.baseline.map(|b| b.1.to_string()),
            ratio: self.ratio(),
            members: self.members,
        }
    }
}

/// Prints the figures as a table (with a column for the in-process
/// reference when any figure has one) and returns their records.
pub fn report(
    scenario: &'static str,
    figures: &[Figure],
    redis_ran: bool,
    redis_label: &str,
    out: &mut dyn Write,
) -> Result<Vec<Record>> {
    let with_baseline = figures.iter().any(|f| f.baseline.is_some());
    let mut header = vec![
        "figure".to_string(),
        "unit".into(),
        "podium".into(),
        redis_label.to_string(),
        "podium/redis".into(),
    ];
    if with_baseline {
        header.push(
            figures
                .iter()
                .find_map(|f| f.baseline.map(|b| b.1.to_string()))
                .unwrap_or_default(),
        );
    }
    let mut t = Table::new(header);
    for f in figures {
        let redis = if redis_ran {
            report::num(f.redis)
        } else {
            "–".to_string()
        };
        let mut row = vec![
            f.label.clone(),
            f.unit.to_string(),
            report::num(f.podium),
            redis,
            if f.compare {
                report::ratio_cell(f.ratio())
            } else {
                String::new()
            },
        ];
        if with_baseline {
            row.push(f.baseline.map_or(String::new(), |b| report::num(Some(b.0))));
        }
        t.row(row);
    }
    write!(out, "{}", t.render())?;
    out.flush()?;
    Ok(figures.iter().map(|f| f.record(scenario)).collect())
}

/// "met" / "NOT met" for a goal line.
pub fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_match_the_engine_scenarios() {
        let mut buf = [0u8; 24];
        let mut s = String::new();
        for i in [0u64, 7, 10, 99, 1234567, u64::MAX] {
            crate::engine::member_id(&mut s, i);
            assert_eq!(member_id(i, &mut buf), s.as_bytes());
        }
    }

    #[test]
    fn percentiles() {
        let l = Latencies((1..=100).rev().collect());
        let s = l.summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.p50_ns, 50.0);
        assert_eq!(s.p90_ns, 90.0);
        assert_eq!(s.p99_ns, 99.0);
        assert_eq!(s.max_ns, 100.0);
        assert_eq!(s.mean_ns, 50.5);
    }

    #[test]
    fn window_keeps_depth_in_flight() {
        let rt = runtime(0).unwrap();
        rt.block_on(async {
            let mut w = Window::new(3);
            let mut done = Vec::new();
            for i in 0..10 {
                if let Some(v) = w.push(async move { i }).await {
                    done.push(v);
                }
            }
            assert_eq!(done, (0..7).collect::<Vec<_>>());
            assert_eq!(w.drain().await, vec![7, 8, 9]);
        });
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let Some(before) = cpu_seconds(None) else {
            return; // no /proc: nothing to read
        };
        // Busy for about 50 ms of CPU (well over one 10 ms clock tick).
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = cpu_seconds(None).expect("read once, readable again");
        assert!(after > before, "{before} -> {after}");
        assert!(cpu_seconds(Some(std::process::id())).is_some());
    }

    #[test]
    fn fsync_names() {
        assert_eq!("always".parse::<Fsync>().unwrap(), Fsync::Always);
        assert!("sometimes".parse::<Fsync>().is_err());
    }
}
