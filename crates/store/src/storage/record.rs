//! The operations the log records, their binary encoding, and how recovery
//! replays one onto a [`Store`].
//!
//! A record is the *request* of a write that succeeded, not its effect:
//! every engine operation is deterministic given the board's state, and the
//! log is written in the order the operations were applied to each board,
//! so replaying the requests in log order rebuilds the same state. The one
//! input that is not deterministic — the clock, for resets — is captured in
//! the record (the archive's name). docs/storage.md has the byte layout.

use std::ops::Bound;

use podium_engine::{
    Aggregate, BoardConfig, Cond, Error, Num, Presence, ScoreRange, Store, Submit, UpdateOp,
};

/// Set in a `Submit` entry's op byte when sort key values follow its cond
/// byte.
const SCORES_FLAG: u8 = 0x80;

pub use crate::outbox::HookBatch;
pub use podium_core::entry::{MemberBytes, SubmitRec};
use podium_core::events::{Event, EventId, Kind};
use podium_core::keystore::KeyType;

/// A logged write.
#[derive(Debug, Clone, PartialEq)]
pub enum LogOp {
    /// `submit` / `submit_many` / an `import` batch.
    Submit {
        board: String,
        entries: Vec<SubmitRec>,
    },
    SetData {
        board: String,
        member: Vec<u8>,
        name: Option<String>,
        data: Option<String>,
    },
    Remove {
        board: String,
        members: Vec<Vec<u8>>,
    },
    RemoveRankRange {
        board: String,
        start: u64,
        stop: u64,
    },
    RemoveScoreRange {
        board: String,
        range: ScoreRange<Num>,
    },
    Pop {
        board: String,
        count: u64,
        worst: bool,
    },
    /// `if_absent`: the implicit creation of a board by its first write
    /// (a no-op on replay when the board already exists).
    Create {
        board: String,
        config: BoardConfig,
        if_absent: bool,
    },
    /// `board_update` (PUT): create or reconfigure.
    Put {
        board: String,
        config: BoardConfig,
    },
    Delete {
        board: String,
    },
    /// `reset`: archive `board` as `archive` and empty it.
    Archive {
        board: String,
        archive: String,
    },
    Combine {
        dest: String,
        sources: Vec<(String, f64)>,
        aggregate: Aggregate,
        intersect: bool,
    },
    /// The reset schedule's current period of a board (so a restart knows
    /// whether a reset fell due while the server was down).
    Period {
        board: String,
        label: String,
    },
    /// Redis hash fields set (HSET/HMSET).
    HSet {
        key: Vec<u8>,
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    HDel {
        key: Vec<u8>,
        fields: Vec<Vec<u8>>,
    },
    /// Deletes whatever `key` is (board or hash) and its expiry.
    DelKey {
        key: Vec<u8>,
    },
    /// The key expires at `at_ms` (ms since the Unix epoch): absolute, so
    /// replay needs no clock.
    Expire {
        key: Vec<u8>,
        at_ms: i64,
    },
    Persist {
        key: Vec<u8>,
    },
    /// FLUSHALL / FLUSHDB: every board, hash and expiry.
    FlushAll,
    /// RENAME: whatever `to` held is deleted, then the `kind` key `from`
    /// (a board with its archives and period, a hash or a string) and its
    /// expiry move to `to`.
    RenameKey {
        from: Vec<u8>,
        to: Vec<u8>,
        kind: KeyType,
    },
    /// COPY: whatever `to` held is deleted, then `to` becomes a copy of
    /// the `kind` key `from` (a board's members and config, as a live
    /// board, with its period; a hash; a string) and of its expiry.
    CopyKey {
        from: Vec<u8>,
        to: Vec<u8>,
        kind: KeyType,
    },
    /// ZDIFFSTORE / ZRANGESTORE: the board's members become exactly these
    /// (its config kept), as computed when the command ran.
    Replace {
        board: String,
        entries: Vec<(Vec<u8>, f64)>,
    },
    /// A string's value set (SET and its family, and the string commands
    /// that compute a value, logged as the SET of their result): whatever
    /// the key held before is replaced, its expiry as `expiry` says.
    SetString {
        key: Vec<u8>,
        value: Vec<u8>,
        expiry: StrExpiry,
    },
    /// MSET / MSETNX: each key set to its value, without expiry, at once.
    MSet {
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// The writes of one transaction or script, in order: one frame, so
    /// recovery replays all of them or (a torn tail) none. Never nested.
    Unit(Vec<LogOp>),
    /// MOVE / SWAPDB: each key (whatever its type, with its expiry; a
    /// board with its config) renamed from the first name to the second,
    /// all at once; a key at a second name that is no first name is
    /// dropped.
    Rename {
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// The events one write made for the board's webhooks, logged with it
    /// so a delivery due is never lost ([`crate::outbox`]).
    HookEvents {
        board: String,
        hooks: Vec<HookBatch>,
    },
    /// A hook's receiver acknowledged its events up to `upto`.
    HookAck {
        board: String,
        hook: String,
        upto: EventId,
    },
}

/// What a [`LogOp::SetString`] does to the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrExpiry {
    /// Removed.
    Clear,
    /// Kept as it is (KEEPTTL, and the commands that change a value in
    /// place: INCR, APPEND, SETRANGE…).
    Keep,
    /// Set to this time (ms since the Unix epoch): absolute, so replay
    /// needs no clock.
    At(i64),
}

/// Where replaying a record changed something beyond the engine: the
/// caller applies it to the state it keeps beside the store.
pub enum Replayed<'a> {
    Done,
    /// Not a board operation (periods, hashes, expiries, deletes of any
    /// key); `Delete` comes here too, after the store part, so the caller
    /// can drop the key's expiry and period.
    Aux(&'a LogOp),
    /// A unit: the caller replays each part in order.
    Unit(&'a [LogOp]),
}

impl LogOp {
    /// Applies the record to `store` during recovery. An engine error is
    /// not a recovery failure: the original request got the same error,
    /// deterministically, and changed nothing then either.
    pub fn replay(&self, store: &Store) -> Replayed<'_> {
        let _ = match self {
            LogOp::Submit { board, entries } => store
                .write(board, |b| {
                    let subs: Vec<Submit> = entries.iter().map(SubmitRec::as_submit).collect();
                    b.submit_many(&subs).map(drop)
                })
                .map(drop),
            LogOp::SetData {
                board,
                member,
                name,
                data,
            } => store
                .write(board, |b| {
                    b.set_data(member, name.as_deref(), data.as_deref())
                })
                .map(drop),
            LogOp::Remove { board, members } => store.write(board, |b| b.remove(members)).map(drop),
            LogOp::RemoveRankRange { board, start, stop } => store
                .write(board, |b| b.remove_range_by_rank(*start, *stop))
                .map(drop),
            LogOp::RemoveScoreRange { board, range } => store
                .write(board, |b| b.remove_range_by_score(range))
                .map(drop),
            LogOp::Pop {
                board,
                count,
                worst,
            } => store.write(board, |b| b.pop(*count, *worst)).map(drop),
            LogOp::Create {
                board,
                config,
                if_absent,
            } => match store.create(board, config.clone()) {
                Err(Error::BoardExists(_)) if *if_absent => Ok(()),
                r => r.map(drop),
            },
            LogOp::Put { board, config } => store.put(board, config.clone()).map(drop),
            LogOp::Delete { board } => {
                store.delete(board);
                return Replayed::Aux(self);
            }
            LogOp::Archive { board, archive } => store.archive(board, archive).map(drop),
            LogOp::Combine {
                dest,
                sources,
                aggregate,
                intersect,
            } => {
                let srcs: Vec<(&str, f64)> =
                    sources.iter().map(|(n, w)| (n.as_str(), *w)).collect();
                store.combine(dest, &srcs, *aggregate, *intersect).map(drop)
            }
            LogOp::DelKey { key } => {
                if let Ok(name) = std::str::from_utf8(key) {
                    store.delete(name);
                }
                return Replayed::Aux(self);
            }
            LogOp::FlushAll => {
                for (name, _) in store.list() {
                    store.delete(&name);
                }
                return Replayed::Aux(self);
            }
            LogOp::RenameKey { from, to, kind } | LogOp::CopyKey { from, to, kind } => {
                let copy = matches!(self, LogOp::CopyKey { .. });
                if from != to {
                    if let Ok(to) = std::str::from_utf8(to) {
                        store.delete(to);
                        if let (KeyType::Zset, Ok(from)) = (kind, std::str::from_utf8(from)) {
                            let _ = if copy {
                                store.copy(from, to)
                            } else {
                                store.rename(from, to)
                            };
                        }
                    }
                }
                return Replayed::Aux(self);
            }
            LogOp::Replace { board, entries } => store
                .write(board, |b| crate::service::replace_members(b, entries))
                .map(drop),
            // A string replaces whatever its key was, a board included.
            LogOp::SetString { key, .. } => {
                if let Ok(name) = std::str::from_utf8(key) {
                    store.delete(name);
                }
                return Replayed::Aux(self);
            }
            LogOp::MSet { pairs } => {
                for (key, _) in pairs {
                    if let Ok(name) = std::str::from_utf8(key) {
                        store.delete(name);
                    }
                }
                return Replayed::Aux(self);
            }
            LogOp::Unit(parts) => return Replayed::Unit(parts),
            LogOp::Rename { pairs } => {
                crate::service::databases::rename_boards(store, pairs);
                return Replayed::Aux(self);
            }
            LogOp::Period { .. }
            | LogOp::HookEvents { .. }
            | LogOp::HookAck { .. }
            | LogOp::HSet { .. }
            | LogOp::HDel { .. }
            | LogOp::Expire { .. }
            | LogOp::Persist { .. } => return Replayed::Aux(self),
        };
        Replayed::Done
    }

    /// Appends the encoding (docs/storage.md, "Record payloads") to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = W(out);
        match self {
            LogOp::Submit { board, entries } => {
                w.u8(1);
                w.str(board);
                w.u32(entries.len() as u32);
                for e in entries {
                    w.bytes(&e.member);
                    w.f64(e.score);
                    let op = match e.op {
                        None => 0,
                        Some(UpdateOp::Set) => 1,
                        Some(UpdateOp::Best) => 2,
                        Some(UpdateOp::Incr) => 3,
                    };
                    // The top bit says sort key values follow the cond
                    // byte: a plain entry's bytes are as they always were.
                    w.u8(op | if e.scores.is_some() { SCORES_FLAG } else { 0 });
                    w.u8(match e.presence {
                        Presence::Any => 0,
                        Presence::OnlyNew => 1,
                        Presence::OnlyExisting => 2,
                    });
                    w.u8(match e.cond {
                        Cond::Always => 0,
                        Cond::Greater => 1,
                        Cond::Less => 2,
                    });
                    if let Some(scores) = &e.scores {
                        w.u8(scores.len() as u8);
                        for (key, v) in scores {
                            w.str(key);
                            match v {
                                Num::Float(x) => {
                                    w.u8(0);
                                    w.f64(*x);
                                }
                                Num::Int(i) => {
                                    w.u8(1);
                                    w.u64(*i as u64);
                                }
                            }
                        }
                    }
                    w.opt_str(e.name.as_deref());
                    w.opt_str(e.data.as_deref());
                }
            }
            LogOp::SetData {
                board,
                member,
                name,
                data,
            } => {
                w.u8(2);
                w.str(board);
                w.bytes(member);
                w.opt_str(name.as_deref());
                w.opt_str(data.as_deref());
            }
            LogOp::Remove { board, members } => {
                w.u8(3);
                w.str(board);
                w.u32(members.len() as u32);
                for m in members {
                    w.bytes(m);
                }
            }
            LogOp::RemoveRankRange { board, start, stop } => {
                w.u8(4);
                w.str(board);
                w.u64(*start);
                w.u64(*stop);
            }
            LogOp::RemoveScoreRange { board, range } => {
                w.u8(5);
                w.str(board);
                w.bound(range.min);
                w.bound(range.max);
            }
            LogOp::Pop {
                board,
                count,
                worst,
            } => {
                w.u8(6);
                w.str(board);
                w.u64(*count);
                w.u8(*worst as u8);
            }
            LogOp::Create {
                board,
                config,
                if_absent,
            } => {
                w.u8(7);
                w.str(board);
                w.config(config);
                w.u8(*if_absent as u8);
            }
            LogOp::Put { board, config } => {
                w.u8(8);
                w.str(board);
                w.config(config);
            }
            LogOp::Delete { board } => {
                w.u8(9);
                w.str(board);
            }
            LogOp::Archive { board, archive } => {
                w.u8(10);
                w.str(board);
                w.str(archive);
            }
            LogOp::Combine {
                dest,
                sources,
                aggregate,
                intersect,
            } => {
                w.u8(11);
                w.str(dest);
                w.u32(sources.len() as u32);
                for (n, weight) in sources {
                    w.str(n);
                    w.f64(*weight);
                }
                w.u8(match aggregate {
                    Aggregate::Sum => 0,
                    Aggregate::Min => 1,
                    Aggregate::Max => 2,
                });
                w.u8(*intersect as u8);
            }
            LogOp::Period { board, label } => {
                w.u8(12);
                w.str(board);
                w.str(label);
            }
            LogOp::HSet { key, pairs } => {
                w.u8(13);
                w.bytes(key);
                w.u32(pairs.len() as u32);
                for (f, v) in pairs {
                    w.bytes(f);
                    w.bytes(v);
                }
            }
            LogOp::HDel { key, fields } => {
                w.u8(14);
                w.bytes(key);
                w.u32(fields.len() as u32);
                for f in fields {
                    w.bytes(f);
                }
            }
            LogOp::DelKey { key } => {
                w.u8(15);
                w.bytes(key);
            }
            LogOp::Expire { key, at_ms } => {
                w.u8(16);
                w.bytes(key);
                w.u64(*at_ms as u64);
            }
            LogOp::Persist { key } => {
                w.u8(17);
                w.bytes(key);
            }
            LogOp::FlushAll => w.u8(18),
            LogOp::RenameKey { from, to, kind } | LogOp::CopyKey { from, to, kind } => {
                w.u8(if matches!(self, LogOp::RenameKey { .. }) {
                    21
                } else {
                    22
                });
                w.u8(match kind {
                    KeyType::Zset => 0,
                    KeyType::Hash => 1,
                    KeyType::String => 2,
                });
                w.bytes(from);
                w.bytes(to);
            }
            LogOp::Replace { board, entries } => {
                w.u8(19);
                w.str(board);
                w.u32(entries.len() as u32);
                for (m, score) in entries {
                    w.bytes(m);
                    w.f64(*score);
                }
            }
            LogOp::SetString { key, value, expiry } => {
                w.u8(30);
                w.bytes(key);
                w.bytes(value);
                match expiry {
                    StrExpiry::Clear => w.u8(0),
                    StrExpiry::Keep => w.u8(1),
                    StrExpiry::At(at_ms) => {
                        w.u8(2);
                        w.u64(*at_ms as u64);
                    }
                }
            }
            LogOp::MSet { pairs } => {
                w.u8(31);
                w.u32(pairs.len() as u32);
                for (k, v) in pairs {
                    w.bytes(k);
                    w.bytes(v);
                }
            }
            LogOp::Unit(parts) => {
                w.u8(20);
                w.u32(parts.len() as u32);
                for p in parts {
                    // Each part as its own payload, behind its length.
                    let at = w.0.len();
                    w.u32(0);
                    p.encode(w.0);
                    let len = (w.0.len() - at - 4) as u32;
                    w.0[at..at + 4].copy_from_slice(&len.to_le_bytes());
                }
            }
            LogOp::Rename { pairs } => {
                w.u8(23);
                w.u32(pairs.len() as u32);
                for (from, to) in pairs {
                    w.bytes(from);
                    w.bytes(to);
                }
            }
            LogOp::HookEvents { board, hooks } => {
                w.u8(40);
                w.str(board);
                w.u32(hooks.len() as u32);
                for h in hooks {
                    w.str(&h.name);
                    w.str(&h.url);
                    w.str(&h.secret);
                    w.u32(h.events.len() as u32);
                    for e in &h.events {
                        w.u64(e.id.major);
                        w.u32(e.id.minor);
                        w.str(e.kind.name());
                        w.str(&e.json);
                    }
                }
            }
            LogOp::HookAck { board, hook, upto } => {
                w.u8(41);
                w.str(board);
                w.str(hook);
                w.u64(upto.major);
                w.u32(upto.minor);
            }
        }
    }

    /// Decodes one payload; `None` if it is not a well-formed record (the
    /// checksum matched, so this means a bug or a newer format).
    pub fn decode(buf: &[u8]) -> Option<LogOp> {
        let mut r = R(buf);
        let op = match r.u8()? {
            1 => {
                let board = r.str()?;
                let entries = r.list(16, |r| {
                    let member = MemberBytes::from_slice(r.slice()?);
                    let score = r.f64()?;
                    let op = r.u8()?;
                    Some(SubmitRec {
                        member,
                        score,
                        op: match op & !SCORES_FLAG {
                            0 => None,
                            1 => Some(UpdateOp::Set),
                            2 => Some(UpdateOp::Best),
                            3 => Some(UpdateOp::Incr),
                            _ => return None,
                        },
                        presence: match r.u8()? {
                            0 => Presence::Any,
                            1 => Presence::OnlyNew,
                            2 => Presence::OnlyExisting,
                            _ => return None,
                        },
                        cond: match r.u8()? {
                            0 => Cond::Always,
                            1 => Cond::Greater,
                            2 => Cond::Less,
                            _ => return None,
                        },
                        scores: if op & SCORES_FLAG != 0 {
                            let n = r.u8()?;
                            if n as usize > podium_engine::MAX_SORT_KEYS {
                                return None;
                            }
                            let mut v = Vec::with_capacity(n as usize);
                            for _ in 0..n {
                                let key = r.str()?;
                                v.push((
                                    key,
                                    match r.u8()? {
                                        0 => Num::Float(r.f64()?),
                                        1 => Num::Int(r.u64()? as i64),
                                        _ => return None,
                                    },
                                ));
                            }
                            Some(v)
                        } else {
                            None
                        },
                        name: r.opt_str()?,
                        data: r.opt_str()?,
                    })
                })?;
                LogOp::Submit { board, entries }
            }
            2 => LogOp::SetData {
                board: r.str()?,
                member: r.bytes()?,
                name: r.opt_str()?,
                data: r.opt_str()?,
            },
            3 => {
                let board = r.str()?;
                let members = r.list(4, R::bytes)?;
                LogOp::Remove { board, members }
            }
            4 => LogOp::RemoveRankRange {
                board: r.str()?,
                start: r.u64()?,
                stop: r.u64()?,
            },
            5 => LogOp::RemoveScoreRange {
                board: r.str()?,
                range: ScoreRange {
                    min: r.bound()?,
                    max: r.bound()?,
                },
            },
            6 => LogOp::Pop {
                board: r.str()?,
                count: r.u64()?,
                worst: r.u8()? != 0,
            },
            7 => LogOp::Create {
                board: r.str()?,
                config: r.config()?,
                if_absent: r.u8()? != 0,
            },
            8 => LogOp::Put {
                board: r.str()?,
                config: r.config()?,
            },
            9 => LogOp::Delete { board: r.str()? },
            10 => LogOp::Archive {
                board: r.str()?,
                archive: r.str()?,
            },
            11 => {
                let dest = r.str()?;
                let sources = r.list(12, |r| Some((r.str()?, r.f64()?)))?;
                let aggregate = match r.u8()? {
                    0 => Aggregate::Sum,
                    1 => Aggregate::Min,
                    2 => Aggregate::Max,
                    _ => return None,
                };
                LogOp::Combine {
                    dest,
                    sources,
                    aggregate,
                    intersect: r.u8()? != 0,
                }
            }
            12 => LogOp::Period {
                board: r.str()?,
                label: r.str()?,
            },
            13 => {
                let key = r.bytes()?;
                let pairs = r.list(8, |r| Some((r.bytes()?, r.bytes()?)))?;
                LogOp::HSet { key, pairs }
            }
            14 => {
                let key = r.bytes()?;
                let fields = r.list(4, R::bytes)?;
                LogOp::HDel { key, fields }
            }
            15 => LogOp::DelKey { key: r.bytes()? },
            16 => LogOp::Expire {
                key: r.bytes()?,
                at_ms: r.u64()? as i64,
            },
            17 => LogOp::Persist { key: r.bytes()? },
            18 => LogOp::FlushAll,
            tag @ (21 | 22) => {
                let kind = match r.u8()? {
                    0 => KeyType::Zset,
                    1 => KeyType::Hash,
                    2 => KeyType::String,
                    _ => return None,
                };
                let (from, to) = (r.bytes()?, r.bytes()?);
                if tag == 21 {
                    LogOp::RenameKey { from, to, kind }
                } else {
                    LogOp::CopyKey { from, to, kind }
                }
            }
            19 => {
                let board = r.str()?;
                let entries = r.list(12, |r| Some((r.bytes()?, r.f64()?)))?;
                LogOp::Replace { board, entries }
            }
            30 => LogOp::SetString {
                key: r.bytes()?,
                value: r.bytes()?,
                expiry: match r.u8()? {
                    0 => StrExpiry::Clear,
                    1 => StrExpiry::Keep,
                    2 => StrExpiry::At(r.u64()? as i64),
                    _ => return None,
                },
            },
            31 => LogOp::MSet {
                pairs: r.list(8, |r| Some((r.bytes()?, r.bytes()?)))?,
            },
            20 => LogOp::Unit(r.list(5, |r| match LogOp::decode(r.slice()?)? {
                LogOp::Unit(_) => None,
                part => Some(part),
            })?),
            23 => LogOp::Rename {
                pairs: r.list(8, |r| Some((r.bytes()?, r.bytes()?)))?,
            },
            40 => LogOp::HookEvents {
                board: r.str()?,
                hooks: r.list(16, |r| {
                    Some(HookBatch {
                        name: r.str()?,
                        url: r.str()?,
                        secret: r.str()?,
                        events: r.list(20, |r| {
                            let id = EventId::new(r.u64()?, r.u32()?);
                            let kind = Kind::from_name(&r.str()?)?;
                            let json = r.str()?.into_boxed_str();
                            Some(Event::from_parts(id, kind, json))
                        })?,
                    })
                })?,
            },
            41 => LogOp::HookAck {
                board: r.str()?,
                hook: r.str()?,
                upto: EventId::new(r.u64()?, r.u32()?),
            },
            _ => return None,
        };
        r.0.is_empty().then_some(op)
    }
}

struct W<'a>(&'a mut Vec<u8>);

impl W<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn bound(&mut self, b: Bound<Num>) {
        match b {
            Bound::Unbounded => self.u8(0),
            Bound::Included(Num::Float(x)) => {
                self.u8(1);
                self.f64(x);
            }
            Bound::Excluded(Num::Float(x)) => {
                self.u8(2);
                self.f64(x);
            }
            Bound::Included(Num::Int(i)) => {
                self.u8(3);
                self.u64(i as u64);
            }
            Bound::Excluded(Num::Int(i)) => {
                self.u8(4);
                self.u64(i as u64);
            }
        }
    }
    fn config(&mut self, c: &BoardConfig) {
        self.str(&c.to_json().to_string());
    }
}

struct R<'a>(&'a [u8]);

impl R<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    /// `count u32 | count × item`; reserves no more than the bytes left
    /// could hold (at least `min_item` bytes an item), so a damaged count
    /// cannot allocate.
    fn list<T>(
        &mut self,
        min_item: usize,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let n = self.u32()? as usize;
        let mut v = Vec::with_capacity(n.min(self.0.len() / min_item));
        for _ in 0..n {
            v.push(item(self)?);
        }
        Some(v)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn f64(&mut self) -> Option<f64> {
        Some(f64::from_bits(self.u64()?))
    }
    fn slice(&mut self) -> Option<&[u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        Some(self.slice()?.to_vec())
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
    fn bound(&mut self) -> Option<Bound<Num>> {
        match self.u8()? {
            0 => Some(Bound::Unbounded),
            1 => Some(Bound::Included(Num::Float(self.f64()?))),
            2 => Some(Bound::Excluded(Num::Float(self.f64()?))),
            3 => Some(Bound::Included(Num::Int(self.u64()? as i64))),
            4 => Some(Bound::Excluded(Num::Int(self.u64()? as i64))),
            _ => None,
        }
    }
    fn config(&mut self) -> Option<BoardConfig> {
        let json: serde_json::Value = serde_json::from_str(&self.str()?).ok()?;
        BoardConfig::from_json(&json).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_ops() -> Vec<LogOp> {
        let cfg = BoardConfig {
            max_members: Some(10),
            min_score: Some(f64::NEG_INFINITY),
            ..Default::default()
        };
        vec![
            LogOp::Submit {
                board: "b".into(),
                entries: vec![
                    SubmitRec {
                        scores: None,
                        member: b"alice"[..].into(),
                        score: 1.5,
                        op: Some(UpdateOp::Incr),
                        presence: Presence::OnlyExisting,
                        cond: Cond::Greater,
                        name: Some("Alice".into()),
                        data: Some("{\"lvl\":3}".into()),
                    },
                    SubmitRec {
                        scores: None,
                        member: [0xff, 0][..].into(),
                        score: f64::NEG_INFINITY,
                        op: None,
                        presence: Presence::Any,
                        cond: Cond::Always,
                        name: None,
                        data: None,
                    },
                ],
            },
            LogOp::SetData {
                board: "b".into(),
                member: b"m"[..].into(),
                name: None,
                data: Some(String::new()),
            },
            LogOp::Remove {
                board: "b".into(),
                members: vec![b"x".to_vec(), Vec::new()],
            },
            LogOp::RemoveRankRange {
                board: "b".into(),
                start: 1,
                stop: u64::MAX,
            },
            LogOp::RemoveScoreRange {
                board: "b".into(),
                range: ScoreRange {
                    min: Bound::Excluded(Num::Float(1.0)),
                    max: Bound::Unbounded,
                },
            },
            LogOp::Pop {
                board: "b".into(),
                count: 3,
                worst: true,
            },
            LogOp::Create {
                board: "é".into(),
                config: cfg.clone(),
                if_absent: true,
            },
            LogOp::Put {
                board: "b".into(),
                config: cfg,
            },
            LogOp::Delete { board: "b".into() },
            LogOp::Archive {
                board: "b".into(),
                archive: "b@2026-W47".into(),
            },
            LogOp::Combine {
                dest: "d".into(),
                sources: vec![("a".into(), 2.0), ("b".into(), -1.0)],
                aggregate: Aggregate::Max,
                intersect: true,
            },
            LogOp::Period {
                board: "b".into(),
                label: "2026-11-21".into(),
            },
            LogOp::HSet {
                key: b"h\xff".to_vec(),
                pairs: vec![(b"f".to_vec(), b"v".to_vec()), (Vec::new(), Vec::new())],
            },
            LogOp::HDel {
                key: b"h".to_vec(),
                fields: vec![b"f".to_vec()],
            },
            LogOp::Expire {
                key: b"k".to_vec(),
                at_ms: 1_790_000_000_000,
            },
            LogOp::Persist { key: b"k".to_vec() },
            LogOp::DelKey { key: b"k".to_vec() },
            LogOp::FlushAll,
            LogOp::RenameKey {
                from: b"a".to_vec(),
                to: b"b\xff".to_vec(),
                kind: KeyType::Hash,
            },
            LogOp::CopyKey {
                from: "é".into(),
                to: b"c".to_vec(),
                kind: KeyType::Zset,
            },
            LogOp::RenameKey {
                from: b"s".to_vec(),
                to: Vec::new(),
                kind: KeyType::String,
            },
            LogOp::Replace {
                board: "d".into(),
                entries: vec![(b"m".to_vec(), -0.0), (Vec::new(), f64::INFINITY)],
            },
            LogOp::SetString {
                key: b"s\xff".to_vec(),
                value: b"\x00v".to_vec(),
                expiry: StrExpiry::At(1_790_000_000_000),
            },
            LogOp::SetString {
                key: b"s".to_vec(),
                value: Vec::new(),
                expiry: StrExpiry::Keep,
            },
            LogOp::SetString {
                key: Vec::new(),
                value: b"v".to_vec(),
                expiry: StrExpiry::Clear,
            },
            LogOp::MSet {
                pairs: vec![(b"a".to_vec(), b"1".to_vec()), (Vec::new(), Vec::new())],
            },
            LogOp::Unit(vec![
                LogOp::HSet {
                    key: b"h".to_vec(),
                    pairs: vec![(b"f".to_vec(), b"v".to_vec())],
                },
                LogOp::FlushAll,
            ]),
            LogOp::Rename {
                pairs: vec![
                    (b"a".to_vec(), b"\x01\x05a".to_vec()),
                    (Vec::new(), b"x".to_vec()),
                ],
            },
        ]
    }

    #[test]
    fn pinned_bytes_of_a_key_rename() {
        let mut buf = Vec::new();
        LogOp::RenameKey {
            from: b"a".to_vec(),
            to: b"b".to_vec(),
            kind: KeyType::Hash,
        }
        .encode(&mut buf);
        assert_eq!(buf, [0x15, 1, 1, 0, 0, 0, b'a', 1, 0, 0, 0, b'b']);
        buf[1] = 3;
        assert_eq!(LogOp::decode(&buf), None, "an unknown kind");
    }

    #[test]
    fn every_op_round_trips() {
        for op in all_ops() {
            let mut buf = Vec::new();
            op.encode(&mut buf);
            assert_eq!(LogOp::decode(&buf), Some(op.clone()), "{op:?}");
            // Any truncation is refused, never misread.
            for cut in 0..buf.len() {
                assert_eq!(LogOp::decode(&buf[..cut]), None, "{op:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn pinned_bytes_of_a_submit() {
        // The layout docs/storage.md documents, byte for byte.
        let op = LogOp::Submit {
            board: "b".into(),
            entries: vec![SubmitRec {
                scores: None,
                member: b"m"[..].into(),
                score: 2.0,
                op: None,
                presence: Presence::Any,
                cond: Cond::Always,
                name: None,
                data: None,
            }],
        };
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let mut want = vec![1u8, 1, 0, 0, 0, b'b', 1, 0, 0, 0, 1, 0, 0, 0, b'm'];
        want.extend_from_slice(&2.0f64.to_bits().to_le_bytes());
        want.extend_from_slice(&[0, 0, 0, 0, 0]);
        assert_eq!(buf, want);
    }

    #[test]
    fn pinned_bytes_of_a_replace() {
        // As docs/storage.md shows it.
        let op = LogOp::Replace {
            board: "d".into(),
            entries: vec![(b"m".to_vec(), 1.0)],
        };
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let mut want = vec![19u8, 1, 0, 0, 0, b'd', 1, 0, 0, 0, 1, 0, 0, 0, b'm'];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        assert_eq!(buf, want);
    }

    #[test]
    fn pinned_bytes_of_a_set_string() {
        // docs/storage.md, "Record payloads".
        let op = LogOp::SetString {
            key: b"k".to_vec(),
            value: b"v".to_vec(),
            expiry: StrExpiry::At(1_790_000_000_000),
        };
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let want = [
            0x1e, 1, 0, 0, 0, b'k', 1, 0, 0, 0, b'v', 2, 0x00, 0x6c, 0x50, 0xc4, 0xa0, 0x01, 0, 0,
        ];
        assert_eq!(buf, want);
    }

    #[test]
    fn replace_replays_exactly_its_members() {
        let store = Store::new();
        LogOp::Create {
            board: "d".into(),
            config: BoardConfig::default(),
            if_absent: true,
        }
        .replay(&store);
        let put = |entries: Vec<(Vec<u8>, f64)>| {
            LogOp::Replace {
                board: "d".into(),
                entries,
            }
            .replay(&store);
        };
        put(vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), -0.0)]);
        put(vec![(b"b".to_vec(), 2.0), (b"c".to_vec(), 3.0)]);
        let members = store
            .read("d", |b| {
                b.iter()
                    .map(|(m, s, _)| (m.to_vec(), s))
                    .collect::<Vec<_>>()
            })
            .unwrap();
        assert_eq!(members, vec![(b"c".to_vec(), 3.0), (b"b".to_vec(), 2.0)]);
    }

    #[test]
    fn pinned_bytes_of_a_unit() {
        // docs/storage.md's example of tag 20.
        let op = LogOp::Unit(vec![LogOp::FlushAll, LogOp::DelKey { key: b"k".to_vec() }]);
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let want = [
            20u8, 2, 0, 0, 0, 1, 0, 0, 0, 18, 6, 0, 0, 0, 15, 1, 0, 0, 0, b'k',
        ];
        assert_eq!(buf, want);
        // A unit inside a unit is refused.
        let mut nested = Vec::new();
        LogOp::Unit(vec![op]).encode(&mut nested);
        assert_eq!(LogOp::decode(&nested), None);
    }

    #[test]
    fn replay_rebuilds_the_same_boards() {
        let store = Store::new();
        for op in all_ops().into_iter().take(12) {
            op.replay(&store);
        }
        // Submit then delete of "b", archive of a missing board refused,
        // combine into "d" of missing sources: an empty "d"; "é" created.
        let names: Vec<String> = store.list().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec!["d".to_string(), "é".to_string()]);
    }

    #[test]
    fn pinned_bytes_of_a_batch_rename() {
        // docs/storage.md's example of tag 23.
        let op = LogOp::Rename {
            pairs: vec![(b"k".to_vec(), b"\x01\x0fk".to_vec())],
        };
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let want = [23u8, 1, 0, 0, 0, 1, 0, 0, 0, b'k', 3, 0, 0, 0, 1, 15, b'k'];
        assert_eq!(buf, want);
    }

    #[test]
    fn pinned_bytes_of_hook_records() {
        // docs/storage.md's examples of tags 40 and 41.
        let op = LogOp::HookEvents {
            board: "b".into(),
            hooks: vec![HookBatch {
                name: "h".into(),
                url: "u".into(),
                secret: "s".into(),
                events: vec![Event::from_parts(
                    EventId::new(5, 1),
                    Kind::Deleted,
                    "{}".into(),
                )],
            }],
        };
        let mut buf = Vec::new();
        op.encode(&mut buf);
        #[rustfmt::skip]
        let want = [
            40u8, 1, 0, 0, 0, b'b', 1, 0, 0, 0,
            1, 0, 0, 0, b'h', 1, 0, 0, 0, b'u', 1, 0, 0, 0, b's', 1, 0, 0, 0,
            5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
            7, 0, 0, 0, b'd', b'e', b'l', b'e', b't', b'e', b'd', 2, 0, 0, 0, b'{', b'}',
        ];
        assert_eq!(buf, want);
        assert_eq!(LogOp::decode(&buf), Some(op));
        let ack = LogOp::HookAck {
            board: "b".into(),
            hook: "h".into(),
            upto: EventId::new(5, 1),
        };
        buf.clear();
        ack.encode(&mut buf);
        #[rustfmt::skip]
        let want = [
            41u8, 1, 0, 0, 0, b'b', 1, 0, 0, 0, b'h',
            5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
        ];
        assert_eq!(buf, want);
        assert_eq!(LogOp::decode(&buf), Some(ack));
    }
}
