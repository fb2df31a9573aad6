//! `podium serve`: opens and recovers the data directory, starts the
//! protocol listeners and the background work (scheduled resets,
//! snapshots), and shuts down gracefully on SIGINT/SIGTERM — stop
//! accepting, finish in-flight requests, then flush and fsync the log.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::serve::ListenerExt;
use podium_engine::Store;
use tokio::net::TcpListener;

use crate::schedule::{Clock, SystemClock};
use crate::service::Service;
use crate::settings::Settings;

/// Runs the server until a shutdown signal.
pub fn run(settings: Settings) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("podium-worker")
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(serve(settings, Arc::new(SystemClock)))
}

pub async fn serve(settings: Settings, clock: Arc<dyn Clock>) -> Result<()> {
    if settings.backend != "embedded" {
        bail!(
            "--backend {}: the Redis backend is not built yet; only \"embedded\" works in this version",
            settings.backend
        );
    }
    // Installed before anything is announced: a SIGTERM that arrives just
    // after the listening line must still shut down gracefully.
    let shutdown = shutdown_signal()?;
    let store = Store::new();
    let dir = settings.data_dir.clone();
    let fsync = settings.fsync;
    let t = std::time::Instant::now();
    // Recovery reads files and rebuilds boards: blocking work.
    let (store, opened) = tokio::task::spawn_blocking(move || {
        let r = crate::storage::open(&dir, fsync, &store);
        (store, r)
    })
    .await?;
    let (storage, aux, report) =
        opened.with_context(|| format!("cannot open {}", settings.data_dir.display()))?;
    tracing::info!(
        dir = %settings.data_dir.display(),
        snapshot_lsn = report.snapshot_lsn,
        boards = store.len(),
        replayed = report.replayed,
        ms = t.elapsed().as_millis() as u64,
        "recovered"
    );
    let svc = Arc::new(
        Service::new(
            store,
            Some(storage),
            aux,
            report,
            settings.snapshot_every_bytes,
        )
        .with_clock(clock),
    );

    let metrics = crate::http::install_metrics();
    let mut servers = tokio::task::JoinSet::new();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    if let Some(addr) = settings.http {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for HTTP"))?;
        let local = listener.local_addr()?;
        let app = crate::http::router(
            svc.clone(),
            crate::http::HttpConfig {
                api_keys: settings.api_keys.clone(),
                max_body_bytes: settings.max_body_bytes,
            },
            Some(metrics),
        );
        let mut stop = stop_rx.clone();
        // An answer is one write and the client waits for it: Nagle's
        // algorithm could only hold it back behind an unacknowledged one.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY on an HTTP connection: {e}");
            }
        });
        servers.spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await
                .context("HTTP server failed")
        });
        // Tests and scripts wait for this line (port 0 picks a free port).
        println!("podium: http listening on {local}");
        tracing::info!(%local, "HTTP/JSON listening");
    }
    if let Some(addr) = settings.rpc {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for MessagePack-RPC"))?;
        let local = listener.local_addr()?;
        let cfg = crate::rpc::RpcConfig {
            api_keys: settings.api_keys.clone(),
        };
        let stop = stop_rx.clone();
        servers.spawn(crate::rpc::serve(listener, svc.clone(), cfg, stop));
        println!("podium: rpc listening on {local}");
        tracing::info!(%local, "MessagePack-RPC listening");
    }
    if let Some(addr) = settings.resp {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for the Redis protocol"))?;
        let local = listener.local_addr()?;
        let cfg = crate::resp::RespConfig {
            api_keys: settings.api_keys.clone(),
        };
        let stop = stop_rx.clone();
        servers.spawn(crate::resp::serve(listener, svc.clone(), cfg, stop));
        println!("podium: resp listening on {local}");
        tracing::info!(%local, "Redis protocol listening");
    }

    let bg = tokio::spawn(background(svc.clone(), stop_rx.clone()));
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    let _ = stop_tx.send(true);
    while let Some(r) = servers.join_next().await {
        r??;
    }
    let _ = bg.await;
    svc.close().context("flushing the log at shutdown")?;
    tracing::info!("log flushed and synced; bye");
    Ok(())
}

/// Ten times a second: delete expired keys (as Redis's active expiry
/// does). Every second: run resets that fell due, take a snapshot when the
/// log has grown enough.
async fn background(svc: Arc<Service>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let s = svc.clone();
        let _ = tokio::task::spawn_blocking(move || s.sweep_expired()).await;
        n += 1;
        if !n.is_multiple_of(10) {
            continue;
        }
        match svc.run_due_resets().await {
            Ok(made) => {
                for r in made {
                    tracing::info!(board = %r.board, archive = %r.archive, members = r.archived, "scheduled reset");
                }
            }
            Err(e) => tracing::error!("scheduled reset failed: {e}"),
        }
        let s = svc.clone();
        match tokio::task::spawn_blocking(move || s.maybe_snapshot(false)).await {
            Ok(Err(e)) => tracing::error!("{e}"),
            Err(e) => tracing::error!("snapshot task failed: {e}"),
            Ok(Ok(_)) => {}
        }
    }
}

/// A future that completes at SIGINT or SIGTERM. The handlers are
/// registered when this is called, not when the future is first polled.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing a SIGINT handler")?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async move {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
