//! The naive model: a `Vec` of entries kept sorted best first, written
//! from the documented semantics, sharing no code with the engine.

use super::*;

// ===================================================================== model

/// A member id; prints as an escaped byte string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Mem(pub(crate) Vec<u8>);

impl fmt::Debug for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Why the model refuses an operation (the engine's `Error`, by kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MErr {
    ReadOnly,
    BadMember,
    NanScore,
    NanResult,
    OutOfBounds,
    BadData,
    BadName,
    BadConfig,
    BadArgument,
    Other,
}

pub(crate) fn kind(e: Error) -> MErr {
    match e {
        Error::ReadOnly(_) => MErr::ReadOnly,
        Error::BadMember { .. } => MErr::BadMember,
        Error::NanScore => MErr::NanScore,
        Error::NanResult => MErr::NanResult,
        Error::OutOfBounds { .. } => MErr::OutOfBounds,
        Error::BadData { .. } => MErr::BadData,
        Error::BadName { .. } => MErr::BadName,
        Error::BadConfig(_) => MErr::BadConfig,
        Error::BadArgument(_) => MErr::BadArgument,
        _ => MErr::Other,
    }
}

#[derive(Debug, Clone)]
pub(crate) struct MEntry {
    pub(crate) member: Vec<u8>,
    pub(crate) score: f64,
    /// Arrival sequence: bumped when the member is created or its score
    /// actually changes.
    pub(crate) seq: u64,
    pub(crate) name: Option<String>,
    pub(crate) data: Option<String>,
}

/// One submission, owned (the engine's `Submit` borrows).
#[derive(Clone)]
pub(crate) struct Sub {
    pub(crate) member: Mem,
    pub(crate) score: f64,
    pub(crate) op: Option<UpdateOp>,
    pub(crate) presence: Presence,
    pub(crate) cond: Cond,
    pub(crate) name: Option<String>,
    pub(crate) data: Option<String>,
}

impl fmt::Debug for Sub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sub({:?} {}", self.member, self.score)?;
        if let Some(op) = self.op {
            write!(f, " {op:?}")?;
        }
        if self.presence != Presence::Any {
            write!(f, " {:?}", self.presence)?;
        }
        if self.cond != Cond::Always {
            write!(f, " {:?}", self.cond)?;
        }
        if let Some(n) = &self.name {
            write!(f, " name={:?}", &n[..n.len().min(12)])?;
        }
        if let Some(d) = &self.data {
            write!(f, " data={d:?}")?;
        }
        write!(f, ")")
    }
}

impl Sub {
    pub(crate) fn as_submit(&self) -> Submit<'_> {
        Submit {
            member: &self.member.0,
            score: self.score,
            op: self.op,
            presence: self.presence,
            cond: self.cond,
            name: self.name.as_deref(),
            data: self.data.as_deref(),
            scores: None,
        }
    }
}

/// The naive board: entries sorted best first, every read a linear scan.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) cfg: BoardConfig,
    pub(crate) entries: Vec<MEntry>,
    /// Member → (score, seq), to find a member by binary search; rebuilt
    /// from `entries` after every bulk change.
    pub(crate) index: HashMap<Vec<u8>, (f64, u64)>,
    pub(crate) next_seq: u64,
    pub(crate) read_only: bool,
}

pub(crate) fn validate_config(c: &BoardConfig) -> Result<(), MErr> {
    if c.min_score.is_some_and(f64::is_nan) || c.max_score.is_some_and(f64::is_nan) {
        return Err(MErr::BadConfig);
    }
    if let (Some(lo), Some(hi)) = (c.min_score, c.max_score) {
        if lo > hi {
            return Err(MErr::BadConfig);
        }
    }
    if c.max_members == Some(0) {
        return Err(MErr::BadConfig);
    }
    Ok(())
}

pub(crate) fn in_range(r: &ScoreRange, s: f64) -> bool {
    let lo = match r.min {
        Bound::Unbounded => true,
        Bound::Included(x) => s >= x,
        Bound::Excluded(x) => s > x,
    };
    let hi = match r.max {
        Bound::Unbounded => true,
        Bound::Included(x) => s <= x,
        Bound::Excluded(x) => s < x,
    };
    lo && hi
}

pub(crate) fn range_has_nan(r: &ScoreRange) -> bool {
    [r.min, r.max]
        .iter()
        .any(|b| matches!(b, Bound::Included(x) | Bound::Excluded(x) if x.is_nan()))
}

impl Model {
    pub(crate) fn new(cfg: BoardConfig) -> Result<Model, MErr> {
        validate_config(&cfg)?;
        Ok(Model {
            cfg,
            entries: Vec::new(),
            index: HashMap::new(),
            next_seq: 0,
            read_only: false,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// `a` strictly better than `b` on this board.
    pub(crate) fn better(&self, a: f64, b: f64) -> bool {
        match self.cfg.order {
            Order::Desc => a > b,
            Order::Asc => a < b,
        }
    }

    /// Rank order: `Less` means `a` ranks above `b`.
    pub(crate) fn cmp(&self, a: &MEntry, b: &MEntry) -> Ordering {
        let by_score = if self.better(a.score, b.score) {
            Ordering::Less
        } else if self.better(b.score, a.score) {
            Ordering::Greater
        } else {
            Ordering::Equal
        };
        by_score.then_with(|| match (self.cfg.tiebreak, self.cfg.order) {
            // Redis: ascending bytes on an ascending set, ZREVRANGE's exact
            // reverse on a descending board.
            (Tiebreak::Member, Order::Asc) => a.member.cmp(&b.member),
            (Tiebreak::Member, Order::Desc) => b.member.cmp(&a.member),
            (Tiebreak::First, _) => a.seq.cmp(&b.seq),
            (Tiebreak::Last, _) => b.seq.cmp(&a.seq),
        })
    }

    pub(crate) fn in_bounds(&self, s: f64) -> bool {
        let min = self.cfg.min_score.unwrap_or(NEG_INF);
        let max = self.cfg.max_score.unwrap_or(INF);
        !(s < min || s > max)
    }

    pub(crate) fn find(&self, m: &[u8]) -> Option<usize> {
        let &(score, seq) = self.index.get(m)?;
        let probe = MEntry {
            member: m.to_vec(),
            score,
            seq,
            name: None,
            data: None,
        };
        let i = self
            .entries
            .partition_point(|x| self.cmp(x, &probe) == Ordering::Less);
        assert!(
            self.entries.get(i).is_some_and(|e| e.member == m),
            "model bug: index out of date"
        );
        Some(i)
    }

    pub(crate) fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .map(|e| (e.member.clone(), (e.score, e.seq)))
            .collect();
    }

    pub(crate) fn take_at(&mut self, i: usize) -> MEntry {
        let e = self.entries.remove(i);
        self.index.remove(&e.member);
        e
    }

    pub(crate) fn bump(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    pub(crate) fn place(&mut self, e: MEntry) {
        let i = self
            .entries
            .partition_point(|x| self.cmp(x, &e) == Ordering::Less);
        self.index.insert(e.member.clone(), (e.score, e.seq));
        self.entries.insert(i, e);
    }

    pub(crate) fn resort(&mut self) {
        let mut v = std::mem::take(&mut self.entries);
        v.sort_by(|a, b| self.cmp(a, b));
        self.entries = v;
        self.reindex();
    }

    pub(crate) fn evict(&mut self) -> u64 {
        let mut n = 0;
        while self
            .cfg
            .max_members
            .is_some_and(|m| self.entries.len() as u64 > m)
        {
            let e = self.entries.pop().expect("over capacity");
            self.index.remove(&e.member);
            n += 1;
        }
        n
    }

    /// Per position: (rank in the board's ranking mode, number of entries
    /// with a strictly better score).
    pub(crate) fn view(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len());
        let (mut dense, mut first_of_group) = (0u64, 0u64);
        for (i, e) in self.entries.iter().enumerate() {
            if i == 0 || e.score != self.entries[i - 1].score {
                dense += 1;
                first_of_group = i as u64;
            }
            let rank = match self.cfg.ranking {
                Ranking::Unique => i as u64 + 1,
                Ranking::Competition => first_of_group + 1,
                Ranking::Dense => dense,
            };
            out.push((rank, first_of_group));
        }
        out
    }

    pub(crate) fn entry_at(&self, i: usize, view: &[(u64, u64)]) -> Entry {
        let e = &self.entries[i];
        Entry {
            member: e.member.clone(),
            score: e.score,
            scores: None,
            rank: view[i].0,
            name: e.name.as_deref().map(Arc::from),
            data: e.data.as_deref().map(Arc::from),
        }
    }

    pub(crate) fn entries_at(&self, positions: impl Iterator<Item = usize>) -> Vec<Entry> {
        let view = self.view();
        positions.map(|i| self.entry_at(i, &view)).collect()
    }

    pub(crate) fn percentile_at(&self, i: usize, view: &[(u64, u64)]) -> f64 {
        let n = self.len() as f64;
        100.0 * (n - view[i].1 as f64) / n
    }

    // ---------------------------------------------------------- writes

    pub(crate) fn writable(&self) -> Result<(), MErr> {
        if self.read_only {
            Err(MErr::ReadOnly)
        } else {
            Ok(())
        }
    }

    pub(crate) fn check_extra(&self, name: Option<&str>, data: Option<&str>) -> Result<(), MErr> {
        if name.is_some_and(|n| n.len() > MAX_NAME) {
            return Err(MErr::BadName);
        }
        if let Some(d) = data.filter(|d| !d.is_empty()) {
            let object = serde_json::from_str::<serde_json::Value>(d).is_ok_and(|v| v.is_object());
            if d.len() > self.cfg.max_data_bytes || !object {
                return Err(MErr::BadData);
            }
        }
        Ok(())
    }

    /// The checks that need no board state, in the documented order.
    pub(crate) fn precheck(&self, s: &Sub) -> Result<(), MErr> {
        if s.member.0.is_empty() || s.member.0.len() > MAX_ID_BYTES {
            return Err(MErr::BadMember);
        }
        if s.score.is_nan() {
            return Err(MErr::NanScore);
        }
        self.check_extra(s.name.as_deref(), s.data.as_deref())?;
        if s.op.unwrap_or(self.cfg.update) != UpdateOp::Incr && !self.in_bounds(s.score) {
            return Err(MErr::OutOfBounds);
        }
        Ok(())
    }

    pub(crate) fn apply_extra(e: &mut MEntry, name: Option<&str>, data: Option<&str>) {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(n) = name {
            e.name = opt(n);
        }
        if let Some(d) = data {
            e.data = opt(d);
        }
    }

    pub(crate) fn submit(&mut self, s: &Sub) -> Result<SubmitResult, MErr> {
        self.writable()?;
        self.precheck(s)?;
        let op = s.op.unwrap_or(self.cfg.update);
        let Some(i) = self.find(&s.member.0) else {
            if s.presence == Presence::OnlyExisting {
                return Ok(SubmitResult {
                    score: None,
                    rank: None,
                    previous: None,
                    applied: false,
                    created: false,
                    changed: false,
                    evicted: 0,
                    scores: None,
                    previous_scores: None,
                });
            }
            // `incr` on an absent member starts from 0: the result is the
            // submitted score, which must be in bounds.
            if !self.in_bounds(s.score) {
                return Err(MErr::OutOfBounds);
            }
            let mut e = MEntry {
                member: s.member.0.clone(),
                score: s.score,
                seq: self.bump(),
                name: None,
                data: None,
            };
            Self::apply_extra(&mut e, s.name.as_deref(), s.data.as_deref());
            self.place(e);
            let evicted = self.evict();
            let pos = self.find(&s.member.0);
            let view = self.view();
            return Ok(SubmitResult {
                score: pos.map(|_| s.score),
                rank: pos.map(|i| view[i].0),
                previous: None,
                applied: true,
                created: pos.is_some(),
                changed: pos.is_some(),
                evicted,
                scores: None,
                previous_scores: None,
            });
        };
        let old = self.entries[i].score;
        if s.presence == Presence::OnlyNew {
            // Redis checks NX before any arithmetic: nothing happens, even
            // when the increment would have been NaN.
            Self::apply_extra(&mut self.entries[i], s.name.as_deref(), s.data.as_deref());
            let view = self.view();
            return Ok(SubmitResult {
                score: Some(old),
                rank: Some(view[i].0),
                previous: Some(old),
                applied: false,
                created: false,
                changed: false,
                evicted: 0,
                scores: None,
                previous_scores: None,
            });
        }
        let new = match op {
            UpdateOp::Set | UpdateOp::Best => s.score,
            UpdateOp::Incr => old + s.score,
        };
        if new.is_nan() {
            return Err(MErr::NanResult);
        }
        let blocked = s.presence == Presence::OnlyNew
            || (op == UpdateOp::Best && !self.better(new, old))
            || (s.cond == Cond::Greater && new <= old)
            || (s.cond == Cond::Less && new >= old);
        let changed = !blocked && new != old;
        if changed && !self.in_bounds(new) {
            return Err(MErr::OutOfBounds);
        }
        Self::apply_extra(&mut self.entries[i], s.name.as_deref(), s.data.as_deref());
        if changed {
            let mut e = self.take_at(i);
            e.score = new;
            e.seq = self.bump();
            self.place(e);
        }
        let i = self.find(&s.member.0).expect("still there");
        let view = self.view();
        Ok(SubmitResult {
            // Applied without moving (-0 + 0): the computed score, as Redis.
            score: Some(if !blocked && !changed {
                new
            } else {
                self.entries[i].score
            }),
            rank: Some(view[i].0),
            previous: Some(old),
            applied: !blocked,
            created: false,
            changed,
            evicted: 0,
            scores: None,
            previous_scores: None,
        })
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn submit_many(
        &mut self,
        batch: &[Sub],
    ) -> Result<Vec<Result<SubmitResult, MErr>>, MErr> {
        self.writable()?;
        for s in batch {
            self.precheck(s)?;
        }
        Ok(batch.iter().map(|s| self.submit(s)).collect())
    }

    pub(crate) fn set_data(
        &mut self,
        m: &[u8],
        name: Option<&str>,
        data: Option<&str>,
    ) -> Result<bool, MErr> {
        self.writable()?;
        self.check_extra(name, data)?;
        match self.find(m) {
            Some(i) => {
                Self::apply_extra(&mut self.entries[i], name, data);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(crate) fn remove(&mut self, ms: &[Mem]) -> Result<u64, MErr> {
        self.writable()?;
        let mut n = 0;
        for m in ms {
            if let Some(i) = self.find(&m.0) {
                self.take_at(i);
                n += 1;
            }
        }
        Ok(n)
    }

    /// 0-based positions `[lo, hi)` of 1-based unique ranks `start..=stop`.
    pub(crate) fn rank_span(&self, start: u64, stop: u64) -> (usize, usize) {
        let lo = start.max(1) - 1;
        let hi = stop.min(self.len() as u64);
        if lo >= hi {
            (0, 0)
        } else {
            (lo as usize, hi as usize)
        }
    }

    pub(crate) fn remove_range_by_rank(&mut self, start: u64, stop: u64) -> Result<u64, MErr> {
        self.writable()?;
        let (lo, hi) = self.rank_span(start, stop);
        self.entries.drain(lo..hi);
        self.reindex();
        Ok((hi - lo) as u64)
    }

    pub(crate) fn remove_range_by_score(&mut self, r: &ScoreRange) -> Result<u64, MErr> {
        self.writable()?;
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        let before = self.len();
        self.entries.retain(|e| !in_range(r, e.score));
        self.reindex();
        Ok((before - self.len()) as u64)
    }

    pub(crate) fn pop(&mut self, count: u64, worst: bool) -> Result<Vec<Entry>, MErr> {
        self.writable()?;
        let n = self.len();
        let c = (count.min(n as u64)) as usize;
        if worst {
            let out = self.entries_at((n - c..n).rev());
            self.entries.truncate(n - c);
            self.reindex();
            Ok(out)
        } else {
            let out = self.entries_at(0..c);
            self.entries.drain(0..c);
            self.reindex();
            Ok(out)
        }
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    pub(crate) fn set_config(&mut self, cfg: BoardConfig) -> Result<(), MErr> {
        validate_config(&cfg)?;
        let rebuild = cfg.order != self.cfg.order
            || cfg.tiebreak != self.cfg.tiebreak
            || cfg.ranking != self.cfg.ranking;
        if rebuild {
            // Members arrive again in their old rank order.
            let mut v = std::mem::take(&mut self.entries);
            for e in &mut v {
                e.seq = self.bump();
            }
            self.entries = v;
            self.cfg = cfg;
            self.resort();
        } else {
            self.cfg = cfg;
        }
        self.evict();
        Ok(())
    }

    // ----------------------------------------------------------- reads

    pub(crate) fn score(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.entries[i].score)
    }

    pub(crate) fn rank(&self, m: &[u8]) -> Option<u64> {
        self.find(m).map(|i| self.view()[i].0)
    }

    pub(crate) fn percentile(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.percentile_at(i, &self.view()))
    }

    pub(crate) fn entry(&self, m: &[u8], page_size: u64) -> Option<EntryInfo> {
        let i = self.find(m)?;
        Some(self.info_at(i, page_size, &self.view()))
    }

    pub(crate) fn info_at(&self, i: usize, page_size: u64, view: &[(u64, u64)]) -> EntryInfo {
        EntryInfo {
            entry: self.entry_at(i, view),
            percentile: self.percentile_at(i, view),
            page: i as u64 / page_size.max(1) + 1,
            ranking: self.cfg.ranking,
        }
    }

    pub(crate) fn matching(&self, r: &ScoreRange) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| in_range(r, self.entries[i].score))
            .collect()
    }

    pub(crate) fn count_range(&self, r: &ScoreRange) -> Result<u64, MErr> {
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        Ok(self.matching(r).len() as u64)
    }

    pub(crate) fn span(&self, from: usize, len: usize) -> std::ops::Range<usize> {
        let from = from.min(self.len());
        from..from.saturating_add(len).min(self.len())
    }

    pub(crate) fn top(&self, page: u64, page_size: u64) -> Result<Page, MErr> {
        if page == 0 || page_size == 0 {
            return Err(MErr::BadArgument);
        }
        let total = self.len() as u64;
        let from = (page - 1).saturating_mul(page_size);
        Ok(Page {
            entries: self.entries_at(self.span(from as usize, page_size as usize)),
            page,
            page_size,
            total,
            total_pages: total.div_ceil(page_size),
            ranking: self.cfg.ranking,
        })
    }

    pub(crate) fn range_by_rank(&self, start: u64, stop: u64, from_worst: bool) -> Vec<Entry> {
        let (lo, hi) = self.rank_span(start, stop);
        let n = self.len();
        if from_worst {
            self.entries_at((lo..hi).map(|k| n - 1 - k))
        } else {
            self.entries_at(lo..hi)
        }
    }

    pub(crate) fn range_by_score(
        &self,
        r: &ScoreRange,
        from_worst: bool,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Entry>, MErr> {
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        let mut hits = self.matching(r);
        if from_worst {
            hits.reverse();
        }
        let hits = hits
            .into_iter()
            .skip(offset.min(usize::MAX as u64) as usize)
            .take(limit.min(usize::MAX as u64) as usize);
        Ok(self.entries_at(hits))
    }

    pub(crate) fn around(&self, m: &[u8], page_size: u64) -> Option<Around> {
        let i = self.find(m)?;
        let start = i.saturating_sub(page_size as usize / 2);
        Some(Around {
            entries: self.entries_at(self.span(start, page_size as usize)),
            rank: self.view()[i].0,
            total: self.len() as u64,
            ranking: self.cfg.ranking,
        })
    }

    pub(crate) fn ranks(&self, ms: &[Mem]) -> Ranks {
        let mut found: Vec<usize> = ms.iter().filter_map(|m| self.find(&m.0)).collect();
        found.sort();
        found.dedup();
        let mut missing: Vec<Vec<u8>> = ms
            .iter()
            .filter(|m| self.find(&m.0).is_none())
            .map(|m| m.0.clone())
            .collect();
        missing.sort();
        missing.dedup();
        Ranks {
            entries: self.entries_at(found.into_iter()),
            missing,
            ranking: self.cfg.ranking,
        }
    }

    pub(crate) fn score_at_percentile(&self, p: f64) -> Result<Option<Entry>, MErr> {
        if !(0.0..=100.0).contains(&p) {
            return Err(MErr::BadArgument);
        }
        let n = self.len();
        if n == 0 {
            return Ok(None);
        }
        let r = ((n as f64 + 1.0 - p * n as f64 / 100.0).floor() as usize).clamp(1, n);
        Ok(self.entries_at(std::iter::once(r - 1)).pop())
    }

    pub(crate) fn rows(&self) -> Vec<Row> {
        self.entries
            .iter()
            .map(|e| {
                (
                    Mem(e.member.clone()),
                    e.score,
                    e.name.clone(),
                    e.data.clone(),
                )
            })
            .collect()
    }

    // ------------------------------------------------- merge/intersect

    /// ZUNIONSTORE / ZINTERSTORE: sources visited smallest first (stable),
    /// weighted NaN → 0, aggregate NaN → 0, result members inserted in
    /// first-seen order.
    pub(crate) fn combine(
        cfg: BoardConfig,
        sources: &[(&Model, f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<Model, MErr> {
        validate_config(&cfg)?;
        if sources.iter().any(|s| s.1.is_nan()) {
            return Err(MErr::BadArgument);
        }
        let mut order: Vec<&(&Model, f64)> = sources.iter().collect();
        order.sort_by_key(|s| s.0.len());
        let weighted = |w: f64, s: f64| {
            let x = s * w;
            if x.is_nan() {
                0.0
            } else {
                x
            }
        };
        let apply = |acc: f64, x: f64| {
            let r = match agg {
                Aggregate::Sum => acc + x,
                Aggregate::Min => {
                    if x < acc {
                        x
                    } else {
                        acc
                    }
                }
                Aggregate::Max => {
                    if x > acc {
                        x
                    } else {
                        acc
                    }
                }
            };
            if r.is_nan() {
                0.0
            } else {
                r
            }
        };
        let mut acc: Vec<(Vec<u8>, f64)> = Vec::new();
        if intersect {
            if let Some((first, w0)) = order.first().map(|s| (s.0, s.1)) {
                'members: for e in &first.entries {
                    let mut total = weighted(w0, e.score);
                    for (other, w) in order[1..].iter().map(|s| (s.0, s.1)) {
                        match other.score(&e.member) {
                            // Redis: only a member's first weighted score
                            // has its NaN turned into 0.
                            Some(x) => total = apply(total, w * x),
                            None => continue 'members,
                        }
                    }
                    acc.push((e.member.clone(), total));
                }
            }
        } else {
            for (src, w) in order.iter().map(|s| (s.0, s.1)) {
                for e in &src.entries {
                    match acc.iter_mut().find(|a| a.0 == e.member) {
                        Some(slot) => slot.1 = apply(slot.1, weighted(w, e.score)),
                        None => acc.push((e.member.clone(), weighted(w, e.score))),
                    }
                }
            }
        }
        let mut out = Model::new(cfg)?;
        for (member, score) in acc {
            let seq = out.bump();
            out.entries.push(MEntry {
                member,
                score,
                seq,
                name: None,
                data: None,
            });
        }
        out.resort();
        out.evict();
        Ok(out)
    }
}

pub(crate) type Row = (Mem, f64, Option<String>, Option<String>);

pub(crate) fn board_rows(b: &Board) -> Vec<Row> {
    b.iter()
        .map(|(m, s, x)| {
            (
                Mem(m.to_vec()),
                s,
                x.and_then(|x| x.name.as_deref().map(str::to_string)),
                x.and_then(|x| x.data.as_deref().map(str::to_string)),
            )
        })
        .collect()
}
