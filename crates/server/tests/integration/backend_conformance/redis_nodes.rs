//! The Redis backend alone: several nodes on one cluster, what it refuses,
//! a lost Redis or function library, half-finished resets, search sets
//! built during writes and imports, foreign member bytes.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_on_one_cluster_see_each_others_writes() {
    let cluster = Redis::cluster(false);
    let a = RedisBackend::connect(&cluster.url()).await.unwrap();
    let b = RedisBackend::connect(&cluster.url()).await.unwrap();
    let batch: Vec<SubmitIn> = (0..10_000).map(|i| s(&format!("p{i}"), i as f64)).collect();
    let r = a
        .submit(&ops::SubmitMany {
            board: "shared".to_string(),
            entries: batch.to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(r.len(), 10_000);
    let top = b
        .top(&ops::Top {
            board: "shared".to_string(),
            page: Some(1),
            page_size: Some(2),
            with_data: false,
        })
        .await
        .unwrap();
    assert_eq!(top.total, 10_000);
    assert_eq!(top.entries[0].member, "p9999");
    b.submit_one(&ops::Submit {
        board: "shared".to_string(),
        entry: (s("p0", 1e9)).clone(),
    })
    .await
    .unwrap();
    assert_eq!(
        a.rank(&ops::Rank {
            board: "shared".to_string(),
            member: "p0".to_string()
        })
        .await
        .unwrap()
        .rank,
        1
    );
    let names: Vec<String> = a
        .boards(&ops::ListBoards)
        .await
        .unwrap()
        .boards
        .into_iter()
        .map(|x| x.board)
        .collect();
    assert_eq!(names, ["shared"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_refuses_what_it_cannot_honour() {
    let single = Redis::single(false);
    let r = RedisBackend::connect(&single.url()).await.unwrap();
    for cfg in [json!({"tiebreak": "first"}), json!({"tiebreak": "last"})] {
        let e = r
            .board_create(&ops::CreateBoard {
                board: "b".to_string(),
                config: cfg.clone(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig, "{cfg}: {e}");
        let e = r
            .board_put(&ops::PutBoard {
                board: "b".to_string(),
                config: cfg.clone(),
                confirm_rerank: true,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidConfig, "{cfg}: {e}");
    }
    assert!(r.boards(&ops::ListBoards).await.unwrap().boards.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_redis_is_a_503_and_the_backend_recovers_by_itself() {
    let mut single = Redis::single(false);
    let port = single.nodes[0].port;
    let r = RedisBackend::connect(&single.url()).await.unwrap();
    r.submit_one(&ops::Submit {
        board: "b".to_string(),
        entry: (s("a", 1.0)).clone(),
    })
    .await
    .unwrap();
    single.nodes[0].kill();
    let t = Instant::now();
    let e = r
        .top(&ops::Top {
            board: "b".to_string(),
            page: None,
            page_size: None,
            with_data: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    eprintln!("503 after {:?}: {e}", t.elapsed());
    assert_eq!(e.code.status(), 503);
    let e = r
        .submit_one(&ops::Submit {
            board: "b".to_string(),
            entry: (s("a", 2.0)).clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::StorageUnavailable, "{e}");
    // A new server on the same port (empty: no persistence in this test).
    single.nodes[0].spawn();
    wait_until("redis back", || redis_cli(port, &["PING"]).contains("PONG"));
    let t = Instant::now();
    loop {
        match r
            .submit_one(&ops::Submit {
                board: "b".to_string(),
                entry: (s("a", 3.0)).clone(),
            })
            .await
        {
            Ok(out) => {
                assert_eq!(out.score.map(|x| x.0), Some(3.0));
                eprintln!("recovered {:?} after the restart", t.elapsed());
                break;
            }
            Err(e) => {
                assert_eq!(e.code, Code::StorageUnavailable, "{e}");
                assert!(t.elapsed() < Duration::from_secs(20), "no recovery: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert_eq!(
        r.rank(&ops::Rank {
            board: "b".to_string(),
            member: "a".to_string()
        })
        .await
        .unwrap()
        .rank,
        1
    );
}

/// Every node losing podium's function library (a Redis restarted without
/// its data, a `FUNCTION FLUSH`, a cluster node given a slot without it):
/// the next call of any kind (a read through the `no-writes` function, a
/// write, an import, a search) loads it again and answers as before, on a
/// single Redis and on every master of a cluster, more than once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_function_library_is_loaded_again() {
    for redis in [Redis::single(false), Redis::cluster(false)] {
        let r = RedisBackend::connect(&redis.url()).await.unwrap();
        let ports: Vec<u16> = redis.nodes.iter().map(|n| n.port).collect();
        let loaded = |port: u16| redis_cli(port, &["FUNCTION", "LIST"]).contains("podium_");
        assert!(ports.iter().all(|&p| loaded(p)), "loaded at connect");
        let flush = || {
            for &p in &ports {
                assert!(redis_cli(p, &["FUNCTION", "FLUSH"]).contains("OK"));
                assert!(!loaded(p));
            }
        };
        // Boards in several slots: on the cluster, on several masters.
        let boards = ["alpha", "beta", "gamma", "delta"];
        for b in boards {
            r.submit_one(&ops::Submit {
                board: b.to_string(),
                entry: (s("a", 1.0)).clone(),
            })
            .await
            .unwrap();
        }
        for b in boards {
            flush();
            let top = r
                .top(&ops::Top {
                    board: b.to_string(),
                    page: None,
                    page_size: None,
                    with_data: false,
                })
                .await
                .unwrap();
            assert_eq!(top.total, 1, "{b}");
            assert!(ports.iter().all(|&p| loaded(p)), "reloaded everywhere");
            flush();
            r.submit_one(&ops::Submit {
                board: b.to_string(),
                entry: (s("b", 2.0)).clone(),
            })
            .await
            .unwrap();
            flush();
            r.import(&ops::SubmitMany {
                board: b.to_string(),
                entries: ([s("c", 3.0), s("d", 4.0)]).to_vec(),
            })
            .await
            .unwrap();
            flush();
            let hits = r
                .search(&ops::Search {
                    board: b.to_string(),
                    query: "c".to_string(),
                    limit: Some(10),
                    offset: Some(0),
                    with_data: false,
                })
                .await
                .unwrap();
            assert_eq!(hits.total, 1, "{b}");
            flush();
            let e = r
                .entry(&ops::GetEntry {
                    board: b.to_string(),
                    member: "d".to_string(),
                    page_size: None,
                })
                .await
                .unwrap();
            assert_eq!((e.entry.rank, e.total), (1, 4), "{b}");
            // An import whose guards could not run (the library gone)
            // applied nothing by itself, then applied once, when retried.
            flush();
            r.import(&ops::SubmitMany {
                board: b.to_string(),
                entries: ([s("e", 5.0), s("a", 0.5)]).to_vec(),
            })
            .await
            .unwrap();
            let top = r
                .top(&ops::Top {
                    board: b.to_string(),
                    page: None,
                    page_size: None,
                    with_data: false,
                })
                .await
                .unwrap();
            let got: Vec<(String, f64)> = top
                .entries
                .iter()
                .map(|e| (e.member.clone(), e.score.0))
                .collect();
            let want = [("e", 5.0), ("d", 4.0), ("c", 3.0), ("b", 2.0), ("a", 0.5)];
            let want: Vec<(String, f64)> = want.iter().map(|(m, x)| (m.to_string(), *x)).collect();
            assert_eq!(got, want, "{b}");
        }
        for &p in &ports {
            no_import_side_keys(p);
        }
    }
}

/// A reset on Redis that stopped half-way (podium killed or Redis lost
/// during the copy into the archive) is finished by the board's next
/// reset, which then makes its own: the stopped reset's archive holds the
/// whole content it took (names, data, dense ranks, search), nothing is
/// archived twice, and no staging key is left. Stopped after its first
/// step, after creating the archive, with part of the content copied,
/// with all of it copied; the answers must be the embedded engine's,
/// whose reset cannot stop half-way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_stopped_half_way_is_finished_by_the_next() {
    async fn fill(b: &dyn Backend, board: &str, from: usize, to: usize) -> String {
        let batch: Vec<SubmitIn> = (from..to)
            .map(|i| {
                with(s(&format!("p{i}"), (i % 7) as f64), |e| {
                    if i % 2 == 0 {
                        e.name = Some(format!("Player {i}"));
                    }
                    if i % 3 == 0 {
                        e.data = Some(json!({"lvl": i}));
                    }
                })
            })
            .collect();
        format!(
            "{:?}",
            b.submit(&ops::SubmitMany {
                board: board.to_string(),
                entries: batch.to_vec()
            })
            .await
        )
    }
    async fn check(b: &dyn Backend, l: &mut Log, board: &str) {
        let archive = format!("{board}@2026-11-21T12:00:00Z");
        let members: Vec<String> = (0..35).map(|i| format!("p{i}")).collect();
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        for name in [board.to_string(), archive.clone(), format!("{archive}.2")] {
            read_all(b, l, &name, &members).await;
            l.add(
                "search player",
                b.search(&ops::Search {
                    board: name.to_string(),
                    query: "player".to_string(),
                    limit: Some(50),
                    offset: Some(0),
                    with_data: true,
                })
                .await,
            );
            l.add(
                "search p1",
                b.search(&ops::Search {
                    board: name.to_string(),
                    query: "p1".to_string(),
                    limit: Some(50),
                    offset: Some(0),
                    with_data: false,
                })
                .await,
            );
        }
        let mut boards = b.boards(&ops::ListBoards).await.unwrap().boards;
        boards.retain(|x| x.board.starts_with(board));
        let names: Vec<(String, u64)> = boards.into_iter().map(|x| (x.board, x.members)).collect();
        l.add("boards", Ok::<_, ApiError>(names));
    }
    let cases = [None, Some(0), Some(12), Some(30)];
    let mut want = Log::default();
    let e = embedded();
    for i in 0..cases.len() {
        let board = format!("half{i}");
        e.board_create(&ops::CreateBoard {
            board: board.to_string(),
            config: (json!({"ranking": "dense"})).clone(),
        })
        .await
        .unwrap();
        fill(&e, &board, 0, 30).await;
        e.reset(&ops::Reset {
            board: board.to_string(),
        })
        .await
        .unwrap();
        fill(&e, &board, 30, 35).await;
        want.add(
            "reset",
            e.reset(&ops::Reset {
                board: board.to_string(),
            })
            .await,
        );
        fill(&e, &board, 0, 3).await;
        check(&e, &mut want, &board).await;
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    let mut got = Log::default();
    for (i, copied) in cases.into_iter().enumerate() {
        let board = format!("half{i}");
        rb.board_create(&ops::CreateBoard {
            board: board.to_string(),
            config: (json!({"ranking": "dense"})).clone(),
        })
        .await
        .unwrap();
        fill(&rb, &board, 0, 30).await;
        rb.reset_stopped_half_way(&board, copied).await.unwrap();
        let staged = redis_cli(single.nodes[0].port, &["KEYS", &format!("{{{board}}}:s*")]);
        assert!(!staged.trim().is_empty(), "case {copied:?}: nothing staged");
        // Writes go on to the live board meanwhile.
        fill(&rb, &board, 30, 35).await;
        got.add(
            "reset",
            rb.reset(&ops::Reset {
                board: board.to_string(),
            })
            .await,
        );
        fill(&rb, &board, 0, 3).await;
        check(&rb, &mut got, &board).await;
        let left = redis_cli(single.nodes[0].port, &["KEYS", &format!("{{{board}}}:s*")]);
        assert!(
            left.trim().is_empty(),
            "case {copied:?}: staging left: {left}"
        );
    }
    compare("redis", &want.0, &got.0);
}

/// A board's search sets are built (chunk by chunk, on its first search)
/// while another task renames, removes and adds members: once both are
/// done, every query answers as on the embedded engine given the same
/// writes, and no set holds a member that left. (Which writes land
/// between which chunks varies from run to run; any of them must give
/// these answers.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_sets_built_during_writes_answer_as_embedded() {
    let named = |i: usize, gen: usize| {
        with(s(&format!("u{i}"), (i % 50) as f64), |e| {
            e.name = Some(if gen == 0 {
                format!("al{} bo{}", i % 97, i % 13)
            } else {
                format!("ca{} al{}", i % 31, gen)
            })
        })
    };
    let fill: Vec<SubmitIn> = (0..8000).map(|i| named(i, 0)).collect();
    let mut rng = SmallRng::seed_from_u64(5);
    let writes: Vec<(Vec<SubmitIn>, Vec<String>)> = (0..40)
        .map(|g| {
            let renamed = (0..40)
                .map(|_| named(rng.random_range(0..8000), g + 1))
                .chain((0..10).map(|k| named(8000 + g * 10 + k, g + 1)))
                .collect();
            let gone = (0..10)
                .map(|_| format!("u{}", rng.random_range(0..8000)))
                .collect();
            (renamed, gone)
        })
        .collect();
    let queries = ["al1", "bo1", "ca", "al1 bo", "ca3 al", "al2*", "u1"];

    let e = embedded();
    e.submit(&ops::SubmitMany {
        board: "grow".to_string(),
        entries: fill.to_vec(),
    })
    .await
    .unwrap();
    let mut want = Log::default();
    for (batch, gone) in &writes {
        e.submit(&ops::SubmitMany {
            board: "grow".to_string(),
            entries: batch.to_vec(),
        })
        .await
        .unwrap();
        e.remove(&ops::Remove {
            board: "grow".to_string(),
            members: gone.to_vec(),
        })
        .await
        .unwrap();
    }
    for q in queries {
        want.add(
            q,
            e.search(&ops::Search {
                board: "grow".to_string(),
                query: q.to_string(),
                limit: Some(30),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    for part in fill.chunks(1000) {
        rb.submit(&ops::SubmitMany {
            board: "grow".to_string(),
            entries: part.to_vec(),
        })
        .await
        .unwrap();
    }
    let writer = async {
        for (batch, gone) in &writes {
            rb.submit(&ops::SubmitMany {
                board: "grow".to_string(),
                entries: batch.to_vec(),
            })
            .await
            .unwrap();
            rb.remove(&ops::Remove {
                board: "grow".to_string(),
                members: gone.to_vec(),
            })
            .await
            .unwrap();
        }
    };
    // The first search builds the sets while the writer runs.
    let query = ops::Search {
        board: "grow".to_string(),
        query: "al1".to_string(),
        limit: Some(30),
        offset: Some(0),
        with_data: false,
    };
    let (_, first) = tokio::join!(writer, rb.search(&query));
    first.unwrap();
    let mut got = Log::default();
    for q in queries {
        got.add(
            q,
            rb.search(&ops::Search {
                board: "grow".to_string(),
                query: q.to_string(),
                limit: Some(30),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }
    compare("redis", &want.0, &got.0);
    search_index_is_clean(single.nodes[0].port, &[]);
}

/// The same with a board loaded by `import` (whose members' plain search
/// sources the Redis script does not store, so the build reads them from
/// the sorted set): while the sets are built, another task imports new
/// and existing members, names some, clears names (back to plain
/// sources) and removes some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_sets_built_during_imports_answer_as_embedded() {
    let fill: Vec<SubmitIn> = (0..8000)
        .map(|i| s(&format!("u{i}"), (i % 50) as f64))
        .collect();
    let mut rng = SmallRng::seed_from_u64(9);
    let writes: Vec<(Vec<SubmitIn>, Vec<SubmitIn>, Vec<String>)> = (0..40)
        .map(|g| {
            let imported = (0..40)
                .map(|_| s(&format!("u{}", rng.random_range(0..8000)), g as f64))
                .chain((0..10).map(|k| s(&format!("u{}", 8000 + g * 10 + k), 1.0)))
                .collect();
            let named = (0..20)
                .map(|k| {
                    let i = rng.random_range(0..8000);
                    with(s(&format!("u{i}"), 3.0), |e| {
                        e.name = Some(if k % 4 == 0 {
                            String::new()
                        } else {
                            format!("ca{} al{g}", i % 31)
                        })
                    })
                })
                .collect();
            let gone = (0..10)
                .map(|_| format!("u{}", rng.random_range(0..8000)))
                .collect();
            (imported, named, gone)
        })
        .collect();
    let queries = ["u1", "u12", "u7*", "ca", "al1", "ca3 al", "u80"];

    let e = embedded();
    e.import(&ops::SubmitMany {
        board: "grow".to_string(),
        entries: fill.to_vec(),
    })
    .await
    .unwrap();
    let mut want = Log::default();
    for (imported, named, gone) in &writes {
        e.import(&ops::SubmitMany {
            board: "grow".to_string(),
            entries: imported.to_vec(),
        })
        .await
        .unwrap();
        e.submit(&ops::SubmitMany {
            board: "grow".to_string(),
            entries: named.to_vec(),
        })
        .await
        .unwrap();
        e.remove(&ops::Remove {
            board: "grow".to_string(),
            members: gone.to_vec(),
        })
        .await
        .unwrap();
    }
    for q in queries {
        want.add(
            q,
            e.search(&ops::Search {
                board: "grow".to_string(),
                query: q.to_string(),
                limit: Some(30),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    for part in fill.chunks(1000) {
        rb.import(&ops::SubmitMany {
            board: "grow".to_string(),
            entries: part.to_vec(),
        })
        .await
        .unwrap();
    }
    let writer = async {
        for (imported, named, gone) in &writes {
            rb.import(&ops::SubmitMany {
                board: "grow".to_string(),
                entries: imported.to_vec(),
            })
            .await
            .unwrap();
            rb.submit(&ops::SubmitMany {
                board: "grow".to_string(),
                entries: named.to_vec(),
            })
            .await
            .unwrap();
            rb.remove(&ops::Remove {
                board: "grow".to_string(),
                members: gone.to_vec(),
            })
            .await
            .unwrap();
        }
    };
    let query = ops::Search {
        board: "grow".to_string(),
        query: "u1".to_string(),
        limit: Some(30),
        offset: Some(0),
        with_data: false,
    };
    let (_, first) = tokio::join!(writer, rb.search(&query));
    first.unwrap();
    let mut got = Log::default();
    for q in queries {
        got.add(
            q,
            rb.search(&ops::Search {
                board: "grow".to_string(),
                query: q.to_string(),
                limit: Some(30),
                offset: Some(0),
                with_data: false,
            })
            .await,
        );
    }
    compare("redis", &want.0, &got.0);
    search_index_is_clean(single.nodes[0].port, &[]);
}

/// One podium node importing plain batches (the native ZADD path while
/// the board has no search sets, the script's indexing `import` once a
/// build has begun) while another node builds the board's search sets
/// on its first search: every member imported before, during or after
/// the build is found, with the embedded engine's answers, on a single
/// Redis and on a cluster, and no side key is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_imports_racing_an_index_build_on_another_node() {
    let fill: Vec<SubmitIn> = (0..20_000)
        .map(|i| s(&format!("u{i}"), (i % 97) as f64))
        .collect();
    let mut rng = SmallRng::seed_from_u64(17);
    let batches: Vec<Vec<SubmitIn>> = (0..60)
        .map(|g| {
            (0..400)
                .map(|_| s(&format!("u{}", rng.random_range(0..20_000)), g as f64))
                .chain((0..100).map(|k| s(&format!("u{}", 20_000 + g * 100 + k), 2.5)))
                .collect()
        })
        .collect();
    let queries = ["u1", "u12", "u2000", "u2599", "u7*", "u19999", "u25"];

    let e = embedded();
    e.import(&ops::SubmitMany {
        board: "race".to_string(),
        entries: fill.to_vec(),
    })
    .await
    .unwrap();
    for b in &batches {
        e.import(&ops::SubmitMany {
            board: "race".to_string(),
            entries: b.to_vec(),
        })
        .await
        .unwrap();
    }
    let mut want = Log::default();
    for q in queries {
        for off in [0, 40] {
            want.add(
                q,
                e.search(&ops::Search {
                    board: "race".to_string(),
                    query: q.to_string(),
                    limit: Some(25),
                    offset: Some(off),
                    with_data: false,
                })
                .await,
            );
        }
    }

    for redis in [Redis::single(false), Redis::cluster(false)] {
        let a = redis_backend(&redis.url()).await;
        let b = redis_backend(&redis.url()).await;
        for part in fill.chunks(1000) {
            a.import(&ops::SubmitMany {
                board: "race".to_string(),
                entries: part.to_vec(),
            })
            .await
            .unwrap();
        }
        let importer = async {
            for batch in &batches {
                a.import(&ops::SubmitMany {
                    board: "race".to_string(),
                    entries: batch.to_vec(),
                })
                .await
                .unwrap();
            }
        };
        let query = ops::Search {
            board: "race".to_string(),
            query: "u1".to_string(),
            limit: Some(25),
            offset: Some(0),
            with_data: false,
        };
        let (_, first) = tokio::join!(importer, b.search(&query));
        first.unwrap();
        let mut got = Log::default();
        for q in queries {
            for off in [0, 40] {
                got.add(
                    q,
                    b.search(&ops::Search {
                        board: "race".to_string(),
                        query: q.to_string(),
                        limit: Some(25),
                        offset: Some(off),
                        with_data: false,
                    })
                    .await,
                );
            }
        }
        compare(&redis.url(), &want.0, &got.0);
        for n in &redis.nodes {
            no_import_side_keys(n.port);
        }
        if redis.nodes.len() == 1 {
            search_index_is_clean(redis.nodes[0].port, &[]);
        }
    }
}

/// A member podium could not have written (byte 0xFF: podium's ids are
/// UTF-8, which never holds it; the script joins a page's strings with
/// that byte) makes the page an error, not a misread page; pages without
/// it still read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_member_byte_is_refused_not_misread() {
    let single = Redis::single(false);
    let r = redis_backend(&single.url()).await;
    r.submit(&ops::SubmitMany {
        board: "foreign".to_string(),
        entries: ([s("a", 1.0), s("b", 2.0), s("c", 3.0)]).to_vec(),
    })
    .await
    .unwrap();
    let add = "redis.call('ZADD', KEYS[1], 2.5, 'x\\255y') return 1";
    assert_eq!(
        redis_cli(single.nodes[0].port, &["EVAL", add, "1", "{foreign}:z"]).trim(),
        "1"
    );
    let e = r
        .top(&ops::Top {
            board: "foreign".to_string(),
            page: None,
            page_size: None,
            with_data: false,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Internal, "{e}");
    assert!(e.message.contains("0xFF"), "{e}");
    // A page without the foreign member reads as before.
    let top = r
        .top(&ops::Top {
            board: "foreign".to_string(),
            page: Some(1),
            page_size: Some(1),
            with_data: false,
        })
        .await
        .unwrap();
    assert_eq!(top.entries[0].member, "c");
    assert_eq!(top.total, 4);
}
