//! The webhook deliveries the embedded store owes: per `(board, hook)`
//! the hook's endpoint and its events not yet acknowledged, in order.
//!
//! The events a write makes for a board's hooks are logged by that write
//! (a `HookEvents` record in the same group commit), acknowledgements as
//! `HookAck` records, and what is due at a snapshot goes in the snapshot:
//! recovery rebuilds exactly the deliveries that were due, so a restart —
//! even after `kill -9` — loses none. Each queue keeps at most
//! [`MAX_PENDING`] events; past that the oldest are dropped and the next
//! delivery starts with a `lagged` event saying how many and up to which id.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use podium_core::events::hooks::{Pending, MAX_PENDING};
use podium_core::events::{Event, EventId, Kind};
use serde_json::Map;

/// A hook's events of one write, with the endpoint they go to (the hook's
/// config when they were made: a later config change or the board's
/// deletion does not strand them).
#[derive(Debug, Clone, PartialEq)]
pub struct HookBatch {
    pub name: String,
    pub url: String,
    pub secret: String,
    pub events: Vec<Arc<Event>>,
}

/// One hook's due deliveries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Queue {
    pub url: String,
    pub secret: String,
    pub events: VecDeque<Arc<Event>>,
    /// Events dropped for room, and the id of the last of them.
    pub dropped: u64,
    pub dropped_upto: EventId,
}

/// Every hook's queue, by `(board, hook)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outboxes {
    pub queues: BTreeMap<(String, String), Queue>,
}

impl Outboxes {
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Queues the events of one write.
    pub fn add(&mut self, board: &str, batch: &HookBatch) {
        let q = self
            .queues
            .entry((board.to_string(), batch.name.clone()))
            .or_default();
        q.url.clone_from(&batch.url);
        q.secret.clone_from(&batch.secret);
        for ev in &batch.events {
            if q.events.len() == MAX_PENDING {
                if let Some(old) = q.events.pop_front() {
                    q.dropped += 1;
                    q.dropped_upto = old.id;
                }
            }
            q.events.push_back(ev.clone());
        }
    }

    /// Forgets what was delivered, up to `upto`.
    pub fn ack(&mut self, board: &str, hook: &str, upto: EventId) {
        let key = (board.to_string(), hook.to_string());
        let Some(q) = self.queues.get_mut(&key) else {
            return;
        };
        if q.dropped > 0 && q.dropped_upto <= upto {
            q.dropped = 0;
        }
        while q.events.front().is_some_and(|e| e.id <= upto) {
            q.events.pop_front();
        }
        if q.events.is_empty() && q.dropped == 0 {
            self.queues.remove(&key);
        }
    }

    /// The hooks with something due.
    pub fn due(&self) -> Vec<(String, String)> {
        self.queues.keys().cloned().collect()
    }

    /// A hook's next delivery: a `lagged` event first when events were
    /// dropped, then up to `max` events in all.
    pub fn peek(&self, board: &str, hook: &str, max: usize) -> Option<Pending> {
        let q = self.queues.get(&(board.to_string(), hook.to_string()))?;
        let mut events = Vec::with_capacity(max.min(q.events.len() + 1));
        if q.dropped > 0 {
            let mut body = Map::new();
            body.insert("dropped".into(), q.dropped.into());
            body.insert(
                "reason".into(),
                "the receiver fell too far behind: events up to this id were dropped; \
                 reload the state"
                    .into(),
            );
            events.push(Event::new(q.dropped_upto, Kind::Lagged, board, body));
        }
        let room = max.saturating_sub(events.len());
        events.extend(q.events.iter().take(room).cloned());
        Some(Pending {
            board: board.to_string(),
            hook: hook.to_string(),
            url: q.url.clone(),
            secret: q.secret.clone(),
            due: q.events.len() + usize::from(q.dropped > 0),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u64) -> Arc<Event> {
        Event::new(EventId::new(n, 0), Kind::Change, "b", Map::new())
    }

    fn batch(ids: impl IntoIterator<Item = u64>) -> HookBatch {
        HookBatch {
            name: "h".into(),
            url: "http://127.0.0.1:1/".into(),
            secret: "s".repeat(16),
            events: ids.into_iter().map(ev).collect(),
        }
    }

    #[test]
    fn queues_ack_and_drop_the_oldest_when_full() {
        let mut o = Outboxes::default();
        o.add("b", &batch(1..=3));
        let p = o.peek("b", "h", 2).unwrap();
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.due, 3);
        o.ack("b", "h", EventId::new(2, 0));
        assert_eq!(
            o.peek("b", "h", 10).unwrap().events[0].id,
            EventId::new(3, 0)
        );
        o.ack("b", "h", EventId::new(3, 0));
        assert!(o.is_empty());

        o.add("b", &batch(1..=(MAX_PENDING as u64 + 5)));
        let p = o.peek("b", "h", 3).unwrap();
        assert_eq!(p.events[0].kind, Kind::Lagged);
        assert_eq!(p.events[0].id, EventId::new(5, 0));
        assert_eq!(p.events[1].id, EventId::new(6, 0));
        o.ack("b", "h", EventId::new(6, 0));
        assert_eq!(
            o.peek("b", "h", 1).unwrap().events[0].id,
            EventId::new(7, 0)
        );
    }
}
