//! What a member costs in memory, counted the way `INFO memory`'s
//! `used_memory` and the `--maxmemory` budget count it (the bytes asked of
//! the allocator, through the engine's `Used` wrapper): a bound that a
//! change adding bytes to every member — the tree, the member table, its
//! index, the keyspace — or keeping the log's buffers once their purpose
//! has ended, trips in `cargo test`, long before a benchmark is run.
//!
//! The members are the Redis benchmark workload's (`redis-benchmark zadd
//! lb __rand_int__ m:__rand_int__ -r 1000000`: 12-digit ids and integer
//! scores below a million) from a fixed seed, written to a durable service
//! (a data directory, `--fsync everysec`) once through the Redis
//! protocol's command path (`ZADD` by `ZADD`, 64 to a durability wait, as
//! the workload pipelines them) and once through the API's `submit` in
//! batches of 1,000. The figure is read once the log has gone idle and let
//! its buffers go. For one sequence of writes the engine asks the allocator
//! for the same sizes every time, so the figure is exact and the bound is
//! not a timing: it is the figure measured when the bound was set, plus 3%.
//! A change that lowers the cost should lower the bound with it
//! (docs/BENCHMARKS.md, "Memory per member", has Redis on the workload).

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use podium_core::api::SubmitIn;
use podium_core::keystore::KeyStore;
use podium_engine::used::{allocated, Used};
use podium_engine::Store;
use podium_server::resp::exec::{Session, Shared};
use podium_server::resp::reply::Reply;
use podium_store::service::Service;
use podium_store::storage::open;
use podium_store::FsyncPolicy;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static A: Used<System> = Used::new(System);

const MEMBERS: usize = 200_000;

/// Bytes per member allowed on each path (measured + 3%, see the doc).
const RESP_BOUND: f64 = 76.6;
const SUBMIT_BOUND: f64 = 76.3;

/// `MEMBERS` distinct (member, score) pairs of the workload's shape.
fn workload() -> Vec<(String, u64)> {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let mut seen = std::collections::HashSet::with_capacity(MEMBERS);
    let mut out = Vec::with_capacity(MEMBERS);
    while out.len() < MEMBERS {
        let id: u64 = rng.random_range(0..1_000_000);
        if seen.insert(id) {
            out.push((format!("m:{id:012}"), rng.random_range(0..1_000_000)));
        }
    }
    out
}

fn used() -> usize {
    allocated().expect("the counting allocator is installed")
}

/// Bytes per member a durable service holds once `load` has written the
/// workload and the log has gone idle, over what it held before.
fn per_member(workload: &[(String, u64)], load: impl FnOnce(&Arc<Service>)) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new();
    let (storage, aux, report) = open(dir.path(), FsyncPolicy::EverySec, &store).unwrap();
    // No snapshot while loading: one would hold a copy of the boards.
    let svc = Arc::new(Service::new(store, Some(storage), aux, report, u64::MAX));
    let before = used();
    load(&svc);
    // The log keeps unsynced batches (to write again should a sync fail)
    // and spare buffers until it has been idle a second.
    let log = &svc.storage().unwrap().log;
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.held_bytes() > 0 {
        assert!(
            Instant::now() < deadline,
            "the log still holds {} bytes",
            log.held_bytes()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = used();
    let n = svc
        .store()
        .get("lb")
        .expect("the board was made")
        .read()
        .len();
    assert_eq!(n, workload.len(), "every member stored");
    // The breakdown INFO memory and /metrics show names what the members
    // took: the board's own count of its structures is the growth, within
    // 2% (what the service keeps beside a board, and what it freed of
    // what it held before, such as the log's first buffers).
    let grown = (after - before) as u64;
    let parts = svc.memory_use();
    eprintln!("grown {grown} B, breakdown {parts:?}");
    assert_eq!(parts.log_buffers, 0);
    assert!(
        parts.boards.abs_diff(grown) <= grown / 50,
        "the board counts {} bytes of the {grown} its load took",
        parts.boards
    );
    grown as f64 / n as f64
}

#[test]
fn a_member_costs_no_more_than_the_bound() {
    let workload = workload();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let resp = per_member(&workload, |svc| {
        let mut session = Session::new(svc.clone(), Arc::new(Shared::new(Vec::new(), 0)));
        for pipeline in workload.chunks(64) {
            let mut last = 0;
            for (member, score) in pipeline {
                let args = vec![
                    Bytes::from_static(b"ZADD"),
                    Bytes::from_static(b"lb"),
                    Bytes::from(format!("{score:012}")),
                    Bytes::from(member.clone()),
                ];
                let (reply, lsn) = session.handle(args);
                assert_eq!(reply, Reply::Int(1));
                last = lsn;
            }
            rt.block_on(svc.wait_durable(last)).unwrap();
        }
    });

    let submit = per_member(&workload, |svc| {
        rt.block_on(async {
            svc.board_create("lb", &serde_json::json!({}))
                .await
                .unwrap();
            for chunk in workload.chunks(1000) {
                let entries: Vec<SubmitIn> = chunk
                    .iter()
                    .map(|(member, score)| SubmitIn::new(member.clone(), *score as f64))
                    .collect();
                svc.submit("lb", &entries).await.unwrap();
            }
        });
    });

    eprintln!("bytes per member: RESP ZADD {resp:.2}, submit {submit:.2} ({MEMBERS} members)");
    assert!(
        resp <= RESP_BOUND,
        "a member loaded by ZADD costs {resp:.1} bytes, over the bound of {RESP_BOUND}"
    );
    assert!(
        submit <= SUBMIT_BOUND,
        "a member loaded by submit costs {submit:.1} bytes, over the bound of {SUBMIT_BOUND}"
    );
}
