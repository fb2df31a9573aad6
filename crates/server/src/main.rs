//! The `podium` binary: its command line (docs/spec.md §6) and the process-wide
//! setup — `serve`, the client commands that talk to a running server, and
//! `bench`.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use podium_cli as client;
use podium_engine::hugepages::HugePages;
use podium_engine::used::Used;
use podium_server::settings::{LogFormat, ServeArgs, Settings};
use std::alloc::System;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

// Huge pages for the engine's 2 MiB chunks: a page read on a large board
// is TLB-bound without them. Counted: the memory budget (`--maxmemory`)
// reads the count.
#[global_allocator]
static GLOBAL: Used<HugePages<System>> = Used::new(HugePages::new(System));

#[derive(Parser, Debug)]
#[command(name = "podium", version = podium_server::VERSION, about = "podium: a leaderboard server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server (HTTP/JSON on 127.0.0.1:7070 by default).
    Serve(Box<ServeArgs>),
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
    /// Watch a board's best places (and chosen members) change, live.
    Watch(client::WatchArgs),
    /// A member's rank and score.
    Rank(client::RankArgs),
    /// The entries around a member, the member in the middle.
    Around(client::AroundArgs),
    /// A member's entry: rank, score, name, data, percentile and page.
    Entry(client::EntryArgs),
    /// Take members off a board.
    Remove(client::RemoveArgs),
    /// List the boards with their sizes (archives under their board).
    Boards(client::BoardsArgs),
    /// Create, reconfigure, describe or delete a board.
    Board(client::BoardArgs),
    /// Archive a board now and empty it.
    Reset(client::ResetArgs),
    /// Overwrite a board with the union of others.
    Merge(client::MergeArgs),
    /// Copy a running server's data (a consistent online backup, checked
    /// against its manifest) into a new directory.
    Backup(client::BackupArgs),
    /// Make a new data directory from a backup (checked first).
    Restore(client::RestoreArgs),
    /// Run a benchmark scenario (docs/spec.md §7) and print its figures:
    /// runs the podium-bench binary beside podium with these arguments
    /// (`podium bench --help` lists the scenarios).
    #[command(disable_help_flag = true)]
    Bench(BenchArgs),
    /// Print a completion script for SHELL (bash, zsh, fish, elvish,
    /// powershell), e.g. `podium completions bash > /etc/bash_completion.d/podium`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) of podium and its commands, e.g.
    /// `podium man | man -l -`; with --dir, write one page a command there.
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
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
    /// The scenario and its options, as podium-bench takes them.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

fn main() -> ExitCode {
    // The client commands' old variable names, read as the new ones (with
    // a warning); `serve` reads PODIUM_<FLAG> only.
    if std::env::args_os().nth(1).is_some_and(|c| c != "serve") {
        client::env::adopt_deprecated();
    }
    let cli = Cli::parse();
    let done = |r: Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Command::Serve(args) => done(serve(*args)),
        Command::Top(a) => done(client::top(&a)),
        Command::Submit(a) => done(client::submit(&a)),
        Command::Search(a) => done(client::search(&a)),
        Command::Import(a) => done(client::import(&a)),
        Command::Export(a) => done(client::export(&a)),
        Command::Watch(a) => done(client::watch(&a)),
        Command::Rank(a) => done(client::rank(&a)),
        Command::Around(a) => done(client::around(&a)),
        Command::Entry(a) => done(client::entry(&a)),
        Command::Remove(a) => done(client::remove(&a)),
        Command::Boards(a) => done(client::boards(&a)),
        Command::Board(a) => done(client::board(&a)),
        Command::Reset(a) => done(client::reset(&a)),
        Command::Merge(a) => done(client::merge(&a)),
        Command::Backup(a) => done(client::backup(&a)),
        Command::Restore(a) => done(client::restore(&a)),
        Command::Bench(args) => bench(&args.args),
        Command::Repair(args) => done(repair(&args)),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "podium", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => done(man(dir.as_deref())),
    };
    match result {
        Ok(code) => code,
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
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match settings.log_format {
        LogFormat::Text => fmt
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        // One object a line, no colour codes, the span context left out
        // (podium logs events, not spans).
        LogFormat::Json => fmt
            .json()
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
    podium_server::server::run(settings)
}

/// `podium man`: podium(1) on stdout, or a page a command in `dir`
/// (podium.1, podium-serve.1, …).
fn man(dir: Option<&std::path::Path>) -> Result<()> {
    let cmd = <Cli as clap::CommandFactory>::command();
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("cannot write the pages into {}", dir.display()))
        }
        None => clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout())
            .context("cannot write the page"),
    }
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

/// The benchmark binary `podium bench` runs.
const PODIUM_BENCH: &str = "podium-bench";

/// `podium bench ARGS...`: the scenarios live in their own binary, so the
/// server's allocator never counts bytes; it is run from beside this one,
/// told where the `podium` to start servers from is, with stdin, stdout
/// and stderr passed through and its exit code returned as podium's.
fn bench(args: &[OsString]) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the podium binary")?;
    let bench = exe.with_file_name(format!("{PODIUM_BENCH}{}", std::env::consts::EXE_SUFFIX));
    if !bench.is_file() {
        bail!(
            "the benchmarks are the {PODIUM_BENCH} binary, which is not beside podium \
             (no {}): build it with `cargo build --release -p {PODIUM_BENCH}` \
             (or `cargo build --release` for both)",
            bench.display()
        );
    }
    let status = std::process::Command::new(&bench)
        .arg("--podium")
        .arg(&exe)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", bench.display()))?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Killed by a signal: it said nothing, so say what happened.
        None => {
            eprintln!("podium: error: {PODIUM_BENCH} ended by {status}");
            ExitCode::FAILURE
        }
    })
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
    fn bench_passes_every_argument_on() {
        let cli = Cli::try_parse_from(["podium", "bench", "engine", "--help", "--members", "1k"])
            .unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("not bench")
        };
        assert_eq!(b.args, ["engine", "--help", "--members", "1k"]);
        let cli = Cli::try_parse_from(["podium", "bench", "--json", "x.json", "rank10m"]).unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("not bench")
        };
        assert_eq!(b.args, ["--json", "x.json", "rank10m"]);
    }
}
