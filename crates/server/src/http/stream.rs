//! `export` (an NDJSON response streamed chunk by chunk) and `import` (an
//! NDJSON or CSV request body read as a stream and submitted in batches).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::error::{media_type, BoardP, HttpResult, Q};
use super::handlers::submit_in;
use super::St;
use podium_core::api::{parse_score, SubmitIn};
use podium_core::backend::Backend;
use podium_core::csv::csv_fields;
use podium_core::error::{ApiError, Code};
use podium_core::ops::import::Importer;

/// Entries per `export` chunk (one board read lock each).
pub const EXPORT_CHUNK: usize = 10_000;
/// Entries per `import` batch (one durable commit each).
pub const IMPORT_BATCH: usize = 10_000;
/// The longest line (record) `import` accepts, without its line break.
pub const MAX_IMPORT_LINE_BYTES: usize = 1 << 20;

// ------------------------------------------------------------- export

/// One chunk of NDJSON from position `pos`, and how many entries it holds.
async fn export_bytes(
    be: Arc<dyn Backend>,
    board: String,
    pos: usize,
) -> Result<(Bytes, usize), ApiError> {
    let req = podium_core::ops::ExportChunk {
        board,
        pos,
        limit: EXPORT_CHUNK,
    };
    let lines = be.export_chunk(&req).await?;
    let mut buf = Vec::with_capacity(lines.len() * 64);
    for l in &lines {
        serde_json::to_writer(&mut buf, l)
            .map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
        buf.push(b'\n');
    }
    Ok((Bytes::from(buf), lines.len()))
}

struct ExportState {
    be: Arc<dyn Backend>,
    board: String,
    pos: usize,
    ready: Option<Bytes>,
    done: bool,
}

pub(crate) async fn export(State(st): State<St>, BoardP(board): BoardP) -> HttpResult<Response> {
    // The first chunk is read before answering, so a missing board is a
    // 404 rather than a broken stream.
    let (first, n) = export_bytes(st.be.clone(), board.clone(), 0).await?;
    let state = ExportState {
        be: st.be.clone(),
        board,
        pos: n,
        ready: (n > 0).then_some(first),
        done: n < EXPORT_CHUNK,
    };
    let stream = futures_util::stream::unfold(state, |mut s| async move {
        if let Some(b) = s.ready.take() {
            return Some((Ok(b), s));
        }
        if s.done {
            return None;
        }
        match export_bytes(s.be.clone(), s.board.clone(), s.pos).await {
            Ok((_, 0)) => None,
            Ok((b, n)) => {
                s.pos += n;
                s.done = n < EXPORT_CHUNK;
                Some((Ok(b), s))
            }
            Err(e) => {
                // The board went away mid-stream: end the body with an
                // error, so the client sees a broken transfer.
                s.done = true;
                Some((Err(std::io::Error::other(e.message)), s))
            }
        }
    });
    Ok((
        [(CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(stream),
    )
        .into_response())
}

// ------------------------------------------------------------- import

/// Splits a byte stream into records: lines, or for CSV, lines whose line
/// breaks inside quoted fields do not end the record. A record longer than
/// [`MAX_IMPORT_LINE_BYTES`] is reported as an error and skipped up to the
/// next line break.
struct Splitter {
    buf: BytesMut,
    csv: bool,
    /// Where the terminator scan resumes, and the quote state there.
    scan_from: usize,
    in_quotes: bool,
    /// Line number (1-based) where the pending record starts.
    rec_line: u64,
    /// The pending record is over-long; its bytes are being dropped.
    skipping: bool,
}

/// A record: its first line's number, and its bytes (without the line
/// break) or `None` if it was over-long.
type Rec = (u64, Option<Bytes>);

fn newlines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

impl Splitter {
    fn new(csv: bool) -> Self {
        Splitter {
            buf: BytesMut::new(),
            csv,
            scan_from: 0,
            in_quotes: false,
            rec_line: 1,
            skipping: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The end (index of the `\n`) of the pending record, if buffered.
    fn find_end(&mut self) -> Option<usize> {
        let from = self.scan_from;
        if !self.csv || self.skipping {
            let found = self.buf[from..].iter().position(|&c| c == b'\n');
            self.scan_from = self.buf.len();
            return found.map(|i| from + i);
        }
        for i in from..self.buf.len() {
            match self.buf[i] {
                b'"' => self.in_quotes = !self.in_quotes,
                b'\n' if !self.in_quotes => return Some(i),
                _ => {}
            }
        }
        self.scan_from = self.buf.len();
        None
    }

    fn take(&mut self, end: usize, eof: bool) -> Rec {
        let raw = self.buf.split_to(end).freeze();
        if !eof {
            let _ = self.buf.split_to(1); // the '\n'
        }
        self.scan_from = 0;
        self.in_quotes = false;
        let line = self.rec_line;
        self.rec_line += newlines(&raw) + u64::from(!eof);
        if std::mem::take(&mut self.skipping) {
            return (line, None);
        }
        let mut rec = raw;
        if rec.last() == Some(&b'\r') {
            rec.truncate(rec.len() - 1);
        }
        if rec.len() > MAX_IMPORT_LINE_BYTES {
            return (line, None);
        }
        (line, Some(rec))
    }

    /// The next complete record, if one is buffered.
    fn next(&mut self) -> Option<Rec> {
        if let Some(end) = self.find_end() {
            return Some(self.take(end, false));
        }
        // +1: a line of exactly the limit may still be waiting for its "\r".
        if self.buf.len() > MAX_IMPORT_LINE_BYTES + 1 {
            let rescan = !self.skipping;
            self.skipping = true;
            self.in_quotes = false;
            if rescan && self.csv {
                // Likely an unclosed quote: the record ends at the first
                // line break after all.
                self.scan_from = 0;
                if let Some(end) = self.find_end() {
                    return Some(self.take(end, false));
                }
            }
            // No line break buffered (a plain scan found none): drop it all.
            self.buf.clear();
            self.scan_from = 0;
        }
        None
    }

    /// The last record, without a final line break, at the end of input.
    fn finish(&mut self) -> Option<Rec> {
        if self.buf.is_empty() && !self.skipping {
            return None;
        }
        Some(self.take(self.buf.len(), true))
    }
}

/// The reading side of an `import`: records into entries, for the
/// [`Importer`] that applies them.
struct Reader {
    csv: bool,
    /// No record seen yet (the CSV header may come).
    first: bool,
    /// A CSV header naming sort key columns: each column's meaning.
    columns: Option<Vec<Column>>,
}

/// A CSV column, by its header name.
enum Column {
    Member,
    Score,
    Name,
    /// A sort key's value (an empty field leaves the key out).
    Key(String),
}

impl Reader {
    fn parse_ndjson(line: &[u8]) -> Result<SubmitIn, (Option<String>, ApiError)> {
        let v = podium_core::json::value(line, "malformed JSON").map_err(|e| (None, e))?;
        let member = v.get("member").and_then(Value::as_str).map(str::to_string);
        submit_in(v, true).map_err(|e| (member, e))
    }

    /// `Ok(None)`: the header line. A header `member,score[,name]` (or
    /// none) reads rows positionally; one naming other columns (a board's
    /// sort keys: `member,laps,time_ms[,name]`) reads each row by it.
    fn parse_csv(&mut self, line: &[u8]) -> Result<Option<SubmitIn>, (Option<String>, ApiError)> {
        let mut s = std::str::from_utf8(line).map_err(|_| {
            (
                None,
                ApiError::new(Code::MalformedRequest, "the line is not UTF-8"),
            )
        })?;
        if self.first {
            s = s.strip_prefix('\u{feff}').unwrap_or(s);
        }
        let f = csv_fields(s).map_err(|m| (None, ApiError::new(Code::MalformedRequest, m)))?;
        if self.first && f.len() >= 2 && f[0].trim().eq_ignore_ascii_case("member") {
            let cols = header_columns(&f).map_err(|e| (None, e))?;
            if cols.iter().any(|c| matches!(c, Column::Key(_))) {
                self.columns = Some(cols);
                return Ok(None);
            }
            if f[1].trim().eq_ignore_ascii_case("score") {
                return Ok(None);
            }
        }
        if let Some(cols) = &self.columns {
            return keyed_row(cols, f).map(Some);
        }
        let member = f[0].clone();
        if !(2..=3).contains(&f.len()) {
            return Err((
                Some(member),
                ApiError::new(
                    Code::MalformedRequest,
                    format!("expected member,score[,name]; got {} fields", f.len()),
                ),
            ));
        }
        let score = parse_score(&f[1])
            .map_err(|m| (Some(member.clone()), ApiError::new(Code::InvalidScore, m)))?;
        let mut e = SubmitIn::new(member, score);
        e.name = f.get(2).filter(|n| !n.is_empty()).cloned();
        Ok(Some(e))
    }

    fn record(&mut self, imp: &mut Importer<'_>, (line, bytes): Rec) {
        let Some(bytes) = bytes else {
            let e = ApiError::new(
                Code::PayloadTooLarge,
                format!("line is longer than {MAX_IMPORT_LINE_BYTES} bytes"),
            );
            self.first = false;
            imp.fail(line, None, &e);
            return;
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let parsed = if self.csv {
            self.parse_csv(&bytes)
        } else {
            Self::parse_ndjson(&bytes).map(Some)
        };
        self.first = false;
        match parsed {
            Ok(Some(e)) => imp.push(line, e),
            Ok(None) => {}
            Err((member, e)) => imp.fail(line, member, &e),
        }
    }
}

/// A CSV header's columns: `member` first, then `score`, `name` or sort
/// key names, each once.
fn header_columns(f: &[String]) -> Result<Vec<Column>, ApiError> {
    let bad = |m: String| ApiError::new(Code::MalformedRequest, m);
    let mut cols = Vec::with_capacity(f.len());
    for (i, name) in f.iter().map(|c| c.trim()).enumerate() {
        if f[..i].iter().any(|p| p.trim() == name) {
            return Err(bad(format!("the header names column {name:?} twice")));
        }
        cols.push(match name.to_ascii_lowercase().as_str() {
            "member" if i == 0 => Column::Member,
            "member" => return Err(bad("member must be the header's first column".into())),
            "score" => Column::Score,
            "name" => Column::Name,
            "" => return Err(bad(format!("header column {} has no name", i + 1))),
            _ => Column::Key(name.to_string()),
        });
    }
    Ok(cols)
}

/// A CSV row read by its header's columns.
fn keyed_row(cols: &[Column], f: Vec<String>) -> Result<SubmitIn, (Option<String>, ApiError)> {
    let member = f[0].clone();
    let fail = |c: Code, m: String| (Some(member.clone()), ApiError::new(c, m));
    if f.len() != cols.len() {
        return Err(fail(
            Code::MalformedRequest,
            format!(
                "expected {} fields as the header names, got {}",
                cols.len(),
                f.len()
            ),
        ));
    }
    let mut e = SubmitIn::new(member.clone(), 0.0);
    e.score = podium_core::api::Score::ABSENT;
    let mut scores = Vec::new();
    for (col, field) in cols.iter().zip(f).skip(1) {
        match col {
            Column::Member => {}
            Column::Score => {
                let s = parse_score(&field).map_err(|m| fail(Code::InvalidScore, m))?;
                e.score = podium_core::api::Score(s);
            }
            Column::Name => e.name = Some(field).filter(|n| !n.is_empty()),
            Column::Key(_) if field.trim().is_empty() => {}
            Column::Key(k) => {
                let v = match podium_engine::Num::parse(&field) {
                    Some(n @ podium_engine::Num::Int(_)) => n,
                    _ => podium_engine::Num::Float(
                        parse_score(&field)
                            .map_err(|m| fail(Code::InvalidScore, format!("{k}: {m}")))?,
                    ),
                };
                scores.push((k.clone(), v));
            }
        }
    }
    e.scores = Some(podium_core::api::NamedScores(scores));
    Ok(e)
}

/// The media types of an import body.
const IMPORT_CSV: &str = "text/csv";
const IMPORT_NDJSON: &str = "application/x-ndjson";

#[derive(Deserialize)]
pub(crate) struct ImportQ {
    format: Option<String>,
}

pub(crate) async fn import(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<ImportQ>,
    headers: HeaderMap,
    body: Body,
) -> HttpResult<Response> {
    let csv = match q.format.as_deref() {
        Some("csv") => true,
        Some("ndjson") => false,
        Some(other) => {
            return Err(
                ApiError::bad(format!("format must be ndjson or csv, got {other:?}")).into(),
            )
        }
        None => media_type(&headers).as_deref() == Some("text/csv"),
    };
    // Lines of CSV or NDJSON, said so: never text or a form, which a web
    // page may send to another site without its consent. A request with
    // no body at all (no length, or length 0) carries nothing to say a
    // type of, and imports nothing.
    let no_body = axum::body::HttpBody::size_hint(&body).exact() == Some(0);
    match media_type(&headers).as_deref() {
        Some(IMPORT_CSV | IMPORT_NDJSON | "application/ndjson" | "application/jsonl")
        | Some("application/json") => {}
        None if no_body => {}
        other => {
            return Err(super::error::unsupported_type(
                other,
                "an import body of Content-Type text/csv or application/x-ndjson",
            )
            .into())
        }
    }
    let mut imp = Importer::new(&*st.be, board, IMPORT_BATCH);
    let mut reader = Reader {
        csv,
        first: true,
        columns: None,
    };
    let mut split = Splitter::new(csv);
    let mut body = body.into_data_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                Code::MalformedRequest,
                format!("could not read the request body: {e}"),
            )
        })?;
        split.push(&chunk);
        while let Some(rec) = split.next() {
            reader.record(&mut imp, rec);
            if imp.pending() >= IMPORT_BATCH {
                imp.flush().await?;
            }
        }
    }
    if let Some(rec) = split.finish() {
        reader.record(&mut imp, rec);
    }
    imp.flush().await?;
    Ok(Json(imp.finish()).into_response())
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(csv: bool, chunks: &[&[u8]]) -> Vec<(u64, Option<String>)> {
        let mut s = Splitter::new(csv);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c);
            while let Some((l, b)) = s.next() {
                out.push((l, b.map(|b| String::from_utf8(b.to_vec()).unwrap())));
            }
        }
        if let Some((l, b)) = s.finish() {
            out.push((l, b.map(|b| String::from_utf8(b.to_vec()).unwrap())));
        }
        out
    }

    #[test]
    fn splitter_lines_and_numbers() {
        let got = split_all(false, &[b"a\r\nb", b"c\n\nd"]);
        assert_eq!(
            got,
            vec![
                (1, Some("a".into())),
                (2, Some("bc".into())),
                (3, Some("".into())),
                (4, Some("d".into())),
            ]
        );
        // CSV: a quoted line break does not end the record.
        let got = split_all(true, &[b"a,1\n\"x\ny\",2\n", b"c,3"]);
        assert_eq!(
            got,
            vec![
                (1, Some("a,1".into())),
                (2, Some("\"x\ny\",2".into())),
                (4, Some("c,3".into())),
            ]
        );
    }

    #[test]
    fn splitter_drops_overlong_lines_and_goes_on() {
        let long = vec![b'x'; MAX_IMPORT_LINE_BYTES + 10];
        let got = split_all(false, &[b"a\n", &long, &long, b"\nb\n"]);
        assert_eq!(
            got,
            vec![(1, Some("a".into())), (2, None), (3, Some("b".into()))]
        );
        // Exactly the limit is fine, with or without "\r".
        let mut exact = vec![b'y'; MAX_IMPORT_LINE_BYTES];
        exact.extend_from_slice(b"\r\nz");
        let got = split_all(false, &[&exact]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.as_ref().unwrap().len(), MAX_IMPORT_LINE_BYTES);
        assert_eq!(got[1], (2, Some("z".into())));
        // An unclosed CSV quote is cut off at the limit, then the next
        // line is read normally.
        let mut bad = b"\"open,1\n".to_vec();
        bad.extend(std::iter::repeat_n(b'q', MAX_IMPORT_LINE_BYTES + 5));
        bad.extend_from_slice(b"\nok,2\n");
        let got = split_all(true, &[&bad]);
        assert_eq!(got, vec![(1, None), (2, None), (3, Some("ok,2".into()))]);
    }
}
