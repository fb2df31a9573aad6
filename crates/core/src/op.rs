//! The product's operations and the API key scope each one needs: the one
//! table every frontend's authorisation reads. An HTTP route, an RPC
//! method and a Redis command each name the operation they perform, so an
//! effect needs the same scope whichever protocol asks for it, and no
//! frontend reads another's table.
//!
//! The names are the HTTP API's operation ids (the OpenAPI document's
//! `operationId`) where HTTP has the operation.

use std::fmt;
use std::str::FromStr;

const OPEN: Option<Scope> = None;
const READ: Option<Scope> = Some(Scope::Read);
const WRITE: Option<Scope> = Some(Scope::Write);
const ADMIN: Option<Scope> = Some(Scope::Admin);

// One row per operation, so the enum, its names and its scopes are written
// once, side by side, and a new operation cannot be added without a scope.
macro_rules! ops {
    ($($(#[$doc:meta])* $op:ident = $name:literal, $scope:expr;)*) => {
        /// One operation of the product, whatever the protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Op {
            $($(#[$doc])* $op,)*
        }

        impl Op {
            /// Every operation, in table order.
            pub const ALL: &'static [Op] = &[$(Op::$op,)*];

            /// Its name (snake_case).
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$op => $name,)*
                }
            }

            /// The scope a key needs for it; `None`: open, even with keys
            /// configured.
            pub fn scope(self) -> Option<Scope> {
                match self {
                    $(Op::$op => $scope,)*
                }
            }
        }
    };
}

ops! {
    /// Liveness probe.
    Healthz = "healthz", OPEN;
    /// Readiness probe: serving (recovered, storage answering, not
    /// shutting down).
    Readyz = "readyz", OPEN;
    /// The OpenAPI document.
    Openapi = "openapi", OPEN;
    /// Presenting a key (RPC `auth`; Redis AUTH, HELLO, QUIT): what a
    /// connection does before it has a key.
    Auth = "auth", OPEN;
    /// A Redis connection's own state, touching no data (PING, SELECT,
    /// CLIENT, COMMAND, CONFIG GET, MULTI/EXEC/DISCARD): any key.
    Connection = "connection", READ;
    /// The scope of the key a request presents (the web console asks, to
    /// show what the key may do).
    KeyInfo = "key_info", READ;
    /// Server statistics (`/metrics`, Redis INFO).
    Metrics = "metrics", READ;
    /// Listing boards (Redis KEYS, SCAN, DBSIZE).
    Boards = "boards", READ;
    /// One board's description (Redis EXISTS, TYPE, TTL, PTTL).
    BoardInfo = "board_info", READ;
    /// How far a re-ranking `board_update` has gone.
    ResortStatus = "resort_status", READ;
    Top = "top", READ;
    /// A member's entry and data (Redis hash reads: hashes are where the
    /// Redis leaderboard libraries keep member data).
    Entry = "entry", READ;
    /// A member's rank and score (Redis ZSCORE, ZMSCORE, ZRANK, ZREVRANK).
    Rank = "rank", READ;
    Percentile = "percentile", READ;
    ScoreAtPercentile = "score_at_percentile", READ;
    Around = "around", READ;
    Search = "search", READ;
    /// Entries by rank or score (the Redis ZRANGE family, ZSCAN).
    Range = "range", READ;
    /// Members in a score range, or all (Redis ZCOUNT, ZCARD).
    Count = "count", READ;
    Ranks = "ranks", READ;
    Export = "export", READ;
    /// Live events of a board (SSE, WebSocket, RPC `subscribe`).
    Subscribe = "subscribe", READ;
    /// Scores in (Redis ZADD, ZINCRBY).
    Submit = "submit", WRITE;
    /// A member's data (Redis hash writes, and deleting or expiring a key
    /// that names no board).
    SetData = "set_data", WRITE;
    RemoveMember = "remove_member", WRITE;
    /// Members out (Redis ZREM, ZPOPMIN, ZPOPMAX).
    Remove = "remove", WRITE;
    /// Members out by rank or score (Redis ZREMRANGEBYRANK/BYSCORE).
    RemoveRange = "remove_range", WRITE;
    Import = "import", WRITE;
    /// Creating or reconfiguring a board (Redis PERSIST of a board: a
    /// board's expiry is admin's to set and to clear).
    BoardPut = "board_put", ADMIN;
    /// Changing some fields of a board's config, the others kept (HTTP
    /// PATCH, a JSON merge patch).
    BoardPatch = "board_patch", ADMIN;
    /// Deleting a board with its config (Redis DEL, UNLINK and the EXPIRE
    /// family on a key that names a board, archives included).
    BoardDelete = "board_delete", ADMIN;
    Reset = "reset", ADMIN;
    /// Overwriting a board with a union (Redis ZUNIONSTORE).
    Merge = "merge", ADMIN;
    /// Overwriting a board with an intersection (Redis ZINTERSTORE).
    Intersect = "intersect", ADMIN;
    /// Deleting every board and hash (Redis FLUSHALL, FLUSHDB).
    FlushAll = "flush_all", ADMIN;
    /// Running the server: its settings, its clients and its snapshots
    /// (Redis CONFIG SET/RESETSTAT, CLIENT LIST/KILL, SLOWLOG, SAVE,
    /// BGSAVE).
    ServerAdmin = "server_admin", ADMIN;
    /// A consistent copy of the data directory (`podium backup`): every
    /// board and key, so admin's.
    Backup = "backup", ADMIN;
}

impl Op {
    /// Whether it may make the process hold more data (Redis's `denyoom`
    /// commands): refused while the memory budget is used up. Removals,
    /// deletions and resets stay allowed, so memory can be freed.
    pub fn adds_data(self) -> bool {
        matches!(
            self,
            Op::Submit
                | Op::SetData
                | Op::Import
                | Op::BoardPut
                | Op::BoardPatch
                | Op::Merge
                | Op::Intersect
        )
    }
}

/// What an API key may do; `Admin` ⊇ `Write` ⊇ `Read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Read boards, scores and ranks.
    Read,
    /// Also submit and delete scores.
    Write,
    /// Also the administrative operations (which ones: `crate::op::Op`).
    Admin,
}

impl Scope {
    /// The name used on the command line and in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// Whether a key of this scope may do what needs `needed`.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read" => Ok(Scope::Read),
            "write" => Ok(Scope::Write),
            "admin" => Ok(Scope::Admin),
            _ => Err(format!(
                "unknown scope {s:?}: expected read, write or admin"
            )),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read from the config file through `FromStr`, as on the command line.
impl<'de> serde::Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_admin_work_is_admin() {
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
        for op in [
            Op::BoardPut,
            Op::BoardDelete,
            Op::Reset,
            Op::Merge,
            Op::Intersect,
            Op::FlushAll,
        ] {
            assert_eq!(op.scope(), Some(Scope::Admin), "{op:?}");
        }
    }
}
