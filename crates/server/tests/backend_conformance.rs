//! Conformance of the storage backends: the same operation
//! sequences run through the `Backend` trait against the embedded engine,
//! a single redis-server and a 3-master Redis Cluster that this test starts
//! on free loopback ports in temp dirs, and every answer (value or error
//! code and message) must be identical. Also: the configs and operations
//! the Redis backend refuses, and a lost Redis giving 503s and recovering.
//!
//! redis-server and redis-cli must be installed (`scripts/test.sh`
//! installs them); without them these tests fail and say so. Every Redis
//! process the test starts is killed when its guard drops, pass or fail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::TimeZone;
use podium_core::api::{CombineIn, CondIn, Only, SubmitIn};
use podium_core::backend::Backend;
use podium_core::backend::RangeBounds;
use podium_core::error::{ApiError, Code};
use podium_core::schedule::ManualClock;
use podium_redis::RedisBackend;
use podium_store::service::Service;
use podium_store::EmbeddedBackend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

mod common;

use common::redis_server::{cli as redis_cli, wait_until, Redis};

/// Archive names carry the time: every backend reads the same fixed clock.
fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
            .unwrap(),
    ))
}

fn embedded() -> EmbeddedBackend {
    EmbeddedBackend::new(Arc::new(Service::in_memory().with_clock(clock())))
}

async fn redis_backend(url: &str) -> RedisBackend {
    RedisBackend::connect(url)
        .await
        .unwrap()
        .with_clock(clock())
}

// ---------------------------------------------------------------- scenario

/// Every answer of a scenario, one line per operation.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    fn add<T: serde::Serialize>(&mut self, what: &str, r: Result<T, ApiError>) {
        let line = match r {
            Ok(v) => {
                let mut v = serde_json::to_value(&v).unwrap();
                // Memory use is each engine's own measure.
                if let Some(o) = v.as_object_mut() {
                    o.remove("heap_bytes");
                }
                format!("{what} => {v}")
            }
            Err(e) => format!("{what} => ERR {} {}", e.code.as_str(), e.message),
        };
        self.0.push(line);
    }
}

fn s(m: &str, score: f64) -> SubmitIn {
    SubmitIn::new(m, score)
}

fn with(mut e: SubmitIn, f: impl FnOnce(&mut SubmitIn)) -> SubmitIn {
    f(&mut e);
    e
}

fn range(min: Option<f64>, max: Option<f64>, min_ex: bool, max_ex: bool) -> RangeBounds {
    RangeBounds {
        min,
        max,
        min_exclusive: min_ex,
        max_exclusive: max_ex,
    }
}

/// Reads that every board of the scenario gets after each phase.
async fn read_all(b: &dyn Backend, log: &mut Log, board: &str, members: &[&str]) {
    for page in [1, 2, 9] {
        log.add(
            &format!("top {board} p{page}"),
            b.top(board, Some(page), Some(3), true).await,
        );
    }
    log.add("top default", b.top(board, None, None, false).await);
    for m in members {
        log.add(&format!("entry {m}"), b.entry(board, m, Some(2)).await);
        log.add(&format!("rank {m}"), b.rank(board, m).await);
        log.add(
            &format!("around {m}"),
            b.around(board, m, Some(3), true).await,
        );
        log.add(
            &format!("around4 {m}"),
            b.around(board, m, Some(4), false).await,
        );
        log.add(&format!("pct {m}"), b.percentile(board, m).await);
    }
    let mut list: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    list.extend(["nobody".to_string(), members[0].to_string(), "ghost".into()]);
    log.add("ranks", b.ranks(board, &list, true).await);
    for p in [0.0, 10.0, 50.0, 99.9, 100.0] {
        log.add(
            &format!("score_at {p}"),
            b.score_at_percentile(board, p).await,
        );
    }
    let ranges = [
        range(None, None, false, false),
        range(Some(2.0), Some(7.0), false, false),
        range(Some(2.0), Some(7.0), true, true),
        range(Some(5.0), None, true, false),
        range(None, Some(5.0), false, true),
        range(Some(f64::NEG_INFINITY), Some(f64::INFINITY), false, false),
        range(Some(9.0), Some(1.0), false, false),
    ];
    for (i, r) in ranges.iter().enumerate() {
        log.add(&format!("count r{i}"), b.count(board, *r).await);
        for fw in [false, true] {
            for (off, lim) in [(None, None), (Some(1), Some(2)), (Some(50), Some(5))] {
                log.add(
                    &format!("range_by_score r{i} fw={fw} {off:?} {lim:?}"),
                    b.range_by_score(board, *r, fw, off, lim, true).await,
                );
            }
        }
    }
    for (a, z) in [(1, 3), (2, 2), (4, 100), (50, 60)] {
        for fw in [false, true] {
            log.add(
                &format!("range_by_rank {a}..{z} fw={fw}"),
                b.range_by_rank(board, a, z, fw, true).await,
            );
        }
    }
    for (pos, lim) in [(0, 2), (2, 100), (100, 5)] {
        log.add(
            &format!("export {pos} {lim}"),
            b.export_chunk(board, pos, lim).await,
        );
    }
    log.add("info", b.board_info(board).await);
}

/// Searches every search phase asks.
const QUERIES: &[&str] = &[
    "al",
    "al al",
    "al* al",
    "al al al",
    "\"al\"",
    "\"al\" al",
    "al*",
    "alv",
    "alvarez al",
    "jose",
    "JOSÉ ángel",
    "o brien",
    "o'bri",
    "jean-lu",
    "jean luc",
    "\"jean luc\"",
    "team:red",
    "team:red al",
    "team:\"red sox\"",
    "team:re",
    "team:red-sox al",
    "name:al",
    "name:al team:r",
    "colour:red",
    "team:",
    "王",
    "王小明",
    "true",
    "3",
    "alvin",
    "p1",
    "bob",
    "zzz",
    "",
    "  - !! ",
    "a b c d e f g h i j k l m n o p q",
];

async fn search_all(b: &dyn Backend, log: &mut Log, board: &str) {
    for q in QUERIES {
        log.add(
            &format!("search {board} {q:?}"),
            b.search(board, q, 25, 0, true).await,
        );
    }
    for (lim, off) in [(2, 1), (0, 0), (1, 5), (3, 100)] {
        log.add(
            &format!("search {board} al {lim} {off}"),
            b.search(board, "al", lim, off, false).await,
        );
    }
}

async fn scenario(b: &dyn Backend) -> Vec<String> {
    let mut log = Log::default();
    let l = &mut log;

    // Boards: explicit, duplicate, bad config, bad name, implicit.
    l.add(
        "create lap",
        b.board_create(
            "lap",
            &json!({"order": "asc", "ranking": "competition", "update": "best",
                     "min_score": 0, "max_score": 1000}),
        )
        .await,
    );
    l.add("create lap again", b.board_create("lap", &json!({})).await);
    l.add(
        "create bad config",
        b.board_create("bad", &json!({"order": "sideways"})).await,
    );
    l.add("create bad name", b.board_create("", &json!({})).await);
    l.add("info missing", b.board_info("nope").await);
    l.add("top missing", b.top("nope", None, None, false).await);
    l.add("entry missing board", b.entry("nope", "a", None).await);
    l.add(
        "count missing",
        b.count("nope", RangeBounds::default()).await,
    );
    l.add("remove missing", b.remove("nope", &["a".into()]).await);

    // A batch with names, data, ties, an incr and a bad one.
    let batch = vec![
        with(s("alice", 5.0), |e| e.name = Some("Alice A".into())),
        with(s("bob", 7.0), |e| {
            e.data = Some(json!({"team": "red", "n": 1}))
        }),
        s("carol", 5.0),
        s("dave", 2.0),
        s("erin", 7.0),
        with(s("alice", 1.5), |e| e.op = Some("incr".into())),
        s("frank", 9.0),
        s("gus", f64::INFINITY),
        s("hal", f64::NEG_INFINITY),
        s("ivy", 0.1),
        with(s("ivy", 0.2), |e| e.op = Some("incr".into())),
    ];
    l.add("submit game", b.submit("game", &batch).await);
    read_all(
        b,
        l,
        "game",
        &["alice", "bob", "carol", "gus", "hal", "ivy"],
    )
    .await;

    // One-entry submits through every operator and condition.
    let ones = vec![
        with(s("bob", 3.0), |e| e.op = Some("best".into())),
        with(s("bob", 8.0), |e| e.op = Some("best".into())),
        with(s("bob", 1.0), |e| e.cond = Some(CondIn::Gt)),
        with(s("bob", 1.0), |e| e.cond = Some(CondIn::Lt)),
        with(s("bob", 100.0), |e| e.only = Some(Only::New)),
        with(s("zed", 4.0), |e| e.only = Some(Only::Existing)),
        with(s("zed", 4.0), |e| e.only = Some(Only::New)),
        with(s("dave", -2.0), |e| e.op = Some("incr".into())),
        with(s("dave", 0.0), |e| e.op = Some("incr".into())),
        with(s("carol", 5.0), |e| e.name = Some("Carol".into())),
        with(s("carol", 5.0), |e| e.name = Some(String::new())),
        with(s("gus", f64::NEG_INFINITY), |e| e.op = Some("incr".into())),
        with(s("x", 1.0), |e| e.op = Some("double".into())),
        with(s("x", 1.0), |e| e.data = Some(json!([1, 2]))),
        with(s("x", 1.0), |e| {
            e.data = Some(json!({"big": "x".repeat(5000)}))
        }),
        with(s("x", 1.0), |e| e.name = Some("n".repeat(600))),
        s("", 1.0),
        s(&"m".repeat(513), 1.0),
        s("nan", f64::NAN),
    ];
    for (i, e) in ones.iter().enumerate() {
        l.add(&format!("submit_one #{i}"), b.submit_one("game", e).await);
    }
    read_all(b, l, "game", &["bob", "dave", "zed", "gus"]).await;

    // Bounds and `best` on the asc competition board.
    let laps = vec![s("p1", 61.5), s("p2", 59.0), s("p3", 61.5), s("p4", 70.0)];
    l.add("submit lap", b.submit("lap", &laps).await);
    l.add("lap improve", b.submit_one("lap", &s("p4", 58.0)).await);
    l.add("lap worse", b.submit_one("lap", &s("p2", 65.0)).await);
    l.add(
        "lap out of bounds",
        b.submit_one("lap", &s("p9", 1001.0)).await,
    );
    l.add(
        "lap batch with one out of bounds",
        b.submit("lap", &[s("p5", 10.0), s("p6", -1.0)]).await,
    );
    l.add(
        "lap incr out of bounds",
        b.submit(
            "lap",
            &[
                with(s("p1", 2000.0), |e| e.op = Some("incr".into())),
                s("p7", 61.5),
            ],
        )
        .await,
    );
    read_all(b, l, "lap", &["p1", "p2", "p3", "p4", "p7"]).await;

    // Capped board: the worst are evicted, possibly the newcomer.
    l.add(
        "create capped",
        b.board_create("capped", &json!({"max_members": 3})).await,
    );
    l.add(
        "submit capped",
        b.submit(
            "capped",
            &[
                s("a", 1.0),
                s("b", 2.0),
                s("c", 3.0),
                s("d", 4.0),
                s("e", 0.5),
            ],
        )
        .await,
    );
    read_all(b, l, "capped", &["b", "c", "d"]).await;

    l.add(
        "submit rand-src",
        b.submit("rand-src", &[s("alice", 1.0), s("gus", 2.0), s("ivy", 3.0)])
            .await,
    );

    // Data, removal, ranges.
    l.add(
        "set_data",
        b.set_data("game", "carol", Some("C".into()), Some(json!({"k": 1})))
            .await,
    );
    l.add(
        "set_data missing member",
        b.set_data("game", "nobody", None, None).await,
    );
    l.add(
        "set_data bad data",
        b.set_data("game", "carol", None, Some(json!(3))).await,
    );
    l.add(
        "set_data missing board",
        b.set_data("nope", "carol", None, None).await,
    );
    l.add("entry carol", b.entry("game", "carol", None).await);
    l.add(
        "remove",
        b.remove("game", &["bob".into(), "nobody".into(), "bob".into()])
            .await,
    );
    l.add("remove ranks", b.remove_rank_range("game", 2, 3).await);
    l.add("remove ranks bad", b.remove_rank_range("game", 0, 3).await);
    l.add(
        "remove scores",
        b.remove_score_range("game", range(Some(0.0), Some(2.0), false, true))
            .await,
    );
    read_all(b, l, "game", &["alice", "carol", "gus", "hal"]).await;

    // Reconfiguring flips the order and the ranking in place.
    l.add(
        "put game",
        b.board_put("game", &json!({"order": "asc", "ranking": "competition"}))
            .await,
    );
    read_all(b, l, "game", &["alice", "carol", "gus", "hal"]).await;
    l.add(
        "put game dense",
        b.board_put("game", &json!({"order": "asc", "ranking": "dense"}))
            .await,
    );
    l.add("game tie", b.submit_one("game", &s("zed", 5.0)).await);
    l.add("put new", b.board_put("fresh", &json!({})).await);
    read_all(b, l, "game", &["alice", "carol", "gus", "hal"]).await;
    l.add(
        "put capped smaller",
        b.board_put("capped", &json!({"max_members": 1})).await,
    );
    read_all(b, l, "capped", &["d"]).await;

    // Merge and intersect, into new and existing boards.
    let comb = |sources: &[&str], weights: Option<Vec<f64>>, agg: Option<&str>| CombineIn {
        sources: sources.iter().map(|x| x.to_string()).collect(),
        weights,
        aggregate: agg.map(str::to_string),
    };
    for (i, (req, inter)) in [
        (comb(&["game", "lap"], None, None), false),
        (
            comb(
                &["game", "capped", "nope"],
                Some(vec![2.0, 0.5, 1.0]),
                Some("max"),
            ),
            false,
        ),
        (
            comb(&["game", "game"], Some(vec![1.0, -1.0]), Some("min")),
            true,
        ),
        (comb(&["rand-src", "game"], None, Some("sum")), true),
        (comb(&[], None, None), false),
        (comb(&["game"], Some(vec![1.0, 2.0]), None), false),
        (comb(&["game"], None, Some("avg")), false),
        (comb(&["game", ""], None, None), false),
    ]
    .into_iter()
    .enumerate()
    {
        l.add(
            &format!("combine #{i}"),
            b.combine(&format!("merged{i}"), &req, inter).await,
        );
        l.add(
            &format!("combined #{i}"),
            b.range_by_rank(&format!("merged{i}"), 1, 100, false, true)
                .await,
        );
    }
    l.add(
        "merge into capped",
        b.combine("capped", &comb(&["game", "capped"], None, None), false)
            .await,
    );
    read_all(b, l, "capped", &["d"]).await;

    // A board name that needs escaping in the hash tag.
    let odd = "we}ird%{name} é";
    l.add(
        "submit odd",
        b.submit(odd, &[s("a", 1.0), s("b", 2.0)]).await,
    );
    read_all(b, l, odd, &["a", "b"]).await;

    // Many ties, random scores, both rankings.
    let mut rng = SmallRng::seed_from_u64(7);
    for ranking in ["unique", "competition", "dense"] {
        let name = format!("rand-{ranking}");
        l.add(
            "create rand",
            b.board_create(&name, &json!({"ranking": ranking})).await,
        );
        let batch: Vec<SubmitIn> = (0..400)
            .map(|i| {
                s(
                    &format!("m{:03}", i % 300),
                    rng.random_range(0..40) as f64 / 4.0,
                )
            })
            .collect();
        l.add("submit rand", b.submit(&name, &batch).await);
        read_all(b, l, &name, &["m000", "m150", "m299"]).await;
        l.add(
            "rand full",
            b.range_by_rank(&name, 1, 400, false, false).await,
        );
        // Moves, removals and evictions keep the distinct scores right.
        let moves: Vec<SubmitIn> = (0..100)
            .map(|i| {
                let e = s(
                    &format!("m{:03}", i * 3),
                    rng.random_range(-4..44) as f64 / 4.0,
                );
                if i % 2 == 0 {
                    with(e, |e| e.op = Some("incr".into()))
                } else {
                    e
                }
            })
            .collect();
        l.add("moves", b.submit(&name, &moves).await);
        let gone: Vec<String> = (0..60).map(|i| format!("m{:03}", i * 5)).collect();
        l.add("remove some", b.remove(&name, &gone).await);
        l.add("remove top", b.remove_rank_range(&name, 1, 7).await);
        l.add(
            "remove band",
            b.remove_score_range(&name, range(Some(3.0), Some(4.0), false, false))
                .await,
        );
        l.add(
            "rand after",
            b.range_by_rank(&name, 1, 400, true, false).await,
        );
        l.add(
            "cap it",
            b.board_put(&name, &json!({"ranking": ranking, "max_members": 50}))
                .await,
        );
        l.add(
            "capped rand",
            b.range_by_rank(&name, 1, 400, false, false).await,
        );
        read_all(b, l, &name, &["m001", "m002", "m299"]).await;
        // Switching rankings in place.
        for other in ["dense", "unique", "competition"] {
            l.add(
                &format!("to {other}"),
                b.board_put(&name, &json!({"ranking": other, "max_members": 50}))
                    .await,
            );
            l.add(
                &format!("as {other}"),
                b.range_by_rank(&name, 1, 60, false, false).await,
            );
        }
    }

    // Resets archive the content under NAME@time (.2, .3 when taken) and
    // keep_archives drops the oldest.
    l.add("reset lap", b.reset("lap").await);
    l.add("reset lap again", b.reset("lap").await);
    read_all(b, l, "lap", &["p1"]).await;
    let archive = "lap@2026-11-21T12:00:00Z";
    read_all(b, l, archive, &["p1", "p2", "p4"]).await;
    l.add("write archive", b.submit_one(archive, &s("p1", 1.0)).await);
    l.add("remove archive", b.remove(archive, &["p1".into()]).await);
    l.add("reset archive", b.reset(archive).await);
    l.add("put archive", b.board_put(archive, &json!({})).await);
    l.add("reset missing", b.reset("nope").await);
    l.add(
        "create kept",
        b.board_create("kept", &json!({"keep_archives": 2, "ranking": "dense"}))
            .await,
    );
    for i in 0..4 {
        l.add(
            "fill kept",
            b.submit(
                "kept",
                &[
                    with(s(&format!("k{i}"), 1.0), |e| e.name = Some("K".into())),
                    s("x", i as f64),
                ],
            )
            .await,
        );
        l.add("reset kept", b.reset("kept").await);
    }
    // (Four resets in one second: the fourth reuses the freed base name,
    // which then sorts oldest and is pruned at once, on both engines.)
    read_all(b, l, "kept@2026-11-21T12:00:00Z.3", &["x", "k2"]).await;

    plain_batches(b, l).await;
    import_batches(b, l).await;
    search_scenario(b, l).await;
    odd_members(b, l).await;

    l.add("boards", b.boards().await);
    l.add("delete game", b.board_delete("game").await);
    l.add("delete game again", b.board_delete("game").await);
    l.add("top deleted", b.top("game", None, None, false).await);
    l.add("boards after", b.boards().await);
    log.0
}

/// Pages whose members hold newlines, NULs, other control and non-ASCII
/// bytes (the Redis script joins a page's strings into one, see
/// `packed`), and pages with and without names, in every ranking and
/// both orders, through every read that answers a page.
async fn odd_members(b: &dyn Backend, l: &mut Log) {
    let members = [
        "plain",
        "two\nlines",
        "\n",
        "end\n",
        "tab\there",
        "nul\0byte",
        "é ü",
        "x\r\ny",
        "emoji 🎲",
    ];
    for (i, cfg) in [
        json!({}),
        json!({"order": "asc", "ranking": "competition"}),
        json!({"ranking": "dense"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("odd{i}");
        l.add("create odd", b.board_create(&board, cfg).await);
        let batch: Vec<SubmitIn> = members
            .iter()
            .enumerate()
            .map(|(k, m)| s(m, (k % 4) as f64))
            .collect();
        l.add("fill odd", b.submit(&board, &batch).await);
        for page in [1, 2, 3] {
            l.add(
                &format!("top {board} p{page}"),
                b.top(&board, Some(page), Some(4), false).await,
            );
        }
        l.add(
            "around odd",
            b.around(&board, "two\nlines", Some(5), true).await,
        );
        l.add(
            "range odd",
            b.range_by_rank(&board, 2, 7, true, false).await,
        );
        l.add(
            "score range odd",
            b.range_by_score(
                &board,
                range(Some(1.0), None, false, false),
                false,
                Some(1),
                Some(5),
                false,
            )
            .await,
        );
        // Names on some: the page carries them.
        l.add(
            "name odd",
            b.set_data(&board, "\n", Some("Newline".into()), None).await,
        );
        l.add("top named odd", b.top(&board, None, None, true).await);
        l.add("pct odd", b.score_at_percentile(&board, 50.0).await);
        l.add("entry odd", b.entry(&board, "end\n", None).await);
    }
}

/// Batches of plain `set`s, which the Redis script applies in one
/// multi-member ZADD and whose ranks podium works out as if applied one
/// by one: tie-heavy scores (±0, ±inf), new and existing members, later
/// entries overtaking earlier ones, in both orders and both rankings it
/// takes; mixed with batches it cannot take (a member twice, a name),
/// removals, and searches before and after the board's index is built.
async fn plain_batches(b: &dyn Backend, l: &mut Log) {
    let mut rng = SmallRng::seed_from_u64(7);
    // No -0.0: Redis replies a stored -0 as `0` on every read, where the
    // engine keeps the sign (a difference of every path, not of batches).
    let scores = [-1.0, 0.0, 1.0, 2.5, 3.0, f64::INFINITY, f64::NEG_INFINITY];
    for (i, cfg) in [
        json!({}),
        json!({"order": "asc"}),
        json!({"ranking": "competition"}),
        json!({"order": "asc", "ranking": "competition"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("plain{i}");
        if i > 0 {
            l.add("create plain", b.board_create(&board, cfg).await);
        }
        for round in 0..40 {
            let n = rng.random_range(1..40);
            let mut pool: Vec<usize> = (0..60).collect();
            let mut batch = Vec::new();
            for _ in 0..n {
                let m = pool.swap_remove(rng.random_range(0..pool.len()));
                let x = if rng.random_bool(0.5) {
                    scores[rng.random_range(0..scores.len())]
                } else {
                    rng.random_range(0..6) as f64
                };
                batch.push(s(&format!("p{m}"), x));
            }
            match rng.random_range(0..10) {
                0 => batch.push(s(&batch[0].member.clone(), 4.0)),
                1 => batch[0].name = Some(format!("Plain {round}")),
                _ => {}
            }
            l.add("plain batch", b.submit(&board, &batch).await);
            if round % 10 == 9 {
                let gone: Vec<String> = (0..5)
                    .map(|_| format!("p{}", rng.random_range(0..60)))
                    .collect();
                l.add("plain remove", b.remove(&board, &gone).await);
                l.add("plain top", b.top(&board, None, Some(100), false).await);
                // The first search builds the index; later batches keep it.
                for q in ["p1", "plain", "p"] {
                    l.add("plain search", b.search(&board, q, 10, 0, false).await);
                }
            }
        }
    }
}

async fn import_searches(b: &dyn Backend, l: &mut Log, board: &str) {
    for q in [
        "m1", "m12", "m", "m2*", "\"m3\"", "ann", "al", "lee", "m1 m1", "ann-lee",
    ] {
        l.add(
            &format!("import search {board} {q}"),
            b.search(board, q, 10, 0, false).await,
        );
    }
}

/// `import` batches, which the Redis script takes as multi-member ZADDs
/// without storing the search sources of members whose id is their only
/// word: searched afterwards (the index built from the sorted set), then
/// named, renamed back to none and searched; imported again into the
/// built index (new members indexed, existing ones moved); removals;
/// duplicates and ids that do not tokenise to themselves in a batch;
/// boards whose config the script leaves to `submit` (bounds, `best`,
/// dense, a cap, read-only); a reset (the archive indexed from its copy)
/// and a merge of imported boards.
async fn import_batches(b: &dyn Backend, l: &mut Log) {
    let plain = |from: usize, to: usize, k: f64| -> Vec<SubmitIn> {
        (from..to)
            .map(|i| s(&format!("m{i}"), (i % 7) as f64 * k))
            .collect()
    };
    // Plain entries, then the first search.
    l.add("import plain", b.import("imp", &plain(0, 150, 1.0)).await);
    l.add(
        "import again",
        b.import("imp", &plain(100, 200, -1.0)).await,
    );
    l.add("import top", b.top("imp", None, Some(20), false).await);
    import_searches(b, l, "imp").await;
    // Plain entries, then names (and data), then one name cleared.
    l.add(
        "import plain 2",
        b.import("imp2", &plain(0, 120, 2.0)).await,
    );
    let named: Vec<SubmitIn> = (0..30)
        .map(|i| {
            with(s(&format!("m{}", i * 3), i as f64), |e| {
                e.name = Some(format!("Al{i} Lee"));
                if i % 4 == 0 {
                    e.data = Some(json!({"team": "ann"}));
                }
            })
        })
        .collect();
    l.add("import names", b.submit("imp2", &named).await);
    l.add(
        "import clear name",
        b.submit(
            "imp2",
            &[
                with(s("m3", 1.0), |e| e.name = Some(String::new())),
                with(s("m6", 2.0), |e| e.name = Some("Ann".into())),
            ],
        )
        .await,
    );
    import_searches(b, l, "imp2").await;
    // Into the built index: new members, moved ones, mixed ids, duplicates.
    let mut mixed = plain(110, 170, 3.0);
    mixed.push(s("Ann-Lee", 4.0));
    mixed.push(s("m111", 9.0));
    l.add("import mixed", b.import("imp2", &mixed).await);
    l.add("import more", b.import("imp2", &plain(160, 220, 0.5)).await);
    let mut dup = plain(300, 310, 1.0);
    dup.push(s("m300", -5.0));
    l.add("import dup", b.import("imp2", &dup).await);
    l.add(
        "import remove",
        b.remove(
            "imp2",
            &["m1".into(), "m3".into(), "m6".into(), "m200".into()],
        )
        .await,
    );
    import_searches(b, l, "imp2").await;
    read_all(b, l, "imp2", &["m1", "m111", "m300", "Ann-Lee"]).await;
    // Entries that fail alone, and boards the script leaves to submit.
    let mut bad = plain(0, 5, 1.0);
    bad.push(s("", 1.0));
    bad.push(s("m9", f64::NAN));
    bad.push(with(s("m8", 1.0), |e| e.op = Some("best".into())));
    l.add("import bad", b.import("imp", &bad).await);
    for (i, cfg) in [
        json!({"min_score": 0, "max_score": 100}),
        json!({"update": "best"}),
        json!({"ranking": "dense"}),
        json!({"max_members": 50}),
        json!({"update": "incr", "order": "asc"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("impc{i}");
        l.add("import create", b.board_create(&board, cfg).await);
        let mut batch = plain(0, 80, 30.0);
        batch.push(s("m1", -1.0));
        l.add("import cfg", b.import(&board, &batch).await);
        l.add("import cfg", b.import(&board, &plain(40, 90, 31.0)).await);
        l.add(
            "import cfg top",
            b.top(&board, None, Some(100), false).await,
        );
        l.add(
            "import cfg search",
            b.search(&board, "m4", 10, 0, false).await,
        );
    }
    // A reset: the archive gets the content, its index built on search.
    l.add("import reset", b.reset("imp").await);
    l.add(
        "import into reset board",
        b.import("imp", &plain(0, 3, 1.0)).await,
    );
    l.add(
        "import archive",
        b.import("imp@2026-11-21T12:00:00Z", &plain(0, 3, 1.0))
            .await,
    );
    import_searches(b, l, "imp").await;
    import_searches(b, l, "imp@2026-11-21T12:00:00Z").await;
    l.add(
        "import archive top",
        b.top("imp@2026-11-21T12:00:00Z", None, Some(10), false)
            .await,
    );
    // A merge of imported boards: searchable by id.
    l.add(
        "import merge",
        b.combine(
            "impm",
            &serde_json::from_value::<CombineIn>(json!({"sources": ["imp2", "impc0"]})).unwrap(),
            false,
        )
        .await,
    );
    l.add(
        "import merge more",
        b.import("impm", &plain(500, 520, 1.0)).await,
    );
    import_searches(b, l, "impm").await;
}

/// Search (docs/spec.md §3) through every write that changes what matches.
async fn search_scenario(b: &dyn Backend, l: &mut Log) {
    l.add(
        "create people",
        b.board_create(
            "people",
            &json!({"search_fields": ["name", "team"], "max_members": 12, "ranking": "dense"}),
        )
        .await,
    );
    let people = vec![
        with(s("p1", 10.0), |e| {
            e.name = Some("Al Alvarez".into());
            e.data = Some(json!({"team": "red", "n": 3}));
        }),
        with(s("p2", 20.0), |e| e.name = Some("Al".into())),
        with(s("p3", 20.0), |e| {
            e.name = Some("Al Al".into());
            e.data = Some(json!({"team": "Red Sox"}));
        }),
        with(s("p4", 5.0), |e| e.name = Some("José Ángel O'Brien".into())),
        with(s("p5", 7.0), |e| {
            e.name = Some("Alice Jones".into());
            e.data = Some(json!({"team": "blue", "name": "red"}));
        }),
        s("alvin99", 1.0),
        with(s("p7", 15.0), |e| e.name = Some("王小明".into())),
        with(s("p8", 15.0), |e| {
            e.name = Some("jean-luc Picard".into());
            e.data = Some(json!({"team": true}));
        }),
        with(s("p9", f64::INFINITY), |e| e.name = Some("ALI ali".into())),
        with(s("p10", -3.0), |e| e.name = Some("---".into())),
    ];
    l.add("submit people", b.submit("people", &people).await);
    search_all(b, l, "people").await;
    l.add("search missing", b.search("nope", "al", 25, 0, false).await);
    l.add(
        "search limit too big",
        b.search("people", "al", 100_000, 0, false).await,
    );
    let long = "x".repeat(65);
    l.add(
        "search long word",
        b.search("people", &long, 25, 0, false).await,
    );
    let huge = "a ".repeat(1500);
    l.add(
        "search long query",
        b.search("people", &huge, 25, 0, false).await,
    );

    // Renames, data changes, score moves, name cleared (the id is searched).
    l.add(
        "rename p2",
        b.submit_one(
            "people",
            &with(s("p2", 30.0), |e| e.name = Some("Bob Al".into())),
        )
        .await,
    );
    l.add(
        "set_data p5",
        b.set_data("people", "p5", None, Some(json!({"team": "red"})))
            .await,
    );
    l.add(
        "set_data p4",
        b.set_data("people", "p4", Some(String::new()), None).await,
    );
    l.add(
        "data only p3",
        b.submit_one(
            "people",
            &with(s("p3", 2.0), |e| e.data = Some(json!({"x": 1}))),
        )
        .await,
    );
    l.add(
        "incr p1",
        b.submit_one(
            "people",
            &with(s("p1", 100.0), |e| e.op = Some("incr".into())),
        )
        .await,
    );
    search_all(b, l, "people").await;

    // Removals and capped evictions leave the index.
    l.add("remove p9", b.remove("people", &["p9".into()]).await);
    let more: Vec<SubmitIn> = (0..6)
        .map(|i| {
            with(s(&format!("q{i}"), 50.0 + i as f64), |e| {
                e.name = Some(format!("Alma {i}"))
            })
        })
        .collect();
    l.add("evicting", b.submit("people", &more).await);
    search_all(b, l, "people").await;
    l.add("remove by rank", b.remove_rank_range("people", 1, 2).await);
    l.add(
        "remove by score",
        b.remove_score_range("people", range(Some(0.0), Some(12.0), false, false))
            .await,
    );
    search_all(b, l, "people").await;

    // Other search fields re-index in place; none disables search.
    l.add(
        "fields team",
        b.board_put(
            "people",
            &json!({"search_fields": ["team"], "order": "asc"}),
        )
        .await,
    );
    search_all(b, l, "people").await;
    l.add(
        "fields back",
        b.board_put(
            "people",
            &json!({"search_fields": ["team", "name"], "max_members": 12}),
        )
        .await,
    );
    search_all(b, l, "people").await;

    // Merge results are searched by id; an archive keeps its index and the
    // reset board starts with none.
    l.add(
        "merge people",
        b.combine(
            "people",
            &CombineIn {
                sources: vec!["people".into(), "game".into()],
                weights: None,
                aggregate: None,
            },
            false,
        )
        .await,
    );
    search_all(b, l, "people").await;
    l.add("refill", b.submit("people", &people).await);
    l.add("reset people", b.reset("people").await);
    search_all(b, l, "people").await;
    search_all(b, l, "people@2026-11-21T12:00:00Z").await;
    l.add(
        "fields none",
        b.board_put("people", &json!({"search_fields": []})).await,
    );
    l.add(
        "search disabled",
        b.search("people", "al", 25, 0, false).await,
    );
    l.add("delete people", b.board_delete("people").await);
    l.add(
        "search deleted",
        b.search("people", "al", 25, 0, false).await,
    );

    // Random names from a few overlapping syllables: repeated words,
    // prefixes of each other, exact and prefix tokens, both orders.
    let syll = [
        "al", "ali", "alv", "bo", "bob", "jo", "jos", "an", "ann", "é",
    ];
    let mut rng = SmallRng::seed_from_u64(11);
    for (board, order) in [("srand-desc", "desc"), ("srand-asc", "asc")] {
        l.add(
            "create srand",
            b.board_create(board, &json!({"order": order, "ranking": "competition"}))
                .await,
        );
        let batch: Vec<SubmitIn> = (0..300)
            .map(|i| {
                let n = rng.random_range(1..4);
                let name: Vec<&str> = (0..n)
                    .map(|_| syll[rng.random_range(0..syll.len())])
                    .collect();
                with(s(&format!("m{i}"), rng.random_range(0..20) as f64), |e| {
                    e.name = Some(name.join(" "))
                })
            })
            .collect();
        l.add("submit srand", b.submit(board, &batch).await);
        for _ in 0..150 {
            let n = rng.random_range(1..4);
            let q: Vec<String> = (0..n)
                .map(|_| {
                    let w = syll[rng.random_range(0..syll.len())];
                    match rng.random_range(0..4) {
                        0 => format!("{w}*"),
                        1 => format!("\"{w}\""),
                        _ => w.to_string(),
                    }
                })
                .collect();
            let q = q.join(" ");
            l.add(
                &format!("srand {q:?}"),
                b.search(board, &q, 5, rng.random_range(0..3), false).await,
            );
        }
    }
}

/// The search index leaks nothing: every member of a prefix set is on its
/// board (a stale entry would be invisible to queries, which intersect
/// with the board, but would hold memory for good), no search left a
/// scratch set, and a deleted board left no key behind.
/// An import's native ZADD writes `{B}:zw`, which exists only inside its
/// MULTI/EXEC (see `zadd_open` in podium.lua).
fn no_import_side_keys(port: u16) {
    let side = redis_cli(port, &["KEYS", "*:zw"]);
    assert!(side.trim().is_empty(), "import side keys left: {side}");
}

fn search_index_is_clean(port: u16, gone: &[&str]) {
    const STALE: &str = r"
        local bad, n = {}, 0
        for _, kind in ipairs({'w', 'x'}) do
          for _, k in ipairs(redis.call('KEYS', '*:' .. kind .. ':*')) do
            n = n + 1
            local z = string.match(k, '^(.*}):' .. kind .. ':') .. ':z'
            for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do
              if not redis.call('ZSCORE', z, m) then bad[#bad + 1] = k .. ' ' .. m end
            end
          end
        end
        bad[#bad + 1] = 'checked ' .. n
        return bad
    ";
    let out = redis_cli(port, &["EVAL", STALE, "0"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "stale prefix-set entries:\n{out}");
    assert!(
        !lines[0].ends_with("checked 0"),
        "no prefix set at all: {out}"
    );
    // A search's scratch sets (`{B}:q:<i>`) live only inside its script run.
    let scratch = redis_cli(port, &["KEYS", "*:q:*"]);
    assert!(scratch.trim().is_empty(), "search scratch left: {scratch}");
    no_import_side_keys(port);
    for gone in gone {
        let keys = redis_cli(port, &["KEYS", gone]);
        assert!(keys.trim().is_empty(), "{gone} left: {keys}");
    }
}

fn compare(name: &str, want: &[String], got: &[String]) {
    assert_eq!(want.len(), got.len(), "{name}: different number of answers");
    let diffs: Vec<String> = want
        .iter()
        .zip(got)
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("embedded: {w}\n{name:>8}: {g}"))
        .collect();
    assert!(
        diffs.is_empty(),
        "{} of {} answers differ on {name}:\n{}",
        diffs.len(),
        want.len(),
        diffs.join("\n\n")
    );
}

// ------------------------------------------------------- scheduled resets

/// A backend with its reset scheduler's entry point (not part of the
/// `Backend` trait: the server drives it), on a clock the test moves.
enum Sched {
    Embedded(EmbeddedBackend),
    Redis(RedisBackend),
}

impl Sched {
    fn backend(&self) -> &dyn Backend {
        match self {
            Sched::Embedded(b) => b,
            Sched::Redis(b) => b,
        }
    }

    async fn due(&self) -> Result<Vec<podium_core::api::ResetOut>, ApiError> {
        match self {
            Sched::Embedded(b) => b.service().run_due_resets().await,
            Sched::Redis(b) => b.run_due_resets().await,
        }
    }
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, sec: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(y, mo, d, h, mi, sec).unwrap()
}

/// Boards with every kind of schedule through period boundaries, manual
/// resets, reconfigurations and jumps of several periods; after each step
/// the scheduler runs and the boards, archives and searches are read.
async fn schedule_scenario(e: &Sched, clock: &ManualClock) -> Vec<String> {
    let mut log = Log::default();
    let l = &mut log;
    let b = e.backend();
    // Friday 2026-11-20, a minute before midnight.
    clock.set(at(2026, 11, 20, 23, 59, 0));
    for (name, cfg) in [
        ("daily", json!({"reset": "daily", "keep_archives": 2})),
        ("weekly", json!({"reset": "weekly", "order": "asc"})),
        (
            "five",
            json!({"reset": "*/5 * * * *", "keep_archives": 3, "ranking": "dense"}),
        ),
        (
            "monthly",
            json!({"reset": "monthly", "search_fields": ["name", "team"]}),
        ),
        ("secs", json!({"reset": "30 * * * * *"})),
        ("plain", json!({})),
        ("bad", json!({"reset": "61 * * * *"})),
    ] {
        l.add(&format!("create {name}"), b.board_create(name, &cfg).await);
    }
    let boards = ["daily", "weekly", "five", "monthly", "secs", "plain"];
    let fill = |round: usize| -> Vec<SubmitIn> {
        (0..6)
            .map(|i| {
                with(s(&format!("m{round}-{i}"), (i % 3) as f64), |e| {
                    e.name = Some(format!("Alma Al{i} round{round}"));
                    e.data = Some(json!({"team": format!("al{}", i % 2)}));
                })
            })
            .collect()
    };
    async fn look(b: &dyn Backend, l: &mut Log) {
        l.add("boards", b.boards().await);
        for name in b
            .boards()
            .await
            .unwrap()
            .boards
            .iter()
            .map(|x| x.board.clone())
        {
            l.add(&format!("info {name}"), b.board_info(&name).await);
            l.add(
                &format!("top {name}"),
                b.top(&name, None, Some(4), true).await,
            );
            for q in ["al* al", "alma", "round1", "al0"] {
                l.add(
                    &format!("search {name} {q}"),
                    b.search(&name, q, 3, 0, false).await,
                );
            }
        }
    }
    for name in boards {
        l.add(&format!("fill {name}"), b.submit(name, &fill(0)).await);
    }
    l.add("due before any boundary", e.due().await);
    look(b, l).await;

    // Midnight: daily and the five-minute cron fall due, and `secs`.
    clock.set(at(2026, 11, 21, 0, 0, 0));
    l.add("due at midnight", e.due().await);
    l.add("due again", e.due().await);
    look(b, l).await;
    l.add(
        "write archive",
        b.submit_one("daily@2026-11-20", &s("x", 1.0)).await,
    );
    l.add("reset archive", b.reset("daily@2026-11-20").await);
    for name in boards {
        l.add(&format!("refill {name}"), b.submit(name, &fill(1)).await);
    }
    // A manual reset archives the period the board is in; the scheduled
    // one at its end then takes the next free name.
    clock.set(at(2026, 11, 21, 12, 0, 0));
    l.add("manual daily", b.reset("daily").await);
    l.add("manual plain", b.reset("plain").await);
    l.add("due noon", e.due().await);
    l.add("fill daily", b.submit("daily", &fill(2)).await);
    clock.set(at(2026, 11, 22, 0, 0, 1));
    l.add("due next day", e.due().await);
    look(b, l).await;
    // Reconfigured: a kept schedule keeps its period; dropping it drops
    // the period; a new one starts at the current period.
    l.add(
        "daily to weekly",
        b.board_put("daily", &json!({"reset": "weekly", "keep_archives": 2}))
            .await,
    );
    l.add(
        "monthly to never",
        b.board_put("monthly", &json!({"search_fields": ["name", "team"]}))
            .await,
    );
    l.add(
        "plain to monthly",
        b.board_put("plain", &json!({"reset": "monthly"})).await,
    );
    l.add("fill daily", b.submit("daily", &fill(3)).await);
    l.add("fill plain", b.submit("plain", &fill(3)).await);
    clock.set(at(2026, 11, 22, 18, 0, 0));
    l.add("due sunday", e.due().await);
    // Several periods at once: one archive, named after the period left.
    clock.set(at(2027, 1, 3, 10, 7, 45));
    l.add("due in january", e.due().await);
    look(b, l).await;
    l.add("delete weekly", b.board_delete("weekly").await);
    for name in ["daily", "five", "secs"] {
        l.add(&format!("fill {name}"), b.submit(name, &fill(4)).await);
    }
    clock.set(at(2027, 2, 1, 0, 0, 0));
    l.add("due in february", e.due().await);
    look(b, l).await;
    log.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_resets_answer_the_same_on_embedded_single_redis_and_cluster() {
    let c = clock();
    let want = schedule_scenario(
        &Sched::Embedded(EmbeddedBackend::new(Arc::new(
            Service::in_memory().with_clock(c.clone()),
        ))),
        &c,
    )
    .await;
    assert!(want.len() > 200, "the scenario covers {} calls", want.len());
    if let Some(path) = std::env::var_os("PODIUM_SCHEDULE_DUMP") {
        std::fs::write(path, want.join("\n")).unwrap();
    }
    let single = Redis::single(false);
    let c = clock();
    let rb = RedisBackend::connect(&single.url())
        .await
        .unwrap()
        .with_clock(c.clone());
    compare(
        "redis",
        &want,
        &schedule_scenario(&Sched::Redis(rb), &c).await,
    );
    search_index_is_clean(single.nodes[0].port, &["{weekly}:*"]);
    let cluster = Redis::cluster(false);
    let c = clock();
    let cb = RedisBackend::connect(&cluster.url())
        .await
        .unwrap()
        .with_clock(c.clone());
    compare(
        "cluster",
        &want,
        &schedule_scenario(&Sched::Redis(cb), &c).await,
    );
    eprintln!(
        "{} answers identical on embedded, redis and cluster",
        want.len()
    );
}

/// Several stateless nodes share one Redis, and each runs the scheduler:
/// each period is archived once, whichever node gets there first, and no
/// member is lost or archived twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_racing_for_a_due_reset_make_one_archive() {
    let single = Redis::single(false);
    let cluster = Redis::cluster(false);
    for url in [single.url(), cluster.url()] {
        let c = clock();
        c.set(at(2026, 11, 20, 12, 0, 0));
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(
                RedisBackend::connect(&url)
                    .await
                    .unwrap()
                    .with_clock(c.clone()),
            );
        }
        nodes[0]
            .board_create("race", &json!({"reset": "daily"}))
            .await
            .unwrap();
        for day in 0..6u32 {
            let batch: Vec<SubmitIn> = (0..500)
                .map(|i| {
                    with(s(&format!("d{day}-{i}"), i as f64), |e| {
                        e.name = Some(format!("Player {i}"))
                    })
                })
                .collect();
            nodes[(day % 3) as usize]
                .submit("race", &batch)
                .await
                .unwrap();
            c.advance(chrono::Duration::days(1));
            let runs =
                futures_util::future::join_all(nodes.iter().map(|n| n.run_due_resets())).await;
            let made: Vec<_> = runs.into_iter().flat_map(|r| r.unwrap()).collect();
            let label = (at(2026, 11, 20, 0, 0, 0) + chrono::Duration::days(day.into()))
                .format("%Y-%m-%d")
                .to_string();
            assert_eq!(made.len(), 1, "{url} day {day}: {made:?}");
            assert_eq!(made[0].archive, format!("race@{label}"), "{url}");
            assert_eq!(made[0].archived, 500, "{url}");
            let archive = nodes[1].board_info(&made[0].archive).await.unwrap();
            assert_eq!(archive.members, 500, "{url}");
            assert!(archive.read_only);
            let live = nodes[2].board_info("race").await.unwrap();
            assert_eq!(live.members, 0, "{url}");
            let hits = nodes[0]
                .search(&made[0].archive, "player 499", 5, 0, false)
                .await
                .unwrap();
            assert_eq!(hits.total, 1, "{url}");
            // Every node sees the period done.
            for n in &nodes {
                assert!(n.run_due_resets().await.unwrap().is_empty(), "{url}");
            }
        }
        let archives = nodes[0]
            .boards()
            .await
            .unwrap()
            .boards
            .into_iter()
            .filter(|b| b.board.starts_with("race@"))
            .count();
        assert_eq!(archives, 6, "{url}");
    }
}

/// A scheduled reset that one node took and has not finished (it stopped
/// there, or is still copying) is finished by another node's scheduler
/// run, which names its archive and so is the one to report it: each
/// period's archive is reported by exactly one node, on a single Redis
/// and on a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_found_staged_is_reported_by_the_node_that_names_it() {
    let single = Redis::single(false);
    let cluster = Redis::cluster(false);
    for url in [single.url(), cluster.url()] {
        let c = clock();
        c.set(at(2026, 11, 20, 12, 0, 0));
        let a = RedisBackend::connect(&url)
            .await
            .unwrap()
            .with_clock(c.clone());
        let b = RedisBackend::connect(&url)
            .await
            .unwrap()
            .with_clock(c.clone());
        a.board_create("staged", &json!({"reset": "daily"}))
            .await
            .unwrap();
        let batch: Vec<SubmitIn> = (0..100).map(|i| s(&format!("m{i}"), i as f64)).collect();
        a.submit("staged", &batch).await.unwrap();
        c.advance(chrono::Duration::days(1));
        // b reads the board's period, a takes the reset, b goes on: b's
        // take finds a's reset staged and finishes it.
        let seen = b.scheduled_states().await.unwrap();
        a.take_due_reset("staged").await.unwrap();
        let made = b.run_resets_seen(seen).await;
        assert_eq!(made.len(), 1, "{url}: {made:?}");
        assert_eq!(made[0].archive, "staged@2026-11-20", "{url}");
        assert_eq!(made[0].archived, 100, "{url}");
        let archive = a.board_info("staged@2026-11-20").await.unwrap();
        assert_eq!((archive.members, archive.read_only), (100, true), "{url}");
        assert_eq!(a.board_info("staged").await.unwrap().members, 0, "{url}");
        assert!(a.run_due_resets().await.unwrap().is_empty(), "{url}");
    }
}

/// The scheduler task the server starts runs the resets by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reset_scheduler_task_archives_a_due_period() {
    let single = Redis::single(false);
    let c = clock();
    c.set(at(2026, 11, 20, 23, 0, 0));
    let rb = Arc::new(
        RedisBackend::connect(&single.url())
            .await
            .unwrap()
            .with_clock(c.clone()),
    );
    rb.board_create("auto", &json!({"reset": "daily"}))
        .await
        .unwrap();
    rb.submit_one("auto", &s("a", 1.0)).await.unwrap();
    let task = podium_redis::spawn_reset_scheduler(rb.clone());
    c.set(at(2026, 11, 21, 0, 0, 0));
    let t = Instant::now();
    while rb.board_info("auto@2026-11-20").await.is_err() {
        assert!(t.elapsed() < Duration::from_secs(30), "no scheduled reset");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    task.abort();
    assert_eq!(rb.board_info("auto@2026-11-20").await.unwrap().members, 1);
    assert_eq!(
        rb.board_info("auto").await.unwrap().period.as_deref(),
        Some("2026-11-21")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_answers_on_embedded_single_redis_and_cluster() {
    let want = scenario(&embedded()).await;
    assert!(want.len() > 500, "the scenario covers {} calls", want.len());
    // For reviewing what the scenario asks and answers.
    if let Some(path) = std::env::var_os("PODIUM_CONFORMANCE_DUMP") {
        std::fs::write(path, want.join("\n")).unwrap();
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    let got = scenario(&rb).await;
    compare("redis", &want, &got);
    search_index_is_clean(single.nodes[0].port, &["{people}:*", "{game}:*"]);
    // Imported plain members have no stored sources; named ones do.
    let stored = |key: &str, m: &str| redis_cli(single.nodes[0].port, &["HEXISTS", key, m]);
    assert_eq!(stored("{imp2}:i", "m150").trim(), "0");
    assert_eq!(stored("{imp2}:i", "m0").trim(), "1");
    assert_eq!(stored("{imp2}:i", "Ann-Lee").trim(), "1");
    assert_eq!(stored("{impm}:i", "m510").trim(), "0");

    let cluster = Redis::cluster(false);
    let cb = redis_backend(&cluster.url()).await;
    let got = scenario(&cb).await;
    compare("cluster", &want, &got);
    eprintln!(
        "{} answers identical on embedded, redis and cluster",
        want.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_cluster_see_each_others_writes() {
    let cluster = Redis::cluster(false);
    let a = RedisBackend::connect(&cluster.url()).await.unwrap();
    let b = RedisBackend::connect(&cluster.url()).await.unwrap();
    let batch: Vec<SubmitIn> = (0..10_000).map(|i| s(&format!("p{i}"), i as f64)).collect();
    let r = a.submit("shared", &batch).await.unwrap();
    assert_eq!(r.len(), 10_000);
    let top = b.top("shared", Some(1), Some(2), false).await.unwrap();
    assert_eq!(top.total, 10_000);
    assert_eq!(top.entries[0].member, "p9999");
    b.submit_one("shared", &s("p0", 1e9)).await.unwrap();
    assert_eq!(a.rank("shared", "p0").await.unwrap().rank, 1);
    let names: Vec<String> = a
        .boards()
        .await
        .unwrap()
        .boards
        .into_iter()
        .map(|x| x.board)
        .collect();
    assert_eq!(names, ["shared"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_refuses_what_it_cannot_honour() {
    let single = Redis::single(false);
    let r = RedisBackend::connect(&single.url()).await.unwrap();
    for cfg in [json!({"tiebreak": "first"}), json!({"tiebreak": "last"})] {
        let e = r.board_create("b", &cfg).await.unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig, "{cfg}: {e}");
        let e = r.board_put("b", &cfg).await.unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig, "{cfg}: {e}");
    }
    assert!(r.boards().await.unwrap().boards.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_redis_is_a_503_and_the_backend_recovers_by_itself() {
    let mut single = Redis::single(false);
    let port = single.nodes[0].port;
    let r = RedisBackend::connect(&single.url()).await.unwrap();
    r.submit_one("b", &s("a", 1.0)).await.unwrap();
    single.nodes[0].kill();
    let t = Instant::now();
    let e = r.top("b", None, None, false).await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    eprintln!("503 after {:?}: {e}", t.elapsed());
    assert_eq!(e.code.status(), 503);
    let e = r.submit_one("b", &s("a", 2.0)).await.unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    // A new server on the same port (empty: no persistence in this test).
    single.nodes[0].spawn();
    wait_until("redis back", || redis_cli(port, &["PING"]).contains("PONG"));
    let t = Instant::now();
    loop {
        match r.submit_one("b", &s("a", 3.0)).await {
            Ok(out) => {
                assert_eq!(out.score.map(|x| x.0), Some(3.0));
                eprintln!("recovered {:?} after the restart", t.elapsed());
                break;
            }
            Err(e) => {
                assert_eq!(e.code, Code::StorageUnavailable, "{e}");
                assert!(t.elapsed() < Duration::from_secs(20), "no recovery: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert_eq!(r.rank("b", "a").await.unwrap().rank, 1);
}

/// Every node losing podium's function library (a Redis restarted without
/// its data, a `FUNCTION FLUSH`, a cluster node given a slot without it):
/// the next call of any kind (a read through the `no-writes` function, a
/// write, an import, a search) loads it again and answers as before, on a
/// single Redis and on every master of a cluster, more than once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_function_library_is_loaded_again() {
    for redis in [Redis::single(false), Redis::cluster(false)] {
        let r = RedisBackend::connect(&redis.url()).await.unwrap();
        let ports: Vec<u16> = redis.nodes.iter().map(|n| n.port).collect();
        let loaded = |port: u16| redis_cli(port, &["FUNCTION", "LIST"]).contains("podium_");
        assert!(ports.iter().all(|&p| loaded(p)), "loaded at connect");
        let flush = || {
            for &p in &ports {
                assert!(redis_cli(p, &["FUNCTION", "FLUSH"]).contains("OK"));
                assert!(!loaded(p));
            }
        };
        // Boards in several slots: on the cluster, on several masters.
        let boards = ["alpha", "beta", "gamma", "delta"];
        for b in boards {
            r.submit_one(b, &s("a", 1.0)).await.unwrap();
        }
        for b in boards {
            flush();
            let top = r.top(b, None, None, false).await.unwrap();
            assert_eq!(top.total, 1, "{b}");
            assert!(ports.iter().all(|&p| loaded(p)), "reloaded everywhere");
            flush();
            r.submit_one(b, &s("b", 2.0)).await.unwrap();
            flush();
            r.import(b, &[s("c", 3.0), s("d", 4.0)]).await.unwrap();
            flush();
            let hits = r.search(b, "c", 10, 0, false).await.unwrap();
            assert_eq!(hits.total, 1, "{b}");
            flush();
            let e = r.entry(b, "d", None).await.unwrap();
            assert_eq!((e.entry.rank, e.total), (1, 4), "{b}");
            // An import whose guards could not run (the library gone)
            // applied nothing by itself, then applied once, when retried.
            flush();
            r.import(b, &[s("e", 5.0), s("a", 0.5)]).await.unwrap();
            let top = r.top(b, None, None, false).await.unwrap();
            let got: Vec<(String, f64)> = top
                .entries
                .iter()
                .map(|e| (e.member.clone(), e.score.0))
                .collect();
            let want = [("e", 5.0), ("d", 4.0), ("c", 3.0), ("b", 2.0), ("a", 0.5)];
            let want: Vec<(String, f64)> = want.iter().map(|(m, x)| (m.to_string(), *x)).collect();
            assert_eq!(got, want, "{b}");
        }
        for &p in &ports {
            no_import_side_keys(p);
        }
    }
}

/// A reset on Redis that stopped half-way (podium killed or Redis lost
/// during the copy into the archive) is finished by the board's next
/// reset, which then makes its own: the stopped reset's archive holds the
/// whole content it took (names, data, dense ranks, search), nothing is
/// archived twice, and no staging key is left. Stopped after its first
/// step, after creating the archive, with part of the content copied,
/// with all of it copied; the answers must be the embedded engine's,
/// whose reset cannot stop half-way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_stopped_half_way_is_finished_by_the_next() {
    async fn fill(b: &dyn Backend, board: &str, from: usize, to: usize) -> String {
        let batch: Vec<SubmitIn> = (from..to)
            .map(|i| {
                with(s(&format!("p{i}"), (i % 7) as f64), |e| {
                    if i % 2 == 0 {
                        e.name = Some(format!("Player {i}"));
                    }
                    if i % 3 == 0 {
                        e.data = Some(json!({"lvl": i}));
                    }
                })
            })
            .collect();
        format!("{:?}", b.submit(board, &batch).await)
    }
    async fn check(b: &dyn Backend, l: &mut Log, board: &str) {
        let archive = format!("{board}@2026-11-21T12:00:00Z");
        let members: Vec<String> = (0..35).map(|i| format!("p{i}")).collect();
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        for name in [board.to_string(), archive.clone(), format!("{archive}.2")] {
            read_all(b, l, &name, &members).await;
            l.add(
                "search player",
                b.search(&name, "player", 50, 0, true).await,
            );
            l.add("search p1", b.search(&name, "p1", 50, 0, false).await);
        }
        let mut boards = b.boards().await.unwrap().boards;
        boards.retain(|x| x.board.starts_with(board));
        let names: Vec<(String, u64)> = boards.into_iter().map(|x| (x.board, x.members)).collect();
        l.add("boards", Ok::<_, ApiError>(names));
    }
    let cases = [None, Some(0), Some(12), Some(30)];
    let mut want = Log::default();
    let e = embedded();
    for i in 0..cases.len() {
        let board = format!("half{i}");
        e.board_create(&board, &json!({"ranking": "dense"}))
            .await
            .unwrap();
        fill(&e, &board, 0, 30).await;
        e.reset(&board).await.unwrap();
        fill(&e, &board, 30, 35).await;
        want.add("reset", e.reset(&board).await);
        fill(&e, &board, 0, 3).await;
        check(&e, &mut want, &board).await;
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    let mut got = Log::default();
    for (i, copied) in cases.into_iter().enumerate() {
        let board = format!("half{i}");
        rb.board_create(&board, &json!({"ranking": "dense"}))
            .await
            .unwrap();
        fill(&rb, &board, 0, 30).await;
        rb.reset_stopped_half_way(&board, copied).await.unwrap();
        let staged = redis_cli(single.nodes[0].port, &["KEYS", &format!("{{{board}}}:s*")]);
        assert!(!staged.trim().is_empty(), "case {copied:?}: nothing staged");
        // Writes go on to the live board meanwhile.
        fill(&rb, &board, 30, 35).await;
        got.add("reset", rb.reset(&board).await);
        fill(&rb, &board, 0, 3).await;
        check(&rb, &mut got, &board).await;
        let left = redis_cli(single.nodes[0].port, &["KEYS", &format!("{{{board}}}:s*")]);
        assert!(
            left.trim().is_empty(),
            "case {copied:?}: staging left: {left}"
        );
    }
    compare("redis", &want.0, &got.0);
}

/// A board's search sets are built (chunk by chunk, on its first search)
/// while another task renames, removes and adds members: once both are
/// done, every query answers as on the embedded engine given the same
/// writes, and no set holds a member that left. (Which writes land
/// between which chunks varies from run to run; any of them must give
/// these answers.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_sets_built_during_writes_answer_as_embedded() {
    let named = |i: usize, gen: usize| {
        with(s(&format!("u{i}"), (i % 50) as f64), |e| {
            e.name = Some(if gen == 0 {
                format!("al{} bo{}", i % 97, i % 13)
            } else {
                format!("ca{} al{}", i % 31, gen)
            })
        })
    };
    let fill: Vec<SubmitIn> = (0..8000).map(|i| named(i, 0)).collect();
    let mut rng = SmallRng::seed_from_u64(5);
    let writes: Vec<(Vec<SubmitIn>, Vec<String>)> = (0..40)
        .map(|g| {
            let renamed = (0..40)
                .map(|_| named(rng.random_range(0..8000), g + 1))
                .chain((0..10).map(|k| named(8000 + g * 10 + k, g + 1)))
                .collect();
            let gone = (0..10)
                .map(|_| format!("u{}", rng.random_range(0..8000)))
                .collect();
            (renamed, gone)
        })
        .collect();
    let queries = ["al1", "bo1", "ca", "al1 bo", "ca3 al", "al2*", "u1"];

    let e = embedded();
    e.submit("grow", &fill).await.unwrap();
    let mut want = Log::default();
    for (batch, gone) in &writes {
        e.submit("grow", batch).await.unwrap();
        e.remove("grow", gone).await.unwrap();
    }
    for q in queries {
        want.add(q, e.search("grow", q, 30, 0, false).await);
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    for part in fill.chunks(1000) {
        rb.submit("grow", part).await.unwrap();
    }
    let writer = async {
        for (batch, gone) in &writes {
            rb.submit("grow", batch).await.unwrap();
            rb.remove("grow", gone).await.unwrap();
        }
    };
    // The first search builds the sets while the writer runs.
    let (_, first) = tokio::join!(writer, rb.search("grow", "al1", 30, 0, false));
    first.unwrap();
    let mut got = Log::default();
    for q in queries {
        got.add(q, rb.search("grow", q, 30, 0, false).await);
    }
    compare("redis", &want.0, &got.0);
    search_index_is_clean(single.nodes[0].port, &[]);
}

/// The same with a board loaded by `import` (whose members' plain search
/// sources the Redis script does not store, so the build reads them from
/// the sorted set): while the sets are built, another task imports new
/// and existing members, names some, clears names (back to plain
/// sources) and removes some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_sets_built_during_imports_answer_as_embedded() {
    let fill: Vec<SubmitIn> = (0..8000)
        .map(|i| s(&format!("u{i}"), (i % 50) as f64))
        .collect();
    let mut rng = SmallRng::seed_from_u64(9);
    let writes: Vec<(Vec<SubmitIn>, Vec<SubmitIn>, Vec<String>)> = (0..40)
        .map(|g| {
            let imported = (0..40)
                .map(|_| s(&format!("u{}", rng.random_range(0..8000)), g as f64))
                .chain((0..10).map(|k| s(&format!("u{}", 8000 + g * 10 + k), 1.0)))
                .collect();
            let named = (0..20)
                .map(|k| {
                    let i = rng.random_range(0..8000);
                    with(s(&format!("u{i}"), 3.0), |e| {
                        e.name = Some(if k % 4 == 0 {
                            String::new()
                        } else {
                            format!("ca{} al{g}", i % 31)
                        })
                    })
                })
                .collect();
            let gone = (0..10)
                .map(|_| format!("u{}", rng.random_range(0..8000)))
                .collect();
            (imported, named, gone)
        })
        .collect();
    let queries = ["u1", "u12", "u7*", "ca", "al1", "ca3 al", "u80"];

    let e = embedded();
    e.import("grow", &fill).await.unwrap();
    let mut want = Log::default();
    for (imported, named, gone) in &writes {
        e.import("grow", imported).await.unwrap();
        e.submit("grow", named).await.unwrap();
        e.remove("grow", gone).await.unwrap();
    }
    for q in queries {
        want.add(q, e.search("grow", q, 30, 0, false).await);
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    for part in fill.chunks(1000) {
        rb.import("grow", part).await.unwrap();
    }
    let writer = async {
        for (imported, named, gone) in &writes {
            rb.import("grow", imported).await.unwrap();
            rb.submit("grow", named).await.unwrap();
            rb.remove("grow", gone).await.unwrap();
        }
    };
    let (_, first) = tokio::join!(writer, rb.search("grow", "u1", 30, 0, false));
    first.unwrap();
    let mut got = Log::default();
    for q in queries {
        got.add(q, rb.search("grow", q, 30, 0, false).await);
    }
    compare("redis", &want.0, &got.0);
    search_index_is_clean(single.nodes[0].port, &[]);
}

/// One podium node importing plain batches (the native ZADD path while
/// the board has no search sets, the script's indexing `import` once a
/// build has begun) while another node builds the board's search sets
/// on its first search: every member imported before, during or after
/// the build is found, with the embedded engine's answers, on a single
/// Redis and on a cluster, and no side key is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_imports_racing_an_index_build_on_another_node() {
    let fill: Vec<SubmitIn> = (0..20_000)
        .map(|i| s(&format!("u{i}"), (i % 97) as f64))
        .collect();
    let mut rng = SmallRng::seed_from_u64(17);
    let batches: Vec<Vec<SubmitIn>> = (0..60)
        .map(|g| {
            (0..400)
                .map(|_| s(&format!("u{}", rng.random_range(0..20_000)), g as f64))
                .chain((0..100).map(|k| s(&format!("u{}", 20_000 + g * 100 + k), 2.5)))
                .collect()
        })
        .collect();
    let queries = ["u1", "u12", "u2000", "u2599", "u7*", "u19999", "u25"];

    let e = embedded();
    e.import("race", &fill).await.unwrap();
    for b in &batches {
        e.import("race", b).await.unwrap();
    }
    let mut want = Log::default();
    for q in queries {
        for off in [0, 40] {
            want.add(q, e.search("race", q, 25, off, false).await);
        }
    }

    for redis in [Redis::single(false), Redis::cluster(false)] {
        let a = redis_backend(&redis.url()).await;
        let b = redis_backend(&redis.url()).await;
        for part in fill.chunks(1000) {
            a.import("race", part).await.unwrap();
        }
        let importer = async {
            for batch in &batches {
                a.import("race", batch).await.unwrap();
            }
        };
        let (_, first) = tokio::join!(importer, b.search("race", "u1", 25, 0, false));
        first.unwrap();
        let mut got = Log::default();
        for q in queries {
            for off in [0, 40] {
                got.add(q, b.search("race", q, 25, off, false).await);
            }
        }
        compare(&redis.url(), &want.0, &got.0);
        for n in &redis.nodes {
            no_import_side_keys(n.port);
        }
        if redis.nodes.len() == 1 {
            search_index_is_clean(redis.nodes[0].port, &[]);
        }
    }
}

/// A member podium could not have written (byte 0xFF: podium's ids are
/// UTF-8, which never holds it; the script joins a page's strings with
/// that byte) makes the page an error, not a misread page; pages without
/// it still read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_member_byte_is_refused_not_misread() {
    let single = Redis::single(false);
    let r = redis_backend(&single.url()).await;
    r.submit("foreign", &[s("a", 1.0), s("b", 2.0), s("c", 3.0)])
        .await
        .unwrap();
    let add = "redis.call('ZADD', KEYS[1], 2.5, 'x\\255y') return 1";
    assert_eq!(
        redis_cli(single.nodes[0].port, &["EVAL", add, "1", "{foreign}:z"]).trim(),
        "1"
    );
    let e = r.top("foreign", None, None, false).await.unwrap_err();
    assert_eq!(e.code, Code::Internal, "{e}");
    assert!(e.message.contains("0xFF"), "{e}");
    // A page without the foreign member reads as before.
    let top = r.top("foreign", Some(1), Some(1), false).await.unwrap();
    assert_eq!(top.entries[0].member, "c");
    assert_eq!(top.total, 4);
}

// ------------------------------------------------ archives, durable configs

/// Where a scenario's backend keeps its data, so it can be opened again
/// as after a restart: the embedded engine's data directory (a real
/// restart of the store and service), or a Redis that a new podium node
/// connects to.
enum Home {
    Embedded(std::path::PathBuf),
    Redis(String),
}

impl Home {
    async fn open(&self, clock: &Arc<ManualClock>) -> Sched {
        match self {
            Home::Embedded(dir) => {
                let store = podium_engine::Store::new();
                let (storage, aux, report) = podium_store::storage::open(
                    dir,
                    podium_server::settings::FsyncPolicy::Always,
                    &store,
                )
                .unwrap();
                let svc = Service::new(store, Some(storage), aux, report, u64::MAX)
                    .with_clock(clock.clone());
                Sched::Embedded(EmbeddedBackend::new(Arc::new(svc)))
            }
            Home::Redis(url) => Sched::Redis(redis_backend_on(url, clock).await),
        }
    }
}

async fn redis_backend_on(url: &str, clock: &Arc<ManualClock>) -> RedisBackend {
    RedisBackend::connect(url)
        .await
        .unwrap()
        .with_clock(clock.clone())
}

/// Stops a scenario's node: the embedded service closes its log and
/// releases its data directory.
fn stop(node: Sched) {
    if let Sched::Embedded(b) = &node {
        b.service().close().unwrap();
    }
    drop(node);
}

/// Archives are known by their config, never by name: a live `v3@0-live`
/// survives resets of `v3` under `keep_archives`, a writer's `v2@9999` is
/// not taken for `v2`'s newest archive; a dropped schedule stays dropped
/// after a restart and a schedule set later does not archive at once;
/// every config field survives a restart as last set. Each backend checks
/// the outcome itself, and the answers must match the embedded engine's.
async fn archive_scenario(home: &Home) -> Vec<String> {
    let clock = clock();
    let mut log = Log::default();
    let l = &mut log;
    let node = home.open(&clock).await;
    let b = node.backend();
    l.add(
        "create v3",
        b.board_create("v3", &json!({"keep_archives": 1})).await,
    );
    l.add(
        "create v2",
        b.board_create("v2", &json!({"keep_archives": 2})).await,
    );
    l.add(
        "live v3@0-live",
        b.submit_one("v3@0-live", &s("w", 1.0)).await,
    );
    l.add(
        "writer v2@9999",
        b.submit_one("v2@9999", &s("w", 1.0)).await,
    );
    let mut made = Vec::new();
    for i in 0..3 {
        l.add(
            "fill v3",
            b.submit_one("v3", &s(&format!("m{i}"), 1.0)).await,
        );
        l.add("reset v3", b.reset("v3").await);
        l.add(
            "fill v2",
            b.submit_one("v2", &s(&format!("m{i}"), 1.0)).await,
        );
        let r = b.reset("v2").await.unwrap();
        assert_eq!(r.archived, 1);
        made.push(r.archive.clone());
        l.add("reset v2", Ok::<_, ApiError>(r));
    }
    let listed = b.boards().await.unwrap().boards;
    let names: Vec<&str> = listed.iter().map(|x| x.board.as_str()).collect();
    assert!(names.contains(&"v3@0-live"), "{names:?}");
    let v2: Vec<&str> = listed
        .iter()
        .filter(|x| x.archive_of.as_deref() == Some("v2"))
        .map(|x| x.board.as_str())
        .collect();
    assert_eq!(v2, [made[1].as_str(), made[2].as_str()]);
    assert!(names.contains(&"v2@9999"), "{names:?}");
    l.add("boards", Ok::<_, ApiError>(&listed));
    for x in &listed {
        l.add(&format!("info {}", x.board), b.board_info(&x.board).await);
    }
    l.add("write live", b.submit_one("v3@0-live", &s("x", 2.0)).await);
    l.add("write archive", b.submit_one(&made[2], &s("x", 2.0)).await);
    l.add(
        "put archive_of",
        b.board_put("x", &json!({"archive_of": "v2", "archive_seq": 9}))
            .await,
    );

    // A schedule dropped, then the node restarted.
    l.add(
        "create s",
        b.board_create("s", &json!({"reset": "daily"})).await,
    );
    l.add("fill s", b.submit_one("s", &s("a", 1.0)).await);
    l.add(
        "drop schedule",
        b.board_put("s", &json!({"reset": "never"})).await,
    );
    let full = json!({
        "order": "asc", "ranking": "dense", "update": "best",
        "min_score": "-inf", "max_score": 1e9, "max_members": 100,
        "reset": "0 0 * * 1", "keep_archives": 4,
        "search_fields": ["name", "team"], "max_data_bytes": 1024
    });
    let want_full = b.board_put("c", &full).await.unwrap();
    stop(node);
    clock.advance(chrono::Duration::days(3));
    let node = home.open(&clock).await;
    let b = node.backend();
    let info = b.board_info("s").await.unwrap();
    assert_eq!(info.period, None, "a dropped schedule's period came back");
    assert_eq!(info.config["reset"], "never");
    l.add("s after restart", Ok::<_, ApiError>(&info));
    let c = b.board_info("c").await.unwrap();
    assert_eq!(
        (&c.config, &c.period),
        (&want_full.config, &want_full.period)
    );
    l.add("c after restart", Ok::<_, ApiError>(c));
    l.add(
        "set schedule",
        b.board_put("s", &json!({"reset": "daily"})).await,
    );
    // `c`'s weekly period did end meanwhile: only `s` must not reset.
    let due = node.due().await.unwrap();
    assert!(
        !due.iter().any(|r| r.board == "s"),
        "a schedule set later archived at once: {due:?}"
    );
    assert_eq!(b.board_info("s").await.unwrap().members, 1);
    l.add("due", Ok::<_, ApiError>(due));
    let cleared = b.board_put("c", &json!({})).await.unwrap();
    stop(node);
    let node = home.open(&clock).await;
    let b = node.backend();
    let c = b.board_info("c").await.unwrap();
    assert_eq!((&c.config, &c.period), (&cleared.config, &None));
    l.add("c cleared after restart", Ok::<_, ApiError>(c));
    l.add(
        "archive after restart",
        b.board_info(&made[2]).await.map(|i| i.archive_of),
    );
    stop(node);
    log.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_are_known_and_configs_durable_on_embedded_single_redis_and_cluster() {
    let dir = std::env::temp_dir().join(format!("podium-conf-archives-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let want = archive_scenario(&Home::Embedded(dir.clone())).await;
    let _ = std::fs::remove_dir_all(&dir);
    let single = Redis::single(false);
    compare(
        "redis",
        &want,
        &archive_scenario(&Home::Redis(single.url())).await,
    );
    let cluster = Redis::cluster(false);
    compare(
        "cluster",
        &want,
        &archive_scenario(&Home::Redis(cluster.url())).await,
    );
}

/// Archives a Redis holds from before archives recorded whose they are
/// (read-only, named `NAME@LABEL`, no `archive_of` in their JSON) are
/// recognised by name, and `keep_archives` counts them oldest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_archives_from_before_are_recognised() {
    let single = Redis::single(false);
    let c = clock();
    let b = redis_backend_on(&single.url(), &c).await;
    b.board_create("lb", &json!({"keep_archives": 2}))
        .await
        .unwrap();
    let mut made = Vec::new();
    for _ in 0..2 {
        b.submit_one("lb", &s("a", 1.0)).await.unwrap();
        made.push(b.reset("lb").await.unwrap().archive);
    }
    // As a podium from before wrote them.
    let plain = serde_json::to_string(&json!({
        "order": "desc", "ranking": "unique", "tiebreak": "member", "update": "set",
        "min_score": null, "max_score": null, "max_members": null, "reset": "never",
        "keep_archives": 2, "search_fields": ["name"], "max_data_bytes": 4096
    }))
    .unwrap();
    let port = single.nodes[0].port;
    for a in &made {
        redis_cli(port, &["HSET", &format!("{{{a}}}:c"), "json", &plain]);
    }
    let info = b.board_info(&made[0]).await.unwrap();
    assert_eq!(info.archive_of.as_deref(), Some("lb"));
    assert!(info.read_only);
    b.submit_one("lb@live", &s("w", 1.0)).await.unwrap();
    b.submit_one("lb", &s("a", 1.0)).await.unwrap();
    let newest = b.reset("lb").await.unwrap().archive;
    let names: Vec<String> = b
        .boards()
        .await
        .unwrap()
        .boards
        .into_iter()
        .map(|x| x.board)
        .collect();
    assert_eq!(names, ["lb", made[1].as_str(), newest.as_str(), "lb@live"]);
    let info = b.board_info(&newest).await.unwrap();
    assert_eq!(info.config["archive_seq"], 3);
}
