//! `subscribe`: a board's live events, from now or resumed after an event
//! id (docs/spec.md §4, "Live events").

use percent_encoding::percent_decode_str;

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

    /// A subscription from a URL query (the HTTP route's, and the query
    /// part of a Redis channel name): `top=N`, `members=a,b` and/or
    /// `member=a` (repeatable, for ids holding commas), `snapshot=true`,
    /// `since=ID`; `last_event_id` (SSE's `Last-Event-ID`) wins over
    /// `since`. Checked.
    pub fn from_query(
        board: String,
        query: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Result<Subscribe, ApiError> {
        let mut top = None;
        let mut members = Vec::new();
        let mut snapshot = false;
        let mut since = None;
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = v.replace('+', " ");
            let v = percent_decode_str(&v)
                .decode_utf8()
                .map_err(|_| ApiError::bad(format!("query parameter {k:?} is not UTF-8")))?;
            match k {
                "top" => {
                    top = Some(v.parse::<u32>().map_err(|_| {
                        ApiError::bad(format!("top must be a whole number of places (got {v:?})"))
                    })?)
                }
                "members" => {
                    members.extend(v.split(',').filter(|m| !m.is_empty()).map(String::from))
                }
                "member" => members.push(v.into_owned()),
                "snapshot" => {
                    snapshot = match &*v {
                        "true" | "1" | "" => true,
                        "false" | "0" => false,
                        _ => return Err(ApiError::bad("snapshot must be true or false")),
                    }
                }
                "since" => since = Some(v.parse::<EventId>()?),
                other => {
                    return Err(ApiError::bad(format!(
                        "unknown parameter {other:?} (events take top, members, member, snapshot, since)"
                    )))
                }
            }
        }
        if let Some(id) = last_event_id.filter(|id| !id.is_empty()) {
            since = Some(id.parse()?);
        }
        let req = Subscribe {
            board,
            filter: Filter::new(top, members, snapshot)?,
            since,
        };
        req.check()?;
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_becomes_a_subscription() {
        let r = Subscribe::from_query(
            "b".into(),
            Some("top=10&members=a,b&member=c%2Cd&snapshot=true&since=5-1"),
            None,
        )
        .unwrap();
        assert_eq!(r.filter.top, Some(10));
        assert_eq!(r.filter.members, ["a", "b", "c,d"]);
        assert!(r.filter.snapshot);
        assert_eq!(r.since, Some(EventId::new(5, 1)));
        let r = Subscribe::from_query("b".into(), Some("since=5-1"), Some("7-0")).unwrap();
        assert_eq!(r.since, Some(EventId::new(7, 0)));
        for bad in ["top=x", "top=0", "snapshot=maybe", "since=q", "colour=red"] {
            assert!(Subscribe::from_query("b".into(), Some(bad), None).is_err());
        }
    }
}

operation! {
    Subscribe => Subscribe, subscribe -> Subscription;
}
