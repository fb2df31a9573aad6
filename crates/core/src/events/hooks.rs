//! Webhooks, whatever the engine: which endpoints a board's config may
//! name ([`Targets`], the operator's choice, checked when a config is
//! written and again on every address a name resolves to), how a delivery
//! is signed ([`sign`]), and the outbox an engine keeps its due deliveries
//! in ([`Outbox`], read by the server's dispatcher).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::Notify;

use super::{Event, EventId};
use crate::error::{ApiError, Code};

/// Which addresses webhooks may be delivered to: the operator's choice
/// (`--webhook-targets`), so a board's config cannot make the server
/// reach into the network it runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Targets {
    /// Loopback addresses only (127.0.0.0/8, ::1): the default.
    #[default]
    Loopback,
    /// Loopback and public addresses: not private, link-local, shared
    /// (CGNAT), unique-local, multicast, unspecified or reserved ones.
    Public,
    /// Any address.
    Any,
}

static TARGETS: AtomicU8 = AtomicU8::new(0);

impl Targets {
    pub fn parse(s: &str) -> Option<Targets> {
        match s {
            "loopback" => Some(Targets::Loopback),
            "public" => Some(Targets::Public),
            "any" => Some(Targets::Any),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Targets::Loopback => "loopback",
            Targets::Public => "public",
            Targets::Any => "any",
        }
    }

    /// The process's policy (set once at start by the server).
    pub fn current() -> Targets {
        match TARGETS.load(Ordering::Relaxed) {
            1 => Targets::Public,
            2 => Targets::Any,
            _ => Targets::Loopback,
        }
    }

    pub fn set_current(t: Targets) {
        TARGETS.store(t as u8, Ordering::Relaxed);
    }

    /// Whether a delivery may go to `ip`.
    pub fn allows(self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match self {
            Targets::Any => true,
            Targets::Loopback => ip.is_loopback(),
            Targets::Public => ip.is_loopback() || is_public(ip),
        }
    }
}

/// Whether `ip` is a globally reachable unicast address (what
/// `IpAddr::is_global` will say once stable, for the ranges that matter
/// here).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_private()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_broadcast()
                || a.is_documentation()
                || a.is_unspecified()
                || a.is_multicast()
                || o[0] == 0
                // Shared address space (CGNAT), 100.64.0.0/10.
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                // IETF protocol assignments, 192.0.0.0/24.
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                // Benchmarking, 198.18.0.0/15.
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                // Reserved, 240.0.0.0/4.
                || o[0] >= 240)
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            let v4 =
                |hi: u16, lo: u16| std::net::Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
            // An IPv4 address carried in IPv6 reaches that IPv4 host
            // through a translator or a tunnel: judged as that address.
            // NAT64's well-known prefix 64:ff9b::/96.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_public(IpAddr::V4(v4(s[6], s[7])));
            }
            // 6to4, 2002::/16: the IPv4 address follows the prefix.
            if s[0] == 0x2002 {
                return is_public(IpAddr::V4(v4(s[1], s[2])));
            }
            // Only global unicast 2000::/3 is public; that also leaves out
            // ::/8 (the IPv4-compatible forms), 100::/64 (discard),
            // 64:ff9b:1::/48 (local NAT64), unique-local, site-local and
            // link-local, and multicast.
            (s[0] & 0xe000) == 0x2000
                // IETF protocol assignments 2001::/23: Teredo 2001::/32,
                // benchmarking, ORCHID.
                && !(s[0] == 0x2001 && s[1] < 0x0200)
                // Documentation 2001:db8::/32 and 3fff::/20.
                && !(s[0] == 0x2001 && s[1] == 0x0db8)
                && !(s[0] == 0x3fff && s[1] < 0x1000)
        }
    }
}

/// Checks a webhook URL against the current [`Targets`] when the config
/// naming it is written: a literal address must be allowed; a host name
/// other than `localhost` needs `public` or `any` (its addresses are
/// checked again at each delivery, so a name that later resolves to a
/// private address is refused then).
pub fn check_url(hook: &str, raw: &str) -> Result<(), ApiError> {
    let refuse =
        |why: String| ApiError::new(Code::InvalidConfig, format!("webhooks: {hook:?}: {why}"));
    let url = url::Url::parse(raw).map_err(|e| refuse(format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || !url.username().is_empty() {
        return Err(refuse(
            "url must be http:// or https:// without credentials".into(),
        ));
    }
    let targets = Targets::current();
    let allowed = match url.host() {
        None => return Err(refuse("url has no host".into())),
        Some(url::Host::Ipv4(a)) => targets.allows(IpAddr::V4(a)),
        Some(url::Host::Ipv6(a)) => targets.allows(IpAddr::V6(a)),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost") || targets != Targets::Loopback
        }
    };
    if allowed {
        Ok(())
    } else {
        // A well-formed URL the operator's policy does not allow: the
        // request is refused as not permitted, not as malformed.
        Err(ApiError::new(
            Code::Forbidden,
            format!(
                "webhooks: {hook:?}: {raw:?} is not an address this server delivers to (webhook targets: {}; \
                 the operator can widen this with --webhook-targets public|any)",
                targets.as_str()
            ),
        ))
    }
}

/// The `Podium-Signature` header of a delivery: `sha256=` and the
/// lower-case hex HMAC-SHA256 of the body under the hook's secret.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in tag {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Most events a hook's outbox keeps: past this the oldest are dropped and
/// the next delivery starts with a `lagged` event.
pub const MAX_PENDING: usize = 10_000;

/// A hook's next delivery: its endpoint and its first due events.
#[derive(Debug, Clone)]
pub struct Pending {
    pub board: String,
    pub hook: String,
    pub url: String,
    pub secret: String,
    pub events: Vec<Arc<Event>>,
    /// How many events are due in all.
    pub due: usize,
}

/// The deliveries an engine owes, kept where its writes are kept (the
/// embedded store: in its log, so a delivery due when the process stopped
/// is still due when it starts). Events are removed only when acknowledged,
/// so each is delivered at least once.
pub trait Outbox: Send + Sync {
    /// The hooks with events due, as `(board, hook)`.
    fn due(&self) -> Vec<(String, String)>;
    /// A hook's endpoint and up to `max` first due events.
    fn peek(&self, board: &str, hook: &str, max: usize) -> Option<Pending>;
    /// The hook's events up to `upto` were delivered.
    fn ack(&self, board: &str, hook: &str, upto: EventId);
    /// Woken whenever events are added.
    fn notify(&self) -> &Notify;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_sort_addresses() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let l = Targets::Loopback;
        assert!(l.allows(ip("127.0.0.1")) && l.allows(ip("::1")) && l.allows(ip("127.9.9.9")));
        assert!(!l.allows(ip("93.184.216.34")) && !l.allows(ip("10.0.0.1")));
        let p = Targets::Public;
        assert!(p.allows(ip("93.184.216.34")) && p.allows(ip("2606:2800:220:1::1")));
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::",
        ] {
            assert!(!p.allows(ip(private)), "{private}");
        }
        assert!(p.allows(ip("::ffff:127.0.0.1")));
        assert!(Targets::Any.allows(ip("10.0.0.1")));
    }

    /// IPv6 forms that carry an IPv4 address (NAT64, 6to4, Teredo) are
    /// judged by it, and the reserved IPv6 ranges are refused.
    #[test]
    fn public_targets_refuse_embedded_and_reserved_ipv6() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let p = Targets::Public;
        for refused in [
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "64:ff9b:1::5db8:d822",
            "2002:a9fe:a9fe::1",
            "2002:a00:1::1",
            "2001::a9fe:a9fe",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "2001:10::1",
            "fec0::1",
            "100::1",
            "3fff::1",
            "5f00::1",
            "4000::1",
            "::a00:1",
        ] {
            assert!(!p.allows(ip(refused)), "{refused}");
        }
        for allowed in [
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
            "2a00:1450:4001::1",
        ] {
            assert!(p.allows(ip(allowed)), "{allowed}");
        }
        assert!(!Targets::Loopback.allows(ip("64:ff9b::7f00:1")));
        assert!(Targets::Any.allows(ip("fec0::1")));
    }

    #[test]
    fn config_time_checks_follow_the_policy() {
        Targets::set_current(Targets::Loopback);
        assert!(check_url("h", "http://127.0.0.1:9/x").is_ok());
        assert!(check_url("h", "http://[::1]:9/x").is_ok());
        assert!(check_url("h", "http://localhost:9/x").is_ok());
        assert!(check_url("h", "https://example.com/x").is_err());
        assert!(check_url("h", "http://10.0.0.1/x").is_err());
        // Every test in this process shares the policy: put it back.
        Targets::set_current(Targets::Loopback);
    }

    #[test]
    fn signatures_are_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
