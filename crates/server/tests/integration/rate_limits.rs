//! The rate limits per API key and per client address, against the real
//! binary on all three protocols: the refusal each protocol gives (HTTP
//! 429 `rate_limited` with `Retry-After`, RPC's `rate_limited` error,
//! `-RATELIMITED`), the connection staying usable after it, a bystander
//! (another key, another loopback address) unaffected, and every
//! acknowledged write present afterwards. The limits are per hour, so no
//! token comes back while a test runs and nothing depends on timing.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use rmpv::Value;
use serde_json::{json, Value as Json};

use support::launch::launch;
use support::{serve_command, START_TIMEOUT};

const KEYS: [&str; 5] = [
    "http-key-0123456789abcdef",
    "rpc-key-0123456789abcdef",
    "resp-key-0123456789abcdef",
    "bystander-0123456789abcdef",
    "checker-0123456789abcdef",
];

/// `podium serve` with all three protocols on free ports.
struct Server {
    child: Child,
    _tmp: tempfile::TempDir,
    http: SocketAddr,
    rpc: SocketAddr,
    resp: SocketAddr,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
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
            &extra,
        );
        let stderr: PathBuf = tmp.path().join("stderr.log");
        let l = launch(cmd, &stderr, "podium: resp listening on ", START_TIMEOUT);
        let out = l.stdout.lock().unwrap().clone();
        let line = |p: &str| -> SocketAddr {
            out.lines()
                .find_map(|l| l.strip_prefix(p))
                .unwrap_or_else(|| panic!("no {p:?} in {out}"))
                .trim()
                .parse()
                .unwrap()
        };
        Server {
            http: line("podium: http listening on "),
            rpc: line("podium: rpc listening on "),
            resp: l.addr.parse().unwrap(),
            child: l.child,
            _tmp: tmp,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A TCP connection to `to` from the loopback address `from` (Linux
/// answers on all of 127.0.0.0/8).
fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::new(from, 0)).unwrap();
        sock.connect(to).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

// --- HTTP -----------------------------------------------------------------

fn http_client(from: IpAddr) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .local_address(from)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

struct HttpAnswer {
    status: u16,
    retry_after: Option<u64>,
    body: Json,
}

fn http_submit(
    c: &reqwest::blocking::Client,
    s: &Server,
    key: Option<&str>,
    board: &str,
    member: &str,
) -> HttpAnswer {
    let mut req = c
        .post(format!("http://{}/v1/boards/{board}/scores", s.http))
        .json(&json!({"member": member, "score": 1}));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let r = req.send().unwrap();
    HttpAnswer {
        status: r.status().as_u16(),
        retry_after: r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().parse().unwrap()),
        body: r.json().unwrap_or(Json::Null),
    }
}

fn http_count(c: &reqwest::blocking::Client, s: &Server, key: Option<&str>, board: &str) -> u64 {
    let mut req = c.get(format!("http://{}/v1/boards/{board}/count", s.http));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let v: Json = req.send().unwrap().json().unwrap();
    v["count"].as_u64().unwrap_or_else(|| panic!("{v}"))
}

/// `podium_rate_limited_total{limit}` is `n` in `/metrics`.
fn assert_refusals(c: &reqwest::blocking::Client, s: &Server, limit: &str, n: u64) {
    let metrics = c
        .get(format!("http://{}/metrics", s.http))
        .send()
        .unwrap()
        .text()
        .unwrap();
    let line = format!("podium_rate_limited_total{{limit=\"{limit}\"}} {n}");
    assert!(metrics.contains(&line), "no {line:?} in {metrics}");
}

fn assert_http_refused(a: &HttpAnswer, what: &str) {
    assert_eq!(a.status, 429, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "rate_limited", "{}", a.body);
    let msg = a.body["error"]["message"].as_str().unwrap();
    assert!(msg.contains(what), "{msg}");
    let after = a.retry_after.expect("Retry-After");
    assert!(after >= 1, "{after}");
}

// --- MessagePack-RPC ------------------------------------------------------

struct Rpc {
    s: TcpStream,
    id: u32,
}

impl Rpc {
    fn connect(from: IpAddr, s: &Server) -> Rpc {
        Rpc {
            s: connect_from(from, s.rpc),
            id: 0,
        }
    }

    /// `Ok(result)` or `Err((code, message))`.
    fn call(&mut self, method: &str, params: Vec<Value>) -> Result<Value, (String, String)> {
        self.id += 1;
        let req = Value::Array(vec![
            0.into(),
            self.id.into(),
            method.into(),
            Value::Array(params),
        ]);
        let mut buf = Vec::new();
        rmpv::encode::write_value(&mut buf, &req).unwrap();
        self.s.write_all(&buf).unwrap();
        let v = rmpv::decode::read_value(&mut self.s).expect("a response");
        let a = v.as_array().unwrap();
        assert_eq!(a[1].as_u64(), Some(u64::from(self.id)));
        if a[2].is_nil() {
            return Ok(a[3].clone());
        }
        let e = a[2].as_array().unwrap();
        Err((
            e[0].as_str().unwrap().to_owned(),
            e[1].as_str().unwrap().to_owned(),
        ))
    }

    fn submit(&mut self, board: &str, member: &str) -> Result<Value, (String, String)> {
        let entry = Value::Map(vec![
            ("member".into(), member.into()),
            ("score".into(), 1.into()),
        ]);
        self.call("submit", vec![board.into(), entry])
    }
}

fn assert_rpc_refused(r: Result<Value, (String, String)>, what: &str) {
    let (code, msg) = r.expect_err("refused");
    assert_eq!(code, "rate_limited", "{msg}");
    assert!(msg.contains(what), "{msg}");
    assert!(msg.contains("retry in "), "{msg}");
}

// --- Redis protocol -------------------------------------------------------

struct Resp {
    rd: BufReader<TcpStream>,
    wr: TcpStream,
}

impl Resp {
    fn connect(from: IpAddr, s: &Server) -> Resp {
        let wr = connect_from(from, s.resp);
        Resp {
            rd: BufReader::new(wr.try_clone().unwrap()),
            wr,
        }
    }

    /// Sends a command; the reply's first line (simple replies only).
    fn cmd(&mut self, args: &[&str]) -> String {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.wr.write_all(out.as_bytes()).unwrap();
        let mut line = String::new();
        self.rd.read_line(&mut line).unwrap();
        if let Some(n) = line.strip_prefix('$') {
            let n: i64 = n.trim().parse().unwrap();
            if n >= 0 {
                let mut b = vec![0; n as usize + 2];
                self.rd.read_exact(&mut b).unwrap();
                return String::from_utf8_lossy(&b[..n as usize]).into_owned();
            }
        }
        line.trim_end().to_owned()
    }
}

fn assert_resp_refused(reply: &str, what: &str) {
    assert!(reply.starts_with("-RATELIMITED rate limit of "), "{reply}");
    assert!(reply.contains(what), "{reply}");
    assert!(reply.contains("retry in "), "{reply}");
}

// --- the tests ------------------------------------------------------------

/// Per client address: each protocol from its own loopback address
/// reaches the limit; another address keeps working.
#[test]
fn per_address_on_every_protocol() {
    const N: usize = 5;
    let s = Server::start(&["--rate-limit-per-address", "5/h"]);
    let bystander = ip("127.0.0.2");

    // HTTP from 127.0.0.3.
    let c = http_client(ip("127.0.0.3"));
    for i in 0..N {
        let a = http_submit(&c, &s, None, "h", &format!("m{i}"));
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let a = http_submit(&c, &s, None, "h", "over");
    assert_http_refused(&a, "this client address (5/h)");
    // The probes are not limited.
    let health = c.get(format!("http://{}/healthz", s.http)).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);

    // MessagePack-RPC from 127.0.0.4.
    let mut rpc = Rpc::connect(ip("127.0.0.4"), &s);
    for i in 0..N {
        rpc.submit("r", &format!("m{i}")).unwrap();
    }
    assert_rpc_refused(rpc.submit("r", "over"), "this client address (5/h)");
    // The connection still answers, and a new one from the same address
    // shares the bucket.
    assert_rpc_refused(rpc.submit("r", "over"), "this client address");
    let mut again = Rpc::connect(ip("127.0.0.4"), &s);
    assert_rpc_refused(again.submit("r", "over"), "this client address");

    // The Redis protocol from 127.0.0.5.
    let mut resp = Resp::connect(ip("127.0.0.5"), &s);
    for i in 0..N {
        assert_eq!(resp.cmd(&["ZADD", "z", "1", &format!("m{i}")]), ":1");
    }
    assert_resp_refused(
        &resp.cmd(&["ZADD", "z", "1", "over"]),
        "this client address (5/h)",
    );
    assert_resp_refused(&resp.cmd(&["PING"]), "this client address");

    // The bystander: one write on each protocol.
    let bc = http_client(bystander);
    assert_eq!(http_submit(&bc, &s, None, "h", "b").status, 200);
    Rpc::connect(bystander, &s).submit("r", "b").unwrap();
    assert_eq!(
        Resp::connect(bystander, &s).cmd(&["ZADD", "z", "1", "b"]),
        ":1"
    );
    // Every acknowledged write is there; no refused one is (read from yet
    // another address).
    let check = http_client(ip("127.0.0.9"));
    for board in ["h", "r", "z"] {
        assert_eq!(http_count(&check, &s, None, board), N as u64 + 1, "{board}");
    }
    // Refusals so far: 1 HTTP, 3 RPC, 2 Redis protocol.
    assert_refusals(&check, &s, "address", 6);
}

/// Per API key, across protocols: each protocol's key reaches the limit,
/// the bystander key keeps working, and a key's budget is the same
/// whichever protocol spends it.
#[test]
fn per_key_on_every_protocol() {
    const N: usize = 4;
    let mut args = vec!["--rate-limit-per-key".to_owned(), "4/h".to_owned()];
    for k in KEYS {
        args.push("--api-key".into());
        args.push(format!("{k}:write"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = Server::start(&args);
    let [http_key, rpc_key, resp_key, bystander, checker] = KEYS;
    let lo = ip("127.0.0.1");

    // HTTP.
    let c = http_client(lo);
    for i in 0..N {
        let a = http_submit(&c, &s, Some(http_key), "h", &format!("m{i}"));
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let a = http_submit(&c, &s, Some(http_key), "h", "over");
    assert_http_refused(&a, "this API key (4/h)");
    // An unknown key is still told so, not rate limited.
    assert_eq!(
        http_submit(&c, &s, Some("x".repeat(20).as_str()), "h", "x").status,
        401
    );

    // MessagePack-RPC: `auth` is before the key is known.
    let mut rpc = Rpc::connect(lo, &s);
    rpc.call("auth", vec![rpc_key.into()]).unwrap();
    for i in 0..N {
        rpc.submit("r", &format!("m{i}")).unwrap();
    }
    assert_rpc_refused(rpc.submit("r", "over"), "this API key (4/h)");
    assert_rpc_refused(rpc.submit("r", "over"), "this API key");
    // The HTTP key's budget is spent on RPC too.
    let mut other = Rpc::connect(lo, &s);
    other.call("auth", vec![http_key.into()]).unwrap();
    assert_rpc_refused(other.submit("r", "over"), "this API key");

    // The Redis protocol.
    let mut resp = Resp::connect(lo, &s);
    assert_eq!(resp.cmd(&["AUTH", resp_key]), "+OK");
    for i in 0..N {
        assert_eq!(resp.cmd(&["ZADD", "z", "1", &format!("m{i}")]), ":1");
    }
    assert_resp_refused(&resp.cmd(&["ZADD", "z", "1", "over"]), "this API key (4/h)");
    assert_resp_refused(&resp.cmd(&["ZCARD", "z"]), "this API key");

    // The bystander key, on each protocol, then a count.
    assert_eq!(http_submit(&c, &s, Some(bystander), "h", "b").status, 200);
    let mut b = Rpc::connect(lo, &s);
    b.call("auth", vec![bystander.into()]).unwrap();
    b.submit("r", "b").unwrap();
    let mut br = Resp::connect(lo, &s);
    assert_eq!(br.cmd(&["AUTH", bystander]), "+OK");
    assert_eq!(br.cmd(&["ZADD", "z", "1", "b"]), ":1");
    // Every acknowledged write is there; no refused one is.
    for board in ["h", "r", "z"] {
        assert_eq!(
            http_count(&c, &s, Some(checker), board),
            N as u64 + 1,
            "{board}"
        );
    }
}

/// A board's `max_submits_per_member`, over HTTP and MessagePack-RPC
/// (`submit`, and `submit_many` in its fast form): the member's
/// submissions past the limit are refused, alone in a batch; other
/// members go on; every acknowledged write is there and no refused one.
#[test]
fn per_member_on_http_and_rpc() {
    let s = Server::start(&[]);
    let c = http_client(ip("127.0.0.1"));
    let base = format!("http://{}/v1/boards/m", s.http);
    let r = c
        .put(&base)
        .json(&json!({"max_submits_per_member": {"count": 3, "per": "1h"}}))
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap());
    let info: Json = c.get(&base).send().unwrap().json().unwrap();
    assert_eq!(
        info["config"]["max_submits_per_member"],
        json!({"count": 3, "per": "1h"})
    );
    let submit = |member: &str, score: f64| {
        c.post(format!("{base}/scores"))
            .json(&json!({"member": member, "score": score}))
            .send()
            .unwrap()
    };
    for score in [1.0, 2.0, 3.0] {
        assert_eq!(submit("alice", score).status().as_u16(), 200);
    }
    let r = submit("alice", 4.0);
    assert_eq!(r.status().as_u16(), 429);
    // The next of 3 an hour comes in about 20 minutes.
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1100..=1200).contains(&wait), "Retry-After {wait}");
    let v: Json = r.json().unwrap();
    assert_eq!(v["error"]["code"], "rate_limited", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("max_submits_per_member"), "{msg}");
    // A batch: alice's entry fails alone.
    let r = c
        .post(format!("{base}/scores"))
        .json(&json!([{"member": "alice", "score": 5}, {"member": "bob", "score": 5}]))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Json = r.json().unwrap();
    assert_eq!(v["results"][0]["error"]["code"], "rate_limited", "{v}");
    assert_eq!(v["results"][1]["member"], "bob", "{v}");
    assert!(v["results"][1].get("error").is_none(), "{v}");

    // MessagePack-RPC: submit, and a submit_many of one member four times.
    let mut rpc = Rpc::connect(ip("127.0.0.1"), &s);
    let (code, _) = rpc.submit("m", "alice").unwrap_err();
    assert_eq!(code, "rate_limited");
    let carol = |score: i64| {
        Value::Map(vec![
            ("member".into(), "carol".into()),
            ("score".into(), score.into()),
        ])
    };
    let out = rpc
        .call(
            "submit_many",
            vec!["m".into(), Value::Array((1..=4).map(carol).collect())],
        )
        .unwrap();
    let results = out
        .as_map()
        .unwrap()
        .iter()
        .find(|(k, _)| k.as_str() == Some("results"))
        .unwrap()
        .1
        .as_array()
        .unwrap()
        .clone();
    let refused: Vec<bool> = results
        .iter()
        .map(|r| {
            r.as_map()
                .unwrap()
                .iter()
                .any(|(k, _)| k.as_str() == Some("error"))
        })
        .collect();
    assert_eq!(refused, [false, false, false, true]);
    // A bystander.
    rpc.submit("m", "dave").unwrap();

    // Every acknowledged write, and none of the refused ones.
    let score = |member: &str| -> Json {
        let v: Json = c
            .get(format!("{base}/members/{member}"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        v["score"].clone()
    };
    assert_eq!(http_count(&c, &s, None, "m"), 4);
    assert_eq!(score("alice"), json!(3.0));
    assert_eq!(score("bob"), json!(5.0));
    assert_eq!(score("carol"), json!(3.0));
    assert_eq!(score("dave"), json!(1.0));
    assert_refusals(&c, &s, "member", 4);
}
