//! The accept loop of every frontend: the connection limit (a full
//! protocol's refusal, written by the frontend's `refuse`), the time limits
//! around each socket, a task per connection, paced retries while
//! accepting fails, and the graceful stop — no new connections once `stop`
//! turns true, then the open ones finish.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::limits::{Busy, ConnLimits, Deadlines};

/// Refusals written at once at most; past it a refused socket is just
/// closed, so a flood cannot hold descriptors through its refusals.
const MAX_REFUSING: usize = 64;
/// The longest a refusal may take (reading the request it answers,
/// writing the answer).
pub(crate) const REFUSAL_TIME: Duration = Duration::from_secs(2);

/// A connection as a frontend serves it.
pub(crate) type Conn = Deadlines<TcpStream>;

/// How the open connections end once the listener has stopped accepting.
pub(crate) enum Drain {
    /// Wait for each to finish and close by itself.
    Wait,
    /// Wait at most this long, then close the rest, with a warning.
    Within(Duration),
}

/// Accepts connections on `listener` until `stop` turns true, running
/// `serve_conn(socket, busy, stop)` on its own task for each that gets a
/// place under `limits` (the socket timed by `limits`, `busy` marking its
/// requests in flight) and `refuse(socket)` for each that does not; then
/// drops the listener and lets the open connections end as `drain` says.
/// `what` names the protocol in the log lines.
pub(crate) async fn accept_until_stopped<F, Fut, R, RFut>(
    listener: TcpListener,
    what: &'static str,
    stop: watch::Receiver<bool>,
    drain: Drain,
    limits: ConnLimits,
    refuse: R,
    mut serve_conn: F,
) where
    F: FnMut(Conn, Busy, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
    R: Fn(TcpStream) -> RFut,
    RFut: Future<Output = std::io::Result<()>> + Send + 'static,
{
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut conns = tokio::task::JoinSet::new();
    let mut stop_accept = stop.clone();
    let mut backoff = AcceptBackoff::new(what);
    loop {
        while conns.try_join_next().is_some() {}
        let accepted = tokio::select! {
            _ = stop_accept.wait_for(|s| *s) => break,
            a = listener.accept() => a,
        };
        let (sock, peer) = match accepted {
            Ok(x) => {
                backoff.accepted();
                x
            }
            Err(e) => {
                backoff.failed(&e).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let Some(place) = limits.gate.admit(peer.ip()) else {
            if refusing.fetch_add(1, Relaxed) < MAX_REFUSING {
                let refusal = tokio::time::timeout(REFUSAL_TIME, refuse(sock));
                let refusing = refusing.clone();
                tokio::spawn(async move {
                    let _ = refusal.await;
                    refusing.fetch_sub(1, Relaxed);
                });
            } else {
                refusing.fetch_sub(1, Relaxed);
            }
            tracing::debug!(%peer, "{what} connection refused: maxclients reached");
            continue;
        };
        let busy = Busy::default();
        let sock = Deadlines::new(sock, limits.timeouts.clone(), busy.clone());
        let conn = serve_conn(sock, busy, stop.clone());
        conns.spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "{what} connection ended: {e}");
            }
            drop(place);
        });
    }
    drop(listener);
    let all = async { while conns.join_next().await.is_some() {} };
    match drain {
        Drain::Wait => all.await,
        Drain::Within(grace) => {
            if tokio::time::timeout(grace, all).await.is_err() {
                tracing::warn!("{what} connections still open at shutdown; closing them");
                conns.shutdown().await;
            }
        }
    }
}

/// Pacing of an accept loop after errors. While descriptors are exhausted
/// (EMFILE, ENFILE) `accept` fails at once, again and again, until one is
/// freed: without a pause the loop would spin a core, and a line per
/// attempt would flood the log. The pause doubles from 50 ms to 1 s; one
/// warning when accepting starts failing, one line when it works again.
struct AcceptBackoff {
    what: &'static str,
    failures: u32,
}

impl AcceptBackoff {
    /// `what`: the protocol, for the log lines.
    fn new(what: &'static str) -> Self {
        AcceptBackoff { what, failures: 0 }
    }

    async fn failed(&mut self, e: &std::io::Error) {
        if self.failures == 0 {
            tracing::warn!("accepting a {} connection failed, retrying: {e}", self.what);
        }
        let pause = Duration::from_millis(50) * (1 << self.failures.min(5));
        self.failures = self.failures.saturating_add(1);
        tokio::time::sleep(pause.min(Duration::from_secs(1))).await;
    }

    fn accepted(&mut self) {
        if self.failures > 0 {
            tracing::info!(
                failed_attempts = self.failures,
                "accepting {} connections again",
                self.what
            );
            self.failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{ClientGate, Timeouts};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn limits(max: usize) -> ConnLimits {
        ConnLimits {
            gate: ClientGate::new("test", max),
            timeouts: Timeouts::default(),
        }
    }

    async fn refuse(mut sock: TcpStream) -> std::io::Result<()> {
        sock.write_all(b"full").await
    }

    /// Each connection gets its own task and the stop signal; at stop the
    /// listener closes, and `Wait` lets an open connection finish.
    #[tokio::test]
    async fn serves_each_connection_then_drains_at_stop() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = watch::channel(false);
        let server = tokio::spawn(accept_until_stopped(
            listener,
            "test",
            stop_rx,
            Drain::Wait,
            limits(10),
            refuse,
            |mut sock, _busy, mut stop| async move {
                assert!(sock.get_ref().nodelay()?);
                sock.write_all(b"hi").await?;
                let _ = stop.wait_for(|s| *s).await;
                sock.write_all(b"bye").await
            },
        ));
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 5];
        a.read_exact(&mut buf[..2]).await.unwrap();
        b.read_exact(&mut buf[..2]).await.unwrap();
        stop_tx.send(true).unwrap();
        server.await.unwrap();
        a.read_exact(&mut buf[2..]).await.unwrap();
        assert_eq!(&buf, b"hibye");
        assert!(TcpStream::connect(addr).await.is_err());
    }

    /// `Within` closes what is still open after the grace period.
    #[tokio::test]
    async fn within_closes_connections_left_open() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = watch::channel(false);
        let server = tokio::spawn(accept_until_stopped(
            listener,
            "test",
            stop_rx,
            Drain::Within(Duration::from_millis(50)),
            limits(10),
            refuse,
            |mut sock, _busy, _stop| async move {
                sock.write_all(b"hi").await?;
                std::future::pending::<()>().await;
                Ok(())
            },
        ));
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 2];
        a.read_exact(&mut buf).await.unwrap();
        stop_tx.send(true).unwrap();
        server.await.unwrap();
        assert_eq!(a.read(&mut buf).await.unwrap(), 0, "closed");
    }

    /// Past the limit a connection gets the protocol's refusal and is
    /// closed; a place freed is taken again.
    #[tokio::test]
    async fn past_the_limit_connections_are_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (_stop_tx, stop_rx) = watch::channel(false);
        let lim = limits(1);
        let gate = lim.gate.clone();
        tokio::spawn(accept_until_stopped(
            listener,
            "test",
            stop_rx,
            Drain::Wait,
            lim,
            refuse,
            |mut sock, _busy, _stop| async move {
                sock.write_all(b"in").await?;
                let mut b = [0u8; 1];
                let _ = sock.read(&mut b).await;
                Ok(())
            },
        ));
        let mut held = Vec::new();
        // One place plus the loopback spares.
        for _ in 0..1 + crate::limits::clients::LOOPBACK_SPARE {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let mut buf = [0u8; 2];
            c.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"in");
            held.push(c);
        }
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"full");
        drop(held.pop());
        while gate.open() > crate::limits::clients::LOOPBACK_SPARE {
            tokio::task::yield_now().await;
        }
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 2];
        c.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"in");
    }
}
