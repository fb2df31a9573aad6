//! The Redis protocol's open connections as CLIENT LIST, CLIENT INFO and
//! CLIENT KILL see them: each connection registers a [`Client`] for its
//! life (addresses, age, idle time, name, library, protocol, last
//! command, transaction state), and a kill is a flag and a wake-up its
//! connection obeys at its next read. CLIENT PAUSE is kept here too: the
//! connections ask before each command whether it must wait.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::command::COMMANDS;

/// One connection's entry; see the module doc.
pub struct Client {
    pub id: u64,
    /// `ip:port` of the peer and of the local end (empty when unknown:
    /// a session without a socket).
    pub addr: String,
    pub laddr: String,
    created: Instant,
    /// Milliseconds after `created` of the last command.
    last_ms: AtomicU64,
    /// Index in [`COMMANDS`] of the last command, plus one (0: none).
    last_cmd: AtomicUsize,
    pub name: Mutex<Option<Vec<u8>>>,
    pub lib_name: Mutex<Option<Vec<u8>>>,
    pub lib_ver: Mutex<Option<Vec<u8>>>,
    pub resp: AtomicU8,
    /// Commands queued in a MULTI (-1: none open).
    pub multi: AtomicI64,
    /// Channels and patterns subscribed to (`sub=`, `psub=`).
    pub sub: AtomicI64,
    pub psub: AtomicI64,
    pub no_evict: AtomicBool,
    /// The database selected (SELECT).
    pub db: AtomicU8,
    killed: AtomicBool,
    wake: Notify,
    /// Blocked in a blocking pop (CLIENT UNBLOCK may end it).
    blocked: AtomicBool,
    /// CLIENT UNBLOCK's request: 1 as if timed out, 2 with an error.
    unblock: AtomicU8,
    unblocked: Notify,
}

impl Client {
    /// Whether it is subscribed to a channel or pattern (Redis's `pubsub`
    /// client type).
    pub fn subscribed(&self) -> bool {
        self.sub.load(Ordering::Relaxed) + self.psub.load(Ordering::Relaxed) > 0
    }

    fn new(id: u64, addr: String, laddr: String) -> Client {
        Client {
            id,
            addr,
            laddr,
            created: Instant::now(),
            last_ms: AtomicU64::new(0),
            last_cmd: AtomicUsize::new(0),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            resp: AtomicU8::new(2),
            multi: AtomicI64::new(-1),
            sub: AtomicI64::new(0),
            psub: AtomicI64::new(0),
            no_evict: AtomicBool::new(false),
            db: AtomicU8::new(0),
            killed: AtomicBool::new(false),
            wake: Notify::new(),
            blocked: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            unblocked: Notify::new(),
        }
    }

    /// The connection ran the command at `index` of [`COMMANDS`], which
    /// ended at `at`.
    pub fn ran(&self, index: usize, at: Instant) {
        self.last_cmd.store(index + 1, Ordering::Relaxed);
        let ms = at.saturating_duration_since(self.created).as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    pub fn idle_secs(&self) -> u64 {
        let now = self.created.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_ms.load(Ordering::Relaxed)) / 1000
    }

    /// CLIENT KILL: the connection closes at its next chance.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Resolves once the client is killed.
    pub async fn until_killed(&self) {
        while !self.killed() {
            self.wake.notified().await;
        }
    }

    /// The connection blocks (`true`) or no longer does.
    pub fn set_blocked(&self, on: bool) {
        self.unblock.store(0, Ordering::Release);
        self.blocked.store(on, Ordering::Release);
    }

    /// CLIENT UNBLOCK: ends the client's block as a timeout would, or with
    /// an error. Whether it was blocked (a second request finds it no
    /// longer is).
    pub fn unblock(&self, error: bool) -> bool {
        if self
            .blocked
            .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.unblock.store(1 + error as u8, Ordering::Release);
        self.unblocked.notify_one();
        true
    }

    /// Resolves once CLIENT UNBLOCK ended the block: whether with an
    /// error.
    pub async fn until_unblocked(&self) -> bool {
        loop {
            match self.unblock.load(Ordering::Acquire) {
                0 => self.unblocked.notified().await,
                n => return n == 2,
            }
        }
    }

    /// The client's line of CLIENT LIST / CLIENT INFO, Redis 7.0's fields
    /// in its order (buffer sizes are podium's own or 0).
    pub fn line(&self) -> String {
        let opt = |m: &Mutex<Option<Vec<u8>>>| {
            m.lock()
                .as_deref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        let multi = self.multi.load(Ordering::Relaxed);
        let (sub, psub) = (
            self.sub.load(Ordering::Relaxed),
            self.psub.load(Ordering::Relaxed),
        );
        let mut flags = String::new();
        if sub + psub > 0 {
            flags.push('P');
        }
        if multi >= 0 {
            flags.push('x');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let cmd = match self.last_cmd.load(Ordering::Relaxed) {
            0 => "NULL",
            i => COMMANDS[i - 1].name,
        };
        format!(
            "id={} addr={} laddr={} fd=8 name={} age={} idle={} flags={flags} db={} sub={sub} psub={psub} \
             ssub=0 multi={multi} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 \
             oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user=default redir=-1 resp={} \
             lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            opt(&self.name),
            self.age_secs(),
            self.idle_secs(),
            self.db.load(Ordering::Relaxed),
            self.resp.load(Ordering::Relaxed),
            opt(&self.lib_name),
            opt(&self.lib_ver),
        )
    }
}

/// Every open connection of one listener, by id.
#[derive(Default)]
pub struct Clients {
    map: Mutex<BTreeMap<u64, Arc<Client>>>,
    /// CLIENT PAUSE: until when, and whether reads wait too.
    pause: Mutex<Option<(Instant, bool)>>,
    /// Whether `pause` is set (until UNPAUSE, or until it is found over):
    /// every command looks here, and only then at the pause.
    pausing: std::sync::atomic::AtomicBool,
}

/// Removes its client from the registry when dropped.
pub struct Registered {
    pub client: Arc<Client>,
    clients: Arc<Clients>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.clients.map.lock().remove(&self.client.id);
    }
}

impl Clients {
    /// Registers connection `id` between `peer` and `local`.
    pub fn register(
        self: &Arc<Self>,
        id: u64,
        peer: Option<SocketAddr>,
        local: Option<SocketAddr>,
    ) -> Registered {
        let show = |a: Option<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        let client = Arc::new(Client::new(id, show(peer), show(local)));
        self.map.lock().insert(id, client.clone());
        Registered {
            client,
            clients: self.clone(),
        }
    }

    /// Every client, by id.
    pub fn all(&self) -> Vec<Arc<Client>> {
        self.map.lock().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.lock().is_empty()
    }

    /// CLIENT PAUSE: commands (`all`) or writes wait for `d`. A pause
    /// already longer, or stricter, stays as it is, as in Redis.
    pub fn pause(&self, d: std::time::Duration, all: bool) {
        let until = Instant::now() + d;
        let mut p = self.pause.lock();
        self.pausing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        *p = Some(match *p {
            Some((u, a)) if u > Instant::now() => (u.max(until), a || all),
            _ => (until, all),
        });
    }

    pub fn unpause(&self) {
        let mut p = self.pause.lock();
        *p = None;
        self.pausing
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a pause may hold commands back (cheap: no lock).
    pub fn pausing(&self) -> bool {
        self.pausing.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Until when a command must wait (`writes`: whether it may change
    /// data); `None`: it may run now.
    pub fn paused_until(&self, writes: bool) -> Option<Instant> {
        let mut p = self.pause.lock();
        match *p {
            Some((until, _)) if until <= Instant::now() => {
                // Over: as after UNPAUSE, commands stop looking.
                *p = None;
                self.pausing
                    .store(false, std::sync::atomic::Ordering::SeqCst);
                None
            }
            Some((until, all)) if all || writes => Some(until),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_register_for_their_life_and_can_be_killed() {
        let clients = Arc::new(Clients::default());
        let a = clients.register(
            1,
            "127.0.0.1:5000".parse().ok(),
            "127.0.0.1:7379".parse().ok(),
        );
        {
            let _b = clients.register(2, None, None);
            assert_eq!(clients.len(), 2);
        }
        assert_eq!(clients.len(), 1);
        let line = a.client.line();
        assert!(
            line.starts_with("id=1 addr=127.0.0.1:5000 laddr=127.0.0.1:7379 fd=8 name= age=0 idle=0 flags=N db=0 "),
            "{line}"
        );
        assert!(
            line.contains(" cmd=NULL user=default redir=-1 resp=2"),
            "{line}"
        );
        a.client.ran(0, Instant::now());
        *a.client.name.lock() = Some(b"me".to_vec());
        a.client.multi.store(2, Ordering::Relaxed);
        let line = a.client.line();
        assert!(line.contains(" name=me "), "{line}");
        assert!(
            line.contains(" flags=x ") && line.contains(" multi=2 "),
            "{line}"
        );
        assert!(
            line.contains(&format!(" cmd={} ", COMMANDS[0].name)),
            "{line}"
        );
        clients.pause(std::time::Duration::from_secs(60), false);
        assert!(clients.paused_until(true).is_some());
        assert!(clients.paused_until(false).is_none());
        // A shorter or laxer pause does not shorten or relax it.
        clients.pause(std::time::Duration::from_millis(1), true);
        assert!(clients.paused_until(false).is_some());
        clients.unpause();
        assert!(clients.paused_until(true).is_none());
        assert!(!a.client.killed());
        a.client.kill();
        assert!(a.client.killed());
    }
}
