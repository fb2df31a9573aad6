//! Board writes of the HTTP and RPC frontends: submissions (one entry,
//! a batch, records built ahead by a bulk frontend), removals and
//! member data, each answered once durable.

use podium_engine::{Cond, Presence, UpdateOp};

use super::{KeepEntries, Service, SubmitOwned, ZaddOpts};
use crate::storage::record::{LogOp, MemberBytes, SubmitRec};
use podium_core::api::*;
use podium_core::backend::RangeBounds;
use podium_core::error::{ApiError, Code};

fn op_from_str(s: &str) -> Result<UpdateOp, ApiError> {
    s.parse::<UpdateOp>()
        .map_err(|_| ApiError::bad(format!("op must be set, best or incr, got {s:?}")))
}

fn submit_rec(e: &SubmitIn) -> Result<SubmitRec, ApiError> {
    submit_rec_with(
        e,
        MemberBytes::from_slice(e.member.as_bytes()),
        e.name.clone(),
    )
}

/// [`submit_rec`] taking the entry's member and name instead of copying
/// them (a bulk write's entries are not needed after this).
fn submit_rec_owned(mut e: SubmitIn) -> Result<SubmitRec, ApiError> {
    let member = MemberBytes::from_vec(std::mem::take(&mut e.member).into_bytes());
    let name = e.name.take();
    submit_rec_with(&e, member, name)
}

fn submit_rec_with(
    e: &SubmitIn,
    member: MemberBytes,
    name: Option<String>,
) -> Result<SubmitRec, ApiError> {
    let data = match &e.data {
        None => None,
        Some(v @ serde_json::Value::Object(_)) => Some(v.to_string()),
        Some(serde_json::Value::Null) => None,
        Some(_) => {
            return Err(ApiError::new(
                Code::InvalidData,
                "data must be a JSON object",
            ))
        }
    };
    Ok(SubmitRec {
        member,
        score: e.score.0,
        op: e.op.as_deref().map(op_from_str).transpose()?,
        presence: match e.only {
            None => Presence::Any,
            Some(Only::New) => Presence::OnlyNew,
            Some(Only::Existing) => Presence::OnlyExisting,
        },
        cond: match e.cond {
            None => Cond::Always,
            Some(CondIn::Gt) => Cond::Greater,
            Some(CondIn::Lt) => Cond::Less,
        },
        name,
        data,
    })
}

fn submit_out(member: &str, r: &podium_engine::SubmitResult) -> SubmitOut {
    SubmitOut {
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
        Ok(results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| match r {
                Ok(out) => SubmitItem::Ok(out),
                Err(err) => SubmitItem::Err {
                    member: e.member.clone(),
                    error: ErrorBody::from(&err),
                },
            })
            .collect())
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
        let results = self.submit_raw(board, entries).await?;
        Ok(results
            .into_iter()
            .zip(entries)
            .map(|(r, e)| r.map(|r| submit_out(&e.member, &r)))
            .collect())
    }

    /// [`Service::submit`] with the engine's results, for a caller that
    /// encodes them itself (RPC's `submit_many`): one result per entry,
    /// once durable.
    pub async fn submit_raw(
        &self,
        board: &str,
        entries: &[SubmitIn],
    ) -> Result<Vec<Result<podium_engine::SubmitResult, ApiError>>, ApiError> {
        let recs = entries
            .iter()
            .map(submit_rec)
            .collect::<Result<Vec<_>, _>>()?;
        let done = self.zadd(board.as_bytes(), recs, ZaddOpts::default())?;
        self.durable(done.lsn).await?;
        Ok(done.results)
    }

    /// [`Service::submit_raw`] of entries already made into records, which
    /// come back as the records that were applied and logged (in the same
    /// order): RPC's bulk write encodes its answer from them, so no member
    /// id is copied on the way.
    pub async fn submit_recs_owned(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<SubmitOwned, ApiError> {
        let keep = ZaddOpts {
            keep: KeepEntries::Applied,
        };
        let done = self.zadd(board.as_bytes(), recs, keep)?;
        self.durable(done.lsn).await?;
        Ok((done.results, done.entries))
    }

    /// The records a bulk write applies, taking each entry's member and
    /// name (see [`Service::import_recs`]).
    pub fn submit_recs(entries: Vec<SubmitIn>) -> Result<Vec<SubmitRec>, ApiError> {
        entries.into_iter().map(submit_rec_owned).collect()
    }

    /// A batch of records applied as [`Service::submit_recs_owned`] applies
    /// them, for RPC's `import`: when the engine refuses the batch as a
    /// whole the records come back with the error, so the caller can retry
    /// parts of them without having copied every entry beforehand.
    pub async fn import_recs(
        &self,
        board: &str,
        recs: Vec<SubmitRec>,
    ) -> Result<SubmitOwned, (ApiError, Vec<SubmitRec>)> {
        let keep = ZaddOpts {
            keep: KeepEntries::Always,
        };
        let done = self
            .zadd(board.as_bytes(), recs, keep)
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

    /// `remove_range` by 1-based rank, `start..=stop`.
    pub async fn remove_rank_range(
        &self,
        board: &str,
        start: u64,
        stop: u64,
    ) -> Result<RemovedOut, ApiError> {
        if start == 0 || stop < start {
            return Err(ApiError::bad("ranks start at 1 and stop must be ≥ start"));
        }
        self.removed(board, || {
            self.zrem_positions(board.as_bytes(), start - 1, stop)
        })
        .await
    }

    pub async fn remove_score_range(
        &self,
        board: &str,
        bounds: RangeBounds,
    ) -> Result<RemovedOut, ApiError> {
        self.removed(board, || {
            self.zrem_score_range(board.as_bytes(), bounds.to_range())
        })
        .await
    }

    pub async fn set_data(
        &self,
        board: &str,
        member: &str,
        name: Option<String>,
        data: Option<serde_json::Value>,
    ) -> Result<SetDataOut, ApiError> {
        if self.store.get(board).is_none() {
            return Err(ApiError::no_board(board));
        }
        let data = match data {
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
