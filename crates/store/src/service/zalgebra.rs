//! Redis's sorted-set algebra on boards: the reads ZUNION, ZINTER, ZDIFF
//! and ZINTERCARD (`zunionInterDiffGenericCommand`), and the write that
//! stores a computed result, ZDIFFSTORE's and ZRANGESTORE's
//! ([`Service::zreplace`], logged as one `Replace` record).
//!
//! The reads see every source at one instant: they hold the keyspace's
//! gate for reading and each distinct board's lock, taken in name order as
//! the engine's own combine takes them.

use std::cmp::Ordering;

use podium_core::error::ApiError;
use podium_core::keystore::{Lsn, Scored, SetOp, Writes, SMALL_ZSET};
use podium_core::memory;
use podium_engine::{Aggregate, Board, Submit, UpdateOp};
use std::collections::hash_map::{Entry, HashMap};

use super::Service;
use crate::keyspace::{board_name, wrong_type};
use crate::storage::record::LogOp;

/// How many result entries are built between two looks at the memory
/// budget.
const BUDGET_STRIDE: usize = 1024;

/// A result entry's bytes beyond its member, for the budget: the vector
/// slot and the member's heap block.
const ENTRY_OVERHEAD: usize = 48;

/// Redis's weighted score: a NaN (an infinite score times a zero weight)
/// counts as 0.
fn weighted(score: f64, weight: f64) -> f64 {
    let x = score * weight;
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

/// A member's score as Redis reads it from a source: a set of up to
/// [`SMALL_ZSET`] members keeps its scores as text, where -0 is 0.
fn read_score(b: &Board, s: f64) -> f64 {
    if s == 0.0 && b.len() <= SMALL_ZSET {
        0.0
    } else {
        s
    }
}

/// Refuses a result growing past the memory budget, looking every
/// [`BUDGET_STRIDE`] entries at the bytes the next stride may take.
struct Budget {
    since: usize,
    bytes: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget { since: 0, bytes: 0 }
    }

    fn add(&mut self, member: &[u8]) -> Result<(), ApiError> {
        self.since += 1;
        self.bytes += member.len() + ENTRY_OVERHEAD;
        if self.since >= BUDGET_STRIDE {
            if !memory::room_for(self.bytes) {
                return Err(memory::refusal());
            }
            self.since = 0;
            self.bytes = 0;
        }
        Ok(())
    }
}

/// Sorts a result into Redis's order: ascending score (-0 equal to 0),
/// ties by member bytes.
fn redis_order(out: &mut Scored) {
    out.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
}

impl Service {
    /// Runs `f` on the sources as boards (`None`: a missing key, an empty
    /// set), in the order given, each with its weight, after Redis's type
    /// check of every key in order.
    fn with_sources<R>(
        &self,
        sources: &[(&[u8], f64)],
        f: impl FnOnce(&[(Option<&Board>, f64)]) -> Result<R, ApiError>,
    ) -> Result<R, ApiError> {
        for (k, _) in sources {
            self.purge_if_expired(k);
        }
        let _gate = self.reading_all();
        let mut names: Vec<Option<&str>> = Vec::with_capacity(sources.len());
        for (k, _) in sources {
            if self.keyspace.holds_other_than_zset(k) {
                return Err(wrong_type());
            }
            // A key that cannot name a board holds no sorted set.
            names.push(board_name(k).ok());
        }
        let mut distinct: Vec<&str> = names.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let refs: Vec<_> = distinct.iter().map(|n| self.store.get(n)).collect();
        // Locked in name order.
        let guards: Vec<_> = refs.iter().map(|r| r.as_ref().map(|b| b.read())).collect();
        let boards: Vec<(Option<&Board>, f64)> = names
            .iter()
            .zip(sources)
            .map(|(n, (_, w))| {
                let b = n.and_then(|n| {
                    let i = distinct.binary_search(&n).ok()?;
                    guards[i].as_deref()
                });
                (b.filter(|b| !b.is_empty()), *w)
            })
            .collect();
        f(&boards)
    }

    /// ZUNION / ZINTER / ZDIFF, in Redis's order.
    pub fn zalgebra(
        &self,
        sources: &[(&[u8], f64)],
        agg: Aggregate,
        op: SetOp,
    ) -> Result<Scored, ApiError> {
        self.with_sources(sources, |boards| {
            let mut budget = Budget::new();
            let mut out: Scored = Vec::new();
            match op {
                SetOp::Inter => {
                    inter(boards, agg, |m, s| {
                        budget.add(m)?;
                        out.push((m.to_vec(), s));
                        Ok(true)
                    })?;
                }
                SetOp::Union => {
                    let mut at: HashMap<&[u8], usize> = HashMap::new();
                    for &(b, w) in &by_size(boards) {
                        let Some(b) = b else { continue };
                        for (m, s, _) in b.iter() {
                            let x = weighted(read_score(b, s), w);
                            match at.entry(m) {
                                Entry::Occupied(e) => {
                                    let slot = &mut out[*e.get()].1;
                                    *slot = agg.apply(*slot, x);
                                }
                                Entry::Vacant(e) => {
                                    budget.add(m)?;
                                    e.insert(out.len());
                                    out.push((m.to_vec(), x));
                                }
                            }
                        }
                    }
                }
                SetOp::Diff => {
                    if let Some((Some(first), _)) = boards.first() {
                        'members: for (m, s, _) in first.iter() {
                            for (other, _) in &boards[1..] {
                                if other.is_some_and(|o| o.score(m).is_some()) {
                                    continue 'members;
                                }
                            }
                            budget.add(m)?;
                            out.push((m.to_vec(), read_score(first, s)));
                        }
                    }
                }
            }
            redis_order(&mut out);
            Ok(out)
        })
    }

    /// ZINTERCARD: the size of the intersection, counting no further than
    /// `limit` (0: no limit).
    pub fn zintercard(&self, keys: &[&[u8]], limit: u64) -> Result<u64, ApiError> {
        let sources: Vec<(&[u8], f64)> = keys.iter().map(|k| (*k, 1.0)).collect();
        self.with_sources(&sources, |boards| {
            let mut n = 0u64;
            inter(boards, Aggregate::Sum, |_, _| {
                n += 1;
                Ok(limit == 0 || n < limit)
            })?;
            Ok(n)
        })
    }

    /// ZDIFFSTORE / ZRANGESTORE: `dest` becomes exactly `entries`, as one
    /// `Replace` record (after the `Create` of a new board); a board there
    /// keeps its config, a hash there is replaced, an expiry is dropped (the
    /// destination is a new key, as in Redis). No entries delete `dest`.
    pub fn zreplace(&self, dest: &[u8], entries: Scored) -> Result<(u64, Lsn), ApiError> {
        self.writable()?;
        self.atomically(Writes::key(dest), || {
            self.purge_if_expired(dest);
            if entries.is_empty() {
                let (_, lsn) = self.delete_key_locked(dest);
                return Ok((0, lsn));
            }
            let name = board_name(dest)?;
            let mut lsn = 0;
            if self.keyspace.holds_other_than_zset(dest) {
                lsn = self.delete_key_locked(dest).1;
            }
            if self.keyspace.expiry(dest).is_some() {
                lsn = self.append(&LogOp::Persist { key: dest.to_vec() });
                self.keyspace.forget_expiry(dest);
            }
            let board = name.to_string();
            let (n, l) = self.write_board(name, |b| {
                let n = replace(b, &entries)?;
                Ok((n, Some(LogOp::Replace { board, entries })))
            })?;
            Ok((n, lsn.max(l)))
        })
    }
}

/// Replaces `b`'s members with `entries` (its config kept), as
/// [`Service::zreplace`] applies it and recovery replays it: nothing
/// changes when the engine refuses them. Returns the board's size.
pub(crate) fn replace(b: &mut Board, entries: &Scored) -> Result<u64, podium_engine::Error> {
    if b.is_read_only() {
        return Err(podium_engine::Error::ReadOnly(String::new()));
    }
    let mut fresh = Board::new(b.config().clone())?;
    let subs: Vec<Submit> = entries
        .iter()
        .map(|(m, s)| Submit {
            op: Some(UpdateOp::Set),
            ..Submit::new(m, *s)
        })
        .collect();
    fresh.submit_many(&subs)?;
    b.replace_content(fresh);
    Ok(b.len() as u64)
}

/// The sources from the smallest, as Redis sorts them for a union or an
/// intersection (stably: equal sizes keep their order).
fn by_size<'a>(boards: &[(Option<&'a Board>, f64)]) -> Vec<(Option<&'a Board>, f64)> {
    let mut v = boards.to_vec();
    v.sort_by_key(|(b, _)| b.map_or(0, |b| b.len()));
    v
}

/// Redis's intersection: each member of the smallest source, in its order,
/// with its aggregate over the others (in size order); `f` takes each
/// member in every source and says whether to go on.
fn inter(
    boards: &[(Option<&Board>, f64)],
    agg: Aggregate,
    mut f: impl FnMut(&[u8], f64) -> Result<bool, ApiError>,
) -> Result<(), ApiError> {
    let order = by_size(boards);
    let Some(&(Some(first), w0)) = order.first() else {
        return Ok(());
    };
    if order.iter().any(|(b, _)| b.is_none()) {
        return Ok(());
    }
    'members: for (m, s, _) in first.iter() {
        let mut score = weighted(read_score(first, s), w0);
        for &(other, w) in &order[1..] {
            let Some(x) = other.and_then(|o| Some(read_score(o, o.score(m)?))) else {
                continue 'members;
            };
            // Not mapped from NaN: Redis maps only the first source's.
            score = agg.apply(score, x * w);
        }
        if !f(m, score)? {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_core::entry::{MemberBytes, SubmitRec};

    fn add(s: &Service, key: &str, pairs: &[(f64, &str)]) {
        let entries = pairs
            .iter()
            .map(|(score, m)| SubmitRec {
                scores: None,
                member: MemberBytes::from_slice(m.as_bytes()),
                score: *score,
                op: Some(UpdateOp::Set),
                presence: Default::default(),
                cond: Default::default(),
                name: None,
                data: None,
            })
            .collect();
        s.zadd(key.as_bytes(), entries, Default::default()).unwrap();
    }

    fn scored(v: &[(&str, f64)]) -> Scored {
        v.iter().map(|(m, s)| (m.as_bytes().to_vec(), *s)).collect()
    }

    #[test]
    fn union_inter_and_diff_in_redis_order() {
        let s = Service::in_memory();
        add(&s, "a", &[(1.0, "x"), (2.0, "y"), (3.0, "z")]);
        add(&s, "b", &[(10.0, "y"), (-1.0, "w")]);
        let src = |w: f64| vec![(&b"a"[..], 1.0), (&b"b"[..], w), (&b"nope"[..], 1.0)];
        assert_eq!(
            s.zalgebra(&src(2.0), Aggregate::Sum, SetOp::Union).unwrap(),
            scored(&[("w", -2.0), ("x", 1.0), ("z", 3.0), ("y", 22.0)])
        );
        assert_eq!(
            s.zalgebra(&src(1.0)[..2], Aggregate::Max, SetOp::Inter)
                .unwrap(),
            scored(&[("y", 10.0)])
        );
        // A missing source empties an intersection.
        assert!(s
            .zalgebra(&src(1.0), Aggregate::Sum, SetOp::Inter)
            .unwrap()
            .is_empty());
        assert_eq!(
            s.zalgebra(&src(1.0), Aggregate::Sum, SetOp::Diff).unwrap(),
            scored(&[("x", 1.0), ("z", 3.0)])
        );
        // Ties by member; inf × 0 counts as 0.
        add(&s, "c", &[(f64::INFINITY, "q"), (0.0, "p")]);
        assert_eq!(
            s.zalgebra(&[(b"c", 0.0)], Aggregate::Sum, SetOp::Union)
                .unwrap(),
            scored(&[("p", 0.0), ("q", 0.0)])
        );
        assert_eq!(s.zintercard(&[b"a", b"b"], 0).unwrap(), 1);
        assert_eq!(s.zintercard(&[b"a", b"a"], 2).unwrap(), 2);
        assert_eq!(s.zintercard(&[b"a", b"nope"], 0).unwrap(), 0);
        s.hset(b"h", &[(b"f", b"v")]).unwrap();
        let e = s
            .zalgebra(&[(b"a", 1.0), (b"h", 1.0)], Aggregate::Sum, SetOp::Diff)
            .unwrap_err();
        assert_eq!(e.code, podium_core::error::Code::WrongType);
    }

    #[test]
    fn a_replaced_board_survives_restart() {
        let dir = std::env::temp_dir().join(format!("podium-zreplace-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || {
            let store = podium_engine::Store::new();
            let (storage, aux, report) =
                crate::storage::open(&dir, crate::FsyncPolicy::Always, &store).unwrap();
            Service::new(store, Some(storage), aux, report, u64::MAX)
        };
        let members = |s: &Service, k: &[u8]| {
            s.zread(k, |b| {
                b.iter()
                    .map(|(m, x, _)| (m.to_vec(), x))
                    .collect::<Vec<_>>()
            })
            .unwrap()
        };
        let before = {
            let s = open();
            add(&s, "d", &[(5.0, "old"), (6.0, "b")]);
            s.hset(b"h", &[(b"f", b"v")]).unwrap();
            s.zreplace(b"d", scored(&[("a", 1.0), ("b", -0.0)]))
                .unwrap();
            s.zreplace(b"h", scored(&[("m", 2.0)])).unwrap();
            add(&s, "gone", &[(1.0, "x")]);
            s.zreplace(b"gone", Vec::new()).unwrap();
            (members(&s, b"d"), members(&s, b"h"))
        };
        let s = open();
        assert_eq!((members(&s, b"d"), members(&s, b"h")), before);
        assert_eq!(before.0.as_ref().map(Vec::len), Some(2));
        assert_eq!(s.key_type(b"h"), Some(podium_core::keystore::KeyType::Zset));
        assert_eq!(s.key_type(b"gone"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn replace_stores_exactly_the_entries_and_empty_deletes() {
        let s = Service::in_memory();
        add(&s, "d", &[(5.0, "old")]);
        s.hset(b"h", &[(b"f", b"v")]).unwrap();
        let (n, _) = s
            .zreplace(b"d", scored(&[("a", 1.0), ("b", -0.0)]))
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(s.zread(b"d", |b| b.score(b"old")).unwrap(), Some(None));
        assert_eq!(s.zread(b"d", |b| b.score(b"b")).unwrap(), Some(Some(0.0)));
        assert_eq!(s.zreplace(b"h", scored(&[("m", 1.0)])).unwrap().0, 1);
        assert_eq!(s.key_type(b"h"), Some(podium_core::keystore::KeyType::Zset));
        assert_eq!(s.zreplace(b"d", Vec::new()).unwrap().0, 0);
        assert_eq!(s.key_type(b"d"), None);
    }
}
