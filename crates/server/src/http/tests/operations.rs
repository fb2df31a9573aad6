//! What operators see: metrics, panics turned into 500 JSON answers, and
//! the OpenAPI document listing exactly the router's routes.

use super::*;

#[tokio::test]
async fn metrics_are_exported() {
    let handle = install_metrics();
    let app = router(embedded(), HttpConfig::default(), Some(handle));
    seed(&app, "met", 4).await;
    call(&app, "GET", "/v1/boards/met/top", None).await;
    call(&app, "GET", "/nowhere", None).await;
    let r = call(&app, "GET", "/metrics", None).await;
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let has = |needle: &str| text.lines().any(|l| l.contains(needle));
    assert!(
        has(
            r#"podium_http_requests_total{route="/v1/boards/{board}/top",method="GET",status="200"}"#
        ),
        "{text}"
    );
    assert!(has(r#"route="unmatched""#), "{text}");
    assert!(has("podium_http_request_seconds_bucket{"), "{text}");
    assert!(has(r#"podium_board_members{board="met"} 4"#), "{text}");
    assert!(has("podium_boards "), "{text}");
    assert!(has("podium_snapshot_pending 0"), "{text}");
    // A board nobody searched has no index yet; its first search builds
    // one, which the gauges then count.
    let gauge = |text: &str, name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert_eq!(
        gauge(&text, r#"podium_search_index_bytes{board="met"}"#),
        0.0
    );
    let r = call(&app, "GET", "/v1/boards/met/search?q=name", None).await;
    assert_eq!(r.json()["total"], 4);
    let r = call(&app, "GET", "/metrics", None).await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let met = gauge(&text, r#"podium_search_index_bytes{board="met"}"#);
    assert!(met > 0.0, "{text}");
    // A deleted board's series are gone, not left at 0.
    call(&app, "DELETE", "/v1/boards/met", None).await;
    let r = call(&app, "GET", "/metrics", None).await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(!text.contains(r#"board="met""#), "{text}");
    assert!(has("# TYPE podium_board_members gauge"), "{text}");
}

#[test]
fn per_board_series_sum_archives_and_escape_names() {
    use podium_core::api::BoardSize;
    let size = |board: &str, members, of: Option<&str>| BoardSize {
        board: board.into(),
        members,
        archive_of: of.map(Into::into),
        heap_bytes: 100 * members,
    };
    let boards = [
        size("s", 1, None),
        size("s@1", 10, Some("s")),
        size("s@2", 20, Some("s")),
        size("gone@1", 5, Some("gone")),
        size("q\"x\\y\nz", 2, None),
    ];
    let bytes = HashMap::from([("s".to_string(), 7), ("s@2".to_string(), 100)]);
    let text = board_series(&boards, &bytes);
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        r#"podium_board_members{board="s"} 1"#,
        r#"podium_board_members{board="q\"x\\y\nz"} 2"#,
        r#"podium_search_index_bytes{board="s"} 7"#,
        r#"podium_archives{board="s"} 2"#,
        r#"podium_archives{board="gone"} 1"#,
        r#"podium_archive_members{board="s"} 30"#,
        r#"podium_archive_search_index_bytes{board="s"} 100"#,
        r#"podium_board_heap_bytes{board="s"} 100"#,
        r#"podium_archive_heap_bytes{board="s"} 3000"#,
        "# TYPE podium_archives gauge",
    ] {
        assert!(lines.contains(&want), "no {want} in\n{text}");
    }
    assert!(
        !text.contains("s@"),
        "an archive has a series of its own:\n{text}"
    );
    // Every family once, its TYPE line before its samples.
    for family in [
        "podium_board_members",
        "podium_search_index_bytes",
        "podium_archives",
        "podium_archive_members",
        "podium_archive_search_index_bytes",
        "podium_board_heap_bytes",
        "podium_archive_heap_bytes",
    ] {
        let ty = format!("# TYPE {family} gauge");
        assert_eq!(lines.iter().filter(|l| **l == ty).count(), 1, "{text}");
        let at = lines.iter().position(|l| *l == ty).unwrap();
        let first = lines
            .iter()
            .position(|l| l.starts_with(&format!("{family}{{")))
            .unwrap();
        assert!(at < first, "{text}");
    }
}

#[test]
fn panics_become_internal_errors() {
    let r = error::panic_response(Box::new("boom"));
    assert_eq!(r.status(), 500);
}

#[tokio::test]
async fn a_panicking_handler_answers_500_json() {
    // The layers router() puts around routes, around a route that panics.
    let app: Router = Router::new()
        .route(
            "/boom",
            axum::routing::get(|| async {
                if true {
                    panic!("boom");
                }
                "unreachable"
            }),
        )
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            error::panic_response,
        ))
        .layer(axum::middleware::from_fn(
            |req: axum::extract::Request, next: axum::middleware::Next| async move {
                error::json_errors(next.run(req).await).await
            },
        ));
    let r = send(&app, req("GET", "/boom", None)).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.code(), "internal");
}

// ------------------------------------------------- routes vs. OpenAPI

#[tokio::test]
async fn openapi_and_router_list_the_same_routes() {
    let doc = openapi::document(true);
    let mut in_doc = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            in_doc.insert((method.to_ascii_uppercase(), path.clone()));
            assert!(op["operationId"].is_string());
            assert!(
                op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .any(|k| k.starts_with('2')),
                "{method} {path}"
            );
        }
    }
    let in_table: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(in_doc, in_table);
    assert_eq!(ROUTES.len(), in_table.len(), "a route is listed twice");
    for r in ROUTES {
        let id = r.id.unwrap_or(r.op.name());
        assert!(
            openapi::operation(id).is_some(),
            "{id} has no OpenAPI operation"
        );
    }

    // Every documented route is served: a request with placeholder
    // parameters is never a routing 404 or a 405.
    let app = app();
    for (method, path) in &in_doc {
        let r = send(&app, req(method, &concrete(path), Some("{}"))).await;
        assert_ne!(r.status, 405, "{method} {path}");
        if r.status == 404 {
            assert_ne!(r.code(), "not_found", "{method} {path} is not routed");
        }
    }
    // And every other method on those paths is a 405.
    let paths: BTreeSet<&String> = in_doc.iter().map(|(_, p)| p).collect();
    for path in paths {
        for method in ["GET", "PUT", "POST", "DELETE", "PATCH"] {
            if in_doc.contains(&(method.to_string(), path.clone())) {
                continue;
            }
            let r = send(&app, req(method, &concrete(path), None)).await;
            assert_eq!(r.status, 405, "{method} {path} should not be routed");
            assert_eq!(r.code(), "method_not_allowed");
        }
    }

    // Every route naming its member in the path has a twin on the
    // collection path taking it in the query (ids a path cannot carry),
    // documented so.
    for r in ROUTES.iter().filter(|r| r.path.ends_with("/{member}")) {
        let collection = r.path.trim_end_matches("/{member}");
        let twin = ROUTES
            .iter()
            .find(|t| t.path == collection && t.method == r.method)
            .unwrap_or_else(|| panic!("{} {} has no twin at {collection}", r.method, r.path));
        assert_eq!(twin.op, r.op, "{} {collection}", r.method);
        let id = format!("{}_by_query", r.id.unwrap_or(r.op.name()));
        assert_eq!(twin.id, Some(id.as_str()));
        let op = &doc["paths"][collection][r.method.to_ascii_lowercase()];
        let params = op["parameters"].to_string();
        assert!(params.contains("parameters/member_query"), "{id}: {params}");
        assert!(!params.contains("parameters/member\""), "{id}: {params}");
        let param = &doc["components"]["parameters"]["member_query"];
        assert_eq!(
            (&param["in"], &param["name"], &param["required"]),
            (&json!("query"), &json!("member"), &json!(true))
        );
    }

    // Every $ref points at a component.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "$ref" {
                        out.push(x.as_str().unwrap().to_string());
                    }
                    refs(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let ptr = r.strip_prefix('#').unwrap();
        assert!(doc.pointer(ptr).is_some(), "dangling $ref {r}");
    }
    // Every path parameter is declared.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            let params = op["parameters"].to_string();
            for name in ["board", "member"] {
                if path.contains(&format!("{{{name}}}")) {
                    assert!(
                        params.contains(&format!("parameters/{name}")),
                        "{path} misses {name}"
                    );
                }
            }
        }
    }
}
