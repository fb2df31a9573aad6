//! Live events of the embedded store (docs/spec.md §4, "Live events"): who watches what of
//! each board ([`Feeds`], one [`Feed`] a watched board), and the events a
//! write makes, computed under the board's write lock (so in the log's
//! order) and pushed into the rings of the filters they concern.
//!
//! Cost: a write pays one atomic load while nobody watches any board, and
//! a map lookup while somebody watches another. On a watched board the
//! engine records the places members left and entered (its journal); each
//! step's span of places is looked up among the watched members, kept in
//! the board's order, so a write costs O(log n) a step plus the watched
//! members whose rank it shifts — never a scan of all watched members —
//! and the top places are read again only when a step falls within them.
//! Operations that rebuild a board (reset, re-sort, merge into it,
//! deletion) compare every watched member instead.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};

mod places;

use places::Places;

use super::Service;
use crate::outbox::HookBatch;
use crate::storage::record::LogOp;
use podium_core::api::{entry_out, member_str, Score};
use podium_core::error::ApiError;
use podium_core::events::limits::{self, Counted};
use podium_core::events::{Event, EventId, Filter, Kind, Ring, Subscription};
use podium_core::ops::Subscribe;
use podium_engine::{Board, Entry, Journal, OrderKey, Ranking, Scores, Webhook};

/// The watched boards.
#[derive(Default)]
pub(crate) struct Feeds {
    /// How many boards are watched: the one load an unwatched write pays.
    count: AtomicUsize,
    boards: RwLock<HashMap<String, Arc<Mutex<Feed>>>>,
}

impl Feeds {
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn get(&self, board: &str) -> Option<Arc<Mutex<Feed>>> {
        if !self.any() {
            return None;
        }
        self.boards.read().get(board).cloned()
    }

    fn get_or_create(&self, board: &str, at: EventId) -> Arc<Mutex<Feed>> {
        if let Some(f) = self.get(board) {
            return f;
        }
        let mut g = self.boards.write();
        g.entry(board.to_string())
            .or_insert_with(|| {
                self.count.fetch_add(1, Ordering::Relaxed);
                Arc::new(Mutex::new(Feed::new(board, at)))
            })
            .clone()
    }

    /// Every watched board's name.
    fn names(&self) -> Vec<String> {
        if !self.any() {
            return Vec::new();
        }
        self.boards.read().keys().cloned().collect()
    }

    /// Forgets a board's feed once nobody reads any of its filters.
    fn drop_if_unused(&self, board: &str) -> bool {
        let mut g = self.boards.write();
        let unused = g.get(board).is_some_and(|f| f.lock().subs.is_empty());
        if unused {
            g.remove(board);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        unused
    }
}

/// One filter of a board and its ring.
struct Sub {
    filter: Filter,
    ring: Arc<Ring>,
    /// The board's webhooks with this filter: they keep it alive without
    /// subscribers, and its events are logged for them.
    hooks: Vec<Webhook>,
    /// Counts it against the process's bound while it lives.
    _counted: Counted,
}

impl Sub {
    /// Nobody has read it for the retention time, and no webhook keeps it.
    fn expired(&self, now: Instant) -> bool {
        self.hooks.is_empty() && self.ring.expired(now)
    }

    /// Nobody reads it now, and no webhook keeps it: it may go to make
    /// room for a filter somebody reads.
    fn idle(&self) -> bool {
        self.hooks.is_empty() && self.ring.idle()
    }
}

/// A watched member: which filters watch it and what they last heard.
struct Watched {
    /// Shared with the feed's map: a filter of many members is one string.
    filters: Vec<Arc<str>>,
    /// Its place on the board (`None`: not on it).
    key: Option<OrderKey>,
    /// Its rank and values as last told (`None`: not on the board).
    seen: Option<Seen>,
}

/// What a watched member's subscribers last heard of it: kept small, as a
/// board may have many watched members (the event itself is written from
/// the board when it changes).
#[derive(Clone, Copy, PartialEq)]
struct Seen {
    rank: u64,
    scores: Scores,
}

impl Seen {
    fn of(b: &Board, member: &[u8]) -> Option<Seen> {
        Some(Seen {
            rank: b.rank(member)?,
            scores: b.scores(member)?,
        })
    }

    /// The first key's value, as entries show `score`.
    fn score(&self) -> Value {
        serde_json::to_value(Score(self.scores.first().as_f64())).unwrap_or(Value::Null)
    }
}

/// Everything the subscribers of one board watch.
pub(crate) struct Feed {
    board: String,
    /// The newest event id given (or where the feed started).
    last: EventId,
    /// By [`Filter::key`].
    subs: HashMap<Arc<str>, Sub>,
    watched: HashMap<Box<[u8]>, Watched>,
    /// The watched members on the board, by place.
    by_key: Places,
    /// `top` sizes asked for → the filters asking.
    tops: BTreeMap<u32, Vec<Arc<str>>>,
    /// The best places, as many as the largest `top` asks for.
    top: Vec<Map<String, Value>>,
    /// Events made and not yet in their rings.
    out: Vec<(Arc<Ring>, Arc<Event>)>,
    /// Events made for filters with webhooks, not yet logged.
    hook_out: Vec<(Arc<str>, Arc<Event>)>,
    /// The place of the last of `top` when `top` is full: a step after it
    /// cannot change the top places.
    top_bound: Option<OrderKey>,
}

/// A member's entry as an event carries it (member, score, scores, rank,
/// name).
fn entry_json(b: &Board, keys: &[String], member: &[u8]) -> Option<Map<String, Value>> {
    entry_map(&b.entry_of(member)?, keys)
}

/// An entry as an event carries it.
fn entry_map(e: &Entry, keys: &[String]) -> Option<Map<String, Value>> {
    match serde_json::to_value(entry_out(e, keys, false)) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Whether two entries differ in what events report: rank or values.
fn moved(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    ["rank", "score", "scores"]
        .iter()
        .any(|k| a.get(*k) != b.get(*k))
}

fn field(e: Option<&Map<String, Value>>, k: &str) -> Value {
    e.and_then(|e| e.get(k)).cloned().unwrap_or(Value::Null)
}

impl Feed {
    fn new(board: &str, at: EventId) -> Feed {
        Feed {
            board: board.to_string(),
            last: at,
            subs: HashMap::new(),
            watched: HashMap::new(),
            by_key: Places::default(),
            tops: BTreeMap::new(),
            top: Vec::new(),
            out: Vec::new(),
            hook_out: Vec::new(),
            top_bound: None,
        }
    }

    fn next_id(&mut self, lsn: u64) -> EventId {
        self.last = self.last.next_for(lsn);
        self.last
    }

    fn event(&mut self, lsn: u64, kind: Kind, body: Map<String, Value>) -> Arc<Event> {
        let id = self.next_id(lsn);
        Event::new(id, kind, &self.board, body)
    }

    fn max_top(&self) -> usize {
        self.tops.keys().next_back().map_or(0, |n| *n as usize)
    }

    /// Makes sure `b` records its changes for this feed: a board not
    /// watched until now (a board that came back) is compared as a whole.
    fn watch(&mut self, b: &mut Board) {
        if !b.is_watched() {
            b.watch();
            if !self.subs.is_empty() {
                self.apply(Some(b), &whole(), 0, true);
            }
        }
    }

    /// Queues `ev` for filter `key`'s ring ([`Feed::flush`] delivers).
    fn push_to(&mut self, key: &str, ev: &Arc<Event>) {
        if let Some((k, s)) = self.subs.get_key_value(key) {
            self.out.push((s.ring.clone(), ev.clone()));
            if !s.hooks.is_empty() {
                self.hook_out.push((k.clone(), ev.clone()));
            }
        }
    }

    /// The events made for webhooks since the last call, by hook (each
    /// hook's in order), with the endpoint each goes to.
    fn take_hook_batches(&mut self) -> Vec<HookBatch> {
        let mut batches: Vec<HookBatch> = Vec::new();
        for (key, ev) in std::mem::take(&mut self.hook_out) {
            let Some(sub) = self.subs.get(&key) else {
                continue;
            };
            for h in &sub.hooks {
                match batches.iter_mut().find(|b| b.name == h.name) {
                    Some(b) => b.events.push(ev.clone()),
                    None => batches.push(HookBatch {
                        name: h.name.clone(),
                        url: h.url.clone(),
                        secret: h.secret.clone(),
                        events: vec![ev.clone()],
                    }),
                }
            }
        }
        batches
    }

    /// Makes the board's filters match its webhooks: each hook's filter
    /// registered (kept without subscribers), hooks no longer configured
    /// forgotten (their due deliveries stay in the outbox).
    fn set_hooks(&mut self, b: Option<&Board>, hooks: &[Webhook]) {
        for s in self.subs.values_mut() {
            s.hooks.clear();
        }
        for h in hooks {
            let Ok(filter) = Filter::new(h.top, h.members.clone(), false) else {
                continue;
            };
            // The board's config bounds its hooks: never refused here.
            self.register(b, &filter, Counted::new());
            if let Some(s) = self.subs.get_mut(filter.key().as_str()) {
                s.hooks.push(h.clone());
            }
        }
    }

    /// Hands each ring its queued events at once: its subscribers wake
    /// once for a write's events, however many it made.
    fn flush(&mut self) {
        if self.out.is_empty() {
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        // Stable: each ring's events stay in id order.
        out.sort_by_key(|(r, _)| Arc::as_ptr(r) as usize);
        let mut i = 0;
        while i < out.len() {
            let ring = out[i].0.clone();
            let n = out[i..]
                .iter()
                .take_while(|(r, _)| Arc::ptr_eq(r, &ring))
                .count();
            ring.extend(out[i..i + n].iter().map(|(_, e)| e.clone()));
            i += n;
        }
    }

    // ------------------------------------------------------- subscribers

    /// Whether `filter` may be added, within the bounds on filters
    /// ([`limits`]): one already there may always be joined; else filters
    /// nobody reads go first to make room. Answers the filter's count.
    fn admit(&mut self, filter: &Filter) -> Result<Counted, ApiError> {
        if self.subs.contains_key(filter.key().as_str()) {
            return Ok(Counted::new());
        }
        let busiest = |f: &Feed| {
            filter
                .members
                .iter()
                .map(|m| f.watched.get(m.as_bytes()).map_or(0, |w| w.filters.len()))
                .max()
                .unwrap_or(0)
        };
        match limits::admit(&self.board, self.subs.len(), busiest(self)) {
            Ok(c) => Ok(c),
            Err(_) => {
                self.drop_where(Sub::idle);
                limits::admit(&self.board, self.subs.len(), busiest(self))
            }
        }
    }

    /// Adds `filter` unless it is there, answering its ring; `counted`
    /// counts it (dropped when the filter is there already).
    fn register(&mut self, b: Option<&Board>, filter: &Filter, counted: Counted) -> Arc<Ring> {
        let key: Arc<str> = filter.key().into();
        if !self.subs.contains_key(&key) {
            let ring = Ring::new(&self.board, self.last);
            for m in &filter.members {
                let m: Box<[u8]> = m.as_bytes().into();
                let w = self.watched.entry(m.clone()).or_insert_with(|| Watched {
                    filters: Vec::new(),
                    key: b.and_then(|b| b.order_key(&m)),
                    seen: b.and_then(|b| Seen::of(b, &m)),
                });
                w.filters.push(key.clone());
                if let Some(k) = &w.key {
                    self.by_key.insert(k.clone(), m);
                }
            }
            if let Some(n) = filter.top {
                let grows = n as usize > self.max_top();
                self.tops.entry(n).or_default().push(key.clone());
                if grows {
                    self.read_top(b);
                }
            }
            self.subs.insert(
                key.clone(),
                Sub {
                    filter: filter.clone(),
                    ring,
                    hooks: Vec::new(),
                    _counted: counted,
                },
            );
        }
        self.subs[&key].ring.clone()
    }

    /// The state a filter watches, now.
    fn snapshot(&self, b: Option<&Board>, filter: &Filter) -> Arc<Event> {
        let mut body = Map::new();
        body.insert("exists".into(), b.is_some().into());
        body.insert("size".into(), b.map_or(0, |b| b.len()).into());
        if let Some(n) = filter.top {
            let top: Vec<Value> = self
                .top
                .iter()
                .take(n as usize)
                .map(|e| Value::Object(e.clone()))
                .collect();
            body.insert("top".into(), top.into());
        }
        if !filter.members.is_empty() {
            let keys = b.map(|b| b.key_names()).unwrap_or_default();
            let members: Vec<Value> = filter
                .members
                .iter()
                .map(
                    |m| match b.and_then(|b| entry_json(b, &keys, m.as_bytes())) {
                        Some(e) => Value::Object(e),
                        None => serde_json::json!({ "member": m, "rank": null, "score": null }),
                    },
                )
                .collect();
            body.insert("members".into(), members.into());
        }
        Event::new(self.last, Kind::Snapshot, &self.board, body)
    }

    /// Whether [`Feed::sweep`] has something to drop (or the feed is empty).
    fn any_expired(&self, now: Instant) -> bool {
        self.subs.is_empty() || self.subs.values().any(|s| s.expired(now))
    }

    /// Drops filters nobody has read for the retention time; whether any
    /// is left.
    fn sweep(&mut self, now: Instant) -> bool {
        self.drop_where(|s| s.expired(now))
    }

    /// Drops the filters `gone` says; whether any is left.
    fn drop_where(&mut self, gone: impl Fn(&Sub) -> bool) -> bool {
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
                let m = m.as_bytes();
                let empty = self.watched.get_mut(m).is_some_and(|w| {
                    w.filters.retain(|k| *k != key);
                    w.filters.is_empty()
                });
                if empty {
                    if let Some(w) = self.watched.remove(m) {
                        if let Some(k) = w.key {
                            self.by_key.remove(&k);
                        }
                    }
                }
            }
            if let Some(n) = sub.filter.top {
                if let Some(v) = self.tops.get_mut(&n) {
                    v.retain(|k| *k != key);
                    if v.is_empty() {
                        self.tops.remove(&n);
                    }
                }
                // Read again at the next step that may change it.
                self.top.truncate(self.max_top());
                self.top_bound = None;
            }
        }
        !self.subs.is_empty()
    }

    // ------------------------------------------------------------ writes

    /// The best places again (their events are the caller's).
    fn read_top(&mut self, b: Option<&Board>) {
        let max = self.max_top();
        self.top_bound = None;
        self.top = match b {
            Some(b) if max > 0 => {
                let keys = b.key_names();
                let entries = b.range_by_rank(1, max as u64, false);
                if entries.len() == max {
                    self.top_bound = entries.last().and_then(|e| b.order_key(&e.member));
                }
                entries.iter().filter_map(|e| entry_map(e, &keys)).collect()
            }
            _ => Vec::new(),
        };
    }

    /// The events of one write (or of a change to the board as a whole:
    /// `journal.all`), `b` being the board after it (`None`: gone).
    /// `reload`: when the board changed as a whole, tell the `everything`
    /// filter to read it again (a lifecycle event that leaves it empty or
    /// gone says enough).
    fn apply(&mut self, b: Option<&Board>, journal: &Journal, lsn: u64, reload: bool) {
        let everything = self.subs.contains_key("");
        let watching = !self.watched.is_empty();
        // Key names label the entries of watched members and of every
        // change; a feed of top places alone reads them in `read_top`.
        let keys = b
            .filter(|_| watching || everything)
            .map(|b| b.key_names())
            .unwrap_or_default();
        let ranking = b.map_or(Ranking::Unique, |b| b.ranking());
        let all = journal.all || b.is_none();
        // Watched members whose rank may have changed, and the members the
        // write itself touched (for the `everything` filter), in order.
        // Most writes touch nothing watched: what is only needed for an
        // event is not built for them.
        let mut maybe: Vec<Box<[u8]>> = Vec::new();
        let mut touched: Vec<&[u8]> = Vec::new();
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut top_hit = all;
        if all {
            maybe.extend(self.watched.keys().cloned());
            self.by_key.clear();
            for (m, w) in self.watched.iter_mut() {
                w.key = b.and_then(|b| b.order_key(m));
                if let Some(k) = &w.key {
                    self.by_key.insert(k.clone(), m.clone());
                }
            }
        } else {
            let tops = !self.tops.is_empty();
            let t = &journal.touches;
            let mut i = 0;
            while i < t.len() {
                // An update is its member leaving, then entering.
                let (old, new) = if !t[i].entered
                    && t.get(i + 1)
                        .is_some_and(|n| n.entered && n.member == t[i].member)
                {
                    i += 2;
                    (Some(&t[i - 2]), Some(&t[i - 1]))
                } else {
                    i += 1;
                    let x = &t[i - 1];
                    if x.entered {
                        (None, Some(x))
                    } else {
                        (Some(x), None)
                    }
                };
                let member: &[u8] = old.or(new).map_or(&[], |x| &x.member);
                if tops && !top_hit {
                    top_hit = [old, new]
                        .into_iter()
                        .flatten()
                        .any(|x| self.top_bound.as_ref().is_none_or(|bound| x.key <= *bound));
                }
                if watching {
                    self.shifted(ranking, old, new, &mut maybe);
                    if let Some(w) = self.watched.get_mut(member) {
                        if let Some(k) = w.key.take() {
                            self.by_key.remove(&k);
                        }
                        w.key = new.map(|n| n.key.clone());
                        if let Some(k) = &w.key {
                            self.by_key.insert(k.clone(), member.into());
                        }
                        maybe.push(member.into());
                    }
                }
                if everything && seen.insert(member) {
                    touched.push(member);
                }
            }
        }
        // One member's write that moved others: say whose.
        let by = match journal.touches.split_first() {
            Some((first, rest))
                if !all && !maybe.is_empty() && rest.iter().all(|x| x.member == first.member) =>
            {
                Some(member_str(&first.member))
            }
            _ => None,
        };

        // Watched members.
        let mut told: HashSet<&[u8]> = HashSet::new();
        for m in &maybe {
            let m: &[u8] = m;
            if !told.insert(m) {
                continue;
            }
            let now = b.and_then(|b| Seen::of(b, m));
            let Some(w) = self.watched.get(m) else {
                continue;
            };
            if w.seen == now {
                continue;
            }
            let entry = b
                .filter(|_| now.is_some())
                .and_then(|b| entry_json(b, &keys, m));
            let mut body = Map::new();
            body.insert("member".into(), member_str(m).into());
            body.insert("rank".into(), field(entry.as_ref(), "rank"));
            body.insert("score".into(), field(entry.as_ref(), "score"));
            if let Some(s) = entry.as_ref().and_then(|e| e.get("scores")) {
                body.insert("scores".into(), s.clone());
            }
            if let Some(n) = entry.as_ref().and_then(|e| e.get("name")) {
                body.insert("name".into(), n.clone());
            }
            body.insert(
                "previous_rank".into(),
                w.seen.map_or(Value::Null, |p| p.rank.into()),
            );
            body.insert(
                "previous_score".into(),
                w.seen.map_or(Value::Null, |p| p.score()),
            );
            if let Some(by) = &by {
                if by.as_bytes() != m {
                    body.insert("by".into(), by.clone().into());
                }
            }
            let filters = w.filters.clone();
            let ev = self.event(lsn, Kind::Member, body);
            for f in &filters {
                self.push_to(f, &ev);
            }
            if let Some(w) = self.watched.get_mut(m) {
                w.seen = now;
            }
        }

        // Every change.
        if self.subs.contains_key("") {
            if all && reload {
                let mut body = Map::new();
                body.insert(
                    "reason".into(),
                    "the board changed as a whole: reload the state".into(),
                );
                let ev = self.event(lsn, Kind::Reload, body);
                self.push_to("", &ev);
            } else if !all {
                for m in &touched {
                    let body = match b.and_then(|b| entry_json(b, &keys, m)) {
                        Some(e) => e,
                        None => {
                            let mut body = Map::new();
                            body.insert("member".into(), member_str(m).into());
                            body.insert("removed".into(), true.into());
                            body
                        }
                    };
                    let ev = self.event(lsn, Kind::Change, body);
                    self.push_to("", &ev);
                }
            }
        }

        // The top places.
        if top_hit && !self.tops.is_empty() {
            let before = std::mem::take(&mut self.top);
            self.read_top(b);
            let sizes: Vec<(u32, Vec<Arc<str>>)> =
                self.tops.iter().map(|(n, v)| (*n, v.clone())).collect();
            for (n, filters) in sizes {
                let n = n as usize;
                let old = &before[..before.len().min(n)];
                let new: Vec<Map<String, Value>> = self.top[..self.top.len().min(n)].to_vec();
                for ev in self.top_diff(lsn, old, &new) {
                    for f in &filters {
                        self.push_to(f, &ev);
                    }
                }
            }
        }
        self.flush();
    }

    /// The events that turn the top places `old` into `new`: leaves, then
    /// entries and moves in rank order.
    fn top_diff(
        &mut self,
        lsn: u64,
        old: &[Map<String, Value>],
        new: &[Map<String, Value>],
    ) -> Vec<Arc<Event>> {
        let name = |e: &Map<String, Value>| e.get("member").cloned().unwrap_or(Value::Null);
        let was: HashMap<String, &Map<String, Value>> = old
            .iter()
            .map(|e| (name(e).as_str().unwrap_or("").to_string(), e))
            .collect();
        let is: HashSet<String> = new
            .iter()
            .map(|e| name(e).as_str().unwrap_or("").to_string())
            .collect();
        let mut out = Vec::new();
        for e in old {
            let m = name(e);
            if !is.contains(m.as_str().unwrap_or("")) {
                let mut body = Map::new();
                body.insert("member".into(), m);
                body.insert("previous_rank".into(), field(Some(e), "rank"));
                out.push(self.event(lsn, Kind::Leave, body));
            }
        }
        for e in new {
            let m = name(e);
            match was.get(m.as_str().unwrap_or("")) {
                None => out.push(self.event(lsn, Kind::Enter, e.clone())),
                Some(prev) if moved(prev, e) => {
                    let mut body = e.clone();
                    body.insert("previous_rank".into(), field(Some(prev), "rank"));
                    body.insert("previous_score".into(), field(Some(prev), "score"));
                    out.push(self.event(lsn, Kind::Move, body));
                }
                Some(_) => {}
            }
        }
        out
    }

    /// The watched members whose rank one step may shift: a member
    /// leaving its place `old` and/or entering at `new`.
    fn shifted(
        &self,
        ranking: Ranking,
        old: Option<&podium_engine::Touch>,
        new: Option<&podium_engine::Touch>,
        out: &mut Vec<Box<[u8]>>,
    ) {
        use Bound::{Excluded, Included, Unbounded};
        if self.by_key.is_empty() {
            return;
        }
        // Bounds made of values alone ("after every member holding
        // these") are built here; the others borrow the journal's keys.
        let (lo_of, hi_of);
        let span: Option<(Bound<&OrderKey>, Bound<&OrderKey>)> = match (ranking, old, new) {
            // Left and entered at the same position: nobody was passed
            // (the common small step), so nobody's rank moved — no search.
            (Ranking::Unique, Some(o), Some(n)) => (o.pos != n.pos).then(|| {
                let (lo, hi) = if o.key <= n.key { (o, n) } else { (n, o) };
                (Excluded(&lo.key), Excluded(&hi.key))
            }),
            (Ranking::Unique, Some(x), None) | (Ranking::Unique, None, Some(x)) => {
                Some((Excluded(&x.key), Unbounded))
            }
            (_, Some(o), Some(n)) => {
                let (lo, hi) = if o.key.codes <= n.key.codes {
                    (&o.key.codes, &n.key.codes)
                } else {
                    (&n.key.codes, &o.key.codes)
                };
                let after = |c: &[u64]| OrderKey::last_of(c);
                match ranking {
                    Ranking::Dense => match (o.edge, n.edge) {
                        (true, true) if lo < hi => {
                            lo_of = after(lo);
                            hi_of = after(hi);
                            Some((Excluded(&lo_of), Included(&hi_of)))
                        }
                        (true, false) => {
                            lo_of = after(&o.key.codes);
                            Some((Excluded(&lo_of), Unbounded))
                        }
                        (false, true) => {
                            lo_of = after(&n.key.codes);
                            Some((Excluded(&lo_of), Unbounded))
                        }
                        _ => None,
                    },
                    _ if lo < hi => {
                        lo_of = after(lo);
                        hi_of = after(hi);
                        Some((Excluded(&lo_of), Included(&hi_of)))
                    }
                    _ => None,
                }
            }
            (_, Some(x), None) | (_, None, Some(x)) => {
                if ranking != Ranking::Dense || x.edge {
                    lo_of = OrderKey::last_of(&x.key.codes);
                    Some((Excluded(&lo_of), Unbounded))
                } else {
                    None
                }
            }
            (_, None, None) => None,
        };
        if let Some(span) = span {
            out.extend(self.by_key.range(span).map(Box::from));
        }
    }

    /// A lifecycle event, to every filter.
    fn lifecycle(&mut self, lsn: u64, kind: Kind, body: Map<String, Value>) {
        let ev = self.event(lsn, kind, body);
        let keys: Vec<Arc<str>> = self.subs.keys().cloned().collect();
        for k in &keys {
            self.push_to(k, &ev);
        }
    }
}

impl Service {
    /// Where a new feed starts: after every event of every write logged so
    /// far, as `LSN+1-0` (the next write's events then count on from
    /// there: `LSN+1-1`, …), so an id a subscriber kept from an earlier
    /// feed of the board (before a restart, or before the feed was
    /// dropped) is never above the new feed's ids, and every id keeps the
    /// `LSN-N` form.
    fn feed_start(&self) -> EventId {
        EventId::new(self.last_lsn() + 1, 0)
    }

    /// `subscribe`: registers the filter under the board's lock, so its
    /// snapshot and its first event follow each other with nothing between.
    pub fn subscribe(&self, req: &Subscribe) -> Result<Subscription, ApiError> {
        req.check()?;
        let _gate = self.shared();
        let feed = self.feeds.get_or_create(&req.board, self.feed_start());
        let board = self.store.get(&req.board);
        let mut g = board.as_ref().map(|b| b.write());
        let mut f = feed.lock();
        if let Some(b) = g.as_deref_mut() {
            f.watch(b);
        }
        f.sweep(Instant::now());
        let counted = f.admit(&req.filter)?;
        let ring = f.register(g.as_deref(), &req.filter, counted);
        Ok(ring.join(f.last, req.since, &req.filter, || {
            f.snapshot(g.as_deref(), &req.filter)
        }))
    }

    /// The events of a write to `board` just applied to `b` (still locked)
    /// and logged as `lsn`. A re-sort marked the journal as a whole; its
    /// `config` event comes with the `Put` the update logs after it.
    /// Returns the LSN of the record logging its webhooks' events, if it
    /// made any: the write is acknowledged once that record is durable.
    pub(crate) fn board_events(&self, board: &str, b: &mut Board, lsn: u64) -> Option<u64> {
        let feed = self.feeds.get(board)?;
        let mut f = feed.lock();
        let journal = if b.is_watched() {
            b.take_journal()
        } else {
            b.watch();
            whole()
        };
        if !journal.is_empty() {
            f.apply(Some(b), &journal, lsn, true);
        }
        b.recycle_journal(journal);
        self.log_hook_events(board, &mut f)
    }

    /// Logs the events `f` made for webhooks and queues them for delivery;
    /// the record's LSN, if there were any.
    fn log_hook_events(&self, board: &str, f: &mut Feed) -> Option<u64> {
        let hooks = f.take_hook_batches();
        if hooks.is_empty() {
            return None;
        }
        {
            let mut o = self.outbox.lock();
            for h in &hooks {
                o.add(board, h);
            }
        }
        let lsn = self.append_record(&LogOp::HookEvents {
            board: board.to_string(),
            hooks,
        });
        self.outbox_notify.notify_waiters();
        Some(lsn)
    }

    /// Makes `board`'s feed follow the webhooks its config names now (on
    /// start, and after each record that may have changed them).
    pub(crate) fn sync_hooks(&self, board: &str) -> Option<u64> {
        let b = self.store.get(board);
        let hooks = b
            .as_ref()
            .map(|b| b.read().config().webhooks.clone())
            .unwrap_or_default();
        if hooks.is_empty() && self.feeds.get(board).is_none() {
            return None;
        }
        let feed = self.feeds.get_or_create(board, self.feed_start());
        let mut g = b.as_ref().map(|b| b.write());
        let mut f = feed.lock();
        if let Some(b) = g.as_deref_mut() {
            f.watch(b);
        }
        f.set_hooks(g.as_deref(), &hooks);
        f.flush();
        self.log_hook_events(board, &mut f)
    }

    /// The events of a record that changes boards as a whole (creation,
    /// config, reset, deletion, rename, copy, merge, flush), appended as
    /// `lsn` with the gate held exclusively and no board locked.
    ///
    /// Returns the LSN of the last record logging webhook events, if any.
    pub(crate) fn structural_events(&self, op: &LogOp, lsn: u64) -> Option<u64> {
        // Boards whose webhooks a record may have changed.
        let configured: Vec<&str> = match op {
            LogOp::Create { board, config, .. } | LogOp::Put { board, config } => {
                if config.webhooks.is_empty() && self.feeds.get(board).is_none() {
                    Vec::new()
                } else {
                    vec![board.as_str()]
                }
            }
            LogOp::RenameKey { to, .. } | LogOp::CopyKey { to, .. } => {
                std::str::from_utf8(to).ok().into_iter().collect()
            }
            LogOp::Rename { pairs } => pairs
                .iter()
                .filter_map(|(_, to)| std::str::from_utf8(to).ok())
                .collect(),
            _ => Vec::new(),
        };
        let mut logged = self.structural_feed_events(op, lsn);
        for board in configured {
            logged = logged.max(self.sync_hooks(board));
        }
        // A board gone takes its hooks with it (after their `deleted`).
        for board in self.feeds.names() {
            let hooked = |f: Arc<Mutex<Feed>>| f.lock().subs.values().any(|s| !s.hooks.is_empty());
            if self.store.get(&board).is_none() && self.feeds.get(&board).is_some_and(hooked) {
                logged = logged.max(self.sync_hooks(&board));
            }
        }
        logged
    }

    fn structural_feed_events(&self, op: &LogOp, lsn: u64) -> Option<u64> {
        if !self.feeds.any() {
            return None;
        }
        // A transaction's parts come here one by one, as each is appended
        // ([`Service::append`]); its unit record is written to the log
        // directly.
        let mut logged = None;
        let mut life = |board: &str, kind: Option<Kind>, body: Map<String, Value>| {
            logged = logged.max(self.lifecycle(board, lsn, kind, body));
        };
        match op {
            LogOp::Create { board, .. } => life(board, Some(Kind::Created), Map::new()),
            LogOp::Put { board, config } => {
                let mut body = Map::new();
                body.insert("config".into(), config.to_public_json());
                life(board, Some(Kind::Config), body);
            }
            LogOp::Delete { board } => life(board, Some(Kind::Deleted), Map::new()),
            LogOp::Archive { board, archive } => {
                let mut body = Map::new();
                body.insert("archive".into(), archive.clone().into());
                life(board, Some(Kind::Reset), body);
            }
            // The content replaced: compared as a whole, no event of its own.
            LogOp::Combine { dest, .. } => life(dest, None, Map::new()),
            LogOp::FlushAll => {
                for board in self.feeds.names() {
                    life(&board, Some(Kind::Deleted), Map::new());
                }
            }
            _ => {
                // Keys gone (deleted, renamed away, replaced by a string),
                // then keys that came (renamed or copied here).
                let (from, to): (Vec<&[u8]>, Vec<&[u8]>) = match op {
                    LogOp::DelKey { key } | LogOp::SetString { key, .. } => (vec![key], vec![]),
                    LogOp::RenameKey { from, to, .. } => (vec![from], vec![to]),
                    LogOp::CopyKey { to, .. } => (vec![], vec![to]),
                    LogOp::MSet { pairs } => (pairs.iter().map(|(k, _)| &k[..]).collect(), vec![]),
                    LogOp::Rename { pairs } => (
                        pairs.iter().map(|(k, _)| &k[..]).collect(),
                        pairs.iter().map(|(_, k)| &k[..]).collect(),
                    ),
                    _ => (vec![], vec![]),
                };
                let watched = |key: &[u8], exists: bool| match std::str::from_utf8(key) {
                    Ok(b) => self.feeds.get(b).is_some() && self.store.get(b).is_some() == exists,
                    Err(_) => false,
                };
                for key in from.into_iter().filter(|k| watched(k, false)) {
                    life(
                        std::str::from_utf8(key).unwrap_or_default(),
                        Some(Kind::Deleted),
                        Map::new(),
                    );
                }
                for key in to.into_iter().filter(|k| watched(k, true)) {
                    life(
                        std::str::from_utf8(key).unwrap_or_default(),
                        Some(Kind::Created),
                        Map::new(),
                    );
                }
            }
        }
        logged
    }

    /// A lifecycle event of `board` (if any), then every watched member and
    /// the top places compared with the board as it now is. Returns the
    /// LSN of the record logging its webhooks' events, if any.
    fn lifecycle(
        &self,
        board: &str,
        lsn: u64,
        kind: Option<Kind>,
        body: Map<String, Value>,
    ) -> Option<u64> {
        let feed = self.feeds.get(board)?;
        let b = self.store.get(board);
        let mut g = b.as_ref().map(|b| b.write());
        let mut f = feed.lock();
        if let Some(kind) = kind {
            f.lifecycle(lsn, kind, body);
        }
        let mut changed = false;
        if let Some(b) = g.as_deref_mut() {
            b.watch();
            changed = !b.take_journal().is_empty();
        }
        let reload = changed && g.as_deref().is_some_and(|b| !b.is_empty());
        f.apply(g.as_deref(), &whole(), lsn, reload);
        self.log_hook_events(board, &mut f)
    }

    /// Once a second: forgets filters nobody read for the retention time,
    /// and stops watching boards left without any.
    pub fn sweep_events(&self) {
        let now = Instant::now();
        for board in self.feeds.names() {
            let Some(feed) = self.feeds.get(&board) else {
                continue;
            };
            // Most seconds nothing expired: found out without the board's
            // lock, which its writers wait for.
            if !feed.lock().any_expired(now) {
                continue;
            }
            let b = self.store.get(&board);
            let mut g = b.as_ref().map(|b| b.write());
            let left = feed.lock().sweep(now);
            if !left && self.feeds.drop_if_unused(&board) {
                if let Some(b) = g.as_deref_mut() {
                    b.unwatch();
                }
            }
        }
    }
}

/// A journal saying "compare everything".
fn whole() -> Journal {
    Journal {
        touches: Vec::new(),
        all: true,
    }
}

/// The deliveries the store owes its boards' webhooks: read by the
/// server's dispatcher, acknowledged into the log (not waited for: a
/// delivery acknowledged and then made again after a crash is still
/// "at least once").
impl podium_core::events::hooks::Outbox for Service {
    fn due(&self) -> Vec<(String, String)> {
        self.outbox.lock().due()
    }

    fn peek(
        &self,
        board: &str,
        hook: &str,
        max: usize,
    ) -> Option<podium_core::events::hooks::Pending> {
        self.outbox.lock().peek(board, hook, max)
    }

    fn ack(&self, board: &str, hook: &str, upto: EventId) {
        // Beside ordinary writes, so a snapshot's copy of the outbox and
        // its log position agree.
        let _gate = self.shared();
        self.outbox.lock().ack(board, hook, upto);
        self.append_record(&LogOp::HookAck {
            board: board.to_string(),
            hook: hook.to_string(),
            upto,
        });
    }

    fn notify(&self) -> &tokio::sync::Notify {
        &self.outbox_notify
    }
}
