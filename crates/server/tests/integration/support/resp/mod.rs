//! Helpers of the Redis-protocol tests (docs/spec.md §4 "Redis protocol"): a raw
//! RESP client ([`wire`]), podium behind its RESP listener ([`podium`]), the
//! differential harness ([`diff`]) and the pair of servers it compares.
//!
//! Environment knobs:
//! - `RESP_DIFF_AGAINST=redis` runs the differential tests against a
//!   second redis-server instead of podium: the harness checking itself
//!   (every hand-written sequence must then give identical replies, i.e.
//!   be deterministic).
//! - `RESP_DIFF_SEED=N` and `RESP_DIFF_COMMANDS=N`: one seed and the
//!   number of commands of the random differential test.
//! - `RESP_DIFF_DUMP=DIR` writes each random command stream to
//!   `DIR/seed-N-respP.resp` (the commands as RESP), to replay by hand.
//! - `RESP_DIFF_TRACE=1` prints every compared command with Redis's reply.

pub mod diff;
pub mod podium;
pub mod wire;

use super::redis::RedisServer;
use diff::Diff;
pub use podium::Podium;

/// The server compared with Redis.
pub enum Other {
    Podium(Podium),
    Redis(RedisServer),
}

/// A real redis-server and the server under test, both running.
pub struct Pair {
    pub redis: RedisServer,
    pub other: Other,
}

impl Pair {
    /// Starts redis-server (failing with an install hint when it is
    /// missing) and podium, or a second redis-server when
    /// `RESP_DIFF_AGAINST=redis`.
    pub fn start() -> Pair {
        let redis = RedisServer::start();
        let other = if self_check() {
            Other::Redis(RedisServer::start())
        } else {
            Other::Podium(Podium::start(&[]))
        };
        Pair { redis, other }
    }

    /// The address of the server under test.
    pub fn other_addr(&self) -> String {
        match &self.other {
            Other::Podium(p) => p.addr(),
            Other::Redis(r) => r.addr(),
        }
    }

    /// Whether the server under test is still running (always true for
    /// the self-check).
    pub fn other_running(&mut self) -> bool {
        match &mut self.other {
            Other::Podium(p) => p.running(),
            Other::Redis(_) => true,
        }
    }

    /// podium's output (for failure messages).
    pub fn other_output(&self) -> String {
        match &self.other {
            Other::Podium(p) => p.output(),
            Other::Redis(_) => String::new(),
        }
    }

    /// New connections to both, in RESP `proto`, both databases flushed.
    pub fn diff(&self, proto: u8, group: &str) -> Diff {
        let mut d = Diff::new(
            &self.redis.addr(),
            &self.other_addr(),
            proto,
            group,
            self_check(),
        );
        d.same("FLUSHALL");
        d
    }
}

/// Whether `RESP_DIFF_AGAINST=redis` (the harness checks itself).
pub fn self_check() -> bool {
    std::env::var("RESP_DIFF_AGAINST").is_ok_and(|v| v == "redis")
}
