//! The `podium-bench` command line: its global options and one subcommand
//! per scenario and harness, with their defaults; the binary
//! (`src/main.rs`) turns them into each scenario's options and runs it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::net::{Fsync, NetOptions};
use crate::report::{parse_bytes, parse_count};

#[derive(Parser, Debug)]
#[command(
    name = "podium-bench",
    version,
    about = "podium's benchmark scenarios (docs/spec.md §7); `podium bench` runs this binary"
)]
pub struct Cli {
    /// The `podium` binary the network scenarios start servers from; by
    /// default the one beside this binary (`podium bench` passes itself).
    #[arg(long, value_name = "PATH", global = true)]
    pub podium: Option<PathBuf>,

    /// Also write the figures to FILE as a JSON array, one record per figure.
    #[arg(long, value_name = "FILE", global = true)]
    pub json: Option<PathBuf>,

    /// Seed of the random scores and operations; equal seeds, equal workloads.
    #[arg(long, default_value_t = 42, global = true)]
    pub seed: u64,

    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Subcommand, Debug)]
pub enum Scenario {
    /// In-process updates/s, rank lookups/s, page reads/s and bytes per
    /// member: podium's Board against a std BTreeMap+HashMap leaderboard.
    Engine(EngineArgs),
    /// In-process cost of a second sort key: 2-key boards against 1-key
    /// boards (load, rank lookups, page reads, bytes per member), with
    /// first keys that rarely tie and ones that mostly do.
    SortKeys(SortKeysArgs),
    /// The cost of a second sort key on the Redis backend: a 2-key board
    /// against a 1-key board kept in a redis-server this run starts (load,
    /// rank lookups, page reads, Redis's bytes per member).
    SortKeysRedis(SortKeysRedisArgs),
    /// Load N members (sequential, then random scores) through pipelined
    /// submit_many / ZADD, then read random pages of 25 one at a time.
    Rank10m(Rank10mArgs),
    /// Concurrent HTTP clients submitting scores for random members:
    /// sustained updates/s and latency; Redis: unpipelined ZADD.
    HttpUpdates(HttpUpdatesArgs),
    /// Writes to a board while 0, 1,000 and 10,000 live-event subscribers
    /// (`top=10`, then 100k watched members) listen over SSE: writes/s,
    /// events/s, memory per subscriber, write → event latency.
    Events(EventsArgs),
    /// Large MessagePack-RPC responses (export of 1 to 128 MiB): sync,
    /// pipelined, parallel and decoded MB/s beside an in-process copy.
    RpcPayload(RpcPayloadArgs),
    /// 10k and 1M named members imported until searchable (index built);
    /// Redis: an autocomplete index of the same names (a sorted set per
    /// word prefix).
    Import(ImportArgs),
    /// Player search on boards of generated names: index build time and
    /// memory, `a` / `a* a` / `a* a* a` queries/s with p50/p99 in process,
    /// then the same queries over HTTP against a podium holding 1M names.
    Search(SearchArgs),
    /// Harness: random pages of a large board read in process, as the
    /// server answers `top`, time per read; `--plain` turns the huge-page
    /// advice off, for an A/B in one binary.
    PageRead(PageReadArgs),
    /// Harness: the MessagePack-RPC export encoder in process, the board
    /// walk alone and the server's chunks encoded, in entries/s and MB/s.
    ExportEncode(ExportEncodeArgs),
    /// Harness: player search on the Redis backend, through the storage
    /// interface as a frontend calls it, against a Redis you run.
    RedisSearch(RedisSearchArgs),
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// Member counts, comma-separated; the query figures are taken at each.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "10k,1M")]
    pub members: Vec<u64>,

    /// Queries timed per query kind and member count.
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    pub queries: u64,

    /// Skip the over-HTTP figures (no server is started).
    #[arg(long)]
    pub no_http: bool,

    /// Named members the server holds for the over-HTTP figures.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    pub http_members: u64,

    /// Concurrent HTTP clients, one keep-alive connection each.
    #[arg(long, default_value_t = 32)]
    pub clients: usize,

    /// Threads the HTTP clients run on.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,

    /// Seconds each query is asked over HTTP.
    #[arg(long, default_value_t = 5.0)]
    pub http_seconds: f64,

    /// Also ask each query over HTTP with `wrk` (if installed), the same
    /// connections for as long, beside the bench's own client.
    #[arg(long)]
    pub wrk: bool,

    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// Options of every scenario that starts servers.
#[derive(Args, Debug)]
pub struct NetArgs {
    /// Do not run Redis beside podium.
    #[arg(long)]
    pub no_redis: bool,

    /// Flush policy of both servers: podium's --fsync and Redis's
    /// appendfsync (everysec or always).
    #[arg(long, default_value = "everysec")]
    pub fsync: Fsync,

    /// The Redis server binary (looked up in PATH).
    #[arg(long, default_value = "redis-server", value_name = "PROGRAM")]
    pub redis_server: String,

    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl NetArgs {
    pub fn options(&self, seed: u64, podium: &Path) -> Result<NetOptions> {
        Ok(NetOptions {
            exe: podium.to_path_buf(),
            redis: !self.no_redis,
            redis_server: self.redis_server.clone(),
            fsync: self.fsync,
            seed,
            progress: !self.quiet,
        })
    }
}

#[derive(Args, Debug)]
pub struct Rank10mArgs {
    #[command(flatten)]
    pub net: NetArgs,

    /// Members of each board (e.g. 10M, 100k).
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    pub members: u64,

    /// Entries per submit_many call (members per ZADD).
    #[arg(long, value_parser = parse_count, default_value = "1000")]
    pub batch: u64,

    /// Calls in flight on the connection while loading.
    #[arg(long, default_value_t = 8)]
    pub depth: usize,

    /// Random page reads, one request at a time.
    #[arg(long, value_parser = parse_count, default_value = "50k")]
    pub reads: u64,

    /// podium's load call: import (the bulk load; counts only, as Redis's
    /// ZADD answers: the like-for-like call) or submit-many (each entry's
    /// rank in the answer as well).
    #[arg(long, value_parser = ["submit-many", "import"], default_value = "import")]
    pub method: String,

    /// With --backend: page reads in flight for the pipelined read pass
    /// (both sides).
    #[arg(long, default_value_t = 16)]
    pub read_depth: usize,

    /// Run podium on Redis and measure its overhead against the same Redis
    /// used directly: "redis" starts a redis-server, or give
    /// redis://HOST:PORT (its keys direct:seq, direct:rand, {seq}…, {rand}…
    /// are written, then deleted). Without it: the embedded engine.
    #[arg(long, value_name = "redis|URL")]
    pub backend: Option<String>,
}

#[derive(Args, Debug)]
pub struct HttpUpdatesArgs {
    #[command(flatten)]
    pub net: NetArgs,

    /// Concurrent HTTP clients (Redis: connections).
    #[arg(long, default_value_t = 64)]
    pub clients: usize,

    /// Members the updates pick from at random (loaded first).
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    pub members: u64,

    /// How long each side runs, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    #[command(flatten)]
    pub net: NetArgs,

    /// Members of the board (loaded first).
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    pub members: u64,

    /// Members watched by the `members` subscribers, all together.
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    pub watched: u64,

    /// Subscriber counts, comma-separated (the first is the reference).
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "0,1000,10000")]
    pub subscribers: Vec<u64>,

    /// Writing clients (MessagePack-RPC connections).
    #[arg(long, default_value_t = 4)]
    pub writers: usize,

    /// Calls in flight per writer.
    #[arg(long, default_value_t = 32)]
    pub depth: usize,

    /// How long each run writes, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,

    /// The subscribers' filters measured, comma-separated: `top` (top=10)
    /// and/or `members` (the watched members).
    #[arg(long, value_delimiter = ',', default_value = "top,members",
          value_parser = clap::builder::PossibleValuesParser::new(["top", "members"]))]
    pub filters: Vec<String>,

    /// Skip the latency phase.
    #[arg(long)]
    pub no_latency: bool,
}

#[derive(Args, Debug)]
pub struct RpcPayloadArgs {
    #[command(flatten)]
    pub net: NetArgs,

    /// Response sizes, comma-separated (e.g. 1MiB,128MiB).
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes,
          default_value = "1MiB,8MiB,32MiB,128MiB")]
    pub sizes: Vec<u64>,

    /// Entry counts instead of sizes, comma-separated (a smaller run).
    #[arg(long, value_delimiter = ',', value_parser = parse_count)]
    pub members: Option<Vec<u64>>,

    /// Requests in flight in the pipelined mode.
    #[arg(long, default_value_t = 4)]
    pub depth: usize,

    /// Connections in the parallel mode.
    #[arg(long, default_value_t = 4)]
    pub connections: usize,

    /// Seconds each mode runs at least.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,

    /// Also export boards whose members carry a JSON `data` object of
    /// about this many bytes (e.g. 1KiB), as extra rows beside the bare ones.
    #[arg(long, value_parser = parse_bytes)]
    pub data: Option<u64>,

    /// Also export boards whose members carry a `data` object of exactly
    /// this many bytes that is one long string (e.g. 4KiB, the default
    /// data limit; larger sizes raise the boards' `max_data_bytes`): the
    /// Ruby report's opaque payload, as extra rows.
    #[arg(long, value_parser = parse_bytes)]
    pub blob: Option<u64>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub net: NetArgs,

    /// Member counts, comma-separated, one fresh board each.
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "10k,1M")]
    pub members: Vec<u64>,

    /// Entries per import call.
    #[arg(long, value_parser = parse_count, default_value = "10k")]
    pub batch: u64,

    /// Calls (Redis: pipelines) in flight.
    #[arg(long, default_value_t = 4)]
    pub depth: usize,
}

#[derive(Args, Debug)]
pub struct EngineArgs {
    /// Member counts to run, comma-separated (e.g. 1M,10M or 100000).
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "1M,10M")]
    pub members: Vec<u64>,

    /// Updates, rank lookups and page reads per side and member count.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    pub ops: u64,

    /// Seconds allowed for the baseline's O(n) rank lookups and page reads.
    #[arg(long, default_value_t = 2.0)]
    pub baseline_seconds: f64,

    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct SortKeysArgs {
    /// Member counts to run, comma-separated (e.g. 1M,10M or 100000).
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "1M,10M")]
    pub members: Vec<u64>,

    /// Rank lookups per board and round, one at a time and again batched.
    #[arg(long, value_parser = parse_count, default_value = "500k")]
    pub ops: u64,

    /// Random page reads per board and round.
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    pub pages: u64,

    /// Rounds of every phase over the four boards; medians are reported.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,

    /// Load members in the order of their ids (m0, m1, …) instead of a
    /// random order.
    #[arg(long)]
    pub in_order: bool,

    /// No progress lines.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct SortKeysRedisArgs {
    /// Members of each board.
    #[arg(long, value_parser = parse_count, default_value = "1M")]
    pub members: u64,

    /// Rank lookups and page reads per board and round.
    #[arg(long, value_parser = parse_count, default_value = "20k")]
    pub ops: u64,

    /// Rounds over both boards; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,

    /// The Redis server binary (looked up in PATH).
    #[arg(long, default_value = "redis-server", value_name = "PROGRAM")]
    pub redis_server: String,

    /// No progress lines.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct PageReadArgs {
    /// Members of the board.
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    pub members: u64,

    /// Random page reads per round.
    #[arg(long, value_parser = parse_count, default_value = "200k")]
    pub reads: u64,

    /// Rounds; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,

    /// Do not advise huge pages for the board's memory.
    #[arg(long)]
    pub plain: bool,
}

#[derive(Args, Debug)]
pub struct ExportEncodeArgs {
    /// Members of the board (the default fills a 128 MiB rpc-payload export).
    #[arg(long, value_parser = parse_count, default_value = "3225245")]
    pub members: u64,

    /// Entries per chunk.
    #[arg(long, value_parser = parse_count, default_value = "10000")]
    pub chunk: u64,

    /// Rounds of each way; the median and best are reported.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,

    /// Member `m{i}` gets score `i` (records visited in memory order).
    #[arg(long)]
    pub seq: bool,

    /// Every member carries a JSON `data` profile of about this many bytes.
    #[arg(long, value_parser = parse_bytes, default_value = "0", conflicts_with = "blob")]
    pub data: u64,

    /// Every member carries a `data` of exactly this many bytes, mostly one
    /// long string (rpc-payload's `--blob` shape).
    #[arg(long, value_parser = parse_bytes, default_value = "0")]
    pub blob: u64,
}

#[derive(Args, Debug)]
pub struct RedisSearchArgs {
    /// The Redis to load and search (redis://HOST:PORT).
    #[arg(value_name = "URL")]
    pub url: String,

    /// The board (its keys are written, and replaced unless --skip-load).
    #[arg(long, default_value = "names")]
    pub board: String,

    /// Named members loaded.
    #[arg(long, value_parser = parse_count, default_value = "100k")]
    pub members: u64,

    /// Times each query is asked.
    #[arg(long, default_value_t = 41)]
    pub rounds: usize,

    /// Reuse the board an earlier run loaded.
    #[arg(long)]
    pub skip_load: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn engine_defaults_and_options() {
        let b = Cli::try_parse_from(["podium-bench", "engine"]).unwrap();
        let Scenario::Engine(e) = b.scenario else {
            panic!("not engine")
        };
        assert_eq!(e.members, [1_000_000, 10_000_000]);
        assert_eq!(e.ops, 1_000_000);
        assert_eq!(b.seed, 42);
        assert!(b.json.is_none());

        let b = Cli::try_parse_from([
            "podium-bench",
            "engine",
            "--members",
            "100k,2M",
            "--json",
            "out.json",
            "--seed",
            "7",
        ])
        .unwrap();
        let Scenario::Engine(e) = b.scenario else {
            panic!("not engine")
        };
        assert_eq!(e.members, [100_000, 2_000_000]);
        assert_eq!(b.json.as_deref(), Some(std::path::Path::new("out.json")));
        assert_eq!(b.seed, 7);

        assert!(Cli::try_parse_from(["podium-bench", "engine", "--members", "x"]).is_err());
    }

    #[test]
    fn sort_keys_defaults_and_options() {
        let Scenario::SortKeys(s) = scenario(&["sort-keys"]) else {
            panic!("not sort-keys")
        };
        assert_eq!(s.members, [1_000_000, 10_000_000]);
        assert_eq!((s.ops, s.pages, s.rounds), (500_000, 100_000, 5));
        assert!(!s.quiet && !s.in_order);

        let b = Cli::try_parse_from([
            "podium-bench",
            "sort-keys",
            "--members",
            "100k,2M",
            "--rounds",
            "3",
            "--ops",
            "10k",
            "--quiet",
            "--in-order",
            "--json",
            "sk.json",
        ])
        .unwrap();
        assert_eq!(b.json.as_deref(), Some(Path::new("sk.json")));
        let Scenario::SortKeys(s) = b.scenario else {
            panic!("not sort-keys")
        };
        assert_eq!(s.members, [100_000, 2_000_000]);
        assert_eq!((s.ops, s.rounds), (10_000, 3));
        assert!(s.quiet && s.in_order);

        assert!(Cli::try_parse_from(["podium-bench", "sort-keys", "--members", "x"]).is_err());
        assert!(Cli::try_parse_from(["podium-bench", "sort-keys", "--rounds", "-1"]).is_err());
    }

    fn scenario(args: &[&str]) -> Scenario {
        let mut all = vec!["podium-bench"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).unwrap().scenario
    }

    #[test]
    fn network_scenarios_defaults_and_options() {
        let Scenario::Rank10m(r) = scenario(&["rank10m"]) else {
            panic!()
        };
        assert_eq!(
            (r.members, r.batch, r.depth, r.reads),
            (10_000_000, 1000, 8, 50_000)
        );
        assert!(!r.net.no_redis);
        assert_eq!(r.net.fsync, Fsync::EverySec);
        let Scenario::Rank10m(r) = scenario(&[
            "rank10m",
            "--members",
            "20k",
            "--no-redis",
            "--fsync",
            "always",
            "--quiet",
        ]) else {
            panic!()
        };
        assert_eq!(r.members, 20_000);
        assert!(r.net.no_redis && r.net.quiet);
        assert_eq!(r.backend, None);
        assert_eq!(r.net.fsync, Fsync::Always);
        let Scenario::Rank10m(r) = scenario(&["rank10m", "--backend", "redis"]) else {
            panic!()
        };
        assert_eq!(r.backend.as_deref(), Some("redis"));

        let Scenario::HttpUpdates(h) = scenario(&["http-updates"]) else {
            panic!()
        };
        assert_eq!((h.clients, h.members, h.seconds), (64, 100_000, 10.0));

        let Scenario::Events(e) = scenario(&["events"]) else {
            panic!()
        };
        assert_eq!(
            (e.members, e.watched, e.subscribers.clone()),
            (1_000_000, 100_000, vec![0, 1000, 10_000])
        );

        let Scenario::RpcPayload(p) = scenario(&["rpc-payload"]) else {
            panic!()
        };
        assert_eq!(p.sizes, [1 << 20, 8 << 20, 32 << 20, 128 << 20]);
        assert!(p.members.is_none());
        let Scenario::RpcPayload(p) = scenario(&["rpc-payload", "--members", "1000,5k"]) else {
            panic!()
        };
        assert_eq!(p.members, Some(vec![1000, 5000]));

        let Scenario::Import(i) = scenario(&["import"]) else {
            panic!()
        };
        assert_eq!(i.members, [10_000, 1_000_000]);
        assert_eq!(i.batch, 10_000);

        assert!(Cli::try_parse_from(["podium-bench", "import", "--fsync", "no"]).is_err());

        let Scenario::Search(s) = scenario(&["search"]) else {
            panic!()
        };
        assert_eq!(s.members, [10_000, 1_000_000]);
        assert_eq!(
            (s.http_members, s.clients, s.http_seconds),
            (1_000_000, 32, 5.0)
        );
        assert!(!s.no_http);
        let Scenario::Search(s) = scenario(&["search", "--no-http", "--http-members", "5k"]) else {
            panic!()
        };
        assert!(s.no_http);
        assert_eq!(s.http_members, 5_000);
    }

    #[test]
    fn harnesses_and_the_podium_path() {
        let Scenario::PageRead(p) = scenario(&["page-read", "--members", "3M", "--plain"]) else {
            panic!()
        };
        assert_eq!(
            (p.members, p.reads, p.rounds, p.plain),
            (3_000_000, 200_000, 5, true)
        );
        let Scenario::ExportEncode(e) = scenario(&["export-encode", "--blob", "4KiB"]) else {
            panic!()
        };
        assert_eq!(
            (e.members, e.chunk, e.data, e.blob),
            (3_225_245, 10_000, 0, 4096)
        );
        assert!(Cli::try_parse_from([
            "podium-bench",
            "export-encode",
            "--data",
            "1",
            "--blob",
            "1"
        ])
        .is_err());
        let Scenario::RedisSearch(r) = scenario(&["redis-search", "redis://h:1", "--skip-load"])
        else {
            panic!()
        };
        assert_eq!(
            (r.url.as_str(), r.members, r.rounds),
            ("redis://h:1", 100_000, 41)
        );
        assert!(r.skip_load);
        let c = Cli::try_parse_from(["podium-bench", "--podium", "/x/podium", "engine"]).unwrap();
        assert_eq!(c.podium.as_deref(), Some(Path::new("/x/podium")));
    }
}
