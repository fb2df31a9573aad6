//! Service endpoints, boards, writes and member data.

use super::*;

#[test]
fn healthz_metrics_and_openapi() {
    let s = Server::start(&[]);
    s.get("/healthz").expect(200);

    seed(&s, "m", &[("x", 1.0), ("y", 2.0)]);
    s.get(&board_path("m", "/top")).expect(200);
    let m = s.get("/metrics");
    assert_eq!(m.status, 200, "{}", m.text);
    assert!(
        m.content_type.starts_with("text/plain"),
        "metrics content type {:?}",
        m.content_type
    );
    for name in ["podium_http_requests_total", "podium_board_members"] {
        assert!(
            m.text.lines().any(|l| l.starts_with(name)),
            "/metrics has no {name}:\n{}",
            m.text
        );
    }

    let doc = s.get("/openapi.json").expect(200);
    assert_eq!(doc["openapi"], "3.1.0", "{doc}");
    let paths = doc["paths"].as_object().expect("paths");
    // Parameter names may differ: compare with every `{…}` blanked.
    let blank = |p: &str| {
        let mut out = String::new();
        let mut depth = 0;
        for ch in p.chars() {
            match ch {
                '{' => {
                    depth += 1;
                    out.push_str("{}");
                }
                '}' => depth -= 1,
                _ if depth > 0 => {}
                _ => out.push(ch),
            }
        }
        out
    };
    let have: std::collections::BTreeMap<String, Vec<String>> = paths
        .iter()
        .map(|(p, ops)| {
            (
                blank(p),
                ops.as_object()
                    .unwrap()
                    .keys()
                    .map(|k| k.to_ascii_lowercase())
                    .collect(),
            )
        })
        .collect();
    let routes: &[(&str, &[&str])] = &[
        ("/healthz", &["get"]),
        ("/metrics", &["get"]),
        ("/openapi.json", &["get"]),
        ("/v1/boards", &["get"]),
        ("/v1/boards/{}", &["put", "patch", "get", "delete"]),
        ("/v1/boards/{}/scores", &["post"]),
        ("/v1/boards/{}/top", &["get"]),
        ("/v1/boards/{}/members/{}", &["get", "patch", "delete"]),
        ("/v1/boards/{}/remove", &["post"]),
        ("/v1/boards/{}/rank/{}", &["get"]),
        ("/v1/boards/{}/percentile/{}", &["get"]),
        ("/v1/boards/{}/score_at_percentile", &["get"]),
        ("/v1/boards/{}/around/{}", &["get"]),
        // The member routes again, the member in the query.
        ("/v1/boards/{}/members", &["get", "patch", "delete"]),
        ("/v1/boards/{}/rank", &["get"]),
        ("/v1/boards/{}/percentile", &["get"]),
        ("/v1/boards/{}/around", &["get"]),
        ("/v1/boards/{}/range/rank", &["get", "delete"]),
        ("/v1/boards/{}/range/score", &["get", "delete"]),
        ("/v1/boards/{}/count", &["get"]),
        ("/v1/boards/{}/ranks", &["post"]),
        ("/v1/boards/{}/reset", &["post"]),
        ("/v1/boards/{}/merge", &["post"]),
        ("/v1/boards/{}/intersect", &["post"]),
        ("/v1/boards/{}/export", &["get"]),
        ("/v1/boards/{}/import", &["post"]),
    ];
    for (path, methods) in routes {
        let ops = have
            .get(*path)
            .unwrap_or_else(|| panic!("/openapi.json has no path {path}; it has {have:?}"));
        for m in *methods {
            assert!(
                ops.contains(&m.to_string()),
                "/openapi.json: {path} lacks {m}"
            );
        }
    }
    // An unknown route is a JSON 404 too.
    let r = s.get("/v1/nope");
    assert_eq!(r.status, 404, "{}", r.text);
}

// ------------------------------------------------------------------ boards

#[test]
fn boards_put_get_delete_and_list() {
    let s = Server::start(&[]);
    let v = s
        .put(
            &board_path("laps", ""),
            &json!({"order": "asc", "ranking": "competition"}),
        )
        .expect(201);
    assert_eq!(v["board"], "laps");
    assert_eq!(v["created"], true);
    assert_eq!(v["members"], 0);
    assert_eq!(v["config"]["order"], "asc");
    assert_eq!(v["config"]["ranking"], "competition");

    seed(
        &s,
        "laps",
        &[("p", 61.5), ("q", 59.25), ("r", 61.5), ("s", 70.0)],
    );
    // asc + competition: q 1, p/r tie at 2 (member order), s 4.
    let top = s.get(&board_path("laps", "/top")).expect(200);
    assert_eq!(top["ranking"], "competition");
    assert_eq!(
        triples(&top),
        vec![
            ("q".into(), 59.25, 1),
            ("p".into(), 61.5, 2),
            ("r".into(), 61.5, 2),
            ("s".into(), 70.0, 4)
        ]
    );

    // PUT again: an update (200), re-ranking by the new config once
    // confirmed.
    let v = s
        .put(
            &board_path("laps", ""),
            &json!({"order": "desc", "ranking": "dense", "confirm_rerank": true}),
        )
        .expect(200);
    assert_eq!(v["created"], false);
    assert_eq!(v["members"], 4);
    let top = s.get(&board_path("laps", "/top")).expect(200);
    assert_eq!(top["ranking"], "dense");
    assert_eq!(
        triples(&top),
        vec![
            ("s".into(), 70.0, 1),
            ("r".into(), 61.5, 2),
            ("p".into(), 61.5, 2),
            ("q".into(), 59.25, 3)
        ]
    );

    let v = s.get(&board_path("laps", "")).expect(200);
    assert_eq!(v["board"], "laps");
    assert_eq!(v["members"], 4);
    assert_eq!(v["read_only"], false);
    assert_eq!(v["config"]["order"], "desc");

    s.put(&board_path("other", ""), &json!({})).expect(201);
    let list = s.get("/v1/boards").expect(200);
    let boards: Vec<(String, u64)> = list["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["board"].as_str().unwrap().to_string(),
                b["members"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(boards, vec![("laps".into(), 4), ("other".into(), 0)]);

    let r = s.delete(&board_path("laps", ""));
    assert!(
        r.status == 200 || r.status == 204,
        "{} {}",
        r.status,
        r.text
    );
    s.get(&board_path("laps", ""))
        .expect_error(404, "board_not_found");
    s.get(&board_path("laps", "/top"))
        .expect_error(404, "board_not_found");
    s.delete(&board_path("laps", ""))
        .expect_error(404, "board_not_found");
    let list = s.get("/v1/boards").expect(200);
    assert_eq!(list["boards"].as_array().unwrap().len(), 1);

    // A bad config is refused and creates nothing.
    s.put(&board_path("bad", ""), &json!({"order": "sideways"}))
        .expect_error(400, "invalid_config");
    s.get(&board_path("bad", ""))
        .expect_error(404, "board_not_found");
}

/// PATCH changes the fields it names and keeps the others; PUT replaces the
/// whole config. A change of either kind that would re-rank a board is
/// refused (409 confirm_rerank_required, nothing changed) unless the body
/// says `"confirm_rerank": true`.
#[test]
fn patch_keeps_other_fields_and_a_rerank_needs_confirming() {
    let s = Server::start(&[]);
    let path = board_path("scratch", "");
    s.put(
        &path,
        &json!({"order": "asc", "reset": "weekly", "keep_archives": 4}),
    )
    .expect(201);
    seed(&s, "scratch", &[("a", 1.0), ("b", 2.0)]);
    let v = s.patch(&path, &json!({"keep_archives": 8})).expect(200);
    assert_eq!(
        (
            &v["config"]["order"],
            &v["config"]["reset"],
            &v["config"]["keep_archives"]
        ),
        (&json!("asc"), &json!("weekly"), &json!(8)),
        "{v}"
    );
    assert!(v.get("created").is_none(), "{v}");
    // null puts a field back to its default.
    let v = s.patch(&path, &json!({"keep_archives": null})).expect(200);
    assert_eq!(v["config"]["keep_archives"], Value::Null, "{v}");
    assert_eq!(v["config"]["reset"], "weekly", "{v}");
    // A re-rank, by PATCH or by a PUT that leaves `order` out: refused.
    s.patch(&path, &json!({"order": "desc"}))
        .expect_error(409, "confirm_rerank_required");
    let r = s.put(&path, &json!({"keep_archives": 8}));
    r.expect_error(409, "confirm_rerank_required");
    assert!(r.text.contains("confirm_rerank"), "{}", r.text);
    let v = s.get(&path).expect(200);
    assert_eq!(
        (&v["config"]["order"], &v["config"]["reset"]),
        (&json!("asc"), &json!("weekly")),
        "a refused change changed the config: {v}"
    );
    assert_eq!(
        members(&s.get(&board_path("scratch", "/top")).expect(200)),
        strs(&["a", "b"])
    );
    let v = s
        .patch(&path, &json!({"order": "desc", "confirm_rerank": true}))
        .expect(200);
    assert_eq!(v["config"]["reset"], "weekly", "{v}");
    assert_eq!(
        members(&s.get(&board_path("scratch", "/top")).expect(200)),
        strs(&["b", "a"])
    );
    // A PATCH changes an existing board only; its fields are checked as a
    // config's are.
    s.patch(&board_path("nope", ""), &json!({}))
        .expect_error(404, "board_not_found");
    s.patch(&path, &json!({"colour": "red"}))
        .expect_error(400, "invalid_config");
    s.patch(&path, &json!({"confirm_rerank": "yes"}))
        .expect_error(400, "invalid_config");
    s.patch(&path, &json!([1]))
        .expect_error(400, "invalid_config");
}

// ------------------------------------------------------------------ writes

#[test]
fn submit_one_batch_ops_and_member_data() {
    let s = Server::start(&[]);
    let p = board_path("w", "/scores");
    // One object: a SubmitOut; the board is created implicitly.
    let v = s
        .post(&p, &json!({"member": "ann", "score": 10}))
        .expect(200);
    assert_eq!(v["member"], "ann");
    assert_eq!(v["score"], 10.0);
    assert_eq!(v["rank"], 1);
    assert_eq!(v["previous"], Value::Null);
    assert_eq!(v["created"], true);
    assert_eq!(v["changed"], true);
    assert_eq!(v["applied"], true);
    assert_eq!(s.get(&board_path("w", "")).expect(200)["members"], 1);

    let v = s
        .post(&p, &json!({"member": "bob", "score": 20}))
        .expect(200);
    assert_eq!(v["rank"], 1);
    // incr, best (not an improvement, then one), set.
    let v = s
        .post(&p, &json!({"member": "ann", "score": 15, "op": "incr"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_f64(), v["previous"].as_f64()),
        (Some(25.0), Some(10.0))
    );
    assert_eq!(v["rank"], 1);
    assert_eq!(v["created"], false);
    let v = s
        .post(&p, &json!({"member": "ann", "score": 5, "op": "best"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_f64(), v["applied"].as_bool()),
        (Some(25.0), Some(false))
    );
    let v = s
        .post(&p, &json!({"member": "bob", "score": 30, "op": "best"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_f64(), v["rank"].as_u64()),
        (Some(30.0), Some(1))
    );
    let v = s
        .post(&p, &json!({"member": "bob", "score": -1, "op": "set"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_f64(), v["rank"].as_u64()),
        (Some(-1.0), Some(2))
    );
    // only: new / existing, cond: gt.
    let v = s
        .post(&p, &json!({"member": "ann", "score": 1, "only": "new"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_f64(), v["applied"].as_bool()),
        (Some(25.0), Some(false))
    );
    let v = s
        .post(
            &p,
            &json!({"member": "zed", "score": 1, "only": "existing"}),
        )
        .expect(200);
    assert_eq!(v["score"], Value::Null);
    let v = s
        .post(&p, &json!({"member": "ann", "score": 24, "cond": "gt"}))
        .expect(200);
    assert_eq!(v["score"], 25.0);
    // ±inf as strings, as Redis allows.
    let v = s
        .post(&p, &json!({"member": "top", "score": "inf"}))
        .expect(200);
    assert_eq!(
        (v["score"].as_str(), v["rank"].as_u64()),
        (Some("inf"), Some(1))
    );
    let v = s
        .post(&p, &json!({"member": "low", "score": "-inf"}))
        .expect(200);
    assert_eq!(v["score"], "-inf");
    assert_eq!(v["rank"], 4);

    // An array: results in order, applied in order.
    let v = s
        .post(
            &p,
            &json!([
                {"member": "c1", "score": 7},
                {"member": "c1", "score": 3, "op": "incr"},
                {"member": "c2", "score": 8, "name": "Cee Two", "data": {"team": "red"}}
            ]),
        )
        .expect(200);
    assert_eq!(v["board"], "w");
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["score"], 7.0);
    assert_eq!(r[1]["score"], 10.0);
    assert_eq!(r[1]["previous"], 7.0);
    assert_eq!(r[2]["member"], "c2");

    // A batch entry that fails alone reports its error in place.
    let v = s
        .post(
            &p,
            &json!([
                {"member": "c3", "score": 1},
                {"member": "top", "score": "-inf", "op": "incr"},
                {"member": "c4", "score": 2}
            ]),
        )
        .expect(200);
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), 3, "{v}");
    assert_eq!(
        (r[0]["score"].as_f64(), r[2]["score"].as_f64()),
        (Some(1.0), Some(2.0)),
        "{v}"
    );
    assert_eq!(r[1]["member"], "top");
    assert_eq!(r[1]["error"]["code"], "invalid_score", "{v}");
    assert_eq!(
        s.get(&board_path("w", "/members/top")).expect(200)["score"],
        "inf"
    );

    // Name and data: on the entry, on GET member, and with_data on reads.
    let e = s.get(&board_path("w", "/members/c2")).expect(200);
    assert_eq!(e["board"], "w");
    assert_eq!(e["member"], "c2");
    assert_eq!(e["name"], "Cee Two");
    assert_eq!(e["data"], json!({"team": "red"}));
    let v = s
        .patch(
            &board_path("w", "/members/ann"),
            &json!({"name": "Ann", "data": {"lvl": 3}}),
        )
        .expect(200);
    assert_eq!(v["found"], true);
    let e = s.get(&board_path("w", "/members/ann")).expect(200);
    assert_eq!(
        (e["name"].as_str(), e["data"].clone()),
        (Some("Ann"), json!({"lvl": 3}))
    );
    assert_eq!(e["score"], 25.0);
    s.patch(&board_path("w", "/members/ghost"), &json!({"name": "G"}))
        .expect_error(404, "member_not_found");
    s.patch(&board_path("w", "/members/ann"), &json!({"data": [1, 2]}))
        .expect_error(400, "invalid_data");

    let plain = s.get(&board_path("w", "/top?page_size=100")).expect(200);
    let ann = plain["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["member"] == "ann")
        .unwrap()
        .clone();
    assert_eq!(ann["name"], "Ann");
    assert!(ann.get("data").is_none_or(Value::is_null), "{ann}");
    let rich = s
        .get(&board_path("w", "/top?page_size=100&with_data=true"))
        .expect(200);
    let ann = rich["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["member"] == "ann")
        .unwrap()
        .clone();
    assert_eq!(ann["data"], json!({"lvl": 3}));
}

/// The samples of a `/metrics` text: every line that is not a comment
/// or blank.
fn samples(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

#[test]
fn metrics_forget_deleted_boards_and_sum_archives() {
    let s = Server::start(&[]);
    seed(&s, "kept", &[("x", 1.0)]);
    // One create-and-delete round and two scrapes first, so the request
    // series of every route, method and status used below exist in the
    // baseline.
    let churn = |i: usize| {
        let b = format!("churn-{i}");
        seed(&s, &b, &[("m", i as f64)]);
        s.get(&board_path(&b, "/search?q=m")).expect(200);
        s.delete(&board_path(&b, "")).expect(200);
    };
    churn(0);
    s.get("/metrics").expect(200);
    let baseline = s.get("/metrics");
    let base = samples(&baseline.text).len();
    for i in 1..=2000 {
        churn(i);
    }
    let after = s.get("/metrics");
    assert!(
        !after.text.contains("churn-"),
        "deleted boards still have series:\n{}",
        after.text
    );
    assert!(
        after
            .text
            .lines()
            .any(|l| l == r#"podium_board_members{board="kept"} 1"#),
        "{}",
        after.text
    );
    assert_eq!(
        samples(&after.text).len(),
        base,
        "series before:\n{}\nafter:\n{}",
        baseline.text,
        after.text
    );
    // Every sample belongs to a family announced by a TYPE line.
    let typed: Vec<&str> = after
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for l in samples(&after.text) {
        let name = l.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suf| name.strip_suffix(suf))
            .filter(|f| typed.contains(f))
            .unwrap_or(name);
        assert!(typed.contains(&family), "{l} has no TYPE line");
    }

    // Three resets: three archives, summed under the board they archive.
    for round in 1..=3 {
        let entries: Vec<(String, f64)> = (0..round).map(|k| (format!("p{k}"), 1.0)).collect();
        let entries: Vec<(&str, f64)> = entries.iter().map(|(m, v)| (m.as_str(), *v)).collect();
        seed(&s, "season", &entries);
        s.post(&board_path("season", "/reset"), &json!({}))
            .expect(200);
    }
    let m = s.get("/metrics").text;
    for want in [
        r#"podium_archives{board="season"} 3"#,
        r#"podium_archive_members{board="season"} 6"#,
        r#"podium_board_members{board="season"} 0"#,
    ] {
        assert!(m.lines().any(|l| l == want), "no {want} in:\n{m}");
    }
    assert!(
        !m.contains("season@"),
        "an archive has its own series:\n{m}"
    );
}
