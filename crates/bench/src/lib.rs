//! podium's benchmark suite (SPEC §7), run by `podium bench SCENARIO`.
//!
//! - [`alloc`]: the counting global allocator for memory figures (installed
//!   by the binaries, not by this library).
//! - [`report`]: the JSON record and the terminal table every scenario uses.
//! - [`engine`]: the in-process `engine` scenario, podium's `Board` against
//!   a std-collections leaderboard.

pub mod alloc;
pub mod engine;
pub mod report;
