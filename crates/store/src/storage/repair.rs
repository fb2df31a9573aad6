//! `podium repair`: makes a data directory that recovery refuses startable
//! again, losing only what the damage took, and says beforehand exactly
//! which LSNs that is. A dry run by default; [`apply`] acts. Nothing is
//! deleted: a file is copied into `damaged-<n>/` in the data directory
//! before it is changed, and a file taken out of the log is moved there.
//!
//! What it does, by what recovery found (docs/operations.md):
//! - damage inside a segment: cut the segment at the damage, and move every
//!   later segment aside (recovery refuses a gap in the LSNs, and their
//!   records would follow one);
//! - a damaged segment header followed by whole records from the segment's
//!   first LSN: write the header again (nothing lost); any other damaged
//!   header: move the segment aside with the later ones;
//! - a gap between segments: move the segment after it and every later
//!   one aside;
//! - a damaged newest snapshot: move it aside only when an older snapshot
//!   reads and the log after that one reaches the damaged one's LSN;
//!   otherwise refuse, since the records it holds exist nowhere else.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::log::{self, SegmentEnd, FRAME_HEADER, SEGMENT_MAGIC};
use super::record::LogOp;
use super::{io_err, lock_dir, snapshot, walk_log, Stop, StorageError};

/// One step of a repair, in the order [`apply`] takes them.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Copy the file aside before it is changed.
    CopyAside(PathBuf),
    /// Move the file aside: it leaves the data directory.
    MoveAside(PathBuf),
    /// Write the segment header again.
    RestoreHeader(PathBuf),
    /// Cut the segment to this many bytes.
    Truncate(PathBuf, u64),
}

/// What a repair of a data directory would do and lose.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub dir: PathBuf,
    /// The snapshot recovery starts from after the repair: `(lsn, path)`.
    pub snapshot: Option<(u64, PathBuf)>,
    /// What recovery refuses today, in words (empty: nothing).
    pub found: Vec<String>,
    pub actions: Vec<Action>,
    /// The LSNs the repair loses, `first..=last`: from the LSN the first
    /// damaged frame should hold to the highest LSN found after it.
    pub lost: Option<(u64, u64)>,
    /// What the lost records were, as far as their bytes still tell.
    pub lost_writes: LostWrites,
    /// The last LSN recovery reads after the repair.
    pub last_kept: u64,
    /// What recovery handles itself and the repair leaves alone.
    pub notes: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

/// The lost records that can still be read (whole frames after the damage,
/// and in the segments moved aside), told in writes, boards and members;
/// the others are damaged, and nothing can be known of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LostWrites {
    /// LSNs of the lost range whose record reads.
    pub readable: BTreeSet<u64>,
    /// Per board: its writes among them and the members they name.
    pub boards: BTreeMap<String, BoardLoss>,
    /// Records that are no board's write: Redis keys (hashes, strings,
    /// expiries, renames), reset periods, webhook bookkeeping.
    pub other: u64,
}

/// One board's part of what a repair loses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoardLoss {
    pub writes: u64,
    /// The members its lost writes name (removals by rank or score, resets
    /// and config changes name none).
    pub members: BTreeSet<String>,
    /// Writes that change the board as a whole: config, reset, deletion,
    /// merge, removals by rank or score.
    pub whole: u64,
}

impl LostWrites {
    fn add(&mut self, op: &LogOp) {
        let member = |m: &[u8]| String::from_utf8_lossy(m).into_owned();
        let (board, members, whole): (&str, Vec<String>, bool) = match op {
            LogOp::Unit(ops) => return ops.iter().for_each(|o| self.add(o)),
            LogOp::Submit { board, entries } => (
                board,
                entries.iter().map(|e| member(&e.member)).collect(),
                false,
            ),
            LogOp::SetData {
                board, member: m, ..
            } => (board, vec![member(m)], false),
            LogOp::Remove { board, members } => {
                (board, members.iter().map(|m| member(m)).collect(), false)
            }
            LogOp::Replace { board, entries } => (
                board,
                entries.iter().map(|(m, _)| member(m)).collect(),
                true,
            ),
            LogOp::RemoveRankRange { board, .. }
            | LogOp::RemoveScoreRange { board, .. }
            | LogOp::Pop { board, .. }
            | LogOp::Create { board, .. }
            | LogOp::Put { board, .. }
            | LogOp::Delete { board }
            | LogOp::Archive { board, .. }
            | LogOp::Combine { dest: board, .. } => (board, Vec::new(), true),
            _ => {
                self.other += 1;
                return;
            }
        };
        let b = self.boards.entry(board.to_string()).or_default();
        b.writes += 1;
        b.whole += u64::from(whole);
        b.members.extend(members);
    }

    /// Reads every whole frame in `data` whose LSN is in `lost` and not
    /// read yet: the frames after a damaged one are found by their header
    /// and checksum, as recovery's own search for them does.
    fn read(&mut self, data: &[u8], lost: (u64, u64)) {
        let mut at = SEGMENT_MAGIC.len().min(data.len());
        while at + FRAME_HEADER <= data.len() {
            let Some((len, lsn)) = log::whole_frame_at(data, at, lost.0..=lost.1) else {
                at += 1;
                continue;
            };
            let op = LogOp::decode(&data[at + FRAME_HEADER..at + FRAME_HEADER + len]);
            if let (Some(op), true) = (op, !self.readable.contains(&lsn)) {
                self.readable.insert(lsn);
                self.add(&op);
            }
            at += FRAME_HEADER + len;
        }
    }
}

fn name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The highest LSN of a whole frame anywhere in a segment's bytes.
fn highest_lsn(data: &[u8], start: u64) -> Option<u64> {
    let mut last = None;
    let end = log::parse_segment(data, |lsn, _| last = Some(lsn));
    if let SegmentEnd::Damaged {
        last_lsn,
        valid_len,
        ..
    } = end
    {
        let expected = last_lsn.map_or(start, |l| l + 1);
        if let Some(b) = log::frames_beyond(data, valid_len as usize, expected) {
            last = Some(last.map_or(b.last_lsn, |l: u64| l.max(b.last_lsn)));
        }
    }
    last
}

/// Works out the repair of `dir` without changing anything. The caller
/// holds the directory's lock.
pub fn plan(dir: &Path) -> Result<Plan, StorageError> {
    if !dir.is_dir() {
        return Err(io_err(dir)(io::Error::new(
            io::ErrorKind::NotFound,
            "not a directory",
        )));
    }
    let mut plan = Plan {
        dir: dir.to_path_buf(),
        snapshot: None,
        found: Vec::new(),
        actions: Vec::new(),
        lost: None,
        lost_writes: LostWrites::default(),
        last_kept: 0,
        notes: Vec::new(),
    };
    let snaps = snapshot::list_snapshots(dir).map_err(io_err(dir))?;
    let segments = log::list_segments(dir).map_err(io_err(dir))?;
    let noop = |_: u64, _| {};

    if let Some((newest, path)) = snaps.last() {
        match snapshot::read(path) {
            Ok((lsn, _, _)) => plan.snapshot = Some((lsn, path.clone())),
            Err(why) => {
                plan.found
                    .push(format!("snapshot {} is damaged: {why}", name(path)));
                // Only the newest older snapshot that reads is a candidate:
                // recovery would read any newer one first.
                let mut fallback = None;
                for (i, (_, older)) in snaps[..snaps.len() - 1].iter().enumerate().rev() {
                    if let Ok((lsn, _, _)) = snapshot::read(older) {
                        let w = walk_log(&segments, lsn, |p| fs::read(p), noop)?;
                        if w.last >= *newest {
                            fallback = Some((i, lsn, older.clone()));
                        }
                        break;
                    }
                }
                let Some((i, lsn, older)) = fallback else {
                    return Err(StorageError::Corrupt {
                        path: path.clone(),
                        why: format!(
                            "{why}. It holds every record up to LSN {newest}, and no older \
                             snapshot with the log after it holds them all again (the \
                             segments a snapshot covers are deleted once it is written), so \
                             repair cannot rebuild it; no file was changed. Restore the data \
                             directory from a backup"
                        ),
                    });
                };
                for (_, p) in &snaps[i + 1..] {
                    plan.actions.push(Action::MoveAside(p.clone()));
                }
                plan.notes.push(format!(
                    "snapshot {} and the log after it hold every record up to LSN {newest}: \
                     recovery starts from it",
                    name(&older)
                ));
                plan.snapshot = Some((lsn, older));
            }
        }
    }
    let base = plan.snapshot.as_ref().map_or(0, |s| s.0);

    // Patched segment bytes: a restored header lets the walk go on into
    // the records after it, as recovery will once the header is written.
    let mut patched: HashMap<PathBuf, Vec<u8>> = HashMap::new();
    loop {
        let read = |p: &Path| match patched.get(p) {
            Some(b) => Ok(b.clone()),
            None => fs::read(p),
        };
        let w = walk_log(&segments, base, read, noop)?;
        plan.last_kept = w.last;
        let Some(stop) = w.stop else {
            if let Some((p, kept, len, why)) = &w.torn {
                plan.notes.push(format!(
                    "{} ends in a torn write ({why}): the server cuts it at start, keeping \
                     {kept} bytes and dropping {}",
                    name(p),
                    len - kept
                ));
            }
            if let Some(p) = &w.headless {
                plan.notes.push(format!(
                    "{} is shorter than its header (a crash while it was created): the \
                     server removes it at start",
                    name(p)
                ));
            }
            for (p, at, why) in &w.stale_damage {
                plan.notes.push(format!(
                    "{} is damaged at byte {at} ({why}), but the next segment holds \
                     every record after it: the server ignores it",
                    name(p)
                ));
            }
            break;
        };
        let index = stop.index();
        let seg = stop.segment().to_path_buf();
        let start = segments[index].0;
        let data = match patched.get(&seg) {
            Some(b) => b.clone(),
            None => fs::read(&seg).map_err(io_err(&seg))?,
        };
        let copy_aside = |actions: &mut Vec<Action>| {
            if !actions.contains(&Action::CopyAside(seg.clone())) {
                actions.push(Action::CopyAside(seg.clone()));
            }
        };
        let (from, mut to);
        match &stop {
            Stop::Gap { from: f, .. } => {
                plan.found.push(format!(
                    "log records {f} to {} are missing before {}",
                    start - 1,
                    name(&seg)
                ));
                (from, to) = (*f, start - 1);
                plan.actions.push(Action::MoveAside(seg.clone()));
                to = to.max(highest_lsn(&data, start).unwrap_or(0));
            }
            Stop::Damage { offset: 0, why, .. } => {
                if let Some(v) = log::other_version(&data) {
                    return Err(StorageError::Corrupt {
                        path: seg,
                        why: format!(
                            "segment format version {v}: written by another podium version, \
                             which can read it; no file was changed"
                        ),
                    });
                }
                plan.found
                    .push(format!("{} has a damaged header ({why})", name(&seg)));
                let n = SEGMENT_MAGIC.len();
                if log::whole_frame_at(&data, n, start..=start).is_some() {
                    copy_aside(&mut plan.actions);
                    plan.actions.push(Action::RestoreHeader(seg.clone()));
                    let mut fixed = data;
                    fixed[..n].copy_from_slice(SEGMENT_MAGIC);
                    patched.insert(seg, fixed);
                    continue;
                }
                (from, to) = (
                    start.max(w.last + 1),
                    highest_lsn(&data, start).unwrap_or(0),
                );
                plan.actions.push(Action::MoveAside(seg.clone()));
            }
            Stop::Damage {
                offset,
                why,
                expected,
                beyond,
                ..
            } => {
                let found = match beyond {
                    Some(b) => format!(
                        ", followed by {} whole record(s) up to LSN {}",
                        b.frames, b.last_lsn
                    ),
                    None => String::new(),
                };
                plan.found.push(format!(
                    "{} is damaged at byte {offset} ({why}){found}",
                    name(&seg)
                ));
                (from, to) = (
                    (*expected).max(w.last + 1),
                    beyond.map_or(0, |b| b.last_lsn),
                );
                copy_aside(&mut plan.actions);
                plan.actions.push(Action::Truncate(seg.clone(), *offset));
            }
        }
        let mut later_bytes = Vec::new();
        for (later_start, later) in &segments[index + 1..] {
            plan.actions.push(Action::MoveAside(later.clone()));
            // Records up to a segment's start − 1 were written before it
            // was created, whether or not any of them can still be read.
            to = to.max(later_start.saturating_sub(1));
            let bytes = fs::read(later).map_err(io_err(later))?;
            to = to.max(highest_lsn(&bytes, *later_start).unwrap_or(0));
            later_bytes.push(bytes);
        }
        plan.lost = (to >= from).then_some((from, to));
        if let Some(lost) = plan.lost {
            plan.lost_writes.read(&data, lost);
            for bytes in &later_bytes {
                plan.lost_writes.read(bytes, lost);
            }
        }
        break;
    }
    Ok(plan)
}

impl LostWrites {
    /// The `lost:` lines after the range: what the readable records were,
    /// and how many say nothing (`all`: the records of the range).
    fn describe(&self, f: &mut fmt::Formatter<'_>, all: u64) -> fmt::Result {
        const SHOWN: usize = 8;
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        for (board, b) in &self.boards {
            let mut line = format!(
                "lost: board {board:?}: {}",
                plural(b.writes, "write", "writes")
            );
            if !b.members.is_empty() {
                let names: Vec<&str> = b.members.iter().take(SHOWN).map(String::as_str).collect();
                let more = b.members.len().saturating_sub(SHOWN);
                line.push_str(&format!(
                    " naming {} ({}{})",
                    plural(b.members.len() as u64, "member", "members"),
                    names.join(", "),
                    if more > 0 {
                        format!(", and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
            if b.whole > 0 {
                line.push_str(&format!(
                    "; {} to the board as a whole (config, reset, merge, removal by rank or score)",
                    plural(b.whole, "change", "changes")
                ));
            }
            writeln!(f, "{line}")?;
        }
        if self.other > 0 {
            writeln!(
                f,
                "lost: other records: {} (Redis keys, reset periods, webhook bookkeeping; no board's members)",
                self.other
            )?;
        }
        let unreadable = all.saturating_sub(self.readable.len() as u64);
        if unreadable > 0 {
            writeln!(
                f,
                "lost: {} damaged beyond reading: which boards and members they wrote cannot be known",
                plural(unreadable, "record", "records")
            )?;
        }
        Ok(())
    }
}

/// The first `damaged-<n>` not yet in `dir`.
fn aside_dir(dir: &Path) -> PathBuf {
    (1..)
        .map(|n| dir.join(format!("damaged-{n}")))
        .find(|p| !p.exists())
        .expect("a free name")
}

/// Carries out `plan`. Returns the directory the damaged files went to
/// (`None` when there was nothing to do). The caller holds the lock.
pub fn apply(plan: &Plan) -> Result<Option<PathBuf>, StorageError> {
    if plan.is_empty() {
        return Ok(None);
    }
    let dir = &plan.dir;
    let aside = aside_dir(dir);
    podium_core::private_fs::create_dir_all(&aside).map_err(io_err(&aside))?;
    for a in &plan.actions {
        match a {
            Action::CopyAside(p) => {
                let to = aside.join(name(p));
                fs::copy(p, &to).map_err(io_err(p))?;
                File::open(&to)
                    .and_then(|f| f.sync_all())
                    .map_err(io_err(&to))?;
                // The copy must be durable before the original changes.
                log::sync_dir(&aside).map_err(io_err(&aside))?;
            }
            Action::MoveAside(p) => {
                fs::rename(p, aside.join(name(p))).map_err(io_err(p))?;
            }
            Action::RestoreHeader(p) => {
                let mut f = OpenOptions::new().write(true).open(p).map_err(io_err(p))?;
                f.seek(SeekFrom::Start(0))
                    .and_then(|_| f.write_all(SEGMENT_MAGIC))
                    .and_then(|_| f.sync_all())
                    .map_err(io_err(p))?;
            }
            Action::Truncate(p, len) => {
                let f = OpenOptions::new().write(true).open(p).map_err(io_err(p))?;
                f.set_len(*len)
                    .and_then(|_| f.sync_all())
                    .map_err(io_err(p))?;
            }
        }
    }
    log::sync_dir(&aside).map_err(io_err(&aside))?;
    // The records lost may include webhook acknowledgements: the outbox
    // recovered may hold deliveries the receivers already have.
    let why = format!(
        "repaired by `podium repair` (the damaged files are in {}): its webhook deliveries are \
         held until the server is started with --webhooks on (deliver them) or off (drop them)",
        name(&aside)
    );
    podium_core::backup::hold_webhooks(dir, &why).map_err(io_err(dir))?;
    log::sync_dir(dir).map_err(io_err(dir))?;
    Ok(Some(aside))
}

/// `podium repair DIR [--apply]`: takes the directory's lock (a running
/// server keeps it), plans, applies when asked, and returns the plan and
/// where the damaged files went.
pub fn run(dir: &Path, apply_it: bool) -> Result<(Plan, Option<PathBuf>), StorageError> {
    let _lock = lock_dir(dir)?;
    let plan = plan(dir)?;
    let aside = if apply_it { apply(&plan)? } else { None };
    Ok((plan, aside))
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "data directory: {}", self.dir.display())?;
        match &self.snapshot {
            Some((lsn, p)) => writeln!(f, "snapshot: {} (LSN {lsn})", name(p))?,
            None => writeln!(f, "snapshot: none")?,
        }
        for s in &self.found {
            writeln!(f, "found: {s}")?;
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        if self.is_empty() {
            return writeln!(
                f,
                "nothing to repair: recovery reads every record up to LSN {}",
                self.last_kept
            );
        }
        for a in &self.actions {
            match a {
                Action::CopyAside(p) => writeln!(f, "step: copy {} aside", name(p))?,
                Action::MoveAside(p) => writeln!(f, "step: move {} aside", name(p))?,
                Action::RestoreHeader(p) => {
                    writeln!(f, "step: write the header of {} again", name(p))?
                }
                Action::Truncate(p, len) => writeln!(f, "step: cut {} at byte {len}", name(p))?,
            }
        }
        match self.lost {
            Some((a, b)) => {
                let all = b - a + 1;
                writeln!(f, "lost: LSN {a} to {b} ({all} records)")?;
                self.lost_writes.describe(f, all)?;
            }
            None => writeln!(f, "lost: nothing")?,
        }
        writeln!(f, "after the repair the log ends at LSN {}", self.last_kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::snapshot::SnapAux;
    use crate::storage::tests::{files, op, tmp, write_records};
    use crate::storage::{open, Storage};
    use crate::FsyncPolicy;
    use podium_engine::{Board, Store};
    use std::collections::BTreeSet;

    /// The records recovery of `dir` keeps: record `i` set field `f<i>`.
    fn recovered(dir: &Path) -> Result<BTreeSet<u64>, StorageError> {
        let (s, aux, _) = open(dir, FsyncPolicy::Always, &Store::new())?;
        s.log.close().unwrap();
        let fields = aux.hashes.get(&b"h"[..]).cloned().unwrap_or_default();
        Ok(fields
            .keys()
            .map(|f| std::str::from_utf8(&f[1..]).unwrap().parse().unwrap())
            .collect())
    }

    fn copy_dir(from: &Path, to: &Path) {
        let _ = fs::remove_dir_all(to);
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }

    /// `(offset, lsn)` of each frame of an undamaged segment.
    fn frames(bytes: &[u8]) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        let mut at = SEGMENT_MAGIC.len();
        while at < bytes.len() {
            let (len, lsn) = log::whole_frame_at(bytes, at, 0..=u64::MAX).unwrap();
            out.push((at, lsn));
            at += log::FRAME_HEADER + len;
        }
        out
    }

    /// A flip where recovery must refuse: the start is refused with every
    /// file unchanged, the repair reports `lost`, and after it recovery
    /// keeps exactly the records not in `lost`.
    fn refuse_then_repair(dir: &Path, all: u64) -> Option<(u64, u64)> {
        let before = files(dir);
        let err = recovered(dir).expect_err("recovery went on past damage");
        assert!(
            matches!(&err, StorageError::Corrupt { why, .. } if why.contains("podium repair")),
            "{err}"
        );
        assert_eq!(files(dir), before, "a refused start changed a file");
        let (dry, aside) = run(dir, false).unwrap();
        assert_eq!(aside, None);
        assert_eq!(files(dir), before, "a dry run changed a file");
        assert!(!dry.is_empty(), "nothing to repair in a refused directory");
        let (plan, aside) = run(dir, true).unwrap();
        assert_eq!(plan, dry, "the repair is not what the dry run said");
        let aside = aside.unwrap();
        let kept = recovered(dir).unwrap_or_else(|e| panic!("after the repair: {e}\n{plan}"));
        let expect: BTreeSet<u64> = (1..=all)
            .filter(|l| !plan.lost.is_some_and(|(a, b)| (a..=b).contains(l)))
            .collect();
        assert_eq!(
            kept, expect,
            "the repair lost other records than it said:\n{plan}"
        );
        // Every changed or removed file is aside, whole.
        for a in &plan.actions {
            if let Action::CopyAside(p) | Action::MoveAside(p) = a {
                assert_eq!(
                    fs::read(aside.join(name(p))).unwrap(),
                    before[&name(p)],
                    "{} aside is not the original",
                    name(p)
                );
            }
        }
        plan.lost
    }

    /// What a repair loses is told in writes, boards and members, as far
    /// as the records after the damage still read; the damaged ones are
    /// said to be unknowable.
    #[test]
    fn the_loss_is_told_in_boards_and_members() {
        use podium_engine::{BoardConfig, Cond, Presence};
        let dir = tmp("told");
        {
            let (s, _, _) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
            let rec = |m: String| crate::storage::record::SubmitRec {
                scores: None,
                member: m.into_bytes().into(),
                score: 1.0,
                op: None,
                presence: Presence::Any,
                cond: Cond::Always,
                name: None,
                data: None,
            };
            for i in 1..=20u64 {
                let board = if i % 2 == 0 { "weekly" } else { "daily" };
                s.log.append(&LogOp::Submit {
                    board: board.into(),
                    entries: vec![rec(format!("p{i}"))],
                });
            }
            s.log.append(&LogOp::Put {
                board: "weekly".into(),
                config: BoardConfig::default(),
            });
            let last = s.log.append(&op(22));
            assert_eq!(last, 22);
            s.log.wait_blocking(last).unwrap();
            s.log.close().unwrap();
        }
        let (_, seg) = &log::list_segments(&dir).unwrap()[0];
        let mut bytes = fs::read(seg).unwrap();
        let (at, _) = frames(&bytes).into_iter().find(|(_, l)| *l == 15).unwrap();
        bytes[at + log::FRAME_HEADER + 2] ^= 0x55;
        fs::write(seg, &bytes).unwrap();
        let p = plan(&dir).unwrap();
        assert_eq!(p.lost, Some((15, 22)));
        let text = p.to_string();
        for line in [
            "lost: LSN 15 to 22 (8 records)",
            r#"lost: board "weekly": 4 writes naming 3 members (p16, p18, p20); 1 change to the board as a whole"#,
            r#"lost: board "daily": 2 writes naming 2 members (p17, p19)"#,
            "lost: other records: 1 (",
            "lost: 1 record damaged beyond reading: which boards and members they wrote cannot be known",
        ] {
            assert!(text.contains(line), "no {line:?} in:\n{text}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// Two segments, records 1..=200 and 201..=400: a bit flipped at every
    /// sixteenth of each (the first is the header) refuses the start and
    /// the repair loses exactly the records from the damaged one on, or
    /// none for the header.
    #[test]
    fn a_flip_at_every_sixteenth_of_either_segment() {
        let pristine = tmp("matrix");
        write_records(&pristine, 200);
        write_records(&pristine, 200);
        let segs = log::list_segments(&pristine).unwrap();
        assert_eq!(segs.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 201]);
        let dir = tmp("matrix-run");
        for (start, seg) in &segs {
            let bytes = fs::read(seg).unwrap();
            let fr = frames(&bytes);
            for k in 0..16 {
                copy_dir(&pristine, &dir);
                let at = k * bytes.len() / 16;
                let mut bad = bytes.clone();
                bad[at] ^= 1 << (k % 8);
                fs::write(dir.join(name(seg)), &bad).unwrap();
                let lost = refuse_then_repair(&dir, 400);
                let hit = fr.iter().rev().find(|(o, _)| *o <= at);
                match hit {
                    None => assert_eq!(lost, None, "a header flip loses nothing"),
                    Some((_, lsn)) => assert_eq!(
                        lost,
                        Some((*lsn, 400)),
                        "flip at byte {at} of segment {start} (in record {lsn})"
                    ),
                }
            }
        }
        let _ = fs::remove_dir_all(&pristine);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_header_that_no_record_follows_is_moved_aside_with_its_records_lost() {
        let dir = tmp("hdr-gone");
        write_records(&dir, 30);
        write_records(&dir, 30);
        let (_, seg) = &log::list_segments(&dir).unwrap()[0];
        let mut bad = fs::read(seg).unwrap();
        // The header and the first frame's length: nothing reads from 8.
        bad[2] ^= 0xff;
        bad[9] ^= 0x40;
        fs::write(seg, &bad).unwrap();
        assert_eq!(refuse_then_repair(&dir, 60), Some((1, 60)));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_tail_is_cut_by_the_server_and_left_alone_by_repair() {
        let dir = tmp("torn");
        write_records(&dir, 50);
        let (_, seg) = log::list_segments(&dir).unwrap().pop().unwrap();
        let bytes = fs::read(&seg).unwrap();
        let (last, _) = *frames(&bytes).last().unwrap();
        for cut in [last + 5, bytes.len() - 1] {
            let mut torn = bytes[..cut].to_vec();
            // A torn write may leave garbage as well as too few bytes.
            torn.extend_from_slice(&[0xaa; 7]);
            fs::write(&seg, &torn).unwrap();
            let (plan, _) = run(&dir, false).unwrap();
            assert!(plan.is_empty(), "{plan}");
            assert!(plan.notes[0].contains("torn write"), "{plan}");
            let store = Store::new();
            let (s, _, report) = open(&dir, FsyncPolicy::Always, &store).unwrap();
            s.log.close().unwrap();
            drop(s);
            let (p, dropped, _) = report.truncated.unwrap();
            assert_eq!((p, dropped), (seg.clone(), (torn.len() - last) as u64));
            assert_eq!(fs::metadata(&seg).unwrap().len(), last as u64);
            assert_eq!(recovered(&dir).unwrap(), (1..=49).collect());
            fs::write(&seg, &bytes).unwrap();
            // The restarts above made header-only segments: remove them.
            for (start, p) in log::list_segments(&dir).unwrap() {
                if start > 1 {
                    fs::remove_file(p).unwrap();
                }
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_segment_is_a_gap_that_repair_moves_past() {
        let dir = tmp("gap");
        write_records(&dir, 20);
        write_records(&dir, 20);
        write_records(&dir, 20);
        let segs = log::list_segments(&dir).unwrap();
        fs::remove_file(&segs[1].1).unwrap();
        let before = files(&dir);
        let err = recovered(&dir).unwrap_err().to_string();
        assert!(err.contains("log records 21 to 40 are missing"), "{err}");
        assert_eq!(files(&dir), before);
        let (plan, _) = run(&dir, true).unwrap();
        assert_eq!(plan.lost, Some((21, 60)), "{plan}");
        assert_eq!(recovered(&dir).unwrap(), (1..=20).collect());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Writes records up to `upto` (from the log's next LSN) and a snapshot
    /// of them.
    fn snapshot_at(s: &Storage, upto: u64) {
        for i in s.log.next_lsn()..=upto {
            s.log.append(&op(i));
        }
        s.log.wait_blocking(upto).unwrap();
        assert_eq!(s.log.rotate(), upto);
        let fields = (1..=upto)
            .map(|i| (format!("f{i}").into_bytes(), vec![b'x'; 40]))
            .collect();
        let aux = SnapAux {
            hashes: vec![(b"h".to_vec(), fields)],
            ..SnapAux::default()
        };
        s.snapshot::<Board>(upto, &[], &aux).unwrap();
    }

    #[test]
    fn a_damaged_snapshot_with_nothing_to_rebuild_it_from_is_refused() {
        let dir = tmp("snap-only");
        let (s, _, _) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
        snapshot_at(&s, 100);
        s.log.close().unwrap();
        drop(s);
        write_records(&dir, 20);
        assert_eq!(recovered(&dir).unwrap(), (1..=120).collect());
        let (_, snap) = snapshot::list_snapshots(&dir).unwrap().pop().unwrap();
        let mut bad = fs::read(&snap).unwrap();
        let mid = bad.len() / 2;
        bad[mid] ^= 4;
        fs::write(&snap, &bad).unwrap();
        let before = files(&dir);
        let err = recovered(&dir).unwrap_err().to_string();
        assert!(err.contains("podium repair"), "{err}");
        let err = run(&dir, true).unwrap_err().to_string();
        assert!(err.contains("cannot rebuild"), "{err}");
        assert_eq!(files(&dir), before, "a refused repair changed a file");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_damaged_snapshot_gives_way_to_an_older_one_when_the_log_after_it_is_whole() {
        let dir = tmp("snap-older");
        let (s, _, _) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
        snapshot_at(&s, 50);
        for i in 51..=100 {
            s.log.append(&op(i));
        }
        s.log.wait_blocking(100).unwrap();
        // The snapshot at 100 deletes the one at 50 and the segment after
        // it; put them back, as when those deletions did not persist.
        let keep: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| name(p).ends_with(".pdms") || name(p).ends_with(".pdml"))
            .map(|p| {
                let b = fs::read(&p).unwrap();
                (p, b)
            })
            .collect();
        snapshot_at(&s, 100);
        s.log.close().unwrap();
        drop(s);
        for (p, b) in &keep {
            if !p.exists() {
                fs::write(p, b).unwrap();
            }
        }
        write_records(&dir, 20);
        let (_, snap) = snapshot::list_snapshots(&dir).unwrap().pop().unwrap();
        assert!(name(&snap).contains("100"));
        let mut bad = fs::read(&snap).unwrap();
        bad[10] ^= 0x80;
        fs::write(&snap, &bad).unwrap();
        assert_eq!(refuse_then_repair(&dir, 120), None);
        assert!(!snap.exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn repair_waits_for_no_one_and_refuses_a_directory_in_use() {
        let dir = tmp("in-use");
        let (s, _, _) = open(&dir, FsyncPolicy::Always, &Store::new()).unwrap();
        let err = run(&dir, false).unwrap_err();
        assert!(matches!(err, StorageError::Locked(_)), "{err}");
        drop(s);
        assert!(run(&dir, false).unwrap().0.is_empty());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Garbage after a bad frame costs one pass, not a checksum per byte:
    /// 32 MiB of candidate lengths up to 64 KiB at every offset. A scan
    /// that checksummed each candidate would read ~10^12 bytes and not
    /// finish; the linear one takes well under a second in a release
    /// build. (No clock in the assertion: a busy machine is not a bug.)
    #[test]
    fn scanning_a_long_damaged_tail_is_linear() {
        let mut data = SEGMENT_MAGIC.to_vec();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..(32 << 20) / 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Small lengths that fit: every offset is a candidate by size.
            data.extend_from_slice(&(x & 0x0000_ffff_0000_ffff).to_le_bytes());
        }
        assert_eq!(log::frames_beyond(&data, 8, 1), None);
    }
}
