//! The watched members of a board by their place ([`OrderKey`]), for
//! finding those a write moves past: [`Places::range`] runs once per write
//! to a board with `members` subscribers.
//!
//! Keyed by the first sort value alone, each bucket holding the members of
//! that value in order: a full key is some 64 bytes, so a search through a
//! map of 100,000 of them read several cache lines per node, and that
//! search was the largest item of a write's cost with 100,000 watched
//! members. A bucket is almost always one member.

use std::collections::BTreeMap;
use std::ops::Bound;

use podium_engine::OrderKey;
use smallvec::SmallVec;

type Bucket = SmallVec<[(OrderKey, Box<[u8]>); 1]>;

#[derive(Default)]
pub(super) struct Places {
    map: BTreeMap<u64, Bucket>,
}

/// The value a key is filed under.
fn first(k: &OrderKey) -> u64 {
    k.codes.first().copied().unwrap_or(0)
}

/// The bucket bound that admits every key `b` may admit.
fn widen(b: Bound<&OrderKey>) -> Bound<u64> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Bound::Included(first(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn above(k: &OrderKey, lo: Bound<&OrderKey>) -> bool {
    match lo {
        Bound::Included(b) => k >= b,
        Bound::Excluded(b) => k > b,
        Bound::Unbounded => true,
    }
}

fn below(k: &OrderKey, hi: Bound<&OrderKey>) -> bool {
    match hi {
        Bound::Included(b) => k <= b,
        Bound::Excluded(b) => k < b,
        Bound::Unbounded => true,
    }
}

impl Places {
    pub(super) fn clear(&mut self) {
        self.map.clear();
    }

    pub(super) fn insert(&mut self, key: OrderKey, member: Box<[u8]>) {
        let bucket = self.map.entry(first(&key)).or_default();
        match bucket.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => bucket[i].1 = member,
            Err(i) => bucket.insert(i, (key, member)),
        }
    }

    pub(super) fn remove(&mut self, key: &OrderKey) {
        let f = first(key);
        let Some(bucket) = self.map.get_mut(&f) else {
            return;
        };
        if let Ok(i) = bucket.binary_search_by(|(k, _)| k.cmp(key)) {
            bucket.remove(i);
        }
        if bucket.is_empty() {
            self.map.remove(&f);
        }
    }

    /// The members placed within `(lo, hi)`, in order.
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The members placed within `(lo, hi)`, in order. One search, for
    /// `lo`: the span of a write is narrow, so walking on from there until
    /// past `hi` reads fewer nodes than searching for `hi` as well.
    pub(super) fn range<'a>(
        &'a self,
        (lo, hi): (Bound<&'a OrderKey>, Bound<&'a OrderKey>),
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        let end = widen(hi);
        self.map
            .range((widen(lo), Bound::Unbounded))
            .take_while(move |(f, _)| match end {
                Bound::Included(e) => **f <= e,
                _ => true,
            })
            .flat_map(|(_, bucket)| bucket.iter())
            .filter(move |(k, _)| above(k, lo) && below(k, hi))
            .map(|(_, m)| &**m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_engine::Tie;
    use proptest::prelude::*;

    fn key(codes: &[u64], seq: u64) -> OrderKey {
        OrderKey {
            codes: codes.iter().copied().collect(),
            tie: Tie::Seq(seq),
        }
    }

    fn bound(kind: u8, k: OrderKey) -> Bound<OrderKey> {
        match kind % 3 {
            0 => Bound::Included(k),
            1 => Bound::Excluded(k),
            _ => Bound::Unbounded,
        }
    }

    proptest! {
        /// Against a map of whole keys: the same members in the same order.
        #[test]
        fn ranges_match_a_map_of_whole_keys(
            ops in prop::collection::vec((any::<bool>(), 0u64..8, 0u64..4, 0u64..3, 0u8..4), 1..200),
            queries in prop::collection::vec((0u64..8, 0u64..4, 0u64..3, 0u8..3, 0u64..8, 0u64..4, 0u64..3, 0u8..3), 1..20),
        ) {
            let mut places = Places::default();
            let mut model: BTreeMap<OrderKey, Box<[u8]>> = BTreeMap::new();
            for (add, a, b, seq, m) in ops {
                let k = key(&[a, b], seq);
                if add {
                    places.insert(k.clone(), vec![m].into());
                    model.insert(k, vec![m].into());
                } else {
                    places.remove(&k);
                    model.remove(&k);
                }
            }
            for (a1, b1, s1, k1, a2, b2, s2, k2) in queries {
                let span = (bound(k1, key(&[a1, b1], s1)), bound(k2, key(&[a2, b2], s2)));
                let got: Vec<&[u8]> = places.range((span.0.as_ref(), span.1.as_ref())).collect();
                let valid = match (&span.0, &span.1) {
                    (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
                        l < h || (l == h && matches!((&span.0, &span.1), (Bound::Included(_), Bound::Included(_))))
                    }
                    _ => true,
                };
                let want: Vec<&[u8]> = if valid {
                    model.range(span.clone()).map(|(_, m)| &**m).collect()
                } else {
                    model
                        .iter()
                        .filter(|(k, _)| above(k, span.0.as_ref()) && below(k, span.1.as_ref()))
                        .map(|(_, m)| &**m)
                        .collect()
                };
                prop_assert_eq!(got, want);
            }
        }
    }
}
