//! The merge: flags and `PODIUM_*` variables (as clap gives them) over the
//! config file over the defaults, into a validated [`Settings`].

use super::file::FileConfig;
use super::keys::load_key_file;
use super::{ByteSize, ListenAddr, ServeArgs, Settings, DEFAULT_BACKEND};
use super::{DEFAULT_HTTP, DEFAULT_RESP, DEFAULT_RPC};

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
        let limits = args.limits.resolve(&file)?;
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
            log_format: args.log_format.or(file.log_format).unwrap_or(d.log_format),
            webhooks: args.webhooks.or(file.webhooks),
            access_log: args.access_log.or(file.access_log).unwrap_or(d.access_log),
            http_hosts: args
                .http_hosts
                .clone()
                .or(file.http_hosts)
                .unwrap_or(d.http_hosts)
                .into_iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            auto_create: args
                .auto_create
                .or(file.auto_create)
                .unwrap_or(d.auto_create),
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
            rate_limit_per_key: args
                .rate_limit_per_key
                .or(file.rate_limit_per_key)
                .map_or(d.rate_limit_per_key, |r| r.0),
            rate_limit_per_address: args
                .rate_limit_per_address
                .or(file.rate_limit_per_address)
                .map_or(d.rate_limit_per_address, |r| r.0),
            limits,
        };
        settings.validate()?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;

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
        assert_eq!(s.rate_limit_per_key, None);
        assert_eq!(s.rate_limit_per_address, None);
        // Parsing no flags gives the same.
        assert_eq!(Settings::resolve(&parse(&[])).unwrap(), s);
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
                rate_limit_per_key = "100/s"
                rate_limit_per_address = "off"

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
        assert_eq!(s.rate_limit_per_key, Some("100/s".parse().unwrap()));
        assert_eq!(s.rate_limit_per_address, None);
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
            rate_limit_per_key: Some("off".parse().unwrap()),
            rate_limit_per_address: Some("10/m".parse().unwrap()),
            api_keys: Some(vec!["env-key-0123456789:write".parse().unwrap()]),
            ..Default::default()
        };
        let s = Settings::resolve(&env).unwrap();
        assert_eq!(s.http, Some(addr("127.0.0.1:2001")));
        assert_eq!(s.fsync, FsyncPolicy::EverySec);
        assert_eq!(s.rate_limit_per_key, None);
        assert_eq!(s.rate_limit_per_address, Some("10/m".parse().unwrap()));
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
}
