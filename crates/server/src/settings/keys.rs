//! API keys: `KEY:SCOPE`, checked when read, compared in constant time and
//! never printed; and the key files of `--api-key-file`.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context};
use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::{Scope, MIN_API_KEY_LEN};

/// An API key and its scope. `Debug` and `Display` never show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub key: String,
    pub scope: Scope,
}

impl ApiKey {
    /// A checked key: at least [`MIN_API_KEY_LEN`] characters, printable
    /// ASCII without spaces or commas.
    pub fn new(key: impl Into<String>, scope: Scope) -> anyhow::Result<ApiKey> {
        let key = key.into();
        check_key(&key)?;
        Ok(ApiKey { key, scope })
    }

    /// The scope of the key among `keys` equal to `presented`, comparing
    /// with every key so the time taken does not tell which matched. The
    /// one lookup of every frontend's authentication.
    pub fn scope_among(keys: &[ApiKey], presented: &[u8]) -> Option<Scope> {
        Self::position_among(keys, presented).map(|i| keys[i].scope)
    }

    /// The position among `keys` of the key equal to `presented` (which
    /// names its rate-limit bucket), compared as [`ApiKey::scope_among`]
    /// compares.
    pub fn position_among(keys: &[ApiKey], presented: &[u8]) -> Option<usize> {
        let presented = std::str::from_utf8(presented).ok()?;
        keys.iter().enumerate().fold(
            None,
            |found, (i, k)| {
                if k.matches(presented) {
                    Some(i)
                } else {
                    found
                }
            },
        )
    }

    /// Whether `presented` is this key, compared in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.key.as_bytes(), presented.as_bytes());
        let mut diff = a.len() ^ b.len();
        for (i, x) in a.iter().enumerate() {
            diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
        }
        diff == 0
    }

    pub(super) fn redacted(&self) -> String {
        let head: String = self.key.chars().take(4).collect();
        format!("{head}… ({} chars)", self.key.len())
    }
}

/// The keys of an `--api-key-file`: one `KEY:SCOPE` a line; blank lines
/// and `#` comments are skipped. A bad line is named by its number, never
/// by its text (it holds a key).
pub(super) fn load_key_file(path: &Path) -> anyhow::Result<Vec<ApiKey>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the API key file {}", path.display()))?;
    parse_key_file(&text).with_context(|| format!("bad API key file {}", path.display()))
}

fn parse_key_file(text: &str) -> anyhow::Result<Vec<ApiKey>> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key: ApiKey = line
            .parse()
            .map_err(|e| anyhow::anyhow!("line {}: {e}", i + 1))?;
        keys.push(key);
    }
    if keys.is_empty() {
        bail!("it holds no key: write one KEY:SCOPE a line");
    }
    Ok(keys)
}

/// Words of the keys that examples and templates ship: a key holding one
/// was copied, not made, and whoever read the example knows it.
const PLACEHOLDERS: [&str; 9] = [
    "replace-me",
    "replaceme",
    "change-me",
    "changeme",
    "changeit",
    "placeholder",
    "example",
    "your-key",
    "yourkey",
];

pub(super) fn check_key(key: &str) -> anyhow::Result<()> {
    let lower = key.to_ascii_lowercase().replace('_', "-");
    if let Some(word) = PLACEHOLDERS.iter().find(|w| lower.contains(*w)) {
        bail!(
            "an API key holds {word:?}: it looks like a placeholder copied from an example, \
             which anyone who read the example can use. Make a key of your own \
             (e.g. `openssl rand -hex 16`)"
        );
    }
    if key.len() < MIN_API_KEY_LEN {
        bail!(
            "API key of {} characters is too short: use at least {MIN_API_KEY_LEN} \
             (e.g. from `openssl rand -hex 16`)",
            key.len()
        );
    }
    if let Some(c) = key.chars().find(|c| !c.is_ascii_graphic() || *c == ',') {
        bail!("API key contains {c:?}: use printable ASCII without spaces or commas");
    }
    Ok(())
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("key", &format_args!("{}", self.redacted()))
            .field("scope", &self.scope)
            .finish()
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.redacted(), self.scope)
    }
}

/// `KEY:SCOPE`, the form of `--api-key` (the key may itself hold colons).
impl FromStr for ApiKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let Some((key, scope)) = s.rsplit_once(':') else {
            return Err("expected KEY:SCOPE, with SCOPE read, write or admin".to_owned());
        };
        ApiKey::new(key, scope.parse()?).map_err(|e| e.to_string())
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            key: String,
            scope: Scope,
        }
        let raw = Raw::deserialize(d)?;
        ApiKey::new(raw.key, raw.scope).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::test_util::*;
    use crate::settings::*;

    #[test]
    fn api_keys() {
        let k: ApiKey = "0123456789abcdef:write".parse().unwrap();
        assert_eq!(
            k,
            ApiKey {
                key: KEY.into(),
                scope: Scope::Write
            }
        );
        // The key may hold colons; the scope is after the last one.
        let k: ApiKey = "abc:def:0123456789:read".parse().unwrap();
        assert_eq!(
            (k.key.as_str(), k.scope),
            ("abc:def:0123456789", Scope::Read)
        );
        let e = "0123456789abcde:read".parse::<ApiKey>().unwrap_err();
        assert!(e.contains("16"), "{e}");
        assert!("0123456789 abcdef:read".parse::<ApiKey>().is_err());
        // Never printed.
        let k = ApiKey::new("supersecret-0123456789", Scope::Admin).unwrap();
        assert!(!format!("{k:?}").contains("supersecret-0123456789"));
        assert!(!format!("{k}").contains("supersecret-0123456789"));
        // Matching.
        assert!(k.matches("supersecret-0123456789"));
        assert!(!k.matches("supersecret-012345678"));
        assert!(!k.matches("supersecret-01234567890"));
        assert!(!k.matches(""));
        let s = Settings {
            api_keys: vec![k, ApiKey::new(KEY, Scope::Read).unwrap()],
            ..Default::default()
        };
        assert_eq!(s.scope_of(KEY), Some(Scope::Read));
        assert_eq!(s.scope_of("supersecret-0123456789"), Some(Scope::Admin));
        assert_eq!(s.scope_of("nope-nope-nope-nope"), None);
        // A key given twice is refused.
        let twice = parse(&["--api-key", &format!("{KEY}:read,{KEY}:admin")]);
        let err = Settings::resolve(&twice).unwrap_err().to_string();
        assert!(err.contains("twice") && !err.contains(KEY), "{err}");
        // Keys built by hand are checked too.
        let s = Settings {
            api_keys: vec![ApiKey {
                key: "x".into(),
                scope: Scope::Read,
            }],
            ..Default::default()
        };
        assert!(s.validate().is_err());
    }

    /// A key copied from an example is refused wherever it comes from
    /// (a flag, a key file, the config file), without showing it.
    #[test]
    fn placeholder_keys_are_refused() {
        for key in [
            "replace-me-admin-key-0123456789",
            "REPLACE_ME-0123456789abcdef",
            "changeme-0123456789abcdef",
            "example-key-0123456789",
            "your-key-here-0123456789",
        ] {
            let e = ApiKey::new(key, Scope::Admin).unwrap_err().to_string();
            assert!(e.contains("placeholder") && !e.contains(key), "{key}: {e}");
            let e = format!("{key}:admin").parse::<ApiKey>().unwrap_err();
            assert!(e.contains("placeholder"), "{key}: {e}");
            let f = TempConfig::new("placeholder-keys", &format!("{key}:admin\n"));
            let e = format!(
                "{:#}",
                Settings::resolve(&parse(&["--api-key-file", f.0.to_str().unwrap()])).unwrap_err()
            );
            assert!(e.contains("placeholder") && !e.contains(key), "{key}: {e}");
        }
        let e = ApiKey::new("short-key", Scope::Read)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too short"), "{e}");
        ApiKey::new("f3a9c1d27b8e4f60a5d2", Scope::Read).unwrap();
    }

    /// Keys from a file (flag, PODIUM_API_KEY_FILE or `api_key_file` in the
    /// config file) join the --api-key ones; a bad or unreadable file is
    /// refused naming the file and line, never the key.
    #[test]
    fn api_keys_from_a_file() {
        let keys = TempConfig::new(
            "keys",
            "# podium keys\n\nreader-key-0123456789:read\n  admin-key-0123456789:admin  \n",
        );
        let path = keys.0.to_str().unwrap();
        let want = [
            ApiKey::new("flag-key-0123456789", Scope::Write).unwrap(),
            ApiKey::new("reader-key-0123456789", Scope::Read).unwrap(),
            ApiKey::new("admin-key-0123456789", Scope::Admin).unwrap(),
        ];
        let s = Settings::resolve(&parse(&[
            "--api-key",
            "flag-key-0123456789:write",
            "--api-key-file",
            path,
        ]))
        .unwrap();
        assert_eq!(s.api_keys, want);
        let cfg = TempConfig::new("keyfile", &format!("api_key_file = {path:?}\n"));
        let s = Settings::resolve(&ServeArgs {
            config: Some(cfg.0.clone()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(s.api_keys, want[1..]);

        for (text, needle) in [
            ("secret-key-0123456789:root\n", "line 1"),
            ("# a\nsecret-key-0123456789\n", "line 2: expected KEY:SCOPE"),
            ("shortsecret:read\n", "too short"),
            ("# only a comment\n\n", "holds no key"),
        ] {
            let f = TempConfig::new("bad-keys", text);
            let err = format!(
                "{:#}",
                Settings::resolve(&parse(&["--api-key-file", f.0.to_str().unwrap()])).unwrap_err()
            );
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(err.contains(f.0.to_str().unwrap()), "{err}");
            assert!(!err.contains("secret"), "the key is shown: {err}");
        }
        let gone = keys.0.with_file_name("no-such-keys");
        let err = format!(
            "{:#}",
            Settings::resolve(&parse(&["--api-key-file", gone.to_str().unwrap()])).unwrap_err()
        );
        assert!(err.contains("cannot read the API key file"), "{err}");
    }
}
