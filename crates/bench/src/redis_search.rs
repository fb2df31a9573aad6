//! The `redis-search` harness: player search on the Redis backend, timed
//! through the `Backend` trait as a frontend calls it (so each query is
//! its config read plus the search script, round trips included), against
//! a Redis the caller runs.
//!
//! Loads a board of `members` players named by the search scenario's
//! generator ([`Names`], seeded, so two runs load the same names and
//! scores), then runs each query `rounds` times, one at a time, and prints
//! its total and the median and 90th percentile latency. `skip_load`
//! reuses a board loaded by an earlier run, so two builds can be timed
//! alternately against the same data (each on its own board: the index
//! layout is the build's own).

use std::io::Write;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use podium_core::api::SubmitIn;
use podium_core::backend::Backend;
use podium_core::ops;
use podium_redis::RedisBackend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::report::Record;
use crate::search::Names;

const SCENARIO: &str = "redis-search";
/// The names' and scores' seed: fixed, so boards loaded by different
/// builds hold the same players.
const SEED: u64 = 7;

/// Query shapes: prefix words of every frequency, exact words, words that
/// could share one indexed word (the checked queries before the scored
/// index), and a field restriction.
const QUERIES: &[&str] = &[
    "al* al",
    "al al",
    "a* a",
    "ma* mar",
    "al",
    "a",
    "alma",
    "al* alm",
    "\"al\" al",
    "ka ri",
];

#[derive(Debug, Clone)]
pub struct RedisSearchOptions {
    /// redis://HOST:PORT
    pub url: String,
    pub board: String,
    pub members: u64,
    pub rounds: usize,
    pub skip_load: bool,
}

pub fn run(o: &RedisSearchOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if o.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run_async(o, out))
}

async fn run_async(o: &RedisSearchOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    let b = RedisBackend::connect(&o.url)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    if !o.skip_load {
        let _ = b
            .board_delete(&ops::DeleteBoard {
                board: o.board.clone(),
            })
            .await;
        let names = Names::new(SEED);
        let mut rng = SmallRng::seed_from_u64(SEED);
        let mut name = String::new();
        let t = Instant::now();
        let mut i = 0u64;
        while i < o.members {
            let batch: Vec<SubmitIn> = (i..(i + 1000).min(o.members))
                .map(|k| {
                    names.name(&mut rng, &mut name);
                    let mut e =
                        SubmitIn::new(format!("m{k}"), rng.random_range(0..1_000_000) as f64);
                    e.name = Some(name.clone());
                    e
                })
                .collect();
            i += batch.len() as u64;
            let req = ops::SubmitMany {
                board: o.board.clone(),
                entries: batch,
            };
            b.submit(&req).await.map_err(|e| anyhow!("{e}"))?;
        }
        writeln!(
            out,
            "loaded {} named members into {:?} in {:.1} s",
            o.members,
            o.board,
            t.elapsed().as_secs_f64()
        )?;
    }
    writeln!(
        out,
        "{:<12} {:>8} {:>10} {:>10}",
        "query", "total", "median ms", "p90 ms"
    )?;
    let mut records = Vec::new();
    for q in QUERIES {
        let mut times = Vec::with_capacity(o.rounds);
        let mut total = 0;
        let req = ops::Search {
            board: o.board.clone(),
            query: q.to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        };
        for _ in 0..o.rounds {
            let t = Instant::now();
            let r = b.search(&req).await.map_err(|e| anyhow!("{q}: {e}"))?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            total = r.total;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        writeln!(
            out,
            "{:<12} {:>8} {:>10.2} {:>10.2}",
            q,
            total,
            median,
            times[times.len() * 9 / 10]
        )?;
        records.push(Record {
            scenario: SCENARIO,
            figure: format!("search {q}"),
            unit: "ms".into(),
            podium: Some(median),
            redis: None,
            baseline: None,
            baseline_name: None,
            ratio: None,
            members: Some(o.members),
        });
    }
    Ok(records)
}
