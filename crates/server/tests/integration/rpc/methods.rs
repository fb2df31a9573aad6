//! Every method against the HTTP API's answers, the errors' codes and
//! messages, and the API key scopes.

use super::*;

#[test]
fn every_method_matches_the_http_api() {
    let p = Podium::start(&[]);
    let mut c = p.client();

    // --------------------------------------------------------- boards
    let created = c.call(
        "board_create",
        vec!["lb".into(), map(&[("order", "desc".into())])],
    );
    assert_eq!(get(&created, "board"), &Value::from("lb"));
    assert_eq!(get(&created, "members"), &Value::from(0));
    let e = c.call_err("board_create", vec!["lb".into()]);
    assert_eq!(e.code, "board_exists");
    // A whole config that re-ranks the board: refused unless confirmed.
    let e = c.call_err(
        "board_update",
        vec!["lb".into(), map(&[("ranking", "competition".into())])],
    );
    assert_eq!(e.code, "confirm_rerank_required");
    let updated = c.call(
        "board_update",
        vec![
            "lb".into(),
            map(&[
                ("ranking", "competition".into()),
                ("confirm_rerank", true.into()),
            ]),
        ],
    );
    assert_eq!(get(&updated, "created"), &Value::from(false));
    let fresh = c.call("board_update", vec!["other".into()]);
    assert_eq!(get(&fresh, "created"), &Value::from(true));
    // board_patch changes the fields it names and keeps the others.
    let patched = c.call(
        "board_patch",
        vec!["lb".into(), map(&[("keep_archives", 8.into())])],
    );
    let config = get(&patched, "config");
    assert_eq!(get(config, "keep_archives"), &Value::from(8));
    assert_eq!(get(config, "ranking"), &Value::from("competition"));
    let e = c.call_err(
        "board_patch",
        vec!["lb".into(), map(&[("order", "asc".into())])],
    );
    assert_eq!(e.code, "confirm_rerank_required");
    let e = c.call_err("board_patch", vec!["nope".into(), map(&[])]);
    assert_eq!(e.code, "board_not_found");

    // --------------------------------------------------------- writes
    let s = c.call(
        "submit",
        vec![
            "lb".into(),
            map(&[
                ("member", "ann".into()),
                ("score", 30.into()),
                ("name", "Ann".into()),
                ("data", map(&[("team", "red".into())])),
            ]),
        ],
    );
    let want = json!({"member": "ann", "score": 30.0, "rank": 1, "previous": null,
        "changed": true, "created": true, "applied": true, "evicted": 0});
    assert_eq!(to_json(&s), want);
    let many = c.call(
        "submit_many",
        vec![
            "lb".into(),
            Value::Array(vec![
                entry("bob", 20.0),
                entry("cat", 20.0),
                entry("dan", 10.0),
                entry("eve", f64::NEG_INFINITY),
                map(&[
                    ("member", "ann".into()),
                    ("score", 5.into()),
                    ("op", "incr".into()),
                ]),
            ]),
        ],
    );
    assert_eq!(get(&many, "board"), &Value::from("lb"));
    let results = get(&many, "results").as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(get(&results[3], "score"), &Value::F64(f64::NEG_INFINITY));
    assert_eq!(get(&results[4], "score"), &Value::F64(35.0));
    let sd = c.call(
        "set_data",
        vec![
            "lb".into(),
            "bob".into(),
            map(&[("name", "Bob".into()), ("data", map(&[("lvl", 7.into())]))]),
        ],
    );
    assert_eq!(
        to_json(&sd),
        json!({"board": "lb", "member": "bob", "found": true})
    );
    c.call(
        "submit_many",
        vec![
            "src".into(),
            Value::Array(vec![entry("ann", 1.0), entry("zed", 2.0)]),
        ],
    );

    // ------------------------------------- reads, against HTTP's JSON
    let same = |rpc: Value, http: Json, what: &str| {
        assert_eq!(to_json(&rpc), http, "{what}: RPC and HTTP differ");
    };
    let mut c2 = p.client();
    same(c2.call("boards", vec![]), p.get("/v1/boards"), "boards");
    same(
        c2.call("board_info", vec!["lb".into()]),
        p.get("/v1/boards/lb"),
        "board_info",
    );
    same(
        c2.call(
            "top",
            vec![
                "lb".into(),
                map(&[
                    ("page", 1.into()),
                    ("page_size", 3.into()),
                    ("with_data", true.into()),
                ]),
            ],
        ),
        p.get("/v1/boards/lb/top?page=1&page_size=3&with_data=true"),
        "top",
    );
    same(
        c2.call("top", vec!["lb".into()]),
        p.get("/v1/boards/lb/top"),
        "top with defaults",
    );
    same(
        c2.call(
            "entry",
            vec!["lb".into(), "bob".into(), map(&[("page_size", 2.into())])],
        ),
        p.get("/v1/boards/lb/members/bob?page_size=2"),
        "entry",
    );
    same(
        c2.call("rank", vec!["lb".into(), "cat".into()]),
        p.get("/v1/boards/lb/rank/cat"),
        "rank",
    );
    same(
        c2.call("score", vec!["lb".into(), "eve".into()]),
        p.get("/v1/boards/lb/rank/eve"),
        "score",
    );
    same(
        c2.call(
            "count",
            vec![
                "lb".into(),
                map(&[("min", 10.into()), ("max", "(30".into())]),
            ],
        ),
        p.get("/v1/boards/lb/count?min=10&max=(30"),
        "count",
    );
    same(
        c2.call("count", vec!["lb".into()]),
        p.get("/v1/boards/lb/count"),
        "count all",
    );
    same(
        c2.call(
            "range_by_rank",
            vec![
                "lb".into(),
                2.into(),
                4.into(),
                map(&[("with_data", true.into())]),
            ],
        ),
        p.get("/v1/boards/lb/range/rank?start=2&count=3&with_data=true"),
        "range_by_rank",
    );
    same(
        c2.call(
            "range_by_rank",
            vec![
                "lb".into(),
                1.into(),
                2.into(),
                map(&[("from", "worst".into())]),
            ],
        ),
        p.get("/v1/boards/lb/range/rank?start=1&count=2&from=worst"),
        "range_by_rank from worst",
    );
    same(
        c2.call(
            "range_by_score",
            vec![
                "lb".into(),
                map(&[
                    ("min", "-inf".into()),
                    ("max", 30.into()),
                    ("offset", 1.into()),
                    ("limit", 2.into()),
                ]),
            ],
        ),
        p.get("/v1/boards/lb/range/score?min=-inf&max=30&offset=1&limit=2"),
        "range_by_score",
    );
    same(
        c2.call(
            "around",
            vec!["lb".into(), "cat".into(), map(&[("page_size", 3.into())])],
        ),
        p.get("/v1/boards/lb/around/cat?page_size=3"),
        "around",
    );
    same(
        c2.call("ranks", vec!["lb".into(), strs(&["dan", "nobody", "ann"])]),
        p.post(
            "/v1/boards/lb/ranks",
            &json!({"members": ["dan", "nobody", "ann"]}),
        ),
        "ranks",
    );
    same(
        c2.call("percentile", vec!["lb".into(), "cat".into()]),
        p.get("/v1/boards/lb/percentile/cat"),
        "percentile",
    );
    same(
        c2.call("score_at_percentile", vec!["lb".into(), 50.into()]),
        p.get("/v1/boards/lb/score_at_percentile?p=50"),
        "score_at_percentile",
    );
    let export = c2.call("export", vec!["lb".into()]);
    let lines: Vec<Json> = p
        .get_text("/v1/boards/lb/export")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(to_json(&export), Json::Array(lines), "export");

    // ------------------------------------------------- more writes
    let merged = c.call(
        "merge",
        vec![
            "sum".into(),
            strs(&["lb", "src"]),
            map(&[("aggregate", "max".into())]),
        ],
    );
    assert_eq!(to_json(&merged), json!({"board": "sum", "members": 6}));
    let inter = c.call(
        "intersect",
        vec![
            "both".into(),
            strs(&["lb", "src"]),
            map(&[("weights", Value::Array(vec![1.into(), 10.into()]))]),
        ],
    );
    assert_eq!(to_json(&inter), json!({"board": "both", "members": 1}));
    assert_eq!(
        get(&c.call("rank", vec!["both".into(), "ann".into()]), "score"),
        &Value::F64(45.0)
    );
    let imp = c.call(
        "import",
        vec![
            "imp".into(),
            Value::Array(vec![
                entry("a", 1.0),
                map(&[("member", "b".into()), ("score", "nan".into())]),
                // export's entries import as they are (rank is dropped).
                map(&[
                    ("member", "c".into()),
                    ("score", 3.into()),
                    ("rank", 1.into()),
                ]),
            ]),
        ],
    );
    assert_eq!(get(&imp, "imported"), &Value::from(2));
    assert_eq!(get(&imp, "failed"), &Value::from(1));
    let errs = get(&imp, "errors").as_array().unwrap();
    assert_eq!(to_json(&errs[0])["line"], json!(2));
    assert_eq!(to_json(&errs[0])["error"]["code"], json!("invalid_score"));
    let removed = c.call("remove", vec!["lb".into(), strs(&["dan", "nobody"])]);
    assert_eq!(to_json(&removed), json!({"board": "lb", "removed": 1}));
    let rr = c.call(
        "remove_range",
        vec![
            "lb".into(),
            map(&[
                ("by", "score".into()),
                ("min", "-inf".into()),
                ("max", "(0".into()),
            ]),
        ],
    );
    assert_eq!(to_json(&rr), json!({"board": "lb", "removed": 1}));
    let rr = c.call(
        "remove_range",
        vec!["lb".into(), map(&[("start", 1.into()), ("stop", 1.into())])],
    );
    assert_eq!(to_json(&rr), json!({"board": "lb", "removed": 1}));
    let reset = c.call("reset", vec!["lb".into()]);
    assert_eq!(get(&reset, "archived"), &Value::from(2));
    let archive = get(&reset, "archive").as_str().unwrap().to_string();
    assert!(archive.starts_with("lb@"), "{archive}");
    assert_eq!(
        get(
            &c.call("board_info", vec![archive.as_str().into()]),
            "read_only"
        ),
        &Value::from(true)
    );
    let del = c.call("board_delete", vec!["other".into()]);
    assert_eq!(to_json(&del), json!({"board": "other", "deleted": true}));
    let e = c.call_err("board_info", vec!["other".into()]);
    assert_eq!(e.code, "board_not_found");
    // Without API keys, auth accepts any key.
    assert_eq!(
        to_json(&c.call("auth", vec!["anything".into()])),
        json!({"scope": "admin"})
    );
    // Search answers as HTTP's search does; a query with no word matches
    // nothing.
    let r = to_json(&c.call("search", vec!["lb".into(), "ann".into()]));
    assert_eq!(
        (&r["board"], &r["query"], &r["offset"], &r["limit"]),
        (&json!("lb"), &json!("ann"), &json!(0), &json!(25))
    );
    assert_eq!(
        r["total"].as_u64(),
        Some(r["entries"].as_array().unwrap().len() as u64),
        "{r}"
    );
    let r = to_json(&c.call("search", vec!["lb".into(), " - ".into()]));
    assert_eq!((&r["total"], &r["entries"]), (&json!(0), &json!([])), "{r}");
}

#[test]
fn errors_carry_the_http_codes_and_messages() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    c.call("submit", vec!["lb".into(), entry("ann", 1.0)]);
    let e = c.call_err("nope", vec![]);
    assert_eq!(
        e,
        RpcError {
            code: "not_found".into(),
            message: "unknown method \"nope\"".into()
        }
    );
    // A missing member: HTTP's code and text.
    let e = c.call_err("rank", vec!["lb".into(), "zed".into()]);
    let http = p.get("/v1/boards/lb/rank/zed");
    assert_eq!(e.code, "member_not_found");
    assert_eq!(json!(e.message), http["error"]["message"]);
    let e = c.call_err("top", vec!["nosuch".into()]);
    let http = p.get("/v1/boards/nosuch/top");
    assert_eq!(e.code, "board_not_found");
    assert_eq!(json!(e.message), http["error"]["message"]);
    // Wrong types, arity, options.
    assert_eq!(
        c.call_err("rank", vec![1.into(), "ann".into()]).code,
        "malformed_request"
    );
    assert_eq!(
        c.call_err("rank", vec!["lb".into()]).code,
        "malformed_request"
    );
    assert_eq!(c.call_err("rank", vec![]).code, "malformed_request");
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("pagesize", 2.into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("page", 0.into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("page_size", "x".into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("submit", vec!["lb".into(), entry("x", f64::NAN)])
            .code,
        "invalid_score"
    );
    assert_eq!(
        c.call_err(
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "x".into()), ("score", Value::Nil)])
            ]
        )
        .code,
        "invalid_score"
    );
    assert_eq!(
        c.call_err(
            "submit_many",
            vec!["lb".into(), Value::Array(vec![entry("y", 1.0), 5.into()])]
        )
        .code,
        "malformed_request"
    );
    assert_eq!(
        c.call_err("submit", vec!["".into(), entry("x", 1.0)]).code,
        "invalid_board_name"
    );
    assert_eq!(
        c.call_err(
            "submit",
            vec![
                "lb".into(),
                map(&[
                    ("member", "x".into()),
                    ("score", 1.into()),
                    ("data", 5.into())
                ])
            ]
        )
        .code,
        "invalid_data"
    );
    assert_eq!(
        c.call_err("count", vec!["lb".into(), map(&[("min", "abc".into())])])
            .code,
        "invalid_argument"
    );
    // A bad envelope with a readable id is answered; the connection goes on.
    c.send(&enc(&Value::Array(vec![
        0.into(),
        77.into(),
        "rank".into(),
        "not params".into(),
    ])));
    let (id, r) = c.response();
    assert_eq!(
        (id, r.unwrap_err().code.as_str()),
        (77, "malformed_request")
    );
    // Nothing was written by the refused calls.
    assert_eq!(
        to_json(&c.call("count", vec!["lb".into()])),
        json!({"board": "lb", "count": 1})
    );
}

#[test]
fn auth_scopes_follow_the_http_routes() {
    let read = "readkey-0123456789abcdef";
    let write = "writekey-0123456789abcdef";
    let admin = "adminkey-0123456789abcdef";
    let p = Podium::start(&[
        "--api-key",
        &format!("{read}:read"),
        "--api-key",
        &format!("{write}:write"),
        "--api-key",
        &format!("{admin}:admin"),
    ]);
    let mut c = p.client();
    assert_eq!(c.call_err("boards", vec![]).code, "unauthorized");
    assert_eq!(
        c.call_err("auth", vec!["wrong".into()]).code,
        "unauthorized"
    );
    // Unknown methods are told apart before auth, as HTTP's unknown routes.
    assert_eq!(c.call_err("nope", vec![]).code, "not_found");
    assert_eq!(
        to_json(&c.call("auth", vec![read.into()])),
        json!({"scope": "read"})
    );
    c.call("boards", vec![]);
    let e = c.call_err("submit", vec!["lb".into(), entry("a", 1.0)]);
    assert_eq!(e.code, "forbidden");
    assert_eq!(
        e.message,
        "this request needs a key of scope write; this key has scope read"
    );
    c.call("auth", vec![write.into()]);
    c.call("submit", vec!["lb".into(), entry("a", 1.0)]);
    c.call("ranks", vec!["lb".into(), strs(&["a"])]);
    for (m, params) in [
        ("board_create", vec!["x".into()]),
        ("board_update", vec!["x".into()]),
        ("reset", vec!["lb".into()]),
        ("merge", vec!["x".into(), strs(&["lb"])]),
        ("board_delete", vec!["lb".into()]),
    ] {
        assert_eq!(c.call_err(m, params).code, "forbidden", "{m}");
    }
    c.call("auth", vec![admin.into()]);
    c.call("board_create", vec!["x".into()]);
    c.call("board_delete", vec!["x".into()]);
    // A wrong key later leaves the connection's scope as it was.
    assert_eq!(
        c.call_err("auth", vec!["wrong".into()]).code,
        "unauthorized"
    );
    c.call("board_create", vec!["y".into()]);
    // Before auth, a frame over 64 KiB is refused and the connection closed.
    let mut d = p.client();
    let big = "m".repeat(100_000);
    d.send(&request(5, "submit", vec!["lb".into(), entry(&big, 1.0)]));
    let (id, r) = d.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (5, "payload_too_large"));
    assert!(d.closed());
}

/// A board with sort keys over MessagePack: values go in and come back as
/// MessagePack integers and floats (no strings, whatever their size), in
/// submit results, pages read in place, exports and `resort_status`.
#[test]
fn sort_keys_travel_as_msgpack_numbers() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let sort = Value::Array(vec![
        map(&[("key", "xp".into()), ("type", "int".into())]),
        map(&[("key", "t".into()), ("order", "asc".into())]),
    ]);
    c.call("board_create", vec!["k".into(), map(&[("sort", sort)])]);
    let big = (1i64 << 53) + 1;
    let r = c.call(
        "submit",
        vec![
            "k".into(),
            map(&[
                ("member", "a".into()),
                ("scores", map(&[("xp", big.into()), ("t", 1.5.into())])),
            ]),
        ],
    );
    assert_eq!(
        get(&r, "scores"),
        &map(&[("xp", big.into()), ("t", 1.5.into())])
    );
    c.call(
        "submit_many",
        vec![
            "k".into(),
            Value::Array(vec![
                map(&[
                    ("member", "b".into()),
                    (
                        "scores",
                        map(&[("xp", (big - 1).into()), ("t", 0.5.into())]),
                    ),
                ]),
                map(&[
                    ("member", "c".into()),
                    ("scores", map(&[("xp", big.into()), ("t", 1.0.into())])),
                ]),
            ]),
        ],
    );
    let top = c.call("top", vec!["k".into()]);
    let Value::Array(entries) = get(&top, "entries").clone() else {
        panic!("{top}");
    };
    let order: Vec<(Value, Value)> = entries
        .iter()
        .map(|e| {
            (
                get(e, "member").clone(),
                get(get(e, "scores"), "xp").clone(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("c".into(), big.into()),
            ("a".into(), big.into()),
            ("b".into(), (big - 1).into())
        ]
    );
    let st = c.call("resort_status", vec!["k".into()]);
    assert_eq!(get(&st, "running"), &Value::from(false));
    // The HTTP API carries the same values, the large ones as strings.
    let http = p.get("/v1/boards/k/top");
    assert_eq!(http["entries"][0]["scores"]["xp"], json!(big.to_string()));
}
