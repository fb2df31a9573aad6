//! Pub/Sub between the listener's connections: which connections listen
//! on which channels and patterns ([`Hub`]), and each subscriber's queue of
//! messages not yet written to its socket ([`Outbox`]).
//!
//! A publish takes the hub's lock and appends to every receiver's queue
//! under it, so all subscribers see the messages of all publishers in one
//! order. A queue is bounded like Redis's `client-output-buffer-limit
//! pubsub 32mb`: past [`OUTBOX_LIMIT`] the subscriber is cut off (its queue
//! dropped, its connection closed), so a client that does not read cannot
//! make the server hold more.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::reply::Reply;
use podium_core::keystore::glob_match;

/// Most bytes of messages queued for one subscriber (Redis's hard limit
/// for pub/sub clients).
pub const OUTBOX_LIMIT: usize = 32 << 20;

/// What a queued message is charged beyond its bytes (Redis charges its
/// reply objects; this keeps many empty messages bounded too).
const MSG_OVERHEAD: usize = 64;

/// One message for one subscriber.
#[derive(Debug, Clone)]
pub struct Msg {
    /// The pattern it matched (`pmessage`); `None` for `message`.
    pub pattern: Option<Bytes>,
    pub channel: Bytes,
    pub payload: Bytes,
}

impl Msg {
    fn cost(&self) -> usize {
        MSG_OVERHEAD
            + self.channel.len()
            + self.payload.len()
            + self.pattern.as_ref().map_or(0, |p| p.len())
    }

    /// Redis's `message` / `pmessage` frame: an array in RESP2, a push in
    /// RESP3.
    pub fn reply(&self) -> Reply {
        let mut items = Vec::with_capacity(4);
        match &self.pattern {
            Some(p) => {
                items.push(Reply::bulk("pmessage"));
                items.push(Reply::bulk(p));
            }
            None => items.push(Reply::bulk("message")),
        }
        items.push(Reply::bulk(&self.channel));
        items.push(Reply::bulk(&self.payload));
        Reply::Push(items)
    }
}

#[derive(Default)]
struct Queue {
    msgs: VecDeque<Msg>,
    bytes: usize,
}

/// One connection's queue of messages to write.
pub struct Outbox {
    pub id: u64,
    queue: Mutex<Queue>,
    /// Messages queued, read without the lock: every command of every
    /// connection drains its queue, which is empty but on subscribers.
    queued: AtomicUsize,
    ready: Notify,
    overflowed: AtomicBool,
}

impl Outbox {
    pub fn new(id: u64) -> Outbox {
        Outbox {
            id,
            queue: Mutex::default(),
            queued: AtomicUsize::new(0),
            ready: Notify::new(),
            overflowed: AtomicBool::new(false),
        }
    }

    /// Queues `msg`; whether it was queued. A subscriber cut off is no
    /// longer counted as a receiver, though its connection may not have
    /// noticed yet (as in Redis, where it is gone before the next command).
    fn push(&self, msg: Msg) -> bool {
        if self.overflowed.load(Ordering::Relaxed) {
            return false;
        }
        let mut q = self.queue.lock();
        let cost = msg.cost();
        let queued = q.bytes + cost <= OUTBOX_LIMIT;
        if queued {
            q.bytes += cost;
            q.msgs.push_back(msg);
        } else {
            // The connection is closed: what it had queued goes now, not
            // when the connection notices.
            self.overflowed.store(true, Ordering::Relaxed);
            *q = Queue::default();
        }
        self.queued.store(q.msgs.len(), Ordering::Release);
        drop(q);
        self.ready.notify_one();
        queued
    }

    /// Whether the subscriber fell [`OUTBOX_LIMIT`] behind: it must be
    /// disconnected.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Waits until a message is queued (or the queue overflowed).
    pub async fn ready(&self) {
        self.ready.notified().await
    }

    /// Encodes every queued message into `out`; the number of messages.
    pub fn drain(&self, proto: u8, out: &mut BytesMut) -> usize {
        // (A message queued after this look is written at the next drain:
        // its push also wakes `ready`.)
        if self.queued.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let msgs = {
            let mut q = self.queue.lock();
            q.bytes = 0;
            self.queued.store(0, Ordering::Release);
            std::mem::take(&mut q.msgs)
        };
        for m in &msgs {
            m.reply().encode(proto, out);
        }
        msgs.len()
    }

    /// Whether messages wait to be written.
    pub fn pending(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }

    /// Bytes charged for the queued messages.
    pub fn queued_bytes(&self) -> usize {
        self.queue.lock().bytes
    }
}

#[derive(Default)]
struct Inner {
    /// Each channel's subscribers, in the order they subscribed.
    channels: HashMap<Bytes, Vec<Arc<Outbox>>>,
    patterns: HashMap<Bytes, Vec<Arc<Outbox>>>,
}

impl Inner {
    fn map(&mut self, pattern: bool) -> &mut HashMap<Bytes, Vec<Arc<Outbox>>> {
        if pattern {
            &mut self.patterns
        } else {
            &mut self.channels
        }
    }
}

/// The listener's subscriptions.
#[derive(Default)]
pub struct Hub {
    inner: Mutex<Inner>,
}

impl Hub {
    /// Adds `outbox` to the subscribers of `name` (a channel, or a pattern
    /// with `pattern`). The caller keeps each name once per connection.
    pub fn subscribe(&self, name: &Bytes, pattern: bool, outbox: &Arc<Outbox>) {
        let mut inner = self.inner.lock();
        inner
            .map(pattern)
            .entry(name.clone())
            .or_default()
            .push(outbox.clone());
    }

    /// Removes connection `id` from the subscribers of `name`; a name
    /// with no subscribers left is forgotten (PUBSUB lists active ones).
    pub fn unsubscribe(&self, name: &[u8], pattern: bool, id: u64) {
        let mut inner = self.inner.lock();
        let map = inner.map(pattern);
        if let Some(subs) = map.get_mut(name) {
            subs.retain(|o| o.id != id);
            if subs.is_empty() {
                map.remove(name);
            }
        }
    }

    /// Queues `payload` for every subscriber of `channel` and of each
    /// pattern matching it; the number of deliveries (PUBLISH's reply).
    pub fn publish(&self, channel: &[u8], payload: &[u8]) -> i64 {
        // Own copies, shared by the receivers: a request's arguments may
        // be slices of a larger read buffer, which queued messages would
        // otherwise keep alive.
        let channel = &Bytes::copy_from_slice(channel);
        let payload = &Bytes::copy_from_slice(payload);
        let inner = self.inner.lock();
        let mut n = 0;
        if let Some(subs) = inner.channels.get(channel) {
            for o in subs {
                n += i64::from(o.push(Msg {
                    pattern: None,
                    channel: channel.clone(),
                    payload: payload.clone(),
                }));
            }
        }
        for (pat, subs) in &inner.patterns {
            if !glob_match(pat, channel) {
                continue;
            }
            for o in subs {
                n += i64::from(o.push(Msg {
                    pattern: Some(pat.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                }));
            }
        }
        n
    }

    /// The active channels matching `pattern` (all without one).
    pub fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let inner = self.inner.lock();
        inner
            .channels
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
            .map(|c| c.to_vec())
            .collect()
    }

    /// Subscribers of `channel` (patterns not counted).
    pub fn numsub(&self, channel: &[u8]) -> usize {
        self.inner.lock().channels.get(channel).map_or(0, Vec::len)
    }

    /// Distinct channels with subscribers (INFO's `pubsub_channels`).
    pub fn numchannels(&self) -> usize {
        self.inner.lock().channels.len()
    }

    /// Distinct patterns with subscribers (PUBSUB NUMPAT, INFO's
    /// `pubsub_patterns`).
    pub fn numpat(&self) -> usize {
        self.inner.lock().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn drained(o: &Outbox) -> String {
        let mut out = BytesMut::new();
        o.drain(3, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn publish_counts_channel_and_pattern_deliveries() {
        let hub = Hub::default();
        let a = Arc::new(Outbox::new(1));
        let c = Arc::new(Outbox::new(2));
        hub.subscribe(&b("news"), false, &a);
        hub.subscribe(&b("n*"), true, &a);
        hub.subscribe(&b("news"), false, &c);
        hub.subscribe(&b("x?"), true, &c);
        assert_eq!(hub.publish(&b("news"), &b("hi")), 3);
        assert_eq!(hub.publish(&b("xy"), &b("yo")), 1);
        assert_eq!(hub.publish(&b("other"), &b("no")), 0);
        assert_eq!(
            drained(&a),
            ">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n\
             >4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(
            drained(&c).ends_with(">4\r\n$8\r\npmessage\r\n$2\r\nx?\r\n$2\r\nxy\r\n$2\r\nyo\r\n")
        );
        hub.unsubscribe(b"news", false, 1);
        assert_eq!(hub.numsub(b"news"), 1);
        hub.unsubscribe(b"news", false, 2);
        assert_eq!(hub.numchannels(), 0);
        assert_eq!(hub.channels(None), Vec::<Vec<u8>>::new());
        assert_eq!(hub.numpat(), 2);
    }

    #[test]
    fn a_subscriber_that_falls_behind_overflows_and_holds_nothing() {
        let hub = Hub::default();
        let o = Arc::new(Outbox::new(1));
        hub.subscribe(&b("c"), false, &o);
        let payload = Bytes::from(vec![b'x'; 1 << 20]);
        for _ in 0..31 {
            assert_eq!(hub.publish(&b("c"), &payload), 1);
        }
        assert!(!o.overflowed());
        assert!(o.queued_bytes() < OUTBOX_LIMIT);
        // The message that overflows is not delivered, and the subscriber
        // no longer counts as a receiver while its connection closes.
        assert_eq!(hub.publish(&b("c"), &payload), 0);
        assert!(o.overflowed());
        assert_eq!(o.queued_bytes(), 0);
        // Later messages are not kept either.
        assert_eq!(hub.publish(&b("c"), &payload), 0);
        assert_eq!(o.queued_bytes(), 0);
    }
}
