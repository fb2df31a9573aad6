//! Boards ranked by several sort keys over HTTP: the three shapes users ask
//! for (a race, a kill count with first-to-reach, exact integers beyond
//! 2^53), every read carrying `scores`, CSV and NDJSON transfer by key, a
//! change of sort re-ranking a live board, and all of it across a kill -9.

use super::*;

/// Creates (201) or reconfigures (200) a board, re-ranking it if the
/// config says so.
fn put_board(s: &Server, board: &str, mut config: Value) -> Value {
    config["confirm_rerank"] = json!(true);
    let r = s.put(&board_path(board, ""), &config);
    let status = if r.body["created"] == json!(true) {
        201
    } else {
        200
    };
    r.expect(status)
}

fn submit(s: &Server, board: &str, member: &str, scores: Value) -> Resp {
    s.post(
        &board_path(board, "/scores"),
        &json!({"member": member, "scores": scores}),
    )
}

/// `(member, scores, rank)` of `v["entries"]`, in order.
fn rows(v: &Value) -> Vec<(String, Value, u64)> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_string(),
                e["scores"].clone(),
                e["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Laps desc, time asc, `best`: 10 laps in 61 s beats 10 laps in 62 s and
/// is not replaced by it; more laps beat any time.
#[test]
fn a_race_ranks_laps_then_time_and_keeps_each_best_run() {
    let s = Server::start(&[]);
    let v = put_board(
        &s,
        "race",
        json!({"update": "best", "sort": [
            {"key": "laps", "type": "int"},
            {"key": "time_ms", "order": "asc", "type": "int"}
        ]}),
    );
    assert_eq!(v["config"]["order"], "desc", "{v}");
    assert_eq!(v["config"]["sort"][1]["order"], "asc", "{v}");
    let r = submit(&s, "race", "ann", json!({"laps": 10, "time_ms": 61_000})).expect(200);
    assert_eq!(r["scores"], json!({"laps": 10, "time_ms": 61_000}), "{r}");
    assert_eq!(r["score"], json!(10.0), "the first key is the score: {r}");
    submit(&s, "race", "bob", json!({"laps": 10, "time_ms": 62_000})).expect(200);
    submit(&s, "race", "cat", json!({"laps": 11, "time_ms": 90_000})).expect(200);
    // A slower run of the same laps does not replace ann's.
    let r = submit(&s, "race", "ann", json!({"laps": 10, "time_ms": 62_000})).expect(200);
    assert_eq!(r["applied"], json!(false), "{r}");
    assert_eq!(r["scores"]["time_ms"], json!(61_000), "{r}");
    assert_eq!(r["previous_scores"]["time_ms"], json!(61_000), "{r}");
    // A faster one does.
    let r = submit(&s, "race", "bob", json!({"laps": 10, "time_ms": 60_500})).expect(200);
    assert_eq!(r["changed"], json!(true), "{r}");
    assert_eq!(r["rank"], json!(2), "{r}");
    let top = s.get(&board_path("race", "/top")).expect(200);
    assert_eq!(
        rows(&top),
        [
            ("cat".into(), json!({"laps": 11, "time_ms": 90_000}), 1),
            ("bob".into(), json!({"laps": 10, "time_ms": 60_500}), 2),
            ("ann".into(), json!({"laps": 10, "time_ms": 61_000}), 3),
        ]
    );
    // Every read carries the values: entry, around, ranks, range.
    let e = s.get(&board_path("race", "/members/ann")).expect(200);
    assert_eq!(e["scores"], json!({"laps": 10, "time_ms": 61_000}), "{e}");
    let a = s.get(&board_path("race", "/around/bob")).expect(200);
    assert_eq!(rows(&a).len(), 3, "{a}");
    let r = s
        .post(
            &board_path("race", "/ranks"),
            &json!({"members": ["ann", "zed"]}),
        )
        .expect(200);
    assert_eq!(rows(&r)[0].1["time_ms"], json!(61_000), "{r}");
    // Ranges bound the first key.
    let r = get_q(
        &s,
        &board_path("race", "/range/score"),
        &[("min", "10"), ("max", "10")],
    )
    .expect(200);
    assert_eq!(members(&r), strs(&["bob", "ann"]));
    // Under best every key must be given, each a key of the board: a
    // submission for another board's keys conflicts with this one's.
    submit(&s, "race", "dan", json!({"laps": 3})).expect_error(409, "wrong_type");
    submit(&s, "race", "dan", json!({"lap": 3, "time_ms": 1})).expect_error(409, "wrong_type");
    submit(&s, "race", "dan", json!({"laps": 3.5, "time_ms": 1}))
        .expect_error(400, "invalid_argument");
    s.post(&board_path("race", "/scores"), &json!({"member": "dan"}))
        .expect_error(400, "malformed_request");
    // merge/intersect of boards with sort keys is refused, clearly.
    s.post(
        &board_path("race2", "/merge"),
        &json!({"sources": ["race"]}),
    )
    .expect_error(409, "wrong_type");
}

/// Kills desc `incr`, reached_at asc `set`: the one who reached a total
/// first ranks higher; a key left out of an increment is kept.
#[test]
fn a_kill_count_breaks_ties_by_who_reached_it_first() {
    let s = Server::start(&[]);
    put_board(
        &s,
        "kills",
        json!({"update": "incr", "ranking": "competition", "sort": [
            {"key": "kills", "type": "int", "op": "incr"},
            {"key": "reached_at", "order": "asc", "type": "int", "op": "set"}
        ]}),
    );
    submit(&s, "kills", "ann", json!({"kills": 2, "reached_at": 100})).expect(200);
    submit(&s, "kills", "bob", json!({"kills": 3, "reached_at": 110})).expect(200);
    submit(&s, "kills", "ann", json!({"kills": 1, "reached_at": 120})).expect(200);
    // Both at 3: bob reached it at 110, ann at 120.
    let top = s.get(&board_path("kills", "/top")).expect(200);
    assert_eq!(members(&top), strs(&["bob", "ann"]));
    // A key left out of an incr stays; a 0 increment changes nothing else.
    let r = submit(&s, "kills", "ann", json!({"kills": 0})).expect(200);
    assert_eq!(r["scores"], json!({"kills": 3, "reached_at": 120}), "{r}");
    // Equal tuples tie in competition ranking.
    submit(&s, "kills", "cat", json!({"kills": 3, "reached_at": 120})).expect(200);
    let top = s.get(&board_path("kills", "/top")).expect(200);
    let ranks: Vec<u64> = rows(&top).iter().map(|r| r.2).collect();
    assert_eq!(ranks, [1, 2, 2], "{top}");
    let p = s.get(&board_path("kills", "/percentile/bob")).expect(200);
    assert_eq!(p["percentile"], json!(100.0), "{p}");
}

/// Integers beyond 2^53 that differ by 1 rank apart, read back exactly
/// (as strings in JSON, which a JSON reader would otherwise round).
#[test]
fn int64_values_beyond_two_to_the_53_rank_exactly() {
    let s = Server::start(&[]);
    put_board(&s, "xp", json!({"sort": [{"key": "xp", "type": "int"}]}));
    let big = (1i64 << 53) + 1; // 9007199254740993: no double holds it
    submit(&s, "xp", "a", json!({"xp": big.to_string()})).expect(200);
    submit(&s, "xp", "b", json!({"xp": (big - 1).to_string()})).expect(200);
    submit(&s, "xp", "c", json!({"xp": i64::MAX.to_string()})).expect(200);
    submit(&s, "xp", "d", json!({"xp": (1i64 << 40)})).expect(200);
    let top = s.get(&board_path("xp", "/top")).expect(200);
    assert_eq!(
        rows(&top),
        [
            ("c".into(), json!({"xp": i64::MAX.to_string()}), 1),
            ("a".into(), json!({"xp": big.to_string()}), 2),
            ("b".into(), json!({"xp": (big - 1).to_string()}), 3),
            ("d".into(), json!({"xp": 1i64 << 40}), 4),
        ]
    );
    // Integer bounds are exact: 2^53 + 1 alone, not the 2^53 beside it.
    let b = big.to_string();
    let c = get_q(&s, &board_path("xp", "/count"), &[("min", &b), ("max", &b)]).expect(200);
    assert_eq!(c["count"], json!(1), "{c}");
    let r = get_q(
        &s,
        &board_path("xp", "/range/score"),
        &[("min", &format!("({}", big - 1)), ("max", "+inf")],
    )
    .expect(200);
    assert_eq!(members(&r), strs(&["c", "a"]));
    // An increment past i64 is refused, the value kept.
    s.post(
        &board_path("xp", "/scores"),
        &json!({"member": "c", "scores": {"xp": 1}, "op": "incr"}),
    )
    .expect_error(400, "invalid_argument");
    let e = s.get(&board_path("xp", "/members/c")).expect(200);
    assert_eq!(e["scores"]["xp"], json!(i64::MAX.to_string()), "{e}");
    // An exact removal is logged exactly: the restart removes the same.
    let r = delete_q(
        &s,
        &board_path("xp", "/range/score"),
        &[("min", &b), ("max", &b)],
    )
    .expect(200);
    assert_eq!(r["removed"], json!(1), "{r}");
    let mut s = s;
    s.kill9();
    s.restart();
    let top = s.get(&board_path("xp", "/top")).expect(200);
    assert_eq!(members(&top), strs(&["c", "b", "d"]));
}

/// NDJSON export/import carries `scores`; a CSV whose header names the
/// keys imports one column per key; a change of sort re-ranks the live
/// board from its values; everything survives kill -9 and a restart.
#[test]
fn transfer_resort_and_a_crash_keep_every_key() {
    let mut s = Server::start(&[]);
    let cfg = json!({"update": "set", "sort": [
        {"key": "wins", "type": "int"},
        {"key": "elo", "type": "float"}
    ]});
    put_board(&s, "ladder", cfg.clone());
    let csv = "member,wins,elo,name\nann,3,1500.5,Ann\nbob,3,1600,\ncat,5,1400,Cat\n";
    let v = s
        .post_raw(&board_path("ladder", "/import?format=csv"), "text/csv", csv)
        .expect(200);
    assert_eq!(v["imported"], json!(3), "{v}");
    let top = s.get(&board_path("ladder", "/top")).expect(200);
    assert_eq!(members(&top), strs(&["cat", "bob", "ann"]));
    let export = s.get(&board_path("ladder", "/export")).text;
    assert!(
        export.contains(r#""scores":{"wins":3,"elo":1500.5}"#),
        "{export}"
    );
    put_board(&s, "copy", cfg);
    let v = s
        .post_raw(
            &board_path("copy", "/import"),
            "application/x-ndjson",
            export.clone(),
        )
        .expect(200);
    assert_eq!(v["imported"], json!(3), "{v}");
    let copy = s.get(&board_path("copy", "/top")).expect(200);
    assert_eq!(rows(&copy), rows(&top));
    // Flip elo's direction: re-ranked from the stored values, no data lost.
    let v = put_board(
        &s,
        "ladder",
        json!({"update": "set", "sort": [
            {"key": "wins", "type": "int"},
            {"key": "elo", "type": "float", "order": "asc"}
        ]}),
    );
    assert_eq!(v["members"], json!(3), "{v}");
    let top = s.get(&board_path("ladder", "/top")).expect(200);
    assert_eq!(members(&top), strs(&["cat", "ann", "bob"]));
    // A value an int key cannot hold refuses the change, board unchanged:
    // the stored values conflict with it.
    s.put(
        &board_path("ladder", ""),
        &json!({"sort": [{"key": "wins", "type": "int"}, {"key": "elo", "type": "int"}],
            "confirm_rerank": true}),
    )
    .expect_error(409, "wrong_type");
    let before = s.get(&board_path("ladder", "/top")).expect(200);
    let st = s.get(&board_path("ladder", "/resort")).expect(200);
    assert_eq!(
        st,
        json!({"board": "ladder", "running": false, "done": 0, "total": 0})
    );
    s.kill9();
    s.restart();
    assert_eq!(s.get(&board_path("ladder", "/top")).expect(200), before);
    assert_eq!(s.get(&board_path("copy", "/top")).expect(200), copy);
    let info = s.get(&board_path("ladder", "")).expect(200);
    assert_eq!(info["config"]["sort"][1]["order"], "asc", "{info}");
}

/// A search answers the values of every key, and a reset archives them
/// with the board's sort.
#[test]
fn search_and_reset_archives_carry_every_key() {
    let s = Server::start(&[]);
    put_board(
        &s,
        "cup",
        json!({"sort": [{"key": "pts", "type": "int"}, {"key": "gd", "type": "int"}]}),
    );
    for (m, name, pts, gd) in [
        ("a", "Alice Red", 9, 4),
        ("b", "Alina Blue", 9, 6),
        ("c", "Bob", 3, 0),
    ] {
        s.post(
            &board_path("cup", "/scores"),
            &json!({"member": m, "name": name, "scores": {"pts": pts, "gd": gd}}),
        )
        .expect(200);
    }
    // The first search builds the index, the second reads it in place.
    for _ in 0..2 {
        let r = get_q(&s, &board_path("cup", "/search"), &[("q", "ali")]).expect(200);
        assert_eq!(
            rows(&r),
            [
                ("b".into(), json!({"pts": 9, "gd": 6}), 1),
                ("a".into(), json!({"pts": 9, "gd": 4}), 2),
            ]
        );
    }
    let r = s.post(&board_path("cup", "/reset"), &json!({})).expect(200);
    let archive = r["archive"].as_str().unwrap().to_string();
    let top = s.get(&board_path(&archive, "/top")).expect(200);
    assert_eq!(rows(&top)[0], ("b".into(), json!({"pts": 9, "gd": 6}), 1));
    let info = s.get(&board_path(&archive, "")).expect(200);
    assert_eq!(info["config"]["sort"][1]["key"], "gd", "{info}");
    assert_eq!(
        s.get(&board_path("cup", "")).expect(200)["members"],
        json!(0)
    );
}
