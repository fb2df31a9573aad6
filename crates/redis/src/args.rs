//! What goes into a call: scores as text Redis reads back to the same
//! double, the search words of a write (Lua has no Unicode
//! normalisation, so podium tokenises), and the script's arguments for
//! names, data, score bounds, page sizes and flags.

use podium_core::api::Num;
use podium_core::backend::RangeBounds;
use podium_engine::search::text::clip;
use podium_engine::search::{tokenize, MAX_MEMBER_WORDS};

/// Buffers for [`score_str`].
#[derive(Default)]
pub(crate) struct ScoreBuf {
    float: ryu::Buffer,
    int: itoa::Buffer,
}

/// A score as Redis parses it back to the same double: the shortest
/// round-tripping form (ryu's; `core::fmt` gives the same digits several
/// times slower, which a bulk load paid per entry), or the integer's
/// digits for an integral score (most leaderboards' scores; itoa is
/// several times faster than ryu again). -0 keeps ryu's `-0.0`.
pub(crate) fn score_str(x: f64, buf: &mut ScoreBuf) -> &str {
    if x == f64::INFINITY {
        "inf"
    } else if x == f64::NEG_INFINITY {
        "-inf"
    } else if x.is_nan() {
        "nan"
    } else if x.fract() == 0.0 && x.abs() < 1e15 && !(x == 0.0 && x.is_sign_negative()) {
        buf.int.format(x as i64)
    } else {
        buf.float.format_finite(x)
    }
}

/// A score's text for an argument, as [`score_str`] writes it.
pub(crate) fn fmt_score(x: f64) -> String {
    score_str(x, &mut ScoreBuf::default()).to_string()
}

/// The search words of a text as the engine indexes them (folded, each cut
/// to 255 bytes, at most 1,024), space-separated: words hold only
/// alphanumeric chars, so neither spaces nor newlines.
pub(crate) fn words_line(text: &str) -> String {
    let mut out = String::new();
    for w in tokenize(text).iter().take(MAX_MEMBER_WORDS) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(clip(w));
    }
    out
}

/// The tokenised texts of a write, as the script's `sources` reads them:
/// the id's words; the name's (when one is given); then `key words` for
/// each data key that a `search_fields` entry could name (`name` means the
/// display name, and a field name holds no `:`, `"` or whitespace), with
/// the engine's reading of a value: a string's words, a number or a
/// boolean as its JSON text, nothing for the rest. Tokenising happens
/// here because Lua has no Unicode normalisation.
pub(crate) fn entry_words(
    member: &str,
    name: Option<&str>,
    data: Option<&serde_json::Value>,
) -> String {
    let mut s = words_line(member);
    s.push('\n');
    if let Some(n) = name {
        s.push_str(&words_line(n));
    }
    if let Some(serde_json::Value::Object(o)) = data {
        for (k, v) in o {
            if k.is_empty()
                || k == "name"
                || k.contains([':', '"'])
                || k.contains(char::is_whitespace)
            {
                continue;
            }
            let text = match v {
                serde_json::Value::String(t) => words_line(t),
                serde_json::Value::Number(x) => words_line(&x.to_string()),
                serde_json::Value::Bool(b) => words_line(if *b { "true" } else { "false" }),
                _ => continue,
            };
            s.push('\n');
            s.push_str(k);
            s.push(' ');
            s.push_str(&text);
        }
    }
    s
}

/// A name or data argument of the script: `-` leaves the field, `=value`
/// sets it, `=` clears it, `!` is data that is not a JSON object.
pub(crate) fn extra_arg(v: Option<&str>) -> String {
    match v {
        None => "-".into(),
        Some(s) => format!("={s}"),
    }
}

pub(crate) fn data_arg(d: &Option<serde_json::Value>) -> Result<String, ()> {
    match d {
        None | Some(serde_json::Value::Null) => Ok("-".into()),
        Some(v @ serde_json::Value::Object(_)) => Ok(format!("={v}")),
        Some(_) => Err(()),
    }
}

fn bound(v: Option<f64>, exclusive: bool, unbounded: &str) -> String {
    match v {
        None => unbounded.into(),
        Some(x) if exclusive => format!("({}", fmt_score(x)),
        Some(x) => fmt_score(x),
    }
}

pub(crate) fn has_nan(b: &RangeBounds) -> bool {
    [b.min, b.max]
        .iter()
        .any(|v| v.is_some_and(|v| v.as_f64().is_nan()))
}

/// The `min` and `max` arguments of a score range (`(` before an
/// exclusive bound); `None` when a bound is NaN, which no range takes.
pub(crate) fn score_range(b: &RangeBounds) -> Option<[String; 2]> {
    if has_nan(b) {
        return None;
    }
    Some([
        // Boards on Redis have one float key: bounds are doubles.
        bound(b.min.map(Num::as_f64), b.min_exclusive, "-inf"),
        bound(b.max.map(Num::as_f64), b.max_exclusive, "+inf"),
    ])
}

pub(crate) fn flag(b: bool) -> &'static str {
    if b {
        "1"
    } else {
        "0"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::score_bytes;

    /// Every score's text reads back as the same double (what Redis
    /// stores), sign of zero included, on both the integer and the
    /// float path.
    #[test]
    fn scores_are_written_as_they_read_back() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            1e15 - 1.0,
            1e15,
            -1e15,
            1e16,
            9_007_199_254_740_993.0,
            0.1,
            -2.5,
            1e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for _ in 0..10_000 {
            xs.push(rng.random_range(-1e6..1e6));
            xs.push(rng.random_range(-1e6..1e6_f64).round());
            xs.push(f64::from_bits(rng.random::<u64>()));
        }
        for x in xs.into_iter().filter(|x| !x.is_nan()) {
            let s = fmt_score(x);
            let back = score_bytes(s.as_bytes()).unwrap();
            assert_eq!(back.to_bits(), x.to_bits(), "{x:?} written as {s}");
        }
    }
}
