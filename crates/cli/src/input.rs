//! The input of `podium import`: its format (NDJSON or CSV), its records
//! (lines, or CSV records whose quoted line breaks do not end them), and
//! each record as the MessagePack entry an RPC `import` call carries.

use std::io::{self, BufRead};
use std::path::Path;

use anyhow::{bail, Result};
use podium_core::api::ErrorBody;
use podium_core::csv::csv_fields;

/// The longest import record (line) accepted, as over HTTP.
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// An import's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ndjson,
    Csv,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Ndjson => "ndjson",
            Format::Csv => "csv",
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson",
            Format::Csv => "text/csv",
        }
    }

    /// `--format` if given, else from the file's extension (`.csv`;
    /// `.ndjson`, `.jsonl`, `.json`); a file named otherwise is NDJSON
    /// when its first line is a JSON object, and refused with the flag to
    /// give when it is not (a CSV file named `.txt` would otherwise fail
    /// line by line as malformed JSON).
    pub fn choose(flag: Option<&str>, file: &Path) -> Result<Format> {
        match flag.map(|f| f.trim().to_ascii_lowercase()) {
            Some(f) if f == "ndjson" || f == "jsonl" => Ok(Format::Ndjson),
            Some(f) if f == "csv" => Ok(Format::Csv),
            Some(f) => bail!("--format {f:?}: expected ndjson or csv"),
            None => {
                let ext = file
                    .extension()
                    .and_then(|e| e.to_str())
                    .map(str::to_ascii_lowercase);
                match ext.as_deref() {
                    Some("csv") => Ok(Format::Csv),
                    Some("ndjson" | "jsonl" | "json") => Ok(Format::Ndjson),
                    _ if file != Path::new("-") && !starts_with_json(file) => bail!(
                        "{}: its name does not say its format (.csv or .ndjson) and its first \
                         line is not a JSON object: give --format csv for CSV \
                         (member,score[,name]) or --format ndjson",
                        file.display()
                    ),
                    _ => Ok(Format::Ndjson),
                }
            }
        }
    }
}

/// Whether the file's first non-blank line starts a JSON object (also when
/// it cannot be read or is empty: opening it later says what is wrong).
fn starts_with_json(file: &Path) -> bool {
    let Ok(f) = std::fs::File::open(file) else {
        return true;
    };
    let mut head = Vec::new();
    if io::Read::read_to_end(&mut io::Read::take(f, 64 * 1024), &mut head).is_err() {
        return true;
    }
    let text = String::from_utf8_lossy(&head);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .is_none_or(|l| l.starts_with('{'))
}

/// Reads `rd` up to and including the next `\n` into `buf`; a line longer
/// than `limit` is consumed but not kept (`buf` is emptied). Returns the
/// bytes consumed (0 at the end of input) and whether the line was too long.
fn read_line_limited(
    rd: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<(usize, bool)> {
    let (mut consumed, mut over) = (0, false);
    loop {
        let avail = match rd.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok((consumed, over));
        }
        let (n, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if !over && buf.len() + n > limit + 2 {
            over = true;
            buf.clear();
            buf.shrink_to(64 << 10);
        }
        if !over {
            buf.extend_from_slice(&avail[..n]);
        }
        rd.consume(n);
        consumed += n;
        if done {
            return Ok((consumed, over));
        }
    }
}

/// Splits the input into records: lines, or for CSV, lines whose line
/// breaks inside quoted fields do not end the record.
pub struct Records<R> {
    rd: R,
    csv: bool,
    /// Number of the next line to read (1-based).
    line: u64,
}

/// A record: its first line's number and its bytes without the line
/// break, or `None` when it was longer than [`MAX_RECORD_BYTES`].
pub type Record = (u64, Option<Vec<u8>>);

impl<R: BufRead> Records<R> {
    /// The records of `rd`, CSV ones when `csv`, numbered from line 1.
    pub fn new(rd: R, csv: bool) -> Records<R> {
        Records { rd, csv, line: 1 }
    }

    pub fn next_record(&mut self) -> io::Result<Option<Record>> {
        let start = self.line;
        let mut rec = Vec::new();
        let mut over = false;
        // An odd number of quotes so far: the record goes on.
        let mut open_quote = false;
        loop {
            let from = rec.len();
            let limit = MAX_RECORD_BYTES.saturating_sub(from);
            let mut part = Vec::new();
            let (n, too_long) = read_line_limited(&mut self.rd, &mut part, limit)?;
            if n == 0 {
                if rec.is_empty() && !over {
                    return Ok(None);
                }
                break;
            }
            self.line += 1;
            over |= too_long;
            if over {
                // The rest of an over-long record ends at a line break.
                break;
            }
            rec.extend_from_slice(&part);
            if !self.csv || !rec.ends_with(b"\n") {
                break;
            }
            open_quote ^= part.iter().filter(|&&b| b == b'"').count() & 1 == 1;
            if !open_quote {
                break;
            }
        }
        if over {
            return Ok(Some((start, None)));
        }
        if rec.ends_with(b"\n") {
            rec.pop();
        }
        if rec.ends_with(b"\r") {
            rec.pop();
        }
        Ok(Some((start, Some(rec))))
    }
}

/// A JSON value as MessagePack (integers stay integers).
fn json_to_msgpack(v: serde_json::Value) -> rmpv::Value {
    use serde_json::Value as J;
    match v {
        J::Null => rmpv::Value::Nil,
        J::Bool(b) => b.into(),
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into()
            } else if let Some(i) = n.as_i64() {
                i.into()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into()
            }
        }
        J::String(s) => s.into(),
        J::Array(a) => rmpv::Value::Array(a.into_iter().map(json_to_msgpack).collect()),
        J::Object(o) => rmpv::Value::Map(
            o.into_iter()
                .map(|(k, v)| (k.into(), json_to_msgpack(v)))
                .collect(),
        ),
    }
}

/// An import record as an `import` entry: `Ok(None)` for a blank line or
/// the CSV header; `Err` for a record that cannot be sent (with its member
/// when known). The entry's own checks (score, member, fields) are the
/// server's, which lists the entries it refuses.
pub fn import_entry(
    rec: &[u8],
    csv: bool,
    first: &mut bool,
) -> Result<Option<rmpv::Value>, (Option<String>, ErrorBody)> {
    let bad = |m: Option<String>, msg: String| {
        (
            m,
            ErrorBody {
                code: "malformed_request".into(),
                message: msg,
            },
        )
    };
    if rec.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let was_first = std::mem::replace(first, false);
    if !csv {
        let v = podium_core::json::value(rec, "malformed JSON")
            .map_err(|e| (None, ErrorBody::from(&e)))?;
        return Ok(Some(json_to_msgpack(v)));
    }
    let mut s = std::str::from_utf8(rec).map_err(|_| bad(None, "the line is not UTF-8".into()))?;
    if was_first {
        s = s.strip_prefix('\u{feff}').unwrap_or(s);
    }
    let f = csv_fields(s).map_err(|m| bad(None, m))?;
    if was_first
        && f.len() >= 2
        && f[0].trim().eq_ignore_ascii_case("member")
        && f[1].trim().eq_ignore_ascii_case("score")
    {
        return Ok(None);
    }
    if !(2..=3).contains(&f.len()) {
        return Err(bad(
            Some(f[0].clone()),
            format!("expected member,score[,name]; got {} fields", f.len()),
        ));
    }
    let mut entry = vec![
        ("member".into(), f[0].as_str().into()),
        // The server parses the score text (numbers, inf, -inf).
        ("score".into(), f[1].as_str().into()),
    ];
    if let Some(name) = f.get(2).filter(|n| !n.is_empty()) {
        entry.push(("name".into(), name.as_str().into()));
    }
    Ok(Some(rmpv::Value::Map(entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(csv: bool, input: &str) -> Vec<(u64, Option<String>)> {
        let mut r = Records {
            rd: input.as_bytes(),
            csv,
            line: 1,
        };
        let mut out = Vec::new();
        while let Some((line, rec)) = r.next_record().unwrap() {
            out.push((line, rec.map(|b| String::from_utf8(b).unwrap())));
        }
        out
    }

    #[test]
    fn import_records_and_line_numbers() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            records(false, "a\r\n\nb\nc"),
            vec![(1, s("a")), (2, s("")), (3, s("b")), (4, s("c"))]
        );
        // A quoted line break stays inside the CSV record.
        assert_eq!(
            records(true, "m,1,\"two\nlines\"\nn,2\n"),
            vec![(1, s("m,1,\"two\nlines\"")), (3, s("n,2"))]
        );
        // Over-long records are reported, and reading goes on after them.
        let long = format!("x{}\ny\n", "z".repeat(MAX_RECORD_BYTES + 10));
        assert_eq!(records(false, &long), vec![(1, None), (2, s("y"))]);
        assert!(records(false, "").is_empty());
    }

    #[test]
    fn import_entries() {
        let mut first = true;
        // The CSV header is skipped (after a BOM), once.
        assert_eq!(
            import_entry("\u{feff}member,score".as_bytes(), true, &mut first).unwrap(),
            None
        );
        let e = import_entry(b"p1,12.5,\"Ann, B\"", true, &mut first)
            .unwrap()
            .unwrap();
        assert_eq!(e["member"], rmpv::Value::from("p1"));
        assert_eq!(e["score"], rmpv::Value::from("12.5"));
        assert_eq!(e["name"], rmpv::Value::from("Ann, B"));
        assert!(import_entry(b"member,score", true, &mut first)
            .unwrap()
            .is_some());
        let (m, err) = import_entry(b"a,1,b,c", true, &mut first).unwrap_err();
        assert_eq!(m.as_deref(), Some("a"));
        assert_eq!(err.code, "malformed_request");
        assert_eq!(import_entry(b"  ", true, &mut first).unwrap(), None);
        let mut first = true;
        let e = import_entry(
            br#"{"member":"m","score":"-inf","rank":3,"data":{"lvl":2,"x":[1.5,null]}}"#,
            false,
            &mut first,
        )
        .unwrap()
        .unwrap();
        assert_eq!(e["score"], rmpv::Value::from("-inf"));
        assert_eq!(e["rank"], rmpv::Value::from(3));
        assert_eq!(e["data"]["x"][0], rmpv::Value::from(1.5));
        assert!(import_entry(b"{not json", false, &mut first).is_err());
    }

    #[test]
    fn formats() {
        let p = Path::new;
        assert_eq!(Format::choose(None, p("a.csv")).unwrap(), Format::Csv);
        assert_eq!(Format::choose(None, p("a.CSV")).unwrap(), Format::Csv);
        assert_eq!(Format::choose(None, p("a.ndjson")).unwrap(), Format::Ndjson);
        assert_eq!(Format::choose(None, p("-")).unwrap(), Format::Ndjson);
        assert_eq!(
            Format::choose(Some("csv"), p("a.json")).unwrap(),
            Format::Csv
        );
        assert_eq!(
            Format::choose(Some("NDJSON"), p("a.csv")).unwrap(),
            Format::Ndjson
        );
        assert!(Format::choose(Some("xml"), p("a")).is_err());
        // Named neither way: read from its first line.
        let dir = std::env::temp_dir().join(format!("podium-formats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("players.txt");
        std::fs::write(&csv, "alice,10\nbob,5\n").unwrap();
        let e = Format::choose(None, &csv).unwrap_err().to_string();
        assert!(e.contains("--format csv"), "{e}");
        assert_eq!(Format::choose(Some("csv"), &csv).unwrap(), Format::Csv);
        let json = dir.join("players.txt.1");
        std::fs::write(&json, "\n{\"member\":\"a\",\"score\":1}\n").unwrap();
        assert_eq!(Format::choose(None, &json).unwrap(), Format::Ndjson);
        assert_eq!(Format::choose(None, p("a.json")).unwrap(), Format::Ndjson);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
