//! Live board events on Redis (docs/spec.md §4, "Live events";
//! docs/redis-backend.md, "Live events"): the boards this podium node's
//! subscribers watch ([`Feeds`]) and, for each, one reader task that
//! follows the board's event stream (appended by the function library's
//! writes while the board's listened marker lives) and turns its entries
//! into each filter's events, pushed into the same rings ([`Ring`]) the
//! embedded store fills, so every frontend reads them alike.
//!
//! The state the events are told from (the top places, the watched
//! members' entries, the entries of the members written) is read in the
//! same script run as the stream entries (the library's `events`), so it
//! is the board's right after the last entry read. The writes read in one
//! batch are compared as one: their `enter`, `leave`, `move` and `member`
//! events carry the id of the batch's last entry, and a member written
//! twice in a batch has one `change`, at its last write.
//!
//! Ids: entry `MS-SEQ` of the stream numbers its events `MS-(SEQ·65536 +
//! i)`, so ids grow with the stream and the first event of an entry has
//! the entry's own id when SEQ is 0 (the usual case).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use podium_core::api::EntryOut;
use podium_core::error::ApiError;
use podium_core::events::limits::{self, Counted};
use podium_core::events::{Event, EventId, Filter, Kind, Ring, Subscription};
use podium_core::ops::Subscribe;
use redis::Value;
use serde_json::{Map, Value as Json};

use crate::args::flag;
use crate::keys::board_key;
use crate::reply::{arr, int, protocol, ranked_entry, text, window};
use crate::sorted::ranking_keys;
use crate::RedisBackend;

/// The listened marker's lifetime. A node refreshes it every
/// [`REFRESH`], so a node that stops lets writes go back to costing
/// nothing within a minute.
const LISTENED_SECS: u64 = 60;
const REFRESH: Duration = Duration::from_secs(20);
/// How long a board's stream outlives the last refresh of its marker:
/// a board nobody watches any more does not keep its last entries for
/// good, and a watched one whose writes paused keeps its stream.
const STREAM_SECS: u64 = 600;
/// How long one `XREAD` waits: below the connection's response timeout,
/// and the pace at which an idle reader looks at its subscribers.
const BLOCK_MS: u64 = 2000;
/// Most stream entries read at once; a reader further behind tells its
/// subscribers to reload rather than read the backlog.
const MOST: usize = 1024;
/// After a failed Redis call, before the next try.
const RETRY: Duration = Duration::from_millis(500);

type Entry = Map<String, Json>;

/// The boards watched from this node.
#[derive(Default)]
pub(crate) struct Feeds {
    boards: std::sync::Mutex<HashMap<String, Arc<Feed>>>,
}

impl Feeds {
    /// The board's feed, and whether it was just made (its reader is the
    /// caller's to start). Counted as pending until the caller registers,
    /// so the reader does not stop before it does.
    fn join(&self, board: &str) -> (Arc<Feed>, bool) {
        let mut g = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = g.get(board) {
            f.pending.fetch_add(1, Ordering::SeqCst);
            return (f.clone(), false);
        }
        let f = Arc::new(Feed {
            board: board.to_string(),
            pending: AtomicUsize::new(1),
            state: tokio::sync::Mutex::new(State::default()),
        });
        g.insert(board.to_string(), f.clone());
        (f, true)
    }

    /// Forgets `feed` when nobody is about to join it.
    fn leave_if_idle(&self, feed: &Arc<Feed>) -> bool {
        let mut g = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        if feed.pending.load(Ordering::SeqCst) > 0 {
            return false;
        }
        if g.get(&feed.board).is_some_and(|f| Arc::ptr_eq(f, feed)) {
            g.remove(&feed.board);
        }
        true
    }
}

/// One watched board.
struct Feed {
    board: String,
    /// Subscribers between [`Feeds::join`] and their registration.
    pending: AtomicUsize,
    /// Held by the reader while it turns a batch into events, and by a
    /// subscriber while it registers: a snapshot and the first event after
    /// it have nothing between them.
    state: tokio::sync::Mutex<State>,
}

/// One filter and its ring.
struct Sub {
    filter: Filter,
    ring: Arc<Ring>,
    /// Counts it against the process's bound while it lives.
    _counted: Counted,
}

/// A watched member: the filters watching it, and its entry as last told
/// (`None`: not on the board).
struct Watched {
    filters: Vec<Arc<str>>,
    seen: Option<Entry>,
}

#[derive(Default)]
struct State {
    /// The reader left: a subscriber finding this joins a new feed.
    stopped: bool,
    /// The stream id read up to (`None`: not read yet).
    after: Option<String>,
    /// The newest event id given.
    last: EventId,
    /// By [`Filter::key`].
    subs: HashMap<Arc<str>, Sub>,
    watched: BTreeMap<String, Watched>,
    /// `top` sizes asked for → the filters asking.
    tops: BTreeMap<u32, Vec<Arc<str>>>,
    /// The best places as last read, as many as the largest `top` asks.
    top: Vec<Entry>,
    exists: bool,
    size: u64,
    /// The listened marker was found gone: writes may have gone unsaid.
    gap: bool,
}

/// A stream entry id, `MS-SEQ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
struct StreamId {
    ms: u64,
    seq: u64,
}

impl StreamId {
    fn parse(s: &str) -> Option<StreamId> {
        let (a, b) = s.split_once('-')?;
        Some(StreamId {
            ms: a.parse().ok()?,
            seq: b.parse().ok()?,
        })
    }

    /// The id of the entry's first event.
    fn first(self) -> EventId {
        EventId::new(self.ms, (self.seq.min(0xFFFF) as u32) << 16)
    }

    /// An id after every event of the entry.
    fn end(self) -> EventId {
        EventId::new(self.ms, self.first().minor | 0xFFFF)
    }
}

/// One stream entry: its id, kind (`k`) and other fields in order.
struct StreamEntry {
    id: StreamId,
    kind: String,
    fields: Vec<(String, String)>,
}

impl StreamEntry {
    fn members(&self) -> impl Iterator<Item = &str> {
        self.fields
            .iter()
            .filter(|(f, _)| f == "m")
            .map(|(_, v)| v.as_str())
    }

    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What one `events` run read.
struct Read {
    /// The stream id now read up to.
    last: String,
    /// Entries were missed: the subscribers reload.
    lost: bool,
    /// Redis's clock (ms): no entry still to come has a smaller id.
    now: u64,
    entries: Vec<StreamEntry>,
    /// `None`: the board does not exist.
    board: Option<BoardNow>,
}

/// The board right after the entries read.
struct BoardNow {
    size: u64,
    top: Vec<Entry>,
    /// The entries of the watched and written members on the board.
    members: HashMap<String, Entry>,
}

fn entry_map(e: &EntryOut) -> Entry {
    match serde_json::to_value(e) {
        Ok(Json::Object(m)) => m,
        _ => Map::new(),
    }
}

fn field(e: Option<&Entry>, k: &str) -> Json {
    e.and_then(|e| e.get(k)).cloned().unwrap_or(Json::Null)
}

/// Whether two entries differ in what events report: rank or values.
fn moved(a: &Entry, b: &Entry) -> bool {
    ["rank", "score", "scores"]
        .iter()
        .any(|k| a.get(*k) != b.get(*k))
}

fn lossy(v: &Value) -> String {
    text(v).unwrap_or_default()
}

fn parse_entries(v: Value) -> Result<Vec<StreamEntry>, ApiError> {
    let mut out = Vec::new();
    for e in arr(v)? {
        let mut e = arr(e)?;
        if e.len() != 2 {
            return Err(protocol("events entry"));
        }
        let fields = arr(e.pop().unwrap_or(Value::Nil))?;
        let id = StreamId::parse(&lossy(&e[0])).ok_or_else(|| protocol("events entry id"))?;
        let mut kind = String::new();
        let mut rest = Vec::with_capacity(fields.len() / 2);
        for pair in fields.chunks(2) {
            let [f, v] = pair else { break };
            let (f, v) = (lossy(f), lossy(v));
            if f == "k" && kind.is_empty() {
                kind = v;
            } else {
                rest.push((f, v));
            }
        }
        out.push(StreamEntry {
            id,
            kind,
            fields: rest,
        });
    }
    Ok(out)
}

impl RedisBackend {
    /// Keeps the board's listened marker alive for [`LISTENED_SECS`]
    /// (and its stream for [`STREAM_SECS`]); whether it was alive
    /// (`false`: writes in between were not appended).
    async fn listen(&self, board: &str) -> Result<bool, ApiError> {
        let mut c = redis::cmd("SET");
        c.arg(board_key(board, "el"))
            .arg(1)
            .arg("EX")
            .arg(LISTENED_SECS)
            .arg("GET");
        let was: Option<String> = self.command(board, &c).await?;
        let mut c = redis::cmd("EXPIRE");
        c.arg(board_key(board, "ev")).arg(STREAM_SECS);
        self.command::<Value>(board, &c).await?;
        Ok(was.is_some())
    }

    /// The stream's entries after `after` and the board as they left it:
    /// the `top` best places, the `members`' entries, and when `written`
    /// the entries of the members the entries name.
    async fn read_events(
        &self,
        board: &str,
        after: &str,
        top: u32,
        written: bool,
        members: impl Iterator<Item = String>,
    ) -> Result<Read, ApiError> {
        let mut args = vec![
            after.to_string(),
            MOST.to_string(),
            top.to_string(),
            flag(written).to_string(),
        ];
        args.extend(members);
        let mut a = arr(self.call(board, "events", args).await?)?;
        if a.len() < 4 {
            return Err(protocol("events"));
        }
        let ranks = (a.len() >= 6).then(|| a.remove(5));
        let top = (a.len() >= 5).then(|| a.remove(4));
        let entries = parse_entries(a.remove(3))?;
        let now = int(&a[2])?;
        let lost = int(&a[1])? == 1;
        let last = lossy(&a[0]);
        let board = match (top, ranks) {
            (Some(top), Some(ranks)) => {
                let w = window(top, false)?;
                let mut r = arr(ranks)?;
                if r.is_empty() {
                    return Err(protocol("events ranks"));
                }
                let (ranking, layout) = ranking_keys(r.first())?;
                let mut members = HashMap::new();
                for item in r.drain(1..) {
                    let f = arr(item)?;
                    let member = f.first().and_then(text).ok_or_else(|| protocol("ranks"))?;
                    if f.len() < 6 {
                        continue;
                    }
                    let (_, e) = ranked_entry(&f, member, ranking, layout.as_deref(), false)?;
                    members.insert(e.member.clone(), entry_map(&e));
                }
                Some(BoardNow {
                    size: w.total,
                    top: w.entries.iter().map(entry_map).collect(),
                    members,
                })
            }
            _ => None,
        };
        Ok(Read {
            last,
            lost,
            now,
            entries,
            board,
        })
    }

    /// Reads what happened since `st` last read, with what `joining`
    /// watches besides, and turns it into events; answers the entries of
    /// the members read (for a joining filter's baseline).
    async fn catch_up(
        &self,
        board: &str,
        st: &mut State,
        joining: Option<&Filter>,
    ) -> Result<HashMap<String, Entry>, ApiError> {
        let after = st.after.clone().unwrap_or_else(|| "$".to_string());
        let mut top = st.tops.keys().next_back().copied().unwrap_or(0);
        let mut members: Vec<String> = st.watched.keys().cloned().collect();
        let mut written = st.subs.contains_key("");
        if let Some(f) = joining {
            top = top.max(f.top.unwrap_or(0));
            members.extend(f.members.iter().cloned());
            written |= f.everything();
        }
        let r = self
            .read_events(board, &after, top, written, members.into_iter())
            .await?;
        Ok(st.apply(board, r))
    }

    /// `subscribe` on Redis: joins (or starts) the board's feed and
    /// registers the filter after reading the board up to now.
    pub(crate) async fn subscribe_events(&self, req: &Subscribe) -> Result<Subscription, ApiError> {
        req.check()?;
        loop {
            let (feed, fresh) = self.feeds.join(&req.board);
            if fresh {
                tokio::spawn(reader(self.clone(), feed.clone()));
            }
            let mut st = feed.state.lock().await;
            let r = self.register(&feed, &mut st, req).await;
            feed.pending.fetch_sub(1, Ordering::SeqCst);
            match r {
                Ok(Some(s)) => return Ok(s),
                Ok(None) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// `None`: the feed stopped meanwhile.
    async fn register(
        &self,
        feed: &Feed,
        st: &mut State,
        req: &Subscribe,
    ) -> Result<Option<Subscription>, ApiError> {
        if st.stopped {
            return Ok(None);
        }
        if st.after.is_none() {
            // Before the first read: every write after that read is
            // appended.
            self.listen(&feed.board).await?;
        }
        // Refused before anything is read for it.
        let counted = st.admit(&feed.board, &req.filter)?;
        let now = self.catch_up(&feed.board, st, Some(&req.filter)).await?;
        Ok(Some(st.register(
            &feed.board,
            &req.filter,
            req.since,
            &now,
            counted,
        )))
    }
}

/// One board's reader: waits for stream entries on a connection of its
/// own, turns them into events, keeps the listened marker alive, and
/// stops once every filter of the board has gone unread for the rings'
/// retention time.
async fn reader(b: RedisBackend, feed: Arc<Feed>) {
    let board = feed.board.clone();
    let stream = board_key(&board, "ev");
    let mut conn = None;
    let mut refreshed = Instant::now();
    // Well within the response timeout, or a quiet board would read as a
    // lost connection.
    let block = BLOCK_MS
        .min(b.opts.response_timeout.as_millis() as u64 / 2)
        .max(1);
    loop {
        let (after, mut gap) = {
            let mut st = feed.state.lock().await;
            st.sweep(Instant::now());
            if st.subs.is_empty() && b.feeds.leave_if_idle(&feed) {
                st.stopped = true;
                return;
            }
            (st.after.clone(), st.gap)
        };
        // Not read yet: its first subscriber is registering.
        let Some(after) = after else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        if refreshed.elapsed() >= REFRESH {
            match b.listen(&board).await {
                Ok(alive) => {
                    refreshed = Instant::now();
                    gap |= !alive;
                }
                Err(e) => {
                    tracing::warn!(board = %board, error = %e.message, "live events: keeping the board listened");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            }
        }
        let mut woke = gap;
        if !gap {
            if conn.is_none() {
                match b.dedicated().await {
                    Ok(c) => conn = Some(c),
                    Err(e) => {
                        tracing::warn!(board = %board, error = %e.message, "live events: connecting");
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
            }
            let mut cmd = redis::cmd("XREAD");
            cmd.arg("BLOCK")
                .arg(block)
                .arg("COUNT")
                .arg(1)
                .arg("STREAMS")
                .arg(&stream)
                .arg(&after);
            if let Some(c) = conn.as_mut() {
                match cmd.query_async::<Value>(c).await {
                    Ok(Value::Nil) => {}
                    Ok(_) => woke = true,
                    Err(e) => {
                        tracing::warn!(board = %board, error = %e, "live events: waiting for entries");
                        conn = None;
                        tokio::time::sleep(RETRY).await;
                        woke = true;
                    }
                }
            }
        }
        if woke {
            let mut st = feed.state.lock().await;
            st.gap |= gap;
            if let Err(e) = b.catch_up(&board, &mut st, None).await {
                tracing::warn!(board = %board, error = %e.message, "live events: reading the board");
                drop(st);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Events made and not yet in their rings.
#[derive(Default)]
struct Out(Vec<(Arc<Ring>, Arc<Event>)>);

impl Out {
    fn push(&mut self, ring: &Arc<Ring>, ev: &Arc<Event>) {
        self.0.push((ring.clone(), ev.clone()));
    }

    /// Hands each ring its events at once (in id order: the sort is
    /// stable), so its subscribers wake once a batch.
    fn flush(mut self) {
        self.0.sort_by_key(|(r, _)| Arc::as_ptr(r) as usize);
        let mut i = 0;
        while i < self.0.len() {
            let ring = self.0[i].0.clone();
            let n = self.0[i..]
                .iter()
                .take_while(|(r, _)| Arc::ptr_eq(r, &ring))
                .count();
            ring.extend(self.0[i..i + n].iter().map(|(_, e)| e.clone()));
            i += n;
        }
    }
}

impl State {
    /// The id of the next event of the entry whose first event is `base`
    /// (ids only grow, whatever the entries).
    fn next_id(&mut self, base: EventId) -> EventId {
        self.last = if base > self.last {
            base
        } else {
            EventId::new(self.last.major, self.last.minor.saturating_add(1))
        };
        self.last
    }

    fn event(&mut self, board: &str, base: EventId, kind: Kind, body: Entry) -> Arc<Event> {
        let id = self.next_id(base);
        Event::new(id, kind, board, body)
    }

    fn max_top(&self) -> usize {
        self.tops.keys().next_back().map_or(0, |n| *n as usize)
    }

    /// Turns a read into events; answers the members' entries it read.
    fn apply(&mut self, board: &str, r: Read) -> HashMap<String, Entry> {
        let Read {
            last,
            lost,
            now: redis_now,
            entries,
            board: now,
        } = r;
        let (exists, size, new_top, members) = match now {
            Some(b) => (true, b.size, b.top, b.members),
            None => (false, 0, Vec::new(), HashMap::new()),
        };
        let mut out = Out::default();
        let lost = lost || std::mem::take(&mut self.gap);
        let end = StreamId::parse(&last).unwrap_or_default();
        let every = self.subs.get("").map(|s| s.ring.clone());
        let mut written: HashSet<&str> = HashSet::new();

        if lost && self.after.is_some() {
            if let Some(ring) = &every {
                let mut body = Map::new();
                body.insert(
                    "reason".into(),
                    "some of the board's changes were not read in time: reload the state".into(),
                );
                let ev = self.event(board, end.first(), Kind::Reload, body);
                out.push(ring, &ev);
            }
        } else {
            // Each member's change is told at its last write in the batch.
            let mut last_at: HashMap<&str, usize> = HashMap::new();
            for (i, e) in entries.iter().enumerate() {
                if e.kind == "w" {
                    for m in e.members() {
                        last_at.insert(m, i);
                        written.insert(m);
                    }
                }
            }
            for (i, e) in entries.iter().enumerate() {
                let base = e.id.first();
                let life = match e.kind.as_str() {
                    "w" => {
                        if let Some(ring) = &every {
                            let mut told = HashSet::new();
                            for m in e.members() {
                                if last_at.get(m) != Some(&i) || !told.insert(m) {
                                    continue;
                                }
                                let body = members.get(m).cloned().unwrap_or_else(|| {
                                    let mut b = Map::new();
                                    b.insert("member".into(), m.into());
                                    b.insert("removed".into(), true.into());
                                    b
                                });
                                let ev = self.event(board, base, Kind::Change, body);
                                out.push(ring, &ev);
                            }
                        }
                        None
                    }
                    "whole" => {
                        if let Some(ring) = &every {
                            let mut body = Map::new();
                            body.insert(
                                "reason".into(),
                                "the board changed as a whole: reload the state".into(),
                            );
                            let ev = self.event(board, base, Kind::Reload, body);
                            out.push(ring, &ev);
                        }
                        None
                    }
                    "reset" => {
                        let mut body = Map::new();
                        body.insert("archive".into(), e.field("a").unwrap_or("").into());
                        Some((Kind::Reset, body))
                    }
                    "config" => {
                        let mut body = Map::new();
                        let config = e
                            .field("c")
                            .and_then(|c| serde_json::from_str(c).ok())
                            .unwrap_or(Json::Null);
                        body.insert("config".into(), config);
                        Some((Kind::Config, body))
                    }
                    "created" => Some((Kind::Created, Map::new())),
                    "deleted" => Some((Kind::Deleted, Map::new())),
                    _ => None,
                };
                if let Some((kind, body)) = life {
                    let ev = self.event(board, base, kind, body);
                    for s in self.subs.values() {
                        out.push(&s.ring, &ev);
                    }
                }
            }
        }

        // The watched members and the top places, compared with the board
        // after the batch: at the batch's last entry.
        let base = entries.last().map_or(end.first(), |e| e.id.first());
        let by = (written.len() == 1)
            .then(|| written.iter().next().map(|m| m.to_string()))
            .flatten();
        let watched: Vec<String> = self.watched.keys().cloned().collect();
        for m in watched {
            let now = members.get(&m).cloned();
            let Some(w) = self.watched.get(&m) else {
                continue;
            };
            let same = match (&w.seen, &now) {
                (None, None) => true,
                (Some(a), Some(b)) => !moved(a, b),
                _ => false,
            };
            if same {
                continue;
            }
            let mut body = Map::new();
            body.insert("member".into(), m.clone().into());
            body.insert("rank".into(), field(now.as_ref(), "rank"));
            body.insert("score".into(), field(now.as_ref(), "score"));
            for k in ["scores", "name"] {
                if let Some(v) = now.as_ref().and_then(|e| e.get(k)) {
                    body.insert(k.into(), v.clone());
                }
            }
            body.insert("previous_rank".into(), field(w.seen.as_ref(), "rank"));
            body.insert("previous_score".into(), field(w.seen.as_ref(), "score"));
            if let Some(by) = by.as_ref().filter(|by| **by != m) {
                body.insert("by".into(), by.clone().into());
            }
            let filters = w.filters.clone();
            let ev = self.event(board, base, Kind::Member, body);
            for f in &filters {
                if let Some(s) = self.subs.get(f) {
                    out.push(&s.ring, &ev);
                }
            }
            if let Some(w) = self.watched.get_mut(&m) {
                w.seen = now;
            }
        }

        let sizes: Vec<(u32, Vec<Arc<str>>)> =
            self.tops.iter().map(|(n, v)| (*n, v.clone())).collect();
        for (n, filters) in sizes {
            let n = n as usize;
            let old = self.top[..self.top.len().min(n)].to_vec();
            let new = &new_top[..new_top.len().min(n)];
            for ev in self.top_diff(board, base, &old, new) {
                for f in &filters {
                    if let Some(s) = self.subs.get(f) {
                        out.push(&s.ring, &ev);
                    }
                }
            }
        }
        self.top = new_top;
        self.exists = exists;
        self.size = size;
        self.after = Some(last);
        // Every event of the entries read is before the next entry's. A
        // board with no stream yet is placed at Redis's time, so an id
        // from before (another life of the stream) is not taken as kept.
        let floor = if end > StreamId::default() {
            end.end()
        } else {
            EventId::new(redis_now, 0)
        };
        if floor > self.last {
            self.last = floor;
        }
        out.flush();
        members
    }

    /// The events that turn the top places `old` into `new`: leaves, then
    /// entries and moves in rank order.
    fn top_diff(
        &mut self,
        board: &str,
        base: EventId,
        old: &[Entry],
        new: &[Entry],
    ) -> Vec<Arc<Event>> {
        let name = |e: &Entry| {
            e.get("member")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_string()
        };
        let was: HashMap<String, &Entry> = old.iter().map(|e| (name(e), e)).collect();
        let is: HashSet<String> = new.iter().map(name).collect();
        let mut out = Vec::new();
        for e in old {
            if !is.contains(&name(e)) {
                let mut body = Map::new();
                body.insert("member".into(), name(e).into());
                body.insert("previous_rank".into(), field(Some(e), "rank"));
                out.push(self.event(board, base, Kind::Leave, body));
            }
        }
        for e in new {
            match was.get(&name(e)) {
                None => out.push(self.event(board, base, Kind::Enter, e.clone())),
                Some(prev) if moved(prev, e) => {
                    let mut body = e.clone();
                    body.insert("previous_rank".into(), field(Some(prev), "rank"));
                    body.insert("previous_score".into(), field(Some(prev), "score"));
                    out.push(self.event(board, base, Kind::Move, body));
                }
                Some(_) => {}
            }
        }
        out
    }

    /// Whether `filter` may be added, within the bounds on filters
    /// ([`limits`]): one already there may always be joined; else filters
    /// nobody reads go first to make room. Answers the filter's count.
    fn admit(&mut self, board: &str, filter: &Filter) -> Result<Counted, ApiError> {
        if self.subs.contains_key(filter.key().as_str()) {
            return Ok(Counted::new());
        }
        let busiest = |st: &State| {
            filter
                .members
                .iter()
                .map(|m| st.watched.get(m).map_or(0, |w| w.filters.len()))
                .max()
                .unwrap_or(0)
        };
        match limits::admit(board, self.subs.len(), busiest(self)) {
            Ok(c) => Ok(c),
            Err(_) => {
                self.drop_where(|s| s.ring.idle());
                limits::admit(board, self.subs.len(), busiest(self))
            }
        }
    }

    /// Adds (or joins) `filter` just after a read (`now`: the members'
    /// entries it read), answering the subscription; `counted` counts it
    /// (dropped when the filter is there already).
    fn register(
        &mut self,
        board: &str,
        filter: &Filter,
        since: Option<EventId>,
        now: &HashMap<String, Entry>,
        counted: Counted,
    ) -> Subscription {
        let key: Arc<str> = filter.key().into();
        if !self.subs.contains_key(&key) {
            for m in &filter.members {
                self.watched
                    .entry(m.clone())
                    .or_insert_with(|| Watched {
                        filters: Vec::new(),
                        seen: now.get(m).cloned(),
                    })
                    .filters
                    .push(key.clone());
            }
            if let Some(n) = filter.top {
                self.tops.entry(n).or_default().push(key.clone());
            }
            self.subs.insert(
                key.clone(),
                Sub {
                    filter: filter.clone(),
                    ring: Ring::new(board, self.last),
                    _counted: counted,
                },
            );
        }
        let ring = self.subs[&key].ring.clone();
        ring.join(self.last, since, filter, || self.snapshot(board, filter))
    }

    /// The state a filter watches, now.
    fn snapshot(&self, board: &str, filter: &Filter) -> Arc<Event> {
        let mut body = Map::new();
        body.insert("exists".into(), self.exists.into());
        body.insert("size".into(), self.size.into());
        if let Some(n) = filter.top {
            let top: Vec<Json> = self
                .top
                .iter()
                .take(n as usize)
                .map(|e| Json::Object(e.clone()))
                .collect();
            body.insert("top".into(), top.into());
        }
        if !filter.members.is_empty() {
            let members: Vec<Json> = filter
                .members
                .iter()
                .map(|m| match self.watched.get(m).and_then(|w| w.seen.clone()) {
                    Some(e) => Json::Object(e),
                    None => serde_json::json!({ "member": m, "rank": null, "score": null }),
                })
                .collect();
            body.insert("members".into(), members.into());
        }
        Event::new(self.last, Kind::Snapshot, board, body)
    }

    /// Drops the filters nobody has read for the rings' retention time.
    fn sweep(&mut self, now: Instant) {
        self.drop_where(|s| s.ring.expired(now));
    }

    /// Drops the filters `gone` says.
    fn drop_where(&mut self, gone: impl Fn(&Sub) -> bool) {
        let gone: Vec<Arc<str>> = self
            .subs
            .iter()
            .filter(|(_, s)| gone(s))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            let Some(sub) = self.subs.remove(&key) else {
                continue;
            };
            sub.ring.close();
            for m in &sub.filter.members {
                let empty = self.watched.get_mut(m).is_some_and(|w| {
                    w.filters.retain(|k| *k != key);
                    w.filters.is_empty()
                });
                if empty {
                    self.watched.remove(m);
                }
            }
            if let Some(n) = sub.filter.top {
                if let Some(v) = self.tops.get_mut(&n) {
                    v.retain(|k| *k != key);
                    if v.is_empty() {
                        self.tops.remove(&n);
                    }
                }
                let max = self.max_top();
                self.top.truncate(max);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(m: &str, rank: u64, score: f64) -> Entry {
        match json!({"member": m, "rank": rank, "score": score}) {
            Json::Object(o) => o,
            _ => unreachable!(),
        }
    }

    fn write(id: &str, members: &[&str]) -> StreamEntry {
        StreamEntry {
            id: StreamId::parse(id).unwrap(),
            kind: "w".into(),
            fields: members
                .iter()
                .map(|m| ("m".into(), m.to_string()))
                .collect(),
        }
    }

    /// A read of `entries` leaving the board with `top` (best first) and
    /// `members`' entries.
    fn read(last: &str, entries: Vec<StreamEntry>, top: &[(&str, f64)], members: &[&str]) -> Read {
        let top: Vec<Entry> = top
            .iter()
            .enumerate()
            .map(|(i, (m, s))| entry(m, i as u64 + 1, *s))
            .collect();
        let members = members
            .iter()
            .filter_map(|m| {
                top.iter()
                    .find(|e| e["member"] == *m)
                    .map(|e| (m.to_string(), e.clone()))
            })
            .collect();
        Read {
            last: last.into(),
            lost: false,
            now: 1,
            entries,
            board: Some(BoardNow {
                size: top.len() as u64,
                top,
                members,
            }),
        }
    }

    fn subscribe(st: &mut State, query: &str, r: Read) -> Subscription {
        let req = Subscribe::from_query("b".into(), Some(query), None).unwrap();
        let now = st.apply("b", r);
        st.register("b", &req.filter, None, &now, Counted::new())
    }

    async fn got(s: &mut Subscription) -> Vec<(String, String, String)> {
        let batch = tokio::time::timeout(Duration::from_secs(1), s.next_batch())
            .await
            .unwrap()
            .unwrap();
        batch
            .iter()
            .map(|e| {
                let v = e.value();
                (
                    e.id.to_string(),
                    v["type"].as_str().unwrap().to_string(),
                    v["member"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn stream_ids_number_their_events() {
        let id = StreamId::parse("1700-2").unwrap();
        assert_eq!(id.first(), EventId::new(1700, 2 << 16));
        assert_eq!(id.end(), EventId::new(1700, (2 << 16) | 0xFFFF));
        assert!(
            StreamId::parse("1700-0").unwrap().end() < StreamId::parse("1700-1").unwrap().first()
        );
        assert!(StreamId::parse("x-1").is_none());
    }

    #[tokio::test]
    async fn a_batch_is_told_as_the_embedded_store_tells_a_write() {
        let mut st = State::default();
        let board = [("a", 30.0), ("b", 20.0)];
        let mut all = subscribe(&mut st, "", read("0-0", vec![], &board, &[]));
        let mut top = subscribe(&mut st, "top=2", read("0-0", vec![], &board, &[]));
        let mut me = subscribe(
            &mut st,
            "members=c&snapshot=true",
            read("0-0", vec![], &board, &["c"]),
        );
        let snap = me.next_batch().await.unwrap();
        assert_eq!(snap[0].kind, Kind::Snapshot);
        assert_eq!(snap[0].value()["members"][0]["rank"], Json::Null);

        let after = [("c", 40.0), ("a", 30.0), ("b", 20.0)];
        st.apply(
            "b",
            read("1800-0", vec![write("1800-0", &["c"])], &after, &["c"]),
        );
        assert_eq!(
            got(&mut all).await,
            [("1800-0".into(), "change".into(), "c".into())]
        );
        assert_eq!(
            got(&mut top).await,
            [
                ("1800-2".into(), "leave".into(), "b".into()),
                ("1800-3".into(), "enter".into(), "c".into()),
                ("1800-4".into(), "move".into(), "a".into()),
            ]
        );
        let ev = me.next_batch().await.unwrap();
        let v = ev[0].value();
        assert_eq!(
            (v["type"].clone(), v["rank"].clone()),
            (json!("member"), json!(1))
        );
        assert_eq!(v["previous_rank"], Json::Null);
        assert!(v.get("by").is_none(), "its own write: {v}");

        // Two writes of c and one of a in one batch: one change each, at
        // their last write, in that order.
        let after = [("a", 50.0), ("c", 45.0), ("b", 20.0)];
        let entries = vec![
            write("1900-0", &["c"]),
            write("1900-1", &["a"]),
            write("1901-0", &["c"]),
        ];
        st.apply("b", read("1901-0", entries, &after, &["a", "c"]));
        let ev = got(&mut all).await;
        assert_eq!(
            ev,
            [
                ("1900-65536".into(), "change".into(), "a".into()),
                ("1901-0".into(), "change".into(), "c".into()),
            ]
        );
        let ev = got(&mut top).await;
        assert_eq!((ev[0].1.as_str(), ev[0].2.as_str()), ("move", "a"));
        assert!(
            ev[0].0.starts_with("1901-"),
            "at the batch's last entry: {ev:?}"
        );

        // Entries lost: every change reloads; a top filter is compared.
        let mut r = read("2500-0", vec![], &[("z", 99.0), ("a", 50.0)], &["c"]);
        r.lost = true;
        st.apply("b", r);
        assert_eq!(got(&mut all).await[0].1, "reload");
        let ev = got(&mut top).await;
        assert_eq!((ev[0].1.as_str(), ev[0].2.as_str()), ("leave", "c"));
        let ev = got(&mut me).await;
        assert_eq!(ev[0].1, "member", "c is gone");

        // A lifecycle entry reaches every filter.
        let deleted = StreamEntry {
            id: StreamId::parse("2600-0").unwrap(),
            kind: "deleted".into(),
            fields: vec![],
        };
        let mut r = read("2600-0", vec![deleted], &[], &[]);
        r.board = None;
        st.apply("b", r);
        for s in [&mut all, &mut me] {
            assert_eq!(got(s).await[0].1, "deleted");
        }
        let ev = got(&mut top).await;
        assert_eq!(ev[0].1, "deleted");
        assert_eq!(ev.len(), 3, "then z and a leave: {ev:?}");
    }
}
