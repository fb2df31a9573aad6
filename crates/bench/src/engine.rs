//! The `engine` scenario (docs/spec.md §7.6): podium's in-process [`Board`] against
//! a leaderboard built from std collections, single thread, at each member
//! count asked for.
//!
//! Both sides implement [`Leaderboard`] and run through the same generic
//! code on the same seeded data and the same pre-generated operations, so
//! the only difference between the two columns is the data structure.
//! Figures: load time and inserts/s, updates/s, rank lookups/s, 25-entry
//! page reads/s, and heap bytes per member (via [`crate::alloc`]).

use crate::alloc;
use crate::report::{self, Better, Record, Table};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use podium_engine::{score, Board, BoardConfig, Submit};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write;
use std::ops::Bound;
use std::time::{Duration, Instant};

pub const SCENARIO: &str = "engine";
pub const BASELINE_NAME: &str = "std BTreeMap+HashMap";
pub const PAGE_SIZE: u64 = 25;
/// Operations per batch in the batched figures: a `redis-benchmark -P 64`
/// pipeline's worth.
pub const BATCH: usize = 64;
/// Scores are integers below this, drawn uniformly; wide enough that ties
/// are rare, as with real scores.
pub const SCORE_SPAN: u64 = 1_000_000_000;

/// What the scenario needs from a leaderboard. Methods take `&mut self` so
/// the baseline can reuse a scratch buffer instead of allocating per call.
pub trait Leaderboard {
    const NAME: &'static str;
    /// `NAME` without spaces, for benchmark ids and file names.
    const ID: &'static str;
    /// True when rank and page reads cost O(n): those get time-boxed.
    const LINEAR_READS: bool;
    fn create() -> Self;
    /// Adds `member` or replaces its score.
    fn submit(&mut self, member: &str, score: f64) -> Result<()>;
    /// 1-based rank, best first.
    fn rank(&mut self, member: &str) -> Option<u64>;
    /// Reads page `page` (1-based) as owned entries, like a server answering
    /// it would; returns how many entries it had.
    fn page(&mut self, page: u64, page_size: u64) -> Result<usize>;
    /// Applies a batch of submissions in order. Where the structure has no
    /// batch form this is just a loop, so both sides do the same work.
    fn submit_batch(&mut self, batch: &[(&str, f64)]) -> Result<()> {
        batch.iter().try_for_each(|&(m, s)| self.submit(m, s))
    }
    /// Ranks of a batch of members; returns their sum (to keep them alive).
    fn rank_batch(&mut self, members: &[&str]) -> Result<u64> {
        members.iter().try_fold(0u64, |acc, m| {
            let r = self
                .rank(m)
                .with_context(|| format!("member {m} not found"))?;
            Ok(acc + r)
        })
    }
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The structure's own account of its heap use, if it keeps one.
    fn self_reported_heap(&self) -> Option<usize> {
        None
    }
}

/// podium's [`Board`] with the default config (desc, unique ranks, ties by
/// member, `set` updates).
pub struct Podium {
    board: Board,
}

impl Leaderboard for Podium {
    const NAME: &'static str = "podium";
    const ID: &'static str = "podium";
    const LINEAR_READS: bool = false;

    fn create() -> Self {
        Podium {
            board: Board::new(BoardConfig::default()).expect("the default config is valid"),
        }
    }

    #[inline]
    fn submit(&mut self, member: &str, score: f64) -> Result<()> {
        self.board.submit(&Submit::new(member.as_bytes(), score))?;
        Ok(())
    }

    #[inline]
    fn rank(&mut self, member: &str) -> Option<u64> {
        self.board.rank(member.as_bytes())
    }

    #[inline]
    fn page(&mut self, page: u64, page_size: u64) -> Result<usize> {
        let p = self.board.top(page, page_size)?;
        let n = p.entries.len();
        black_box(p);
        Ok(n)
    }

    fn submit_batch(&mut self, batch: &[(&str, f64)]) -> Result<()> {
        let subs: Vec<Submit> = batch
            .iter()
            .map(|&(m, s)| Submit::new(m.as_bytes(), s))
            .collect();
        for r in self.board.submit_many(&subs)? {
            r?;
        }
        Ok(())
    }

    fn rank_batch(&mut self, members: &[&str]) -> Result<u64> {
        let bytes: Vec<&[u8]> = members.iter().map(|m| m.as_bytes()).collect();
        self.board
            .rank_many(&bytes)
            .into_iter()
            .zip(members)
            .try_fold(0u64, |acc, (r, m)| {
                Ok(acc + r.with_context(|| format!("member {m} not found"))?)
            })
    }

    fn len(&self) -> usize {
        self.board.len()
    }

    fn self_reported_heap(&self) -> Option<usize> {
        Some(self.board.heap_bytes())
    }
}

/// The leaderboard one writes with std alone: a `BTreeMap` ordered by
/// (score descending, member) for ranks and pages, and a `HashMap`
/// member → score to find a member's entry.
pub struct StdBaseline {
    tree: BTreeMap<(u64, String), ()>,
    scores: HashMap<String, f64>,
    /// Lookups need an owned `(u64, String)` key; reusing this buffer keeps
    /// the baseline from paying an allocation podium does not.
    scratch: String,
}

/// Sort key putting higher scores first, with podium's own encoding so both
/// sides order scores identically.
#[inline]
fn desc_key(score: f64) -> u64 {
    !score::encode(score)
}

impl Leaderboard for StdBaseline {
    const NAME: &'static str = BASELINE_NAME;
    const ID: &'static str = "std_baseline";
    const LINEAR_READS: bool = true;

    fn create() -> Self {
        StdBaseline {
            tree: BTreeMap::new(),
            scores: HashMap::new(),
            scratch: String::new(),
        }
    }

    #[inline]
    fn submit(&mut self, member: &str, score: f64) -> Result<()> {
        let key = desc_key(score);
        match self.scores.get_mut(member) {
            Some(old) => {
                let old_key = desc_key(*old);
                *old = score;
                if old_key != key {
                    self.scratch.clear();
                    self.scratch.push_str(member);
                    let probe = (old_key, std::mem::take(&mut self.scratch));
                    let (mut entry, ()) = self
                        .tree
                        .remove_entry(&probe)
                        .context("baseline map and tree disagree")?;
                    self.scratch = probe.1;
                    // The removed key's String moves into the new key: an
                    // update allocates nothing, as in podium.
                    entry.0 = key;
                    self.tree.insert(entry, ());
                }
            }
            None => {
                self.scores.insert(member.to_owned(), score);
                self.tree.insert((key, member.to_owned()), ());
            }
        }
        Ok(())
    }

    #[inline]
    fn rank(&mut self, member: &str) -> Option<u64> {
        let score = *self.scores.get(member)?;
        self.scratch.clear();
        self.scratch.push_str(member);
        let probe = (desc_key(score), std::mem::take(&mut self.scratch));
        let before = self
            .tree
            .range((Bound::Unbounded, Bound::Excluded(&probe)))
            .count();
        self.scratch = probe.1;
        Some(before as u64 + 1)
    }

    #[inline]
    fn page(&mut self, page: u64, page_size: u64) -> Result<usize> {
        let from = (page.max(1) - 1).saturating_mul(page_size);
        let entries: Vec<(String, f64, u64)> = self
            .tree
            .keys()
            .skip(from as usize)
            .take(page_size as usize)
            .zip(from + 1..)
            .map(|((key, member), rank)| (member.clone(), score::decode(!key), rank))
            .collect();
        let n = entries.len();
        black_box(entries);
        Ok(n)
    }

    fn len(&self) -> usize {
        self.scores.len()
    }
}

/// Writes member `i`'s id, `m{i}`, into `buf`.
#[inline]
pub fn member_id(buf: &mut String, i: u64) {
    buf.clear();
    let _ = write!(buf, "m{i}");
}

#[inline]
pub fn random_score(rng: &mut SmallRng) -> f64 {
    rng.random_range(0..SCORE_SPAN) as f64
}

/// Member ids packed into one buffer: formatting `m{i}` inside a timed loop
/// would cost as much as a podium lookup, and a `Vec<String>` would add an
/// allocation per id.
pub struct Ids {
    text: String,
    ends: Vec<usize>,
}

impl Ids {
    /// `count` ids of existing members (`0..members`), uniformly at random.
    pub fn random(members: u64, count: usize, rng: &mut SmallRng) -> Ids {
        let mut ids = Ids {
            text: String::with_capacity(count * 9),
            ends: Vec::with_capacity(count),
        };
        for _ in 0..count {
            let i = rng.random_range(0..members);
            let _ = write!(ids.text, "m{i}");
            ids.ends.push(ids.text.len());
        }
        ids
    }

    #[inline]
    pub fn get(&self, k: usize) -> &str {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.text[start..self.ends[k]]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The operations run after loading, generated once and replayed on both
/// sides.
pub struct Workload {
    pub updates: Ids,
    pub update_scores: Vec<f64>,
    pub lookups: Ids,
    pub pages: Vec<u64>,
}

impl Workload {
    pub fn new(members: u64, ops: usize, seed: u64) -> Workload {
        // Its own stream, so changing `ops` leaves the loaded data unchanged.
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let updates = Ids::random(members, ops, &mut rng);
        let update_scores = (0..ops).map(|_| random_score(&mut rng)).collect();
        let lookups = Ids::random(members, ops, &mut rng);
        let last_page = members.div_ceil(PAGE_SIZE);
        let pages = (0..ops).map(|_| rng.random_range(1..=last_page)).collect();
        Workload {
            updates,
            update_scores,
            lookups,
            pages,
        }
    }
}

/// How many operations ran and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub ops: u64,
    pub secs: f64,
}

impl Run {
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }
}

/// Runs `op(0)`, `op(1)`, … up to `count` times, or until `budget` has
/// passed; folds the results into a black box so no call is elided.
pub fn time_ops(
    count: usize,
    budget: Option<Duration>,
    mut op: impl FnMut(usize) -> Result<u64>,
) -> Result<Run> {
    let start = Instant::now();
    let mut acc = 0u64;
    let mut done = 0;
    for k in 0..count {
        acc = acc.wrapping_add(op(k)?);
        done += 1;
        if budget.is_some_and(|b| start.elapsed() >= b) {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    Ok(Run { ops: done, secs })
}

/// Settings of one `engine` run.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Member counts, one table each.
    pub members: Vec<u64>,
    /// Updates, rank lookups and page reads to run per side.
    pub ops: usize,
    pub seed: u64,
    /// Time box for the baseline's O(n) rank lookups and page reads.
    pub baseline_budget: Duration,
    /// Progress bars on stderr while loading (hidden anyway when stderr is
    /// not a terminal).
    pub progress: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            members: vec![1_000_000, 10_000_000],
            ops: 1_000_000,
            seed: 42,
            baseline_budget: Duration::from_secs(2),
            progress: true,
        }
    }
}

/// Everything measured on one side at one member count.
#[derive(Debug, Clone)]
pub struct SideResult {
    pub load: Run,
    /// Live heap bytes added by loading; `None` without the counting
    /// allocator.
    pub bytes: Option<usize>,
    /// The peak of live heap bytes while loading, above the start.
    pub peak_bytes: Option<usize>,
    pub self_reported_heap: Option<usize>,
    pub updates: Run,
    pub updates_batched: Run,
    pub lookups: Run,
    pub lookups_batched: Run,
    pub pages: Run,
    /// Sum of the id lengths loaded, for the per-member target.
    pub id_bytes: u64,
}

fn progress_bar(enabled: bool, len: u64, prefix: String) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(len),
        if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    pb.set_style(
        ProgressStyle::with_template(
            "{prefix:>28} [{bar:32}] {human_pos}/{human_len} {per_sec:>14} eta {eta}",
        )
        .expect("the template is valid")
        .progress_chars("=> "),
    );
    pb.set_prefix(prefix);
    pb
}

/// Loads `members` members into a fresh `L`, then replays `work` on it.
pub fn measure<L: Leaderboard>(
    members: u64,
    seed: u64,
    work: &Workload,
    opts: &EngineOptions,
) -> Result<SideResult> {
    // Ticking the bar per insert would cost more than some inserts; a power
    // of two so the check is a mask.
    const TICK: u64 = 1 << 16;
    let pb = progress_bar(opts.progress, members, format!("loading {}", L::NAME));
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut id = String::new();
    let mut id_bytes = 0u64;

    alloc::reset_peak();
    let before = alloc::stats();
    let mut lb = L::create();
    let start = Instant::now();
    // Loading goes through the batch path (BATCH members a call), as an
    // import or a pipelined client does; the ids are formatted into one
    // reused buffer.
    let mut ends: Vec<usize> = Vec::with_capacity(BATCH);
    let mut scores: Vec<f64> = Vec::with_capacity(BATCH);
    for i in 0..members {
        let _ = write!(id, "m{i}");
        ends.push(id.len());
        scores.push(random_score(&mut rng));
        if ends.len() == BATCH || i + 1 == members {
            let mut start = 0;
            let batch: Vec<(&str, f64)> = ends
                .iter()
                .zip(&scores)
                .map(|(&end, &score)| {
                    let m = &id[start..end];
                    start = end;
                    (m, score)
                })
                .collect();
            id_bytes += id.len() as u64;
            lb.submit_batch(&batch)
                .with_context(|| format!("{}: loading members up to m{i}", L::NAME))?;
            id.clear();
            ends.clear();
            scores.clear();
        }
        if (i + 1) & (TICK - 1) == 0 {
            pb.inc(TICK);
        }
    }
    let load = Run {
        ops: members,
        secs: start.elapsed().as_secs_f64(),
    };
    let after = alloc::stats();
    pb.finish_and_clear();
    if lb.len() as u64 != members {
        bail!(
            "{}: loaded {} members, expected {members}",
            L::NAME,
            lb.len()
        );
    }
    let (bytes, peak_bytes) = match (before, after) {
        (Some(b), Some(a)) => (
            Some(a.live.saturating_sub(b.live)),
            Some(a.peak.saturating_sub(b.live)),
        ),
        _ => (None, None),
    };
    let self_reported_heap = lb.self_reported_heap();

    // Single and batched updates take disjoint halves of the workload, so
    // every timed update sets a fresh random score (none is a no-op).
    let half = work.updates.len() / 2;
    let updates = time_ops(half, None, |k| {
        lb.submit(work.updates.get(k), work.update_scores[k])?;
        Ok(1)
    })?;
    let updates_batched = time_ops((work.updates.len() - half).div_ceil(BATCH), None, |b| {
        let lo = half + b * BATCH;
        let hi = (lo + BATCH).min(work.updates.len());
        let batch: Vec<(&str, f64)> = (lo..hi)
            .map(|k| (work.updates.get(k), work.update_scores[k]))
            .collect();
        lb.submit_batch(&batch)?;
        Ok(batch.len() as u64)
    })?;
    let budget = L::LINEAR_READS.then_some(opts.baseline_budget);
    let lookups_batched = time_ops(work.lookups.len().div_ceil(BATCH), budget, |b| {
        let lo = b * BATCH;
        let hi = (lo + BATCH).min(work.lookups.len());
        let batch: Vec<&str> = (lo..hi).map(|k| work.lookups.get(k)).collect();
        lb.rank_batch(&batch)
    })?;
    let lookups = time_ops(work.lookups.len(), budget, |k| {
        let member = work.lookups.get(k);
        lb.rank(member)
            .with_context(|| format!("{}: member {member} not found", L::NAME))
    })?;
    let pages = time_ops(work.pages.len(), budget, |k| {
        Ok(lb.page(work.pages[k], PAGE_SIZE)? as u64)
    })?;
    Ok(SideResult {
        load,
        bytes,
        peak_bytes,
        self_reported_heap,
        updates,
        updates_batched: Run {
            // The last batch may be short.
            ops: (updates_batched.ops * BATCH as u64).min((work.updates.len() - half) as u64),
            ..updates_batched
        },
        lookups,
        lookups_batched: Run {
            ops: (lookups_batched.ops * BATCH as u64).min(work.lookups.len() as u64),
            ..lookups_batched
        },
        pages,
        id_bytes,
    })
}

/// Runs the scenario at every member count of `opts`, printing a table to
/// `out` as each completes; returns one [`Record`] per figure.
pub fn run(opts: &EngineOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if opts.members.is_empty() || opts.members.contains(&0) {
        bail!("--members needs one or more counts, each at least 1");
    }
    if opts.ops == 0 {
        bail!("--ops must be at least 1");
    }
    let mut records = Vec::new();
    for &n in &opts.members {
        writeln!(
            out,
            "\nengine: {} members, single thread, seed {} — podium Board (default config) vs {}",
            report::thousands(n as i128),
            opts.seed,
            BASELINE_NAME
        )?;
        out.flush()?;
        let work = Workload::new(n, opts.ops, opts.seed);
        // One side at a time, each dropped before the next is built, so each
        // memory figure counts only its own structure.
        let podium = measure::<Podium>(n, opts.seed, &work, opts)?;
        let baseline = measure::<StdBaseline>(n, opts.seed, &work, opts)?;
        drop(work);
        let (table, notes, recs) = summarise(n, &podium, &baseline, opts);
        write!(out, "{}", table.render())?;
        for line in notes {
            writeln!(out, "  {line}")?;
        }
        out.flush()?;
        records.extend(recs);
    }
    Ok(records)
}

fn per_member(bytes: Option<usize>, n: u64) -> Option<f64> {
    bytes.map(|b| b as f64 / n as f64)
}

/// Builds the table, its notes and the JSON records for one member count.
pub fn summarise(
    n: u64,
    podium: &SideResult,
    baseline: &SideResult,
    opts: &EngineOptions,
) -> (Table, Vec<String>, Vec<Record>) {
    // (JSON key, table label, unit, podium, baseline, which way is better)
    type Figure<'a> = (&'a str, &'a str, &'a str, Option<f64>, Option<f64>, Better);
    let figures: [Figure; 9] = [
        (
            "load",
            "load all members, batches of 64",
            "s",
            Some(podium.load.secs),
            Some(baseline.load.secs),
            Better::Lower,
        ),
        (
            "inserts",
            "inserts (random scores)",
            "inserts/s",
            Some(podium.load.rate()),
            Some(baseline.load.rate()),
            Better::Higher,
        ),
        (
            "updates",
            "updates (random member)",
            "updates/s",
            Some(podium.updates.rate()),
            Some(baseline.updates.rate()),
            Better::Higher,
        ),
        (
            "updates_batched",
            "updates, batches of 64",
            "updates/s",
            Some(podium.updates_batched.rate()),
            Some(baseline.updates_batched.rate()),
            Better::Higher,
        ),
        (
            "rank_lookups_batched",
            "rank lookups, batches of 64",
            "lookups/s",
            Some(podium.lookups_batched.rate()),
            Some(baseline.lookups_batched.rate()),
            Better::Higher,
        ),
        (
            "rank_lookups",
            "rank lookups by member",
            "lookups/s",
            Some(podium.lookups.rate()),
            Some(baseline.lookups.rate()),
            Better::Higher,
        ),
        (
            "page_reads",
            "reads of a random page of 25",
            "pages/s",
            Some(podium.pages.rate()),
            Some(baseline.pages.rate()),
            Better::Higher,
        ),
        (
            "memory",
            "memory after loading",
            "bytes/member",
            per_member(podium.bytes, n),
            per_member(baseline.bytes, n),
            Better::Lower,
        ),
        (
            "peak_memory_loading",
            "peak memory while loading",
            "bytes/member",
            per_member(podium.peak_bytes, n),
            per_member(baseline.peak_bytes, n),
            Better::Lower,
        ),
    ];
    let mut table = Table::new([
        "figure",
        "unit",
        "podium",
        "std baseline",
        "podium advantage",
    ]);
    let mut records = Vec::new();
    for (key, label, unit, p, b, better) in figures {
        let r = report::ratio(p, b, better);
        table.row([
            label.to_string(),
            unit.to_string(),
            report::num(p),
            report::num(b),
            report::ratio_cell(r),
        ]);
        records.push(Record {
            scenario: SCENARIO,
            figure: key.into(),
            unit: unit.into(),
            podium: p,
            redis: None,
            baseline: b,
            baseline_name: Some(BASELINE_NAME.into()),
            ratio: r,
            members: Some(n),
        });
    }

    let th = |v: u64| report::thousands(v as i128);
    let mut notes = vec![
        "podium advantage = how many times better podium did (higher is better for podium): \
         podium/baseline for rates, baseline/podium for seconds and bytes"
            .to_string(),
        format!(
            "podium ran {} updates, {} rank lookups, {} page reads; the baseline ran {} updates, \
             {} rank lookups in {:.2} s and {} page reads in {:.2} s (its reads are O(n), so \
             they stop after {:.1} s)",
            th(podium.updates.ops),
            th(podium.lookups.ops),
            th(podium.pages.ops),
            th(baseline.updates.ops),
            th(baseline.lookups.ops),
            baseline.lookups.secs,
            th(baseline.pages.ops),
            baseline.pages.secs,
            opts.baseline_budget.as_secs_f64(),
        ),
    ];
    let avg_id = podium.id_bytes as f64 / n as f64;
    let target = 48.0 + avg_id;
    match per_member(podium.bytes, n) {
        Some(p) => notes.push(format!(
            "average member id: {avg_id:.2} bytes; target ≤ 48 + {avg_id:.2} = {target:.2} \
             bytes/member: {} ({p:.2})",
            if p <= target { "met" } else { "NOT met" }
        )),
        None => notes.push(format!(
            "average member id: {avg_id:.2} bytes; memory not measured (the counting \
             allocator is not installed in this binary)"
        )),
    }
    if let Some(h) = podium.self_reported_heap {
        notes.push(format!(
            "podium Board::heap_bytes() says {:.2} bytes/member",
            h as f64 / n as f64
        ));
    }
    notes.push(
        "memory = heap bytes requested (live after loading minus before), without the system \
         allocator's per-block overhead; load times include generating ids and scores"
            .into(),
    );
    (table, notes, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load<L: Leaderboard>(n: u64, seed: u64) -> L {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut lb = L::create();
        let mut id = String::new();
        for i in 0..n {
            member_id(&mut id, i);
            lb.submit(&id, random_score(&mut rng)).unwrap();
        }
        lb
    }

    /// Both sides must give the same answers, or the comparison would be of
    /// different work. Ties are the one place they may differ (podium puts
    /// equal scores in member-descending order, like ZREVRANGE), and a
    /// 2,000-member board with scores below 1e9 has none in practice.
    #[test]
    fn podium_and_baseline_agree() {
        let n = 2_000;
        let work = Workload::new(n, 3_000, 7);
        let mut p: Podium = load(n, 7);
        let mut b: StdBaseline = load(n, 7);
        for k in 0..work.updates.len() {
            p.submit(work.updates.get(k), work.update_scores[k])
                .unwrap();
            b.submit(work.updates.get(k), work.update_scores[k])
                .unwrap();
        }
        assert_eq!(p.len(), b.len());
        for k in 0..work.lookups.len() {
            let m = work.lookups.get(k);
            assert_eq!(p.rank(m), b.rank(m), "rank of {m}");
        }
        let last = n.div_ceil(PAGE_SIZE);
        for page in [1, 2, last - 1, last, last + 1] {
            assert_eq!(
                p.page(page, PAGE_SIZE).unwrap(),
                b.page(page, PAGE_SIZE).unwrap()
            );
        }
        let top = p.board.top(3, PAGE_SIZE).unwrap();
        let ours: Vec<_> = b.tree.keys().skip(50).take(25).collect();
        for (e, (k, m)) in top.entries.iter().zip(ours) {
            assert_eq!(e.member, m.as_bytes());
            assert_eq!(e.score, score::decode(!k));
        }
    }

    #[test]
    fn ids_round_trip() {
        let mut rng = SmallRng::seed_from_u64(1);
        let ids = Ids::random(100, 50, &mut rng);
        assert_eq!(ids.len(), 50);
        for k in 0..ids.len() {
            let id = ids.get(k);
            let i: u64 = id.strip_prefix('m').unwrap().parse().unwrap();
            assert!(i < 100);
        }
    }

    #[test]
    fn time_box_stops_early() {
        let run = time_ops(usize::MAX, Some(Duration::from_millis(20)), |_| {
            std::thread::sleep(Duration::from_millis(1));
            Ok(1)
        })
        .unwrap();
        assert!(run.ops >= 1 && run.ops < 1_000);
    }

    #[test]
    fn runs_small_and_reports_every_figure() {
        let opts = EngineOptions {
            members: vec![3_000],
            ops: 2_000,
            progress: false,
            ..Default::default()
        };
        let mut out = Vec::new();
        let recs = run(&opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(recs.len(), 9);
        assert!(recs.iter().all(|r| r.members == Some(3_000)));
        // The lib's tests do not install the counting allocator.
        let mem = recs.iter().find(|r| r.figure == "memory").unwrap();
        assert_eq!(mem.podium, None);
        assert!(text.contains("not measured"), "{text}");
        let json = serde_json::to_value(&recs[0]).unwrap();
        assert_eq!(json["scenario"], "engine");
        assert!(json["redis"].is_null());
        assert_eq!(json["baseline_name"], BASELINE_NAME);
    }
}
