//! The events of one filter of one board, kept for its subscribers: a
//! bounded ring ([`Ring`]) written by the engine, read by each subscriber
//! at its own pace through a cursor ([`Subscription`]).
//!
//! Every subscriber of a filter reads the same ring, so a subscriber costs
//! a cursor, not a copy of the events, and a write's event is made once
//! whatever the number of subscribers. The ring keeps the filter's last
//! [`RING_EVENTS`] events and stays the retention time
//! ([`super::limits::retain`]) after its last subscriber left, so a
//! subscriber that reconnects soon with the id of the last event it
//! saw gets exactly the events after it. A subscriber whose cursor falls
//! behind the oldest kept event has lost events: it gets one `lagged`
//! event (with the id to resume from) and its stream ends, so a stuck
//! client holds nothing but its cursor.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::Mutex;
use serde_json::Map;
use tokio::sync::Notify;

use super::{Event, EventId, Filter, Kind};

/// Events a filter keeps for resuming subscribers.
pub const RING_EVENTS: usize = 4096;

/// Most events one [`Subscription::next_batch`] hands out.
const BATCH: usize = 256;

/// Heap bytes of the events every ring of the process holds: both
/// engines' rings, for the memory breakdown ([`ring_bytes`]).
static RING_BYTES: AtomicU64 = AtomicU64::new(0);

/// Heap bytes of the events all rings hold (an event several filters
/// share counts in each ring that holds it; the rings' own slots and
/// the events' Server-Sent-Events forms are not counted).
pub fn ring_bytes() -> u64 {
    RING_BYTES.load(Ordering::Relaxed)
}

/// One filter's events.
pub struct Ring {
    board: String,
    inner: Mutex<Inner>,
    notify: Notify,
    /// When the last subscriber left, as [`since_epoch`] (0 while there are
    /// some). Outside the lock: the periodic sweep asks every ring of a
    /// board whether it expired, and taking 10,000 locks that subscribers
    /// also take, while the board's writers wait, was a measured cost.
    idle_since: AtomicU64,
}

/// Milliseconds from the first use to `t`, plus one (so 0 stays "busy").
fn since_epoch(t: Instant) -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    t.saturating_duration_since(epoch).as_millis() as u64 + 1
}

struct Inner {
    events: VecDeque<Arc<Event>>,
    cap: usize,
    /// Every event of this filter with an id above `floor` is in `events`.
    floor: EventId,
    /// Heap bytes of the events in `events` ([`Event::heap_bytes`]).
    bytes: usize,
    subscribers: usize,
    closed: bool,
}

impl Ring {
    /// An empty ring of `board`'s filter, complete from `floor` on (the
    /// board's position when the filter was first asked for).
    pub fn new(board: &str, floor: EventId) -> Arc<Ring> {
        Self::with_capacity(board, floor, RING_EVENTS)
    }

    pub fn with_capacity(board: &str, floor: EventId, cap: usize) -> Arc<Ring> {
        Arc::new(Ring {
            board: board.to_string(),
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                cap: cap.max(1),
                floor,
                bytes: 0,
                subscribers: 0,
                closed: false,
            }),
            notify: Notify::new(),
            idle_since: AtomicU64::new(since_epoch(Instant::now())),
        })
    }

    /// Appends an event (ids only grow) and wakes the subscribers.
    pub fn push(&self, ev: Arc<Event>) {
        self.extend(std::iter::once(ev));
    }

    /// Appends events (in id order) and wakes the subscribers once.
    pub fn extend(&self, evs: impl IntoIterator<Item = Arc<Event>>) {
        {
            let mut g = self.inner.lock();
            let before = g.bytes;
            for ev in evs {
                if g.events.len() == g.cap {
                    if let Some(old) = g.events.pop_front() {
                        g.floor = old.id;
                        g.bytes -= old.heap_bytes();
                    }
                }
                g.bytes += ev.heap_bytes();
                g.events.push_back(ev);
            }
            // One write to the shared counter a batch, none when a full
            // ring traded events of the same size.
            match g.bytes.cmp(&before) {
                std::cmp::Ordering::Greater => {
                    RING_BYTES.fetch_add((g.bytes - before) as u64, Ordering::Relaxed);
                }
                std::cmp::Ordering::Less => {
                    RING_BYTES.fetch_sub((before - g.bytes) as u64, Ordering::Relaxed);
                }
                std::cmp::Ordering::Equal => {}
            }
        }
        self.notify.notify_waiters();
    }

    /// Whether every event after `after` is still here.
    pub fn covers(&self, after: EventId) -> bool {
        after >= self.inner.lock().floor
    }

    /// The id of the newest event kept (the floor when none is).
    pub fn last_id(&self) -> EventId {
        let g = self.inner.lock();
        g.events.back().map_or(g.floor, |e| e.id)
    }

    /// Whether nobody has read this ring for the retention time
    /// ([`super::limits::retain`]): it can go.
    pub fn expired(&self, now: Instant) -> bool {
        let idle = self.idle_since.load(Ordering::Acquire);
        idle != 0
            && since_epoch(now).saturating_sub(idle) >= super::limits::retain().as_millis() as u64
    }

    /// Whether nobody reads this ring now (it may go to make room).
    pub fn idle(&self) -> bool {
        self.idle_since.load(Ordering::Acquire) != 0
    }

    pub fn subscribers(&self) -> usize {
        self.inner.lock().subscribers
    }

    /// Ends every subscription once it has read what is here (the server
    /// is stopping, or the engine dropped the filter).
    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// A subscriber of this ring's filter, new or resuming after `since`,
    /// on a feed whose newest event is `last`. A resuming one reads on from
    /// `since` while the ring still holds every event after it; otherwise
    /// it gets a `reload` (and, unless it takes every change, `snapshot()`:
    /// its filter's state now) and reads on from `last`. A new one gets
    /// `snapshot()` first when its filter asks for it.
    pub fn join(
        self: &Arc<Ring>,
        last: EventId,
        since: Option<EventId>,
        filter: &Filter,
        snapshot: impl FnOnce() -> Arc<Event>,
    ) -> Subscription {
        let mut first = Vec::new();
        let cursor = match since {
            Some(after) if self.covers(after) && after <= last => after,
            Some(after) => {
                first.push(Event::reload_after(last, &self.board, after));
                if !filter.everything() {
                    first.push(snapshot());
                }
                last
            }
            None => {
                if filter.snapshot {
                    first.push(snapshot());
                }
                last
            }
        };
        self.subscribe(cursor, first)
    }

    /// A subscriber reading the events after `cursor`, given `first`
    /// (events to send before those: a snapshot, a reload).
    pub fn subscribe(self: &Arc<Ring>, cursor: EventId, first: Vec<Arc<Event>>) -> Subscription {
        {
            let mut g = self.inner.lock();
            g.subscribers += 1;
            self.idle_since.store(0, Ordering::Release);
        }
        Subscription {
            ring: self.clone(),
            cursor,
            first: first.into(),
            done: false,
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        RING_BYTES.fetch_sub(self.inner.get_mut().bytes as u64, Ordering::Relaxed);
    }
}

/// One subscriber's place in its filter's ring.
pub struct Subscription {
    ring: Arc<Ring>,
    cursor: EventId,
    first: VecDeque<Arc<Event>>,
    done: bool,
}

impl Subscription {
    /// The id of the last event handed out (where a reconnect resumes).
    pub fn cursor(&self) -> EventId {
        self.cursor
    }

    /// The next events (at most a few hundred, at least one), waiting for
    /// them; `None` once the stream has ended (after a `lagged` event, or
    /// when the ring was closed and everything in it was read).
    pub async fn next_batch(&mut self) -> Option<Vec<Arc<Event>>> {
        if !self.first.is_empty() {
            return Some(self.first.drain(..).collect());
        }
        if self.done {
            return None;
        }
        loop {
            let notified = self.ring.notify.notified();
            tokio::pin!(notified);
            // Registered before looking, so a push between the look and
            // the wait still wakes this subscriber.
            notified.as_mut().enable();
            {
                let g = self.ring.inner.lock();
                if self.cursor < g.floor {
                    self.done = true;
                    let mut body = Map::new();
                    body.insert("resume".into(), self.cursor.to_string().into());
                    body.insert(
                        "reason".into(),
                        "the subscriber fell behind by more events than are kept".into(),
                    );
                    return Some(vec![Event::new(
                        self.cursor,
                        Kind::Lagged,
                        &self.ring.board,
                        body,
                    )]);
                }
                let at = g.events.partition_point(|e| e.id <= self.cursor);
                if at < g.events.len() {
                    let out: Vec<_> = g.events.range(at..).take(BATCH).cloned().collect();
                    if let Some(last) = out.last() {
                        self.cursor = last.id;
                    }
                    return Some(out);
                }
                if g.closed {
                    self.done = true;
                    return None;
                }
            }
            notified.await;
        }
    }

    /// The next event; see [`Subscription::next_batch`].
    pub async fn next(&mut self) -> Option<Arc<Event>> {
        if self.first.is_empty() && !self.done {
            // One at a time: keep the rest in `first`.
            let batch = self.next_batch().await?;
            self.first.extend(batch);
        }
        self.first.pop_front()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut g = self.ring.inner.lock();
        g.subscribers -= 1;
        if g.subscribers == 0 {
            self.ring
                .idle_since
                .store(since_epoch(Instant::now()), Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ev(major: u64, minor: u32) -> Arc<Event> {
        Event::new(EventId::new(major, minor), Kind::Change, "b", Map::new())
    }

    #[tokio::test]
    async fn a_subscriber_reads_in_order_from_its_cursor() {
        let ring = Ring::new("b", EventId::new(1, 0));
        let mut s = ring.subscribe(EventId::new(1, 0), vec![]);
        ring.push(ev(2, 0));
        ring.push(ev(2, 1));
        let got = s.next_batch().await.unwrap();
        assert_eq!(
            got.iter().map(|e| e.id).collect::<Vec<_>>(),
            [EventId::new(2, 0), EventId::new(2, 1)]
        );
        // A resume from the middle gets the rest, no duplicate.
        let mut r = ring.subscribe(EventId::new(2, 0), vec![]);
        assert_eq!(r.next().await.unwrap().id, EventId::new(2, 1));
        assert!(ring.covers(EventId::new(1, 0)));
        assert!(!ring.covers(EventId::new(0, 5)));
    }

    #[tokio::test]
    async fn a_waiting_subscriber_is_woken_and_a_closed_ring_ends() {
        let ring = Ring::new("b", EventId::ZERO);
        let mut s = ring.subscribe(EventId::ZERO, vec![ev(0, 0)]);
        assert_eq!(s.next().await.unwrap().id, EventId::ZERO);
        let r = ring.clone();
        let t = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            r.push(ev(3, 0));
            r.close();
        });
        assert_eq!(s.next().await.unwrap().id, EventId::new(3, 0));
        assert!(s.next().await.is_none());
        t.await.unwrap();
    }

    #[tokio::test]
    async fn a_subscriber_left_behind_gets_lagged_and_ends_and_memory_stays_bounded() {
        let ring = Ring::with_capacity("b", EventId::ZERO, 4);
        let mut slow = ring.subscribe(EventId::ZERO, vec![]);
        for i in 1..=10 {
            ring.push(ev(i, 0));
        }
        assert_eq!(ring.inner.lock().events.len(), 4);
        let held: usize = ring
            .inner
            .lock()
            .events
            .iter()
            .map(|e| e.heap_bytes())
            .sum();
        assert_eq!(ring.inner.lock().bytes, held);
        assert!(held > 0 && ring_bytes() >= held as u64);
        let last = slow.next_batch().await.unwrap();
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].kind, Kind::Lagged);
        assert_eq!(last[0].id, EventId::ZERO);
        assert!(last[0].json.contains(r#""resume":"0-0""#));
        assert!(slow.next_batch().await.is_none());
        assert!(ring.covers(EventId::new(6, 0)));
        assert!(!ring.covers(EventId::new(5, 9)));
    }

    #[test]
    fn a_ring_expires_only_when_nobody_reads_it() {
        let ring = Ring::new("b", EventId::ZERO);
        let later = Instant::now() + super::super::limits::retain() + Duration::from_secs(1);
        assert!(ring.expired(later));
        let s = ring.subscribe(EventId::ZERO, vec![]);
        assert!(!ring.expired(later));
        drop(s);
        assert!(!ring.expired(Instant::now()));
        assert!(ring.expired(later));
    }
}
