//! One client connection: read frames, run each request, write the
//! responses — pipelined, answered out of order, within fixed bounds.
//!
//! The reader runs every request as soon as its frame is complete, in the
//! order sent: its future is polled once on the spot — an embedded read
//! answers there, an embedded write is applied there and then waits for
//! durability in a task of its own, so pipelined writes share one fsync
//! (the log's group commit) and a write waiting for the disk holds up
//! nothing behind it; a streamed result is written by a task of its own as
//! well. The one exception is a bulk write of the common shape
//! (`submit_many` / `import` read by [`fast`]) on the embedded engine: the
//! reader hands it, in order, to the connection's applier task, so the next
//! frames are read and decoded on one core while the engine applies the
//! previous batch on the other; any other frame first waits until every
//! bulk write handed over before it is applied, so every request still sees
//! the writes sent before it, as if run in place. On a remote backend (Redis) that first poll only starts the call:
//! calls pipelined on one connection run concurrently and may apply in any
//! order, each answered when Redis answers it, so a client that needs one
//! write applied before the next waits for the first's answer. Responses reach the socket
//! through one writer task, in the order they are ready.
//!
//! Bounds per connection: [`MAX_IN_FLIGHT`] requests read and not yet
//! answered, and [`MAX_HELD_BYTES`] of request frames and encoded responses
//! held meanwhile. When either is used up the reader stops reading, so a
//! client that does not read its answers is slowed by TCP, not buffered
//! for. A streamed result holds at most a few chunks (the one being
//! written, one queued, at most two being read): its task reads a chunk
//! only once the writer has room for the one before it (the one after it
//! too, while cores are idle), so a slow reader stalls only its own
//! connection.
//!
//! Live event subscriptions (`subscribe`) run as tasks of the connection
//! that queue notifications to the same writer. They have a byte budget
//! of their own ([`MAX_QUEUED_NOTIFICATION_BYTES`], all of a connection's
//! subscriptions together), apart from the requests': a subscription
//! waits for room before reading more events, and one that falls behind
//! its filter's ring ends with a `lagged` event, so a client that stops
//! reading costs that budget at most.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmpv::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use super::codec::{
    self, Decoder, EnvelopeError, Message, MAX_FRAME_BYTES, UNAUTH_MAX_FRAME_BYTES,
};
use super::events::{self, Gate, Subscriptions, MAX_QUEUED_NOTIFICATION_BYTES};
use super::exec::{self, Chunk, Exec, Session, Shared, Streamed};
use super::fast;
use super::method::{self, Method};
use podium_core::backend::Backend;
use podium_core::error::{ApiError, Code};
use podium_core::events::{Kind, Subscription};
use podium_core::ops::{self, Operation};

/// Requests read and not yet answered, per connection.
pub const MAX_IN_FLIGHT: usize = 1024;
/// Bytes of request frames and encoded responses a connection may hold
/// (a single larger response waits until it is the only one held).
pub const MAX_HELD_BYTES: usize = 128 << 20;
/// The byte budget's unit.
const UNIT: usize = 1024;
/// Small responses are gathered up to this size into one write.
const WRITE_BATCH: usize = 256 << 10;
/// A streamed result's chunks aim at this size (entries vary from a few
/// dozen bytes to several KiB with `data`).
pub const CHUNK_TARGET_BYTES: usize = 512 << 10;
/// Bounds on entries per chunk.
pub const MIN_CHUNK: usize = 64;
pub const MAX_CHUNK: usize = 10_000;
/// At shutdown, how long answers still being written may take.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What a request (or a batch of notifications) holds until its answer
/// is written.
struct Held {
    /// The request's place among those in flight (notifications take
    /// none).
    _slot: Option<OwnedSemaphorePermit>,
    /// The request's bytes, then the response's.
    _bytes: Option<OwnedSemaphorePermit>,
    /// The method called and when, counted once answered (`None`: not a
    /// call of a known method, or notifications).
    call: Option<(Method, Instant)>,
}

enum Out {
    Bytes(Vec<u8>, Held),
    /// `head`, then every chunk `rest` yields until it closes.
    Stream {
        head: Vec<u8>,
        rest: mpsc::Receiver<Vec<u8>>,
        _held: Held,
    },
}

/// The per-connection bounds.
#[derive(Clone)]
struct Budget {
    slots: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
}

fn units(len: usize) -> u32 {
    (len.div_ceil(UNIT)).clamp(1, MAX_HELD_BYTES / UNIT) as u32
}

impl Budget {
    fn new() -> Budget {
        Budget {
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            bytes: Arc::new(Semaphore::new(MAX_HELD_BYTES / UNIT)),
        }
    }

    async fn bytes(&self, len: usize) -> OwnedSemaphorePermit {
        // The semaphores are never closed.
        self.bytes
            .clone()
            .acquire_many_owned(units(len))
            .await
            .expect("budget semaphore closed")
    }

    async fn request(&self, len: usize) -> Held {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("budget semaphore closed");
        Held {
            _slot: Some(slot),
            _bytes: Some(self.bytes(len).await),
            call: None,
        }
    }
}

/// Where answers go: the writer task's queue.
#[derive(Clone)]
struct Replier {
    tx: mpsc::UnboundedSender<Out>,
    budget: Budget,
}

impl Replier {
    /// Queues the answer to `msgid` (none for a notification: dropped).
    async fn reply(&self, msgid: Option<u32>, res: Result<Vec<u8>, ApiError>, mut held: Held) {
        if let Err(e) = &res {
            metrics::counter!("podium_rpc_errors_total", "code" => e.code.as_str()).increment(1);
        }
        if let Some((m, since)) = held.call.take() {
            super::record(m, res.is_ok(), since.elapsed());
        }
        let Some(id) = msgid else { return };
        let bytes = match res {
            Ok(r) => codec::ok_response(id, &r),
            Err(e) => codec::error_response(id, &e),
        };
        // The request's bytes are spent: swap them for the answer's, after
        // letting go (a response the size of the whole budget must not wait
        // for its own request).
        held._bytes = None;
        held._bytes = Some(self.budget.bytes(bytes.len()).await);
        let _ = self.tx.send(Out::Bytes(bytes, held));
    }
}

/// From this size on, a request buffer grows only within the memory
/// budget.
const LARGE_FRAME: usize = 1 << 20;

/// Serves one connection until the client leaves, breaks the protocol,
/// or `stop` turns true.
pub async fn serve_conn<S>(
    stream: S,
    peer: Option<std::net::IpAddr>,
    be: Arc<dyn Backend>,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(stream);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut writer = tokio::spawn(write_loop(wr, rx));
    let replier = Replier {
        tx,
        budget: Budget::new(),
    };
    let mut conn = Conn {
        be,
        session: Session::for_peer(shared, peer),
        replier,
        tasks: JoinSet::new(),
        applier: None,
        subs: Subscriptions::default(),
        notes: Arc::new(Semaphore::new(MAX_QUEUED_NOTIFICATION_BYTES / UNIT)),
    };
    let mut decoder = Decoder::new();
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    // The read buffer's share of the memory breakdown's `connections`
    // (the writer notes its own).
    let mut buffers = podium_core::memory::ConnBuffers::default();
    let mut stopping = false;
    'read: loop {
        loop {
            while conn.tasks.try_join_next().is_some() {}
            let max = if conn.session.authenticated() {
                MAX_FRAME_BYTES
            } else {
                UNAUTH_MAX_FRAME_BYTES
            };
            match decoder.decode(&mut inbuf, max) {
                Ok(Some(frame)) => {
                    let held = tokio::select! {
                        biased;
                        _ = stop.wait_for(|s| *s) => { stopping = true; break 'read }
                        h = conn.replier.budget.request(frame.len()) => h,
                    };
                    if !conn.frame(&frame, held).await {
                        break 'read;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("closing a MessagePack-RPC connection: {e:?}");
                    if let Some(id) = codec::peek_msgid(&inbuf) {
                        let held = conn.replier.budget.request(0).await;
                        conn.replier.reply(Some(id), Err(e.to_api()), held).await;
                    }
                    break 'read;
                }
            }
        }
        // A large frame's buffer is not kept for the connection's life.
        if inbuf.is_empty() && inbuf.capacity() > 1 << 20 {
            inbuf = BytesMut::with_capacity(16 * 1024);
        }
        if inbuf.capacity() - inbuf.len() < 8192 {
            // A large frame grows the buffer by doubling: past the memory
            // budget it is refused, and the connection closed (the rest of
            // the frame cannot be skipped safely).
            if inbuf.len() >= LARGE_FRAME && !podium_core::memory::room_for(inbuf.len()) {
                if let Some(id) = codec::peek_msgid(&inbuf) {
                    let held = conn.replier.budget.request(0).await;
                    let e = podium_core::memory::refusal();
                    conn.replier.reply(Some(id), Err(e), held).await;
                }
                break 'read;
            }
            inbuf.reserve(64 * 1024);
        }
        buffers.note(inbuf.capacity());
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => { stopping = true; break 'read }
            // The writer ends only on a write error: the client is gone.
            _ = &mut writer => return Ok(()),
            n = rd.read_buf(&mut inbuf) => {
                // EOF, possibly inside a frame: nothing more to answer.
                if n? == 0 {
                    break 'read;
                }
            }
        }
    }
    // Let the answers in progress finish, then the writer drains and
    // closes. At shutdown a client that does not read gets a grace period.
    let Conn {
        tasks,
        replier,
        applier,
        subs,
        ..
    } = conn;
    drop(replier);
    // The applier ends once its queue is closed and drained.
    drop(applier);
    // Subscriptions end with the connection (after answering a
    // `subscribe` still owed).
    let subs = subs.close_all();
    let finish = async move {
        let (mut tasks, mut subs) = (tasks, subs);
        while tasks.join_next().await.is_some() {}
        while subs.join_next().await.is_some() {}
        writer.await
    };
    let done = if stopping {
        match tokio::time::timeout(STOP_GRACE, finish).await {
            Ok(r) => r,
            Err(_) => return Ok(()),
        }
    } else {
        finish.await
    };
    match done {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(e)),
    }
}

struct Conn {
    be: Arc<dyn Backend>,
    session: Session,
    replier: Replier,
    tasks: JoinSet<()>,
    /// Started at the first bulk write on the embedded engine.
    applier: Option<Applier>,
    subs: Subscriptions,
    /// The budget of queued notifications, in [`UNIT`]s (see
    /// [`MAX_QUEUED_NOTIFICATION_BYTES`]).
    notes: Arc<Semaphore>,
}

/// What the reader hands to the applier, in the order read.
// Nearly every item is a write; a barrier's unused room costs nothing worth
// an allocation per write.
#[allow(clippy::large_enum_variant)]
enum Apply {
    Write {
        msgid: u32,
        call: method::Call,
        held: Held,
    },
    /// Answered once every write queued before it is applied.
    Barrier(oneshot::Sender<()>),
}

/// The reader's end of the applier task's queue.
struct Applier {
    tx: mpsc::UnboundedSender<Apply>,
    /// Writes queued and not yet applied.
    pending: Arc<AtomicUsize>,
}

/// Applies the queued bulk writes one after the other (each answered as
/// [`Conn::run`] would), then ends when the reader closes the queue.
async fn apply_loop(
    be: Arc<dyn Backend>,
    replier: Replier,
    mut rx: mpsc::UnboundedReceiver<Apply>,
    pending: Arc<AtomicUsize>,
) {
    let mut tasks = JoinSet::new();
    while let Some(a) = rx.recv().await {
        match a {
            Apply::Write { msgid, call, held } => {
                run_call(&be, &replier, &mut tasks, Some(msgid), call, held).await;
                // Release: a reader that sees the count drop sees the write.
                pending.fetch_sub(1, Ordering::Release);
            }
            Apply::Barrier(done) => {
                let _ = done.send(());
            }
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
}

impl Conn {
    /// Hands a bulk write to the applier (started on first use).
    fn queue_write(&mut self, msgid: u32, call: method::Call, held: Held) {
        let applier = self.applier.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let pending = Arc::new(AtomicUsize::new(0));
            let task = apply_loop(self.be.clone(), self.replier.clone(), rx, pending.clone());
            self.tasks.spawn(task);
            Applier { tx, pending }
        });
        applier.pending.fetch_add(1, Ordering::Relaxed);
        // The applier lives in `tasks` until the queue is closed, so it
        // cannot be gone while the reader still sends.
        let _ = applier.tx.send(Apply::Write { msgid, call, held });
    }

    /// Waits until every bulk write queued so far is applied.
    async fn settle(&mut self) {
        let Some(applier) = &self.applier else { return };
        if applier.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let (done, wait) = oneshot::channel();
        if applier.tx.send(Apply::Barrier(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// Handles one frame; false: close the connection.
    async fn frame(&mut self, frame: &[u8], mut held: Held) -> bool {
        if let Some(w) = fast::bulk_write(frame) {
            let method = if w.import {
                Method::Import
            } else {
                Method::SubmitMany
            };
            held.call = Some((method, Instant::now()));
            if let Err(e) = self.session.check(method) {
                self.replier.reply(Some(w.msgid), Err(e), held).await;
            } else {
                let call = method::Call::Records {
                    board: w.board.to_owned(),
                    recs: w.entries.iter().map(fast::Plain::rec).collect(),
                    import: w.import,
                };
                if self.be.applies_in_place() {
                    self.queue_write(w.msgid, call, held);
                } else {
                    self.run(Some(w.msgid), call, held).await;
                }
            }
            return true;
        }
        // Whatever this frame is, it comes after the bulk writes before it.
        self.settle().await;
        let value = match codec::decode_frame(frame) {
            Ok(v) => v,
            Err(e) => {
                if let Some(id) = codec::peek_msgid(frame) {
                    self.replier.reply(Some(id), Err(e), held).await;
                }
                return false;
            }
        };
        match codec::envelope(value) {
            Ok(Message::Request {
                msgid,
                method,
                params,
            }) => {
                self.request(Some(msgid), &method, params, held).await;
                true
            }
            Ok(Message::Notification { method, params }) => {
                self.request(None, &method, params, held).await;
                true
            }
            Err(EnvelopeError::Answer(id, e)) => {
                self.replier.reply(Some(id), Err(e), held).await;
                true
            }
            Err(EnvelopeError::Close(why)) => {
                tracing::debug!("closing a MessagePack-RPC connection: {why}");
                false
            }
        }
    }

    /// Runs one request (`msgid` None: a notification, never answered;
    /// unknown ones and refused ones are dropped silently).
    async fn request(
        &mut self,
        msgid: Option<u32>,
        name: &str,
        params: Vec<Value>,
        mut held: Held,
    ) {
        let r = &self.replier;
        let Some(m) = Method::from_name(name) else {
            let e = ApiError::new(Code::NotFound, format!("unknown method {name:?}"));
            return r.reply(msgid, Err(e), held).await;
        };
        held.call = Some((m, Instant::now()));
        if let Err(e) = self.session.check(m) {
            return r.reply(msgid, Err(e), held).await;
        }
        if msgid.is_none() && !m.runs_as_notification() {
            return;
        }
        let call = match method::parse(m, params) {
            Ok(c) => c,
            Err(e) => return r.reply(msgid, Err(e), held).await,
        };
        match call {
            method::Call::Auth { key } => {
                let res = self.session.auth(&key);
                r.reply(msgid, res, held).await
            }
            method::Call::Subscribe(op) => self.subscribe(msgid, op, held).await,
            method::Call::Unsubscribe { id } => {
                // Closed before the answer is queued: no notification of
                // the subscription comes after it.
                let was = self.subs.unsubscribe(id);
                r.reply(msgid, exec::encode(&was), held).await
            }
            call => self.run(msgid, call, held).await,
        }
    }

    /// `subscribe`: answers the subscription's id, then its events follow
    /// as notifications, from a task of their own. Its first poll is made
    /// here, before the next request is read, so the subscription starts
    /// after the writes sent before it and before those sent after it.
    async fn subscribe(&mut self, msgid: Option<u32>, op: ops::Subscribe, held: Held) {
        // Only requests get here (notifications of reads are not run).
        let Some(msgid) = msgid else { return };
        let (id, gate) = match self.subs.open() {
            Ok(x) => x,
            Err(e) => return self.replier.reply(Some(msgid), Err(e), held).await,
        };
        let be = self.be.clone();
        let mut start = Box::pin(async move { op.run(&*be).await });
        let first = std::future::poll_fn(|cx| Poll::Ready(start.as_mut().poll(cx))).await;
        let r = self.replier.clone();
        let notes = self.notes.clone();
        self.subs.spawn(async move {
            let started = match first {
                Poll::Ready(res) => res,
                Poll::Pending => start.await,
            };
            match started {
                Ok(sub) => {
                    // The answer is queued before the first notification.
                    r.reply(Some(msgid), exec::encode(&id), held).await;
                    forward(r, id, sub, gate, notes).await
                }
                Err(e) => {
                    gate.close();
                    r.reply(Some(msgid), Err(e), held).await
                }
            }
        });
    }

    /// Runs a parsed call whose scope is checked.
    async fn run(&mut self, msgid: Option<u32>, call: method::Call, held: Held) {
        run_call(&self.be, &self.replier, &mut self.tasks, msgid, call, held).await
    }
}

/// Runs a parsed call whose scope is checked; whatever outlives its first
/// poll goes to `tasks`.
async fn run_call(
    be: &Arc<dyn Backend>,
    r: &Replier,
    tasks: &mut JoinSet<()>,
    msgid: Option<u32>,
    call: method::Call,
    held: Held,
) {
    match exec::execute(be, call) {
        Exec::Ready(res) => r.reply(msgid, res, held).await,
        Exec::Later(mut fut) => {
            // The first poll applies the write now, before the next
            // request is read: writes apply in the order sent.
            let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
            match first {
                Poll::Ready(res) => r.reply(msgid, res, held).await,
                Poll::Pending => {
                    let r = r.clone();
                    tasks.spawn(async move {
                        let res = fut.await;
                        r.reply(msgid, res, held).await;
                    });
                }
            }
        }
        Exec::Stream(s) => {
            // Notifications of reads never get here.
            let Some(id) = msgid else { return };
            let r = r.clone();
            tasks.spawn(stream(r, id, s, held));
        }
        Exec::Deferred(fut) => {
            let r = r.clone();
            tasks.spawn(async move {
                match fut.await {
                    Exec::Ready(res) => r.reply(msgid, res, held).await,
                    Exec::Later(f) => {
                        let res = f.await;
                        r.reply(msgid, res, held).await
                    }
                    Exec::Stream(s) => {
                        if let Some(id) = msgid {
                            stream(r, id, s, held).await
                        }
                    }
                    Exec::Deferred(_) => {
                        let e = ApiError::new(Code::Internal, "a result deferred twice");
                        r.reply(msgid, Err(e), held).await
                    }
                }
            });
        }
    }
}

/// Queues subscription `id`'s events as notifications until its gate
/// closes or its stream ends, one batch of events in one write. A batch
/// waits for room in the connection's notification budget (`notes`)
/// without reading further events: a connection that does not keep up
/// holds at most the budget here, and its subscription falls behind in its
/// filter's ring until it ends with a `lagged` event.
async fn forward(
    r: Replier,
    id: u64,
    mut sub: Subscription,
    gate: Arc<Gate>,
    notes: Arc<Semaphore>,
) {
    loop {
        let batch = tokio::select! {
            biased;
            _ = gate.closed() => return,
            b = sub.next_batch() => match b {
                Some(b) => b,
                None => {
                    // The ring was closed (the server is stopping).
                    gate.close();
                    return;
                }
            },
        };
        let mut bytes = Vec::with_capacity(batch.len() * 192);
        for ev in &batch {
            events::notification(id, ev, &mut bytes);
        }
        let last = batch.last().is_some_and(|e| e.kind == Kind::Lagged);
        let permit = tokio::select! {
            biased;
            _ = gate.closed() => return,
            // The semaphore is never closed.
            p = notes.clone().acquire_many_owned(notification_units(bytes.len())) => {
                p.expect("notification budget closed")
            }
        };
        let held = Held {
            _slot: None,
            _bytes: Some(permit),
            call: None,
        };
        if !gate.pass(last, || r.tx.send(Out::Bytes(bytes, held)).is_ok()) {
            return;
        }
    }
}

/// A batch's share of the notification budget; one larger than the whole
/// budget waits until it is the only one queued.
fn notification_units(len: usize) -> u32 {
    len.div_ceil(UNIT)
        .clamp(1, MAX_QUEUED_NOTIFICATION_BYTES / UNIT) as u32
}

/// Chunk reads of streamed results in flight, over every connection.
static READING: AtomicUsize = AtomicUsize::new(0);

/// Whether a stream may read a chunk ahead of the one it needs next: while
/// fewer reads than the machine has cores are running. A lone export
/// (the walk of a large board is bound by memory latency, one core's worth
/// per read) then has its next chunks read on an idle core while the last
/// is written; many exports at once read one chunk each, in turn, as
/// before.
fn may_read_ahead() -> bool {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    READING.load(Ordering::Relaxed) < cores
}

/// A chunk read running.
type ChunkRead = JoinHandle<Result<Chunk, ApiError>>;

/// One chunk read, counted in [`READING`] until it is done.
fn read_chunk(fetch: &exec::Fetch, skip: u64, n: usize) -> ChunkRead {
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            READING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    READING.fetch_add(1, Ordering::Relaxed);
    let counted = Counted;
    let read = fetch(skip, n);
    tokio::spawn(async move {
        let r = read.await;
        drop(counted);
        r
    })
}

/// Stops the reads a stream no longer needs (it ended, or they started
/// at positions a short chunk moved).
fn abort_reads(reads: &mut VecDeque<(u64, usize, ChunkRead)>) {
    for (_, _, read) in reads.drain(..) {
        read.abort();
    }
}

/// Most chunk reads a stream has in flight: the one it writes next and
/// one ahead (see [`may_read_ahead`]).
const READS_IN_FLIGHT: usize = 2;

/// Writes a streamed result: envelope, head and first chunk at once, then
/// chunk after chunk, each read only once the writer has room for the one
/// before it (and, with cores to spare, the following one read meanwhile).
/// Exactly `total` entries follow the head: if the board lost entries
/// meanwhile (or was deleted), the rest of the array is nil.
async fn stream(r: Replier, msgid: u32, s: Streamed, held: Held) {
    let Streamed {
        head: result_head,
        total,
        first,
        fetch,
    } = s;
    let mut head = Vec::with_capacity(result_head.len() + first.bytes.len() + 8);
    codec::ok_head(msgid, &mut head);
    head.extend_from_slice(&result_head);
    head.extend_from_slice(&first.bytes);
    let mut done = first.count as u64;
    let mut want = next_want(first.count, first.bytes.len(), exec::FIRST_CHUNK);
    drop(first);
    let (tx, rest) = mpsc::channel::<Vec<u8>>(1);
    if r.tx
        .send(Out::Stream {
            head,
            rest,
            _held: held,
        })
        .is_err()
    {
        return;
    }
    // Reads started, in order: where each starts, how many it asks for.
    let mut reads: VecDeque<(u64, usize, ChunkRead)> = VecDeque::new();
    let mut ended = false;
    while done < total {
        // The next chunk's read, then, cores allowing, the one after it.
        if !ended {
            let mut at = reads.back().map_or(done, |&(s, n, _)| s + n as u64);
            while at < total
                && reads.len() < READS_IN_FLIGHT
                && (reads.is_empty() || may_read_ahead())
            {
                let n = want.min((total - at) as usize);
                reads.push_back((at, n, read_chunk(&fetch, at, n)));
                at += n as u64;
            }
        }
        let chunk = match reads.pop_front() {
            None => None,
            Some((at, n, read)) => {
                debug_assert_eq!(at, done);
                match read.await {
                    // More than asked for cannot be cut out of encoded
                    // bytes; the backend never returns more, so it is
                    // treated as the end.
                    Ok(Ok(c)) if c.count > 0 && c.count <= n => Some(c),
                    Ok(Err(e)) => {
                        tracing::debug!("a streamed answer ended early: {e}");
                        None
                    }
                    Err(e) => {
                        tracing::debug!("a streamed answer's read failed: {e}");
                        None
                    }
                    _ => None,
                }
            }
        };
        let bytes = match chunk {
            Some(Chunk { bytes, count }) => {
                // A short chunk (the board lost entries): reads ahead of
                // it start at the wrong place.
                if reads
                    .front()
                    .is_some_and(|&(at, _, _)| at != done + count as u64)
                {
                    abort_reads(&mut reads);
                }
                done += count as u64;
                want = next_want(count, bytes.len(), want);
                bytes
            }
            None => {
                ended = true;
                abort_reads(&mut reads);
                let pad = ((total - done) as usize).min(64 << 10);
                done += pad as u64;
                vec![0xc0; pad]
            }
        };
        if tx.send(bytes).await.is_err() {
            abort_reads(&mut reads);
            return;
        }
    }
}

/// The next chunk's entry count, from the last one's bytes per entry.
fn next_want(count: usize, bytes: usize, last: usize) -> usize {
    if count == 0 || bytes == 0 {
        return last.clamp(MIN_CHUNK, MAX_CHUNK);
    }
    let per = bytes.div_ceil(count).max(1);
    (CHUNK_TARGET_BYTES / per).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// Writes answers as they are queued, small ones gathered into one write.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Out>,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut held: Vec<Held> = Vec::new();
    let mut buffers = podium_core::memory::ConnBuffers::default();
    buffers.note(buf.capacity());
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(out) = next.take() {
            match out {
                Out::Bytes(b, h) => {
                    if buf.is_empty() && b.len() >= WRITE_BATCH {
                        wr.write_all(&b).await?;
                    } else {
                        buf.extend_from_slice(&b);
                        held.push(h);
                    }
                }
                Out::Stream {
                    head,
                    mut rest,
                    _held,
                } => {
                    buf.extend_from_slice(&head);
                    wr.write_all(&buf).await?;
                    buf.clear();
                    held.clear();
                    while let Some(chunk) = rest.recv().await {
                        wr.write_all(&chunk).await?;
                    }
                }
            }
            if buf.len() >= WRITE_BATCH {
                wr.write_all(&buf).await?;
                buf.clear();
                held.clear();
            }
            next = rx.try_recv().ok();
        }
        if !buf.is_empty() {
            wr.write_all(&buf).await?;
            buf.clear();
            held.clear();
        }
        if buf.capacity() > 4 * WRITE_BATCH {
            buf = Vec::with_capacity(64 * 1024);
        }
        buffers.note(buf.capacity());
        wr.flush().await?;
    }
    wr.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_store::service::Service;
    use tokio::io::duplex;

    fn enc(v: &Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, v).unwrap();
        b
    }

    fn req(id: u32, method: &str, params: Vec<Value>) -> Vec<u8> {
        enc(&Value::Array(vec![
            0.into(),
            id.into(),
            method.into(),
            Value::Array(params),
        ]))
    }

    fn map(kv: &[(&str, Value)]) -> Value {
        Value::Map(
            kv.iter()
                .map(|(k, v)| (Value::from(*k), v.clone()))
                .collect(),
        )
    }

    /// Sends `input` in pieces, then reads every message until the server
    /// closes (or goes quiet for a while).
    async fn session(
        svc: Arc<Service>,
        keys: Vec<crate::settings::ApiKey>,
        input: Vec<u8>,
        chunk: usize,
    ) -> (Vec<Value>, bool) {
        let shared = Arc::new(Shared {
            api_keys: keys,
            rate: Default::default(),
        });
        let (client, server) = duplex(1 << 16);
        let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let be: Arc<dyn Backend> = Arc::new(podium_store::EmbeddedBackend::new(svc));
        let task = tokio::spawn(serve_conn(server, None, be, shared, stop_rx));
        let (mut rd, mut wr) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            for piece in input.chunks(chunk.max(1)) {
                if wr.write_all(piece).await.is_err() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            wr
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 8192];
        let mut closed = false;
        loop {
            match tokio::time::timeout(Duration::from_millis(500), rd.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed = true;
                    break;
                }
                Err(_) => break,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            }
        }
        drop(writer.await);
        task.abort();
        let mut rdr = &got[..];
        let mut out = Vec::new();
        while !rdr.is_empty() {
            out.push(rmpv::decode::read_value(&mut rdr).unwrap());
        }
        (out, closed)
    }

    fn by_id(msgs: &[Value], id: u32) -> &Value {
        msgs.iter()
            .find(|m| m[1].as_u64() == Some(u64::from(id)))
            .unwrap_or_else(|| panic!("no answer to {id} in {msgs:?}"))
    }

    #[tokio::test]
    async fn pipelined_requests_and_notifications_whatever_the_chunking() {
        let mut input = Vec::new();
        input.extend(enc(&Value::Array(vec![
            2.into(),
            "nvim_hello".into(),
            Value::Array(vec![]),
        ])));
        input.extend(req(
            0,
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "a".into()), ("score", 1.into())]),
            ],
        ));
        input.extend(enc(&Value::Array(vec![
            2.into(),
            "submit".into(),
            Value::Array(vec![
                "lb".into(),
                map(&[("member", "b".into()), ("score", 2.into())]),
            ]),
        ])));
        input.extend(req(u32::MAX, "rank", vec!["lb".into(), "b".into()]));
        input.extend(req(2, "nope", vec![]));
        input.extend(req(3, "rank", vec!["lb".into(), "zz".into()]));
        for chunk in [1, 5, 1000] {
            let svc = Arc::new(Service::in_memory());
            let (msgs, _) = session(svc, vec![], input.clone(), chunk).await;
            assert_eq!(msgs.len(), 4, "chunk {chunk}: {msgs:?}");
            assert_eq!(by_id(&msgs, 0)[2], Value::Nil);
            let rank = &by_id(&msgs, u32::MAX)[3];
            assert_eq!(rank["rank"], Value::from(1), "{rank}");
            let e = &by_id(&msgs, 2)[2];
            assert_eq!(e[0], Value::from("not_found"));
            assert_eq!(e[1], Value::from("unknown method \"nope\""));
            assert_eq!(by_id(&msgs, 3)[2][0], Value::from("member_not_found"));
        }
    }

    /// `subscribe` is answered with its id before the subscription's first
    /// event; events are `[2, "event", [id, event]]` notifications between
    /// the other answers; a `subscribe` notification starts nothing.
    #[tokio::test]
    async fn a_subscription_is_answered_then_its_events_follow() {
        let mut input = enc(&Value::Array(vec![
            2.into(),
            "subscribe".into(),
            Value::Array(vec!["lb".into()]),
        ]));
        input.extend(req(
            1,
            "subscribe",
            vec![
                "lb".into(),
                map(&[("top", 2.into()), ("snapshot", true.into())]),
            ],
        ));
        input.extend(req(
            2,
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "x".into()), ("score", 1.into())]),
            ],
        ));
        input.extend(req(
            3,
            "submit",
            vec![
                "lb".into(),
                map(&[("member", "y".into()), ("score", 2.into())]),
            ],
        ));
        input.extend(req(4, "unsubscribe", vec![9.into()]));
        let (msgs, _) = session(Arc::new(Service::in_memory()), vec![], input, 1 << 16).await;
        let answer = msgs
            .iter()
            .position(|m| m[0] == Value::from(1) && m[1] == Value::from(1))
            .expect("the answer to subscribe");
        assert_eq!(msgs[answer][3], Value::from(1), "the first id");
        let events: Vec<(usize, &Value)> = msgs
            .iter()
            .enumerate()
            .filter(|(_, m)| m[0] == Value::from(2))
            .collect();
        assert!(events.iter().all(|(i, _)| *i > answer), "{msgs:?}");
        for (_, m) in &events {
            assert_eq!(m[1], Value::from("event"));
            assert_eq!(m[2][0], Value::from(1), "one subscription: {m}");
        }
        let kinds: Vec<(&str, Option<&str>)> = events
            .iter()
            .map(|(_, m)| {
                (
                    m[2][1]["type"].as_str().unwrap(),
                    m[2][1]["member"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("snapshot", None),
                // The first write made the board.
                ("created", None),
                ("enter", Some("x")),
                ("enter", Some("y")),
                ("move", Some("x"))
            ]
        );
        assert_eq!(by_id(&msgs, 4)[3], Value::Boolean(false));
        assert_eq!(by_id(&msgs, 2)[2], Value::Nil);
    }

    #[tokio::test]
    async fn hostile_frames_answer_when_possible_and_close() {
        // 2^31 string length: answered (the id is readable), then closed.
        let mut f = vec![0x94, 0x00, 0x07, 0xa3, b't', b'o', b'p', 0x91, 0xdb];
        f.extend_from_slice(&(1u32 << 31).to_be_bytes());
        let mut input = req(1, "boards", vec![]);
        input.extend(f);
        let (msgs, closed) = session(Arc::new(Service::in_memory()), vec![], input, 3).await;
        assert!(closed);
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert_eq!(by_id(&msgs, 7)[2][0], Value::from("payload_too_large"));
        // Not a request and no id: just closed, after earlier answers.
        let mut input = req(1, "boards", vec![]);
        input.extend(enc(&Value::from("hello")));
        input.extend(req(2, "boards", vec![]));
        let (msgs, closed) = session(Arc::new(Service::in_memory()), vec![], input, 100).await;
        assert!(closed);
        assert_eq!(msgs.len(), 1);
        // Bad envelope with an id: answered, and the connection goes on.
        let mut input = enc(&Value::Array(vec![0.into(), 5.into(), "rank".into()]));
        input.extend(req(6, "boards", vec![]));
        let (msgs, _) = session(Arc::new(Service::in_memory()), vec![], input, 100).await;
        assert_eq!(by_id(&msgs, 5)[2][0], Value::from("malformed_request"));
        assert_eq!(by_id(&msgs, 6)[2], Value::Nil);
    }

    #[tokio::test]
    async fn auth_first_and_small_frames_before_it() {
        let keys = vec![crate::settings::ApiKey::new(
            "readkey-0123456789abcdef",
            crate::settings::Scope::Read,
        )
        .unwrap()];
        let mut input = req(1, "boards", vec![]);
        input.extend(req(2, "auth", vec!["readkey-0123456789abcdef".into()]));
        input.extend(req(3, "boards", vec![]));
        input.extend(req(4, "board_delete", vec!["x".into()]));
        let (msgs, _) = session(Arc::new(Service::in_memory()), keys.clone(), input, 7).await;
        assert_eq!(by_id(&msgs, 1)[2][0], Value::from("unauthorized"));
        assert_eq!(by_id(&msgs, 2)[3]["scope"], Value::from("read"));
        assert_eq!(by_id(&msgs, 3)[2], Value::Nil);
        assert_eq!(by_id(&msgs, 4)[2][0], Value::from("forbidden"));
        // Before auth, a frame over 64 KiB is refused.
        let big = req(
            9,
            "submit_many",
            vec!["lb".into(), Value::Array(vec!["x".repeat(70_000).into()])],
        );
        let (msgs, closed) = session(Arc::new(Service::in_memory()), keys, big, 4096).await;
        assert!(closed);
        assert_eq!(by_id(&msgs, 9)[2][0], Value::from("payload_too_large"));
    }

    /// Every method of the table, called with no key and with a key of
    /// each scope, against the scope of its operation: allowed, or refused
    /// with HTTP's code and text.
    #[tokio::test]
    async fn every_method_against_every_scope() {
        use crate::settings::{ApiKey, Scope};
        let keys = vec![
            ApiKey::new("readkey-0123456789abcdef", Scope::Read).unwrap(),
            ApiKey::new("writekey-0123456789abcdef", Scope::Write).unwrap(),
            ApiKey::new("adminkey-0123456789abcdef", Scope::Admin).unwrap(),
        ];
        let entry = || map(&[("member", "a".into()), ("score", 1.into())]);
        for (scope, key) in [
            (None, "unknownkey-0123456789abcdef"),
            (Some(Scope::Read), "readkey-0123456789abcdef"),
            (Some(Scope::Write), "writekey-0123456789abcdef"),
            (Some(Scope::Admin), "adminkey-0123456789abcdef"),
        ] {
            let mut input = Vec::new();
            if scope.is_some() {
                input.extend(req(0, "auth", vec![key.into()]));
            }
            for (id, &(name, ..)) in (1..).zip(method::METHODS) {
                let params = match name {
                    "auth" => vec![key.into()],
                    // Plain entries: the connection's fast path.
                    "submit_many" | "import" => vec!["lb".into(), Value::Array(vec![entry()])],
                    "submit" => vec!["lb".into(), entry()],
                    _ => vec!["lb".into(), "a".into()],
                };
                input.extend(req(id, name, params));
            }
            let svc = Arc::new(Service::in_memory());
            let (msgs, _) = session(svc, keys.clone(), input, 1 << 16).await;
            for (id, &(name, _, op)) in (1..).zip(method::METHODS) {
                let err = &by_id(&msgs, id)[2];
                let ctx = format!("{name} with {scope:?}: {err}");
                let refusal = match (op.scope(), scope) {
                    (None, _) => None,
                    (Some(_), None) => Some((
                        "unauthorized",
                        "this request needs an API key: call auth(key) first".to_string(),
                    )),
                    (Some(needed), Some(s)) if s.allows(needed) => None,
                    (Some(needed), Some(s)) => Some((
                        "forbidden",
                        format!(
                            "this request needs a key of scope {}; this key has scope {}",
                            needed.as_str(),
                            s.as_str()
                        ),
                    )),
                };
                match refusal {
                    Some((code, msg)) => {
                        assert_eq!(err[0], Value::from(code), "{ctx}");
                        assert_eq!(err[1], Value::from(msg), "{ctx}");
                    }
                    None => assert!(
                        !err[1]
                            .as_str()
                            .is_some_and(|m| m.starts_with("this request needs")),
                        "{ctx}"
                    ),
                }
            }
        }
    }

    #[tokio::test]
    async fn streamed_results_declare_and_deliver_exactly_their_count() {
        let svc = Arc::new(Service::in_memory());
        let n = 3000;
        let entries: Vec<_> = (0..n)
            .map(|i| podium_core::api::SubmitIn::new(format!("m{i:05}"), i as f64))
            .collect();
        svc.submit("big", &entries).await.unwrap();
        let mut input = req(1, "export", vec!["big".into()]);
        input.extend(req(
            2,
            "range_by_rank",
            vec![
                "big".into(),
                10.into(),
                2009.into(),
                map(&[("with_data", true.into())]),
            ],
        ));
        input.extend(req(
            3,
            "range_by_score",
            vec![
                "big".into(),
                map(&[
                    ("min", 100.into()),
                    ("limit", 5000.into()),
                    ("offset", 1.into()),
                ]),
            ],
        ));
        input.extend(req(
            4,
            "range_by_rank",
            vec!["big".into(), 2900.into(), 4000.into()],
        ));
        let (msgs, _) = session(svc, vec![], input, 1000).await;
        let export = by_id(&msgs, 1)[3].as_array().unwrap();
        assert_eq!(export.len(), n);
        assert_eq!(export[0]["member"], Value::from("m02999"));
        assert_eq!(export[n - 1]["rank"], Value::from(n));
        let r = &by_id(&msgs, 2)[3];
        let e = r["entries"].as_array().unwrap();
        assert_eq!(e.len(), 2000);
        assert_eq!(e[0]["rank"], Value::from(10));
        assert_eq!(e[1999]["rank"], Value::from(2009));
        assert_eq!(r["total"], Value::from(n));
        let s = by_id(&msgs, 3)[3]["entries"].as_array().unwrap().clone();
        assert_eq!(s.len(), n - 100 - 1);
        assert_eq!(s[0]["score"], Value::F64(2998.0));
        assert_eq!(s[s.len() - 1]["score"], Value::F64(100.0));
        let tail = by_id(&msgs, 4)[3]["entries"].as_array().unwrap().clone();
        assert_eq!(tail.len(), 101);
    }

    /// Runs [`stream`] for `s` as `msgid` and gathers everything it writes,
    /// read slowly (yielding between chunks) or not; the budget comes back
    /// so a test can check that every permit was given back.
    async fn run_stream(msgid: u32, s: Streamed, slow: bool) -> (Vec<u8>, Budget) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let budget = Budget::new();
        let r = Replier {
            tx,
            budget: budget.clone(),
        };
        let held = budget.request(10).await;
        tokio::spawn(stream(r, msgid, s, held));
        let Some(Out::Stream {
            mut head, mut rest, ..
        }) = rx.recv().await
        else {
            panic!("no stream")
        };
        while let Some(c) = rest.recv().await {
            head.extend(c);
            if slow {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
            }
        }
        (head, budget)
    }

    #[tokio::test]
    async fn a_stream_that_runs_short_is_completed_with_nil() {
        // Declares 10 entries; the "board" holds only 5 by the second chunk.
        let entry = |i: u64| enc(&Value::from(i));
        let fetch: exec::Fetch = Arc::new(move |done, want| {
            let have = 5u64.saturating_sub(done).min(want as u64);
            let bytes = (done..done + have).flat_map(entry).collect::<Vec<u8>>();
            Box::pin(async move {
                Ok(Chunk {
                    bytes,
                    count: have as usize,
                })
            })
        });
        let s = Streamed {
            head: vec![0x9a],
            total: 10,
            first: Chunk {
                bytes: [entry(0), entry(1), entry(2)].concat(),
                count: 3,
            },
            fetch,
        };
        let (head, budget) = run_stream(42, s, false).await;
        let v = rmpv::decode::read_value(&mut &head[..]).unwrap();
        let mut want: Vec<Value> = (0..5u64).map(Value::from).collect();
        want.extend(std::iter::repeat_n(Value::Nil, 5));
        assert_eq!(
            v,
            Value::Array(vec![1.into(), 42.into(), Value::Nil, Value::Array(want)])
        );
        // Everything the stream held is given back.
        assert_eq!(budget.slots.available_permits(), MAX_IN_FLIGHT);
    }

    /// Chunks read ahead: read fast or slowly, a source of 200,000 entries
    /// (20 chunks) delivers exactly its entries in order; one that runs
    /// short at 50,000 is completed with nil to the count; one that loses
    /// entries while reads ahead are in flight (its fifth read finds 45,000
    /// left: a short chunk, then reads ahead that started at positions
    /// that no longer hold what they held) gives a run of its entries from
    /// the first, none repeated or skipped, then nil.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_ahead_deliver_exactly_their_count_fast_or_slow() {
        use std::sync::atomic::AtomicU64;
        let entry = |i: u64| enc(&Value::from(i));
        for (have, shrinks, slow) in [
            (200_000u64, false, false),
            (200_000, false, true),
            (50_000, false, true),
            (200_000, true, false),
            (200_000, true, true),
        ] {
            let (live, calls) = (Arc::new(AtomicU64::new(have)), Arc::new(AtomicU64::new(0)));
            let fetch: exec::Fetch = Arc::new(move |done, want| {
                if shrinks && calls.fetch_add(1, Ordering::Relaxed) == 4 {
                    live.store(45_000, Ordering::Relaxed);
                }
                let end = (done + want as u64).min(live.load(Ordering::Relaxed));
                let n = end.saturating_sub(done);
                let bytes = (done..done + n).flat_map(entry).collect::<Vec<u8>>();
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    Ok(Chunk {
                        bytes,
                        count: n as usize,
                    })
                })
            });
            let total = 200_000u64;
            let mut head = Vec::new();
            rmp::encode::write_array_len(&mut head, total as u32).unwrap();
            let s = Streamed {
                head,
                total,
                first: Chunk {
                    bytes: entry(0),
                    count: 1,
                },
                fetch,
            };
            let (head, budget) = run_stream(7, s, slow).await;
            let v = rmpv::decode::read_value(&mut &head[..]).unwrap();
            let Value::Array(msg) = v else {
                panic!("not a response")
            };
            assert_eq!(msg[..3], [1.into(), 7.into(), Value::Nil]);
            let got = msg[3].as_array().expect("the entries");
            assert_eq!(got.len(), total as usize);
            let k = got.iter().take_while(|e| !e.is_nil()).count();
            let label = format!("have {have} shrinks {shrinks} slow {slow}: {k} entries");
            if shrinks {
                assert!(k >= 45_000, "{label}");
            } else {
                assert_eq!(k as u64, have, "{label}");
            }
            for (i, e) in got.iter().enumerate() {
                let want = if i < k { Value::from(i) } else { Value::Nil };
                assert_eq!(e, &want, "{label}: item {i}");
            }
            assert_eq!(budget.slots.available_permits(), MAX_IN_FLIGHT);
        }
    }

    #[test]
    fn chunk_sizes_follow_entry_sizes() {
        assert_eq!(next_want(100, 100 * 100, 256), CHUNK_TARGET_BYTES / 100);
        assert_eq!(next_want(100, 100 * 10, 256), MAX_CHUNK);
        assert_eq!(next_want(100, 100 * 10_000, 256), MIN_CHUNK);
        assert_eq!(next_want(0, 0, 256), 256);
    }
}
