//! Live board events, whatever the engine and the protocol: their ids,
//! the filters a subscriber chooses ([`Filter`]), the events themselves
//! ([`Event`], one JSON object each, written once and shared by every
//! subscriber it reaches) and the ring each filter's events are kept in
//! ([`ring`]) so a subscriber can resume after a disconnect.
//!
//! The events and their fields are specified in docs/spec.md §4
//! ("Live events"); an engine computes them (the embedded store under the
//! board's lock, in its log order) and pushes them into the rings; the
//! frontends (SSE, WebSocket, MessagePack-RPC, Redis channels, webhooks)
//! read a [`Subscription`] and write each event's JSON their way.

pub mod hooks;
pub mod limits;
pub mod ring;

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use serde_json::{Map, Value};

use crate::error::ApiError;
pub use ring::{ring_bytes, Ring, Subscription};

/// Most places a `top` filter may watch.
pub const MAX_TOP: u32 = 1000;
/// Most members one `members` filter may watch.
pub const MAX_WATCHED: usize = 1000;

/// An event's position: the log sequence number of the write that caused
/// it, then its place among that write's events. Written `LSN-N` (as a
/// Redis stream id is), ordered as the pair. Ids only grow, across
/// restarts too on a durable store (the log's numbers do); a store without
/// a log numbers its writes from 0 in each process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EventId {
    pub major: u64,
    pub minor: u32,
}

impl EventId {
    pub const ZERO: EventId = EventId { major: 0, minor: 0 };

    pub fn new(major: u64, minor: u32) -> EventId {
        EventId { major, minor }
    }

    /// The id after `self` for an event of a write numbered `lsn`: the
    /// first of that write's events when `lsn` is newer, else the next of
    /// the same write's (or of a store that has no log numbers).
    pub fn next_for(self, lsn: u64) -> EventId {
        if lsn > self.major {
            EventId::new(lsn, 0)
        } else {
            EventId::new(self.major, self.minor.saturating_add(1))
        }
    }
}

impl fmt::Display for EventId {
    /// `LSN-N`; `LSN` alone for the position after all of a write's
    /// events (`N` = `u32::MAX`), as it is read back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            u32::MAX => write!(f, "{}", self.major),
            n => write!(f, "{}-{n}", self.major),
        }
    }
}

impl FromStr for EventId {
    type Err = ApiError;

    /// `LSN-N`, or a bare `LSN` (= `LSN-0`... of a write whose events all
    /// came after: `LSN` means "everything up to write LSN").
    fn from_str(s: &str) -> Result<EventId, ApiError> {
        let bad = || ApiError::bad(format!("{s:?} is not an event id (LSN-N, e.g. 1042-0)"));
        let (major, minor) = match s.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => (s.parse().map_err(|_| bad())?, u32::MAX),
        };
        Ok(EventId { major, minor })
    }
}

/// What a subscriber wants of a board. Lifecycle events (reset, config,
/// created, deleted) reach every subscriber.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Members entering, leaving or moving within the best `top` places.
    pub top: Option<u32>,
    /// Every change of these members' score or rank, whoever caused it
    /// (sorted, without repeats).
    pub members: Vec<String>,
    /// Send the current state first: the top places and the watched
    /// members' entries.
    pub snapshot: bool,
}

impl Filter {
    /// A filter from its parts, checked: `top` in 1..=[`MAX_TOP`], at most
    /// [`MAX_WATCHED`] members, each a valid member id.
    pub fn new(top: Option<u32>, members: Vec<String>, snapshot: bool) -> Result<Filter, ApiError> {
        if let Some(n) = top {
            if n == 0 || n > MAX_TOP {
                return Err(ApiError::bad(format!(
                    "top must be between 1 and {MAX_TOP} (got {n})"
                )));
            }
        }
        let mut members = members;
        members.sort_unstable();
        members.dedup();
        if members.len() > MAX_WATCHED {
            return Err(ApiError::bad(format!(
                "a subscription watches at most {MAX_WATCHED} members (got {})",
                members.len()
            )));
        }
        for m in &members {
            podium_engine::check_member(m.as_bytes()).map_err(ApiError::from)?;
        }
        Ok(Filter {
            top,
            members,
            snapshot,
        })
    }

    /// Every change of the board: no `top`, no `members`.
    pub fn everything(&self) -> bool {
        self.top.is_none() && self.members.is_empty()
    }

    /// The filter's identity (without `snapshot`, which only changes the
    /// start): subscribers with equal keys share one ring of events.
    pub fn key(&self) -> String {
        let mut k = String::new();
        if let Some(n) = self.top {
            k.push_str(&format!("top={n}"));
        }
        if !self.members.is_empty() {
            if !k.is_empty() {
                k.push('&');
            }
            k.push_str("members=");
            for (i, m) in self.members.iter().enumerate() {
                if i > 0 {
                    k.push(',');
                }
                // Lengths first, so ids holding commas stay distinct.
                k.push_str(&format!("{}:{m}", m.len()));
            }
        }
        k
    }
}

/// What an event says (its `type` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A member's entry changed (the `everything` filter): new score and
    /// rank, or `removed`.
    Change,
    /// A member came into the `top` places.
    Enter,
    /// A member left the `top` places.
    Leave,
    /// A member within the `top` places changed rank or score.
    Move,
    /// A watched member's rank or score changed.
    Member,
    /// The board was reset (archived and emptied).
    Reset,
    /// The board's config changed.
    Config,
    /// The board was created (or came back after a deletion).
    Created,
    /// The board was deleted.
    Deleted,
    /// The state at subscription (or after a `reload`).
    Snapshot,
    /// The events since the id given to resume from are no longer kept:
    /// what the subscriber holds may be stale; a snapshot follows when
    /// the filter has one.
    Reload,
    /// The subscriber fell behind by more than its filter keeps: its last
    /// event; the stream ends.
    Lagged,
}

impl Kind {
    /// Every kind's name, in declaration order.
    pub const NAMES: [&'static str; 12] = [
        "change", "enter", "leave", "move", "member", "reset", "config", "created", "deleted",
        "snapshot", "reload", "lagged",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Change => "change",
            Kind::Enter => "enter",
            Kind::Leave => "leave",
            Kind::Move => "move",
            Kind::Member => "member",
            Kind::Reset => "reset",
            Kind::Config => "config",
            Kind::Created => "created",
            Kind::Deleted => "deleted",
            Kind::Snapshot => "snapshot",
            Kind::Reload => "reload",
            Kind::Lagged => "lagged",
        }
    }

    /// The kind [`Kind::name`] names.
    pub fn from_name(s: &str) -> Option<Kind> {
        use Kind::*;
        [
            Change, Enter, Leave, Move, Member, Reset, Config, Created, Deleted, Snapshot, Reload,
            Lagged,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }
}

/// One event: its id, kind and the JSON object a frontend sends
/// (`{"id": "LSN-N", "type": …, "board": …, …}`).
#[derive(Debug, Clone)]
pub struct Event {
    pub id: EventId,
    pub kind: Kind,
    pub json: Box<str>,
    /// Its Server-Sent-Events message, made by the first SSE subscriber
    /// that sends it and shared by the rest ([`Event::sse`]).
    sse: OnceLock<Bytes>,
}

impl PartialEq for Event {
    fn eq(&self, o: &Event) -> bool {
        (self.id, self.kind, &self.json) == (o.id, o.kind, &o.json)
    }
}

impl Event {
    /// An event of `board` with the fields of `body` after the envelope.
    pub fn new(id: EventId, kind: Kind, board: &str, body: Map<String, Value>) -> Arc<Event> {
        // The envelope first, whatever order the map keeps its keys in.
        let mut json = format!(
            "{{\"id\":\"{id}\",\"type\":\"{}\",\"board\":{}",
            kind.name(),
            Value::String(board.into())
        );
        let rest = Value::Object(body).to_string();
        if rest.len() > 2 {
            json.push(',');
            json.push_str(&rest[1..]);
        } else {
            json.push('}');
        }
        Event::from_parts(id, kind, json.into_boxed_str())
    }

    /// The `reload` a subscriber resuming `after` an id no longer kept
    /// gets, with the id `at` (the feed's newest).
    pub fn reload_after(at: EventId, board: &str, after: EventId) -> Arc<Event> {
        let mut body = Map::new();
        body.insert("after".into(), after.to_string().into());
        body.insert(
            "reason".into(),
            "the events after this id are no longer kept: reload the state".into(),
        );
        Event::new(at, Kind::Reload, board, body)
    }

    /// An event as it was made (read back from a log or a snapshot).
    pub fn from_parts(id: EventId, kind: Kind, json: Box<str>) -> Arc<Event> {
        Arc::new(Event {
            id,
            kind,
            json,
            sse: OnceLock::new(),
        })
    }

    /// The event as one Server-Sent-Events message (`id:`, `event:`,
    /// `data:`; compact JSON holds no line break), encoded once however
    /// many subscribers it goes to.
    pub fn sse(&self) -> Bytes {
        self.sse
            .get_or_init(|| {
                let id = self.id.to_string();
                let kind = self.kind.name();
                let mut out = Vec::with_capacity(26 + id.len() + kind.len() + self.json.len());
                out.extend_from_slice(b"id: ");
                out.extend_from_slice(id.as_bytes());
                out.extend_from_slice(b"\nevent: ");
                out.extend_from_slice(kind.as_bytes());
                out.extend_from_slice(b"\ndata: ");
                out.extend_from_slice(self.json.as_bytes());
                out.extend_from_slice(b"\n\n");
                Bytes::from(out)
            })
            .clone()
    }

    /// Heap bytes of the event behind its `Arc`: its fields and its JSON
    /// text. Fixed for its life, so a ring can add it when it comes and
    /// take the same back when it goes: the Server-Sent-Events form, made
    /// later if a subscriber streams it, is not counted.
    pub fn heap_bytes(&self) -> usize {
        2 * size_of::<usize>() + size_of::<Event>() + self.json.len()
    }

    /// The event as a JSON value (for protocols that re-encode it).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_parse_and_order() {
        let a: EventId = "12-3".parse().unwrap();
        assert_eq!(a, EventId::new(12, 3));
        assert_eq!(a.to_string(), "12-3");
        assert_eq!("12".parse::<EventId>().unwrap(), EventId::new(12, u32::MAX));
        assert_eq!(EventId::new(12, u32::MAX).to_string(), "12");
        assert!(EventId::new(12, 7) < "12".parse().unwrap());
        assert!("x-1".parse::<EventId>().is_err());
        assert!("1-".parse::<EventId>().is_err());
        assert!(EventId::new(12, 9) < EventId::new(13, 0));
        assert_eq!(EventId::new(5, 2).next_for(7), EventId::new(7, 0));
        assert_eq!(EventId::new(7, 0).next_for(7), EventId::new(7, 1));
        assert_eq!(EventId::new(7, 4).next_for(0), EventId::new(7, 5));
    }

    #[test]
    fn filters_are_checked_and_keyed() {
        assert!(Filter::new(Some(0), vec![], false).is_err());
        assert!(Filter::new(Some(MAX_TOP + 1), vec![], false).is_err());
        let many = (0..=MAX_WATCHED).map(|i| i.to_string()).collect();
        assert!(Filter::new(None, many, false).is_err());
        let f = Filter::new(Some(10), vec!["b".into(), "a,c".into(), "b".into()], true).unwrap();
        assert_eq!(f.members, ["a,c", "b"]);
        assert_eq!(f.key(), "top=10&members=3:a,c,1:b");
        assert!(!f.everything());
        assert!(Filter::default().everything());
        assert_eq!(Filter::default().key(), "");
    }

    #[test]
    fn an_event_is_one_json_object_with_its_envelope_first() {
        let mut body = Map::new();
        body.insert("member".into(), "alice".into());
        let e = Event::new(EventId::new(4, 1), Kind::Enter, "b", body);
        assert_eq!(
            &*e.json,
            r#"{"id":"4-1","type":"enter","board":"b","member":"alice"}"#
        );
        assert_eq!(e.value()["member"], "alice");
        assert_eq!(
            &e.sse()[..],
            &b"id: 4-1\nevent: enter\ndata: {\"id\":\"4-1\",\"type\":\"enter\",\"board\":\"b\",\"member\":\"alice\"}\n\n"[..]
        );
    }
}
