//! The Redis string commands: GET, SET and its family (SETNX, SETEX,
//! GETSET, MSET, MSETNX…), GETDEL, GETEX, the counters (INCRBY,
//! INCRBYFLOAT), APPEND, SETRANGE, GETRANGE and STRLEN, with the LSN to
//! wait for (see [`super::keys`]).
//!
//! Every change of a value is logged as the value it left (`SetString`):
//! a counter as the SET of its result, as Redis propagates INCRBYFLOAT, so
//! replay computes nothing. A SET over a key of another type replaces it
//! (a board is dropped as DEL drops it), in the same record.

use podium_core::error::{ApiError, Code};
use podium_core::keystore::{
    string2ll, GetExpiry, KeyType, LongDouble, SetCond, SetDone, SetExpiry, SetOpts, MAX_STRING_LEN,
};
use podium_core::memory;

use super::Service;
use crate::keyspace::{wrong_type, Lsn};
use crate::storage::record::{LogOp, StrExpiry};

fn invalid(msg: &str) -> ApiError {
    ApiError::new(Code::InvalidArgument, msg)
}

fn too_long() -> ApiError {
    invalid("string exceeds maximum allowed size (proto-max-bulk-len)")
}

/// Refuses a value of `len` bytes that would not fit the memory budget
/// (a SETRANGE offset or an APPEND may ask for hundreds of MB at once).
fn room(len: u64, old: usize) -> Result<(), ApiError> {
    let more = (len as usize).saturating_sub(old);
    if more > 0 && !memory::room_for(more) {
        return Err(memory::refusal());
    }
    Ok(())
}

impl Service {
    /// Refuses a string command on a key of another type. Call with the
    /// gate held.
    fn check_string(&self, key: &[u8]) -> Result<(), ApiError> {
        match self.keyspace.key_type(key, self) {
            Some(KeyType::Zset | KeyType::Hash) => Err(wrong_type()),
            _ => Ok(()),
        }
    }

    /// Whether `key` holds something a string must replace: a hash, or a
    /// board (with members or not: its config goes with the key).
    fn holds_non_string(&self, key: &[u8]) -> bool {
        self.keyspace.is_hash(key)
            || std::str::from_utf8(key).is_ok_and(|name| self.store.get(name).is_some())
    }

    /// GET.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ApiError> {
        self.read_string(key, |v| v.map(<[u8]>::to_vec))
    }

    /// MGET: a key of another type reads as no key.
    pub fn mget(&self, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        keys.iter()
            .map(|k| {
                self.purge_if_expired(k);
                let _gate = self.reading(k);
                let v = self.keyspace.string(k);
                self.note_lookup(v.is_some());
                v
            })
            .collect()
    }

    /// SET and its family: see [`podium_core::keystore::KeyStore::set`].
    pub fn set(&self, key: &[u8], value: &[u8], opts: SetOpts) -> Result<(SetDone, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        {
            let _gate = self.shared();
            if let Some(done) = self.set_locked(key, value, opts, false)? {
                return Ok(done);
            }
        }
        // Replacing a board or a hash: with every other writer excluded,
        // as DEL.
        let _gate = self.exclusive();
        Ok(self
            .set_locked(key, value, opts, true)?
            .expect("a SET with the gate held exclusively replaces any key"))
    }

    /// SET with the gate held (exclusively when `replace`). `None`: the
    /// key holds another type and the gate is not exclusive.
    fn set_locked(
        &self,
        key: &[u8],
        value: &[u8],
        opts: SetOpts,
        replace: bool,
    ) -> Result<Option<(SetDone, Lsn)>, ApiError> {
        let ty = self.keyspace.key_type(key, self);
        if opts.get && matches!(ty, Some(KeyType::Zset | KeyType::Hash)) {
            return Err(wrong_type());
        }
        let old = if opts.get {
            self.keyspace.string(key)
        } else {
            None
        };
        let found = ty.is_some();
        let refused = match opts.cond {
            SetCond::Always => false,
            SetCond::Nx => found,
            SetCond::Xx => !found,
        };
        if refused {
            return Ok(Some((SetDone { set: false, old }, 0)));
        }
        // A key holds one type: a string found needs no other lookup.
        if ty != Some(KeyType::String) && self.holds_non_string(key) {
            if !replace {
                return Ok(None);
            }
            // Not logged apart: the string's record replaces the key on
            // replay. KEEPTTL keeps the replaced key's expiry, as Redis
            // keeps it.
            let kept = self.keyspace.expiry(key);
            self.keyspace.delete(key, self);
            if let (SetExpiry::Keep, Some(at)) = (opts.expiry, kept) {
                self.keyspace.set_expiry(key, at);
            }
        }
        let expiry = match opts.expiry {
            SetExpiry::Clear => StrExpiry::Clear,
            SetExpiry::Keep => StrExpiry::Keep,
            SetExpiry::At(at) => StrExpiry::At(at),
        };
        let lsn = self.keyspace.supdate(
            key,
            || Ok(()),
            |_| Ok::<_, ApiError>(Some(value.to_vec())),
            |v| {
                let lsn = self.append(&LogOp::SetString {
                    key: key.to_vec(),
                    value: v.to_vec(),
                    expiry,
                });
                self.apply_expiry(key, expiry);
                lsn
            },
        )?;
        Ok(Some((SetDone { set: true, old }, lsn)))
    }

    fn apply_expiry(&self, key: &[u8], expiry: StrExpiry) {
        match expiry {
            StrExpiry::Clear => {
                self.keyspace.forget_expiry(key);
            }
            StrExpiry::Keep => {}
            StrExpiry::At(at) => self.keyspace.set_expiry(key, at),
        }
    }

    /// MSET, or MSETNX with `nx`: whether the values were set.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])], nx: bool) -> Result<(bool, Lsn), ApiError> {
        self.writable()?;
        for (k, _) in pairs {
            self.purge_if_expired(k);
        }
        let _gate = self.exclusive();
        if nx
            && pairs
                .iter()
                .any(|(k, _)| self.keyspace.key_type(k, self).is_some())
        {
            return Ok((false, 0));
        }
        for (k, v) in pairs {
            if self.holds_non_string(k) {
                self.keyspace.delete(k, self);
            }
            self.keyspace.forget_expiry(k);
            self.keyspace.put_string(k, v.to_vec());
        }
        let lsn = self.append(&LogOp::MSet {
            pairs: pairs
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect(),
        });
        Ok((true, lsn))
    }

    /// GETDEL: the value, and the key deleted.
    pub fn getdel(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.exclusive();
        self.check_string(key)?;
        let Some(v) = self.keyspace.string(key) else {
            return Ok((None, 0));
        };
        let (_, lsn) = self.delete_key_locked(key);
        Ok((Some(v), lsn))
    }

    /// GETEX: the value, then the expiry changed as `expiry` says (a time
    /// not in the future deletes the key).
    pub fn getex(&self, key: &[u8], expiry: GetExpiry) -> Result<(Option<Vec<u8>>, Lsn), ApiError> {
        if expiry == GetExpiry::Keep {
            return Ok((self.get(key)?, 0));
        }
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.exclusive();
        self.check_string(key)?;
        let Some(v) = self.keyspace.string(key) else {
            return Ok((None, 0));
        };
        let lsn = match expiry {
            GetExpiry::Keep => 0,
            GetExpiry::Persist => {
                if self.keyspace.expiry(key).is_some() {
                    let lsn = self.append(&LogOp::Persist { key: key.to_vec() });
                    self.keyspace.forget_expiry(key);
                    lsn
                } else {
                    0
                }
            }
            GetExpiry::At(at) if at <= self.now_ms() => self.delete_key_locked(key).1,
            GetExpiry::At(at) => {
                let lsn = self.append(&LogOp::Expire {
                    key: key.to_vec(),
                    at_ms: at,
                });
                self.keyspace.set_expiry(key, at);
                lsn
            }
        };
        Ok((Some(v), lsn))
    }

    /// A read-modify-write of string `key` (created when absent), logged
    /// as the SET of its result with the key's expiry kept, under the gate
    /// like every write. `update` declines with `Ok(None)`.
    fn supdate(
        &self,
        key: &[u8],
        update: impl FnOnce(Option<&[u8]>) -> Result<Option<Vec<u8>>, ApiError>,
    ) -> Result<Lsn, ApiError> {
        self.writable()?;
        self.purge_if_expired(key);
        let _gate = self.shared();
        self.keyspace.supdate(
            key,
            || self.check_string(key),
            update,
            |v| {
                self.append(&LogOp::SetString {
                    key: key.to_vec(),
                    value: v.to_vec(),
                    expiry: StrExpiry::Keep,
                })
            },
        )
    }

    /// INCRBY (and INCR, DECR, DECRBY): the value after adding `by`.
    pub fn incrby(&self, key: &[u8], by: i64) -> Result<(i64, Lsn), ApiError> {
        let mut sum = 0;
        let lsn = self.supdate(key, |old| {
            let old = match old {
                None => 0,
                Some(v) => string2ll(v)
                    .ok_or_else(|| invalid("value is not an integer or out of range"))?,
            };
            sum = old
                .checked_add(by)
                .ok_or_else(|| invalid("increment or decrement would overflow"))?;
            Ok(Some(sum.to_string().into_bytes()))
        })?;
        Ok((sum, lsn))
    }

    /// INCRBYFLOAT: the stored value, then the increment, read as C `long
    /// double`s (in Redis's order, so a bad stored value is reported
    /// first); the sum as Redis prints it.
    pub fn incrbyfloat(&self, key: &[u8], by: &[u8]) -> Result<(Vec<u8>, Lsn), ApiError> {
        let mut out = Vec::new();
        let lsn = self.supdate(key, |old| {
            let not_float = || invalid("value is not a valid float");
            let old = match old {
                None => LongDouble::from_i64(0),
                Some(v) => LongDouble::parse(v).ok_or_else(not_float)?,
            };
            let by = LongDouble::parse(by).ok_or_else(not_float)?;
            let sum = old + by;
            if sum.is_nan_or_inf() {
                return Err(invalid("increment would produce NaN or Infinity"));
            }
            out = sum.to_human().into_bytes();
            Ok(Some(out.clone()))
        })?;
        Ok((out, lsn))
    }

    /// APPEND: the length after (a missing key is created, even empty).
    pub fn append_string(&self, key: &[u8], value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        let mut len = 0;
        let lsn = self.supdate(key, |old| {
            let old = old.unwrap_or_default();
            let total = old.len() as u64 + value.len() as u64;
            if total > MAX_STRING_LEN {
                return Err(too_long());
            }
            room(total, old.len())?;
            let mut v = Vec::with_capacity(total as usize);
            v.extend_from_slice(old);
            v.extend_from_slice(value);
            len = total;
            Ok(Some(v))
        })?;
        Ok((len, lsn))
    }

    /// SETRANGE: the length after. Setting nothing changes nothing (and
    /// creates no key); a gap before `offset` is filled with zero bytes.
    pub fn setrange(&self, key: &[u8], offset: u64, value: &[u8]) -> Result<(u64, Lsn), ApiError> {
        let mut len = 0;
        let lsn = self.supdate(key, |old| {
            if value.is_empty() {
                len = old.map_or(0, |o| o.len() as u64);
                return Ok(None);
            }
            let end = offset
                .checked_add(value.len() as u64)
                .filter(|&e| e <= MAX_STRING_LEN)
                .ok_or_else(too_long)?;
            let old = old.unwrap_or_default();
            let total = end.max(old.len() as u64);
            room(total, old.len())?;
            let mut v = Vec::with_capacity(total as usize);
            v.extend_from_slice(old);
            v.resize(total as usize, 0);
            v[offset as usize..end as usize].copy_from_slice(value);
            len = total;
            Ok(Some(v))
        })?;
        Ok((len, lsn))
    }

    /// Runs `f` on string `key`'s value (`None`: no such key), counting
    /// the lookup as INFO's keyspace hit or miss (a key of another type is
    /// a hit, as in Redis, before its WRONGTYPE).
    fn read_string<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, ApiError> {
        self.purge_if_expired(key);
        let _gate = self.reading(key);
        // A key holds one type: a string found needs no type check.
        let mut f = Some(f);
        if let Some(r) = self
            .keyspace
            .read_string(key, |v| v.map(|v| (f.take().unwrap())(Some(v))))
        {
            self.note_lookup(true);
            return Ok(r);
        }
        if let Err(e) = self.check_string(key) {
            self.note_lookup(true);
            return Err(e);
        }
        self.note_lookup(false);
        Ok((f.take().expect("not called on a miss"))(None))
    }

    /// GETRANGE, with Redis's index rules: inclusive, negative from the
    /// end, clamped to the string.
    pub fn getrange(&self, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>, ApiError> {
        self.read_string(key, |v| {
            let Some(v) = v else { return Vec::new() };
            let len = v.len() as i64;
            if start < 0 && end < 0 && start > end {
                return Vec::new();
            }
            let start = if start < 0 { len + start } else { start }.max(0);
            let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
            if start > end || len == 0 {
                return Vec::new();
            }
            v[start as usize..=end as usize].to_vec()
        })
    }

    /// STRLEN (0: no such key).
    pub fn strlen(&self, key: &[u8]) -> Result<u64, ApiError> {
        self.read_string(key, |v| v.map_or(0, |v| v.len() as u64))
    }

    /// LCS: both values read (each under its own gate, a missing key as
    /// empty) before the table is built, so no gate is held through it.
    pub fn lcs(&self, key1: &[u8], key2: &[u8]) -> Result<podium_core::keystore::Lcs, ApiError> {
        let a = self.read_string(key1, |v| v.map(<[u8]>::to_vec));
        let b = self.read_string(key2, |v| v.map(<[u8]>::to_vec));
        let (a, b) = (a?.unwrap_or_default(), b?.unwrap_or_default());
        podium_core::keystore::lcs(&a, &b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::rec;
    use crate::service::ZaddOpts;
    use podium_core::keystore::ExpireCond;
    use podium_core::schedule::{Clock, ManualClock};

    fn set(svc: &Service, k: &str, v: &str) {
        svc.set(k.as_bytes(), v.as_bytes(), SetOpts::default())
            .unwrap();
    }

    #[test]
    fn set_replaces_any_type_and_get_refuses_them() {
        let svc = Service::in_memory();
        svc.zadd(b"z", vec![rec("a", 1.0)], ZaddOpts::default())
            .unwrap();
        svc.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(svc.get(b"z").unwrap_err().code, Code::WrongType);
        assert_eq!(svc.get(b"h").unwrap_err().code, Code::WrongType);
        assert_eq!(svc.incrby(b"z", 1).unwrap_err().code, Code::WrongType);
        let get = SetOpts {
            get: true,
            ..Default::default()
        };
        assert_eq!(svc.set(b"z", b"x", get).unwrap_err().code, Code::WrongType);
        let now = svc.now_ms();
        svc.expire_at_ms(b"h", now + 10_000, ExpireCond::Always)
            .unwrap();
        let keep = SetOpts {
            expiry: SetExpiry::Keep,
            ..Default::default()
        };
        set(&svc, "z", "s");
        svc.set(b"h", b"t", keep).unwrap();
        assert_eq!(svc.key_type(b"z"), Some(KeyType::String));
        assert!(svc.store.get("z").is_none(), "the board is dropped");
        assert_eq!(svc.get(b"h").unwrap(), Some(b"t".to_vec()));
        // The deadline itself: the time left depends on the clock's tick.
        assert_eq!(
            svc.expire_time_ms(b"h"),
            now + 10_000,
            "KEEPTTL keeps the hash's expiry"
        );
        assert_eq!(svc.hget(b"z", b"f").unwrap_err().code, Code::WrongType);
        assert_eq!(
            svc.zread(b"z", |b| b.len()).unwrap_err().code,
            Code::WrongType
        );
        assert_eq!(svc.dbsize(), 2);
        assert_eq!(svc.keys(b"*"), vec![b"h".to_vec(), b"z".to_vec()]);
    }

    #[test]
    fn counters_and_ranges() {
        let svc = Service::in_memory();
        assert_eq!(svc.incrby(b"n", 5).unwrap().0, 5);
        assert_eq!(svc.incrby(b"n", -7).unwrap().0, -2);
        set(&svc, "big", &i64::MAX.to_string());
        assert!(svc.incrby(b"big", 1).is_err());
        set(&svc, "f", "10.5");
        assert_eq!(svc.incrbyfloat(b"f", b"0.1").unwrap().0, b"10.6");
        assert!(svc.incrbyfloat(b"f", b"inf").is_err());
        assert_eq!(svc.get(b"f").unwrap(), Some(b"10.6".to_vec()));
        assert_eq!(svc.append_string(b"a", b"").unwrap().0, 0);
        assert_eq!(svc.key_type(b"a"), Some(KeyType::String));
        assert_eq!(svc.append_string(b"a", b"hello").unwrap().0, 5);
        assert_eq!(svc.setrange(b"a", 7, b"!").unwrap().0, 8);
        assert_eq!(svc.get(b"a").unwrap(), Some(b"hello\0\0!".to_vec()));
        assert_eq!(svc.setrange(b"none", 3, b"").unwrap().0, 0);
        assert_eq!(svc.key_type(b"none"), None);
        assert_eq!(
            svc.setrange(b"a", MAX_STRING_LEN, b"x")
                .unwrap_err()
                .message,
            "string exceeds maximum allowed size (proto-max-bulk-len)"
        );
        assert_eq!(svc.getrange(b"a", 0, -1).unwrap(), b"hello\0\0!");
        assert_eq!(svc.getrange(b"a", -3, -1).unwrap(), b"\0\0!");
        assert_eq!(svc.getrange(b"a", -1, -5).unwrap(), b"");
        assert_eq!(
            svc.getrange(b"a", i64::MIN, i64::MAX).unwrap(),
            b"hello\0\0!"
        );
        assert_eq!(svc.strlen(b"a").unwrap(), 8);
        assert_eq!(svc.getdel(b"a").unwrap().0, Some(b"hello\0\0!".to_vec()));
        assert_eq!(svc.strlen(b"a").unwrap(), 0);
    }

    #[test]
    fn lcs_reads_both_strings() {
        let svc = Service::in_memory();
        set(&svc, "a", "ohmytext");
        set(&svc, "b", "mynewtext");
        assert_eq!(svc.lcs(b"a", b"b").unwrap().text, b"mytext");
        assert_eq!(svc.lcs(b"b", b"a").unwrap().ranges.len(), 2);
        assert_eq!(svc.lcs(b"a", b"none").unwrap().text, b"");
    }

    #[test]
    fn set_conditions_and_mset() {
        let svc = Service::in_memory();
        let nx = SetOpts {
            cond: SetCond::Nx,
            get: true,
            ..Default::default()
        };
        let (d, _) = svc.set(b"k", b"1", nx).unwrap();
        assert_eq!((d.set, d.old), (true, None));
        let (d, _) = svc.set(b"k", b"2", nx).unwrap();
        assert_eq!((d.set, d.old), (false, Some(b"1".to_vec())));
        let xx = SetOpts {
            cond: SetCond::Xx,
            ..Default::default()
        };
        assert!(!svc.set(b"nope", b"1", xx).unwrap().0.set);
        svc.hset(b"h", &[(b"f", b"v")]).unwrap();
        assert!(!svc.mset(&[(b"new", b"1"), (b"h", b"2")], true).unwrap().0);
        assert_eq!(svc.key_type(b"new"), None);
        assert!(svc.mset(&[(b"new", b"1"), (b"h", b"2")], false).unwrap().0);
        assert_eq!(
            svc.mget(&[b"new", b"h", b"k", b"zz"]),
            vec![
                Some(b"1".to_vec()),
                Some(b"2".to_vec()),
                Some(b"1".to_vec()),
                None
            ]
        );
    }

    fn open(dir: &std::path::Path, clock: std::sync::Arc<ManualClock>) -> Service {
        let store = podium_engine::Store::new();
        let (storage, aux, report) =
            crate::storage::open(dir, crate::FsyncPolicy::Always, &store).unwrap();
        Service::new(store, Some(storage), aux, report, u64::MAX).with_clock(clock)
    }

    /// Every kind of string write comes back after a restart, from the
    /// log alone and from a snapshot and the log after it.
    #[test]
    fn strings_survive_restarts_through_log_and_snapshot() {
        use chrono::TimeZone;
        let dir = std::env::temp_dir().join(format!("podium-str-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let clock = std::sync::Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 21, 12, 0, 0)
                .unwrap(),
        ));
        let now = clock.now().timestamp_millis();
        let check = |svc: &Service| {
            assert_eq!(svc.get(b"plain").unwrap(), Some(b"v".to_vec()));
            assert_eq!(svc.get(b"ex").unwrap(), Some(b"e".to_vec()));
            assert_eq!(svc.expire_time_ms(b"ex"), now + 100_000);
            assert_eq!(svc.get(b"kept").unwrap(), Some(b"k2".to_vec()));
            assert_eq!(svc.expire_time_ms(b"kept"), now + 50_000);
            assert_eq!(svc.get(b"n").unwrap(), Some(b"41".to_vec()));
            assert_eq!(svc.get(b"f").unwrap(), Some(b"10.6".to_vec()));
            assert_eq!(svc.get(b"app").unwrap(), Some(b"ab\0\0z".to_vec()));
            assert_eq!(
                svc.mget(&[b"m1", b"m2"]),
                vec![Some(b"1".to_vec()), Some(Vec::new())]
            );
            assert_eq!(svc.key_type(b"was-board"), Some(KeyType::String));
            assert!(svc.store.get("was-board").is_none());
            assert_eq!(svc.key_type(b"was-hash"), Some(KeyType::String));
            assert_eq!(svc.get(b"gone").unwrap(), None);
            assert_eq!(svc.expire_time_ms(b"persisted"), -1);
            assert_eq!(svc.get(b"persisted").unwrap(), Some(b"p".to_vec()));
            assert_eq!(svc.hget(b"h", b"x").unwrap(), Some(b"1.5".to_vec()));
        };
        let writes = |svc: &Service, part: u8| {
            let at = |ms| SetOpts {
                expiry: SetExpiry::At(ms),
                ..Default::default()
            };
            if part == 0 {
                set(svc, "plain", "v");
                svc.set(b"ex", b"e", at(now + 100_000)).unwrap();
                svc.set(b"kept", b"k", at(now + 50_000)).unwrap();
                assert_eq!(svc.incrby(b"n", 42).unwrap().0, 42);
                set(svc, "f", "10.5");
                svc.zadd(b"was-board", vec![rec("a", 1.0)], ZaddOpts::default())
                    .unwrap();
                svc.hset(b"was-hash", &[(b"f", b"v")]).unwrap();
                svc.set(b"persisted", b"p", at(now + 1000)).unwrap();
            } else {
                let keep = SetOpts {
                    expiry: SetExpiry::Keep,
                    ..Default::default()
                };
                svc.set(b"kept", b"k2", keep).unwrap();
                svc.incrby(b"n", -1).unwrap();
                svc.incrbyfloat(b"f", b"0.1").unwrap();
                svc.append_string(b"app", b"ab").unwrap();
                svc.setrange(b"app", 4, b"z").unwrap();
                svc.mset(&[(b"m1", b"1"), (b"m2", b"")], false).unwrap();
                set(svc, "was-board", "s");
                svc.set(b"was-hash", b"s", keep).unwrap();
                set(svc, "gone", "x");
                svc.getdel(b"gone").unwrap();
                svc.getex(b"persisted", GetExpiry::Persist).unwrap();
                svc.hincrbyfloat(b"h", b"x", LongDouble::parse(b"1.5").unwrap())
                    .unwrap();
            }
        };
        {
            let svc = open(&dir, clock.clone());
            writes(&svc, 0);
            writes(&svc, 1);
            check(&svc);
            svc.close().unwrap();
        }
        // From the log alone.
        let svc = open(&dir, clock.clone());
        check(&svc);
        svc.close().unwrap();
        drop(svc);
        let _ = std::fs::remove_dir_all(&dir);
        {
            let svc = open(&dir, clock.clone());
            writes(&svc, 0);
            assert!(svc.maybe_snapshot(true).unwrap().is_some());
            writes(&svc, 1);
            svc.close().unwrap();
        }
        // From a snapshot (with its strings section) and the log after it.
        let svc = open(&dir, clock.clone());
        check(&svc);
        assert!(svc.maybe_snapshot(true).unwrap().is_some());
        svc.close().unwrap();
        drop(svc);
        // From a snapshot alone.
        let svc = open(&dir, clock);
        check(&svc);
        drop(svc);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
