//! The member index: member bytes → member id, as an open-addressing hash
//! table with linear probing and backward-shift deletion.
//!
//! Why not `hashbrown`: its control bytes and its slots live in two arrays,
//! so a lookup on a large board pays two cache misses before it can even
//! compare a member, and its API gives no way to prefetch a bucket for a
//! batch of lookups. Here a slot is one `u64` — the hash's upper 32 bits
//! (the tag) and the id — so a probe sequence usually stays in one cache
//! line, tags filter out almost every foreign slot without touching the
//! member's bytes, and [`Index::prefetch`] lets batched lookups overlap
//! their misses. The home slot is derived from the tag alone, so growing
//! rehashes without re-reading any member.
//!
//! The table grows by half, not by doubling, and fills to 4/5: a doubling
//! table is between 2/5 and 4/5 full, so at an unlucky size it costs 20
//! bytes a member where this one costs 10–15. Growing by a quarter (10–12.5
//! bytes) was tried: every growth re-places every entry, so a table grown
//! from empty moves each entry five times by a quarter and three times by
//! half, and on a 10M sequential load the extra moves were a sixth of the
//! engine's time (docs/BENCHMARKS.md, the sequential load).

/// Load factor limit, as a fraction of 5.
const MAX_LOAD_FIFTHS: usize = 4;
const EMPTY: u64 = 0;

#[derive(Clone)]
pub(crate) struct Index {
    slots: Vec<u64>,
    len: usize,
}

#[inline]
fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
}

#[inline]
fn slot(tag: u32, id: u32) -> u64 {
    ((tag as u64) << 32) | (id as u64 + 1)
}

#[inline]
fn slot_id(s: u64) -> u32 {
    (s as u32).wrapping_sub(1)
}

#[inline]
fn slot_tag(s: u64) -> u32 {
    (s >> 32) as u32
}

impl Index {
    pub fn new() -> Self {
        Index {
            slots: Vec::new(),
            len: 0,
        }
    }

    /// The slot a tag's probe starts at: the (mixed) tag scaled to the
    /// capacity by a multiply-shift, which works for any capacity and is
    /// monotone in the tag, so `grow` writes the new table almost
    /// sequentially instead of one cache miss per entry.
    #[inline]
    fn home(&self, tag: u32) -> usize {
        let mixed = tag.wrapping_mul(0x9E37_79B1) as u64;
        ((mixed * self.slots.len() as u64) >> 32) as usize
    }

    #[inline]
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// Starts loading the cache line where a lookup of `hash` begins.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            crate::tree::prefetch_bytes(&self.slots[self.home(tag(hash))], 8);
        }
    }

    /// The first id whose tag matches `hash`'s: almost always the member a
    /// lookup will find, so batched lookups prefetch its record early.
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<u32> {
        self.find(hash, |_| true)
    }

    /// The id whose slot has `hash`'s tag and for which `eq` holds.
    #[inline]
    pub fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let t = tag(hash);
        let mut i = self.home(t);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if slot_tag(s) == t && eq(slot_id(s)) {
                return Some(slot_id(s));
            }
            i = self.next(i);
        }
    }

    /// Adds `id` under `hash`; the caller guarantees it is not present.
    pub fn insert(&mut self, hash: u64, id: u32) {
        if (self.len + 1) * 5 > self.slots.len() * MAX_LOAD_FIFTHS {
            self.grow();
        }
        self.place(slot(tag(hash), id));
        self.len += 1;
    }

    fn place(&mut self, s: u64) {
        let mut i = self.home(slot_tag(s));
        while self.slots[i] != EMPTY {
            i = self.next(i);
        }
        self.slots[i] = s;
    }

    /// Grows the table by half in place: the allocation is extended
    /// (a large one by `mremap`, no copy) and the entries are re-placed from
    /// the top down. A new table per growth would touch fresh memory five
    /// times the final table's size over a load, and on the benchmark
    /// machine the kernel's zeroing of those pages was a fifth of a
    /// sequential load's time.
    ///
    /// Why top-down works: a home only moves up when the capacity grows
    /// (`home` is `mixed * cap >> 32`), so an entry taken from old slot `p`
    /// usually lands above `p`, in the part already emptied of old entries;
    /// the slots its probe passes are then never vacated again (only slots
    /// below `p` are, later). The few whose new probe would start at or
    /// below `p`, or run past the end, are placed normally at the end,
    /// into what is by then a valid table.
    fn grow(&mut self) {
        let old_cap = self.slots.len();
        let cap = (old_cap + old_cap / 2).max(16);
        self.slots.reserve_exact(cap - old_cap);
        self.slots.resize(cap, EMPTY);
        let mut deferred = Vec::new();
        for p in (0..old_cap).rev() {
            let s = self.slots[p];
            if s == EMPTY {
                continue;
            }
            self.slots[p] = EMPTY;
            let mut i = self.home(slot_tag(s));
            if i <= p {
                deferred.push(s);
                continue;
            }
            while i < cap && self.slots[i] != EMPTY {
                i += 1;
            }
            if i == cap {
                deferred.push(s);
            } else {
                self.slots[i] = s;
            }
        }
        for s in deferred {
            self.place(s);
        }
    }

    /// Removes `id` (stored under `hash`); false if it was not there.
    pub fn remove(&mut self, hash: u64, id: u32) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let want = slot(tag(hash), id);
        let mut i = self.home(tag(hash));
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return false;
            }
            if s == want {
                break;
            }
            i = self.next(i);
        }
        // Backward-shift: pull later entries of the cluster into the hole
        // when their home allows it, so no tombstones are needed.
        let mut j = i;
        loop {
            j = self.next(j);
            let s = self.slots[j];
            if s == EMPTY {
                break;
            }
            let k = self.home(slot_tag(s));
            let stays = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !stays {
                self.slots[i] = s;
                i = j;
            }
        }
        self.slots[i] = EMPTY;
        self.len -= 1;
        true
    }

    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Inserts and removes with colliding hashes agree with a HashMap.
        #[test]
        fn agrees_with_hashmap(ops in proptest::collection::vec((0u32..300, any::<bool>()), 1..2000)) {
            let mut idx = Index::new();
            let mut model = std::collections::HashMap::new();
            // Few distinct tags: long clusters and wrap-around.
            let hash = |k: u32| ((k as u64 % 23) << 40) | k as u64;
            for (k, insert) in ops {
                let present = model.contains_key(&k);
                if insert && !present {
                    idx.insert(hash(k), k);
                    model.insert(k, ());
                } else if !insert {
                    prop_assert_eq!(idx.remove(hash(k), k), present);
                    model.remove(&k);
                }
                for probe in 0..300u32 {
                    let got = idx.find(hash(probe), |id| id == probe);
                    prop_assert_eq!(got.is_some(), model.contains_key(&probe));
                }
            }
            prop_assert_eq!(idx.len, model.len());
        }

        /// Every growth keeps every entry findable, whatever the tags: few
        /// distinct ones (long clusters, entries displaced far from home,
        /// clusters wrapping past the end) or spread ones.
        #[test]
        fn growth_keeps_every_entry(n in 1u32..3000, tags in 16u64..5000, spread in any::<bool>()) {
            let mut idx = Index::new();
            let hash = |k: u32| {
                let t = if spread {
                    (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
                } else {
                    (k as u64 % tags).wrapping_mul(0xFFFF_FFFF / tags)
                };
                (t << 32) | k as u64
            };
            for k in 0..n {
                let cap = idx.slots.len();
                idx.insert(hash(k), k);
                if idx.slots.len() != cap {
                    prop_assert!(idx.check_probes().is_ok(), "{:?}", idx.check_probes());
                    for j in 0..=k {
                        prop_assert_eq!(idx.find(hash(j), |id| id == j), Some(j));
                    }
                }
            }
            prop_assert_eq!(idx.slots.iter().filter(|&&s| s != EMPTY).count(), n as usize);
        }
    }

    impl Index {
        /// Linear probing's invariant: no empty slot between an entry's
        /// home and the slot it sits in.
        fn check_probes(&self) -> Result<(), String> {
            for (at, &s) in self.slots.iter().enumerate() {
                if s == EMPTY {
                    continue;
                }
                let mut i = self.home(slot_tag(s));
                while i != at {
                    if self.slots[i] == EMPTY {
                        return Err(format!("hole at {i} before entry at {at}"));
                    }
                    i = self.next(i);
                }
            }
            Ok(())
        }
    }
}
