//! Which boards exist and how they are set up: create, reconfigure,
//! delete, archive on a reset (manual or scheduled, with the reset periods
//! they follow) and merge/intersect into a board. Each holds the gate
//! exclusively, so its records are a valid serial order of all boards.

use podium_engine::{BoardConfig, Reset};

use super::Service;
use crate::storage::record::LogOp;
use podium_core::api::*;
use podium_core::error::ApiError;
use podium_core::ops::Combine;
use podium_core::schedule;

impl Service {
    /// Starts tracking the reset period of a scheduled board that has none;
    /// for a board without a schedule, drops the period it had (logged, so
    /// a restart does not bring back the period of a schedule dropped).
    fn start_period(&self, board: &str, reset: &Reset) {
        let Some(label) = schedule::period_label(reset, self.clock.now()) else {
            return self.clear_period_locked(board);
        };
        let mut p = self.periods.lock();
        if p.get(board).is_none() {
            self.append(&LogOp::Period {
                board: board.to_string(),
                label: label.clone(),
            });
            p.insert(board.to_string(), label);
        }
    }

    /// Forgets `board`'s period, logging it as a period with an empty label.
    fn clear_period_locked(&self, board: &str) {
        let mut p = self.periods.lock();
        if p.contains_key(board) {
            self.append(&LogOp::Period {
                board: board.to_string(),
                label: String::new(),
            });
            p.remove(board);
        }
    }

    /// `board_create`: fails if it exists.
    pub async fn board_create(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let mut config = config_from_json(config)?;
        podium_engine::webhook::keep_secrets(&mut config.webhooks, &[])?;
        self.writable()?;
        let lsn = {
            let _gate = self.exclusive();
            self.store.create(board, config.clone())?;
            let lsn = self.append(&LogOp::Create {
                board: board.to_string(),
                config: config.clone(),
                if_absent: false,
            });
            self.start_period(board, &config.reset);
            lsn
        };
        self.durable(self.last_lsn().max(lsn)).await?;
        self.board_info(board)
    }

    /// `board_update` (PUT): creates or reconfigures (re-ranking when the
    /// order, ranking, tiebreak or sort keys change).
    pub async fn board_put(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        let mut config = config_from_json(config)?;
        // Configs are read without their webhooks' secrets: one written
        // back keeps them.
        let old = self.store.read(board, |b| b.config().webhooks.clone());
        podium_engine::webhook::keep_secrets(&mut config.webhooks, &old.unwrap_or_default())?;
        self.writable()?;
        self.resort(board, &config)?;
        let created = {
            let _gate = self.exclusive();
            let before = self.store.read(board, |b| b.config().reset.clone()).ok();
            let created = self.store.put(board, config.clone())?;
            self.append(&LogOp::Put {
                board: board.to_string(),
                config: config.clone(),
            });
            // A new schedule starts with the period of now: the period of
            // the schedule it replaces is not one of its own, and archiving
            // it at the next tick would empty the board at once.
            if before.is_some_and(|r| r != config.reset) {
                self.clear_period_locked(board);
            }
            self.start_period(board, &config.reset);
            created
        };
        self.durable(self.last_lsn()).await?;
        let mut out = self.board_info(board)?;
        out.created = Some(created);
        Ok(out)
    }

    /// Re-ranks an existing board whose order `config` changes, before
    /// the rest of `board_put`: under the board's own write lock and the
    /// gate shared, as a write is, so the other boards are read and
    /// written meanwhile, and logged as the `Put` it is once every member
    /// is in place (a failure changes nothing). [`Service::resort_status`]
    /// follows it.
    fn resort(&self, board: &str, config: &podium_engine::BoardConfig) -> Result<(), ApiError> {
        let Some(b) = self.store.get(board) else {
            return Ok(());
        };
        let total = {
            let b = b.read();
            if !b.config().reranks(config) {
                return Ok(());
            }
            b.len() as u64
        };
        self.resorts.lock().insert(board.to_string(), (0, total));
        let done = crate::wait::off_workers(|| {
            self.write_board(board, |b| {
                if b.is_read_only() {
                    return Err(podium_engine::Error::ReadOnly(board.to_string()).into());
                }
                b.set_config_progress(config.clone(), |done, total| {
                    self.resorts
                        .lock()
                        .insert(board.to_string(), (done as u64, total as u64));
                })?;
                let rec = LogOp::Put {
                    board: board.to_string(),
                    config: config.clone(),
                };
                Ok(((), Some(rec)))
            })
        });
        self.resorts.lock().remove(board);
        done.map(drop)
    }

    /// `resort_status`: how far a re-ranking `board_update` of `board`
    /// has gone.
    pub fn resort_status(&self, board: &str) -> Result<ResortOut, ApiError> {
        let now = self.resorts.lock().get(board).copied();
        if now.is_none() {
            // Not being re-sorted: a board that exists, or none at all.
            self.read(board, |_| ())?;
        }
        Ok(ResortOut {
            board: board.to_string(),
            running: now.is_some(),
            done: now.map_or(0, |n| n.0),
            total: now.map_or(0, |n| n.1),
        })
    }

    pub async fn board_delete(&self, board: &str) -> Result<(), ApiError> {
        self.writable()?;
        {
            let _gate = self.exclusive();
            if !self.store.delete(board) {
                return Err(ApiError::no_board(board));
            }
            self.append(&LogOp::Delete {
                board: board.to_string(),
            });
            self.periods.lock().remove(board);
            self.keyspace.forget_expiry(board.as_bytes());
        }
        self.durable(self.last_lsn()).await
    }

    /// `reset`: archives the board now as `NAME@PERIOD` (the current period
    /// of a scheduled board, else the current UTC time) and empties it.
    pub async fn reset(&self, board: &str) -> Result<ResetOut, ApiError> {
        self.writable()?;
        let out = {
            let _gate = self.exclusive();
            let b = self
                .store
                .get(board)
                .ok_or_else(|| ApiError::no_board(board))?;
            let reset = b.read().config().reset.clone();
            let now = self.clock.now();
            let label = match self.periods.lock().get(board) {
                Some(l) => l.clone(),
                None => schedule::period_label(&reset, now)
                    .unwrap_or_else(|| now.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            };
            let out = self.archive_locked(board, &label)?;
            if let Some(next) = schedule::period_label(&reset, now) {
                self.set_period_locked(board, next);
            }
            out
        };
        self.durable(self.last_lsn()).await?;
        tracing::info!(board, archive = %out.archive, members = out.archived, "board reset");
        Ok(out)
    }

    /// Archives `board` as `board@label` (or `board@label.N` if that name
    /// is taken). Call with the gate held exclusively.
    fn archive_locked(&self, board: &str, label: &str) -> Result<ResetOut, ApiError> {
        let archive = self.store.next_archive_name(board, label);
        let archived = self.store.archive(board, &archive)?;
        self.append(&LogOp::Archive {
            board: board.to_string(),
            archive: archive.clone(),
        });
        Ok(ResetOut {
            board: board.to_string(),
            archive,
            archived,
        })
    }

    fn set_period_locked(&self, board: &str, label: String) {
        self.append(&LogOp::Period {
            board: board.to_string(),
            label: label.clone(),
        });
        self.periods.lock().insert(board.to_string(), label);
    }

    /// Runs every reset that fell due by the clock's now: called every
    /// second by the server, and by tests after moving a manual clock.
    /// Returns the archives made.
    pub async fn run_due_resets(&self) -> Result<Vec<ResetOut>, ApiError> {
        // While the log cannot write, a due reset waits: it runs at the
        // first check after the log recovers (the period is compared, not
        // counted), and failing here every second would only repeat the
        // log's one error line.
        if self.writable().is_err() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let mut made = Vec::new();
        for (name, _) in self.store.list() {
            let Some(b) = self.store.get(&name) else {
                continue;
            };
            let (reset, ro) = {
                let g = b.read();
                (g.config().reset.clone(), g.is_read_only())
            };
            if ro || reset == Reset::Never {
                continue;
            }
            let Some(label) = schedule::period_label(&reset, now) else {
                continue;
            };
            let current = self.periods.lock().get(&name).cloned();
            match current {
                Some(c) if c == label => {}
                None => {
                    let _gate = self.exclusive();
                    self.start_period(&name, &reset);
                }
                Some(c) => {
                    let _gate = self.exclusive();
                    // Re-check under the gate: a manual reset may have won.
                    if self.periods.lock().get(&name) != Some(&c) || self.store.get(&name).is_none()
                    {
                        continue;
                    }
                    made.push(self.archive_locked(&name, &c)?);
                    self.set_period_locked(&name, label);
                }
            }
        }
        if !made.is_empty() {
            self.durable(self.last_lsn()).await?;
        }
        Ok(made)
    }

    /// `merge` (`intersect == false`) or `intersect` into `dest`.
    pub async fn combine(&self, req: &Combine) -> Result<CombineOut, ApiError> {
        let (dest, intersect) = (req.dest.as_str(), req.intersect);
        let (sources, aggregate) = req.args()?;
        self.writable()?;
        let members = {
            let _gate = self.exclusive();
            let srcs: Vec<(&str, f64)> = sources.iter().map(|(n, w)| (n.as_str(), *w)).collect();
            let created = self.store.get(dest).is_none();
            let n = self.store.combine(dest, &srcs, aggregate, intersect)?;
            if created {
                self.append(&LogOp::Create {
                    board: dest.to_string(),
                    config: BoardConfig::default(),
                    if_absent: true,
                });
            }
            self.append(&LogOp::Combine {
                dest: dest.to_string(),
                sources: sources.clone(),
                aggregate,
                intersect,
            });
            n
        };
        if members > 0 {
            self.waiters.signal(dest.as_bytes());
        }
        self.durable(self.last_lsn()).await?;
        Ok(CombineOut {
            board: dest.to_string(),
            members,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::service::testutil::*;
    use chrono::TimeZone;
    use podium_core::schedule::ManualClock;
    use podium_engine::{Board, BoardConfig};
    use std::sync::Arc;

    #[tokio::test]
    async fn manual_resets_in_one_second_keep_the_newest_archives() {
        // Same label each time (a frozen clock): names freed by
        // keep_archives must not come back for a newer archive, and `.10`
        // must sort after `.9`.
        let dir = tmp("reset-same-second");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("lb", &serde_json::json!({"keep_archives": 2}))
            .await
            .unwrap();
        let mut made = Vec::new();
        for i in 0..11 {
            svc.submit("lb", &[e(&format!("m{i}"), i as f64)])
                .await
                .unwrap();
            made.push(svc.reset("lb").await.unwrap().archive);
        }
        assert_eq!(made[0], "lb@2026-11-21T12:00:00Z");
        assert_eq!(made[1], "lb@2026-11-21T12:00:00Z.2");
        assert_eq!(made[10], "lb@2026-11-21T12:00:00Z.11");
        let names: Vec<String> = svc.boards().boards.into_iter().map(|b| b.board).collect();
        assert_eq!(
            names,
            vec![
                "lb",
                "lb@2026-11-21T12:00:00Z.10",
                "lb@2026-11-21T12:00:00Z.11"
            ]
        );
        let newest = svc
            .top(&podium_core::ops::Top {
                board: "lb@2026-11-21T12:00:00Z.11".to_string(),
                page: Some(1),
                page_size: Some(10),
                with_data: false,
            })
            .unwrap();
        assert_eq!(newest.entries[0].member, "m10");
    }

    #[tokio::test]
    async fn scheduled_resets_archive_by_period_and_keep_archives() {
        let dir = tmp("reset");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 23, 59, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create(
            "daily",
            &serde_json::json!({"reset": "daily", "keep_archives": 2}),
        )
        .await
        .unwrap();
        svc.submit("daily", &[e("a", 1.0)]).await.unwrap();
        assert!(svc.run_due_resets().await.unwrap().is_empty());
        for day in 0..3 {
            clock.advance(chrono::Duration::days(1));
            let made = svc.run_due_resets().await.unwrap();
            assert_eq!(made.len(), 1, "day {day}");
            svc.submit("daily", &[e("b", day as f64)]).await.unwrap();
        }
        let names: Vec<String> = svc.boards().boards.into_iter().map(|b| b.board).collect();
        assert_eq!(
            names,
            vec!["daily", "daily@2026-11-21", "daily@2026-11-22"],
            "keep_archives 2 dropped the oldest"
        );
        assert_eq!(svc.board_info("daily@2026-11-22").unwrap().members, 1);
        assert!(svc.board_info("daily@2026-11-22").unwrap().read_only);
        svc.close().unwrap();
        drop(svc);
        // The period survives a restart: a reset that fell due while down
        // runs at the first tick.
        let svc = open(&dir).with_clock(clock.clone());
        assert_eq!(
            svc.board_info("daily").unwrap().period.as_deref(),
            Some("2026-11-23")
        );
        clock.advance(chrono::Duration::days(1));
        let made = svc.run_due_resets().await.unwrap();
        assert_eq!(made[0].archive, "daily@2026-11-23");
        assert_eq!(made[0].archived, 1);
    }

    /// Regression: `keep_archives` picked a board's archives by the prefix
    /// `NAME@`, so resetting `v3` deleted the live board `v3@0-live`.
    #[tokio::test]
    async fn a_reset_keeps_a_live_board_named_like_its_archives() {
        let dir = tmp("live-at");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("v3", &serde_json::json!({"keep_archives": 1}))
            .await
            .unwrap();
        svc.submit("v3@0-live", &[e("w", 1.0)]).await.unwrap();
        for _ in 0..2 {
            svc.submit("v3", &[e("a", 1.0)]).await.unwrap();
            assert_eq!(svc.reset("v3").await.unwrap().archived, 1);
            clock.advance(chrono::Duration::seconds(1));
        }
        assert_eq!(names(&svc), ["v3", "v3@0-live", "v3@2026-11-21T12:00:01Z"]);
        assert_eq!(svc.board_info("v3@0-live").unwrap().members, 1);
        svc.submit("v3@0-live", &[e("x", 2.0)]).await.unwrap();
    }

    /// Regression: a writer's `v2@9999` sorted as the newest archive of
    /// `v2`, so `keep_archives` pruned the real ones, the new one included,
    /// while the reset answered `"archived": 1`.
    #[tokio::test]
    async fn a_writers_board_is_not_taken_for_the_newest_archive() {
        let dir = tmp("writer-at");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("v2", &serde_json::json!({"keep_archives": 2}))
            .await
            .unwrap();
        svc.submit("v2@9999", &[e("w", 1.0)]).await.unwrap();
        let mut made = Vec::new();
        for i in 0..3 {
            svc.submit("v2", &[e(&format!("m{i}"), i as f64)])
                .await
                .unwrap();
            let out = svc.reset("v2").await.unwrap();
            assert_eq!(out.archived, 1);
            made.push(out.archive);
            clock.advance(chrono::Duration::seconds(1));
        }
        assert_eq!(
            names(&svc),
            ["v2", made[1].as_str(), made[2].as_str(), "v2@9999"]
        );
        assert_eq!(
            svc.top(&podium_core::ops::Top {
                board: made[2].clone(),
                page: None,
                page_size: None,
                with_data: false
            })
            .unwrap()
            .entries[0]
                .member,
            "m2"
        );
        assert_eq!(svc.board_info("v2@9999").unwrap().members, 1);
    }

    /// Archives know whose they are, in info and listings, across restarts
    /// through the log and through a snapshot.
    #[tokio::test]
    async fn archives_show_their_board_and_survive_restarts() {
        let dir = tmp("archive-of");
        {
            let svc = open(&dir);
            svc.submit("v2", &[e("a", 1.0)]).await.unwrap();
            svc.submit("v2@9999", &[e("w", 1.0)]).await.unwrap();
            let made = svc.reset("v2").await.unwrap().archive;
            let info = svc.board_info(&made).unwrap();
            assert_eq!(info.archive_of.as_deref(), Some("v2"));
            assert!(info.read_only);
            assert_eq!(info.config["archive_of"], "v2");
            assert_eq!(info.config["archive_seq"], 1);
            assert_eq!(svc.board_info("v2").unwrap().archive_of, None);
            assert!(svc
                .board_info("v2")
                .unwrap()
                .config
                .get("archive_of")
                .is_none());
            // A client cannot make a board an archive.
            let err = svc
                .board_put(
                    "x",
                    &serde_json::json!({"archive_of": "v2", "archive_seq": 9}),
                )
                .await
                .unwrap_err();
            assert_eq!(err.code, Code::InvalidConfig);
            svc.close().unwrap();
        }
        for snapshot in [false, true] {
            let svc = open(&dir);
            let listed: Vec<(String, Option<String>)> = svc
                .boards()
                .boards
                .into_iter()
                .map(|b| (b.board, b.archive_of))
                .collect();
            assert_eq!(listed.len(), 3);
            assert_eq!(listed[0], ("v2".into(), None));
            assert_eq!(listed[1].1.as_deref(), Some("v2"), "{listed:?}");
            assert_eq!(listed[2], ("v2@9999".into(), None));
            if snapshot {
                break;
            }
            svc.maybe_snapshot(true).unwrap();
            svc.close().unwrap();
        }
    }

    /// Data written before archives recorded whose they are: a read-only
    /// `NAME@LABEL` in a snapshot is recognised as an archive of NAME.
    #[tokio::test]
    async fn archives_of_an_older_snapshot_are_recognised() {
        let dir = tmp("legacy");
        {
            let svc = open(&dir);
            svc.board_create("lb", &serde_json::json!({"keep_archives": 2}))
                .await
                .unwrap();
            for label in ["2026-11-20", "2026-11-21"] {
                let mut old = Board::new(BoardConfig::default()).unwrap();
                old.set_read_only(true);
                svc.store().insert(&format!("lb@{label}"), old).unwrap();
            }
            svc.submit("lb@live", &[e("w", 1.0)]).await.unwrap();
            svc.maybe_snapshot(true).unwrap();
            svc.close().unwrap();
        }
        let svc = open(&dir);
        let info = svc.board_info("lb@2026-11-20").unwrap();
        assert_eq!(info.archive_of.as_deref(), Some("lb"));
        assert_eq!(info.config["archive_seq"], 1);
        assert_eq!(svc.board_info("lb@live").unwrap().archive_of, None);
        let made = svc.reset("lb").await.unwrap().archive;
        assert_eq!(
            names(&svc),
            ["lb", "lb@2026-11-21", made.as_str(), "lb@live"]
        );
    }

    /// Regression: dropping a schedule (`reset: never`) was applied but not
    /// logged, so after a restart the old period came back, and setting a
    /// schedule later archived and emptied the board at the next tick.
    #[tokio::test]
    async fn a_dropped_schedule_stays_dropped_after_restart() {
        let dir = tmp("never");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        {
            let svc = open(&dir).with_clock(clock.clone());
            svc.board_create("s", &serde_json::json!({"reset": "daily"}))
                .await
                .unwrap();
            svc.submit("s", &[e("a", 1.0)]).await.unwrap();
            svc.board_put("s", &serde_json::json!({"reset": "never"}))
                .await
                .unwrap();
            assert_eq!(svc.board_info("s").unwrap().period, None);
            svc.close().unwrap();
        }
        clock.advance(chrono::Duration::days(3));
        let svc = open(&dir).with_clock(clock.clone());
        let info = svc.board_info("s").unwrap();
        assert_eq!(info.config["reset"], "never");
        assert_eq!(info.period, None, "the dropped schedule's period is back");
        svc.board_put("s", &serde_json::json!({"reset": "daily"}))
            .await
            .unwrap();
        assert!(
            svc.run_due_resets().await.unwrap().is_empty(),
            "a new schedule archived at once"
        );
        assert_eq!(svc.board_info("s").unwrap().members, 1);
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-11-23")
        );
        clock.advance(chrono::Duration::days(1));
        assert_eq!(svc.run_due_resets().await.unwrap().len(), 1);
    }

    /// A changed schedule starts a fresh period of its own; an unchanged
    /// one keeps the period it is in.
    #[tokio::test]
    async fn a_changed_schedule_starts_a_fresh_period() {
        let dir = tmp("changed");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        let svc = open(&dir).with_clock(clock.clone());
        svc.board_create("s", &serde_json::json!({"reset": "daily"}))
            .await
            .unwrap();
        svc.submit("s", &[e("a", 1.0)]).await.unwrap();
        clock.advance(chrono::Duration::days(2));
        // Same schedule: the period left while nobody looked is archived.
        svc.board_put(
            "s",
            &serde_json::json!({"reset": "daily", "keep_archives": 3}),
        )
        .await
        .unwrap();
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-11-20")
        );
        svc.board_put("s", &serde_json::json!({"reset": "weekly"}))
            .await
            .unwrap();
        assert_eq!(
            svc.board_info("s").unwrap().period.as_deref(),
            Some("2026-W47")
        );
        assert!(svc.run_due_resets().await.unwrap().is_empty());
        assert_eq!(svc.board_info("s").unwrap().members, 1);
    }

    /// Every config field survives a restart exactly as last set, whether
    /// set or cleared, through the log and through a snapshot.
    #[tokio::test]
    async fn every_config_change_survives_restart() {
        let dir = tmp("config");
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 10, 0, 0)
                .unwrap(),
        ));
        let full = serde_json::json!({
            "order": "asc", "ranking": "dense", "tiebreak": "first", "update": "best",
            "min_score": "-inf", "max_score": 1e9, "max_members": 100,
            "reset": "0 0 * * 1", "keep_archives": 4,
            "search_fields": ["name", "team"], "max_data_bytes": 1024
        });
        let other = serde_json::json!({
            "order": "desc", "ranking": "competition", "tiebreak": "last", "update": "incr",
            "min_score": -5, "max_score": "inf", "max_members": 7,
            "reset": "weekly", "keep_archives": 0,
            "search_fields": [], "max_data_bytes": 0
        });
        let steps = [
            full.clone(),
            serde_json::json!({}),
            other,
            serde_json::json!({"reset": "never", "search_fields": ["team"]}),
            full,
            serde_json::json!({"reset": "daily"}),
        ];
        for (i, put) in steps.iter().enumerate() {
            let (want, period) = {
                let svc = open(&dir).with_clock(clock.clone());
                svc.submit("c", &[e("a", 1.0), e("b", 2.0)]).await.unwrap();
                let out = svc.board_put("c", put).await.unwrap();
                assert_eq!(
                    out.config,
                    BoardConfig::from_json(put).unwrap().to_json(),
                    "step {i}"
                );
                if i % 2 == 1 {
                    svc.maybe_snapshot(true).unwrap();
                }
                svc.close().unwrap();
                (out.config, out.period)
            };
            let svc = open(&dir).with_clock(clock.clone());
            let info = svc.board_info("c").unwrap();
            assert_eq!(info.config, want, "step {i} after restart");
            assert_eq!(info.period, period, "step {i} after restart");
            svc.close().unwrap();
            clock.advance(chrono::Duration::hours(30));
        }
    }
}

#[cfg(test)]
mod resort_tests {
    use crate::service::testutil::*;
    use std::sync::Arc;

    /// A `board_update` that changes the order re-ranks a large board
    /// while `resort_status` reports its progress and the other boards
    /// stay readable; the result is logged and survives a restart.
    #[test]
    fn a_resort_reports_progress_and_leaves_other_boards_readable() {
        let dir = tmp("resort");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let n = 400_000u32;
        {
            let svc = Arc::new(open(&dir));
            rt.block_on(async {
                let recs: Vec<_> = (0..n)
                    .map(|i| rec(&format!("m{i}"), f64::from(i)))
                    .collect();
                svc.zadd(b"big", recs, Default::default()).unwrap();
                svc.submit_one("other", &e("x", 1.0)).await.unwrap();
            });
            let put = {
                let svc = svc.clone();
                std::thread::spawn(move || {
                    let cfg = serde_json::json!({"sort": [{"key": "score", "type": "int", "order": "asc"}, {"key": "t"}]});
                    rt.block_on(svc.board_put("big", &cfg)).unwrap()
                })
            };
            let mut seen = Vec::new();
            while !put.is_finished() {
                let s = svc.resort_status("big").unwrap();
                if s.running {
                    assert_eq!(s.total, u64::from(n));
                    assert!(s.done <= s.total);
                    seen.push(s.done);
                    // Another board is read while this one re-ranks.
                    assert_eq!(svc.rank("other", "x").unwrap().rank, 1);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let out = put.join().unwrap();
            assert_eq!(out.members, u64::from(n));
            assert!(!seen.is_empty(), "never saw the re-sort running");
            assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
            assert!(!svc.resort_status("big").unwrap().running);
            assert_eq!(svc.rank("big", "m0").unwrap().rank, 1);
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(svc.rank("big", "m0").unwrap().rank, 1);
        assert_eq!(svc.rank("big", "m399999").unwrap().rank, u64::from(n));
    }
}
