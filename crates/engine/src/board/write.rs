//! A board's writes: submissions one at a time and in batches, member
//! data, removals by member, rank and score, pops, clearing, and config
//! changes (re-sorting in place).

use super::*;

impl Board {
    /// `submit`: adds or updates one member.
    pub fn submit(&mut self, s: &Submit) -> Result<SubmitResult> {
        self.submit_hashed(s, self.members.hash_of(s.member))
    }

    /// [`Board::submit`] of a member whose hash is known (`submit_many`
    /// hashes each member once for its prefetches, its lookup and its
    /// interning).
    pub(super) fn submit_hashed(&mut self, s: &Submit, hash: u64) -> Result<SubmitResult> {
        self.writable()?;
        check_member(s.member)?;
        if self.config.has_sort() {
            return self.submit_keys(s, hash);
        }
        no_scores(s)?;
        if s.score.is_nan() {
            return Err(Error::NanScore);
        }
        self.check_extra(s.name, s.data)?;
        let op = s.op.unwrap_or(self.config.update);
        if op != UpdateOp::Incr {
            self.config.in_bounds(s.score)?;
        }
        let Some(id) = self.members.find_hashed(hash, s.member) else {
            return self.submit_new(s, hash);
        };
        let old = self.members.score(id);
        // As Redis: NX on an existing member is blocked before any
        // arithmetic (so even an increment that would give NaN does nothing).
        let new = match op {
            _ if s.presence == Presence::OnlyNew => old,
            UpdateOp::Set | UpdateOp::Best => s.score,
            UpdateOp::Incr => old + s.score,
        };
        if new.is_nan() {
            return Err(Error::NanResult);
        }
        let blocked = s.presence == Presence::OnlyNew
            || (op == UpdateOp::Best && !self.config.better(new, old))
            || (s.cond == Cond::Greater && new <= old)
            || (s.cond == Cond::Less && new >= old);
        let changed = !blocked && score::encode(new) != score::encode(old);
        if changed {
            self.config.in_bounds(new)?;
        }
        self.apply_extra(id, s.name, s.data);
        self.index_refresh(id, s.name.is_some(), s.data.is_some());
        let old_key = self.key_of(old);
        let (key, pos) = if changed {
            self.tree_remove(old_key, id);
            self.index_unrank(id);
            self.members.set_score(id, new);
            let seq = self.bump_seq();
            self.members.set_seq(id, seq);
            self.index_rerank(id);
            let key = self.key_of(new);
            (key, self.tree_insert(key, id))
        } else {
            let pos = self.tree.position(old_key, id, &ties!(self)).unwrap_or(0);
            (old_key, pos)
        };
        Ok(SubmitResult {
            // Applied without moving (e.g. -0 + 0): Redis replies with the
            // computed score while the stored one stays.
            score: Some(if !blocked && !changed {
                new
            } else {
                self.members.score(id)
            }),
            rank: Some(self.rank_at(pos, key, id)),
            previous: Some(old),
            applied: !blocked,
            created: false,
            changed,
            evicted: 0,
            scores: None,
            previous_scores: None,
        })
    }

    pub(super) fn submit_new(&mut self, s: &Submit, hash: u64) -> Result<SubmitResult> {
        if s.presence == Presence::OnlyExisting {
            return Ok(SubmitResult::absent());
        }
        // An absent member counts as 0 for `incr`, as in Redis.
        self.config.in_bounds(s.score)?;
        if !self.members.has_room(s.member.len()) {
            return Err(Error::BoardFull {
                max: crate::members::MAX_ARENA_BYTES,
            });
        }
        let seq = self.bump_seq();
        let id = self
            .members
            .insert_hashed(s.member, s.score.to_bits(), seq, hash);
        self.apply_extra(id, s.name, s.data);
        self.index_insert(id);
        let key = self.key_of(s.score);
        let pos = self.tree_insert(key, id);
        let evicted = self.evict_overflow();
        let kept = (pos as u64) < self.tree.len() as u64
            && self.config.max_members.is_none_or(|m| (pos as u64) < m);
        Ok(SubmitResult {
            score: kept.then_some(s.score),
            rank: kept.then(|| self.rank_at(pos, key, id)),
            previous: None,
            applied: true,
            created: kept,
            changed: kept,
            evicted,
            scores: None,
            previous_scores: None,
        })
    }

    pub(super) fn given(&self, s: &Submit) -> Result<[Option<Num>; MAX_SORT_KEYS]> {
        self.config.given(s)
    }

    /// The tree-order codes of a tuple of values.
    pub(super) fn codes(&self, v: &[Num]) -> [u64; MAX_SORT_KEYS] {
        let mut c = [0; MAX_SORT_KEYS];
        for ((c, n), k) in c.iter_mut().zip(v).zip(&self.config.sort) {
            *c = k.codec().encode(n.raw());
        }
        c
    }

    /// [`Board::submit_hashed`] on a board with `sort` keys.
    pub(super) fn submit_keys(&mut self, s: &Submit, hash: u64) -> Result<SubmitResult> {
        self.check_extra(s.name, s.data)?;
        let given = self.given(s)?;
        self.submit_given(s, hash, &given)
    }

    /// [`Board::submit_keys`] of a submission already checked, with its
    /// values as [`Board::given`] returned them.
    pub(super) fn submit_given(
        &mut self,
        s: &Submit,
        hash: u64,
        given: &[Option<Num>; MAX_SORT_KEYS],
    ) -> Result<SubmitResult> {
        let op = s.op.unwrap_or(self.config.update);
        let n = self.config.sort.len();
        let Some(id) = self.members.find_hashed(hash, s.member) else {
            return self.submit_keys_new(s, hash, given);
        };
        let old = self.scores_of(id);
        let mut new = old;
        // As Redis: NX on an existing member is blocked before any
        // arithmetic.
        if s.presence != Presence::OnlyNew {
            let mut v = [Num::Float(0.0); MAX_SORT_KEYS];
            for (j, k) in self.config.sort.iter().enumerate() {
                v[j] = match (given[j], op) {
                    (None, _) => old[j],
                    (Some(g), UpdateOp::Incr) if s.scores.is_some() => k.apply(old[j], g)?,
                    // A bare score (a Redis write) adds to the first key.
                    (Some(g), UpdateOp::Incr) => k.apply_op(KeyOp::Incr, old[j], g)?,
                    (Some(g), _) => g,
                };
            }
            new = Scores::new(&v[..n]);
        }
        let (oc, nc) = (self.codes(&old), self.codes(&new));
        let numeric = new
            .iter()
            .zip(old.iter())
            .map(|(a, b)| a.cmp_value(b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        let blocked = s.presence == Presence::OnlyNew
            || (op == UpdateOp::Best && nc >= oc)
            || (s.cond == Cond::Greater && numeric != Ordering::Greater)
            || (s.cond == Cond::Less && numeric != Ordering::Less);
        let changed = !blocked && nc != oc;
        if changed {
            self.config.in_bounds(new.first().as_f64())?;
        }
        self.apply_extra(id, s.name, s.data);
        self.index_refresh(id, s.name.is_some(), s.data.is_some());
        let (key, pos) = if changed {
            self.tree_remove(oc[0], id);
            self.index_unrank(id);
            self.members.set_raw(id, new.first().raw());
            self.members.set_keys(id, &nc[1..n]);
            let seq = self.bump_seq();
            self.members.set_seq(id, seq);
            self.index_rerank(id);
            (nc[0], self.tree_insert(nc[0], id))
        } else {
            let pos = self.tree.position(oc[0], id, &ties!(self)).unwrap_or(0);
            (oc[0], pos)
        };
        let now = if !blocked && !changed {
            new
        } else {
            self.scores_of(id)
        };
        Ok(SubmitResult {
            score: Some(now.first().as_f64()),
            rank: Some(self.rank_at(pos, key, id)),
            previous: Some(old.first().as_f64()),
            applied: !blocked,
            created: false,
            changed,
            evicted: 0,
            scores: Some(now),
            previous_scores: Some(old),
        })
    }

    pub(super) fn submit_keys_new(
        &mut self,
        s: &Submit,
        hash: u64,
        given: &[Option<Num>; MAX_SORT_KEYS],
    ) -> Result<SubmitResult> {
        if s.presence == Presence::OnlyExisting {
            return Ok(SubmitResult::absent());
        }
        let n = self.config.sort.len();
        let mut v = [Num::Float(0.0); MAX_SORT_KEYS];
        for (j, k) in self.config.sort.iter().enumerate() {
            v[j] = given[j].unwrap_or_else(|| k.zero());
        }
        let new = Scores::new(&v[..n]);
        self.config.in_bounds(new.first().as_f64())?;
        if !self.members.has_room(s.member.len()) {
            return Err(Error::BoardFull {
                max: crate::members::MAX_ARENA_BYTES,
            });
        }
        let codes = self.codes(&new);
        let seq = self.bump_seq();
        let id = self
            .members
            .insert_hashed(s.member, new.first().raw(), seq, hash);
        self.members.set_keys(id, &codes[1..n]);
        self.apply_extra(id, s.name, s.data);
        self.index_insert(id);
        let key = codes[0];
        let pos = self.tree_insert(key, id);
        let evicted = self.evict_overflow();
        let kept = (pos as u64) < self.tree.len() as u64
            && self.config.max_members.is_none_or(|m| (pos as u64) < m);
        Ok(SubmitResult {
            score: kept.then(|| new.first().as_f64()),
            rank: kept.then(|| self.rank_at(pos, key, id)),
            previous: None,
            applied: true,
            created: kept,
            changed: kept,
            evicted,
            scores: kept.then_some(new),
            previous_scores: None,
        })
    }

    /// `submit_many`: a batch applied in order. Bad input anywhere in the
    /// batch (NaN, over-long member, bad data, a `set` out of bounds) refuses
    /// the whole batch before anything changes; a failure that depends on
    /// the board's state (an `incr` leaving the bounds) fails that item only.
    pub fn submit_many(&mut self, batch: &[Submit]) -> Result<Vec<Result<SubmitResult>>> {
        self.writable()?;
        let sorted = self.config.has_sort();
        // A sorted board's values, checked once here and used as they are
        // by each item's submission.
        let mut givens = Vec::with_capacity(if sorted { batch.len() } else { 0 });
        for s in batch {
            check_member(s.member)?;
            self.check_extra(s.name, s.data)?;
            if sorted {
                givens.push(self.given(s)?);
                continue;
            }
            no_scores(s)?;
            if s.score.is_nan() {
                return Err(Error::NanScore);
            }
            if s.op.unwrap_or(self.config.update) != UpdateOp::Incr {
                self.config.in_bounds(s.score)?;
            }
        }
        let mut out = Vec::with_capacity(batch.len());
        let mut ids = Vec::with_capacity(32);
        let mut hashes = Vec::with_capacity(32);
        let mut keys = Vec::with_capacity(64);
        for (g, group) in batch.chunks(32).enumerate() {
            // Bring in everything the group will touch, all misses at once:
            // the members' index slots, records and ids, then the leaves of
            // their old and new scores. Hints only: later items of the group
            // see the earlier ones applied, and a stale guess costs a load.
            ids.clear();
            let members: Vec<&[u8]> = group.iter().map(|s| s.member).collect();
            self.find_batch_hashed(&members, &mut ids, &mut hashes);
            keys.clear();
            for (k, (s, id)) in group.iter().zip(&ids).enumerate() {
                if sorted {
                    keys.extend(id.map(|id| self.key_of_id(id)));
                    keys.extend(self.first_key_hint(s, &givens[g * 32 + k], *id));
                    continue;
                }
                let old = id.map(|id| self.members.score(id));
                let new = match (s.op.unwrap_or(self.config.update), old) {
                    (UpdateOp::Incr, Some(old)) => old + s.score,
                    _ => s.score,
                };
                keys.extend(
                    old.into_iter()
                        .chain([new])
                        .filter(|x| !x.is_nan())
                        .map(|x| self.key_of(x)),
                );
            }
            self.tree.prefetch_leaves(&keys);
            for (k, (s, &h)) in group.iter().zip(&hashes).enumerate() {
                out.push(if sorted {
                    self.submit_given(s, h, &givens[g * 32 + k])
                } else {
                    self.submit_hashed(s, h)
                });
            }
        }
        Ok(out)
    }

    /// The tree key a sorted board's submission will most likely give its
    /// member (`id`, if present), for prefetching: `None` when it gives no
    /// first key (the member keeps its place in the tree's key order).
    pub(super) fn first_key_hint(
        &self,
        s: &Submit,
        given: &[Option<Num>; MAX_SORT_KEYS],
        id: Option<u32>,
    ) -> Option<u64> {
        let g = given[0]?;
        let v = match (s.op.unwrap_or(self.config.update), id) {
            (UpdateOp::Incr, Some(id)) => {
                let k = &self.config.sort[0];
                let op = if s.scores.is_some() {
                    k.op
                } else {
                    KeyOp::Incr
                };
                k.apply_op(op, self.first.value(self.members.raw(id)), g)
                    .ok()?
            }
            _ => g,
        };
        Some(self.first.encode(v.raw()))
    }

    /// `set_data`: sets or clears a member's name and data; false if absent.
    pub fn set_data(
        &mut self,
        member: &[u8],
        name: Option<&str>,
        data: Option<&str>,
    ) -> Result<bool> {
        self.writable()?;
        self.check_extra(name, data)?;
        match self.members.find(member) {
            Some(id) => {
                self.apply_extra(id, name, data);
                self.index_refresh(id, name.is_some(), data.is_some());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// `remove`: returns how many of `members` were on the board.
    pub fn remove<M: AsRef<[u8]>>(&mut self, members: &[M]) -> Result<u64> {
        self.writable()?;
        let mut n = 0;
        for m in members {
            if let Some(id) = self.members.find(m.as_ref()) {
                let key = self.key_of_id(id);
                self.tree_remove(key, id);
                self.index_remove(id);
                self.members.remove(id);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Removes tree positions `[lo, hi)`; returns the removed entries when
    /// `collect` is set.
    pub(super) fn remove_span(&mut self, lo: usize, hi: usize, collect: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        if collect {
            out = self.collect(lo, hi.saturating_sub(lo), false);
        }
        for _ in lo..hi {
            let Some((key, id)) = self.tree.remove_at(lo) else {
                break;
            };
            self.distinct_remove(key, id, lo);
            self.index_remove(id);
            self.members.remove(id);
        }
        out
    }

    /// `remove_range` by rank: 1-based ranks `start..=stop` (unique ranks,
    /// i.e. positions, best first); returns how many were removed.
    pub fn remove_range_by_rank(&mut self, start: u64, stop: u64) -> Result<u64> {
        self.writable()?;
        let (lo, hi) = self.rank_span(start, stop);
        self.remove_span(lo, hi, false);
        Ok((hi - lo) as u64)
    }

    /// `remove_range` by score.
    pub fn remove_range_by_score<T: RangeValue>(&mut self, r: &ScoreRange<T>) -> Result<u64> {
        self.writable()?;
        r.validate()?;
        let (lo, hi) = self.score_span(r);
        self.remove_span(lo, hi, false);
        Ok((hi - lo) as u64)
    }

    /// Removes and returns up to `count` entries from the best end
    /// (`worst == false`) or the worst end (Redis ZPOPMIN / ZPOPMAX).
    pub fn pop(&mut self, count: u64, worst: bool) -> Result<Vec<Entry>> {
        self.writable()?;
        let n = self.len();
        let count = (count as usize).min(n);
        if worst {
            let mut v = self.remove_span(n - count, n, true);
            v.reverse();
            Ok(v)
        } else {
            Ok(self.remove_span(0, count, true))
        }
    }

    /// Empties the board, keeping its config.
    pub fn clear(&mut self) {
        let journal = std::mem::take(&mut self.journal);
        *self = self.emptied();
        self.journal = journal;
        self.journal.mark_all();
    }

    /// Moves the content out into a new board (for archives), leaving this
    /// one empty with the same config.
    pub fn take(&mut self) -> Board {
        let mut fresh = self.emptied();
        fresh.read_only = false;
        fresh.journal = std::mem::take(&mut self.journal);
        fresh.journal.mark_all();
        std::mem::replace(self, fresh)
    }

    /// `board_update`: applies a new config, re-ranking the members when the
    /// order, the tiebreak or the sort keys changed and evicting beyond a
    /// lowered `max_members`.
    pub fn set_config(&mut self, config: BoardConfig) -> Result<()> {
        self.set_config_progress(config, |_, _| {})
    }

    /// The members a re-ranking [`Board::set_config`] re-inserts between
    /// two calls of its `progress`.
    pub const RESORT_STEP: usize = 1 << 16;

    /// [`Board::set_config`], calling `progress(done, total)` as a
    /// re-ranking goes (every [`Board::RESORT_STEP`] members, and at the
    /// end). Keys keep their values by name when the sort changes (see
    /// [`crate::sort::key_sources`]); a value an integer key cannot hold
    /// refuses the change before anything changes.
    pub fn set_config_progress(
        &mut self,
        mut config: BoardConfig,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<()> {
        config.validate()?;
        // Whose archive a board is was settled by the reset that made it.
        config.archive = self.config.archive.clone();
        let rebuild = self.config.reranks(&config);
        // Members evicted by a smaller cap are journaled one by one; a
        // re-ranking is compared as a whole.
        if rebuild {
            self.journal.mark_all();
        }
        let searched = self.search.as_ref().map(|ix| ix.max_planes());
        let reindex = config.search_fields != self.config.search_fields;
        if !rebuild {
            self.config = config;
            self.evict_overflow();
            if reindex {
                self.reindex_after_config(searched);
            }
            return Ok(());
        }
        let sources = crate::sort::key_sources(&self.config, &config)?;
        let new_keys = config.keys();
        let moved = |b: &Board, id: u32| -> Result<Scores> {
            let old = b.scores_of(id);
            let mut v = [Num::Float(0.0); MAX_SORT_KEYS];
            for (j, src) in sources.iter().enumerate() {
                v[j] = match src {
                    // The stored values, not the config, refuse it.
                    Some(i) => new_keys[j].coerce(old[*i]).map_err(|_| {
                        Error::WrongKind(format!(
                            "member {:?} holds {} in a key that would be an integer key",
                            String::from_utf8_lossy(b.members.bytes(id)),
                            old[*i]
                        ))
                    })?,
                    None => new_keys[j].zero(),
                };
            }
            Ok(Scores::new(&v[..sources.len()]))
        };
        // Every value must fit its new key before anything changes.
        if config.sort.iter().any(|k| k.ty == KeyType::Int) {
            for (_, id) in self.tree.iter() {
                moved(self, id)?;
            }
        }
        // Re-submit every member in its current rank order, so `first`/`last`
        // sequences follow the old order.
        let total = self.len();
        let mut old = std::mem::replace(self, Self::empty(config.clone()));
        self.read_only = old.read_only;
        self.journal = std::mem::take(&mut old.journal);
        for (done, (_, id)) in old.tree.iter().enumerate() {
            if done % Self::RESORT_STEP == 0 && done > 0 {
                progress(done, total);
            }
            let v = moved(&old, id)?;
            let codes = self.codes(&v);
            let seq = self.bump_seq();
            let hash = self.members.hash_of(old.members.bytes(id));
            let nid = self
                .members
                .insert_hashed(old.members.bytes(id), v.first().raw(), seq, hash);
            self.members.set_keys(nid, &codes[1..v.len()]);
            if let Some(e) = old.members.extra(id) {
                self.members.set_extra(nid, e.clone());
            }
            let k = self.key_of_id(nid);
            self.tree_insert(k, nid);
        }
        progress(total, total);
        self.evict_overflow();
        self.reindex_after_config(searched);
        Ok(())
    }

    /// After a config change that replaced the member ids or the search
    /// fields: rebuilds the index of a board that had one (none when the
    /// new `search_fields` is empty: search is then disabled).
    pub(super) fn reindex_after_config(&mut self, searched: Option<usize>) {
        self.search = None;
        if let Some(max_planes) = searched {
            if !self.config.search_fields.is_empty() {
                self.rebuild_search(max_planes);
            }
        }
    }

    /// Replaces this board's content with `other`'s (merge/intersect into
    /// an existing destination), keeping this board's search index
    /// enabled: it is rebuilt for the new content at once.
    pub fn replace_content(&mut self, other: Board) {
        let searched = self.search.as_ref().map(|ix| ix.max_planes());
        let journal = std::mem::take(&mut self.journal);
        *self = other;
        self.journal = journal;
        self.journal.mark_all();
        if self.search.is_none() {
            self.reindex_after_config(searched);
        }
    }
}
