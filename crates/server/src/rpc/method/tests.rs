//! Unit tests of reading methods' params into calls, with HTTP's error
//! codes.

use super::*;

fn map(kv: &[(&str, Value)]) -> Value {
    Value::Map(
        kv.iter()
            .map(|(k, v)| (Value::from(*k), v.clone()))
            .collect(),
    )
}

fn call(name: &str, params: Vec<Value>) -> Result<Call, ApiError> {
    parse(Method::from_name(name).expect(name), params)
}

#[track_caller]
fn err(name: &str, params: Vec<Value>) -> (Code, String) {
    let e = call(name, params).unwrap_err();
    (e.code, e.message)
}

#[test]
fn every_method_has_one_row() {
    for &(name, m, op) in METHODS {
        assert_eq!(Method::from_name(name), Some(m));
        assert_eq!(m.name(), name);
        assert_eq!(m.op(), Some(op));
    }
    assert_eq!(Method::Top.scope(), Some(Scope::Read));
    assert_eq!(Method::Score.scope(), Some(Scope::Read));
    assert_eq!(Method::Submit.scope(), Some(Scope::Write));
    assert_eq!(Method::Import.scope(), Some(Scope::Write));
    assert_eq!(Method::BoardCreate.scope(), Some(Scope::Admin));
    assert_eq!(Method::Reset.scope(), Some(Scope::Admin));
    assert_eq!(Method::Merge.scope(), Some(Scope::Admin));
    assert_eq!(Method::Auth.scope(), None);
    assert_eq!(Method::from_name("nope"), None);
}

#[test]
fn submit_entries() {
    let c = call(
        "submit",
        vec![
            "lb".into(),
            map(&[
                ("member", "ann".into()),
                ("score", 12.into()),
                ("op", "incr".into()),
                ("only", "existing".into()),
                ("cond", "gt".into()),
                ("name", "Ann".into()),
                (
                    "data",
                    map(&[("lvl", 3.into()), ("tags", Value::Array(vec!["a".into()]))]),
                ),
            ]),
        ],
    )
    .unwrap();
    let Call::Submit(ops::Submit { board, entry }) = c else {
        panic!()
    };
    assert_eq!(board, "lb");
    assert_eq!(entry.score, Score(12.0));
    assert_eq!(entry.op.as_deref(), Some("incr"));
    assert_eq!(entry.only, Some(podium_core::api::Only::Existing));
    assert_eq!(entry.cond, Some(podium_core::api::CondIn::Gt));
    assert_eq!(
        entry.data,
        Some(serde_json::json!({"lvl": 3, "tags": ["a"]}))
    );
    // Scores: floats, ints, infinities as floats or strings.
    for (v, want) in [
        (Value::F64(f64::NEG_INFINITY), f64::NEG_INFINITY),
        (Value::F32(1.5), 1.5),
        (Value::from(-3), -3.0),
        (Value::from("+inf"), f64::INFINITY),
    ] {
        let Call::Submit(ops::Submit { entry, .. }) = call(
            "submit",
            vec!["lb".into(), map(&[("member", "a".into()), ("score", v)])],
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(entry.score.0, want);
    }
    let nan = map(&[("member", "a".into()), ("score", f64::NAN.into())]);
    assert_eq!(err("submit", vec!["lb".into(), nan]).0, Code::InvalidScore);
    let s = map(&[("member", "a".into()), ("score", "abc".into())]);
    assert_eq!(err("submit", vec!["lb".into(), s]).0, Code::InvalidScore);
    let unknown = map(&[
        ("member", "a".into()),
        ("score", 1.into()),
        ("scroe", 2.into()),
    ]);
    let (code, msg) = err("submit", vec!["lb".into(), unknown]);
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.contains("scroe"), "{msg}");
    let missing = map(&[("score", 1.into())]);
    assert_eq!(
        err("submit", vec!["lb".into(), missing]).0,
        Code::MalformedRequest
    );
    let (code, msg) = err(
        "submit_many",
        vec!["lb".into(), Value::Array(vec![1.into()])],
    );
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.starts_with("entry 0: an entry must be a map"), "{msg}");
}

#[test]
fn positional_errors() {
    let (code, msg) = err("rank", vec!["lb".into()]);
    assert_eq!(code, Code::MalformedRequest);
    assert_eq!(msg, "rank takes 2 to 3 params (board, member), got 1");
    let (code, msg) = err("rank", vec![5.into(), "a".into()]);
    assert_eq!(code, Code::MalformedRequest);
    assert_eq!(
        msg,
        "rank: param 1 (board) must be a string, got an integer"
    );
    assert_eq!(
        err("rank", vec!["".into(), "a".into()]).0,
        Code::InvalidBoardName
    );
    assert_eq!(
        err("rank", vec!["a\nb".into(), "a".into()]).0,
        Code::InvalidBoardName
    );
    let bad_utf8 = rmpv::decode::read_value(&mut &[0xa2u8, 0xff, 0xfe][..]).unwrap();
    let (code, msg) = err("rank", vec![bad_utf8, "a".into()]);
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.contains("UTF-8"), "{msg}");
    let (code, _) = err("range_by_rank", vec!["lb".into(), (-1).into(), 3.into()]);
    assert_eq!(code, Code::InvalidArgument);
    let (code, _) = err("score_at_percentile", vec!["lb".into(), "x".into()]);
    assert_eq!(code, Code::InvalidArgument);
    assert_eq!(
        err("remove", vec!["lb".into(), "a".into()]).0,
        Code::MalformedRequest
    );
    assert_eq!(
        err("remove", vec!["lb".into(), Value::Array(vec![1.into()])]).0,
        Code::MalformedRequest
    );
    let (code, msg) = err("boards", vec![1.into()]);
    assert_eq!(code, Code::MalformedRequest, "{msg}");
    // Binary holding UTF-8 passes as a string.
    assert!(call("rank", vec![Value::Binary(b"lb".to_vec()), "a".into()]).is_ok());
}

#[test]
fn options() {
    let Call::Top(ops::Top {
        page,
        page_size,
        with_data,
        ..
    }) = call(
        "top",
        vec![
            "lb".into(),
            map(&[
                ("page", 2.into()),
                ("page_size", 10.into()),
                ("with_data", true.into()),
            ]),
        ],
    )
    .unwrap()
    else {
        panic!()
    };
    assert_eq!((page, page_size, with_data), (Some(2), Some(10), true));
    // nil and absent options are the defaults.
    assert!(call("top", vec!["lb".into(), Value::Nil]).is_ok());
    assert!(call("top", vec!["lb".into(), map(&[("page", Value::Nil)])]).is_ok());
    let (code, msg) = err("top", vec!["lb".into(), map(&[("pgae", 1.into())])]);
    assert_eq!(code, Code::InvalidArgument);
    assert_eq!(
        msg,
        "top: unknown option \"pgae\"; expected page, page_size, with_data"
    );
    let (code, msg) = err("top", vec!["lb".into(), map(&[("page", "x".into())])]);
    assert_eq!(code, Code::InvalidArgument);
    assert_eq!(
        msg,
        "top: page must be a non-negative integer, got a string"
    );
    assert_eq!(
        err("top", vec!["lb".into(), map(&[("with_data", 1.into())])]).0,
        Code::InvalidArgument
    );
    assert_eq!(
        err("top", vec!["lb".into(), 1.into()]).0,
        Code::MalformedRequest
    );
    let (_, msg) = err("export", vec!["lb".into(), map(&[("x", 1.into())])]);
    assert_eq!(msg, "export: unknown option \"x\"; it takes none");
}

#[test]
fn bounds_take_numbers_and_redis_syntax() {
    let Call::Count(ops::Count { bounds, .. }) = call(
        "count",
        vec![
            "lb".into(),
            map(&[("min", "(5".into()), ("max", "+inf".into())]),
        ],
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        (bounds.min, bounds.min_exclusive),
        (Some(Num::Int(5)), true)
    );
    assert_eq!(
        (bounds.max, bounds.max_exclusive),
        (Some(Num::Float(f64::INFINITY)), false)
    );
    let Call::RangeByScore(ops::RangeByScore {
        bounds,
        from_worst,
        offset,
        limit,
        ..
    }) = call(
        "range_by_score",
        vec![
            "lb".into(),
            map(&[
                ("min", 1.into()),
                ("max", 2.5.into()),
                ("from", "worst".into()),
                ("offset", 3.into()),
                ("limit", 4.into()),
            ]),
        ],
    )
    .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (bounds.min, bounds.max),
        (Some(Num::Int(1)), Some(Num::Float(2.5)))
    );
    assert!(from_worst);
    assert_eq!((offset, limit), (Some(3), Some(4)));
    let (code, msg) = err("count", vec!["lb".into(), map(&[("min", f64::NAN.into())])]);
    assert_eq!(code, Code::InvalidArgument);
    assert!(msg.starts_with("min must be a number"), "{msg}");
    assert_eq!(
        err("count", vec!["lb".into(), map(&[("max", "abc".into())])]).0,
        Code::InvalidArgument
    );
    assert_eq!(
        err(
            "range_by_score",
            vec!["lb".into(), map(&[("from", "top".into())])]
        )
        .0,
        Code::InvalidArgument
    );
}

#[test]
fn remove_range_by_rank_or_score() {
    let r = |o: Value| call("remove_range", vec!["lb".into(), o]);
    assert!(matches!(
        r(map(&[("start", 1.into()), ("stop", 3.into())])).unwrap(),
        Call::RemoveRange(ops::RemoveRange {
            by: RangeBy::Rank { start: 1, stop: 3 },
            ..
        })
    ));
    assert!(matches!(
        r(map(&[
            ("by", "score".into()),
            ("min", "-inf".into()),
            ("max", 3.into())
        ]))
        .unwrap(),
        Call::RemoveRange(ops::RemoveRange {
            by: RangeBy::Score(_),
            ..
        })
    ));
    for bad in [
        map(&[("start", 1.into())]),
        map(&[("by", "score".into()), ("min", 1.into())]),
        map(&[
            ("by", "score".into()),
            ("start", 1.into()),
            ("min", 1.into()),
            ("max", 2.into()),
        ]),
        map(&[("start", 1.into()), ("stop", 2.into()), ("min", 1.into())]),
        map(&[("by", "name".into())]),
        map(&[("from", "worst".into())]),
    ] {
        assert_eq!(
            r(bad.clone()).unwrap_err().code,
            Code::InvalidArgument,
            "{bad}"
        );
    }
}

#[test]
fn bodies_and_batches() {
    let Call::SetData(ops::SetData { name, data, .. }) = call(
        "set_data",
        vec![
            "lb".into(),
            "ann".into(),
            map(&[("name", "Ann".into()), ("data", map(&[("a", 1.into())]))]),
        ],
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(name.as_deref(), Some("Ann"));
    assert_eq!(data, Some(serde_json::json!({"a": 1})));
    assert_eq!(
        err(
            "set_data",
            vec!["lb".into(), "ann".into(), map(&[("nmae", "x".into())])]
        )
        .0,
        Code::MalformedRequest
    );
    let Call::Combine(ops::Combine {
        dest,
        req,
        intersect,
    }) = call(
        "intersect",
        vec![
            "dst".into(),
            Value::Array(vec!["a".into(), "b".into()]),
            map(&[
                ("aggregate", "max".into()),
                ("weights", Value::Array(vec![1.into(), 0.5.into()])),
            ]),
        ],
    )
    .unwrap()
    else {
        panic!()
    };
    assert_eq!(dest, "dst");
    assert!(intersect);
    assert_eq!(req.sources, ["a", "b"]);
    assert_eq!(req.weights, Some(vec![1.0, 0.5]));
    let Call::BoardCreate(ops::CreateBoard { config, .. }) = call(
        "board_create",
        vec![
            "lb".into(),
            map(&[("order", "asc".into()), ("max_members", 10.into())]),
        ],
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        config,
        serde_json::json!({"order": "asc", "max_members": 10})
    );
    let Call::BoardUpdate(ops::PutBoard { config, .. }) =
        call("board_update", vec!["lb".into()]).unwrap()
    else {
        panic!()
    };
    assert_eq!(config, serde_json::json!({}));
    // import: bad entries fail alone; export's rank is accepted.
    let Call::Import { entries, .. } = call(
        "import",
        vec![
            "lb".into(),
            Value::Array(vec![
                map(&[
                    ("member", "a".into()),
                    ("score", 1.into()),
                    ("rank", 1.into()),
                ]),
                map(&[("member", "b".into()), ("score", f64::NAN.into())]),
                5.into(),
            ]),
        ],
    )
    .unwrap() else {
        panic!()
    };
    assert!(entries[0].is_ok());
    let (m, e) = entries[1].as_ref().unwrap_err();
    assert_eq!((m.as_deref(), e.code), (Some("b"), Code::InvalidScore));
    assert_eq!(
        entries[2].as_ref().unwrap_err().1.code,
        Code::MalformedRequest
    );
}

#[test]
fn search_and_auth() {
    assert!(matches!(
        call("search", vec!["lb".into(), "ann".into()]).unwrap(),
        Call::Search(ops::Search { board, query, limit: None, .. }) if board == "lb" && query == "ann"
    ));
    let (code, _) = err("search", vec!["lb".into()]);
    assert_eq!(code, Code::MalformedRequest);
    assert!(matches!(call("auth", vec!["k".into()]).unwrap(), Call::Auth { key } if key == "k"));
}

/// Score strings are read as over HTTP: out of range, padded, empty and
/// NaN refused with the same texts; an explicit infinity kept.
#[test]
fn score_strings_are_refused_as_over_http() {
    let submit = |score: Value| {
        call(
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "a".into()), ("score", score)]),
            ],
        )
    };
    for (text, needle) in [
        ("1e400", "score \"1e400\" is out of range of a double"),
        ("-1e999", "score \"-1e999\" is out of range of a double"),
        (" 5", "score \" 5\" has white space around the number"),
        ("5 ", "score \"5 \" has white space around the number"),
        ("", "score is empty"),
    ] {
        let e = submit(text.into()).unwrap_err();
        assert_eq!(e.code, Code::InvalidScore, "{text:?}: {}", e.message);
        assert!(e.message.starts_with(needle), "{text:?}: {}", e.message);
    }
    let (_, msg) = err(
        "range_by_score",
        vec![
            "lb".into(),
            map(&[("min", "1e400".into()), ("max", "+inf".into())]),
        ],
    );
    assert!(msg.contains("out of range of a double"), "{msg}");
    let Ok(Call::Submit(ops::Submit { entry, .. })) = submit("-inf".into()) else {
        panic!("an explicit infinity is a score")
    };
    assert_eq!(entry.score.0, f64::NEG_INFINITY);
}

/// A key repeated in any map of a request is refused, as in an HTTP
/// body, naming it.
#[test]
fn repeated_map_keys_are_refused() {
    let twice = Value::Map(vec![
        ("member".into(), "a".into()),
        ("score".into(), 1.into()),
        ("score".into(), 9.into()),
    ]);
    let (code, msg) = err("submit", vec!["lb".into(), twice.clone()]);
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.contains("key \"score\" is repeated"), "{msg}");
    let (code, msg) = err("submit_many", vec!["lb".into(), Value::Array(vec![twice])]);
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.contains("key \"score\" is repeated"), "{msg}");
    let data = Value::Map(vec![("k".into(), 1.into()), ("k".into(), 2.into())]);
    let (code, msg) = err(
        "submit",
        vec![
            "lb".into(),
            map(&[("member", "a".into()), ("score", 1.into()), ("data", data)]),
        ],
    );
    assert_eq!(code, Code::MalformedRequest);
    assert!(msg.contains("key \"k\" is repeated"), "{msg}");
    // A large map is checked too.
    let mut big: Vec<(Value, Value)> = (0..100)
        .map(|i| (Value::from(format!("k{i}")), Value::from(i)))
        .collect();
    big.push(("k7".into(), 0.into()));
    let (_, msg) = err(
        "submit",
        vec![
            "lb".into(),
            map(&[
                ("member", "a".into()),
                ("score", 1.into()),
                ("data", Value::Map(big)),
            ]),
        ],
    );
    assert!(msg.contains("key \"k7\" is repeated"), "{msg}");
}

#[test]
fn subscribe_options_become_a_checked_filter() {
    let Ok(Call::Subscribe(s)) = call(
        "subscribe",
        vec![
            "lb".into(),
            map(&[
                ("top", 10.into()),
                (
                    "members",
                    Value::Array(vec!["b".into(), "a,c".into(), "b".into()]),
                ),
                ("snapshot", true.into()),
                ("since", "5-1".into()),
            ]),
        ],
    ) else {
        panic!("not a subscription")
    };
    assert_eq!(s.board, "lb");
    assert_eq!(s.filter.top, Some(10));
    assert_eq!(s.filter.members, ["a,c", "b"]);
    assert!(s.filter.snapshot);
    assert_eq!(s.since, Some(podium_core::events::EventId::new(5, 1)));
    // No options, or nil ones: every change, from now.
    for params in [
        vec!["lb".into()],
        vec!["lb".into(), Value::Nil],
        vec![
            "lb".into(),
            map(&[("top", Value::Nil), ("since", Value::Nil)]),
        ],
    ] {
        let Ok(Call::Subscribe(s)) = call("subscribe", params) else {
            panic!("not a subscription")
        };
        assert!(s.filter.everything() && !s.filter.snapshot && s.since.is_none());
    }
    assert_eq!(Method::Subscribe.scope(), Some(Scope::Read));
    assert_eq!(Method::Unsubscribe.scope(), Some(Scope::Read));
    assert!(Method::Unsubscribe.runs_as_notification());
    assert!(!Method::Subscribe.runs_as_notification());
}

#[test]
fn bad_subscriptions_are_refused_with_the_event_routes_words() {
    let sub = |o: Value| err("subscribe", vec!["lb".into(), o]);
    for (o, text) in [
        (
            map(&[("top", 0.into())]),
            "top must be between 1 and 1000 (got 0)",
        ),
        (
            map(&[("top", 1001.into())]),
            "top must be between 1 and 1000 (got 1001)",
        ),
        (
            map(&[("top", (-1).into())]),
            "top must be between 1 and 1000 (got -1)",
        ),
        (
            map(&[("top", (1u64 << 33).into())]),
            "top must be between 1 and 1000 (got 8589934592)",
        ),
        (
            map(&[("top", 2.5.into())]),
            "top must be between 1 and 1000 (got a float)",
        ),
        (
            map(&[("since", "yesterday".into())]),
            "\"yesterday\" is not an event id (LSN-N, e.g. 1042-0)",
        ),
        (
            map(&[("since", 7.into())]),
            "subscribe: since must be a string",
        ),
        (
            map(&[("snapshot", "yes".into())]),
            "subscribe: snapshot must be true or false, got a string",
        ),
        (
            map(&[("members", "me".into())]),
            "subscribe: members must be an array of strings, got a string",
        ),
        (
            map(&[("members", Value::Array(vec![1.into()]))]),
            "subscribe: members item 0 is not a string of valid UTF-8",
        ),
        (
            map(&[("colour", "red".into())]),
            "subscribe: unknown option \"colour\"; expected top, members, snapshot, since",
        ),
    ] {
        assert_eq!(
            sub(o.clone()),
            (Code::InvalidArgument, text.to_string()),
            "{o}"
        );
    }
    let many = Value::Array((0..1001).map(|i| Value::from(format!("m{i}"))).collect());
    let (code, msg) = sub(map(&[("members", many)]));
    assert_eq!(code, Code::InvalidArgument);
    assert!(msg.contains("at most 1000 members"), "{msg}");
    let (code, _) = sub(map(&[("members", Value::Array(vec!["".into()]))]));
    assert_ne!(code, Code::Internal);
    let (code, _) = err("subscribe", vec!["bad\x07name".into()]);
    assert_eq!(code, Code::InvalidBoardName);
    let (code, _) = err("subscribe", vec![]);
    assert_eq!(code, Code::MalformedRequest);
    let (code, _) = sub("top".into());
    assert_eq!(code, Code::MalformedRequest);

    assert!(matches!(
        call("unsubscribe", vec![3.into()]),
        Ok(Call::Unsubscribe { id: 3 })
    ));
    let (code, msg) = err("unsubscribe", vec!["x".into()]);
    assert_eq!(code, Code::InvalidArgument);
    assert!(msg.contains("must be a non-negative integer"), "{msg}");
    let (code, _) = err("unsubscribe", vec![]);
    assert_eq!(code, Code::MalformedRequest);
}
