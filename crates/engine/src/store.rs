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
use crate::config::BoardConfig;
use crate::error::{Error, Result};

pub type BoardRef = Arc<RwLock<Board>>;

/// Longest board name, in bytes (SPEC §1).
pub const MAX_BOARD_NAME: usize = 200;

#[derive(Default)]
pub struct Store {
    boards: DashMap<Arc<str>, BoardRef>,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// 1–200 bytes of UTF-8 without control characters.
    pub fn validate_name(name: &str) -> Result<()> {
        if name.is_empty() || name.len() > MAX_BOARD_NAME || name.chars().any(char::is_control) {
            return Err(Error::BadBoardName);
        }
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
    /// just after (a reader may see the live board empty a moment earlier);
    /// then keeps only the newest `keep_archives` archives `NAME@…`.
    /// Returns how many members were archived.
    pub fn archive(&self, name: &str, archive: &str) -> Result<u64> {
        Self::validate_name(archive)?;
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
        let mut content = content;
        content.set_read_only(true);
        let n = content.len() as u64;
        self.insert(archive, content)?;
        if let Some(keep) = keep {
            let prefix = format!("{name}@");
            let mut archives: Vec<String> = self
                .boards
                .iter()
                .filter(|e| e.key().starts_with(&prefix))
                .map(|e| e.key().to_string())
                .collect();
            archives.sort_by(|a, b| {
                archive_order(&a[prefix.len()..]).cmp(&archive_order(&b[prefix.len()..]))
            });
            let excess = archives.len().saturating_sub(keep as usize);
            for old in &archives[..excess] {
                self.delete(old);
            }
        }
        Ok(n)
    }

    /// The name for the next archive of `name` labelled `label` (see
    /// [`next_archive_name`]).
    pub fn next_archive_name(&self, name: &str, label: &str) -> String {
        let base = format!("{name}@{label}");
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

/// The name for a new archive `base` (`NAME@LABEL`) given the board names
/// `taken`: `base`, or `base.N` with N one past the highest taken, so a name
/// freed by `keep_archives` is never reused for a newer archive (it would
/// sort as the oldest and be dropped at once). Shared by every backend.
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

/// Orders the archives of one board (`prefix` is `NAME@`) oldest first, as
/// `keep_archives` drops them. Shared by every backend.
pub fn sort_archives(archives: &mut [String], prefix: &str) {
    archives.sort_by(|a, b| {
        let ka = archive_order(a.strip_prefix(prefix).unwrap_or(a));
        let kb = archive_order(b.strip_prefix(prefix).unwrap_or(b));
        ka.cmp(&kb)
    });
}

/// Sort key of an archive name after `NAME@`: its period label, then the
/// number of a same-label repeat (`LABEL` is 1, `LABEL.2` is 2, …), so that
/// `.10` sorts after `.9` and `keep_archives` drops the oldest.
fn archive_order(rest: &str) -> (&str, u64) {
    match rest.rsplit_once('.') {
        Some((label, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
            (label, n.parse().unwrap_or(u64::MAX))
        }
        _ => (rest, 1),
    }
}
