//! The memory budget (`--maxmemory`, as Redis's): the one place that says
//! whether the process may take more memory. Used memory is what the
//! process holds from its allocator ([`podium_engine::used`], installed by
//! the `podium` binary), so stored boards, connection buffers, requests in
//! flight, transaction queues and replies all count without keeping books
//! of their own.
//!
//! The budget holds against the larger of that count and the process's
//! resident size as last sampled ([`note_resident`]), which also holds the
//! allocator's overhead and the program.
//!
//! Beyond the budget, operations that add data ([`Op::adds_data`]) are
//! refused ([`admit`]) and a connection may not grow a buffer past it
//! ([`room_for`]); reads and deletions go on, so memory can be freed. The
//! budget is process-wide, as the allocator is: one server per process.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::{ApiError, Code};
use crate::op::Op;

/// The budget in bytes; 0: none.
static MAX: AtomicU64 = AtomicU64::new(0);
/// Bytes promised to requests that are about to allocate them.
static RESERVED: AtomicU64 = AtomicU64::new(0);
/// The process's resident size at the last sample ([`note_resident`]).
static RESIDENT: AtomicU64 = AtomicU64::new(0);

/// Sets the budget (0: none).
pub fn set_max(bytes: u64) {
    MAX.store(bytes, Relaxed);
}

/// The budget in bytes; 0: none.
pub fn max() -> u64 {
    MAX.load(Relaxed)
}

/// Bytes the process holds from its allocator (0 when it does not
/// count), plus those reserved by requests about to allocate them.
pub fn used() -> u64 {
    podium_engine::used::allocated().unwrap_or(0) as u64 + RESERVED.load(Relaxed)
}

/// Records the process's resident size, sampled by the server a few
/// times a second. The allocator's own overhead (headers, rounding, free
/// lists) and the program itself are resident but not counted in
/// [`used`]: the budget holds against the larger of the two, so the
/// resident size, not only the count, stays within it.
pub fn note_resident(bytes: u64) {
    RESIDENT.store(bytes, Relaxed);
}

/// What the budget compares against: the larger of [`used`] and the last
/// resident size (plus what is reserved).
fn pressure() -> u64 {
    used().max(RESIDENT.load(Relaxed) + RESERVED.load(Relaxed))
}

/// Largest step (a small write, a small request's reservation) that may
/// be judged without reading the counters; see [`ample`].
const SMALL: u64 = 64 << 10;
/// Most small steps one thread judges from one reading.
const MAX_SKIPS: u32 = 256;

thread_local! {
    /// Small steps this thread may still take on its last reading.
    static SKIPS: Cell<u32> = const { Cell::new(0) };
}

/// Whether a small step fits without reading the counters. Reading them
/// is a sum over the allocator's per-thread counters, cache lines every
/// core writes: a few hundred nanoseconds on each write request. So a
/// reading that found ample room lets this thread take a number of small
/// steps unread: at most an eighth of the room it found, counting each
/// step as [`SMALL`] bytes (with a few threads at once, at most half
/// the room). Large steps are always judged on a fresh reading.
fn ample(bytes: u64) -> bool {
    bytes <= SMALL
        && SKIPS.with(|s| match s.get() {
            0 => false,
            n => {
                s.set(n - 1);
                true
            }
        })
}

/// A fresh reading of the pressure, granting this thread the small steps
/// it leaves room for.
fn reading(max: u64) -> u64 {
    let p = pressure();
    let room = max.saturating_sub(p);
    let skips = (room / 8 / SMALL).min(MAX_SKIPS as u64) as u32;
    SKIPS.with(|s| s.set(skips));
    p
}

/// Whether used memory is over the budget, on a fresh reading: for
/// replies piling up, where the steps between two checks can be large.
pub fn over() -> bool {
    let max = max();
    max > 0 && reading(max) > max
}

/// Whether a write of ordinary size must be refused: [`over`], judged
/// on a recent reading while it left ample room ([`ample`]).
pub fn full() -> bool {
    let max = max();
    max > 0 && !ample(0) && reading(max) > max
}

/// Whether `more` bytes may be taken without going over the budget.
pub fn room_for(more: usize) -> bool {
    let max = max();
    let more = more as u64;
    max == 0 || ample(more) || reading(max).saturating_add(more) <= max
}

/// `bytes` promised to a request that is about to allocate them (reading
/// a large body, decoding a batch), so concurrent large requests cannot
/// all pass the check before any of them has allocated; or the refusal
/// when they do not fit. Given back when dropped.
pub fn reserve(bytes: usize) -> Result<Reservation, ApiError> {
    let n = bytes as u64;
    RESERVED.fetch_add(n, Relaxed);
    let max = max();
    if max > 0 && !ample(n) && reading(max) > max {
        RESERVED.fetch_sub(n, Relaxed);
        return Err(refusal());
    }
    Ok(Reservation(n))
}

/// Memory promised by [`reserve`], until dropped.
#[derive(Debug)]
pub struct Reservation(u64);

impl Drop for Reservation {
    fn drop(&mut self) {
        RESERVED.fetch_sub(self.0, Relaxed);
    }
}

/// The refusal of a write or a large request beyond the budget.
pub fn refusal() -> ApiError {
    ApiError::new(
        Code::OutOfMemory,
        format!(
            "out of memory: the server uses more than its memory budget \
             (maxmemory {} bytes); writes and large requests are refused \
             until memory is freed (delete members or boards, or raise --maxmemory)",
            max()
        ),
    )
}

/// `n` results of `f`, refused past the budget: for replies whose size
/// a client chooses (HRANDFIELD, ZRANDMEMBER with a negative count may
/// ask for 2^63 picks). The vector grows as it fills, never sized from
/// `n`, and the budget is read every 1024 results.
pub fn collect_within<T>(n: u64, mut f: impl FnMut() -> T) -> Result<Vec<T>, ApiError> {
    let mut out = Vec::new();
    for i in 0..n {
        if i % 1024 == 1023 && over() {
            return Err(refusal());
        }
        out.push(f());
    }
    Ok(out)
}

/// Refuses `op` when it adds data and the budget is used up.
pub fn admit(op: Op) -> Result<(), ApiError> {
    if op.adds_data() && full() {
        return Err(refusal());
    }
    Ok(())
}

/// What holds the process's memory, part by part: INFO memory's
/// `podium_mem_*` fields and `/metrics`' `podium_memory_bytes{part}`.
/// Each part is the heap bytes of its structures as they count
/// themselves (capacities, not lengths); what no part names (requests in
/// flight, HTTP connections' buffers inside the HTTP library, scripts'
/// Lua heaps, the allocator's rounding) is `other`, the used memory minus
/// the parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// Live boards: their trees, member tables and ids, names and data
    /// (search indexes apart).
    pub boards: u64,
    /// Every board's search index, archives' included (built by a
    /// board's first search).
    pub search_index: u64,
    /// The boards resets archived (search indexes apart).
    pub archives: u64,
    /// The Redis data model beside the boards: strings, hashes and key
    /// expiry times.
    pub keyspace: u64,
    /// The log's batches written and not yet synced, and its spare
    /// batch buffers.
    pub log_buffers: u64,
    /// The events kept for subscribers and webhooks: every filter's ring
    /// (process-wide, [`crate::events::ring_bytes`]).
    pub event_rings: u64,
    /// Client connections' read and write buffers, Redis protocol and
    /// MessagePack-RPC (process-wide, [`connection_buffers`]).
    pub connections: u64,
}

impl MemoryUse {
    /// With the process-wide parts: event rings and connections, which
    /// both engines' rings and every frontend's connections count into.
    pub fn with_process_parts(self) -> MemoryUse {
        MemoryUse {
            event_rings: crate::events::ring_bytes(),
            connections: connection_buffers(),
            ..self
        }
    }

    /// The parts by name, with `other` (what `used` holds beyond them),
    /// in the order INFO and the metrics list them.
    pub fn parts(&self, used: u64) -> [(&'static str, u64); 8] {
        let named = [
            ("boards", self.boards),
            ("search_index", self.search_index),
            ("archives", self.archives),
            ("keyspace", self.keyspace),
            ("log_buffers", self.log_buffers),
            ("event_rings", self.event_rings),
            ("connections", self.connections),
        ];
        let sum: u64 = named.iter().map(|p| p.1).sum();
        let mut out = [("other", used.saturating_sub(sum)); 8];
        out[..7].copy_from_slice(&named);
        out
    }
}

/// Bytes of every open connection's buffers, as [`ConnBuffers`] report
/// them.
static CONNECTION_BUFFERS: AtomicU64 = AtomicU64::new(0);

/// The buffers of all open client connections (Redis protocol and
/// MessagePack-RPC), in bytes.
pub fn connection_buffers() -> u64 {
    CONNECTION_BUFFERS.load(Relaxed)
}

/// Smallest change of a connection's buffers [`ConnBuffers::note`]
/// passes on: the figure is right to this much a connection.
const NOTE_GRANULE: u64 = 8 << 10;

/// One connection's share of [`connection_buffers`]: the connection
/// [`ConnBuffers::note`]s its buffers' capacity after each batch it
/// serves (the shared counter is written only when that changes, which
/// is rare: buffers keep their capacity), and its share is taken back
/// when it closes.
#[derive(Debug, Default)]
pub struct ConnBuffers(u64);

impl ConnBuffers {
    pub fn note(&mut self, bytes: usize) {
        let bytes = bytes as u64;
        // A read buffer's capacity, seen from where its next request
        // starts, shrinks a little with every request it consumes: changes
        // under a granule are not worth a write to the shared counter.
        if bytes.abs_diff(self.0) >= NOTE_GRANULE || (bytes == 0) != (self.0 == 0) {
            if bytes > self.0 {
                CONNECTION_BUFFERS.fetch_add(bytes - self.0, Relaxed);
            } else {
                CONNECTION_BUFFERS.fetch_sub(self.0 - bytes, Relaxed);
            }
            self.0 = bytes;
        }
    }
}

impl Drop for ConnBuffers {
    fn drop(&mut self) {
        CONNECTION_BUFFERS.fetch_sub(self.0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_name_what_used_memory_holds_beyond_them() {
        let m = MemoryUse {
            boards: 100,
            search_index: 20,
            archives: 3,
            keyspace: 4,
            log_buffers: 5,
            event_rings: 6,
            connections: 7,
        };
        let parts = m.parts(1000);
        assert_eq!(parts[0], ("boards", 100));
        assert_eq!(parts[7], ("other", 1000 - 145));
        assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), 1000);
        // Parts counted by capacity can exceed a stale reading of used.
        assert_eq!(m.parts(100)[7], ("other", 0));
    }

    #[test]
    fn connection_buffers_follow_open_connections() {
        let before = connection_buffers();
        let mut a = ConnBuffers::default();
        a.note(1 << 20);
        assert!(connection_buffers() >= before + (1 << 20));
        a.note(16 << 10);
        let mut b = ConnBuffers::default();
        b.note(32 << 10);
        // Other tests' connections may come and go in between: only this
        // test's 1 MiB, far above them, is compared.
        assert!(connection_buffers() < before + (1 << 20));
        drop(a);
        drop(b);
        assert!(connection_buffers() < before + (16 << 10));
    }

    /// The test binary does not count its memory (used = 0): a budget is
    /// never over, but a request larger than the budget finds no room.
    #[test]
    fn room_and_admission() {
        set_max(0);
        assert!(room_for(usize::MAX));
        assert!(admit(Op::Submit).is_ok());
        set_max(1000);
        assert!(room_for(1000) && !room_for(1001));
        assert!(!over());
        assert!(admit(Op::Submit).is_ok());
        // Reservations count until dropped.
        let r = reserve(600).unwrap();
        assert!(reserve(600).is_err());
        assert!(!room_for(500));
        drop(r);
        assert!(reserve(600).is_ok());
        assert!(reserve(1001).is_err());
        // Ample room: small steps are taken on one reading, a bounded
        // number of them; large ones are always read.
        set_max(1 << 40);
        assert!(!over());
        let skips = SKIPS.get();
        assert_eq!(skips, MAX_SKIPS);
        assert!(!full() && room_for(1000));
        assert_eq!(SKIPS.get(), skips - 2);
        assert!(!over());
        assert_eq!(SKIPS.get(), MAX_SKIPS, "over() always reads");
        assert!(room_for(1 << 20));
        assert_eq!(SKIPS.get(), MAX_SKIPS, "a large step reads again");
        // Little room: every step is read. (The budget is set once in a
        // server; here the last grant is dropped by hand.)
        set_max(SMALL * 8 - 1);
        SKIPS.set(0);
        assert!(!over());
        assert_eq!(SKIPS.get(), 0);
        set_max(0);
        let e = refusal();
        assert_eq!(e.code, Code::OutOfMemory);
        assert_eq!(e.code.status(), 503);
    }
}
