//! The MessagePack-RPC frontend (docs/spec.md §4) of a real `podium serve`, driven
//! over TCP by a small client written here with rmpv (the Python `msgpack`
//! package drives it in the `rpc_python` tests): every method,
//! the same results as the HTTP API, errors, auth scopes, notifications,
//! deep pipelining, hostile frames, a large export read slowly, live event
//! subscriptions, and the durability of an acknowledged write across
//! `kill -9`.

use crate::support;

mod events;
mod methods;
mod pipelining;

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use rmpv::Value;
use serde_json::{json, Value as Json};
use support::rpc::Podium;

/// A test must fail, not hang, when the server stops answering.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

impl Podium {
    fn client(&self) -> Client {
        Client::connect(&self.rpc)
    }

    /// GET `path` on the HTTP API, as JSON.
    fn get(&self, path: &str) -> Json {
        let r = reqwest::blocking::Client::new()
            .get(format!("{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .send()
            .expect("HTTP GET");
        let text = r.text().expect("HTTP body");
        serde_json::from_str(&text).unwrap_or(Json::String(text))
    }

    fn get_text(&self, path: &str) -> String {
        reqwest::blocking::Client::new()
            .get(format!("{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .send()
            .expect("HTTP GET")
            .text()
            .expect("HTTP body")
    }

    fn post(&self, path: &str, body: &Json) -> Json {
        let r = reqwest::blocking::Client::new()
            .post(format!("{}{}", self.http, path))
            .timeout(IO_TIMEOUT)
            .json(body)
            .send()
            .expect("HTTP POST");
        r.json().expect("HTTP JSON body")
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
