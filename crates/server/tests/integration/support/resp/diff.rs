//! The differential harness: one connection to Redis and one to podium,
//! the same command sent to both, the replies compared byte for byte
//! (or after a normalisation where Redis leaves the order undefined).
//!
//! A mismatch does not stop the run: it is recorded with the group, the
//! command's index, the command and both replies, and [`Diff::finish`]
//! fails the test with the whole list, so that one run reports every
//! difference.

use std::time::Duration;

use super::wire::{args, cmd, encode, parse_one, show, show_args, Args, Conn, Value};

/// How replies are compared.
#[derive(Clone, Copy, Debug)]
pub enum Cmp {
    /// Identical bytes.
    Exact,
    /// The elements of a top-level array or set, sorted.
    Sorted,
    /// A flat array of field/value pairs or a map, as a set of pairs.
    Pairs,
    /// Integers: equal when negative, else at most this far apart.
    Tolerance(i64),
    /// A `[cursor, [field, value, …]]` page: the cursor exactly, the
    /// pairs as a set (a hash's order is its own).
    ScanPairs,
}

/// One connection to each server, a command log and the mismatches.
pub struct Diff {
    pub redis: Conn,
    pub podium: Conn,
    pub proto: u8,
    /// Whether the "podium" side is really a second redis-server (the
    /// harness checking itself): podium-only checks are skipped.
    pub self_check: bool,
    group: String,
    count: usize,
    mismatches: Vec<String>,
}

impl Diff {
    /// Connects to both; with `proto` 3, switches both to RESP3 with
    /// `HELLO 3` (and compares those replies, id and version aside).
    pub fn new(redis: &str, podium: &str, proto: u8, group: &str, self_check: bool) -> Diff {
        let mut d = Diff {
            redis: Conn::open(redis),
            podium: Conn::open(podium),
            proto,
            self_check,
            group: format!("{group}/resp{proto}"),
            count: 0,
            mismatches: Vec::new(),
        };
        if proto == 3 {
            d.hello("HELLO 3");
        }
        d
    }

    /// The group label (`name/respN`) used in mismatch reports.
    pub fn label(&self) -> &str {
        &self.group
    }

    /// Number of commands compared so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Mismatches so far.
    pub fn mismatches(&self) -> &[String] {
        &self.mismatches
    }

    /// Records a mismatch.
    pub fn record(&mut self, what: &str, command: &str, redis: &[u8], podium: &[u8]) {
        let m = format!(
            "[{} #{}] {what}: {}\n    redis:  {}\n    podium: {}",
            self.group,
            self.count,
            clip_to(command, 200),
            clip(&show(redis)),
            clip(&show(podium))
        );
        eprintln!("MISMATCH {m}");
        self.mismatches.push(m);
    }

    /// Records a failed podium-only check.
    pub fn fail(&mut self, command: &str, why: &str, podium: &[u8]) {
        let m = format!(
            "[{} #{}] {}: {why}\n    podium: {}",
            self.group,
            self.count,
            clip_to(command, 200),
            clip(&show(podium))
        );
        eprintln!("MISMATCH {m}");
        self.mismatches.push(m);
    }

    /// Opens a new podium connection after it failed (in the same
    /// protocol); panics when podium no longer accepts connections.
    fn reconnect_podium(&mut self) {
        let addr = self.podium.addr().to_string();
        match Conn::connect(&addr) {
            Ok(c) => self.podium = c,
            Err(e) => panic!(
                "podium stopped accepting connections ({e}); mismatches so far:\n{}",
                self.mismatches.join("\n")
            ),
        }
        if self.proto == 3 {
            let _ = self.podium.request(&cmd("HELLO 3"));
        }
    }

    /// Sends `a` to both, returns both replies (`None` when podium failed
    /// to answer: recorded, and podium reconnected).
    pub fn both(&mut self, a: &[Vec<u8>]) -> Option<(Vec<u8>, Vec<u8>)> {
        self.count += 1;
        let r = self
            .redis
            .request(a)
            .unwrap_or_else(|e| panic!("redis-server failed on {}: {e}", show_args(a)));
        match self.podium.request(a) {
            Ok(p) => Some((r, p)),
            Err(e) => {
                let what = format!("podium did not answer ({e})");
                self.record(&what, &show_args(a), &r, b"");
                self.reconnect_podium();
                None
            }
        }
    }

    /// Sends `a` to both and compares the replies per `how`. Returns the
    /// Redis reply, parsed.
    pub fn check(&mut self, a: &[Vec<u8>], how: Cmp) -> Option<Value> {
        let (r, p) = self.both(a)?;
        let rv = parse_one(&r).expect("redis sent a reply");
        if trace() {
            eprintln!(
                "[{}] {} -> {}",
                self.group,
                clip(&show_args(a)),
                clip(&show(&r))
            );
        }
        if r == p {
            return Some(rv);
        }
        let pv = match parse_one(&p) {
            Ok(v) => v,
            Err(e) => {
                self.record(&format!("not RESP: {}", e.0), &show_args(a), &r, &p);
                return Some(rv);
            }
        };
        let equal = match how {
            Cmp::Exact => false,
            Cmp::Sorted => encode(&sorted(&rv)) == encode(&sorted(&pv)),
            Cmp::Pairs => pairs(&rv).is_some() && pairs(&rv) == pairs(&pv),
            Cmp::ScanPairs => match (rv.items(), pv.items()) {
                (Some([rc, re]), Some([pc, pe])) => {
                    encode(rc) == encode(pc) && pairs(re).is_some() && pairs(re) == pairs(pe)
                }
                _ => false,
            },
            Cmp::Tolerance(t) => match (rv.int(), pv.int()) {
                (Some(x), Some(y)) if x < 0 || y < 0 => x == y,
                (Some(x), Some(y)) => (x - y).abs() <= t,
                _ => false,
            },
        };
        if !equal {
            self.record(&format!("{how:?}"), &show_args(a), &r, &p);
        }
        Some(rv)
    }

    /// Exact comparison of a whitespace-split command.
    pub fn same(&mut self, line: &str) -> Option<Value> {
        self.check(&cmd(line), Cmp::Exact)
    }

    /// Exact comparison of byte-string arguments.
    pub fn same_args<A: AsRef<[u8]>>(&mut self, parts: &[A]) -> Option<Value> {
        self.check(&args(parts), Cmp::Exact)
    }

    /// Comparison of a top-level array's elements, sorted.
    pub fn sorted(&mut self, line: &str) -> Option<Value> {
        self.check(&cmd(line), Cmp::Sorted)
    }

    /// Comparison as a set of field/value pairs.
    pub fn pairs(&mut self, line: &str) -> Option<Value> {
        self.check(&cmd(line), Cmp::Pairs)
    }

    /// Comparison of a scan page of field/value pairs ([`Cmp::ScanPairs`]).
    pub fn pairs_scan(&mut self, line: &str) -> Option<Value> {
        self.check(&cmd(line), Cmp::ScanPairs)
    }

    /// Comparison of an integer within `tolerance` (TTL, PTTL).
    pub fn ttl(&mut self, line: &str, tolerance: i64) -> Option<Value> {
        self.check(&cmd(line), Cmp::Tolerance(tolerance))
    }

    /// HELLO: compared as a map with `id` and `version` masked (podium's
    /// client ids and version string are its own).
    pub fn hello(&mut self, line: &str) {
        let a = cmd(line);
        let Some((r, p)) = self.both(&a) else { return };
        let (Ok(rv), Ok(pv)) = (parse_one(&r), parse_one(&p)) else {
            self.record("not RESP", line, &r, &p);
            return;
        };
        if encode(&mask_hello(&rv)) != encode(&mask_hello(&pv)) {
            self.record("HELLO (id and version masked)", line, &r, &p);
        }
    }

    /// A podium-only check (skipped when the harness checks itself).
    pub fn podium_check(
        &mut self,
        a: &[Vec<u8>],
        check: impl FnOnce(&Value) -> Result<(), String>,
    ) {
        if self.self_check {
            return;
        }
        self.count += 1;
        match self.podium.request(a) {
            Ok(p) => match parse_one(&p) {
                Ok(v) => {
                    if let Err(why) = check(&v) {
                        self.fail(&show_args(a), &why, &p);
                    }
                }
                Err(e) => self.fail(&show_args(a), &format!("not RESP: {}", e.0), &p),
            },
            Err(e) => {
                self.fail(&show_args(a), &format!("no answer: {e}"), b"");
                self.reconnect_podium();
            }
        }
    }

    /// A podium-only check of a random pick (HRANDFIELD, ZRANDMEMBER with
    /// a count): `n` elements, each one of `allowed`, and no repeats when
    /// `distinct`.
    pub fn random_picks(&mut self, line: &str, n: usize, allowed: &[&str], distinct: bool) {
        self.podium_check(&cmd(line), |v| {
            let items = v.items().ok_or("not an array")?;
            if items.len() != n {
                return Err(format!("{} picks, not {n}", items.len()));
            }
            if let Some(i) = items.iter().find(|i| {
                !i.bytes()
                    .is_some_and(|b| allowed.iter().any(|a| a.as_bytes() == b))
            }) {
                return Err(format!("{i:?} is not one of {allowed:?}"));
            }
            let mut seen: Vec<_> = items.iter().map(encode).collect();
            seen.sort();
            seen.dedup();
            if distinct && seen.len() != n {
                return Err("a positive count repeated an element".into());
            }
            Ok(())
        });
    }

    /// A podium-only check against hand-written expected bytes (for what
    /// Debian's Redis 7.0 does not have, such as ZRANK … WITHSCORE).
    pub fn podium_expect(&mut self, a: &[Vec<u8>], expected: &[u8]) {
        let expected = expected.to_vec();
        self.podium_check(a, move |v| {
            if encode(v) == expected {
                Ok(())
            } else {
                Err(format!("expected {}", show(&expected)))
            }
        });
    }

    /// Raw bytes sent to both; one reply read from each and compared.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.count += 1;
        let what = format!("raw {}", show(&bytes[..bytes.len().min(200)]));
        self.redis.send_raw(bytes).expect("writing to redis");
        let r = self
            .redis
            .read_reply()
            .unwrap_or_else(|e| panic!("redis-server failed on {what}: {e}"));
        let p = match self
            .podium
            .send_raw(bytes)
            .and_then(|()| self.podium.read_reply())
        {
            Ok(p) => p,
            Err(e) => {
                self.record(&format!("podium did not answer ({e})"), &what, &r, b"");
                self.reconnect_podium();
                return;
            }
        };
        if r != p {
            self.record("Exact", &what, &r, &p);
        }
    }

    /// Raw bytes sent to both on new connections, after which Redis
    /// closes the connection: compares everything each server sent and
    /// whether it closed (within `within`).
    pub fn raw_until_close(&mut self, bytes: &[u8], within: Duration) {
        self.count += 1;
        let what = format!("raw {} (then close)", show(&bytes[..bytes.len().min(200)]));
        let mut rc = Conn::open(self.redis.addr());
        let mut pc = Conn::open(self.podium.addr());
        let _ = rc.send_raw(bytes);
        let (r, r_closed) = rc.drain_until_close(within);
        let _ = pc.send_raw(bytes);
        let (p, p_closed) = pc.drain_until_close(within);
        if r != p || r_closed != p_closed {
            let show_closed = |b: &[u8], c: bool| {
                let mut v = b.to_vec();
                v.extend_from_slice(if c { b" <closed>" } else { b" <still open>" });
                v
            };
            self.record(
                "bytes until close",
                &what,
                &show_closed(&r, r_closed),
                &show_closed(&p, p_closed),
            );
        }
    }

    /// SCAN-style iteration to cursor 0 on both (`make(cursor)` builds
    /// the command); compares the union of the returned elements (as
    /// pairs when `paired`, as in ZSCAN and HSCAN).
    pub fn scan_union(&mut self, make: impl Fn(&str) -> Args, paired: bool) {
        let label = show_args(&make("0"));
        let r = scan_all(&mut self.redis, &make, paired)
            .unwrap_or_else(|e| panic!("redis-server failed on {label}: {e}"));
        self.count += 1;
        match scan_all(&mut self.podium, &make, paired) {
            Ok(p) if p == r => {}
            Ok(p) => {
                // Only the elements that differ, so that a report on a
                // big set stays readable.
                let only = |a: &[Vec<u8>], b: &[Vec<u8>]| {
                    let v: Vec<String> = a
                        .iter()
                        .filter(|x| !b.contains(x))
                        .map(|x| show(x))
                        .collect();
                    format!("{} elements, only here: [{}]", a.len(), v.join(" "))
                };
                let (r_only, p_only) = (only(&r, &p), only(&p, &r));
                self.record(
                    "union of all pages",
                    &label,
                    r_only.as_bytes(),
                    p_only.as_bytes(),
                );
            }
            Err(e) => {
                self.fail(&label, &format!("scan failed: {e}"), b"");
                self.reconnect_podium();
            }
        }
    }

    /// Fails the test when any mismatch was recorded.
    #[track_caller]
    pub fn finish(self) {
        eprintln!(
            "{}: {} commands compared, {} mismatches",
            self.group,
            self.count,
            self.mismatches.len()
        );
        assert!(
            self.mismatches.is_empty(),
            "{} of {} commands differ between redis-server and podium in {}:\n{}",
            self.mismatches.len(),
            self.count,
            self.group,
            self.mismatches.join("\n")
        );
    }
}

/// At most 600 characters of `s` (commands and replies of megabytes stay
/// readable in a report).
pub fn clip(s: &str) -> String {
    clip_to(s, 600)
}

/// At most `max` characters of `s`, saying how long it was.
pub fn clip_to(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} characters in all)", &s[..end], s.len())
}

/// Whether `RESP_DIFF_TRACE=1`: every compared command and Redis's
/// reply go to stderr.
fn trace() -> bool {
    std::env::var("RESP_DIFF_TRACE").is_ok_and(|v| v == "1")
}

/// Iterates a SCAN-family command to cursor 0 (at most 10 000 pages) and
/// returns the sorted, deduplicated elements, each as its RESP bytes (a
/// field's and its value's together when paired).
pub fn scan_all(
    c: &mut Conn,
    make: &impl Fn(&str) -> Args,
    paired: bool,
) -> Result<Vec<Vec<u8>>, String> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    for _ in 0..10_000 {
        let raw = c.request(&make(&cursor)).map_err(|e| e.to_string())?;
        let v = parse_one(&raw).map_err(|e| e.0)?;
        let items = v
            .items()
            .filter(|i| i.len() == 2)
            .ok_or_else(|| format!("not a [cursor, elements] reply: {}", show(&raw)))?;
        let next = items[0]
            .text()
            .ok_or_else(|| format!("bad cursor in {}", show(&raw)))?;
        let elems = items[1]
            .items()
            .ok_or_else(|| format!("bad elements in {}", show(&raw)))?;
        if paired {
            if elems.len() % 2 != 0 {
                return Err(format!("odd element count in {}", show(&raw)));
            }
            for p in elems.chunks(2) {
                let mut e = encode(&p[0]);
                e.extend_from_slice(&encode(&p[1]));
                out.push(e);
            }
        } else {
            out.extend(elems.iter().map(encode));
        }
        if next == "0" {
            out.sort();
            out.dedup();
            return Ok(out);
        }
        cursor = next;
    }
    Err("the cursor did not come back to 0 within 10000 pages".into())
}

/// A top-level array or set with its elements sorted.
pub fn sorted(v: &Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut s = items.clone();
            s.sort_by_key(encode);
            Value::Array(s)
        }
        Value::Set(items) => {
            let mut s = items.clone();
            s.sort_by_key(encode);
            Value::Set(s)
        }
        other => other.clone(),
    }
}

/// A flat array of pairs, an array of two-element arrays or a map, as a
/// sorted list of encoded pairs;
/// `None` for any other reply (errors compare exactly).
pub fn pairs(v: &Value) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let nested = |items: &[Value]| {
        !items.is_empty()
            && items
                .iter()
                .all(|i| i.items().is_some_and(|p| p.len() == 2))
    };
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = match v {
        // RESP3's `[[f, v], …]` (HRANDFIELD WITHVALUES).
        Value::Array(items) if nested(items) => items
            .iter()
            .filter_map(|i| i.items())
            .map(|p| (encode(&p[0]), encode(&p[1])))
            .collect(),
        Value::Array(items) if items.len() % 2 == 0 => items
            .chunks(2)
            .map(|p| (encode(&p[0]), encode(&p[1])))
            .collect(),
        Value::Map(ps) => ps.iter().map(|(k, x)| (encode(k), encode(x))).collect(),
        _ => return None,
    };
    out.sort();
    Some(out)
}

/// A HELLO reply with the values of `id` and `version` replaced.
fn mask_hello(v: &Value) -> Value {
    let mask = |k: &Value, x: &Value| match k.bytes() {
        Some(b"id") => Value::Int(b"0".to_vec()),
        Some(b"version") => Value::Bulk(b"x".to_vec()),
        _ => x.clone(),
    };
    match v {
        Value::Map(ps) => Value::Map(ps.iter().map(|(k, x)| (k.clone(), mask(k, x))).collect()),
        Value::Array(items) if items.len() % 2 == 0 => Value::Array(
            items
                .chunks(2)
                .flat_map(|p| [p[0].clone(), mask(&p[0], &p[1])])
                .collect(),
        ),
        other => other.clone(),
    }
}
