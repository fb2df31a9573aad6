//! Redis's keyspace notifications: the `notify-keyspace-events` flags
//! (parsed and printed as Redis 7.0 does), and the [`Notifier`] that
//! publishes `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`
//! messages on the listener's Pub/Sub hub when they are on.
//!
//! The flags live in one atomic: with them empty (the default) a command
//! pays that one load and nothing else. Commands tell what they did
//! through [`Events`], which holds the flags as loaded when the command
//! began, so one command's events all follow one setting.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::command::Spec;
use super::pubsub::Hub;
use podium_core::keystore::{database, ExpirySink, KeyStore};

pub use podium_core::keystore::notify::*;

/// The keys of `args` (a request for `spec`) that Redis 7.0 looks up for
/// reading, where a missing one publishes `keymiss`: every key of a
/// read-only command but those OBJECT, MEMORY and scripts name without a
/// lookup, and the sources of the writes that read one (the STORE forms,
/// COPY, GETSET, GETDEL, GETEX, SET … GET).
pub fn read_keys<'a>(spec: &Spec, args: &'a [Bytes]) -> Vec<&'a [u8]> {
    let arg = |i: usize| args.get(i).map(|a| &a[..]);
    match spec.name {
        "zunionstore" | "zinterstore" | "zdiffstore" => {
            // The sources after the destination and their count.
            let n = arg(2)
                .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            args.iter().skip(3).take(n).map(|a| &a[..]).collect()
        }
        "zrangestore" => arg(2).into_iter().collect(),
        // (MOVE looks its key up without a key-miss event.)
        "copy" | "getset" | "getdel" | "getex" => arg(1).into_iter().collect(),
        "set" if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) => {
            arg(1).into_iter().collect()
        }
        n if n.starts_with("object") || n.starts_with("memory") || n.starts_with("eval") => {
            Vec::new()
        }
        _ if !spec.writes() => spec.key_args(args).collect(),
        _ => Vec::new(),
    }
}

/// The listener's `notify-keyspace-events` and the hub its messages go to.
pub struct Notifier {
    flags: AtomicU32,
    hub: Arc<Hub>,
}

impl Notifier {
    pub fn new(hub: Arc<Hub>) -> Notifier {
        Notifier {
            flags: AtomicU32::new(0),
            hub,
        }
    }

    /// The flags now (the one load a command pays).
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed)
    }

    /// `notifyKeyspaceEvent`: the keyspace message, then the keyevent
    /// one, each if its flag is on, when `class` is on in `flags`.
    fn publish(&self, flags: u32, class: u32, event: &str, key: &[u8], db: u8) {
        if flags & class == 0 {
            return;
        }
        if flags & KEYSPACE != 0 {
            let mut chan = format!("__keyspace@{db}__:").into_bytes();
            chan.extend_from_slice(key);
            self.hub.publish(&chan, event.as_bytes());
        }
        if flags & KEYEVENT != 0 {
            let chan = format!("__keyevent@{db}__:{event}");
            self.hub.publish(chan.as_bytes(), key);
        }
    }
}

impl ExpirySink for Notifier {
    fn expired(&self, stored: &[u8]) {
        let flags = self.flags();
        if flags & EXPIRED == 0 {
            return;
        }
        if let Some((db, key)) = database::decode(stored) {
            self.publish(flags, EXPIRED, "expired", key, db);
        }
    }
}

/// One command's view of the notifier: the flags as the command began and
/// the database it runs in.
pub struct Events<'a> {
    notifier: &'a Notifier,
    flags: u32,
    pub db: u8,
}

impl<'a> Events<'a> {
    pub fn new(notifier: &'a Notifier, db: u8) -> Events<'a> {
        Events::with_flags(notifier, notifier.flags(), db)
    }

    /// With the flags already loaded for the command.
    pub fn with_flags(notifier: &'a Notifier, flags: u32, db: u8) -> Events<'a> {
        Events {
            notifier,
            flags,
            db,
        }
    }

    /// Whether any event would be published (neither K nor E: none).
    pub fn on(&self) -> bool {
        self.flags & (KEYSPACE | KEYEVENT) != 0 && self.flags & !(KEYSPACE | KEYEVENT) != 0
    }

    /// Whether events of `class` are published.
    pub fn wants(&self, class: u32) -> bool {
        self.flags & class != 0 && self.flags & (KEYSPACE | KEYEVENT) != 0
    }

    /// Publishes `event` of `class` for `key` of this database.
    pub fn emit(&self, class: u32, event: &str, key: &[u8]) {
        self.emit_in(self.db, class, event, key);
    }

    /// Publishes `event` for `key` of database `db`.
    pub fn emit_in(&self, db: u8, class: u32, event: &str, key: &[u8]) {
        if self.wants(class) {
            self.notifier.publish(self.flags, class, event, key, db);
        }
    }

    /// Before a write that may create `key`: whether it exists, when new
    /// key events are wanted (else `None`, and nothing is looked up).
    pub fn before(&self, store: &dyn KeyStore, key: &[u8]) -> Option<bool> {
        self.wants(NEW).then(|| store.key_type(key).is_some())
    }

    /// After that write: `new` if the key did not exist and now does
    /// (Redis's `dbAdd`, which publishes before the command's own event).
    pub fn created(&self, store: &dyn KeyStore, key: &[u8], before: Option<bool>) {
        if before == Some(false) && store.key_type(key).is_some() {
            self.emit(NEW, "new", key);
        }
    }

    /// After a removal from `key`: `del` if that emptied it (Redis deletes
    /// an emptied set or hash).
    pub fn emptied(&self, store: &dyn KeyStore, key: &[u8]) {
        if self.wants(GENERIC) && store.key_type(key).is_none() {
            self.emit(GENERIC, "del", key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_publish_keyspace_then_keyevent_when_on() {
        use super::super::pubsub::Outbox;
        use bytes::{Bytes, BytesMut};
        let hub = Arc::new(Hub::default());
        let n = Notifier::new(hub.clone());
        let o = Arc::new(Outbox::new(1));
        hub.subscribe(&Bytes::from_static(b"__key*__:*"), true, &o);
        let drained = || {
            let mut out = BytesMut::new();
            o.drain(2, &mut out);
            String::from_utf8_lossy(&out).into_owned()
        };
        Events::new(&n, 0).emit(ZSET, "zadd", b"k");
        assert_eq!(drained(), "");
        n.set_flags(parse_flags(b"Kz").unwrap());
        Events::new(&n, 3).emit(ZSET, "zadd", b"k");
        Events::new(&n, 3).emit(GENERIC, "del", b"k");
        assert_eq!(
            drained(),
            "*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$16\r\n__keyspace@3__:k\r\n$4\r\nzadd\r\n"
        );
        n.set_flags(parse_flags(b"KEA").unwrap());
        n.expired(b"\x01\x05k");
        assert_eq!(
            drained(),
            "*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$16\r\n__keyspace@5__:k\r\n$7\r\nexpired\r\n\
             *4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$22\r\n__keyevent@5__:expired\r\n$1\r\nk\r\n"
        );
    }
}
