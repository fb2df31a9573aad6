//! Transparent huge pages for the heap's large blocks: a global-allocator
//! wrapper that places every block of 2 MiB or more on a 2 MiB boundary and
//! advises the kernel (`madvise(MADV_HUGEPAGE)`) to back its whole 2 MiB
//! pages with huge pages.
//!
//! Why: a large board's page read touches ~25 member records and ~25 id
//! bytes scattered over hundreds of MB (plus a leaf and the lower inner
//! nodes of the tree). With 4 KiB pages nearly each of those is a TLB miss,
//! and under virtualisation a miss is a nested page walk. The engine keeps
//! those structures in 2 MiB chunks (`podium_engine` members arena, records,
//! tree slabs) so this wrapper can give them huge pages; Linux's default
//! THP mode (`madvise`) only does so for regions that ask. Measured at 10M
//! members: 13.4 → 5.6 µs a page of 25 in process (docs/engine.md, "Member
//! table and memory"; the run is in docs/BENCHMARKS.md's git history).
//!
//! The engine does not install it: a binary does, with
//! `#[global_allocator] static A: HugePages<System> = HugePages::new(System);`
//! (`podium`; the benchmark binary wraps its counting allocator instead).
//!
//! Only whole 2 MiB pages inside a block are advised, so a block's tail
//! never pulls a huge page over memory the block does not own. The
//! alignment depends on the layout alone (never on [`HugePages::set_advise`]),
//! so `dealloc` always sees the layout `alloc` used.
//!
//! Blocks of [`MAPPED`] and more are advised but not re-aligned: glibc gives
//! each its own mapping and grows it with `mremap`, which moves page tables
//! instead of bytes. A 2 MiB alignment would force every `realloc` of such a
//! block (the engine's member index doubles as a 100 MB table grows) to
//! allocate, copy and free; unaligned, a block loses at most its partial
//! first and last 2 MiB to small pages.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The huge page size of x86-64 and of arm64 with 4 KiB base pages.
pub const HUGE_PAGE: usize = 2 << 20;
/// From this size on a block keeps the caller's alignment (see the module
/// doc): glibc's largest mmap threshold, so such a block is always a
/// mapping of its own, which `realloc` grows without copying.
pub const MAPPED: usize = 32 << 20;

/// Wraps a [`GlobalAlloc`]; see the module doc.
pub struct HugePages<A> {
    inner: A,
    advise: AtomicBool,
}

impl<A> HugePages<A> {
    pub const fn new(inner: A) -> Self {
        HugePages {
            inner,
            advise: AtomicBool::new(true),
        }
    }

    /// Turns the advice off (or back on) for blocks allocated from now on;
    /// for A/B measurements in one binary.
    pub fn set_advise(&self, on: bool) {
        self.advise.store(on, Relaxed);
    }

    fn advise(&self, p: *mut u8, size: usize) {
        if p.is_null() || !self.advise.load(Relaxed) {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            // The whole 2 MiB pages inside the block.
            let start = (p as usize).next_multiple_of(HUGE_PAGE);
            let end = (p as usize + size) / HUGE_PAGE * HUGE_PAGE;
            if end > start {
                // SAFETY: `start..end` lies inside the block just allocated
                // and is 2 MiB aligned; the advice changes no contents. It
                // fails harmlessly (EINVAL) where THP is not built in: a
                // hint only.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE)
                };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = size;
    }
}

/// The layout a block is really allocated with: 2 MiB aligned from 2 MiB
/// up to [`MAPPED`].
#[inline]
fn real_layout(layout: Layout) -> Layout {
    if !(HUGE_PAGE..MAPPED).contains(&layout.size()) || layout.align() >= HUGE_PAGE {
        return layout;
    }
    // Fails only for sizes near isize::MAX, which no allocator can serve.
    Layout::from_size_align(layout.size(), HUGE_PAGE).unwrap_or(layout)
}

// SAFETY: every block comes from `inner` with `real_layout(layout)`, which
// has the caller's size and an alignment at least the caller's, and goes
// back to `inner` with the same `real_layout(layout)`.
unsafe impl<A: GlobalAlloc> GlobalAlloc for HugePages<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let real = real_layout(layout);
        let p = unsafe { self.inner.alloc(real) };
        if layout.size() >= HUGE_PAGE {
            self.advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let real = real_layout(layout);
        let p = unsafe { self.inner.alloc_zeroed(real) };
        if layout.size() >= HUGE_PAGE {
            self.advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.inner.dealloc(ptr, real_layout(layout)) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY (of the layout): the caller guarantees `new_size` rounded
        // to `layout.align()` does not overflow isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let (real, new_real) = (real_layout(layout), real_layout(new_layout));
        if real == layout && new_real == new_layout {
            let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
            if new_size >= MAPPED {
                self.advise(p, new_size);
            }
            return p;
        }
        // Into, out of or within the 2 MiB aligned class: the inner
        // allocator cannot keep that alignment in place (`System` would
        // copy too), so allocate, copy and free here.
        let p = unsafe { self.alloc(new_layout) };
        if !p.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    static A: HugePages<System> = HugePages::new(System);

    #[test]
    fn large_blocks_are_aligned_and_keep_their_bytes_across_realloc() {
        unsafe {
            let small = Layout::from_size_align(100, 8).unwrap();
            let p = A.alloc(small);
            assert!(!p.is_null());
            p.write_bytes(7, 100);
            // Small to large: moved onto a 2 MiB boundary, bytes kept.
            let q = A.realloc(p, small, 3 * HUGE_PAGE);
            assert_eq!(q as usize % HUGE_PAGE, 0);
            assert!((0..100).all(|i| *q.add(i) == 7));
            q.add(3 * HUGE_PAGE - 1).write(9);
            let large = Layout::from_size_align(3 * HUGE_PAGE, 8).unwrap();
            // Large to larger, then back to small.
            let r = A.realloc(q, large, 5 * HUGE_PAGE);
            assert_eq!(r as usize % HUGE_PAGE, 0);
            assert_eq!(*r.add(3 * HUGE_PAGE - 1), 9);
            assert!((0..100).all(|i| *r.add(i) == 7));
            let larger = Layout::from_size_align(5 * HUGE_PAGE, 8).unwrap();
            let s = A.realloc(r, larger, 50);
            assert!((0..50).all(|i| *s.add(i) == 7));
            A.dealloc(s, Layout::from_size_align(50, 8).unwrap());

            let z = A.alloc_zeroed(Layout::from_size_align(HUGE_PAGE + 1, 1).unwrap());
            assert_eq!(z as usize % HUGE_PAGE, 0);
            assert_eq!(*z.add(HUGE_PAGE), 0);
            A.dealloc(z, Layout::from_size_align(HUGE_PAGE + 1, 1).unwrap());
        }
    }

    #[test]
    fn mapped_blocks_keep_the_callers_alignment_and_their_bytes() {
        unsafe {
            let big = Layout::from_size_align(MAPPED, 8).unwrap();
            assert_eq!(real_layout(big), big);
            let p = A.alloc(big);
            assert!(!p.is_null());
            p.write_bytes(5, MAPPED);
            // Within the class: the inner allocator's own realloc (mremap).
            let q = A.realloc(p, big, 2 * MAPPED);
            assert!((0..MAPPED).step_by(4096).all(|i| *q.add(i) == 5));
            assert_eq!(*q.add(MAPPED - 1), 5);
            q.add(2 * MAPPED - 1).write(1);
            // Out of it, into the aligned class: moved onto a 2 MiB boundary.
            let bigger = Layout::from_size_align(2 * MAPPED, 8).unwrap();
            let r = A.realloc(q, bigger, 3 * HUGE_PAGE);
            assert_eq!(r as usize % HUGE_PAGE, 0);
            assert!((0..3 * HUGE_PAGE).step_by(4096).all(|i| *r.add(i) == 5));
            A.dealloc(r, Layout::from_size_align(3 * HUGE_PAGE, 8).unwrap());
        }
    }

    #[test]
    fn the_layout_alone_decides_the_alignment() {
        let l = Layout::from_size_align(HUGE_PAGE, 8).unwrap();
        assert_eq!(real_layout(l).align(), HUGE_PAGE);
        let s = Layout::from_size_align(HUGE_PAGE - 1, 8).unwrap();
        assert_eq!(real_layout(s), s);
        let m = Layout::from_size_align(MAPPED, 8).unwrap();
        assert_eq!(real_layout(m), m);
        A.set_advise(false);
        assert_eq!(real_layout(l).align(), HUGE_PAGE);
        A.set_advise(true);
    }
}
