//! Board configuration: ordering, ranking mode, tiebreak, update
//! operator, bounds, capacity, reset schedule, search fields and the
//! limit on each member's submissions.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::sort::{self, SortKey};
use crate::webhook::{self, Webhook};

/// Which scores are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Higher is better.
    #[default]
    Desc,
    /// Lower is better (lap times).
    Asc,
}

/// How ties share ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    /// 1, 2, 3, 4: every member its own rank.
    #[default]
    Unique,
    /// 1, 1, 2: ties share a rank, the next rank follows on.
    Dense,
    /// 1, 1, 3: ties share a rank, the next rank skips.
    Competition,
}

/// The order among equal scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tiebreak {
    /// Member bytes, exactly as Redis: ascending on an `asc` board, the
    /// exact reverse on a `desc` board (like ZREVRANGE).
    #[default]
    Member,
    /// Who reached the score first ranks higher.
    First,
    /// Who reached the score last ranks higher.
    Last,
}

/// The operator a submission applies to an existing score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateOp {
    /// Replace.
    #[default]
    Set,
    /// Keep only an improvement, per the board's order.
    Best,
    /// Add (a negative number decrements).
    Incr,
}

/// When a board archives its content and starts empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Reset {
    #[default]
    Never,
    Daily,
    Weekly,
    Monthly,
    /// A cron expression; parsed and scheduled by the server.
    Cron(String),
}

/// What makes a board an archive: the board it was reset from, and where
/// it stands among that board's archives (`seq` grows with every reset), so
/// that `keep_archives` and listings never have to guess from names, which
/// any writer can choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveOf {
    pub board: String,
    pub seq: u64,
}

/// `max_submits_per_member`: at most `count` submissions of one member
/// per `per` (a token bucket of `count` tokens refilled over `per`;
/// enforced by the operations layer, not the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitLimit {
    pub count: u64,
    pub per: Duration,
}

impl SubmitLimit {
    /// `{"count": N, "per": "1m"}`; `per` is a number of seconds or a
    /// duration string (`500ms`, `30s`, `1m`, `2h`, `1d`).
    fn from_json(v: &serde_json::Value) -> Result<SubmitLimit> {
        let bad = |m: &str| Error::BadConfig(format!("max_submits_per_member {m}"));
        let obj = v
            .as_object()
            .ok_or_else(|| bad(r#"must be an object such as {"count": 10, "per": "1m"}"#))?;
        if let Some(k) = obj.keys().find(|k| *k != "count" && *k != "per") {
            return Err(bad(&format!(
                "has an unknown field {k:?}: expected count and per"
            )));
        }
        let count = obj
            .get("count")
            .and_then(whole)
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad("count must be an integer of at least 1"))?;
        let per = match obj.get("per") {
            Some(serde_json::Value::String(s)) => parse_duration(s),
            Some(n) => n
                .as_f64()
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e12)
                .map(Duration::from_secs_f64),
            None => None,
        }
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            bad(r#"per must be a positive number of seconds or a duration such as "30s", "1m", "2h", "1d""#)
        })?;
        Ok(SubmitLimit { count, per })
    }

    fn to_json(self) -> serde_json::Value {
        serde_json::json!({"count": self.count, "per": format_duration(self.per)})
    }
}

/// A non-negative whole number, written `2` or `2.0` (JSON does not tell
/// integers from other numbers, and some encoders write every number with
/// a fraction).
pub fn whole(v: &serde_json::Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 18_446_744_073_709_551_616.0)
            .map(|f| f as u64)
    })
}

/// `500ms`, `30s`, `5m`, `2h`, `1d`, or a plain number of seconds.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        _ => return None,
    };
    (secs.is_finite() && secs > 0.0 && secs < 1e12).then(|| Duration::from_secs_f64(secs))
}

/// The shortest exact spelling [`parse_duration`] reads back.
fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if d != Duration::from_millis(ms as u64) {
        return format!("{}s", d.as_secs_f64());
    }
    for (unit, name) in [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
    ] {
        if ms.is_multiple_of(unit) {
            return format!("{}{name}", ms / unit);
        }
    }
    format!("{ms}ms")
}

/// Default limit on a member's `data` (a JSON object), in bytes.
pub const DEFAULT_MAX_DATA_BYTES: usize = 4096;

/// Every option of a board. `Default` is the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardConfig {
    pub order: Order,
    pub ranking: Ranking,
    pub tiebreak: Tiebreak,
    pub update: UpdateOp,
    pub min_score: Option<f64>,
    pub max_score: Option<f64>,
    pub max_members: Option<u64>,
    pub reset: Reset,
    pub keep_archives: Option<u32>,
    pub search_fields: Vec<String>,
    pub max_data_bytes: usize,
    /// At most this many submissions of one member per period; none: no
    /// limit.
    pub max_submits_per_member: Option<SubmitLimit>,
    /// Set on the archives a reset makes, never by a client.
    pub archive: Option<ArchiveOf>,
    /// The keys members are ranked by, in order (see [`crate::sort`]);
    /// empty: one float key, the `score`. The first key's direction is
    /// `order`.
    pub sort: Vec<SortKey>,
    /// Where the board's live events are POSTed (see [`crate::webhook`]).
    pub webhooks: Vec<Webhook>,
}

impl Default for BoardConfig {
    fn default() -> Self {
        BoardConfig {
            order: Order::Desc,
            ranking: Ranking::Unique,
            tiebreak: Tiebreak::Member,
            update: UpdateOp::Set,
            min_score: None,
            max_score: None,
            max_members: None,
            reset: Reset::Never,
            keep_archives: None,
            search_fields: vec!["name".to_string()],
            max_data_bytes: DEFAULT_MAX_DATA_BYTES,
            max_submits_per_member: None,
            archive: None,
            sort: Vec::new(),
            webhooks: Vec::new(),
        }
    }
}

impl BoardConfig {
    /// Refuses contradictory or meaningless settings.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::BadConfig(m.to_string()));
        if self.min_score.is_some_and(f64::is_nan) || self.max_score.is_some_and(f64::is_nan) {
            return bad("min_score and max_score must be numbers");
        }
        if let (Some(lo), Some(hi)) = (self.min_score, self.max_score) {
            if lo > hi {
                return bad("min_score must not exceed max_score");
            }
        }
        if self.max_members == Some(0) {
            return bad("max_members must be at least 1");
        }
        if self
            .search_fields
            .iter()
            .any(|f| f.is_empty() || f.len() > 64)
        {
            return bad("search_fields must be names of 1 to 64 bytes");
        }
        // A query names a field as `field:word`, so a name holding a colon,
        // a quote or a space could never be asked for.
        if self
            .search_fields
            .iter()
            .any(|f| f.contains([':', '"']) || f.contains(char::is_whitespace))
        {
            return bad("search_fields names must not contain ':', '\"' or whitespace");
        }
        if self.search_fields.len() > crate::search::MAX_SEARCH_FIELDS {
            return Err(Error::BadConfig(format!(
                "search_fields may list at most {} fields",
                crate::search::MAX_SEARCH_FIELDS
            )));
        }
        if self
            .search_fields
            .iter()
            .enumerate()
            .any(|(i, f)| self.search_fields[..i].contains(f))
        {
            return bad("search_fields must not list a field twice");
        }
        if let Reset::Cron(expr) = &self.reset {
            if expr.trim().is_empty() {
                return bad("reset cron expression is empty");
            }
        }
        if self.archive.as_ref().is_some_and(|a| a.board.is_empty()) {
            return bad("archive_of must name a board");
        }
        sort::validate(&self.sort)?;
        webhook::validate(&self.webhooks)?;
        if self.sort.first().is_some_and(|k| k.order != self.order) {
            return bad("order must be the first sort key's order");
        }
        Ok(())
    }

    /// Whether changing from this config to `new` re-ranks a board: its
    /// order, tiebreak, ranking or the order of its sort keys differ
    /// (a key's `op` only changes what later submissions do).
    pub fn reranks(&self, new: &BoardConfig) -> bool {
        self.order != new.order
            || self.tiebreak != new.tiebreak
            || self.ranking != new.ranking
            || !sort::same_order(&self.sort, &new.sort)
    }

    /// Whether members are ranked by `sort` keys (and carry `scores`)
    /// rather than by a single `score`.
    #[inline]
    pub fn has_sort(&self) -> bool {
        !self.sort.is_empty()
    }

    /// How many values a member holds: its sort keys, or its one score.
    #[inline]
    pub fn key_count(&self) -> usize {
        self.sort.len().max(1)
    }

    /// The keys members hold: the `sort` keys, or a plain board's one float
    /// key, `score`.
    pub fn keys(&self) -> Vec<SortKey> {
        if self.has_sort() {
            return self.sort.clone();
        }
        vec![SortKey::new(
            "score",
            self.order,
            sort::KeyType::Float,
            sort::KeyOp::Incr,
        )]
    }

    /// The position of the sort key named `name`.
    pub fn key_index(&self, name: &str) -> Option<usize> {
        self.sort.iter().position(|k| k.key == name)
    }

    /// Whether `candidate` is strictly better than `current` on this board.
    #[inline]
    pub fn better(&self, candidate: f64, current: f64) -> bool {
        match self.order {
            Order::Desc => candidate > current,
            Order::Asc => candidate < current,
        }
    }

    pub fn in_bounds(&self, score: f64) -> Result<()> {
        let min = self.min_score.unwrap_or(f64::NEG_INFINITY);
        let max = self.max_score.unwrap_or(f64::INFINITY);
        if score < min || score > max {
            return Err(Error::OutOfBounds { score, min, max });
        }
        Ok(())
    }
}

macro_rules! names {
    ($ty:ty { $($variant:ident = $name:literal),* $(,)? }) => {
        impl $ty {
            pub fn as_str(&self) -> &'static str {
                match self { $(Self::$variant => $name),* }
            }
        }
        impl std::str::FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                match s {
                    $($name => Ok(Self::$variant),)*
                    _ => Err(Error::BadConfig(format!(
                        "unknown {} {s:?}; expected one of: {}",
                        stringify!($ty).to_lowercase(),
                        [$($name),*].join(", ")
                    ))),
                }
            }
        }
    };
}

names!(Order { Desc = "desc", Asc = "asc" });
names!(Ranking { Unique = "unique", Dense = "dense", Competition = "competition" });
names!(Tiebreak { Member = "member", First = "first", Last = "last" });
names!(UpdateOp { Set = "set", Best = "best", Incr = "incr" });

impl Reset {
    pub fn parse(s: &str) -> Result<Reset> {
        Ok(match s {
            "never" => Reset::Never,
            "daily" => Reset::Daily,
            "weekly" => Reset::Weekly,
            "monthly" => Reset::Monthly,
            other if other.split_whitespace().count() >= 5 => Reset::Cron(other.to_string()),
            other => {
                return Err(Error::BadConfig(format!(
                    "unknown reset {other:?}; expected never, daily, weekly, monthly or a cron expression"
                )))
            }
        })
    }

    pub fn as_str(&self) -> &str {
        match self {
            Reset::Never => "never",
            Reset::Daily => "daily",
            Reset::Weekly => "weekly",
            Reset::Monthly => "monthly",
            Reset::Cron(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_clear() {
        for o in [Order::Desc, Order::Asc] {
            assert_eq!(o.as_str().parse::<Order>().unwrap(), o);
        }
        let err = "sideways".parse::<Order>().unwrap_err().to_string();
        assert!(err.contains("desc, asc"), "{err}");
        assert_eq!(
            Reset::parse("0 0 * * 1").unwrap(),
            Reset::Cron("0 0 * * 1".into())
        );
        assert!(Reset::parse("hourly").is_err());
    }

    #[test]
    fn validate_refuses_nonsense() {
        let c = BoardConfig {
            min_score: Some(5.0),
            max_score: Some(1.0),
            ..Default::default()
        };
        assert!(c.validate().is_err());
        let c = BoardConfig {
            max_members: Some(0),
            ..Default::default()
        };
        assert!(c.validate().is_err());
        assert!(BoardConfig::default().validate().is_ok());
    }
}

impl BoardConfig {
    /// The config as the JSON object the HTTP API and snapshots use. The
    /// archive fields appear on archives only, and
    /// `max_submits_per_member` on the boards that set it, so a board's
    /// stored bytes are what they were before configs could carry them.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "order": self.order.as_str(),
            "ranking": self.ranking.as_str(),
            "tiebreak": self.tiebreak.as_str(),
            "update": self.update.as_str(),
            "min_score": bound_to_json(self.min_score),
            "max_score": bound_to_json(self.max_score),
            "max_members": self.max_members,
            "reset": self.reset.as_str(),
            "keep_archives": self.keep_archives,
            "search_fields": self.search_fields,
            "max_data_bytes": self.max_data_bytes,
        });
        if let (Some(l), Some(o)) = (self.max_submits_per_member, v.as_object_mut()) {
            o.insert("max_submits_per_member".into(), l.to_json());
        }
        if let (Some(a), Some(o)) = (&self.archive, v.as_object_mut()) {
            o.insert("archive_of".into(), a.board.clone().into());
            o.insert("archive_seq".into(), a.seq.into());
        }
        if let (true, Some(o)) = (self.has_sort(), v.as_object_mut()) {
            o.insert("sort".into(), sort::keys_to_json(&self.sort));
        }
        if let (false, Some(o)) = (self.webhooks.is_empty(), v.as_object_mut()) {
            let hooks = self.webhooks.iter().map(Webhook::to_json).collect();
            o.insert("webhooks".into(), serde_json::Value::Array(hooks));
        }
        v
    }

    /// The config as clients read it: [`BoardConfig::to_json`] without
    /// the webhooks' secrets.
    pub fn to_public_json(&self) -> serde_json::Value {
        let mut v = self.to_json();
        if let (false, Some(o)) = (self.webhooks.is_empty(), v.as_object_mut()) {
            let hooks = self.webhooks.iter().map(Webhook::to_public_json).collect();
            o.insert("webhooks".into(), serde_json::Value::Array(hooks));
        }
        v
    }

    /// Reads a config object; absent or `null` fields keep the defaults,
    /// unknown fields and wrong types are refused with a clear message.
    pub fn from_json(v: &serde_json::Value) -> Result<BoardConfig> {
        let obj = v
            .as_object()
            .ok_or_else(|| Error::BadConfig("config must be a JSON object".into()))?;
        let mut c = BoardConfig::default();
        let bad = |field: &str, want: &str| Error::BadConfig(format!("{field} must be {want}"));
        let (mut archive_of, mut archive_seq) = (None, None);
        let mut order_given = false;
        for (k, v) in obj {
            if v.is_null() {
                continue;
            }
            let s = || v.as_str().ok_or_else(|| bad(k, "a string"));
            let num = || v.as_f64().ok_or_else(|| bad(k, "a number"));
            let int = || whole(v).ok_or_else(|| bad(k, "a non-negative integer"));
            let bound = || match v.as_str() {
                Some(s) => bound_from_str(s).ok_or_else(|| bad(k, r#"a number, "inf" or "-inf""#)),
                None => num(),
            };
            match k.as_str() {
                "order" => {
                    c.order = s()?.parse()?;
                    order_given = true;
                }
                "sort" => c.sort = sort::keys_from_json(v)?,
                "ranking" => c.ranking = s()?.parse()?,
                "tiebreak" => c.tiebreak = s()?.parse()?,
                "update" => c.update = s()?.parse()?,
                "min_score" => c.min_score = Some(bound()?),
                "max_score" => c.max_score = Some(bound()?),
                "max_members" => c.max_members = Some(int()?),
                "reset" => c.reset = Reset::parse(s()?)?,
                "keep_archives" => {
                    c.keep_archives =
                        Some(u32::try_from(int()?).map_err(|_| bad(k, "at most 2^32-1"))?)
                }
                "max_data_bytes" => c.max_data_bytes = int()? as usize,
                "max_submits_per_member" => {
                    c.max_submits_per_member = Some(SubmitLimit::from_json(v)?)
                }
                "webhooks" => {
                    let arr = v.as_array().ok_or_else(|| bad(k, "an array of webhooks"))?;
                    c.webhooks = webhook::list_from_json(arr)?;
                }
                "archive_of" => archive_of = Some(s()?.to_string()),
                "archive_seq" => archive_seq = Some(int()?),
                "search_fields" => {
                    let arr = v.as_array().ok_or_else(|| bad(k, "an array of strings"))?;
                    c.search_fields = arr
                        .iter()
                        .map(|f| {
                            f.as_str()
                                .map(str::to_string)
                                .ok_or_else(|| bad(k, "an array of strings"))
                        })
                        .collect::<Result<_>>()?;
                }
                other => return Err(Error::BadConfig(format!("unknown config field {other:?}"))),
            }
        }
        c.archive = match (archive_of, archive_seq) {
            (None, None) => None,
            (Some(board), Some(seq)) => Some(ArchiveOf { board, seq }),
            _ => return Err(bad("archive_of and archive_seq", "given together")),
        };
        // The first sort key's direction is the board's order; `order`
        // may be left out, or say the same.
        if let Some(first) = c.sort.first() {
            if order_given && c.order != first.order {
                return Err(Error::BadConfig(
                    "order must be the first sort key's order (or be left out)".into(),
                ));
            }
            c.order = first.order;
        }
        c.validate()?;
        Ok(c)
    }
}

/// A score bound as JSON: a number, or `"inf"` / `"-inf"`, as JSON has no
/// infinities (serde_json would write `null`, losing e.g. `min_score: inf`).
fn bound_to_json(b: Option<f64>) -> serde_json::Value {
    match b {
        Some(x) if x == f64::INFINITY => "inf".into(),
        Some(x) if x == f64::NEG_INFINITY => "-inf".into(),
        other => serde_json::json!(other),
    }
}

fn bound_from_str(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let c = BoardConfig {
            order: Order::Asc,
            ranking: Ranking::Dense,
            tiebreak: Tiebreak::First,
            update: UpdateOp::Best,
            min_score: Some(0.0),
            max_score: Some(1e9),
            max_members: Some(100),
            reset: Reset::Cron("0 0 * * 1".into()),
            keep_archives: Some(4),
            search_fields: vec!["name".into(), "team".into()],
            max_data_bytes: 1024,
            max_submits_per_member: Some(SubmitLimit {
                count: 10,
                per: Duration::from_secs(60),
            }),
            archive: Some(ArchiveOf {
                board: "b@x".into(),
                seq: 7,
            }),
            sort: Vec::new(),
            webhooks: vec![Webhook {
                name: "feed".into(),
                url: "http://127.0.0.1:9/x".into(),
                secret: "s".repeat(16),
                top: Some(10),
                members: vec!["ann".into()],
            }],
        };
        assert_eq!(BoardConfig::from_json(&c.to_json()).unwrap(), c);
        let public = c.to_public_json();
        assert!(public["webhooks"][0].get("secret").is_none());
        assert_eq!(public["webhooks"][0]["top"], 10);
        let c = BoardConfig {
            sort: vec![
                SortKey::new("laps", Order::Asc, sort::KeyType::Int, sort::KeyOp::Max),
                SortKey::new("time", Order::Desc, sort::KeyType::Float, sort::KeyOp::Set),
            ],
            ..c
        };
        assert_eq!(BoardConfig::from_json(&c.to_json()).unwrap(), c);
        assert!(BoardConfig::from_json(&serde_json::json!({"archive_of": "b"})).is_err());
        assert!(BoardConfig::from_json(&serde_json::json!({"archive_seq": 1})).is_err());
        // An ordinary board's JSON has no archive fields at all.
        let plain = BoardConfig::default().to_json();
        assert!(plain.get("archive_of").is_none() && plain.get("archive_seq").is_none());
        assert_eq!(
            BoardConfig::from_json(&serde_json::json!({})).unwrap(),
            BoardConfig::default()
        );
        assert!(BoardConfig::from_json(&serde_json::json!({"colour": "red"})).is_err());
        // `order` follows the first sort key, or must agree with it.
        let s = serde_json::json!([{"key": "kills"}, {"key": "at", "order": "asc", "type": "int", "op": "set"}]);
        let c = BoardConfig::from_json(&serde_json::json!({ "sort": s })).unwrap();
        assert_eq!(c.order, Order::Desc);
        assert_eq!(
            c.sort[1],
            SortKey::new("at", Order::Asc, sort::KeyType::Int, sort::KeyOp::Set)
        );
        assert!(BoardConfig::from_json(&serde_json::json!({"sort": s, "order": "asc"})).is_err());
        for bad in [
            serde_json::json!([]),
            serde_json::json!([{"key": "a"}, {"key": "a"}]),
            serde_json::json!([{"key": "a"}, {"key": "b"}, {"key": "c"}, {"key": "d"}, {"key": "e"}]),
            serde_json::json!([{"key": ""}]),
            serde_json::json!([{"key": "a", "type": "decimal"}]),
            serde_json::json!([{"key": "a", "op": "avg"}]),
            serde_json::json!([{"key": "a", "colour": "red"}]),
            serde_json::json!([{"order": "asc"}]),
            serde_json::json!("laps"),
        ] {
            let e = BoardConfig::from_json(&serde_json::json!({ "sort": bad })).unwrap_err();
            assert!(e.to_string().contains("sort"), "{bad}: {e}");
        }
        assert!(BoardConfig::from_json(&serde_json::json!({"order": 3})).is_err());
    }

    /// A config without `max_submits_per_member` is written byte for byte
    /// as before the field existed, and such JSON (snapshots and log
    /// records of older versions) reads back without it.
    #[test]
    fn configs_without_a_submit_limit_keep_their_encoding() {
        const OLD: &str = r#"{"keep_archives":null,"max_data_bytes":4096,"max_members":null,"max_score":null,"min_score":null,"order":"desc","ranking":"unique","reset":"never","search_fields":["name"],"tiebreak":"member","update":"set"}"#;
        assert_eq!(BoardConfig::default().to_json().to_string(), OLD);
        let old: serde_json::Value = serde_json::from_str(OLD).unwrap();
        assert_eq!(
            BoardConfig::from_json(&old).unwrap(),
            BoardConfig::default()
        );
    }

    #[test]
    fn submit_limits() {
        let read = |v: serde_json::Value| {
            BoardConfig::from_json(&serde_json::json!({ "max_submits_per_member": v }))
                .map(|c| c.max_submits_per_member.unwrap())
        };
        let l = |count, secs: f64| SubmitLimit {
            count,
            per: Duration::from_secs_f64(secs),
        };
        assert_eq!(
            read(serde_json::json!({"count": 5, "per": "1m"})).unwrap(),
            l(5, 60.0)
        );
        assert_eq!(
            read(serde_json::json!({"count": 5, "per": 30})).unwrap(),
            l(5, 30.0)
        );
        assert_eq!(
            read(serde_json::json!({"count": 1, "per": 0.5})).unwrap(),
            l(1, 0.5)
        );
        assert_eq!(
            read(serde_json::json!({"count": 1, "per": "250ms"})).unwrap(),
            l(1, 0.25)
        );
        assert_eq!(
            read(serde_json::json!({"count": 3, "per": "2h"})).unwrap(),
            l(3, 7200.0)
        );
        assert_eq!(
            read(serde_json::json!({"count": 3, "per": "1d"})).unwrap(),
            l(3, 86400.0)
        );
        assert_eq!(
            read(serde_json::json!({"count": 3, "per": "45"})).unwrap(),
            l(3, 45.0)
        );
        for bad in [
            serde_json::json!(5),
            serde_json::json!({"count": 0, "per": "1m"}),
            serde_json::json!({"count": 5}),
            serde_json::json!({"per": "1m"}),
            serde_json::json!({"count": 5, "per": 0}),
            serde_json::json!({"count": 5, "per": -1}),
            serde_json::json!({"count": 5, "per": "1 fortnight"}),
            serde_json::json!({"count": 5, "per": "1m", "burst": 3}),
            serde_json::json!({"count": 1.5, "per": "1m"}),
        ] {
            let e = read(bad.clone()).unwrap_err().to_string();
            assert!(e.contains("max_submits_per_member"), "{bad}: {e}");
        }
        // Written back in its shortest form; read back the same.
        for (per, text) in [
            (60.0, "1m"),
            (30.0, "30s"),
            (0.25, "250ms"),
            (7200.0, "2h"),
            (90.0, "90s"),
        ] {
            let c = BoardConfig {
                max_submits_per_member: Some(l(4, per)),
                ..Default::default()
            };
            let j = c.to_json();
            assert_eq!(
                j["max_submits_per_member"],
                serde_json::json!({"count": 4, "per": text})
            );
            assert_eq!(BoardConfig::from_json(&j).unwrap(), c);
        }
    }

    /// Regression: infinite bounds used to be written as `null`, so a
    /// snapshot of a board with `min_score: inf` came back unbounded.
    #[test]
    fn infinite_bounds_survive_the_json_round_trip() {
        for (min, max) in [
            (f64::INFINITY, f64::INFINITY),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
            (f64::NEG_INFINITY, f64::INFINITY),
        ] {
            let c = BoardConfig {
                min_score: Some(min),
                max_score: Some(max),
                ..Default::default()
            };
            assert_eq!(BoardConfig::from_json(&c.to_json()).unwrap(), c);
        }
        let c = BoardConfig::from_json(&serde_json::json!({"min_score": "+INF"})).unwrap();
        assert_eq!(c.min_score, Some(f64::INFINITY));
        assert!(BoardConfig::from_json(&serde_json::json!({"min_score": "nan"})).is_err());
        assert!(BoardConfig::from_json(&serde_json::json!({"max_score": "x"})).is_err());
    }
}
