//! The search index of one board: what every member's indexed text
//! tokenises to, kept current by every write (see docs/search.md).
//!
//! Three structures, all keyed by the member table's dense `u32` ids:
//!
//! - **Term dictionary**: a `BTreeMap` from `word ++ [0, field]` to the
//!   postings (sorted member ids) of that word in that field. Sorted keys
//!   make a prefix query one range scan; the `0` byte (never inside a word)
//!   keeps each word's fields together, before any longer word.
//! - **Forward records**: per member, its word occurrences in field order
//!   (`field u8, len u8, bytes`), packed in 1 MiB arena chunks. They say
//!   which postings to leave when a member goes or changes (no re-tokenising
//!   of text that is already gone), and they are what a candidate is
//!   verified against at query time: one record read, no dictionary walk.
//! - **First-character planes**: for each frequent first character `c`
//!   (one a sizeable share of the members' words start with), a 2-bit
//!   saturating count per member of its words starting with `c`, and how
//!   many members have 1, 2 and ≥ 3 such words. The short-prefix queries
//!   that match a large part of the board (`a`, `a* a`, `a* a* a`) are
//!   answered from these alone: their total is O(1) and testing a member is
//!   a bit test.
//! - **Ranked levels**: per plane, the members with at least two words
//!   starting with its char, as `(tree key, id)` in a counted tree ordered
//!   like the board's own. A query needing two such words (`a* a`, `al a`)
//!   reads its page off the front of that list instead of ordering every
//!   match by score. This is the one part of the index that follows
//!   scores: the board calls [`SearchIndex::unrank`] / [`SearchIndex::rerank`]
//!   around every score change, which costs one bit test for members in no
//!   level.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::query::QToken;
use super::text::{clip, for_each_word};
use crate::board::TreeOrder;
use crate::members::{arena_room, Extra, Members};
use crate::tree::{CountedTree, TieBreak};

/// Word occurrences indexed per member at most (a long `data` text beyond
/// that is not searchable).
pub(crate) const MAX_MEMBER_WORDS: usize = 1024;

/// What one entry of `search_fields` indexes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field {
    /// The display name, or the member id when it has none.
    Name,
    /// A key of the member's `data` object.
    Data(Box<str>),
}

impl Field {
    fn from_config(f: &str) -> Field {
        if f == "name" {
            Field::Name
        } else {
            Field::Data(f.into())
        }
    }
}

// ============================================================== term keys

/// Key bytes stored inline (most words are shorter).
const INLINE_KEY: usize = 22;

/// A dictionary key, `word ++ [0, field]`: inline when it fits, so the
/// B-tree compares keys inside its nodes without a pointer chase per
/// comparison, and most terms cost no allocation of their own.
#[derive(Clone)]
pub(crate) enum TermKey {
    Inline(u8, [u8; INLINE_KEY]),
    Heap(Box<[u8]>),
}

impl TermKey {
    fn new(bytes: &[u8]) -> TermKey {
        if bytes.len() <= INLINE_KEY {
            let mut a = [0u8; INLINE_KEY];
            a[..bytes.len()].copy_from_slice(bytes);
            TermKey::Inline(bytes.len() as u8, a)
        } else {
            TermKey::Heap(bytes.into())
        }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            TermKey::Inline(n, a) => &a[..*n as usize],
            TermKey::Heap(b) => b,
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            TermKey::Inline(..) => 0,
            TermKey::Heap(b) => b.len().next_multiple_of(8),
        }
    }
}

impl std::borrow::Borrow<[u8]> for TermKey {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

impl PartialEq for TermKey {
    fn eq(&self, o: &Self) -> bool {
        self.bytes() == o.bytes()
    }
}

impl Eq for TermKey {}

// Hashes as its bytes do, so a map keyed by `TermKey` is searched by `&[u8]`.
impl std::hash::Hash for TermKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl PartialOrd for TermKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for TermKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(o.bytes())
    }
}

// ================================================================ postings

/// Largest block of a big posting list: an insert or removal moves at
/// most this many ids.
const BLOCK: usize = 512;

/// The members holding one word in one field: ascending ids, each once.
/// Most words belong to one member, so that case holds no allocation.
#[derive(Clone, Debug)]
pub(crate) enum Postings {
    One(u32),
    /// 2 ..= `BLOCK` ids.
    List(Vec<u32>),
    /// Sorted blocks of 1 ..= `BLOCK` ids each, for common words.
    Blocks(Box<Blocks>),
}

#[derive(Clone, Debug)]
pub(crate) struct Blocks {
    len: usize,
    blocks: Vec<Vec<u32>>,
}

impl Blocks {
    /// The block `id` is in or goes in: the first whose last id is not
    /// below it, or the last block for an id past them all.
    #[inline]
    fn block_for(&self, id: u32) -> usize {
        let last = self.blocks.len() - 1;
        self.blocks
            .partition_point(|blk| blk.last().is_some_and(|&l| l < id))
            .min(last)
    }
}

fn sorted_insert(v: &mut Vec<u32>, id: u32) {
    let at = v.partition_point(|&x| x < id);
    debug_assert!(v.get(at) != Some(&id), "posting already present");
    if v.len() == v.capacity() {
        // Grow by a quarter, not by doubling: posting lists are most of
        // the index's memory.
        v.reserve_exact((v.len() / 4).max(2));
    }
    v.insert(at, id);
}

fn sorted_remove(v: &mut Vec<u32>, id: u32) -> bool {
    match v.binary_search(&id) {
        Ok(at) => {
            v.remove(at);
            if v.capacity() > 2 * v.len() + 8 {
                v.shrink_to(v.len() + v.len() / 4);
            }
            true
        }
        Err(_) => false,
    }
}

impl Postings {
    fn from_sorted(mut ids: Vec<u32>) -> Postings {
        match ids.len() {
            0 => unreachable!("a term without members"),
            1 => Postings::One(ids[0]),
            n if n <= BLOCK => {
                ids.shrink_to_fit();
                Postings::List(ids)
            }
            n => Postings::Blocks(Box::new(Blocks {
                len: n,
                blocks: ids.chunks(BLOCK * 3 / 4).map(<[u32]>::to_vec).collect(),
            })),
        }
    }

    /// The postings of `ids` (sorted, distinct, not empty), allocated to fit.
    fn from_slice(ids: &[u32]) -> Postings {
        match ids {
            [] => unreachable!("a term without members"),
            [one] => Postings::One(*one),
            _ => Postings::from_sorted(ids.to_vec()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Postings::One(_) => 1,
            Postings::List(v) => v.len(),
            Postings::Blocks(b) => b.len,
        }
    }

    fn insert(&mut self, id: u32) {
        match self {
            Postings::One(x) => {
                debug_assert!(*x != id);
                let (a, b) = if *x < id { (*x, id) } else { (id, *x) };
                *self = Postings::List(vec![a, b]);
            }
            Postings::List(v) => {
                sorted_insert(v, id);
                if v.len() > BLOCK {
                    let v = std::mem::take(v);
                    *self = Postings::from_sorted(v);
                }
            }
            Postings::Blocks(b) => {
                let i = b.block_for(id);
                sorted_insert(&mut b.blocks[i], id);
                b.len += 1;
                if b.blocks[i].len() > BLOCK {
                    let tail = b.blocks[i].split_off(BLOCK / 2);
                    b.blocks[i].shrink_to_fit();
                    b.blocks.insert(i + 1, tail);
                }
            }
        }
    }

    /// Removes `id`; returns true when the list is left empty.
    fn remove(&mut self, id: u32) -> bool {
        match self {
            Postings::One(x) => {
                debug_assert_eq!(*x, id);
                *x == id
            }
            Postings::List(v) => {
                sorted_remove(v, id);
                if v.len() == 1 {
                    *self = Postings::One(v[0]);
                }
                false
            }
            Postings::Blocks(b) => {
                let i = b.block_for(id);
                if sorted_remove(&mut b.blocks[i], id) {
                    b.len -= 1;
                }
                if b.blocks[i].is_empty() {
                    b.blocks.remove(i);
                } else if b.blocks[i].len() < BLOCK / 4 {
                    // Merge a thin block into a neighbour with room.
                    let j = if i + 1 < b.blocks.len() {
                        i + 1
                    } else {
                        i.wrapping_sub(1)
                    };
                    if j < b.blocks.len() && b.blocks[i].len() + b.blocks[j].len() <= BLOCK {
                        let (lo, hi) = (i.min(j), i.max(j));
                        let moved = b.blocks.remove(hi);
                        b.blocks[lo].extend_from_slice(&moved);
                    }
                }
                if b.len <= BLOCK / 4 {
                    let all: Vec<u32> = b.blocks.concat();
                    *self = Postings::from_sorted(all);
                }
                false
            }
        }
    }

    /// Whether `id` is in the list (binary search).
    pub(crate) fn contains(&self, id: u32) -> bool {
        match self {
            Postings::One(x) => *x == id,
            Postings::List(v) => v.binary_search(&id).is_ok(),
            Postings::Blocks(b) => {
                let i = b
                    .blocks
                    .partition_point(|blk| blk.last().is_some_and(|&l| l < id));
                b.blocks
                    .get(i)
                    .is_some_and(|blk| blk.binary_search(&id).is_ok())
            }
        }
    }

    #[inline]
    pub(crate) fn for_each(&self, mut f: impl FnMut(u32)) {
        match self {
            Postings::One(x) => f(*x),
            Postings::List(v) => v.iter().for_each(|&x| f(x)),
            Postings::Blocks(b) => b.blocks.iter().flatten().for_each(|&x| f(x)),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Postings::One(_) => 0,
            Postings::List(v) => v.capacity() * 4,
            Postings::Blocks(b) => {
                size_of::<Blocks>()
                    + b.blocks.capacity() * size_of::<Vec<u32>>()
                    + b.blocks.iter().map(|v| v.capacity() * 4).sum::<usize>()
            }
        }
    }

    #[cfg(test)]
    fn to_vec(&self) -> Vec<u32> {
        let mut v = Vec::new();
        self.for_each(|x| v.push(x));
        v
    }
}

// ========================================================= forward records

const ARENA_CHUNK: usize = 1 << 20;
const LOC_CHUNK: usize = 4096;

/// A record's place: `chunk << 40 | offset << 20 | len`; 0 = no words.
type Loc = u64;

#[inline]
fn loc_parts(loc: Loc) -> (usize, usize, usize) {
    (
        (loc >> 40) as usize,
        ((loc >> 20) & 0xf_ffff) as usize,
        (loc & 0xf_ffff) as usize,
    )
}

/// The word occurrences of a record: `(field, word)`.
#[inline]
pub(crate) fn record_words(rec: &[u8]) -> impl Iterator<Item = (u8, &[u8])> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i + 2 > rec.len() {
            return None;
        }
        let (f, l) = (rec[i], rec[i + 1] as usize);
        let w = &rec[i + 2..i + 2 + l];
        i += 2 + l;
        Some((f, w))
    })
}

/// The first char of a non-empty UTF-8 word.
#[inline]
fn first_char(w: &[u8]) -> char {
    if w[0] < 0x80 {
        return w[0] as char;
    }
    let n = match w[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    std::str::from_utf8(&w[..n.min(w.len())])
        .ok()
        .and_then(|s| s.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

#[derive(Clone, Default)]
struct Forward {
    arena: Vec<Vec<u8>>,
    /// Per member id, in chunks of `LOC_CHUNK` (the first grows from small).
    locs: Vec<Vec<Loc>>,
    live_bytes: usize,
    garbage_bytes: usize,
}

impl Forward {
    #[inline]
    fn loc(&self, id: u32) -> Loc {
        let i = id as usize;
        self.locs
            .get(i / LOC_CHUNK)
            .and_then(|c| c.get(i % LOC_CHUNK))
            .copied()
            .unwrap_or(0)
    }

    fn set_loc(&mut self, id: u32, loc: Loc) {
        let i = id as usize;
        let (c, o) = (i / LOC_CHUNK, i % LOC_CHUNK);
        while self.locs.len() <= c {
            self.locs.push(Vec::new());
        }
        let chunk = &mut self.locs[c];
        if chunk.len() <= o {
            if loc == 0 {
                return;
            }
            let want = if c == 0 {
                (o + 1).next_power_of_two().clamp(16, LOC_CHUNK)
            } else {
                LOC_CHUNK
            };
            chunk.reserve_exact(want - chunk.len());
            chunk.resize(want, 0);
        }
        chunk[o] = loc;
    }

    #[inline]
    fn get(&self, id: u32) -> &[u8] {
        let loc = self.loc(id);
        if loc == 0 {
            return &[];
        }
        let (c, off, len) = loc_parts(loc);
        &self.arena[c][off..off + len]
    }

    /// Starts loading where `id`'s record is.
    #[inline]
    fn prefetch_loc(&self, id: u32) {
        let i = id as usize;
        if let Some(l) = self
            .locs
            .get(i / LOC_CHUNK)
            .and_then(|c| c.get(i % LOC_CHUNK))
        {
            crate::tree::prefetch_bytes(l, 8);
        }
    }

    /// Starts loading `id`'s record (its location should be cached).
    #[inline]
    fn prefetch_rec(&self, id: u32) {
        let loc = self.loc(id);
        if loc != 0 {
            let (c, off, len) = loc_parts(loc);
            crate::tree::prefetch_bytes(&self.arena[c][off], len.min(128));
        }
    }

    fn store(&mut self, rec: &[u8]) -> Loc {
        if rec.is_empty() {
            return 0;
        }
        debug_assert!(rec.len() < ARENA_CHUNK);
        let ci = arena_room::<ARENA_CHUNK>(&mut self.arena, rec.len());
        let chunk = &mut self.arena[ci];
        let off = chunk.len();
        chunk.extend_from_slice(rec);
        self.live_bytes += rec.len();
        ((ci as u64) << 40) | ((off as u64) << 20) | rec.len() as u64
    }

    /// Replaces `id`'s record (`rec` empty: it has none).
    fn put(&mut self, id: u32, rec: &[u8]) {
        let old = self.get(id).len();
        self.live_bytes -= old;
        self.garbage_bytes += old;
        let loc = self.store(rec);
        self.set_loc(id, loc);
        if self.garbage_bytes > 4 * ARENA_CHUNK && self.garbage_bytes > self.live_bytes {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let old = std::mem::take(&mut self.arena);
        self.live_bytes = 0;
        self.garbage_bytes = 0;
        for c in 0..self.locs.len() {
            for o in 0..self.locs[c].len() {
                let loc = self.locs[c][o];
                if loc != 0 {
                    let (ac, off, len) = loc_parts(loc);
                    let new = self.store(&old[ac][off..off + len]);
                    self.locs[c][o] = new;
                }
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        self.arena.iter().map(Vec::capacity).sum::<usize>()
            + self.arena.capacity() * size_of::<Vec<u8>>()
            + self.locs.iter().map(|c| c.capacity() * 8).sum::<usize>()
            + self.locs.capacity() * size_of::<Vec<Loc>>()
    }
}

// ================================================================== planes

/// A char is given a plane once at least 1/`PROMOTE_DIV` of the members
/// have a word starting with it, and loses it below 1/`DEMOTE_DIV`.
const PROMOTE_DIV: usize = 32;
const DEMOTE_DIV: usize = 128;
/// Planes kept at most (each costs 2 bits a member).
pub(crate) const DEFAULT_MAX_PLANES: usize = 48;

/// 2-bit saturating counts, per member, of its words starting with `ch`,
/// with a summary per level so sparse levels are enumerated without
/// reading every word, and the members of levels ≥ 2 in rank order.
#[derive(Clone)]
pub(crate) struct Plane {
    pub ch: char,
    /// Per 64 ids: `[low bits, high bits]`.
    bits: Vec<[u64; 2]>,
    /// Per level `k` (1..=3), bit `w` of `sum[k - 1]`: whether any of the
    /// members `64w..64w+64` has at least `k` such words.
    sum: [Vec<u64>; 3],
    /// Members whose (saturated) count is 1, 2, 3; `[0]` unused.
    hist: [u64; 4],
    /// The members with at least 2 such words, `(tree key, id)` in the
    /// board's order (the ranked level): a page of `a* a` is its first
    /// entries. Level 1 has none: it holds too many members to be worth
    /// its memory, and a walk of the board finds its pages quickly.
    ranked: CountedTree<u32>,
}

impl Plane {
    fn new(ch: char, words: usize) -> Plane {
        let mut p = Plane {
            ch,
            bits: Vec::new(),
            sum: [Vec::new(), Vec::new(), Vec::new()],
            hist: [0; 4],
            ranked: CountedTree::new(),
        };
        p.grow(words);
        p
    }

    /// Makes room for `words` × 64 ids (growing by an eighth at least).
    fn grow(&mut self, words: usize) {
        if self.bits.len() >= words {
            return;
        }
        let want = words.max(self.bits.len() + self.bits.len() / 8);
        self.bits.reserve_exact(want - self.bits.len());
        self.bits.resize(want, [0; 2]);
        for s in &mut self.sum {
            let n = want.div_ceil(64);
            s.reserve_exact(n.saturating_sub(s.len()));
            s.resize(n, 0);
        }
    }

    /// The bits of the 64 members `64w..64w+64` with at least `k` (1..=3)
    /// words starting with `ch`.
    #[inline]
    pub fn mask(&self, w: usize, k: u8) -> u64 {
        let [lo, hi] = self.bits[w];
        match k {
            1 => lo | hi,
            2 => hi,
            _ => lo & hi,
        }
    }

    /// Bit `j` of the result: whether word `64s + j` of level `k` has a
    /// member set.
    #[inline]
    pub fn summary(&self, s: usize, k: u8) -> u64 {
        self.sum[k as usize - 1][s]
    }

    /// Summary words (one per 64 bitset words).
    pub fn summary_len(&self) -> usize {
        self.sum[0].len()
    }

    #[inline]
    pub fn at_least(&self, id: u32, k: u8) -> bool {
        (self.mask(id as usize / 64, k) >> (id % 64)) & 1 != 0
    }

    /// Members with at least `k` (1..=3) words starting with `ch`.
    pub fn count_at_least(&self, k: u8) -> u64 {
        self.hist[k as usize..].iter().sum()
    }

    fn value(&self, id: u32) -> u8 {
        let [lo, hi] = self.bits[id as usize / 64];
        let b = id % 64;
        (((hi >> b) & 1) << 1 | ((lo >> b) & 1)) as u8
    }

    fn set(&mut self, id: u32, count: u32) {
        let new = count.min(3) as u8;
        let old = self.value(id);
        if new == old {
            return;
        }
        if old > 0 {
            self.hist[old as usize] -= 1;
        }
        if new > 0 {
            self.hist[new as usize] += 1;
        }
        let w = id as usize / 64;
        let word = &mut self.bits[w];
        let b = 1u64 << (id % 64);
        word[0] = (word[0] & !b) | if new & 1 != 0 { b } else { 0 };
        word[1] = (word[1] & !b) | if new & 2 != 0 { b } else { 0 };
        let [lo, hi] = self.bits[w];
        let bit = 1u64 << (w % 64);
        for (s, m) in self.sum.iter_mut().zip([lo | hi, hi, lo & hi]) {
            let x = &mut s[w / 64];
            if m != 0 {
                *x |= bit;
            } else {
                *x &= !bit;
            }
        }
    }

    /// The members with at least 2 words starting with `ch`, in the
    /// board's order.
    pub fn ranked(&self) -> &CountedTree<u32> {
        &self.ranked
    }

    /// Fills the ranked level from the counts (a new plane).
    fn rank_all(&mut self, ord: &TreeOrder) {
        let mut v: Vec<(u64, u32)> = Vec::with_capacity(self.count_at_least(2) as usize);
        for w in 0..self.bits.len() {
            let mut m = self.mask(w, 2);
            while m != 0 {
                let id = (w * 64) as u32 + m.trailing_zeros();
                m &= m - 1;
                v.push((ord.key(id), id));
            }
        }
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| ord.tie(a.1, b.1)));
        self.ranked = CountedTree::from_sorted(v);
    }

    fn heap_bytes(&self) -> usize {
        self.bits.capacity() * 16
            + self.sum.iter().map(|s| s.capacity() * 8).sum::<usize>()
            + self.ranked.heap_bytes()
    }
}

#[derive(Clone)]
struct Planes {
    /// Per first char: how many members have a word starting with it.
    firsts: hashbrown::HashMap<char, u32>,
    tracked: Vec<Plane>,
    /// The member count at the last review of which chars have planes.
    reviewed_at: usize,
    max: usize,
}

/// `(first char, number of words)` of a record, few entries.
type CharCounts = Vec<(char, u32)>;

fn char_counts(rec: &[u8], out: &mut CharCounts) {
    out.clear();
    for (_, w) in record_words(rec) {
        let c = first_char(w);
        match out.iter_mut().find(|e| e.0 == c) {
            Some(e) => e.1 += 1,
            None => out.push((c, 1)),
        }
    }
}

// =================================================================== index

#[derive(Clone)]
pub(crate) struct SearchIndex {
    fields: Vec<Field>,
    dict: BTreeMap<TermKey, Postings>,
    fwd: Forward,
    planes: Planes,
    /// Bit per member id: whether the member is on some plane's ranked
    /// level, so a score change of any other member costs one bit test.
    ranked_ids: Vec<u64>,
    len: usize,
    /// One more than the highest member id indexed so far: the size of
    /// per-id bitsets.
    id_cap: usize,
}

/// Members below which a bulk build stays on one thread (starting threads
/// and merging shares would cost more than it saves).
const PARALLEL_BUILD_MIN: usize = 50_000;
/// Threads a bulk build uses at most.
const MAX_BUILD_THREADS: usize = 8;

/// How many shares (threads) a bulk build of `members` members uses: one
/// per available core for a large board, one below
/// [`PARALLEL_BUILD_MIN`].
pub(crate) fn build_shares(members: usize) -> usize {
    if members < PARALLEL_BUILD_MIN {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_BUILD_THREADS)
}

/// One share of a bulk build, tokenised ([`SearchIndex::gather`]).
struct Gathered {
    /// Each distinct term of the share and its number within the share.
    terms: hashbrown::HashMap<TermKey, u32>,
    /// `(term, id)` for each distinct term of each member, ids ascending.
    occ: Vec<(u32, u32)>,
    /// The members' records, back to back, and each one's `(id, length)`.
    recs: Vec<u8>,
    lens: Vec<(u32, u32)>,
    /// Per first char: how many of the share's members have a word
    /// starting with it.
    firsts: hashbrown::HashMap<char, u32>,
}

/// `word ++ [0, field]`.
fn term_key(buf: &mut Vec<u8>, field: u8, word: &[u8]) {
    buf.clear();
    buf.extend_from_slice(word);
    buf.push(0);
    buf.push(field);
}

/// The sorted distinct `(field, word)` pairs of a record.
fn distinct_terms(rec: &[u8]) -> Vec<(u8, &[u8])> {
    let mut v: Vec<(u8, &[u8])> = record_words(rec).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl SearchIndex {
    fn empty(search_fields: &[String], max_planes: usize) -> SearchIndex {
        SearchIndex {
            fields: search_fields
                .iter()
                .map(|f| Field::from_config(f))
                .collect(),
            dict: BTreeMap::new(),
            fwd: Forward::default(),
            planes: Planes {
                firsts: hashbrown::HashMap::new(),
                tracked: Vec::new(),
                reviewed_at: 0,
                max: max_planes,
            },
            ranked_ids: Vec::new(),
            len: 0,
            id_cap: 0,
        }
    }

    /// Indexes the members `ids` (any order) in one pass over their text,
    /// then bulk-builds the dictionary from its terms sorted.
    ///
    /// Each word occurrence is interned to a dense term number through a
    /// map whose keys are inline, and noted as a `(term, id)` pair; a
    /// counting sort then groups the pairs by term (ids arrive ascending,
    /// so each term's ids stay sorted). A map from boxed keys to growing
    /// `Vec`s, as before, visited three scattered cache lines per
    /// occurrence (bucket, key, list tail): most of a 1M build.
    ///
    /// With `shares` > 1 (see [`build_shares`]), the ids are cut into that
    /// many ascending shares, each tokenised and interned on its own
    /// thread ([`SearchIndex::gather`]: the text pass is most of a build
    /// and needs nothing from the other shares); the shares' term numbers
    /// are then mapped onto one numbering in share order, so every term's
    /// ids still come out ascending and the index is the one a single
    /// thread builds (tested).
    ///
    /// `ord` (the board's order) fills the planes' ranked levels.
    pub(crate) fn build(
        search_fields: &[String],
        max_planes: usize,
        members: &Members,
        mut ids: Vec<u32>,
        ord: &TreeOrder,
        shares: usize,
    ) -> SearchIndex {
        let mut ix = SearchIndex::empty(search_fields, max_planes);
        ids.sort_unstable();
        let shares = shares.min(ids.len()).max(1);
        let extras = members.extras_by_id(ids.last().map_or(0, |&m| m as usize + 1));
        let parts: Vec<Gathered> = if shares == 1 {
            vec![ix.gather(members, &extras, &ids)]
        } else {
            let (ix, extras) = (&ix, &extras[..]);
            std::thread::scope(|s| {
                let handles: Vec<_> = ids
                    .chunks(ids.len().div_ceil(shares))
                    .map(|share| s.spawn(move || ix.gather(members, extras, share)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            })
        };
        drop(extras);
        ix.len = ids.len();
        ix.id_cap = ids.last().map_or(0, |&m| m as usize + 1);
        // Sized with `id_cap` here, as `grow_ids` does for members added
        // one by one: `review` may add no plane and leave it untouched,
        // and a later member reusing an id below `id_cap` never grows it.
        ix.ranked_ids = vec![0; ix.id_cap.div_ceil(64)];
        drop(ids);
        // One term numbering: the first share's, then each later share's
        // new terms appended.
        let mut parts = parts.into_iter();
        let first = parts.next().expect("at least one share");
        let mut terms = first.terms;
        let mut shares = vec![(first.occ, first.recs, first.lens, Vec::new())];
        ix.planes.firsts = first.firsts;
        for p in parts {
            let mut remap = vec![0u32; p.terms.len()];
            for (k, t) in p.terms {
                let next = terms.len() as u32;
                remap[t as usize] = *terms.entry(k).or_insert(next);
            }
            for (c, k) in p.firsts {
                *ix.planes.firsts.entry(c).or_insert(0) += k;
            }
            shares.push((p.occ, p.recs, p.lens, remap));
        }
        let global = |remap: &[u32], t: u32| -> usize {
            if remap.is_empty() {
                t as usize
            } else {
                remap[t as usize] as usize
            }
        };
        let mut start = vec![0usize; terms.len() + 1];
        for (occ, _, _, remap) in &shares {
            for &(t, _) in occ {
                start[global(remap, t) + 1] += 1;
            }
        }
        for t in 0..terms.len() {
            start[t + 1] += start[t];
        }
        let mut flat = vec![0u32; start[terms.len()]];
        let mut fill = start.clone();
        for (occ, recs, lens, remap) in shares {
            for &(t, id) in &occ {
                let f = &mut fill[global(&remap, t)];
                flat[*f] = id;
                *f += 1;
            }
            drop(occ);
            let mut off = 0;
            for (id, len) in lens {
                let end = off + len as usize;
                let loc = ix.fwd.store(&recs[off..end]);
                ix.fwd.set_loc(id, loc);
                off = end;
            }
        }
        drop(fill);
        let mut sorted: Vec<(TermKey, u32)> = terms.into_iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        ix.dict = sorted
            .into_iter()
            .map(|(k, t)| {
                let t = t as usize;
                (k, Postings::from_slice(&flat[start[t]..start[t + 1]]))
            })
            .collect();
        ix.review(ord);
        ix
    }

    /// Tokenises the members `ids` (ascending): their records back to
    /// back, their distinct terms numbered in order of first appearance,
    /// one `(term, id)` pair per distinct term of a member, and the count
    /// of members per first char. Reads only the fields of `self`.
    fn gather(&self, members: &Members, extras: &[Option<&Extra>], ids: &[u32]) -> Gathered {
        let mut g = Gathered {
            terms: hashbrown::HashMap::new(),
            occ: Vec::with_capacity(ids.len() * 2),
            recs: Vec::with_capacity(ids.len() * 16),
            lens: Vec::with_capacity(ids.len()),
            firsts: hashbrown::HashMap::new(),
        };
        // Per term number: the last member noted (a member holding a word
        // twice in a field is one posting).
        let mut last: Vec<u32> = Vec::new();
        let mut rec = Vec::new();
        let mut buf = String::new();
        let mut key = Vec::new();
        let mut counts = CharCounts::new();
        // Most first chars are ASCII: counted without a hash lookup.
        let mut ascii_firsts = [0u32; 128];
        for &id in ids {
            self.record_with(members, id, extras[id as usize], &mut rec, &mut buf);
            for (f, w) in record_words(&rec) {
                term_key(&mut key, f, w);
                match g.terms.get(&key[..]) {
                    Some(&t) => {
                        if last[t as usize] != id {
                            last[t as usize] = id;
                            g.occ.push((t, id));
                        }
                    }
                    None => {
                        let t = last.len() as u32;
                        g.terms.insert(TermKey::new(&key), t);
                        last.push(id);
                        g.occ.push((t, id));
                    }
                }
            }
            char_counts(&rec, &mut counts);
            for &(c, _) in &counts {
                match ascii_firsts.get_mut(c as usize) {
                    Some(k) => *k += 1,
                    None => *g.firsts.entry(c).or_insert(0) += 1,
                }
            }
            g.recs.extend_from_slice(&rec);
            g.lens.push((id, rec.len() as u32));
        }
        for (c, &k) in ascii_firsts.iter().enumerate() {
            if k > 0 {
                g.firsts.insert(char::from(c as u8), k);
            }
        }
        g
    }

    pub(crate) fn new(search_fields: &[String], max_planes: usize) -> SearchIndex {
        SearchIndex::empty(search_fields, max_planes)
    }

    pub(crate) fn max_planes(&self) -> usize {
        self.planes.max
    }

    /// Whether a change of a member's display name / data can change
    /// what is indexed. (A name also replaces the id as the indexed name.)
    pub(crate) fn watches(&self, name: bool, data: bool) -> bool {
        self.fields.iter().any(|f| match f {
            Field::Name => name,
            Field::Data(_) => data,
        })
    }

    /// The record of member `id`: its words in every field.
    fn record_of(&self, members: &Members, id: u32, out: &mut Vec<u8>, buf: &mut String) {
        self.record_with(members, id, members.extra(id), out, buf);
    }

    /// [`SearchIndex::record_of`] with the member's `extra` already looked up.
    fn record_with(
        &self,
        members: &Members,
        id: u32,
        extra: Option<&Extra>,
        out: &mut Vec<u8>,
        buf: &mut String,
    ) {
        out.clear();
        let mut data: Option<Option<serde_json::Map<String, serde_json::Value>>> = None;
        let mut n = 0usize;
        for (fi, field) in self.fields.iter().enumerate() {
            let mut push = |w: &str| {
                if n < MAX_MEMBER_WORDS {
                    let w = clip(w);
                    out.push(fi as u8);
                    out.push(w.len() as u8);
                    out.extend_from_slice(w.as_bytes());
                    n += 1;
                }
            };
            match field {
                Field::Name => match extra.and_then(|e| e.name.as_deref()) {
                    Some(name) => for_each_word(name, buf, &mut push),
                    None => {
                        let id_text = String::from_utf8_lossy(members.bytes(id));
                        for_each_word(&id_text, buf, &mut push)
                    }
                },
                Field::Data(key) => {
                    let obj = data.get_or_insert_with(|| {
                        extra
                            .and_then(|e| e.data.as_deref())
                            .and_then(|d| serde_json::from_str(d).ok())
                    });
                    match obj.as_ref().and_then(|o| o.get(&**key)) {
                        Some(serde_json::Value::String(s)) => for_each_word(s, buf, &mut push),
                        Some(serde_json::Value::Number(x)) => {
                            for_each_word(&x.to_string(), buf, &mut push)
                        }
                        Some(serde_json::Value::Bool(b)) => {
                            for_each_word(if *b { "true" } else { "false" }, buf, &mut push)
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn grow_ids(&mut self, id: u32) {
        if id as usize >= self.id_cap {
            self.id_cap = id as usize + 1;
            let words = self.id_cap.div_ceil(64);
            for p in &mut self.planes.tracked {
                p.grow(words);
            }
            if self.ranked_ids.len() < words {
                let want = words.max(self.ranked_ids.len() + self.ranked_ids.len() / 8);
                self.ranked_ids.resize(want, 0);
            }
        }
    }

    #[inline]
    fn is_ranked(&self, id: u32) -> bool {
        self.ranked_ids
            .get(id as usize / 64)
            .is_some_and(|w| (w >> (id % 64)) & 1 != 0)
    }

    fn set_ranked(&mut self, id: u32, on: bool) {
        let w = id as usize / 64;
        if on && w >= self.ranked_ids.len() {
            self.ranked_ids.resize(w + 1, 0);
        }
        if let Some(w) = self.ranked_ids.get_mut(w) {
            let b = 1u64 << (id % 64);
            if on {
                *w |= b;
            } else {
                *w &= !b;
            }
        }
    }

    /// Sets every member's ranked bit from the planes (after planes came
    /// or went).
    fn rederive_ranked_ids(&mut self) {
        let words = self.id_cap.div_ceil(64).max(self.ranked_ids.len());
        self.ranked_ids.clear();
        self.ranked_ids.resize(words, 0);
        for p in &self.planes.tracked {
            for (w, r) in self.ranked_ids.iter_mut().enumerate() {
                if w < p.bits.len() {
                    *r |= p.mask(w, 2);
                }
            }
        }
    }

    /// Sets member `id`'s count in plane `pi`, moving it onto or off the
    /// plane's ranked level (at its current key) as the count crosses 2.
    fn set_plane(&mut self, pi: usize, id: u32, count: u32, ord: &TreeOrder) {
        let p = &mut self.planes.tracked[pi];
        let was = p.value(id) >= 2;
        p.set(id, count);
        let is = p.value(id) >= 2;
        if was != is {
            let key = ord.key(id);
            if is {
                p.ranked.insert(key, id, ord);
            } else {
                let gone = p.ranked.remove(key, id, ord);
                debug_assert!(gone.is_some(), "a ranked member was not in its level");
            }
        }
    }

    /// Calls `f` with each plane on whose ranked level member `id` is.
    fn for_each_ranked_plane(&mut self, id: u32, mut f: impl FnMut(&mut Plane)) {
        if !self.is_ranked(id) {
            return;
        }
        let mut counts = CharCounts::new();
        char_counts(self.fwd.get(id), &mut counts);
        for &(c, k) in &counts {
            if k >= 2 {
                if let Some(p) = self.planes.tracked.iter_mut().find(|p| p.ch == c) {
                    f(p);
                }
            }
        }
    }

    /// Member `id`'s score or sequence is about to change: takes it off
    /// the ranked levels (at its old key); [`SearchIndex::rerank`] puts it
    /// back once the change is made.
    pub(crate) fn unrank(&mut self, id: u32, ord: &TreeOrder) {
        self.for_each_ranked_plane(id, |p| {
            let gone = p.ranked.remove(ord.key(id), id, ord);
            debug_assert!(gone.is_some(), "a ranked member was not in its level");
        });
    }

    /// Puts member `id` back on its ranked levels at its new key.
    pub(crate) fn rerank(&mut self, id: u32, ord: &TreeOrder) {
        self.for_each_ranked_plane(id, |p| {
            p.ranked.insert(ord.key(id), id, ord);
        });
    }

    fn add_terms(&mut self, id: u32, terms: &[(u8, &[u8])]) {
        let mut key = Vec::new();
        for &(f, w) in terms {
            term_key(&mut key, f, w);
            match self.dict.get_mut(&key[..]) {
                Some(p) => p.insert(id),
                None => {
                    self.dict.insert(TermKey::new(&key), Postings::One(id));
                }
            }
        }
    }

    fn drop_terms(&mut self, id: u32, terms: &[(u8, &[u8])]) {
        let mut key = Vec::new();
        for &(f, w) in terms {
            term_key(&mut key, f, w);
            if let Some(p) = self.dict.get_mut(&key[..]) {
                if p.remove(id) {
                    self.dict.remove(&key[..]);
                }
            }
        }
    }

    /// Moves member `id` from record `old` to record `new` (either may be
    /// empty) in the dictionary and the planes; the forward record must
    /// already be `new`, and the member's score set (its ranked levels).
    fn retarget(&mut self, id: u32, old: &[u8], new: &[u8], ord: &TreeOrder) {
        let (o, n) = (distinct_terms(old), distinct_terms(new));
        let gone: Vec<(u8, &[u8])> = o
            .iter()
            .filter(|t| n.binary_search(t).is_err())
            .copied()
            .collect();
        let came: Vec<(u8, &[u8])> = n
            .iter()
            .filter(|t| o.binary_search(t).is_err())
            .copied()
            .collect();
        self.drop_terms(id, &gone);
        self.add_terms(id, &came);
        let (mut oc, mut nc) = (CharCounts::new(), CharCounts::new());
        char_counts(old, &mut oc);
        char_counts(new, &mut nc);
        let mut chars: Vec<char> = oc.iter().chain(nc.iter()).map(|e| e.0).collect();
        chars.sort_unstable();
        chars.dedup();
        let mut promote = Vec::new();
        for c in chars {
            let was = oc.iter().find(|e| e.0 == c).map_or(0, |e| e.1);
            let now = nc.iter().find(|e| e.0 == c).map_or(0, |e| e.1);
            if (was > 0) != (now > 0) {
                let e = self.planes.firsts.entry(c).or_insert(0);
                if now > 0 {
                    *e += 1;
                    promote.push(c);
                } else {
                    *e -= 1;
                    if *e == 0 {
                        self.planes.firsts.remove(&c);
                    }
                }
            }
            if let Some(pi) = self.plane_of(c) {
                self.set_plane(pi, id, now, ord);
            }
        }
        let threshold = (self.len / PROMOTE_DIV).max(1);
        for c in promote {
            if self.planes.tracked.len() < self.planes.max
                && self
                    .planes
                    .firsts
                    .get(&c)
                    .is_some_and(|&k| k as usize >= threshold)
                && !self.planes.tracked.iter().any(|p| p.ch == c)
            {
                self.promote(c, ord);
            }
        }
        let ranked = nc
            .iter()
            .any(|&(c, k)| k >= 2 && self.plane_of(c).is_some());
        self.set_ranked(id, ranked);
    }

    /// Gives `c` a plane, filled from every record.
    fn promote(&mut self, c: char, ord: &TreeOrder) {
        let mut p = Plane::new(c, self.id_cap.div_ceil(64));
        for id in 0..self.id_cap as u32 {
            let rec = self.fwd.get(id);
            if !rec.is_empty() {
                let k = record_words(rec)
                    .filter(|(_, w)| first_char(w) == c)
                    .count();
                if k > 0 {
                    p.set(id, k as u32);
                }
            }
        }
        p.rank_all(ord);
        if self.ranked_ids.len() < p.bits.len() {
            self.ranked_ids.resize(p.bits.len(), 0);
        }
        for w in 0..p.bits.len() {
            self.ranked_ids[w] |= p.mask(w, 2);
        }
        self.planes.tracked.push(p);
    }

    /// Re-decides which chars have planes, once the member count has
    /// doubled or halved since the last time: drops the rare ones, adds
    /// the frequent ones (most frequent first).
    fn review(&mut self, ord: &TreeOrder) {
        let n = self.len;
        self.planes.reviewed_at = n;
        let floor = n / DEMOTE_DIV;
        let firsts = &self.planes.firsts;
        let had = self.planes.tracked.len();
        self.planes.tracked.retain(|p| {
            firsts
                .get(&p.ch)
                .is_some_and(|&k| k as usize >= floor.max(1))
        });
        let dropped = self.planes.tracked.len() < had;
        let threshold = (n / PROMOTE_DIV).max(1);
        let mut want: Vec<(u32, char)> = firsts
            .iter()
            .filter(|&(c, &k)| {
                k as usize >= threshold && !self.planes.tracked.iter().any(|p| p.ch == *c)
            })
            .map(|(&c, &k)| (k, c))
            .collect();
        want.sort_unstable_by(|a, b| b.cmp(a));
        want.truncate(self.planes.max.saturating_sub(self.planes.tracked.len()));
        if want.is_empty() {
            if dropped {
                self.rederive_ranked_ids();
            }
            return;
        }
        // All new planes in one pass over the records.
        let words = self.id_cap.div_ceil(64);
        let first_new = self.planes.tracked.len();
        self.planes
            .tracked
            .extend(want.iter().map(|&(_, c)| Plane::new(c, words)));
        let mut counts = CharCounts::new();
        for id in 0..self.id_cap as u32 {
            let rec = self.fwd.get(id);
            if rec.is_empty() {
                continue;
            }
            char_counts(rec, &mut counts);
            for &(c, k) in &counts {
                if let Some(p) = self.planes.tracked[first_new..]
                    .iter_mut()
                    .find(|p| p.ch == c)
                {
                    p.set(id, k);
                }
            }
        }
        for p in &mut self.planes.tracked[first_new..] {
            p.rank_all(ord);
        }
        self.rederive_ranked_ids();
    }

    fn maybe_review(&mut self, ord: &TreeOrder) {
        let at = self.planes.reviewed_at;
        if self.len >= 2 * at.max(8) || self.len < at / 2 {
            self.review(ord);
        }
    }

    // ------------------------------------------------------------ writes

    /// Indexes a member that is not indexed yet (its score set).
    pub(crate) fn insert(&mut self, id: u32, members: &Members, ord: &TreeOrder) {
        debug_assert!(self.fwd.get(id).is_empty());
        let mut rec = Vec::new();
        self.record_of(members, id, &mut rec, &mut String::new());
        self.grow_ids(id);
        self.len += 1;
        self.fwd.put(id, &rec);
        self.retarget(id, &[], &rec, ord);
        self.maybe_review(ord);
    }

    /// Forgets a member (before the member table frees its id, while its
    /// score is still set).
    pub(crate) fn remove(&mut self, id: u32, ord: &TreeOrder) {
        let old = self.fwd.get(id).to_vec();
        self.fwd.put(id, &[]);
        self.len -= 1;
        self.retarget(id, &old, &[], ord);
        self.maybe_review(ord);
    }

    /// Re-reads a member's indexed text after its name or data changed.
    pub(crate) fn refresh(&mut self, id: u32, members: &Members, ord: &TreeOrder) {
        let mut rec = Vec::new();
        self.record_of(members, id, &mut rec, &mut String::new());
        let old = self.fwd.get(id);
        if old == rec.as_slice() {
            return;
        }
        let old = old.to_vec();
        self.fwd.put(id, &rec);
        self.retarget(id, &old, &rec, ord);
    }

    // ------------------------------------------------------------- reads

    pub(crate) fn id_cap(&self) -> usize {
        self.id_cap
    }

    #[inline]
    pub(crate) fn record(&self, id: u32) -> &[u8] {
        self.fwd.get(id)
    }

    /// Starts loading where member `id`'s record is
    /// ([`SearchIndex::prefetch_record`] next).
    #[inline]
    pub(crate) fn prefetch_loc(&self, id: u32) {
        self.fwd.prefetch_loc(id);
    }

    /// Starts loading member `id`'s record.
    #[inline]
    pub(crate) fn prefetch_record(&self, id: u32) {
        self.fwd.prefetch_rec(id);
    }

    pub(crate) fn planes(&self) -> &[Plane] {
        &self.planes.tracked
    }

    pub(crate) fn plane_of(&self, c: char) -> Option<usize> {
        self.planes.tracked.iter().position(|p| p.ch == c)
    }

    /// The postings of every term `t` can match, visited in key order,
    /// until `f` returns false.
    pub(crate) fn terms<'s>(&'s self, t: &QToken, mut f: impl FnMut(&'s Postings) -> bool) {
        let w = t.word.as_bytes();
        let mut lo = w.to_vec();
        let mut hi = w.to_vec();
        if t.prefix {
            // Every key starting with `w`: up to `w` with its last byte
            // incremented (UTF-8 never holds 0xff, so no carry).
            *hi.last_mut().expect("query words are not empty") += 1;
        } else {
            // Exactly `w` in any field: `w ++ [0, f]`.
            lo.push(0);
            hi.push(1);
        }
        let range = self
            .dict
            .range::<[u8], _>((Bound::Included(&lo[..]), Bound::Excluded(&hi[..])));
        match t.field {
            // No key is read: the postings of one member sit in the node.
            None => {
                for p in range.map(|(_, p)| p) {
                    if !f(p) {
                        return;
                    }
                }
            }
            Some(field) => {
                for (k, p) in range {
                    let k = k.bytes();
                    if k[k.len() - 1] == field && !f(p) {
                        return;
                    }
                }
            }
        }
    }

    /// Heap bytes held (the dictionary's B-tree nodes are estimated from
    /// its entry count: std does not expose them).
    pub(crate) fn heap_bytes(&self) -> usize {
        let entry = size_of::<TermKey>() + size_of::<Postings>();
        // B-tree leaves hold 11 entries plus a small header and are at
        // least half full; bulk-built ones are nearly full.
        let nodes = self.dict.len() * entry * 13 / 10;
        let keys: usize = self.dict.keys().map(TermKey::heap_bytes).sum();
        let postings: usize = self.dict.values().map(Postings::heap_bytes).sum();
        let planes: usize = self
            .planes
            .tracked
            .iter()
            .map(Plane::heap_bytes)
            .sum::<usize>()
            + self.planes.tracked.capacity() * size_of::<Plane>()
            + self.planes.firsts.capacity() * 12
            + self.ranked_ids.capacity() * 8;
        size_of::<SearchIndex>() + nodes + keys + postings + self.fwd.heap_bytes() + planes
    }

    /// Whether `other` holds exactly this index (tests: a build in shares
    /// against one on a single thread): the same terms and postings, the
    /// same record for every id, the same planes with the same counts and
    /// ranked levels. Says what differs first.
    pub(crate) fn same_as(&self, other: &SearchIndex) -> Result<(), String> {
        if (self.len, self.id_cap) != (other.len, other.id_cap) {
            return Err(format!(
                "{} members below id {}, against {} below {}",
                self.len, self.id_cap, other.len, other.id_cap
            ));
        }
        if self.dict.len() != other.dict.len() {
            return Err(format!(
                "{} terms, against {}",
                self.dict.len(),
                other.dict.len()
            ));
        }
        for ((k, p), (ok, op)) in self.dict.iter().zip(&other.dict) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            p.for_each(|x| a.push(x));
            op.for_each(|x| b.push(x));
            if k != ok || a != b || p.len() != op.len() {
                return Err(format!(
                    "term {:?} holds {a:?}, against {:?} holding {b:?}",
                    String::from_utf8_lossy(k.bytes()),
                    String::from_utf8_lossy(ok.bytes())
                ));
            }
        }
        for id in 0..self.id_cap as u32 {
            if self.fwd.get(id) != other.fwd.get(id) {
                return Err(format!("the records of id {id} differ"));
            }
        }
        if self.planes.firsts != other.planes.firsts
            || self.planes.reviewed_at != other.planes.reviewed_at
        {
            return Err("first-char counts differ".into());
        }
        let chars = |ix: &SearchIndex| ix.planes.tracked.iter().map(|p| p.ch).collect::<Vec<_>>();
        if chars(self) != chars(other) {
            return Err(format!(
                "planes {:?}, against {:?}",
                chars(self),
                chars(other)
            ));
        }
        for (p, o) in self.planes.tracked.iter().zip(&other.planes.tracked) {
            if p.bits != o.bits || p.sum != o.sum || p.hist != o.hist {
                return Err(format!("plane {:?} differs", p.ch));
            }
            if !p.ranked.iter().eq(o.ranked.iter()) {
                return Err(format!("the ranked level of plane {:?} differs", p.ch));
            }
        }
        if self.ranked_ids != other.ranked_ids {
            return Err("ranked bits differ".into());
        }
        Ok(())
    }

    /// Checks the dictionary, the records and the planes against each
    /// other (tests): every record word is in its posting list and back,
    /// every plane count is right, and every ranked level holds exactly
    /// the plane's members with 2 or more words, at their keys, in order.
    pub(crate) fn check(&self, live: &[u32], ord: &TreeOrder) -> Result<(), String> {
        let mut expect: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
        let mut sorted = live.to_vec();
        sorted.sort_unstable();
        if sorted.len() != self.len {
            return Err(format!(
                "{} members indexed, {} live",
                self.len,
                sorted.len()
            ));
        }
        let mut key = Vec::new();
        for &id in &sorted {
            for (f, w) in distinct_terms(self.fwd.get(id)) {
                term_key(&mut key, f, w);
                expect.entry(key.clone()).or_default().push(id);
            }
        }
        if expect.len() != self.dict.len() {
            return Err(format!(
                "{} terms expected, {} held",
                expect.len(),
                self.dict.len()
            ));
        }
        for ((k, want), (hk, got)) in expect.iter().zip(&self.dict) {
            let mut v = Vec::new();
            got.for_each(|x| v.push(x));
            if hk.bytes() != &k[..] || &v != want || got.len() != want.len() {
                return Err(format!(
                    "postings of {:?} are {v:?}, expected {want:?}",
                    String::from_utf8_lossy(k)
                ));
            }
        }
        for p in &self.planes.tracked {
            let mut hist = [0u64; 4];
            for &id in &sorted {
                let k = record_words(self.fwd.get(id))
                    .filter(|(_, w)| first_char(w) == p.ch)
                    .count();
                let v = k.min(3);
                hist[v] += 1;
                if p.value(id) as usize != v {
                    return Err(format!(
                        "plane {:?}: member {id} holds {}, has {k}",
                        p.ch,
                        p.value(id)
                    ));
                }
            }
            for w in 0..p.bits.len() {
                for k in 1..=3u8 {
                    let set = (p.summary(w / 64, k) >> (w % 64)) & 1 != 0;
                    if set != (p.mask(w, k) != 0) {
                        return Err(format!(
                            "plane {:?}: summary of word {w} level {k} is off",
                            p.ch
                        ));
                    }
                }
            }
            if hist[1..] != p.hist[1..] {
                return Err(format!(
                    "plane {:?}: counts {:?}, expected {:?}",
                    p.ch, p.hist, hist
                ));
            }
            let mut want: Vec<(u64, u32)> = sorted
                .iter()
                .filter(|&&id| p.value(id) >= 2)
                .map(|&id| (ord.key(id), id))
                .collect();
            want.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| ord.tie(a.1, b.1)));
            let got: Vec<(u64, u32)> = p.ranked.iter().collect();
            if got != want || p.ranked.len() != want.len() {
                return Err(format!(
                    "plane {:?}: ranked level {got:?}, expected {want:?}",
                    p.ch
                ));
            }
            p.ranked
                .check_invariants(ord)
                .map_err(|e| format!("plane {:?}: ranked level: {e}", p.ch))?;
        }
        for w in 0..self.ranked_ids.len().max(self.id_cap.div_ceil(64)) {
            let want = self
                .planes
                .tracked
                .iter()
                .filter(|p| w < p.bits.len())
                .fold(0, |m, p| m | p.mask(w, 2));
            if self.ranked_ids.get(w).copied().unwrap_or(0) != want {
                return Err(format!("ranked bits of word {w} are off"));
            }
        }
        let mut firsts: hashbrown::HashMap<char, u32> = hashbrown::HashMap::new();
        let mut counts = CharCounts::new();
        for &id in &sorted {
            char_counts(self.fwd.get(id), &mut counts);
            for &(c, _) in &counts {
                *firsts.entry(c).or_insert(0) += 1;
            }
        }
        if firsts != self.planes.firsts {
            return Err("first-char member counts are off".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_stay_sorted_through_blocks_and_back() {
        let mut p = Postings::One(500);
        let mut model = vec![500u32];
        // Enough to split into several blocks, in scrambled order.
        for i in 0..3000u32 {
            let id = (i * 7919) % 10007;
            if model.binary_search(&id).is_err() {
                p.insert(id);
                let at = model.partition_point(|&x| x < id);
                model.insert(at, id);
            }
        }
        assert!(matches!(p, Postings::Blocks(_)));
        assert_eq!(p.to_vec(), model);
        assert_eq!(p.len(), model.len());
        for (i, id) in model.clone().iter().enumerate() {
            if i % 3 != 0 {
                assert!(!p.remove(*id));
                model.retain(|x| x != id);
            }
        }
        assert_eq!(p.to_vec(), model);
        while model.len() > 1 {
            let id = model.pop().unwrap();
            assert!(!p.remove(id));
            assert_eq!(p.len(), model.len());
        }
        assert!(matches!(p, Postings::One(_)));
        assert!(p.remove(model[0]));
    }

    #[test]
    fn record_words_round_trip_and_first_chars() {
        let rec = [0u8, 2, b'a', b'l', 1, 3, 0xc3, 0xa9, b'x'];
        let w: Vec<(u8, &[u8])> = record_words(&rec).collect();
        assert_eq!(w, [(0, &b"al"[..]), (1, &[0xc3, 0xa9, b'x'][..])]);
        assert_eq!(first_char(b"al"), 'a');
        assert_eq!(first_char("éx".as_bytes()), 'é');
        assert_eq!(first_char("王".as_bytes()), '王');
    }

    #[test]
    fn plane_counts_saturate_at_three() {
        let mut p = Plane::new('a', 2);
        p.set(70, 5);
        p.set(3, 1);
        assert!(p.at_least(70, 3) && p.at_least(70, 1));
        assert!(p.at_least(3, 1) && !p.at_least(3, 2));
        assert_eq!(
            (
                p.count_at_least(1),
                p.count_at_least(2),
                p.count_at_least(3)
            ),
            (2, 1, 1)
        );
        p.set(70, 2);
        assert_eq!(p.count_at_least(3), 0);
        p.set(70, 0);
        p.set(3, 0);
        assert_eq!(p.count_at_least(1), 0);
    }
}
