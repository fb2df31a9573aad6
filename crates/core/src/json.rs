//! Request JSON read strictly, for every request body and import line: a
//! key repeated in one object is refused (serde_json would keep the last
//! silently, so `{"score": 1, "score": 9}` meant 9), and a number literal
//! beyond a double's range is refused in podium's words — a `score`'s as
//! [`crate::score`] refuses the same spelling in a string, any other as an
//! out-of-range number — rather than with serde_json's text.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::{ApiError, Code};
use crate::score::{BadScore, Refusal};

/// The JSON text `bytes` as a [`Value`]. `what` starts a syntax error's
/// message ("malformed JSON body", "malformed JSON").
pub fn value(bytes: &[u8], what: &str) -> Result<Value, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Strict
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| refusal(bytes, &e, what))
}

/// The JSON text `bytes` as a `T`, read through [`value`] so its checks
/// hold for every body shape.
pub fn parse<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, ApiError> {
    let v = value(bytes, what)?;
    T::deserialize(v).map_err(|e| ApiError::new(Code::MalformedRequest, format!("{what}: {e}")))
}

fn refusal(bytes: &[u8], e: &serde_json::Error, what: &str) -> ApiError {
    if e.classify() == serde_json::error::Category::Syntax
        && e.to_string().starts_with("number out of range")
    {
        if let Some((literal, key)) = out_of_range_number(bytes, e.line(), e.column()) {
            if key == Some(&b"score"[..]) {
                let bad = BadScore {
                    text: String::from_utf8_lossy(literal).into_owned(),
                    why: Refusal::OutOfRange,
                };
                return ApiError::new(Code::InvalidScore, bad.to_string());
            }
            return ApiError::new(
                Code::MalformedRequest,
                format!(
                    "{what}: the number {} at line {} column {} is out of range of a double",
                    String::from_utf8_lossy(literal),
                    e.line(),
                    e.column()
                ),
            );
        }
    }
    ApiError::new(Code::MalformedRequest, format!("{what}: {e}"))
}

fn is_number_byte(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'+' | b'-' | b'.' | b'e' | b'E')
}

/// The number literal serde_json stopped at (its position is the line and
/// the byte column, 1-based, at or just after the literal), and the key it
/// is the value of, when it is a member's value.
fn out_of_range_number(bytes: &[u8], line: usize, column: usize) -> Option<(&[u8], Option<&[u8]>)> {
    let line_start = if line <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .nth(line - 2)?
            .0
            + 1
    };
    let mut at = (line_start + column.saturating_sub(1)).min(bytes.len().checked_sub(1)?);
    if !is_number_byte(bytes[at]) && at > 0 && is_number_byte(bytes[at - 1]) {
        at -= 1;
    }
    if !is_number_byte(bytes[at]) {
        return None;
    }
    let start = bytes[..at]
        .iter()
        .rposition(|&b| !is_number_byte(b))
        .map_or(0, |i| i + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| !is_number_byte(b))
        .map_or(bytes.len(), |i| at + i);
    let literal = &bytes[start..end];
    let before = bytes[..start].trim_ascii_end();
    let key = before
        .strip_suffix(b":")
        .map(<[u8]>::trim_ascii_end)
        .and_then(|b| b.strip_suffix(b"\""))
        .and_then(|b| {
            let open = b.iter().rposition(|&c| c == b'"')?;
            Some(&b[open + 1..])
        });
    Some((literal, key))
}

/// A [`Value`] that refuses a key repeated within one object.
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Strict)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(Strict)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format_args!(
                    "the key {k:?} is repeated in an object"
                )));
            }
            let v = map.next_value_seed(Strict)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        for text in [
            r#"{"a":1,"a":2}"#,
            r#"[{"m":"x","data":{"k":1,"k":1}}]"#,
            r#"{"a":{"b":[{"c":1,"d":2,"c":3}]}}"#,
        ] {
            let e = value(text.as_bytes(), "malformed JSON body").unwrap_err();
            assert_eq!(e.code, Code::MalformedRequest, "{text}");
            assert!(e.message.contains("is repeated"), "{text}: {}", e.message);
        }
        let v = value(br#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#, "x").unwrap();
        assert_eq!(v["b"][1]["a"], 3);
    }

    #[test]
    fn out_of_range_numbers_are_refused_in_podiums_words() {
        for text in [
            "{\"member\":\"a\",\"score\":1e400}",
            "[{\"member\":\"a\",\"score\" :\n -1e999 }]",
            "{\"score\":1e400,\"member\":\"a\"}",
        ] {
            let e = value(text.as_bytes(), "malformed JSON body").unwrap_err();
            assert_eq!(e.code, Code::InvalidScore, "{text}: {}", e.message);
            assert!(e.message.contains("out of range"), "{}", e.message);
        }
        let e = value(br#"{"weights":[1, 2e400]}"#, "malformed JSON body").unwrap_err();
        assert_eq!(e.code, Code::MalformedRequest);
        assert!(e.message.contains("the number 2e400"), "{}", e.message);
        let e = value(b"1e400", "malformed JSON body").unwrap_err();
        assert!(e.message.contains("the number 1e400"), "{}", e.message);
        // Tiny numbers are rounded, as serde_json does, not refused.
        assert_eq!(value(b"1e-400", "x").unwrap(), 0.0);
    }

    #[test]
    fn a_double_written_shortest_reads_back_exactly() {
        // serde_json's default float parser read this one ulp off.
        for v in [
            -901306.6630859375,
            -900764.1279296875,
            0.1,
            1e300,
            f64::MIN_POSITIVE,
        ] {
            let text = format!("{{\"score\":{v:?}}}");
            let got = value(text.as_bytes(), "x").unwrap()["score"]
                .as_f64()
                .unwrap();
            assert_eq!(got.to_bits(), v.to_bits(), "{text}");
        }
    }
}
