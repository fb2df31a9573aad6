//! The HTTP transport: podium's HTTP API (docs/spec.md §4) through a
//! blocking reqwest client; the URLs of its board paths, its error bodies
//! read as `message (code)`, and its streamed import and export bodies.

use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::ProgressBar;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use podium_core::api::{BoardOut, ErrorBody, SearchOut, SubmitIn, SubmitOut, TopOut};
use reqwest::blocking::{Body, Client, RequestBuilder, Response};
use serde::Deserialize;

use super::{Answer, Conn, SearchQuery, CONNECT_TIMEOUT, READ_TIMEOUT, REQUEST_TIMEOUT};
use crate::import::ImportInput;
use crate::input::Format;
use crate::render::{draw_target, style};
use podium_client::ImportResult;

/// Everything but RFC 3986's unreserved characters is escaped in a path
/// segment, so `/`, `?`, `#`, `%`, spaces and non-ASCII survive the trip.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

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
            write!(f, "{} ({})", self.message, self.code)?;
            if self.code == "unauthorized" {
                write!(f, ": give the key with --api-key KEY or PODIUM_API_KEY")?;
            }
            Ok(())
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

/// The path of a member's route under its board (`/rank/alice`), with the
/// route's other query parameters (`page_size=5`, or empty): the member as
/// a path segment, or in the query for `.` and `..`, dot segments that URL
/// parsing drops from a path, percent-encoded too (the server answers both
/// forms alike; the path keeps other URLs readable).
pub fn member_path(route: &str, member: &str, query: &str) -> String {
    if member == "." || member == ".." {
        let more = if query.is_empty() { "" } else { "&" };
        return format!("/{route}?member={}{more}{query}", segment(member));
    }
    let q = if query.is_empty() { "" } else { "?" };
    format!("/{route}/{}{q}{query}", segment(member))
}

pub fn search_url(base: &str, board: &str, q: &SearchQuery) -> Result<String> {
    let mut url = board_url(base, board, "/search")?;
    url.push_str("?q=");
    url.extend(utf8_percent_encode(q.query, SEGMENT));
    url.push_str(&format!("&limit={}&offset={}", q.limit, q.offset));
    if q.with_data {
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

/// A connection to one server's HTTP API.
pub struct Http {
    base: String,
    key: Option<String>,
    http: Client,
    /// For uploads (import): reqwest bounds a request's whole body by
    /// the client's timeout, so this one has none.
    upload: Client,
}

impl Http {
    pub fn new(server: &str, conn: &Conn) -> Result<Http> {
        Http::with_read_timeout(server, conn, READ_TIMEOUT)
    }

    fn with_read_timeout(server: &str, conn: &Conn, read: Duration) -> Result<Http> {
        let client = |timeout: Option<Duration>| {
            Client::builder()
                .no_proxy()
                .connect_timeout(CONNECT_TIMEOUT)
                .timeout(timeout)
                .user_agent(concat!("podium/", env!("CARGO_PKG_VERSION")))
                .build()
                .context("cannot set up the HTTP client")
        };
        Ok(Http {
            base: base_url(server)?,
            key: conn.api_key.clone().filter(|k| !k.is_empty()),
            // A blocking client's own timeout bounds the wait for the
            // answer's headers and then each read of its body, not the
            // whole download: streams run as long as they need while
            // bytes come. Small requests set a whole-request limit.
            http: client(Some(read))?,
            upload: client(None)?,
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

    /// Any operation, its body kept as sent.
    pub fn request<T>(&self, r: super::HttpReq<'_>) -> Result<Answer<T>> {
        let url = match r.board {
            Some(b) => board_url(&self.base, b, &r.path)?,
            None => format!("{}/v1{}", self.base, r.path),
        };
        let method = reqwest::Method::from_bytes(r.method.as_bytes())
            .map_err(|_| anyhow!("no HTTP method {:?}", r.method))?;
        let mut rb = self.http.request(method, url);
        if let Some(body) = &r.body {
            rb = rb.json(body);
        }
        Ok(Answer::Body(self.call(rb)?))
    }

    pub fn board_info(&self, board: &str) -> Result<BoardOut> {
        let url = board_url(&self.base, board, "")?;
        let body = self.call(self.http.get(url))?;
        parse(&body)
    }

    pub fn top(&self, board: &str, page: u64, page_size: u64) -> Result<Answer<TopOut>> {
        let url = top_url(&self.base, board, page, page_size)?;
        Ok(Answer::Body(self.call(self.http.get(url))?))
    }

    pub fn search(&self, board: &str, q: &SearchQuery) -> Result<Answer<SearchOut>> {
        let url = search_url(&self.base, board, q)?;
        Ok(Answer::Body(self.call(self.http.get(url))?))
    }

    pub fn submit(&self, board: &str, entry: &SubmitIn) -> Result<Answer<SubmitOut>> {
        let url = scores_url(&self.base, board)?;
        Ok(Answer::Body(self.call(self.http.post(url).json(entry))?))
    }

    /// Checks that the board can be named in a URL path.
    pub fn check_board(&self, board: &str) -> Result<()> {
        board_url(&self.base, board, "").map(drop)
    }

    /// Streams the whole input as the request body; the server reads and
    /// imports it as it arrives.
    pub fn import(&self, board: &str, input: ImportInput) -> Result<ImportResult> {
        let (format, reader) = (input.format, input.reader);
        let url = import_url(&self.base, board, format)?;
        let body = match input.len {
            Some(len) => Body::sized(reader, len),
            None => Body::new(reader),
        };
        let rb = self
            .upload
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, format.content_type())
            .body(body);
        self.send(rb).and_then(|resp| {
            let body = resp.bytes().map_err(|e| transport_error(&self.base, e))?;
            parse::<ImportResult>(&body)
        })
    }

    /// Starts a backup: the response's headers are in, its tar body (the
    /// files, then their manifest) is still to be read.
    pub fn backup(&self) -> Result<Response> {
        self.send(self.http.get(format!("{}/v1/backup", self.base)))
    }

    /// Starts an export: the response's headers are in, its NDJSON body
    /// is still to be read.
    pub fn export(&self, board: &str) -> Result<HttpExport> {
        let url = export_url(&self.base, board)?;
        Ok(HttpExport {
            resp: self.send(self.http.get(url))?,
            base: self.base.clone(),
        })
    }
}

/// An export whose NDJSON body streams in.
pub struct HttpExport {
    resp: Response,
    base: String,
}

impl HttpExport {
    /// Copies the NDJSON to `out` with a progress bar over `members`;
    /// returns the lines written.
    pub fn write(mut self, out: &mut dyn Write, members: u64, quiet: bool) -> Result<u64> {
        let pb = ProgressBar::with_draw_target(Some(members), draw_target(quiet));
        pb.set_style(style(
            "exporting [{bar:32}] {human_pos}/{human_len} members {per_sec:>12} eta {eta}",
        ));
        let result = copy_lines(&mut self.resp, out, &pb, &self.base);
        pb.finish_and_clear();
        result
    }
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T> {
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
    } else if format!("{e:?}").contains("IncompleteMessage") {
        // The RPC port closes a connection whose bytes are not MessagePack.
        anyhow!(
            "{base} closed the connection without an HTTP answer: is that podium's \
             MessagePack-RPC port? Give --http the HTTP port (default 127.0.0.1:7070), or use \
             --rpc ADDR for MessagePack-RPC ({cause})"
        )
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
                let why = if stalled(&e) {
                    format!("no bytes came for {}s", READ_TIMEOUT.as_secs())
                } else {
                    e.to_string()
                };
                return Err(anyhow!(
                    "the export from podium at {base} broke off after {lines} members: {why}"
                ));
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

/// Whether a failed read of an answer's body was the read timeout: the
/// blocking client reports it as a decoding error whose source is a
/// reqwest timeout.
fn stalled(e: &io::Error) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = e.get_ref().map(|e| e as _);
    while let Some(s) = src {
        if let Some(r) = s.downcast_ref::<reqwest::Error>() {
            if r.is_timeout() {
                return true;
            }
        }
        if let Some(io) = s.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::TimedOut {
                return true;
            }
        }
        src = s.source();
    }
    false
}

#[cfg(test)]
mod tests {
    /// A download from a server that stops sending ends with an error
    /// instead of waiting for ever.
    #[test]
    fn a_download_that_stalls_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\
                  transfer-encoding: chunked\r\n\r\n\
                  15\r\n{\"member\":\"a\",\"s\":1}\n\r\n",
            );
            std::thread::sleep(Duration::from_secs(30));
        });
        let conn = Conn {
            rpc: String::new(),
            http: None,
            api_key: None,
        };
        let http =
            Http::with_read_timeout(&format!("http://{addr}"), &conn, Duration::from_millis(500))
                .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let started = std::time::Instant::now();
        std::thread::spawn(move || {
            let r = http
                .export("b")
                .and_then(|e| e.write(&mut io::sink(), 1, true));
            let _ = tx.send(r.map_err(|e| format!("{e:#}")));
        });
        let r = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the download still waits");
        let err = r.expect_err("a stalled download ended without an error");
        // The first line arrived whole; the error is the wait for the next.
        assert!(started.elapsed() >= Duration::from_millis(400), "{err}");
        assert!(err.contains("no bytes came"), "{err}");
    }

    use super::*;

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
        let mut a = SearchQuery {
            query: "jean-luc pi* &x=1",
            limit: 10,
            offset: 20,
            with_data: false,
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
    fn members_a_path_cannot_carry_go_in_the_query() {
        let base = base_url("127.0.0.1:7070").unwrap();
        let url = |route, member, query| {
            let u = board_url(&base, "b", &member_path(route, member, query)).unwrap();
            reqwest::Url::parse(&u).unwrap()
        };
        for m in [".", ".."] {
            let u = url("rank", m, "");
            assert_eq!(u.path(), "/v1/boards/b/rank");
            assert_eq!(
                u.query_pairs().collect::<Vec<_>>(),
                [("member".into(), m.into())]
            );
            let u = url("around", m, "page_size=5");
            assert_eq!(u.path(), "/v1/boards/b/around");
            assert_eq!(u.query(), Some(format!("member={m}&page_size=5").as_str()));
        }
        assert_eq!(url("rank", "a/b", "").path(), "/v1/boards/b/rank/a%2Fb");
        assert_eq!(
            url("members", "..x", "page_size=2").as_str(),
            "http://127.0.0.1:7070/v1/boards/b/members/..x?page_size=2"
        );
        // Why: the path form of `.` and `..` does not survive URL parsing.
        for m in [".", "..", "%2e", "%2E%2E"] {
            let u = reqwest::Url::parse(&format!("{base}/v1/boards/b/rank/{m}")).unwrap();
            assert_eq!(u.path_segments().unwrap().next_back(), Some(""), "{m}: {u}");
        }
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
        assert_eq!(
            format!("{a:#}"),
            "missing API key (unauthorized): give the key with --api-key KEY or PODIUM_API_KEY"
        );
        assert_eq!(a.downcast_ref::<ServerError>().unwrap().status, 401);
    }
}
