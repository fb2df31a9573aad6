//! Ranges: `range_by_rank` and `range_by_score`, and what a range request
//! names, read the same from every protocol: by rank (`start`..=`stop`,
//! 1-based) or by score (bounds in Redis syntax), and from which end.

use crate::api::{parse_score, Num, RangeOut};
use crate::backend::RangeBounds;
use crate::error::ApiError;
use crate::ops::{operation, DEFAULT_PAGE_SIZE, MAX_RANGE};

/// Entries at 1-based ranks `start..=stop` (positions), best first, or
/// counted from the worst end with `from_worst`.
#[derive(Debug, Clone)]
pub struct RangeByRank {
    pub board: String,
    pub start: u64,
    pub stop: u64,
    pub from_worst: bool,
    pub with_data: bool,
}

impl RangeByRank {
    /// 1-based, inclusive, at most [`MAX_RANGE`] entries.
    pub fn check(&self) -> Result<(), ApiError> {
        let (start, stop) = (self.start, self.stop);
        if start == 0 || stop < start {
            return Err(ApiError::bad("ranks start at 1 and stop must be ≥ start"));
        }
        if stop - start >= MAX_RANGE {
            return Err(ApiError::bad(format!(
                "at most {MAX_RANGE} entries per call; use export for more"
            )));
        }
        Ok(())
    }
}

/// Entries scoring within `bounds`, best first (or worst first), skipping
/// `offset` of them and answering at most `limit`.
#[derive(Debug, Clone)]
pub struct RangeByScore {
    pub board: String,
    pub bounds: RangeBounds,
    pub from_worst: bool,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
    pub with_data: bool,
}

impl RangeByScore {
    pub fn offset(&self) -> u64 {
        self.offset.unwrap_or(0)
    }

    /// A page by default, [`MAX_RANGE`] at the most.
    pub fn limit(&self) -> u64 {
        self.limit.unwrap_or(DEFAULT_PAGE_SIZE).min(MAX_RANGE)
    }
}

operation! {
    RangeByRank => Range, range_by_rank -> RangeOut;
    RangeByScore => Range, range_by_score -> RangeOut;
}

/// A range by rank or by score.
#[derive(Debug, Clone, Copy)]
pub enum RangeBy {
    Rank { start: u64, stop: u64 },
    Score(RangeBounds),
}

/// A score bound's text in Redis syntax: a number, `-inf`, `+inf`/`inf`,
/// with `(` in front for an exclusive bound. `name` is the parameter's.
/// An integer's text stays an exact integer (a bound on an `int` sort
/// key beyond 2^53); any other number is a double.
pub fn bound(name: &str, s: &str) -> Result<(Num, bool), ApiError> {
    let (exclusive, rest) = match s.strip_prefix('(') {
        Some(r) => (true, r),
        None => (false, s),
    };
    if let Ok(i) = rest.parse::<i64>() {
        return Ok((Num::Int(i), exclusive));
    }
    let v = parse_score(rest).map_err(|e| bad_bound(name, &e))?;
    Ok((Num::Float(v), exclusive))
}

/// The error of a bound that is neither a number nor its text.
pub fn bad_bound(name: &str, why: &str) -> ApiError {
    ApiError::bad(format!(
        "{name} must be a number, -inf, +inf or (number: {why}"
    ))
}

/// `from`: `best` (the default) or `worst`; true for worst first.
pub fn from_worst(from: Option<&str>) -> Result<bool, ApiError> {
    match from {
        None | Some("best") => Ok(false),
        Some("worst") => Ok(true),
        Some(other) => Err(ApiError::bad(format!(
            "from must be best or worst, got {other:?}"
        ))),
    }
}
