//! The string commands' arguments (GET, SET and its options, GETEX's,
//! the counters, ranges…) and HINCRBYFLOAT's, parsed into a [`StrCmd`]
//! with Redis 7.0's errors in its order of checks. An expiry time is
//! checked when the command runs, as Redis checks it (SET before its GET's
//! type check; GETEX after the key's lookup).

use bytes::Bytes;
use podium_core::keystore::{LongDouble, SetCond};

use super::command::arity_error;
use super::num::string2ll;
use super::reply::Reply;

/// An expiry argument, as given: checked and made absolute when the
/// command runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpireArg {
    pub value: Bytes,
    /// PX/PXAT/PSETEX: the value is in milliseconds, not seconds.
    pub ms: bool,
    /// EX/PX/SETEX/PSETEX: from now, not since the epoch.
    pub relative: bool,
}

/// What SET does to the expiry.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SetTtl {
    #[default]
    Clear,
    /// KEEPTTL.
    Keep,
    At(ExpireArg),
}

/// What GETEX does to the expiry.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum GetexTtl {
    #[default]
    Keep,
    Persist,
    At(ExpireArg),
}

/// A parsed string command (or HINCRBYFLOAT).
#[derive(Debug, Clone, PartialEq)]
pub enum StrCmd {
    Get(Bytes),
    /// SET, SETNX, SETEX, PSETEX.
    Set {
        key: Bytes,
        value: Bytes,
        cond: SetCond,
        ttl: SetTtl,
        get: bool,
        /// For the errors that name the command.
        name: &'static str,
    },
    GetSet(Bytes, Bytes),
    GetDel(Bytes),
    GetEx(Bytes, GetexTtl),
    MGet(Vec<Bytes>),
    MSet {
        pairs: Vec<(Bytes, Bytes)>,
        nx: bool,
    },
    IncrBy(Bytes, i64),
    IncrByFloat(Bytes, Bytes),
    Append(Bytes, Bytes),
    StrLen(Bytes),
    GetRange(Bytes, i64, i64),
    SetRange(Bytes, u64, Bytes),
    HIncrByFloat(Bytes, Bytes, LongDouble),
}

/// The command names this module parses.
pub const NAMES: &[&str] = &[
    "get",
    "set",
    "setnx",
    "setex",
    "psetex",
    "getset",
    "getdel",
    "getex",
    "mget",
    "mset",
    "msetnx",
    "incr",
    "decr",
    "incrby",
    "decrby",
    "incrbyfloat",
    "append",
    "strlen",
    "getrange",
    "substr",
    "setrange",
    "hincrbyfloat",
];

fn not_int() -> Reply {
    Reply::err("value is not an integer or out of range")
}

fn int(a: &[u8]) -> Result<i64, Reply> {
    string2ll(a).ok_or_else(not_int)
}

/// An option word as C compares it: up to a NUL byte, any case.
fn is(a: &[u8], word: &str) -> bool {
    let a = match a.iter().position(|&c| c == 0) {
        Some(i) => &a[..i],
        None => a,
    };
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// SET's or GETEX's options from `a[from..]`
/// (`parseExtendedStringArgumentsOrReply`): `(nx, xx, get, keepttl,
/// persist, expiry)`. A word allowed only for the other command, or
/// clashing with one already given, is a syntax error; a word given twice
/// is not (the later expiry wins).
#[allow(clippy::type_complexity)]
fn extended(
    a: &[Bytes],
    from: usize,
    set: bool,
) -> Result<(bool, bool, bool, bool, bool, Option<ExpireArg>), Reply> {
    let (mut nx, mut xx, mut get, mut keep, mut persist) = (false, false, false, false, false);
    // Which expiry option was given: EX, PX, EXAT, PXAT.
    let mut which: Option<&str> = None;
    let mut expire = None;
    let mut j = from;
    while j < a.len() {
        let opt = &a[j][..];
        let next = a.get(j + 1);
        let other_expiry = |me: &str| which.is_some_and(|w| w != me);
        if set && is(opt, "nx") && !xx {
            nx = true;
        } else if set && is(opt, "xx") && !nx {
            xx = true;
        } else if set && is(opt, "get") {
            get = true;
        } else if set && is(opt, "keepttl") && !persist && which.is_none() {
            keep = true;
        } else if !set && is(opt, "persist") && which.is_none() && !keep {
            persist = true;
        } else if let (Some(word), Some(next)) = (
            ["ex", "px", "exat", "pxat"]
                .into_iter()
                .find(|w| is(opt, w) && !keep && !persist && !other_expiry(w)),
            next,
        ) {
            which = Some(word);
            expire = Some(ExpireArg {
                value: next.clone(),
                ms: word.starts_with('p'),
                relative: !word.ends_with("at"),
            });
            j += 1;
        } else {
            return Err(Reply::syntax());
        }
        j += 1;
    }
    Ok((nx, xx, get, keep, persist, expire))
}

/// Parses the string command `name` (one of [`NAMES`], arity checked).
pub fn parse(name: &'static str, a: &[Bytes]) -> Result<StrCmd, Reply> {
    let key = || a[1].clone();
    Ok(match name {
        "get" => StrCmd::Get(key()),
        "set" => {
            let (nx, xx, get, keep, _, expire) = extended(a, 3, true)?;
            StrCmd::Set {
                key: key(),
                value: a[2].clone(),
                cond: if nx {
                    SetCond::Nx
                } else if xx {
                    SetCond::Xx
                } else {
                    SetCond::Always
                },
                ttl: match expire {
                    Some(e) => SetTtl::At(e),
                    None if keep => SetTtl::Keep,
                    None => SetTtl::Clear,
                },
                get,
                name,
            }
        }
        "setnx" => StrCmd::Set {
            key: key(),
            value: a[2].clone(),
            cond: SetCond::Nx,
            ttl: SetTtl::Clear,
            get: false,
            name,
        },
        "setex" | "psetex" => StrCmd::Set {
            key: key(),
            value: a[3].clone(),
            cond: SetCond::Always,
            ttl: SetTtl::At(ExpireArg {
                value: a[2].clone(),
                ms: name == "psetex",
                relative: true,
            }),
            get: false,
            name,
        },
        "getset" => StrCmd::GetSet(key(), a[2].clone()),
        "getdel" => StrCmd::GetDel(key()),
        "getex" => {
            let (_, _, _, _, persist, expire) = extended(a, 2, false)?;
            StrCmd::GetEx(
                key(),
                match expire {
                    Some(e) => GetexTtl::At(e),
                    None if persist => GetexTtl::Persist,
                    None => GetexTtl::Keep,
                },
            )
        }
        "mget" => StrCmd::MGet(a[1..].to_vec()),
        "mset" | "msetnx" => {
            if a.len().is_multiple_of(2) {
                return Err(arity_error(name));
            }
            StrCmd::MSet {
                pairs: a[1..]
                    .chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
                nx: name == "msetnx",
            }
        }
        "incr" => StrCmd::IncrBy(key(), 1),
        "decr" => StrCmd::IncrBy(key(), -1),
        "incrby" => StrCmd::IncrBy(key(), int(&a[2])?),
        "decrby" => {
            let by = int(&a[2])?;
            if by == i64::MIN {
                return Err(Reply::err("decrement would overflow"));
            }
            StrCmd::IncrBy(key(), -by)
        }
        "incrbyfloat" => StrCmd::IncrByFloat(key(), a[2].clone()),
        "append" => StrCmd::Append(key(), a[2].clone()),
        "strlen" => StrCmd::StrLen(key()),
        "getrange" | "substr" => StrCmd::GetRange(key(), int(&a[2])?, int(&a[3])?),
        "setrange" => {
            let offset = int(&a[2])?;
            if offset < 0 {
                return Err(Reply::err("offset is out of range"));
            }
            StrCmd::SetRange(key(), offset as u64, a[3].clone())
        }
        "hincrbyfloat" => {
            let by =
                LongDouble::parse(&a[3]).ok_or_else(|| Reply::err("value is not a valid float"))?;
            if by.is_nan_or_inf() {
                return Err(Reply::err("value is NaN or Infinity"));
            }
            StrCmd::HIncrByFloat(key(), a[2].clone(), by)
        }
        _ => unreachable!("not a string command: {name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::command::parse_args;
    use super::super::command::Cmd;
    use super::*;

    fn p(s: &str) -> Result<StrCmd, Reply> {
        let args: Vec<Bytes> = s
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        match parse_args(&args)? {
            Cmd::Str(c) => Ok(c),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn set_options_clash_as_in_redis() {
        for bad in [
            "set k v nx xx",
            "set k v xx nx",
            "set k v ex 1 px 1",
            "set k v keepttl ex 1",
            "set k v ex 1 keepttl",
            "set k v exat 1 pxat 1",
            "set k v persist",
            "set k v ex",
            "set k v foo",
            "getex k persist ex 1",
            "getex k ex 1 persist",
            "getex k nx",
            "getex k get",
            "getex k keepttl",
            "getex k px",
        ] {
            assert_eq!(p(bad), Err(Reply::syntax()), "{bad}");
        }
        for ok in [
            "set k v nx nx",
            "set k v get get",
            "set k v ex 1 ex 2",
            "set k v nx get ex 5",
            "set k v keepttl keepttl xx",
            "getex k persist persist",
            "getex k pxat 5",
        ] {
            assert!(p(ok).is_ok(), "{ok}");
        }
        let Ok(StrCmd::Set { ttl, cond, get, .. }) = p("set k v ex 1 Ex 2 NX GET") else {
            panic!()
        };
        assert_eq!(cond, SetCond::Nx);
        assert!(get);
        assert_eq!(
            ttl,
            SetTtl::At(ExpireArg {
                value: Bytes::from_static(b"2"),
                ms: false,
                relative: true
            })
        );
    }

    #[test]
    fn numbers_and_arity() {
        assert_eq!(p("incrby k x"), Err(not_int()));
        assert_eq!(
            p("decrby k -9223372036854775808"),
            Err(Reply::err("decrement would overflow"))
        );
        assert_eq!(
            p("decrby k 5"),
            Ok(StrCmd::IncrBy(Bytes::from_static(b"k"), -5))
        );
        assert_eq!(
            p("setrange k -1 x"),
            Err(Reply::err("offset is out of range"))
        );
        assert_eq!(p("getrange k 0 x"), Err(not_int()));
        assert_eq!(
            p("mset a 1 b"),
            Err(Reply::err("wrong number of arguments for 'mset' command"))
        );
        assert_eq!(
            p("hincrbyfloat h f inf"),
            Err(Reply::err("value is NaN or Infinity"))
        );
        assert_eq!(
            p("hincrbyfloat h f nan"),
            Err(Reply::err("value is not a valid float"))
        );
        assert_eq!(
            p("get"),
            Err(Reply::err("wrong number of arguments for 'get' command"))
        );
    }
}
