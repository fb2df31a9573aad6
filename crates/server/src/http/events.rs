//! `GET /v1/boards/{board}/events`: a board's live events as Server-Sent
//! Events (docs/spec.md §5). Each event is one SSE message: `id:` its
//! event id, `event:` its type, `data:` its JSON object. A reconnecting
//! `EventSource` sends `Last-Event-ID` and resumes after it.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use percent_encoding::percent_decode_str;

use super::error::{BoardP, HttpResult};
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

pub(crate) async fn events(
    State(st): State<St>,
    BoardP(board): BoardP,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> HttpResult<Response> {
    let req = subscribe_request(board, query.as_deref(), &headers)?;
    let sub = req.run(&*st.be).await?;
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
