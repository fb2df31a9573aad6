//! Running a typed [`Call`]: one [`Backend`] method per operation (the
//! ones the HTTP handlers call), its result DTO from `podium_core::api` encoded
//! as a MessagePack map with the HTTP API's field names; and the
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
//! On the embedded engine ([`Backend::as_embedded`]) a few calls take
//! shortcuts the trait cannot express ([`embedded`]): `submit_many`'s
//! result written straight from the engine's, ranges and `export`
//! streamed in place under the board's read lock, a search that builds an
//! index run off the async workers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

use super::method::{Call, ImportEntry, Method, RangeBy};
use crate::settings::{ApiKey, Scope};
use podium_core::api::{ErrorBody, SubmitIn, SubmitItem};
use podium_core::backend::Backend;
use podium_core::backend::MAX_RANGE;
use podium_core::error::{ApiError, Code};
use podium_store::service::Service;
use podium_store::storage::record::SubmitRec;

/// Entries in the first chunk of a streamed result, read before the answer
/// starts; later chunks are sized by the connection (see `conn`).
pub const FIRST_CHUNK: usize = 256;

/// An encoded result (no envelope), or the error to answer with.
pub type Res = Result<Vec<u8>, ApiError>;

pub type Pending = Pin<Box<dyn Future<Output = Res> + Send>>;

/// Encoded entries and how many.
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub count: usize,
}

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

/// One entry as `rmp_serde` encodes [`podium_core::api::EntryOut`] (and, with
/// `with_data`, `export`'s lines), byte for byte, written straight from the
/// board: a streamed export of millions of entries then costs no
/// allocation per entry and no trip through the DTOs. The fixed parts (the
/// map header, the field names, the float marker) are constant bytes and
/// an ASCII member id of up to 31 bytes is copied behind a one-byte header,
/// the common entry costing a handful of copies; `data` is transcoded from
/// its JSON text without building a tree ([`super::json_mp`]).
#[inline(always)]
fn encode_entry_ref(out: &mut Vec<u8>, e: &podium_engine::EntryRef<'_>, with_data: bool) {
    let data = e.data.filter(|_| with_data);
    if e.name.is_none() && data.is_none() && encode_bare(out, e.member, e.score, e.rank) {
        return;
    }
    encode_entry_full(out, e, data);
}

/// [`encode_entry_ref`] of any entry; `data` if it is to be written.
#[inline(never)]
fn encode_entry_full(out: &mut Vec<u8>, e: &podium_engine::EntryRef<'_>, data: Option<&str>) {
    use rmp::encode as w;
    let m = e.member;
    out.reserve(m.len() + e.name.map_or(0, str::len) + data.map_or(0, str::len) + 48);
    let head = out.len();
    // A fixmap: at most 5 fields. `data` is counted until it fails to parse.
    out.push(0x80 | (3 + e.name.is_some() as u8 + data.is_some() as u8));
    out.extend_from_slice(b"\xa6member");
    if m.len() < 32 && m.is_ascii() {
        out.push(0xa0 | m.len() as u8);
        out.extend_from_slice(m);
    } else {
        // Writing into a Vec cannot fail.
        let _ = match std::str::from_utf8(m) {
            Ok(m) => w::write_str(out, m),
            Err(_) => w::write_str(out, &String::from_utf8_lossy(m)),
        };
    }
    out.extend_from_slice(b"\xa5score\xcb");
    out.extend_from_slice(&e.score.to_bits().to_be_bytes());
    out.extend_from_slice(b"\xa4rank");
    let r = e.rank;
    if r < 128 {
        out.push(r as u8);
    } else {
        let _ = w::write_uint(out, r);
    }
    if let Some(name) = e.name {
        let _ = w::write_str(out, "name");
        let _ = w::write_str(out, name);
    }
    if let Some(d) = data {
        let key = out.len();
        let _ = w::write_str(out, "data");
        if !super::json_mp::transcode(d, out) {
            // Text a `Value` would reorder (or not JSON at all): the DTO's
            // own way, which leaves the field out when it does not parse.
            match serde_json::from_str::<serde_json::Value>(d) {
                Ok(v) => {
                    let _ = rmp_serde::encode::write_named(out, &v);
                }
                Err(_) => {
                    out.truncate(key);
                    out[head] -= 1;
                }
            }
        }
    }
}

/// Most bytes [`encode_bare`] writes: map header and `member` key (8), a
/// fixstr of up to 31 bytes (32), `score` and its float 64 (15), `rank`
/// and a uint 64 (14).
const BARE_MAX: usize = 8 + 32 + 15 + 14;

/// [`encode_entry_ref`]'s common case, the bare entry `{member, score,
/// rank}` of an ASCII id shorter than 32 bytes, written with a few
/// fixed-size stores: an export of millions of entries is mostly these,
/// and byte-by-byte `Vec` pushes and a `memcpy` call per field cost more
/// than the board walk that finds the entry. False (nothing written) for
/// any other id.
#[inline(always)]
fn encode_bare(out: &mut Vec<u8>, m: &[u8], score: f64, rank: u64) -> bool {
    let n = m.len();
    if n >= 32 {
        return false;
    }
    out.reserve(BARE_MAX);
    let start = out.len();
    // SAFETY: `reserve` left at least BARE_MAX writable bytes at `p`, and
    // every store below lands in `p..p + BARE_MAX` (offsets are summed in
    // BARE_MAX's doc); `copy_short` reads only `m`'s `n` bytes. The length
    // is set only once every byte up to it has been written.
    unsafe {
        let p = out.as_mut_ptr().add(start);
        p.cast::<[u8; 8]>().write_unaligned(*b"\x83\xa6member");
        p.add(8).write(0xa0 | n as u8);
        if !copy_short(m.as_ptr(), p.add(9), n) {
            return false;
        }
        let q = p.add(9 + n);
        // The marker's eighth byte is overwritten by the score's first.
        q.cast::<[u8; 8]>().write_unaligned(*b"\xa5score\xcb\0");
        q.add(7)
            .cast::<[u8; 8]>()
            .write_unaligned(score.to_bits().to_be_bytes());
        q.add(15)
            .cast::<[u8; 8]>()
            .write_unaligned(*b"\xa4rank\0\0\0");
        // rmp's smallest encoding of an unsigned integer.
        let r = q.add(20);
        let tail = if rank < 128 {
            r.write(rank as u8);
            1
        } else if rank < 1 << 8 {
            r.cast::<[u8; 2]>().write_unaligned([0xcc, rank as u8]);
            2
        } else if rank < 1 << 16 {
            r.write(0xcd);
            r.add(1)
                .cast::<[u8; 2]>()
                .write_unaligned((rank as u16).to_be_bytes());
            3
        } else if rank < 1 << 32 {
            r.write(0xce);
            r.add(1)
                .cast::<[u8; 4]>()
                .write_unaligned((rank as u32).to_be_bytes());
            5
        } else {
            r.write(0xcf);
            r.add(1)
                .cast::<[u8; 8]>()
                .write_unaligned(rank.to_be_bytes());
            9
        };
        out.set_len(start + 9 + n + 20 + tail);
    }
    true
}

/// Copies `n` (< 32) bytes from `src` to `dst` with at most four
/// overlapping word loads and stores (no `memcpy` call for a dozen bytes),
/// and tells whether they are all ASCII, seen from the same loads.
///
/// # Safety
/// `src..src + n` is readable, `dst..dst + n` writable.
#[inline(always)]
unsafe fn copy_short(src: *const u8, dst: *mut u8, n: usize) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    unsafe {
        if n >= 16 {
            let a = src.cast::<[u64; 2]>().read_unaligned();
            let b = src.add(n - 16).cast::<[u64; 2]>().read_unaligned();
            dst.cast::<[u64; 2]>().write_unaligned(a);
            dst.add(n - 16).cast::<[u64; 2]>().write_unaligned(b);
            (a[0] | a[1] | b[0] | b[1]) & HIGH == 0
        } else if n >= 8 {
            let a = src.cast::<u64>().read_unaligned();
            let b = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
            (a | b) & HIGH == 0
        } else if n >= 4 {
            let a = src.cast::<u32>().read_unaligned();
            let b = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
            (a | b) & HIGH as u32 == 0
        } else {
            let mut all = 0u8;
            for i in 0..n {
                let c = src.add(i).read();
                dst.add(i).write(c);
                all |= c;
            }
            all < 0x80
        }
    }
}

/// [`visit_chunk`] on the blocking pool: a chunk is milliseconds of work
/// under the board's read lock, off the async workers (as HTTP's export).
fn visit_chunk_off(
    svc: &Arc<Service>,
    board: &Arc<str>,
    skip: u64,
    want: usize,
    from_worst: bool,
    with_data: bool,
) -> ChunkFuture {
    let (svc, board) = (svc.clone(), board.clone());
    Box::pin(async move {
        tokio::task::spawn_blocking(move || {
            visit_chunk(&svc, &board, skip, want, from_worst, with_data)
        })
        .await
        .map_err(|e| ApiError::new(Code::Internal, format!("stream task failed: {e}")))?
    })
}

/// A chunk of entries read in place by [`Service::visit_entries`], as
/// the connection streams them (public for podium-bench's export-encode
/// harness).
pub fn visit_chunk(
    svc: &Service,
    board: &str,
    skip: u64,
    want: usize,
    from_worst: bool,
    with_data: bool,
) -> Result<Chunk, ApiError> {
    // An entry without a name or data takes 24 bytes plus its member id
    // and rank: room for ids of ~20 bytes, so the chunk is not regrown
    // (and copied) as it fills. Entries with `data` can be 100× that: the
    // first one sizes the rest (an eighth spare for the variation).
    const GUESS: usize = 56;
    let mut bytes = Vec::with_capacity(want * GUESS);
    let mut first = true;
    let count = svc.visit_entries(board, skip as usize, want, from_worst, |e| {
        encode_entry_ref(&mut bytes, &e, with_data);
        if first && bytes.len() > GUESS {
            bytes.reserve(bytes.len() * (want - 1) / 8 * 9);
        }
        first = false;
    })?;
    Ok(Chunk { bytes, count })
}

/// `top`'s result written as `rmp_serde` writes [`podium_core::api::TopOut`]
/// (a unit test holds them byte for byte), its entries straight from the
/// board: a page read, the latency-bound call, allocates no `EntryOut`
/// with copies of its strings per entry.
fn top(
    svc: &Service,
    board: &str,
    page: Option<u64>,
    page_size: Option<u64>,
    with_data: bool,
) -> Res {
    use rmp::encode as w;
    let mut entries = Vec::with_capacity(page_size.unwrap_or(25).min(1024) as usize * 40);
    let mut count = 0u32;
    let head = svc.top_visit(board, page, page_size, |e| {
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
/// writes [`SubmitManyOut`] (a unit test holds them byte for byte) but
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

/// `submit_many`'s result as a backend returns it (what
/// [`encode_submit_many`] writes from the engine's results).
#[derive(Serialize)]
struct SubmitManyOut<'a> {
    board: &'a str,
    results: &'a [SubmitItem],
}

#[derive(Serialize)]
struct DeletedOut<'a> {
    board: &'a str,
    deleted: bool,
}

#[derive(Serialize)]
struct ImportError {
    line: u64,
    member: Option<String>,
    error: ErrorBody,
}

#[derive(Serialize)]
struct ImportOut<'a> {
    board: &'a str,
    imported: u64,
    failed: u64,
    errors: &'a [ImportError],
}

#[derive(Serialize)]
struct AuthOut {
    scope: &'static str,
}

/// What every connection of one listener shares.
pub struct Shared {
    pub api_keys: Vec<ApiKey>,
}

impl Shared {
    /// The scope of the key equal to `presented`, comparing with every key
    /// so the time taken does not tell which matched.
    fn scope_of(&self, presented: &str) -> Option<Scope> {
        self.api_keys.iter().fold(None, |found, k| {
            if k.matches(presented) {
                Some(k.scope)
            } else {
                found
            }
        })
    }
}

/// One connection's authentication.
pub struct Session {
    shared: Arc<Shared>,
    /// The key's scope; without keys configured, `Admin`.
    scope: Option<Scope>,
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Session {
        let scope = shared.api_keys.is_empty().then_some(Scope::Admin);
        Session { shared, scope }
    }

    pub fn authenticated(&self) -> bool {
        self.scope.is_some()
    }

    /// Whether this connection may call `m` (HTTP's codes and texts).
    pub fn check(&self, m: Method) -> Result<(), ApiError> {
        let Some(needed) = m.scope() else {
            return Ok(());
        };
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
        match self.shared.scope_of(key) {
            Some(s) => {
                self.scope = Some(s);
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

/// Runs `call` (`Auth` is the session's: see [`Session::auth`]).
pub fn execute(be: &Arc<dyn Backend>, call: Call) -> Exec {
    match podium_store::embedded(&**be) {
        Some(svc) => embedded(svc, be, call),
        None => via_trait(be.clone(), call),
    }
}

/// Runs `call` through the trait's methods, as on any backend.
fn via_trait(be: Arc<dyn Backend>, call: Call) -> Exec {
    match call {
        // ------------------------------------------------------ writes
        Call::Submit { board, entry } => {
            later(async move { encode(&be.submit_one(&board, &entry).await?) })
        }
        Call::SubmitMany { board, entries } => later(async move {
            let results = be.submit(&board, &entries).await?;
            encode(&SubmitManyOut {
                board: &board,
                results: &results,
            })
        }),
        Call::Remove { board, members } => {
            later(async move { encode(&be.remove(&board, &members).await?) })
        }
        Call::RemoveRange { board, by } => later(async move {
            let out = match by {
                RangeBy::Rank { start, stop } => be.remove_rank_range(&board, start, stop).await?,
                RangeBy::Score(b) => be.remove_score_range(&board, b).await?,
            };
            encode(&out)
        }),
        Call::SetData {
            board,
            member,
            name,
            data,
        } => later(async move { encode(&be.set_data(&board, &member, name, data).await?) }),
        Call::BoardCreate { board, config } => {
            later(async move { encode(&be.board_create(&board, &config).await?) })
        }
        Call::BoardUpdate { board, config } => {
            later(async move { encode(&be.board_put(&board, &config).await?) })
        }
        Call::BoardDelete { board } => later(async move {
            be.board_delete(&board).await?;
            encode(&DeletedOut {
                board: &board,
                deleted: true,
            })
        }),
        Call::Reset { board } => later(async move { encode(&be.reset(&board).await?) }),
        Call::Combine {
            dest,
            req,
            intersect,
        } => later(async move { encode(&be.combine(&dest, &req, intersect).await?) }),
        Call::Import { board, entries } => {
            later(async move { import(&*be, &board, entries).await })
        }
        // Made by the connection for the embedded engine only.
        Call::Records { .. } => Exec::Ready(Err(ApiError::new(
            Code::Internal,
            "prepared records are the embedded engine's",
        ))),

        // ------------------------------------------------------- reads
        Call::Entry {
            board,
            member,
            page_size,
        } => later(async move { encode(&be.entry(&board, &member, page_size).await?) }),
        Call::Rank { board, member } => {
            later(async move { encode(&be.rank(&board, &member).await?) })
        }
        Call::Count { board, bounds } => {
            later(async move { encode(&be.count(&board, bounds).await?) })
        }
        Call::Top {
            board,
            page,
            page_size,
            with_data,
        } => later(async move { encode(&be.top(&board, page, page_size, with_data).await?) }),
        // Off the embedded engine a range is one backend call of at most
        // MAX_RANGE entries (as HTTP answers it), encoded whole.
        Call::RangeByRank {
            board,
            start,
            stop,
            from_worst,
            with_data,
        } => later(async move {
            encode(
                &be.range_by_rank(&board, start, stop, from_worst, with_data)
                    .await?,
            )
        }),
        Call::RangeByScore {
            board,
            bounds,
            from_worst,
            offset,
            limit,
            with_data,
        } => later(async move {
            let limit = limit
                .unwrap_or(podium_core::backend::DEFAULT_PAGE_SIZE)
                .min(MAX_RANGE);
            encode(
                &be.range_by_score(&board, bounds, from_worst, offset, Some(limit), with_data)
                    .await?,
            )
        }),
        Call::Search {
            board,
            query,
            limit,
            offset,
            with_data,
        } => later(async move {
            let limit = limit.unwrap_or(podium_core::backend::DEFAULT_PAGE_SIZE);
            let offset = offset.unwrap_or(0);
            encode(&be.search(&board, &query, limit, offset, with_data).await?)
        }),
        Call::Around {
            board,
            member,
            page_size,
            with_data,
        } => later(async move { encode(&be.around(&board, &member, page_size, with_data).await?) }),
        Call::Ranks {
            board,
            members,
            with_data,
        } => later(async move { encode(&be.ranks(&board, &members, with_data).await?) }),
        Call::Percentile { board, member } => {
            later(async move { encode(&be.percentile(&board, &member).await?) })
        }
        Call::ScoreAtPercentile { board, p } => {
            later(async move { encode(&be.score_at_percentile(&board, p).await?) })
        }
        Call::Boards => later(async move { encode(&be.boards().await?) }),
        Call::BoardInfo { board } => later(async move { encode(&be.board_info(&board).await?) }),
        Call::Export { board } => Exec::Deferred(Box::pin(export_chunks(be, board))),
        Call::Auth { .. } => ready_err(),
    }
}

fn ready_err() -> Exec {
    Exec::Ready(Err(ApiError::new(Code::Internal, "auth is the session's")))
}

/// `submit_many` of entries made into records: the results are written
/// straight from the engine's, with no `SubmitItem` copying each member id.
fn submit_records(svc: &Arc<Service>, board: String, recs: Vec<SubmitRec>) -> Exec {
    let svc = svc.clone();
    later(async move {
        let (results, recs) = svc.submit_recs_owned(&board, recs).await?;
        let members = recs.iter().map(|r| r.member.as_slice());
        Ok(encode_submit_many(&board, members, &results))
    })
}

/// The embedded engine's shortcuts; a call that has none goes through the
/// trait like on any backend.
fn embedded(svc: &Arc<Service>, be: &Arc<dyn Backend>, call: Call) -> Exec {
    let ready = |r: Result<Vec<u8>, ApiError>| Exec::Ready(r);
    match call {
        Call::SubmitMany { board, entries } => match Service::submit_recs(entries) {
            Ok(recs) => submit_records(svc, board, recs),
            Err(e) => ready(Err(e)),
        },
        Call::Records {
            board,
            recs,
            import: false,
        } => submit_records(svc, board, recs),
        Call::Records {
            board,
            recs,
            import: true,
        } => {
            let be = be.clone();
            later(async move {
                let lines: Vec<usize> = (0..recs.len()).collect();
                import_parts(&*be, &board, Vec::new(), recs, &lines, Tally::default()).await
            })
        }
        Call::RangeByRank {
            board,
            start,
            stop,
            from_worst,
            with_data,
        } => range_by_rank(svc.clone(), board, start, stop, from_worst, with_data),
        Call::RangeByScore {
            board,
            bounds,
            from_worst,
            offset,
            limit,
            with_data,
        } => {
            let offset = offset.unwrap_or(0);
            let limit = limit
                .unwrap_or(podium_core::backend::DEFAULT_PAGE_SIZE)
                .min(MAX_RANGE);
            let fetch: Fetch = {
                let (svc, board) = (svc.clone(), board.clone());
                Arc::new(move |done, want| {
                    let (svc, board) = (svc.clone(), board.clone());
                    Box::pin(async move {
                        tokio::task::spawn_blocking(move || {
                            let r = svc.range_by_score(
                                &board,
                                bounds,
                                from_worst,
                                Some(offset + done),
                                Some(want as u64),
                                with_data,
                            )?;
                            encode_entries(&r.entries)
                        })
                        .await
                        .map_err(|e| {
                            ApiError::new(Code::Internal, format!("stream task failed: {e}"))
                        })?
                    })
                })
            };
            if limit <= FIRST_CHUNK as u64 {
                return ready(
                    svc.range_by_score(
                        &board,
                        bounds,
                        from_worst,
                        Some(offset),
                        Some(limit),
                        with_data,
                    )
                    .and_then(|o| encode(&o)),
                );
            }
            // The count comes first; the first chunk is read with it so
            // that a bad range is an error answer, not a broken stream.
            let mut first = match svc.range_by_score(
                &board,
                bounds,
                from_worst,
                Some(offset),
                Some(FIRST_CHUNK as u64),
                with_data,
            ) {
                Ok(r) => r,
                Err(e) => return ready(Err(e)),
            };
            let total = match svc.count(&board, bounds) {
                Ok(c) => limit.min(c.count.saturating_sub(offset)),
                Err(e) => return ready(Err(e)),
            };
            first.entries.truncate(total as usize);
            let chunk = match encode_entries(&first.entries) {
                Ok(c) => c,
                Err(e) => return ready(Err(e)),
            };
            first.entries.clear();
            streamed(&first, total, chunk, fetch)
        }
        Call::Search {
            board,
            query,
            limit,
            offset,
            with_data,
        } => {
            let limit = limit.unwrap_or(podium_core::backend::DEFAULT_PAGE_SIZE);
            let offset = offset.unwrap_or(0);
            // The first search of a large board builds its index: off the
            // async workers; later ones are reads like `top`, answered here.
            if svc.search_is_cheap(&board) {
                return ready(
                    svc.search(&board, &query, limit, offset, with_data)
                        .and_then(|o| encode(&o)),
                );
            }
            let svc = svc.clone();
            Exec::Later(Box::pin(async move {
                tokio::task::spawn_blocking(move || {
                    svc.search(&board, &query, limit, offset, with_data)
                        .and_then(|o| encode(&o))
                })
                .await
                .map_err(|e| ApiError::new(Code::Internal, e.to_string()))?
            }))
        }
        // A page read, the latency-bound call: encoded straight from the
        // board, on the connection's task.
        Call::Top {
            board,
            page,
            page_size,
            with_data,
        } => ready(top(svc, &board, page, page_size, with_data)),
        Call::Export { board } => export(svc.clone(), board),
        other => via_trait(be.clone(), other),
    }
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

fn range_by_rank(
    svc: Arc<Service>,
    board: String,
    start: u64,
    stop: u64,
    from_worst: bool,
    with_data: bool,
) -> Exec {
    let ready = |r: Res| Exec::Ready(r);
    let len = stop.saturating_sub(start).saturating_add(1);
    if start == 0 || stop < start || len <= FIRST_CHUNK as u64 {
        return ready(
            svc.range_by_rank(&board, start, stop, from_worst, with_data)
                .and_then(|o| encode(&o)),
        );
    }
    // Over the per-call limit: HTTP's error, before anything is read.
    if stop - start >= MAX_RANGE {
        return ready(
            svc.range_by_rank(&board, start, stop, from_worst, with_data)
                .and_then(|o| encode(&o)),
        );
    }
    // The first window gives the board's size, and with it the count.
    let first_stop = start + FIRST_CHUNK as u64 - 1;
    let mut first = match svc.range_by_rank(&board, start, first_stop, from_worst, with_data) {
        Ok(r) => r,
        Err(e) => return ready(Err(e)),
    };
    let total = stop.min(first.total).saturating_sub(start - 1);
    let chunk = match encode_entries(&first.entries) {
        Ok(c) => c,
        Err(e) => return ready(Err(e)),
    };
    first.entries.clear();
    let board: Arc<str> = board.into();
    let fetch: Fetch = Arc::new(move |done, want| {
        visit_chunk_off(&svc, &board, start - 1 + done, want, from_worst, with_data)
    });
    streamed(&first, total, chunk, fetch)
}

/// `export`: every entry, best first, as `export`'s NDJSON lines are
/// (`member`, `score`, `rank`, `name`, `data`), in one array.
fn export(svc: Arc<Service>, board: String) -> Exec {
    let total = match svc.board_info(&board) {
        Ok(i) => i.members,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let first = match visit_chunk(
        &svc,
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
    let total = match be.board_info(&board).await {
        Ok(i) => i.members,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let first = match be
        .export_chunk(&board, 0, FIRST_CHUNK.min(total as usize))
        .await
        .and_then(|lines| encode_entries(&lines))
    {
        Ok(c) => c,
        Err(e) => return Exec::Ready(Err(e)),
    };
    let board: Arc<str> = board.into();
    let fetch: Fetch = Arc::new(move |done, want| {
        let (be, board) = (be.clone(), board.clone());
        Box::pin(async move {
            let lines = be.export_chunk(&board, done as usize, want).await?;
            encode_entries(&lines)
        })
    });
    export_result(total, first, fetch)
}

/// Errors that belong to one entry, not to the board or the server (as
/// HTTP's import tells them apart).
fn entry_error(c: Code) -> bool {
    matches!(
        c,
        Code::InvalidMember | Code::InvalidScore | Code::InvalidData | Code::InvalidArgument
    )
}

/// Most per-entry errors an `import` answer lists (as HTTP's).
const MAX_IMPORT_ERRORS: usize = 100;

/// `import` of one batch, with HTTP import's rules: an entry that fails
/// fails alone (`line` is its 1-based position in the batch) and the rest
/// apply; errors of the board itself fail the call.
async fn import(be: &dyn Backend, board: &str, entries: Vec<ImportEntry>) -> Res {
    let mut tally = Tally::default();
    let mut batch: Vec<SubmitIn> = Vec::with_capacity(entries.len());
    let mut lines: Vec<usize> = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        match e {
            Ok(e) => match check_entry(&e) {
                Ok(()) => {
                    batch.push(e);
                    lines.push(i);
                }
                Err(err) => tally.fail(i, Some(e.member), ErrorBody::from(&err)),
            },
            Err((member, err)) => tally.fail(i, member, ErrorBody::from(&err)),
        }
    }
    // On the embedded engine the entries become the applied (and logged)
    // records without a copy of each member.
    let recs = match podium_store::embedded(be) {
        Some(_) => Service::submit_recs(std::mem::take(&mut batch))?,
        None => Vec::new(),
    };
    import_parts(be, board, batch, recs, &lines, tally).await
}

/// An `import` batch's entries that failed alone.
#[derive(Default)]
struct Tally {
    failed: u64,
    errors: Vec<ImportError>,
}

impl Tally {
    fn fail(&mut self, line: usize, member: Option<String>, error: ErrorBody) {
        self.failed += 1;
        self.errors.push(ImportError {
            line: line as u64 + 1,
            member,
            error,
        });
    }
}

/// Applies an `import` batch whose entries passed the per-entry checks:
/// `recs` on the embedded engine (`batch` empty), `batch` on any other;
/// `lines[i]` is entry i's 0-based position in the request.
async fn import_parts(
    be: &dyn Backend,
    board: &str,
    batch: Vec<SubmitIn>,
    mut recs: Vec<SubmitRec>,
    lines: &[usize],
    mut tally: Tally,
) -> Res {
    let mut imported = 0u64;
    // The engine's whole batch is handed over, and comes back only if the
    // engine refused it as a whole.
    let svc = podium_store::embedded(be);
    let n = lines.len();
    let member_at = |batch: &[SubmitIn], recs: &[SubmitRec], i: usize| match svc {
        Some(_) => String::from_utf8_lossy(&recs[i].member).into_owned(),
        None => batch[i].member.clone(),
    };
    // The engine refuses a whole batch when one entry fails its checks:
    // halve until the bad entries stand alone (refused attempts write
    // nothing), keeping the order of the rest.
    let mut todo = vec![(0, n)];
    while let Some((a, b)) = todo.pop() {
        if a == b {
            continue;
        }
        // On the embedded engine the results are only counted: an import
        // answers no per-entry result, so none is copied into a `SubmitOut`.
        let done = match svc {
            Some(svc) => {
                // Only the first attempt is the whole batch; parts are
                // copied (after a refusal only).
                let whole = a == 0 && b == n && recs.len() == n;
                let part = if whole {
                    std::mem::take(&mut recs)
                } else {
                    recs[a..b].to_vec()
                };
                match svc.import_recs(board, part).await {
                    Ok((results, part)) => {
                        for ((&line, rec), r) in lines[a..b].iter().zip(&part).zip(results) {
                            match r {
                                Ok(_) => imported += 1,
                                Err(err) => tally.fail(
                                    line,
                                    Some(String::from_utf8_lossy(&rec.member).into_owned()),
                                    ErrorBody::from(&err),
                                ),
                            }
                        }
                        Ok(())
                    }
                    Err((e, back)) => {
                        if whole {
                            if back.len() != n {
                                return Err(e);
                            }
                            recs = back;
                        }
                        Err(e)
                    }
                }
            }
            None => match be.import(board, &batch[a..b]).await {
                Ok(items) => {
                    for ((&line, e), item) in lines[a..b].iter().zip(&batch[a..b]).zip(items) {
                        match item {
                            Ok(()) => imported += 1,
                            Err(error) => tally.fail(line, Some(e.member.clone()), error),
                        }
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        match done {
            Ok(()) => {}
            Err(e) if entry_error(e.code) && b - a > 1 => {
                let mid = a + (b - a) / 2;
                todo.push((mid, b));
                todo.push((a, mid));
            }
            Err(e) if entry_error(e.code) => {
                tally.fail(
                    lines[a],
                    Some(member_at(&batch, &recs, a)),
                    ErrorBody::from(&e),
                );
            }
            Err(mut e) => {
                if imported > 0 {
                    e.message = format!(
                        "{} (the import stopped; {imported} entries were imported before)",
                        e.message
                    );
                }
                return Err(e);
            }
        }
    }
    let Tally { failed, mut errors } = tally;
    errors.sort_by_key(|e| e.line);
    errors.truncate(MAX_IMPORT_ERRORS);
    encode(&ImportOut {
        board,
        imported,
        failed,
        errors: &errors,
    })
}

/// The checks `Service::submit` makes of a whole batch at once, made per
/// entry so one bad entry cannot fail the others.
fn check_entry(e: &SubmitIn) -> Result<(), ApiError> {
    if let Some(op) = &e.op {
        op.parse::<podium_engine::UpdateOp>()
            .map_err(|_| ApiError::bad(format!("op must be set, best or incr, got {op:?}")))?;
    }
    match &e.data {
        None | Some(serde_json::Value::Null) | Some(serde_json::Value::Object(_)) => Ok(()),
        Some(_) => Err(ApiError::new(
            Code::InvalidData,
            "data must be a JSON object",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_core::api::{RangeOut, Score, SubmitIn};
    use rmpv::Value;

    fn run(svc: &Arc<Service>, call: Call) -> Res {
        let be: Arc<dyn Backend> = Arc::new(podium_store::EmbeddedBackend::new(svc.clone()));
        match execute(&be, call) {
            Exec::Ready(r) => r,
            Exec::Later(f) => {
                futures_util::FutureExt::now_or_never(f).expect("in-memory calls do not wait")
            }
            Exec::Stream(_) | Exec::Deferred(_) => panic!("unexpected stream"),
        }
    }

    /// The in-place encoder writes exactly the bytes rmp-serde gives for
    /// the DTOs (`EntryOut` with and without data, `export`'s lines), for
    /// names, data, ±inf, fractions, big ranks, members that are not
    /// UTF-8, not ASCII or longer than 31 bytes, in every ranking mode and
    /// both directions.
    #[test]
    fn in_place_entries_encode_as_the_dtos() {
        use podium_engine::{Board, BoardConfig, Ranking, Submit};
        for ranking in [Ranking::Unique, Ranking::Dense, Ranking::Competition] {
            let mut b = Board::new(BoardConfig {
                ranking,
                ..BoardConfig::default()
            })
            .unwrap();
            let mut subs = Vec::new();
            let ids: Vec<Vec<u8>> = (0..300u32)
                .map(|i| match i % 7 {
                    0 => vec![0xff, 0xfe, i as u8],
                    // Past the one-byte header, and not ASCII.
                    1 => format!("{i:0>40}").into_bytes(),
                    2 => format!("é{i}").into_bytes(),
                    _ => format!("m{i}").into_bytes(),
                })
                .collect();
            let names: Vec<String> = (0..300).map(|i| format!("Name {i}")).collect();
            let datas: Vec<String> = (0..300)
                .map(|i| format!(r#"{{"lvl":{i},"tags":["a",{{"x":null}}]}}"#))
                .collect();
            for (i, id) in ids.iter().enumerate() {
                let score = match i % 11 {
                    0 => f64::INFINITY,
                    1 => f64::NEG_INFINITY,
                    2 => 0.5 + i as f64,
                    _ => (i / 3) as f64 * 1e12,
                };
                let mut s = Submit::new(id, score);
                if i % 3 == 0 {
                    s.name = Some(&names[i]);
                }
                match i % 5 {
                    0 => s.data = Some(&datas[i]),
                    1 => s.data = Some(r#"{"s":"é\u0000","f":1.5,"n":-3}"#),
                    _ => {}
                }
                subs.push(s);
            }
            for r in b.submit_many(&subs).unwrap() {
                r.unwrap();
            }
            for backward in [false, true] {
                let from = if backward { b.len() - 1 } else { 0 };
                let want = if backward {
                    b.range_by_rank(1, b.len() as u64, true)
                } else {
                    b.entries_from(0, b.len())
                };
                for with_data in [false, true] {
                    let mut got = Vec::new();
                    let n = b.visit(from, b.len(), backward, |e| {
                        encode_entry_ref(&mut got, &e, with_data)
                    });
                    assert_eq!(n, want.len());
                    let mut expect = Vec::new();
                    for e in &want {
                        let o = podium_core::api::entry_out(e, with_data);
                        rmp_serde::encode::write_named(&mut expect, &o).unwrap();
                    }
                    assert_eq!(
                        got, expect,
                        "{ranking:?} backward={backward} data={with_data}"
                    );
                }
            }
        }
    }

    /// The bare-entry fast path at every seam of its fixed-size stores:
    /// ids of every length up to the fixstr limit and past it, ASCII or
    /// not (a high byte at either end of each load), ranks at each integer
    /// width's bounds, special scores; entries appended after others, as
    /// in a chunk. Byte for byte the DTO's encoding.
    #[test]
    fn bare_entries_encode_as_the_dto_at_every_seam() {
        let mut ids: Vec<Vec<u8>> = (0..40).map(|n| vec![b'a' + (n % 26) as u8; n]).collect();
        for n in [1, 3, 4, 7, 8, 15, 16, 31] {
            for at in [0, n / 2, n - 1] {
                let mut id = vec![b'x'; n];
                id[at] = 0xc3;
                ids.push(id.clone());
                if at + 1 < n {
                    id[at + 1] = 0xa9; // "é": valid UTF-8, not ASCII
                    ids.push(id);
                }
            }
        }
        let ranks = [
            0,
            1,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX,
        ];
        let scores = [0.0, -0.0, 1.5, -3e300, f64::INFINITY, f64::NEG_INFINITY];
        let (mut got, mut expect) = (Vec::new(), Vec::new());
        for (i, id) in ids.iter().enumerate() {
            for (j, &rank) in ranks.iter().enumerate() {
                let score = scores[(i + j) % scores.len()];
                let e = podium_engine::EntryRef {
                    member: id,
                    score,
                    rank,
                    name: None,
                    data: Some(r#"{"x":1}"#),
                };
                encode_entry_ref(&mut got, &e, false);
                let o = podium_core::api::entry_out(
                    &podium_engine::Entry {
                        member: id.clone(),
                        score,
                        rank,
                        name: None,
                        data: None,
                    },
                    false,
                );
                rmp_serde::encode::write_named(&mut expect, &o).unwrap();
                assert_eq!(got, expect, "id {id:?} rank {rank}");
            }
        }
    }

    /// An export whose members' `data` are long strings (the blob shape,
    /// json_mp's fast path: plain, with escapes, not ASCII, a control
    /// character escaped), read in chunks of every size from 1 to 7 entries
    /// as the connection streams them, is byte for byte the DTOs' encoding.
    #[test]
    fn long_string_data_streams_as_the_dtos() {
        use podium_engine::{Board, BoardConfig, Submit};
        let mut b = Board::new(BoardConfig {
            max_data_bytes: 1 << 20,
            ..BoardConfig::default()
        })
        .unwrap();
        let ids: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
        let datas: Vec<String> = (0..40usize)
            .map(|i| {
                let mut s: String = (0..3000 + i * 97)
                    .map(|k| char::from(b'a' + ((i + k) % 26) as u8))
                    .collect();
                match i % 5 {
                    1 => s.insert_str(i * 13, r#"\"\\\n\u00e9\ud83d\ude00"#),
                    2 => s.insert_str(i * 31, "é😀"),
                    3 => s.push_str(r"\u0001"),
                    _ => {}
                }
                let d = format!(r#"{{"blob":"{s}","n":{i}}}"#);
                serde_json::from_str::<serde_json::Value>(&d).unwrap();
                d
            })
            .collect();
        let subs: Vec<Submit> = ids
            .iter()
            .zip(&datas)
            .enumerate()
            .map(|(i, (m, d))| Submit {
                data: Some(d),
                ..Submit::new(m.as_bytes(), i as f64)
            })
            .collect();
        for r in b.submit_many(&subs).unwrap() {
            r.unwrap();
        }
        let mut expect = Vec::new();
        for e in &b.entries_from(0, b.len()) {
            rmp_serde::encode::write_named(&mut expect, &podium_core::api::entry_out(e, true))
                .unwrap();
        }
        let svc = Service::in_memory();
        svc.store().insert("b", b).unwrap();
        for chunk in 1..=7 {
            let mut got = Vec::new();
            let mut done = 0;
            while done < 40 {
                let c = visit_chunk(&svc, "b", done, chunk, false, true).unwrap();
                assert!(c.count > 0);
                done += c.count as u64;
                got.extend_from_slice(&c.bytes);
            }
            assert_eq!(got, expect, "chunks of {chunk}");
        }
    }

    /// `submit_many`'s in-place result writes exactly the bytes rmp-serde
    /// gives for `{board, results: [SubmitItem]}`: created, updated,
    /// unchanged and evicted members, absent ranks and scores, per-entry
    /// errors, long members.
    #[test]
    fn submit_many_results_encode_as_the_dtos() {
        let setup = || {
            let svc = Arc::new(Service::in_memory());
            let config = serde_json::json!({"max_members": 40, "max_score": 1000.0});
            run(
                &svc,
                Call::BoardCreate {
                    board: "lb".into(),
                    config,
                },
            )
            .unwrap();
            svc
        };
        let entries: Vec<SubmitIn> = (0..120u32)
            .map(|i| {
                let member = match i % 9 {
                    0 => "x".repeat(40 + i as usize),
                    _ => format!("m{}", i % 50),
                };
                let mut e = SubmitIn::new(member, f64::from(i % 37) * 10.5 - 100.0);
                match i % 6 {
                    0 => e.op = Some("incr".into()),
                    1 => e.op = Some("best".into()),
                    2 => e.only = Some(podium_core::api::Only::Existing),
                    3 => e.score = Score(f64::NEG_INFINITY),
                    _ => {}
                }
                if i % 13 == 0 {
                    // An increment leaving the bounds fails alone.
                    e.op = Some("incr".into());
                    e.score = Score(5000.0);
                }
                e
            })
            .collect();
        let (a, b) = (setup(), setup());
        let items = futures_util::FutureExt::now_or_never(a.submit("lb", &entries))
            .expect("in memory")
            .unwrap();
        assert!(items.iter().any(|i| matches!(i, SubmitItem::Err { .. })));
        let want = encode(&SubmitManyOut {
            board: "lb",
            results: &items,
        })
        .unwrap();
        let raw = futures_util::FutureExt::now_or_never(b.submit_raw("lb", &entries))
            .expect("in memory")
            .unwrap();
        let members = entries.iter().map(|e| e.member.as_bytes());
        assert_eq!(encode_submit_many("lb", members, &raw), want);
    }

    fn decode(b: &[u8]) -> Value {
        rmpv::decode::read_value(&mut &b[..]).unwrap()
    }

    fn get<'a>(v: &'a Value, k: &str) -> &'a Value {
        v.as_map()
            .and_then(|m| m.iter().find(|(kk, _)| kk.as_str() == Some(k)))
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {k} in {v}"))
    }

    #[test]
    fn scores_are_floats_and_infinities_stay_floats() {
        let b = encode(&Score(f64::INFINITY)).unwrap();
        assert_eq!(decode(&b), Value::F64(f64::INFINITY));
        assert_eq!(
            serde_json::to_string(&Score(f64::NEG_INFINITY)).unwrap(),
            "\"-inf\""
        );
    }

    #[test]
    fn results_use_the_http_field_names() {
        let svc = Arc::new(Service::in_memory());
        let mut e = SubmitIn::new("ann", 10.0);
        e.name = Some("Ann".into());
        let out = decode(
            &run(
                &svc,
                Call::Submit {
                    board: "lb".into(),
                    entry: e,
                },
            )
            .unwrap(),
        );
        let json = serde_json::to_value(
            futures_util::FutureExt::now_or_never(
                svc.submit_one("lb", &SubmitIn::new("bob", f64::NEG_INFINITY)),
            )
            .unwrap()
            .unwrap(),
        )
        .unwrap();
        let keys = |v: &Value| -> Vec<String> {
            v.as_map()
                .unwrap()
                .iter()
                .map(|(k, _)| k.as_str().unwrap().to_string())
                .collect()
        };
        let json_keys: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
        let mut a = keys(&out);
        a.sort();
        let mut b = json_keys;
        b.sort();
        assert_eq!(a, b);
        let rank = decode(
            &run(
                &svc,
                Call::Rank {
                    board: "lb".into(),
                    member: "bob".into(),
                },
            )
            .unwrap(),
        );
        assert_eq!(get(&rank, "score"), &Value::F64(f64::NEG_INFINITY));
        assert_eq!(get(&rank, "rank"), &Value::from(2));
        // entry flattens the member's fields into the map.
        let entry = decode(
            &run(
                &svc,
                Call::Entry {
                    board: "lb".into(),
                    member: "ann".into(),
                    page_size: None,
                },
            )
            .unwrap(),
        );
        assert_eq!(get(&entry, "name"), &Value::from("Ann"));
        assert_eq!(get(&entry, "ranking"), &Value::from("unique"));
        assert_eq!(get(&entry, "member"), &Value::from("ann"));
    }

    /// `top` written in place gives exactly the bytes of `TopOut` through
    /// rmp-serde, with and without data, on every page including the last,
    /// a page past the end, page sizes from 1 up, and in every ranking mode.
    #[test]
    fn top_in_place_encodes_as_the_dto() {
        let svc = Arc::new(Service::in_memory());
        for (board, ranking) in [("u", "unique"), ("d", "dense"), ("c", "competition")] {
            let cfg = serde_json::json!({ "ranking": ranking });
            futures_util::FutureExt::now_or_never(svc.board_create(board, &cfg))
                .unwrap()
                .unwrap();
            let mut entries = Vec::new();
            for i in 0..130u32 {
                let mut e = SubmitIn::new(format!("m{i}"), f64::from(i / 4) * 0.5);
                if i % 3 == 0 {
                    e.name = Some(format!("Name {i}"));
                }
                if i % 5 == 0 {
                    e.data = Some(serde_json::json!({ "lvl": i, "t": ["a", null] }));
                }
                entries.push(e);
            }
            futures_util::FutureExt::now_or_never(svc.submit(board, &entries))
                .unwrap()
                .unwrap();
            for page_size in [None, Some(1), Some(7), Some(130), Some(500)] {
                for page in [None, Some(1), Some(2), Some(19), Some(200)] {
                    for with_data in [false, true] {
                        let want = encode(&svc.top(board, page, page_size, with_data).unwrap());
                        let got = top(&svc, board, page, page_size, with_data);
                        assert_eq!(
                            got.unwrap(),
                            want.unwrap(),
                            "{board} {page:?} {page_size:?}"
                        );
                    }
                }
            }
        }
        for (page, page_size) in [(Some(0), None), (None, Some(0)), (None, Some(1 << 40))] {
            let want = svc.top("u", page, page_size, false).unwrap_err();
            let got = top(&svc, "u", page, page_size, false).unwrap_err();
            assert_eq!((got.code, got.message), (want.code, want.message));
        }
        let want = svc.top("nope", None, None, false).unwrap_err();
        let got = top(&svc, "nope", None, None, false).unwrap_err();
        assert_eq!((got.code, got.message), (want.code, want.message));
    }

    #[test]
    fn range_head_declares_the_count() {
        let out = RangeOut {
            board: "b".into(),
            ranking: "unique".into(),
            total: 7,
            entries: vec![],
        };
        let mut h = range_head(&out, 70_000).unwrap();
        h.extend(std::iter::repeat_n(0xc0, 70_000));
        let v = decode(&h);
        assert_eq!(get(&v, "entries").as_array().unwrap().len(), 70_000);
        assert_eq!(get(&v, "total"), &Value::from(7));
    }

    #[test]
    fn auth_scopes() {
        let shared = Arc::new(Shared {
            api_keys: vec![
                ApiKey::new("readkey-0123456789abcdef", Scope::Read).unwrap(),
                ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap(),
            ],
        });
        let mut s = Session::new(shared);
        assert!(!s.authenticated());
        assert_eq!(s.check(Method::Top).unwrap_err().code, Code::Unauthorized);
        assert!(s.check(Method::Auth).is_ok());
        assert_eq!(s.auth("nope").unwrap_err().code, Code::Unauthorized);
        s.auth("readkey-0123456789abcdef").unwrap();
        assert!(s.check(Method::Top).is_ok());
        let e = s.check(Method::Submit).unwrap_err();
        assert_eq!(e.code, Code::Forbidden);
        assert_eq!(
            e.message,
            "this request needs a key of scope write; this key has scope read"
        );
        s.auth("writekey-0123456789abcdef").unwrap();
        assert!(s.check(Method::Submit).is_ok());
        assert_eq!(
            s.check(Method::BoardDelete).unwrap_err().code,
            Code::Forbidden
        );
        let open = Session::new(Arc::new(Shared { api_keys: vec![] }));
        assert!(open.check(Method::BoardDelete).is_ok());
    }

    #[test]
    fn import_fails_bad_entries_alone() {
        let svc = Arc::new(Service::in_memory());
        let mut bad_op = SubmitIn::new("c", 1.0);
        bad_op.op = Some("mul".into());
        let entries: Vec<ImportEntry> = vec![
            Ok(SubmitIn::new("a", 1.0)),
            Err((
                Some("x".into()),
                ApiError::new(Code::InvalidScore, "score: NaN"),
            )),
            Ok(SubmitIn::new("", 2.0)),
            Ok(bad_op),
            Ok(SubmitIn::new("b", 3.0)),
        ];
        let out = decode(
            &run(
                &svc,
                Call::Import {
                    board: "imp".into(),
                    entries,
                },
            )
            .unwrap(),
        );
        assert_eq!(get(&out, "imported"), &Value::from(2));
        assert_eq!(get(&out, "failed"), &Value::from(3));
        let lines: Vec<u64> = get(&out, "errors")
            .as_array()
            .unwrap()
            .iter()
            .map(|e| get(e, "line").as_u64().unwrap())
            .collect();
        assert_eq!(lines, [2, 3, 4]);
        assert_eq!(svc.boards().boards[0].members, 2);
    }

    /// The reader's prepared records (`rpc::fast`) answer byte for byte as
    /// the general path's entries do, refused entries included.
    #[test]
    fn prepared_records_answer_as_the_general_path() {
        let long = "x".repeat(podium_engine::MAX_MEMBER_BYTES + 1);
        let good: Vec<(&str, f64)> = vec![("a", 1.0), ("b", 3.5), ("a", 2.0), ("c", -1.0)];
        let bad: Vec<(&str, f64)> =
            vec![("a", 1.0), ("", 2.0), ("b", 3.0), (&long, 4.0), ("c", 5.0)];
        let recs = |es: &[(&str, f64)]| -> Vec<SubmitRec> {
            es.iter()
                .map(|&(member, score)| {
                    super::super::fast::Plain {
                        member,
                        score,
                        name: None,
                    }
                    .rec()
                })
                .collect()
        };
        let ins = |es: &[(&str, f64)]| -> Vec<SubmitIn> {
            es.iter().map(|&(m, s)| SubmitIn::new(m, s)).collect()
        };
        for es in [&good, &bad] {
            let (general, prepared) = (
                Arc::new(Service::in_memory()),
                Arc::new(Service::in_memory()),
            );
            let entries = ins(es).into_iter().map(Ok).collect();
            let a = run(
                &general,
                Call::Import {
                    board: "b".into(),
                    entries,
                },
            );
            let b = run(
                &prepared,
                Call::Records {
                    board: "b".into(),
                    recs: recs(es),
                    import: true,
                },
            );
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(a, b);
            let lines: Vec<u64> = get(&decode(&b), "errors")
                .as_array()
                .unwrap()
                .iter()
                .map(|e| get(e, "line").as_u64().unwrap())
                .collect();
            assert_eq!(lines, if es == &bad { vec![2, 4] } else { vec![] });
            let a = run(
                &general,
                Call::SubmitMany {
                    board: "b".into(),
                    entries: ins(es),
                },
            );
            let b = run(
                &prepared,
                Call::Records {
                    board: "b".into(),
                    recs: recs(es),
                    import: false,
                },
            );
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(a), Err(b)) => assert_eq!((a.code, a.message), (b.code, b.message)),
                (a, b) => panic!("general {a:?}, prepared {b:?}"),
            }
            assert_eq!(general.boards().boards, prepared.boards().boards);
        }
    }
}
