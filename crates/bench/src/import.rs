//! The `import` scenario (SPEC §7.5), without names for now (the search
//! index does not exist yet): load 10k and 1M members into a fresh board
//! through pipelined `import` calls of 10,000 entries, 4 in flight on one
//! MessagePack-RPC connection; Redis: `ZADD` commands of 10,000 members,
//! 4 in flight on one connection. Seconds from the first request to the
//! last answer.

use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use podium_client::Client;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::engine::random_score;
use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, Figure, NetOptions, PodiumServer};
use crate::report::{thousands, Better, Record};

pub const SCENARIO: &str = "import";

#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub net: NetOptions,
    /// Member counts, one fresh board each.
    pub members: Vec<u64>,
    /// Entries per `import` call / members per ZADD.
    pub batch: u64,
    /// Calls in flight.
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

pub fn run(opts: &ImportOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.members.is_empty() || opts.members.contains(&0) || opts.batch == 0 {
        bail!("--members needs one or more counts, each at least 1; --batch at least 1");
    }
    writeln!(
        out,
        "\nimport: {} members without names, batches of {}, {} in flight, fsync {}, seed {}",
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
    let mut rng = SmallRng::seed_from_u64(opts.net.seed);
    let scores: Vec<f64> = (0..max_n).map(|_| random_score(&mut rng)).collect();

    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {}", server.rpc)?;
    out.flush()?;
    let rt = net::runtime(0)?;
    let podium: Vec<Duration> = rt
        .block_on(async {
            let c = Client::connect(server.rpc).await?;
            let mut times = Vec::new();
            for &n in &opts.members {
                let board = format!("import{n}");
                let pb = bar(opts.net.progress, n, &format!("podium {board}"));
                let t = load::podium(
                    &c,
                    Method::Import,
                    &Load {
                        board: &board,
                        n,
                        batch: opts.batch,
                        depth: opts.depth,
                        scores: Scores::Given(&scores),
                    },
                    &pb,
                )
                .await?;
                pb.finish_and_clear();
                let info = c.board_info(&board).await?;
                if info.members != n {
                    bail!("board {board} holds {} members, not {n}", info.members);
                }
                times.push(t);
            }
            Ok(times)
        })
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    drop(server);

    let redis: Option<Vec<Duration>> = match net::maybe_redis(&opts.net, out)? {
        Some(r) => {
            out.flush()?;
            let url = r.url();
            Some(
                rt.block_on(async {
                    let mut con = load::redis_connect(&url).await?;
                    let mut times = Vec::new();
                    for &n in &opts.members {
                        let key = format!("import{n}");
                        let pb = bar(opts.net.progress, n, &format!("redis {key}"));
                        let t = load::redis(
                            &con,
                            &Load {
                                board: &key,
                                n,
                                batch: opts.batch,
                                depth: opts.depth,
                                scores: Scores::Given(&scores),
                            },
                            &pb,
                        )
                        .await?;
                        pb.finish_and_clear();
                        let card: u64 = redis::cmd("ZCARD").arg(&key).query_async(&mut con).await?;
                        if card != n {
                            bail!("sorted set {key} holds {card} members, not {n}");
                        }
                        times.push(t);
                    }
                    Ok(times)
                })
                .context("Redis side")?,
            )
        }
        None => None,
    };

    let mut figures = Vec::new();
    for (k, &n) in opts.members.iter().enumerate() {
        let p = podium[k].as_secs_f64();
        let r = redis.as_ref().map(|r| r[k].as_secs_f64());
        figures.push(
            Figure::new(
                format!("import_{n}_s"),
                format!("import {} members", thousands(n as i128)),
                "s",
                p,
                r,
                Better::Lower,
            )
            .members(n),
        );
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
    let records = net::report(SCENARIO, &figures, redis.is_some(), "redis (ZADD)", out)?;
    writeln!(
        out,
        "  member ids m0…, random scores, no names (named members and the search index come \
         with search); reference: a Redis autocomplete index took 5.4 s to load 10k titles \
         pipelined (SPEC)"
    )?;
    Ok(records)
}
