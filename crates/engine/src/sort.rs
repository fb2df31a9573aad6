//! Composite sort keys: a board's list of keys (name, direction, type and
//! update operator), the typed values a member holds for them, and the
//! order-preserving 64-bit encoding the tree and the tiebreak compare.
//!
//! A board without `sort` has one float key (its `score`) and none of this
//! costs it anything. A board with `sort` keeps its first key where a plain
//! board keeps its score (the tree key, the member record) and the other
//! keys beside the member record, already encoded in rank order, so that
//! ordering two members with the same first key compares plain `u64`s.

use std::cmp::Ordering;
use std::fmt;

use crate::config::Order;
use crate::error::{Error, Result};
use crate::score;

/// Most keys a board may sort by.
pub const MAX_SORT_KEYS: usize = 4;
/// Longest key name, in bytes.
pub const MAX_KEY_NAME_BYTES: usize = 64;
/// Integers of at most this magnitude are exact in a double (and in a JSON
/// number as every JSON reader parses it); larger ones travel as strings.
pub const MAX_SAFE_INT: i64 = (1 << 53) - 1;

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyType {
    /// A double, as a plain board's score.
    #[default]
    Float,
    /// An exact signed 64-bit integer.
    Int,
}

/// What an `incr` submission does to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyOp {
    /// Add the submitted value.
    #[default]
    Incr,
    /// Replace (e.g. the time a total was reached).
    Set,
    /// Keep the larger value.
    Max,
    /// Keep the smaller value.
    Min,
}

/// One key of a board's `sort`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub key: String,
    pub order: Order,
    pub ty: KeyType,
    pub op: KeyOp,
}

impl SortKey {
    pub fn new(key: &str, order: Order, ty: KeyType, op: KeyOp) -> SortKey {
        SortKey {
            key: key.to_string(),
            order,
            ty,
            op,
        }
    }

    /// How this key's values become tree order.
    #[inline]
    pub(crate) fn codec(&self) -> Codec {
        Codec {
            int: self.ty == KeyType::Int,
            desc: self.order == Order::Desc,
        }
    }

    /// The value of this key's type that `n` stands for: a float key takes
    /// any number; an int key an integer, or a double holding one exactly.
    pub fn coerce(&self, n: Num) -> Result<Num> {
        match (self.ty, n) {
            (_, Num::Float(x)) if x.is_nan() => Err(Error::NanScore),
            // `-0.0` is stored as `0.0` (they rank alike, and a key's code
            // keeps one of them), so every engine reports the same value.
            (KeyType::Float, Num::Float(x)) => Ok(Num::Float(x + 0.0)),
            (KeyType::Int, Num::Int(_)) => Ok(n),
            (KeyType::Float, Num::Int(i)) => Ok(Num::Float(i as f64)),
            (KeyType::Int, Num::Float(x)) => float_to_int(x).map(Num::Int).ok_or_else(|| {
                Error::BadArgument(format!(
                    "sort key {:?} holds integers, and {x} is not one",
                    self.key
                ))
            }),
        }
    }

    /// The rank-order code of a value of this key's type: codes compare
    /// as unsigned integers in rank order, best first (how a storage
    /// engine that orders bytes keeps a tuple: the codes big-endian).
    pub fn code(&self, n: Num) -> u64 {
        self.codec().encode(n.raw())
    }

    /// The value a [`SortKey::code`] stands for (`-0.0` comes back as
    /// `0.0`).
    pub fn value(&self, code: u64) -> Num {
        self.codec().decode(code)
    }

    /// Zero of this key's type: what a key a member never submitted holds.
    pub fn zero(&self) -> Num {
        match self.ty {
            KeyType::Float => Num::Float(0.0),
            KeyType::Int => Num::Int(0),
        }
    }

    /// `incr`'s operator on this key: the stored value and the submitted
    /// one (both of this key's type) give the new value.
    pub fn apply(&self, old: Num, given: Num) -> Result<Num> {
        self.apply_op(self.op, old, given)
    }

    /// [`SortKey::apply`] with another operator.
    pub(crate) fn apply_op(&self, op: KeyOp, old: Num, given: Num) -> Result<Num> {
        Ok(match (op, old, given) {
            (KeyOp::Set, _, g) => g,
            (KeyOp::Incr, Num::Float(a), Num::Float(b)) => {
                let r = a + b;
                if r.is_nan() {
                    return Err(Error::NanResult);
                }
                Num::Float(r)
            }
            (KeyOp::Incr, Num::Int(a), Num::Int(b)) => {
                Num::Int(a.checked_add(b).ok_or_else(|| {
                    Error::BadArgument(format!(
                        "incrementing sort key {:?} would overflow a 64-bit integer",
                        self.key
                    ))
                })?)
            }
            (KeyOp::Max, a, b) => {
                if b.cmp_value(&a) == Ordering::Greater {
                    b
                } else {
                    a
                }
            }
            (KeyOp::Min, a, b) => {
                if b.cmp_value(&a) == Ordering::Less {
                    b
                } else {
                    a
                }
            }
            (_, _, g) => g,
        })
    }
}

/// 2^63: the first double past `i64::MAX` (and `-2^63` is `i64::MIN`).
pub(crate) const TWO_63: f64 = (1u64 << 63) as f64;

/// The exact integer a double holds, if it holds one in `i64`'s range.
/// -2^63 itself is refused, as 2^63 is: a double holds it for every
/// integer within 1,024 below it too (`-9223372036854775809` reads as
/// it), so it may stand for a value past the range; the minimum is taken
/// as an integer.
fn float_to_int(x: f64) -> Option<i64> {
    (x.fract() == 0.0 && x > -TWO_63 && x < TWO_63).then_some(x as i64)
}

/// One key's value.
#[derive(Debug, Clone, Copy)]
pub enum Num {
    Float(f64),
    Int(i64),
}

impl Num {
    /// The value as a double (inexact for integers beyond ±2^53).
    #[inline]
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Float(x) => x,
            Num::Int(i) => i as f64,
        }
    }

    /// Numeric order of two values of one key (never NaN).
    pub fn cmp_value(&self, other: &Num) -> Ordering {
        match (*self, *other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (a, b) => a
                .as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }

    /// The value's 64 bits as a member record holds them: a double's bits,
    /// or an integer's two's complement.
    #[inline]
    pub(crate) fn raw(self) -> u64 {
        match self {
            Num::Float(x) => x.to_bits(),
            Num::Int(i) => i as u64,
        }
    }

    /// The value for JSON: a number, or a string for an integer beyond
    /// ±2^53 (which a JSON reader would round) and for infinities (which
    /// JSON cannot spell).
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Num::Int(i) if i.unsigned_abs() <= MAX_SAFE_INT as u64 => i.into(),
            Num::Int(i) => i.to_string().into(),
            Num::Float(x) if x == f64::INFINITY => "inf".into(),
            Num::Float(x) if x == f64::NEG_INFINITY => "-inf".into(),
            Num::Float(x) => serde_json::json!(x),
        }
    }

    /// Reads a JSON number, or a string holding one (an integer of any
    /// size up to 64 bits, a double, `inf`, `-inf`): integers stay exact.
    pub fn from_json(v: &serde_json::Value) -> Option<Num> {
        match v {
            serde_json::Value::Number(n) => n
                .as_i64()
                .map(Num::Int)
                .or_else(|| n.as_f64().map(Num::Float)),
            serde_json::Value::String(s) => Num::parse(s),
            _ => None,
        }
    }

    /// Reads a number's text: an integer stays exact, anything else is a
    /// double (`inf`, `-inf` and `+inf` included); NaN is refused.
    pub fn parse(s: &str) -> Option<Num> {
        let t = s.trim();
        if let Ok(i) = t.parse::<i64>() {
            return Some(Num::Int(i));
        }
        let x = match t.to_ascii_lowercase().as_str() {
            "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
            "-inf" | "-infinity" => f64::NEG_INFINITY,
            _ => t.parse::<f64>().ok().filter(|x| x.is_finite())?,
        };
        Some(Num::Float(x))
    }
}

/// Equal values of the same type (`-0.0 == 0.0`, as they rank alike).
impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        match (*self, *other) {
            (Num::Float(a), Num::Float(b)) => a == b,
            (Num::Int(a), Num::Int(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Float(x) => write!(f, "{x}"),
            Num::Int(i) => write!(f, "{i}"),
        }
    }
}

/// A member's values, one per sort key, in the board's key order.
#[derive(Clone, Copy, PartialEq)]
pub struct Scores {
    len: u8,
    vals: [Num; MAX_SORT_KEYS],
}

impl Scores {
    /// At most [`MAX_SORT_KEYS`] values (more are ignored).
    pub fn new(vals: &[Num]) -> Scores {
        let mut s = Scores {
            len: vals.len().min(MAX_SORT_KEYS) as u8,
            vals: [Num::Float(0.0); MAX_SORT_KEYS],
        };
        s.vals[..s.len as usize].copy_from_slice(&vals[..s.len as usize]);
        s
    }

    pub fn as_slice(&self) -> &[Num] {
        &self.vals[..self.len as usize]
    }

    /// The first key's value (the `score` reads report).
    pub fn first(&self) -> Num {
        self.vals[0]
    }
}

impl std::ops::Deref for Scores {
    type Target = [Num];
    fn deref(&self) -> &[Num] {
        self.as_slice()
    }
}

impl fmt::Debug for Scores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// A key's value ↔ its tree-order `u64`: the unsigned order of the codes
/// is the key's rank order (best first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Codec {
    pub(crate) int: bool,
    pub(crate) desc: bool,
}

const SIGN: u64 = 1 << 63;

impl Codec {
    /// A plain board's single float key.
    pub(crate) fn float(desc: bool) -> Codec {
        Codec { int: false, desc }
    }

    /// The code of a value's raw bits ([`Num::raw`]).
    #[inline(always)]
    pub(crate) fn encode(self, raw: u64) -> u64 {
        let k = if self.int {
            raw ^ SIGN
        } else {
            score::encode(f64::from_bits(raw))
        };
        if self.desc {
            !k
        } else {
            k
        }
    }

    /// The value a code stands for (`-0.0` comes back as `0.0`: they share
    /// a code).
    #[inline]
    pub(crate) fn decode(self, code: u64) -> Num {
        let k = if self.desc { !code } else { code };
        if self.int {
            Num::Int((k ^ SIGN) as i64)
        } else {
            Num::Float(score::decode(k))
        }
    }

    /// The value of a raw record.
    #[inline]
    pub(crate) fn value(self, raw: u64) -> Num {
        if self.int {
            Num::Int(raw as i64)
        } else {
            Num::Float(f64::from_bits(raw))
        }
    }
}

impl KeyType {
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyType::Float => "float",
            KeyType::Int => "int",
        }
    }
}

impl KeyOp {
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyOp::Incr => "incr",
            KeyOp::Set => "set",
            KeyOp::Max => "max",
            KeyOp::Min => "min",
        }
    }
}

/// Whether two `sort`s order members alike (only their `op`s differ).
pub fn same_order(a: &[SortKey], b: &[SortKey]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.key == y.key && x.order == y.order && x.ty == y.ty)
}

/// Where each key of `new` takes its values from when a board's sort
/// changes: the key of `old` with the same name (a plain board's score
/// counts as a key named `score`, and goes to the first key when no new
/// key has that name; a plain board made from a sorted one takes its
/// `score` key, or else its first key); `None`: the key starts at zero.
/// A change that would keep no value at all is refused.
/// For each key of `new`, the key of `old` its values come from (by
/// name; a plain board's score feeds a first key that no name matches),
/// or `None`: it starts at zero.
pub fn key_sources(
    old: &crate::BoardConfig,
    new: &crate::BoardConfig,
) -> Result<Vec<Option<usize>>> {
    let (old_keys, new_keys) = (old.keys(), new.keys());
    let by_name = |k: &SortKey| old_keys.iter().position(|o| o.key == k.key);
    let mut src: Vec<Option<usize>> = new_keys.iter().map(by_name).collect();
    if src.iter().all(Option::is_none) {
        // Right for another board: a conflict with this one's keys.
        if old.has_sort() && new.has_sort() {
            return Err(Error::WrongKind(
                "the new sort shares no key name with the old one: every value would be lost (keep at least one key's name)".into(),
            ));
        }
        src[0] = Some(0);
    }
    Ok(src)
}

/// Reads `sort`: an array of 1 to [`MAX_SORT_KEYS`] objects
/// `{"key", "order", "type", "op"}` (all but `key` optional: `desc`,
/// `float`, `incr`).
pub(crate) fn keys_from_json(v: &serde_json::Value) -> Result<Vec<SortKey>> {
    let bad = |m: String| Error::BadConfig(format!("sort {m}"));
    let arr = v.as_array().ok_or_else(|| {
        bad(r#"must be an array of keys such as [{"key": "laps"}, {"key": "time_ms", "order": "asc"}]"#.into())
    })?;
    if arr.is_empty() || arr.len() > MAX_SORT_KEYS {
        return Err(bad(format!("must list 1 to {MAX_SORT_KEYS} keys")));
    }
    let mut keys = Vec::with_capacity(arr.len());
    for k in arr {
        let obj = k
            .as_object()
            .ok_or_else(|| bad(r#"keys must be objects such as {"key": "laps"}"#.into()))?;
        let s = |f: &str| -> Result<Option<&str>> {
            match obj.get(f) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(bad(format!("key field {f:?} must be a string"))),
            }
        };
        if let Some(f) = obj
            .keys()
            .find(|f| !["key", "order", "type", "op"].contains(&f.as_str()))
        {
            return Err(bad(format!(
                "key has an unknown field {f:?}: expected key, order, type and op"
            )));
        }
        let name = s("key")?.ok_or_else(|| bad("keys must each have a \"key\" name".into()))?;
        let order = match s("order")? {
            None => Order::Desc,
            Some(o) => o.parse()?,
        };
        let ty = match s("type")? {
            None | Some("float") => KeyType::Float,
            Some("int") => KeyType::Int,
            Some(t) => {
                return Err(bad(format!(
                    "key type {t:?} is unknown; expected float or int"
                )))
            }
        };
        let op = match s("op")? {
            None | Some("incr") => KeyOp::Incr,
            Some("set") => KeyOp::Set,
            Some("max") => KeyOp::Max,
            Some("min") => KeyOp::Min,
            Some(o) => {
                return Err(bad(format!(
                    "key op {o:?} is unknown; expected incr, set, max or min"
                )))
            }
        };
        keys.push(SortKey::new(name, order, ty, op));
    }
    Ok(keys)
}

pub(crate) fn keys_to_json(keys: &[SortKey]) -> serde_json::Value {
    keys.iter()
        .map(|k| {
            serde_json::json!({
                "key": k.key,
                "order": k.order.as_str(),
                "type": k.ty.as_str(),
                "op": k.op.as_str(),
            })
        })
        .collect()
}

/// Refuses a `sort` that is empty, too long, or names a key badly or twice.
pub(crate) fn validate(keys: &[SortKey]) -> Result<()> {
    let bad = |m: String| Err(Error::BadConfig(format!("sort {m}")));
    if keys.len() > MAX_SORT_KEYS {
        return bad(format!("may list at most {MAX_SORT_KEYS} keys"));
    }
    for (i, k) in keys.iter().enumerate() {
        if k.key.is_empty()
            || k.key.len() > MAX_KEY_NAME_BYTES
            || k.key.contains(|c: char| c.is_control() || c == ',')
        {
            return bad(format!(
                "key names must be 1 to {MAX_KEY_NAME_BYTES} bytes without commas or control characters"
            ));
        }
        if keys[..i].iter().any(|o| o.key == k.key) {
            return bad(format!("must not list the key {:?} twice", k.key));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn codecs() -> [Codec; 4] {
        [
            Codec {
                int: false,
                desc: false,
            },
            Codec {
                int: false,
                desc: true,
            },
            Codec {
                int: true,
                desc: false,
            },
            Codec {
                int: true,
                desc: true,
            },
        ]
    }

    #[test]
    fn integers_beyond_doubles_keep_their_order() {
        let big = 1i64 << 53;
        for c in codecs().into_iter().filter(|c| c.int) {
            let (a, b) = (
                c.encode(Num::Int(big).raw()),
                c.encode(Num::Int(big + 1).raw()),
            );
            assert_eq!(
                a.cmp(&b),
                if c.desc {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            );
            assert_eq!(c.decode(b), Num::Int(big + 1));
        }
        let c = Codec {
            int: true,
            desc: false,
        };
        assert!(c.encode(Num::Int(i64::MIN).raw()) < c.encode(Num::Int(-1).raw()));
        assert!(c.encode(Num::Int(-1).raw()) < c.encode(Num::Int(0).raw()));
        assert!(c.encode(Num::Int(0).raw()) < c.encode(Num::Int(i64::MAX).raw()));
    }

    #[test]
    fn json_carries_large_integers_as_strings() {
        assert_eq!(
            Num::Int(MAX_SAFE_INT).to_json(),
            serde_json::json!(MAX_SAFE_INT)
        );
        assert_eq!(
            Num::Int(MAX_SAFE_INT + 1).to_json(),
            serde_json::json!("9007199254740992")
        );
        assert_eq!(
            Num::from_json(&serde_json::json!("9223372036854775807")),
            Some(Num::Int(i64::MAX))
        );
        // The one integer whose magnitude has no i64.
        assert_eq!(
            Num::Int(i64::MIN).to_json(),
            serde_json::json!("-9223372036854775808")
        );
        // -0.0 is kept as 0.0 by a float key.
        let k = SortKey::new("t", Order::Asc, KeyType::Float, KeyOp::Set);
        let z = k.coerce(Num::Float(-0.0)).unwrap();
        assert!(matches!(z, Num::Float(x) if x == 0.0 && x.is_sign_positive()));
        assert_eq!(
            Num::from_json(&serde_json::json!(1.5)),
            Some(Num::Float(1.5))
        );
        assert_eq!(
            Num::from_json(&serde_json::json!("-inf")),
            Some(Num::Float(f64::NEG_INFINITY))
        );
        assert_eq!(Num::from_json(&serde_json::json!("nan")), None);
        assert_eq!(Num::from_json(&serde_json::json!(true)), None);
    }

    /// An `int` key holds `i64`: a value past either end is refused, never
    /// clamped to the end (below the minimum, a double rounds to exactly
    /// -2^63, which is the minimum itself).
    #[test]
    fn an_int_key_refuses_values_past_either_end() {
        let int = SortKey::new("k", Order::Desc, KeyType::Int, KeyOp::Incr);
        for text in [
            "-9223372036854775809",
            "-9223372036854775810",
            "-9223372036854775808.0",
            "9223372036854775808",
            "-1e19",
        ] {
            let n = Num::parse(text).unwrap();
            assert!(
                int.coerce(n).is_err(),
                "{text} was taken as {:?}",
                int.coerce(n)
            );
        }
        for json in ["-9223372036854775809", "9223372036854775808"] {
            let n = Num::from_json(&serde_json::from_str(json).unwrap()).unwrap();
            assert!(int.coerce(n).is_err(), "{json}");
        }
        for (text, v) in [
            ("-9223372036854775808", i64::MIN),
            ("9223372036854775807", i64::MAX),
        ] {
            assert_eq!(int.coerce(Num::parse(text).unwrap()).unwrap(), Num::Int(v));
        }
    }

    #[test]
    fn coercion_to_a_key_type() {
        let int = SortKey::new("k", Order::Desc, KeyType::Int, KeyOp::Incr);
        let float = SortKey::new("k", Order::Desc, KeyType::Float, KeyOp::Incr);
        assert_eq!(int.coerce(Num::Float(3.0)).unwrap(), Num::Int(3));
        assert!(int.coerce(Num::Float(3.5)).is_err());
        assert!(int.coerce(Num::Float(9.3e18)).is_err());
        assert!(int.coerce(Num::Float(-TWO_63)).is_err());
        assert_eq!(float.coerce(Num::Int(2)).unwrap(), Num::Float(2.0));
        assert_eq!(float.coerce(Num::Float(f64::NAN)), Err(Error::NanScore));
        let mut inc = int.clone();
        assert!(inc.apply(Num::Int(i64::MAX), Num::Int(1)).is_err());
        inc.op = KeyOp::Min;
        assert_eq!(inc.apply(Num::Int(5), Num::Int(3)).unwrap(), Num::Int(3));
        inc.op = KeyOp::Max;
        assert_eq!(inc.apply(Num::Int(5), Num::Int(3)).unwrap(), Num::Int(5));
    }

    proptest! {
        #[test]
        fn codes_order_as_values(a in any::<i64>(), b in any::<i64>(), x in any::<f64>(), y in any::<f64>()) {
            prop_assume!(!x.is_nan() && !y.is_nan());
            for c in codecs() {
                let (p, q) = if c.int { (Num::Int(a), Num::Int(b)) } else { (Num::Float(x), Num::Float(y)) };
                let want = if c.desc { q.cmp_value(&p) } else { p.cmp_value(&q) };
                prop_assert_eq!(c.encode(p.raw()).cmp(&c.encode(q.raw())), want);
                prop_assert_eq!(c.decode(c.encode(p.raw())), p);
                prop_assert_eq!(c.value(p.raw()), p);
            }
        }
    }
}
