//! Resets on Redis: a board's content moved aside and its archive made in
//! steps that any node can finish after a crash, and the scheduled resets
//! (`run_due_resets`, `spawn_reset_scheduler`), which any number of podium
//! nodes may run on the same Redis with each period archived once.

use std::sync::Arc;
use std::time::Duration;

use podium_core::api::ResetOut;
use podium_core::backend::Backend;
use podium_core::error::{ApiError, Code};
use podium_core::schedule::{self, DateTime, Utc};
use podium_engine::Store;
use redis::Value;

use crate::config::{archive_fields, archive_in_json, config_of, stored_config};
use crate::conn::NO_ARGS;
use crate::reply::{arr, arr_last, int, protocol, text};
use crate::RedisBackend;

/// What [`RedisBackend::scheduled_states`] read: the time and each
/// board's config JSON, read-only flag and period.
#[doc(hidden)]
pub struct SeenResets {
    now: DateTime<Utc>,
    names: Vec<String>,
    states: Vec<Result<BoardState, ApiError>>,
}

/// A board's `json`, `ro` and `p` fields.
type BoardState = (Option<String>, Option<String>, Option<String>);

/// What [`RedisBackend::reset_from`] did with the caller's reset.
enum ResetRun {
    /// The config or the period changed since the caller read them:
    /// nothing was done.
    Stale,
    /// Made; `reported`: this node recorded the archive's name (script op
    /// `name`), so it is the one to report it. Another node that found the
    /// reset staged may have named it first, and then reports it.
    Made { out: ResetOut, reported: bool },
    /// Another node that found the reset staged named its archive and
    /// finished it before this one could: that node reports it.
    FinishedElsewhere,
}

/// The archive label of a reset at `now` of a board without a schedule.
fn time_label(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Entries of a reset's content copied into the archive per script run.
const COPY_CHUNK: u64 = 10_000;

impl RedisBackend {
    /// Runs every scheduled reset that fell due by the clock's now, as the
    /// embedded `Service::run_due_resets` does, and returns the archives
    /// this call made. Any number of podium nodes may call it at once on
    /// the same Redis: a board leaves a period in the same script run that
    /// empties it (`take` refuses a period already left), so each period
    /// of each board is archived exactly once, by whichever node gets
    /// there first; the others see it done and make nothing.
    ///
    /// A board that fails (Redis down for its slot, staging keys left by
    /// a reset that crashed) is logged and skipped, so it does not hold up
    /// the others; only a failure to list the boards is an error.
    pub async fn run_due_resets(&self) -> Result<Vec<ResetOut>, ApiError> {
        let seen = self.scheduled_states().await?;
        Ok(self.run_resets_seen(seen).await)
    }

    /// The first half of [`RedisBackend::run_due_resets`]: the clock's
    /// now and what every board's config hash held (public for tests,
    /// which let another node act between the halves).
    #[doc(hidden)]
    pub async fn scheduled_states(&self) -> Result<SeenResets, ApiError> {
        let now = self.now();
        let names = self.registered_boards().await?;
        // Plain reads, concurrently (each board has its own slot); the
        // script re-checks what they saw before it changes anything.
        let states = self
            .config_hash_fields::<BoardState>(&names, &["json", "ro", "p"])
            .await;
        Ok(SeenResets { now, names, states })
    }

    /// The second half of [`RedisBackend::run_due_resets`]: the resets
    /// due by what was seen; the script re-checks it before it changes
    /// anything.
    #[doc(hidden)]
    pub async fn run_resets_seen(&self, seen: SeenResets) -> Vec<ResetOut> {
        let SeenResets { now, names, states } = seen;
        let mut made = Vec::new();
        for (board, state) in names.iter().zip(states) {
            let (json, ro, period) = match state {
                Ok((Some(json), ro, period)) => (json, ro, period),
                // Listed but not (or no longer) created: see `keys::REGISTRY`.
                Ok((None, _, _)) => continue,
                Err(e) => {
                    tracing::error!(board = %board, "scheduled reset: {e}");
                    continue;
                }
            };
            if ro.as_deref() == Some("1") {
                continue;
            }
            let Some(reset) = serde_json::from_str::<serde_json::Value>(&json)
                .ok()
                .and_then(|v| stored_config(&v).ok())
                .map(|c| c.reset)
            else {
                continue;
            };
            let Some(label) = schedule::period_label(&reset, now) else {
                continue;
            };
            let r = match period {
                Some(p) if p == label => continue,
                None => self
                    .call(board, "period", [json.as_str(), label.as_str()])
                    .await
                    .map(|_| ResetRun::Stale),
                Some(p) => {
                    self.reset_from(board, &json, Some(&p), &p, Some(&label), &mut made)
                        .await
                }
            };
            match r {
                // Each archive is reported by the one node that named it.
                Ok(ResetRun::Made {
                    out,
                    reported: true,
                }) => made.push(out),
                Ok(_) => {}
                // Deleted or archived meanwhile.
                Err(e) if matches!(e.code, Code::BoardNotFound | Code::ReadOnly) => {}
                Err(e) => tracing::error!(board = %board, "scheduled reset failed: {e}"),
            }
        }
        made
    }

    /// `reset`, as the embedded engine makes it: the archive is named
    /// after the period the board is in, or the current one, or (no
    /// schedule) the time; a scheduled board then enters the current
    /// period. The script refuses if another node reset or reconfigured
    /// the board between the read and the reset; then the reset is
    /// computed again.
    pub(crate) async fn reset_board(&self, board: &str) -> Result<ResetOut, ApiError> {
        for _ in 0..5 {
            let (info, json) = self.info_raw(board).await?;
            let reset = config_of(&info)?.reset;
            let now = self.now();
            let next = schedule::period_label(&reset, now);
            let fallback = next.clone().unwrap_or_else(|| time_label(now));
            let label = info.period.as_deref().unwrap_or(&fallback);
            // Refused before the content moves, as the engine refuses it.
            Store::validate_user_name(&format!("{board}@{label}"))?;
            match self
                .reset_from(
                    board,
                    &json,
                    info.period.as_deref(),
                    &fallback,
                    next.as_deref(),
                    &mut Vec::new(),
                )
                .await?
            {
                // The caller's reset, whichever node named its archive.
                ResetRun::Made { out, .. } => return Ok(out),
                ResetRun::FinishedElsewhere => return Err(protocol("reset finished elsewhere")),
                ResetRun::Stale => {}
            }
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "the board kept changing during the reset; try again",
        ))
    }

    /// One reset of `board` as seen in `json` (its config) and `period`:
    /// archives the content under the period (or `fallback` when it has
    /// none) and enters period `next`, all in one script run that refuses
    /// ([`ResetRun::Stale`]) if the config or the period changed since
    /// they were read. Then copies the content into the archive and
    /// applies `keep_archives`. A reset found staged first (stopped
    /// half-way, or still being finished by the node that took it) is
    /// finished, and added to `finished` when this call named its archive.
    async fn reset_from(
        &self,
        board: &str,
        json: &str,
        period: Option<&str>,
        fallback: &str,
        next: Option<&str>,
        finished: &mut Vec<ResetOut>,
    ) -> Result<ResetRun, ApiError> {
        // At most one reset that stopped half-way is ever pending (take
        // refuses to start another), so this runs at most twice.
        for _ in 0..3 {
            let mut taken = arr(self
                .call(
                    board,
                    "take",
                    [json, period.unwrap_or(""), fallback, next.unwrap_or("")],
                )
                .await?)?;
            match taken.first().and_then(text).as_deref() {
                Some("stale") if taken.len() == 1 => return Ok(ResetRun::Stale),
                Some("unfinished") if taken.len() >= 4 => {
                    let staged = int(&taken[1])?;
                    let label = text(&taken[2]).ok_or_else(|| protocol("take"))?;
                    let archive = text(&taken[3]).filter(|a| !a.is_empty());
                    let fields = taken.drain(4..).filter_map(|v| text(&v)).collect();
                    let done = self
                        .finish_reset(board, staged, &label, archive, fields)
                        .await?;
                    tracing::warn!(board = %board, archive = ?done, members = staged,
                        "finished a reset found staged");
                    if let Some((archive, true)) = done {
                        finished.push(ResetOut {
                            board: board.to_string(),
                            archive,
                            archived: staged,
                        });
                    }
                    continue;
                }
                _ => {}
            }
            if taken.len() < 2 {
                return Err(protocol("take"));
            }
            let archived = int(&taken[0])?;
            let label = text(&taken[1]).ok_or_else(|| protocol("take"))?;
            let fields = taken.drain(2..).filter_map(|v| text(&v)).collect();
            let Some((archive, reported)) = self
                .finish_reset(board, archived, &label, None, fields)
                .await?
            else {
                return Ok(ResetRun::FinishedElsewhere);
            };
            return Ok(ResetRun::Made {
                out: ResetOut {
                    board: board.to_string(),
                    archive,
                    archived,
                },
                reported,
            });
        }
        Err(ApiError::new(
            Code::StorageUnavailable,
            "a reset stopped half-way could not be finished; try again",
        ))
    }

    /// Steps 2-4 of a reset whose content `take` moved to the staging
    /// keys (`staged` members, for period `label`, the archive's config
    /// `fields`): names the archive (or uses the name recorded by an
    /// earlier attempt), creates it, copies the content in, drops the
    /// staging keys and applies `keep_archives`. Every step can run again
    /// after a crash: the name is recorded before the archive exists, an
    /// archive already created under it is reused, and copying an entry
    /// again changes nothing. Returns the archive and whether this call
    /// recorded its name, or `None` when another node finished this reset
    /// first.
    async fn finish_reset(
        &self,
        board: &str,
        staged: u64,
        label: &str,
        recorded: Option<String>,
        fields: Vec<String>,
    ) -> Result<Option<(String, bool)>, ApiError> {
        let keep = fields
            .chunks(2)
            .find(|f| f.len() == 2 && f[0] == "json")
            .and_then(|f| serde_json::from_str::<serde_json::Value>(&f[1]).ok())
            .and_then(|c| c.get("keep_archives").and_then(|k| k.as_u64()));
        let name = match recorded {
            Some(a) => a,
            None => self.next_archive_name(board, label).await?,
        };
        Store::validate_user_name(&name)?;
        let Some((archive, seq, named)) = self.name_archive(board, &name).await? else {
            return Ok(None);
        };
        let fields = archive_fields(fields, board, seq)?;
        self.registry("SADD", &archive).await?;
        match self.call(&archive, "create", fields).await {
            // Created by an earlier attempt at this reset (the name is
            // recorded before the archive exists, so it is this one's).
            Err(e) if e.code == Code::BoardExists => {}
            r => drop(r?),
        }
        self.copy_staged(board, &archive, staged).await?;
        self.call(board, "unstage", NO_ARGS).await?;
        if let Some(keep) = keep {
            let archives = self.archives_of(board).await?;
            let excess = archives.len().saturating_sub(keep as usize);
            for (old, _) in &archives[..excess] {
                let req = podium_core::ops::DeleteBoard { board: old.clone() };
                match self.board_delete(&req).await {
                    Err(e) if e.code != Code::BoardNotFound => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(Some((archive, named)))
    }

    /// Copies the staged content of `board` (step 1 of `reset` done) into
    /// the archive, which exists, in chunks.
    async fn copy_staged(&self, board: &str, archive: &str, n: u64) -> Result<(), ApiError> {
        let mut from = 0;
        while from < n {
            let to = (from + COPY_CHUNK).min(n) - 1;
            let mut a = arr(self
                .call(board, "staged", [from.to_string(), to.to_string()])
                .await?)?;
            if a.len() != 4 {
                return Err(protocol("staged"));
            }
            let srcs = arr_last(&mut a)?;
            let data = arr_last(&mut a)?;
            let names = arr_last(&mut a)?;
            let ms = arr_last(&mut a)?;
            let mut args: Vec<Vec<u8>> = Vec::with_capacity(ms.len() * 5 / 2);
            // Bytes as they are: a board with sort keys stages each member
            // as its codes (any byte) then its id.
            let raw = |v: Option<&Value>| bytes_of(v).unwrap_or_default();
            for (i, pair) in ms.chunks(2).enumerate() {
                let [m, sc] = pair else {
                    return Err(protocol("staged entries"));
                };
                args.extend([
                    bytes_of(Some(m)).ok_or_else(|| protocol("member"))?,
                    bytes_of(Some(sc)).ok_or_else(|| protocol("score"))?,
                    raw(names.get(i)),
                    raw(data.get(i)),
                    raw(srcs.get(i)),
                ]);
            }
            self.call(archive, "load", args).await?;
            from = to + 1;
        }
        Ok(())
    }

    /// The archives of `board` with their sequence numbers, oldest first,
    /// as [`Store::archives_of`] orders them; archives made before they
    /// recorded theirs are numbered as [`podium_engine::store::legacy_archives`]
    /// numbers them, before every newer one.
    async fn archives_of(&self, board: &str) -> Result<Vec<(String, u64)>, ApiError> {
        let names = self.registered_boards().await?;
        let states = self
            .config_hash_fields::<(Option<String>, Option<String>)>(&names, &["json", "ro"])
            .await;
        let mut found = Vec::new();
        let mut legacy = Vec::new();
        for (name, state) in names.iter().zip(states) {
            let (Some(json), ro) = state? else {
                continue;
            };
            if ro.as_deref() != Some("1") {
                continue;
            }
            match archive_in_json(&json) {
                Some(a) if a.board == board => found.push((name.clone(), a.seq)),
                Some(_) => {}
                None => legacy.push(name.as_str()),
            }
        }
        for (name, a) in podium_engine::store::legacy_archives(&legacy) {
            if a.board == board {
                found.push((name, a.seq));
            }
        }
        found.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        Ok(found)
    }

    /// The name of a new archive of `board` for period `label`, as the
    /// embedded engine names it: one past the highest taken for the label.
    async fn next_archive_name(&self, board: &str, label: &str) -> Result<String, ApiError> {
        let base = podium_engine::store::archive_base(board, label);
        let taken = self.boards_starting_with(&base).await?;
        Ok(podium_engine::store::next_archive_name(
            &base,
            taken.iter().map(String::as_str),
        ))
    }

    /// Records the name and sequence number of the archive of the reset
    /// staged on `board` (script op `name`), unless an earlier attempt
    /// recorded them. Returns the recorded name, sequence number, and
    /// whether this call recorded them; `None` when the reset was finished
    /// meanwhile.
    async fn name_archive(
        &self,
        board: &str,
        name: &str,
    ) -> Result<Option<(String, u64, bool)>, ApiError> {
        let seq = self
            .archives_of(board)
            .await?
            .last()
            .map_or(1, |(_, s)| s.saturating_add(1));
        match self
            .call(board, "name", [name.to_string(), seq.to_string()])
            .await?
        {
            Value::Nil => Ok(None),
            v => match arr(v)?.as_slice() {
                [a, set, seq] => Ok(Some((
                    text(a).ok_or_else(|| protocol("name"))?,
                    int(seq)?,
                    int(set)? == 1,
                ))),
                _ => Err(protocol("name")),
            },
        }
    }

    /// For tests: a reset of `board` that stops as a crash would, after
    /// its first step (`copied: None`: the content moved to the staging
    /// keys, no archive yet) or after naming and creating the archive and
    /// copying the first `copied` entries into it (all of them: only the
    /// staging keys are left). The next `reset` finishes it.
    #[doc(hidden)]
    pub async fn reset_stopped_half_way(
        &self,
        board: &str,
        copied: Option<u64>,
    ) -> Result<(), ApiError> {
        let (info, json) = self.info_raw(board).await?;
        let now = time_label(self.now());
        let taken = arr(self
            .call(board, "take", [json.as_str(), "", now.as_str(), ""])
            .await?)?;
        if info.period.is_some() || taken.len() < 2 {
            return Err(protocol("take (a board without a schedule)"));
        }
        let Some(copied) = copied else {
            return Ok(());
        };
        let label = text(&taken[1]).unwrap_or_default();
        let name = self.next_archive_name(board, &label).await?;
        let (name, seq, _) = self
            .name_archive(board, &name)
            .await?
            .ok_or_else(|| protocol("name"))?;
        let fields: Vec<String> = taken[2..].iter().filter_map(text).collect();
        let fields = archive_fields(fields, board, seq)?;
        self.registry("SADD", &name).await?;
        self.call(&name, "create", fields).await?;
        self.copy_staged(board, &name, copied).await
    }

    /// For tests: the first step of the scheduled reset that
    /// `run_due_resets` would make of `board` now (its content moved to
    /// the staging keys, the next period entered), left there as a node
    /// that stopped, or has not yet gone on, leaves it.
    #[doc(hidden)]
    pub async fn take_due_reset(&self, board: &str) -> Result<(), ApiError> {
        let (info, json) = self.info_raw(board).await?;
        let reset = config_of(&info)?.reset;
        let (Some(p), Some(label)) = (info.period, schedule::period_label(&reset, self.now()))
        else {
            return Err(protocol("take (a board with a schedule and a period)"));
        };
        let taken = arr(self
            .call(board, "take", [json.as_str(), &p, &p, &label])
            .await?)?;
        if taken.len() < 2 {
            return Err(protocol("take (a period not yet left)"));
        }
        Ok(())
    }
}

/// Starts the reset scheduler of a Redis-backed server: every second it
/// runs [`RedisBackend::run_due_resets`] and logs the archives it made, as
/// the embedded server's background task does for `Service`. Every podium
/// node on the same Redis runs one; a due period is still archived once
/// (see `run_due_resets`). It runs until the handle is aborted (at
/// shutdown) or the runtime stops.
pub fn spawn_reset_scheduler(backend: Arc<RedisBackend>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match backend.run_due_resets().await {
                Ok(made) => {
                    for r in made {
                        tracing::info!(board = %r.board, archive = %r.archive, members = r.archived, "scheduled reset");
                    }
                }
                Err(e) => tracing::error!("scheduled resets: {e}"),
            }
        }
    })
}

/// A reply's bytes, copied.
fn bytes_of(v: Option<&Value>) -> Option<Vec<u8>> {
    v.and_then(crate::reply::bytes).map(<[u8]>::to_vec)
}
