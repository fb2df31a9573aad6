//! The service's gate: ordinary writes hold it shared; structural
//! operations and transactions hold it exclusively. Reads hold it shared
//! too, except while an exclusive holder has said which keys it may
//! change: then a read of any other key runs beside it instead of waiting
//! (a long MULTI/EXEC on one board does not stall readers of the others).
//!
//! A wait spins briefly, then happens outside the async runtime's workers
//! ([`crate::wait`]): a request blocked behind a long transaction must not
//! take a worker from the requests that could run. A transaction that got
//! the gate runs on its worker.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use podium_core::keystore::Writes;

use crate::wait::{off_workers, spin};

#[derive(Default)]
pub(crate) struct Gate {
    lock: RwLock<()>,
    /// What the exclusive holder may change, when it said; `None`:
    /// anything (every read waits).
    scope: Mutex<Option<Writes>>,
    /// Reads running beside an exclusive holder. The next exclusive holder
    /// waits for them: they may be reading what it is about to change.
    beside: AtomicUsize,
}

/// A read's hold on the gate.
pub(crate) enum Reading<'a> {
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Beside(&'a AtomicUsize),
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if let Reading::Beside(n) = self {
            n.fetch_sub(1, SeqCst);
        }
    }
}

/// The gate held exclusively.
pub(crate) struct Exclusive<'a> {
    gate: &'a Gate,
    _held: RwLockWriteGuard<'a, ()>,
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        // Before the lock is released (fields drop after this body): a
        // read let in beside must not outlive the scope that let it in
        // without the next holder seeing it counted.
        *self.gate.scope.lock() = None;
    }
}

impl Gate {
    /// Shared, for a write (or a read that must see no exclusive holder).
    pub(crate) fn shared(&self) -> RwLockReadGuard<'_, ()> {
        spin(|| self.lock.try_read()).unwrap_or_else(|| off_workers(|| self.lock.read()))
    }

    /// Exclusive; `writes`: what the holder may change, when known (reads
    /// of every other key then run beside it).
    pub(crate) fn exclusive(&self, writes: Option<Writes>) -> Exclusive<'_> {
        let held =
            spin(|| self.lock.try_write()).unwrap_or_else(|| off_workers(|| self.lock.write()));
        if self.beside.load(SeqCst) > 0 {
            off_workers(|| {
                let mut pause = Duration::from_micros(20);
                while self.beside.load(SeqCst) > 0 {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(2));
                }
            });
        }
        if let Some(w) = writes {
            *self.scope.lock() = Some(w);
        }
        Exclusive {
            gate: self,
            _held: held,
        }
    }

    /// For a read of `key` (`None`: of every key, as KEYS or SCAN).
    pub(crate) fn reading(&self, key: Option<&[u8]>) -> Reading<'_> {
        if let Some(g) = spin(|| self.lock.try_read()) {
            return Reading::Shared(g);
        }
        off_workers(|| loop {
            // Counted before the scope is read, so that a holder that
            // cleared the scope first then sees the count (both SeqCst, and
            // the scope's mutex orders the rest).
            self.beside.fetch_add(1, SeqCst);
            let verdict = self.scope.lock().as_ref().map(|w| match key {
                Some(k) => !w.may_change(k),
                None => !w.changes_some(),
            });
            if verdict == Some(true) {
                return Reading::Beside(&self.beside);
            }
            self.beside.fetch_sub(1, SeqCst);
            match verdict {
                // The holder changes this key: wait for it to end.
                Some(false) => return Reading::Shared(self.lock.read()),
                // Not said (yet): look again shortly — a transaction
                // publishes its keys once it holds the gate.
                _ => {
                    if let Some(g) = self.lock.try_read_for(Duration::from_micros(200)) {
                        return Reading::Shared(g);
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};

    fn keys(k: &[&str]) -> Writes {
        Writes::Keys(k.iter().map(|k| k.as_bytes().to_vec()).collect())
    }

    /// Whether `f` finishes on another thread while `hold` holds the gate.
    fn runs_beside(gate: &Arc<Gate>, hold: Option<Writes>, f: fn(&Gate)) -> bool {
        let held = gate.exclusive(hold);
        let (tx, rx) = mpsc::channel();
        let g = gate.clone();
        let h = std::thread::spawn(move || {
            f(&g);
            tx.send(()).unwrap();
        });
        let ran = rx.recv_timeout(Duration::from_millis(200)).is_ok();
        drop(held);
        h.join().unwrap();
        ran
    }

    #[test]
    fn reads_of_other_keys_run_beside_a_holder_that_named_its_keys() {
        let gate = Arc::new(Gate::default());
        assert!(runs_beside(&gate, Some(keys(&["a"])), |g| {
            drop(g.reading(Some(b"b")));
        }));
        assert!(!runs_beside(&gate, Some(keys(&["a"])), |g| {
            drop(g.reading(Some(b"a")));
        }));
        // A holder that changes something: reads of every key wait.
        assert!(!runs_beside(&gate, Some(keys(&["a"])), |g| {
            drop(g.reading(None));
        }));
        // A holder that changes nothing: every read runs.
        assert!(runs_beside(&gate, Some(Writes::none()), |g| {
            drop(g.reading(None));
        }));
        // Unnamed: everything waits.
        assert!(!runs_beside(&gate, None, |g| drop(g.reading(Some(b"b")))));
        assert!(!runs_beside(&gate, Some(Writes::Any), |g| {
            drop(g.reading(Some(b"b")));
        }));
        // Writes wait whatever the holder named.
        assert!(!runs_beside(&gate, Some(Writes::none()), |g| drop(
            g.shared()
        )));
        assert_eq!(gate.beside.load(SeqCst), 0);
    }

    #[test]
    fn the_next_holder_waits_for_reads_let_in_beside() {
        let gate = Arc::new(Gate::default());
        let first = gate.exclusive(Some(keys(&["a"])));
        let (in_tx, in_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel::<()>();
        let g = gate.clone();
        let reader = std::thread::spawn(move || {
            let r = g.reading(Some(b"b"));
            assert!(matches!(r, Reading::Beside(_)));
            in_tx.send(()).unwrap();
            out_rx.recv().unwrap();
            drop(r);
        });
        in_rx.recv().unwrap();
        drop(first);
        let (got_tx, got_rx) = mpsc::channel();
        let g = gate.clone();
        let next = std::thread::spawn(move || {
            let _held = g.exclusive(Some(keys(&["b"])));
            got_tx.send(()).unwrap();
        });
        assert!(
            got_rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the next holder began while a read let in beside was reading"
        );
        out_tx.send(()).unwrap();
        got_rx.recv().unwrap();
        reader.join().unwrap();
        next.join().unwrap();
    }
}
