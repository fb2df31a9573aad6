//! A MessagePack-RPC client for podium (`docs/rpc.md`).
//!
//! [`Client`] holds one TCP connection, served by two tokio tasks: a writer
//! that drains a queue of encoded requests into the socket (requests queued
//! meanwhile go out in one write), and a reader that cuts the incoming
//! bytes into messages and hands each response to the caller waiting for
//! its `msgid`. A call is sent when [`Client::call`] is *called*, not when
//! its future is first polled, so pipelining is: issue many calls, then
//! await them all (in any order; podium may answer out of order).
//!
//! ```no_run
//! # async fn demo() -> Result<(), podium_client::ClientError> {
//! use podium_client::{Client, Submission};
//! let c = Client::connect("127.0.0.1:7071").await?;
//! c.submit("lb", &Submission::new("ann", 30.5)).await?;
//! // Pipelined: both requests are on the wire before either answer.
//! let (a, b) = (c.rank("lb", "ann"), c.top("lb", 1, 25));
//! let (rank, page) = (a.await?, b.await?);
//! # let _ = (rank, page); Ok(()) }
//! ```
//!
//! [`blocking::Client`] wraps it for synchronous code. Responses are kept
//! as the bytes they arrived in ([`RawResponse`]) until the caller decodes
//! them, into an [`rmpv::Value`] or straight into a serde type: a 128 MiB
//! `export` is walked once while it arrives and decoded once, by the
//! caller's task.

pub mod blocking;
mod frame;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use rmpv::Value;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::{mpsc, oneshot};

use frame::{Incoming, Outcome, Scanner};

/// What can go wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection could not be made, broke, or was closed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The server sent something that is not a valid response, or a result
    /// that does not have the expected shape.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server answered with an error: `code` is podium's error code
    /// (`board_not_found`, `invalid_score`, …), `message` its text.
    #[error("{message} ({code})")]
    Server { code: String, message: String },
}

impl ClientError {
    /// podium's error code, for a [`ClientError::Server`].
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Server { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The same error, for one more waiting caller (`io::Error` is not
    /// `Clone`).
    fn duplicate(&self) -> ClientError {
        match self {
            ClientError::Io(e) => ClientError::Io(io::Error::new(e.kind(), e.to_string())),
            ClientError::Protocol(m) => ClientError::Protocol(m.clone()),
            ClientError::Server { code, message } => ClientError::Server {
                code: code.clone(),
                message: message.clone(),
            },
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// Connection settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The largest response accepted, in bytes; a larger one is a
    /// [`ClientError::Protocol`] and closes the connection (default 1 GiB).
    pub max_message_bytes: usize,
    /// Requests queued together are written in one piece up to this size.
    pub write_batch_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message_bytes: 1 << 30,
            write_batch_bytes: 256 << 10,
        }
    }
}

/// A call's params: written as the MessagePack array `params` of
/// `[0, msgid, method, params]`.
///
/// Implemented for `[Value]`, `Vec<Value>` and [`Ser`] (any serde type that
/// serializes as a sequence, e.g. a tuple, with structs as maps). Code that
/// sends many entries can implement it to write them without building
/// [`Value`]s.
pub trait Params {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<()>;
}

impl Params for [Value] {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<()> {
        rmp::encode::write_array_len(buf, self.len() as u32).map_err(encode_error)?;
        for v in self {
            rmpv::encode::write_value(buf, v).map_err(encode_error)?;
        }
        Ok(())
    }
}

impl Params for Vec<Value> {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<()> {
        self.as_slice().write_params(buf)
    }
}

impl<P: Params + ?Sized> Params for &P {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<()> {
        (**self).write_params(buf)
    }
}

/// Params from a serde value that serializes as a sequence (a tuple, a
/// `Vec`), structs written as maps with their field names.
pub struct Ser<T>(pub T);

impl<T: Serialize> Params for Ser<T> {
    fn write_params(&self, buf: &mut Vec<u8>) -> Result<()> {
        rmp_serde::encode::write_named(buf, &self.0)
            .map_err(|e| ClientError::Protocol(format!("cannot encode the params: {e}")))
    }
}

fn encode_error(e: impl std::fmt::Display) -> ClientError {
    ClientError::Protocol(format!("cannot encode the request: {e}"))
}

/// A successful response, as received: the result is decoded on demand.
#[derive(Debug, Clone)]
pub struct RawResponse {
    frame: Bytes,
    at: usize,
}

impl RawResponse {
    /// The result's MessagePack bytes.
    pub fn result_bytes(&self) -> &[u8] {
        &self.frame[self.at..]
    }

    /// Size of the whole response message, in bytes.
    pub fn message_len(&self) -> usize {
        self.frame.len()
    }

    /// The result as a [`Value`].
    pub fn value(&self) -> Result<Value> {
        rmpv::decode::read_value(&mut self.result_bytes())
            .map_err(|e| ClientError::Protocol(format!("cannot decode the result: {e}")))
    }

    /// The result decoded into `T` (maps into structs by field name).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        rmp_serde::from_slice(self.result_bytes())
            .map_err(|e| ClientError::Protocol(format!("unexpected result: {e}")))
    }
}

type Reply = Result<RawResponse>;

/// The answer to one call: resolves to its [`RawResponse`] or error. The
/// request is already sent (or queued for sending) when this exists.
#[must_use = "the request is sent; this future gives its answer"]
pub struct ResponseFuture {
    state: Waiting,
}

enum Waiting {
    Rx(oneshot::Receiver<Reply>),
    Failed(Option<ClientError>),
}

impl Future for ResponseFuture {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        match &mut self.state {
            Waiting::Rx(rx) => match Pin::new(rx).poll(cx) {
                Poll::Ready(Ok(r)) => Poll::Ready(r),
                Poll::Ready(Err(_)) => Poll::Ready(Err(closed("the connection task ended"))),
                Poll::Pending => Poll::Pending,
            },
            Waiting::Failed(e) => Poll::Ready(Err(e
                .take()
                .unwrap_or_else(|| closed("polled after completion")))),
        }
    }
}

/// The answer to one call, decoded by a function of the raw response
/// (what [`Client::call`], [`Client::call_as`] and the typed calls return).
#[must_use = "the request is sent; this future gives its answer"]
pub struct CallFuture<T> {
    inner: ResponseFuture,
    decode: fn(&RawResponse) -> Result<T>,
}

impl<T> CallFuture<T> {
    pub fn new(inner: ResponseFuture, decode: fn(&RawResponse) -> Result<T>) -> CallFuture<T> {
        CallFuture { inner, decode }
    }
}

impl<T> Future for CallFuture<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let decode = self.decode;
        Pin::new(&mut self.inner)
            .poll(cx)
            .map(|r| r.and_then(|r| decode(&r)))
    }
}

fn closed(why: &str) -> ClientError {
    ClientError::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        format!("connection to podium closed: {why}"),
    ))
}

struct State {
    next_id: u32,
    pending: HashMap<u32, oneshot::Sender<Reply>>,
    /// Set when the connection is gone; new calls fail with it.
    closed: Option<ClientError>,
}

struct Shared {
    state: Mutex<State>,
    received: AtomicU64,
    /// The buffer of the last large message, given back when its caller
    /// dropped it, for the next one (see [`read_loop`]).
    spare: Mutex<Option<Vec<u8>>>,
    /// Whether a buffer given back is kept: while large messages follow
    /// each other, not for the connection's life.
    keep_spare: AtomicBool,
}

/// A large message's own buffer, inside the `Bytes` the caller gets: when
/// the caller drops it, the buffer goes back to its connection, so a
/// series of large answers (exports read one after the other) is received
/// into memory already in place, not into fresh pages each time.
struct Recycled {
    buf: Vec<u8>,
    home: Weak<Shared>,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let Some(home) = self.home.upgrade() else {
            return;
        };
        if !home.keep_spare.load(Ordering::Relaxed) {
            return;
        }
        let buf = std::mem::take(&mut self.buf);
        let mut spare = home.spare.lock().unwrap();
        if spare.as_ref().is_none_or(|s| s.capacity() < buf.capacity()) {
            *spare = Some(buf);
        }
    }
}

impl Shared {
    /// Fails every waiting call and every later one with `err`.
    fn close(&self, err: ClientError) {
        let pending = {
            let mut st = self.state.lock().unwrap();
            if st.closed.is_none() {
                st.closed = Some(err.duplicate());
            }
            std::mem::take(&mut st.pending)
        };
        for (_, tx) in pending {
            let _ = tx.send(Err(err.duplicate()));
        }
    }
}

/// A connection to podium's MessagePack-RPC port. Cheap to clone: clones
/// share the connection (and pipeline on it). The connection closes once
/// every clone is dropped and the answers awaited have arrived.
///
/// Must be created inside a tokio runtime (its tasks are spawned there).
#[derive(Clone)]
pub struct Client {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    shared: Arc<Shared>,
}

/// `[0, msgid as uint 32, …`: the msgid is patched in once allocated.
const ID_AT: usize = 3;

impl Client {
    /// Connects with the default [`Config`].
    pub async fn connect(addr: impl ToSocketAddrs) -> Result<Client> {
        Client::connect_with(addr, Config::default()).await
    }

    pub async fn connect_with(addr: impl ToSocketAddrs, config: Config) -> Result<Client> {
        let sock = TcpStream::connect(addr).await?;
        sock.set_nodelay(true)?;
        Ok(Client::from_stream(sock, config))
    }

    /// Runs the protocol over an already connected socket.
    pub fn from_stream(sock: TcpStream, config: Config) -> Client {
        let (rd, wr) = sock.into_split();
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next_id: 0,
                pending: HashMap::new(),
                closed: None,
            }),
            received: AtomicU64::new(0),
            spare: Mutex::new(None),
            keep_spare: AtomicBool::new(false),
        });
        tokio::spawn(write_loop(wr, rx, shared.clone(), config.write_batch_bytes));
        tokio::spawn(read_loop(rd, shared.clone(), config.max_message_bytes));
        Client { tx, shared }
    }

    /// Total bytes received on this connection so far (for progress bars
    /// over a long response).
    pub fn bytes_received(&self) -> u64 {
        self.shared.received.load(Ordering::Relaxed)
    }

    /// Sends `method(params)`; the future gives the raw response.
    pub fn call_raw<P: Params + ?Sized>(&self, method: &str, params: &P) -> ResponseFuture {
        let state = match self.send(method, params) {
            Ok(rx) => Waiting::Rx(rx),
            Err(e) => Waiting::Failed(Some(e)),
        };
        ResponseFuture { state }
    }

    /// Sends `method(params)`; the future gives the result as a [`Value`].
    pub fn call<P: Params + ?Sized>(&self, method: &str, params: &P) -> CallFuture<Value> {
        CallFuture::new(self.call_raw(method, params), RawResponse::value)
    }

    /// Sends `method(params)`; the future gives the result decoded into `T`.
    pub fn call_as<T: DeserializeOwned, P: Params + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> CallFuture<T> {
        CallFuture::new(self.call_raw(method, params), RawResponse::decode::<T>)
    }

    /// Sends a notification `[2, method, params]`: no answer comes back.
    pub fn notify<P: Params + ?Sized>(&self, method: &str, params: &P) -> Result<()> {
        let mut buf = Vec::with_capacity(64);
        rmp::encode::write_array_len(&mut buf, 3).map_err(encode_error)?;
        rmp::encode::write_uint(&mut buf, 2).map_err(encode_error)?;
        rmp::encode::write_str(&mut buf, method).map_err(encode_error)?;
        params.write_params(&mut buf)?;
        if let Some(e) = &self.shared.state.lock().unwrap().closed {
            return Err(e.duplicate());
        }
        self.tx
            .send(buf)
            .map_err(|_| closed("the writer task ended"))
    }

    fn send<P: Params + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<oneshot::Receiver<Reply>> {
        // Encoded outside the lock, with a fixed-width msgid patched in below.
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&[0x94, 0x00, 0xce, 0, 0, 0, 0]);
        rmp::encode::write_str(&mut buf, method).map_err(encode_error)?;
        params.write_params(&mut buf)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.shared.state.lock().unwrap();
            if let Some(e) = &st.closed {
                return Err(e.duplicate());
            }
            // Wrapping u32 ids; one still waiting after 2^32 calls is skipped.
            let mut id = st.next_id;
            while st.pending.contains_key(&id) {
                id = id.wrapping_add(1);
            }
            st.next_id = id.wrapping_add(1);
            buf[ID_AT..ID_AT + 4].copy_from_slice(&id.to_be_bytes());
            st.pending.insert(id, tx);
        }
        if self.tx.send(buf).is_err() {
            // The writer is gone, and with it the connection: `close` has
            // run or is about to; either way this call fails.
            self.shared.close(closed("the writer task ended"));
        }
        Ok(rx)
    }

    // ---------------------------------------------------------- typed calls

    /// `submit(board, entry)`: the submit result (`member, score, rank,
    /// previous, changed, created, applied, evicted`).
    pub fn submit(&self, board: &str, entry: &Submission) -> CallFuture<Value> {
        self.call("submit", &Ser((board, entry)))
    }

    /// `submit_many(board, entries)`: one durable commit; `{board, results}`.
    pub fn submit_many(&self, board: &str, entries: &[Submission]) -> CallFuture<Value> {
        self.call("submit_many", &Ser((board, entries)))
    }

    /// `import(board, entries)`: one batch of a bulk load; entries that fail
    /// are listed in the result, the rest are applied.
    pub fn import(&self, board: &str, entries: &[Submission]) -> CallFuture<ImportResult> {
        self.call_as("import", &Ser((board, entries)))
    }

    /// `top(board, {page, page_size})`.
    pub fn top(&self, board: &str, page: u64, page_size: u64) -> CallFuture<Page> {
        self.call_as("top", &Ser((board, PageOpts { page, page_size })))
    }

    /// `rank(board, member)`.
    pub fn rank(&self, board: &str, member: &str) -> CallFuture<Rank> {
        self.call_as("rank", &Ser((board, member)))
    }

    /// `entry(board, member)`: rank, score, name, data, percentile, page.
    pub fn entry(&self, board: &str, member: &str) -> CallFuture<Value> {
        self.call("entry", &Ser((board, member)))
    }

    /// `around(board, member, {page_size})`.
    pub fn around(&self, board: &str, member: &str, page_size: u64) -> CallFuture<Value> {
        self.call("around", &Ser((board, member, SizeOpt { page_size })))
    }

    /// `range_by_rank(board, start, stop)`: ranks `start..=stop`, 1-based.
    pub fn range_by_rank(&self, board: &str, start: u64, stop: u64) -> CallFuture<Range> {
        self.call_as("range_by_rank", &Ser((board, start, stop)))
    }

    /// `export(board)`: every entry, best first (the `nil` items a
    /// concurrent removal can leave are skipped).
    pub fn export(&self, board: &str) -> CallFuture<Vec<Entry>> {
        CallFuture::new(self.call_raw("export", &Ser((board,))), decode_export)
    }

    /// `board_info(board)`.
    pub fn board_info(&self, board: &str) -> CallFuture<BoardInfo> {
        self.call_as("board_info", &Ser((board,)))
    }

    /// `board_create(board, config)`; `config` is a map of the HTTP API's
    /// board config fields, or `Value::Nil` for the defaults.
    pub fn board_create(&self, board: &str, config: Value) -> CallFuture<BoardInfo> {
        self.call_as("board_create", &vec![Value::from(board), config])
    }

    /// `board_patch(board, patch)`: changes the config fields `patch` (a
    /// map) names and keeps the others; `nil` puts a field back to its
    /// default. A change that re-ranks the board needs `confirm_rerank:
    /// true` in the map (else the error `confirm_rerank_required`).
    pub fn board_patch(&self, board: &str, patch: Value) -> CallFuture<BoardInfo> {
        self.call_as("board_patch", &vec![Value::from(board), patch])
    }

    /// `board_delete(board)`: `{board, deleted}`.
    pub fn board_delete(&self, board: &str) -> CallFuture<Value> {
        self.call("board_delete", &Ser((board,)))
    }

    /// `boards()`: every board and its size.
    pub fn boards(&self) -> CallFuture<Vec<BoardSize>> {
        CallFuture::new(self.call_raw("boards", &[] as &[Value]), |r| {
            Ok(r.decode::<Boards>()?.boards)
        })
    }

    /// `auth(key)`: the key's scope (`read`, `write` or `admin`).
    pub fn auth(&self, key: &str) -> CallFuture<String> {
        CallFuture::new(self.call_raw("auth", &Ser((key,))), |r| {
            Ok(r.decode::<Scope>()?.scope)
        })
    }
}

/// Decodes an `export` result into entries, skipping `nil` items. The
/// vector is sized once from the array's length (bounded by the bytes
/// received), so a large export is not grown and copied step by step.
pub fn decode_export(r: &RawResponse) -> Result<Vec<Entry>> {
    use serde::de::{DeserializeSeed, SeqAccess, Visitor};
    struct Entries {
        /// At most this many slots are reserved up front.
        max_reserve: usize,
    }
    impl<'de> DeserializeSeed<'de> for Entries {
        type Value = Vec<Entry>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<Entry>, D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<Entry>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of entries")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Entry>, A::Error> {
            let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max_reserve));
            while let Some(e) = seq.next_element::<Option<Entry>>()? {
                v.extend(e);
            }
            Ok(v)
        }
    }
    let bytes = r.result_bytes();
    // An entry takes 20 bytes at least (a map with a member, a score and
    // a rank); `nil` items take 1, so this bounds what a hostile count
    // could reserve.
    let seed = Entries {
        max_reserve: bytes.len() / 20,
    };
    seed.deserialize(&mut rmp_serde::Deserializer::from_read_ref(bytes))
        .map_err(|e| ClientError::Protocol(format!("unexpected export result: {e}")))
}

// -------------------------------------------------------------- shapes

/// One entry of `submit`, `submit_many` or `import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub member: String,
    pub score: f64,
    /// `set`, `best` or `incr`; the board's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Display name (`""` clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Free-form data: a map with string keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Submission {
    pub fn new(member: impl Into<String>, score: f64) -> Submission {
        Submission {
            member: member.into(),
            score,
            op: None,
            name: None,
            data: None,
        }
    }
}

/// A member as reads return it. (`data` is boxed: entries stay small in
/// an export of millions.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub member: String,
    pub score: f64,
    pub rank: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<Value>>,
}

/// `top`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page {
    pub board: String,
    pub ranking: String,
    pub page: u64,
    pub page_size: u64,
    pub total: u64,
    pub total_pages: u64,
    pub entries: Vec<Entry>,
}

/// `range_by_rank`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub board: String,
    pub ranking: String,
    pub total: u64,
    pub entries: Vec<Entry>,
}

/// `rank`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rank {
    pub board: String,
    pub ranking: String,
    pub member: String,
    pub rank: u64,
    pub score: f64,
}

/// `board_info`, `board_create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardInfo {
    pub board: String,
    pub members: u64,
    pub read_only: bool,
    pub heap_bytes: u64,
    /// The board this one is an archive of, when it is an archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_of: Option<String>,
    pub config: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
}

/// One board of `boards`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardSize {
    pub board: String,
    pub members: u64,
    /// The board this one is an archive of, when it is an archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_of: Option<String>,
}

#[derive(Deserialize)]
struct Boards {
    boards: Vec<BoardSize>,
}

#[derive(Deserialize)]
struct Scope {
    scope: String,
}

/// `import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportResult {
    pub board: String,
    pub imported: u64,
    pub failed: u64,
    #[serde(default)]
    pub errors: Vec<ImportError>,
}

/// One refused entry of an `import` batch; `line` is its 1-based position
/// in the batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportError {
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub member: Option<String>,
    pub error: ErrorBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
}

#[derive(Serialize)]
struct PageOpts {
    page: u64,
    page_size: u64,
}

#[derive(Serialize)]
struct SizeOpt {
    page_size: u64,
}

// --------------------------------------------------------- connection tasks

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    shared: Arc<Shared>,
    batch_bytes: usize,
) {
    let mut batch: Vec<u8> = Vec::new();
    while let Some(first) = rx.recv().await {
        let result = if first.len() >= batch_bytes {
            wr.write_all(&first).await
        } else {
            // Whatever else is queued goes out in the same write.
            batch.clear();
            batch.extend_from_slice(&first);
            while batch.len() < batch_bytes {
                match rx.try_recv() {
                    Ok(more) => batch.extend_from_slice(&more),
                    Err(_) => break,
                }
            }
            wr.write_all(&batch).await
        };
        if let Err(e) = result {
            shared.close(ClientError::Io(e));
            return;
        }
    }
    // Every `Client` is gone: end our side; the reader goes on until the
    // server has answered what it read and closes.
    let _ = wr.shutdown().await;
}

async fn read_loop(mut rd: OwnedReadHalf, shared: Arc<Shared>, max: usize) {
    const READ: usize = 64 << 10;
    /// Messages from this size on count as large.
    const LARGE: usize = 1 << 20;
    // Small messages are cut out of one buffer that grows as they arrive.
    let mut buf = BytesMut::with_capacity(READ);
    // A large message, once it is known to be one, is read into a buffer
    // of its own, sized in one step (to the size it announced, or the
    // last large message's), handed over whole: the spare buffer the last
    // one's caller gave back when there is one.
    let mut large: Option<Vec<u8>> = None;
    let mut scanner = Scanner::new(max);
    let mut last_large = 0usize;
    let err = loop {
        // Hand over every complete message in the buffer.
        let mut failed = None;
        let mut handed_large = false;
        loop {
            let bytes: &[u8] = large.as_deref().unwrap_or(&buf);
            match scanner.scan(bytes) {
                Ok(Some(len)) => {
                    let frame = match large.take() {
                        Some(mut v) => {
                            // What follows the message (the start of the
                            // next one) goes back to the small buffer.
                            buf.extend_from_slice(&v[len..]);
                            v.truncate(len);
                            last_large = len;
                            handed_large = true;
                            shared.keep_spare.store(true, Ordering::Relaxed);
                            Bytes::from_owner(Recycled {
                                buf: v,
                                home: Arc::downgrade(&shared),
                            })
                        }
                        None => {
                            // Large messages have stopped coming: their
                            // buffer is not kept for the connection's life.
                            if len < LARGE && shared.keep_spare.swap(false, Ordering::Relaxed) {
                                shared.spare.lock().unwrap().take();
                            }
                            buf.split_to(len).freeze()
                        }
                    };
                    if let Err(e) = dispatch(&shared, frame) {
                        failed = Some(e);
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            break e;
        }
        if handed_large {
            // Its caller usually reads the message and drops it at once:
            // let it, so the buffer is back before the next one needs it.
            tokio::task::yield_now().await;
        }
        if large.is_none() && buf.len() >= LARGE {
            let size = scanner.need().max(last_large).max(2 * buf.len()) + READ;
            let spare = shared.spare.lock().unwrap().take();
            let mut v = match spare {
                Some(mut v) if v.capacity() >= size => {
                    v.clear();
                    v
                }
                _ => Vec::with_capacity(size),
            };
            v.extend_from_slice(&buf);
            buf.clear();
            large = Some(v);
        }
        let read = match &mut large {
            Some(v) => {
                v.reserve(scanner.need().saturating_sub(v.len()).max(READ));
                rd.read_buf(v).await
            }
            None => {
                buf.reserve(scanner.need().saturating_sub(buf.len()).max(READ));
                rd.read_buf(&mut buf).await
            }
        };
        match read {
            Ok(0) => {
                break if buf.is_empty() && large.is_none() {
                    closed("the server closed the connection")
                } else {
                    closed("the server closed the connection in the middle of a response")
                }
            }
            Ok(n) => {
                shared.received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) => break ClientError::Io(e),
        }
    };
    shared.close(err);
}

fn dispatch(shared: &Shared, frame: Bytes) -> Result<()> {
    let (msgid, reply) = match frame::parse_incoming(frame)? {
        Incoming::Notification => return Ok(()),
        Incoming::Response { msgid, outcome } => match outcome {
            Outcome::Ok { frame, at } => (msgid, Ok(RawResponse { frame, at })),
            Outcome::Err(e) => (msgid, Err(e)),
        },
    };
    let tx = shared.state.lock().unwrap().pending.remove(&msgid);
    // An answer nobody waits for (an id never sent) is dropped.
    if let Some(tx) = tx {
        let _ = tx.send(reply);
    }
    Ok(())
}
