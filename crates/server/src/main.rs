//! The `podium` binary: its command line (docs/spec.md §6) and the process-wide
//! setup — `serve`, the client commands that talk to a running server, and
//! `bench`.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use podium_bench::alloc::CountingAlloc;
use podium_bench::engine::EngineOptions;
use podium_bench::http_updates::HttpUpdatesOptions;
use podium_bench::import::ImportOptions;
use podium_bench::net::{Fsync, NetOptions};
use podium_bench::rank10m::Rank10mOptions;
use podium_bench::report::{parse_bytes, parse_count, Record};
use podium_bench::rpc_payload::RpcPayloadOptions;
use podium_bench::search_http::HttpSearchOptions;
use podium_cli as client;
use podium_server::hugepages::HugePages;
use podium_server::settings::{ServeArgs, Settings};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

// Installed here rather than in the library so only processes that want
// the memory figures pay for counting. Huge pages for the engine's 2 MiB
// chunks: a page read on a large board is TLB-bound without them.
#[global_allocator]
static GLOBAL: HugePages<CountingAlloc> = HugePages::new(CountingAlloc);

#[derive(Parser, Debug)]
#[command(name = "podium", version, about = "podium: a leaderboard server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server (HTTP/JSON on 127.0.0.1:7070 by default).
    Serve(ServeArgs),
    /// Show a page of a board.
    Top(client::TopArgs),
    /// Submit one score.
    Submit(client::SubmitArgs),
    /// Find members by name (prefix words), best first.
    Search(client::SearchArgs),
    /// Load a CSV (member,score[,name]) or NDJSON file into a board.
    Import(client::ImportArgs),
    /// Write every entry of a board as NDJSON, best first.
    Export(client::ExportArgs),
    /// Run a benchmark scenario (docs/spec.md §7) and print its figures.
    Bench(BenchArgs),
    /// Make a data directory the server refuses to start on usable again:
    /// say what a repair keeps and loses (a dry run), or do it (--apply).
    Repair(RepairArgs),
}

#[derive(Args, Debug)]
struct RepairArgs {
    /// The data directory (the server's --data-dir); no server may be
    /// running on it.
    #[arg(value_name = "DATA_DIR")]
    dir: PathBuf,

    /// Do the repair. Without it nothing is changed.
    #[arg(long)]
    apply: bool,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Also write the figures to FILE as a JSON array, one record per figure.
    #[arg(long, value_name = "FILE", global = true)]
    json: Option<PathBuf>,

    /// Seed of the random scores and operations; equal seeds, equal workloads.
    #[arg(long, default_value_t = 42, global = true)]
    seed: u64,

    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// In-process updates/s, rank lookups/s, page reads/s and bytes per
    /// member: podium's Board against a std BTreeMap+HashMap leaderboard.
    Engine(EngineArgs),
    /// Load N members (sequential, then random scores) through pipelined
    /// submit_many / ZADD, then read random pages of 25 one at a time.
    Rank10m(Rank10mArgs),
    /// Concurrent HTTP clients submitting scores for random members:
    /// sustained updates/s and latency; Redis: unpipelined ZADD.
    HttpUpdates(HttpUpdatesArgs),
    /// Large MessagePack-RPC responses (export of 1 to 128 MiB): sync,
    /// pipelined, parallel and decoded MB/s beside an in-process copy.
    RpcPayload(RpcPayloadArgs),
    /// 10k and 1M named members imported until searchable (index built);
    /// Redis: an autocomplete index of the same names (a sorted set per
    /// word prefix).
    Import(ImportArgs),
    /// Player search on boards of generated names: index build time and
    /// memory, `a` / `a* a` / `a* a* a` queries/s with p50/p99 in process,
    /// then the same queries over HTTP against a podium holding 1M names.
    Search(SearchArgs),
}

#[derive(Args, Debug)]
struct SearchArgs {
    /// Member counts, comma-separated; the query figures are taken at each.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "10k,1M")]
    members: Vec<u64>,

    /// Queries timed per query kind and member count.
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    queries: u64,

    /// Skip the over-HTTP figures (no server is started).
    #[arg(long)]
    no_http: bool,

    /// Named members the server holds for the over-HTTP figures.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    http_members: u64,

    /// Concurrent HTTP clients, one keep-alive connection each.
    #[arg(long, default_value_t = 32)]
    clients: usize,

    /// Threads the HTTP clients run on.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,

    /// Seconds each query is asked over HTTP.
    #[arg(long, default_value_t = 5.0)]
    http_seconds: f64,

    /// Also ask each query over HTTP with `wrk` (if installed), the same
    /// connections for as long, beside the bench's own client.
    #[arg(long)]
    wrk: bool,

    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

/// Options of every scenario that starts servers.
#[derive(Args, Debug)]
struct NetArgs {
    /// Do not run Redis beside podium.
    #[arg(long)]
    no_redis: bool,

    /// Flush policy of both servers: podium's --fsync and Redis's
    /// appendfsync (everysec or always).
    #[arg(long, default_value = "everysec")]
    fsync: Fsync,

    /// The Redis server binary (looked up in PATH).
    #[arg(long, default_value = "redis-server", value_name = "PROGRAM")]
    redis_server: String,

    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

impl NetArgs {
    fn options(&self, seed: u64) -> Result<NetOptions> {
        Ok(NetOptions {
            exe: std::env::current_exe().context("cannot find the podium binary")?,
            redis: !self.no_redis,
            redis_server: self.redis_server.clone(),
            fsync: self.fsync,
            seed,
            progress: !self.quiet,
        })
    }
}

#[derive(Args, Debug)]
struct Rank10mArgs {
    #[command(flatten)]
    net: NetArgs,

    /// Members of each board (e.g. 10M, 100k).
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    members: u64,

    /// Entries per submit_many call (members per ZADD).
    #[arg(long, value_parser = parse_count, default_value = "1000")]
    batch: u64,

    /// Calls in flight on the connection while loading.
    #[arg(long, default_value_t = 8)]
    depth: usize,

    /// Random page reads, one request at a time.
    #[arg(long, value_parser = parse_count, default_value = "50k")]
    reads: u64,

    /// podium's load call: import (the bulk load; counts only, as Redis's
    /// ZADD answers: the like-for-like call) or submit-many (each entry's
    /// rank in the answer as well).
    #[arg(long, value_parser = ["submit-many", "import"], default_value = "import")]
    method: String,

    /// With --backend: page reads in flight for the pipelined read pass
    /// (both sides).
    #[arg(long, default_value_t = 16)]
    read_depth: usize,

    /// Run podium on Redis and measure its overhead against the same Redis
    /// used directly: "redis" starts a redis-server, or give
    /// redis://HOST:PORT (its keys direct:seq, direct:rand, {seq}…, {rand}…
    /// are written, then deleted). Without it: the embedded engine.
    #[arg(long, value_name = "redis|URL")]
    backend: Option<String>,
}

#[derive(Args, Debug)]
struct HttpUpdatesArgs {
    #[command(flatten)]
    net: NetArgs,

    /// Concurrent HTTP clients (Redis: connections).
    #[arg(long, default_value_t = 64)]
    clients: usize,

    /// Members the updates pick from at random (loaded first).
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    members: u64,

    /// How long each side runs, in seconds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
}

#[derive(Args, Debug)]
struct RpcPayloadArgs {
    #[command(flatten)]
    net: NetArgs,

    /// Response sizes, comma-separated (e.g. 1MiB,128MiB).
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes,
          default_value = "1MiB,8MiB,32MiB,128MiB")]
    sizes: Vec<u64>,

    /// Entry counts instead of sizes, comma-separated (a smaller run).
    #[arg(long, value_delimiter = ',', value_parser = parse_count)]
    members: Option<Vec<u64>>,

    /// Requests in flight in the pipelined mode.
    #[arg(long, default_value_t = 4)]
    depth: usize,

    /// Connections in the parallel mode.
    #[arg(long, default_value_t = 4)]
    connections: usize,

    /// Seconds each mode runs at least.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,

    /// Also export boards whose members carry a JSON `data` object of
    /// about this many bytes (e.g. 1KiB), as extra rows beside the bare ones.
    #[arg(long, value_parser = parse_bytes)]
    data: Option<u64>,

    /// Also export boards whose members carry a `data` object of exactly
    /// this many bytes that is one long string (e.g. 4KiB, the default
    /// data limit; larger sizes raise the boards' `max_data_bytes`): the
    /// Ruby report's opaque payload, as extra rows.
    #[arg(long, value_parser = parse_bytes)]
    blob: Option<u64>,
}

#[derive(Args, Debug)]
struct ImportArgs {
    #[command(flatten)]
    net: NetArgs,

    /// Member counts, comma-separated, one fresh board each.
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "10k,1M")]
    members: Vec<u64>,

    /// Entries per import call.
    #[arg(long, value_parser = parse_count, default_value = "10k")]
    batch: u64,

    /// Calls (Redis: pipelines) in flight.
    #[arg(long, default_value_t = 4)]
    depth: usize,
}

fn seconds(s: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("{flag} must be a non-negative number"))
}

#[derive(Args, Debug)]
struct EngineArgs {
    /// Member counts to run, comma-separated (e.g. 1M,10M or 100000).
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "1M,10M")]
    members: Vec<u64>,

    /// Updates, rank lookups and page reads per side and member count.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    ops: u64,

    /// Seconds allowed for the baseline's O(n) rank lookups and page reads.
    #[arg(long, default_value_t = 2.0)]
    baseline_seconds: f64,

    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Top(a) => client::top(&a),
        Command::Submit(a) => client::submit(&a),
        Command::Search(a) => client::search(&a),
        Command::Import(a) => client::import(&a),
        Command::Export(a) => client::export(&a),
        Command::Bench(args) => bench(args),
        Command::Repair(args) => repair(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` gives the whole context chain on one line; returning the
            // error from main would also dump a backtrace whenever
            // RUST_BACKTRACE is set, burying the message.
            eprintln!("podium: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> Result<()> {
    let settings = Settings::resolve(&args)?;
    let filter = tracing_subscriber::EnvFilter::try_new(&settings.log_level)
        .with_context(|| format!("--log-level {:?}", settings.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    podium_server::server::run(settings)
}

fn repair(args: &RepairArgs) -> Result<()> {
    let (plan, aside) = podium_store::storage::repair::run(&args.dir, args.apply)
        .with_context(|| format!("cannot repair {}", args.dir.display()))?;
    print!("{plan}");
    if plan.is_empty() {
        return Ok(());
    }
    match aside {
        Some(aside) => println!(
            "repaired; the original files are in {}. Start the server again.",
            aside.display()
        ),
        None => println!(
            "dry run: nothing was changed. Run `podium repair --apply {}` to do it.",
            args.dir.display()
        ),
    }
    Ok(())
}

fn bench(args: BenchArgs) -> Result<()> {
    // Opened before the run so a bad path fails in a second, not after it.
    let json = match &args.json {
        Some(path) => Some((
            path,
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
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
        Scenario::Rank10m(a) => {
            let opts = Rank10mOptions {
                net: a.net.options(args.seed)?,
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
                net: a.net.options(args.seed)?,
                clients: a.clients,
                members: a.members,
                duration: seconds(a.seconds, "--seconds")?,
            };
            podium_bench::http_updates::run(&opts, &mut std::io::stdout().lock())?
        }
        Scenario::RpcPayload(a) => {
            let opts = RpcPayloadOptions {
                net: a.net.options(args.seed)?,
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
                net: a.net.options(args.seed)?,
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
                        exe: std::env::current_exe().context("cannot find the podium binary")?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn engine_defaults_and_options() {
        let cli = Cli::try_parse_from(["podium", "bench", "engine"]).unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("not bench")
        };
        let Scenario::Engine(e) = b.scenario else {
            panic!("not engine")
        };
        assert_eq!(e.members, [1_000_000, 10_000_000]);
        assert_eq!(e.ops, 1_000_000);
        assert_eq!(b.seed, 42);
        assert!(b.json.is_none());

        let cli = Cli::try_parse_from([
            "podium",
            "bench",
            "engine",
            "--members",
            "100k,2M",
            "--json",
            "out.json",
            "--seed",
            "7",
        ])
        .unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("not bench")
        };
        let Scenario::Engine(e) = b.scenario else {
            panic!("not engine")
        };
        assert_eq!(e.members, [100_000, 2_000_000]);
        assert_eq!(b.json.as_deref(), Some(std::path::Path::new("out.json")));
        assert_eq!(b.seed, 7);

        assert!(Cli::try_parse_from(["podium", "bench", "engine", "--members", "x"]).is_err());
    }

    fn scenario(args: &[&str]) -> Scenario {
        let mut all = vec!["podium", "bench"];
        all.extend_from_slice(args);
        let Command::Bench(b) = Cli::try_parse_from(all).unwrap().command else {
            panic!("not bench")
        };
        b.scenario
    }

    #[test]
    fn network_scenarios_defaults_and_options() {
        let Scenario::Rank10m(r) = scenario(&["rank10m"]) else {
            panic!()
        };
        assert_eq!(
            (r.members, r.batch, r.depth, r.reads),
            (10_000_000, 1000, 8, 50_000)
        );
        assert!(!r.net.no_redis);
        assert_eq!(r.net.fsync, Fsync::EverySec);
        let Scenario::Rank10m(r) = scenario(&[
            "rank10m",
            "--members",
            "20k",
            "--no-redis",
            "--fsync",
            "always",
            "--quiet",
        ]) else {
            panic!()
        };
        assert_eq!(r.members, 20_000);
        assert!(r.net.no_redis && r.net.quiet);
        assert_eq!(r.backend, None);
        assert_eq!(r.net.fsync, Fsync::Always);
        let Scenario::Rank10m(r) = scenario(&["rank10m", "--backend", "redis"]) else {
            panic!()
        };
        assert_eq!(r.backend.as_deref(), Some("redis"));

        let Scenario::HttpUpdates(h) = scenario(&["http-updates"]) else {
            panic!()
        };
        assert_eq!((h.clients, h.members, h.seconds), (64, 100_000, 10.0));

        let Scenario::RpcPayload(p) = scenario(&["rpc-payload"]) else {
            panic!()
        };
        assert_eq!(p.sizes, [1 << 20, 8 << 20, 32 << 20, 128 << 20]);
        assert!(p.members.is_none());
        let Scenario::RpcPayload(p) = scenario(&["rpc-payload", "--members", "1000,5k"]) else {
            panic!()
        };
        assert_eq!(p.members, Some(vec![1000, 5000]));

        let Scenario::Import(i) = scenario(&["import"]) else {
            panic!()
        };
        assert_eq!(i.members, [10_000, 1_000_000]);
        assert_eq!(i.batch, 10_000);

        assert!(Cli::try_parse_from(["podium", "bench", "import", "--fsync", "no"]).is_err());

        let Scenario::Search(s) = scenario(&["search"]) else {
            panic!()
        };
        assert_eq!(s.members, [10_000, 1_000_000]);
        assert_eq!(
            (s.http_members, s.clients, s.http_seconds),
            (1_000_000, 32, 5.0)
        );
        assert!(!s.no_http);
        let Scenario::Search(s) = scenario(&["search", "--no-http", "--http-members", "5k"]) else {
            panic!()
        };
        assert!(s.no_http);
        assert_eq!(s.http_members, 5_000);
    }
}
