//! API keys and scopes, route by route.

use super::*;

const READ_KEY: &str = "read-key-0123456789";
const WRITE_KEY: &str = "write-key-0123456789";
const ADMIN_KEY: &str = "admin-key-0123456789";

fn authed(method: &str, uri: &str, key: Option<&str>, body: Option<&str>) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    match body {
        Some(s) => b
            .header("content-type", "application/json")
            .body(Body::from(s.to_string()))
            .unwrap(),
        None => b.body(Body::empty()).unwrap(),
    }
}

/// Every route of the table, requested with no key and with a key of each
/// scope, against the scope of its operation: allowed, or refused with 401
/// (no key) or 403 and the scopes named.
#[tokio::test]
async fn every_route_against_every_scope() {
    let app = app_with(HttpConfig {
        api_keys: vec![
            ApiKey::new(READ_KEY, Scope::Read).unwrap(),
            ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
            ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
        ],
        max_body_bytes: 1 << 20,
        ..Default::default()
    });
    let keys = [
        (None, None),
        (Some(Scope::Read), Some(READ_KEY)),
        (Some(Scope::Write), Some(WRITE_KEY)),
        (Some(Scope::Admin), Some(ADMIN_KEY)),
    ];
    for r in ROUTES {
        for (scope, key) in keys {
            let uri = concrete(r.path);
            let got = send(&app, authed(r.method, &uri, key, Some("{}"))).await;
            let ctx = format!("{} {uri} with {scope:?}: {}", r.method, got.status);
            match (r.op.scope(), scope) {
                (None, _) => assert!(![401, 403].contains(&got.status.as_u16()), "{ctx}"),
                (Some(_), None) => {
                    assert_eq!(got.status, 401, "{ctx}");
                    assert_eq!(got.code(), "unauthorized", "{ctx}");
                    assert_eq!(got.headers["www-authenticate"], "Bearer", "{ctx}");
                }
                (Some(needed), Some(s)) if s.allows(needed) => {
                    assert!(![401, 403].contains(&got.status.as_u16()), "{ctx}")
                }
                (Some(needed), Some(s)) => {
                    assert_eq!(got.status, 403, "{ctx}");
                    assert_eq!(got.code(), "forbidden", "{ctx}");
                    assert_eq!(
                        got.json()["error"]["message"],
                        format!(
                            "this request needs a key of scope {}; this key has scope {}",
                            needed.as_str(),
                            s.as_str()
                        ),
                        "{ctx}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn auth_scopes() {
    let app = app_with(HttpConfig {
        api_keys: vec![
            ApiKey::new(READ_KEY, Scope::Read).unwrap(),
            ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
            ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
        ],
        max_body_bytes: 1 << 20,
        ..Default::default()
    });
    let score = Some(r#"{"member":"a","score":1}"#);
    // Open routes.
    assert_eq!(
        send(&app, authed("GET", "/healthz", None, None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&app, authed("GET", "/openapi.json", None, None))
            .await
            .status,
        200
    );
    // No key, a wrong key, a wrong scheme: 401 with WWW-Authenticate.
    for r in [
        authed("GET", "/v1/boards", None, None),
        authed("GET", "/v1/boards", Some("not-a-key-at-all-xx"), None),
        authed("GET", "/metrics", None, None),
        Request::builder()
            .uri("/v1/boards")
            .header("authorization", format!("Basic {READ_KEY}"))
            .body(Body::empty())
            .unwrap(),
    ] {
        let r = send(&app, r).await;
        assert_eq!(r.status, 401);
        assert_eq!(r.code(), "unauthorized");
        assert_eq!(r.headers["www-authenticate"], "Bearer");
    }
    // Scopes.
    assert_eq!(
        send(&app, authed("GET", "/v1/boards", Some(READ_KEY), None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&app, authed("GET", "/metrics", Some(READ_KEY), None))
            .await
            .status,
        200
    );
    let r = send(
        &app,
        authed("POST", "/v1/boards/s/scores", Some(READ_KEY), score),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "forbidden".to_string())
    );
    assert_eq!(
        send(
            &app,
            authed("POST", "/v1/boards/s/scores", Some(WRITE_KEY), score)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("GET", "/v1/boards/s/top", Some(READ_KEY), None)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed(
                "POST",
                "/v1/boards/s/ranks",
                Some(READ_KEY),
                Some(r#"{"members":["a"]}"#)
            )
        )
        .await
        .status,
        200
    );
    for (m, uri) in [
        ("PUT", "/v1/boards/s"),
        ("POST", "/v1/boards/s/reset"),
        ("DELETE", "/v1/boards/s"),
    ] {
        let r = send(&app, authed(m, uri, Some(WRITE_KEY), None)).await;
        assert_eq!(r.status, 403, "{m} {uri}");
        assert_eq!(r.code(), "forbidden");
    }
    let r = send(
        &app,
        authed(
            "POST",
            "/v1/boards/t/merge",
            Some(WRITE_KEY),
            Some(r#"{"sources":["s"]}"#),
        ),
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        send(
            &app,
            authed(
                "POST",
                "/v1/boards/t/merge",
                Some(ADMIN_KEY),
                Some(r#"{"sources":["s"]}"#)
            )
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(&app, authed("PUT", "/v1/boards/s", Some(ADMIN_KEY), None))
            .await
            .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("DELETE", "/v1/boards/s", Some(ADMIN_KEY), None)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(
            &app,
            authed("POST", "/v1/boards/s/import", Some(READ_KEY), Some("{}"))
        )
        .await
        .status,
        403
    );
    // Unknown routes are 404 either way.
    assert_eq!(
        send(&app, authed("GET", "/v1/nothing", None, None))
            .await
            .status,
        404
    );

    // No keys configured: everything open.
    let open = super::tests::app();
    assert_eq!(
        send(&open, authed("PUT", "/v1/boards/s", None, None))
            .await
            .status,
        201
    );
    assert_eq!(
        send(&open, authed("GET", "/metrics", None, None))
            .await
            .status,
        200
    );
}

/// `GET /v1/key`: every key tells its own scope; with no keys configured
/// every request may do everything.
#[tokio::test]
async fn a_key_tells_its_scope() {
    let open = send(&app(), authed("GET", "/v1/key", None, None)).await;
    assert_eq!(open.json(), json!({"keys": false, "scope": "admin"}));
    let app = app_with(HttpConfig {
        api_keys: vec![
            ApiKey::new(READ_KEY, Scope::Read).unwrap(),
            ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
            ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
        ],
        ..Default::default()
    });
    for (key, scope) in [
        (READ_KEY, "read"),
        (WRITE_KEY, "write"),
        (ADMIN_KEY, "admin"),
    ] {
        let r = send(&app, authed("GET", "/v1/key", Some(key), None)).await;
        assert_eq!(r.json(), json!({"keys": true, "scope": scope}));
    }
    let none = send(&app, authed("GET", "/v1/key", None, None)).await;
    assert_eq!(
        (none.status.as_u16(), none.code()),
        (401, "unauthorized".into())
    );
}

/// The console's files are open with keys configured (the page asks for a
/// key), each with its type, the content security policy and an ETag a
/// browser revalidates with; `/` and `/console` lead to the page.
#[tokio::test]
async fn the_console_is_served_open_with_its_policy_and_etags() {
    let app = app_with(HttpConfig {
        api_keys: vec![ApiKey::new(READ_KEY, Scope::Read).unwrap()],
        ..Default::default()
    });
    for from in ["/", "/console"] {
        let r = send(&app, authed("GET", from, None, None)).await;
        assert_eq!(r.status, 302, "{from}");
        assert_eq!(r.headers["location"], "/console/");
    }
    let page = send(&app, authed("GET", "/console/", None, None)).await;
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(
        String::from_utf8_lossy(&page.body).contains("<html")
            || page.body.starts_with(b"<!doctype")
    );
    let names = super::super::console::names();
    assert!(names.iter().any(|n| n == "index.html"), "{names:?}");
    for name in &names {
        let r = send(&app, authed("GET", &format!("/console/{name}"), None, None)).await;
        assert_eq!(r.status, 200, "{name}");
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
        assert_eq!(r.headers["x-content-type-options"], "nosniff");
        let ty = r.headers["content-type"].to_str().unwrap().to_string();
        let want = match name.rsplit('.').next() {
            Some("html") => "text/html",
            Some("css") => "text/css",
            Some("js" | "mjs") => "text/javascript",
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            _ => "",
        };
        assert!(ty.starts_with(want), "{name}: {ty}");
        let etag = r.headers["etag"].to_str().unwrap().to_string();
        let again = Request::builder()
            .uri(format!("/console/{name}"))
            .header("if-none-match", &etag)
            .body(Body::empty())
            .unwrap();
        let r = send(&app, again).await;
        assert_eq!(r.status, 304, "{name}");
        assert!(r.body.is_empty());
    }
    let missing = send(&app, authed("GET", "/console/nothing.js", None, None)).await;
    assert_eq!(
        (missing.status.as_u16(), missing.code()),
        (404, "not_found".into())
    );
}
