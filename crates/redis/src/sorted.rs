//! Boards with sort keys on Redis: how a member's values become the bytes
//! the script orders (its key codes, in front of its id in the board's
//! sorted set), the layout a board's config hash names for the script,
//! what podium remembers of boards' configs to encode a write or a score
//! range without asking (checked by the script on every call), and the
//! re-sort of a board whose keys change. Layout: docs/redis-backend.md,
//! "Sort keys".

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use podium_core::api::{NamedScores, Score, SubmitIn, SubmitOut};
use podium_core::backend::RangeBounds;
use podium_core::error::{ApiError, Code};
use podium_engine::{
    BoardConfig, Cond, KeyOp, Num, Order, Presence, Ranking, Scores, SortKey, Submit, UpdateOp,
};
use redis::Value;

use crate::args::{entry_words, extra_arg, fmt_score, has_nan, score_range};
use crate::config::config_of;
use crate::reply::{
    arr, bytes, int, is_stale, podium_err, protocol, rank_of, ranking_of, score, text,
};
use crate::RedisBackend;

/// How a board with sort keys stores its members: 8 bytes a key,
/// big-endian, each the key's rank-order code complemented on a `desc`
/// board, so that the board's read direction (ascending bytes on an
/// `asc` board, descending on a `desc` one) is rank order, and a key whose
/// direction is not the board's shows complemented against its value
/// order.
#[derive(Debug)]
pub(crate) struct Layout {
    pub(crate) keys: Vec<SortKey>,
    pub(crate) names: Vec<String>,
    mask: u64,
}

impl Layout {
    pub(crate) fn new(keys: Vec<SortKey>) -> Layout {
        let desc = keys.first().is_some_and(|k| k.order == Order::Desc);
        Layout {
            names: keys.iter().map(|k| k.key.clone()).collect(),
            keys,
            mask: if desc { u64::MAX } else { 0 },
        }
    }

    /// The layout of a config with sort keys.
    pub(crate) fn of(c: &BoardConfig) -> Option<Layout> {
        c.has_sort().then(|| Layout::new(c.sort.clone()))
    }

    /// Bytes of a member's codes, in front of its id.
    pub(crate) fn len(&self) -> usize {
        8 * self.keys.len()
    }

    /// Key `j`'s stored code of `n` (of the key's type).
    pub(crate) fn code(&self, j: usize, n: Num) -> [u8; 8] {
        (self.keys[j].code(n) ^ self.mask).to_be_bytes()
    }

    /// A tuple's stored codes.
    pub(crate) fn codes(&self, v: &[Num]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for (j, n) in v.iter().enumerate() {
            out.extend(self.code(j, *n));
        }
        out
    }

    /// The values stored codes stand for.
    pub(crate) fn values(&self, codes: &[u8]) -> Result<Scores, ApiError> {
        if codes.len() < self.len() {
            return Err(protocol("sort key codes"));
        }
        let mut v = [Num::Float(0.0); podium_engine::MAX_SORT_KEYS];
        for (j, k) in self.keys.iter().enumerate() {
            let c = u64::from_be_bytes(codes[8 * j..8 * j + 8].try_into().unwrap_or_default());
            v[j] = k.value(c ^ self.mask);
        }
        Ok(Scores::new(&v[..self.keys.len()]))
    }

    /// The first key's value of its stored code (8 bytes).
    pub(crate) fn first_value(&self, code: &[u8]) -> Result<Num, ApiError> {
        let c: [u8; 8] = code.try_into().map_err(|_| protocol("first key code"))?;
        Ok(self.keys[0].value(u64::from_be_bytes(c) ^ self.mask))
    }

    /// The score (first key) and the scores of stored codes, as entries
    /// carry them.
    pub(crate) fn score_of(&self, codes: &[u8]) -> Result<(Score, NamedScores), ApiError> {
        let s = self.values(codes)?;
        Ok((Score(s.first().as_f64()), NamedScores::of(&self.names, &s)))
    }

    /// The script's `sl`: per key its type (`i`/`f`) and whether it is
    /// stored against its value order (`1`: its direction is not the
    /// board's).
    pub(crate) fn sl(&self) -> String {
        let desc = self.mask != 0;
        let mut s = String::with_capacity(2 * self.keys.len());
        for k in &self.keys {
            s.push(if k.ty == podium_engine::KeyType::Int {
                'i'
            } else {
                'f'
            });
            s.push(if (k.order == Order::Desc) != desc {
                '1'
            } else {
                '0'
            });
        }
        s
    }

    /// The first key's stored codes that a range of it admits, as the
    /// script's lex bounds on the board's members: `[` and the least code,
    /// and `(` and the code past the greatest (`+`: none past it). The
    /// first key is never complemented, so its stored order is its value
    /// order. An empty range gives bounds that admit nothing. Bounds are
    /// read as the engine reads them: an integer key admits the integers a
    /// bound covers, a float key compares doubles.
    pub(crate) fn lex_range(&self, b: &RangeBounds) -> [Vec<u8>; 2] {
        let k = &self.keys[0];
        let code = |n: Num| u64::from_be_bytes(self.code(0, n));
        let range: Option<(u64, u64)> = if k.ty == podium_engine::KeyType::Int {
            let lo = match b.min {
                None => i128::MIN,
                Some(Num::Int(i)) if b.min_exclusive => i128::from(i) + 1,
                Some(Num::Int(i)) => i.into(),
                Some(Num::Float(x)) if b.min_exclusive => (x.floor() as i128).saturating_add(1),
                Some(Num::Float(x)) => x.ceil() as i128,
            };
            let hi = match b.max {
                None => i128::MAX,
                Some(Num::Int(i)) if b.max_exclusive => i128::from(i) - 1,
                Some(Num::Int(i)) => i.into(),
                Some(Num::Float(x)) if b.max_exclusive => (x.ceil() as i128).saturating_sub(1),
                Some(Num::Float(x)) => x.floor() as i128,
            };
            let (lo, hi) = (lo.max(i64::MIN.into()), hi.min(i64::MAX.into()));
            (lo <= hi).then(|| (code(Num::Int(lo as i64)), code(Num::Int(hi as i64))))
        } else {
            let lo = match b.min {
                None => Some(0),
                Some(n) if b.min_exclusive => code(Num::Float(n.as_f64())).checked_add(1),
                Some(n) => Some(code(Num::Float(n.as_f64()))),
            };
            let hi = match b.max {
                None => Some(u64::MAX),
                Some(n) if b.max_exclusive => code(Num::Float(n.as_f64())).checked_sub(1),
                Some(n) => Some(code(Num::Float(n.as_f64()))),
            };
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
                _ => None,
            }
        };
        let Some((lo, hi)) = range else {
            return [b"+".to_vec(), b"-".to_vec()];
        };
        let mut min = b"[".to_vec();
        min.extend(lo.to_be_bytes());
        let max = match hi.checked_add(1) {
            Some(past) => {
                let mut v = b"(".to_vec();
                v.extend(past.to_be_bytes());
                v
            }
            None => b"+".to_vec(),
        };
        [min, max]
    }

    /// The config hash's `blo` / `bhi`: the least and greatest first-key
    /// code within the board's `min_score` / `max_score` (hex), which the
    /// engine checks on the key's value as a double. An integer key
    /// admits the integers whose double is within them.
    pub(crate) fn bounds(&self, c: &BoardConfig) -> [Option<String>; 2] {
        let k = &self.keys[0];
        let hex = |v: u64| format!("{v:016x}");
        let code = |n: Num| u64::from_be_bytes(self.code(0, n));
        if k.ty != podium_engine::KeyType::Int {
            return [
                c.min_score.map(|m| hex(code(Num::Float(m)))),
                c.max_score.map(|m| hex(code(Num::Float(m)))),
            ];
        }
        // The least integer whose double passes `ok` (which holds from
        // some integer on), if any.
        let least = |ok: &dyn Fn(i64) -> bool| -> Option<i64> {
            if !ok(i64::MAX) {
                return None;
            }
            let (mut lo, mut hi) = (i128::from(i64::MIN), i128::from(i64::MAX));
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if ok(mid as i64) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            Some(lo as i64)
        };
        let lo = c.min_score.map(|m| least(&|i| i as f64 >= m));
        // The greatest integer at most max: one below the least above it.
        let hi = c.max_score.map(|m| match least(&|i| i as f64 > m) {
            Some(i64::MIN) => None,
            Some(i) => Some(i - 1),
            None => Some(i64::MAX),
        });
        match (lo, hi) {
            (Some(None), _) | (_, Some(None)) => {
                // No integer is within them: bounds that admit none.
                [Some(hex(u64::MAX)), Some(hex(0))]
            }
            (lo, hi) => [
                lo.flatten().map(|i| hex(code(Num::Int(i)))),
                hi.flatten().map(|i| hex(code(Num::Int(i)))),
            ],
        }
    }
}

/// The keys' JSON the config hash keeps as `sk` (and the script hands
/// back beside the ranking), which podium reads its layout from.
pub(crate) fn keys_json(c: &BoardConfig) -> Option<String> {
    c.has_sort()
        .then(|| c.to_json().get("sort").map(|v| v.to_string()))
        .flatten()
}

/// Layouts by their keys' JSON: a reply names its board's keys, which are
/// read once.
fn layouts() -> &'static Mutex<HashMap<String, Arc<Layout>>> {
    static L: OnceLock<Mutex<HashMap<String, Arc<Layout>>>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// The layout of keys' JSON `sk`.
pub(crate) fn layout_of(sk: &str) -> Result<Arc<Layout>, ApiError> {
    let mut map = layouts().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = map.get(sk) {
        return Ok(l.clone());
    }
    let v: serde_json::Value = serde_json::from_str(sk).map_err(|_| protocol("sort keys"))?;
    let c = BoardConfig::from_json(&serde_json::json!({ "sort": v }))
        .map_err(|_| protocol("sort keys"))?;
    let l = Arc::new(Layout::of(&c).ok_or_else(|| protocol("sort keys"))?);
    // Configs are few; a board reconfigured many times is the bound.
    if map.len() > 10_000 {
        map.clear();
    }
    map.insert(sk.to_string(), l.clone());
    Ok(l)
}

/// A reply's ranking and, for a board with sort keys, its layout (the
/// script sends `ranking|keys JSON`).
pub(crate) fn ranking_keys(v: Option<&Value>) -> Result<(Ranking, Option<Arc<Layout>>), ApiError> {
    let Some(Value::BulkString(b)) = v else {
        return Ok((ranking_of(v)?, None));
    };
    match b.iter().position(|&c| c == b'|') {
        None => Ok((ranking_of(v)?, None)),
        Some(i) => {
            let ranking = std::str::from_utf8(&b[..i])
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| protocol("ranking"))?;
            let sk = std::str::from_utf8(&b[i + 1..]).map_err(|_| protocol("sort keys"))?;
            Ok((ranking, Some(layout_of(sk)?)))
        }
    }
}

/// A board's config as podium last read it.
pub(crate) struct Known {
    /// As stored (what the script compares).
    pub(crate) json: String,
    pub(crate) config: BoardConfig,
    pub(crate) read_only: bool,
    pub(crate) layout: Option<Layout>,
}

/// What podium last read of boards' configs, to encode writes and score
/// ranges of boards with sort keys without asking first; the script
/// compares and answers `stale` when the board changed since, and podium
/// reads it again.
#[derive(Default)]
pub(crate) struct Configs(Mutex<HashMap<String, Arc<Known>>>);

impl Configs {
    pub(crate) fn get(&self, board: &str) -> Option<Arc<Known>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(board)
            .cloned()
    }

    fn put(&self, board: &str, known: Arc<Known>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 100_000 {
            map.clear();
        }
        map.insert(board.to_string(), known);
    }

    pub(crate) fn forget(&self, board: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(board);
    }
}

/// Attempts at a call whose board keeps changing under it.
pub(crate) const STALE_TRIES: usize = 8;

/// The answer when the board changed under every attempt.
pub(crate) fn kept_changing() -> ApiError {
    ApiError::new(
        Code::StorageUnavailable,
        "the board kept changing; try again",
    )
}

impl RedisBackend {
    /// Reads `board`'s config again (`None`: no such board) and remembers
    /// it.
    pub(crate) async fn read_config(&self, board: &str) -> Result<Option<Arc<Known>>, ApiError> {
        match self.info_raw(board).await {
            Ok((out, json)) => {
                let config = config_of(&out)?;
                let known = Arc::new(Known {
                    layout: Layout::of(&config),
                    json,
                    config,
                    read_only: out.read_only,
                });
                self.configs.put(board, known.clone());
                Ok(Some(known))
            }
            Err(e) if e.code == Code::BoardNotFound => {
                self.configs.forget(board);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Script op `op` over a score range: its arguments are the board's
    /// keys as podium encoded the bounds for (`''`: a plain board), the
    /// bounds, then `extra`. Encoded from what podium knows of the board,
    /// read again when the script finds it changed.
    pub(crate) async fn call_ranged(
        &self,
        board: &str,
        op: &str,
        bounds: &RangeBounds,
        extra: &[String],
    ) -> Result<Value, ApiError> {
        if has_nan(bounds) {
            self.exists(board).await?;
            return Err(podium_engine::Error::NanScore.into());
        }
        let mut known = self.configs.get(board);
        for _ in 0..STALE_TRIES {
            let mut args: Vec<Vec<u8>> = Vec::with_capacity(3 + extra.len());
            match known
                .as_ref()
                .and_then(|k| k.layout.as_ref().zip(keys_json(&k.config)))
            {
                Some((l, sk)) => {
                    args.push(sk.into_bytes());
                    args.extend(l.lex_range(bounds));
                }
                None => {
                    args.push(Vec::new());
                    let [min, max] = score_range(bounds).ok_or_else(|| protocol("bounds"))?;
                    args.extend([min.into_bytes(), max.into_bytes()]);
                }
            }
            args.extend(extra.iter().map(|e| e.clone().into_bytes()));
            match self.call(board, op, args).await {
                Err(e) if is_stale(&e) => known = self.read_config(board).await?,
                r => return r,
            }
        }
        Err(kept_changing())
    }

    /// `board_put` of a config whose members are stored otherwise than
    /// the board's now (other sort keys, or sort keys added or dropped):
    /// each member's stored values become the new keys' (by key name, as
    /// the engine maps them), re-encoded in chunks into new keys while
    /// the board's writes wait, then swapped in with the config in one
    /// script run. A value that does not fit its new key (a fraction for
    /// an integer key) refuses the config and leaves the board as it was.
    pub(crate) async fn resort(
        &self,
        board: &str,
        old: &Known,
        new: &BoardConfig,
        fields: Vec<String>,
    ) -> Result<Option<bool>, ApiError> {
        const CHUNK: u64 = 10_000;
        const LEASE: &str = "30000";
        let sources = podium_engine::sort::key_sources(&old.config, new)?;
        let new_keys = new.keys();
        let new_layout = Layout::of(new);
        static RESORTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let token = format!(
            "{}.{}.{}",
            std::process::id(),
            self.now().timestamp_nanos_opt().unwrap_or_default(),
            RESORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let sl = old.layout.as_ref().map(Layout::sl).unwrap_or_default();
        let total = match self
            .call(board, "resort_begin", [token.as_str(), sl.as_str(), LEASE])
            .await
        {
            Err(e) if crate::reply::is_stale(&e) => return Ok(None),
            r => int(&r?)?,
        };
        let abort = |e: ApiError| async {
            let _ = self.call(board, "resort_abort", [token.as_str()]).await;
            Err(e)
        };
        let mut done = 0u64;
        let mut write: Vec<Vec<u8>> = Vec::new();
        loop {
            let (from, to) = if done < total {
                (done, (done + CHUNK).min(total) - 1)
            } else {
                (1, 0)
            };
            let mut args: Vec<Vec<u8>> = vec![
                token.clone().into_bytes(),
                LEASE.into(),
                done.to_string().into_bytes(),
                from.to_string().into_bytes(),
                to.to_string().into_bytes(),
            ];
            args.append(&mut write);
            let read = match self.call(board, "resort_step", args).await {
                Ok(v) => arr(v)?,
                Err(e) => return abort(e).await,
            };
            if from > to {
                break;
            }
            for pair in read.chunks(2) {
                let [m, sc] = pair else {
                    return abort(protocol("resort chunk")).await;
                };
                let m = crate::reply::bytes(m).ok_or_else(|| protocol("member"))?;
                let (id, old_vals) = match &old.layout {
                    Some(l) if m.len() >= l.len() => (&m[l.len()..], l.values(&m[..l.len()])?),
                    Some(_) => return abort(protocol("resort member")).await,
                    None => (m, Scores::new(&[Num::Float(score(sc)?)])),
                };
                let mut v = [Num::Float(0.0); podium_engine::MAX_SORT_KEYS];
                for (j, src) in sources.iter().enumerate() {
                    v[j] = match src {
                        Some(i) => match new_keys[j].coerce(old_vals[*i]) {
                            Ok(n) => n,
                            Err(_) => {
                                return abort(
                                    podium_engine::Error::WrongKind(format!(
                                    "member {:?} holds {} in a key that would be an integer key",
                                    String::from_utf8_lossy(id),
                                    old_vals[*i]
                                ))
                                    .into(),
                                )
                                .await
                            }
                        },
                        None => new_keys[j].zero(),
                    };
                }
                let v = &v[..sources.len()];
                match &new_layout {
                    Some(l) => {
                        let codes = l.codes(v);
                        let mut e = codes.clone();
                        e.extend_from_slice(id);
                        let score = fmt_score(v[0].as_f64()).into_bytes();
                        write.extend([id.to_vec(), e, score, codes]);
                    }
                    None => write.extend([
                        id.to_vec(),
                        id.to_vec(),
                        fmt_score(v[0].as_f64()).into_bytes(),
                        Vec::new(),
                    ]),
                }
            }
            done = to + 1;
        }
        let mut args = vec![token.clone()];
        args.extend(fields);
        let created = match self.call(board, "resort_finish", args).await {
            Ok(v) => int(&v)? == 1,
            Err(e) => return abort(e).await,
        };
        Ok(Some(created))
    }

    /// A `submit` batch for a board with sort keys (`known`): checked here
    /// with the engine's own checks, encoded, applied by script op
    /// `ksubmit`. `Ok(None)`: the board changed since `known` was read.
    pub(crate) async fn submit_keyed(
        &self,
        board: &str,
        known: &Known,
        entries: &[SubmitIn],
    ) -> Result<Option<Vec<Result<SubmitOut, ApiError>>>, ApiError> {
        let (c, Some(l)) = (&known.config, known.layout.as_ref()) else {
            return Err(protocol("sort keys"));
        };
        if known.read_only {
            return Err(podium_engine::Error::ReadOnly(board.to_string()).into());
        }
        // As the embedded service: every entry's options (op, data), then
        // the engine's checks entry by entry.
        let opts = entries
            .iter()
            .map(
                |e| -> Result<(Option<UpdateOp>, Option<String>), ApiError> {
                    podium_core::entry::score_given(e)?;
                    let op =
                        e.op.as_deref()
                            .map(podium_core::entry::update_op)
                            .transpose()?;
                    Ok((op, podium_core::entry::data_text(e.data.as_ref())?))
                },
            )
            .collect::<Result<Vec<_>, _>>()?;
        let mut args: Vec<Vec<u8>> = Vec::with_capacity(2 + 10 * entries.len());
        args.push(known.json.clone().into_bytes());
        args.push(entries.len().to_string().into_bytes());
        for ((op, data), e) in opts.iter().zip(entries) {
            let s = Submit {
                member: e.member.as_bytes(),
                score: e.score.0,
                op: *op,
                presence: podium_core::entry::presence(e.only),
                cond: podium_core::entry::cond(e.cond),
                name: e.name.as_deref(),
                data: data.as_deref(),
                scores: e.scores.as_ref().map(|n| n.0.as_slice()),
            };
            let given = c.check_keyed(&s)?;
            let op = s.op.unwrap_or(c.update);
            let mut codes = Vec::with_capacity(l.len());
            let mut act = Vec::with_capacity(l.keys.len());
            // The codes' score in the board's sorted set (the script's
            // kscore): the first key as a double.
            let first = given[0].unwrap_or_else(|| l.keys[0].zero());
            for (j, k) in l.keys.iter().enumerate() {
                codes.extend(l.code(j, given[j].unwrap_or_else(|| k.zero())));
                act.push(match (given[j], op) {
                    (None, _) => b'-',
                    (Some(_), UpdateOp::Incr) if s.scores.is_some() => match k.op {
                        KeyOp::Incr => b'i',
                        KeyOp::Set => b's',
                        KeyOp::Max => b'x',
                        KeyOp::Min => b'n',
                    },
                    // A bare score (a Redis write) adds to the first key.
                    (Some(_), UpdateOp::Incr) => b'i',
                    (Some(_), _) => b's',
                });
            }
            let data = match data {
                None => b"-".to_vec(),
                Some(d) => [b"=".as_slice(), d.as_bytes()].concat(),
            };
            args.extend([
                e.member.clone().into_bytes(),
                codes,
                act,
                match op {
                    UpdateOp::Set => b"s".to_vec(),
                    UpdateOp::Best => b"b".to_vec(),
                    UpdateOp::Incr => b"i".to_vec(),
                },
                match s.presence {
                    Presence::Any => b"a".to_vec(),
                    Presence::OnlyNew => b"n".to_vec(),
                    Presence::OnlyExisting => b"e".to_vec(),
                },
                match s.cond {
                    Cond::Always => b"a".to_vec(),
                    Cond::Greater => b"g".to_vec(),
                    Cond::Less => b"l".to_vec(),
                },
                extra_arg(e.name.as_deref()).into_bytes(),
                data,
                entry_words(&e.member, e.name.as_deref(), e.data.as_ref()).into_bytes(),
                fmt_score(first.as_f64()).into_bytes(),
            ]);
        }
        let mut items = match self.call(board, "ksubmit", args.iter()).await {
            Err(e) if is_stale(&e) => return Ok(None),
            r => arr(r?)?,
        };
        let (ranking, _) = ranking_keys(items.first())?;
        if items.get(1).and_then(text).as_deref() == Some("fast") {
            return keyed_fast(ranking, l, entries, &args, items).map(Some);
        }
        if items.len() != entries.len() + 1 {
            return Err(protocol("ksubmit"));
        }
        let bounds = (
            c.min_score.unwrap_or(f64::NEG_INFINITY),
            c.max_score.unwrap_or(f64::INFINITY),
        );
        Ok(Some(
            items
                .drain(1..)
                .zip(entries)
                .map(|(item, e)| keyed_item(board, ranking, l, bounds, &e.member, item))
                .collect::<Result<_, _>>()?,
        ))
    }
}

/// Whether the members stored under `old` must be re-encoded for `new`:
/// they are stored otherwise (other key types or directions, keys added
/// or dropped), or the new keys take their values from other keys.
pub(crate) fn needs_resort(old: &Known, new: &BoardConfig) -> bool {
    let sl = |l: Option<Layout>| l.as_ref().map(Layout::sl).unwrap_or_default();
    let before = old.layout.as_ref().map(Layout::sl).unwrap_or_default();
    if before != sl(Layout::of(new)) {
        return true;
    }
    if !new.has_sort() {
        return false;
    }
    match podium_engine::sort::key_sources(&old.config, new) {
        Ok(src) => src.iter().enumerate().any(|(j, s)| *s != Some(j)),
        // Refused by the re-sort's own check.
        Err(_) => true,
    }
}

/// The results of a batch `ksubmit` applied by its fast path (plain sets,
/// each member once, every one applied): from each entry's codes before
/// and its place in the final board, the rank each had right after it
/// was applied (see `submit::sequential_places`). `args`: the call's, each
/// entry's ten after the config and count.
fn keyed_fast(
    ranking: Ranking,
    l: &Layout,
    entries: &[SubmitIn],
    args: &[Vec<u8>],
    mut items: Vec<Value>,
) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
    if items.len() != 5 {
        return Err(protocol("ksubmit fast"));
    }
    let at = crate::reply::arr_last(&mut items)?;
    let olds = crate::reply::arr_last(&mut items)?;
    let asc = int(&items[2])? == 1;
    if at.len() != entries.len() || olds.len() != entries.len() {
        return Err(protocol("ksubmit fast results"));
    }
    let olds: Vec<Option<&[u8]>> = olds
        .iter()
        .map(|v| match v {
            Value::Nil => Ok(None),
            v => bytes(v).map(Some).ok_or_else(|| protocol("codes")),
        })
        .collect::<Result<_, _>>()?;
    let at: Vec<u64> = at.iter().map(int).collect::<Result<_, _>>()?;
    let news: Vec<&[u8]> = (0..entries.len())
        .map(|i| args[2 + 10 * i + 1].as_slice())
        .collect();
    let keys: Vec<(&[u8], &str)> = news
        .iter()
        .zip(entries)
        .map(|(c, e)| (*c, e.member.as_str()))
        .collect();
    let places =
        crate::submit::sequential_places(asc, ranking == Ranking::Unique, &keys, &olds, &at);
    entries
        .iter()
        .zip(news.iter().zip(olds))
        .zip(places)
        .map(|((e, (new, old)), place)| {
            let (score, scores) = l.score_of(new)?;
            let before = old.map(|o| l.score_of(o)).transpose()?;
            Ok(Ok(SubmitOut {
                member: e.member.clone(),
                score: Some(score),
                scores: Some(scores),
                rank: Some(place + 1),
                changed: old != Some(*new),
                created: old.is_none(),
                previous: before.as_ref().map(|b| b.0),
                previous_scores: before.map(|b| b.1),
                applied: true,
                evicted: 0,
            }))
        })
        .collect()
}

/// One item of `ksubmit`'s reply.
fn keyed_item(
    board: &str,
    ranking: Ranking,
    l: &Layout,
    (min, max): (f64, f64),
    member: &str,
    item: Value,
) -> Result<Result<SubmitOut, ApiError>, ApiError> {
    let a = arr(item)?;
    let kind = a.first().and_then(text).ok_or_else(|| protocol("item"))?;
    let get = |i: usize| a.get(i).ok_or_else(|| protocol("item"));
    let codes = |i: usize| -> Result<(Score, NamedScores), ApiError> {
        l.score_of(bytes(get(i)?).ok_or_else(|| protocol("codes"))?)
    };
    let mut out = SubmitOut {
        scores: None,
        previous_scores: None,
        member: member.to_string(),
        score: None,
        rank: None,
        previous: None,
        changed: false,
        created: false,
        applied: false,
        evicted: 0,
    };
    match kind.as_str() {
        "absent" => {}
        "evicted" => {
            out.applied = true;
            out.evicted = int(get(1)?)?;
        }
        "new" => {
            let (s, named) = codes(1)?;
            out.score = Some(s);
            out.scores = Some(named);
            out.rank = Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?));
            out.changed = true;
            out.created = true;
            out.applied = true;
            out.evicted = int(get(4)?)?;
        }
        "upd" => {
            let (s, named) = codes(1)?;
            let (p, before) = codes(4)?;
            out.score = Some(s);
            out.scores = Some(named);
            out.rank = Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?));
            out.previous = Some(p);
            out.previous_scores = Some(before);
            out.applied = int(get(5)?)? == 1;
            out.changed = int(get(6)?)? == 1;
        }
        "err" => {
            let why = a.get(1).and_then(text).unwrap_or_default();
            let e: ApiError = match why.as_str() {
                "koob" => {
                    let first = l.first_value(bytes(get(2)?).ok_or_else(|| protocol("codes"))?)?;
                    podium_engine::Error::OutOfBounds {
                        score: first.as_f64(),
                        min,
                        max,
                    }
                    .into()
                }
                "ovf" => {
                    let j = int(get(2)?)? as usize;
                    let name = l.names.get(j.wrapping_sub(1)).cloned().unwrap_or_default();
                    podium_engine::Error::BadArgument(format!(
                        "incrementing sort key {name:?} would overflow a 64-bit integer"
                    ))
                    .into()
                }
                _ => podium_err(board, &why),
            };
            return Ok(Err(e));
        }
        _ => return Err(protocol("item kind")),
    }
    Ok(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_engine::KeyType;

    fn layout(first: (Order, KeyType), second: Order) -> Layout {
        Layout::new(vec![
            SortKey::new("a", first.0, first.1, KeyOp::Incr),
            SortKey::new("b", second, KeyType::Float, KeyOp::Set),
        ])
    }

    /// Stored tuples in byte order are rank order in the board's read
    /// direction, whatever the keys' directions, and decode back.
    #[test]
    fn codes_order_tuples_as_the_board_reads_them() {
        let vals = [-3.0, -0.5, 0.0, 2.0, 7.5];
        for first in [Order::Asc, Order::Desc] {
            for second in [Order::Asc, Order::Desc] {
                let l = layout((first, KeyType::Int), second);
                let mut tuples = Vec::new();
                for a in [-2i64, 0, 5] {
                    for b in vals {
                        tuples.push((l.codes(&[Num::Int(a), Num::Float(b)]), a, b));
                    }
                }
                // Rank order: the board reads ascending bytes on an asc
                // board, descending on a desc one.
                tuples.sort_by(|x, y| x.0.cmp(&y.0));
                if first == Order::Desc {
                    tuples.reverse();
                }
                for w in tuples.windows(2) {
                    let (x, y) = (&w[0], &w[1]);
                    let better_first = match first {
                        Order::Asc => x.1 < y.1,
                        Order::Desc => x.1 > y.1,
                    };
                    let better_second = match second {
                        Order::Asc => x.2 < y.2,
                        Order::Desc => x.2 > y.2,
                    };
                    assert!(better_first || (x.1 == y.1 && better_second), "{x:?} {y:?}");
                }
                for (c, a, b) in &tuples {
                    let v = l.values(c).unwrap();
                    assert_eq!(v.as_slice(), &[Num::Int(*a), Num::Float(*b)]);
                }
            }
        }
    }

    fn lex(v: &[u8]) -> (u8, Option<i64>) {
        let code = (v.len() == 9).then(|| {
            let c = u64::from_be_bytes(v[1..9].try_into().unwrap());
            (c ^ (1 << 63)) as i64
        });
        (v[0], code)
    }

    /// Score bounds on an integer first key become the least and greatest
    /// integers they admit, exact beyond 2^53, on either board direction.
    #[test]
    fn integer_bounds_admit_the_integers_they_cover() {
        let big = 1i64 << 53;
        for order in [Order::Asc, Order::Desc] {
            let l = layout((order, KeyType::Int), Order::Asc);
            let b = |min: Option<Num>, max: Option<Num>, ex: bool| RangeBounds {
                min,
                max,
                min_exclusive: ex,
                max_exclusive: ex,
            };
            let [lo, hi] = l.lex_range(&b(Some(Num::Int(big + 1)), Some(Num::Int(big + 3)), false));
            assert_eq!(lex(&lo), (b'[', Some(big + 1)));
            assert_eq!(lex(&hi), (b'(', Some(big + 4)));
            let [lo, hi] = l.lex_range(&b(Some(Num::Int(big + 1)), Some(Num::Int(big + 3)), true));
            assert_eq!(lex(&lo), (b'[', Some(big + 2)));
            assert_eq!(lex(&hi), (b'(', Some(big + 3)));
            let [lo, hi] = l.lex_range(&b(Some(Num::Float(1.5)), Some(Num::Float(4.0)), true));
            assert_eq!(lex(&lo), (b'[', Some(2)));
            assert_eq!(lex(&hi), (b'(', Some(4)));
            let [lo, hi] = l.lex_range(&b(None, Some(Num::Int(i64::MAX)), false));
            assert_eq!(lex(&lo), (b'[', Some(i64::MIN)));
            assert_eq!(hi, b"+");
            // Nothing between: bounds that admit nothing.
            let [lo, hi] = l.lex_range(&b(Some(Num::Float(1.2)), Some(Num::Float(1.8)), false));
            assert_eq!((lo.as_slice(), hi.as_slice()), (&b"+"[..], &b"-"[..]));
        }
    }

    /// The board's `min_score`/`max_score` on an integer first key: the
    /// integers whose double lies within them (beyond 2^53 doubles round).
    #[test]
    fn board_bounds_on_an_integer_key() {
        let l = layout((Order::Desc, KeyType::Int), Order::Asc);
        let code = |i: i64| format!("{:016x}", (i as u64) ^ (1 << 63));
        let mut c = BoardConfig {
            min_score: Some(1.5),
            max_score: Some(9.0),
            ..BoardConfig::default()
        };
        assert_eq!(l.bounds(&c), [Some(code(2)), Some(code(9))]);
        // 2^53 + 1 rounds to 2^53 as a double, which is within max 2^53.
        let p53 = (1i64 << 53) as f64;
        c.min_score = None;
        c.max_score = Some(p53);
        assert_eq!(l.bounds(&c), [None, Some(code((1 << 53) + 1))]);
        // No integer within them: the least above the greatest.
        c.min_score = Some(0.2);
        c.max_score = Some(0.8);
        assert_eq!(l.bounds(&c), [Some(code(1)), Some(code(0))]);
        // None in i64's range at all.
        c.min_score = Some(1e19);
        c.max_score = None;
        let none = [
            Some(format!("{:016x}", u64::MAX)),
            Some(format!("{:016x}", 0)),
        ];
        assert_eq!(l.bounds(&c), none);
    }
}
