//! Waiting on an async runtime's worker for something another thread holds:
//! a short spin first, since the gate, a board's lock and a running script
//! are mostly held for microseconds and handing the worker to another
//! thread ([`tokio::task::block_in_place`]) costs two thread switches; then,
//! for a longer wait, off the worker, so it does not take a worker from the
//! requests that could run (a board's writers, whose waits past the spin
//! are short, sleep on the lock where they are instead).

use std::time::{Duration, Instant};

/// How long a wait spins before it leaves the worker: longer than most
/// transactions hold the gate, shorter than leaving the worker costs.
pub const SPIN: Duration = Duration::from_micros(50);

/// `attempt` until it answers, for up to [`SPIN`]; `None` if it never did.
pub fn spin<T>(mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    // Most calls answer at once: no clock read for them.
    if let Some(v) = attempt() {
        return Some(v);
    }
    let start = Instant::now();
    let mut tries = 0u32;
    loop {
        if let Some(v) = attempt() {
            return Some(v);
        }
        tries += 1;
        if tries.is_multiple_of(16) {
            if start.elapsed() >= SPIN {
                return None;
            }
            // On a machine with fewer cores than busy threads the holder
            // may be waiting for this one's core.
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Runs `f` (a wait, or work of unknown length) off the runtime's workers
/// when on one.
pub fn off_workers<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Hands the worker's other duties (its queued tasks, polling the sockets)
/// to another thread while long work goes on here, run on the worker
/// since most such work is short. Called again and again while the work
/// lasts: tokio takes the worker back when [`block_in_place`]'s closure
/// ends before the thread it woke has claimed it, so the closure also
/// wakes an idle worker — through a task queued from off the worker —
/// that steals whatever tasks were left queued here.
///
/// [`block_in_place`]: tokio::task::block_in_place
pub fn leave_worker() {
    off_workers(|| {
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            drop(h.spawn(async {}));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_until_an_answer_or_the_limit() {
        // The clock is first read after 16 failed tries, so an answer by
        // the 17th attempt comes back however slowly the machine runs this
        // thread (a later one may not: a yield can outlast the spin).
        let mut n = 0;
        assert_eq!(
            spin(|| {
                n += 1;
                (n == 17).then_some(n)
            }),
            Some(17)
        );
        let start = Instant::now();
        assert_eq!(spin(|| None::<()>), None);
        assert!(start.elapsed() >= SPIN);
    }
}
