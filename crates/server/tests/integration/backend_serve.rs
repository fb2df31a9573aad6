//! `podium serve --backend redis://…` and `redis+cluster://…`,
//! as a client sees them: the real binary started on free ports against a
//! redis-server (or a 3-master cluster) this test starts itself.
//!
//! - The main HTTP and MessagePack-RPC calls answer exactly as an embedded
//!   podium does (memory figures aside), streamed answers included.
//! - Two podium nodes on one cluster serve the same boards: a write
//!   through one node's HTTP is read through the other's HTTP and RPC.
//! - With Redis killed, `/healthz` and every call answer 503
//!   `storage_unavailable`; once Redis is back podium answers again
//!   without a restart, with the data Redis kept (AOF, fsync always).
//! - The Redis protocol is off with a Redis backend, an explicit `--resp`
//!   is refused, and no data directory is created.
//! - Live events on Redis, read as Server-Sent Events: every change, the
//!   top places and watched members with their snapshots, lifecycle
//!   events, a resume with `Last-Event-ID` with no gap and no duplicate;
//!   on a cluster, the writes through one node reach a subscriber of
//!   another, in order; writes that went unrecorded (the listened marker
//!   gone) make the subscribers reload.

use crate::support;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use podium_client::Client;
use rmpv::Value as Mp;
use serde_json::{json, Value};
use support::launch::launch;
use support::redis::{answers_ping, wait_until, Redis};
use support::run_to_end;
use support::sse::Msg;

const RPC_LISTENING: &str = "podium: rpc listening on ";
const HTTP_LISTENING: &str = "podium: http listening on ";

/// A running `podium serve` with HTTP and RPC on free ports, killed on
/// drop, and a MessagePack-RPC client to it.
struct Node {
    child: Child,
    http: String,
    rpc: Client,
    rt: tokio::runtime::Runtime,
    tmp: tempfile::TempDir,
}

impl Node {
    /// `podium serve --data-dir TMP/data --http … --rpc … EXTRA…`.
    fn start(extra: &[&str]) -> Node {
        let tmp = tempfile::Builder::new()
            .prefix("podium-backend-")
            .tempdir()
            .unwrap();
        let mut cmd = Command::new(support::bin());
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .args(["--http", "127.0.0.1:0", "--rpc", "127.0.0.1:0"])
            .args(extra)
            .env_remove("PODIUM_CONFIG")
            .env_remove("PODIUM_API_KEYS")
            .env_remove("PODIUM_BACKEND")
            .env_remove("PODIUM_RESP")
            .env("NO_COLOR", "1");
        let l = launch(
            cmd,
            &tmp.path().join("stderr.log"),
            RPC_LISTENING,
            support::START_TIMEOUT,
        );
        // The HTTP line is printed before the RPC one.
        let http = l
            .stdout
            .lock()
            .unwrap()
            .lines()
            .find_map(|x| x.strip_prefix(HTTP_LISTENING))
            .expect("the HTTP listening line")
            .trim()
            .to_string();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let rpc = rt.block_on(Client::connect(l.addr.as_str())).unwrap();
        Node {
            child: l.child,
            http,
            rpc,
            rt,
            tmp,
        }
    }

    fn embedded() -> Node {
        Node::start(&["--resp", "off"])
    }

    fn on(url: &str) -> Node {
        Node::start(&["--backend", url])
    }

    fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("stderr.log")).unwrap_or_default()
    }

    /// An HTTP call: (status, body as JSON, or as a string when it is not).
    fn http(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let c = support::http::client();
        let url = format!("http://{}{}", self.http, path);
        let m: reqwest::Method = method.parse().unwrap();
        let mut r = c.request(m, url);
        if let Some(b) = body {
            let ct = if b.starts_with('{') || b.starts_with('[') {
                "application/json"
            } else {
                "application/x-ndjson"
            };
            r = r.header("content-type", ct).body(b.to_string());
        }
        let resp = r.send().expect("HTTP request");
        let status = resp.status().as_u16();
        let text = resp.text().unwrap();
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v)
    }

    /// An RPC call: the result, or `error CODE`.
    fn rpc(&self, method: &str, params: Vec<Mp>) -> Result<Mp, String> {
        self.rt
            .block_on(self.rpc.call(method, &params))
            .map_err(|e| format!("error {}", e.code().unwrap_or("(no code)")))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Memory use is each engine's own measure: dropped before comparing.
fn strip_json(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("heap_bytes");
            o.values_mut().for_each(strip_json);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_json),
        _ => {}
    }
}

fn strip_mp(v: &mut Mp) {
    match v {
        Mp::Map(m) => {
            m.retain(|(k, _)| k.as_str() != Some("heap_bytes"));
            m.iter_mut().for_each(|(_, v)| strip_mp(v));
        }
        Mp::Array(a) => a.iter_mut().for_each(strip_mp),
        _ => {}
    }
}

fn mp(v: Value) -> Mp {
    rmpv::ext::to_value(v).unwrap()
}

fn s(x: &str) -> Mp {
    Mp::from(x)
}

/// The same HTTP calls to both nodes: identical answers required.
/// Returns how many succeeded (2xx).
fn same_http(a: &Node, b: &Node, calls: &[(&str, &str, Option<&str>)]) -> usize {
    let mut ok = 0;
    for &(method, path, body) in calls {
        let (sa, mut va) = a.http(method, path, body);
        let (sb, mut vb) = b.http(method, path, body);
        strip_json(&mut va);
        strip_json(&mut vb);
        assert_eq!(
            (sa, &va),
            (sb, &vb),
            "{method} {path}: embedded (left) and redis (right) differ"
        );
        if (200..300).contains(&sa) {
            ok += 1;
        } else {
            eprintln!("{method} {path}: {sa} {va}");
        }
    }
    ok
}

/// The same RPC calls to both nodes: identical answers required.
/// Returns how many succeeded.
fn same_rpc(a: &Node, b: &Node, calls: Vec<(&str, Vec<Mp>)>) -> usize {
    let mut ok = 0;
    for (method, params) in calls {
        let mut ra = a.rpc(method, params.clone());
        let mut rb = b.rpc(method, params.clone());
        if let Ok(v) = &mut ra {
            strip_mp(v);
        }
        if let Ok(v) = &mut rb {
            strip_mp(v);
        }
        assert_eq!(
            ra, rb,
            "{method}{params:?}: embedded (left) and redis (right) differ"
        );
        match &ra {
            Ok(_) => ok += 1,
            Err(e) => eprintln!("{method}: {e}"),
        }
    }
    ok
}

#[test]
fn http_and_rpc_on_redis_answer_as_embedded() {
    let redis = Redis::single(false);
    let emb = Node::embedded();
    let red = Node::on(&redis.url());
    assert!(
        !red.data_dir().exists(),
        "a Redis-backed node keeps no data dir"
    );

    for (node, backend) in [(&emb, "embedded"), (&red, "redis")] {
        let (st, v) = node.http("GET", "/healthz", None);
        assert_eq!(st, 200);
        assert_eq!(
            (v["status"].as_str(), v["backend"].as_str()),
            (Some("ok"), Some(backend))
        );
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert!(v["commit"].is_string(), "{v}");
    }

    // 600 members (more than one streamed chunk of RPC's range and export),
    // some named, with data, tied scores.
    let mut batch = Vec::new();
    for i in 0..600 {
        let mut e = json!({"member": format!("p{i:03}"), "score": (i % 97) as f64 * 1.5});
        if i % 3 == 0 {
            e["name"] = json!(format!("Player {i} Alvarez"));
        }
        if i % 5 == 0 {
            e["data"] = json!({"level": i, "team": "red"});
        }
        batch.push(e);
    }
    let batch = serde_json::to_string(&batch).unwrap();
    let import: String = (0..50)
        .map(|i| format!("{{\"member\":\"imp{i}\",\"score\":{}}}\n", i * 2))
        .collect::<String>()
        + "{\"member\":\"bad\",\"score\":\"nope\"}\n";
    let http_ok = same_http(
        &emb,
        &red,
        &[
            (
                "PUT",
                "/v1/boards/lb",
                Some(r#"{"order":"desc","ranking":"competition"}"#),
            ),
            (
                "PUT",
                "/v1/boards/lb",
                Some(r#"{"order":"desc","ranking":"competition"}"#),
            ),
            ("POST", "/v1/boards/lb/scores", Some(&batch)),
            (
                "POST",
                "/v1/boards/lb/scores",
                Some(r#"{"member":"solo","score":42,"name":"Solo Han"}"#),
            ),
            (
                "POST",
                "/v1/boards/lb/scores",
                Some(r#"{"member":"solo","score":"NaN"}"#),
            ),
            (
                "POST",
                "/v1/boards/lb/scores",
                Some(r#"{"member":"p001","score":3,"op":"incr"}"#),
            ),
            (
                "PATCH",
                "/v1/boards/lb/members/p002",
                Some(r#"{"name":"Renamed","data":{"x":1}}"#),
            ),
            ("GET", "/v1/boards/lb", None),
            (
                "GET",
                "/v1/boards/lb/top?page=2&page_size=10&with_data=true",
                None,
            ),
            ("GET", "/v1/boards/lb/members/p010", None),
            ("GET", "/v1/boards/lb/members/nobody", None),
            ("GET", "/v1/boards/lb/rank/p033", None),
            ("GET", "/v1/boards/lb/percentile/p033", None),
            ("GET", "/v1/boards/lb/score_at_percentile?p=90", None),
            ("GET", "/v1/boards/lb/around/p050?page_size=5", None),
            (
                "GET",
                "/v1/boards/lb/range/rank?start=5&count=16&from=worst",
                None,
            ),
            (
                "GET",
                "/v1/boards/lb/range/score?min=(10&max=30&limit=50",
                None,
            ),
            // `+` in a query string is a space: +inf is sent encoded.
            ("GET", "/v1/boards/lb/count?min=10&max=%2Binf", None),
            (
                "POST",
                "/v1/boards/lb/ranks",
                Some(r#"{"members":["p001","p002","ghost"],"with_data":true}"#),
            ),
            ("GET", "/v1/boards/lb/search?q=alv&limit=5", None),
            ("GET", "/v1/boards/lb/search?q=player%2012", None),
            ("GET", "/v1/boards/lb/export", None),
            ("POST", "/v1/boards/imp/import", Some(&import)),
            ("GET", "/v1/boards/imp/top?page_size=100", None),
            (
                "POST",
                "/v1/boards/both/merge",
                Some(r#"{"sources":["lb","imp"],"aggregate":"max"}"#),
            ),
            ("GET", "/v1/boards/both/top?page_size=30", None),
            (
                "POST",
                "/v1/boards/lb/remove",
                Some(r#"{"members":["p003","p004","ghost"]}"#),
            ),
            ("DELETE", "/v1/boards/lb/members/p005", None),
            ("DELETE", "/v1/boards/lb/range/rank?start=1&count=3", None),
            ("GET", "/v1/boards/lb/top?page_size=20", None),
            ("GET", "/v1/boards", None),
            ("GET", "/v1/boards/nope/top", None),
            ("DELETE", "/v1/boards/both", None),
            ("GET", "/v1/boards", None),
        ],
    );

    let entries: Vec<Mp> = (0..300)
        .map(|i| {
            mp(json!({"member": format!("r{i}"), "score": (i % 13) as f64, "name": format!("Rpc {i}")}))
        })
        .collect();
    let rpc_ok = same_rpc(
        &emb,
        &red,
        vec![
            (
                "board_create",
                vec![s("rpc"), mp(json!({"ranking": "dense"}))],
            ),
            ("board_create", vec![s("rpc")]),
            ("submit_many", vec![s("rpc"), Mp::Array(entries)]),
            (
                "submit",
                vec![s("rpc"), mp(json!({"member": "r1", "score": 100}))],
            ),
            (
                "submit_many",
                vec![s("rpc"), mp(json!([{"member": "x", "score": "bad"}]))],
            ),
            (
                "top",
                vec![s("rpc"), mp(json!({"page": 2, "page_size": 7}))],
            ),
            ("rank", vec![s("rpc"), s("r7")]),
            (
                "entry",
                vec![s("rpc"), s("r7"), mp(json!({"page_size": 5}))],
            ),
            (
                "around",
                vec![s("rpc"), s("r20"), mp(json!({"page_size": 4}))],
            ),
            ("ranks", vec![s("rpc"), mp(json!(["r1", "r2", "zz"]))]),
            ("count", vec![s("rpc"), mp(json!({"min": 3, "max": 8}))]),
            ("percentile", vec![s("rpc"), s("r9")]),
            ("score_at_percentile", vec![s("rpc"), Mp::from(50.0)]),
            // Longer than one streamed chunk on the embedded engine.
            ("range_by_rank", vec![s("rpc"), Mp::from(2), Mp::from(290)]),
            (
                "range_by_score",
                vec![s("rpc"), mp(json!({"min": 2, "max": 11, "limit": 280}))],
            ),
            ("search", vec![s("rpc"), s("rpc 1")]),
            ("export", vec![s("rpc")]),
            ("export", vec![s("lb")]),
            (
                "import",
                vec![
                    s("rpc2"),
                    mp(json!([{"member": "a", "score": 1}, {"member": "b", "score": "x"}])),
                    mp(json!({})),
                ],
            ),
            (
                "set_data",
                vec![s("rpc"), s("r3"), mp(json!({"data": {"k": "v"}}))],
            ),
            ("remove", vec![s("rpc"), mp(json!(["r3", "r4"]))]),
            (
                "remove_range",
                vec![s("rpc"), mp(json!({"by": "score", "min": 0, "max": 1}))],
            ),
            ("board_info", vec![s("rpc")]),
            ("boards", vec![]),
            ("rank", vec![s("missing"), s("r1")]),
            ("board_delete", vec![s("rpc2")]),
            ("board_info", vec![s("rpc2")]),
        ],
    );
    // Errors are compared too (bad scores, missing boards and members, an
    // existing board), but most calls must do something.
    assert_eq!((http_ok, rpc_ok), (31, 23), "calls that succeeded");
}

/// Members a URL path cannot carry (`.` and `..`), named in the query
/// on the collection paths: every member route answers on Redis as on the
/// embedded store, errors included.
#[test]
fn members_named_in_the_query_on_redis_answer_as_embedded() {
    let redis = Redis::single(false);
    let emb = Node::embedded();
    let red = Node::on(&redis.url());
    let mut calls: Vec<(&str, String, Option<&str>)> = vec![(
        "POST",
        "/v1/boards/dots/scores".into(),
        Some(r#"[{"member":".","score":3},{"member":"..","score":2},{"member":"x","score":1}]"#),
    )];
    let mut ok = 1;
    for m in [".", ".."] {
        for (method, route, body) in [
            ("PATCH", "members", Some(r#"{"name":"Dot","data":{"k":1}}"#)),
            ("GET", "members?page_size=2&", None),
            ("GET", "rank?", None),
            ("GET", "percentile?", None),
            ("GET", "around?page_size=3&with_data=true&", None),
            ("DELETE", "members", None),
        ] {
            let sep = if route.ends_with(['?', '&']) { "" } else { "?" };
            calls.push((
                method,
                format!("/v1/boards/dots/{route}{sep}member={m}"),
                body,
            ));
            ok += 1;
        }
        // Gone now: 404 member_not_found on each route.
        for route in ["members", "rank", "percentile", "around"] {
            calls.push(("GET", format!("/v1/boards/dots/{route}?member={m}"), None));
        }
    }
    // No member, an empty one, two: 400; a missing board: 404.
    for q in ["", "?member=", "?member=x&member=y"] {
        calls.push(("GET", format!("/v1/boards/dots/rank{q}"), None));
    }
    calls.push(("GET", "/v1/boards/none/around?member=.".into(), None));
    calls.push(("GET", "/v1/boards/dots/members?member=x".into(), None));
    ok += 1;
    let calls: Vec<(&str, &str, Option<&str>)> =
        calls.iter().map(|(m, p, b)| (*m, p.as_str(), *b)).collect();
    assert_eq!(same_http(&emb, &red, &calls), ok);
    let (status, v) = emb.http("GET", "/v1/boards/dots", None);
    assert_eq!((status, &v["members"]), (200, &json!(1)), "{v}");
}

/// Boards with sort keys through the real server on both engines: HTTP
/// (JSON, NDJSON export and import, CSV with a column per key, integers
/// beyond 2^53 as strings, a change of sort and its progress) and
/// MessagePack-RPC (integers as integers) answer alike.
#[test]
fn sorted_boards_over_http_and_rpc_on_redis_answer_as_embedded() {
    let redis = Redis::single(false);
    let emb = Node::embedded();
    let red = Node::on(&redis.url());
    let race = r#"{"ranking":"competition","update":"best","sort":[
        {"key":"laps","order":"desc","type":"int"},
        {"key":"time_ms","order":"asc","type":"int"}]}"#;
    let batch = serde_json::to_string(
        &(0..300)
            .map(|i| {
                json!({"member": format!("car{i:03}"),
                       "scores": {"laps": i % 11, "time_ms": 60_000 + (i * 37) % 500},
                       "name": format!("Driver {i}")})
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let ndjson: String = (0..40)
        .map(|i| {
            format!(
                "{{\"member\":\"n{i}\",\"scores\":{{\"laps\":{},\"time_ms\":\"{}\"}}}}\n",
                i % 4,
                9_007_199_254_740_993i64 + i
            )
        })
        .collect::<String>()
        + "{\"member\":\"bad\",\"scores\":{\"laps\":1.5,\"time_ms\":1}}\n";
    let http_ok = same_http(
        &emb,
        &red,
        &[
            ("PUT", "/v1/boards/race", Some(race)),
            ("POST", "/v1/boards/race/scores", Some(&batch)),
            (
                "POST",
                "/v1/boards/race/scores",
                Some(r#"{"member":"car001","scores":{"laps":10,"time_ms":61000}}"#),
            ),
            (
                "POST",
                "/v1/boards/race/scores",
                Some(r#"{"member":"car001","scores":{"laps":10,"time_ms":62000}}"#),
            ),
            (
                "POST",
                "/v1/boards/race/scores",
                Some(r#"{"member":"car002","scores":{"laps":10}}"#),
            ),
            ("GET", "/v1/boards/race/top?page=1&page_size=15", None),
            ("GET", "/v1/boards/race/members/car001", None),
            ("GET", "/v1/boards/race/around/car050?page_size=5", None),
            (
                "GET",
                "/v1/boards/race/range/score?min=4&max=(7&limit=20",
                None,
            ),
            ("GET", "/v1/boards/race/count?min=10", None),
            (
                "POST",
                "/v1/boards/race/ranks",
                Some(r#"{"members":["car001","car100","ghost"]}"#),
            ),
            ("GET", "/v1/boards/race/search?q=driver%201&limit=5", None),
            ("POST", "/v1/boards/race/import", Some(&ndjson)),
            ("GET", "/v1/boards/race/top?page=1&page_size=5", None),
            ("GET", "/v1/boards/race/export", None),
            (
                "PUT",
                "/v1/boards/race",
                Some(
                    r#"{"ranking":"dense","update":"best","confirm_rerank":true,"sort":[
                    {"key":"laps","order":"desc","type":"int"},
                    {"key":"time_ms","order":"desc","type":"float"}]}"#,
                ),
            ),
            ("GET", "/v1/boards/race/resort", None),
            ("GET", "/v1/boards/race/top?page=2&page_size=10", None),
            ("GET", "/v1/boards/race/members/n3", None),
            ("GET", "/v1/boards/nope/resort", None),
            (
                "POST",
                "/v1/boards/race/merge",
                Some(r#"{"sources":["race"]}"#),
            ),
        ],
    );
    let rpc_ok = same_rpc(
        &emb,
        &red,
        vec![
            (
                "board_create",
                vec![
                    s("kills"),
                    mp(json!({"ranking": "dense", "update": "incr", "sort": [
                        {"key": "kills", "order": "desc", "type": "int"},
                        {"key": "at", "order": "asc", "type": "int", "op": "set"}]})),
                ],
            ),
            (
                "submit_many",
                vec![
                    s("kills"),
                    mp(json!([
                        {"member": "a", "scores": {"kills": 1, "at": 10}},
                        {"member": "b", "scores": {"kills": 2, "at": 11}},
                        {"member": "a", "scores": {"kills": 1, "at": 12}},
                        {"member": "c", "scores": {"kills": 9_007_199_254_740_993i64, "at": 1}},
                    ])),
                ],
            ),
            ("top", vec![s("kills"), mp(json!({"page_size": 10}))]),
            ("entry", vec![s("kills"), s("a")]),
            (
                "range_by_score",
                vec![s("kills"), mp(json!({"min": 9_007_199_254_740_993i64}))],
            ),
            ("resort_status", vec![s("kills")]),
            ("export", vec![s("kills")]),
        ],
    );
    assert_eq!((http_ok, rpc_ok), (18, 7), "calls that succeeded");
}

#[test]
fn two_nodes_on_one_cluster_serve_the_same_boards() {
    let cluster = Redis::cluster(false);
    let a = Node::on(&cluster.url());
    let b = Node::on(&cluster.url());
    // Boards whose tags hash to different masters.
    for board in ["weekly", "daily", "b1", "b2", "b3"] {
        let (st, _) = a.http(
            "POST",
            &format!("/v1/boards/{board}/scores"),
            Some(r#"[{"member":"ann","score":10,"name":"Ann"},{"member":"bob","score":20}]"#),
        );
        assert_eq!(st, 200, "write through A");
        let (st, top) = b.http("GET", &format!("/v1/boards/{board}/top"), None);
        assert_eq!(st, 200);
        let members: Vec<&str> = top["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["member"].as_str().unwrap())
            .collect();
        assert_eq!(members, ["bob", "ann"], "{board} read through B's HTTP");
        let r = b.rpc("rank", vec![s(board), s("ann")]).unwrap();
        let rank = r
            .as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some("rank"))
            .map(|(_, v)| v.as_u64());
        assert_eq!(rank, Some(Some(2)), "{board} read through B's RPC");
    }
    // And the other way: B's RPC write, A's HTTP read, B's HTTP search.
    b.rpc(
        "submit",
        vec![
            s("weekly"),
            mp(json!({"member": "cy", "score": 30, "name": "Cyrus"})),
        ],
    )
    .unwrap();
    let (_, v) = a.http("GET", "/v1/boards/weekly/rank/cy", None);
    assert_eq!(v["rank"], 1);
    let (_, v) = b.http("GET", "/v1/boards/weekly/search?q=cyr", None);
    assert_eq!(v["total"], 1, "{v}");
    let (_, v) = a.http("GET", "/v1/boards", None);
    assert_eq!(v["boards"].as_array().unwrap().len(), 5, "{v}");
}

/// `serve` on Redis runs scheduled resets, and two nodes polling the same
/// board archive each period once: a period archived twice would show as
/// a second name for it (`tick@PERIOD.2`).
#[test]
fn two_nodes_run_scheduled_resets_on_redis_once_per_period() {
    let redis = Redis::single(false);
    let a = Node::on(&redis.url());
    let b = Node::on(&redis.url());
    let (st, v) = a.http(
        "PUT",
        "/v1/boards/tick",
        Some(r#"{"reset":"* * * * * *","keep_archives":50}"#),
    );
    assert_eq!(st, 201, "{v}");
    let (st, _) = b.http(
        "POST",
        "/v1/boards/tick/scores",
        Some(r#"[{"member":"ann","score":10},{"member":"bob","score":20}]"#),
    );
    assert_eq!(st, 200);
    let archives = |v: &Value| -> Vec<(String, u64)> {
        v["boards"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| {
                let name = b["board"].as_str()?;
                name.starts_with("tick@")
                    .then(|| (name.to_string(), b["members"].as_u64().unwrap()))
            })
            .collect()
    };
    // The members land in the first archive made after they were written;
    // then wait for a few more periods, so both nodes have raced for them.
    let mut seen = Vec::new();
    wait_until("three archives, one holding the members", || {
        seen = archives(&a.http("GET", "/v1/boards", None).1);
        seen.len() >= 3 && seen.iter().any(|(_, n)| *n == 2)
    });
    let mut periods: Vec<&str> = seen
        .iter()
        .map(|(name, _)| match name.rsplit_once('.') {
            Some((p, n)) if n.bytes().all(|c| c.is_ascii_digit()) => p,
            _ => name.as_str(),
        })
        .collect();
    let n = periods.len();
    periods.sort_unstable();
    periods.dedup();
    assert_eq!(periods.len(), n, "a period archived twice: {seen:?}");
    let (_, v) = b.http("GET", "/v1/boards/tick/top", None);
    assert_eq!(v["entries"].as_array().map(Vec::len), Some(0), "{v}");
}

#[test]
fn a_lost_redis_is_a_503_and_podium_recovers_without_a_restart() {
    let mut redis = Redis::single(true);
    let node = Node::on(&redis.url());
    let (st, _) = node.http(
        "POST",
        "/v1/boards/b/scores",
        Some(r#"{"member":"a","score":1}"#),
    );
    assert_eq!(st, 200);

    redis.nodes[0].kill();
    let (st, v) = node.http("GET", "/healthz", None);
    assert_eq!(st, 503, "{v}");
    assert_eq!(v["error"]["code"], "storage_unavailable", "{v}");
    let (st, v) = node.http("GET", "/v1/boards/b/top", None);
    assert_eq!(
        (st, &v["error"]["code"]),
        (503, &json!("storage_unavailable"))
    );
    let (st, _) = node.http(
        "POST",
        "/v1/boards/b/scores",
        Some(r#"{"member":"c","score":3}"#),
    );
    assert_eq!(st, 503);
    assert_eq!(
        node.rpc("rank", vec![s("b"), s("a")]),
        Err("error storage_unavailable".into())
    );
    assert_eq!(
        node.rpc("export", vec![s("b")]),
        Err("error storage_unavailable".into())
    );

    // The same Redis again (same port and AOF): podium serves by itself.
    redis.nodes[0].spawn();
    let port = redis.nodes[0].port;
    wait_until("redis back", || answers_ping(port));
    let t = Instant::now();
    loop {
        let (st, _) = node.http("GET", "/healthz", None);
        if st == 200 {
            break;
        }
        assert_eq!(st, 503);
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no recovery:\n{}",
            node.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (st, v) = node.http("GET", "/v1/boards/b/rank/a", None);
    assert_eq!((st, &v["score"]), (200, &json!(1.0)), "{v}");
    let (st, _) = node.http(
        "POST",
        "/v1/boards/b/scores",
        Some(r#"{"member":"d","score":4}"#),
    );
    assert_eq!(st, 200);
    let r = node.rpc("board_info", vec![s("b")]).unwrap();
    let members = r
        .as_map()
        .unwrap()
        .iter()
        .find(|(k, _)| k.as_str() == Some("members"))
        .and_then(|(_, v)| v.as_u64());
    assert_eq!(members, Some(2));
}

#[test]
fn resp_is_refused_with_a_redis_backend() {
    let (status, out) = run_to_end(&[
        "serve",
        "--backend",
        "redis://127.0.0.1:1",
        "--resp",
        "127.0.0.1:0",
        "--http",
        "off",
        "--rpc",
        "off",
    ]);
    assert!(!status.success());
    assert!(out.contains("serves only the embedded engine"), "{out}");
}

/// `node`'s event stream at `path` (see [`support::sse::open`]).
fn sse(node: &Node, path: &str, last_id: Option<&str>) -> std::sync::mpsc::Receiver<Msg> {
    support::sse::open(&format!("http://{}{}", node.http, path), last_id)
}

/// The next `n` events (each within 10 s).
fn take(rx: &std::sync::mpsc::Receiver<Msg>, n: usize) -> Vec<Msg> {
    (0..n)
        .map(|i| {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("event {} of {n} within 10 s", i + 1))
        })
        .collect()
}

/// No event within `wait`.
fn quiet(rx: &std::sync::mpsc::Receiver<Msg>, wait: Duration) {
    if let Ok(m) = rx.recv_timeout(wait) {
        panic!("no event expected, got {m:?}");
    }
}

/// An event id's parts, to compare ids in order.
fn event_id(s: &str) -> (u64, u32) {
    let (a, b) = s.split_once('-').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

fn ids_grow(evs: &[Msg]) {
    for w in evs.windows(2) {
        assert!(
            event_id(&w[0].id) < event_id(&w[1].id),
            "ids grow: {} then {}",
            w[0].id,
            w[1].id
        );
    }
    for e in evs {
        assert_eq!(
            e.data["id"],
            e.id.as_str(),
            "the id in the data is the SSE id"
        );
    }
}

fn whats(evs: &[Msg]) -> Vec<(String, String)> {
    evs.iter().map(Msg::what).collect()
}

fn w(kind: &str, member: &str) -> (String, String) {
    (kind.to_string(), member.to_string())
}

/// The bounds on live-event filters hold on the Redis backend as on the
/// embedded store (support::sse::check_filter_bounds).
#[test]
fn live_event_filters_are_bounded_on_redis() {
    let redis = Redis::single(false);
    let node = Node::start(&[
        "--backend",
        &redis.url(),
        "--events-max-filters-per-member",
        "3",
        "--events-max-filters-per-board",
        "5",
    ]);
    let body = json!({"member": "hot", "score": 1}).to_string();
    let (st, v) = node.http("POST", "/v1/boards/b/scores", Some(&body));
    assert_eq!(st, 200, "{v}");
    support::sse::check_filter_bounds(&format!("http://{}", node.http));
}

#[test]
fn live_events_on_redis_over_sse() {
    let redis = Redis::single(false);
    let node = Node::on(&redis.url());
    let post = |m: &str, sc: f64| {
        let body = json!({"member": m, "score": sc}).to_string();
        let (st, v) = node.http("POST", "/v1/boards/b/scores", Some(&body));
        assert_eq!(st, 200, "{v}");
    };
    for (m, sc) in [("a", 10.0), ("b", 20.0), ("c", 30.0), ("me", 5.0)] {
        post(m, sc);
    }
    // Nobody listens yet: the writes appended nothing.
    let port = redis.nodes[0].port;
    let exists = |key: &str| {
        support::redis::cli(port, &["EXISTS", key])
            .trim()
            .to_string()
    };
    assert_eq!(
        (exists("{b}:ev"), exists("{b}:el")),
        ("0".into(), "0".into())
    );
    let all = sse(&node, "/v1/boards/b/events", None);
    assert_eq!(
        exists("{b}:el"),
        "1",
        "the subscriber's node marks the board listened"
    );
    let top = sse(&node, "/v1/boards/b/events?top=3&snapshot=true", None);
    let mem = sse(
        &node,
        "/v1/boards/b/events?members=me,ghost&snapshot=true",
        None,
    );

    let snap = &take(&top, 1)[0];
    assert_eq!(snap.event, "snapshot");
    assert_eq!(snap.data["exists"], true);
    assert_eq!(snap.data["size"], 4);
    let names: Vec<&str> = snap.data["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["member"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "b", "a"]);
    let snap = &take(&mem, 1)[0];
    assert_eq!(snap.event, "snapshot");
    assert_eq!(snap.data["members"][0]["member"], "ghost");
    assert_eq!(snap.data["members"][0]["rank"], Value::Null);
    assert_eq!(snap.data["members"][1]["member"], "me");
    assert_eq!(snap.data["members"][1]["rank"], 4);

    // d enters second: a leaves the top 3, b moves down, me is overtaken.
    post("d", 25.0);
    let ev = take(&all, 1);
    assert_eq!(whats(&ev), [w("change", "d")]);
    assert_eq!(ev[0].data["rank"], 2);
    assert_eq!(ev[0].data["score"], 25.0);
    let first_change = ev[0].id.clone();
    let ev = take(&top, 3);
    assert_eq!(
        whats(&ev),
        [w("leave", "a"), w("enter", "d"), w("move", "b")]
    );
    assert_eq!(ev[0].data["previous_rank"], 3);
    assert_eq!(
        (ev[1].data["rank"].clone(), ev[2].data["rank"].clone()),
        (json!(2), json!(3))
    );
    assert_eq!(ev[2].data["previous_rank"], 2);
    ids_grow(&ev);
    let top_after_first = ev[2].id.clone();
    let ev = take(&mem, 1);
    assert_eq!(whats(&ev), [w("member", "me")]);
    assert_eq!(ev[0].data["rank"], 5);
    assert_eq!(ev[0].data["previous_rank"], 4);
    assert_eq!(ev[0].data["by"], "d");

    // me jumps to first.
    post("me", 100.0);
    assert_eq!(whats(&take(&all, 1)), [w("change", "me")]);
    let ev = take(&top, 4);
    assert_eq!(
        whats(&ev),
        [
            w("leave", "b"),
            w("enter", "me"),
            w("move", "c"),
            w("move", "d")
        ]
    );
    ids_grow(&ev);
    let ev = take(&mem, 1);
    assert_eq!(ev[0].data["rank"], 1);
    assert_eq!(ev[0].data["score"], 100.0);
    assert_eq!(ev[0].data["previous_score"], 5.0);
    assert!(ev[0].data.get("by").is_none(), "{:?}", ev[0].data);

    // c removed: b comes back into the top places; me keeps its rank.
    let (st, _) = node.http("DELETE", "/v1/boards/b/members/c", None);
    assert_eq!(st, 200);
    let ev = take(&all, 1);
    assert_eq!(whats(&ev), [w("change", "c")]);
    assert_eq!(ev[0].data["removed"], true);
    let ev = take(&top, 3);
    assert_eq!(
        whats(&ev),
        [w("leave", "c"), w("move", "d"), w("enter", "b")]
    );
    quiet(&mem, Duration::from_millis(300));

    // A resume after the first change: the two after it, then new ones,
    // each once.
    let again = sse(&node, "/v1/boards/b/events", Some(&first_change));
    let ev = take(&again, 2);
    assert_eq!(whats(&ev), [w("change", "me"), w("change", "c")]);
    assert!(event_id(&ev[0].id) > event_id(&first_change));
    post("e", 1.0);
    let ev2 = take(&again, 1);
    assert_eq!(whats(&ev2), [w("change", "e")]);
    assert_eq!(whats(&take(&all, 1)), [w("change", "e")]);
    ids_grow(&[ev, ev2].concat());
    quiet(&again, Duration::from_millis(300));
    // The top places' resume: the second and third writes' events.
    let top2 = sse(&node, "/v1/boards/b/events?top=3", Some(&top_after_first));
    assert_eq!(
        whats(&take(&top2, 7)),
        [
            w("leave", "b"),
            w("enter", "me"),
            w("move", "c"),
            w("move", "d"),
            w("leave", "c"),
            w("move", "d"),
            w("enter", "b"),
        ]
    );
    // An id the node never gave: reload, then the snapshot.
    let old = sse(&node, "/v1/boards/b/events?top=3", Some("5-0"));
    let ev = take(&old, 2);
    assert_eq!(
        (ev[0].event.as_str(), ev[1].event.as_str()),
        ("reload", "snapshot")
    );
    assert_eq!(ev[0].data["after"], "5-0");

    // Lifecycle: a reset reaches every filter, with the archive's name,
    // then the top places and watched members are told they are gone.
    let (st, v) = node.http("POST", "/v1/boards/b/reset", None);
    assert_eq!(st, 200, "{v}");
    let archive = v["archive"].as_str().unwrap().to_string();
    let ev = take(&all, 1);
    assert_eq!(ev[0].event, "reset");
    assert_eq!(ev[0].data["archive"], archive.as_str());
    let ev = take(&top, 4);
    assert_eq!(ev[0].event, "reset");
    assert_eq!(
        whats(&ev[1..]),
        [w("leave", "me"), w("leave", "d"), w("leave", "b")]
    );
    let ev = take(&mem, 2);
    assert_eq!(ev[0].event, "reset");
    assert_eq!(whats(&ev[1..]), [w("member", "me")]);
    assert_eq!(ev[1].data["rank"], Value::Null);
    assert_eq!(ev[1].data["previous_rank"], 1);
    // A config change and a deletion.
    let (st, _) = node.http(
        "PUT",
        "/v1/boards/b",
        Some(r#"{"order":"asc","confirm_rerank":true}"#),
    );
    assert_eq!(st, 200);
    let ev = take(&all, 1);
    assert_eq!(ev[0].event, "config");
    assert_eq!(ev[0].data["config"]["order"], "asc");
    let (st, _) = node.http("DELETE", "/v1/boards/b", None);
    assert!(st == 200 || st == 204, "{st}");
    assert_eq!(take(&all, 1)[0].event, "deleted");
    assert_eq!(take(&mem, 2)[1].event, "deleted");
}

#[test]
fn live_events_cross_nodes_on_a_cluster() {
    let cluster = Redis::cluster(false);
    let a = Node::on(&cluster.url());
    let b = Node::on(&cluster.url());
    // Boards whose tags hash to different masters.
    let weekly = sse(&b, "/v1/boards/weekly/events", None);
    let daily = sse(&b, "/v1/boards/daily/events?top=2", None);
    for i in 0..8 {
        let body = json!({"member": format!("m{i}"), "score": i}).to_string();
        let (st, v) = a.http("POST", "/v1/boards/weekly/scores", Some(&body));
        assert_eq!(st, 200, "{v}");
    }
    for (m, sc) in [("x", 1), ("y", 2), ("z", 3)] {
        let body = json!({"member": m, "score": sc}).to_string();
        let (st, v) = a.http("POST", "/v1/boards/daily/scores", Some(&body));
        assert_eq!(st, 200, "{v}");
    }
    // Every write through A, in A's order, on B (the first created the
    // board).
    assert_eq!(take(&weekly, 1)[0].event, "created");
    let ev = take(&weekly, 8);
    ids_grow(&ev);
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(e.what(), w("change", &format!("m{i}")), "{e:?}");
        assert_eq!(e.data["score"], i as f64);
    }
    // The top two as told by B's events: z then y, whatever the writes
    // B read together.
    let mut places: std::collections::BTreeMap<String, u64> = Default::default();
    let mut seen = Vec::new();
    while places.len() != 2 || places.get("z") != Some(&1) || places.get("y") != Some(&2) {
        let e = take(&daily, 1).remove(0);
        let m = e.data["member"].as_str().unwrap_or("").to_string();
        match e.event.as_str() {
            "enter" | "move" => {
                places.insert(m, e.data["rank"].as_u64().unwrap());
            }
            "leave" => {
                places.remove(&m);
            }
            "created" => {}
            other => panic!("unexpected {other}"),
        }
        seen.push(e);
    }
    ids_grow(&seen);
    quiet(&daily, Duration::from_millis(300));
    // And back: B's write reaches a subscriber of A.
    let on_a = sse(&a, "/v1/boards/weekly/events?members=m0", None);
    let (st, _) = b.http(
        "POST",
        "/v1/boards/weekly/scores",
        Some(r#"{"member":"m0","score":100}"#),
    );
    assert_eq!(st, 200);
    let ev = take(&on_a, 1);
    assert_eq!(ev[0].what(), w("member", "m0"));
    assert_eq!(ev[0].data["rank"], 1);
    assert_eq!(ev[0].data["previous_rank"], 8);
    assert_eq!(take(&weekly, 1)[0].what(), w("change", "m0"));
}

/// Writes made while the listened marker was gone are not in the stream:
/// the node that finds it gone at its next refresh (every 20 s) tells
/// every change to reload and compares the top places with the board.
#[test]
fn live_events_on_redis_reload_after_unrecorded_writes() {
    let redis = Redis::single(false);
    let node = Node::on(&redis.url());
    let post = |m: &str, sc: f64| {
        let body = json!({"member": m, "score": sc}).to_string();
        let (st, v) = node.http("POST", "/v1/boards/g/scores", Some(&body));
        assert_eq!(st, 200, "{v}");
    };
    post("a", 1.0);
    let all = sse(&node, "/v1/boards/g/events", None);
    let top = sse(&node, "/v1/boards/g/events?top=1", None);
    let port = redis.nodes[0].port;
    support::redis::cli(port, &["DEL", "{g}:el"]);
    post("b", 2.0);
    let ev = all
        .recv_timeout(Duration::from_secs(30))
        .expect("a reload within the marker's refresh");
    assert_eq!(ev.event, "reload", "{ev:?}");
    let ev = take(&top, 2);
    assert_eq!(whats(&ev), [w("leave", "a"), w("enter", "b")]);
    // Appended again from then on.
    post("c", 3.0);
    assert_eq!(whats(&take(&all, 1)), [w("change", "c")]);
}
