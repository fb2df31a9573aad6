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

    /// docs/podium.example.toml sets every key of the file (a key added to
    /// [`FileConfig`] fails to compile here until it is listed, and this
    /// test until the example has it), and resolves into settings.
    #[test]
    fn the_example_config_sets_every_key_and_loads() {
        let text = include_str!("../../../../docs/podium.example.toml");
        let FileConfig {
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
        } = FileConfig::parse(text).unwrap();
        let set = [
            data_dir.is_some(),
            http.is_some(),
            rpc.is_some(),
            resp.is_some(),
            fsync.is_some(),
            backend.is_some(),
            log_level.is_some(),
            log_format.is_some(),
            access_log.is_some(),
            auto_create.is_some(),
            max_body.is_some(),
            snapshot_every.is_some(),
            rate_limit_per_key.is_some(),
            rate_limit_per_address.is_some(),
            api_keys.is_some(),
            api_key_file.is_some(),
            maxclients.is_some(),
            maxmemory.is_some(),
            timeout.is_some(),
            http_idle_timeout.is_some(),
            http_header_timeout.is_some(),
            http_body_timeout.is_some(),
            multi_max_commands.is_some(),
            multi_max_bytes.is_some(),
            exec_time_limit.is_some(),
            script_time_limit.is_some(),
            notify_keyspace_events.is_some(),
            webhook_targets.is_some(),
            events_max_filters_per_member.is_some(),
            events_max_filters_per_board.is_some(),
            events_max_filters.is_some(),
            events_retain.is_some(),
            http_hosts.is_some(),
        ];
        assert!(set.iter().all(|s| *s), "{set:?}");

        // Resolved, with the key file it names put somewhere real.
        let keys = TempConfig::new("example-keys", "replace-me-write-key-0123456789:write\n");
        let text = text.replace("/etc/podium/keys", &keys.0.display().to_string());
        let cfg = TempConfig::new("example", &text);
        let args = ServeArgs {
            config: Some(cfg.0.clone()),
            ..Default::default()
        };
        let s = Settings::resolve(&args).unwrap();
        assert_eq!(s.data_dir, std::path::Path::new("/var/lib/podium"));
        assert_eq!(s.http, Some(addr("127.0.0.1:7070")));
        assert_eq!(s.api_keys.len(), 3);
        assert_eq!(
            s.scope_of("replace-me-read-key-0123456789"),
            Some(Scope::Read)
        );
        assert_eq!(
            s.scope_of("replace-me-write-key-0123456789"),
            Some(Scope::Write)
        );
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
