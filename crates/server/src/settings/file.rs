//! The TOML config file named by `--config` / `PODIUM_CONFIG`: the long
//! flags in snake_case, every key optional, an unknown key refused.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use super::{ApiKey, ByteSize, FsyncPolicy, ListenAddr, LogFormat, MaxMemory, RateLimit};

/// The TOML config file: the long flags in snake_case, all optional.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) data_dir: Option<PathBuf>,
    pub(super) http: Option<ListenAddr>,
    pub(super) rpc: Option<ListenAddr>,
    pub(super) resp: Option<ListenAddr>,
    pub(super) fsync: Option<FsyncPolicy>,
    pub(super) backend: Option<String>,
    pub(super) log_level: Option<String>,
    pub(super) log_format: Option<LogFormat>,
    pub(super) access_log: Option<bool>,
    pub(super) auto_create: Option<bool>,
    pub(super) max_body: Option<ByteSize>,
    pub(super) snapshot_every: Option<ByteSize>,
    pub(super) rate_limit_per_key: Option<RateLimit>,
    pub(super) rate_limit_per_address: Option<RateLimit>,
    pub(super) api_keys: Option<Vec<ApiKey>>,
    pub(super) api_key_file: Option<PathBuf>,
    pub(super) maxclients: Option<u32>,
    pub(super) maxmemory: Option<MaxMemory>,
    pub(super) timeout: Option<u64>,
    pub(super) http_idle_timeout: Option<u64>,
    pub(super) http_header_timeout: Option<u64>,
    pub(super) http_body_timeout: Option<u64>,
    pub(super) multi_max_commands: Option<usize>,
    pub(super) multi_max_bytes: Option<ByteSize>,
    pub(super) exec_time_limit: Option<u64>,
    pub(super) script_time_limit: Option<u64>,
    pub(super) notify_keyspace_events: Option<String>,
    pub(super) webhook_targets: Option<String>,
    pub(super) events_max_filters_per_member: Option<usize>,
    pub(super) events_max_filters_per_board: Option<usize>,
    pub(super) events_max_filters: Option<usize>,
    pub(super) events_retain: Option<u64>,
    pub(super) http_hosts: Option<Vec<String>>,
    pub(super) webhooks: Option<super::WebhookMode>,
}

impl FileConfig {
    pub(super) fn load(path: &Path) -> anyhow::Result<FileConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("bad config file {}", path.display()))
    }

    fn parse(text: &str) -> anyhow::Result<FileConfig> {
        Ok(toml::from_str(text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;

    /// docs/podium.example.toml names every key of the file, set or (the
    /// API keys, which must be the operator's own) as a commented line to
    /// fill in — a key added to [`FileConfig`] fails to compile here until
    /// it is listed, and this test until the example has it — and, as
    /// shipped, resolves into settings: it starts (the binary is started
    /// with it in tests/integration/startup.rs).
    #[test]
    fn the_example_config_names_every_key_and_loads_as_shipped() {
        let text = include_str!("../../../../docs/podium.example.toml");
        macro_rules! named {
            ($($key:ident),* $(,)?) => {{
                let FileConfig { $($key: _),* } = FileConfig::default();
                let missing: Vec<&str> = [$(stringify!($key)),*]
                    .into_iter()
                    .filter(|k| {
                        !text.lines().any(|l| {
                            let l = l.strip_prefix("# ").unwrap_or(l);
                            l.strip_prefix(k).is_some_and(|r| r.starts_with(" ="))
                        })
                    })
                    .collect();
                assert!(missing.is_empty(), "the example does not name {missing:?}");
            }};
        }
        named!(
            data_dir,
            http,
            rpc,
            resp,
            fsync,
            backend,
            log_level,
            log_format,
            access_log,
            auto_create,
            max_body,
            snapshot_every,
            rate_limit_per_key,
            rate_limit_per_address,
            api_keys,
            api_key_file,
            maxclients,
            maxmemory,
            timeout,
            http_idle_timeout,
            http_header_timeout,
            http_body_timeout,
            multi_max_commands,
            multi_max_bytes,
            exec_time_limit,
            script_time_limit,
            notify_keyspace_events,
            webhook_targets,
            events_max_filters_per_member,
            events_max_filters_per_board,
            events_max_filters,
            events_retain,
            http_hosts,
            webhooks,
        );

        // As shipped: it resolves, with no file it names missing.
        let cfg = TempConfig::new("example", text);
        let args = ServeArgs {
            config: Some(cfg.0.clone()),
            ..Default::default()
        };
        let s = Settings::resolve(&args).unwrap();
        assert_eq!(s.data_dir, std::path::Path::new("./podium-data"));
        assert_eq!(s.http, Some(addr("127.0.0.1:7070")));
        assert!(s.api_keys.is_empty());
        assert_eq!(s.max_body_bytes, 16 << 20);
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
            ("rate_limit_per_key = \"lots\"", "lots"),
            ("rate_limit_per_address = \"0/s\"", "at least 1"),
        ] {
            let err = format!("{:#}", FileConfig::parse(text).unwrap_err());
            assert!(err.contains(needle), "{text:?}: {err}");
        }
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
}
