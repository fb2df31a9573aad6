//! Reads of one member or one page: `board_info`, `boards`, `entry`,
//! `rank`, `count`, `top`, `around`, `ranks`, `percentile`,
//! `score_at_percentile`, and `resort_status`.

use crate::api::*;
use crate::backend::RangeBounds;
use crate::error::ApiError;
use crate::ops::{operation, page_size, MAX_RANGE};

/// One board's description.
#[derive(Debug, Clone)]
pub struct BoardInfo {
    pub board: String,
}

/// How far the re-ranking of a board by a `board_update` that changed its
/// order has gone (answered without waiting for the board).
#[derive(Debug, Clone)]
pub struct ResortStatus {
    pub board: String,
}

/// Every board with its size, archives included.
#[derive(Debug, Clone, Default)]
pub struct ListBoards;

/// A member's entry, percentile and page.
#[derive(Debug, Clone)]
pub struct GetEntry {
    pub board: String,
    pub member: String,
    /// Of the page the answer names (`None`: the default).
    pub page_size: Option<u64>,
}

impl GetEntry {
    /// The page size, checked.
    pub fn page_size(&self) -> Result<u64, ApiError> {
        page_size(self.page_size)
    }
}

/// A member's rank and score.
#[derive(Debug, Clone)]
pub struct Rank {
    pub board: String,
    pub member: String,
}

/// How many members score within `bounds`.
#[derive(Debug, Clone)]
pub struct Count {
    pub board: String,
    pub bounds: RangeBounds,
}

/// A page of the board, best first.
#[derive(Debug, Clone)]
pub struct Top {
    pub board: String,
    /// 1-based (`None`: the first).
    pub page: Option<u64>,
    pub page_size: Option<u64>,
    pub with_data: bool,
}

impl Top {
    /// The page and the page size, checked.
    pub fn page(&self) -> Result<(u64, u64), ApiError> {
        let ps = page_size(self.page_size)?;
        let page = self.page.unwrap_or(1);
        if page == 0 {
            return Err(ApiError::bad("page starts at 1"));
        }
        Ok((page, ps))
    }
}

/// The entries around a member: a page with it in the middle.
#[derive(Debug, Clone)]
pub struct Around {
    pub board: String,
    pub member: String,
    pub page_size: Option<u64>,
    pub with_data: bool,
}

impl Around {
    /// The page size, checked.
    pub fn page_size(&self) -> Result<u64, ApiError> {
        page_size(self.page_size)
    }
}

/// Several members' entries, best first, and those not on the board.
#[derive(Debug, Clone)]
pub struct Ranks {
    pub board: String,
    pub members: Vec<String>,
    pub with_data: bool,
}

impl Ranks {
    /// At most [`MAX_RANGE`] members.
    pub fn check(&self) -> Result<(), ApiError> {
        if self.members.len() as u64 > MAX_RANGE {
            return Err(ApiError::bad(format!(
                "at most {MAX_RANGE} members per call"
            )));
        }
        Ok(())
    }
}

/// A member's percentile.
#[derive(Debug, Clone)]
pub struct Percentile {
    pub board: String,
    pub member: String,
}

/// The entry at percentile `p` (0 to 100).
#[derive(Debug, Clone)]
pub struct ScoreAtPercentile {
    pub board: String,
    pub p: f64,
}

operation! {
    BoardInfo => BoardInfo, board_info -> BoardOut;
    ResortStatus => ResortStatus, resort_status -> ResortOut;
    ListBoards => Boards, boards -> BoardsOut;
    GetEntry => Entry, entry -> EntryInfoOut;
    Rank => Rank, rank -> RankOut;
    Count => Count, count -> CountOut;
    Top => Top, top -> TopOut;
    Around => Around, around -> AroundOut;
    Ranks => Ranks, ranks -> RanksOut;
    Percentile => Percentile, percentile -> PercentileOut;
    ScoreAtPercentile => ScoreAtPercentile, score_at_percentile -> ScoreAtOut;
}
