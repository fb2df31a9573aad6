//! The `import` scenario (docs/spec.md §7.5): index 10k and 1M named members (the
//! `search` scenario's generated player names) and time how long until they
//! are searchable, beside Redis indexing the same names for autocomplete.
//!
//! podium: the members go into a fresh board through pipelined MessagePack-
//! RPC `import` calls of 10,000 entries, 4 in flight on one connection; then
//! one search (`a`), which builds the board's index. The figure is the time
//! from the first call to that search's answer: imported and searchable.
//!
//! Redis: autocomplete as Redis autocomplete write-ups build it (the
//! Soulmate gem's layout): one sorted set per word prefix
//! (`ac{n}:{prefix}`, every prefix of every word of the name, scored by the
//! member's score, so a prefix's best come first) and the names in one hash
//! (`HSET ac{n}:names`), the commands of 1,000 members to a pipeline, 4
//! pipelines in flight on one connection.
//! Words are podium's own tokeniser's (the same folding and splitting), and
//! the check after the load compares podium's `a` total with `ZCARD ac{n}:a`.

use std::collections::HashSet;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use podium_client::Client;
use podium_engine::search::tokenize;
use redis::aio::MultiplexedConnection;

use crate::load::{self, Counted};
use crate::net::{self, bar, met, Figure, NetOptions, PodiumServer, Window};
use crate::report::{thousands, Better, Record};
use crate::search::{PUBLISHED_LOAD, PUBLISHED_LOAD_10K_SECS};
use crate::search_http::{first_search, named_members};

pub const SCENARIO: &str = "import";
/// Members whose Redis commands share one pipeline.
const REDIS_PIPELINE_MEMBERS: usize = 1_000;

#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub net: NetOptions,
    /// Member counts, one fresh board each.
    pub members: Vec<u64>,
    /// Entries per `import` call.
    pub batch: u64,
    /// Calls (Redis: pipelines) in flight.
    pub depth: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            net: NetOptions::default(),
            members: vec![10_000, 1_000_000],
            batch: 10_000,
            depth: 4,
        }
    }
}

/// podium's times for one member count.
struct PodiumTimes {
    import: Duration,
    first_search: Duration,
    total: Duration,
    a_total: u64,
}

/// Redis's load of one member count.
struct RedisLoad {
    total: Duration,
    zadds: u64,
    keys: u64,
    a_card: u64,
}

pub fn run(opts: &ImportOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.members.is_empty() || opts.members.contains(&0) || opts.batch == 0 {
        bail!("--members needs one or more counts, each at least 1; --batch at least 1");
    }
    writeln!(
        out,
        "\nimport: {} named members until searchable, batches of {}, {} in flight, fsync {}, \
         seed {}",
        opts.members
            .iter()
            .map(|&n| thousands(n as i128))
            .collect::<Vec<_>>()
            .join(" and "),
        thousands(opts.batch as i128),
        opts.depth,
        opts.net.fsync,
        opts.net.seed
    )?;
    let max_n = opts.members.iter().copied().max().unwrap_or(0);
    let (names, scores) = named_members(max_n, opts.net.seed);

    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {}", server.rpc)?;
    out.flush()?;
    let rt = net::runtime(0)?;
    let podium: Vec<PodiumTimes> = rt
        .block_on(async {
            let c = Client::connect(server.rpc).await?;
            let mut times = Vec::new();
            for &n in &opts.members {
                let board = format!("import{n}");
                times.push(podium_load(&c, &board, opts, &names[..n as usize], &scores).await?);
            }
            anyhow::Ok(times)
        })
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    drop(server);

    let redis: Option<Vec<RedisLoad>> = match net::maybe_redis(&opts.net, out)? {
        Some(r) => {
            out.flush()?;
            let url = r.url();
            Some(
                rt.block_on(async {
                    let con = load::redis_connect(&url).await?;
                    let mut loads = Vec::new();
                    for (k, &n) in opts.members.iter().enumerate() {
                        let l = redis_load(&con, n, opts, &names, &scores).await?;
                        if l.a_card != podium[k].a_total {
                            bail!(
                                "Redis's prefix set \"a\" holds {} members, podium's search \
                                 \"a\" found {}: the two indexes differ",
                                l.a_card,
                                podium[k].a_total
                            );
                        }
                        loads.push(l);
                    }
                    anyhow::Ok(loads)
                })
                .context("Redis side")?,
            )
        }
        None => None,
    };

    let mut figures = Vec::new();
    for (k, &n) in opts.members.iter().enumerate() {
        let p = podium[k].total.as_secs_f64();
        let r = redis.as_ref().map(|r| r[k].total.as_secs_f64());
        let mut f = Figure::new(
            format!("import_{n}_s"),
            format!("{} named members, until searchable", thousands(n as i128)),
            "s",
            p,
            r,
            Better::Lower,
        )
        .members(n);
        if n == 10_000 {
            f = f.baseline(PUBLISHED_LOAD_10K_SECS, PUBLISHED_LOAD);
        }
        figures.push(f);
        figures.push(
            Figure::new(
                format!("import_{n}_rate"),
                "  members/s",
                "members/s",
                n as f64 / p,
                r.map(|r| n as f64 / r),
                Better::Higher,
            )
            .members(n),
        );
    }
    writeln!(out)?;
    let records = net::report(
        SCENARIO,
        &figures,
        redis.is_some(),
        "redis (autocomplete)",
        out,
    )?;
    for (k, &n) in opts.members.iter().enumerate() {
        let p = &podium[k];
        writeln!(
            out,
            "  {}: podium import calls {:.3} s + first search (index build) {:.3} s; \"a\" \
             matches {}",
            thousands(n as i128),
            p.import.as_secs_f64(),
            p.first_search.as_secs_f64(),
            thousands(p.a_total as i128)
        )?;
        if let Some(r) = redis.as_ref().map(|r| &r[k]) {
            writeln!(
                out,
                "  {}: Redis {} ZADDs into {} keys, ZCARD of prefix \"a\" {} (equal to podium's)",
                thousands(n as i128),
                thousands(r.zadds as i128),
                thousands(r.keys as i128),
                thousands(r.a_card as i128)
            )?;
        }
    }
    for (n, goal) in [(10_000u64, 0.050), (1_000_000, 3.0)] {
        if let Some(k) = opts.members.iter().position(|&m| m == n) {
            writeln!(
                out,
                "  goal {} searchable in ≤ {} s: {}",
                thousands(n as i128),
                goal,
                met(podium[k].total.as_secs_f64() <= goal)
            )?;
        }
    }
    writeln!(
        out,
        "  reference (docs/spec.md §7): a Redis autocomplete index took {PUBLISHED_LOAD_10K_SECS} s to load \
         10k titles pipelined"
    )?;
    Ok(records)
}

async fn podium_load(
    c: &Client,
    board: &str,
    opts: &ImportOptions,
    names: &[String],
    scores: &[f64],
) -> Result<PodiumTimes> {
    let n = names.len() as u64;
    let pb = bar(opts.net.progress, n, &format!("podium {board}"));
    let t0 = Instant::now();
    let import = load::podium_named(
        c,
        load::Method::Import,
        &load::Load {
            board,
            n,
            batch: opts.batch,
            depth: opts.depth,
            scores: load::Scores::Given(scores),
        },
        Some(names),
        &pb,
    )
    .await?;
    let (first_search, a_total) = first_search(c, board, "a").await?;
    let total = t0.elapsed();
    pb.finish_and_clear();
    let info = c.board_info(board).await?;
    if info.members != n {
        bail!("board {board} holds {} members, not {n}", info.members);
    }
    Ok(PodiumTimes {
        import,
        first_search,
        total,
        a_total,
    })
}

/// Every distinct prefix (1 char and up) of every word of `name`.
pub fn prefixes(name: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for w in tokenize(name) {
        for (i, c) in w.char_indices() {
            out.insert(w[..i + c.len_utf8()].to_string());
        }
    }
    out
}

async fn redis_load(
    con: &MultiplexedConnection,
    n: u64,
    opts: &ImportOptions,
    names: &[String],
    scores: &[f64],
) -> Result<RedisLoad> {
    let key = format!("ac{n}");
    let pb = bar(opts.net.progress, n, &format!("redis {key}"));
    let keys_before: u64 = redis::cmd("DBSIZE").query_async(&mut con.clone()).await?;
    let t0 = Instant::now();
    let mut w = Window::new(opts.depth);
    let mut zadds = 0u64;
    let check = |r: (Result<redis::RedisResult<()>, tokio::task::JoinError>, u64)| -> Result<()> {
        r.0.context("a pipeline task failed")?
            .with_context(|| format!("pipeline into {key}:*"))?;
        pb.inc(r.1);
        Ok(())
    };
    let mut first = 0usize;
    while first < n as usize {
        let count = REDIS_PIPELINE_MEMBERS.min(n as usize - first);
        let mut pipe = redis::pipe();
        for i in first..first + count {
            let member = format!("m{i}");
            for p in prefixes(&names[i]) {
                pipe.cmd("ZADD")
                    .arg(format!("{key}:{p}"))
                    .arg(scores[i])
                    .arg(&member)
                    .ignore();
                zadds += 1;
            }
            pipe.cmd("HSET")
                .arg(format!("{key}:names"))
                .arg(&member)
                .arg(&names[i])
                .ignore();
        }
        let mut c = con.clone();
        // Spawned so the pipeline is sent now, not when awaited.
        let task = tokio::spawn(async move { pipe.query_async::<()>(&mut c).await });
        if let Some(r) = w.push(Counted::new(task, count as u64)).await {
            check(r)?;
        }
        first += count;
    }
    for r in w.drain().await {
        check(r)?;
    }
    let total = t0.elapsed();
    pb.finish_and_clear();
    let mut c = con.clone();
    let a_card: u64 = redis::cmd("ZCARD")
        .arg(format!("{key}:a"))
        .query_async(&mut c)
        .await?;
    let keys: u64 = redis::cmd("DBSIZE").query_async(&mut c).await?;
    Ok(RedisLoad {
        total,
        zadds,
        keys: keys - keys_before,
        a_card,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_of_every_word_folded() {
        let mut p: Vec<String> = prefixes("Zoé Zo-Al").into_iter().collect();
        p.sort();
        assert_eq!(p, ["a", "al", "z", "zo", "zoe"]);
    }
}
