//! The checks on settings, however they were built: the backend's URL and
//! the log filter parse, keys are long enough and given once, listeners do
//! not clash, nothing listens beyond loopback without an API key, and a
//! limit per API key comes with keys.

use anyhow::{bail, Context};

use super::keys::check_key;
use super::{Settings, DEFAULT_BACKEND, MIN_API_KEY_LEN};

impl Settings {
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
        self.limits.validate()?;
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
        if let (Some(rate), true) = (self.rate_limit_per_key, self.api_keys.is_empty()) {
            bail!(
                "--rate-limit-per-key {rate} limits requests by API key, but no key is \
                 configured: add keys (--api-key KEY:SCOPE), or limit by client address \
                 with --rate-limit-per-address {rate}"
            );
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
}

fn protocol_name(flag: &str) -> &'static str {
    match flag {
        "http" => "HTTP",
        "rpc" => "MessagePack-RPC",
        _ => "the Redis protocol",
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
    use crate::settings::test_util::*;
    use crate::settings::*;

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
    fn a_limit_per_key_needs_keys() {
        let err = format!(
            "{:#}",
            Settings::resolve(&parse(&["--rate-limit-per-key", "10/s"])).unwrap_err()
        );
        assert!(err.contains("no key is configured"), "{err}");
        let key = format!("{KEY}:read");
        Settings::resolve(&parse(&["--rate-limit-per-key", "10/s", "--api-key", &key])).unwrap();
        Settings::resolve(&parse(&["--rate-limit-per-key", "off"])).unwrap();
        // A limit per address needs nothing else.
        Settings::resolve(&parse(&["--rate-limit-per-address", "10/s"])).unwrap();
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
