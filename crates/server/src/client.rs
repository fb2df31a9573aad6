//! The client commands of `podium` (docs/spec.md §6): `top`, `submit`, `search`,
//! `import` and `export`, talking to a running server over MessagePack-RPC (`--rpc`,
//! default `127.0.0.1:7071`, with [`podium_client`]) or, with `--http URL`,
//! over its HTTP API (docs/spec.md §4).
//!
//! Requests and results use the shapes of [`podium_core::api`]. A server error
//! (an RPC error `[code, message]`, or over HTTP `{"error": {"code",
//! "message"}}` with a 4xx/5xx status) reads `message (code)`; an
//! unreachable server "cannot reach podium at ADDR: is `podium serve`
//! running?". Over RPC, `import` reads the NDJSON or CSV file itself and
//! sends it as `import` calls of 10,000 entries, several in flight, and
//! `export` receives one response and writes it out as NDJSON, entry by
//! entry; over HTTP both stream their bodies. A progress bar on stderr
//! follows long transfers (hidden when stderr is not a terminal, or with
//! `--quiet`).

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use podium_client::{blocking, ClientError, ResponseFuture, Ser};
use reqwest::blocking::{Body, Client, RequestBuilder, Response};
use serde::{Deserialize, Serialize};

use crate::http::stream::csv_fields;
use podium_core::api::{
    parse_score, BoardOut, EntryOut, ErrorBody, Score, SearchOut, SubmitIn, SubmitOut, TopOut,
};

/// Everything but RFC 3986's unreserved characters is escaped in a path
/// segment, so `/`, `?`, `#`, `%`, spaces and non-ASCII survive the trip.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// How long a small request (`top`, `submit`, board info) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many per-entry import errors are shown.
const SHOWN_ERRORS: usize = 10;
/// Entries per `import` call over RPC (one durable commit each).
pub const IMPORT_BATCH: usize = 10_000;
/// Bytes of records per `import` call at most (a batch of large `data`
/// objects is sent before it has 10,000 entries).
const IMPORT_BATCH_BYTES: usize = 8 << 20;
/// `import` calls in flight.
const IMPORT_IN_FLIGHT: usize = 4;
/// The longest import record (line) accepted, as over HTTP.
const MAX_RECORD_BYTES: usize = 1 << 20;

/// Where the server is and how to authenticate.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Address (HOST:PORT) of the podium server's MessagePack-RPC port.
    #[arg(
        long,
        env = "PODIUM_RPC_SERVER",
        default_value = "127.0.0.1:7071",
        value_name = "ADDR"
    )]
    pub rpc: String,
    /// Use the HTTP API at this base URL instead of MessagePack-RPC
    /// (e.g. http://127.0.0.1:7070); --rpc is then ignored.
    #[arg(
        long,
        visible_alias = "server",
        env = "PODIUM_SERVER",
        value_name = "URL"
    )]
    pub http: Option<String>,
    /// API key: sent with `auth` over RPC, as `Authorization: Bearer KEY`
    /// over HTTP. Given here it shows in `ps`; PODIUM_API_KEY does not.
    #[arg(long, env = "PODIUM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}

/// `podium top BOARD`.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to read.
    pub board: String,
    /// Page to show, from 1.
    #[arg(long, default_value_t = 1)]
    pub page: u64,
    /// Entries per page.
    #[arg(long, default_value_t = 25)]
    pub page_size: u64,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `podium search BOARD QUERY`.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to search.
    pub board: String,
    /// Words to find in members' names, e.g. `ali`, `jean luc` or
    /// `team:red al*` (see docs/search.md); quote it for the shell.
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// Matches shown at most.
    #[arg(long, default_value_t = 25)]
    pub limit: u64,
    /// Matches skipped first (the next page starts at offset + limit).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Also show each match's data.
    #[arg(long)]
    pub with_data: bool,
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `podium submit BOARD MEMBER SCORE`.
#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to submit to.
    pub board: String,
    /// The member whose score this is.
    #[arg(allow_hyphen_values = true)]
    pub member: String,
    /// The score: a number, `inf` or `-inf`.
    #[arg(allow_hyphen_values = true)]
    pub score: String,
    /// `set`, `best` or `incr`; the board's default when absent.
    #[arg(long)]
    pub op: Option<String>,
    /// Display name of the member (`""` clears it).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the server's JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// `podium import BOARD FILE`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to import into.
    pub board: String,
    /// NDJSON or CSV file to upload; `-` reads standard input.
    pub file: PathBuf,
    /// `ndjson` or `csv`; by default `csv` for a `.csv` file, else `ndjson`.
    #[arg(long)]
    pub format: Option<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `podium export BOARD`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to export.
    pub board: String,
    /// Write the NDJSON here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar or summary.
    #[arg(long)]
    pub quiet: bool,
}

/// The result of `POST /v1/boards/{board}/import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportOut {
    pub board: String,
    pub imported: u64,
    pub failed: u64,
    #[serde(default)]
    pub errors: Vec<ImportError>,
}

/// One refused line of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportError {
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub member: Option<String>,
    pub error: ErrorBody,
}

/// An error the server answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub status: u16,
    /// The server's error code; empty when the body was not podium's error
    /// shape (a proxy's page, say).
    pub code: String,
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code.is_empty() {
            write!(f, "{} (HTTP {})", self.message, self.status)
        } else {
            write!(f, "{} ({})", self.message, self.code)
        }
    }
}

impl std::error::Error for ServerError {}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

/// The error in a failed response's body.
pub fn server_error(status: u16, body: &[u8]) -> ServerError {
    if let Ok(e) = serde_json::from_slice::<ErrorEnvelope>(body) {
        return ServerError {
            status,
            code: e.error.code,
            message: e.error.message,
        };
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let message = if text.is_empty() {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("request failed")
            .to_string()
    } else {
        let mut t: String = text.chars().take(200).collect();
        if t.len() < text.len() {
            t.push('…');
        }
        t
    };
    ServerError {
        status,
        code: String::new(),
        message,
    }
}

/// A path segment, percent-encoded.
pub fn segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// The server's base URL without a trailing slash; `http://` is assumed
/// when no scheme is given.
pub fn base_url(server: &str) -> Result<String> {
    let s = server.trim().trim_end_matches('/');
    if s.is_empty() {
        bail!("--server is empty");
    }
    let s = if s.contains("://") {
        s.to_string()
    } else {
        format!("http://{s}")
    };
    if !s.starts_with("http://") {
        bail!("--server {server:?}: podium's API is plain HTTP, the URL must start with http://");
    }
    Ok(s)
}

/// `{base}/v1/boards/{board}{rest}`, the board percent-encoded. `.` and
/// `..` are refused: URL parsing would resolve them as dot segments.
pub fn board_url(base: &str, board: &str, rest: &str) -> Result<String> {
    if board.is_empty() {
        bail!("the board name is empty");
    }
    if board == "." || board == ".." {
        bail!("board {board:?} cannot be named in an HTTP path");
    }
    Ok(format!("{base}/v1/boards/{}{rest}", segment(board)))
}

pub fn search_url(base: &str, board: &str, a: &SearchArgs) -> Result<String> {
    let mut url = board_url(base, board, "/search")?;
    url.push_str("?q=");
    url.extend(utf8_percent_encode(&a.query, SEGMENT));
    url.push_str(&format!("&limit={}&offset={}", a.limit, a.offset));
    if a.with_data {
        url.push_str("&with_data=true");
    }
    Ok(url)
}

pub fn top_url(base: &str, board: &str, page: u64, page_size: u64) -> Result<String> {
    board_url(
        base,
        board,
        &format!("/top?page={page}&page_size={page_size}"),
    )
}

pub fn scores_url(base: &str, board: &str) -> Result<String> {
    board_url(base, board, "/scores")
}

pub fn export_url(base: &str, board: &str) -> Result<String> {
    board_url(base, board, "/export")
}

pub fn import_url(base: &str, board: &str, format: Format) -> Result<String> {
    board_url(base, board, &format!("/import?format={}", format.as_str()))
}

/// An import's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ndjson,
    Csv,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv",
        }
    }

    /// `--format` if given, else from the file's extension.
    pub fn choose(flag: Option<&str>, file: &Path) -> Result<Format> {
        match flag.map(|f| f.trim().to_ascii_lowercase()) {
            Some(f) if f == "ndjson" || f == "jsonl" => Ok(Format::Ndjson),
            Some(f) if f == "csv" => Ok(Format::Csv),
            Some(f) => bail!("--format {f:?}: expected ndjson or csv"),
            None => {
                let csv = file
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
                Ok(if csv { Format::Csv } else { Format::Ndjson })
            }
        }
    }
}

/// A connection to one server.
struct Api {
    base: String,
    key: Option<String>,
    http: Client,
}

impl Api {
    fn new(server: &str, conn: &Conn) -> Result<Api> {
        let http = Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            // Streams run as long as they need; small requests set their own.
            .timeout(None)
            .user_agent(concat!("podium/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Api {
            base: base_url(server)?,
            key: conn.api_key.clone().filter(|k| !k.is_empty()),
            http,
        })
    }

    fn auth(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.key {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }

    /// Sends a request; a 2xx response comes back, anything else is an
    /// error.
    fn send(&self, rb: RequestBuilder) -> Result<Response> {
        let resp = self
            .auth(rb)
            .send()
            .map_err(|e| transport_error(&self.base, e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let mut body = Vec::new();
        // An error body is small; don't read a runaway one whole.
        let _ = resp.take(64 * 1024).read_to_end(&mut body);
        Err(server_error(status.as_u16(), &body).into())
    }

    /// A small request whose whole body is wanted.
    fn call(&self, rb: RequestBuilder) -> Result<Vec<u8>> {
        let resp = self.send(rb.timeout(REQUEST_TIMEOUT))?;
        let body = resp.bytes().map_err(|e| transport_error(&self.base, e))?;
        Ok(body.to_vec())
    }

    fn board_info(&self, board: &str) -> Result<BoardOut> {
        let url = board_url(&self.base, board, "")?;
        let body = self.call(self.http.get(url))?;
        parse(&body)
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        anyhow!("unexpected answer from the server ({e}): {text}")
    })
}

/// A transport failure, worded for people.
fn transport_error(base: &str, e: reqwest::Error) -> anyhow::Error {
    let cause = root_cause(&e);
    if e.is_connect() {
        anyhow!("cannot reach podium at {base}: is `podium serve` running? ({cause})")
    } else if e.is_timeout() {
        anyhow!("podium at {base} did not answer in time ({cause})")
    } else if e.is_builder() {
        anyhow!("bad server URL {base}: {cause}")
    } else {
        anyhow!("talking to podium at {base} failed: {e} ({cause})")
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(s) = last.source() {
        last = s;
    }
    last.to_string()
}

/// A score for people: `inf`, `-inf`, plain decimals, or exponent form for
/// the very large and very small.
pub fn fmt_score(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Member ids and names may hold anything; control characters would break
/// the table, so they are shown escaped.
fn printable(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.escape_debug().to_string()
    } else {
        s.to_string()
    }
}

/// Entries as an aligned table (RANK, MEMBER, SCORE, then NAME when any
/// has one and DATA when asked), or `empty` when there are none.
fn render_entries(entries: &[EntryOut], with_data: bool, empty: &str) -> String {
    if entries.is_empty() {
        return format!("{empty}\n");
    }
    let with_names = entries.iter().any(|e| e.name.is_some());
    let mut header = vec!["RANK".to_string(), "MEMBER".into(), "SCORE".into()];
    if with_names || with_data {
        header.push(if with_names {
            "NAME".into()
        } else {
            String::new()
        });
    }
    if with_data {
        header.push("DATA".into());
    }
    let mut rows: Vec<Vec<String>> = vec![header];
    for e in entries {
        let mut r = vec![
            e.rank.to_string(),
            printable(&e.member),
            fmt_score(e.score.0),
        ];
        if with_names || with_data {
            r.push(e.name.as_deref().map(printable).unwrap_or_default());
        }
        if with_data {
            r.push(e.data.as_ref().map(|d| d.to_string()).unwrap_or_default());
        }
        rows.push(r);
    }
    let cols = rows[0].len();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols).map(width).collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i] - cell.chars().count();
            // Numbers right-aligned, text left-aligned; the last column
            // is not padded.
            if i == 0 || i == 2 {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if i + 1 < cols {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The `top` table, footer included.
pub fn render_top(t: &TopOut) -> String {
    let mut out = render_entries(&t.entries, false, "(no entries on this page)");
    out.push_str(&format!(
        "page {} of {} ({} members, ranking {})\n",
        t.page, t.total_pages, t.total, t.ranking
    ));
    out
}

/// The `search` table, with how many members match in all and which of
/// them are shown.
pub fn render_search(s: &SearchOut, with_data: bool) -> String {
    let empty = if s.total == 0 {
        "(no matches)"
    } else {
        "(no matches on this page)"
    };
    let mut out = render_entries(&s.entries, with_data, empty);
    let shown = if s.entries.is_empty() {
        String::new()
    } else {
        format!(
            ", showing {}–{}",
            s.offset + 1,
            s.offset + s.entries.len() as u64
        )
    };
    let plural = if s.total == 1 { "" } else { "es" };
    out.push_str(&format!(
        "{} match{plural} for {:?}{shown} (ranking {})\n",
        s.total, s.query, s.ranking
    ));
    out
}

/// The `submit` summary line.
pub fn render_submit(s: &SubmitOut) -> String {
    let mut line = match (s.score, s.rank) {
        (Some(Score(v)), Some(r)) => format!("{}: score {}, rank {}", s.member, fmt_score(v), r),
        (Some(Score(v)), None) => format!("{}: score {}", s.member, fmt_score(v)),
        (None, _) if s.evicted > 0 => format!("{}: evicted (the board is full)", s.member),
        (None, _) => format!("{}: not on the board", s.member),
    };
    if !s.changed {
        line.push_str(" (unchanged)");
    }
    line
}

fn print_raw(body: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(body)?;
    if !body.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// `podium top BOARD`: one page of the board as a table.
pub fn top(a: &TopArgs) -> Result<()> {
    match &a.conn.http {
        Some(url) => top_http(a, url),
        None => top_rpc(a),
    }
}

fn print_top(t: &TopOut) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(render_top(t).as_bytes())?;
    out.flush()?;
    Ok(())
}

fn top_http(a: &TopArgs, url: &str) -> Result<()> {
    let api = Api::new(url, &a.conn)?;
    let url = top_url(&api.base, &a.board, a.page, a.page_size)?;
    let body = api.call(api.http.get(url))?;
    if a.json {
        return print_raw(&body);
    }
    let t: TopOut = parse(&body)?;
    print_top(&t)
}

/// `podium search BOARD QUERY`: the matching members, best first.
pub fn search(a: &SearchArgs) -> Result<()> {
    let out = match &a.conn.http {
        Some(url) => {
            let api = Api::new(url, &a.conn)?;
            let url = search_url(&api.base, &a.board, a)?;
            let body = api.call(api.http.get(url))?;
            if a.json {
                return print_raw(&body);
            }
            parse(&body)?
        }
        None => {
            let rpc = Rpc::connect(&a.conn)?;
            let opts = SearchOpts {
                limit: a.limit,
                offset: a.offset,
                with_data: a.with_data,
            };
            let s: SearchOut =
                rpc.call("search", &Ser((a.board.as_str(), a.query.as_str(), opts)))?;
            if a.json {
                println!("{}", serde_json::to_string(&s)?);
                return Ok(());
            }
            s
        }
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(render_search(&out, a.with_data).as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// `podium submit BOARD MEMBER SCORE`.
pub fn submit(a: &SubmitArgs) -> Result<()> {
    let score = parse_score(&a.score).map_err(|e| anyhow!("{e}"))?;
    let mut entry = SubmitIn::new(a.member.clone(), score);
    entry.op = a.op.clone();
    entry.name = a.name.clone();
    match &a.conn.http {
        Some(url) => submit_http(a, url, &entry),
        None => submit_rpc(a, &entry),
    }
}

fn submit_http(a: &SubmitArgs, url: &str, entry: &SubmitIn) -> Result<()> {
    let api = Api::new(url, &a.conn)?;
    let url = scores_url(&api.base, &a.board)?;
    let body = api.call(api.http.post(url).json(entry))?;
    if a.json {
        return print_raw(&body);
    }
    let s: SubmitOut = parse(&body)?;
    println!("{}", render_submit(&s));
    Ok(())
}

fn draw_target(quiet: bool) -> ProgressDrawTarget {
    if quiet {
        ProgressDrawTarget::hidden()
    } else {
        // Hidden by indicatif itself when stderr is not a terminal.
        ProgressDrawTarget::stderr()
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the template is valid")
        .progress_chars("=> ")
}

/// Counts the bytes read through it on a progress bar.
struct Counted<R> {
    inner: R,
    pb: ProgressBar,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pb.inc(n as u64);
        Ok(n)
    }
}

/// `podium import BOARD FILE`: loads an NDJSON or CSV file into a board.
pub fn import(a: &ImportArgs) -> Result<()> {
    let format = Format::choose(a.format.as_deref(), &a.file)?;
    let out = match &a.conn.http {
        Some(url) => import_http(a, url, format)?,
        None => import_rpc(a, format)?,
    };
    report_import(&out)
}

/// The input of an import (a file or stdin) with a progress bar counting
/// its bytes.
fn import_input(
    a: &ImportArgs,
    verb: &str,
) -> Result<(Box<dyn Read + Send>, Option<u64>, ProgressBar)> {
    if a.file.as_os_str() == "-" {
        let pb = ProgressBar::with_draw_target(None, draw_target(a.quiet));
        pb.set_style(style(&format!(
            "{{spinner}} {verb} {{bytes}} ({{bytes_per_sec}}) {{elapsed_precise}}"
        )));
        let reader = Counted {
            inner: io::stdin(),
            pb: pb.clone(),
        };
        return Ok((Box::new(reader), None, pb));
    }
    let file = File::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
    let len = file
        .metadata()
        .with_context(|| format!("cannot read {}", a.file.display()))?
        .len();
    let pb = ProgressBar::with_draw_target(Some(len), draw_target(a.quiet));
    pb.set_style(style(&format!(
        "{verb} [{{bar:32}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec:>12}} eta {{eta}}"
    )));
    let reader = Counted {
        inner: file,
        pb: pb.clone(),
    };
    Ok((Box::new(reader), Some(len), pb))
}

fn import_http(a: &ImportArgs, url: &str, format: Format) -> Result<ImportOut> {
    let api = Api::new(url, &a.conn)?;
    let url = import_url(&api.base, &a.board, format)?;
    let (reader, len, pb) = import_input(a, "importing")?;
    let body = match len {
        Some(len) => Body::sized(reader, len),
        None => Body::new(reader),
    };
    let rb = api
        .http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, format.content_type())
        .body(body);
    let result = api.send(rb).and_then(|resp| {
        let body = resp.bytes().map_err(|e| transport_error(&api.base, e))?;
        parse::<ImportOut>(&body)
    });
    pb.finish_and_clear();
    result
}

/// Prints an import's summary and its first errors; fails when entries
/// failed.
fn report_import(out: &ImportOut) -> Result<()> {
    println!("imported {}, failed {}", out.imported, out.failed);
    for e in out.errors.iter().take(SHOWN_ERRORS) {
        let mut where_ = String::new();
        if let Some(l) = e.line {
            where_.push_str(&format!("line {l}"));
        }
        if let Some(m) = &e.member {
            if !where_.is_empty() {
                where_.push_str(", ");
            }
            where_.push_str(&format!("member {:?}", m));
        }
        eprintln!("  {where_}: {} ({})", e.error.message, e.error.code);
    }
    let shown = out.errors.len().min(SHOWN_ERRORS) as u64;
    if out.failed > shown {
        eprintln!("  … and {} more", out.failed - shown);
    }
    if out.failed > 0 {
        bail!(
            "{} of {} entries failed to import into {:?}",
            out.failed,
            out.imported + out.failed,
            out.board
        );
    }
    Ok(())
}

/// `podium export BOARD`: the board as NDJSON, best first.
pub fn export(a: &ExportArgs) -> Result<()> {
    match &a.conn.http {
        Some(url) => export_http(a, url),
        None => export_rpc(a),
    }
}

/// The export's output: the file of `--output`, or stdout; and whether it
/// is stdout.
fn export_output(a: &ExportArgs) -> Result<(Box<dyn Write>, bool)> {
    Ok(match &a.output {
        Some(p) if p.as_os_str() != "-" => {
            let f = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            (Box::new(BufWriter::with_capacity(256 * 1024, f)), false)
        }
        _ => (
            Box::new(BufWriter::with_capacity(256 * 1024, io::stdout().lock())),
            true,
        ),
    })
}

fn export_summary(a: &ExportArgs, to_stdout: bool, lines: u64) {
    if !a.quiet {
        match &a.output {
            Some(p) if !to_stdout => {
                eprintln!(
                    "exported {lines} members of {:?} to {}",
                    a.board,
                    p.display()
                )
            }
            _ => eprintln!("exported {lines} members of {:?}", a.board),
        }
    }
}

fn export_http(a: &ExportArgs, url: &str) -> Result<()> {
    let api = Api::new(url, &a.conn)?;
    // The member count sizes the progress bar, and a missing board is
    // reported before the output file is touched.
    let info = api.board_info(&a.board)?;
    let url = export_url(&api.base, &a.board)?;
    let mut resp = api.send(api.http.get(url))?;

    let (mut out, to_stdout) = export_output(a)?;
    // A progress bar over a terminal that shows the NDJSON itself would
    // garble both.
    let quiet = a.quiet || (to_stdout && io::stdout().is_terminal());
    let pb = ProgressBar::with_draw_target(Some(info.members), draw_target(quiet));
    pb.set_style(style(
        "exporting [{bar:32}] {human_pos}/{human_len} members {per_sec:>12} eta {eta}",
    ));

    let result = copy_lines(&mut resp, &mut out, &pb, &api.base);
    pb.finish_and_clear();
    let lines = match result {
        Ok(n) => n,
        // `podium export b | head`: the reader had enough.
        Err(e) if to_stdout && is_broken_pipe(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    export_summary(a, to_stdout, lines);
    Ok(())
}

/// Copies the response to `out`, counting lines on the bar; returns the
/// number of lines.
fn copy_lines(
    resp: &mut Response,
    out: &mut dyn Write,
    pb: &ProgressBar,
    base: &str,
) -> Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0u64;
    let mut last = b'\n';
    loop {
        let n = match resp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(anyhow!(
                    "the export from podium at {base} broke off after {lines} members: {e}"
                ))
            }
        };
        let chunk = &buf[..n];
        let nl = chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        lines += nl;
        pb.inc(nl);
        last = chunk[n - 1];
        out.write_all(chunk).context("cannot write the export")?;
    }
    if last != b'\n' {
        // A final line without its newline still counts, and gets one.
        lines += 1;
        pb.inc(1);
        out.write_all(b"\n").context("cannot write the export")?;
    }
    out.flush().context("cannot write the export")?;
    Ok(lines)
}

// -------------------------------------------------------- MessagePack-RPC

/// A connection to the server's MessagePack-RPC port.
struct Rpc {
    c: blocking::Client,
    addr: String,
}

impl Rpc {
    fn connect(conn: &Conn) -> Result<Rpc> {
        let addr = conn.rpc.trim();
        let addr = addr
            .strip_prefix("tcp://")
            .unwrap_or(addr)
            .trim_end_matches('/');
        if addr.is_empty() {
            bail!("--rpc is empty");
        }
        let c = blocking::Client::connect_timeout(
            addr,
            CONNECT_TIMEOUT,
            podium_client::Config::default(),
        )
        .map_err(|e| anyhow!("cannot reach podium at {addr}: is `podium serve` running? ({e})"))?;
        let rpc = Rpc {
            c,
            addr: addr.to_string(),
        };
        if let Some(key) = conn.api_key.as_deref().filter(|k| !k.is_empty()) {
            rpc.small(rpc.c.start("auth", &Ser((key,))))?;
        }
        Ok(rpc)
    }

    /// Waits for a small request's answer, at most [`REQUEST_TIMEOUT`].
    fn small(&self, f: ResponseFuture) -> Result<podium_client::RawResponse> {
        self.c
            .wait_timeout(f, REQUEST_TIMEOUT)
            .map_err(|e| match e {
                ClientError::Io(io) if io.kind() == io::ErrorKind::TimedOut => {
                    anyhow!("podium at {} did not answer in time ({io})", self.addr)
                }
                e => self.error(e),
            })
    }

    /// A small call decoded into `T`.
    fn call<T: serde::de::DeserializeOwned, P: podium_client::Params + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T> {
        let r = self.small(self.c.start(method, params))?;
        r.decode().map_err(|e| self.error(e))
    }

    /// A failed call, worded for people: a server error reads `message
    /// (code)`, as over HTTP.
    fn error(&self, e: ClientError) -> anyhow::Error {
        match e {
            ClientError::Server { .. } => anyhow!("{e}"),
            ClientError::Io(io) => anyhow!("talking to podium at {} failed: {io}", self.addr),
            ClientError::Protocol(m) => {
                anyhow!("unexpected answer from podium at {}: {m}", self.addr)
            }
        }
    }
}

#[derive(Serialize)]
struct SearchOpts {
    limit: u64,
    offset: u64,
    with_data: bool,
}

#[derive(Serialize)]
struct PageOpts {
    page: u64,
    page_size: u64,
}

fn top_rpc(a: &TopArgs) -> Result<()> {
    let rpc = Rpc::connect(&a.conn)?;
    let opts = PageOpts {
        page: a.page,
        page_size: a.page_size,
    };
    let t: TopOut = rpc.call("top", &Ser((a.board.as_str(), opts)))?;
    if a.json {
        println!("{}", serde_json::to_string(&t)?);
        return Ok(());
    }
    print_top(&t)
}

fn submit_rpc(a: &SubmitArgs, entry: &SubmitIn) -> Result<()> {
    let rpc = Rpc::connect(&a.conn)?;
    let s: SubmitOut = rpc.call("submit", &Ser((a.board.as_str(), entry)))?;
    if a.json {
        println!("{}", serde_json::to_string(&s)?);
        return Ok(());
    }
    println!("{}", render_submit(&s));
    Ok(())
}

/// Reads `rd` up to and including the next `\n` into `buf`; a line longer
/// than `limit` is consumed but not kept (`buf` is emptied). Returns the
/// bytes consumed (0 at the end of input) and whether the line was too long.
fn read_line_limited(
    rd: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<(usize, bool)> {
    let (mut consumed, mut over) = (0, false);
    loop {
        let avail = match rd.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok((consumed, over));
        }
        let (n, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if !over && buf.len() + n > limit + 2 {
            over = true;
            buf.clear();
            buf.shrink_to(64 << 10);
        }
        if !over {
            buf.extend_from_slice(&avail[..n]);
        }
        rd.consume(n);
        consumed += n;
        if done {
            return Ok((consumed, over));
        }
    }
}

/// Splits the input into records: lines, or for CSV, lines whose line
/// breaks inside quoted fields do not end the record.
struct Records<R> {
    rd: R,
    csv: bool,
    /// Number of the next line to read (1-based).
    line: u64,
}

/// A record: its first line's number and its bytes without the line
/// break, or `None` when it was longer than [`MAX_RECORD_BYTES`].
type Record = (u64, Option<Vec<u8>>);

impl<R: BufRead> Records<R> {
    fn next(&mut self) -> io::Result<Option<Record>> {
        let start = self.line;
        let mut rec = Vec::new();
        let mut over = false;
        // An odd number of quotes so far: the record goes on.
        let mut open_quote = false;
        loop {
            let from = rec.len();
            let limit = MAX_RECORD_BYTES.saturating_sub(from);
            let mut part = Vec::new();
            let (n, too_long) = read_line_limited(&mut self.rd, &mut part, limit)?;
            if n == 0 {
                if rec.is_empty() && !over {
                    return Ok(None);
                }
                break;
            }
            self.line += 1;
            over |= too_long;
            if over {
                // The rest of an over-long record ends at a line break.
                break;
            }
            rec.extend_from_slice(&part);
            if !self.csv || !rec.ends_with(b"\n") {
                break;
            }
            open_quote ^= part.iter().filter(|&&b| b == b'"').count() & 1 == 1;
            if !open_quote {
                break;
            }
        }
        if over {
            return Ok(Some((start, None)));
        }
        if rec.ends_with(b"\n") {
            rec.pop();
        }
        if rec.ends_with(b"\r") {
            rec.pop();
        }
        Ok(Some((start, Some(rec))))
    }
}

/// A JSON value as MessagePack (integers stay integers).
fn json_to_msgpack(v: serde_json::Value) -> rmpv::Value {
    use serde_json::Value as J;
    match v {
        J::Null => rmpv::Value::Nil,
        J::Bool(b) => b.into(),
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into()
            } else if let Some(i) = n.as_i64() {
                i.into()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into()
            }
        }
        J::String(s) => s.into(),
        J::Array(a) => rmpv::Value::Array(a.into_iter().map(json_to_msgpack).collect()),
        J::Object(o) => rmpv::Value::Map(
            o.into_iter()
                .map(|(k, v)| (k.into(), json_to_msgpack(v)))
                .collect(),
        ),
    }
}

/// An import record as an `import` entry: `Ok(None)` for a blank line or
/// the CSV header; `Err` for a record that cannot be sent (with its member
/// when known). The entry's own checks (score, member, fields) are the
/// server's, which lists the entries it refuses.
fn import_entry(
    rec: &[u8],
    csv: bool,
    first: &mut bool,
) -> Result<Option<rmpv::Value>, (Option<String>, ErrorBody)> {
    let bad = |m: Option<String>, msg: String| {
        (
            m,
            ErrorBody {
                code: "malformed_request".into(),
                message: msg,
            },
        )
    };
    if rec.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let was_first = std::mem::replace(first, false);
    if !csv {
        let v = podium_core::json::value(rec, "malformed JSON")
            .map_err(|e| (None, ErrorBody::from(&e)))?;
        return Ok(Some(json_to_msgpack(v)));
    }
    let mut s = std::str::from_utf8(rec).map_err(|_| bad(None, "the line is not UTF-8".into()))?;
    if was_first {
        s = s.strip_prefix('\u{feff}').unwrap_or(s);
    }
    let f = csv_fields(s).map_err(|m| bad(None, m))?;
    if was_first
        && f.len() >= 2
        && f[0].trim().eq_ignore_ascii_case("member")
        && f[1].trim().eq_ignore_ascii_case("score")
    {
        return Ok(None);
    }
    if !(2..=3).contains(&f.len()) {
        return Err(bad(
            Some(f[0].clone()),
            format!("expected member,score[,name]; got {} fields", f.len()),
        ));
    }
    let mut entry = vec![
        ("member".into(), f[0].as_str().into()),
        // The server parses the score text (numbers, inf, -inf).
        ("score".into(), f[1].as_str().into()),
    ];
    if let Some(name) = f.get(2).filter(|n| !n.is_empty()) {
        entry.push(("name".into(), name.as_str().into()));
    }
    Ok(Some(rmpv::Value::Map(entry)))
}

impl ImportOut {
    fn fail(&mut self, line: u64, member: Option<String>, error: ErrorBody) {
        self.failed += 1;
        self.errors.push(ImportError {
            line: Some(line),
            member,
            error,
        });
    }

    /// Adds one batch's answer; its `line`s are positions in the batch,
    /// turned into the file's line numbers.
    fn add(&mut self, batch: ImportOut, lines: &[u64]) {
        self.imported += batch.imported;
        self.failed += batch.failed;
        for mut e in batch.errors {
            e.line = e
                .line
                .and_then(|l| l.checked_sub(1))
                .and_then(|k| lines.get(k as usize).copied());
            self.errors.push(e);
        }
    }
}

/// An `import` call in flight and the line number of each of its entries.
type InFlight = (ResponseFuture, Vec<u64>);

fn import_rpc(a: &ImportArgs, format: Format) -> Result<ImportOut> {
    let rpc = Rpc::connect(&a.conn)?;
    let (reader, _, pb) = import_input(a, "importing")?;
    let result = import_records(&rpc, &a.board, format, reader);
    pb.finish_and_clear();
    result
}

fn import_records(
    rpc: &Rpc,
    board: &str,
    format: Format,
    reader: Box<dyn Read + Send>,
) -> Result<ImportOut> {
    let csv = format == Format::Csv;
    let mut records = Records {
        rd: BufReader::with_capacity(256 << 10, reader),
        csv,
        line: 1,
    };
    let mut out = ImportOut {
        board: board.to_string(),
        imported: 0,
        failed: 0,
        errors: Vec::new(),
    };
    let mut flight: VecDeque<InFlight> = VecDeque::new();
    let (mut entries, mut lines, mut bytes) = (Vec::new(), Vec::new(), 0usize);
    let mut first = true;
    let wait = |out: &mut ImportOut, (f, lines): InFlight| -> Result<()> {
        let r = rpc.c.wait(f).map_err(|e| {
            let e = rpc.error(e);
            if out.imported > 0 {
                e.context(format!(
                    "the import stopped; {} entries were imported before",
                    out.imported
                ))
            } else {
                e
            }
        })?;
        let batch: ImportOut = r.decode().map_err(|e| rpc.error(e))?;
        out.add(batch, &lines);
        Ok(())
    };
    let send = |out: &mut ImportOut,
                entries: Vec<rmpv::Value>,
                lines: Vec<u64>,
                flight: &mut VecDeque<InFlight>|
     -> Result<()> {
        let params = vec![board.into(), rmpv::Value::Array(entries)];
        flight.push_back((rpc.c.start("import", &params), lines));
        while flight.len() > IMPORT_IN_FLIGHT {
            let oldest = flight.pop_front().expect("not empty");
            wait(out, oldest)?;
        }
        Ok(())
    };
    loop {
        let rec = records.next().context("cannot read the import input")?;
        let Some((line, rec)) = rec else { break };
        let Some(rec) = rec else {
            first = false;
            out.fail(
                line,
                None,
                ErrorBody {
                    code: "payload_too_large".into(),
                    message: format!("line is longer than {MAX_RECORD_BYTES} bytes"),
                },
            );
            continue;
        };
        match import_entry(&rec, csv, &mut first) {
            Ok(None) => {}
            Ok(Some(e)) => {
                entries.push(e);
                lines.push(line);
                bytes += rec.len();
            }
            Err((member, e)) => out.fail(line, member, e),
        }
        if entries.len() >= IMPORT_BATCH || bytes >= IMPORT_BATCH_BYTES {
            send(
                &mut out,
                std::mem::take(&mut entries),
                std::mem::take(&mut lines),
                &mut flight,
            )?;
            bytes = 0;
        }
    }
    if !entries.is_empty() {
        send(&mut out, entries, lines, &mut flight)?;
    }
    while let Some(f) = flight.pop_front() {
        wait(&mut out, f)?;
    }
    out.errors.sort_by_key(|e| e.line);
    Ok(out)
}

fn export_rpc(a: &ExportArgs) -> Result<()> {
    let rpc = Rpc::connect(&a.conn)?;
    // The member count sizes the progress bar, and a missing board is
    // reported before the output file is touched.
    let info: BoardOut = rpc.call("board_info", &Ser((a.board.as_str(),)))?;
    let f = rpc.c.start("export", &Ser((a.board.as_str(),)));
    let (mut out, to_stdout) = export_output(a)?;
    // A progress bar over a terminal that shows the NDJSON itself would
    // garble both.
    let quiet = a.quiet || (to_stdout && io::stdout().is_terminal());
    let pb = ProgressBar::with_draw_target(None, draw_target(quiet));
    pb.set_style(style(
        "{spinner} receiving {bytes} ({bytes_per_sec}) {elapsed_precise}",
    ));
    let base = rpc.c.bytes_received();
    let r = rpc
        .c
        .wait_with_progress(f, Duration::from_millis(100), |b| {
            pb.set_position(b.saturating_sub(base))
        });
    pb.finish_and_clear();
    let r = r.map_err(|e| {
        let hint = match &e {
            ClientError::Protocol(m) if m.contains("limit") => {
                " (over MessagePack-RPC an export is one response; --http streams it)"
            }
            _ => "",
        };
        rpc.error(e)
            .context(format!("the export of {:?} failed{hint}", a.board))
    })?;
    let pb = ProgressBar::with_draw_target(Some(info.members), draw_target(quiet));
    pb.set_style(style(
        "exporting [{bar:32}] {human_pos}/{human_len} members {per_sec:>12} eta {eta}",
    ));
    let result = write_export(r.result_bytes(), &mut out, &pb);
    pb.finish_and_clear();
    let lines = match result {
        Ok(n) => n,
        Err(e) if to_stdout && is_broken_pipe(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    export_summary(a, to_stdout, lines);
    Ok(())
}

/// Writes an `export` result (a MessagePack array of entries) as NDJSON,
/// one entry at a time, as HTTP's export writes it; `nil` items (left by
/// removals during the export) are skipped. Returns the lines written.
fn write_export(result: &[u8], out: &mut dyn Write, pb: &ProgressBar) -> Result<u64> {
    let mut rd = result;
    let n = rmp::decode::read_array_len(&mut rd)
        .map_err(|e| anyhow!("unexpected export from the server: {e:?}"))?;
    let mut de = rmp_serde::Deserializer::from_read_ref(rd);
    let mut line = Vec::with_capacity(256);
    let mut lines = 0u64;
    for _ in 0..n {
        let e: Option<EntryOut> = Deserialize::deserialize(&mut de)
            .map_err(|e| anyhow!("unexpected export entry from the server: {e}"))?;
        let Some(e) = e else { continue };
        line.clear();
        serde_json::to_writer(&mut line, &e)?;
        line.push(b'\n');
        out.write_all(&line).context("cannot write the export")?;
        lines += 1;
        if lines & 4095 == 0 {
            pb.set_position(lines);
        }
    }
    out.flush().context("cannot write the export")?;
    Ok(lines)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use podium_core::api::EntryOut;

    #[test]
    fn segments_escape_all_but_unreserved() {
        assert_eq!(segment("abc-DEF_1.2~"), "abc-DEF_1.2~");
        assert_eq!(segment("a/b"), "a%2Fb");
        assert_eq!(segment("a b"), "a%20b");
        assert_eq!(segment("100%"), "100%25");
        assert_eq!(segment("q?x#y&z=1+2"), "q%3Fx%23y%26z%3D1%2B2");
        assert_eq!(segment("héllo"), "h%C3%A9llo");
        assert_eq!(segment("🏆"), "%F0%9F%8F%86");
    }

    #[test]
    fn urls() {
        let base = base_url("http://127.0.0.1:7070/").unwrap();
        assert_eq!(base, "http://127.0.0.1:7070");
        assert_eq!(base_url("localhost:8080").unwrap(), "http://localhost:8080");
        assert!(base_url("https://example.com").is_err());
        assert!(base_url("  ").is_err());
        assert_eq!(
            top_url(&base, "weekly/eu west", 2, 50).unwrap(),
            "http://127.0.0.1:7070/v1/boards/weekly%2Feu%20west/top?page=2&page_size=50"
        );
        assert_eq!(
            scores_url(&base, "b").unwrap(),
            "http://127.0.0.1:7070/v1/boards/b/scores"
        );
        assert_eq!(
            export_url(&base, "ü").unwrap(),
            "http://127.0.0.1:7070/v1/boards/%C3%BC/export"
        );
        assert_eq!(
            import_url(&base, "b", Format::Csv).unwrap(),
            "http://127.0.0.1:7070/v1/boards/b/import?format=csv"
        );
        assert_eq!(
            board_url(&base, "b", "").unwrap(),
            "http://127.0.0.1:7070/v1/boards/b"
        );
        let mut a = SearchArgs {
            conn: Conn {
                rpc: String::new(),
                http: None,
                api_key: None,
            },
            board: "b".into(),
            query: "jean-luc pi* &x=1".into(),
            limit: 10,
            offset: 20,
            with_data: false,
            json: false,
        };
        assert_eq!(
            search_url(&base, "b", &a).unwrap(),
            "http://127.0.0.1:7070/v1/boards/b/search?q=jean-luc%20pi%2A%20%26x%3D1&limit=10&offset=20"
        );
        a.with_data = true;
        assert!(search_url(&base, "b", &a)
            .unwrap()
            .ends_with("&offset=20&with_data=true"));
        assert!(board_url(&base, "..", "").is_err());
        assert!(board_url(&base, ".", "").is_err());
        assert!(board_url(&base, "", "").is_err());
        // Encoded segments survive URL parsing unchanged.
        let u = reqwest::Url::parse(&top_url(&base, "a/../b", 1, 25).unwrap()).unwrap();
        assert_eq!(u.path(), "/v1/boards/a%2F..%2Fb/top");
    }

    #[test]
    fn error_messages() {
        let e = server_error(
            404,
            br#"{"error":{"code":"board_not_found","message":"board \"x\" not found"}}"#,
        );
        assert_eq!(e.code, "board_not_found");
        assert_eq!(e.to_string(), r#"board "x" not found (board_not_found)"#);
        let e = server_error(502, b"<html>Bad Gateway</html>\n");
        assert_eq!(e.to_string(), "<html>Bad Gateway</html> (HTTP 502)");
        let e = server_error(503, b"");
        assert_eq!(e.to_string(), "Service Unavailable (HTTP 503)");
        let long = "x".repeat(1000);
        let e = server_error(500, long.as_bytes());
        assert_eq!(e.message.chars().count(), 201);
        // Through anyhow, as main prints it.
        let a: anyhow::Error = server_error(
            401,
            br#"{"error":{"code":"unauthorized","message":"missing API key"}}"#,
        )
        .into();
        assert_eq!(format!("{a:#}"), "missing API key (unauthorized)");
        assert_eq!(a.downcast_ref::<ServerError>().unwrap().status, 401);
    }

    #[test]
    fn unreachable_server() {
        // A port nothing listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut a = TopArgs {
            conn: Conn {
                rpc: "127.0.0.1:7071".into(),
                http: Some(format!("http://127.0.0.1:{port}")),
                api_key: None,
            },
            board: "b".into(),
            page: 1,
            page_size: 25,
            json: false,
        };
        let e = top(&a).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot reach podium at http://127.0.0.1:{port}: is `podium serve` running?"
            )),
            "{e}"
        );
        a.conn.http = None;
        a.conn.rpc = format!("127.0.0.1:{port}");
        let e = top(&a).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot reach podium at 127.0.0.1:{port}: is `podium serve` running?"
            )),
            "{e}"
        );
        a.conn.rpc = "nonsense".into();
        assert!(top(&a).unwrap_err().to_string().contains("nonsense"));
    }

    fn records(csv: bool, input: &str) -> Vec<(u64, Option<String>)> {
        let mut r = Records {
            rd: input.as_bytes(),
            csv,
            line: 1,
        };
        let mut out = Vec::new();
        while let Some((line, rec)) = r.next().unwrap() {
            out.push((line, rec.map(|b| String::from_utf8(b).unwrap())));
        }
        out
    }

    #[test]
    fn import_records_and_line_numbers() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            records(false, "a\r\n\nb\nc"),
            vec![(1, s("a")), (2, s("")), (3, s("b")), (4, s("c"))]
        );
        // A quoted line break stays inside the CSV record.
        assert_eq!(
            records(true, "m,1,\"two\nlines\"\nn,2\n"),
            vec![(1, s("m,1,\"two\nlines\"")), (3, s("n,2"))]
        );
        // Over-long records are reported, and reading goes on after them.
        let long = format!("x{}\ny\n", "z".repeat(MAX_RECORD_BYTES + 10));
        assert_eq!(records(false, &long), vec![(1, None), (2, s("y"))]);
        assert!(records(false, "").is_empty());
    }

    #[test]
    fn import_entries() {
        let mut first = true;
        // The CSV header is skipped (after a BOM), once.
        assert_eq!(
            import_entry("\u{feff}member,score".as_bytes(), true, &mut first).unwrap(),
            None
        );
        let e = import_entry(b"p1,12.5,\"Ann, B\"", true, &mut first)
            .unwrap()
            .unwrap();
        assert_eq!(e["member"], rmpv::Value::from("p1"));
        assert_eq!(e["score"], rmpv::Value::from("12.5"));
        assert_eq!(e["name"], rmpv::Value::from("Ann, B"));
        assert!(import_entry(b"member,score", true, &mut first)
            .unwrap()
            .is_some());
        let (m, err) = import_entry(b"a,1,b,c", true, &mut first).unwrap_err();
        assert_eq!(m.as_deref(), Some("a"));
        assert_eq!(err.code, "malformed_request");
        assert_eq!(import_entry(b"  ", true, &mut first).unwrap(), None);
        let mut first = true;
        let e = import_entry(
            br#"{"member":"m","score":"-inf","rank":3,"data":{"lvl":2,"x":[1.5,null]}}"#,
            false,
            &mut first,
        )
        .unwrap()
        .unwrap();
        assert_eq!(e["score"], rmpv::Value::from("-inf"));
        assert_eq!(e["rank"], rmpv::Value::from(3));
        assert_eq!(e["data"]["x"][0], rmpv::Value::from(1.5));
        assert!(import_entry(b"{not json", false, &mut first).is_err());
    }

    #[test]
    fn batch_errors_get_file_line_numbers() {
        let mut out = ImportOut {
            board: "b".into(),
            imported: 0,
            failed: 1,
            errors: vec![],
        };
        let batch = ImportOut {
            board: "b".into(),
            imported: 2,
            failed: 1,
            errors: vec![ImportError {
                line: Some(2),
                member: Some("x".into()),
                error: ErrorBody {
                    code: "invalid_score".into(),
                    message: "no".into(),
                },
            }],
        };
        out.add(batch, &[10, 12, 13]);
        assert_eq!((out.imported, out.failed), (2, 2));
        assert_eq!(out.errors[0].line, Some(12));
    }

    #[test]
    fn export_results_become_http_ndjson() {
        let entries = rmpv::Value::Array(vec![
            rmpv::Value::Map(vec![
                ("member".into(), "a".into()),
                ("score".into(), f64::NEG_INFINITY.into()),
                ("rank".into(), 1.into()),
                ("name".into(), "A".into()),
            ]),
            rmpv::Value::Nil,
            rmpv::Value::Map(vec![
                ("member".into(), "b".into()),
                ("score".into(), 2.5.into()),
                ("rank".into(), 2.into()),
                (
                    "data".into(),
                    rmpv::Value::Map(vec![("k".into(), true.into())]),
                ),
            ]),
        ]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &entries).unwrap();
        let mut out = Vec::new();
        let n = write_export(&bytes, &mut out, &ProgressBar::hidden()).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"member\":\"a\",\"score\":\"-inf\",\"rank\":1,\"name\":\"A\"}\n\
             {\"member\":\"b\",\"score\":2.5,\"rank\":2,\"data\":{\"k\":true}}\n"
        );
    }

    #[test]
    fn formats() {
        let p = Path::new;
        assert_eq!(Format::choose(None, p("a.csv")).unwrap(), Format::Csv);
        assert_eq!(Format::choose(None, p("a.CSV")).unwrap(), Format::Csv);
        assert_eq!(Format::choose(None, p("a.ndjson")).unwrap(), Format::Ndjson);
        assert_eq!(Format::choose(None, p("-")).unwrap(), Format::Ndjson);
        assert_eq!(
            Format::choose(Some("csv"), p("a.json")).unwrap(),
            Format::Csv
        );
        assert_eq!(
            Format::choose(Some("NDJSON"), p("a.csv")).unwrap(),
            Format::Ndjson
        );
        assert!(Format::choose(Some("xml"), p("a")).is_err());
    }

    #[test]
    fn scores_for_people() {
        assert_eq!(fmt_score(1.0), "1");
        assert_eq!(fmt_score(-2.5), "-2.5");
        assert_eq!(fmt_score(0.0), "0");
        assert_eq!(fmt_score(f64::INFINITY), "inf");
        assert_eq!(fmt_score(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_score(1e300), "1e300");
        assert_eq!(fmt_score(1.5e-9), "1.5e-9");
    }

    fn entry(member: &str, score: f64, rank: u64, name: Option<&str>) -> EntryOut {
        EntryOut {
            member: member.into(),
            score: Score(score),
            rank,
            name: name.map(str::to_string),
            data: None,
        }
    }

    #[test]
    fn top_table() {
        let t = TopOut {
            board: "b".into(),
            ranking: "desc".into(),
            page: 1,
            page_size: 25,
            total: 11,
            total_pages: 1,
            entries: vec![
                entry("alice", 100.0, 1, Some("Alice")),
                entry("bob\tx", 9.5, 10, None),
            ],
        };
        assert_eq!(
            render_top(&t),
            "RANK  MEMBER  SCORE  NAME\n   1  alice     100  Alice\n  10  bob\\tx    9.5\n\
             page 1 of 1 (11 members, ranking desc)\n"
        );
        let empty = TopOut {
            entries: vec![],
            total: 0,
            total_pages: 0,
            ..t
        };
        assert_eq!(
            render_top(&empty),
            "(no entries on this page)\npage 1 of 0 (0 members, ranking desc)\n"
        );
    }

    #[test]
    fn search_table() {
        let mut bob = entry("bob", 9.5, 10, None);
        bob.data = Some(serde_json::json!({"team": "red"}));
        let s = SearchOut {
            board: "b".into(),
            ranking: "unique".into(),
            query: "al".into(),
            total: 30,
            offset: 5,
            limit: 2,
            entries: vec![entry("alice", 100.0, 1, Some("Alice")), bob],
        };
        assert_eq!(
            render_search(&s, false),
            "RANK  MEMBER  SCORE  NAME\n   1  alice     100  Alice\n  10  bob       9.5\n\
             30 matches for \"al\", showing 6–7 (ranking unique)\n"
        );
        assert_eq!(
            render_search(&s, true),
            "RANK  MEMBER  SCORE  NAME   DATA\n   1  alice     100  Alice\n  10  bob       9.5         {\"team\":\"red\"}\n\
             30 matches for \"al\", showing 6–7 (ranking unique)\n"
        );
        let none = SearchOut {
            entries: vec![],
            total: 0,
            ..s.clone()
        };
        assert_eq!(
            render_search(&none, false),
            "(no matches)\n0 matches for \"al\" (ranking unique)\n"
        );
        let past = SearchOut {
            entries: vec![],
            total: 1,
            ..s
        };
        assert_eq!(
            render_search(&past, false),
            "(no matches on this page)\n1 match for \"al\" (ranking unique)\n"
        );
    }

    #[test]
    fn submit_line() {
        let mut s = SubmitOut {
            member: "alice".into(),
            score: Some(Score(42.0)),
            rank: Some(3),
            previous: None,
            changed: true,
            created: true,
            applied: true,
            evicted: 0,
        };
        assert_eq!(render_submit(&s), "alice: score 42, rank 3");
        s.changed = false;
        assert_eq!(render_submit(&s), "alice: score 42, rank 3 (unchanged)");
        s.score = None;
        s.rank = None;
        assert_eq!(render_submit(&s), "alice: not on the board (unchanged)");
    }

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Cmd {
        Top(TopArgs),
        Submit(SubmitArgs),
        Search(SearchArgs),
        Import(ImportArgs),
        Export(ExportArgs),
    }

    #[test]
    fn command_lines() {
        let c =
            Cli::try_parse_from(["podium", "submit", "b", "m", "-inf", "--op", "best"]).unwrap();
        let Cmd::Submit(s) = c.cmd else { panic!() };
        assert_eq!(s.score, "-inf");
        assert_eq!(s.op.as_deref(), Some("best"));
        assert!(!s.json);
        let c = Cli::try_parse_from(["podium", "submit", "b", "m", "-5", "--json"]).unwrap();
        let Cmd::Submit(s) = c.cmd else { panic!() };
        assert_eq!(s.score, "-5");
        assert!(s.json);
        let c = Cli::try_parse_from([
            "podium",
            "top",
            "b",
            "--page",
            "3",
            "--server",
            "http://h:1",
            "--api-key",
            "k",
        ])
        .unwrap();
        let Cmd::Top(t) = c.cmd else { panic!() };
        assert_eq!((t.page, t.page_size), (3, 25));
        assert_eq!(t.conn.http.as_deref(), Some("http://h:1"));
        assert_eq!(t.conn.api_key.as_deref(), Some("k"));
        let c = Cli::try_parse_from(["podium", "top", "b", "--rpc", "h:9"]).unwrap();
        let Cmd::Top(t) = c.cmd else { panic!() };
        assert_eq!(t.conn.rpc, "h:9");
        assert_eq!(t.conn.http, None);
        let c =
            Cli::try_parse_from(["podium", "export", "b", "-o", "out.ndjson", "--quiet"]).unwrap();
        let Cmd::Export(e) = c.cmd else { panic!() };
        assert_eq!(e.output.as_deref(), Some(Path::new("out.ndjson")));
        let c = Cli::try_parse_from(["podium", "import", "b", "-", "--format", "csv"]).unwrap();
        let Cmd::Import(i) = c.cmd else { panic!() };
        assert_eq!(i.file, Path::new("-"));
        let c = Cli::try_parse_from(["podium", "search", "b", "-al", "--limit", "5"]).unwrap();
        let Cmd::Search(s) = c.cmd else { panic!() };
        assert_eq!((s.query.as_str(), s.limit, s.offset), ("-al", 5, 0));
        assert!(!s.with_data && s.conn.http.is_none());
    }
}
