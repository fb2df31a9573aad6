//! The embedded store behind the storage interface: [`EmbeddedBackend`]
//! forwards each operation to [`Service`].

use std::sync::Arc;

use async_trait::async_trait;
use podium_core::api::*;
use podium_core::backend::{Backend, Imported, InPlace, RangeBounds, TopHead};
use podium_core::entry::SubmitRec;
use podium_core::error::ApiError;
use podium_core::keystore::KeyStore;
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

    async fn submit(&self, board: &str, entries: &[SubmitIn]) -> Result<Vec<SubmitItem>, ApiError> {
        self.svc.submit(board, entries).await
    }

    async fn submit_one(&self, board: &str, entry: &SubmitIn) -> Result<SubmitOut, ApiError> {
        self.svc.submit_one(board, entry).await
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

    async fn remove(&self, board: &str, members: &[String]) -> Result<RemovedOut, ApiError> {
        self.svc.remove(board, members).await
    }

    async fn remove_rank_range(
        &self,
        board: &str,
        start: u64,
        stop: u64,
    ) -> Result<RemovedOut, ApiError> {
        self.svc.remove_rank_range(board, start, stop).await
    }

    async fn remove_score_range(
        &self,
        board: &str,
        bounds: RangeBounds,
    ) -> Result<RemovedOut, ApiError> {
        self.svc.remove_score_range(board, bounds).await
    }

    async fn set_data(
        &self,
        board: &str,
        member: &str,
        name: Option<String>,
        data: Option<serde_json::Value>,
    ) -> Result<SetDataOut, ApiError> {
        self.svc.set_data(board, member, name, data).await
    }

    async fn board_create(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        self.svc.board_create(board, config).await
    }

    async fn board_put(
        &self,
        board: &str,
        config: &serde_json::Value,
    ) -> Result<BoardOut, ApiError> {
        self.svc.board_put(board, config).await
    }

    async fn board_delete(&self, board: &str) -> Result<(), ApiError> {
        self.svc.board_delete(board).await
    }

    async fn reset(&self, board: &str) -> Result<ResetOut, ApiError> {
        self.svc.reset(board).await
    }

    async fn combine(
        &self,
        dest: &str,
        req: &CombineIn,
        intersect: bool,
    ) -> Result<CombineOut, ApiError> {
        self.svc.combine(dest, req, intersect).await
    }

    async fn board_info(&self, board: &str) -> Result<BoardOut, ApiError> {
        self.svc.board_info(board)
    }

    async fn boards(&self) -> Result<BoardsOut, ApiError> {
        Ok(self.svc.boards())
    }

    async fn entry(
        &self,
        board: &str,
        member: &str,
        page_size: Option<u64>,
    ) -> Result<EntryInfoOut, ApiError> {
        self.svc.entry(board, member, page_size)
    }

    async fn rank(&self, board: &str, member: &str) -> Result<RankOut, ApiError> {
        self.svc.rank(board, member)
    }

    async fn count(&self, board: &str, bounds: RangeBounds) -> Result<CountOut, ApiError> {
        self.svc.count(board, bounds)
    }

    async fn top(
        &self,
        board: &str,
        page: Option<u64>,
        page_size: Option<u64>,
        with_data: bool,
    ) -> Result<TopOut, ApiError> {
        self.svc.top(board, page, page_size, with_data)
    }

    async fn range_by_rank(
        &self,
        board: &str,
        start: u64,
        stop: u64,
        from_worst: bool,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        self.svc
            .range_by_rank(board, start, stop, from_worst, with_data)
    }

    async fn range_by_score(
        &self,
        board: &str,
        bounds: RangeBounds,
        from_worst: bool,
        offset: Option<u64>,
        limit: Option<u64>,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        self.svc
            .range_by_score(board, bounds, from_worst, offset, limit, with_data)
    }

    async fn around(
        &self,
        board: &str,
        member: &str,
        page_size: Option<u64>,
        with_data: bool,
    ) -> Result<AroundOut, ApiError> {
        self.svc.around(board, member, page_size, with_data)
    }

    async fn ranks(
        &self,
        board: &str,
        members: &[String],
        with_data: bool,
    ) -> Result<RanksOut, ApiError> {
        self.svc.ranks(board, members, with_data)
    }

    async fn percentile(&self, board: &str, member: &str) -> Result<PercentileOut, ApiError> {
        self.svc.percentile(board, member)
    }

    async fn score_at_percentile(&self, board: &str, p: f64) -> Result<ScoreAtOut, ApiError> {
        self.svc.score_at_percentile(board, p)
    }

    async fn search(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        with_data: bool,
    ) -> Result<SearchOut, ApiError> {
        self.svc.search(board, query, limit, offset, with_data)
    }

    async fn export_chunk(
        &self,
        board: &str,
        pos: usize,
        limit: usize,
    ) -> Result<Vec<ExportLine>, ApiError> {
        // A chunk is milliseconds of work under the board's read lock: off
        // the async workers.
        let (svc, board) = (self.svc.clone(), board.to_string());
        tokio::task::spawn_blocking(move || svc.export_chunk(&board, pos, limit))
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
    fn top_visit(
        &self,
        board: &str,
        page: Option<u64>,
        page_size: Option<u64>,
        f: &mut dyn FnMut(EntryRef<'_>),
    ) -> Result<TopHead, ApiError> {
        Service::top_visit(self, board, page, page_size, f)
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

    fn count(&self, board: &str, bounds: RangeBounds) -> Result<CountOut, ApiError> {
        Service::count(self, board, bounds)
    }

    fn range_by_rank(
        &self,
        board: &str,
        start: u64,
        stop: u64,
        from_worst: bool,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        Service::range_by_rank(self, board, start, stop, from_worst, with_data)
    }

    fn range_by_score(
        &self,
        board: &str,
        bounds: RangeBounds,
        from_worst: bool,
        offset: Option<u64>,
        limit: Option<u64>,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        Service::range_by_score(self, board, bounds, from_worst, offset, limit, with_data)
    }

    fn search_is_cheap(&self, board: &str) -> bool {
        Service::search_is_cheap(self, board)
    }

    fn search(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        with_data: bool,
    ) -> Result<SearchOut, ApiError> {
        Service::search(self, board, query, limit, offset, with_data)
    }

    fn search_page(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
    ) -> Result<SearchPage, ApiError> {
        Service::search_page(self, board, query, limit, offset)
    }

    fn search_visit(
        &self,
        board: &str,
        query: &str,
        limit: u64,
        offset: u64,
        f: &mut dyn FnMut(&SearchHead, &mut dyn Iterator<Item = EntryRef<'_>>),
    ) -> Result<bool, ApiError> {
        Ok(Service::search_with(self, board, query, limit, offset, |h, it| f(h, it))?.is_some())
    }
}
