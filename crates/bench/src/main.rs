//! The `podium-bench` binary: the benchmark scenarios of docs/spec.md §7
//! and the timing harnesses, each a subcommand; `podium bench ARGS` runs
//! it with the same arguments. Its own process, so only it pays for the
//! counting allocator behind the memory figures; the network scenarios
//! start the `podium` binary beside it (or `--podium PATH`) as servers.

use anyhow::{bail, Context, Result};
use clap::Parser;
use podium_bench::alloc::CountingAlloc;
use podium_bench::cli::{Cli, Scenario};
use podium_bench::engine::EngineOptions;
use podium_bench::export_encode::ExportEncodeOptions;
use podium_bench::http_updates::HttpUpdatesOptions;
use podium_bench::import::ImportOptions;
use podium_bench::net::NetOptions;
use podium_bench::page_read::PageReadOptions;
use podium_bench::rank10m::Rank10mOptions;
use podium_bench::redis_search::RedisSearchOptions;
use podium_bench::report::Record;
use podium_bench::rpc_payload::RpcPayloadOptions;
use podium_bench::search_http::HttpSearchOptions;
use podium_bench::sort_keys::SortKeysOptions;
use podium_engine::hugepages::HugePages;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

// The server's huge pages for the engine's 2 MiB chunks, as the figures
// are taken in `podium serve`, over the counting allocator for the
// memory figures.
#[global_allocator]
static GLOBAL: HugePages<CountingAlloc> = HugePages::new(CountingAlloc);

fn seconds(s: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("{flag} must be a non-negative number"))
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` gives the whole context chain on one line.
            eprintln!("podium-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Cli) -> Result<()> {
    // Opened before the run so a bad path fails in a second, not after it.
    let json = match &args.json {
        Some(path) => Some((
            path,
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    // Looked up only by the scenarios that start servers.
    let podium = || podium_exe(args.podium.as_deref());
    let records = match args.scenario {
        Scenario::Engine(e) => {
            let opts = EngineOptions {
                members: e.members,
                ops: usize::try_from(e.ops).context("--ops is too large")?,
                seed: args.seed,
                baseline_budget: Duration::try_from_secs_f64(e.baseline_seconds)
                    .context("--baseline-seconds must be a non-negative number")?,
                progress: !e.quiet,
            };
            let stdout = std::io::stdout();
            podium_bench::engine::run(&opts, &mut stdout.lock())?
        }
        Scenario::SortKeys(a) => {
            let opts = SortKeysOptions {
                members: a.members,
                lookups: usize::try_from(a.ops).context("--ops is too large")?,
                pages: usize::try_from(a.pages).context("--pages is too large")?,
                rounds: a.rounds,
                seed: args.seed,
                in_order: a.in_order,
                progress: !a.quiet,
            };
            podium_bench::sort_keys::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::SortKeysRedis(a) => {
            let opts = podium_bench::sort_keys_redis::SortKeysRedisOptions {
                members: a.members,
                ops: usize::try_from(a.ops).context("--ops is too large")?,
                rounds: a.rounds,
                seed: args.seed,
                redis_server: a.redis_server,
                progress: !a.quiet,
            };
            podium_bench::sort_keys_redis::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::Rank10m(a) => {
            let opts = Rank10mOptions {
                net: a.net.options(args.seed, &podium()?)?,
                members: a.members,
                batch: a.batch,
                depth: a.depth,
                reads: a.reads,
                method: match a.method.as_str() {
                    "submit-many" => podium_bench::load::Method::SubmitMany,
                    _ => podium_bench::load::Method::Import,
                },
                read_depth: a.read_depth,
                backend: a.backend.clone(),
            };
            podium_bench::rank10m::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::HttpUpdates(a) => {
            let opts = HttpUpdatesOptions {
                net: a.net.options(args.seed, &podium()?)?,
                clients: a.clients,
                members: a.members,
                duration: seconds(a.seconds, "--seconds")?,
            };
            podium_bench::http_updates::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::Events(a) => {
            let opts = podium_bench::events::EventsOptions {
                net: a.net.options(args.seed, &podium()?)?,
                members: a.members,
                watched: a.watched,
                subscribers: a.subscribers.iter().map(|n| *n as usize).collect(),
                writers: a.writers,
                depth: a.depth,
                duration: seconds(a.seconds, "--seconds")?,
                top: a.filters.iter().any(|f| f == "top"),
                members_filter: a.filters.iter().any(|f| f == "members"),
                latency: !a.no_latency,
            };
            podium_bench::events::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::RpcPayload(a) => {
            let opts = RpcPayloadOptions {
                net: a.net.options(args.seed, &podium()?)?,
                sizes: a.sizes,
                members: a.members,
                depth: a.depth,
                connections: a.connections,
                min_time: seconds(a.seconds, "--seconds")?,
                data: a.data,
                blob: a.blob,
            };
            podium_bench::rpc_payload::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::Import(a) => {
            let opts = ImportOptions {
                net: a.net.options(args.seed, &podium()?)?,
                members: a.members,
                batch: a.batch,
                depth: a.depth,
            };
            podium_bench::import::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::Search(a) => {
            let http = if a.no_http {
                None
            } else {
                Some(HttpSearchOptions {
                    net: NetOptions {
                        exe: podium()?,
                        redis: false,
                        seed: args.seed,
                        progress: !a.quiet,
                        ..NetOptions::default()
                    },
                    members: a.http_members,
                    clients: a.clients,
                    client_threads: a.client_threads,
                    duration: seconds(a.http_seconds, "--http-seconds")?,
                    wrk: a.wrk,
                })
            };
            let opts = podium_bench::search::SearchBenchOptions {
                members: a.members,
                queries: usize::try_from(a.queries)?,
                seed: args.seed,
                http,
            };
            podium_bench::search::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::PageRead(a) => {
            GLOBAL.set_advise(!a.plain);
            let opts = PageReadOptions {
                members: a.members,
                reads: usize::try_from(a.reads).context("--reads is too large")?,
                rounds: a.rounds,
                huge: !a.plain,
            };
            podium_bench::page_read::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::ExportEncode(a) => {
            let opts = ExportEncodeOptions {
                members: a.members,
                chunk: usize::try_from(a.chunk).context("--chunk is too large")?,
                rounds: a.rounds,
                seq: a.seq,
                data: usize::try_from(a.data).context("--data is too large")?,
                blob: usize::try_from(a.blob).context("--blob is too large")?,
                seed: args.seed,
            };
            podium_bench::export_encode::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::RedisSearch(a) => {
            let opts = RedisSearchOptions {
                url: a.url,
                board: a.board,
                members: a.members,
                rounds: a.rounds,
                skip_load: a.skip_load,
            };
            podium_bench::redis_search::run(&opts, &mut std::io::stdout().lock())?
        }
    };
    if let Some((path, file)) = json {
        write_json(file, &records).with_context(|| format!("cannot write {}", path.display()))?;
        println!("\nwrote {} records to {}", records.len(), path.display());
    }
    Ok(())
}

fn write_json(file: File, records: &[Record]) -> Result<()> {
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, records)?;
    writeln!(w)?;
    w.flush()?;
    Ok(())
}

/// The `podium` binary to start servers from: `--podium`, else the one
/// beside this binary (both are built into the same directory).
fn podium_exe(flag: Option<&Path>) -> Result<PathBuf> {
    let path = match flag {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()
            .context("cannot find the podium-bench binary")?
            .with_file_name(format!("podium{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.is_file() {
        bail!(
            "no podium binary at {}: build it with `cargo build --release -p podium-server`, \
             or give its path with --podium",
            path.display()
        );
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_podium_is_named() {
        assert!(podium_exe(Some(Path::new("/nonexistent/podium")))
            .unwrap_err()
            .to_string()
            .contains("--podium"));
    }
}
