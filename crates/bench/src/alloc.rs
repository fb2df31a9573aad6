//! The counting global allocator behind the "bytes per member" figures,
//! and the huge-page share of the process ([`anon_huge_pages`]).
//!
//! [`CountingAlloc`] wraps [`System`] and keeps the live and peak number of
//! bytes handed out. The library does not install it: a binary opts in with
//! `#[global_allocator] static A: CountingAlloc = CountingAlloc;` (the
//! `podium-bench` binary, under the engine's huge-page wrapper, and the
//! criterion benches do; the `podium` server does not). When it is not installed
//! [`stats`] returns `None`, so a report can say "not measured" rather than
//! print a misleading zero.
//!
//! The figures are the bytes *requested* (`Layout::size`): they leave out the
//! system allocator's own per-block headers and rounding, which cost the
//! many-small-allocations std baseline more than podium.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// A [`GlobalAlloc`] that forwards to [`System`] and counts live bytes.
pub struct CountingAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
// Any process that installed the allocator has allocated long before a
// benchmark reads the counters, so "never counted" means "not installed".
/// Live and peak heap bytes seen by [`CountingAlloc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocStats {
    /// Bytes allocated and not yet freed.
    pub live: usize,
    /// The highest `live` since the start or the last [`reset_peak`].
    pub peak: usize,
}

#[inline]
fn grow(n: usize) {
    let live = LIVE.fetch_add(n, Relaxed) + n;
    // A plain load first: the read-modify-write on the shared peak line is
    // only paid when a new high is actually reached.
    if live > PEAK.load(Relaxed) {
        PEAK.fetch_max(live, Relaxed);
    }
}

#[inline]
fn shrink(n: usize) {
    LIVE.fetch_sub(n, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged and only adds bookkeeping on the side.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrink(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        // On failure the old block is untouched, so nothing changes.
        if !p.is_null() {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                shrink(layout.size() - new_size);
            }
        }
        p
    }
}

/// The current counters, or `None` when [`CountingAlloc`] is not the
/// process's global allocator.
pub fn stats() -> Option<AllocStats> {
    // A live probe allocation is counted iff the allocator is installed;
    // this needs no flag stored on every allocation's hot path.
    let probe = std::hint::black_box(Box::new([0u8; 64]));
    let installed = LIVE.load(Relaxed) != 0;
    drop(probe);
    installed.then(|| AllocStats {
        live: LIVE.load(Relaxed),
        peak: PEAK.load(Relaxed),
    })
}

/// Restarts peak tracking from the current live figure, so a later
/// [`stats`] gives the peak of one phase.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// The process's memory in transparent huge pages, as
/// `/proc/self/smaps_rollup` reports it (`AnonHugePages N kB`): whether a
/// measurement ran on them.
pub fn anon_huge_pages() -> String {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("AnonHugePages:"))
                .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        })
        .map_or_else(
            || "AnonHugePages unknown".into(),
            |v| format!("AnonHugePages {v}"),
        )
}
