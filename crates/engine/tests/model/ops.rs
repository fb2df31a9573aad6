//! The operations a generated sequence applies, and the reads it checks.

use super::*;

// ================================================================ operations

#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Fills the board: one `submit` each (a batch would be refused whole
    /// by one out-of-bounds score).
    Prefill(Vec<Sub>),
    Submit(Sub),
    SubmitMany(Vec<Sub>),
    Remove(Vec<Mem>),
    RemoveRangeByRank(u64, u64),
    RemoveRangeByScore(ScoreRange),
    Pop(u64, bool),
    SetData(Mem, Option<String>, Option<String>),
    Clear,
    /// `take`; `true`: carry on with the taken board, else with the fresh one.
    Take(bool),
    SetConfig(BoardConfig),
    /// `set_config` of the board's current config changed so.
    Reconfigure(Reconf),
    /// Snapshot round trip; `true`: carry on with the restored board.
    Snapshot(bool),
    /// Runs the op on a read-only board, then makes it writable again.
    ReadOnly(Box<Op>),
}

#[derive(Debug, Clone)]
pub(crate) enum Read {
    Entry(Mem, u64),
    Rank(Mem),
    Score(Mem),
    Position(Mem),
    Percentile(Mem),
    Count(ScoreRange),
    Top(u64, u64),
    RangeByRank(u64, u64, bool),
    RangeByScore(ScoreRange, bool, u64, u64),
    Around(Mem, u64),
    Ranks(Vec<Mem>),
    ScoreAtPercentile(f64),
    EntriesFrom(usize, usize),
    RankMany(Vec<Mem>),
    ScoreMany(Vec<Mem>),
}

pub(crate) type Step = (Op, Vec<Read>);

/// A change of a board's sort keys, made to the config the board has when
/// the step runs (indices wrap around the keys it has then).
#[derive(Debug, Clone)]
pub(crate) enum SortChange {
    Keep,
    /// Inserts a key (its name may clash with one there: refused).
    Add(usize, SortKey),
    /// Removes a key (the last one: the board becomes plain).
    Drop(usize),
    /// Reverses a key's direction (the first key's is the board's order).
    Flip(usize),
    /// int ↔ float (a plain board gets one int key, `score`).
    Retype(usize),
    Reop(usize, KeyOp),
    /// Renames a key: its values are lost (all of them: refused).
    Rename(usize, String),
    Swap(usize, usize),
    /// No sort keys.
    Plain,
    /// An `order` that is not the first key's: refused.
    Contradict,
}

/// `set_config` relative to the board's config at that step.
#[derive(Debug, Clone)]
pub(crate) struct Reconf {
    pub(crate) change: SortChange,
    pub(crate) ranking: Option<Ranking>,
    pub(crate) tiebreak: Option<Tiebreak>,
    pub(crate) update: Option<UpdateOp>,
    pub(crate) limits: Option<(Option<f64>, Option<f64>, Option<u64>)>,
}

fn reverse(o: Order) -> Order {
    match o {
        Order::Asc => Order::Desc,
        Order::Desc => Order::Asc,
    }
}

impl Reconf {
    pub(crate) fn apply(&self, c: &BoardConfig) -> BoardConfig {
        let mut c = c.clone();
        let mut keys = std::mem::take(&mut c.sort);
        let n = keys.len();
        match &self.change {
            SortChange::Keep | SortChange::Contradict => {}
            SortChange::Add(j, k) => keys.insert(j % (n + 1), k.clone()),
            SortChange::Plain => keys.clear(),
            SortChange::Flip(_) if n == 0 => c.order = reverse(c.order),
            SortChange::Retype(_) if n == 0 => {
                keys.push(SortKey::new("score", c.order, KeyType::Int, KeyOp::Incr))
            }
            _ if n == 0 => {}
            SortChange::Drop(j) => {
                keys.remove(j % n);
            }
            SortChange::Flip(j) => keys[j % n].order = reverse(keys[j % n].order),
            SortChange::Retype(j) => {
                keys[j % n].ty = match keys[j % n].ty {
                    KeyType::Int => KeyType::Float,
                    KeyType::Float => KeyType::Int,
                }
            }
            SortChange::Reop(j, op) => keys[j % n].op = *op,
            SortChange::Rename(j, name) => keys[j % n].key = name.clone(),
            SortChange::Swap(i, j) => keys.swap(i % n, j % n),
        }
        if let Some(first) = keys.first() {
            c.order = first.order;
        }
        if matches!(self.change, SortChange::Contradict) && !keys.is_empty() {
            c.order = reverse(c.order);
        }
        c.sort = keys;
        c.ranking = self.ranking.unwrap_or(c.ranking);
        c.tiebreak = self.tiebreak.unwrap_or(c.tiebreak);
        c.update = self.update.unwrap_or(c.update);
        if let Some((min, max, cap)) = self.limits {
            (c.min_score, c.max_score, c.max_members) = (min, max, cap);
        }
        c
    }
}

// ========================================================= keyed submissions

/// Values a keyed submission picks from: small pools, so that ties are
/// frequent. The first `SMALL_VALUES` of each type stand for the same
/// numbers, so a key changing type keeps its ties.
pub(crate) const SMALL_VALUES: usize = 6;
pub(crate) const ODD_VALUES: usize = 5;
const SMALL_FLOATS: [f64; SMALL_VALUES] = [-1.0, 0.0, 1.0, 2.0, 3.0, -0.0];
const SMALL_INTS: [i64; SMALL_VALUES] = [-1, 0, 1, 2, 3, 0];
/// 0.5 and the infinities: an int key refuses them, a float key's `incr`
/// may make NaN of them.
const ODD_FLOATS: [f64; ODD_VALUES] = [0.5, INF, NEG_INF, 0.5, -1.0];
/// Past 2^53 neighbouring integers share a double; near i64's ends an
/// `incr` overflows.
const ODD_INTS: [i64; ODD_VALUES] = [BIG, BIG + 1, -BIG - 1, i64::MAX, i64::MIN];

/// 2^53: beyond it a double cannot tell neighbouring integers apart.
pub(crate) const BIG: i64 = 1 << 53;

/// One key's value, by the type of the key it goes to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pick {
    Small(usize),
    Odd(usize),
    /// A value of the other type (an int key takes a double holding an
    /// integer, and refuses any other).
    Cross(usize),
}

pub(crate) fn pick_value(ty: KeyType, p: Pick) -> Num {
    let any_float = |i: usize| SMALL_FLOATS.iter().chain(&ODD_FLOATS).copied().nth(i);
    let any_int = |i: usize| SMALL_INTS.iter().chain(&ODD_INTS).copied().nth(i);
    match (ty, p) {
        (KeyType::Float, Pick::Small(i)) => Num::Float(SMALL_FLOATS[i]),
        (KeyType::Float, Pick::Odd(i)) => Num::Float(ODD_FLOATS[i]),
        (KeyType::Float, Pick::Cross(i)) => Num::Int(any_int(i).expect("a pool index")),
        (KeyType::Int, Pick::Small(i)) => Num::Int(SMALL_INTS[i]),
        (KeyType::Int, Pick::Odd(i)) => Num::Int(ODD_INTS[i]),
        (KeyType::Int, Pick::Cross(i)) => Num::Float(any_float(i).expect("a pool index")),
    }
}

/// How a keyed submission names its values.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Every key once.
    Full,
    /// Some keys (refused by `set` and `best`).
    Partial,
    /// No `scores`: the first key from `score`.
    Bare,
    /// Every key and one the board does not have.
    Unknown,
    /// Every key, one of them twice.
    Twice,
}

/// A keyed submission, made for the keys of the board when it is sent:
/// drawn for the board's first keys, it would name keys a change of the
/// sort has since renamed or dropped, and be refused ever after.
#[derive(Debug, Clone)]
pub(crate) struct Keyed {
    /// The values of the keys, by position.
    pub(crate) picks: [Pick; 4],
    pub(crate) shape: Shape,
    /// Names come in the keys' order rotated by this much.
    pub(crate) rot: usize,
    /// `Partial`: which keys are given.
    pub(crate) keep: [bool; 4],
    /// `Unknown`, `Twice`: where the extra name goes.
    pub(crate) at: usize,
    /// The first value named is NaN.
    pub(crate) nan: bool,
}

impl Sub {
    /// The submission as sent to the board `m` stands for: a keyed one
    /// names the board's keys (a plain board gets a bare score, except
    /// for an unknown name); any other is sent as it is.
    pub(crate) fn resolve(&self, m: &Model) -> Sub {
        let Some(t) = &self.keyed else {
            return self.clone();
        };
        let mut out = Sub {
            keyed: None,
            ..self.clone()
        };
        let bare = match t.shape {
            Shape::Bare => true,
            Shape::Unknown => false,
            _ => !m.sorted(),
        };
        if bare {
            return out;
        }
        let n = m.keys.len();
        let mut named: Vec<(String, Num)> = m
            .keys
            .iter()
            .zip(t.picks)
            .map(|(k, p)| (k.key.clone(), pick_value(k.ty, p)))
            .collect();
        named.rotate_left(t.rot % n);
        match t.shape {
            Shape::Partial => {
                let mut keep = t.keep.iter();
                named.retain(|_| *keep.next().expect("one flag per key"));
            }
            Shape::Unknown => named.insert(t.at % (n + 1), ("zz".to_string(), Num::Int(1))),
            Shape::Twice => {
                let again = named[t.at % n].clone();
                named.insert(t.at % (n + 1), again);
            }
            Shape::Full | Shape::Bare => {}
        }
        if t.nan {
            if let Some(first) = named.first_mut() {
                first.1 = Num::Float(f64::NAN);
            }
        }
        out.scores = Some(named);
        out
    }
}
