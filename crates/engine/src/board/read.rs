//! A board's reads: scores, ranks and positions, pages by rank and by
//! score, around a member, percentiles, and iteration in rank order.

use super::*;

impl Board {
    /// `score` (on a board with `sort` keys, the first key's value).
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.members.find(member).map(|id| self.score_of(id))
    }

    /// A member's values, one per key (a plain board: its score).
    pub fn scores(&self, member: &[u8]) -> Option<Scores> {
        self.members.find(member).map(|id| self.scores_of(id))
    }

    /// `rank` (1-based, in the board's ranking mode).
    pub fn rank(&self, member: &[u8]) -> Option<u64> {
        self.locate(member)
            .map(|(pos, key, id)| self.rank_at(pos, key, id))
    }

    /// 0-based position in rank order (the unique rank minus one), for
    /// protocols that index from 0.
    pub fn position(&self, member: &[u8]) -> Option<usize> {
        self.locate(member).map(|(pos, _, _)| pos)
    }

    /// 0-based index in ascending order of score whatever the board's
    /// order (Redis's ZRANK), or descending with `rev` (ZREVRANK).
    pub fn score_order_index(&self, member: &[u8], rev: bool) -> Option<usize> {
        let pos = self.position(member)?;
        let last = self.len() - 1;
        let asc = if self.config().order == Order::Desc {
            last - pos
        } else {
            pos
        };
        Some(if rev { last - asc } else { asc })
    }

    /// How many entries, from the best, satisfy `pred` (given a member and
    /// its score), when it holds for a prefix of the board's order: where
    /// a bound falls, in O(log n) calls of `pred` (Redis's lexicographic
    /// ranges over a run of equal scores). For any other predicate, some
    /// position in `0..=len` where it goes from holding to failing, as a
    /// binary search finds one.
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8], f64) -> bool) -> usize {
        self.tree
            .partition_point(|_, id| pred(self.members.bytes(id), self.score_of(id)))
    }

    /// A member's entry with its rank (no percentile or page).
    pub fn entry_of(&self, member: &[u8]) -> Option<Entry> {
        let (pos, key, id) = self.locate(member)?;
        Some(self.make_entry(id, self.rank_at(pos, key, id)))
    }

    /// `entry`.
    pub fn entry(&self, member: &[u8], page_size: u64) -> Option<EntryInfo> {
        let (pos, key, id) = self.locate(member)?;
        let rank = self.rank_at(pos, key, id);
        Some(EntryInfo {
            entry: self.make_entry(id, rank),
            percentile: self.percentile_of(key, id),
            page: pos as u64 / page_size.max(1) + 1,
            ranking: self.config.ranking,
        })
    }

    /// `count` of members whose score is in `r`.
    pub fn count_range<T: RangeValue>(&self, r: &ScoreRange<T>) -> Result<u64> {
        r.validate()?;
        let (lo, hi) = self.score_span(r);
        Ok((hi - lo) as u64)
    }

    /// `top`: page `page` (1-based) of `page_size` entries. A page past the
    /// end is empty; `total_pages` says how many there are.
    pub fn top(&self, page: u64, page_size: u64) -> Result<Page> {
        if page == 0 || page_size == 0 {
            return Err(Error::BadArgument("page and page_size start at 1".into()));
        }
        let total = self.len() as u64;
        let from = (page - 1).saturating_mul(page_size);
        let entries = if from < total {
            self.collect(from as usize, page_size as usize, false)
        } else {
            Vec::new()
        };
        Ok(Page {
            entries,
            page,
            page_size,
            total,
            total_pages: total.div_ceil(page_size),
            ranking: self.config.ranking,
        })
    }

    /// Positions `[lo, hi)` for 1-based unique ranks `start..=stop`, clipped.
    pub(super) fn rank_span(&self, start: u64, stop: u64) -> (usize, usize) {
        let n = self.len() as u64;
        let lo = start.max(1) - 1;
        let hi = stop.min(n);
        if lo >= hi {
            (0, 0)
        } else {
            (lo as usize, hi as usize)
        }
    }

    /// `range_by_rank`: 1-based unique ranks `start..=stop`, best first; with
    /// `from_worst`, ranks count from the worst end and entries come worst
    /// first (Redis ZREVRANGE on an ascending set).
    pub fn range_by_rank(&self, start: u64, stop: u64, from_worst: bool) -> Vec<Entry> {
        let (lo, hi) = self.rank_span(start, stop);
        if lo >= hi {
            return Vec::new();
        }
        if from_worst {
            self.collect(self.len() - 1 - lo, hi - lo, true)
        } else {
            self.collect(lo, hi - lo, false)
        }
    }

    /// `range_by_score`: members with a score in `r`, best first (or worst
    /// first), skipping `offset` and returning at most `limit`.
    pub fn range_by_score<T: RangeValue>(
        &self,
        r: &ScoreRange<T>,
        from_worst: bool,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Entry>> {
        r.validate()?;
        let (lo, hi) = self.score_span(r);
        let n = (hi - lo) as u64;
        if offset >= n {
            return Ok(Vec::new());
        }
        let take = limit.min(n - offset) as usize;
        Ok(if from_worst {
            self.collect(hi - 1 - offset as usize, take, true)
        } else {
            self.collect(lo + offset as usize, take, false)
        })
    }

    /// `around`: `page_size` entries starting `page_size / 2` above the
    /// member, clipped at the top and at the bottom of the board (as the
    /// Redis leaderboard libraries' `around_me` does).
    pub fn around(&self, member: &[u8], page_size: u64) -> Option<Around> {
        let (pos, key, id) = self.locate(member)?;
        let start = pos.saturating_sub(page_size as usize / 2);
        Some(Around {
            entries: self.collect(start, page_size as usize, false),
            rank: self.rank_at(pos, key, id),
            total: self.len() as u64,
            ranking: self.config.ranking,
        })
    }

    /// `ranks`: each listed member (e.g. a friends list) with rank and score,
    /// best first; absent ones listed apart. Duplicates count once.
    pub fn ranks<M: AsRef<[u8]>>(&self, members: &[M]) -> Ranks {
        let mut found: Vec<(usize, u64, u32)> = Vec::new();
        let mut missing = Vec::new();
        for m in members {
            match self.locate(m.as_ref()) {
                Some(hit) => found.push(hit),
                None => missing.push(m.as_ref().to_vec()),
            }
        }
        found.sort_unstable_by_key(|h| h.0);
        found.dedup_by_key(|h| h.0);
        missing.sort();
        missing.dedup();
        Ranks {
            entries: found
                .into_iter()
                .map(|(pos, key, id)| self.make_entry(id, self.rank_at(pos, key, id)))
                .collect(),
            missing,
            ranking: self.config.ranking,
        }
    }

    /// The share of the board (0–100] whose values are not better than
    /// those of member `id` (tree key `key`).
    pub(super) fn percentile_of(&self, key: u64, id: u32) -> f64 {
        let n = self.len() as f64;
        let better = self.better_count(key, id) as f64;
        100.0 * (n - better) / n
    }

    /// `percentile`: the percentage of the board whose score is not better
    /// than the member's (the best member is at 100).
    pub fn percentile(&self, member: &[u8]) -> Option<f64> {
        let id = self.members.find(member)?;
        Some(self.percentile_of(self.key_of_id(id), id))
    }

    /// `score_at_percentile`: the entry at position
    /// `clamp(floor(n + 1 − p·n/100), 1, n)` (0 ≤ p ≤ 100): the worst-placed
    /// score whose percentile is at least `p`. Among tied members it is the
    /// one placed first at that position; its score is the answer.
    /// `None` on an empty board.
    pub fn score_at_percentile(&self, p: f64) -> Result<Option<Entry>> {
        if !(0.0..=100.0).contains(&p) {
            return Err(Error::BadArgument(
                "percentile must be between 0 and 100".into(),
            ));
        }
        let n = self.len();
        if n == 0 {
            return Ok(None);
        }
        let r = ((n as f64 + 1.0 - p * n as f64 / 100.0).floor() as usize).clamp(1, n);
        Ok(self.collect(r - 1, 1, false).pop())
    }

    /// `export`: every entry best first, borrowed: `(member, score, name,
    /// data)` (a board with `sort` keys: the first key's value; see
    /// [`Board::iter_scores`]).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64, Option<&Extra>)> + '_ {
        self.tree.iter().map(move |(_, id)| {
            (
                self.members.bytes(id),
                self.score_of(id),
                self.members.extra(id),
            )
        })
    }

    /// [`Board::iter`] with every key's values.
    pub fn iter_scores(&self) -> impl Iterator<Item = (&[u8], Scores, Option<&Extra>)> + '_ {
        self.tree.iter().map(move |(_, id)| {
            (
                self.members.bytes(id),
                self.scores_of(id),
                self.members.extra(id),
            )
        })
    }

    /// Every entry from `pos` (0-based) on, best first, with ranks.
    pub fn entries_from(&self, pos: usize, limit: usize) -> Vec<Entry> {
        self.collect(pos, limit, false)
    }
}
