//! Boards with composite sort keys (docs/spec.md §1 "Sort keys"): 2 to 4
//! keys in mixed directions and types, every update rule and key
//! operator, bounds, caps, conditions, the input errors, exact integers
//! beyond 2^53 and near the ends of 64 bits, every read, removals, data,
//! search, archives and changes of `sort` by `board_update`; the answers
//! must match the embedded engine's on a single Redis and on a cluster.

use podium_core::api::{NamedScores, Num, Score};
use serde_json::Value;

use super::*;

/// 2^53: past it, doubles skip integers.
const P53: i64 = 1 << 53;

fn int(x: i64) -> Num {
    Num::Int(x)
}

fn flt(x: f64) -> Num {
    Num::Float(x)
}

/// A submission of `scores` by key name (no `score`).
fn e(member: &str, vals: &[(&str, Num)]) -> SubmitIn {
    let mut x = SubmitIn::new(member, 0.0);
    x.score = Score::ABSENT;
    x.scores = Some(NamedScores(
        vals.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    ));
    x
}

fn op(x: SubmitIn, o: &str) -> SubmitIn {
    with(x, |x| x.op = Some(o.into()))
}

fn cond(x: SubmitIn, c: CondIn) -> SubmitIn {
    with(x, |x| x.cond = Some(c))
}

fn only(x: SubmitIn, o: Only) -> SubmitIn {
    with(x, |x| x.only = Some(o))
}

fn named(x: SubmitIn, name: &str) -> SubmitIn {
    with(x, |x| x.name = Some(name.into()))
}

/// Exact bounds, as the wire gives them: an integer stays an integer.
fn bounds(min: Option<Num>, max: Option<Num>, min_ex: bool, max_ex: bool) -> RangeBounds {
    RangeBounds {
        min,
        max,
        min_exclusive: min_ex,
        max_exclusive: max_ex,
    }
}

/// One backend and the answers it gave so far.
struct Ctx<'a> {
    b: &'a dyn Backend,
    l: Log,
}

impl Ctx<'_> {
    async fn create(&mut self, board: &str, config: Value) {
        let r = self
            .b
            .board_create(&ops::CreateBoard {
                board: board.to_string(),
                config,
            })
            .await;
        self.l.add(&format!("create {board}"), r);
    }

    /// A `board_update`, then how far its re-ranking went: these boards
    /// are small, so none is still running when the call answers.
    async fn put(&mut self, label: &str, board: &str, config: Value) {
        let r = self
            .b
            .board_put(&ops::PutBoard {
                board: board.to_string(),
                config,
                confirm_rerank: true,
            })
            .await;
        self.l.add(&format!("put {board} {label}"), r);
        self.resort(board).await;
    }

    async fn resort(&mut self, board: &str) {
        let r = self
            .b
            .resort_status(&ops::ResortStatus {
                board: board.to_string(),
            })
            .await;
        self.l.add(&format!("resort {board}"), r);
    }

    async fn info(&mut self, board: &str) {
        let r = self
            .b
            .board_info(&ops::BoardInfo {
                board: board.to_string(),
            })
            .await;
        self.l.add(&format!("info {board}"), r);
    }

    async fn one(&mut self, label: &str, board: &str, entry: SubmitIn) {
        let r = self
            .b
            .submit_one(&ops::Submit {
                board: board.to_string(),
                entry,
            })
            .await;
        self.l.add(&format!("submit {board} {label}"), r);
    }

    async fn many(&mut self, label: &str, board: &str, entries: Vec<SubmitIn>) {
        let r = self
            .b
            .submit(&ops::SubmitMany {
                board: board.to_string(),
                entries,
            })
            .await;
        self.l.add(&format!("batch {board} {label}"), r);
    }

    /// Every member, best first or worst first: the whole state in one
    /// answer.
    async fn all(&mut self, board: &str, from_worst: bool) {
        let r = self
            .b
            .range_by_rank(&ops::RangeByRank {
                board: board.to_string(),
                start: 1,
                stop: 200,
                from_worst,
                with_data: true,
            })
            .await;
        self.l.add(&format!("all {board} fw={from_worst}"), r);
    }

    async fn read(&mut self, board: &str, members: &[&str]) {
        read_all(self.b, &mut self.l, board, members).await;
    }

    /// `count`, and `range_by_score` both ways, in each of `ranges`.
    async fn ranges(&mut self, board: &str, ranges: &[RangeBounds]) {
        for (i, r) in ranges.iter().enumerate() {
            let c = self
                .b
                .count(&ops::Count {
                    board: board.to_string(),
                    bounds: *r,
                })
                .await;
            self.l.add(&format!("count {board} x{i}"), c);
            for from_worst in [false, true] {
                let got = self
                    .b
                    .range_by_score(&ops::RangeByScore {
                        board: board.to_string(),
                        bounds: *r,
                        from_worst,
                        offset: None,
                        limit: None,
                        with_data: false,
                    })
                    .await;
                self.l
                    .add(&format!("range_by_score {board} x{i} fw={from_worst}"), got);
            }
        }
    }

    async fn remove(&mut self, board: &str, members: &[&str]) {
        let r = self
            .b
            .remove(&ops::Remove {
                board: board.to_string(),
                members: members.iter().map(|m| m.to_string()).collect(),
            })
            .await;
        self.l.add(&format!("remove {board} {members:?}"), r);
    }

    async fn remove_by(&mut self, board: &str, by: ops::RangeBy) {
        let r = self
            .b
            .remove_range(&ops::RemoveRange {
                board: board.to_string(),
                by,
            })
            .await;
        self.l.add(&format!("remove_range {board} {by:?}"), r);
    }

    async fn set_data(
        &mut self,
        board: &str,
        member: &str,
        name: Option<&str>,
        data: Option<Value>,
    ) {
        let r = self
            .b
            .set_data(&ops::SetData {
                board: board.to_string(),
                member: member.to_string(),
                name: name.map(str::to_string),
                data,
            })
            .await;
        self.l.add(&format!("set_data {board} {member}"), r);
    }

    async fn search(&mut self, board: &str, query: &str) {
        let r = self
            .b
            .search(&ops::Search {
                board: board.to_string(),
                query: query.to_string(),
                limit: Some(10),
                offset: Some(0),
                with_data: true,
            })
            .await;
        self.l.add(&format!("search {board} {query:?}"), r);
    }
}

/// Laps desc then time asc, kept at each member's best run: every input
/// error, a plain `score`, per-call operators, conditions, bounds and
/// batches that name a member several times.
async fn race(c: &mut Ctx<'_>) {
    let r = "race";
    c.create(
        r,
        json!({"update": "best", "ranking": "competition", "min_score": 0, "max_score": 50,
               "sort": [{"key": "laps", "type": "int"},
                        {"key": "time", "order": "asc", "type": "int", "op": "set"}]}),
    )
    .await;
    let run = |m: &str, laps: i64, time: i64| e(m, &[("laps", int(laps)), ("time", int(time))]);
    let ones = [
        ("first", run("ann", 10, 61_000)),
        ("second", run("bob", 10, 62_000)),
        ("more laps", run("cat", 11, 90_000)),
        ("slower", run("ann", 10, 62_000)),
        ("same run", run("ann", 10, 61_000)),
        ("faster", run("bob", 10, 60_500)),
        ("tie", run("dan", 10, 61_000)),
        ("lacks a key", e("eve", &[("laps", int(3))])),
        (
            "unknown key",
            e("eve", &[("lap", int(3)), ("time", int(1))]),
        ),
        (
            "a key twice",
            e(
                "eve",
                &[("laps", int(3)), ("time", int(1)), ("laps", int(4))],
            ),
        ),
        (
            "fraction into int",
            e("eve", &[("laps", flt(3.5)), ("time", int(1))]),
        ),
        (
            "whole float into int",
            e("eve", &[("laps", flt(3.0)), ("time", flt(-0.0))]),
        ),
        (
            "float past i64",
            e("eve", &[("laps", int(3)), ("time", flt(9.3e18))]),
        ),
        (
            "NaN first",
            e("fay", &[("laps", flt(f64::NAN)), ("time", int(1))]),
        ),
        (
            "NaN later",
            e("fay", &[("laps", int(1)), ("time", flt(f64::NAN))]),
        ),
        (
            "inf into int",
            e("fay", &[("laps", int(1)), ("time", flt(f64::INFINITY))]),
        ),
        ("above max_score", run("fay", 51, 1)),
        ("below min_score", run("fay", -1, 1)),
        ("at max_score", run("fay", 50, 99)),
        ("no keys", e("gus", &[])),
        ("plain score, new", s("hal", 7.0)),
        ("plain score, existing", s("ann", 12.0)),
        ("plain score, worse", s("bob", 2.0)),
        ("plain fraction", s("hal", 7.5)),
        (
            "neither score nor scores",
            with(s("hal", 0.0), |x| x.score = Score::ABSENT),
        ),
        ("plain above max_score", s("hal", 70.0)),
        ("set overrides best", op(run("bob", 9, 1), "set")),
        ("incr one key", op(e("cat", &[("laps", int(1))]), "incr")),
        ("incr set key", op(e("cat", &[("time", int(5))]), "incr")),
        (
            "incr past max_score",
            op(e("cat", &[("laps", int(40))]), "incr"),
        ),
        ("bad op", op(run("cat", 1, 1), "double")),
        // `cond` compares values, not ranks: a smaller time is less.
        ("gt blocked", cond(op(run("bob", 9, 0), "set"), CondIn::Gt)),
        ("lt applied", cond(op(run("bob", 9, 0), "set"), CondIn::Lt)),
        ("gt applied", cond(op(run("bob", 9, 3), "set"), CondIn::Gt)),
        ("gt, best blocks", cond(run("bob", 9, 4), CondIn::Gt)),
        ("gt on new", cond(run("ivy", 1, 1), CondIn::Gt)),
        ("nx existing", only(run("ann", 49, 1), Only::New)),
        ("xx new", only(run("jon", 49, 1), Only::Existing)),
        ("nx new", only(named(run("jon", 4, 4), "Jon"), Only::New)),
        ("xx existing", only(run("jon", 5, 4), Only::Existing)),
        (
            "data",
            with(run("kim", 4, 4), |x| x.data = Some(json!({"team": "red"}))),
        ),
        (
            "bad data",
            with(run("kim", 4, 4), |x| x.data = Some(json!(3))),
        ),
    ];
    for (label, x) in ones {
        c.one(label, r, x).await;
    }
    c.read(r, &["ann", "bob", "dan", "hal"]).await;

    // A member several times in a batch: later items see earlier ones.
    c.many(
        "repeats",
        r,
        vec![
            run("ann", 13, 70_000),
            run("ann", 13, 69_000),
            run("ann", 13, 71_000),
            run("lou", 1, 1),
            run("lou", 2, 2),
            op(e("lou", &[("laps", int(3))]), "incr"),
            cond(run("lou", 4, 9), CondIn::Lt),
            only(run("lou", 9, 9), Only::New),
            only(run("max", 9, 9), Only::Existing),
            op(run("bob", 13, 69_000), "best"),
        ],
    )
    .await;
    // A state-dependent failure fails its item alone.
    c.many(
        "item error",
        r,
        vec![
            run("ned", 3, 3),
            op(e("ann", &[("laps", int(40))]), "incr"),
            op(e("ned", &[("laps", int(1))]), "incr"),
        ],
    )
    .await;
    // Bad input anywhere refuses the whole batch.
    for (label, bad) in [
        (
            "unknown key",
            e("oli", &[("lapz", int(1)), ("time", int(1))]),
        ),
        ("lacks a key", e("oli", &[("time", int(1))])),
        (
            "fraction",
            e("oli", &[("laps", int(1)), ("time", flt(0.5))]),
        ),
        (
            "NaN",
            e("oli", &[("laps", int(1)), ("time", flt(f64::NAN))]),
        ),
        ("above max_score", run("oli", 99, 1)),
    ] {
        c.many(label, r, vec![run("pat", 5, 5), bad, run("oli", 5, 5)])
            .await;
    }
    c.all(r, false).await;
    c.read(r, &["ann", "lou", "ned"]).await;
    // Merging and intersecting boards with sort keys is refused.
    let r2 =
        c.b.combine(&ops::Combine {
            dest: "race-merged".into(),
            req: CombineIn {
                sources: vec![r.into()],
                weights: None,
                aggregate: None,
            },
            intersect: false,
        })
        .await;
    c.l.add("merge race", r2);
    let r2 =
        c.b.combine(&ops::Combine {
            dest: "race-merged".into(),
            req: CombineIn {
                sources: vec!["plain".into(), r.into()],
                weights: None,
                aggregate: Some("max".into()),
            },
            intersect: true,
        })
        .await;
    c.l.add("intersect race", r2);
}

/// Kills desc by increments, then the time the total was reached asc: keys
/// left out are kept, new members take their keys as given, increments
/// past 64 bits fail, and ties are dense.
async fn kills(c: &mut Ctx<'_>) {
    let k = "kills";
    c.create(
        k,
        json!({"update": "incr", "ranking": "dense",
               "sort": [{"key": "kills", "type": "int"},
                        {"key": "at", "order": "asc", "type": "int", "op": "set"}]}),
    )
    .await;
    let hit = |m: &str, n: i64, at: i64| e(m, &[("kills", int(n)), ("at", int(at))]);
    let ones = [
        ("ann", hit("ann", 2, 100)),
        ("bob", hit("bob", 3, 110)),
        ("ann again", hit("ann", 1, 120)),
        ("ann no time", e("ann", &[("kills", int(0))])),
        ("new, time only", e("cat", &[("at", int(50))])),
        ("new, kills only", e("dan", &[("kills", int(3))])),
        ("tie ann", hit("eve", 3, 120)),
        ("empty", e("eve", &[])),
        ("set lacks a key", op(e("eve", &[("kills", int(5))]), "set")),
        ("set all", op(hit("fay", 5, 5), "set")),
        ("best worse", op(hit("fay", 5, 6), "best")),
        ("best better", op(hit("fay", 5, 4), "best")),
        ("plain adds to first", s("ann", 2.0)),
        ("plain new", s("gus", 4.0)),
        ("plain fraction", s("gus", 0.5)),
        ("plain -inf", s("gus", f64::NEG_INFINITY)),
        ("near max", hit("max", i64::MAX - 1, 0)),
        ("to max", e("max", &[("kills", int(1))])),
        ("past max", e("max", &[("kills", int(1))])),
        // Not i64::MIN itself: see `big`.
        ("near min", hit("min", i64::MIN + 2, 0)),
        ("to min", e("min", &[("kills", int(-1))])),
        ("past min", e("min", &[("kills", int(-2))])),
        ("min plus max", e("min", &[("kills", int(i64::MAX))])),
        ("gt by a later key", cond(hit("bob", 0, 200), CondIn::Gt)),
        ("lt by a later key", cond(hit("bob", 0, 100), CondIn::Lt)),
        ("lt equal", cond(hit("bob", 0, 100), CondIn::Lt)),
        ("nx", only(hit("bob", 1, 1), Only::New)),
        ("xx", only(hit("new", 1, 1), Only::Existing)),
    ];
    for (label, x) in ones {
        c.one(label, k, x).await;
    }
    c.many(
        "overflow item",
        k,
        vec![
            e("max", &[("kills", int(1))]),
            e("ann", &[("kills", int(1))]),
            e("ann", &[("kills", int(1)), ("at", int(130))]),
            e("min", &[("kills", int(i64::MIN + 1))]),
            e("min", &[("kills", int(-2))]),
            e("hal", &[("at", int(7))]),
            e("hal", &[("kills", int(3))]),
        ],
    )
    .await;
    c.read(k, &["ann", "bob", "eve", "max"]).await;
    c.ranges(
        k,
        &[
            bounds(Some(int(3)), Some(int(3)), false, false),
            bounds(Some(int(3)), Some(int(6)), true, false),
            bounds(Some(int(i64::MAX)), None, false, false),
            bounds(None, Some(int(i64::MIN)), false, false),
            bounds(Some(flt(2.5)), Some(flt(5.5)), false, false),
            bounds(Some(flt(f64::NEG_INFINITY)), Some(flt(0.0)), false, true),
        ],
    )
    .await;
}

/// Float keys with every key operator: fractions, negatives, ±0 (which
/// rank alike), infinities, and a float first key's bounds.
async fn floats(c: &mut Ctx<'_>) {
    let f = "floats";
    c.create(
        f,
        json!({"update": "incr", "ranking": "dense",
               "sort": [{"key": "pts"},
                        {"key": "lap", "order": "asc", "op": "min"},
                        {"key": "peak", "type": "int", "op": "max"}]}),
    )
    .await;
    let all = |m: &str, p: f64, lap: f64, peak: i64| {
        e(
            m,
            &[("pts", flt(p)), ("lap", flt(lap)), ("peak", int(peak))],
        )
    };
    let ones = [
        ("a", all("a", 1.5, 61.25, 3)),
        ("a again", all("a", -0.5, 62.0, 2)),
        ("a lap", e("a", &[("lap", flt(60.125))])),
        ("b ties a", all("b", 1.0, 60.125, 3)),
        ("c", all("c", 1.0, 60.125, 4)),
        ("negative zero", all("z", -0.0, -0.0, 0)),
        ("zero", all("y", 0.0, 0.0, 0)),
        ("negative zero again", e("z", &[("pts", flt(-0.0))])),
        ("zero onto negative zero", e("z", &[("lap", flt(0.0))])),
        ("negative", all("n", -2.75, 100.0, -5)),
        ("inf", all("i", f64::INFINITY, 1.0, 1)),
        ("inf - inf", e("i", &[("pts", flt(f64::NEG_INFINITY))])),
        ("huge", all("h", 1.7976931348623157e308, 1.0, 1)),
        (
            "huge doubled",
            e("h", &[("pts", flt(1.7976931348623157e308))]),
        ),
        ("fraction into int", e("d", &[("peak", flt(2.5))])),
        ("whole float into int", e("d", &[("peak", flt(3.0))])),
        ("int into float", e("d", &[("pts", int(P53 + 1))])),
        ("set lacks", op(e("d", &[("pts", flt(1.0))]), "set")),
        ("set", op(all("d", 0.25, 59.5, 9), "set")),
        ("best worse", op(all("d", 0.25, 59.75, 9), "best")),
        ("best better", op(all("d", 0.25, 59.25, 0), "best")),
        ("gt", cond(e("d", &[("pts", flt(-0.25))]), CondIn::Gt)),
        ("lt", cond(e("d", &[("pts", flt(-0.25))]), CondIn::Lt)),
        // min/max that change nothing are still applied.
        ("no change", e("c", &[("lap", flt(61.0)), ("peak", int(1))])),
        ("NaN", e("c", &[("lap", flt(f64::NAN))])),
    ];
    for (label, x) in ones {
        c.one(label, f, x).await;
    }
    c.read(f, &["a", "b", "z", "y"]).await;
    c.ranges(
        f,
        &[
            bounds(Some(flt(0.0)), Some(flt(0.0)), false, false),
            bounds(Some(flt(-0.0)), Some(flt(1.0)), true, false),
            bounds(Some(flt(0.25)), Some(flt(1.5)), false, true),
            bounds(Some(flt(-3.0)), Some(flt(f64::INFINITY)), true, true),
            bounds(Some(int(1)), Some(int(1)), false, false),
            bounds(Some(int(P53)), None, false, false),
        ],
    )
    .await;
}

/// Exact integers where doubles are not: around ±2^53 and at the ends of
/// 64 bits, with exact and float bounds, exact removals, and an
/// increment past the end.
async fn big(c: &mut Ctx<'_>) {
    let g = "big";
    c.create(
        g,
        json!({"update": "set", "ranking": "dense",
               "sort": [{"key": "xp", "type": "int"},
                        {"key": "tb", "order": "asc", "type": "int"}]}),
    )
    .await;
    // Not i64::MIN itself: writing it out takes its `abs()`, which
    // overflows (a panic in a debug build).
    let vals = [
        ("max", i64::MAX, 0),
        ("max-1", i64::MAX - 1, 0),
        ("min+1", i64::MIN + 1, 0),
        ("min+2", i64::MIN + 2, 5),
        ("p53", P53, 0),
        ("p53+1", P53 + 1, 0),
        ("p53+1b", P53 + 1, -1),
        ("p53+2", P53 + 2, 0),
        ("p53-1", P53 - 1, 0),
        ("-p53", -P53, 0),
        ("-p53-1", -P53 - 1, i64::MAX),
        ("zero", 0, i64::MIN + 1),
    ];
    let batch = vals
        .iter()
        .map(|(m, xp, tb)| e(m, &[("xp", int(*xp)), ("tb", int(*tb))]))
        .collect();
    c.many("fill", g, batch).await;
    let ones = [
        (
            "2^53 as a float",
            e("f53", &[("xp", flt(P53 as f64)), ("tb", int(0))]),
        ),
        (
            "2^63 as a float",
            e("f63", &[("xp", flt((1u64 << 63) as f64)), ("tb", int(0))]),
        ),
        ("incr past max", op(e("max", &[("xp", int(1))]), "incr")),
        ("incr past min", op(e("min+1", &[("xp", int(-2))]), "incr")),
        (
            "incr to max",
            op(e("max-1", &[("xp", int(1)), ("tb", int(1))]), "incr"),
        ),
        ("incr at 2^53", op(e("p53", &[("xp", int(1))]), "incr")),
        ("plain score", s("pl", 9007199254740993.0)),
    ];
    for (label, x) in ones {
        c.one(label, g, x).await;
    }
    c.all(g, false).await;
    c.all(g, true).await;
    c.ranges(
        g,
        &[
            bounds(Some(int(P53 + 1)), Some(int(P53 + 1)), false, false),
            bounds(Some(int(P53)), Some(int(P53 + 2)), true, true),
            bounds(Some(int(P53)), None, true, false),
            bounds(Some(int(i64::MAX)), Some(int(i64::MAX)), false, false),
            bounds(Some(int(i64::MAX - 1)), None, true, false),
            bounds(None, Some(int(i64::MIN + 2)), false, false),
            bounds(Some(int(i64::MIN)), Some(int(-P53)), true, true),
            // A double bound is exact too: 2^53 + 1 is above the double 2^53.
            bounds(Some(flt(P53 as f64)), Some(flt(P53 as f64)), false, false),
            bounds(Some(flt(P53 as f64)), None, true, false),
            bounds(Some(flt(9.3e18)), None, false, false),
            bounds(Some(flt(-9.3e18)), Some(flt(f64::INFINITY)), false, false),
            bounds(Some(int(5)), Some(int(-5)), false, false),
        ],
    )
    .await;
    c.read(g, &["p53+1", "min+1", "max"]).await;
    c.remove_by(
        g,
        ops::RangeBy::Score(bounds(Some(int(P53 + 1)), Some(int(P53 + 1)), false, false)),
    )
    .await;
    c.remove_by(
        g,
        ops::RangeBy::Score(bounds(Some(int(i64::MAX - 1)), None, true, false)),
    )
    .await;
    c.all(g, false).await;
}

/// Named members on a sorted board: search answers in rank order with
/// every key, through renames; a reset archives the board with its sort.
async fn cup(c: &mut Ctx<'_>) {
    let b = "cup";
    c.create(
        b,
        json!({"update": "incr", "ranking": "competition", "search_fields": ["name", "team"],
               "sort": [{"key": "pts", "type": "int"},
                        {"key": "gd", "type": "int"},
                        {"key": "yellow", "order": "asc", "type": "int"}]}),
    )
    .await;
    let team = |m: &str, name: &str, t: &str, pts: i64, gd: i64, y: i64| {
        with(
            e(m, &[("pts", int(pts)), ("gd", int(gd)), ("yellow", int(y))]),
            |x| {
                x.name = Some(name.into());
                x.data = Some(json!({"team": t}));
            },
        )
    };
    c.many(
        "fill",
        b,
        vec![
            team("a", "Alice Red", "red", 9, 4, 2),
            team("b", "Alina Blue", "blue", 9, 6, 1),
            team("c", "Bob", "red", 3, 0, 0),
            team("d", "Al Alvarez", "green", 9, 6, 1),
            team("e", "José Ángel", "red", 9, 6, 3),
            e("f", &[("pts", int(0))]),
        ],
    )
    .await;
    for q in [
        "al",
        "ali",
        "team:red",
        "team:red al",
        "jose",
        "bob",
        "f",
        "zzz",
    ] {
        c.search(b, q).await;
    }
    c.set_data(b, "c", Some("Alfred"), Some(json!({"team": "blue"})))
        .await;
    c.set_data(b, "a", Some(""), None).await;
    c.set_data(b, "nobody", Some("X"), None).await;
    c.one("more", b, e("c", &[("pts", int(7))])).await;
    for q in ["al", "team:blue", "a"] {
        c.search(b, q).await;
    }
    c.read(b, &["a", "b", "d", "f"]).await;
    let r =
        c.b.reset(&ops::Reset {
            board: b.to_string(),
        })
        .await;
    c.l.add("reset cup", r);
    let archive = "cup@2026-11-21T12:00:00Z";
    c.read(archive, &["a", "b", "e"]).await;
    c.search(archive, "al").await;
    c.one("into the archive", archive, e("a", &[("pts", int(1))]))
        .await;
    c.info(b).await;
    c.one("after reset", b, e("z", &[("pts", int(1)), ("gd", int(1))]))
        .await;
    c.all(b, false).await;
    let r =
        c.b.board_delete(&ops::DeleteBoard {
            board: b.to_string(),
        })
        .await;
    c.l.add("delete cup", r);
    let r =
        c.b.board_delete(&ops::DeleteBoard {
            board: b.to_string(),
        })
        .await;
    c.l.add("delete cup again", r);
    c.info(b).await;
    c.info(archive).await;
}

/// `board_update` changing the sort of a live board: a key added, a later
/// key's direction flipped, types changed where the values allow, the
/// first key's direction flipped, changes refused (a fraction into an
/// int, no key kept), keys dropped, and a plain board gaining and losing
/// its sort.
async fn resorts(c: &mut Ctx<'_>, rng: &mut SmallRng) {
    let b = "ladder";
    let sort = |keys: Value| json!({"update": "set", "ranking": "competition", "sort": keys});
    c.create(
        b,
        sort(json!([{"key": "wins", "type": "int"}, {"key": "elo"}])),
    )
    .await;
    let batch = (0..24)
        .map(|i| {
            e(
                &format!("l{i:02}"),
                &[
                    ("wins", int(rng.random_range(0..4))),
                    ("elo", flt(1400.0 + 50.0 * rng.random_range(0..4) as f64)),
                ],
            )
        })
        .collect();
    c.many("fill", b, batch).await;
    c.all(b, false).await;
    let members = ["l00", "l05", "l23"];
    let changes = [
        (
            "add a key",
            json!([{"key": "wins", "type": "int"}, {"key": "elo"},
                   {"key": "streak", "type": "int", "order": "asc"}]),
        ),
        (
            "flip a later key",
            json!([{"key": "wins", "type": "int"}, {"key": "elo", "order": "asc"},
                   {"key": "streak", "type": "int", "order": "asc"}]),
        ),
        (
            "float to int",
            json!([{"key": "wins", "type": "int"}, {"key": "elo", "order": "asc", "type": "int"},
                   {"key": "streak", "type": "int", "order": "asc"}]),
        ),
        (
            "int to float, first",
            json!([{"key": "wins"}, {"key": "elo", "order": "asc", "type": "int"},
                   {"key": "streak", "type": "int", "order": "asc"}]),
        ),
        (
            "flip the first key",
            json!([{"key": "wins", "order": "asc"}, {"key": "elo", "order": "asc", "type": "int"},
                   {"key": "streak", "type": "int", "order": "asc"}]),
        ),
    ];
    for (label, keys) in changes {
        c.put(label, b, sort(keys)).await;
        c.all(b, false).await;
    }
    c.read(b, &members).await;
    // A fraction in a key that would become an int refuses the change.
    c.put(
        "back to float",
        b,
        sort(json!([{"key": "wins"}, {"key": "elo", "order": "asc"},
                    {"key": "streak", "type": "int", "order": "asc"}])),
    )
    .await;
    c.one(
        "a fraction",
        b,
        e(
            "l05",
            &[
                ("wins", flt(2.5)),
                ("elo", flt(1499.5)),
                ("streak", int(-3)),
            ],
        ),
    )
    .await;
    c.put(
        "fraction into int",
        b,
        sort(
            json!([{"key": "wins"}, {"key": "elo", "order": "asc", "type": "int"},
                    {"key": "streak", "type": "int", "order": "asc"}]),
        ),
    )
    .await;
    c.put(
        "first key fraction into int",
        b,
        sort(
            json!([{"key": "wins", "type": "int"}, {"key": "elo", "order": "asc"},
                    {"key": "streak", "type": "int", "order": "asc"}]),
        ),
    )
    .await;
    c.put("no key kept", b, sort(json!([{"key": "w"}, {"key": "e"}])))
        .await;
    c.put("bad sort", b, sort(json!([]))).await;
    c.put(
        "a key twice",
        b,
        sort(json!([{"key": "wins"}, {"key": "wins"}])),
    )
    .await;
    c.put(
        "five keys",
        b,
        sort(json!([{"key": "a"}, {"key": "b"}, {"key": "c"}, {"key": "d"}, {"key": "wins"}])),
    )
    .await;
    c.info(b).await;
    c.all(b, false).await;
    // Only the operators change: the order stays.
    c.put(
        "ops only",
        b,
        json!({"update": "incr", "ranking": "dense",
               "sort": [{"key": "wins", "op": "max"}, {"key": "elo", "order": "asc", "op": "min"},
                        {"key": "streak", "type": "int", "order": "asc", "op": "set"}]}),
    )
    .await;
    c.one(
        "max",
        b,
        e("l05", &[("wins", flt(1.0)), ("elo", flt(1300.0))]),
    )
    .await;
    c.put(
        "drop a key, new first",
        b,
        json!({"update": "incr", "ranking": "dense", "max_members": 20,
               "sort": [{"key": "elo", "order": "asc"}, {"key": "rounds", "type": "int"}]}),
    )
    .await;
    c.all(b, false).await;
    c.put("plain", b, json!({"ranking": "dense"})).await;
    c.all(b, false).await;
    c.one("scores on a plain board", b, e("l01", &[("score", int(1))]))
        .await;
    c.put(
        "sorted again",
        b,
        json!({"ranking": "dense",
               "sort": [{"key": "wins", "type": "int"}, {"key": "score", "order": "asc"}]}),
    )
    .await;
    c.all(b, false).await;
    c.read(b, &members).await;
    c.resort("nope").await;
    c.put(
        "new sorted board",
        "ladder2",
        json!({"sort": [{"key": "k", "type": "int", "order": "asc"}]}),
    )
    .await;
    c.one("into new", "ladder2", e("x", &[("k", int(-1))]))
        .await;
    c.all("ladder2", false).await;
    // A plain board whose key is not named `score` gives the first key
    // its scores.
    c.many(
        "plain fill",
        "plainer",
        vec![s("p", 1.5), s("q", -2.0), s("r", 1.5)],
    )
    .await;
    c.one(
        "scores into plain",
        "plainer",
        e("p", &[("score", flt(1.0))]),
    )
    .await;
    c.put(
        "plain to sorted",
        "plainer",
        json!({"sort": [{"key": "best", "order": "asc"}, {"key": "n", "type": "int"}]}),
    )
    .await;
    c.all("plainer", false).await;
    c.one(
        "implicit board with scores",
        "implicit",
        e("p", &[("score", flt(1.0))]),
    )
    .await;
    c.info("implicit").await;
}

/// Boards of 2, 3 and 4 keys in mixed directions, types, operators,
/// update rules and rankings, with bounds and caps, under seeded random
/// batches over small value domains (so ties are many), each followed by
/// the whole board; then reads, removals of every kind, single submits
/// with conditions, and a cap lowered.
async fn random_boards(c: &mut Ctx<'_>, rng: &mut SmallRng) {
    let configs = [
        json!({"update": "set", "ranking": "unique",
               "sort": [{"key": "a", "type": "int"}, {"key": "b", "order": "asc"}]}),
        json!({"update": "best", "ranking": "dense", "order": "asc",
               "min_score": -2, "max_score": 6,
               "sort": [{"key": "a", "order": "asc"}, {"key": "b", "type": "int"}]}),
        json!({"update": "incr", "ranking": "competition", "max_members": 12,
               "sort": [{"key": "a", "type": "int"},
                        {"key": "b", "type": "int", "order": "asc", "op": "set"},
                        {"key": "c", "op": "max"}]}),
        json!({"update": "incr", "ranking": "dense",
               "sort": [{"key": "a", "order": "asc", "op": "min"},
                        {"key": "b"},
                        {"key": "c", "type": "int", "order": "asc", "op": "max"}]}),
        json!({"update": "best", "ranking": "competition", "max_members": 15,
               "sort": [{"key": "a", "type": "int", "order": "asc"}, {"key": "b"},
                        {"key": "c", "type": "int"}, {"key": "d", "order": "asc"}]}),
        json!({"update": "incr", "ranking": "unique", "min_score": -3, "max_score": 5,
               "sort": [{"key": "a", "type": "int", "op": "max"},
                        {"key": "b", "type": "int", "order": "asc", "op": "min"},
                        {"key": "c", "op": "set"},
                        {"key": "d", "type": "int"}]}),
        json!({"update": "incr", "ranking": "dense", "max_members": 8,
               "min_score": -3, "max_score": 4,
               "sort": [{"key": "a", "type": "int"}, {"key": "b", "order": "asc"}]}),
        json!({"update": "set", "ranking": "competition",
               "sort": [{"key": "a"}, {"key": "b", "type": "int", "order": "asc"},
                        {"key": "c", "type": "int"}, {"key": "d"}]}),
    ];
    // No -0.0: `floats` has it, where a difference shows as one line.
    const FLOATS: [f64; 8] = [-1.5, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5];
    for (i, cfg) in configs.into_iter().enumerate() {
        let board = format!("r{i}");
        let keys: Vec<(String, bool)> = cfg["sort"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["key"].as_str().unwrap().to_string(), k["type"] == "int"))
            .collect();
        let update = cfg["update"].as_str().unwrap().to_string();
        c.create(&board, cfg.clone()).await;
        let value = |rng: &mut SmallRng, is_int: bool| {
            if is_int {
                int(rng.random_range(-2..=3))
            } else {
                flt(FLOATS[rng.random_range(0..FLOATS.len())])
            }
        };
        for round in 0..6 {
            let n = rng.random_range(1..30);
            let mut batch = Vec::with_capacity(n);
            for _ in 0..n {
                let m = format!("m{:02}", rng.random_range(0..25));
                let o = match rng.random_range(0..10) {
                    0 => Some("set"),
                    1 => Some("best"),
                    2 => Some("incr"),
                    _ => None,
                };
                let every = o.unwrap_or(&update) != "incr";
                let mut x = if rng.random_range(0..20) == 0 {
                    s(&m, rng.random_range(-2..=3) as f64)
                } else {
                    let mut vals = Vec::new();
                    for (k, is_int) in &keys {
                        if every || rng.random_bool(0.6) {
                            vals.push((k.as_str(), value(rng, *is_int)));
                        }
                    }
                    e(&m, &vals)
                };
                x.op = o.map(str::to_string);
                match rng.random_range(0..30) {
                    0 => x.cond = Some(CondIn::Gt),
                    1 => x.cond = Some(CondIn::Lt),
                    2 => x.only = Some(Only::New),
                    3 => x.only = Some(Only::Existing),
                    4 => x.name = Some(format!("Name {m}")),
                    _ => {}
                }
                batch.push(x);
            }
            c.many(&format!("round {round}"), &board, batch).await;
            c.all(&board, false).await;
        }
        c.read(&board, &["m00", "m07", "m13"]).await;
        // Members equal on the first key but not on the rest: their ranks.
        c.search(&board, "m1").await;
        c.remove(&board, &["m01", "m02", "m01", "nobody"]).await;
        c.remove_by(&board, ops::RangeBy::Rank { start: 2, stop: 3 })
            .await;
        c.remove_by(
            &board,
            ops::RangeBy::Score(bounds(Some(int(1)), Some(int(1)), false, false)),
        )
        .await;
        c.remove_by(
            &board,
            ops::RangeBy::Score(bounds(Some(flt(-0.5)), Some(flt(0.5)), true, true)),
        )
        .await;
        c.all(&board, true).await;
        for k in 0..6 {
            let m = format!("m{:02}", rng.random_range(0..25));
            let vals: Vec<(&str, Num)> = keys
                .iter()
                .map(|(k, is_int)| (k.as_str(), value(rng, *is_int)))
                .collect();
            let x = match k % 3 {
                0 => cond(e(&m, &vals), CondIn::Gt),
                1 => cond(e(&m, &vals), CondIn::Lt),
                _ => only(e(&m, &vals), Only::Existing),
            };
            c.one(&format!("one {k}"), &board, x).await;
        }
        let mut capped = cfg.clone();
        capped["max_members"] = json!(5);
        c.put("cap", &board, capped).await;
        c.all(&board, false).await;
        c.all(&board, true).await;
        c.info(&board).await;
    }
}

/// The whole scenario against `b`: the answers, one line per call.
pub(super) async fn sorted_scenario(b: &dyn Backend) -> Vec<String> {
    let mut c = Ctx {
        b,
        l: Log::default(),
    };
    let mut rng = SmallRng::seed_from_u64(53);
    race(&mut c).await;
    kills(&mut c).await;
    floats(&mut c).await;
    big(&mut c).await;
    cup(&mut c).await;
    resorts(&mut c, &mut rng).await;
    random_boards(&mut c, &mut rng).await;
    keyed_batches(&mut c, &mut rng).await;
    for board in ["race", "kills", "r0"] {
        let r =
            c.b.export_chunk(&ops::ExportChunk {
                board: board.to_string(),
                pos: 0,
                limit: 1000,
            })
            .await;
        c.l.add(&format!("export {board}"), r);
    }
    let r = c.b.boards(&ops::ListBoards).await;
    c.l.add("boards", r);
    c.l.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn composite_boards_answer_alike_on_embedded_single_redis_and_cluster() {
    let want = sorted_scenario(&embedded()).await;
    assert!(want.len() > 500, "the scenario covers {} calls", want.len());
    // For reviewing what the scenario asks and answers.
    if let Some(path) = std::env::var_os("PODIUM_CONFORMANCE_DUMP_SORTED") {
        std::fs::write(path, want.join("\n")).unwrap();
    }

    let single = Redis::single(false);
    let rb = redis_backend(&single.url()).await;
    let got = sorted_scenario(&rb).await;
    compare("redis", &want, &got);
    // A deleted board leaves no key behind.
    let left = redis_cli(single.nodes[0].port, &["KEYS", "{cup}:*"]);
    assert!(left.trim().is_empty(), "cup left: {left}");

    let cluster = Redis::cluster(false);
    let cb = redis_backend(&cluster.url()).await;
    let got = sorted_scenario(&cb).await;
    compare("cluster", &want, &got);
    eprintln!(
        "{} answers identical on embedded, redis and cluster",
        want.len()
    );
}

/// Batches of plain sets (every key, each member once, no name or data)
/// on boards without a cap that are not dense: the Redis backend applies
/// them in bulk and works out each entry's rank as applied in order, which
/// must be the engine's, with ties on the first key, on the whole tuple,
/// moves both ways and new members; now and then a batch that takes the
/// per-entry path (a repeated member, a name, an `only`).
async fn keyed_batches(c: &mut Ctx<'_>, rng: &mut SmallRng) {
    for (i, (board_order, later, ranking)) in [
        ("desc", "asc", "unique"),
        ("asc", "desc", "unique"),
        ("desc", "desc", "competition"),
        ("asc", "asc", "competition"),
    ]
    .into_iter()
    .enumerate()
    {
        let board = format!("kb{i}");
        c.create(
            &board,
            json!({"ranking": ranking, "sort": [
                {"key": "a", "order": board_order, "type": "int"},
                {"key": "b", "order": later, "type": "float"}]}),
        )
        .await;
        for round in 0..30 {
            let n = rng.random_range(1..40);
            let mut pool: Vec<usize> = (0..60).collect();
            let mut batch = Vec::new();
            for _ in 0..n {
                let m = pool.swap_remove(rng.random_range(0..pool.len()));
                batch.push(e(
                    &format!("k{m}"),
                    &[
                        ("a", int(rng.random_range(0..4))),
                        ("b", flt(rng.random_range(0..3) as f64 / 2.0)),
                    ],
                ));
            }
            match rng.random_range(0..10) {
                0 => batch.push(e(
                    &batch[0].member.clone(),
                    &[("a", int(9)), ("b", flt(0.0))],
                )),
                1 => batch[0].name = Some(format!("Keyed {round}")),
                2 => batch[0].only = Some(Only::Existing),
                _ => {}
            }
            let r =
                c.b.submit(&ops::SubmitMany {
                    board: board.clone(),
                    entries: batch,
                })
                .await;
            c.l.add(&format!("keyed batch {board}"), r);
            if round % 10 == 9 {
                let r =
                    c.b.top(&ops::Top {
                        board: board.clone(),
                        page: Some(1),
                        page_size: Some(100),
                        with_data: false,
                    })
                    .await;
                c.l.add(&format!("keyed top {board}"), r);
            }
        }
    }
}

/// A big board's whole content, as its pages read it.
async fn whole(b: &dyn Backend, board: &str) -> Vec<String> {
    let mut log = Log::default();
    for page in 1..=40 {
        log.add(
            &format!("top {board} p{page}"),
            b.top(&ops::Top {
                board: board.to_string(),
                page: Some(page),
                page_size: Some(1000),
                with_data: false,
            })
            .await,
        );
    }
    log.0
}

/// The writes of the big re-sort scenario: 25,000 members over three
/// keys with many ties (several chunks of the Redis re-sort), then a
/// `board_update` that flips a later key, drops one and adds one.
async fn big_resort(b: &dyn Backend) -> Vec<String> {
    let mut log = Log::default();
    let config = json!({"ranking": "competition", "sort": [
        {"key": "pts", "order": "desc", "type": "int"},
        {"key": "t", "order": "asc", "type": "float"},
        {"key": "x", "order": "desc", "type": "int"}]});
    let r = b
        .board_create(&ops::CreateBoard {
            board: "huge".into(),
            config,
        })
        .await;
    log.add("create", r);
    for batch in 0..25 {
        let entries: Vec<SubmitIn> = (0..1000)
            .map(|i| {
                let n: i64 = batch * 1000 + i;
                e(
                    &format!("m{n}"),
                    &[
                        ("pts", int(n % 97)),
                        ("t", flt((n % 13) as f64 / 4.0)),
                        ("x", int(P53 + n % 3)),
                    ],
                )
            })
            .collect();
        let r = b
            .submit(&ops::SubmitMany {
                board: "huge".into(),
                entries,
            })
            .await;
        log.add(&format!("batch {batch}"), r.map(|v| v.len()));
    }
    let r = b
        .board_put(&ops::PutBoard {
            board: "huge".into(),
            config: json!({"ranking": "dense", "sort": [
                {"key": "pts", "order": "desc", "type": "int"},
                {"key": "t", "order": "desc", "type": "float"},
                {"key": "y", "order": "asc", "type": "int"}]}),
            confirm_rerank: true,
        })
        .await;
    log.add("put", r);
    log.0.extend(whole(b, "huge").await);
    log.0
}

/// A re-sort on Redis runs in chunks of 10,000 members: a board of
/// 25,000 re-sorted there answers every page as the embedded engine's.
/// While a re-sort holds a board its writes wait (and another node sees
/// its progress); one whose podium stopped lets go when its lease ends,
/// leaving the board as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_resort_in_chunks_holds_writes_and_lets_go_when_abandoned() {
    let want = big_resort(&embedded()).await;
    let single = Redis::single(false);
    let port = single.nodes[0].port;
    let rb = redis_backend(&single.url()).await;
    compare("redis", &want, &big_resort(&rb).await);
    assert!(
        redis_cli(port, &["EXISTS", "{huge}:rz", "{huge}:rt"]).trim() == "0",
        "a finished re-sort leaves no keys behind"
    );

    // A re-sort in progress, as another node's would look: its progress
    // is reported, and a write waits until it is done.
    let deadline = chrono::Utc::now().timestamp_millis() + 60_000;
    let rs = format!("other.1 {deadline} 10000 25000");
    redis_cli(port, &["HSET", "{huge}:c", "rs", &rs]);
    let status = rb
        .resort_status(&ops::ResortStatus {
            board: "huge".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        (status.running, status.done, status.total),
        (true, 10_000, 25_000)
    );
    let write = {
        let rb = redis_backend(&single.url()).await;
        tokio::spawn(async move {
            rb.submit_one(&ops::Submit {
                board: "huge".into(),
                entry: e("late", &[("pts", int(500)), ("t", flt(0.0)), ("y", int(0))]),
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "a write waits for the re-sort");
    redis_cli(port, &["HDEL", "{huge}:c", "rs"]);
    let out = write.await.unwrap().unwrap();
    assert_eq!(out.rank, Some(1));

    // Abandoned: its lease ran out and it left half-built keys; the next
    // write drops them and the board is as it was.
    let rs = format!(
        "gone.1 {} 10000 25001",
        chrono::Utc::now().timestamp_millis() - 1
    );
    redis_cli(port, &["HSET", "{huge}:c", "rs", &rs]);
    redis_cli(port, &["ZADD", "{huge}:rz", "0", "half-built"]);
    let status = rb
        .resort_status(&ops::ResortStatus {
            board: "huge".into(),
        })
        .await
        .unwrap();
    assert!(!status.running, "an expired re-sort is not reported");
    rb.remove(&ops::Remove {
        board: "huge".into(),
        members: vec!["late".into()],
    })
    .await
    .unwrap();
    assert_eq!(redis_cli(port, &["EXISTS", "{huge}:rz"]).trim(), "0");
    assert_eq!(redis_cli(port, &["HEXISTS", "{huge}:c", "rs"]).trim(), "0");
    compare(
        "redis after",
        &want[want.len() - 40..],
        &whole(&rb, "huge").await,
    );
}
