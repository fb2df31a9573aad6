//! podium's ranking engine: pure data structures, no I/O, no async.
//!
//! - [`tree::CountedTree`]: a counted B+tree, the heart of the product —
//!   O(log n) insert, remove, rank-of-entry and entry-at-rank, with wide
//!   contiguous leaves of 12-byte entries.
//! - [`Board`]: one leaderboard with every option of docs/spec.md §1 and every
//!   non-I/O operation of docs/spec.md §2 (submit, ranges, around, percentiles,
//!   merge/intersect, snapshots…).
//! - [`search`]: player search by name (docs/spec.md §3), an index per board
//!   built on the first search and kept current by every write.
//! - [`Store`]: many named boards shared by every protocol: concurrent
//!   readers, one writer per board, no global lock on the hot path.
//! - [`hugepages::HugePages`]: the global-allocator wrapper that puts the
//!   engine's 2 MiB chunks on transparent huge pages, for the binaries to
//!   install.
//! - [`used::Used`]: the global-allocator wrapper that counts the bytes the
//!   process holds (the memory budget's measure), for the server to install.
//!
//! ```
//! use podium_engine::{Board, BoardConfig, Submit};
//! let mut b = Board::new(BoardConfig::default()).unwrap();
//! b.submit(&Submit::new(b"alice", 120.0)).unwrap();
//! b.submit(&Submit::new(b"bob", 300.0)).unwrap();
//! assert_eq!(b.rank(b"alice"), Some(2));
//! let page = b.top(1, 25).unwrap();
//! assert_eq!(page.entries[0].member, b"bob");
//! ```

pub mod board;
pub mod config;
pub mod error;
pub mod hugepages;
mod index;
mod members;
pub mod score;
pub mod search;
pub mod sort;
pub mod store;
pub mod tree;
pub mod used;
pub mod webhook;

pub use board::{
    Aggregate, Around, Board, BoardImage, BoardInfo, Cond, Entry, EntryInfo, EntryRef, Journal,
    OrderKey, Page, Presence, RangeValue, Ranks, ScoreRange, Submit, SubmitResult, Tie, Touch,
};
pub use config::{ArchiveOf, BoardConfig, Order, Ranking, Reset, SubmitLimit, Tiebreak, UpdateOp};
pub use error::{Error, Result};
pub use members::{check_member, Extra, MAX_MEMBER_BYTES, MAX_NAME_BYTES};
pub use search::{Plan, SearchError, SearchHead, SearchOptions, SearchPage};
pub use sort::{KeyOp, KeyType, Num, Scores, SortKey, MAX_SORT_KEYS};
pub use store::{HeapUse, Store};
pub use webhook::Webhook;
