//! The member table of one board: interns member ids (arbitrary bytes, as in
//! Redis) to dense `u32` ids so the tree holds small integers, and keeps
//! each member's current score, arrival sequence and optional name/data.
//!
//! Memory is the point of this module (SPEC target: ≤ 48 bytes a member
//! plus the id's bytes, at 10M members):
//! - id bytes live in 1 MiB arena chunks, never a heap allocation per
//!   member; removal leaves garbage that is compacted once it outweighs the
//!   live bytes;
//! - per-member records (16 bytes) and sequence numbers live in fixed-size
//!   chunks, so growth never over-allocates by doubling;
//! - the hash index ([`Index`]) holds 8-byte slots (hash tag + id) and
//!   compares a member's arena bytes only when the tags match;
//! - names and data exist only for members that have them.

use std::hash::BuildHasher;
use std::sync::Arc;

use crate::index::Index;

/// Largest member id, in bytes (SPEC §1).
pub const MAX_MEMBER_BYTES: usize = 512;
/// Largest display name, in bytes.
pub const MAX_NAME_BYTES: usize = 512;

const ARENA_CHUNK: usize = 1 << 20;
const REC_CHUNK: usize = 4096;
/// `loc` of a free record.
const FREE: u64 = u64::MAX;

/// A vector that grows by fixed chunks instead of doubling.
#[derive(Clone)]
struct ChunkVec<T> {
    chunks: Vec<Box<[T]>>,
    len: usize,
}

impl<T: Copy + Default> ChunkVec<T> {
    fn new() -> Self {
        ChunkVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
    #[inline]
    fn get(&self, i: usize) -> T {
        self.chunks[i / REC_CHUNK][i % REC_CHUNK]
    }
    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / REC_CHUNK][i % REC_CHUNK]
    }
    fn push(&mut self, v: T) {
        let cap = match self.chunks.len() {
            0 => 0,
            n => (n - 1) * REC_CHUNK + self.chunks[n - 1].len(),
        };
        if self.len == cap {
            match self.chunks.len() {
                // The first chunk grows by doubling up to a whole chunk, so a
                // small board stays small; indexes are unchanged by growth.
                1 if cap < REC_CHUNK => {
                    let mut grown = vec![T::default(); (cap * 2).min(REC_CHUNK)];
                    grown[..cap].copy_from_slice(&self.chunks[0]);
                    self.chunks[0] = grown.into_boxed_slice();
                }
                0 => self.chunks.push(vec![T::default(); 16].into_boxed_slice()),
                _ => self
                    .chunks
                    .push(vec![T::default(); REC_CHUNK].into_boxed_slice()),
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

#[derive(Clone, Copy)]
struct Rec {
    score: f64,
    /// `offset << 16 | len` of the id bytes in the arena, or [`FREE`].
    loc: u64,
}

impl Default for Rec {
    fn default() -> Self {
        Rec {
            score: 0.0,
            loc: FREE,
        }
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
    index: Index,
    hasher: foldhash::fast::FixedState,
    free: Vec<u32>,
    live: usize,
    live_bytes: usize,
    garbage_bytes: usize,
    extras: hashbrown::HashMap<u32, Extra>,
}

impl Members {
    pub fn new(with_seqs: bool) -> Self {
        Members {
            arena: Vec::new(),
            recs: ChunkVec::new(),
            seqs: with_seqs.then(ChunkVec::new),
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

    #[inline]
    fn arena_bytes(&self, loc: u64) -> &[u8] {
        let off = (loc >> 16) as usize;
        let len = (loc & 0xffff) as usize;
        &self.arena[off / ARENA_CHUNK][off % ARENA_CHUNK..off % ARENA_CHUNK + len]
    }

    /// The id bytes of a live member.
    #[inline]
    pub fn bytes(&self, id: u32) -> &[u8] {
        self.arena_bytes(self.recs.get(id as usize).loc)
    }

    #[inline]
    pub fn score(&self, id: u32) -> f64 {
        self.recs.get(id as usize).score
    }

    #[inline]
    pub fn set_score(&mut self, id: u32, score: f64) {
        self.recs.get_mut(id as usize).score = score;
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
        let i = id as usize;
        if let Some(chunk) = self.recs.chunks.get(i / REC_CHUNK) {
            crate::tree::prefetch_bytes(&chunk[i % REC_CHUNK], 16);
        }
    }

    /// Starts loading a member's id bytes (its record should be cached).
    #[inline]
    pub fn prefetch_bytes(&self, id: u32) {
        let loc = self.recs.get(id as usize).loc;
        if loc != FREE {
            let off = (loc >> 16) as usize;
            crate::tree::prefetch_bytes(&self.arena[off / ARENA_CHUNK][off % ARENA_CHUNK], 1);
        }
    }

    fn store_bytes(&mut self, member: &[u8]) -> u64 {
        let need_chunk = self
            .arena
            .last()
            .is_none_or(|c| c.len() + member.len() > ARENA_CHUNK);
        if need_chunk {
            // The first chunk grows from small, so a board of a few members
            // does not hold a whole megabyte; later ones come whole.
            let cap = if self.arena.is_empty() {
                0
            } else {
                ARENA_CHUNK
            };
            self.arena.push(Vec::with_capacity(cap));
        }
        let ci = self.arena.len() - 1;
        let chunk = &mut self.arena[ci];
        let need = chunk.len() + member.len();
        if need > chunk.capacity() {
            // Doubling, capped at the chunk size (offsets assume chunks of
            // at most ARENA_CHUNK bytes).
            let cap = (chunk.capacity() * 2).max(need).clamp(256, ARENA_CHUNK);
            chunk.reserve_exact(cap - chunk.len());
        }
        let off = ci * ARENA_CHUNK + chunk.len();
        chunk.extend_from_slice(member);
        ((off as u64) << 16) | member.len() as u64
    }

    /// Interns a member known to be absent; returns its id.
    pub fn insert(&mut self, member: &[u8], score: f64, seq: u64) -> u32 {
        debug_assert!(member.len() <= MAX_MEMBER_BYTES);
        let loc = self.store_bytes(member);
        let rec = Rec { score, loc };
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
                id
            }
        };
        self.set_seq(id, seq);
        let h = self.hash(member);
        self.index.insert(h, id);
        self.live += 1;
        self.live_bytes += member.len();
        id
    }

    /// Forgets a live member.
    pub fn remove(&mut self, id: u32) {
        let rec = self.recs.get(id as usize);
        let len = (rec.loc & 0xffff) as usize;
        let h = self.hash(self.arena_bytes(rec.loc));
        self.index.remove(h, id);
        self.recs.get_mut(id as usize).loc = FREE;
        self.free.push(id);
        self.extras.remove(&id);
        self.live -= 1;
        self.live_bytes -= len;
        self.garbage_bytes += len;
        if self.garbage_bytes > 4 * ARENA_CHUNK && self.garbage_bytes > self.live_bytes {
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
            let off = (loc >> 16) as usize;
            let len = (loc & 0xffff) as usize;
            let bytes = &old[off / ARENA_CHUNK][off % ARENA_CHUNK..off % ARENA_CHUNK + len];
            let new_loc = self.store_bytes(bytes);
            self.recs.get_mut(id).loc = new_loc;
        }
        self.garbage_bytes = 0;
    }

    pub fn extra(&self, id: u32) -> Option<&Extra> {
        self.extras.get(&id)
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
            + self.index.heap_bytes()
            + self.free.capacity() * 4
            + self.extras.capacity() * 48
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
