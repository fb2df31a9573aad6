//! Fault test of the Redis backend (issue 7): under a steady load of
//! writes through the `Backend` trait, the Redis holding the data is killed
//! (SIGKILL) and restarted on the same port and data dir. While it is down
//! every call fails with 503 `storage_unavailable`; once it is back the
//! same backend object serves again by itself; and every write that was
//! acknowledged, before the kill or after the restart, is there with its
//! value (Redis runs with `--appendonly yes --appendfsync always`, so an
//! acknowledged script run is on disk before its reply).
//!
//! The test starts its own redis-server on a free loopback port in a temp
//! dir and kills it when done, pass or fail.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use podium_server::api::SubmitIn;
use podium_server::backend::{Backend, RedisBackend};
use podium_server::error::Code;

/// A redis-server killed on drop.
struct Redis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(dir: &Path, port: u16) -> Child {
    Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--daemonize", "no"])
        .args(["--appendonly", "yes", "--appendfsync", "always"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (scripts/test.sh installs it)")
}

fn answers_ping(port: u16) -> bool {
    Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "PING"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("PONG"))
        .unwrap_or(false)
}

/// Waits for `ok`; the deadline only keeps a broken run from hanging.
async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Redis {
    async fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = spawn(dir.path(), port);
        let r = Redis { child, port, dir };
        wait_for("redis-server up", || answers_ping(port)).await;
        r
    }

    fn kill(&mut self) {
        // Child::kill is SIGKILL: no shutdown, no final AOF flush.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    async fn restart(&mut self) {
        self.child = spawn(self.dir.path(), self.port);
        let port = self.port;
        wait_for("redis-server back", || answers_ping(port)).await;
    }
}

/// What the writers saw: acknowledged member → score, and how many calls
/// failed (each with 503; anything else fails the test at once).
#[derive(Default)]
struct Seen {
    acked: Mutex<HashMap<String, f64>>,
    acks: AtomicUsize,
    failures: AtomicUsize,
}

const BOARD: &str = "load";

/// One writer: single submits of its own members, and every tenth call a
/// batch of ten, each with a distinct score so a stale value shows.
async fn writer(id: usize, b: Arc<RedisBackend>, seen: Arc<Seen>, stop: Arc<AtomicBool>) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let entries: Vec<SubmitIn> = if i % 10 == 0 {
            (0..10)
                .map(|k| SubmitIn::new(&format!("w{id}-{i}-{k}"), (i * 10 + k) as f64))
                .collect()
        } else {
            vec![SubmitIn::new(&format!("w{id}-{i}"), i as f64)]
        };
        match b.submit(BOARD, &entries).await {
            Ok(items) => {
                assert_eq!(items.len(), entries.len());
                let mut acked = seen.acked.lock().unwrap();
                for e in &entries {
                    acked.insert(e.member.clone(), e.score.0);
                }
                seen.acks.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                assert_eq!(e.code, Code::StorageUnavailable, "writer {id}: {e}");
                assert_eq!(e.code.status(), 503);
                seen.failures.fetch_add(1, Ordering::Relaxed);
                // No busy loop against a dead server.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_killed_redis_and_the_backend_recovers() {
    let mut redis = Redis::start().await;
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let b = Arc::new(RedisBackend::connect(&url).await.unwrap());
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|id| tokio::spawn(writer(id, b.clone(), seen.clone(), stop.clone())))
        .collect();

    // Steady load first.
    wait_for("acknowledged writes before the kill", || {
        seen.acks.load(Ordering::Relaxed) >= 300
    })
    .await;
    let before_kill = seen.acked.lock().unwrap().len();
    redis.kill();

    // Down: every call is a 503, reads and writes alike.
    let e = b.top(BOARD, None, None, false).await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let e = b.ping().await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let e = b.search(BOARD, "w1", 10, 0, false).await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let failures = seen.failures.load(Ordering::Relaxed);
    wait_for("writers failing while redis is down", || {
        seen.failures.load(Ordering::Relaxed) >= failures + 20
    })
    .await;

    // Back on the same port and data dir: the same backend object serves
    // again, with no reconnect call from anyone.
    redis.restart().await;
    let acks = seen.acks.load(Ordering::Relaxed);
    wait_for("acknowledged writes after the restart", || {
        seen.acks.load(Ordering::Relaxed) >= acks + 300
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }

    // Every acknowledged write is there with its value (writes that got a
    // 503 may or may not have been applied; they are not checked).
    let acked = seen.acked.lock().unwrap().clone();
    let mut stored: HashMap<String, f64> = HashMap::new();
    let mut pos = 0;
    loop {
        let chunk = b.export_chunk(BOARD, pos, 10_000).await.unwrap();
        if chunk.is_empty() {
            break;
        }
        pos += chunk.len();
        stored.extend(chunk.into_iter().map(|l| (l.member, l.score.0)));
    }
    let missing: Vec<&String> = acked
        .iter()
        .filter(|(m, x)| stored.get(*m) != Some(x))
        .map(|(m, _)| m)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged writes lost or changed, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    eprintln!(
        "{} acknowledged members ({} before the kill), {} calls failed with 503 while down; \
         all {} present after the restart",
        acked.len(),
        before_kill,
        seen.failures.load(Ordering::Relaxed),
        acked.len()
    );
}
