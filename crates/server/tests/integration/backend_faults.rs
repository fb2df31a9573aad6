//! Fault test of the Redis backend: under a steady load of
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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use podium_core::api::SubmitIn;
use podium_core::backend::Backend;
use podium_core::error::Code;
use podium_core::ops;
use podium_redis::RedisBackend;

use crate::support;

use support::redis::{answers_ping, cli, wait_for, Redis};

/// What the writers saw: acknowledged member → score, and how many calls
/// failed (each with 503; anything else fails the test at once).
#[derive(Default)]
struct Seen {
    acked: Mutex<HashMap<String, f64>>,
    acks: AtomicUsize,
    failures: AtomicUsize,
}

const BOARD: &str = "load";

/// Boards of the cluster test: their tags hash to slots spread over the
/// three masters.
static BOARDS: [&str; 6] = ["load", "b1", "b2", "b3", "b4", "b5"];

/// One writer: single submits of its own members, and every tenth call a
/// batch of ten, each with a distinct score so a stale value shows; on a
/// cluster the writer cycles through the boards.
async fn writer(
    id: usize,
    b: Arc<RedisBackend>,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    boards: &'static [&'static str],
) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let board = boards[i as usize % boards.len()];
        let entries: Vec<SubmitIn> = if i.is_multiple_of(10) {
            (0..10)
                .map(|k| SubmitIn::new(format!("w{id}-{i}-{k}"), (i * 10 + k) as f64))
                .collect()
        } else {
            vec![SubmitIn::new(format!("w{id}-{i}"), i as f64)]
        };
        match b
            .submit(&ops::SubmitMany {
                board: board.to_string(),
                entries: entries.to_vec(),
            })
            .await
        {
            Ok(items) => {
                assert_eq!(items.len(), entries.len());
                let mut acked = seen.acked.lock().unwrap();
                for e in &entries {
                    acked.insert(format!("{board}/{}", e.member), e.score.0);
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

/// Every acknowledged write is there with its value (writes that got a 503
/// may or may not have been applied; they are not checked). Returns how
/// many were checked.
async fn check_acked(b: &dyn Backend, seen: &Seen, boards: &[&str]) -> usize {
    let acked = seen.acked.lock().unwrap().clone();
    let mut stored: HashMap<String, f64> = HashMap::new();
    for board in boards {
        let mut pos = 0;
        loop {
            let chunk = b
                .export_chunk(&ops::ExportChunk {
                    board: board.to_string(),
                    pos,
                    limit: 10_000,
                })
                .await
                .unwrap();
            if chunk.is_empty() {
                break;
            }
            pos += chunk.len();
            stored.extend(
                chunk
                    .into_iter()
                    .map(|l| (format!("{board}/{}", l.member), l.score.0)),
            );
        }
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
    acked.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_killed_redis_and_the_backend_recovers() {
    let mut redis = Redis::single(true);
    let b = Arc::new(RedisBackend::connect(&redis.url()).await.unwrap());
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|id| {
            tokio::spawn(writer(
                id,
                b.clone(),
                seen.clone(),
                stop.clone(),
                &BOARDS[..1],
            ))
        })
        .collect();

    // Steady load first.
    wait_for("acknowledged writes before the kill", || {
        seen.acks.load(Ordering::Relaxed) >= 300
    })
    .await;
    let before_kill = seen.acked.lock().unwrap().len();
    redis.nodes[0].kill();

    // Down: every call is a 503, reads and writes alike.
    let e = b
        .top(&ops::Top {
            board: BOARD.to_string(),
            page: None,
            page_size: None,
            with_data: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let e = b.ping().await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let e = b
        .search(&ops::Search {
            board: BOARD.to_string(),
            query: "w1".to_string(),
            limit: Some(10),
            offset: Some(0),
            with_data: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let failures = seen.failures.load(Ordering::Relaxed);
    wait_for("writers failing while redis is down", || {
        seen.failures.load(Ordering::Relaxed) >= failures + 20
    })
    .await;

    // Back on the same port and data dir: the same backend object serves
    // again, with no reconnect call from anyone.
    redis.nodes[0].spawn();
    let port = redis.nodes[0].port;
    wait_for("redis-server back", || answers_ping(port)).await;
    let acks = seen.acks.load(Ordering::Relaxed);
    wait_for("acknowledged writes after the restart", || {
        seen.acks.load(Ordering::Relaxed) >= acks + 300
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }

    let acked = check_acked(&*b, &seen, &BOARDS[..1]).await;
    eprintln!(
        "{acked} acknowledged members ({before_kill} before the kill), {} calls failed with \
         503 while down; all present after the restart",
        seen.failures.load(Ordering::Relaxed),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_a_killed_cluster_master() {
    // Each node has its own dir (the AOF directory has a fixed name).
    let mut redis = Redis::cluster(true);
    let b = Arc::new(RedisBackend::connect(&redis.url()).await.unwrap());
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|id| tokio::spawn(writer(id, b.clone(), seen.clone(), stop.clone(), &BOARDS)))
        .collect();
    wait_for("acknowledged writes before the kill", || {
        seen.acks.load(Ordering::Relaxed) >= 300
    })
    .await;

    // The master of the first board's slot goes.
    let nodes = &mut redis.nodes;
    let slot = cli(nodes[0].port, &["CLUSTER", "KEYSLOT", "{load}:c"]);
    let slot: u16 = slot.trim().parse().expect("a slot number");
    let victim = nodes
        .iter()
        .position(|n| {
            let mine = cli(n.port, &["CLUSTER", "MYID"]);
            cli(n.port, &["CLUSTER", "NODES"]).lines().any(|l| {
                l.starts_with(mine.trim())
                    && l.split(' ').skip(8).any(|r| match r.split_once('-') {
                        Some((a, z)) => {
                            (a.parse().unwrap_or(u16::MAX)..=z.parse().unwrap_or(0)).contains(&slot)
                        }
                        None => r.parse() == Ok(slot),
                    })
            })
        })
        .expect("a master serves the slot");
    nodes[victim].kill();
    let e = b
        .top(&ops::Top {
            board: "load".to_string(),
            page: None,
            page_size: None,
            with_data: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let e = b
        .submit_one(&ops::Submit {
            board: "load".to_string(),
            entry: (SubmitIn::new("x", 1.0)).clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    let failures = seen.failures.load(Ordering::Relaxed);
    wait_for("writers failing while the master is down", || {
        seen.failures.load(Ordering::Relaxed) >= failures + 20
    })
    .await;

    nodes[victim].spawn();
    let port = nodes[victim].port;
    wait_for("the master back", || answers_ping(port)).await;
    wait_for("cluster state ok again", || redis.cluster_ok()).await;
    let acks = seen.acks.load(Ordering::Relaxed);
    wait_for("acknowledged writes after the restart", || {
        seen.acks.load(Ordering::Relaxed) >= acks + 300
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let acked = check_acked(&*b, &seen, &BOARDS).await;
    eprintln!(
        "cluster: {acked} acknowledged members on {} boards, {} calls failed with 503 while a \
         master was down; all present after its restart",
        BOARDS.len(),
        seen.failures.load(Ordering::Relaxed),
    );
}
