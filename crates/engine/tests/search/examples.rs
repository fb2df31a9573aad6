//! Examples by hand: documented behaviours checked on small boards.

use super::*;

// ======================================================= examples, by hand

fn board_with(names: &[(&str, f64, Option<&str>, Option<&str>)], fields: &[&str]) -> Board {
    let mut b = Board::new(BoardConfig {
        search_fields: fields.iter().map(|s| s.to_string()).collect(),
        ..BoardConfig::default()
    })
    .unwrap();
    for &(m, s, name, data) in names {
        b.submit(&Submit {
            name,
            data,
            ..Submit::new(m.as_bytes(), s)
        })
        .unwrap();
    }
    b.enable_search().unwrap();
    b
}

fn hits(b: &Board, q: &str) -> Vec<String> {
    b.search(q, &SearchOptions::default())
        .unwrap()
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.member).into_owned())
        .collect()
}

#[test]
fn the_documented_examples_hold() {
    let b = board_with(
        &[
            (
                "p1",
                10.0,
                Some("José Álvarez"),
                Some(r#"{"team":"Red Sox"}"#),
            ),
            ("p2", 30.0, Some("Alice Al"), Some(r#"{"team":"blue"}"#)),
            ("p3", 20.0, Some("Al"), Some(r#"{"team":"red","lvl":3}"#)),
            ("p4", 5.0, None, Some(r#"{"team":7}"#)),
            ("jean-luc", 1.0, None, None),
        ],
        &["name", "team"],
    );
    // Prefix on the last word, diacritics and case folded, best first.
    assert_eq!(hits(&b, "al"), ["p2", "p3", "p1"]);
    assert_eq!(hits(&b, "JOSE"), ["p1"]);
    // Non-last words are exact; `*` makes them prefixes.
    assert_eq!(hits(&b, "al a"), ["p2"]);
    assert_eq!(hits(&b, "alv j"), Vec::<String>::new());
    assert_eq!(hits(&b, "alv* j"), ["p1"]);
    // Distinct words: `al al` needs two words, exact "al" and prefix "al".
    assert_eq!(hits(&b, "al al"), ["p2"]);
    assert_eq!(hits(&b, "\"al\""), ["p2", "p3"]);
    // Fields.
    assert_eq!(hits(&b, "team:red"), ["p3", "p1"]);
    assert_eq!(hits(&b, "team:\"red\" al"), ["p3", "p1"]);
    assert_eq!(hits(&b, "name:red"), Vec::<String>::new());
    assert_eq!(hits(&b, "team:7"), ["p4"]);
    // No name: the id is the name.
    assert_eq!(hits(&b, "jean-l"), ["jean-luc"]);
    assert_eq!(hits(&b, "p4"), ["p4"]);
    let page = b
        .search(
            "a",
            &SearchOptions {
                limit: 1,
                offset: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.entries.len(), 1);
    assert_eq!(
        (page.entries[0].member.as_slice(), page.entries[0].rank),
        (&b"p3"[..], 2)
    );
    // Errors.
    let e = b
        .search("colour:red", &SearchOptions::default())
        .unwrap_err();
    assert!(matches!(e, SearchError::UnknownField { .. }), "{e}");
    // A query with no word is well formed and matches nothing.
    let none = b.search(" -- ", &SearchOptions::default()).unwrap();
    assert_eq!((none.total, none.entries.len()), (0, 0));
}

#[test]
fn the_index_follows_writes_at_once() {
    let mut b = board_with(&[("p1", 1.0, Some("Ann"), None)], &["name"]);
    assert_eq!(hits(&b, "ann"), ["p1"]);
    b.set_data(b"p1", Some("Bob"), None).unwrap();
    assert!(hits(&b, "ann").is_empty());
    assert_eq!(hits(&b, "bo"), ["p1"]);
    b.submit(&Submit {
        name: Some(""),
        ..Submit::new(b"p1", 2.0)
    })
    .unwrap();
    assert_eq!(hits(&b, "p1"), ["p1"]);
    b.remove(&[b"p1"]).unwrap();
    assert!(hits(&b, "p").is_empty());
    // search_fields: [] disables search; back to ["name"] needs enabling.
    let mut c = b.config().clone();
    c.search_fields = vec![];
    b.set_config(c.clone()).unwrap();
    assert_eq!(
        b.search("x", &SearchOptions::default()).unwrap_err(),
        SearchError::Disabled
    );
    assert_eq!(b.enable_search(), Err(SearchError::Disabled));
    assert_eq!(b.search_heap_bytes(), 0);
}

#[test]
fn hostile_queries_are_answered_or_refused_fast() {
    let names: Vec<(String, f64)> = (0..2000)
        .map(|i| (format!("a{i} a a b"), i as f64))
        .collect();
    let mut b = Board::new(BoardConfig::default()).unwrap();
    for (i, (n, s)) in names.iter().enumerate() {
        b.submit(&Submit {
            name: Some(n),
            ..Submit::new(format!("m{i}").as_bytes(), *s)
        })
        .unwrap();
    }
    b.enable_search().unwrap();
    let o = SearchOptions::default();
    // 16 words: answered (every member has only 4 words: none match).
    let q16 = vec!["a"; 16].join(" ");
    assert_eq!(b.search(&q16, &o).unwrap().total, 0);
    // 17 words, a 1 KiB word, a huge query: refused.
    assert!(matches!(
        b.search(&vec!["a"; 17].join(" "), &o),
        Err(SearchError::TooManyTokens { .. })
    ));
    assert!(matches!(
        b.search(&"x".repeat(1024), &o),
        Err(SearchError::TokenTooLong { .. })
    ));
    assert!(matches!(
        b.search(&"ab ".repeat(10_000), &o),
        Err(SearchError::QueryTooLong { .. })
    ));
    // Many identical prefix words matching many words each.
    assert_eq!(b.search("a* a* a* b", &o).unwrap().total, 2000);
    assert_eq!(b.search("a* a* a", &o).unwrap().total, 2000);
    assert_eq!(b.search("a* a* a* a", &o).unwrap().total, 0);
    assert_eq!(b.search("a1* a a", &o).unwrap().total, 1111);
}

/// The bulk build (`enable_search` on a filled board) and indexing write
/// by write must agree: words repeated within a member and across fields
/// (one posting each), posting lists long enough to split into blocks, and
/// members removed and renamed after the index exists.
#[test]
fn bulk_build_agrees_with_indexing_write_by_write() {
    let cfg = BoardConfig {
        search_fields: vec!["name".into(), "team".into()],
        ..BoardConfig::default()
    };
    let mut live = Board::new(cfg.clone()).unwrap();
    live.enable_search().unwrap();
    let words = ["al", "ala", "bo", "al-al", "Ál", "bob", "a"];
    for i in 0..3000u32 {
        let name = format!(
            "{} {} {}",
            words[i as usize % 7],
            words[(i as usize / 7) % 7],
            words[(i as usize / 49) % 7]
        );
        let data = format!(r#"{{"team":"{}"}}"#, words[(i as usize / 3) % 7]);
        live.submit(&Submit {
            name: Some(&name),
            data: Some(&data),
            ..Submit::new(format!("m{i}").as_bytes(), (i % 97) as f64)
        })
        .unwrap();
    }
    for i in (0..3000u32).step_by(5) {
        live.remove(&[format!("m{i}").as_bytes()]).unwrap();
    }
    for i in (1..3000u32).step_by(11) {
        let _ = live.set_data(format!("m{i}").as_bytes(), Some("bo bo x"), None);
    }
    let mut bulk = live.clone();
    bulk.disable_search();
    bulk.enable_search().unwrap();
    // The same build with its text pass on several threads (shares of
    // the ids, one of them cut inside the removed members' gaps).
    let mut sharded = live.clone();
    sharded.enable_search_in_shares(4).unwrap();
    for b in [&live, &bulk, &sharded] {
        b.check_invariants().unwrap();
        b.check_search_invariants().unwrap();
    }
    for q in [
        "a", "al", "al al", "a* a", "a a", "a* a* a", "\"al\"", "team:al", "bo bo", "x", "bob a",
        "ál* b",
    ] {
        for plan in [Plan::Intersect, Plan::Scan, Plan::Level] {
            let o = SearchOptions {
                limit: 40,
                offset: 3,
                plan,
            };
            let want = live.search(q, &o).unwrap();
            assert_eq!(want, bulk.search(q, &o).unwrap(), "{q}");
            assert_eq!(want, sharded.search(q, &o).unwrap(), "{q}");
        }
    }
}
