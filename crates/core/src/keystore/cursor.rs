//! SCAN-family cursors (SCAN, HSCAN): Redis's guarantee is that a full
//! iteration returns every element present from its start to its end, at
//! least once, however the collection changes in between. A cursor that is
//! a position in a list breaks it: removing an element before the position
//! shifts the rest, and one of them is never returned. So elements are
//! visited in the order of a fixed hash of their name ([`scan_order`]) and
//! the cursor is the hash the next page starts at; an element keeps its
//! place whatever else is added or removed. Two names with one hash may
//! both be returned twice, never skipped.

use foldhash::fast::FixedState;
use std::hash::BuildHasher;

/// Where `name` comes in a scan: never 0, which is the cursor that both
/// starts and ends an iteration.
pub fn scan_order(name: &[u8]) -> u64 {
    // Fixed seed: a cursor must mean the same place in every call (and in
    // every process serving the same data).
    FixedState::with_seed(0x706f_6469_756d)
        .hash_one(name)
        .max(1)
}

/// One page of a scan over `items` (each with its name) from `cursor`:
/// up to `count` of them (at least one) in scan order, and the next cursor
/// (0 when the iteration is done).
pub fn scan_page<T>(
    items: impl IntoIterator<Item = T>,
    name: impl Fn(&T) -> &[u8],
    cursor: u64,
    count: usize,
) -> (u64, Vec<T>) {
    let mut left: Vec<(u64, T)> = items
        .into_iter()
        .map(|t| (scan_order(name(&t)), t))
        .filter(|(h, _)| *h >= cursor)
        .collect();
    let count = count.max(1);
    let next = if left.len() > count {
        left.select_nth_unstable_by(count, |a, b| a.0.cmp(&b.0).then(name(&a.1).cmp(name(&b.1))));
        let next = left[count].0;
        left.truncate(count);
        next
    } else {
        0
    };
    left.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(name(&a.1).cmp(name(&b.1))));
    (next, left.into_iter().map(|(_, t)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn names(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn pages_cover_everything_once_when_nothing_changes() {
        let all: Vec<Vec<u8>> = (0..1000).map(|i| format!("k{i}").into_bytes()).collect();
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            let (next, page) = scan_page(all.clone(), |k| k, cursor, 7);
            assert!(page.len() <= 7);
            seen.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        seen.sort();
        let mut want = all.clone();
        want.sort();
        assert_eq!(seen, want);
    }

    #[test]
    fn an_empty_collection_is_one_empty_page() {
        assert_eq!(scan_page(names(&[]), |k| k, 0, 10), (0, vec![]));
    }

    proptest! {
        /// Whatever is added and removed between pages, every element
        /// present throughout the iteration is returned.
        #[test]
        fn elements_present_throughout_are_never_skipped(
            start in proptest::collection::btree_set(0u16..400, 0..200),
            steps in proptest::collection::vec(
                (1usize..20, proptest::collection::vec((any::<bool>(), 0u16..400), 0..10)),
                1..60,
            ),
        ) {
            let mut live: BTreeSet<u16> = start.clone();
            let mut throughout: BTreeSet<u16> = start;
            let mut seen = BTreeSet::new();
            let mut cursor = 0;
            // The steps given, then unchanged pages until the end.
            let mut i = 0;
            let mut done = false;
            while !done {
                let (count, changes) = steps.get(i).cloned().unwrap_or((10, Vec::new()));
                let items: Vec<Vec<u8>> = live.iter().map(|i| format!("e{i}").into_bytes()).collect();
                let (next, page) = scan_page(items, |k| k, cursor, count);
                prop_assert!(page.len() <= count);
                seen.extend(page);
                for (add, e) in changes {
                    if add {
                        live.insert(e);
                    } else {
                        live.remove(&e);
                        throughout.remove(&e);
                    }
                }
                done = next == 0;
                cursor = next;
                i += 1;
            }
            for e in &throughout {
                let name = format!("e{e}").into_bytes();
                prop_assert!(seen.contains(&name), "e{} was skipped", e);
            }
        }
    }
}
