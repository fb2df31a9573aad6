//! A member's `data` (a JSON object kept as text) written as MessagePack
//! straight from its text, for the in-place entry encoder
//! ([`super::encode_entry_ref`]).
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
//!
//! Before that walk, [`transcode`] tries a parser of its own ([`Fast`])
//! whose strings cost a `memchr` for the closing quote and one copy: a
//! member's `data` that is mostly one long string (a large opaque payload)
//! is then written at about the speed of a copy, where serde_json's walk
//! looks at every byte and the item's container header was spliced in
//! front of it (a second copy). It hands everything it is not sure of to
//! serde_json (numbers, strings with escapes) or gives up (returns `None`)
//! and leaves the text to the walk, so the two write the same bytes and
//! refuse the same texts (unit tests hold them to it).

use std::fmt;

use rmp::encode as w;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Appends `json` to `out` as `rmp_serde` encodes the `serde_json::Value`
/// parsed from it. Returns false, with `out` unchanged, when `json` is not
/// JSON or holds an object whose keys are not strictly increasing.
pub fn transcode(json: &str, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    if Fast::run(json, out).is_some() {
        return true;
    }
    out.truncate(start);
    let mut de = serde_json::Deserializer::from_str(json);
    let ok = Item { out }.deserialize(&mut de).is_ok() && de.end().is_ok();
    if !ok {
        out.truncate(start);
    }
    ok
}

/// Appends the JSON object `json` to `out` with its keys in the text's
/// order, each value as [`transcode`] writes it: a live event's envelope
/// (`id`, `type`, `board`) comes first in its JSON and stays first in its
/// MessagePack map. Returns false, with `out` unchanged, when `json` is
/// not an object, not JSON, or a value holds an object whose keys are not
/// strictly increasing.
pub fn transcode_object(json: &str, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let mut de = serde_json::Deserializer::from_str(json);
    let ok = InOrder { out }.deserialize(&mut de).is_ok() && de.end().is_ok();
    if !ok {
        out.truncate(start);
    }
    ok
}

/// Writes one JSON object, its keys as they come.
struct InOrder<'a> {
    out: &'a mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for InOrder<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for InOrder<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let at = open_header(self.out);
        let mut n = 0u32;
        while map.next_key_seed(Key { out: self.out })?.is_some() {
            map.next_value_seed(Item { out: self.out })?;
            n += 1;
        }
        close_header(self.out, at, n, true);
        Ok(())
    }
}

/// Writes one JSON value.
struct Item<'a> {
    out: &'a mut Vec<u8>,
}

/// Writes one object key, giving where its bytes landed in `out`.
struct Key<'a> {
    out: &'a mut Vec<u8>,
}

/// A container's header is known only once its items are written: one
/// byte is kept for it at `at` (a fix header, up to 15 items, the common
/// case), then [`close_header`] writes it, moving the items only when it
/// needs more bytes.
fn open_header(out: &mut Vec<u8>) -> usize {
    out.push(0);
    out.len() - 1
}

/// Writes the header of a container of `n` items at `at` (see
/// [`open_header`]), as `rmp::encode` writes it.
fn close_header(out: &mut Vec<u8>, at: usize, n: u32, map: bool) {
    if n < 16 {
        out[at] = if map { 0x80 } else { 0x90 } | n as u8;
        return;
    }
    let mut h = Vec::with_capacity(5);
    // Writing into a Vec cannot fail.
    let _ = if map {
        w::write_map_len(&mut h, n)
    } else {
        w::write_array_len(&mut h, n)
    };
    out.splice(at..at + 1, h);
}

/// Nesting past this is left to serde_json (whose own limit, 128, decides).
const FAST_MAX_DEPTH: u32 = 64;

/// The fast parser: the JSON grammar over bytes, writing as it goes.
struct Fast<'a, 'o> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
    out: &'o mut Vec<u8>,
    depth: u32,
}

impl Fast<'_, '_> {
    /// `json` written as MessagePack, or `None` (with `out` partly
    /// written) when the text needs serde_json's walk or is not JSON.
    fn run(json: &str, out: &mut Vec<u8>) -> Option<()> {
        let mut f = Fast {
            text: json,
            s: json.as_bytes(),
            i: 0,
            out,
            depth: 0,
        };
        f.value()?;
        f.ws();
        (f.i == f.s.len()).then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Option<()> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => self.container(true),
            b'[' => self.container(false),
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true", 0xc3),
            b'f' => self.literal(b"false", 0xc2),
            b'n' => self.literal(b"null", 0xc0),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], byte: u8) -> Option<()> {
        if !self.s[self.i..].starts_with(word) {
            return None;
        }
        self.i += word.len();
        self.out.push(byte);
        Some(())
    }

    /// A number: its extent found here, its value read by serde_json (so
    /// integers, big integers and floats come out as its walk gives them).
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
        }
        let mut de = serde_json::Deserializer::from_str(&self.text[start..self.i]);
        Item { out: self.out }.deserialize(&mut de).ok()?;
        de.end().ok()
    }

    /// A string at `self.i` (its opening quote), written with its header;
    /// gives where its bytes landed in `out` (for the key order check).
    fn string(&mut self) -> Option<(usize, usize)> {
        let body = self.i + 1;
        let k = memchr::memchr2(b'"', b'\\', &self.s[body..])?;
        if self.s[body + k] == b'"' {
            let raw = &self.s[body..body + k];
            // A control character must be escaped: not JSON (serde_json's
            // walk refuses it too). Branch-free, so it vectorises.
            if raw.iter().fold(false, |c, &b| c | (b < 0x20)) {
                return None;
            }
            let _ = w::write_str_len(self.out, k as u32);
            let at = self.out.len();
            self.out.extend_from_slice(raw);
            self.i = body + k + 1;
            return Some((at, self.out.len()));
        }
        // Escapes: find the closing quote (an escape is a backslash and the
        // character after it; the hex digits of `\uXXXX` are neither quote
        // nor backslash), then serde_json decodes the literal.
        let mut j = body + k;
        loop {
            j += 2;
            let k = memchr::memchr2(b'"', b'\\', self.s.get(j..)?)?;
            j += k;
            if self.s[j] == b'"' {
                break;
            }
        }
        // Both ends are ASCII quotes, so this slices on char boundaries.
        let v: String = serde_json::from_str(&self.text[self.i..=j]).ok()?;
        let _ = w::write_str_len(self.out, v.len() as u32);
        let at = self.out.len();
        self.out.extend_from_slice(v.as_bytes());
        self.i = j + 1;
        Some((at, self.out.len()))
    }

    /// An object (`map`) or an array at `self.i`.
    fn container(&mut self, map: bool) -> Option<()> {
        self.depth += 1;
        if self.depth > FAST_MAX_DEPTH {
            return None;
        }
        self.i += 1;
        let close = if map { b'}' } else { b']' };
        let at = open_header(self.out);
        let mut n = 0u32;
        let mut prev: Option<(usize, usize)> = None;
        self.ws();
        if self.s.get(self.i) == Some(&close) {
            self.i += 1;
        } else {
            loop {
                if map {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return None;
                    }
                    let (s, e) = self.string()?;
                    if let Some((ps, pe)) = prev {
                        // Unsorted or duplicate keys: the walk refuses them.
                        if self.out[ps..pe] >= self.out[s..e] {
                            return None;
                        }
                    }
                    prev = Some((s, e));
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return None;
                    }
                    self.i += 1;
                }
                self.value()?;
                n = n.checked_add(1)?;
                self.ws();
                match self.s.get(self.i) {
                    Some(b',') => self.i += 1,
                    Some(&c) if c == close => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        close_header(self.out, at, n, map);
        self.depth -= 1;
        Some(())
    }
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
        let at = open_header(self.out);
        let mut n = 0u32;
        while seq.next_element_seed(Item { out: self.out })?.is_some() {
            n += 1;
        }
        close_header(self.out, at, n, false);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let at = open_header(self.out);
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
        close_header(self.out, at, n, true);
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

    /// Long strings as the fast path reads them: escapes, non-ASCII and
    /// control characters at every offset around memchr's 16- and 32-byte
    /// blocks, strings whose header grows (str8/16/32), agree with the
    /// `Value` path byte for byte; only text without escapes is required
    /// to stay on the fast path.
    #[test]
    fn long_strings_on_the_fast_path_encode_as_their_values() {
        let specials = [
            "",
            r#"\""#,
            r"\\",
            r"\n\t\/",
            r"\u00e9\ud83d\ude00",
            "é",
            "😀",
            "\u{1}",   // raw: not JSON
            r"\uD800", // a lone surrogate: refused by both
            "\"",      // ends the string early: not JSON
        ];
        for len in [
            0usize, 1, 15, 16, 17, 31, 32, 33, 64, 255, 256, 65_535, 65_536, 70_000,
        ] {
            let plain: String = (0..len)
                .map(|k| char::from(b'a' + (k % 26) as u8))
                .collect();
            let mut offsets: Vec<usize> = (0..len.min(70)).collect();
            offsets.extend([len / 2, len.saturating_sub(1), len]);
            for sp in specials {
                for &at in &offsets {
                    let mut s = plain.clone();
                    s.insert_str(at.min(len), sp);
                    let t = format!(r#"{{"blob":"{s}","z":[1,-2,0.5]}}"#);
                    let mut got = vec![7];
                    let ok = transcode(&t, &mut got);
                    match via_value(&t) {
                        Some(expect) => {
                            assert!(ok, "{len} {sp:?} at {at}");
                            assert_eq!(&got[1..], &expect[..], "{len} {sp:?} at {at}");
                        }
                        None => {
                            assert!(!ok, "{len} {sp:?} at {at}");
                            assert_eq!(got, [7]);
                        }
                    }
                }
            }
            let t = format!(r#"{{"blob":"{plain}é😀"}}"#);
            let mut fast = Vec::new();
            assert!(Fast::run(&t, &mut fast).is_some(), "{len}");
            assert_eq!(Some(fast), via_value(&t));
        }
    }

    #[test]
    fn an_object_keeps_its_key_order_and_its_integers() {
        let json = r#"{"id":"4-1","type":"enter","board":"b","rank":3,"score":2.5,"n":-7,"top":[{"member":"a","rank":1}]}"#;
        let mut out = vec![0xaa];
        assert!(transcode_object(json, &mut out));
        assert_eq!(out[0], 0xaa);
        let v = rmpv::decode::read_value(&mut &out[1..]).unwrap();
        let keys: Vec<_> = v
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap())
            .collect();
        assert_eq!(keys, ["id", "type", "board", "rank", "score", "n", "top"]);
        assert_eq!(v["rank"], rmpv::Value::from(3));
        assert!(v["rank"].is_u64());
        assert_eq!(v["n"], rmpv::Value::from(-7));
        assert_eq!(v["score"], rmpv::Value::F64(2.5));
        assert_eq!(v["top"][0]["member"], rmpv::Value::from("a"));
        // Not an object, not JSON, a nested object out of order: refused,
        // `out` unchanged.
        for bad in ["[1]", "3", "{\"a\":", r#"{"a":{"z":1,"y":2}}"#, "{} x"] {
            let mut out = vec![1, 2];
            assert!(!transcode_object(bad, &mut out), "{bad}");
            assert_eq!(out, [1, 2]);
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
