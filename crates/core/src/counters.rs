//! Counters bumped by every request on every thread (commands run, their
//! time, key hits), read rarely (INFO). One shared atomic would move its
//! cache line between the cores on each bump; here each thread adds to
//! lines of its own, with a plain load and store (it is their only
//! writer), and a reader sums the threads' lines.
//!
//! A reset does not write the threads' lines (a thread's load and store
//! could undo it): it records the sums as a baseline that readings
//! subtract.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;
use thread_local::ThreadLocal;

/// Eight counters on a cache line of their own.
#[repr(align(64))]
#[derive(Default)]
struct Line([AtomicU64; 8]);

/// `len` counters, numbered from 0; see the module doc.
pub struct Counters {
    len: usize,
    per_thread: ThreadLocal<Box<[Line]>>,
    /// The sums at the last reset.
    base: Mutex<Vec<u64>>,
}

impl Counters {
    pub fn new(len: usize) -> Counters {
        Counters {
            len,
            per_thread: ThreadLocal::new(),
            base: Mutex::new(vec![0; len]),
        }
    }

    /// This thread's counters, for several adds with one lookup.
    #[inline]
    pub fn mine(&self) -> Mine<'_> {
        Mine(
            self.per_thread
                .get_or(|| (0..self.len.div_ceil(8)).map(|_| Line::default()).collect()),
        )
    }

    /// Adds `n` to counter `i` (ignored past the last).
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        self.mine().add(i, n);
    }

    /// Every counter's sum over the threads, the baseline not taken off.
    fn sums(&self) -> Vec<u64> {
        let mut sums = vec![0u64; self.len];
        for lines in self.per_thread.iter() {
            for (i, s) in sums.iter_mut().enumerate() {
                *s = s.wrapping_add(lines[i / 8].0[i % 8].load(Relaxed));
            }
        }
        sums
    }

    /// Counter `i` since the last reset.
    pub fn get(&self, i: usize) -> u64 {
        let base = self.base.lock().get(i).copied().unwrap_or(0);
        self.per_thread
            .iter()
            .filter_map(|lines| lines.get(i / 8).map(|l| l.0[i % 8].load(Relaxed)))
            .fold(0u64, u64::wrapping_add)
            .wrapping_sub(base)
    }

    /// Every counter since the last reset.
    pub fn all(&self) -> Vec<u64> {
        let base = self.base.lock();
        let mut sums = self.sums();
        for (s, b) in sums.iter_mut().zip(base.iter()) {
            *s = s.wrapping_sub(*b);
        }
        sums
    }

    /// Counts from zero again.
    pub fn reset(&self) {
        let mut base = self.base.lock();
        *base = self.sums();
    }
}

/// One thread's counters ([`Counters::mine`]).
pub struct Mine<'a>(&'a [Line]);

impl Mine<'_> {
    /// Adds `n` to counter `i` (ignored past the last).
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        if let Some(c) = self.0.get(i / 8).map(|l| &l.0[i % 8]) {
            // This thread is the line's only writer.
            c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_add_up_and_a_reset_starts_from_zero() {
        let c = Arc::new(Counters::new(10));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.add(0, 1);
                        c.add(9, t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(c.get(0), 4000);
        assert_eq!(c.get(9), 6000);
        assert_eq!(c.get(5), 0);
        c.reset();
        assert_eq!(c.all(), vec![0; 10]);
        c.add(9, 2);
        c.add(10, 1);
        assert_eq!(c.get(9), 2);
        assert_eq!(c.all()[9], 2);
    }
}
