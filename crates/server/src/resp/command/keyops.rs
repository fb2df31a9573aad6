//! Parsing of the blocking pops (BZPOPMIN, BZPOPMAX, BZMPOP), the
//! whole-key moves (RENAME, RENAMENX, COPY) and the key introspection
//! commands (OBJECT, MEMORY USAGE), and CLIENT UNBLOCK, with Redis 7.0's
//! errors in its order of checks.

use bytes::Bytes;

use super::{eq, int, zmpop, Cmd, Reply};
use podium_core::keystore::database;
use podium_core::score::strtod;

/// What OBJECT reports of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectSub {
    Encoding,
    RefCount,
    IdleTime,
    Freq,
}

/// The commands of this module, by their table name (`spec.name`).
pub const NAMES: [&str; 14] = [
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    "rename",
    "renamenx",
    "copy",
    "object|encoding",
    "object|refcount",
    "object|idletime",
    "object|freq",
    "object|help",
    "memory|usage",
    "memory|help",
    "client|unblock",
];

/// Parses one of [`NAMES`].
pub fn parse(name: &str, a: &[Bytes]) -> Result<Cmd, Reply> {
    Ok(match name {
        "bzpopmin" | "bzpopmax" => {
            let timeout_ms = timeout(&a[a.len() - 1])?;
            Cmd::BZPop {
                keys: a[1..a.len() - 1].to_vec(),
                max: name == "bzpopmax",
                count: None,
                timeout_ms,
            }
        }
        "bzmpop" => {
            // ZMPOP's arguments, one further on, are checked before the
            // timeout (`zmpopGenericCommand`).
            let Cmd::ZMPop { keys, max, count } = zmpop(&a[1..])? else {
                unreachable!("zmpop parses to ZMPop")
            };
            let timeout_ms = timeout(&a[1])?;
            Cmd::BZPop {
                keys,
                max,
                count: Some(count),
                timeout_ms,
            }
        }
        "rename" | "renamenx" => Cmd::Rename {
            src: a[1].clone(),
            dst: a[2].clone(),
            nx: name == "renamenx",
        },
        "copy" => copy(a)?,
        "object|encoding" => object(ObjectSub::Encoding, a),
        "object|refcount" => object(ObjectSub::RefCount, a),
        "object|idletime" => object(ObjectSub::IdleTime, a),
        "object|freq" => object(ObjectSub::Freq, a),
        "object|help" => Cmd::ObjectHelp,
        "memory|usage" => {
            // `memoryCommand`: SAMPLES takes a count, 0 meaning all; the
            // estimate here does not sample, so the count is only checked.
            let mut j = 3;
            while j < a.len() {
                if eq(&a[j], "samples") && j + 1 < a.len() {
                    if int(&a[j + 1])? < 0 {
                        return Err(Reply::syntax());
                    }
                    j += 2;
                } else {
                    return Err(Reply::syntax());
                }
            }
            Cmd::MemoryUsage(a[2].clone())
        }
        "memory|help" => Cmd::MemoryHelp,
        "client|unblock" => client_unblock(a)?,
        _ => unreachable!("not a command of this module: {name}"),
    })
}

/// `clientCommand`'s UNBLOCK: three or four arguments, the reason
/// checked before the id.
fn client_unblock(a: &[Bytes]) -> Result<Cmd, Reply> {
    if a.len() > 4 {
        // The subcommand as the client spelled it.
        let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        msg.extend_from_slice(&a[1]);
        msg.extend_from_slice(b"'. Try CLIENT HELP.");
        return Err(Reply::Error(msg));
    }
    let error = match a.get(3) {
        None => false,
        Some(r) if eq(r, "timeout") => false,
        Some(r) if eq(r, "error") => true,
        Some(_) => {
            return Err(Reply::err(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    Ok(Cmd::ClientUnblock {
        id: int(&a[2])?,
        error,
    })
}

fn object(sub: ObjectSub, a: &[Bytes]) -> Cmd {
    Cmd::Object {
        sub,
        key: a[2].clone(),
    }
}

/// `copyCommand`: DB takes an index (checked as SELECT's), REPLACE
/// replaces; then the same key in the same database is refused before any
/// lookup (with DB, where the session knows its database).
fn copy(a: &[Bytes]) -> Result<Cmd, Reply> {
    let mut replace = false;
    let mut db = None;
    let mut j = 3;
    while j < a.len() {
        if eq(&a[j], "replace") {
            replace = true;
        } else if eq(&a[j], "db") && j + 1 < a.len() {
            db = Some(database::parse_index(&a[j + 1]).map_err(Reply::err)?);
            j += 1;
        } else {
            return Err(Reply::syntax());
        }
        j += 1;
    }
    if db.is_none() && a[1] == a[2] {
        return Err(Reply::err("source and destination objects are the same"));
    }
    Ok(Cmd::Copy {
        src: a[1].clone(),
        dst: a[2].clone(),
        replace,
        db,
    })
}

/// `getTimeoutFromObjectOrReply` in seconds: a long double (the whole
/// argument, no leading space, not NaN) times 1000, cut to an integer as
/// C casts it (a value out of range becomes the most negative integer, so
/// `inf` is negative). Milliseconds; 0 waits for ever.
pub fn timeout(a: &[u8]) -> Result<u64, Reply> {
    let bad = || Reply::err("timeout is not a float or out of range");
    // `string2ld`'s buffer, and its refusal of leading space.
    if a.is_empty() || a.len() >= 5 * 1024 || a[0].is_ascii_whitespace() || a[0] == 0x0b {
        return Err(bad());
    }
    let (v, n, _) = strtod(a);
    if n != a.len() || v.is_nan() {
        return Err(bad());
    }
    let ms = v * 1000.0;
    // (`i64::MAX as f64` is 2^63, itself out of range.)
    let ms = if ms.is_finite() && ms >= i64::MIN as f64 && ms < i64::MAX as f64 {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err(Reply::err("timeout is negative"));
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_read_as_redis_reads_them() {
        let neg = Err(Reply::err("timeout is negative"));
        let bad = Err(Reply::err("timeout is not a float or out of range"));
        assert_eq!(timeout(b"0"), Ok(0));
        assert_eq!(timeout(b"0.01"), Ok(10));
        assert_eq!(timeout(b"1.5"), Ok(1500));
        assert_eq!(timeout(b"-0.0001"), Ok(0), "cut to 0: for ever");
        assert_eq!(timeout(b"9.2e15"), Ok(9_200_000_000_000_000_000));
        for n in [&b"-1"[..], b"inf", b"-inf", b"9.3e15", b"1e400"] {
            assert_eq!(timeout(n), neg, "{}", String::from_utf8_lossy(n));
        }
        for b in [&b""[..], b"x", b" 1", b"1 ", b"nan", b"1x"] {
            assert_eq!(timeout(b), bad, "{}", String::from_utf8_lossy(b));
        }
    }
}
