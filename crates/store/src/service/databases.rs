//! What Redis's numbered databases need of the store, which knows only
//! stored names (the encoding is `podium_core::keystore::database`'s):
//! the whole-keyspace commands restricted to the names a predicate
//! accepts (DBSIZE, INFO keyspace, FLUSHDB), and the key-move primitive
//! of MOVE and SWAPDB — renames applied all at once, logged as one
//! [`LogOp::Rename`] record, replayed by [`rename_boards`] and
//! [`rename_aux`].

use std::collections::HashSet;

use podium_core::error::ApiError;
use podium_core::keystore::{KeyType, Lsn, Writes};
use podium_engine::Store;

use super::Service;
use crate::keyspace::board_name;
use crate::storage::record::LogOp;
use crate::storage::Aux;

/// The values `take` removes from the old names of `pairs`, each with
/// the new name it goes to, after `take` has also cleared every new name
/// that is not itself an old one (what a rename replaces).
pub(crate) fn rename_with<V>(
    pairs: &[(Vec<u8>, Vec<u8>)],
    mut take: impl FnMut(&[u8]) -> Option<V>,
) -> Vec<(&[u8], V)> {
    let taken: Vec<Option<V>> = pairs.iter().map(|(from, _)| take(from)).collect();
    let froms: HashSet<&[u8]> = pairs.iter().map(|(f, _)| &f[..]).collect();
    for (_, to) in pairs {
        if !froms.contains(&to[..]) {
            take(to);
        }
    }
    pairs
        .iter()
        .zip(taken)
        .filter_map(|((_, to), v)| Some((&to[..], v?)))
        .collect()
}

/// The boards of a rename: each board moves whole (config, members).
pub(crate) fn rename_boards(store: &Store, pairs: &[(Vec<u8>, Vec<u8>)]) {
    let moved = rename_with(pairs, |k| store.take(std::str::from_utf8(k).ok()?));
    for (to, board) in moved {
        // A rename's new name of a board was checked when it ran.
        if let Ok(name) = std::str::from_utf8(to) {
            let _ = store.place(name, board);
        }
    }
}

/// The rest of a rename in recovery: hashes, strings, expiries, periods.
pub(crate) fn rename_aux(aux: &mut Aux, pairs: &[(Vec<u8>, Vec<u8>)]) {
    for (to, v) in rename_with(pairs, |k| aux.hashes.remove(k)) {
        aux.hashes.insert(to.to_vec(), v);
    }
    for (to, v) in rename_with(pairs, |k| aux.strings.remove(k)) {
        aux.strings.insert(to.to_vec(), v);
    }
    for (to, v) in rename_with(pairs, |k| aux.expires.remove(k)) {
        aux.expires.insert(to.to_vec(), v);
    }
    let periods = &mut aux.periods;
    for (to, v) in rename_with(pairs, |k| periods.remove(std::str::from_utf8(k).ok()?)) {
        if let Ok(name) = std::str::from_utf8(to) {
            periods.insert(name.to_string(), v);
        }
    }
}

impl Service {
    /// Every stored name, empty boards and lone expiries included.
    fn all_names(&self) -> Vec<Vec<u8>> {
        let boards: Vec<String> = self.store.list().into_iter().map(|(n, _)| n).collect();
        self.keyspace.all_names(&boards)
    }

    /// How many keys `within` accepts.
    pub fn dbsize_where(&self, within: &dyn Fn(&[u8]) -> bool) -> u64 {
        let _gate = self.reading_all();
        self.keyspace
            .all_keys(self, self.now_ms())
            .iter()
            .filter(|k| within(k))
            .count() as u64
    }

    /// How many keys `within` accepts have an expiry, and the average
    /// time to live of up to 1024 of them.
    pub fn expiring_where(&self, within: &dyn Fn(&[u8]) -> bool) -> (usize, i64) {
        self.keyspace.expiring_where(within, self.now_ms(), 1024)
    }

    /// Deletes every key `within` accepts, empty boards too, as one
    /// logged unit; when that is every key, as FLUSHALL.
    pub fn flush_where(&self, within: &dyn Fn(&[u8]) -> bool) -> Result<Lsn, ApiError> {
        self.writable()?;
        self.atomically(Writes::Any, || {
            let names = self.all_names();
            if names.iter().all(|n| within(n)) {
                return self.flushall();
            }
            let mut lsn = 0;
            for n in names.iter().filter(|n| within(n)) {
                lsn = lsn.max(self.delete_key_locked(n).1);
            }
            Ok(lsn)
        })
    }

    /// Renames `from` to `to` unless `to` is a key or `from` is not;
    /// whether it was renamed.
    pub fn rename_nx(&self, from: &[u8], to: &[u8]) -> Result<(bool, Lsn), ApiError> {
        self.writable()?;
        self.purge_if_expired(from);
        self.purge_if_expired(to);
        let _gate = self.exclusive();
        let Some(ty) = self.keyspace.key_type(from, self) else {
            return Ok((false, 0));
        };
        if from == to || self.keyspace.key_type(to, self).is_some() {
            return Ok((false, 0));
        }
        if ty == KeyType::Zset {
            board_name(to)?;
        }
        let lsn = self.rename_locked(vec![(from.to_vec(), to.to_vec())]);
        Ok((true, lsn))
    }

    /// Renames every stored name `rename` gives a new one, at once.
    pub fn rename_where(&self, rename: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Result<Lsn, ApiError> {
        self.writable()?;
        let _gate = self.exclusive();
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = self
            .all_names()
            .into_iter()
            .filter_map(|n| {
                let to = rename(&n)?;
                (to != n).then_some((n, to))
            })
            .collect();
        for (from, to) in &pairs {
            if std::str::from_utf8(from).is_ok_and(|b| self.store.get(b).is_some()) {
                board_name(to)?;
            }
        }
        Ok(self.rename_locked(pairs))
    }

    /// Applies and logs a rename; call with the gate held exclusively.
    fn rename_locked(&self, pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Lsn {
        if pairs.is_empty() {
            return 0;
        }
        rename_boards(&self.store, &pairs);
        self.keyspace.rename(&pairs);
        {
            let mut periods = self.periods.lock();
            for (to, v) in rename_with(&pairs, |k| periods.remove(std::str::from_utf8(k).ok()?)) {
                if let Ok(name) = std::str::from_utf8(to) {
                    periods.insert(name.to_string(), v);
                }
            }
        }
        self.append(&LogOp::Rename { pairs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::testutil::*;
    use podium_core::keystore::database::{Database, DATABASES};
    use podium_core::keystore::{KeyStore, SetOpts};
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn zadd(db: &dyn KeyStore, key: &[u8], member: &str, score: f64) {
        let (r, _) = db.zadd(key, vec![rec(member, score)]).unwrap();
        r[0].as_ref().unwrap();
    }

    fn dbs(store: &Arc<dyn KeyStore>) -> Vec<Database> {
        (0..DATABASES)
            .map(|i| Database::new(store.clone(), i))
            .collect()
    }

    #[test]
    fn databases_keep_their_keys_apart_and_survive_a_restart() {
        let dir = tmp("databases-restart");
        {
            let store: Arc<dyn KeyStore> = Arc::new(open(&dir));
            let d = dbs(&store);
            zadd(&d[0], b"lb", "a", 1.0);
            zadd(&d[15], b"lb", "b", 2.0);
            d[15].hset(b"h", &[(b"f", b"v")]).unwrap();
            d[3].set(b"s", b"x", SetOpts::default()).unwrap();
            d[0].set(b"\x01odd", b"y", SetOpts::default()).unwrap();
            d[3].expire_at_ms(b"s", i64::MAX / 2, Default::default())
                .unwrap();
            assert_eq!(d[0].keys(b"*"), [b"\x01odd".to_vec(), b"lb".to_vec()]);
            assert_eq!(d[15].keys(b"*"), [b"h".to_vec(), b"lb".to_vec()]);
            assert_eq!(d[0].dbsize(), 2);
            assert_eq!(d[15].dbsize(), 2);
            assert_eq!(d[3].expiring_keys(), 1);
            assert_eq!(d[0].expiring_keys(), 0);
            // MOVE refuses an existing destination, then moves.
            assert!(!d[0].move_key(b"lb", 15).unwrap().0);
            assert!(d[3].move_key(b"s", 4).unwrap().0);
            assert!(!d[3].move_key(b"s", 4).unwrap().0);
            // SWAPDB trades whole databases.
            d[0].swap_db(0, 15).unwrap();
            assert_eq!(d[0].keys(b"*"), [b"h".to_vec(), b"lb".to_vec()]);
            d[5].flushdb().unwrap();
            d[4].flushdb().unwrap();
            assert_eq!(d[4].dbsize(), 0);
        }
        let store = Arc::new(open(&dir));
        let root: Arc<dyn KeyStore> = store.clone();
        let d = dbs(&root);
        drop(root);
        assert_eq!(d[0].keys(b"*"), [b"h".to_vec(), b"lb".to_vec()]);
        assert_eq!(d[15].keys(b"*"), [b"\x01odd".to_vec(), b"lb".to_vec()]);
        let d0: &dyn KeyStore = &d[0];
        assert_eq!(d0.zread(b"lb", |b| b.len()).unwrap(), Some(1));
        let _ = d0;
        assert_eq!(d[15].get(b"\x01odd").unwrap(), Some(b"y".to_vec()));
        assert_eq!(d[3].dbsize(), 0);
        assert_eq!(d[4].dbsize(), 0);
        // Only database 0's boards are boards for users.
        drop(d);
        let svc = Arc::try_unwrap(store).ok().unwrap();
        assert_eq!(names(&svc), ["lb"]);
    }

    #[test]
    fn flushdb_of_the_only_database_is_flushall() {
        let store: Arc<dyn KeyStore> = Arc::new(Service::in_memory());
        let d = dbs(&store);
        zadd(&d[0], b"a", "m", 1.0);
        zadd(&d[1], b"a", "m", 1.0);
        d[1].flushdb().unwrap();
        assert_eq!(d[0].dbsize(), 1);
        assert_eq!(d[1].dbsize(), 0);
        d[0].flushdb().unwrap();
        assert_eq!(store.dbsize(), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, u8, u8),
        Zadd(u8, u8),
        Del(u8, u8),
        Move(u8, u8, u8),
        Swap(u8, u8),
        Flush(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        let db = 0u8..4;
        let key = 0u8..4;
        prop_oneof![
            (db.clone(), key.clone(), any::<u8>()).prop_map(|(d, k, v)| Op::Set(d, k, v)),
            (db.clone(), key.clone()).prop_map(|(d, k)| Op::Zadd(d, k)),
            (db.clone(), key.clone()).prop_map(|(d, k)| Op::Del(d, k)),
            (db.clone(), key.clone(), db.clone()).prop_map(|(d, k, t)| Op::Move(d, k, t)),
            (db.clone(), db.clone()).prop_map(|(a, b)| Op::Swap(a, b)),
            db.prop_map(Op::Flush),
        ]
    }

    /// Key names: one starting with the mark, so database 0's escape is
    /// exercised too.
    fn name(k: u8) -> Vec<u8> {
        match k {
            0 => b"\x01k".to_vec(),
            k => format!("k{k}").into_bytes(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn databases_behave_as_separate_maps(ops in proptest::collection::vec(op(), 1..40)) {
            let store: Arc<dyn KeyStore> = Arc::new(Service::in_memory());
            let d = dbs(&store);
            // (db, key) → "s<value>" for a string, "z" for a sorted set.
            let mut model: HashMap<(u8, Vec<u8>), String> = HashMap::new();
            for op in ops {
                match op {
                    Op::Set(db, k, v) => {
                        d[db as usize].set(&name(k), &[v], SetOpts::default()).unwrap();
                        model.insert((db, name(k)), format!("s{v}"));
                    }
                    Op::Zadd(db, k) => {
                        // A key starting with the mark cannot be a board.
                        let r = d[db as usize].zadd(&name(k), vec![rec("m", 1.0)]);
                        let was = model.get(&(db, name(k))).cloned();
                        match was.as_deref() {
                            Some(s) if s.starts_with('s') => prop_assert!(r.is_err()),
                            _ if k == 0 => prop_assert!(r.is_err()),
                            _ => {
                                prop_assert!(r.is_ok());
                                model.insert((db, name(k)), "z".into());
                            }
                        }
                    }
                    Op::Del(db, k) => {
                        let (n, _) = d[db as usize].del(&[&name(k)]).unwrap();
                        prop_assert_eq!(n, model.remove(&(db, name(k))).is_some() as u64);
                    }
                    Op::Move(db, k, to) => {
                        let (moved, _) = d[db as usize].move_key(&name(k), to).unwrap();
                        let can = db != to
                            && model.contains_key(&(db, name(k)))
                            && !model.contains_key(&(to, name(k)));
                        prop_assert_eq!(moved, can);
                        if can {
                            let v = model.remove(&(db, name(k))).unwrap();
                            model.insert((to, name(k)), v);
                        }
                    }
                    Op::Swap(a, b) => {
                        d[0].swap_db(a, b).unwrap();
                        model = model
                            .into_iter()
                            .map(|((db, k), v)| {
                                let db = if db == a { b } else if db == b { a } else { db };
                                ((db, k), v)
                            })
                            .collect();
                    }
                    Op::Flush(db) => {
                        d[db as usize].flushdb().unwrap();
                        model.retain(|(x, _), _| *x != db);
                    }
                }
                for db in 0..4u8 {
                    let mut want: Vec<Vec<u8>> = model
                        .keys()
                        .filter(|(x, _)| *x == db)
                        .map(|(_, k)| k.clone())
                        .collect();
                    want.sort();
                    let dd = &d[db as usize];
                    prop_assert_eq!(dd.keys(b"*"), want.clone());
                    prop_assert_eq!(dd.dbsize(), want.len() as u64);
                    let mut scanned = dd.scan(0, None, 1000, None).1;
                    scanned.sort();
                    prop_assert_eq!(scanned, want.clone());
                    for k in &want {
                        let v = &model[&(db, k.clone())];
                        if let Some(s) = v.strip_prefix('s') {
                            let got = dd.get(k).unwrap().unwrap();
                            prop_assert_eq!(got[0].to_string(), s);
                        } else {
                            prop_assert_eq!(dd.key_type(k), Some(KeyType::Zset));
                        }
                    }
                    prop_assert_eq!(dd.random_key().is_some(), !want.is_empty());
                }
            }
        }
    }
}
