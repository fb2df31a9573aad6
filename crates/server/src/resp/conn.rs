//! One client connection: read bytes, split them into requests, run each,
//! and send the replies.
//!
//! Pipelining: every complete request already read is run before anything
//! is written, up to [`MAX_BATCH`] requests or [`MAX_BATCH_REPLY`] bytes of
//! replies; then the connection waits once for the log to be durable up to
//! the highest position any of them wrote (one group commit per batch
//! under `--fsync always`), and writes all their replies in one go.
//! Commands run synchronously between reads: the key store's methods do not
//! await, so a batch (and a MULTI/EXEC queue) runs without yielding, but
//! for a script's wait for its turn ([`super::script::Scripts::turn`]).
//!
//! Pub/Sub: a subscribed connection waits on the socket and on its queue
//! of messages ([`super::pubsub::Outbox`]) at once, and writes messages as
//! they come, between replies in the order Redis would write them; one
//! that falls [`super::pubsub::OUTBOX_LIMIT`] behind is closed, even while
//! a write to it is stuck.
//!
//! Blocking pops: a command that blocks ([`Session::take_block`]) has the
//! replies before it sent, then the connection waits — on the key store's
//! wake, the timeout, or the client leaving — without holding a worker or
//! the gate, and runs nothing else the client sent meanwhile, as Redis.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::codec::Decoder;
use super::exec::{pass_on, Block, Session, Shared, OOM};
use super::pubsub::Outbox;
use super::reply::Reply;
use podium_core::keystore::KeyStore;
use podium_core::memory;

/// Most requests run before their replies are flushed.
pub const MAX_BATCH: usize = 1024;
/// Most reply bytes gathered before they are flushed.
pub const MAX_BATCH_REPLY: usize = 1 << 20;
/// Reply bytes from which a batch past the memory budget sends what it
/// has before running more.
const SEND_FIRST_FROM: usize = 64 * 1024;
/// From this size on, a request buffer grows only within the memory
/// budget.
pub const LARGE_QUERY: usize = 1 << 20;
/// Most request bytes held for one connection (Redis's
/// `client-query-buffer-limit`): past it the connection is closed.
pub const MAX_QUERY_BUFFER: usize = 1 << 30;

/// Whether a request is a line of an HTTP request (`POST …`, `Host: …`),
/// which Redis answers by closing the connection.
fn is_http(args: &[bytes::Bytes]) -> bool {
    args.first()
        .is_some_and(|a| a.eq_ignore_ascii_case(b"post") || a.eq_ignore_ascii_case(b"host:"))
}

/// Serves one connection until the client leaves, QUITs, breaks the
/// protocol, or `stop` turns true (checked between batches).
pub async fn serve_conn<S>(
    stream: S,
    peer: Option<std::net::SocketAddr>,
    local: Option<std::net::SocketAddr>,
    store: Arc<dyn KeyStore>,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    shared.clients.fetch_add(1, Ordering::Relaxed);
    struct Count(Arc<Shared>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.clients.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _count = Count(shared.clone());

    let (mut rd, mut wr) = tokio::io::split(stream);
    let stats = shared.clone();
    let scripts = shared.scripts.clone();
    let mut session = Session::for_conn(store.clone(), shared, peer, local);
    let client = session.client.client.clone();
    let outbox = session.outbox();
    let mut decoder = Decoder::new();
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    let mut out = BytesMut::with_capacity(16 * 1024);
    // This connection's share of the memory breakdown's `connections`.
    let mut buffers = memory::ConnBuffers::default();
    // Whether `inbuf` has grown past [`LARGE_QUERY`].
    let mut large = false;
    // A request held back by CLIENT PAUSE, run first once it ends.
    let mut held: Option<Vec<bytes::Bytes>> = None;
    let mut paused_until = None;
    loop {
        let mut ran = 0;
        let mut lsn = 0;
        let mut fatal = None;
        // Past the memory budget, replies are sent before more are built.
        let mut send_first = false;
        // The turn to run scripts, kept while the batch's requests are
        // scripts: a pipeline of them takes it once.
        let mut turn = None;
        while ran < MAX_BATCH && out.len() < MAX_BATCH_REPLY && !session.closing {
            // (Checked once replies amount to something: a pipeline of
            // small replies does not read the counters per command.)
            if out.len() >= SEND_FIRST_FROM && memory::over() {
                send_first = true;
                break;
            }
            let next = match held.take() {
                Some(args) => Ok(Some(args)),
                None => decoder.decode(&mut inbuf, session.authenticated()),
            };
            match next {
                Ok(Some(args)) if args.is_empty() => {}
                Ok(Some(args)) if is_http(&args) => {
                    // Redis's `securityWarningCommand`: an HTTP request (a
                    // web page's, sent by a browser to this port) is
                    // never run, nor anything after it.
                    tracing::warn!(
                        peer = ?peer,
                        "possible security attack detected: a client sent POST or Host: \
                         to the Redis protocol port (an HTTP request, e.g. a web page's); \
                         connection closed"
                    );
                    return Ok(());
                }
                Ok(Some(args)) if session.paused_until(&args).is_some() => {
                    paused_until = session.paused_until(&args);
                    held = Some(args);
                    break;
                }
                Ok(Some(args)) => {
                    if !super::script::is_script(&args) {
                        turn = None;
                    } else if turn.is_none() {
                        turn = scripts.wait_turn().await;
                    }
                    // Messages published before the command come before its
                    // reply.
                    outbox.drain(session.proto, &mut out);
                    let (reply, l) = session.handle(args);
                    lsn = lsn.max(l);
                    if let Some(block) = session.take_block() {
                        // The replies before it go out first.
                        if lsn > 0 {
                            if let Err(e) = store.wait_durable(lsn).await {
                                out.clear();
                                Reply::err(format!("storage unavailable: {e}"))
                                    .encode(session.proto, &mut out);
                                wr.write_all(&out).await?;
                                return wr.shutdown().await;
                            }
                        }
                        if !out.is_empty() {
                            wr.write_all(&out).await?;
                        }
                        // A blocked client holds no buffers it does not use.
                        out = BytesMut::new();
                        if inbuf.is_empty() {
                            inbuf = BytesMut::new();
                            large = false;
                        }
                        client.set_blocked(true);
                        let ended = blocked(
                            &mut session,
                            block,
                            (&mut rd, &mut wr),
                            &mut inbuf,
                            &mut stop,
                        )
                        .await;
                        client.set_blocked(false);
                        match ended? {
                            Unblocked::Served((reply, l)) => {
                                lsn = l;
                                if session.replies() {
                                    reply.encode(session.proto, &mut out);
                                }
                                ran += 1;
                            }
                            Unblocked::Left => return Ok(()),
                            Unblocked::Stopping => return wr.shutdown().await,
                        }
                        continue;
                    }
                    // A subscription's confirmation precedes the messages it
                    // lets in; anything else was published while it ran, or
                    // by it (PUBLISH to the connection's own channel), and
                    // Redis writes those before the reply.
                    let confirms = matches!(reply, Reply::Seq(_));
                    if !confirms {
                        outbox.drain(session.proto, &mut out);
                    }
                    // Confirmations are pushed whatever CLIENT REPLY says.
                    if session.replies() || confirms {
                        reply.encode(session.proto, &mut out);
                    }
                    if confirms {
                        outbox.drain(session.proto, &mut out);
                    }
                    ran += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    fatal = Some(Reply::Error(e.reply_text()));
                    break;
                }
            }
        }
        drop(turn);
        if lsn > 0 {
            if let Err(e) = store.wait_durable(lsn).await {
                // The writes are applied but not durable: say so and
                // close, as the client cannot know which of them landed.
                out.clear();
                Reply::err(format!("storage unavailable: {e}")).encode(session.proto, &mut out);
                wr.write_all(&out).await?;
                return wr.shutdown().await;
            }
        }
        // The batch stopped at a limit: more requests may be buffered.
        let more = ran >= MAX_BATCH || out.len() >= MAX_BATCH_REPLY || send_first;
        let close = fatal.is_some() || session.closing;
        if let Some(err) = fatal {
            err.encode(session.proto, &mut out);
        }
        if !close {
            outbox.drain(session.proto, &mut out);
        }
        if outbox.overflowed() {
            // Redis's pub/sub output limit: the subscriber is dropped.
            return Ok(());
        }
        if !out.is_empty() {
            stats
                .stats
                .net_output
                .fetch_add(out.len() as u64, Ordering::Relaxed);
            if write_out(&mut wr, &out, &outbox).await? {
                return Ok(());
            }
            out.clear();
            if out.capacity() > 4 * MAX_BATCH_REPLY {
                out = BytesMut::with_capacity(16 * 1024);
            }
        }
        buffers.note(inbuf.capacity() + out.capacity());
        if close || client.killed() {
            return wr.shutdown().await;
        }
        if let Some(until) = paused_until.take() {
            let ended = tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => true,
                _ = client.until_killed() => true,
                _ = tokio::time::sleep_until(until.into()) => false,
            };
            if ended {
                return wr.shutdown().await;
            }
            continue;
        }
        if more || outbox.pending() {
            continue;
        }
        // Whatever is buffered is an incomplete request: read more.
        if inbuf.len() >= MAX_QUERY_BUFFER {
            return wr.shutdown().await;
        }
        // A large request's buffer is not kept for the connection's life
        // (an emptied buffer would otherwise reclaim its whole allocation).
        if large && inbuf.is_empty() {
            inbuf = BytesMut::with_capacity(16 * 1024);
            large = false;
        }
        // Past the memory budget a large request is refused (Redis's OOM)
        // and the connection closed, as the rest of it cannot be skipped
        // safely.
        let need = decoder.need();
        let mut refused = false;
        if need >= LARGE_QUERY {
            // A declared bulk: its buffer is taken whole, once (as Redis
            // does), so the budget judges what it will hold and doubling
            // never holds up to twice the argument. Once taken, it holds
            // the argument to its last byte: it never grows.
            if need > inbuf.capacity() {
                // (The new buffer is whole; the old one is held while it
                // is copied.)
                refused = !memory::room_for(need);
                if !refused {
                    let mut whole = BytesMut::with_capacity(need);
                    whole.extend_from_slice(&inbuf);
                    inbuf = whole;
                    large = true;
                }
            }
        } else if inbuf.capacity() - inbuf.len() < 4096 {
            // Anything else grows by doubling.
            if inbuf.len() >= LARGE_QUERY {
                refused = !memory::room_for(inbuf.len());
                large = true;
            }
            if !refused {
                inbuf.reserve(16 * 1024);
            }
        }
        if refused {
            out.clear();
            Reply::coded(OOM).encode(session.proto, &mut out);
            wr.write_all(&out).await?;
            return wr.shutdown().await;
        }
        let stopping = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => true,
            // CLIENT KILL from another connection.
            _ = client.until_killed() => true,
            // A message for a subscription: written at once.
            _ = outbox.ready() => false,
            n = rd.read_buf(&mut inbuf) => {
                let n = n?;
                if n == 0 {
                    return Ok(());
                }
                stats.stats.net_input.fetch_add(n as u64, Ordering::Relaxed);
                false
            }
        };
        if stopping {
            return wr.shutdown().await;
        }
    }
}

/// Writes `out`, unless the connection's pub/sub queue overflows while the
/// client is not reading: then `true` (the connection must be closed).
async fn write_out<W>(wr: &mut W, out: &[u8], outbox: &Outbox) -> std::io::Result<bool>
where
    W: AsyncWrite + Unpin,
{
    let write = wr.write_all(out);
    tokio::pin!(write);
    loop {
        tokio::select! {
            r = &mut write => return r.map(|()| false),
            _ = outbox.ready() => {
                if outbox.overflowed() {
                    return Ok(true);
                }
            }
        }
    }
}

/// How a blocked command ended.
enum Unblocked {
    /// Its reply: popped, or the timeout's null.
    Served((Reply, podium_core::keystore::Lsn)),
    /// The client closed the connection (or overran its query buffer).
    Left,
    /// The server is stopping, or the client was killed.
    Stopping,
}

/// Waits for a blocked command to be served: registers the client with the
/// key store's waiters, looks once more (a write may have come between the
/// command's look and the registration), then waits for a wake, the
/// deadline, CLIENT UNBLOCK, the client leaving or being killed, or the
/// server stopping, writing pub/sub messages meanwhile. Bytes the client
/// sends meanwhile are kept, not run. Dropping the registration unblocks
/// the client, whichever way this ends.
async fn blocked<R, W>(
    session: &mut Session,
    block: Block,
    (rd, wr): (&mut R, &mut W),
    inbuf: &mut BytesMut,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<Unblocked>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let outbox = session.outbox();
    let store = session.store().clone();
    let client = session.client.client.clone();
    let keys: Vec<&[u8]> = block.keys.iter().map(|k| &k[..]).collect();
    // Writes signal the names keys are stored under (a database's keys
    // are a namespace of the store's).
    let stored: Vec<std::borrow::Cow<[u8]>> = keys.iter().map(|k| store.stored_key(k)).collect();
    let stored: Vec<&[u8]> = stored.iter().map(|k| &k[..]).collect();
    let waiter = store.waiters().block(&stored, block.deadline.is_some());
    if let Some(run) = session.serve_blocked(&block, &keys) {
        drop(waiter);
        pass_on(&*store, &keys);
        return Ok(Unblocked::Served(run));
    }
    let deadline = async {
        match block.deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    loop {
        // (The write happens out of the select, whose other branches'
        // outputs hold no locks across it.)
        let deliver = tokio::select! {
            ready = waiter.woken() => {
                let ready: Vec<&[u8]> = ready.iter().filter_map(|k| store.user_key(k)).collect();
                if let Some(run) = session.serve_blocked(&block, &ready) {
                    drop(waiter);
                    pass_on(&*store, &ready);
                    return Ok(Unblocked::Served(run));
                }
                false
            }
            _ = &mut deadline => return Ok(Unblocked::Served((Reply::NullArray, 0))),
            error = client.until_unblocked() => {
                let reply = match error {
                    true => Reply::coded("UNBLOCKED client unblocked via CLIENT UNBLOCK"),
                    false => Reply::NullArray,
                };
                return Ok(Unblocked::Served((reply, 0)));
            }
            _ = client.until_killed() => return Ok(Unblocked::Stopping),
            _ = stop.wait_for(|s| *s) => return Ok(Unblocked::Stopping),
            // A RESP3 subscriber gets its messages while it waits, as in
            // Redis.
            _ = outbox.ready() => true,
            n = rd.read_buf(inbuf) => {
                if n? == 0 || inbuf.len() >= MAX_QUERY_BUFFER {
                    return Ok(Unblocked::Left);
                }
                false
            }
        };
        if deliver {
            let mut out = BytesMut::new();
            outbox.drain(session.proto, &mut out);
            if outbox.overflowed() || write_out(wr, &out, &outbox).await? {
                return Ok(Unblocked::Left);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_store::service::Service;
    use tokio::io::duplex;

    /// Sends `input` in pieces of `chunk` bytes, then reads every reply
    /// byte until the server closes or goes quiet.
    async fn session_bytes(input: &[u8], chunk: usize) -> Vec<u8> {
        let svc = Arc::new(Service::in_memory());
        let shared = Arc::new(Shared::new(Vec::new(), 7379));
        let (client, server) = duplex(1 << 16);
        let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(serve_conn(server, None, None, svc, shared, stop_rx));
        let (mut rd, mut wr) = tokio::io::split(client);
        let input = input.to_vec();
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
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(std::time::Duration::from_millis(300), rd.read(&mut buf))
                .await
            {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            }
        }
        drop(writer.await);
        task.abort();
        got
    }

    #[tokio::test]
    async fn pipelined_commands_answer_in_order_whatever_the_chunking() {
        let input = b"*3\r\n$4\r\nZADD\r\n$2\r\nlb\r\n$1\r\n1\r\n\
            ZADD lb 2.5 b 1 a\r\nZSCORE lb b\r\nZRANGE lb 0 -1 WITHSCORES\r\n\
            FOO bar\r\nZSCORE lb nope\r\nPING\r\n";
        let want = "-ERR wrong number of arguments for 'zadd' command\r\n:2\r\n$3\r\n2.5\r\n\
            *4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n\
            -ERR unknown command 'FOO', with args beginning with: 'bar' \r\n$-1\r\n+PONG\r\n";
        for chunk in [1, 3, 7, 1000] {
            let got = session_bytes(input, chunk).await;
            assert_eq!(String::from_utf8_lossy(&got), want, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn resp3_after_hello() {
        let got = session_bytes(
            b"HELLO 3\r\nZADD z 1.5 a\r\nZSCORE z a\r\nZSCORE z b\r\nZRANGE z 0 -1 WITHSCORES\r\nHGETALL h\r\n",
            64,
        )
        .await;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n"), "{text}");
        assert!(
            text.ends_with(":1\r\n,1.5\r\n_\r\n*1\r\n*2\r\n$1\r\na\r\n,1.5\r\n%0\r\n"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn protocol_errors_answer_then_close() {
        let got = session_bytes(b"PING\r\n*1\r\n$1099511627776\r\nPING\r\n", 1000).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
        );
        let got = session_bytes(b"ECHO \"abc\r\n", 1000).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            "-ERR Protocol error: unbalanced quotes in request\r\n"
        );
        let mut big = vec![b'x'; 2 << 20];
        big.extend_from_slice(b"\r\n");
        let got = session_bytes(&big, 1 << 16).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            "-ERR Protocol error: too big inline request\r\n"
        );
    }

    #[tokio::test]
    async fn negative_zero_reads_back_as_zero_but_incr_replies_keep_it() {
        let got = session_bytes(
            b"ZADD n -0 a\r\nZSCORE n a\r\nZINCRBY n -0 b\r\nZSCAN n 0\r\n",
            1000,
        )
        .await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            ":1\r\n$1\r\n0\r\n$2\r\n-0\r\n*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n0\r\n$1\r\nb\r\n$1\r\n0\r\n"
        );
    }

    #[tokio::test]
    async fn quit_and_multi() {
        let got = session_bytes(
            b"MULTI\r\nZADD z 1 a\r\nZINCRBY z 2 a\r\nEXEC\r\nQUIT\r\nPING\r\n",
            5,
        )
        .await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n$1\r\n3\r\n+OK\r\n"
        );
    }

    /// Reads from `rd` until `want` bytes came (or 10 s passed).
    async fn read_n<R: AsyncRead + Unpin>(rd: &mut R, want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while got.len() < want {
            match tokio::time::timeout_at(deadline, rd.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        got
    }

    async fn blocked_is(svc: &Service, n: usize) {
        for _ in 0..2000 {
            if svc.waiters().blocked() == n {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("{} blocked, not {n}", svc.waiters().blocked());
    }

    #[tokio::test]
    async fn a_blocked_client_waits_for_another_clients_write_or_its_timeout() {
        let svc = Arc::new(Service::in_memory());
        let shared = Arc::new(Shared::new(Vec::new(), 7379));
        let (client, server) = duplex(1 << 16);
        let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(serve_conn(
            server,
            None,
            None,
            svc.clone(),
            shared.clone(),
            stop_rx,
        ));
        let (mut rd, mut wr) = tokio::io::split(client);
        // A timeout, then a wait for ever with a command queued behind it.
        wr.write_all(b"PING\r\nBZPOPMIN k 0.02\r\nBZPOPMAX k 0\r\nPING\r\n")
            .await
            .unwrap();
        assert_eq!(read_n(&mut rd, 12).await, b"+PONG\r\n*-1\r\n");
        blocked_is(&svc, 1).await;
        // Another client's write wakes it; then the queued PING runs.
        let mut other = Session::new(svc.clone(), shared.clone());
        let zadd = ["ZADD", "k", "1", "a"].map(bytes::Bytes::from).to_vec();
        assert_eq!(other.handle(zadd).0, Reply::Int(1));
        let want = b"*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n+PONG\r\n";
        assert_eq!(read_n(&mut rd, want.len()).await, want);
        blocked_is(&svc, 0).await;
        // A client that leaves while blocked is blocked no more.
        wr.write_all(b"BZPOPMIN j 0\r\n").await.unwrap();
        blocked_is(&svc, 1).await;
        drop((rd, wr));
        blocked_is(&svc, 0).await;
    }

    /// A paused write waits for the pause to end and then runs; reads
    /// answer meanwhile.
    #[tokio::test]
    async fn client_pause_holds_writes_back_until_it_ends() {
        let started = std::time::Instant::now();
        let got = session_bytes(
            b"CLIENT PAUSE 150 WRITE\r\nPING\r\nZADD z 1 a\r\nZCARD z\r\n",
            1000,
        )
        .await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            "+OK\r\n+PONG\r\n:1\r\n:1\r\n"
        );
        assert!(started.elapsed() >= std::time::Duration::from_millis(150));
    }

    #[tokio::test]
    async fn deep_pipelines_are_flushed_in_batches() {
        let mut input = Vec::new();
        for i in 0..5000 {
            input.extend_from_slice(format!("ZADD lb {i} m{i}\r\n").as_bytes());
        }
        input.extend_from_slice(b"ZCARD lb\r\n");
        let got = session_bytes(&input, 1 << 16).await;
        let text = String::from_utf8_lossy(&got);
        assert_eq!(text.matches(":1\r\n").count(), 5000);
        assert!(text.ends_with(":5000\r\n"));
    }
}
