//! The main scenario: boards, submits through every operator and
//! condition, bounds, caps, data, removals, reconfiguring, combines, random
//! ties in every ranking, resets and archives, as a table of steps that one
//! driver runs against a backend; the answers must match the embedded
//! engine's on a single Redis and on a cluster.

use serde_json::Value;

use super::batches::{import_batches, odd_members, plain_batches, search_scenario};
use super::*;

/// One call of the scenario through the `Backend` trait.
enum Op {
    Create(String, Value),
    Put(String, Value),
    Info(String),
    Top(String),
    Entry(String, String),
    Count(String, RangeBounds),
    Submit(String, Vec<SubmitIn>),
    SubmitOne(String, SubmitIn),
    SetData {
        board: String,
        member: String,
        name: Option<String>,
        data: Option<Value>,
    },
    Remove(String, Vec<String>),
    RemoveRanks(String, u64, u64),
    RemoveScores(String, RangeBounds),
    /// Into `dest`: a merge, or an intersect when the flag is set.
    Combine(String, CombineIn, bool),
    /// `range_by_rank(board, start, stop, from_worst, with_data)`.
    Range(String, u64, u64, bool, bool),
    Reset(String),
    Boards,
    Delete(String),
}

/// A scenario step. Its expected answer is the embedded engine's: every
/// answer is logged under the step's label, and the logs of the backends
/// must be identical line for line.
enum Step {
    /// One call, logged as `label => answer`.
    Call(String, Op),
    /// [`read_all`] of a board, checking these members.
    ReadAll(String, Vec<String>),
    /// A part that builds its inputs as it goes (see `batches`).
    PlainBatches,
    ImportBatches,
    SearchScenario,
    OddMembers,
}

fn call(label: impl Into<String>, op: Op) -> Step {
    Step::Call(label.into(), op)
}

fn read(board: &str, members: &[&str]) -> Step {
    Step::ReadAll(
        board.to_string(),
        members.iter().map(|m| m.to_string()).collect(),
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The steps, in order.
fn steps() -> Vec<Step> {
    use Op::*;
    let b = |name: &str| name.to_string();
    let mut t = vec![
        // Boards: explicit, duplicate, bad config, bad name, implicit.
        call(
            "create lap",
            Create(
                b("lap"),
                json!({"order": "asc", "ranking": "competition", "update": "best",
                         "min_score": 0, "max_score": 1000}),
            ),
        ),
        call("create lap again", Create(b("lap"), json!({}))),
        call(
            "create bad config",
            Create(b("bad"), json!({"order": "sideways"})),
        ),
        call("create bad name", Create(b(""), json!({}))),
        call("info missing", Info(b("nope"))),
        call("top missing", Top(b("nope"))),
        call("entry missing board", Entry(b("nope"), b("a"))),
        call("count missing", Count(b("nope"), RangeBounds::default())),
        call("remove missing", Remove(b("nope"), strings(&["a"]))),
        // A batch with names, data, ties, an incr and a bad one.
        call(
            "submit game",
            Submit(
                b("game"),
                vec![
                    with(s("alice", 5.0), |e| e.name = Some("Alice A".into())),
                    with(s("bob", 7.0), |e| {
                        e.data = Some(json!({"team": "red", "n": 1}))
                    }),
                    s("carol", 5.0),
                    s("dave", 2.0),
                    s("erin", 7.0),
                    with(s("alice", 1.5), |e| e.op = Some("incr".into())),
                    s("frank", 9.0),
                    s("gus", f64::INFINITY),
                    s("hal", f64::NEG_INFINITY),
                    s("ivy", 0.1),
                    with(s("ivy", 0.2), |e| e.op = Some("incr".into())),
                ],
            ),
        ),
        read("game", &["alice", "bob", "carol", "gus", "hal", "ivy"]),
    ];

    // One-entry submits through every operator and condition.
    let ones = vec![
        with(s("bob", 3.0), |e| e.op = Some("best".into())),
        with(s("bob", 8.0), |e| e.op = Some("best".into())),
        with(s("bob", 1.0), |e| e.cond = Some(CondIn::Gt)),
        with(s("bob", 1.0), |e| e.cond = Some(CondIn::Lt)),
        with(s("bob", 100.0), |e| e.only = Some(Only::New)),
        with(s("zed", 4.0), |e| e.only = Some(Only::Existing)),
        with(s("zed", 4.0), |e| e.only = Some(Only::New)),
        with(s("dave", -2.0), |e| e.op = Some("incr".into())),
        with(s("dave", 0.0), |e| e.op = Some("incr".into())),
        with(s("carol", 5.0), |e| e.name = Some("Carol".into())),
        with(s("carol", 5.0), |e| e.name = Some(String::new())),
        with(s("gus", f64::NEG_INFINITY), |e| e.op = Some("incr".into())),
        with(s("x", 1.0), |e| e.op = Some("double".into())),
        with(s("x", 1.0), |e| e.data = Some(json!([1, 2]))),
        with(s("x", 1.0), |e| {
            e.data = Some(json!({"big": "x".repeat(5000)}))
        }),
        with(s("x", 1.0), |e| e.name = Some("n".repeat(600))),
        s("", 1.0),
        s(&"m".repeat(513), 1.0),
        s("nan", f64::NAN),
    ];
    for (i, e) in ones.into_iter().enumerate() {
        t.push(call(format!("submit_one #{i}"), SubmitOne(b("game"), e)));
    }
    t.push(read("game", &["bob", "dave", "zed", "gus"]));

    t.extend([
        // Bounds and `best` on the asc competition board.
        call(
            "submit lap",
            Submit(
                b("lap"),
                vec![s("p1", 61.5), s("p2", 59.0), s("p3", 61.5), s("p4", 70.0)],
            ),
        ),
        call("lap improve", SubmitOne(b("lap"), s("p4", 58.0))),
        call("lap worse", SubmitOne(b("lap"), s("p2", 65.0))),
        call("lap out of bounds", SubmitOne(b("lap"), s("p9", 1001.0))),
        call(
            "lap batch with one out of bounds",
            Submit(b("lap"), vec![s("p5", 10.0), s("p6", -1.0)]),
        ),
        call(
            "lap incr out of bounds",
            Submit(
                b("lap"),
                vec![
                    with(s("p1", 2000.0), |e| e.op = Some("incr".into())),
                    s("p7", 61.5),
                ],
            ),
        ),
        read("lap", &["p1", "p2", "p3", "p4", "p7"]),
        // Capped board: the worst are evicted, possibly the newcomer.
        call(
            "create capped",
            Create(b("capped"), json!({"max_members": 3})),
        ),
        call(
            "submit capped",
            Submit(
                b("capped"),
                vec![
                    s("a", 1.0),
                    s("b", 2.0),
                    s("c", 3.0),
                    s("d", 4.0),
                    s("e", 0.5),
                ],
            ),
        ),
        read("capped", &["b", "c", "d"]),
        call(
            "submit rand-src",
            Submit(
                b("rand-src"),
                vec![s("alice", 1.0), s("gus", 2.0), s("ivy", 3.0)],
            ),
        ),
        // Data, removal, ranges.
        call(
            "set_data",
            SetData {
                board: b("game"),
                member: b("carol"),
                name: Some("C".into()),
                data: Some(json!({"k": 1})),
            },
        ),
        call(
            "set_data missing member",
            SetData {
                board: b("game"),
                member: b("nobody"),
                name: None,
                data: None,
            },
        ),
        call(
            "set_data bad data",
            SetData {
                board: b("game"),
                member: b("carol"),
                name: None,
                data: Some(json!(3)),
            },
        ),
        call(
            "set_data missing board",
            SetData {
                board: b("nope"),
                member: b("carol"),
                name: None,
                data: None,
            },
        ),
        call("entry carol", Entry(b("game"), b("carol"))),
        call(
            "remove",
            Remove(b("game"), strings(&["bob", "nobody", "bob"])),
        ),
        call("remove ranks", RemoveRanks(b("game"), 2, 3)),
        call("remove ranks bad", RemoveRanks(b("game"), 0, 3)),
        call(
            "remove scores",
            RemoveScores(b("game"), range(Some(0.0), Some(2.0), false, true)),
        ),
        read("game", &["alice", "carol", "gus", "hal"]),
        // Reconfiguring flips the order and the ranking in place.
        call(
            "put game",
            Put(b("game"), json!({"order": "asc", "ranking": "competition"})),
        ),
        read("game", &["alice", "carol", "gus", "hal"]),
        call(
            "put game dense",
            Put(b("game"), json!({"order": "asc", "ranking": "dense"})),
        ),
        call("game tie", SubmitOne(b("game"), s("zed", 5.0))),
        call("put new", Put(b("fresh"), json!({}))),
        read("game", &["alice", "carol", "gus", "hal"]),
        call(
            "put capped smaller",
            Put(b("capped"), json!({"max_members": 1})),
        ),
        read("capped", &["d"]),
    ]);

    // Merge and intersect, into new and existing boards.
    let comb = |sources: &[&str], weights: Option<Vec<f64>>, agg: Option<&str>| CombineIn {
        sources: strings(sources),
        weights,
        aggregate: agg.map(str::to_string),
    };
    for (i, (req, inter)) in [
        (comb(&["game", "lap"], None, None), false),
        (
            comb(
                &["game", "capped", "nope"],
                Some(vec![2.0, 0.5, 1.0]),
                Some("max"),
            ),
            false,
        ),
        (
            comb(&["game", "game"], Some(vec![1.0, -1.0]), Some("min")),
            true,
        ),
        (comb(&["rand-src", "game"], None, Some("sum")), true),
        (comb(&[], None, None), false),
        (comb(&["game"], Some(vec![1.0, 2.0]), None), false),
        (comb(&["game"], None, Some("avg")), false),
        (comb(&["game", ""], None, None), false),
    ]
    .into_iter()
    .enumerate()
    {
        t.push(call(
            format!("combine #{i}"),
            Combine(format!("merged{i}"), req, inter),
        ));
        t.push(call(
            format!("combined #{i}"),
            Range(format!("merged{i}"), 1, 100, false, true),
        ));
    }
    t.extend([
        call(
            "merge into capped",
            Combine(b("capped"), comb(&["game", "capped"], None, None), false),
        ),
        read("capped", &["d"]),
    ]);

    // A board name that needs escaping in the hash tag.
    let odd = "we}ird%{name} é";
    t.extend([
        call("submit odd", Submit(b(odd), vec![s("a", 1.0), s("b", 2.0)])),
        read(odd, &["a", "b"]),
    ]);

    // Many ties, random scores, both rankings.
    let mut rng = SmallRng::seed_from_u64(7);
    for ranking in ["unique", "competition", "dense"] {
        let name = format!("rand-{ranking}");
        t.push(call(
            "create rand",
            Create(name.clone(), json!({"ranking": ranking})),
        ));
        let batch: Vec<SubmitIn> = (0..400)
            .map(|i| {
                s(
                    &format!("m{:03}", i % 300),
                    rng.random_range(0..40) as f64 / 4.0,
                )
            })
            .collect();
        t.push(call("submit rand", Submit(name.clone(), batch)));
        t.push(read(&name, &["m000", "m150", "m299"]));
        t.push(call("rand full", Range(name.clone(), 1, 400, false, false)));
        // Moves, removals and evictions keep the distinct scores right.
        let moves: Vec<SubmitIn> = (0..100)
            .map(|i| {
                let e = s(
                    &format!("m{:03}", i * 3),
                    rng.random_range(-4..44) as f64 / 4.0,
                );
                if i % 2 == 0 {
                    with(e, |e| e.op = Some("incr".into()))
                } else {
                    e
                }
            })
            .collect();
        let gone: Vec<String> = (0..60).map(|i| format!("m{:03}", i * 5)).collect();
        t.extend([
            call("moves", Submit(name.clone(), moves)),
            call("remove some", Remove(name.clone(), gone)),
            call("remove top", RemoveRanks(name.clone(), 1, 7)),
            call(
                "remove band",
                RemoveScores(name.clone(), range(Some(3.0), Some(4.0), false, false)),
            ),
            call("rand after", Range(name.clone(), 1, 400, true, false)),
            call(
                "cap it",
                Put(name.clone(), json!({"ranking": ranking, "max_members": 50})),
            ),
            call("capped rand", Range(name.clone(), 1, 400, false, false)),
            read(&name, &["m001", "m002", "m299"]),
        ]);
        // Switching rankings in place.
        for other in ["dense", "unique", "competition"] {
            t.push(call(
                format!("to {other}"),
                Put(name.clone(), json!({"ranking": other, "max_members": 50})),
            ));
            t.push(call(
                format!("as {other}"),
                Range(name.clone(), 1, 60, false, false),
            ));
        }
    }

    // Resets archive the content under NAME@time (.2, .3 when taken) and
    // keep_archives drops the oldest.
    let archive = "lap@2026-11-21T12:00:00Z";
    t.extend([
        call("reset lap", Reset(b("lap"))),
        call("reset lap again", Reset(b("lap"))),
        read("lap", &["p1"]),
        read(archive, &["p1", "p2", "p4"]),
        call("write archive", SubmitOne(b(archive), s("p1", 1.0))),
        call("remove archive", Remove(b(archive), strings(&["p1"]))),
        call("reset archive", Reset(b(archive))),
        call("put archive", Put(b(archive), json!({}))),
        call("reset missing", Reset(b("nope"))),
        call(
            "create kept",
            Create(b("kept"), json!({"keep_archives": 2, "ranking": "dense"})),
        ),
    ]);
    for i in 0..4 {
        t.push(call(
            "fill kept",
            Submit(
                b("kept"),
                vec![
                    with(s(&format!("k{i}"), 1.0), |e| e.name = Some("K".into())),
                    s("x", i as f64),
                ],
            ),
        ));
        t.push(call("reset kept", Reset(b("kept"))));
    }
    // (Four resets in one second: the fourth reuses the freed base name,
    // which then sorts oldest and is pruned at once, on both engines.)
    t.extend([
        read("kept@2026-11-21T12:00:00Z.3", &["x", "k2"]),
        Step::PlainBatches,
        Step::ImportBatches,
        Step::SearchScenario,
        Step::OddMembers,
        call("boards", Boards),
        call("delete game", Delete(b("game"))),
        call("delete game again", Delete(b("game"))),
        call("top deleted", Top(b("game"))),
        call("boards after", Boards),
    ]);
    t
}

/// Runs one call and logs its answer under `label`.
async fn run(b: &dyn Backend, l: &mut Log, label: &str, op: &Op) {
    match op {
        Op::Create(board, config) => l.add(
            label,
            b.board_create(&ops::CreateBoard {
                board: board.to_string(),
                config: config.clone(),
            })
            .await,
        ),
        Op::Put(board, config) => l.add(
            label,
            b.board_put(&ops::PutBoard {
                board: board.to_string(),
                config: config.clone(),
                confirm_rerank: true,
            })
            .await,
        ),
        Op::Info(board) => l.add(
            label,
            b.board_info(&ops::BoardInfo {
                board: board.to_string(),
            })
            .await,
        ),
        Op::Top(board) => l.add(
            label,
            b.top(&ops::Top {
                board: board.to_string(),
                page: None,
                page_size: None,
                with_data: false,
            })
            .await,
        ),
        Op::Entry(board, member) => l.add(
            label,
            b.entry(&ops::GetEntry {
                board: board.to_string(),
                member: member.to_string(),
                page_size: None,
            })
            .await,
        ),
        Op::Count(board, bounds) => l.add(
            label,
            b.count(&ops::Count {
                board: board.to_string(),
                bounds: *bounds,
            })
            .await,
        ),
        Op::Submit(board, entries) => l.add(
            label,
            b.submit(&ops::SubmitMany {
                board: board.to_string(),
                entries: entries.to_vec(),
            })
            .await,
        ),
        Op::SubmitOne(board, entry) => l.add(
            label,
            b.submit_one(&ops::Submit {
                board: board.to_string(),
                entry: entry.clone(),
            })
            .await,
        ),
        Op::SetData {
            board,
            member,
            name,
            data,
        } => l.add(
            label,
            b.set_data(&ops::SetData {
                board: board.to_string(),
                member: member.to_string(),
                name: name.clone(),
                data: data.clone(),
            })
            .await,
        ),
        Op::Remove(board, members) => l.add(
            label,
            b.remove(&ops::Remove {
                board: board.to_string(),
                members: members.to_vec(),
            })
            .await,
        ),
        Op::RemoveRanks(board, start, stop) => l.add(
            label,
            b.remove_range(&ops::RemoveRange {
                board: board.to_string(),
                by: ops::RangeBy::Rank {
                    start: *start,
                    stop: *stop,
                },
            })
            .await,
        ),
        Op::RemoveScores(board, bounds) => l.add(
            label,
            b.remove_range(&ops::RemoveRange {
                board: board.to_string(),
                by: ops::RangeBy::Score(*bounds),
            })
            .await,
        ),
        Op::Combine(dest, req, intersect) => l.add(
            label,
            b.combine(&ops::Combine {
                dest: dest.to_string(),
                req: req.clone(),
                intersect: *intersect,
            })
            .await,
        ),
        Op::Range(board, start, stop, from_worst, with_data) => l.add(
            label,
            b.range_by_rank(&ops::RangeByRank {
                board: board.to_string(),
                start: *start,
                stop: *stop,
                from_worst: *from_worst,
                with_data: *with_data,
            })
            .await,
        ),
        Op::Reset(board) => l.add(
            label,
            b.reset(&ops::Reset {
                board: board.to_string(),
            })
            .await,
        ),
        Op::Boards => l.add(label, b.boards(&ops::ListBoards).await),
        Op::Delete(board) => l.add(
            label,
            b.board_delete(&ops::DeleteBoard {
                board: board.to_string(),
            })
            .await,
        ),
    }
}

/// Runs every step against `b` and returns the answers, one line per call.
async fn scenario(b: &dyn Backend) -> Vec<String> {
    let mut log = Log::default();
    let l = &mut log;
    for step in steps() {
        match &step {
            Step::Call(label, op) => run(b, l, label, op).await,
            Step::ReadAll(board, members) => {
                let members: Vec<&str> = members.iter().map(String::as_str).collect();
                read_all(b, l, board, &members).await;
            }
            Step::PlainBatches => plain_batches(b, l).await,
            Step::ImportBatches => import_batches(b, l).await,
            Step::SearchScenario => search_scenario(b, l).await,
            Step::OddMembers => odd_members(b, l).await,
        }
    }
    log.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_answers_on_embedded_single_redis_and_cluster() {
    let want = scenario(&embedded()).await;
    assert!(want.len() > 500, "the scenario covers {} calls", want.len());
    // For reviewing what the scenario asks and answers.
    if let Some(path) = std::env::var_os("PODIUM_CONFORMANCE_DUMP") {
        std::fs::write(path, want.join("\n")).unwrap();
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    let got = scenario(&rb).await;
    compare("redis", &want, &got);
    search_index_is_clean(single.nodes[0].port, &["{people}:*", "{game}:*"]);
    // Imported plain members have no stored sources; named ones do.
    let stored = |key: &str, m: &str| redis_cli(single.nodes[0].port, &["HEXISTS", key, m]);
    assert_eq!(stored("{imp2}:i", "m150").trim(), "0");
    assert_eq!(stored("{imp2}:i", "m0").trim(), "1");
    assert_eq!(stored("{imp2}:i", "Ann-Lee").trim(), "1");
    assert_eq!(stored("{impm}:i", "m510").trim(), "0");

    let cluster = Redis::cluster(false);
    let cb = redis_backend(&cluster.url()).await;
    let got = scenario(&cb).await;
    compare("cluster", &want, &got);
    eprintln!(
        "{} answers identical on embedded, redis and cluster",
        want.len()
    );
}
