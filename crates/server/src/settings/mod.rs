//! The configuration of `podium serve` (docs/spec.md §4–§6).
//!
//! Every setting can come from four places; the first one that gives it wins:
//!
//! 1. a command-line flag (`--http 0.0.0.0:7070`),
//! 2. a `PODIUM_*` environment variable (`PODIUM_HTTP=0.0.0.0:7070`),
//! 3. the TOML file named by `--config FILE` / `PODIUM_CONFIG`
//!    (`http = "0.0.0.0:7070"`; the keys are the long flags in snake_case),
//! 4. the built-in default.
//!
//! Flags and environment variables are merged by clap (each field of
//! [`ServeArgs`] declares its variable with `env = ...`), so [`ServeArgs`]
//! holds "flag, else env, else nothing"; [`Settings::resolve`] lays that over
//! the file and the defaults and validates the result, including the
//! exposure rule of [`Settings::check_exposure`]: no listening on a
//! non-loopback address without an API key.
//!
//! A config file that shows every key:
//!
//! ```toml
//! data_dir = "/var/lib/podium"
//! http = "0.0.0.0:7070"        # "off" disables a protocol
//! rpc = "127.0.0.1:7071"
//! resp = "off"
//! fsync = "everysec"           # always | everysec | no
//! backend = "embedded"         # or "redis://host:6379", "redis+cluster://h1:p1,h2:p2"
//! log_level = "info,podium_server=debug"
//! max_body = "16MiB"           # or a plain number of bytes
//! snapshot_every = "64MiB"
//! maxclients = 10000           # per protocol
//! maxmemory = "auto"           # or "2gb", "512mb" (Redis's units), 0: none
//! timeout = 0                  # idle Redis/RPC clients, seconds; 0: never
//! http_idle_timeout = 60       # seconds
//! http_header_timeout = 10
//! http_body_timeout = 60
//! multi_max_commands = 100000
//! multi_max_bytes = "64MiB"
//! exec_time_limit = 1000       # milliseconds a MULTI/EXEC may run; 0: no limit
//! script_time_limit = 5000     # milliseconds a Lua script runs before BUSY
//! notify_keyspace_events = ""  # Redis keyspace notifications, e.g. "Kz", "KEA"
//! webhook_targets = "loopback" # where webhooks may go: loopback | public | any
//! events_max_filters_per_member = 1000  # live-event filters watching one member
//! events_max_filters_per_board = 10000
//! events_max_filters = 100000
//! events_retain = 10           # seconds a filter outlives its last subscriber
//! http_hosts = ["podium.internal"]  # names answered without API keys (DNS rebinding)
//! webhooks = "on"              # on | off | hold (unset: hold on a restored copy)
//! rate_limit_per_key = "1000/s"      # COUNT/PERIOD[,burst=N], or "off"
//! rate_limit_per_address = "100/s,burst=500"
//!
//! api_key_file = "/etc/podium/keys"   # KEY:SCOPE lines, added to api_keys
//!
//! [[api_keys]]
//! key = "0123456789abcdef-admin"
//! scope = "admin"              # read | write | admin
//! ```
//!
//! A list (the API keys) is replaced whole by a higher-precedence source, not
//! merged with it. A relative `data_dir` is relative to the working
//! directory, wherever it was given.
//!
//! Layout: [`ServeArgs`] (the flags) in `args`, the file in `file`, the
//! value types they share in `values` and `keys`, the resource limits in
//! `limits`, the merge in `resolve`
//! and the checks in `validate`; [`Settings`] itself is here.

mod args;
mod file;
mod keys;
mod limits;
mod resolve;
#[cfg(test)]
mod test_util;
mod validate;
mod values;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

pub use args::ServeArgs;
pub use keys::ApiKey;
pub use limits::{parse_redis_bytes, LimitArgs, Limits, MaxMemory, MIN_MAXMEMORY};
pub use limits::{
    DEFAULT_EXEC_TIME_LIMIT_MS, DEFAULT_MAXCLIENTS, DEFAULT_MULTI_MAX_BYTES,
    DEFAULT_MULTI_MAX_COMMANDS, DEFAULT_SCRIPT_TIME_LIMIT_MS,
};
pub use podium_core::op::Scope;
pub use podium_core::rate::Rate;
pub use podium_store::FsyncPolicy;
pub use values::{ByteSize, ListenAddr, LogFormat, RateLimit, WebhookMode};

/// Default `--data-dir`.
pub const DEFAULT_DATA_DIR: &str = "./podium-data";
/// Default `--http` address.
pub const DEFAULT_HTTP: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7070);
/// Default `--rpc` (MessagePack-RPC) address.
pub const DEFAULT_RPC: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7071);
/// Default `--resp` (Redis protocol) address.
pub const DEFAULT_RESP: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 7379);
/// Default `--backend`.
pub const DEFAULT_BACKEND: &str = "embedded";
/// Default `--log-level`.
pub const DEFAULT_LOG_LEVEL: &str = "info";
/// Default `--max-body`: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;
/// Default `--snapshot-every`: 64 MiB of log.
pub const DEFAULT_SNAPSHOT_EVERY_BYTES: u64 = 64 << 20;
/// Default `--rate-limit-per-key`: off.
pub const DEFAULT_RATE_LIMIT_PER_KEY: Option<Rate> = None;
/// Default `--rate-limit-per-address`: off.
pub const DEFAULT_RATE_LIMIT_PER_ADDRESS: Option<Rate> = None;
/// The shortest API key accepted.
pub const MIN_API_KEY_LEN: usize = 16;

/// The resolved, validated configuration of `podium serve`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where the embedded store keeps its log and snapshots.
    pub data_dir: PathBuf,
    /// HTTP/JSON listening address; `None` when off.
    pub http: Option<SocketAddr>,
    /// MessagePack-RPC listening address; `None` when off.
    pub rpc: Option<SocketAddr>,
    /// Redis-protocol listening address; `None` when off.
    pub resp: Option<SocketAddr>,
    /// When the embedded store's log is flushed to disk.
    pub fsync: FsyncPolicy,
    /// "embedded", or a syntactically valid `redis://` / `redis+cluster://` URL.
    pub backend: String,
    /// A tracing `EnvFilter` directive string.
    pub log_level: String,
    /// Text or JSON log lines.
    pub log_format: LogFormat,
    /// Whether every HTTP request is logged.
    pub access_log: bool,
    /// Host names the HTTP API answers to without API keys, besides IP
    /// addresses and localhost (`*`: any).
    pub http_hosts: Vec<String>,
    /// Whether writes to a missing board create it.
    pub auto_create: bool,
    /// The API keys; empty means no authentication.
    pub api_keys: Vec<ApiKey>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Log bytes written after which a snapshot is taken.
    pub snapshot_every_bytes: u64,
    /// Connections, memory, timeouts, transaction queues.
    pub limits: Limits,
    /// Requests per API key; `None`: no limit.
    pub rate_limit_per_key: Option<Rate>,
    /// Requests per client address; `None`: no limit.
    pub rate_limit_per_address: Option<Rate>,
    /// What to do with webhook deliveries; `None`: not set, so `hold` on a
    /// data directory marked as a copy (restored or repaired), else `on`.
    pub webhooks: Option<WebhookMode>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            http: Some(DEFAULT_HTTP),
            rpc: Some(DEFAULT_RPC),
            resp: Some(DEFAULT_RESP),
            fsync: FsyncPolicy::default(),
            backend: DEFAULT_BACKEND.to_owned(),
            log_level: DEFAULT_LOG_LEVEL.to_owned(),
            log_format: LogFormat::default(),
            access_log: false,
            http_hosts: Vec::new(),
            auto_create: true,
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            snapshot_every_bytes: DEFAULT_SNAPSHOT_EVERY_BYTES,
            limits: Limits::default(),
            rate_limit_per_key: DEFAULT_RATE_LIMIT_PER_KEY,
            rate_limit_per_address: DEFAULT_RATE_LIMIT_PER_ADDRESS,
            webhooks: None,
        }
    }
}

impl Settings {
    /// The enabled protocols and their addresses, as `("http" | "rpc" |
    /// "resp", address)`.
    pub fn listeners(&self) -> Vec<(&'static str, SocketAddr)> {
        [("http", self.http), ("rpc", self.rpc), ("resp", self.resp)]
            .into_iter()
            .filter_map(|(name, addr)| addr.map(|a| (name, a)))
            .collect()
    }

    /// Whether requests must present an API key.
    pub fn auth_required(&self) -> bool {
        !self.api_keys.is_empty()
    }

    /// The scope of the configured key equal to `presented`, if any
    /// (compared in constant time).
    pub fn scope_of(&self, presented: &str) -> Option<Scope> {
        ApiKey::scope_among(&self.api_keys, presented.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_and_policies() {
        use Scope::*;
        assert!(Admin.allows(Write) && Admin.allows(Read) && Admin.allows(Admin));
        assert!(Write.allows(Read) && Write.allows(Write) && !Write.allows(Admin));
        assert!(Read.allows(Read) && !Read.allows(Write) && !Read.allows(Admin));
        for s in [Read, Write, Admin] {
            assert_eq!(s.as_str().parse::<Scope>().unwrap(), s);
        }
        assert_eq!("ADMIN".parse::<Scope>().unwrap(), Admin);
        assert!("root".parse::<Scope>().is_err());
        for p in [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No] {
            assert_eq!(p.as_str().parse::<FsyncPolicy>().unwrap(), p);
        }
        assert_eq!(FsyncPolicy::default(), FsyncPolicy::Always);
        assert!("sometimes".parse::<FsyncPolicy>().is_err());
    }
}
