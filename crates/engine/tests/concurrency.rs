//! Many threads hammer the `Store` at once, in the spirit of the
//! Leaderboard Micro Service's concurrency suites: one hot member, many
//! members, readers during writes, and multi-board operations that could
//! deadlock. Afterwards the member map and the tree must agree and every
//! score must equal what the operations imply.
//!
//! `cargo test -p podium-engine --features race-demo --test concurrency`
//! swaps the atomic increment for an unsynchronised read-then-write, and
//! the exact-score assertions then fail (lost updates).

use std::sync::Arc;
use std::thread;

use podium_engine::{Aggregate, Board, BoardConfig, Ranking, ScoreRange, Store, Submit, UpdateOp};

const THREADS: usize = 8;

/// Adds `by` to `member`'s score.
fn incr(store: &Store, board: &str, member: &[u8], by: f64) {
    if cfg!(feature = "race-demo") {
        // Deliberately unsynchronised: the read and the write are separate
        // critical sections, so concurrent increments overwrite each other.
        let cur = store
            .read(board, |b| b.score(member))
            .ok()
            .flatten()
            .unwrap_or(0.0);
        thread::yield_now();
        store
            .write(board, |b| b.submit(&Submit::new(member, cur + by)))
            .unwrap();
    } else {
        let s = Submit {
            op: Some(UpdateOp::Incr),
            ..Submit::new(member, by)
        };
        store.write(board, |b| b.submit(&s)).unwrap();
    }
}

fn check(store: &Store, board: &str) {
    store
        .read(board, |b| b.check_invariants())
        .unwrap()
        .unwrap_or_else(|e| panic!("board {board}: {e}"));
}

#[test]
fn one_hot_member_counts_every_increment() {
    let store = Arc::new(Store::new());
    const PER_THREAD: usize = 5_000;
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for _ in 0..PER_THREAD {
                    incr(&store, "hot", b"player", 1.0);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let score = store.read("hot", |b| b.score(b"player")).unwrap();
    assert_eq!(score, Some((THREADS * PER_THREAD) as f64));
    assert_eq!(store.read("hot", |b| b.len()).unwrap(), 1);
    check(&store, "hot");
}

#[test]
fn many_members_end_with_the_implied_scores() {
    let store = Arc::new(Store::new());
    store
        .create(
            "many",
            BoardConfig {
                ranking: Ranking::Dense,
                ..Default::default()
            },
        )
        .unwrap();
    const SHARED: usize = 97;
    const ROUNDS: usize = 3_000;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..ROUNDS {
                    // Every thread increments every shared member.
                    let shared = format!("shared{}", i % SHARED);
                    incr(&store, "many", shared.as_bytes(), 1.0);
                    // Private members: set, overwrite, and remove some.
                    let own = format!("t{t}m{}", i % 50);
                    store
                        .write("many", |b| b.submit(&Submit::new(own.as_bytes(), i as f64)))
                        .unwrap();
                    if i % 7 == 0 {
                        let gone = format!("t{t}gone{i}");
                        store
                            .write("many", |b| b.submit(&Submit::new(gone.as_bytes(), 1.0)))
                            .unwrap();
                        store
                            .write("many", |b| b.remove(&[gone.as_bytes()]))
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    check(&store, "many");
    store
        .read("many", |b| {
            // Each thread incremented shared member s once per round i with
            // i % SHARED == s.
            for s in 0..SHARED {
                let per_thread = (0..ROUNDS).filter(|i| i % SHARED == s).count();
                let want = (per_thread * THREADS) as f64;
                assert_eq!(
                    b.score(format!("shared{s}").as_bytes()),
                    Some(want),
                    "shared{s}"
                );
            }
            for t in 0..THREADS {
                for m in 0..50 {
                    let last = (0..ROUNDS).filter(|i| i % 50 == m).max().unwrap();
                    assert_eq!(b.score(format!("t{t}m{m}").as_bytes()), Some(last as f64));
                }
            }
            assert_eq!(b.len(), SHARED + THREADS * 50);
        })
        .unwrap();
}

#[test]
fn readers_see_consistent_pages_during_writes() {
    let store = Arc::new(Store::new());
    for i in 0..10_000u32 {
        store
            .write("live", |b| {
                b.submit(&Submit::new(format!("m{i}").as_bytes(), i as f64))
            })
            .unwrap();
    }
    let writers: Vec<_> = (0..THREADS / 2)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..20_000u32 {
                    let m = format!("m{}", (i * 7 + t as u32 * 13) % 10_000);
                    let s = ((i * 31 + t as u32) % 50_000) as f64;
                    store
                        .write("live", |b| b.submit(&Submit::new(m.as_bytes(), s)))
                        .unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..THREADS / 2)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..2_000u64 {
                    store
                        .read("live", |b| {
                            let page = b.top(i % 400 + 1, 25).unwrap();
                            assert_eq!(page.total, 10_000);
                            for w in page.entries.windows(2) {
                                assert!(w[0].score >= w[1].score);
                                assert_eq!(w[0].rank + 1, w[1].rank);
                            }
                            for e in &page.entries {
                                assert_eq!(b.rank(&e.member), Some(e.rank));
                            }
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for h in writers.into_iter().chain(readers) {
        h.join().unwrap();
    }
    check(&store, "live");
}

#[test]
fn multi_board_operations_do_not_deadlock() {
    let store = Arc::new(Store::new());
    for name in ["a", "b", "c"] {
        for i in 0..200 {
            store
                .write(name, |bd| {
                    bd.submit(&Submit::new(format!("m{i}").as_bytes(), i as f64))
                })
                .unwrap();
        }
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                let names = ["a", "b", "c"];
                for i in 0..300 {
                    let dest = names[(t + i) % 3];
                    let srcs = [(names[(t + i + 1) % 3], 1.0), (dest, 0.5)];
                    store
                        .combine(dest, &srcs, Aggregate::Max, i % 2 == 0)
                        .unwrap();
                    let m = format!("m{}", i % 200);
                    store
                        .write(names[i % 3], |b| {
                            b.submit(&Submit::new(m.as_bytes(), i as f64))
                        })
                        .unwrap();
                    let _ = store.read(names[(i + 1) % 3], |b| b.count_range(&ScoreRange::all()));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for name in ["a", "b", "c"] {
        check(&store, name);
    }
}

#[test]
fn archive_moves_content_and_keeps_the_newest_archives() {
    let store = Store::new();
    store
        .create(
            "weekly",
            BoardConfig {
                keep_archives: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
    for week in 45..49 {
        for i in 0..10 {
            store
                .write("weekly", |b| {
                    b.submit(&Submit::new(format!("p{i}").as_bytes(), (week * i) as f64))
                })
                .unwrap();
        }
        assert_eq!(
            store
                .archive("weekly", &format!("weekly@2026-W{week}"))
                .unwrap(),
            10
        );
        assert_eq!(store.read("weekly", Board::len).unwrap(), 0);
    }
    let names: Vec<String> = store.list().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weekly", "weekly@2026-W47", "weekly@2026-W48"]);
    let err = store
        .write("weekly@2026-W48", |b| b.submit(&Submit::new(b"x", 1.0)))
        .unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(
        store.read("weekly@2026-W48", |b| b.score(b"p3")).unwrap(),
        Some(144.0)
    );
}
