//! The Redis commands that move or copy a whole key, RENAME, RENAMENX and
//! COPY, and what OBJECT and MEMORY USAGE report of a key. A key of
//! any type moves with its expiry; a board moves with everything kept
//! for it (members, config, names and data, search index, its archives,
//! its reset period), and a copy of a board copies its members and config.
//! Each is one log record ([`LogOp::RenameKey`], [`LogOp::CopyKey`]),
//! applied and appended under the exclusive gate.

use podium_core::error::{ApiError, Code};
use podium_core::keystore::{string2ll, KeyInfo};
use podium_core::memory;
use podium_engine::Board;

use super::Service;
use crate::keyspace::{board_name, KeyType, Lsn};
use crate::storage::record::LogOp;

/// Redis's compact encodings' limits at their defaults
/// (`zset-max-listpack-entries`, `hash-max-listpack-entries`, and
/// `*-max-listpack-value` for both).
const ZSET_COMPACT_ENTRIES: usize = 128;
const HASH_COMPACT_ENTRIES: usize = 512;
const COMPACT_VALUE: usize = 64;
/// `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`: a longer string is `raw`.
const EMBSTR_LIMIT: usize = 44;

/// podium's estimate of a hash entry's bookkeeping beside its bytes (two
/// vector headers and the table's slot).
const HASH_ENTRY_OVERHEAD: usize = 2 * 24 + 16;

impl Service {
    /// RENAME / RENAMENX: `None` when there is no key `src`;
    /// `Some(false)` when `nx` kept it from moving.
    pub fn rename(
        &self,
        src: &[u8],
        dst: &[u8],
        nx: bool,
    ) -> Result<(Option<bool>, Lsn), ApiError> {
        self.move_key(src, dst, !nx, false)
    }

    /// COPY: whether `dst` became a copy of `src` (not when there is no
    /// `src`, nor when `dst` exists and not `replace`).
    pub fn copy(&self, src: &[u8], dst: &[u8], replace: bool) -> Result<(bool, Lsn), ApiError> {
        let (done, lsn) = self.move_key(src, dst, replace, true)?;
        Ok((done == Some(true), lsn))
    }

    fn move_key(
        &self,
        src: &[u8],
        dst: &[u8],
        replace: bool,
        copy: bool,
    ) -> Result<(Option<bool>, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(src);
        self.purge_if_expired(dst);
        let _gate = self.exclusive();
        let Some(kind) = self.keyspace.key_type(src, self) else {
            return Ok((None, 0));
        };
        if src == dst {
            // (COPY refuses the same key before looking at it.)
            return Ok((Some(replace), 0));
        }
        if !replace && self.keyspace.key_type(dst, self).is_some() {
            return Ok((Some(false), 0));
        }
        let board = match kind {
            KeyType::Zset => Some((board_name(src)?, board_name(dst)?)),
            KeyType::Hash | KeyType::String => None,
        };
        if copy {
            let bytes = self.key_info_locked(src, kind).map_or(0, |i| i.bytes);
            if !memory::room_for(bytes as usize) {
                return Err(ApiError::new(
                    Code::OutOfMemory,
                    "no memory left to copy the key",
                ));
            }
        }
        // The destination is replaced whatever it holds (an empty board's
        // config too); the record says so, and replay does the same.
        self.keyspace.delete(dst, self);
        let expiry = self.keyspace.expiry(src);
        match board {
            Some((from, to)) => {
                if copy {
                    self.store.copy(from, to)?;
                } else {
                    self.store.rename(from, to)?;
                }
                let mut periods = self.periods.lock();
                let label = match copy {
                    true => periods.get(from).cloned(),
                    false => periods.remove(from),
                };
                if let Some(label) = label {
                    periods.insert(to.to_string(), label);
                }
            }
            None => match (kind, copy) {
                (KeyType::Hash, true) => self.keyspace.copy_hash(src, dst),
                (KeyType::Hash, false) => self.keyspace.move_hash(src, dst),
                (_, true) => self.keyspace.copy_string(src, dst),
                (_, false) => self.keyspace.move_string(src, dst),
            },
        }
        if let Some(at) = expiry {
            if !copy {
                self.keyspace.forget_expiry(src);
            }
            self.keyspace.set_expiry(dst, at);
        }
        let (from, to) = (src.to_vec(), dst.to_vec());
        let lsn = self.append(&match copy {
            true => LogOp::CopyKey { from, to, kind },
            false => LogOp::RenameKey { from, to, kind },
        });
        if kind == KeyType::Zset {
            self.waiters.signal(dst);
        }
        Ok((Some(true), lsn))
    }

    /// OBJECT / MEMORY USAGE (`None`: no such key).
    pub fn key_info(&self, key: &[u8]) -> Option<KeyInfo> {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        let kind = self.keyspace.key_type(key, self)?;
        self.key_info_locked(key, kind)
    }

    fn key_info_locked(&self, key: &[u8], kind: KeyType) -> Option<KeyInfo> {
        let base = key.len() + 64;
        match kind {
            KeyType::Zset => {
                let b = self.store.get(std::str::from_utf8(key).ok()?)?;
                let g = b.read();
                let len = g.len();
                let compact = len <= ZSET_COMPACT_ENTRIES
                    && g.iter().all(|(m, _, _)| m.len() <= COMPACT_VALUE);
                let bytes = base + std::mem::size_of::<Board>() + g.heap_bytes();
                Some(KeyInfo {
                    ty: kind,
                    len,
                    compact,
                    int: None,
                    bytes: bytes as u64,
                })
            }
            KeyType::Hash => self.keyspace.read_hash(key, |h| {
                let h = h?;
                let compact = h.len() <= HASH_COMPACT_ENTRIES
                    && h.iter()
                        .all(|(f, v)| f.len() <= COMPACT_VALUE && v.len() <= COMPACT_VALUE);
                let bytes: usize = h
                    .iter()
                    .map(|(f, v)| f.len() + v.len() + HASH_ENTRY_OVERHEAD)
                    .sum();
                Some(KeyInfo {
                    ty: kind,
                    len: h.len(),
                    compact,
                    int: None,
                    bytes: (base + bytes) as u64,
                })
            }),
            // `tryObjectEncoding`: at most 20 bytes that `string2l` reads
            // are an integer, else at most 44 bytes are embedded.
            KeyType::String => self.keyspace.read_string(key, |v| {
                let v = v?;
                let int = (v.len() <= 20).then(|| string2ll(v)).flatten();
                Some(KeyInfo {
                    ty: kind,
                    len: v.len(),
                    compact: v.len() <= EMBSTR_LIMIT,
                    int,
                    bytes: (base + if int.is_some() { 0 } else { v.len() }) as u64,
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::service::testutil::*;
    use crate::service::ZaddOpts;
    use crate::storage::record::SubmitRec;
    use podium_core::keystore::{ExpireCond, KeyType};

    /// An entry with a display name, which a move must carry along.
    fn named(m: &str, s: f64) -> SubmitRec {
        SubmitRec {
            name: Some(format!("name of {m}")),
            ..rec(m, s)
        }
    }

    fn zadd(svc: &Service, key: &str, members: &[(&str, f64)]) {
        let recs = members.iter().map(|(m, s)| named(m, *s)).collect();
        svc.zadd(key.as_bytes(), recs, ZaddOpts::default()).unwrap();
    }

    #[tokio::test]
    async fn renames_and_copies_are_replayed_and_kept_by_snapshots() {
        let dir = tmp("keymove");
        let at = {
            let svc = open(&dir);
            svc.board_put("lb", &serde_json::json!({"order": "asc"}))
                .await
                .unwrap();
            zadd(&svc, "lb", &[("a", 1.0), ("b", 2.0)]);
            svc.hset(b"h", &[(b"f", b"v")]).unwrap();
            zadd(&svc, "old", &[("x", 9.0)]);
            let at = svc.now_ms() + 3_600_000;
            svc.expire_at_ms(b"lb", at, ExpireCond::Always).unwrap();
            // Missing sources, NX, the same key.
            assert_eq!(svc.rename(b"nope", b"x", false).unwrap().0, None);
            assert_eq!(svc.rename(b"lb", b"h", true).unwrap().0, Some(false));
            assert_eq!(svc.rename(b"lb", b"lb", true).unwrap(), (Some(false), 0));
            assert_eq!(svc.rename(b"lb", b"lb", false).unwrap(), (Some(true), 0));
            assert!(!svc.copy(b"lb", b"h", false).unwrap().0);
            // A board onto a hash, a hash onto a board.
            assert_eq!(svc.rename(b"lb", b"h", false).unwrap().0, Some(true));
            assert_eq!(svc.key_type(b"lb"), None);
            assert_eq!(svc.pttl(b"lb"), -2);
            assert!(svc.pttl(b"h") > 0);
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            svc.hset(b"h2", &[(b"g", b"w")]).unwrap();
            assert_eq!(svc.rename(b"h2", b"old", false).unwrap().0, Some(true));
            assert!(svc.copy(b"h", b"c", false).unwrap().0);
            assert!(svc.copy(b"old", b"hc", true).unwrap().0);
            zadd(&svc, "c", &[("z", 0.5)]);
            // A board name cannot hold a control character.
            assert!(svc.rename(b"h", b"bad\x01", false).is_err());
            assert!(svc.rename(b"h", b"\xff", false).is_err());
            svc.close().unwrap();
            at
        };
        let svc = open(&dir);
        let members = |k: &[u8]| {
            svc.zread(k, |b| {
                b.iter()
                    .map(|(m, s, _)| (String::from_utf8(m.to_vec()).unwrap(), s))
                    .collect::<Vec<_>>()
            })
            .unwrap()
        };
        // The renamed board kept its config (asc), members, names, expiry.
        assert_eq!(
            members(b"h"),
            Some(vec![("a".to_string(), 1.0), ("b".to_string(), 2.0)])
        );
        assert_eq!(
            svc.store.read("h", |b| b.config().order).unwrap(),
            podium_engine::Order::Asc
        );
        assert_eq!(svc.expire_time_ms(b"h"), at);
        assert_eq!(
            svc.store
                .read("h", |b| b.entry(b"a", 10).and_then(|e| e.entry.name))
                .unwrap()
                .as_deref(),
            Some("name of a")
        );
        assert!(svc.store.get("lb").is_none());
        // The copy is its own board with the copied expiry.
        assert_eq!(
            members(b"c").unwrap().len(),
            3,
            "a write to the copy stays in the copy"
        );
        assert_eq!(members(b"h").unwrap().len(), 2);
        assert_eq!(svc.expire_time_ms(b"c"), at);
        assert_eq!(svc.key_type(b"old"), Some(KeyType::Hash));
        assert_eq!(svc.hget(b"hc", b"g").unwrap(), Some(b"w".to_vec()));
        assert_eq!(svc.hget(b"old", b"g").unwrap(), Some(b"w".to_vec()));
        assert_eq!(svc.key_type(b"h2"), None);
    }

    #[test]
    fn key_info_follows_redis_encodings() {
        let svc = Service::in_memory();
        zadd(&svc, "small", &[("a", 1.0)]);
        let i = svc.key_info(b"small").unwrap();
        assert!(i.compact && i.ty == KeyType::Zset && i.len == 1 && i.bytes > 0);
        let long = "m".repeat(65);
        zadd(&svc, "long", &[(long.as_str(), 1.0)]);
        assert!(!svc.key_info(b"long").unwrap().compact);
        let many: Vec<(String, f64)> = (0..129).map(|i| (format!("m{i}"), i as f64)).collect();
        let refs: Vec<(&str, f64)> = many.iter().map(|(m, s)| (m.as_str(), *s)).collect();
        zadd(&svc, "many", &refs);
        let big = svc.key_info(b"many").unwrap();
        assert!(!big.compact && big.bytes > i.bytes);
        svc.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert!(svc.key_info(b"h").unwrap().compact);
        svc.hset(b"h", &[(b"f", &[b'v'; 65][..])]).unwrap();
        assert!(!svc.key_info(b"h").unwrap().compact);
        for i in 0..513 {
            let f = format!("f{i}");
            svc.hset(b"wide", &[(f.as_bytes(), b"v")]).unwrap();
            assert_eq!(svc.key_info(b"wide").unwrap().compact, i < 512, "{i}");
        }
        assert_eq!(svc.key_info(b"nope"), None);
    }
}
