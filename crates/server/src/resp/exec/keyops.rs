//! RENAME, RENAMENX and COPY, and OBJECT and MEMORY USAGE: the store
//! moves, copies and measures keys; here are Redis's replies. A key's
//! encoding is named by its type and whether Redis would keep it compact,
//! so another key type is one more arm of [`encoding`].

use podium_core::error::ApiError;
use podium_core::keystore::{KeyInfo, KeyStore, KeyType};

use super::super::command::{Cmd, ObjectSub};
use super::super::notify::{Events, GENERIC, NEW};
use super::super::reply::Reply;
use super::{done, Run};

/// The encoding OBJECT ENCODING names, as Redis 7.0 chooses it.
fn encoding(i: &KeyInfo) -> &'static str {
    match (i.ty, i.compact) {
        (KeyType::String, _) if i.int.is_some() => "int",
        (KeyType::String, true) => "embstr",
        (KeyType::String, false) => "raw",
        (KeyType::Zset, true) | (KeyType::Hash, true) => "listpack",
        (KeyType::Zset, false) => "skiplist",
        (KeyType::Hash, false) => "hashtable",
    }
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

fn help(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Status(l)).collect())
}

/// Runs one of this module's commands.
pub(super) fn run(store: &dyn KeyStore, cmd: Cmd, ev: &Events) -> Result<Run, ApiError> {
    Ok(match cmd {
        Cmd::Rename { src, dst, nx } => {
            let (moved, lsn) = store.rename(&src, &dst, nx)?;
            // Redis adds the destination anew (`new` even over a key it
            // replaced); a key renamed to itself changes nothing.
            if moved == Some(true) && src != dst {
                ev.emit(NEW, "new", &dst);
                ev.emit(GENERIC, "rename_from", &src);
                ev.emit(GENERIC, "rename_to", &dst);
            }
            let reply = match (moved, nx) {
                (None, _) => Reply::err("no such key"),
                (Some(m), true) => Reply::Int(m as i64),
                (Some(_), false) => Reply::OK,
            };
            (reply, lsn)
        }
        Cmd::Copy {
            src, dst, replace, ..
        } => {
            let (copied, lsn) = store.copy(&src, &dst, replace)?;
            if copied {
                ev.emit(NEW, "new", &dst);
                ev.emit(GENERIC, "copy_to", &dst);
            }
            (Reply::Int(copied as i64), lsn)
        }
        Cmd::Object { sub, key } => {
            let Some(info) = store.key_info(&key) else {
                return Ok(done(Reply::Null));
            };
            done(match sub {
                ObjectSub::Encoding => Reply::bulk(encoding(&info)),
                // Redis shares the objects of the integers 0 to 9999
                // (`OBJ_SHARED_INTEGERS`), whose count is `INT_MAX`.
                ObjectSub::RefCount => match info.int {
                    Some(0..=9999) => Reply::Int(i32::MAX as i64),
                    _ => Reply::Int(1),
                },
                // Access times are not tracked: every key reads as just
                // used.
                ObjectSub::IdleTime => Reply::Int(0),
                // Redis's answer under its default eviction policy, the
                // only one podium has.
                ObjectSub::Freq => Reply::err(
                    "An LFU maxmemory policy is not selected, access frequency not tracked. \
                     Please note that when switching between policies at runtime LRU and LFU \
                     data will take some time to adjust.",
                ),
            })
        }
        Cmd::ObjectHelp => done(help(OBJECT_HELP)),
        Cmd::MemoryUsage(key) => done(match store.key_info(&key) {
            Some(info) => Reply::Int(info.bytes as i64),
            None => Reply::Null,
        }),
        Cmd::MemoryHelp => done(help(MEMORY_HELP)),
        _ => unreachable!("not a key command of this module"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_by_type_and_size() {
        let info = |ty, compact| KeyInfo {
            ty,
            len: 1,
            compact,
            int: None,
            bytes: 1,
        };
        assert_eq!(encoding(&info(KeyType::Zset, true)), "listpack");
        assert_eq!(encoding(&info(KeyType::Zset, false)), "skiplist");
        assert_eq!(encoding(&info(KeyType::Hash, true)), "listpack");
        assert_eq!(encoding(&info(KeyType::Hash, false)), "hashtable");
        assert_eq!(encoding(&info(KeyType::String, true)), "embstr");
        assert_eq!(encoding(&info(KeyType::String, false)), "raw");
        let int = KeyInfo {
            int: Some(7),
            ..info(KeyType::String, true)
        };
        assert_eq!(encoding(&int), "int");
    }
}
