//! Player search (docs/spec.md §3): Picky-style prefix queries over the members'
//! names (and any `data` fields listed in the board's `search_fields`),
//! answered in leaderboard order with ranks.
//!
//! ```
//! use podium_engine::{Board, BoardConfig, Submit};
//! use podium_engine::search::{SearchError, SearchOptions};
//! let mut b = Board::new(BoardConfig::default()).unwrap();
//! b.submit(&Submit { name: Some("José Alvarez"), ..Submit::new(b"p1", 10.0) }).unwrap();
//! b.submit(&Submit { name: Some("Alice Jones"), ..Submit::new(b"p2", 20.0) }).unwrap();
//! // A board is indexed on demand: the first search says so…
//! assert_eq!(b.search("al", &SearchOptions::default()).unwrap_err(), SearchError::NotIndexed);
//! // …the caller (holding the write lock) builds the index once…
//! b.enable_search().unwrap();
//! // …and from then on every write keeps it current, and reads need `&self`.
//! let page = b.search("jose al", &SearchOptions::default()).unwrap();
//! assert_eq!(page.total, 1);
//! assert_eq!(page.entries[0].member, b"p1");
//! let page = b.search("al", &SearchOptions::default()).unwrap();
//! assert_eq!((page.total, page.entries[0].rank), (2, 1)); // p2 first: best score
//! ```
//!
//! Layout: [`text`] tokenises, `query` parses, `index` holds the per-board
//! index and `exec` plans and runs a query against a [`crate::Board`].
//! docs/search.md explains the semantics and the decisions.

mod exec;
pub(crate) mod index;
pub mod query;
pub mod text;

pub use query::{parse, QToken};
pub use text::tokenize;

/// Word occurrences indexed per member at most (the rest of a long text is
/// not searchable); other stores of the index (the Redis backend) apply it too.
pub const MAX_MEMBER_WORDS: usize = index::MAX_MEMBER_WORDS;
/// Indexed words are cut to this many bytes ([`text::clip`]).
pub const MAX_WORD_BYTES: usize = text::MAX_WORD_BYTES;

use crate::board::Entry;
use crate::config::Ranking;

/// Longest query accepted, in bytes (refused before any work).
pub const MAX_QUERY_BYTES: usize = 2048;
/// Most query words (after tokenising) a query may hold.
pub const MAX_TOKENS: usize = 16;
/// Longest query word, in bytes after folding.
pub const MAX_TOKEN_BYTES: usize = 64;
/// Most entries a board's `search_fields` may list.
pub const MAX_SEARCH_FIELDS: usize = 16;
/// The page size when none is asked for.
pub const DEFAULT_LIMIT: u64 = 25;

/// How a query is answered. Every plan gives the same page and total;
/// `Auto` picks the cheaper, the others exist so tests can compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Plan {
    #[default]
    Auto,
    /// Gather the matching members from the rarest query word's postings
    /// (or a first-character plane), then sort them into rank order.
    Intersect,
    /// Walk the board in rank order, testing each member, until the page
    /// is full.
    Scan,
    /// Walk a ranked level in rank order — the members with at least two
    /// words starting with one char, which every match of a query such as
    /// `a* a` or `al a` is among — testing each, until the page is full;
    /// then look up the page's ranks. Forced on a query with no such
    /// level (no two query words start with a char that has a plane), it
    /// runs `Scan`.
    Level,
}

/// Paging and planning of one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Entries wanted at most (0: only the total).
    pub limit: u64,
    /// Matches skipped first (best first).
    pub offset: u64,
    pub plan: Plan,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            limit: DEFAULT_LIMIT,
            offset: 0,
            plan: Plan::Auto,
        }
    }
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// Matching members in leaderboard order (best first), each with its
    /// rank in the board's ranking mode, score, name and data.
    pub entries: Vec<Entry>,
    /// Every member that matches (not only this page).
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
    pub ranking: Ranking,
    /// The plan that ran (`Intersect`, `Scan` or `Level`; never `Auto`).
    pub plan: Plan,
    /// The board's sort key names, labelling the entries' `scores` (none
    /// on a plain board).
    pub keys: Vec<String>,
}

/// A search's answer but for its entries ([`crate::Board::search_with`]
/// hands those over in place).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHead {
    /// Every member that matches (not only this page).
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
    pub ranking: Ranking,
    /// The plan that ran (`Intersect`, `Scan` or `Level`; never `Auto`).
    pub plan: Plan,
}

/// Why a search was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The board has no index yet: take the write lock, call
    /// [`crate::Board::enable_search`] and search again.
    #[error("the board is not indexed for search yet")]
    NotIndexed,
    /// The board's `search_fields` is empty.
    #[error("search is disabled on this board (its search_fields is empty)")]
    Disabled,
    #[error("the query has no word to search for")]
    EmptyQuery,
    #[error("unknown search field {field:?}; this board searches {known:?}")]
    UnknownField { field: String, known: Vec<String> },
    #[error("search field {field:?} is followed by no word")]
    EmptyField { field: String },
    #[error("the query has more than {max} words")]
    TooManyTokens { max: usize },
    #[error("a query word is {len} bytes long; at most {max} are allowed")]
    TokenTooLong { len: usize, max: usize },
    #[error("the query is {len} bytes long; at most {max} are allowed")]
    QueryTooLong { len: usize, max: usize },
}

impl SearchError {
    /// True for errors in the query itself (a client error), false for
    /// `NotIndexed` and `Disabled`, which are about the board.
    pub fn is_bad_query(&self) -> bool {
        !matches!(self, SearchError::NotIndexed | SearchError::Disabled)
    }
}
