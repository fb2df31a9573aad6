//! podium run as a service, with the real binary: `/readyz` before and
//! after a recovery that takes a while, and `podium backup` /
//! `podium restore` while writes go on, compared by export.

use crate::support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::http::{client, Server};
use support::{run_to_end, serve_command};

/// Members written to make recovery take a while.
const RECOVERY_MEMBERS: u64 = 400_000;

fn ndjson(from: u64, to: u64) -> String {
    let mut s = String::new();
    for i in from..to {
        s.push_str(&format!("{{\"member\":\"m{i}\",\"score\":{i}}}\n"));
    }
    s
}

/// A free port on 127.0.0.1 (bound and released: the server takes it).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn readyz_is_503_while_the_data_directory_recovers_and_200_once_it_has() {
    let mut srv = Server::start(&["--snapshot-every", "1tb"]);
    // In the log only (no snapshot), so that recovery replays every record.
    let v = srv
        .post_raw(
            "/v1/boards/big/import?format=ndjson",
            "application/x-ndjson",
            ndjson(0, RECOVERY_MEMBERS),
        )
        .expect(200);
    assert_eq!(v["imported"], RECOVERY_MEMBERS);
    assert!(srv.terminate().success());

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = serve_command(
        srv.data_dir(),
        &["--http", &addr, "--rpc", "off", "--resp", "off"],
        &["--snapshot-every".into(), "1tb".into()],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let listening = Arc::new(AtomicBool::new(false));
    let seen = listening.clone();
    thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            if line
                .unwrap_or_default()
                .starts_with("podium: http listening on")
            {
                seen.store(true, Ordering::SeqCst);
            }
        }
    });

    let http = client();
    let probe = |path: &str| -> Option<(u16, Value)> {
        let r = http.get(format!("http://{addr}{path}")).send().ok()?;
        Some((r.status().as_u16(), r.json().unwrap_or(Value::Null)))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut starting = 0;
    loop {
        assert!(Instant::now() < deadline, "not ready within a minute");
        // Read before the probe: a 503 after the listening line would be
        // a server that says it listens before it serves.
        let announced = listening.load(Ordering::SeqCst);
        match probe("/readyz") {
            None => assert!(!announced, "no answer after the listening line"),
            Some((200, v)) => {
                assert_eq!(v, json!({"status": "ready"}));
                break;
            }
            Some((503, v)) => {
                assert!(!announced, "503 after the listening line: {v}");
                assert_eq!(v["error"]["code"], "not_ready", "{v}");
                starting += 1;
                if starting == 1 {
                    // Meanwhile the process is alive, and nothing else is
                    // served.
                    let (status, h) = probe("/healthz").unwrap();
                    assert_eq!(
                        (status, h["status"].as_str()),
                        (200, Some("starting")),
                        "{h}"
                    );
                    let (status, top) = probe("/v1/boards/big/top").unwrap();
                    assert_eq!(status, 503, "{top}");
                }
            }
            Some(other) => panic!("unexpected answer {other:?}"),
        }
        thread::sleep(Duration::from_millis(5));
    }
    assert!(
        starting > 0,
        "never saw the server recovering: recovery of {RECOVERY_MEMBERS} records was too quick to probe"
    );
    let (status, h) = probe("/healthz").unwrap();
    assert_eq!((status, h["status"].as_str()), (200, Some("ok")));
    let (status, top) = probe("/v1/boards/big/top?page_size=1").unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        top["entries"][0]["member"],
        format!("m{}", RECOVERY_MEMBERS - 1)
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The board's export as text, and its line count.
fn export(srv: &Server, board: &str) -> String {
    let r = srv.get(&format!("/v1/boards/{board}/export"));
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
}

fn restore(backup: &Path, data: &Path) -> (bool, String) {
    let (status, out) = run_to_end(&[
        "restore",
        backup.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    (status.success(), out)
}

const ADMIN: &str = "adminkey0000000000";
const READ: &str = "readerkey0000000000";

#[test]
fn a_backup_taken_while_writes_go_on_restores_to_a_consistent_state() {
    let mut srv = Server::start(&[
        "--api-key",
        &format!("{ADMIN}:admin"),
        "--api-key",
        &format!("{READ}:read"),
        "--snapshot-every",
        "64kb",
    ]);
    srv.token = Some(ADMIN.into());
    srv.post_raw(
        "/v1/boards/b/import?format=ndjson",
        "application/x-ndjson",
        ndjson(0, 20_000),
    )
    .expect(200);

    // One writer, in order: member wN scores N, acknowledged one by one.
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop) = (acked.clone(), stop.clone());
        let url = srv.url("/v1/boards/w/scores");
        thread::spawn(move || {
            let http = client();
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let r = http
                    .post(&url)
                    .bearer_auth(ADMIN)
                    .json(&json!({"member": format!("w{n}"), "score": n}))
                    .send()
                    .unwrap();
                assert_eq!(r.status(), 200);
                n += 1;
                acked.store(n, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 50 {
        thread::sleep(Duration::from_millis(5));
    }

    let tmp = tempfile::tempdir().unwrap();
    let backup_dir = tmp.path().join("backup");
    let before = acked.load(Ordering::SeqCst);
    let backup = |dir: &Path, key: &str| {
        run_to_end(&[
            "backup",
            dir.to_str().unwrap(),
            "--http",
            &srv.url(""),
            "--api-key",
            key,
        ])
    };
    let (status, out) = backup(&backup_dir, ADMIN);
    let after = acked.load(Ordering::SeqCst);
    assert!(status.success(), "{out}");
    assert!(out.contains("backed up"), "{out}");
    assert!(backup_dir.join("MANIFEST.json").exists());

    // Restored and started: board b whole, board w a prefix of the writes
    // that covers every write acknowledged before the backup began.
    let data = tmp.path().join("restored");
    let (ok, out) = restore(&backup_dir, &data);
    assert!(ok, "{out}");
    let mut copy = Server::start_on(&data, &["--api-key", &format!("{ADMIN}:admin")]);
    copy.token = Some(ADMIN.into());
    let w = copy.get("/v1/boards/w").expect(200);
    let kept = w["members"].as_u64().unwrap();
    assert!(
        (before..=after).contains(&kept),
        "restored {kept} writes; {before} were acknowledged before the backup, {after} after"
    );
    let top = copy.get("/v1/boards/w/top?page_size=1").expect(200);
    assert_eq!(
        top["entries"][0]["member"],
        format!("w{}", kept - 1),
        "a prefix of the writes"
    );
    assert_eq!(export(&copy, "b"), export(&srv, "b"));
    drop(copy);

    // Writes stopped: a second backup restores to exactly the server's
    // state.
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let second = tmp.path().join("second");
    let (status, out) = backup(&second, ADMIN);
    assert!(status.success(), "{out}");
    let data2 = tmp.path().join("restored2");
    let (ok, out) = restore(&second, &data2);
    assert!(ok, "{out}");
    let mut copy = Server::start_on(&data2, &["--api-key", &format!("{ADMIN}:admin")]);
    copy.token = Some(ADMIN.into());
    for board in ["b", "w"] {
        assert_eq!(export(&copy, board), export(&srv, board), "board {board}");
    }
    drop(copy);

    // Refusals, each saying why.
    let (status, out) = backup(&tmp.path().join("by-reader"), READ);
    assert!(!status.success());
    assert!(out.contains("forbidden"), "{out}");
    assert!(
        !tmp.path().join("by-reader").exists(),
        "nothing left behind"
    );
    let (status, out) = backup(&second, ADMIN);
    assert!(!status.success());
    assert!(out.contains("is not empty"), "{out}");
    let (ok, out) = restore(&second, &data2);
    assert!(!ok);
    assert!(out.contains("is not empty"), "{out}");
    // A damaged file is named, and nothing is restored.
    let damaged = std::fs::read_dir(&second)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pdml" || e == "pdms"))
        .unwrap();
    let mut bytes = std::fs::read(&damaged).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&damaged, bytes).unwrap();
    let data3 = tmp.path().join("restored3");
    let (ok, out) = restore(&second, &data3);
    assert!(!ok);
    let name = damaged.file_name().unwrap().to_str().unwrap();
    assert!(out.contains(name) && out.contains("damaged"), "{out}");
    assert!(!data3.exists());
}
