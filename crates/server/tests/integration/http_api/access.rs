//! API keys and scopes, the public-address guard, and durability across
//! SIGTERM and restarts.

use super::*;

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

/// A server without API keys answers what a web page on another site
/// cannot send: JSON bodies said to be JSON (a page may post text or a
/// form across sites), its own host names (a page's own name pointed at
/// the server: DNS rebinding), and writes from its own origin.
#[test]
fn a_keyless_server_refuses_what_a_web_page_could_send() {
    let s = Server::start(&[]);
    let scores = "/v1/boards/xp/scores";
    let body = r#"{"member": "pwned", "score": 5}"#;
    for ct in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        s.post_raw(scores, ct, body)
            .expect_error(415, "unsupported_media_type");
    }
    // No type at all (a page's Blob without one).
    let r = send(s.http.post(s.url(scores)).body(body));
    r.expect_error(415, "unsupported_media_type");
    // An import is CSV or NDJSON, said so.
    s.post_raw(
        "/v1/boards/xp/import?format=csv",
        "text/plain",
        "member,score\nx,1\n",
    )
    .expect_error(415, "unsupported_media_type");
    s.get("/v1/boards/xp").expect_error(404, "board_not_found");

    // Another site's name for this server.
    let r = send(
        s.http
            .get(s.url("/v1/boards"))
            .header("host", "evil.example:7070"),
    );
    r.expect_error(403, "forbidden");
    assert!(r.body.to_string().contains("--http-host"), "{}", r.body);
    // A write from another origin, even in JSON.
    let r = send(
        s.http
            .post(s.url("/v1/boards/xp/reset"))
            .header("origin", "http://evil.example"),
    );
    r.expect_error(403, "forbidden");
    let r = send(
        s.http
            .post(s.url(scores))
            .header("origin", "null")
            .json(&json!({"member": "pwned", "score": 5})),
    );
    r.expect_error(403, "forbidden");
    s.get("/v1/boards/xp").expect_error(404, "board_not_found");

    // What the server's own pages and clients send is answered.
    s.post(scores, &json!({"member": "a", "score": 1}))
        .expect(200);
    let own = format!("http://{}", s.addr());
    let r = send(
        s.http
            .post(s.url(scores))
            .header("origin", &own)
            .json(&json!({"member": "b", "score": 2})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for host in ["localhost:1", "127.0.0.1", "[::1]:7070", "a.localhost"] {
        let r = send(s.http.get(s.url("/v1/boards")).header("host", host));
        assert_eq!(r.status, 200, "{host}: {}", r.body);
    }
    s.post_raw(
        "/v1/boards/xp/import?format=csv",
        "text/csv",
        "member,score\nx,1\n",
    )
    .expect(200);

    // A configured name is answered; with API keys, the key decides.
    let named = Server::start(&["--http-host", "podium.internal"]);
    let r = send(
        named
            .http
            .get(named.url("/v1/boards"))
            .header("host", "PODIUM.internal:80"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let keyed = Server::start(&["--api-key", "adminkey0000000000:admin"]);
    let r = send(
        keyed
            .http
            .get(keyed.url("/v1/boards"))
            .bearer_auth("adminkey0000000000")
            .header("host", "evil.example"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}
