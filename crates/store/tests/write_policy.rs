//! The write policy of the operations layer ([`WritePolicy`]) over the
//! embedded engine, with a clock driven by the test: a board's
//! `max_submits_per_member` (`submit`, each entry of `submit_many` in both
//! forms, refill, bystanders, `import` not limited, a board's limit
//! changing), and writes to missing boards with auto-create off.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use podium_core::api::{Score, SubmitIn, SubmitItem};
use podium_core::backend::Backend;
use podium_core::entry::SubmitRec;
use podium_core::error::Code;
use podium_core::ops::{BoardInfo, CreateBoard, PutBoard, Submit, SubmitMany};
use podium_core::write_policy::{AutoCreate, WritePolicy};
use podium_store::service::Service;
use podium_store::EmbeddedBackend;
use serde_json::json;

const S: u64 = 1_000_000_000;

struct Fixture {
    be: WritePolicy,
    now: Arc<AtomicU64>,
}

fn fixture() -> Fixture {
    fixture_with(AutoCreate::On)
}

fn fixture_with(auto_create: AutoCreate) -> Fixture {
    let now = Arc::new(AtomicU64::new(10 * S));
    let clock = now.clone();
    let inner: Arc<dyn Backend> = Arc::new(EmbeddedBackend::new(Arc::new(Service::in_memory())));
    Fixture {
        be: WritePolicy::with_clock(
            inner,
            auto_create,
            Box::new(move || clock.load(Ordering::Relaxed)),
        ),
        now,
    }
}

impl Fixture {
    fn advance(&self, secs: u64) {
        self.now.fetch_add(secs * S, Ordering::Relaxed);
    }

    async fn create(&self, board: &str, config: serde_json::Value) {
        self.be
            .board_create(&CreateBoard {
                board: board.into(),
                config,
            })
            .await
            .unwrap();
    }

    async fn submit(&self, board: &str, member: &str) -> Result<(), Code> {
        self.be
            .submit_one(&Submit {
                board: board.into(),
                entry: entry(member, 1.0),
            })
            .await
            .map(drop)
            .map_err(|e| e.code)
    }

    async fn count(&self, board: &str) -> u64 {
        self.be
            .board_info(&BoardInfo {
                board: board.into(),
            })
            .await
            .unwrap()
            .members
    }
}

fn entry(member: &str, score: f64) -> SubmitIn {
    SubmitIn {
        scores: None,
        member: member.into(),
        score: Score(score),
        op: None,
        only: None,
        cond: None,
        name: None,
        data: None,
    }
}

fn codes(items: &[SubmitItem]) -> Vec<&str> {
    items
        .iter()
        .map(|i| match i {
            SubmitItem::Ok(_) => "ok",
            SubmitItem::Err { error, .. } => error.code.as_str(),
        })
        .collect()
}

#[tokio::test]
async fn submissions_past_the_limit_are_refused_until_refilled() {
    let f = fixture();
    f.create(
        "b",
        json!({"max_submits_per_member": {"count": 2, "per": "1m"}}),
    )
    .await;
    f.submit("b", "alice").await.unwrap();
    f.submit("b", "alice").await.unwrap();
    let e =
        f.be.submit_one(&Submit {
            board: "b".into(),
            entry: entry("alice", 3.0),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::RateLimited);
    assert_eq!(
        e.message,
        "member \"alice\" has made its 2 submissions per 1 min on board \"b\" \
         (max_submits_per_member): retry in 30 s"
    );
    // A bystander, and the same member on another board.
    f.submit("b", "bob").await.unwrap();
    f.submit("other", "alice").await.unwrap();
    // One token comes back every 30 s.
    f.advance(29);
    assert_eq!(f.submit("b", "alice").await, Err(Code::RateLimited));
    f.advance(1);
    f.submit("b", "alice").await.unwrap();
    assert_eq!(f.submit("b", "alice").await, Err(Code::RateLimited));
    assert_eq!(f.count("b").await, 2);
}

#[tokio::test]
async fn a_batch_refuses_only_the_entries_past_the_limit() {
    let f = fixture();
    f.create(
        "b",
        json!({"max_submits_per_member": {"count": 1, "per": 3600}}),
    )
    .await;
    let req = SubmitMany {
        board: "b".into(),
        entries: vec![
            entry("alice", 1.0),
            entry("carol", 2.0),
            entry("alice", 3.0),
            entry("dave", 4.0),
        ],
    };
    let items = f.be.submit(&req).await.unwrap();
    assert_eq!(codes(&items), ["ok", "ok", "rate_limited", "ok"]);
    let SubmitItem::Err { member, .. } = &items[2] else {
        unreachable!()
    };
    assert_eq!(member, "alice");
    // Every entry refused: nothing reaches the engine.
    let items = f.be.submit(&req).await.unwrap();
    assert_eq!(codes(&items), ["rate_limited"; 4]);
    assert_eq!(f.count("b").await, 3);

    // The checked-records form answers in the batch's order, records
    // beside their results.
    let recs: Vec<SubmitRec> = ["erin", "alice", "frank"]
        .into_iter()
        .map(|m| SubmitRec::from_entry(entry(m, 5.0)).unwrap())
        .collect();
    let (results, back) = f.be.submit_records("b", recs).await.unwrap();
    let got: Vec<(&[u8], bool)> = back
        .iter()
        .zip(&results)
        .map(|(r, res)| (&r.member[..], res.is_ok()))
        .collect();
    assert_eq!(
        got,
        [
            (&b"erin"[..], true),
            (&b"alice"[..], false),
            (&b"frank"[..], true)
        ]
    );
    assert_eq!(results[1].as_ref().unwrap_err().code, Code::RateLimited);
    assert_eq!(f.count("b").await, 5);
}

#[tokio::test]
async fn import_and_boards_without_the_setting_are_not_limited() {
    let f = fixture();
    for _ in 0..50 {
        f.submit("free", "alice").await.unwrap();
    }
    f.create(
        "b",
        json!({"max_submits_per_member": {"count": 1, "per": "1h"}}),
    )
    .await;
    let req = SubmitMany {
        board: "b".into(),
        entries: (0..5).map(|i| entry("alice", f64::from(i))).collect(),
    };
    for _ in 0..3 {
        let items = f.be.import(&req).await.unwrap();
        assert!(items.iter().all(Result::is_ok), "{items:?}");
    }
}

#[tokio::test]
async fn a_new_limit_applies_at_once() {
    let f = fixture();
    f.create("b", json!({})).await;
    for _ in 0..5 {
        f.submit("b", "alice").await.unwrap();
    }
    f.be.board_put(&PutBoard {
        board: "b".into(),
        config: json!({"max_submits_per_member": {"count": 1, "per": "1h"}}),
        confirm_rerank: true,
    })
    .await
    .unwrap();
    f.submit("b", "alice").await.unwrap();
    assert_eq!(f.submit("b", "alice").await, Err(Code::RateLimited));
    // And dropping it lifts it.
    f.be.board_put(&PutBoard {
        board: "b".into(),
        config: json!({}),
        confirm_rerank: true,
    })
    .await
    .unwrap();
    f.submit("b", "alice").await.unwrap();
}

/// Auto-create off: every kind of write to a missing board is refused with
/// `board_not_found` and a message saying how to create it, and creates
/// nothing; once the board exists the same writes go through. On (the
/// default), the first write creates it.
#[tokio::test]
async fn with_auto_create_off_writes_to_missing_boards_are_refused() {
    let f = fixture_with(AutoCreate::Off);
    let entry = |m: &str| SubmitIn::new(m, 1.0);
    let one = Submit {
        board: "weekyl".into(),
        entry: entry("a"),
    };
    let many = SubmitMany {
        board: "weekyl".into(),
        entries: vec![entry("a"), entry("b")],
    };
    let recs = || vec![SubmitRec::from_ref(&entry("c")).unwrap()];
    let e = f.be.submit_one(&one).await.unwrap_err();
    assert_eq!(e.code, Code::BoardNotFound);
    assert!(
        e.message.contains("\"weekyl\" does not exist") && e.message.contains("create it first"),
        "{}",
        e.message
    );
    assert_eq!(
        f.be.submit(&many).await.unwrap_err().code,
        Code::BoardNotFound
    );
    assert_eq!(
        f.be.import(&many).await.unwrap_err().code,
        Code::BoardNotFound
    );
    let e = f.be.submit_records("weekyl", recs()).await.unwrap_err();
    assert_eq!(e.code, Code::BoardNotFound);
    let (e, back) = f.be.import_records("weekyl", recs()).await.unwrap_err();
    assert_eq!((e.code, back.len()), (Code::BoardNotFound, 1));
    let info = BoardInfo {
        board: "weekyl".into(),
    };
    assert_eq!(
        f.be.board_info(&info).await.unwrap_err().code,
        Code::BoardNotFound
    );

    f.be.board_create(&CreateBoard {
        board: "weekyl".into(),
        config: json!({}),
    })
    .await
    .unwrap();
    f.be.submit_one(&one).await.unwrap();
    f.be.submit(&many).await.unwrap();
    f.be.import(&many).await.unwrap();
    f.be.submit_records("weekyl", recs()).await.unwrap();
    f.be.import_records("weekyl", recs()).await.unwrap();
    assert_eq!(f.be.board_info(&info).await.unwrap().members, 3);

    let on = fixture();
    on.be.submit_one(&one).await.unwrap();
    assert_eq!(on.be.board_info(&info).await.unwrap().members, 1);
}
