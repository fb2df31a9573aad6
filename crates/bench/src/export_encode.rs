//! The `export-encode` harness: the MessagePack-RPC `export` encoder timed
//! in process, how many entries a second the server can produce before
//! any socket is involved.
//!
//! Loads one board the way `rpc-payload` does (members `m0..m{n-1}`
//! imported in order, random scores from the seeded generator, so the walk
//! by score visits member records scattered in memory), then reads the
//! whole board in chunks of `chunk` entries, two ways, alternately,
//! `rounds` times each:
//!
//! - **walk**: the board walk alone, each entry's id, score and rank read
//!   and summed (no encoding): the floor the encoder stands on;
//! - **encode**: the chunks exactly as the server streams them
//!   (`podium_core::msgpack::visit_chunk`: a fresh buffer per chunk);
//!
//! and prints the median and best of each, in entries/s and MB/s of
//! encoded bytes. `seq` gives member `m{i}` score `i` instead (records
//! visited in memory order: the cost of the scattered records shows as the
//! difference); `data` gives every member a JSON `data` object of about
//! that many bytes (a profile), `blob` one of exactly that many bytes that
//! is mostly one long string (rpc-payload's `--blob` shape). With either,
//! pass the server's chunk size too (about 512 KiB of entries).

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Result};
use podium_core::msgpack::visit_chunk;
use podium_engine::{Board, BoardConfig, Submit};
use podium_store::service::Service;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::alloc::anon_huge_pages;
use crate::engine::random_score;
use crate::report::Record;

const SCENARIO: &str = "export-encode";

#[derive(Debug, Clone)]
pub struct ExportEncodeOptions {
    pub members: u64,
    pub chunk: usize,
    pub rounds: usize,
    pub seq: bool,
    pub data: usize,
    pub blob: usize,
    pub seed: u64,
}

/// A JSON object of about `len` bytes, different per member, with its
/// keys sorted as the service stores `data` (`Value::to_string()`).
fn profile(i: u64, len: usize) -> String {
    let mut s = String::from("{\"bio\":\"");
    while s.len() + 30 < len {
        s.push(char::from(b'a' + ((i as usize + s.len()) % 26) as u8));
    }
    s.push_str(&format!("\",\"id\":{i},\"level\":{}}}", i % 97));
    s
}

fn load(o: &ExportEncodeOptions) -> Result<Board> {
    let mut board = Board::new(BoardConfig {
        max_data_bytes: o.blob.max(BoardConfig::default().max_data_bytes),
        ..BoardConfig::default()
    })?;
    let mut rng = SmallRng::seed_from_u64(o.seed);
    let mut i = 0;
    while i < o.members {
        let end = (i + 10_000).min(o.members);
        let ids: Vec<String> = (i..end).map(|k| format!("m{k}")).collect();
        let data: Vec<String> = if o.data > 0 {
            (i..end).map(|k| profile(k, o.data)).collect()
        } else if o.blob > 0 {
            (i..end)
                .map(|k| crate::rpc_payload::blob_json(k, o.blob))
                .collect()
        } else {
            Vec::new()
        };
        let batch: Vec<Submit> = ids
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let score = if o.seq {
                    (i + k as u64) as f64
                } else {
                    random_score(&mut rng)
                };
                Submit {
                    data: data.get(k).map(String::as_str),
                    ..Submit::new(m.as_bytes(), score)
                }
            })
            .collect();
        for r in board.submit_many(&batch)? {
            r?;
        }
        i = end;
    }
    Ok(board)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(o: &ExportEncodeOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if o.members == 0 || o.chunk == 0 || o.rounds == 0 {
        bail!("--members, --chunk and --rounds must be at least 1");
    }
    if o.data > 0 && o.blob > 0 {
        bail!("--data and --blob are two shapes of `data`: give one");
    }
    let t = Instant::now();
    let svc = Service::in_memory();
    svc.store().insert("b", load(o)?)?;
    writeln!(
        out,
        "loaded {} members ({}, data {} B) in {:.1} s; {}",
        o.members,
        if o.seq { "sequential" } else { "random" },
        o.data.max(o.blob),
        t.elapsed().as_secs_f64(),
        anon_huge_pages()
    )?;
    let n = o.members;
    let (mut walk, mut enc) = (Vec::new(), Vec::new());
    let mut bytes = 0u64;
    for _ in 0..o.rounds {
        let t = Instant::now();
        let mut sum = 0u64;
        let mut done = 0u64;
        while done < n {
            let want = o.chunk.min((n - done) as usize);
            done += svc.visit_entries("b", done as usize, want, false, |e| {
                sum = sum
                    .wrapping_add(e.member.len() as u64)
                    .wrapping_add(e.rank)
                    .wrapping_add(e.score.to_bits())
                    .wrapping_add(e.data.map_or(0, |d| d.len() as u64));
            })? as u64;
        }
        black_box(sum);
        walk.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let mut done = 0u64;
        bytes = 0;
        while done < n {
            let want = o.chunk.min((n - done) as usize);
            let c = visit_chunk(&svc, "b", done, want, false, true)?;
            done += c.count as u64;
            bytes += c.bytes.len() as u64;
            black_box(&c.bytes);
        }
        enc.push(t.elapsed().as_secs_f64());
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    writeln!(
        out,
        "{n} entries, {:.1} B/entry encoded, chunks of {}, {} rounds",
        bytes as f64 / n as f64,
        o.chunk,
        o.rounds
    )?;
    let mut records = Vec::new();
    for (name, v) in [("walk", &mut walk), ("encode", &mut enc)] {
        let (b, m) = (best(v), median(v));
        writeln!(
            out,
            "{name:>7}: median {:.2}M entries/s ({:.0} MB/s), best {:.2}M entries/s ({:.0} MB/s)",
            n as f64 / m / 1e6,
            bytes as f64 / m / 1e6,
            n as f64 / b / 1e6,
            bytes as f64 / b / 1e6,
        )?;
        records.push(Record {
            scenario: SCENARIO,
            figure: format!("{name}_entries_per_s"),
            unit: "entries/s".into(),
            podium: Some(n as f64 / m),
            redis: None,
            baseline: None,
            baseline_name: None,
            ratio: None,
            members: Some(n),
        });
    }
    Ok(records)
}
