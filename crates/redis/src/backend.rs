//! [`Backend`] on Redis: each operation as script calls, with the
//! reads answered here and the writes, searches and resets handed to
//! their modules.

use async_trait::async_trait;
use podium_core::api::*;
use podium_core::backend::{Backend, Imported};
use podium_core::error::{ApiError, Code};
use podium_core::ops::*;
use podium_engine::Store;
use redis::Value;

use crate::args::{data_arg, entry_words, extra_arg, flag, fmt_score};
use crate::config::{config_fields, supported};
use crate::conn::NO_ARGS;
use crate::reply::{
    arr, int, json_data, protocol, range_out, rank_of, ranked_entry, score_of, text, window, Window,
};
use crate::sorted::{needs_resort, ranking_keys};
use crate::RedisBackend;

impl RedisBackend {
    /// `board_info`.
    async fn info(&self, board: &str) -> Result<BoardOut, ApiError> {
        Ok(self.info_raw(board).await?.0)
    }

    /// A member's `entry`, for `rank` and `percentile`.
    async fn member_entry(&self, board: &str, member: &str) -> Result<EntryInfoOut, ApiError> {
        let req = GetEntry {
            board: board.to_string(),
            member: member.to_string(),
            page_size: None,
        };
        self.entry(&req).await
    }

    /// A range by script op `op`, whose arguments end with the
    /// `from_worst` and `with_data` flags.
    async fn range(
        &self,
        board: &str,
        op: &str,
        mut args: Vec<String>,
        from_worst: bool,
        with_data: bool,
    ) -> Result<RangeOut, ApiError> {
        args.extend([flag(from_worst).into(), flag(with_data).into()]);
        let w = window(self.call(board, op, args).await?, with_data)?;
        Ok(range_out(board, w, from_worst))
    }

    /// Positions `from` to `to` (`None`: the last) of `board`, best first.
    pub(crate) async fn read_window(
        &self,
        board: &str,
        from: u64,
        to: Option<u64>,
        with_data: bool,
    ) -> Result<Window, ApiError> {
        let to = to.map_or_else(|| "-1".to_string(), |t| t.to_string());
        let v = self
            .call(
                board,
                "window",
                [from.to_string(), to, flag(with_data).into()],
            )
            .await?;
        window(v, with_data)
    }
}

/// What a removal answers: how many members went.
fn removed(board: &str, v: Value) -> Result<RemovedOut, ApiError> {
    Ok(RemovedOut {
        board: board.to_string(),
        removed: int(&v)?,
    })
}

#[async_trait]
impl Backend for RedisBackend {
    fn kind(&self) -> &'static str {
        "redis"
    }

    async fn ping(&self) -> Result<(), ApiError> {
        self.command("", &redis::cmd("PING")).await
    }

    async fn backup(&self) -> Result<podium_core::backup::BackupSet, ApiError> {
        Err(ApiError::new(
            podium_core::error::Code::Unsupported,
            "with the Redis backend every board is in Redis and this node keeps no data: \
             back up Redis itself (its RDB snapshots or AOF, BGSAVE, or a replica)",
        ))
    }

    async fn submit(&self, req: &SubmitMany) -> Result<Vec<SubmitItem>, ApiError> {
        let results = self.submit_results(&req.board, &req.entries).await?;
        Ok(SubmitItem::from_results(results, &req.entries))
    }

    async fn import(&self, req: &SubmitMany) -> Result<Vec<Imported>, ApiError> {
        self.import_batch(&req.board, &req.entries).await
    }

    async fn submit_one(&self, req: &Submit) -> Result<SubmitOut, ApiError> {
        let mut v = self
            .submit_results(&req.board, std::slice::from_ref(&req.entry))
            .await?;
        v.pop()
            .unwrap_or_else(|| Err(ApiError::new(Code::Internal, "no result")))
    }

    async fn remove(&self, req: &Remove) -> Result<RemovedOut, ApiError> {
        let board = &req.board;
        removed(board, self.call(board, "remove", &req.members).await?)
    }

    async fn remove_range(&self, req: &RemoveRange) -> Result<RemovedOut, ApiError> {
        req.check()?;
        let board = &req.board;
        let v = match req.by {
            RangeBy::Rank { start, stop } => {
                let args = [start.to_string(), stop.to_string()];
                self.call(board, "remove_ranks", args).await?
            }
            RangeBy::Score(bounds) => {
                self.call_ranged(board, "remove_scores", &bounds, &[])
                    .await?
            }
        };
        removed(board, v)
    }

    async fn set_data(&self, req: &SetData) -> Result<SetDataOut, ApiError> {
        let (board, member, name) = (&req.board, &req.member, req.name.as_deref());
        let words = entry_words(member, name, req.data.as_ref());
        let data = data_arg(&req.data).unwrap_or_else(|()| "!".into());
        let v = self
            .call(
                board,
                "set_data",
                [member.clone(), extra_arg(name), data, words],
            )
            .await?;
        if int(&v)? == 0 {
            return Err(ApiError::no_member(board, member));
        }
        Ok(SetDataOut {
            board: board.clone(),
            member: member.clone(),
            found: true,
        })
    }

    async fn board_create(&self, req: &CreateBoard) -> Result<BoardOut, ApiError> {
        let config = config_from_json(&req.config)?;
        supported(&config)?;
        self.configs.forget(&req.board);
        self.create(&req.board, &config, false).await?;
        self.info(&req.board).await
    }

    async fn board_put(&self, req: &PutBoard) -> Result<BoardOut, ApiError> {
        let board = req.board.as_str();
        let config = config_from_json(&req.config)?;
        Store::validate_user_name(board)?;
        supported(&config)?;
        self.registry("SADD", board).await?;
        let fields = config_fields(&config, self.now());
        let mut created = None;
        for _ in 0..crate::sorted::STALE_TRIES {
            // Members stored otherwise under the new config (other keys,
            // or keys mapped otherwise) are re-encoded first.
            let old = self.read_config(board).await?;
            if let Some(old) = old.filter(|o| needs_resort(o, &config)) {
                if old.read_only {
                    return Err(podium_engine::Error::ReadOnly(board.to_string()).into());
                }
                config.validate()?;
                created = self.resort(board, &old, &config, fields.clone()).await?;
            } else {
                created = match self.call(board, "put", fields.clone()).await {
                    Err(e) if crate::reply::is_stale(&e) => None,
                    r => Some(int(&r?)? == 1),
                };
            }
            if created.is_some() {
                break;
            }
        }
        self.configs.forget(board);
        let created = created.ok_or_else(crate::sorted::kept_changing)?;
        let mut out = self.info(board).await?;
        out.created = Some(created);
        Ok(out)
    }

    async fn board_delete(&self, req: &DeleteBoard) -> Result<(), ApiError> {
        self.configs.forget(&req.board);
        self.call(&req.board, "delete", NO_ARGS).await?;
        self.registry("SREM", &req.board).await
    }

    async fn reset(&self, req: &Reset) -> Result<ResetOut, ApiError> {
        let out = self.reset_board(&req.board).await?;
        tracing::info!(board = %out.board, archive = %out.archive, members = out.archived, "board reset");
        Ok(out)
    }

    async fn combine(&self, req: &Combine) -> Result<CombineOut, ApiError> {
        self.combine_into(req).await
    }

    async fn subscribe(
        &self,
        req: &Subscribe,
    ) -> Result<podium_core::events::Subscription, ApiError> {
        self.subscribe_events(req).await
    }

    async fn board_info(&self, req: &BoardInfo) -> Result<BoardOut, ApiError> {
        self.info(&req.board).await
    }

    async fn boards(&self, _: &ListBoards) -> Result<BoardsOut, ApiError> {
        let names = self.registered_boards().await?;
        // One call per board, concurrently: on a cluster each lives in its
        // own slot, so they cannot share a pipeline.
        let infos = futures_util::future::join_all(names.iter().map(|n| self.info(n))).await;
        let mut boards = Vec::with_capacity(names.len());
        for (board, info) in names.into_iter().zip(infos) {
            match info {
                Ok(out) => boards.push(BoardSize {
                    board,
                    members: out.members,
                    archive_of: out.archive_of,
                    heap_bytes: out.heap_bytes,
                }),
                // Listed but not (or no longer) created: see `keys::REGISTRY`.
                Err(e) if e.code == Code::BoardNotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(BoardsOut { boards })
    }

    async fn entry(&self, req: &GetEntry) -> Result<EntryInfoOut, ApiError> {
        let (board, member) = (req.board.as_str(), req.member.as_str());
        let ps = req.page_size()?;
        let a = arr(self.call(board, "entry", [member]).await?)?;
        if a.is_empty() {
            return Err(ApiError::no_member(board, member));
        }
        if a.len() < 8 {
            return Err(protocol("entry"));
        }
        let (ranking, layout) = ranking_keys(a.get(6))?;
        let (pos, better, total) = (int(&a[0])?, int(&a[2])?, int(&a[3])?);
        let rank_better = int(&a[7])?;
        let (score, scores) = score_of(&a[1], layout.as_deref())?;
        Ok(EntryInfoOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            entry: EntryOut {
                scores,
                member: member.to_string(),
                score,
                rank: rank_of(ranking, pos, rank_better),
                name: text(&a[4]),
                data: json_data(a.get(5)),
            },
            percentile: 100.0 * (total as f64 - better as f64) / total as f64,
            page: pos / ps + 1,
            total,
        })
    }

    async fn rank(&self, req: &Rank) -> Result<RankOut, ApiError> {
        let e = self.member_entry(&req.board, &req.member).await?;
        Ok(RankOut {
            board: e.board,
            ranking: e.ranking,
            member: e.entry.member,
            rank: e.entry.rank,
            score: e.entry.score,
        })
    }

    async fn count(&self, req: &Count) -> Result<CountOut, ApiError> {
        let v = self
            .call_ranged(&req.board, "count", &req.bounds, &[])
            .await?;
        Ok(CountOut {
            board: req.board.clone(),
            count: int(&v)?,
        })
    }

    async fn top(&self, req: &Top) -> Result<TopOut, ApiError> {
        let (page, ps) = req.page()?;
        let from = (page - 1).saturating_mul(ps);
        let to = from.saturating_add(ps - 1);
        let w = self
            .read_window(&req.board, from, Some(to), req.with_data)
            .await?;
        Ok(TopOut {
            board: req.board.clone(),
            ranking: ranking_str(w.ranking).to_string(),
            page,
            page_size: ps,
            total: w.total,
            total_pages: w.total.div_ceil(ps),
            entries: w.entries,
        })
    }

    async fn range_by_rank(&self, req: &RangeByRank) -> Result<RangeOut, ApiError> {
        req.check()?;
        let args = vec![req.start.to_string(), req.stop.to_string()];
        self.range(
            &req.board,
            "rank_range",
            args,
            req.from_worst,
            req.with_data,
        )
        .await
    }

    async fn range_by_score(&self, req: &RangeByScore) -> Result<RangeOut, ApiError> {
        let extra = [
            req.offset().to_string(),
            req.limit().to_string(),
            flag(req.from_worst).into(),
            flag(req.with_data).into(),
        ];
        let v = self
            .call_ranged(&req.board, "score_range", &req.bounds, &extra)
            .await?;
        Ok(range_out(
            &req.board,
            window(v, req.with_data)?,
            req.from_worst,
        ))
    }

    async fn around(&self, req: &Around) -> Result<AroundOut, ApiError> {
        let (board, member, with_data) = (req.board.as_str(), req.member.as_str(), req.with_data);
        let ps = req.page_size()?;
        let v = self
            .call(
                board,
                "around",
                [member.to_string(), ps.to_string(), flag(with_data).into()],
            )
            .await?;
        if v == Value::Nil {
            return Err(ApiError::no_member(board, member));
        }
        let w = window(v, with_data)?;
        let (pos, better) = match w.rest.as_slice() {
            [p, b, ..] => (int(p)?, int(b)?),
            _ => return Err(protocol("around")),
        };
        Ok(AroundOut {
            board: board.to_string(),
            ranking: ranking_str(w.ranking).to_string(),
            member: member.to_string(),
            rank: rank_of(w.ranking, pos, better),
            total: w.total,
            entries: w.entries,
        })
    }

    async fn ranks(&self, req: &Ranks) -> Result<RanksOut, ApiError> {
        req.check()?;
        let (board, members, with_data) = (req.board.as_str(), &req.members, req.with_data);
        let args = std::iter::once(flag(with_data).to_string()).chain(members.iter().cloned());
        let mut a = arr(self.call(board, "ranks", args).await?)?;
        if a.is_empty() {
            return Err(protocol("ranks"));
        }
        let (ranking, layout) = ranking_keys(a.first())?;
        let mut found: Vec<(u64, EntryOut)> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        for item in a.drain(1..) {
            let f = arr(item)?;
            let member = f.first().and_then(text).ok_or_else(|| protocol("ranks"))?;
            if f.len() < 6 {
                missing.push(member);
                continue;
            }
            found.push(ranked_entry(
                &f,
                member,
                ranking,
                layout.as_deref(),
                with_data,
            )?);
        }
        found.sort_by_key(|f| f.0);
        found.dedup_by_key(|f| f.0);
        missing.sort();
        missing.dedup();
        Ok(RanksOut {
            board: board.to_string(),
            ranking: ranking_str(ranking).to_string(),
            entries: found.into_iter().map(|f| f.1).collect(),
            missing,
        })
    }

    async fn percentile(&self, req: &Percentile) -> Result<PercentileOut, ApiError> {
        let e = self.member_entry(&req.board, &req.member).await?;
        Ok(PercentileOut {
            board: e.board,
            member: e.entry.member,
            percentile: e.percentile,
        })
    }

    async fn score_at_percentile(&self, req: &ScoreAtPercentile) -> Result<ScoreAtOut, ApiError> {
        let (board, p) = (req.board.as_str(), req.p);
        if !(0.0..=100.0).contains(&p) {
            self.exists(board).await?;
            return Err(podium_engine::Error::BadArgument(
                "percentile must be between 0 and 100".into(),
            )
            .into());
        }
        let mut w = window(self.call(board, "score_at", [fmt_score(p)]).await?, false)?;
        Ok(ScoreAtOut {
            board: board.to_string(),
            percentile: p,
            entry: w.entries.pop(),
        })
    }

    async fn resort_status(&self, req: &ResortStatus) -> Result<ResortOut, ApiError> {
        let a = arr(self.call(&req.board, "resort_info", NO_ARGS).await?)?;
        let (running, done, total) = match a.as_slice() {
            [d, t] => (true, int(d)?, int(t)?),
            _ => (false, 0, 0),
        };
        Ok(ResortOut {
            board: req.board.clone(),
            running,
            done,
            total,
        })
    }

    async fn search(&self, req: &Search) -> Result<SearchOut, ApiError> {
        self.search_board(req).await
    }

    async fn export_chunk(&self, req: &ExportChunk) -> Result<Vec<ExportLine>, ApiError> {
        let (board, pos, limit) = (req.board.as_str(), req.pos, req.limit);
        if limit == 0 {
            self.exists(board).await?;
            return Ok(Vec::new());
        }
        let to = pos.saturating_add(limit - 1);
        let w = self
            .read_window(board, pos as u64, Some(to as u64), true)
            .await?;
        Ok(w.entries
            .into_iter()
            .map(|e| ExportLine {
                scores: e.scores,
                member: e.member,
                score: e.score,
                rank: e.rank,
                name: e.name,
                data: e.data,
            })
            .collect())
    }
}
