//! The request rate limits every frontend applies, per API key and per
//! client address (`--rate-limit-per-key`, `--rate-limit-per-address`):
//! one [`RateLimits`] for the whole server, so a key's or an address's
//! budget is shared by HTTP, MessagePack-RPC and the Redis protocol. The
//! frontends only ask it and translate a [`Refused`] into their protocol's
//! refusal.
//!
//! Each configured key has its bucket from the start (found by the key's
//! position, no lookup); addresses have theirs in a bounded map
//! ([`Buckets`]). A connection of RPC or the Redis protocol holds its
//! address's bucket ([`ClientRate`]) and takes from it without a lookup;
//! an HTTP request looks its address up in one shard of the map.
//!
//! An IPv6 client is limited per /64 (one host usually holds a whole /64)
//! and an IPv4-mapped IPv6 address counts as its IPv4 address.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use podium_core::error::{ApiError, Code};
use podium_core::rate::{Bucket, Buckets, MonoClock, Rate};

use crate::settings::Settings;

/// Most addresses with a bucket kept at once (more only while connections
/// from them are open); past it, the buckets that have refilled go first.
/// About 100 bytes each.
pub const MAX_ADDRESS_BUCKETS: usize = 1 << 16;

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Key,
    Address,
}

impl Limit {
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Key => "key",
            Limit::Address => "address",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Limit::Key => "this API key",
            Limit::Address => "this client address",
        }
    }
}

/// A request refused by a rate limit: which, and how long until it would
/// pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub limit: Limit,
    pub rate: Rate,
    pub wait: Duration,
}

impl Refused {
    /// The wait in whole seconds, rounded up, at least 1 (HTTP's
    /// `Retry-After`).
    pub fn retry_after_secs(&self) -> u64 {
        podium_core::rate::retry_secs(self.wait)
    }

    /// The same words on every protocol.
    pub fn message(&self) -> String {
        format!(
            "rate limit of {} ({}) reached: retry in {} s",
            self.limit.what(),
            self.rate,
            self.retry_after_secs()
        )
    }

    pub fn to_error(&self) -> ApiError {
        ApiError::new(Code::RateLimited, self.message()).retry_after(self.retry_after_secs())
    }
}

/// The limits and their buckets; shared by every frontend.
pub struct RateLimits {
    per_key: Option<Rate>,
    per_address: Option<Rate>,
    /// By the key's position among the configured keys.
    keys: Box<[Bucket]>,
    addresses: Buckets<IpAddr>,
    clock: MonoClock,
    refused_key: metrics::Counter,
    refused_address: metrics::Counter,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits::new(None, None, 0)
    }
}

impl RateLimits {
    /// `keys`: how many API keys are configured. The refusal counters come
    /// from the metrics recorder installed at this point.
    pub fn new(per_key: Option<Rate>, per_address: Option<Rate>, keys: usize) -> RateLimits {
        let refused = |limit: Limit| metrics::counter!("podium_rate_limited_total", "limit" => limit.as_str());
        RateLimits {
            per_key,
            per_address,
            keys: (0..keys).map(|_| Bucket::default()).collect(),
            addresses: Buckets::new(if per_address.is_some() {
                MAX_ADDRESS_BUCKETS
            } else {
                1
            }),
            clock: MonoClock::new(),
            refused_key: refused(Limit::Key),
            refused_address: refused(Limit::Address),
        }
    }

    pub fn from_settings(s: &Settings) -> RateLimits {
        RateLimits::new(
            s.rate_limit_per_key,
            s.rate_limit_per_address,
            s.api_keys.len(),
        )
    }

    /// Takes a token for one request from `key`'s bucket (the position of
    /// the key presented, when keys are configured) and `addr`'s.
    pub fn check(&self, key: Option<usize>, addr: Option<IpAddr>) -> Result<(), Refused> {
        // Without a limit that applies, not even the clock is read.
        let by_address = self.per_address.is_some() && addr.is_some();
        let by_key = self.per_key.is_some() && key.is_some();
        if !by_address && !by_key {
            return Ok(());
        }
        self.check_at(key, addr, self.clock.now())
    }

    /// Whether requests are limited by their client address (so a frontend
    /// must give [`RateLimits::check`] the address).
    pub fn by_address(&self) -> bool {
        self.per_address.is_some()
    }

    fn check_at(&self, key: Option<usize>, addr: Option<IpAddr>, now: u64) -> Result<(), Refused> {
        if let (Some(rate), Some(addr)) = (&self.per_address, addr) {
            self.addresses
                .take(&bucket_address(addr), rate, now)
                .map_err(|wait| self.refused(Limit::Address, *rate, wait))?;
        }
        self.check_key(key, now)
    }

    fn check_key(&self, key: Option<usize>, now: u64) -> Result<(), Refused> {
        if let (Some(rate), Some(b)) = (&self.per_key, key.and_then(|k| self.keys.get(k))) {
            b.take(rate, now)
                .map_err(|wait| self.refused(Limit::Key, *rate, wait))?;
        }
        Ok(())
    }

    fn refused(&self, limit: Limit, rate: Rate, wait: Duration) -> Refused {
        match limit {
            Limit::Key => self.refused_key.increment(1),
            Limit::Address => self.refused_address.increment(1),
        }
        Refused { limit, rate, wait }
    }

    /// A connection's view, holding its address's bucket.
    pub fn client(self: &Arc<Self>, addr: Option<IpAddr>) -> ClientRate {
        let address = match (&self.per_address, addr) {
            (Some(_), Some(a)) => Some(self.addresses.handle(&bucket_address(a), self.clock.now())),
            _ => None,
        };
        ClientRate {
            limits: self.clone(),
            address,
            key: None,
        }
    }

    #[cfg(test)]
    fn address_buckets(&self) -> usize {
        self.addresses.len()
    }
}

/// The address whose bucket a client uses: IPv4 as is (IPv4-mapped IPv6
/// too), IPv6 by its /64.
fn bucket_address(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// One connection's rate limits: its address's bucket, held, and the key
/// it authenticated with.
#[derive(Default)]
pub struct ClientRate {
    limits: Arc<RateLimits>,
    address: Option<Arc<Bucket>>,
    key: Option<usize>,
}

impl ClientRate {
    /// The position of the key the connection authenticated with.
    pub fn set_key(&mut self, key: Option<usize>) {
        self.key = key;
    }

    /// Takes a token for one request.
    pub fn take(&self) -> Result<(), Refused> {
        let limits = &*self.limits;
        if limits.per_key.is_none() && self.address.is_none() {
            return Ok(());
        }
        let now = limits.clock.now();
        if let (Some(rate), Some(b)) = (&limits.per_address, &self.address) {
            b.take(rate, now)
                .map_err(|wait| limits.refused(Limit::Address, *rate, wait))?;
        }
        limits.check_key(self.key, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn each_key_and_address_has_its_own_budget() {
        let l = RateLimits::new(
            Some("3/s".parse().unwrap()),
            Some("5/s".parse().unwrap()),
            2,
        );
        for _ in 0..3 {
            l.check_at(Some(0), ip("10.0.0.1"), 0).unwrap();
        }
        let r = l.check_at(Some(0), ip("10.0.0.2"), 0).unwrap_err();
        assert_eq!(r.limit, Limit::Key);
        assert_eq!(r.wait, Duration::from_nanos(S / 3));
        assert_eq!(r.retry_after_secs(), 1);
        // Another key from the same address: its own budget, until the
        // address's runs out.
        l.check_at(Some(1), ip("10.0.0.1"), 0).unwrap();
        l.check_at(Some(1), ip("10.0.0.1"), 0).unwrap();
        let r = l.check_at(Some(1), ip("10.0.0.1"), 0).unwrap_err();
        assert_eq!(r.limit, Limit::Address);
        let e = r.to_error();
        assert_eq!(e.code, Code::RateLimited);
        assert_eq!(
            e.message,
            "rate limit of this client address (5/s) reached: retry in 1 s"
        );
        // A second later both have refilled.
        l.check_at(Some(0), ip("10.0.0.1"), S).unwrap();
        // No key presented: only the address counts.
        for _ in 0..4 {
            l.check_at(None, ip("10.0.0.3"), S).unwrap();
        }
    }

    #[test]
    fn off_limits_nothing() {
        let l = Arc::new(RateLimits::default());
        for _ in 0..10_000 {
            l.check(Some(0), ip("10.0.0.1")).unwrap();
        }
        let c = l.client(ip("10.0.0.1"));
        for _ in 0..10_000 {
            c.take().unwrap();
        }
        assert_eq!(l.address_buckets(), 0);
    }

    #[test]
    fn a_connection_shares_its_address_bucket() {
        let l = Arc::new(RateLimits::new(None, Some("2/m".parse().unwrap()), 0));
        let c = l.client(ip("::ffff:192.0.2.7"));
        c.take().unwrap();
        // The same address over HTTP, as IPv4.
        l.check(None, ip("192.0.2.7")).unwrap();
        let r = c.take().unwrap_err();
        assert_eq!(r.limit, Limit::Address);
        assert!(r.retry_after_secs() >= 29, "{r:?}");
        // Another connection from the same address: the same bucket.
        assert!(l.client(ip("192.0.2.7")).take().is_err());
        assert!(l.client(ip("192.0.2.8")).take().is_ok());
    }

    #[test]
    fn ipv6_is_limited_per_64() {
        let l = RateLimits::new(None, Some("1/s".parse().unwrap()), 0);
        l.check_at(None, ip("2001:db8:1:2::1"), 0).unwrap();
        assert!(l.check_at(None, ip("2001:db8:1:2:ffff::9"), 0).is_err());
        l.check_at(None, ip("2001:db8:1:3::1"), 0).unwrap();
    }

    #[test]
    fn a_flood_of_addresses_stays_bounded() {
        let l = RateLimits::new(None, Some("10/s".parse().unwrap()), 0);
        for i in 0..(4 * MAX_ADDRESS_BUCKETS as u32) {
            let a = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000u32 + i));
            l.check_at(None, Some(a), u64::from(i) * 1000).unwrap();
        }
        assert!(
            l.address_buckets() <= MAX_ADDRESS_BUCKETS,
            "{}",
            l.address_buckets()
        );
    }

    #[test]
    fn a_key_set_on_the_connection_is_counted() {
        let l = Arc::new(RateLimits::new(Some("1/h".parse().unwrap()), None, 1));
        let mut c = l.client(ip("127.0.0.1"));
        c.take().unwrap();
        c.take().unwrap();
        c.set_key(Some(0));
        c.take().unwrap();
        let r = c.take().unwrap_err();
        assert_eq!(r.limit, Limit::Key);
        assert!(r.message().contains("this API key"), "{}", r.message());
        assert!(r.message().contains("1/h"), "{}", r.message());
        // Out-of-range positions (no such key) are not limited.
        l.check(Some(5), None).unwrap();
    }
}
