//! The connection limit of one protocol (`--maxclients`, as Redis's): a
//! count of open connections that each accepted socket must get a place
//! in. A few places beyond the limit are kept for loopback peers, so an
//! operator on the host can still connect (to look, or to raise a limit)
//! while remote clients hold every place. Every protocol's connections
//! also draw on one shared budget of file descriptors ([`Descriptors`]):
//! what the open-file limit leaves after the process's own files. Sharing
//! it, rather than splitting it evenly, lets one protocol serve up to its
//! `maxclients` while the others are idle.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crate::settings::DEFAULT_MAXCLIENTS;

/// Places beyond the limit for loopback peers.
pub const LOOPBACK_SPARE: usize = 4;
/// File descriptors kept for the process's own files (log, snapshots,
/// data directory, Redis backend connections) and for the sockets being
/// refused.
pub const RESERVED_FDS: u64 = 128;

/// The file descriptors every protocol's connections share.
#[derive(Debug)]
pub struct Descriptors {
    max: usize,
    open: AtomicUsize,
}

impl Descriptors {
    /// A budget of `max` connections across all protocols.
    pub fn new(max: usize) -> Arc<Descriptors> {
        Arc::new(Descriptors {
            max,
            open: AtomicUsize::new(0),
        })
    }

    /// Raises the open-file limit as far as the hard limit allows for
    /// `maxclients` connections on each of `protocols` listeners; returns
    /// the connections each protocol takes and the budget they share.
    /// `maxclients` set (`Some`): that many, sharing what the limit leaves
    /// after the process's own files, with a warning (as Redis gives) when
    /// that is less than they need. Not set: the default, or as many as the
    /// limit holds when it holds fewer, said at info — the operator asked
    /// for nothing the limit refuses.
    pub fn fit(maxclients: Option<u32>, protocols: usize) -> (u32, Arc<Descriptors>) {
        let (per, max) = fit_descriptors(maxclients, protocols);
        (per, Descriptors::new(max))
    }

    /// A place for a connection from loopback (`spare`), which may take
    /// the last [`LOOPBACK_SPARE`] places, or from elsewhere.
    fn take(&self, spare: bool) -> bool {
        let limit = if spare {
            self.max
        } else {
            self.max.saturating_sub(LOOPBACK_SPARE)
        };
        if self.open.fetch_add(1, Relaxed) < limit {
            return true;
        }
        self.open.fetch_sub(1, Relaxed);
        false
    }
}

/// The open connections of one protocol.
pub struct ClientGate {
    /// The protocol, for metrics and logs.
    pub what: &'static str,
    max: usize,
    open: AtomicUsize,
    fds: Arc<Descriptors>,
    /// `podium_connections{protocol}`: the open connections.
    gauge: metrics::Gauge,
}

impl std::fmt::Debug for ClientGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGate")
            .field("what", &self.what)
            .field("max", &self.max)
            .field("open", &self.open)
            .field("fds", &self.fds)
            .finish()
    }
}

/// A connection's place; frees it when dropped.
#[derive(Debug)]
pub struct Place(Arc<ClientGate>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
        self.0.fds.open.fetch_sub(1, Relaxed);
        self.0.gauge.decrement(1.0);
    }
}

impl ClientGate {
    /// A protocol of `max` connections with descriptors to spare.
    pub fn new(what: &'static str, max: usize) -> Arc<ClientGate> {
        ClientGate::sharing(what, max, Descriptors::new(usize::MAX))
    }

    /// A protocol of `max` connections that draws on the shared `fds`.
    pub fn sharing(what: &'static str, max: usize, fds: Arc<Descriptors>) -> Arc<ClientGate> {
        let gauge = metrics::gauge!("podium_connections", "protocol" => what);
        // There from the start, so a scrape always shows the same series.
        gauge.set(0.0);
        Arc::new(ClientGate {
            what,
            max,
            open: AtomicUsize::new(0),
            fds,
            gauge,
        })
    }

    /// A place for a connection from `peer`, or `None` when the protocol
    /// or the shared descriptors are full (a loopback peer may take one of
    /// the spare places of either).
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Place> {
        let local = peer.to_canonical().is_loopback();
        let spare = if local { LOOPBACK_SPARE } else { 0 };
        let before = self.open.fetch_add(1, Relaxed);
        if before < self.max + spare && self.fds.take(local) {
            self.gauge.increment(1.0);
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
/// the connections of each of `protocols` listeners, and how many
/// connections across them (their loopback spares included) the
/// descriptors hold beside the process's own files (the last
/// [`LOOPBACK_SPARE`] for loopback only).
fn fit_descriptors(maxclients: Option<u32>, protocols: usize) -> (u32, usize) {
    let asked = maxclients.unwrap_or(DEFAULT_MAXCLIENTS);
    let protocols = protocols.max(1) as u64;
    let all = (u64::from(asked) + LOOPBACK_SPARE as u64) * protocols;
    let want = all + RESERVED_FDS;
    let have = raise_nofile(want);
    let total = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    if have >= want {
        return (asked, total(all));
    }
    let fit = have
        .saturating_sub(RESERVED_FDS)
        .max(LOOPBACK_SPARE as u64 + 1);
    if maxclients.is_none() {
        let per = (fit / protocols)
            .saturating_sub(LOOPBACK_SPARE as u64)
            .max(1);
        let per = u32::try_from(per).unwrap_or(u32::MAX);
        tracing::info!(
            "maxclients {per} per protocol: what the open-file limit of {have} (ulimit -n) \
             holds for {protocols} protocols (the default, {asked}, needs {want}); raise the \
             limit (ulimit -n, LimitNOFILE=) or set --maxclients to change it"
        );
        return (
            per,
            total((u64::from(per) + LOOPBACK_SPARE as u64) * protocols),
        );
    }
    tracing::warn!(
        "maxclients {asked} on each of {protocols} protocols needs {want} open files, \
         but this process may open {have} (ulimit -n): serving at most {fit} clients in \
         all. Raise the limit (ulimit -n, LimitNOFILE=) to serve more."
    );
    (asked, total(fit))
}

/// Raises the soft open-file limit towards `want` (at most the hard
/// limit); returns the limit in force.
// `rlim_t` is u64 here but not on every unix.
#[allow(clippy::unnecessary_cast)]
pub fn raise_nofile(want: u64) -> u64 {
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
        assert_eq!(
            fit_descriptors(Some(10), 3),
            (10, 3 * (10 + LOOPBACK_SPARE))
        );
        // More than any hard limit allows: kept as asked, the shared
        // budget cut down, never to zero.
        let (per, fit) = fit_descriptors(Some(u32::MAX / 4), 3);
        assert_eq!(per, u32::MAX / 4);
        assert!((1..u32::MAX as usize / 4).contains(&fit), "{fit}");
    }

    #[test]
    fn protocols_share_the_descriptors() {
        // Three descriptors (and the loopback spares) for two protocols of
        // three places each: one protocol may take all three while the
        // other is idle.
        let fds = Descriptors::new(3 + LOOPBACK_SPARE);
        let a = ClientGate::sharing("a", 3, fds.clone());
        let b = ClientGate::sharing("b", 3, fds.clone());
        let remote: IpAddr = "10.1.2.3".parse().unwrap();
        let held: Vec<_> = (0..3).map(|_| a.admit(remote).unwrap()).collect();
        assert!(b.admit(remote).is_none(), "the descriptors are spent");
        assert_eq!(b.open(), 0, "a refused place is given back");
        // The spares are loopback's.
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let spares: Vec<_> = (0..LOOPBACK_SPARE).map(|_| b.admit(local)).collect();
        assert!(spares.iter().all(Option::is_some));
        assert!(b.admit(local).is_none(), "the spares are spent too");
        drop((held, spares));
        let _b = b.admit(remote).unwrap();
        assert_eq!(fds.open.load(Relaxed), 1);
    }
}
