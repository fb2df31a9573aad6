//! What the server tells clients about itself besides INFO: COMMAND
//! (COUNT, DOCS, INFO, LIST) and CONFIG GET.

use bytes::Bytes;

use super::super::command::{self, Spec};
use super::super::reply::Reply;
use crate::settings::Scope;
use podium_core::keystore::glob_match;

/// Known configuration parameters for CONFIG GET (glob, case-insensitive).
const CONFIG: [(&str, &str); 4] = [
    ("maxmemory", "0"),
    ("save", ""),
    ("appendonly", "yes"),
    ("databases", "1"),
];

pub(super) fn config_get(patterns: &[Bytes]) -> Reply {
    let mut out = Vec::new();
    for (k, v) in CONFIG {
        if patterns
            .iter()
            .any(|p| glob_match(&p.to_ascii_lowercase(), k.as_bytes()))
        {
            out.push((Reply::bulk(k), Reply::bulk(v)));
        }
    }
    Reply::Map(out)
}

fn command_info(s: &Spec) -> Reply {
    let flags = match s.access.least() {
        Some(Scope::Write | Scope::Admin) => vec![Reply::Status("write")],
        _ => vec![Reply::Status("readonly")],
    };
    Reply::Array(vec![
        Reply::bulk(s.name),
        Reply::Int(i64::from(s.arity)),
        Reply::Array(flags),
        Reply::Int(i64::from(s.keys.0)),
        Reply::Int(i64::from(s.keys.1)),
        Reply::Int(i64::from(s.keys.2)),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

/// COMMAND, COMMAND COUNT / DOCS / INFO / LIST.
pub(super) fn command_cmd(args: &[Bytes]) -> Reply {
    let top = || command::COMMANDS.iter().filter(|s| !s.name.contains('|'));
    let Some(sub) = args.first() else {
        return Reply::Array(top().map(command_info).collect());
    };
    let sub = command::lower(sub).unwrap_or_default();
    match sub.as_str() {
        "count" => Reply::Int(top().count() as i64),
        // Documentation is optional for clients (redis-cli uses it for
        // hints only): an empty map.
        "docs" => Reply::Map(Vec::new()),
        "list" => Reply::Members(top().map(|s| s.name.as_bytes().to_vec()).collect()),
        _ => Reply::Array(
            args[1..]
                .iter()
                .map(|n| {
                    let n = command::lower(n).unwrap_or_default();
                    top()
                        .find(|s| s.name == n)
                        .map_or(Reply::Null, command_info)
                })
                .collect(),
        ),
    }
}
