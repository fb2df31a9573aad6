//! `podium import BOARD FILE`: an NDJSON or CSV file (or stdin) loaded
//! into a board, with a progress bar over its bytes, and the summary of
//! what was imported and which lines were refused.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use podium_client::{ErrorBody, ImportError, ImportResult};
use podium_core::api;

use crate::input::Format;
use crate::render::{draw_target, style, Counted};
use crate::transport::{Conn, Transport};

/// How many per-entry import errors are shown.
const SHOWN_ERRORS: usize = 10;
/// Entries per `import` call over RPC (one durable commit each).
pub const IMPORT_BATCH: usize = 10_000;
/// Bytes of records per `import` call at most (a batch of large `data`
/// objects is sent before it has 10,000 entries).
pub(crate) const IMPORT_BATCH_BYTES: usize = 8 << 20;
/// `import` calls in flight.
pub(crate) const IMPORT_IN_FLIGHT: usize = 4;

/// `podium import BOARD FILE`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to import into.
    pub board: String,
    /// NDJSON or CSV file to upload; `-` reads standard input.
    pub file: PathBuf,
    /// `ndjson` or `csv`; by default `csv` for a `.csv` file, else `ndjson`.
    #[arg(long)]
    pub format: Option<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// An import's tally: the answers of its batches (the client's
/// [`ImportResult`], the same whether they came over HTTP or RPC) and the
/// lines the CLI refused before sending.
pub(crate) trait Tally {
    /// Counts a line refused before it was sent.
    fn fail(&mut self, line: u64, member: Option<String>, error: api::ErrorBody);
    /// Adds one batch's answer; its `line`s are positions in the batch,
    /// turned into the file's line numbers.
    fn add(&mut self, batch: ImportResult, lines: &[u64]);
}

impl Tally for ImportResult {
    fn fail(&mut self, line: u64, member: Option<String>, error: api::ErrorBody) {
        self.failed += 1;
        self.errors.push(ImportError {
            line: Some(line),
            member,
            error: ErrorBody {
                code: error.code,
                message: error.message,
            },
        });
    }

    fn add(&mut self, batch: ImportResult, lines: &[u64]) {
        self.imported += batch.imported;
        self.failed += batch.failed;
        for mut e in batch.errors {
            e.line = e
                .line
                .and_then(|l| l.checked_sub(1))
                .and_then(|k| lines.get(k as usize).copied());
            self.errors.push(e);
        }
    }
}

/// `podium import BOARD FILE`: loads an NDJSON or CSV file into a board.
pub fn import(a: &ImportArgs) -> Result<()> {
    let format = Format::choose(a.format.as_deref(), &a.file)?;
    let t = Transport::connect(&a.conn)?;
    t.check_board(&a.board)?;
    let (input, pb) = import_input(a, format, "importing")?;
    let result = t.import(&a.board, input);
    pb.finish_and_clear();
    report_import(&result?)
}

/// What an import reads, as a transport takes it.
pub struct ImportInput {
    pub format: Format,
    pub reader: Box<dyn Read + Send>,
    /// Its length in bytes, when known (not for stdin).
    pub len: Option<u64>,
}

/// The input of an import (a file or stdin) with a progress bar counting
/// its bytes.
fn import_input(a: &ImportArgs, format: Format, verb: &str) -> Result<(ImportInput, ProgressBar)> {
    let (reader, len, pb): (Box<dyn Read + Send>, _, _) = if a.file.as_os_str() == "-" {
        let pb = ProgressBar::with_draw_target(None, draw_target(a.quiet));
        pb.set_style(style(&format!(
            "{{spinner}} {verb} {{bytes}} ({{bytes_per_sec}}) {{elapsed_precise}}"
        )));
        let reader = Counted {
            inner: io::stdin(),
            pb: pb.clone(),
        };
        (Box::new(reader), None, pb)
    } else {
        let file =
            File::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read {}", a.file.display()))?
            .len();
        let pb = ProgressBar::with_draw_target(Some(len), draw_target(a.quiet));
        pb.set_style(style(&format!(
            "{verb} [{{bar:32}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec:>12}} eta {{eta}}"
        )));
        let reader = Counted {
            inner: file,
            pb: pb.clone(),
        };
        (Box::new(reader), Some(len), pb)
    };
    Ok((
        ImportInput {
            format,
            reader,
            len,
        },
        pb,
    ))
}

/// Prints an import's summary and its first errors; fails when entries
/// failed.
fn report_import(out: &ImportResult) -> Result<()> {
    println!("imported {}, failed {}", out.imported, out.failed);
    for e in out.errors.iter().take(SHOWN_ERRORS) {
        let mut where_ = String::new();
        if let Some(l) = e.line {
            where_.push_str(&format!("line {l}"));
        }
        if let Some(m) = &e.member {
            if !where_.is_empty() {
                where_.push_str(", ");
            }
            where_.push_str(&format!("member {:?}", m));
        }
        eprintln!("  {where_}: {} ({})", e.error.message, e.error.code);
    }
    let shown = out.errors.len().min(SHOWN_ERRORS) as u64;
    if out.failed > shown {
        eprintln!("  … and {} more", out.failed - shown);
    }
    if out.failed > 0 {
        bail!(
            "{} of {} entries failed to import into {:?}",
            out.failed,
            out.imported + out.failed,
            out.board
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_errors_get_file_line_numbers() {
        let mut out = ImportResult {
            board: "b".into(),
            imported: 0,
            failed: 1,
            errors: vec![],
        };
        let batch = ImportResult {
            board: "b".into(),
            imported: 2,
            failed: 1,
            errors: vec![ImportError {
                line: Some(2),
                member: Some("x".into()),
                error: ErrorBody {
                    code: "invalid_score".into(),
                    message: "no".into(),
                },
            }],
        };
        out.add(batch, &[10, 12, 13]);
        assert_eq!((out.imported, out.failed), (2, 2));
        assert_eq!(out.errors[0].line, Some(12));
    }
}
