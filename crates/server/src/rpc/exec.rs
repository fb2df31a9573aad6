//! Running a typed [`Call`]: its operation's `run` on the [`Backend`] (as
//! the HTTP handlers run it), the result DTO from `podium_core::api`
//! encoded as a MessagePack map with the HTTP API's field names; and the
//! connection's authentication state.
//!
//! Results come in four kinds ([`Exec`]): an answer at once; a future,
//! whose first poll starts the operation (a write on the embedded engine
//! applies there) and which resolves once it is done (durable, for a
//! write) — every backend call is one, and the embedded engine's reads
//! resolve at that first poll; large lists (`export`, long `range_by_*`)
//! return a [`Streamed`] result: the encoded prefix of the result and its
//! entry count, plus a function reading later entries chunk by chunk,
//! which the connection writes to the socket as it goes; and, for a
//! stream whose head needs the network first (`export` on Redis), a
//! future of one of those.
//!
//! Speed paths are methods of the trait with a general default:
//! `submit_many`'s result is written straight from the engine's results
//! beside the applied records ([`Backend::submit_records`]); when the
//! engine answers reads in place ([`Backend::in_place`]), page reads answer
//! at once, ranges and `export` stream in place under the board's read
//! lock, and a search that builds an index runs off the async workers.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use super::method::{Call, Method};
use crate::rate::{ClientRate, RateLimits};
use crate::settings::{ApiKey, Scope};
use podium_core::backend::{Backend, InPlace};
use podium_core::entry::SubmitRec;
use podium_core::error::{ApiError, Code};
use podium_core::msgpack::encode_entry_ref;
pub use podium_core::msgpack::{visit_chunk, Chunk};
use podium_core::ops::import::Importer;
use podium_core::ops::{self, Operation};

/// Entries in the first chunk of a streamed result, read before the answer
/// starts; later chunks are sized by the connection (see `conn`).
pub const FIRST_CHUNK: usize = 256;

/// An encoded result (no envelope), or the error to answer with.
pub type Res = Result<Vec<u8>, ApiError>;

pub type Pending = Pin<Box<dyn Future<Output = Res> + Send>>;

pub type ChunkFuture = Pin<Box<dyn Future<Output = Result<Chunk, ApiError>> + Send>>;

/// Reads `want` entries starting `done` entries into the result.
pub type Fetch = Arc<dyn Fn(u64, usize) -> ChunkFuture + Send + Sync>;

/// A result too large to hold: `head` (the result up to and including the
/// header of its entry array, which declares `total` entries), the first
/// entries, and how to read the rest.
pub struct Streamed {
    pub head: Vec<u8>,
    pub total: u64,
    pub first: Chunk,
    pub fetch: Fetch,
}

pub enum Exec {
    Ready(Res),
    /// A write: the first poll applies it (the connection polls it before
    /// reading the next request, so writes apply in the order sent).
    Later(Pending),
    Stream(Streamed),
    /// A result whose kind is known only after a backend call (a Redis
    /// `export` learns its size, then streams).
    Deferred(Pin<Box<dyn Future<Output = Exec> + Send>>),
}

pub(crate) fn encode<T: Serialize + ?Sized>(v: &T) -> Res {
    rmp_serde::to_vec_named(v)
        .map_err(|e| ApiError::new(Code::Internal, format!("encoding the result: {e}")))
}

/// [`visit_chunk`] on the blocking pool: a chunk is milliseconds of work
/// under the board's read lock, off the async workers (as HTTP's export).
fn visit_chunk_off(
    svc: &Arc<dyn InPlace>,
    board: &Arc<str>,
    skip: u64,
    want: usize,
    from_worst: bool,
    with_data: bool,
) -> ChunkFuture {
    let (svc, board) = (svc.clone(), board.clone());
    Box::pin(async move {
        tokio::task::spawn_blocking(move || {
            visit_chunk(&*svc, &board, skip, want, from_worst, with_data)
        })
        .await
        .map_err(|e| ApiError::new(Code::Internal, format!("stream task failed: {e}")))?
    })
}

/// `top`'s result written as `rmp_serde` writes [`podium_core::api::TopOut`]
/// (a unit test holds them byte for byte), its entries straight from the
/// board: a page read, the latency-bound call, allocates no `EntryOut`
/// with copies of its strings per entry.
fn top(svc: &dyn InPlace, op: &ops::Top) -> Res {
    use rmp::encode as w;
    let (board, with_data) = (op.board.as_str(), op.with_data);
    let mut entries = Vec::with_capacity(op.page_size.unwrap_or(25).min(1024) as usize * 40);
    let mut count = 0u32;
    let head = svc.top_visit(op, &mut |e| {
        count += 1;
        encode_entry_ref(&mut entries, &e, with_data)
    })?;
    let mut out = Vec::with_capacity(entries.len() + board.len() + 80);
    // Writing into a Vec cannot fail.
    let _ = w::write_map_len(&mut out, 7);
    let _ = w::write_str(&mut out, "board");
    let _ = w::write_str(&mut out, board);
    let _ = w::write_str(&mut out, "ranking");
    let _ = w::write_str(&mut out, head.ranking);
    for (k, v) in [
        ("page", head.page),
        ("page_size", head.page_size),
        ("total", head.total),
        ("total_pages", head.total_pages),
    ] {
        let _ = w::write_str(&mut out, k);
        let _ = w::write_uint(&mut out, v);
    }
    let _ = w::write_str(&mut out, "entries");
    let _ = w::write_array_len(&mut out, count);
    out.extend_from_slice(&entries);
    Ok(out)
}

fn encode_entries<T: Serialize>(items: &[T]) -> Result<Chunk, ApiError> {
    let mut bytes = Vec::with_capacity(items.len() * 48);
    for it in items {
        rmp_serde::encode::write_named(&mut bytes, it)
            .map_err(|e| ApiError::new(Code::Internal, format!("encoding the result: {e}")))?;
    }
    Ok(Chunk {
        bytes,
        count: items.len(),
    })
}

/// `submit_many`'s result, `{board, results}`, written as `rmp_serde`
/// writes the API's `SubmitItem`s (a unit test holds them byte for byte) but
/// straight from the entries and the engine's results: no `SubmitOut` with
/// a copy of each member id, no serde per item.
fn encode_submit_many<'a>(
    board: &str,
    members: impl Iterator<Item = &'a [u8]>,
    results: &[Result<podium_engine::SubmitResult, ApiError>],
) -> Vec<u8> {
    use rmp::encode as w;
    let mut out = Vec::with_capacity(32 + board.len() + results.len() * 80);
    let opt_f64 = |out: &mut Vec<u8>, v: Option<f64>| match v {
        Some(x) => drop(w::write_f64(out, x)),
        None => drop(w::write_nil(out)),
    };
    // Writing into a Vec cannot fail.
    let _ = w::write_map_len(&mut out, 2);
    let _ = w::write_str(&mut out, "board");
    let _ = w::write_str(&mut out, board);
    let _ = w::write_str(&mut out, "results");
    let _ = w::write_array_len(&mut out, results.len() as u32);
    // A member id is UTF-8 (it came in as a str): written as one.
    let member = |out: &mut Vec<u8>, m: &[u8]| {
        let _ = w::write_str_len(out, m.len() as u32);
        out.extend_from_slice(m);
    };
    for (m, r) in members.zip(results) {
        match r {
            Ok(r) => {
                let _ = w::write_map_len(&mut out, 8);
                let _ = w::write_str(&mut out, "member");
                member(&mut out, m);
                let _ = w::write_str(&mut out, "score");
                opt_f64(&mut out, r.score);
                let _ = w::write_str(&mut out, "rank");
                match r.rank {
                    Some(k) => drop(w::write_uint(&mut out, k)),
                    None => drop(w::write_nil(&mut out)),
                }
                let _ = w::write_str(&mut out, "previous");
                opt_f64(&mut out, r.previous);
                let _ = w::write_str(&mut out, "changed");
                let _ = w::write_bool(&mut out, r.changed);
                let _ = w::write_str(&mut out, "created");
                let _ = w::write_bool(&mut out, r.created);
                let _ = w::write_str(&mut out, "applied");
                let _ = w::write_bool(&mut out, r.applied);
                let _ = w::write_str(&mut out, "evicted");
                let _ = w::write_uint(&mut out, r.evicted);
            }
            Err(err) => {
                let _ = w::write_map_len(&mut out, 2);
                let _ = w::write_str(&mut out, "member");
                member(&mut out, m);
                let _ = w::write_str(&mut out, "error");
                let _ = w::write_map_len(&mut out, 2);
                let _ = w::write_str(&mut out, "code");
                let _ = w::write_str(&mut out, err.code.as_str());
                let _ = w::write_str(&mut out, "message");
                let _ = w::write_str(&mut out, &err.message);
            }
        }
    }
    out
}

// HTTP answers these with inline JSON objects; the same fields here.

#[derive(Serialize)]
struct DeletedOut<'a> {
    board: &'a str,
    deleted: bool,
}

#[derive(Serialize)]
struct AuthOut {
    scope: &'static str,
}

/// What every connection of one listener shares.
pub struct Shared {
    pub api_keys: Vec<ApiKey>,
    /// The server's rate limits.
    pub rate: Arc<RateLimits>,
}

impl Shared {
    /// The position of the key equal to `presented`, comparing with every
    /// key so the time taken does not tell which matched.
    fn position_of(&self, presented: &str) -> Option<usize> {
        ApiKey::position_among(&self.api_keys, presented.as_bytes())
    }
}

/// One connection's authentication and rate limits.
pub struct Session {
    shared: Arc<Shared>,
    /// The key's scope; without keys configured, `Admin`.
    scope: Option<Scope>,
    rate: ClientRate,
}

impl Session {
    /// A session not limited by client address.
    pub fn new(shared: Arc<Shared>) -> Session {
        Session::for_peer(shared, None)
    }

    /// The session of a connection from `peer`.
    pub fn for_peer(shared: Arc<Shared>, peer: Option<IpAddr>) -> Session {
        let scope = shared.api_keys.is_empty().then_some(Scope::Admin);
        let rate = shared.rate.client(peer);
        Session {
            shared,
            scope,
            rate,
        }
    }

    pub fn authenticated(&self) -> bool {
        self.scope.is_some()
    }

    /// Whether this connection may call `m` (HTTP's codes and texts), and
    /// the memory budget lets it run. Every call, `auth` included, takes a
    /// token of the rate limits first.
    pub fn check(&self, m: Method) -> Result<(), ApiError> {
        self.rate.take().map_err(|r| r.to_error())?;
        let Some(needed) = m.scope() else {
            return Ok(());
        };
        if let Some(op) = m.op() {
            podium_core::memory::admit(op)?;
        }
        match self.scope {
            None => Err(ApiError::new(
                Code::Unauthorized,
                "this request needs an API key: call auth(key) first",
            )),
            Some(s) if !s.allows(needed) => Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "this request needs a key of scope {}; this key has scope {}",
                    needed.as_str(),
                    s.as_str()
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// `auth(key)`. Without keys configured every call is allowed, so any
    /// key is accepted (generic clients may authenticate unconditionally).
    /// A wrong key leaves the connection as it was.
    pub fn auth(&mut self, key: &str) -> Res {
        if self.shared.api_keys.is_empty() {
            return encode(&AuthOut { scope: "admin" });
        }
        match self.shared.position_of(key) {
            Some(i) => {
                let s = self.shared.api_keys[i].scope;
                self.scope = Some(s);
                self.rate.set_key(Some(i));
                encode(&AuthOut { scope: s.as_str() })
            }
            None => Err(ApiError::new(Code::Unauthorized, "unknown API key")),
        }
    }
}

fn later<F>(f: F) -> Exec
where
    F: Future<Output = Res> + Send + 'static,
{
    Exec::Later(Box::pin(f))
}

/// Runs `call` (`Auth` is the session's: see [`Session::auth`];
/// `Subscribe` and `Unsubscribe` the connection's).
pub fn execute(be: &Arc<dyn Backend>, call: Call) -> Exec {
    match be.in_place() {
        Some(local) => in_place(local, be, call),
        None => via_trait(be.clone(), call),
    }
}

/// `op` run on `be`, its result encoded when it is done.
fn run<O>(be: Arc<dyn Backend>, op: O) -> Exec
where
    O: Operation + 'static,
    O::Out: Serialize,
{
    later(async move { encode(&op.run(&*be).await?) })
}

/// Runs `call` through the trait's methods, as on any backend.
fn via_trait(be: Arc<dyn Backend>, call: Call) -> Exec {
    match call {
        // ------------------------------------------------------ writes
        Call::Submit(op) => run(be, op),
        Call::SubmitMany(op) => {
            // A refused entry refuses the whole batch, as `submit_many` does.
            match op
                .entries
                .into_iter()
                .map(|e| SubmitRec::from_entry(e).map_err(|(err, _)| err))
                .collect()
            {
                Ok(recs) => submit_records(be, op.board, recs),
                Err(e) => Exec::Ready(Err(e)),
            }
        }
        Call::Records {
            board,
            recs,
            import: false,
        } => submit_records(be, board, recs),
        Call::Records {
            board,
            recs,
            import: true,
        } => later(async move {
            let mut imp = Importer::new(&*be, board, recs.len());
            for (i, rec) in recs.into_iter().enumerate() {
                imp.push_record(i as u64 + 1, rec);
            }
            imp.flush().await?;
            encode(&imp.finish())
        }),
        Call::Remove(op) => run(be, op),
        Call::RemoveRange(op) => run(be, op),
        Call::SetData(op) => run(be, op),
        Call::BoardCreate(op) => run(be, op),
        Call::BoardUpdate(op) => run(be, op),
        Call::BoardPatch(op) => run(be, op),
        Call::BoardDelete(op) => later(async move {
            op.run(&*be).await?;
            encode(&DeletedOut {
                board: &op.board,
                deleted: true,
            })
        }),
        Call::Reset(op) => run(be, op),
        Call::Combine(op) => run(be, op),
        // `import` of one batch, with HTTP import's rules: an entry that
        // fails fails alone (`line` is its 1-based position in the batch)
        // and the rest apply; errors of the board itself fail the call.
        Call::Import { board, entries } => later(async move {
            let mut imp = Importer::new(&*be, board, entries.len());
            for (i, e) in entries.into_iter().enumerate() {
                let line = i as u64 + 1;
                match e {
                    Ok(e) => imp.push(line, e),
                    Err((member, err)) => imp.fail(line, member, &err),
                }
            }
            imp.flush().await?;
            encode(&imp.finish())
        }),

        // ------------------------------------------------------- reads
        Call::Entry(op) => run(be, op),
        Call::Rank(op) => run(be, op),
        Call::Count(op) => run(be, op),
        Call::Top(op) => run(be, op),
        // Off the embedded engine a range is one backend call of at most
        // MAX_RANGE entries (as HTTP answers it), encoded whole.
        Call::RangeByRank(op) => run(be, op),
        Call::RangeByScore(op) => run(be, op),
        Call::Search(op) => run(be, op),
        Call::Around(op) => run(be, op),
        Call::Ranks(op) => run(be, op),
        Call::Percentile(op) => run(be, op),
        Call::ScoreAtPercentile(op) => run(be, op),
        Call::Boards(op) => run(be, op),
        Call::BoardInfo(op) => run(be, op),
        Call::ResortStatus(op) => run(be, op),
        Call::Export { board } => Exec::Deferred(Box::pin(export_chunks(be, board))),
        Call::Auth { .. } => ready_err("auth is the session's"),
        Call::Subscribe(_) | Call::Unsubscribe { .. } => {
            ready_err("subscriptions are the connection's")
        }
    }
}

fn ready_err(why: &str) -> Exec {
    Exec::Ready(Err(ApiError::new(Code::Internal, why)))
}

/// `submit_many` of entries made into records: the results are written
/// straight from the engine's, with no `SubmitItem` copying each member id.
fn submit_records(be: Arc<dyn Backend>, board: String, recs: Vec<SubmitRec>) -> Exec {
    later(async move {
        let (results, recs) = be.submit_records(&board, recs).await?;
        let members = recs.iter().map(|r| r.member.as_slice());
        Ok(encode_submit_many(&board, members, &results))
    })
}

/// The embedded engine's shortcuts; a call that has none goes through the
/// trait like on any backend.
fn in_place(svc: &Arc<dyn InPlace>, be: &Arc<dyn Backend>, call: Call) -> Exec {
    let ready = |r: Result<Vec<u8>, ApiError>| Exec::Ready(r);
    match call {
        Call::RangeByRank(op) => range_by_rank(svc.clone(), op),
        Call::RangeByScore(op) => range_by_score(svc, op),
        Call::Search(op) => {
            // The first search of a large board builds its index: off the
            // async workers; later ones are reads like `top`, answered here.
            if svc.search_is_cheap(&op.board) {
                return ready(svc.search(&op).and_then(|o| encode(&o)));
            }
            let svc = svc.clone();
            Exec::Later(Box::pin(async move {
                tokio::task::spawn_blocking(move || svc.search(&op).and_then(|o| encode(&o)))
                    .await
                    .map_err(|e| ApiError::new(Code::Internal, e.to_string()))?
            }))
        }
        // A page read, the latency-bound call: encoded straight from the
        // board, on the connection's task.
        Call::Top(op) => ready(top(&**svc, &op)),
        Call::Export { board } => export(svc.clone(), board),
        other => via_trait(be.clone(), other),
    }
}

/// `range_by_score` in place: whole when short, else its count first and
/// then chunk after chunk, each a read of its own.
fn range_by_score(svc: &Arc<dyn InPlace>, op: ops::RangeByScore) -> Exec {
    let ready = |r: Result<Vec<u8>, ApiError>| Exec::Ready(r);
    let (offset, limit) = (op.offset(), op.limit());
    // The window `offset + done`, `want` entries long, of the same range.
    let window = move |op: &ops::RangeByScore, done: u64, want: u64| ops::RangeByScore {
        offset: Some(offset + done),
        limit: Some(want),
        ..op.clone()
    };
    // A short range is the request as it came: no window to cut.
    if limit <= FIRST_CHUNK as u64 {
        return ready(svc.range_by_score(&op).and_then(|o| encode(&o)));
    }
    // The count comes first; the first chunk is read with it so that a bad
    // range is an error answer, not a broken stream.
    let mut first = match svc.range_by_score(&window(&op, 0, FIRST_CHUNK as u64)) {
        Ok(r) => r,
        Err(e) => return ready(Err(e)),
    };
    let count = ops::Count {
        board: op.board.clone(),
        bounds: op.bounds,
    };
    let total = match svc.count(&count) {
        Ok(c) => limit.min(c.count.saturating_sub(offset)),
        Err(e) => return ready(Err(e)),
    };
    first.entries.truncate(total as usize);
    let chunk = match encode_entries(&first.entries) {
        Ok(c) => c,
        Err(e) => return ready(Err(e)),
    };
    first.entries.clear();
    let svc = svc.clone();
    let fetch: Fetch = Arc::new(move |done, want| {
        let (svc, op) = (svc.clone(), window(&op, done, want as u64));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || encode_entries(&svc.range_by_score(&op)?.entries))
                .await
                .map_err(|e| ApiError::new(Code::Internal, format!("stream task failed: {e}")))?
        })
    });
    streamed(&first, total, chunk, fetch)
}

/// A [`podium_core::api::RangeOut`] streamed: its fields as the DTO encodes them,
/// `entries` last with the declared count.
fn streamed(out: &podium_core::api::RangeOut, total: u64, first: Chunk, fetch: Fetch) -> Exec {
    let head = match range_head(out, total) {
        Ok(h) => h,
        Err(e) => return Exec::Ready(Err(e)),
    };
    if first.count as u64 >= total {
        let mut all = head;
        all.extend_from_slice(&first.bytes);
        return Exec::Ready(Ok(all));
    }
    Exec::Stream(Streamed {
        head,
        total,
        first,
        fetch,
    })
}

/// The encoding of `out` (its entries emptied) up to its entry array,
/// whose header declares `total` entries. `entries` is the DTO's last
/// field, so its empty array is the encoding's last byte.
fn range_head(out: &podium_core::api::RangeOut, total: u64) -> Res {
    debug_assert!(out.entries.is_empty());
    let mut head = encode(out)?;
    if head.pop() != Some(0x90) {
        return Err(ApiError::new(Code::Internal, "unexpected result encoding"));
    }
    let n = u32::try_from(total).map_err(|_| ApiError::bad("too many entries for one answer"))?;
    let _ = rmp::encode::write_array_len(&mut head, n);
    Ok(head)
}

fn range_by_rank(svc: Arc<dyn InPlace>, op: ops::RangeByRank) -> Exec {
    let ready = |r: Res| Exec::Ready(r);
    let (start, stop) = (op.start, op.stop);
    // A short range, and a bad one (the engine's error, before anything is
    // read), are answered whole.
    if op.check().is_err() || stop - start < FIRST_CHUNK as u64 {
        return ready(svc.range_by_rank(&op).and_then(|o| encode(&o)));
    }
    // The first window gives the board's size, and with it the count.
    let first_window = ops::RangeByRank {
        stop: start + FIRST_CHUNK as u64 - 1,
        ..op.clone()
    };
    let mut first = match svc.range_by_rank(&first_window) {
        Ok(r) => r,
        Err(e) => return ready(Err(e)),
    };
    let total = stop.min(first.total).saturating_sub(start - 1);
    let chunk = match encode_entries(&first.entries) {
        Ok(c) => c,
        Err(e) => return ready(Err(e)),
    };
    first.entries.clear();
    let (from_worst, with_data) = (op.from_worst, op.with_data);
    let board: Arc<str> = op.board.into();
    let fetch: Fetch = Arc::new(move |done, want| {
        visit_chunk_off(&svc, &board, start - 1 + done, want, from_worst, with_data)
    });
    streamed(&first, total, chunk, fetch)
}

/// `export`: every entry, best first, as `export`'s NDJSON lines are
/// (`member`, `score`, `rank`, `name`, `data`), in one array.
fn export(svc: Arc<dyn InPlace>, board: String) -> Exec {
    let total = match svc.board_info(&board) {
        Ok(i) => i.members,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let first = match visit_chunk(
        &*svc,
        &board,
        0,
        FIRST_CHUNK.min(total as usize),
        false,
        true,
    ) {
        Ok(c) => c,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let board: Arc<str> = board.into();
    let fetch: Fetch =
        Arc::new(move |done, want| visit_chunk_off(&svc, &board, done, want, false, true));
    export_result(total, first, fetch)
}

/// `export` as one array of `total` entries: whole when `first` holds them
/// all, else streamed.
fn export_result(total: u64, first: Chunk, fetch: Fetch) -> Exec {
    let mut head = Vec::with_capacity(5);
    let n = match u32::try_from(total) {
        Ok(n) => n,
        Err(_) => return Exec::Ready(Err(ApiError::bad("too many entries for one answer"))),
    };
    let _ = rmp::encode::write_array_len(&mut head, n);
    if first.count as u64 >= total {
        head.extend_from_slice(&first.bytes);
        return Exec::Ready(Ok(head));
    }
    Exec::Stream(Streamed {
        head,
        total,
        first,
        fetch,
    })
}

/// `export` through the trait's chunked read: the board's size first (the
/// array's header declares it), then `export_chunk` after `export_chunk`.
/// `ExportLine` encodes as the in-place writer's entries do.
async fn export_chunks(be: Arc<dyn Backend>, board: String) -> Exec {
    let info = ops::BoardInfo { board };
    let total = match be.board_info(&info).await {
        Ok(i) => i.members,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let board = info.board;
    let chunk = move |pos: usize, limit: usize| ops::ExportChunk {
        board: board.clone(),
        pos,
        limit,
    };
    let first = match be
        .export_chunk(&chunk(0, FIRST_CHUNK.min(total as usize)))
        .await
        .and_then(|lines| encode_entries(&lines))
    {
        Ok(c) => c,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let fetch: Fetch = Arc::new(move |done, want| {
        let (be, req) = (be.clone(), chunk(done as usize, want));
        Box::pin(async move { encode_entries(&be.export_chunk(&req).await?) })
    });
    export_result(total, first, fetch)
}

#[cfg(test)]
mod tests;
