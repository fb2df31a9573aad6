//! Archives known and configs durable across restarts, and Redis archives
//! written before.

use super::schedule::Sched;
use super::*;

/// Where a scenario's backend keeps its data, so it can be opened again
/// as after a restart: the embedded engine's data directory (a real
/// restart of the store and service), or a Redis that a new podium node
/// connects to.
enum Home {
    Embedded(std::path::PathBuf),
    Redis(String),
}

impl Home {
    async fn open(&self, clock: &Arc<ManualClock>) -> Sched {
        match self {
            Home::Embedded(dir) => {
                let store = podium_engine::Store::new();
                let (storage, aux, report) = podium_store::storage::open(
                    dir,
                    podium_server::settings::FsyncPolicy::Always,
                    &store,
                )
                .unwrap();
                let svc = Service::new(store, Some(storage), aux, report, u64::MAX)
                    .with_clock(clock.clone());
                Sched::Embedded(EmbeddedBackend::new(Arc::new(svc)))
            }
            Home::Redis(url) => Sched::Redis(redis_backend_on(url, clock).await),
        }
    }
}

async fn redis_backend_on(url: &str, clock: &Arc<ManualClock>) -> RedisBackend {
    RedisBackend::connect(url)
        .await
        .unwrap()
        .with_clock(clock.clone())
}

/// Stops a scenario's node: the embedded service closes its log and
/// releases its data directory.
fn stop(node: Sched) {
    if let Sched::Embedded(b) = &node {
        b.service().close().unwrap();
    }
    drop(node);
}

/// Archives are known by their config, never by name: a live `v3@0-live`
/// survives resets of `v3` under `keep_archives`, a writer's `v2@9999` is
/// not taken for `v2`'s newest archive; a dropped schedule stays dropped
/// after a restart and a schedule set later does not archive at once;
/// every config field survives a restart as last set. Each backend checks
/// the outcome itself, and the answers must match the embedded engine's.
async fn archive_scenario(home: &Home) -> Vec<String> {
    let clock = clock();
    let mut log = Log::default();
    let l = &mut log;
    let node = home.open(&clock).await;
    let b = node.backend();
    l.add(
        "create v3",
        b.board_create(&ops::CreateBoard {
            board: "v3".to_string(),
            config: (json!({"keep_archives": 1})).clone(),
        })
        .await,
    );
    l.add(
        "create v2",
        b.board_create(&ops::CreateBoard {
            board: "v2".to_string(),
            config: (json!({"keep_archives": 2})).clone(),
        })
        .await,
    );
    l.add(
        "live v3@0-live",
        b.submit_one(&ops::Submit {
            board: ("v3@0-live").to_string(),
            entry: (s("w", 1.0)).clone(),
        })
        .await,
    );
    l.add(
        "writer v2@9999",
        b.submit_one(&ops::Submit {
            board: "v2@9999".to_string(),
            entry: (s("w", 1.0)).clone(),
        })
        .await,
    );
    let mut made = Vec::new();
    for i in 0..3 {
        l.add(
            "fill v3",
            b.submit_one(&ops::Submit {
                board: "v3".to_string(),
                entry: (s(&format!("m{i}"), 1.0)).clone(),
            })
            .await,
        );
        l.add(
            "reset v3",
            b.reset(&ops::Reset {
                board: "v3".to_string(),
            })
            .await,
        );
        l.add(
            "fill v2",
            b.submit_one(&ops::Submit {
                board: "v2".to_string(),
                entry: (s(&format!("m{i}"), 1.0)).clone(),
            })
            .await,
        );
        let r = b
            .reset(&ops::Reset {
                board: "v2".to_string(),
            })
            .await
            .unwrap();
        assert_eq!(r.archived, 1);
        made.push(r.archive.clone());
        l.add("reset v2", Ok::<_, ApiError>(r));
    }
    let listed = b.boards(&ops::ListBoards).await.unwrap().boards;
    let names: Vec<&str> = listed.iter().map(|x| x.board.as_str()).collect();
    assert!(names.contains(&"v3@0-live"), "{names:?}");
    let v2: Vec<&str> = listed
        .iter()
        .filter(|x| x.archive_of.as_deref() == Some("v2"))
        .map(|x| x.board.as_str())
        .collect();
    assert_eq!(v2, [made[1].as_str(), made[2].as_str()]);
    assert!(names.contains(&"v2@9999"), "{names:?}");
    l.add("boards", Ok::<_, ApiError>(&listed));
    for x in &listed {
        l.add(
            &format!("info {}", x.board),
            b.board_info(&ops::BoardInfo {
                board: x.board.to_string(),
            })
            .await,
        );
    }
    l.add(
        "write live",
        b.submit_one(&ops::Submit {
            board: ("v3@0-live").to_string(),
            entry: (s("x", 2.0)).clone(),
        })
        .await,
    );
    l.add(
        "write archive",
        b.submit_one(&ops::Submit {
            board: made[2].to_string(),
            entry: (s("x", 2.0)).clone(),
        })
        .await,
    );
    l.add(
        "put archive_of",
        b.board_put(&ops::PutBoard {
            board: "x".to_string(),
            config: (json!({"archive_of": "v2", "archive_seq": 9})).clone(),
            confirm_rerank: true,
        })
        .await,
    );

    // A schedule dropped, then the node restarted.
    l.add(
        "create s",
        b.board_create(&ops::CreateBoard {
            board: "s".to_string(),
            config: (json!({"reset": "daily"})).clone(),
        })
        .await,
    );
    l.add(
        "fill s",
        b.submit_one(&ops::Submit {
            board: "s".to_string(),
            entry: (s("a", 1.0)).clone(),
        })
        .await,
    );
    l.add(
        "drop schedule",
        b.board_put(&ops::PutBoard {
            board: "s".to_string(),
            config: (json!({"reset": "never"})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    let full = json!({
        "order": "asc", "ranking": "dense", "update": "best",
        "min_score": "-inf", "max_score": 1e9, "max_members": 100,
        "reset": "0 0 * * 1", "keep_archives": 4,
        "search_fields": ["name", "team"], "max_data_bytes": 1024
    });
    let want_full = b
        .board_put(&ops::PutBoard {
            board: "c".to_string(),
            config: full.clone(),
            confirm_rerank: true,
        })
        .await
        .unwrap();
    stop(node);
    clock.advance(chrono::Duration::days(3));
    let node = home.open(&clock).await;
    let b = node.backend();
    let info = b
        .board_info(&ops::BoardInfo {
            board: "s".to_string(),
        })
        .await
        .unwrap();
    assert_eq!(info.period, None, "a dropped schedule's period came back");
    assert_eq!(info.config["reset"], "never");
    l.add("s after restart", Ok::<_, ApiError>(&info));
    let c = b
        .board_info(&ops::BoardInfo {
            board: "c".to_string(),
        })
        .await
        .unwrap();
    assert_eq!(
        (&c.config, &c.period),
        (&want_full.config, &want_full.period)
    );
    l.add("c after restart", Ok::<_, ApiError>(c));
    l.add(
        "set schedule",
        b.board_put(&ops::PutBoard {
            board: "s".to_string(),
            config: (json!({"reset": "daily"})).clone(),
            confirm_rerank: true,
        })
        .await,
    );
    // `c`'s weekly period did end meanwhile: only `s` must not reset.
    let due = node.due().await.unwrap();
    assert!(
        !due.iter().any(|r| r.board == "s"),
        "a schedule set later archived at once: {due:?}"
    );
    assert_eq!(
        b.board_info(&ops::BoardInfo {
            board: "s".to_string()
        })
        .await
        .unwrap()
        .members,
        1
    );
    l.add("due", Ok::<_, ApiError>(due));
    let cleared = b
        .board_put(&ops::PutBoard {
            board: "c".to_string(),
            config: (json!({})).clone(),
            confirm_rerank: true,
        })
        .await
        .unwrap();
    stop(node);
    let node = home.open(&clock).await;
    let b = node.backend();
    let c = b
        .board_info(&ops::BoardInfo {
            board: "c".to_string(),
        })
        .await
        .unwrap();
    assert_eq!((&c.config, &c.period), (&cleared.config, &None));
    l.add("c cleared after restart", Ok::<_, ApiError>(c));
    l.add(
        "archive after restart",
        b.board_info(&ops::BoardInfo {
            board: made[2].to_string(),
        })
        .await
        .map(|i| i.archive_of),
    );
    stop(node);
    log.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_are_known_and_configs_durable_on_embedded_single_redis_and_cluster() {
    let dir = std::env::temp_dir().join(format!("podium-conf-archives-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let want = archive_scenario(&Home::Embedded(dir.clone())).await;
    let _ = std::fs::remove_dir_all(&dir);
    let single = Redis::single(false);
    compare(
        "redis",
        &want,
        &archive_scenario(&Home::Redis(single.url())).await,
    );
    let cluster = Redis::cluster(false);
    compare(
        "cluster",
        &want,
        &archive_scenario(&Home::Redis(cluster.url())).await,
    );
}

/// Archives a Redis holds from before archives recorded whose they are
/// (read-only, named `NAME@LABEL`, no `archive_of` in their JSON) are
/// recognised by name, and `keep_archives` counts them oldest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_archives_from_before_are_recognised() {
    let single = Redis::single(false);
    let c = clock();
    let b = redis_backend_on(&single.url(), &c).await;
    b.board_create(&ops::CreateBoard {
        board: "lb".to_string(),
        config: (json!({"keep_archives": 2})).clone(),
    })
    .await
    .unwrap();
    let mut made = Vec::new();
    for _ in 0..2 {
        b.submit_one(&ops::Submit {
            board: "lb".to_string(),
            entry: (s("a", 1.0)).clone(),
        })
        .await
        .unwrap();
        made.push(
            b.reset(&ops::Reset {
                board: "lb".to_string(),
            })
            .await
            .unwrap()
            .archive,
        );
    }
    // As a podium from before wrote them.
    let plain = serde_json::to_string(&json!({
        "order": "desc", "ranking": "unique", "tiebreak": "member", "update": "set",
        "min_score": null, "max_score": null, "max_members": null, "reset": "never",
        "keep_archives": 2, "search_fields": ["name"], "max_data_bytes": 4096
    }))
    .unwrap();
    let port = single.nodes[0].port;
    for a in &made {
        redis_cli(port, &["HSET", &format!("{{{a}}}:c"), "json", &plain]);
    }
    let info = b
        .board_info(&ops::BoardInfo {
            board: made[0].to_string(),
        })
        .await
        .unwrap();
    assert_eq!(info.archive_of.as_deref(), Some("lb"));
    assert!(info.read_only);
    b.submit_one(&ops::Submit {
        board: "lb@live".to_string(),
        entry: (s("w", 1.0)).clone(),
    })
    .await
    .unwrap();
    b.submit_one(&ops::Submit {
        board: "lb".to_string(),
        entry: (s("a", 1.0)).clone(),
    })
    .await
    .unwrap();
    let newest = b
        .reset(&ops::Reset {
            board: "lb".to_string(),
        })
        .await
        .unwrap()
        .archive;
    let names: Vec<String> = b
        .boards(&ops::ListBoards)
        .await
        .unwrap()
        .boards
        .into_iter()
        .map(|x| x.board)
        .collect();
    assert_eq!(names, ["lb", made[1].as_str(), newest.as_str(), "lb@live"]);
    let info = b
        .board_info(&ops::BoardInfo {
            board: newest.to_string(),
        })
        .await
        .unwrap();
    assert_eq!(info.config["archive_seq"], 3);
}

/// Board config changes through the operations every frontend runs: a
/// patch keeps the fields it does not name (`null` resets one), a whole
/// config or a patch that would re-rank is refused unless confirmed, and
/// a patch of a missing board is `board_not_found` — the same answers on
/// every backend.
async fn config_change_scenario(b: &dyn Backend) -> Vec<String> {
    use podium_core::ops::Operation;
    let mut l = Log::default();
    let put = |config: serde_json::Value| {
        ops::PutBoard::from_body("cfg".to_string(), config).expect("a body")
    };
    let patch = |body: serde_json::Value| {
        ops::PatchBoard::from_body("cfg".to_string(), body).expect("a body")
    };
    l.add(
        "create",
        put(json!({"order": "asc", "reset": "weekly", "keep_archives": 4}))
            .run(b)
            .await,
    );
    for (m, v) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] {
        l.add(
            "submit",
            b.submit_one(&ops::Submit {
                board: "cfg".to_string(),
                entry: s(m, v),
            })
            .await,
        );
    }
    l.add(
        "patch keep",
        patch(json!({"keep_archives": 8})).run(b).await,
    );
    l.add(
        "patch null",
        patch(json!({"keep_archives": null})).run(b).await,
    );
    l.add("patch order", patch(json!({"order": "desc"})).run(b).await);
    l.add("put partial", put(json!({"keep_archives": 8})).run(b).await);
    read_all(b, &mut l, "cfg", &["a", "b", "c"]).await;
    l.add(
        "patch order confirmed",
        patch(json!({"order": "desc", "confirm_rerank": true}))
            .run(b)
            .await,
    );
    read_all(b, &mut l, "cfg", &["a", "b", "c"]).await;
    l.add("patch bad", patch(json!({"colour": "red"})).run(b).await);
    l.add(
        "patch missing",
        ops::PatchBoard::from_body("nope".to_string(), json!({}))
            .unwrap()
            .run(b)
            .await,
    );
    l.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_patches_and_rerank_confirmation_answer_the_same_on_every_backend() {
    let want = config_change_scenario(&embedded()).await;
    assert!(
        want.iter()
            .any(|l| l.starts_with("patch order => ERR confirm_rerank_required")),
        "{want:#?}"
    );
    assert!(
        want.iter().any(|l| l.starts_with("patch keep => ")
            && l.contains(r#""order":"asc""#)
            && l.contains(r#""keep_archives":8"#)),
        "{want:#?}"
    );
    let single = Redis::single(false);
    let be = redis_backend(&single.url()).await;
    compare("redis", &want, &config_change_scenario(&be).await);
    let cluster = Redis::cluster(false);
    let be = redis_backend(&cluster.url()).await;
    compare("cluster", &want, &config_change_scenario(&be).await);
}
