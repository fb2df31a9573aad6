//! The environment variables of the client commands, one spelling across
//! podium's clients (the CLI, the Python and TypeScript clients): the
//! server's HTTP API in `PODIUM_URL`, its MessagePack-RPC address in
//! `PODIUM_RPC_ADDR`, the key in `PODIUM_API_KEY`. (`podium serve` reads
//! `PODIUM_<FLAG>` for each of its flags: `PODIUM_HTTP` and `PODIUM_RPC`
//! are the addresses it listens on.) The names used before are still read,
//! with a warning.

/// The HTTP API's base URL (`--http`).
pub const URL: &str = "PODIUM_URL";
/// The MessagePack-RPC address, HOST:PORT (`--rpc`).
pub const RPC_ADDR: &str = "PODIUM_RPC_ADDR";

/// `(old name, name)` of each variable renamed.
pub const DEPRECATED: [(&str, &str); 2] = [("PODIUM_SERVER", URL), ("PODIUM_RPC_SERVER", RPC_ADDR)];

/// What the old names say, under the new ones, for the arguments to read:
/// `(name, value, warning)` of each old name set while its new one is not.
/// A new name set wins over the old one, which is then ignored (with a
/// warning too: it no longer does anything).
pub fn renamed(
    get: impl Fn(&str) -> Option<String>,
) -> Vec<(&'static str, Option<String>, String)> {
    let mut out = Vec::new();
    for (old, new) in DEPRECATED {
        let Some(v) = get(old) else { continue };
        if get(new).is_some() {
            out.push((
                new,
                None,
                format!("{old} is deprecated and ignored: {new} is set"),
            ));
        } else {
            out.push((
                new,
                Some(v),
                format!("{old} is deprecated: set {new} instead"),
            ));
        }
    }
    out
}

/// Puts the old names' values under the new ones (before the command line
/// is read) and says so on stderr.
pub fn adopt_deprecated() {
    for (name, value, warning) in renamed(|k| std::env::var(k).ok().filter(|v| !v.is_empty())) {
        eprintln!("podium: warning: {warning}");
        if let Some(v) = value {
            // Before any thread: the command line is not read yet.
            std::env::set_var(name, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_names_are_read_with_a_warning_and_new_ones_win() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let r = renamed(env(&[("PODIUM_SERVER", "http://h:1")]));
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].0, r[0].1.as_deref()), (URL, Some("http://h:1")));
        assert!(r[0].2.contains("PODIUM_URL"), "{}", r[0].2);
        let r = renamed(env(&[
            ("PODIUM_RPC_SERVER", "h:1"),
            ("PODIUM_RPC_ADDR", "h:2"),
        ]));
        assert_eq!((r[0].0, r[0].1.as_deref()), (RPC_ADDR, None));
        assert!(renamed(env(&[("PODIUM_URL", "http://h:1")])).is_empty());
    }
}
