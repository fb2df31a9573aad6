//! The member table of one board: interns member ids (arbitrary bytes, as in
//! Redis) to dense `u32` ids so the tree holds small integers, and keeps
//! each member's current score, arrival sequence and optional name/data.
//!
//! Memory is the point of this module (the target: ≤ 48 bytes a member
//! plus the id's bytes, at 10M members):
//! - id bytes live in 64 KiB arena chunks, never a heap allocation per
//!   member, each behind a 1–2 byte length and padded to an even offset;
//!   removal leaves garbage that is compacted once it outweighs the live
//!   bytes;
//! - per-member records (12 bytes: the score and the id's arena position
//!   in 2-byte units, which bounds a board's id bytes to 8 GiB) and
//!   sequence numbers live in fixed-size chunks, so growth never
//!   over-allocates by doubling;
//! - the hash index ([`Index`]) holds 8-byte slots (hash tag + id) and
//!   compares a member's arena bytes only when the tags match;
//! - names and data exist only for members that have them.

use std::hash::BuildHasher;
use std::sync::Arc;

use crate::index::Index;

/// Largest member id, in bytes (docs/spec.md §1).
pub const MAX_MEMBER_BYTES: usize = 512;
/// Largest display name, in bytes.
pub const MAX_NAME_BYTES: usize = 512;

/// Refuses a member id that is empty or longer than [`MAX_MEMBER_BYTES`].
pub fn check_member(member: &[u8]) -> crate::Result<()> {
    if member.is_empty() || member.len() > MAX_MEMBER_BYTES {
        return Err(crate::Error::BadMember {
            len: member.len(),
            max: MAX_MEMBER_BYTES,
        });
    }
    Ok(())
}

/// Chunks span a whole 2 MiB page: a page read touches ~25 scattered
/// records and ids, and on a large board each 4 KiB page is a TLB miss (a
/// nested page walk on a VM); the server's allocator backs blocks of 2 MiB
/// and more with transparent huge pages. The first chunk of each still
/// grows from small, so a small board stays small.
const ARENA_CHUNK: usize = 2 << 20;
/// Bytes of an arena entry [`Members::prefetch_bytes`] asks for: a length
/// header and an id of up to 15 bytes (most ids; a longer one's tail is
/// read from memory when it is copied).
const PREFETCH_ID_BYTES: usize = 16;
#[cfg(test)]
const REC_CHUNK: usize = ChunkVec::<Rec>::LEN;
/// Garbage id bytes below this are never worth a compaction.
const COMPACT_MIN_GARBAGE: usize = 256 << 10;
/// Arena positions count in units of this many bytes.
const UNIT: usize = 2;
/// `loc` of a free record.
const FREE: u32 = u32::MAX;
/// Most arena bytes a board can address (live ids, their length headers
/// and garbage not yet compacted).
pub const MAX_ARENA_BYTES: usize = FREE as usize * UNIT;

/// A vector that grows by fixed chunks instead of doubling.
#[derive(Clone)]
struct ChunkVec<T> {
    chunks: Vec<Box<[T]>>,
    len: usize,
}

impl<T: Copy + Default> ChunkVec<T> {
    /// Elements a whole chunk holds: a chunk fills at least a 2 MiB page,
    /// whatever `T`, so that the allocator puts it on a huge page (a
    /// lookup's or a tiebreak's random read of one element is otherwise a
    /// TLB miss too).
    const LEN: usize = ARENA_CHUNK.div_ceil(size_of::<T>());

    fn new() -> Self {
        ChunkVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
    #[inline(always)]
    fn get(&self, i: usize) -> T {
        self.chunks[i / Self::LEN][i % Self::LEN]
    }
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / Self::LEN][i % Self::LEN]
    }
    /// Element `i`, if allocated (for prefetching).
    #[inline(always)]
    fn slot(&self, i: usize) -> Option<&T> {
        self.chunks
            .get(i / Self::LEN)
            .and_then(|c| c.get(i % Self::LEN))
    }
    fn push(&mut self, v: T) {
        let cap = match self.chunks.len() {
            0 => 0,
            n => (n - 1) * Self::LEN + self.chunks[n - 1].len(),
        };
        if self.len == cap {
            match self.chunks.len() {
                // The first chunk grows by doubling up to a whole chunk, so a
                // small board stays small; indexes are unchanged by growth.
                1 if cap < Self::LEN => {
                    let mut grown = vec![T::default(); (cap * 2).min(Self::LEN)];
                    grown[..cap].copy_from_slice(&self.chunks[0]);
                    self.chunks[0] = grown.into_boxed_slice();
                }
                0 => self.chunks.push(vec![T::default(); 16].into_boxed_slice()),
                _ => self
                    .chunks
                    .push(vec![T::default(); Self::LEN].into_boxed_slice()),
            }
        }
        let i = self.len;
        self.len += 1;
        *self.get_mut(i) = v;
    }
    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum::<usize>() * size_of::<T>()
            + self.chunks.capacity() * 16
    }
}

/// Packed to 12 bytes: at millions of members every byte of the record is
/// a megabyte per million, and an unaligned score read costs nothing here.
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
struct Rec {
    /// The score's bits (a composite board's first key: a double's bits or
    /// an integer's two's complement).
    raw: u64,
    /// Arena position of the id's entry in [`UNIT`]s, or [`FREE`].
    loc: u32,
}

impl Default for Rec {
    fn default() -> Self {
        Rec { raw: 0, loc: FREE }
    }
}

/// A member's optional display name and JSON data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    pub name: Option<Arc<str>>,
    pub data: Option<Arc<str>>,
}

#[derive(Clone)]
pub(crate) struct Members {
    arena: Vec<Vec<u8>>,
    recs: ChunkVec<Rec>,
    /// Arrival sequence numbers, kept only for `first`/`last` tiebreaks.
    seqs: Option<ChunkVec<u64>>,
    /// A composite board's keys after the first, `stride` per member at
    /// `id * stride`, as tree-order codes (so ordering two members with
    /// the same first key compares plain integers).
    keys: ChunkVec<u64>,
    stride: usize,
    index: Index,
    hasher: foldhash::fast::FixedState,
    free: Vec<u32>,
    live: usize,
    live_bytes: usize,
    garbage_bytes: usize,
    extras: hashbrown::HashMap<u32, Extra>,
}

/// Makes room for `size` more bytes at the end of an arena of byte chunks of
/// at most `CHUNK` bytes (a new chunk when the last is full); returns the
/// index of the chunk they go in. Shared by the member arena and the search
/// index's records; inlined, so each keeps its own loop.
#[inline(always)]
pub(crate) fn arena_room<const CHUNK: usize>(arena: &mut Vec<Vec<u8>>, size: usize) -> usize {
    let need_chunk = arena.last().is_none_or(|c| c.len() + size > CHUNK);
    if need_chunk {
        // The first chunk grows from small, so a board of a few members
        // does not hold a whole chunk; later ones come whole.
        let cap = if arena.is_empty() { 0 } else { CHUNK };
        arena.push(Vec::with_capacity(cap));
    }
    let ci = arena.len() - 1;
    let chunk = &mut arena[ci];
    let need = chunk.len() + size;
    if need > chunk.capacity() {
        // Doubling, capped at the chunk size (offsets assume chunks of at
        // most CHUNK bytes).
        let cap = (chunk.capacity() * 2).max(need).clamp(256, CHUNK);
        chunk.reserve_exact(cap - chunk.len());
    }
    ci
}

impl Members {
    /// A copy for reading records by id only: ids, scores, sequences and
    /// extras, without the index from ids to members (a snapshot's copy,
    /// made while writers wait, need not copy a table it never reads).
    pub fn copy_records(&self) -> Members {
        Members {
            arena: self.arena.clone(),
            recs: self.recs.clone(),
            seqs: self.seqs.clone(),
            keys: self.keys.clone(),
            stride: self.stride,
            index: Index::new(),
            hasher: self.hasher.clone(),
            free: Vec::new(),
            live: self.live,
            live_bytes: self.live_bytes,
            garbage_bytes: self.garbage_bytes,
            extras: self.extras.clone(),
        }
    }

    #[cfg(test)]
    pub fn new(with_seqs: bool) -> Self {
        Self::with_keys(with_seqs, 0)
    }

    /// A table whose members hold `stride` sort keys besides the first.
    pub fn with_keys(with_seqs: bool, stride: usize) -> Self {
        Members {
            arena: Vec::new(),
            recs: ChunkVec::new(),
            seqs: with_seqs.then(ChunkVec::new),
            keys: ChunkVec::new(),
            stride,
            index: Index::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x9e37_79b9_7f4a_7c15),
            free: Vec::new(),
            live: 0,
            live_bytes: 0,
            garbage_bytes: 0,
            extras: hashbrown::HashMap::new(),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.live
    }

    #[inline]
    fn hash(&self, bytes: &[u8]) -> u64 {
        self.hasher.hash_one(bytes)
    }

    /// An arena entry's bytes: a length (one byte below 128, else two with
    /// the top bit set: ids are at most 512 bytes) then the id.
    #[inline(always)]
    fn arena_bytes(&self, loc: u32) -> &[u8] {
        Self::entry_in(&self.arena, loc)
    }

    #[inline(always)]
    fn entry_in(arena: &[Vec<u8>], loc: u32) -> &[u8] {
        let off = loc as usize * UNIT;
        let c = &arena[off / ARENA_CHUNK];
        let o = off % ARENA_CHUNK;
        let b0 = c[o] as usize;
        let (start, len) = if b0 < 0x80 {
            (o + 1, b0)
        } else {
            (o + 2, ((b0 & 0x7f) << 8) | c[o + 1] as usize)
        };
        &c[start..start + len]
    }

    /// Arena bytes an id of `len` bytes takes: header, id, padding.
    #[inline]
    pub fn stored_size(len: usize) -> usize {
        (len + if len < 0x80 { 1 } else { 2 }).next_multiple_of(UNIT)
    }

    /// Whether an id of `len` more bytes can be stored (compacting first if
    /// garbage is in the way).
    pub fn has_room(&mut self, len: usize) -> bool {
        if self.arena_end() + Self::stored_size(len) + ARENA_CHUNK <= MAX_ARENA_BYTES {
            return true;
        }
        if self.garbage_bytes > 0 {
            self.compact();
        }
        self.arena_end() + Self::stored_size(len) + ARENA_CHUNK <= MAX_ARENA_BYTES
    }

    fn arena_end(&self) -> usize {
        self.arena
            .last()
            .map_or(0, |c| (self.arena.len() - 1) * ARENA_CHUNK + c.len())
    }

    /// The id bytes of a live member.
    #[inline(always)]
    pub fn bytes(&self, id: u32) -> &[u8] {
        self.arena_bytes(self.recs.get(id as usize).loc)
    }

    /// A plain board's score of a live member.
    #[inline(always)]
    pub fn score(&self, id: u32) -> f64 {
        f64::from_bits(self.recs.get(id as usize).raw)
    }

    /// The score's (or the first key's) bits.
    #[inline(always)]
    pub fn raw(&self, id: u32) -> u64 {
        self.recs.get(id as usize).raw
    }

    #[inline]
    pub fn set_score(&mut self, id: u32, score: f64) {
        self.set_raw(id, score.to_bits());
    }

    #[inline]
    pub fn set_raw(&mut self, id: u32, raw: u64) {
        self.recs.get_mut(id as usize).raw = raw;
    }

    /// Sort keys held besides the first.
    #[inline(always)]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Code `j` of a member's keys after the first.
    #[inline(always)]
    pub fn key(&self, id: u32, j: usize) -> u64 {
        self.keys.get(id as usize * self.stride + j)
    }

    pub fn set_keys(&mut self, id: u32, codes: &[u64]) {
        debug_assert_eq!(codes.len(), self.stride);
        for (j, &c) in codes.iter().enumerate() {
            *self.keys.get_mut(id as usize * self.stride + j) = c;
        }
    }

    /// The order of two members' keys after the first.
    #[inline]
    pub fn cmp_keys(&self, a: u32, b: u32) -> std::cmp::Ordering {
        for j in 0..self.stride {
            match self.key(a, j).cmp(&self.key(b, j)) {
                std::cmp::Ordering::Equal => {}
                o => return o,
            }
        }
        std::cmp::Ordering::Equal
    }

    #[inline]
    pub fn seq(&self, id: u32) -> u64 {
        self.seqs.as_ref().map_or(0, |s| s.get(id as usize))
    }

    #[inline]
    pub fn set_seq(&mut self, id: u32, seq: u64) {
        if let Some(s) = self.seqs.as_mut() {
            *s.get_mut(id as usize) = seq;
        }
    }

    pub fn find(&self, member: &[u8]) -> Option<u32> {
        self.find_hashed(self.hash(member), member)
    }

    /// Hash of a member, for batched lookups ([`Members::prefetch_slot`]
    /// then [`Members::find_hashed`]).
    #[inline]
    pub fn hash_of(&self, member: &[u8]) -> u64 {
        self.hash(member)
    }

    #[inline]
    pub fn find_hashed(&self, hash: u64, member: &[u8]) -> Option<u32> {
        self.index.find(hash, |id| self.bytes(id) == member)
    }

    /// Starts loading the index slot where `hash`'s lookup begins.
    #[inline]
    pub fn prefetch_slot(&self, hash: u64) {
        self.index.prefetch(hash);
    }

    /// The id a lookup of `hash` will most likely find (see
    /// [`Index::candidate`]); for prefetching only.
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<u32> {
        self.index.candidate(hash)
    }

    /// Starts loading a member's record.
    #[inline]
    pub fn prefetch_rec(&self, id: u32) {
        if let Some(rec) = self.recs.slot(id as usize) {
            // A 12-byte record can straddle two cache lines.
            crate::tree::prefetch_span(rec, size_of::<Rec>());
        }
    }

    /// Starts loading a member's codes of the keys after the first (none
    /// on a board of one key).
    #[inline]
    pub fn prefetch_keys(&self, id: u32) {
        if self.stride == 0 {
            return;
        }
        if let Some(code) = self.keys.slot(id as usize * self.stride) {
            crate::tree::prefetch_span(code, self.stride * size_of::<u64>());
        }
    }

    /// Starts loading a member's id bytes (its record should be cached).
    #[inline]
    pub fn prefetch_bytes(&self, id: u32) {
        let loc = self.recs.get(id as usize).loc;
        if loc != FREE {
            let off = loc as usize * UNIT;
            let c = &self.arena[off / ARENA_CHUNK];
            // The header and the first bytes of the id, which may be on the
            // next line: an encoder reads them all.
            let o = off % ARENA_CHUNK;
            crate::tree::prefetch_span(&c[o], (c.len() - o).min(PREFETCH_ID_BYTES));
        }
    }

    fn store_bytes(&mut self, member: &[u8]) -> u32 {
        let size = Self::stored_size(member.len());
        let ci = arena_room::<ARENA_CHUNK>(&mut self.arena, size);
        let chunk = &mut self.arena[ci];
        let off = ci * ARENA_CHUNK + chunk.len();
        let len = member.len();
        if len < 0x80 {
            chunk.push(len as u8);
        } else {
            chunk.extend_from_slice(&[0x80 | (len >> 8) as u8, len as u8]);
        }
        chunk.extend_from_slice(member);
        chunk.resize(off % ARENA_CHUNK + size, 0);
        debug_assert!(off + size <= MAX_ARENA_BYTES, "caller checks has_room");
        (off / UNIT) as u32
    }

    /// Interns a member known to be absent; returns its id.
    pub fn insert(&mut self, member: &[u8], score: f64, seq: u64) -> u32 {
        self.insert_hashed(member, score.to_bits(), seq, self.hash(member))
    }

    /// [`Members::insert`] with the score's bits ([`Members::raw`]) and
    /// the member's [`Members::hash_of`] known. A composite board sets the
    /// other keys next ([`Members::set_keys`]).
    pub fn insert_hashed(&mut self, member: &[u8], raw: u64, seq: u64, hash: u64) -> u32 {
        debug_assert!(member.len() <= MAX_MEMBER_BYTES);
        debug_assert_eq!(hash, self.hash(member));
        let loc = self.store_bytes(member);
        let rec = Rec { raw, loc };
        let id = match self.free.pop() {
            Some(id) => {
                *self.recs.get_mut(id as usize) = rec;
                id
            }
            None => {
                let id = self.recs.len as u32;
                self.recs.push(rec);
                if let Some(s) = self.seqs.as_mut() {
                    s.push(0);
                }
                for _ in 0..self.stride {
                    self.keys.push(0);
                }
                id
            }
        };
        self.set_seq(id, seq);
        self.index.insert(hash, id);
        self.live += 1;
        self.live_bytes += Self::stored_size(member.len());
        id
    }

    /// Up to `count` live ids from `from` on, in id order, and the id to
    /// go on from (`None`: none are left). A member keeps its id while it
    /// lives, whatever its score does, so a scan in id order visits every
    /// member present from its start to its end.
    pub fn live_ids_from(&self, from: u32, count: usize) -> (Vec<u32>, Option<u32>) {
        let mut ids = Vec::with_capacity(count.min(1024));
        let mut id = from as usize;
        while id < self.recs.len && ids.len() < count {
            if self.recs.get(id).loc != FREE {
                ids.push(id as u32);
            }
            id += 1;
        }
        (ids, (id < self.recs.len).then_some(id as u32))
    }

    /// Forgets a live member.
    pub fn remove(&mut self, id: u32) {
        let rec = self.recs.get(id as usize);
        let bytes = self.arena_bytes(rec.loc);
        let len = Self::stored_size(bytes.len());
        let h = self.hash(bytes);
        self.index.remove(h, id);
        self.recs.get_mut(id as usize).loc = FREE;
        self.free.push(id);
        self.extras.remove(&id);
        self.live -= 1;
        self.live_bytes -= len;
        self.garbage_bytes += len;
        if self.garbage_bytes > COMPACT_MIN_GARBAGE && self.garbage_bytes > self.live_bytes {
            self.compact();
        }
    }

    /// Rewrites the arena with only the live members' bytes. Ids and the
    /// hash index are unaffected: only the records' locations change.
    fn compact(&mut self) {
        let old = std::mem::take(&mut self.arena);
        for id in 0..self.recs.len {
            let loc = self.recs.get(id).loc;
            if loc == FREE {
                continue;
            }
            let new_loc = self.store_bytes(Self::entry_in(&old, loc));
            self.recs.get_mut(id).loc = new_loc;
        }
        self.garbage_bytes = 0;
    }

    #[inline]
    pub fn extra(&self, id: u32) -> Option<&Extra> {
        // A board without names or data (the common large one) skips the
        // hash of every id a walk reads.
        if self.extras.is_empty() {
            return None;
        }
        self.extras.get(&id)
    }

    /// Every member's [`Extra`] at its id (`None`: none), for ids below
    /// `cap`: one sequential pass over the map, for a reader of every
    /// member (the search index's bulk build), which would otherwise pay
    /// a cache miss on a hash lookup per member.
    pub(crate) fn extras_by_id(&self, cap: usize) -> Vec<Option<&Extra>> {
        let mut v = vec![None; cap];
        for (&id, e) in &self.extras {
            if let Some(slot) = v.get_mut(id as usize) {
                *slot = Some(e);
            }
        }
        v
    }

    /// Changes a member's [`Extra`] in place with one hash lookup (a named
    /// import's every entry comes here: a lookup, a clone and an insert
    /// were three); an `Extra` left empty is removed, as by [`set_extra`].
    ///
    /// [`set_extra`]: Members::set_extra
    pub fn update_extra(&mut self, id: u32, f: impl FnOnce(&mut Extra)) {
        use hashbrown::hash_map::Entry;
        match self.extras.entry(id) {
            Entry::Occupied(mut o) => {
                f(o.get_mut());
                if o.get().name.is_none() && o.get().data.is_none() {
                    o.remove();
                }
            }
            Entry::Vacant(v) => {
                let mut e = Extra::default();
                f(&mut e);
                if e.name.is_some() || e.data.is_some() {
                    v.insert(e);
                }
            }
        }
    }

    pub fn set_extra(&mut self, id: u32, extra: Extra) {
        if extra.name.is_none() && extra.data.is_none() {
            self.extras.remove(&id);
        } else {
            self.extras.insert(id, extra);
        }
    }

    /// Bytes allocated on the heap, for `/metrics` and the memory benchmark.
    pub fn heap_bytes(&self) -> usize {
        self.arena.iter().map(|c| c.capacity()).sum::<usize>()
            + self.recs.heap_bytes()
            + self.seqs.as_ref().map_or(0, |s| s.heap_bytes())
            + if self.stride > 0 {
                self.keys.heap_bytes()
            } else {
                0
            }
            + self.index.heap_bytes()
            + self.free.capacity() * 4
            + self.extras.capacity() * 48
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_extra_keeps_only_non_empty_extras() {
        let mut m = Members::new(false);
        m.update_extra(7, |_| {});
        assert_eq!(m.extra(7), None);
        m.update_extra(7, |e| e.name = Some("Ann".into()));
        m.update_extra(7, |e| e.data = Some("{}".into()));
        assert_eq!(
            m.extra(7),
            Some(&Extra {
                name: Some("Ann".into()),
                data: Some("{}".into())
            })
        );
        m.update_extra(7, |e| e.name = None);
        assert_eq!(m.extra(7).and_then(|e| e.name.as_deref()), None);
        assert_eq!(m.extra(7).and_then(|e| e.data.as_deref()), Some("{}"));
        m.update_extra(7, |e| e.data = None);
        assert_eq!(m.extra(7), None);
        assert!(m.extras.is_empty());
    }

    #[test]
    fn intern_find_remove_reuse() {
        let mut m = Members::new(true);
        let a = m.insert(b"alice", 1.0, 7);
        let b = m.insert(b"bob", 2.0, 8);
        assert_eq!(m.find(b"alice"), Some(a));
        assert_eq!(m.bytes(b), b"bob");
        assert_eq!(m.seq(a), 7);
        m.remove(a);
        assert_eq!(m.find(b"alice"), None);
        let c = m.insert(b"carol", 3.0, 9);
        assert_eq!(c, a, "freed ids are reused");
        assert_eq!(m.find(b"bob"), Some(b));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn records_and_ids_past_the_first_chunks_round_trip() {
        // Past two record chunks and several arena chunks.
        let n = 2 * REC_CHUNK + 100;
        let mut m = Members::new(true);
        let id = |i: usize| format!("member-{i:09}");
        for i in 0..n {
            assert_eq!(m.insert(id(i).as_bytes(), i as f64, i as u64), i as u32);
        }
        assert!(m.arena.len() >= 4, "{}", m.arena.len());
        for i in (0..n).step_by(997).chain(n - 5..n) {
            assert_eq!(m.find(id(i).as_bytes()), Some(i as u32));
            assert_eq!(m.bytes(i as u32), id(i).as_bytes());
            assert_eq!(m.score(i as u32), i as f64);
            assert_eq!(m.seq(i as u32), i as u64);
        }
    }

    #[test]
    fn ids_of_every_header_size_round_trip() {
        let mut m = Members::new(false);
        let ids: Vec<Vec<u8>> = [1usize, 2, 126, 127, 128, 129, 255, 256, 511, 512]
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let got: Vec<u32> = ids.iter().map(|k| m.insert(k, k.len() as f64, 0)).collect();
        for (k, &id) in ids.iter().zip(&got) {
            assert_eq!(m.bytes(id), &k[..]);
            assert_eq!(m.find(k), Some(id));
            assert_eq!(m.score(id), k.len() as f64);
        }
        assert_eq!(Members::stored_size(127), 128);
        assert_eq!(Members::stored_size(128), 130);
        assert_eq!(Members::stored_size(14), 16);
    }

    #[test]
    fn compaction_keeps_every_live_member() {
        let mut m = Members::new(false);
        let big = vec![b'x'; 500];
        let mut ids = Vec::new();
        for i in 0..30_000u32 {
            let mut k = big.clone();
            k.extend_from_slice(&i.to_le_bytes());
            ids.push((m.insert(&k[4..], i as f64, 0), k));
        }
        for (i, (id, _)) in ids.iter().enumerate() {
            if i % 4 != 0 {
                m.remove(*id);
            }
        }
        assert!(m.garbage_bytes < m.live_bytes, "compaction ran");
        for (i, (id, k)) in ids.iter().enumerate() {
            if i % 4 == 0 {
                assert_eq!(m.find(&k[4..]), Some(*id));
                assert_eq!(m.bytes(*id), &k[4..]);
                assert_eq!(m.score(*id), i as f64);
            }
        }
    }
}
