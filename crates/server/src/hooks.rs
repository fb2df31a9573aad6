//! Webhook delivery: POSTs each hook's due events (from the engine's
//! [`Outbox`]) to its endpoint, signed, one delivery at a time per hook
//! and in order, retried with exponential backoff until the receiver
//! answers 2xx; only then are the events acknowledged (at least once).
//!
//! Every address a delivery connects to is checked against the
//! operator's [`Targets`]: a literal one before sending, a host name's
//! through the resolver, so a name that resolves to a private address is
//! refused at delivery as a literal one is when the config is written.
//! Redirects are not followed. The wire format is in docs/spec.md §4
//! ("Webhooks").

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use podium_core::events::hooks::{sign, Outbox, Pending, Targets};
use podium_core::events::Kind;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Most events one delivery carries.
const BATCH: usize = 100;
/// A receiver that does not answer within this is retried.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry's wait; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Resolves host names and keeps only the addresses `Targets` allows.
struct Checked(Targets);

impl Resolve for Checked {
    fn resolve(&self, name: Name) -> Resolving {
        let targets = self.0;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| targets.allows(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!(
                    "{host} resolves to no address webhooks may go to (webhook targets: {})",
                    targets.as_str()
                )
                .into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Starts delivering `outbox`'s hooks; runs until the process ends. With
/// `send` false (`--webhooks off`) each hook's due events are acknowledged
/// without being sent: dropped, so no later start sends them.
pub fn spawn(outbox: Arc<dyn Outbox>, send: bool) -> tokio::task::JoinHandle<()> {
    let targets = Targets::current();
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        // A proxy (from the environment) would connect wherever the URL
        // says, past the address checks: a delivery connects itself, to an
        // address it checked.
        .no_proxy()
        .dns_resolver(Arc::new(Checked(targets)))
        .user_agent(concat!("podium/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a client without custom TLS settings builds");
    tokio::spawn(async move {
        // Dropped with this task (aborted at shutdown): the deliveries in
        // flight end with it, and stay due.
        let mut tasks = tokio::task::JoinSet::new();
        let mut running = std::collections::HashSet::new();
        loop {
            let notified = outbox.notify().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            while let Some(done) = tasks.try_join_next() {
                if let Ok(key) = done {
                    running.remove(&key);
                }
            }
            for key in outbox.due() {
                if running.insert(key.clone()) {
                    let (o, c) = (outbox.clone(), client.clone());
                    tasks.spawn(async move {
                        match send {
                            true => deliver(o, c, targets, &key.0, &key.1).await,
                            false => drop_due(o, &key.0, &key.1).await,
                        }
                        key
                    });
                }
            }
            // Woken by new events; the timer also notices finished hooks
            // whose queues refilled meanwhile.
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    })
}

/// Acknowledges one hook's queue without sending it.
async fn drop_due(outbox: Arc<dyn Outbox>, board: &str, hook: &str) {
    while let Some(p) = outbox.peek(board, hook, BATCH) {
        let Some(upto) = p.events.iter().map(|e| e.id).max() else {
            return;
        };
        tracing::debug!(
            board,
            hook,
            events = p.events.len(),
            "webhook events dropped (--webhooks off)"
        );
        let o = outbox.clone();
        let (b, h) = (board.to_string(), hook.to_string());
        let _ = tokio::task::spawn_blocking(move || o.ack(&b, &h, upto)).await;
    }
}

/// Delivers one hook's queue until it is empty.
async fn deliver(
    outbox: Arc<dyn Outbox>,
    client: reqwest::Client,
    targets: Targets,
    board: &str,
    hook: &str,
) {
    let mut backoff = FIRST_BACKOFF;
    while let Some(p) = outbox.peek(board, hook, BATCH) {
        let Some(upto) = p.events.iter().map(|e| e.id).max() else {
            return;
        };
        match post(&client, targets, &p).await {
            Ok(()) => {
                metrics::counter!("podium_webhook_deliveries_total", "result" => "ok").increment(1);
                metrics::counter!("podium_webhook_events_total").increment(p.events.len() as u64);
                let o = outbox.clone();
                let (b, h) = (board.to_string(), hook.to_string());
                // Takes the store's gate and appends to its log.
                let _ = tokio::task::spawn_blocking(move || o.ack(&b, &h, upto)).await;
                backoff = FIRST_BACKOFF;
            }
            Err(why) => {
                metrics::counter!("podium_webhook_deliveries_total", "result" => "failed")
                    .increment(1);
                tracing::warn!(
                    board = %board,
                    hook = %hook,
                    due = p.due,
                    retry_in_s = backoff.as_secs(),
                    "webhook delivery failed: {why}"
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The body of a delivery: `{"board", "hook", "events": [...]}`, the
/// events as the subscriptions send them.
pub fn body(p: &Pending) -> String {
    let mut s =
        String::with_capacity(64 + p.events.iter().map(|e| e.json.len() + 1).sum::<usize>());
    s.push_str("{\"board\":");
    s.push_str(&serde_json::Value::String(p.board.clone()).to_string());
    s.push_str(",\"hook\":");
    s.push_str(&serde_json::Value::String(p.hook.clone()).to_string());
    s.push_str(",\"events\":[");
    for (i, e) in p.events.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&e.json);
    }
    s.push_str("]}");
    s
}

/// One delivery attempt: Ok when the receiver answered 2xx.
async fn post(client: &reqwest::Client, targets: Targets, p: &Pending) -> Result<(), String> {
    let url = url::Url::parse(&p.url).map_err(|e| format!("bad url {:?}: {e}", p.url))?;
    let literal = match url.host() {
        Some(url::Host::Ipv4(a)) => Some(IpAddr::V4(a)),
        Some(url::Host::Ipv6(a)) => Some(IpAddr::V6(a)),
        _ => None,
    };
    if literal.is_some_and(|ip| !targets.allows(ip)) {
        return Err(format!(
            "{} is not an address webhooks may go to (webhook targets: {})",
            p.url,
            targets.as_str()
        ));
    }
    let body = body(p);
    let first = p
        .events
        .first()
        .map(|e| e.id.to_string())
        .unwrap_or_default();
    let lagged = p.events.iter().any(|e| e.kind == Kind::Lagged);
    let r = client
        .post(url)
        .header("content-type", "application/json")
        .header("podium-hook", &p.hook)
        .header("podium-delivery", first)
        .header(
            "podium-signature",
            sign(p.secret.as_bytes(), body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .map_err(|e| {
            // reqwest's top-level text hides the cause (a refused address,
            // a refused connection): name the chain.
            let mut m = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                m.push_str(": ");
                m.push_str(&s.to_string());
                src = s.source();
            }
            m
        })?;
    if lagged {
        tracing::warn!(board = %p.board, hook = %p.hook, "webhook receiver fell behind: events were dropped");
    }
    match r.status() {
        s if s.is_success() => Ok(()),
        s => Err(format!("{} answered {s}", p.url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use podium_core::events::{Event, EventId};
    use serde_json::Map;

    #[test]
    fn a_body_is_the_events_as_subscribers_get_them() {
        let mut m = Map::new();
        m.insert("member".into(), "ann".into());
        let p = Pending {
            board: "b\"1".into(),
            hook: "h".into(),
            url: "http://127.0.0.1:1/".into(),
            secret: "s".repeat(16),
            events: vec![
                Event::new(EventId::new(4, 0), Kind::Enter, "b\"1", m),
                Event::new(EventId::new(4, 1), Kind::Reset, "b\"1", Map::new()),
            ],
            due: 2,
        };
        let v: serde_json::Value = serde_json::from_str(&body(&p)).unwrap();
        assert_eq!(v["board"], "b\"1");
        assert_eq!(v["hook"], "h");
        assert_eq!(v["events"][0]["id"], "4-0");
        assert_eq!(v["events"][0]["member"], "ann");
        assert_eq!(v["events"][1]["type"], "reset");
    }
}
