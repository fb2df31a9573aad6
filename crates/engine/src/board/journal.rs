//! What a watched board records of its writes, for the live rank events:
//! every member entering or leaving the ranked tree, with its place in the
//! board's order ([`OrderKey`]). A write to a board nobody watches records
//! nothing (one branch on an `Option`).
//!
//! An update is recorded as the member leaving at its old place and
//! entering at its new one, in that order, so whoever reads the journal
//! sees each step's two places side by side. Operations that rebuild the
//! board (a clear, a reset's take, a re-sort, a content replacement) do not
//! record each member: they mark the journal [`Journal::all`] instead, and
//! the reader compares everything it watches.

use std::cmp::Reverse;

use smallvec::SmallVec;

/// A key's sort values, held inline (a board has at most
/// [`crate::sort::MAX_SORT_KEYS`]): keys are compared often while the
/// watched members are searched, and a pointer to follow each time costs
/// more than the comparison.
pub type Codes = SmallVec<[u64; crate::sort::MAX_SORT_KEYS]>;

/// How two members with equal sort values are ordered, as a value: the
/// tiebreak part of an [`OrderKey`]. Every key of one board has the same
/// variant. `Min` and `Max` are bounds below and above every member, for
/// ranges that take "every member with these values".
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tie {
    Min,
    /// `tiebreak: member` on an ascending board: member bytes, ascending.
    Bytes(Box<[u8]>),
    /// `tiebreak: member` on a descending board.
    BytesRev(Reverse<Box<[u8]>>),
    /// `tiebreak: first`: earlier submission first.
    Seq(u64),
    /// `tiebreak: last`: later submission first.
    SeqRev(Reverse<u64>),
    Max,
}

/// A member's place in its board's order, comparable with any other key of
/// the same board: smaller is better ranked. `codes` are the sort values
/// in the tree's order (the first key's tree key, then the other keys'
/// codes), so two members tie in competition and dense ranking exactly
/// when their `codes` are equal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey {
    pub codes: Codes,
    pub tie: Tie,
}

impl OrderKey {
    /// The lowest key with these values (below every member holding them).
    pub fn first_of(codes: &[u64]) -> OrderKey {
        OrderKey {
            codes: Codes::from_slice(codes),
            tie: Tie::Min,
        }
    }

    /// The highest key with these values (above every member holding them).
    pub fn last_of(codes: &[u64]) -> OrderKey {
        OrderKey {
            codes: Codes::from_slice(codes),
            tie: Tie::Max,
        }
    }
}

/// One member entering or leaving the ranked tree.
#[derive(Debug, Clone)]
pub struct Touch {
    pub member: Box<[u8]>,
    /// Where it entered or where it left.
    pub key: OrderKey,
    /// Its position in the tree (0 = best): where it entered, or where it
    /// was before it left. An update whose two positions are equal passed
    /// nobody on a board of unique ranks.
    pub pos: usize,
    /// Entered (`true`) or left.
    pub entered: bool,
    /// On a dense board: it was the first member to hold these values
    /// (entered) or the last one (left), so the distinct values changed.
    /// Always `false` on other boards.
    pub edge: bool,
}

/// The steps recorded since the reader last took them.
#[derive(Debug, Default)]
pub struct Journal {
    pub touches: Vec<Touch>,
    /// The board was rebuilt or emptied as a whole: compare everything.
    pub all: bool,
}

impl Journal {
    pub fn is_empty(&self) -> bool {
        self.touches.is_empty() && !self.all
    }
}

/// The journal slot of a board. A copy of a board (an archive, a COPY) is
/// not watched: cloning gives an empty slot.
#[derive(Debug, Default)]
pub(crate) struct Slot(pub(crate) Option<Box<Journal>>);

impl Clone for Slot {
    fn clone(&self) -> Self {
        Slot(None)
    }
}

impl Slot {
    /// The journal, if the board is watched and not already marked `all`
    /// (then single steps are not worth recording).
    #[inline]
    pub(crate) fn recording(&mut self) -> Option<&mut Journal> {
        match self.0.as_deref_mut() {
            Some(j) if !j.all => Some(j),
            _ => None,
        }
    }

    /// Marks a watched board's journal: everything may have changed.
    pub(crate) fn mark_all(&mut self) {
        if let Some(j) = self.0.as_deref_mut() {
            j.touches.clear();
            j.all = true;
        }
    }
}
