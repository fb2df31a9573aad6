//! The `rpc-payload` scenario (docs/spec.md §7.4): large MessagePack-RPC
//! responses. For each size (default 1, 8, 32 and 128 MiB) a board is
//! loaded with as many entries as make its `export` response that size;
//! then the export is read repeatedly:
//!
//! - **sync**: one request at a time on one connection;
//! - **pipelined**: `depth` requests in flight on one connection;
//! - **parallel**: `connections` connections, one request at a time each;
//! - **sync, decoded**: as sync, the result decoded into entries (member
//!   string, score, rank) — the other modes only frame the response (the
//!   client walks it once and hands over its bytes).
//!
//! Beside them, an in-process copy (memcpy) of a buffer of the same size:
//! the most any transport of those bytes could do on this machine.
//!
//! Redis: `ZRANGE key 0 -1 WITHSCORES` of a sorted set with the same
//! entries. Its framed modes read the reply with a minimal RESP reader
//! written here (framing only, as podium's client does); its decoded mode
//! uses redis-rs, into `(String, f64)` pairs. MB/s counts each server's own
//! response bytes (podium's entries carry their rank and field names, so
//! they are larger than Redis's), hence the entries/s row.
//!
//! With `data` set, each size also gets a board whose members carry a
//! JSON `data` object of about that many bytes (a player profile), read in
//! the same modes on podium only (a sorted set has nowhere to keep it): the
//! realistic large export, where the bytes are the profiles' and the
//! per-entry work of the bare board is spread over many more bytes. With
//! `blob` set, boards whose members' `data` is exactly that many bytes of
//! one long string (`{"blob":"…"}`): the shape of the Ruby
//! MessagePack-RPC report the goal comes from (one opaque n-MB string per
//! call), as podium holds large opaque bytes.

use std::hint::black_box;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::{Buf, BytesMut};
use podium_client::{Client, Ser, Submission};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::engine::random_score;
use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, met, Figure, NetOptions, PodiumServer};
use crate::report::{Better, Record};

pub const SCENARIO: &str = "rpc-payload";
const MIB: u64 = 1 << 20;
const COPY: &str = "in-process copy";

#[derive(Debug, Clone)]
pub struct RpcPayloadOptions {
    pub net: NetOptions,
    /// Response sizes in bytes.
    pub sizes: Vec<u64>,
    /// Entry counts instead of sizes (a smaller run).
    pub members: Option<Vec<u64>>,
    /// Requests in flight in the pipelined mode.
    pub depth: usize,
    /// Connections in the parallel mode.
    pub connections: usize,
    /// Each mode runs at least this long (and at least 3 requests).
    pub min_time: Duration,
    /// Bytes of JSON `data` per member of the extra boards (none: no extra
    /// boards).
    pub data: Option<u64>,
    /// Bytes of `data` per member of the blob boards, one long string
    /// (none: no blob boards).
    pub blob: Option<u64>,
}

impl Default for RpcPayloadOptions {
    fn default() -> Self {
        RpcPayloadOptions {
            net: NetOptions::default(),
            sizes: vec![MIB, 8 * MIB, 32 * MIB, 128 * MIB],
            members: None,
            depth: 4,
            connections: 4,
            min_time: Duration::from_secs(1),
            data: None,
            blob: None,
        }
    }
}

/// Bytes of podium's `export` response for members `m0..m{n-1}` (ranks
/// 1..=n), as podium encodes it: `[1, msgid, nil, [entry, …]]`, each entry
/// `{member, score: float 64, rank: smallest uint}`.
pub fn export_bytes(n: u64) -> u64 {
    let mut total = 4 + 5; // envelope with a one-byte msgid; array 32 header
    total += export_entries_bytes(0, n);
    total
}

fn export_entries_bytes(from: u64, to: u64) -> u64 {
    let mut total = 0;
    for i in from..to {
        total += entry_bytes(i);
    }
    total
}

fn digits(mut v: u64) -> u64 {
    let mut d = 1;
    while v >= 10 {
        v /= 10;
        d += 1;
    }
    d
}

fn entry_bytes(i: u64) -> u64 {
    let rank = i + 1;
    let rank_bytes = match rank {
        0..=127 => 1,
        128..=255 => 2,
        256..=65_535 => 3,
        _ => 5,
    };
    // fixmap, "member" (7), fixstr id (1 + 'm' + digits), "score" (6),
    // float 64 (9), "rank" (5), the rank.
    1 + 7 + (2 + digits(i)) + 6 + 9 + 5 + rank_bytes
}

/// The entry count whose export is at least `bytes`.
pub fn entries_for(bytes: u64) -> u64 {
    let mut total = 9;
    let mut n = 0;
    while total < bytes {
        total += entry_bytes(n);
        n += 1;
    }
    n.max(1)
}

/// One mode's outcome.
#[derive(Debug, Clone, Copy, Default)]
struct Rate {
    bytes: u64,
    requests: u64,
    secs: f64,
}

impl Rate {
    fn mbps(&self) -> f64 {
        self.bytes as f64 / self.secs / 1e6
    }
    fn per_request(&self) -> f64 {
        self.bytes as f64 / self.requests as f64
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Modes {
    sync: Rate,
    pipelined: Rate,
    parallel: Rate,
    decoded: Rate,
}

/// Evaluates `$one` (a request; gives its bytes, in an async context that
/// returns `Result`) until `$min` has passed and at least 3 requests are
/// done; gives the [`Rate`].
macro_rules! time_loop {
    ($min:expr, $one:expr) => {{
        let min: Duration = $min;
        let start = Instant::now();
        let mut r = Rate::default();
        while r.requests < 3 || start.elapsed() < min {
            let bytes: u64 = $one;
            r.bytes += bytes;
            r.requests += 1;
        }
        r.secs = start.elapsed().as_secs_f64();
        r
    }};
}

pub fn run(opts: &RpcPayloadOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    let counts: Vec<(String, u64)> = match &opts.members {
        Some(m) => m.iter().map(|&n| (format!("{n} entries"), n)).collect(),
        None => opts
            .sizes
            .iter()
            .map(|&b| (size_label(b), entries_for(b)))
            .collect(),
    };
    if counts.is_empty() || counts.iter().any(|c| c.1 == 0) {
        bail!("--sizes / --members need one or more values, each at least 1");
    }
    if opts.depth == 0 || opts.connections == 0 {
        bail!("--depth and --connections must be at least 1");
    }
    writeln!(
        out,
        "\nrpc-payload: export responses of {}; sync, pipelined ({} in flight), parallel \
         ({} connections), decoded; seed {}",
        counts
            .iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        opts.depth,
        opts.connections,
        opts.net.seed
    )?;
    let mut rng = SmallRng::seed_from_u64(opts.net.seed);
    let max_n = counts.iter().map(|c| c.1).max().unwrap_or(0);
    let scores: Vec<f64> = (0..max_n).map(|_| random_score(&mut rng)).collect();

    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {}", server.rpc)?;
    out.flush()?;
    let podium = podium_side(opts, &server, &counts, &scores)
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    let mut with_data = Vec::new();
    let shapes = [
        opts.data.map(|b| (Shape::Profile, b)),
        opts.blob.map(|b| (Shape::Blob, b)),
    ];
    for (shape, bytes) in shapes.into_iter().flatten() {
        let counts: Vec<(String, u64)> = counts
            .iter()
            .zip(&podium)
            .map(|((label, n), p)| {
                // As many members as make about the bare export's bytes.
                let per = bytes as f64 + p.sync.per_request() / *n as f64;
                let d = match opts.members {
                    Some(_) => *n,
                    None => ((p.sync.per_request() / per) as u64).max(1),
                };
                (format!("{label} with {bytes} B {}", shape.name()), d)
            })
            .collect();
        let m = podium_data_side(opts, &server, &counts, shape, bytes, &scores)
            .with_context(|| format!("podium data boards; its log:\n{}", server.log()))?;
        with_data.extend(counts.into_iter().zip(m));
    }
    drop(server);

    let redis = match net::maybe_redis(&opts.net, out)? {
        Some(r) => {
            out.flush()?;
            Some(redis_side(opts, &r, &counts, &scores).context("Redis side")?)
        }
        None => None,
    };

    let mut figures = Vec::new();
    let mut goal = None;
    for (k, (label, n)) in counts.iter().enumerate() {
        let p = &podium[k];
        let copy = memcpy_mbps(p.sync.per_request() as usize, opts.min_time);
        let r = redis.as_ref().map(|r| &r[k]);
        figures.extend(mode_figures(label, *n, p, r, copy));
        goal = Some((label.clone(), *p, copy));
    }
    for ((label, n), p) in &with_data {
        let copy = memcpy_mbps(p.sync.per_request() as usize, opts.min_time);
        figures.extend(mode_figures(label, *n, p, None, copy));
    }
    writeln!(out)?;
    let records = net::report(SCENARIO, &figures, redis.is_some(), "redis", out)?;
    if let Some((label, p, copy)) = goal {
        // Every mode: a large answer must move that fast however it is asked for.
        let modes = [p.sync.mbps(), p.pipelined.mbps(), p.parallel.mbps()];
        writeln!(
            out,
            "  goal ≥ 1 GB/s (1,000 MB/s) at {label} in every mode: sync {:.0}, pipelined {:.0}, \
             parallel {:.0} MB/s: {}; in-process copy {:.0} MB/s",
            modes[0],
            modes[1],
            modes[2],
            met(modes.iter().all(|&m| m >= 1000.0)),
            copy
        )?;
    }
    writeln!(
        out,
        "  MB = 10^6 bytes of each server's own response; podium's framed modes hand over \
         the whole message as bytes, Redis's read the RESP reply with a framing-only reader; \
         the parallel mode runs its client on 2 threads, the others on 1; reads start once \
         the snapshot (podium) or AOF rewrite (Redis) the loads set off is written"
    )?;
    if let Some(r) = &redis {
        if let (Some(p0), Some(r0)) = (podium.last(), r.last()) {
            writeln!(
                out,
                "  response bytes per entry: podium {:.1}, Redis {:.1}",
                p0.sync.per_request() / counts.last().map_or(1, |c| c.1) as f64,
                r0.sync.per_request() / counts.last().map_or(1, |c| c.1) as f64
            )?;
        }
    }
    Ok(records)
}

/// The rows of one board's export: MB/s per mode (beside the in-process
/// `copy` of the same bytes, except the decoded mode) and entries/s.
fn mode_figures(label: &str, n: u64, p: &Modes, r: Option<&Modes>, copy: f64) -> Vec<Figure> {
    let key = label.replace(' ', "_").to_lowercase();
    let what = format!(
        "{label} ({} entries, {:.1} MiB)",
        crate::report::thousands(n as i128),
        p.sync.per_request() / MIB as f64
    );
    let mode = |name: &str, f: fn(&Modes) -> Rate, with_copy: bool| {
        let fig = Figure::new(
            format!("{key}_{}", name.replace([' ', ','], "_").replace("__", "_")),
            format!("{what}: {name}"),
            "MB/s",
            f(p).mbps(),
            r.map(|r| f(r).mbps()),
            Better::Higher,
        )
        .members(n);
        if with_copy {
            fig.baseline(copy, COPY)
        } else {
            fig
        }
    };
    let entries = |m: &Modes| n as f64 * m.sync.requests as f64 / m.sync.secs;
    vec![
        mode("sync", |m| m.sync, true),
        mode("pipelined", |m| m.pipelined, true),
        mode("parallel", |m| m.parallel, true),
        mode("sync, decoded", |m| m.decoded, false),
        Figure::new(
            format!("{key}_sync_entries"),
            format!("{what}: sync, entries/s"),
            "entries/s",
            entries(p),
            r.map(entries),
            Better::Higher,
        )
        .members(n),
    ]
}

fn size_label(b: u64) -> String {
    // (A multiple of 2^20 has 20 trailing zero bits.)
    if b > 0 && b.trailing_zeros() >= 20 {
        format!("{} MiB", b / MIB)
    } else if b > 0 && b.trailing_zeros() >= 10 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

fn podium_side(
    opts: &RpcPayloadOptions,
    server: &PodiumServer,
    counts: &[(String, u64)],
    scores: &[f64],
) -> Result<Vec<Modes>> {
    let addr = server.rpc;
    let rt = net::runtime(0)?;
    let boards: Vec<String> = (0..counts.len()).map(|k| format!("p{k}")).collect();
    rt.block_on(async {
        let c = Client::connect(addr).await?;
        for ((_, n), board) in counts.iter().zip(&boards) {
            let pb = bar(opts.net.progress, *n, &format!("podium load {board}"));
            let load = payload_load(board, *n, scores);
            load::podium(&c, Method::Import, &load, &pb).await?;
            pb.finish_and_clear();
        }
        anyhow::Ok(())
    })?;
    server.settle()?;
    let mut all = Vec::new();
    for ((label, n), board) in counts.iter().zip(&boards) {
        all.push(read_modes(opts, &rt, addr, label, board, *n)?);
    }
    Ok(all)
}

/// Every mode of reading `board`'s export (`n` entries).
fn read_modes(
    opts: &RpcPayloadOptions,
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    label: &str,
    board: &str,
    n: u64,
) -> Result<Modes> {
    let pb = bar(opts.net.progress, 4, &format!("podium {label}"));
    let m = rt.block_on(podium_modes(opts, addr, board, n))?;
    pb.inc(3);
    // Parallel connections: their client on two threads.
    let rt2 = net::runtime(2)?;
    let parallel = rt2.block_on(podium_parallel(opts, addr, board))?;
    pb.finish_and_clear();
    Ok(Modes { parallel, ..m })
}

/// A JSON object of about `bytes` bytes (a profile: a text and two
/// numbers), different per member.
fn profile(i: u64, bytes: u64) -> rmpv::Value {
    let fill = (bytes as usize).saturating_sub(40).max(1);
    let bio: String = (0..fill)
        .map(|k| char::from(b'a' + ((i as usize + k) % 26) as u8))
        .collect();
    rmpv::Value::Map(vec![
        ("bio".into(), bio.into()),
        ("id".into(), i.into()),
        ("level".into(), (i % 97).into()),
    ])
}

/// The JSON text of a blob `data` of exactly `bytes` bytes (at least
/// 12): `{"blob":"…"}`, the string letters that differ per member, as the
/// service stores it (`Value::to_string()`).
pub fn blob_json(i: u64, bytes: usize) -> String {
    let fill = bytes.saturating_sub(11).max(1);
    let mut s = String::with_capacity(fill + 11);
    s.push_str("{\"blob\":\"");
    s.extend((0..fill).map(|k| char::from(b'a' + ((i as usize + k) % 26) as u8)));
    s.push_str("\"}");
    s
}

/// What the extra boards' members carry as `data`.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A profile: a text and two numbers ([`profile`]).
    Profile,
    /// One long string ([`blob_json`]).
    Blob,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Profile => "data",
            Shape::Blob => "blob",
        }
    }

    fn value(self, i: u64, bytes: u64) -> rmpv::Value {
        match self {
            Shape::Profile => profile(i, bytes),
            Shape::Blob => {
                let text = blob_json(i, bytes as usize);
                let s = &text[9..text.len() - 2];
                rmpv::Value::Map(vec![("blob".into(), s.into())])
            }
        }
    }
}

/// Boards `d{k}` (profiles) or `b{k}` (blobs) of `counts[k].1` members with
/// `data` of about `bytes` bytes, each read in the same modes as the bare
/// boards.
fn podium_data_side(
    opts: &RpcPayloadOptions,
    server: &PodiumServer,
    counts: &[(String, u64)],
    shape: Shape,
    bytes: u64,
    scores: &[f64],
) -> Result<Vec<Modes>> {
    let addr = server.rpc;
    let rt = net::runtime(0)?;
    let prefix = match shape {
        Shape::Profile => "d",
        Shape::Blob => "b",
    };
    let boards: Vec<String> = (0..counts.len()).map(|k| format!("{prefix}{k}")).collect();
    let mut all = Vec::new();
    for ((label, n), board) in counts.iter().zip(&boards) {
        let pb = bar(opts.net.progress, *n, &format!("podium load {board}"));
        rt.block_on(async {
            let c = Client::connect(addr).await?;
            // Room for the data past the default limit.
            let limit = bytes.max(4096);
            c.board_create(
                board,
                rmpv::Value::Map(vec![("max_data_bytes".into(), limit.into())]),
            )
            .await?;
            // Batches of about 1 MB.
            let batch = (1_000_000 / bytes.max(1)).clamp(1, 10_000);
            let mut i = 0;
            while i < *n {
                let end = (i + batch).min(*n);
                let entries: Vec<Submission> = (i..end)
                    .map(|k| Submission {
                        data: Some(shape.value(k, bytes)),
                        ..Submission::new(format!("m{k}"), scores[k as usize % scores.len()])
                    })
                    .collect();
                let r = c.import(board, &entries).await?;
                if r.failed > 0 {
                    bail!(
                        "import refused {} entries: {:?}",
                        r.failed,
                        r.errors.first()
                    );
                }
                pb.inc(end - i);
                i = end;
            }
            anyhow::Ok(())
        })?;
        pb.finish_and_clear();
        server.settle()?;
        all.push(read_modes(opts, &rt, addr, label, board, *n)?);
    }
    Ok(all)
}

async fn podium_modes(
    opts: &RpcPayloadOptions,
    addr: SocketAddr,
    board: &str,
    n: u64,
) -> Result<Modes> {
    let c = Client::connect(addr).await?;
    // One export first: checks the count, warms the board up.
    let first = c.export(board).await?;
    if first.len() as u64 != n {
        bail!(
            "board {board}: export gave {} entries, not {n}",
            first.len()
        );
    }
    drop(first);
    let sync = time_loop!(
        opts.min_time,
        c.call_raw("export", &Ser((board,))).await?.message_len() as u64
    );
    let pipelined = {
        let start = Instant::now();
        let mut r = Rate::default();
        let mut w = net::Window::new(opts.depth);
        let mut sent = 0u64;
        loop {
            let more = sent < 3 || start.elapsed() < opts.min_time;
            if !more {
                break;
            }
            if let Some(res) = w.push(c.call_raw("export", &Ser((board,)))).await {
                r.bytes += res?.message_len() as u64;
                r.requests += 1;
            }
            sent += 1;
        }
        for res in w.drain().await {
            r.bytes += res?.message_len() as u64;
            r.requests += 1;
        }
        r.secs = start.elapsed().as_secs_f64();
        r
    };
    let decoded = time_loop!(opts.min_time, {
        let raw = c.call_raw("export", &Ser((board,))).await?;
        let entries = podium_client::decode_export(&raw)?;
        if entries.len() as u64 != n {
            bail!("export gave {} entries, not {n}", entries.len());
        }
        black_box(&entries);
        raw.message_len() as u64
    });
    Ok(Modes {
        sync,
        pipelined,
        decoded,
        parallel: Rate::default(),
    })
}

async fn podium_parallel(opts: &RpcPayloadOptions, addr: SocketAddr, board: &str) -> Result<Rate> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (board, min) = (board.to_string(), opts.min_time);
        tasks.push(tokio::spawn(async move {
            let c = Client::connect(addr).await?;
            anyhow::Ok(time_loop!(
                min,
                c.call_raw("export", &Ser((board.as_str(),)))
                    .await?
                    .message_len() as u64
            ))
        }));
    }
    total_rate(start, tasks).await
}

/// Loading a payload board: big batches, a few in flight (only the reads
/// are measured).
fn payload_load<'a>(board: &'a str, n: u64, scores: &'a [f64]) -> Load<'a> {
    Load {
        board,
        n,
        batch: 10_000,
        depth: 4,
        scores: Scores::Given(scores),
    }
}

/// The connections' rates summed, over the wall time since `start`.
async fn total_rate(
    start: Instant,
    tasks: Vec<tokio::task::JoinHandle<Result<Rate>>>,
) -> Result<Rate> {
    let mut total = Rate::default();
    for t in tasks {
        let r = t.await??;
        total.bytes += r.bytes;
        total.requests += r.requests;
    }
    total.secs = start.elapsed().as_secs_f64();
    Ok(total)
}

fn redis_side(
    opts: &RpcPayloadOptions,
    redis: &net::RedisServer,
    counts: &[(String, u64)],
    scores: &[f64],
) -> Result<Vec<Modes>> {
    let rt = net::runtime(0)?;
    let keys: Vec<String> = (0..counts.len()).map(|k| format!("p{k}")).collect();
    let url = redis.url();
    rt.block_on(async {
        let con = load::redis_connect(&url).await?;
        for ((_, n), key) in counts.iter().zip(&keys) {
            let pb = bar(opts.net.progress, *n, &format!("redis load {key}"));
            let load = payload_load(key, *n, scores);
            load::redis(&con, &load, &pb).await?;
            pb.finish_and_clear();
        }
        anyhow::Ok(())
    })?;
    redis.settle()?;
    let mut all = Vec::new();
    for ((label, n), key) in counts.iter().zip(&keys) {
        let pb = bar(opts.net.progress, 4, &format!("redis {label}"));
        let m = rt.block_on(redis_modes(opts, redis.addr, &url, key, *n))?;
        pb.inc(3);
        let rt2 = net::runtime(2)?;
        let parallel = rt2.block_on(redis_parallel(opts, redis.addr, key, *n))?;
        pb.finish_and_clear();
        all.push(Modes { parallel, ..m });
    }
    Ok(all)
}

async fn redis_modes(
    opts: &RpcPayloadOptions,
    addr: SocketAddr,
    url: &str,
    key: &str,
    n: u64,
) -> Result<Modes> {
    let mut r = RespReader::connect(addr).await?;
    let sync = time_loop!(opts.min_time, {
        r.send_zrange(key).await?;
        r.read_reply(n).await?
    });
    let pipelined = {
        let start = Instant::now();
        let mut rate = Rate::default();
        let mut in_flight = 0;
        let mut sent = 0u64;
        loop {
            // Keep `depth` in flight until the time is up, then drain.
            let more = sent < 3 || start.elapsed() < opts.min_time;
            while more && in_flight < opts.depth {
                r.send_zrange(key).await?;
                in_flight += 1;
                sent += 1;
            }
            if in_flight == 0 {
                break;
            }
            rate.bytes += r.read_reply(n).await?;
            rate.requests += 1;
            in_flight -= 1;
        }
        rate.secs = start.elapsed().as_secs_f64();
        rate
    };
    // Byte count of one reply, for the decoded mode's MB/s.
    let reply_bytes = sync.per_request() as u64;
    let mut con = load::redis_connect(url).await?;
    let decoded = time_loop!(opts.min_time, {
        let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut con)
            .await?;
        if v.len() as u64 != n {
            bail!("ZRANGE gave {} entries, not {n}", v.len());
        }
        black_box(&v);
        reply_bytes
    });
    Ok(Modes {
        sync,
        pipelined,
        decoded,
        parallel: Rate::default(),
    })
}

async fn redis_parallel(
    opts: &RpcPayloadOptions,
    addr: SocketAddr,
    key: &str,
    n: u64,
) -> Result<Rate> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (key, min) = (key.to_string(), opts.min_time);
        tasks.push(tokio::spawn(async move {
            let mut r = RespReader::connect(addr).await?;
            anyhow::Ok(time_loop!(min, {
                r.send_zrange(&key).await?;
                r.read_reply(n).await?
            }))
        }));
    }
    total_rate(start, tasks).await
}

/// A minimal RESP client for one reply shape: `ZRANGE key 0 -1
/// WITHSCORES`'s array of bulk strings, framed (every item header read,
/// payloads skipped) and not decoded.
struct RespReader {
    sock: TcpStream,
    buf: BytesMut,
}

impl RespReader {
    async fn connect(addr: SocketAddr) -> Result<RespReader> {
        let sock = TcpStream::connect(addr).await?;
        sock.set_nodelay(true)?;
        Ok(RespReader {
            sock,
            buf: BytesMut::with_capacity(1 << 20),
        })
    }

    async fn send_zrange(&mut self, key: &str) -> Result<()> {
        let cmd = format!(
            "*5\r\n$6\r\nZRANGE\r\n${}\r\n{key}\r\n$1\r\n0\r\n$2\r\n-1\r\n$10\r\nWITHSCORES\r\n",
            key.len()
        );
        self.sock.write_all(cmd.as_bytes()).await?;
        Ok(())
    }

    async fn fill(&mut self) -> Result<()> {
        self.buf.reserve(1 << 20);
        if self.sock.read_buf(&mut self.buf).await? == 0 {
            bail!("Redis closed the connection");
        }
        Ok(())
    }

    /// A `\r\n`-terminated header at `pos`: its type byte and number, and
    /// where the line ends.
    async fn line(&mut self, pos: usize) -> Result<(u8, i64, usize)> {
        loop {
            if let Some(k) = self.buf[pos..].windows(2).position(|w| w == b"\r\n") {
                let line = &self.buf[pos..pos + k];
                let Some((&t, num)) = line.split_first() else {
                    bail!("empty RESP line");
                };
                if t == b'-' {
                    bail!("Redis: {}", String::from_utf8_lossy(num));
                }
                let v: i64 = std::str::from_utf8(num)?.parse()?;
                return Ok((t, v, pos + k + 2));
            }
            self.fill().await?;
        }
    }

    /// Reads one reply of `2 * n` bulk strings; returns its size in bytes.
    async fn read_reply(&mut self, n: u64) -> Result<u64> {
        let (t, items, mut pos) = self.line(0).await?;
        if t != b'*' || items != 2 * n as i64 {
            bail!(
                "expected an array of {} items, got {}{items}",
                2 * n,
                t as char
            );
        }
        let mut total = pos as u64;
        for _ in 0..items {
            let (t, len, after) = self.line(pos).await?;
            if t != b'$' || len < 0 {
                bail!("expected a bulk string");
            }
            let end = after + len as usize + 2;
            while self.buf.len() < end {
                self.fill().await?;
            }
            total += (end - pos) as u64;
            pos = end;
            // Drop what is read now and then: the reply is not kept.
            if pos > (1 << 20) {
                self.buf.advance(pos);
                pos = 0;
            }
        }
        self.buf.advance(pos);
        Ok(total)
    }
}

/// MB/s of copying a buffer of `size` bytes into another, in process.
fn memcpy_mbps(size: usize, min: Duration) -> f64 {
    let size = size.max(1);
    let src = vec![0x5au8; size];
    let mut dst = vec![0u8; size];
    dst.copy_from_slice(&src); // fault the pages in
    let start = Instant::now();
    let mut copies = 0u64;
    while copies < 3 || start.elapsed() < min.min(Duration::from_millis(500)) {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
        copies += 1;
    }
    (size as u64 * copies) as f64 / start.elapsed().as_secs_f64() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_sizes_are_computed_from_the_encoding() {
        // One entry: {member: "m0", score: f64, rank: 1}.
        let mut one = Vec::new();
        rmpv::encode::write_value(
            &mut one,
            &rmpv::Value::Map(vec![
                ("member".into(), "m0".into()),
                ("score".into(), 1.5f64.into()),
                ("rank".into(), 1u64.into()),
            ]),
        )
        .unwrap();
        assert_eq!(entry_bytes(0), one.len() as u64);
        assert_eq!(entry_bytes(999_999) - entry_bytes(99_999), 1);
        let n = entries_for(MIB);
        assert!(export_bytes(n) >= MIB && export_bytes(n - 1) < MIB + 64);
        assert_eq!(size_label(128 * MIB), "128 MiB");
        assert_eq!(size_label(64 * 1024), "64 KiB");
    }

    /// A blob's text is exactly the size asked for, and already in the
    /// form the service stores (`Value::to_string()`), so the board holds
    /// those bytes and `--blob 4KiB` fits the default limit.
    #[test]
    fn blobs_are_exactly_their_size_as_stored() {
        for (i, n) in [(0, 12), (7, 100), (3, 4096), (9, 65_536)] {
            let t = blob_json(i, n);
            assert_eq!(t.len(), n);
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert_eq!(v.to_string(), t);
            let rmpv::Value::Map(m) = Shape::Blob.value(i, n as u64) else {
                panic!("not a map");
            };
            assert_eq!(m[0].1.as_str(), v["blob"].as_str());
        }
    }

    #[test]
    fn memcpy_reference_is_positive() {
        assert!(memcpy_mbps(1 << 16, Duration::from_millis(10)) > 0.0);
    }
}
