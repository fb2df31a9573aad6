//! Name search: order, paging, stable answers, imported names.

use super::*;

/// `GET /v1/boards/{board}/search`: diacritics folded, prefix on the last
/// word, leaderboard order with ranks and `total`, paging, the index
/// following writes made after the first search, and clear errors.
#[tokio::test]
async fn search_finds_members_by_name_in_rank_order() {
    let app = app();
    let entries = json!([
        {"member": "p1", "score": 50, "name": "José Álvarez"},
        {"member": "p2", "score": 70, "name": "Josephine Baker"},
        {"member": "p3", "score": 60, "name": "Ann Jones", "data": {"team": "red"}},
        {"member": "p4", "score": 90, "name": "Bob Marley"}
    ]);
    let r = call(&app, "POST", "/v1/boards/s/scores", Some(entries)).await;
    assert_eq!(r.status, StatusCode::OK);

    let r = call(&app, "GET", "/v1/boards/s/search?q=jose", None).await;
    let j = r.json();
    assert_eq!(j["total"], 2, "{j}");
    let found: Vec<(String, u64)> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["member"].as_str().unwrap().to_string(),
                e["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    // Best first: Josephine (70, rank 2) before José (50, rank 4).
    assert_eq!(found, vec![("p2".to_string(), 2), ("p1".to_string(), 4)]);
    assert_eq!(j["ranking"], "unique");

    // An exact first word, a prefix last word; paging.
    let r = call(&app, "GET", "/v1/boards/s/search?q=jose%20alv", None).await;
    assert_eq!(r.json()["entries"][0]["member"], "p1");
    let r = call(
        &app,
        "GET",
        "/v1/boards/s/search?q=j&limit=1&offset=1",
        None,
    )
    .await;
    let j = r.json();
    assert_eq!(
        (j["total"].as_u64(), j["entries"].as_array().unwrap().len()),
        (Some(3), 1)
    );
    assert_eq!(j["entries"][0]["member"], "p3");

    // Writes after the first search are found at once.
    let r = call(
        &app,
        "POST",
        "/v1/boards/s/scores",
        Some(json!({"member": "p5", "score": 100, "name": "Jörg Müller"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = call(&app, "GET", "/v1/boards/s/search?q=jorg%20mu", None).await;
    assert_eq!(r.json()["entries"][0]["rank"], 1);
    let r = call(&app, "DELETE", "/v1/boards/s/members/p2", None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = call(&app, "GET", "/v1/boards/s/search?q=jose", None).await;
    assert_eq!(r.json()["total"], 1);

    // A query with no word is well formed and matches nothing.
    let r = call(&app, "GET", "/v1/boards/s/search?q=%20-%20", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        (
            r.json()["total"].as_u64(),
            r.json()["entries"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    expect_err(
        &app,
        "GET",
        "/v1/boards/s/search?q=team:red",
        None,
        // A field another board may search: a conflict with this one's.
        409,
        "wrong_type",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/nope/search?q=a",
        None,
        404,
        "board_not_found",
    )
    .await;
    expect_err(
        &app,
        "GET",
        "/v1/boards/s/search",
        None,
        400,
        "invalid_argument",
    )
    .await;
}

/// The first search of a board (which builds its index and answers from
/// the engine's owned page) and the later ones (encoded straight from the
/// board) answer the same bytes, with and without data, for every paging.
#[tokio::test]
async fn first_and_later_searches_answer_the_same_bytes() {
    for with_data in ["", "&with_data=true"] {
        let app = app();
        let entries = json!([
            {"member": "p1", "score": 50, "name": "José \"Jo\" Álvarez"},
            {"member": "p2", "score": 70, "name": "Josephine Baker", "data": {"team": "red", "n": [1, 2.5]}},
            {"member": "p\u{7}3", "score": -1.5, "name": "Jo\\nes"},
            {"member": "p4", "score": 90}
        ]);
        let r = call(&app, "POST", "/v1/boards/s/scores", Some(entries)).await;
        assert_eq!(r.status, StatusCode::OK);
        for (i, q) in [
            "jo",
            "jo&limit=1&offset=1",
            "jo&offset=9",
            "jo&limit=0",
            "zz",
        ]
        .iter()
        .enumerate()
        {
            let uri = format!("/v1/boards/s/search?q={q}{with_data}");
            let first = call(&app, "GET", &uri, None).await;
            let later = call(&app, "GET", &uri, None).await;
            assert_eq!(first.status, StatusCode::OK, "{uri}");
            assert_eq!(first.body, later.body, "{uri}");
            if i == 0 {
                let j = later.json();
                assert_eq!(j["total"], 3, "{j}");
                assert_eq!(j["entries"][0]["name"], "Josephine Baker");
                assert_eq!(j["entries"][0].get("data").is_some(), !with_data.is_empty());
            }
        }
        expect_err(
            &app,
            "GET",
            "/v1/boards/s/search?q=jo&limit=10001",
            None,
            400,
            "invalid_argument",
        )
        .await;
    }
}

async fn search_members(app: &Router, board: &str, q: &str) -> Vec<String> {
    let r = call(
        app,
        "GET",
        &format!("/v1/boards/{board}/search?q={q}"),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let j = r.json();
    let found: Vec<String> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(j["total"], found.len() as u64, "{j}");
    found
}

/// Names arrive by import (NDJSON and CSV `member,score,name`) and are
/// searchable right after, whether the board's index is built by that
/// search or already existed before the import; a re-import that renames
/// a member moves it in the index.
#[tokio::test]
async fn imported_names_are_searchable_at_once() {
    let app = app();
    // No index yet: the first search builds it from the imported names.
    let j = import_body(
        &app,
        "imp",
        "ndjson",
        "{\"member\":\"a1\",\"score\":5,\"name\":\"Ada Lovelace\"}\n\
         {\"member\":\"a2\",\"score\":9,\"name\":\"Alan Turing\"}\n",
    )
    .await;
    assert_eq!(j["imported"], 2, "{j}");
    let j = import_body(
        &app,
        "imp",
        "csv",
        "member,score,name\nc1,7,\"Grace Hopper, RADM\"\nc2,3,Adèle Lovelace\n",
    )
    .await;
    assert_eq!(j["imported"], 2, "{j}");
    assert_eq!(search_members(&app, "imp", "love").await, ["a1", "c2"]);
    assert_eq!(search_members(&app, "imp", "radm").await, ["c1"]);
    assert_eq!(search_members(&app, "imp", "adele").await, ["c2"]);

    // The index exists now: later imports, both formats, are found at once.
    import_body(
        &app,
        "imp",
        "csv",
        "n1,100,Linus Lovelace\nn2,1,Barbara Liskov\n",
    )
    .await;
    import_body(
        &app,
        "imp",
        "ndjson",
        "{\"member\":\"n3\",\"score\":50,\"name\":\"Ada Byron\"}\n",
    )
    .await;
    assert_eq!(
        search_members(&app, "imp", "love").await,
        ["n1", "a1", "c2"]
    );
    assert_eq!(search_members(&app, "imp", "liskov").await, ["n2"]);
    assert_eq!(search_members(&app, "imp", "ada").await, ["n3", "a1"]);
    // A re-import with another name replaces the old words.
    import_body(&app, "imp", "csv", "a1,5,Countess Augusta\n").await;
    assert_eq!(search_members(&app, "imp", "love").await, ["n1", "c2"]);
    assert_eq!(search_members(&app, "imp", "augusta").await, ["a1"]);
}
