//! What a range request names, read the same from every protocol: by rank
//! (`start`..=`stop`, 1-based) or by score (bounds in Redis syntax), and
//! from which end.

use crate::api::parse_score;
use crate::backend::RangeBounds;
use crate::error::ApiError;

/// A range by rank or by score.
#[derive(Debug, Clone, Copy)]
pub enum RangeBy {
    Rank { start: u64, stop: u64 },
    Score(RangeBounds),
}

/// A score bound's text in Redis syntax: a number, `-inf`, `+inf`/`inf`,
/// with `(` in front for an exclusive bound. `name` is the parameter's.
pub fn bound(name: &str, s: &str) -> Result<(f64, bool), ApiError> {
    let (exclusive, rest) = match s.strip_prefix('(') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = parse_score(rest).map_err(|e| bad_bound(name, &e))?;
    Ok((v, exclusive))
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
