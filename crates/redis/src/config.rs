//! Board configs on Redis: the config hash the script reads, what Redis
//! cannot honour (refused, never approximated), archive records, and the
//! board's lifecycle around that hash (create, implicit creation by a
//! first write, `board_info`).

use podium_core::api::BoardOut;
use podium_core::error::{ApiError, Code};
use podium_core::schedule::{self, DateTime, Utc};
use podium_engine::{BoardConfig, Store, Tiebreak};
use redis::Value;

use crate::args::fmt_score;
use crate::conn::NO_ARGS;
use crate::reply::{arr, int, protocol, text};
use crate::sorted::{keys_json, Layout};
use crate::RedisBackend;

/// A config as this backend stored it: an archive's records whose
/// archive it is, which a client's config may not (see
/// [`podium_core::api::config_from_json`]).
pub(crate) fn stored_config(v: &serde_json::Value) -> podium_engine::Result<BoardConfig> {
    BoardConfig::from_json(v)
}

/// The stored config of a board as [`RedisBackend::info_raw`] read it.
pub(crate) fn config_of(info: &BoardOut) -> Result<BoardConfig, ApiError> {
    stored_config(&info.config).map_err(|_| protocol("config"))
}

/// Configs Redis cannot honour exactly are refused when a board is
/// created or reconfigured, never served approximately.
pub(crate) fn supported(c: &BoardConfig) -> Result<(), ApiError> {
    if c.tiebreak != Tiebreak::Member {
        return Err(ApiError::new(
            Code::InvalidConfig,
            format!(
                "tiebreak {:?} is not available on the redis backend: a Redis sorted set orders \
                 equal scores by member bytes only (use tiebreak \"member\")",
                c.tiebreak.as_str()
            ),
        ));
    }
    if !c.webhooks.is_empty() {
        return Err(ApiError::new(
            Code::Unsupported,
            "webhooks are not available on the redis backend yet: they need the embedded \
             store's durable outbox (subscribe to the board's events instead)",
        ));
    }
    Ok(())
}

/// The config hash the script reads, plus the full config as JSON for
/// `board_info`, plus the reset period of now (`p`) for a board with a
/// schedule.
pub(crate) fn config_fields(c: &BoardConfig, now: DateTime<Utc>) -> Vec<String> {
    let mut v = vec![
        "order".into(),
        c.order.as_str().into(),
        "ranking".into(),
        c.ranking.as_str().into(),
        "update".into(),
        c.update.as_str().into(),
        "maxdata".into(),
        c.max_data_bytes.to_string(),
        "json".into(),
        c.to_json().to_string(),
        "sf".into(),
        c.search_fields.join(" "),
    ];
    if let Some(m) = c.min_score {
        v.extend(["min".into(), fmt_score(m)]);
    }
    if let Some(m) = c.max_score {
        v.extend(["max".into(), fmt_score(m)]);
    }
    if let Some(m) = c.max_members {
        v.extend(["cap".into(), m.to_string()]);
    }
    if let Some(p) = schedule::period_label(&c.reset, now) {
        v.extend(["p".into(), p]);
    }
    if let (Some(l), Some(sk)) = (Layout::of(c), keys_json(c)) {
        v.extend(["sl".into(), l.sl(), "sk".into(), sk]);
        let [lo, hi] = l.bounds(c);
        if let Some(lo) = lo {
            v.extend(["blo".into(), lo]);
        }
        if let Some(hi) = hi {
            v.extend(["bhi".into(), hi]);
        }
    }
    v
}

/// Whose archive `board` is, by its stored config JSON and read-only
/// flag: the record, or for an archive made before archives recorded it,
/// what its name says (as the embedded backend's recovery reads it).
fn archive_of(board: &str, json: &str, read_only: bool) -> Option<String> {
    if let Some(a) = archive_in_json(json) {
        return Some(a.board);
    }
    if !read_only {
        return None;
    }
    podium_engine::store::legacy_archives(&[board])
        .pop()
        .map(|(_, a)| a.board)
}

/// The archive record in a stored config JSON, if any.
pub(crate) fn archive_in_json(json: &str) -> Option<podium_engine::ArchiveOf> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(podium_engine::ArchiveOf {
        board: v.get("archive_of")?.as_str()?.to_string(),
        seq: v.get("archive_seq")?.as_u64()?,
    })
}

/// The config fields `take` handed over for an archive (the live board's,
/// as staged), made those of its archive number `seq`: read-only, and the
/// JSON recording whose archive it is.
pub(crate) fn archive_fields(
    mut fields: Vec<String>,
    board: &str,
    seq: u64,
) -> Result<Vec<String>, ApiError> {
    for pair in fields.chunks_mut(2) {
        if let [k, v] = pair {
            if k == "json" {
                let json: serde_json::Value =
                    serde_json::from_str(v).map_err(|_| protocol("staged config"))?;
                let mut c = stored_config(&json).map_err(|_| protocol("staged config"))?;
                c.archive = Some(podium_engine::ArchiveOf {
                    board: board.to_string(),
                    seq,
                });
                *v = c.to_json().to_string();
            }
        }
    }
    fields.extend(["ro".to_string(), "1".to_string()]);
    Ok(fields)
}

impl RedisBackend {
    /// Creates `board` with `config`; `if_absent` makes an existing board
    /// a success (implicit creation by a first write).
    pub(crate) async fn create(
        &self,
        board: &str,
        config: &BoardConfig,
        if_absent: bool,
    ) -> Result<(), ApiError> {
        Store::validate_user_name(board)?;
        self.registry("SADD", board).await?;
        match self
            .call(board, "create", config_fields(config, self.now()))
            .await
        {
            Err(e) if if_absent && e.code == Code::BoardExists => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// Runs a write, creating the board with the defaults first when it
    /// does not exist (as the embedded engine and Redis's ZADD do).
    pub(crate) async fn write<I, A>(
        &self,
        board: &str,
        op: &str,
        args: I,
    ) -> Result<Value, ApiError>
    where
        I: IntoIterator<Item = A> + Clone,
        A: redis::ToRedisArgs,
    {
        match self.call(board, op, args.clone()).await {
            Err(e) if e.code == Code::BoardNotFound => {
                self.create(board, &BoardConfig::default(), true).await?;
                self.call(board, op, args).await
            }
            r => r,
        }
    }

    /// `board_info`, and the config JSON exactly as stored (what `take`
    /// compares).
    pub(crate) async fn info_raw(&self, board: &str) -> Result<(BoardOut, String), ApiError> {
        let a = arr(self.call(board, "info", NO_ARGS).await?)?;
        if a.len() < 4 {
            return Err(protocol("info"));
        }
        let json = text(&a[0]).ok_or_else(|| protocol("config"))?;
        let config: serde_json::Value =
            serde_json::from_str(&json).map_err(|_| protocol("config"))?;
        let read_only = int(&a[1])? == 1;
        let next_reset = BoardConfig::from_json(&config)
            .ok()
            .and_then(|c| podium_core::schedule::next_reset_text(&c.reset, self.now()));
        Ok((
            BoardOut {
                board: board.to_string(),
                members: int(&a[2])?,
                read_only,
                heap_bytes: int(&a[3])?,
                archive_of: archive_of(board, &json, read_only),
                config,
                period: a.get(4).and_then(text),
                next_reset,
                created: None,
            },
            json,
        ))
    }

    /// Checks that `board` exists (for calls refused before the script
    /// runs, so a missing board still answers `board_not_found` first).
    pub(crate) async fn exists(&self, board: &str) -> Result<(), ApiError> {
        self.info_raw(board).await.map(drop)
    }
}
