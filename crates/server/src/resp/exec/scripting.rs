//! Scripts on a connection: EVAL and its kin run a script with every
//! other client excluded (one transaction, so its writes are logged as one
//! unit and acknowledged once durable), each command the script sends
//! passing the client's own checks and command path; SCRIPT's
//! subcommands; and the `BUSY` answer other connections get while a
//! script runs past the time limit.

use super::*;
use crate::resp::script::BUSY;
use podium_core::wait::{off_workers, spin};

/// Commands Redis refuses inside a script (its `noscript` flag), by name:
/// transactions, scripts, connection state, pub/sub and blocking commands.
const NOT_IN_SCRIPTS: &[&str] = &[
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "script",
    "fcall",
    "fcall_ro",
    "function",
    "auth",
    "hello",
    "quit",
    "reset",
    "client",
    "config",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
    "ssubscribe",
    "sunsubscribe",
    "blpop",
    "brpop",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "wait",
    "monitor",
    "shutdown",
];

/// Commands answered while another connection's script runs past the time
/// limit: those of Redis 7.0's `allow-busy` flag that podium has (none
/// touches the store). A connection opened meanwhile can authenticate
/// and send SCRIPT KILL; a pipelined transaction is not half refused.
const ALLOW_BUSY: &[&str] = &[
    "auth",
    "hello",
    "multi",
    "discard",
    "quit",
    "reset",
    "script|kill",
];

impl Session {
    /// While another connection's script runs: waits for it up to the
    /// time limit (as Redis, busy running it, answers no one), then
    /// answers `BUSY` to all but the [`ALLOW_BUSY`] commands. A connection
    /// not authenticated yet gets what it would get anyway (`NOAUTH`:
    /// refused before the store is reached).
    pub(super) fn busy_refusal(&self, args: &[Bytes]) -> Option<Reply> {
        let scripts = &self.shared.scripts;
        let running = &scripts.running;
        let free = || running.runner().is_none_or(|id| id == self.id);
        loop {
            // Most scripts end within microseconds.
            if spin(|| free().then_some(())).is_some() {
                return None;
            }
            let elapsed = running.elapsed();
            if elapsed >= scripts.busy_after {
                let allowed = !self.authenticated()
                    || command::resolve(args).is_ok_and(|spec| ALLOW_BUSY.contains(&spec.name));
                return (!allowed).then(|| Reply::coded(BUSY));
            }
            off_workers(|| running.wait_end(scripts.busy_after - elapsed));
        }
    }

    /// EVAL, EVALSHA, their `_RO` forms, and SCRIPT's subcommands.
    pub(super) fn script_cmd(&mut self, c: Cmd) -> Run {
        let scripts = self.shared.scripts.clone();
        match c {
            Cmd::ScriptKill => done(scripts.running.kill()),
            Cmd::ScriptFlush => {
                scripts.flush();
                done(Reply::OK)
            }
            Cmd::ScriptExists(shas) => done(match scripts.engine() {
                Ok(e) => Reply::Array(
                    shas.iter()
                        .map(|s| Reply::Int(i64::from(e.exists(s))))
                        .collect(),
                ),
                Err(r) => r,
            }),
            Cmd::ScriptLoad(body) => done(match scripts.engine().and_then(|mut e| e.load(&body)) {
                Ok((sha, _)) => Reply::bulk(sha),
                Err(r) => r,
            }),
            Cmd::Eval {
                script,
                by_sha,
                read_only,
                keys,
                args,
            } => {
                let store = self.store.clone();
                let writes = if read_only {
                    Writes::none()
                } else {
                    Writes::Any
                };
                let mut lsn = 0;
                // The gate first, then the engine: a transaction holding
                // the gate may run a script.
                // A script's SELECT is its own: the caller's database is
                // back when it ends (Redis 7).
                let caller_db = self.selected();
                let reply = store.atomically(writes, || {
                    let mut engine = match scripts.engine() {
                        Ok(e) => e,
                        Err(r) => return r,
                    };
                    let (sha, f) = if by_sha {
                        let sha = String::from_utf8_lossy(&script).to_ascii_lowercase();
                        match engine.cached(&sha) {
                            Some(f) => (sha, f),
                            None => {
                                return Reply::coded(
                                    "NOSCRIPT No matching script. Please use EVAL.",
                                )
                            }
                        }
                    } else {
                        match engine.load(&script) {
                            Ok(x) => x,
                            Err(r) => return r,
                        }
                    };
                    struct End<'a>(&'a crate::resp::script::Running);
                    impl Drop for End<'_> {
                        fn drop(&mut self) {
                            self.0.end();
                        }
                    }
                    let running = scripts.running.clone();
                    running.begin(self.id);
                    let _end = End(&running);
                    engine.run(&running, &sha, f, &keys, &args, |cmd| {
                        let (r, l) = self.script_command(cmd, read_only);
                        lsn = lsn.max(l);
                        r
                    })
                });
                self.select(caller_db);
                (reply, lsn)
            }
            other => done(Reply::err(format!("not a scripting command: {other:?}"))),
        }
    }

    /// A command a script sends (`redis.call`), with Redis's refusals
    /// for scripts, then the client's own checks and command path.
    fn script_command(&mut self, args: &[Bytes], read_only: bool) -> Run {
        let spec = match lookup(args) {
            Ok(s) => s,
            Err(Reply::Error(e)) if e.starts_with(b"ERR wrong number of arguments") => {
                return done(Reply::err(
                    "Wrong number of args calling Redis command from script",
                ))
            }
            Err(_) => return done(Reply::err("Unknown Redis command called from script")),
        };
        let base = spec.name.split('|').next().unwrap_or(spec.name);
        if NOT_IN_SCRIPTS.contains(&base) {
            return done(Reply::err("This Redis command is not allowed from script"));
        }
        if let Some(needed) = spec.access.least() {
            if !self.scope.is_some_and(|s| s.allows(needed)) {
                return done(Reply::coded(format!(
                    "NOPERM this user has no permissions to run the '{}' command",
                    spec.name
                )));
            }
        }
        if let Some(r) = self.key_refusal(spec, args) {
            return done(r);
        }
        // PUBLISH writes nothing, but Redis counts it a write here (its
        // `may-replicate` flag).
        if read_only && (spec.writes() || spec.name == "publish") {
            return done(Reply::err(
                "Write commands are not allowed from read-only scripts.",
            ));
        }
        if spec.deny_oom() && memory::full() {
            return done(Reply::coded(OOM));
        }
        if spec.writes() {
            self.shared.scripts.running.mark_written();
        }
        self.run_spec(spec, args)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::BUSY;
    use crate::resp::script::Scripts;

    /// A connection opened while another's script runs past the limit can
    /// still authenticate, say HELLO, start and drop a transaction, and
    /// send SCRIPT KILL (Redis's allow-busy commands); the rest is BUSY.
    #[test]
    fn allow_busy_commands_are_answered_while_a_script_runs() {
        let mut shared = Shared::new(Vec::new(), 7379);
        shared.scripts = Arc::new(Scripts::new(Duration::from_millis(1)));
        let shared = Arc::new(shared);
        let mut s = Session::new(Arc::new(Service::in_memory()), shared.clone());
        shared.scripts.running.begin(s.id + 1000);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(run(&mut s, "ping"), R::coded(BUSY));
        assert_eq!(run(&mut s, "zcard z"), R::coded(BUSY));
        let auth = run(&mut s, "auth somekey");
        assert!(auth != R::coded(BUSY) && auth.is_error(), "{auth:?}");
        let hello = run(&mut s, "hello 3");
        assert!(hello != R::coded(BUSY) && !hello.is_error(), "{hello:?}");
        assert_eq!(run(&mut s, "multi"), R::OK);
        assert_eq!(run(&mut s, "zcard z"), R::coded(BUSY));
        assert_eq!(run(&mut s, "discard"), R::OK);
        assert_eq!(run(&mut s, "reset"), R::Status("RESET"));
        assert_eq!(run(&mut s, "script kill"), R::OK);
        shared.scripts.running.end();
        assert_eq!(run(&mut s, "ping"), R::Status("PONG"));
    }
}
