//! The embedded store behind the storage interface: [`EmbeddedBackend`]
//! forwards each operation to [`Service`].

use std::sync::Arc;

use async_trait::async_trait;
use podium_core::api::*;
use podium_core::backend::{Backend, Imported, InPlace, TopHead};
use podium_core::entry::SubmitRec;
use podium_core::error::ApiError;
use podium_core::keystore::KeyStore;
use podium_core::ops::*;
use podium_engine::search::SearchPage;
use podium_engine::{EntryRef, SearchHead, SubmitResult};

use crate::service::{KeepEntries, Service};

/// The in-process engine, through [`Service`] (its log, group commit and
/// snapshots included).
#[derive(Clone)]
pub struct EmbeddedBackend {
    svc: Arc<Service>,
    /// The same service, as the reads it answers in place.
    local: Arc<dyn InPlace>,
    /// The same service, as the Redis data model.
    keys: Arc<dyn KeyStore>,
}

impl EmbeddedBackend {
    pub fn new(svc: Arc<Service>) -> Self {
        let local: Arc<dyn InPlace> = svc.clone();
        let keys: Arc<dyn KeyStore> = svc.clone();
        EmbeddedBackend { svc, local, keys }
    }

    pub fn service(&self) -> &Arc<Service> {
        &self.svc
    }
}

#[async_trait]
impl Backend for EmbeddedBackend {
    fn kind(&self) -> &'static str {
        "embedded"
    }

    async fn ping(&self) -> Result<(), ApiError> {
        self.svc.health()
    }

    fn applies_in_place(&self) -> bool {
        true
    }

    async fn backup(&self) -> Result<podium_core::backup::BackupSet, ApiError> {
        let svc = self.svc.clone();
        tokio::task::spawn_blocking(move || svc.backup_files())
            .await
            .map_err(|e| ApiError::new(podium_core::error::Code::Internal, e.to_string()))?
    }

    fn in_place(&self) -> Option<&Arc<dyn InPlace>> {
        Some(&self.local)
    }

    fn key_store(&self) -> Option<&Arc<dyn KeyStore>> {
        Some(&self.keys)
    }

    fn search_index_bytes(&self) -> Vec<(String, u64)> {
        self.svc.search_index_bytes()
    }

    fn storage_gauges(&self) -> Vec<(&'static str, f64)> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let mut g = Vec::with_capacity(3);
        if let Some(s) = self.svc.storage() {
            g.push(("podium_log_bytes", s.log.live_bytes() as f64));
            // Also set by the flusher as it fails and recovers; set here
            // too so that the gauge is there before a first failure.
            g.push(("podium_log_failed", flag(s.log.writable().is_err())));
        }
        g.push(("podium_snapshot_pending", flag(self.svc.snapshot_pending())));
        g
    }

    async fn submit(&self, req: &SubmitMany) -> Result<Vec<SubmitItem>, ApiError> {
        self.svc.submit(&req.board, &req.entries).await
    }

    async fn submit_one(&self, req: &Submit) -> Result<SubmitOut, ApiError> {
        self.svc.submit_one(&req.board, &req.entry).await
    }

    async fn submit_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Result<SubmitResult, ApiError>>, Vec<SubmitRec>), ApiError> {
        self.svc
            .submit_records(board, recs, KeepEntries::Applied)
            .await
            .map_err(|(e, _)| e)
    }

    async fn import_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<(Vec<Imported>, Vec<SubmitRec>), (ApiError, Vec<SubmitRec>)> {
        let (results, recs) = self
            .svc
            .submit_records(board, recs, KeepEntries::Always)
            .await?;
        let items = results
            .into_iter()
            .map(|r| r.map(drop).map_err(|e| ErrorBody::from(&e)))
            .collect();
        Ok((items, recs))
    }

    async fn remove(&self, req: &Remove) -> Result<RemovedOut, ApiError> {
        self.svc.remove(&req.board, &req.members).await
    }

    async fn remove_range(&self, req: &RemoveRange) -> Result<RemovedOut, ApiError> {
        self.svc.remove_range(req).await
    }

    async fn set_data(&self, req: &SetData) -> Result<SetDataOut, ApiError> {
        self.svc.set_data(req).await
    }

    async fn board_create(&self, req: &CreateBoard) -> Result<BoardOut, ApiError> {
        self.svc.board_create(&req.board, &req.config).await
    }

    async fn board_put(&self, req: &PutBoard) -> Result<BoardOut, ApiError> {
        self.svc.board_put(&req.board, &req.config).await
    }

    async fn board_delete(&self, req: &DeleteBoard) -> Result<(), ApiError> {
        self.svc.board_delete(&req.board).await
    }

    async fn reset(&self, req: &Reset) -> Result<ResetOut, ApiError> {
        self.svc.reset(&req.board).await
    }

    async fn combine(&self, req: &Combine) -> Result<CombineOut, ApiError> {
        self.svc.combine(req).await
    }

    async fn board_info(&self, req: &BoardInfo) -> Result<BoardOut, ApiError> {
        self.svc.board_info(&req.board)
    }

    async fn resort_status(&self, req: &ResortStatus) -> Result<ResortOut, ApiError> {
        self.svc.resort_status(&req.board)
    }

    async fn boards(&self, _: &ListBoards) -> Result<BoardsOut, ApiError> {
        Ok(self.svc.boards())
    }

    fn outbox(&self) -> Option<Arc<dyn podium_core::events::hooks::Outbox>> {
        Some(self.svc.clone())
    }

    async fn subscribe(
        &self,
        req: &Subscribe,
    ) -> Result<podium_core::events::Subscription, ApiError> {
        // Takes the board's write lock to start watching it: off the
        // async workers, as a write is.
        crate::wait::off_workers(|| self.svc.subscribe(req))
    }

    async fn entry(&self, req: &GetEntry) -> Result<EntryInfoOut, ApiError> {
        self.svc.entry(req)
    }

    async fn rank(&self, req: &Rank) -> Result<RankOut, ApiError> {
        self.svc.rank(&req.board, &req.member)
    }

    async fn count(&self, req: &Count) -> Result<CountOut, ApiError> {
        self.svc.count(&req.board, req.bounds)
    }

    async fn top(&self, req: &Top) -> Result<TopOut, ApiError> {
        self.svc.top(req)
    }

    async fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError> {
        self.svc.range_by_rank(req)
    }

    async fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError> {
        self.svc.range_by_score(req)
    }

    async fn around(&self, req: &Around) -> Result<AroundOut, ApiError> {
        self.svc.around(req)
    }

    async fn ranks(&self, req: &Ranks) -> Result<RanksOut, ApiError> {
        self.svc.ranks(req)
    }

    async fn percentile(&self, req: &Percentile) -> Result<PercentileOut, ApiError> {
        self.svc.percentile(&req.board, &req.member)
    }

    async fn score_at_percentile(&self, req: &ScoreAtPercentile) -> Result<ScoreAtOut, ApiError> {
        self.svc.score_at_percentile(&req.board, req.p)
    }

    async fn search(&self, req: &Search) -> Result<SearchOut, ApiError> {
        self.svc.search(req)
    }

    async fn export_chunk(&self, req: &ExportChunk) -> Result<Vec<ExportLine>, ApiError> {
        // A chunk is milliseconds of work under the board's read lock: off
        // the async workers.
        let (svc, req) = (self.svc.clone(), req.clone());
        tokio::task::spawn_blocking(move || svc.export_chunk(&req.board, req.pos, req.limit))
            .await
            .map_err(|e| {
                ApiError::new(
                    podium_core::error::Code::Internal,
                    format!("export task failed: {e}"),
                )
            })?
    }
}

impl InPlace for Service {
    fn top_visit(&self, req: &Top, f: &mut dyn FnMut(EntryRef<'_>)) -> Result<TopHead, ApiError> {
        Service::top_visit(self, req, f)
    }

    fn visit_entries(
        &self,
        board: &str,
        skip: usize,
        limit: usize,
        from_worst: bool,
        f: &mut dyn FnMut(EntryRef<'_>),
    ) -> Result<usize, ApiError> {
        Service::visit_entries(self, board, skip, limit, from_worst, f)
    }

    fn board_info(&self, board: &str) -> Result<BoardOut, ApiError> {
        Service::board_info(self, board)
    }

    fn count(&self, req: &Count) -> Result<CountOut, ApiError> {
        Service::count(self, &req.board, req.bounds)
    }

    fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError> {
        Service::range_by_rank(self, req)
    }

    fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError> {
        Service::range_by_score(self, req)
    }

    fn search_is_cheap(&self, board: &str) -> bool {
        Service::search_is_cheap(self, board)
    }

    fn search(&self, req: &Search) -> Result<SearchOut, ApiError> {
        Service::search(self, req)
    }

    fn search_page(&self, req: &Search) -> Result<SearchPage, ApiError> {
        Service::search_page(self, req)
    }

    fn search_visit(
        &self,
        req: &Search,
        f: &mut dyn FnMut(&SearchHead, &mut dyn Iterator<Item = EntryRef<'_>>),
    ) -> Result<bool, ApiError> {
        Ok(Service::search_with(self, req, |h, it| f(h, it))?.is_some())
    }
}
