//! Planning and running a query against a board (docs/search.md,
//! "Planning").
//!
//! 1. The query's words are checked against the first-character planes:
//!    for each char `c`, `k_c` = how many query words start with `c`; a
//!    member needs at least `k_c` words starting with `c` (each query word
//!    takes a distinct word of its own). When every query word is one
//!    unrestricted char prefix with a plane (`a`, `a* a`, `a* b`), that
//!    condition is also sufficient: the planes alone answer the query.
//! 2. Otherwise the matching members are gathered from the smallest
//!    source — the postings of one query word, or a plane — each candidate
//!    filtered by the planes, then verified against its forward record
//!    (a bipartite matching of query words to distinct word occurrences).
//! 3. The page is then ordered: `Intersect` sorts the matches by tree
//!    order (score key, then tiebreak) and looks up the page's ranks;
//!    `Scan` walks the tree from the best member, testing membership,
//!    until `offset + limit` matches have been seen, deriving every rank
//!    on the way; `Level`, when two query words start with a char that
//!    has a plane, walks that plane's ranked level (its members with two
//!    or more such words, in rank order) the same way and then looks up
//!    the page's ranks. `Auto` compares the costs.

use super::index::{build_shares, record_words, Plane, SearchIndex, DEFAULT_MAX_PLANES};
use super::query::{self, QToken};
use super::{Plan, SearchError, SearchHead, SearchOptions, SearchPage, MAX_SEARCH_FIELDS};
use crate::board::{Board, EntryRef};
use crate::config::Ranking;
use crate::tree::TieBreak;

/// Rough costs (ns) for `Auto`: one tree entry walked and tested, one
/// match keyed and sorted, one bitset word scanned, one ranked-level entry
/// walked and tested against the planes or against a sorted list of
/// matches, one page entry's rank looked up (a batched tree descent).
const WALK_NS: f64 = 3.0;
const SORT_NS: f64 = 10.0;
const WORD_NS: f64 = 1.0;
const LEVEL_NS: f64 = 4.0;
const LEVEL_IDS_NS: f64 = 15.0;
const RANK_NS: f64 = 150.0;
/// Members tested per prefetch window.
const WINDOW: usize = 32;
/// Members whose scores are requested together when ordering matches.
const BATCH: usize = 64;

const FREE: u8 = u8::MAX;

/// Scratch space for verifying candidates against their records.
struct Matcher<'a> {
    words: Vec<(u8, &'a [u8])>,
    /// Per query word: indices of the record words it matches
    /// (`adj[start[t]..start[t + 1]]`).
    adj: Vec<u16>,
    start: Vec<usize>,
    owner: Vec<u8>,
    seen: Vec<bool>,
}

impl<'a> Matcher<'a> {
    fn new() -> Self {
        Matcher {
            words: Vec::new(),
            adj: Vec::new(),
            start: Vec::new(),
            owner: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Whether every token can take a distinct word of `rec`.
    fn matches(&mut self, tokens: &[QToken], rec: &'a [u8]) -> bool {
        if tokens.len() == 1 {
            return record_words(rec).any(|(f, w)| tokens[0].matches(f, w));
        }
        self.words.clear();
        self.words.extend(record_words(rec));
        if self.words.len() < tokens.len() {
            return false;
        }
        self.adj.clear();
        self.start.clear();
        for t in tokens {
            self.start.push(self.adj.len());
            let before = self.adj.len();
            for (i, &(f, w)) in self.words.iter().enumerate() {
                if t.matches(f, w) {
                    self.adj.push(i as u16);
                }
            }
            if self.adj.len() == before {
                return false;
            }
        }
        self.start.push(self.adj.len());
        self.owner.clear();
        self.owner.resize(self.words.len(), FREE);
        for t in 0..tokens.len() {
            // A free word first: the common case needs no search.
            let free = self.adj[self.start[t]..self.start[t + 1]]
                .iter()
                .find(|&&w| self.owner[w as usize] == FREE)
                .copied();
            if let Some(w) = free {
                self.owner[w as usize] = t as u8;
                continue;
            }
            self.seen.clear();
            self.seen.resize(self.words.len(), false);
            if !self.augment(t) {
                return false;
            }
        }
        true
    }

    /// Kuhn's augmenting path from token `t`.
    fn augment(&mut self, t: usize) -> bool {
        for i in self.start[t]..self.start[t + 1] {
            let w = self.adj[i] as usize;
            if self.seen[w] {
                continue;
            }
            self.seen[w] = true;
            let o = self.owner[w];
            if o == FREE || self.augment(o as usize) {
                self.owner[w] = t as u8;
                return true;
            }
        }
        false
    }
}

/// A parsed query against one index.
struct Prepared<'a> {
    ix: &'a SearchIndex,
    tokens: Vec<QToken>,
    /// Planes the matches must pass: at least `k` (1..=3) words with the
    /// plane's first char.
    reqs: Vec<(&'a Plane, u8)>,
    /// The planes alone decide the query.
    exact: bool,
}

impl<'a> Prepared<'a> {
    fn new(ix: &'a SearchIndex, tokens: Vec<QToken>) -> Self {
        let mut need: Vec<(char, usize)> = Vec::new();
        for t in &tokens {
            let c = t.word.chars().next().expect("query words are not empty");
            match need.iter_mut().find(|e| e.0 == c) {
                Some(e) => e.1 += 1,
                None => need.push((c, 1)),
            }
        }
        let mut exact = tokens
            .iter()
            .all(|t| t.prefix && t.field.is_none() && t.word.chars().nth(1).is_none());
        let mut reqs = Vec::new();
        for (c, k) in need {
            match ix.plane_of(c) {
                Some(p) => reqs.push((&ix.planes()[p], k.min(3) as u8)),
                None => exact = false,
            }
            if k > 3 {
                exact = false;
            }
        }
        // Most selective first, so failing members fail fast.
        reqs.sort_by_key(|(p, k)| p.count_at_least(*k));
        Prepared {
            ix,
            tokens,
            reqs,
            exact,
        }
    }

    #[inline]
    fn planes_pass(&self, id: u32) -> bool {
        self.reqs.iter().all(|(p, k)| p.at_least(id, *k))
    }

    /// The planes' verdict for the 64 members of bitset word `w`.
    #[inline]
    fn plane_mask(&self, w: usize) -> u64 {
        self.reqs.iter().fold(!0u64, |m, (p, k)| m & p.mask(w, *k))
    }

    fn words(&self) -> usize {
        self.ix.id_cap().div_ceil(64)
    }

    /// Calls `f(w, bits)` for each bitset word `w` holding members that
    /// pass every plane (`bits`: which), ascending. Driven by the summary
    /// of the most selective plane, so a sparse level costs little more
    /// than its members.
    #[inline]
    fn for_each_plane_word(&self, mut f: impl FnMut(usize, u64)) {
        let (driver, k) = self.reqs[0];
        for s in 0..driver.summary_len() {
            let mut sm = driver.summary(s, k);
            while sm != 0 {
                let w = s * 64 + sm.trailing_zeros() as usize;
                sm &= sm - 1;
                let m = self.plane_mask(w);
                if m != 0 {
                    f(w, m);
                }
            }
        }
    }

    /// The ranked level to walk for `Plan::Level`: the shortest among the
    /// planes of which the query needs two or more words (every match is
    /// on each of them), and whether every member on it matches.
    fn level(&self) -> Option<(&'a Plane, bool)> {
        let (p, k) = self
            .reqs
            .iter()
            .filter(|(_, k)| *k >= 2)
            .min_by_key(|(p, _)| p.ranked().len())?;
        Some((p, self.exact && self.reqs.len() == 1 && *k == 2))
    }

    /// Bitset words the plane enumeration reads at most: the driving
    /// level's summary, then only the words its summary marks (at most one
    /// per member of that level).
    fn plane_words(&self) -> usize {
        self.reqs.first().map_or(0, |(p, k)| {
            p.summary_len() + (p.count_at_least(*k) as usize).min(self.words())
        })
    }

    /// Members passing the planes (exact queries: the total).
    fn plane_count(&self) -> u64 {
        if let [(p, k)] = self.reqs[..] {
            return p.count_at_least(k);
        }
        let mut n = 0u64;
        self.for_each_plane_word(|_, m| n += m.count_ones() as u64);
        n
    }

    /// Members passing the planes, ascending.
    fn plane_ids(&self, out: &mut Vec<u32>) {
        self.for_each_plane_word(|w, mut m| {
            while m != 0 {
                out.push((w * 64) as u32 + m.trailing_zeros());
                m &= m - 1;
            }
        });
    }

    /// Every member matching the query (non-exact queries).
    fn collect(&self, m: &mut Matcher<'a>) -> Matches {
        // The smallest source of candidates: the rarest plane (intersected
        // with the others), or one query word's postings.
        let mut best = (usize::MAX, None);
        if let Some((p, k)) = self.reqs.first() {
            best = (p.count_at_least(*k) as usize, None);
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if self.covered(t) {
                continue; // its plane is a source already
            }
            let cap = best.0;
            let mut n = 0usize;
            self.ix.terms(t, |p| {
                n += p.len();
                n < cap
            });
            if n < best.0 {
                best = (n, Some(i));
            }
        }
        let (size, driver) = best;
        let words = self.words();
        let alone = self.tokens.len() == 1 && driver.is_some();
        // No word can match two query words: a member matches iff it has a
        // word for each, so the words' member sets are intersected without
        // reading any record.
        let disjoint = alone || self.disjoint();
        if disjoint && size > words {
            // Large sets: bitsets throughout.
            let mut bits = vec![0u64; words];
            match driver {
                Some(i) => self.set_bits(&self.tokens[i], &mut bits),
                None => self.for_each_plane_word(|w, m| bits[w] = m),
            }
            if driver.is_some() && !alone {
                for (w, b) in bits.iter_mut().enumerate() {
                    if *b != 0 {
                        *b &= self.plane_mask(w);
                    }
                }
            }
            for (j, t) in self.tokens.iter().enumerate() {
                if Some(j) != driver && !self.covered(t) {
                    let mut other = vec![0u64; words];
                    self.set_bits(t, &mut other);
                    for (b, o) in bits.iter_mut().zip(&other) {
                        *b &= o;
                    }
                }
            }
            let count = bits.iter().map(|b| b.count_ones() as u64).sum();
            return Matches::Bits(bits, count);
        }
        let mut ids = Vec::new();
        match driver {
            None => self.plane_ids(&mut ids),
            Some(i) => {
                let mut lists = 0;
                self.ix.terms(&self.tokens[i], |p| {
                    p.for_each(|x| ids.push(x));
                    lists += 1;
                    true
                });
                if lists > 1 {
                    dedup(&mut ids, self.ix.id_cap());
                }
                if alone {
                    return Matches::Ids(ids);
                }
                ids.retain(|&id| self.planes_pass(id));
            }
        }
        if disjoint {
            for (j, t) in self.tokens.iter().enumerate() {
                if Some(j) == driver || self.covered(t) || ids.is_empty() {
                    continue;
                }
                let mut lists = Vec::new();
                self.ix.terms(t, |p| {
                    lists.push(p);
                    true
                });
                let size: usize = lists.iter().map(|p| p.len()).sum();
                // Rough costs of three ways to test the candidates.
                let n = ids.len();
                let search = 4 * n * lists.len() * (usize::BITS - size.leading_zeros()) as usize;
                let bitset = 2 * size + words;
                let record = 60 * n;
                if search <= bitset && search <= record {
                    ids.retain(|&id| lists.iter().any(|p| p.contains(id)));
                } else if record <= bitset {
                    self.retain_by_record(&mut ids, t);
                } else {
                    let mut bits = vec![0u64; words];
                    for p in &lists {
                        p.for_each(|x| bits[x as usize / 64] |= 1 << (x % 64));
                    }
                    ids.retain(|&id| (bits[id as usize / 64] >> (id % 64)) & 1 != 0);
                }
            }
            return Matches::Ids(ids);
        }
        // Query words that may compete for the same word: verify each
        // candidate's record with a matching.
        let mut out = Vec::with_capacity(ids.len().min(1 << 16));
        let mut window = [0u32; WINDOW];
        for chunk in ids.chunks(WINDOW) {
            for &id in chunk {
                self.ix.prefetch_loc(id);
            }
            let mut n = 0;
            for &id in chunk {
                window[n] = id;
                n += 1;
                self.ix.prefetch_record(id);
            }
            for &id in &window[..n] {
                if m.matches(&self.tokens, self.ix.record(id)) {
                    out.push(id);
                }
            }
        }
        Matches::Ids(out)
    }

    /// Whether the planes alone decide `t` in a query whose words are
    /// disjoint: an unrestricted one-char prefix with a plane (whose level
    /// 1 is exactly the members with a word matching `t`).
    fn covered(&self, t: &QToken) -> bool {
        let mut c = t.word.chars();
        let first = c.next();
        t.prefix
            && t.field.is_none()
            && c.next().is_none()
            && first.is_some_and(|ch| self.reqs.iter().any(|(p, _)| p.ch == ch))
    }

    /// Sets the bits of every member with a word matching `t`.
    fn set_bits(&self, t: &QToken, bits: &mut [u64]) {
        self.ix.terms(t, |p| {
            p.for_each(|x| bits[x as usize / 64] |= 1 << (x % 64));
            true
        });
    }
}

impl Prepared<'_> {
    /// True when no word can match two of the query's words (so each query
    /// word takes a distinct word by itself).
    fn disjoint(&self) -> bool {
        let t = &self.tokens;
        (0..t.len()).all(|i| (i + 1..t.len()).all(|j| !conflict(&t[i], &t[j])))
    }

    /// Keeps the members with a word matching `t`, read from their records.
    fn retain_by_record(&self, ids: &mut Vec<u32>, t: &QToken) {
        let mut kept = 0;
        for start in (0..ids.len()).step_by(WINDOW) {
            let end = (start + WINDOW).min(ids.len());
            for &id in &ids[start..end] {
                self.ix.prefetch_loc(id);
            }
            for &id in &ids[start..end] {
                self.ix.prefetch_record(id);
            }
            for i in start..end {
                let id = ids[i];
                if record_words(self.ix.record(id)).any(|(f, w)| t.matches(f, w)) {
                    ids[kept] = id;
                    kept += 1;
                }
            }
        }
        ids.truncate(kept);
    }
}

/// Whether some word could match both `a` and `b`.
fn conflict(a: &QToken, b: &QToken) -> bool {
    let fields = a.field.is_none() || b.field.is_none() || a.field == b.field;
    let (x, y) = (a.word.as_str(), b.word.as_str());
    fields
        && match (a.prefix, b.prefix) {
            (false, false) => x == y,
            (true, false) => y.starts_with(x),
            (false, true) => x.starts_with(y),
            (true, true) => x.starts_with(y) || y.starts_with(x),
        }
}

/// Every member matching a query.
enum Matches {
    /// Ascending ids.
    Ids(Vec<u32>),
    /// A bitset over member ids and how many bits are set.
    Bits(Vec<u64>, u64),
}

impl Matches {
    fn len(&self) -> u64 {
        match self {
            Matches::Ids(v) => v.len() as u64,
            Matches::Bits(_, n) => *n,
        }
    }

    fn into_bits(self, words: usize) -> Vec<u64> {
        match self {
            Matches::Bits(b, _) => b,
            Matches::Ids(ids) => {
                let mut bits = vec![0u64; words];
                for id in ids {
                    bits[id as usize / 64] |= 1 << (id % 64);
                }
                bits
            }
        }
    }

    /// Whether member `id` matches (a bit test, or a binary search).
    #[inline]
    fn contains(&self, id: u32) -> bool {
        match self {
            Matches::Ids(v) => v.binary_search(&id).is_ok(),
            Matches::Bits(b, _) => (b[id as usize / 64] >> (id % 64)) & 1 != 0,
        }
    }

    fn into_ids(self) -> Vec<u32> {
        match self {
            Matches::Ids(v) => v,
            Matches::Bits(bits, n) => {
                let mut ids = Vec::with_capacity(n as usize);
                for (w, &b) in bits.iter().enumerate() {
                    let mut b = b;
                    while b != 0 {
                        ids.push((w * 64) as u32 + b.trailing_zeros());
                        b &= b - 1;
                    }
                }
                ids
            }
        }
    }
}

/// The best `k` members offered, in tree order (score key, then the
/// board's tiebreak): a max-heap of the `k` best so far, so most members
/// cost one comparison with the worst of them.
struct TopK<'b> {
    board: &'b Board,
    ties: crate::board::Ties<'b>,
    k: usize,
    heap: Vec<(u64, u32)>,
    /// The batch whose scores are on their way.
    pending: (usize, [u32; BATCH]),
}

impl<'b> TopK<'b> {
    fn new(board: &'b Board, k: usize) -> Self {
        TopK {
            board,
            ties: board.ties(),
            k,
            heap: Vec::with_capacity(k.min(1024)),
            pending: (0, [0; BATCH]),
        }
    }

    #[inline]
    fn less(&self, a: (u64, u32), b: (u64, u32)) -> bool {
        a.0 < b.0 || (a.0 == b.0 && self.ties.tie(a.1, b.1) == std::cmp::Ordering::Less)
    }

    /// Offers a batch of members (at most `BATCH`). Their scores are
    /// requested now and compared on the next call (or in `page`), so the
    /// loads of one batch overlap the work on the previous one.
    fn offer(&mut self, ids: &[u32]) {
        if self.k == 0 {
            return;
        }
        for &id in ids {
            self.board.members.prefetch_rec(id);
        }
        let pending = std::mem::replace(&mut self.pending, (0, [0; BATCH]));
        self.take(&pending.1[..pending.0]);
        self.pending.0 = ids.len();
        self.pending.1[..ids.len()].copy_from_slice(ids);
    }

    fn take(&mut self, ids: &[u32]) {
        for &id in ids {
            let e = (self.board.key_of_id(id), id);
            if self.heap.len() < self.k {
                self.heap.push(e);
                self.sift_up(self.heap.len() - 1);
            } else if self.less(e, self.heap[0]) {
                self.heap[0] = e;
                self.sift_down(0);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if !self.less(self.heap[p], self.heap[i]) {
                break;
            }
            self.heap.swap(p, i);
            i = p;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut big = i;
            if l < n && self.less(self.heap[big], self.heap[l]) {
                big = l;
            }
            if r < n && self.less(self.heap[big], self.heap[r]) {
                big = r;
            }
            if big == i {
                return;
            }
            self.heap.swap(i, big);
            i = big;
        }
    }

    /// The best `k` from `offset` on, best first, with their ranks.
    fn page(mut self, offset: usize) -> Vec<(u32, u64)> {
        let pending = std::mem::replace(&mut self.pending, (0, [0; BATCH]));
        self.take(&pending.1[..pending.0]);
        let TopK {
            board,
            ties,
            mut heap,
            ..
        } = self;
        heap.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| ties.tie(a.1, b.1)));
        board.ranks_of(&heap[offset.min(heap.len())..], &ties)
    }
}

/// Sorts and dedups member ids below `cap`.
fn dedup(ids: &mut Vec<u32>, cap: usize) {
    if ids.len() < cap / 64 {
        ids.sort_unstable();
        ids.dedup();
        return;
    }
    let mut bits = vec![0u64; cap.div_ceil(64)];
    for &id in ids.iter() {
        bits[id as usize / 64] |= 1 << (id % 64);
    }
    ids.clear();
    for (w, &b) in bits.iter().enumerate() {
        let mut b = b;
        while b != 0 {
            ids.push((w * 64) as u32 + b.trailing_zeros());
            b &= b - 1;
        }
    }
}

impl Board {
    /// Builds this board's search index (if it has none) and keeps it
    /// current on every write from then on. Costs O(members); the index
    /// needs `&mut`, searching then needs only `&self`. Allowed on
    /// read-only archives (it changes no data). Fails with
    /// [`SearchError::Disabled`] when `search_fields` is empty.
    pub fn enable_search(&mut self) -> Result<(), SearchError> {
        if self.config.search_fields.is_empty() {
            return Err(SearchError::Disabled);
        }
        if self.search.is_none() {
            self.rebuild_search(DEFAULT_MAX_PLANES);
        }
        Ok(())
    }

    /// Drops the search index and its memory (until the next
    /// [`Board::enable_search`]).
    pub fn disable_search(&mut self) {
        self.search = None;
    }

    /// Whether the board has a search index.
    pub fn search_enabled(&self) -> bool {
        self.search.is_some()
    }

    /// Heap bytes held by the search index (0 when not enabled).
    pub fn search_heap_bytes(&self) -> usize {
        self.search.as_ref().map_or(0, |s| s.heap_bytes())
    }

    /// Test hook: rebuilds the index allowing at most `max` first-character
    /// planes (0: none), so tests can run queries with and without them.
    #[doc(hidden)]
    pub fn enable_search_with_planes(&mut self, max: usize) -> Result<(), SearchError> {
        if self.config.search_fields.is_empty() {
            return Err(SearchError::Disabled);
        }
        self.rebuild_search(max);
        Ok(())
    }

    /// Test and bench hook: rebuilds the index with its text pass cut
    /// into `shares` shares, one thread each (1: on this thread), so the
    /// two can be compared and timed side by side.
    #[doc(hidden)]
    pub fn enable_search_in_shares(&mut self, shares: usize) -> Result<(), SearchError> {
        if self.config.search_fields.is_empty() {
            return Err(SearchError::Disabled);
        }
        self.rebuild_search_in(DEFAULT_MAX_PLANES, shares);
        Ok(())
    }

    /// Test hook: checks the search index against the board.
    #[doc(hidden)]
    pub fn check_search_invariants(&self) -> Result<(), String> {
        let Some(ix) = self.search.as_deref() else {
            return Ok(());
        };
        if self.config.search_fields.len() > MAX_SEARCH_FIELDS {
            return Err("too many search fields".into());
        }
        let live: Vec<u32> = self.tree.iter().map(|(_, id)| id).collect();
        let ord = self.tree_order();
        ix.check(&live, &ord)?;
        // Every record is what the member's text tokenises to now.
        let fields = &self.config.search_fields;
        let fresh = SearchIndex::build(fields, 0, &self.members, live.clone(), &ord, 1);
        // A build in shares (threads) is the one a single thread builds.
        let planes = ix.max_planes();
        let one = SearchIndex::build(fields, planes, &self.members, live.clone(), &ord, 1);
        let shared = SearchIndex::build(fields, planes, &self.members, live.clone(), &ord, 3);
        one.same_as(&shared)
            .map_err(|e| format!("a build in 3 shares differs from one in 1: {e}"))?;
        for &id in &live {
            if ix.record(id) != fresh.record(id) {
                return Err(format!(
                    "stale record for member {:?}",
                    String::from_utf8_lossy(self.members.bytes(id))
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn rebuild_search(&mut self, max_planes: usize) {
        let shares = build_shares(self.tree.len());
        self.rebuild_search_in(max_planes, shares);
    }

    /// [`Board::rebuild_search`] with the text pass cut into `shares`
    /// shares, one thread each.
    fn rebuild_search_in(&mut self, max_planes: usize, shares: usize) {
        let ids: Vec<u32> = self.tree.iter().map(|(_, id)| id).collect();
        self.search = Some(Box::new(SearchIndex::build(
            &self.config.search_fields,
            max_planes,
            &self.members,
            ids,
            &self.tree_order(),
            shares,
        )));
    }

    /// `search` (docs/spec.md §3): the members matching `query`, best first, with
    /// ranks, and how many match in all. Needs the index
    /// ([`SearchError::NotIndexed`] until [`Board::enable_search`]); a
    /// query error is reported before that.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<SearchPage, SearchError> {
        let (head, hits) = self.search_hits(query, opts)?;
        Ok(SearchPage {
            entries: self.entries_of(&hits),
            total: head.total,
            offset: head.offset,
            limit: head.limit,
            ranking: head.ranking,
            plan: head.plan,
            keys: self.key_names(),
        })
    }

    /// [`Board::search`] without copying the page: `f` gets the answer's
    /// head, then the page's entries in place, best first, and what it
    /// returns is returned. For frontends that encode a page straight into
    /// their response (an owned [`crate::board::Entry`] per row costs a
    /// member copy and two reference counts).
    pub fn search_with<R>(
        &self,
        query: &str,
        opts: &SearchOptions,
        f: impl FnOnce(&SearchHead, &mut dyn Iterator<Item = EntryRef<'_>>) -> R,
    ) -> Result<R, SearchError> {
        let (head, hits) = self.search_hits(query, opts)?;
        self.prefetch_hits(&hits);
        let mut entries = hits.iter().map(|&(id, rank)| self.entry_ref(id, rank));
        Ok(f(&head, &mut entries))
    }

    /// The answer of [`Board::search`] but for its entries, and the page's
    /// member ids with their ranks, best first.
    fn search_hits(
        &self,
        query: &str,
        opts: &SearchOptions,
    ) -> Result<(SearchHead, Vec<(u32, u64)>), SearchError> {
        let fields = &self.config.search_fields;
        if fields.is_empty() {
            return Err(SearchError::Disabled);
        }
        let tokens = match query::parse(query, fields) {
            // A query with no word is well formed and matches nothing.
            Err(SearchError::EmptyQuery) => {
                let head = SearchHead {
                    total: 0,
                    offset: opts.offset,
                    limit: opts.limit,
                    ranking: self.config.ranking,
                    // Nothing ran: the plan asked for, as if it had.
                    plan: match opts.plan {
                        Plan::Auto => Plan::Intersect,
                        p => p,
                    },
                };
                return Ok((head, Vec::new()));
            }
            parsed => parsed?,
        };
        let ix = self.search.as_deref().ok_or(SearchError::NotIndexed)?;
        let q = Prepared::new(ix, tokens);
        let mut m = Matcher::new();
        let (total, matches) = if q.exact {
            (q.plane_count(), None)
        } else {
            let v = q.collect(&mut m);
            (v.len(), Some(v))
        };
        let n = self.len();
        let need = opts.offset.saturating_add(opts.limit).min(total);
        let level = q.level();
        let plan = match opts.plan {
            Plan::Auto => {
                let page = (need - need.min(opts.offset)) as f64 * RANK_NS;
                let walk = need as f64 * n as f64 / total.max(1) as f64 * WALK_NS
                    + if q.exact {
                        0.0
                    } else {
                        q.words() as f64 * WORD_NS
                    };
                let sort = total as f64 * SORT_NS
                    + page
                    + if q.exact {
                        q.plane_words() as f64 * WORD_NS
                    } else {
                        0.0
                    };
                // Matches are spread over the level as over the board.
                let ranked = level.map_or(f64::INFINITY, |(p, all)| {
                    let len = p.ranked().len() as f64;
                    let walked = if all {
                        need as f64
                    } else {
                        (need as f64 * len / total.max(1) as f64).min(len)
                    };
                    let each = if q.exact { LEVEL_NS } else { LEVEL_IDS_NS };
                    walked * each + page
                });
                if ranked < walk && ranked < sort {
                    Plan::Level
                } else if walk < sort {
                    Plan::Scan
                } else {
                    Plan::Intersect
                }
            }
            Plan::Level if level.is_none() => Plan::Scan,
            p => p,
        };
        let hits: Vec<(u32, u64)> = if need <= opts.offset {
            Vec::new()
        } else {
            let (offset, limit) = (opts.offset, (need - opts.offset) as usize);
            match (plan, matches, level) {
                (Plan::Level, None, Some((p, all))) => {
                    self.walk_level(p, all, offset, limit, |id| q.planes_pass(id))
                }
                (Plan::Level, Some(matches), Some((p, _))) => {
                    self.walk_level(p, false, offset, limit, |id| matches.contains(id))
                }
                (Plan::Scan, Some(matches), _) if opts.plan == Plan::Auto => {
                    let bits = matches.into_bits(q.words());
                    self.walk(self.tree.iter(), offset, limit, |id| {
                        (bits[id as usize / 64] >> (id % 64)) & 1 != 0
                    })
                }
                (Plan::Scan, _, _) if q.exact => {
                    self.walk(self.tree.iter(), offset, limit, |id| q.planes_pass(id))
                }
                (Plan::Scan, _, _) => self.walk(
                    self.prefetched(|id| ix.prefetch_loc(id)),
                    offset,
                    limit,
                    |id| q.planes_pass(id) && m.matches(&q.tokens, ix.record(id)),
                ),
                (_, Some(matches), _) => self.order(&matches.into_ids(), offset as usize, limit),
                (_, None, _) => self.order_planes(&q, offset as usize, limit),
            }
        };
        let head = SearchHead {
            total,
            offset: opts.offset,
            limit: opts.limit,
            ranking: self.config.ranking,
            plan: if plan == Plan::Auto {
                Plan::Intersect
            } else {
                plan
            },
        };
        Ok((head, hits))
    }

    /// Walks `entries` (the tree from the best member), testing each with
    /// `hit`; skips `offset` hits and returns the next `limit` with their
    /// ranks, derived on the way (the walk starts at position 0).
    fn walk(
        &self,
        entries: impl Iterator<Item = (u64, u32)>,
        offset: u64,
        limit: usize,
        mut hit: impl FnMut(u32) -> bool,
    ) -> Vec<(u32, u64)> {
        let mut out = Vec::with_capacity(limit.min(1024));
        let mut skipped = 0u64;
        let (mut pos, mut run_start, mut dense) = (0usize, 0usize, 0u64);
        let mut prev: Option<(u64, u32)> = None;
        let ranking = self.config.ranking;
        for (key, id) in entries {
            // Ties are equal tuples: on a board with sort keys the later
            // keys too, not only the tree key.
            if ranking != Ranking::Unique
                && !prev.is_some_and(|(k, p)| self.same_values(k, p, key, id))
            {
                prev = Some((key, id));
                run_start = pos;
                dense += 1;
            }
            if hit(id) {
                if skipped < offset {
                    skipped += 1;
                } else {
                    let rank = match ranking {
                        Ranking::Unique => pos as u64 + 1,
                        Ranking::Competition => run_start as u64 + 1,
                        Ranking::Dense => dense,
                    };
                    out.push((id, rank));
                    if out.len() == limit {
                        break;
                    }
                }
            }
            pos += 1;
        }
        out
    }

    /// The tree's entries from the best, calling `prefetch` on each
    /// `WINDOW` entries before it is yielded.
    fn prefetched<'s>(
        &'s self,
        mut prefetch: impl FnMut(u32) + 's,
    ) -> impl Iterator<Item = (u64, u32)> + 's {
        let mut ahead = self.tree.iter();
        let mut queue = std::collections::VecDeque::with_capacity(WINDOW);
        for e in ahead.by_ref().take(WINDOW) {
            prefetch(e.1);
            queue.push_back(e);
        }
        std::iter::from_fn(move || {
            let e = queue.pop_front()?;
            if let Some(next) = ahead.next() {
                prefetch(next.1);
                queue.push_back(next);
            }
            Some(e)
        })
    }

    /// Sorts `ids` into rank order and returns `limit` of them from
    /// `offset` on, with their ranks.
    fn order(&self, ids: &[u32], offset: usize, limit: usize) -> Vec<(u32, u64)> {
        let mut top = TopK::new(self, offset.saturating_add(limit));
        for chunk in ids.chunks(BATCH) {
            top.offer(chunk);
        }
        top.page(offset)
    }

    /// [`Board::order`] of the members passing the planes, streamed from
    /// the planes without listing them first.
    fn order_planes(&self, q: &Prepared, offset: usize, limit: usize) -> Vec<(u32, u64)> {
        let mut top = TopK::new(self, offset.saturating_add(limit));
        let mut batch = [0u32; BATCH];
        let mut n = 0;
        q.for_each_plane_word(|w, mut m| {
            while m != 0 {
                batch[n] = (w * 64) as u32 + m.trailing_zeros();
                m &= m - 1;
                n += 1;
                if n == BATCH {
                    top.offer(&batch);
                    n = 0;
                }
            }
        });
        top.offer(&batch[..n]);
        top.page(offset)
    }

    /// The ranks of `page` (tree entries in order), looked up in the tree.
    fn ranks_of(&self, page: &[(u64, u32)], ties: &crate::board::Ties) -> Vec<(u32, u64)> {
        match self.config.ranking {
            Ranking::Unique => {
                let mut pos = Vec::with_capacity(page.len());
                self.tree.positions_batch(page, ties, &mut pos);
                page.iter()
                    .zip(pos)
                    .map(|(&(_, id), p)| (id, p.expect("a member is in the tree") as u64 + 1))
                    .collect()
            }
            _ => page
                .iter()
                .map(|&(key, id)| (id, self.rank_at(0, key, id)))
                .collect(),
        }
    }

    /// Walks a ranked level from the best, testing each member with `hit`
    /// (`all`: every member matches, so the walk starts at `offset`);
    /// skips `offset` hits and returns the next `limit` with their ranks.
    fn walk_level(
        &self,
        level: &Plane,
        all: bool,
        offset: u64,
        limit: usize,
        mut hit: impl FnMut(u32) -> bool,
    ) -> Vec<(u32, u64)> {
        let mut page: Vec<(u64, u32)> = Vec::with_capacity(limit.min(1024));
        let ranked = level.ranked();
        if all {
            let from = usize::try_from(offset).unwrap_or(usize::MAX);
            page.extend(ranked.iter_from(from).take(limit));
        } else {
            let mut skipped = 0u64;
            for (key, id) in ranked.iter() {
                if hit(id) {
                    if skipped < offset {
                        skipped += 1;
                    } else {
                        page.push((key, id));
                        if page.len() == limit {
                            break;
                        }
                    }
                }
            }
        }
        self.ranks_of(&page, &self.ties())
    }

    /// Asks for the page's member records, then their bytes, before any
    /// is read: the page's members are scattered over the member table.
    fn prefetch_hits(&self, hits: &[(u32, u64)]) {
        for &(id, _) in hits {
            self.members.prefetch_rec(id);
        }
        for &(id, _) in hits {
            self.members.prefetch_bytes(id);
        }
    }

    fn entries_of(&self, hits: &[(u32, u64)]) -> Vec<crate::board::Entry> {
        self.prefetch_hits(hits);
        hits.iter()
            .map(|&(id, rank)| self.make_entry(id, rank))
            .collect()
    }
}
