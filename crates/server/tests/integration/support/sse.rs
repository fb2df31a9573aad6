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

/// Asks for the event stream at `url` and keeps it open: the status, and
/// the response holding the stream (dropped: the subscriber leaves).
pub fn subscribe(url: &str) -> (u16, reqwest::blocking::Response) {
    let client = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .unwrap();
    let resp = client.get(url).send().unwrap();
    (resp.status().as_u16(), resp)
}

/// The bounds on live-event filters of a server started with
/// `--events-max-filters-per-member 3 --events-max-filters-per-board 5`,
/// whose HTTP API is at `base` and whose board `b` holds member `hot`:
/// past a bound a new filter is refused in podium's words while
/// subscribers of existing filters still join, and the filters of
/// subscribers that left make room at once.
pub fn check_filter_bounds(base: &str) {
    let url = |q: &str| format!("{base}/v1/boards/b/events?{q}");
    let mut held = Vec::new();
    for i in 0..3 {
        let (status, r) = subscribe(&url(&format!("members=hot,u{i}")));
        assert_eq!(status, 200, "filter {i}");
        held.push(r);
    }
    let (status, r) = subscribe(&url("members=hot,u9"));
    assert_eq!(status, 503, "a fourth filter watching hot");
    let body: Value = r.json().unwrap();
    assert_eq!(body["error"]["code"], "too_many_clients", "{body}");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("events_max_filters_per_member"), "{msg}");
    // A subscriber of a filter in use joins it.
    let (status, again) = subscribe(&url("members=hot,u0"));
    assert_eq!(status, 200);
    held.push(again);
    // Filters of other members, up to the board's bound.
    for q in ["members=x1", "top=3"] {
        let (status, r) = subscribe(&url(q));
        assert_eq!(status, 200, "{q}");
        held.push(r);
    }
    let (status, r) = subscribe(&url("members=x2"));
    assert_eq!(status, 503, "a sixth filter of the board");
    let body: Value = r.json().unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("events_max_filters_per_board"), "{msg}");
    // Every subscriber leaves: their filters make room for new ones.
    drop(held);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut kept = Vec::new();
    for i in 10..13 {
        loop {
            let (status, r) = subscribe(&url(&format!("members=hot,u{i}")));
            if status == 200 {
                kept.push(r);
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "filters of subscribers that left still hold their place"
            );
            thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
