//! Board writes of the HTTP and RPC frontends: submissions (one entry,
//! a batch, records built ahead by a bulk frontend), removals and
//! member data, each answered once durable.

use super::{KeepEntries, Service, SubmitOwned, ZaddOpts};
use crate::storage::record::{LogOp, SubmitRec};
use podium_core::api::*;
use podium_core::error::{ApiError, Code};
use podium_core::ops::{RangeBy, RemoveRange, SetData};

/// `keys`: the board's sort key names (none for a plain board).
fn submit_out(member: &str, r: &podium_engine::SubmitResult, keys: &[String]) -> SubmitOut {
    let named = |s: &Option<podium_engine::Scores>| s.as_ref().map(|s| NamedScores::of(keys, s));
    SubmitOut {
        scores: named(&r.scores),
        previous_scores: named(&r.previous_scores),
        member: member.to_string(),
        score: r.score.map(Score),
        rank: r.rank,
        previous: r.previous.map(Score),
        changed: r.changed,
        created: r.created,
        applied: r.applied,
        evicted: r.evicted,
    }
}

impl Service {
    /// `submit` / `submit_many`: entries applied in order, one durable
    /// commit. An entry that fails a check needing no board state (NaN, an
    /// over-long member, name or data, a `set` outside the bounds) refuses
    /// the whole batch before anything is applied; one that fails against
    /// the board's state (an `incr` leaving the bounds) fails alone, in its
    /// item, and the rest apply.
    pub async fn submit(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<SubmitItem>, ApiError> {
        let results = self.submit_results(board, entries).await?;
        Ok(SubmitItem::from_results(results, entries))
    }

    /// `submit` of one entry: an entry error is the call's error.
    pub async fn submit_one(&self, board: &str, entry: &SubmitIn) -> Result<SubmitOut, ApiError> {
        let mut v = self
            .submit_results(board, std::slice::from_ref(entry))
            .await?;
        v.pop()
            .unwrap_or_else(|| Err(ApiError::new(Code::Internal, "no result")))
    }

    /// The engine's submission path (shared with Redis's ZADD), each
    /// entry's own result, once durable.
    async fn submit_results(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<SubmitOut, ApiError>>, ApiError> {
        let recs = entries
            .iter()
            .map(SubmitRec::from_ref)
            .collect::<Result<Vec<_>, _>>()?;
        let done = self.zadd(board.as_bytes(), recs, ZaddOpts::default())?;
        self.durable(done.lsn).await?;
        // A board with sort keys labels the values its results carry.
        let sorted = done
            .results
            .iter()
            .any(|r| r.as_ref().is_ok_and(|r| r.scores.is_some()));
        let keys = if sorted {
            self.read(board, |b| b.key_names()).unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(done
            .results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| r.map(|r| submit_out(&e.member, &r, &keys)))
            .collect())
    }

    /// `submit_many` or an `import` batch of entries already made into
    /// records: each entry's engine result once durable, beside the records
    /// as applied and logged (a bulk frontend encodes its answer from them,
    /// so no member id is copied on the way). `keep` says which records
    /// come back: the applied ones, or — for an import, which retries parts
    /// of a batch the engine refused as a whole — every one, with the
    /// refusal too, so the caller need not have copied them beforehand.
    pub async fn submit_records(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
        keep: KeepEntries,
    ) -> Result<SubmitOwned, (ApiError, Vec<SubmitRec>)> {
        let done = self
            .zadd(board.as_bytes(), recs, ZaddOpts { keep })
            .map_err(|r| (r.error, r.entries))?;
        self.durable(done.lsn).await.map_err(|e| (e, Vec::new()))?;
        Ok((done.results, done.entries))
    }

    /// Answers a removal on an existing board once it is durable.
    async fn removed(
        &self,
        board: &str,
        r: impl FnOnce() -> Result<(u64, u64), ApiError>,
    ) -> Result<RemovedOut, ApiError> {
        if self.store.get(board).is_none() {
            return Err(ApiError::no_board(board));
        }
        let (removed, lsn) = r()?;
        self.durable(lsn).await?;
        Ok(RemovedOut {
            board: board.to_string(),
            removed,
        })
    }

    pub async fn remove(&self, board: &str, members: &[String]) -> Result<RemovedOut, ApiError> {
        let members: Vec<&[u8]> = members.iter().map(|m| m.as_bytes()).collect();
        self.removed(board, || self.zrem(board.as_bytes(), &members))
            .await
    }

    /// `remove_range`: by 1-based rank, `start..=stop`, or by score.
    pub async fn remove_range(&self, req: &RemoveRange) -> Result<RemovedOut, ApiError> {
        req.check()?;
        let board = req.board.as_str();
        self.removed(board, || match req.by {
            RangeBy::Rank { start, stop } => self.zrem_positions(board.as_bytes(), start - 1, stop),
            RangeBy::Score(bounds) => {
                self.zrem_score_range_exact(board.as_bytes(), bounds.to_range())
            }
        })
        .await
    }

    pub async fn set_data(&self, req: &SetData) -> Result<SetDataOut, ApiError> {
        let (board, member, name) = (req.board.as_str(), req.member.as_str(), &req.name);
        if self.store.get(board).is_none() {
            return Err(ApiError::no_board(board));
        }
        let data = match &req.data {
            None | Some(serde_json::Value::Null) => None,
            Some(v @ serde_json::Value::Object(_)) => Some(v.to_string()),
            Some(_) => {
                return Err(ApiError::new(
                    Code::InvalidData,
                    "data must be a JSON object",
                ))
            }
        };
        let (found, lsn) = self.write_board(board, |b| {
            let found = b.set_data(member.as_bytes(), name.as_deref(), data.as_deref())?;
            let rec = found.then(|| LogOp::SetData {
                board: board.to_string(),
                member: member.as_bytes().to_vec(),
                name: name.clone(),
                data: data.clone(),
            });
            Ok((found, rec))
        })?;
        self.durable(lsn).await?;
        if !found {
            return Err(ApiError::no_member(board, member));
        }
        Ok(SetDataOut {
            board: board.to_string(),
            member: member.to_string(),
            found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::*;

    #[tokio::test]
    async fn failed_write_on_a_new_board_leaves_the_same_state_after_restart() {
        let dir = tmp("failed");
        {
            let svc = open(&dir);
            let bad = SubmitIn::new("", 1.0);
            assert!(svc.submit_one("fresh", &bad).await.is_err());
            assert_eq!(svc.boards().boards.len(), 1);
            svc.close().unwrap();
        }
        let svc = open(&dir);
        assert_eq!(svc.boards().boards.len(), 1);
    }
}

#[cfg(test)]
mod sort_key_tests {
    use super::*;
    use crate::service::testutil::*;
    use podium_engine::Num;

    fn scored(m: &str, scores: &[(&str, Num)]) -> SubmitIn {
        SubmitIn {
            score: Score::ABSENT,
            scores: Some(NamedScores(
                scores.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            )),
            ..SubmitIn::new(m, 0.0)
        }
    }

    /// Every key type and its extremes survive a snapshot and the log
    /// written after it: the board read back after a restart is the same.
    #[tokio::test]
    async fn every_key_type_survives_a_snapshot_and_the_log_after_it() {
        let dir = tmp("sortkeys");
        let config = serde_json::json!({"update": "incr", "ranking": "dense", "sort": [
            {"key": "i", "type": "int", "op": "max"},
            {"key": "f", "type": "float", "order": "asc", "op": "set"},
            {"key": "j", "type": "int", "order": "asc", "op": "incr"},
            {"key": "g", "type": "float", "op": "min"}
        ]});
        let values = [
            (i64::MIN, f64::NEG_INFINITY, i64::MAX, f64::INFINITY),
            (i64::MAX, -0.0, -1, 5e-324),
            ((1 << 53) + 1, 1.5, 1 << 53, -2.5e300),
            ((1 << 53) + 1, 1.5, 1 << 53, -2.5e300),
            (0, 0.0, 0, 0.0),
        ];
        let top = |svc: &Service| {
            svc.top(&podium_core::ops::Top {
                board: "keys".into(),
                page: None,
                page_size: Some(100),
                with_data: false,
            })
            .unwrap()
        };
        let before = {
            let svc = open(&dir);
            svc.board_put("keys", &config).await.unwrap();
            for (n, (i, f, j, g)) in values.iter().enumerate() {
                let e = scored(
                    &format!("m{n}"),
                    &[
                        ("i", Num::Int(*i)),
                        ("f", Num::Float(*f)),
                        ("j", Num::Int(*j)),
                        ("g", Num::Float(*g)),
                    ],
                );
                svc.submit_one("keys", &e).await.unwrap();
                if n == 2 {
                    assert!(svc.maybe_snapshot(true).unwrap().is_some());
                }
            }
            // Logged after the snapshot: an increment leaving keys out.
            svc.submit_one("keys", &scored("m4", &[("j", Num::Int(-7))]))
                .await
                .unwrap();
            let t = top(&svc);
            svc.close().unwrap();
            t
        };
        let svc = open(&dir);
        let after = top(&svc);
        assert_eq!(after, before);
        let m4 = after.entries.iter().find(|e| e.member == "m4").unwrap();
        assert_eq!(m4.scores.as_ref().unwrap().0[2].1, Num::Int(-7));
        let big = after.entries.iter().find(|e| e.member == "m2").unwrap();
        assert_eq!(big.scores.as_ref().unwrap().0[0].1, Num::Int((1 << 53) + 1));
        // m2 and m3 hold equal values: one dense rank.
        let m3 = after.entries.iter().find(|e| e.member == "m3").unwrap();
        assert_eq!(big.rank, m3.rank);
    }
}
