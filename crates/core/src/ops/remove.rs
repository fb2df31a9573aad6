//! `remove` and `remove_range`: members out, by id or by rank or score.

use crate::api::RemovedOut;
use crate::error::ApiError;
use crate::ops::operation;
use crate::ops::range::RangeBy;

/// Members out by id; those not on the board are ignored.
#[derive(Debug, Clone)]
pub struct Remove {
    pub board: String,
    pub members: Vec<String>,
}

/// Members out by 1-based rank (`start..=stop`) or by score.
#[derive(Debug, Clone)]
pub struct RemoveRange {
    pub board: String,
    pub by: RangeBy,
}

impl RemoveRange {
    /// A rank range must start at 1 or later and not end before it starts
    /// (unlike a read, it has no size limit).
    pub fn check(&self) -> Result<(), ApiError> {
        match self.by {
            RangeBy::Rank { start, stop } if start == 0 || stop < start => {
                Err(ApiError::bad("ranks start at 1 and stop must be ≥ start"))
            }
            _ => Ok(()),
        }
    }
}

operation! {
    Remove => Remove, remove -> RemovedOut;
    RemoveRange => RemoveRange, remove_range -> RemovedOut;
}
