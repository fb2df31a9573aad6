//! Times player search on the Redis backend, through the
//! `Backend` trait as a frontend calls it (so each query is its config
//! read plus the search script, round trips included).
//!
//! Loads a board of `--members` players named by the search benchmark's
//! generator (`podium_bench::search::Names`, seeded, so two runs load the
//! same names and scores), then runs each query `--rounds` times, one at a
//! time, and prints its total and the median and 90th percentile latency.
//! `--skip-load` reuses a board loaded by an earlier run, so two builds
//! can be timed alternately against the same data (each on its own board:
//! the index layout is the build's own).
//!
//! ```sh
//! cargo run --release -p podium-server --example redis_search -- \
//!     redis://127.0.0.1:6379 --board names --members 100000 --rounds 41
//! ```

use std::time::Instant;

use anyhow::{bail, Context, Result};
use podium_bench::search::Names;
use podium_core::api::SubmitIn;
use podium_core::backend::Backend;
use podium_redis::RedisBackend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

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

struct Args {
    url: String,
    board: String,
    members: u64,
    rounds: usize,
    skip_load: bool,
}

fn args() -> Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        url: String::new(),
        board: "names".into(),
        members: 100_000,
        rounds: 41,
        skip_load: false,
    };
    while let Some(x) = it.next() {
        match x.as_str() {
            "--board" => a.board = it.next().context("--board NAME")?,
            "--members" => a.members = it.next().context("--members N")?.parse()?,
            "--rounds" => a.rounds = it.next().context("--rounds N")?.parse()?,
            "--skip-load" => a.skip_load = true,
            u if u.starts_with("redis") => a.url = u.to_string(),
            other => bail!("unknown argument {other:?}"),
        }
    }
    if a.url.is_empty() {
        bail!("usage: redis_search redis://host:port [--board NAME] [--members N] [--rounds N] [--skip-load]");
    }
    Ok(a)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let a = args()?;
    let b = RedisBackend::connect(&a.url)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !a.skip_load {
        let _ = b.board_delete(&a.board).await;
        let names = Names::new(7);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut name = String::new();
        let t = Instant::now();
        let mut i = 0u64;
        while i < a.members {
            let batch: Vec<SubmitIn> = (i..(i + 1000).min(a.members))
                .map(|k| {
                    names.name(&mut rng, &mut name);
                    let mut e =
                        SubmitIn::new(format!("m{k}"), rng.random_range(0..1_000_000) as f64);
                    e.name = Some(name.clone());
                    e
                })
                .collect();
            i += batch.len() as u64;
            b.submit(&a.board, &batch)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        println!(
            "loaded {} named members into {:?} in {:.1} s",
            a.members,
            a.board,
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "{:<12} {:>8} {:>10} {:>10}",
        "query", "total", "median ms", "p90 ms"
    );
    for q in QUERIES {
        let mut times = Vec::with_capacity(a.rounds);
        let mut total = 0;
        for _ in 0..a.rounds {
            let t = Instant::now();
            let r = b
                .search(&a.board, q, 25, 0, false)
                .await
                .map_err(|e| anyhow::anyhow!("{q}: {e}"))?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            total = r.total;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{:<12} {:>8} {:>10.2} {:>10.2}",
            q,
            total,
            times[times.len() / 2],
            times[times.len() * 9 / 10]
        );
    }
    Ok(())
}
