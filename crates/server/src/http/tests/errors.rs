//! Refused requests: the error cases, the body limit, strict input
//! (scores out of range or padded, repeated JSON keys) and the answers the
//! framework and hyper give, all in podium's error shape.

use super::*;

#[tokio::test]
async fn error_cases() {
    let app = app();
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":"nan"}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":"abc"}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","score":null}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a"}"#),
        400,
        "malformed_request",
    )
    .await;

    let r = call(
        &app,
        "PUT",
        "/v1/boards/bounded",
        Some(json!({"min_score": 0, "max_score": 100})),
    )
    .await;
    assert_eq!(r.status, 201);
    expect_err(
        &app,
        "POST",
        "/v1/boards/bounded/scores",
        Some(r#"{"member":"a","score":-1}"#),
        400,
        "invalid_score",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/bounded/scores",
        Some(r#"{"member":"a","score":101}"#),
        400,
        "invalid_score",
    )
    .await;

    let long_member = "m".repeat(513);
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(&json!({"member": long_member, "score": 1}).to_string()),
        400,
        "invalid_member",
    )
    .await;
    let long_board = "b".repeat(201);
    expect_err(
        &app,
        "POST",
        &format!("/v1/boards/{long_board}/scores"),
        Some(r#"{"member":"a","score":1}"#),
        400,
        "invalid_board_name",
    )
    .await;
    expect_err(
        &app,
        "GET",
        &format!("/v1/boards/{long_board}/top"),
        None,
        400,
        "invalid_board_name",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/a%01b",
        None,
        400,
        "invalid_board_name",
    )
    .await;

    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(r#"{"member":"a","#),
        400,
        "malformed_request",
    )
    .await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/scores",
        Some(""),
        400,
        "malformed_request",
    )
    .await;
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/e/scores")
            .header("content-type", "application/xml")
            .body(Body::from("<a/>"))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 415);
    assert_eq!(r.code(), "unsupported_media_type");
    // What a web page may send to another site without its consent (a
    // form, text, no type) is refused, JSON or not.
    for ct in [
        Some("application/x-www-form-urlencoded"),
        Some("text/plain"),
        Some("multipart/form-data; boundary=b"),
        None,
    ] {
        let mut b = Request::builder().method("POST").uri("/v1/boards/e/scores");
        if let Some(ct) = ct {
            b = b.header("content-type", ct);
        }
        let r = send(
            &app,
            b.body(Body::from(r#"{"member":"a","score":1}"#)).unwrap(),
        )
        .await;
        assert_eq!(r.status, 415, "{ct:?}");
        assert_eq!(r.code(), "unsupported_media_type");
    }
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/e/scores")
            .header("content-type", "application/merge-patch+json")
            .body(Body::from(r#"{"member":"a","score":1}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);

    expect_err(&app, "GET", "/v1/boards/nope", None, 404, "board_not_found").await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/top",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/export",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/members/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/rank/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/around/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/percentile/ghost",
        None,
        404,
        "member_not_found",
    )
    .await;

    expect_err(&app, "GET", "/nope", None, 404, "not_found").await;
    expect_err(&app, "GET", "/v1/boards/e/nope", None, 404, "not_found").await;
    expect_err(
        &app,
        "POST",
        "/v1/boards/e/top",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    expect_err(
        &app,
        "DELETE",
        "/v1/boards",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    let r = send(&app, req("POST", "/v1/boards/e", None)).await;
    assert_eq!(r.status, 405);
    let allow = r.headers["allow"].to_str().unwrap().to_string();
    assert!(
        allow.contains("PUT") && allow.contains("PATCH") && allow.contains("DELETE"),
        "{allow}"
    );

    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page=x",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page=0",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?page_size=0",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/top?with_data=maybe",
        None,
        400,
        "invalid_argument",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/e/members/%FF",
        None,
        400,
        "malformed_request",
    )
    .await;
}

#[tokio::test]
async fn body_limit() {
    let app = app_with(HttpConfig {
        api_keys: vec![],
        max_body_bytes: 64,
        ..Default::default()
    });
    let big = json!({"member": "x".repeat(100), "score": 1}).to_string();
    expect_err(
        &app,
        "POST",
        "/v1/boards/l/scores",
        Some(&big),
        413,
        "payload_too_large",
    )
    .await;
    // Without a Content-Length (a streamed body) too.
    let stream = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::from(
        big.clone(),
    ))]);
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/l/scores")
            .body(Body::from_stream(stream))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.code(), "payload_too_large");
    let r = call(
        &app,
        "POST",
        "/v1/boards/l/scores",
        Some(json!({"member": "a", "score": 1})),
    )
    .await;
    assert_eq!(r.status, 200);
    // Import streams and is not bound by the limit.
    let body: String = (0..100)
        .map(|i| format!("{{\"member\":\"m{i}\",\"score\":{i}}}\n"))
        .collect();
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/l/import")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["imported"], 100);
}

// ------------------------------------------------------- strict input

/// The text every path gives for a finite spelling beyond a double.
const OUT_OF_RANGE: &str = "is out of range of a double";

/// A raw body (not built from a `Value`, which could not hold 1e400 or a
/// repeated key).
async fn post_raw(app: &Router, uri: &str, body: &str) -> Resp {
    send(app, req("POST", uri, Some(body))).await
}

/// Each of `(body, score text)` answers 400 `invalid_score` with the one
/// message of that refusal.
async fn expect_bad_score(app: &Router, uri: &str, body: &str, needle: &str) {
    let r = post_raw(app, uri, body).await;
    assert_eq!(
        r.status,
        400,
        "{body}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.code(), "invalid_score", "{body}: {}", r.json());
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains(needle), "{body}: {msg}");
}

/// A finite score that overflows a double is refused with the same text
/// as a JSON number, a JSON string, in a batch, in an NDJSON or CSV import
/// line and as a range bound; an explicit infinity is still stored.
#[tokio::test]
async fn out_of_range_scores_are_refused_on_every_path() {
    let app = app();
    let scores = "/v1/boards/oor/scores";
    for body in [
        r#"{"member":"a","score":1e400}"#,
        r#"{"member":"a","score":"1e400"}"#,
        r#"[{"member":"b","score":1},{"member":"a","score":"1e400"}]"#,
        r#"[{"member":"b","score":1},{"member":"a","score":1e400}]"#,
    ] {
        expect_bad_score(
            &app,
            scores,
            body,
            &format!("score \"1e400\" {OUT_OF_RANGE}"),
        )
        .await;
    }
    for body in [
        r#"{"member":"a","score":-1e999}"#,
        r#"{"member":"a","score":"-1e999"}"#,
    ] {
        expect_bad_score(
            &app,
            scores,
            body,
            &format!("score \"-1e999\" {OUT_OF_RANGE}"),
        )
        .await;
    }
    // Nothing was stored.
    let r = call(&app, "GET", "/v1/boards/oor", None).await;
    assert_eq!(r.status, 404, "{}", r.json());

    // Explicit infinities are kept.
    let r = post_raw(&app, scores, r#"{"member":"top","score":"inf"}"#).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["score"], "inf");

    let r = import_body(
        &app,
        "oor",
        "ndjson",
        "{\"member\":\"n1\",\"score\":1e400}\n{\"member\":\"n2\",\"score\":\"1e400\"}\n{\"member\":\"n3\",\"score\":3}\n",
    )
    .await;
    assert_eq!(r["imported"], 1, "{r}");
    for (i, line) in [(0, 1), (1, 2)] {
        assert_eq!(r["errors"][i]["line"], line, "{r}");
        assert_eq!(r["errors"][i]["error"]["code"], "invalid_score", "{r}");
        let msg = r["errors"][i]["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("score \"1e400\" {OUT_OF_RANGE}")),
            "{r}"
        );
    }
    let r = import_body(&app, "oor", "csv", "c1,1e400\nc2,-1e999\nc3,4\n").await;
    assert_eq!(r["imported"], 1, "{r}");
    assert_eq!(r["failed"], 2, "{r}");
    for i in 0..2 {
        assert_eq!(r["errors"][i]["error"]["code"], "invalid_score", "{r}");
        let msg = r["errors"][i]["error"]["message"].as_str().unwrap();
        assert!(msg.contains(OUT_OF_RANGE), "{r}");
    }
    let r = call(&app, "GET", "/v1/boards/oor/count?min=1e400", None).await;
    assert_eq!(r.status, 400, "{}", r.json());
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains(OUT_OF_RANGE));
    // Every member stored is one of the accepted ones.
    let r = call(&app, "GET", "/v1/boards/oor/top", None).await;
    assert_eq!(r.json()["total"], 3, "{}", r.json());
}

/// White space around a score, or an empty one, is refused everywhere a
/// score is text, with one message.
#[tokio::test]
async fn padded_scores_are_refused() {
    let app = app();
    for s in [" 5", "5 ", "\t5", "5\n"] {
        let body = json!({"member": "a", "score": s}).to_string();
        expect_bad_score(
            &app,
            "/v1/boards/pad/scores",
            &body,
            &format!("score {s:?} has white space around the number"),
        )
        .await;
    }
    expect_bad_score(
        &app,
        "/v1/boards/pad/scores",
        r#"{"member":"a","score":""}"#,
        "score is empty",
    )
    .await;
    let r = import_body(&app, "pad", "csv", "a, 5\nb,5 \nc,\nd,6\n").await;
    assert_eq!(r["imported"], 1, "{r}");
    assert_eq!(r["failed"], 3, "{r}");
    assert!(r["errors"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("white space"));
    let r = import_body(
        &app,
        "pad",
        "ndjson",
        "{\"member\":\"e\",\"score\":\" 7\"}\n",
    )
    .await;
    assert_eq!(r["failed"], 1, "{r}");
    assert_eq!(r["errors"][0]["error"]["code"], "invalid_score", "{r}");
    let r = call(&app, "GET", "/v1/boards/pad/count?min=%205", None).await;
    assert_eq!(r.status, 400, "{}", r.json());
}

/// A key repeated in any object of a body or import line is refused with
/// podium's 400, naming the key; nothing is written.
#[tokio::test]
async fn repeated_json_keys_are_refused() {
    let app = app();
    for (method, uri, body, key) in [
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"{"member":"a","score":1,"score":9}"#,
            "score",
        ),
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"[{"member":"a","member":"b","score":1}]"#,
            "member",
        ),
        (
            "POST",
            "/v1/boards/dup/scores",
            r#"{"member":"a","score":1,"data":{"k":1,"k":2}}"#,
            "k",
        ),
        (
            "PUT",
            "/v1/boards/dup",
            r#"{"order":"asc","order":"desc"}"#,
            "order",
        ),
        (
            "POST",
            "/v1/boards/dup/ranks",
            r#"{"members":["a"],"members":["b"]}"#,
            "members",
        ),
    ] {
        let r = send(&app, req(method, uri, Some(body))).await;
        assert_eq!(
            r.status,
            400,
            "{body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.code(), "malformed_request", "{body}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(
            msg.contains(&format!("key {key:?} is repeated")),
            "{body}: {msg}"
        );
    }
    let r = call(&app, "GET", "/v1/boards/dup", None).await;
    assert_eq!(r.status, 404, "nothing was written: {}", r.json());
    let r = import_body(
        &app,
        "dup",
        "ndjson",
        "{\"member\":\"a\",\"score\":1,\"score\":2}\n{\"member\":\"b\",\"score\":1}\n",
    )
    .await;
    assert_eq!(
        (r["imported"].clone(), r["failed"].clone()),
        (json!(1), json!(1)),
        "{r}"
    );
    assert_eq!(r["errors"][0]["error"]["code"], "malformed_request");
    assert!(r["errors"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("key \"score\" is repeated"));
}

/// What axum answers on its own (no route, wrong method, a query string
/// serde cannot read) is podium's JSON error, in podium's words, with the
/// status kept.
#[tokio::test]
async fn framework_answers_are_podium_errors() {
    let app = app();
    seed(&app, "fw", 3).await;
    expect_err(&app, "GET", "/nowhere", None, 404, "not_found").await;
    expect_err(
        &app,
        "PATCH",
        "/v1/boards/fw/top",
        None,
        405,
        "method_not_allowed",
    )
    .await;
    for (uri, needle) in [
        (
            "/v1/boards/fw/top?page=99999999999999999999",
            "page must be a non-negative integer below 2^64, got \"99999999999999999999\"",
        ),
        (
            "/v1/boards/fw/top?page_size=-1",
            "page_size must be a non-negative integer below 2^64, got \"-1\"",
        ),
        (
            "/v1/boards/fw/score_at_percentile?p=x",
            "p must be a number, got \"x\"",
        ),
        (
            "/v1/boards/fw/search?q=a&limt=3",
            "unknown query parameter \"limt\"",
        ),
        (
            "/v1/boards/fw/search?limit=3",
            "the query parameter q is required",
        ),
    ] {
        let r = call(&app, "GET", uri, None).await;
        assert_eq!(r.status, 400, "{uri}: {}", r.json());
        assert_eq!(r.code(), "invalid_argument", "{uri}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(needle), "{uri}: {msg}");
        assert!(!msg.contains("Failed to deserialize"), "{uri}: {msg}");
    }
}

/// A compressed request body is refused with 415 (it would be read as
/// JSON as it is); `identity` and no body are fine.
#[tokio::test]
async fn content_encoding_is_refused_unless_identity() {
    let app = app();
    for (uri, body) in [
        ("/v1/boards/enc/scores", r#"{"member":"a","score":1}"#),
        ("/v1/boards/enc/import", "{\"member\":\"a\",\"score\":1}\n"),
    ] {
        for coding in ["gzip", "br", "identity, gzip", "x-custom"] {
            let r = send(
                &app,
                Request::builder()
                    .method("POST")
                    .uri(uri)
                    .header("content-encoding", coding)
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
            assert_eq!(
                r.status,
                415,
                "{uri} {coding}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(r.code(), "unsupported_media_type");
        }
    }
    let r = call(&app, "GET", "/v1/boards/enc", None).await;
    assert_eq!(r.status, 404, "nothing was written: {}", r.json());
    let r = send(
        &app,
        Request::builder()
            .method("POST")
            .uri("/v1/boards/enc/scores")
            .header("content-type", "application/json")
            .header("content-encoding", "identity")
            .body(Body::from(r#"{"member":"a","score":1}"#))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = send(
        &app,
        Request::builder()
            .method("GET")
            .uri("/v1/boards/enc/top")
            .header("content-encoding", "gzip")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "no body, nothing to decode");
}

#[tokio::test]
async fn while_the_storage_opens_only_healthz_answers_200_and_the_api_takes_over_once_set() {
    let routing = crate::http::Routing::starting("embedded");
    let addr = serve_routing_on_socket(routing.clone()).await;
    let get =
        |path: &str| format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");

    let (line, _, body) = raw_exchange(addr, get("/healthz").as_bytes()).await;
    assert!(line.contains(" 200 "), "{line}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["backend"].as_str()),
        (Some("starting"), Some("embedded"))
    );
    for path in ["/readyz", "/v1/boards", "/v1/boards/b/top", "/nowhere"] {
        let (line, head, body) = raw_exchange(addr, get(path).as_bytes()).await;
        assert!(line.contains(" 503 "), "{path}: {line}");
        assert!(
            head.to_ascii_lowercase().contains("retry-after: 1"),
            "{path}: {head}"
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], "not_ready", "{path}: {body}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("recovering its data directory"),
            "{body}"
        );
    }

    routing.open(app());
    let (line, _, body) = raw_exchange(addr, get("/readyz").as_bytes()).await;
    assert!(line.contains(" 200 "), "{line}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"status": "ready"})
    );
    let (line, _, body) = raw_exchange(addr, get("/healthz").as_bytes()).await;
    assert!(
        line.contains(" 200 ") && body.contains("\"ok\""),
        "{line} {body}"
    );
}

/// The server as `podium serve` runs it, on a real socket: what hyper
/// answers itself for a request it cannot parse.
async fn serve_on_socket() -> std::net::SocketAddr {
    serve_routing_on_socket(crate::http::Routing::ready(app())).await
}

/// `routing` served on a real socket, for the test's life.
async fn serve_routing_on_socket(routing: crate::http::Routing) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = crate::limits::ConnLimits {
        gate: crate::limits::ClientGate::new("http", 100),
        timeouts: crate::limits::Timeouts::default(),
    };
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        // Kept alive for the server's life.
        let _stop = _stop;
        crate::http::serve(listener, routing, limits, false, stop_rx)
            .await
            .unwrap();
    });
    addr
}

/// Sends `request` on a new connection and reads the answer until the
/// server closes it (or sends a whole answer): status line, head, body.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (String, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may answer and close before reading everything.
    let _ = c.write_all(request).await;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), c.read(&mut buf));
        match read.await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|n| n.trim().parse::<usize>().ok());
            if len.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    (status, head.to_string(), body.to_string())
}

/// A URI too long, a head too large and a request that is not HTTP are
/// answered by hyper before any route: each is podium's JSON error.
#[tokio::test]
async fn hyper_answers_are_podium_errors() {
    let addr = serve_on_socket().await;
    let long = format!(
        "GET /v1/boards/b/top?q={} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: {}\r\n\r\n",
        "a".repeat(600_000)
    );
    for (request, status, code) in [
        (long.as_bytes(), "HTTP/1.1 414 ", "uri_too_long"),
        (big_header.as_bytes(), "HTTP/1.1 431 ", "headers_too_large"),
        (
            &b"NOT HTTP AT ALL\r\n\r\n"[..],
            "HTTP/1.1 400 ",
            "malformed_request",
        ),
        (
            &b"GET / HTTP/1.1\r\nbad header\r\n\r\n"[..],
            "HTTP/1.1 400 ",
            "malformed_request",
        ),
    ] {
        let (line, head, body) = raw_exchange(addr, request).await;
        assert!(line.starts_with(status), "{code}: {line:?}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{code}: {head}"
        );
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{code}: not JSON ({e}): {body:?}"));
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    // The server goes on answering.
    let (line, _, body) =
        raw_exchange(addr, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").await;
    assert!(line.starts_with("HTTP/1.1 200 "), "{line}");
    assert!(body.contains("\"ok\""), "{body}");
}

/// An import with no body at all needs no Content-Type: it imports
/// nothing (the document calls its body optional, and there is nothing a
/// web page could smuggle in it). A body without a type is still refused.
#[tokio::test]
async fn an_import_without_a_body_needs_no_content_type() {
    let addr = serve_on_socket().await;
    for req in [
        "POST /v1/boards/nobody/import?format=csv HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        "POST /v1/boards/nobody/import?format=ndjson HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n",
    ] {
        let (status, _, body) = raw_exchange(addr, req.as_bytes()).await;
        assert!(status.contains(" 200 "), "{req:?}: {status} {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["imported"], 0, "{body}");
    }
    let (status, _, body) = raw_exchange(
        addr,
        b"POST /v1/boards/nobody/import?format=csv HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 4\r\n\r\na,1\n",
    )
    .await;
    assert!(status.contains(" 415 "), "{status} {body}");
    let (status, _, body) = raw_exchange(
        addr,
        b"POST /v1/boards/nobody/import?format=csv HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    )
    .await;
    assert!(
        status.contains(" 415 "),
        "a body sent, empty or not, says its type: {status} {body}"
    );
}
