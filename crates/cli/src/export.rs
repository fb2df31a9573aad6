//! `podium export BOARD`: every entry of a board as NDJSON, best first,
//! to a file or stdout.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::transport::{Conn, Transport};

/// `podium export BOARD`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to export.
    pub board: String,
    /// Write the NDJSON here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar or summary.
    #[arg(long)]
    pub quiet: bool,
}

/// `podium export BOARD`: the board as NDJSON, best first.
pub fn export(a: &ExportArgs) -> Result<()> {
    let t = Transport::connect(&a.conn)?;
    // The member count sizes the progress bar, and a missing board is
    // reported before the output file is touched.
    let info = t.board_info(&a.board)?;
    let export = t.export(&a.board)?;
    let (mut out, to_stdout) = export_output(a)?;
    // A progress bar over a terminal that shows the NDJSON itself would
    // garble both.
    let quiet = a.quiet || (to_stdout && io::stdout().is_terminal());
    let lines = match export.write(&mut out, info.members, quiet) {
        Ok(n) => n,
        // `podium export b | head`: the reader had enough.
        Err(e) if to_stdout && is_broken_pipe(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    export_summary(a, to_stdout, lines);
    Ok(())
}

/// The export's output: the file of `--output`, or stdout; and whether it
/// is stdout.
fn export_output(a: &ExportArgs) -> Result<(Box<dyn Write>, bool)> {
    Ok(match &a.output {
        Some(p) if p.as_os_str() != "-" => {
            let f = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            (Box::new(BufWriter::with_capacity(256 * 1024, f)), false)
        }
        _ => (
            Box::new(BufWriter::with_capacity(256 * 1024, io::stdout().lock())),
            true,
        ),
    })
}

fn export_summary(a: &ExportArgs, to_stdout: bool, lines: u64) {
    if !a.quiet {
        match &a.output {
            Some(p) if !to_stdout => {
                eprintln!(
                    "exported {lines} members of {:?} to {}",
                    a.board,
                    p.display()
                )
            }
            _ => eprintln!("exported {lines} members of {:?}", a.board),
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
