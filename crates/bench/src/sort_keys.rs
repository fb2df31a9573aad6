//! The `sort-keys` scenario: what a second sort key costs a board, in
//! process, single thread, at each member count asked for.
//!
//! Four boards are built from the same seeded members:
//! - a plain 1-key board (the default config), scores random integers
//!   below 10^9 as the `engine` scenario draws them;
//! - a 2-key board (`score` desc float, then `time` asc int) with the same
//!   first-key values and a random `time`;
//! - the same two shapes with the first key drawn from `0..1000`, so most
//!   members tie on it: there the 2-key board orders the tied runs by its
//!   second key and the 1-key board by member id, and lookups pay for it.
//!
//! Each board's load (batches of 64 through `submit_many`), rank lookups
//! by member (one at a time, and batched through `rank_many`), random page
//! reads of 25 and heap bytes per member are measured. The boards' phases
//! alternate (every board loads, then every board answers lookups, ...)
//! and the whole sequence repeats for a few rounds, its order reversed
//! every other round, so a machine slowing down mid-run slows every board
//! alike; the figures are the rounds' medians, and the ratios 2-key/1-key
//! are set against their goals.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use podium_engine::{Board, BoardConfig, KeyOp, KeyType, Num, Order, SortKey, Submit};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::alloc;
use crate::engine::{random_score, Ids, BATCH, PAGE_SIZE, SCORE_SPAN};
use crate::report::{self, Record, Table};

pub const SCENARIO: &str = "sort-keys";
/// The tied boards' first key is drawn below this: at 1M members a value
/// is shared by about a thousand of them.
pub const NARROW_SPAN: u64 = 1000;
/// Goals: a 2-key board's load and rank lookups at most these multiples of
/// a 1-key board's time, and at most this many extra heap bytes a member
/// for each extra key.
pub const LOAD_GOAL: f64 = 1.3;
pub const RANK_GOAL: f64 = 1.2;
pub const BYTES_GOAL: f64 = 8.0;

/// Settings of one `sort-keys` run.
#[derive(Debug, Clone)]
pub struct SortKeysOptions {
    /// Member counts, one table each.
    pub members: Vec<u64>,
    /// Rank lookups per board and round (one at a time, then as many in
    /// batches).
    pub lookups: usize,
    /// Page reads per board and round.
    pub pages: usize,
    /// Rounds of every phase; medians are reported.
    pub rounds: usize,
    pub seed: u64,
    /// Members arrive in the order of their ids (`m0`, `m1`, …) rather
    /// than in a random order.
    pub in_order: bool,
    /// A line on stderr per phase.
    pub progress: bool,
}

impl Default for SortKeysOptions {
    fn default() -> Self {
        SortKeysOptions {
            members: vec![1_000_000, 10_000_000],
            lookups: 500_000,
            pages: 100_000,
            rounds: 5,
            seed: 42,
            in_order: false,
            progress: true,
        }
    }
}

/// One of the four boards: its shape and where its first key comes from.
#[derive(Debug, Clone, Copy)]
struct Variant {
    label: &'static str,
    two_keys: bool,
    narrow: bool,
}

/// In the order a round visits them; pairs are (0, 1) and (3, 2).
const VARIANTS: [Variant; 4] = [
    Variant {
        label: "1-key",
        two_keys: false,
        narrow: false,
    },
    Variant {
        label: "2-key",
        two_keys: true,
        narrow: false,
    },
    Variant {
        label: "2-key, first key 0..1000",
        two_keys: true,
        narrow: true,
    },
    Variant {
        label: "1-key, first key 0..1000",
        two_keys: false,
        narrow: true,
    },
];

/// `sort: [{key: "score", desc, float}, {key: "time", asc, int}]`; `set`
/// operators, as the plain board's `update` is `set`.
pub fn two_key_config() -> BoardConfig {
    BoardConfig {
        sort: vec![
            SortKey::new("score", Order::Desc, KeyType::Float, KeyOp::Set),
            SortKey::new("time", Order::Asc, KeyType::Int, KeyOp::Set),
        ],
        ..BoardConfig::default()
    }
}

/// Everything the boards are loaded with and read by, generated before any
/// timing so the timed loops run the engine and little else.
struct Data {
    /// The id of the `i`th member to arrive is `text[ends[i-1]..ends[i]]`.
    text: String,
    ends: Vec<u32>,
    wide: Vec<f64>,
    narrow: Vec<f64>,
    times: Vec<i64>,
    lookups: Ids,
    pages: Vec<u64>,
}

impl Data {
    fn new(members: u64, o: &SortKeysOptions) -> Result<Data> {
        let n = usize::try_from(members).context("--members is too large")?;
        let mut rng = SmallRng::seed_from_u64(o.seed);
        let mut arrival: Vec<u64> = (0..members).collect();
        if !o.in_order {
            // Ids in order would put a 1-key board's tied members, ordered
            // by id, each next to the one before: a sequential load within
            // every run of equal scores, all in a few hot leaves, where the
            // 2-key board's random `time` places them at random.
            arrival.shuffle(&mut rng);
        }
        let mut text = String::with_capacity(n * 9);
        let mut ends = Vec::with_capacity(n);
        for i in arrival {
            let _ = write!(text, "m{i}");
            ends.push(u32::try_from(text.len()).context("member ids past 4 GiB")?);
        }
        let wide = (0..n).map(|_| random_score(&mut rng)).collect();
        let narrow = (0..n)
            .map(|_| rng.random_range(0..NARROW_SPAN) as f64)
            .collect();
        let times = (0..n)
            .map(|_| rng.random_range(0..SCORE_SPAN) as i64)
            .collect();
        // Its own stream, so the read counts leave the loaded data alone.
        let mut rng = SmallRng::seed_from_u64(o.seed ^ 0x9e37_79b9_7f4a_7c15);
        let lookups = Ids::random(members, o.lookups, &mut rng);
        let last_page = members.div_ceil(PAGE_SIZE);
        let pages = (0..o.pages)
            .map(|_| rng.random_range(1..=last_page))
            .collect();
        Ok(Data {
            text,
            ends,
            wide,
            narrow,
            times,
            lookups,
            pages,
        })
    }

    #[inline]
    fn id(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text.as_bytes()[start..self.ends[i] as usize]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// Builds variant `v` and loads every member into it in batches of
/// [`BATCH`]; returns the board, the load's seconds and the heap bytes it
/// added (`None` without the counting allocator).
fn load(v: Variant, d: &Data) -> Result<(Board, f64, Option<usize>)> {
    let firsts = if v.narrow { &d.narrow } else { &d.wide };
    let before = alloc::stats();
    let mut board = Board::new(if v.two_keys {
        two_key_config()
    } else {
        BoardConfig::default()
    })?;
    // The values a 2-key submission carries, by key name: the names are
    // made once and only the numbers change, so the harness allocates no
    // string per member.
    let mut vals: Vec<[(String, Num); 2]> = (0..BATCH)
        .map(|_| {
            [
                ("score".to_string(), Num::Float(0.0)),
                ("time".to_string(), Num::Int(0)),
            ]
        })
        .collect();
    let start = Instant::now();
    let mut lo = 0;
    while lo < d.len() {
        let hi = (lo + BATCH).min(d.len());
        let results = if v.two_keys {
            for (slot, i) in vals.iter_mut().zip(lo..hi) {
                slot[0].1 = Num::Float(firsts[i]);
                slot[1].1 = Num::Int(d.times[i]);
            }
            let subs: Vec<Submit> = (lo..hi)
                .zip(&vals)
                .map(|(i, kv)| Submit {
                    scores: Some(&kv[..]),
                    ..Submit::new(d.id(i), firsts[i])
                })
                .collect();
            board.submit_many(&subs)?
        } else {
            let subs: Vec<Submit> = (lo..hi).map(|i| Submit::new(d.id(i), firsts[i])).collect();
            board.submit_many(&subs)?
        };
        for r in results {
            r.with_context(|| format!("{}: loading members {lo}..{hi}", v.label))?;
        }
        lo = hi;
    }
    let secs = start.elapsed().as_secs_f64();
    if board.len() != d.len() {
        bail!(
            "{}: loaded {} members, expected {}",
            v.label,
            board.len(),
            d.len()
        );
    }
    let bytes = match (before, alloc::stats()) {
        (Some(b), Some(a)) => Some(a.live.saturating_sub(b.live)),
        _ => None,
    };
    Ok((board, secs, bytes))
}

/// Nanoseconds per rank lookup, one member at a time.
fn ranks(board: &Board, d: &Data) -> Result<f64> {
    let start = Instant::now();
    let mut acc = 0u64;
    for k in 0..d.lookups.len() {
        let m = d.lookups.get(k);
        acc = acc.wrapping_add(
            board
                .rank(m.as_bytes())
                .with_context(|| format!("{m} absent"))?,
        );
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    Ok(secs * 1e9 / d.lookups.len() as f64)
}

/// Nanoseconds per rank lookup, [`BATCH`] members a `rank_many` call.
fn ranks_batched(board: &Board, d: &Data) -> Result<f64> {
    let n = d.lookups.len();
    let start = Instant::now();
    let mut acc = 0u64;
    let mut lo = 0;
    while lo < n {
        let hi = (lo + BATCH).min(n);
        let batch: Vec<&[u8]> = (lo..hi).map(|k| d.lookups.get(k).as_bytes()).collect();
        for r in board.rank_many(&batch) {
            acc = acc.wrapping_add(r.context("a looked-up member is absent")?);
        }
        lo = hi;
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    Ok(secs * 1e9 / n as f64)
}

/// Microseconds per read of a random page of [`PAGE_SIZE`].
fn pages(board: &Board, d: &Data) -> Result<f64> {
    let start = Instant::now();
    let mut acc = 0usize;
    for &p in &d.pages {
        let page = board.top(p, PAGE_SIZE)?;
        acc += page.entries.len();
        black_box(page);
    }
    let secs = start.elapsed().as_secs_f64();
    black_box(acc);
    Ok(secs * 1e6 / d.pages.len() as f64)
}

/// Every round's figure of one board.
#[derive(Debug, Default, Clone)]
struct Samples {
    load_s: Vec<f64>,
    rank_ns: Vec<f64>,
    rank_batched_ns: Vec<f64>,
    page_us: Vec<f64>,
    bytes: Vec<f64>,
}

/// The middle value (the mean of the two middle ones for an even count).
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Runs the scenario at every member count of `o`, printing a table to
/// `out` as each completes; returns one [`Record`] per figure.
pub fn run(o: &SortKeysOptions, out: &mut dyn Write) -> Result<Vec<Record>> {
    if o.members.is_empty() || o.members.contains(&0) {
        bail!("--members needs one or more counts, each at least 1");
    }
    if o.lookups == 0 || o.pages == 0 || o.rounds == 0 {
        bail!("--ops, --pages and --rounds must be at least 1");
    }
    let mut records = Vec::new();
    for &n in &o.members {
        writeln!(
            out,
            "\nsort-keys: {} members arriving {}, single thread, seed {}, {} rounds (medians) — \
             2-key boards against 1-key boards",
            report::thousands(n as i128),
            if o.in_order {
                "in id order"
            } else {
                "in random order"
            },
            o.seed,
            o.rounds
        )?;
        out.flush()?;
        let data = Data::new(n, o)?;
        let samples = measure(&data, o)?;
        drop(data);
        let (table, notes, recs) = summarise(n, &samples);
        write!(out, "{}", table.render())?;
        for line in notes {
            writeln!(out, "  {line}")?;
        }
        out.flush()?;
        records.extend(recs);
    }
    Ok(records)
}

/// Runs every round over the four boards, each phase over all of them
/// before the next phase.
fn measure(d: &Data, o: &SortKeysOptions) -> Result<[Samples; 4]> {
    let mut s: [Samples; 4] = Default::default();
    let mut boards: [Option<Board>; 4] = Default::default();
    let say = |round: usize, what: String| {
        if o.progress {
            eprintln!("  round {}/{}: {what}", round + 1, o.rounds);
        }
    };
    for round in 0..o.rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            vec![0, 1, 2, 3]
        } else {
            vec![3, 2, 1, 0]
        };
        for &v in &order {
            // The board of the round before goes first, so at most four
            // boards are ever live.
            boards[v] = None;
            let (b, secs, bytes) = load(VARIANTS[v], d)?;
            s[v].load_s.push(secs);
            if let Some(bytes) = bytes {
                s[v].bytes.push(bytes as f64 / d.len() as f64);
            }
            boards[v] = Some(b);
            // Whether a board got huge pages moves its lookups by more
            // than a second key does: the process's share is shown.
            say(
                round,
                format!(
                    "load {}: {secs:.3} s ({})",
                    VARIANTS[v].label,
                    alloc::anon_huge_pages()
                ),
            );
        }
        let board = |v: usize| boards[v].as_ref().expect("loaded this round");
        type Phase = (&'static str, &'static str, fn(&Board, &Data) -> Result<f64>);
        let phases: [Phase; 3] = [
            ("rank lookups", "ns", ranks),
            ("rank lookups, batched", "ns", ranks_batched),
            ("page reads", "µs", pages),
        ];
        for (k, (what, unit, f)) in phases.into_iter().enumerate() {
            let mut line = format!("{what}:");
            for &v in &order {
                let x = f(board(v), d)?;
                let _ = write!(line, " {} {x:.1} {unit};", VARIANTS[v].label);
                let dest = match k {
                    0 => &mut s[v].rank_ns,
                    1 => &mut s[v].rank_batched_ns,
                    _ => &mut s[v].page_us,
                };
                dest.push(x);
            }
            say(round, line);
        }
    }
    Ok(s)
}

/// `met` / `NOT met` for a figure against an upper bound.
fn verdict(v: Option<f64>, goal: Option<f64>) -> String {
    match (v, goal) {
        (Some(v), Some(g)) if v <= g => "met".into(),
        (Some(_), Some(_)) => "NOT met".into(),
        (None, Some(_)) => "not measured".into(),
        (_, None) => String::new(),
    }
}

/// Builds the table, its notes and the JSON records for one member count.
fn summarise(n: u64, s: &[Samples; 4]) -> (Table, Vec<String>, Vec<Record>) {
    let mut table = Table::new([
        "figure",
        "unit",
        "1-key",
        "2-key",
        "2-key/1-key",
        "goal",
        "met?",
    ]);
    let mut records = Vec::new();
    // (JSON key, label, unit, samples, goal on the ratio)
    type Figure = (
        &'static str,
        &'static str,
        &'static str,
        fn(&Samples) -> &[f64],
        Option<f64>,
    );
    let figures: [Figure; 5] = [
        (
            "load_s",
            "load, batches of 64",
            "s",
            |x| &x.load_s,
            Some(LOAD_GOAL),
        ),
        (
            "rank_lookup_ns",
            "rank lookup by member",
            "ns/lookup",
            |x| &x.rank_ns,
            Some(RANK_GOAL),
        ),
        (
            "rank_lookup_batched_ns",
            "rank lookups, batches of 64",
            "ns/lookup",
            |x| &x.rank_batched_ns,
            Some(RANK_GOAL),
        ),
        (
            "page_read_us",
            "read of a random page of 25",
            "µs/page",
            |x| &x.page_us,
            None,
        ),
        (
            "memory",
            "memory after loading",
            "bytes/member",
            |x| &x.bytes,
            None,
        ),
    ];
    // (suffix, label prefix, 1-key board, 2-key board)
    let pairs = [("", "", 0, 1), ("_ties", "first key 0..1000: ", 3, 2)];
    for (suffix, prefix, one, two) in pairs {
        for (key, label, unit, get, goal) in figures {
            let (a, b) = (median(get(&s[one])), median(get(&s[two])));
            let r = a.zip(b).map(|(a, b)| b / a).filter(|r| r.is_finite());
            table.row([
                format!("{prefix}{label}"),
                unit.to_string(),
                report::num(a),
                report::num(b),
                r.map_or_else(|| "n/a".into(), |r| format!("{r:.3}×")),
                goal.map_or_else(String::new, |g| format!("≤ {g}×")),
                verdict(r, goal),
            ]);
            records.push(Record {
                scenario: SCENARIO,
                figure: format!("{key}{suffix}"),
                unit: unit.into(),
                podium: b,
                redis: None,
                baseline: a,
                baseline_name: Some(format!("{} board", VARIANTS[one].label)),
                ratio: r,
                members: Some(n),
            });
        }
        let extra = median(&s[two].bytes)
            .zip(median(&s[one].bytes))
            .map(|(b, a)| b - a);
        table.row([
            format!("{prefix}extra memory per extra key"),
            "bytes/member".into(),
            String::new(),
            report::num(extra),
            String::new(),
            format!("≤ {BYTES_GOAL}"),
            verdict(extra, Some(BYTES_GOAL)),
        ]);
        records.push(Record {
            scenario: SCENARIO,
            figure: format!("extra_bytes_per_key{suffix}"),
            unit: "bytes/member".into(),
            podium: extra,
            redis: None,
            baseline: None,
            baseline_name: None,
            ratio: None,
            members: Some(n),
        });
    }
    let mut notes = vec![
        "2-key/1-key = the 2-key board's time (or bytes) over the 1-key board's: \
         lower is better, the goals are upper bounds"
            .to_string(),
        "extra memory per extra key = the 2-key board's heap bytes per member minus the \
         1-key board's (one extra key)"
            .to_string(),
    ];
    let spread = |get: fn(&Samples) -> &[f64], one: usize, two: usize| {
        let r: Vec<f64> = get(&s[two])
            .iter()
            .zip(get(&s[one]))
            .map(|(b, a)| b / a)
            .collect();
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.3}–{hi:.3}")
    };
    notes.push(format!(
        "the rounds' own ratios ranged: load {} (ties {}), rank lookups {} (ties {}), \
         batched {} (ties {})",
        spread(|x| &x.load_s, 0, 1),
        spread(|x| &x.load_s, 3, 2),
        spread(|x| &x.rank_ns, 0, 1),
        spread(|x| &x.rank_ns, 3, 2),
        spread(|x| &x.rank_batched_ns, 0, 1),
        spread(|x| &x.rank_batched_ns, 3, 2),
    ));
    if s[0].bytes.is_empty() {
        notes.push(
            "memory not measured (the counting allocator is not installed in this binary)".into(),
        );
    } else {
        notes.push(
            "memory = heap bytes requested (live after loading minus before), without the \
             system allocator's per-block overhead"
                .into(),
        );
    }
    (table, notes, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    /// The 2-key board must rank as its keys say, or the comparison would
    /// be of different work: on the tied data, equal first keys go by
    /// `time`, lowest first.
    #[test]
    fn the_two_key_board_orders_ties_by_time() {
        let o = SortKeysOptions {
            members: vec![3_000],
            lookups: 100,
            pages: 10,
            ..Default::default()
        };
        let d = Data::new(3_000, &o).unwrap();
        let (b, _, _) = load(VARIANTS[2], &d).unwrap();
        let all = b.top(1, 3_000).unwrap().entries;
        assert_eq!(all.len(), 3_000);
        let mut ties = 0;
        for w in all.windows(2) {
            let (x, y) = (w[0].scores.unwrap(), w[1].scores.unwrap());
            assert!(x[0].as_f64() >= y[0].as_f64());
            if x[0] == y[0] {
                ties += 1;
                assert!(x[1].cmp_value(&y[1]).is_le(), "{x:?} before {y:?}");
            }
        }
        assert!(ties > 2_000, "{ties}");
        let (p, _, _) = load(VARIANTS[0], &d).unwrap();
        let (t, _, _) = load(VARIANTS[1], &d).unwrap();
        // Wide first keys barely tie: both shapes rank alike.
        let same = (0..d.len())
            .filter(|&i| p.rank(d.id(i)) == t.rank(d.id(i)))
            .count();
        assert!(same > 2_990, "{same}");
    }

    #[test]
    fn runs_small_and_reports_every_figure() {
        let o = SortKeysOptions {
            members: vec![2_000],
            lookups: 500,
            pages: 50,
            rounds: 2,
            progress: false,
            ..Default::default()
        };
        let mut out = Vec::new();
        let recs = run(&o, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(recs.len(), 12);
        assert!(recs.iter().all(|r| r.members == Some(2_000)));
        let load = recs.iter().find(|r| r.figure == "load_s_ties").unwrap();
        assert!(load.ratio.is_some_and(|r| r > 0.0));
        // The lib's tests do not install the counting allocator.
        assert!(text.contains("not measured"), "{text}");
        let json = serde_json::to_value(&recs[0]).unwrap();
        assert_eq!(json["scenario"], "sort-keys");
        assert_eq!(json["figure"], "load_s");
        assert_eq!(json["baseline_name"], "1-key board");
    }
}
