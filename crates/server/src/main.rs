//! The `podium` binary: its command line (SPEC §6) and the process-wide
//! setup — `serve`, the client commands that talk to a running server, and
//! `bench`.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use podium_bench::alloc::CountingAlloc;
use podium_bench::engine::EngineOptions;
use podium_bench::report::{parse_count, Record};
use podium_server::client;
use podium_server::settings::{ServeArgs, Settings};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

// Installed here rather than in the library so only processes that want
// the memory figures pay for counting.
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

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
    /// Load a CSV (member,score[,name]) or NDJSON file into a board.
    Import(client::ImportArgs),
    /// Write every entry of a board as NDJSON, best first.
    Export(client::ExportArgs),
    /// Run a benchmark scenario (SPEC §7) and print its figures.
    Bench(BenchArgs),
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
        Command::Import(a) => client::import(&a),
        Command::Export(a) => client::export(&a),
        Command::Bench(args) => bench(args),
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
        let Scenario::Engine(e) = b.scenario;
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
        let Scenario::Engine(e) = b.scenario;
        assert_eq!(e.members, [100_000, 2_000_000]);
        assert_eq!(b.json.as_deref(), Some(std::path::Path::new("out.json")));
        assert_eq!(b.seed, 7);

        assert!(Cli::try_parse_from(["podium", "bench", "engine", "--members", "x"]).is_err());
    }
}
