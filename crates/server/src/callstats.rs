//! Request counts, errors and latency histograms of the operations and of
//! each protocol's own commands, for `/metrics`: the
//! `podium_operations_total` / `podium_operation_seconds` families (every
//! protocol, by [`Op`]), `podium_rpc_requests_total` /
//! `podium_rpc_request_seconds` (by MessagePack-RPC method) and
//! `podium_resp_commands_total` / `podium_resp_command_seconds` (by Redis
//! command). HTTP's per-route families are the HTTP frontend's own.
//!
//! A request bumps three counters of its thread ([`Counters`]: no lock,
//! no shared cache line) — calls or errors, its time, one bucket — once:
//! an RPC call or a Redis command in its method's or command's row (each
//! stands for one operation, so a scrape sums them into the operation
//! rows), an HTTP request in its operation's row. A scrape sums the
//! threads and writes the text. They are never reset (Redis's CONFIG
//! RESETSTAT resets INFO's figures, not these), as Prometheus counters
//! must only grow.

use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::Duration;

use podium_core::counters::Counters;
use podium_core::op::Op;

/// Histogram buckets (seconds) of every `*_seconds` metric: request
/// latency, fsync and snapshot time.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

/// The protocols, in the order of their rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Rpc,
    Resp,
}

impl Protocol {
    const ALL: [Protocol; 3] = [Protocol::Http, Protocol::Rpc, Protocol::Resp];

    fn name(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Rpc => "rpc",
            Protocol::Resp => "resp",
        }
    }
}

/// Per row: calls that succeeded, calls answered with an error, the sum of
/// their times in nanoseconds, then one count per bucket (the last one
/// past every bound: `+Inf`).
const OK: usize = 0;
const ERRORS: usize = 1;
const NANOS: usize = 2;
const FIRST_BUCKET: usize = 3;
const SLOTS: usize = FIRST_BUCKET + SECONDS_BUCKETS.len() + 1;

/// [`SECONDS_BUCKETS`] in nanoseconds, for a comparison of integers.
static BOUNDS_NANOS: LazyLock<Vec<u64>> =
    LazyLock::new(|| SECONDS_BUCKETS.iter().map(|s| (s * 1e9) as u64).collect());

/// One histogram and two counters per row, rows numbered from 0.
pub struct CallStats {
    rows: usize,
    counts: Counters,
}

impl CallStats {
    pub fn new(rows: usize) -> CallStats {
        CallStats {
            rows,
            counts: Counters::new(rows * SLOTS),
        }
    }

    /// Row `row` answered (`ok`: without an error) after `took`.
    #[inline]
    pub fn record(&self, row: usize, ok: bool, took: Duration) {
        if row >= self.rows {
            return;
        }
        let nanos = took.as_nanos().min(u64::MAX as u128) as u64;
        let bucket = BOUNDS_NANOS.partition_point(|&b| b < nanos);
        let at = row * SLOTS;
        let mine = self.counts.mine();
        mine.add(at + if ok { OK } else { ERRORS }, 1);
        mine.add(at + NANOS, nanos);
        mine.add(at + FIRST_BUCKET + bucket, 1);
    }

    /// Each row's sums over the threads, by row number.
    pub fn each_row(&self, f: &mut dyn FnMut(usize, &[u64])) {
        let all = self.counts.all();
        for (r, row) in all.chunks_exact(SLOTS).enumerate() {
            f(r, row);
        }
    }

    /// Appends the two families of these rows; see [`render_rows`].
    pub fn render(
        &self,
        out: &mut String,
        total: (&str, &str),
        seconds: (&str, &str),
        labels: impl Fn(usize) -> String,
    ) {
        render_rows(&self.counts.all(), out, total, seconds, labels);
    }
}

/// Appends the two families of `sums` (rows of [`SLOTS`] counters):
/// `{total}` with `labels(row)` and `status="ok"|"error"`, `{seconds}` as
/// a histogram with `labels(row)`. Rows never called are left out.
fn render_rows(
    sums: &[u64],
    out: &mut String,
    (total, total_help): (&str, &str),
    (seconds, seconds_help): (&str, &str),
    labels: impl Fn(usize) -> String,
) {
    {
        let rows: Vec<(usize, &[u64])> = sums
            .chunks_exact(SLOTS)
            .enumerate()
            .filter(|(_, s)| s[OK] + s[ERRORS] > 0)
            .collect();
        let _ = writeln!(out, "# HELP {total} {total_help}\n# TYPE {total} counter");
        for (r, s) in &rows {
            let l = labels(*r);
            let _ = writeln!(out, "{total}{{{l},status=\"ok\"}} {}", s[OK]);
            let _ = writeln!(out, "{total}{{{l},status=\"error\"}} {}", s[ERRORS]);
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "# HELP {seconds} {seconds_help}\n# TYPE {seconds} histogram"
        );
        for (r, s) in &rows {
            let l = labels(*r);
            let mut cumulative = 0;
            for (i, bound) in SECONDS_BUCKETS.iter().enumerate() {
                cumulative += s[FIRST_BUCKET + i];
                let _ = writeln!(out, "{seconds}_bucket{{{l},le=\"{bound}\"}} {cumulative}");
            }
            let count = s[OK] + s[ERRORS];
            let _ = writeln!(out, "{seconds}_bucket{{{l},le=\"+Inf\"}} {count}");
            let _ = writeln!(out, "{seconds}_sum{{{l}}} {}", s[NANOS] as f64 / 1e9);
            let _ = writeln!(out, "{seconds}_count{{{l}}} {count}");
        }
        out.push('\n');
    }
}

/// Every operation over every protocol: row `op × 3 + protocol`.
pub static OPERATIONS: LazyLock<CallStats> =
    LazyLock::new(|| CallStats::new(Op::ALL.len() * Protocol::ALL.len()));

/// The row of `op` over `protocol` (an operation's discriminant is its
/// place in [`Op::ALL`]: a test checks).
fn op_row(op: Op, protocol: Protocol) -> usize {
    op as usize * Protocol::ALL.len() + protocol as usize
}

/// An HTTP request of operation `op` answered (the other protocols count
/// their own rows, summed at scrape time).
#[inline]
pub fn http_operation(op: Op, ok: bool, took: Duration) {
    OPERATIONS.record(op_row(op, Protocol::Http), ok, took);
}

/// Hands each of a protocol's rows over as its operation's sums.
pub type AddOperations = fn(&mut dyn FnMut(Op, &[u64]));

/// A protocol's own rows, which its frontend keeps (MessagePack-RPC's by
/// method, the Redis protocol's by command): how they add into the
/// operation rows, and how their own families are written.
#[derive(Clone, Copy)]
pub struct ProtocolRows {
    pub protocol: Protocol,
    pub add_operations: AddOperations,
    /// Writes the protocol's own families.
    pub render: fn(&mut String),
}

/// The protocols' own rows, in the order of [`Protocol`].
static PROTOCOL_ROWS: parking_lot::RwLock<Vec<ProtocolRows>> = parking_lot::RwLock::new(Vec::new());

/// Adds a protocol's own rows to what [`render`] writes (once per
/// protocol). `podium serve` registers every frontend's, whichever
/// listeners it opens, so a scrape always shows the same families.
pub fn register(rows: ProtocolRows) {
    let mut all = PROTOCOL_ROWS.write();
    if !all.iter().any(|r| r.protocol == rows.protocol) {
        all.push(rows);
        all.sort_by_key(|r| r.protocol as usize);
    }
}

/// Every family of this module, for `/metrics`.
pub fn render(out: &mut String) {
    let per = Protocol::ALL.len();
    let mut ops = OPERATIONS.counts.all();
    let protocols = PROTOCOL_ROWS.read().clone();
    for p in &protocols {
        (p.add_operations)(&mut |op, row| add_row(&mut ops, op_row(op, p.protocol), row));
    }
    render_rows(
        &ops,
        out,
        (
            "podium_operations_total",
            "Requests answered, by operation (the OpenAPI operationId) and protocol; status error: answered with an error (refusals included).",
        ),
        (
            "podium_operation_seconds",
            "Time from a request's arrival to its answer, by operation and protocol.",
        ),
        |row| {
            format!(
                "op=\"{}\",protocol=\"{}\"",
                Op::ALL[row / per].name(),
                Protocol::ALL[row % per].name()
            )
        },
    );
    for p in &protocols {
        (p.render)(out);
    }
}

/// Adds one row's sums into row `to` of `rows`.
fn add_row(rows: &mut [u64], to: usize, row: &[u64]) {
    if let Some(dst) = rows.get_mut(to * SLOTS..(to + 1) * SLOTS) {
        for (d, s) in dst.iter_mut().zip(row) {
            *d = d.wrapping_add(*s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operations_discriminant_is_its_place_in_the_table() {
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i, "{op:?}");
        }
        for (i, p) in Protocol::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "{p:?}");
        }
    }

    #[test]
    fn rows_render_as_counters_and_cumulative_histograms() {
        let s = CallStats::new(3);
        s.record(1, true, Duration::from_micros(30));
        s.record(1, true, Duration::from_millis(3));
        s.record(1, false, Duration::from_secs(20));
        s.record(7, true, Duration::ZERO);
        let mut out = String::new();
        s.render(&mut out, ("t_total", "T."), ("t_seconds", "S."), |r| {
            format!("row=\"{r}\"")
        });
        assert!(
            out.contains("t_total{row=\"1\",status=\"ok\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("t_total{row=\"1\",status=\"error\"} 1\n"));
        assert!(!out.contains("row=\"0\""), "rows never called are left out");
        assert!(out.contains("t_seconds_bucket{row=\"1\",le=\"0.00005\"} 1\n"));
        assert!(out.contains("t_seconds_bucket{row=\"1\",le=\"0.0025\"} 1\n"));
        assert!(out.contains("t_seconds_bucket{row=\"1\",le=\"0.005\"} 2\n"));
        assert!(out.contains("t_seconds_bucket{row=\"1\",le=\"10\"} 2\n"));
        assert!(out.contains("t_seconds_bucket{row=\"1\",le=\"+Inf\"} 3\n"));
        assert!(out.contains("t_seconds_count{row=\"1\"} 3\n"));
        assert!(out.contains("t_seconds_sum{row=\"1\"} 20.00303\n"), "{out}");
        assert!(out.contains("# HELP t_total T.\n# TYPE t_total counter\n"));
        assert!(out.contains("# TYPE t_seconds histogram\n"));
    }
}
