//! The `http-updates` scenario (docs/spec.md §7.2): N concurrent HTTP clients
//! (default 64) each submit a random score for a random member out of M
//! (default 100k) with `POST /v1/boards/{board}/scores`, one request after
//! another on a keep-alive HTTP/1.1 connection, for D seconds (default 10).
//! The board is loaded with the M members first, so the run measures
//! updates. Figures: sustained updates/s, latency percentiles, errors
//! (non-2xx answers and transport failures; must be 0).
//!
//! The Redis column is the same number of concurrent clients, each on its
//! own connection, sending unpipelined `ZADD board score member` over RESP
//! for the same time: Redis's native protocol, not HTTP.
//!
//! The clients run on one thread (hyper's low-level HTTP/1.1 connection,
//! one per client; redis-rs connections for Redis), so the server gets the
//! other core of a 2-core machine.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use podium_client::Client;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use crate::engine::{random_score, SCORE_SPAN};
use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, member_id, met, Figure, NetOptions, PodiumServer, Summary, Tally};
use crate::report::{Better, Record};

pub const SCENARIO: &str = "http-updates";
const BOARD: &str = "updates";

#[derive(Debug, Clone)]
pub struct HttpUpdatesOptions {
    pub net: NetOptions,
    /// Concurrent clients.
    pub clients: usize,
    /// Members the updates are drawn from (all loaded first).
    pub members: u64,
    pub duration: Duration,
}

impl Default for HttpUpdatesOptions {
    fn default() -> Self {
        HttpUpdatesOptions {
            net: NetOptions::default(),
            clients: 64,
            members: 100_000,
            duration: Duration::from_secs(10),
        }
    }
}

/// One figure of a latency summary.
type Stat = fn(&Summary) -> f64;

/// One side's outcome.
struct Side {
    ok: u64,
    errors: u64,
    secs: f64,
    lat: Summary,
    first_error: Option<String>,
}

fn combine(tallies: Vec<Tally>, secs: f64) -> Side {
    let mut all = Tally::default();
    for t in tallies {
        all.merge(t);
    }
    Side {
        ok: all.ok,
        errors: all.errors,
        secs,
        lat: all.lat.summary(),
        first_error: all.first_error,
    }
}

pub fn run(opts: &HttpUpdatesOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.clients == 0 || opts.members == 0 || opts.duration.is_zero() {
        bail!("--clients, --members and --seconds must be more than 0");
    }
    writeln!(
        out,
        "\nhttp-updates: {} clients, random members of {}, {:.0} s, fsync {}, seed {}",
        opts.clients,
        crate::report::thousands(opts.members as i128),
        opts.duration.as_secs_f64(),
        opts.net.fsync,
        opts.net.seed
    )?;
    let mut rng = SmallRng::seed_from_u64(opts.net.seed);
    let scores: Vec<f64> = (0..opts.members).map(|_| random_score(&mut rng)).collect();

    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {} (HTTP)", server.http)?;
    out.flush()?;
    let podium = podium_side(opts, &server, &scores)
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    drop(server);

    let redis = match net::maybe_redis(&opts.net, out)? {
        Some(r) => {
            out.flush()?;
            Some(redis_side(opts, &r.url(), &scores).context("Redis side")?)
        }
        None => None,
    };

    let r = redis.as_ref();
    let latencies: [(&str, Stat); 4] = [
        ("p50", |s| s.p50_ns),
        ("p90", |s| s.p90_ns),
        ("p99", |s| s.p99_ns),
        ("max", |s| s.max_ns),
    ];
    let figures: Vec<Figure> = [Figure::new(
        "updates_per_s",
        format!("sustained updates, {} clients", opts.clients),
        "updates/s",
        podium.ok as f64 / podium.secs,
        r.map(|r| r.ok as f64 / r.secs),
        Better::Higher,
    )]
    .into_iter()
    .chain(latencies.map(|(stat, f)| {
        let ms = |side: &Side| f(&side.lat) / 1e6;
        Figure::new(
            format!("latency_{stat}_ms"),
            format!("latency {stat}"),
            "ms",
            ms(&podium),
            r.map(ms),
            Better::Lower,
        )
    }))
    .chain([Figure::new(
        "errors",
        "errors (must be 0)",
        "count",
        podium.errors as f64,
        r.map(|r| r.errors as f64),
        Better::Lower,
    )
    .no_ratio()])
    .map(|f| f.members(opts.members))
    .collect();
    writeln!(out)?;
    let records = net::report(
        SCENARIO,
        &figures,
        redis.is_some(),
        "redis (ZADD, unpipelined)",
        out,
    )?;
    writeln!(
        out,
        "  podium: POST /v1/boards/{BOARD}/scores with {{\"member\", \"score\"}} over HTTP/1.1 \
         keep-alive; Redis: ZADD over RESP on {} connections; {} podium requests",
        opts.clients,
        crate::report::thousands((podium.ok + podium.errors) as i128)
    )?;
    writeln!(
        out,
        "  reference (docs/spec.md §7): a Scala/Akka service sustained 25k HTTP updates/s, p99 38 ms, on 6 \
         cores; errors = 0: {}",
        met(podium.errors == 0)
    )?;
    for (who, side) in [("podium", Some(&podium)), ("redis", r)] {
        if let Some(e) = side.and_then(|s| s.first_error.as_ref()) {
            writeln!(out, "  first {who} error: {e}")?;
        }
    }
    Ok(records)
}

/// The board both sides start from: every member once.
fn preload<'a>(opts: &HttpUpdatesOptions, scores: &'a [f64]) -> Load<'a> {
    Load {
        board: BOARD,
        n: opts.members,
        batch: 10_000,
        depth: 4,
        scores: Scores::Given(scores),
    }
}

/// Lets the clients (waiting at `start`) go and times them until the last
/// one ends.
async fn timed_clients(
    opts: &HttpUpdatesOptions,
    start: &Barrier,
    clients: Vec<tokio::task::JoinHandle<Result<Tally>>>,
    label: &str,
) -> Result<Side> {
    start.wait().await;
    let t0 = Instant::now();
    let pb = bar(opts.net.progress, opts.duration.as_secs(), label);
    let ticker = tick(pb.clone());
    let mut tallies = Vec::new();
    for t in clients {
        tallies.push(t.await??);
    }
    let secs = t0.elapsed().as_secs_f64();
    ticker.abort();
    pb.finish_and_clear();
    Ok(combine(tallies, secs))
}

fn podium_side(opts: &HttpUpdatesOptions, server: &PodiumServer, scores: &[f64]) -> Result<Side> {
    let rt = net::runtime(0)?;
    rt.block_on(async {
        let c = Client::connect(server.rpc).await?;
        let pb = bar(opts.net.progress, opts.members, "podium preload");
        load::podium(&c, Method::Import, &preload(opts, scores), &pb).await?;
        pb.finish_and_clear();
        drop(c);
        let addr = server.http;
        let start = Arc::new(Barrier::new(opts.clients + 1));
        let mut tasks = Vec::new();
        for k in 0..opts.clients {
            let start = start.clone();
            let (seed, members, duration) = (opts.net.seed, opts.members, opts.duration);
            tasks.push(tokio::spawn(async move {
                http_client(addr, k as u64, seed, members, duration, start).await
            }));
        }
        timed_clients(opts, &start, tasks, "podium updates (s)").await
    })
}

/// Moves a bar one step a second.
fn tick(pb: indicatif::ProgressBar) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut t = tokio::time::interval(Duration::from_secs(1));
        t.tick().await;
        loop {
            t.tick().await;
            pb.inc(1);
        }
    })
}

async fn connect_http(
    addr: SocketAddr,
) -> Result<http1::SendRequest<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>> {
    let s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo::new(s)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

async fn http_client(
    addr: SocketAddr,
    k: u64,
    seed: u64,
    members: u64,
    duration: Duration,
    start: Arc<Barrier>,
) -> Result<Tally> {
    let mut rng = SmallRng::seed_from_u64(seed ^ (k + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut tally = Tally::default();
    // The barrier is passed whatever happens, or the others would wait.
    let sender = connect_http(addr).await;
    start.wait().await;
    let mut sender = sender.map_err(|e| anyhow::anyhow!("cannot connect to {addr}: {e}"))?;
    let host = addr.to_string();
    let path = format!("/v1/boards/{BOARD}/scores");
    let mut id = [0u8; 24];
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        let m = member_id(rng.random_range(0..members), &mut id);
        let body = format!(
            "{{\"member\":\"{}\",\"score\":{}}}",
            std::str::from_utf8(m).expect("ascii"),
            rng.random_range(0..SCORE_SPAN)
        );
        let req = hyper::Request::post(path.as_str())
            .header(hyper::header::HOST, host.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))?;
        let t = Instant::now();
        let res = async {
            sender.ready().await?;
            let resp = sender.send_request(req).await?;
            let status = resp.status();
            let body = resp.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>((status, body))
        }
        .await;
        match res {
            Ok((status, _)) if status.is_success() => {
                tally.lat.record(t.elapsed());
                tally.ok += 1;
            }
            Ok((status, body)) => {
                tally.error(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)))
            }
            Err(e) => {
                tally.error(format!("transport: {e}"));
                // A broken connection: open another one.
                match connect_http(addr).await {
                    Ok(s) => sender = s,
                    Err(e) => {
                        tally.error(format!("reconnect: {e}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }
    }
    Ok(tally)
}

fn redis_side(opts: &HttpUpdatesOptions, url: &str, scores: &[f64]) -> Result<Side> {
    let rt = net::runtime(0)?;
    rt.block_on(async {
        let con = load::redis_connect(url).await?;
        let pb = bar(opts.net.progress, opts.members, "redis preload");
        load::redis(&con, &preload(opts, scores), &pb).await?;
        pb.finish_and_clear();
        let start = Arc::new(Barrier::new(opts.clients + 1));
        let mut tasks = Vec::new();
        for k in 0..opts.clients {
            let start = start.clone();
            let (seed, members, duration) = (opts.net.seed, opts.members, opts.duration);
            let url = url.to_string();
            tasks.push(tokio::spawn(async move {
                // Each client on a connection of its own.
                let con = load::redis_connect(&url).await;
                start.wait().await;
                let mut con = con?;
                let mut rng = SmallRng::seed_from_u64(
                    seed ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                let mut tally = Tally::default();
                let mut id = [0u8; 24];
                let deadline = Instant::now() + duration;
                while Instant::now() < deadline {
                    let m = member_id(rng.random_range(0..members), &mut id);
                    let score = rng.random_range(0..SCORE_SPAN);
                    let t = Instant::now();
                    let r: redis::RedisResult<i64> = redis::cmd("ZADD")
                        .arg(BOARD)
                        .arg(score)
                        .arg(m)
                        .query_async(&mut con)
                        .await;
                    match r {
                        Ok(_) => {
                            tally.lat.record(t.elapsed());
                            tally.ok += 1;
                        }
                        Err(e) => tally.error(e),
                    }
                }
                anyhow::Ok(tally)
            }));
        }
        timed_clients(opts, &start, tasks, "redis updates (s)").await
    })
}
