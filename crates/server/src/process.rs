//! The process's own figures for `/metrics`, read at each scrape under the
//! names Prometheus's client libraries use for them (`process_*`), and
//! `podium_build_info`: CPU time, resident memory, open and allowed file
//! descriptors, start time and uptime, version and commit.

use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// When the process started serving (close enough to its start for an
/// uptime), as wall-clock seconds and as an instant.
static STARTED: LazyLock<(f64, Instant)> = LazyLock::new(|| {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    (wall, Instant::now())
});

/// Notes the start time: called once at startup.
pub fn started() {
    LazyLock::force(&STARTED);
}

/// Appends the families (a figure this system cannot give is left out).
pub fn render(out: &mut String) {
    let mut family = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
        );
    };
    let (wall, at) = *STARTED;
    family(
        "process_start_time_seconds",
        "gauge",
        "When the process started, in seconds since the Unix epoch.",
        wall,
    );
    family(
        "podium_uptime_seconds",
        "gauge",
        "Seconds since the process started.",
        at.elapsed().as_secs_f64(),
    );
    let linux = linux();
    if let Some(cpu) = linux.cpu_seconds {
        family(
            "process_cpu_seconds_total",
            "counter",
            "CPU time the process used, user and system, in seconds.",
            cpu,
        );
    }
    if let Some(rss) = linux.resident_bytes {
        family(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory of the process, in bytes.",
            rss,
        );
    }
    if let Some(vsz) = linux.virtual_bytes {
        family(
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory of the process, in bytes.",
            vsz,
        );
    }
    if let Some(fds) = linux.open_fds {
        family(
            "process_open_fds",
            "gauge",
            "File descriptors the process has open (connections, log and snapshot files).",
            fds,
        );
    }
    if let Some(max) = linux.max_fds {
        family(
            "process_max_fds",
            "gauge",
            "File descriptors the process may open (its soft limit).",
            max,
        );
    }
    let _ = writeln!(
        out,
        "# HELP podium_build_info The running binary: its version and commit (always 1).\n\
         # TYPE podium_build_info gauge\n\
         podium_build_info{{version=\"{}\",commit=\"{}\"}} 1\n",
        env!("CARGO_PKG_VERSION"),
        crate::COMMIT
    );
}

#[derive(Default)]
struct Figures {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<f64>,
    virtual_bytes: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

#[cfg(target_os = "linux")]
fn linux() -> Figures {
    // SAFETY: sysconf reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let mut f = Figures::default();
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command name (which may hold spaces and
        // parentheses): utime and stime are the 12th and 13th of them,
        // vsize the 21st.
        if let Some((_, rest)) = stat.rsplit_once(')') {
            let v: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| v.get(i).and_then(|s| s.parse::<f64>().ok());
            if let (Some(u), Some(s)) = (num(11), num(12)) {
                if ticks > 0 {
                    f.cpu_seconds = Some((u + s) / ticks as f64);
                }
            }
            f.virtual_bytes = num(20);
        }
    }
    // The resident size as the memory budget reads it.
    f.resident_bytes = Some(crate::limits::memory::resident() as f64).filter(|r| *r > 0.0);
    f.open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as f64);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        f.max_fds = Some(lim.rlim_cur as f64);
    }
    f
}

#[cfg(not(target_os = "linux"))]
fn linux() -> Figures {
    Figures::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_of_this_process_are_read() {
        started();
        // At least a few clock ticks of CPU, so the CPU time read is above
        // zero however little else this test process has run.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let mut out = String::new();
        render(&mut out);
        let value = |name: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("{name} missing in {out}"))
        };
        assert!(value("process_start_time_seconds") > 1.6e9);
        assert!(value("podium_uptime_seconds") >= 0.0);
        if cfg!(target_os = "linux") {
            assert!(value("process_cpu_seconds_total") > 0.0);
            assert!(value("process_resident_memory_bytes") > 1e6);
            assert!(value("process_open_fds") >= 3.0);
            assert!(value("process_max_fds") >= value("process_open_fds"));
        }
        assert!(out.contains(&format!(
            "podium_build_info{{version=\"{}\",commit=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            crate::COMMIT
        )));
    }
}
