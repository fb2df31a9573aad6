//! The Redis data model beside the board store: keys of three types (a
//! board is a sorted set, a hash holds free-form fields, a string one
//! value), key expiry, and the rules of the one namespace they share.
//!
//! [`Keyspace`] owns the hashes, the strings and the expiry times; it knows the boards
//! only through [`BoardKeys`], so the commands that span key types (TYPE,
//! DEL, KEYS, SCAN, FLUSHALL, the expiry of a board) meet the board store
//! at that one small interface. It neither logs nor locks the gate: the
//! service's Redis commands ([`crate::service::Service`]) do, around these
//! calls, and hand [`Keyspace::hset`] and [`Keyspace::hdel`] the append
//! to run while the key is locked.
//!
//! Redis semantics kept here, not in the frontend: an empty board does not
//! exist as a key (boards keep their config when emptied, but EXISTS, TYPE,
//! KEYS and SCAN do not see them); an emptied hash is deleted; an expired
//! key is deleted on first access and by the background sweep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;
use parking_lot::Mutex;
use podium_engine::Store;

use crate::storage::snapshot::SnapAux;
use podium_core::error::{ApiError, Code};

// The Redis data model's plain types are the storage interface's, so a
// frontend names them without this crate.
pub use podium_core::keystore::{glob_match, ExpireCond, Fields, KeyType, Lsn};

/// One hash's content.
type Hash = HashMap<Vec<u8>, Vec<u8>>;

/// The error of a command on a key of the other type.
pub fn wrong_type() -> ApiError {
    ApiError::new(
        Code::WrongType,
        "Operation against a key holding the wrong kind of value",
    )
}

/// A sorted-set key as a board name: a key that is not a valid board name
/// cannot hold a sorted set.
pub fn board_name(key: &[u8]) -> Result<&str, ApiError> {
    let name = std::str::from_utf8(key).map_err(|_| {
        ApiError::new(
            Code::InvalidBoardName,
            "a sorted-set key must be UTF-8 (it names a board)",
        )
    })?;
    Store::validate_name(name)?;
    Ok(name)
}

/// What the keyspace needs of the board store to answer for every key:
/// boards are the sorted-set keys.
pub(crate) trait BoardKeys {
    /// How many members board `name` has (`None`: no such board).
    fn board_len(&self, name: &str) -> Option<usize>;
    /// The names of the boards that have members.
    fn boards_with_members(&self) -> Vec<String>;
    /// Drops board `name` with everything kept for it; whether it had
    /// members (`None`: there was no such board).
    fn drop_board(&self, name: &str) -> Option<bool>;
    /// Drops every board.
    fn drop_all_boards(&self);
}

/// What [`Keyspace::delete`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// The key existed in the Redis view (a hash, or a board with members).
    pub existed: bool,
    /// Anything was removed (a board even if empty, a hash, an expiry), so
    /// the deletion must be logged.
    pub changed: bool,
}

/// The keys of one type. Looked up on every command: foldhash, seeded per
/// process, instead of SipHash (a third of a GET's time went to hashing).
type Map<V> = DashMap<Vec<u8>, V, foldhash::quality::RandomState>;

/// Redis hashes, strings and key expiry times; see the module doc.
#[derive(Default)]
pub struct Keyspace {
    hashes: Map<Hash>,
    strings: Map<Vec<u8>>,
    /// Key expiry times in ms since the epoch, any key type.
    expires: Mutex<HashMap<Vec<u8>, i64>>,
    /// `expires.len()`, readable without the lock: most deployments set no
    /// expiry, and then no request touches the mutex.
    expiring: AtomicUsize,
    /// The last walk of [`Keyspace::heap_bytes`]: when, how long, what.
    heap_walk: Mutex<Option<(std::time::Instant, std::time::Duration, u64)>>,
}

impl Keyspace {
    /// The keyspace recovery rebuilt (snapshot and log).
    pub fn restore(hashes: HashMap<Vec<u8>, Hash>, expires: HashMap<Vec<u8>, i64>) -> Keyspace {
        Keyspace {
            hashes: hashes.into_iter().collect(),
            expiring: AtomicUsize::new(expires.len()),
            expires: Mutex::new(expires),
            strings: Map::default(),
            heap_walk: Mutex::default(),
        }
    }

    /// With the strings recovery rebuilt.
    pub fn with_strings(self, strings: HashMap<Vec<u8>, Vec<u8>>) -> Keyspace {
        Keyspace {
            strings: strings.into_iter().collect(),
            ..self
        }
    }

    /// A copy of every hash and expiry, for a snapshot. Consistent only
    /// while no write runs (the service holds the gate exclusively).
    pub fn image(&self) -> SnapAux {
        SnapAux {
            hashes: self
                .hashes
                .iter()
                .map(|e| {
                    let fields = e.value().iter().map(|(f, v)| (f.clone(), v.clone()));
                    (e.key().clone(), fields.collect())
                })
                .collect(),
            expires: self
                .expires
                .lock()
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            strings: self
                .strings
                .iter()
                .map(|e| (e.key().clone(), e.value().clone()))
                .collect(),
            outbox: Default::default(),
        }
    }

    /// Heap bytes of the hashes, strings and expiry times: each table's
    /// slots (one control byte and one entry each) and every key's and
    /// value's bytes. Walks every key, so INFO and the metrics (which any
    /// client may ask for in a loop) get the last walk's figure until a
    /// hundred times its duration has passed: the walks take at most a
    /// hundredth of a core, and a small keyspace's figure stays current.
    pub fn heap_bytes(&self) -> u64 {
        let mut last = self.heap_walk.lock();
        if let Some((at, took, bytes)) = *last {
            if at.elapsed() < took * 100 {
                return bytes;
            }
        }
        let start = std::time::Instant::now();
        let bytes = self.walk_heap_bytes();
        *last = Some((start, start.elapsed(), bytes));
        bytes
    }

    fn walk_heap_bytes(&self) -> u64 {
        fn table<K, V>(capacity: usize) -> usize {
            capacity * (size_of::<(K, V)>() + 1)
        }
        let strings: usize = self
            .strings
            .iter()
            .map(|e| e.key().capacity() + e.value().capacity())
            .sum();
        let hashes: usize = self
            .hashes
            .iter()
            .map(|e| {
                let fields: usize = e
                    .value()
                    .iter()
                    .map(|(f, v)| f.capacity() + v.capacity())
                    .sum();
                e.key().capacity() + table::<Vec<u8>, Vec<u8>>(e.value().capacity()) + fields
            })
            .sum();
        let expires = {
            let g = self.expires.lock();
            table::<Vec<u8>, i64>(g.capacity()) + g.keys().map(Vec::capacity).sum::<usize>()
        };
        (table::<Vec<u8>, Vec<u8>>(self.strings.capacity())
            + strings
            + table::<Vec<u8>, Hash>(self.hashes.capacity())
            + hashes
            + expires) as u64
    }

    // --------------------------------------------------------- namespace

    /// The key's type in the Redis view (`None`: no such key; expiry is
    /// not looked at).
    pub(crate) fn key_type(&self, key: &[u8], boards: &impl BoardKeys) -> Option<KeyType> {
        // Strings first: the string commands ask most often.
        if self.strings.contains_key(key) {
            return Some(KeyType::String);
        }
        if self.hashes.contains_key(key) {
            return Some(KeyType::Hash);
        }
        let name = std::str::from_utf8(key).ok()?;
        boards
            .board_len(name)
            .is_some_and(|n| n > 0)
            .then_some(KeyType::Zset)
    }

    /// Whether `key` holds a hash.
    pub fn is_hash(&self, key: &[u8]) -> bool {
        self.hashes.contains_key(key)
    }

    /// Whether `key` holds a string.
    pub fn is_string(&self, key: &[u8]) -> bool {
        self.strings.contains_key(key)
    }

    /// Whether `key` holds a value that is not a sorted set (a hash or a
    /// string): a sorted-set command on it is refused, a store into it
    /// replaces it.
    pub fn holds_other_than_zset(&self, key: &[u8]) -> bool {
        self.is_hash(key) || self.is_string(key)
    }

    /// Refuses a hash command on a key of another type (a sorted set or a
    /// string).
    pub(crate) fn check_not_zset(
        &self,
        key: &[u8],
        boards: &impl BoardKeys,
    ) -> Result<(), ApiError> {
        if matches!(
            self.key_type(key, boards),
            Some(KeyType::Zset | KeyType::String)
        ) {
            return Err(wrong_type());
        }
        Ok(())
    }

    /// Refuses a sorted-set command on a key of another type (a hash or a
    /// string).
    pub fn check_not_hash(&self, key: &[u8]) -> Result<(), ApiError> {
        if self.holds_other_than_zset(key) {
            return Err(wrong_type());
        }
        Ok(())
    }

    /// Every key not expired by `now_ms` (boards with members, hashes),
    /// sorted.
    pub(crate) fn all_keys(&self, boards: &impl BoardKeys, now_ms: i64) -> Vec<Vec<u8>> {
        let expired = |k: &[u8]| self.expiry(k).is_some_and(|at| at <= now_ms);
        let mut keys: Vec<Vec<u8>> = boards
            .boards_with_members()
            .into_iter()
            .map(String::into_bytes)
            .chain(self.hashes.iter().map(|e| e.key().clone()))
            .chain(self.strings.iter().map(|e| e.key().clone()))
            .filter(|k| !expired(k))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Removes a key of either type with its expiry (and, through
    /// `boards`, a board's period).
    pub(crate) fn delete(&self, key: &[u8], boards: &impl BoardKeys) -> Deleted {
        let had_board = std::str::from_utf8(key)
            .ok()
            .and_then(|name| boards.drop_board(name));
        let had_hash = self.hashes.remove(key).is_some();
        let had_string = self.strings.remove(key).is_some();
        let had_expiry = self.forget_expiry(key);
        Deleted {
            existed: had_hash || had_string || had_board == Some(true),
            changed: had_board.is_some() || had_hash || had_string || had_expiry,
        }
    }

    /// Drops every board, hash, string and expiry.
    pub(crate) fn flush(&self, boards: &impl BoardKeys) {
        boards.drop_all_boards();
        self.hashes.clear();
        self.strings.clear();
        let mut e = self.expires.lock();
        e.clear();
        self.expiring.store(0, Ordering::Relaxed);
    }

    // ------------------------------------------------------------ expiry

    /// When `key` expires, in ms since the epoch.
    pub fn expiry(&self, key: &[u8]) -> Option<i64> {
        if self.expiring.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.expires.lock().get(key).copied()
    }

    pub fn set_expiry(&self, key: &[u8], at_ms: i64) {
        let mut e = self.expires.lock();
        e.insert(key.to_vec(), at_ms);
        self.expiring.store(e.len(), Ordering::Relaxed);
    }

    /// Removes `key`'s expiry; whether it had one.
    pub fn forget_expiry(&self, key: &[u8]) -> bool {
        if self.expiring.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut e = self.expires.lock();
        let had = e.remove(key).is_some();
        self.expiring.store(e.len(), Ordering::Relaxed);
        had
    }

    /// How many keys have an expiry.
    pub fn expiring(&self) -> usize {
        self.expiring.load(Ordering::Relaxed)
    }

    /// The average of `at - now_ms` over up to `sample` keys with an
    /// expiry (the map's order is arbitrary, so they are a sample); 0 when
    /// none has one.
    pub fn avg_ttl_ms(&self, now_ms: i64, sample: usize) -> i64 {
        if self.expiring() == 0 {
            return 0;
        }
        let e = self.expires.lock();
        let (sum, n) = e.values().take(sample).fold((0i128, 0i128), |(s, n), &at| {
            (s + i128::from((at - now_ms).max(0)), n + 1)
        });
        if n == 0 {
            0
        } else {
            (sum / n) as i64
        }
    }

    /// The keys whose expiry is at or before `now_ms`.
    pub fn due(&self, now_ms: i64) -> Vec<Vec<u8>> {
        if self.expiring() == 0 {
            return Vec::new();
        }
        self.expires
            .lock()
            .iter()
            .filter(|(_, &at)| at <= now_ms)
            .map(|(k, _)| k.clone())
            .collect()
    }

    // ------------------------------------------------------------ hashes

    /// Sets `pairs` in hash `key` (created if absent), then runs `log`
    /// while the key is still locked, so the log order is the apply order
    /// for this key. Returns how many fields were added (not updated) and
    /// what `log` returned.
    pub fn hset(
        &self,
        key: &[u8],
        pairs: &[(&[u8], &[u8])],
        log: impl FnOnce() -> Lsn,
    ) -> (u64, Lsn) {
        let mut h = self.hashes.entry(key.to_vec()).or_default();
        let mut added = 0;
        for (f, v) in pairs {
            added += h.insert(f.to_vec(), v.to_vec()).is_none() as u64;
        }
        (added, log())
    }

    /// Sets `field` of hash `key` (created if absent) to what `update`
    /// makes of its value (`None`: absent), then runs `log` with the new
    /// value while the key is still locked. Nothing changes, and nothing is
    /// logged, when `update` refuses or declines (`Ok(None)`). Returns what
    /// `update` returned and what `log` returned (0 when it did not run).
    pub fn hupdate<E>(
        &self,
        key: &[u8],
        field: &[u8],
        update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
        log: impl FnOnce(&[u8]) -> Lsn,
    ) -> Result<(Option<Vec<u8>>, Lsn), E> {
        let mut h = self.hashes.entry(key.to_vec()).or_default();
        let value = match update(h.get(field).map(Vec::as_slice)) {
            Ok(Some(v)) => v,
            declined => {
                // A hash made only for this look is not left behind.
                let empty = h.is_empty();
                drop(h);
                if empty {
                    self.hashes.remove_if(key, |_, h| h.is_empty());
                }
                return declined.map(|_| (None, 0));
            }
        };
        h.insert(field.to_vec(), value.clone());
        let lsn = log(&value);
        Ok((Some(value), lsn))
    }

    /// Removes `fields` from hash `key`, running `log` while the key is
    /// locked when any was there; an emptied hash is deleted with its
    /// expiry (as replay does). Returns how many were removed and what
    /// `log` returned (0 when it did not run).
    pub fn hdel(&self, key: &[u8], fields: &[&[u8]], log: impl FnOnce() -> Lsn) -> (u64, Lsn) {
        let (removed, lsn, emptied) = {
            let Some(mut h) = self.hashes.get_mut(key) else {
                return (0, 0);
            };
            let removed = fields.iter().filter(|f| h.remove(**f).is_some()).count() as u64;
            if removed == 0 {
                return (0, 0);
            }
            (removed, log(), h.is_empty())
        };
        if emptied {
            self.hashes.remove_if(key, |_, h| h.is_empty());
            self.forget_expiry(key);
        }
        (removed, lsn)
    }

    /// Runs `f` on hash `key` (`None`: no such hash).
    pub fn read_hash<R>(&self, key: &[u8], f: impl FnOnce(Option<&Hash>) -> R) -> R {
        let h = self.hashes.get(key);
        f(h.as_deref())
    }

    /// Moves hash `from` to `to` (RENAME; the caller has deleted `to`).
    pub fn move_hash(&self, from: &[u8], to: &[u8]) {
        if let Some((_, h)) = self.hashes.remove(from) {
            self.hashes.insert(to.to_vec(), h);
        }
    }

    /// Makes `to` a copy of hash `from` (COPY; the caller has deleted
    /// `to`).
    pub fn copy_hash(&self, from: &[u8], to: &[u8]) {
        let copy = self.hashes.get(from).map(|h| h.clone());
        if let Some(h) = copy {
            self.hashes.insert(to.to_vec(), h);
        }
    }

    /// Moves string `from` to `to` (RENAME; the caller has deleted `to`).
    pub fn move_string(&self, from: &[u8], to: &[u8]) {
        if let Some((_, v)) = self.strings.remove(from) {
            self.strings.insert(to.to_vec(), v);
        }
    }

    /// Makes `to` a copy of string `from` (COPY; the caller has deleted
    /// `to`).
    pub fn copy_string(&self, from: &[u8], to: &[u8]) {
        let copy = self.strings.get(from).map(|v| v.clone());
        if let Some(v) = copy {
            self.strings.insert(to.to_vec(), v);
        }
    }

    // ----------------------------------------------------------- strings

    /// A copy of string `key`'s value (`None`: no such string).
    pub fn string(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.strings.get(key).map(|v| v.clone())
    }

    /// Runs `f` on string `key`'s value (`None`: no such string).
    pub fn read_string<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        let v = self.strings.get(key);
        f(v.as_deref().map(Vec::as_slice))
    }

    /// Sets string `key` to what `update` makes of its value (`None`:
    /// absent), then runs `log` with the new value while the key is still
    /// locked, so the log order is the apply order for this key. Nothing
    /// changes, and nothing is logged, when `update` refuses or declines
    /// (`Ok(None)`). Returns what `log` returned (0 when it did not run).
    /// `absent` runs first when the key holds no string, with no lock
    /// held (a key holds one type: a string found needs no other check);
    /// its error is returned as is.
    pub fn supdate<E>(
        &self,
        key: &[u8],
        absent: impl FnOnce() -> Result<(), E>,
        update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
        log: impl FnOnce(&[u8]) -> Lsn,
    ) -> Result<Lsn, E> {
        use dashmap::mapref::entry::Entry;
        /// An existing value replaced by what `update` makes of it.
        fn replace<E>(
            slot: &mut Vec<u8>,
            update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, E>,
            log: impl FnOnce(&[u8]) -> Lsn,
        ) -> Result<Lsn, E> {
            let Some(v) = update(Some(slot))? else {
                return Ok(0);
            };
            let lsn = log(&v);
            *slot = v;
            Ok(lsn)
        }
        // A key that exists is updated in place, without the owned copy of
        // the key that an entry needs.
        if let Some(mut slot) = self.strings.get_mut(key) {
            return replace(&mut slot, update, log);
        }
        absent()?;
        match self.strings.entry(key.to_vec()) {
            // Made meanwhile by another writer.
            Entry::Occupied(mut e) => replace(e.get_mut(), update, log),
            Entry::Vacant(e) => {
                let Some(v) = update(None)? else {
                    return Ok(0);
                };
                let lsn = log(&v);
                e.insert(v);
                Ok(lsn)
            }
        }
    }

    /// Sets string `key` (the caller has removed a key of another type).
    pub fn put_string(&self, key: &[u8], value: Vec<u8>) {
        self.strings.insert(key.to_vec(), value);
    }

    // --------------------------------------------------------- databases

    /// Every stored name: boards (empty ones too), hashes, strings, and
    /// the keys that have an expiry.
    pub(crate) fn all_names(&self, boards: &[String]) -> Vec<Vec<u8>> {
        let mut names: Vec<Vec<u8>> = boards
            .iter()
            .map(|b| b.as_bytes().to_vec())
            .chain(self.hashes.iter().map(|e| e.key().clone()))
            .chain(self.strings.iter().map(|e| e.key().clone()))
            .chain(self.expires.lock().keys().cloned())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// How many of the keys `within` accepts have an expiry, and the
    /// average time to live of up to `sample` of them.
    pub fn expiring_where(
        &self,
        within: &dyn Fn(&[u8]) -> bool,
        now_ms: i64,
        sample: usize,
    ) -> (usize, i64) {
        if self.expiring() == 0 {
            return (0, 0);
        }
        let e = self.expires.lock();
        let (mut n, mut sum, mut summed) = (0usize, 0i128, 0i128);
        for (k, &at) in e.iter() {
            if within(k) {
                n += 1;
                if (summed as usize) < sample {
                    sum += i128::from((at - now_ms).max(0));
                    summed += 1;
                }
            }
        }
        (
            n,
            if summed == 0 {
                0
            } else {
                (sum / summed) as i64
            },
        )
    }

    /// Renames the hashes, strings and expiries of `pairs` at once (the
    /// boards are the caller's): what was at a new name that is not
    /// itself renamed is dropped.
    pub(crate) fn rename(&self, pairs: &[(Vec<u8>, Vec<u8>)]) {
        use crate::service::databases::rename_with;
        for (to, v) in rename_with(pairs, |k| self.hashes.remove(k).map(|(_, v)| v)) {
            self.hashes.insert(to.to_vec(), v);
        }
        for (to, v) in rename_with(pairs, |k| self.strings.remove(k).map(|(_, v)| v)) {
            self.strings.insert(to.to_vec(), v);
        }
        let mut e = self.expires.lock();
        for (to, v) in rename_with(pairs, |k| e.remove(k)) {
            e.insert(to.to_vec(), v);
        }
        self.expiring.store(e.len(), Ordering::Relaxed);
    }
}
