//! The append-only log: framing, the flusher thread with group commit, and
//! reading segments back at recovery.
//!
//! Writers append an encoded frame to a shared buffer (a memcpy under a
//! mutex, while they still hold their board's lock, so the log order is the
//! apply order) and get its LSN; one flusher thread writes whatever has
//! accumulated with one `write` and, under `--fsync always`, one
//! `fdatasync`, then publishes the highest durable LSN. Writers that wait
//! for their LSN therefore share fsyncs: while one fsync runs, the next
//! batch collects (group commit). When a write, fsync or segment creation
//! fails, the flusher keeps the work, cuts the segment back to what was
//! synced and retries with a backoff until it can write again; meanwhile
//! [`Log::writable`] says why not. The frame layout and the failure
//! handling are in docs/storage.md.
//!
//! The segment files and frames are in [`segment`], the flusher thread
//! and its failure handling in [`flusher`].

mod flusher;
mod segment;

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use super::record::LogOp;
use super::StorageError;
use crate::FsyncPolicy;

#[cfg(any(test, feature = "faults"))]
pub use flusher::Faults;
use segment::create_segment;
pub use segment::{
    encode_frame, frames_beyond, list_segments, other_version, parse_segment, read_segment,
    segment_name, sync_dir, whole_frame_at, Beyond, SegmentEnd, FRAME_HEADER, MAX_PAYLOAD,
    SEGMENT_MAGIC,
};

enum Work {
    Bytes(Vec<u8>),
    /// Start a new segment whose first record has this LSN.
    Rotate(u64),
}

struct State {
    /// Frames appended since the last hand-over to the flusher.
    buf: Vec<u8>,
    /// Emptied batches the flusher gave back once synced, to be the next
    /// `buf`: reusing them keeps a steady stream of writes from
    /// allocating and freeing a batch every few milliseconds, which left
    /// the heap fragmented (resident memory that no board used).
    spare: Spare,
    queue: VecDeque<Work>,
    next_lsn: u64,
    shutdown: bool,
    /// Bytes appended since the log opened (part of [`Log::live_bytes`]);
    /// kept under the lock every append holds anyway, rather than in an
    /// atomic each append would move between the cores.
    appended: u64,
    /// `appended` at the last rotation: the bytes since, which drive
    /// snapshots, are the difference.
    rotated_at: u64,
}

/// At most this many bytes of emptied batches are kept for reuse; the
/// rest are freed.
const SPARE_BYTES: usize = 4 << 20;

/// Emptied batch buffers kept for reuse, bounded by [`SPARE_BYTES`].
#[derive(Default)]
struct Spare {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl Spare {
    fn take(&mut self) -> Vec<u8> {
        match self.bufs.pop() {
            Some(b) => {
                self.bytes -= b.capacity();
                b
            }
            None => Vec::new(),
        }
    }

    /// Keeps `b`, emptied, unless that would pass the bound.
    fn give(&mut self, mut b: Vec<u8>) {
        if self.bytes + b.capacity() <= SPARE_BYTES {
            b.clear();
            self.bytes += b.capacity();
            self.bufs.push(b);
        }
    }

    /// Frees every kept buffer (the log went idle).
    fn release(&mut self) {
        *self = Spare::default();
    }
}

impl State {
    /// Moves the appended frames to the work queue, the next appends
    /// going to a spare buffer.
    fn hand_over(&mut self) {
        if !self.buf.is_empty() {
            let next = self.spare.take();
            let buf = std::mem::replace(&mut self.buf, next);
            self.queue.push_back(Work::Bytes(buf));
        }
    }
}

/// `(durable LSN, failed)`: every record up to the LSN is written (and,
/// under `always`, synced); `failed` while the flusher cannot write (it
/// keeps retrying, and clears the flag once everything is written).
type Durable = (u64, bool);

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    durable: watch::Sender<Durable>,
    /// Bytes in live segment files, but for the records appended since
    /// the log opened ([`State::appended`]).
    live_bytes: AtomicU64,
    /// Why the flusher last failed (read only while `failed` is set).
    error: Mutex<Option<String>>,
    /// fsyncs done (group commit shows as fewer syncs than records).
    syncs: AtomicU64,
    /// Bytes the log holds for its purposes: batches written and not yet
    /// synced (kept to write again should the sync fail), spare batch
    /// buffers and the batch being filled. Bounded; zero once the log has
    /// been idle a second.
    held: AtomicU64,
    /// Held by a test to stop the flusher between batches.
    #[cfg(any(test, feature = "faults"))]
    pause: Mutex<()>,
    #[cfg(any(test, feature = "faults"))]
    faults: Mutex<Faults>,
}

/// The log of one data directory.
pub struct Log {
    shared: Arc<Shared>,
    policy: FsyncPolicy,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl Log {
    /// Opens a fresh segment starting at `next_lsn` (recovery never appends
    /// to an old segment, so a damaged tail can never be followed by new
    /// records) and starts the flusher. `live_bytes`: size of older
    /// segments still on disk.
    pub fn open(
        dir: &Path,
        next_lsn: u64,
        policy: FsyncPolicy,
        live_bytes: u64,
    ) -> io::Result<Log> {
        let file = create_segment(dir, next_lsn)?;
        let (durable, _) = watch::channel((next_lsn - 1, false));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(1 << 16),
                spare: Spare::default(),
                queue: VecDeque::new(),
                next_lsn,
                shutdown: false,
                appended: 0,
                rotated_at: 0,
            }),
            wake: Condvar::new(),
            durable,
            live_bytes: AtomicU64::new(live_bytes + SEGMENT_MAGIC.len() as u64),
            error: Mutex::new(None),
            syncs: AtomicU64::new(0),
            held: AtomicU64::new(0),
            #[cfg(any(test, feature = "faults"))]
            pause: Mutex::new(()),
            #[cfg(any(test, feature = "faults"))]
            faults: Mutex::new(Faults::default()),
        });
        metrics::gauge!("podium_log_failed").set(0.0);
        let flusher = flusher::start(shared.clone(), dir, policy, file, next_lsn)?;
        Ok(Log {
            shared,
            policy,
            flusher: Mutex::new(Some(flusher)),
        })
    }

    pub fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// Appends a record and returns its LSN. Call it while holding the
    /// lock of every board the operation changed, after applying it.
    ///
    /// Never refuses, even while the log cannot write: the operation is
    /// applied already, and a record dropped here would leave memory ahead
    /// of the log (later records would replay onto another state). The
    /// record waits in memory until the flusher can write it; callers
    /// refuse new writes up front with [`Log::writable`] instead.
    pub fn append(&self, op: &LogOp) -> u64 {
        let mut st = self.shared.state.lock();
        let lsn = st.next_lsn;
        let before = st.buf.len();
        encode_frame(&mut st.buf, lsn, op);
        let n = (st.buf.len() - before) as u64;
        st.next_lsn += 1;
        st.appended += n;
        drop(st);
        // No wake-up here, even under `always`: the writer's `wait` gives
        // it. A pipeline batch appends all its records and waits once, for
        // the last; waking at the first append would let the flusher sync
        // part of the batch while the rest executes (several fsyncs for one
        // batch). Records nobody waits for are collected every
        // `COLLECT_EVERY`.
        lsn
    }

    /// Waits until `lsn` is durable under the fsync policy (returns at once
    /// for `everysec` and `no`, like Redis's appendfsync). Fails when the
    /// log cannot write and `lsn` is not durable yet: the record stays
    /// queued and is written if the log recovers, but it is not
    /// acknowledged now.
    pub async fn wait(&self, lsn: u64) -> Result<(), StorageError> {
        if self.policy != FsyncPolicy::Always {
            return self.writable();
        }
        let mut rx = self.shared.durable.subscribe();
        self.wake_for(&rx, lsn);
        let r = rx.wait_for(|&(d, failed)| d >= lsn || failed).await;
        match r {
            Ok(v) if v.0 >= lsn => Ok(()),
            _ => Err(self.failure()),
        }
    }

    /// Blocking form of [`Log::wait`], for threads outside the runtime.
    pub fn wait_blocking(&self, lsn: u64) -> Result<(), StorageError> {
        if self.policy != FsyncPolicy::Always {
            return self.writable();
        }
        self.written_blocking(lsn)
    }

    /// Waits until every record up to `lsn` is written to its segment
    /// (and synced, under `always`), whatever the fsync policy: what a
    /// copy of the files needs. Fails while the log cannot write.
    pub fn written_blocking(&self, lsn: u64) -> Result<(), StorageError> {
        let mut rx = self.shared.durable.subscribe();
        self.wake_for(&rx, lsn);
        loop {
            let (d, failed) = *rx.borrow_and_update();
            if d >= lsn {
                return Ok(());
            }
            if failed {
                return Err(self.failure());
            }
            // A plain condvar would do, but the watch is already there;
            // poll it at a short interval (only used by tests and tools).
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Wakes the flusher for a writer about to wait for `lsn`. A notify
    /// that finds the flusher busy is not lost: the flusher looks at the
    /// buffer, which holds `lsn` already, before it sleeps again.
    fn wake_for(&self, rx: &watch::Receiver<Durable>, lsn: u64) {
        if rx.borrow().0 < lsn {
            self.shared.wake.notify_one();
        }
    }

    fn failure(&self) -> StorageError {
        let why = self
            .shared
            .error
            .lock()
            .clone()
            .unwrap_or_else(|| "the log stopped".into());
        StorageError::Failed(format!(
            "the log cannot write ({why}); writes are refused until it recovers"
        ))
    }

    /// `Ok` while records can be made durable; the reason while the
    /// flusher is failing (it retries by itself). Writers call it before
    /// applying anything, `/healthz` to tell the truth.
    pub fn writable(&self) -> Result<(), StorageError> {
        if self.shared.durable.borrow().1 {
            Err(self.failure())
        } else {
            Ok(())
        }
    }

    /// Closes the current segment at this point: later records go to a new
    /// segment. Returns the last LSN of the closed part (the snapshot cut).
    /// Call it with writers stopped.
    pub fn rotate(&self) -> u64 {
        self.close_segment(true)
    }

    /// [`Log::rotate`] for a copy of the files (a backup): the closed
    /// segments stop growing, but the log's growth towards the next
    /// snapshot still counts from the last snapshot.
    pub fn cut(&self) -> u64 {
        self.close_segment(false)
    }

    fn close_segment(&self, for_snapshot: bool) -> u64 {
        let mut st = self.shared.state.lock();
        st.hand_over();
        let next = st.next_lsn;
        st.queue.push_back(Work::Rotate(next));
        if for_snapshot {
            st.rotated_at = st.appended;
        }
        drop(st);
        self.shared.wake.notify_one();
        next - 1
    }

    /// The LSN the next record will get.
    pub fn next_lsn(&self) -> u64 {
        self.shared.state.lock().next_lsn
    }

    /// Bytes of batches the log holds: written but unsynced, spare, and
    /// the one being appended to (`INFO memory`'s `podium_mem_log_buffers`).
    pub fn held_bytes(&self) -> u64 {
        self.shared.held.load(Ordering::Relaxed)
    }

    /// fsyncs done so far.
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    pub fn bytes_since_rotation(&self) -> u64 {
        let st = self.shared.state.lock();
        st.appended - st.rotated_at
    }

    pub fn live_bytes(&self) -> u64 {
        let appended = self.shared.state.lock().appended;
        let v = self.shared.live_bytes.load(Ordering::Relaxed);
        // Never below zero, should more be forgotten than was counted.
        (v.wrapping_add(appended) as i64).max(0) as u64
    }

    /// Segment files were deleted after a snapshot.
    pub fn forget_bytes(&self, n: u64) {
        // Wraps below zero: what the appends added is counted apart.
        self.shared.live_bytes.fetch_sub(n, Ordering::Relaxed);
    }

    /// Writes and syncs everything appended so far and stops the flusher.
    /// A log that cannot write gets one more attempt, not a wait: the
    /// error says what was left unwritten.
    pub fn close(&self) -> Result<(), StorageError> {
        self.shared.state.lock().shutdown = true;
        self.shared.wake.notify_one();
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
        self.writable()
    }

    /// The highest LSN reported durable.
    #[cfg(test)]
    pub(crate) fn durable_lsn(&self) -> u64 {
        self.shared.durable.borrow().0
    }

    /// The failures the flusher meets from now on.
    #[cfg(any(test, feature = "faults"))]
    pub fn faults(&self) -> parking_lot::MutexGuard<'_, Faults> {
        self.shared.faults.lock()
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    pub(crate) use super::*;
    use crate::storage::record::SubmitRec;
    use podium_engine::{Cond, Presence};
    use std::fs;
    pub(crate) use std::path::{Path, PathBuf};
    pub(crate) use std::time::Instant;

    pub(crate) fn op(i: u64) -> LogOp {
        LogOp::Submit {
            board: "b".into(),
            entries: vec![SubmitRec {
                scores: None,
                member: format!("m{i}").into_bytes().into(),
                score: i as f64,
                op: None,
                presence: Presence::Any,
                cond: Cond::Always,
                name: None,
                data: None,
            }],
        }
    }

    pub(crate) fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("podium-log-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    pub(crate) fn read_all(dir: &Path) -> (Vec<u64>, Vec<SegmentEnd>) {
        let mut lsns = Vec::new();
        let mut ends = Vec::new();
        for (_, p) in list_segments(dir).unwrap() {
            ends.push(read_segment(&p, |l, _| lsns.push(l)).unwrap());
        }
        (lsns, ends)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;

    #[test]
    fn appends_rotates_and_reads_back() {
        let dir = tmp("rot");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..10 {
            let l = log.append(&op(i));
            assert_eq!(l, i + 1);
        }
        assert_eq!(log.rotate(), 10);
        for i in 10..15 {
            log.append(&op(i));
        }
        log.wait_blocking(15).unwrap();
        log.close().unwrap();
        let segs = list_segments(&dir).unwrap();
        assert_eq!(segs.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 11]);
        let (lsns, ends) = read_all(&dir);
        assert_eq!(lsns, (1..=15).collect::<Vec<_>>());
        assert!(ends.iter().all(|e| matches!(e, SegmentEnd::Clean { .. })));
    }

    #[test]
    fn writers_waiting_together_share_one_fsync() {
        let dir = tmp("share");
        let log = Arc::new(Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap());
        // Stop the flusher between batches while 8 writers append and
        // wait: when it resumes, all 8 records are one batch, one fsync.
        let pause = log.shared.pause.lock();
        let before = log.syncs();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    let l = log.append(&op(t));
                    log.wait_blocking(l).unwrap();
                })
            })
            .collect();
        while log.next_lsn() < 9 {
            std::thread::yield_now();
        }
        assert_eq!(log.syncs(), before, "nothing synced while paused");
        drop(pause);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(log.syncs(), before + 1);
        log.close().unwrap();
    }

    #[test]
    fn concurrent_writers_all_become_durable_in_order() {
        let dir = tmp("group");
        let log = Arc::new(Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let l = log.append(&op(t * 1000 + i));
                        log.wait_blocking(l).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        log.close().unwrap();
        let (lsns, _) = read_all(&dir);
        assert_eq!(lsns, (1..=400).collect::<Vec<_>>());
    }
}
