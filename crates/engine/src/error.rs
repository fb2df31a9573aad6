//! The engine's error type: every way an operation can be refused.

use thiserror::Error;

/// Why the engine refused an operation. Nothing is changed when one is returned.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    #[error("score is not a number")]
    NanScore,
    #[error("resulting score is not a number")]
    NanResult,
    #[error("score {score} is outside the board's bounds [{min}, {max}]")]
    OutOfBounds { score: f64, min: f64, max: f64 },
    #[error("member id must be 1 to {max} bytes, got {len}")]
    BadMember { len: usize, max: usize },
    #[error("board name must be 1 to 200 bytes of UTF-8 without control characters")]
    BadBoardName,
    #[error("member data must be a JSON object of at most {max} bytes")]
    BadData { max: usize },
    /// Data over the board's `max_data_bytes`.
    #[error("member data is {len} bytes; this board keeps at most {max} (its max_data_bytes)")]
    DataTooLarge { len: usize, max: usize },
    #[error("member name must be at most {max} bytes")]
    BadName { max: usize },
    #[error("board is full: its member ids would take more than {max} bytes")]
    BoardFull { max: usize },
    #[error("invalid config: {0}")]
    BadConfig(String),
    #[error("invalid argument: {0}")]
    BadArgument(String),
    /// A submission of the other kind than the board's config takes
    /// (`scores` to a plain board, a sort key it does not have, keys left
    /// out of a `set`): right for another board, so a conflict with this
    /// one's state rather than a malformed request.
    #[error("{0}")]
    WrongKind(String),
    #[error("board {0:?} not found")]
    NoSuchBoard(String),
    #[error("board {0:?} already exists")]
    BoardExists(String),
    #[error("board {0:?} is a read-only archive")]
    ReadOnly(String),
    #[error("snapshot is corrupt: {0}")]
    CorruptSnapshot(String),
    /// A search was refused (a bad query, or the board is not searchable).
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
