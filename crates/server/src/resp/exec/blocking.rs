//! The blocking pops, BZPOPMIN, BZPOPMAX and BZMPOP: each pops at once
//! when one of its keys has members; otherwise, run by a connection that
//! may wait, it leaves a [`Block`] for the connection
//! ([`crate::resp::conn`]) to wait on, and inside MULTI/EXEC (or a
//! script) it answers a null array at once, as Redis does there.

use std::time::{Duration, Instant};

use bytes::Bytes;
use podium_core::error::ApiError;
use podium_core::keystore::KeyStore;

use super::super::command::Cmd;
use super::super::notify::Events;
use super::super::reply::Reply;
use super::zset::{pop, popped, stored, zmpop_reply};
use super::{done, Run, Session};

/// A blocked command: what to pop once a key has members, and until when
/// to wait (`None`: for ever).
#[derive(Debug)]
pub struct Block {
    pub keys: Vec<Bytes>,
    max: bool,
    count: Option<u64>,
    pub deadline: Option<Instant>,
}

/// Runs a blocking pop (the command in [`Cmd::BZPop`]).
pub(super) fn run(session: &mut Session, store: &dyn KeyStore, cmd: Cmd) -> Result<Run, ApiError> {
    let ev = session.events();
    let Cmd::BZPop {
        keys,
        max,
        count,
        timeout_ms,
    } = cmd
    else {
        unreachable!("not a blocking pop")
    };
    if let Some(run) = pop_first(store, keys.iter().map(|k| &k[..]), max, count, &ev)? {
        return Ok(run);
    }
    if session.may_block {
        let deadline = match timeout_ms {
            0 => None,
            ms => Instant::now().checked_add(Duration::from_millis(ms)),
        };
        session.blocked = Some(Block {
            keys,
            max,
            count,
            deadline,
        });
    }
    Ok(done(Reply::NullArray))
}

/// Pops from the first of `keys` that has members, in Redis's reply
/// shape; `None` when none has. A key of another type met first is
/// WRONGTYPE.
fn pop_first<'a>(
    store: &dyn KeyStore,
    keys: impl Iterator<Item = &'a [u8]>,
    max: bool,
    count: Option<u64>,
    ev: &Events,
) -> Result<Option<Run>, ApiError> {
    for key in keys {
        let Some((entries, len, lsn)) = pop(store, key, max, count.unwrap_or(1))? else {
            continue;
        };
        if entries.is_empty() {
            continue;
        }
        popped(store, ev, key, entries.len(), max);
        let reply = match count {
            Some(_) => zmpop_reply(key, entries, len),
            None => {
                let e = entries.into_iter().next().expect("one entry popped");
                Reply::Array(vec![
                    Reply::Bulk(key.to_vec()),
                    Reply::Bulk(e.member),
                    Reply::Double(stored(e.score, len)),
                ])
            }
        };
        return Ok(Some((reply, lsn)));
    }
    Ok(None)
}

impl Session {
    /// CLIENT UNBLOCK: 1 when client `id` was blocked and now is not.
    pub(super) fn client_unblock(&self, id: i64, error: bool) -> Reply {
        let target = self
            .shared
            .registry
            .all()
            .into_iter()
            .find(|c| c.id as i64 == id);
        Reply::Int(target.is_some_and(|c| c.unblock(error)) as i64)
    }

    /// The command just run blocked: the connection waits on it.
    pub fn take_block(&mut self) -> Option<Block> {
        self.blocked.take()
    }

    /// Serves a blocked client from `keys` (the ones signalled, in order):
    /// the reply once one had members. A key that has none (another client
    /// was faster) or is now of another type leaves the client blocked, as
    /// Redis leaves it.
    pub fn serve_blocked(&mut self, block: &Block, keys: &[&[u8]]) -> Option<Run> {
        let store = self.store.clone();
        // Served after the command began: the setting as it is now.
        let ev = Events::new(&self.shared.notify, self.db.index());
        keys.iter().find_map(|k| {
            pop_first(&*store, std::iter::once(*k), block.max, block.count, &ev)
                .ok()
                .flatten()
        })
    }
}

/// After a blocked client was served from `keys`: a key that still has
/// members wakes the next client blocked on it (call once the served
/// client is no longer blocked).
pub fn pass_on(store: &dyn KeyStore, keys: &[&[u8]]) {
    if store.waiters().blocked() == 0 {
        return;
    }
    for k in keys {
        if matches!(store.zread(k, |b| b.len()), Ok(Some(_))) {
            store.waiters().signal(&store.stored_key(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::resp::command::parse_args;

    #[test]
    fn only_a_command_the_connection_sent_blocks() {
        let mut s = session();
        assert_eq!(run(&mut s, "bzpopmin k 0"), R::NullArray);
        let blocked = s.take_block().expect("blocked");
        assert_eq!(blocked.keys, vec![Bytes::from("k")]);
        assert!(blocked.deadline.is_none(), "0 waits for ever");
        assert!(s.take_block().is_none());
        run(&mut s, "bzpopmax a b 1.5");
        assert!(s.take_block().unwrap().deadline.is_some());
        // Refused arguments do not block.
        assert_eq!(run(&mut s, "bzpopmin k -1"), R::err("timeout is negative"));
        assert!(s.take_block().is_none());
        // Inside MULTI: a null at once.
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "bzmpop 0 1 k min"), R::Status("QUEUED"));
        assert_eq!(run(&mut s, "exec"), R::Array(vec![R::NullArray]));
        assert!(s.take_block().is_none());
        // Run by another command (a script), not by the connection.
        let cmd = parse_args(&[Bytes::from("bzpopmin"), Bytes::from("k"), Bytes::from("0")]);
        assert_eq!(s.run(cmd.unwrap()).0, R::NullArray);
        assert!(s.take_block().is_none());
    }

    #[test]
    fn pops_at_once_in_redis_shapes_and_serves_a_blocked_client() {
        let mut s = session();
        assert_eq!(run(&mut s, "zadd k 1 a 2 b 3 c"), R::Int(3));
        assert_eq!(
            run(&mut s, "bzpopmax nokey k 0"),
            R::Array(vec![b("k"), b("c"), R::Double(3.0)])
        );
        assert_eq!(
            run(&mut s, "bzmpop 0 2 nokey k min count 5"),
            R::Array(vec![
                b("k"),
                R::Array(vec![
                    R::Array(vec![b("a"), R::Double(1.0)]),
                    R::Array(vec![b("b"), R::Double(2.0)]),
                ])
            ])
        );
        assert_eq!(run(&mut s, "hset h f v"), R::Int(1));
        assert!(run(&mut s, "bzpopmin nokey h 0").is_error());
        assert!(s.take_block().is_none());
        run(&mut s, "bzpopmin k 0");
        let blocked = s.take_block().expect("blocked");
        assert_eq!(s.serve_blocked(&blocked, &[b"k"]), None);
        // A key of another type leaves the client blocked.
        assert_eq!(s.serve_blocked(&blocked, &[b"h"]), None);
        assert_eq!(run(&mut s, "zadd k 7 z"), R::Int(1));
        let (reply, _) = s.serve_blocked(&blocked, &[b"h", b"k"]).unwrap();
        assert_eq!(reply, R::Array(vec![b("k"), b("z"), R::Double(7.0)]));
    }
}
