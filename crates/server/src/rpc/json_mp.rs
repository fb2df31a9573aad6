//! A member's `data` (a JSON object kept as text) written as MessagePack
//! straight from its text, for the in-place entry encoder.
//!
//! The DTO path parses the text into a `serde_json::Value` (a tree: a
//! `BTreeMap` node and a `String` per key and string) and has `rmp_serde`
//! encode that; with 1 KiB profiles that was most of an export's time. This
//! walks the text once with serde_json's own parser and writes each item as
//! `rmp_serde` writes the `Value` item it would have become, so the bytes
//! are the same. A `Value` keeps an object's keys sorted and the last of
//! duplicates; text whose keys are not in strictly increasing order is
//! refused here (the caller takes the `Value` path), which never happens
//! for data stored through the service (it stores `Value::to_string()`).

use std::fmt;

use rmp::encode as w;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Appends `json` to `out` as `rmp_serde` encodes the `serde_json::Value`
/// parsed from it. Returns false, with `out` unchanged, when `json` is not
/// JSON or holds an object whose keys are not strictly increasing.
pub fn transcode(json: &str, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let mut de = serde_json::Deserializer::from_str(json);
    let ok = Item { out }.deserialize(&mut de).is_ok() && de.end().is_ok();
    if !ok {
        out.truncate(start);
    }
    ok
}

/// Writes one JSON value.
struct Item<'a> {
    out: &'a mut Vec<u8>,
}

/// Writes one object key, giving where its bytes landed in `out`.
struct Key<'a> {
    out: &'a mut Vec<u8>,
}

/// Inserts the header of a container of `n` items before its items, which
/// start at `at` (its size is known only once they are written).
fn insert_header(out: &mut Vec<u8>, at: usize, n: u32, map: bool) {
    let mut h = Vec::with_capacity(5);
    // Writing into a Vec cannot fail.
    let _ = if map {
        w::write_map_len(&mut h, n)
    } else {
        w::write_array_len(&mut h, n)
    };
    out.splice(at..at, h);
}

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

// Writing into a Vec cannot fail: the encoders' results are ignored.
impl<'de> Visitor<'de> for Item<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        let _ = w::write_nil(self.out);
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        let _ = w::write_bool(self.out, v);
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        let _ = w::write_uint(self.out, v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        // A `Value` keeps a non-negative integer as unsigned.
        let _ = if v >= 0 {
            w::write_uint(self.out, v as u64).map(|_| ())
        } else {
            w::write_sint(self.out, v).map(|_| ())
        };
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        let _ = w::write_f64(self.out, v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        let _ = w::write_str(self.out, v);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = self.out.len();
        let mut n = 0u32;
        while seq.next_element_seed(Item { out: self.out })?.is_some() {
            n += 1;
        }
        insert_header(self.out, at, n, false);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let at = self.out.len();
        let mut n = 0u32;
        let mut prev: Option<(usize, usize)> = None;
        while let Some((s, e)) = map.next_key_seed(Key { out: self.out })? {
            if let Some((ps, pe)) = prev {
                if self.out[ps..pe] >= self.out[s..e] {
                    return Err(de::Error::custom("keys not in increasing order"));
                }
            }
            prev = Some((s, e));
            map.next_value_seed(Item { out: self.out })?;
            n += 1;
        }
        insert_header(self.out, at, n, true);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = (usize, usize);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(usize, usize), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = (usize, usize);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<(usize, usize), E> {
        let _ = w::write_str_len(self.out, v.len() as u32);
        let s = self.out.len();
        self.out.extend_from_slice(v.as_bytes());
        Ok((s, self.out.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the DTO path writes for the same text.
    fn via_value(json: &str) -> Option<Vec<u8>> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let mut b = Vec::new();
        rmp_serde::encode::write_named(&mut b, &v).unwrap();
        Some(b)
    }

    #[test]
    fn sorted_objects_encode_as_their_values() {
        let long = "x".repeat(70_000);
        let many: String = {
            let items: Vec<String> = (0..20).map(|i| format!("\"k{i:02}\":{i}")).collect();
            format!("{{{}}}", items.join(","))
        };
        let texts = [
            "{}".to_string(),
            r#"{"a":1}"#.to_string(),
            r#"{"a":null,"b":true,"c":false,"d":[],"e":{}}"#.to_string(),
            r#"{"i":[0,1,127,128,255,256,65535,65536,4294967295,4294967296,18446744073709551615]}"#
                .to_string(),
            r#"{"n":[-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649,-9223372036854775808]}"#
                .to_string(),
            r#"{"f":[0.5,-0.0,1e300,-2.5e-10,18446744073709551616,1.0]}"#.to_string(),
            r#"{"s":"é\u0000\"\\\n😀","t":"plain"}"#.to_string(),
            r#"{"deep":{"a":[{"b":[1,[2,[3]]]}],"z":{"y":{}}}}"#.to_string(),
            format!(r#"{{"big":"{long}","list":[{}]}}"#, vec!["1"; 70_000].join(",")),
            many,
            format!(r#"{{"{}":1,"{}":2}}"#, "k".repeat(40), "l".repeat(300)),
            // Keys sorted by bytes, not by length.
            r#"{"B":1,"a":2,"aa":3,"ab":4,"b":5}"#.to_string(),
            " { \"a\" : [ 1 , 2 ] } ".to_string(),
        ];
        for t in &texts {
            let expect = via_value(t).unwrap();
            let mut got = vec![0xc0];
            assert!(transcode(t, &mut got), "{t}");
            assert_eq!(&got[1..], &expect[..], "{t}");
            // The same text as a `Value` writes it.
            let canon = serde_json::from_str::<serde_json::Value>(t)
                .unwrap()
                .to_string();
            let mut again = Vec::new();
            assert!(transcode(&canon, &mut again));
            assert_eq!(again, expect);
        }
    }

    #[test]
    fn unsorted_duplicate_or_bad_text_is_refused() {
        for t in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"x":{"b":1,"a":2}}"#,
            r#"{"a":[{"z":1,"y":2}]}"#,
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            "",
            "{'a':1}",
        ] {
            let mut got = vec![1, 2, 3];
            assert!(!transcode(t, &mut got), "{t}");
            assert_eq!(got, [1, 2, 3], "{t}");
        }
        // Nesting past serde_json's limit is refused (as `Value` refuses it).
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let mut got = Vec::new();
        assert!(!transcode(&format!(r#"{{"a":{deep}}}"#), &mut got));
        assert!(via_value(&format!(r#"{{"a":{deep}}}"#)).is_none());
    }
}
