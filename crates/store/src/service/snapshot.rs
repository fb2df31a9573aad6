//! Snapshots of the running service: when one is due (the log's growth
//! against the last snapshot's size), and the cut itself: every board and
//! the keyspace copied under the exclusive gate at the log's rotation, then
//! written without holding anything.

use std::sync::atomic::Ordering;

use podium_engine::BoardImage;

use super::Service;
use crate::storage::snapshot::SnapBoard;
use podium_core::error::{ApiError, Code};

impl Service {
    /// Whether a snapshot is being taken (its copy of the boards held).
    pub fn snapshot_in_progress(&self) -> bool {
        self.snapshotting.load(Ordering::Acquire)
    }

    /// Whether a snapshot is being written or is due at the next check
    /// (the server checks every second): Redis's `aof_rewrite_in_progress`
    /// and `aof_rewrite_scheduled` in one.
    pub fn snapshot_pending(&self) -> bool {
        self.snapshot_in_progress()
            || self
                .storage
                .as_ref()
                .is_some_and(|s| s.log.bytes_since_rotation() >= self.snapshot_due())
    }

    /// Log bytes after which a snapshot is due: `snapshot_every`, or as
    /// many bytes as the last snapshot took if that is more (Redis's AOF
    /// rewrite at 100% growth). Each snapshot writes every board, so a
    /// fixed step would make a bulk load write its data over and over (a
    /// 10M-member load wrote ~7 snapshots of a growing board), while this
    /// keeps the snapshot bytes within a small multiple of the log's, and
    /// the log to replay on recovery no larger than the snapshot.
    fn snapshot_due(&self) -> u64 {
        self.snapshot_every
            .max(self.last_snapshot_bytes.load(Ordering::Relaxed))
    }

    /// Takes a snapshot if the log has grown past the threshold since the
    /// last one (or always, with `force`). Blocking: run it off the async
    /// workers. Returns the snapshot's size, if one was written.
    pub fn maybe_snapshot(&self, force: bool) -> Result<Option<u64>, ApiError> {
        let Some(storage) = &self.storage else {
            return Ok(None);
        };
        if !force && storage.log.bytes_since_rotation() < self.snapshot_due() {
            return Ok(None);
        }
        // While the log cannot write, a snapshot would meet the same full
        // disk, missing permission or exhausted descriptors after copying
        // every board. It stays due and is taken at the first check after
        // the log recovers.
        if !force && storage.log.writable().is_err() {
            return Ok(None);
        }
        if self.snapshotting.swap(true, Ordering::AcqRel) {
            return Ok(None);
        }
        let result = (|| {
            let t = std::time::Instant::now();
            let (lsn, boards, aux) = {
                let _gate = self.exclusive();
                let lsn = storage.log.rotate();
                let periods = self.periods.lock().clone();
                let mut aux = self.keyspace.image();
                aux.outbox = self.outbox.lock().clone();
                let boards: Vec<SnapBoard<BoardImage>> = self
                    .store
                    .list()
                    .into_iter()
                    .filter_map(|(name, _)| {
                        let b = self.store.get(&name)?;
                        let board = b.read().image();
                        Some(SnapBoard {
                            period: periods.get(&name).cloned(),
                            name,
                            board,
                        })
                    })
                    .collect();
                (lsn, boards, aux)
            };
            let paused = t.elapsed();
            let size = storage.snapshot(lsn, &boards, &aux).map_err(|e| {
                ApiError::new(Code::StorageUnavailable, format!("snapshot failed: {e}"))
            })?;
            tracing::info!(
                lsn,
                bytes = size,
                writers_paused_ms = paused.as_millis() as u64,
                total_ms = t.elapsed().as_millis() as u64,
                "snapshot written"
            );
            self.last_snapshot_bytes.store(size, Ordering::Relaxed);
            self.last_save.store(super::unix_secs(), Ordering::Relaxed);
            metrics::gauge!("podium_snapshot_bytes").set(size as f64);
            metrics::histogram!("podium_snapshot_seconds").record(t.elapsed().as_secs_f64());
            Ok(Some(size))
        })();
        self.snapshotting.store(false, Ordering::Release);
        // The copies were nearly as big as the boards. glibc keeps most freed
        // memory mapped unless asked, so without this the resident set
        // would keep a board's size of garbage after every snapshot.
        release_free_memory();
        result
    }
}

impl Service {
    /// The files of a consistent copy of the data directory, open
    /// (`podium backup`): the log is cut with writers paused — as for a
    /// snapshot, but nothing is copied in memory — and once the closed
    /// segments are written, the newest snapshot and every segment up to
    /// the cut are opened. No snapshot runs meanwhile (it could delete
    /// them before they are open); once they are, a later one may, and the
    /// open files still read. Blocking: run it off the async workers.
    pub fn backup_files(&self) -> Result<podium_core::backup::BackupSet, ApiError> {
        use crate::storage::{log, snapshot};
        let Some(storage) = &self.storage else {
            return Err(ApiError::new(
                Code::Unsupported,
                "this server keeps its boards in memory only (no data directory): there is nothing to back up",
            ));
        };
        storage
            .log
            .writable()
            .map_err(|e| ApiError::new(Code::StorageUnavailable, e.to_string()))?;
        // A snapshot being written finishes first (it is bounded by the
        // boards' size); then none starts until the files are open.
        while self.snapshotting.swap(true, Ordering::AcqRel) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let result = (|| {
            let last = {
                let _gate = self.exclusive();
                storage.log.cut()
            };
            storage
                .log
                .written_blocking(last)
                .map_err(|e| ApiError::new(Code::StorageUnavailable, e.to_string()))?;
            let failed = |e: std::io::Error| {
                ApiError::new(
                    Code::StorageUnavailable,
                    format!("backup of {}: {e}", storage.dir.display()),
                )
            };
            let dir = &storage.dir;
            let mut files = Vec::new();
            let mut snapshot_lsn = 0;
            if let Some((lsn, path)) = snapshot::list_snapshots(dir).map_err(failed)?.pop() {
                snapshot_lsn = lsn;
                files.push(path);
            }
            for (start, path) in log::list_segments(dir).map_err(failed)? {
                if start <= last {
                    files.push(path);
                }
            }
            let files = files
                .into_iter()
                .map(|path| {
                    let file = std::fs::File::open(&path).map_err(failed)?;
                    let len = file.metadata().map_err(failed)?.len();
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    Ok(podium_core::backup::BackupFile { name, file, len })
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            tracing::info!(
                snapshot_lsn,
                last_lsn = last,
                files = files.len(),
                "backup cut"
            );
            Ok(podium_core::backup::BackupSet {
                snapshot_lsn,
                last_lsn: last,
                files,
            })
        })();
        self.snapshotting.store(false, Ordering::Release);
        result
    }

    /// SAVE: a snapshot now, whatever the log's growth (a memory-only
    /// service has nothing to write and counts as saved). `false`: one was
    /// already being written.
    pub fn save(&self) -> Result<bool, ApiError> {
        if self.storage.is_none() {
            self.last_save.store(super::unix_secs(), Ordering::Relaxed);
            return Ok(true);
        }
        Ok(self.maybe_snapshot(true)?.is_some())
    }

    /// LASTSAVE, in seconds since the epoch.
    pub fn last_save(&self) -> i64 {
        self.last_save.load(Ordering::Relaxed)
    }
}

/// Hands freed heap memory back to the OS.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: malloc_trim only walks glibc's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::*;

    /// The data directory holds the boards and the webhooks' secrets:
    /// its files (log segments, snapshots, the lock) and itself are the
    /// owner's only, whatever the umask.
    #[cfg(unix)]
    #[tokio::test]
    async fn the_data_directory_is_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmp("modes").join("data");
        let svc = open(&dir);
        svc.submit("b", &[e("a", 1.0)]).await.unwrap();
        assert!(svc.maybe_snapshot(true).unwrap().is_some());
        svc.submit("b", &[e("b", 2.0)]).await.unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            files += 1;
        }
        assert!(files >= 3, "a segment, a snapshot and the lock");
        svc.close().unwrap();
    }

    #[tokio::test]
    async fn a_snapshot_is_pending_from_its_threshold_until_written() {
        let dir = tmp("pending");
        let store = Store::new();
        let (storage, aux, report) =
            crate::storage::open(&dir, FsyncPolicy::Always, &store).unwrap();
        let svc = Service::new(store, Some(storage), aux, report, 4096);
        assert!(!svc.snapshot_pending());
        let batch: Vec<SubmitIn> = (0..100).map(|i| e(&format!("m{i}"), i as f64)).collect();
        svc.submit("b", &batch).await.unwrap();
        assert!(!svc.snapshot_pending(), "under 4 KiB of log");
        // New scores each time: a batch that changes nothing is not logged.
        for round in 1..=5 {
            let batch: Vec<SubmitIn> = (0..100)
                .map(|i| e(&format!("m{i}"), (i * 10 + round) as f64))
                .collect();
            svc.submit("b", &batch).await.unwrap();
        }
        assert!(svc.snapshot_pending(), "past 4 KiB of log");
        assert!(svc.maybe_snapshot(false).unwrap().is_some());
        assert!(!svc.snapshot_pending(), "written");
        assert!(!Service::in_memory().snapshot_pending());
    }

    #[tokio::test]
    async fn a_failed_snapshot_removes_its_temporary_file_and_leaves_the_log_writable() {
        let dir = tmp("snapfail");
        let tmps = |dir: &std::path::Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .filter(|e| {
                    let e = e.as_ref().unwrap();
                    e.file_name().to_string_lossy().ends_with(".tmp")
                })
                .count()
        };
        {
            let svc = open(&dir);
            svc.submit("b", &[e("a", 1.0)]).await.unwrap();
            // The snapshot cut is the last record; a directory where its
            // file goes makes the rename fail after the data was written.
            let cut = svc.last_lsn();
            let target = dir.join(crate::storage::snapshot::snapshot_name(cut));
            std::fs::create_dir(&target).unwrap();
            let err = svc.maybe_snapshot(true).unwrap_err();
            assert_eq!(err.code, Code::StorageUnavailable);
            assert_eq!(tmps(&dir), 0, "the failed snapshot left its .tmp");
            assert!(svc.health().is_ok(), "a snapshot failure poisoned the log");
            svc.submit("b", &[e("b", 2.0)]).await.unwrap();
            std::fs::remove_dir(&target).unwrap();
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            svc.submit("b", &[e("c", 3.0)]).await.unwrap();
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(
            svc.top(&podium_core::ops::Top {
                board: "b".to_string(),
                page: Some(1),
                page_size: Some(10),
                with_data: false
            })
            .unwrap()
            .total,
            3
        );
    }
}
