//! Writes of entries on Redis: a `submit` batch through the script (with
//! the ranks of its fast path worked out here), and bulk loads (`import`)
//! as one native `ZADD` between two of the library's guards when the
//! batch and the board allow it, else through `submit`.

use podium_core::api::{CondIn, ErrorBody, Only, Score, SubmitIn, SubmitOut};
use podium_core::backend::Imported;
use podium_core::error::{ApiError, Code};
use podium_engine::{BoardConfig, Ranking};
use redis::{Cmd, Value};

use crate::args::{data_arg, entry_words, extra_arg, fmt_score, score_str, words_line, ScoreBuf};
use crate::conn::NO_ARGS;
use crate::keys::board_key;
use crate::reply::{
    arr, arr_last, int, is_stale, map_err, podium_err, protocol, rank_of, ranking_of, score, text,
};
use crate::RedisBackend;

/// Why a board did not take an import batch by a native ZADD (script op
/// `zadd_open`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    NoBoard,
    ReadOnly,
    /// Its config needs `submit` (bounds, cap, `best`/`incr`, dense).
    Config,
    /// Its search sets are built or being built: new members join them.
    Indexed,
}

/// Whether an `import` entry can go in by the script's multi-member
/// `ZADD` (op `import`): nothing about the entry itself can be refused (a
/// valid member, a score that is a number), it is a plain `set` with no
/// condition, name or data, and its id tokenises to itself, so its search
/// sources are the plain ones the script leaves unstored. Whether the
/// board takes it (no bounds, cap, `best`/`incr` or dense ranking) is the
/// script's check, once per batch.
fn plain_import(e: &SubmitIn) -> bool {
    matches!(e.op.as_deref(), None | Some("set"))
        && e.only.is_none()
        && e.cond.is_none()
        && e.name.is_none()
        && e.data.is_none()
        && !e.member.is_empty()
        && e.member.len() <= podium_engine::MAX_MEMBER_BYTES
        && !e.score.0.is_nan()
        && e.scores.is_none()
        && id_is_its_word(&e.member)
}

/// Whether a member id tokenises to itself, one word: `words_line(m) ==
/// m`, answered without tokenising for the common id of ASCII lowercase
/// letters and digits (a bulk load checks every entry).
fn id_is_its_word(m: &str) -> bool {
    if m.len() <= 255
        && m.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return true;
    }
    words_line(m) == m
}

impl RedisBackend {
    /// Applies a `submit` batch; each entry's result, or the batch's
    /// error. A board podium knows to have sort keys takes the batch
    /// encoded for them (`submit_keyed`); any other takes it as scores,
    /// and the script answers `stale` if it has keys after all (podium
    /// then reads its config). A batch with `scores` for a board podium
    /// has not read is preceded by that read: a plain board refuses it.
    pub(crate) async fn submit_results(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
        let mut known = self.configs.get(board);
        if known.is_none() && entries.iter().any(|e| e.scores.is_some()) {
            known = self.read_config(board).await?;
        }
        for _ in 0..crate::sorted::STALE_TRIES {
            let done = match known.as_deref() {
                Some(k) if k.layout.is_some() => self.submit_keyed(board, k, entries).await?,
                _ => match self.submit_plain(board, entries).await {
                    Err(e) if is_stale(&e) => None,
                    r => Some(r?),
                },
            };
            match done {
                Some(out) => return Ok(out),
                None => known = self.read_config(board).await?,
            }
        }
        Err(crate::sorted::kept_changing())
    }

    /// [`RedisBackend::submit_results`] for a board without sort keys.
    async fn submit_plain(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
        let mut args: Vec<String> = Vec::with_capacity(2 + entries.len() * 8);
        args.push(entries.len().to_string());
        // The same checks, in the same order, as the embedded service
        // makes before the engine sees the batch.
        for e in entries {
            podium_core::entry::score_given(e)?;
            // This board has no sort keys (else it went to `submit_keyed`);
            // the engine refuses the batch once the board exists.
            if e.scores.is_some() {
                self.create(board, &BoardConfig::default(), true).await?;
                return Err(podium_engine::Error::WrongKind(
                    "this board has no sort keys: submit a score, not scores".into(),
                )
                .into());
            }
            let op = match e.op.as_deref() {
                None => "",
                Some(s @ ("set" | "best" | "incr")) => s,
                Some(s) => {
                    return Err(ApiError::bad(format!(
                        "op must be set, best or incr, got {s:?}"
                    )))
                }
            };
            let data = data_arg(&e.data)
                .map_err(|()| ApiError::new(Code::InvalidData, "data must be a JSON object"))?;
            args.extend([
                e.member.clone(),
                fmt_score(e.score.0),
                op.to_string(),
                match e.only {
                    None => "a",
                    Some(Only::New) => "n",
                    Some(Only::Existing) => "e",
                }
                .to_string(),
                match e.cond {
                    None => "a",
                    Some(CondIn::Gt) => "g",
                    Some(CondIn::Lt) => "l",
                }
                .to_string(),
                extra_arg(e.name.as_deref()),
                data,
                entry_words(&e.member, e.name.as_deref(), e.data.as_ref()),
            ]);
        }
        if entries.is_empty() {
            // Nothing to apply, but the board springs into existence as an
            // empty write does on the embedded engine.
            self.write(board, "submit", args).await?;
            return Ok(Vec::new());
        }
        let mut items = arr(self.write(board, "submit", args).await?)?;
        if items.is_empty() {
            return Err(protocol("submit"));
        }
        let ranking = ranking_of(items.first())?;
        if items.get(1).and_then(text).as_deref() == Some("fast") {
            return fast_results(ranking, entries, items);
        }
        items.remove(0);
        if items.len() != entries.len() {
            return Err(protocol("submit results"));
        }
        items
            .into_iter()
            .zip(entries)
            .map(|(item, e)| submit_item(board, ranking, &e.member, item))
            .collect()
    }

    /// An import batch of plain entries as one native `ZADD`, guarded by
    /// script ops `zadd_open` and `zadd_close` in one MULTI/EXEC (see
    /// them in `podium.lua`): Redis parses the pairs itself, at a direct
    /// ZADD's cost. `None`: applied; else why the board did not take it
    /// (nothing was applied).
    async fn import_native(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Option<Refusal>, ApiError> {
        let zkey = board_key(board, "zw");
        let bytes: usize = entries.iter().map(|e| e.member.len() + 26).sum();
        let mut zadd = Cmd::with_capacity(2 + 2 * entries.len(), 8 + zkey.len() + bytes);
        zadd.arg("ZADD").arg(zkey.as_str());
        let mut buf = ScoreBuf::default();
        for e in entries {
            zadd.arg(score_str(e.score.0, &mut buf))
                .arg(e.member.as_str());
        }
        let mut tx = redis::pipe();
        tx.atomic()
            .add_command(self.fcall(board, "zadd_open", NO_ARGS))
            .add_command(zadd)
            .add_command(self.fcall(board, "zadd_close", NO_ARGS));
        let replies = self.bounded(board, self.transaction(&tx)).await?;
        let [open, added, _close] =
            <[Value; 3]>::try_from(replies).map_err(|_| protocol("import transaction"))?;
        let refusal = match open {
            Value::BulkString(b) => match b.as_slice() {
                b"ok" => None,
                b"noboard" => Some(Refusal::NoBoard),
                b"ro" => Some(Refusal::ReadOnly),
                b"no" => Some(Refusal::Config),
                b"indexed" => Some(Refusal::Indexed),
                _ => return Err(protocol("zadd_open")),
            },
            Value::ServerError(e) => return Err(map_err(board, e.into())),
            _ => return Err(protocol("zadd_open")),
        };
        if let (None, Value::ServerError(e)) = (refusal, added) {
            return Err(map_err(board, e.into()));
        }
        Ok(refusal)
    }

    /// `import`: a batch of plain entries by a native `ZADD` when the
    /// board takes it, else through `submit`.
    pub(crate) async fn import_batch(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Imported>, ApiError> {
        if !entries.is_empty() && entries.iter().all(plain_import) {
            let mut refusal = self.import_native(board, entries).await?;
            if refusal == Some(Refusal::NoBoard) {
                self.create(board, &BoardConfig::default(), true).await?;
                refusal = self.import_native(board, entries).await?;
            }
            match refusal {
                None => return Ok(vec![Ok(()); entries.len()]),
                Some(Refusal::NoBoard) => return Err(ApiError::no_board(board)),
                Some(Refusal::ReadOnly) => return Err(podium_err(board, "ro")),
                // The board's config needs `submit`'s per-entry path.
                Some(Refusal::Config) => return self.import_by_submit(board, entries).await,
                Some(Refusal::Indexed) => {}
            }
            // New members must join the board's search sets: the script's
            // `import` indexes them.
            let scores: Vec<String> = entries.iter().map(|e| fmt_score(e.score.0)).collect();
            let args = scores
                .iter()
                .zip(entries)
                .flat_map(|(s, e)| [s.as_str(), e.member.as_str()]);
            match self.write(board, "import", args).await? {
                Value::Int(n) if n as usize == entries.len() => {
                    return Ok(vec![Ok(()); entries.len()])
                }
                // The board's config needs `submit`'s per-entry path.
                Value::Array(a) if a.first().and_then(text).as_deref() == Some("no") => {}
                _ => return Err(protocol("import")),
            }
        }
        self.import_by_submit(board, entries).await
    }

    /// An import batch through `submit` (its per-entry checks and
    /// paths), answering each entry's error only.
    async fn import_by_submit(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Imported>, ApiError> {
        Ok(self
            .submit_results(board, entries)
            .await?
            .into_iter()
            .map(|r| r.map(|_| ()).map_err(|e| ErrorBody::from(&e)))
            .collect())
    }
}

/// The results of a batch the script applied by its fast path
/// (`submit_fast`: plain `set`s, each member once, every one applied):
/// from each entry's previous score and its place in the final board,
/// the rank each had right after it was applied, as the engine answers.
fn fast_results(
    ranking: Ranking,
    entries: &[SubmitIn],
    mut items: Vec<Value>,
) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
    if items.len() != 5 {
        return Err(protocol("submit fast"));
    }
    let at = arr_last(&mut items)?;
    let olds = arr_last(&mut items)?;
    let asc = int(&items[2])? == 1;
    if at.len() != entries.len() || olds.len() != entries.len() {
        return Err(protocol("submit fast results"));
    }
    let olds: Vec<Option<f64>> = olds
        .iter()
        .map(|v| match v {
            Value::Nil => Ok(None),
            v => score(v).map(Some),
        })
        .collect::<Result<_, _>>()?;
    let at: Vec<u64> = at.iter().map(int).collect::<Result<_, _>>()?;
    let keys: Vec<(f64, &str)> = entries
        .iter()
        .map(|e| (e.score.0, e.member.as_str()))
        .collect();
    let seq = sequential_places(asc, ranking == Ranking::Unique, &keys, &olds, &at);
    Ok(entries
        .iter()
        .zip(olds)
        .zip(seq)
        .map(|((e, old), place)| {
            Ok(SubmitOut {
                scores: None,
                previous_scores: None,
                member: e.member.clone(),
                score: Some(e.score),
                rank: Some(place + 1),
                previous: old.map(Score),
                changed: old != Some(e.score.0),
                created: old.is_none(),
                applied: true,
                evicted: 0,
            })
        })
        .collect())
}

/// Whether `a` is ahead of `b` in a board's order: the better score, and
/// between equal scores the member Redis puts first (bytes descending on
/// a desc board read with `REV`, ascending on an asc one). `by_member:
/// false` compares scores only (strictly better). A board with sort keys
/// compares its members' codes (bytes) as scores.
fn ahead<S: PartialOrd>(asc: bool, by_member: bool, a: (S, &str), b: (S, &str)) -> bool {
    use std::cmp::Ordering::*;
    let by_score = if asc {
        a.0.partial_cmp(&b.0)
    } else {
        b.0.partial_cmp(&a.0)
    };
    match by_score {
        Some(Less) => true,
        Some(Equal) if by_member => {
            if asc {
                a.1.as_bytes() < b.1.as_bytes()
            } else {
                a.1.as_bytes() > b.1.as_bytes()
            }
        }
        _ => false,
    }
}

/// The place each entry of a batch had right after it was applied, from
/// its place in the final board (`at`: the position on a unique board,
/// else the count of strictly better scores): every later entry `j` of
/// the batch (each member once) was then still at its previous score
/// `olds[j]` (or absent) rather than its new one, so entry `i`'s place is
/// `at[i]` minus the later entries whose new key is ahead of it, plus the
/// later ones whose previous key is. Counted from the last entry back
/// with a Fenwick tree over the keys in board order: O(n log n).
pub(crate) fn sequential_places<S: PartialOrd + Copy>(
    asc: bool,
    unique: bool,
    keys: &[(S, &str)],
    olds: &[Option<S>],
    at: &[u64],
) -> Vec<u64> {
    let mut all: Vec<(S, &str)> = keys.to_vec();
    all.extend(
        keys.iter()
            .zip(olds)
            .filter_map(|(k, o)| o.map(|x| (x, k.1))),
    );
    // Best first: a key's coordinate is how many keys are strictly ahead
    // of it, so "ahead of q" is "coordinate below q's".
    all.sort_by(|a, b| {
        if ahead(asc, true, *a, *b) {
            std::cmp::Ordering::Less
        } else if ahead(asc, true, *b, *a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let coord =
        |q: (S, &str), by_member: bool| all.partition_point(|k| ahead(asc, by_member, *k, q));
    let mut tree = vec![0i64; all.len() + 1];
    let add = |tree: &mut Vec<i64>, c: usize, d: i64| {
        let mut i = c + 1;
        while i < tree.len() {
            tree[i] += d;
            i += i & i.wrapping_neg();
        }
    };
    // Sum over coordinates below c.
    let below = |tree: &Vec<i64>, c: usize| {
        let (mut i, mut s) = (c, 0);
        while i > 0 {
            s += tree[i];
            i -= i & i.wrapping_neg();
        }
        s
    };
    let mut out = vec![0; keys.len()];
    for i in (0..keys.len()).rev() {
        let shift = below(&tree, coord(keys[i], unique));
        out[i] = (at[i] as i64 - shift).max(0) as u64;
        add(&mut tree, coord(keys[i], true), 1);
        if let Some(x) = olds[i] {
            add(&mut tree, coord((x, keys[i].1), true), -1);
        }
    }
    out
}

/// One item of the submit script's reply.
fn submit_item(
    board: &str,
    ranking: Ranking,
    member: &str,
    item: Value,
) -> Result<Result<SubmitOut, ApiError>, ApiError> {
    let a = arr(item)?;
    let kind = a.first().and_then(text).ok_or_else(|| protocol("item"))?;
    let out = |score, rank, previous, changed, created, applied, evicted| SubmitOut {
        scores: None,
        previous_scores: None,
        member: member.to_string(),
        score,
        rank,
        previous,
        changed,
        created,
        applied,
        evicted,
    };
    let get = |i: usize| a.get(i).ok_or_else(|| protocol("item"));
    Ok(Ok(match kind.as_str() {
        "absent" => out(None, None, None, false, false, false, 0),
        "evicted" => out(None, None, None, false, false, true, int(get(1)?)?),
        "new" => out(
            Some(Score(score(get(1)?)?)),
            Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?)),
            None,
            true,
            true,
            true,
            int(get(4)?)?,
        ),
        "upd" => out(
            Some(Score(score(get(1)?)?)),
            Some(rank_of(ranking, int(get(2)?)?, int(get(3)?)?)),
            Some(Score(score(get(4)?)?)),
            int(get(6)?)? == 1,
            false,
            int(get(5)?)? == 1,
            0,
        ),
        "err" => {
            let detail: Vec<String> = a[1..].iter().filter_map(text).collect();
            return Ok(Err(podium_err(board, &detail.join(" "))));
        }
        _ => return Err(protocol("item kind")),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_are_their_only_word() {
        let long = "a".repeat(255);
        let longer = "a".repeat(256);
        for m in ["m1", "player42", "0", "abc", &long] {
            assert!(id_is_its_word(m), "{m}");
        }
        // The shortcut agrees with the tokeniser, both ways.
        for m in [
            "m1", "M1", "a-b", "a b", "é", "e\u{301}", "", &long, &longer, "Ann-Lee", "x_y", "ab½",
        ] {
            assert_eq!(id_is_its_word(m), words_line(m) == m, "{m:?}");
        }
    }

    /// The places `sequential_places` derives from the final board equal
    /// those of applying the batch one entry at a time to a model board
    /// (a sorted list), for random batches with ties, moves both ways,
    /// new members, both orders and both rankings.
    #[test]
    fn sequential_places_match_applying_one_at_a_time() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let pool: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
        for round in 0..400 {
            let (asc, unique) = (round % 2 == 0, round % 4 < 2);
            let mut board: Vec<(f64, &str)> = Vec::new();
            for m in &pool {
                if rng.random_bool(0.5) {
                    board.push((rng.random_range(0..5) as f64, m));
                }
            }
            let mut order: Vec<&str> = pool.iter().map(String::as_str).collect();
            let n = rng.random_range(1..30);
            let mut keys = Vec::new();
            for _ in 0..n {
                let m = order.swap_remove(rng.random_range(0..order.len()));
                keys.push((rng.random_range(0..5) as f64, m));
            }
            let olds: Vec<Option<f64>> = keys
                .iter()
                .map(|k| board.iter().find(|b| b.1 == k.1).map(|b| b.0))
                .collect();
            // The place of q in a board: what is ahead of it.
            let place = |board: &[(f64, &str)], q: (f64, &str)| {
                board
                    .iter()
                    .filter(|b| b.1 != q.1 && ahead(asc, unique, **b, q))
                    .count() as u64
            };
            let mut want = Vec::new();
            for k in &keys {
                board.retain(|b| b.1 != k.1);
                board.push(*k);
                want.push(place(&board, *k));
            }
            let at: Vec<u64> = keys.iter().map(|k| place(&board, *k)).collect();
            assert_eq!(
                sequential_places(asc, unique, &keys, &olds, &at),
                want,
                "round {round}"
            );
        }
    }
}
