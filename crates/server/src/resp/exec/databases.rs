//! Redis's numbered databases on a connection: SELECT, FLUSHDB, SWAPDB,
//! MOVE and INFO's keyspace lines. The session runs every command on the
//! [`Database`] it selected; the store has one keyspace, in which each
//! database is a namespace (`podium_core::keystore::database`).

use super::*;
use podium_core::keystore::database::{self, Database, DATABASES, MARK};

/// Parses FLUSHDB, SWAPDB and MOVE (their indexes are checked as they
/// run, in Redis's order).
pub(in crate::resp) fn parse(name: &str, a: &[Bytes]) -> Result<Cmd, Reply> {
    Ok(match name {
        "flushdb" => match a.len() {
            1 => Cmd::FlushDb,
            2 if a[1].eq_ignore_ascii_case(b"sync") || a[1].eq_ignore_ascii_case(b"async") => {
                Cmd::FlushDb
            }
            _ => return Err(Reply::syntax()),
        },
        "swapdb" => Cmd::SwapDb(a[1].clone(), a[2].clone()),
        "move" => Cmd::Move {
            key: a[1].clone(),
            db: a[2].clone(),
        },
        other => return Err(Reply::err(format!("not a database command: {other}"))),
    })
}

/// The key that `spec` with `args` writes in another database, and that
/// database: MOVE's key, COPY's destination with DB. `None` for any other
/// command, or an index that does not parse (the command is refused).
pub(in crate::resp) fn other_database_key<'a>(
    spec: &Spec,
    args: &'a [Bytes],
) -> Option<(u8, &'a [u8])> {
    match spec.name {
        "move" => {
            let db = database::parse_index(args.get(2)?).ok()?;
            Some((db, args.get(1)?))
        }
        "copy" => {
            let at = args
                .iter()
                .skip(3)
                .position(|a| a.eq_ignore_ascii_case(b"db"))?;
            let db = database::parse_index(args.get(3 + at + 1)?).ok()?;
            Some((db, args.get(2)?))
        }
        _ => None,
    }
}

/// `getIntFromObjectOrReply` (its own message, or `msg` for any value
/// that is no `int`), then the database range check.
fn index(arg: &[u8], msg: Option<&str>) -> Result<u8, Reply> {
    match database::parse_index(arg) {
        Ok(i) => Ok(i),
        Err(e) if e.starts_with("DB index") => Err(Reply::err(e)),
        Err(e) => Err(Reply::err(msg.unwrap_or(e))),
    }
}

impl Session {
    /// Makes database `db` the connection's.
    pub(super) fn select(&mut self, db: u8) {
        if db != self.db.index() {
            self.db = Arc::new(Database::new(self.db.store().clone(), db));
            self.store = self.db.clone();
        }
        self.client.client.db.store(db, Ordering::Relaxed);
    }

    /// The database selected and its store, to put back after a script
    /// that may SELECT (Redis 7 restores the caller's database).
    pub(super) fn selected(&self) -> u8 {
        self.db.index()
    }

    pub(super) fn database_cmd(&mut self, cmd: Cmd) -> Result<Run, ApiError> {
        Ok(match cmd {
            Cmd::Select(arg) => done(match index(&arg, None) {
                Ok(db) => {
                    self.select(db);
                    Reply::OK
                }
                Err(r) => r,
            }),
            Cmd::FlushDb => (Reply::OK, self.db.flushdb()?),
            Cmd::SwapDb(a, b) => {
                let a = match index(&a, Some("invalid first DB index")) {
                    Ok(a) => a,
                    Err(r) => return Ok(done(r)),
                };
                let b = match index(&b, Some("invalid second DB index")) {
                    Ok(b) => b,
                    Err(r) => return Ok(done(r)),
                };
                (Reply::OK, self.db.swap_db(a, b)?)
            }
            Cmd::Move { key, db } => {
                let to = match index(&db, None) {
                    Ok(to) => to,
                    Err(r) => return Ok(done(r)),
                };
                if to == self.db.index() {
                    return Ok(done(Reply::err(
                        "source and destination objects are the same",
                    )));
                }
                let (moved, lsn) = self.db.move_key(&key, to)?;
                if moved {
                    let ev = self.events();
                    ev.emit_in(to, notify::NEW, "new", &key);
                    ev.emit(notify::GENERIC, "move_from", &key);
                    ev.emit_in(to, notify::GENERIC, "move_to", &key);
                }
                (Reply::Int(i64::from(moved)), lsn)
            }
            Cmd::Copy {
                src,
                dst,
                replace,
                db: Some(to),
            } => {
                if to == self.db.index() && src == dst {
                    return Ok(done(Reply::err(
                        "source and destination objects are the same",
                    )));
                }
                let (copied, lsn) = self.db.copy_to(&src, &dst, to, replace)?;
                if copied {
                    let ev = self.events();
                    ev.emit_in(to, notify::NEW, "new", &dst);
                    ev.emit_in(to, notify::GENERIC, "copy_to", &dst);
                }
                (Reply::Int(i64::from(copied)), lsn)
            }
            other => done(Reply::err(format!("not a database command: {other:?}"))),
        })
    }

    /// INFO's keyspace section: a line for each database with keys.
    pub(super) fn keyspace_info(&self) -> String {
        let root = self.db.store();
        let mut s = "# Keyspace\r\n".to_string();
        let line = |s: &mut String, db: u8, store: &dyn KeyStore| {
            let n = store.dbsize();
            if n > 0 {
                let e = store.expiring_keys();
                let ttl = store.avg_ttl_ms();
                s.push_str(&format!("db{db}:keys={n},expires={e},avg_ttl={ttl}\r\n"));
            }
        };
        // Mostly there is only database 0: its keys are all keys.
        if root.dbsize_where(&|n| n.first() == Some(&MARK)) == 0 {
            line(&mut s, 0, &**root);
            return s;
        }
        for db in 0..DATABASES {
            line(&mut s, db, &Database::new(root.clone(), db));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn each_database_has_its_own_keys() {
        let mut s = session();
        assert_eq!(run(&mut s, "set k zero"), R::OK);
        assert_eq!(run(&mut s, "select 15"), R::OK);
        assert_eq!(run(&mut s, "get k"), R::Null);
        assert_eq!(run(&mut s, "zadd k 1 m"), R::Int(1));
        assert_eq!(run(&mut s, "dbsize"), R::Int(1));
        assert!(s.client.client.line().contains(" db=15 "));
        assert_eq!(
            run(&mut s, "move k 15"),
            R::err("source and destination objects are the same")
        );
        assert_eq!(run(&mut s, "move k 0"), R::Int(0));
        assert_eq!(run(&mut s, "move k 3"), R::Int(1));
        assert_eq!(run(&mut s, "move k 16"), R::err("DB index is out of range"));
        assert_eq!(
            run(&mut s, "move k x"),
            R::err("value is not an integer or out of range")
        );
        assert_eq!(run(&mut s, "swapdb x 1"), R::err("invalid first DB index"));
        assert_eq!(run(&mut s, "swapdb 1 x"), R::err("invalid second DB index"));
        assert_eq!(
            run(&mut s, "swapdb 1 16"),
            R::err("DB index is out of range")
        );
        assert_eq!(run(&mut s, "swapdb 0 3"), R::OK);
        assert_eq!(run(&mut s, "select 0"), R::OK);
        assert_eq!(run(&mut s, "type k"), R::Status("zset"));
        let ks = s.keyspace_info();
        assert_eq!(
            ks,
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n"
        );
        assert_eq!(run(&mut s, "flushdb"), R::OK);
        assert_eq!(
            s.keyspace_info(),
            "# Keyspace\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n"
        );
        assert_eq!(run(&mut s, "select 3"), R::OK);
        assert_eq!(run(&mut s, "reset"), R::Status("RESET"));
        assert_eq!(run(&mut s, "get k"), R::Null);
        assert_eq!(run(&mut s, "flushall"), R::OK);
        assert_eq!(s.keyspace_info(), "# Keyspace\r\n");
    }
}
