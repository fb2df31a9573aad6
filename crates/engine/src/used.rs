//! The process's used memory, as Redis's `used_memory` counts it: the bytes
//! the program holds from its allocator (requested sizes, without the
//! allocator's own headers, rounding and free lists).
//!
//! [`Used`] wraps a [`GlobalAlloc`] and keeps the count; [`allocated`] reads
//! it. The server's memory budget (`--maxmemory`) compares against it, so it
//! counts everything the process holds — stored boards, connection and
//! reply buffers, transaction queues, request bodies — without each of
//! them keeping its own books.
//!
//! The count is kept in [`SHARDS`] cache-line-sized counters, a thread
//! always adding to the same one: one shared counter would be a cache line
//! that every allocation on every core writes, which showed on pipelined
//! requests. A block may be freed by another thread than the one that
//! allocated it, so a shard can go negative; only the sum means anything.
//!
//! The engine does not install it: the `podium` binary does, as
//! `#[global_allocator] static A: Used<HugePages<System>> = ...`. Without it
//! [`allocated`] returns `None`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering::Relaxed};

/// Number of counters the threads spread over.
pub const SHARDS: usize = 16;

#[repr(align(128))]
struct Shard(AtomicIsize);

static COUNTS: [Shard; SHARDS] = [const { Shard(AtomicIsize::new(0)) }; SHARDS];
static INSTALLED: AtomicBool = AtomicBool::new(false);
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // `const` and without a destructor: reading it never allocates, which
    // an allocator must not do.
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn shard() -> &'static AtomicIsize {
    let i = MY_SHARD
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SHARD.fetch_add(1, Relaxed) % SHARDS;
                s.set(i);
            }
            i
        })
        // A thread being torn down: any counter will do.
        .unwrap_or(0);
    &COUNTS[i].0
}

#[inline]
fn add(n: usize) {
    shard().fetch_add(n as isize, Relaxed);
}

#[inline]
fn sub(n: usize) {
    shard().fetch_sub(n as isize, Relaxed);
}

/// Bytes allocated through [`Used`] and not yet freed; `None` when the
/// process did not install it.
pub fn allocated() -> Option<usize> {
    if !INSTALLED.load(Relaxed) {
        return None;
    }
    let sum: isize = COUNTS.iter().map(|c| c.0.load(Relaxed)).sum();
    Some(sum.max(0) as usize)
}

/// Wraps a [`GlobalAlloc`]; see the module doc.
pub struct Used<A> {
    inner: A,
}

impl<A> Used<A> {
    pub const fn new(inner: A) -> Self {
        Used { inner }
    }
}

#[inline]
fn installed() {
    // A plain load first: the flag is written once.
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments
// unchanged and only counts on the side.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Used<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            installed();
            add(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            installed();
            add(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.inner.dealloc(ptr, layout) };
        sub(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                add(new_size - layout.size());
            } else {
                sub(layout.size() - new_size);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    /// Counts through a wrapper used directly (the test binary's global
    /// allocator is the default one): sizes add up, frees and reallocs
    /// take back what they release, across threads.
    #[test]
    fn counts_live_bytes_across_threads() {
        static A: Used<System> = Used::new(System);
        let before = allocated().unwrap_or(0) as isize;
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let p = unsafe { A.alloc(layout) };
        let after_alloc = allocated().unwrap() as isize;
        assert!(after_alloc - before >= 1000 - 64, "{before} {after_alloc}");
        let p = unsafe { A.realloc(p, layout, 3000) };
        let addr = p as usize;
        // Freed on another thread: its shard goes negative, the sum is right.
        std::thread::spawn(move || unsafe {
            A.dealloc(addr as *mut u8, Layout::from_size_align(3000, 8).unwrap())
        })
        .join()
        .unwrap();
        let end = allocated().unwrap() as isize;
        // Other tests of this binary allocate through System directly, not
        // through `A`: only this test moves the counters.
        assert_eq!(end, before, "{before} {end}");
    }
}
