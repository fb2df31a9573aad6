//! The shared support of podium-server's integration tests, by topic:
//! starting `podium serve` and waiting for its listening lines
//! ([`launch`]); the server behind its HTTP API with an HTTP client
//! ([`http`]), behind MessagePack-RPC and HTTP ([`rpc`]) and behind the
//! Redis protocol with a raw RESP client and the differential harness
//! ([`resp`]); redis-server processes, single or a 3-master cluster
//! ([`redis`]); `podium bench` at smoke scale ([`bench`]). Here: the
//! binary under test, its serve command line and the one-shot runs of it.
//!
//! The integration binary declares `mod support;`; each test module
//! uses the parts it needs (`use crate::support;`).

#![allow(dead_code)] // without `external`, the modules using some parts are left out

pub mod bench;
pub mod http;
pub mod launch;
pub mod redis;
pub mod resp;
pub mod rpc;
pub mod sse;

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to start before the test fails.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one run of a client command may take.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The `podium` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_podium")
}

/// `podium serve` on `data_dir` with `--fsync always`, the listeners given
/// (`["--http", "127.0.0.1:0", "--rpc", "off", …]`) and then `extra`; its
/// settings come from the flags alone, whatever the environment holds.
pub fn serve_command(data_dir: &Path, listeners: &[&str], extra: &[String]) -> Command {
    let mut c = Command::new(bin());
    c.arg("serve")
        .arg("--data-dir")
        .arg(data_dir)
        .args(listeners)
        .args(["--fsync", "always"])
        .args(extra)
        .env_remove("PODIUM_CONFIG")
        .env_remove("PODIUM_API_KEYS")
        .env_remove("PODIUM_API_KEY_FILE")
        .env_remove("PODIUM_LOG_LEVEL")
        .env_remove("PODIUM_LOG_FORMAT")
        .env_remove("PODIUM_ACCESS_LOG")
        .env("NO_COLOR", "1");
    c
}

/// Runs `podium ARGS` to its end (at most [`RUN_TIMEOUT`]) and returns its
/// exit status and everything it printed (stdout, then stderr). The
/// client's server and key come from the arguments alone.
pub fn run_to_end(args: &[&str]) -> (ExitStatus, String) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out_path = tmp.path().join("out.log");
    let err_path = tmp.path().join("err.log");
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("PODIUM_CONFIG")
        .env_remove("PODIUM_API_KEYS")
        .env_remove("PODIUM_API_KEY")
        .env_remove("PODIUM_SERVER")
        .env_remove("PODIUM_RPC_SERVER")
        .env_remove("PODIUM_URL")
        .env_remove("PODIUM_RPC_ADDR")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(File::create(&out_path).unwrap()))
        .stderr(Stdio::from(File::create(&err_path).unwrap()))
        .spawn()
        .expect("spawning podium");
    let printed = || {
        format!(
            "{}{}",
            std::fs::read_to_string(&out_path).unwrap_or_default(),
            std::fs::read_to_string(&err_path).unwrap_or_default()
        )
    };
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "podium {args:?} still running after {RUN_TIMEOUT:?}:\n{}",
                printed()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status, printed())
}
