//! Live events over MessagePack-RPC: one connection's subscriptions (their
//! ids, their limit, ending them) and the encoding of an event as the
//! notification `[2, "event", [subscription id, event]]`.
//!
//! The connection ([`super::conn`]) runs each subscription as a task that
//! reads its [`Subscription`](podium_core::events::Subscription) and queues
//! notifications to the connection's writer; this module owns what that
//! task and the reader share: the [`Gate`] through which a subscription's
//! notifications pass, closed by `unsubscribe`, by the end of the
//! subscription's stream or by the connection's end.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use podium_core::error::ApiError;
use podium_core::events::Event;

/// Most subscriptions open at once on one connection.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// Bytes of notifications a connection may have queued and not yet
/// written, all its subscriptions together. Past it a subscription stops
/// reading its events until the writer catches up; one left behind by
/// more than its filter keeps then ends with a `lagged` event, so a client
/// that stops reading costs this much at most, not a copy of every event.
pub const MAX_QUEUED_NOTIFICATION_BYTES: usize = 4 << 20;

/// The notification's method name.
pub const NOTIFICATION: &str = "event";

/// Appends the notification of `ev` for subscription `id`. The event's
/// JSON object becomes a map with its keys in the same order, integers
/// staying integers.
pub fn notification(id: u64, ev: &Event, out: &mut Vec<u8>) {
    // [2, "event", [id, event]]: fixarray 3, 2, fixstr 5, fixarray 2.
    out.extend_from_slice(b"\x93\x02\xa5event\x92");
    // Writing into a Vec cannot fail.
    let _ = rmp::encode::write_uint(out, id);
    if !podium_core::msgpack::json::transcode_object(&ev.json, out) {
        // Not reached: podium writes every event as one JSON object whose
        // nested objects have sorted keys. Decoded and re-encoded then.
        let _ = rmp_serde::encode::write_named(out, &ev.value());
    }
}

/// Where a subscription's notifications pass: open until `unsubscribe`,
/// the end of its stream, or the connection's end. A notification is
/// queued under the gate's lock, so once `close` returns none of the
/// subscription's notifications is queued after whatever the closer
/// queues next (the answer to `unsubscribe`).
pub struct Gate {
    open: Mutex<bool>,
    closed: Notify,
}

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate {
            open: Mutex::new(true),
            closed: Notify::new(),
        })
    }

    /// Runs `send` (which queues a notification, false when the
    /// connection's writer is gone) if the gate is open; `last` closes it
    /// behind (the stream's final `lagged` event). False: stop.
    pub fn pass(&self, last: bool, send: impl FnOnce() -> bool) -> bool {
        let mut open = self.open.lock();
        if !*open {
            return false;
        }
        let sent = send();
        if last || !sent {
            *open = false;
        }
        sent && !last
    }

    /// Closes the gate; whether it was open. Wakes the subscription's task.
    pub fn close(&self) -> bool {
        let was = std::mem::replace(&mut *self.open.lock(), false);
        // A stored permit: the task sees it even if not waiting yet.
        self.closed.notify_one();
        was
    }

    pub fn is_open(&self) -> bool {
        *self.open.lock()
    }

    /// Resolves once the gate has been closed by [`Gate::close`].
    pub async fn closed(&self) {
        self.closed.notified().await
    }
}

/// One connection's subscriptions.
#[derive(Default)]
pub struct Subscriptions {
    /// The last id given (ids start at 1 and are never reused on the
    /// connection).
    last: u64,
    gates: HashMap<u64, Arc<Gate>>,
    tasks: JoinSet<()>,
}

impl Subscriptions {
    /// A new subscription's id and gate, unless the connection has
    /// [`MAX_SUBSCRIPTIONS`] open.
    pub fn open(&mut self) -> Result<(u64, Arc<Gate>), ApiError> {
        while self.tasks.try_join_next().is_some() {}
        // Those whose stream ended (or whose `subscribe` failed) no longer
        // count.
        self.gates.retain(|_, g| g.is_open());
        if self.gates.len() >= MAX_SUBSCRIPTIONS {
            return Err(ApiError::bad(format!(
                "a connection has at most {MAX_SUBSCRIPTIONS} subscriptions open: \
                 unsubscribe from one first"
            )));
        }
        self.last += 1;
        let gate = Gate::new();
        self.gates.insert(self.last, gate.clone());
        Ok((self.last, gate))
    }

    /// Runs a subscription's task.
    pub fn spawn<F>(&mut self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task);
    }

    /// `unsubscribe(id)`: whether `id` was open (not unsubscribed, its
    /// stream not ended).
    pub fn unsubscribe(&mut self, id: u64) -> bool {
        self.gates.remove(&id).is_some_and(|g| g.close())
    }

    /// The connection is ending: closes every gate; the tasks end once
    /// the answers they owe are queued.
    pub fn close_all(mut self) -> JoinSet<()> {
        for (_, g) in self.gates.drain() {
            g.close();
        }
        self.tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_core::events::{EventId, Kind};
    use rmpv::Value;

    #[test]
    fn an_event_becomes_a_notification_with_its_fields_in_order() {
        let mut body = serde_json::Map::new();
        body.insert("member".into(), "alice".into());
        body.insert("rank".into(), 3.into());
        body.insert("score".into(), 12.5.into());
        let ev = Event::new(EventId::new(9, 2), Kind::Enter, "lb", body);
        let mut out = Vec::new();
        notification(7, &ev, &mut out);
        let v = rmpv::decode::read_value(&mut &out[..]).unwrap();
        assert_eq!(v[0], Value::from(2));
        assert_eq!(v[1], Value::from("event"));
        assert_eq!(v[2][0], Value::from(7));
        let e = &v[2][1];
        let keys: Vec<_> = e
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap())
            .collect();
        assert_eq!(keys, ["id", "type", "board", "member", "rank", "score"]);
        assert_eq!(e["id"], Value::from("9-2"));
        assert_eq!(e["type"], Value::from("enter"));
        assert!(e["rank"].is_u64());
        assert_eq!(e["score"], Value::F64(12.5));
    }

    #[tokio::test]
    async fn ids_are_unique_the_limit_counts_open_ones_and_gates_close_once() {
        let mut s = Subscriptions::default();
        let mut gates = Vec::new();
        for want in 1..=MAX_SUBSCRIPTIONS as u64 {
            let (id, g) = s.open().unwrap();
            assert_eq!(id, want);
            gates.push(g);
        }
        let Err(e) = s.open() else {
            panic!("a 65th subscription")
        };
        assert_eq!(e.code, podium_core::error::Code::InvalidArgument);
        assert!(e.message.contains("at most 64 subscriptions"), "{e:?}");
        // An ended stream frees its place; an unsubscribe too, once.
        assert!(!gates[0].pass(true, || true));
        assert!(!gates[0].is_open());
        assert!(!s.unsubscribe(1));
        assert!(s.unsubscribe(2));
        assert!(!s.unsubscribe(2));
        assert!(!s.unsubscribe(999));
        assert!(!gates[1].pass(false, || panic!("closed: nothing is sent")));
        let (a, _) = s.open().unwrap();
        let (b, _) = s.open().unwrap();
        assert_eq!((a, b), (65, 66));
        assert!(s.open().is_err());
        // A close before the task waits is not lost.
        gates[2].close();
        tokio::time::timeout(std::time::Duration::from_secs(5), gates[2].closed())
            .await
            .unwrap();
    }
}
