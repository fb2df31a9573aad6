//! Fuzzing of request bodies: the JSON body extractor (`read_body` within
//! the body limit, with any declared `Content-Length`), the score
//! submission body (one entry or a batch, read by `submit_in`), and whole
//! `scores` and `import` requests through the router, where a panic would
//! surface as a 500. Damaged and random bodies must be answered with a 4xx
//! error; valid ones read back as the entries they were rendered from.

use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use proptest::prelude::*;
use tokio::runtime::Runtime;

use super::*;
use crate::fuzz_support::{config, corpus, damage, damaged, quick, HUGE_DIGITS};
use crate::http::error::{parse_json_value, read_body};
use crate::http::handlers::submit_in;
use bytes::Bytes;
use podium_core::api::SubmitIn;
use podium_core::ops;

fn rt() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// The body of a score submission, read as the `scores` handler reads it.
fn submit_body(bytes: &[u8]) -> Result<Vec<SubmitIn>, ApiError> {
    match parse_json_value(bytes).map_err(|e| e.0)? {
        Value::Array(items) => ops::submit::batch(items, |v| submit_in(v, false)),
        v @ Value::Object(_) => Ok(vec![submit_in(v, false)?]),
        _ => Err(ApiError::new(Code::MalformedRequest, "neither")),
    }
}

/// What a client may claim the body's length is.
fn declared() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        (0usize..10_000).prop_map(|n| n.to_string()),
        prop::sample::select(HUGE_DIGITS.to_vec()).prop_map(str::to_string),
        Just("abc".to_string()),
    ])
}

const LIMIT: usize = 4096;

fn read(rt: &Runtime, bytes: &[u8], declared: Option<&str>) -> Result<Bytes, ApiError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, "application/json".parse().unwrap());
    if let Some(d) = declared {
        headers.insert(CONTENT_LENGTH, d.parse().unwrap());
    }
    let body = Body::from(bytes.to_vec());
    quick(|| rt.block_on(read_body(&headers, body, LIMIT, None)))
        .map(|(b, _reserved)| b)
        .map_err(|e| e.0)
}

#[track_caller]
fn check_body(rt: &Runtime, bytes: &[u8], declared: Option<&str>) {
    match read(rt, bytes, declared) {
        Ok(b) => {
            assert_eq!(&b[..], bytes);
            assert!(b.len() <= LIMIT);
            if let Err(e) = quick(|| submit_body(&b)) {
                assert_ne!(e.code, Code::Internal, "{e:?}");
            }
        }
        Err(e) => assert!(
            matches!(e.code, Code::PayloadTooLarge | Code::MalformedRequest),
            "{e:?}"
        ),
    }
}

fn entries() -> impl Strategy<Value = Vec<SubmitIn>> {
    let score = prop_oneof![
        any::<f64>().prop_filter("a number", |f| f.is_finite()),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ];
    let entry = (
        "[a-zA-Z0-9_é😀 ]{1,12}",
        score,
        prop::option::of("[ -~]{0,8}"),
    )
        .prop_map(|(m, s, n)| {
            let mut e = SubmitIn::new(m, s);
            e.name = n;
            e
        });
    prop::collection::vec(entry, 1..12)
}

/// Through the router: any answer but a server error, as JSON.
fn post(rt: &Runtime, app: &Router, uri: &str, body: Vec<u8>, declared: Option<&str>) {
    let mut b = Request::builder().method("POST").uri(uri);
    b = b.header("content-type", "application/json");
    if let Some(d) = declared {
        b = b.header("content-length", d);
    }
    let r = quick(|| rt.block_on(send(app, b.body(Body::from(body)).unwrap())));
    assert!(
        r.status.is_success() || r.status.is_client_error(),
        "{uri}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    serde_json::from_slice::<Value>(&r.body).expect("a JSON answer");
}

fn small_app() -> Router {
    app_with(HttpConfig {
        max_body_bytes: LIMIT,
        ..HttpConfig::default()
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_http_random_bodies(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        declared in declared(),
    ) {
        check_body(&rt(), &bytes, declared.as_deref());
    }

    #[test]
    fn fuzz_http_damaged_submissions(
        entries in entries(),
        one in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
        declared in declared(),
    ) {
        let valid = if one {
            serde_json::to_vec(&entries[0]).unwrap()
        } else {
            serde_json::to_vec(&entries).unwrap()
        };
        check_body(&rt(), &damaged(valid, &damages), declared.as_deref());
    }

    #[test]
    fn fuzz_http_submissions_round_trip(entries in entries(), one in any::<bool>()) {
        let rt = rt();
        let (text, want) = if one {
            (serde_json::to_vec(&entries[0]).unwrap(), entries[..1].to_vec())
        } else {
            (serde_json::to_vec(&entries).unwrap(), entries.clone())
        };
        let declared = text.len().to_string();
        let bytes = read(&rt, &text, Some(&declared)).unwrap();
        prop_assert_eq!(submit_body(&bytes).unwrap(), want);
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn fuzz_http_damaged_requests_through_the_router(
        entries in entries(),
        damages in prop::collection::vec(damage(), 0..4),
        declared in declared(),
        route in 0usize..3,
    ) {
        let rt = rt();
        let app = small_app();
        let (uri, valid) = match route {
            0 => ("/v1/boards/lb/scores", serde_json::to_vec(&entries).unwrap()),
            1 => (
                "/v1/boards/lb/import?format=ndjson",
                entries
                    .iter()
                    .flat_map(|e| {
                        let mut l = serde_json::to_vec(e).unwrap();
                        l.push(b'\n');
                        l
                    })
                    .collect(),
            ),
            _ => (
                "/v1/boards/lb/import?format=csv",
                entries
                    .iter()
                    .flat_map(|e| format!("\"{}\",{}\n", e.member, e.score.0).into_bytes())
                    .collect(),
            ),
        };
        post(&rt, &app, uri, damaged(valid, &damages), declared.as_deref());
    }
}

/// Minimised or hand-made nasty bodies, replayed as submissions and as
/// both import formats.
#[test]
fn fuzz_http_corpus_replays() {
    let rt = rt();
    let app = small_app();
    for (path, input) in corpus("http_json") {
        let _ = &path;
        check_body(&rt, &input, None);
        for uri in [
            "/v1/boards/lb/scores",
            "/v1/boards/lb/import?format=ndjson",
            "/v1/boards/lb/import?format=csv",
        ] {
            post(&rt, &app, uri, input.clone(), None);
        }
    }
}
