//! INFO: the server described in Redis 7.0's sections and field names, so
//! client libraries, their test harnesses and Redis dashboards read podium
//! as they read Redis. Figures podium does not have (replication offsets,
//! fork times) are Redis's idle values; podium adds `podium_log_fsyncs`
//! and, in the memory section, what holds the memory (`podium_mem_*`:
//! boards, search indexes, archives, keyspace, log buffers, event rings,
//! connections and the rest).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;

use super::super::command;
use super::{Session, REDIS_VERSION};

/// Sections in Redis's order, and whether `INFO` / `INFO default` shows
/// them (the others only with `all` / `everything` or by name).
const SECTIONS: [(&str, bool); 13] = [
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("cluster", true),
    ("keyspace", true),
    ("latencystats", false),
];

/// Redis's `bytesToHuman`.
pub(super) fn human(n: u64) -> String {
    let units = [
        (1u64 << 10, 'K'),
        (1 << 20, 'M'),
        (1 << 30, 'G'),
        (1 << 40, 'T'),
        (1 << 50, 'P'),
    ];
    if n < 1024 {
        return format!("{n}B");
    }
    for (i, &(div, u)) in units.iter().enumerate() {
        if i + 1 == units.len() || n < div << 10 {
            return format!("{:.2}{u}", n as f64 / div as f64);
        }
    }
    unreachable!()
}

/// The highest [`used_memory`] seen, as Redis samples its own peak.
static USED_MEMORY_PEAK: AtomicU64 = AtomicU64::new(0);

/// The bytes the process's allocations hold, as Redis's `used_memory`
/// counts them and as the memory budget and `/metrics`
/// (`podium_used_memory_bytes`) read them: the counting allocator's
/// figure; malloc's own where the binary did not install it.
fn used_memory() -> u64 {
    let m = match podium_engine::used::allocated() {
        Some(_) => podium_core::memory::used(),
        None => allocator_allocated(),
    };
    USED_MEMORY_PEAK.fetch_max(m, Ordering::Relaxed);
    m
}

/// Heap bytes in use as malloc counts them (Redis's
/// `allocator_allocated`): blocks in its arenas plus the regions it maps on
/// their own — whole regions, so a 2 MiB-aligned block counts the slack
/// malloc mapped to align it, which is address space, never touched; the
/// resident set size where malloc cannot say.
fn allocator_allocated() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let m = unsafe {
        let i = libc::mallinfo2();
        (i.uordblks + i.hblkhd) as u64
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let m = rss();
    m
}

/// INFO memory's `podium_mem_<part>:<bytes>` lines, one per part of
/// [`podium_core::memory::MemoryUse::parts`].
fn breakdown(use_: podium_core::memory::MemoryUse, used: u64) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (part, bytes) in use_.parts(used) {
        let _ = write!(out, "podium_mem_{part}:{bytes}\r\n");
    }
    out
}

/// Resident set size, as Redis's `used_memory_rss`.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// The machine's memory (`total_system_memory`).
fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// CPU seconds of the process (system, user), as Redis's `used_cpu_*`.
fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(u.ru_stime), secs(u.ru_utime))
}

/// This process's 40-hex-digit run id (Redis's `run_id`).
fn run_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        (0..5)
            .map(|_| format!("{:08x}", rand::random::<u32>()))
            .collect()
    })
}

impl Session {
    /// INFO [section …]: the sections asked for, each as Redis formats it.
    pub(super) fn info(&self, sections: &[Bytes]) -> String {
        let wanted: Vec<String> = sections.iter().filter_map(|s| command::lower(s)).collect();
        let everything = wanted
            .iter()
            .any(|w| matches!(w.as_str(), "all" | "everything"));
        let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
        let mut out = String::new();
        for (name, in_default) in SECTIONS {
            let asked = everything || (default && in_default) || wanted.iter().any(|w| w == name);
            if !asked {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            out.push_str(&self.section(name));
        }
        out
    }

    fn section(&self, name: &str) -> String {
        let shared = &self.shared;
        let stats = &shared.stats;
        let up = shared.started.elapsed().as_secs();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        match name {
            "server" => format!(
                "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_git_sha1:00000000\r\n\
                 redis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\n\
                 arch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\n\
                 atomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\n\
                 process_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\n\
                 uptime_in_seconds:{up}\r\nuptime_in_days:{}\r\nhz:10\r\nconfigured_hz:10\r\n\
                 lru_clock:{}\r\nexecutable:podium\r\nconfig_file:\r\nio_threads_active:0\r\n\
                 podium_version:{}\r\n",
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                run_id(),
                shared.port,
                now.as_micros(),
                up / 86400,
                now.as_secs() & ((1 << 24) - 1),
                env!("CARGO_PKG_VERSION"),
            ),
            "clients" => format!(
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
                 client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\n\
                 blocked_clients:{}\r\ntracking_clients:0\r\nclients_in_timeout_table:{}\r\n",
                shared.clients.load(Ordering::Relaxed),
                shared.config.maxclients,
                self.store.waiters().blocked(),
                self.store.waiters().timed(),
            ),
            "memory" => {
                let (m, rss) = (used_memory(), rss());
                let peak = USED_MEMORY_PEAK.load(Ordering::Relaxed).max(m);
                let total = total_system_memory();
                let max = podium_core::memory::max();
                let frag = if m > 0 { rss as f64 / m as f64 } else { 0.0 };
                format!(
                    "# Memory\r\nused_memory:{m}\r\nused_memory_human:{}\r\n\
                     used_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\n\
                     used_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
                     used_memory_peak_perc:{:.2}%\r\ntotal_system_memory:{total}\r\n\
                     total_system_memory_human:{}\r\nmaxmemory:{max}\r\nmaxmemory_human:{}\r\n\
                     maxmemory_policy:noeviction\r\nallocator_allocated:{}\r\n\
                     mem_fragmentation_ratio:{frag:.2}\r\nmem_allocator:libc\r\n{}",
                    human(m),
                    human(rss),
                    human(peak),
                    if peak > 0 {
                        m as f64 * 100.0 / peak as f64
                    } else {
                        0.0
                    },
                    human(total),
                    human(max),
                    allocator_allocated(),
                    breakdown(self.store.memory_use().with_process_parts(), m),
                )
            }
            "persistence" => {
                // podium_log_fsyncs shows group commit from the outside:
                // a pipeline batch costs one fsync, not one per write.
                let p = self.store.persistence();
                // A snapshot rotates the log, as an AOF rewrite does.
                let rewriting = p.snapshot_in_progress as u8;
                format!(
                    "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\n\
                     rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:{rewriting}\r\n\
                     rdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\naof_enabled:1\r\n\
                     aof_rewrite_in_progress:{rewriting}\r\naof_rewrite_scheduled:0\r\n\
                     aof_last_write_status:ok\r\npodium_log_fsyncs:{}\r\n",
                    self.store.last_save(),
                    p.log_fsyncs
                )
            }
            "stats" => {
                let k = self.store.key_stats();
                format!(
                    "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
                     instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\n\
                     total_net_output_bytes:{}\r\nrejected_connections:0\r\nexpired_keys:{}\r\n\
                     evicted_keys:0\r\nevicted_clients:0\r\nkeyspace_hits:{}\r\n\
                     keyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\
                     total_error_replies:{}\r\n",
                    stats.connections.load(Ordering::Relaxed),
                    stats.commands(),
                    stats.ops_per_sec(),
                    stats.net_input.load(Ordering::Relaxed),
                    stats.net_output.load(Ordering::Relaxed),
                    k.expired,
                    k.hits,
                    k.misses,
                    self.shared.pubsub.numchannels(),
                    self.shared.pubsub.numpat(),
                    stats.error_replies(),
                )
            }
            "replication" => "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\
                 master_failover_state:no-failover\r\nmaster_repl_offset:0\r\n\
                 repl_backlog_active:0\r\n"
                .to_string(),
            "cpu" => {
                let (sys, user) = cpu_times();
                format!(
                    "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n\
                     used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
                )
            }
            "modules" => "# Modules\r\n".to_string(),
            "commandstats" => format!("# Commandstats\r\n{}", stats.commandstats()),
            "errorstats" => format!("# Errorstats\r\n{}", stats.errorstats()),
            // Client libraries' test harnesses read it to know whether
            // to run their cluster cases.
            "cluster" => "# Cluster\r\ncluster_enabled:0\r\n".to_string(),
            "latencystats" => "# Latencystats\r\n".to_string(),
            _ => self.keyspace_info(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    fn info(s: &mut Session, line: &str) -> String {
        match run(s, line) {
            R::Verbatim(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sections_follow_redis_s_selection() {
        let mut s = session();
        let all = info(&mut s, "info");
        for section in [
            "# Server",
            "# Stats",
            "# CPU",
            "# Errorstats",
            "# Cluster",
            "# Keyspace",
        ] {
            assert!(all.contains(section), "{section} in {all}");
        }
        assert!(!all.contains("# Commandstats"));
        assert!(info(&mut s, "info everything").contains("# Commandstats"));
        let two = info(&mut s, "info clients server");
        assert!(two.starts_with("# Server\r\n") && two.contains("\r\n\r\n# Clients\r\n"));
        assert!(!two.contains("# Memory"));
    }

    #[test]
    fn string_reads_count_hits_and_misses() {
        let mut s = session();
        run(&mut s, "set k v");
        run(&mut s, "zadd z 1 a");
        run(&mut s, "get k");
        run(&mut s, "strlen k");
        run(&mut s, "get nokey");
        run(&mut s, "get z");
        run(&mut s, "mget k nokey");
        let stats = info(&mut s, "info stats");
        assert!(stats.contains("keyspace_hits:4\r\n"), "{stats}");
        assert!(stats.contains("keyspace_misses:2\r\n"), "{stats}");
    }

    #[test]
    fn stats_count_commands_hits_and_misses() {
        let mut s = session();
        run(&mut s, "zadd z 1 a");
        run(&mut s, "zscore z a");
        run(&mut s, "zscore nokey a");
        run(&mut s, "zadd z x");
        let stats = info(&mut s, "info stats");
        assert!(stats.contains("keyspace_hits:1\r\n"), "{stats}");
        assert!(stats.contains("keyspace_misses:1\r\n"), "{stats}");
        assert!(stats.contains("total_commands_processed:4\r\n"), "{stats}");
        assert!(stats.contains("total_error_replies:1\r\n"), "{stats}");
        let cmd = info(&mut s, "info commandstats");
        assert!(
            cmd.contains("cmdstat_zadd:calls=1,")
                && cmd.contains("rejected_calls=1,failed_calls=0"),
            "{cmd}"
        );
        assert!(cmd.contains("cmdstat_zscore:calls=2,"), "{cmd}");
        assert!(info(&mut s, "info errorstats").contains("errorstat_ERR:count=1\r\n"));
        let ks = info(&mut s, "info keyspace");
        assert_eq!(ks, "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n");
        // CONFIG RESETSTAT: counted from zero again.
        run(&mut s, "config resetstat");
        run(&mut s, "zscore z a");
        let stats = info(&mut s, "info stats");
        assert!(stats.contains("keyspace_hits:1\r\n"), "{stats}");
        assert!(stats.contains("keyspace_misses:0\r\n"), "{stats}");
        assert!(stats.contains("total_commands_processed:2\r\n"), "{stats}");
        let cmd = info(&mut s, "info commandstats");
        assert!(cmd.contains("cmdstat_zscore:calls=1,"), "{cmd}");
        assert!(!cmd.contains("cmdstat_zadd"), "{cmd}");
    }
}
