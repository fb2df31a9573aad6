//! Parts of the main scenario that build their own inputs: members with
//! odd bytes, plain and named batches, imports, and name search.

use super::*;

/// Pages whose members hold newlines, NULs, other control and non-ASCII
/// bytes (the Redis script joins a page's strings into one, see
/// `packed`), and pages with and without names, in every ranking and
/// both orders, through every read that answers a page.
pub(super) async fn odd_members(b: &dyn Backend, l: &mut Log) {
    let members = [
        "plain",
        "two\nlines",
        "\n",
        "end\n",
        "tab\there",
        "nul\0byte",
        "é ü",
        "x\r\ny",
        "emoji 🎲",
        ".",
        "..",
    ];
    for (i, cfg) in [
        json!({}),
        json!({"order": "asc", "ranking": "competition"}),
        json!({"ranking": "dense"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("odd{i}");
        l.add(
            "create odd",
            b.board_create(&ops::CreateBoard {
                board: board.to_string(),
                config: cfg.clone(),
            })
            .await,
        );
        let batch: Vec<SubmitIn> = members
            .iter()
            .enumerate()
            .map(|(k, m)| s(m, (k % 4) as f64))
            .collect();
        l.add(
            "fill odd",
            b.submit(&ops::SubmitMany {
                board: board.to_string(),
                entries: batch.to_vec(),
            })
            .await,
        );
        for page in [1, 2, 3] {
            l.add(
                &format!("top {board} p{page}"),
                b.top(&ops::Top {
                    board: board.to_string(),
                    page: Some(page),
                    page_size: Some(4),
                    with_data: false,
                })
                .await,
            );
        }
        l.add(
            "around odd",
            b.around(&ops::Around {
                board: board.to_string(),
                member: ("two\nlines").to_string(),
                page_size: Some(5),
                with_data: true,
            })
            .await,
        );
        l.add(
            "range odd",
            b.range_by_rank(&ops::RangeByRank {
                board: board.to_string(),
                start: 2,
                stop: 7,
                from_worst: true,
                with_data: false,
            })
            .await,
        );
        l.add(
            "score range odd",
            b.range_by_score(&ops::RangeByScore {
                board: board.to_string(),
                bounds: range(Some(1.0), None, false, false),
                from_worst: false,
                offset: Some(1),
                limit: Some(5),
                with_data: false,
            })
            .await,
        );
        // Names on some: the page carries them.
        l.add(
            "name odd",
            b.set_data(&ops::SetData {
                board: board.to_string(),
                member: ("\n").to_string(),
                name: Some("Newline".into()),
                data: None,
            })
            .await,
        );
        l.add(
            "top named odd",
            b.top(&ops::Top {
                board: board.to_string(),
                page: None,
                page_size: None,
                with_data: true,
            })
            .await,
        );
        l.add(
            "pct odd",
            b.score_at_percentile(&ops::ScoreAtPercentile {
                board: board.to_string(),
                p: 50.0,
            })
            .await,
        );
        l.add(
            "entry odd",
            b.entry(&ops::GetEntry {
                board: board.to_string(),
                member: ("end\n").to_string(),
                page_size: None,
            })
            .await,
        );
        // The ids a URL path cannot carry (HTTP names them in the query):
        // every operation on one member.
        for m in [".", ".."] {
            let member = m.to_string();
            let board = board.to_string();
            l.add(
                &format!("set data {m}"),
                b.set_data(&ops::SetData {
                    board: board.clone(),
                    member: member.clone(),
                    name: Some(format!("Dot {m}")),
                    data: Some(json!({"dots": m.len()})),
                })
                .await,
            );
            for _ in 0..2 {
                l.add(
                    &format!("entry {m}"),
                    b.entry(&ops::GetEntry {
                        board: board.clone(),
                        member: member.clone(),
                        page_size: Some(3),
                    })
                    .await,
                );
                l.add(
                    &format!("rank {m}"),
                    b.rank(&ops::Rank {
                        board: board.clone(),
                        member: member.clone(),
                    })
                    .await,
                );
                l.add(
                    &format!("percentile {m}"),
                    b.percentile(&ops::Percentile {
                        board: board.clone(),
                        member: member.clone(),
                    })
                    .await,
                );
                l.add(
                    &format!("around {m}"),
                    b.around(&ops::Around {
                        board: board.clone(),
                        member: member.clone(),
                        page_size: Some(3),
                        with_data: true,
                    })
                    .await,
                );
                // Removed on the first round: the second reads a member
                // that is gone.
                l.add(
                    &format!("remove {m}"),
                    b.remove(&ops::Remove {
                        board: board.clone(),
                        members: vec![member.clone()],
                    })
                    .await,
                );
            }
        }
    }
}

/// Batches of plain `set`s, which the Redis script applies in one
/// multi-member ZADD and whose ranks podium works out as if applied one
/// by one: tie-heavy scores (±0, ±inf), new and existing members, later
/// entries overtaking earlier ones, in both orders and both rankings it
/// takes; mixed with batches it cannot take (a member twice, a name),
/// removals, and searches before and after the board's index is built.
pub(super) async fn plain_batches(b: &dyn Backend, l: &mut Log) {
    let mut rng = SmallRng::seed_from_u64(7);
    // No -0.0: Redis replies a stored -0 as `0` on every read, where the
    // engine keeps the sign (a difference of every path, not of batches).
    let scores = [-1.0, 0.0, 1.0, 2.5, 3.0, f64::INFINITY, f64::NEG_INFINITY];
    for (i, cfg) in [
        json!({}),
        json!({"order": "asc"}),
        json!({"ranking": "competition"}),
        json!({"order": "asc", "ranking": "competition"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("plain{i}");
        if i > 0 {
            l.add(
                "create plain",
                b.board_create(&ops::CreateBoard {
                    board: board.to_string(),
                    config: cfg.clone(),
                })
                .await,
            );
        }
        for round in 0..40 {
            let n = rng.random_range(1..40);
            let mut pool: Vec<usize> = (0..60).collect();
            let mut batch = Vec::new();
            for _ in 0..n {
                let m = pool.swap_remove(rng.random_range(0..pool.len()));
                let x = if rng.random_bool(0.5) {
                    scores[rng.random_range(0..scores.len())]
                } else {
                    rng.random_range(0..6) as f64
                };
                batch.push(s(&format!("p{m}"), x));
            }
            match rng.random_range(0..10) {
                0 => batch.push(s(&batch[0].member.clone(), 4.0)),
                1 => batch[0].name = Some(format!("Plain {round}")),
                _ => {}
            }
            l.add(
                "plain batch",
                b.submit(&ops::SubmitMany {
                    board: board.to_string(),
                    entries: batch.to_vec(),
                })
                .await,
            );
            if round % 10 == 9 {
                let gone: Vec<String> = (0..5)
                    .map(|_| format!("p{}", rng.random_range(0..60)))
                    .collect();
                l.add(
                    "plain remove",
                    b.remove(&ops::Remove {
                        board: board.to_string(),
                        members: gone.to_vec(),
                    })
                    .await,
                );
                l.add(
                    "plain top",
                    b.top(&ops::Top {
                        board: board.to_string(),
                        page: None,
                        page_size: Some(100),
                        with_data: false,
                    })
                    .await,
                );
                // The first search builds the index; later batches keep it.
                for q in ["p1", "plain", "p"] {
                    l.add(
                        "plain search",
                        b.search(&ops::Search {
                            board: board.to_string(),
                            query: q.to_string(),
                            limit: Some(10),
                            offset: Some(0),
                            with_data: false,
                        })
                        .await,
                    );
                }
            }
        }
    }
}

async fn import_searches(b: &dyn Backend, l: &mut Log, board: &str) {
    for q in [
        "m1", "m12", "m", "m2*", "\"m3\"", "ann", "al", "lee", "m1 m1", "ann-lee",
    ] {
        l.add(
            &format!("import search {board} {q}"),
            b.search(&ops::Search {
                board: board.to_string(),
                query: q.to_string(),
                limit: Some(10),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }
}

/// `import` batches, which the Redis script takes as multi-member ZADDs
/// without storing the search sources of members whose id is their only
/// word: searched afterwards (the index built from the sorted set), then
/// named, renamed back to none and searched; imported again into the
/// built index (new members indexed, existing ones moved); removals;
/// duplicates and ids that do not tokenise to themselves in a batch;
/// boards whose config the script leaves to `submit` (bounds, `best`,
/// dense, a cap, read-only); a reset (the archive indexed from its copy)
/// and a merge of imported boards.
pub(super) async fn import_batches(b: &dyn Backend, l: &mut Log) {
    let plain = |from: usize, to: usize, k: f64| -> Vec<SubmitIn> {
        (from..to)
            .map(|i| s(&format!("m{i}"), (i % 7) as f64 * k))
            .collect()
    };
    // Plain entries, then the first search.
    l.add(
        "import plain",
        b.import(&ops::SubmitMany {
            board: "imp".to_string(),
            entries: (plain(0, 150, 1.0)).to_vec(),
        })
        .await,
    );
    l.add(
        "import again",
        b.import(&ops::SubmitMany {
            board: "imp".to_string(),
            entries: (plain(100, 200, -1.0)).to_vec(),
        })
        .await,
    );
    l.add(
        "import top",
        b.top(&ops::Top {
            board: "imp".to_string(),
            page: None,
            page_size: Some(20),
            with_data: false,
        })
        .await,
    );
    import_searches(b, l, "imp").await;
    // Plain entries, then names (and data), then one name cleared.
    l.add(
        "import plain 2",
        b.import(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: (plain(0, 120, 2.0)).to_vec(),
        })
        .await,
    );
    let named: Vec<SubmitIn> = (0..30)
        .map(|i| {
            with(s(&format!("m{}", i * 3), i as f64), |e| {
                e.name = Some(format!("Al{i} Lee"));
                if i % 4 == 0 {
                    e.data = Some(json!({"team": "ann"}));
                }
            })
        })
        .collect();
    l.add(
        "import names",
        b.submit(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: named.to_vec(),
        })
        .await,
    );
    l.add(
        "import clear name",
        b.submit(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: ([
                with(s("m3", 1.0), |e| e.name = Some(String::new())),
                with(s("m6", 2.0), |e| e.name = Some("Ann".into())),
            ])
            .to_vec(),
        })
        .await,
    );
    import_searches(b, l, "imp2").await;
    // Into the built index: new members, moved ones, mixed ids, duplicates.
    let mut mixed = plain(110, 170, 3.0);
    mixed.push(s("Ann-Lee", 4.0));
    mixed.push(s("m111", 9.0));
    l.add(
        "import mixed",
        b.import(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: mixed.to_vec(),
        })
        .await,
    );
    l.add(
        "import more",
        b.import(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: (plain(160, 220, 0.5)).to_vec(),
        })
        .await,
    );
    let mut dup = plain(300, 310, 1.0);
    dup.push(s("m300", -5.0));
    l.add(
        "import dup",
        b.import(&ops::SubmitMany {
            board: "imp2".to_string(),
            entries: dup.to_vec(),
        })
        .await,
    );
    l.add(
        "import remove",
        b.remove(&ops::Remove {
            board: "imp2".to_string(),
            members: (["m1".into(), "m3".into(), "m6".into(), "m200".into()]).to_vec(),
        })
        .await,
    );
    import_searches(b, l, "imp2").await;
    read_all(b, l, "imp2", &["m1", "m111", "m300", "Ann-Lee"]).await;
    // Entries that fail alone, and boards the script leaves to submit.
    let mut bad = plain(0, 5, 1.0);
    bad.push(s("", 1.0));
    bad.push(s("m9", f64::NAN));
    bad.push(with(s("m8", 1.0), |e| e.op = Some("best".into())));
    l.add(
        "import bad",
        b.import(&ops::SubmitMany {
            board: "imp".to_string(),
            entries: bad.to_vec(),
        })
        .await,
    );
    for (i, cfg) in [
        json!({"min_score": 0, "max_score": 100}),
        json!({"update": "best"}),
        json!({"ranking": "dense"}),
        json!({"max_members": 50}),
        json!({"update": "incr", "order": "asc"}),
    ]
    .iter()
    .enumerate()
    {
        let board = format!("impc{i}");
        l.add(
            "import create",
            b.board_create(&ops::CreateBoard {
                board: board.to_string(),
                config: cfg.clone(),
            })
            .await,
        );
        let mut batch = plain(0, 80, 30.0);
        batch.push(s("m1", -1.0));
        l.add(
            "import cfg",
            b.import(&ops::SubmitMany {
                board: board.to_string(),
                entries: batch.to_vec(),
            })
            .await,
        );
        l.add(
            "import cfg",
            b.import(&ops::SubmitMany {
                board: board.to_string(),
                entries: (plain(40, 90, 31.0)).to_vec(),
            })
            .await,
        );
        l.add(
            "import cfg top",
            b.top(&ops::Top {
                board: board.to_string(),
                page: None,
                page_size: Some(100),
                with_data: false,
            })
            .await,
        );
        l.add(
            "import cfg search",
            b.search(&ops::Search {
                board: board.to_string(),
                query: "m4".to_string(),
                limit: Some(10),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }
    // A reset: the archive gets the content, its index built on search.
    l.add(
        "import reset",
        b.reset(&ops::Reset {
            board: "imp".to_string(),
        })
        .await,
    );
    l.add(
        "import into reset board",
        b.import(&ops::SubmitMany {
            board: "imp".to_string(),
            entries: (plain(0, 3, 1.0)).to_vec(),
        })
        .await,
    );
    l.add(
        "import archive",
        b.import(&ops::SubmitMany {
            board: ("imp@2026-11-21T12:00:00Z").to_string(),
            entries: (plain(0, 3, 1.0)).to_vec(),
        })
        .await,
    );
    import_searches(b, l, "imp").await;
    import_searches(b, l, "imp@2026-11-21T12:00:00Z").await;
    l.add(
        "import archive top",
        b.top(&ops::Top {
            board: ("imp@2026-11-21T12:00:00Z").to_string(),
            page: None,
            page_size: Some(10),
            with_data: false,
        })
        .await,
    );
    // A merge of imported boards: searchable by id.
    l.add(
        "import merge",
        b.combine(&ops::Combine {
            dest: "impm".to_string(),
            req: (serde_json::from_value::<CombineIn>(json!({"sources": ["imp2", "impc0"]}))
                .unwrap())
            .clone(),
            intersect: false,
        })
        .await,
    );
    l.add(
        "import merge more",
        b.import(&ops::SubmitMany {
            board: "impm".to_string(),
            entries: (plain(500, 520, 1.0)).to_vec(),
        })
        .await,
    );
    import_searches(b, l, "impm").await;
}

/// Search (docs/spec.md §3) through every write that changes what matches.
pub(super) async fn search_scenario(b: &dyn Backend, l: &mut Log) {
    l.add(
        "create people",
        b.board_create(&ops::CreateBoard {
            board: "people".to_string(),
            config:
                (json!({"search_fields": ["name", "team"], "max_members": 12, "ranking": "dense"}))
                    .clone(),
        })
        .await,
    );
    let people = vec![
        with(s("p1", 10.0), |e| {
            e.name = Some("Al Alvarez".into());
            e.data = Some(json!({"team": "red", "n": 3}));
        }),
        with(s("p2", 20.0), |e| e.name = Some("Al".into())),
        with(s("p3", 20.0), |e| {
            e.name = Some("Al Al".into());
            e.data = Some(json!({"team": "Red Sox"}));
        }),
        with(s("p4", 5.0), |e| e.name = Some("José Ángel O'Brien".into())),
        with(s("p5", 7.0), |e| {
            e.name = Some("Alice Jones".into());
            e.data = Some(json!({"team": "blue", "name": "red"}));
        }),
        s("alvin99", 1.0),
        with(s("p7", 15.0), |e| e.name = Some("王小明".into())),
        with(s("p8", 15.0), |e| {
            e.name = Some("jean-luc Picard".into());
            e.data = Some(json!({"team": true}));
        }),
        with(s("p9", f64::INFINITY), |e| e.name = Some("ALI ali".into())),
        with(s("p10", -3.0), |e| e.name = Some("---".into())),
    ];
    l.add(
        "submit people",
        b.submit(&ops::SubmitMany {
            board: "people".to_string(),
            entries: people.to_vec(),
        })
        .await,
    );
    search_all(b, l, "people").await;
    l.add(
        "search missing",
        b.search(&ops::Search {
            board: "nope".to_string(),
            query: "al".to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );
    l.add(
        "search limit too big",
        b.search(&ops::Search {
            board: "people".to_string(),
            query: "al".to_string(),
            limit: Some(100_000),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );
    let long = "x".repeat(65);
    l.add(
        "search long word",
        b.search(&ops::Search {
            board: "people".to_string(),
            query: long.to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );
    let huge = "a ".repeat(1500);
    l.add(
        "search long query",
        b.search(&ops::Search {
            board: "people".to_string(),
            query: huge.to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );

    // Renames, data changes, score moves, name cleared (the id is searched).
    l.add(
        "rename p2",
        b.submit_one(&ops::Submit {
            board: "people".to_string(),
            entry: (with(s("p2", 30.0), |e| e.name = Some("Bob Al".into()))).clone(),
        })
        .await,
    );
    l.add(
        "set_data p5",
        b.set_data(&ops::SetData {
            board: "people".to_string(),
            member: "p5".to_string(),
            name: None,
            data: Some(json!({"team": "red"})),
        })
        .await,
    );
    l.add(
        "set_data p4",
        b.set_data(&ops::SetData {
            board: "people".to_string(),
            member: "p4".to_string(),
            name: Some(String::new()),
            data: None,
        })
        .await,
    );
    l.add(
        "data only p3",
        b.submit_one(&ops::Submit {
            board: "people".to_string(),
            entry: (with(s("p3", 2.0), |e| e.data = Some(json!({"x": 1})))).clone(),
        })
        .await,
    );
    l.add(
        "incr p1",
        b.submit_one(&ops::Submit {
            board: "people".to_string(),
            entry: (with(s("p1", 100.0), |e| e.op = Some("incr".into()))).clone(),
        })
        .await,
    );
    search_all(b, l, "people").await;

    // Removals and capped evictions leave the index.
    l.add(
        "remove p9",
        b.remove(&ops::Remove {
            board: "people".to_string(),
            members: (["p9".into()]).to_vec(),
        })
        .await,
    );
    let more: Vec<SubmitIn> = (0..6)
        .map(|i| {
            with(s(&format!("q{i}"), 50.0 + i as f64), |e| {
                e.name = Some(format!("Alma {i}"))
            })
        })
        .collect();
    l.add(
        "evicting",
        b.submit(&ops::SubmitMany {
            board: "people".to_string(),
            entries: more.to_vec(),
        })
        .await,
    );
    search_all(b, l, "people").await;
    l.add(
        "remove by rank",
        b.remove_range(&ops::RemoveRange {
            board: "people".to_string(),
            by: ops::RangeBy::Rank { start: 1, stop: 2 },
        })
        .await,
    );
    l.add(
        "remove by score",
        b.remove_range(&ops::RemoveRange {
            board: "people".to_string(),
            by: ops::RangeBy::Score(range(Some(0.0), Some(12.0), false, false)),
        })
        .await,
    );
    search_all(b, l, "people").await;

    // Other search fields re-index in place; none disables search.
    l.add(
        "fields team",
        b.board_put(&ops::PutBoard {
            board: "people".to_string(),
            config: (json!({"search_fields": ["team"], "order": "asc"})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    search_all(b, l, "people").await;
    l.add(
        "fields back",
        b.board_put(&ops::PutBoard {
            board: "people".to_string(),
            config: (json!({"search_fields": ["team", "name"], "max_members": 12})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    search_all(b, l, "people").await;

    // Merge results are searched by id; an archive keeps its index and the
    // reset board starts with none.
    l.add(
        "merge people",
        b.combine(&ops::Combine {
            dest: "people".to_string(),
            req: (CombineIn {
                sources: vec!["people".into(), "game".into()],
                weights: None,
                aggregate: None,
            })
            .clone(),
            intersect: false,
        })
        .await,
    );
    search_all(b, l, "people").await;
    l.add(
        "refill",
        b.submit(&ops::SubmitMany {
            board: "people".to_string(),
            entries: people.to_vec(),
        })
        .await,
    );
    l.add(
        "reset people",
        b.reset(&ops::Reset {
            board: "people".to_string(),
        })
        .await,
    );
    search_all(b, l, "people").await;
    search_all(b, l, "people@2026-11-21T12:00:00Z").await;
    l.add(
        "fields none",
        b.board_put(&ops::PutBoard {
            board: "people".to_string(),
            config: (json!({"search_fields": []})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    l.add(
        "search disabled",
        b.search(&ops::Search {
            board: "people".to_string(),
            query: "al".to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );
    l.add(
        "delete people",
        b.board_delete(&ops::DeleteBoard {
            board: "people".to_string(),
        })
        .await,
    );
    l.add(
        "search deleted",
        b.search(&ops::Search {
            board: "people".to_string(),
            query: "al".to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        })
        .await,
    );

    // Random names from a few overlapping syllables: repeated words,
    // prefixes of each other, exact and prefix tokens, both orders.
    let syll = [
        "al", "ali", "alv", "bo", "bob", "jo", "jos", "an", "ann", "é",
    ];
    let mut rng = SmallRng::seed_from_u64(11);
    for (board, order) in [("srand-desc", "desc"), ("srand-asc", "asc")] {
        l.add(
            "create srand",
            b.board_create(&ops::CreateBoard {
                board: board.to_string(),
                config: (json!({"order": order, "ranking": "competition"})).clone(),
            })
            .await,
        );
        let batch: Vec<SubmitIn> = (0..300)
            .map(|i| {
                let n = rng.random_range(1..4);
                let name: Vec<&str> = (0..n)
                    .map(|_| syll[rng.random_range(0..syll.len())])
                    .collect();
                with(s(&format!("m{i}"), rng.random_range(0..20) as f64), |e| {
                    e.name = Some(name.join(" "))
                })
            })
            .collect();
        l.add(
            "submit srand",
            b.submit(&ops::SubmitMany {
                board: board.to_string(),
                entries: batch.to_vec(),
            })
            .await,
        );
        for _ in 0..150 {
            let n = rng.random_range(1..4);
            let q: Vec<String> = (0..n)
                .map(|_| {
                    let w = syll[rng.random_range(0..syll.len())];
                    match rng.random_range(0..4) {
                        0 => format!("{w}*"),
                        1 => format!("\"{w}\""),
                        _ => w.to_string(),
                    }
                })
                .collect();
            let q = q.join(" ");
            l.add(
                &format!("srand {q:?}"),
                b.search(&ops::Search {
                    board: board.to_string(),
                    query: q.to_string(),
                    limit: Some(5),
                    offset: Some(rng.random_range(0..3)),
                    with_data: false,
                })
                .await,
            );
        }
    }
}
