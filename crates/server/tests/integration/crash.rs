//! Crash tests of docs/spec.md §5 against the real binary: no acknowledged write
//! is lost to `kill -9`; a torn log tail (an invalid final frame with
//! nothing valid after it) is cut at the last good record with a warning
//! that says how many bytes were kept and dropped; damage followed by valid
//! records refuses the start until `podium repair` (docs/storage.md §7,
//! docs/operations.md);
//! and a log that failed on exhausted file descriptors recovers by itself
//! once they are back, losing no acknowledged write.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::http::{board_path, client, enc, Server};
use support::run_to_end;

// ------------------------------------------------------------ the log format

/// docs/storage.md §2: segment header.
const SEGMENT_MAGIC: &[u8; 8] = b"PDMLOG\0\x01";
/// `len` u32 | crc32c u32 | lsn u64.
const FRAME_HEADER: usize = 16;

/// One frame of a segment: where it starts, its LSN and payload length.
#[derive(Debug, Clone, Copy)]
struct Frame {
    offset: usize,
    lsn: u64,
    len: usize,
}

impl Frame {
    fn end(&self) -> usize {
        self.offset + FRAME_HEADER + self.len
    }
}

/// Parses a whole, undamaged segment, checking every CRC and the LSN
/// sequence as the reader does.
fn parse_segment(bytes: &[u8]) -> Vec<Frame> {
    assert!(
        bytes.len() >= 8 && &bytes[..8] == SEGMENT_MAGIC,
        "segment header missing or wrong"
    );
    let mut frames: Vec<Frame> = Vec::new();
    let mut at = 8;
    while at < bytes.len() {
        assert!(
            bytes.len() - at >= FRAME_HEADER,
            "incomplete frame header at {at}"
        );
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        let lsn = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        let end = at + FRAME_HEADER + len;
        assert!(end <= bytes.len(), "incomplete frame at {at}");
        assert_eq!(
            crc32c::crc32c(&bytes[at + 8..end]),
            crc,
            "checksum mismatch at {at}"
        );
        if let Some(prev) = frames.last() {
            assert_eq!(lsn, prev.lsn + 1, "LSN out of sequence at {at}");
        }
        frames.push(Frame {
            offset: at,
            lsn,
            len,
        });
        at = end;
    }
    frames
}

/// The newest log segment (`log-<start>.pdml`, highest start) of `dir`.
fn newest_segment(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?.to_string();
            let start: u64 = name
                .strip_prefix("log-")?
                .strip_suffix(".pdml")?
                .parse()
                .ok()?;
            Some((start, p))
        })
        .max()
        .expect("no log segment in the data directory")
        .1
}

fn snapshots(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_str()?.to_string();
            (name.starts_with("snapshot-") && name.ends_with(".pdms")).then_some(name)
        })
        .collect()
}

// ------------------------------------------------------- (a) kill -9 cycles

const BOARD: &str = "crash";
const THREADS: usize = 4;
const HOT: usize = 3;
const MEMBERS: usize = 150;
/// `kill -9` cycles, then SIGTERM cycles (graceful stop under load).
const CYCLES: usize = 22;
const TERM_CYCLES: usize = 2;

/// One write a thread sent.
#[derive(Debug, Clone)]
enum Write {
    Set { member: String, score: f64 },
    Incr { member: String },
}

impl Write {
    fn member(&self) -> &str {
        match self {
            Write::Set { member, .. } | Write::Incr { member } => member,
        }
    }
}

/// What a writer thread knows at the end of a cycle.
struct Outcome {
    /// Its members' scores after every acknowledged write (a member is
    /// here once a write to it was acknowledged).
    model: HashMap<String, f64>,
    /// The write sent but not acknowledged when the server died.
    in_flight: Option<Write>,
    acked: u64,
}

/// Writes until the server dies (or `stop`), recording every acknowledged
/// write in `model`.
fn writer(
    base: String,
    t: usize,
    seed: u64,
    mut model: HashMap<String, f64>,
    stop: Arc<AtomicBool>,
) -> Outcome {
    let http = client();
    let mut rng = SmallRng::seed_from_u64(seed);
    let url = format!("{base}{}", board_path(BOARD, "/scores"));
    let mut acked = 0;
    while !stop.load(Ordering::Relaxed) {
        let w = if rng.random_bool(0.3) {
            Write::Incr {
                member: format!("t{t}-hot{}", rng.random_range(0..HOT)),
            }
        } else {
            // Multiples of 1/64 below 2^24: exact in JSON both ways.
            Write::Set {
                member: format!("t{t}-m{}", rng.random_range(0..MEMBERS)),
                score: rng.random_range(0..1u64 << 24) as f64 / 64.0,
            }
        };
        let body = match &w {
            Write::Set { member, score } => json!({"member": member, "score": score, "op": "set"}),
            Write::Incr { member } => json!({"member": member, "score": 1, "op": "incr"}),
        };
        let resp = match http.post(&url).json(&body).send() {
            Ok(r) => r,
            // The server died with this write in flight.
            Err(_) => {
                return Outcome {
                    model,
                    in_flight: Some(w),
                    acked,
                }
            }
        };
        let status = resp.status().as_u16();
        let Ok(text) = resp.text() else {
            return Outcome {
                model,
                in_flight: Some(w),
                acked,
            };
        };
        assert_eq!(status, 200, "POST {url} {body} answered {status}: {text}");
        let out: Value = serde_json::from_str(&text).expect("SubmitOut JSON");
        let expected = match &w {
            Write::Set { score, .. } => *score,
            Write::Incr { member } => model.get(member).copied().unwrap_or(0.0) + 1.0,
        };
        assert_eq!(
            out["score"].as_f64(),
            Some(expected),
            "POST {body}: the acknowledged score is not the model's: {text}"
        );
        model.insert(w.member().to_string(), expected);
        acked += 1;
    }
    Outcome {
        model,
        in_flight: None,
        acked,
    }
}

/// Every entry of `board`, best first, through `GET top` pages.
fn whole_board(s: &Server, board: &str) -> Vec<(String, f64, u64)> {
    let mut all = Vec::new();
    let mut page = 1;
    loop {
        let v = s
            .get(&board_path(
                board,
                &format!("/top?page={page}&page_size=100"),
            ))
            .expect(200);
        let entries = v["entries"].as_array().unwrap();
        for e in entries {
            all.push((
                e["member"].as_str().unwrap().to_string(),
                e["score"].as_f64().unwrap(),
                e["rank"].as_u64().unwrap(),
            ));
        }
        let total_pages = v["total_pages"].as_u64().unwrap();
        assert!(v["total"].as_u64().unwrap() as usize >= all.len());
        if page >= total_pages {
            assert_eq!(v["total"].as_u64().unwrap() as usize, all.len());
            break;
        }
        page += 1;
    }
    all
}

#[test]
fn no_acknowledged_write_is_lost_to_kill_9() {
    let t0 = Instant::now();
    let mut s = Server::start(&["--snapshot-every", "16KiB"]);
    s.put(&board_path(BOARD, ""), &json!({})).expect(201);
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    // Each thread's model of its own members: they never share a member,
    // so each thread knows its members' exact history.
    let mut models: Vec<HashMap<String, f64>> = vec![HashMap::new(); THREADS];
    let mut total_acked = 0;
    let mut total_in_flight_applied = 0;
    let mut snapshots_written = 0;
    let mut torn_tails = 0;
    for cycle in 0..CYCLES + TERM_CYCLES {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = models
            .drain(..)
            .enumerate()
            .map(|(t, m)| {
                let base = s.url("");
                let stop = stop.clone();
                let seed = rng.random();
                thread::spawn(move || writer(base, t, seed, m, stop))
            })
            .collect();
        // Mostly short runs; every third one outlives the server's 1 s
        // background tick so snapshots and log rotations happen too.
        let run_ms = if cycle % 3 == 2 {
            rng.random_range(1100..1600)
        } else {
            rng.random_range(50..400)
        };
        thread::sleep(Duration::from_millis(run_ms));
        if cycle < CYCLES {
            s.kill9();
        } else {
            // A graceful stop with writers still sending: exit 0, and the
            // same guarantees.
            let status = s.terminate();
            assert!(
                status.success(),
                "cycle {cycle}: exit status {status} after SIGTERM under load:\n{}",
                s.output()
            );
        }
        stop.store(true, Ordering::Relaxed);
        let outcomes: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let log = s.stderr();
        assert!(
            !log.contains("panicked") && !log.contains(" ERROR "),
            "cycle {cycle}: the server logged an error before the kill:\n{log}"
        );
        snapshots_written += log.matches("snapshot written").count();
        s.restart();
        if s.output().contains("torn log tail") {
            torn_tails += 1;
        }

        let board = whole_board(&s, BOARD);
        let found: BTreeMap<&str, f64> = board.iter().map(|(m, sc, _)| (m.as_str(), *sc)).collect();
        assert_eq!(found.len(), board.len(), "a member listed twice: {board:?}");

        // Every entry is one the model allows.
        for (t, o) in outcomes.iter().enumerate() {
            let prefix = format!("t{t}-");
            let mine: BTreeMap<&str, f64> = found
                .iter()
                .filter(|(m, _)| m.starts_with(&prefix))
                .map(|(m, s)| (*m, *s))
                .collect();
            for (m, &acked) in &o.model {
                let got = mine.get(m.as_str()).copied();
                let in_flight = o.in_flight.as_ref().filter(|w| w.member() == m);
                let ok = match in_flight {
                    None => got == Some(acked),
                    Some(Write::Set { score, .. }) => got == Some(acked) || got == Some(*score),
                    Some(Write::Incr { .. }) => got == Some(acked) || got == Some(acked + 1.0),
                };
                assert!(
                    ok,
                    "cycle {cycle}: {m} has {got:?} after the restart; the last \
                     acknowledged write left {acked}, in flight: {in_flight:?}"
                );
            }
            for (m, &got) in &mine {
                if o.model.contains_key(*m) {
                    continue;
                }
                // Never acknowledged: only the in-flight write can have
                // put it there.
                let ok = match &o.in_flight {
                    Some(Write::Set { member, score }) if member == m => got == *score,
                    Some(Write::Incr { member }) if member == m => got == 1.0,
                    _ => false,
                };
                assert!(
                    ok,
                    "cycle {cycle}: {m} = {got} is on the board, but no write to it \
                     was acknowledged (in flight: {:?})",
                    o.in_flight
                );
            }
            total_acked += o.acked;
        }
        assert!(
            found.keys().all(|m| m.starts_with('t')),
            "unexpected members: {found:?}"
        );

        // Ranks: the position in (score desc, member bytes desc) order,
        // the default `member` tiebreak of a desc board.
        let mut sorted: Vec<(&str, f64)> = found.iter().map(|(m, s)| (*m, *s)).collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(a.0)));
        for (i, ((m, sc, rank), (em, esc))) in board.iter().zip(&sorted).enumerate() {
            assert_eq!(
                (m.as_str(), *sc, *rank),
                (*em, *esc, i as u64 + 1),
                "cycle {cycle}: position {} of the board",
                i + 1
            );
        }
        // And `rank` agrees with `top` for a few members.
        for _ in 0..5.min(sorted.len()) {
            let i = rng.random_range(0..sorted.len());
            let (m, sc) = sorted[i];
            let v = s
                .get(&board_path(BOARD, &format!("/rank/{}", enc(m))))
                .expect(200);
            assert_eq!(v["rank"].as_u64(), Some(i as u64 + 1), "rank of {m}: {v}");
            assert_eq!(v["score"].as_f64(), Some(sc), "score of {m}: {v}");
        }

        // The restarted state is the truth from here on: resolve the
        // in-flight writes to what the server kept.
        for (t, o) in outcomes.into_iter().enumerate() {
            let prefix = format!("t{t}-");
            let mut m: HashMap<String, f64> = HashMap::new();
            for (k, v) in &found {
                if k.starts_with(&prefix) {
                    m.insert(k.to_string(), *v);
                }
            }
            if let Some(w) = &o.in_flight {
                let before = o.model.get(w.member()).copied();
                if m.get(w.member()).copied() != before {
                    total_in_flight_applied += 1;
                }
            }
            models.push(m);
        }
        eprintln!(
            "cycle {cycle}: ran {run_ms} ms, {} members, {total_acked} writes acknowledged so far",
            board.len()
        );
    }
    let snaps = snapshots(s.data_dir());
    eprintln!(
        "{CYCLES} kill -9 and {TERM_CYCLES} SIGTERM cycles in {:?}: {total_acked} acknowledged writes, \
         {total_in_flight_applied} in-flight writes kept, {snapshots_written} snapshots \
         written, {torn_tails} restarts found a torn log tail; snapshots now {snaps:?}",
        t0.elapsed()
    );
    assert!(total_acked > 1000, "too few writes to mean anything");
    assert!(
        snapshots_written > 0 && !snaps.is_empty(),
        "no snapshot was taken during the test (--snapshot-every 16KiB)"
    );
    assert!(s.terminate().success());
}

/// A member's values on the sort-key board: kills, and when they were reached.
type Keys = (i64, i64);

/// Writes increments to the sort-key board until the server dies: each
/// adds a kill and sets the time reached to a number no other write uses.
/// Returns the acknowledged values and the write in flight, if any.
fn keys_writer(
    base: String,
    t: usize,
    seed: u64,
    mut model: HashMap<String, Keys>,
) -> (HashMap<String, Keys>, Option<(String, i64)>) {
    let http = client();
    let mut rng = SmallRng::seed_from_u64(seed);
    let url = format!("{base}{}", board_path(KEYS_BOARD, "/scores"));
    for n in 0.. {
        let member = format!("t{t}-m{}", rng.random_range(0..20));
        let at = (seed as i64 & 0xffff) << 32 | n;
        let body = json!({"member": member, "scores": {"kills": 1, "at": at}});
        let Ok(resp) = http.post(&url).json(&body).send() else {
            return (model, Some((member, at)));
        };
        let Ok(text) = resp.text() else {
            return (model, Some((member, at)));
        };
        let out: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
        let kills = model.get(&member).map_or(0, |k| k.0) + 1;
        assert_eq!(
            out["scores"],
            json!({"kills": kills, "at": at}),
            "{body}: {text}"
        );
        model.insert(member, (kills, at));
    }
    unreachable!()
}

const KEYS_BOARD: &str = "crash-keys";

/// Boards with sort keys keep every acknowledged write through kill -9,
/// with snapshots taken meanwhile, and rank by the whole tuple after.
#[test]
fn no_acknowledged_sort_key_write_is_lost_to_kill_9() {
    let mut s = Server::start(&["--snapshot-every", "16KiB"]);
    let cfg = json!({"update": "incr", "sort": [
        {"key": "kills", "type": "int", "op": "incr"},
        {"key": "at", "order": "asc", "type": "int", "op": "set"}
    ]});
    s.put(&board_path(KEYS_BOARD, ""), &cfg).expect(201);
    let mut rng = SmallRng::seed_from_u64(0x50_47);
    let mut models: Vec<HashMap<String, Keys>> = vec![HashMap::new(); 3];
    let mut checked = 0;
    for cycle in 0..6 {
        let handles: Vec<_> = models
            .drain(..)
            .enumerate()
            .map(|(t, m)| {
                let base = s.url("");
                let seed = rng.random::<u64>() | 1;
                thread::spawn(move || keys_writer(base, t, seed, m))
            })
            .collect();
        thread::sleep(Duration::from_millis(if cycle % 2 == 1 {
            1200
        } else {
            rng.random_range(50..400)
        }));
        s.kill9();
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        s.restart();
        let mut all = Vec::new();
        for page in 1.. {
            let v = s
                .get(&board_path(
                    KEYS_BOARD,
                    &format!("/top?page={page}&page_size=100"),
                ))
                .expect(200);
            let entries = v["entries"].as_array().unwrap().clone();
            if entries.is_empty() {
                break;
            }
            for e in entries {
                let k = (
                    e["scores"]["kills"].as_i64().unwrap(),
                    e["scores"]["at"].as_i64().unwrap(),
                );
                all.push((
                    e["member"].as_str().unwrap().to_string(),
                    k,
                    e["rank"].as_u64().unwrap(),
                ));
            }
        }
        let found: HashMap<&str, Keys> = all.iter().map(|(m, k, _)| (m.as_str(), *k)).collect();
        for (t, (model, in_flight)) in outcomes.iter().enumerate() {
            for (m, &k) in model {
                let got = found.get(m.as_str()).copied();
                let flight = in_flight.as_ref().filter(|f| &f.0 == m);
                let ok = got == Some(k) || flight.is_some_and(|f| got == Some((k.0 + 1, f.1)));
                assert!(
                    ok,
                    "cycle {cycle}: {m} has {got:?}; acknowledged {k:?}, in flight {flight:?}"
                );
                checked += 1;
            }
            let prefix = format!("t{t}-");
            for (m, &got) in found.iter().filter(|(m, _)| m.starts_with(&prefix)) {
                if !model.contains_key(*m) {
                    let flight = in_flight.as_ref().filter(|f| f.0 == *m);
                    assert!(
                        flight.is_some_and(|f| got == (1, f.1)),
                        "{m} = {got:?} was never acknowledged"
                    );
                }
            }
        }
        // Kills desc, then the time reached asc, then member bytes desc.
        let mut want: Vec<(&str, Keys)> = found.iter().map(|(m, k)| (*m, *k)).collect();
        want.sort_by(|a, b| {
            b.1 .0
                .cmp(&a.1 .0)
                .then(a.1 .1.cmp(&b.1 .1))
                .then(b.0.cmp(a.0))
        });
        let got: Vec<(&str, Keys)> = all.iter().map(|(m, k, _)| (m.as_str(), *k)).collect();
        assert_eq!(got, want, "cycle {cycle}: the order after the restart");
        assert!(all.iter().enumerate().all(|(i, r)| r.2 == i as u64 + 1));
        // What the server kept is the truth from here on.
        models = (0..3)
            .map(|t| {
                let prefix = format!("t{t}-");
                found
                    .iter()
                    .filter(|(m, _)| m.starts_with(&prefix))
                    .map(|(m, k)| (m.to_string(), *k))
                    .collect()
            })
            .collect();
    }
    assert!(
        checked > 100,
        "too few members checked to mean anything: {checked}"
    );
    assert!(!snapshots(s.data_dir()).is_empty(), "no snapshot was taken");
}

// ------------------------------------------------- (b), (c) damaged log tail

/// Writes `n` members, one record each, then stops the server gracefully.
/// Returns the newest segment, its frames, and the last frame (the write
/// of member `m{n-1}`).
fn write_and_stop(s: &mut Server, n: usize) -> (PathBuf, Vec<u8>, Frame) {
    for i in 0..n {
        let v = s
            .post(
                &board_path("tail", "/scores"),
                &json!({"member": format!("m{i}"), "score": i * 10}),
            )
            .expect(200);
        assert_eq!(v["rank"].as_u64(), Some(1), "{v}");
    }
    assert!(s.terminate().success(), "{}", s.output());
    let seg = newest_segment(s.data_dir());
    let bytes = std::fs::read(&seg).unwrap();
    let frames = parse_segment(&bytes);
    // The board's implicit creation, then one record per member.
    assert_eq!(
        frames.len(),
        n + 1,
        "frames of {}: {frames:?}",
        seg.display()
    );
    let last = *frames.last().unwrap();
    assert_eq!(last.end(), bytes.len());
    (seg, bytes, last)
}

/// After a restart on a damaged tail: the members before the damaged
/// record are all there, the damaged one is not, and the log said how
/// many bytes it dropped. Then the server keeps working across restarts.
fn check_recovered(s: &mut Server, n: usize, seg: &Path, kept: usize, dropped: usize) {
    let board = whole_board(s, "tail");
    let expect: Vec<(String, f64, u64)> = (0..n - 1)
        .rev()
        .enumerate()
        .map(|(i, m)| (format!("m{m}"), (m * 10) as f64, i as u64 + 1))
        .collect();
    assert_eq!(board, expect, "the board after recovery");
    s.get(&board_path("tail", &format!("/members/m{}", n - 1)))
        .expect_error(404, "member_not_found");
    let log = s.stderr();
    let warning = log
        .lines()
        .find(|l| l.contains("torn log tail"))
        .unwrap_or_else(|| panic!("no \"torn log tail\" warning on stderr:\n{}", s.output()));
    assert!(warning.contains("WARN"), "not a warning: {warning}");
    assert!(
        warning.contains(&format!("dropped {dropped}")),
        "the warning should say dropped {dropped}: {warning}"
    );
    assert!(
        warning.contains(&format!("kept {kept}")),
        "the warning should say kept {kept}: {warning}"
    );
    // The damaged segment was cut at the last good frame.
    assert_eq!(std::fs::metadata(seg).unwrap().len() as usize, kept);

    // New writes go on, and everything survives another restart with no
    // warning.
    s.post(
        &board_path("tail", "/scores"),
        &json!({"member": "after", "score": 1000}),
    )
    .expect(200);
    assert!(s.terminate().success());
    s.restart();
    let board = whole_board(s, "tail");
    assert_eq!(board.len(), n);
    assert_eq!(board[0].0, "after");
    assert!(
        !s.output().contains("torn log tail"),
        "a second warning after a clean restart:\n{}",
        s.output()
    );
}

#[test]
fn a_corrupted_last_record_is_dropped_with_a_warning() {
    let n = 10;
    let mut s = Server::start(&[]);
    let (seg, mut bytes, last) = write_and_stop(&mut s, n);
    // Flip a byte inside the last record's payload: its CRC no longer
    // matches.
    let at = last.offset + FRAME_HEADER + last.len / 2;
    bytes[at] ^= 0x5a;
    std::fs::write(&seg, &bytes).unwrap();
    s.restart();
    check_recovered(&mut s, n, &seg, last.offset, bytes.len() - last.offset);
}

#[test]
fn a_corrupted_last_frame_header_is_dropped_with_a_warning() {
    let n = 6;
    let mut s = Server::start(&[]);
    let (seg, mut bytes, last) = write_and_stop(&mut s, n);
    // Damage the LSN field: covered by the CRC.
    bytes[last.offset + 8] ^= 0x01;
    std::fs::write(&seg, &bytes).unwrap();
    s.restart();
    check_recovered(&mut s, n, &seg, last.offset, bytes.len() - last.offset);
}

#[test]
fn a_truncated_last_record_is_dropped_with_a_warning() {
    let n = 10;
    let mut s = Server::start(&[]);
    let (seg, bytes, last) = write_and_stop(&mut s, n);
    // Cut in the middle of the last record's payload.
    let cut = last.offset + FRAME_HEADER + last.len / 2;
    std::fs::write(&seg, &bytes[..cut]).unwrap();
    s.restart();
    check_recovered(&mut s, n, &seg, last.offset, cut - last.offset);
}

#[test]
fn a_tail_torn_inside_the_frame_header_is_dropped_with_a_warning() {
    let n = 5;
    let mut s = Server::start(&[]);
    let (seg, bytes, last) = write_and_stop(&mut s, n);
    let cut = last.offset + 7;
    std::fs::write(&seg, &bytes[..cut]).unwrap();
    s.restart();
    check_recovered(&mut s, n, &seg, last.offset, cut - last.offset);
}

/// A sanity check of the parser above against the worked example of
/// docs/storage.md §3, so the tail tests cut where they mean to.
#[test]
fn frame_parser_reads_the_documented_example() {
    let mut seg = SEGMENT_MAGIC.to_vec();
    let payload = [
        0x01, 0x01, 0, 0, 0, 0x62, 0x01, 0, 0, 0, 0x01, 0, 0, 0, 0x6d, 0, 0, 0, 0, 0, 0, 0, 0x40,
        0, 0, 0, 0, 0,
    ];
    seg.extend_from_slice(&28u32.to_le_bytes());
    seg.extend_from_slice(&0x5E65_7E8Fu32.to_le_bytes());
    seg.extend_from_slice(&1u64.to_le_bytes());
    seg.extend_from_slice(&payload);
    let frames = parse_segment(&seg);
    assert_eq!(frames.len(), 1);
    assert_eq!((frames[0].offset, frames[0].lsn, frames[0].len), (8, 1, 28));
    assert_eq!(frames[0].end(), seg.len());
}

// ------------------------------------------- (d) damage, repair, the lock

/// Every file of a data directory and its bytes.
fn dir_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// `podium serve` on `dir` as a one-off process: it must refuse to start.
fn serve_refused(dir: &Path) -> String {
    let d = dir.to_str().unwrap();
    let (status, out) = run_to_end(&[
        "serve",
        "--data-dir",
        d,
        "--http",
        "127.0.0.1:0",
        "--rpc",
        "off",
        "--resp",
        "off",
    ]);
    assert!(!status.success(), "podium serve started:\n{out}");
    out
}

/// A flipped bit in the middle of the last segment, valid records after
/// it: the server refuses to start and changes no file; `podium repair`
/// says which LSNs it loses, its dry run changes nothing, `--apply` does
/// it, and the restarted server holds exactly the records before them.
#[test]
fn damage_mid_segment_refuses_the_start_until_repair_which_loses_what_it_says() {
    let n = 40;
    let mut s = Server::start(&[]);
    let (seg, mut bytes, _) = write_and_stop(&mut s, n);
    let frames = parse_segment(&bytes);
    // Frame 0 creates the board; frame j writes member m{j-1}.
    let hit = frames[frames.len() / 2];
    bytes[hit.offset + FRAME_HEADER + hit.len / 2] ^= 0x08;
    std::fs::write(&seg, &bytes).unwrap();
    let dir = s.data_dir().to_path_buf();
    let before = dir_files(&dir);

    let out = serve_refused(&dir);
    let seg_name = seg.file_name().unwrap().to_str().unwrap();
    for want in [
        seg_name,
        &format!("at byte {}", hit.offset),
        "not a torn write",
        "podium repair",
    ] {
        assert!(
            out.contains(want),
            "the refusal should say {want:?}:\n{out}"
        );
    }
    assert_eq!(dir_files(&dir), before, "a refused start changed a file");

    let d = dir.to_str().unwrap();
    let (status, dry) = run_to_end(&["repair", d]);
    assert!(status.success(), "{dry}");
    let last = frames.last().unwrap().lsn;
    let lost = format!("lost: LSN {} to {last} ", hit.lsn);
    assert!(
        dry.contains(&lost),
        "the dry run should say {lost:?}:\n{dry}"
    );
    assert!(dry.contains("dry run"), "{dry}");
    assert_eq!(dir_files(&dir), before, "a dry run changed a file");

    let (status, done) = run_to_end(&["repair", "--apply", d]);
    assert!(status.success(), "{done}");
    assert!(done.contains(&lost), "{done}");
    assert_eq!(
        std::fs::read(dir.join("damaged-1").join(seg_name)).unwrap(),
        before[seg_name],
        "the damaged segment was not copied aside whole"
    );

    s.restart();
    let kept = frames.iter().filter(|f| f.lsn < hit.lsn).count() - 1;
    let board = whole_board(&s, "tail");
    let expect: Vec<(String, f64, u64)> = (0..kept)
        .rev()
        .enumerate()
        .map(|(i, m)| (format!("m{m}"), (m * 10) as f64, i as u64 + 1))
        .collect();
    assert_eq!(board, expect, "the board after the repair");
    assert!(s.terminate().success());
}

/// A flipped byte in the segment header: refused, and the repair writes
/// the header again and loses nothing.
#[test]
fn a_damaged_segment_header_refuses_the_start_and_repair_loses_nothing() {
    let n = 12;
    let mut s = Server::start(&[]);
    let (seg, mut bytes, _) = write_and_stop(&mut s, n);
    bytes[1] ^= 0x20;
    std::fs::write(&seg, &bytes).unwrap();
    let dir = s.data_dir().to_path_buf();
    let before = dir_files(&dir);
    let out = serve_refused(&dir);
    assert!(out.contains("damaged segment header"), "{out}");
    assert_eq!(dir_files(&dir), before, "a refused start changed a file");
    let (status, done) = run_to_end(&["repair", "--apply", dir.to_str().unwrap()]);
    assert!(status.success() && done.contains("lost: nothing"), "{done}");
    s.restart();
    assert_eq!(whole_board(&s, "tail").len(), n);
    assert!(s.terminate().success());
}

/// Deleting `LOCK` under a running server does not let a second one (or
/// a repair) in: the lock is on the directory itself.
#[test]
fn deleting_lock_does_not_let_a_second_server_in() {
    let mut s = Server::start(&[]);
    s.post(
        &board_path("locked", "/scores"),
        &json!({"member": "a", "score": 1}),
    )
    .expect(200);
    let dir = s.data_dir().to_path_buf();
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let out = serve_refused(&dir);
    assert!(
        out.contains("in use by another podium process"),
        "the second server should be refused as a second user:\n{out}"
    );
    let (status, out) = run_to_end(&["repair", dir.to_str().unwrap()]);
    assert!(
        !status.success(),
        "repair ran on a directory in use:\n{out}"
    );
    assert!(out.contains("in use by another podium process"), "{out}");
    // The first server is unharmed.
    s.get(&board_path("locked", "/members/a")).expect(200);
    assert!(s.terminate().success());
}

// ------------------------------------------ (e) file descriptors exhausted

/// One HTTP/1.1 keep-alive connection driven by hand. Opened before the
/// flood, it needs no new descriptor on either side to send a request.
struct KeepAlive {
    stream: std::net::TcpStream,
    reader: std::io::BufReader<std::net::TcpStream>,
}

impl KeepAlive {
    fn open(addr: &str) -> KeepAlive {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let reader = std::io::BufReader::new(stream.try_clone().unwrap());
        KeepAlive { stream, reader }
    }

    /// Sends one request and reads its answer: the status and the JSON body.
    fn request(&mut self, method: &str, path: &str, body: &str) -> (u16, Value) {
        use std::io::{BufRead as _, Read as _, Write as _};
        let req = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.stream.write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {line:?}"));
        let mut len = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).unwrap();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }
}

/// Descriptors the process `pid` has open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn writes_recover_by_themselves_after_a_descriptor_flood() {
    let mut s = Server::start(&["--snapshot-every", "4KiB"]);
    let pid = s.pid();
    let mut conn = KeepAlive::open(s.addr());
    assert_eq!(conn.request("PUT", &board_path("flood", ""), "{}").0, 201);
    let path = board_path("flood", "/scores");
    let mut acked: BTreeMap<String, f64> = BTreeMap::new();
    let mut n = 0u32;
    let mut write = |conn: &mut KeepAlive, acked: &mut BTreeMap<String, f64>| {
        n += 1;
        let member = format!("w{n:05}");
        let body = json!({"member": member, "score": n}).to_string();
        let (status, v) = conn.request("POST", &path, &body);
        match status {
            200 => {
                assert_eq!(v["score"].as_f64(), Some(n as f64), "{v}");
                acked.insert(member, n as f64);
            }
            503 => assert_eq!(v["error"]["code"], "storage_unavailable", "{v}"),
            _ => panic!("POST {body} answered {status}: {v}"),
        }
        status
    };
    for _ in 0..20 {
        assert_eq!(write(&mut conn, &mut acked), 200);
    }

    // Few descriptors left to the server, then idle connections until it
    // has none: the listener's backlog holds the ones it cannot accept.
    let limit = open_fds(pid) + 16;
    let rl = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: prlimit(2) on our own child, with a valid rlimit.
    let rc = unsafe {
        libc::prlimit(
            libc::pid_t::try_from(pid).unwrap(),
            libc::RLIMIT_NOFILE,
            &rl,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    let mut flood = Vec::new();
    let t = Instant::now();
    while open_fds(pid) < limit {
        assert!(
            flood.len() < limit + 200 && t.elapsed() < Duration::from_secs(60),
            "the server never ran out of descriptors ({} of {limit} open)",
            open_fds(pid)
        );
        flood.push(std::net::TcpStream::connect(s.addr()).unwrap());
        thread::sleep(Duration::from_millis(10));
    }
    // A few more wait in the listener's queue, to take descriptors the
    // server frees.
    for _ in 0..8 {
        flood.push(std::net::TcpStream::connect(s.addr()).unwrap());
    }

    // Writes go on while snapshots fall due: a snapshot and the log's
    // rotation need new files, and the rotation cannot create the next
    // segment. Each write is acknowledged or refused cleanly. Descriptors
    // the server frees (the closed segment, a finished snapshot) can let
    // the log recover for a while before the listener takes them for
    // queued connections (it retries accepting once a second), so this
    // goes on until five writes were refused, /healthz said why, and the
    // flood is topped up whenever the server has a descriptor free.
    let t = Instant::now();
    let (mut refused, mut healthz_said_why) = (0, false);
    while refused < 5 || !healthz_said_why {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{refused} writes refused during the flood, /healthz said why: \
             {healthz_said_why}\n{}",
            s.output()
        );
        if open_fds(pid) < limit && flood.len() < limit + 300 {
            flood.push(std::net::TcpStream::connect(s.addr()).unwrap());
        }
        if write(&mut conn, &mut acked) == 503 {
            refused += 1;
            let (status, v) = conn.request("GET", "/healthz", "");
            if status == 503 {
                assert_eq!(v["error"]["code"], "storage_unavailable", "{v}");
                let why = v["error"]["message"].as_str().unwrap();
                assert!(why.contains("Too many open files"), "{why}");
                healthz_said_why = true;
            }
        }
        thread::sleep(Duration::from_millis(5));
    }

    // The flood ends: writes are accepted again, no restart.
    let before = snapshots(s.data_dir());
    drop(flood);
    let t = Instant::now();
    while write(&mut conn, &mut acked) != 200 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "writes still refused after the flood:\n{}",
            s.output()
        );
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(conn.request("GET", "/healthz", "").0, 200);
    // Enough for the next snapshot to fall due, and it is written.
    let t = Instant::now();
    while snapshots(s.data_dir()) == before {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no snapshot after the flood:\n{}",
            s.output()
        );
        assert_eq!(write(&mut conn, &mut acked), 200);
        thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..10 {
        assert_eq!(write(&mut conn, &mut acked), 200);
    }
    let log = s.stderr();
    // One error line when the log starts failing, one info line when it
    // recovers, not one per attempt.
    let failed = log.matches("log write failed").count();
    assert!(failed >= 1, "{log}");
    assert_eq!(failed, log.matches("log writable again").count(), "{log}");
    let tmps = std::fs::read_dir(s.data_dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count();
    assert_eq!(tmps, 0, "a failed snapshot left its temporary file");

    // Every acknowledged write survives kill -9.
    drop(conn);
    s.kill9();
    s.restart();
    let board: BTreeMap<String, f64> = whole_board(&s, "flood")
        .into_iter()
        .map(|(m, score, _)| (m, score))
        .collect();
    for (m, score) in &acked {
        assert_eq!(board.get(m), Some(score), "acknowledged {m} lost");
    }
    assert!(acked.len() > 40, "{} writes acknowledged", acked.len());
}
