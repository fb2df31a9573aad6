//! Merging and intersecting boards into a new one (Redis's ZUNIONSTORE /
//! ZINTERSTORE), with weights and an aggregate.

use super::*;

impl Board {
    /// `merge` (union) or `intersect` of weighted sources into a new board
    /// with `config`, as Redis ZUNIONSTORE / ZINTERSTORE (so, as there, the
    /// destination's `min_score`/`max_score` do not filter the result; its
    /// `max_members` does): sources are visited
    /// from the smallest, a weighted NaN counts as 0, and a member's result
    /// is the aggregate of its weighted scores.
    pub fn combine(
        config: BoardConfig,
        sources: &[(&Board, f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<Board> {
        config.validate()?;
        if config.has_sort() || sources.iter().any(|s| s.0.config.has_sort()) {
            return Err(Error::WrongKind(
                "merge and intersect combine single scores; boards with sort keys cannot be combined"
                    .into(),
            ));
        }
        if sources.iter().any(|s| s.1.is_nan()) {
            return Err(Error::BadArgument("weight is not a number".into()));
        }
        let mut order: Vec<&(&Board, f64)> = sources.iter().collect();
        order.sort_by_key(|s| s.0.len());
        // Redis's rules (7.0 `zunionInterDiffGenericCommand`): a union maps
        // every weighted NaN (inf × 0) to 0; an intersection only a member's
        // first, aggregating the others as they are (see `apply`).
        let weighted = |w: f64, s: f64| {
            let x = s * w;
            if x.is_nan() {
                0.0
            } else {
                x
            }
        };
        // Insertion-ordered, so the result (and `first`/`last` sequences)
        // is the same on every replay.
        let mut acc: Vec<(&[u8], f64)> = Vec::new();
        let mut index: hashbrown::HashMap<&[u8], usize> = hashbrown::HashMap::new();
        if intersect {
            if let Some(&&(first, w0)) = order.first() {
                'members: for (m, s, _) in first.iter() {
                    let mut total = weighted(w0, s);
                    for &&(other, w) in &order[1..] {
                        match other.score(m) {
                            Some(x) => total = agg.apply(total, w * x),
                            None => continue 'members,
                        }
                    }
                    acc.push((m, total));
                }
            }
        } else {
            for &&(src, w) in &order {
                for (m, s, _) in src.iter() {
                    let x = weighted(w, s);
                    match index.entry(m) {
                        hashbrown::hash_map::Entry::Occupied(e) => {
                            let slot = &mut acc[*e.get()].1;
                            *slot = agg.apply(*slot, x);
                        }
                        hashbrown::hash_map::Entry::Vacant(e) => {
                            e.insert(acc.len());
                            acc.push((m, x));
                        }
                    }
                }
            }
        }
        let need: usize = acc.iter().map(|(m, _)| Members::stored_size(m.len())).sum();
        // A fresh arena wastes under 1% at chunk tails (an entry is at most
        // 514 bytes of a 64 KiB chunk).
        if need + need / 100 + (1 << 16) > crate::members::MAX_ARENA_BYTES {
            return Err(Error::BoardFull {
                max: crate::members::MAX_ARENA_BYTES,
            });
        }
        let mut out = Board::empty(config);
        for (m, s) in acc {
            out.submit_unchecked(m, s);
        }
        out.evict_overflow();
        Ok(out)
    }

    /// Inserts or overwrites a plain board's member without validation
    /// (for combine).
    pub(super) fn submit_unchecked(&mut self, member: &[u8], s: f64) {
        if let Some(id) = self.members.find(member) {
            let key = self.key_of_id(id);
            self.tree_remove(key, id);
            self.index_remove(id);
            self.members.remove(id);
        }
        let seq = self.bump_seq();
        let id = self.members.insert(member, s, seq);
        self.index_insert(id);
        let key = self.key_of(s);
        self.tree_insert(key, id);
    }
}
