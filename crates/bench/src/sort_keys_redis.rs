//! The `sort-keys` scenario on the Redis backend (`--backend redis`):
//! what a second sort key costs a board kept in Redis, timed through the
//! `Backend` trait as a frontend calls it (each call its script run and
//! round trip), against a redis-server this run starts.
//!
//! Two boards from the same seeded members: a plain 1-key board and a
//! 2-key board (`score` desc float, then `time` asc int) with the same
//! first-key values. Each round loads both (`submit_many` of 1,000
//! entries), then times rank lookups of random members one at a time
//! (`rank`) and reads of a random page of 25 (`top`), the two boards
//! alternating call by call; the boards' load order is reversed every
//! other round. Memory is Redis's own count of the board's keys (`MEMORY
//! USAGE … SAMPLES 0`) a member. Medians of the rounds are reported, and
//! the ratios 2-key over 1-key (a cost multiple, lower is better).

use std::io::Write;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use podium_core::api::{NamedScores, Num, Score, SubmitIn};
use podium_core::backend::Backend;
use podium_core::ops;
use podium_redis::RedisBackend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine::random_score;
use crate::net::{Fsync, RedisServer};
use crate::report::{self, Record, Table};

pub const SCENARIO: &str = "sort-keys-redis";
/// Entries per `submit_many` call while loading.
const BATCH: usize = 1000;

#[derive(Debug, Clone)]
pub struct SortKeysRedisOptions {
    pub members: u64,
    /// Rank lookups and page reads per board and round.
    pub ops: usize,
    pub rounds: usize,
    pub seed: u64,
    /// The `redis-server` program.
    pub redis_server: String,
    pub progress: bool,
}

pub fn run(o: &SortKeysRedisOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if o.rounds == 0 || o.members == 0 {
        bail!("--rounds and --members must be at least 1");
    }
    let Some(redis) = RedisServer::start(&o.redis_server, Fsync::EverySec)? else {
        bail!("{} is not installed", o.redis_server);
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run_async(o, &redis, out))
}

/// The rounds' figures of one board.
#[derive(Default)]
struct Samples {
    load_s: Vec<f64>,
    rank_us: Vec<f64>,
    page_us: Vec<f64>,
    bytes: Vec<f64>,
}

fn two_keys() -> serde_json::Value {
    serde_json::json!({"sort": [
        {"key": "score", "order": "desc", "type": "float"},
        {"key": "time", "order": "asc", "type": "int"}]})
}

/// Member `i`'s entry on a board (`keyed`: with its `time` too).
fn entry(i: u64, score: f64, time: i64, keyed: bool) -> SubmitIn {
    let mut e = SubmitIn::new(format!("m{i}"), score);
    if keyed {
        e.score = Score::ABSENT;
        e.scores = Some(NamedScores(vec![
            ("score".into(), Num::Float(score)),
            ("time".into(), Num::Int(time)),
        ]));
    }
    e
}

async fn load(b: &RedisBackend, board: &str, keyed: bool, data: &[(f64, i64)]) -> Result<f64> {
    let _ = b
        .board_delete(&ops::DeleteBoard {
            board: board.into(),
        })
        .await;
    let config = if keyed {
        two_keys()
    } else {
        serde_json::json!({})
    };
    b.board_create(&ops::CreateBoard {
        board: board.into(),
        config,
    })
    .await
    .map_err(|e| anyhow!("{e:?}"))?;
    let start = Instant::now();
    for (c, chunk) in data.chunks(BATCH).enumerate() {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(k, &(s, t))| entry((c * BATCH + k) as u64, s, t, keyed))
            .collect();
        b.submit(&ops::SubmitMany {
            board: board.into(),
            entries,
        })
        .await
        .map_err(|e| anyhow!("{e:?}"))?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Bytes a member of the board's keys, as Redis counts them.
fn memory(redis: &RedisServer, board: &str, n: u64) -> Result<f64> {
    let client = redis::Client::open(redis.url())?;
    let mut conn = client.get_connection()?;
    let mut total = 0u64;
    for kind in ["z", "t", "n", "d", "i"] {
        let used: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(format!("{{{board}}}:{kind}"))
            .arg("SAMPLES")
            .arg(0)
            .query(&mut conn)?;
        total += used.unwrap_or(0);
    }
    Ok(total as f64 / n as f64)
}

async fn run_async(
    o: &SortKeysRedisOptions,
    redis: &RedisServer,
    out: &mut dyn Write,
) -> Result<Vec<Record>> {
    let b = RedisBackend::connect(&redis.url())
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let mut rng = SmallRng::seed_from_u64(o.seed);
    let data: Vec<(f64, i64)> = (0..o.members)
        .map(|_| (random_score(&mut rng), rng.random_range(0..3_600_000)))
        .collect();
    let boards = [("plain", false), ("keyed", true)];
    let mut s: [Samples; 2] = Default::default();
    for round in 0..o.rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            vec![0, 1]
        } else {
            vec![1, 0]
        };
        for &k in &order {
            let (board, keyed) = boards[k];
            s[k].load_s.push(load(&b, board, keyed, &data).await?);
            s[k].bytes.push(memory(redis, board, o.members)?);
            if o.progress {
                eprintln!(
                    "round {round}: {board} loaded in {:.2} s",
                    s[k].load_s.last().unwrap_or(&0.0)
                );
            }
        }
        // Lookups and pages alternate call by call between the boards.
        let mut rank_ns = [0f64; 2];
        let mut page_ns = [0f64; 2];
        let pages = o.members.div_ceil(25);
        for _ in 0..o.ops {
            let m = format!("m{}", rng.random_range(0..o.members));
            let page = rng.random_range(1..=pages);
            for &k in &order {
                let board = boards[k].0.to_string();
                let t = Instant::now();
                let r = b
                    .rank(&ops::Rank {
                        board: board.clone(),
                        member: m.clone(),
                    })
                    .await
                    .map_err(|e| anyhow!("{e:?}"))?;
                rank_ns[k] += t.elapsed().as_nanos() as f64;
                std::hint::black_box(r);
                let t = Instant::now();
                let p = b
                    .top(&ops::Top {
                        board,
                        page: Some(page),
                        page_size: Some(25),
                        with_data: false,
                    })
                    .await
                    .map_err(|e| anyhow!("{e:?}"))?;
                page_ns[k] += t.elapsed().as_nanos() as f64;
                std::hint::black_box(p);
            }
        }
        for k in 0..2 {
            s[k].rank_us.push(rank_ns[k] / o.ops as f64 / 1e3);
            s[k].page_us.push(page_ns[k] / o.ops as f64 / 1e3);
        }
    }
    let mut table = Table::new(["figure", "unit", "1-key", "2-key", "2-key/1-key"]);
    let mut records = Vec::new();
    type Pick = fn(&Samples) -> &[f64];
    let figures: [(&str, &str, &str, Pick); 4] = [
        ("load_s", "load, submit_many of 1,000", "s", |x| &x.load_s),
        ("rank_lookup_us", "rank lookup by member", "µs", |x| {
            &x.rank_us
        }),
        ("page_read_us", "read of a random page of 25", "µs", |x| {
            &x.page_us
        }),
        ("memory", "Redis memory of the board", "B/member", |x| {
            &x.bytes
        }),
    ];
    for (key, label, unit, pick) in figures {
        let median = |v: &[f64]| crate::sort_keys::median(v).unwrap_or(f64::NAN);
        let (a, b2) = (median(pick(&s[0])), median(pick(&s[1])));
        let ratio = b2 / a;
        table.row([
            label.to_string(),
            unit.to_string(),
            report::num(Some(a)),
            report::num(Some(b2)),
            report::ratio_cell(Some(ratio)),
        ]);
        records.push(Record {
            scenario: SCENARIO,
            figure: key.to_string(),
            unit: unit.to_string(),
            podium: Some(b2),
            redis: None,
            baseline: Some(a),
            baseline_name: Some("1-key board on the redis backend".into()),
            ratio: Some(ratio),
            members: Some(o.members),
        });
    }
    writeln!(
        out,
        "sort-keys on the redis backend ({}), {} members, {} rounds (medians)",
        redis.version,
        report::thousands(o.members as i128),
        o.rounds
    )?;
    writeln!(out, "{}", table.render())?;
    Ok(records)
}
