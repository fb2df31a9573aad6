//! The value types flags, variables and the file share: a listening
//! address (or `off`), a byte size with an optional unit and a rate limit
//! (or `off`).

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use podium_core::rate::Rate;

/// A listening address, or `off` (`ListenAddr(None)`).
///
/// Parses `127.0.0.1:7070`, `[::1]:7070`, `0.0.0.0:7070`, `localhost:7070`
/// (as 127.0.0.1) and `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddr(pub Option<SocketAddr>);

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("off") {
            return Ok(ListenAddr(None));
        }
        if let Ok(addr) = t.parse::<SocketAddr>() {
            return Ok(ListenAddr(Some(addr)));
        }
        let expected = "expected IP:PORT (e.g. 127.0.0.1:7070, [::1]:7070, 0.0.0.0:7070), \
                        localhost:PORT, or off";
        let Some((host, port)) = t.rsplit_once(':') else {
            return Err(format!("listening address {s:?} has no port: {expected}"));
        };
        if host.contains(':') && !host.starts_with('[') {
            return Err(format!(
                "listening address {s:?}: write IPv6 addresses in brackets, e.g. [::1]:7070"
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("listening address {s:?}: bad port {port:?}: {expected}"))?;
        if host.eq_ignore_ascii_case("localhost") {
            return Ok(ListenAddr(Some(SocketAddr::new(
                Ipv4Addr::LOCALHOST.into(),
                port,
            ))));
        }
        Err(format!(
            "listening address {s:?}: {host:?} is not an IP address: {expected}"
        ))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(a) => a.fmt(f),
            None => f.write_str("off"),
        }
    }
}

/// A number of bytes, parsed from `1048576`, `512KiB`, `16MiB`, `1GiB`, ...
///
/// Units (case-insensitive, optional space before): `B`; `K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of 1024); `KB`, `MB`, `GB`, `TB`
/// (powers of 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !c.is_ascii_digit() && c != '_')
            .unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let digits = digits.replace('_', "");
        let expected = "expected a number of bytes, optionally with a unit: \
                        B, KiB, MiB, GiB, TiB (or K, M, G, T), KB, MB, GB, TB";
        if digits.is_empty() {
            return Err(format!("bad size {s:?}: {expected}"));
        }
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("size {s:?} is too large"))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "ki" | "kib" => 1 << 10,
            "m" | "mi" | "mib" => 1 << 20,
            "g" | "gi" | "gib" => 1 << 30,
            "t" | "ti" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            _ => return Err(format!("bad size {s:?}: unknown unit {unit:?}: {expected}")),
        };
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| format!("size {s:?} is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, unit) in UNITS {
            let m = 1u64 << shift;
            if self.0 >= m && self.0 & (m - 1) == 0 {
                return write!(f, "{}{unit}", self.0 / m);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size: a number of bytes or a string such as \"16MiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("size {v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A rate limit, `COUNT/PERIOD[,burst=N]` (see [`Rate`]), or `off`
/// (`RateLimit(None)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit(pub Option<Rate>);

impl FromStr for RateLimit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("off") {
            return Ok(RateLimit(None));
        }
        s.parse().map(|r| RateLimit(Some(r)))
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(r) => r.fmt(f),
            None => f.write_str("off"),
        }
    }
}

/// Implements `Deserialize` from a string through `FromStr`.
macro_rules! deserialize_from_str {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(de::Error::custom)
            }
        }
    )*};
}
deserialize_from_str!(ListenAddr, RateLimit);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;

    #[test]
    fn listening_addresses() {
        let ok = |s: &str| s.parse::<ListenAddr>().unwrap().0;
        assert_eq!(ok("127.0.0.1:7070"), Some(addr("127.0.0.1:7070")));
        assert_eq!(ok("[::1]:7070"), Some(addr("[::1]:7070")));
        assert_eq!(ok("0.0.0.0:7070"), Some(addr("0.0.0.0:7070")));
        assert_eq!(ok("localhost:7070"), Some(addr("127.0.0.1:7070")));
        assert_eq!(ok("LOCALHOST:1"), Some(addr("127.0.0.1:1")));
        assert_eq!(ok("off"), None);
        assert_eq!(ok(" Off "), None);
        for bad in [
            "",
            "7070",
            "localhost",
            "localhost:99999",
            "::1:7070",
            "example.com:80",
            "127.0.0.1:x",
        ] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad:?}");
        }
        let e = "::1:7070".parse::<ListenAddr>().unwrap_err();
        assert!(e.contains("brackets"), "{e}");
        assert_eq!(ListenAddr(None).to_string(), "off");
        assert_eq!(ListenAddr(Some(addr("[::1]:1"))).to_string(), "[::1]:1");
    }

    #[test]
    fn sizes() {
        let ok = |s: &str| s.parse::<ByteSize>().unwrap().0;
        assert_eq!(ok("1048576"), 1 << 20);
        assert_eq!(ok("16MiB"), 16 << 20);
        assert_eq!(ok("512KiB"), 512 << 10);
        assert_eq!(ok("512kib"), 512 << 10);
        assert_eq!(ok("2 GiB"), 2 << 30);
        assert_eq!(ok("1T"), 1 << 40);
        assert_eq!(ok("4k"), 4096);
        assert_eq!(ok("1MB"), 1_000_000);
        assert_eq!(ok("10B"), 10);
        assert_eq!(ok("1_000"), 1000);
        assert_eq!(ok("0"), 0);
        for bad in [
            "",
            "MiB",
            "1.5MiB",
            "-1",
            "16 parsecs",
            "99999999999999999999",
            "20000000TiB",
        ] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad:?}");
        }
        assert_eq!(ByteSize(16 << 20).to_string(), "16MiB");
        assert_eq!(ByteSize(1536).to_string(), "1536");
        assert_eq!(ByteSize(3 << 10).to_string(), "3KiB");
        // Zero is parsed but refused as a setting.
        assert!(Settings::resolve(&parse(&["--max-body", "0"])).is_err());
        assert!(Settings::resolve(&parse(&["--snapshot-every", "0B"])).is_err());
    }

    #[test]
    fn rate_limits() {
        let ok = |s: &str| s.parse::<RateLimit>().unwrap().0;
        assert_eq!(ok("off"), None);
        assert_eq!(ok(" OFF "), None);
        let r = ok("60/m").unwrap();
        assert_eq!((r.count, r.period.as_secs(), r.burst), (60, 60, 60));
        let r = ok("5000/10s,burst=100").unwrap();
        assert_eq!((r.count, r.period.as_secs(), r.burst), (5000, 10, 100));
        assert_eq!(RateLimit(None).to_string(), "off");
        assert_eq!(ok("1000/s").unwrap().to_string(), "1000/s");
        for bad in ["", "60", "0/s", "60/fortnight", "60/m,burst=0", "on"] {
            assert!(bad.parse::<RateLimit>().is_err(), "{bad:?}");
        }
        let e = "60/fortnight".parse::<RateLimit>().unwrap_err();
        assert!(e.contains("COUNT/PERIOD"), "{e}");
    }
}

/// What the server does with its webhook deliveries (`--webhooks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookMode {
    /// Deliver them.
    On,
    /// Deliver none and drop them as they fall due (acknowledged without
    /// sending: no later start sends them).
    Off,
    /// Deliver none and keep them (each hook's queue bounded as always)
    /// for a start with `on`: what a restored or repaired data directory
    /// starts in.
    Hold,
}

impl WebhookMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookMode::On => "on",
            WebhookMode::Off => "off",
            WebhookMode::Hold => "hold",
        }
    }
}

/// How the server writes its log lines (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line an event.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `target`, `fields`),
    /// for a log collector.
    Json,
}
