//! The naive model: a `Vec` of entries kept sorted best first, written
//! from the documented semantics, sharing no code with the engine.

use super::*;

// ===================================================================== model

/// A member id; prints as an escaped byte string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Mem(pub(crate) Vec<u8>);

impl fmt::Debug for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Why the model refuses an operation (the engine's `Error`, by kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MErr {
    ReadOnly,
    BadMember,
    NanScore,
    NanResult,
    OutOfBounds,
    BadData,
    BadName,
    BadConfig,
    BadArgument,
    /// A submission or combine of the other kind than the board takes.
    WrongKind,
    Other,
}

pub(crate) fn kind(e: Error) -> MErr {
    match e {
        Error::ReadOnly(_) => MErr::ReadOnly,
        Error::BadMember { .. } => MErr::BadMember,
        Error::NanScore => MErr::NanScore,
        Error::NanResult => MErr::NanResult,
        Error::OutOfBounds { .. } => MErr::OutOfBounds,
        Error::BadData { .. } | Error::DataTooLarge { .. } => MErr::BadData,
        Error::BadName { .. } => MErr::BadName,
        Error::BadConfig(_) => MErr::BadConfig,
        Error::BadArgument(_) => MErr::BadArgument,
        Error::WrongKind(_) => MErr::WrongKind,
        _ => MErr::Other,
    }
}

#[derive(Debug, Clone)]
pub(crate) struct MEntry {
    pub(crate) member: Vec<u8>,
    /// One value per key, of the key's type; a plain board has one float
    /// key, its score.
    pub(crate) vals: Vals,
    /// Arrival sequence: bumped when the member is created or its values
    /// actually change.
    pub(crate) seq: u64,
    pub(crate) name: Option<String>,
    pub(crate) data: Option<String>,
}

impl MEntry {
    /// What reads report as the score: the first key, as a double.
    pub(crate) fn score(&self) -> f64 {
        as_f64(self.vals[0])
    }
}

// ------------------------------------------------------------ key values
//
// The engine's `Num` is only the container here: every comparison,
// conversion and operator below is the model's own, from the documented
// semantics.

/// A member's values, one per key, held inline (boards are copied and
/// re-indexed at every step: no allocation per entry).
#[derive(Clone, Copy)]
pub(crate) struct Vals {
    len: usize,
    v: [Num; 4],
}

impl Vals {
    pub(crate) fn new(vals: &[Num]) -> Vals {
        let mut v = [Num::Float(0.0); 4];
        v[..vals.len()].copy_from_slice(vals);
        Vals { len: vals.len(), v }
    }
}

impl std::ops::Deref for Vals {
    type Target = [Num];
    fn deref(&self) -> &[Num] {
        &self.v[..self.len]
    }
}

impl std::ops::DerefMut for Vals {
    fn deref_mut(&mut self) -> &mut [Num] {
        &mut self.v[..self.len]
    }
}

/// For comparing with what the engine reports (the model's own logic
/// compares with `same_vals`).
impl PartialEq for Vals {
    fn eq(&self, other: &Vals) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Vals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

pub(crate) fn as_f64(n: Num) -> f64 {
    match n {
        Num::Float(x) => x,
        Num::Int(i) => i as f64,
    }
}

/// Numeric order of two values of one key (-0 and 0 are equal).
pub(crate) fn num_cmp(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y).expect("model bug: NaN stored"),
        _ => panic!("model bug: one key holds an int and a float"),
    }
}

/// Key by key, ascending numeric order, ignoring directions (GT/LT).
pub(crate) fn numeric_cmp(a: &[Num], b: &[Num]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| num_cmp(*x, *y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

pub(crate) fn same_vals(a: &[Num], b: &[Num]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x, y) {
        (Num::Float(p), Num::Float(q)) => p == q,
        (Num::Int(p), Num::Int(q)) => p == q,
        _ => panic!("model bug: one key holds an int and a float"),
    })
}

pub(crate) const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The value of key `k`'s type that a submitted `n` stands for.
pub(crate) fn coerce(k: &SortKey, n: Num) -> Result<Num, MErr> {
    match (k.ty, n) {
        (_, Num::Float(x)) if x.is_nan() => Err(MErr::NanScore),
        (KeyType::Float, Num::Float(x)) => Ok(Num::Float(x)),
        (KeyType::Float, Num::Int(i)) => Ok(Num::Float(i as f64)),
        (KeyType::Int, Num::Int(i)) => Ok(Num::Int(i)),
        (KeyType::Int, Num::Float(x)) => {
            // -2^63 is refused as 2^63 is: the double stands for integers
            // below the range too; the minimum is taken as an integer.
            if x.is_finite() && x.trunc() == x && x > -TWO_63 && x < TWO_63 {
                Ok(Num::Int(x as i64))
            } else {
                Err(MErr::BadArgument)
            }
        }
    }
}

pub(crate) fn zero(k: &SortKey) -> Num {
    match k.ty {
        KeyType::Float => Num::Float(0.0),
        KeyType::Int => Num::Int(0),
    }
}

/// An `incr` submission's operator on one key.
pub(crate) fn apply_key_op(op: KeyOp, old: Num, given: Num) -> Result<Num, MErr> {
    Ok(match op {
        KeyOp::Set => given,
        KeyOp::Incr => match (old, given) {
            (Num::Float(a), Num::Float(b)) if (a + b).is_nan() => return Err(MErr::NanResult),
            (Num::Float(a), Num::Float(b)) => Num::Float(a + b),
            (Num::Int(a), Num::Int(b)) => Num::Int(a.checked_add(b).ok_or(MErr::BadArgument)?),
            _ => panic!("model bug: an operator across types"),
        },
        KeyOp::Max if num_cmp(given, old) == Ordering::Greater => given,
        KeyOp::Min if num_cmp(given, old) == Ordering::Less => given,
        KeyOp::Max | KeyOp::Min => old,
    })
}

/// The keys of a config: its `sort`, or a plain board's one float key.
pub(crate) fn keys_of(c: &BoardConfig) -> Vec<SortKey> {
    if c.sort.is_empty() {
        vec![SortKey {
            key: "score".to_string(),
            order: c.order,
            ty: KeyType::Float,
            op: KeyOp::Incr,
        }]
    } else {
        c.sort.clone()
    }
}

/// Where the integer `v` lies against the real `x` (never NaN), exactly.
pub(crate) fn int_vs(v: i64, x: f64) -> Ordering {
    if x == INF {
        return Ordering::Less;
    }
    if x == NEG_INF {
        return Ordering::Greater;
    }
    // `as i128` saturates past i128's range, where every i64 is on one
    // side anyway.
    let f = x.floor();
    match i128::from(v).cmp(&(f as i128)) {
        Ordering::Equal if x > f => Ordering::Less,
        o => o,
    }
}

/// Whether a first key's value is in a score range: a double by double
/// comparison, an integer exactly against the real bounds.
pub(crate) fn first_in_range(r: &ScoreRange, v: Num) -> bool {
    match v {
        Num::Float(s) => in_range(r, s),
        Num::Int(i) => {
            let lo = match r.min {
                Bound::Unbounded => true,
                Bound::Included(x) => int_vs(i, x) != Ordering::Less,
                Bound::Excluded(x) => int_vs(i, x) == Ordering::Greater,
            };
            let hi = match r.max {
                Bound::Unbounded => true,
                Bound::Included(x) => int_vs(i, x) != Ordering::Greater,
                Bound::Excluded(x) => int_vs(i, x) == Ordering::Less,
            };
            lo && hi
        }
    }
}

/// One submission, owned (the engine's `Submit` borrows).
#[derive(Clone)]
pub(crate) struct Sub {
    pub(crate) member: Mem,
    pub(crate) score: f64,
    /// Values by key name (`score` is then ignored).
    pub(crate) scores: Option<Vec<(String, Num)>>,
    /// A keyed submission still to be made for the keys of the board it
    /// is sent to ([`Sub::resolve`]).
    pub(crate) keyed: Option<Keyed>,
    pub(crate) op: Option<UpdateOp>,
    pub(crate) presence: Presence,
    pub(crate) cond: Cond,
    pub(crate) name: Option<String>,
    pub(crate) data: Option<String>,
}

impl fmt::Debug for Sub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scores {
            None if self.keyed.is_some() => write!(
                f,
                "Sub({:?} {} {:?}",
                self.member,
                self.score,
                self.keyed.as_ref().unwrap()
            )?,
            None => write!(f, "Sub({:?} {}", self.member, self.score)?,
            Some(v) => {
                write!(f, "Sub({:?} {{", self.member)?;
                for (i, (k, n)) in v.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    match n {
                        Num::Float(x) => write!(f, "{sep}{k}:{x:?}")?,
                        Num::Int(x) => write!(f, "{sep}{k}:{x}i")?,
                    }
                }
                write!(f, "}}")?;
            }
        }
        if let Some(op) = self.op {
            write!(f, " {op:?}")?;
        }
        if self.presence != Presence::Any {
            write!(f, " {:?}", self.presence)?;
        }
        if self.cond != Cond::Always {
            write!(f, " {:?}", self.cond)?;
        }
        if let Some(n) = &self.name {
            write!(f, " name={:?}", &n[..n.len().min(12)])?;
        }
        if let Some(d) = &self.data {
            write!(f, " data={d:?}")?;
        }
        write!(f, ")")
    }
}

impl Sub {
    pub(crate) fn as_submit(&self) -> Submit<'_> {
        Submit {
            member: &self.member.0,
            score: self.score,
            op: self.op,
            presence: self.presence,
            cond: self.cond,
            name: self.name.as_deref(),
            data: self.data.as_deref(),
            scores: self.scores.as_deref(),
        }
    }
}

/// The naive board: entries sorted best first, every read a linear scan.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    pub(crate) cfg: BoardConfig,
    /// `keys_of(&cfg)`.
    pub(crate) keys: Vec<SortKey>,
    pub(crate) entries: Vec<MEntry>,
    /// Member → (values, seq), to find a member by binary search; rebuilt
    /// from `entries` after every bulk change.
    pub(crate) index: HashMap<Vec<u8>, (Vals, u64)>,
    pub(crate) next_seq: u64,
    pub(crate) read_only: bool,
}

pub(crate) fn validate_config(c: &BoardConfig) -> Result<(), MErr> {
    if c.min_score.is_some_and(f64::is_nan) || c.max_score.is_some_and(f64::is_nan) {
        return Err(MErr::BadConfig);
    }
    if let (Some(lo), Some(hi)) = (c.min_score, c.max_score) {
        if lo > hi {
            return Err(MErr::BadConfig);
        }
    }
    if c.max_members == Some(0) {
        return Err(MErr::BadConfig);
    }
    if c.sort.len() > 4 {
        return Err(MErr::BadConfig);
    }
    for (i, k) in c.sort.iter().enumerate() {
        let bad_name = k.key.is_empty()
            || k.key.len() > 64
            || k.key.chars().any(|ch| ch.is_control() || ch == ',');
        if bad_name || c.sort[..i].iter().any(|o| o.key == k.key) {
            return Err(MErr::BadConfig);
        }
    }
    if c.sort.first().is_some_and(|k| k.order != c.order) {
        return Err(MErr::BadConfig);
    }
    Ok(())
}

pub(crate) fn in_range(r: &ScoreRange, s: f64) -> bool {
    let lo = match r.min {
        Bound::Unbounded => true,
        Bound::Included(x) => s >= x,
        Bound::Excluded(x) => s > x,
    };
    let hi = match r.max {
        Bound::Unbounded => true,
        Bound::Included(x) => s <= x,
        Bound::Excluded(x) => s < x,
    };
    lo && hi
}

pub(crate) fn range_has_nan(r: &ScoreRange) -> bool {
    [r.min, r.max]
        .iter()
        .any(|b| matches!(b, Bound::Included(x) | Bound::Excluded(x) if x.is_nan()))
}

impl Model {
    pub(crate) fn new(cfg: BoardConfig) -> Result<Model, MErr> {
        validate_config(&cfg)?;
        Ok(Model {
            keys: keys_of(&cfg),
            cfg,
            entries: Vec::new(),
            index: HashMap::new(),
            next_seq: 0,
            read_only: false,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn sorted(&self) -> bool {
        !self.cfg.sort.is_empty()
    }

    /// Rank order of two tuples, key by key, each in its own direction:
    /// `Less` means `a` is strictly better.
    pub(crate) fn cmp_vals(&self, a: &[Num], b: &[Num]) -> Ordering {
        for (k, (x, y)) in self.keys.iter().zip(a.iter().zip(b)) {
            let o = num_cmp(*x, *y);
            let o = match k.order {
                Order::Asc => o,
                Order::Desc => o.reverse(),
            };
            if o.is_ne() {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Rank order: `Less` means `a` ranks above `b`.
    pub(crate) fn cmp_parts(&self, a: (&[Num], &[u8], u64), b: (&[Num], &[u8], u64)) -> Ordering {
        self.cmp_vals(a.0, b.0)
            .then_with(|| match (self.cfg.tiebreak, self.cfg.order) {
                // Redis: ascending bytes on an ascending set, ZREVRANGE's
                // exact reverse on a descending board ("board" order being
                // the first key's).
                (Tiebreak::Member, Order::Asc) => a.1.cmp(b.1),
                (Tiebreak::Member, Order::Desc) => b.1.cmp(a.1),
                (Tiebreak::First, _) => a.2.cmp(&b.2),
                (Tiebreak::Last, _) => b.2.cmp(&a.2),
            })
    }

    pub(crate) fn cmp(&self, a: &MEntry, b: &MEntry) -> Ordering {
        self.cmp_parts((&a.vals, &a.member, a.seq), (&b.vals, &b.member, b.seq))
    }

    pub(crate) fn in_bounds(&self, s: f64) -> bool {
        let min = self.cfg.min_score.unwrap_or(NEG_INF);
        let max = self.cfg.max_score.unwrap_or(INF);
        !(s < min || s > max)
    }

    pub(crate) fn find(&self, m: &[u8]) -> Option<usize> {
        let (vals, seq) = self.index.get(m)?;
        let i = self.entries.partition_point(|x| {
            self.cmp_parts((&x.vals, &x.member, x.seq), (vals, m, *seq)) == Ordering::Less
        });
        assert!(
            self.entries.get(i).is_some_and(|e| e.member == m),
            "model bug: index out of date"
        );
        Some(i)
    }

    pub(crate) fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .map(|e| (e.member.clone(), (e.vals, e.seq)))
            .collect();
    }

    pub(crate) fn take_at(&mut self, i: usize) -> MEntry {
        let e = self.entries.remove(i);
        self.index.remove(&e.member);
        e
    }

    pub(crate) fn bump(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    pub(crate) fn place(&mut self, e: MEntry) {
        let i = self
            .entries
            .partition_point(|x| self.cmp(x, &e) == Ordering::Less);
        self.index.insert(e.member.clone(), (e.vals, e.seq));
        self.entries.insert(i, e);
    }

    pub(crate) fn resort(&mut self) {
        let mut v = std::mem::take(&mut self.entries);
        v.sort_by(|a, b| self.cmp(a, b));
        self.entries = v;
        self.reindex();
    }

    pub(crate) fn evict(&mut self) -> u64 {
        let mut n = 0;
        while self
            .cfg
            .max_members
            .is_some_and(|m| self.entries.len() as u64 > m)
        {
            let e = self.entries.pop().expect("over capacity");
            self.index.remove(&e.member);
            n += 1;
        }
        n
    }

    /// `view()[i].0` alone: a submission's rank, without a pass over the
    /// whole board.
    pub(crate) fn rank_at(&self, i: usize) -> u64 {
        let tied = |k: usize| same_vals(&self.entries[k - 1].vals, &self.entries[k].vals);
        match self.cfg.ranking {
            Ranking::Unique => i as u64 + 1,
            // 1 + the position of the first of its tie group.
            Ranking::Competition => (i - (1..=i).rev().take_while(|&k| tied(k)).count()) as u64 + 1,
            Ranking::Dense => (1..=i).filter(|&k| !tied(k)).count() as u64 + 1,
        }
    }

    /// Per position: (rank in the board's ranking mode, number of entries
    /// with a strictly better tuple).
    pub(crate) fn view(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.len());
        let (mut dense, mut first_of_group) = (0u64, 0u64);
        for (i, e) in self.entries.iter().enumerate() {
            if i == 0 || !same_vals(&e.vals, &self.entries[i - 1].vals) {
                dense += 1;
                first_of_group = i as u64;
            }
            let rank = match self.cfg.ranking {
                Ranking::Unique => i as u64 + 1,
                Ranking::Competition => first_of_group + 1,
                Ranking::Dense => dense,
            };
            out.push((rank, first_of_group));
        }
        out
    }

    pub(crate) fn entry_at(&self, i: usize, view: &[(u64, u64)]) -> Entry {
        let e = &self.entries[i];
        Entry {
            member: e.member.clone(),
            score: e.score(),
            scores: self.sorted().then(|| Scores::new(&e.vals)),
            rank: view[i].0,
            name: e.name.as_deref().map(Arc::from),
            data: e.data.as_deref().map(Arc::from),
        }
    }

    pub(crate) fn entries_at(&self, positions: impl Iterator<Item = usize>) -> Vec<Entry> {
        let view = self.view();
        positions.map(|i| self.entry_at(i, &view)).collect()
    }

    pub(crate) fn percentile_at(&self, i: usize, view: &[(u64, u64)]) -> f64 {
        let n = self.len() as f64;
        100.0 * (n - view[i].1 as f64) / n
    }

    // ---------------------------------------------------------- writes

    pub(crate) fn writable(&self) -> Result<(), MErr> {
        if self.read_only {
            Err(MErr::ReadOnly)
        } else {
            Ok(())
        }
    }

    pub(crate) fn check_extra(&self, name: Option<&str>, data: Option<&str>) -> Result<(), MErr> {
        if name.is_some_and(|n| n.len() > MAX_NAME) {
            return Err(MErr::BadName);
        }
        if let Some(d) = data.filter(|d| !d.is_empty()) {
            let object = serde_json::from_str::<serde_json::Value>(d).is_ok_and(|v| v.is_object());
            if d.len() > self.cfg.max_data_bytes || !object {
                return Err(MErr::BadData);
            }
        }
        Ok(())
    }

    /// The checks that need no board state. Returns the submitted value of
    /// each key, of the key's type (`None`: left out).
    ///
    /// One generated submission may carry several flaws (a flawed one sent
    /// with `scores` to a plain board); which of them is reported then is
    /// not documented, so this follows the engine's order: a plain board
    /// checks the member, `scores`, NaN, name and data (a batch: member,
    /// name and data first), then the bounds; a board with sort keys checks
    /// the member, name and data, the values by key in the order given,
    /// keys left out, then the bounds.
    pub(crate) fn precheck(&self, s: &Sub, in_batch: bool) -> Result<Vec<Option<Num>>, MErr> {
        if s.member.0.is_empty() || s.member.0.len() > MAX_ID_BYTES {
            return Err(MErr::BadMember);
        }
        let op = s.op.unwrap_or(self.cfg.update);
        let extra = |m: &Model| m.check_extra(s.name.as_deref(), s.data.as_deref());
        let mut given = vec![None; self.keys.len()];
        if !self.sorted() {
            if in_batch {
                extra(self)?;
            }
            if s.scores.is_some() {
                return Err(MErr::WrongKind);
            }
            if s.score.is_nan() {
                return Err(MErr::NanScore);
            }
            if !in_batch {
                extra(self)?;
            }
            given[0] = Some(Num::Float(s.score));
        } else {
            extra(self)?;
            match &s.scores {
                Some(vals) => {
                    for (name, v) in vals {
                        let j = self
                            .keys
                            .iter()
                            .position(|k| &k.key == name)
                            .ok_or(MErr::WrongKind)?;
                        if given[j].is_some() {
                            return Err(MErr::BadArgument);
                        }
                        given[j] = Some(coerce(&self.keys[j], *v)?);
                    }
                    if op != UpdateOp::Incr && given.iter().any(Option::is_none) {
                        return Err(MErr::WrongKind);
                    }
                }
                None => given[0] = Some(coerce(&self.keys[0], Num::Float(s.score))?),
            }
        }
        if op != UpdateOp::Incr {
            if let Some(first) = given[0] {
                if !self.in_bounds(as_f64(first)) {
                    return Err(MErr::OutOfBounds);
                }
            }
        }
        Ok(given)
    }

    pub(crate) fn apply_extra(e: &mut MEntry, name: Option<&str>, data: Option<&str>) {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(n) = name {
            e.name = opt(n);
        }
        if let Some(d) = data {
            e.data = opt(d);
        }
    }

    /// `Some(vals)` on a board with sort keys, else `None`.
    pub(crate) fn scores_if_sorted(&self, vals: &[Num]) -> Option<Scores> {
        self.sorted().then(|| Scores::new(vals))
    }

    pub(crate) fn submit(&mut self, s: &Sub) -> Result<SubmitResult, MErr> {
        self.writable()?;
        let given = self.precheck(s, false)?;
        let op = s.op.unwrap_or(self.cfg.update);
        let Some(i) = self.find(&s.member.0) else {
            if s.presence == Presence::OnlyExisting {
                return Ok(SubmitResult {
                    score: None,
                    rank: None,
                    previous: None,
                    applied: false,
                    created: false,
                    changed: false,
                    evicted: 0,
                    scores: None,
                    previous_scores: None,
                });
            }
            // A new member takes the given values (whatever the keys'
            // operators), 0 for the keys left out; `incr` on it starts from
            // 0, so its result is the submitted score and must be in bounds.
            let vals: Vec<Num> = given
                .iter()
                .zip(&self.keys)
                .map(|(g, k)| g.unwrap_or_else(|| zero(k)))
                .collect();
            let vals = Vals::new(&vals);
            if !self.in_bounds(as_f64(vals[0])) {
                return Err(MErr::OutOfBounds);
            }
            let mut e = MEntry {
                member: s.member.0.clone(),
                vals,
                seq: self.bump(),
                name: None,
                data: None,
            };
            Self::apply_extra(&mut e, s.name.as_deref(), s.data.as_deref());
            self.place(e);
            let evicted = self.evict();
            let pos = self.find(&s.member.0);
            return Ok(SubmitResult {
                score: pos.map(|_| as_f64(vals[0])),
                rank: pos.map(|i| self.rank_at(i)),
                previous: None,
                applied: true,
                created: pos.is_some(),
                changed: pos.is_some(),
                evicted,
                scores: pos.and(self.scores_if_sorted(&vals)),
                previous_scores: None,
            });
        };
        let old = self.entries[i].vals;
        if s.presence == Presence::OnlyNew {
            // Redis checks NX before any arithmetic: nothing happens, even
            // when the increment would have been NaN.
            Self::apply_extra(&mut self.entries[i], s.name.as_deref(), s.data.as_deref());
            return Ok(SubmitResult {
                score: Some(as_f64(old[0])),
                rank: Some(self.rank_at(i)),
                previous: Some(as_f64(old[0])),
                applied: false,
                created: false,
                changed: false,
                evicted: 0,
                scores: self.scores_if_sorted(&old),
                previous_scores: self.scores_if_sorted(&old),
            });
        }
        let mut new = old;
        for (j, k) in self.keys.iter().enumerate() {
            new[j] = match (given[j], op) {
                (None, _) => old[j],
                (Some(g), UpdateOp::Incr) if s.scores.is_some() => apply_key_op(k.op, old[j], g)?,
                // A bare score adds to the first key, whatever its operator.
                (Some(g), UpdateOp::Incr) => apply_key_op(KeyOp::Incr, old[j], g)?,
                (Some(g), UpdateOp::Set | UpdateOp::Best) => g,
            };
        }
        let blocked = (op == UpdateOp::Best && self.cmp_vals(&new, &old) != Ordering::Less)
            || (s.cond == Cond::Greater && numeric_cmp(&new, &old) != Ordering::Greater)
            || (s.cond == Cond::Less && numeric_cmp(&new, &old) != Ordering::Less);
        let changed = !blocked && !same_vals(&new, &old);
        if changed && !self.in_bounds(as_f64(new[0])) {
            return Err(MErr::OutOfBounds);
        }
        Self::apply_extra(&mut self.entries[i], s.name.as_deref(), s.data.as_deref());
        if changed {
            let mut e = self.take_at(i);
            e.vals = new;
            e.seq = self.bump();
            self.place(e);
        }
        let i = self.find(&s.member.0).expect("still there");
        // Applied without moving (-0 + 0): the computed values, as Redis.
        let now = if !blocked && !changed {
            new
        } else {
            self.entries[i].vals
        };
        Ok(SubmitResult {
            score: Some(as_f64(now[0])),
            rank: Some(self.rank_at(i)),
            previous: Some(as_f64(old[0])),
            applied: !blocked,
            created: false,
            changed,
            evicted: 0,
            scores: self.scores_if_sorted(&now),
            previous_scores: self.scores_if_sorted(&old),
        })
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn submit_many(
        &mut self,
        batch: &[Sub],
    ) -> Result<Vec<Result<SubmitResult, MErr>>, MErr> {
        self.writable()?;
        for s in batch {
            self.precheck(s, true)?;
        }
        Ok(batch.iter().map(|s| self.submit(s)).collect())
    }

    pub(crate) fn set_data(
        &mut self,
        m: &[u8],
        name: Option<&str>,
        data: Option<&str>,
    ) -> Result<bool, MErr> {
        self.writable()?;
        self.check_extra(name, data)?;
        match self.find(m) {
            Some(i) => {
                Self::apply_extra(&mut self.entries[i], name, data);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(crate) fn remove(&mut self, ms: &[Mem]) -> Result<u64, MErr> {
        self.writable()?;
        let mut n = 0;
        for m in ms {
            if let Some(i) = self.find(&m.0) {
                self.take_at(i);
                n += 1;
            }
        }
        Ok(n)
    }

    /// 0-based positions `[lo, hi)` of 1-based unique ranks `start..=stop`.
    pub(crate) fn rank_span(&self, start: u64, stop: u64) -> (usize, usize) {
        let lo = start.max(1) - 1;
        let hi = stop.min(self.len() as u64);
        if lo >= hi {
            (0, 0)
        } else {
            (lo as usize, hi as usize)
        }
    }

    pub(crate) fn remove_range_by_rank(&mut self, start: u64, stop: u64) -> Result<u64, MErr> {
        self.writable()?;
        let (lo, hi) = self.rank_span(start, stop);
        self.entries.drain(lo..hi);
        self.reindex();
        Ok((hi - lo) as u64)
    }

    pub(crate) fn remove_range_by_score(&mut self, r: &ScoreRange) -> Result<u64, MErr> {
        self.writable()?;
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        let before = self.len();
        self.entries.retain(|e| !first_in_range(r, e.vals[0]));
        self.reindex();
        Ok((before - self.len()) as u64)
    }

    pub(crate) fn pop(&mut self, count: u64, worst: bool) -> Result<Vec<Entry>, MErr> {
        self.writable()?;
        let n = self.len();
        let c = (count.min(n as u64)) as usize;
        if worst {
            let out = self.entries_at((n - c..n).rev());
            self.entries.truncate(n - c);
            self.reindex();
            Ok(out)
        } else {
            let out = self.entries_at(0..c);
            self.entries.drain(0..c);
            self.reindex();
            Ok(out)
        }
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    pub(crate) fn set_config(&mut self, cfg: BoardConfig) -> Result<(), MErr> {
        validate_config(&cfg)?;
        let new_keys = keys_of(&cfg);
        // Operators do not order members: changing only them re-ranks
        // nothing.
        let same_sort = cfg.sort.len() == self.cfg.sort.len()
            && cfg
                .sort
                .iter()
                .zip(&self.cfg.sort)
                .all(|(a, b)| a.key == b.key && a.order == b.order && a.ty == b.ty);
        let rebuild = cfg.order != self.cfg.order
            || cfg.tiebreak != self.cfg.tiebreak
            || cfg.ranking != self.cfg.ranking
            || !same_sort;
        if !rebuild {
            self.cfg = cfg;
            self.keys = new_keys;
            self.evict();
            return Ok(());
        }
        // Keys keep their values by name (a plain board's score is the key
        // `score`); with no name in common, a plain board's score, or a
        // sorted board's first key going to a plain board, goes to the
        // first key, and between two sorted boards the change is refused.
        let mut src: Vec<Option<usize>> = new_keys
            .iter()
            .map(|k| self.keys.iter().position(|o| o.key == k.key))
            .collect();
        if src.iter().all(Option::is_none) {
            if self.sorted() && !cfg.sort.is_empty() {
                return Err(MErr::WrongKind);
            }
            src[0] = Some(0);
        }
        // Every value must fit its new key before anything changes.
        let mut moved = Vec::with_capacity(self.len());
        for e in &self.entries {
            let mut vals = Vec::with_capacity(new_keys.len());
            for (k, from) in new_keys.iter().zip(&src) {
                vals.push(match from {
                    Some(i) => coerce(k, e.vals[*i]).map_err(|_| MErr::WrongKind)?,
                    None => zero(k),
                });
            }
            moved.push(Vals::new(&vals));
        }
        // Members arrive again in their old rank order.
        let mut v = std::mem::take(&mut self.entries);
        for (e, vals) in v.iter_mut().zip(moved) {
            e.vals = vals;
            e.seq = self.bump();
        }
        self.entries = v;
        self.cfg = cfg;
        self.keys = new_keys;
        self.resort();
        self.evict();
        Ok(())
    }

    // ----------------------------------------------------------- reads

    pub(crate) fn score(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.entries[i].score())
    }

    pub(crate) fn rank(&self, m: &[u8]) -> Option<u64> {
        self.find(m).map(|i| self.view()[i].0)
    }

    pub(crate) fn percentile(&self, m: &[u8]) -> Option<f64> {
        self.find(m).map(|i| self.percentile_at(i, &self.view()))
    }

    pub(crate) fn entry(&self, m: &[u8], page_size: u64) -> Option<EntryInfo> {
        let i = self.find(m)?;
        Some(self.info_at(i, page_size, &self.view()))
    }

    pub(crate) fn info_at(&self, i: usize, page_size: u64, view: &[(u64, u64)]) -> EntryInfo {
        EntryInfo {
            entry: self.entry_at(i, view),
            percentile: self.percentile_at(i, view),
            page: i as u64 / page_size.max(1) + 1,
            ranking: self.cfg.ranking,
        }
    }

    pub(crate) fn matching(&self, r: &ScoreRange) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| first_in_range(r, self.entries[i].vals[0]))
            .collect()
    }

    pub(crate) fn count_range(&self, r: &ScoreRange) -> Result<u64, MErr> {
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        Ok(self.matching(r).len() as u64)
    }

    pub(crate) fn span(&self, from: usize, len: usize) -> std::ops::Range<usize> {
        let from = from.min(self.len());
        from..from.saturating_add(len).min(self.len())
    }

    pub(crate) fn top(&self, page: u64, page_size: u64) -> Result<Page, MErr> {
        if page == 0 || page_size == 0 {
            return Err(MErr::BadArgument);
        }
        let total = self.len() as u64;
        let from = (page - 1).saturating_mul(page_size);
        Ok(Page {
            entries: self.entries_at(self.span(from as usize, page_size as usize)),
            page,
            page_size,
            total,
            total_pages: total.div_ceil(page_size),
            ranking: self.cfg.ranking,
        })
    }

    pub(crate) fn range_by_rank(&self, start: u64, stop: u64, from_worst: bool) -> Vec<Entry> {
        let (lo, hi) = self.rank_span(start, stop);
        let n = self.len();
        if from_worst {
            self.entries_at((lo..hi).map(|k| n - 1 - k))
        } else {
            self.entries_at(lo..hi)
        }
    }

    pub(crate) fn range_by_score(
        &self,
        r: &ScoreRange,
        from_worst: bool,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Entry>, MErr> {
        if range_has_nan(r) {
            return Err(MErr::NanScore);
        }
        let mut hits = self.matching(r);
        if from_worst {
            hits.reverse();
        }
        let hits = hits
            .into_iter()
            .skip(offset.min(usize::MAX as u64) as usize)
            .take(limit.min(usize::MAX as u64) as usize);
        Ok(self.entries_at(hits))
    }

    pub(crate) fn around(&self, m: &[u8], page_size: u64) -> Option<Around> {
        let i = self.find(m)?;
        let start = i.saturating_sub(page_size as usize / 2);
        Some(Around {
            entries: self.entries_at(self.span(start, page_size as usize)),
            rank: self.view()[i].0,
            total: self.len() as u64,
            ranking: self.cfg.ranking,
        })
    }

    pub(crate) fn ranks(&self, ms: &[Mem]) -> Ranks {
        let mut found: Vec<usize> = ms.iter().filter_map(|m| self.find(&m.0)).collect();
        found.sort();
        found.dedup();
        let mut missing: Vec<Vec<u8>> = ms
            .iter()
            .filter(|m| self.find(&m.0).is_none())
            .map(|m| m.0.clone())
            .collect();
        missing.sort();
        missing.dedup();
        Ranks {
            entries: self.entries_at(found.into_iter()),
            missing,
            ranking: self.cfg.ranking,
        }
    }

    pub(crate) fn score_at_percentile(&self, p: f64) -> Result<Option<Entry>, MErr> {
        if !(0.0..=100.0).contains(&p) {
            return Err(MErr::BadArgument);
        }
        let n = self.len();
        if n == 0 {
            return Ok(None);
        }
        let r = ((n as f64 + 1.0 - p * n as f64 / 100.0).floor() as usize).clamp(1, n);
        Ok(self.entries_at(std::iter::once(r - 1)).pop())
    }

    pub(crate) fn rows(&self) -> Vec<Row> {
        self.entries
            .iter()
            .map(|e| {
                (
                    Mem(e.member.clone()),
                    e.score(),
                    e.vals,
                    e.name.clone(),
                    e.data.clone(),
                )
            })
            .collect()
    }

    // ------------------------------------------------- merge/intersect

    /// ZUNIONSTORE / ZINTERSTORE: sources visited smallest first (stable),
    /// weighted NaN → 0, aggregate NaN → 0, result members inserted in
    /// first-seen order.
    pub(crate) fn combine(
        cfg: BoardConfig,
        sources: &[(&Model, f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<Model, MErr> {
        validate_config(&cfg)?;
        // They combine single scores: boards with sort keys are refused.
        if !cfg.sort.is_empty() || sources.iter().any(|s| s.0.sorted()) {
            return Err(MErr::WrongKind);
        }
        if sources.iter().any(|s| s.1.is_nan()) {
            return Err(MErr::BadArgument);
        }
        let mut order: Vec<&(&Model, f64)> = sources.iter().collect();
        order.sort_by_key(|s| s.0.len());
        let weighted = |w: f64, s: f64| {
            let x = s * w;
            if x.is_nan() {
                0.0
            } else {
                x
            }
        };
        let apply = |acc: f64, x: f64| {
            let r = match agg {
                Aggregate::Sum => acc + x,
                Aggregate::Min => {
                    if x < acc {
                        x
                    } else {
                        acc
                    }
                }
                Aggregate::Max => {
                    if x > acc {
                        x
                    } else {
                        acc
                    }
                }
            };
            if r.is_nan() {
                0.0
            } else {
                r
            }
        };
        let mut acc: Vec<(Vec<u8>, f64)> = Vec::new();
        if intersect {
            if let Some((first, w0)) = order.first().map(|s| (s.0, s.1)) {
                'members: for e in &first.entries {
                    let mut total = weighted(w0, e.score());
                    for (other, w) in order[1..].iter().map(|s| (s.0, s.1)) {
                        match other.score(&e.member) {
                            // Redis: only a member's first weighted score
                            // has its NaN turned into 0.
                            Some(x) => total = apply(total, w * x),
                            None => continue 'members,
                        }
                    }
                    acc.push((e.member.clone(), total));
                }
            }
        } else {
            for (src, w) in order.iter().map(|s| (s.0, s.1)) {
                for e in &src.entries {
                    match acc.iter_mut().find(|a| a.0 == e.member) {
                        Some(slot) => slot.1 = apply(slot.1, weighted(w, e.score())),
                        None => acc.push((e.member.clone(), weighted(w, e.score()))),
                    }
                }
            }
        }
        let mut out = Model::new(cfg)?;
        for (member, score) in acc {
            let seq = out.bump();
            out.entries.push(MEntry {
                member,
                vals: Vals::new(&[Num::Float(score)]),
                seq,
                name: None,
                data: None,
            });
        }
        out.resort();
        out.evict();
        Ok(out)
    }
}

/// A member, its score, its values (a plain board: its score), its name
/// and its data.
pub(crate) type Row = (Mem, f64, Vals, Option<String>, Option<String>);

pub(crate) fn board_rows(b: &Board) -> Vec<Row> {
    b.iter()
        .zip(b.iter_scores())
        .map(|((m, s, x), (_, v, _))| {
            (
                Mem(m.to_vec()),
                s,
                Vals::new(&v),
                x.and_then(|x| x.name.as_deref().map(str::to_string)),
                x.and_then(|x| x.data.as_deref().map(str::to_string)),
            )
        })
        .collect()
}
