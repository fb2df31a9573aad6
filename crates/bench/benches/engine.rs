//! Criterion micro-benchmarks of the engine's hot operations at 1M members,
//! each beside its std-baseline counterpart: submit (update), rank lookup,
//! and a random 25-entry page read. The baseline's rank and page reads are
//! O(n), so they run on a 10k board (labelled `10k`, with podium at 10k
//! beside them for a like-for-like pair); its updates are O(log n) and run
//! at 1M. Sample sizes are small so `cargo bench` ends in a few minutes.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use podium_bench::alloc::CountingAlloc;
use podium_bench::engine::{
    member_id, random_score, Leaderboard, Podium, StdBaseline, Workload, PAGE_SIZE,
};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::hint::black_box;
use std::time::Duration;

// The counting allocator of the `podium-bench` scenarios, so timings
// include the same per-allocation counting cost.
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

const BIG: u64 = 1_000_000;
const SMALL: u64 = 10_000;
const SEED: u64 = 42;
/// Pre-generated operations, replayed in a cycle.
const OPS: usize = 100_000;

fn load<L: Leaderboard>(n: u64) -> L {
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut lb = L::create();
    let mut id = String::new();
    for i in 0..n {
        member_id(&mut id, i);
        lb.submit(&id, random_score(&mut rng)).expect("load");
    }
    lb
}

fn label(n: u64) -> &'static str {
    if n == BIG {
        "1M"
    } else {
        "10k"
    }
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}

fn update<L: Leaderboard>(g: &mut BenchmarkGroup<'_, WallTime>, lb: &mut L, n: u64, w: &Workload) {
    let mut k = 0;
    // A fresh random score every iteration: replaying the workload's
    // scores in a cycle would make every update after the first cycle a
    // no-op (the member already has that score), which measures nothing.
    let mut rng = SmallRng::seed_from_u64(SEED ^ 0x5eed);
    g.bench_function(BenchmarkId::new(L::ID, label(n)), |b| {
        b.iter(|| {
            k = (k + 1) % w.updates.len();
            lb.submit(black_box(w.updates.get(k)), random_score(&mut rng))
                .expect("update")
        })
    });
}

fn rank<L: Leaderboard>(g: &mut BenchmarkGroup<'_, WallTime>, lb: &mut L, n: u64, w: &Workload) {
    let mut k = 0;
    g.bench_function(BenchmarkId::new(L::ID, label(n)), |b| {
        b.iter(|| {
            k = (k + 1) % w.lookups.len();
            lb.rank(black_box(w.lookups.get(k))).expect("member exists")
        })
    });
}

fn page<L: Leaderboard>(g: &mut BenchmarkGroup<'_, WallTime>, lb: &mut L, n: u64, w: &Workload) {
    let mut k = 0;
    g.bench_function(BenchmarkId::new(L::ID, label(n)), |b| {
        b.iter(|| {
            k = (k + 1) % w.pages.len();
            lb.page(black_box(w.pages[k]), PAGE_SIZE).expect("page")
        })
    });
}

fn engine(c: &mut Criterion) {
    let big = Workload::new(BIG, OPS, SEED);
    let small = Workload::new(SMALL, OPS, SEED);
    let mut podium_big: Podium = load(BIG);
    let mut podium_small: Podium = load(SMALL);
    let mut base_small: StdBaseline = load(SMALL);

    {
        let mut g = group(c, "submit_update");
        update(&mut g, &mut podium_big, BIG, &big);
        // Loaded here and dropped at once: it is only needed for updates,
        // and 1M std entries cost ~100 MB.
        let mut base_big: StdBaseline = load(BIG);
        update(&mut g, &mut base_big, BIG, &big);
        g.finish();
    }
    {
        let mut g = group(c, "rank_lookup");
        rank(&mut g, &mut podium_big, BIG, &big);
        rank(&mut g, &mut podium_small, SMALL, &small);
        rank(&mut g, &mut base_small, SMALL, &small);
        g.finish();
    }
    {
        let mut g = group(c, "top_page_25");
        page(&mut g, &mut podium_big, BIG, &big);
        page(&mut g, &mut podium_small, SMALL, &small);
        page(&mut g, &mut base_small, SMALL, &small);
        g.finish();
    }
}

criterion_group!(benches, engine);
criterion_main!(benches);
