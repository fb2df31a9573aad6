//! Time limits on a connection's reads, as a wrapper around its socket so
//! every protocol gets them the same way: an idle limit (no byte in either
//! direction while the connection waits for a request: Redis's `timeout`,
//! HTTP's keep-alive limit) and, for HTTP, a head limit (a request's head
//! must be complete within it of its first byte: a client trickling a
//! head byte by byte is closed).
//!
//! Only reads that would wait are timed, and only while no request of the
//! connection is in flight ([`Busy`]): a slow request, or a client waiting
//! for its answer, is never cut. A timed-out read fails with
//! [`io::ErrorKind::TimedOut`], which ends the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The limits of one connection; `None`: no limit.
#[derive(Debug, Clone, Default)]
pub struct Timeouts {
    pub idle: Option<Duration>,
    pub head: Option<Duration>,
    /// An idle limit in seconds that may change while connections are
    /// open (0: none; Redis's `timeout` under CONFIG SET); when set, it
    /// is the idle limit instead of `idle`.
    pub idle_live: Option<Arc<AtomicU64>>,
}

impl Timeouts {
    /// From seconds, 0 meaning none.
    pub fn from_secs(idle: u64, head: u64) -> Timeouts {
        let d = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        Timeouts {
            idle: d(idle),
            head: d(head),
            idle_live: None,
        }
    }

    /// A live idle limit (see [`Timeouts::idle_live`]) and no head limit.
    pub fn live_idle(secs: Arc<AtomicU64>) -> Timeouts {
        Timeouts {
            idle_live: Some(secs),
            ..Timeouts::default()
        }
    }

    pub fn any(&self) -> bool {
        self.idle.is_some() || self.head.is_some() || self.idle_live.is_some()
    }

    /// The idle limit in force now.
    fn idle_now(&self) -> Option<Duration> {
        match &self.idle_live {
            Some(secs) => match secs.load(Relaxed) {
                0 => None,
                s => Some(Duration::from_secs(s)),
            },
            None => self.idle,
        }
    }
}

/// The number of a connection's requests in flight; the frontend holds a
/// [`BusyGuard`] while it answers one. While it is above zero, reads are
/// not timed.
#[derive(Debug, Clone, Default)]
pub struct Busy(Arc<AtomicUsize>);

impl Busy {
    pub fn enter(&self) -> BusyGuard {
        self.0.fetch_add(1, Relaxed);
        BusyGuard(self.0.clone())
    }

    fn is_busy(&self) -> bool {
        self.0.load(Relaxed) > 0
    }
}

/// Marks a request in flight until dropped.
pub struct BusyGuard(Arc<AtomicUsize>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// A socket whose waiting reads are timed; see the module doc.
pub struct Deadlines<S> {
    io: S,
    limits: Timeouts,
    busy: Busy,
    /// The last byte read or written.
    last_io: Instant,
    /// When the first byte of a request head arrived (no request in flight
    /// then), until the request is taken up or an answer is written.
    head_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<S> Deadlines<S> {
    pub fn new(io: S, limits: Timeouts, busy: Busy) -> Self {
        Deadlines {
            io,
            limits,
            busy,
            last_io: Instant::now(),
            head_since: None,
            timer: None,
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// When a read waiting now times out, and which limit that is.
    fn deadline(&self) -> Option<(Instant, &'static str)> {
        if self.busy.is_busy() {
            return None;
        }
        match (self.head_since, self.limits.head) {
            (Some(since), Some(head)) => Some((since + head, "a request head")),
            _ => self
                .limits
                .idle_now()
                .map(|idle| (self.last_io + idle, "a request")),
        }
    }

    /// Arms the timer for the current deadline: `Ready` with the error
    /// when it has passed.
    ///
    /// The deadline moves on with every request; moving the timer each
    /// time would touch the runtime's timer wheel (a lock) on every
    /// request. So a timer armed for an earlier moment is left alone: when
    /// it fires, it is moved to the deadline as it is then. Only a
    /// deadline that comes earlier than the armed one (a head limit
    /// starting) moves it at once.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some((at, what)) = self.deadline() else {
            return Poll::Pending;
        };
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if timer.deadline() > at {
            timer.as_mut().reset(at);
        }
        loop {
            match timer.as_mut().poll(cx) {
                Poll::Ready(()) if Instant::now() < at => timer.as_mut().reset(at),
                Poll::Ready(()) => {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no {what} within the time limit"),
                    ))
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Deadlines<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before && this.limits.any() {
                    let now = Instant::now();
                    this.last_io = now;
                    if this.busy.is_busy() {
                        this.head_since = None;
                    } else if this.head_since.is_none() {
                        this.head_since = Some(now);
                    }
                }
                Poll::Ready(r)
            }
            Poll::Pending => match this.poll_deadline(cx) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadlines<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            if *n > 0 && this.limits.any() {
                this.last_io = Instant::now();
                // An answer went out: the next byte read starts a new head.
                this.head_since = None;
            }
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &r {
            if *n > 0 && this.limits.any() {
                this.last_io = Instant::now();
                this.head_since = None;
            }
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, AsyncReadExt, AsyncWriteExt};

    /// Time is paused: the runtime jumps to the next timer when every task
    /// waits, so these run at once and assert no wall-clock figure.
    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_times_out_a_busy_one_does_not() {
        let (mut client, server) = duplex(64);
        let busy = Busy::default();
        let limits = Timeouts::from_secs(10, 0);
        let mut conn = Deadlines::new(server, limits, busy.clone());
        let mut buf = [0u8; 8];

        client.write_all(b"hi").await.unwrap();
        assert_eq!(conn.read(&mut buf).await.unwrap(), 2);
        // A request in flight for longer than the limit: not timed.
        let guard = busy.enter();
        let waiting = tokio::time::timeout(Duration::from_secs(60), conn.read(&mut buf)).await;
        assert!(waiting.is_err(), "the read waited for the client");
        drop(guard);
        conn.write_all(b"answer").await.unwrap();
        // Idle now: the read fails after the limit.
        let start = Instant::now();
        let e = conn.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    /// Reads until a read fails; the failure's kind.
    async fn read_until_error<S: AsyncRead + Unpin>(conn: &mut Deadlines<S>) -> io::ErrorKind {
        let mut buf = [0u8; 8];
        loop {
            if let Err(e) = conn.read(&mut buf).await {
                return e.kind();
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_head_times_out_from_its_first_byte() {
        let (mut client, server) = duplex(64);
        let limits = Timeouts::from_secs(60, 5);
        let mut conn = Deadlines::new(server, limits, Busy::default());
        let start = Instant::now();
        let trickle = tokio::spawn(async move {
            for _ in 0..100 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if client.write_all(b"x").await.is_err() {
                    break;
                }
            }
        });
        assert_eq!(read_until_error(&mut conn).await, io::ErrorKind::TimedOut);
        // First byte at 1 s, head limit 5 s.
        assert_eq!(start.elapsed(), Duration::from_secs(6));
        trickle.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn each_exchange_moves_the_idle_deadline() {
        let (mut client, server) = duplex(64);
        let mut conn = Deadlines::new(server, Timeouts::from_secs(10, 0), Busy::default());
        let start = Instant::now();
        let talker = tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_secs(6)).await;
                client.write_all(b"x").await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        assert_eq!(read_until_error(&mut conn).await, io::ErrorKind::TimedOut);
        // The last byte came at 18 s; the limit is 10 s of silence.
        assert_eq!(start.elapsed(), Duration::from_secs(28));
        talker.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn no_limits_never_time_out() {
        let (_client, server) = duplex(64);
        let mut conn = Deadlines::new(server, Timeouts::default(), Busy::default());
        let mut buf = [0u8; 8];
        let r = tokio::time::timeout(Duration::from_secs(3600), conn.read(&mut buf)).await;
        assert!(r.is_err());
    }
}
