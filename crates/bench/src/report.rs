//! How every scenario reports: the JSON [`Record`] (one per figure) and the
//! plain-text table printed to the terminal.
//!
//! Ratio convention, shared by every scenario that sets podium against
//! something else: `ratio` is how many times better podium did than the
//! comparison, so higher is always better for podium — `podium / other`
//! for rates, `other / podium` for seconds and bytes. [`Better`] says which
//! applies to a figure. `sort-keys` sets podium against itself, and its
//! `ratio` is a cost multiple, as its goals are stated: the 2-key board's
//! seconds or bytes over the 1-key board's, lower is better.

use serde::Serialize;

/// Whether a bigger figure is a better one (rates) or a worse one
/// (seconds, bytes); decides which way round the ratio is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One measured figure, as written to `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub scenario: &'static str,
    pub figure: String,
    pub unit: String,
    /// `None` when not measured (e.g. memory without the counting allocator).
    pub podium: Option<f64>,
    /// Redis 7 on the same workload; `None` when not installed or not
    /// applicable (in-process scenarios).
    pub redis: Option<f64>,
    pub baseline: Option<f64>,
    pub baseline_name: Option<String>,
    /// Podium's advantage over the scenario's comparison, higher is better
    /// for podium: over the in-process baseline in `engine`, over Redis in
    /// the network scenarios (`None` without Redis; their `baseline`, when
    /// set, is an in-process reference shown beside, not compared). In
    /// `sort-keys`, `podium` over `baseline` (2-key over 1-key board),
    /// lower is better.
    pub ratio: Option<f64>,
    pub members: Option<u64>,
}

/// Podium's advantage: `podium / other` when higher is better, else
/// `other / podium`. `None` when either side is missing or zero.
pub fn ratio(podium: Option<f64>, other: Option<f64>, better: Better) -> Option<f64> {
    let (p, o) = (podium?, other?);
    let r = match better {
        Better::Higher => p / o,
        Better::Lower => o / p,
    };
    r.is_finite().then_some(r)
}

/// A table with a header row; columns are padded to their widest cell,
/// the first two left-aligned (names), the rest right-aligned (numbers).
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0usize; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |out: &mut String, r: &[String]| {
            for (i, w) in width.iter().enumerate() {
                let c = r.get(i).map_or("", String::as_str);
                let pad = w - c.chars().count();
                out.push_str(if i == 0 { "" } else { " | " });
                if i < 2 {
                    out.push_str(c);
                    out.extend(std::iter::repeat_n(' ', pad));
                } else {
                    out.extend(std::iter::repeat_n(' ', pad));
                    out.push_str(c);
                }
            }
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            out.push('\n');
        };
        let mut out = String::new();
        line(&mut out, &self.header);
        for (i, w) in width.iter().enumerate() {
            out.push_str(if i == 0 { "" } else { "-|-" });
            out.extend(std::iter::repeat_n('-', *w));
        }
        out.push('\n');
        for r in &self.rows {
            line(&mut out, r);
        }
        out
    }
}

/// A figure for a table cell: thousands separators from 1,000 up, three
/// significant digits below, "not measured" for `None`.
pub fn num(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "not measured".into();
    };
    if !v.is_finite() {
        return format!("{v}");
    }
    if v.abs() >= 1000.0 {
        return thousands(v.round() as i128);
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// `1234567` → `"1,234,567"`.
pub fn thousands(v: i128) -> String {
    let s = v.unsigned_abs().to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if v < 0 {
        out.push('-');
    }
    // Digits left until the next separator.
    let mut left = s.len() % 3;
    for ch in s.chars() {
        if left == 0 && out.len() > usize::from(v < 0) {
            out.push(',');
        }
        if left == 0 {
            left = 3;
        }
        out.push(ch);
        left -= 1;
    }
    out
}

/// A ratio cell: `12.3×`, or `n/a` when there is nothing to compare.
pub fn ratio_cell(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{}×", num(Some(r))),
        None => "n/a".into(),
    }
}

/// Parses a count such as `1000000`, `1_000_000`, `250k`, `1M` or `10m`
/// (no commas: they separate the items of a list option).
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t: String = s.trim().chars().filter(|c| *c != '_').collect();
    let (digits, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a count (e.g. 1000000, 250k, 10M)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Parses a byte size such as `1048576`, `64KiB`, `128MiB` or `1GiB`
/// (binary units; `k`/`M`/`G` alone mean the same).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 1048576, 64KiB, 128MiB)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown unit (use KiB, MiB or GiB)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1234567.4)), "1,234,567");
        assert_eq!(num(Some(-1234.0)), "-1,234");
        assert_eq!(num(Some(12.345)), "12.3");
        assert_eq!(num(Some(0.01234)), "0.0123");
        assert_eq!(num(Some(999.4)), "999");
        assert_eq!(num(None), "not measured");
        assert_eq!(thousands(100), "100");
        assert_eq!(thousands(100_000), "100,000");
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("250k"), Ok(250_000));
        assert_eq!(parse_count("10_000_000"), Ok(10_000_000));
        assert!(parse_count("ten").is_err());
        assert!(parse_count("1,000").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("128MiB"), Ok(128 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
    }

    #[test]
    fn ratios_favour_podium_when_high() {
        assert_eq!(ratio(Some(10.0), Some(2.0), Better::Higher), Some(5.0));
        assert_eq!(ratio(Some(2.0), Some(10.0), Better::Lower), Some(5.0));
        assert_eq!(ratio(None, Some(1.0), Better::Lower), None);
        assert_eq!(ratio(Some(0.0), Some(1.0), Better::Lower), None);
    }

    #[test]
    fn table_aligns() {
        let mut t = Table::new(["a", "unit", "x"]);
        t.row(["long name", "s", "1"]);
        let s = t.render();
        assert_eq!(s.lines().count(), 3);
        assert!(s.contains("long name | s    | 1"));
    }
}
