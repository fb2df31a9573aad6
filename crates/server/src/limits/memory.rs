//! The memory budget's upkeep: installs `--maxmemory` into the budget
//! every frontend and operation checks ([`podium_core::memory`]), keeps
//! its gauges, and gives freed memory back to the system. After a large
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
    if maxmemory == 0 {
        tracing::info!("no memory budget (maxmemory 0)");
    } else {
        tracing::info!(maxmemory, "memory budget");
    }
}

/// Once a second until `stop`: the gauges, and free pages given back when
/// used memory has fallen [`GIVE_BACK_AFTER`] below its high mark.
pub async fn upkeep(mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut high = memory::used();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
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

/// Returns the allocator's free pages to the system.
fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
}
