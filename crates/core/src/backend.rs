//! The storage interface every protocol frontend calls: one
//! async, object-safe trait with a method per docs/spec.md §2 operation, taking and
//! returning the DTOs of `api.rs` and failing with `ApiError`. Two engines
//! implement it: [`EmbeddedBackend`] (the in-process engine behind
//! [`Service`]) and [`redis::RedisBackend`] (Redis or Redis Cluster holding
//! the data, so podium nodes are stateless). The design, the Redis key
//! layout and the configs Redis refuses are in `docs/redis-backend.md`.
//!
//! The methods mirror `Service`'s, so the HTTP and MessagePack-RPC
//! frontends hold an `Arc<dyn Backend>` and send and receive the same
//! things on either engine. Streaming operations are expressed in chunks (`export_chunk`;
//! `import` is `submit` of successive batches), so a frontend streams the
//! same way on either engine.

use std::ops::Bound;
use std::sync::Arc;

use async_trait::async_trait;

use crate::api::*;
use crate::entry::SubmitRec;
use crate::error::ApiError;
use crate::keystore::KeyStore;
use crate::ops::*;
use podium_engine::search::SearchPage;
use podium_engine::{EntryRef, ScoreRange, SearchHead, SubmitResult};

/// One entry's outcome in an `import` batch: applied, or why not.
pub type Imported = Result<(), ErrorBody>;

/// Every docs/spec.md §2 operation, whatever holds the data.
///
/// Semantics (validation order, error codes, tie order, rank modes) are the
/// embedded engine's: `crates/server/tests/integration/backend_conformance/` runs the same
/// sequences against every implementation and requires identical results.
#[async_trait]
pub trait Backend: Send + Sync {
    /// `"embedded"` or `"redis"`, for logs and `/healthz`.
    fn kind(&self) -> &'static str;

    /// Whether the storage answers: for the embedded engine, whether its
    /// log can make writes durable (a log failing on a full disk, lost
    /// permissions or exhausted descriptors is `storage_unavailable`, 503);
    /// a round trip for Redis (a lost connection is the same).
    async fn ping(&self) -> Result<(), ApiError>;

    /// Whether a write's future applies it at its first poll (then waits
    /// only for durability), as the in-process engine's does. A frontend
    /// that pipelines writes then keeps their order by polling them in
    /// order; a remote engine's calls run concurrently instead.
    fn applies_in_place(&self) -> bool {
        false
    }

    /// The files of a consistent online copy of the storage, open, for
    /// `podium backup` ([`crate::backup`]). Blocking work is the engine's
    /// to move off the async workers. An engine that keeps no files of its
    /// own (memory only, or Redis holding the data) says so.
    async fn backup(&self) -> Result<crate::backup::BackupSet, ApiError> {
        Err(ApiError::new(
            crate::error::Code::Unsupported,
            "this storage keeps no files of its own to back up",
        ))
    }

    /// The in-process search indexes' sizes by board, for the metrics; a
    /// remote engine's index is its own (none here).
    fn search_index_bytes(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// What holds this engine's memory in process, part by part (the
    /// metrics' breakdown): by default its key store's figures (none
    /// without one); an engine keeping data elsewhere names what it keeps
    /// here.
    fn memory_use(&self) -> crate::memory::MemoryUse {
        self.key_store()
            .map_or_else(Default::default, |k| k.memory_use())
    }

    /// The storage's own gauges (name, value) for the metrics: the
    /// embedded store's log size, whether its log is failing, whether a
    /// snapshot is due. None by default.
    fn storage_gauges(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// The reads this engine answers in place ([`InPlace`]), when it can:
    /// the in-process engine's speed path. `None`: every read is a call of
    /// this trait. Borrowed, so a page read costs no reference count; a
    /// stream clones it for its later chunks.
    fn in_place(&self) -> Option<&Arc<dyn InPlace>> {
        None
    }

    /// The Redis data model this engine serves in process, for the Redis
    /// protocol frontend. `None`: the Redis protocol is not offered (Redis
    /// clients can talk to Redis itself).
    fn key_store(&self) -> Option<&Arc<dyn KeyStore>> {
        None
    }

    /// The webhook deliveries this engine owes, for the server to make.
    /// `None`: this engine does not deliver webhooks (a config naming one
    /// is refused).
    fn outbox(&self) -> Option<Arc<dyn crate::events::hooks::Outbox>> {
        None
    }

    // ------------------------------------------------------------- writes

    /// `submit_many`: entries applied in order, atomically; input errors
    /// refuse the whole batch, state-dependent ones fail their own item.
    async fn submit(&self, req: &SubmitMany) -> Result<Vec<SubmitItem>, ApiError>;

    /// `submit` of one entry: an entry error is the call's error.
    async fn submit_one(&self, req: &Submit) -> Result<SubmitOut, ApiError>;

    /// `import` of one batch: applied exactly as `submit` applies it (the
    /// same errors, whole-batch and per entry), but answering only each
    /// entry's error, if any, as an import answers counts. An engine may
    /// then skip what only the ranks need: on Redis a batch of plain
    /// `set`s is a multi-member `ZADD` in one script run, as the bare
    /// Redis bulk load it stands for.
    async fn import(&self, req: &SubmitMany) -> Result<Vec<Imported>, ApiError> {
        Ok(self
            .submit(req)
            .await?
            .into_iter()
            .map(|item| match item {
                SubmitItem::Ok(_) => Ok(()),
                SubmitItem::Err { error, .. } => Err(error),
            })
            .collect())
    }

    /// `submit_many` of checked records, answering the engine's results
    /// beside the records as applied (in the same order), so a frontend
    /// writes its answer from them without a `SubmitOut` copying each
    /// member id. The embedded store applies and logs the records as they
    /// are; the default hands their entries to `submit`.
    async fn submit_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Vec<SubmitRec>), ApiError> {
        let req = SubmitMany {
            board: board.to_string(),
            entries: recs.iter().map(SubmitRec::to_entry).collect(),
        };
        let results = self
            .submit(&req)
            .await?
            .into_iter()
            .map(|item| match item {
                SubmitItem::Ok(o) => Ok(SubmitResult {
                    score: o.score.map(|s| s.0),
                    rank: o.rank,
                    previous: o.previous.map(|s| s.0),
                    applied: o.applied,
                    created: o.created,
                    changed: o.changed,
                    evicted: o.evicted,
                    scores: o.scores.map(|n| values(&n)),
                    previous_scores: o.previous_scores.map(|n| values(&n)),
                }),
                SubmitItem::Err { error, .. } => Err(ApiError::from(error)),
            })
            .collect();
        Ok((results, recs))
    }

    /// `import` of one batch of checked records, applied exactly as
    /// [`Backend::import`] applies them. The records come back: applied,
    /// or with the error when the engine refused the batch as a whole, so
    /// the caller can retry parts of them without having copied every
    /// entry beforehand. The embedded store applies and logs the records
    /// as they are; the default hands their entries to `import`.
    async fn import_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Imported>, Vec<SubmitRec>), (ApiError, Vec<SubmitRec>)> {
        let req = SubmitMany {
            board: board.to_string(),
            entries: recs.iter().map(SubmitRec::to_entry).collect(),
        };
        match self.import(&req).await {
            Ok(items) => Ok((items, recs)),
            Err(e) => Err((e, recs)),
        }
    }

    async fn remove(&self, req: &Remove) -> Result<RemovedOut, ApiError>;

    async fn remove_range(&self, req: &RemoveRange) -> Result<RemovedOut, ApiError>;

    async fn set_data(&self, req: &SetData) -> Result<SetDataOut, ApiError>;

    async fn board_create(&self, req: &CreateBoard) -> Result<BoardOut, ApiError>;

    /// `board_update` (PUT): creates or reconfigures.
    async fn board_put(&self, req: &PutBoard) -> Result<BoardOut, ApiError>;

    async fn board_delete(&self, req: &DeleteBoard) -> Result<(), ApiError>;

    async fn reset(&self, req: &Reset) -> Result<ResetOut, ApiError>;

    async fn combine(&self, req: &Combine) -> Result<CombineOut, ApiError>;

    // -------------------------------------------------------------- reads

    async fn board_info(&self, req: &BoardInfo) -> Result<BoardOut, ApiError>;

    /// A backend that re-ranks boards in place reports its progress; by
    /// default none is ever running (a Redis board re-ranks in one script
    /// run).
    async fn resort_status(&self, req: &ResortStatus) -> Result<ResortOut, ApiError> {
        Ok(ResortOut {
            board: req.board.clone(),
            running: false,
            done: 0,
            total: 0,
        })
    }

    async fn boards(&self, req: &ListBoards) -> Result<BoardsOut, ApiError>;

    /// `subscribe`: the board's live events through `req.filter`, resumed
    /// after `req.since` when given. An engine without events refuses.
    async fn subscribe(&self, req: &Subscribe) -> Result<crate::events::Subscription, ApiError> {
        let _ = req;
        Err(ApiError::new(
            crate::error::Code::Unsupported,
            format!(
                "live events are not available on the {} engine",
                self.kind()
            ),
        ))
    }

    async fn entry(&self, req: &GetEntry) -> Result<EntryInfoOut, ApiError>;

    async fn rank(&self, req: &Rank) -> Result<RankOut, ApiError>;

    async fn count(&self, req: &Count) -> Result<CountOut, ApiError>;

    async fn top(&self, req: &Top) -> Result<TopOut, ApiError>;

    async fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError>;

    async fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError>;

    async fn around(&self, req: &Around) -> Result<AroundOut, ApiError>;

    async fn ranks(&self, req: &Ranks) -> Result<RanksOut, ApiError>;

    async fn percentile(&self, req: &Percentile) -> Result<PercentileOut, ApiError>;

    async fn score_at_percentile(&self, req: &ScoreAtPercentile) -> Result<ScoreAtOut, ApiError>;

    async fn search(&self, req: &Search) -> Result<SearchOut, ApiError>;

    /// One chunk of `export` ([`ExportChunk`]).
    async fn export_chunk(&self, req: &ExportChunk) -> Result<Vec<ExportLine>, ApiError>;
}

/// Reads answered in place: synchronously, under one short hold of a
/// board's read lock, entries visited straight into the caller's output.
/// The in-process engine offers them ([`Backend::in_place`]) so that a
/// page read answers at the first poll, without a future, a result DTO or
/// a copy of each entry's strings; long ranges and exports are streamed
/// chunk by chunk from [`InPlace::visit_entries`]. Each answers what the
/// [`Backend`] method of the same name answers.
pub trait InPlace: Send + Sync {
    /// `top`'s page: each entry to `f`, best first; the page's figures.
    fn top_visit(&self, req: &Top, f: &mut dyn FnMut(EntryRef<'_>)) -> Result<TopHead, ApiError>;

    /// Up to `limit` entries to `f`, starting `skip` entries from the best
    /// (or, `from_worst`, from the worst, going up). Returns how many `f`
    /// saw.
    fn visit_entries(
        &self,
        board: &str,
        skip: usize,
        limit: usize,
        from_worst: bool,
        f: &mut dyn FnMut(EntryRef<'_>),
    ) -> Result<usize, ApiError>;

    fn board_info(&self, board: &str) -> Result<BoardOut, ApiError>;

    fn count(&self, req: &Count) -> Result<CountOut, ApiError>;

    fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError>;

    fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError>;

    /// Whether a search of `board` is a read (its index is built), not an
    /// index build, which belongs off the async workers.
    fn search_is_cheap(&self, board: &str) -> bool;

    fn search(&self, req: &Search) -> Result<SearchOut, ApiError>;

    /// The engine's owned page of a search, building the board's index if
    /// it has none yet.
    fn search_page(&self, req: &Search) -> Result<SearchPage, ApiError>;

    /// A search whose entries go to `f` in place; `Ok(false)`, with `f`
    /// not called, when the board's index is not built yet (see
    /// [`InPlace::search_page`]).
    fn search_visit(
        &self,
        req: &Search,
        f: &mut dyn FnMut(&SearchHead, &mut dyn Iterator<Item = EntryRef<'_>>),
    ) -> Result<bool, ApiError>;
}

/// The figures of a `top` page whose entries were visited in place
/// ([`InPlace::top_visit`]): [`crate::api::TopOut`] without `board` and
/// `entries`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopHead {
    pub ranking: &'static str,
    pub page: u64,
    pub page_size: u64,
    pub total: u64,
    pub total_pages: u64,
}

/// A score-range bound as the API takes it: `None` is unbounded, and
/// `exclusive` opens it, as Redis's `(` does.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeBounds {
    /// An integer bound is exact on a board whose first key is an `int`.
    pub min: Option<podium_engine::Num>,
    pub max: Option<podium_engine::Num>,
    pub min_exclusive: bool,
    pub max_exclusive: bool,
}

impl RangeBounds {
    pub fn to_range(self) -> ScoreRange<podium_engine::Num> {
        let b = |v: Option<podium_engine::Num>, ex: bool| match v {
            None => Bound::Unbounded,
            Some(x) if ex => Bound::Excluded(x),
            Some(x) => Bound::Included(x),
        };
        ScoreRange {
            min: b(self.min, self.min_exclusive),
            max: b(self.max, self.max_exclusive),
        }
    }
}

/// The values of named scores, in their order.
fn values(n: &crate::api::NamedScores) -> podium_engine::Scores {
    let v: Vec<podium_engine::Num> = n.0.iter().map(|(_, v)| *v).collect();
    podium_engine::Scores::new(&v)
}
