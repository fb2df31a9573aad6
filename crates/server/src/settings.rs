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

use anyhow::{bail, Context};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use podium_core::op::Scope;
pub use podium_store::FsyncPolicy;

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
/// The shortest API key accepted.
pub const MIN_API_KEY_LEN: usize = 16;

// Every field is an `Option` so that "not given" can be told apart from
// "given the default"; clap fills a field from its `PODIUM_*` variable when
// the flag is absent. (The doc comment below is also clap's `about` text.)
/// Run the podium server: HTTP/JSON, MessagePack-RPC and the Redis protocol
/// over one store.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Read settings from this TOML file (keys as the long flags, in
    /// snake_case); flags and PODIUM_* variables override it.
    #[arg(long, env = "PODIUM_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Directory of the embedded store's log and snapshots
    /// [default: ./podium-data]
    #[arg(long, env = "PODIUM_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// HTTP/JSON listening address, or "off" [default: 127.0.0.1:7070]
    #[arg(long, env = "PODIUM_HTTP", value_name = "ADDR|off")]
    pub http: Option<ListenAddr>,

    /// MessagePack-RPC listening address, or "off" [default: 127.0.0.1:7071]
    #[arg(long, env = "PODIUM_RPC", value_name = "ADDR|off")]
    pub rpc: Option<ListenAddr>,

    /// Redis-protocol (RESP) listening address, or "off"
    /// [default: 127.0.0.1:7379]
    #[arg(long, env = "PODIUM_RESP", value_name = "ADDR|off")]
    pub resp: Option<ListenAddr>,

    /// When the log is flushed to disk: "always" (a write is acknowledged
    /// only once on disk), "everysec" or "no" [default: always]
    #[arg(long, env = "PODIUM_FSYNC", value_name = "POLICY")]
    pub fsync: Option<FsyncPolicy>,

    /// Storage: "embedded", "redis://HOST:PORT" or
    /// "redis+cluster://HOST:PORT,HOST:PORT,..." [default: embedded]
    #[arg(long, env = "PODIUM_BACKEND", value_name = "BACKEND")]
    pub backend: Option<String>,

    /// Log filter, as tracing's EnvFilter directives
    /// (e.g. "info" or "warn,podium_server=debug") [default: info]
    #[arg(long, env = "PODIUM_LOG_LEVEL", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// An API key and what it may do, as KEY:SCOPE with SCOPE read, write or
    /// admin; KEY has at least 16 characters. Repeatable; PODIUM_API_KEYS
    /// takes a comma-separated list. With any key set, every request needs one.
    /// A key given here shows in `ps`: prefer --api-key-file or PODIUM_API_KEYS.
    #[arg(
        long = "api-key",
        env = "PODIUM_API_KEYS",
        value_name = "KEY:SCOPE",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub api_keys: Option<Vec<ApiKey>>,

    /// A file of API keys, one KEY:SCOPE a line (blank lines and lines
    /// starting with # are skipped), added to any --api-key: keys given on
    /// the command line show in `ps`, keys in a file do not
    #[arg(
        long = "api-key-file",
        env = "PODIUM_API_KEY_FILE",
        value_name = "PATH"
    )]
    pub api_key_file: Option<PathBuf>,

    /// Largest request body accepted, in bytes or with a unit
    /// (e.g. 1048576, 512KiB, 16MiB) [default: 16MiB]
    #[arg(long = "max-body", env = "PODIUM_MAX_BODY", value_name = "SIZE")]
    pub max_body: Option<ByteSize>,

    /// Take a snapshot after this much log has been written since the last
    /// one, or as much as the last snapshot's size if larger (e.g. 64MiB)
    /// [default: 64MiB]
    #[arg(long, env = "PODIUM_SNAPSHOT_EVERY", value_name = "SIZE")]
    pub snapshot_every: Option<ByteSize>,
}

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
    /// The API keys; empty means no authentication.
    pub api_keys: Vec<ApiKey>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Log bytes written after which a snapshot is taken.
    pub snapshot_every_bytes: u64,
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
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            snapshot_every_bytes: DEFAULT_SNAPSHOT_EVERY_BYTES,
        }
    }
}

impl Settings {
    /// Merges `args` (which already include the `PODIUM_*` values, via
    /// clap's `env`) over the TOML file named by `--config` / `PODIUM_CONFIG`
    /// (if any) over the defaults, then validates the result, including
    /// [`Settings::check_exposure`].
    pub fn resolve(args: &ServeArgs) -> anyhow::Result<Settings> {
        let file = match &args.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        let d = Settings::default();
        let addr = |arg: &Option<ListenAddr>, file: &Option<ListenAddr>, default| {
            arg.or(*file).map_or(Some(default), |l| l.0)
        };
        let max_body = args.max_body.or(file.max_body);
        let max_body_bytes = match max_body {
            None => d.max_body_bytes,
            Some(ByteSize(n)) => usize::try_from(n)
                .map_err(|_| anyhow::anyhow!("max_body {n} does not fit this machine's memory"))?,
        };
        let backend = args.backend.clone().or(file.backend).unwrap_or(d.backend);
        // The Redis protocol frontend serves the embedded engine only: with
        // a Redis backend it is off unless asked for, and asking is refused
        // by `validate`.
        let resp = match args.resp.or(file.resp) {
            Some(l) => l.0,
            None if backend == DEFAULT_BACKEND => Some(DEFAULT_RESP),
            None => None,
        };
        let settings = Settings {
            data_dir: args
                .data_dir
                .clone()
                .or(file.data_dir)
                .unwrap_or(d.data_dir),
            http: addr(&args.http, &file.http, DEFAULT_HTTP),
            rpc: addr(&args.rpc, &file.rpc, DEFAULT_RPC),
            resp,
            fsync: args.fsync.or(file.fsync).unwrap_or(d.fsync),
            backend,
            log_level: args
                .log_level
                .clone()
                .or(file.log_level)
                .unwrap_or(d.log_level),
            api_keys: {
                let mut keys = args
                    .api_keys
                    .clone()
                    .or(file.api_keys)
                    .unwrap_or(d.api_keys);
                if let Some(path) = args.api_key_file.as_ref().or(file.api_key_file.as_ref()) {
                    keys.extend(load_key_file(path)?);
                }
                keys
            },
            max_body_bytes,
            snapshot_every_bytes: args
                .snapshot_every
                .or(file.snapshot_every)
                .map_or(d.snapshot_every_bytes, |b| b.0),
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Checks everything [`Settings::resolve`] checks; for settings built by
    /// hand.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.data_dir.as_os_str().is_empty() {
            bail!("data_dir is empty: give a directory, e.g. --data-dir ./podium-data");
        }
        validate_backend(&self.backend).context("invalid --backend")?;
        if self.backend != DEFAULT_BACKEND {
            if let Some(resp) = self.resp {
                bail!(
                    "--resp {resp}: the Redis protocol frontend serves only the embedded engine; \
                     with --backend {} clients can talk to Redis itself (drop --resp or give \
                     --resp off)",
                    self.backend
                );
            }
        }
        validate_log_filter(&self.log_level).context("invalid --log-level")?;
        if self.max_body_bytes == 0 {
            bail!("--max-body must be more than 0 bytes");
        }
        if self.snapshot_every_bytes == 0 {
            bail!("--snapshot-every must be more than 0 bytes");
        }
        for key in &self.api_keys {
            check_key(&key.key)?;
        }
        for (i, a) in self.api_keys.iter().enumerate() {
            if self.api_keys[..i].iter().any(|b| b.key == a.key) {
                bail!(
                    "API key {} is given twice; give each key once, with its widest scope",
                    a.redacted()
                );
            }
        }
        let listeners = self.listeners();
        if listeners.is_empty() {
            bail!("--http, --rpc and --resp are all off: nothing to serve; enable at least one");
        }
        for (i, (name, addr)) in listeners.iter().enumerate() {
            if addr.port() == 0 {
                continue; // each gets its own ephemeral port
            }
            if let Some((other, _)) = listeners[..i].iter().find(|(_, a)| a == addr) {
                bail!("--{other} and --{name} both listen on {addr}: give them different ports");
            }
        }
        self.check_exposure()
    }

    /// The enabled protocols and their addresses, as `("http" | "rpc" |
    /// "resp", address)`.
    pub fn listeners(&self) -> Vec<(&'static str, SocketAddr)> {
        [("http", self.http), ("rpc", self.rpc), ("resp", self.resp)]
            .into_iter()
            .filter_map(|(name, addr)| addr.map(|a| (name, a)))
            .collect()
    }

    /// Refuses to listen on a non-loopback address for any enabled protocol
    /// unless at least one API key is configured: without one, anyone who
    /// can reach the address could read and change every board.
    pub fn check_exposure(&self) -> anyhow::Result<()> {
        if !self.api_keys.is_empty() {
            return Ok(());
        }
        for (name, addr) in self.listeners() {
            if !addr.ip().to_canonical().is_loopback() {
                bail!(
                    "refusing to listen for {proto} on {addr} without an API key: {addr} is \
                     not a loopback address, so anyone who can reach it could read and change \
                     every board. Add --api-key KEY:admin (a key of at least {MIN_API_KEY_LEN} \
                     characters; or PODIUM_API_KEYS, or [[api_keys]] in the config file), \
                     or listen on 127.0.0.1 (--{name} 127.0.0.1:{port})",
                    proto = protocol_name(name),
                    port = addr.port(),
                );
            }
        }
        Ok(())
    }

    /// Whether requests must present an API key.
    pub fn auth_required(&self) -> bool {
        !self.api_keys.is_empty()
    }

    /// The scope of the configured key equal to `presented`, if any
    /// (compared in constant time).
    pub fn scope_of(&self, presented: &str) -> Option<Scope> {
        // Look at every key, so the time taken does not tell which matched.
        self.api_keys.iter().fold(None, |found, k| {
            if k.matches(presented) {
                Some(k.scope)
            } else {
                found
            }
        })
    }
}

fn protocol_name(flag: &str) -> &'static str {
    match flag {
        "http" => "HTTP",
        "rpc" => "MessagePack-RPC",
        _ => "the Redis protocol",
    }
}

/// An API key and its scope. `Debug` and `Display` never show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub key: String,
    pub scope: Scope,
}

impl ApiKey {
    /// A checked key: at least [`MIN_API_KEY_LEN`] characters, printable
    /// ASCII without spaces or commas.
    pub fn new(key: impl Into<String>, scope: Scope) -> anyhow::Result<ApiKey> {
        let key = key.into();
        check_key(&key)?;
        Ok(ApiKey { key, scope })
    }

    /// Whether `presented` is this key, compared in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.key.as_bytes(), presented.as_bytes());
        let mut diff = a.len() ^ b.len();
        for (i, x) in a.iter().enumerate() {
            diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
        }
        diff == 0
    }

    fn redacted(&self) -> String {
        let head: String = self.key.chars().take(4).collect();
        format!("{head}… ({} chars)", self.key.len())
    }
}

/// The keys of an `--api-key-file`: one `KEY:SCOPE` a line; blank lines
/// and `#` comments are skipped. A bad line is named by its number, never
/// by its text (it holds a key).
fn load_key_file(path: &Path) -> anyhow::Result<Vec<ApiKey>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the API key file {}", path.display()))?;
    parse_key_file(&text).with_context(|| format!("bad API key file {}", path.display()))
}

fn parse_key_file(text: &str) -> anyhow::Result<Vec<ApiKey>> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key: ApiKey = line
            .parse()
            .map_err(|e| anyhow::anyhow!("line {}: {e}", i + 1))?;
        keys.push(key);
    }
    if keys.is_empty() {
        bail!("it holds no key: write one KEY:SCOPE a line");
    }
    Ok(keys)
}

fn check_key(key: &str) -> anyhow::Result<()> {
    if key.len() < MIN_API_KEY_LEN {
        bail!(
            "API key of {} characters is too short: use at least {MIN_API_KEY_LEN} \
             (e.g. from `openssl rand -hex 16`)",
            key.len()
        );
    }
    if let Some(c) = key.chars().find(|c| !c.is_ascii_graphic() || *c == ',') {
        bail!("API key contains {c:?}: use printable ASCII without spaces or commas");
    }
    Ok(())
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("key", &format_args!("{}", self.redacted()))
            .field("scope", &self.scope)
            .finish()
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.redacted(), self.scope)
    }
}

/// `KEY:SCOPE`, the form of `--api-key` (the key may itself hold colons).
impl FromStr for ApiKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let Some((key, scope)) = s.rsplit_once(':') else {
            return Err("expected KEY:SCOPE, with SCOPE read, write or admin".to_owned());
        };
        ApiKey::new(key, scope.parse()?).map_err(|e| e.to_string())
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            key: String,
            scope: Scope,
        }
        let raw = Raw::deserialize(d)?;
        ApiKey::new(raw.key, raw.scope).map_err(de::Error::custom)
    }
}

/// A listening address, or `off` (`ListenAddr(None)`).
///
/// Parses `127.0.0.1:7070`, `[::1]:7070`, `0.0.0.0:7070`, `localhost:7070`
/// (as 127.0.0.1) and `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddr(pub Option<SocketAddr>);

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("off") {
            return Ok(ListenAddr(None));
        }
        if let Ok(addr) = t.parse::<SocketAddr>() {
            return Ok(ListenAddr(Some(addr)));
        }
        let expected = "expected IP:PORT (e.g. 127.0.0.1:7070, [::1]:7070, 0.0.0.0:7070), \
                        localhost:PORT, or off";
        let Some((host, port)) = t.rsplit_once(':') else {
            return Err(format!("listening address {s:?} has no port: {expected}"));
        };
        if host.contains(':') && !host.starts_with('[') {
            return Err(format!(
                "listening address {s:?}: write IPv6 addresses in brackets, e.g. [::1]:7070"
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("listening address {s:?}: bad port {port:?}: {expected}"))?;
        if host.eq_ignore_ascii_case("localhost") {
            return Ok(ListenAddr(Some(SocketAddr::new(
                Ipv4Addr::LOCALHOST.into(),
                port,
            ))));
        }
        Err(format!(
            "listening address {s:?}: {host:?} is not an IP address: {expected}"
        ))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(a) => a.fmt(f),
            None => f.write_str("off"),
        }
    }
}

/// A number of bytes, parsed from `1048576`, `512KiB`, `16MiB`, `1GiB`, ...
///
/// Units (case-insensitive, optional space before): `B`; `K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of 1024); `KB`, `MB`, `GB`, `TB`
/// (powers of 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !c.is_ascii_digit() && c != '_')
            .unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let digits = digits.replace('_', "");
        let expected = "expected a number of bytes, optionally with a unit: \
                        B, KiB, MiB, GiB, TiB (or K, M, G, T), KB, MB, GB, TB";
        if digits.is_empty() {
            return Err(format!("bad size {s:?}: {expected}"));
        }
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("size {s:?} is too large"))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "ki" | "kib" => 1 << 10,
            "m" | "mi" | "mib" => 1 << 20,
            "g" | "gi" | "gib" => 1 << 30,
            "t" | "ti" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            _ => return Err(format!("bad size {s:?}: unknown unit {unit:?}: {expected}")),
        };
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| format!("size {s:?} is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, unit) in UNITS {
            let m = 1u64 << shift;
            if self.0 >= m && self.0 & (m - 1) == 0 {
                return write!(f, "{}{unit}", self.0 / m);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: a number of bytes or a string such as \"16MiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("size {v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Implements `Deserialize` from a string through `FromStr`.
macro_rules! deserialize_from_str {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(de::Error::custom)
            }
        }
    )*};
}
deserialize_from_str!(ListenAddr);

/// The TOML config file: the long flags in snake_case, all optional.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    http: Option<ListenAddr>,
    rpc: Option<ListenAddr>,
    resp: Option<ListenAddr>,
    fsync: Option<FsyncPolicy>,
    backend: Option<String>,
    log_level: Option<String>,
    max_body: Option<ByteSize>,
    snapshot_every: Option<ByteSize>,
    api_keys: Option<Vec<ApiKey>>,
    api_key_file: Option<PathBuf>,
}

impl FileConfig {
    fn load(path: &Path) -> anyhow::Result<FileConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("bad config file {}", path.display()))
    }

    fn parse(text: &str) -> anyhow::Result<FileConfig> {
        Ok(toml::from_str(text)?)
    }
}

/// Checks `embedded`, `redis://[USER:PASS@]HOST[:PORT][/DB]` and
/// `redis+cluster://[USER:PASS@]HOST:PORT,HOST:PORT,...` syntactically.
fn validate_backend(backend: &str) -> anyhow::Result<()> {
    if backend == "embedded" {
        return Ok(());
    }
    let expected = "expected \"embedded\", \"redis://HOST:PORT\" or \
                    \"redis+cluster://HOST:PORT,HOST:PORT,...\"";
    let (cluster, rest) = if let Some(rest) = backend.strip_prefix("redis+cluster://") {
        (true, rest)
    } else if let Some(rest) = backend.strip_prefix("redis://") {
        (false, rest)
    } else {
        bail!("unknown backend {backend:?}: {expected}");
    };
    // Credentials end at the last '@' (a password may contain '@').
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !path.is_empty() {
        if cluster {
            bail!("backend {backend:?}: Redis Cluster has only database 0; drop the /{path}");
        }
        if path.parse::<u32>().is_err() {
            bail!("backend {backend:?}: the path must be a database number, not {path:?}");
        }
    }
    let nodes: Vec<&str> = if cluster {
        hosts.split(',').collect()
    } else {
        vec![hosts]
    };
    for node in nodes {
        let node = node.trim();
        if node.is_empty() {
            bail!("backend {backend:?} has an empty host: {expected}");
        }
        let (host, port) = if let Some(v6) = node.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                bail!("backend {backend:?}: unclosed '[' in {node:?}");
            };
            (h, after.strip_prefix(':'))
        } else {
            match node.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (node, None),
            }
        };
        if host.is_empty()
            || host.contains(|c: char| c.is_whitespace() || (c == ':' && !node.starts_with('[')))
        {
            bail!("backend {backend:?}: bad host in {node:?}: {expected}");
        }
        match port {
            Some(p) if p.parse::<u16>().map_or(true, |p| p == 0) => {
                bail!("backend {backend:?}: bad port {p:?} in {node:?}")
            }
            None if cluster => bail!("backend {backend:?}: cluster node {node:?} needs a port"),
            _ => {}
        }
    }
    Ok(())
}

/// Checks a tracing `EnvFilter` directive string (`info`,
/// `warn,podium_server=debug`, ...) by parsing it as `EnvFilter` does; also
/// refuses what `EnvFilter` would quietly take for a target name though it
/// is surely meant as a level (`warning`, `verbose`, ...), and spaces.
fn validate_log_filter(filter: &str) -> anyhow::Result<()> {
    const NOT_LEVELS: [(&str, &str); 9] = [
        ("warning", "warn"),
        ("err", "error"),
        ("verbose", "debug or trace"),
        ("all", "trace"),
        ("critical", "error"),
        ("fatal", "error"),
        ("none", "off"),
        ("quiet", "off or error"),
        ("silent", "off"),
    ];
    if filter.trim().is_empty() {
        bail!("empty log filter: expected e.g. \"info\" or \"warn,podium_server=debug\"");
    }
    for directive in filter.split(',').map(str::trim) {
        if directive.contains(char::is_whitespace) {
            bail!("log directive {directive:?} contains a space");
        }
        let target_or_level = directive.rsplit_once('=').map_or(directive, |(_, l)| l);
        if let Some((_, meant)) = NOT_LEVELS
            .iter()
            .find(|(typo, _)| target_or_level.eq_ignore_ascii_case(typo))
        {
            bail!(
                "log directive {directive:?}: {target_or_level:?} is not a level (did you mean \
                 {meant}?): levels are trace, debug, info, warn, error and off"
            );
        }
    }
    tracing_subscriber::EnvFilter::try_new(filter)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("log filter {filter:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        a: ServeArgs,
    }

    fn parse(args: &[&str]) -> ServeArgs {
        let mut full = vec!["podium"];
        full.extend_from_slice(args);
        T::try_parse_from(full).expect("flags parse").a
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const KEY: &str = "0123456789abcdef";

    /// A config file in a fresh temporary directory, removed on drop.
    struct TempConfig(PathBuf);

    impl TempConfig {
        fn new(name: &str, text: &str) -> TempConfig {
            use std::sync::atomic::{AtomicU64, Ordering};
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "podium-settings-{}-{}-{name}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("podium.toml");
            std::fs::write(&path, text).unwrap();
            TempConfig(path)
        }
    }

    impl Drop for TempConfig {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
        }
    }

    #[test]
    fn defaults() {
        let s = Settings::resolve(&ServeArgs::default()).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.data_dir, PathBuf::from("./podium-data"));
        assert_eq!(s.http, Some(addr("127.0.0.1:7070")));
        assert_eq!(s.rpc, Some(addr("127.0.0.1:7071")));
        assert_eq!(s.resp, Some(addr("127.0.0.1:7379")));
        assert_eq!(s.fsync, FsyncPolicy::Always);
        assert_eq!(s.backend, "embedded");
        assert_eq!(s.log_level, "info");
        assert!(s.api_keys.is_empty());
        assert!(!s.auth_required());
        assert_eq!(s.max_body_bytes, 16 * 1024 * 1024);
        assert_eq!(s.snapshot_every_bytes, 64 * 1024 * 1024);
        // Parsing no flags gives the same.
        assert_eq!(Settings::resolve(&parse(&[])).unwrap(), s);
    }

    #[test]
    fn flags_parse() {
        let a = parse(&[
            "--data-dir",
            "/tmp/x",
            "--http",
            "off",
            "--rpc",
            "[::1]:9000",
            "--resp",
            "localhost:6380",
            "--fsync",
            "everysec",
            "--backend",
            "embedded",
            "--log-level",
            "debug",
            "--api-key",
            "0123456789abcdef:read",
            "--api-key",
            "fedcba9876543210:admin,aaaaaaaaaaaaaaaa:write",
            "--max-body",
            "512KiB",
            "--snapshot-every",
            "1048576",
        ]);
        let s = Settings::resolve(&a).unwrap();
        assert_eq!(s.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(s.http, None);
        assert_eq!(s.rpc, Some(addr("[::1]:9000")));
        assert_eq!(s.resp, Some(addr("127.0.0.1:6380")));
        assert_eq!(s.fsync, FsyncPolicy::EverySec);
        assert_eq!(s.backend, "embedded");
        assert_eq!(s.log_level, "debug");
        let keys: Vec<(&str, Scope)> = s
            .api_keys
            .iter()
            .map(|k| (k.key.as_str(), k.scope))
            .collect();
        assert_eq!(
            keys,
            [
                ("0123456789abcdef", Scope::Read),
                ("fedcba9876543210", Scope::Admin),
                ("aaaaaaaaaaaaaaaa", Scope::Write)
            ]
        );
        assert_eq!(s.max_body_bytes, 512 * 1024);
        assert_eq!(s.snapshot_every_bytes, 1 << 20);
    }

    #[test]
    fn bad_flags_are_rejected_by_clap() {
        for bad in [
            ["--fsync", "sometimes"],
            ["--http", "nowhere"],
            ["--max-body", "12 parsecs"],
            ["--api-key", "short:admin"],
            ["--api-key", "0123456789abcdef:root"],
            ["--api-key", "0123456789abcdef"],
        ] {
            let r = T::try_parse_from(["podium", bad[0], bad[1]]);
            assert!(r.is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn every_flag_declares_its_env_var() {
        let cmd = T::command();
        let env_of = |id: &str| {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_id() == id)
                .unwrap_or_else(|| panic!("{id}"));
            arg.get_env().map(|e| e.to_str().unwrap().to_owned())
        };
        for (id, var) in [
            ("config", "PODIUM_CONFIG"),
            ("data_dir", "PODIUM_DATA_DIR"),
            ("http", "PODIUM_HTTP"),
            ("rpc", "PODIUM_RPC"),
            ("resp", "PODIUM_RESP"),
            ("fsync", "PODIUM_FSYNC"),
            ("backend", "PODIUM_BACKEND"),
            ("log_level", "PODIUM_LOG_LEVEL"),
            ("api_keys", "PODIUM_API_KEYS"),
            ("api_key_file", "PODIUM_API_KEY_FILE"),
            ("max_body", "PODIUM_MAX_BODY"),
            ("snapshot_every", "PODIUM_SNAPSHOT_EVERY"),
        ] {
            assert_eq!(env_of(id).as_deref(), Some(var), "{id}");
        }
        // Every field is covered above (plus clap's own help).
        assert_eq!(
            cmd.get_arguments().filter(|a| a.get_id() != "help").count(),
            12
        );
        let keys = cmd
            .get_arguments()
            .find(|a| a.get_id() == "api_keys")
            .unwrap();
        assert!(
            keys.is_hide_env_values_set(),
            "API keys must not show in --help"
        );
        assert_eq!(keys.get_long(), Some("api-key"));
    }

    /// With a Redis backend the Redis protocol is off by default, and an
    /// explicit `--resp` is refused with a message saying why.
    #[test]
    fn resp_is_embedded_only() {
        let s = Settings::resolve(&parse(&["--backend", "redis://127.0.0.1:6379"])).unwrap();
        assert_eq!(s.backend, "redis://127.0.0.1:6379");
        assert_eq!(s.resp, None);
        assert_eq!(s.rpc, Some(DEFAULT_RPC));
        let s = Settings::resolve(&parse(&["--backend", "redis://h:1", "--resp", "off"])).unwrap();
        assert_eq!(s.resp, None);
        let e = Settings::resolve(&parse(&[
            "--backend",
            "redis+cluster://a:1,b:2",
            "--resp",
            "127.0.0.1:7379",
        ]))
        .unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("serves only the embedded engine"), "{msg}");
        // Embedded keeps its default.
        let s = Settings::resolve(&parse(&[])).unwrap();
        assert_eq!(s.resp, Some(DEFAULT_RESP));
    }

    #[test]
    fn file_then_env_then_flag() {
        let cfg = TempConfig::new(
            "precedence",
            r#"
                data_dir = "/from/file"
                http = "127.0.0.1:1001"
                rpc = "127.0.0.1:1002"
                resp = "off"
                fsync = "no"
                backend = "redis+cluster://a:1,b:2"
                log_level = "warn"
                max_body = 1024
                snapshot_every = "2MiB"

                [[api_keys]]
                key = "file-key-0123456789"
                scope = "read"
            "#,
        );
        let config = Some(cfg.0.clone());

        // File alone, over the defaults.
        let file_only = ServeArgs {
            config: config.clone(),
            ..Default::default()
        };
        let s = Settings::resolve(&file_only).unwrap();
        assert_eq!(s.data_dir, PathBuf::from("/from/file"));
        assert_eq!(s.http, Some(addr("127.0.0.1:1001")));
        assert_eq!(s.rpc, Some(addr("127.0.0.1:1002")));
        assert_eq!(s.resp, None);
        assert_eq!(s.fsync, FsyncPolicy::No);
        assert_eq!(s.backend, "redis+cluster://a:1,b:2");
        assert_eq!(s.log_level, "warn");
        assert_eq!(s.max_body_bytes, 1024);
        assert_eq!(s.snapshot_every_bytes, 2 << 20);
        assert_eq!(
            s.api_keys,
            [ApiKey::new("file-key-0123456789", Scope::Read).unwrap()]
        );

        // What clap yields for PODIUM_HTTP / PODIUM_FSYNC / PODIUM_API_KEYS
        // (no flags) overrides the file; unset ones fall through to it.
        let env = ServeArgs {
            config: config.clone(),
            http: Some("127.0.0.1:2001".parse().unwrap()),
            fsync: Some(FsyncPolicy::EverySec),
            api_keys: Some(vec!["env-key-0123456789:write".parse().unwrap()]),
            ..Default::default()
        };
        let s = Settings::resolve(&env).unwrap();
        assert_eq!(s.http, Some(addr("127.0.0.1:2001")));
        assert_eq!(s.fsync, FsyncPolicy::EverySec);
        assert_eq!(
            s.api_keys,
            [ApiKey::new("env-key-0123456789", Scope::Write).unwrap()]
        );
        assert_eq!(s.rpc, Some(addr("127.0.0.1:1002")));
        assert_eq!(s.log_level, "warn");

        // A flag overrides both: parsed with the file named by --config.
        let flags = parse(&[
            "--config",
            cfg.0.to_str().unwrap(),
            "--http",
            "127.0.0.1:3001",
            "--resp",
            "127.0.0.1:3003",
            "--backend",
            "embedded",
            "--log-level",
            "error",
        ]);
        let s = Settings::resolve(&flags).unwrap();
        assert_eq!(s.http, Some(addr("127.0.0.1:3001")));
        assert_eq!(s.resp, Some(addr("127.0.0.1:3003")));
        assert_eq!(s.log_level, "error");
        assert_eq!(s.rpc, Some(addr("127.0.0.1:1002")));
        assert_eq!(s.data_dir, PathBuf::from("/from/file"));
    }

    #[test]
    fn unknown_key_in_file_is_named() {
        let cfg = TempConfig::new("unknown", "http = \"off\"\ncolour = \"blue\"\n");
        let args = ServeArgs {
            config: Some(cfg.0.clone()),
            ..Default::default()
        };
        let err = format!("{:#}", Settings::resolve(&args).unwrap_err());
        assert!(err.contains("colour"), "{err}");
        assert!(err.contains("podium.toml"), "{err}");

        let err = format!(
            "{:#}",
            FileConfig::parse(
                "[[api_keys]]\nkey = \"0123456789abcdef\"\nscope = \"read\"\nexpires = 1\n"
            )
            .unwrap_err()
        );
        assert!(err.contains("expires"), "{err}");
    }

    #[test]
    fn bad_values_in_file() {
        for (text, needle) in [
            ("fsync = \"sometimes\"", "sometimes"),
            ("http = \"example.com:80\"", "example.com"),
            ("max_body = \"lots\"", "lots"),
            ("max_body = -1", "negative"),
            (
                "[[api_keys]]\nkey = \"short\"\nscope = \"admin\"",
                "too short",
            ),
            (
                "[[api_keys]]\nkey = \"0123456789abcdef\"\nscope = \"root\"",
                "root",
            ),
            ("http = 7070", "string"),
        ] {
            let err = format!("{:#}", FileConfig::parse(text).unwrap_err());
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    /// Keys from a file (flag, PODIUM_API_KEY_FILE or `api_key_file` in the
    /// config file) join the --api-key ones; a bad or unreadable file is
    /// refused naming the file and line, never the key.
    #[test]
    fn api_keys_from_a_file() {
        let keys = TempConfig::new(
            "keys",
            "# podium keys\n\nreader-key-0123456789:read\n  admin-key-0123456789:admin  \n",
        );
        let path = keys.0.to_str().unwrap();
        let want = [
            ApiKey::new("flag-key-0123456789", Scope::Write).unwrap(),
            ApiKey::new("reader-key-0123456789", Scope::Read).unwrap(),
            ApiKey::new("admin-key-0123456789", Scope::Admin).unwrap(),
        ];
        let s = Settings::resolve(&parse(&[
            "--api-key",
            "flag-key-0123456789:write",
            "--api-key-file",
            path,
        ]))
        .unwrap();
        assert_eq!(s.api_keys, want);
        let cfg = TempConfig::new("keyfile", &format!("api_key_file = {path:?}\n"));
        let s = Settings::resolve(&ServeArgs {
            config: Some(cfg.0.clone()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.api_keys, want[1..]);

        for (text, needle) in [
            ("secret-key-0123456789:root\n", "line 1"),
            ("# a\nsecret-key-0123456789\n", "line 2: expected KEY:SCOPE"),
            ("shortsecret:read\n", "too short"),
            ("# only a comment\n\n", "holds no key"),
        ] {
            let f = TempConfig::new("bad-keys", text);
            let err = format!(
                "{:#}",
                Settings::resolve(&parse(&["--api-key-file", f.0.to_str().unwrap()])).unwrap_err()
            );
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(err.contains(f.0.to_str().unwrap()), "{err}");
            assert!(!err.contains("secret"), "the key is shown: {err}");
        }
        let gone = keys.0.with_file_name("no-such-keys");
        let err = format!(
            "{:#}",
            Settings::resolve(&parse(&["--api-key-file", gone.to_str().unwrap()])).unwrap_err()
        );
        assert!(err.contains("cannot read the API key file"), "{err}");
    }

    #[test]
    fn missing_config_file_is_an_error() {
        let path = std::env::temp_dir().join(format!("podium-no-such-{}.toml", std::process::id()));
        let args = ServeArgs {
            config: Some(path.clone()),
            ..Default::default()
        };
        let err = format!("{:#}", Settings::resolve(&args).unwrap_err());
        assert!(err.contains(&path.display().to_string()), "{err}");
    }

    #[test]
    fn exposure() {
        // 0.0.0.0 without a key: refused, saying where, why and what to do.
        let open = parse(&["--http", "0.0.0.0:7070"]);
        let err = format!("{:#}", Settings::resolve(&open).unwrap_err());
        assert!(err.contains("0.0.0.0:7070"), "{err}");
        assert!(err.contains("--api-key"), "{err}");
        assert!(err.contains("loopback"), "{err}");

        for a in ["--rpc", "--resp"] {
            assert!(Settings::resolve(&parse(&[a, "[::]:9999"])).is_err(), "{a}");
            assert!(
                Settings::resolve(&parse(&[a, "10.1.2.3:9999"])).is_err(),
                "{a}"
            );
        }
        // With a key: fine.
        let keyed = parse(&[
            "--http",
            "0.0.0.0:7070",
            "--api-key",
            &format!("{KEY}:admin"),
        ]);
        let s = Settings::resolve(&keyed).unwrap();
        assert!(s.auth_required());
        // Loopback addresses need no key, IPv4-mapped included; "off" is never exposed.
        for a in [
            "127.0.0.1:7070",
            "[::1]:7070",
            "localhost:7070",
            "127.9.9.9:1",
            "[::ffff:127.0.0.1]:7070",
        ] {
            assert!(Settings::resolve(&parse(&["--http", a])).is_ok(), "{a}");
        }
        let s = Settings {
            http: None,
            resp: Some(addr("0.0.0.0:7379")),
            ..Default::default()
        };
        assert!(s.check_exposure().is_err());
        let s = Settings { resp: None, ..s };
        s.check_exposure().unwrap();
    }

    #[test]
    fn listening_addresses() {
        let ok = |s: &str| s.parse::<ListenAddr>().unwrap().0;
        assert_eq!(ok("127.0.0.1:7070"), Some(addr("127.0.0.1:7070")));
        assert_eq!(ok("[::1]:7070"), Some(addr("[::1]:7070")));
        assert_eq!(ok("0.0.0.0:7070"), Some(addr("0.0.0.0:7070")));
        assert_eq!(ok("localhost:7070"), Some(addr("127.0.0.1:7070")));
        assert_eq!(ok("LOCALHOST:1"), Some(addr("127.0.0.1:1")));
        assert_eq!(ok("off"), None);
        assert_eq!(ok(" Off "), None);
        for bad in [
            "",
            "7070",
            "localhost",
            "localhost:99999",
            "::1:7070",
            "example.com:80",
            "127.0.0.1:x",
        ] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad:?}");
        }
        let e = "::1:7070".parse::<ListenAddr>().unwrap_err();
        assert!(e.contains("brackets"), "{e}");
        assert_eq!(ListenAddr(None).to_string(), "off");
        assert_eq!(ListenAddr(Some(addr("[::1]:1"))).to_string(), "[::1]:1");
    }

    #[test]
    fn off_disables_and_all_off_is_an_error() {
        let s = Settings::resolve(&parse(&["--http", "off", "--rpc", "off"])).unwrap();
        assert_eq!((s.http, s.rpc), (None, None));
        assert_eq!(s.listeners(), [("resp", addr("127.0.0.1:7379"))]);
        let err = Settings::resolve(&parse(&["--http", "off", "--rpc", "off", "--resp", "off"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nothing to serve"), "{err}");
    }

    #[test]
    fn same_address_twice_is_an_error() {
        let err = Settings::resolve(&parse(&["--rpc", "127.0.0.1:7070"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--http") && err.contains("--rpc"), "{err}");
        // Port 0 asks for an ephemeral port each, so may repeat.
        Settings::resolve(&parse(&["--http", "127.0.0.1:0", "--rpc", "127.0.0.1:0"])).unwrap();
    }

    #[test]
    fn sizes() {
        let ok = |s: &str| s.parse::<ByteSize>().unwrap().0;
        assert_eq!(ok("1048576"), 1 << 20);
        assert_eq!(ok("16MiB"), 16 << 20);
        assert_eq!(ok("512KiB"), 512 << 10);
        assert_eq!(ok("512kib"), 512 << 10);
        assert_eq!(ok("2 GiB"), 2 << 30);
        assert_eq!(ok("1T"), 1 << 40);
        assert_eq!(ok("4k"), 4096);
        assert_eq!(ok("1MB"), 1_000_000);
        assert_eq!(ok("10B"), 10);
        assert_eq!(ok("1_000"), 1000);
        assert_eq!(ok("0"), 0);
        for bad in [
            "",
            "MiB",
            "1.5MiB",
            "-1",
            "16 parsecs",
            "99999999999999999999",
            "20000000TiB",
        ] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad:?}");
        }
        assert_eq!(ByteSize(16 << 20).to_string(), "16MiB");
        assert_eq!(ByteSize(1536).to_string(), "1536");
        assert_eq!(ByteSize(3 << 10).to_string(), "3KiB");
        // Zero is parsed but refused as a setting.
        assert!(Settings::resolve(&parse(&["--max-body", "0"])).is_err());
        assert!(Settings::resolve(&parse(&["--snapshot-every", "0B"])).is_err());
    }

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

    #[test]
    fn api_keys() {
        let k: ApiKey = "0123456789abcdef:write".parse().unwrap();
        assert_eq!(
            k,
            ApiKey {
                key: KEY.into(),
                scope: Scope::Write
            }
        );
        // The key may hold colons; the scope is after the last one.
        let k: ApiKey = "abc:def:0123456789:read".parse().unwrap();
        assert_eq!(
            (k.key.as_str(), k.scope),
            ("abc:def:0123456789", Scope::Read)
        );
        let e = "0123456789abcde:read".parse::<ApiKey>().unwrap_err();
        assert!(e.contains("16"), "{e}");
        assert!("0123456789 abcdef:read".parse::<ApiKey>().is_err());
        // Never printed.
        let k = ApiKey::new("supersecret-0123456789", Scope::Admin).unwrap();
        assert!(!format!("{k:?}").contains("supersecret-0123456789"));
        assert!(!format!("{k}").contains("supersecret-0123456789"));
        // Matching.
        assert!(k.matches("supersecret-0123456789"));
        assert!(!k.matches("supersecret-012345678"));
        assert!(!k.matches("supersecret-01234567890"));
        assert!(!k.matches(""));
        let s = Settings {
            api_keys: vec![k, ApiKey::new(KEY, Scope::Read).unwrap()],
            ..Default::default()
        };
        assert_eq!(s.scope_of(KEY), Some(Scope::Read));
        assert_eq!(s.scope_of("supersecret-0123456789"), Some(Scope::Admin));
        assert_eq!(s.scope_of("nope-nope-nope-nope"), None);
        // A key given twice is refused.
        let twice = parse(&["--api-key", &format!("{KEY}:read,{KEY}:admin")]);
        let err = Settings::resolve(&twice).unwrap_err().to_string();
        assert!(err.contains("twice") && !err.contains(KEY), "{err}");
        // Keys built by hand are checked too.
        let s = Settings {
            api_keys: vec![ApiKey {
                key: "x".into(),
                scope: Scope::Read,
            }],
            ..Default::default()
        };
        assert!(s.validate().is_err());
    }

    #[test]
    fn backends() {
        for ok in [
            "embedded",
            "redis://127.0.0.1:6379",
            "redis://cache",
            "redis://user:p@ss@cache.internal:6379/2",
            "redis://[::1]:6379",
            "redis+cluster://h1:7000,h2:7001,10.0.0.3:7002",
        ] {
            validate_backend(ok).unwrap_or_else(|e| panic!("{ok}: {e:#}"));
        }
        for bad in [
            "",
            "memory",
            "redis://",
            "redis://:6379",
            "redis://host:0",
            "redis://host:port",
            "redis://host:6379/x",
            "redis+cluster://h1:7000,,h2:7001",
            "redis+cluster://h1",
            "redis+cluster://h1:7000/1",
            "redis://[::1:6379",
            "rediss://host:6379",
        ] {
            assert!(validate_backend(bad).is_err(), "{bad:?}");
        }
        assert!(Settings::resolve(&parse(&["--backend", "postgres://x"])).is_err());
    }

    #[test]
    fn log_filters() {
        for ok in [
            "info",
            "WARN",
            "off",
            "3",
            "podium_server",
            "warn,podium_server=debug",
            "h2=off,hyper[conn{id=3}]=trace",
            "info,",
        ] {
            validate_log_filter(ok).unwrap_or_else(|e| panic!("{ok}: {e:#}"));
        }
        for bad in [
            "",
            " ",
            "podium=loud",
            "=info",
            "a[b=info",
            "some thing",
            "warning",
            "podium=Verbose",
        ] {
            assert!(validate_log_filter(bad).is_err(), "{bad:?}");
        }
    }
}
