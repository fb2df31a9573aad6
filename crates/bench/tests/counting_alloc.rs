//! Checks [`CountingAlloc`] once installed as the global allocator, which
//! the library's own unit tests cannot do (they run without it).

use podium_bench::alloc::{reset_peak, stats, CountingAlloc};
use std::collections::HashMap;
use std::hint::black_box;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

// One test function: the counters are process-wide, and parallel tests
// allocating beside each other would blur the figures checked here.
#[test]
fn counts_live_and_peak_bytes() {
    let before = stats().expect("installed, so measured");

    let v = black_box(vec![0u8; 1 << 20]);
    let during = stats().unwrap();
    assert!(during.live >= before.live + (1 << 20));
    drop(v);
    let after = stats().unwrap();
    assert!(after.live < during.live);

    let mut v = black_box(Vec::<u8>::with_capacity(1000));
    v.reserve_exact(1 << 20);
    let grown = stats().unwrap();
    assert!(grown.live >= after.live + (1 << 20));
    drop(v);

    // A hash map that rehashes holds two tables at once for a moment: the
    // peak must see that even though the live figure never shows it.
    reset_peak();
    let start = stats().unwrap();
    let mut m = HashMap::new();
    for i in 0..100_000u64 {
        m.insert(i, i);
    }
    let end = stats().unwrap();
    let live = end.live - start.live;
    let peak = end.peak - start.live;
    assert!(peak > live + live / 4, "peak {peak} live {live}");
    drop(black_box(m));
}
