//! `GET /v1/boards/{board}/events`: a board's live events as Server-Sent
//! Events, or over a WebSocket when the request asks to upgrade (docs/spec.md
//! §5). Each event is one SSE message (`id:` its event id, `event:` its
//! type, `data:` its JSON object) or one WebSocket text message (its JSON
//! object). A reconnecting `EventSource` sends `Last-Event-ID` and resumes
//! after it; a WebSocket client passes `?since=`.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use percent_encoding::percent_decode_str;

use super::error::{BoardP, HttpError, HttpResult};
use super::St;
use podium_core::error::ApiError;
use podium_core::events::{EventId, Filter, Subscription};
use podium_core::ops::{Operation, Subscribe};

/// A comment line sent when nothing else was for this long, so proxies and
/// clients see the stream alive and a dead peer is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What `EventSource` waits before reconnecting (ms), sent first.
const RETRY_MS: u64 = 1000;

/// The subscription a query asks for: `top=N`, `members=a,b` and/or
/// `member=a` (repeatable, for ids holding commas), `snapshot=true`,
/// `since=ID` (the `Last-Event-ID` header wins over it).
pub(crate) fn subscribe_request(
    board: String,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Subscribe, ApiError> {
    let mut top = None;
    let mut members = Vec::new();
    let mut snapshot = false;
    let mut since = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = v.replace('+', " ");
        let v = percent_decode_str(&v)
            .decode_utf8()
            .map_err(|_| ApiError::bad(format!("query parameter {k:?} is not UTF-8")))?;
        match k {
            "top" => {
                top = Some(v.parse::<u32>().map_err(|_| {
                    ApiError::bad(format!("top must be a whole number of places (got {v:?})"))
                })?)
            }
            "members" => members.extend(v.split(',').filter(|m| !m.is_empty()).map(String::from)),
            "member" => members.push(v.into_owned()),
            "snapshot" => {
                snapshot = match &*v {
                    "true" | "1" | "" => true,
                    "false" | "0" => false,
                    _ => return Err(ApiError::bad("snapshot must be true or false")),
                }
            }
            "since" => since = Some(v.parse::<EventId>()?),
            other => {
                return Err(ApiError::bad(format!(
                "unknown parameter {other:?} (events take top, members, member, snapshot, since)"
            )))
            }
        }
    }
    if let Some(id) = headers.get("last-event-id") {
        let id = id
            .to_str()
            .map_err(|_| ApiError::bad("Last-Event-ID is not an event id"))?;
        if !id.is_empty() {
            since = Some(id.parse()?);
        }
    }
    let req = Subscribe {
        board,
        filter: Filter::new(top, members, snapshot)?,
        since,
    };
    req.check()?;
    Ok(req)
}

/// One SSE message.
fn message(ev: &podium_core::events::Event, out: &mut Vec<u8>) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(ev.id.to_string().as_bytes());
    out.extend_from_slice(b"\nevent: ");
    out.extend_from_slice(ev.kind.name().as_bytes());
    out.extend_from_slice(b"\ndata: ");
    // Compact JSON holds no line breaks.
    out.extend_from_slice(ev.json.as_bytes());
    out.extend_from_slice(b"\n\n");
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
    if let Some(ws) = ws {
        return Ok(ws
            // Events are small; a client that stops reading is cut off
            // rather than buffered for.
            .max_write_buffer_size(1 << 20)
            .on_upgrade(move |socket| websocket(socket, sub)));
    }
    let first = Bytes::from(format!("retry: {RETRY_MS}\n\n"));
    let stream = futures_util::stream::unfold(
        (sub, Some(first)),
        |(mut sub, first): (Subscription, Option<Bytes>)| async move {
            if let Some(b) = first {
                return Some((Ok::<_, Infallible>(b), (sub, None)));
            }
            tokio::select! {
                batch = sub.next_batch() => {
                    let batch = batch?;
                    let mut out = Vec::with_capacity(batch.len() * 160);
                    for ev in &batch {
                        message(ev, &mut out);
                    }
                    Some((Ok(Bytes::from(out)), (sub, None)))
                }
                _ = tokio::time::sleep(KEEPALIVE) => {
                    Some((Ok(Bytes::from_static(b": keep-alive\n\n")), (sub, None)))
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

/// Sends the events as text messages until the client leaves or the
/// stream ends (then a normal close); pings when idle.
async fn websocket(mut socket: WebSocket, mut sub: Subscription) {
    loop {
        tokio::select! {
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
                // The client says nothing podium reads; a close or an
                // error ends the subscription.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_becomes_a_subscription() {
        let mut h = HeaderMap::new();
        let r = subscribe_request(
            "b".into(),
            Some("top=10&members=a,b&member=c%2Cd&snapshot=true&since=5-1"),
            &h,
        )
        .unwrap();
        assert_eq!(r.filter.top, Some(10));
        assert_eq!(r.filter.members, ["a", "b", "c,d"]);
        assert!(r.filter.snapshot);
        assert_eq!(r.since, Some(EventId::new(5, 1)));
        h.insert("last-event-id", "7-0".parse().unwrap());
        let r = subscribe_request("b".into(), Some("since=5-1"), &h).unwrap();
        assert_eq!(r.since, Some(EventId::new(7, 0)));
        for bad in ["top=x", "top=0", "snapshot=maybe", "since=q", "colour=red"] {
            assert!(subscribe_request("b".into(), Some(bad), &HeaderMap::new()).is_err());
        }
    }
}
