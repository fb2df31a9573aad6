//! podium's benchmark suite (docs/spec.md §7), run by the `podium-bench`
//! binary (`podium bench SCENARIO` runs it).
//!
//! - [`alloc`]: the counting global allocator for memory figures (installed
//!   by the binaries, not by this library).
//! - [`cli`]: the binary's command line, one subcommand per scenario.
//! - [`report`]: the JSON record and the terminal table every scenario uses.
//! - [`engine`]: the in-process `engine` scenario, podium's `Board` against
//!   a std-collections leaderboard; [`sort_keys`]: the in-process
//!   `sort-keys` scenario, boards of two sort keys against boards of one,
//!   and [`sort_keys_redis`] the same on the Redis backend.
//! - [`search`]: the in-process `search` scenario: index build time and
//!   memory, and `a` / `a* a` / `a* a* a` queries on generated names;
//!   [`search_http`]: the same queries over HTTP against a `podium serve`.
//! - the network scenarios, each against a `podium serve` it starts and,
//!   when installed, a Redis 7 beside it ([`net`] starts both; [`load`]
//!   bulk-loads through each one's pipelined protocol): [`rank10m`],
//!   [`http_updates`], [`rpc_payload`] and [`import`].
//! - timing harnesses for one code path, no comparison: [`page_read`]
//!   (in-process page reads, huge pages or not), [`export_encode`] (the
//!   RPC export encoder in process) and [`redis_search`] (search on the
//!   Redis backend).

pub mod alloc;
pub mod cli;
pub mod engine;
pub mod events;
pub mod export_encode;
pub mod http_updates;
pub mod import;
pub mod load;
pub mod net;
pub mod page_read;
pub mod pin;
pub mod rank10m;
pub mod redis_search;
pub mod report;
pub mod rpc_payload;
pub mod search;
pub mod search_http;
pub mod sort_keys;
pub mod sort_keys_redis;
