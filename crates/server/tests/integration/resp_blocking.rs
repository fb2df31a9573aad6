//! Blocking pops across protocols, against the real binary: a Redis
//! client blocked in BZPOPMAX is woken by an HTTP submit and by a
//! MessagePack-RPC submit; 10,000 blocked clients cost little memory each
//! and one write wakes exactly one of them.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rmpv::Value;
use support::resp::wire::{cmd, Conn};
use support::{launch, serve_command, START_TIMEOUT};

/// `podium serve` with all three listeners on free ports.
struct Server {
    child: std::process::Child,
    http: String,
    rpc: String,
    resp: String,
    _tmp: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("podium-blocking-")
            .tempdir()
            .unwrap();
        let cmd = serve_command(
            &tmp.path().join("data"),
            &[
                "--http",
                "127.0.0.1:0",
                "--rpc",
                "127.0.0.1:0",
                "--resp",
                "127.0.0.1:0",
            ],
            &extra.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        );
        let l = launch::launch(
            cmd,
            &tmp.path().join("stderr.log"),
            "podium: resp listening on ",
            START_TIMEOUT,
        );
        let line = |prefix: &str| {
            let t = Instant::now();
            loop {
                let out = l.stdout.lock().unwrap().clone();
                if let Some(a) = out.lines().find_map(|x| x.strip_prefix(prefix)) {
                    return a.trim().to_string();
                }
                assert!(t.elapsed() < START_TIMEOUT, "no {prefix:?} in {out}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        let http = format!("http://{}", line("podium: http listening on "));
        let rpc = line("podium: rpc listening on ");
        Server {
            child: l.child,
            http,
            rpc,
            resp: l.addr,
            _tmp: tmp,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn blocked_clients(c: &mut Conn) -> i64 {
    let info = c.call_str("INFO clients").text().unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

fn wait_blocked(c: &mut Conn, n: i64) {
    let t = Instant::now();
    while blocked_clients(c) != n {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "{} blocked clients, waiting for {n}",
            blocked_clients(c)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One MessagePack-RPC request on a fresh connection; its result.
fn rpc_call(addr: &str, method: &str, params: Vec<Value>) -> Value {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = Value::Array(vec![
        0.into(),
        1.into(),
        method.into(),
        Value::Array(params),
    ]);
    let mut buf = Vec::new();
    rmpv::encode::write_value(&mut buf, &req).unwrap();
    s.write_all(&buf).unwrap();
    let v = rmpv::decode::read_value(&mut s).unwrap();
    let Value::Array(a) = v else {
        panic!("not a response: {v}")
    };
    assert_eq!(a[2], Value::Nil, "RPC error: {a:?}");
    a[3].clone()
}

fn entry(member: &str, score: f64) -> Value {
    Value::Map(vec![
        ("member".into(), member.into()),
        ("score".into(), score.into()),
    ])
}

#[test]
fn http_and_rpc_submits_wake_a_client_blocked_in_bzpopmax() {
    let s = Server::start(&[]);
    let mut admin = Conn::open(&s.resp);

    // HTTP.
    let mut blocked = Conn::open(&s.resp);
    blocked.send(&cmd("BZPOPMAX lb other 0")).unwrap();
    wait_blocked(&mut admin, 1);
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/v1/boards/lb/scores", s.http))
        .json(&serde_json::json!([{"member": "ann", "score": 10}, {"member": "bob", "score": 20}]))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text());
    assert_eq!(
        blocked.read_reply().unwrap(),
        b"*3\r\n$2\r\nlb\r\n$3\r\nbob\r\n$2\r\n20\r\n"
    );
    wait_blocked(&mut admin, 0);

    // MessagePack-RPC, in RESP3, with BZMPOP.
    assert!(blocked.call(&cmd("HELLO 3")).starts_with(b"%7"));
    blocked
        .send(&cmd("BZMPOP 0 2 other rpc MAX COUNT 5"))
        .unwrap();
    wait_blocked(&mut admin, 1);
    rpc_call(&s.rpc, "submit", vec!["rpc".into(), entry("cat", 1.5)]);
    assert_eq!(
        blocked.read_reply().unwrap(),
        b"*2\r\n$3\r\nrpc\r\n*1\r\n*2\r\n$3\r\ncat\r\n,1.5\r\n"
    );
    // The connection goes on.
    assert_eq!(blocked.call(&cmd("ZCARD lb")), b":1\r\n");
}

/// Resident memory of a process, from /proc (bytes).
fn rss(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn ten_thousand_blocked_clients_one_write_wakes_one() {
    const N: usize = 10_000;
    // The server's own way of raising its open-file limit, for this process.
    let nofile = podium_server::limits::clients::raise_nofile(N as u64 + 257);
    assert!(
        nofile > N as u64 + 256,
        "this test holds {N} connections and may open only {nofile} files (ulimit -Hn)"
    );
    // The server's descriptors are shared by its three protocols: the
    // idle HTTP and RPC listeners leave the Redis protocol all it asks.
    let s = Server::start(&["--maxclients", "20000"]);
    let mut admin = Conn::open(&s.resp);
    let before = rss(s.pid());
    let mut clients = Vec::with_capacity(N);
    for i in 0..N {
        let mut c = TcpStream::connect(&s.resp).unwrap();
        c.write_all(b"*3\r\n$8\r\nBZPOPMIN\r\n$4\r\nwide\r\n$1\r\n0\r\n")
            .unwrap();
        clients.push(c);
        if i == 0 {
            // The first to block is the one served.
            wait_blocked(&mut admin, 1);
        }
    }
    wait_blocked(&mut admin, N as i64);
    let after = rss(s.pid());
    let per_client = after.saturating_sub(before) / N as u64;
    eprintln!(
        "{N} blocked clients: resident memory {before} -> {after} bytes, \
         {per_client} bytes per blocked client (connection included)"
    );

    // One member: exactly one client is served, the first one blocked.
    assert_eq!(admin.call(&cmd("ZADD wide 1 m")), b":1\r\n");
    let mut first = clients[0].try_clone().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let want = b"*3\r\n$4\r\nwide\r\n$1\r\nm\r\n$1\r\n1\r\n";
    let mut got = vec![0u8; want.len()];
    first.read_exact(&mut got).unwrap();
    assert_eq!(got, want);
    wait_blocked(&mut admin, N as i64 - 1);
    // No other client got anything.
    std::thread::sleep(Duration::from_millis(200));
    for c in &clients[1..] {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        let n = (&*c).read(&mut b);
        assert!(
            matches!(&n, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a second client was answered: {n:?}"
        );
    }
    assert_eq!(blocked_clients(&mut admin), N as i64 - 1);
    // Closing them unblocks them.
    drop(clients);
    wait_blocked(&mut admin, 0);
    assert_eq!(admin.call(&cmd("ZADD wide 2 n")), b":1\r\n");
    assert_eq!(admin.call(&cmd("ZCARD wide")), b":1\r\n");
}
