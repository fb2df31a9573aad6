//! Runs the in-process `search` scenario until the `podium bench search`
//! subcommand is wired: `cargo run --release -p podium-bench --example
//! search -- [MEMBERS,...] [QUERIES]` (e.g. `10k,1M 100k`).

use podium_bench::alloc::CountingAlloc;
use podium_bench::report::parse_count;
use podium_bench::search::{run, SearchBenchOptions};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn main() -> anyhow::Result<()> {
    let mut opts = SearchBenchOptions::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(m) = args.first() {
        opts.members = m
            .split(',')
            .map(parse_count)
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
    }
    if let Some(q) = args.get(1) {
        opts.queries = parse_count(q).map_err(anyhow::Error::msg)? as usize;
    }
    run(&opts, &mut std::io::stdout().lock())?;
    Ok(())
}
