//! Test support shared by the decoder fuzz tests of podium's crates (each
//! mounts this file as `damage`): the ways a valid input is damaged, the
//! case count, and the replay of a crate's corpus directory.

// Each test binary mounting this file uses only some of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// `default` cases unless `PROPTEST_CASES` asks for more (or fewer), with
/// failures kept beside the test's source so they replay on every run.
pub fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// Numbers a length prefix or count may be set to: each one more than any
/// input could back.
pub const HUGE: [u64; 7] = [
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    1 << 40,
    i64::MAX as u64,
    i64::MAX as u64 + 1,
    u64::MAX,
];

/// One way of damaging an encoding; positions wrap around its length.
#[derive(Debug, Clone)]
pub enum Damage {
    FlipBit {
        at: usize,
        bit: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Delete {
        at: usize,
        len: usize,
    },
    /// Copies a run of the input to another place in it (a repeated
    /// header, an item counted twice).
    Duplicate {
        from: usize,
        len: usize,
        to: usize,
    },
    /// Overwrites 1, 2, 4 or 8 bytes (big- or little-endian) with a huge
    /// number.
    Huge {
        at: usize,
        width: u8,
        big_endian: bool,
        n: u64,
    },
    /// Replaces a run of ASCII digits (a textual length or count) with a
    /// huge, negative or overflowing number.
    HugeDigits {
        nth: usize,
        text: &'static str,
    },
}

/// Texts a decimal length may be replaced with.
pub const HUGE_DIGITS: [&str; 10] = [
    "2147483648",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "99999999999999999999999",
    "-1",
    "-9223372036854775808",
    "536870912",
];

pub fn damage() -> impl Strategy<Value = Damage> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| Damage::FlipBit { at, bit }),
        at.prop_map(|at| Damage::Truncate { at }),
        (at, prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Damage::Insert { at, bytes }),
        (at, 1usize..16).prop_map(|(at, len)| Damage::Delete { at, len }),
        (at, 1usize..32, at).prop_map(|(from, len, to)| Damage::Duplicate { from, len, to }),
        (
            at,
            prop::sample::select(vec![1u8, 2, 4, 8]),
            any::<bool>(),
            prop::sample::select(HUGE.to_vec())
        )
            .prop_map(|(at, width, big_endian, n)| Damage::Huge {
                at,
                width,
                big_endian,
                n
            }),
        (any::<usize>(), prop::sample::select(HUGE_DIGITS.to_vec()))
            .prop_map(|(nth, text)| Damage::HugeDigits { nth, text }),
    ]
}

pub fn apply(bytes: &mut Vec<u8>, d: &Damage) {
    let n = bytes.len();
    match d {
        Damage::FlipBit { at, bit } if n > 0 => bytes[at % n] ^= 1 << bit,
        Damage::Truncate { at } => bytes.truncate(at % (n + 1)),
        Damage::Insert { at, bytes: ins } => {
            let at = at % (n + 1);
            bytes.splice(at..at, ins.iter().copied());
        }
        Damage::Delete { at, len } if n > 0 => {
            let at = at % n;
            bytes.drain(at..(at + len).min(n));
        }
        Damage::Duplicate { from, len, to } if n > 0 => {
            let from = from % n;
            let run = bytes[from..(from + len).min(n)].to_vec();
            let to = to % (n + 1);
            bytes.splice(to..to, run);
        }
        Damage::Huge {
            at,
            width,
            big_endian,
            n: v,
        } => {
            let w = usize::from(*width);
            if n >= w {
                let at = at % (n - w + 1);
                let all = if *big_endian {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                };
                let part = if *big_endian {
                    &all[8 - w..]
                } else {
                    &all[..w]
                };
                bytes[at..at + w].copy_from_slice(part);
            }
        }
        Damage::HugeDigits { nth, text } => {
            let runs = digit_runs(bytes);
            if !runs.is_empty() {
                let (a, b) = runs[nth % runs.len()];
                bytes.splice(a..b, text.bytes());
            }
        }
        _ => {}
    }
}

/// Where the runs of ASCII digits are.
fn digit_runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// `input` damaged by each of `damages` in turn.
pub fn damaged(mut input: Vec<u8>, damages: &[Damage]) -> Vec<u8> {
    for d in damages {
        apply(&mut input, d);
    }
    input
}

/// Splits `input` into pieces of the given sizes (cycled; a size of 0
/// counts as 1), as reads from a socket would deliver it.
pub fn pieces<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < input.len() {
        let n = sizes
            .get(k % sizes.len().max(1))
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        let end = at.saturating_add(n).min(input.len());
        out.push(&input[at..end]);
        at = end;
        k += 1;
    }
    out
}

/// The most a decoder may take over one input: far more than any decode
/// of a few KiB needs, far less than reserving what a huge prefix claims
/// would take.
pub const SLOW: Duration = Duration::from_secs(2);

/// Runs `f`, failing if it took longer than [`SLOW`].
#[track_caller]
pub fn quick<T>(f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    assert!(t.elapsed() < SLOW, "took {:?}", t.elapsed());
    out
}

/// The files of `fuzz-corpus/<dir>` under this crate's `tests/`, in name
/// order: minimised inputs that once broke a decoder, and hand-made nasty
/// ones. Panics if there are none, so a replay test cannot pass vacuously.
pub fn corpus(dir: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", root.display());
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}
