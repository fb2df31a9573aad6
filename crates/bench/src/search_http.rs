//! The over-HTTP half of the `search` scenario (SPEC §7.3): a `podium
//! serve` started on free ports with a temporary data directory, loaded
//! with generated player names (the in-process half's generator) through
//! pipelined MessagePack-RPC `import` calls, its index built by one
//! search, then `a`, `a* a` and `a* a* a` asked over `GET
//! /v1/boards/{board}/search` by concurrent keep-alive HTTP/1.1 clients for
//! a fixed time each: queries/s and latency percentiles.
//!
//! The clients speak HTTP/1.1 over plain sockets (one request at a time per
//! connection, the response read by its `Content-Length`): a general HTTP
//! client costs several times more CPU per request than the search, and on
//! a 2-core machine that CPU is taken from the server.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use podium_client::Client;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use crate::engine::random_score;
use crate::load::{self, Load, Method, Scores};
use crate::net::{self, bar, NetOptions, PodiumServer, Summary, Tally};
use crate::report::{self, Better, Record, Table};
use crate::search::{self, PUBLISHED_QUERIES, QUERIES};

const BOARD: &str = "search";

#[derive(Debug, Clone)]
pub struct HttpSearchOptions {
    pub net: NetOptions,
    /// Named members loaded into the server.
    pub members: u64,
    /// Concurrent HTTP clients, one keep-alive connection each.
    pub clients: usize,
    /// Threads the clients run on (0: the bench's own thread).
    pub client_threads: usize,
    /// How long each query kind is asked.
    pub duration: Duration,
}

impl Default for HttpSearchOptions {
    fn default() -> Self {
        HttpSearchOptions {
            net: NetOptions::default(),
            members: 1_000_000,
            clients: 32,
            client_threads: 1,
            duration: Duration::from_secs(5),
        }
    }
}

/// One query kind over HTTP.
#[derive(Debug, Clone)]
pub struct HttpRun {
    pub query: String,
    pub ok: u64,
    pub errors: u64,
    pub secs: f64,
    pub lat: Summary,
    pub first_error: Option<String>,
}

impl HttpRun {
    pub fn rate(&self) -> f64 {
        self.ok as f64 / self.secs
    }
}

/// `?q=` value: the queries hold only letters, `*` and spaces.
fn query_param(q: &str) -> String {
    q.replace('*', "%2A").replace(' ', "%20")
}

/// A keep-alive HTTP/1.1 connection sending one fixed GET after another.
pub struct RawGet {
    s: TcpStream,
    request: Vec<u8>,
    buf: Vec<u8>,
}

impl RawGet {
    pub async fn connect(addr: SocketAddr, path: &str) -> Result<RawGet> {
        let s = TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        s.set_nodelay(true)?;
        Ok(RawGet {
            s,
            request: format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes(),
            buf: Vec::with_capacity(16 << 10),
        })
    }

    /// Sends the request once; returns the status and the body.
    pub async fn get(&mut self) -> Result<(u16, &[u8])> {
        self.s.write_all(&self.request).await?;
        self.buf.clear();
        let mut head_end = None;
        let mut want = usize::MAX;
        loop {
            if head_end.is_none() {
                if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    head_end = Some(i + 4);
                    want = i + 4 + content_length(&self.buf[..i])?;
                }
            }
            if self.buf.len() >= want {
                break;
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(16 << 10);
            }
            let n = self.s.read_buf(&mut self.buf).await?;
            if n == 0 {
                bail!("the server closed the connection");
            }
        }
        if self.buf.len() > want {
            bail!("more bytes than one response: a reply to no request");
        }
        let head = head_end.expect("set before want");
        let status = std::str::from_utf8(self.buf.get(9..12).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow!("not an HTTP status line"))?;
        Ok((status, &self.buf[head..want]))
    }
}

/// The `Content-Length` of a response head (this client needs one).
fn content_length(head: &[u8]) -> Result<usize> {
    let text = std::str::from_utf8(head).context("response head is not UTF-8")?;
    text.split("\r\n")
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| anyhow!("a response without Content-Length: {text}"))
}

/// The names of members `m0…m{n-1}`, as the in-process half generates
/// them, and their random scores.
pub fn named_members(n: u64, seed: u64) -> (Vec<String>, Vec<f64>) {
    let names = search::Names::new(seed);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut name = String::new();
    let mut all = Vec::with_capacity(n as usize);
    let mut scores = Vec::with_capacity(n as usize);
    for _ in 0..n {
        names.name(&mut rng, &mut name);
        all.push(name.clone());
        scores.push(random_score(&mut rng));
    }
    (all, scores)
}

/// Loads `names` into `board` with `import` calls of 10,000, 4 in flight;
/// returns the time from the first call to the last answer.
pub async fn import_named(
    c: &Client,
    board: &str,
    names: &[String],
    scores: &[f64],
    progress: bool,
) -> Result<Duration> {
    let n = names.len() as u64;
    let pb = bar(progress, n, &format!("podium {board}"));
    let t = load::podium_named(
        c,
        Method::Import,
        &Load {
            board,
            n,
            batch: 10_000,
            depth: 4,
            scores: Scores::Given(scores),
        },
        Some(names),
        &pb,
    )
    .await?;
    pb.finish_and_clear();
    Ok(t)
}

#[derive(serde::Deserialize)]
struct SearchTotal {
    total: u64,
}

/// One search over RPC (the first builds the board's index); returns its
/// time and `total`.
pub async fn first_search(c: &Client, board: &str, query: &str) -> Result<(Duration, u64)> {
    #[derive(serde::Serialize)]
    struct Opts {
        limit: u64,
    }
    let t = Instant::now();
    let r: SearchTotal = c
        .call_as(
            "search",
            &podium_client::Ser((board, query, Opts { limit: 1 })),
        )
        .await
        .with_context(|| format!("search {query:?} on {board}"))?;
    Ok((t.elapsed(), r.total))
}

/// Runs the over-HTTP figures; prints a table and returns its records.
pub fn run(opts: &HttpSearchOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.members == 0 || opts.clients == 0 || opts.duration.is_zero() {
        bail!("--http-members, --clients and --http-seconds must be more than 0");
    }
    let n = opts.members;
    writeln!(
        out,
        "\nsearch over HTTP: {} named members, {} clients (keep-alive HTTP/1.1, one request \
         at a time each) on {} client thread(s), {:.0} s per query, seed {}",
        report::thousands(n as i128),
        opts.clients,
        opts.client_threads.max(1),
        opts.duration.as_secs_f64(),
        opts.net.seed
    )?;
    let (names, scores) = named_members(n, opts.net.seed);
    let server = PodiumServer::start(&opts.net.exe, opts.net.fsync)?;
    writeln!(out, "podium on {} (HTTP)", server.http)?;
    out.flush()?;
    let (load_t, build_t, runs) = measure(opts, &server, &names, &scores)
        .with_context(|| format!("podium side; its log:\n{}", server.log()))?;
    drop(server);

    let mut table = Table::new(["figure", "unit", "podium", "published", "podium advantage"]);
    let mut records = Vec::new();
    let mut add = |key: String, label: String, unit: &str, v: f64, base: Option<f64>, better| {
        let r = search::record(
            n,
            &key,
            unit,
            Some(v),
            base.map(|b| (b, PUBLISHED_QUERIES)),
            better,
        );
        table.row([
            label,
            unit.to_string(),
            report::num(Some(v)),
            report::num(base),
            report::ratio_cell(r.ratio),
        ]);
        records.push(r);
    };
    for (run, (_, published)) in runs.iter().zip(QUERIES) {
        let key = run.query.replace("* ", "_").replace(' ', "_");
        add(
            format!("http_queries_{key}"),
            format!("HTTP query {:?}, first page of 25", run.query),
            "queries/s",
            run.rate(),
            Some(published),
            Better::Higher,
        );
        add(
            format!("http_p50_{key}"),
            format!("  p50 {:?}", run.query),
            "ms",
            run.lat.p50_ns / 1e6,
            None,
            Better::Lower,
        );
        add(
            format!("http_p99_{key}"),
            format!("  p99 {:?}", run.query),
            "ms",
            run.lat.p99_ns / 1e6,
            None,
            Better::Lower,
        );
        add(
            format!("http_errors_{key}"),
            format!("  errors {:?} (must be 0)", run.query),
            "count",
            run.errors as f64,
            None,
            Better::Lower,
        );
    }
    writeln!(out)?;
    write!(out, "{}", table.render())?;
    writeln!(
        out,
        "  loaded by import over MessagePack-RPC in {:.2} s; the first search (index build) took \
         {:.2} s",
        load_t.as_secs_f64(),
        build_t.as_secs_f64()
    )?;
    let a = runs.first().map_or(0.0, HttpRun::rate);
    writeln!(
        out,
        "  goal ≥ 30,000 queries/s over HTTP for \"a\": {}; published figures are in process",
        net::met(a >= 30_000.0)
    )?;
    for r in &runs {
        if let Some(e) = &r.first_error {
            writeln!(out, "  first error for {:?}: {e}", r.query)?;
        }
    }
    Ok(records)
}

fn measure(
    opts: &HttpSearchOptions,
    server: &PodiumServer,
    names: &[String],
    scores: &[f64],
) -> Result<(Duration, Duration, Vec<HttpRun>)> {
    let (load_t, build_t) = net::runtime(0)?.block_on(async {
        let c = Client::connect(server.rpc).await?;
        let load_t = import_named(&c, BOARD, names, scores, opts.net.progress).await?;
        let (build_t, _) = first_search(&c, BOARD, "a").await?;
        anyhow::Ok((load_t, build_t))
    })?;
    let rt = net::runtime(opts.client_threads)?;
    let mut runs = Vec::new();
    for (q, _) in QUERIES {
        let path = format!("/v1/boards/{BOARD}/search?q={}&limit=25", query_param(q));
        let run = rt.block_on(ask(server.http, path, opts))?;
        runs.push(HttpRun {
            query: q.to_string(),
            ..run
        });
    }
    Ok((load_t, build_t, runs))
}

/// `opts.clients` connections asking `path` until the time is up.
async fn ask(addr: SocketAddr, path: String, opts: &HttpSearchOptions) -> Result<HttpRun> {
    let start = Arc::new(Barrier::new(opts.clients + 1));
    let duration = opts.duration;
    let mut tasks = Vec::new();
    for _ in 0..opts.clients {
        let (start, path) = (start.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            // The barrier is passed whatever happens, or the others would
            // wait.
            let conn = RawGet::connect(addr, &path).await;
            start.wait().await;
            let mut conn = conn?;
            // One request outside the clock: the connection's first.
            conn.get().await?;
            let deadline = Instant::now() + duration;
            while Instant::now() < deadline {
                let t = Instant::now();
                match conn.get().await {
                    Ok((200, _)) => {
                        tally.lat.record(t.elapsed());
                        tally.ok += 1;
                    }
                    Ok((status, body)) => {
                        tally.error(format!("HTTP {status}: {}", String::from_utf8_lossy(body)));
                    }
                    Err(e) => {
                        tally.error(format!("{e:#}"));
                        conn = RawGet::connect(addr, &path).await?;
                    }
                }
            }
            anyhow::Ok(tally)
        }));
    }
    start.wait().await;
    let t0 = Instant::now();
    let mut all = Tally::default();
    for t in tasks {
        all.merge(t.await??);
    }
    Ok(HttpRun {
        query: String::new(),
        ok: all.ok,
        errors: all.errors,
        secs: t0.elapsed().as_secs_f64(),
        lat: all.lat.summary(),
        first_error: all.first_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_params() {
        assert_eq!(
            content_length(b"HTTP/1.1 200 OK\r\ncontent-type: x\r\nContent-Length: 42").unwrap(),
            42
        );
        assert!(content_length(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked").is_err());
        assert_eq!(query_param("a* a* a"), "a%2A%20a%2A%20a");
    }

    #[test]
    fn named_members_are_deterministic() {
        let (a, sa) = named_members(100, 5);
        let (b, sb) = named_members(100, 5);
        assert_eq!((a.len(), sa.len()), (100, 100));
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(a.iter().all(|n| n.contains(' ')));
    }
}
