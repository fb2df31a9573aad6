//! What the Redis protocol counts of its own work, as Redis reports it:
//! INFO's `stats`, `commandstats` and `errorstats` sections (commands run,
//! per-command calls and time, error replies by code, connections and
//! bytes), the operations-per-second sample, and the slow log (SLOWLOG).
//!
//! The per-command counters are [`Counters`], kept per thread, so
//! counting costs a command no lock and no cache line shared with the
//! other threads; the error and slow-log tables are locked only when a
//! command fails or is slow.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use parking_lot::Mutex;
use podium_core::counters::Counters;

use super::command::COMMANDS;
use super::reply::Reply;

/// Where one command's counters (`cmdstat_NAME`) start in
/// [`Stats::counts`], after the total of commands (counter 0); they are,
/// in order, calls, microseconds, refusals before running (arity,
/// authentication, scope, memory) and error replies.
fn cmd_base(index: usize) -> usize {
    1 + 4 * index
}
const CALLS: usize = 0;
const USEC: usize = 1;
const REJECTED: usize = 2;
const FAILED: usize = 3;

/// Redis's `slowlog-log-slower-than` default, in microseconds.
pub const SLOWLOG_SLOWER_THAN: i64 = 10_000;
/// Redis's `slowlog-max-len` default.
pub const SLOWLOG_MAX_LEN: usize = 128;
/// Arguments a slow-log entry keeps (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const SLOWLOG_MAX_ARGC: usize = 32;
/// Bytes of an argument a slow-log entry keeps (`SLOWLOG_ENTRY_MAX_STRING`).
const SLOWLOG_MAX_STRING: usize = 128;

/// One slow-log entry.
pub struct Slow {
    pub id: u64,
    pub at_secs: i64,
    pub usec: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: Vec<u8>,
}

/// Operations-per-second samples, one each [`Stats::sample`] (every
/// 100 ms), as Redis's `instantaneous_ops_per_sec` averages its last 16.
struct Samples {
    last: Option<(Instant, u64)>,
    rates: VecDeque<f64>,
}

/// Everything the listener counts; see the module doc.
pub struct Stats {
    /// The total of commands, then each command's counters
    /// ([`cmd_base`]).
    counts: Counters,
    pub connections: AtomicU64,
    pub net_input: AtomicU64,
    pub net_output: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
    error_replies: AtomicU64,
    samples: Mutex<Samples>,
    slow: Mutex<VecDeque<Slow>>,
    next_slow_id: AtomicU64,
    /// CONFIG `slowlog-log-slower-than` (µs; negative: never).
    pub slower_than: AtomicI64,
    /// CONFIG `slowlog-max-len`.
    pub slow_max: AtomicUsize,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            counts: Counters::new(cmd_base(COMMANDS.len())),
            connections: AtomicU64::new(0),
            net_input: AtomicU64::new(0),
            net_output: AtomicU64::new(0),
            errors: Mutex::default(),
            error_replies: AtomicU64::new(0),
            samples: Mutex::new(Samples {
                last: None,
                rates: VecDeque::new(),
            }),
            slow: Mutex::default(),
            next_slow_id: AtomicU64::new(0),
            slower_than: AtomicI64::new(SLOWLOG_SLOWER_THAN),
            slow_max: AtomicUsize::new(SLOWLOG_MAX_LEN),
        }
    }
}

/// The first word of an error reply (its code: `ERR`, `WRONGTYPE`, …).
fn error_code(e: &[u8]) -> String {
    let end = e.iter().position(|&c| c == b' ').unwrap_or(e.len());
    String::from_utf8_lossy(&e[..end.min(64)]).into_owned()
}

impl Stats {
    /// Commands run or refused (`total_commands_processed`).
    pub fn commands(&self) -> u64 {
        self.counts.get(0)
    }

    /// A command at `index` of [`COMMANDS`] ran for `usec` and answered
    /// `reply`.
    pub fn ran(&self, index: usize, usec: u64, reply: &Reply) {
        let (at, mine) = (cmd_base(index), self.counts.mine());
        mine.add(0, 1);
        mine.add(at + CALLS, 1);
        mine.add(at + USEC, usec);
        if let Reply::Error(e) = reply {
            mine.add(at + FAILED, 1);
            self.error(e);
        }
    }

    /// A command at `index` (when known) was refused with `error` before
    /// running.
    pub fn rejected(&self, index: Option<usize>, error: &Reply) {
        let mine = self.counts.mine();
        mine.add(0, 1);
        if let Some(i) = index {
            mine.add(cmd_base(i) + REJECTED, 1);
        }
        if let Reply::Error(e) = error {
            self.error(e);
        }
    }

    /// An error reply, counted by its code.
    pub fn error(&self, e: &[u8]) {
        self.error_replies.fetch_add(1, Relaxed);
        *self.errors.lock().entry(error_code(e)).or_default() += 1;
    }

    /// Takes one operations-per-second sample.
    pub fn sample(&self) {
        let now = Instant::now();
        let total = self.commands();
        let mut s = self.samples.lock();
        if let Some((t, n)) = s.last {
            let secs = now.duration_since(t).as_secs_f64();
            if secs > 0.0 {
                s.rates.push_back(total.saturating_sub(n) as f64 / secs);
                if s.rates.len() > 16 {
                    s.rates.pop_front();
                }
            }
        }
        s.last = Some((now, total));
    }

    /// `instantaneous_ops_per_sec`.
    pub fn ops_per_sec(&self) -> u64 {
        let s = self.samples.lock();
        if s.rates.is_empty() {
            return 0;
        }
        (s.rates.iter().sum::<f64>() / s.rates.len() as f64).round() as u64
    }

    /// Logs a command that took `usec`, if that is slow (Redis's
    /// `slowlogPushEntryIfNeeded`).
    pub fn maybe_slow(
        &self,
        usec: u64,
        args: &[Bytes],
        addr: &str,
        name: impl FnOnce() -> Vec<u8>,
    ) {
        let threshold = self.slower_than.load(Relaxed);
        if threshold < 0 || (usec as i64) < threshold {
            return;
        }
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i == SLOWLOG_MAX_ARGC - 1 && args.len() > SLOWLOG_MAX_ARGC {
                kept.push(format!("... ({} more arguments)", args.len() - i).into_bytes());
                break;
            }
            if a.len() > SLOWLOG_MAX_STRING {
                let mut v = a[..SLOWLOG_MAX_STRING].to_vec();
                v.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - SLOWLOG_MAX_STRING).as_bytes(),
                );
                kept.push(v);
            } else {
                kept.push(a.to_vec());
            }
        }
        let at_secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let entry = Slow {
            id: self.next_slow_id.fetch_add(1, Relaxed),
            at_secs,
            usec,
            args: kept,
            addr: addr.to_string(),
            name: name(),
        };
        let max = self.slow_max.load(Relaxed);
        let mut slow = self.slow.lock();
        slow.push_front(entry);
        slow.truncate(max);
    }

    /// SLOWLOG GET: the `count` newest entries (all with a negative
    /// count).
    pub fn slow_entries(&self, count: i64) -> Reply {
        let slow = self.slow.lock();
        let n = if count < 0 {
            slow.len()
        } else {
            (count as usize).min(slow.len())
        };
        Reply::Array(
            slow.iter()
                .take(n)
                .map(|e| {
                    Reply::Array(vec![
                        Reply::Int(e.id as i64),
                        Reply::Int(e.at_secs),
                        Reply::Int(e.usec as i64),
                        Reply::Array(e.args.iter().map(|a| Reply::Bulk(a.clone())).collect()),
                        Reply::Bulk(e.addr.clone().into_bytes()),
                        Reply::Bulk(e.name.clone()),
                    ])
                })
                .collect(),
        )
    }

    pub fn slow_len(&self) -> usize {
        self.slow.lock().len()
    }

    pub fn slow_reset(&self) {
        self.slow.lock().clear();
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.counts.reset();
        for c in [
            &self.connections,
            &self.net_input,
            &self.net_output,
            &self.error_replies,
        ] {
            c.store(0, Relaxed);
        }
        self.errors.lock().clear();
        let mut s = self.samples.lock();
        s.rates.clear();
        s.last = None;
    }

    /// INFO `commandstats`: a line per command that was called or
    /// refused.
    pub fn commandstats(&self) -> String {
        let mut out = String::new();
        let counts = self.counts.all();
        for (i, spec) in COMMANDS.iter().enumerate() {
            let s = &counts[cmd_base(i)..cmd_base(i + 1)];
            let (calls, usec, rejected, failed) = (s[CALLS], s[USEC], s[REJECTED], s[FAILED]);
            if calls == 0 && rejected == 0 {
                continue;
            }
            let per = if calls > 0 {
                usec as f64 / calls as f64
            } else {
                0.0
            };
            out.push_str(&format!(
                "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},\
                 rejected_calls={rejected},failed_calls={}\r\n",
                spec.name, failed
            ));
        }
        out
    }

    /// INFO `errorstats`.
    pub fn errorstats(&self) -> String {
        self.errors
            .lock()
            .iter()
            .map(|(code, n)| format!("errorstat_{code}:count={n}\r\n"))
            .collect()
    }

    /// `total_error_replies`.
    pub fn error_replies(&self) -> u64 {
        self.error_replies.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_entries_are_newest_first_and_bounded() {
        let s = Stats::default();
        s.slow_max.store(2, Relaxed);
        s.slower_than.store(5, Relaxed);
        let args = |x: &str| vec![Bytes::from("GET"), Bytes::from(x.to_string())];
        s.maybe_slow(4, &args("fast"), "a", Vec::new);
        for k in ["one", "two", "three"] {
            s.maybe_slow(5, &args(k), "a", || b"n".to_vec());
        }
        assert_eq!(s.slow_len(), 2);
        let Reply::Array(e) = s.slow_entries(-1) else {
            panic!()
        };
        let Reply::Array(first) = &e[0] else { panic!() };
        assert_eq!(first[0], Reply::Int(2));
        assert_eq!(
            first[3],
            Reply::Array(vec![Reply::bulk("GET"), Reply::bulk("three")])
        );
        s.slow_reset();
        assert_eq!(s.slow_len(), 0);
    }

    #[test]
    fn long_entries_are_cut_as_redis_cuts_them() {
        let s = Stats::default();
        s.slower_than.store(0, Relaxed);
        let mut args: Vec<Bytes> = (0..40).map(|i| Bytes::from(i.to_string())).collect();
        args[1] = Bytes::from(vec![b'x'; 130]);
        s.maybe_slow(0, &args, "a", Vec::new);
        let Reply::Array(e) = s.slow_entries(1) else {
            panic!()
        };
        let Reply::Array(entry) = &e[0] else { panic!() };
        let Reply::Array(kept) = &entry[3] else {
            panic!()
        };
        assert_eq!(kept.len(), 32);
        assert_eq!(kept[31], Reply::bulk("... (9 more arguments)"));
        let mut cut = vec![b'x'; 128];
        cut.extend_from_slice(b"... (2 more bytes)");
        assert_eq!(kept[1], Reply::Bulk(cut));
    }

    #[test]
    fn commands_and_errors_are_counted() {
        let s = Stats::default();
        s.ran(0, 10, &Reply::OK);
        s.ran(0, 20, &Reply::err("no"));
        s.rejected(Some(0), &Reply::coded("NOAUTH Authentication required."));
        assert_eq!(s.commands(), 3);
        assert_eq!(
            s.commandstats(),
            format!(
                "cmdstat_{}:calls=2,usec=30,usec_per_call=15.00,rejected_calls=1,failed_calls=1\r\n",
                COMMANDS[0].name
            )
        );
        assert_eq!(
            s.errorstats(),
            "errorstat_ERR:count=1\r\nerrorstat_NOAUTH:count=1\r\n"
        );
        s.reset();
        assert_eq!(s.commandstats(), "");
        assert_eq!(s.commands(), 0);
        // Counted from the reset on, by any thread.
        std::thread::scope(|t| {
            t.spawn(|| s.ran(0, 7, &Reply::OK));
        });
        s.ran(0, 1, &Reply::OK);
        assert_eq!(s.commands(), 2);
        assert_eq!(
            s.commandstats(),
            format!(
                "cmdstat_{}:calls=2,usec=8,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n",
                COMMANDS[0].name
            )
        );
    }
}
