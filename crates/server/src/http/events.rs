//! `GET /v1/boards/{board}/events`: a board's live events as Server-Sent
//! Events, or over a WebSocket when the request asks to upgrade (docs/spec.md
//! §4, "Live events"). Each event is one SSE message (`id:` its event id, `event:` its
//! type, `data:` its JSON object) or one WebSocket text message (its JSON
//! object). A reconnecting `EventSource` sends `Last-Event-ID` and resumes
//! after it; a WebSocket client passes `?since=`.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::error::{BoardP, HttpError, HttpResult};
use super::St;
use podium_core::error::ApiError;
use podium_core::events::Subscription;
use podium_core::ops::{Operation, Subscribe};

/// A comment line sent when nothing else was for this long, so proxies and
/// clients see the stream alive and a dead peer is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What `EventSource` waits before reconnecting (ms), sent first.
const RETRY_MS: u64 = 1000;

/// The largest frame or message a WebSocket client may send. The stream
/// reads nothing from its client: pings, pongs and a close fit (a control
/// frame carries at most 125 bytes), and a data message sent in fragments
/// is cut off here instead of being gathered without bound.
const WS_MAX_INCOMING: usize = 1024;

/// The most bytes of several events an SSE stream hands the connection as
/// one piece. The connection queues a few pieces for a reader that does
/// not keep up, and a piece of several events is that reader's own copy:
/// small pieces keep a slow reader's buffer small, as a WebSocket's, which
/// sends one event at a time. An event's own message is shared by every
/// subscriber and is handed over as it is, whatever its size.
pub(crate) const SSE_PIECE: usize = 4096;

/// The pieces an SSE stream writes for `batch`, in order: each event's
/// shared message, or several small ones copied together up to
/// [`SSE_PIECE`] bytes.
pub(crate) fn sse_pieces(batch: &[std::sync::Arc<podium_core::events::Event>]) -> Vec<Bytes> {
    if let [one] = batch {
        return vec![one.sse()];
    }
    let mut out = Vec::new();
    let mut piece: Vec<u8> = Vec::new();
    for ev in batch {
        let msg = ev.sse();
        if !piece.is_empty() && piece.len() + msg.len() > SSE_PIECE {
            out.push(Bytes::from(std::mem::take(&mut piece)));
        }
        if msg.len() >= SSE_PIECE {
            out.push(msg);
        } else {
            if piece.is_empty() {
                piece.reserve(SSE_PIECE);
            }
            piece.extend_from_slice(&msg);
        }
    }
    if !piece.is_empty() {
        out.push(Bytes::from(piece));
    }
    out
}

/// The subscription a request asks for: the query, and `Last-Event-ID`.
pub(crate) fn subscribe_request(
    board: String,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Subscribe, ApiError> {
    let last = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| ApiError::bad("Last-Event-ID is not an event id"))?,
        ),
        None => None,
    };
    Subscribe::from_query(board, query, last)
}

/// A WebSocket upgrade, when the request asks for one.
pub(crate) struct MaybeWs(Option<WebSocketUpgrade>);

impl<S: Send + Sync> FromRequestParts<S> for MaybeWs {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        let asks = parts
            .headers
            .get("upgrade")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        if !asks {
            return Ok(MaybeWs(None));
        }
        WebSocketUpgrade::from_request_parts(parts, state)
            .await
            .map(|u| MaybeWs(Some(u)))
            .map_err(|e| HttpError(ApiError::bad(format!("not a WebSocket upgrade: {e}"))))
    }
}

pub(crate) async fn events(
    State(st): State<St>,
    BoardP(board): BoardP,
    RawQuery(query): RawQuery,
    MaybeWs(ws): MaybeWs,
    headers: HeaderMap,
) -> HttpResult<Response> {
    let req = subscribe_request(board, query.as_deref(), &headers)?;
    // Refused (a bad filter, a missing key) before upgrading.
    let sub = req.run(&*st.be).await?;
    // Never true without a signal: a router built without one (tests)
    // keeps its streams until the client leaves.
    let stop = st
        .cfg
        .stop
        .clone()
        .unwrap_or_else(|| tokio::sync::watch::channel(false).1);
    if let Some(ws) = ws {
        return Ok(ws
            // Events are small; a client that stops reading is cut off
            // rather than buffered for.
            .max_write_buffer_size(1 << 20)
            .max_frame_size(WS_MAX_INCOMING)
            .max_message_size(WS_MAX_INCOMING)
            .on_upgrade(move |socket| websocket(socket, sub, stop)));
    }
    let first = Bytes::from(format!("retry: {RETRY_MS}\n\n"));
    // One timer for the stream's life, re-armed only when it fires: a
    // timer made per batch would cost every subscriber a timer-wheel
    // entry per event. Likewise one wait for the stop signal: made anew
    // per batch, it would join and leave the signal's waiters each time.
    let idle = Box::pin(tokio::time::sleep(KEEPALIVE));
    let stop: Stop = Box::pin(async move {
        let mut stop = stop;
        stopped(&mut stop).await
    });
    let state = (
        sub,
        std::collections::VecDeque::from([first]),
        idle,
        tokio::time::Instant::now(),
        stop,
    );
    let stream = futures_util::stream::unfold(
        state,
        |(mut sub, mut queued, mut idle, mut sent, mut stop)| async move {
            if let Some(b) = queued.pop_front() {
                return Some((Ok::<_, Infallible>(b), (sub, queued, idle, sent, stop)));
            }
            loop {
                tokio::select! {
                    // The server stops: the stream ends, and the client
                    // resumes from its last id where it reconnects.
                    _ = &mut stop => return None,
                    batch = sub.next_batch() => {
                        let batch = batch?;
                        sent = tokio::time::Instant::now();
                        // Each event's message is encoded once for all its
                        // subscribers: one event is sent as that shared buffer.
                        queued.extend(sse_pieces(&batch));
                        let out = queued.pop_front().unwrap_or_default();
                        return Some((Ok(out), (sub, queued, idle, sent, stop)));
                    }
                    _ = &mut idle => {
                        let due = sent + KEEPALIVE;
                        if tokio::time::Instant::now() >= due {
                            sent = tokio::time::Instant::now();
                            idle.as_mut().reset(sent + KEEPALIVE);
                            let ping = Bytes::from_static(b": keep-alive\n\n");
                            return Some((Ok(ping), (sub, queued, idle, sent, stop)));
                        }
                        idle.as_mut().reset(due);
                    }
                }
            }
        },
    );
    Ok((
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        [("x-accel-buffering", "no")],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The wait for the server's stop signal a stream keeps.
type Stop = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Resolves once `stop` is true; never when its sender is gone without
/// (a router built without a stop signal). The value's guard, which may
/// not be held across an await of a task that moves between threads, is
/// dropped here.
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Sends the events as text messages until the client leaves, the stream
/// ends or the server stops (then a normal close); pings when idle.
async fn websocket(
    mut socket: WebSocket,
    mut sub: Subscription,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            batch = sub.next_batch() => {
                let Some(batch) = batch else { break };
                for ev in batch {
                    let text = String::from(&*ev.json);
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
            }
            msg = socket.recv() => match msg {
                // A close or an error (a frame past the size limit among
                // them) ends the subscription.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                // The stream takes no messages: a client that sends data
                // is told so and closed, rather than read further.
                Some(Ok(Message::Text(_) | Message::Binary(_))) => {
                    let _ = socket
                        .send(Message::Close(Some(CloseFrame {
                            code: close_code::POLICY,
                            reason: "the event stream takes no messages".into(),
                        })))
                        .await;
                    return;
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            },
            _ = tokio::time::sleep(KEEPALIVE) => {
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}
