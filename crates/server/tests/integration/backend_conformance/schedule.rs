//! Scheduled resets: the same archives on every backend, nodes racing for a
//! due reset, a staged reset reported by the node that names it, the
//! scheduler task.

use super::*;

/// A backend with its reset scheduler's entry point (not part of the
/// `Backend` trait: the server drives it), on a clock the test moves.
pub(super) enum Sched {
    Embedded(EmbeddedBackend),
    Redis(RedisBackend),
}

impl Sched {
    pub(super) fn backend(&self) -> &dyn Backend {
        match self {
            Sched::Embedded(b) => b,
            Sched::Redis(b) => b,
        }
    }

    pub(super) async fn due(&self) -> Result<Vec<podium_core::api::ResetOut>, ApiError> {
        match self {
            Sched::Embedded(b) => b.service().run_due_resets().await,
            Sched::Redis(b) => b.run_due_resets().await,
        }
    }
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, sec: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(y, mo, d, h, mi, sec).unwrap()
}

/// Boards with every kind of schedule through period boundaries, manual
/// resets, reconfigurations and jumps of several periods; after each step
/// the scheduler runs and the boards, archives and searches are read.
async fn schedule_scenario(e: &Sched, clock: &ManualClock) -> Vec<String> {
    let mut log = Log::default();
    let l = &mut log;
    let b = e.backend();
    // Friday 2026-11-20, a minute before midnight.
    clock.set(at(2026, 11, 20, 23, 59, 0));
    for (name, cfg) in [
        ("daily", json!({"reset": "daily", "keep_archives": 2})),
        ("weekly", json!({"reset": "weekly", "order": "asc"})),
        (
            "five",
            json!({"reset": "*/5 * * * *", "keep_archives": 3, "ranking": "dense"}),
        ),
        (
            "monthly",
            json!({"reset": "monthly", "search_fields": ["name", "team"]}),
        ),
        ("secs", json!({"reset": "30 * * * * *"})),
        ("plain", json!({})),
        ("bad", json!({"reset": "61 * * * *"})),
    ] {
        l.add(
            &format!("create {name}"),
            b.board_create(&ops::CreateBoard {
                board: name.to_string(),
                config: cfg.clone(),
            })
            .await,
        );
    }
    let boards = ["daily", "weekly", "five", "monthly", "secs", "plain"];
    let fill = |round: usize| -> Vec<SubmitIn> {
        (0..6)
            .map(|i| {
                with(s(&format!("m{round}-{i}"), (i % 3) as f64), |e| {
                    e.name = Some(format!("Alma Al{i} round{round}"));
                    e.data = Some(json!({"team": format!("al{}", i % 2)}));
                })
            })
            .collect()
    };
    async fn look(b: &dyn Backend, l: &mut Log) {
        l.add("boards", b.boards(&ops::ListBoards).await);
        for name in b
            .boards(&ops::ListBoards)
            .await
            .unwrap()
            .boards
            .iter()
            .map(|x| x.board.clone())
        {
            l.add(
                &format!("info {name}"),
                b.board_info(&ops::BoardInfo {
                    board: name.to_string(),
                })
                .await,
            );
            l.add(
                &format!("top {name}"),
                b.top(&ops::Top {
                    board: name.to_string(),
                    page: None,
                    page_size: Some(4),
                    with_data: true,
                })
                .await,
            );
            for q in ["al* al", "alma", "round1", "al0"] {
                l.add(
                    &format!("search {name} {q}"),
                    b.search(&ops::Search {
                        board: name.to_string(),
                        query: q.to_string(),
                        limit: Some(3),
                        offset: Some(0),
                        with_data: false,
                    })
                    .await,
                );
            }
        }
    }
    for name in boards {
        l.add(
            &format!("fill {name}"),
            b.submit(&ops::SubmitMany {
                board: name.to_string(),
                entries: (fill(0)).to_vec(),
            })
            .await,
        );
    }
    l.add("due before any boundary", e.due().await);
    look(b, l).await;

    // Midnight: daily and the five-minute cron fall due, and `secs`.
    clock.set(at(2026, 11, 21, 0, 0, 0));
    l.add("due at midnight", e.due().await);
    l.add("due again", e.due().await);
    look(b, l).await;
    l.add(
        "write archive",
        b.submit_one(&ops::Submit {
            board: ("daily@2026-11-20").to_string(),
            entry: (s("x", 1.0)).clone(),
        })
        .await,
    );
    l.add(
        "reset archive",
        b.reset(&ops::Reset {
            board: ("daily@2026-11-20").to_string(),
        })
        .await,
    );
    for name in boards {
        l.add(
            &format!("refill {name}"),
            b.submit(&ops::SubmitMany {
                board: name.to_string(),
                entries: (fill(1)).to_vec(),
            })
            .await,
        );
    }
    // A manual reset archives the period the board is in; the scheduled
    // one at its end then takes the next free name.
    clock.set(at(2026, 11, 21, 12, 0, 0));
    l.add(
        "manual daily",
        b.reset(&ops::Reset {
            board: "daily".to_string(),
        })
        .await,
    );
    l.add(
        "manual plain",
        b.reset(&ops::Reset {
            board: "plain".to_string(),
        })
        .await,
    );
    l.add("due noon", e.due().await);
    l.add(
        "fill daily",
        b.submit(&ops::SubmitMany {
            board: "daily".to_string(),
            entries: (fill(2)).to_vec(),
        })
        .await,
    );
    clock.set(at(2026, 11, 22, 0, 0, 1));
    l.add("due next day", e.due().await);
    look(b, l).await;
    // Reconfigured: a kept schedule keeps its period; dropping it drops
    // the period; a new one starts at the current period.
    l.add(
        "daily to weekly",
        b.board_put(&ops::PutBoard {
            board: "daily".to_string(),
            config: (json!({"reset": "weekly", "keep_archives": 2})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    l.add(
        "monthly to never",
        b.board_put(&ops::PutBoard {
            board: "monthly".to_string(),
            config: (json!({"search_fields": ["name", "team"]})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    l.add(
        "plain to monthly",
        b.board_put(&ops::PutBoard {
            board: "plain".to_string(),
            config: (json!({"reset": "monthly"})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    l.add(
        "fill daily",
        b.submit(&ops::SubmitMany {
            board: "daily".to_string(),
            entries: (fill(3)).to_vec(),
        })
        .await,
    );
    l.add(
        "fill plain",
        b.submit(&ops::SubmitMany {
            board: "plain".to_string(),
            entries: (fill(3)).to_vec(),
        })
        .await,
    );
    clock.set(at(2026, 11, 22, 18, 0, 0));
    l.add("due sunday", e.due().await);
    // Several periods at once: one archive, named after the period left.
    clock.set(at(2027, 1, 3, 10, 7, 45));
    l.add("due in january", e.due().await);
    look(b, l).await;
    l.add(
        "delete weekly",
        b.board_delete(&ops::DeleteBoard {
            board: "weekly".to_string(),
        })
        .await,
    );
    for name in ["daily", "five", "secs"] {
        l.add(
            &format!("fill {name}"),
            b.submit(&ops::SubmitMany {
                board: name.to_string(),
                entries: (fill(4)).to_vec(),
            })
            .await,
        );
    }
    clock.set(at(2027, 2, 1, 0, 0, 0));
    l.add("due in february", e.due().await);
    look(b, l).await;
    log.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_resets_answer_the_same_on_embedded_single_redis_and_cluster() {
    let c = clock();
    let want = schedule_scenario(
        &Sched::Embedded(EmbeddedBackend::new(Arc::new(
            Service::in_memory().with_clock(c.clone()),
        ))),
        &c,
    )
    .await;
    assert!(want.len() > 200, "the scenario covers {} calls", want.len());
    if let Some(path) = std::env::var_os("PODIUM_SCHEDULE_DUMP") {
        std::fs::write(path, want.join("\n")).unwrap();
    }
    let single = Redis::single(false);
    let c = clock();
    let rb = RedisBackend::connect(&single.url())
        .await
        .unwrap()
        .with_clock(c.clone());
    compare(
        "redis",
        &want,
        &schedule_scenario(&Sched::Redis(rb), &c).await,
    );
    search_index_is_clean(single.nodes[0].port, &["{weekly}:*"]);
    let cluster = Redis::cluster(false);
    let c = clock();
    let cb = RedisBackend::connect(&cluster.url())
        .await
        .unwrap()
        .with_clock(c.clone());
    compare(
        "cluster",
        &want,
        &schedule_scenario(&Sched::Redis(cb), &c).await,
    );
    eprintln!(
        "{} answers identical on embedded, redis and cluster",
        want.len()
    );
}

/// Several stateless nodes share one Redis, and each runs the scheduler:
/// each period is archived once, whichever node gets there first, and no
/// member is lost or archived twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_racing_for_a_due_reset_make_one_archive() {
    let single = Redis::single(false);
    let cluster = Redis::cluster(false);
    for url in [single.url(), cluster.url()] {
        let c = clock();
        c.set(at(2026, 11, 20, 12, 0, 0));
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(
                RedisBackend::connect(&url)
                    .await
                    .unwrap()
                    .with_clock(c.clone()),
            );
        }
        nodes[0]
            .board_create(&ops::CreateBoard {
                board: "race".to_string(),
                config: (json!({"reset": "daily"})).clone(),
            })
            .await
            .unwrap();
        for day in 0..6u32 {
            let batch: Vec<SubmitIn> = (0..500)
                .map(|i| {
                    with(s(&format!("d{day}-{i}"), i as f64), |e| {
                        e.name = Some(format!("Player {i}"))
                    })
                })
                .collect();
            nodes[(day % 3) as usize]
                .submit(&ops::SubmitMany {
                    board: "race".to_string(),
                    entries: batch.to_vec(),
                })
                .await
                .unwrap();
            c.advance(chrono::Duration::days(1));
            let runs =
                futures_util::future::join_all(nodes.iter().map(|n| n.run_due_resets())).await;
            let made: Vec<_> = runs.into_iter().flat_map(|r| r.unwrap()).collect();
            let label = (at(2026, 11, 20, 0, 0, 0) + chrono::Duration::days(day.into()))
                .format("%Y-%m-%d")
                .to_string();
            assert_eq!(made.len(), 1, "{url} day {day}: {made:?}");
            assert_eq!(made[0].archive, format!("race@{label}"), "{url}");
            assert_eq!(made[0].archived, 500, "{url}");
            let archive = nodes[1]
                .board_info(&ops::BoardInfo {
                    board: made[0].archive.to_string(),
                })
                .await
                .unwrap();
            assert_eq!(archive.members, 500, "{url}");
            assert!(archive.read_only);
            let live = nodes[2]
                .board_info(&ops::BoardInfo {
                    board: "race".to_string(),
                })
                .await
                .unwrap();
            assert_eq!(live.members, 0, "{url}");
            let hits = nodes[0]
                .search(&ops::Search {
                    board: made[0].archive.to_string(),
                    query: ("player 499").to_string(),
                    limit: Some(5),
                    offset: Some(0),
                    with_data: false,
                })
                .await
                .unwrap();
            assert_eq!(hits.total, 1, "{url}");
            // Every node sees the period done.
            for n in &nodes {
                assert!(n.run_due_resets().await.unwrap().is_empty(), "{url}");
            }
        }
        let archives = nodes[0]
            .boards(&ops::ListBoards)
            .await
            .unwrap()
            .boards
            .into_iter()
            .filter(|b| b.board.starts_with("race@"))
            .count();
        assert_eq!(archives, 6, "{url}");
    }
}

/// A scheduled reset that one node took and has not finished (it stopped
/// there, or is still copying) is finished by another node's scheduler
/// run, which names its archive and so is the one to report it: each
/// period's archive is reported by exactly one node, on a single Redis
/// and on a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_found_staged_is_reported_by_the_node_that_names_it() {
    let single = Redis::single(false);
    let cluster = Redis::cluster(false);
    for url in [single.url(), cluster.url()] {
        let c = clock();
        c.set(at(2026, 11, 20, 12, 0, 0));
        let a = RedisBackend::connect(&url)
            .await
            .unwrap()
            .with_clock(c.clone());
        let b = RedisBackend::connect(&url)
            .await
            .unwrap()
            .with_clock(c.clone());
        a.board_create(&ops::CreateBoard {
            board: "staged".to_string(),
            config: (json!({"reset": "daily"})).clone(),
        })
        .await
        .unwrap();
        let batch: Vec<SubmitIn> = (0..100).map(|i| s(&format!("m{i}"), i as f64)).collect();
        a.submit(&ops::SubmitMany {
            board: "staged".to_string(),
            entries: batch.to_vec(),
        })
        .await
        .unwrap();
        c.advance(chrono::Duration::days(1));
        // b reads the board's period, a takes the reset, b goes on: b's
        // take finds a's reset staged and finishes it.
        let seen = b.scheduled_states().await.unwrap();
        a.take_due_reset("staged").await.unwrap();
        let made = b.run_resets_seen(seen).await;
        assert_eq!(made.len(), 1, "{url}: {made:?}");
        assert_eq!(made[0].archive, "staged@2026-11-20", "{url}");
        assert_eq!(made[0].archived, 100, "{url}");
        let archive = a
            .board_info(&ops::BoardInfo {
                board: ("staged@2026-11-20").to_string(),
            })
            .await
            .unwrap();
        assert_eq!((archive.members, archive.read_only), (100, true), "{url}");
        assert_eq!(
            a.board_info(&ops::BoardInfo {
                board: "staged".to_string()
            })
            .await
            .unwrap()
            .members,
            0,
            "{url}"
        );
        assert!(a.run_due_resets().await.unwrap().is_empty(), "{url}");
    }
}

/// The scheduler task the server starts runs the resets by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reset_scheduler_task_archives_a_due_period() {
    let single = Redis::single(false);
    let c = clock();
    c.set(at(2026, 11, 20, 23, 0, 0));
    let rb = Arc::new(
        RedisBackend::connect(&single.url())
            .await
            .unwrap()
            .with_clock(c.clone()),
    );
    rb.board_create(&ops::CreateBoard {
        board: "auto".to_string(),
        config: (json!({"reset": "daily"})).clone(),
    })
    .await
    .unwrap();
    rb.submit_one(&ops::Submit {
        board: "auto".to_string(),
        entry: (s("a", 1.0)).clone(),
    })
    .await
    .unwrap();
    let task = podium_redis::spawn_reset_scheduler(rb.clone());
    c.set(at(2026, 11, 21, 0, 0, 0));
    let t = Instant::now();
    while rb
        .board_info(&ops::BoardInfo {
            board: ("auto@2026-11-20").to_string(),
        })
        .await
        .is_err()
    {
        assert!(t.elapsed() < Duration::from_secs(30), "no scheduled reset");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    task.abort();
    assert_eq!(
        rb.board_info(&ops::BoardInfo {
            board: ("auto@2026-11-20").to_string()
        })
        .await
        .unwrap()
        .members,
        1
    );
    assert_eq!(
        rb.board_info(&ops::BoardInfo {
            board: "auto".to_string()
        })
        .await
        .unwrap()
        .period
        .as_deref(),
        Some("2026-11-21")
    );
}
