//! The command table: every command's and subcommand's name, arity, key
//! positions and what it needs ([`Spec`], [`COMMANDS`]), and Redis's
//! dispatch checks on it (unknown command or subcommand, arity).

use bytes::Bytes;

use super::super::reply::Reply;
use super::c_str;
use crate::settings::Scope;
use podium_core::keystore::Writes;
use podium_core::op::Op;

/// Which operation of the product ([`Op`]) a command performs: its scope
/// is what the connection's key needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// This operation, whatever the command's keys.
    Op(Op),
    /// Deletes or expires its keys, or keeps them from expiring: `board`
    /// when any of them names a board (an archive too, or a board with no
    /// members: its config goes with the key), else `other` (hashes,
    /// missing keys).
    ByKey { other: Op, board: Op },
}

impl Access {
    /// The least scope the command needs, whatever its keys; `None`: it
    /// runs before authentication.
    pub fn least(self) -> Option<Scope> {
        match self {
            Access::Op(op) => op.scope(),
            Access::ByKey { other, board } => other.scope().min(board.scope()),
        }
    }

    /// The scope it needs on keys of which at least one names a board;
    /// `None` when that does not matter.
    pub fn on_boards(self) -> Option<Scope> {
        match self {
            Access::Op(_) => None,
            Access::ByKey { board, .. } => board.scope(),
        }
    }
}

/// One row of the command table.
#[derive(Debug)]
pub struct Spec {
    /// Lower case, as Redis names it in errors (`config|get` for a
    /// subcommand).
    pub name: &'static str,
    /// Redis arity: `n` exactly `n` arguments (with the name), `-n` at
    /// least `n`.
    pub arity: i32,
    pub access: Access,
    /// First key, last key (-1: the last argument), step (COMMAND INFO).
    pub keys: (i32, i32, i32),
    /// Movable keys: the argument at this index says how many keys follow
    /// it (ZMPOP's `numkeys`); `keys` is then (0, 0, 0), as Redis's
    /// COMMAND INFO shows such a command, or the destination before the
    /// count (ZDIFFSTORE's).
    pub numkeys_at: Option<usize>,
}

impl Spec {
    /// Whether Redis refuses it while used memory is over `maxmemory`
    /// (its `denyoom` flag): the commands that add data. HDEL shares
    /// HSET's operation but frees memory.
    pub fn deny_oom(&self) -> bool {
        (matches!(self.access, Access::Op(op) if op.adds_data())
            && !matches!(self.name, "hdel" | "getdel" | "getex"))
            || matches!(self.name, "set" | "setex" | "psetex" | "mset")
    }

    /// Whether it may change data (it needs a key that may write).
    pub fn writes(&self) -> bool {
        self.access.least().is_some_and(|s| s >= Scope::Write)
    }

    /// Adds to `w` what this command with `args` may change: its keys
    /// (a command that stores into one key names it first), or any key
    /// for a write that names none (FLUSHALL).
    pub fn add_writes(&self, args: &[Bytes], w: &mut Writes) {
        // A script may write any key, named or not; MOVE writes its key
        // in another database too, and so does COPY with DB.
        let copy_db =
            self.name == "copy" && args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"db"));
        if copy_db || matches!(self.name, "eval" | "evalsha" | "move") {
            *w = Writes::Any;
            return;
        }
        if !self.writes() {
            return;
        }
        if self.keys == NK && self.numkeys_at.is_none() {
            *w = Writes::Any;
        }
        for k in self.key_args(args) {
            w.add(k);
        }
    }

    /// What this command with `args` may change.
    pub fn writes_of(&self, args: &[Bytes]) -> Writes {
        let mut w = Writes::none();
        self.add_writes(args, &mut w);
        w
    }

    /// The arguments of `args` (a request for this command, arity
    /// checked) that are keys, by [`Spec::keys`].
    pub fn key_args<'a>(&self, args: &'a [Bytes]) -> impl Iterator<Item = &'a [u8]> {
        let (first, last, step) = self.keys;
        let n = args.len() as i32;
        let last = if last < 0 { n + last } else { last };
        let counted = if let Some(at) = self.numkeys_at {
            // (An unreadable count names no keys: the command is refused
            // before it touches any.)
            let n = args
                .get(at)
                .and_then(|a| super::super::num::parse_i64(a))
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            let keys = args.get(at + 1..).unwrap_or_default();
            &keys[..n.min(keys.len())]
        } else {
            &[]
        };
        let fixed = if first > 0 && step > 0 && last >= first {
            args.get(first as usize..=last.min(n - 1) as usize)
                .unwrap_or_default()
        } else {
            &[]
        };
        fixed
            .iter()
            .step_by(step.max(1) as usize)
            .chain(counted)
            .map(|a| &a[..])
    }
}

const fn spec(name: &'static str, arity: i32, access: Access, keys: (i32, i32, i32)) -> Spec {
    Spec {
        name,
        arity,
        access,
        keys,
        numkeys_at: None,
    }
}

/// A command whose keys follow a count at argument `at` (movable keys).
const fn spec_numkeys(name: &'static str, arity: i32, access: Access, at: usize) -> Spec {
    Spec {
        name,
        arity,
        access,
        keys: NK,
        numkeys_at: Some(at),
    }
}

/// A command storing into its first key from keys that follow a count at
/// argument `at` (ZDIFFSTORE).
const fn spec_dest_numkeys(name: &'static str, arity: i32, access: Access, at: usize) -> Spec {
    Spec {
        name,
        arity,
        access,
        keys: K1,
        numkeys_at: Some(at),
    }
}

const fn op(op: Op) -> Access {
    Access::Op(op)
}

/// DEL, UNLINK, the EXPIRE family: deleting a board is admin work.
const DELETE: Access = Access::ByKey {
    other: Op::SetData,
    board: Op::BoardDelete,
};
/// PERSIST: a board's expiry is admin's to clear as to set.
const PERSIST: Access = Access::ByKey {
    other: Op::SetData,
    board: Op::BoardPut,
};
/// RENAME, RENAMENX, COPY: a board's name is admin's to change, and so is
/// the board a copy replaces or creates.
const MOVE_KEY: Access = Access::ByKey {
    other: Op::SetData,
    board: Op::BoardDelete,
};

use Op::*;
const NK: (i32, i32, i32) = (0, 0, 0);
const K1: (i32, i32, i32) = (1, 1, 1);
const KALL: (i32, i32, i32) = (1, -1, 1);
/// MSET's keys: every other argument.
const KPAIRS: (i32, i32, i32) = (1, -1, 2);

/// Every command the frontend knows, subcommands after their container.
pub static COMMANDS: &[Spec] = &[
    spec("ping", -1, op(Connection), NK),
    spec("echo", 2, op(Connection), NK),
    spec("hello", -1, op(Auth), NK),
    spec("auth", -2, op(Auth), NK),
    spec("select", 2, op(Connection), NK),
    spec("quit", -1, op(Auth), NK),
    spec("command", -1, op(Connection), NK),
    spec("info", -1, op(Metrics), NK),
    spec("config", -2, op(Connection), NK),
    spec("client", -2, op(Connection), NK),
    spec("dbsize", 1, op(Boards), NK),
    spec("flushdb", -1, op(FlushAll), NK),
    spec("flushall", -1, op(FlushAll), NK),
    spec("exists", -2, op(BoardInfo), KALL),
    spec("del", -2, DELETE, KALL),
    spec("unlink", -2, DELETE, KALL),
    spec("type", 2, op(BoardInfo), K1),
    spec("keys", 2, op(Boards), NK),
    spec("scan", -2, op(Boards), NK),
    spec("expire", -3, DELETE, K1),
    spec("pexpire", -3, DELETE, K1),
    spec("expireat", -3, DELETE, K1),
    spec("pexpireat", -3, DELETE, K1),
    spec("ttl", 2, op(BoardInfo), K1),
    spec("pttl", 2, op(BoardInfo), K1),
    spec("expiretime", 2, op(BoardInfo), K1),
    spec("pexpiretime", 2, op(BoardInfo), K1),
    spec("touch", -2, op(BoardInfo), KALL),
    spec("randomkey", 1, op(Boards), NK),
    spec("swapdb", 3, op(FlushAll), NK),
    spec("move", 3, DELETE, K1),
    spec("persist", 2, PERSIST, K1),
    spec("multi", 1, op(Connection), NK),
    spec("exec", 1, op(Connection), NK),
    spec("discard", 1, op(Connection), NK),
    spec("zadd", -4, op(Submit), K1),
    spec("zincrby", 4, op(Submit), K1),
    spec("zscore", 3, op(Rank), K1),
    spec("zmscore", -3, op(Rank), K1),
    spec("zrank", -3, op(Rank), K1),
    spec("zrevrank", -3, op(Rank), K1),
    spec("zcard", 2, op(Count), K1),
    spec("zcount", 4, op(Count), K1),
    spec("zrange", -4, op(Range), K1),
    spec("zrevrange", -4, op(Range), K1),
    spec("zrangebyscore", -4, op(Range), K1),
    spec("zrevrangebyscore", -4, op(Range), K1),
    spec("zrem", -3, op(Remove), K1),
    spec("zremrangebyrank", 4, op(RemoveRange), K1),
    spec("zremrangebyscore", 4, op(RemoveRange), K1),
    spec("zpopmin", -2, op(Remove), K1),
    spec_numkeys("zmpop", -4, op(Remove), 1),
    spec("zpopmax", -2, op(Remove), K1),
    spec("zunionstore", -4, op(Merge), K1),
    spec("zinterstore", -4, op(Intersect), K1),
    spec("zscan", -3, op(Range), K1),
    spec("zrandmember", -2, op(Range), K1),
    spec("hset", -4, op(SetData), K1),
    spec("hmset", -4, op(SetData), K1),
    spec("hget", 3, op(Entry), K1),
    spec("hmget", -3, op(Entry), K1),
    spec("hdel", -3, op(SetData), K1),
    spec("hgetall", 2, op(Entry), K1),
    spec("hexists", 3, op(Entry), K1),
    spec("hlen", 2, op(Entry), K1),
    spec("hkeys", 2, op(Entry), K1),
    spec("hvals", 2, op(Entry), K1),
    spec("hsetnx", 4, op(SetData), K1),
    spec("hincrby", 4, op(SetData), K1),
    spec("hstrlen", 3, op(Entry), K1),
    spec("hrandfield", -2, op(Entry), K1),
    spec("hscan", -3, op(Entry), K1),
    spec("bzpopmin", -3, op(Remove), (1, -2, 1)),
    spec("bzpopmax", -3, op(Remove), (1, -2, 1)),
    spec_numkeys("bzmpop", -5, op(Remove), 2),
    spec("rename", 3, MOVE_KEY, (1, 2, 1)),
    spec("renamenx", 3, MOVE_KEY, (1, 2, 1)),
    spec("copy", -3, MOVE_KEY, (1, 2, 1)),
    spec("object", -2, op(BoardInfo), NK),
    spec("memory", -2, op(BoardInfo), NK),
    spec("object|encoding", 3, op(BoardInfo), (2, 2, 1)),
    spec("object|refcount", 3, op(BoardInfo), (2, 2, 1)),
    spec("object|idletime", 3, op(BoardInfo), (2, 2, 1)),
    spec("object|freq", 3, op(BoardInfo), (2, 2, 1)),
    spec("object|help", 2, op(BoardInfo), NK),
    spec("memory|usage", -3, op(BoardInfo), (2, 2, 1)),
    spec("memory|help", 2, op(BoardInfo), NK),
    spec("client|unblock", -3, op(ServerAdmin), NK),
    spec("zrangebylex", -4, op(Range), K1),
    spec("zrevrangebylex", -4, op(Range), K1),
    spec("zlexcount", 4, op(Count), K1),
    spec("zremrangebylex", 4, op(RemoveRange), K1),
    spec_numkeys("zunion", -3, op(Range), 1),
    spec_numkeys("zinter", -3, op(Range), 1),
    spec_numkeys("zdiff", -3, op(Range), 1),
    spec_numkeys("zintercard", -3, op(Count), 1),
    spec_dest_numkeys("zdiffstore", -4, op(Merge), 2),
    spec("zrangestore", -5, op(Merge), (1, 2, 1)),
    // Strings. SET (without GET), SETEX, PSETEX and MSET replace a key of
    // any type: over a board that is deleting it.
    spec("get", 2, op(Entry), K1),
    spec("set", -3, DELETE, K1),
    spec("setnx", 3, op(SetData), K1),
    spec("setex", 4, DELETE, K1),
    spec("psetex", 4, DELETE, K1),
    spec("getset", 3, op(SetData), K1),
    spec("getdel", 2, op(SetData), K1),
    spec("getex", -2, op(SetData), K1),
    spec("mget", -2, op(Entry), KALL),
    spec("mset", -3, DELETE, KPAIRS),
    spec("msetnx", -3, op(SetData), KPAIRS),
    spec("incr", 2, op(SetData), K1),
    spec("decr", 2, op(SetData), K1),
    spec("incrby", 3, op(SetData), K1),
    spec("decrby", 3, op(SetData), K1),
    spec("incrbyfloat", 3, op(SetData), K1),
    spec("append", 3, op(SetData), K1),
    spec("strlen", 2, op(Entry), K1),
    spec("getrange", 4, op(Entry), K1),
    spec("substr", 4, op(Entry), K1),
    spec("setrange", 4, op(SetData), K1),
    spec("hincrbyfloat", 4, op(SetData), K1),
    spec("lcs", -3, op(Entry), (1, 2, 1)),
    // Scripting: each command a script runs is checked as it runs.
    spec_numkeys("eval", -3, op(Connection), 2),
    spec_numkeys("evalsha", -3, op(Connection), 2),
    spec_numkeys("eval_ro", -3, op(Connection), 2),
    spec_numkeys("evalsha_ro", -3, op(Connection), 2),
    spec("script", -2, op(Connection), NK),
    spec("script|load", 3, op(Connection), NK),
    spec("script|exists", -3, op(Connection), NK),
    spec("script|flush", -2, op(Connection), NK),
    spec("script|kill", 2, op(Connection), NK),
    // Subcommands.
    spec("config|get", -3, op(Connection), NK),
    spec("client|setname", 3, op(Connection), NK),
    spec("client|getname", 2, op(Connection), NK),
    spec("client|setinfo", 4, op(Connection), NK),
    spec("client|id", 2, op(Connection), NK),
    spec("command|count", 2, op(Connection), NK),
    spec("command|docs", -2, op(Connection), NK),
    spec("command|info", -2, op(Connection), NK),
    spec("command|list", -2, op(Connection), NK),
    // Running the server: what it says of itself, its clients and its
    // snapshots.
    spec("config|set", -4, op(ServerAdmin), NK),
    spec("config|resetstat", 2, op(ServerAdmin), NK),
    spec("client|list", -2, op(ServerAdmin), NK),
    spec("client|info", 2, op(Connection), NK),
    spec("client|kill", -3, op(ServerAdmin), NK),
    spec("client|no-evict", 3, op(Connection), NK),
    spec("client|reply", 3, op(Connection), NK),
    spec("client|pause", -3, op(ServerAdmin), NK),
    spec("client|unpause", 2, op(ServerAdmin), NK),
    spec("slowlog", -2, op(Metrics), NK),
    spec("slowlog|get", -2, op(Metrics), NK),
    spec("slowlog|len", 2, op(Metrics), NK),
    spec("slowlog|reset", 2, op(ServerAdmin), NK),
    spec("time", 1, op(Connection), NK),
    spec("role", 1, op(Metrics), NK),
    spec("lolwut", -1, op(Connection), NK),
    spec("reset", 1, op(Auth), NK),
    spec("save", 1, op(ServerAdmin), NK),
    spec("bgsave", -1, op(ServerAdmin), NK),
    spec("lastsave", 1, op(Metrics), NK),
    // Pub/Sub: messages between connections, touching no stored data.
    spec("subscribe", -2, op(Connection), NK),
    spec("unsubscribe", -1, op(Connection), NK),
    spec("psubscribe", -2, op(Connection), NK),
    spec("punsubscribe", -1, op(Connection), NK),
    spec("publish", 3, op(Connection), NK),
    spec("pubsub", -2, op(Connection), NK),
    spec("pubsub|channels", -2, op(Connection), NK),
    spec("pubsub|numsub", -2, op(Connection), NK),
    spec("pubsub|numpat", 2, op(Connection), NK),
    spec("pubsub|help", 2, op(Connection), NK),
];

const CONTAINERS: [&str; 8] = [
    "config", "client", "command", "slowlog", "script", "object", "memory", "pubsub",
];

/// The position of `spec` in [`COMMANDS`] (the index of its counters).
pub fn index(spec: &'static Spec) -> usize {
    let at =
        (spec as *const Spec as usize - COMMANDS.as_ptr() as usize) / std::mem::size_of::<Spec>();
    debug_assert!(std::ptr::eq(&COMMANDS[at], spec));
    at
}

fn find(name: &str) -> Option<&'static Spec> {
    // Looked up for every request: hashed, not scanned.
    static INDEX: std::sync::LazyLock<
        std::collections::HashMap<&'static str, &'static Spec, foldhash::fast::FixedState>,
    > = std::sync::LazyLock::new(|| COMMANDS.iter().map(|s| (s.name, s)).collect());
    INDEX.get(name).copied()
}

/// `a` lower-cased into `buf` when it is short ASCII (a command name);
/// `None` otherwise, as [`lower`], without allocating.
fn lower_in<'b>(a: &[u8], buf: &'b mut [u8; 32]) -> Option<&'b str> {
    let out = buf.get_mut(..a.len())?;
    out.copy_from_slice(a);
    out.make_ascii_lowercase();
    std::str::from_utf8(out).ok()
}

/// An argument lower-cased, when it is short ASCII (command and option
/// names); `None` otherwise (cannot match any name).
pub fn lower(a: &[u8]) -> Option<String> {
    if a.len() > 32 {
        return None;
    }
    let s = std::str::from_utf8(a).ok()?;
    Some(s.to_ascii_lowercase())
}

/// Redis's reply to an unknown command, with the name as sent.
pub fn unknown_command(args: &[Bytes]) -> Reply {
    let mut list = Vec::new();
    for a in &args[1..] {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(c_str(a, room));
        list.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str(&args[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&list);
    Reply::Error(msg)
}

pub fn arity_error(name: &str) -> Reply {
    Reply::err(format!("wrong number of arguments for '{name}' command"))
}

/// `processCommand`'s checks: the command (or subcommand) exists and has
/// an allowed number of arguments. `args` is not empty.
pub fn lookup(args: &[Bytes]) -> Result<&'static Spec, Reply> {
    let spec = resolve(args)?;
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || n < -spec.arity {
        return Err(arity_error(spec.name));
    }
    Ok(spec)
}

/// The command (or subcommand) `args` names, arity unchecked.
pub fn resolve(args: &[Bytes]) -> Result<&'static Spec, Reply> {
    let mut buf = [0u8; 32];
    let Some(base) = lower_in(&args[0], &mut buf)
        .and_then(find)
        .filter(|s| !s.name.contains('|'))
    else {
        return Err(unknown_command(args));
    };
    let spec = if args.len() >= 2 && CONTAINERS.contains(&base.name) {
        let sub = lower(&args[1]).map(|s| format!("{}|{s}", base.name));
        match sub.as_deref().and_then(find) {
            Some(s) => s,
            None => {
                let mut msg = b"ERR unknown subcommand '".to_vec();
                msg.extend_from_slice(c_str(&args[1], 128));
                msg.extend_from_slice(
                    format!("'. Try {} HELP.", base.name.to_ascii_uppercase()).as_bytes(),
                );
                return Err(Reply::Error(msg));
            }
        }
    } else {
        base
    };
    Ok(spec)
}
