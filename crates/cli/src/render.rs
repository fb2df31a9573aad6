//! What the client commands show: the `top` and `search` tables, the
//! `submit` line, scores and names for people, the server's JSON as is,
//! and the progress bars of long transfers on stderr.

use std::io::{self, Read, Write};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use podium_core::api::{
    AroundOut, BoardOut, BoardsOut, EntryInfoOut, EntryOut, Score, SearchOut, SubmitOut, TopOut,
};

/// A score for people: `inf`, `-inf`, plain decimals, or exponent form for
/// the very large and very small.
pub fn fmt_score(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e16).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Member ids and names may hold anything; control characters would break
/// the table, so they are shown escaped.
fn printable(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.escape_debug().to_string()
    } else {
        s.to_string()
    }
}

/// Entries as an aligned table (RANK, MEMBER, SCORE, then NAME when any
/// has one and DATA when asked), or `empty` when there are none.
fn render_entries(entries: &[EntryOut], with_data: bool, empty: &str) -> String {
    if entries.is_empty() {
        return format!("{empty}\n");
    }
    let with_names = entries.iter().any(|e| e.name.is_some());
    // A board with sort keys: a column per key, named by it, for SCORE.
    let keys: Vec<String> = entries
        .iter()
        .find_map(|e| e.scores.as_ref())
        .map(|s| s.0.iter().map(|(k, _)| k.to_uppercase()).collect())
        .unwrap_or_default();
    let mut header = vec!["RANK".to_string(), "MEMBER".into()];
    if keys.is_empty() {
        header.push("SCORE".into());
    }
    header.extend(keys.iter().cloned());
    if with_names || with_data {
        header.push(if with_names {
            "NAME".into()
        } else {
            String::new()
        });
    }
    if with_data {
        header.push("DATA".into());
    }
    let mut rows: Vec<Vec<String>> = vec![header];
    for e in entries {
        let mut r = vec![e.rank.to_string(), printable(&e.member)];
        match &e.scores {
            Some(s) if !keys.is_empty() => r.extend(s.0.iter().map(|(_, v)| fmt_num(*v))),
            _ if !keys.is_empty() => r.extend(keys.iter().map(|_| String::new())),
            _ => r.push(fmt_score(e.score.0)),
        }
        if with_names || with_data {
            r.push(e.name.as_deref().map(printable).unwrap_or_default());
        }
        if with_data {
            r.push(e.data.as_ref().map(|d| d.to_string()).unwrap_or_default());
        }
        rows.push(r);
    }
    let cols = rows[0].len();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols).map(width).collect();
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i] - cell.chars().count();
            // Numbers right-aligned, text left-aligned; the last column
            // is not padded.
            if i == 0 || i == 2 {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if i + 1 < cols {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The `top` table, footer included.
pub fn render_top(t: &TopOut) -> String {
    let mut out = render_entries(&t.entries, false, "(no entries on this page)");
    out.push_str(&format!(
        "page {} of {} ({} members, ranking {})\n",
        t.page, t.total_pages, t.total, t.ranking
    ));
    out
}

/// The `around` table, with where the member stands.
pub fn render_around(a: &AroundOut) -> String {
    let mut out = render_entries(&a.entries, false, "(no entries)");
    out.push_str(&format!(
        "{} is rank {} of {} (ranking {})\n",
        printable(&a.member),
        a.rank,
        a.total,
        a.ranking
    ));
    out
}

/// A member's entry, a field a line.
pub fn render_entry(e: &EntryInfoOut) -> String {
    let x = &e.entry;
    let mut out = format!("member      {}\n", printable(&x.member));
    out.push_str(&format!("rank        {} of {}\n", x.rank, e.total));
    match &x.scores {
        Some(s) => {
            for (k, v) in &s.0 {
                out.push_str(&format!("{:<12}{}\n", printable(k), fmt_num(*v)));
            }
        }
        None => out.push_str(&format!("score       {}\n", fmt_score(x.score.0))),
    }
    if let Some(n) = &x.name {
        out.push_str(&format!("name        {}\n", printable(n)));
    }
    out.push_str(&format!("percentile  {}\n", e.percentile));
    out.push_str(&format!("page        {}\n", e.page));
    if let Some(d) = &x.data {
        out.push_str(&format!("data        {d}\n"));
    }
    out
}

/// The board list: BOARD, MEMBERS, MEMORY, and the board an archive
/// archives.
pub fn render_boards(b: &BoardsOut) -> String {
    if b.boards.is_empty() {
        return "(no boards)\n".into();
    }
    let mut rows = vec![vec![
        "BOARD".to_string(),
        "MEMBERS".into(),
        "MEMORY".into(),
        "ARCHIVE OF".into(),
    ]];
    for x in &b.boards {
        rows.push(vec![
            printable(&x.board),
            x.members.to_string(),
            fmt_bytes(x.heap_bytes),
            x.archive_of.as_deref().map(printable).unwrap_or_default(),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line = format!(
            "{:<w0$}  {:>w1$}  {:>w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A board's description, a field a line.
pub fn render_board(b: &BoardOut) -> String {
    let mut out = format!("board       {}\n", printable(&b.board));
    out.push_str(&format!("members     {}\n", b.members));
    out.push_str(&format!("memory      {}\n", fmt_bytes(b.heap_bytes)));
    if let Some(of) = &b.archive_of {
        out.push_str(&format!("archive of  {} (read-only)\n", printable(of)));
    }
    if let Some(p) = &b.period {
        out.push_str(&format!("period      {p}\n"));
    }
    if let Some(n) = &b.next_reset {
        out.push_str(&format!("next reset  {n}\n"));
    }
    out.push_str(&format!("config      {}\n", b.config));
    out
}

/// Bytes for people: B, KiB, MiB, GiB.
fn fmt_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The `search` table, with how many members match in all and which of
/// them are shown.
pub fn render_search(s: &SearchOut, with_data: bool) -> String {
    let empty = if s.total == 0 {
        "(no matches)"
    } else {
        "(no matches on this page)"
    };
    let mut out = render_entries(&s.entries, with_data, empty);
    let shown = if s.entries.is_empty() {
        String::new()
    } else {
        format!(
            ", showing {}–{}",
            s.offset + 1,
            s.offset + s.entries.len() as u64
        )
    };
    let plural = if s.total == 1 { "" } else { "es" };
    out.push_str(&format!(
        "{} match{plural} for {:?}{shown} (ranking {})\n",
        s.total, s.query, s.ranking
    ));
    out
}

/// The `submit` summary line.
/// A sort key's value: an integer in full, a float as a score.
fn fmt_num(n: podium_core::api::Num) -> String {
    match n {
        podium_core::api::Num::Int(i) => i.to_string(),
        podium_core::api::Num::Float(x) => fmt_score(x),
    }
}

pub fn render_submit(s: &SubmitOut) -> String {
    if let (Some(scores), Some(r)) = (&s.scores, s.rank) {
        let vals: Vec<String> = scores
            .0
            .iter()
            .map(|(k, v)| format!("{k} {}", fmt_num(*v)))
            .collect();
        let mut line = format!("{}: {}, rank {r}", s.member, vals.join(", "));
        if !s.changed {
            line.push_str(" (unchanged)");
        }
        return line;
    }
    let mut line = match (s.score, s.rank) {
        (Some(Score(v)), Some(r)) => format!("{}: score {}, rank {}", s.member, fmt_score(v), r),
        (Some(Score(v)), None) => format!("{}: score {}", s.member, fmt_score(v)),
        (None, _) if s.evicted > 0 => format!("{}: evicted (the board is full)", s.member),
        (None, _) => format!("{}: not on the board", s.member),
    };
    if !s.changed {
        line.push_str(" (unchanged)");
    }
    line
}

pub fn print_raw(body: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(body)?;
    if !body.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// Writes `text` to stdout and flushes it.
pub fn print_text(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

pub fn draw_target(quiet: bool) -> ProgressDrawTarget {
    if quiet {
        ProgressDrawTarget::hidden()
    } else {
        // Hidden by indicatif itself when stderr is not a terminal.
        ProgressDrawTarget::stderr()
    }
}

pub fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the template is valid")
        .progress_chars("=> ")
}

/// Counts the bytes read through it on a progress bar.
pub struct Counted<R> {
    pub inner: R,
    pub pb: ProgressBar,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pb.inc(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_for_people() {
        assert_eq!(fmt_score(1.0), "1");
        assert_eq!(fmt_score(-2.5), "-2.5");
        assert_eq!(fmt_score(0.0), "0");
        assert_eq!(fmt_score(f64::INFINITY), "inf");
        assert_eq!(fmt_score(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_score(1e300), "1e300");
        assert_eq!(fmt_score(1.5e-9), "1.5e-9");
    }

    fn entry(member: &str, score: f64, rank: u64, name: Option<&str>) -> EntryOut {
        EntryOut {
            member: member.into(),
            score: Score(score),
            scores: None,
            rank,
            name: name.map(str::to_string),
            data: None,
        }
    }

    #[test]
    fn top_table() {
        let t = TopOut {
            board: "b".into(),
            ranking: "desc".into(),
            page: 1,
            page_size: 25,
            total: 11,
            total_pages: 1,
            entries: vec![
                entry("alice", 100.0, 1, Some("Alice")),
                entry("bob\tx", 9.5, 10, None),
            ],
        };
        assert_eq!(
            render_top(&t),
            "RANK  MEMBER  SCORE  NAME\n   1  alice     100  Alice\n  10  bob\\tx    9.5\n\
             page 1 of 1 (11 members, ranking desc)\n"
        );
        let empty = TopOut {
            entries: vec![],
            total: 0,
            total_pages: 0,
            ..t
        };
        assert_eq!(
            render_top(&empty),
            "(no entries on this page)\npage 1 of 0 (0 members, ranking desc)\n"
        );
    }

    #[test]
    fn search_table() {
        let mut bob = entry("bob", 9.5, 10, None);
        bob.data = Some(serde_json::json!({"team": "red"}));
        let s = SearchOut {
            board: "b".into(),
            ranking: "unique".into(),
            query: "al".into(),
            total: 30,
            offset: 5,
            limit: 2,
            entries: vec![entry("alice", 100.0, 1, Some("Alice")), bob],
        };
        assert_eq!(
            render_search(&s, false),
            "RANK  MEMBER  SCORE  NAME\n   1  alice     100  Alice\n  10  bob       9.5\n\
             30 matches for \"al\", showing 6–7 (ranking unique)\n"
        );
        assert_eq!(
            render_search(&s, true),
            "RANK  MEMBER  SCORE  NAME   DATA\n   1  alice     100  Alice\n  10  bob       9.5         {\"team\":\"red\"}\n\
             30 matches for \"al\", showing 6–7 (ranking unique)\n"
        );
        let none = SearchOut {
            entries: vec![],
            total: 0,
            ..s.clone()
        };
        assert_eq!(
            render_search(&none, false),
            "(no matches)\n0 matches for \"al\" (ranking unique)\n"
        );
        let past = SearchOut {
            entries: vec![],
            total: 1,
            ..s
        };
        assert_eq!(
            render_search(&past, false),
            "(no matches on this page)\n1 match for \"al\" (ranking unique)\n"
        );
    }

    #[test]
    fn submit_line() {
        let mut s = SubmitOut {
            member: "alice".into(),
            score: Some(Score(42.0)),
            rank: Some(3),
            previous: None,
            changed: true,
            created: true,
            applied: true,
            evicted: 0,
            scores: None,
            previous_scores: None,
        };
        assert_eq!(render_submit(&s), "alice: score 42, rank 3");
        let keyed = SubmitOut {
            scores: Some(podium_core::api::NamedScores(vec![
                ("laps".into(), podium_core::api::Num::Int(10)),
                ("time".into(), podium_core::api::Num::Float(61.5)),
            ])),
            ..s.clone()
        };
        assert_eq!(render_submit(&keyed), "alice: laps 10, time 61.5, rank 3");
        s.changed = false;
        assert_eq!(render_submit(&s), "alice: score 42, rank 3 (unchanged)");
        s.score = None;
        s.rank = None;
        assert_eq!(render_submit(&s), "alice: not on the board (unchanged)");
    }
}
