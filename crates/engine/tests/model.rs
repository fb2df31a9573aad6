//! Model-based property tests: random sequences of every `Board` operation,
//! checked step by step against a naive model written from the documented
//! semantics (docs/spec.md §1–§2, the doc comments of `board.rs` and `config.rs`).
//!
//! The model is a plain `Vec` of entries kept sorted best first; it shares no
//! code with the engine (it only borrows the engine's plain data types —
//! `BoardConfig`, `Entry`, `Page`… — to compare results with `==`).
//!
//! Every one of the 54 combinations of order × ranking × tiebreak × update
//! is exercised in every run: each test loops over the combinations and runs
//! a proptest runner per combination. `PROPTEST_CASES=N` sets the number of
//! cases per combination for a longer soak run.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use podium_engine::{
    Aggregate, Around, Board, BoardConfig, Cond, Entry, EntryInfo, Error, Order, Page, Presence,
    Ranking, Ranks, ScoreRange, Submit, SubmitResult, Tiebreak, UpdateOp,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{TestCaseError, TestRunner};

const INF: f64 = f64::INFINITY;
const NEG_INF: f64 = f64::NEG_INFINITY;
const MAX_ID_BYTES: usize = 512;
const MAX_NAME: usize = 512;

// ===================================================================== model

/// A member id; prints as an escaped byte string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Mem(Vec<u8>);

impl fmt::Debug for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Why the model refuses an operation (the engine's `Error`, by kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MErr {
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

fn kind(e: Error) -> MErr {
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
struct MEntry {
    member: Vec<u8>,
    score: f64,
    /// Arrival sequence: bumped when the member is created or its score
    /// actually changes.
    seq: u64,
    name: Option<String>,
    data: Option<String>,
}

/// One submission, owned (the engine's `Submit` borrows).
#[derive(Clone)]
struct Sub {
    member: Mem,
    score: f64,
    op: Option<UpdateOp>,
    presence: Presence,
    cond: Cond,
    name: Option<String>,
    data: Option<String>,
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
    fn as_submit(&self) -> Submit<'_> {
        Submit {
            member: &self.member.0,
            score: self.score,
            op: self.op,
            presence: self.presence,
            cond: self.cond,
            name: self.name.as_deref(),
            data: self.data.as_deref(),
        }
    }
}

/// The naive board: entries sorted best first, every read a linear scan.
#[derive(Debug, Clone)]
struct Model {
    cfg: BoardConfig,
    entries: Vec<MEntry>,
    /// Member → (score, seq), to find a member by binary search; rebuilt
    /// from `entries` after every bulk change.
    index: HashMap<Vec<u8>, (f64, u64)>,
    next_seq: u64,
    read_only: bool,
}

fn validate_config(c: &BoardConfig) -> Result<(), MErr> {
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

fn in_range(r: &ScoreRange, s: f64) -> bool {
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

fn range_has_nan(r: &ScoreRange) -> bool {
    [r.min, r.max]
        .iter()
        .any(|b| matches!(b, Bound::Included(x) | Bound::Excluded(x) if x.is_nan()))
}

impl Model {
    fn new(cfg: BoardConfig) -> Result<Model, MErr> {
        validate_config(&cfg)?;
        Ok(Model {
            cfg,
            entries: Vec::new(),
            index: HashMap::new(),
            next_seq: 0,
            read_only: false,
        })
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// `a` strictly better than `b` on this board.
    fn better(&self, a: f64, b: f64) -> bool {
        match self.cfg.order {
            Order::Desc => a > b,
            Order::Asc => a < b,
        }
    }

    /// Rank order: `Less` means `a` ranks above `b`.
    fn cmp(&self, a: &MEntry, b: &MEntry) -> Ordering {
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

    fn in_bounds(&self, s: f64) -> bool {
        let min = self.cfg.min_score.unwrap_or(NEG_INF);
        let max = self.cfg.max_score.unwrap_or(INF);
        !(s < min || s > max)
    }

    fn find(&self, m: &[u8]) -> Option<usize> {
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

    fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .map(|e| (e.member.clone(), (e.score, e.seq)))
            .collect();
    }

    fn take_at(&mut self, i: usize) -> MEntry {
        let e = self.entries.remove(i);
        self.index.remove(&e.member);
        e
    }

    fn bump(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn place(&mut self, e: MEntry) {
        let i = self
            .entries
            .partition_point(|x| self.cmp(x, &e) == Ordering::Less);
        self.index.insert(e.member.clone(), (e.score, e.seq));
        self.entries.insert(i, e);
    }

    fn resort(&mut self) {
        let mut v = std::mem::take(&mut self.entries);
        v.sort_by(|a, b| self.cmp(a, b));
        self.entries = v;
        self.reindex();
    }

    fn evict(&mut self) -> u64 {
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
    fn view(&self) -> Vec<(u64, u64)> {
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

    fn entry_at(&self, i: usize, view: &[(u64, u64)]) -> Entry {
        let e = &self.entries[i];
        Entry {
            member: e.member.clone(),
            score: e.score,
            rank: view[i].0,
            name: e.name.as_deref().map(Arc::from),
            data: e.data.as_deref().map(Arc::from),
        }
    }

    fn entries_at(&self, positions: impl Iterator<Item = usize>) -> Vec<Entry> {
        let view = self.view();
        positions.map(|i| self.entry_at(i, &view)).collect()
    }

    fn percentile_at(&self, i: usize, view: &[(u64, u64)]) -> f64 {
        let n = self.len() as f64;
        100.0 * (n - view[i].1 as f64) / n
    }

    // ---------------------------------------------------------- writes

    fn writable(&self) -> Result<(), MErr> {
        if self.read_only {
            Err(MErr::ReadOnly)
        } else {
            Ok(())
        }
    }

    fn check_extra(&self, name: Option<&str>, data: Option<&str>) -> Result<(), MErr> {
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
    fn precheck(&self, s: &Sub) -> Result<(), MErr> {
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

    fn apply_extra(e: &mut MEntry, name: Option<&str>, data: Option<&str>) {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(n) = name {
            e.name = opt(n);
        }
        if let Some(d) = data {
            e.data = opt(d);
        }
    }

    fn submit(&mut self, s: &Sub) -> Result<SubmitResult, MErr> {
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
        })
    }

    #[allow(clippy::type_complexity)]
    fn submit_many(&mut self, batch: &[Sub]) -> Result<Vec<Result<SubmitResult, MErr>>, MErr> {
        self.writable()?;
        for s in batch {
            self.precheck(s)?;
        }
        Ok(batch.iter().map(|s| self.submit(s)).collect())
    }

    fn set_data(&mut self, m: &[u8], name: Option<&str>, data: Option<&str>) -> Result<bool, MErr> {
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

    fn remove(&mut self, ms: &[Mem]) -> Result<u64, MErr> {
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
    fn rank_span(&self, start: u64, stop: u64) -> (usize, usize) {
        let lo = start.max(1) - 1;
        let hi = stop.min(self.len() as u64);
        if lo >= hi {
            (0, 0)
        } else {
            (lo as usize, hi as usize)
        }
    }

    fn remove_range_by_rank(&mut self, start: u64, stop: u64) -> Result<u64, MErr> {
        self.writable()?;
        let (lo, hi) = self.rank_span(start, stop);
        self.entries.drain(lo..hi);
        self.reindex();
        Ok((hi - lo) as u64)
    }

    fn remove_range_by_score(&mut self, r: &ScoreRange) -> Result<u64, MErr> {
        self.writable()?;
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        let before = self.len();
        self.entries.retain(|e| !in_range(r, e.score));
        self.reindex();
        Ok((before - self.len()) as u64)
    }

    fn pop(&mut self, count: u64, worst: bool) -> Result<Vec<Entry>, MErr> {
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

    fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    fn set_config(&mut self, cfg: BoardConfig) -> Result<(), MErr> {
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

    fn score(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.entries[i].score)
    }

    fn rank(&self, m: &[u8]) -> Option<u64> {
        self.find(m).map(|i| self.view()[i].0)
    }

    fn percentile(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.percentile_at(i, &self.view()))
    }

    fn entry(&self, m: &[u8], page_size: u64) -> Option<EntryInfo> {
        let i = self.find(m)?;
        Some(self.info_at(i, page_size, &self.view()))
    }

    fn info_at(&self, i: usize, page_size: u64, view: &[(u64, u64)]) -> EntryInfo {
        EntryInfo {
            entry: self.entry_at(i, view),
            percentile: self.percentile_at(i, view),
            page: i as u64 / page_size.max(1) + 1,
            ranking: self.cfg.ranking,
        }
    }

    fn matching(&self, r: &ScoreRange) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| in_range(r, self.entries[i].score))
            .collect()
    }

    fn count_range(&self, r: &ScoreRange) -> Result<u64, MErr> {
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        Ok(self.matching(r).len() as u64)
    }

    fn span(&self, from: usize, len: usize) -> std::ops::Range<usize> {
        let from = from.min(self.len());
        from..from.saturating_add(len).min(self.len())
    }

    fn top(&self, page: u64, page_size: u64) -> Result<Page, MErr> {
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

    fn range_by_rank(&self, start: u64, stop: u64, from_worst: bool) -> Vec<Entry> {
        let (lo, hi) = self.rank_span(start, stop);
        let n = self.len();
        if from_worst {
            self.entries_at((lo..hi).map(|k| n - 1 - k))
        } else {
            self.entries_at(lo..hi)
        }
    }

    fn range_by_score(
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

    fn around(&self, m: &[u8], page_size: u64) -> Option<Around> {
        let i = self.find(m)?;
        let start = i.saturating_sub(page_size as usize / 2);
        Some(Around {
            entries: self.entries_at(self.span(start, page_size as usize)),
            rank: self.view()[i].0,
            total: self.len() as u64,
            ranking: self.cfg.ranking,
        })
    }

    fn ranks(&self, ms: &[Mem]) -> Ranks {
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

    fn score_at_percentile(&self, p: f64) -> Result<Option<Entry>, MErr> {
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

    fn rows(&self) -> Vec<Row> {
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
    fn combine(
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

type Row = (Mem, f64, Option<String>, Option<String>);

fn board_rows(b: &Board) -> Vec<Row> {
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

// ================================================================ operations

#[derive(Debug, Clone)]
enum Op {
    /// Fills the board: one `submit` each (a batch would be refused whole
    /// by one out-of-bounds score).
    Prefill(Vec<Sub>),
    Submit(Sub),
    SubmitMany(Vec<Sub>),
    Remove(Vec<Mem>),
    RemoveRangeByRank(u64, u64),
    RemoveRangeByScore(ScoreRange),
    Pop(u64, bool),
    SetData(Mem, Option<String>, Option<String>),
    Clear,
    /// `take`; `true`: carry on with the taken board, else with the fresh one.
    Take(bool),
    SetConfig(BoardConfig),
    /// Snapshot round trip; `true`: carry on with the restored board.
    Snapshot(bool),
    /// Runs the op on a read-only board, then makes it writable again.
    ReadOnly(Box<Op>),
}

#[derive(Debug, Clone)]
enum Read {
    Entry(Mem, u64),
    Rank(Mem),
    Score(Mem),
    Position(Mem),
    Percentile(Mem),
    Count(ScoreRange),
    Top(u64, u64),
    RangeByRank(u64, u64, bool),
    RangeByScore(ScoreRange, bool, u64, u64),
    Around(Mem, u64),
    Ranks(Vec<Mem>),
    ScoreAtPercentile(f64),
    EntriesFrom(usize, usize),
    RankMany(Vec<Mem>),
    ScoreMany(Vec<Mem>),
}

type Step = (Op, Vec<Read>);

// ================================================================ strategies

/// How big the generated boards get.
#[derive(Clone, Copy, Debug)]
struct Scale {
    letters: &'static [u8],
    min_len: usize,
    max_len: usize,
    scores: &'static [f64],
    max_batch: usize,
    /// Most members named by one `remove`.
    max_remove: usize,
    max_steps: usize,
    /// Largest rank / count / page size argument, besides `u64::MAX`.
    max_arg: u64,
    max_cap: u64,
    /// Valid submissions applied as one batch before the random steps
    /// (between half this and this many).
    prefill: usize,
    /// Weights of submit, submit_many, remove, remove_range_by_rank,
    /// remove_range_by_score, pop, set_data, clear, take, set_config,
    /// snapshot.
    weights: [u32; 11],
}

/// About 20 members, 11 scores: ties, updates and evictions all the time.
const SMALL: Scale = Scale {
    letters: b"abc\xff",
    min_len: 1,
    max_len: 2,
    scores: &[
        -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 0.5, -0.0, INF, NEG_INF,
    ],
    max_batch: 6,
    max_remove: 3,
    max_steps: 100,
    max_arg: 24,
    max_cap: 12,
    prefill: 30,
    weights: [60, 8, 4, 2, 1, 2, 4, 1, 1, 2, 2],
};

const MANY_SCORES: &[f64] = &[
    -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0,
    8.0, 9.0, 0.5, -0.0, INF, NEG_INF,
];

/// About 580 members: many leaves under one root, long runs of tied
/// scores across leaf boundaries.
const LARGE: Scale = Scale {
    letters: b"abcdefgh",
    min_len: 1,
    max_len: 3,
    scores: MANY_SCORES,
    max_batch: 250,
    max_remove: 60,
    max_steps: 30,
    max_arg: 700,
    max_cap: 500,
    prefill: 1200,
    weights: [20, 40, 6, 4, 2, 3, 6, 1, 1, 4, 4],
};

/// Thousands of members: three levels, so separators also sit in
/// grandparents and inner nodes merge and split.
const XL: Scale = Scale {
    letters: b"abcdefghijklmnopqrstuvwxyz",
    min_len: 3,
    max_len: 3,
    scores: MANY_SCORES,
    max_batch: 1500,
    max_remove: 400,
    max_steps: 12,
    max_arg: 6000,
    max_cap: 8000,
    prefill: 9000,
    // No `clear`: trivial, and it would waste the expensive prefill.
    weights: [4, 10, 3, 3, 1, 2, 1, 0, 1, 2, 3],
};

/// A valid member id (present or absent).
fn member(s: Scale) -> BoxedStrategy<Mem> {
    vec(select(s.letters), s.min_len..=s.max_len)
        .prop_map(Mem)
        .boxed()
}

/// A member id for reads and removals: sometimes an invalid one.
fn any_member(s: Scale) -> BoxedStrategy<Mem> {
    prop_oneof![
        40 => member(s),
        1 => Just(Mem(Vec::new())),
    ]
    .boxed()
}

fn members(s: Scale, max: usize) -> BoxedStrategy<Vec<Mem>> {
    vec(any_member(s), 0..=max).boxed()
}

/// A score for a bound or a percentile-free read: sometimes NaN.
fn score(s: Scale) -> BoxedStrategy<f64> {
    prop_oneof![
        60 => select(s.scores),
        1 => Just(f64::NAN),
    ]
    .boxed()
}

fn name() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(String::new())),
        1 => Just(Some("Al".to_string())),
        1 => Just(Some("Bo Bo".to_string())),
    ]
    .boxed()
}

fn data() -> BoxedStrategy<Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(String::new())),
        1 => Just(Some("{}".to_string())),
        1 => Just(Some(r#"{"lvl":3}"#.to_string())),
    ]
    .boxed()
}

/// Ways to make a submission (or a `set_data`) invalid.
#[derive(Debug, Clone, Copy)]
enum Flaw {
    NanScore,
    EmptyMember,
    LongMember,
    LongName,
    ArrayData,
    BrokenData,
}

fn flaw() -> impl Strategy<Value = Flaw> {
    select(vec![
        Flaw::NanScore,
        Flaw::EmptyMember,
        Flaw::LongMember,
        Flaw::LongName,
        Flaw::ArrayData,
        Flaw::BrokenData,
    ])
}

impl Sub {
    fn with_flaw(mut self, f: Flaw) -> Sub {
        match f {
            Flaw::NanScore => self.score = f64::NAN,
            Flaw::EmptyMember => self.member = Mem(Vec::new()),
            Flaw::LongMember => self.member = Mem(vec![b'm'; MAX_ID_BYTES + 1]),
            Flaw::LongName => self.name = Some("n".repeat(MAX_NAME + 1)),
            Flaw::ArrayData => self.data = Some("[1]".to_string()),
            Flaw::BrokenData => self.data = Some(r#"{"a":"#.to_string()),
        }
        self
    }
}

fn update_op() -> impl Strategy<Value = UpdateOp> {
    select(vec![UpdateOp::Set, UpdateOp::Best, UpdateOp::Incr])
}

/// A well-formed submission (it may still be refused by the board's
/// bounds or produce a NaN).
fn valid_sub(s: Scale) -> BoxedStrategy<Sub> {
    let op = prop_oneof![3 => Just(None), 3 => update_op().prop_map(Some)];
    let presence = prop_oneof![
        6 => Just(Presence::Any),
        1 => Just(Presence::OnlyNew),
        1 => Just(Presence::OnlyExisting),
    ];
    let cond = prop_oneof![
        6 => Just(Cond::Always),
        1 => Just(Cond::Greater),
        1 => Just(Cond::Less),
    ];
    (
        member(s),
        select(s.scores),
        op,
        presence,
        cond,
        name(),
        data(),
    )
        .prop_map(|(member, score, op, presence, cond, name, data)| Sub {
            member,
            score,
            op,
            presence,
            cond,
            name,
            data,
        })
        .boxed()
}

/// A run as a sequential load sends it: plain sets of members, each score
/// beyond the last (ascending or descending, from any of the scale's
/// scores, so past either end of the board or into its middle), and a
/// member repeated now and then.
fn sequential_batch(s: Scale) -> BoxedStrategy<Vec<Sub>> {
    (
        vec(member(s), 1..=s.max_batch),
        select(s.scores),
        any::<bool>(),
    )
        .prop_map(|(members, start, up)| {
            let start = if start.is_finite() { start } else { 0.0 };
            members
                .into_iter()
                .enumerate()
                .map(|(i, member)| Sub {
                    member,
                    score: if up {
                        start + i as f64
                    } else {
                        start - i as f64
                    },
                    op: None,
                    presence: Presence::Any,
                    cond: Cond::Always,
                    name: None,
                    data: None,
                })
                .collect()
        })
        .boxed()
}

fn sub(s: Scale) -> BoxedStrategy<Sub> {
    prop_oneof![
        30 => valid_sub(s),
        1 => (valid_sub(s), flaw()).prop_map(|(x, f)| x.with_flaw(f)),
    ]
    .boxed()
}

/// A batch: well-formed, or with one bad item somewhere (refused whole).
fn batch(s: Scale) -> BoxedStrategy<Vec<Sub>> {
    prop_oneof![
        10 => vec(valid_sub(s), 0..=s.max_batch),
        2 => sequential_batch(s),
        1 => (vec(valid_sub(s), 1..=s.max_batch), any::<prop::sample::Index>(), flaw())
            .prop_map(|(mut v, i, f)| {
                let i = i.index(v.len());
                v[i] = v[i].clone().with_flaw(f);
                v
            }),
    ]
    .boxed()
}

fn set_data_args(s: Scale) -> BoxedStrategy<(Mem, Option<String>, Option<String>)> {
    prop_oneof![
        20 => (member(s), name(), data()),
        1 => (valid_sub(s), flaw()).prop_map(|(x, f)| {
            let x = x.with_flaw(f);
            (x.member, x.name, x.data)
        }),
    ]
    .boxed()
}

fn bound(s: Scale) -> BoxedStrategy<Bound<f64>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => score(s).prop_map(Bound::Included),
        3 => score(s).prop_map(Bound::Excluded),
    ]
    .boxed()
}

fn range(s: Scale) -> BoxedStrategy<ScoreRange> {
    (bound(s), bound(s))
        .prop_map(|(min, max)| ScoreRange { min, max })
        .boxed()
}

/// A count, rank or page argument: small, 0, or `u64::MAX`.
fn arg(s: Scale) -> BoxedStrategy<u64> {
    prop_oneof![
        20 => 0..=s.max_arg,
        1 => Just(u64::MAX),
    ]
    .boxed()
}

fn small_arg(s: Scale) -> BoxedStrategy<u64> {
    prop_oneof![
        20 => 0..=(s.max_arg / 3).max(7),
        1 => Just(u64::MAX),
    ]
    .boxed()
}

fn order() -> impl Strategy<Value = Order> {
    select(vec![Order::Desc, Order::Asc])
}
fn ranking() -> impl Strategy<Value = Ranking> {
    select(vec![Ranking::Unique, Ranking::Dense, Ranking::Competition])
}
fn tiebreak() -> impl Strategy<Value = Tiebreak> {
    select(vec![Tiebreak::Member, Tiebreak::First, Tiebreak::Last])
}

/// Bounds and capacity: `(min_score, max_score, max_members)`, always valid.
fn limits(s: Scale) -> BoxedStrategy<(Option<f64>, Option<f64>, Option<u64>)> {
    let min = prop_oneof![
        3 => Just(None),
        1 => Just(Some(-2.0)),
        1 => Just(Some(NEG_INF)),
        1 => Just(Some(0.0)),
    ];
    let max = prop_oneof![
        3 => Just(None),
        1 => Just(Some(2.0)),
        1 => Just(Some(INF)),
        1 => Just(Some(3.0)),
    ];
    let cap = prop_oneof![3 => Just(None), 2 => (1..=s.max_cap).prop_map(Some)];
    prop_oneof![
        2 => Just((None, None, None)),
        3 => (min, max, cap),
    ]
    .boxed()
}

/// Any config `set_config` may be given, sometimes an invalid one.
fn any_config(s: Scale) -> BoxedStrategy<BoardConfig> {
    let lim = prop_oneof![
        8 => limits(s),
        1 => Just((Some(1.0), Some(-1.0), None)),
        1 => Just((None, None, Some(0))),
        1 => Just((Some(f64::NAN), None, None)),
    ];
    (order(), ranking(), tiebreak(), update_op(), lim)
        .prop_map(|(order, ranking, tiebreak, update, (min, max, cap))| {
            config(order, ranking, tiebreak, update, (min, max, cap))
        })
        .boxed()
}

fn config(
    order: Order,
    ranking: Ranking,
    tiebreak: Tiebreak,
    update: UpdateOp,
    (min_score, max_score, max_members): (Option<f64>, Option<f64>, Option<u64>),
) -> BoardConfig {
    BoardConfig {
        order,
        ranking,
        tiebreak,
        update,
        min_score,
        max_score,
        max_members,
        ..BoardConfig::default()
    }
}

/// 1-based ranks `start..=stop` for a removal: mostly short spans.
fn rank_span(s: Scale) -> BoxedStrategy<(u64, u64)> {
    let short = (0..=s.max_arg, 0..=(s.max_arg / 8).max(3)).prop_map(|(a, n)| (a, a + n));
    prop_oneof![
        12 => short,
        1 => (arg(s), arg(s)),
    ]
    .boxed()
}

fn write_op(s: Scale) -> BoxedStrategy<Op> {
    let pop = prop_oneof![
        20 => 0..=s.max_arg / 10 + 4,
        1 => Just(u64::MAX),
    ];
    let ops: [BoxedStrategy<Op>; 11] = [
        sub(s).prop_map(Op::Submit).boxed(),
        batch(s).prop_map(Op::SubmitMany).boxed(),
        members(s, s.max_remove).prop_map(Op::Remove).boxed(),
        rank_span(s)
            .prop_map(|(a, b)| Op::RemoveRangeByRank(a, b))
            .boxed(),
        range(s).prop_map(Op::RemoveRangeByScore).boxed(),
        (pop, any::<bool>())
            .prop_map(|(c, w)| Op::Pop(c, w))
            .boxed(),
        set_data_args(s)
            .prop_map(|(m, n, d)| Op::SetData(m, n, d))
            .boxed(),
        Just(Op::Clear).boxed(),
        any::<bool>().prop_map(Op::Take).boxed(),
        any_config(s).prop_map(Op::SetConfig).boxed(),
        any::<bool>().prop_map(Op::Snapshot).boxed(),
    ];
    let weighted: Vec<(u32, BoxedStrategy<Op>)> = s
        .weights
        .into_iter()
        .zip(ops)
        .filter(|(w, _)| *w > 0)
        .collect();
    proptest::strategy::Union::new_weighted(weighted).boxed()
}

fn op(s: Scale) -> BoxedStrategy<Op> {
    prop_oneof![
        60 => write_op(s),
        1 => write_op(s).prop_map(|o| Op::ReadOnly(Box::new(o))),
    ]
    .boxed()
}

fn read(s: Scale) -> BoxedStrategy<Read> {
    let ps = small_arg(s);
    let p = prop_oneof![
        8 => select(vec![0.0, 0.1, 10.0, 25.0, 33.3, 50.0, 66.7, 75.0, 99.9, 100.0]),
        1 => select(vec![-1.0, 100.5, f64::NAN]),
    ];
    prop_oneof![
        2 => (any_member(s), ps.clone()).prop_map(|(m, p)| Read::Entry(m, p)),
        1 => any_member(s).prop_map(Read::Rank),
        1 => any_member(s).prop_map(Read::Score),
        1 => any_member(s).prop_map(Read::Position),
        1 => any_member(s).prop_map(Read::Percentile),
        2 => range(s).prop_map(Read::Count),
        3 => (small_arg(s), ps.clone()).prop_map(|(a, b)| Read::Top(a, b)),
        3 => (arg(s), arg(s), any::<bool>()).prop_map(|(a, b, w)| Read::RangeByRank(a, b, w)),
        3 => (range(s), any::<bool>(), small_arg(s), small_arg(s))
            .prop_map(|(r, w, o, l)| Read::RangeByScore(r, w, o, l)),
        3 => (any_member(s), ps).prop_map(|(m, p)| Read::Around(m, p)),
        2 => members(s, 6).prop_map(Read::Ranks),
        2 => p.prop_map(Read::ScoreAtPercentile),
        1 => (0..=s.max_arg as usize + 2, 0..=s.max_arg as usize)
            .prop_map(|(a, b)| Read::EntriesFrom(a, b)),
        1 => members(s, 40).prop_map(Read::RankMany),
        1 => members(s, 40).prop_map(Read::ScoreMany),
    ]
    .boxed()
}

fn steps(s: Scale) -> BoxedStrategy<Vec<Step>> {
    let prefill = vec(valid_sub(s), s.prefill / 2..=s.prefill);
    (prefill, vec((op(s), vec(read(s), 0..=3)), 1..=s.max_steps))
        .prop_map(|(fill, mut steps)| {
            if !fill.is_empty() {
                steps.insert(0, (Op::Prefill(fill), Vec::new()));
            }
            steps
        })
        .boxed()
}

// ==================================================================== runner

/// Whole-board agreement: invariants, config, every entry and every
/// per-member read.
fn check_board(b: &Board, m: &Model, page_size: u64) -> Result<(), TestCaseError> {
    b.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(b.config(), &m.cfg);
    prop_assert_eq!(b.ranking(), m.cfg.ranking);
    prop_assert_eq!(b.is_read_only(), m.read_only);
    prop_assert_eq!(b.len(), m.len());
    prop_assert_eq!(b.is_empty(), m.len() == 0);
    prop_assert_eq!(b.info().members, m.len() as u64);
    prop_assert_eq!(board_rows(b), m.rows());
    let view = m.view();
    let all: Vec<&[u8]> = m.entries.iter().map(|e| e.member.as_slice()).collect();
    let ranks: Vec<Option<u64>> = view.iter().map(|v| Some(v.0)).collect();
    prop_assert_eq!(b.rank_many(&all), ranks);
    let scores: Vec<Option<f64>> = m.entries.iter().map(|e| Some(e.score)).collect();
    prop_assert_eq!(b.score_many(&all), scores);
    // Every member of a small board; a spread sample of a big one.
    let stride = (m.len() / 500).max(1);
    for (i, e) in m.entries.iter().enumerate().step_by(stride) {
        let mem = &e.member;
        prop_assert_eq!(
            b.entry(mem, page_size),
            Some(m.info_at(i, page_size, &view))
        );
        prop_assert_eq!(b.position(mem), Some(i));
        prop_assert_eq!(b.rank(mem), Some(view[i].0));
        prop_assert_eq!(b.score(mem), Some(e.score));
        prop_assert_eq!(b.percentile(mem), Some(m.percentile_at(i, &view)));
    }
    Ok(())
}

fn check_read(b: &Board, m: &Model, r: &Read) -> Result<(), TestCaseError> {
    match r {
        Read::Entry(x, ps) => prop_assert_eq!(b.entry(&x.0, *ps), m.entry(&x.0, *ps)),
        Read::Rank(x) => prop_assert_eq!(b.rank(&x.0), m.rank(&x.0)),
        Read::Score(x) => prop_assert_eq!(b.score(&x.0), m.score(&x.0)),
        Read::Position(x) => prop_assert_eq!(b.position(&x.0), m.find(&x.0)),
        Read::Percentile(x) => prop_assert_eq!(b.percentile(&x.0), m.percentile(&x.0)),
        Read::Count(rg) => prop_assert_eq!(b.count_range(rg).map_err(kind), m.count_range(rg)),
        Read::Top(p, ps) => prop_assert_eq!(b.top(*p, *ps).map_err(kind), m.top(*p, *ps)),
        Read::RangeByRank(a, z, w) => {
            prop_assert_eq!(b.range_by_rank(*a, *z, *w), m.range_by_rank(*a, *z, *w))
        }
        Read::RangeByScore(rg, w, o, l) => prop_assert_eq!(
            b.range_by_score(rg, *w, *o, *l).map_err(kind),
            m.range_by_score(rg, *w, *o, *l)
        ),
        Read::Around(x, ps) => prop_assert_eq!(b.around(&x.0, *ps), m.around(&x.0, *ps)),
        Read::Ranks(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            prop_assert_eq!(b.ranks(&raw), m.ranks(xs))
        }
        Read::ScoreAtPercentile(p) => prop_assert_eq!(
            b.score_at_percentile(*p).map_err(kind),
            m.score_at_percentile(*p)
        ),
        Read::RankMany(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            let want: Vec<Option<u64>> = xs.iter().map(|x| m.rank(&x.0)).collect();
            prop_assert_eq!(b.rank_many(&raw), want)
        }
        Read::ScoreMany(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            let want: Vec<Option<f64>> = xs.iter().map(|x| m.score(&x.0)).collect();
            prop_assert_eq!(b.score_many(&raw), want)
        }
        Read::EntriesFrom(pos, lim) => {
            let want = m.entries_at(m.span(*pos, *lim));
            // The borrowing visitor sees exactly what the copying read returns.
            let mut seen = Vec::new();
            let n = b.visit(*pos, *lim, false, |e| {
                seen.push(Entry {
                    member: e.member.to_vec(),
                    score: e.score,
                    rank: e.rank,
                    name: e.name.map(Into::into),
                    data: e.data.map(Into::into),
                })
            });
            prop_assert_eq!(n, want.len());
            prop_assert_eq!(&seen, &want);
            prop_assert_eq!(b.entries_from(*pos, *lim), want)
        }
    }
    Ok(())
}

fn apply_op(b: &mut Board, m: &mut Model, op: &Op, ps: u64) -> Result<(), TestCaseError> {
    match op {
        Op::Prefill(subs) => {
            for s in subs {
                prop_assert_eq!(b.submit(&s.as_submit()).map_err(kind), m.submit(s));
            }
        }
        Op::Submit(s) => {
            prop_assert_eq!(b.submit(&s.as_submit()).map_err(kind), m.submit(s));
        }
        Op::SubmitMany(batch) => {
            let subs: Vec<Submit> = batch.iter().map(Sub::as_submit).collect();
            let got = b
                .submit_many(&subs)
                .map(|v| v.into_iter().map(|r| r.map_err(kind)).collect::<Vec<_>>())
                .map_err(kind);
            prop_assert_eq!(got, m.submit_many(batch));
        }
        Op::Remove(xs) => {
            let raw: Vec<&[u8]> = xs.iter().map(|x| x.0.as_slice()).collect();
            prop_assert_eq!(b.remove(&raw).map_err(kind), m.remove(xs));
        }
        Op::RemoveRangeByRank(a, z) => prop_assert_eq!(
            b.remove_range_by_rank(*a, *z).map_err(kind),
            m.remove_range_by_rank(*a, *z)
        ),
        Op::RemoveRangeByScore(r) => prop_assert_eq!(
            b.remove_range_by_score(r).map_err(kind),
            m.remove_range_by_score(r)
        ),
        Op::Pop(c, w) => prop_assert_eq!(b.pop(*c, *w).map_err(kind), m.pop(*c, *w)),
        Op::SetData(x, n, d) => prop_assert_eq!(
            b.set_data(&x.0, n.as_deref(), d.as_deref()).map_err(kind),
            m.set_data(&x.0, n.as_deref(), d.as_deref())
        ),
        Op::Clear => {
            b.clear();
            m.clear();
        }
        Op::Take(keep_taken) => {
            let taken = b.take();
            check_board(&taken, m, ps)?;
            b.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert!(b.is_empty());
            prop_assert!(!b.is_read_only());
            prop_assert_eq!(b.config(), &m.cfg);
            if *keep_taken {
                *b = taken;
            } else {
                m.clear();
                m.read_only = false;
            }
        }
        Op::SetConfig(c) => {
            prop_assert_eq!(
                b.set_config(c.clone()).map_err(kind),
                m.set_config(c.clone())
            )
        }
        Op::Snapshot(keep_restored) => {
            let mut bytes = Vec::new();
            b.write_snapshot(&mut bytes).unwrap();
            // The copy the server snapshots writes the very same bytes.
            let mut from_image = Vec::new();
            b.image().write_snapshot(&mut from_image).unwrap();
            prop_assert!(
                from_image == bytes,
                "a board's image snapshots to other bytes"
            );
            let restored = Board::read_snapshot(&mut bytes.as_slice())
                .map_err(|e| TestCaseError::fail(format!("read_snapshot: {e}")))?;
            check_board(&restored, m, ps)?;
            let mut again = Vec::new();
            restored.write_snapshot(&mut again).unwrap();
            prop_assert!(again == bytes, "a restored board snapshots to other bytes");
            if *keep_restored {
                *b = restored;
            }
        }
        Op::ReadOnly(inner) => {
            b.set_read_only(true);
            m.read_only = true;
            apply_op(b, m, inner, ps)?;
            check_board(b, m, ps)?;
            b.set_read_only(false);
            m.read_only = false;
        }
    }
    Ok(())
}

fn run_steps(b: &mut Board, m: &mut Model, steps: &[Step]) -> Result<(), TestCaseError> {
    for (i, (op, reads)) in steps.iter().enumerate() {
        let ps = (i % 5) as u64;
        let before = (m.cfg.order, m.cfg.ranking, m.cfg.tiebreak, m.cfg.update);
        let ctx =
            |e: TestCaseError| TestCaseError::fail(format!("step {i} ({op:?}) on {before:?}: {e}"));
        apply_op(b, m, op, ps).map_err(ctx)?;
        check_board(b, m, ps).map_err(ctx)?;
        for r in reads {
            check_read(b, m, r)
                .map_err(|e| TestCaseError::fail(format!("step {i} ({op:?}), read {r:?}: {e}")))?;
        }
    }
    Ok(())
}

/// Cases per config combination: `PROPTEST_CASES` if set; else `release`
/// (the default run is sized for `cargo test --release`; a debug build is
/// some 20 times slower, so it runs a tenth of the cases).
fn cases(release: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            release.div_ceil(10)
        } else {
            release
        })
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        // Inputs of thousands of submissions shrink slowly: report the best
        // reduction found within a minute rather than hang.
        max_shrink_iters: 20_000,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })
}

const ALL_ORDERS: &[Order] = &[Order::Desc, Order::Asc];
const ALL_UPDATES: &[UpdateOp] = &[UpdateOp::Set, UpdateOp::Best, UpdateOp::Incr];

fn combos(orders: &[Order], updates: &[UpdateOp]) -> Vec<(Order, Ranking, Tiebreak, UpdateOp)> {
    let mut v = Vec::new();
    for &o in orders {
        for &r in &[Ranking::Unique, Ranking::Dense, Ranking::Competition] {
            for &t in &[Tiebreak::Member, Tiebreak::First, Tiebreak::Last] {
                for &u in updates {
                    v.push((o, r, t, u));
                }
            }
        }
    }
    v
}

/// Runs random operation sequences from an empty board of each
/// combination of the given orders and updates with every ranking and
/// tiebreak.
fn run_sequences(orders: &[Order], updates: &[UpdateOp], scale: Scale, cases_per_combo: u32) {
    for (o, r, t, u) in combos(orders, updates) {
        let strategy = (limits(scale), steps(scale));
        let result = runner(cases(cases_per_combo)).run(&strategy, |(lim, steps)| {
            let cfg = config(o, r, t, u, lim);
            let mut b = Board::new(cfg.clone()).expect("valid config");
            let mut m = Model::new(cfg).expect("valid config");
            check_board(&b, &m, 1)?;
            run_steps(&mut b, &mut m, &steps)
        });
        if let Err(e) = result {
            panic!("order {o:?}, ranking {r:?}, tiebreak {t:?}, update {u:?}: {e}");
        }
    }
}

// ===================================================================== tests

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_set_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Set], SMALL, 128);
}

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_best_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Best], SMALL, 128);
}

#[test]
fn every_operation_matches_the_model_in_all_18_configs_with_incr_update() {
    run_sequences(ALL_ORDERS, &[UpdateOp::Incr], SMALL, 128);
}

#[test]
fn boards_of_hundreds_spanning_many_leaves_match_the_model_in_all_54_configs() {
    run_sequences(ALL_ORDERS, ALL_UPDATES, LARGE, 4);
}

#[test]
fn desc_boards_of_thousands_with_three_tree_levels_match_the_model_in_all_27_configs() {
    run_sequences(&[Order::Desc], ALL_UPDATES, XL, 1);
}

#[test]
fn asc_boards_of_thousands_with_three_tree_levels_match_the_model_in_all_27_configs() {
    run_sequences(&[Order::Asc], ALL_UPDATES, XL, 1);
}

/// One `combine` input: source boards (config index, submissions), the
/// sources to combine (index into the boards, weight), the aggregate, and
/// what happens to the result afterwards.
#[derive(Debug, Clone)]
struct CombineCase {
    boards: Vec<(usize, Vec<Sub>)>,
    picks: Vec<(usize, f64)>,
    agg: Aggregate,
    intersect: bool,
    cap: Option<u64>,
    after: Vec<Step>,
}

fn combine_case() -> BoxedStrategy<CombineCase> {
    let weight = prop_oneof![
        30 => select(vec![1.0, 1.0, 2.0, 0.0, -1.0, 0.5, -0.0, INF, NEG_INF]),
        1 => Just(f64::NAN),
    ];
    let plain_sub =
        (member(SMALL), select(SMALL.scores), name()).prop_map(|(member, score, name)| Sub {
            member,
            score,
            op: Some(UpdateOp::Set),
            presence: Presence::Any,
            cond: Cond::Always,
            name,
            data: None,
        });
    let after = vec((op(SMALL), vec(read(SMALL), 0..=2)), 0..=12);
    (
        vec((0..54usize, vec(plain_sub, 0..=14)), 0..=3),
        vec((0..3usize, weight), 0..=4),
        select(vec![Aggregate::Sum, Aggregate::Min, Aggregate::Max]),
        any::<bool>(),
        prop_oneof![3 => Just(None), 1 => (1..=8u64).prop_map(Some)],
        after,
    )
        .prop_map(|(boards, picks, agg, intersect, cap, after)| CombineCase {
            boards,
            picks,
            agg,
            intersect,
            cap,
            after,
        })
        .boxed()
}

fn nth_config(i: usize) -> BoardConfig {
    let all = combos(ALL_ORDERS, ALL_UPDATES);
    let (o, r, t, u) = all[i % all.len()];
    config(o, r, t, u, (None, None, None))
}

fn run_combine(dest: BoardConfig, c: &CombineCase) -> Result<(), TestCaseError> {
    let mut boards = Vec::new();
    let mut models = Vec::new();
    for (cfg_idx, subs) in &c.boards {
        let cfg = nth_config(*cfg_idx);
        let mut b = Board::new(cfg.clone()).unwrap();
        let mut m = Model::new(cfg).unwrap();
        for s in subs {
            prop_assert_eq!(b.submit(&s.as_submit()).map_err(kind), m.submit(s));
        }
        check_board(&b, &m, 1)?;
        boards.push(b);
        models.push(m);
    }
    let picks: Vec<(usize, f64)> = if boards.is_empty() {
        Vec::new()
    } else {
        c.picks
            .iter()
            .map(|&(i, w)| (i % boards.len(), w))
            .collect()
    };
    let srcs: Vec<(&Board, f64)> = picks.iter().map(|&(i, w)| (&boards[i], w)).collect();
    let msrcs: Vec<(&Model, f64)> = picks.iter().map(|&(i, w)| (&models[i], w)).collect();
    let dest = BoardConfig {
        max_members: c.cap,
        ..dest
    };
    let got = Board::combine(dest.clone(), &srcs, c.agg, c.intersect);
    let want = Model::combine(dest, &msrcs, c.agg, c.intersect);
    match (got, want) {
        (Ok(mut b), Ok(mut m)) => {
            check_board(&b, &m, 3)?;
            run_steps(&mut b, &mut m, &c.after)
        }
        (got, want) => {
            prop_assert_eq!(got.map(|_| ()).map_err(kind), want.map(|_| ()));
            Ok(())
        }
    }
}

#[test]
fn merge_and_intersect_match_redis_rules_into_every_destination_config() {
    for i in 0..54 {
        let dest = nth_config(i);
        let result = runner(cases(64)).run(&combine_case(), |c| run_combine(dest.clone(), &c));
        if let Err(e) = result {
            panic!("destination {dest:?}: {e}");
        }
    }
}

// ------------------------------------------- the model against the docs

fn model_with(cfg: BoardConfig, subs: &[(&str, f64)]) -> Model {
    let mut m = Model::new(cfg).unwrap();
    for &(k, s) in subs {
        m.submit(&Sub {
            member: Mem(k.as_bytes().to_vec()),
            score: s,
            op: None,
            presence: Presence::Any,
            cond: Cond::Always,
            name: None,
            data: None,
        })
        .unwrap();
    }
    m
}

fn order_of(m: &Model) -> Vec<String> {
    m.entries
        .iter()
        .map(|e| String::from_utf8(e.member.clone()).unwrap())
        .collect()
}

/// Pins the model to the documented examples, so agreement with the
/// engine means agreement with the docs.
#[test]
fn the_model_itself_follows_the_documented_examples() {
    let subs = [("b", 1.0), ("a", 1.0), ("c", 2.0), ("d", 0.0)];
    let mk = |order, ranking, tiebreak| {
        model_with(
            config(order, ranking, tiebreak, UpdateOp::Set, (None, None, None)),
            &subs,
        )
    };
    // Member tiebreak: ascending bytes on asc, the exact reverse on desc.
    let m = mk(Order::Asc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(order_of(&m), ["d", "a", "b", "c"]);
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    // first / last: arrival order among equal scores.
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::First);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Last);
    assert_eq!(order_of(&m), ["c", "a", "b", "d"]);
    // Ranks: unique 1,2,3,4; dense 1,2,2,3; competition 1,2,2,4.
    let ranks = |r| {
        let m = mk(Order::Desc, r, Tiebreak::Member);
        m.view().iter().map(|v| v.0).collect::<Vec<_>>()
    };
    assert_eq!(ranks(Ranking::Unique), [1, 2, 3, 4]);
    assert_eq!(ranks(Ranking::Dense), [1, 2, 2, 3]);
    assert_eq!(ranks(Ranking::Competition), [1, 2, 2, 4]);
    // Percentile: share not better; the best is at 100.
    let m = mk(Order::Desc, Ranking::Unique, Tiebreak::Member);
    assert_eq!(m.percentile(b"c"), Some(100.0));
    assert_eq!(m.percentile(b"a"), Some(75.0));
    assert_eq!(m.percentile(b"d"), Some(25.0));
    // score_at_percentile: 100 → the best, 0 → the worst.
    assert_eq!(m.score_at_percentile(100.0).unwrap().unwrap().member, b"c");
    assert_eq!(m.score_at_percentile(0.0).unwrap().unwrap().member, b"d");
    // around: page_size entries from page_size/2 above, clipped at the end.
    let a = m.around(b"d", 3).unwrap();
    assert_eq!(a.entries.len(), 2);
    assert_eq!(a.entries[0].member, b"a");
    // `first` follows the last actual score change, not the last write.
    let mut m = mk(Order::Desc, Ranking::Unique, Tiebreak::First);
    let resubmit = |m: &mut Model, k: &str, s: f64| {
        m.submit(&Sub {
            member: Mem(k.as_bytes().to_vec()),
            score: s,
            op: None,
            presence: Presence::Any,
            cond: Cond::Always,
            name: None,
            data: None,
        })
        .unwrap()
    };
    assert!(!resubmit(&mut m, "b", 1.0).changed);
    assert_eq!(order_of(&m), ["c", "b", "a", "d"]);
    resubmit(&mut m, "b", 5.0);
    resubmit(&mut m, "b", 1.0);
    assert_eq!(order_of(&m), ["c", "a", "b", "d"]);
    // max_members evicts the worst; a worse newcomer is evicted itself.
    let mut m = model_with(
        config(
            Order::Desc,
            Ranking::Unique,
            Tiebreak::First,
            UpdateOp::Set,
            (None, None, Some(2)),
        ),
        &[("a", 1.0), ("b", 2.0)],
    );
    let r = resubmit(&mut m, "c", 1.0);
    assert_eq!((r.created, r.evicted, r.rank), (false, 1, None));
    let r = resubmit(&mut m, "d", 3.0);
    assert_eq!((r.created, r.evicted, r.rank), (true, 1, Some(1)));
    assert_eq!(order_of(&m), ["d", "b"]);
}
