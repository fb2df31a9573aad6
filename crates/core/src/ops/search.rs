//! `search`: a page of the members whose name or id matches a query.

use crate::api::SearchOut;
use crate::error::ApiError;
use crate::ops::{operation, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

/// A search request; `limit` and `offset` default to a page from the first
/// match.
#[derive(Debug, Clone)]
pub struct Search {
    pub board: String,
    pub query: String,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub with_data: bool,
}

impl Search {
    pub fn limit(&self) -> u64 {
        self.limit.unwrap_or(DEFAULT_PAGE_SIZE)
    }

    pub fn offset(&self) -> u64 {
        self.offset.unwrap_or(0)
    }

    /// At most a page of [`MAX_PAGE_SIZE`].
    pub fn check(&self) -> Result<(), ApiError> {
        if self.limit() > MAX_PAGE_SIZE {
            return Err(ApiError::bad(format!("limit is at most {MAX_PAGE_SIZE}")));
        }
        Ok(())
    }
}

operation! {
    Search => Search, search -> SearchOut;
}
