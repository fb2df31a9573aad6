//! The accept loop of the frontends that own their sockets (MessagePack-RPC
//! and the Redis protocol; HTTP's is axum's): a task per connection, paced
//! retries while accepting fails, and the graceful stop — no new
//! connections once `stop` turns true, then the open ones finish.

use std::future::Future;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How the open connections end once the listener has stopped accepting.
pub(crate) enum Drain {
    /// Wait for each to finish and close by itself.
    Wait,
    /// Wait at most this long, then close the rest, with a warning.
    Within(Duration),
}

/// Accepts connections on `listener` until `stop` turns true, running
/// `serve_conn(socket, stop)` on its own task for each; then drops the
/// listener and lets the open connections end as `drain` says. `what`
/// names the protocol in the log lines.
pub(crate) async fn accept_until_stopped<F, Fut>(
    listener: TcpListener,
    what: &'static str,
    stop: watch::Receiver<bool>,
    drain: Drain,
    mut serve_conn: F,
) where
    F: FnMut(TcpStream, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = std::io::Result<()>> + Send + 'static,
{
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
        let conn = serve_conn(sock, stop.clone());
        conns.spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "{what} connection ended: {e}");
            }
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
            |mut sock, mut stop| async move {
                assert!(sock.nodelay()?);
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
            |mut sock, _stop| async move {
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
}
