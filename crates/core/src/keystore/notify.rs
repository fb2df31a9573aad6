//! Redis's keyspace notification classes: the `notify-keyspace-events`
//! flags as bits, parsed and printed as Redis 7.0 does. The settings read
//! them from the configuration; the Redis protocol frontend publishes the
//! notifications they ask for.

// Redis 7.0's `NOTIFY_*` bits (server.h).
pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;
/// `A`: every class but key misses and new keys.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Redis's refusal of a letter it does not know.
pub const BAD_FLAGS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// `keyspaceEventsStringToFlags`: the bits of `classes`, `None` for an
/// unknown letter. Redis reads the value as a C string: a NUL ends it.
pub fn parse_flags(classes: &[u8]) -> Option<u32> {
    let mut flags = 0;
    for &c in classes.iter().take_while(|&&c| c != 0) {
        flags |= match c {
            b'A' => ALL,
            b'g' => GENERIC,
            b'$' => STRING,
            b'l' => LIST,
            b's' => SET,
            b'h' => HASH,
            b'z' => ZSET,
            b'x' => EXPIRED,
            b'e' => EVICTED,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => STREAM,
            b'm' => KEY_MISS,
            b'd' => MODULE,
            b'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// `keyspaceEventsFlagsToString`: what CONFIG GET shows. As in Redis,
/// `n` is not printed when every class of `A` is on, though it stays on.
pub fn format_flags(flags: u32) -> String {
    let mut s = String::new();
    if flags & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_and_print_as_redis() {
        // Pairs checked against redis-server 7.0.15's CONFIG SET / GET.
        for (set, get) in [
            ("KEA", "AKE"),
            ("Kz", "zK"),
            ("Eg", "gE"),
            ("A", "A"),
            ("Ex", "xE"),
            ("", ""),
            ("n", "n"),
            ("m", "m"),
            ("KEAnm", "AKEm"),
            ("K$lshzxetd", "$lshzxetdK"),
            ("g$", "g$"),
            ("EKhgn", "ghnKE"),
            ("g$lshzxetdE", "AE"),
        ] {
            let f = parse_flags(set.as_bytes()).unwrap();
            assert_eq!(format_flags(f), get, "{set}");
        }
        assert_eq!(
            parse_flags(b"KEAnm"),
            Some(ALL | KEYSPACE | KEYEVENT | NEW | KEY_MISS)
        );
        assert_eq!(parse_flags(b"xyz"), None);
        assert_eq!(parse_flags(b"a"), None);
        assert_eq!(parse_flags(b"K\0junk"), Some(KEYSPACE));
    }
}
