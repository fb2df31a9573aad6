//! The over-HTTP half of the `search` scenario (docs/spec.md §7.3): a `podium
//! serve` started on free ports with a temporary data directory, loaded
//! with generated player names (the in-process half's generator) through
//! pipelined MessagePack-RPC `import` calls, its index built by one
//! search, then `a`, `a* a` and `a* a* a` asked over `GET
//! /v1/boards/{board}/search` by concurrent keep-alive HTTP/1.1 clients for
//! a fixed time each: queries/s and latency percentiles.
//!
//! The clients speak HTTP/1.1 over plain sockets (one request at a time per
//! connection, the response read by its `Content-Length`), all of a client
//! thread's connections on one `epoll` loop as `wrk` does: a general HTTP
//! client, or one task per connection on an async runtime, costs CPU per
//! request that on a 2-core machine is taken from the server. With
//! `--wrk`, `wrk` asks the same URLs too, as an independent check.

use std::io::{Read as _, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use podium_client::Client;
use rand::rngs::SmallRng;
use rand::SeedableRng;

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
    /// Also ask each query with `wrk` (when installed), as many
    /// connections for as long: an independent client's figure for the
    /// same URL on the same server.
    pub wrk: bool,
}

impl Default for HttpSearchOptions {
    fn default() -> Self {
        HttpSearchOptions {
            net: NetOptions::default(),
            members: 1_000_000,
            clients: 32,
            client_threads: 1,
            duration: Duration::from_secs(5),
            wrk: false,
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
    /// `wrk`'s requests/s for the same URL, when asked for.
    pub wrk: Option<WrkRun>,
    /// CPU time per answer (µs) of this process (the load client) and of
    /// the server while the bench's client asked: where a 2-core machine's
    /// time went. `None` without `/proc`.
    pub cpu_us: Option<(f64, f64)>,
}

/// What `wrk` reported for one URL.
#[derive(Debug, Clone, Copy)]
pub struct WrkRun {
    pub rate: f64,
    /// Answers that were not 2xx/3xx (must be 0).
    pub non_2xx: u64,
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

/// One keep-alive HTTP/1.1 connection of the load client: a non-blocking
/// socket sending one fixed GET at a time and reading its answer.
struct Conn {
    s: mio::net::TcpStream,
    /// Received bytes are `buf[..filled]`; the rest is room to read into.
    buf: Vec<u8>,
    filled: usize,
    /// When the request in flight was sent; `None`: nothing in flight.
    sent: Option<Instant>,
    /// The first answer of a connection is not counted (its setup).
    warm: bool,
}

/// What reading a connection gave.
enum Read {
    /// The answer is not complete yet: wait for the socket.
    Pending,
    /// One whole answer: its status, and where its body starts and ends.
    Done { status: u16, body: (usize, usize) },
}

impl Conn {
    fn connect(addr: SocketAddr, poll: &mio::Poll, token: mio::Token) -> Result<Conn> {
        // A blocking connect, then non-blocking use: the connection is
        // set up before the clock starts.
        let s = std::net::TcpStream::connect(addr)
            .with_context(|| format!("cannot connect to {addr}"))?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let mut s = mio::net::TcpStream::from_std(s);
        poll.registry()
            .register(&mut s, token, mio::Interest::READABLE)?;
        Ok(Conn {
            s,
            buf: vec![0; 16 << 10],
            filled: 0,
            sent: None,
            warm: true,
        })
    }

    fn send(&mut self, request: &[u8]) -> Result<()> {
        self.filled = 0;
        // A request of a few dozen bytes into an idle socket's send buffer
        // is taken whole; anything else is this connection's failure.
        match self.s.write(request) {
            Ok(n) if n == request.len() => {
                self.sent = Some(Instant::now());
                Ok(())
            }
            Ok(n) => bail!(
                "the socket took {n} of the request's {} bytes",
                request.len()
            ),
            Err(e) => Err(e).context("cannot send the request"),
        }
    }

    /// Reads what the socket holds (edge-triggered: until it would block
    /// or the answer is whole).
    fn read(&mut self) -> Result<Read> {
        loop {
            let got = &self.buf[..self.filled];
            if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let want = i + 4 + content_length(&got[..i])?;
                if got.len() > want {
                    bail!("more bytes than one response: a reply to no request");
                }
                if got.len() == want {
                    let status = std::str::from_utf8(got.get(9..12).unwrap_or_default())
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| anyhow!("not an HTTP status line"))?;
                    return Ok(Read::Done {
                        status,
                        body: (i + 4, want),
                    });
                }
            }
            if self.buf.len() - self.filled < 4096 {
                // Zeroed once per growth, not per read.
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.s.read(&mut self.buf[self.filled..]) {
                Ok(0) => bail!("the server closed the connection"),
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(Read::Pending),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("cannot read the response"),
            }
        }
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
        if let Some((client, server)) = run.cpu_us {
            add(
                format!("http_client_cpu_us_{key}"),
                format!("  load client CPU per query {:?}", run.query),
                "µs",
                client,
                None,
                Better::Lower,
            );
            add(
                format!("http_server_cpu_us_{key}"),
                format!("  server CPU per query {:?}", run.query),
                "µs",
                server,
                None,
                Better::Lower,
            );
        }
        if let Some(w) = run.wrk {
            add(
                format!("http_wrk_queries_{key}"),
                format!("  wrk, same URL and connections {:?}", run.query),
                "queries/s",
                w.rate,
                None,
                Better::Higher,
            );
            add(
                format!("http_wrk_non_2xx_{key}"),
                format!("  wrk non-2xx answers {:?} (must be 0)", run.query),
                "count",
                w.non_2xx as f64,
                None,
                Better::Lower,
            );
        }
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
    let mut runs = Vec::new();
    for (q, _) in QUERIES {
        let path = format!("/v1/boards/{BOARD}/search?q={}&limit=25", query_param(q));
        let cpu0 = (net::cpu_seconds(None), net::cpu_seconds(Some(server.pid())));
        let run = ask(server.http, &path, opts)?;
        let cpu1 = (net::cpu_seconds(None), net::cpu_seconds(Some(server.pid())));
        let answers = (run.ok + run.errors).max(1) as f64;
        let cpu_us = match (cpu0, cpu1) {
            ((Some(c0), Some(s0)), (Some(c1), Some(s1))) => {
                Some(((c1 - c0) * 1e6 / answers, (s1 - s0) * 1e6 / answers))
            }
            _ => None,
        };
        let wrk = if opts.wrk {
            wrk(server.http, &path, opts)?
        } else {
            None
        };
        runs.push(HttpRun {
            query: q.to_string(),
            wrk,
            cpu_us,
            ..run
        });
    }
    Ok((load_t, build_t, runs))
}

/// `opts.clients` connections asking `path` until the time is up, spread
/// over `opts.client_threads` threads.
pub fn ask(addr: SocketAddr, path: &str, opts: &HttpSearchOptions) -> Result<HttpRun> {
    let threads = opts.client_threads.clamp(1, opts.clients.max(1));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let t0 = Instant::now();
    let deadline = t0 + opts.duration;
    let tallies: Vec<Result<Tally>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                // Connections dealt round-robin: threads differ by one at most.
                let n = (opts.clients + threads - 1 - t) / threads;
                let request = &request;
                scope.spawn(move || ask_on_thread(addr, request, n, deadline))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a client thread panicked")))
            })
            .collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.merge(t?);
    }
    Ok(HttpRun {
        query: String::new(),
        ok: all.ok,
        errors: all.errors,
        secs: t0.elapsed().as_secs_f64(),
        lat: all.lat.summary(),
        first_error: all.first_error,
        wrk: None,
        cpu_us: None,
    })
}

/// `wrk -t1 -c{clients} -d{seconds}` on `path` (`None` when `wrk` is not
/// installed): the same load from a client this crate did not write.
fn wrk(addr: SocketAddr, path: &str, opts: &HttpSearchOptions) -> Result<Option<WrkRun>> {
    let Some(bin) = net::find_program("wrk") else {
        return Ok(None);
    };
    let out = std::process::Command::new(&bin)
        .arg("-t1")
        .arg(format!("-c{}", opts.clients))
        .arg(format!(
            "-d{}s",
            opts.duration.as_secs_f64().ceil().max(1.0)
        ))
        .arg(format!("http://{addr}{path}"))
        .output()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "wrk failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    parse_wrk(&text).map(Some)
}

/// Requests/s and non-2xx/3xx answers from `wrk`'s report.
fn parse_wrk(text: &str) -> Result<WrkRun> {
    let value = |prefix: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(str::trim)
    };
    let rate = value("Requests/sec:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("no Requests/sec in wrk's report: {text}"))?;
    let non_2xx = match value("Non-2xx or 3xx responses:") {
        Some(v) => v
            .parse()
            .with_context(|| format!("wrk's non-2xx count {v:?}"))?,
        None => 0,
    };
    Ok(WrkRun { rate, non_2xx })
}

/// `clients` connections on this thread, each sending `request` again as
/// soon as the answer is whole, until `deadline`; one `epoll` loop (what
/// `wrk` does), no async runtime. A request sent before the deadline is
/// awaited and counted; each connection's first answer is not counted.
fn ask_on_thread(
    addr: SocketAddr,
    request: &[u8],
    clients: usize,
    deadline: Instant,
) -> Result<Tally> {
    let mut poll = mio::Poll::new()?;
    let mut events = mio::Events::with_capacity(clients.max(1));
    let mut tally = Tally::default();
    let mut conns = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut c = Conn::connect(addr, &poll, mio::Token(i))?;
        c.send(request)?;
        conns.push(c);
    }
    let mut in_flight = clients;
    while in_flight > 0 {
        match poll.poll(&mut events, Some(Duration::from_secs(10))) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("epoll_wait"),
        }
        if events.is_empty() {
            bail!("no answer from the server for 10 s");
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let c = &mut conns[i];
            // Nothing asked (the time is up): nothing to read.
            let Some(sent) = c.sent else { continue };
            match c.read() {
                Ok(Read::Pending) => continue,
                Ok(Read::Done { status: 200, .. }) => {
                    if !c.warm {
                        tally.lat.record(sent.elapsed());
                        tally.ok += 1;
                    }
                }
                Ok(Read::Done { status, body }) => {
                    let body = String::from_utf8_lossy(&c.buf[body.0..body.1]);
                    tally.error(format!("HTTP {status}: {body}"));
                }
                Err(e) => {
                    tally.error(format!("{e:#}"));
                    poll.registry().deregister(&mut c.s)?;
                    *c = Conn::connect(addr, &poll, mio::Token(i))?;
                }
            }
            c.warm = false;
            c.sent = None;
            if Instant::now() < deadline {
                if let Err(e) = c.send(request) {
                    tally.error(format!("{e:#}"));
                    in_flight -= 1;
                }
            } else {
                in_flight -= 1;
            }
        }
    }
    Ok(tally)
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
    fn wrk_reports() {
        let ok = "Running 5s test @ http://127.0.0.1:1/x\n  1 threads and 32 connections\n  \
                  153412 requests in 5.00s, 310.12MB read\nRequests/sec:  30680.25\n\
                  Transfer/sec:     62.01MB\n";
        let w = parse_wrk(ok).unwrap();
        assert_eq!((w.rate, w.non_2xx), (30680.25, 0));
        let bad = ok.replace(
            "Requests/sec",
            "  Non-2xx or 3xx responses: 17\nRequests/sec",
        );
        assert_eq!(parse_wrk(&bad).unwrap().non_2xx, 17);
        assert!(parse_wrk("wrk: connection refused").is_err());
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
