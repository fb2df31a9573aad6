//! `import`: entries applied in batches, each one durable commit, where an
//! entry that fails fails alone and the rest apply. HTTP (an NDJSON or CSV
//! body read as a stream) and MessagePack-RPC (one batch per call) feed the
//! same [`Importer`], which owns the algorithm: the engine refuses a whole
//! batch when one entry fails its checks (a bad member id, a score out of
//! the board's bounds, data too large), applying nothing; the batch is then
//! halved, recursively, until the bad entries stand alone and fail as their
//! lines. Refused attempts write nothing, so they cost no commit, and the
//! order of the entries is kept. Errors of the board itself (read-only,
//! storage) end the import.

use serde::Serialize;

use crate::api::{ErrorBody, SubmitIn};
use crate::backend::Backend;
use crate::entry::SubmitRec;
use crate::error::{ApiError, Code};

/// How many line errors an `import` answer lists: those of the first lines.
pub const MAX_IMPORT_ERRORS: usize = 100;

/// One entry that failed alone: its 1-based line (or position in the
/// batch), its member id when one could be read, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LineError {
    pub line: u64,
    pub member: Option<String>,
    pub error: ErrorBody,
}

/// An `import` answer.
#[derive(Debug, Clone, Serialize)]
pub struct ImportOut {
    pub board: String,
    pub imported: u64,
    pub failed: u64,
    pub errors: Vec<LineError>,
}

/// Errors that belong to one entry, not to the board or the server.
pub fn entry_error(c: Code) -> bool {
    matches!(
        c,
        Code::InvalidMember | Code::InvalidScore | Code::InvalidData | Code::InvalidArgument
    )
}

/// An import under way: entries are pushed with their line numbers and
/// applied by [`Importer::flush`].
pub struct Importer<'a> {
    be: &'a dyn Backend,
    board: String,
    batch: Vec<SubmitRec>,
    lines: Vec<u64>,
    imported: u64,
    failed: u64,
    /// Errors of the lines of the pending batch.
    pending: Vec<LineError>,
    /// Errors of applied batches: the first lines', sorted.
    errors: Vec<LineError>,
}

impl<'a> Importer<'a> {
    pub fn new(be: &'a dyn Backend, board: String, batch: usize) -> Self {
        Importer {
            be,
            board,
            batch: Vec::with_capacity(batch),
            lines: Vec::with_capacity(batch),
            imported: 0,
            failed: 0,
            pending: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Entries waiting for [`Importer::flush`].
    pub fn pending(&self) -> usize {
        self.batch.len()
    }

    /// Line `line` failed before reaching the engine (it could not be read).
    pub fn fail(&mut self, line: u64, member: Option<String>, e: &ApiError) {
        self.failed += 1;
        // Lines arrive in order, so once the list is full a later line's
        // error could not make it: keeping it would only hold memory.
        if self.errors.len() + self.pending.len() < MAX_IMPORT_ERRORS {
            self.pending.push(LineError {
                line,
                member,
                error: ErrorBody::from(e),
            });
        }
    }

    /// Adds line `line`'s entry to the batch, or fails it alone if its
    /// options are refused.
    pub fn push(&mut self, line: u64, e: SubmitIn) {
        match SubmitRec::from_entry(e) {
            Ok(rec) => self.push_record(line, rec),
            Err((err, member)) => self.fail(line, Some(member), &err),
        }
    }

    /// [`Importer::push`] of an entry already checked.
    pub fn push_record(&mut self, line: u64, rec: SubmitRec) {
        self.batch.push(rec);
        self.lines.push(line);
    }

    /// Applies the pending batch (see the module's doc).
    pub async fn flush(&mut self) -> Result<(), ApiError> {
        // An import may be far larger than any request: the budget is
        // checked for each batch, not once at the start.
        if !self.batch.is_empty() {
            crate::memory::admit(crate::op::Op::Import)?;
        }
        let mut recs = std::mem::take(&mut self.batch);
        let lines = std::mem::take(&mut self.lines);
        let n = lines.len();
        let member = |r: &SubmitRec| Some(String::from_utf8_lossy(&r.member).into_owned());
        let mut todo = vec![(0, n)];
        while let Some((a, b)) = todo.pop() {
            if a == b {
                continue;
            }
            // The whole batch is handed over, and comes back only if the
            // engine refused it as a whole; parts are copied (after a
            // refusal only).
            let whole = a == 0 && b == n && recs.len() == n;
            let part = if whole {
                std::mem::take(&mut recs)
            } else {
                recs[a..b].to_vec()
            };
            let refused = match self.be.import_records(&self.board, part).await {
                Ok((items, part)) => {
                    for ((&line, rec), item) in lines[a..b].iter().zip(&part).zip(items) {
                        match item {
                            Ok(()) => self.imported += 1,
                            Err(error) => {
                                self.failed += 1;
                                self.pending.push(LineError {
                                    line,
                                    member: member(rec),
                                    error,
                                });
                            }
                        }
                    }
                    if whole {
                        recs = part;
                    }
                    continue;
                }
                Err((e, back)) => {
                    if whole {
                        if back.len() != n {
                            return Err(self.stopped(e));
                        }
                        recs = back;
                    }
                    e
                }
            };
            if !entry_error(refused.code) {
                return Err(self.stopped(refused));
            }
            if b - a > 1 {
                let mid = a + (b - a) / 2;
                todo.push((mid, b));
                todo.push((a, mid));
            } else {
                let m = member(&recs[a]);
                self.failed += 1;
                self.pending.push(LineError {
                    line: lines[a],
                    member: m,
                    error: ErrorBody::from(&refused),
                });
            }
        }
        // Lines of earlier batches come before this batch's: sorting the
        // batch's errors keeps the list sorted.
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|e| e.line);
        self.errors.extend(pending);
        self.errors.truncate(MAX_IMPORT_ERRORS);
        // The buffers are kept for the next batch.
        recs.clear();
        self.batch = recs;
        let mut lines = lines;
        lines.clear();
        self.lines = lines;
        Ok(())
    }

    /// An error of the board itself, saying how far the import got.
    fn stopped(&self, mut e: ApiError) -> ApiError {
        if self.imported > 0 {
            e.message = format!(
                "{} (the import stopped; {} entries were imported before)",
                e.message, self.imported
            );
        }
        e
    }

    /// The answer, once every batch is flushed.
    pub fn finish(self) -> ImportOut {
        ImportOut {
            board: self.board,
            imported: self.imported,
            failed: self.failed,
            errors: self.errors,
        }
    }
}
