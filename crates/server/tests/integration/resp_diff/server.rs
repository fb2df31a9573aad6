//! The server's own commands: CONFIG GET/SET/RESETSTAT, SLOWLOG, CLIENT
//! LIST/INFO/KILL/NO-EVICT/REPLY, ROLE, SAVE/BGSAVE, RESET. Replies that
//! name this moment or this connection (TIME, CLIENT LIST's lines,
//! LASTSAVE) are compared by their shape; errors and fixed replies byte
//! for byte.

use super::*;

fn server(d: &mut Diff) {
    for line in [
        "CONFIG SET nope 1",
        "CONFIG SET timeout x",
        "CONFIG SET timeout -1",
        "CONFIG SET timeout 1 timeout 2",
        "CONFIG SET timeout",
        "CONFIG SET timeout 1 slowlog-max-len",
        "CONFIG SET slowlog-max-len -5",
        "CONFIG SET slowlog-log-slower-than -2",
        "CONFIG SET maxmemory abc",
        "CONFIG SET timeout 70",
        "CONFIG GET timeout",
        "CONFIG SET timeout 0 slowlog-max-len 64",
        "CONFIG GET timeout",
        "CONFIG SET slowlog-max-len 128",
        "CONFIG GET maxmemory-policy",
        "CONFIG GET nosuch",
        "CONFIG RESETSTAT",
        "CONFIG RESETSTAT x",
        "SLOWLOG GET -2",
        "SLOWLOG GET x",
        "SLOWLOG GET 1 2",
        "SLOWLOG nope",
        "SLOWLOG",
        "SLOWLOG RESET",
        "SLOWLOG LEN",
        "SLOWLOG GET 0",
        "CLIENT LIST TYPE nope",
        "CLIENT LIST ID x",
        "CLIENT LIST ID 0",
        "CLIENT LIST TYPE pubsub",
        "CLIENT LIST TYPE replica",
        "CLIENT LIST foo",
        "CLIENT KILL 1.2.3.4:5",
        "CLIENT KILL ID 0",
        "CLIENT KILL ID x",
        "CLIENT KILL USER nobody",
        "CLIENT KILL SKIPME maybe",
        "CLIENT KILL foo bar",
        "CLIENT KILL ID 99999",
        "CLIENT KILL ID 1 ADDR",
        "CLIENT KILL TYPE pubsub",
        "CLIENT KILL MAXAGE -1",
        "CLIENT NO-EVICT maybe",
        "CLIENT NO-EVICT on",
        "CLIENT NO-EVICT off",
        "CLIENT REPLY maybe",
        "CLIENT REPLY on",
        "CLIENT PAUSE x",
        "CLIENT PAUSE -1",
        "CLIENT PAUSE 0 nope",
        "CLIENT PAUSE 0 write",
        "CLIENT PAUSE 0 all extra",
        "CLIENT UNPAUSE",
        "CLIENT UNPAUSE x",
        "ROLE",
        "ROLE x",
        "TIME x",
        "LASTSAVE x",
        "BGSAVE foo",
        "SAVE x",
    ] {
        d.same(line);
    }
    // Several matches come in Redis's hash-table order.
    d.pairs("CONFIG GET zset-max-*");
    d.pairs("CONFIG GET slowlog*");
    d.pairs("CONFIG GET hash-max-*");
    // Only the shape: a pair of decimal strings, an integer, lines.
    for line in [
        "TIME",
        "LASTSAVE",
        "CLIENT INFO",
        "CLIENT LIST",
        "SLOWLOG GET",
    ] {
        same_shape(d, line);
    }
    d.same("SAVE");
    d.same("MULTI");
    d.same("PING");
    d.same("RESET");
    d.same("EXEC");
    d.same("CLIENT GETNAME");
}

/// The kind of a reply and, for an array, its length; for text, whether
/// it is one line per client with Redis's first fields.
fn shape(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "array of {}: {}",
            items.len(),
            items.iter().map(shape).collect::<Vec<_>>().join(",")
        ),
        Value::Bulk(b) | Value::Verbatim(b) => {
            let t = String::from_utf8_lossy(b);
            if t.contains("addr=") {
                let fields: Vec<&str> = t
                    .split_whitespace()
                    .filter_map(|f| f.split_once('=').map(|(k, _)| k))
                    .take(8)
                    .collect();
                format!("client lines {}: {}", t.lines().count(), fields.join(" "))
            } else if t.bytes().all(|c| c.is_ascii_digit()) {
                "decimal".into()
            } else {
                "text".into()
            }
        }
        Value::Int(_) => "integer".into(),
        other => format!("{other:?}"),
    }
}

fn same_shape(d: &mut Diff, line: &str) {
    let Some((r, p)) = d.both(&cmd(line)) else {
        return;
    };
    let (rv, pv) = (parse_one(&r), parse_one(&p));
    match (rv, pv) {
        (Ok(rv), Ok(pv)) if shape(&rv) == shape(&pv) => {}
        (Ok(rv), Ok(pv)) => d.record(
            &format!("shape {} / {}", shape(&rv), shape(&pv)),
            line,
            &r,
            &p,
        ),
        _ => d.record("not RESP", line, &r, &p),
    }
}

#[test]
fn server_commands() {
    run_group("server", server);
}
