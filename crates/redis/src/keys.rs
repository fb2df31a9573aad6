//! Where a board lives in Redis: every key of a board under its hash tag
//! (one cluster slot, so one script run can touch them all), and the
//! registry of board names beside them.

use podium_core::backend::Backend;
use podium_core::error::ApiError;
use redis::FromRedisValue;

use crate::RedisBackend;

/// The set of board names. It lives in its own slot, so it is written
/// before a board is created and after it is deleted, and every listing
/// checks the board's config key: a crash between the two steps leaves a
/// name that lists nothing, never a board that is not listed.
const REGISTRY: &str = "podium:boards";

/// The hash tag of a board: its name with `%` and `}` escaped, so the tag
/// ends at the first `}` and no two boards' keys can coincide.
fn tag(board: &str) -> String {
    board.replace('%', "%25").replace('}', "%7D")
}

/// The board's key of kind `kind`: `{tag}:kind`.
pub(crate) fn board_key(board: &str, kind: &str) -> String {
    let mut k = String::with_capacity(board.len() + 4 + kind.len());
    k.push('{');
    if board.contains(['%', '}']) {
        k.push_str(&tag(board));
    } else {
        k.push_str(board);
    }
    k.push_str("}:");
    k.push_str(kind);
    k
}

/// The board's config hash, `{tag}:c`: the one key of its calls (the
/// script names the others from it).
pub(crate) fn config_key(board: &str) -> String {
    board_key(board, "c")
}

impl RedisBackend {
    /// Adds `board` to the registry (`SADD`) or takes it out (`SREM`).
    pub(crate) async fn registry(&self, cmd: &str, board: &str) -> Result<(), ApiError> {
        let mut c = redis::cmd(cmd);
        c.arg(REGISTRY).arg(board);
        self.command(board, &c).await
    }

    /// Every board's name, sorted (the registry set).
    pub(crate) async fn registered_boards(&self) -> Result<Vec<String>, ApiError> {
        let mut c = redis::cmd("SMEMBERS");
        c.arg(REGISTRY);
        let mut names: Vec<String> = self.command("", &c).await?;
        names.sort();
        Ok(names)
    }

    /// The registered boards whose names start with `prefix` (`NAME@LABEL`:
    /// the names a new archive must not take).
    pub(crate) async fn boards_starting_with(&self, prefix: &str) -> Result<Vec<String>, ApiError> {
        Ok(self
            .boards(&podium_core::ops::ListBoards)
            .await?
            .boards
            .into_iter()
            .map(|b| b.board)
            .filter(|b| b.starts_with(prefix))
            .collect())
    }

    /// The fields `fields` of each board's config hash, read with plain
    /// `HMGET`s, concurrently (each board has its own slot, so they cannot
    /// share a pipeline).
    pub(crate) async fn config_hash_fields<T: FromRedisValue>(
        &self,
        names: &[String],
        fields: &[&str],
    ) -> Vec<Result<T, ApiError>> {
        futures_util::future::join_all(names.iter().map(|n| async move {
            let mut c = redis::cmd("HMGET");
            c.arg(config_key(n)).arg(fields);
            self.command(n, &c).await
        }))
        .await
    }
}
