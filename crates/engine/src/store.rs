//! The store: every board by name, shared by all protocols.
//!
//! Concurrency: the name → board map is a sharded `DashMap`, touched only
//! long enough to clone an `Arc`; each board sits behind its own
//! `RwLock`, so reads of a board run in parallel, writes to one board are
//! serialised, and writes to different boards never wait for each other.
//! Operations that lock several boards (`combine`, `archive`) take the locks
//! in name order, and every other operation holds at most one, so no two
//! operations can deadlock.

use std::sync::Arc;

use dashmap::DashMap;
use parking_lot::RwLock;

use crate::board::{Aggregate, Board};
use crate::config::{ArchiveOf, BoardConfig};
use crate::error::{Error, Result};

pub type BoardRef = Arc<RwLock<Board>>;

/// Longest board name, in bytes.
pub const MAX_BOARD_NAME: usize = 200;

/// The first byte of the board names of Redis databases 1 to 15.
const DB_MARK: u8 = 0x01;

#[derive(Default)]
pub struct Store {
    boards: DashMap<Arc<str>, BoardRef>,
}

/// [`Store::heap_use`]: heap bytes by what holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapUse {
    /// Live boards, search indexes apart.
    pub boards: u64,
    /// Archives, search indexes apart.
    pub archives: u64,
    /// Every board's search index.
    pub search_index: u64,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// A board name the store holds: a name users may give
    /// ([`Store::validate_user_name`]), or one behind the prefix of a
    /// Redis database other than 0 (`\x01` and the database's index, 1 to
    /// 15), which the Redis protocol alone makes.
    pub fn validate_name(name: &str) -> Result<()> {
        match name.as_bytes() {
            [DB_MARK, 1..=15, ..] => Self::validate_user_name(&name[2..]),
            _ => Self::validate_user_name(name),
        }
    }

    /// 1–200 bytes of UTF-8 without control characters: the names the
    /// HTTP API, RPC, search and the CLI take.
    pub fn validate_user_name(name: &str) -> Result<()> {
        if name.is_empty() || name.len() > MAX_BOARD_NAME || name.chars().any(char::is_control) {
            return Err(Error::BadBoardName);
        }
        Ok(())
    }

    /// Whether `name` is a board of a Redis database other than 0: no
    /// listing or count for users shows it.
    pub fn is_redis_only(name: &str) -> bool {
        name.as_bytes().first() == Some(&DB_MARK)
    }

    /// Takes board `name` out of the store (a rename moves it whole).
    pub fn take(&self, name: &str) -> Option<BoardRef> {
        self.boards.remove(name).map(|(_, b)| b)
    }

    /// Puts a board taken by [`Store::take`] in place as `name`,
    /// replacing any.
    pub fn place(&self, name: &str, board: BoardRef) -> Result<()> {
        Self::validate_name(name)?;
        self.boards.insert(Arc::from(name), board);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.boards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.boards.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<BoardRef> {
        self.boards.get(name).map(|b| b.value().clone())
    }

    /// The board, created with the default config if absent (implicit
    /// creation on first write).
    pub fn get_or_create(&self, name: &str) -> Result<BoardRef> {
        if let Some(b) = self.get(name) {
            return Ok(b);
        }
        Self::validate_name(name)?;
        Ok(self
            .boards
            .entry(Arc::from(name))
            .or_insert_with(|| Arc::new(RwLock::new(Board::empty_default())))
            .value()
            .clone())
    }

    /// `board_create`: fails if the board exists.
    pub fn create(&self, name: &str, config: BoardConfig) -> Result<BoardRef> {
        Self::validate_name(name)?;
        let board = Board::new(config)?;
        match self.boards.entry(Arc::from(name)) {
            dashmap::Entry::Occupied(_) => Err(Error::BoardExists(name.to_string())),
            dashmap::Entry::Vacant(v) => Ok(v.insert(Arc::new(RwLock::new(board))).value().clone()),
        }
    }

    /// `board_create` or `board_update` (PUT): returns true when created.
    pub fn put(&self, name: &str, config: BoardConfig) -> Result<bool> {
        Self::validate_name(name)?;
        config.validate()?;
        loop {
            if let Some(b) = self.get(name) {
                let mut g = b.write();
                if g.is_read_only() {
                    return Err(Error::ReadOnly(name.to_string()));
                }
                g.set_config(config)?;
                return Ok(false);
            }
            match self.create(name, config.clone()) {
                Ok(_) => return Ok(true),
                Err(Error::BoardExists(_)) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Puts a whole board in place (recovery, restore), replacing any.
    pub fn insert(&self, name: &str, board: Board) -> Result<()> {
        Self::validate_name(name)?;
        self.boards
            .insert(Arc::from(name), Arc::new(RwLock::new(board)));
        Ok(())
    }

    /// `board_delete`: true if it existed.
    pub fn delete(&self, name: &str) -> bool {
        self.boards.remove(name).is_some()
    }

    /// Moves board `from` to the name `to` (Redis RENAME), replacing any
    /// board there: members, config, names and data and the search index
    /// move with it, and its archives become `to`'s (they keep their own
    /// names). `false`: there is no board `from`.
    pub fn rename(&self, from: &str, to: &str) -> Result<bool> {
        Self::validate_name(to)?;
        if from == to {
            return Ok(self.get(from).is_some());
        }
        let Some((_, b)) = self.boards.remove(from) else {
            return Ok(false);
        };
        self.boards.insert(Arc::from(to), b);
        for (archive, _) in self.archives_of(from) {
            if let Some(a) = self.get(&archive) {
                if let Some(of) = a.write().config.archive.as_mut() {
                    of.board = to.to_string();
                }
            }
        }
        Ok(true)
    }

    /// Puts a copy of board `from`'s members (with their names and data)
    /// and config under the name `to` (Redis COPY), replacing any board
    /// there. The copy is a live board: a copy of an archive is writable
    /// and no archive. `false`: there is no board `from`.
    pub fn copy(&self, from: &str, to: &str) -> Result<bool> {
        Self::validate_name(to)?;
        let Some(b) = self.get(from) else {
            return Ok(false);
        };
        let mut copy = b.read().clone();
        copy.read_only = false;
        copy.config.archive = None;
        self.boards
            .insert(Arc::from(to), Arc::new(RwLock::new(copy)));
        Ok(true)
    }

    /// `boards`: every board with its size, by name.
    pub fn list(&self) -> Vec<(String, u64)> {
        let refs: Vec<(Arc<str>, BoardRef)> = self
            .boards
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        let mut out: Vec<(String, u64)> = refs
            .into_iter()
            .map(|(n, b)| (n.to_string(), b.read().len() as u64))
            .collect();
        out.sort();
        out
    }

    /// Runs a read on an existing board.
    pub fn read<R>(&self, name: &str, f: impl FnOnce(&Board) -> R) -> Result<R> {
        let b = self
            .get(name)
            .ok_or_else(|| Error::NoSuchBoard(name.to_string()))?;
        let g = b.read();
        Ok(f(&g))
    }

    /// Runs a write on a board, creating it with the defaults if absent.
    pub fn write<R>(&self, name: &str, f: impl FnOnce(&mut Board) -> Result<R>) -> Result<R> {
        let b = self.get_or_create(name)?;
        let mut g = b.write();
        f(&mut g).map_err(|e| match e {
            Error::ReadOnly(_) => Error::ReadOnly(name.to_string()),
            e => e,
        })
    }

    /// `reset`: moves the board's content into a read-only archive board
    /// `archive` (replacing one of that name) and empties the live board.
    /// The content is taken under the live board's write lock, so every
    /// write lands wholly before or after the reset; the archive appears
    /// just after (a reader may see the live board empty a moment earlier).
    /// The archive records that it is `name`'s, one past the newest of
    /// `name`'s archives; then only the newest `keep_archives` of them are
    /// kept. Boards that merely look like archives by name are never
    /// counted or deleted. Returns how many members were archived.
    pub fn archive(&self, name: &str, archive: &str) -> Result<u64> {
        Self::validate_name(archive)?;
        if archive == name {
            return Err(Error::BadArgument(
                "an archive cannot replace its own board".into(),
            ));
        }
        let b = self
            .get(name)
            .ok_or_else(|| Error::NoSuchBoard(name.to_string()))?;
        let (content, keep) = {
            let mut g = b.write();
            if g.is_read_only() {
                return Err(Error::ReadOnly(name.to_string()));
            }
            (g.take(), g.config().keep_archives)
        };
        let seq = self
            .archives_of(name)
            .last()
            .map_or(1, |(_, s)| s.saturating_add(1));
        let mut content = content;
        content.mark_archive(ArchiveOf {
            board: name.to_string(),
            seq,
        });
        let n = content.len() as u64;
        self.insert(archive, content)?;
        if let Some(keep) = keep {
            let archives = self.archives_of(name);
            let excess = archives.len().saturating_sub(keep as usize);
            for (old, _) in &archives[..excess] {
                self.delete(old);
            }
        }
        Ok(n)
    }

    /// The archives of board `name` with their sequence numbers, oldest
    /// first (ties, which only damaged data could hold, by name).
    pub fn archives_of(&self, name: &str) -> Vec<(String, u64)> {
        let refs: Vec<(Arc<str>, BoardRef)> = self
            .boards
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        let mut out: Vec<(String, u64)> = refs
            .into_iter()
            .filter_map(|(n, b)| {
                let g = b.read();
                let a = g.archive_of().filter(|a| a.board == name)?;
                Some((n.to_string(), a.seq))
            })
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Recognises the archives of data written before archives recorded
    /// whose they are: a read-only board named `NAME@LABEL` without that
    /// record is an archive of `NAME` (a reset was the only way to make a
    /// read-only board). Their sequence follows the order their names
    /// gave them then. Run once, on boards recovered from such data.
    /// Returns how many boards were recognised.
    pub fn adopt_legacy_archives(&self) -> usize {
        let refs: Vec<(Arc<str>, BoardRef)> = self
            .boards
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        let legacy: Vec<(String, BoardRef)> = refs
            .into_iter()
            .filter(|(_, b)| {
                let g = b.read();
                g.is_read_only() && g.archive_of().is_none()
            })
            .map(|(n, b)| (n.to_string(), b))
            .collect();
        let names: Vec<&str> = legacy.iter().map(|(n, _)| n.as_str()).collect();
        let adopted = legacy_archives(&names);
        for (name, of) in &adopted {
            if let Some((_, b)) = legacy.iter().find(|(n, _)| n == name) {
                b.write().mark_archive(of.clone());
            }
        }
        adopted.len()
    }

    /// Every board with its size and, for an archive, the board it is an
    /// archive of; by name.
    pub fn list_with_archives(&self) -> Vec<(String, u64, Option<String>, u64)> {
        let refs: Vec<(Arc<str>, BoardRef)> = self
            .boards
            .iter()
            .map(|e| (e.key().clone(), e.value().clone()))
            .collect();
        let mut out: Vec<(String, u64, Option<String>, u64)> = refs
            .into_iter()
            .map(|(n, b)| {
                let g = b.read();
                let of = g.archive_of().map(|a| a.board.clone());
                (n.to_string(), g.len() as u64, of, g.heap_bytes() as u64)
            })
            .collect();
        out.sort();
        out
    }

    /// Heap bytes of every board's structures, summed: live boards and
    /// archives apart, search indexes apart ([`HeapUse`]).
    pub fn heap_use(&self) -> HeapUse {
        let refs: Vec<BoardRef> = self.boards.iter().map(|e| e.value().clone()).collect();
        let mut u = HeapUse::default();
        for b in refs {
            let g = b.read();
            let search = g.search_heap_bytes() as u64;
            let rest = (g.heap_bytes() as u64).saturating_sub(search);
            u.search_index += search;
            if g.archive_of().is_some() {
                u.archives += rest;
            } else {
                u.boards += rest;
            }
        }
        u
    }

    /// The name for the next archive of `name` labelled `label` (see
    /// [`next_archive_name`]).
    pub fn next_archive_name(&self, name: &str, label: &str) -> String {
        let base = archive_base(name, label);
        let taken: Vec<String> = self
            .boards
            .iter()
            .filter(|e| e.key().starts_with(&base))
            .map(|e| e.key().to_string())
            .collect();
        next_archive_name(&base, taken.iter().map(String::as_str))
    }

    /// `merge` (`intersect == false`) or `intersect`: stores the aggregate of
    /// the weighted `sources` in `dest` (created with the defaults if absent,
    /// keeping its config otherwise), atomically with respect to every other
    /// operation. Missing sources count as empty, as in Redis. Returns the
    /// destination's size.
    pub fn combine(
        &self,
        dest: &str,
        sources: &[(&str, f64)],
        agg: Aggregate,
        intersect: bool,
    ) -> Result<u64> {
        if sources.is_empty() {
            return Err(Error::BadArgument(
                "at least one source board is needed".into(),
            ));
        }
        let dest_ref = self.get_or_create(dest)?;
        let mut names: Vec<&str> = sources.iter().map(|s| s.0).filter(|&n| n != dest).collect();
        names.sort_unstable();
        names.dedup();
        let refs: Vec<(&str, BoardRef)> = names
            .iter()
            .filter_map(|&n| self.get(n).map(|b| (n, b)))
            .collect();
        // Lock in name order, the destination among them.
        let mut read_guards = Vec::with_capacity(refs.len());
        let mut dest_guard = None;
        let mut pending = refs.iter().peekable();
        loop {
            let next_src = pending.peek().map(|(n, _)| *n);
            let take_dest = dest_guard.is_none() && next_src.is_none_or(|n| dest < n);
            if take_dest {
                dest_guard = Some(dest_ref.write());
            } else if let Some((n, b)) = pending.next() {
                read_guards.push((*n, b.read()));
            } else {
                break;
            }
        }
        let mut dest_guard = dest_guard.expect("destination locked");
        if dest_guard.is_read_only() {
            return Err(Error::ReadOnly(dest.to_string()));
        }
        let empty = Board::empty_default();
        let lookup = |n: &str| -> &Board {
            if n == dest {
                return &dest_guard;
            }
            read_guards
                .iter()
                .find(|(name, _)| *name == n)
                .map(|(_, g)| &**g)
                .unwrap_or(&empty)
        };
        let srcs: Vec<(&Board, f64)> = sources.iter().map(|&(n, w)| (lookup(n), w)).collect();
        let result = Board::combine(dest_guard.config().clone(), &srcs, agg, intersect)?;
        drop(srcs);
        let n = result.len() as u64;
        dest_guard.replace_content(result);
        Ok(n)
    }
}

impl Board {
    fn empty_default() -> Board {
        Board::new(BoardConfig::default()).expect("default config is valid")
    }
}

/// Bytes an archive's name keeps free for its repeat number (`.N`).
const ARCHIVE_REPEAT_BYTES: usize = 8;

/// `NAME@LABEL`, the start of the names of `name`'s archives of period
/// `label`, with `NAME` cut short (at a character) when the whole would
/// leave no room for a repeat number within a board name's length: an
/// archive is a board, read by its name, and its record says whose it is.
pub fn archive_base(name: &str, label: &str) -> String {
    let room = MAX_BOARD_NAME.saturating_sub(ARCHIVE_REPEAT_BYTES + 1 + label.len());
    let mut cut = name.len().min(room);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}@{label}", &name[..cut])
}

/// The name for a new archive `base` (`NAME@LABEL`) given the board names
/// `taken`: `base`, or `base.N` with N one past the highest taken, so no
/// board, archive or not, is replaced, and a name freed by `keep_archives`
/// is not given to a newer archive (readers would take it for the old
/// one). Shared by every backend.
pub fn next_archive_name<'a>(base: &str, taken: impl Iterator<Item = &'a str>) -> String {
    let highest = taken
        .filter_map(|t| {
            let rest = t.strip_prefix(base)?;
            if rest.is_empty() {
                Some(1)
            } else {
                rest.strip_prefix('.')?.parse::<u64>().ok()
            }
        })
        .max();
    match highest {
        None => base.to_string(),
        Some(n) => format!("{base}.{}", n + 1),
    }
}

/// The archive records of boards that data from before archives recorded
/// whose they are held as archives, given the names of such boards (read-only
/// boards without the record): `NAME@LABEL` is an archive of `NAME` (up to
/// the last `@`: labels hold none), and each board's archives are numbered
/// 1, 2, … in the order their names gave them then (label, then the
/// repeat number, so `.10` after `.9`). Names without `@` are left out.
/// Shared by every backend.
pub fn legacy_archives(names: &[&str]) -> Vec<(String, ArchiveOf)> {
    let mut found: Vec<(&str, &str, (&str, u64))> = names
        .iter()
        .filter_map(|n| {
            let (of, rest) = n.rsplit_once('@')?;
            (!of.is_empty()).then_some((*n, of, legacy_order(rest)))
        })
        .collect();
    found.sort_by(|a, b| a.1.cmp(b.1).then_with(|| a.2.cmp(&b.2)));
    let mut out = Vec::with_capacity(found.len());
    let mut seq = 0;
    for (i, (name, of, _)) in found.iter().enumerate() {
        seq = if i > 0 && found[i - 1].1 == *of {
            seq + 1
        } else {
            1
        };
        out.push((
            name.to_string(),
            ArchiveOf {
                board: of.to_string(),
                seq,
            },
        ));
    }
    out
}

/// The order archive names (after `NAME@`) were pruned in before archives
/// recorded their sequence: the period label, then the number of a
/// same-label repeat (`LABEL` is 1, `LABEL.2` is 2, …).
fn legacy_order(rest: &str) -> (&str, u64) {
    match rest.rsplit_once('.') {
        Some((label, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
            (label, n.parse().unwrap_or(u64::MAX))
        }
        _ => (rest, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Submit;

    fn filled(store: &Store, name: &str, config: BoardConfig) {
        store.put(name, config).unwrap();
        store
            .write(name, |b| b.submit(&Submit::new(b"m", 1.0)).map(drop))
            .unwrap();
    }

    fn names(store: &Store) -> Vec<String> {
        store.list().into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn the_archives_of_a_board_of_the_longest_name_have_names_that_are_valid() {
        let long = "é".repeat(MAX_BOARD_NAME / 2);
        Store::validate_user_name(&long).unwrap();
        let base = archive_base(&long, "2026-11-28");
        assert!(
            base.ends_with("@2026-11-28") && base.starts_with("éé"),
            "{base}"
        );
        let tenth = next_archive_name(
            &base,
            [base.as_str(), &format!("{base}.9999998")].into_iter(),
        );
        assert_eq!(tenth, format!("{base}.9999999"));
        Store::validate_user_name(&tenth).unwrap();
        assert_eq!(archive_base("weekly", "2026-11-28"), "weekly@2026-11-28");
    }

    #[test]
    fn a_renamed_board_takes_its_archives_and_a_copy_is_live() {
        let store = Store::new();
        let asc = BoardConfig {
            order: crate::config::Order::Asc,
            ..Default::default()
        };
        filled(&store, "a", asc.clone());
        filled(&store, "b", BoardConfig::default());
        store.archive("a", "a@1").unwrap();
        filled(&store, "a", asc.clone());
        assert!(!store.rename("nope", "x").unwrap());
        assert!(store.rename("a", "b").unwrap());
        assert_eq!(names(&store), ["a@1", "b"]);
        assert_eq!(store.read("b", |b| b.config().order).unwrap(), asc.order);
        assert_eq!(store.archives_of("b"), [("a@1".to_string(), 1)]);
        assert!(store.archives_of("a").is_empty());
        assert!(store.rename("b", "\u{1}").is_err());
        // A copy of an archive is a live board of the same members.
        assert!(store.copy("a@1", "c").unwrap());
        let c = store.get("c").unwrap();
        assert!(!c.read().is_read_only() && c.read().archive_of().is_none());
        assert_eq!(c.read().len(), 1);
        assert_eq!(store.archives_of("b").len(), 1);
        store
            .write("c", |b| b.submit(&Submit::new(b"n", 2.0)).map(drop))
            .unwrap();
        assert_eq!(store.read("a@1", |b| b.len()).unwrap(), 1);
        assert!(!store.copy("nope", "c").unwrap());
    }

    /// Regression: pruning picked archives by the prefix `NAME@`, so a live
    /// board `v3@0-live` was deleted when `v3` reset.
    #[test]
    fn a_live_board_named_like_an_archive_survives_pruning() {
        let store = Store::new();
        let keep = BoardConfig {
            keep_archives: Some(1),
            ..Default::default()
        };
        filled(&store, "v3", keep);
        filled(&store, "v3@0-live", BoardConfig::default());
        store.archive("v3", "v3@2026-11-21").unwrap();
        store.archive("v3", "v3@2026-11-22").unwrap();
        assert_eq!(names(&store), ["v3", "v3@0-live", "v3@2026-11-22"]);
        assert!(!store.get("v3@0-live").unwrap().read().is_read_only());
        assert_eq!(store.read("v3@0-live", |b| b.len()).unwrap(), 1);
    }

    /// Regression: a writer's `v2@9999` sorted as the newest archive of
    /// `v2`, so the real ones, the one just made included, were pruned.
    #[test]
    fn a_writers_board_is_not_counted_among_the_archives() {
        let store = Store::new();
        let keep = BoardConfig {
            keep_archives: Some(2),
            ..Default::default()
        };
        filled(&store, "v2", keep);
        filled(&store, "v2@9999", BoardConfig::default());
        for label in ["2026-11-21", "2026-11-22", "2026-11-23"] {
            store.archive("v2", &format!("v2@{label}")).unwrap();
        }
        assert_eq!(
            names(&store),
            ["v2", "v2@2026-11-22", "v2@2026-11-23", "v2@9999"]
        );
        let archives = store.archives_of("v2");
        assert_eq!(
            archives,
            [
                ("v2@2026-11-22".to_string(), 2),
                ("v2@2026-11-23".to_string(), 3)
            ]
        );
        assert!(store.get("v2@2026-11-23").unwrap().read().is_read_only());
    }

    /// Archives are ordered by when they were made, not by their names.
    #[test]
    fn pruning_follows_the_order_archives_were_made_in() {
        let store = Store::new();
        let keep = BoardConfig {
            keep_archives: Some(2),
            ..Default::default()
        };
        filled(&store, "b", keep);
        for label in ["z", "a", "m"] {
            store.archive("b", &format!("b@{label}")).unwrap();
        }
        assert_eq!(names(&store), ["b", "b@a", "b@m"]);
    }

    #[test]
    fn legacy_archives_are_recognised_by_name_once() {
        let store = Store::new();
        for (name, ro) in [
            ("lb", false),
            ("lb@2026-11-21", true),
            ("lb@2026-11-21.10", true),
            ("lb@2026-11-21.9", true),
            ("lb@x", false),
            ("a@b@2026-W47", true),
            ("plain", true),
        ] {
            filled(&store, name, BoardConfig::default());
            store.get(name).unwrap().write().set_read_only(ro);
        }
        assert_eq!(store.adopt_legacy_archives(), 4);
        assert_eq!(
            store.archives_of("lb"),
            [
                ("lb@2026-11-21".to_string(), 1),
                ("lb@2026-11-21.9".to_string(), 2),
                ("lb@2026-11-21.10".to_string(), 3)
            ]
        );
        assert_eq!(store.archives_of("a@b"), [("a@b@2026-W47".to_string(), 1)]);
        assert_eq!(store.adopt_legacy_archives(), 0, "once");
        // The next archive follows them.
        store.archive("lb", "lb@2026-11-22").unwrap();
        assert_eq!(store.archives_of("lb").last().unwrap().1, 4);
    }
}
