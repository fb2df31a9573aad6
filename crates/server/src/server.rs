//! `podium serve`: opens the storage — recovers the data directory of the
//! embedded engine, or connects to Redis / Redis Cluster
//! (`--backend redis://…`, nothing kept locally) — starts the protocol
//! listeners on it and the background work (scheduled resets, snapshots),
//! and shuts down gracefully on SIGINT/SIGTERM — stop accepting, finish
//! in-flight requests, then flush and fsync the embedded log.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use podium_engine::Store;
use tokio::net::TcpListener;

use crate::limits::{ClientGate, ConnLimits, Timeouts};
use crate::settings::{Settings, WebhookMode, DEFAULT_BACKEND};
use podium_core::backend::Backend;
use podium_core::schedule::{Clock, SystemClock};
use podium_core::write_policy::{AutoCreate, WritePolicy};
use podium_redis::RedisBackend;
use podium_store::service::Service;
use podium_store::EmbeddedBackend;

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
    crate::process::started();
    // Installed before anything is announced: a SIGTERM that arrives just
    // after the listening line must still shut down gracefully.
    let shutdown = shutdown_signal()?;
    // Before any config is read or written: webhook URLs are checked
    // against it.
    podium_core::events::hooks::Targets::set_current(settings.limits.webhook_targets);
    podium_core::events::limits::set(podium_core::events::limits::Limits {
        per_member: settings.limits.events_max_filters_per_member,
        per_board: settings.limits.events_max_filters_per_board,
        total: settings.limits.events_max_filters,
        retain: std::time::Duration::from_secs(settings.limits.events_retain_secs),
    });

    let metrics = crate::http::install_metrics();
    let lim = &settings.limits;
    crate::limits::memory::install(lim.maxmemory.bytes());
    let (maxclients, fds) =
        crate::limits::clients::Descriptors::fit(lim.maxclients, settings.listeners().len());
    let maxclients = maxclients as usize;
    let conn_limits = |what, timeouts| ConnLimits {
        gate: ClientGate::sharing(what, maxclients, fds.clone()),
        timeouts,
    };
    // One set of buckets for every protocol: a key's or an address's
    // budget is the same whichever protocol it spends it on.
    let rate = Arc::new(crate::rate::RateLimits::from_settings(&settings));
    let mut servers = tokio::task::JoinSet::new();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // HTTP opens before the storage, so that probes are answered while a
    // large data directory recovers (`/readyz` 503 until it has); the
    // listening line comes once it serves.
    let http = match settings.http {
        Some(addr) => {
            let (listener, local) = bind(addr, "HTTP").await?;
            let kind = match settings.backend == DEFAULT_BACKEND {
                true => "embedded",
                false => "redis",
            };
            let routing = crate::http::Routing::starting(kind);
            let timeouts = Timeouts::from_secs(lim.http_idle_secs, lim.http_header_secs);
            let limits = conn_limits("http", timeouts);
            let stop = stop_rx.clone();
            // The access log names the client too.
            let by_address = rate.by_address() || settings.access_log;
            let served = routing.clone();
            servers.spawn(async move {
                crate::http::serve(listener, served, limits, by_address, stop)
                    .await
                    .context("HTTP server failed")
            });
            tracing::info!(%local, "HTTP open while the storage opens: /healthz and /readyz answer");
            Some((routing, local))
        }
        None => None,
    };
    let engine = Engine::open(&settings, clock).await?;

    // Boards' max_submits_per_member, the same on either engine.
    let auto_create = match settings.auto_create {
        true => AutoCreate::On,
        false => AutoCreate::Off,
    };
    let limited: Arc<dyn Backend> = Arc::new(WritePolicy::new(engine.backend(), auto_create));
    // `/metrics` shows every protocol's rows, whichever listeners run.
    crate::callstats::register(crate::rpc::STATS);
    crate::callstats::register(crate::resp::STATS);
    if let Some((routing, local)) = http {
        routing.open(crate::http::router(
            limited.clone(),
            crate::http::HttpConfig::new(&settings, rate.clone(), stop_rx.clone()),
            Some(metrics),
        ));
        announce("http", local, "HTTP/JSON");
        println!("podium: console at http://{}/console/", browsable(local));
    }
    // Redis's `timeout`, which CONFIG SET changes for open connections too.
    let idle_secs = Arc::new(std::sync::atomic::AtomicU64::new(lim.timeout_secs));
    let idle = Timeouts::live_idle(idle_secs.clone());
    if let Some(addr) = settings.rpc {
        let (listener, local) = bind(addr, "MessagePack-RPC").await?;
        let cfg = crate::rpc::RpcConfig {
            api_keys: settings.api_keys.clone(),
            rate: rate.clone(),
        };
        let stop = stop_rx.clone();
        let limits = conn_limits("rpc", idle.clone());
        servers.spawn(crate::rpc::serve(
            listener,
            limited.clone(),
            cfg,
            limits,
            stop,
        ));
        announce("rpc", local, "MessagePack-RPC");
    }
    let backend = engine.backend();
    match (settings.resp, backend.key_store()) {
        (Some(addr), Some(keys)) => {
            let (listener, local) = bind(addr, "the Redis protocol").await?;
            let cfg = crate::resp::RespConfig {
                api_keys: settings.api_keys.clone(),
                multi: crate::resp::exec::MultiLimits {
                    max_commands: lim.multi_max_commands,
                    max_bytes: lim.multi_max_bytes,
                    max_time: (lim.exec_time_limit_ms > 0)
                        .then(|| std::time::Duration::from_millis(lim.exec_time_limit_ms)),
                },
                rate: rate.clone(),
                live: crate::resp::exec::Live {
                    timeout: idle_secs.clone(),
                    maxclients: maxclients as u64,
                    appendfsync: settings.fsync.as_str(),
                },
                script_time_limit: Some(std::time::Duration::from_millis(lim.script_time_limit_ms)),
                notify_keyspace_events: lim.notify_keyspace_events,
            };
            let stop = stop_rx.clone();
            let limits = conn_limits("resp", idle);
            servers.spawn(crate::resp::serve(
                listener,
                keys.clone(),
                cfg,
                limits,
                stop,
            ));
            announce("resp", local, "Redis protocol");
        }
        // `Settings::validate` refuses an explicit --resp with Redis.
        (Some(_), None) => bail!("the Redis protocol frontend serves only the embedded engine"),
        (None, None) => tracing::info!(
            "Redis protocol (--resp) off: it serves only the embedded engine; \
             Redis clients can talk to Redis itself"
        ),
        (None, Some(_)) => {}
    }

    let bg = engine.spawn_background(stop_rx.clone());
    let upkeep = tokio::spawn(crate::limits::memory::upkeep(stop_rx.clone()));
    let hooks = engine.backend().outbox().and_then(|outbox| {
        match webhook_mode(&settings, outbox.as_ref()) {
            WebhookMode::On => Some(crate::hooks::spawn(outbox, true)),
            WebhookMode::Off => Some(crate::hooks::spawn(outbox, false)),
            WebhookMode::Hold => None,
        }
    });
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    let _ = stop_tx.send(true);
    // Deliveries not acknowledged yet stay due in the outbox.
    if let Some(h) = hooks {
        h.abort();
    }
    while let Some(r) = servers.join_next().await {
        r??;
    }
    let _ = upkeep.await;
    engine.close(bg).await
}

/// The storage `serve` opened, and the one owner of it: the frontends get
/// it as a [`Backend`]; what differs per engine is the work beside them.
enum Engine {
    /// Runs the background work of [`background`] and is flushed at
    /// shutdown; its backend also offers the Redis data model
    /// ([`Backend::key_store`]) the Redis protocol serves.
    Embedded(Arc<EmbeddedBackend>),
    /// Runs the reset scheduler; nothing is kept locally.
    Redis(Arc<RedisBackend>),
}

impl Engine {
    async fn open(settings: &Settings, clock: Arc<dyn Clock>) -> Result<Engine> {
        Ok(if settings.backend == DEFAULT_BACKEND {
            let svc = open_embedded(settings, clock).await?;
            Engine::Embedded(Arc::new(EmbeddedBackend::new(svc)))
        } else {
            Engine::Redis(open_redis(settings, clock).await?)
        })
    }

    /// What HTTP and MessagePack-RPC call.
    fn backend(&self) -> Arc<dyn Backend> {
        match self {
            Engine::Embedded(be) => be.clone(),
            Engine::Redis(be) => be.clone(),
        }
    }

    /// Starts the engine's own periodic work.
    fn spawn_background(
        &self,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        match self {
            Engine::Embedded(be) => tokio::spawn(background(be.service().clone(), stop)),
            // Every node runs the scheduler; the script archives a period
            // once however many nodes find it due (docs/redis-backend.md).
            Engine::Redis(be) => podium_redis::spawn_reset_scheduler(be.clone()),
        }
    }

    /// Once the frontends have finished: ends the periodic work `bg` and,
    /// on the embedded engine, flushes and syncs the log.
    async fn close(self, bg: tokio::task::JoinHandle<()>) -> Result<()> {
        match self {
            Engine::Embedded(be) => {
                // Already returned on `stop`.
                let _ = bg.await;
                be.service()
                    .close()
                    .context("flushing the log at shutdown")?;
                tracing::info!("log flushed and synced; bye");
            }
            Engine::Redis(_) => {
                // The scheduler loops until aborted.
                bg.abort();
                let _ = bg.await;
                tracing::info!("bye");
            }
        }
        Ok(())
    }
}

/// What to do with the webhook deliveries of the embedded store whose
/// outbox is `outbox`: `--webhooks` when given (`on` or `off` take away the
/// mark of a copy: the operator has chosen), else `hold` on a data
/// directory marked as a copy — its due deliveries may have been sent by
/// the original since, to endpoints in production — and `on` otherwise.
fn webhook_mode(
    settings: &Settings,
    outbox: &dyn podium_core::events::hooks::Outbox,
) -> WebhookMode {
    let dir = &settings.data_dir;
    let held = podium_core::backup::webhooks_held(dir);
    let mode = match (settings.webhooks, &held) {
        (Some(m), _) => m,
        (None, Some(_)) => WebhookMode::Hold,
        (None, None) => WebhookMode::On,
    };
    let due = outbox.due().len();
    match mode {
        WebhookMode::Hold => tracing::warn!(
            hooks_due = due,
            "webhook deliveries held: {}; start with --webhooks on to deliver them, or off to \
             drop them",
            held.as_deref()
                .unwrap_or("--webhooks hold")
                .trim_end_matches('.')
        ),
        m if held.is_some() => match podium_core::backup::release_webhooks(dir) {
            Ok(()) => tracing::info!(
                hooks_due = due,
                "webhook deliveries {} (--webhooks {}): this copy's hold is taken away",
                if m == WebhookMode::On {
                    "on"
                } else {
                    "dropped"
                },
                m.as_str()
            ),
            Err(e) => tracing::warn!(
                "cannot take away the webhook hold of {}: {e}",
                dir.display()
            ),
        },
        WebhookMode::Off => tracing::info!(
            hooks_due = due,
            "webhook deliveries off: dropped as they fall due"
        ),
        WebhookMode::On => {}
    }
    mode
}

/// Binds a frontend's address; `what` names the protocol in the error.
async fn bind(addr: SocketAddr, what: &str) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for {what}"))?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Says that a frontend listens, once: `flag` in the line on stdout that
/// tests and scripts wait for (port 0 picks a free port); the log has it
/// at debug only, as the same line twice on a terminal reads as two
/// listeners.
fn announce(flag: &str, local: SocketAddr, what: &str) {
    println!("podium: {flag} listening on {local}");
    tracing::debug!(%local, "{what} listening");
}

/// An address a browser on this host can open: a listener on every
/// address (`0.0.0.0`, `::`) is reached through loopback.
fn browsable(local: SocketAddr) -> SocketAddr {
    let ip = match local.ip() {
        std::net::IpAddr::V4(a) if a.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(a) if a.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    SocketAddr::new(ip, local.port())
}

/// Opens and recovers the data directory: the embedded engine.
async fn open_embedded(settings: &Settings, clock: Arc<dyn Clock>) -> Result<Arc<Service>> {
    let store = Store::new();
    let dir = settings.data_dir.clone();
    let fsync = settings.fsync;
    let t = std::time::Instant::now();
    // Recovery reads files and rebuilds boards: blocking work.
    let (store, opened) = tokio::task::spawn_blocking(move || {
        let r = podium_store::storage::open(&dir, fsync, &store);
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
    Ok(Arc::new(
        Service::new(
            store,
            Some(storage),
            aux,
            report,
            settings.snapshot_every_bytes,
        )
        .with_clock(clock),
    ))
}

/// Connects to Redis or a Redis Cluster. Nothing is kept locally: no data
/// directory is opened or created, and `--fsync` is Redis's business
/// (its `appendfsync`). Redis must answer at startup; later outages are
/// 503s, and the backend reconnects by itself.
async fn open_redis(settings: &Settings, clock: Arc<dyn Clock>) -> Result<Arc<RedisBackend>> {
    let t = std::time::Instant::now();
    let be = RedisBackend::connect(&settings.backend)
        .await
        .map_err(|e| anyhow::anyhow!("cannot use --backend {}: {e}", settings.backend))?
        .with_clock(clock);
    tracing::info!(
        backend = %settings.backend,
        ms = t.elapsed().as_millis() as u64,
        "connected to Redis; this node keeps no data"
    );
    Ok(Arc::new(be))
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
        let s = svc.clone();
        let _ = tokio::task::spawn_blocking(move || s.sweep_events()).await;
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
