//! Live events against a naive model: random writes through the store's
//! HTTP/RPC paths and its Redis paths (submit, increments, batches, ZADD,
//! removals by id, rank and score, pops, resets, deletions, re-sorting
//! config changes, caps that evict), subscribers with random filters
//! (top N, watched members, everything), subscribed with and without a
//! snapshot, disconnected and resumed from the last id they saw. After
//! every step each connected subscriber's events, replayed onto what it
//! knew, must give exactly the state the model gives for its filter; ids
//! only grow, and a resume within the ring replays without `reload`, so
//! there is no gap and no duplicate.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use podium_core::api::SubmitIn;
use podium_core::events::{Event, EventId, Filter, Kind, Subscription};
use podium_core::ops::{RangeBy, RemoveRange, Subscribe};
use podium_store::service::Service;
use proptest::prelude::*;
use serde_json::Value;

const BOARD: &str = "b";
const POOL: usize = 10;

fn member(i: usize) -> String {
    format!("m{i}")
}

#[derive(Debug, Clone)]
enum Step {
    Set(usize, i8),
    Incr(usize, i8),
    Batch(Vec<(usize, i8)>),
    Zadd(usize, i8),
    Remove(Vec<usize>),
    RemoveRanks(u64, u64),
    RemoveScores(i8, i8),
    Pop(u64, bool),
    Reset,
    Delete,
    Config {
        asc: bool,
        ranking: u8,
        /// 0 member, 1 first, 2 last.
        tiebreak: u8,
        max: Option<u64>,
    },
    OtherBoard(usize, i8),
    Subscribe {
        top: Option<u32>,
        members: Vec<usize>,
        snapshot: bool,
    },
    Disconnect(usize),
    Resume(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let m = 0..POOL;
    let s = -3i8..4;
    prop_oneof![
        6 => (m.clone(), s.clone()).prop_map(|(m, s)| Step::Set(m, s)),
        3 => (m.clone(), s.clone()).prop_map(|(m, s)| Step::Incr(m, s)),
        2 => prop::collection::vec((m.clone(), s.clone()), 1..5).prop_map(Step::Batch),
        2 => (m.clone(), s.clone()).prop_map(|(m, s)| Step::Zadd(m, s)),
        2 => prop::collection::vec(m.clone(), 1..3).prop_map(Step::Remove),
        1 => (1u64..5, 0u64..3).prop_map(|(a, n)| Step::RemoveRanks(a, a + n)),
        1 => (s.clone(), 0i8..2).prop_map(|(a, n)| Step::RemoveScores(a, a + n)),
        1 => (1u64..3, any::<bool>()).prop_map(|(n, w)| Step::Pop(n, w)),
        1 => Just(Step::Reset),
        1 => Just(Step::Delete),
        1 => (any::<bool>(), 0u8..3, 0u8..3, prop::option::of(3u64..7))
            .prop_map(|(asc, ranking, tiebreak, max)| Step::Config { asc, ranking, tiebreak, max }),
        1 => (m.clone(), s.clone()).prop_map(|(m, s)| Step::OtherBoard(m, s)),
        2 => (prop::option::of(1u32..6), prop::collection::vec(m, 0..3), any::<bool>())
            .prop_map(|(top, members, snapshot)| Step::Subscribe { top, members, snapshot }),
        1 => (0usize..8).prop_map(Step::Disconnect),
        1 => (0usize..8).prop_map(Step::Resume),
    ]
}

/// The board as a naive model holds it.
#[derive(Clone)]
struct Model {
    exists: bool,
    asc: bool,
    /// 0 unique, 1 competition, 2 dense.
    ranking: u8,
    max: Option<u64>,
    /// 0 member, 1 first, 2 last.
    tiebreak: u8,
    scores: BTreeMap<String, f64>,
    /// Each member's arrival sequence: set when it enters or its score
    /// changes (the `first`/`last` tiebreaks order by it).
    seqs: HashMap<String, u64>,
    next_seq: u64,
}

impl Model {
    fn new() -> Model {
        Model {
            exists: false,
            asc: false,
            ranking: 0,
            max: None,
            tiebreak: 0,
            scores: BTreeMap::new(),
            seqs: HashMap::new(),
            next_seq: 0,
        }
    }

    /// Sets a member's score as the engine does: a new member or a
    /// changed score takes the next sequence.
    fn set(&mut self, m: String, s: f64) {
        if self.scores.get(&m) != Some(&s) {
            self.next_seq += 1;
            self.seqs.insert(m.clone(), self.next_seq);
        }
        self.scores.insert(m, s);
    }

    fn remove(&mut self, m: &str) {
        self.scores.remove(m);
        self.seqs.remove(m);
    }

    /// Members best first: by score in the board's direction, ties by
    /// member bytes in the same direction.
    fn ordered(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = self.scores.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| {
            let by_score = a.1.partial_cmp(&b.1).unwrap();
            let by_score = if self.asc {
                by_score
            } else {
                by_score.reverse()
            };
            let tie = match self.tiebreak {
                0 if self.asc => a.0.cmp(&b.0),
                0 => b.0.cmp(&a.0),
                1 => self.seqs[&a.0].cmp(&self.seqs[&b.0]),
                _ => self.seqs[&b.0].cmp(&self.seqs[&a.0]),
            };
            by_score.then(tie)
        });
        v
    }

    fn better(&self, a: f64, b: f64) -> bool {
        if self.asc {
            a < b
        } else {
            a > b
        }
    }

    fn ranks(&self) -> Vec<(String, u64, f64)> {
        let v = self.ordered();
        let mut distinct: Vec<f64> = v.iter().map(|e| e.1).collect();
        distinct.dedup();
        v.iter()
            .enumerate()
            .map(|(i, (m, s))| {
                let r = match self.ranking {
                    0 => i as u64 + 1,
                    1 => v.iter().filter(|o| self.better(o.1, *s)).count() as u64 + 1,
                    _ => distinct.iter().filter(|d| self.better(**d, *s)).count() as u64 + 1,
                };
                (m.clone(), r, *s)
            })
            .collect()
    }

    fn evict(&mut self) {
        if let Some(max) = self.max {
            let v = self.ordered();
            for (m, _) in v.iter().skip(max as usize) {
                self.remove(m);
            }
        }
    }

    fn top(&self, n: u32) -> HashMap<String, (u64, f64)> {
        self.ranks()
            .into_iter()
            .take(n as usize)
            .map(|(m, r, s)| (m, (r, s)))
            .collect()
    }

    fn member(&self, m: &str) -> Option<(u64, f64)> {
        self.ranks()
            .into_iter()
            .find(|e| e.0 == m)
            .map(|(_, r, s)| (r, s))
    }
}

/// What one subscriber knows, rebuilt from its events only.
struct Client {
    filter: Filter,
    sub: Option<Subscription>,
    last: Option<EventId>,
    top: HashMap<String, (u64, f64)>,
    members: HashMap<String, Option<(u64, f64)>>,
    all: HashMap<String, f64>,
    /// Set while disconnected: the resume must not need a reload.
    resumed: bool,
}

fn rank_score(v: &Value) -> Option<(u64, f64)> {
    Some((v["rank"].as_u64()?, v["score"].as_f64()?))
}

/// The events ready now (writes push theirs before they return).
fn ready(sub: &mut Subscription) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let mut f = pin!(sub.next_batch());
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(Some(b)) => out.extend(b),
            Poll::Ready(None) | Poll::Pending => return out,
        }
    }
}

impl Client {
    fn apply(&mut self, ev: &Event, model: &Model) {
        let v = ev.value();
        match ev.kind {
            Kind::Snapshot => {
                if let Some(top) = v["top"].as_array() {
                    self.top = top
                        .iter()
                        .map(|e| {
                            (
                                e["member"].as_str().unwrap().to_string(),
                                rank_score(e).unwrap(),
                            )
                        })
                        .collect();
                }
                if let Some(ms) = v["members"].as_array() {
                    self.members = ms
                        .iter()
                        .map(|e| (e["member"].as_str().unwrap().to_string(), rank_score(e)))
                        .collect();
                }
            }
            Kind::Enter | Kind::Move => {
                self.top.insert(
                    v["member"].as_str().unwrap().to_string(),
                    rank_score(&v).unwrap(),
                );
            }
            Kind::Leave => {
                self.top.remove(v["member"].as_str().unwrap());
            }
            Kind::Member => {
                self.members
                    .insert(v["member"].as_str().unwrap().to_string(), rank_score(&v));
            }
            Kind::Change => {
                let m = v["member"].as_str().unwrap().to_string();
                if v["removed"] == true {
                    self.all.remove(&m);
                } else {
                    self.all.insert(m, v["score"].as_f64().unwrap());
                }
            }
            Kind::Reset | Kind::Deleted | Kind::Created => self.all.clear(),
            Kind::Reload => {
                // A reload answering a resume names the id it could not
                // resume after; one in the stream (the board changed as a
                // whole) does not.
                assert!(
                    !(self.resumed && v.get("after").is_some()),
                    "a resume within the retained events needed a reload: {v}"
                );
                // The client reads the board again.
                self.all = model.scores.clone().into_iter().collect();
            }
            Kind::Config => {}
            Kind::Lagged => panic!("lagged in a short test: {v}"),
        }
    }

    fn drain(&mut self, model: &Model) {
        let Some(sub) = self.sub.as_mut() else { return };
        let evs = ready(sub);
        for ev in evs {
            // Snapshots and reloads carry the position they were taken at.
            let fresh = matches!(ev.kind, Kind::Snapshot | Kind::Reload);
            if let Some(last) = self.last {
                assert!(
                    ev.id > last || (fresh && ev.id >= last),
                    "id {} after {} ({})",
                    ev.id,
                    last,
                    ev.json
                );
            }
            self.last = Some(ev.id);
            self.apply(&ev, model);
        }
        self.resumed = false;
    }

    fn check(&self, model: &Model) {
        if self.sub.is_none() {
            return;
        }
        if let Some(n) = self.filter.top {
            assert_eq!(self.top, model.top(n), "top {n}");
        }
        for m in &self.filter.members {
            assert_eq!(
                self.members.get(m).copied().flatten(),
                model.member(m),
                "member {m}"
            );
        }
        if self.filter.everything() {
            let want: HashMap<String, f64> = model.scores.clone().into_iter().collect();
            assert_eq!(self.all, want, "every change");
        }
    }
}

fn submit(svc: &Service, rt: &tokio::runtime::Runtime, board: &str, e: Vec<SubmitIn>) {
    let _ = rt.block_on(svc.submit(board, &e));
}

/// Runs `steps` on a memory-only store, or with `durable` on a store
/// with a log (event ids are then its sequence numbers).
fn run(steps: Vec<Step>, durable: bool) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let svc = if durable {
        let store = podium_engine::Store::new();
        let (storage, aux, report) =
            podium_store::storage::open(dir.path(), podium_store::FsyncPolicy::No, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX)
    } else {
        Service::in_memory()
    };
    let mut model = Model::new();
    let mut clients: Vec<Client> = Vec::new();
    for st in steps {
        match st {
            Step::Set(m, s) => {
                submit(&svc, &rt, BOARD, vec![SubmitIn::new(member(m), s as f64)]);
                model.set(member(m), s as f64);
                model.exists = true;
                model.evict();
            }
            Step::Incr(m, s) => {
                let mut e = SubmitIn::new(member(m), s as f64);
                e.op = Some("incr".into());
                submit(&svc, &rt, BOARD, vec![e]);
                let now = model.scores.get(&member(m)).copied().unwrap_or(0.0);
                model.set(member(m), now + s as f64);
                model.exists = true;
                model.evict();
            }
            Step::Batch(v) => {
                let e = v
                    .iter()
                    .map(|(m, s)| SubmitIn::new(member(*m), *s as f64))
                    .collect();
                submit(&svc, &rt, BOARD, e);
                for (m, s) in v {
                    model.set(member(m), s as f64);
                    model.evict();
                }
                model.exists = true;
            }
            Step::Zadd(m, s) => {
                let mut rec =
                    podium_core::entry::SubmitRec::from_ref(&SubmitIn::new(member(m), s as f64))
                        .unwrap();
                rec.op = Some(podium_engine::UpdateOp::Set);
                svc.zadd(BOARD.as_bytes(), vec![rec], Default::default())
                    .unwrap();
                model.set(member(m), s as f64);
                model.exists = true;
                model.evict();
            }
            Step::Remove(v) => {
                let names: Vec<String> = v.iter().map(|m| member(*m)).collect();
                let _ = rt.block_on(svc.remove(BOARD, &names));
                for n in names {
                    model.remove(&n);
                }
            }
            Step::RemoveRanks(a, b) => {
                let req = RemoveRange {
                    board: BOARD.into(),
                    by: RangeBy::Rank { start: a, stop: b },
                };
                let _ = rt.block_on(svc.remove_range(&req));
                let gone: Vec<String> = model
                    .ordered()
                    .into_iter()
                    .skip(a as usize - 1)
                    .take((b - a + 1) as usize)
                    .map(|e| e.0)
                    .collect();
                for g in gone {
                    model.remove(&g);
                }
            }
            Step::RemoveScores(lo, hi) => {
                let _ = svc.zrem_score_range(
                    BOARD.as_bytes(),
                    podium_engine::ScoreRange::inclusive(lo as f64, hi as f64),
                );
                let gone: Vec<String> = model
                    .scores
                    .iter()
                    .filter(|(_, s)| **s >= lo as f64 && **s <= hi as f64)
                    .map(|(m, _)| m.clone())
                    .collect();
                for g in gone {
                    model.remove(&g);
                }
            }
            Step::Pop(n, worst) => {
                let _ = svc.zpop(BOARD.as_bytes(), n, worst);
                let mut v = model.ordered();
                if worst {
                    v.reverse();
                }
                for (m, _) in v.into_iter().take(n as usize) {
                    model.remove(&m);
                }
            }
            Step::Reset => {
                if rt.block_on(svc.reset(BOARD)).is_ok() {
                    model.scores.clear();
                    model.seqs.clear();
                }
            }
            Step::Delete => {
                if rt.block_on(svc.board_delete(BOARD)).is_ok() {
                    model = Model::new();
                }
            }
            Step::Config {
                asc,
                ranking,
                tiebreak,
                max,
            } => {
                let rank_mode = ["unique", "competition", "dense"][ranking as usize];
                let ties = ["member", "first", "last"][tiebreak as usize];
                let mut cfg = serde_json::json!({
                    "order": if asc { "asc" } else { "desc" },
                    "ranking": rank_mode,
                    "tiebreak": ties,
                });
                if let Some(m) = max {
                    cfg["max_members"] = m.into();
                }
                rt.block_on(svc.board_put(BOARD, &cfg)).unwrap();
                let reranks =
                    (model.asc, model.ranking, model.tiebreak) != (asc, ranking, tiebreak);
                if model.exists && reranks {
                    // Re-sorted: every member submitted again in the old
                    // order, taking new sequences in it.
                    for (m, _) in model.ordered() {
                        model.next_seq += 1;
                        model.seqs.insert(m, model.next_seq);
                    }
                }
                model.exists = true;
                model.asc = asc;
                model.ranking = ranking;
                model.tiebreak = tiebreak;
                model.max = max;
                model.evict();
            }
            Step::OtherBoard(m, s) => {
                submit(&svc, &rt, "other", vec![SubmitIn::new(member(m), s as f64)]);
            }
            Step::Subscribe {
                top,
                members,
                snapshot,
            } => {
                let filter =
                    Filter::new(top, members.into_iter().map(member).collect(), snapshot).unwrap();
                let sub = svc
                    .subscribe(&Subscribe {
                        board: BOARD.into(),
                        filter: filter.clone(),
                        since: None,
                    })
                    .unwrap();
                let mut c = Client {
                    filter: filter.clone(),
                    sub: Some(sub),
                    last: None,
                    top: HashMap::new(),
                    members: HashMap::new(),
                    all: model.scores.clone().into_iter().collect(),
                    resumed: false,
                };
                if !snapshot {
                    // Without a snapshot the client reads the state itself.
                    if let Some(n) = top {
                        c.top = model.top(n);
                    }
                    for m in &filter.members {
                        c.members.insert(m.clone(), model.member(m));
                    }
                }
                clients.push(c);
            }
            Step::Disconnect(i) => {
                if let Some(c) = clients.get_mut(i) {
                    if let Some(sub) = c.sub.take() {
                        // It saw everything up to the drop.
                        c.last = Some(sub.cursor());
                    }
                }
            }
            Step::Resume(i) => {
                if let Some(c) = clients.get_mut(i) {
                    if c.sub.is_none() {
                        let sub = svc
                            .subscribe(&Subscribe {
                                board: BOARD.into(),
                                filter: c.filter.clone(),
                                since: c.last,
                            })
                            .unwrap();
                        c.sub = Some(sub);
                        c.resumed = true;
                    }
                }
            }
        }
        for c in clients.iter_mut() {
            c.drain(&model);
            c.check(&model);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_subscriber_replays_to_the_models_state(
        steps in prop::collection::vec(step(), 1..60),
        durable in any::<bool>(),
    ) {
        // Subscribers first in most runs, so the writes are watched.
        let mut all = vec![
            Step::Subscribe { top: Some(3), members: vec![0, 1], snapshot: true },
            Step::Subscribe { top: None, members: vec![], snapshot: false },
        ];
        all.extend(steps);
        run(all, durable);
    }
}
