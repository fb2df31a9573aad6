//! The client commands of `podium` (SPEC §6): `top`, `submit`, `import` and
//! `export`, talking to a running server over its HTTP API (SPEC §4).
//!
//! Requests and results use the shapes of [`crate::api`]. A server error
//! (`{"error": {"code", "message"}}` with a 4xx/5xx status) becomes a
//! [`ServerError`] whose text is `message (code)`; an unreachable server
//! becomes "cannot reach podium at URL: is `podium serve` running?".
//! Imports and exports stream: neither side of a transfer is held in memory,
//! and a progress bar on stderr follows it (hidden when stderr is not a
//! terminal, or with `--quiet`).

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::blocking::{Body, Client, RequestBuilder, Response};
use serde::{Deserialize, Serialize};

use crate::api::{parse_score, BoardOut, ErrorBody, Score, SubmitIn, SubmitOut, TopOut};

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

/// Where the server is and how to authenticate.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Base URL of the podium server's HTTP API.
    #[arg(long, env = "PODIUM_SERVER", default_value = "http://127.0.0.1:7070")]
    pub server: String,
    /// API key, sent as `Authorization: Bearer KEY`.
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
    fn new(conn: &Conn) -> Result<Api> {
        let http = Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            // Streams run as long as they need; small requests set their own.
            .timeout(None)
            .user_agent(concat!("podium/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Api {
            base: base_url(&conn.server)?,
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

/// The `top` table, footer included.
pub fn render_top(t: &TopOut) -> String {
    let with_names = t.entries.iter().any(|e| e.name.is_some());
    let mut rows: Vec<[String; 4]> = vec![[
        "RANK".into(),
        "MEMBER".into(),
        "SCORE".into(),
        if with_names {
            "NAME".into()
        } else {
            String::new()
        },
    ]];
    for e in &t.entries {
        rows.push([
            e.rank.to_string(),
            printable(&e.member),
            fmt_score(e.score.0),
            e.name.as_deref().map(printable).unwrap_or_default(),
        ]);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let mut out = String::new();
    if !t.entries.is_empty() {
        for r in &rows {
            let line = format!(
                "{:>w0$}  {:<w1$}  {:>w2$}  {}",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = w0,
                w1 = w1,
                w2 = w2
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
    } else {
        out.push_str("(no entries on this page)\n");
    }
    out.push_str(&format!(
        "page {} of {} ({} members, ranking {})\n",
        t.page, t.total_pages, t.total, t.ranking
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
    let api = Api::new(&a.conn)?;
    let url = top_url(&api.base, &a.board, a.page, a.page_size)?;
    let body = api.call(api.http.get(url))?;
    if a.json {
        return print_raw(&body);
    }
    let t: TopOut = parse(&body)?;
    let mut out = io::stdout().lock();
    out.write_all(render_top(&t).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `podium submit BOARD MEMBER SCORE`.
pub fn submit(a: &SubmitArgs) -> Result<()> {
    let score = parse_score(&a.score).map_err(|e| anyhow!("{e}"))?;
    let api = Api::new(&a.conn)?;
    let mut entry = SubmitIn::new(a.member.clone(), score);
    entry.op = a.op.clone();
    entry.name = a.name.clone();
    let url = scores_url(&api.base, &a.board)?;
    let body = api.call(api.http.post(url).json(&entry))?;
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

/// `podium import BOARD FILE`: streams the file as the request body.
pub fn import(a: &ImportArgs) -> Result<()> {
    let format = Format::choose(a.format.as_deref(), &a.file)?;
    let api = Api::new(&a.conn)?;
    let url = import_url(&api.base, &a.board, format)?;
    let stdin = a.file.as_os_str() == "-";
    let (body, pb) = if stdin {
        let pb = ProgressBar::with_draw_target(None, draw_target(a.quiet));
        pb.set_style(style(
            "{spinner} importing {bytes} ({bytes_per_sec}) {elapsed_precise}",
        ));
        let reader = Counted {
            inner: io::stdin(),
            pb: pb.clone(),
        };
        (Body::new(reader), pb)
    } else {
        let file =
            File::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read {}", a.file.display()))?
            .len();
        let pb = ProgressBar::with_draw_target(Some(len), draw_target(a.quiet));
        pb.set_style(style(
            "importing [{bar:32}] {bytes}/{total_bytes} {bytes_per_sec:>12} eta {eta}",
        ));
        let reader = Counted {
            inner: file,
            pb: pb.clone(),
        };
        (Body::sized(reader, len), pb)
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
    let out = result?;
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

/// `podium export BOARD`: the board as NDJSON, streamed to the output.
pub fn export(a: &ExportArgs) -> Result<()> {
    let api = Api::new(&a.conn)?;
    // The member count sizes the progress bar, and a missing board is
    // reported before the output file is touched.
    let info = api.board_info(&a.board)?;
    let url = export_url(&api.base, &a.board)?;
    let mut resp = api.send(api.http.get(url))?;

    let (mut out, to_stdout): (Box<dyn Write>, bool) = match &a.output {
        Some(p) if p.as_os_str() != "-" => {
            let f = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            (Box::new(BufWriter::with_capacity(256 * 1024, f)), false)
        }
        _ => (
            Box::new(BufWriter::with_capacity(256 * 1024, io::stdout().lock())),
            true,
        ),
    };
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

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::EntryOut;
    use clap::Parser;

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
        let a = TopArgs {
            conn: Conn {
                server: format!("http://127.0.0.1:{port}"),
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
        assert_eq!(t.conn.server, "http://h:1");
        assert_eq!(t.conn.api_key.as_deref(), Some("k"));
        let c =
            Cli::try_parse_from(["podium", "export", "b", "-o", "out.ndjson", "--quiet"]).unwrap();
        let Cmd::Export(e) = c.cmd else { panic!() };
        assert_eq!(e.output.as_deref(), Some(Path::new("out.ndjson")));
        let c = Cli::try_parse_from(["podium", "import", "b", "-", "--format", "csv"]).unwrap();
        let Cmd::Import(i) = c.cmd else { panic!() };
        assert_eq!(i.file, Path::new("-"));
    }
}
