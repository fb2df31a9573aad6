//! `podium watch BOARD --top N`: a live view of a board's best places
//! (and of watched members), kept current by the board's event stream
//! (Server-Sent Events of the HTTP API, docs/spec.md §4 "Live events").
//! On a terminal the table is redrawn in place at each change; otherwise
//! (or with `--json`) each event is printed as one JSON line. A dropped
//! connection is resumed after the last event seen.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::transport::{base_url, board_url, Conn};

/// `podium watch BOARD`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// The board to watch.
    pub board: String,
    /// How many of the best places to show.
    #[arg(long, default_value_t = 10)]
    pub top: u32,
    /// Members to follow wherever they rank (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub members: Vec<String>,
    /// Print each event as a JSON line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many events (the snapshot counts); none: until
    /// interrupted.
    #[arg(long)]
    pub count: Option<u64>,
}

/// What the view shows, rebuilt from the events only.
#[derive(Default)]
struct View {
    top: HashMap<String, Value>,
    members: HashMap<String, Value>,
    note: String,
}

impl View {
    fn apply(&mut self, ev: &Value) {
        let member = ev["member"].as_str().unwrap_or("").to_string();
        match ev["type"].as_str().unwrap_or("") {
            "snapshot" => {
                self.top = by_member(&ev["top"]);
                self.members = by_member(&ev["members"]);
            }
            "enter" | "move" => {
                self.top.insert(member, ev.clone());
            }
            "leave" => {
                self.top.remove(&member);
            }
            "member" => {
                if let Some(by) = ev["by"].as_str() {
                    self.note = format!(
                        "{member}: #{} → #{} (by {by})",
                        ev["previous_rank"], ev["rank"]
                    );
                }
                self.members.insert(member, ev.clone());
            }
            "reset" => self.note = format!("reset: archived as {}", ev["archive"]),
            "deleted" => self.note = "the board was deleted".into(),
            "lagged" => self.note = "fell behind: reconnecting".into(),
            _ => {}
        }
    }

    fn render(&self, board: &str, top: u32) -> String {
        let mut rows: Vec<&Value> = self.top.values().collect();
        rows.sort_by_key(|e| e["rank"].as_u64().unwrap_or(u64::MAX));
        let mut out = format!("{board} — top {top} (live)\n\n");
        out.push_str(&format!(
            "{:>6}  {:<24} {:>14}  {}\n",
            "RANK", "MEMBER", "SCORE", "NAME"
        ));
        let line = |out: &mut String, e: &Value| {
            let rank = e["rank"]
                .as_u64()
                .map_or("-".to_string(), |r| r.to_string());
            out.push_str(&format!(
                "{:>6}  {:<24} {:>14}  {}\n",
                rank,
                e["member"].as_str().unwrap_or(""),
                e["score"].to_string(),
                e["name"].as_str().unwrap_or("")
            ));
        };
        for e in rows {
            line(&mut out, e);
        }
        if !self.members.is_empty() {
            out.push_str("\nwatched:\n");
            let mut ms: Vec<&String> = self.members.keys().collect();
            ms.sort();
            for m in ms {
                line(&mut out, &self.members[m]);
            }
        }
        if !self.note.is_empty() {
            out.push_str(&format!("\n{}\n", self.note));
        }
        out
    }
}

/// The write an event belongs to: its id's LSN (`LSN-N`), shared by every
/// event of one write.
fn write_of(ev: &Value) -> Option<String> {
    ev["id"]
        .as_str()
        .map(|id| id.split('-').next().unwrap_or(id).to_string())
}

/// The view and when to draw it: once per write, after all its events.
/// Between two events of one write the view is half moved (a member
/// entering at 1 before the one it pushed down has moved), so it is drawn
/// only when an event of another write comes, or no more come for a
/// moment.
#[derive(Default)]
struct Drawer {
    view: View,
    /// The write of the events applied and not drawn yet.
    pending: Option<Option<String>>,
}

impl Drawer {
    /// Applies `ev`; returns the frame of the write before it, if `ev`
    /// starts another.
    fn push(&mut self, ev: &Value, board: &str, top: u32) -> Option<String> {
        let write = write_of(ev);
        let frame = match &self.pending {
            Some(w) if *w != write || w.is_none() => Some(self.view.render(board, top)),
            _ => None,
        };
        self.view.apply(ev);
        self.pending = Some(write);
        frame
    }

    /// The frame of the events applied and not drawn yet.
    fn flush(&mut self, board: &str, top: u32) -> Option<String> {
        self.pending.take().map(|_| self.view.render(board, top))
    }
}

/// The views drawn for `events` as they arrive one after another.
#[cfg(test)]
fn frames(board: &str, top: u32, events: &[Value]) -> Vec<String> {
    let mut d = Drawer::default();
    let mut out: Vec<String> = events
        .iter()
        .filter_map(|e| d.push(e, board, top))
        .collect();
    out.extend(d.flush(board, top));
    out
}

/// A snapshot's list of entries, by member.
fn by_member(list: &Value) -> HashMap<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["member"].as_str().unwrap_or("").to_string(), e.clone()))
        .collect()
}

/// `podium watch BOARD`: until interrupted, or `--count` events.
pub fn watch(a: &WatchArgs) -> Result<()> {
    let base = base_url(a.conn.http.as_deref().unwrap_or("http://127.0.0.1:7070"))?;
    let mut url = format!(
        "{}?top={}&snapshot=true",
        board_url(&base, &a.board, "/events")?,
        a.top
    );
    for m in &a.members {
        url.push_str("&member=");
        url.push_str(&crate::transport::segment(m));
    }
    let client = reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(None)
        .build()?;
    let tty = std::io::stdout().is_terminal() && !a.json;
    let mut drawer = Drawer::default();
    let draw = |frame: Option<String>| -> Result<()> {
        if let Some(f) = frame {
            let mut out = std::io::stdout().lock();
            write!(out, "\x1b[H\x1b[2J{f}")?;
            out.flush()?;
        }
        Ok(())
    };
    let mut last: Option<String> = None;
    let mut seen = 0u64;
    loop {
        let mut req = client.get(&url);
        if let Some(k) = &a.conn.api_key {
            req = req.bearer_auth(k);
        }
        if let Some(id) = &last {
            req = req.header("Last-Event-ID", id);
        }
        let resp = req.send().with_context(|| {
            format!("cannot reach podium's HTTP API at {base}: is `podium serve` running?")
        })?;
        if !resp.status().is_success() {
            let status = resp.status().as_u16();
            let body = resp.text().unwrap_or_default();
            return Err(crate::transport::server_error(status, body.as_bytes()).into());
        }
        let rx = read_events(resp);
        loop {
            // Waiting for the rest of a write's events, briefly; else for
            // the stream, which says it is alive at least every 15 s.
            let wait = if drawer.pending.is_some() {
                SAME_WRITE
            } else {
                STALLED
            };
            let ev = match rx.recv_timeout(wait) {
                Ok(Some(Sse::Event(ev))) => ev,
                Ok(Some(Sse::Alive)) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) if drawer.pending.is_some() => {
                    draw(drawer.flush(&a.board, a.top))?;
                    continue;
                }
                // Ended, failed or silent too long: resume.
                _ => break,
            };
            if let Some(id) = ev["id"].as_str() {
                last = Some(id.to_string());
            }
            if tty {
                draw(drawer.push(&ev, &a.board, a.top))?;
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{ev}")?;
                out.flush()?;
            }
            seen += 1;
            if a.count.is_some_and(|n| seen >= n) {
                return draw(drawer.flush(&a.board, a.top));
            }
            if ev["type"] == "lagged" {
                break;
            }
        }
        draw(drawer.flush(&a.board, a.top))?;
        // The stream ended (server restart, network): resume after the
        // last event seen.
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// How long the rest of a write's events may take to arrive (they are
/// sent together) before the view is drawn.
const SAME_WRITE: Duration = Duration::from_millis(50);
/// A stream silent this long (three of the server's keep-alives) is taken
/// for dead and resumed.
const STALLED: Duration = Duration::from_secs(45);

/// What the stream's reader hands on.
enum Sse {
    Event(Value),
    /// A line that is no event (a keep-alive comment, an `id:` or `event:`
    /// line): the stream is alive.
    Alive,
}

/// Reads the stream on a thread of its own, so the view can wait for the
/// next event with a time limit; `None` when the stream ends.
fn read_events(resp: reqwest::blocking::Response) -> mpsc::Receiver<Option<Sse>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(resp);
        let mut data = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            match lines.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let l = line.trim_end_matches(['\n', '\r']);
            let msg = if let Some(d) = l.strip_prefix("data: ") {
                data = d.to_string();
                Sse::Alive
            } else if !l.is_empty() || data.is_empty() {
                Sse::Alive
            } else {
                match serde_json::from_str(&std::mem::take(&mut data)) {
                    Ok(ev) => Sse::Event(ev),
                    Err(_) => Sse::Alive,
                }
            };
            if tx.send(Some(msg)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ranks(frame: &str) -> Vec<u64> {
        frame
            .lines()
            .take_while(|l| !l.starts_with("watched"))
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    }

    /// One write moves three members (a newcomer at 1 pushes the others
    /// down): drawn once, after all its events, never with two members at
    /// one rank between them.
    #[test]
    fn a_write_is_drawn_once_with_distinct_ranks() {
        let e = |id: &str, ty: &str, m: &str, rank: u64, score: f64| json!({"id": id, "type": ty, "member": m, "rank": rank, "score": score});
        let events = [
            json!({"id": "7-0", "type": "snapshot", "top": [
                {"member": "a", "rank": 1, "score": 20.0},
                {"member": "b", "rank": 2, "score": 10.0}], "members": []}),
            e("8-0", "enter", "c", 1, 30.0),
            e("8-1", "move", "a", 2, 20.0),
            e("8-2", "move", "b", 3, 10.0),
            e("9-0", "move", "b", 1, 40.0),
            e("9-1", "move", "c", 2, 30.0),
            e("9-2", "move", "a", 3, 20.0),
        ];
        let frames = frames("lb", 3, &events);
        assert_eq!(frames.len(), 3, "one frame per write: {frames:#?}");
        for f in &frames {
            let mut r = ranks(f);
            let n = r.len();
            r.dedup();
            assert_eq!(r.len(), n, "a rank shown twice:\n{f}");
        }
        assert_eq!(ranks(&frames[2]), [1, 2, 3]);
        assert!(frames[2].contains("b") && frames[2].lines().nth(3).unwrap().contains(" b "));
    }
}
