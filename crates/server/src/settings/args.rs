//! The flags of `podium serve`, each with its `PODIUM_*` variable, as
//! clap parses them: [`ServeArgs`] holds "flag, else env, else nothing".

use std::path::PathBuf;

use super::{ApiKey, ByteSize, FsyncPolicy, LimitArgs, ListenAddr, LogFormat, RateLimit};

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

    /// Whether a write (submit, import) to a board that does not exist
    /// creates it, as Redis does ("on"), or is refused with
    /// board_not_found ("off": a typo in a board's name then fails); the
    /// Redis protocol keeps Redis's rules either way [default: on]
    #[arg(long, env = "PODIUM_AUTO_CREATE", value_name = "on|off",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub auto_create: Option<bool>,

    /// Webhook deliveries: "on" (deliver), "off" (drop them as they fall
    /// due) or "hold" (keep them for a start with "on") [default: hold on
    /// a data directory restored from a backup or repaired, else on]
    #[arg(long, env = "PODIUM_WEBHOOKS", value_name = "on|off|hold")]
    pub webhooks: Option<super::WebhookMode>,

    /// Log lines as "text" or "json" (one object a line) [default: text]
    #[arg(long, env = "PODIUM_LOG_FORMAT", value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,

    /// Log every HTTP request at info (target `podium::access`: client
    /// address, method, path, status, time): on or off [default: off]
    #[arg(long, env = "PODIUM_ACCESS_LOG", value_name = "on|off",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub access_log: Option<bool>,

    /// Host names the HTTP API answers to when no API key is set, besides
    /// IP addresses and localhost (e.g. "podium.internal"); a request
    /// naming another host is refused, so a web page cannot reach the
    /// server through a name of its own (DNS rebinding). "*": any name.
    /// Repeatable; PODIUM_HTTP_HOSTS takes a comma-separated list
    #[arg(
        long = "http-host",
        env = "PODIUM_HTTP_HOSTS",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub http_hosts: Option<Vec<String>>,

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

    /// Requests per API key, over every protocol, as COUNT/PERIOD with an
    /// optional burst (e.g. 1000/s, 60/m, 5000/10s, 100/s,burst=500), or
    /// "off" [default: off]
    #[arg(
        long = "rate-limit-per-key",
        env = "PODIUM_RATE_LIMIT_PER_KEY",
        value_name = "RATE|off"
    )]
    pub rate_limit_per_key: Option<RateLimit>,

    /// Requests per client IP address (IPv6: per /64), over every
    /// protocol, loopback included, as COUNT/PERIOD[,burst=N] or "off"
    /// [default: off]
    #[arg(
        long = "rate-limit-per-address",
        env = "PODIUM_RATE_LIMIT_PER_ADDRESS",
        value_name = "RATE|off"
    )]
    pub rate_limit_per_address: Option<RateLimit>,

    #[command(flatten)]
    pub limits: LimitArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;
    use clap::{CommandFactory, Parser};

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
            "--rate-limit-per-key",
            "1000/s",
            "--rate-limit-per-address",
            "60/m,burst=10",
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
        assert_eq!(s.rate_limit_per_key, Some("1000/s".parse().unwrap()));
        let a = s.rate_limit_per_address.unwrap();
        assert_eq!((a.count, a.period.as_secs(), a.burst), (60, 60, 10));
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
            ["--rate-limit-per-key", "fast"],
            ["--rate-limit-per-address", "0/s"],
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
            ("log_format", "PODIUM_LOG_FORMAT"),
            ("auto_create", "PODIUM_AUTO_CREATE"),
            ("access_log", "PODIUM_ACCESS_LOG"),
            ("api_keys", "PODIUM_API_KEYS"),
            ("api_key_file", "PODIUM_API_KEY_FILE"),
            ("max_body", "PODIUM_MAX_BODY"),
            ("snapshot_every", "PODIUM_SNAPSHOT_EVERY"),
            ("maxclients", "PODIUM_MAXCLIENTS"),
            ("maxmemory", "PODIUM_MAXMEMORY"),
            ("timeout", "PODIUM_TIMEOUT"),
            ("http_idle_timeout", "PODIUM_HTTP_IDLE_TIMEOUT"),
            ("http_header_timeout", "PODIUM_HTTP_HEADER_TIMEOUT"),
            ("http_body_timeout", "PODIUM_HTTP_BODY_TIMEOUT"),
            ("multi_max_commands", "PODIUM_MULTI_MAX_COMMANDS"),
            ("multi_max_bytes", "PODIUM_MULTI_MAX_BYTES"),
            ("exec_time_limit", "PODIUM_EXEC_TIME_LIMIT"),
            ("script_time_limit", "PODIUM_SCRIPT_TIME_LIMIT"),
            ("notify_keyspace_events", "PODIUM_NOTIFY_KEYSPACE_EVENTS"),
            ("webhook_targets", "PODIUM_WEBHOOK_TARGETS"),
            (
                "events_max_filters_per_member",
                "PODIUM_EVENTS_MAX_FILTERS_PER_MEMBER",
            ),
            (
                "events_max_filters_per_board",
                "PODIUM_EVENTS_MAX_FILTERS_PER_BOARD",
            ),
            ("events_max_filters", "PODIUM_EVENTS_MAX_FILTERS"),
            ("events_retain", "PODIUM_EVENTS_RETAIN"),
            ("http_hosts", "PODIUM_HTTP_HOSTS"),
            ("webhooks", "PODIUM_WEBHOOKS"),
            ("rate_limit_per_key", "PODIUM_RATE_LIMIT_PER_KEY"),
            ("rate_limit_per_address", "PODIUM_RATE_LIMIT_PER_ADDRESS"),
        ] {
            assert_eq!(env_of(id).as_deref(), Some(var), "{id}");
        }
        // Every field is covered above (plus clap's own help).
        assert_eq!(
            cmd.get_arguments().filter(|a| a.get_id() != "help").count(),
            35
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
}
