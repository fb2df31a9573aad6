//! The HTTP listener: connections accepted by the shared accept loop (the
//! connection limit and the idle and head time limits of every protocol)
//! and served by hyper — HTTP/1.1 with keep-alive, or HTTP/2 — through
//! [`Wire`], with each request marked in flight so a slow answer is never
//! timed out as an idle connection, and with the peer's address for the
//! handlers (`ConnectInfo`).

use anyhow::Result;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use super::starting::Routing;
use super::wire::Wire;
use crate::limits::{Busy, ConnLimits, TOO_MANY_CLIENTS};
use crate::listen::{accept_until_stopped, Conn, Drain, REFUSAL_TIME};
use podium_core::error::{ApiError, Code};

/// Serves `app` on `listener` (the starting answers until it opens) until
/// `stop` turns true; then open
/// connections finish their requests (idle ones close at once).
/// `by_address`: requests carry their client address (`ConnectInfo`) for
/// the per-address rate limit and the access log.
pub async fn serve(
    listener: TcpListener,
    app: Routing,
    limits: ConnLimits,
    by_address: bool,
    stop: watch::Receiver<bool>,
) -> Result<()> {
    let serve_conn = move |io: Conn, busy: Busy, mut stop: watch::Receiver<bool>| {
        let app = app.clone();
        async move {
            // (Only the per-address rate limit and the access log read it:
            // without them, no request pays for the extension.)
            let peer = match by_address {
                true => Some(io.get_ref().peer_addr()?),
                false => None,
            };
            let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                let in_flight = busy.enter();
                let mut req = req.map(axum::body::Body::new);
                if let Some(peer) = peer {
                    req.extensions_mut().insert(ConnectInfo(super::Peer(peer)));
                }
                let answer = match app.current() {
                    Some(router) => Ok(router.oneshot(req)),
                    None => Err(app.starting_answer(&req)),
                };
                async move {
                    let r = match answer {
                        Ok(routed) => routed.await,
                        Err(starting) => Ok(starting),
                    };
                    drop(in_flight);
                    r
                }
            });
            let builder = Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(Wire::new(io)), service);
            tokio::pin!(conn);
            let ended = tokio::select! {
                r = conn.as_mut() => Some(r),
                _ = stop.wait_for(|s| *s) => None,
            };
            let r = match ended {
                Some(r) => r,
                None => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            r.map_err(std::io::Error::other)
        }
    };
    accept_until_stopped(
        listener,
        "HTTP",
        stop,
        Drain::Wait,
        limits,
        refuse,
        serve_conn,
    )
    .await;
    Ok(())
}

/// A full server's answer: 503 with podium's error, once the request head
/// is in (so the client reads an answer, not a reset).
async fn refuse(mut sock: TcpStream) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    // Read the head, if it comes soon; the answer goes out either way.
    let _ = tokio::time::timeout(REFUSAL_TIME / 2, async {
        use tokio::io::AsyncReadExt;
        while memchr::memmem::find(&head, b"\r\n\r\n").is_none() && head.len() < 16 * 1024 {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let body = super::error::error_json(&ApiError::new(Code::TooManyClients, TOO_MANY_CLIENTS))
        .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(answer.as_bytes()).await?;
    sock.shutdown().await
}
