//! The `page-read` harness: random pages of a large board read in
//! process, the way the server answers `top` (`Board::visit`, each entry's
//! id, score and rank touched), timed per read: the page-read path of
//! `rank10m` without the network, for A/B runs (with `--plain`, the binary
//! turns its huge-page advice off first).
//!
//! The board is loaded as `rank10m` loads it (ids `m{i}` in order, random
//! scores, `submit_many` in batches of 1000), so records and id bytes lie
//! in arrival order while pages go in score order: every entry of a page
//! is a scattered record and a scattered id.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Result};
use podium_engine::{Board, BoardConfig, Submit};

use crate::alloc::anon_huge_pages;
use crate::report::Record;

const SCENARIO: &str = "page-read";
const PAGE: usize = 25;

#[derive(Debug, Clone)]
pub struct PageReadOptions {
    pub members: u64,
    pub reads: usize,
    pub rounds: usize,
    /// Whether the allocator advises huge pages (only reported here: the
    /// binary owns the allocator).
    pub huge: bool,
}

/// xorshift64*: the same sequence every run, no dependency.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

pub fn run(o: &PageReadOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if o.members == 0 || o.reads == 0 || o.rounds == 0 {
        bail!("--members, --reads and --rounds must be at least 1");
    }
    let members = o.members;
    let mut board = Board::new(BoardConfig::default())?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut ids = String::new();
    let mut ends = Vec::with_capacity(1000);
    let mut scores = Vec::with_capacity(1000);
    let load = Instant::now();
    let mut i = 0;
    while i < members {
        ids.clear();
        ends.clear();
        scores.clear();
        while ends.len() < 1000 && i < members {
            let _ = write!(ids, "m{i}");
            ends.push(ids.len());
            scores.push((next(&mut x) % 1_000_000_000) as f64);
            i += 1;
        }
        let mut from = 0;
        let subs: Vec<Submit> = ends
            .iter()
            .zip(&scores)
            .map(|(&end, &s)| {
                let m = &ids.as_bytes()[from..end];
                from = end;
                Submit::new(m, s)
            })
            .collect();
        for r in board.submit_many(&subs)? {
            r?;
        }
    }
    let live = crate::alloc::stats().map_or(0, |s| s.live);
    writeln!(
        out,
        "{members} members loaded in {:.2} s, huge pages {}: heap {:.1} bytes/member \
         (engine's count), {:.1} allocated; {}",
        load.elapsed().as_secs_f64(),
        if o.huge { "advised" } else { "not advised" },
        board.heap_bytes() as f64 / members as f64,
        live as f64 / members as f64,
        anon_huge_pages()
    )?;

    let last_page = (members as usize).div_ceil(PAGE).max(1);
    let mut per_read = Vec::with_capacity(o.rounds);
    for round in 0..o.rounds {
        let pages: Vec<usize> = (0..o.reads)
            .map(|_| (next(&mut x) % last_page as u64) as usize)
            .collect();
        let mut acc = 0u64;
        let start = Instant::now();
        for &p in &pages {
            board.visit(p * PAGE, PAGE, false, |e| {
                acc = acc
                    .wrapping_add(e.member.len() as u64)
                    .wrapping_add(e.member.last().copied().unwrap_or(0) as u64)
                    .wrapping_add(e.score.to_bits())
                    .wrapping_add(e.rank);
            });
        }
        let ns = start.elapsed().as_nanos() as f64 / o.reads as f64;
        black_box(acc);
        writeln!(out, "round {round}: {ns:.0} ns per page of {PAGE}")?;
        per_read.push(ns);
    }
    per_read.sort_by(f64::total_cmp);
    let median = per_read[o.rounds / 2];
    writeln!(
        out,
        "median {median:.0} ns per page read ({} rounds of {})",
        o.rounds, o.reads
    )?;
    Ok(vec![Record {
        scenario: SCENARIO,
        figure: if o.huge {
            "page_read_ns".into()
        } else {
            "page_read_plain_ns".into()
        },
        unit: "ns".into(),
        podium: Some(median),
        redis: None,
        baseline: None,
        baseline_name: None,
        ratio: None,
        members: Some(members),
    }])
}
