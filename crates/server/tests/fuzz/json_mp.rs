//! A member's stored `data` (JSON text from disk or a client) written as
//! MessagePack (`podium_core::msgpack::json::transcode`).

use proptest::prelude::*;
use serde_json::Value;

use crate::bounded;
use crate::damage::{config, corpus, damage, damaged};
use podium_core::msgpack::json::transcode;

/// What the general path writes for the same text: `rmp_serde` of the
/// parsed `Value`, the bytes `transcode` promises.
fn via_value(json: &str) -> Option<Vec<u8>> {
    let v: Value = serde_json::from_str(json).ok()?;
    let mut b = Vec::new();
    rmp_serde::encode::write_named(&mut b, &v).unwrap();
    Some(b)
}

#[track_caller]
fn check(json: &str) -> bool {
    let mut out = b"prefix".to_vec();
    let ok = bounded(json.len(), || transcode(json, &mut out));
    if ok {
        let want = via_value(json).expect("transcode accepted text that is not JSON");
        assert_eq!(&out[6..], &want[..], "{json:?}");
    } else {
        assert_eq!(out, b"prefix", "a refusal left bytes behind");
    }
    ok
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        "[a-z\"\\\\/\u{0}-\u{1f}é😀]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..20).prop_map(Value::from),
            prop::collection::btree_map(".{0,6}", inner, 0..20)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON's tokens, so random text is often nearly JSON.
fn json_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\"a\"",
        "\"b\"",
        "\\",
        "\\u",
        "\\ud800",
        "0",
        "-",
        "1e999",
        "1.5",
        "-0",
        "18446744073709551616",
        "true",
        "null",
        " ",
        "\n",
        "é",
        "😀",
    ]);
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_json_mp_random_text(json in ".{0,256}") {
        check(&json);
    }

    #[test]
    fn fuzz_json_mp_token_soup(json in json_soup()) {
        check(&json);
    }

    #[test]
    fn fuzz_json_mp_damaged_text(v in json_value(), damages in prop::collection::vec(damage(), 1..4)) {
        let bytes = damaged(v.to_string().into_bytes(), &damages);
        // The transcoder takes text: damage that broke UTF-8 is mended
        // lossily, which damages it further.
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn fuzz_json_mp_round_trip(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            v.to_string()
        };
        // Keys come sorted (a `Value`'s are), so the text is taken.
        prop_assert!(check(&text), "{}", text);
    }
}

#[test]
fn fuzz_json_mp_deep_nesting_is_refused_without_overflow() {
    for depth in [63, 64, 65, 127, 128, 129, 10_000, 100_000] {
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            check(&text);
        }
    }
}

#[test]
fn fuzz_json_mp_corpus_replays() {
    for (path, input) in corpus("json_mp") {
        let _ = (&path, check(&String::from_utf8_lossy(&input)));
    }
}
