//! The MessagePack-RPC frontend (docs/spec.md §4), port 7071: request
//! `[0, msgid, method, params]`, response `[1, msgid, error, result]`,
//! notification `[2, method, params]`. Method names are docs/spec.md §2's
//! operation names; results are the HTTP API's, as maps with the same
//! field names. The wire format is documented in `docs/rpc.md`.
//!
//! Layers, each testable alone: [`codec`] splits bytes into messages under
//! hard limits and checks their envelopes; [`method`] turns a method name
//! and params into a typed [`method::Call`] (with HTTP's error codes), and
//! [`fast`] reads the common bulk-write shape into the same call without
//! the general decoding; [`exec`] runs a call against the [`Backend`]
//! (embedded engine or Redis) and encodes its result;
//! [`conn`] drives one connection (pipelining, out-of-order answers,
//! streamed results, live event subscriptions, per-connection bounds) and
//! [`serve`] accepts them; [`events`] holds a connection's subscriptions
//! and writes events as notifications.

pub mod codec;
pub mod conn;
pub mod events;
pub mod exec;
pub mod fast;
pub mod method;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::net::{TcpListener, TcpStream};

use crate::limits::{ConnLimits, TOO_MANY_CLIENTS};
use crate::listen::{accept_until_stopped, Conn, Drain, REFUSAL_TIME};
use crate::rate::RateLimits;
use crate::settings::ApiKey;
use podium_core::backend::Backend;
use podium_core::error::{ApiError, Code};

/// Calls of each method ([`method::METHODS`] rows), for `/metrics`.
static METHOD_STATS: std::sync::LazyLock<crate::callstats::CallStats> =
    std::sync::LazyLock::new(|| crate::callstats::CallStats::new(method::METHODS.len()));

/// A call of `m` answered after `took`, counted by method (and so by its
/// operation: [`add_operations`]).
fn record(m: method::Method, ok: bool, took: Duration) {
    if let Some(row) = method::METHODS.iter().position(|r| r.1 == m) {
        METHOD_STATS.record(row, ok, took);
    }
}

/// Each method's sums, handed over as its operation's.
fn add_operations(add: &mut dyn FnMut(podium_core::op::Op, &[u64])) {
    METHOD_STATS.each_row(&mut |row, sums| add(method::METHODS[row].2, sums));
}

/// This protocol's rows of `/metrics`, for `podium serve` to register.
pub const STATS: crate::callstats::ProtocolRows = crate::callstats::ProtocolRows {
    protocol: crate::callstats::Protocol::Rpc,
    add_operations,
    render: render_stats,
};

/// The per-method families of `/metrics`.
fn render_stats(out: &mut String) {
    METHOD_STATS.render(
        out,
        (
            "podium_rpc_requests_total",
            "MessagePack-RPC calls answered, by method; status error: answered with an error.",
        ),
        (
            "podium_rpc_request_seconds",
            "Time from a MessagePack-RPC call's arrival to its answer, by method (a streamed result: to its first part).",
        ),
        |row| format!("method=\"{}\"", method::METHODS[row].0),
    );
}

/// What the listener needs from the settings.
#[derive(Clone, Default)]
pub struct RpcConfig {
    /// With keys, a connection must call `auth(key)` before other methods,
    /// and each method needs the scope its HTTP route needs.
    pub api_keys: Vec<ApiKey>,
    /// The server's rate limits; each connection is limited by its peer's
    /// address.
    pub rate: Arc<RateLimits>,
}

/// At shutdown, how long open connections get to finish their answers.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// Accepts connections on `listener` until `stop` turns true, then lets
/// the open connections finish the requests they have read and close.
pub async fn serve(
    listener: TcpListener,
    be: Arc<dyn Backend>,
    cfg: RpcConfig,
    limits: ConnLimits,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let shared = Arc::new(exec::Shared {
        api_keys: cfg.api_keys,
        rate: cfg.rate,
    });
    let serve_conn = move |sock: Conn, _busy, stop| {
        let peer = sock.get_ref().peer_addr().ok().map(|a| a.ip());
        conn::serve_conn(sock, peer, be.clone(), shared.clone(), stop)
    };
    // Past the grace, a client that stopped reading loses its
    // acknowledgements; its writes are applied and the log is flushed at
    // exit anyway.
    let drain = Drain::Within(STOP_GRACE);
    accept_until_stopped(
        listener,
        "MessagePack-RPC",
        stop,
        drain,
        limits,
        refuse,
        serve_conn,
    )
    .await;
    Ok(())
}

/// The answer to a connection past `maxclients`: podium's error to its
/// first request (when it arrives soon and its id can be read), then the
/// close.
async fn refuse(mut sock: TcpStream) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 4096];
    let mut n = 0;
    let first = tokio::time::timeout(REFUSAL_TIME / 2, async {
        while n < buf.len() {
            match sock.read(&mut buf[n..]).await {
                Ok(0) | Err(_) => return None,
                Ok(k) => n += k,
            }
            if let Some(id) = codec::peek_msgid(&buf[..n]) {
                return Some(id);
            }
        }
        None
    })
    .await;
    if let Ok(Some(id)) = first {
        let e = ApiError::new(Code::TooManyClients, TOO_MANY_CLIENTS);
        sock.write_all(&codec::error_response(id, &e)).await?;
    }
    sock.shutdown().await
}
