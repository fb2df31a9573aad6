//! podium's live board events on named Redis channels: SUBSCRIBE to
//! `__podium__:BOARD` (every change) or `__podium__:BOARD?QUERY` (the
//! HTTP route's query: `top=10`, `members=a,b`, `snapshot=true`,
//! `since=ID`) and each event arrives as a message whose payload is its
//! JSON object (docs/spec.md §4, "Live events"). A board name holding `?`
//! or `%` is written percent-encoded.
//!
//! One forwarder runs per such channel while anyone subscribes to it by
//! name: it holds the board subscription and publishes each event on the
//! channel through the hub, so every subscriber of the channel (and every
//! pattern matching it) gets the same messages in the same order, and the
//! hub's per-subscriber bound applies. A forwarder stops within a second
//! of its channel's last subscriber leaving.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use percent_encoding::percent_decode;

use super::pubsub::Hub;
use podium_core::error::ApiError;
use podium_core::events::Subscription;
use podium_core::keystore::KeyStore;
use podium_core::ops::Subscribe;

/// The channels podium publishes board events on start with this.
pub const PREFIX: &[u8] = b"__podium__:";

/// How often an idle forwarder looks whether its channel still has
/// subscribers.
const CHECK: Duration = Duration::from_secs(1);

/// The channels whose forwarder runs.
#[derive(Default)]
pub struct Forwarders {
    running: Mutex<HashSet<Bytes>>,
}

/// The subscription a channel name stands for.
pub fn parse(channel: &[u8]) -> Result<Subscribe, ApiError> {
    let rest = &channel[PREFIX.len()..];
    let (board, query) = match rest.iter().position(|b| *b == b'?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let board = percent_decode(board)
        .decode_utf8()
        .map_err(|_| ApiError::bad("a board name in a channel must be UTF-8"))?
        .into_owned();
    let query = match query {
        Some(q) => Some(
            std::str::from_utf8(q).map_err(|_| ApiError::bad("a channel's query must be UTF-8"))?,
        ),
        None => None,
    };
    Subscribe::from_query(board, query, None)
}

impl Forwarders {
    /// After a connection subscribed to `channel` (already in the hub):
    /// subscribes to the board now, unless a forwarder runs, so a write
    /// made once SUBSCRIBE has answered is delivered; a refused
    /// subscription is said on the channel (it has no other way to
    /// answer), and a later subscriber tries again.
    pub fn subscribed(
        self: &Arc<Self>,
        hub: &Arc<Hub>,
        store: &Arc<dyn KeyStore>,
        channel: &Bytes,
    ) {
        if !channel.starts_with(PREFIX) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut running = self.running.lock();
        if running.contains(channel) {
            return;
        }
        match parse(channel).and_then(|req| store.subscribe_events(&req)) {
            Ok(sub) => {
                running.insert(channel.clone());
                drop(running);
                let (me, hub, channel) = (self.clone(), hub.clone(), channel.clone());
                rt.spawn(async move { me.forward(hub, channel, sub).await });
            }
            Err(e) => {
                drop(running);
                let msg = serde_json::json!({
                    "type": "error",
                    "error": { "code": e.code.as_str(), "message": e.message },
                });
                hub.publish(channel, msg.to_string().as_bytes());
            }
        }
    }

    /// Stops (forgetting the channel) if nobody subscribes to it any
    /// more. Under the lock a new subscriber takes after joining the hub,
    /// so it either is counted here or starts a forwarder of its own.
    fn done(&self, hub: &Hub, channel: &Bytes) -> bool {
        let mut g = self.running.lock();
        if hub.numsub(channel) == 0 {
            g.remove(channel);
            return true;
        }
        false
    }

    async fn forward(self: Arc<Self>, hub: Arc<Hub>, channel: Bytes, mut sub: Subscription) {
        loop {
            tokio::select! {
                batch = sub.next_batch() => match batch {
                    Some(batch) => {
                        for ev in batch {
                            hub.publish(&channel, ev.json.as_bytes());
                        }
                    }
                    None => {
                        self.running.lock().remove(&channel);
                        return;
                    }
                },
                _ = tokio::time::sleep(CHECK) => {}
            }
            if self.done(&hub, &channel) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_stand_for_subscriptions() {
        let r = parse(b"__podium__:weekly").unwrap();
        assert_eq!(r.board, "weekly");
        assert!(r.filter.everything());
        let r = parse(b"__podium__:a%3Fb?top=3&members=x,y").unwrap();
        assert_eq!(r.board, "a?b");
        assert_eq!(r.filter.top, Some(3));
        assert_eq!(r.filter.members, ["x", "y"]);
        assert!(parse(b"__podium__:b?top=0").is_err());
        assert!(parse(b"__podium__:").is_err());
    }
}
