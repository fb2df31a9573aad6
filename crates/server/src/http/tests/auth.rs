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
    b.body(body.map_or_else(Body::empty, |s| Body::from(s.to_string())))
        .unwrap()
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
