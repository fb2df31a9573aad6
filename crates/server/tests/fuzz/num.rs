//! Numbers in RESP arguments (`resp::num`): integers, scores and score
//! range ends.

use std::ops::Bound;

use proptest::prelude::*;

use crate::bounded;
use crate::damage::{config, corpus};
use podium_server::resp::num::{parse_bound, parse_double, parse_i64};

fn all(s: &[u8]) {
    bounded(s.len(), || {
        let _ = parse_i64(s);
        if let Some(v) = parse_double(s) {
            assert!(!v.is_nan());
        }
        match parse_bound(s) {
            Some(Bound::Included(v) | Bound::Excluded(v)) => assert!(!v.is_nan()),
            Some(Bound::Unbounded) | None => {}
        }
    });
}

fn number_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(vec![
        &b"("[..],
        b"-",
        b"+",
        b"0",
        b"1",
        b"9",
        b".",
        b"e",
        b"E",
        b"x",
        b"0x",
        b"p",
        b"inf",
        b"nan",
        b"infinity",
        b" ",
        b"\0",
        b"99999999999999999999",
        b"1e400",
        b"\xff",
    ]);
    prop::collection::vec(token, 0..24).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(config(2048))]

    #[test]
    fn fuzz_num_random_bytes(s in prop::collection::vec(any::<u8>(), 0..64)) {
        all(&s);
    }

    #[test]
    fn fuzz_num_token_soup(s in number_soup()) {
        all(&s);
    }

    #[test]
    fn fuzz_num_integers_round_trip(n in any::<i64>()) {
        prop_assert_eq!(parse_i64(n.to_string().as_bytes()), Some(n));
    }

    #[test]
    fn fuzz_num_scores_round_trip(v in any::<f64>().prop_filter("not NaN", |f| !f.is_nan())) {
        // `{:?}` writes the shortest text that reads back to the same
        // double; infinities as Redis spells them.
        let text = if v.is_infinite() {
            if v > 0.0 { "+inf".to_string() } else { "-inf".to_string() }
        } else {
            format!("{v:?}")
        };
        let got = parse_double(text.as_bytes());
        prop_assert_eq!(got.map(f64::to_bits), Some(v.to_bits()), "{}", text);
        prop_assert_eq!(parse_bound(text.as_bytes()), Some(Bound::Included(v)));
        let excl = format!("({text}");
        prop_assert_eq!(parse_bound(excl.as_bytes()), Some(Bound::Excluded(v)));
    }
}

#[test]
fn fuzz_num_corpus_replays() {
    for (path, input) in corpus("num") {
        let _ = &path;
        all(&input);
    }
}
