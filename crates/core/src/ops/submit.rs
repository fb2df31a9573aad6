//! `submit_many`'s batch as every frontend reads it: entries read one by
//! one, the first bad one refusing the whole batch with its position.

use crate::api::SubmitIn;
use crate::error::ApiError;

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
