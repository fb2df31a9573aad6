//! Starting `podium serve` and waiting for its listening line, shared by
//! the HTTP helpers (`common`) and the Redis-protocol helpers (`resp`).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A started server: the process, the address from its listening line and
/// everything it has printed on stdout so far.
pub struct Launched {
    pub child: Child,
    pub addr: String,
    pub stdout: Arc<Mutex<String>>,
}

/// Spawns `cmd` with stderr to `stderr_path`, reads its stdout to the end on
/// a thread (so the child never blocks on a full pipe) and returns once a
/// line starts with `prefix`. Panics with everything the process printed
/// if it exits first or does not get there within `timeout`.
pub fn launch(
    mut cmd: Command,
    stderr_path: &Path,
    prefix: &'static str,
    timeout: Duration,
) -> Launched {
    let stderr = File::create(stderr_path).expect("creating the stderr log");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawning podium serve");
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = Arc::new(Mutex::new(String::new()));
    let buf = stdout.clone();
    thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            {
                let mut b = buf.lock().unwrap();
                b.push_str(&line);
                b.push('\n');
            }
            if let Some(addr) = line.strip_prefix(prefix) {
                let _ = tx.send(addr.trim().to_string());
            }
        }
    });
    let printed = |stdout: &Arc<Mutex<String>>| {
        format!(
            "{}\n{}",
            stdout.lock().unwrap(),
            std::fs::read_to_string(stderr_path).unwrap_or_default()
        )
    };
    let deadline = Instant::now() + timeout;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(addr) => {
                return Launched {
                    child,
                    addr,
                    stdout,
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed without the line: the process ended.
                let status = child.wait().ok();
                panic!(
                    "podium serve exited ({status:?}) before printing `{prefix}…`:\n{}",
                    printed(&stdout)
                );
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            // Give the reader a moment to pass on a line printed just
            // before the exit.
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(200)) {
                return Launched {
                    child,
                    addr,
                    stdout,
                };
            }
            panic!(
                "podium serve exited ({status}) before printing `{prefix}…`:\n{}",
                printed(&stdout)
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "podium serve did not print `{prefix}…` within {timeout:?}:\n{}",
                printed(&stdout)
            );
        }
    }
}
