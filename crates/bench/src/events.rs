//! The `events` scenario (docs/spec.md §7): what live-event subscribers
//! cost the writes of a board. A board of M members (default 1M, scores
//! spread `SPACING` apart; one board for the `top=10` runs, another for
//! the `members` runs, each run after any snapshot is written) takes increments of 1 to 100 from W writers
//! (MessagePack-RPC `submit` with `op: incr`, a window of calls in flight
//! each) for D seconds, with 0, 1,000 and 10,000 Server-Sent-Events
//! subscribers connected: all with `top=10`, or each watching its share of
//! K members (default 100k watched in all: 100 each at 1,000
//! subscribers, 10 each at 10,000). Figures: writes/s of each run and
//! its ratio to the run without subscribers, events delivered, the
//! server's CPU time per write (user and system, from /proc, while the
//! writers run), the server's resident memory per subscriber; then the latency from a write
//! to its event at 1,000 `top=10` subscribers (a probe member raised to
//! first place every 500 ms under the same write load, timed from the
//! call to each subscriber's receipt of its `enter` event).
//!
//! Subscribers are raw sockets on the bench's runtime that count events
//! as the bytes arrive (`id: ` lines), so the client side stays light
//! next to the server on a small machine.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use parking_lot::Mutex;
use podium_client::{Client, Submission};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, member_id, Figure, Latencies, NetOptions, PodiumServer, Window};
use crate::report::{Better, Record};

pub const SCENARIO: &str = "events";
/// Distance between neighbouring scores: an increment of 1 to 100 passes
/// about one member in ten.
const SPACING: f64 = 1000.0;
/// How often the latency phase raises a probe member to first place: each
/// raise is about 11 events to each subscriber, so the deliveries stay
/// within what the machine sustains and the figure is a latency, not a
/// queue's growth.
const PROBE_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct EventsOptions {
    pub net: NetOptions,
    pub members: u64,
    /// Members watched by the `members` subscribers, all together.
    pub watched: u64,
    pub subscribers: Vec<usize>,
    pub writers: usize,
    pub depth: usize,
    pub duration: Duration,
    /// Measure `top=10` subscribers.
    pub top: bool,
    /// Measure subscribers of watched members.
    pub members_filter: bool,
    /// Measure the write → event latency.
    pub latency: bool,
}

impl Default for EventsOptions {
    fn default() -> Self {
        EventsOptions {
            net: NetOptions::default(),
            members: 1_000_000,
            watched: 100_000,
            subscribers: vec![0, 1000, 10_000],
            writers: 4,
            depth: 32,
            duration: Duration::from_secs(5),
            top: true,
            members_filter: true,
            latency: true,
        }
    }
}

/// The filters measured.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Top,
    Members,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Top => "top=10",
            Kind::Members => "members",
        }
    }

    /// Its part of the JSON keys.
    fn key(self) -> &'static str {
        match self {
            Kind::Top => "top10",
            Kind::Members => "members",
        }
    }

    /// Its board: each kind has its own, so the filters one kind's runs
    /// leave (kept 5 minutes after their subscribers) do not weigh on the
    /// other's writes, nor on the latency probes of the top places.
    fn board(self) -> &'static str {
        match self {
            Kind::Top => "live-top",
            Kind::Members => "live-members",
        }
    }
}

/// The server's resident memory (bytes), from /proc.
fn rss(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024.0)
}

fn name(i: u64) -> String {
    let mut b = [0u8; 24];
    String::from_utf8_lossy(member_id(i, &mut b)).into_owned()
}

/// Probe `k`'s call time, and every receipt of its event.
#[derive(Default)]
struct Probes {
    sent: Mutex<Vec<Option<Instant>>>,
    lat: Mutex<Latencies>,
}

/// One subscriber: a raw HTTP/1.1 request, then counting `id: ` lines
/// (and, with `probes`, timing the `enter` of each probe member).
async fn subscriber(
    addr: SocketAddr,
    path: String,
    events: Arc<AtomicU64>,
    connected: Arc<AtomicUsize>,
    probes: Option<Arc<Probes>>,
) -> Result<()> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n")
            .as_bytes(),
    )
    .await?;
    let mut buf = vec![0u8; 16 << 10];
    let mut first = true;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        let got = &buf[..n];
        if first {
            if !got.starts_with(b"HTTP/1.1 200") {
                bail!("subscription refused: {}", String::from_utf8_lossy(got));
            }
            connected.fetch_add(1, Ordering::Relaxed);
            first = false;
        }
        let k = memchr::memmem::find_iter(got, b"id: ").count();
        events.fetch_add(k as u64, Ordering::Relaxed);
        if let Some(p) = &probes {
            let now = Instant::now();
            for at in memchr::memmem::find_iter(got, b"\"type\":\"enter\"") {
                // The event's member follows its type in the JSON object.
                let rest = &got[at..];
                let Some(m) = memchr::memmem::find(rest, b"\"member\":\"probe") else {
                    continue;
                };
                let digits = &rest[m + 15..];
                let end = digits.iter().position(|c| !c.is_ascii_digit()).unwrap_or(0);
                let Some(k) = std::str::from_utf8(&digits[..end])
                    .ok()
                    .and_then(|d| d.parse::<usize>().ok())
                else {
                    continue;
                };
                let sent = p.sent.lock().get(k).copied().flatten();
                if let Some(t) = sent {
                    p.lat.lock().record(now.duration_since(t));
                }
            }
        }
    }
}

/// Opens `n` subscribers of `kind`, a few hundred connecting at a time,
/// and waits until all are answered.
async fn open(
    server: &PodiumServer,
    opts: &EventsOptions,
    kind: Kind,
    n: usize,
    events: &Arc<AtomicU64>,
    probes: Option<Arc<Probes>>,
) -> Result<Vec<tokio::task::JoinHandle<Result<()>>>> {
    let connected = Arc::new(AtomicUsize::new(0));
    let per = (opts.watched as usize).checked_div(n).unwrap_or(0).max(1);
    let stride = (opts.members / opts.watched.max(1)).max(1);
    let mut tasks = Vec::with_capacity(n);
    for k in 0..n {
        let path = match kind {
            Kind::Top => format!("/v1/boards/{}/events?top=10", kind.board()),
            Kind::Members => {
                let ms: Vec<String> = (0..per)
                    .map(|j| name(((k * per + j) as u64 * stride) % opts.members))
                    .collect();
                format!(
                    "/v1/boards/{}/events?members={}",
                    kind.board(),
                    ms.join(",")
                )
            }
        };
        tasks.push(tokio::spawn(subscriber(
            server.http,
            path,
            events.clone(),
            connected.clone(),
            probes.clone(),
        )));
        if k % 256 == 255 {
            while connected.load(Ordering::Relaxed) + 64 < k {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    }
    let t = Instant::now();
    while connected.load(Ordering::Relaxed) < n {
        if let Some(done) = tasks.iter().position(|t| t.is_finished()) {
            let r = tasks.swap_remove(done).await?;
            bail!("a subscriber ended early: {r:?}");
        }
        if t.elapsed() > Duration::from_secs(120) {
            bail!(
                "{} of {n} subscribers connected",
                connected.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(tasks)
}

/// `writers` clients incrementing random members for `opts.duration`:
/// the writes acknowledged and the seconds taken.
async fn writes(
    addr: SocketAddr,
    board: &'static str,
    opts: &EventsOptions,
    writers: usize,
    seed: u64,
) -> Result<(u64, f64)> {
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (members, depth, duration) = (opts.members, opts.depth, opts.duration);
        tasks.push(tokio::spawn(async move {
            let c = Client::connect(addr).await?;
            let mut rng = SmallRng::seed_from_u64(seed ^ ((w as u64) << 32));
            let mut win = Window::new(depth);
            let mut ok = 0u64;
            let end = Instant::now() + duration;
            while Instant::now() < end {
                let mut s = Submission::new(
                    name(rng.random_range(0..members)),
                    rng.random_range(1..=100) as f64,
                );
                s.op = Some("incr".into());
                if let Some(r) = win.push(c.submit(board, &s)).await {
                    r.context("submit")?;
                    ok += 1;
                }
            }
            for r in win.drain().await {
                r.context("submit")?;
                ok += 1;
            }
            anyhow::Ok(ok)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok((total, t0.elapsed().as_secs_f64()))
}

pub fn run(opts: &EventsOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    let server =
        PodiumServer::start_with(&opts.net.exe, opts.net.fsync, &["--maxclients", "30000"])?;
    let rt = net::runtime(0)?;
    let mut figures = Vec::new();
    rt.block_on(async {
        let c = Client::connect(server.rpc).await?;
        let mut scores: Vec<f64> = (0..opts.members).map(|i| i as f64 * SPACING).collect();
        scores.shuffle(&mut SmallRng::seed_from_u64(opts.net.seed));
        let kinds: Vec<Kind> = [(Kind::Top, opts.top), (Kind::Members, opts.members_filter)]
            .into_iter()
            .filter_map(|(k, on)| on.then_some(k))
            .collect();
        let latency = opts.latency && opts.top;
        for &kind in &kinds {
            let pb = bar(opts.net.progress, opts.members, "podium preload");
            let load = Load {
                board: kind.board(),
                n: opts.members,
                batch: 10_000,
                depth: 4,
                scores: Scores::Given(&scores),
            };
            load::podium(&c, Method::Import, &load, &pb).await?;
            pb.finish_and_clear();
        }
        for &kind in &kinds {
            // Each kind against its own board's rate without subscribers.
            let mut base = None;
            for &n in &opts.subscribers {
                let events = Arc::new(AtomicU64::new(0));
                // The last run's subscribers gone (and their memory).
                server.quiet()?;
                // Used memory, not the resident set: a thousand
                // subscribers' 20 MB were lost in the resident set's swings
                // (pages the allocator keeps or gives back), which made
                // the difference negative in some runs.
                // A server before scrape-time readings samples the gauge
                // once a second: waited for, so an older binary compares.
                let memory = || server.used_memory().or_else(|| rss(server.pid()));
                tokio::time::sleep(Duration::from_millis(1100)).await;
                let before = memory();
                let subs = open(&server, opts, kind, n, &events, None).await?;
                tokio::time::sleep(Duration::from_millis(1100)).await;
                let after = memory();
                // Not while a snapshot (the preload's, or one the last
                // run's writes made due) is being written.
                server.settle()?;
                events.store(0, Ordering::Relaxed);
                let seed = opts.net.seed + n as u64;
                let cpu0 = net::cpu_seconds(Some(server.pid()));
                let (done, secs) =
                    writes(server.rpc, kind.board(), opts, opts.writers, seed).await?;
                let cpu = net::cpu_seconds(Some(server.pid())).zip(cpu0).map(|(b, a)| b - a);
                // Let the last events arrive.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let rate = done as f64 / secs;
                let base_rate = *base.get_or_insert(rate);
                let label = format!("{n} {} subscribers", kind.name());
                let key = format!("{}_{n}", kind.key());
                figures.push(
                    Figure::new(
                        format!("writes_{key}"),
                        format!("writes/s, {label}"),
                        "writes/s",
                        rate,
                        None,
                        Better::Higher,
                    )
                    .members(opts.members)
                    .baseline(base_rate, "no subscribers"),
                );
                figures.push(
                    Figure::new(
                        format!("ratio_{key}"),
                        format!("share of the rate without subscribers, {label}"),
                        "ratio",
                        rate / base_rate,
                        None,
                        Better::Higher,
                    )
                    .no_ratio(),
                );
                figures.push(
                    Figure::new(
                        format!("events_{key}"),
                        format!("events delivered/s, {label}"),
                        "events/s",
                        events.load(Ordering::Relaxed) as f64 / secs,
                        None,
                        Better::Higher,
                    )
                    .no_ratio(),
                );
                if let Some(cpu) = cpu.filter(|_| done > 0) {
                    figures.push(
                        Figure::new(
                            format!("cpu_{key}"),
                            format!("server CPU per write, {label}"),
                            "µs",
                            cpu / done as f64 * 1e6,
                            None,
                            Better::Lower,
                        )
                        .no_ratio(),
                    );
                }
                if let (true, Some(a), Some(b)) = (n > 0, after, before) {
                    figures.push(
                        Figure::new(
                            format!("memory_{key}"),
                            format!("server memory per subscriber, {label}"),
                            "bytes",
                            (a - b) / n as f64,
                            None,
                            Better::Lower,
                        )
                        .no_ratio(),
                    );
                }
                for t in subs {
                    t.abort();
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }

        if latency {
            // Latency at 1,000 subscribers of the top places, under load.
            server.settle()?;
            server.quiet()?;
            let probes = Arc::new(Probes::default());
            let events = Arc::new(AtomicU64::new(0));
            let subs = open(
                &server,
                opts,
                Kind::Top,
                1000,
                &events,
                Some(probes.clone()),
            )
            .await?;
            let load = tokio::spawn({
                let (addr, opts) = (server.rpc, opts.clone());
                async move { writes(addr, Kind::Top.board(), &opts, opts.writers, opts.net.seed).await }
            });
            let top = (opts.members as f64 + 1.0) * SPACING * 10.0;
            let end = Instant::now() + opts.duration;
            let mut k = 0usize;
            while Instant::now() < end {
                probes.sent.lock().push(None);
                let s = Submission::new(format!("probe{k}"), top + k as f64);
                let t = Instant::now();
                probes.sent.lock()[k] = Some(t);
                c.submit(Kind::Top.board(), &s).await.context("probe")?;
                k += 1;
                tokio::time::sleep(PROBE_EVERY).await;
            }
            load.await??;
            tokio::time::sleep(Duration::from_millis(300)).await;
            for t in subs {
                t.abort();
            }
            let lat = std::mem::take(&mut *probes.lat.lock()).summary();
            if lat.count == 0 {
                bail!("no probe event arrived");
            }
            figures.push(
                Figure::new(
                    "latency_p50_1000",
                    "write → event p50, 1000 top=10 subscribers",
                    "ms",
                    lat.p50_ns / 1e6,
                    None,
                    Better::Lower,
                )
                .no_ratio(),
            );
            figures.push(
                Figure::new(
                    "latency_p99_1000",
                    "write → event p99, 1000 top=10 subscribers",
                    "ms",
                    lat.p99_ns / 1e6,
                    None,
                    Better::Lower,
                )
                .no_ratio(),
            );
        }
        anyhow::Ok(())
    })?;
    net::report(SCENARIO, &figures, false, "", out)
}
