//! The Redis protocol frontend (docs/spec.md §4): RESP2, and RESP3 after `HELLO 3`,
//! on port 7379. A sorted-set key is a board; hash keys and key expiry live
//! in the same store, reached through the storage interface's Redis data
//! model ([`KeyStore`], which only the embedded engine offers).
//!
//! Layers, each testable alone: [`codec`] splits bytes into requests
//! (Redis's limits and protocol errors), [`command`] turns a request into
//! a typed [`command::Cmd`] (Redis's argument errors), [`exec`] runs it
//! against the [`KeyStore`] and returns a [`reply::Reply`], which [`reply`]
//! encodes per protocol version; [`conn`] drives one connection
//! (pipelining, one durable commit per batch) and [`serve`] accepts them.
//! Beside them, [`pubsub`] holds the listener's subscriptions and
//! [`notify`] its keyspace notifications, which the commands and the
//! store's expiries publish there.

pub mod clients;
pub mod codec;
pub mod command;
pub mod command_strings;
pub mod conn;
pub mod events;
pub mod exec;
pub mod notify;
pub mod num;
pub mod pubsub;
pub mod reply;
#[cfg(test)]
mod scope_tests;
pub mod script;
pub mod stats;
mod zparse;

use std::sync::Arc;

use anyhow::Result;
use tokio::net::{TcpListener, TcpStream};

use crate::limits::ConnLimits;
use crate::listen::{accept_until_stopped, Conn, Drain};
use crate::rate::RateLimits;
use crate::settings::ApiKey;
use podium_core::keystore::KeyStore;

/// Commands run, by [`command::COMMANDS`] row, for `/metrics`.
static COMMAND_STATS: std::sync::LazyLock<crate::callstats::CallStats> =
    std::sync::LazyLock::new(|| crate::callstats::CallStats::new(command::COMMANDS.len()));

/// The command at row `index` ran for `took`, counted by command (and so
/// by its operation: [`add_operations`]).
fn record(index: usize, ok: bool, took: std::time::Duration) {
    COMMAND_STATS.record(index, ok, took);
}

/// Each command's sums, handed over as its operation's (a command whose
/// operation depends on its keys — DEL and the EXPIRE family — as the one
/// on keys that name no board).
fn add_operations(add: &mut dyn FnMut(podium_core::op::Op, &[u64])) {
    COMMAND_STATS.each_row(&mut |row, sums| {
        let op = match command::COMMANDS[row].access {
            command::Access::Op(op) => op,
            command::Access::ByKey { other, .. } => other,
        };
        add(op, sums);
    });
}

/// This protocol's rows of `/metrics`, for `podium serve` to register.
pub const STATS: crate::callstats::ProtocolRows = crate::callstats::ProtocolRows {
    protocol: crate::callstats::Protocol::Resp,
    add_operations,
    render: render_stats,
};

/// The per-command families of `/metrics`.
fn render_stats(out: &mut String) {
    COMMAND_STATS.render(
        out,
        (
            "podium_resp_commands_total",
            "Redis-protocol commands run, by command (lower case); status error: answered with an error reply.",
        ),
        (
            "podium_resp_command_seconds",
            "Time a Redis-protocol command ran, by command.",
        ),
        |row| format!("command=\"{}\"", command::COMMANDS[row].name),
    );
}

/// What the listener needs from the settings.
#[derive(Clone, Default)]
pub struct RespConfig {
    /// With keys, a connection must AUTH (with a key as the password)
    /// before other commands; writes need a `write` or `admin` key.
    pub api_keys: Vec<ApiKey>,
    /// The bounds of a MULTI queue.
    pub multi: exec::MultiLimits,
    /// The server's rate limits; each connection is limited by its peer's
    /// address.
    pub rate: Arc<RateLimits>,
    /// The settings CONFIG GET shows and CONFIG SET changes.
    pub live: exec::Live,
    /// How long a script runs before other clients are answered `BUSY`
    /// (`None`: the default).
    pub script_time_limit: Option<std::time::Duration>,
    /// `notify-keyspace-events` at start, as [`notify::parse_flags`]
    /// reads it (0: none, Redis's default).
    pub notify_keyspace_events: u32,
}

/// Accepts connections on `listener` until `stop` turns true, then waits
/// for the open connections to finish their current batch and close.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn KeyStore>,
    cfg: RespConfig,
    limits: ConnLimits,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let port = listener.local_addr()?.port();
    let mut shared = exec::Shared::new(cfg.api_keys, port);
    shared.multi = cfg.multi;
    shared.rate = cfg.rate;
    shared.config = cfg.live;
    if let Some(limit) = cfg.script_time_limit {
        shared.scripts = Arc::new(script::Scripts::new(limit));
    }
    shared.notify.set_flags(cfg.notify_keyspace_events);
    let shared = Arc::new(shared);
    // At shutdown a running script is stopped as at the hard limit, so
    // that the connections drain rather than wait for it.
    let closer = {
        let scripts = shared.scripts.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            if stop.wait_for(|s| *s).await.is_ok() {
                scripts.running.shut_down();
            }
        })
    };
    // Keys expire in the store, whichever request finds them: it tells
    // the notifier, which publishes `expired` when that is on.
    store.set_expiry_sink(Some(shared.notify.clone()));
    // INFO's instantaneous_ops_per_sec averages samples a tenth of a
    // second apart, as Redis's.
    let sampler = {
        let shared = shared.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
            loop {
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => return,
                    _ = tick.tick() => shared.stats.sample(),
                }
            }
        })
    };
    let serve_conn = move |sock: Conn, _busy, stop| {
        let peer = sock.get_ref().peer_addr().ok();
        let local = sock.get_ref().local_addr().ok();
        conn::serve_conn(sock, peer, local, store.clone(), shared.clone(), stop)
    };
    accept_until_stopped(
        listener,
        "Redis",
        stop,
        Drain::Wait,
        limits,
        refuse,
        serve_conn,
    )
    .await;
    sampler.abort();
    closer.abort();
    Ok(())
}

/// Redis's answer to a connection past `maxclients`, then the close.
async fn refuse(mut sock: TcpStream) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    sock.write_all(b"-ERR max number of clients reached\r\n")
        .await?;
    sock.shutdown().await
}
