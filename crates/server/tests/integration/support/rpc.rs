//! A real `podium serve` with its MessagePack-RPC and HTTP listeners on free
//! ports, on a fresh data directory; killed when dropped. The RPC clients
//! are the tests' own (a raw one, or `podium-client`).

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};

use super::{launch, serve_command, START_TIMEOUT};

const RPC_LISTENING: &str = "podium: rpc listening on ";
const HTTP_LISTENING: &str = "podium: http listening on ";

pub struct Podium {
    child: Option<Child>,
    tmp: tempfile::TempDir,
    extra: Vec<String>,
    env: Vec<(String, String)>,
    /// `127.0.0.1:PORT` of the MessagePack-RPC listener.
    pub rpc: String,
    /// `http://127.0.0.1:PORT`.
    pub http: String,
    starts: u32,
    stdout: Arc<Mutex<String>>,
}

impl Podium {
    /// Starts podium with the base flags plus `extra`.
    pub fn start(extra: &[&str]) -> Podium {
        Self::start_with_env(extra, &[])
    }

    /// [`Podium::start`] with `env` set for the server process.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Podium {
        let tmp = tempfile::Builder::new()
            .prefix("podium-rpc-")
            .tempdir()
            .expect("temp dir");
        let mut p = Podium {
            child: None,
            tmp,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            rpc: String::new(),
            http: String::new(),
            starts: 0,
            stdout: Arc::new(Mutex::new(String::new())),
        };
        p.spawn();
        p
    }

    pub fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    fn stderr_path(&self) -> PathBuf {
        self.tmp.path().join(format!("stderr-{}.log", self.starts))
    }

    /// Starts the process (again, after [`Podium::kill9`]) on the same data
    /// directory and flags; the ports change.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "podium already running");
        self.starts += 1;
        let mut cmd = serve_command(
            &self.data_dir(),
            &[
                "--http",
                "127.0.0.1:0",
                "--rpc",
                "127.0.0.1:0",
                "--resp",
                "off",
            ],
            &self.extra,
        );
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let l = launch::launch(cmd, &self.stderr_path(), RPC_LISTENING, START_TIMEOUT);
        self.child = Some(l.child);
        self.rpc = l.addr;
        // The HTTP line is printed before the RPC one.
        let out = l.stdout.lock().unwrap().clone();
        let http = out
            .lines()
            .find_map(|l| l.strip_prefix(HTTP_LISTENING))
            .expect("the HTTP listening line")
            .trim()
            .to_string();
        self.http = format!("http://{http}");
        self.stdout = l.stdout;
    }

    /// The process id of the current run.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("podium not running").id()
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

    /// `kill -9`: the process dies at once, whatever it was doing.
    pub fn kill9(&mut self) {
        let mut c = self.child.take().expect("running");
        c.kill().expect("SIGKILL");
        c.wait().expect("reaping");
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
