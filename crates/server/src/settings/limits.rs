//! The resource limits of `podium serve`: connections per protocol, the
//! memory budget, idle and request timeouts, transaction queue bounds.
//! Where Redis has the setting, the same name and value syntax
//! (`maxclients 10000`, `maxmemory 64mb`, `timeout 0`).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer};

use super::file::FileConfig;
use super::ByteSize;

/// Default `--maxclients`, per protocol (Redis's default).
pub const DEFAULT_MAXCLIENTS: u32 = 10_000;
/// Default `--timeout` (seconds; 0: never), as Redis's.
pub const DEFAULT_TIMEOUT_SECS: u64 = 0;
/// Default `--http-idle-timeout`: a kept-alive HTTP connection with no
/// request in flight is closed after this many seconds.
pub const DEFAULT_HTTP_IDLE_SECS: u64 = 60;
/// Default `--http-header-timeout`: a request's head must arrive within it.
pub const DEFAULT_HTTP_HEADER_SECS: u64 = 10;
/// Default `--http-body-timeout`: a request's body must arrive within it.
pub const DEFAULT_HTTP_BODY_SECS: u64 = 60;
/// Default `--multi-max-commands`: commands one MULTI may queue.
pub const DEFAULT_MULTI_MAX_COMMANDS: usize = 100_000;
/// Default `--multi-max-bytes`: argument bytes one MULTI may queue.
pub const DEFAULT_MULTI_MAX_BYTES: usize = 64 << 20;

/// Default `--exec-time-limit` (milliseconds): past it EXEC refuses the
/// rest of its queued commands. Writers of every board wait while a
/// transaction runs; a second is long for a leaderboard's transaction.
pub const DEFAULT_EXEC_TIME_LIMIT_MS: u64 = 1000;

/// Default `--script-time-limit` (milliseconds): Redis's
/// `busy-reply-threshold`.
pub const DEFAULT_SCRIPT_TIME_LIMIT_MS: u64 = 5000;

/// The limits, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most open connections per protocol (a few more from loopback: room
    /// for an operator when the limit is reached). `None`: not set, so
    /// [`DEFAULT_MAXCLIENTS`], or as many as the open-file limit holds when
    /// that is fewer (`crate::limits::clients::Descriptors::fit`).
    pub maxclients: Option<u32>,
    /// The memory budget.
    pub maxmemory: MaxMemory,
    /// Seconds a Redis-protocol or MessagePack-RPC client may stay idle
    /// before it is closed; 0: never.
    pub timeout_secs: u64,
    /// Seconds an HTTP connection may wait between requests; 0: never.
    pub http_idle_secs: u64,
    /// Seconds a request's head may take to arrive; 0: no limit.
    pub http_header_secs: u64,
    /// Seconds a request's body may take to arrive; 0: no limit.
    pub http_body_secs: u64,
    /// Most commands one MULTI queues.
    pub multi_max_commands: usize,
    /// Most argument bytes one MULTI queues.
    pub multi_max_bytes: usize,
    /// Milliseconds EXEC runs queued commands before it refuses the rest;
    /// 0: no limit.
    pub exec_time_limit_ms: u64,
    /// Milliseconds a Lua script runs before other Redis clients are
    /// answered BUSY and SCRIPT KILL may stop it.
    pub script_time_limit_ms: u64,
    /// Redis's `notify-keyspace-events` at start, as its bits (0: none).
    pub notify_keyspace_events: u32,
    /// Which addresses webhooks may be delivered to.
    pub webhook_targets: podium_core::events::hooks::Targets,
    /// Most live-event filters watching one member of a board.
    pub events_max_filters_per_member: usize,
    /// Most live-event filters of one board.
    pub events_max_filters_per_board: usize,
    /// Most live-event filters of the server.
    pub events_max_filters: usize,
    /// Seconds a filter is kept after its last subscriber left, for a
    /// subscriber that resumes.
    pub events_retain_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            maxclients: None,
            maxmemory: MaxMemory::Auto,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            http_idle_secs: DEFAULT_HTTP_IDLE_SECS,
            http_header_secs: DEFAULT_HTTP_HEADER_SECS,
            http_body_secs: DEFAULT_HTTP_BODY_SECS,
            multi_max_commands: DEFAULT_MULTI_MAX_COMMANDS,
            multi_max_bytes: DEFAULT_MULTI_MAX_BYTES,
            exec_time_limit_ms: DEFAULT_EXEC_TIME_LIMIT_MS,
            script_time_limit_ms: DEFAULT_SCRIPT_TIME_LIMIT_MS,
            notify_keyspace_events: 0,
            webhook_targets: Default::default(),
            events_max_filters_per_member: podium_core::events::limits::DEFAULT_PER_MEMBER,
            events_max_filters_per_board: podium_core::events::limits::DEFAULT_PER_BOARD,
            events_max_filters: podium_core::events::limits::DEFAULT_TOTAL,
            events_retain_secs: podium_core::events::limits::DEFAULT_RETAIN.as_secs(),
        }
    }
}

/// The flags of the limits (flattened into `podium serve`'s).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// Most open connections per protocol; past it a new connection is
    /// refused (Redis protocol: "max number of clients reached", HTTP 503,
    /// RPC an error), except a few from loopback for an operator
    /// [default: 10000]
    #[arg(long, env = "PODIUM_MAXCLIENTS", value_name = "N")]
    pub maxclients: Option<u32>,

    /// Memory budget: past it writes and large requests are refused with
    /// an out-of-memory error. Redis's syntax (64mb, 2gb, 1000000; k/m/g
    /// are powers of 1000, kb/mb/gb of 1024), 0 for none, or "auto"
    /// (3/4 of the memory the process may use) [default: auto]
    #[arg(long, env = "PODIUM_MAXMEMORY", value_name = "SIZE|auto")]
    pub maxmemory: Option<MaxMemory>,

    /// Close a Redis-protocol or MessagePack-RPC client idle for this many
    /// seconds; 0: never (Redis's `timeout`) [default: 0]
    #[arg(long, env = "PODIUM_TIMEOUT", value_name = "SECONDS")]
    pub timeout: Option<u64>,

    /// Close an HTTP connection idle between requests for this many
    /// seconds; 0: never [default: 60]
    #[arg(long, env = "PODIUM_HTTP_IDLE_TIMEOUT", value_name = "SECONDS")]
    pub http_idle_timeout: Option<u64>,

    /// Seconds an HTTP request's head may take to arrive; 0: no limit
    /// [default: 10]
    #[arg(long, env = "PODIUM_HTTP_HEADER_TIMEOUT", value_name = "SECONDS")]
    pub http_header_timeout: Option<u64>,

    /// Seconds an HTTP request's body may take to arrive; 0: no limit
    /// [default: 60]
    #[arg(long, env = "PODIUM_HTTP_BODY_TIMEOUT", value_name = "SECONDS")]
    pub http_body_timeout: Option<u64>,

    /// Most commands one Redis MULTI may queue [default: 100000]
    #[arg(long, env = "PODIUM_MULTI_MAX_COMMANDS", value_name = "N")]
    pub multi_max_commands: Option<usize>,

    /// Most argument bytes one Redis MULTI may queue [default: 64MiB]
    #[arg(long, env = "PODIUM_MULTI_MAX_BYTES", value_name = "SIZE")]
    pub multi_max_bytes: Option<ByteSize>,

    /// Milliseconds a Redis MULTI/EXEC may run (other clients' writes wait
    /// meanwhile); past it the rest of its commands answer a TIMEOUT
    /// error; 0: no limit [default: 1000]
    #[arg(long, env = "PODIUM_EXEC_TIME_LIMIT", value_name = "MS")]
    pub exec_time_limit: Option<u64>,

    /// Milliseconds a Redis Lua script runs before other Redis clients are
    /// answered BUSY and SCRIPT KILL may stop it (Redis's
    /// busy-reply-threshold); a script still running ten times as long is
    /// stopped [default: 5000]
    #[arg(long, env = "PODIUM_SCRIPT_TIME_LIMIT", value_name = "MS")]
    pub script_time_limit: Option<u64>,

    /// Redis keyspace notifications published on the Redis protocol's
    /// Pub/Sub: Redis's `notify-keyspace-events` letters (K E g $ l s h z
    /// x e t m d n A); CONFIG SET changes them while the server runs
    /// [default: "" (none)]
    #[arg(long, env = "PODIUM_NOTIFY_KEYSPACE_EVENTS", value_name = "FLAGS")]
    pub notify_keyspace_events: Option<String>,

    /// Which addresses boards' webhooks may be delivered to: "loopback"
    /// (127.0.0.0/8 and ::1 only), "public" (loopback and public
    /// addresses, never private, link-local or shared ones) or "any". A
    /// host name's addresses are checked at every delivery
    /// [default: loopback]
    #[arg(long, env = "PODIUM_WEBHOOK_TARGETS", value_name = "WHICH")]
    pub webhook_targets: Option<String>,

    /// Most live-event filters (distinct `top`/`members` choices of a
    /// board's subscribers and webhooks) that may watch one member: each
    /// costs every write to that member [default: 1000]
    #[arg(long, env = "PODIUM_EVENTS_MAX_FILTERS_PER_MEMBER", value_name = "N")]
    pub events_max_filters_per_member: Option<usize>,

    /// Most live-event filters of one board [default: 10000]
    #[arg(long, env = "PODIUM_EVENTS_MAX_FILTERS_PER_BOARD", value_name = "N")]
    pub events_max_filters_per_board: Option<usize>,

    /// Most live-event filters of the server, all boards together
    /// [default: 100000]
    #[arg(long, env = "PODIUM_EVENTS_MAX_FILTERS", value_name = "N")]
    pub events_max_filters: Option<usize>,

    /// Seconds a live-event filter is kept after its last subscriber left,
    /// so a subscriber that reconnects within it resumes without a gap
    /// (later it is told to reload); 0: dropped at once [default: 10]
    #[arg(long, env = "PODIUM_EVENTS_RETAIN", value_name = "SECONDS")]
    pub events_retain: Option<u64>,
}

impl LimitArgs {
    /// These flags over `file` over the defaults.
    pub(super) fn resolve(&self, file: &FileConfig) -> anyhow::Result<Limits> {
        let d = Limits::default();
        let bytes = |b: Option<ByteSize>, default: usize, what: &str| match b {
            None => Ok(default),
            Some(ByteSize(n)) => usize::try_from(n)
                .map_err(|_| anyhow::anyhow!("{what} {n} does not fit this machine's memory")),
        };
        Ok(Limits {
            maxclients: self.maxclients.or(file.maxclients).or(d.maxclients),
            maxmemory: self.maxmemory.or(file.maxmemory).unwrap_or(d.maxmemory),
            timeout_secs: self.timeout.or(file.timeout).unwrap_or(d.timeout_secs),
            http_idle_secs: self
                .http_idle_timeout
                .or(file.http_idle_timeout)
                .unwrap_or(d.http_idle_secs),
            http_header_secs: self
                .http_header_timeout
                .or(file.http_header_timeout)
                .unwrap_or(d.http_header_secs),
            http_body_secs: self
                .http_body_timeout
                .or(file.http_body_timeout)
                .unwrap_or(d.http_body_secs),
            multi_max_commands: self
                .multi_max_commands
                .or(file.multi_max_commands)
                .unwrap_or(d.multi_max_commands),
            multi_max_bytes: bytes(
                self.multi_max_bytes.or(file.multi_max_bytes),
                d.multi_max_bytes,
                "multi_max_bytes",
            )?,
            exec_time_limit_ms: self
                .exec_time_limit
                .or(file.exec_time_limit)
                .unwrap_or(d.exec_time_limit_ms),
            script_time_limit_ms: self
                .script_time_limit
                .or(file.script_time_limit)
                .unwrap_or(d.script_time_limit_ms),
            notify_keyspace_events: match self
                .notify_keyspace_events
                .as_ref()
                .or(file.notify_keyspace_events.as_ref())
            {
                None => d.notify_keyspace_events,
                Some(f) => {
                    podium_core::keystore::notify::parse_flags(f.as_bytes()).ok_or_else(|| {
                        anyhow::anyhow!(
                            "notify_keyspace_events {f:?}: {}",
                            podium_core::keystore::notify::BAD_FLAGS
                        )
                    })?
                }
            },
            webhook_targets: match self
                .webhook_targets
                .as_ref()
                .or(file.webhook_targets.as_ref())
            {
                None => d.webhook_targets,
                Some(t) => podium_core::events::hooks::Targets::parse(t).ok_or_else(|| {
                    anyhow::anyhow!("webhook_targets {t:?}: expected loopback, public or any")
                })?,
            },
            events_max_filters_per_member: self
                .events_max_filters_per_member
                .or(file.events_max_filters_per_member)
                .unwrap_or(d.events_max_filters_per_member),
            events_max_filters_per_board: self
                .events_max_filters_per_board
                .or(file.events_max_filters_per_board)
                .unwrap_or(d.events_max_filters_per_board),
            events_max_filters: self
                .events_max_filters
                .or(file.events_max_filters)
                .unwrap_or(d.events_max_filters),
            events_retain_secs: self
                .events_retain
                .or(file.events_retain)
                .unwrap_or(d.events_retain_secs),
        })
    }
}

impl Limits {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.maxclients == Some(0) {
            anyhow::bail!("--maxclients must be at least 1");
        }
        if self.events_max_filters_per_member == 0
            || self.events_max_filters_per_board == 0
            || self.events_max_filters == 0
        {
            anyhow::bail!(
                "--events-max-filters-per-member, --events-max-filters-per-board and \
                 --events-max-filters must be more than 0"
            );
        }
        if self.events_retain_secs > 3600 {
            anyhow::bail!("--events-retain is at most 3600 seconds");
        }
        if self.multi_max_commands == 0 || self.multi_max_bytes == 0 {
            anyhow::bail!("--multi-max-commands and --multi-max-bytes must be more than 0");
        }
        if let MaxMemory::Bytes(n) = self.maxmemory {
            if n > 0 && n < MIN_MAXMEMORY {
                anyhow::bail!(
                    "--maxmemory {n} is below the {}MiB the server needs to run; \
                     give 0 for no budget",
                    MIN_MAXMEMORY >> 20
                );
            }
        }
        Ok(())
    }
}

/// The smallest budget accepted: the server itself holds a few MiB.
pub const MIN_MAXMEMORY: u64 = 16 << 20;

/// `--maxmemory`: a number of bytes in Redis's syntax (0: no budget), or
/// `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxMemory {
    /// Three quarters of what the process may use: the least of physical
    /// memory and the cgroup's limit, and half an address-space limit
    /// (`ulimit -v`), which also holds code, stacks and allocator arenas.
    Auto,
    Bytes(u64),
}

impl MaxMemory {
    /// The budget in bytes (0: none), `Auto` worked out on this machine.
    pub fn bytes(self) -> u64 {
        match self {
            MaxMemory::Bytes(n) => n,
            MaxMemory::Auto => auto_budget(),
        }
    }
}

/// Redis's `memtoull`: digits and an optional unit, case-insensitive —
/// `b`; `k`, `m`, `g` (powers of 1000); `kb`, `mb`, `gb` (powers of 1024).
/// The IEC units `KiB`, `MiB`, `GiB` of podium's other sizes are taken too.
pub fn parse_redis_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let expected = "expected a number of bytes with an optional unit, as Redis writes them: \
                    b, k, kb, m, mb, g, gb (e.g. 64mb)";
    if digits.is_empty() {
        return Err(format!("bad size {s:?}: {expected}"));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("size {s:?} is too large"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" | "kib" => 1 << 10,
        "m" => 1_000_000,
        "mb" | "mib" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" | "gib" => 1 << 30,
        _ => return Err(format!("bad size {s:?}: unknown unit {unit:?}: {expected}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

impl FromStr for MaxMemory {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(MaxMemory::Auto);
        }
        parse_redis_bytes(s).map(MaxMemory::Bytes)
    }
}

impl fmt::Display for MaxMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaxMemory::Auto => f.write_str("auto"),
            MaxMemory::Bytes(n) => write!(f, "{n}"),
        }
    }
}

impl<'de> Deserialize<'de> for MaxMemory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = MaxMemory;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of bytes, a string such as \"64mb\", or \"auto\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaxMemory, E> {
                Ok(MaxMemory::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaxMemory, E> {
                u64::try_from(v)
                    .map(MaxMemory::Bytes)
                    .map_err(|_| E::custom(format!("maxmemory {v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaxMemory, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `auto` budget: 3/4 of the least of physical memory, the cgroup's
/// memory limit and half the address-space limit; 0 (none) when none of
/// them can be read.
// `rlim_t` is u64 here but not on every unix.
#[allow(clippy::unnecessary_cast)]
fn auto_budget() -> u64 {
    let mut bounds = Vec::new();
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf reads system constants.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page > 0 {
            bounds.push(pages as u64 * page as u64);
        }
        for path in [
            "/sys/fs/cgroup/memory.max",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        ] {
            if let Some(n) = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
            {
                bounds.push(n);
            }
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0
            && lim.rlim_cur != libc::RLIM_INFINITY
        {
            bounds.push(lim.rlim_cur as u64 / 2);
        }
    }
    bounds.into_iter().min().map_or(0, |b| b / 4 * 3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;

    #[test]
    fn redis_sizes() {
        let ok = |s: &str| parse_redis_bytes(s).unwrap();
        assert_eq!(ok("64mb"), 64 << 20);
        assert_eq!(ok("64MB"), 64 << 20);
        assert_eq!(ok("1k"), 1000);
        assert_eq!(ok("1kb"), 1024);
        assert_eq!(ok("2g"), 2_000_000_000);
        assert_eq!(ok("2gb"), 2 << 30);
        assert_eq!(ok("3GiB"), 3 << 30);
        assert_eq!(ok("0"), 0);
        assert_eq!(ok("100"), 100);
        for bad in [
            "",
            "mb",
            "1.5mb",
            "-1",
            "12 parsecs",
            "99999999999999999999gb",
        ] {
            assert!(parse_redis_bytes(bad).is_err(), "{bad:?}");
        }
        assert_eq!("auto".parse::<MaxMemory>().unwrap(), MaxMemory::Auto);
        assert_eq!("0".parse::<MaxMemory>().unwrap(), MaxMemory::Bytes(0));
        assert_eq!(MaxMemory::Bytes(5).bytes(), 5);
        // On any machine the tests run on, some bound is readable.
        let auto = MaxMemory::Auto.bytes();
        assert!(auto >= MIN_MAXMEMORY, "{auto}");
    }

    #[test]
    fn limits_from_flags_env_and_file() {
        let s = Settings::resolve(&ServeArgs::default()).unwrap();
        assert_eq!(s.limits, Limits::default());
        let s = Settings::resolve(&parse(&[
            "--maxclients",
            "5",
            "--maxmemory",
            "64mb",
            "--timeout",
            "30",
            "--http-idle-timeout",
            "0",
            "--http-header-timeout",
            "2",
            "--http-body-timeout",
            "3",
            "--multi-max-commands",
            "10",
            "--multi-max-bytes",
            "1MiB",
            "--exec-time-limit",
            "250",
            "--script-time-limit",
            "100",
            "--notify-keyspace-events",
            "KEA",
            "--webhook-targets",
            "public",
            "--events-max-filters-per-member",
            "4",
            "--events-max-filters-per-board",
            "40",
            "--events-max-filters",
            "400",
            "--events-retain",
            "0",
        ]))
        .unwrap();
        assert_eq!(
            s.limits,
            Limits {
                maxclients: Some(5),
                maxmemory: MaxMemory::Bytes(64 << 20),
                timeout_secs: 30,
                http_idle_secs: 0,
                http_header_secs: 2,
                http_body_secs: 3,
                multi_max_commands: 10,
                multi_max_bytes: 1 << 20,
                exec_time_limit_ms: 250,
                script_time_limit_ms: 100,
                notify_keyspace_events: podium_core::keystore::notify::parse_flags(b"KEA").unwrap(),
                webhook_targets: podium_core::events::hooks::Targets::Public,
                events_max_filters_per_member: 4,
                events_max_filters_per_board: 40,
                events_max_filters: 400,
                events_retain_secs: 0,
            }
        );
        let cfg = TempConfig::new(
            "limits",
            "maxclients = 7\nmaxmemory = \"1gb\"\ntimeout = 9\nmulti_max_bytes = \"2MiB\"\nexec_time_limit = 0\nnotify_keyspace_events = \"Kz\"\nwebhook_targets = \"any\"\nevents_max_filters = 9\nevents_retain = 60\n",
        );
        let mut args = parse(&["--maxclients", "8"]);
        args.config = Some(cfg.0.clone());
        let s = Settings::resolve(&args).unwrap();
        assert_eq!(s.limits.maxclients, Some(8), "the flag wins");
        assert_eq!(s.limits.maxmemory, MaxMemory::Bytes(1 << 30));
        assert_eq!(s.limits.timeout_secs, 9);
        assert_eq!(s.limits.multi_max_bytes, 2 << 20);
        assert_eq!(s.limits.exec_time_limit_ms, 0);
        assert_eq!(
            s.limits.notify_keyspace_events,
            podium_core::keystore::notify::parse_flags(b"Kz").unwrap()
        );
        assert_eq!(
            s.limits.webhook_targets,
            podium_core::events::hooks::Targets::Any
        );
        assert_eq!(
            (s.limits.events_max_filters, s.limits.events_retain_secs),
            (9, 60)
        );
        let mut args = parse(&["--events-max-filters-per-member", "0"]);
        args.config = None;
        assert!(Settings::resolve(&args)
            .unwrap_err()
            .to_string()
            .contains("--events-max-filters-per-member"));
        for bad in [
            &["--maxclients", "0"][..],
            &["--webhook-targets", "everywhere"],
            &["--notify-keyspace-events", "Kq"],
            &["--maxmemory", "1mb"],
            &["--multi-max-commands", "0"],
        ] {
            assert!(Settings::resolve(&parse(bad)).is_err(), "{bad:?}");
        }
        assert!(Settings::resolve(&parse(&["--maxmemory", "0"])).is_ok());
    }
}
