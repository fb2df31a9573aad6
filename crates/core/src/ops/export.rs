//! `export`: a board's entries, best first, read chunk by chunk so a huge
//! board never sits in memory twice. A write between chunks can shift
//! entries across a chunk boundary, as with Redis's ZSCAN.

use crate::api::ExportLine;
use crate::ops::operation;

/// One chunk: up to `limit` entries from position `pos` (0-based).
#[derive(Debug, Clone)]
pub struct ExportChunk {
    pub board: String,
    pub pos: usize,
    pub limit: usize,
}

operation! {
    ExportChunk => Export, export_chunk -> Vec<ExportLine>;
}
