//! Loads members into one board through `submit_many`, the shape a network
//! bulk load takes (`rank10m`), and prints the time: a quick A/B harness for
//! the engine's insert path without the network or the log.
//!
//! `cargo run --release -p podium-engine --example load -- [members] [batch] [random|seq]`

use podium_engine::{Board, BoardConfig, Submit};
use std::fmt::Write;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let members: u64 = args
        .next()
        .map_or(10_000_000, |s| s.parse().expect("members"));
    let batch: usize = args.next().map_or(1000, |s| s.parse().expect("batch"));
    let random = args.next().is_none_or(|s| s != "seq");
    let mut board = Board::new(BoardConfig::default()).expect("default config");
    // xorshift64*: the same scores every run, no dependency.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut ids = String::new();
    let mut ends = Vec::with_capacity(batch);
    let mut scores = Vec::with_capacity(batch);
    let start = Instant::now();
    let mut i = 0;
    while i < members {
        ids.clear();
        ends.clear();
        scores.clear();
        while ends.len() < batch && i < members {
            let _ = write!(ids, "m{i}");
            ends.push(ids.len());
            let s = if random {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1_000_000_000) as f64
            } else {
                i as f64
            };
            scores.push(s);
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
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} members, batches of {batch}, {}: {secs:.3} s ({:.0} members/s), len {}",
        members,
        if random { "random" } else { "sequential" },
        members as f64 / secs,
        board.len()
    );
}
