//! Pinning a client thread and a server process to one CPU for the
//! one-request-at-a-time reads of `rank10m`.
//!
//! On this class of machine (a small VM) a vCPU with nothing to run halts,
//! and waking it for the next request costs far more than the request: the
//! bare loopback program (`scripts/loopback.c rtt`) measured a 40-byte
//! request and 1,500-byte answer at p50 139–293 µs with its two threads on
//! the two idle vCPUs, and 22 µs with both on one. A one-at-a-time read
//! then measures the hypervisor's wake-up, the same for every server. With
//! client and server on one CPU the hand-over is a context switch, so the
//! figure is the server's own work plus the kernel's loopback. Both
//! servers get the same treatment; the unpinned figure is reported too.

use anyhow::Result;

/// While alive, the calling thread and every thread of the given processes
/// run on one CPU; dropping it restores each thread's previous CPU set.
pub struct OneCpu {
    #[cfg(target_os = "linux")]
    saved: Vec<(libc::pid_t, libc::cpu_set_t)>,
    pub cpu: usize,
}

#[cfg(target_os = "linux")]
impl OneCpu {
    /// Pins to the last CPU the calling thread may run on.
    pub fn pin(pids: &[u32]) -> Result<OneCpu> {
        use anyhow::{bail, Context};
        let me = get(0).context("sched_getaffinity of the bench thread")?;
        let Some(cpu) = (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| unsafe { libc::CPU_ISSET(c, &me) })
        else {
            bail!("the bench thread may run on no CPU");
        };
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays in bounds.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut one) };
        let mut pin = OneCpu {
            saved: Vec::new(),
            cpu,
        };
        let mut tids: Vec<libc::pid_t> = vec![0];
        for &pid in pids {
            let dir = format!("/proc/{pid}/task");
            for e in std::fs::read_dir(&dir).with_context(|| format!("cannot list {dir}"))? {
                if let Ok(tid) = e?.file_name().to_string_lossy().parse() {
                    tids.push(tid);
                }
            }
        }
        for tid in tids {
            // A thread may end between the listing and here: skip it.
            let Ok(old) = get(tid) else { continue };
            if set(tid, &one).is_ok() {
                pin.saved.push((tid, old));
            }
        }
        Ok(pin)
    }
}

#[cfg(target_os = "linux")]
fn get(tid: libc::pid_t) -> std::io::Result<libc::cpu_set_t> {
    // SAFETY: the set is written by the kernel within its size.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut s) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    }
}

#[cfg(target_os = "linux")]
fn set(tid: libc::pid_t, s: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: the set is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
impl Drop for OneCpu {
    fn drop(&mut self) {
        for (tid, old) in &self.saved {
            let _ = set(*tid, old);
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl OneCpu {
    pub fn pin(_pids: &[u32]) -> Result<OneCpu> {
        anyhow::bail!("pinning to one CPU is implemented on Linux only")
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn pins_the_calling_thread_and_restores_it() {
        let before = get(0).unwrap();
        let n_before = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &before) })
            .count();
        {
            let p = OneCpu::pin(&[]).unwrap();
            let now = get(0).unwrap();
            let on: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &now) })
                .collect();
            assert_eq!(on, vec![p.cpu]);
        }
        let after = get(0).unwrap();
        let n_after = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &after) })
            .count();
        assert_eq!(n_before, n_after);
    }

    #[test]
    fn pins_every_thread_of_another_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let before = get(pid as libc::pid_t).unwrap();
        let count = |s: &libc::cpu_set_t| {
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, s) })
                .count()
        };
        {
            let p = OneCpu::pin(&[pid]).unwrap();
            let s = get(pid as libc::pid_t).unwrap();
            assert!(unsafe { libc::CPU_ISSET(p.cpu, &s) });
            assert_eq!(count(&s), 1);
        }
        let after = get(pid as libc::pid_t).unwrap();
        assert_eq!(count(&after), count(&before));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
