//! `submit` and `submit_many`: scores in. A batch is read the same by
//! every frontend: entries one by one, the first bad one refusing the
//! whole batch with its position. Bulk writes of checked records (the
//! engine's speed path, and `import`) are [`crate::entry::SubmitRec`]s.

use crate::api::{SubmitIn, SubmitItem, SubmitOut};
use crate::error::ApiError;
use crate::ops::operation;

/// One entry; an entry error is the call's error.
#[derive(Debug, Clone)]
pub struct Submit {
    pub board: String,
    pub entry: SubmitIn,
}

/// Entries applied in order, atomically: input errors refuse the whole
/// batch, state-dependent ones fail their own item.
#[derive(Debug, Clone)]
pub struct SubmitMany {
    pub board: String,
    pub entries: Vec<SubmitIn>,
}

operation! {
    Submit => Submit, submit_one -> SubmitOut;
    SubmitMany => Submit, submit -> Vec<SubmitItem>;
}

/// The entries of a batch, each read by `read` from its wire value; an
/// error names the entry's 0-based position.
pub fn batch<V>(
    items: impl IntoIterator<Item = V>,
    read: impl Fn(V) -> Result<SubmitIn, ApiError>,
) -> Result<Vec<SubmitIn>, ApiError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            read(v).map_err(|e| ApiError::new(e.code, format!("entry {i}: {}", e.message)))
        })
        .collect()
}
