//! Export and import.

use super::*;

#[test]
fn export_ndjson_is_the_top_order_and_imports_back() {
    let s = Server::start(&[]);
    let entries: Vec<(String, f64)> = (0..300)
        .map(|i| (format!("p{i:03}"), ((i * 7919) % 1000) as f64 / 4.0))
        .collect();
    let body: Vec<Value> = entries
        .iter()
        .map(|(m, sc)| json!({"member": m, "score": sc}))
        .collect();
    s.post(&board_path("ex", "/scores"), &json!(body))
        .expect(200);
    s.post(
        &board_path("ex", "/scores"),
        &json!({"member": "p000", "score": 0, "name": "Zero", "data": {"k": "v"}}),
    )
    .expect(200);

    let r = s.get(&board_path("ex", "/export"));
    assert_eq!(r.status, 200, "{}", r.text);
    let lines: Vec<Value> = r
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad NDJSON line {l:?}: {e}")))
        .collect();
    assert_eq!(lines.len(), 300);
    let top = s.get(&board_path("ex", "/top?page_size=1000")).expect(200);
    assert_eq!(
        lines
            .iter()
            .map(|l| (
                l["member"].as_str().unwrap().to_string(),
                l["score"].as_f64().unwrap(),
                l["rank"].as_u64().unwrap()
            ))
            .collect::<Vec<_>>(),
        triples(&top)
    );
    let zero = lines.iter().find(|l| l["member"] == "p000").unwrap();
    assert_eq!(
        (zero["name"].as_str(), zero["data"].clone()),
        (Some("Zero"), json!({"k": "v"}))
    );

    // Import the export into another board: the same board.
    let v = s
        .post_raw(
            &board_path("ex2", "/import?format=ndjson"),
            "application/x-ndjson",
            r.text.clone(),
        )
        .expect(200);
    assert_eq!(v["board"], "ex2");
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(300), Some(0))
    );
    let top2 = s.get(&board_path("ex2", "/top?page_size=1000")).expect(200);
    assert_eq!(triples(&top2), triples(&top));
    let z = s.get(&board_path("ex2", "/members/p000")).expect(200);
    assert_eq!(z["name"], "Zero");

    // Bad lines fail alone and are reported; the rest import.
    let ndjson = "{\"member\":\"n1\",\"score\":5}\n\
                  not json\n\
                  {\"member\":\"n2\",\"score\":\"nan\"}\n\
                  \n\
                  {\"member\":\"n3\",\"score\":7.5,\"name\":\"Three\"}\n";
    let v = s
        .post_raw(
            &board_path("nd", "/import?format=ndjson"),
            "application/x-ndjson",
            ndjson,
        )
        .expect(200);
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(2)),
        "{v}"
    );
    assert_eq!(v["errors"].as_array().unwrap().len(), 2, "{v}");
    let top = s.get(&board_path("nd", "/top")).expect(200);
    assert_eq!(
        triples(&top),
        vec![("n3".into(), 7.5, 1), ("n1".into(), 5.0, 2)]
    );
    assert_eq!(top["entries"][0]["name"], "Three");
}

#[test]
fn import_csv_with_quoted_fields() {
    let s = Server::start(&[]);
    let csv = "member,score,name\n\
               alice,10,Alice\n\
               \"smith, john\",30,\"Smith, John\"\n\
               \"say \"\"hi\"\"\",20,\n\
               bob,not-a-number,Bob\n\
               carol,-5.5,\"Carol\"\n";
    let v = s
        .post_raw(&board_path("csv", "/import?format=csv"), "text/csv", csv)
        .expect(200);
    assert_eq!(v["board"], "csv");
    assert_eq!(
        (v["imported"].as_u64(), v["failed"].as_u64()),
        (Some(4), Some(1)),
        "{v}"
    );
    assert_eq!(v["errors"].as_array().unwrap().len(), 1, "{v}");
    let top = s.get(&board_path("csv", "/top")).expect(200);
    assert_eq!(
        triples(&top),
        vec![
            ("smith, john".into(), 30.0, 1),
            ("say \"hi\"".into(), 20.0, 2),
            ("alice".into(), 10.0, 3),
            ("carol".into(), -5.5, 4)
        ]
    );
    assert_eq!(top["entries"][0]["name"], "Smith, John");
    assert_eq!(top["entries"][2]["name"], "Alice");
    let e = s
        .get(&board_path(
            "csv",
            &format!("/members/{}", enc("smith, john")),
        ))
        .expect(200);
    assert_eq!(e["rank"], 1);
}
