//! Reads, ranges, counts, odd member ids, merge, intersect and reset.

use super::*;

#[test]
fn reads_top_member_rank_percentile_around_ranks() {
    let s = Server::start(&[]);
    seed(&s, "r", &TEN);

    // top: pages, totals, past the end.
    let v = s
        .get(&board_path("r", "/top?page=1&page_size=3"))
        .expect(200);
    assert_eq!(v["board"], "r");
    assert_eq!(v["ranking"], "unique");
    assert_eq!(
        (v["page"].as_u64(), v["page_size"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(
        (v["total"].as_u64(), v["total_pages"].as_u64()),
        (Some(10), Some(4))
    );
    assert_eq!(
        triples(&v),
        vec![
            ("a".into(), 100.0, 1),
            ("b".into(), 90.0, 2),
            ("c".into(), 80.0, 3)
        ]
    );
    let v = s
        .get(&board_path("r", "/top?page=2&page_size=3"))
        .expect(200);
    assert_eq!(members(&v), strs(&["d", "e", "f"]));
    let v = s
        .get(&board_path("r", "/top?page=4&page_size=3"))
        .expect(200);
    assert_eq!(triples(&v), vec![("j".into(), 10.0, 10)]);
    let v = s
        .get(&board_path("r", "/top?page=5&page_size=3"))
        .expect(200);
    assert_eq!(members(&v), Vec::<String>::new());
    assert_eq!(v["total"], 10);
    let v = s.get(&board_path("r", "/top")).expect(200);
    assert_eq!(
        (v["page_size"].as_u64(), v["total_pages"].as_u64()),
        (Some(25), Some(1))
    );
    assert_eq!(members(&v).len(), 10);
    s.get(&board_path("r", "/top?page=0"))
        .expect_error(400, "invalid_argument");
    s.get(&board_path("r", "/top?page_size=0"))
        .expect_error(400, "invalid_argument");
    let r = s.get(&board_path("r", "/top?page=abc"));
    assert_eq!(r.status, 400, "{}", r.text);

    // entry
    let e = s.get(&board_path("r", "/members/e")).expect(200);
    assert_eq!(e["member"], "e");
    assert_eq!(e["rank"], 5);
    assert_eq!(e["score"], 60.0);
    assert_eq!(e["percentile"], 60.0);
    assert_eq!(e["total"], 10);
    assert_eq!(e["page"], 1);
    assert_eq!(e["ranking"], "unique");
    s.get(&board_path("r", "/members/nobody"))
        .expect_error(404, "member_not_found");

    // rank
    let v = s.get(&board_path("r", "/rank/c")).expect(200);
    assert_eq!(
        (v["rank"].as_u64(), v["score"].as_f64()),
        (Some(3), Some(80.0))
    );
    assert_eq!(v["member"], "c");
    assert_eq!(v["ranking"], "unique");
    s.get(&board_path("r", "/rank/nobody"))
        .expect_error(404, "member_not_found");

    // percentile: the share of the board not better than the member.
    for (m, p) in [("a", 100.0), ("e", 60.0), ("j", 10.0)] {
        let v = s
            .get(&board_path("r", &format!("/percentile/{m}")))
            .expect(200);
        assert_eq!(v["percentile"].as_f64(), Some(p), "percentile of {m}: {v}");
        assert_eq!(v["member"], m);
    }
    s.get(&board_path("r", "/percentile/nobody"))
        .expect_error(404, "member_not_found");

    // score_at_percentile: position clamp(floor(n + 1 − p·n/100), 1, n).
    for (p, m, sc) in [
        ("50", "f", 50.0),
        ("100", "a", 100.0),
        ("95", "a", 100.0),
        ("0", "j", 10.0),
        ("10", "j", 10.0),
        ("75", "c", 80.0),
    ] {
        let v = s
            .get(&board_path("r", &format!("/score_at_percentile?p={p}")))
            .expect(200);
        assert_eq!(v["entry"]["member"], m, "p={p}: {v}");
        assert_eq!(v["entry"]["score"].as_f64(), Some(sc), "p={p}: {v}");
    }
    s.get(&board_path("r", "/score_at_percentile?p=101"))
        .expect_error(400, "invalid_argument");
    s.put(&board_path("empty", ""), &json!({})).expect(201);
    let v = s
        .get(&board_path("empty", "/score_at_percentile?p=50"))
        .expect(200);
    assert_eq!(v["entry"], Value::Null);

    // around: centred, clipped at both ends.
    let v = s.get(&board_path("r", "/around/e?page_size=5")).expect(200);
    assert_eq!(
        (v["rank"].as_u64(), v["total"].as_u64()),
        (Some(5), Some(10))
    );
    assert_eq!(v["member"], "e");
    assert_eq!(
        triples(&v),
        vec![
            ("c".into(), 80.0, 3),
            ("d".into(), 70.0, 4),
            ("e".into(), 60.0, 5),
            ("f".into(), 50.0, 6),
            ("g".into(), 40.0, 7)
        ]
    );
    let v = s.get(&board_path("r", "/around/b?page_size=5")).expect(200);
    assert_eq!(members(&v), strs(&["a", "b", "c", "d", "e"]));
    let v = s.get(&board_path("r", "/around/j?page_size=5")).expect(200);
    let got = members(&v);
    assert!(
        got.last().map(String::as_str) == Some("j") && got.len() >= 3 && got.len() <= 5,
        "around the last member: {got:?}"
    );
    let ranks: Vec<u64> = triples(&v).iter().map(|t| t.2).collect();
    assert!(ranks.windows(2).all(|w| w[1] == w[0] + 1), "{ranks:?}");
    s.get(&board_path("r", "/around/nobody"))
        .expect_error(404, "member_not_found");

    // ranks: found ones best first, missing ones apart, duplicates once.
    let v = s
        .post(
            &board_path("r", "/ranks"),
            &json!({"members": ["e", "zz", "a", "c", "a", "yy"]}),
        )
        .expect(200);
    assert_eq!(
        triples(&v),
        vec![
            ("a".into(), 100.0, 1),
            ("c".into(), 80.0, 3),
            ("e".into(), 60.0, 5)
        ]
    );
    assert_eq!(v["missing"], json!(["yy", "zz"]));
    assert_eq!(v["ranking"], "unique");

    // Reads of a board that does not exist.
    for p in [
        "/top",
        "/members/a",
        "/rank/a",
        "/percentile/a",
        "/around/a",
        "/score_at_percentile?p=5",
        "/count",
        "/range/rank?start=1&count=2",
        "/export",
    ] {
        s.get(&board_path("ghost", p))
            .expect_error(404, "board_not_found");
    }
    s.post(&board_path("ghost", "/ranks"), &json!({"members": ["a"]}))
        .expect_error(404, "board_not_found");
}

#[test]
fn ranges_counts_and_range_removal() {
    let s = Server::start(&[]);
    seed(&s, "g", &TEN);
    let count = |q: &[(&str, &str)]| {
        get_q(&s, &board_path("g", "/count"), q).expect(200)["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(count(&[]), 10);
    assert_eq!(count(&[("min", "30"), ("max", "60")]), 4);
    assert_eq!(count(&[("min", "(30"), ("max", "(60")]), 2);
    assert_eq!(count(&[("min", "(30"), ("max", "60")]), 3);
    assert_eq!(count(&[("min", "-inf"), ("max", "+inf")]), 10);
    assert_eq!(count(&[("min", "(100")]), 0);
    assert_eq!(count(&[("max", "(10")]), 0);
    assert_eq!(count(&[("max", "10")]), 1);
    assert_eq!(count(&[("min", "55.5"), ("max", "inf")]), 5);
    let r = get_q(&s, &board_path("g", "/count"), &[("min", "abc")]);
    assert_eq!(r.status, 400, "{}", r.text);

    let range = |by: &str, q: &[(&str, &str)]| {
        get_q(&s, &board_path("g", &format!("/range/{by}")), q).expect(200)
    };
    // By rank, best first and from the worst end.
    let v = range("rank", &[("start", "2"), ("count", "3")]);
    assert_eq!(v["total"], 10);
    assert_eq!(
        triples(&v),
        vec![
            ("b".into(), 90.0, 2),
            ("c".into(), 80.0, 3),
            ("d".into(), 70.0, 4)
        ]
    );
    let v = range("rank", &[("start", "1"), ("count", "3"), ("from", "worst")]);
    assert_eq!(
        triples(&v),
        vec![
            ("j".into(), 10.0, 10),
            ("i".into(), 20.0, 9),
            ("h".into(), 30.0, 8)
        ]
    );
    let v = range("rank", &[("start", "9"), ("count", "42")]);
    assert_eq!(members(&v), strs(&["i", "j"]));
    let v = range("rank", &[("start", "11"), ("count", "10")]);
    assert_eq!(members(&v), Vec::<String>::new());
    get_q(
        &s,
        &board_path("g", "/range/rank"),
        &[("start", "0"), ("count", "4")],
    )
    .expect_error(400, "invalid_argument");
    get_q(
        &s,
        &board_path("g", "/range/rank"),
        &[("start", "5"), ("count", "0")],
    )
    .expect_error(400, "invalid_argument");

    // By score: Redis-style bounds, offset/limit, from the worst end.
    let v = range("score", &[("min", "30"), ("max", "60")]);
    assert_eq!(members(&v), strs(&["e", "f", "g", "h"]));
    let v = range("score", &[("min", "(30"), ("max", "(60")]);
    assert_eq!(
        triples(&v),
        vec![("f".into(), 50.0, 6), ("g".into(), 40.0, 7)]
    );
    let v = range("score", &[("min", "-inf"), ("max", "+inf")]);
    assert_eq!(members(&v).len(), 10);
    let v = range(
        "score",
        &[
            ("min", "-inf"),
            ("max", "+inf"),
            ("offset", "1"),
            ("limit", "2"),
        ],
    );
    assert_eq!(members(&v), strs(&["b", "c"]));
    let v = range(
        "score",
        &[
            ("min", "(20"),
            ("max", "90"),
            ("offset", "2"),
            ("limit", "3"),
        ],
    );
    assert_eq!(members(&v), strs(&["d", "e", "f"]));
    let v = range(
        "score",
        &[
            ("min", "(20"),
            ("max", "90"),
            ("from", "worst"),
            ("limit", "2"),
        ],
    );
    assert_eq!(
        triples(&v),
        vec![("h".into(), 30.0, 8), ("g".into(), 40.0, 7)]
    );
    let v = range("score", &[("min", "(100"), ("max", "+inf")]);
    assert_eq!(members(&v), Vec::<String>::new());
    let r = get_q(
        &s,
        &board_path("g", "/range/rank"),
        &[("start", "1"), ("stop", "2")],
    );
    assert_eq!(r.status, 400, "{}", r.text);

    // DELETE range by rank, then by score (exclusive max).
    let v = delete_q(
        &s,
        &board_path("g", "/range/rank"),
        &[("start", "1"), ("count", "2")],
    )
    .expect(200);
    assert_eq!(v["removed"], 2);
    let v = delete_q(
        &s,
        &board_path("g", "/range/score"),
        &[("min", "-inf"), ("max", "(30")],
    )
    .expect(200);
    assert_eq!(v["removed"], 2);
    let v = s.get(&board_path("g", "/top")).expect(200);
    assert_eq!(members(&v), strs(&["c", "d", "e", "f", "g", "h"]));
    assert_eq!(v["total"], 6);
    let v = delete_q(
        &s,
        &board_path("g", "/range/score"),
        &[("min", "(60"), ("max", "+inf")],
    )
    .expect(200);
    assert_eq!(v["removed"], 2);
    let v = s.get(&board_path("g", "/top")).expect(200);
    assert_eq!(
        triples(&v),
        vec![
            ("e".into(), 60.0, 1),
            ("f".into(), 50.0, 2),
            ("g".into(), 40.0, 3),
            ("h".into(), 30.0, 4)
        ]
    );

    // remove (POST) and DELETE member.
    let v = s
        .post(
            &board_path("g", "/remove"),
            &json!({"members": ["f", "nope"]}),
        )
        .expect(200);
    assert_eq!(v["removed"], 1);
    let r = s.delete(&board_path("g", "/members/h"));
    assert_eq!(r.status, 200, "{}", r.text);
    s.get(&board_path("g", "/members/h"))
        .expect_error(404, "member_not_found");
    let v = s.get(&board_path("g", "/top")).expect(200);
    assert_eq!(members(&v), strs(&["e", "g"]));
    assert_eq!(v["total"], 2);
    delete_q(
        &s,
        &board_path("ghost", "/range/rank"),
        &[("start", "1"), ("count", "2")],
    )
    .expect_error(404, "board_not_found");
}

#[test]
fn member_ids_with_slashes_spaces_and_unicode() {
    let s = Server::start(&[]);
    let ids = [
        "a/b",
        "../etc/passwd",
        "two words",
        "ünïcødé 🏆",
        "percent%20sign",
        "q?x=1&y#frag",
        "plus+sign",
        "dot.",
    ];
    let entries: Vec<(&str, f64)> = ids
        .iter()
        .enumerate()
        .map(|(i, m)| (*m, (i + 1) as f64))
        .collect();
    seed(&s, "odd/board name ✓", &entries);
    let b = "odd/board name ✓";
    let n = ids.len() as u64;
    for (i, m) in ids.iter().enumerate() {
        let rank = n - i as u64;
        let e = s
            .get(&board_path(b, &format!("/members/{}", enc(m))))
            .expect(200);
        assert_eq!(e["member"], *m);
        assert_eq!(e["rank"].as_u64(), Some(rank), "{m}: {e}");
        assert_eq!(e["board"], b);
        let v = s
            .get(&board_path(b, &format!("/rank/{}", enc(m))))
            .expect(200);
        assert_eq!(v["rank"].as_u64(), Some(rank));
        let v = s
            .get(&board_path(b, &format!("/around/{}?page_size=1", enc(m))))
            .expect(200);
        assert_eq!(members(&v), strs(&[m]));
        let v = s
            .get(&board_path(b, &format!("/percentile/{}", enc(m))))
            .expect(200);
        assert_eq!(v["member"], *m);
    }
    let list = s.get("/v1/boards").expect(200);
    assert_eq!(list["boards"][0]["board"], b);
    // PATCH and DELETE through the encoded id.
    s.patch(
        &board_path(b, &format!("/members/{}", enc("a/b"))),
        &json!({"name": "slash"}),
    )
    .expect(200);
    let e = s
        .get(&board_path(b, &format!("/members/{}", enc("a/b"))))
        .expect(200);
    assert_eq!(e["name"], "slash");
    s.delete(&board_path(b, &format!("/members/{}", enc("ünïcødé 🏆"))))
        .expect(200);
    s.get(&board_path(b, &format!("/members/{}", enc("ünïcødé 🏆"))))
        .expect_error(404, "member_not_found");
    // "a" and "b" are not members: the slash did not split the id.
    s.get(&board_path(b, "/members/a"))
        .expect_error(404, "member_not_found");
    let v = s.get(&board_path(b, "/top")).expect(200);
    assert_eq!(v["total"].as_u64(), Some(n - 1));
}

// ----------------------------------------------- merge, intersect, reset

#[test]
fn merge_and_intersect_with_weights_and_aggregates() {
    let s = Server::start(&[]);
    seed(&s, "s1", &[("x", 1.0), ("y", 2.0), ("z", 3.0)]);
    seed(&s, "s2", &[("y", 10.0), ("z", 20.0), ("w", 30.0)]);
    let scores = |b: &str| -> Vec<(String, f64)> {
        triples(&s.get(&board_path(b, "/top")).expect(200))
            .into_iter()
            .map(|(m, sc, _)| (m, sc))
            .collect()
    };

    let v = s
        .post(
            &board_path("u", "/merge"),
            &json!({"sources": ["s1", "s2"], "weights": [1, 2]}),
        )
        .expect(200);
    assert_eq!(
        (v["board"].as_str(), v["members"].as_u64()),
        (Some("u"), Some(4))
    );
    assert_eq!(
        scores("u"),
        vec![
            ("w".into(), 60.0),
            ("z".into(), 43.0),
            ("y".into(), 22.0),
            ("x".into(), 1.0)
        ]
    );
    let v = s
        .post(
            &board_path("umax", "/merge"),
            &json!({"sources": ["s1", "s2"], "aggregate": "max"}),
        )
        .expect(200);
    assert_eq!(v["members"], 4);
    assert_eq!(
        scores("umax"),
        vec![
            ("w".into(), 30.0),
            ("z".into(), 20.0),
            ("y".into(), 10.0),
            ("x".into(), 1.0)
        ]
    );

    let v = s
        .post(
            &board_path("imin", "/intersect"),
            &json!({"sources": ["s1", "s2"], "aggregate": "min"}),
        )
        .expect(200);
    assert_eq!(v["members"], 2);
    assert_eq!(scores("imin"), vec![("z".into(), 3.0), ("y".into(), 2.0)]);
    let v = s
        .post(
            &board_path("isum", "/intersect"),
            &json!({"sources": ["s1", "s2"], "weights": [10, 0.5]}),
        )
        .expect(200);
    assert_eq!(v["members"], 2);
    assert_eq!(scores("isum"), vec![("z".into(), 40.0), ("y".into(), 25.0)]);
    let v = s
        .post(
            &board_path("imax", "/intersect"),
            &json!({"sources": ["s1", "s2"], "weights": [-1, 1], "aggregate": "max"}),
        )
        .expect(200);
    assert_eq!(scores("imax"), vec![("z".into(), 20.0), ("y".into(), 10.0)]);
    assert_eq!(v["members"], 2);

    // The sources are untouched.
    assert_eq!(scores("s1").len(), 3);
    assert_eq!(scores("s2").len(), 3);
    // Bad requests.
    s.post(
        &board_path("u", "/merge"),
        &json!({"sources": ["s1", "s2"], "weights": [1]}),
    )
    .expect_error(400, "invalid_argument");
    s.post(
        &board_path("u", "/merge"),
        &json!({"sources": ["s1"], "aggregate": "avg"}),
    )
    .expect_error(400, "invalid_argument");
    s.post(&board_path("u", "/merge"), &json!({"sources": []}))
        .expect_error(400, "invalid_argument");
}

#[test]
fn reset_archives_the_board_read_only() {
    let s = Server::start(&[]);
    seed(&s, "season", &[("p", 3.0), ("q", 2.0), ("r", 1.0)]);
    let v = s
        .post(&board_path("season", "/reset"), &json!({}))
        .expect(200);
    assert_eq!(v["board"], "season");
    assert_eq!(v["archived"], 3);
    let archive = v["archive"].as_str().unwrap().to_string();
    assert!(archive.starts_with("season@"), "{archive}");

    let live = s.get(&board_path("season", "/top")).expect(200);
    assert_eq!(live["total"], 0);
    let a = s.get(&board_path(&archive, "")).expect(200);
    assert_eq!(
        (a["read_only"].as_bool(), a["members"].as_u64()),
        (Some(true), Some(3))
    );
    let top = s.get(&board_path(&archive, "/top")).expect(200);
    assert_eq!(members(&top), strs(&["p", "q", "r"]));
    let list = s.get("/v1/boards").expect(200);
    let names: Vec<&str> = list["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["board"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&archive.as_str()) && names.contains(&"season"),
        "{names:?}"
    );

    // The archive refuses writes; the live board takes them.
    s.post(
        &board_path(&archive, "/scores"),
        &json!({"member": "p", "score": 9}),
    )
    .expect_error(409, "read_only");
    s.post(&board_path(&archive, "/remove"), &json!({"members": ["p"]}))
        .expect_error(409, "read_only");
    s.post(
        &board_path("season", "/scores"),
        &json!({"member": "new", "score": 1}),
    )
    .expect(200);
    assert_eq!(s.get(&board_path(&archive, "")).expect(200)["members"], 3);
    s.post(&board_path("ghost", "/reset"), &json!({}))
        .expect_error(404, "board_not_found");
}
