//! The `rank10m` scenario (docs/spec.md §7.1): load N members (default 10M) with
//! sequential scores, then a fresh board of N random scores, through each
//! server's pipelined network protocol; then read random pages of 25 one
//! request at a time.
//!
//! podium: `import` calls (or, with `--method submit-many`, `submit_many`
//! calls, whose answers also carry each entry's rank) of `batch` entries
//! over MessagePack-RPC, `depth` in flight on one connection, then
//! `top(board, {page,
//! page_size: 25})` decoded into a page. Redis: `ZADD` commands of `batch`
//! members, `depth` in flight on one connection (redis-rs multiplexed),
//! then `ZREVRANGE key start start+24 WITHSCORES` decoded into
//! (member, score) pairs. The client side is one thread for both.
//!
//! With `--backend redis` (a Redis this run starts) or `--backend
//! redis://HOST:PORT`, podium serves on that Redis and the
//! question is podium's overhead: the same loads and reads, in the same
//! run and against the same Redis, once through podium's RPC
//! (`submit_many`, `top`) and once straight to Redis (`ZADD`,
//! `ZREVRANGE`), same batch and depth; the two sides alternate phase by
//! phase, and the page reads alternate read by read, so a machine that
//! slows down mid-run slows both. The reads run three ways: one at a
//! time; one at a time with the bench thread, podium and redis-server on
//! one CPU (with a Redis the run starts); and `read_depth` in flight on
//! each side's connection (blocks alternating sides), beside a bare
//! loopback round trip measured in process: one at a time, podium is two
//! hops in series against one, in flight its own processing shows.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use podium_client::Client;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::engine::random_score;
use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, met, Figure, Latencies, NetOptions, PodiumServer, Summary};
use crate::pin::OneCpu;
use crate::report::{Better, Record};

pub const SCENARIO: &str = "rank10m";
pub const PAGE_SIZE: u64 = 25;

#[derive(Debug, Clone)]
pub struct Rank10mOptions {
    pub net: NetOptions,
    pub members: u64,
    /// Entries per `submit_many` call / members per ZADD.
    pub batch: u64,
    /// Calls in flight on the connection while loading.
    pub depth: usize,
    /// Page reads, one at a time.
    pub reads: u64,
    /// podium's load call: `submit_many` (each entry's rank in the answer)
    /// or `import` (counts only, as ZADD answers).
    pub method: Method,
    /// `--backend` only: reads in flight for the pipelined page-read pass.
    pub read_depth: usize,
    /// `None`: podium's embedded engine against its own Redis. `"redis"`
    /// (start one) or a `redis://` URL: podium on that Redis against the
    /// same Redis used directly.
    pub backend: Option<String>,
}

impl Rank10mOptions {
    /// The random board's scores and the pages read from it, from the seed.
    fn workload(&self) -> (Vec<f64>, Vec<u64>) {
        let mut rng = SmallRng::seed_from_u64(self.net.seed);
        let scores = (0..self.members).map(|_| random_score(&mut rng)).collect();
        let pages = self.members.div_ceil(PAGE_SIZE);
        let reads = (0..self.reads)
            .map(|_| rng.random_range(1..=pages))
            .collect();
        (scores, reads)
    }

    /// The load of all members into `board`, as these options batch it.
    fn load<'a>(&self, board: &'a str, scores: Scores<'a>) -> Load<'a> {
        Load {
            board,
            n: self.members,
            batch: self.batch,
            depth: self.depth,
            scores,
        }
    }
}

impl Default for Rank10mOptions {
    fn default() -> Self {
        Rank10mOptions {
            net: NetOptions::default(),
            members: 10_000_000,
            batch: 1_000,
            depth: 8,
            reads: 50_000,
            method: Method::Import,
            read_depth: 16,
            backend: None,
        }
    }
}

/// One side's figures.
struct Side {
    sequential: Duration,
    random: Duration,
    reads: Summary,
    /// The same reads with client and server on one CPU ([`OneCpu`]); not
    /// measured by the `--backend` comparison.
    reads_one_cpu: Option<Summary>,
}

pub fn run(opts: &Rank10mOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.members == 0 || opts.batch == 0 || opts.reads == 0 {
        bail!("--members, --batch and --reads must be at least 1");
    }
    if let Some(spec) = &opts.backend {
        return run_on_redis(opts, spec, out);
    }
    let n = opts.members;
    writeln!(
        out,
        "\nrank10m: {} members, {} batches of {}, {} in flight, {} page reads of {PAGE_SIZE}, \
         fsync {}, seed {}",
        crate::report::thousands(n as i128),
        opts.method.name(),
        opts.batch,
        opts.depth,
        crate::report::thousands(opts.reads as i128),
        opts.net.fsync,
        opts.net.seed
    )?;
    // The same random scores and pages for both servers.
    let (scores, reads) = opts.workload();

    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {} (fsync {})", server.rpc, opts.net.fsync)?;
    out.flush()?;
    let podium = run_podium(opts, &server, &scores, &reads)
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    drop(server);

    let redis = match net::maybe_redis(&opts.net, out)? {
        Some(r) => {
            out.flush()?;
            Some(run_redis(opts, &r, &scores, &reads).context("Redis side")?)
        }
        None => None,
    };

    let us = |ns: f64| ns / 1000.0;
    let r = redis.as_ref();
    let one_cpu = |s: &Side| s.reads_one_cpu.context("reads on one CPU not measured");
    let (p1, r1) = (one_cpu(&podium)?, r.map(one_cpu).transpose()?);
    let mut figures = Vec::from(load_rows(n, &podium, r));
    figures.extend(read_rows(
        "page_read",
        format!("random page of {PAGE_SIZE}, one at a time: mean"),
        &podium.reads,
        r.map(|r| &r.reads),
    ));
    figures.extend(read_rows(
        "page_read_one_cpu",
        "the same reads, client and server on one CPU: mean".into(),
        &p1,
        r1.as_ref(),
    ));
    let figures: Vec<Figure> = figures.into_iter().map(|f| f.members(n)).collect();
    writeln!(out)?;
    let records = net::report(SCENARIO, &figures, redis.is_some(), "redis", out)?;

    let goal_load = |d: Duration, other: Option<Duration>| {
        let fast = d.as_secs_f64() <= 10.0;
        let vs = other.map(|o| o.as_secs_f64() / d.as_secs_f64());
        format!(
            "{:.2} s ≤ 10 s: {}; ≥ 3× Redis: {}",
            d.as_secs_f64(),
            met(fast),
            match vs {
                Some(v) => format!("{} ({v:.2}×)", met(v >= 3.0)),
                None => "not measured".into(),
            }
        )
    };
    writeln!(
        out,
        "  goals: sequential load {}",
        goal_load(podium.sequential, r.map(|r| r.sequential))
    )?;
    writeln!(
        out,
        "         random load {}",
        goal_load(podium.random, r.map(|r| r.random))
    )?;
    let goal_read = |mine: &Summary, other: Option<&Summary>| {
        let mean = us(mine.mean_ns);
        format!(
            "{mean:.1} µs ≤ 50 µs: {}; below Redis: {}",
            met(mean <= 50.0),
            match other {
                Some(o) => format!("{} ({:.1} µs)", met(mean < us(o.mean_ns)), us(o.mean_ns)),
                None => "not measured".into(),
            }
        )
    };
    writeln!(
        out,
        "         page read {}",
        goal_read(&podium.reads, r.map(|r| &r.reads))
    )?;
    writeln!(
        out,
        "         page read on one CPU {}",
        goal_read(&p1, r1.as_ref())
    )?;
    writeln!(
        out,
        "  load = first request sent to last answer received; podium acknowledges {} \
         once durable per --fsync ({}), Redis a ZADD once in its AOF buffer \
         (appendfsync {})",
        opts.method.name(),
        match opts.method {
            Method::SubmitMany => "each entry's rank in the answer",
            Method::Import => "counts in the answer, as ZADD's",
        },
        opts.net.fsync
    )?;
    writeln!(
        out,
        "  one CPU = the bench's thread and every thread of the server pinned to one CPU \
         (an idle vCPU woken for each request costs more than the request on this kind of VM; \
         see bench::pin)"
    )?;
    writeln!(
        out,
        "  reads start once the snapshot (podium) or AOF rewrite (Redis) the loads set off is \
         written"
    )?;
    Ok(records)
}

fn run_podium(
    opts: &Rank10mOptions,
    server: &PodiumServer,
    scores: &[f64],
    reads: &[u64],
) -> Result<Side> {
    let n = opts.members;
    let rt = net::runtime(0)?;
    rt.block_on(async {
        let c = Client::connect(server.rpc).await?;
        let sequential =
            podium_load(opts, &c, "seq", Scores::Sequential, "podium sequential").await?;
        let random = podium_load(opts, &c, "rand", Scores::Given(scores), "podium random").await?;
        for b in ["seq", "rand"] {
            let info = c.board_info(b).await?;
            if info.members != n {
                bail!("board {b} holds {} members, not {n}", info.members);
            }
        }
        // Reads start once a snapshot the loads set off is written (on
        // this runtime's one thread; nothing else runs on it meanwhile).
        server.settle()?;
        let spread = podium_reads(opts, &c, reads, "podium page reads").await?;
        let one_cpu = {
            let _pin = OneCpu::pin(&[server.pid()])?;
            podium_reads(opts, &c, reads, "podium page reads, one CPU").await?
        };
        Ok(Side {
            sequential,
            random,
            reads: spread,
            reads_one_cpu: Some(one_cpu),
        })
    })
}

fn run_redis(
    opts: &Rank10mOptions,
    redis: &net::RedisServer,
    scores: &[f64],
    reads: &[u64],
) -> Result<Side> {
    let n = opts.members;
    let rt = net::runtime(0)?;
    rt.block_on(async {
        let con = load::redis_connect(&redis.url()).await?;
        let sequential =
            redis_load(opts, &con, "seq", Scores::Sequential, "redis sequential").await?;
        let random = redis_load(opts, &con, "rand", Scores::Given(scores), "redis random").await?;
        let mut con = con;
        for k in ["seq", "rand"] {
            let card: u64 = redis::cmd("ZCARD").arg(k).query_async(&mut con).await?;
            if card != n {
                bail!("sorted set {k} holds {card} members, not {n}");
            }
        }
        // Reads start once an AOF rewrite the loads set off is over (on
        // this runtime's one thread; nothing else runs on it meanwhile).
        redis.settle()?;
        let spread = redis_reads(opts, &mut con, reads, "redis page reads").await?;
        let one_cpu = {
            let _pin = OneCpu::pin(&[redis.pid()])?;
            redis_reads(opts, &mut con, reads, "redis page reads, one CPU").await?
        };
        Ok(Side {
            sequential,
            random,
            reads: spread,
            reads_one_cpu: Some(one_cpu),
        })
    })
}

/// Each load's wall time and rate.
fn load_rows(n: u64, mine: &Side, other: Option<&Side>) -> [Figure; 4] {
    let row = |key: &str, label: String, unit, f: &dyn Fn(&Side) -> f64, better| {
        Figure::new(key, label, unit, f(mine), other.map(f), better)
    };
    let secs = |d: Duration| d.as_secs_f64();
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    [
        row(
            "load_sequential_s",
            format!("load {n} sequential scores"),
            "s",
            &|s| secs(s.sequential),
            Better::Lower,
        ),
        row(
            "load_sequential_rate",
            "  members/s".into(),
            "members/s",
            &|s| rate(s.sequential),
            Better::Higher,
        ),
        row(
            "load_random_s",
            format!("load {n} random scores (fresh board)"),
            "s",
            &|s| secs(s.random),
            Better::Lower,
        ),
        row(
            "load_random_rate",
            "  members/s".into(),
            "members/s",
            &|s| rate(s.random),
            Better::Higher,
        ),
    ]
}

/// Loads all members into `board` through podium, with a progress bar.
async fn podium_load(
    opts: &Rank10mOptions,
    c: &Client,
    board: &str,
    scores: Scores<'_>,
    label: &str,
) -> Result<Duration> {
    let pb = bar(opts.net.progress, opts.members, label);
    let took = load::podium(c, opts.method, &opts.load(board, scores), &pb).await?;
    pb.finish_and_clear();
    Ok(took)
}

/// Loads all members into the sorted set `key` with ZADDs, with a progress
/// bar.
async fn redis_load(
    opts: &Rank10mOptions,
    con: &redis::aio::MultiplexedConnection,
    key: &str,
    scores: Scores<'_>,
    label: &str,
) -> Result<Duration> {
    let pb = bar(opts.net.progress, opts.members, label);
    let took = load::redis(con, &opts.load(key, scores), &pb).await?;
    pb.finish_and_clear();
    Ok(took)
}

/// Mean, p50 and p99 of one-at-a-time reads, in µs.
fn read_rows(key: &str, label: String, mine: &Summary, other: Option<&Summary>) -> [Figure; 3] {
    let row = |stat: &str, label: String, f: fn(&Summary) -> f64| {
        Figure::new(
            format!("{key}_{stat}_us"),
            label,
            "µs",
            f(mine) / 1000.0,
            other.map(|o| f(o) / 1000.0),
            Better::Lower,
        )
    };
    [
        row("mean", label, |s| s.mean_ns),
        row("p50", "  p50".into(), |s| s.p50_ns),
        row("p99", "  p99".into(), |s| s.p99_ns),
    ]
}

/// `top` pages of `rand`, one request at a time.
async fn podium_reads(
    opts: &Rank10mOptions,
    c: &Client,
    reads: &[u64],
    label: &'static str,
) -> Result<Summary> {
    let pb = bar(opts.net.progress, reads.len() as u64, label);
    let mut lat = Latencies::default();
    for &p in reads {
        let t = Instant::now();
        let page = c.top("rand", p, PAGE_SIZE).await?;
        lat.record(t.elapsed());
        if page.entries.is_empty() {
            bail!("page {p} of rand is empty");
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(lat.summary())
}

/// `ZREVRANGE` pages of `rand`, one request at a time.
async fn redis_reads(
    opts: &Rank10mOptions,
    con: &mut redis::aio::MultiplexedConnection,
    reads: &[u64],
    label: &'static str,
) -> Result<Summary> {
    let pb = bar(opts.net.progress, reads.len() as u64, label);
    let mut lat = Latencies::default();
    for &p in reads {
        let start = (p - 1) * PAGE_SIZE;
        let t = Instant::now();
        let page: Vec<(String, f64)> = page_cmd("rand", start).query_async(con).await?;
        lat.record(t.elapsed());
        if page.is_empty() {
            bail!("page {p} of rand is empty");
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(lat.summary())
}

// ------------------------------------------------------ --backend redis

/// The overhead of podium on Redis: podium started with `--backend URL`
/// against the same Redis driven directly. Direct keys are `direct:seq` /
/// `direct:rand`; podium's boards `seq` / `rand` (keys `{seq}:…`). Both
/// sides' data are deleted at the end.
fn run_on_redis(opts: &Rank10mOptions, spec: &str, out: &mut dyn Write) -> Result<Vec<Record>> {
    let n = opts.members;
    let own;
    let mut redis_pid = None;
    let url = if spec == "redis" {
        own = net::RedisServer::start(&opts.net.redis_server, opts.net.fsync)?.with_context(
            || {
                format!(
                    "--backend redis starts a redis-server: {} not found",
                    opts.net.redis_server
                )
            },
        )?;
        writeln!(
            out,
            "\nRedis {} on {} (appendonly yes, appendfsync {}, no RDB snapshots, no automatic \
             AOF rewrite)",
            own.version, own.addr, opts.net.fsync
        )?;
        redis_pid = Some(own.pid());
        own.url()
    } else if spec.starts_with("redis://") {
        spec.to_string()
    } else {
        bail!("--backend must be redis (start one) or redis://HOST:PORT, not {spec:?}");
    };
    writeln!(
        out,
        "rank10m --backend {url}: {} members, {} batches of {}, {} in flight, {} page reads of \
         {PAGE_SIZE}, seed {}; podium on Redis vs the same Redis directly",
        crate::report::thousands(n as i128),
        opts.method.name(),
        opts.batch,
        opts.depth,
        crate::report::thousands(opts.reads as i128),
        opts.net.seed
    )?;
    let (scores, reads) = opts.workload();
    let server =
        PodiumServer::start_with(&opts.net.exe, opts.net.fsync, &["--backend", url.as_str()])?;
    writeln!(out, "podium on {} (--backend {url})", server.rpc)?;
    out.flush()?;
    let (podium, direct, busy, more) =
        alternate(opts, &server, &url, redis_pid, &scores, &reads)
            .with_context(|| format!("podium's log:\n{}", server.log()))?;
    drop(server);

    let figures: Vec<Figure> = load_rows(n, &podium, Some(&direct))
        .into_iter()
        .chain([
            Figure::new(
                "load_sequential_redis_busy_s",
                "  sequential: Redis executing (commandstats)",
                "s",
                busy.podium_seq,
                Some(busy.direct_seq),
                Better::Lower,
            ),
            Figure::new(
                "load_random_redis_busy_s",
                "  random: Redis executing (commandstats)",
                "s",
                busy.podium_rand,
                Some(busy.direct_rand),
                Better::Lower,
            ),
        ])
        .chain(read_rows(
            "page_read",
            format!("random page of {PAGE_SIZE}, one at a time: mean"),
            &podium.reads,
            Some(&direct.reads),
        ))
        .chain([Figure::new(
            "page_read_redis_us",
            "  Redis executing per read (commandstats)",
            "µs",
            more.read_redis_us.0,
            Some(more.read_redis_us.1),
            Better::Lower,
        )])
        .chain(more.read_podium_cpu_us.map(|us| {
            Figure::new(
                "page_read_podium_cpu_us",
                "  podium's own CPU per read (all threads)",
                "µs",
                us,
                None,
                Better::Lower,
            )
        }))
        .chain(more.pinned.iter().flat_map(|(p, d)| {
            read_rows(
                "page_read_one_cpu",
                "  the same, bench + podium + redis-server on one CPU: mean".into(),
                p,
                Some(d),
            )
        }))
        .chain([Figure::new(
            "page_read_in_flight_us",
            format!(
                "random page of {PAGE_SIZE}, {} in flight: wall time per read",
                opts.read_depth
            ),
            "µs",
            more.in_flight.0.as_secs_f64() * 1e6 / reads.len() as f64,
            Some(more.in_flight.1.as_secs_f64() * 1e6 / reads.len() as f64),
            Better::Lower,
        )])
        .map(|f| f.members(n))
        .collect();
    writeln!(out)?;
    let mut records = net::report(SCENARIO, &figures, true, "redis direct", out)?;
    // Overhead: how much longer a load takes through podium than
    // straight to Redis (0.2 = 20% longer).
    let overhead = |p: Duration, d: Duration| p.as_secs_f64() / d.as_secs_f64() - 1.0;
    let seq = overhead(podium.sequential, direct.sequential);
    let rnd = overhead(podium.random, direct.random);
    let rd = podium.reads.mean_ns / direct.reads.mean_ns - 1.0;
    let rd_pinned = more
        .pinned
        .as_ref()
        .map(|(p, d)| p.mean_ns / d.mean_ns - 1.0);
    let rd_flight = more.in_flight.0.as_secs_f64() / more.in_flight.1.as_secs_f64() - 1.0;
    // podium's own share: the load's wall time beyond the time Redis spent
    // executing podium's script (what any client sending that script would
    // wait for at least).
    let own = |wall: Duration, busy: f64| wall.as_secs_f64() / busy - 1.0;
    let own_seq = own(podium.sequential, busy.podium_seq);
    let own_rnd = own(podium.random, busy.podium_rand);
    for (key, v) in [
        ("overhead_load_sequential", seq),
        ("overhead_load_random", rnd),
        ("overhead_page_read_mean", rd),
        ("overhead_page_read_in_flight", rd_flight),
        ("overhead_beyond_script_sequential", own_seq),
        ("overhead_beyond_script_random", own_rnd),
    ]
    .into_iter()
    .chain(rd_pinned.map(|v| ("overhead_page_read_one_cpu_mean", v)))
    {
        records.push(Record {
            scenario: SCENARIO,
            figure: key.into(),
            unit: "ratio".into(),
            podium: Some(v),
            redis: None,
            baseline: None,
            baseline_name: None,
            ratio: None,
            members: Some(n),
        });
    }
    let pct = |v: f64| format!("{:+.1}%", v * 100.0);
    writeln!(
        out,
        "  podium's overhead over direct Redis: sequential load {} ({}), random load {} \
         ({}), page read {} ({}); goal ≤ +20%",
        pct(seq),
        met(seq <= 0.2),
        pct(rnd),
        met(rnd <= 0.2),
        pct(rd),
        met(rd <= 0.2),
    )?;
    writeln!(
        out,
        "  page reads: one at a time through podium are two loopback round trips in series \
         (bench→podium→Redis) against one; bare loopback round trip (in-process echo, 40 B \
         out, 700 B back): {:.1} µs mean spread, {} on one CPU",
        more.loopback.0,
        more.loopback.1.map_or(
            "not measured (Redis not started by this run)".into(),
            |v| format!("{v:.1} µs")
        ),
    )?;
    writeln!(
        out,
        "  page read overhead: one at a time {}, on one CPU {}, {} in flight {}",
        pct(rd),
        rd_pinned.map_or("not measured".into(), pct),
        opts.read_depth,
        pct(rd_flight),
    )?;
    writeln!(
        out,
        "  podium's {} per batch: {}; direct is a bare ZADD",
        opts.method.name(),
        match opts.method {
            Method::Import =>
                "one MULTI/EXEC of a native ZADD between two guard FCALLs (the board's \
                 config checked once)",
            Method::SubmitMany =>
                "one FCALL of submit: plain sets by one ZMSCORE, multi-member ZADDs, and per \
                 entry its rank as of its turn in the batch",
        }
    )?;
    writeln!(
        out,
        "  load wall time beyond Redis's own execution of podium's commands (podium's \
         process, network, waits): sequential {}, random {}",
        pct(own_seq),
        pct(own_rnd)
    )?;
    Ok(records)
}

/// Seconds Redis spent executing each side's loads (`INFO commandstats`:
/// podium's top-level commands, [`PODIUM_COMMANDS`], ZADD for the direct
/// side).
struct Busy {
    podium_seq: f64,
    podium_rand: f64,
    direct_seq: f64,
    direct_rand: f64,
}

/// What podium sends Redis while loading: FCALLs of its function
/// library, and (`import`) MULTI/EXEC transactions of a native ZADD
/// between two guard FCALLs. Redis counts a command inside EXEC both in
/// its own stats and in EXEC's, so the guards (two calls of ~1-2 µs per
/// batch) are counted twice: well under 1% of a load's figure.
const PODIUM_COMMANDS: &[&str] = &["fcall", "exec", "evalsha"];

/// The summed `usec` of `cmdstat_<command>` for `commands` in `INFO
/// commandstats`.
async fn redis_usec(con: &mut redis::aio::MultiplexedConnection, commands: &[&str]) -> Result<u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(con)
        .await?;
    Ok(commands
        .iter()
        .map(|command| {
            let prefix = format!("cmdstat_{command}:");
            info.lines()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .and_then(|rest| rest.split(',').find_map(|kv| kv.strip_prefix("usec=")))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum())
}

/// Runs both sides phase by phase, alternating which goes first; returns
/// (podium on Redis, Redis directly, Redis's own execution time).
fn alternate(
    opts: &Rank10mOptions,
    server: &PodiumServer,
    url: &str,
    redis_pid: Option<u32>,
    scores: &[f64],
    reads: &[u64],
) -> Result<(Side, Side, Busy, MoreReads)> {
    let n = opts.members;
    let rt = net::runtime(0)?;
    rt.block_on(async {
        let c = Client::connect(server.rpc).await?;
        let con = load::redis_connect(url).await?;
        let mut info = con.clone();
        if redis_pid.is_some() {
            // The run's own Redis: an automatic AOF rewrite forks when the
            // log has doubled, which happens at about the same point of
            // the same phase every run (which phase depends on the bytes
            // each side logs), and slows that side's load by up to 2x on
            // a 2-core machine. Both sides share the Redis, so without
            // rewrites the comparison is of their commands alone.
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("auto-aof-rewrite-percentage")
                .arg(0)
                .query_async(&mut info)
                .await?;
        }
        let secs = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e6;
        // Sequential: direct first; random: podium first.
        let u0 = redis_usec(&mut info, &["zadd"]).await?;
        let d_seq = redis_load(
            opts,
            &con,
            "direct:seq",
            Scores::Sequential,
            "redis direct sequential",
        )
        .await?;
        let direct_seq = secs(u0, redis_usec(&mut info, &["zadd"]).await?);
        let u0 = redis_usec(&mut info, PODIUM_COMMANDS).await?;
        let p_seq = podium_load(
            opts,
            &c,
            "seq",
            Scores::Sequential,
            "podium on redis sequential",
        )
        .await?;
        let podium_seq = secs(u0, redis_usec(&mut info, PODIUM_COMMANDS).await?);
        let u0 = redis_usec(&mut info, PODIUM_COMMANDS).await?;
        let p_rand = podium_load(
            opts,
            &c,
            "rand",
            Scores::Given(scores),
            "podium on redis random",
        )
        .await?;
        let podium_rand = secs(u0, redis_usec(&mut info, PODIUM_COMMANDS).await?);
        let u0 = redis_usec(&mut info, &["zadd"]).await?;
        let d_rand = redis_load(
            opts,
            &con,
            "direct:rand",
            Scores::Given(scores),
            "redis direct random",
        )
        .await?;
        let direct_rand = secs(u0, redis_usec(&mut info, &["zadd"]).await?);

        let mut con = con;
        for b in ["seq", "rand"] {
            let info = c.board_info(b).await?;
            if info.members != n {
                bail!("board {b} holds {} members, not {n}", info.members);
            }
        }
        for k in ["direct:seq", "direct:rand"] {
            let card: u64 = redis::cmd("ZCARD").arg(k).query_async(&mut con).await?;
            if card != n {
                bail!("sorted set {k} holds {card} members, not {n}");
            }
        }
        // The two sides read the same page, one after the other; what Redis
        // spent on each side's reads, and podium's own CPU, per read.
        let (u_p, u_d) = (
            redis_usec(&mut info, PODIUM_COMMANDS).await?,
            redis_usec(&mut info, &["zrevrange"]).await?,
        );
        let cpu = process_cpu_ns(server.pid());
        let (lp, ld) = alternate_reads(opts, &c, &mut con, reads, "page reads, both").await?;
        let per_read = |a: u64, b: u64| b.saturating_sub(a) as f64 / reads.len() as f64;
        let read_redis_us = (
            per_read(u_p, redis_usec(&mut info, PODIUM_COMMANDS).await?),
            per_read(u_d, redis_usec(&mut info, &["zrevrange"]).await?),
        );
        let read_podium_cpu_us = match (cpu, process_cpu_ns(server.pid())) {
            (Some(a), Some(b)) => Some(per_read(a, b) / 1e3),
            _ => None,
        };
        // Again with the bench, podium and redis-server on one CPU (as
        // bench::pin does for the embedded side): the hand-over is a
        // context switch instead of waking an idle vCPU.
        let pinned = match redis_pid {
            Some(pid) => {
                let _pin = OneCpu::pin(&[server.pid(), pid])?;
                let (p, d) =
                    alternate_reads(opts, &c, &mut con, reads, "page reads, one CPU").await?;
                Some((p.summary(), d.summary()))
            }
            None => None,
        };
        // Several in flight: the extra hop overlaps, podium's work shows.
        let in_flight = reads_in_flight(opts, &c, &con, reads).await?;
        let loopback = (
            loopback_rtt_us(2_000)?,
            match redis_pid {
                Some(pid) => {
                    let _pin = OneCpu::pin(&[pid])?;
                    Some(loopback_rtt_us(2_000)?)
                }
                None => None,
            },
        );
        for b in ["seq", "rand"] {
            c.board_delete(b).await?;
        }
        let _: i64 = redis::cmd("DEL")
            .arg("direct:seq")
            .arg("direct:rand")
            .query_async(&mut con)
            .await?;
        Ok((
            Side {
                sequential: p_seq,
                random: p_rand,
                reads: lp.summary(),
                reads_one_cpu: None,
            },
            Side {
                sequential: d_seq,
                random: d_rand,
                reads: ld.summary(),
                reads_one_cpu: None,
            },
            Busy {
                podium_seq,
                podium_rand,
                direct_seq,
                direct_rand,
            },
            MoreReads {
                pinned,
                in_flight,
                loopback,
                read_redis_us,
                read_podium_cpu_us,
            },
        ))
    })
}

/// The page reads beyond the one-at-a-time pass of `--backend`.
struct MoreReads {
    /// One at a time on one CPU (podium, direct); only with a Redis this
    /// run started (its process is pinned too).
    pinned: Option<(Summary, Summary)>,
    /// Wall time of all the reads with `read_depth` in flight (podium,
    /// direct).
    in_flight: (Duration, Duration),
    /// Bare loopback round trip in µs: spread, and on one CPU.
    loopback: (f64, Option<f64>),
    /// Redis's execution time per read of the one-at-a-time pass
    /// (`INFO commandstats`: podium's FCALLs, the direct ZREVRANGEs), µs.
    read_redis_us: (f64, f64),
    /// podium's CPU time (all its threads) per read of that pass, µs;
    /// `None` where /proc cannot tell.
    read_podium_cpu_us: Option<f64>,
}

/// The CPU time of every thread of process `pid` so far, in ns
/// (`/proc/PID/task/*/schedstat`).
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The same random pages read through podium (`top` of `rand`) and
/// directly (`ZREVRANGE` of `direct:rand`), one request at a time, the
/// two sides alternating read by read and which goes first.
async fn alternate_reads(
    opts: &Rank10mOptions,
    c: &Client,
    con: &mut redis::aio::MultiplexedConnection,
    reads: &[u64],
    label: &'static str,
) -> Result<(Latencies, Latencies)> {
    let pb = bar(opts.net.progress, reads.len() as u64, label);
    let (mut lp, mut ld) = (Latencies::default(), Latencies::default());
    for (i, &p) in reads.iter().enumerate() {
        let start = (p - 1) * PAGE_SIZE;
        let direct = async {
            let t = Instant::now();
            let page: Vec<(String, f64)> = page_cmd("direct:rand", start).query_async(con).await?;
            ld.record(t.elapsed());
            anyhow::Ok(page.len())
        };
        let (dn, pn) = if i % 2 == 0 {
            let dn = direct.await?;
            let t = Instant::now();
            let page = c.top("rand", p, PAGE_SIZE).await?;
            lp.record(t.elapsed());
            (dn, page.entries.len())
        } else {
            let t = Instant::now();
            let page = c.top("rand", p, PAGE_SIZE).await?;
            lp.record(t.elapsed());
            (direct.await?, page.entries.len())
        };
        if dn == 0 || dn != pn {
            bail!("page {p}: {pn} entries through podium, {dn} directly");
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok((lp, ld))
}

/// The reads with `read_depth` in flight on each side's one connection,
/// in eight blocks that alternate sides (and which goes first); returns
/// each side's total wall time (podium, direct).
async fn reads_in_flight(
    opts: &Rank10mOptions,
    c: &Client,
    con: &redis::aio::MultiplexedConnection,
    reads: &[u64],
) -> Result<(Duration, Duration)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let depth = opts.read_depth.max(1);
    let block = reads.len().div_ceil(8).max(1);
    let (mut tp, mut td) = (Duration::ZERO, Duration::ZERO);
    for (b, part) in reads.chunks(block).enumerate() {
        for side in [b % 2, 1 - b % 2] {
            let part: Arc<Vec<u64>> = Arc::new(part.to_vec());
            let next = Arc::new(AtomicUsize::new(0));
            let mut set = tokio::task::JoinSet::new();
            let t = Instant::now();
            for _ in 0..depth {
                let (part, next) = (part.clone(), next.clone());
                let (c, mut con) = (c.clone(), con.clone());
                set.spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&p) = part.get(i) else { break };
                        let n = if side == 0 {
                            c.top("rand", p, PAGE_SIZE).await?.entries.len()
                        } else {
                            let start = (p - 1) * PAGE_SIZE;
                            let page: Vec<(String, f64)> =
                                page_cmd("direct:rand", start).query_async(&mut con).await?;
                            page.len()
                        };
                        if n == 0 {
                            bail!("page {p} of rand is empty");
                        }
                    }
                    anyhow::Ok(())
                });
            }
            while let Some(r) = set.join_next().await {
                r??;
            }
            if side == 0 {
                tp += t.elapsed();
            } else {
                td += t.elapsed();
            }
        }
    }
    Ok((tp, td))
}

/// Mean round trip, in µs, of `n` 40-byte requests answered with 700
/// bytes (about a page of 25 in RESP) by an echo thread of this process
/// over loopback TCP: the floor under any one-at-a-time read. The echo
/// thread inherits the caller's CPU set (so a pinned caller pins both).
fn loopback_rtt_us(n: usize) -> Result<f64> {
    use std::io::{Read, Write as _};
    use std::net::{TcpListener, TcpStream};
    const ASK: usize = 40;
    const ANSWER: usize = 700;
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let (mut ask, answer) = ([0u8; ASK], [7u8; ANSWER]);
        while s.read_exact(&mut ask).is_ok() {
            s.write_all(&answer)?;
        }
        Ok(())
    });
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let (ask, mut answer) = ([1u8; ASK], [0u8; ANSWER]);
    let mut total = Duration::ZERO;
    for i in 0..n + 100 {
        let t = Instant::now();
        s.write_all(&ask)?;
        s.read_exact(&mut answer)?;
        // The first 100 warm up the connection.
        if i >= 100 {
            total += t.elapsed();
        }
    }
    drop(s);
    echo.join()
        .map_err(|_| anyhow::anyhow!("the loopback echo thread panicked"))??;
    Ok(total.as_secs_f64() * 1e6 / n as f64)
}

/// `ZREVRANGE key start start+24 WITHSCORES`: one page read straight from
/// Redis.
fn page_cmd(key: &str, start: u64) -> redis::Cmd {
    let mut c = redis::cmd("ZREVRANGE");
    c.arg(key)
        .arg(start)
        .arg(start + PAGE_SIZE - 1)
        .arg("WITHSCORES");
    c
}
