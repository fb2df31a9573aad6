//! The operations a generated sequence applies, and the reads it checks.

use super::*;

// ================================================================ operations

#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Fills the board: one `submit` each (a batch would be refused whole
    /// by one out-of-bounds score).
    Prefill(Vec<Sub>),
    Submit(Sub),
    SubmitMany(Vec<Sub>),
    Remove(Vec<Mem>),
    RemoveRangeByRank(u64, u64),
    RemoveRangeByScore(ScoreRange),
    Pop(u64, bool),
    SetData(Mem, Option<String>, Option<String>),
    Clear,
    /// `take`; `true`: carry on with the taken board, else with the fresh one.
    Take(bool),
    SetConfig(BoardConfig),
    /// Snapshot round trip; `true`: carry on with the restored board.
    Snapshot(bool),
    /// Runs the op on a read-only board, then makes it writable again.
    ReadOnly(Box<Op>),
}

#[derive(Debug, Clone)]
pub(crate) enum Read {
    Entry(Mem, u64),
    Rank(Mem),
    Score(Mem),
    Position(Mem),
    Percentile(Mem),
    Count(ScoreRange),
    Top(u64, u64),
    RangeByRank(u64, u64, bool),
    RangeByScore(ScoreRange, bool, u64, u64),
    Around(Mem, u64),
    Ranks(Vec<Mem>),
    ScoreAtPercentile(f64),
    EntriesFrom(usize, usize),
    RankMany(Vec<Mem>),
    ScoreMany(Vec<Mem>),
}

pub(crate) type Step = (Op, Vec<Read>);
