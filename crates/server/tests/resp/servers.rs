//! The two servers the Redis-protocol tests talk to: a real `redis-server`
//! (Debian's 7.0) on a free port, and `podium serve` with only its RESP
//! listener on, each killed when dropped.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::wire::{cmd, Conn};

/// How long a server may take to start.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

const RESP_LISTENING: &str = "podium: resp listening on ";

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

/// A port that was free a moment ago (bound to port 0, then released).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    l.local_addr().unwrap().port()
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

/// `podium serve` with only the Redis-protocol listener, on port 0 of
/// 127.0.0.1, `--fsync always`, on a fresh data directory.
pub struct Podium {
    child: Option<Child>,
    tmp: tempfile::TempDir,
    data_dir: PathBuf,
    extra: Vec<String>,
    addr: String,
    starts: u32,
    stdout: Arc<Mutex<String>>,
}

impl Podium {
    /// Starts podium with the base flags plus `extra`, waiting for the
    /// line `podium: resp listening on 127.0.0.1:PORT`.
    pub fn start(extra: &[&str]) -> Podium {
        let tmp = tempfile::Builder::new()
            .prefix("podium-resp-")
            .tempdir()
            .expect("temp dir");
        let data_dir = tmp.path().join("data");
        let mut p = Podium {
            child: None,
            tmp,
            data_dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            addr: String::new(),
            starts: 0,
            stdout: Arc::new(Mutex::new(String::new())),
        };
        p.spawn();
        p
    }

    /// `127.0.0.1:PORT` of the RESP listener.
    pub fn addr(&self) -> String {
        self.addr.clone()
    }

    pub fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port in the listening address")
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn stderr_path(&self) -> PathBuf {
        self.tmp.path().join(format!("stderr-{}.log", self.starts))
    }

    /// What the current or last run printed: stdout, then stderr.
    pub fn output(&self) -> String {
        format!(
            "{}\n{}",
            self.stdout.lock().unwrap(),
            std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
        )
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => c.try_wait().expect("try_wait").is_none(),
            None => false,
        }
    }

    /// Kills the process (SIGKILL) and starts it again on the same data
    /// directory; the port changes.
    pub fn restart(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.spawn();
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_podium"));
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--http", "off", "--rpc", "off", "--resp", "127.0.0.1:0"])
            .args(["--fsync", "always"])
            .args(&self.extra)
            .env_remove("PODIUM_CONFIG")
            .env_remove("PODIUM_API_KEYS")
            .env_remove("PODIUM_LOG_LEVEL")
            .env("NO_COLOR", "1");
        let l = super::launch::launch(cmd, &self.stderr_path(), RESP_LISTENING, START_TIMEOUT);
        self.child = Some(l.child);
        self.addr = l.addr;
        self.stdout = l.stdout;
    }
}

impl Drop for Podium {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
