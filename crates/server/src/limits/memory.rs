//! The memory budget's upkeep: installs `--maxmemory` into the budget
//! every frontend and operation checks ([`podium_core::memory`]), samples
//! the resident size it also holds against, keeps its gauges, and gives
//! freed memory back to the system. After a large
//! request the allocator keeps the freed pages for reuse, so the resident
//! size would stay near its peak: once used memory has fallen well below
//! the highest it reached, the free pages are returned (glibc's
//! `malloc_trim`).

use std::time::Duration;

use podium_core::memory;

/// How far used memory must fall below its high mark before free pages
/// are returned: small drops are reused soon anyway.
const GIVE_BACK_AFTER: u64 = 32 << 20;

/// Sets the budget (0: none) and logs it.
pub fn install(maxmemory: u64) {
    memory::set_max(maxmemory);
    // The gauges exist from the start, so a scrape always shows the same
    // series.
    let rss = resident();
    memory::note_resident(rss);
    metrics::gauge!("podium_resident_memory_bytes").set(rss as f64);
    metrics::gauge!("podium_used_memory_bytes").set(memory::used() as f64);
    metrics::gauge!("podium_maxmemory_bytes").set(maxmemory as f64);
    if maxmemory == 0 {
        tracing::info!("no memory budget (maxmemory 0)");
    } else {
        tracing::info!(maxmemory, "memory budget");
    }
}

/// Until `stop`: ten times a second the resident size for the budget;
/// once a second the gauges, and free pages given back when used memory
/// has fallen [`GIVE_BACK_AFTER`] below its high mark.
pub async fn upkeep(mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut high = memory::used();
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let rss = resident();
        memory::note_resident(rss);
        n += 1;
        if !n.is_multiple_of(10) {
            continue;
        }
        metrics::gauge!("podium_resident_memory_bytes").set(rss as f64);
        let used = memory::used();
        metrics::gauge!("podium_used_memory_bytes").set(used as f64);
        metrics::gauge!("podium_maxmemory_bytes").set(memory::max() as f64);
        high = high.max(used);
        if high - used >= GIVE_BACK_AFTER {
            // Walks the allocator's arenas: off the async workers.
            let _ = tokio::task::spawn_blocking(give_back).await;
            high = memory::used();
        }
    }
}

/// The process's resident size in bytes (0 where it cannot be read).
pub(crate) fn resident() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // `statm`: sizes in pages; the second is the resident set.
        let pages = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        // SAFETY: sysconf reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages * page.max(0) as u64
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Returns the allocator's free pages to the system.
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
}
