//! The client commands of SPEC §6 (`podium submit`, `top`, `import`,
//! `export`) against the real server: what they print, that they change
//! what the server holds, and that errors exit non-zero with the server's
//! message.

mod common;

use common::{board_path, run_to_end, Server};

#[test]
fn submit_top_import_export_round_trip() {
    let srv = Server::start(&[]);
    let server = srv.url("");
    let s = server.as_str();

    let (st, out) = run_to_end(&[
        "submit", "--server", s, "week 1", "alice", "1200", "--name", "Alice",
    ]);
    assert!(st.success(), "{out}");
    assert!(out.contains("alice: score 1200, rank 1"), "{out}");
    let (st, out) = run_to_end(&["submit", "--server", s, "week 1", "bob", "-inf"]);
    assert!(st.success(), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("players.csv");
    let mut body = String::from("member,score,name\n");
    for i in 0..2500 {
        body.push_str(&format!("p{i},{i},\"Player, {i}\"\n"));
    }
    body.push_str("broken,not-a-number\n");
    std::fs::write(&csv, body).unwrap();
    let (st, out) = run_to_end(&[
        "import",
        "--server",
        s,
        "--quiet",
        "week 1",
        csv.to_str().unwrap(),
    ]);
    assert!(
        !st.success(),
        "a failed line makes import exit non-zero: {out}"
    );
    assert!(out.contains("imported 2500, failed 1"), "{out}");

    let v = srv.get(&board_path("week 1", "")).expect(200);
    assert_eq!(v["members"], 2502);

    let (st, out) = run_to_end(&["top", "--server", s, "week 1", "--page-size", "3"]);
    assert!(st.success(), "{out}");
    for want in [
        "p2499",
        "p2498",
        "p2497",
        "Player, 2499",
        "page 1 of 834 (2502 members, ranking unique)",
    ] {
        assert!(out.contains(want), "{want:?} missing from:\n{out}");
    }

    let dump = dir.path().join("dump.ndjson");
    let (st, out) = run_to_end(&[
        "export",
        "--server",
        s,
        "--quiet",
        "week 1",
        "-o",
        dump.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2502);
    assert_eq!(lines[0]["member"], "p2499");
    assert_eq!(lines[0]["name"], "Player, 2499");
    assert_eq!(lines[2501]["member"], "bob");
    assert_eq!(lines[2501]["score"], "-inf");

    // The export imports back into an identical board.
    let (st, out) = run_to_end(&[
        "import",
        "--server",
        s,
        "--quiet",
        "copy",
        dump.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");
    let a = srv
        .get(&board_path("week 1", "/top?page=7&page_size=100"))
        .expect(200);
    let b = srv
        .get(&board_path("copy", "/top?page=7&page_size=100"))
        .expect(200);
    assert_eq!(a["entries"], b["entries"]);
}

#[test]
fn errors_exit_non_zero_with_the_server_message() {
    let srv = Server::start(&[]);
    let server = srv.url("");
    let (st, out) = run_to_end(&["top", "--server", &server, "nope"]);
    assert!(!st.success());
    assert!(out.contains("board_not_found"), "{out}");
    let (st, out) = run_to_end(&["submit", "--server", &server, "b", "m", "nan"]);
    assert!(!st.success());
    assert!(out.to_lowercase().contains("not a number"), "{out}");
    let (st, out) = run_to_end(&["top", "--server", "http://127.0.0.1:1", "b"]);
    assert!(!st.success());
    assert!(out.contains("cannot reach podium"), "{out}");
}
