//! Redis processes for the tests of the Redis backend: a single
//! redis-server or a 3-master Redis Cluster (`redis-server
//! --cluster-enabled yes` ×3 + `redis-cli --cluster create`) on free
//! loopback ports, each node in a temp dir of its own, optionally with
//! `--appendonly yes --appendfsync always`. A node can be killed (SIGKILL)
//! and started again on the same port and dir. Every process is killed
//! when its [`RedisNode`] drops, pass or fail.
//!
//! Also [`RedisServer`], the plain redis-server (no persistence) the
//! Redis-protocol tests compare podium with.
//!
//! redis-server and redis-cli must be installed (`scripts/test.sh`
//! installs them); without them the tests fail and say so.

use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::resp::wire::{cmd, Conn};
use super::START_TIMEOUT;

/// How long a test waits for Redis before failing (not hanging).
pub const REDIS_WAIT: Duration = Duration::from_secs(60);

/// A free loopback port whose cluster bus port (+10000) is free too.
pub fn free_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let p = l.local_addr().unwrap().port();
        if p < 55000 && TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

/// `redis-cli -p PORT ARGS…`'s stdout ("" when it cannot run).
pub fn cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

pub fn answers_ping(port: u16) -> bool {
    cli(port, &["PING"]).contains("PONG")
}

/// Polls `ok` every 50 ms, blocking the thread; panics after
/// [`REDIS_WAIT`].
pub fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < REDIS_WAIT, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`wait_until`] for async tests: sleeps on the runtime, not the thread.
pub async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < REDIS_WAIT, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How a node runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeOpts {
    pub cluster: bool,
    /// `--appendonly yes --appendfsync always`: an acknowledged write is
    /// on disk, and survives a SIGKILL.
    pub aof: bool,
}

/// One redis-server, killed on drop.
pub struct RedisNode {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
    opts: NodeOpts,
}

impl RedisNode {
    /// Starts a node on a free port and waits until it answers.
    pub fn start(opts: NodeOpts) -> RedisNode {
        let mut n = RedisNode {
            child: None,
            port: free_port(),
            dir: tempfile::Builder::new()
                .prefix("podium-redis-")
                .tempdir()
                .unwrap(),
            opts,
        };
        n.spawn();
        let port = n.port;
        wait_until("redis-server up", || answers_ping(port));
        n
    }

    /// Starts the process (again, after [`RedisNode::kill`]) on the same
    /// port and dir, without waiting: the caller waits as suits it
    /// ([`answers_ping`] with [`wait_until`] or [`wait_for`]).
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "redis-server already running");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path());
        if self.opts.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if self.opts.cluster {
            cmd.args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (scripts/test.sh installs it)");
        self.child = Some(child);
    }

    /// SIGKILL: no shutdown, no final AOF flush.
    pub fn kill(&mut self) {
        let mut c = self.child.take().expect("redis-server not running");
        c.kill().unwrap();
        c.wait().unwrap();
    }

    pub fn answers_ping(&self) -> bool {
        answers_ping(self.port)
    }
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A single Redis or a cluster.
pub struct Redis {
    pub nodes: Vec<RedisNode>,
}

impl Redis {
    pub fn single(aof: bool) -> Redis {
        Redis {
            nodes: vec![RedisNode::start(NodeOpts {
                cluster: false,
                aof,
            })],
        }
    }

    /// Three masters, no replicas, slots spread evenly; returns once every
    /// node reports `cluster_state:ok`.
    pub fn cluster(aof: bool) -> Redis {
        let nodes = (0..3)
            .map(|_| RedisNode::start(NodeOpts { cluster: true, aof }))
            .collect();
        let r = Redis { nodes };
        let hosts = r.hosts();
        let mut args = vec!["--cluster", "create"];
        args.extend(hosts.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = cli(r.nodes[0].port, &args);
        assert!(out.contains("[OK]"), "cluster create failed:\n{out}");
        wait_until("cluster state ok", || r.cluster_ok());
        r
    }

    /// `127.0.0.1:PORT` of every node.
    pub fn hosts(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect()
    }

    /// Every node says `cluster_state:ok`.
    pub fn cluster_ok(&self) -> bool {
        self.nodes
            .iter()
            .all(|n| cli(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    }

    /// `redis://…` for one node, `redis+cluster://h1,h2,h3` for a cluster.
    pub fn url(&self) -> String {
        if self.nodes.len() == 1 {
            format!("redis://127.0.0.1:{}", self.nodes[0].port)
        } else {
            format!("redis+cluster://{}", self.hosts().join(","))
        }
    }
}

/// What to do when a Redis tool is missing.
pub const INSTALL_HINT: &str = "run scripts/test.sh, which installs redis-server, redis-tools \
     (redis-cli) and redis-py when they are missing (or: apt-get install -y redis-server \
     redis-tools && python3 -m pip install 'redis>=5')";

/// Whether `program --version` runs.
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Panics, telling how to install it, unless `program` is on the PATH.
#[track_caller]
pub fn require(program: &str) {
    assert!(
        have(program),
        "`{program}` is not installed, and the Redis-protocol tests need it: {INSTALL_HINT}"
    );
}

/// Waits until `addr` answers PING with +PONG.
fn wait_for_pong(addr: &str, child: &mut Child, deadline: Instant) -> Result<(), String> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited ({status}) before answering PING"));
        }
        if let Ok(mut c) = Conn::connect(addr) {
            if let Ok(r) = c.request(&cmd("PING")) {
                if r == b"+PONG\r\n" {
                    return Ok(());
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!("did not answer PING within {START_TIMEOUT:?}"));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A real `redis-server` on 127.0.0.1, no persistence.
pub struct RedisServer {
    child: Child,
    port: u16,
    tmp: tempfile::TempDir,
}

impl RedisServer {
    /// Starts `redis-server` on a free port and waits until it answers
    /// PING. Panics (telling how to install it) when it is not installed.
    pub fn start() -> RedisServer {
        require("redis-server");
        let tmp = tempfile::Builder::new()
            .prefix("podium-redis-")
            .tempdir()
            .expect("temp dir");
        let mut last_err = String::new();
        // The port may be taken between free_port() and the bind: retry.
        for attempt in 0..5 {
            let port = free_port();
            let log = tmp.path().join(format!("redis-{attempt}.log"));
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string()])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--bind", "127.0.0.1"])
                .args(["--daemonize", "no"])
                .arg("--dir")
                .arg(tmp.path())
                .stdin(Stdio::null())
                .stdout(Stdio::from(File::create(&log).unwrap()))
                .stderr(Stdio::from(
                    File::create(log.with_extension("err")).unwrap(),
                ))
                .spawn()
                .expect("spawning redis-server");
            let addr = format!("127.0.0.1:{port}");
            match wait_for_pong(&addr, &mut child, Instant::now() + START_TIMEOUT) {
                Ok(()) => return RedisServer { child, port, tmp },
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_err =
                        format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default());
                }
            }
        }
        panic!("redis-server did not start: {last_err}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The directory redis-server runs in.
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The version redis-server reports (`7.0.15`).
    pub fn version(&self) -> String {
        let info = Conn::open(&self.addr()).call_str("INFO server");
        let text = info.text().unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("?")
            .trim()
            .to_string()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
