//! `podium serve` with only its Redis-protocol listener on, on a fresh
//! data directory, killed when dropped.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};

use crate::support::{launch, serve_command, START_TIMEOUT};

const RESP_LISTENING: &str = "podium: resp listening on ";

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
        let cmd = serve_command(
            &self.data_dir,
            &["--http", "off", "--rpc", "off", "--resp", "127.0.0.1:0"],
            &self.extra,
        );
        let l = launch::launch(cmd, &self.stderr_path(), RESP_LISTENING, START_TIMEOUT);
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
