//! The connection limit of one protocol (`--maxclients`, as Redis's): a
//! count of open connections that each accepted socket must get a place
//! in. A few places beyond the limit are kept for loopback peers, so an
//! operator on the host can still connect (to look, or to raise a limit)
//! while remote clients hold every place; and the process keeps file
//! descriptors for its own files ([`fit_descriptors`]).

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Places beyond the limit for loopback peers.
pub const LOOPBACK_SPARE: usize = 4;
/// File descriptors kept for the process's own files (log, snapshots,
/// data directory, Redis backend connections) and for the sockets being
/// refused.
pub const RESERVED_FDS: u64 = 128;

/// The open connections of one protocol.
#[derive(Debug)]
pub struct ClientGate {
    /// The protocol, for metrics and logs.
    pub what: &'static str,
    max: usize,
    open: AtomicUsize,
}

/// A connection's place; frees it when dropped.
#[derive(Debug)]
pub struct Place(Arc<ClientGate>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

impl ClientGate {
    pub fn new(what: &'static str, max: usize) -> Arc<ClientGate> {
        Arc::new(ClientGate {
            what,
            max,
            open: AtomicUsize::new(0),
        })
    }

    /// A place for a connection from `peer`, or `None` when the protocol
    /// is full (a loopback peer may take one of the spare places).
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Place> {
        let limit = if peer.to_canonical().is_loopback() {
            self.max + LOOPBACK_SPARE
        } else {
            self.max
        };
        let before = self.open.fetch_add(1, Relaxed);
        if before < limit {
            return Some(Place(self.clone()));
        }
        self.open.fetch_sub(1, Relaxed);
        metrics::counter!("podium_rejected_connections_total", "protocol" => self.what)
            .increment(1);
        None
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Relaxed)
    }
}

/// Raises the open-file limit as far as the hard limit allows and returns
/// the `maxclients` that fits in it for `protocols` listeners: what was
/// asked, or less (with a warning, as Redis does) when the descriptors
/// cannot hold that many connections and the process's own files.
pub fn fit_descriptors(maxclients: u32, protocols: usize) -> u32 {
    let spare = (LOOPBACK_SPARE * protocols) as u64 + RESERVED_FDS;
    let want = u64::from(maxclients) * protocols.max(1) as u64 + spare;
    let have = raise_nofile(want);
    if have >= want {
        return maxclients;
    }
    let fit = (have.saturating_sub(spare) / protocols.max(1) as u64).max(1);
    let fit = u32::try_from(fit).unwrap_or(u32::MAX).min(maxclients);
    tracing::warn!(
        "maxclients {maxclients} per protocol needs {want} open files, but this process may \
         open {have} (ulimit -n): serving at most {fit} clients per protocol. Raise the \
         limit (ulimit -n, LimitNOFILE=) to serve more."
    );
    fit
}

/// Raises the soft open-file limit towards `want` (at most the hard
/// limit); returns the limit in force.
// `rlim_t` is u64 here but not on every unix.
#[allow(clippy::unnecessary_cast)]
fn raise_nofile(want: u64) -> u64 {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write the struct given.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return u64::MAX;
            }
            let cur = lim.rlim_cur as u64;
            if cur >= want {
                return cur;
            }
            let target = want.min(lim.rlim_max as u64);
            if target > cur {
                let new = libc::rlimit {
                    rlim_cur: target as libc::rlim_t,
                    rlim_max: lim.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                    return target;
                }
            }
            cur
        }
    }
    #[cfg(not(unix))]
    {
        let _ = want;
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_counted_and_loopback_has_spares() {
        let gate = ClientGate::new("test", 2);
        let remote: IpAddr = "10.1.2.3".parse().unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let a = gate.admit(remote).unwrap();
        let _b = gate.admit(remote).unwrap();
        assert!(gate.admit(remote).is_none(), "full");
        let spares: Vec<_> = (0..LOOPBACK_SPARE).map(|_| gate.admit(local)).collect();
        assert!(spares.iter().all(Option::is_some));
        assert!(gate.admit(local).is_none(), "spares used up too");
        assert!(gate.admit("::ffff:127.0.0.1".parse().unwrap()).is_none());
        assert_eq!(gate.open(), 2 + LOOPBACK_SPARE);
        drop(spares);
        drop(a);
        assert_eq!(gate.open(), 1);
        assert!(gate.admit(remote).is_some(), "a place was freed");
    }

    #[test]
    fn maxclients_fits_the_descriptors() {
        // Small enough for any machine: asked for, given.
        assert_eq!(fit_descriptors(10, 3), 10);
        // More than any hard limit allows: cut down, never to zero.
        let fit = fit_descriptors(u32::MAX / 4, 3);
        assert!((1..u32::MAX / 4).contains(&fit), "{fit}");
    }
}
