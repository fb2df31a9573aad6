//! Live events over HTTP with real clients: Server-Sent Events read by
//! reqwest (a `top` and `members` subscription, resumed with
//! `Last-Event-ID` with no gap and no duplicate, resumed after a kill -9
//! with an explicit reload), the same events over a WebSocket
//! (tokio-tungstenite), and podium's refusals of bad subscriptions.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::support::http::Server;
use super::support::sse::Msg;

/// `path`'s event stream (see [`support::sse::open`]).
fn open(s: &Server, path: &str, last_id: Option<&str>) -> mpsc::Receiver<Msg> {
    super::support::sse::open(&s.url(path), last_id)
}

/// An event id's parts, to compare ids in order.
fn id(s: &str) -> (u64, u32) {
    match s.split_once('-') {
        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
        // `LSN` alone: after every event of that write.
        None => (s.parse().unwrap(), u32::MAX),
    }
}

fn next(rx: &mpsc::Receiver<Msg>) -> Msg {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("an event within 10 s")
}

/// The messages until one of type `until` (included).
fn until(rx: &mpsc::Receiver<Msg>, until: &str) -> Vec<Msg> {
    let mut out = Vec::new();
    loop {
        let m = next(rx);
        let done = m.event == until;
        out.push(m);
        if done {
            return out;
        }
    }
}

fn submit(s: &Server, m: &str, score: f64) {
    s.post("/v1/boards/b/scores", &json!({"member": m, "score": score}))
        .expect(200);
}

#[test]
fn sse_top_and_watched_members_resume_without_gap_or_duplicate() {
    let mut s = Server::start(&[]);
    for (m, sc) in [("a", 10.0), ("b", 20.0), ("c", 30.0), ("me", 5.0)] {
        submit(&s, m, sc);
    }
    let rx = open(
        &s,
        "/v1/boards/b/events?top=2&members=me&snapshot=true",
        None,
    );
    let snap = next(&rx);
    assert_eq!(snap.event, "snapshot");
    assert_eq!(snap.data["id"], snap.id);
    assert_eq!(snap.data["top"][0]["member"], "c");
    assert_eq!(snap.data["top"][1]["member"], "b");
    assert_eq!(snap.data["members"][0]["rank"], 4);

    // Someone passes "me": it hears of it, with who did it; the top
    // places change too.
    submit(&s, "d", 25.0);
    let got = until(&rx, "enter");
    let me = got.iter().find(|m| m.event == "member").unwrap();
    assert_eq!(me.data["member"], "me");
    assert_eq!(me.data["rank"], 5);
    assert_eq!(me.data["previous_rank"], 4);
    assert_eq!(me.data["by"], "d");
    let kinds: Vec<(&str, &str)> = got
        .iter()
        .filter(|m| m.event != "member")
        .map(|m| (m.event.as_str(), m.data["member"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("leave", "b"), ("enter", "d")]);
    let seen = got.last().unwrap().id.clone();
    // A write below the top places and below "me" sends nothing.
    submit(&s, "low", 1.0);
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    drop(rx);

    // Disconnected: "me" climbs to first, then a write below everyone.
    submit(&s, "me", 100.0);
    submit(&s, "e", 0.5);
    let rx = open(
        &s,
        "/v1/boards/b/events?top=2&members=me&snapshot=true",
        Some(&seen),
    );
    let got = until(&rx, "move");
    assert!(
        got.iter()
            .all(|m| m.event != "reload" && m.event != "snapshot"),
        "{got:?}"
    );
    assert!(got.iter().all(|m| id(&m.id) > id(&seen)), "{got:?}");
    let me = &got[0];
    assert_eq!((me.event.as_str(), &me.data["rank"]), ("member", &json!(1)));
    let ids: Vec<&str> = got.iter().map(|m| m.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.dedup();
    assert_eq!(ids, sorted, "no duplicate");
    let last = got.last().unwrap().id.clone();

    // After a kill -9 the retained events are gone: an explicit reload,
    // then a fresh snapshot; ids keep growing (they are log positions).
    drop(rx);
    s.kill9();
    s.restart();
    let rx = open(
        &s,
        "/v1/boards/b/events?top=2&members=me&snapshot=true",
        Some(&last),
    );
    let reload = next(&rx);
    assert_eq!(reload.event, "reload");
    assert_eq!(reload.data["after"], last.as_str());
    // Ids never go back, across the restart too.
    assert!(id(&reload.id) > id(&last), "{} after {last}", reload.id);
    let snap = next(&rx);
    assert_eq!(snap.event, "snapshot");
    assert_eq!(snap.data["top"][0]["member"], "me");
    assert_eq!(snap.data["members"][0]["rank"], 1);
    submit(&s, "f", 1000.0);
    let enter = until(&rx, "enter").pop().unwrap();
    assert_eq!(enter.data["member"], "f");
    assert!(id(&enter.id).0 > id(&last).0, "{} after {}", enter.id, last);
}

#[test]
fn sse_every_change_and_the_lifecycle() {
    let s = Server::start(&[]);
    submit(&s, "a", 1.0);
    let rx = open(&s, "/v1/boards/b/events", None);
    submit(&s, "b", 2.0);
    let m = next(&rx);
    assert_eq!(m.event, "change");
    assert_eq!(m.data["member"], "b");
    assert_eq!(m.data["rank"], 1);
    s.delete("/v1/boards/b/members/a").expect(200);
    let m = next(&rx);
    assert_eq!(
        (m.event.as_str(), &m.data["removed"]),
        ("change", &json!(true))
    );
    s.put(
        "/v1/boards/b",
        &json!({"order": "asc", "confirm_rerank": true}),
    )
    .expect(200);
    // Re-sorted: ranks changed as a whole, so a reload, then the config.
    assert_eq!(next(&rx).event, "reload");
    assert_eq!(next(&rx).event, "config");
    let reset = s.post("/v1/boards/b/reset", &json!({})).expect(200);
    let m = until(&rx, "reset").pop().unwrap();
    assert_eq!(m.data["archive"], reset["archive"]);
    s.delete("/v1/boards/b").expect(200);
    assert_eq!(until(&rx, "deleted").pop().unwrap().data["board"], "b");
}

#[test]
fn bad_subscriptions_are_refused_in_podiums_words() {
    let s = Server::start(&[]);
    for (q, needle) in [
        ("top=0", "top must be between 1 and 1000"),
        ("top=ten", "top must be a whole number"),
        ("since=yesterday", "is not an event id"),
        ("snapshot=perhaps", "snapshot must be true or false"),
        ("color=red", "unknown parameter"),
    ] {
        let r = s.get(&format!("/v1/boards/b/events?{q}"));
        r.expect_error(400, "invalid_argument");
        assert!(r.text.contains(needle), "{q}: {}", r.text);
    }
    let many: Vec<String> = (0..1001).map(|i| format!("m{i}")).collect();
    let r = s.get(&format!("/v1/boards/b/events?members={}", many.join(",")));
    r.expect_error(400, "invalid_argument");
    s.get("/v1/boards/bad%07name/events")
        .expect_error(400, "invalid_board_name");
}

#[test]
fn the_same_events_over_a_websocket() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let s = Server::start(&[]);
    submit(&s, "a", 1.0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let url = format!("ws://{}/v1/boards/b/events?top=2&snapshot=true", s.addr());
        let (mut ws, resp) = tokio_tungstenite::connect_async(url).await.unwrap();
        assert_eq!(resp.status(), 101);
        let snap = recv(&mut ws).await;
        assert_eq!(snap["type"], "snapshot");
        assert_eq!(snap["top"][0]["member"], "a");
        let post = tokio::task::spawn_blocking({
            let url = s.url("/v1/boards/b/scores");
            move || {
                reqwest::blocking::Client::new()
                    .post(url)
                    .json(&json!({"member": "z", "score": 9}))
                    .send()
                    .unwrap()
                    .status()
            }
        });
        assert_eq!(post.await.unwrap(), 200);
        let enter = recv(&mut ws).await;
        assert_eq!(
            (enter["type"].as_str(), enter["member"].as_str()),
            (Some("enter"), Some("z"))
        );
        assert_eq!(enter["rank"], 1);
        let moved = recv(&mut ws).await;
        assert_eq!(
            (moved["type"].as_str(), moved["rank"].as_u64()),
            (Some("move"), Some(2))
        );
        ws.close(None).await.unwrap();
        // Resumed after the last id by `since`.
        let url = format!(
            "ws://{}/v1/boards/b/events?top=2&since={}",
            s.addr(),
            snap["id"].as_str().unwrap()
        );
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let v = recv(&mut ws).await;
        assert_eq!(v["id"], enter["id"]);
        let _ = ws.send(Message::Close(None)).await;
    });
}

/// The next text message of a WebSocket, as JSON.
async fn recv<S>(ws: &mut S) -> Value
where
    S: futures_util::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
{
    use futures_util::StreamExt;
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s")
            .unwrap()
            .unwrap();
        if let tokio_tungstenite::tungstenite::Message::Text(t) = m {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

/// SIGTERM with event streams open (Server-Sent Events and a WebSocket):
/// the streams end and the server exits at once, instead of waiting for
/// subscribers that may never leave.
#[test]
fn the_server_stops_with_event_streams_open() {
    let mut s = Server::start(&[]);
    submit(&s, "a", 1.0);
    let sse = open(&s, "/v1/boards/b/events?top=1&snapshot=true", None);
    assert_eq!(next(&sse).event, "snapshot");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = format!("ws://{}/v1/boards/b/events?top=1&snapshot=true", s.addr());
    let mut ws = rt.block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        assert_eq!(recv(&mut ws).await["type"], "snapshot");
        ws
    });
    let t = std::time::Instant::now();
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
    // Well before the streams' 15 s keep-alive, let alone a client leaving.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // Each client sees its stream end.
    assert!(
        matches!(
            sse.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ),
        "the SSE stream did not end"
    );
    rt.block_on(async {
        use futures_util::StreamExt;
        let end = tokio::time::timeout(Duration::from_secs(10), ws.next()).await;
        assert!(
            matches!(
                end,
                Ok(None
                    | Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_)))
                    | Some(Err(_)))
            ),
            "{end:?}"
        );
    });
}

/// The event stream reads nothing from its client: a data message is a
/// policy violation that closes the WebSocket, and a message sent in
/// fragments is cut off long before it could grow, so a client cannot
/// make the server hold what it sends.
#[test]
fn a_websocket_client_sending_data_is_closed() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::Message;
    let s = Server::start(&[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = format!("ws://{}/v1/boards/b/events", s.addr());
    rt.block_on(async {
        // The close code the server ends with (None: the stream ended
        // without one).
        async fn ended<S>(ws: &mut S) -> Option<u16>
        where
            S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>>
                + Unpin,
        {
            loop {
                match tokio::time::timeout(Duration::from_secs(5), ws.next())
                    .await
                    .expect("the server closes the WebSocket within 5 s")
                {
                    Some(Ok(Message::Close(c))) => return c.map(|c| u16::from(c.code)),
                    Some(Ok(_)) => continue,
                    None | Some(Err(_)) => return None,
                }
            }
        }
        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        ws.send(Message::Text("hello".into())).await.unwrap();
        assert_eq!(ended(&mut ws).await, Some(1008));

        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        let chunk = vec![b'x'; 1024];
        let first = Frame::message(chunk.clone(), OpCode::Data(Data::Text), false);
        ws.send(Message::Frame(first)).await.unwrap();
        for _ in 0..64 {
            let more = Frame::message(chunk.clone(), OpCode::Data(Data::Continue), false);
            if ws.send(Message::Frame(more)).await.is_err() {
                break;
            }
        }
        let code = ended(&mut ws).await;
        assert!(matches!(code, None | Some(1008 | 1009)), "{code:?}");
        // Pings and pongs are still answered: the stream stays for a
        // client that only keeps it alive.
        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        ws.send(Message::Ping(b"p".to_vec().into())).await.unwrap();
        let pong = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap();
        assert!(matches!(pong, Some(Ok(Message::Pong(_)))), "{pong:?}");
    });
}

/// Live-event filters are bounded per member, per board and in all (a
/// filter costs every write to what it watches), and a filter whose
/// subscribers left gives way to a new one.
#[test]
fn event_filters_are_bounded_and_give_way_when_unread() {
    let s = Server::start(&[
        "--events-max-filters-per-member",
        "3",
        "--events-max-filters-per-board",
        "5",
    ]);
    s.post("/v1/boards/b/scores", &json!({"member": "hot", "score": 1}))
        .expect(200);
    super::support::sse::check_filter_bounds(&s.url(""));
}
