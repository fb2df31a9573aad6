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
use podium_core::ops;
use podium_core::schedule::ManualClock;
use podium_redis::RedisBackend;
use podium_store::service::Service;
use podium_store::EmbeddedBackend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::support;

mod archives;
mod batches;
mod redis_nodes;
mod scenario;
mod schedule;
mod sorted;

use support::redis::{cli as redis_cli, wait_until, Redis};

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

/// Every answer of a scenario, one line per operation.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    fn add<T: serde::Serialize>(&mut self, what: &str, r: Result<T, ApiError>) {
        let line = match r {
            Ok(v) => {
                let mut v = serde_json::to_value(&v).unwrap();
                // Memory use is each engine's own measure (of a board, and
                // of each board of a list).
                fn unmeasured(v: &mut serde_json::Value) {
                    match v {
                        serde_json::Value::Object(o) => {
                            o.remove("heap_bytes");
                            o.values_mut().for_each(unmeasured);
                        }
                        serde_json::Value::Array(a) => a.iter_mut().for_each(unmeasured),
                        _ => {}
                    }
                }
                unmeasured(&mut v);
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
    // As the wire reads them: a whole number is an integer bound.
    let num = |x: f64| {
        if x.fract() == 0.0 && x.abs() < 9e15 {
            podium_core::api::Num::Int(x as i64)
        } else {
            podium_core::api::Num::Float(x)
        }
    };
    RangeBounds {
        min: min.map(num),
        max: max.map(num),
        min_exclusive: min_ex,
        max_exclusive: max_ex,
    }
}

/// Reads that every board of the scenario gets after each phase.
async fn read_all(b: &dyn Backend, log: &mut Log, board: &str, members: &[&str]) {
    for page in [1, 2, 9] {
        log.add(
            &format!("top {board} p{page}"),
            b.top(&ops::Top {
                board: board.to_string(),
                page: Some(page),
                page_size: Some(3),
                with_data: true,
            })
            .await,
        );
    }
    log.add(
        "top default",
        b.top(&ops::Top {
            board: board.to_string(),
            page: None,
            page_size: None,
            with_data: false,
        })
        .await,
    );
    for m in members {
        log.add(
            &format!("entry {m}"),
            b.entry(&ops::GetEntry {
                board: board.to_string(),
                member: m.to_string(),
                page_size: Some(2),
            })
            .await,
        );
        log.add(
            &format!("rank {m}"),
            b.rank(&ops::Rank {
                board: board.to_string(),
                member: m.to_string(),
            })
            .await,
        );
        log.add(
            &format!("around {m}"),
            b.around(&ops::Around {
                board: board.to_string(),
                member: m.to_string(),
                page_size: Some(3),
                with_data: true,
            })
            .await,
        );
        log.add(
            &format!("around4 {m}"),
            b.around(&ops::Around {
                board: board.to_string(),
                member: m.to_string(),
                page_size: Some(4),
                with_data: false,
            })
            .await,
        );
        log.add(
            &format!("pct {m}"),
            b.percentile(&ops::Percentile {
                board: board.to_string(),
                member: m.to_string(),
            })
            .await,
        );
    }
    let mut list: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    list.extend(["nobody".to_string(), members[0].to_string(), "ghost".into()]);
    log.add(
        "ranks",
        b.ranks(&ops::Ranks {
            board: board.to_string(),
            members: list.to_vec(),
            with_data: true,
        })
        .await,
    );
    for p in [0.0, 10.0, 50.0, 99.9, 100.0] {
        log.add(
            &format!("score_at {p}"),
            b.score_at_percentile(&ops::ScoreAtPercentile {
                board: board.to_string(),
                p,
            })
            .await,
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
        log.add(
            &format!("count r{i}"),
            b.count(&ops::Count {
                board: board.to_string(),
                bounds: *r,
            })
            .await,
        );
        for fw in [false, true] {
            for (off, lim) in [(None, None), (Some(1), Some(2)), (Some(50), Some(5))] {
                log.add(
                    &format!("range_by_score r{i} fw={fw} {off:?} {lim:?}"),
                    b.range_by_score(&ops::RangeByScore {
                        board: board.to_string(),
                        bounds: *r,
                        from_worst: fw,
                        offset: off,
                        limit: lim,
                        with_data: true,
                    })
                    .await,
                );
            }
        }
    }
    for (a, z) in [(1, 3), (2, 2), (4, 100), (50, 60)] {
        for fw in [false, true] {
            log.add(
                &format!("range_by_rank {a}..{z} fw={fw}"),
                b.range_by_rank(&ops::RangeByRank {
                    board: board.to_string(),
                    start: a,
                    stop: z,
                    from_worst: fw,
                    with_data: true,
                })
                .await,
            );
        }
    }
    for (pos, lim) in [(0, 2), (2, 100), (100, 5)] {
        log.add(
            &format!("export {pos} {lim}"),
            b.export_chunk(&ops::ExportChunk {
                board: board.to_string(),
                pos,
                limit: lim,
            })
            .await,
        );
    }
    log.add(
        "info",
        b.board_info(&ops::BoardInfo {
            board: board.to_string(),
        })
        .await,
    );
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
            b.search(&ops::Search {
                board: board.to_string(),
                query: q.to_string(),
                limit: Some(25),
                offset: Some(0),
                with_data: true,
            })
            .await,
        );
    }
    for (lim, off) in [(2, 1), (0, 0), (1, 5), (3, 100)] {
        log.add(
            &format!("search {board} al {lim} {off}"),
            b.search(&ops::Search {
                board: board.to_string(),
                query: "al".to_string(),
                limit: Some(lim),
                offset: Some(off),
                with_data: false,
            })
            .await,
        );
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
