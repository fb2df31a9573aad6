//! The bounds on live-event filters, whatever the engine: how many filters
//! may watch one member, how many one board may have, how many the process
//! may hold, and how long a filter nobody reads is kept for a resuming
//! subscriber. Set once at start by the server (`--events-*` settings);
//! each engine asks [`admit`] before it adds a filter and holds a
//! [`Counted`] for each filter it keeps.
//!
//! A filter costs every write to what it watches (its events are made and
//! pushed for each write), and memory, so the bounds keep subscribers from
//! slowing writes or exhausting the process: past one, or past the memory
//! budget, a new filter is refused, and subscribers of existing filters
//! (which cost nothing more) still join.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use crate::error::{ApiError, Code};
use crate::memory;

/// Default of [`Limits::per_member`].
pub const DEFAULT_PER_MEMBER: usize = 1_000;
/// Default of [`Limits::per_board`].
pub const DEFAULT_PER_BOARD: usize = 10_000;
/// Default of [`Limits::total`].
pub const DEFAULT_TOTAL: usize = 100_000;
/// Default of [`Limits::retain`].
pub const DEFAULT_RETAIN: Duration = Duration::from_secs(10);

/// The bounds in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most filters watching one member of a board.
    pub per_member: usize,
    /// Most filters of one board.
    pub per_board: usize,
    /// Most filters of the process.
    pub total: usize,
    /// How long a filter is kept after its last subscriber left (for a
    /// subscriber that resumes); webhooks keep theirs for good.
    pub retain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_member: DEFAULT_PER_MEMBER,
            per_board: DEFAULT_PER_BOARD,
            total: DEFAULT_TOTAL,
            retain: DEFAULT_RETAIN,
        }
    }
}

static PER_MEMBER: AtomicUsize = AtomicUsize::new(DEFAULT_PER_MEMBER);
static PER_BOARD: AtomicUsize = AtomicUsize::new(DEFAULT_PER_BOARD);
static TOTAL: AtomicUsize = AtomicUsize::new(DEFAULT_TOTAL);
static RETAIN_MS: AtomicU64 = AtomicU64::new(DEFAULT_RETAIN.as_millis() as u64);
/// Filters the process holds now.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// Sets the bounds (once, at start; tests may set them again).
pub fn set(l: Limits) {
    PER_MEMBER.store(l.per_member, Relaxed);
    PER_BOARD.store(l.per_board, Relaxed);
    TOTAL.store(l.total, Relaxed);
    RETAIN_MS.store(l.retain.as_millis() as u64, Relaxed);
}

/// The bounds in force.
pub fn current() -> Limits {
    Limits {
        per_member: PER_MEMBER.load(Relaxed),
        per_board: PER_BOARD.load(Relaxed),
        total: TOTAL.load(Relaxed),
        retain: retain(),
    }
}

/// How long a filter nobody reads is kept.
pub fn retain() -> Duration {
    Duration::from_millis(RETAIN_MS.load(Relaxed))
}

/// Filters the process holds now.
pub fn held() -> usize {
    HELD.load(Relaxed)
}

/// One filter counted against [`Limits::total`] while it lives.
#[derive(Debug)]
pub struct Counted(());

impl Counted {
    /// A filter added without asking [`admit`] (a webhook's: the board's
    /// config names it, and its bound is the config's).
    pub fn new() -> Counted {
        HELD.fetch_add(1, Relaxed);
        Counted(())
    }
}

impl Default for Counted {
    fn default() -> Self {
        Counted::new()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        HELD.fetch_sub(1, Relaxed);
    }
}

/// Whether a new filter may be added to `board`, which has `board_filters`
/// filters, where the busiest member the filter watches is watched by
/// `member_filters` (0 for a filter of no member). The engine calls it
/// after dropping what it may drop, under the lock it adds the filter
/// with; the filter is counted from the [`Counted`] it answers.
pub fn admit(
    board: &str,
    board_filters: usize,
    member_filters: usize,
) -> Result<Counted, ApiError> {
    let l = current();
    let refuse = |what: String| {
        Err(ApiError::new(
            Code::TooManyClients,
            format!(
                "cannot watch board {board:?} with a new filter: {what}; subscribe with a \
                 filter already in use, or try again once subscribers leave"
            ),
        )
        .retry_after(1))
    };
    if member_filters >= l.per_member {
        return refuse(format!(
            "a member it names is watched by {member_filters} filters already \
             (events_max_filters_per_member = {})",
            l.per_member
        ));
    }
    if board_filters >= l.per_board {
        return refuse(format!(
            "the board has {board_filters} filters already (events_max_filters_per_board = {})",
            l.per_board
        ));
    }
    let held = held();
    if held >= l.total {
        return refuse(format!(
            "the server holds {held} filters already (events_max_filters = {})",
            l.total
        ));
    }
    // A filter's rings and watch lists are memory like a write's data.
    if memory::full() {
        return Err(memory::refusal());
    }
    Ok(Counted::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_refuses_in_its_words() {
        let e = admit("b", 0, DEFAULT_PER_MEMBER).unwrap_err();
        assert_eq!(e.code, Code::TooManyClients);
        assert!(
            e.message.contains("events_max_filters_per_member"),
            "{}",
            e.message
        );
        let e = admit("b", DEFAULT_PER_BOARD, 0).unwrap_err();
        assert!(
            e.message.contains("events_max_filters_per_board"),
            "{}",
            e.message
        );
        let c = admit("b", 0, 0).unwrap();
        assert!(held() >= 1);
        drop(c);
    }
}
