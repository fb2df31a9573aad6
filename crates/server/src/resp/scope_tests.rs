//! Key scopes over the Redis protocol: every command of the table against
//! a key of every scope, and what a `write` key may not do to a board
//! (delete, expire or overwrite it: admin work over HTTP and RPC),
//! directly or queued in MULTI.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use super::command::Access;
use super::exec::{Session, Shared};
use super::reply::Reply as R;
use crate::settings::{ApiKey, Scope};
use podium_store::service::Service;

const READ_KEY: &str = "readkey-0123456789abcdef";
const WRITE_KEY: &str = "writekey-0123456789abcdef";
const ADMIN_KEY: &str = "adminkey-0123456789abcdef";

fn keys() -> Vec<ApiKey> {
    vec![
        ApiKey::new(READ_KEY, Scope::Read).unwrap(),
        ApiKey::new(WRITE_KEY, Scope::Write).unwrap(),
        ApiKey::new(ADMIN_KEY, Scope::Admin).unwrap(),
    ]
}

fn key_of(scope: Scope) -> &'static str {
    match scope {
        Scope::Read => READ_KEY,
        Scope::Write => WRITE_KEY,
        Scope::Admin => ADMIN_KEY,
    }
}

/// A session on `svc` authenticated with the key of `scope`.
fn session(svc: &Arc<Service>, shared: &Arc<Shared>, scope: Scope) -> Session {
    let mut s = Session::new(svc.clone(), shared.clone());
    assert_eq!(run(&mut s, &format!("auth {}", key_of(scope))), R::OK);
    s
}

fn run(s: &mut Session, line: &str) -> R {
    let args = crate::resp::codec::split_args(line.as_bytes())
        .unwrap()
        .into_iter()
        .map(Bytes::from)
        .collect();
    s.handle(args).0
}

fn noperm_key() -> R {
    R::coded("NOPERM this user has no permissions to access one of the keys used as arguments")
}

fn noperm(cmd: &str) -> R {
    R::coded(format!(
        "NOPERM this user has no permissions to run the '{cmd}' command"
    ))
}

/// A write key deletes, expires and overwrites hashes and members, never
/// a board (its config, its archives): that is admin work.
#[tokio::test]
async fn a_write_key_cannot_delete_expire_or_overwrite_a_board() {
    let svc = Arc::new(Service::in_memory());
    let shared = Arc::new(Shared::new(keys(), 7379));
    let mut admin = session(&svc, &shared, Scope::Admin);
    let mut w = session(&svc, &shared, Scope::Write);
    svc.board_put("lb", &json!({"order": "asc"})).await.unwrap();
    assert_eq!(run(&mut w, "zadd lb 1 a 2 b"), R::Int(2));
    let archive = svc.reset("lb").await.unwrap().archive;
    assert_eq!(run(&mut w, "zadd lb 1 a 2 b"), R::Int(2));
    // A board with its config and no members is not a key, but deleting
    // it would drop its config.
    svc.board_put("empty", &json!({"order": "asc"}))
        .await
        .unwrap();
    assert_eq!(run(&mut w, "zadd src 5 c"), R::Int(1));
    assert_eq!(run(&mut w, "hset lb:data a x"), R::Int(1));

    for line in [
        "del lb".to_string(),
        "unlink lb".into(),
        "del lb:data lb".into(),
        format!("del {archive}"),
        "del empty".into(),
        "expire lb 100".into(),
        "pexpire lb 1".into(),
        "expireat lb 1".into(),
        "pexpireat lb 1".into(),
        "persist lb".into(),
        "set lb v".into(),
        "set empty v keepttl".into(),
        "setex lb 10 v".into(),
        "psetex lb 10 v".into(),
        "mset s 1 lb 2".into(),
    ] {
        assert_eq!(run(&mut w, &line), noperm_key(), "{line}");
    }
    for (line, cmd) in [
        ("zunionstore lb 1 src", "zunionstore"),
        ("zinterstore lb 1 src", "zinterstore"),
        ("zunionstore fresh 1 src", "zunionstore"),
        ("flushall", "flushall"),
        ("flushdb", "flushdb"),
    ] {
        assert_eq!(run(&mut w, line), noperm(cmd), "{line}");
    }
    // MULTI does not get round it: refused when queued...
    assert_eq!(run(&mut w, "multi"), R::OK);
    assert_eq!(run(&mut w, "pexpire lb 1"), noperm_key());
    assert_eq!(run(&mut w, "zunionstore lb 1 src"), noperm("zunionstore"));
    assert_eq!(
        run(&mut w, "exec"),
        R::coded("EXECABORT Transaction discarded because of previous errors.")
    );
    // ... and when run, for a board that appeared after it was queued.
    assert_eq!(run(&mut w, "multi"), R::OK);
    assert_eq!(run(&mut w, "zadd new 1 a"), R::Status("QUEUED"));
    assert_eq!(run(&mut w, "del new"), R::Status("QUEUED"));
    assert_eq!(run(&mut w, "del lb:data"), R::Status("QUEUED"));
    assert_eq!(
        run(&mut w, "exec"),
        R::Array(vec![R::Int(1), noperm_key(), R::Int(1)])
    );
    assert_eq!(run(&mut w, "hset h f v"), R::Int(1));
    assert_eq!(run(&mut w, "multi"), R::OK);
    assert_eq!(run(&mut w, "expire h 100"), R::Status("QUEUED"));
    assert_eq!(run(&mut admin, "del h"), R::Int(1));
    assert_eq!(run(&mut admin, "zadd h 1 a"), R::Int(1));
    assert_eq!(run(&mut w, "exec"), R::Array(vec![noperm_key()]));

    // Every board is still there, with its config and members.
    let info = svc.board_info("lb").unwrap();
    assert_eq!((info.members, &info.config["order"]), (2, &json!("asc")));
    assert_eq!(svc.board_info(&archive).unwrap().members, 2);
    assert_eq!(svc.board_info("empty").unwrap().config["order"], "asc");
    assert_eq!(svc.board_info("new").unwrap().members, 1);
    assert_eq!(run(&mut w, "pttl lb"), R::Int(-1));
    assert_eq!(run(&mut w, "zcard h"), R::Int(1));
    assert!(svc.board_info("fresh").is_err());

    // Hashes and members are a write key's to delete.
    // A string may replace a hash or a missing key; it is refused on a
    // board before it is parsed further.
    assert_eq!(run(&mut w, "set lb:data v"), R::OK);
    assert_eq!(run(&mut w, "mset s 1 t 2"), R::OK);
    assert_eq!(run(&mut w, "del lb:data s t"), R::Int(3));
    assert_eq!(run(&mut w, "hset lb:data a x"), R::Int(1));
    assert_eq!(run(&mut w, "expire lb:data 100"), R::Int(1));
    assert_eq!(run(&mut w, "persist lb:data"), R::Int(1));
    assert_eq!(run(&mut w, "del lb:data nokey"), R::Int(1));
    assert_eq!(run(&mut w, "zrem lb a"), R::Int(1));
    assert!(!run(&mut w, "zpopmin lb").is_error());
    // A read key deletes nothing.
    let mut r = session(&svc, &shared, Scope::Read);
    assert_eq!(run(&mut r, "del h"), noperm("del"));
    // An admin key does it all.
    assert_eq!(run(&mut admin, "zunionstore lb 1 src"), R::Int(1));
    assert_eq!(
        run(&mut admin, &format!("del lb {archive} empty")),
        R::Int(2)
    );
    assert_eq!(run(&mut admin, "pexpire new 1"), R::Int(1));
    assert!(svc.board_info("lb").is_err());
    assert!(svc.board_info("empty").is_err());
}

/// A request for one command of the table, and whether the keys it names
/// are boards in [`fixture`] (for the commands whose scope depends on it).
struct Sample {
    line: String,
    on_board: bool,
}

fn on_other(line: &str) -> Sample {
    Sample {
        line: line.to_string(),
        on_board: false,
    }
}

fn on_board(line: &str) -> Sample {
    Sample {
        line: line.to_string(),
        on_board: true,
    }
}

/// Requests for the command named `name` (a row of `COMMANDS`): every
/// command needs at least one, so a new command cannot go unwalked.
/// Against [`fixture`]: `lb` and `src` are boards, `empty` a board with
/// no members, `h` a hash.
fn samples(name: &str) -> Vec<Sample> {
    let s = |lines: &[&str]| lines.iter().map(|l| on_other(l)).collect();
    match name {
        "ping" => s(&["ping"]),
        "echo" => s(&["echo hi"]),
        // Without AUTH, HELLO itself asks for a key first.
        "hello" => s(&["hello 2 auth default nope"]),
        "auth" => s(&["auth nope"]),
        "select" => s(&["select 0"]),
        "quit" => s(&["quit"]),
        "command" => s(&["command"]),
        "info" => s(&["info"]),
        // Containers: with a subcommand they are that subcommand's row.
        "config" => s(&["config"]),
        "client" => s(&["client"]),
        "dbsize" => s(&["dbsize"]),
        "flushdb" => s(&["flushdb"]),
        "flushall" => s(&["flushall"]),
        "exists" => s(&["exists lb h"]),
        "del" | "unlink" => vec![
            on_other(&format!("{name} h")),
            on_other(&format!("{name} nokey")),
            on_board(&format!("{name} lb")),
            on_board(&format!("{name} h empty")),
        ],
        "type" => s(&["type lb"]),
        "keys" => s(&["keys *"]),
        "scan" => s(&["scan 0"]),
        "expire" => vec![on_other("expire h 100"), on_board("expire lb 100")],
        "pexpire" => vec![on_other("pexpire h 1"), on_board("pexpire lb 1")],
        "expireat" => vec![on_other("expireat h 1"), on_board("expireat empty 1")],
        "pexpireat" => vec![
            on_other("pexpireat h 99999999999999"),
            on_board("pexpireat lb 99999999999999"),
        ],
        "ttl" => s(&["ttl lb"]),
        "pttl" => s(&["pttl h"]),
        "persist" => vec![on_other("persist h"), on_board("persist lb")],
        "multi" => s(&["multi"]),
        "exec" => s(&["exec"]),
        "discard" => s(&["discard"]),
        "zadd" => s(&["zadd lb 5 x", "zadd fresh 1 a"]),
        "zincrby" => s(&["zincrby lb 1 a"]),
        "zscore" => s(&["zscore lb a"]),
        "zmscore" => s(&["zmscore lb a b"]),
        "zrank" => s(&["zrank lb a"]),
        "zrevrank" => s(&["zrevrank lb a"]),
        "zcard" => s(&["zcard lb"]),
        "zcount" => s(&["zcount lb -inf +inf"]),
        "zrange" => s(&["zrange lb 0 -1"]),
        "zrevrange" => s(&["zrevrange lb 0 -1"]),
        "zrangebyscore" => s(&["zrangebyscore lb -inf +inf"]),
        "zrevrangebyscore" => s(&["zrevrangebyscore lb +inf -inf"]),
        "zrem" => s(&["zrem lb a"]),
        "zremrangebyrank" => s(&["zremrangebyrank lb 0 0"]),
        "zremrangebyscore" => s(&["zremrangebyscore lb 0 1"]),
        "zpopmin" => s(&["zpopmin lb"]),
        "zpopmax" => s(&["zpopmax lb"]),
        "zunionstore" => s(&["zunionstore lb 1 src", "zunionstore fresh 1 src"]),
        "zinterstore" => s(&["zinterstore lb 1 src", "zinterstore fresh 1 src"]),
        "zscan" => s(&["zscan lb 0"]),
        "hset" => s(&["hset h f v"]),
        "hmset" => s(&["hmset h f v"]),
        "hget" => s(&["hget h f"]),
        "hmget" => s(&["hmget h f g"]),
        "hdel" => s(&["hdel h f"]),
        "hgetall" => s(&["hgetall h"]),
        "hexists" => s(&["hexists h f"]),
        "hlen" => s(&["hlen h"]),
        "hkeys" => s(&["hkeys h"]),
        "hvals" => s(&["hvals h"]),
        "expiretime" => s(&["expiretime h"]),
        "pexpiretime" => s(&["pexpiretime h"]),
        "touch" => s(&["touch h lb"]),
        "randomkey" => s(&["randomkey"]),
        "swapdb" => s(&["swapdb 0 1"]),
        "move" => vec![on_other("move h 1"), on_board("move lb 1")],
        "zmpop" => s(&["zmpop 2 nokey lb min count 2"]),
        "zrandmember" => s(&["zrandmember lb", "zrandmember lb -3 withscores"]),
        "hsetnx" => s(&["hsetnx h g v"]),
        "hincrby" => s(&["hincrby h n 1"]),
        "hstrlen" => s(&["hstrlen h f"]),
        "hrandfield" => s(&["hrandfield h", "hrandfield h 2 withvalues"]),
        "hscan" => s(&["hscan h 0"]),
        "zrangebylex" => s(&["zrangebylex lb - +"]),
        "zrevrangebylex" => s(&["zrevrangebylex lb + - limit 0 1"]),
        "zlexcount" => s(&["zlexcount lb - +"]),
        "zremrangebylex" => s(&["zremrangebylex lb [a [a"]),
        "zunion" => s(&["zunion 2 lb src withscores"]),
        "zinter" => s(&["zinter 2 lb src"]),
        "zdiff" => s(&["zdiff 2 lb src"]),
        "zintercard" => s(&["zintercard 2 lb src limit 1"]),
        "zdiffstore" => s(&["zdiffstore lb 1 src", "zdiffstore fresh 1 src"]),
        "zrangestore" => s(&["zrangestore lb src 0 -1", "zrangestore fresh src 0 -1"]),
        "get" => s(&["get str"]),
        "set" => vec![
            on_other("set str v"),
            on_other("set h v"),
            on_board("set lb v"),
            on_board("set empty v"),
        ],
        "setex" => vec![on_other("setex str 10 v"), on_board("setex lb 10 v")],
        "psetex" => vec![on_other("psetex str 10 v"), on_board("psetex empty 10 v")],
        "mset" => vec![on_other("mset str v h w"), on_board("mset str v lb w")],
        "setnx" => s(&["setnx fresh v"]),
        "getset" => s(&["getset str v"]),
        "getdel" => s(&["getdel str"]),
        "getex" => s(&["getex str persist"]),
        "mget" => s(&["mget str lb"]),
        "msetnx" => s(&["msetnx fresh v"]),
        "incr" => s(&["incr n"]),
        "decr" => s(&["decr n"]),
        "incrby" => s(&["incrby n 2"]),
        "decrby" => s(&["decrby n 2"]),
        "incrbyfloat" => s(&["incrbyfloat n 2.5"]),
        "append" => s(&["append str x"]),
        "strlen" => s(&["strlen str"]),
        "getrange" => s(&["getrange str 0 -1"]),
        "substr" => s(&["substr str 0 -1"]),
        "setrange" => s(&["setrange str 1 x"]),
        "hincrbyfloat" => s(&["hincrbyfloat h n 1.5"]),
        "lcs" => s(&["lcs str str2 idx"]),
        "config|get" => s(&["config get maxmemory"]),
        "client|setname" => s(&["client setname me"]),
        "client|getname" => s(&["client getname"]),
        "client|setinfo" => s(&["client setinfo lib-name x"]),
        "client|id" => s(&["client id"]),
        "command|count" => s(&["command count"]),
        "command|docs" => s(&["command docs get"]),
        "command|info" => s(&["command info get"]),
        "command|list" => s(&["command list"]),
        "bzpopmin" => s(&["bzpopmin nokey lb 0"]),
        "bzpopmax" => s(&["bzpopmax lb 1"]),
        "bzmpop" => s(&["bzmpop 0 2 nokey lb min count 2"]),
        "rename" | "renamenx" | "copy" => vec![
            on_other(&format!("{name} h h2")),
            on_board(&format!("{name} lb fresh")),
            on_board(&format!("{name} h lb")),
            on_board(&format!("{name} h empty")),
        ],
        "object" | "memory" => s(&[name]),
        "object|encoding" => s(&["object encoding lb"]),
        "object|refcount" => s(&["object refcount h"]),
        "object|idletime" => s(&["object idletime lb"]),
        "object|freq" => s(&["object freq nokey"]),
        "object|help" => s(&["object help"]),
        "memory|usage" => s(&["memory usage lb samples 0"]),
        "memory|help" => s(&["memory help"]),
        "client|unblock" => s(&["client unblock 999999 error"]),
        "slowlog" => s(&["slowlog"]),
        "config|set" => s(&["config set slowlog-max-len 100"]),
        "config|resetstat" => s(&["config resetstat"]),
        "client|list" => s(&["client list", "client list type normal"]),
        "client|info" => s(&["client info"]),
        "client|kill" => s(&["client kill id 999999"]),
        "client|no-evict" => s(&["client no-evict on"]),
        "client|reply" => s(&["client reply on"]),
        "client|pause" => s(&["client pause 0 write"]),
        "client|unpause" => s(&["client unpause"]),
        "slowlog|get" => s(&["slowlog get"]),
        "slowlog|len" => s(&["slowlog len"]),
        "slowlog|reset" => s(&["slowlog reset"]),
        "time" => s(&["time"]),
        "role" => s(&["role"]),
        "lolwut" => s(&["lolwut"]),
        "reset" => s(&["reset"]),
        "save" => s(&["save"]),
        "bgsave" => s(&["bgsave schedule"]),
        "lastsave" => s(&["lastsave"]),
        // A script's own commands are checked as they run (see
        // `a_script_runs_its_commands_with_the_callers_scope`).
        "eval" => s(&["eval \"return 1\" 1 lb"]),
        "evalsha" => s(&["evalsha 0000000000000000000000000000000000000000 0"]),
        "eval_ro" => s(&["eval_ro \"return 1\" 0"]),
        "evalsha_ro" => s(&["evalsha_ro 0000000000000000000000000000000000000000 0"]),
        "script" => s(&["script"]),
        "script|load" => s(&["script load \"return 1\""]),
        "script|exists" => s(&["script exists 0000000000000000000000000000000000000000"]),
        "script|flush" => s(&["script flush"]),
        "script|kill" => s(&["script kill"]),
        // Pub/Sub touches no stored data: any key.
        "subscribe" => s(&["subscribe news"]),
        "unsubscribe" => s(&["unsubscribe", "unsubscribe news"]),
        "psubscribe" => s(&["psubscribe n*"]),
        "punsubscribe" => s(&["punsubscribe n*"]),
        "publish" => s(&["publish news hello"]),
        "pubsub" => s(&["pubsub"]),
        "pubsub|channels" => s(&["pubsub channels n*"]),
        "pubsub|numsub" => s(&["pubsub numsub news"]),
        "pubsub|numpat" => s(&["pubsub numpat"]),
        "pubsub|help" => s(&["pubsub help"]),
        _ => Vec::new(),
    }
}

/// Boards `lb` (two members), `src` (one) and `empty` (none, with a
/// config), and the hash `h`.
async fn fixture() -> Arc<Service> {
    let svc = Arc::new(Service::in_memory());
    svc.board_put("empty", &json!({"order": "asc"}))
        .await
        .unwrap();
    let mut s = Session::new(svc.clone(), Arc::new(Shared::new(Vec::new(), 7379)));
    for line in ["zadd lb 1 a 2 b", "zadd src 5 c", "hset h f v"] {
        assert!(!run(&mut s, line).is_error(), "{line}");
    }
    svc
}

fn args(line: &str) -> Vec<Bytes> {
    crate::resp::codec::split_args(line.as_bytes())
        .unwrap()
        .into_iter()
        .map(Bytes::from)
        .collect()
}

/// Whether `r` is a refusal for want of a key or of scope.
fn refused(r: &R) -> bool {
    matches!(r, R::Error(e) if e.starts_with(b"NOPERM") || e.starts_with(b"NOAUTH"))
}

/// Every command of the table, run with no key and with a key of each
/// scope, directly and queued in MULTI, against the scope its operation
/// needs: allowed, or refused as Redis refuses (NOAUTH without a key;
/// NOPERM naming the command, or the keys when only the keys decide).
#[tokio::test]
async fn every_command_against_every_scope() {
    let shared = Arc::new(Shared::new(keys(), 7379));
    for spec in super::command::COMMANDS {
        let samples = samples(spec.name);
        assert!(!samples.is_empty(), "{}: no sample request", spec.name);
        for sample in samples {
            let line = &sample.line;
            let a = args(line);
            match super::command::lookup(&a) {
                Ok(found) => assert_eq!(found.name, spec.name, "{line}"),
                // A container alone: refused for its arity whatever the
                // key, before any scope is looked at.
                Err(arity) => {
                    assert!(
                        ["config", "client", "slowlog", "script", "object", "memory", "pubsub"]
                            .contains(&spec.name),
                        "{line}"
                    );
                    assert_eq!(arity, super::command::arity_error(spec.name));
                    continue;
                }
            }
            let needed = match spec.access {
                Access::Op(op) => op.scope(),
                Access::ByKey { other, board } => {
                    if sample.on_board {
                        board.scope()
                    } else {
                        other.scope()
                    }
                }
            };
            for scope in [
                None,
                Some(Scope::Read),
                Some(Scope::Write),
                Some(Scope::Admin),
            ] {
                let want = match (needed, scope) {
                    (None, _) => None,
                    (Some(_), None) => Some(R::coded("NOAUTH Authentication required.")),
                    (Some(n), Some(s)) if s.allows(n) => None,
                    (Some(_), Some(s)) if spec.access.least().is_some_and(|l| !s.allows(l)) => {
                        Some(noperm(spec.name))
                    }
                    (Some(_), Some(_)) => Some(noperm_key()),
                };
                // A refused EXEC discards the transaction, saying why.
                let want = match want {
                    Some(R::Error(e)) if spec.name == "exec" => {
                        let mut m = b"EXECABORT Transaction discarded because of: ".to_vec();
                        m.extend_from_slice(&e);
                        Some(R::Error(m))
                    }
                    w => w,
                };
                let ctx = format!("{line} with {scope:?}");
                let svc = fixture().await;
                let mut s = Session::new(svc.clone(), shared.clone());
                if let Some(scope) = scope {
                    assert_eq!(run(&mut s, &format!("auth {}", key_of(scope))), R::OK);
                }
                let got = s.handle(a.clone()).0;
                match &want {
                    // Without a key, unknown and malformed commands are
                    // refused as such first; these are neither.
                    Some(w) => assert_eq!(&got, w, "{ctx}"),
                    None => assert!(!refused(&got), "{ctx}: {got:?}"),
                }
                if matches!(spec.name, "multi" | "exec" | "discard" | "quit" | "reset")
                    || scope.is_none()
                {
                    continue;
                }
                let svc = fixture().await;
                let mut s = Session::new(svc.clone(), shared.clone());
                let scope = scope.unwrap();
                assert_eq!(run(&mut s, &format!("auth {}", key_of(scope))), R::OK);
                assert_eq!(run(&mut s, "multi"), R::OK);
                let queued = s.handle(a.clone()).0;
                let exec = run(&mut s, "exec");
                match &want {
                    Some(w) => {
                        assert_eq!(&queued, w, "MULTI {ctx}");
                        assert_eq!(
                            exec,
                            R::coded("EXECABORT Transaction discarded because of previous errors."),
                            "MULTI {ctx}"
                        );
                    }
                    None => {
                        assert_eq!(queued, R::Status("QUEUED"), "MULTI {ctx}");
                        match exec {
                            R::Array(v) if v.len() == 1 => {
                                assert!(!refused(&v[0]), "MULTI {ctx}: {v:?}")
                            }
                            other => panic!("MULTI {ctx}: {other:?}"),
                        }
                    }
                }
            }
        }
    }
}

/// A read key's script reads, and each write it sends is refused as the
/// key's own command would be; a write key's script writes.
#[tokio::test]
async fn a_script_runs_its_commands_with_the_callers_scope() {
    let svc = fixture().await;
    let shared = Arc::new(Shared::new(keys(), 7379));
    let mut s = Session::new(svc.clone(), shared.clone());
    assert_eq!(run(&mut s, &format!("auth {}", key_of(Scope::Read))), R::OK);
    assert_eq!(
        run(&mut s, "eval \"return redis.call('zcard', 'lb')\" 0"),
        R::Int(2)
    );
    let R::Error(e) = run(&mut s, "eval \"return redis.call('zadd', 'lb', 9, 'x')\" 0") else {
        panic!("a read key's script wrote")
    };
    assert!(
        e.starts_with(b"NOPERM this user has no permissions to run the 'zadd' command script: "),
        "{}",
        String::from_utf8_lossy(&e)
    );
    assert_eq!(run(&mut s, "zcard lb"), R::Int(2));
    let mut w = Session::new(svc, shared);
    assert_eq!(
        run(&mut w, &format!("auth {}", key_of(Scope::Write))),
        R::OK
    );
    assert_eq!(
        run(&mut w, "eval \"return redis.call('zadd', 'lb', 9, 'x')\" 0"),
        R::Int(1)
    );
    // Deleting a board is admin work, in a script as outside.
    assert!(run(&mut w, "eval \"return redis.call('del', 'lb')\" 0").is_error());
    assert_eq!(run(&mut w, "zcard lb"), R::Int(3));
}

/// A command naming another database checks its key there: a write key
/// cannot overwrite a board of database 0 from another database (COPY …
/// DB, MOVE onto an empty board), directly, queued or in a script.
#[tokio::test]
async fn a_write_key_cannot_overwrite_a_board_of_another_database() {
    let svc = Arc::new(Service::in_memory());
    let shared = Arc::new(Shared::new(keys(), 7379));
    let mut w = session(&svc, &shared, Scope::Write);
    assert_eq!(run(&mut w, "zadd season1 1 a 2 b"), R::Int(2));
    svc.board_put("empty", &json!({"order": "asc"}))
        .await
        .unwrap();
    assert_eq!(run(&mut w, "select 1"), R::OK);
    assert_eq!(run(&mut w, "set x gone"), R::OK);
    assert_eq!(run(&mut w, "set empty gone"), R::OK);
    for line in [
        "copy x season1 db 0 replace",
        "copy x season1 DB 0 REPLACE",
        "copy x empty db 0 replace",
        "move empty 0",
    ] {
        assert_eq!(run(&mut w, line), noperm_key(), "{line}");
    }
    let R::Error(e) = run(
        &mut w,
        "eval \"return redis.call('copy', 'x', 'season1', 'db', '0', 'replace')\" 0",
    ) else {
        panic!("a write key's script copied onto a board")
    };
    assert!(
        e.starts_with(b"NOPERM this user has no permissions to access one of the keys"),
        "{}",
        String::from_utf8_lossy(&e)
    );
    assert_eq!(run(&mut w, "multi"), R::OK);
    assert_eq!(run(&mut w, "copy x season1 db 0 replace"), noperm_key());
    assert_eq!(run(&mut w, "discard"), R::OK);
    // Queued before the board appeared: refused as it runs.
    assert_eq!(run(&mut w, "multi"), R::OK);
    assert_eq!(
        run(&mut w, "copy x later db 0 replace"),
        R::Status("QUEUED")
    );
    svc.board_put("later", &json!({"order": "asc"}))
        .await
        .unwrap();
    assert_eq!(run(&mut w, "exec"), R::Array(vec![noperm_key()]));
    // Keys that are no boards are the write key's to copy and move.
    assert_eq!(run(&mut w, "copy x y db 0 replace"), R::Int(1));
    assert_eq!(run(&mut w, "copy x season1 db 3 replace"), R::Int(1));
    assert_eq!(run(&mut w, "move x 2"), R::Int(1));

    assert_eq!(svc.board_info("season1").unwrap().members, 2);
    assert_eq!(svc.board_info("empty").unwrap().config["order"], "asc");
    assert_eq!(svc.board_info("later").unwrap().config["order"], "asc");
}
