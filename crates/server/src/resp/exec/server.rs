//! What the server tells clients about itself besides INFO, and what an
//! operator may change while it runs: COMMAND (COUNT, DOCS, INFO, LIST),
//! CONFIG GET / SET / RESETSTAT over the settings podium has under
//! Redis's names, SLOWLOG, TIME, ROLE, LOLWUT, and SAVE / BGSAVE /
//! LASTSAVE mapped onto podium's snapshots.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::super::command::{self, Cmd, Spec};
use super::super::notify;
use super::super::reply::Reply;
use super::{Session, REDIS_VERSION};
use crate::settings::Scope;
use podium_core::keystore::glob_match;

/// The settings CONFIG GET shows that the listener knows at start or
/// changes at run time.
#[derive(Clone)]
pub struct Live {
    /// Redis's `timeout`: seconds a client may idle (0: for ever), shared
    /// with the connections' idle limit so CONFIG SET applies at once.
    pub timeout: Arc<AtomicU64>,
    pub maxclients: u64,
    /// `appendfsync`: podium's `--fsync` policy.
    pub appendfsync: &'static str,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            timeout: Arc::default(),
            maxclients: 10_000,
            appendfsync: "always",
        }
    }
}

/// Parameters CONFIG GET knows whose value podium does not change:
/// Redis's, where podium behaves as that value says.
const FIXED: [(&str, &str); 20] = [
    ("save", ""),
    ("appendonly", "yes"),
    ("databases", "16"),
    ("maxmemory-policy", "noeviction"),
    ("hz", "10"),
    ("tcp-keepalive", "300"),
    ("proto-max-bulk-len", "536870912"),
    ("client-query-buffer-limit", "1073741824"),
    ("lua-time-limit", "5000"),
    ("busy-reply-threshold", "5000"),
    ("zset-max-listpack-entries", "128"),
    ("zset-max-listpack-value", "64"),
    ("zset-max-ziplist-entries", "128"),
    ("zset-max-ziplist-value", "64"),
    ("hash-max-listpack-entries", "512"),
    ("hash-max-listpack-value", "64"),
    ("hash-max-ziplist-entries", "512"),
    ("hash-max-ziplist-value", "64"),
    ("cluster-enabled", "no"),
    ("protected-mode", "no"),
];

/// Parameters CONFIG SET changes.
const SETTABLE: [&str; 5] = [
    "timeout",
    "notify-keyspace-events",
    "maxmemory",
    "slowlog-log-slower-than",
    "slowlog-max-len",
];

fn set_failed(name: &str, why: &str) -> Reply {
    Reply::err(format!(
        "CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

fn command_info(s: &Spec) -> Reply {
    let flags = match s.access.least() {
        Some(Scope::Write | Scope::Admin) => vec![Reply::Status("write")],
        _ => vec![Reply::Status("readonly")],
    };
    Reply::Array(vec![
        Reply::bulk(s.name),
        Reply::Int(i64::from(s.arity)),
        Reply::Array(flags),
        Reply::Int(i64::from(s.keys.0)),
        Reply::Int(i64::from(s.keys.1)),
        Reply::Int(i64::from(s.keys.2)),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

/// COMMAND, COMMAND COUNT / DOCS / INFO / LIST.
pub(super) fn command_cmd(args: &[Bytes]) -> Reply {
    let top = || command::COMMANDS.iter().filter(|s| !s.name.contains('|'));
    let Some(sub) = args.first() else {
        return Reply::Array(top().map(command_info).collect());
    };
    let sub = command::lower(sub).unwrap_or_default();
    match sub.as_str() {
        "count" => Reply::Int(top().count() as i64),
        // Documentation is optional for clients (redis-cli uses it for
        // hints only): an empty map.
        "docs" => Reply::Map(Vec::new()),
        "list" => Reply::Members(top().map(|s| s.name.as_bytes().to_vec()).collect()),
        _ => Reply::Array(
            args[1..]
                .iter()
                .map(|n| {
                    let n = command::lower(n).unwrap_or_default();
                    top()
                        .find(|s| s.name == n)
                        .map_or(Reply::Null, command_info)
                })
                .collect(),
        ),
    }
}

impl Session {
    /// Every parameter CONFIG GET knows, with its current value.
    fn config_values(&self) -> Vec<(&'static str, String)> {
        let stats = &self.shared.stats;
        let live = &self.shared.config;
        let mut v: Vec<(&'static str, String)> = vec![
            ("timeout", live.timeout.load(Ordering::Relaxed).to_string()),
            ("maxmemory", podium_core::memory::max().to_string()),
            ("maxclients", live.maxclients.to_string()),
            ("appendfsync", live.appendfsync.to_string()),
            ("port", self.shared.port.to_string()),
            (
                "slowlog-log-slower-than",
                stats.slower_than.load(Ordering::Relaxed).to_string(),
            ),
            (
                "slowlog-max-len",
                stats.slow_max.load(Ordering::Relaxed).to_string(),
            ),
            (
                "notify-keyspace-events",
                notify::format_flags(self.shared.notify.flags()),
            ),
        ];
        v.extend(FIXED.iter().map(|&(k, val)| (k, val.to_string())));
        v
    }

    /// CONFIG GET pattern … (globs, case-insensitive).
    pub(super) fn config_get(&self, patterns: &[Bytes]) -> Reply {
        let out = self
            .config_values()
            .into_iter()
            .filter(|(k, _)| {
                patterns
                    .iter()
                    .any(|p| glob_match(&p.to_ascii_lowercase(), k.as_bytes()))
            })
            .map(|(k, v)| (Reply::bulk(k), Reply::bulk(v)))
            .collect();
        Reply::Map(out)
    }

    /// CONFIG SET: every value checked before any is applied, as Redis.
    fn config_set(&self, pairs: &[(String, Bytes)]) -> Reply {
        enum Change {
            Timeout(u64),
            MaxMemory(u64),
            SlowerThan(i64),
            SlowMax(usize),
            Notify(u32),
        }
        let mut changes = Vec::new();
        for (name, value) in pairs {
            let text = String::from_utf8_lossy(value);
            let int = || text.trim().parse::<i64>().ok();
            let change = match name.as_str() {
                "timeout" => match int() {
                    Some(n) if n >= 0 => Change::Timeout(n as u64),
                    Some(_) => {
                        return set_failed(
                            name,
                            "argument must be between 0 and 2147483647 inclusive",
                        )
                    }
                    None => return set_failed(name, "argument couldn't be parsed into an integer"),
                },
                "maxmemory" => match crate::settings::parse_redis_bytes(&text) {
                    Ok(n) => Change::MaxMemory(n),
                    Err(_) => return set_failed(name, "argument must be a memory value"),
                },
                "slowlog-log-slower-than" => match int() {
                    Some(n) if n >= -1 => Change::SlowerThan(n),
                    Some(_) => {
                        return set_failed(
                            name,
                            "argument must be between -1 and 9223372036854775807 inclusive",
                        )
                    }
                    None => return set_failed(name, "argument couldn't be parsed into an integer"),
                },
                "slowlog-max-len" => match int() {
                    Some(n) if n >= 0 => Change::SlowMax(n as usize),
                    Some(_) => {
                        return set_failed(
                            name,
                            "argument must be between 0 and 9223372036854775807 inclusive",
                        )
                    }
                    None => return set_failed(name, "argument couldn't be parsed into an integer"),
                },
                "notify-keyspace-events" => match notify::parse_flags(value) {
                    Some(f) => Change::Notify(f),
                    None => return set_failed(name, notify::BAD_FLAGS),
                },
                other if self.config_values().iter().any(|(k, _)| *k == other) => {
                    return set_failed(
                        name,
                        "podium sets this at start or not at all (see docs/server.md)",
                    )
                }
                _ => {
                    return Reply::err(format!(
                        "Unknown option or number of arguments for CONFIG SET - '{name}'"
                    ))
                }
            };
            debug_assert!(SETTABLE.contains(&name.as_str()));
            changes.push(change);
        }
        for c in changes {
            match c {
                Change::Timeout(n) => self.shared.config.timeout.store(n, Ordering::Relaxed),
                Change::MaxMemory(n) => podium_core::memory::set_max(n),
                Change::SlowerThan(n) => self.shared.stats.slower_than.store(n, Ordering::Relaxed),
                Change::SlowMax(n) => self.shared.stats.slow_max.store(n, Ordering::Relaxed),
                Change::Notify(f) => self.shared.notify.set_flags(f),
            }
        }
        Reply::OK
    }

    /// Runs a server command of this module.
    pub(super) fn server_cmd(&mut self, cmd: Cmd) -> Reply {
        let stats = &self.shared.stats;
        match cmd {
            Cmd::ConfigSet(pairs) => self.config_set(&pairs),
            Cmd::ConfigResetStat => {
                stats.reset();
                self.store.reset_key_stats();
                Reply::OK
            }
            Cmd::SlowlogGet(n) => stats.slow_entries(n),
            Cmd::SlowlogLen => Reply::Int(stats.slow_len() as i64),
            Cmd::SlowlogReset => {
                stats.slow_reset();
                Reply::OK
            }
            Cmd::Time => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                Reply::Array(vec![
                    Reply::bulk(now.as_secs().to_string()),
                    Reply::bulk(now.subsec_micros().to_string()),
                ])
            }
            Cmd::Role => Reply::Array(vec![
                Reply::bulk("master"),
                Reply::Int(0),
                Reply::Array(Vec::new()),
            ]),
            // Redis draws a piece of computer art; podium only signs.
            Cmd::Lolwut => Reply::Verbatim(format!(
                "podium {}, a leaderboard server.\nRedis ver. {REDIS_VERSION}\n",
                env!("CARGO_PKG_VERSION")
            )),
            Cmd::Save => match self.store.save() {
                Ok(true) => Reply::OK,
                Ok(false) => Reply::err("Background save already in progress"),
                Err(e) => Reply::err(e.message),
            },
            Cmd::BgSave => {
                if self.store.persistence().snapshot_in_progress {
                    return Reply::Status("Background saving scheduled");
                }
                let store = self.store.clone();
                let started = std::thread::Builder::new()
                    .name("bgsave".into())
                    .spawn(move || {
                        if let Err(e) = store.save() {
                            tracing::warn!(error = %e.message, "BGSAVE failed");
                        }
                    });
                match started {
                    Ok(_) => Reply::Status("Background saving started"),
                    Err(e) => Reply::err(format!("Background save failed to start: {e}")),
                }
            }
            Cmd::LastSave => Reply::Int(self.store.last_save()),
            _ => unreachable!("not a server command: {cmd:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn config_set_changes_what_config_get_shows() {
        let mut s = session();
        assert_eq!(
            run(&mut s, "config get timeout"),
            R::Map(vec![(b("timeout"), b("0"))])
        );
        assert_eq!(
            run(&mut s, "config set timeout 70 slowlog-max-len 5"),
            R::OK
        );
        assert_eq!(
            run(&mut s, "config get timeout"),
            R::Map(vec![(b("timeout"), b("70"))])
        );
        assert_eq!(
            s.shared
                .config
                .timeout
                .load(std::sync::atomic::Ordering::Relaxed),
            70
        );
        // All or nothing: a bad value leaves the others unchanged.
        assert!(run(&mut s, "config set timeout 1 slowlog-max-len x").is_error());
        assert_eq!(
            run(&mut s, "config get timeout"),
            R::Map(vec![(b("timeout"), b("70"))])
        );
        assert_eq!(
            run(&mut s, "config set nope 1"),
            R::err("Unknown option or number of arguments for CONFIG SET - 'nope'")
        );
        assert_eq!(
            run(&mut s, "config set timeout 1 timeout 2"),
            R::err(
                "CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter"
            )
        );
        assert!(run(&mut s, "config set save x").is_error());
        assert_eq!(
            run(&mut s, "config set timeout"),
            R::err("wrong number of arguments for 'config|set' command")
        );
        assert_eq!(run(&mut s, "config set timeout 1 save"), R::syntax());
    }

    #[test]
    fn slowlog_records_what_is_slower_than_the_threshold() {
        let mut s = session();
        assert_eq!(run(&mut s, "config set slowlog-log-slower-than 0"), R::OK);
        assert_eq!(run(&mut s, "slowlog reset"), R::OK);
        run(&mut s, "zadd z 1 a");
        assert_eq!(run(&mut s, "slowlog len"), R::Int(2));
        // Newest first: SLOWLOG LEN, then ZADD.
        let R::Array(entries) = run(&mut s, "slowlog get 2") else {
            panic!()
        };
        let R::Array(e) = &entries[1] else { panic!() };
        assert_eq!(e[3], R::Array(vec![b("zadd"), b("z"), b("1"), b("a")]));
        assert!(run(&mut s, "slowlog get -2").is_error());
        assert_eq!(
            run(&mut s, "slowlog nope"),
            R::err("unknown subcommand 'nope'. Try SLOWLOG HELP.")
        );
    }

    #[test]
    fn time_role_save_and_lastsave() {
        let mut s = session();
        let R::Array(t) = run(&mut s, "time") else {
            panic!()
        };
        assert_eq!(t.len(), 2);
        assert_eq!(
            run(&mut s, "role"),
            R::Array(vec![b("master"), R::Int(0), R::Array(vec![])])
        );
        assert_eq!(run(&mut s, "save"), R::OK);
        assert!(matches!(run(&mut s, "lastsave"), R::Int(n) if n > 1_700_000_000));
        assert!(matches!(run(&mut s, "lolwut"), R::Verbatim(t) if t.contains("Redis ver. ")));
    }
}
