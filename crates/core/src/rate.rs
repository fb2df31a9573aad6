//! Token buckets and bounded maps of them: the one rate-limiting
//! mechanism every limit of podium uses (per API key, per client address).
//!
//! A [`Rate`] is `COUNT/PERIOD` with a burst (`1000/s`, `60/m,burst=10`).
//! A [`Bucket`] is a token bucket kept as one atomic number, its
//! "theoretical arrival time" (the generic cell rate algorithm): taking a
//! token is a compare-and-swap, no lock, and a bucket that has refilled
//! completely is indistinguishable from a new one, so dropping it loses
//! nothing. [`Buckets`] maps a key (an address, ...) to its bucket in
//! shards, each under its own short lock, and stays within a bound: when a
//! shard is full, refilled buckets nobody holds are dropped first, then the
//! least recently used ones.
//!
//! Time is a number of nanoseconds from any fixed origin, passed in by the
//! caller ([`MonoClock`] reads one), so tests drive the clock by hand.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// `count` requests per `period`, up to `burst` at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u64,
    pub period: Duration,
    pub burst: u64,
}

impl Rate {
    /// The time one token takes to come back, in nanoseconds (at least 1).
    fn interval_ns(&self) -> u64 {
        (self.period.as_nanos() / u128::from(self.count.max(1))).clamp(1, u128::from(u64::MAX))
            as u64
    }

    /// How far ahead of now the bucket may run: `burst` tokens' worth.
    fn tolerance_ns(&self) -> u64 {
        self.interval_ns().saturating_mul(self.burst)
    }
}

/// Parses `COUNT/PERIOD[,burst=N]`: PERIOD is a unit (`s`, `m`, `h`, `d`,
/// `ms`) with an optional number before it (`10s`, `5m`); the burst is
/// COUNT unless given.
impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let expected = "expected COUNT/PERIOD[,burst=N], e.g. 1000/s, 60/m, 5000/10s or \
                        100/s,burst=500 (or off)";
        let t = s.trim();
        let (rate, burst) = match t.split_once(',') {
            Some((r, b)) => {
                let b = b.trim();
                let n = b
                    .split_once('=')
                    .filter(|(k, _)| k.trim() == "burst")
                    .map(|(_, n)| n);
                let Some(n) = n else {
                    return Err(format!("rate {s:?}: unknown option {b:?}: {expected}"));
                };
                let n: u64 = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("rate {s:?}: bad burst {n:?}: {expected}"))?;
                (r.trim(), Some(n))
            }
            None => (t, None),
        };
        let Some((count, period)) = rate.split_once('/') else {
            return Err(format!("rate {s:?} has no period: {expected}"));
        };
        let count: u64 = count
            .trim()
            .parse()
            .map_err(|_| format!("rate {s:?}: bad count {count:?}: {expected}"))?;
        let period = parse_period(period.trim())
            .ok_or_else(|| format!("rate {s:?}: bad period {period:?}: {expected}"))?;
        if count == 0 {
            return Err(format!(
                "rate {s:?}: the count must be at least 1 (give off for no limit)"
            ));
        }
        let burst = burst.unwrap_or(count);
        if burst == 0 {
            return Err(format!("rate {s:?}: the burst must be at least 1"));
        }
        Ok(Rate {
            count,
            period,
            burst,
        })
    }
}

/// `s`, `10s`, `m`, `5m`, `h`, `d`, `ms`, `500ms`: a positive period.
fn parse_period(p: &str) -> Option<Duration> {
    let split = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
    let (n, unit) = p.split_at(split);
    let n: u64 = if n.is_empty() { 1 } else { n.parse().ok()? };
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" | "sec" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    let ms = n.checked_mul(unit_ms)?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.period.as_millis();
        let (n, unit) = [
            (86_400_000, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1_000, "s"),
        ]
        .into_iter()
        .find(|(u, _)| ms.is_multiple_of(*u))
        .map_or((ms, "ms"), |(u, name)| (ms / u, name));
        write!(f, "{}/", self.count)?;
        if n != 1 {
            write!(f, "{n}")?;
        }
        f.write_str(unit)?;
        if self.burst != self.count {
            write!(f, ",burst={}", self.burst)?;
        }
        Ok(())
    }
}

/// One token bucket. Its state is the time at which it would be full again
/// if nothing more were taken (nanoseconds on the caller's clock); at or
/// before now, the bucket is full.
#[derive(Debug, Default)]
pub struct Bucket {
    full_at: AtomicU64,
}

impl Bucket {
    /// Takes one token at `now`, or says how long until one is there.
    pub fn take(&self, rate: &Rate, now: u64) -> Result<(), Duration> {
        let interval = rate.interval_ns();
        let tolerance = rate.tolerance_ns();
        let mut full_at = self.full_at.load(Ordering::Relaxed);
        loop {
            let next = full_at.max(now).saturating_add(interval);
            let ahead = next - now;
            if ahead > tolerance {
                return Err(Duration::from_nanos(ahead - tolerance));
            }
            match self.full_at.compare_exchange_weak(
                full_at,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(seen) => full_at = seen,
            }
        }
    }

    /// Whether the bucket has refilled completely by `now`: it is then the
    /// same as a new one.
    pub fn is_full(&self, now: u64) -> bool {
        self.full_at.load(Ordering::Relaxed) <= now
    }

    fn full_at(&self) -> u64 {
        self.full_at.load(Ordering::Relaxed)
    }
}

/// A wait in whole seconds, rounded up, at least 1: what a refusal tells
/// the client (HTTP's `Retry-After`, the messages' "retry in N s").
pub fn retry_secs(wait: Duration) -> u64 {
    wait.as_nanos().div_ceil(1_000_000_000).max(1) as u64
}

/// Nanoseconds since the clock was made, from the monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock(Instant);

impl MonoClock {
    pub fn new() -> MonoClock {
        MonoClock(Instant::now())
    }

    pub fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Default for MonoClock {
    fn default() -> Self {
        MonoClock::new()
    }
}

/// Shards of a [`Buckets`]: enough that two cores rarely meet on one lock.
const SHARDS: usize = 64;

type Shard<K> = Mutex<HashMap<K, Arc<Bucket>>>;

/// Buckets by key, at most about `capacity` of them (more only while
/// handles to them are held, see [`Buckets::handle`]).
pub struct Buckets<K> {
    shards: Box<[Shard<K>]>,
    per_shard: usize,
    hasher: RandomState,
}

impl<K: Hash + Eq + Clone> Buckets<K> {
    pub fn new(capacity: usize) -> Buckets<K> {
        Buckets {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: capacity.div_ceil(SHARDS).max(1),
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, key: &K) -> &Shard<K> {
        &self.shards[(self.hasher.hash_one(key) as usize) % SHARDS]
    }

    /// Takes one token from `key`'s bucket at `now`.
    pub fn take(&self, key: &K, rate: &Rate, now: u64) -> Result<(), Duration> {
        let mut shard = self.shard(key).lock();
        if let Some(b) = shard.get(key) {
            return b.take(rate, now);
        }
        let b = Arc::new(Bucket::default());
        let taken = b.take(rate, now);
        self.insert(&mut shard, key.clone(), b, now);
        taken
    }

    /// `key`'s bucket, for a caller that takes from it many times (a
    /// connection and its address). A bucket is never dropped while a
    /// handle to it is held, so every holder of a key shares one bucket.
    pub fn handle(&self, key: &K, now: u64) -> Arc<Bucket> {
        let mut shard = self.shard(key).lock();
        if let Some(b) = shard.get(key) {
            return b.clone();
        }
        let b = Arc::new(Bucket::default());
        self.insert(&mut shard, key.clone(), b.clone(), now);
        b
    }

    fn insert(&self, shard: &mut HashMap<K, Arc<Bucket>>, key: K, b: Arc<Bucket>, now: u64) {
        if shard.len() >= self.per_shard {
            evict(shard, self.per_shard, now);
        }
        shard.insert(key, b);
    }

    /// Buckets held, for tests and gauges.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Makes room in a full shard: drops the buckets that have refilled and
/// that no handle holds (nothing is lost); if none, the least recently
/// used eighth of the unheld ones, so a flood of new keys pays for this
/// scan once every few insertions, not at each.
fn evict<K: Hash + Eq>(shard: &mut HashMap<K, Arc<Bucket>>, cap: usize, now: u64) {
    shard.retain(|_, b| !(Arc::strong_count(b) == 1 && b.is_full(now)));
    if shard.len() < cap {
        return;
    }
    let mut unheld: Vec<u64> = shard
        .values()
        .filter(|b| Arc::strong_count(b) == 1)
        .map(|b| b.full_at())
        .collect();
    if unheld.is_empty() {
        return;
    }
    let n = (unheld.len() / 8).max(1);
    let (_, &mut cutoff, _) = unheld.select_nth_unstable(n - 1);
    let mut dropped = 0;
    shard.retain(|_, b| {
        let drop = dropped < n && Arc::strong_count(b) == 1 && b.full_at() <= cutoff;
        dropped += usize::from(drop);
        !drop
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn rate(s: &str) -> Rate {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_prints() {
        let r = rate("1000/s");
        assert_eq!(
            (r.count, r.period, r.burst),
            (1000, Duration::from_secs(1), 1000)
        );
        assert_eq!(rate("60/m").period, Duration::from_secs(60));
        assert_eq!(rate("5000/10s").period, Duration::from_secs(10));
        assert_eq!(rate("5/500ms").period, Duration::from_millis(500));
        assert_eq!(rate("100/s,burst=500").burst, 500);
        assert_eq!(rate(" 100 / s , burst = 5 ").burst, 5);
        assert_eq!(rate("1/d").period, Duration::from_secs(86_400));
        for s in [
            "1000/s",
            "60/m",
            "5000/10s",
            "100/s,burst=500",
            "3/2h",
            "7/250ms",
        ] {
            assert_eq!(rate(s).to_string(), s);
        }
        for bad in [
            "",
            "off",
            "10",
            "0/s",
            "10/0s",
            "10/x",
            "-1/s",
            "10/s,burst=0",
            "10/s,bust=3",
            "10/s,burst=x",
            "1.5/s",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn burst_then_refill() {
        let r = rate("10/s,burst=3");
        let b = Bucket::default();
        let t0 = 5 * S;
        for _ in 0..3 {
            b.take(&r, t0).unwrap();
        }
        // Empty: the next token comes back one interval (0.1 s) later.
        assert_eq!(b.take(&r, t0), Err(Duration::from_millis(100)));
        assert_eq!(b.take(&r, t0 + S / 20), Err(Duration::from_millis(50)));
        b.take(&r, t0 + S / 10).unwrap();
        assert!(b.take(&r, t0 + S / 10).is_err());
        assert!(!b.is_full(t0 + S / 10));
        // After a quiet spell, no more than the burst at once.
        let later = t0 + 60 * S;
        assert!(b.is_full(later));
        for _ in 0..3 {
            b.take(&r, later).unwrap();
        }
        assert!(b.take(&r, later).is_err());
    }

    #[test]
    fn steady_rate_is_the_count_per_period() {
        let r = rate("60/m");
        let b = Bucket::default();
        let mut granted = 0;
        // 10 minutes, asking 10 times a second.
        for tick in 0..6000u64 {
            granted += u64::from(b.take(&r, tick * S / 10).is_ok());
        }
        // The first burst of 60, then one a second.
        assert!((60 + 599..=60 + 600).contains(&granted), "{granted}");
    }

    #[test]
    fn map_keeps_each_key_apart() {
        let r = rate("2/s");
        let m: Buckets<u32> = Buckets::new(100);
        m.take(&1, &r, 0).unwrap();
        m.take(&1, &r, 0).unwrap();
        assert!(m.take(&1, &r, 0).is_err());
        m.take(&2, &r, 0).unwrap();
        let h = m.handle(&2, 0);
        h.take(&r, 0).unwrap();
        assert!(m.take(&2, &r, 0).is_err(), "a handle is the map's bucket");
    }

    #[test]
    fn refilled_buckets_are_evicted_and_the_map_stays_bounded() {
        let r = rate("1/s");
        let m: Buckets<u64> = Buckets::new(SHARDS * 4);
        let cap = SHARDS * 4;
        // A flood of distinct keys at one instant: none has refilled, the
        // map still stays within its bound.
        for k in 0..100_000u64 {
            m.take(&k, &r, 0).unwrap();
        }
        assert!(m.len() <= cap, "{}", m.len());
        // Later, everything has refilled: new keys push the old ones out
        // without growing the map.
        for k in 100_000..100_000 + 10 * cap as u64 {
            m.take(&k, &r, 10 * S).unwrap();
        }
        assert!(m.len() <= cap, "{}", m.len());
    }

    #[test]
    fn a_held_bucket_is_not_evicted() {
        let r = rate("1/s");
        let m: Buckets<u64> = Buckets::new(1);
        let held = m.handle(&7, 0);
        held.take(&r, 0).unwrap();
        // Many other keys, long after: the held bucket survives.
        for k in 100..10_000u64 {
            m.take(&k, &r, 100 * S).unwrap();
        }
        // Same bucket: the token taken through the handle is not refunded.
        let again = m.handle(&7, 0);
        assert!(Arc::ptr_eq(&held, &again));
        assert!(again.take(&r, 0).is_err());
    }

    #[test]
    fn least_recently_used_go_first_when_nothing_has_refilled() {
        let r = rate("1/m");
        let m: Buckets<u64> = Buckets::new(SHARDS);
        // Key 0 used at t=0, then many keys within its minute: none has
        // refilled, and key 0, the oldest, goes first.
        m.take(&0, &r, 0).unwrap();
        for k in 1..10_000u64 {
            m.take(&k, &r, 30 * S).unwrap();
        }
        assert!(m.len() <= SHARDS);
        m.take(&0, &r, 30 * S)
            .expect("key 0 was dropped: a new bucket, full");
    }
}
