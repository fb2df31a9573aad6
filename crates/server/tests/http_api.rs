//! The HTTP/JSON API of docs/spec.md §4, end to end: the real `podium serve`
//! binary, real requests, every route and every error code a client can
//! provoke, API-key scopes, and durability across a graceful restart.

mod common;

use common::{board_path, enc, run_to_end, send, Resp, Server};
use reqwest::Method;
use serde_json::{json, Value};

// ----------------------------------------------------------------- helpers

/// The `member` fields of `v["entries"]`, in order.
fn members(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect()
}

/// `(member, score, rank)` of `v["entries"]`, in order.
fn triples(v: &Value) -> Vec<(String, f64, u64)> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_string(),
                e["score"].as_f64().unwrap(),
                e["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Submits `(member, score)` pairs as one batch; every result must be ok.
#[track_caller]
fn seed(s: &Server, board: &str, entries: &[(&str, f64)]) {
    let body: Vec<Value> = entries
        .iter()
        .map(|(m, sc)| json!({"member": m, "score": sc}))
        .collect();
    let v = s
        .post(&board_path(board, "/scores"), &json!(body))
        .expect(200);
    let results = v["results"].as_array().expect("batch results");
    assert_eq!(results.len(), entries.len(), "{v}");
    for r in results {
        assert!(r.get("error").is_none(), "a batch entry failed: {r}");
    }
}

/// The ten members a..j of the read tests: a = 100 (rank 1) … j = 10.
const TEN: [(&str, f64); 10] = [
    ("a", 100.0),
    ("b", 90.0),
    ("c", 80.0),
    ("d", 70.0),
    ("e", 60.0),
    ("f", 50.0),
    ("g", 40.0),
    ("h", 30.0),
    ("i", 20.0),
    ("j", 10.0),
];

fn get_q(s: &Server, path: &str, q: &[(&str, &str)]) -> Resp {
    send(s.req(Method::GET, path).query(q))
}

fn delete_q(s: &Server, path: &str, q: &[(&str, &str)]) -> Resp {
    send(s.req(Method::DELETE, path).query(q))
}

// ------------------------------------------------------ service endpoints

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
        ("/v1/boards/{}", &["put", "get", "delete"]),
        ("/v1/boards/{}/scores", &["post"]),
        ("/v1/boards/{}/top", &["get"]),
        ("/v1/boards/{}/members/{}", &["get", "patch", "delete"]),
        ("/v1/boards/{}/remove", &["post"]),
        ("/v1/boards/{}/rank/{}", &["get"]),
        ("/v1/boards/{}/percentile/{}", &["get"]),
        ("/v1/boards/{}/score_at_percentile", &["get"]),
        ("/v1/boards/{}/around/{}", &["get"]),
        ("/v1/boards/{}/range", &["get", "delete"]),
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

    // PUT again: an update (200), re-ranking by the new config.
    let v = s
        .put(
            &board_path("laps", ""),
            &json!({"order": "desc", "ranking": "dense"}),
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

// ------------------------------------------------------------------- reads

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
        "/range?by=rank&start=1&stop=2",
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

    let range = |q: &[(&str, &str)]| get_q(&s, &board_path("g", "/range"), q).expect(200);
    // By rank, best first and from the worst end.
    let v = range(&[("by", "rank"), ("start", "2"), ("stop", "4")]);
    assert_eq!(v["total"], 10);
    assert_eq!(
        triples(&v),
        vec![
            ("b".into(), 90.0, 2),
            ("c".into(), 80.0, 3),
            ("d".into(), 70.0, 4)
        ]
    );
    let v = range(&[
        ("by", "rank"),
        ("start", "1"),
        ("stop", "3"),
        ("from", "worst"),
    ]);
    assert_eq!(
        triples(&v),
        vec![
            ("j".into(), 10.0, 10),
            ("i".into(), 20.0, 9),
            ("h".into(), 30.0, 8)
        ]
    );
    let v = range(&[("by", "rank"), ("start", "9"), ("stop", "50")]);
    assert_eq!(members(&v), strs(&["i", "j"]));
    let v = range(&[("by", "rank"), ("start", "11"), ("stop", "20")]);
    assert_eq!(members(&v), Vec::<String>::new());
    get_q(
        &s,
        &board_path("g", "/range"),
        &[("by", "rank"), ("start", "0"), ("stop", "3")],
    )
    .expect_error(400, "invalid_argument");
    get_q(
        &s,
        &board_path("g", "/range"),
        &[("by", "rank"), ("start", "5"), ("stop", "3")],
    )
    .expect_error(400, "invalid_argument");

    // By score: Redis-style bounds, offset/limit, from the worst end.
    let v = range(&[("by", "score"), ("min", "30"), ("max", "60")]);
    assert_eq!(members(&v), strs(&["e", "f", "g", "h"]));
    let v = range(&[("by", "score"), ("min", "(30"), ("max", "(60")]);
    assert_eq!(
        triples(&v),
        vec![("f".into(), 50.0, 6), ("g".into(), 40.0, 7)]
    );
    let v = range(&[("by", "score"), ("min", "-inf"), ("max", "+inf")]);
    assert_eq!(members(&v).len(), 10);
    let v = range(&[
        ("by", "score"),
        ("min", "-inf"),
        ("max", "+inf"),
        ("offset", "1"),
        ("limit", "2"),
    ]);
    assert_eq!(members(&v), strs(&["b", "c"]));
    let v = range(&[
        ("by", "score"),
        ("min", "(20"),
        ("max", "90"),
        ("offset", "2"),
        ("limit", "3"),
    ]);
    assert_eq!(members(&v), strs(&["d", "e", "f"]));
    let v = range(&[
        ("by", "score"),
        ("min", "(20"),
        ("max", "90"),
        ("from", "worst"),
        ("limit", "2"),
    ]);
    assert_eq!(
        triples(&v),
        vec![("h".into(), 30.0, 8), ("g".into(), 40.0, 7)]
    );
    let v = range(&[("by", "score"), ("min", "(100"), ("max", "+inf")]);
    assert_eq!(members(&v), Vec::<String>::new());
    let r = get_q(&s, &board_path("g", "/range"), &[("by", "sideways")]);
    assert_eq!(r.status, 400, "{}", r.text);

    // DELETE range by rank, then by score (exclusive max).
    let v = delete_q(
        &s,
        &board_path("g", "/range"),
        &[("by", "rank"), ("start", "1"), ("stop", "2")],
    )
    .expect(200);
    assert_eq!(v["removed"], 2);
    let v = delete_q(
        &s,
        &board_path("g", "/range"),
        &[("by", "score"), ("min", "-inf"), ("max", "(30")],
    )
    .expect(200);
    assert_eq!(v["removed"], 2);
    let v = s.get(&board_path("g", "/top")).expect(200);
    assert_eq!(members(&v), strs(&["c", "d", "e", "f", "g", "h"]));
    assert_eq!(v["total"], 6);
    let v = delete_q(
        &s,
        &board_path("g", "/range"),
        &[("by", "score"), ("min", "(60"), ("max", "+inf")],
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
        &board_path("ghost", "/range"),
        &[("by", "rank"), ("start", "1"), ("stop", "2")],
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

// --------------------------------------------------------- export, import

#[test]
fn export_ndjson_is_the_top_order_and_imports_back() {
    let s = Server::start(&[]);
    let entries: Vec<(String, f64)> = (0..300)
        .map(|i| (format!("p{i:03}"), ((i * 7919) % 1000) as f64 / 4.0))
        .collect();
    let body: Vec<Value> = entries
        .iter()
        .map(|(m, sc)| json!({"member": m, "score": sc}))
        .collect();
    s.post(&board_path("ex", "/scores"), &json!(body))
        .expect(200);
    s.post(
        &board_path("ex", "/scores"),
        &json!({"member": "p000", "score": 0, "name": "Zero", "data": {"k": "v"}}),
    )
    .expect(200);

    let r = s.get(&board_path("ex", "/export"));
    assert_eq!(r.status, 200, "{}", r.text);
    let lines: Vec<Value> = r
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad NDJSON line {l:?}: {e}")))
        .collect();
    assert_eq!(lines.len(), 300);
    let top = s.get(&board_path("ex", "/top?page_size=1000")).expect(200);
    assert_eq!(
        lines
            .iter()
            .map(|l| (
                l["member"].as_str().unwrap().to_string(),
                l["score"].as_f64().unwrap(),
                l["rank"].as_u64().unwrap()
            ))
            .collect::<Vec<_>>(),
        triples(&top)
    );
    let zero = lines.iter().find(|l| l["member"] == "p000").unwrap();
    assert_eq!(
        (zero["name"].as_str(), zero["data"].clone()),
        (Some("Zero"), json!({"k": "v"}))
    );

    // Import the export into another board: the same board.
    let v = s
        .post_raw(
            &board_path("ex2", "/import?format=ndjson"),
            "application/x-ndjson",
            r.text.clone(),
        )
        .expect(200);
    assert_eq!(v["board"], "ex2");
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(300), Some(0))
    );
    let top2 = s.get(&board_path("ex2", "/top?page_size=1000")).expect(200);
    assert_eq!(triples(&top2), triples(&top));
    let z = s.get(&board_path("ex2", "/members/p000")).expect(200);
    assert_eq!(z["name"], "Zero");

    // Bad lines fail alone and are reported; the rest import.
    let ndjson = "{\"member\":\"n1\",\"score\":5}\n\
                  not json\n\
                  {\"member\":\"n2\",\"score\":\"nan\"}\n\
                  \n\
                  {\"member\":\"n3\",\"score\":7.5,\"name\":\"Three\"}\n";
    let v = s
        .post_raw(
            &board_path("nd", "/import?format=ndjson"),
            "application/x-ndjson",
            ndjson,
        )
        .expect(200);
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(2)),
        "{v}"
    );
    assert_eq!(v["errors"].as_array().unwrap().len(), 2, "{v}");
    let top = s.get(&board_path("nd", "/top")).expect(200);
    assert_eq!(
        triples(&top),
        vec![("n3".into(), 7.5, 1), ("n1".into(), 5.0, 2)]
    );
    assert_eq!(top["entries"][0]["name"], "Three");
}

#[test]
fn import_csv_with_quoted_fields() {
    let s = Server::start(&[]);
    let csv = "member,score,name\n\
               alice,10,Alice\n\
               \"smith, john\",30,\"Smith, John\"\n\
               \"say \"\"hi\"\"\",20,\n\
               bob,not-a-number,Bob\n\
               carol,-5.5,\"Carol\"\n";
    let v = s
        .post_raw(&board_path("csv", "/import?format=csv"), "text/csv", csv)
        .expect(200);
    assert_eq!(v["board"], "csv");
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(4), Some(1)),
        "{v}"
    );
    assert_eq!(v["errors"].as_array().unwrap().len(), 1, "{v}");
    let top = s.get(&board_path("csv", "/top")).expect(200);
    assert_eq!(
        triples(&top),
        vec![
            ("smith, john".into(), 30.0, 1),
            ("say \"hi\"".into(), 20.0, 2),
            ("alice".into(), 10.0, 3),
            ("carol".into(), -5.5, 4)
        ]
    );
    assert_eq!(top["entries"][0]["name"], "Smith, John");
    assert_eq!(top["entries"][2]["name"], "Alice");
    let e = s
        .get(&board_path(
            "csv",
            &format!("/members/{}", enc("smith, john")),
        ))
        .expect(200);
    assert_eq!(e["rank"], 1);
}

// ------------------------------------------------------------------ errors

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

// -------------------------------------------------------------------- auth

#[test]
fn api_keys_and_scopes() {
    const READ: &str = "readerkey0000000000";
    const WRITE: &str = "writerkey000000000";
    const ADMIN: &str = "adminkey0000000000";
    let mut s = Server::start(&[
        "--api-key",
        &format!("{READ}:read"),
        "--api-key",
        &format!("{WRITE}:write"),
        "--api-key",
        &format!("{ADMIN}:admin"),
    ]);
    let status =
        |s: &Server, key: Option<&str>, method: Method, path: &str, body: Option<Value>| {
            let mut r = s.http.request(method, s.url(path));
            if let Some(k) = key {
                r = r.bearer_auth(k);
            }
            if let Some(b) = body {
                r = r.json(&b);
            }
            let resp = send(r);
            if resp.status >= 400 {
                let want = match resp.status {
                    401 => "unauthorized",
                    403 => "forbidden",
                    _ => resp.code(),
                };
                resp.expect_error(resp.status, want);
            }
            resp.status
        };
    let b = board_path("sec", "");
    let scores = board_path("sec", "/scores");
    let top = board_path("sec", "/top");
    let sub = || Some(json!({"member": "m", "score": 1}));

    // /healthz and /openapi.json are open; everything else needs a key.
    assert_eq!(status(&s, None, Method::GET, "/healthz", None), 200);
    assert_eq!(status(&s, None, Method::GET, "/openapi.json", None), 200);
    assert_eq!(status(&s, None, Method::GET, "/metrics", None), 401);
    assert_eq!(status(&s, Some(READ), Method::GET, "/metrics", None), 200);
    // No key, or an unknown one: 401 everywhere under /v1.
    for key in [None, Some("wrongkey00000000000")] {
        assert_eq!(status(&s, key, Method::GET, "/v1/boards", None), 401);
        assert_eq!(status(&s, key, Method::PUT, &b, Some(json!({}))), 401);
        assert_eq!(status(&s, key, Method::POST, &scores, sub()), 401);
    }
    // Admin: board PUT/DELETE/reset/merge/intersect.
    assert_eq!(
        status(&s, Some(READ), Method::PUT, &b, Some(json!({}))),
        403
    );
    assert_eq!(
        status(&s, Some(WRITE), Method::PUT, &b, Some(json!({}))),
        403
    );
    assert_eq!(
        status(&s, Some(ADMIN), Method::PUT, &b, Some(json!({}))),
        201
    );
    // Write: submissions and removals.
    assert_eq!(status(&s, Some(READ), Method::POST, &scores, sub()), 403);
    assert_eq!(status(&s, Some(WRITE), Method::POST, &scores, sub()), 200);
    assert_eq!(status(&s, Some(ADMIN), Method::POST, &scores, sub()), 200);
    let member = board_path("sec", "/members/m");
    assert_eq!(
        status(
            &s,
            Some(READ),
            Method::PATCH,
            &member,
            Some(json!({"name": "M"}))
        ),
        403
    );
    assert_eq!(
        status(
            &s,
            Some(WRITE),
            Method::PATCH,
            &member,
            Some(json!({"name": "M"}))
        ),
        200
    );
    // Read: every GET.
    for key in [READ, WRITE, ADMIN] {
        assert_eq!(status(&s, Some(key), Method::GET, &top, None), 200);
        assert_eq!(status(&s, Some(key), Method::GET, "/v1/boards", None), 200);
        assert_eq!(status(&s, Some(key), Method::GET, &member, None), 200);
    }
    assert_eq!(status(&s, Some(READ), Method::DELETE, &member, None), 403);
    assert_eq!(status(&s, Some(WRITE), Method::DELETE, &member, None), 200);
    assert_eq!(status(&s, Some(WRITE), Method::POST, &scores, sub()), 200);
    let ranks = board_path("sec", "/ranks");
    assert_eq!(
        status(
            &s,
            Some(READ),
            Method::POST,
            &ranks,
            Some(json!({"members": ["m"]}))
        ),
        200,
        "POST ranks is a read"
    );
    for (path, body) in [
        (board_path("sec", "/reset"), json!({})),
        (board_path("u", "/merge"), json!({"sources": ["sec"]})),
        (board_path("i", "/intersect"), json!({"sources": ["sec"]})),
    ] {
        assert_eq!(
            status(&s, Some(WRITE), Method::POST, &path, Some(body.clone())),
            403,
            "{path}"
        );
        assert_eq!(
            status(&s, Some(ADMIN), Method::POST, &path, Some(body)),
            200,
            "{path}"
        );
    }
    assert_eq!(status(&s, Some(WRITE), Method::DELETE, &b, None), 403);
    let st = status(&s, Some(ADMIN), Method::DELETE, &b, None);
    assert!(st == 200 || st == 204, "{st}");
    // The bearer scheme is required.
    let r = send(
        s.http
            .get(s.url("/v1/boards"))
            .header("Authorization", format!("Basic {ADMIN}")),
    );
    r.expect_error(401, "unauthorized");
    s.token = Some(ADMIN.into());
    s.get("/v1/boards").expect(200);
    assert!(s.terminate().success());
}

#[test]
fn refuses_a_public_address_without_an_api_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (status, out) = run_to_end(&[
        "serve",
        "--data-dir",
        dir.to_str().unwrap(),
        "--http",
        "0.0.0.0:0",
        "--rpc",
        "off",
        "--resp",
        "off",
    ]);
    assert!(
        !status.success(),
        "podium served on 0.0.0.0 without a key:\n{out}"
    );
    assert!(
        out.contains("--api-key"),
        "the refusal should name --api-key:\n{out}"
    );
    assert!(!out.contains("http listening"), "{out}");
}

// -------------------------------------------------------------- durability

#[test]
fn data_survives_sigterm_and_restart() {
    let mut s = Server::start(&[]);
    s.put(&board_path("asc", ""), &json!({"order": "asc"}))
        .expect(201);
    seed(&s, "asc", &[("slow", 90.5), ("fast", 55.25)]);
    seed(&s, "d", &TEN);
    s.post(
        &board_path("d", "/scores"),
        &json!({"member": "a", "score": 5, "op": "incr", "name": "Alpha", "data": {"x": 1}}),
    )
    .expect(200);
    s.post(&board_path("d", "/remove"), &json!({"members": ["j"]}))
        .expect(200);
    let reset = s.post(&board_path("asc", "/reset"), &json!({})).expect(200);
    let archive = reset["archive"].as_str().unwrap().to_string();
    seed(&s, "asc", &[("new", 1.0)]);
    let before_d = s.get(&board_path("d", "/top")).expect(200);
    let before_boards = s.get("/v1/boards").expect(200);

    let status = s.terminate();
    assert!(
        status.success(),
        "exit status {status} after SIGTERM:\n{}",
        s.output()
    );
    s.restart();
    assert_eq!(s.get(&board_path("d", "/top")).expect(200), before_d);
    assert_eq!(s.get("/v1/boards").expect(200), before_boards);
    let a = s.get(&board_path("d", "/members/a")).expect(200);
    assert_eq!(
        (a["score"].as_f64(), a["name"].as_str()),
        (Some(105.0), Some("Alpha"))
    );
    assert_eq!(a["data"], json!({"x": 1}));
    let top = s.get(&board_path(&archive, "/top")).expect(200);
    assert_eq!(members(&top), strs(&["fast", "slow"]));
    assert_eq!(
        s.get(&board_path(&archive, "")).expect(200)["read_only"],
        true
    );
    let live = s.get(&board_path("asc", "")).expect(200);
    assert_eq!(
        (live["members"].as_u64(), live["config"]["order"].as_str()),
        (Some(1), Some("asc"))
    );
    let status = s.terminate();
    assert!(
        status.success(),
        "exit status {status} after the second SIGTERM:\n{}",
        s.output()
    );
}

/// The listening line means ready, and that includes SIGTERM: a supervisor
/// (or a test) may stop the server the moment it is up, and must get a
/// graceful exit 0, not death by the signal's default action.
#[test]
fn sigterm_right_after_the_listening_line_is_a_graceful_exit() {
    let mut s = Server::start(&[]);
    for round in 0..10 {
        let status = s.terminate();
        assert!(
            status.success(),
            "round {round}: exit status {status} for a SIGTERM sent right after \
             the listening line:\n{}",
            s.output()
        );
        s.restart();
    }
}
