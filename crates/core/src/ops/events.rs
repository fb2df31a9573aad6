//! `subscribe`: a board's live events, from now or resumed after an event
//! id (docs/spec.md §5).

use crate::error::ApiError;
use crate::events::{EventId, Filter, Subscription};
use crate::ops::operation;

/// A subscription to `board`'s events that `filter` selects. `since`: the
/// id of the last event the subscriber saw; the events after it come
/// first, or a `reload` event when they are no longer kept.
#[derive(Debug, Clone)]
pub struct Subscribe {
    pub board: String,
    pub filter: Filter,
    pub since: Option<EventId>,
}

impl Subscribe {
    /// Checks the board name (the board itself need not exist yet: a
    /// subscriber may wait for it to be created).
    pub fn check(&self) -> Result<(), ApiError> {
        podium_engine::Store::validate_name(&self.board).map_err(ApiError::from)
    }
}

operation! {
    Subscribe => Subscribe, subscribe -> Subscription;
}
