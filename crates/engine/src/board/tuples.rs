//! The distinct value tuples of a `dense` board with several sort keys.
//!
//! A dense rank is the number of distinct values better than a member's,
//! plus one. A plain dense board counts distinct scores in a second tree
//! keyed by score; with several keys, two members tie only when every key
//! is equal, so the second tree holds one entry per distinct *tuple*: its
//! key is the tuple's first code and its payload a tuple id, whose other
//! codes (and how many members hold the tuple) live in this table.

use std::cmp::Ordering;

use crate::sort::MAX_SORT_KEYS;
use crate::tree::{CountedTree, TieBreak};

/// A tuple's codes, first key first (unused keys zero), as a map key.
type Codes = [u64; MAX_SORT_KEYS];

#[derive(Clone)]
pub(crate) struct Tuples {
    stride: usize,
    /// The codes after the first, `stride` per tuple id.
    tails: Vec<u64>,
    /// Members holding each tuple (0: the id is free).
    counts: Vec<u32>,
    free: Vec<u32>,
    ids: hashbrown::HashMap<Codes, u32>,
    tree: CountedTree<u32>,
}

/// Orders two tuples with the same first code.
struct Tails<'a> {
    tails: &'a [u64],
    stride: usize,
}

impl TieBreak<u32> for Tails<'_> {
    #[inline]
    fn tie(&self, a: u32, b: u32) -> Ordering {
        let s = self.stride;
        let (a, b) = (a as usize * s, b as usize * s);
        self.tails[a..a + s].cmp(&self.tails[b..b + s])
    }
}

fn codes(first: u64, tail: &[u64]) -> Codes {
    let mut c = [0; MAX_SORT_KEYS];
    c[0] = first;
    c[1..=tail.len()].copy_from_slice(tail);
    c
}

impl Tuples {
    pub(crate) fn new(stride: usize) -> Tuples {
        Tuples {
            stride,
            tails: Vec::new(),
            counts: Vec::new(),
            free: Vec::new(),
            ids: hashbrown::HashMap::new(),
            tree: CountedTree::new(),
        }
    }

    /// A member now holds the tuple `first`, `tail`; whether it is the
    /// only one.
    pub(crate) fn add(&mut self, first: u64, tail: &[u64]) -> bool {
        let tail = &tail[..self.stride];
        let key = codes(first, tail);
        if let Some(&t) = self.ids.get(&key) {
            self.counts[t as usize] += 1;
            return false;
        }
        let t = match self.free.pop() {
            Some(t) => {
                let at = t as usize * self.stride;
                self.tails[at..at + self.stride].copy_from_slice(tail);
                self.counts[t as usize] = 1;
                t
            }
            None => {
                self.tails.extend_from_slice(tail);
                self.counts.push(1);
                (self.counts.len() - 1) as u32
            }
        };
        self.ids.insert(key, t);
        let tie = Tails {
            tails: &self.tails,
            stride: self.stride,
        };
        self.tree.insert(first, t, &tie);
        true
    }

    /// A member no longer holds the tuple `first`, `tail`; whether it was
    /// the last one.
    pub(crate) fn remove(&mut self, first: u64, tail: &[u64]) -> bool {
        let key = codes(first, &tail[..self.stride]);
        let Some(&t) = self.ids.get(&key) else {
            debug_assert!(false, "a tuple removed that no member held");
            return false;
        };
        let n = &mut self.counts[t as usize];
        *n -= 1;
        if *n > 0 {
            return false;
        }
        let tie = Tails {
            tails: &self.tails,
            stride: self.stride,
        };
        self.tree.remove(first, t, &tie);
        self.ids.remove(&key);
        self.free.push(t);
        true
    }

    /// Distinct tuples strictly better than `first`, `tail`.
    pub(crate) fn better(&self, first: u64, tail: &[u64]) -> usize {
        let (s, tail) = (self.stride, &tail[..self.stride]);
        self.tree.partition_point(|k, t| {
            let at = t as usize * s;
            k < first || (k == first && self.tails[at..at + s] < *tail)
        })
    }

    /// Distinct tuples held.
    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// Members counted over every tuple.
    pub(crate) fn members(&self) -> u64 {
        self.counts.iter().map(|&n| u64::from(n)).sum()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.tails.capacity() * 8
            + self.counts.capacity() * 4
            + self.free.capacity() * 4
            + self.ids.capacity() * (size_of::<Codes>() + 5)
            + self.tree.heap_bytes()
    }

    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let tie = Tails {
            tails: &self.tails,
            stride: self.stride,
        };
        self.tree.check_invariants(&tie)?;
        if self.ids.len() != self.tree.len() {
            return Err(format!(
                "{} tuple ids but {} entries in the tuple tree",
                self.ids.len(),
                self.tree.len()
            ));
        }
        Ok(())
    }
}
