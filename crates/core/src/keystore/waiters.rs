//! The clients blocked on keys (BZPOPMIN, BZPOPMAX, BZMPOP): a queue of
//! waiters per key, in the order they blocked, that every write adding
//! members to a key signals.
//!
//! A signal wakes only the first waiter of the key (Redis serves the
//! client blocked first). The woken client pops; if members remain it
//! signals the key again, so the wake passes down the queue one client at
//! a time and never wakes a crowd. A waiter that goes away (its timeout,
//! its connection closed) with a wake it did not use passes that wake on.
//! With no one blocked, a signal costs one atomic load.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Every key's queue of blocked clients.
#[derive(Default)]
pub struct Waiters {
    /// How many clients are blocked (INFO's `blocked_clients`); read
    /// alone by a signal when it is 0.
    blocked: AtomicUsize,
    /// How many of them have a timeout (INFO's
    /// `clients_in_timeout_table`).
    timed: AtomicUsize,
    next_id: AtomicU64,
    queues: Mutex<HashMap<Box<[u8]>, Queue>>,
}

/// A key's blocked clients, first blocked first.
type Queue = VecDeque<Arc<Wake>>;

/// One blocked client's side of its wakes.
struct Wake {
    id: u64,
    notify: Notify,
    /// Keys signalled to this client and not yet taken, in signal order.
    ready: Mutex<Vec<Box<[u8]>>>,
}

impl Waiters {
    /// How many clients are blocked now.
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::SeqCst)
    }

    /// How many of the blocked clients have a timeout.
    pub fn timed(&self) -> usize {
        self.timed.load(Ordering::Relaxed)
    }

    /// Members were added to `key`: wakes the first client blocked on it.
    /// Call after the write is applied, so the woken client sees it.
    pub fn signal(&self, key: &[u8]) {
        // Pairs with the increment in `block` (see there).
        if self.blocked.load(Ordering::SeqCst) == 0 {
            return;
        }
        let first = self.queues.lock().get(key).and_then(|q| q.front().cloned());
        if let Some(w) = first {
            let mut ready = w.ready.lock();
            if !ready.iter().any(|k| &k[..] == key) {
                ready.push(key.into());
            }
            drop(ready);
            w.notify.notify_one();
        }
    }

    /// Blocks a client on `keys` (at the end of each key's queue). The
    /// caller then looks at the keys once more before waiting: a write
    /// that came before this registration is seen by that look, one after
    /// it signals. `timed`: the client has a timeout.
    pub fn block(self: &Arc<Self>, keys: &[&[u8]], timed: bool) -> Waiter {
        let wake = Arc::new(Wake {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            notify: Notify::new(),
            ready: Mutex::new(Vec::new()),
        });
        let mut own: Vec<Box<[u8]>> = Vec::with_capacity(keys.len());
        {
            let mut queues = self.queues.lock();
            for k in keys {
                // A key named twice is queued once.
                if own.iter().any(|o| &o[..] == *k) {
                    continue;
                }
                own.push((*k).into());
                queues
                    .entry((*k).into())
                    .or_default()
                    .push_back(wake.clone());
            }
            // Inside the lock: a signal that reads the count after this
            // finds the queue already holding this waiter.
            self.blocked.fetch_add(1, Ordering::SeqCst);
        }
        if timed {
            self.timed.fetch_add(1, Ordering::Relaxed);
        }
        Waiter {
            waiters: self.clone(),
            wake,
            keys: own,
            timed,
        }
    }
}

/// A client blocked on its keys; dropping it unblocks it (and passes on a
/// wake it did not take).
pub struct Waiter {
    waiters: Arc<Waiters>,
    wake: Arc<Wake>,
    keys: Vec<Box<[u8]>>,
    timed: bool,
}

impl Waiter {
    /// Waits for a signal on any of the keys; the keys signalled since the
    /// last call, in signal order.
    pub async fn woken(&self) -> Vec<Box<[u8]>> {
        loop {
            let ready = std::mem::take(&mut *self.wake.ready.lock());
            if !ready.is_empty() {
                return ready;
            }
            self.wake.notify.notified().await;
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        {
            let mut queues = self.waiters.queues.lock();
            for k in &self.keys {
                if let Some(q) = queues.get_mut(k) {
                    q.retain(|w| w.id != self.wake.id);
                    if q.is_empty() {
                        queues.remove(k);
                    }
                }
            }
            self.waiters.blocked.fetch_sub(1, Ordering::SeqCst);
        }
        if self.timed {
            self.waiters.timed.fetch_sub(1, Ordering::Relaxed);
        }
        // Wakes this client was given and never took go to the next one.
        let unused = std::mem::take(&mut *self.wake.ready.lock());
        for k in unused {
            self.waiters.signal(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn pending(w: &Waiter) -> bool {
        w.wake.ready.lock().is_empty()
    }

    #[test]
    fn a_signal_wakes_only_the_first_waiter_of_its_key() {
        let ws = Arc::new(Waiters::default());
        ws.signal(b"k");
        let a = ws.block(&[b"k"], false);
        let b = ws.block(&[b"x", b"k", b"x"], true);
        let c = ws.block(&[b"k"], false);
        assert_eq!(ws.timed(), 1);
        assert_eq!(ws.blocked(), 3);
        ws.signal(b"k");
        assert!(!pending(&a) && pending(&b) && pending(&c));
        // A second signal before the first is taken: still the first.
        ws.signal(b"k");
        assert_eq!(a.wake.ready.lock().len(), 1);
        ws.signal(b"x");
        assert!(!pending(&b) && pending(&c));
        // `a` leaves without taking its wake: it goes to `b`, first now.
        drop(a);
        assert_eq!(b.wake.ready.lock().len(), 2);
        assert!(pending(&c));
        drop(b);
        assert!(!pending(&c), "b's unused wakes passed to c");
        drop(c);
        assert_eq!((ws.blocked(), ws.timed()), (0, 0));
        assert!(ws.queues.lock().is_empty());
    }

    #[tokio::test]
    async fn woken_returns_the_signalled_keys_in_order() {
        let ws = Arc::new(Waiters::default());
        let w = ws.block(&[b"a", b"b"], true);
        let ws2 = ws.clone();
        let t = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            ws2.signal(b"b");
            ws2.signal(b"a");
            ws2.signal(b"b");
        });
        let got = tokio::time::timeout(Duration::from_secs(5), w.woken())
            .await
            .unwrap();
        t.await.unwrap();
        let mut all: Vec<Box<[u8]>> = got;
        all.extend(std::mem::take(&mut *w.wake.ready.lock()));
        assert_eq!(all, vec![Box::from(&b"b"[..]), Box::from(&b"a"[..])]);
    }
}
