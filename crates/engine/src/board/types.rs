//! What a board's operations take and return: submissions and their
//! results, entries, pages, score ranges and the aggregates of merges.

use super::*;

/// Which existing/new members a submission may touch (Redis NX / XX).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Presence {
    #[default]
    Any,
    /// Only add new members (NX).
    OnlyNew,
    /// Only update existing members (XX).
    OnlyExisting,
}

/// An extra condition on updating an existing member (Redis GT / LT),
/// tested against the score the operator produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cond {
    #[default]
    Always,
    Greater,
    Less,
}

/// One submission (docs/spec.md §2 `submit`).
#[derive(Debug, Clone, Default)]
pub struct Submit<'a> {
    pub member: &'a [u8],
    pub score: f64,
    /// Overrides the board's `update` operator for this call.
    pub op: Option<UpdateOp>,
    pub presence: Presence,
    pub cond: Cond,
    /// `Some` sets the display name (`Some("")` clears it).
    pub name: Option<&'a str>,
    /// `Some` sets the JSON object (`Some("")` clears it).
    pub data: Option<&'a str>,
    /// A board with `sort` keys: values by key name (a key left out is
    /// allowed under `incr` only, and left as it is). `score` is then
    /// ignored. Without it, `score` is the first key's value and the other
    /// keys are left as they are (0 for a new member). A plain board
    /// refuses it.
    pub scores: Option<&'a [(String, Num)]>,
}

impl<'a> Submit<'a> {
    pub fn new(member: &'a [u8], score: f64) -> Self {
        Submit {
            member,
            score,
            ..Default::default()
        }
    }
}

/// What a submission did.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitResult {
    /// The member's score afterwards (`None`: not on the board).
    pub score: Option<f64>,
    /// The member's rank afterwards, in the board's ranking mode.
    pub rank: Option<u64>,
    /// The score before, if the member existed.
    pub previous: Option<f64>,
    /// The operator ran (false when NX/XX, GT/LT or `best` stopped it).
    pub applied: bool,
    /// The member was added.
    pub created: bool,
    /// The member was added or its score changed.
    pub changed: bool,
    /// Members evicted by `max_members` (possibly this one).
    pub evicted: u64,
    /// A board with `sort` keys: the member's values afterwards.
    pub scores: Option<Scores>,
    /// A board with `sort` keys: the values before, if the member existed.
    pub previous_scores: Option<Scores>,
}

impl SubmitResult {
    /// A submission that touched nothing (XX of an absent member).
    pub(super) fn absent() -> SubmitResult {
        SubmitResult {
            score: None,
            rank: None,
            previous: None,
            applied: false,
            created: false,
            changed: false,
            evicted: 0,
            scores: None,
            previous_scores: None,
        }
    }
}

/// A member as a read returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub member: Vec<u8>,
    /// The score; on a board with `sort` keys, the first key's value.
    pub score: f64,
    /// A board with `sort` keys: every key's value.
    pub scores: Option<Scores>,
    /// 1-based, in the board's ranking mode.
    pub rank: u64,
    pub name: Option<Arc<str>>,
    pub data: Option<Arc<str>>,
}

/// An entry borrowed from the board, for readers that encode entries
/// straight into their output (an export of millions) instead of copying
/// each into an [`Entry`] first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EntryRef<'a> {
    pub member: &'a [u8],
    pub score: f64,
    pub scores: Option<Scores>,
    /// The board's sort keys, naming `scores` (none on a plain board).
    pub keys: &'a [crate::sort::SortKey],
    /// 1-based, in the board's ranking mode.
    pub rank: u64,
    pub name: Option<&'a str>,
    pub data: Option<&'a str>,
}

/// `entry`: a member with everything a profile screen shows.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryInfo {
    pub entry: Entry,
    pub percentile: f64,
    /// The page (1-based) holding the member at the requested page size.
    pub page: u64,
    pub ranking: Ranking,
}

/// `top`: one page of the board.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub entries: Vec<Entry>,
    pub page: u64,
    pub page_size: u64,
    pub total: u64,
    pub total_pages: u64,
    pub ranking: Ranking,
}

/// `around`: the page centred on a member.
#[derive(Debug, Clone, PartialEq)]
pub struct Around {
    pub entries: Vec<Entry>,
    /// The centre member's rank.
    pub rank: u64,
    pub total: u64,
    pub ranking: Ranking,
}

/// `ranks`: the requested members that exist, best first, and the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranks {
    pub entries: Vec<Entry>,
    pub missing: Vec<Vec<u8>>,
    pub ranking: Ranking,
}

/// `board_info`.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardInfo {
    pub members: u64,
    pub config: BoardConfig,
    pub read_only: bool,
    pub heap_bytes: u64,
}

/// A score interval (`min` ≤ `max` numerically; either end may be open or
/// unbounded), as in Redis's `(1.5` and `-inf` bounds. Bounds are doubles,
/// or [`Num`]s: an integer bound is exact on a board whose first sort key
/// is an `int` (a double cannot tell 2^53 from 2^53 + 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange<T = f64> {
    pub min: Bound<T>,
    pub max: Bound<T>,
}

/// A bound's value: a double or a [`Num`].
pub trait RangeValue: Copy {
    fn value(self) -> Num;
}

impl RangeValue for f64 {
    #[inline]
    fn value(self) -> Num {
        Num::Float(self)
    }
}

impl RangeValue for Num {
    #[inline]
    fn value(self) -> Num {
        self
    }
}

impl<T: RangeValue> ScoreRange<T> {
    /// The range with its bounds as doubles.
    pub fn floats(&self) -> ScoreRange<f64> {
        ScoreRange {
            min: self.min.map(|v| v.value().as_f64()),
            max: self.max.map(|v| v.value().as_f64()),
        }
    }

    pub(super) fn validate(&self) -> Result<()> {
        for b in [self.min, self.max] {
            if let Bound::Included(x) | Bound::Excluded(x) = b {
                if x.value().as_f64().is_nan() {
                    return Err(Error::NanScore);
                }
            }
        }
        Ok(())
    }
}

impl ScoreRange {
    pub fn all() -> Self {
        ScoreRange {
            min: Bound::Unbounded,
            max: Bound::Unbounded,
        }
    }
    pub fn inclusive(min: f64, max: f64) -> Self {
        ScoreRange {
            min: Bound::Included(min),
            max: Bound::Included(max),
        }
    }
}

/// How `merge`/`intersect` combine one member's weighted scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`: a sum that is NaN (`inf + -inf`,
    /// or a NaN weighted score) becomes 0; MIN and MAX keep the accumulator
    /// unless the new value compares less / greater, so a NaN never wins.
    pub fn apply(self, acc: f64, x: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let r = acc + x;
                if r.is_nan() {
                    0.0
                } else {
                    r
                }
            }
            Aggregate::Min => {
                if x < acc {
                    x
                } else {
                    acc
                }
            }
            Aggregate::Max => {
                if x > acc {
                    x
                } else {
                    acc
                }
            }
        }
    }
}
