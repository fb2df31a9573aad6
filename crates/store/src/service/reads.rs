//! Board reads of the HTTP and RPC frontends: board info and listings,
//! ranks, pages and ranges, percentiles, search and export, each under the
//! gate shared and the board's read lock; plus the in-place visitors for
//! frontends that encode entries straight into their responses.

use super::Service;
use podium_core::api::*;
use podium_core::backend::{RangeBounds, TopHead};
use podium_core::error::ApiError;
use podium_core::ops::{Around, GetEntry, RangeByRank, RangeByScore, Ranks, Search, Top};
use podium_engine::Store;

impl Service {
    pub fn board_info(&self, board: &str) -> Result<BoardOut, ApiError> {
        let info = self.read(board, |b| b.info())?;
        Ok(BoardOut {
            board: board.to_string(),
            members: info.members,
            read_only: info.read_only,
            heap_bytes: info.heap_bytes,
            archive_of: info.config.archive.as_ref().map(|a| a.board.clone()),
            config: info.config.to_public_json(),
            period: self.periods.lock().get(board).cloned(),
            next_reset: podium_core::schedule::next_reset_text(
                &info.config.reset,
                self.clock.now(),
            ),
            created: None,
        })
    }

    pub fn boards(&self) -> BoardsOut {
        BoardsOut {
            boards: self
                .store
                .list_with_archives()
                .into_iter()
                .filter(|(board, ..)| !Store::is_redis_only(board))
                .map(|(board, members, archive_of, heap_bytes)| BoardSize {
                    board,
                    members,
                    archive_of,
                    heap_bytes,
                })
                .collect(),
        }
    }

    /// What holds the store's memory (boards, archives, search indexes,
    /// the Redis keyspace, the log's buffers); the process-wide parts are
    /// left to [`podium_core::memory::MemoryUse::with_process_parts`].
    pub fn memory_use(&self) -> podium_core::memory::MemoryUse {
        let heap = self.store.heap_use();
        podium_core::memory::MemoryUse {
            boards: heap.boards,
            search_index: heap.search_index,
            archives: heap.archives,
            keyspace: self.keyspace.heap_bytes(),
            log_buffers: self.storage().map_or(0, |s| s.log.held_bytes()),
            ..Default::default()
        }
    }

    /// Heap bytes of each board's search index (0 for a board not yet
    /// searched: its index is built by its first search), by board name.
    pub fn search_index_bytes(&self) -> Vec<(String, u64)> {
        self.store
            .list()
            .into_iter()
            .filter(|(board, _)| !Store::is_redis_only(board))
            .filter_map(|(board, _)| {
                // A board deleted since the listing is skipped.
                let bytes = self.store.read(&board, |b| b.search_heap_bytes()).ok()?;
                Some((board, bytes as u64))
            })
            .collect()
    }

    pub fn entry(&self, req: &GetEntry) -> Result<EntryInfoOut, ApiError> {
        let (board, member) = (req.board.as_str(), req.member.as_str());
        let ps = req.page_size()?;
        let (info, total, keys) = self.read(board, |b| {
            (b.entry(member.as_bytes(), ps), b.len(), b.key_names())
        })?;
        let info = info.ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(EntryInfoOut {
            board: board.to_string(),
            ranking: ranking_str(info.ranking).to_string(),
            entry: entry_out(&info.entry, &keys, true),
            percentile: info.percentile,
            page: info.page,
            total: total as u64,
        })
    }

    pub fn rank(&self, board: &str, member: &str) -> Result<RankOut, ApiError> {
        let (r, s, ranking) = self.read(board, |b| {
            (
                b.rank(member.as_bytes()),
                b.score(member.as_bytes()),
                b.ranking(),
            )
        })?;
        match (r, s) {
            (Some(rank), Some(score)) => Ok(RankOut {
                board: board.to_string(),
                ranking: ranking_str(ranking).to_string(),
                member: member.to_string(),
                rank,
                score: Score(score),
            }),
            _ => Err(ApiError::no_member(board, member)),
        }
    }

    pub fn count(&self, board: &str, bounds: RangeBounds) -> Result<CountOut, ApiError> {
        let range = bounds.to_range();
        let count = self.read(board, |b| b.count_range(&range))??;
        Ok(CountOut {
            board: board.to_string(),
            count,
        })
    }

    pub fn top(&self, req: &Top) -> Result<TopOut, ApiError> {
        let (page, ps) = req.page()?;
        let (p, keys) = self.read(&req.board, |b| (b.top(page, ps), b.key_names()))?;
        let p = p?;
        Ok(TopOut {
            board: req.board.clone(),
            ranking: ranking_str(p.ranking).to_string(),
            page: p.page,
            page_size: p.page_size,
            total: p.total,
            total_pages: p.total_pages,
            entries: entries_out(&p.entries, &keys, req.with_data),
        })
    }

    /// [`Service::top`] without building the page: `f` sees each entry in
    /// place under the board's read lock (the RPC writes them straight into
    /// its response), and the page's figures come back.
    pub fn top_visit(
        &self,
        req: &Top,
        f: impl FnMut(podium_engine::EntryRef<'_>),
    ) -> Result<TopHead, ApiError> {
        let (page, ps) = req.page()?;
        self.read(&req.board, |b| {
            let total = b.len() as u64;
            let from = (page - 1).saturating_mul(ps);
            if from < total {
                b.visit(from as usize, ps as usize, false, f);
            }
            TopHead {
                ranking: ranking_str(b.ranking()),
                page,
                page_size: ps,
                total,
                total_pages: total.div_ceil(ps),
            }
        })
    }

    /// 1-based ranks `start..=stop` (positions), best first, or counted from
    /// the worst end with `from_worst`.
    pub fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError> {
        req.check()?;
        let (v, total, ranking, keys) = self.read(&req.board, |b| {
            (
                b.range_by_rank(req.start, req.stop, req.from_worst),
                b.len(),
                b.ranking(),
                b.key_names(),
            )
        })?;
        Ok(range_out(
            &req.board,
            ranking,
            total,
            &v,
            &keys,
            req.with_data,
        ))
    }

    pub fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError> {
        let (offset, limit) = (req.offset(), req.limit());
        let range = req.bounds.to_range();
        let (v, total, ranking, keys) = self.read(&req.board, |b| {
            (
                b.range_by_score(&range, req.from_worst, offset, limit),
                b.len(),
                b.ranking(),
                b.key_names(),
            )
        })?;
        Ok(range_out(
            &req.board,
            ranking,
            total,
            &v?,
            &keys,
            req.with_data,
        ))
    }

    pub fn around(&self, req: &Around) -> Result<AroundOut, ApiError> {
        let (board, member) = (req.board.as_str(), req.member.as_str());
        let ps = req.page_size()?;
        let (a, keys) = self.read(board, |b| (b.around(member.as_bytes(), ps), b.key_names()))?;
        let a = a.ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(AroundOut {
            board: board.to_string(),
            ranking: ranking_str(a.ranking).to_string(),
            member: member.to_string(),
            rank: a.rank,
            total: a.total,
            entries: entries_out(&a.entries, &keys, req.with_data),
        })
    }

    pub fn ranks(&self, req: &Ranks) -> Result<RanksOut, ApiError> {
        req.check()?;
        let (r, keys) = self.read(&req.board, |b| (b.ranks(&req.members), b.key_names()))?;
        Ok(RanksOut {
            board: req.board.clone(),
            ranking: ranking_str(r.ranking).to_string(),
            entries: entries_out(&r.entries, &keys, req.with_data),
            missing: r.missing.iter().map(|m| member_str(m)).collect(),
        })
    }

    pub fn percentile(&self, board: &str, member: &str) -> Result<PercentileOut, ApiError> {
        let p = self
            .read(board, |b| b.percentile(member.as_bytes()))?
            .ok_or_else(|| ApiError::no_member(board, member))?;
        Ok(PercentileOut {
            board: board.to_string(),
            member: member.to_string(),
            percentile: p,
        })
    }

    pub fn score_at_percentile(&self, board: &str, p: f64) -> Result<ScoreAtOut, ApiError> {
        let (e, keys) = self.read(board, |b| (b.score_at_percentile(p), b.key_names()))?;
        Ok(ScoreAtOut {
            board: board.to_string(),
            percentile: p,
            entry: e?.as_ref().map(|e| entry_out(e, &keys, false)),
        })
    }

    /// One chunk of `export`: up to `limit` entries from position `pos`
    /// (0-based), best first. Export walks the board chunk by chunk so a
    /// huge board never sits in memory twice; a write between chunks can
    /// shift entries across a chunk boundary (like Redis's ZSCAN).
    /// `search` (docs/spec.md §3): a page of the members matching `query`, best
    /// first. A board's index is built by its first search (under the
    /// board's write lock, once) and kept current by every write after.
    pub fn search(&self, req: &Search) -> Result<SearchOut, ApiError> {
        let page = self.search_page(req)?;
        Ok(SearchOut {
            board: req.board.clone(),
            ranking: ranking_str(page.ranking).to_string(),
            query: req.query.clone(),
            total: page.total,
            offset: page.offset,
            limit: page.limit,
            entries: entries_out(&page.entries, &page.keys, req.with_data),
        })
    }

    /// [`Service::search`]'s page as the engine returns it, for a frontend
    /// that encodes the entries itself (HTTP writes them straight into the
    /// response body instead of through owned [`SearchOut`] copies).
    pub fn search_page(&self, req: &Search) -> Result<podium_engine::search::SearchPage, ApiError> {
        use podium_engine::search::SearchError;
        let (board, query) = (req.board.as_str(), req.query.as_str());
        let opts = search_options(req)?;
        let mut page = self.read(board, |b| b.search(query, &opts))?;
        if matches!(page, Err(SearchError::NotIndexed)) {
            let arc = self
                .store
                .get(board)
                .ok_or_else(|| ApiError::no_board(board))?;
            {
                let _gate = self.shared();
                // Straight on the lock: an archive (read-only) is searchable.
                let mut b = arc.write();
                if !b.search_enabled() {
                    b.enable_search().map_err(podium_engine::Error::from)?;
                }
            }
            page = self.read(board, |b| b.search(query, &opts))?;
        }
        Ok(page.map_err(podium_engine::Error::from)?)
    }

    /// [`Service::search_page`] with the page handed to `f` in place (the
    /// answer's head, then the entries, best first) under one hold of the
    /// board's read lock, for a frontend encoding it straight into its
    /// response. `Ok(None)`: the board has no index yet and nothing ran;
    /// [`Service::search_page`] builds it, which is slow on a large board
    /// (a caller on async workers hands that to the blocking pool).
    pub fn search_with<R>(
        &self,
        req: &Search,
        f: impl FnOnce(
            &podium_engine::SearchHead,
            &mut dyn Iterator<Item = podium_engine::EntryRef<'_>>,
        ) -> R,
    ) -> Result<Option<R>, ApiError> {
        use podium_engine::search::SearchError;
        let opts = search_options(req)?;
        match self.read(&req.board, |b| b.search_with(&req.query, &opts, f))? {
            Ok(r) => Ok(Some(r)),
            Err(SearchError::NotIndexed) => Ok(None),
            Err(e) => Err(podium_engine::Error::from(e).into()),
        }
    }

    /// Whether [`Service::search`] on `board` answers without building an
    /// index first (the board is indexed, or missing: an error at once), so
    /// a frontend can run it on its async workers like any other read.
    pub fn search_is_cheap(&self, board: &str) -> bool {
        self.store
            .read(board, |b| b.search_enabled())
            .unwrap_or(true)
    }

    /// `limit` entries in place, starting `skip` entries from the best (or,
    /// `from_worst`, from the worst, going up), under one short hold of the
    /// board's read lock: for encoders that write entries straight into
    /// their output. Returns how many `f` saw.
    pub fn visit_entries(
        &self,
        board: &str,
        skip: usize,
        limit: usize,
        from_worst: bool,
        f: impl FnMut(podium_engine::EntryRef<'_>),
    ) -> Result<usize, ApiError> {
        self.read(board, |b| {
            if !from_worst {
                b.visit(skip, limit, false, f)
            } else if skip < b.len() {
                b.visit(b.len() - 1 - skip, limit, true, f)
            } else {
                0
            }
        })
    }

    pub fn export_chunk(
        &self,
        board: &str,
        pos: usize,
        limit: usize,
    ) -> Result<Vec<ExportLine>, ApiError> {
        let (v, keys) = self.read(board, |b| (b.entries_from(pos, limit), b.key_names()))?;
        Ok(v.iter().map(|e| entry_out(e, &keys, true)).collect())
    }
}

/// A search's page options, the page size checked.
fn search_options(req: &Search) -> Result<podium_engine::search::SearchOptions, ApiError> {
    req.check()?;
    Ok(podium_engine::search::SearchOptions {
        limit: req.limit(),
        offset: req.offset(),
        ..Default::default()
    })
}

/// A range's answer from the entries read.
fn range_out(
    board: &str,
    ranking: podium_engine::Ranking,
    total: usize,
    v: &[podium_engine::Entry],
    keys: &[String],
    with_data: bool,
) -> RangeOut {
    RangeOut {
        board: board.to_string(),
        ranking: ranking_str(ranking).to_string(),
        total: total as u64,
        entries: entries_out(v, keys, with_data),
    }
}
