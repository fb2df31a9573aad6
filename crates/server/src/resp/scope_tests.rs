//! Key scopes over the Redis protocol: what a `write` key may not do to a
//! board (delete, expire or overwrite it: admin work over HTTP and RPC),
//! directly or queued in MULTI.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use super::exec::{Session, Shared};
use super::reply::Reply as R;
use crate::service::Service;
use crate::settings::{ApiKey, Scope};

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
