//! The MessagePack-RPC transport, through [`podium_client`]'s blocking
//! client: small calls with a deadline, `import` as calls of 10,000
//! entries with several in flight, and `export` as one response written
//! out as NDJSON entry by entry.

use std::collections::VecDeque;
use std::io::{self, BufReader, Read, Write};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::ProgressBar;
use podium_client::{blocking, ClientError, ImportResult, ResponseFuture, Ser};
use podium_core::api::{BoardOut, EntryOut, ErrorBody, SearchOut, SubmitIn, SubmitOut, TopOut};
use serde::{Deserialize, Serialize};

use super::{Answer, Conn, SearchQuery, CONNECT_TIMEOUT, PROBE_AFTER, REQUEST_TIMEOUT};
use crate::import::{ImportInput, Tally, IMPORT_BATCH, IMPORT_BATCH_BYTES, IMPORT_IN_FLIGHT};
use crate::input::{import_entry, Format, Records, MAX_RECORD_BYTES};
use crate::render::{draw_target, style};

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

/// A connection to the server's MessagePack-RPC port.
pub struct Rpc {
    c: blocking::Client,
    addr: String,
}

impl Rpc {
    pub fn connect(conn: &Conn) -> Result<Rpc> {
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

    /// Waits for a small request's answer, at most [`REQUEST_TIMEOUT`]. A
    /// podium answers a small call at once; a port silent past
    /// [`PROBE_AFTER`] is asked what it speaks (a Redis or HTTP server
    /// waits for the end of a line that MessagePack never sends), so a
    /// wrong port is named in a moment rather than after the whole wait.
    fn small(&self, mut f: ResponseFuture) -> Result<podium_client::RawResponse> {
        let first = self
            .c
            .wait_for(&mut f, PROBE_AFTER)
            .map(|r| r.map_err(|e| self.error(e)));
        if let Some(r) = first {
            return r;
        }
        if let Some(proto) = super::probe(&self.addr) {
            bail!(
                "{} answered in the {proto}, not MessagePack-RPC; the RPC port is 7071 by \
                 default (--rpc HOST:PORT){}",
                self.addr,
                match proto {
                    super::Protocol::Http => format!(
                        ", or use this one over HTTP with --http http://{}",
                        self.addr
                    ),
                    super::Protocol::Redis => String::new(),
                }
            );
        }
        self.c
            .wait_timeout(f, REQUEST_TIMEOUT.saturating_sub(PROBE_AFTER))
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
            ClientError::Server { ref code, .. } if code == "unauthorized" => {
                anyhow!("{e}: give the key with --api-key KEY or PODIUM_API_KEY")
            }
            ClientError::Server { .. } => anyhow!("{e}"),
            ClientError::Protocol(m) if m.contains("Redis protocol") => anyhow!(
                "{} answered in the Redis protocol, not MessagePack-RPC; the RPC port is 7071 \
                 by default (--rpc HOST:PORT)",
                self.addr
            ),
            ClientError::Protocol(m) if m.contains("starts like HTTP") => anyhow!(
                "{} answers HTTP, not MessagePack-RPC: is that podium's HTTP port? Give it as \
                 --http http://{} (the HTTP API), or give --rpc the RPC port (default 127.0.0.1:7071)",
                self.addr,
                self.addr
            ),
            ClientError::Io(io) => anyhow!("talking to podium at {} failed: {io}", self.addr),
            ClientError::Protocol(m) => {
                anyhow!("unexpected answer from podium at {}: {m}", self.addr)
            }
        }
    }

    pub fn top(&self, board: &str, page: u64, page_size: u64) -> Result<Answer<TopOut>> {
        let opts = PageOpts { page, page_size };
        Ok(Answer::Value(self.call("top", &Ser((board, opts)))?))
    }

    pub fn search(&self, board: &str, q: &SearchQuery) -> Result<Answer<SearchOut>> {
        let opts = SearchOpts {
            limit: q.limit,
            offset: q.offset,
            with_data: q.with_data,
        };
        Ok(Answer::Value(
            self.call("search", &Ser((board, q.query, opts)))?,
        ))
    }

    pub fn submit(&self, board: &str, entry: &SubmitIn) -> Result<Answer<SubmitOut>> {
        Ok(Answer::Value(self.call("submit", &Ser((board, entry)))?))
    }

    pub fn board_info(&self, board: &str) -> Result<BoardOut> {
        self.call("board_info", &Ser((board,)))
    }

    /// Any operation, decoded.
    pub fn request<T: serde::de::DeserializeOwned>(
        &self,
        r: super::RpcReq<'_>,
    ) -> Result<Answer<T>> {
        Ok(Answer::Value(self.call(r.method, &Ser(&r.params))?))
    }

    /// Starts an export; its one response is awaited by [`RpcExport::write`].
    pub fn export(&self, board: &str) -> RpcExport<'_> {
        RpcExport {
            rpc: self,
            f: self.c.start("export", &Ser((board,))),
            board: board.to_string(),
        }
    }

    /// Reads the input's records and sends them as `import` calls,
    /// several in flight.
    pub fn import(&self, board: &str, input: ImportInput) -> Result<ImportResult> {
        import_records(self, board, input.format, input.reader)
    }
}

/// An `import` call in flight and the line number of each of its entries.
type InFlight = (ResponseFuture, Vec<u64>);

fn import_records(
    rpc: &Rpc,
    board: &str,
    format: Format,
    reader: Box<dyn Read + Send>,
) -> Result<ImportResult> {
    let csv = format == Format::Csv;
    let mut records = Records::new(BufReader::with_capacity(256 << 10, reader), csv);
    let mut out = ImportResult {
        board: board.to_string(),
        imported: 0,
        failed: 0,
        errors: Vec::new(),
    };
    let mut flight: VecDeque<InFlight> = VecDeque::new();
    let (mut entries, mut lines, mut bytes) = (Vec::new(), Vec::new(), 0usize);
    let mut first = true;
    let wait = |out: &mut ImportResult, (f, lines): InFlight| -> Result<()> {
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
        let batch: ImportResult = r.decode().map_err(|e| rpc.error(e))?;
        out.add(batch, &lines);
        Ok(())
    };
    let send = |out: &mut ImportResult,
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
        let rec = records
            .next_record()
            .context("cannot read the import input")?;
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

/// An export in flight: one response holding every entry.
pub struct RpcExport<'a> {
    rpc: &'a Rpc,
    f: ResponseFuture,
    board: String,
}

impl RpcExport<'_> {
    /// Receives the export with a progress bar over its bytes, then writes
    /// it to `out` as NDJSON with one over `members`; returns the lines
    /// written.
    pub fn write(self, out: &mut dyn Write, members: u64, quiet: bool) -> Result<u64> {
        let (rpc, f) = (self.rpc, self.f);
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
                .context(format!("the export of {:?} failed{hint}", self.board))
        })?;
        let pb = ProgressBar::with_draw_target(Some(members), draw_target(quiet));
        pb.set_style(style(
            "exporting [{bar:32}] {human_pos}/{human_len} members {per_sec:>12} eta {eta}",
        ));
        let result = write_export(r.result_bytes(), out, &pb);
        pb.finish_and_clear();
        result
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
