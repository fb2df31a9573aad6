//! `podium watch BOARD --top N`: a live view of a board's best places
//! (and of watched members), kept current by the board's event stream
//! (Server-Sent Events of the HTTP API, docs/spec.md §4 "Live events").
//! On a terminal the table is redrawn in place at each change; otherwise
//! (or with `--json`) each event is printed as one JSON line. A dropped
//! connection is resumed after the last event seen.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
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
    let mut view = View::default();
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
            if let Some(d) = l.strip_prefix("data: ") {
                data = d.to_string();
                continue;
            }
            if !l.is_empty() || data.is_empty() {
                continue;
            }
            let ev: Value = serde_json::from_str(&std::mem::take(&mut data))?;
            if let Some(id) = ev["id"].as_str() {
                last = Some(id.to_string());
            }
            view.apply(&ev);
            let mut out = std::io::stdout().lock();
            if tty {
                write!(out, "\x1b[H\x1b[2J{}", view.render(&a.board, a.top))?;
            } else {
                writeln!(out, "{ev}")?;
            }
            out.flush()?;
            seen += 1;
            if a.count.is_some_and(|n| seen >= n) {
                return Ok(());
            }
            if ev["type"] == "lagged" {
                break;
            }
        }
        // The stream ended (server restart, network): resume after the
        // last event seen.
        std::thread::sleep(Duration::from_secs(1));
    }
}
