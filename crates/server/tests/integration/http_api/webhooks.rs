//! Webhooks with a real receiver on loopback (a small HTTP/1.1 server of
//! this test's own): deliveries in order with a valid HMAC-SHA256
//! signature, a receiver that fails and is retried until it answers 2xx,
//! deliveries due when the server is killed -9 (from the log and from a
//! snapshot) made after the restart, secrets never shown and kept when a
//! config is written back, and the address policy refusing hooks that
//! point into the network.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use podium_core::events::hooks::sign;
use serde_json::{json, Value};

use super::support::http::Server;

const SECRET: &str = "a-secret-of-some-length";

/// One request the receiver got.
#[derive(Debug)]
struct Delivery {
    signature: String,
    hook: String,
    raw: Vec<u8>,
    body: Value,
}

/// A webhook receiver on 127.0.0.1: answers every request with the status
/// in `status` (settable while it runs), and hands each request it
/// answered 2xx over `rx`.
struct Receiver {
    url: String,
    status: Arc<AtomicU16>,
    /// Requests answered with a failure.
    failed: Arc<AtomicUsize>,
    rx: mpsc::Receiver<Delivery>,
}

impl Receiver {
    fn start(status: u16) -> Receiver {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", l.local_addr().unwrap());
        let status = Arc::new(AtomicU16::new(status));
        let failed = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let (st, fl) = (status.clone(), failed.clone());
        thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(conn) = conn else { return };
                let (tx, st, fl) = (tx.clone(), st.clone(), fl.clone());
                thread::spawn(move || serve(conn, &st, &fl, &tx));
            }
        });
        Receiver {
            url,
            status,
            failed,
            rx,
        }
    }

    fn next(&self) -> Delivery {
        self.rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a delivery within 20 s")
    }

    /// Deliveries until `n` events have arrived.
    fn events(&self, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            let d = self.next();
            assert_eq!(d.signature, sign(SECRET.as_bytes(), &d.raw), "signature");
            assert_eq!(d.body["hook"], d.hook);
            out.extend(d.body["events"].as_array().unwrap().iter().cloned());
        }
        out
    }
}

/// HTTP/1.1 with keep-alive: requests with a Content-Length body.
fn serve(conn: TcpStream, status: &AtomicU16, failed: &AtomicUsize, tx: &mpsc::Sender<Delivery>) {
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let (mut len, mut signature, mut hook) = (0, String::new(), String::new());
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap(),
                "podium-signature" => signature = v.trim().to_string(),
                "podium-hook" => hook = v.trim().to_string(),
                _ => {}
            }
        }
        let mut raw = vec![0; len];
        r.read_exact(&mut raw).unwrap();
        let code = status.load(Ordering::SeqCst);
        let reply = format!("HTTP/1.1 {code} X\r\ncontent-length: 0\r\n\r\n");
        if w.write_all(reply.as_bytes()).is_err() {
            return;
        }
        if (200..300).contains(&code) {
            let body = serde_json::from_slice(&raw).unwrap();
            let _ = tx.send(Delivery {
                signature,
                hook,
                raw,
                body,
            });
        } else {
            failed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn hooked(s: &Server, board: &str, hook: Value) {
    s.put(
        &format!("/v1/boards/{board}"),
        &json!({ "webhooks": [hook] }),
    )
    .expect(201);
}

fn submit(s: &Server, board: &str, m: &str, score: f64) {
    s.post(
        &format!("/v1/boards/{board}/scores"),
        &json!({"member": m, "score": score}),
    )
    .expect(200);
}

#[test]
fn deliveries_are_signed_in_order_and_the_secret_stays_hidden() {
    let s = Server::start(&[]);
    let rcv = Receiver::start(200);
    hooked(
        &s,
        "b",
        json!({"name": "all", "url": rcv.url, "secret": SECRET}),
    );
    for (i, m) in ["a", "b", "c"].iter().enumerate() {
        submit(&s, "b", m, i as f64);
    }
    let evs = rcv.events(3);
    let got: Vec<(&str, &str)> = evs
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["member"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [("change", "a"), ("change", "b"), ("change", "c")]);
    assert_eq!(evs[2]["rank"], 1);

    // Read back without the secret; written back as read, the secret is
    // kept (the next delivery is still signed with it).
    let info = s.get("/v1/boards/b").expect(200);
    let hooks = &info["config"]["webhooks"];
    assert_eq!(hooks[0]["url"], rcv.url.as_str());
    assert!(hooks[0].get("secret").is_none(), "{info}");
    assert!(!info.to_string().contains(SECRET));
    let mut config = info["config"].clone();
    config["webhooks"][0]["top"] = json!(2);
    s.put("/v1/boards/b", &config).expect(200);
    submit(&s, "b", "d", 10.0);
    // The config change reaches the hook as it was (every change), without
    // the secret; then the hook watches the top 2.
    let evs = rcv.events(4);
    assert_eq!(evs[0]["type"], "config", "{evs:?}");
    assert!(!evs[0].to_string().contains(SECRET));
    let got: Vec<(&str, &str)> = evs[1..]
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["member"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [("leave", "b"), ("enter", "d"), ("move", "c")]);
    // A hook with no secret of its own and none to keep is a bad config.
    let e = s.put(
        "/v1/boards/c",
        &json!({"webhooks": [{"name": "x", "url": rcv.url}]}),
    );
    e.expect_error(400, "invalid_config");
}

#[test]
fn a_failing_receiver_is_retried_until_it_answers() {
    let s = Server::start(&[]);
    let rcv = Receiver::start(503);
    hooked(
        &s,
        "b",
        json!({"name": "h", "url": rcv.url, "secret": SECRET, "members": ["me"]}),
    );
    submit(&s, "b", "me", 1.0);
    submit(&s, "b", "other", 5.0);
    let t = Instant::now();
    while rcv.failed.load(Ordering::SeqCst) < 2 {
        assert!(t.elapsed() < Duration::from_secs(20), "no retry");
        thread::sleep(Duration::from_millis(50));
    }
    rcv.status.store(204, Ordering::SeqCst);
    let evs = rcv.events(2);
    assert_eq!(evs[0]["type"], "member");
    assert_eq!(evs[0]["rank"], 1);
    assert_eq!(evs[1]["type"], "member");
    assert_eq!(evs[1]["rank"], 2);
    assert_eq!(evs[1]["by"], "other");
    // Acknowledged: nothing is delivered twice.
    assert!(rcv.rx.recv_timeout(Duration::from_millis(1500)).is_err());
}

#[test]
fn deliveries_due_at_a_kill_9_are_made_after_the_restart() {
    // Snapshots every few hundred bytes of log: some due events reach the
    // restart through a snapshot, the rest through the log.
    let mut s = Server::start(&["--snapshot-every", "512"]);
    let rcv = Receiver::start(500);
    hooked(
        &s,
        "b",
        json!({"name": "h", "url": rcv.url, "secret": SECRET}),
    );
    for i in 0..20 {
        submit(&s, "b", &format!("m{i}"), i as f64);
    }
    // A snapshot falls due and is taken within a second or two.
    thread::sleep(Duration::from_millis(2500));
    for i in 20..30 {
        submit(&s, "b", &format!("m{i}"), i as f64);
    }
    s.delete("/v1/boards/b").expect(200);
    s.kill9();
    let snapshots = std::fs::read_dir(s.data_dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("snapshot-")
        })
        .count();
    assert!(snapshots > 0, "a snapshot was taken");
    rcv.status.store(200, Ordering::SeqCst);
    s.restart();
    let evs = rcv.events(31);
    let members: Vec<String> = evs[..30]
        .iter()
        .map(|e| e["member"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = (0..30).map(|i| format!("m{i}")).collect();
    assert_eq!(members, want);
    assert_eq!(evs[30]["type"], "deleted");
    let ids: Vec<&str> = evs.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|i| {
        let (a, b) = i.split_once('-').unwrap();
        (a.parse::<u64>().unwrap(), b.parse::<u32>().unwrap())
    });
    sorted.dedup();
    assert_eq!(ids, sorted, "in order, once");
    assert!(rcv.rx.recv_timeout(Duration::from_millis(1500)).is_err());
}

#[test]
fn hooks_into_the_network_are_refused_unless_the_operator_allows() {
    let s = Server::start(&[]);
    for url in [
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest",
        "https://example.com/hook",
        "http://[fd00::1]/x",
    ] {
        let r = s.put(
            "/v1/boards/b",
            &json!({"webhooks": [{"name": "h", "url": url, "secret": SECRET}]}),
        );
        assert!(r.body.to_string().contains("--webhook-targets"), "{url}");
        // Well formed, but not allowed by the operator's policy.
        r.expect_error(403, "forbidden");
    }
    let s = Server::start(&["--webhook-targets", "public"]);
    s.put(
        "/v1/boards/b",
        &json!({"webhooks": [{"name": "h", "url": "https://example.com/hook", "secret": SECRET}]}),
    )
    .expect(201);
    for url in [
        "http://10.0.0.1/x",
        "http://192.168.1.1/",
        "http://[::ffff:10.1.1.1]/",
        // IPv4 in IPv6 (NAT64, 6to4, Teredo) and reserved IPv6 ranges.
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[64:ff9b:1::a00:1]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://[2001::a9fe:a9fe]/",
        "http://[fec0::1]/",
        "http://[100::1]/",
    ] {
        s.put(
            "/v1/boards/c",
            &json!({"webhooks": [{"name": "h", "url": url, "secret": SECRET}]}),
        )
        .expect_error(403, "forbidden");
    }
}

/// A delivery connects to the address it checked, never through a proxy
/// named by the environment (which would reach any address for it).
#[test]
fn deliveries_ignore_proxies_from_the_environment() {
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    proxy.set_nonblocking(true).unwrap();
    let url = format!("http://{}", proxy.local_addr().unwrap());
    let s = Server::start_with_env(
        &["--webhook-targets", "public"],
        &[
            ("HTTP_PROXY", &url),
            ("http_proxy", &url),
            ("ALL_PROXY", &url),
            ("all_proxy", &url),
            ("NO_PROXY", ""),
            ("no_proxy", ""),
        ],
    );
    // A name that resolves nowhere: only a proxy could take the delivery.
    hooked(
        &s,
        "b",
        json!({"name": "h", "url": "http://hook.invalid/x", "secret": SECRET}),
    );
    submit(&s, "b", "m", 1.0);
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert!(
            proxy.accept().is_err(),
            "a delivery went to the proxy of the environment"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// A server started on a restored copy sends none of the deliveries it
/// found due (the original may well have sent them, to the same
/// endpoints) until it is started with `--webhooks on`; it says so at
/// start.
#[test]
fn a_restored_copy_holds_its_deliveries_until_told() {
    let mut s = Server::start(&[]);
    let rcv = Receiver::start(503);
    hooked(
        &s,
        "b",
        json!({"name": "h", "url": rcv.url, "secret": SECRET}),
    );
    submit(&s, "b", "a", 1.0);
    let t = Instant::now();
    while rcv.failed.load(Ordering::SeqCst) < 1 {
        assert!(t.elapsed() < Duration::from_secs(20), "no delivery tried");
        thread::sleep(Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().unwrap();
    let (backup, copy) = (dir.path().join("backup"), dir.path().join("copy"));
    let (st, out) = super::run_to_end(&["backup", backup.to_str().unwrap(), "--http", &s.url("")]);
    assert!(st.success(), "{out}");
    s.terminate();
    let (st, out) = super::run_to_end(&[
        "restore",
        backup.to_str().unwrap(),
        "--data-dir",
        copy.to_str().unwrap(),
    ]);
    assert!(st.success(), "{out}");
    rcv.status.store(204, Ordering::SeqCst);
    let mut c = Server::start_on(&copy, &[]);
    thread::sleep(Duration::from_secs(3));
    assert!(
        rcv.rx.try_recv().is_err(),
        "a restored copy delivered what it found due"
    );
    let err = c.stderr();
    assert!(
        err.contains("webhook deliveries held") && err.contains("--webhooks on"),
        "{err}"
    );
    c.terminate();
    // Still held at the next start without --webhooks; delivered with on.
    let mut c = Server::start_on(&copy, &["--webhooks", "on"]);
    let evs = rcv.events(1);
    assert_eq!(evs[0]["member"], "a", "{evs:?}");
    c.terminate();
    assert!(!copy.join("WEBHOOKS-HELD").exists());
}
