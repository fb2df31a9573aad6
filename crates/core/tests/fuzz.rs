//! Fuzzing of podium-core's readers of request text: strict JSON
//! (`json::value`, `json::parse`, what every JSON body and NDJSON import
//! line goes through) and CSV records (`csv::csv_fields`). Random and
//! damaged input must give a value or an error, never a panic, a hang or an
//! allocation out of proportion to the input; rendered valid input must
//! read back to the values it was rendered from. Inputs under
//! `tests/fuzz-corpus/` are replayed on every run. More cases:
//! `PROPTEST_CASES=100000 cargo test --release -p podium-core --test fuzz`.

#[path = "fuzz_support/damage.rs"]
mod damage;
#[path = "fuzz_support/peak.rs"]
mod peak;

use proptest::prelude::*;
use serde_json::Value;

use damage::{config, corpus, damage, damaged};
use peak::bounded;
use podium_core::api::{CondIn, Only, Score, SubmitIn};
use podium_core::csv::csv_fields;
use podium_core::error::Code;
use podium_core::json;

// --- JSON --------------------------------------------------------------------

/// Reads `bytes` strictly and as a typed entry; a value it accepts is the
/// value serde_json reads (the strict reader only refuses more).
#[track_caller]
fn check_json(bytes: &[u8]) -> Option<Value> {
    let got = bounded(bytes.len(), || json::value(bytes, "malformed JSON body"));
    bounded(bytes.len(), || {
        let _ = json::parse::<SubmitIn>(bytes, "malformed JSON");
        let _ = json::parse::<Vec<SubmitIn>>(bytes, "malformed JSON");
    });
    match got {
        Ok(v) => {
            let reference: Value = serde_json::from_slice(bytes).expect("serde_json refuses it");
            assert_eq!(v, reference);
            Some(v)
        }
        Err(e) => {
            assert!(
                matches!(e.code, Code::MalformedRequest | Code::InvalidScore),
                "{e:?}"
            );
            assert!(!e.message.is_empty());
            None
        }
    }
}

/// Doubles whose shortest decimal text reads back exactly.
fn nice_f64() -> impl Strategy<Value = f64> {
    any::<i32>().prop_map(|n| f64::from(n) / 1024.0)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        nice_f64().prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        "[a-z\"\\\\/\u{0}-\u{1f}é😀]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(Value::from),
            prop::collection::btree_map(".{0,6}", inner, 0..12)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\"score\"",
            "\"member\"",
            "\"a\"",
            "\\",
            "\\u",
            "\\ud800",
            "0",
            "-",
            "1e400",
            "-1e999",
            "1.5",
            "1e-400",
            "18446744073709551616",
            "true",
            "null",
            " ",
            "\n",
            "\r\n",
            "é",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 1..3),
    ];
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat())
}

fn entry() -> impl Strategy<Value = SubmitIn> {
    let score = prop_oneof![
        nice_f64(),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
    ];
    let data = prop::collection::btree_map("[a-z]{1,4}", json_value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    (
        ".{0,16}",
        score,
        prop::option::of(prop::sample::select(vec!["set", "best", "incr"])),
        prop::option::of(prop::sample::select(vec![Only::New, Only::Existing])),
        prop::option::of(prop::sample::select(vec![CondIn::Gt, CondIn::Lt])),
        prop::option::of(".{0,8}"),
        prop::option::of(data),
    )
        .prop_map(|(member, score, op, only, cond, name, data)| SubmitIn {
            scores: None,
            member,
            score: Score(score),
            op: op.map(str::to_string),
            only,
            cond,
            name,
            data,
        })
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn fuzz_json_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_json(&bytes);
    }

    #[test]
    fn fuzz_json_token_soup(bytes in json_soup()) {
        check_json(&bytes);
    }

    #[test]
    fn fuzz_json_damaged_values(
        v in json_value(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        check_json(&damaged(v.to_string().into_bytes(), &damages));
    }

    #[test]
    fn fuzz_json_damaged_entries(
        entries in prop::collection::vec(entry(), 1..4),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        check_json(&damaged(serde_json::to_vec(&entries).unwrap(), &damages));
    }

    #[test]
    fn fuzz_json_values_round_trip(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_vec_pretty(&v).unwrap()
        } else {
            serde_json::to_vec(&v).unwrap()
        };
        prop_assert_eq!(check_json(&text), Some(v));
    }

    #[test]
    fn fuzz_json_entries_round_trip(entries in prop::collection::vec(entry(), 0..4)) {
        let text = serde_json::to_vec(&entries).unwrap();
        let back: Vec<SubmitIn> = json::parse(&text, "malformed JSON body").unwrap();
        prop_assert_eq!(back, entries);
    }
}

#[test]
fn fuzz_json_deep_nesting_is_refused_without_overflow() {
    for depth in [127, 128, 129, 10_000, 1_000_000] {
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
            check_json(text.as_bytes());
            check_json(open.repeat(depth).as_bytes());
        }
    }
}

#[test]
fn fuzz_json_corpus_replays() {
    for (path, input) in corpus("json") {
        let _ = &path;
        check_json(&input);
    }
}

// --- CSV ---------------------------------------------------------------------

/// A field as a CSV writer quotes it: always, or only when it must.
fn render_field(f: &str, always_quote: bool) -> String {
    if always_quote || f.contains(['"', ',', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

#[track_caller]
fn check_csv(s: &str) -> Option<Vec<String>> {
    let got = bounded(s.len(), || csv_fields(s));
    if let Ok(f) = &got {
        assert!(!f.is_empty(), "a record has a field at least");
    }
    got.ok()
}

fn csv_soup() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "\"", "\"\"", ",", "a", "1", "\n", "\r\n", " ", "é", "\u{feff}", "\0",
    ]);
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

fn fields() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z\",\n\r é]{0,10}", 1..6)
}

proptest! {
    #![proptest_config(config(2048))]

    #[test]
    fn fuzz_csv_random_text(s in ".{0,128}") {
        check_csv(&s);
    }

    #[test]
    fn fuzz_csv_token_soup(s in csv_soup()) {
        check_csv(&s);
    }

    #[test]
    fn fuzz_csv_damaged_records(
        f in fields(),
        quote in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let line: Vec<String> = f.iter().map(|x| render_field(x, quote)).collect();
        let bytes = damaged(line.join(",").into_bytes(), &damages);
        check_csv(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn fuzz_csv_round_trip(f in fields(), quote in any::<bool>()) {
        let line: Vec<String> = f.iter().map(|x| render_field(x, quote)).collect();
        prop_assert_eq!(check_csv(&line.join(",")), Some(f));
    }
}

#[test]
fn fuzz_csv_corpus_replays() {
    for (path, input) in corpus("csv") {
        let _ = &path;
        check_csv(&String::from_utf8_lossy(&input));
    }
}
