//! Robustness of the two decoders recovery trusts with bytes from disk: the
//! log record decoder (`LogOp::decode`) and the snapshot reader
//! (`snapshot::read`). Random bytes and damaged valid encodings (bit flips,
//! truncations, inserted bytes, huge length prefixes) must give an error or
//! a valid value: never a panic, and never an allocation sized by a damaged
//! length rather than by the bytes actually there. Valid records and
//! snapshots read back as what was written. `tests/fuzz-corpus/` holds
//! inputs replayed on every run. More cases: `PROPTEST_CASES=100000 cargo
//! test --release -p podium-store --test decode_fuzz`.

#[path = "../../core/tests/fuzz_support/damage.rs"]
mod damage;
#[path = "../../core/tests/fuzz_support/peak.rs"]
mod peak;

use std::ops::Bound;

use podium_core::events::{Event, EventId, Kind};
use podium_engine::{
    Aggregate, Board, BoardConfig, Cond, Num, Presence, ScoreRange, Submit, UpdateOp,
};
use podium_store::outbox::{HookBatch, Outboxes};
use podium_store::storage::record::{LogOp, StrExpiry, SubmitRec};
use podium_store::storage::snapshot::{self, SnapAux, SnapBoard};
use proptest::prelude::*;

use damage::{config, corpus, damage, damaged};
use peak::largest_allocation;

// --- log records -----------------------------------------------------------

/// One record of every kind, with the awkward values (empty ids, non-UTF-8
/// keys, infinities, a non-default config).
fn sample_ops() -> Vec<LogOp> {
    let cfg = BoardConfig {
        max_members: Some(10),
        min_score: Some(f64::NEG_INFINITY),
        ..Default::default()
    };
    vec![
        LogOp::Submit {
            board: "b".into(),
            entries: vec![
                SubmitRec {
                    member: b"alice"[..].into(),
                    score: 1.5,
                    op: Some(UpdateOp::Incr),
                    presence: Presence::OnlyExisting,
                    cond: Cond::Greater,
                    name: Some("Alice".into()),
                    data: Some("{\"lvl\":3}".into()),
                    scores: None,
                },
                SubmitRec {
                    member: b"racer"[..].into(),
                    score: 0.0,
                    op: Some(UpdateOp::Best),
                    presence: Presence::Any,
                    cond: Cond::Always,
                    name: None,
                    data: None,
                    scores: Some(vec![
                        ("laps".into(), Num::Int(i64::MIN)),
                        ("time".into(), Num::Float(-0.0)),
                    ]),
                },
                SubmitRec {
                    member: [0xff, 0][..].into(),
                    score: f64::NEG_INFINITY,
                    op: None,
                    presence: Presence::Any,
                    cond: Cond::Always,
                    name: None,
                    data: None,
                    scores: None,
                },
            ],
        },
        LogOp::SetData {
            board: "b".into(),
            member: b"m".to_vec(),
            name: None,
            data: Some(String::new()),
        },
        LogOp::Remove {
            board: "b".into(),
            members: vec![b"x".to_vec(), Vec::new()],
        },
        LogOp::RemoveRankRange {
            board: "b".into(),
            start: 1,
            stop: u64::MAX,
        },
        LogOp::RemoveScoreRange {
            board: "b".into(),
            range: ScoreRange {
                min: Bound::Excluded(Num::Float(1.0)),
                max: Bound::Unbounded,
            },
        },
        LogOp::RemoveScoreRange {
            board: "b".into(),
            range: ScoreRange {
                min: Bound::Included(Num::Int(i64::MIN)),
                max: Bound::Excluded(Num::Int((1 << 53) + 1)),
            },
        },
        LogOp::Pop {
            board: "b".into(),
            count: 3,
            worst: true,
        },
        LogOp::Create {
            board: "é".into(),
            config: cfg.clone(),
            if_absent: true,
        },
        LogOp::Put {
            board: "b".into(),
            config: cfg,
        },
        LogOp::Delete { board: "b".into() },
        LogOp::Archive {
            board: "b".into(),
            archive: "b@2026-W47".into(),
        },
        LogOp::Combine {
            dest: "d".into(),
            sources: vec![("a".into(), 2.0), ("b".into(), -1.0)],
            aggregate: Aggregate::Max,
            intersect: true,
        },
        LogOp::Period {
            board: "b".into(),
            label: "2026-11-21".into(),
        },
        LogOp::HSet {
            key: b"h\xff".to_vec(),
            pairs: vec![(b"f".to_vec(), b"v".to_vec()), (Vec::new(), Vec::new())],
        },
        LogOp::HDel {
            key: b"h".to_vec(),
            fields: vec![b"f".to_vec()],
        },
        LogOp::Expire {
            key: b"k".to_vec(),
            at_ms: 1_790_000_000_000,
        },
        LogOp::Persist { key: b"k".to_vec() },
        LogOp::DelKey { key: b"k".to_vec() },
        LogOp::FlushAll,
        LogOp::Replace {
            board: "d".into(),
            entries: vec![(b"m".to_vec(), 1.5), (Vec::new(), f64::NEG_INFINITY)],
        },
        LogOp::SetString {
            key: b"s\xff".to_vec(),
            value: Vec::new(),
            expiry: StrExpiry::At(1_790_000_000_000),
        },
        LogOp::SetString {
            key: Vec::new(),
            value: b"v".to_vec(),
            expiry: StrExpiry::Keep,
        },
        LogOp::MSet {
            pairs: vec![(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), Vec::new())],
        },
        LogOp::HookEvents {
            board: "b".into(),
            hooks: vec![
                hook_batch(),
                HookBatch {
                    events: vec![],
                    ..hook_batch()
                },
            ],
        },
        LogOp::HookAck {
            board: String::new(),
            hook: "h".into(),
            upto: EventId::new(u64::MAX, 7),
        },
    ]
}

/// The events one write made for a webhook.
fn hook_batch() -> HookBatch {
    let mut body = serde_json::Map::new();
    body.insert("member".into(), "\u{0}é".into());
    HookBatch {
        name: "h".into(),
        url: "http://127.0.0.1:1/x".into(),
        secret: "s".repeat(16),
        events: vec![
            Event::new(EventId::new(3, 0), Kind::Member, "b", body),
            Event::new(
                EventId::new(3, 1),
                Kind::Deleted,
                "b",
                serde_json::Map::new(),
            ),
        ],
    }
}

/// A submit batch of random size and content.
fn submit_op() -> impl Strategy<Value = LogOp> {
    let entry = (
        prop::collection::vec(any::<u8>(), 0..40),
        any::<f64>(),
        prop::option::of("[a-z]{0,8}"),
        prop::option::of("[ -~]{0,16}"),
        prop::option::of(prop::collection::vec(
            (
                "[a-z_]{1,8}",
                prop_oneof![
                    any::<i64>().prop_map(Num::Int),
                    any::<f64>().prop_map(Num::Float)
                ],
            ),
            0..=4,
        )),
    )
        .prop_map(|(member, score, name, data, scores)| SubmitRec {
            member: member[..].into(),
            score,
            op: Some(UpdateOp::Best),
            presence: Presence::Any,
            cond: Cond::Always,
            name,
            data,
            scores,
        });
    ("[a-z]{1,8}", prop::collection::vec(entry, 0..8))
        .prop_map(|(board, entries)| LogOp::Submit { board, entries })
}

fn encoded_op() -> impl Strategy<Value = Vec<u8>> {
    let op = prop_oneof![prop::sample::select(sample_ops()), submit_op(),];
    op.prop_map(|op| {
        let mut buf = Vec::new();
        op.encode(&mut buf);
        buf
    })
}

/// What decoding `bytes` may reserve at most: a small multiple of the
/// input, whatever its length prefixes claim.
fn record_allowance(bytes: &[u8]) -> usize {
    64 * bytes.len() + 4096
}

#[track_caller]
fn check_record(bytes: &[u8]) {
    let (decoded, largest) = largest_allocation(|| LogOp::decode(bytes));
    assert!(
        largest <= record_allowance(bytes),
        "decoding {} bytes allocated {largest} bytes at once",
        bytes.len()
    );
    // A value that decodes is a record: its encoding decodes and encodes
    // to the same bytes (bytes, not values: a NaN score is not equal to
    // itself).
    if let Some(op) = decoded {
        let mut once = Vec::new();
        op.encode(&mut once);
        let back = LogOp::decode(&once).expect("a record's own encoding decodes");
        let mut twice = Vec::new();
        back.encode(&mut twice);
        assert_eq!(once, twice);
    }
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn record_decoder_survives_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        check_record(&bytes);
    }

    #[test]
    fn record_decoder_survives_random_bytes_after_a_valid_tag(
        tag in 0u8..=32,
        rest in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = vec![tag];
        bytes.extend(rest);
        check_record(&bytes);
    }

    #[test]
    fn record_decoder_survives_damaged_records(
        bytes in encoded_op(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        check_record(&damaged(bytes, &damages));
    }
}

#[test]
fn every_truncation_of_every_sample_record_is_refused() {
    for op in sample_ops() {
        let mut buf = Vec::new();
        op.encode(&mut buf);
        for cut in 0..buf.len() {
            check_record(&buf[..cut]);
            assert_eq!(LogOp::decode(&buf[..cut]), None, "{op:?} cut at {cut}");
        }
    }
}

// --- snapshots -------------------------------------------------------------

/// The engine's bounded reservation when a board's entry count is damaged
/// (it caps the count at 2^24 entries of 16 bytes) plus the reader's 1 MiB
/// buffer: nothing a snapshot read allocates at once may exceed it, so a
/// damaged u32 length or u64 count cannot ask for gigabytes.
const SNAPSHOT_ALLOWANCE: usize = (1 << 24) * 16 + (8 << 20);

/// The hash and expiry every sample snapshot holds.
fn sample_aux() -> SnapAux {
    SnapAux {
        hashes: vec![(b"h".to_vec(), vec![(b"f".to_vec(), b"\x00v".to_vec())])],
        expires: vec![(b"weekly".to_vec(), 1_790_000_000_123)],
        strings: vec![(b"s".to_vec(), b"\x00v".to_vec())],
        outbox: {
            let mut o = Outboxes::default();
            o.add("b", &hook_batch());
            o
        },
    }
}

/// A valid snapshot's bytes: a board with names and data, an empty board,
/// a hash and an expiry.
fn valid_snapshot(members: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Board::new(BoardConfig::default()).unwrap();
    for i in 0..members {
        let id = format!("m{i}");
        let mut s = Submit::new(id.as_bytes(), i as f64 - 3.5);
        if i % 3 == 0 {
            s.name = Some("Name");
            s.data = Some("{\"x\":1}");
        }
        b.submit(&s).unwrap();
    }
    let boards = vec![
        SnapBoard {
            name: "weekly".into(),
            period: Some("2026-W47".into()),
            board: b,
        },
        SnapBoard {
            name: "empty".into(),
            period: None,
            board: Board::new(BoardConfig::default()).unwrap(),
        },
    ];
    snapshot::write(dir.path(), 7, &boards, &sample_aux()).unwrap();
    std::fs::read(dir.path().join(snapshot::snapshot_name(7))).unwrap()
}

/// Rewrites the checksum of a damaged snapshot, so that the reader parses
/// the damage through instead of only finding a bad checksum at the end.
fn reseal(bytes: &mut [u8]) {
    if bytes.len() < 8 {
        return;
    }
    let body = bytes.len() - 8;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    bytes[body + 4..].copy_from_slice(b"END\n");
}

#[track_caller]
fn check_snapshot(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(snapshot::snapshot_name(7));
    std::fs::write(&path, bytes).unwrap();
    let (read, largest) = largest_allocation(|| snapshot::read(&path));
    assert!(
        largest <= SNAPSHOT_ALLOWANCE,
        "reading a {}-byte snapshot allocated {largest} bytes at once",
        bytes.len()
    );
    if let Err(e) = read {
        assert!(!e.is_empty(), "an error without a reason");
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn snapshot_reader_survives_random_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        with_magic in any::<bool>(),
        sealed in any::<bool>(),
    ) {
        let mut bytes = bytes;
        if with_magic {
            let mut b = snapshot::SNAPSHOT_MAGIC.to_vec();
            b.extend(bytes);
            bytes = b;
        }
        if sealed {
            reseal(&mut bytes);
        }
        check_snapshot(&bytes);
    }

    #[test]
    fn snapshot_reader_survives_damaged_snapshots(
        members in 0usize..40,
        damages in prop::collection::vec(damage(), 1..4),
        sealed in any::<bool>(),
    ) {
        let mut bytes = damaged(valid_snapshot(members), &damages);
        if sealed {
            reseal(&mut bytes);
        }
        check_snapshot(&bytes);
    }
}

#[test]
fn every_truncation_of_a_snapshot_is_refused() {
    let bytes = valid_snapshot(5);
    check_snapshot(&bytes);
    for cut in 0..bytes.len() {
        let mut b = bytes[..cut].to_vec();
        reseal(&mut b);
        check_snapshot(&b);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(snapshot::snapshot_name(7));
        std::fs::write(&path, &b).unwrap();
        assert!(snapshot::read(&path).is_err(), "cut at {cut} was read");
    }
}

// --- round trips and the corpus --------------------------------------------

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn record_round_trip(op in prop_oneof![prop::sample::select(sample_ops()), submit_op()]) {
        let mut buf = Vec::new();
        op.encode(&mut buf);
        let back = LogOp::decode(&buf).expect("a record's own encoding decodes");
        // Bytes for NaN scores (not equal to themselves), values otherwise.
        let mut again = Vec::new();
        back.encode(&mut again);
        prop_assert_eq!(&again, &buf);
        if format!("{op:?}").contains("NaN") {
            return Ok(());
        }
        prop_assert_eq!(back, op);
    }
}

proptest! {
    #![proptest_config(config(100))]

    #[test]
    fn snapshot_round_trip(members in 0usize..60) {
        let bytes = valid_snapshot(members);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(snapshot::snapshot_name(7));
        std::fs::write(&path, &bytes).unwrap();
        let (lsn, boards, aux) = snapshot::read(&path).unwrap();
        prop_assert_eq!(lsn, 7);
        prop_assert_eq!(aux, sample_aux());
        let names: Vec<(&str, Option<&str>)> = boards
            .iter()
            .map(|b| (b.name.as_str(), b.period.as_deref()))
            .collect();
        prop_assert_eq!(names, vec![("weekly", Some("2026-W47")), ("empty", None)]);
        let weekly = &boards[0].board;
        prop_assert_eq!(weekly.len(), members);
        for i in 0..members {
            let id = format!("m{i}");
            let (_, score, extra) = weekly
                .iter()
                .find(|(m, ..)| *m == id.as_bytes())
                .expect("every member is read back");
            prop_assert_eq!(score, i as f64 - 3.5);
            prop_assert_eq!(extra.is_some(), i % 3 == 0);
        }
        prop_assert_eq!(boards[1].board.len(), 0);
    }
}

/// Records that once broke the decoder, minimised, and hand-made nasty
/// ones: each must decode or be refused within the allowance.
#[test]
fn record_corpus_replays() {
    for (path, bytes) in corpus("record") {
        let _ = &path;
        check_record(&bytes);
    }
}

/// Snapshot files replayed as they are and resealed (so the damage is
/// parsed through rather than caught by the checksum).
#[test]
fn snapshot_corpus_replays() {
    for (path, bytes) in corpus("snapshot") {
        let _ = &path;
        check_snapshot(&bytes);
        let mut sealed = bytes.clone();
        reseal(&mut sealed);
        check_snapshot(&sealed);
    }
}
