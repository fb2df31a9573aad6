//! A Server-Sent-Events reader for the live-event tests: reqwest's blocking
//! client on a thread of its own, handing each message over a channel, so
//! a test fails on a timeout and never hangs.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::thread;

use serde_json::Value;

/// One SSE message: `id`, `event`, and `data` parsed.
#[derive(Debug, Clone)]
pub struct Msg {
    pub id: String,
    pub event: String,
    pub data: Value,
}

impl Msg {
    /// `(type, member)`, to compare a run of events at a glance.
    pub fn what(&self) -> (String, String) {
        (
            self.event.clone(),
            self.data["member"].as_str().unwrap_or("").to_string(),
        )
    }
}

/// Opens the event stream at `url` (with `Last-Event-ID` when given).
/// Returns once the server has answered 200 `text/event-stream`, so the
/// subscription is registered.
pub fn open(url: &str, last_id: Option<&str>) -> mpsc::Receiver<Msg> {
    let client = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .unwrap();
    let mut req = client.get(url);
    if let Some(id) = last_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().unwrap();
    assert_eq!(resp.status(), 200, "{url}");
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut r = BufReader::new(resp);
        let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end_matches('\n');
            if l.is_empty() {
                if !data.is_empty() {
                    let msg = Msg {
                        id: std::mem::take(&mut id),
                        event: std::mem::take(&mut event),
                        data: serde_json::from_str(&std::mem::take(&mut data)).unwrap(),
                    };
                    if tx.send(msg).is_err() {
                        return;
                    }
                }
                continue;
            }
            if let Some(v) = l.strip_prefix("id: ") {
                id = v.to_string();
            } else if let Some(v) = l.strip_prefix("event: ") {
                event = v.to_string();
            } else if let Some(v) = l.strip_prefix("data: ") {
                data = v.to_string();
            }
        }
    });
    rx
}
