//! A real `podium serve` process with only its HTTP listener, on a
//! temporary data directory, and the HTTP client the tests drive it with.
//!
//! [`Server::start`] runs the binary Cargo built for this package
//! (`CARGO_BIN_EXE_podium`) with `--http 127.0.0.1:0` and waits for the
//! line `podium: http listening on 127.0.0.1:PORT` on its stdout, which
//! tells the port. Its stderr (the tracing log) goes to a file per start,
//! so a test can look for a log line after the fact. The data directory
//! outlives the process: [`Server::kill9`] / [`Server::terminate`] stop it,
//! and [`Server::restart`] starts it again on the same directory with the
//! same flags.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::Value;

use super::{launch, serve_command, START_TIMEOUT};

/// How long a graceful shutdown may take.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);

const LISTENING: &str = "podium: http listening on ";

/// A blocking HTTP client with a generous timeout (a test must fail, not
/// hang, when the server stops answering).
pub fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("building the HTTP client")
}

/// One path segment, percent-encoded (every byte but ASCII letters and
/// digits), so ids holding `/`, spaces, `%` or non-ASCII stay one segment.
pub fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// A response as the tests look at it: the status and the body, parsed as
/// JSON when it is JSON (`Value::Null` when empty, a string otherwise).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub content_type: String,
}

impl Resp {
    /// `error.code` of an error body, or "" when there is none.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// Panics unless the status is `status`, showing the body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status, status,
            "expected HTTP {status}, got {} with body {}",
            self.status, self.text
        );
        self.body
    }

    /// Panics unless this is an error with `status` and `code` in the
    /// docs/spec.md §4 shape `{"error": {"code", "message"}}`.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status, self.code()),
            (status, code),
            "expected HTTP {status} {code}, got {} with body {}",
            self.status,
            self.text
        );
        assert!(
            self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "error without a message: {}",
            self.text
        );
    }
}

/// Sends `req`, panicking on a transport error.
#[track_caller]
pub fn send(req: RequestBuilder) -> Resp {
    let r = req.send().expect("HTTP request failed");
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = r.text().expect("reading the response body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()))
    };
    Resp {
        status,
        body,
        text,
        content_type,
    }
}

/// A running (or stopped) `podium serve` on a temporary data directory.
pub struct Server {
    child: Option<Child>,
    /// Holds the data directory and the log files; removed on drop.
    tmp: tempfile::TempDir,
    data_dir: PathBuf,
    extra: Vec<String>,
    /// Environment variables the server is started with.
    env: Vec<(String, String)>,
    addr: String,
    starts: u32,
    stdout: Arc<Mutex<String>>,
    /// An HTTP client for the tests' requests.
    pub http: Client,
    /// The bearer token sent by [`Server::get`] and friends, if any.
    pub token: Option<String>,
}

impl Server {
    /// Starts `podium serve` on a fresh data directory with the base flags
    /// plus `extra`.
    pub fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("podium-it-")
            .tempdir()
            .expect("creating a temp dir");
        let data_dir = tmp.path().join("data");
        Server::spawned(tmp, data_dir, extra)
    }

    /// [`Server::start`] with environment variables `env` set.
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("podium-it-")
            .tempdir()
            .expect("creating a temp dir");
        let data_dir = tmp.path().join("data");
        let mut s = Server {
            child: None,
            tmp,
            data_dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            addr: String::new(),
            starts: 0,
            stdout: Arc::new(Mutex::new(String::new())),
            http: client(),
            token: None,
        };
        s.spawn();
        s
    }

    /// Starts `podium serve` on the existing data directory `data_dir`
    /// (kept when the server is dropped) with the base flags plus `extra`.
    pub fn start_on(data_dir: &Path, extra: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("podium-it-")
            .tempdir()
            .expect("creating a temp dir");
        Server::spawned(tmp, data_dir.to_path_buf(), extra)
    }

    fn spawned(tmp: tempfile::TempDir, data_dir: PathBuf, extra: &[&str]) -> Server {
        let mut s = Server {
            child: None,
            tmp,
            data_dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            addr: String::new(),
            starts: 0,
            stdout: Arc::new(Mutex::new(String::new())),
            http: client(),
            token: None,
        };
        s.spawn();
        s
    }

    /// The data directory (it survives kills and restarts).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// `127.0.0.1:PORT` of the current run.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The process id of the current run.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server not running").id()
    }

    fn stderr_path(&self, start: u32) -> PathBuf {
        self.tmp.path().join(format!("stderr-{start}.log"))
    }

    /// The stderr (tracing log) of the current or last run.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path(self.starts)).unwrap_or_default()
    }

    /// Everything the current or last run printed: stdout, then stderr.
    pub fn output(&self) -> String {
        format!("{}\n{}", self.stdout.lock().unwrap(), self.stderr())
    }

    fn command(&self) -> Command {
        let mut c = serve_command(
            &self.data_dir,
            &["--http", "127.0.0.1:0", "--rpc", "off", "--resp", "off"],
            &self.extra,
        );
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "server already running");
        self.starts += 1;
        let l = launch::launch(
            self.command(),
            &self.stderr_path(self.starts),
            LISTENING,
            START_TIMEOUT,
        );
        self.child = Some(l.child);
        self.addr = l.addr;
        self.stdout = l.stdout;
    }

    /// `kill -9`: the process dies at once, whatever it was doing.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("server not running");
        child.kill().expect("SIGKILL");
        child.wait().expect("reaping the killed server");
    }

    /// `kill -TERM` and wait for the exit (graceful shutdown). Returns the
    /// exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("server not running");
        let pid = libc::pid_t::try_from(child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on the pid of our own child, not yet reaped.
        let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill -TERM {pid} failed");
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().expect("waiting for the server") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "podium serve did not exit within {STOP_TIMEOUT:?} of SIGTERM:\n{}",
                    self.output()
                );
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same data directory and flags (after
    /// [`Server::kill9`] or [`Server::terminate`]). The port changes.
    pub fn restart(&mut self) {
        self.spawn();
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => c.try_wait().expect("try_wait").is_none(),
            None => false,
        }
    }

    fn auth(&self, r: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// A request builder for `method` on `path`, with the token if set.
    pub fn req(&self, method: reqwest::Method, path: &str) -> RequestBuilder {
        self.auth(self.http.request(method, self.url(path)))
    }

    #[track_caller]
    pub fn get(&self, path: &str) -> Resp {
        send(self.req(reqwest::Method::GET, path))
    }

    #[track_caller]
    pub fn delete(&self, path: &str) -> Resp {
        send(self.req(reqwest::Method::DELETE, path))
    }

    #[track_caller]
    pub fn post(&self, path: &str, body: &Value) -> Resp {
        send(self.req(reqwest::Method::POST, path).json(body))
    }

    #[track_caller]
    pub fn put(&self, path: &str, body: &Value) -> Resp {
        send(self.req(reqwest::Method::PUT, path).json(body))
    }

    #[track_caller]
    pub fn patch(&self, path: &str, body: &Value) -> Resp {
        send(self.req(reqwest::Method::PATCH, path).json(body))
    }

    /// POST of a raw body with a content type.
    #[track_caller]
    pub fn post_raw(&self, path: &str, content_type: &str, body: impl Into<Vec<u8>>) -> Resp {
        send(
            self.req(reqwest::Method::POST, path)
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(body.into()),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The path of a board: `/v1/boards/{board}` + `rest`, the name encoded.
pub fn board_path(board: &str, rest: &str) -> String {
    format!("/v1/boards/{}{}", enc(board), rest)
}
