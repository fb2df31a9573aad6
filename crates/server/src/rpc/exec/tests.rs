//! Unit tests of running calls: results byte for byte against the API's
//! shapes, streams, imports, auth.

use super::super::method::ImportEntry;
use super::*;
use podium_core::api::SubmitItem;

/// `submit_many`'s result as the API's shapes encode it, which
/// [`encode_submit_many`] must match byte for byte.
#[derive(Serialize)]
struct SubmitManyOut<'a> {
    board: &'a str,
    results: &'a [SubmitItem],
}
use podium_core::api::{RangeOut, Score, SubmitIn};
use podium_store::service::Service;
use rmpv::Value;

fn run(svc: &Arc<Service>, call: Call) -> Res {
    let be: Arc<dyn Backend> = Arc::new(podium_store::EmbeddedBackend::new(svc.clone()));
    match execute(&be, call) {
        Exec::Ready(r) => r,
        Exec::Later(f) => {
            futures_util::FutureExt::now_or_never(f).expect("in-memory calls do not wait")
        }
        Exec::Stream(_) | Exec::Deferred(_) => panic!("unexpected stream"),
    }
}

/// The in-place encoder writes exactly the bytes rmp-serde gives for
/// the DTOs (`EntryOut` with and without data, `export`'s lines), for
/// names, data, ±inf, fractions, big ranks, members that are not
/// UTF-8, not ASCII or longer than 31 bytes, in every ranking mode and
/// both directions.
#[test]
fn in_place_entries_encode_as_the_dtos() {
    use podium_engine::{Board, BoardConfig, Ranking, Submit};
    for ranking in [Ranking::Unique, Ranking::Dense, Ranking::Competition] {
        let mut b = Board::new(BoardConfig {
            ranking,
            ..BoardConfig::default()
        })
        .unwrap();
        let mut subs = Vec::new();
        let ids: Vec<Vec<u8>> = (0..300u32)
            .map(|i| match i % 7 {
                0 => vec![0xff, 0xfe, i as u8],
                // Past the one-byte header, and not ASCII.
                1 => format!("{i:0>40}").into_bytes(),
                2 => format!("é{i}").into_bytes(),
                _ => format!("m{i}").into_bytes(),
            })
            .collect();
        let names: Vec<String> = (0..300).map(|i| format!("Name {i}")).collect();
        let datas: Vec<String> = (0..300)
            .map(|i| format!(r#"{{"lvl":{i},"tags":["a",{{"x":null}}]}}"#))
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let score = match i % 11 {
                0 => f64::INFINITY,
                1 => f64::NEG_INFINITY,
                2 => 0.5 + i as f64,
                _ => (i / 3) as f64 * 1e12,
            };
            let mut s = Submit::new(id, score);
            if i % 3 == 0 {
                s.name = Some(&names[i]);
            }
            match i % 5 {
                0 => s.data = Some(&datas[i]),
                1 => s.data = Some(r#"{"s":"é\u0000","f":1.5,"n":-3}"#),
                _ => {}
            }
            subs.push(s);
        }
        for r in b.submit_many(&subs).unwrap() {
            r.unwrap();
        }
        for backward in [false, true] {
            let from = if backward { b.len() - 1 } else { 0 };
            let want = if backward {
                b.range_by_rank(1, b.len() as u64, true)
            } else {
                b.entries_from(0, b.len())
            };
            for with_data in [false, true] {
                let mut got = Vec::new();
                let n = b.visit(from, b.len(), backward, |e| {
                    encode_entry_ref(&mut got, &e, with_data)
                });
                assert_eq!(n, want.len());
                let mut expect = Vec::new();
                for e in &want {
                    let o = podium_core::api::entry_out(e, &[], with_data);
                    rmp_serde::encode::write_named(&mut expect, &o).unwrap();
                }
                assert_eq!(
                    got, expect,
                    "{ranking:?} backward={backward} data={with_data}"
                );
            }
        }
    }
}

/// The bare-entry fast path at every seam of its fixed-size stores:
/// ids of every length up to the fixstr limit and past it, ASCII or
/// not (a high byte at either end of each load), ranks at each integer
/// width's bounds, special scores; entries appended after others, as
/// in a chunk. Byte for byte the DTO's encoding.
#[test]
fn bare_entries_encode_as_the_dto_at_every_seam() {
    let mut ids: Vec<Vec<u8>> = (0..40).map(|n| vec![b'a' + (n % 26) as u8; n]).collect();
    for n in [1, 3, 4, 7, 8, 15, 16, 31] {
        for at in [0, n / 2, n - 1] {
            let mut id = vec![b'x'; n];
            id[at] = 0xc3;
            ids.push(id.clone());
            if at + 1 < n {
                id[at + 1] = 0xa9; // "é": valid UTF-8, not ASCII
                ids.push(id);
            }
        }
    }
    let ranks = [
        0,
        1,
        127,
        128,
        255,
        256,
        65_535,
        65_536,
        u64::from(u32::MAX),
        1 << 32,
        u64::MAX,
    ];
    let scores = [0.0, -0.0, 1.5, -3e300, f64::INFINITY, f64::NEG_INFINITY];
    let (mut got, mut expect) = (Vec::new(), Vec::new());
    for (i, id) in ids.iter().enumerate() {
        for (j, &rank) in ranks.iter().enumerate() {
            let score = scores[(i + j) % scores.len()];
            let e = podium_engine::EntryRef {
                member: id,
                score,
                scores: None,
                keys: &[],
                rank,
                name: None,
                data: Some(r#"{"x":1}"#),
            };
            encode_entry_ref(&mut got, &e, false);
            let o = podium_core::api::entry_out(
                &podium_engine::Entry {
                    member: id.clone(),
                    score,
                    scores: None,
                    rank,
                    name: None,
                    data: None,
                },
                &[],
                false,
            );
            rmp_serde::encode::write_named(&mut expect, &o).unwrap();
            assert_eq!(got, expect, "id {id:?} rank {rank}");
        }
    }
}

/// An export whose members' `data` are long strings (the blob shape,
/// msgpack::json's fast path: plain, with escapes, not ASCII, a control
/// character escaped), read in chunks of every size from 1 to 7 entries
/// as the connection streams them, is byte for byte the DTOs' encoding.
#[test]
fn long_string_data_streams_as_the_dtos() {
    use podium_engine::{Board, BoardConfig, Submit};
    let mut b = Board::new(BoardConfig {
        max_data_bytes: 1 << 20,
        ..BoardConfig::default()
    })
    .unwrap();
    let ids: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
    let datas: Vec<String> = (0..40usize)
        .map(|i| {
            let mut s: String = (0..3000 + i * 97)
                .map(|k| char::from(b'a' + ((i + k) % 26) as u8))
                .collect();
            match i % 5 {
                1 => s.insert_str(i * 13, r#"\"\\\n\u00e9\ud83d\ude00"#),
                2 => s.insert_str(i * 31, "é😀"),
                3 => s.push_str(r"\u0001"),
                _ => {}
            }
            let d = format!(r#"{{"blob":"{s}","n":{i}}}"#);
            serde_json::from_str::<serde_json::Value>(&d).unwrap();
            d
        })
        .collect();
    let subs: Vec<Submit> = ids
        .iter()
        .zip(&datas)
        .enumerate()
        .map(|(i, (m, d))| Submit {
            data: Some(d),
            ..Submit::new(m.as_bytes(), i as f64)
        })
        .collect();
    for r in b.submit_many(&subs).unwrap() {
        r.unwrap();
    }
    let mut expect = Vec::new();
    for e in &b.entries_from(0, b.len()) {
        rmp_serde::encode::write_named(&mut expect, &podium_core::api::entry_out(e, &[], true))
            .unwrap();
    }
    let svc = Service::in_memory();
    svc.store().insert("b", b).unwrap();
    for chunk in 1..=7 {
        let mut got = Vec::new();
        let mut done = 0;
        while done < 40 {
            let c = visit_chunk(&svc, "b", done, chunk, false, true).unwrap();
            assert!(c.count > 0);
            done += c.count as u64;
            got.extend_from_slice(&c.bytes);
        }
        assert_eq!(got, expect, "chunks of {chunk}");
    }
}

/// `submit_many`'s in-place result writes exactly the bytes rmp-serde
/// gives for `{board, results: [SubmitItem]}`: created, updated,
/// unchanged and evicted members, absent ranks and scores, per-entry
/// errors, long members.
#[test]
fn submit_many_results_encode_as_the_dtos() {
    let setup = || {
        let svc = Arc::new(Service::in_memory());
        let config = serde_json::json!({"max_members": 40, "max_score": 1000.0});
        run(
            &svc,
            Call::BoardCreate(ops::CreateBoard {
                board: "lb".into(),
                config,
            }),
        )
        .unwrap();
        svc
    };
    let entries: Vec<SubmitIn> = (0..120u32)
        .map(|i| {
            let member = match i % 9 {
                0 => "x".repeat(40 + i as usize),
                _ => format!("m{}", i % 50),
            };
            let mut e = SubmitIn::new(member, f64::from(i % 37) * 10.5 - 100.0);
            match i % 6 {
                0 => e.op = Some("incr".into()),
                1 => e.op = Some("best".into()),
                2 => e.only = Some(podium_core::api::Only::Existing),
                3 => e.score = Score(f64::NEG_INFINITY),
                _ => {}
            }
            if i % 13 == 0 {
                // An increment leaving the bounds fails alone.
                e.op = Some("incr".into());
                e.score = Score(5000.0);
            }
            e
        })
        .collect();
    let (a, b) = (setup(), setup());
    let items = futures_util::FutureExt::now_or_never(a.submit("lb", &entries))
        .expect("in memory")
        .unwrap();
    assert!(items.iter().any(|i| matches!(i, SubmitItem::Err { .. })));
    let want = encode(&SubmitManyOut {
        board: "lb",
        results: &items,
    })
    .unwrap();
    let recs = entries
        .iter()
        .map(|e| SubmitRec::from_ref(e).unwrap())
        .collect();
    let keep = podium_store::service::KeepEntries::Applied;
    let (raw, _) = futures_util::FutureExt::now_or_never(b.submit_records("lb", recs, keep))
        .expect("in memory")
        .unwrap();
    let members = entries.iter().map(|e| e.member.as_bytes());
    assert_eq!(encode_submit_many("lb", members, &raw), want);
}

fn decode(b: &[u8]) -> Value {
    rmpv::decode::read_value(&mut &b[..]).unwrap()
}

fn get<'a>(v: &'a Value, k: &str) -> &'a Value {
    v.as_map()
        .and_then(|m| m.iter().find(|(kk, _)| kk.as_str() == Some(k)))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {k} in {v}"))
}

#[test]
fn scores_are_floats_and_infinities_stay_floats() {
    let b = encode(&Score(f64::INFINITY)).unwrap();
    assert_eq!(decode(&b), Value::F64(f64::INFINITY));
    assert_eq!(
        serde_json::to_string(&Score(f64::NEG_INFINITY)).unwrap(),
        "\"-inf\""
    );
}

#[test]
fn results_use_the_http_field_names() {
    let svc = Arc::new(Service::in_memory());
    let mut e = SubmitIn::new("ann", 10.0);
    e.name = Some("Ann".into());
    let out = decode(
        &run(
            &svc,
            Call::Submit(ops::Submit {
                board: "lb".into(),
                entry: e,
            }),
        )
        .unwrap(),
    );
    let json = serde_json::to_value(
        futures_util::FutureExt::now_or_never(
            svc.submit_one("lb", &SubmitIn::new("bob", f64::NEG_INFINITY)),
        )
        .unwrap()
        .unwrap(),
    )
    .unwrap();
    let keys = |v: &Value| -> Vec<String> {
        v.as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap().to_string())
            .collect()
    };
    let json_keys: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
    let mut a = keys(&out);
    a.sort();
    let mut b = json_keys;
    b.sort();
    assert_eq!(a, b);
    let rank = decode(
        &run(
            &svc,
            Call::Rank(ops::Rank {
                board: "lb".into(),
                member: "bob".into(),
            }),
        )
        .unwrap(),
    );
    assert_eq!(get(&rank, "score"), &Value::F64(f64::NEG_INFINITY));
    assert_eq!(get(&rank, "rank"), &Value::from(2));
    // entry flattens the member's fields into the map.
    let entry = decode(
        &run(
            &svc,
            Call::Entry(ops::GetEntry {
                board: "lb".into(),
                member: "ann".into(),
                page_size: None,
            }),
        )
        .unwrap(),
    );
    assert_eq!(get(&entry, "name"), &Value::from("Ann"));
    assert_eq!(get(&entry, "ranking"), &Value::from("unique"));
    assert_eq!(get(&entry, "member"), &Value::from("ann"));
}

/// `top` written in place gives exactly the bytes of `TopOut` through
/// rmp-serde, with and without data, on every page including the last,
/// a page past the end, page sizes from 1 up, and in every ranking mode.
#[test]
fn top_in_place_encodes_as_the_dto() {
    let svc = Arc::new(Service::in_memory());
    for (board, ranking) in [("u", "unique"), ("d", "dense"), ("c", "competition")] {
        let cfg = serde_json::json!({ "ranking": ranking });
        futures_util::FutureExt::now_or_never(svc.board_create(board, &cfg))
            .unwrap()
            .unwrap();
        let mut entries = Vec::new();
        for i in 0..130u32 {
            let mut e = SubmitIn::new(format!("m{i}"), f64::from(i / 4) * 0.5);
            if i % 3 == 0 {
                e.name = Some(format!("Name {i}"));
            }
            if i % 5 == 0 {
                e.data = Some(serde_json::json!({ "lvl": i, "t": ["a", null] }));
            }
            entries.push(e);
        }
        futures_util::FutureExt::now_or_never(svc.submit(board, &entries))
            .unwrap()
            .unwrap();
        for page_size in [None, Some(1), Some(7), Some(130), Some(500)] {
            for page in [None, Some(1), Some(2), Some(19), Some(200)] {
                for with_data in [false, true] {
                    let op = ops::Top {
                        board: board.to_string(),
                        page,
                        page_size,
                        with_data,
                    };
                    let want = encode(&svc.top(&op).unwrap());
                    let got = top(&*svc, &op);
                    assert_eq!(
                        got.unwrap(),
                        want.unwrap(),
                        "{board} {page:?} {page_size:?}"
                    );
                }
            }
        }
    }
    for (page, page_size) in [(Some(0), None), (None, Some(0)), (None, Some(1 << 40))] {
        let op = ops::Top {
            board: "u".to_string(),
            page,
            page_size,
            with_data: false,
        };
        let want = svc.top(&op).unwrap_err();
        let got = top(&*svc, &op).unwrap_err();
        assert_eq!((got.code, got.message), (want.code, want.message));
    }
    let op = ops::Top {
        board: "nope".to_string(),
        page: None,
        page_size: None,
        with_data: false,
    };
    let want = svc.top(&op).unwrap_err();
    let got = top(&*svc, &op).unwrap_err();
    assert_eq!((got.code, got.message), (want.code, want.message));
}

#[test]
fn range_head_declares_the_count() {
    let out = RangeOut {
        board: "b".into(),
        ranking: "unique".into(),
        total: 7,
        entries: vec![],
    };
    let mut h = range_head(&out, 70_000).unwrap();
    h.extend(std::iter::repeat_n(0xc0, 70_000));
    let v = decode(&h);
    assert_eq!(get(&v, "entries").as_array().unwrap().len(), 70_000);
    assert_eq!(get(&v, "total"), &Value::from(7));
}

#[test]
fn auth_scopes() {
    let shared = Arc::new(Shared {
        api_keys: vec![
            ApiKey::new("readkey-0123456789abcdef", Scope::Read).unwrap(),
            ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap(),
        ],
        rate: Default::default(),
    });
    let mut s = Session::new(shared);
    assert!(!s.authenticated());
    assert_eq!(s.check(Method::Top).unwrap_err().code, Code::Unauthorized);
    assert!(s.check(Method::Auth).is_ok());
    assert_eq!(s.auth("nope").unwrap_err().code, Code::Unauthorized);
    s.auth("readkey-0123456789abcdef").unwrap();
    assert!(s.check(Method::Top).is_ok());
    let e = s.check(Method::Submit).unwrap_err();
    assert_eq!(e.code, Code::Forbidden);
    assert_eq!(
        e.message,
        "this request needs a key of scope write; this key has scope read"
    );
    s.auth("writekey-0123456789abcdef").unwrap();
    assert!(s.check(Method::Submit).is_ok());
    assert_eq!(
        s.check(Method::BoardDelete).unwrap_err().code,
        Code::Forbidden
    );
    let open = Session::new(Arc::new(Shared {
        api_keys: vec![],
        rate: Default::default(),
    }));
    assert!(open.check(Method::BoardDelete).is_ok());
}

/// Every call takes a token, `auth` included; the key's bucket counts
/// once the key is known, and a refusal leaves the session usable.
#[test]
fn calls_are_rate_limited() {
    use crate::rate::RateLimits;
    let rate = Arc::new(RateLimits::new(
        Some("2/h".parse().unwrap()),
        Some("5/h".parse().unwrap()),
        1,
    ));
    let shared = Arc::new(Shared {
        api_keys: vec![ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap()],
        rate,
    });
    let mut s = Session::for_peer(shared.clone(), Some([10, 0, 0, 1].into()));
    s.check(Method::Auth).unwrap();
    s.auth("writekey-0123456789abcdef").unwrap();
    s.check(Method::Submit).unwrap();
    s.check(Method::Top).unwrap();
    let e = s.check(Method::Top).unwrap_err();
    assert_eq!(e.code, Code::RateLimited);
    assert!(e.message.contains("this API key (2/h)"), "{}", e.message);
    // Same address, no key yet: its last token (the refused call took
    // one of the address's too), then the address's limit.
    let other = Session::for_peer(shared.clone(), Some([10, 0, 0, 1].into()));
    assert_eq!(
        other.check(Method::Top).unwrap_err().code,
        Code::Unauthorized
    );
    let e = other.check(Method::Auth).unwrap_err();
    assert!(
        e.message.contains("this client address (5/h)"),
        "{}",
        e.message
    );
    // Another address is not limited by this one.
    let third = Session::for_peer(shared, Some([10, 0, 0, 2].into()));
    third.check(Method::Auth).unwrap();
}

#[test]
fn import_fails_bad_entries_alone() {
    let svc = Arc::new(Service::in_memory());
    let mut bad_op = SubmitIn::new("c", 1.0);
    bad_op.op = Some("mul".into());
    let entries: Vec<ImportEntry> = vec![
        Ok(SubmitIn::new("a", 1.0)),
        Err((
            Some("x".into()),
            ApiError::new(Code::InvalidScore, "score: NaN"),
        )),
        Ok(SubmitIn::new("", 2.0)),
        Ok(bad_op),
        Ok(SubmitIn::new("b", 3.0)),
    ];
    let out = decode(
        &run(
            &svc,
            Call::Import {
                board: "imp".into(),
                entries,
            },
        )
        .unwrap(),
    );
    assert_eq!(get(&out, "imported"), &Value::from(2));
    assert_eq!(get(&out, "failed"), &Value::from(3));
    let lines: Vec<u64> = get(&out, "errors")
        .as_array()
        .unwrap()
        .iter()
        .map(|e| get(e, "line").as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 3, 4]);
    assert_eq!(svc.boards().boards[0].members, 2);
}

/// The reader's prepared records (`rpc::fast`) answer byte for byte as
/// the general path's entries do, refused entries included.
#[test]
fn prepared_records_answer_as_the_general_path() {
    let long = "x".repeat(podium_engine::MAX_MEMBER_BYTES + 1);
    let good: Vec<(&str, f64)> = vec![("a", 1.0), ("b", 3.5), ("a", 2.0), ("c", -1.0)];
    let bad: Vec<(&str, f64)> = vec![("a", 1.0), ("", 2.0), ("b", 3.0), (&long, 4.0), ("c", 5.0)];
    let recs = |es: &[(&str, f64)]| -> Vec<SubmitRec> {
        es.iter()
            .map(|&(member, score)| {
                super::super::fast::Plain {
                    member,
                    score,
                    name: None,
                }
                .rec()
            })
            .collect()
    };
    let ins = |es: &[(&str, f64)]| -> Vec<SubmitIn> {
        es.iter().map(|&(m, s)| SubmitIn::new(m, s)).collect()
    };
    for es in [&good, &bad] {
        let (general, prepared) = (
            Arc::new(Service::in_memory()),
            Arc::new(Service::in_memory()),
        );
        let entries = ins(es).into_iter().map(Ok).collect();
        let a = run(
            &general,
            Call::Import {
                board: "b".into(),
                entries,
            },
        );
        let b = run(
            &prepared,
            Call::Records {
                board: "b".into(),
                recs: recs(es),
                import: true,
            },
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a, b);
        let lines: Vec<u64> = get(&decode(&b), "errors")
            .as_array()
            .unwrap()
            .iter()
            .map(|e| get(e, "line").as_u64().unwrap())
            .collect();
        assert_eq!(lines, if es == &bad { vec![2, 4] } else { vec![] });
        let a = run(
            &general,
            Call::SubmitMany(ops::SubmitMany {
                board: "b".into(),
                entries: ins(es),
            }),
        );
        let b = run(
            &prepared,
            Call::Records {
                board: "b".into(),
                recs: recs(es),
                import: false,
            },
        );
        match (a, b) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!((a.code, a.message), (b.code, b.message)),
            (a, b) => panic!("general {a:?}, prepared {b:?}"),
        }
        assert_eq!(general.boards().boards, prepared.boards().boards);
    }
}
