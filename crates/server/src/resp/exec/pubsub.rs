//! Pub/Sub commands on a connection: its subscriptions ([`Subs`], left
//! when the connection ends), SUBSCRIBE and kin with Redis's confirmation
//! frames, PUBLISH, PUBSUB's introspection, and the RESP2 subscribed
//! mode's refusals.

use super::*;
use crate::resp::pubsub::{Hub, Outbox};

/// One connection's subscriptions, in the order made (UNSUBSCRIBE with no
/// names confirms them in that order).
pub struct Subs {
    hub: Arc<Hub>,
    pub outbox: Arc<Outbox>,
    channels: Vec<Bytes>,
    patterns: Vec<Bytes>,
}

impl Subs {
    pub fn new(hub: Arc<Hub>, id: u64) -> Subs {
        Subs {
            hub,
            outbox: Arc::new(Outbox::new(id)),
            channels: Vec::new(),
            patterns: Vec::new(),
        }
    }

    /// Channels and patterns (the count each confirmation carries).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    fn list(&mut self, pattern: bool) -> &mut Vec<Bytes> {
        if pattern {
            &mut self.patterns
        } else {
            &mut self.channels
        }
    }

    /// Leaves every channel and pattern, without confirmations (RESET).
    pub fn leave_all(&mut self) {
        let id = self.outbox.id;
        for c in self.channels.drain(..) {
            self.hub.unsubscribe(&c, false, id);
        }
        for p in self.patterns.drain(..) {
            self.hub.unsubscribe(&p, true, id);
        }
    }
}

impl Drop for Subs {
    fn drop(&mut self) {
        self.leave_all();
    }
}

/// Redis's list of what a RESP2 subscriber may run.
const IN_SUBSCRIBED_MODE: &[&str] = &[
    "ping",
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "sunsubscribe",
    "psubscribe",
    "punsubscribe",
    "quit",
    "reset",
];

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

fn confirm(kind: &str, name: Option<&Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk(kind),
        name.map_or(Reply::Null, Reply::bulk),
        Reply::Int(count as i64),
    ])
}

impl Session {
    /// Whether the connection is in Redis's subscribed mode (any channel
    /// or pattern).
    pub fn subscribed(&self) -> bool {
        self.subs.count() > 0
    }

    /// The queue of messages the connection writes as they come.
    pub fn outbox(&self) -> Arc<Outbox> {
        self.subs.outbox.clone()
    }

    /// Redis's refusal of `spec` in RESP2 subscribed mode.
    pub(super) fn subscribed_refusal(&self, spec: &Spec) -> Option<Reply> {
        if self.proto != 2 || !self.subscribed() || IN_SUBSCRIBED_MODE.contains(&spec.name) {
            return None;
        }
        Some(Reply::err(format!(
            "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET \
             are allowed in this context",
            spec.name
        )))
    }

    /// PING's reply: RESP2 subscribers get Redis's `pong` array.
    pub(super) fn ping(&self, msg: Option<Bytes>) -> Reply {
        if self.proto == 2 && self.subscribed() {
            return Reply::Array(vec![
                Reply::bulk("pong"),
                Reply::bulk(msg.unwrap_or_default()),
            ]);
        }
        match msg {
            Some(m) => Reply::bulk(m),
            None => Reply::Status("PONG"),
        }
    }

    fn subscribe(&mut self, names: Vec<Bytes>, pattern: bool) -> Reply {
        let kind = if pattern { "psubscribe" } else { "subscribe" };
        let mut frames = Vec::with_capacity(names.len());
        for name in names {
            // Kept for the connection's life: not a slice of a request.
            let name = Bytes::copy_from_slice(&name);
            if !self.subs.list(pattern).contains(&name) {
                self.shared
                    .pubsub
                    .subscribe(&name, pattern, &self.subs.outbox);
                self.subs.list(pattern).push(name.clone());
                if !pattern {
                    self.shared
                        .events
                        .subscribed(&self.shared.pubsub, &self.db.root(), &name);
                }
            }
            frames.push(confirm(kind, Some(&name), self.subs.count()));
        }
        self.counted_subs();
        Reply::Seq(frames)
    }

    fn unsubscribe(&mut self, names: Vec<Bytes>, pattern: bool) -> Reply {
        let kind = if pattern {
            "punsubscribe"
        } else {
            "unsubscribe"
        };
        let names = if names.is_empty() {
            self.subs.list(pattern).clone()
        } else {
            names
        };
        if names.is_empty() {
            return Reply::Seq(vec![confirm(kind, None, self.subs.count())]);
        }
        let mut frames = Vec::with_capacity(names.len());
        for name in names {
            let list = self.subs.list(pattern);
            if let Some(i) = list.iter().position(|n| *n == name) {
                list.remove(i);
                self.shared
                    .pubsub
                    .unsubscribe(&name, pattern, self.subs.outbox.id);
            }
            frames.push(confirm(kind, Some(&name), self.subs.count()));
        }
        self.counted_subs();
        Reply::Seq(frames)
    }

    /// Keeps CLIENT LIST's `sub=` / `psub=` current.
    fn counted_subs(&self) {
        let c = &self.client.client;
        c.sub
            .store(self.subs.channels.len() as i64, Ordering::Relaxed);
        c.psub
            .store(self.subs.patterns.len() as i64, Ordering::Relaxed);
    }

    /// RESET's part: every subscription left, unconfirmed.
    pub(super) fn leave_subscriptions(&mut self) {
        self.subs.leave_all();
        self.counted_subs();
    }

    /// SUBSCRIBE, UNSUBSCRIBE, their pattern forms, PUBLISH and PUBSUB.
    pub(super) fn pubsub_cmd(&mut self, c: Cmd) -> Reply {
        let hub = self.shared.pubsub.clone();
        match c {
            Cmd::Subscribe { names, pattern } => self.subscribe(names, pattern),
            Cmd::Unsubscribe { names, pattern } => self.unsubscribe(names, pattern),
            Cmd::Publish(channel, payload) => Reply::Int(hub.publish(&channel, &payload)),
            Cmd::PubsubChannels(pattern) => Reply::Members(hub.channels(pattern.as_deref())),
            Cmd::PubsubNumsub(channels) => Reply::Array(
                channels
                    .iter()
                    .flat_map(|c| [Reply::bulk(c), Reply::Int(hub.numsub(c) as i64)])
                    .collect(),
            ),
            Cmd::PubsubNumpat => Reply::Int(hub.numpat() as i64),
            Cmd::PubsubHelp => Reply::Array(
                PUBSUB_HELP
                    .iter()
                    .map(|l| Reply::StatusText(l.as_bytes().to_vec()))
                    .collect(),
            ),
            _ => unreachable!("not a pub/sub command: {c:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use bytes::BytesMut;

    fn encoded(r: &R, proto: u8) -> String {
        let mut out = BytesMut::new();
        r.encode(proto, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn subscriptions_count_and_end_with_reset_or_the_session() {
        let mut a = session();
        let mut b = Session::new(a.store.clone(), a.shared.clone());
        assert_eq!(
            encoded(&run(&mut a, "subscribe x x y"), 2),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n\
             *3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n\
             *3\r\n$9\r\nsubscribe\r\n$1\r\ny\r\n:2\r\n"
        );
        assert_eq!(
            encoded(&run(&mut a, "psubscribe x*"), 3),
            ">3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:3\r\n"
        );
        // RESP2's subscribed mode.
        assert_eq!(
            encoded(&run(&mut a, "ping"), 2),
            "*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        );
        assert!(run(&mut a, "get k").is_error());
        let list = match run(&mut b, "client list") {
            R::Verbatim(t) => t,
            r => panic!("{r:?}"),
        };
        assert!(list.contains(" flags=P db=0 sub=2 psub=1 "), "{list}");
        let of_type = |b: &mut Session, t: &str| match run(b, &format!("client list type {t}")) {
            R::Verbatim(t) => t,
            r => panic!("{r:?}"),
        };
        let (sub_id, pub_id) = (format!("id={} ", a.id), format!("id={} ", b.id));
        let pubsub = of_type(&mut b, "pubsub");
        assert!(
            pubsub.starts_with(&sub_id) && pubsub.lines().count() == 1,
            "{pubsub}"
        );
        let normal = of_type(&mut b, "normal");
        assert!(
            normal.starts_with(&pub_id) && normal.lines().count() == 1,
            "{normal}"
        );
        assert_eq!(run(&mut b, "publish x m"), R::Int(2));
        let mut out = BytesMut::new();
        assert_eq!(a.outbox().drain(2, &mut out), 2);
        assert_eq!(run(&mut a, "reset"), R::Status("RESET"));
        assert_eq!(run(&mut b, "publish x m"), R::Int(0));
        run(&mut a, "subscribe z");
        assert_eq!(run(&mut b, "publish z m"), R::Int(1));
        // A closed connection's session leaves its channels.
        drop(a);
        assert_eq!(run(&mut b, "publish z m"), R::Int(0));
        assert_eq!(run(&mut b, "pubsub numpat"), R::Int(0));
    }
}
