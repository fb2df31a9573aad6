//! Redis's lexicographic ranges (ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANGE …
//! BYLEX, ZLEXCOUNT, ZREMRANGEBYLEX) over a board seen in Redis's order
//! (see [`RedisView`]): the range syntax and where Redis finds a range's
//! ends.
//!
//! Redis defines these for a set whose members all have one score, and
//! finds a range by comparing members only, as if they were sorted by
//! bytes. Two walks do it, and podium follows each:
//!
//! - a set of up to [`SMALL_ZSET`] members (Redis's listpack) is scanned
//!   from one end to the first member past the bound, after checking that
//!   the range can meet the set at all (its last member is not below the
//!   minimum, its first not above the maximum);
//! - a larger set (Redis's skiplist) is searched: the bound's position is
//!   found by one descent of the board ([`Board::partition_point`]),
//!   O(log n) comparisons, never a scan.
//!
//! With one score, or whenever members rise with the order, both give
//! exactly Redis's answer. With mixed scores whose members do not rise
//! with them, the members of a range are not contiguous; the small-set
//! scan still answers as Redis's listpack does, while the search of a
//! large set finds one of the places where members cross the bound — as
//! Redis's skiplist does, whose choice among them depends on its nodes'
//! random levels. A board whose tiebreak is not `member` is seen in its
//! own order (reversed for `desc`), so BYLEX compares members in that
//! order.

use std::cmp::Ordering;

use podium_engine::{Board, Entry, Order};

/// Largest sorted set Redis keeps compact (`zset-max-listpack-entries`).
pub const SMALL_ZSET: usize = 128;

/// One end of a lexicographic range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    /// `[m`.
    Incl(Vec<u8>),
    /// `(m`.
    Excl(Vec<u8>),
}

impl LexBound {
    /// `zslParseLexRangeItem`; `None`: not a range item. (`+` and `-` are
    /// read as C strings: what follows a NUL after them is not seen.)
    pub fn parse(a: &[u8]) -> Option<LexBound> {
        let alone = a.get(1).is_none_or(|&c| c == 0);
        match a.first()? {
            b'+' if alone => Some(LexBound::Max),
            b'-' if alone => Some(LexBound::Min),
            b'(' => Some(LexBound::Excl(a[1..].to_vec())),
            b'[' => Some(LexBound::Incl(a[1..].to_vec())),
            _ => None,
        }
    }

    /// Whether the bound itself is outside the range (Redis marks `-` and
    /// `+` exclusive too).
    fn exclusive(&self) -> bool {
        !matches!(self, LexBound::Incl(_))
    }

    /// `sdscmplex` of a member against the bound.
    fn cmp_member(&self, v: &[u8]) -> Ordering {
        match self {
            LexBound::Min => Ordering::Greater,
            LexBound::Max => Ordering::Less,
            LexBound::Incl(s) | LexBound::Excl(s) => v.cmp(s),
        }
    }

    /// `sdscmplex` of two bounds (`-`/`+` equal only to themselves).
    fn cmp_bound(&self, other: &LexBound) -> Ordering {
        use LexBound::*;
        match (self, other) {
            (Min, Min) | (Max, Max) => Ordering::Equal,
            (Min, _) | (_, Max) => Ordering::Less,
            (Max, _) | (_, Min) => Ordering::Greater,
            (Incl(a) | Excl(a), Incl(b) | Excl(b)) => a.cmp(b),
        }
    }
}

/// A parsed `min max` pair, in ascending terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    /// `zslParseLexRange`; `None`: Redis's `min or max not valid string
    /// range item`.
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    fn gte_min(&self, v: &[u8]) -> bool {
        match self.min.cmp_member(v) {
            Ordering::Greater => true,
            Ordering::Equal => !self.min.exclusive(),
            Ordering::Less => false,
        }
    }

    fn lte_max(&self, v: &[u8]) -> bool {
        match self.max.cmp_member(v) {
            Ordering::Less => true,
            Ordering::Equal => !self.max.exclusive(),
            Ordering::Greater => false,
        }
    }

    /// A range no member can be in (`min` above `max`, or equal with an
    /// exclusive end).
    fn always_empty(&self) -> bool {
        match self.min.cmp_bound(&self.max) {
            Ordering::Greater => true,
            Ordering::Equal => self.min.exclusive() || self.max.exclusive(),
            Ordering::Less => false,
        }
    }
}

/// How many entries a walk reads from the board at a time.
const CHUNK: usize = 256;

/// A non-empty board in Redis's order: index `i` is board position `i`
/// (asc) or `len - 1 - i` (desc); see the Redis frontend's notes on
/// order. A small set is read whole, once, as Redis scans its listpack.
pub struct RedisView<'a> {
    board: &'a Board,
    desc: bool,
    len: usize,
    small: Option<Vec<Entry>>,
}

impl<'a> RedisView<'a> {
    pub fn new(board: &'a Board) -> RedisView<'a> {
        let desc = board.config().order == Order::Desc;
        let len = board.len();
        let small = (len <= SMALL_ZSET).then(|| board.range_by_rank(1, len as u64, desc));
        RedisView {
            board,
            desc,
            len,
            small,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Up to `n` entries from index `i`, upwards, or downwards with `rev`.
    pub fn entries(&self, i: usize, n: usize, rev: bool) -> Vec<Entry> {
        if i >= self.len || n == 0 {
            return Vec::new();
        }
        if let Some(all) = &self.small {
            return if rev {
                all[i.saturating_sub(n - 1)..=i]
                    .iter()
                    .rev()
                    .cloned()
                    .collect()
            } else {
                all[i..(i.saturating_add(n)).min(self.len)].to_vec()
            };
        }
        // Ranks counted from the end the walk starts from.
        let (rank, from_worst) = if rev {
            (self.len - i, !self.desc)
        } else {
            (i + 1, self.desc)
        };
        let stop = (rank as u64).saturating_add(n as u64 - 1);
        self.board.range_by_rank(rank as u64, stop, from_worst)
    }

    fn member(&self, i: usize) -> Vec<u8> {
        match &self.small {
            Some(all) => all[i].member.clone(),
            None => self
                .entries(i, 1, false)
                .pop()
                .map(|e| e.member)
                .unwrap_or_default(),
        }
    }

    /// How many indexes from 0 satisfy `pred` (exact when it holds for a
    /// prefix of Redis's order).
    fn leading(&self, pred: impl Fn(&[u8]) -> bool) -> usize {
        if self.desc {
            self.len - self.board.partition_point(|m, _| !pred(m))
        } else {
            self.board.partition_point(|m, _| pred(m))
        }
    }

    /// Board positions `lo..hi` (best first) of indexes `lo..hi`.
    pub fn positions(&self, lo: usize, hi: usize) -> (usize, usize) {
        if self.desc {
            (self.len - hi, self.len - lo)
        } else {
            (lo, hi)
        }
    }

    /// `zslIsInLexRange`: whether the range can meet the set at all.
    fn may_meet(&self, r: &LexRange) -> bool {
        !r.always_empty()
            && self.len > 0
            && r.gte_min(&self.member(self.len - 1))
            && r.lte_max(&self.member(0))
    }

    /// The first index past the members below `min`: a scan of a small
    /// set, a search of a large one. (`None`: there is none.)
    fn first_not_below(&self, r: &LexRange) -> Option<usize> {
        let i = match &self.small {
            Some(all) => all.iter().position(|e| r.gte_min(&e.member))?,
            None => self.leading(|m| !r.gte_min(m)),
        };
        (i < self.len).then_some(i)
    }

    /// `zslFirstInLexRange`.
    fn first_in(&self, r: &LexRange) -> Option<usize> {
        if !self.may_meet(r) {
            return None;
        }
        let i = self.first_not_below(r)?;
        r.lte_max(&self.member(i)).then_some(i)
    }

    /// `zslLastInLexRange`.
    fn last_in(&self, r: &LexRange) -> Option<usize> {
        if !self.may_meet(r) {
            return None;
        }
        let i = match &self.small {
            Some(all) => all.iter().rposition(|e| r.lte_max(&e.member))?,
            None => self.leading(|m| r.lte_max(m)).checked_sub(1)?,
        };
        r.gte_min(&self.member(i)).then_some(i)
    }

    /// Entries from index `start` (downwards with `rev`) while `keep`
    /// holds, at most `limit`.
    fn walk(
        &self,
        start: usize,
        rev: bool,
        limit: usize,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut i = start;
        loop {
            let n = CHUNK.min(limit - out.len());
            let chunk = self.entries(i, n, rev);
            let got = chunk.len();
            for e in chunk {
                if !keep(&e.member) {
                    return out;
                }
                out.push(e);
            }
            if got < n || out.len() == limit {
                return out;
            }
            i = if rev {
                match i.checked_sub(got) {
                    Some(j) => j,
                    None => return out,
                }
            } else {
                i + got
            };
        }
    }

    /// ZRANGEBYLEX (`rev`: ZREVRANGEBYLEX, from the top): the range's
    /// members after skipping `offset` (unchecked, as Redis skips them),
    /// at most `limit` (negative: all). A negative offset skips past the
    /// end, as Redis's countdown from it does.
    pub fn range(&self, r: &LexRange, rev: bool, offset: i64, limit: i64) -> Vec<Entry> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let Ok(offset) = usize::try_from(offset) else {
            return Vec::new();
        };
        if limit == 0 {
            return Vec::new();
        }
        if rev {
            let Some(i) = self.last_in(r).and_then(|i| i.checked_sub(offset)) else {
                return Vec::new();
            };
            self.walk(i, true, limit, |m| r.gte_min(m))
        } else {
            let Some(i) = self.first_in(r).and_then(|i| i.checked_add(offset)) else {
                return Vec::new();
            };
            self.walk(i, false, limit, |m| r.lte_max(m))
        }
    }

    /// ZLEXCOUNT: a small set counts the members from the first in range
    /// while in range; a large one subtracts the ends' indexes, as Redis
    /// subtracts their ranks (which is negative only where the members of
    /// mixed scores fall the range's ends out of order).
    pub fn count(&self, r: &LexRange) -> i64 {
        let Some(first) = self.first_in(r) else {
            return 0;
        };
        if self.small.is_some() {
            return self.walk(first, false, usize::MAX, |m| r.lte_max(m)).len() as i64;
        }
        match self.last_in(r) {
            Some(last) => last as i64 - first as i64 + 1,
            None => (self.len - first) as i64,
        }
    }

    /// ZREMRANGEBYLEX: the indexes `lo..hi` it removes. A small set starts
    /// from its first member in range (after the range's check against the
    /// set); a large one from the search for `min` alone, as Redis's
    /// skiplist deletion does; both then remove while members are not
    /// above `max`.
    pub fn removal(&self, r: &LexRange) -> Option<(usize, usize)> {
        let first = if self.small.is_some() {
            self.first_in(r)?
        } else {
            self.first_not_below(r)?
        };
        let n = if self.small.is_some() {
            self.walk(first, false, usize::MAX, |m| r.lte_max(m)).len()
        } else {
            // The end is where `max` falls, found by the same descent.
            self.leading(|m| r.lte_max(m)).max(first) - first
        };
        (n > 0).then_some((first, first + n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_engine::{BoardConfig, Submit, Tiebreak};

    fn board(order: Order, tiebreak: Tiebreak, pairs: &[(f64, &str)]) -> Board {
        let mut b = Board::new(BoardConfig {
            order,
            tiebreak,
            ..Default::default()
        })
        .unwrap();
        for (s, m) in pairs {
            b.submit(&Submit::new(m.as_bytes(), *s)).unwrap();
        }
        b
    }

    fn r(min: &str, max: &str) -> LexRange {
        LexRange::parse(min.as_bytes(), max.as_bytes()).unwrap()
    }

    fn names(v: Vec<Entry>) -> Vec<String> {
        v.into_iter()
            .map(|e| String::from_utf8(e.member).unwrap())
            .collect()
    }

    #[test]
    fn range_items_parse_as_redis_reads_them() {
        assert_eq!(LexBound::parse(b"-"), Some(LexBound::Min));
        assert_eq!(LexBound::parse(b"+"), Some(LexBound::Max));
        assert_eq!(LexBound::parse(b"+\0x"), Some(LexBound::Max));
        assert_eq!(LexBound::parse(b"[a"), Some(LexBound::Incl(b"a".to_vec())));
        assert_eq!(LexBound::parse(b"("), Some(LexBound::Excl(Vec::new())));
        for bad in [&b""[..], b"a", b"+a", b"-1", b"]a"] {
            assert_eq!(LexBound::parse(bad), None, "{bad:?}");
        }
        assert!(r("-", "-").always_empty());
        assert!(r("+", "+").always_empty());
        assert!(r("+", "-").always_empty());
        assert!(r("[b", "[a").always_empty());
        assert!(r("(a", "[a").always_empty());
        assert!(!r("[a", "[a").always_empty());
        assert!(!r("-", "+").always_empty());
    }

    /// Small and large sets, asc and desc boards: the same answers.
    #[test]
    fn one_score_ranges_in_every_encoding_and_order() {
        for n in [5usize, 300] {
            let members: Vec<String> = (0..n).map(|i| format!("m{i:04}")).collect();
            let pairs: Vec<(f64, &str)> = members.iter().map(|m| (0.0, m.as_str())).collect();
            for order in [Order::Asc, Order::Desc] {
                let b = board(order, Tiebreak::Member, &pairs);
                let v = RedisView::new(&b);
                let rg = r("[m0001", "(m0004");
                assert_eq!(
                    names(v.range(&rg, false, 0, -1)),
                    ["m0001", "m0002", "m0003"]
                );
                assert_eq!(names(v.range(&rg, true, 1, 1)), ["m0002"]);
                assert_eq!(names(v.range(&rg, false, -1, 5)), Vec::<String>::new());
                assert_eq!(names(v.range(&rg, false, 7, 5)), Vec::<String>::new());
                assert_eq!(v.count(&rg), 3);
                assert_eq!(v.count(&r("-", "+")), n as i64);
                assert_eq!(v.count(&r("(m0004", "[m0001")), 0);
                assert_eq!(v.count(&r("[zz", "+")), 0);
                let (lo, hi) = v.removal(&rg).unwrap();
                assert_eq!((lo, hi), (1, 4));
                let (a, z) = v.positions(lo, hi);
                assert_eq!(z - a, 3);
                assert_eq!(v.removal(&r("[zz", "+")), None);
                assert_eq!(names(v.range(&r("-", "+"), true, 0, 2)).len(), 2);
            }
        }
    }

    /// A small set of mixed scores is scanned as Redis's listpack: the
    /// first member not below `min`, then while not above `max`.
    #[test]
    fn a_small_set_of_mixed_scores_is_scanned() {
        let b = board(
            Order::Asc,
            Tiebreak::Member,
            &[(1.0, "c"), (2.0, "a"), (3.0, "d"), (4.0, "b")],
        );
        let v = RedisView::new(&b);
        assert_eq!(
            names(v.range(&r("[b", "+"), false, 0, -1)),
            ["c", "a", "d", "b"]
        );
        assert_eq!(names(v.range(&r("-", "[c"), false, 0, -1)), ["c", "a"]);
        assert_eq!(
            names(v.range(&r("-", "[c"), true, 0, -1)),
            ["b", "d", "a", "c"]
        );
        // The first member is above `max`: nothing, though "a" is in range.
        assert_eq!(v.count(&r("[a", "[b")), 0);
        assert_eq!(v.count(&r("-", "[c")), 2);
        assert_eq!(v.removal(&r("-", "[c")), Some((0, 2)));
    }
}
