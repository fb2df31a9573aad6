//! The TOML config file named by `--config` / `PODIUM_CONFIG`: the long
//! flags in snake_case, every key optional, an unknown key refused.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use super::{ApiKey, ByteSize, FsyncPolicy, ListenAddr, MaxMemory, RateLimit};

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
