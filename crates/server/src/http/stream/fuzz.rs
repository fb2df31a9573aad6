//! Fuzzing of the `import` reader: the record splitter (lines, CSV records
//! with quoted line breaks, the line-length limit) fed in arbitrary pieces,
//! and the NDJSON and CSV record parsers behind it. Random and damaged
//! bodies must give records and per-line errors, never a panic, a hang or
//! a buffer past the line limit; rendered valid bodies read back as the
//! entries they were rendered from, on the right line numbers.

use proptest::prelude::*;

use super::*;
use crate::fuzz_support::{config, corpus, damage, damaged, pieces, quick};

/// Splits `input` fed in `sizes`-sized pieces, checking the splitter's
/// promises on the way.
fn split(csv: bool, input: &[u8], sizes: &[usize]) -> Vec<Rec> {
    quick(|| {
        let mut s = Splitter::new(csv);
        let mut out: Vec<Rec> = Vec::new();
        for piece in pieces(input, sizes) {
            s.push(piece);
            while let Some(rec) = s.next() {
                out.push(rec);
            }
            // Pending bytes stay bounded by the line limit (plus one read).
            assert!(s.buf.len() <= MAX_IMPORT_LINE_BYTES + 2 + piece.len());
        }
        out.extend(s.finish());
        let mut last = 0;
        for (line, rec) in &out {
            assert!(*line > last, "line numbers go backwards: {out:?}");
            last = *line;
            if let Some(r) = rec {
                assert!(r.len() <= MAX_IMPORT_LINE_BYTES);
            }
        }
        assert!(last <= newlines(input) + 1);
        out
    })
}

/// Parses every record as `import` does (the header rule included).
fn parse_all(csv: bool, recs: &[Rec]) -> Vec<(u64, Result<Option<SubmitIn>, ApiError>)> {
    let mut r = Reader {
        csv,
        first: true,
        columns: None,
    };
    let mut out = Vec::new();
    for (line, rec) in recs {
        let Some(bytes) = rec else {
            r.first = false;
            continue;
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = quick(|| {
            if csv {
                r.parse_csv(bytes)
            } else {
                Reader::parse_ndjson(bytes).map(Some)
            }
        });
        r.first = false;
        out.push((*line, parsed.map_err(|(_, e)| e)));
    }
    out
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..96, 1..6)
}

type Entry = (String, f64, Option<String>);

fn entries() -> impl Strategy<Value = Vec<Entry>> {
    let score = prop_oneof![
        any::<f64>().prop_filter("a number", |f| f.is_finite()),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
    ];
    prop::collection::vec(
        (
            "[a-z0-9é\",\n ]{1,10}",
            score,
            prop::option::of("[a-z\",\n ]{1,8}"),
        ),
        0..20,
    )
}

fn score_text(s: f64) -> String {
    if s.is_infinite() {
        if s > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{s:?}")
    }
}

fn csv_field(f: &str) -> String {
    format!("\"{}\"", f.replace('"', "\"\""))
}

fn csv_body(entries: &[Entry], header: bool, crlf: bool) -> Vec<u8> {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut s = if header {
        format!("member,score{eol}")
    } else {
        String::new()
    };
    for (m, sc, n) in entries {
        s.push_str(&csv_field(m));
        s.push(',');
        s.push_str(&score_text(*sc));
        if let Some(n) = n {
            s.push(',');
            s.push_str(&csv_field(n));
        }
        s.push_str(eol);
    }
    s.into_bytes()
}

fn ndjson_body(entries: &[Entry], crlf: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (m, sc, n) in entries {
        let mut e = SubmitIn::new(m.clone(), *sc);
        e.name = n.clone();
        out.extend(serde_json::to_vec(&e).unwrap());
        out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    }
    out
}

/// The line each entry's record starts on.
fn start_lines(entries: &[Entry], header: bool) -> Vec<u64> {
    let mut line = 1 + u64::from(header);
    entries
        .iter()
        .map(|(m, _, n)| {
            let at = line;
            let inner =
                m.matches('\n').count() + n.as_deref().map_or(0, |n| n.matches('\n').count());
            line += 1 + inner as u64;
            at
        })
        .collect()
}

fn want(entries: &[Entry]) -> Vec<SubmitIn> {
    entries
        .iter()
        .map(|(m, s, n)| {
            let mut e = SubmitIn::new(m.clone(), *s);
            // An empty name field is no name.
            e.name = n.clone().filter(|n| !n.is_empty());
            e
        })
        .collect()
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn fuzz_import_random_bodies(
        input in prop::collection::vec(any::<u8>(), 0..512),
        csv in any::<bool>(),
        sizes in sizes(),
    ) {
        let recs = split(csv, &input, &sizes);
        parse_all(csv, &recs);
    }

    #[test]
    fn fuzz_import_damaged_bodies(
        entries in entries(),
        csv in any::<bool>(),
        crlf in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
        sizes in sizes(),
    ) {
        let valid = if csv { csv_body(&entries, true, crlf) } else { ndjson_body(&entries, crlf) };
        let input = damaged(valid, &damages);
        let recs = split(csv, &input, &sizes);
        parse_all(csv, &recs);
    }

    #[test]
    fn fuzz_import_csv_round_trip(
        entries in entries(),
        header in any::<bool>(),
        crlf in any::<bool>(),
        sizes in sizes(),
    ) {
        let input = csv_body(&entries, header, crlf);
        let got = parse_all(true, &split(true, &input, &sizes));
        let got: Vec<(u64, SubmitIn)> = got
            .into_iter()
            .filter_map(|(l, r)| r.unwrap().map(|e| (l, e)))
            .collect();
        let want: Vec<(u64, SubmitIn)> =
            start_lines(&entries, header).into_iter().zip(want(&entries)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn fuzz_import_ndjson_round_trip(entries in entries(), crlf in any::<bool>(), sizes in sizes()) {
        // JSON escapes line breaks inside strings: a record is a line.
        let input = ndjson_body(&entries, crlf);
        let got = parse_all(false, &split(false, &input, &sizes));
        let got: Vec<(u64, SubmitIn)> = got.into_iter().map(|(l, r)| (l, r.unwrap().unwrap())).collect();
        let want: Vec<(u64, SubmitIn)> = (1..).zip(want(&entries)).collect();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    // Each case buffers a few MiB.
    #![proptest_config(config(24))]

    #[test]
    fn fuzz_import_overlong_lines_are_dropped(
        lines in prop::collection::vec((any::<bool>(), 1usize..4), 1..5),
        csv in any::<bool>(),
        quote in any::<bool>(),
        sizes in prop::collection::vec(1usize..(256 << 10), 1..4),
    ) {
        let mut input = Vec::new();
        for (i, (long, extra)) in lines.iter().enumerate() {
            if *long {
                if quote {
                    input.push(b'"');
                }
                input.resize(input.len() + MAX_IMPORT_LINE_BYTES + extra, b'x');
            } else {
                input.extend_from_slice(format!("m{i},{i}").as_bytes());
            }
            input.push(b'\n');
        }
        let recs = split(csv, &input, &sizes);
        // An unclosed quote in CSV may swallow later lines, but never
        // a short line before it.
        if !(csv && quote) {
            prop_assert_eq!(recs.len(), lines.len());
            for (i, ((line, rec), (long, _))) in recs.iter().zip(&lines).enumerate() {
                prop_assert_eq!(*line, i as u64 + 1);
                prop_assert_eq!(rec.is_none(), *long);
            }
        }
    }
}

#[test]
fn fuzz_import_corpus_replays() {
    for dir in ["import_ndjson", "import_csv"] {
        for (path, input) in corpus(dir) {
            let _ = &path;
            for csv in [false, true] {
                for sizes in [&[usize::MAX][..], &[1], &[5, 2]] {
                    parse_all(csv, &split(csv, &input, sizes));
                }
            }
        }
    }
}
