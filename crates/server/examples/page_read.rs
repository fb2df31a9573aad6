//! Reads random pages of a large board in process, the way the server
//! answers `top` (`Board::visit`, each entry's id, score and rank touched),
//! and prints the time per read: a quick A/B harness for the page-read path
//! without the network (`rank10m`'s read part).
//!
//! The board is loaded as `rank10m` loads it (ids `m{i}` in order, random
//! scores, `submit_many` in batches of 1000), so records and id bytes lie in
//! arrival order while pages go in score order: every entry of a page is a
//! scattered record and a scattered id.
//!
//! The process uses the server's allocator ([`HugePages`] over the
//! counting one); `plain` as the fourth argument turns its huge-page advice
//! off, to compare both in one binary.
//!
//! `cargo run --release -p podium-server --example page_read -- [members] [reads] [rounds] [huge|plain]`

use podium_bench::alloc::CountingAlloc;
use podium_engine::{Board, BoardConfig, Submit};
use podium_server::hugepages::{anon_huge_pages, HugePages};
use std::fmt::Write;
use std::hint::black_box;
use std::time::Instant;

const PAGE: usize = 25;

#[global_allocator]
static GLOBAL: HugePages<CountingAlloc> = HugePages::new(CountingAlloc);

/// xorshift64*: the same sequence every run, no dependency.
fn next(x: &mut u64) -> u64 {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn parse_count(s: &str) -> u64 {
    let (num, mul) = match s.as_bytes().last() {
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1_000_000),
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1_000),
        _ => (s, 1),
    };
    num.parse::<u64>().expect("a count like 3M, 20k or 5000") * mul
}

fn main() {
    let mut args = std::env::args().skip(1);
    let members = args.next().map_or(10_000_000, |s| parse_count(&s));
    let reads = args.next().map_or(200_000, |s| parse_count(&s)) as usize;
    let rounds: usize = args.next().map_or(5, |s| s.parse().expect("rounds"));
    let huge = args.next().is_none_or(|s| s != "plain");
    GLOBAL.set_advise(huge);

    let mut board = Board::new(BoardConfig::default()).expect("default config");
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
        let res = board.submit_many(&subs).expect("valid batch");
        assert!(res.iter().all(|r| r.is_ok()));
    }
    let live = podium_bench::alloc::stats().map_or(0, |s| s.live);
    println!(
        "{members} members loaded in {:.2} s, huge pages {}: heap {:.1} bytes/member \
         (engine's count), {:.1} allocated; {}",
        load.elapsed().as_secs_f64(),
        if huge { "advised" } else { "not advised" },
        board.heap_bytes() as f64 / members as f64,
        live as f64 / members as f64,
        anon_huge_pages()
    );

    let last_page = (members as usize).div_ceil(PAGE).max(1);
    let mut per_read = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let pages: Vec<usize> = (0..reads)
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
        let ns = start.elapsed().as_nanos() as f64 / reads as f64;
        black_box(acc);
        println!("round {round}: {ns:.0} ns per page of {PAGE}");
        per_read.push(ns);
    }
    per_read.sort_by(f64::total_cmp);
    println!(
        "median {:.0} ns per page read ({rounds} rounds of {reads})",
        per_read[rounds / 2]
    );
}
