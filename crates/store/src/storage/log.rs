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

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

use super::record::LogOp;
use super::StorageError;
use crate::FsyncPolicy;

/// First bytes of every segment file.
pub const SEGMENT_MAGIC: &[u8; 8] = b"PDMLOG\0\x01";
/// `len | crc | lsn`.
pub const FRAME_HEADER: usize = 16;
/// How often the flusher collects appended records that nobody waits for
/// (every record under `everysec` and `no`; under `always` a writer's
/// [`Log::wait`] wakes it at once, so this only bounds how long a record
/// that no caller waits for, e.g. a scheduled reset's, stays in memory).
const COLLECT_EVERY: Duration = Duration::from_millis(10);
/// Largest payload a frame may carry; a length above it is damage, not data.
pub const MAX_PAYLOAD: usize = 1 << 30;

pub fn segment_name(start_lsn: u64) -> String {
    format!("log-{start_lsn:020}.pdml")
}

/// Segments in `dir`, by starting LSN.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    super::list_numbered(dir, "log-", ".pdml")
}

/// Appends one frame for `op` with `lsn` to `out`.
pub fn encode_frame(out: &mut Vec<u8>, lsn: u64, op: &LogOp) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    op.encode(out);
    let payload_len = out.len() - start - FRAME_HEADER;
    out[start + 8..start + 16].copy_from_slice(&lsn.to_le_bytes());
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start..start + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// How reading a segment ended.
#[derive(Debug, PartialEq)]
pub enum SegmentEnd {
    /// Every byte was a whole, valid frame.
    Clean { last_lsn: Option<u64> },
    /// Bytes from `valid_len` on are not a valid frame (a torn or damaged
    /// tail); `why` says what was wrong.
    Damaged {
        last_lsn: Option<u64>,
        valid_len: u64,
        file_len: u64,
        why: String,
    },
}

/// Reads every valid frame of a segment in order, calling `f(lsn, op)`.
pub fn read_segment(path: &Path, f: impl FnMut(u64, LogOp)) -> io::Result<SegmentEnd> {
    let mut file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut data = Vec::with_capacity(file_len as usize);
    file.read_to_end(&mut data)?;
    Ok(parse_segment(&data, f))
}

/// [`read_segment`] of bytes already in memory.
pub fn parse_segment(data: &[u8], mut f: impl FnMut(u64, LogOp)) -> SegmentEnd {
    let file_len = data.len() as u64;
    let damaged = |last_lsn, valid_len: usize, why: String| SegmentEnd::Damaged {
        last_lsn,
        valid_len: valid_len as u64,
        file_len,
        why,
    };
    if data.len() < SEGMENT_MAGIC.len() || &data[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
        if let Some(v) = other_version(data) {
            return damaged(
                None,
                0,
                format!("segment format version {v} is not supported"),
            );
        }
        return damaged(None, 0, "segment header missing or wrong".into());
    }
    let mut pos = SEGMENT_MAGIC.len();
    let mut last_lsn: Option<u64> = None;
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < FRAME_HEADER {
            return damaged(last_lsn, pos, "incomplete frame header".into());
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().unwrap());
        let lsn = u64::from_le_bytes(rest[8..16].try_into().unwrap());
        if len > MAX_PAYLOAD {
            return damaged(last_lsn, pos, format!("frame length {len} too large"));
        }
        if rest.len() < FRAME_HEADER + len {
            return damaged(last_lsn, pos, "incomplete frame".into());
        }
        if crc32c::crc32c(&rest[8..FRAME_HEADER + len]) != crc {
            return damaged(last_lsn, pos, "checksum mismatch".into());
        }
        if last_lsn.is_some_and(|l| lsn != l + 1) {
            return damaged(last_lsn, pos, format!("LSN {lsn} out of sequence"));
        }
        let Some(op) = LogOp::decode(&rest[FRAME_HEADER..FRAME_HEADER + len]) else {
            return damaged(last_lsn, pos, "undecodable record".into());
        };
        f(lsn, op);
        last_lsn = Some(lsn);
        pos += FRAME_HEADER + len;
    }
    SegmentEnd::Clean { last_lsn }
}

/// The format version of a segment header that is intact but for a
/// version this podium does not read (a newer podium wrote it).
pub fn other_version(data: &[u8]) -> Option<u8> {
    let n = SEGMENT_MAGIC.len();
    (data.len() >= n
        && data[..n - 1] == SEGMENT_MAGIC[..n - 1]
        && data[n - 1] != SEGMENT_MAGIC[n - 1])
        .then(|| data[n - 1])
}

/// The frame starting at `at`, as `(payload length, LSN)`, if it is whole
/// and its checksum holds and its LSN is within `lsns`. The LSN is checked
/// before the CRC, so a stretch of garbage costs a comparison per byte,
/// not a checksum.
pub fn whole_frame_at(
    data: &[u8],
    at: usize,
    lsns: std::ops::RangeInclusive<u64>,
) -> Option<(usize, u64)> {
    let head = data.get(at..at.checked_add(FRAME_HEADER)?)?;
    let len = u32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(head[4..8].try_into().unwrap());
    let lsn = u64::from_le_bytes(head[8..16].try_into().unwrap());
    // A length that runs past the end of the file cannot be a frame that
    // was written whole: no checksum is computed for it.
    let end = at + FRAME_HEADER + len;
    if len > MAX_PAYLOAD || end > data.len() || !lsns.contains(&lsn) {
        return None;
    }
    (crc32c::crc32c(&data[at + 8..end]) == crc).then_some((len, lsn))
}

/// Whole frames found after the first invalid one of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beyond {
    /// Where the first of them starts.
    pub offset: u64,
    /// How many there are.
    pub frames: u64,
    /// Their highest LSN.
    pub last_lsn: u64,
}

/// Looks for whole frames after the invalid frame at `bad` in a segment's
/// bytes. A crash can only tear the final write, which is the end of the
/// file, so any whole frame after `bad` (or a whole frame at `bad` itself,
/// invalid only by its LSN or its payload) means the bytes at `bad` are
/// damage, not a torn tail. `expected` is the LSN the frame at `bad` should
/// hold; a candidate after it must hold an LSN from there up to what the
/// rest of the file could hold (every frame is at least `FRAME_HEADER`
/// bytes).
///
/// Bytes are tried one by one where nothing valid is found, and a whole
/// frame is stepped over, so the scan is one pass over the file plus the
/// checksums of candidates whose length fits in the file and whose LSN is
/// plausible. A `bad` inside the segment header (a damaged header) scans
/// from the header's end: no frame starts before it.
pub fn frames_beyond(data: &[u8], bad: usize, expected: u64) -> Option<Beyond> {
    let bad = bad.max(SEGMENT_MAGIC.len().min(data.len()));
    let room = (data.len().saturating_sub(bad) / FRAME_HEADER) as u64;
    let lsns = expected..=expected.saturating_add(room);
    let mut found: Option<Beyond> = None;
    let mut note = |at: usize, lsn: u64| {
        let b = found.get_or_insert(Beyond {
            offset: at as u64,
            frames: 0,
            last_lsn: lsn,
        });
        b.frames += 1;
        b.last_lsn = b.last_lsn.max(lsn);
    };
    let mut at = bad;
    // Whatever its LSN (a duplicate too), a whole frame was not torn.
    if let Some((len, lsn)) = whole_frame_at(data, bad, 0..=u64::MAX) {
        note(bad, lsn);
        at += FRAME_HEADER + len;
    } else {
        at += 1;
    }
    while at + FRAME_HEADER <= data.len() {
        match whole_frame_at(data, at, lsns.clone()) {
            Some((len, lsn)) => {
                note(at, lsn);
                at += FRAME_HEADER + len;
            }
            None => at += 1,
        }
    }
    found
}

/// Creates a segment file holding only the header, durably.
fn create_segment(dir: &Path, start_lsn: u64) -> io::Result<File> {
    let path = dir.join(segment_name(start_lsn));
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)?;
    f.write_all(SEGMENT_MAGIC)?;
    f.sync_all()?;
    sync_dir(dir)?;
    f.seek(SeekFrom::End(0))?;
    Ok(f)
}

pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

enum Work {
    Bytes(Vec<u8>),
    /// Start a new segment whose first record has this LSN.
    Rotate(u64),
}

struct State {
    /// Frames appended since the last hand-over to the flusher.
    buf: Vec<u8>,
    queue: VecDeque<Work>,
    next_lsn: u64,
    shutdown: bool,
}

/// `(durable LSN, failed)`: every record up to the LSN is written (and,
/// under `always`, synced); `failed` while the flusher cannot write (it
/// keeps retrying, and clears the flag once everything is written).
type Durable = (u64, bool);

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    durable: watch::Sender<Durable>,
    /// Bytes appended since the last rotation (drives snapshots).
    since_rotation: AtomicU64,
    /// Bytes in live segment files.
    live_bytes: AtomicU64,
    /// Why the flusher last failed (read only while `failed` is set).
    error: Mutex<Option<String>>,
    /// fsyncs done (group commit shows as fewer syncs than records).
    syncs: AtomicU64,
    /// Held by a test to stop the flusher between batches.
    #[cfg(any(test, feature = "faults"))]
    pause: Mutex<()>,
    #[cfg(any(test, feature = "faults"))]
    faults: Mutex<Faults>,
}

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
                queue: VecDeque::new(),
                next_lsn,
                shutdown: false,
            }),
            wake: Condvar::new(),
            durable,
            since_rotation: AtomicU64::new(0),
            live_bytes: AtomicU64::new(live_bytes + SEGMENT_MAGIC.len() as u64),
            error: Mutex::new(None),
            syncs: AtomicU64::new(0),
            #[cfg(any(test, feature = "faults"))]
            pause: Mutex::new(()),
            #[cfg(any(test, feature = "faults"))]
            faults: Mutex::new(Faults::default()),
        });
        metrics::gauge!("podium_log_failed").set(0.0);
        let flusher = Flusher {
            s: shared.clone(),
            dir: dir.to_path_buf(),
            policy,
            file: Some(file),
            seg_start: next_lsn,
            synced_len: SEGMENT_MAGIC.len() as u64,
            unsynced: Vec::new(),
            unsynced_bytes: 0,
            pending: VecDeque::new(),
            torn: false,
            must_sync: false,
            last_sync: Instant::now(),
        };
        let flusher = std::thread::Builder::new()
            .name("podium-log".into())
            .spawn(move || flusher.run())?;
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
        drop(st);
        self.shared.since_rotation.fetch_add(n, Ordering::Relaxed);
        self.shared.live_bytes.fetch_add(n, Ordering::Relaxed);
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
        let mut st = self.shared.state.lock();
        let buf = std::mem::take(&mut st.buf);
        if !buf.is_empty() {
            st.queue.push_back(Work::Bytes(buf));
        }
        let next = st.next_lsn;
        st.queue.push_back(Work::Rotate(next));
        drop(st);
        self.shared.since_rotation.store(0, Ordering::Relaxed);
        self.shared.wake.notify_one();
        next - 1
    }

    /// The LSN the next record will get.
    pub fn next_lsn(&self) -> u64 {
        self.shared.state.lock().next_lsn
    }

    /// fsyncs done so far.
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    pub fn bytes_since_rotation(&self) -> u64 {
        self.shared.since_rotation.load(Ordering::Relaxed)
    }

    pub fn live_bytes(&self) -> u64 {
        self.shared.live_bytes.load(Ordering::Relaxed)
    }

    /// Segment files were deleted after a snapshot.
    pub fn forget_bytes(&self, n: u64) {
        let _ = self
            .shared
            .live_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(n))
            });
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
const UNSYNCED_MAX: usize = 32 << 20;

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
    last_sync: Instant,
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
                    if self.policy == FsyncPolicy::EverySec
                        && !self.unsynced.is_empty()
                        && self.last_sync.elapsed() >= Duration::from_secs(1)
                    {
                        break;
                    }
                    self.s.wake.wait_for(&mut st, COLLECT_EVERY);
                }
            }
            #[cfg(any(test, feature = "faults"))]
            drop(self.s.pause.lock());
            let (last_lsn, shutdown) = {
                let mut st = self.s.state.lock();
                let buf = std::mem::take(&mut st.buf);
                if !buf.is_empty() {
                    st.queue.push_back(Work::Bytes(buf));
                }
                self.pending.extend(st.queue.drain(..));
                (st.next_lsn - 1, st.shutdown)
            };
            match self.pass(shutdown) {
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
            }
        }
        let due = match self.policy {
            FsyncPolicy::Always => true,
            FsyncPolicy::EverySec => self.last_sync.elapsed() >= Duration::from_secs(1),
            FsyncPolicy::No => false,
        };
        if !self.unsynced.is_empty()
            && (due || shutdown || self.must_sync || self.unsynced_bytes > UNSYNCED_MAX)
        {
            self.sync()?;
        }
        Ok(())
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
        self.unsynced.clear();
        self.unsynced_bytes = 0;
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

/// `e` with the operation and segment it failed on, for the operator.
fn context(e: io::Error, doing: &str, seg_start: u64) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("{doing} {}: {e}", segment_name(seg_start)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::record::SubmitRec;
    use podium_engine::{Cond, Presence};
    use std::fs;

    fn op(i: u64) -> LogOp {
        LogOp::Submit {
            board: "b".into(),
            entries: vec![SubmitRec {
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

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("podium-log-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn read_all(dir: &Path) -> (Vec<u64>, Vec<SegmentEnd>) {
        let mut lsns = Vec::new();
        let mut ends = Vec::new();
        for (_, p) in list_segments(dir).unwrap() {
            ends.push(read_segment(&p, |l, _| lsns.push(l)).unwrap());
        }
        (lsns, ends)
    }

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
    fn torn_and_corrupt_tails_are_reported_where_they_start() {
        let dir = tmp("torn");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..5 {
            log.append(&op(i));
        }
        log.close().unwrap();
        let path = list_segments(&dir).unwrap()[0].1.clone();
        let full = fs::read(&path).unwrap();
        // Record sizes are equal here: find the start of the last frame.
        let frame = (full.len() - SEGMENT_MAGIC.len()) / 5;
        let last = full.len() - frame;
        for cut in [last + 3, last + FRAME_HEADER, full.len() - 1] {
            fs::write(&path, &full[..cut]).unwrap();
            let mut n = 0;
            let end = read_segment(&path, |_, _| n += 1).unwrap();
            assert_eq!(n, 4);
            assert!(
                matches!(end, SegmentEnd::Damaged { valid_len, .. } if valid_len == last as u64),
                "{end:?}"
            );
        }
        let mut bad = full.clone();
        bad[last + FRAME_HEADER + 2] ^= 0x40;
        fs::write(&path, &bad).unwrap();
        let end = read_segment(&path, |_, _| {}).unwrap();
        assert!(matches!(end, SegmentEnd::Damaged { ref why, .. } if why.contains("checksum")));
        // A huge length prefix is damage, not an allocation.
        let mut huge = full[..last].to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&[0; 12]);
        fs::write(&path, &huge).unwrap();
        let end = read_segment(&path, |_, _| {}).unwrap();
        assert!(matches!(end, SegmentEnd::Damaged { ref why, .. } if why.contains("too large")));
    }

    /// Torn or damaged: what follows the first invalid frame decides.
    #[test]
    fn whole_frames_after_a_bad_one_mean_damage() {
        let dir = tmp("beyond");
        let log = Log::open(&dir, 1, FsyncPolicy::Always, 0).unwrap();
        for i in 0..5 {
            log.append(&op(i));
        }
        log.close().unwrap();
        let path = list_segments(&dir).unwrap()[0].1.clone();
        let full = fs::read(&path).unwrap();
        let frame = (full.len() - SEGMENT_MAGIC.len()) / 5;
        let at = |i: usize| SEGMENT_MAGIC.len() + i * frame;
        let bad_at = |data: &[u8]| match parse_segment(data, |_, _| {}) {
            SegmentEnd::Damaged {
                valid_len,
                last_lsn,
                ..
            } => (valid_len as usize, last_lsn.map_or(1, |l| l + 1)),
            e => panic!("{e:?}"),
        };
        // A flip in record 2: records 3 to 5 follow, whole.
        let mut flipped = full.clone();
        flipped[at(1) + FRAME_HEADER + 3] ^= 2;
        let (p, expected) = bad_at(&flipped);
        assert_eq!((p, expected), (at(1), 2));
        let b = frames_beyond(&flipped, p, expected).unwrap();
        assert_eq!((b.offset, b.frames, b.last_lsn), (at(2) as u64, 3, 5));
        // Torn inside the last record, with or without garbage after: none.
        for tail in [&[][..], &[0; 40], &[0xff; 9]] {
            let mut torn = full[..at(4) + 20].to_vec();
            torn.extend_from_slice(tail);
            let (p, expected) = bad_at(&torn);
            assert_eq!(frames_beyond(&torn, p, expected), None);
        }
        // A whole frame with an LSN already used (a second writer): damage.
        let mut dup = full.clone();
        dup.extend_from_slice(&full[at(0)..at(1)]);
        let (p, expected) = bad_at(&dup);
        assert_eq!((p, expected), (full.len(), 6));
        assert_eq!(frames_beyond(&dup, p, expected).unwrap().frames, 1);
        // A damaged length running past the end is not a candidate; the
        // frames after it still are.
        let mut long = full.clone();
        long[at(2) + 3] = 0x30;
        let (p, expected) = bad_at(&long);
        assert_eq!(frames_beyond(&long, p, expected).unwrap().last_lsn, 5);
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
