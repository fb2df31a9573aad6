//! The MessagePack-RPC frontend (docs/spec.md §4) of a real `podium serve`, driven
//! over TCP by a small client written here with rmpv, and by the Python
//! `msgpack` package (`tests/python/msgpack_rpc_test.py`): every method,
//! the same results as the HTTP API, errors, auth scopes, notifications,
//! deep pipelining, hostile frames, a large export read slowly, and the
//! durability of an acknowledged write across `kill -9`.

#[path = "support/launch.rs"]
mod launch;

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmpv::Value;
use serde_json::{json, Value as Json};

const START_TIMEOUT: Duration = Duration::from_secs(30);
/// A test must fail, not hang, when the server stops answering.
const IO_TIMEOUT: Duration = Duration::from_secs(60);
const RPC_LISTENING: &str = "podium: rpc listening on ";
const HTTP_LISTENING: &str = "podium: http listening on ";

/// `podium serve` with its HTTP and MessagePack-RPC listeners on free
/// ports, `--fsync always`, on a fresh data directory; killed when dropped.
struct Podium {
    child: Option<Child>,
    tmp: tempfile::TempDir,
    extra: Vec<String>,
    rpc: String,
    http: String,
    starts: u32,
    stdout: Arc<Mutex<String>>,
}

impl Podium {
    fn start(extra: &[&str]) -> Podium {
        let tmp = tempfile::Builder::new()
            .prefix("podium-rpc-")
            .tempdir()
            .expect("temp dir");
        let mut p = Podium {
            child: None,
            tmp,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            rpc: String::new(),
            http: String::new(),
            starts: 0,
            stdout: Arc::new(Mutex::new(String::new())),
        };
        p.spawn();
        p
    }

    fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    fn stderr_path(&self) -> PathBuf {
        self.tmp.path().join(format!("stderr-{}.log", self.starts))
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_podium"));
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args([
                "--http",
                "127.0.0.1:0",
                "--rpc",
                "127.0.0.1:0",
                "--resp",
                "off",
            ])
            .args(["--fsync", "always"])
            .args(&self.extra)
            .env_remove("PODIUM_CONFIG")
            .env_remove("PODIUM_API_KEYS")
            .env_remove("PODIUM_LOG_LEVEL")
            .env("NO_COLOR", "1");
        let l = launch::launch(cmd, &self.stderr_path(), RPC_LISTENING, START_TIMEOUT);
        self.child = Some(l.child);
        self.rpc = l.addr;
        // The HTTP line is printed before the RPC one.
        let out = l.stdout.lock().unwrap().clone();
        self.http = out
            .lines()
            .find_map(|l| l.strip_prefix(HTTP_LISTENING))
            .expect("the HTTP listening line")
            .trim()
            .to_string();
        self.stdout = l.stdout;
    }

    fn output(&self) -> String {
        format!(
            "{}\n{}",
            self.stdout.lock().unwrap(),
            std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
        )
    }

    fn running(&mut self) -> bool {
        match &mut self.child {
            Some(c) => c.try_wait().expect("try_wait").is_none(),
            None => false,
        }
    }

    fn kill9(&mut self) {
        let mut c = self.child.take().expect("running");
        c.kill().expect("SIGKILL");
        c.wait().expect("reaping");
    }

    fn client(&self) -> Client {
        Client::connect(&self.rpc)
    }

    /// GET `path` on the HTTP API, as JSON.
    fn get(&self, path: &str) -> Json {
        let r = reqwest::blocking::Client::new()
            .get(format!("http://{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .send()
            .expect("HTTP GET");
        let text = r.text().expect("HTTP body");
        serde_json::from_str(&text).unwrap_or(Json::String(text))
    }

    fn get_text(&self, path: &str) -> String {
        reqwest::blocking::Client::new()
            .get(format!("http://{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .send()
            .expect("HTTP GET")
            .text()
            .expect("HTTP body")
    }

    fn post(&self, path: &str, body: &Json) -> Json {
        let r = reqwest::blocking::Client::new()
            .post(format!("http://{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .json(body)
            .send()
            .expect("HTTP POST");
        r.json().expect("HTTP JSON body")
    }
}

impl Drop for Podium {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An error response's `[code, message]`.
#[derive(Debug, Clone, PartialEq)]
struct RpcError {
    code: String,
    message: String,
}

/// A blocking MessagePack-RPC client over one TCP connection.
struct Client {
    wr: TcpStream,
    rd: BufReader<TcpStream>,
    next_id: u32,
}

fn enc(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(&mut b, v).unwrap();
    b
}

fn request(msgid: u32, method: &str, params: Vec<Value>) -> Vec<u8> {
    enc(&Value::Array(vec![
        0.into(),
        msgid.into(),
        method.into(),
        Value::Array(params),
    ]))
}

fn notification(method: &str, params: Vec<Value>) -> Vec<u8> {
    enc(&Value::Array(vec![
        2.into(),
        method.into(),
        Value::Array(params),
    ]))
}

fn map(kv: &[(&str, Value)]) -> Value {
    Value::Map(
        kv.iter()
            .map(|(k, v)| (Value::from(*k), v.clone()))
            .collect(),
    )
}

fn strs(v: &[&str]) -> Value {
    Value::Array(v.iter().map(|s| Value::from(*s)).collect())
}

fn entry(member: &str, score: f64) -> Value {
    map(&[("member", member.into()), ("score", score.into())])
}

/// `[1, msgid, error, result]` → (msgid, result or error).
fn parse_response(v: Value) -> (u32, Result<Value, RpcError>) {
    let Value::Array(mut a) = v else {
        panic!("a response must be an array: {v}")
    };
    assert_eq!(a.len(), 4, "response arity: {a:?}");
    assert_eq!(a[0], Value::from(1), "response type: {a:?}");
    let id = a[1].as_u64().expect("msgid") as u32;
    let result = a.pop().unwrap();
    let error = a.pop().unwrap();
    if error.is_nil() {
        (id, Ok(result))
    } else {
        assert!(result.is_nil(), "an error response has a nil result");
        let e = error.as_array().expect("error is [code, message]");
        assert_eq!(e.len(), 2);
        (
            id,
            Err(RpcError {
                code: e[0].as_str().expect("code").to_string(),
                message: e[1].as_str().expect("message").to_string(),
            }),
        )
    }
}

impl Client {
    fn connect(addr: &str) -> Client {
        let s = TcpStream::connect(addr).expect("connecting to the RPC port");
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Client {
            rd: BufReader::with_capacity(1 << 16, s.try_clone().unwrap()),
            wr: s,
            next_id: 1,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.wr.write_all(bytes).expect("sending");
    }

    /// The next message, or None at EOF.
    fn read(&mut self) -> Option<Value> {
        match rmpv::decode::read_value(&mut self.rd) {
            Ok(v) => Some(v),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => panic!("reading a response: {e}"),
        }
    }

    fn response(&mut self) -> (u32, Result<Value, RpcError>) {
        parse_response(self.read().expect("a response, got EOF"))
    }

    fn try_call(&mut self, method: &str, params: Vec<Value>) -> Result<Value, RpcError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.send(&request(id, method, params));
        let (got, r) = self.response();
        assert_eq!(got, id, "answer to another request");
        r
    }

    #[track_caller]
    fn call(&mut self, method: &str, params: Vec<Value>) -> Value {
        match self.try_call(method, params) {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e:?}"),
        }
    }

    #[track_caller]
    fn call_err(&mut self, method: &str, params: Vec<Value>) -> RpcError {
        match self.try_call(method, params) {
            Ok(v) => panic!("{method} should have failed, got {v}"),
            Err(e) => e,
        }
    }

    /// Whether the server closed the connection (EOF before any message).
    fn closed(&mut self) -> bool {
        self.read().is_none()
    }
}

/// A result as JSON, infinities as HTTP writes them, to compare the two
/// protocols.
fn to_json(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => {
            if let Some(u) = i.as_u64() {
                json!(u)
            } else {
                json!(i.as_i64().unwrap())
            }
        }
        Value::F32(f) => float_json(f64::from(*f)),
        Value::F64(f) => float_json(*f),
        Value::String(s) => Json::String(s.as_str().expect("UTF-8").to_string()),
        Value::Binary(b) => json!(b),
        Value::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_string(), to_json(v)))
                .collect(),
        ),
        Value::Ext(..) => panic!("no ext values in results"),
    }
}

fn float_json(f: f64) -> Json {
    if f.is_finite() {
        json!(f)
    } else if f > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some(key)))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {key:?} in {v}"))
}

#[test]
fn every_method_matches_the_http_api() {
    let p = Podium::start(&[]);
    let mut c = p.client();

    // --------------------------------------------------------- boards
    let created = c.call(
        "board_create",
        vec!["lb".into(), map(&[("order", "desc".into())])],
    );
    assert_eq!(get(&created, "board"), &Value::from("lb"));
    assert_eq!(get(&created, "members"), &Value::from(0));
    let e = c.call_err("board_create", vec!["lb".into()]);
    assert_eq!(e.code, "board_exists");
    let updated = c.call(
        "board_update",
        vec!["lb".into(), map(&[("ranking", "competition".into())])],
    );
    assert_eq!(get(&updated, "created"), &Value::from(false));
    let fresh = c.call("board_update", vec!["other".into()]);
    assert_eq!(get(&fresh, "created"), &Value::from(true));

    // --------------------------------------------------------- writes
    let s = c.call(
        "submit",
        vec![
            "lb".into(),
            map(&[
                ("member", "ann".into()),
                ("score", 30.into()),
                ("name", "Ann".into()),
                ("data", map(&[("team", "red".into())])),
            ]),
        ],
    );
    let want = json!({"member": "ann", "score": 30.0, "rank": 1, "previous": null,
        "changed": true, "created": true, "applied": true, "evicted": 0});
    assert_eq!(to_json(&s), want);
    let many = c.call(
        "submit_many",
        vec![
            "lb".into(),
            Value::Array(vec![
                entry("bob", 20.0),
                entry("cat", 20.0),
                entry("dan", 10.0),
                entry("eve", f64::NEG_INFINITY),
                map(&[
                    ("member", "ann".into()),
                    ("score", 5.into()),
                    ("op", "incr".into()),
                ]),
            ]),
        ],
    );
    assert_eq!(get(&many, "board"), &Value::from("lb"));
    let results = get(&many, "results").as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(get(&results[3], "score"), &Value::F64(f64::NEG_INFINITY));
    assert_eq!(get(&results[4], "score"), &Value::F64(35.0));
    let sd = c.call(
        "set_data",
        vec![
            "lb".into(),
            "bob".into(),
            map(&[("name", "Bob".into()), ("data", map(&[("lvl", 7.into())]))]),
        ],
    );
    assert_eq!(
        to_json(&sd),
        json!({"board": "lb", "member": "bob", "found": true})
    );
    c.call(
        "submit_many",
        vec![
            "src".into(),
            Value::Array(vec![entry("ann", 1.0), entry("zed", 2.0)]),
        ],
    );

    // ------------------------------------- reads, against HTTP's JSON
    let same = |rpc: Value, http: Json, what: &str| {
        assert_eq!(to_json(&rpc), http, "{what}: RPC and HTTP differ");
    };
    let mut c2 = p.client();
    same(c2.call("boards", vec![]), p.get("/v1/boards"), "boards");
    same(
        c2.call("board_info", vec!["lb".into()]),
        p.get("/v1/boards/lb"),
        "board_info",
    );
    same(
        c2.call(
            "top",
            vec![
                "lb".into(),
                map(&[
                    ("page", 1.into()),
                    ("page_size", 3.into()),
                    ("with_data", true.into()),
                ]),
            ],
        ),
        p.get("/v1/boards/lb/top?page=1&page_size=3&with_data=true"),
        "top",
    );
    same(
        c2.call("top", vec!["lb".into()]),
        p.get("/v1/boards/lb/top"),
        "top with defaults",
    );
    same(
        c2.call(
            "entry",
            vec!["lb".into(), "bob".into(), map(&[("page_size", 2.into())])],
        ),
        p.get("/v1/boards/lb/members/bob?page_size=2"),
        "entry",
    );
    same(
        c2.call("rank", vec!["lb".into(), "cat".into()]),
        p.get("/v1/boards/lb/rank/cat"),
        "rank",
    );
    same(
        c2.call("score", vec!["lb".into(), "eve".into()]),
        p.get("/v1/boards/lb/rank/eve"),
        "score",
    );
    same(
        c2.call(
            "count",
            vec![
                "lb".into(),
                map(&[("min", 10.into()), ("max", "(30".into())]),
            ],
        ),
        p.get("/v1/boards/lb/count?min=10&max=(30"),
        "count",
    );
    same(
        c2.call("count", vec!["lb".into()]),
        p.get("/v1/boards/lb/count"),
        "count all",
    );
    same(
        c2.call(
            "range_by_rank",
            vec![
                "lb".into(),
                2.into(),
                4.into(),
                map(&[("with_data", true.into())]),
            ],
        ),
        p.get("/v1/boards/lb/range?by=rank&start=2&stop=4&with_data=true"),
        "range_by_rank",
    );
    same(
        c2.call(
            "range_by_rank",
            vec![
                "lb".into(),
                1.into(),
                2.into(),
                map(&[("from", "worst".into())]),
            ],
        ),
        p.get("/v1/boards/lb/range?by=rank&start=1&stop=2&from=worst"),
        "range_by_rank from worst",
    );
    same(
        c2.call(
            "range_by_score",
            vec![
                "lb".into(),
                map(&[
                    ("min", "-inf".into()),
                    ("max", 30.into()),
                    ("offset", 1.into()),
                    ("limit", 2.into()),
                ]),
            ],
        ),
        p.get("/v1/boards/lb/range?by=score&min=-inf&max=30&offset=1&limit=2"),
        "range_by_score",
    );
    same(
        c2.call(
            "around",
            vec!["lb".into(), "cat".into(), map(&[("page_size", 3.into())])],
        ),
        p.get("/v1/boards/lb/around/cat?page_size=3"),
        "around",
    );
    same(
        c2.call("ranks", vec!["lb".into(), strs(&["dan", "nobody", "ann"])]),
        p.post(
            "/v1/boards/lb/ranks",
            &json!({"members": ["dan", "nobody", "ann"]}),
        ),
        "ranks",
    );
    same(
        c2.call("percentile", vec!["lb".into(), "cat".into()]),
        p.get("/v1/boards/lb/percentile/cat"),
        "percentile",
    );
    same(
        c2.call("score_at_percentile", vec!["lb".into(), 50.into()]),
        p.get("/v1/boards/lb/score_at_percentile?p=50"),
        "score_at_percentile",
    );
    let export = c2.call("export", vec!["lb".into()]);
    let lines: Vec<Json> = p
        .get_text("/v1/boards/lb/export")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(to_json(&export), Json::Array(lines), "export");

    // ------------------------------------------------- more writes
    let merged = c.call(
        "merge",
        vec![
            "sum".into(),
            strs(&["lb", "src"]),
            map(&[("aggregate", "max".into())]),
        ],
    );
    assert_eq!(to_json(&merged), json!({"board": "sum", "members": 6}));
    let inter = c.call(
        "intersect",
        vec![
            "both".into(),
            strs(&["lb", "src"]),
            map(&[("weights", Value::Array(vec![1.into(), 10.into()]))]),
        ],
    );
    assert_eq!(to_json(&inter), json!({"board": "both", "members": 1}));
    assert_eq!(
        get(&c.call("rank", vec!["both".into(), "ann".into()]), "score"),
        &Value::F64(45.0)
    );
    let imp = c.call(
        "import",
        vec![
            "imp".into(),
            Value::Array(vec![
                entry("a", 1.0),
                map(&[("member", "b".into()), ("score", "nan".into())]),
                // export's entries import as they are (rank is dropped).
                map(&[
                    ("member", "c".into()),
                    ("score", 3.into()),
                    ("rank", 1.into()),
                ]),
            ]),
        ],
    );
    assert_eq!(get(&imp, "imported"), &Value::from(2));
    assert_eq!(get(&imp, "failed"), &Value::from(1));
    let errs = get(&imp, "errors").as_array().unwrap();
    assert_eq!(to_json(&errs[0])["line"], json!(2));
    assert_eq!(to_json(&errs[0])["error"]["code"], json!("invalid_score"));
    let removed = c.call("remove", vec!["lb".into(), strs(&["dan", "nobody"])]);
    assert_eq!(to_json(&removed), json!({"board": "lb", "removed": 1}));
    let rr = c.call(
        "remove_range",
        vec![
            "lb".into(),
            map(&[
                ("by", "score".into()),
                ("min", "-inf".into()),
                ("max", "(0".into()),
            ]),
        ],
    );
    assert_eq!(to_json(&rr), json!({"board": "lb", "removed": 1}));
    let rr = c.call(
        "remove_range",
        vec!["lb".into(), map(&[("start", 1.into()), ("stop", 1.into())])],
    );
    assert_eq!(to_json(&rr), json!({"board": "lb", "removed": 1}));
    let reset = c.call("reset", vec!["lb".into()]);
    assert_eq!(get(&reset, "archived"), &Value::from(2));
    let archive = get(&reset, "archive").as_str().unwrap().to_string();
    assert!(archive.starts_with("lb@"), "{archive}");
    assert_eq!(
        get(
            &c.call("board_info", vec![archive.as_str().into()]),
            "read_only"
        ),
        &Value::from(true)
    );
    let del = c.call("board_delete", vec!["other".into()]);
    assert_eq!(to_json(&del), json!({"board": "other", "deleted": true}));
    let e = c.call_err("board_info", vec!["other".into()]);
    assert_eq!(e.code, "board_not_found");
    // Without API keys, auth accepts any key.
    assert_eq!(
        to_json(&c.call("auth", vec!["anything".into()])),
        json!({"scope": "admin"})
    );
    // Search answers as HTTP's search does; a query with no word is a
    // bad argument.
    let r = to_json(&c.call("search", vec!["lb".into(), "ann".into()]));
    assert_eq!(
        (&r["board"], &r["query"], &r["offset"], &r["limit"]),
        (&json!("lb"), &json!("ann"), &json!(0), &json!(25))
    );
    assert_eq!(
        r["total"].as_u64(),
        Some(r["entries"].as_array().unwrap().len() as u64),
        "{r}"
    );
    let e = c.call_err("search", vec!["lb".into(), " - ".into()]);
    assert_eq!(e.code, "invalid_argument");
}

#[test]
fn errors_carry_the_http_codes_and_messages() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    c.call("submit", vec!["lb".into(), entry("ann", 1.0)]);
    let e = c.call_err("nope", vec![]);
    assert_eq!(
        e,
        RpcError {
            code: "not_found".into(),
            message: "unknown method \"nope\"".into()
        }
    );
    // A missing member: HTTP's code and text.
    let e = c.call_err("rank", vec!["lb".into(), "zed".into()]);
    let http = p.get("/v1/boards/lb/rank/zed");
    assert_eq!(e.code, "member_not_found");
    assert_eq!(json!(e.message), http["error"]["message"]);
    let e = c.call_err("top", vec!["nosuch".into()]);
    let http = p.get("/v1/boards/nosuch/top");
    assert_eq!(e.code, "board_not_found");
    assert_eq!(json!(e.message), http["error"]["message"]);
    // Wrong types, arity, options.
    assert_eq!(
        c.call_err("rank", vec![1.into(), "ann".into()]).code,
        "malformed_request"
    );
    assert_eq!(
        c.call_err("rank", vec!["lb".into()]).code,
        "malformed_request"
    );
    assert_eq!(c.call_err("rank", vec![]).code, "malformed_request");
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("pagesize", 2.into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("page", 0.into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("top", vec!["lb".into(), map(&[("page_size", "x".into())])])
            .code,
        "invalid_argument"
    );
    assert_eq!(
        c.call_err("submit", vec!["lb".into(), entry("x", f64::NAN)])
            .code,
        "invalid_score"
    );
    assert_eq!(
        c.call_err(
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "x".into()), ("score", Value::Nil)])
            ]
        )
        .code,
        "invalid_score"
    );
    assert_eq!(
        c.call_err(
            "submit_many",
            vec!["lb".into(), Value::Array(vec![entry("y", 1.0), 5.into()])]
        )
        .code,
        "malformed_request"
    );
    assert_eq!(
        c.call_err("submit", vec!["".into(), entry("x", 1.0)]).code,
        "invalid_board_name"
    );
    assert_eq!(
        c.call_err(
            "submit",
            vec![
                "lb".into(),
                map(&[
                    ("member", "x".into()),
                    ("score", 1.into()),
                    ("data", 5.into())
                ])
            ]
        )
        .code,
        "invalid_data"
    );
    assert_eq!(
        c.call_err("count", vec!["lb".into(), map(&[("min", "abc".into())])])
            .code,
        "invalid_argument"
    );
    // A bad envelope with a readable id is answered; the connection goes on.
    c.send(&enc(&Value::Array(vec![
        0.into(),
        77.into(),
        "rank".into(),
        "not params".into(),
    ])));
    let (id, r) = c.response();
    assert_eq!(
        (id, r.unwrap_err().code.as_str()),
        (77, "malformed_request")
    );
    // Nothing was written by the refused calls.
    assert_eq!(
        to_json(&c.call("count", vec!["lb".into()])),
        json!({"board": "lb", "count": 1})
    );
}

#[test]
fn auth_scopes_follow_the_http_routes() {
    let read = "readkey-0123456789abcdef";
    let write = "writekey-0123456789abcdef";
    let admin = "adminkey-0123456789abcdef";
    let p = Podium::start(&[
        "--api-key",
        &format!("{read}:read"),
        "--api-key",
        &format!("{write}:write"),
        "--api-key",
        &format!("{admin}:admin"),
    ]);
    let mut c = p.client();
    assert_eq!(c.call_err("boards", vec![]).code, "unauthorized");
    assert_eq!(
        c.call_err("auth", vec!["wrong".into()]).code,
        "unauthorized"
    );
    // Unknown methods are told apart before auth, as HTTP's unknown routes.
    assert_eq!(c.call_err("nope", vec![]).code, "not_found");
    assert_eq!(
        to_json(&c.call("auth", vec![read.into()])),
        json!({"scope": "read"})
    );
    c.call("boards", vec![]);
    let e = c.call_err("submit", vec!["lb".into(), entry("a", 1.0)]);
    assert_eq!(e.code, "forbidden");
    assert_eq!(
        e.message,
        "this request needs a key of scope write; this key has scope read"
    );
    c.call("auth", vec![write.into()]);
    c.call("submit", vec!["lb".into(), entry("a", 1.0)]);
    c.call("ranks", vec!["lb".into(), strs(&["a"])]);
    for (m, params) in [
        ("board_create", vec!["x".into()]),
        ("board_update", vec!["x".into()]),
        ("reset", vec!["lb".into()]),
        ("merge", vec!["x".into(), strs(&["lb"])]),
        ("board_delete", vec!["lb".into()]),
    ] {
        assert_eq!(c.call_err(m, params).code, "forbidden", "{m}");
    }
    c.call("auth", vec![admin.into()]);
    c.call("board_create", vec!["x".into()]);
    c.call("board_delete", vec!["x".into()]);
    // A wrong key later leaves the connection's scope as it was.
    assert_eq!(
        c.call_err("auth", vec!["wrong".into()]).code,
        "unauthorized"
    );
    c.call("board_create", vec!["y".into()]);
    // Before auth, a frame over 64 KiB is refused and the connection closed.
    let mut d = p.client();
    let big = "m".repeat(100_000);
    d.send(&request(5, "submit", vec!["lb".into(), entry(&big, 1.0)]));
    let (id, r) = d.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (5, "payload_too_large"));
    assert!(d.closed());
}

#[test]
fn notifications_run_writes_and_unknown_ones_are_ignored() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let mut batch = notification("nvim_client_hello", vec![map(&[("name", "x".into())])]);
    batch.extend(notification("submit", vec!["lb".into(), entry("n", 4.0)]));
    batch.extend(notification("rank", vec!["lb".into(), "n".into()]));
    batch.extend(notification("submit", vec![1.into()]));
    batch.extend(request(9, "rank", vec!["lb".into(), "n".into()]));
    c.send(&batch);
    // Only the request is answered.
    let (id, r) = c.response();
    assert_eq!(id, 9);
    assert_eq!(get(&r.unwrap(), "score"), &Value::F64(4.0));
    c.call("boards", vec![]);
}

#[test]
fn pipelines_of_1000_requests_are_answered_by_msgid() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    // msgids over the whole u32 range, 0 and u32::MAX included.
    let ids: Vec<u32> = (0..1000u32)
        .map(|i| match i {
            0 => 0,
            1 => u32::MAX,
            i => i.wrapping_mul(2_654_435_761),
        })
        .collect();
    let mut bytes = Vec::new();
    let mut want: HashMap<u32, String> = HashMap::new();
    for (i, &id) in ids.iter().enumerate() {
        let member = format!("m{:04}", i / 2);
        if i % 2 == 0 {
            bytes.extend(request(
                id,
                "submit",
                vec!["pipe".into(), entry(&member, i as f64)],
            ));
            want.insert(id, format!("submit {member}"));
        } else {
            // Pipelined behind its own submit: writes apply in the order
            // sent, so the member is there.
            bytes.extend(request(
                id,
                "score",
                vec!["pipe".into(), member.as_str().into()],
            ));
            want.insert(id, format!("score {member} {}", (i - 1) as f64));
        }
    }
    assert_eq!(want.len(), 1000, "distinct msgids");
    c.send(&bytes);
    for _ in 0..1000 {
        let (id, r) = c.response();
        let what = want
            .remove(&id)
            .unwrap_or_else(|| panic!("unexpected msgid {id}"));
        let v = r.unwrap_or_else(|e| panic!("{what}: {e:?}"));
        let mut words = what.split(' ');
        match words.next().unwrap() {
            "submit" => assert_eq!(get(&v, "member"), &Value::from(words.next().unwrap())),
            _ => {
                assert_eq!(get(&v, "member"), &Value::from(words.next().unwrap()));
                let s: f64 = words.next().unwrap().parse().unwrap();
                assert_eq!(get(&v, "score"), &Value::F64(s));
            }
        }
    }
    assert!(want.is_empty());
    assert_eq!(
        get(&c.call("count", vec!["pipe".into()]), "count"),
        &Value::from(500)
    );
}

/// Bulk writes of the common shape are applied by the connection's applier
/// while the reader reads on: every other request pipelined behind them
/// must still see them applied, and a general-path write between them
/// must keep its place in the order.
#[test]
fn pipelined_bulk_writes_apply_in_order_with_other_requests() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let mut bytes = Vec::new();
    let mut want: HashMap<u32, f64> = HashMap::new();
    let mut id = 0;
    for i in 0..300u32 {
        let batch: Vec<Value> = (0..50)
            .map(|k| entry(&format!("b{k}"), f64::from(i * 100 + k)))
            .chain([entry("a", f64::from(i))])
            .collect();
        id += 1;
        bytes.extend(request(
            id,
            "submit_many",
            vec!["order".into(), Value::Array(batch)],
        ));
        // Read behind the batch: its score for "a".
        id += 1;
        bytes.extend(request(id, "score", vec!["order".into(), "a".into()]));
        want.insert(id, f64::from(i));
        if i % 3 == 0 {
            // A general-path write, then a read that must see it, and
            // the next batch must overwrite it again.
            id += 1;
            bytes.extend(request(
                id,
                "submit",
                vec!["order".into(), entry("a", f64::from(i) + 0.5)],
            ));
            id += 1;
            bytes.extend(request(id, "score", vec!["order".into(), "a".into()]));
            want.insert(id, f64::from(i) + 0.5);
        }
    }
    c.send(&bytes);
    for _ in 0..id {
        let (rid, r) = c.response();
        let v = r.unwrap_or_else(|e| panic!("request {rid}: {e:?}"));
        if let Some(s) = want.remove(&rid) {
            assert_eq!(get(&v, "score"), &Value::F64(s), "read {rid}");
        }
    }
    assert!(want.is_empty());
    let last = c.call("score", vec!["order".into(), "a".into()]);
    assert_eq!(get(&last, "score"), &Value::F64(299.0));
    assert_eq!(
        get(&c.call("count", vec!["order".into()]), "count"),
        &Value::from(51)
    );
}

#[test]
fn hostile_frames_close_only_their_connection() {
    let mut p = Podium::start(&[]);
    let mut bystander = p.client();
    bystander.call("submit", vec!["lb".into(), entry("ann", 1.0)]);
    let check = |bystander: &mut Client, p: &mut Podium, what: &str| {
        let r = bystander.call("rank", vec!["lb".into(), "ann".into()]);
        assert_eq!(get(&r, "rank"), &Value::from(1), "after {what}");
        assert!(p.running(), "podium exited after {what}:\n{}", p.output());
    };

    // Truncated at EOF: the server just closes.
    let mut c = p.client();
    let full = request(1, "rank", vec!["lb".into(), "ann".into()]);
    c.send(&full[..full.len() - 3]);
    c.wr.shutdown(Shutdown::Write).unwrap();
    assert!(c.closed(), "truncated frame");
    check(&mut bystander, &mut p, "a truncated frame");

    // A str 32 declaring 2^31 bytes, in a small frame.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x02, 0xa4];
    f.extend_from_slice(b"rank");
    f.extend_from_slice(&[0x92, 0xa2, b'l', b'b', 0xdb]);
    f.extend_from_slice(&(1u32 << 31).to_be_bytes());
    f.extend_from_slice(b"ann");
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (2, "payload_too_large"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "a 2^31 string length");

    // 10,000 levels of nesting.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x03, 0xa4];
    f.extend_from_slice(b"rank");
    f.extend(std::iter::repeat_n(0x91u8, 10_000));
    f.push(0xc0);
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (3, "malformed_request"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "10,000 levels of nesting");

    // An array declaring 2^32-1 items.
    let mut c = p.client();
    let mut f = vec![0x94, 0x00, 0x04, 0xa4];
    f.extend_from_slice(b"rank");
    f.push(0xdd);
    f.extend_from_slice(&u32::MAX.to_be_bytes());
    f.extend_from_slice(&[0xa2, b'l', b'b']);
    c.send(&f);
    let (id, r) = c.response();
    assert_eq!((id, r.unwrap_err().code.as_str()), (4, "payload_too_large"));
    assert!(c.closed());
    check(&mut bystander, &mut p, "an array of 2^32-1 items");

    // A map of 2^32-1 pairs, and no request id to answer to.
    let mut c = p.client();
    let mut f = vec![0xdf];
    f.extend_from_slice(&u32::MAX.to_be_bytes());
    c.send(&f);
    assert!(c.closed());
    check(&mut bystander, &mut p, "a map of 2^32-1 pairs");

    // Not a request at all; a response sent to the server; byte 0xc1.
    for (what, f) in [
        ("a bare string", enc(&Value::from("hello"))),
        (
            "a response",
            enc(&Value::Array(vec![
                1.into(),
                1.into(),
                Value::Nil,
                Value::Nil,
            ])),
        ),
        ("byte 0xc1", vec![0x94, 0x00, 0x05, 0xc1]),
    ] {
        let mut c = p.client();
        c.send(&f);
        if what == "byte 0xc1" {
            let (id, r) = c.response();
            assert_eq!((id, r.unwrap_err().code.as_str()), (5, "malformed_request"));
        }
        assert!(c.closed(), "{what}");
        check(&mut bystander, &mut p, what);
    }
}

#[test]
fn a_slow_export_reader_stalls_only_its_own_connection() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let n = 200_000usize;
    for batch in 0..10 {
        let entries: Vec<Value> = (0..n / 10)
            .map(|i| {
                let i = batch * (n / 10) + i;
                map(&[
                    ("member", format!("member-{i:07}").into()),
                    ("score", (i as f64).into()),
                    ("name", format!("Player number {i}").into()),
                ])
            })
            .collect();
        c.call("submit_many", vec!["big".into(), Value::Array(entries)]);
    }
    // The slow client asks for the export and reads only its first bytes.
    let mut slow = p.client();
    slow.send(&request(1, "export", vec!["big".into()]));
    let mut head = vec![0u8; 64 << 10];
    slow.rd
        .read_exact(&mut head)
        .expect("the export's first bytes");
    // Meanwhile other connections are answered, reads and writes.
    let mut fast = p.client();
    for i in 0..200 {
        let r = fast.call(
            "rank",
            vec!["big".into(), format!("member-{i:07}").as_str().into()],
        );
        assert_eq!(get(&r, "rank"), &Value::from((n - i) as u64));
        fast.call(
            "submit",
            vec!["other".into(), entry(&format!("x{i}"), i as f64)],
        );
    }
    let top = fast.call("top", vec!["big".into(), map(&[("page_size", 100.into())])]);
    assert_eq!(get(&top, "entries").as_array().unwrap().len(), 100);
    // A write to the exported board itself: the stalled answer holds no
    // lock on it (chunks read ahead of the writer are read and let go). It
    // ranks last, past the export's declared count, so the export below
    // is unchanged.
    let late = fast.call("submit", vec!["big".into(), entry("late", -1.0)]);
    assert_eq!(get(&late, "rank"), &Value::from(n as u64 + 1));
    // Then the slow client reads the rest: exactly n entries, best first.
    let mut counted = Counted {
        inner: std::io::Cursor::new(head).chain(&mut slow.rd),
        n: 0,
    };
    let response = rmpv::decode::read_value(&mut counted).expect("a whole response");
    assert!(
        counted.n > 8 << 20,
        "the export is over 8 MiB: {}",
        counted.n
    );
    let (id, r) = parse_response(response);
    assert_eq!(id, 1);
    let entries = r.unwrap();
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), n);
    assert_eq!(
        get(&entries[0], "member"),
        &Value::from(format!("member-{:07}", n - 1))
    );
    assert_eq!(get(&entries[n - 1], "rank"), &Value::from(n as u64));
    assert_eq!(
        get(&entries[1], "name"),
        &Value::from(format!("Player number {}", n - 2))
    );
}

/// An export of bare entries (no name, no data: the encoder's fast path)
/// long enough to stream in many chunks, ranks crossing every integer
/// width up to uint 32, ids short, at the one-byte header's limit, past
/// it and not ASCII: byte for byte the encoding of the same entries built
/// here, whatever the chunk seams; a long range of them pipelined with it
/// comes whole, before or after it.
#[test]
fn a_bare_export_streams_byte_for_byte_across_chunks() {
    let p = Podium::start(&[]);
    let mut c = p.client();
    let n = 70_000usize;
    let id = |i: usize| match i % 1000 {
        1 => format!("{i:0>31}"),
        2 => format!("{i:0>32}"),
        3 => format!("é{i}"),
        _ => format!("m{i}"),
    };
    // Distinct scores in an order unrelated to the ids, a few infinite.
    let score = |i: usize| match i {
        7 => f64::INFINITY,
        8 => f64::NEG_INFINITY,
        _ => ((i * 7919) % 70_001) as f64 - 35_000.5,
    };
    for batch in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let entries = batch.iter().map(|&i| entry(&id(i), score(i))).collect();
        c.call("submit_many", vec!["bare".into(), Value::Array(entries)]);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
    let entries: Vec<Value> = order
        .iter()
        .enumerate()
        .map(|(r, &i)| {
            map(&[
                ("member", id(i).into()),
                ("score", Value::F64(score(i))),
                ("rank", (r as u64 + 1).into()),
            ])
        })
        .collect();
    let want = enc(&Value::Array(vec![
        1.into(),
        41.into(),
        Value::Nil,
        Value::Array(entries.clone()),
    ]));
    let mut both = request(41, "export", vec!["bare".into()]);
    both.extend(request(
        42,
        "range_by_rank",
        vec!["bare".into(), 3.into(), 66_000.into()],
    ));
    c.send(&both);
    // Both stream, each in one piece, in the order they start.
    let mut answered = Vec::new();
    for _ in 0..2 {
        let mut seen = Recorded {
            inner: &mut c.rd,
            bytes: Vec::new(),
        };
        let v = rmpv::decode::read_value(&mut seen).expect("a response");
        let (id, r) = parse_response(v);
        match id {
            41 => {
                assert_eq!(seen.bytes.len(), want.len());
                assert!(seen.bytes == want, "the export's bytes differ");
            }
            42 => {
                let r = r.unwrap();
                assert_eq!(get(&r, "total"), &Value::from(n as u64));
                assert_eq!(
                    get(&r, "entries").as_array().unwrap()[..],
                    entries[2..66_000]
                );
            }
            _ => panic!("an answer to {id}: {r:?}"),
        }
        answered.push(id);
    }
    answered.sort();
    assert_eq!(answered, [41, 42]);
}

/// Keeps the bytes read through it.
struct Recorded<R> {
    inner: R,
    bytes: Vec<u8>,
}

impl<R: Read> Read for Recorded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..k]);
        Ok(k)
    }
}

/// Counts the bytes read through it.
struct Counted<R> {
    inner: R,
    n: usize,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k;
        Ok(k)
    }
}

#[test]
fn an_acknowledged_submit_survives_kill_9() {
    let mut p = Podium::start(&[]);
    let mut c = p.client();
    let r = c.call("submit", vec!["dur".into(), entry("ann", 42.5)]);
    assert_eq!(get(&r, "created"), &Value::from(true));
    c.call(
        "submit_many",
        vec![
            "dur".into(),
            Value::Array(vec![entry("bob", 1.0), entry("cat", f64::INFINITY)]),
        ],
    );
    p.kill9();
    p.spawn();
    let mut c = p.client();
    let r = c.call("rank", vec!["dur".into(), "ann".into()]);
    assert_eq!(get(&r, "score"), &Value::F64(42.5));
    let r = c.call("rank", vec!["dur".into(), "cat".into()]);
    assert_eq!(get(&r, "score"), &Value::F64(f64::INFINITY));
    assert_eq!(get(&r, "rank"), &Value::from(1));
    assert_eq!(
        get(&c.call("count", vec!["dur".into()]), "count"),
        &Value::from(3)
    );
}

/// A client podium did not write: the `msgpack` package's Packer and
/// Unpacker over a plain socket.
/// Needs python3 with msgpack (the `external` feature).
#[cfg(feature = "external")]
#[test]
fn python_msgpack_client() {
    let ok = Command::new("python3")
        .args(["-c", "import msgpack"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with the `msgpack` package is needed: run scripts/test.sh, which installs it \
         (or: python3 -m pip install msgpack)"
    );
    let mut p = Podium::start(&[]);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/msgpack_rpc_test.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&p.rpc)
        .output()
        .expect("running the msgpack test script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(
        out.status.success() && text.contains("msgpack-rpc OK"),
        "the msgpack client against podium failed ({}):\n{text}",
        out.status
    );
    assert!(p.running(), "podium exited:\n{}", p.output());
}
