//! Test support shared by the decoder fuzz tests of podium's crates: a
//! global allocator that records the largest single allocation, so a test
//! can fail a decoder that reserved what a length prefix claimed instead
//! of what the input holds. A test binary mounts it as `peak`, beside
//! `damage`.

// Each test binary mounting this file uses only some of it.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Records the largest single allocation each thread asks for, so a test
/// can bound what one decode reserved (proptest runs a case on one thread).
struct Peak;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the slot may be gone while the thread shuts down.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Peak = Peak;

/// What decoding `input_len` bytes may reserve at once: a small multiple of
/// the input, whatever its length prefixes claim.
pub fn allowance(input_len: usize) -> usize {
    64 * input_len + 64 * 1024
}

/// Runs `f` and returns its result with the largest allocation it made.
pub fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(|l| l.get()))
}

/// Runs `f` (within [`damage::SLOW`]) and fails if it allocated more than
/// [`allowance`] of `input_len` at once.
#[track_caller]
pub fn bounded<T>(input_len: usize, f: impl FnOnce() -> T) -> T {
    let (out, largest) = super::damage::quick(|| largest_allocation(f));
    assert!(
        largest <= allowance(input_len),
        "decoding {input_len} bytes allocated {largest} bytes at once"
    );
    out
}
