//! One leaderboard: its config, members, and the counted tree that ranks
//! them. Every non-I/O operation of docs/spec.md §2 is a method here; protocols
//! translate their requests into these calls and encode what they return.
//!
//! The tree is kept in *rank order* (best first): the key of a member is the
//! order-preserving encoding of its score, bit-inverted on a `desc` board,
//! and ties go to the member table (member bytes, or arrival sequence for
//! `first`/`last`). So a position in the tree is a unique rank minus one,
//! competition rank is "entries with a strictly smaller key", and dense rank
//! is the same question asked of a second tree holding one entry per distinct
//! score (kept only by `dense` boards).

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use crate::config::{BoardConfig, Order, Ranking, Tiebreak, UpdateOp};
use crate::error::{Error, Result};
use crate::members::{check_member, Extra, Members, MAX_NAME_BYTES};
use crate::score;
use crate::search::index::SearchIndex;
use crate::sort::{Codec, KeyOp, KeyType, Num, Scores, MAX_SORT_KEYS};
use crate::tree::{CountedTree, NoTie, TieBreak};

/// Entries a walk in rank order reads per window (see
/// [`Board::walk_positions`]): enough that a window's misses overlap, few
/// enough that three windows' lines stay cached.
const WALK_WINDOW: usize = 64;

#[derive(Clone, Copy)]
enum TieMode {
    BytesAsc,
    BytesDesc,
    SeqAsc,
    SeqDesc,
}

/// Orders equal-score members; borrows the member table.
pub(crate) struct Ties<'a> {
    members: &'a Members,
    mode: TieMode,
}

impl TieBreak<u32> for Ties<'_> {
    #[inline]
    fn tie(&self, a: u32, b: u32) -> Ordering {
        let m = self.members;
        // Equal first keys: the other sort keys decide before the tiebreak.
        if m.stride() > 0 {
            match m.cmp_keys(a, b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        match self.mode {
            TieMode::BytesAsc => m.bytes(a).cmp(m.bytes(b)),
            TieMode::BytesDesc => m.bytes(b).cmp(m.bytes(a)),
            TieMode::SeqAsc => m.seq(a).cmp(&m.seq(b)),
            TieMode::SeqDesc => m.seq(b).cmp(&m.seq(a)),
        }
    }
}

/// The board's order as the tree sees it: a member's key (from its score)
/// and the tiebreak. Structures kept in tree order outside the tree (the
/// search index's ranked plane levels) are updated through it.
pub(crate) struct TreeOrder<'a> {
    ties: Ties<'a>,
    first: Codec,
}

impl TreeOrder<'_> {
    /// The tree key of a live member, as [`Board::key_of_id`] gives it.
    #[inline]
    pub(crate) fn key(&self, id: u32) -> u64 {
        self.first.encode(self.ties.members.raw(id))
    }
}

impl TieBreak<u32> for TreeOrder<'_> {
    #[inline]
    fn tie(&self, a: u32, b: u32) -> Ordering {
        self.ties.tie(a, b)
    }
}

/// `a, b, c`: a board's key names, for messages.
fn key_names(keys: &[crate::sort::SortKey]) -> String {
    keys.iter()
        .map(|k| k.key.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The checks of a submission that need only the board's config, shared
/// by every storage engine so that each refuses alike.
impl BoardConfig {
    /// A submission's name and data: a name of at most
    /// [`MAX_NAME_BYTES`], data a JSON object of at most `max_data_bytes`.
    pub fn check_extra(&self, name: Option<&str>, data: Option<&str>) -> Result<()> {
        if name.is_some_and(|n| n.len() > MAX_NAME_BYTES) {
            return Err(Error::BadName {
                max: MAX_NAME_BYTES,
            });
        }
        if let Some(d) = data.filter(|d| !d.is_empty()) {
            let max = self.max_data_bytes;
            if !serde_json::from_str::<serde_json::Value>(d).is_ok_and(|v| v.is_object()) {
                return Err(Error::BadData { max });
            }
            if d.len() > max {
                return Err(Error::DataTooLarge { len: d.len(), max });
            }
        }
        Ok(())
    }

    /// The checks of a submission that need no member's state: its values
    /// (one per key, of the keys' types, none NaN) and, for a `set` or
    /// `best`, the bounds. Returns the submitted values, coerced to their
    /// keys' types (`None`: not submitted).
    pub fn given(&self, s: &Submit) -> Result<[Option<Num>; MAX_SORT_KEYS]> {
        let keys = &self.sort;
        let op = s.op.unwrap_or(self.update);
        let mut g = [None; MAX_SORT_KEYS];
        match s.scores {
            Some(vals) => {
                for (name, v) in vals {
                    let j = self.key_index(name).ok_or_else(|| {
                        Error::WrongKind(format!(
                            "this board has no sort key {name:?}; its keys are {}",
                            key_names(keys)
                        ))
                    })?;
                    if g[j].is_some() {
                        return Err(Error::BadArgument(format!(
                            "sort key {name:?} is given twice"
                        )));
                    }
                    g[j] = Some(keys[j].coerce(*v)?);
                }
                if op != UpdateOp::Incr {
                    if let Some(k) = keys.iter().zip(&g).find(|(_, v)| v.is_none()) {
                        return Err(Error::WrongKind(format!(
                            "submission lacks sort key {:?} (only an incr may leave keys out)",
                            k.0.key
                        )));
                    }
                }
            }
            None => g[0] = Some(keys[0].coerce(Num::Float(s.score))?),
        }
        if op != UpdateOp::Incr {
            if let Some(f) = g[0] {
                self.in_bounds(f.as_f64())?;
            }
        }
        Ok(g)
    }

    /// Every check of a submission to a board with `sort` keys made
    /// before any member's state is read, in the engine's order (member,
    /// name and data, values): the submitted values by key, coerced.
    pub fn check_keyed(&self, s: &Submit) -> Result<[Option<Num>; MAX_SORT_KEYS]> {
        check_member(s.member)?;
        self.check_extra(s.name, s.data)?;
        self.given(s)
    }
}

/// Refuses `scores` on a plain board.
fn no_scores(s: &Submit) -> Result<()> {
    if s.scores.is_some() {
        return Err(Error::WrongKind(
            "this board has no sort keys: submit a score, not scores".into(),
        ));
    }
    Ok(())
}

/// How a board's first key (its score) becomes a tree key.
fn first_codec(c: &BoardConfig) -> Codec {
    match c.sort.first() {
        Some(k) => k.codec(),
        None => Codec::float(c.order == Order::Desc),
    }
}

fn tie_mode(c: &BoardConfig) -> TieMode {
    match (c.tiebreak, c.order) {
        (Tiebreak::Member, Order::Asc) => TieMode::BytesAsc,
        (Tiebreak::Member, Order::Desc) => TieMode::BytesDesc,
        (Tiebreak::First, _) => TieMode::SeqAsc,
        (Tiebreak::Last, _) => TieMode::SeqDesc,
    }
}

/// A leaderboard. `Clone` is a deep copy; a snapshot copies less
/// ([`Board::image`]).
#[derive(Clone)]
pub struct Board {
    pub(crate) config: BoardConfig,
    pub(crate) tree: CountedTree<u32>,
    /// Dense boards: one entry per distinct key, payload = multiplicity.
    distinct: Option<CountedTree<u32>>,
    /// Dense boards with several sort keys: their distinct tuples.
    tuples: Option<Box<Tuples>>,
    /// How the first key's values become tree keys.
    first: Codec,
    pub(crate) members: Members,
    next_seq: u64,
    pub(crate) read_only: bool,
    /// The search index, once a search asked for it
    /// ([`Board::enable_search`]); kept current by every write after.
    pub(crate) search: Option<Box<SearchIndex>>,
    /// What the live events layer watches of this board's writes; empty
    /// unless someone subscribed.
    journal: journal::Slot,
}

macro_rules! ties {
    ($self:ident) => {
        Ties {
            members: &$self.members,
            mode: tie_mode(&$self.config),
        }
    };
}

// Borrows only `members` and `config`, so it can be built while
// `self.search` is borrowed mutably.
macro_rules! tree_order {
    ($self:ident) => {
        TreeOrder {
            ties: ties!($self),
            first: $self.first,
        }
    };
}

impl Board {
    pub fn new(config: BoardConfig) -> Result<Board> {
        config.validate()?;
        Ok(Self::empty(config))
    }

    fn empty(config: BoardConfig) -> Board {
        let seqs = config.tiebreak != Tiebreak::Member;
        let dense = config.ranking == Ranking::Dense;
        let stride = config.sort.len().saturating_sub(1);
        Board {
            tree: CountedTree::new(),
            distinct: (dense && stride == 0).then(CountedTree::new),
            tuples: (dense && stride > 0).then(|| Box::new(Tuples::new(stride))),
            first: first_codec(&config),
            config,
            members: Members::with_keys(seqs, stride),
            next_seq: 0,
            read_only: false,
            search: None,
            journal: journal::Slot::default(),
        }
    }

    /// The same board emptied, keeping its config, its read-only flag and
    /// an (empty) search index if it had one.
    fn emptied(&self) -> Board {
        let mut b = Self::empty(self.config.clone());
        b.read_only = self.read_only;
        if let Some(ix) = &self.search {
            b.search = Some(Box::new(SearchIndex::new(
                &self.config.search_fields,
                ix.max_planes(),
            )));
        }
        b
    }

    /// The tiebreak of this board, for tree calls.
    pub(crate) fn ties(&self) -> Ties<'_> {
        ties!(self)
    }

    /// Keys and tiebreak of this board, for structures kept in its order.
    pub(crate) fn tree_order(&self) -> TreeOrder<'_> {
        tree_order!(self)
    }

    // ------------------------------------------------- search index hooks

    /// A member was added (its name, data, score and sequence already set).
    #[inline]
    fn index_insert(&mut self, id: u32) {
        if let Some(ix) = self.search.as_deref_mut() {
            ix.insert(id, &self.members, &tree_order!(self));
        }
    }

    /// A member is about to leave the member table (its score and
    /// sequence still set).
    #[inline]
    fn index_remove(&mut self, id: u32) {
        if let Some(ix) = self.search.as_deref_mut() {
            ix.remove(id, &tree_order!(self));
        }
    }

    /// A member's name and/or data were just set.
    #[inline]
    fn index_refresh(&mut self, id: u32, name: bool, data: bool) {
        if let Some(ix) = self.search.as_deref_mut() {
            if ix.watches(name, data) {
                ix.refresh(id, &self.members, &tree_order!(self));
            }
        }
    }

    /// A member's score (or sequence) is about to change: the index's
    /// ranked plane levels let go of its old place ([`Board::index_rerank`]
    /// after the change).
    #[inline]
    fn index_unrank(&mut self, id: u32) {
        if let Some(ix) = self.search.as_deref_mut() {
            ix.unrank(id, &tree_order!(self));
        }
    }

    /// A member's score (or sequence) has changed.
    #[inline]
    fn index_rerank(&mut self, id: u32) {
        if let Some(ix) = self.search.as_deref_mut() {
            ix.rerank(id, &tree_order!(self));
        }
    }

    pub fn config(&self) -> &BoardConfig {
        &self.config
    }

    /// The names of the sort keys, in order (none on a plain board): what
    /// a read's `scores` are labelled with.
    pub fn key_names(&self) -> Vec<String> {
        self.config.sort.iter().map(|k| k.key.clone()).collect()
    }

    pub fn ranking(&self) -> Ranking {
        self.config.ranking
    }

    /// Starts recording this board's writes for the live events (see
    /// [`Journal`]); a no-op when it already is.
    pub fn watch(&mut self) {
        if self.journal.0.is_none() {
            self.journal.0 = Some(Box::default());
        }
    }

    /// Stops recording (nobody watches any more).
    pub fn unwatch(&mut self) {
        self.journal.0 = None;
    }

    pub fn is_watched(&self) -> bool {
        self.journal.0.is_some()
    }

    /// The steps recorded since the last call, leaving the board watched.
    pub fn take_journal(&mut self) -> Journal {
        match self.journal.0.as_deref_mut() {
            Some(j) => std::mem::take(j),
            None => Journal::default(),
        }
    }

    /// Hands back a journal taken with [`Board::take_journal`] once it
    /// was read: the next write records into its allocation instead of a
    /// new one.
    pub fn recycle_journal(&mut self, mut used: Journal) {
        if let Some(j) = self.journal.0.as_deref_mut() {
            if j.is_empty() && j.touches.capacity() == 0 {
                used.touches.clear();
                used.all = false;
                *j = used;
            }
        }
    }

    /// A member's place in this board's order, comparable with the keys
    /// of its [`Journal`].
    pub fn order_key(&self, member: &[u8]) -> Option<OrderKey> {
        let id = self.members.find(member)?;
        Some(self.order_key_of(self.key_of_id(id), id))
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub fn set_read_only(&mut self, ro: bool) {
        self.read_only = ro;
    }

    /// Makes this board an archive of `of`: read-only, and knowing whose
    /// archive it is.
    pub fn mark_archive(&mut self, of: crate::config::ArchiveOf) {
        self.config.archive = Some(of);
        // An archive is frozen: nothing happens on it to deliver.
        self.config.webhooks.clear();
        self.read_only = true;
    }

    /// The board this one is an archive of, if it is one.
    pub fn archive_of(&self) -> Option<&crate::config::ArchiveOf> {
        self.config.archive.as_ref()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// One page of a scan (Redis's ZSCAN of a large set): up to `count`
    /// members with their scores from `cursor` (0: the start), and the
    /// cursor of the next page (0: done). Members are visited in the order
    /// of their internal ids, which do not move when scores change, so a
    /// full scan returns every member present from its start to its end,
    /// as Redis guarantees (a position in the ranking would not: a member
    /// whose score moves it across the cursor would be missed).
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<(Vec<u8>, f64)>) {
        let from = u32::try_from(cursor).unwrap_or(u32::MAX);
        let (ids, next) = self.members.live_ids_from(from, count.max(1));
        let page = ids
            .into_iter()
            .map(|id| (self.members.bytes(id).to_vec(), self.score_of(id)))
            .collect();
        (next.map_or(0, u64::from), page)
    }

    pub fn info(&self) -> BoardInfo {
        BoardInfo {
            members: self.len() as u64,
            config: self.config.clone(),
            read_only: self.read_only,
            heap_bytes: self.heap_bytes() as u64,
        }
    }

    /// Heap bytes held by this board's structures.
    pub fn heap_bytes(&self) -> usize {
        self.tree.heap_bytes()
            + self.distinct.as_ref().map_or(0, |d| d.heap_bytes())
            + self.tuples.as_ref().map_or(0, |t| t.heap_bytes())
            + self.members.heap_bytes()
            + self.search_heap_bytes()
    }

    // ------------------------------------------------------------ helpers

    /// The tree key of a plain board's score (or of a float first key).
    #[inline]
    pub(crate) fn key_of(&self, s: f64) -> u64 {
        let k = score::encode(s);
        match self.config.order {
            Order::Asc => k,
            Order::Desc => !k,
        }
    }

    /// The tree key of a live member.
    #[inline]
    pub(crate) fn key_of_id(&self, id: u32) -> u64 {
        self.first.encode(self.members.raw(id))
    }

    /// A live member's codes of the keys after the first (`stride` of them).
    #[inline]
    pub(crate) fn tail(&self, id: u32) -> [u64; MAX_SORT_KEYS - 1] {
        let mut t = [0; MAX_SORT_KEYS - 1];
        for (j, c) in t.iter_mut().enumerate().take(self.members.stride()) {
            *c = self.members.key(id, j);
        }
        t
    }

    /// Whether two live members (with tree keys `ka`, `kb`) hold equal
    /// values in every key: they then tie in `dense`/`competition` ranks.
    #[inline]
    pub(crate) fn same_values(&self, ka: u64, a: u32, kb: u64, b: u32) -> bool {
        ka == kb && (self.members.stride() == 0 || self.members.cmp_keys(a, b) == Ordering::Equal)
    }

    /// A live member's values, one per key (a plain board: its score).
    pub(crate) fn scores_of(&self, id: u32) -> Scores {
        let mut v = [Num::Float(0.0); MAX_SORT_KEYS];
        v[0] = self.first.value(self.members.raw(id));
        for (j, k) in self.config.sort.iter().enumerate().skip(1) {
            v[j] = k.codec().decode(self.members.key(id, j - 1));
        }
        Scores::new(&v[..self.config.key_count()])
    }

    /// What reads report as a member's `scores`: none on a plain board.
    #[inline(always)]
    fn entry_scores(&self, id: u32) -> Option<Scores> {
        self.config.has_sort().then(|| self.scores_of(id))
    }

    /// What reads report as a member's `score`: the first key's value.
    #[inline(always)]
    fn score_of(&self, id: u32) -> f64 {
        if self.first.int {
            self.members.raw(id) as i64 as f64
        } else {
            self.members.score(id)
        }
    }

    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly(String::new()));
        }
        Ok(())
    }

    fn check_extra(&self, name: Option<&str>, data: Option<&str>) -> Result<()> {
        self.config.check_extra(name, data)
    }

    fn apply_extra(&mut self, id: u32, name: Option<&str>, data: Option<&str>) {
        if name.is_none() && data.is_none() {
            return;
        }
        let opt = |s: &str| (!s.is_empty()).then(|| Arc::<str>::from(s));
        self.members.update_extra(id, |e| {
            if let Some(n) = name {
                e.name = opt(n);
            }
            if let Some(d) = data {
                e.data = opt(d);
            }
        });
    }

    fn bump_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn tree_insert(&mut self, key: u64, id: u32) -> usize {
        let pos = self.tree.insert(key, id, &ties!(self));
        let mut edge = false;
        if self.tuples.is_some() {
            let tail = self.tail(id);
            if let Some(t) = self.tuples.as_deref_mut() {
                edge = t.add(key, &tail);
            }
        }
        if let Some(d) = self.distinct.as_mut() {
            match d.get_key_mut(key) {
                Some(n) => *n += 1,
                None => {
                    d.insert(key, 1, &NoTie);
                    edge = true;
                }
            }
        }
        self.record(key, id, pos, true, edge);
        pos
    }

    /// Records a member entering or leaving the tree, if the board is
    /// watched.
    #[inline]
    fn record(&mut self, key: u64, id: u32, pos: usize, entered: bool, edge: bool) {
        if self.journal.recording().is_none() {
            return;
        }
        let touch = journal::Touch {
            member: self.members.bytes(id).into(),
            key: self.order_key_of(key, id),
            pos,
            entered,
            edge,
        };
        if let Some(j) = self.journal.recording() {
            j.touches.push(touch);
        }
    }

    /// The place of member `id` (tree key `key`) in the board's order.
    fn order_key_of(&self, key: u64, id: u32) -> OrderKey {
        let mut codes = journal::Codes::new();
        codes.push(key);
        codes.extend((0..self.members.stride()).map(|j| self.members.key(id, j)));
        let m = &self.members;
        let tie = match tie_mode(&self.config) {
            TieMode::BytesAsc => journal::Tie::Bytes(m.bytes(id).into()),
            TieMode::BytesDesc => journal::Tie::BytesRev(std::cmp::Reverse(m.bytes(id).into())),
            TieMode::SeqAsc => journal::Tie::Seq(m.seq(id)),
            TieMode::SeqDesc => journal::Tie::SeqRev(std::cmp::Reverse(m.seq(id))),
        };
        OrderKey { codes, tie }
    }

    fn tree_remove(&mut self, key: u64, id: u32) -> Option<usize> {
        let pos = self.tree.remove(key, id, &ties!(self));
        if let Some(p) = pos {
            self.distinct_remove(key, id, p);
        }
        pos
    }

    /// A member (still in the member table, with its values) has left the
    /// tree from position `pos`: a dense board forgets its values if nobody
    /// else holds them.
    fn distinct_remove(&mut self, key: u64, id: u32, pos: usize) {
        let mut edge = false;
        if self.tuples.is_some() {
            let tail = self.tail(id);
            if let Some(t) = self.tuples.as_deref_mut() {
                edge = t.remove(key, &tail);
            }
        }
        if let Some(d) = self.distinct.as_mut() {
            if let Some(n) = d.get_key_mut(key) {
                *n -= 1;
                if *n == 0 {
                    d.remove(key, 0, &NoTie);
                    edge = true;
                }
            }
        }
        self.record(key, id, pos, false, edge);
    }

    /// Rank (1-based, per the ranking mode) of member `id`, at `pos` with
    /// tree key `key`.
    #[inline]
    pub(crate) fn rank_at(&self, pos: usize, key: u64, id: u32) -> u64 {
        (match self.config.ranking {
            Ranking::Unique => pos,
            Ranking::Competition => self.better_count(key, id),
            Ranking::Dense => match &self.tuples {
                Some(t) => t.better(key, &self.tail(id)),
                None => self.distinct.as_ref().map_or(0, |d| d.key_rank(key, false)),
            },
        }) as u64
            + 1
    }

    /// How many members rank strictly better than the values of member
    /// `id` (with tree key `key`): equal values do not count.
    fn better_count(&self, key: u64, id: u32) -> usize {
        if self.members.stride() == 0 {
            return self.tree.key_rank(key, false);
        }
        self.tree.partition_point(|k, v| {
            k < key || (k == key && self.members.cmp_keys(v, id) == Ordering::Less)
        })
    }

    pub(crate) fn make_entry(&self, id: u32, rank: u64) -> Entry {
        let extra = self.members.extra(id);
        Entry {
            member: self.members.bytes(id).to_vec(),
            score: self.score_of(id),
            scores: self.entry_scores(id),
            rank,
            name: extra.and_then(|e| e.name.clone()),
            data: extra.and_then(|e| e.data.clone()),
        }
    }

    /// Entries at tree positions `from..` (forward) or `..=from` (backward),
    /// at most `limit`, each with its rank.
    fn collect(&self, from: usize, limit: usize, backward: bool) -> Vec<Entry> {
        let mut out = Vec::with_capacity(limit.min(1024));
        self.walk_positions(from, limit, backward, |id, rank| {
            out.push(self.make_entry(id, rank))
        });
        out
    }

    /// [`Board::entries_from`] without copying: `f` sees each entry of
    /// positions `pos..pos + limit` (best first), or `..=pos` going towards
    /// the best when `backward`, in place. Returns how many it saw.
    pub fn visit(
        &self,
        pos: usize,
        limit: usize,
        backward: bool,
        mut f: impl FnMut(EntryRef<'_>),
    ) -> usize {
        let mut n = 0;
        self.walk_positions(pos, limit, backward, |id, rank| {
            f(self.entry_ref(id, rank));
            n += 1;
        });
        n
    }

    /// Member `id` in place, with `rank`: [`Board::make_entry`] borrowed.
    /// Inlined into the walks of every entry of a page or an export.
    #[inline(always)]
    pub(crate) fn entry_ref(&self, id: u32, rank: u64) -> EntryRef<'_> {
        let extra = self.members.extra(id);
        EntryRef {
            member: self.members.bytes(id),
            score: self.score_of(id),
            scores: self.entry_scores(id),
            keys: &self.config.sort,
            rank,
            name: extra.and_then(|e| e.name.as_deref()),
            data: extra.and_then(|e| e.data.as_deref()),
        }
    }

    /// The member ids at positions `from..` / `..=from` with their ranks.
    fn walk_positions(
        &self,
        from: usize,
        limit: usize,
        backward: bool,
        mut f: impl FnMut(u32, u64),
    ) {
        if limit == 0 || from >= self.len() {
            return;
        }
        let mut prev: Option<(u64, u32, u64)> = None; // (key, id, rank)
        let mut pos = from;
        // Only the iterator this read walks: each one costs a descent.
        let mut fwd = (!backward).then(|| self.tree.iter_from(from));
        let mut rev = backward.then(|| self.tree.iter_rev_from(from));
        let mut left = limit;
        // A window of entries at a time: their records and ids are scattered
        // in memory (a record's id bytes are found through the record), so
        // the walk runs three windows apart: the records of the window two
        // ahead are requested, then the id bytes of the window one ahead
        // (whose records have arrived meanwhile), then this window is read,
        // every access of it already in cache. Each miss then has a whole
        // window's work to hide behind, and the misses of two windows
        // overlap.
        let mut fill = |w: &mut Vec<(u64, u32)>| {
            w.clear();
            let take = left.min(WALK_WINDOW);
            left -= match (rev.as_mut(), fwd.as_mut()) {
                (Some(rev), _) => rev.take_into(w, take),
                (_, Some(fwd)) => fwd.take_into(w, take),
                _ => 0,
            };
            for &(_, id) in w.iter() {
                self.members.prefetch_rec(id);
                // Every entry read reports all its keys.
                self.members.prefetch_keys(id);
            }
        };
        let mut window: Vec<(u64, u32)> = Vec::with_capacity(WALK_WINDOW);
        let mut next: Vec<(u64, u32)> = Vec::with_capacity(WALK_WINDOW);
        let mut ahead: Vec<(u64, u32)> = Vec::with_capacity(WALK_WINDOW);
        fill(&mut window);
        for &(_, id) in &window {
            self.members.prefetch_bytes(id);
        }
        fill(&mut next);
        while !window.is_empty() {
            fill(&mut ahead);
            for &(_, id) in &next {
                self.members.prefetch_bytes(id);
            }
            for &(key, id) in &window {
                let rank = match (self.config.ranking, prev) {
                    (Ranking::Unique, _) => pos as u64 + 1,
                    (_, Some((k, p, r))) if self.same_values(k, p, key, id) => r,
                    (Ranking::Dense, Some((_, _, r))) => {
                        if backward {
                            r - 1
                        } else {
                            r + 1
                        }
                    }
                    (Ranking::Competition, Some(_)) if !backward => pos as u64 + 1,
                    _ => self.rank_at(pos, key, id),
                };
                prev = Some((key, id, rank));
                f(id, rank);
                pos = if backward {
                    pos.wrapping_sub(1)
                } else {
                    pos + 1
                };
            }
            // window <- next <- ahead; the emptied window is refilled next.
            std::mem::swap(&mut window, &mut next);
            std::mem::swap(&mut next, &mut ahead);
        }
    }

    /// Looks up a group of members with their memory accesses overlapped:
    /// index slots, then records, then id bytes are requested for the whole
    /// group before any is read.
    fn find_batch<M: AsRef<[u8]>>(&self, group: &[M], ids: &mut Vec<Option<u32>>) {
        let mut hashes = Vec::with_capacity(group.len());
        self.find_batch_hashed(group, ids, &mut hashes);
    }

    /// [`Board::find_batch`], leaving each member's hash in `hashes` for a
    /// caller that goes on to look the member up again or intern it.
    fn find_batch_hashed<M: AsRef<[u8]>>(
        &self,
        group: &[M],
        ids: &mut Vec<Option<u32>>,
        hashes: &mut Vec<u64>,
    ) {
        let m = &self.members;
        hashes.clear();
        hashes.extend(group.iter().map(|x| m.hash_of(x.as_ref())));
        for &h in hashes.iter() {
            m.prefetch_slot(h);
        }
        let cands: Vec<Option<u32>> = hashes.iter().map(|&h| m.candidate(h)).collect();
        for &c in cands.iter().flatten() {
            m.prefetch_rec(c);
        }
        for &c in cands.iter().flatten() {
            m.prefetch_bytes(c);
        }
        ids.extend(
            group
                .iter()
                .zip(hashes.iter())
                .map(|(x, &h)| m.find_hashed(h, x.as_ref())),
        );
    }

    /// `rank` of many members at once (a friends list, a pipeline of
    /// ZREVRANKs): the same answers as calling [`Board::rank`] for each, with
    /// the cache misses of all the lookups overlapped.
    pub fn rank_many<M: AsRef<[u8]>>(&self, members: &[M]) -> Vec<Option<u64>> {
        let mut out = Vec::with_capacity(members.len());
        let mut ids = Vec::with_capacity(32);
        let mut queries = Vec::with_capacity(32);
        let mut positions = Vec::with_capacity(32);
        for group in members.chunks(32) {
            ids.clear();
            self.find_batch(group, &mut ids);
            queries.clear();
            queries.extend(ids.iter().flatten().map(|&id| (self.key_of_id(id), id)));
            positions.clear();
            self.tree
                .positions_batch(&queries, &ties!(self), &mut positions);
            let mut found = queries.iter().zip(&positions);
            for id in &ids {
                out.push(match id {
                    Some(_) => {
                        let (&(key, id), pos) = found.next().expect("one query per found member");
                        pos.map(|p| self.rank_at(p, key, id))
                    }
                    None => None,
                });
            }
        }
        out
    }

    /// `score` of many members at once, overlapping their cache misses.
    pub fn score_many<M: AsRef<[u8]>>(&self, members: &[M]) -> Vec<Option<f64>> {
        let mut out = Vec::with_capacity(members.len());
        let mut ids = Vec::with_capacity(32);
        for group in members.chunks(32) {
            ids.clear();
            self.find_batch(group, &mut ids);
            out.extend(ids.iter().map(|id| id.map(|id| self.score_of(id))));
        }
        out
    }

    /// Tree positions `[lo, hi)` of the members whose score is in `r`.
    fn score_span<T: RangeValue>(&self, r: &ScoreRange<T>) -> (usize, usize) {
        if self.first.int {
            return self.int_span(r);
        }
        // In tree order, the best end of the range comes first.
        let r = r.floats();
        let (first, last) = match self.config.order {
            Order::Asc => (r.min, r.max),
            Order::Desc => (r.max, r.min),
        };
        let lo = match first {
            Bound::Unbounded => 0,
            Bound::Included(s) => self.tree.key_rank(self.key_of(s), false),
            Bound::Excluded(s) => self.tree.key_rank(self.key_of(s), true),
        };
        let hi = match last {
            Bound::Unbounded => self.len(),
            Bound::Included(s) => self.tree.key_rank(self.key_of(s), true),
            Bound::Excluded(s) => self.tree.key_rank(self.key_of(s), false),
        };
        (lo, hi.max(lo))
    }

    /// [`Board::score_span`] of an integer first key: the bounds become
    /// the least and the greatest integer they admit.
    fn int_span<T: RangeValue>(&self, r: &ScoreRange<T>) -> (usize, usize) {
        // In integers: past 2^53 the double next to a bound may round back
        // onto it. `as` saturates, infinities included, and every i64 lies
        // inside i128's ends.
        // An integer bound is exact; a double one admits the integers it
        // covers.
        let min = match r.min.map(RangeValue::value) {
            Bound::Unbounded => i128::MIN,
            Bound::Included(Num::Int(i)) => i.into(),
            Bound::Excluded(Num::Int(i)) => i128::from(i) + 1,
            Bound::Included(Num::Float(x)) => x.ceil() as i128,
            Bound::Excluded(Num::Float(x)) => (x.floor() as i128).saturating_add(1),
        };
        let max = match r.max.map(RangeValue::value) {
            Bound::Unbounded => i128::MAX,
            Bound::Included(Num::Int(i)) => i.into(),
            Bound::Excluded(Num::Int(i)) => i128::from(i) - 1,
            Bound::Included(Num::Float(x)) => x.floor() as i128,
            Bound::Excluded(Num::Float(x)) => (x.ceil() as i128).saturating_sub(1),
        };
        let min = min.max(i64::MIN.into());
        let max = max.min(i64::MAX.into());
        if min > max {
            return (0, 0);
        }
        let (lo, hi) = (
            self.first.encode(min as i64 as u64),
            self.first.encode(max as i64 as u64),
        );
        let (best, worst) = if self.first.desc { (hi, lo) } else { (lo, hi) };
        let a = self.tree.key_rank(best, false);
        (a, self.tree.key_rank(worst, true).max(a))
    }

    fn locate(&self, member: &[u8]) -> Option<(usize, u64, u32)> {
        let id = self.members.find(member)?;
        let key = self.key_of_id(id);
        let pos = self.tree.position(key, id, &ties!(self))?;
        Some((pos, key, id))
    }

    fn evict_overflow(&mut self) -> u64 {
        let Some(max) = self.config.max_members else {
            return 0;
        };
        let mut evicted = 0;
        while self.tree.len() as u64 > max {
            let last = self.tree.len() - 1;
            let Some((key, id)) = self.tree.remove_at(last) else {
                break;
            };
            self.distinct_remove(key, id, last);
            self.index_remove(id);
            self.members.remove(id);
            evicted += 1;
        }
        evicted
    }

    // ------------------------------------------------------ invariants

    /// Checks that the tree, the distinct-score tree and the member table
    /// agree; for tests.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.tree.check_invariants(&ties!(self))?;
        if self.members.len() != self.tree.len() {
            return Err(format!(
                "{} members but {} tree entries",
                self.members.len(),
                self.tree.len()
            ));
        }
        let mut distinct = 0usize;
        let mut prev = None;
        for (key, id) in self.tree.iter() {
            if self.key_of_id(id) != key {
                return Err("tree key disagrees with the member's score".into());
            }
            if self.members.find(self.members.bytes(id)) != Some(id) {
                return Err("member index disagrees with the tree".into());
            }
            if !prev.is_some_and(|(k, p)| self.same_values(k, p, key, id)) {
                distinct += 1;
            }
            prev = Some((key, id));
        }
        if let Some(t) = &self.tuples {
            t.check_invariants()?;
            if t.len() != distinct {
                return Err(format!(
                    "{} distinct tuples but the dense index holds {}",
                    distinct,
                    t.len()
                ));
            }
            if t.members() != self.len() as u64 {
                return Err("dense tuple multiplicities do not add up".into());
            }
        }
        if let Some(d) = &self.distinct {
            d.check_invariants(&NoTie)?;
            if d.len() != distinct {
                return Err(format!(
                    "{} distinct scores but dense index holds {}",
                    distinct,
                    d.len()
                ));
            }
            let total: u64 = d.iter().map(|(_, n)| n as u64).sum();
            if total != self.len() as u64 {
                return Err("dense multiplicities do not add up".into());
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("config", &self.config)
            .field("members", &self.len())
            .field("read_only", &self.read_only)
            .finish()
    }
}

mod combine;
mod journal;
mod read;
pub(crate) mod snapshot;
mod tuples;
mod types;
mod write;
pub use journal::{Journal, OrderKey, Tie, Touch};
pub use snapshot::BoardImage;
use tuples::Tuples;
pub use types::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// ZRANK's and ZREVRANK's index is by score, ascending or descending,
    /// whichever order the board ranks in.
    #[test]
    fn score_order_index_ignores_the_board_order() {
        for order in [Order::Asc, Order::Desc] {
            let mut b = Board::new(BoardConfig {
                order,
                ..BoardConfig::default()
            })
            .unwrap();
            for (m, s) in [("low", 1.0), ("mid", 2.0), ("high", 3.0)] {
                b.submit(&Submit::new(m.as_bytes(), s)).unwrap();
            }
            for (i, m) in ["low", "mid", "high"].iter().enumerate() {
                assert_eq!(
                    b.score_order_index(m.as_bytes(), false),
                    Some(i),
                    "{order:?}"
                );
                assert_eq!(
                    b.score_order_index(m.as_bytes(), true),
                    Some(2 - i),
                    "{order:?}"
                );
            }
            assert_eq!(b.score_order_index(b"none", false), None);
        }
    }

    /// Scores moving members across the cursor, members removed and
    /// added between pages: a full scan still returns every member present
    /// from its start to its end.
    #[test]
    fn a_scan_returns_every_member_present_throughout() {
        let mut b = Board::new(BoardConfig::default()).unwrap();
        for i in 0..600u32 {
            b.submit(&Submit::new(format!("m{i}").as_bytes(), f64::from(i)))
                .unwrap();
        }
        let mut gone = std::collections::HashSet::new();
        let mut seen = std::collections::HashSet::new();
        let (mut cursor, mut round) = (0, 0u32);
        loop {
            let (next, page) = b.scan(cursor, 7);
            assert!(page.len() <= 7);
            seen.extend(page.into_iter().map(|(m, _)| m));
            // The best members drop to the bottom, the worst jump to the top.
            for i in 0..10u32 {
                let m = format!("m{}", (round * 37 + i * 61) % 600);
                let to = if i % 2 == 0 {
                    -1000.0 - f64::from(round)
                } else {
                    1e6 + f64::from(round)
                };
                b.submit(&Submit::new(m.as_bytes(), to)).unwrap();
            }
            let victim = format!("m{}", (round * 13) % 600);
            if b.remove(&[victim.as_bytes()]).unwrap() > 0 {
                gone.insert(victim.into_bytes());
            }
            b.submit(&Submit::new(format!("new{round}").as_bytes(), 5.0))
                .unwrap();
            round += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..600u32 {
            let m = format!("m{i}").into_bytes();
            assert!(gone.contains(&m) || seen.contains(&m), "m{i} was skipped");
        }
    }

    /// Redis keeps `-0` as written (ZSCORE and ZRANGE both say `-0`), so a
    /// stored -0.0 must read back the same from every operation and survive
    /// a snapshot, while still ranking equal to 0.0.
    #[test]
    fn negative_zero_reads_back_alike_everywhere() {
        let mut b = Board::new(BoardConfig::default()).unwrap();
        b.submit(&Submit::new(b"z", -0.0)).unwrap();
        b.submit(&Submit::new(b"p", 0.0)).unwrap();
        let neg = |x: f64| x == 0.0 && x.is_sign_negative();
        assert!(neg(b.score(b"z").unwrap()));
        let z = b.entry(b"z", 25).unwrap().entry;
        assert!(neg(z.score));
        assert!(b.top(1, 25).unwrap().entries.iter().any(|e| neg(e.score)));
        let mut bytes = Vec::new();
        b.write_snapshot(&mut bytes).unwrap();
        let back = Board::read_snapshot(&mut bytes.as_slice()).unwrap();
        assert!(neg(back.score(b"z").unwrap()));
        // Ties with 0.0 broken by member bytes (desc board: "z" first).
        assert_eq!(back.rank(b"z"), Some(1));
        assert_eq!(back.rank(b"p"), Some(2));
    }

    /// Redis checks NX before the arithmetic: ZADD NX INCR on an existing
    /// member replies nil even when the sum would be NaN.
    #[test]
    fn nx_on_an_existing_member_is_checked_before_a_nan_increment() {
        let mut b = Board::new(BoardConfig::default()).unwrap();
        b.submit(&Submit::new(b"m", f64::INFINITY)).unwrap();
        let r = b
            .submit(&Submit {
                op: Some(UpdateOp::Incr),
                presence: Presence::OnlyNew,
                ..Submit::new(b"m", f64::NEG_INFINITY)
            })
            .unwrap();
        assert!(!r.applied && !r.changed);
        assert_eq!(r.score, Some(f64::INFINITY));
        let err = b
            .submit(&Submit {
                op: Some(UpdateOp::Incr),
                ..Submit::new(b"m", f64::NEG_INFINITY)
            })
            .unwrap_err();
        assert_eq!(err, Error::NanResult);
    }

    #[test]
    fn a_small_board_holds_kilobytes_not_megabytes() {
        // Servers keep many small boards (per level, per friend group):
        // their first chunks grow from small instead of being allocated whole.
        let mut b = Board::new(BoardConfig::default()).unwrap();
        for m in ["alice", "bob", "carol"] {
            b.submit(&Submit::new(m.as_bytes(), 1.0)).unwrap();
        }
        assert!(b.heap_bytes() < 8 << 10, "{} bytes", b.heap_bytes());
        for i in 0..20_000 {
            b.submit(&Submit::new(format!("member-{i}").as_bytes(), i as f64))
                .unwrap();
        }
        b.check_invariants().unwrap();
        assert_eq!(b.rank(b"member-19999"), Some(1));
        assert_eq!(b.score(b"alice"), Some(1.0));
    }
}

#[cfg(test)]
mod sort_tests {
    use super::*;
    use crate::sort::{KeyOp, KeyType, SortKey};

    fn board(update: UpdateOp, ranking: Ranking, keys: Vec<SortKey>) -> Board {
        Board::new(BoardConfig {
            order: keys[0].order,
            update,
            ranking,
            sort: keys,
            ..Default::default()
        })
        .unwrap()
    }

    /// Submits `vals` to the board's keys in order (`None`: left out).
    fn put(b: &mut Board, m: &str, vals: &[Option<Num>]) -> Result<SubmitResult> {
        let named: Vec<(String, Num)> = b
            .config
            .sort
            .iter()
            .zip(vals)
            .filter_map(|(k, v)| v.map(|v| (k.key.clone(), v)))
            .collect();
        let r = b.submit(&Submit {
            scores: Some(&named),
            ..Submit::new(m.as_bytes(), 0.0)
        });
        b.check_invariants().unwrap();
        r
    }

    fn f(x: f64) -> Option<Num> {
        Some(Num::Float(x))
    }
    fn i(x: i64) -> Option<Num> {
        Some(Num::Int(x))
    }

    /// Each step of a watched board's journal carries its tree position:
    /// replayed on a sorted list of keys, a leave is found at its position
    /// and an enter lands at its own, through updates, removals and
    /// evictions of the last place.
    #[test]
    fn journal_positions_replay_on_a_sorted_list() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for ranking in [Ranking::Unique, Ranking::Dense] {
            let mut b = Board::new(BoardConfig {
                ranking,
                max_members: Some(150),
                ..Default::default()
            })
            .unwrap();
            b.watch();
            let mut list: Vec<OrderKey> = Vec::new();
            for n in 0..2000 {
                let m = format!("m{}", rng.random_range(0..200));
                if n % 7 == 0 {
                    b.remove(&[m.as_bytes()]).unwrap();
                } else {
                    let score = rng.random_range(0..40) as f64;
                    b.submit(&Submit::new(m.as_bytes(), score)).unwrap();
                }
                for t in b.take_journal().touches {
                    if t.entered {
                        let at = list.partition_point(|k| *k < t.key);
                        assert_eq!(at, t.pos, "enter of {:?}", t.member);
                        list.insert(at, t.key);
                    } else {
                        assert_eq!(list.get(t.pos), Some(&t.key), "leave of {:?}", t.member);
                        list.remove(t.pos);
                    }
                }
                assert_eq!(list.len(), b.len());
            }
        }
    }

    /// A watched board's order keys follow its tree exactly, whatever the
    /// keys, directions, tiebreak and ranking, and two members tie in
    /// competition and dense ranks exactly when their codes are equal.
    #[test]
    fn order_keys_follow_the_tree() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let shapes = [
            vec![SortKey::new("a", Order::Desc, KeyType::Float, KeyOp::Set)],
            vec![
                SortKey::new("a", Order::Desc, KeyType::Int, KeyOp::Set),
                SortKey::new("b", Order::Asc, KeyType::Float, KeyOp::Set),
            ],
            vec![
                SortKey::new("a", Order::Asc, KeyType::Float, KeyOp::Set),
                SortKey::new("b", Order::Desc, KeyType::Int, KeyOp::Set),
                SortKey::new("c", Order::Asc, KeyType::Int, KeyOp::Set),
            ],
        ];
        for keys in shapes {
            for ranking in [Ranking::Unique, Ranking::Competition, Ranking::Dense] {
                for tiebreak in [Tiebreak::Member, Tiebreak::First, Tiebreak::Last] {
                    let mut b = Board::new(BoardConfig {
                        order: keys[0].order,
                        ranking,
                        tiebreak,
                        sort: keys.clone(),
                        ..Default::default()
                    })
                    .unwrap();
                    b.watch();
                    for n in 0..300 {
                        let vals: Vec<Option<Num>> = keys
                            .iter()
                            .map(|k| match k.ty {
                                KeyType::Int => i(rng.random_range(-2..3)),
                                KeyType::Float => f(rng.random_range(-2..3) as f64 / 2.0),
                            })
                            .collect();
                        put(&mut b, &format!("m{}", n % 120), &vals).unwrap();
                    }
                    let j = b.take_journal();
                    assert!(!j.all && !j.touches.is_empty());
                    let order: Vec<(OrderKey, u64)> = b
                        .range_by_rank(1, b.len() as u64, false)
                        .iter()
                        .map(|e| (b.order_key(&e.member).unwrap(), e.rank))
                        .collect();
                    for w in order.windows(2) {
                        assert!(w[0].0 < w[1].0, "{:?} then {:?}", w[0], w[1]);
                        if ranking != Ranking::Unique {
                            assert_eq!(w[0].0.codes == w[1].0.codes, w[0].1 == w[1].1);
                        }
                    }
                }
            }
        }
    }

    /// Search ranks tie members on their whole tuple, as every other read
    /// does: equal first keys with different later keys are not ties, by
    /// every plan.
    #[test]
    fn search_ranks_tie_on_the_whole_tuple() {
        for ranking in [Ranking::Competition, Ranking::Dense] {
            let keys = vec![
                SortKey::new("pts", Order::Desc, KeyType::Int, KeyOp::Incr),
                SortKey::new("time", Order::Asc, KeyType::Int, KeyOp::Set),
            ];
            let mut b = board(UpdateOp::Set, ranking, keys);
            for (m, p, t) in [("ma", 9, 5), ("mb", 9, 7), ("mc", 9, 5), ("md", 3, 1)] {
                put(&mut b, m, &[i(p), i(t)]).unwrap();
            }
            b.enable_search().unwrap();
            let want: Vec<(String, u64)> = b
                .top(1, 10)
                .unwrap()
                .entries
                .into_iter()
                .map(|e| (String::from_utf8_lossy(&e.member).into_owned(), e.rank))
                .collect();
            for plan in [
                crate::Plan::Scan,
                crate::Plan::Intersect,
                crate::Plan::Level,
            ] {
                let opts = crate::SearchOptions {
                    plan,
                    ..Default::default()
                };
                let got: Vec<(String, u64)> = b
                    .search("m", &opts)
                    .unwrap()
                    .entries
                    .into_iter()
                    .map(|e| (String::from_utf8_lossy(&e.member).into_owned(), e.rank))
                    .collect();
                assert_eq!(got, want, "{ranking:?} {plan:?}");
            }
        }
    }

    /// A batch on a sorted board answers and ends as its items one at a
    /// time would, whatever its prefetch hints guessed: members repeated
    /// within a group, NX and XX, bare scores, increments under each key's
    /// operator, and a failing item among good ones.
    #[test]
    fn a_sorted_batch_matches_its_items_one_at_a_time() {
        let keys = vec![
            SortKey::new("pts", Order::Desc, KeyType::Float, KeyOp::Incr),
            SortKey::new("time", Order::Asc, KeyType::Int, KeyOp::Min),
        ];
        let named = |p: Option<f64>, t: Option<i64>| -> Vec<(String, Num)> {
            let mut v = Vec::new();
            if let Some(p) = p {
                v.push(("pts".to_string(), Num::Float(p)));
            }
            if let Some(t) = t {
                v.push(("time".to_string(), Num::Int(t)));
            }
            v
        };
        let members: Vec<String> = (0..40).map(|k| format!("m{}", k % 23)).collect();
        let vals: Vec<Vec<(String, Num)>> = (0..40)
            .map(|k| {
                let p = (k % 5 != 4).then_some((k % 7) as f64);
                let t = (k % 3 != 0).then_some(1000 - 10 * (k as i64 % 11));
                named(p, t)
            })
            .collect();
        let batch: Vec<Submit> = (0..40)
            .map(|k| Submit {
                scores: (k % 9 != 8).then_some(&vals[k][..]),
                presence: match k % 13 {
                    5 => Presence::OnlyNew,
                    6 => Presence::OnlyExisting,
                    _ => Presence::Any,
                },
                op: (k == 17).then_some(UpdateOp::Set),
                ..Submit::new(members[k].as_bytes(), (k % 4) as f64)
            })
            .collect();
        // Increments past the bound fail alone.
        let bounded = || {
            Board::new(BoardConfig {
                update: UpdateOp::Incr,
                max_score: Some(5.0),
                sort: keys.clone(),
                ..Default::default()
            })
            .unwrap()
        };
        let (mut one, mut many) = (bounded(), bounded());
        let singly: Vec<Result<SubmitResult>> = batch.iter().map(|s| one.submit(s)).collect();
        assert!(
            singly.iter().any(|r| r.is_err()),
            "an increment past the bound"
        );
        assert!(singly.iter().filter(|r| r.is_ok()).count() > 20);
        assert_eq!(many.submit_many(&batch).unwrap(), singly);
        many.check_invariants().unwrap();
        for m in &members {
            assert_eq!(many.scores(m.as_bytes()), one.scores(m.as_bytes()));
            assert_eq!(many.rank(m.as_bytes()), one.rank(m.as_bytes()));
        }
    }

    #[test]
    fn a_race_ranks_laps_then_time_and_keeps_the_best() {
        let mut b = board(
            UpdateOp::Best,
            Ranking::Unique,
            vec![
                SortKey::new("laps", Order::Desc, KeyType::Int, KeyOp::Set),
                SortKey::new("time_ms", Order::Asc, KeyType::Int, KeyOp::Set),
            ],
        );
        put(&mut b, "ann", &[i(10), i(61_000)]).unwrap();
        put(&mut b, "bob", &[i(10), i(62_000)]).unwrap();
        put(&mut b, "cat", &[i(9), i(50_000)]).unwrap();
        assert_eq!(b.rank(b"ann"), Some(1));
        assert_eq!(b.rank(b"bob"), Some(2));
        assert_eq!(b.rank(b"cat"), Some(3));
        // A plain board refuses `scores`.
        let mut plain = Board::new(BoardConfig::default()).unwrap();
        let one = [("score".to_string(), Num::Float(1.0))];
        assert!(plain
            .submit(&Submit {
                scores: Some(&one),
                ..Submit::new(b"x", 0.0)
            })
            .is_err());
        // A slower run of 10 laps does not replace a faster one.
        let r = put(&mut b, "ann", &[i(10), i(62_000)]).unwrap();
        assert!(!r.applied && !r.changed);
        assert_eq!(
            b.scores(b"ann").unwrap().as_slice(),
            &[Num::Int(10), Num::Int(61_000)]
        );
        // Under `best` every key must be given, each once, and known.
        assert!(put(&mut b, "ann", &[i(11), None]).is_err());
        let twice = [
            ("laps".to_string(), Num::Int(1)),
            ("laps".to_string(), Num::Int(2)),
        ];
        let unknown = [
            ("lap".to_string(), Num::Int(1)),
            ("time_ms".to_string(), Num::Int(2)),
        ];
        for bad in [&twice[..], &unknown[..]] {
            let e = b
                .submit(&Submit {
                    scores: Some(bad),
                    ..Submit::new(b"ann", 0.0)
                })
                .unwrap_err();
            assert!(e.to_string().contains("sort key"), "{e}");
        }
        // A bare score (a Redis write) sets the first key and keeps the rest.
        b.submit(&Submit {
            op: Some(UpdateOp::Set),
            ..Submit::new(b"cat", 11.0)
        })
        .unwrap();
        assert_eq!(
            b.scores(b"cat").unwrap().as_slice(),
            &[Num::Int(11), Num::Int(50_000)]
        );
        assert!(b.submit(&Submit::new(b"cat", 11.5)).is_err());
        let top = b.top(1, 10).unwrap();
        assert_eq!(top.entries[0].member, b"cat");
        assert_eq!(top.entries[1].member, b"ann");
        assert_eq!(top.entries[1].scores.unwrap()[1], Num::Int(61_000));
        assert_eq!(top.entries[1].score, 10.0);
    }

    #[test]
    fn kills_with_first_to_reach() {
        let mut b = board(
            UpdateOp::Incr,
            Ranking::Competition,
            vec![
                SortKey::new("kills", Order::Desc, KeyType::Int, KeyOp::Incr),
                SortKey::new("reached_at", Order::Asc, KeyType::Int, KeyOp::Set),
            ],
        );
        put(&mut b, "ann", &[i(3), i(100)]).unwrap();
        put(&mut b, "bob", &[i(2), i(90)]).unwrap();
        put(&mut b, "bob", &[i(1), i(120)]).unwrap();
        // Both at 3 kills; ann reached it first.
        assert_eq!(
            b.scores(b"bob").unwrap().as_slice(),
            &[Num::Int(3), Num::Int(120)]
        );
        assert_eq!(b.rank(b"ann"), Some(1));
        assert_eq!(b.rank(b"bob"), Some(2));
        // A key left out of an incr is unchanged.
        put(&mut b, "bob", &[i(0), None]).unwrap();
        assert_eq!(b.scores(b"bob").unwrap()[1], Num::Int(120));
        // Equal tuples tie in competition ranking.
        put(&mut b, "cat", &[i(3), i(120)]).unwrap();
        assert_eq!(b.rank(b"bob"), Some(2));
        assert_eq!(b.rank(b"cat"), Some(2));
        let ranks: Vec<u64> = b
            .top(1, 10)
            .unwrap()
            .entries
            .iter()
            .map(|e| e.rank)
            .collect();
        assert_eq!(ranks, [1, 2, 2]);
        assert!((b.percentile(b"ann").unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn integers_beyond_two_to_the_53_rank_exactly() {
        let mut b = board(
            UpdateOp::Set,
            Ranking::Dense,
            vec![SortKey::new("xp", Order::Desc, KeyType::Int, KeyOp::Incr)],
        );
        let big = 1i64 << 60;
        put(&mut b, "a", &[i(big)]).unwrap();
        put(&mut b, "b", &[i(big + 1)]).unwrap();
        put(&mut b, "c", &[i(big)]).unwrap();
        assert_eq!(b.rank(b"b"), Some(1));
        assert_eq!(b.rank(b"a"), Some(2));
        assert_eq!(b.rank(b"c"), Some(2));
        assert_eq!(b.scores(b"b").unwrap().first(), Num::Int(big + 1));
        // Ranges on an integer first key take the integers the bounds admit.
        assert_eq!(
            b.count_range(&ScoreRange::inclusive(big as f64, big as f64))
                .unwrap(),
            2
        );
        assert_eq!(
            b.count_range(&ScoreRange::inclusive(big as f64, f64::INFINITY))
                .unwrap(),
            3
        );
        assert_eq!(b.count_range(&ScoreRange::inclusive(0.5, 1.5)).unwrap(), 0);
        // Integer bounds are exact where a double's cannot be.
        let exact =
            |min: Bound<Num>, max: Bound<Num>| b.count_range(&ScoreRange { min, max }).unwrap();
        assert_eq!(
            exact(Bound::Included(Num::Int(big + 1)), Bound::Unbounded),
            1
        );
        assert_eq!(exact(Bound::Excluded(Num::Int(big)), Bound::Unbounded), 1);
        assert_eq!(
            exact(Bound::Unbounded, Bound::Excluded(Num::Int(big + 1))),
            2
        );
        assert_eq!(
            exact(
                Bound::Included(Num::Int(i64::MAX)),
                Bound::Excluded(Num::Int(i64::MAX))
            ),
            0
        );
        assert_eq!(
            exact(Bound::Excluded(Num::Int(i64::MAX)), Bound::Unbounded),
            0
        );
        let mut bytes = Vec::new();
        b.write_snapshot(&mut bytes).unwrap();
        let back = Board::read_snapshot(&mut bytes.as_slice()).unwrap();
        back.check_invariants().unwrap();
        assert_eq!(back.scores(b"b"), b.scores(b"b"));
        assert_eq!(back.rank(b"c"), Some(2));
    }

    #[test]
    fn dense_tuples_share_ranks_and_survive_removals() {
        let mut b = board(
            UpdateOp::Set,
            Ranking::Dense,
            vec![
                SortKey::new("a", Order::Asc, KeyType::Float, KeyOp::Incr),
                SortKey::new("b", Order::Desc, KeyType::Float, KeyOp::Incr),
                SortKey::new("c", Order::Asc, KeyType::Int, KeyOp::Incr),
            ],
        );
        for (m, a, bb, c) in [
            ("p", 1.0, 5.0, 1),
            ("q", 1.0, 5.0, 1),
            ("r", 1.0, 4.0, 1),
            ("s", 0.5, 0.0, 9),
        ] {
            put(&mut b, m, &[f(a), f(bb), i(c)]).unwrap();
        }
        assert_eq!(b.rank(b"s"), Some(1));
        assert_eq!(b.rank(b"p"), Some(2));
        assert_eq!(b.rank(b"q"), Some(2));
        assert_eq!(b.rank(b"r"), Some(3));
        b.remove(&[b"p"]).unwrap();
        b.check_invariants().unwrap();
        assert_eq!(b.rank(b"r"), Some(3));
        b.remove(&[b"q"]).unwrap();
        b.check_invariants().unwrap();
        assert_eq!(b.rank(b"r"), Some(2));
    }

    /// An int first key's value is its two's complement, not a double's
    /// bits: reads that report a score must convert it.
    #[test]
    fn scans_and_predicates_see_an_int_first_key_as_its_value() {
        let mut b = board(
            UpdateOp::Set,
            Ranking::Unique,
            vec![SortKey::new("xp", Order::Desc, KeyType::Int, KeyOp::Incr)],
        );
        put(&mut b, "a", &[i(-3)]).unwrap();
        put(&mut b, "b", &[i(7)]).unwrap();
        let (next, mut page) = b.scan(0, 10);
        assert_eq!(next, 0);
        page.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(page, [(b"a".to_vec(), -3.0), (b"b".to_vec(), 7.0)]);
        let mut seen = Vec::new();
        b.partition_point(|m, s| {
            seen.push((m.to_vec(), s));
            true
        });
        assert!(!seen.is_empty());
        assert!(seen.iter().all(|(m, s)| b.score(m) == Some(*s)), "{seen:?}");
    }

    /// `remove` finds a member's tree entry by its key: an int first key
    /// must be encoded as an int.
    #[test]
    fn members_with_an_int_first_key_can_be_removed() {
        let mut b = board(
            UpdateOp::Set,
            Ranking::Dense,
            vec![SortKey::new("xp", Order::Asc, KeyType::Int, KeyOp::Incr)],
        );
        put(&mut b, "a", &[i(-3)]).unwrap();
        put(&mut b, "b", &[i(7)]).unwrap();
        put(&mut b, "c", &[i(7)]).unwrap();
        assert_eq!(b.remove(&[b"b", b"a"]).unwrap(), 2);
        b.check_invariants().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b.rank(b"c"), Some(1));
        assert_eq!(b.top(1, 10).unwrap().entries.len(), 1);
    }

    /// An excluded bound's neighbouring integer, past 2^53, is not the
    /// double one away (which rounds back onto the bound or beyond).
    #[test]
    fn open_bounds_of_an_int_first_key_past_two_to_the_53_admit_the_next_integer() {
        let mut b = board(
            UpdateOp::Set,
            Ranking::Unique,
            vec![SortKey::new("xp", Order::Desc, KeyType::Int, KeyOp::Incr)],
        );
        let big = 1i64 << 53;
        put(&mut b, "lo", &[i(big)]).unwrap();
        put(&mut b, "hi", &[i(big + 1)]).unwrap();
        put(&mut b, "neg", &[i(-big - 1)]).unwrap();
        let count = |min, max| b.count_range(&ScoreRange { min, max }).unwrap();
        use Bound::{Excluded, Unbounded};
        assert_eq!(count(Excluded(big as f64), Unbounded), 1);
        assert_eq!(count(Unbounded, Excluded((big + 2) as f64)), 3);
        assert_eq!(count(Excluded((-big - 2) as f64), Excluded(0.0)), 1);
        assert_eq!(count(Excluded(f64::INFINITY), Unbounded), 0);
        assert_eq!(count(Unbounded, Excluded(f64::NEG_INFINITY)), 0);
        assert_eq!(
            count(Excluded(f64::NEG_INFINITY), Excluded(f64::INFINITY)),
            3
        );
    }

    #[test]
    fn changing_the_sort_keeps_values_by_name() {
        let mut b = Board::new(BoardConfig::default()).unwrap();
        for (m, s) in [("a", 3.0), ("b", 1.0), ("c", 2.0)] {
            b.submit(&Submit::new(m.as_bytes(), s)).unwrap();
        }
        let sorted = BoardConfig::from_json(&serde_json::json!({
            "sort": [{"key": "score", "type": "int"}, {"key": "time", "order": "asc"}]
        }))
        .unwrap();
        let mut seen = Vec::new();
        b.set_config_progress(sorted, |d, t| seen.push((d, t)))
            .unwrap();
        b.check_invariants().unwrap();
        assert_eq!(seen.last(), Some(&(3, 3)));
        assert_eq!(
            b.scores(b"a").unwrap().as_slice(),
            &[Num::Int(3), Num::Float(0.0)]
        );
        put(&mut b, "b", &[i(3), f(-1.0)]).unwrap();
        assert_eq!(b.rank(b"b"), Some(1));
        // Flip the second key's direction: re-ranked from the stored values.
        let flipped = BoardConfig::from_json(&serde_json::json!({
            "sort": [{"key": "score", "type": "int"}, {"key": "time", "order": "desc"}]
        }))
        .unwrap();
        b.set_config(flipped).unwrap();
        assert_eq!(b.rank(b"a"), Some(1));
        // A float that is not an integer cannot move to an int key.
        let mut p = Board::new(BoardConfig::default()).unwrap();
        p.submit(&Submit::new(b"x", 1.5)).unwrap();
        let to_int =
            BoardConfig::from_json(&serde_json::json!({"sort": [{"key": "score", "type": "int"}]}))
                .unwrap();
        assert!(p.set_config(to_int).is_err());
        assert_eq!(p.score(b"x"), Some(1.5));
    }
}
