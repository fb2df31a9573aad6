//! The CLIENT commands that look past the connection itself (LIST, INFO,
//! KILL, NO-EVICT, REPLY, SETINFO) and RESET, over the listener's registry
//! of connections ([`super::super::clients`]).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::super::command::{lower, Cmd};
use super::super::num::parse_i64;
use super::super::reply::Reply;
use super::{ReplyMode, Session};
use crate::settings::Scope;

/// CLIENT KILL's filters (the new form).
#[derive(Default)]
struct Filter {
    id: Option<u64>,
    addr: Option<Vec<u8>>,
    laddr: Option<Vec<u8>>,
    /// A TYPE other than `normal`: no client of this server has it.
    no_type: bool,
    /// TYPE pubsub (`Some(true)`) or normal (`Some(false)`).
    pubsub: Option<bool>,
    max_age: Option<u64>,
    skip_me: bool,
}

fn quoted(prefix: &str, what: &[u8], suffix: &str) -> Reply {
    let mut msg = format!("ERR {prefix}").into_bytes();
    msg.extend_from_slice(&what[..what.len().min(128)]);
    msg.extend_from_slice(suffix.as_bytes());
    Reply::Error(msg)
}

fn kill_filter(args: &[Bytes]) -> Result<Filter, Reply> {
    let mut f = Filter {
        skip_me: true,
        ..Filter::default()
    };
    if !args.len().is_multiple_of(2) {
        return Err(Reply::syntax());
    }
    for p in args.chunks(2) {
        let (opt, v) = (lower(&p[0]).unwrap_or_default(), &p[1]);
        match opt.as_str() {
            "id" => match parse_i64(v) {
                Some(n) if n > 0 => f.id = Some(n as u64),
                _ => return Err(Reply::err("client-id should be greater than 0")),
            },
            "addr" => f.addr = Some(v.to_vec()),
            "laddr" => f.laddr = Some(v.to_vec()),
            "type" => match lower(v).as_deref() {
                Some("normal") => f.pubsub = Some(false),
                Some("pubsub") => f.pubsub = Some(true),
                Some("master" | "replica" | "slave") => f.no_type = true,
                _ => return Err(quoted("Unknown client type '", v, "'")),
            },
            "user" => {
                if &v[..] != b"default" {
                    return Err(quoted("No such user '", v, "'"));
                }
            }
            "skipme" => match lower(v).as_deref() {
                Some("yes") => f.skip_me = true,
                Some("no") => f.skip_me = false,
                _ => return Err(Reply::syntax()),
            },
            "maxage" => match parse_i64(v) {
                Some(n) if n > 0 => f.max_age = Some(n as u64),
                Some(_) => return Err(Reply::syntax()),
                None => return Err(Reply::err("value is not an integer or out of range")),
            },
            _ => return Err(Reply::syntax()),
        }
    }
    Ok(f)
}

impl Session {
    /// Runs a CLIENT command of this module, or RESET.
    pub(super) fn client_cmd(&mut self, cmd: Cmd) -> Reply {
        let registry = &self.shared.registry;
        match cmd {
            Cmd::ClientList { ids, none, pubsub } => {
                let mut out = String::new();
                if !none {
                    for c in registry.all() {
                        if ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
                            && pubsub.is_none_or(|p| p == c.subscribed())
                        {
                            out.push_str(&c.line());
                            out.push('\n');
                        }
                    }
                }
                Reply::Verbatim(out)
            }
            Cmd::ClientInfo => Reply::Verbatim(format!("{}\n", self.client.client.line())),
            Cmd::ClientKill(args) if args.len() == 1 => {
                // The old form: one address, this client included.
                let target = registry
                    .all()
                    .into_iter()
                    .find(|c| c.addr.as_bytes() == &args[0][..]);
                match target {
                    Some(c) => {
                        c.kill();
                        Reply::OK
                    }
                    None => Reply::err("No such client"),
                }
            }
            Cmd::ClientKill(args) => match kill_filter(&args) {
                Err(r) => r,
                Ok(f) => {
                    let mut killed = 0;
                    for c in registry.all() {
                        let matches = !f.no_type
                            && f.pubsub.is_none_or(|p| p == c.subscribed())
                            && f.id.is_none_or(|id| id == c.id)
                            && f.addr.as_deref().is_none_or(|a| a == c.addr.as_bytes())
                            && f.laddr.as_deref().is_none_or(|a| a == c.laddr.as_bytes())
                            && f.max_age.is_none_or(|age| c.age_secs() >= age)
                            && !(f.skip_me && c.id == self.id);
                        if matches {
                            c.kill();
                            killed += 1;
                        }
                    }
                    Reply::Int(killed)
                }
            },
            Cmd::ClientPause { ms, all } => {
                registry.pause(std::time::Duration::from_millis(ms), all);
                Reply::OK
            }
            Cmd::ClientUnpause => {
                registry.unpause();
                Reply::OK
            }
            Cmd::ClientNoEvict(on) => {
                self.client.client.no_evict.store(on, Ordering::Relaxed);
                Reply::OK
            }
            Cmd::ClientReply(mode) => {
                self.reply_mode = match mode.as_str() {
                    "off" => ReplyMode::Off,
                    "skip" => ReplyMode::Skip,
                    _ => ReplyMode::On,
                };
                Reply::OK
            }
            Cmd::Reset => {
                self.multi = None;
                self.leave_subscriptions();
                self.proto = 2;
                self.reply_mode = ReplyMode::On;
                let c = &self.client.client;
                c.resp.store(2, Ordering::Relaxed);
                c.no_evict.store(false, Ordering::Relaxed);
                *c.name.lock() = None;
                self.select(0);
                // With API keys a reset connection must present one again,
                // as Redis's RESET signs a client back in as the default
                // user.
                if !self.shared.api_keys.is_empty() {
                    self.scope = None;
                    self.rate.set_key(None);
                } else {
                    self.scope = Some(Scope::Admin);
                }
                Reply::Status("RESET")
            }
            _ => unreachable!("not a CLIENT command: {cmd:?}"),
        }
    }

    /// CLIENT SETINFO LIB-NAME / LIB-VER.
    pub(super) fn client_setinfo(&mut self, attr: &str, value: &[u8]) -> Reply {
        if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
            return Reply::err(format!(
                "{} cannot contain spaces, newlines or special characters.",
                attr.to_ascii_uppercase()
            ));
        }
        let c = &self.client.client;
        let slot = if attr == "lib-name" {
            &c.lib_name
        } else {
            &c.lib_ver
        };
        *slot.lock() = (!value.is_empty()).then(|| value.to_vec());
        Reply::OK
    }

    /// Until when CLIENT PAUSE holds the request `args` back (`None`: it
    /// runs now). Inside MULTI only EXEC waits, as in Redis.
    pub fn paused_until(&self, args: &[Bytes]) -> Option<std::time::Instant> {
        if !self.shared.registry.pausing() {
            return None;
        }
        let spec = super::super::command::resolve(args).ok()?;
        let writes = match (&self.multi, spec.name) {
            (Some(m), "exec") => m.queue.iter().any(|(s, _)| s.writes()),
            (Some(_), _) => return None,
            _ => spec.writes(),
        };
        self.shared.registry.paused_until(writes)
    }

    /// Whether this command's reply is sent (CLIENT REPLY).
    pub fn replies(&self) -> bool {
        self.reply_mode == ReplyMode::On
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    fn text(r: R) -> String {
        match r {
            R::Verbatim(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn client_list_info_and_kill() {
        let mut a = session();
        let b = Session::new(a.store.clone(), a.shared.clone());
        assert_eq!(run(&mut a, "client setname alice"), R::OK);
        let list = text(run(&mut a, "client list"));
        assert_eq!(list.lines().count(), 2, "{list}");
        assert!(list.contains(" name=alice "), "{list}");
        let id = format!("id={} ", a.id);
        assert!(text(run(&mut a, "client info")).contains(&id));
        let only = text(run(&mut a, &format!("client list id {}", b.id)));
        assert!(only.starts_with(&format!("id={} ", b.id)) && only.lines().count() == 1);
        assert_eq!(text(run(&mut a, "client list type pubsub")), "");
        assert!(run(&mut a, "client list type nope").is_error());
        assert_eq!(text(run(&mut a, "client list id 0")), "");
        // SKIPME yes (the default) spares the caller.
        let me = format!("client kill id {}", a.id);
        assert_eq!(run(&mut a, &me), R::Int(0));
        assert_eq!(run(&mut a, &format!("client kill id {}", b.id)), R::Int(1));
        assert!(b.client.client.killed());
        assert_eq!(
            run(&mut a, "client kill 1.2.3.4:5"),
            R::err("No such client")
        );
        assert_eq!(
            run(&mut a, "client kill user nobody"),
            R::err("No such user 'nobody'")
        );
        drop(b);
        assert_eq!(text(run(&mut a, "client list")).lines().count(), 1);
    }

    #[test]
    fn client_reply_off_and_skip() {
        let mut s = session();
        run(&mut s, "client reply off");
        assert!(!s.replies());
        run(&mut s, "ping");
        assert!(!s.replies());
        run(&mut s, "client reply on");
        assert!(s.replies());
        run(&mut s, "client reply skip");
        assert!(!s.replies());
        run(&mut s, "ping");
        assert!(!s.replies());
        run(&mut s, "ping");
        assert!(s.replies());
    }

    #[test]
    fn reset_returns_the_connection_to_its_start() {
        let mut s = session();
        run(&mut s, "hello 3 setname x");
        run(&mut s, "multi");
        assert_eq!(run(&mut s, "reset"), R::Status("RESET"));
        assert_eq!(s.proto, 2);
        assert_eq!(run(&mut s, "client getname"), R::Null);
        assert_eq!(run(&mut s, "exec"), R::err("EXEC without MULTI"));
    }
}
