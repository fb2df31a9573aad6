//! The client commands of docs/spec.md §6 (`podium submit`, `top`, `search`,
//! `import`, `export`, `watch`) against the real server, over MessagePack-RPC (the default)
//! and over HTTP (`--http`): what they print, that they change what the
//! server holds, and that errors exit non-zero with the server's message.
//!
//! Also the Rust client library they use (`podium-client`) against the
//! real server — here because Cargo hands the `podium` binary
//! (`CARGO_BIN_EXE_podium`) to this package's tests only: typed calls,
//! pipelining, errors, auth, a large export, clients on several tasks.

use crate::support;

use std::process::{Command, Stdio};

use podium_client::{blocking, Client, ClientError, Ser, Submission};
use rmpv::Value;
use support::rpc::Podium;
use support::{bin, run_to_end};

impl Podium {
    /// A `podium-client` connection to the server's RPC port.
    fn blocking_client(&self) -> blocking::Client {
        blocking::Client::connect(self.rpc.as_str()).expect("connecting to podium's RPC port")
    }
}

fn members_of(c: &blocking::Client, board: &str) -> u64 {
    c.board_info(board).expect("board_info").members
}

/// The round trip of the commands; `conn` picks the transport.
fn round_trip(srv: &Podium, conn: &[&str]) {
    let with = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        // After the subcommand name.
        for (k, c) in conn.iter().enumerate() {
            v.insert(1 + k, c.to_string());
        }
        v
    };
    let run = |args: &[&str]| {
        let v = with(args);
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        run_to_end(&refs)
    };
    let c = srv.blocking_client();

    let (st, out) = run(&["submit", "week 1", "alice", "1200", "--name", "Alice"]);
    assert!(st.success(), "{out}");
    assert!(out.contains("alice: score 1200, rank 1"), "{out}");
    let (st, out) = run(&["submit", "week 1", "bob", "-inf"]);
    assert!(st.success(), "{out}");
    let (st, out) = run(&["submit", "week 1", "bob", "-inf", "--json"]);
    assert!(st.success(), "{out}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["score"], "-inf");
    assert_eq!(j["changed"], false);

    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("players.csv");
    // More than one import batch (10,000), with a quoted line break.
    let mut body = String::from("member,score,name\n");
    for i in 0..25_000 {
        body.push_str(&format!("p{i},{i},\"Player, {i}\"\n"));
    }
    body.push_str("multi,0.5,\"two\nlines\"\n");
    body.push_str("broken,not-a-number\n");
    body.push_str("toomany,1,x,y\n");
    std::fs::write(&csv, body).unwrap();
    let (st, out) = run(&["import", "--quiet", "week 1", csv.to_str().unwrap()]);
    assert!(
        !st.success(),
        "a failed line makes import exit non-zero: {out}"
    );
    assert!(out.contains("imported 25001, failed 2"), "{out}");
    // Errors name the file's lines.
    assert!(out.contains("line 25004, member \"broken\""), "{out}");
    assert!(out.contains("line 25005, member \"toomany\""), "{out}");
    assert_eq!(members_of(&c, "week 1"), 25_003);
    let e = c.entry("week 1", "multi").unwrap();
    assert_eq!(e["name"], Value::from("two\nlines"));

    let (st, out) = run(&["top", "week 1", "--page-size", "3"]);
    assert!(st.success(), "{out}");
    for want in [
        "p24999",
        "p24998",
        "p24997",
        "Player, 24999",
        "page 1 of 8335 (25003 members, ranking unique)",
    ] {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }
    let (st, out) = run(&["top", "week 1", "--page", "2", "--page-size", "2", "--json"]);
    assert!(st.success(), "{out}");
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["entries"][0]["member"], "p24997");
    assert_eq!(j["total"], 25_003);

    let dump = dir.path().join("dump.ndjson");
    let (st, out) = run(&["export", "--quiet", "week 1", "-o", dump.to_str().unwrap()]);
    assert!(st.success(), "{out}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 25_003);
    assert_eq!(lines[0]["member"], "p24999");
    assert_eq!(lines[0]["name"], "Player, 24999");
    assert_eq!(lines[0]["rank"], 1);
    assert_eq!(lines[25_002]["member"], "bob");
    assert_eq!(lines[25_002]["score"], "-inf");

    // The export imports back into an identical board.
    let (st, out) = run(&["import", "--quiet", "copy", dump.to_str().unwrap()]);
    assert!(st.success(), "{out}");
    assert!(out.contains("imported 25003, failed 0"), "{out}");
    for page in [1, 7, 251] {
        let a = c.top("week 1", page, 100).unwrap();
        let b = c.top("copy", page, 100).unwrap();
        assert_eq!(a.entries, b.entries);
    }
    // An NDJSON file from stdin is not possible with run_to_end; a file
    // with a bad line is.
    let nd = dir.path().join("bad.ndjson");
    std::fs::write(
        &nd,
        "{\"member\":\"x\",\"score\":1}\n{oops\n\n{\"member\":\"y\",\"score\":\"nan\"}\n",
    )
    .unwrap();
    let (st, out) = run(&["import", "--quiet", "nd", nd.to_str().unwrap()]);
    assert!(!st.success(), "{out}");
    assert!(out.contains("imported 1, failed 2"), "{out}");
    assert!(out.contains("line 2"), "{out}");
    assert!(out.contains("line 4, member \"y\""), "{out}");
}

#[test]
fn submit_top_import_export_round_trip_over_rpc() {
    let srv = Podium::start(&[]);
    round_trip(&srv, &["--rpc", &srv.rpc]);
}

#[test]
fn submit_top_import_export_round_trip_over_http() {
    let srv = Podium::start(&[]);
    round_trip(&srv, &["--http", &srv.http]);
}

#[test]
fn watch_follows_the_top_places_and_a_member_live() {
    let srv = Podium::start(&[]);
    let c = srv.blocking_client();
    let sub = |m: &str, s: f64| {
        c.submit("b", &Submission::new(m, s)).expect("submit");
    };
    sub("a", 10.0);
    sub("me", 1.0);
    let child = Command::new(bin())
        .args([
            "watch",
            "--http",
            &srv.http,
            "b",
            "--top",
            "2",
            "--members",
            "me",
            "--json",
            "--count",
            "5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The snapshot is the first event: wait for the stream to be there.
    let t = std::time::Instant::now();
    loop {
        let (_, out) = run_to_end(&["top", "--http", &srv.http, "b"]);
        assert!(out.contains('a'), "{out}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        if t.elapsed().as_millis() > 600 {
            break;
        }
    }
    sub("b", 20.0);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["snapshot", "member", "leave", "enter", "move"],
        "{text}"
    );
    assert_eq!(evs[1]["by"], "b");
    assert_eq!(evs[1]["rank"], 3);
    let (st, out) = run_to_end(&["watch", "--http", "http://127.0.0.1:1", "b"]);
    assert!(!st.success());
    assert!(out.contains("cannot reach podium"), "{out}");
    let (st, out) = run_to_end(&["watch", "--http", &srv.http, "b", "--top", "0"]);
    assert!(!st.success());
    assert!(out.contains("top must be between 1 and 1000"), "{out}");
}

#[test]
fn errors_exit_non_zero_with_the_server_message() {
    let srv = Podium::start(&[]);
    for conn in [["--rpc", srv.rpc.as_str()], ["--http", srv.http.as_str()]] {
        let (st, out) = run_to_end(&["top", conn[0], conn[1], "nope"]);
        assert!(!st.success());
        assert!(out.contains("board_not_found"), "{out}");
        let (st, out) = run_to_end(&["export", conn[0], conn[1], "nope"]);
        assert!(!st.success());
        assert!(out.contains("board_not_found"), "{out}");
        let (st, out) = run_to_end(&["submit", conn[0], conn[1], "b", "m", "nan"]);
        assert!(!st.success());
        assert!(out.to_lowercase().contains("not a number"), "{out}");
    }
    let (st, out) = run_to_end(&["top", "--rpc", "127.0.0.1:1", "b"]);
    assert!(!st.success());
    assert!(out.contains("cannot reach podium at 127.0.0.1:1"), "{out}");
    let (st, out) = run_to_end(&["top", "--http", "http://127.0.0.1:1", "b"]);
    assert!(!st.success());
    assert!(out.contains("cannot reach podium"), "{out}");
}

#[test]
fn commands_authenticate_with_an_api_key() {
    let srv = Podium::start(&[
        "--api-key",
        "reader-key-0123456789:read",
        "--api-key",
        "writer-key-0123456789:write",
    ]);
    let (st, out) = run_to_end(&["submit", "--rpc", &srv.rpc, "b", "m", "1"]);
    assert!(!st.success());
    assert!(out.contains("unauthorized"), "{out}");
    let (st, out) = run_to_end(&[
        "submit",
        "--rpc",
        &srv.rpc,
        "--api-key",
        "reader-key-0123456789",
        "b",
        "m",
        "1",
    ]);
    assert!(!st.success());
    assert!(out.contains("forbidden"), "{out}");
    let (st, out) = run_to_end(&[
        "submit",
        "--rpc",
        &srv.rpc,
        "--api-key",
        "writer-key-0123456789",
        "b",
        "m",
        "1",
    ]);
    assert!(st.success(), "{out}");
    let (st, out) = run_to_end(&[
        "top",
        "--rpc",
        &srv.rpc,
        "--api-key",
        "reader-key-0123456789",
        "b",
    ]);
    assert!(st.success(), "{out}");
    assert!(out.contains("page 1 of 1 (1 members"), "{out}");
}

/// `podium search` over RPC and HTTP: names imported by `podium import`
/// (CSV and NDJSON) are found at once, also when the board's index was
/// built by an earlier search; paging, `--with-data`, `--json`, errors.
#[test]
fn search_finds_imported_names_over_rpc_and_http() {
    let srv = Podium::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("players.csv");
    let mut body = String::from("member,score,name\n");
    body.push_str("jose,50,José Álvarez\njosephine,70,Josephine Baker\nann,60,Ann Jones\n");
    for i in 0..30 {
        body.push_str(&format!("p{i},{i},Player {i}\n"));
    }
    std::fs::write(&csv, body).unwrap();
    let conns = [["--rpc", srv.rpc.as_str()], ["--http", srv.http.as_str()]];
    let (st, out) = run_to_end(&[
        "import",
        conns[0][0],
        conns[0][1],
        "--quiet",
        "s",
        csv.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");

    for conn in conns {
        let search = |extra: &[&str]| {
            let mut args = vec!["search", conn[0], conn[1]];
            args.extend_from_slice(extra);
            run_to_end(&args)
        };
        let (st, out) = search(&["s", "jose"]);
        assert!(st.success(), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "RANK  MEMBER     SCORE  NAME", "{out}");
        // Best first, with the rank on the whole board.
        assert_eq!(lines[1], "   1  josephine     70  Josephine Baker", "{out}");
        assert_eq!(lines[2], "   3  jose          50  José Álvarez", "{out}");
        assert_eq!(
            lines[3], "2 matches for \"jose\", showing 1–2 (ranking unique)",
            "{out}"
        );

        let (st, out) = search(&["s", "player", "--limit", "2", "--offset", "4"]);
        assert!(st.success(), "{out}");
        assert!(out.contains("  p25  "), "{out}");
        assert!(out.contains("  p24  "), "{out}");
        assert!(!out.contains("p26"), "{out}");
        assert!(
            out.contains("30 matches for \"player\", showing 5–6"),
            "{out}"
        );

        let (st, out) = search(&["s", "nobody"]);
        assert!(st.success(), "{out}");
        assert!(
            out.contains("(no matches)\n0 matches for \"nobody\""),
            "{out}"
        );

        let (st, out) = search(&["s", "ann", "--json"]);
        assert!(st.success(), "{out}");
        let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(j["total"], 1);
        assert_eq!(j["entries"][0]["member"], "ann");
        assert_eq!(j["entries"][0]["rank"], 2);

        let (st, out) = search(&["nope", "a"]);
        assert!(!st.success());
        assert!(out.contains("board_not_found"), "{out}");
        // A query with no word matches nothing.
        let (st, out) = search(&["s", " - "]);
        assert!(st.success(), "{out}");
        assert!(out.contains("0 matches"), "{out}");
    }

    // The index exists now: imports after it are found at once, over
    // both transports, NDJSON (with data) and CSV.
    let nd = dir.path().join("more.ndjson");
    std::fs::write(
        &nd,
        "{\"member\":\"zoe\",\"score\":100,\"name\":\"Zoé Quark\",\"data\":{\"team\":\"red\"}}\n",
    )
    .unwrap();
    let more_csv = dir.path().join("more.csv");
    std::fs::write(&more_csv, "zed,1,Zed Quarry\n").unwrap();
    let (st, out) = run_to_end(&[
        "import",
        conns[0][0],
        conns[0][1],
        "--quiet",
        "s",
        nd.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");
    let (st, out) = run_to_end(&[
        "import",
        conns[1][0],
        conns[1][1],
        "--quiet",
        "s",
        more_csv.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");
    for conn in conns {
        let (st, out) = run_to_end(&["search", conn[0], conn[1], "s", "qua", "--with-data"]);
        assert!(st.success(), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "RANK  MEMBER  SCORE  NAME        DATA", "{out}");
        assert_eq!(
            lines[1], "   1  zoe       100  Zoé Quark   {\"team\":\"red\"}",
            "{out}"
        );
        assert_eq!(lines[2], "  33  zed         1  Zed Quarry", "{out}");
        assert!(out.contains("2 matches for \"qua\""), "{out}");
    }
}

// ------------------------------------------------------- the client library

#[test]
fn client_typed_calls_against_podium() {
    let srv = Podium::start(&[]);
    let c = srv.blocking_client();
    let info = c
        .board_create("laps", Value::Map(vec![("order".into(), "asc".into())]))
        .unwrap();
    assert_eq!((info.board.as_str(), info.members), ("laps", 0));
    let e = c.board_create("laps", Value::Nil).unwrap_err();
    assert_eq!(e.code(), Some("board_exists"));
    let info = c
        .board_patch("laps", Value::Map(vec![("keep_archives".into(), 3.into())]))
        .unwrap();
    assert_eq!(info.config["order"], Value::from("asc"));
    assert_eq!(info.config["keep_archives"], Value::from(3));
    let e = c
        .board_patch("laps", Value::Map(vec![("order".into(), "desc".into())]))
        .unwrap_err();
    assert_eq!(e.code(), Some("confirm_rerank_required"));

    let r = c.submit("lb", &Submission::new("ann", 30.5)).unwrap();
    assert_eq!(r["rank"], Value::from(1));
    assert_eq!(r["created"], Value::from(true));
    let mut bob = Submission::new("bob", 20.0);
    bob.name = Some("Bob".into());
    let r = c
        .submit_many("lb", &[bob, Submission::new("cat", f64::INFINITY)])
        .unwrap();
    assert_eq!(r["results"].as_array().unwrap().len(), 2);
    let imp = c
        .import(
            "lb",
            &[Submission::new("dan", 1.0), Submission::new("", 2.0)],
        )
        .unwrap();
    assert_eq!((imp.imported, imp.failed), (1, 1));
    assert_eq!(imp.errors[0].line, Some(2));

    let top = c.top("lb", 1, 2).unwrap();
    assert_eq!(top.total, 4);
    assert_eq!(top.total_pages, 2);
    assert_eq!(top.entries[0].member, "cat");
    assert_eq!(top.entries[0].score, f64::INFINITY);
    assert_eq!(top.entries[1].member, "ann");
    let rank = c.rank("lb", "bob").unwrap();
    assert_eq!((rank.rank, rank.score), (3, 20.0));
    let entry = c.entry("lb", "bob").unwrap();
    assert_eq!(entry["name"], Value::from("Bob"));
    let around = c.around("lb", "bob", 3).unwrap();
    assert_eq!(around["entries"].as_array().unwrap().len(), 3);
    let range = c.range_by_rank("lb", 2, 3).unwrap();
    assert_eq!(
        range
            .entries
            .iter()
            .map(|e| e.member.as_str())
            .collect::<Vec<_>>(),
        ["ann", "bob"]
    );
    let all = c.export("lb").unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[3].member, "dan");
    assert_eq!(all[2].name.as_deref(), Some("Bob"));
    let boards = c.boards().unwrap();
    assert!(boards.iter().any(|b| b.board == "lb" && b.members == 4));
    assert_eq!(c.auth("anything").unwrap(), "admin");
    let d = c.board_delete("laps").unwrap();
    assert_eq!(d["deleted"], Value::from(true));

    // Errors: typed, and the connection goes on.
    let e = c.rank("lb", "zed").unwrap_err();
    assert_eq!(e.code(), Some("member_not_found"));
    assert!(e.to_string().ends_with("(member_not_found)"), "{e}");
    let e = c.call("no_such_method", &Vec::new()).unwrap_err();
    assert_eq!(e.code(), Some("not_found"));
    let e = c.call("top", &Ser(("lb", 1))).unwrap_err();
    assert!(matches!(e, ClientError::Server { .. }), "{e}");
    assert_eq!(c.rank("lb", "ann").unwrap().rank, 2);

    // A pipeline: every call on the wire before the first answer.
    let calls: Vec<(&str, Vec<Value>)> = (0..200)
        .map(|i| {
            if i % 2 == 0 {
                ("rank", vec!["lb".into(), "ann".into()])
            } else {
                ("rank", vec!["lb".into(), "nobody".into()])
            }
        })
        .collect();
    let out = c.pipeline(calls);
    for (i, r) in out.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(r.as_ref().unwrap()["rank"], Value::from(2));
        } else {
            assert_eq!(r.as_ref().unwrap_err().code(), Some("member_not_found"));
        }
    }
}

#[test]
fn client_pipelines_writes_in_order_and_exports_large_boards() {
    let srv = Podium::start(&[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = Client::connect(srv.rpc.as_str()).await.unwrap();
        // 300 batches of 1,000, all in flight at once: applied in order.
        let futs: Vec<_> = (0..300u64)
            .map(|b| {
                let batch: Vec<Submission> = (0..1000u64)
                    .map(|k| Submission::new(format!("m{}", b * 1000 + k), (b * 1000 + k) as f64))
                    .collect();
                c.submit_many("big", &batch)
            })
            .collect();
        // A read sent after the writes on the same connection sees them.
        let count = c.board_info("big");
        for f in futs {
            f.await.unwrap();
        }
        assert_eq!(count.await.unwrap().members, 300_000);

        // Several tasks share the connection (clones) while others use
        // connections of their own.
        let mut tasks = Vec::new();
        for t in 0..4 {
            let shared = c.clone();
            let addr = srv.rpc.clone();
            tasks.push(tokio::spawn(async move {
                let own = Client::connect(addr.as_str()).await.unwrap();
                for i in 0..200u64 {
                    let m = format!("m{}", (t * 7919 + i * 104_729) % 300_000);
                    let a = shared.rank("big", &m);
                    let b = own.rank("big", &m);
                    let (a, b) = (a.await.unwrap(), b.await.unwrap());
                    assert_eq!(a, b);
                    let n: u64 = m[1..].parse().unwrap();
                    assert_eq!(a.rank, 300_000 - n);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }

        // ~12 MB of export, streamed by podium in chunks, twice pipelined.
        let (a, b) = (c.export("big"), c.export("big"));
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        assert_eq!(a.len(), 300_000);
        assert_eq!(a, b);
        for (k, e) in a.iter().enumerate() {
            assert_eq!(e.rank, k as u64 + 1);
            assert_eq!(e.score, (299_999 - k) as f64);
        }
        assert!(c.bytes_received() > 10_000_000);
    });
}

#[test]
fn client_limits_response_size() {
    let srv = Podium::start(&[]);
    let c = srv.blocking_client();
    let batch: Vec<Submission> = (0..20_000)
        .map(|i| Submission::new(format!("member-{i}"), i as f64))
        .collect();
    c.import("b", &batch).unwrap();
    let small = blocking::Client::connect_with(
        srv.rpc.as_str(),
        podium_client::Config {
            max_message_bytes: 100_000,
            ..Default::default()
        },
    )
    .unwrap();
    let e = small.export("b").unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e}");
    // The refused response closed that connection; others are fine.
    assert!(small.top("b", 1, 1).is_err());
    assert_eq!(c.top("b", 1, 1).unwrap().total, 20_000);
}

/// Scores a double cannot hold, and scores with white space around them,
/// are refused by `podium submit` and in imported CSV and NDJSON lines, with
/// the text HTTP gives; so is a key repeated in an NDJSON line. Over RPC
/// and HTTP alike; nothing refused is stored.
#[test]
fn out_of_range_padded_and_repeated_input_is_refused() {
    let srv = Podium::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    for (conn, board) in [
        (["--rpc", srv.rpc.as_str()], "r"),
        (["--http", srv.http.as_str()], "h"),
    ] {
        for (score, needle) in [
            ("1e999", "score \"1e999\" is out of range of a double"),
            ("-1e400", "score \"-1e400\" is out of range of a double"),
            (" 5", "score \" 5\" has white space around the number"),
            ("5 ", "score \"5 \" has white space around the number"),
        ] {
            let (st, out) = run_to_end(&["submit", conn[0], conn[1], board, "m", score]);
            assert!(!st.success(), "{score:?}: {out}");
            assert!(out.contains(needle), "{score:?}: {out}");
        }
        let csv = dir.path().join(format!("{board}.csv"));
        std::fs::write(&csv, "member,score\nc1,1e400\nc2, 5\nc3,3\n").unwrap();
        let (st, out) = run_to_end(&[
            "import",
            conn[0],
            conn[1],
            "--quiet",
            board,
            csv.to_str().unwrap(),
        ]);
        assert!(!st.success(), "{out}");
        assert!(out.contains("imported 1, failed 2"), "{out}");
        assert!(out.contains("out of range of a double"), "{out}");
        assert!(out.contains("white space"), "{out}");
        let nd = dir.path().join(format!("{board}.ndjson"));
        std::fs::write(
            &nd,
            "{\"member\":\"n1\",\"score\":1e400}\n{\"member\":\"n2\",\"score\":1,\"score\":2}\n{\"member\":\"n3\",\"score\":4}\n",
        )
        .unwrap();
        let (st, out) = run_to_end(&[
            "import",
            conn[0],
            conn[1],
            "--quiet",
            board,
            nd.to_str().unwrap(),
        ]);
        assert!(!st.success(), "{out}");
        assert!(out.contains("imported 1, failed 2"), "{out}");
        assert!(
            out.contains("score \"1e400\" is out of range of a double"),
            "{out}"
        );
        assert!(out.contains("key \"score\" is repeated"), "{out}");
        assert_eq!(
            members_of(&srv.blocking_client(), board),
            2,
            "only c3 and n3"
        );
    }
}

/// `--api-key-file` (or PODIUM_API_KEY_FILE) gives the server its keys
/// without putting them on its command line; the client takes its key
/// from PODIUM_API_KEY the same way.
#[test]
fn api_keys_from_a_file_stay_out_of_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(
        &keys,
        "# podium keys\nreader-key-0123456789:read\n\nwriter-key-0123456789:write\n",
    )
    .unwrap();
    let by_flag = Podium::start(&["--api-key-file", keys.to_str().unwrap()]);
    let by_env = Podium::start_with_env(&[], &[("PODIUM_API_KEY_FILE", keys.to_str().unwrap())]);
    for srv in [&by_flag, &by_env] {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", srv.pid())).unwrap();
        assert!(!String::from_utf8_lossy(&cmdline).contains("key-0123456789"));
        let (st, out) = run_to_end(&["submit", "--rpc", &srv.rpc, "b", "m", "1"]);
        assert!(!st.success());
        assert!(out.contains("unauthorized"), "{out}");
        let (st, out) = run_to_end(&[
            "submit",
            "--rpc",
            &srv.rpc,
            "--api-key",
            "reader-key-0123456789",
            "b",
            "m",
            "1",
        ]);
        assert!(!st.success());
        assert!(out.contains("forbidden"), "{out}");
        let status = Command::new(bin())
            .args(["submit", "--http", &srv.http, "b", "m", "1"])
            .env("PODIUM_API_KEY", "writer-key-0123456789")
            .env_remove("PODIUM_SERVER")
            .env_remove("PODIUM_RPC_SERVER")
            .env_remove("PODIUM_URL")
            .env_remove("PODIUM_RPC_ADDR")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "PODIUM_API_KEY authenticates the client");
    }
    // A key file the server cannot use stops it at start, saying why.
    std::fs::write(&keys, "writer-key-0123456789:sudo\n").unwrap();
    let out = Command::new(bin())
        .args([
            "serve",
            "--api-key-file",
            keys.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--rpc", "off", "--resp", "off", "--data-dir"])
        .arg(dir.path().join("data"))
        .env_remove("PODIUM_CONFIG")
        .env_remove("PODIUM_API_KEYS")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1"), "{err}");
    assert!(!err.contains("writer-key"), "the key is shown: {err}");
}

/// The client commands find the server by the variables every podium
/// client reads (PODIUM_URL, PODIUM_RPC_ADDR); the names used before still
/// work, with a warning that says the new one.
#[test]
fn the_server_comes_from_the_shared_variable_names() {
    let srv = Podium::start(&[]);
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(bin());
        c.args(["submit", "b", "m", "1"]);
        for k in [
            "PODIUM_SERVER",
            "PODIUM_RPC_SERVER",
            "PODIUM_URL",
            "PODIUM_RPC_ADDR",
            "PODIUM_API_KEY",
        ] {
            c.env_remove(k);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.stdin(Stdio::null()).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    for env in [
        [("PODIUM_URL", srv.http.as_str())],
        [("PODIUM_RPC_ADDR", srv.rpc.as_str())],
    ] {
        let (ok, out) = run(&env);
        assert!(ok && !out.contains("warning"), "{env:?}: {out}");
    }
    for (old, new, v) in [
        ("PODIUM_SERVER", "PODIUM_URL", srv.http.as_str()),
        ("PODIUM_RPC_SERVER", "PODIUM_RPC_ADDR", srv.rpc.as_str()),
    ] {
        let (ok, out) = run(&[(old, v)]);
        assert!(ok, "{old}: {out}");
        assert!(
            out.contains(&format!("{old} is deprecated: set {new}")),
            "{out}"
        );
    }
}

#[test]
fn version_names_the_version_and_the_commit() {
    let (st, out) = run_to_end(&["--version"]);
    assert!(st.success(), "{out}");
    let line = out.trim();
    let rest = line
        .strip_prefix(&format!("podium {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        rest == "unknown" || (rest.len() == 12 && rest.bytes().all(|b| b.is_ascii_hexdigit())),
        "{rest}"
    );
}

#[test]
fn completions_and_manual_pages_cover_every_command() {
    for (shell, marker) in [
        ("bash", "_podium()"),
        ("zsh", "#compdef podium"),
        ("fish", "complete -c podium"),
        ("elvish", "edit:completion:arg-completer[podium]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (st, out) = run_to_end(&["completions", shell]);
        assert!(st.success(), "{shell}: {out}");
        assert!(out.contains(marker), "{shell}: no {marker:?}");
        for cmd in ["serve", "submit", "top", "import", "watch", "completions"] {
            assert!(out.contains(cmd), "{shell}: no {cmd}");
        }
    }
    let (st, out) = run_to_end(&["completions", "tcsh"]);
    assert!(!st.success() && out.contains("invalid value"), "{out}");

    let (st, out) = run_to_end(&["man"]);
    assert!(st.success(), "{out}");
    assert!(
        out.starts_with(".ie") || out.contains(".TH podium 1"),
        "{out}"
    );
    assert!(
        out.contains("podium\\-serve") || out.contains("podium-serve"),
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let (st, out) = run_to_end(&["man", "--dir", pages.to_str().unwrap()]);
    assert!(st.success(), "{out}");
    for page in [
        "podium.1",
        "podium-serve.1",
        "podium-submit.1",
        "podium-man.1",
    ] {
        let text =
            std::fs::read_to_string(pages.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
    // The serve page documents the settings.
    let serve = std::fs::read_to_string(pages.join("podium-serve.1")).unwrap();
    assert!(
        serve.contains("data\\-dir") && serve.contains("log\\-format"),
        "{serve}"
    );
}

/// `--log-format json`: every line the server writes to stderr is a JSON
/// object; `--access-log on` adds one a request, naming it.
#[test]
fn json_log_lines_and_the_access_log() {
    use support::http::Server;
    let srv = Server::start(&["--log-format", "json", "--access-log", "on"]);
    let r = srv
        .http
        .get(srv.url("/v1/boards/nothing/top"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = srv
        .http
        .post(srv.url("/v1/boards/weekly/scores"))
        .header("content-type", "application/json")
        .body(r#"{"member":"a","score":1}"#)
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = srv
        .http
        .post(srv.url("/v1/boards/weekly/reset"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut seen = None;
    for _ in 0..100 {
        let log = srv.stderr();
        if log.contains("/v1/boards/nothing/top") && log.contains("board reset") {
            seen = Some(log);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let log = seen.unwrap_or_else(|| panic!("no access line in {}", srv.stderr()));
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines.len() >= 2, "{log}");
    for l in &lines {
        assert!(l["timestamp"].is_string() && l["level"].is_string(), "{l}");
        assert!(l["target"].is_string() && l["fields"].is_object(), "{l}");
    }
    let access = lines
        .iter()
        .find(|l| l["target"] == "podium::access")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(access["level"], "INFO");
    let f = &access["fields"];
    assert_eq!(f["method"], "GET");
    assert_eq!(f["path"], "/v1/boards/nothing/top");
    assert_eq!(f["status"], 404);
    assert!(f["ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{f}");
    assert!(
        f["peer"]
            .as_str()
            .is_some_and(|p| p.starts_with("127.0.0.1:")),
        "{f}"
    );
    // Recovery and resets are logged at info.
    assert!(
        lines.iter().any(|l| l["fields"]["message"] == "recovered"),
        "{log}"
    );
    let reset = lines
        .iter()
        .find(|l| l["fields"]["message"] == "board reset")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(reset["level"], "INFO");
    assert_eq!(reset["fields"]["board"], "weekly");
    assert_eq!(reset["fields"]["members"], 1);
}

/// `--auto-create off`: a write to a missing board (HTTP, and the CLI's
/// `submit` over RPC) answers board_not_found and creates nothing; once
/// the board is created the same write goes through.
#[test]
fn auto_create_off_refuses_writes_to_missing_boards() {
    let srv = Podium::start(&["--auto-create", "off"]);
    let body = r#"{"member":"a","score":1}"#;
    let post = || {
        reqwest::blocking::Client::new()
            .post(format!("{}/v1/boards/weekyl/scores", srv.http))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .unwrap()
    };
    let r = post();
    assert_eq!(r.status(), 404);
    let e: serde_json::Value = r.json().unwrap();
    assert_eq!(e["error"]["code"], "board_not_found");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("auto-create is off"),
        "{e}"
    );
    let (st, out) = run_to_end(&["submit", "--rpc", &srv.rpc, "weekyl", "a", "1"]);
    assert!(!st.success() && out.contains("does not exist"), "{out}");
    let boards: serde_json::Value = reqwest::blocking::get(format!("{}/v1/boards", srv.http))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(boards["boards"], serde_json::json!([]));
    let r = reqwest::blocking::Client::new()
        .put(format!("{}/v1/boards/weekyl", srv.http))
        .send()
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(post().status(), 200);
    let (st, out) = run_to_end(&["submit", "--rpc", &srv.rpc, "weekyl", "b", "2"]);
    assert!(st.success(), "{out}");
}

/// The commands of the other operations, over RPC and over HTTP: boards,
/// board create/update/info/delete, rank, around, entry, remove, reset and
/// merge — what they print, and what the server holds after them.
#[test]
fn every_operation_has_a_command_over_rpc_and_http() {
    let srv = Podium::start(&[]);
    for conn in [["--rpc", srv.rpc.as_str()], ["--http", srv.http.as_str()]] {
        let b = format!("ops-{}", &conn[0][2..]);
        let run = |args: &[&str]| {
            let mut v: Vec<&str> = vec![args[0]];
            let mut rest = args[1..].to_vec();
            // `board ACTION`: the connection after the action.
            if args[0] == "board" {
                v.push(args[1]);
                rest.remove(0);
            }
            v.extend_from_slice(&conn);
            v.extend_from_slice(&rest);
            let (st, out) = run_to_end(&v);
            assert!(st.success(), "{v:?}: {out}");
            out
        };
        let out = run(&[
            "board",
            "create",
            &b,
            "--config",
            r#"{"order":"desc","reset":"weekly"}"#,
        ]);
        assert!(
            out.contains(&format!("created board {b}")) && out.contains("next reset"),
            "{out}"
        );
        let (st, out) = run_to_end(&["board", "create", conn[0], conn[1], &b]);
        assert!(!st.success() && out.contains("exists"), "{out}");
        for (m, s) in [
            ("a", "10"),
            ("b", "20"),
            ("c", "30"),
            ("d", "40"),
            ("e", "50"),
        ] {
            run(&["submit", &b, m, s]);
        }
        let out = run(&["rank", &b, "c"]);
        assert_eq!(out.trim(), "c: rank 3, score 30");
        let j: serde_json::Value =
            serde_json::from_str(run(&["rank", &b, "c", "--json"]).trim()).unwrap();
        assert_eq!(
            (j["rank"].as_u64(), j["score"].as_f64()),
            (Some(3), Some(30.0))
        );
        let out = run(&["around", &b, "c", "--page-size", "3"]);
        let members: Vec<&str> = out
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert_eq!(members[..3], ["d", "c", "b"], "{out}");
        assert!(out.contains("c is rank 3 of 5"), "{out}");
        let out = run(&["entry", &b, "c"]);
        assert!(
            out.contains("rank        3 of 5") && out.contains("percentile  60"),
            "{out}"
        );
        let out = run(&["boards"]);
        assert!(
            out.lines().any(|l| l.starts_with(&b) && l.contains(" 5 ")),
            "{out}"
        );
        // `set` changes the fields it names and keeps the others; with
        // none it changes nothing and says so.
        let out = run(&["board", "set", &b, "keep_archives=8"]);
        assert!(
            out.contains("updated board")
                && out.contains(r#""keep_archives":8"#)
                && out.contains(r#""reset":"weekly""#),
            "{out}"
        );
        let (st, out) = run_to_end(&["board", "set", conn[0], conn[1], &b]);
        assert!(!st.success() && out.contains("nothing to change"), "{out}");
        let (st, out) = run_to_end(&["board", "update", conn[0], conn[1], &b]);
        assert!(!st.success() && out.contains("nothing to change"), "{out}");
        // A change that re-ranks the board needs --rerank.
        let (st, out) = run_to_end(&["board", "set", conn[0], conn[1], &b, "order=asc"]);
        assert!(
            !st.success() && out.contains("--rerank") && out.contains("confirm_rerank_required"),
            "{out}"
        );
        let out = run(&[
            "board",
            "update",
            &b,
            "--config",
            r#"{"order":"asc"}"#,
            "--rerank",
        ]);
        assert!(
            out.contains("updated board") && out.contains(r#""order":"asc""#),
            "{out}"
        );
        assert_eq!(run(&["rank", &b, "a"]).trim(), "a: rank 1, score 10");
        let out = run(&["remove", &b, "a", "nobody"]);
        assert_eq!(out.trim(), format!("removed 1 of 2 from {b}"));
        let out = run(&["reset", &b]);
        assert!(
            out.contains(&format!("reset {b}: 4 members archived as {b}@")),
            "{out}"
        );
        let archive = out.trim().rsplit(' ').next().unwrap().to_string();
        let dest = format!("{b}-all");
        let out = run(&["merge", &dest, &b, &archive, "--aggregate", "max"]);
        assert_eq!(
            out.trim(),
            format!("merged 2 boards into {dest}: 4 members")
        );
        let out = run(&["board", "info", &dest]);
        assert!(out.contains("members     4"), "{out}");
        run(&["board", "delete", &dest]);
        let (st, out) = run_to_end(&["board", "info", conn[0], conn[1], &dest]);
        assert!(!st.success() && out.contains("board_not_found"), "{out}");
    }
}

/// Members named `.` and `..`, which no URL path keeps (reqwest's `url`
/// drops them as dot segments, percent-encoded too): the member commands
/// reach them over HTTP, named in the query, as over RPC; and the Rust
/// client's calls, which carry the member in MessagePack, read, change and
/// remove them.
#[test]
fn members_named_dot_and_dot_dot_over_rpc_and_http() {
    let srv = Podium::start(&[]);
    for conn in [["--rpc", srv.rpc.as_str()], ["--http", srv.http.as_str()]] {
        let b = format!("dots-{}", &conn[0][2..]);
        let run = |args: &[&str]| {
            let mut v: Vec<&str> = vec![args[0]];
            v.extend_from_slice(&conn);
            v.extend_from_slice(&args[1..]);
            let (st, out) = run_to_end(&v);
            assert!(st.success(), "{v:?}: {out}");
            out
        };
        for (m, s) in [(".", "30"), ("..", "20"), ("x", "10")] {
            run(&["submit", &b, m, s, "--name", &format!("Dot {m}")]);
        }
        for (m, rank) in [(".", 1), ("..", 2)] {
            let j: serde_json::Value =
                serde_json::from_str(run(&["rank", &b, m, "--json"]).trim()).unwrap();
            assert_eq!(
                (j["member"].as_str(), j["rank"].as_u64()),
                (Some(m), Some(rank))
            );
            let j: serde_json::Value =
                serde_json::from_str(run(&["entry", &b, m, "--json"]).trim()).unwrap();
            assert_eq!(
                (j["member"].as_str(), j["name"].as_str()),
                (Some(m), Some(format!("Dot {m}").as_str()))
            );
            let j: serde_json::Value =
                serde_json::from_str(run(&["around", &b, m, "--page-size", "3", "--json"]).trim())
                    .unwrap();
            assert_eq!(
                (j["member"].as_str(), j["rank"].as_u64()),
                (Some(m), Some(rank))
            );
            assert_eq!(j["entries"].as_array().map(Vec::len), Some(3), "{j}");
        }
        let out = run(&["remove", &b, ".", ".."]);
        assert_eq!(out.trim(), format!("removed 2 of 2 from {b}"));
        let (st, out) = run_to_end(&["rank", conn[0], conn[1], &b, ".."]);
        assert!(!st.success() && out.contains("member_not_found"), "{out}");
    }

    let c = srv.blocking_client();
    c.submit_many(
        "rust-dots",
        &[
            Submission::new(".", 3.0),
            Submission::new("..", 2.0),
            Submission::new("x", 1.0),
        ],
    )
    .unwrap();
    for (m, rank) in [(".", 1u64), ("..", 2)] {
        let set: Value = c
            .call(
                "set_data",
                &vec![
                    Value::from("rust-dots"),
                    Value::from(m),
                    Value::Map(vec![(
                        "data".into(),
                        Value::Map(vec![("dots".into(), Value::from(m.len()))]),
                    )]),
                ],
            )
            .unwrap();
        assert_eq!(set["found"], Value::from(true), "{set}");
        let e = c.entry("rust-dots", m).unwrap();
        assert_eq!(e["member"], Value::from(m));
        assert_eq!(e["data"]["dots"], Value::from(m.len()));
        let r = c.rank("rust-dots", m).unwrap();
        assert_eq!((r.member.as_str(), r.rank), (m, rank));
        let a = c.around("rust-dots", m, 3).unwrap();
        assert_eq!(a["rank"], Value::from(rank));
    }
    let removed = c
        .call(
            "remove",
            &vec![
                Value::from("rust-dots"),
                Value::from(vec![Value::from("."), Value::from("..")]),
            ],
        )
        .unwrap();
    assert_eq!(removed["removed"], Value::from(2));
    let e = c.rank("rust-dots", ".").unwrap_err();
    assert_eq!(e.code(), Some("member_not_found"));
}

/// A wrong port, a missing key and a CSV file named otherwise: each error
/// says what to do.
#[test]
fn errors_say_what_to_do() {
    let srv = Podium::start(&["--api-key", "adminkey-0123456789:admin"]);
    let http_addr = srv.http.trim_start_matches("http://").to_string();
    let (st, out) = run_to_end(&["top", "--rpc", &http_addr, "b"]);
    assert!(
        !st.success() && out.contains("is that podium's HTTP port?"),
        "{out}"
    );
    assert!(out.contains(&format!("--http http://{http_addr}")), "{out}");
    let (st, out) = run_to_end(&["top", "--http", &srv.rpc, "b"]);
    assert!(
        !st.success() && out.contains("is that podium's MessagePack-RPC port?"),
        "{out}"
    );
    // The Redis port given as the RPC port (it waits for a line that
    // MessagePack never sends): named in a moment, not after the
    // request's whole time limit.
    let redis = support::resp::podium::Podium::start(&[]);
    let t = std::time::Instant::now();
    let (st, out) = run_to_end(&["top", "--rpc", &redis.addr(), "weekly"]);
    assert!(
        !st.success()
            && out.contains(&format!(
                "{} answered in the Redis protocol, not MessagePack-RPC; the RPC port is 7071",
                redis.addr()
            )),
        "{out}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t.elapsed()
    );
    for conn in [["--rpc", srv.rpc.as_str()], ["--http", srv.http.as_str()]] {
        let (st, out) = run_to_end(&["top", conn[0], conn[1], "b"]);
        assert!(
            !st.success() && out.contains("--api-key KEY or PODIUM_API_KEY"),
            "{out}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("players.txt");
    std::fs::write(&txt, "alice,10\nbob,5\n").unwrap();
    let key = ["--api-key", "adminkey-0123456789"];
    let (st, out) = run_to_end(&[
        "import",
        "--rpc",
        &srv.rpc,
        key[0],
        key[1],
        "b",
        txt.to_str().unwrap(),
    ]);
    assert!(!st.success() && out.contains("--format csv"), "{out}");
    let (st, out) = run_to_end(&[
        "import",
        "--rpc",
        &srv.rpc,
        key[0],
        key[1],
        "b",
        txt.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(st.success(), "{out}");
}
