//! Every error a client can provoke, and body limits.

use super::*;

/// After every error the same client (and connection pool) still works and
/// the earlier data is intact.
#[test]
fn every_error_is_a_clean_4xx_and_nothing_breaks() {
    let s = Server::start(&[]);
    seed(&s, "ok", &TEN);
    let intact = || {
        let v = s.get(&board_path("ok", "/top?page_size=100")).expect(200);
        assert_eq!(
            triples(&v),
            TEN.iter()
                .enumerate()
                .map(|(i, (m, sc))| (m.to_string(), *sc, i as u64 + 1))
                .collect::<Vec<_>>(),
            "earlier data changed"
        );
    };
    let scores = board_path("ok", "/scores");

    // NaN, in every spelling a client can send.
    for bad in [json!("nan"), json!("NaN"), json!("-nan")] {
        s.post(&scores, &json!({"member": "a", "score": bad}))
            .expect_error(400, "invalid_score");
        intact();
    }
    s.post(&scores, &json!([{"member": "zz", "score": "NaN"}]))
        .expect_error(400, "invalid_score");
    intact();
    // A NaN from incr (inf + -inf) is refused too.
    s.post(&scores, &json!({"member": "inf", "score": "inf"}))
        .expect(200);
    s.post(
        &scores,
        &json!({"member": "inf", "score": "-inf", "op": "incr"}),
    )
    .expect_error(400, "invalid_score");
    s.delete(&board_path("ok", "/members/inf")).expect(200);
    intact();
    let r = s.post_raw(&scores, "application/json", r#"{"member":"a","score":NaN}"#);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.code() == "malformed_request" || r.code() == "invalid_score",
        "{}",
        r.text
    );
    intact();

    // Out of the board's bounds.
    s.put(
        &board_path("bounded", ""),
        &json!({"min_score": 0, "max_score": 1000}),
    )
    .expect(201);
    let bp = board_path("bounded", "/scores");
    s.post(&bp, &json!({"member": "m", "score": 1000}))
        .expect(200);
    s.post(&bp, &json!({"member": "m", "score": 1000.5}))
        .expect_error(400, "invalid_score");
    s.post(&bp, &json!({"member": "m", "score": -1}))
        .expect_error(400, "invalid_score");
    s.post(&bp, &json!({"member": "m", "score": "inf"}))
        .expect_error(400, "invalid_score");
    s.post(&bp, &json!({"member": "m", "score": 1, "op": "incr"}))
        .expect_error(400, "invalid_score");
    assert_eq!(
        s.get(&board_path("bounded", "/members/m")).expect(200)["score"],
        1000.0
    );
    intact();

    // Member id over 512 bytes (512 is fine).
    let long = "x".repeat(513);
    s.post(&scores, &json!({"member": long, "score": 1}))
        .expect_error(400, "invalid_member");
    let multi = "é".repeat(257); // 514 bytes, 257 chars
    s.post(&scores, &json!({"member": multi, "score": 1}))
        .expect_error(400, "invalid_member");
    s.post(&scores, &json!({"member": "", "score": 1}))
        .expect_error(400, "invalid_member");
    intact();
    let max = "y".repeat(512);
    s.post(
        &board_path("long", "/scores"),
        &json!({"member": max, "score": 1}),
    )
    .expect(200);
    assert_eq!(
        s.get(&board_path("long", &format!("/members/{max}")))
            .expect(200)["rank"],
        1
    );

    // Board name over 200 bytes (200 is fine).
    let long_board = "b".repeat(201);
    s.post(
        &board_path(&long_board, "/scores"),
        &json!({"member": "m", "score": 1}),
    )
    .expect_error(400, "invalid_board_name");
    s.put(&board_path(&long_board, ""), &json!({}))
        .expect_error(400, "invalid_board_name");
    let r = s.get(&board_path(&long_board, "/top"));
    assert!(
        (r.status, r.code()) == (400, "invalid_board_name")
            || (r.status, r.code()) == (404, "board_not_found"),
        "{}",
        r.text
    );
    let ok_board = "b".repeat(200);
    s.post(
        &board_path(&ok_board, "/scores"),
        &json!({"member": "m", "score": 1}),
    )
    .expect(200);
    s.put(&board_path("ctl\u{7}", ""), &json!({}))
        .expect_error(400, "invalid_board_name");
    intact();

    // Malformed JSON and wrong shapes.
    for body in [
        "{not json",
        "[{\"member\":\"a\",\"score\":1}",
        "",
        "42",
        "{\"member\": 5, \"score\": 1}",
        "{\"score\": 1}",
        "{\"member\":\"a\",\"score\":1,\"scroe\":2}",
    ] {
        let r = s.post_raw(&scores, "application/json", body);
        r.expect_error(400, "malformed_request");
        intact();
    }
    s.put(&board_path("ok2", ""), &json!("not an object"))
        .expect_error(400, "invalid_config");
    let r = s.post_raw(&board_path("ok", "/ranks"), "application/json", "{");
    r.expect_error(400, "malformed_request");
    let r = s.post_raw(&board_path("x", "/merge"), "application/json", "[");
    r.expect_error(400, "malformed_request");
    intact();

    // Bad data and op.
    s.post(&scores, &json!({"member": "a", "score": 1, "data": [1]}))
        .expect_error(400, "invalid_data");
    s.post(&scores, &json!({"member": "a", "score": 1, "op": "double"}))
        .expect_error(400, "invalid_argument");
    intact();

    // Unknown boards.
    s.get(&board_path("nope", "/top"))
        .expect_error(404, "board_not_found");
    s.get(&board_path("nope", ""))
        .expect_error(404, "board_not_found");
    s.delete(&board_path("nope", "/members/a"))
        .expect_error(404, "board_not_found");
    s.post(&board_path("nope", "/remove"), &json!({"members": ["a"]}))
        .expect_error(404, "board_not_found");
    intact();

    // Wrong method on a known route.
    let r = send(s.req(Method::PUT, &board_path("ok", "/top")));
    assert_eq!(r.status, 405, "{}", r.text);
    intact();
}

#[test]
fn bodies_over_max_body_are_refused_with_413() {
    let s = Server::start(&["--max-body", "1KiB"]);
    let scores = board_path("mb", "/scores");
    s.post(&scores, &json!({"member": "small", "score": 1}))
        .expect(200);
    let big: Vec<Value> = (0..100)
        .map(|i| json!({"member": format!("member-{i:04}"), "score": i}))
        .collect();
    let body = serde_json::to_vec(&big).unwrap();
    assert!(body.len() > 1024);
    s.post(&scores, &json!(big))
        .expect_error(413, "payload_too_large");
    // Just over the limit, and exactly at it.
    let pad = |n: usize| {
        let base = r#"{"member":"p","score":1,"data":{"pad":""}}"#.len();
        format!(
            r#"{{"member":"p","score":1,"data":{{"pad":"{}"}}}}"#,
            "n".repeat(n - base)
        )
    };
    assert_eq!(pad(1024).len(), 1024);
    s.post_raw(&scores, "application/json", pad(1025))
        .expect_error(413, "payload_too_large");
    s.post_raw(&scores, "application/json", pad(1024))
        .expect(200);
    // The server and the earlier data are fine.
    let v = s.get(&board_path("mb", "/top")).expect(200);
    assert_eq!(members(&v), strs(&["small", "p"]));
    assert_eq!(v["total"], 2);
    // import streams its body: --max-body does not bound it.
    let ndjson: String = (0..200)
        .map(|i| format!("{{\"member\":\"imp{i:03}\",\"score\":{i}}}\n"))
        .collect();
    assert!(ndjson.len() > 4096);
    let v = s
        .post_raw(
            &board_path("mb", "/import?format=ndjson"),
            "application/x-ndjson",
            ndjson,
        )
        .expect(200);
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(200), Some(0))
    );
    assert_eq!(s.get(&board_path("mb", "")).expect(200)["members"], 202);
}
