//! What a write may do beyond the engine's own rules, for every storage
//! engine in one place: [`WritePolicy`] wraps any [`Backend`] and
//! - with `--auto-create off`, refuses with `board_not_found` the writes
//!   (`submit`, `submit_many`, `import`) to a board that does not exist,
//!   which would otherwise create it — a typo in a board's name then
//!   fails instead of making a new board;
//! - refuses, with `rate_limited`, the submissions (`submit`, and each
//!   entry of `submit_many`) of a member past its board's
//!   `max_submits_per_member` before the engine sees them (`import` is a
//!   bulk load and is not limited).
//!
//! The Redis protocol writes through the engine's own data model and keeps
//! Redis's rules: ZADD creates its key, whatever `--auto-create` says.
//!
//! Each member has a token bucket ([`crate::rate`]) of `count` tokens,
//! refilled over `per`, kept in this process: with several nodes on one
//! Redis backend, each node limits what it is sent. A board's limit is
//! read from its config (one `board_info` call) and kept for
//! [`CONFIG_TTL`]; a change made through this node applies at once, one
//! made through another node within that time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::RwLock;
use podium_engine::{BoardConfig, SubmitLimit, SubmitResult};

use crate::api::*;
use crate::backend::{Backend, Imported, InPlace};
use crate::entry::SubmitRec;
use crate::error::{ApiError, Code};
use crate::keystore::KeyStore;
use crate::ops::*;
use crate::rate::{retry_secs, Buckets, MonoClock, Rate};

/// How long a board's limit is trusted before its config is read again.
pub const CONFIG_TTL: Duration = Duration::from_secs(1);
/// Most boards whose limit is remembered; past it the memory is dropped.
const MAX_BOARDS: usize = 100_000;
/// Most member buckets kept (about 100 bytes and the member id each);
/// past it, refilled buckets go first, then the least recently used.
pub const MAX_MEMBER_BUCKETS: usize = 1 << 18;

#[derive(Clone, Copy)]
struct Known {
    limit: Option<SubmitLimit>,
    read_at: u64,
}

/// Whether writes to a missing board create it (`--auto-create`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoCreate {
    On,
    Off,
}

/// A [`Backend`] whose writes are held to the policy of the module doc;
/// every other call goes straight through.
pub struct WritePolicy {
    inner: Arc<dyn Backend>,
    auto_create: AutoCreate,
    /// (Looked up on every submission: foldhash, seeded per process, and
    /// at most [`MAX_BOARDS`] entries.)
    boards: RwLock<HashMap<String, Known, foldhash::fast::RandomState>>,
    members: Buckets<Vec<u8>>,
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
    refused: metrics::Counter,
}

impl WritePolicy {
    pub fn new(inner: Arc<dyn Backend>, auto_create: AutoCreate) -> WritePolicy {
        let clock = MonoClock::new();
        Self::with_clock(inner, auto_create, Box::new(move || clock.now()))
    }

    /// With a clock in nanoseconds from any origin (tests drive it).
    pub fn with_clock(
        inner: Arc<dyn Backend>,
        auto_create: AutoCreate,
        clock: Box<dyn Fn() -> u64 + Send + Sync>,
    ) -> WritePolicy {
        WritePolicy {
            inner,
            auto_create,
            boards: RwLock::new(HashMap::default()),
            members: Buckets::new(MAX_MEMBER_BUCKETS),
            clock,
            refused: metrics::counter!("podium_rate_limited_total", "limit" => "member"),
        }
    }

    /// `board`'s limit (`Ok(None)`: none), remembered or read from its
    /// config; `Err(board_not_found)` when the board does not exist and
    /// writes may not create it. A missing board is not remembered: one
    /// created through another node is seen at once.
    async fn limit_of(&self, board: &str, now: u64) -> Result<Option<SubmitLimit>, ApiError> {
        let ttl = CONFIG_TTL.as_nanos() as u64;
        if let Some(k) = self.boards.read().get(board) {
            if now.saturating_sub(k.read_at) < ttl {
                return Ok(k.limit);
            }
        }
        let limit = match self
            .inner
            .board_info(&BoardInfo {
                board: board.to_string(),
            })
            .await
        {
            Ok(info) => BoardConfig::from_json(&info.config)
                .ok()
                .and_then(|c| c.max_submits_per_member),
            Err(e) if e.code == Code::BoardNotFound => {
                return match self.auto_create {
                    AutoCreate::On => Ok(None),
                    AutoCreate::Off => Err(not_created(board)),
                };
            }
            Err(_) => None,
        };
        let mut boards = self.boards.write();
        if boards.len() >= MAX_BOARDS {
            boards.clear();
        }
        boards.insert(
            board.to_string(),
            Known {
                limit,
                read_at: now,
            },
        );
        Ok(limit)
    }

    /// Refuses a bulk write to a missing board when writes may not create
    /// boards (`import` is not rate limited, so only existence counts).
    async fn may_write(&self, board: &str) -> Result<(), ApiError> {
        match self.auto_create {
            AutoCreate::On => Ok(()),
            AutoCreate::Off => self.limit_of(board, (self.clock)()).await.map(drop),
        }
    }

    fn forget(&self, board: &str) {
        self.boards.write().remove(board);
    }

    /// Takes one of `member`'s submissions on `board`.
    fn admit(
        &self,
        limit: SubmitLimit,
        board: &str,
        member: &[u8],
        now: u64,
    ) -> Result<(), ApiError> {
        let rate = Rate {
            count: limit.count,
            period: limit.per,
            burst: limit.count,
        };
        // Board names hold no control characters: the NUL cannot be part
        // of one, so no two (board, member) pairs share a key.
        let mut key = Vec::with_capacity(board.len() + 1 + member.len());
        key.extend_from_slice(board.as_bytes());
        key.push(0);
        key.extend_from_slice(member);
        self.members.take(&key, &rate, now).map_err(|wait| {
            self.refused.increment(1);
            let secs = retry_secs(wait);
            ApiError::new(
                Code::RateLimited,
                format!(
                    "member {:?} has made its {} submissions per {} on board {board:?} \
                     (max_submits_per_member): retry in {secs} s",
                    String::from_utf8_lossy(member),
                    limit.count,
                    per_text(limit.per),
                ),
            )
            .retry_after(secs)
        })
    }

    /// For a batch: which entries may go on (`None`) and which are
    /// refused, and whether any is.
    async fn admit_batch<'a>(
        &self,
        board: &str,
        members: impl Iterator<Item = &'a [u8]>,
    ) -> Result<Option<Vec<Option<ApiError>>>, ApiError> {
        let now = (self.clock)();
        let Some(limit) = self.limit_of(board, now).await? else {
            return Ok(None);
        };
        let verdicts: Vec<Option<ApiError>> = members
            .map(|m| self.admit(limit, board, m, now).err())
            .collect();
        Ok(verdicts.iter().any(Option::is_some).then_some(verdicts))
    }
}

/// The refusal of a write to a missing board, saying how to make it.
fn not_created(board: &str) -> ApiError {
    ApiError::new(
        Code::BoardNotFound,
        format!(
            "board {board:?} does not exist, and this server creates boards only when asked \
             (auto-create is off): create it first (PUT /v1/boards/{{board}}, RPC \
             board_create, podium board create)"
        ),
    )
}

fn per_text(d: Duration) -> String {
    let ms = d.as_millis();
    [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "min"),
        (1000, "s"),
    ]
    .into_iter()
    .find(|(unit, _)| ms.is_multiple_of(*unit))
    .map_or_else(
        || format!("{ms} ms"),
        |(unit, name)| format!("{} {name}", ms / unit),
    )
}

/// Puts the refused entries' errors back among the results of the ones
/// that went on, in the batch's order.
fn merge<T>(
    verdicts: Vec<Option<ApiError>>,
    ran: Vec<T>,
    refused: impl Fn(usize, ApiError) -> T,
) -> Vec<T> {
    let mut ran = ran.into_iter();
    verdicts
        .into_iter()
        .enumerate()
        .filter_map(|(i, v)| match v {
            Some(e) => Some(refused(i, e)),
            None => ran.next(),
        })
        .collect()
}

#[async_trait]
impl Backend for WritePolicy {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn ping(&self) -> Result<(), ApiError> {
        self.inner.ping().await
    }

    fn applies_in_place(&self) -> bool {
        self.inner.applies_in_place()
    }

    fn search_index_bytes(&self) -> Vec<(String, u64)> {
        self.inner.search_index_bytes()
    }

    async fn backup(&self) -> Result<crate::backup::BackupSet, ApiError> {
        self.inner.backup().await
    }

    fn storage_gauges(&self) -> Vec<(&'static str, f64)> {
        self.inner.storage_gauges()
    }

    fn memory_use(&self) -> crate::memory::MemoryUse {
        self.inner.memory_use()
    }

    fn in_place(&self) -> Option<&Arc<dyn InPlace>> {
        self.inner.in_place()
    }

    fn key_store(&self) -> Option<&Arc<dyn KeyStore>> {
        self.inner.key_store()
    }

    fn outbox(&self) -> Option<Arc<dyn crate::events::hooks::Outbox>> {
        self.inner.outbox()
    }

    async fn submit(&self, req: &SubmitMany) -> Result<Vec<SubmitItem>, ApiError> {
        let members = req.entries.iter().map(|e| e.member.as_bytes());
        let Some(verdicts) = self.admit_batch(&req.board, members).await? else {
            return self.inner.submit(req).await;
        };
        let kept = SubmitMany {
            board: req.board.clone(),
            entries: req
                .entries
                .iter()
                .zip(&verdicts)
                .filter(|(_, v)| v.is_none())
                .map(|(e, _)| e.clone())
                .collect(),
        };
        let ran = if kept.entries.is_empty() {
            Vec::new()
        } else {
            self.inner.submit(&kept).await?
        };
        Ok(merge(verdicts, ran, |i, e| SubmitItem::Err {
            member: req.entries[i].member.clone(),
            error: ErrorBody::from(&e),
        }))
    }

    async fn submit_one(&self, req: &Submit) -> Result<SubmitOut, ApiError> {
        let now = (self.clock)();
        if let Some(limit) = self.limit_of(&req.board, now).await? {
            self.admit(limit, &req.board, req.entry.member.as_bytes(), now)?;
        }
        self.inner.submit_one(req).await
    }

    async fn import(&self, req: &SubmitMany) -> Result<Vec<Imported>, ApiError> {
        self.may_write(&req.board).await?;
        self.inner.import(req).await
    }

    async fn submit_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Vec<SubmitRec>), ApiError> {
        let members = recs.iter().map(|r| &r.member[..]);
        let Some(verdicts) = self.admit_batch(board, members).await? else {
            return self.inner.submit_records(board, recs).await;
        };
        let (mut kept, mut held) = (Vec::new(), Vec::new());
        for (rec, v) in recs.into_iter().zip(&verdicts) {
            if v.is_none() {
                kept.push(rec);
            } else {
                held.push(rec);
            }
        }
        let (results, applied) = if kept.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            self.inner.submit_records(board, kept).await?
        };
        // The records go back in the batch's order, beside their results.
        let mut held = held.into_iter();
        let mut applied = applied.into_iter();
        let mut recs = Vec::with_capacity(verdicts.len());
        for v in &verdicts {
            recs.extend(if v.is_some() {
                held.next()
            } else {
                applied.next()
            });
        }
        Ok((merge(verdicts, results, |_, e| Err(e)), recs))
    }

    async fn import_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Imported>, Vec<SubmitRec>), (ApiError, Vec<SubmitRec>)> {
        if let Err(e) = self.may_write(board).await {
            return Err((e, recs));
        }
        self.inner.import_records(board, recs).await
    }

    async fn remove(&self, req: &Remove) -> Result<RemovedOut, ApiError> {
        self.inner.remove(req).await
    }

    async fn remove_range(&self, req: &RemoveRange) -> Result<RemovedOut, ApiError> {
        self.inner.remove_range(req).await
    }

    async fn set_data(&self, req: &SetData) -> Result<SetDataOut, ApiError> {
        self.inner.set_data(req).await
    }

    async fn board_create(&self, req: &CreateBoard) -> Result<BoardOut, ApiError> {
        let r = self.inner.board_create(req).await;
        self.forget(&req.board);
        r
    }

    async fn board_put(&self, req: &PutBoard) -> Result<BoardOut, ApiError> {
        let r = self.inner.board_put(req).await;
        self.forget(&req.board);
        r
    }

    async fn board_delete(&self, req: &DeleteBoard) -> Result<(), ApiError> {
        let r = self.inner.board_delete(req).await;
        self.forget(&req.board);
        r
    }

    async fn reset(&self, req: &Reset) -> Result<ResetOut, ApiError> {
        self.inner.reset(req).await
    }

    async fn combine(&self, req: &Combine) -> Result<CombineOut, ApiError> {
        let r = self.inner.combine(req).await;
        self.forget(&req.dest);
        r
    }

    async fn board_info(&self, req: &BoardInfo) -> Result<BoardOut, ApiError> {
        self.inner.board_info(req).await
    }

    async fn resort_status(&self, req: &ResortStatus) -> Result<ResortOut, ApiError> {
        self.inner.resort_status(req).await
    }

    async fn boards(&self, req: &ListBoards) -> Result<BoardsOut, ApiError> {
        self.inner.boards(req).await
    }

    async fn subscribe(&self, req: &Subscribe) -> Result<crate::events::Subscription, ApiError> {
        self.inner.subscribe(req).await
    }

    async fn entry(&self, req: &GetEntry) -> Result<EntryInfoOut, ApiError> {
        self.inner.entry(req).await
    }

    async fn rank(&self, req: &Rank) -> Result<RankOut, ApiError> {
        self.inner.rank(req).await
    }

    async fn count(&self, req: &Count) -> Result<CountOut, ApiError> {
        self.inner.count(req).await
    }

    async fn top(&self, req: &Top) -> Result<TopOut, ApiError> {
        self.inner.top(req).await
    }

    async fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError> {
        self.inner.range_by_rank(req).await
    }

    async fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError> {
        self.inner.range_by_score(req).await
    }

    async fn around(&self, req: &Around) -> Result<AroundOut, ApiError> {
        self.inner.around(req).await
    }

    async fn ranks(&self, req: &Ranks) -> Result<RanksOut, ApiError> {
        self.inner.ranks(req).await
    }

    async fn percentile(&self, req: &Percentile) -> Result<PercentileOut, ApiError> {
        self.inner.percentile(req).await
    }

    async fn score_at_percentile(&self, req: &ScoreAtPercentile) -> Result<ScoreAtOut, ApiError> {
        self.inner.score_at_percentile(req).await
    }

    async fn search(&self, req: &Search) -> Result<SearchOut, ApiError> {
        self.inner.search(req).await
    }

    async fn export_chunk(&self, req: &ExportChunk) -> Result<Vec<ExportLine>, ApiError> {
        self.inner.export_chunk(req).await
    }
}
