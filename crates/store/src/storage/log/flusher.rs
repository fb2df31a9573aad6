//! The flusher thread: takes what writers appended, writes it with one
//! `write` per batch, syncs per the policy, publishes the durable LSN, and
//! rotates segments. When a write, sync or segment creation fails it keeps
//! the work, cuts the segment back to what was synced and retries with a
//! backoff. Also the failures a test can inject.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::segment::{create_segment, segment_name, SEGMENT_MAGIC};
use super::{Shared, Work};
use crate::FsyncPolicy;

/// How often the flusher collects appended records that nobody waits for
/// (every record under `everysec` and `no`; under `always` a writer's
/// [`Log::wait`] wakes it at once, so this only bounds how long a record
/// that no caller waits for, e.g. a scheduled reset's, stays in memory).
const COLLECT_EVERY: Duration = Duration::from_millis(10);

/// I/O failures a test makes the flusher meet.
#[cfg(any(test, feature = "faults"))]
#[derive(Debug, Default)]
pub struct Faults {
    /// Each write writes half its bytes, then fails (ENOSPC).
    pub write: bool,
    /// Each sync fails (EIO) after zeroing what it should have made
    /// durable, as when the kernel drops the dirty pages of a failed
    /// writeback: a second, bare fsync would then "succeed".
    pub sync: bool,
    /// Creating a segment fails (EMFILE).
    pub create: bool,
    /// Failures injected so far.
    pub hits: u32,
}

/// First pause between attempts while the log cannot write; it doubles up
/// to `RETRY_MAX`. Short at first, since EMFILE after a burst of
/// connections often clears within milliseconds; capped so that a log
/// waiting for freed disk space or restored permissions notices within a
/// second without spinning.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// Written but unsynced bytes after which the flusher syncs whatever the
/// policy: it keeps them in memory until synced (to write them again if
/// the sync fails), and this bounds that memory under `everysec` and `no`.
const UNSYNCED_MAX: usize = 4 << 20;

/// Under `no`, unsynced bytes are synced once no batch came for this long,
/// and the spare batch buffers are freed once the log was idle this long.
const IDLE: Duration = Duration::from_secs(1);

/// The flusher thread's state. Its invariant: the segment file holds
/// `synced_len` durable bytes, followed (unless `torn`) by exactly the
/// bytes of `unsynced`; everything appended after those is in `pending`
/// or still in the shared buffer. So after any failure it can put the file
/// back to a known-good length and write the rest again.
struct Flusher {
    s: Arc<Shared>,
    dir: PathBuf,
    policy: FsyncPolicy,
    /// The open segment; `None` between closing a segment and creating the
    /// next one.
    file: Option<File>,
    /// The first LSN of the current segment (its name).
    seg_start: u64,
    /// Bytes of the current segment known durable (header and synced frames).
    synced_len: u64,
    /// Batches written since the last sync, kept until it succeeds.
    unsynced: Vec<Vec<u8>>,
    unsynced_bytes: usize,
    /// Work taken from the writers and not done yet, in log order.
    pending: VecDeque<Work>,
    /// A write or sync failed: the file may hold anything past
    /// `synced_len`, so it is cut back there before the next write.
    torn: bool,
    /// Sync at the end of the next pass whatever the policy (after a
    /// failure, recovery is reported only once the bytes are on disk).
    must_sync: bool,
    /// Sync at the end of the next pass: the log went idle with bytes
    /// unsynced.
    sync_idle: bool,
    last_sync: Instant,
    /// When a batch was last written.
    last_write: Instant,
}

/// While the flusher is failing: since when, how often, when to try again.
struct Failing {
    since: Instant,
    attempts: u32,
    pause: Duration,
    retry_at: Instant,
}

impl Flusher {
    fn run(mut self) {
        let mut failing: Option<Failing> = None;
        loop {
            {
                let mut st = self.s.state.lock();
                loop {
                    if st.shutdown {
                        break;
                    }
                    if let Some(f) = &failing {
                        // Writers' wake-ups do not hurry a retry: the
                        // backoff is what keeps a failing disk from
                        // being hammered.
                        if Instant::now() >= f.retry_at {
                            break;
                        }
                        self.s.wake.wait_until(&mut st, f.retry_at);
                        continue;
                    }
                    if !st.buf.is_empty() || !st.queue.is_empty() {
                        break;
                    }
                    if !self.unsynced.is_empty() {
                        // Under `everysec` its second is up; under `no`
                        // the writes stopped a second ago: syncing now
                        // ends the bytes kept for a rewrite.
                        let since = match self.policy {
                            FsyncPolicy::No => self.last_write,
                            _ => self.last_sync,
                        };
                        if self.policy != FsyncPolicy::Always && since.elapsed() >= IDLE {
                            self.sync_idle = true;
                            break;
                        }
                    } else if (st.spare.bytes > 0 || st.buf.capacity() > 0)
                        && self.last_write.elapsed() >= IDLE
                    {
                        st.spare.release();
                        // The batch being filled is empty here, but it may
                        // be a spare buffer taken up again, as large as the
                        // largest batch.
                        st.buf = Vec::new();
                        self.s
                            .held
                            .store(self.held_in_unsynced() as u64, Ordering::Relaxed);
                        release_free_memory();
                    }
                    self.s.wake.wait_for(&mut st, COLLECT_EVERY);
                }
            }
            #[cfg(any(test, feature = "faults"))]
            drop(self.s.pause.lock());
            let (last_lsn, shutdown) = {
                let mut st = self.s.state.lock();
                st.hand_over();
                self.pending.extend(st.queue.drain(..));
                (st.next_lsn - 1, st.shutdown)
            };
            let passed = self.pass(shutdown);
            self.count_held();
            match passed {
                Ok(()) => {
                    if let Some(f) = failing.take() {
                        tracing::info!(
                            attempts = f.attempts,
                            failed_ms = f.since.elapsed().as_millis() as u64,
                            "log writable again: everything appended is written, writes accepted"
                        );
                        metrics::gauge!("podium_log_failed").set(0.0);
                    }
                    self.s.durable.send_replace((last_lsn, false));
                }
                Err(e) => {
                    self.forget_unsynced();
                    let why = e.to_string();
                    match &mut failing {
                        None => {
                            tracing::error!(
                                "log write failed, refusing writes until it recovers \
                                 (retrying by itself): {why}"
                            );
                            metrics::gauge!("podium_log_failed").set(1.0);
                            failing = Some(Failing {
                                since: Instant::now(),
                                attempts: 1,
                                pause: RETRY_FIRST,
                                retry_at: Instant::now() + RETRY_FIRST,
                            });
                        }
                        Some(f) => {
                            tracing::debug!(attempts = f.attempts, "log still cannot write: {why}");
                            f.attempts += 1;
                            f.pause = (f.pause * 2).min(RETRY_MAX);
                            f.retry_at = Instant::now() + f.pause;
                        }
                    }
                    // The reason before the flag: a writer that sees the
                    // flag reads this one, not an older one.
                    *self.s.error.lock() = Some(why);
                    self.s.durable.send_modify(|d| d.1 = true);
                }
            }
            if shutdown {
                if failing.is_some() {
                    tracing::error!(
                        "shutting down with log records unwritten: they were not acknowledged"
                    );
                }
                return;
            }
        }
    }

    /// Does all pending work, then syncs if the policy (or a past failure)
    /// asks. On error the failed item stays pending.
    fn pass(&mut self, shutdown: bool) -> io::Result<()> {
        if self.torn {
            self.cut_back()?;
        }
        while let Some(w) = self.pending.pop_front() {
            let done = match &w {
                Work::Bytes(b) => self.write(b),
                Work::Rotate(next) => self.rotate(*next),
            };
            if let Err(e) = done {
                self.pending.push_front(w);
                return Err(e);
            }
            if let Work::Bytes(b) = w {
                self.unsynced_bytes += b.len();
                self.unsynced.push(b);
                self.last_write = Instant::now();
            }
        }
        let due = match self.policy {
            FsyncPolicy::Always => true,
            FsyncPolicy::EverySec => self.last_sync.elapsed() >= Duration::from_secs(1),
            FsyncPolicy::No => false,
        };
        let idle = std::mem::take(&mut self.sync_idle);
        if !self.unsynced.is_empty()
            && (due || shutdown || self.must_sync || idle || self.unsynced_bytes > UNSYNCED_MAX)
        {
            self.sync()?;
        }
        Ok(())
    }

    fn held_in_unsynced(&self) -> usize {
        self.unsynced.iter().map(Vec::capacity).sum()
    }

    /// Publishes what the flusher holds ([`Log::held_bytes`]).
    fn count_held(&self) {
        let (spare, filling) = {
            let st = self.s.state.lock();
            (st.spare.bytes, st.buf.capacity())
        };
        let pending: usize = self
            .pending
            .iter()
            .map(|w| match w {
                Work::Bytes(b) => b.capacity(),
                Work::Rotate(_) => 0,
            })
            .sum();
        let held = self.held_in_unsynced() + spare + filling + pending;
        self.s.held.store(held as u64, Ordering::Relaxed);
    }

    /// After a failure: what was written since the last good sync is not
    /// trusted (a failed write may have left part of a batch; after a
    /// failed fsync the kernel may have dropped the pages, and a second
    /// fsync would report success without them), so it goes back to the
    /// front of the work, to be written again and synced.
    fn forget_unsynced(&mut self) {
        for b in self.unsynced.drain(..).rev() {
            self.pending.push_front(Work::Bytes(b));
        }
        self.unsynced_bytes = 0;
        self.torn = true;
        self.must_sync = true;
    }

    /// Cuts the segment back to its durable length, so that no garbage is
    /// left between frames for recovery to stop at.
    fn cut_back(&mut self) -> io::Result<()> {
        if let Some(f) = &mut self.file {
            f.set_len(self.synced_len)
                .and_then(|()| f.seek(SeekFrom::Start(self.synced_len)).map(drop))
                .map_err(|e| context(e, "truncating", self.seg_start))?;
        }
        self.torn = false;
        Ok(())
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        if self.file.is_none() {
            // A rotation closes one segment and creates the next in one
            // step; should that ever be split, create it here.
            self.create(self.seg_start)?;
        }
        let Some(f) = &mut self.file else {
            return Err(io::Error::other("no open log segment"));
        };
        #[cfg(any(test, feature = "faults"))]
        {
            let mut faults = self.s.faults.lock();
            if faults.write {
                faults.hits += 1;
                let _ = f.write_all(&b[..b.len() / 2]);
                let e = io::Error::from_raw_os_error(libc::ENOSPC);
                return Err(context(e, "writing", self.seg_start));
            }
        }
        f.write_all(b)
            .map_err(|e| context(e, "writing", self.seg_start))
    }

    fn sync(&mut self) -> io::Result<()> {
        let Some(f) = &self.file else {
            return Ok(());
        };
        #[cfg(any(test, feature = "faults"))]
        {
            let mut faults = self.s.faults.lock();
            if faults.sync {
                faults.hits += 1;
                use std::os::unix::fs::FileExt;
                let zeros = vec![0; self.unsynced_bytes];
                f.write_all_at(&zeros, self.synced_len)?;
                let e = io::Error::from_raw_os_error(libc::EIO);
                return Err(context(e, "syncing", self.seg_start));
            }
        }
        let t = Instant::now();
        f.sync_data()
            .map_err(|e| context(e, "syncing", self.seg_start))?;
        self.s.syncs.fetch_add(1, Ordering::Relaxed);
        metrics::histogram!("podium_fsync_seconds").record(t.elapsed().as_secs_f64());
        self.synced_len += self.unsynced_bytes as u64;
        self.unsynced_bytes = 0;
        if !self.unsynced.is_empty() {
            let synced = std::mem::take(&mut self.unsynced);
            let mut st = self.s.state.lock();
            for b in synced {
                st.spare.give(b);
            }
        }
        self.must_sync = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Closes the current segment durably and creates the one starting at
    /// `next`. Safe to repeat after a failure at any point: a segment
    /// already closed is not synced again, and a half-created one is
    /// created afresh.
    fn rotate(&mut self, next: u64) -> io::Result<()> {
        if self.seg_start != next {
            // Even under `no`: a gap between segments would make the
            // directory unrecoverable.
            self.sync()?;
            self.file = None;
            self.seg_start = next;
        }
        if self.file.is_none() {
            self.create(next)?;
        }
        Ok(())
    }

    fn create(&mut self, start: u64) -> io::Result<()> {
        #[cfg(any(test, feature = "faults"))]
        {
            let mut faults = self.s.faults.lock();
            if faults.create {
                faults.hits += 1;
                let e = io::Error::from_raw_os_error(libc::EMFILE);
                return Err(context(e, "creating", start));
            }
        }
        let f = create_segment(&self.dir, start).map_err(|e| context(e, "creating", start))?;
        self.file = Some(f);
        self.synced_len = SEGMENT_MAGIC.len() as u64;
        self.s
            .live_bytes
            .fetch_add(SEGMENT_MAGIC.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Hands the pages malloc holds free back to the system. A burst of
/// writes leaves the heap holding what its batches used (malloc keeps
/// freed memory for reuse, and returns only the top of a heap by itself);
/// once the log is idle and its buffers are freed, the process's resident
/// size comes back down to what it stores.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks malloc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `e` with the operation and segment it failed on, for the operator.
fn context(e: io::Error, doing: &str, seg_start: u64) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("{doing} {}: {e}", segment_name(seg_start)),
    )
}

/// Starts the flusher thread on `file`, a fresh segment starting at
/// `seg_start`.
pub(super) fn start(
    s: Arc<Shared>,
    dir: &Path,
    policy: FsyncPolicy,
    file: File,
    seg_start: u64,
) -> io::Result<JoinHandle<()>> {
    let flusher = Flusher {
        s,
        dir: dir.to_path_buf(),
        policy,
        file: Some(file),
        seg_start,
        synced_len: SEGMENT_MAGIC.len() as u64,
        unsynced: Vec::new(),
        unsynced_bytes: 0,
        pending: VecDeque::new(),
        torn: false,
        must_sync: false,
        sync_idle: false,
        last_sync: Instant::now(),
        last_write: Instant::now(),
    };
    std::thread::Builder::new()
        .name("podium-log".into())
        .spawn(move || flusher.run())
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::storage::log::testutil::*;

    /// Waits (at most 30 s) until the flusher has recovered.
    fn until_writable(log: &Log) {
        let t = Instant::now();
        while log.writable().is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the log never recovered"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits (at most 30 s) until the flusher has met `n` injected faults.
    fn until_hits(log: &Log, n: u32) {
        let t = Instant::now();
        while log.faults().hits < n {
            assert!(t.elapsed() < Duration::from_secs(30), "no retry happened");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every record reported durable can be read back from the segments
    /// as they are on disk now.
    fn durable_is_on_disk(log: &Log, dir: &Path) {
        let d = log.durable_lsn();
        let (lsns, _) = read_all(dir);
        assert!(
            lsns.len() as u64 >= d && lsns[..d as usize] == (1..=d).collect::<Vec<_>>()[..],
            "durable {d}, on disk {lsns:?}"
        );
    }

    /// Appends `mb` MiB of records in ~64 KiB batches, each once the one
    /// before is written (not synced), returning the most the log held
    /// meanwhile (6.6 MB here, against the 9 MB bound). Batches not yet
    /// written pile up at the disk's pace, not the log's: a loaded
    /// machine's slow fsync once let them reach 12.5 MB; what the log
    /// bounds is what it keeps written but unsynced.
    fn append_mib(log: &Log, mb: usize) -> u64 {
        let big = LogOp::Submit {
            board: "b".into(),
            entries: (0..1000)
                .map(|i| match op(i) {
                    LogOp::Submit { mut entries, .. } => entries.remove(0),
                    _ => unreachable!(),
                })
                .collect(),
        };
        let mut frame = Vec::new();
        encode_frame(&mut frame, 1, &big);
        let per_mib = (1 << 20) / frame.len() + 1;
        let mut most = 0;
        for _ in 0..mb * per_mib {
            let lsn = log.append(&big);
            most = most.max(log.held_bytes());
            log.written_blocking(lsn).unwrap();
        }
        most
    }

    fn until_held_is_zero(log: &Log) {
        let t = Instant::now();
        while log.held_bytes() > 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the log still holds {} bytes",
                log.held_bytes()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_bytes_kept_for_a_rewrite_stay_bounded_and_are_freed_once_idle() {
        for policy in [FsyncPolicy::EverySec, FsyncPolicy::No] {
            let dir = tmp(&format!("held-{policy:?}"));
            let log = Log::open(&dir, 1, policy, 0).unwrap();
            let most = append_mib(&log, 24);
            // Unsynced batches up to the bound plus one pass's batches,
            // and the spare buffers.
            let bound = (super::UNSYNCED_MAX + (1 << 20) + SPARE_BYTES) as u64;
            assert!(most <= bound, "{policy:?}: held {most} > {bound}");
            until_held_is_zero(&log);
            let (lsns, _) = read_all(&dir);
            assert_eq!(lsns.len() as u64, log.next_lsn() - 1, "{policy:?}");
        }
    }

    #[test]
    fn a_failed_write_is_cut_back_and_written_again_once_the_disk_has_room() {
        let dir = tmp("write-fault");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..3 {
            let l = log.append(&op(i));
            log.wait_blocking(l).unwrap();
        }
        log.faults().write = true;
        let l4 = log.append(&op(3));
        let l5 = log.append(&op(4));
        let err = log.wait_blocking(l5).unwrap_err().to_string();
        assert!(err.contains("No space left"), "{err}");
        assert!(log.writable().is_err());
        // Records appended during the failure are taken, not refused:
        // their operations were applied already.
        let l6 = log.append(&op(5));
        assert_eq!((l4, l5, l6), (4, 5, 6));
        // It retries by itself; each failed attempt left half a batch.
        until_hits(&log, 3);
        assert_eq!(log.durable_lsn(), 3, "nothing reported durable unwritten");
        assert!(log.wait_blocking(l6).is_err());
        durable_is_on_disk(&log, &dir);
        log.faults().write = false;
        until_writable(&log);
        log.wait_blocking(l6).unwrap();
        assert_eq!(log.durable_lsn(), 6);
        durable_is_on_disk(&log, &dir);
        log.close().unwrap();
        // No half batch left between frames: the segment reads clean.
        let (lsns, ends) = read_all(&dir);
        assert_eq!(lsns, (1..=6).collect::<Vec<_>>());
        assert!(
            ends.iter().all(|e| matches!(e, SegmentEnd::Clean { .. })),
            "{ends:?}"
        );
    }

    #[test]
    fn a_failed_fsync_is_never_retried_bare_the_bytes_are_written_again() {
        let dir = tmp("sync-fault");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        let l1 = log.append(&op(0));
        log.wait_blocking(l1).unwrap();
        // The injected failure zeroes the bytes it was to make durable,
        // as a kernel that dropped the dirty pages: a retried bare fsync
        // would report success over zeros.
        log.faults().sync = true;
        let l2 = log.append(&op(1));
        let l3 = log.append(&op(2));
        assert!(log.wait_blocking(l3).is_err());
        until_hits(&log, 2);
        assert_eq!(log.durable_lsn(), l1);
        durable_is_on_disk(&log, &dir);
        log.faults().sync = false;
        until_writable(&log);
        log.wait_blocking(l3).unwrap();
        assert_eq!(l2 + 1, l3);
        durable_is_on_disk(&log, &dir);
        log.close().unwrap();
        let (lsns, ends) = read_all(&dir);
        assert_eq!(lsns, vec![1, 2, 3]);
        assert!(
            ends.iter().all(|e| matches!(e, SegmentEnd::Clean { .. })),
            "{ends:?}"
        );
    }

    #[test]
    fn a_rotation_that_cannot_create_its_segment_is_retried() {
        let dir = tmp("create-fault");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..3 {
            log.append(&op(i));
        }
        log.wait_blocking(3).unwrap();
        log.faults().create = true;
        assert_eq!(log.rotate(), 3);
        log.append(&op(3));
        let l5 = log.append(&op(4));
        assert!(log.wait_blocking(l5).is_err());
        until_hits(&log, 2);
        assert_eq!(log.durable_lsn(), 3);
        // A second rotation at the same point (a snapshot retried) is the
        // same cut, not another segment.
        log.faults().create = false;
        until_writable(&log);
        log.wait_blocking(l5).unwrap();
        log.close().unwrap();
        let segs = list_segments(&dir).unwrap();
        assert_eq!(segs.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 4]);
        let (lsns, ends) = read_all(&dir);
        assert_eq!(lsns, (1..=5).collect::<Vec<_>>());
        assert!(
            ends.iter().all(|e| matches!(e, SegmentEnd::Clean { .. })),
            "{ends:?}"
        );
    }

    #[test]
    fn everysec_refuses_while_failing_and_syncs_on_recovery() {
        let dir = tmp("everysec-fault");
        let log = Log::open(&dir, 1, FsyncPolicy::EverySec, 0).unwrap();
        log.append(&op(0));
        log.faults().write = true;
        log.append(&op(1));
        let t = Instant::now();
        while log.writable().is_ok() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the write never failed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(log.wait_blocking(2).is_err());
        let syncs = log.syncs();
        log.faults().write = false;
        until_writable(&log);
        // Recovery is reported once the rewritten bytes are synced, not a
        // second later.
        assert!(log.syncs() > syncs);
        log.wait_blocking(2).unwrap();
        durable_is_on_disk(&log, &dir);
        log.close().unwrap();
        assert_eq!(read_all(&dir).0, vec![1, 2]);
    }

    #[test]
    fn closing_a_log_that_cannot_write_reports_it_without_waiting() {
        let dir = tmp("close-fault");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        log.faults().write = true;
        log.append(&op(0));
        let t = Instant::now();
        let err = log.close().unwrap_err().to_string();
        assert!(err.contains("cannot write"), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
