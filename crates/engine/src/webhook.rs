//! The webhooks a board's config names: where its live events are POSTed
//! and which of them (docs/spec.md §4, "Webhooks"). The engine only keeps
//! and checks them as config — delivery, signing and the address policy
//! belong to the server.

use crate::error::{Error, Result};

/// Most webhooks one board may name.
pub const MAX_WEBHOOKS: usize = 8;
/// Longest webhook URL, in bytes.
pub const MAX_URL: usize = 2048;
/// Shortest and longest secret, in bytes.
pub const SECRET_BYTES: (usize, usize) = (16, 256);
/// Most places a webhook's `top` may watch (as a subscription's).
pub const MAX_TOP: u32 = 1000;
/// Most members a webhook's `members` may name (as a subscription's).
pub const MAX_MEMBERS: usize = 1000;

/// One webhook: its name (unique on the board), its endpoint, the secret
/// its deliveries are signed with, and its filter — `top` places and/or
/// `members`, neither meaning every change (the board's lifecycle is
/// always included, as for a subscription).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Webhook {
    pub name: String,
    pub url: String,
    /// Empty while a config read from a client leaves it out to keep the
    /// secret the hook of that name already has ([`keep_secrets`]).
    pub secret: String,
    pub top: Option<u32>,
    pub members: Vec<String>,
}

impl Webhook {
    /// The hook as stored: with its secret.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = self.to_public_json();
        if let Some(o) = v.as_object_mut() {
            o.insert("secret".into(), self.secret.clone().into());
        }
        v
    }

    /// The hook as clients read it: never its secret.
    pub fn to_public_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("name".into(), self.name.clone().into());
        o.insert("url".into(), self.url.clone().into());
        if let Some(n) = self.top {
            o.insert("top".into(), n.into());
        }
        if !self.members.is_empty() {
            o.insert("members".into(), self.members.clone().into());
        }
        serde_json::Value::Object(o)
    }

    pub fn from_json(v: &serde_json::Value) -> Result<Webhook> {
        let bad = |m: String| Error::BadConfig(format!("webhooks: {m}"));
        let obj = v
            .as_object()
            .ok_or_else(|| bad("each webhook must be a JSON object".into()))?;
        let mut h = Webhook::default();
        let text = |k: &str, v: &serde_json::Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("{k} must be a string")))
        };
        for (k, v) in obj {
            if v.is_null() {
                continue;
            }
            match k.as_str() {
                "name" => h.name = text(k, v)?,
                "url" => h.url = text(k, v)?,
                "secret" => h.secret = text(k, v)?,
                "top" => {
                    let n = crate::config::whole(v).filter(|n| (1..=MAX_TOP as u64).contains(n));
                    h.top =
                        Some(n.ok_or_else(|| {
                            bad(format!("top must be an integer from 1 to {MAX_TOP}"))
                        })? as u32);
                }
                "members" => {
                    let arr = v
                        .as_array()
                        .ok_or_else(|| bad("members must be an array of strings".into()))?;
                    h.members = arr
                        .iter()
                        .map(|m| text("members", m))
                        .collect::<Result<_>>()?;
                }
                other => return Err(bad(format!("unknown webhook field {other:?}"))),
            }
        }
        h.validate()?;
        Ok(h)
    }

    /// The checks a hook passes on its own (a missing secret is checked
    /// once the old config's secrets are carried over).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::BadConfig(format!("webhooks: {m}")));
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
        if !name_ok {
            return bad(format!(
                "name {:?} must be 1 to 64 letters, digits, '-' or '_'",
                self.name
            ));
        }
        let lower = self.url.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"));
        let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
        if self.url.len() > MAX_URL
            || host.is_none_or(|h| h.is_empty() || h.contains('@'))
            || self.url.bytes().any(|c| c <= b' ' || c == 0x7f)
        {
            return bad(format!(
                "{:?}: url must be an http:// or https:// URL with a host, no credentials, \
                 at most {MAX_URL} bytes",
                self.name
            ));
        }
        let (lo, hi) = SECRET_BYTES;
        if !self.secret.is_empty() && !(lo..=hi).contains(&self.secret.len()) {
            return bad(format!(
                "{:?}: secret must be {lo} to {hi} bytes",
                self.name
            ));
        }
        if self.members.len() > MAX_MEMBERS {
            return bad(format!(
                "{:?}: members may name at most {MAX_MEMBERS} members",
                self.name
            ));
        }
        if self
            .members
            .iter()
            .any(|m| m.is_empty() || m.len() > crate::MAX_MEMBER_BYTES)
        {
            return bad(format!(
                "{:?}: members must be 1 to {} bytes each",
                self.name,
                crate::MAX_MEMBER_BYTES
            ));
        }
        Ok(())
    }
}

/// A board's list as a config gives it: at most [`MAX_WEBHOOKS`] entries,
/// and a later hook of a name given before replaces the earlier one (a
/// name is the hook's identity, as a key is an object's).
pub fn list_from_json(arr: &[serde_json::Value]) -> Result<Vec<Webhook>> {
    if arr.len() > MAX_WEBHOOKS {
        return Err(Error::BadConfig(format!(
            "webhooks: a board may name at most {MAX_WEBHOOKS}"
        )));
    }
    let mut hooks: Vec<Webhook> = Vec::with_capacity(arr.len());
    for v in arr {
        let h = Webhook::from_json(v)?;
        match hooks.iter_mut().find(|o| o.name == h.name) {
            Some(earlier) => *earlier = h,
            None => hooks.push(h),
        }
    }
    Ok(hooks)
}

/// Checks a board's list as a whole: at most [`MAX_WEBHOOKS`], names
/// unique.
pub fn validate(hooks: &[Webhook]) -> Result<()> {
    if hooks.len() > MAX_WEBHOOKS {
        return Err(Error::BadConfig(format!(
            "webhooks: a board may name at most {MAX_WEBHOOKS}"
        )));
    }
    for (i, h) in hooks.iter().enumerate() {
        if hooks[..i].iter().any(|o| o.name == h.name) {
            return Err(Error::BadConfig(format!(
                "webhooks: the name {:?} is used twice",
                h.name
            )));
        }
    }
    Ok(())
}

/// Gives each hook of `new` that came without a secret the secret of
/// `old`'s hook of the same name (clients read configs without secrets and
/// write them back), then refuses a hook left without one.
pub fn keep_secrets(new: &mut [Webhook], old: &[Webhook]) -> Result<()> {
    for h in new.iter_mut().filter(|h| h.secret.is_empty()) {
        match old.iter().find(|o| o.name == h.name) {
            Some(o) => h.secret = o.secret.clone(),
            // The config itself is incomplete, whatever the board holds:
            // a bad config, as any other missing field is.
            None => {
                return Err(Error::BadConfig(format!(
                    "webhooks: {:?} needs a secret (its deliveries are signed with it; \
                     only a hook the board already has keeps its own when none is given)",
                    h.name
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(v: serde_json::Value) -> Result<Webhook> {
        Webhook::from_json(&v)
    }

    #[test]
    fn reads_checks_and_hides_the_secret() {
        let h = hook(json!({"name": "scores", "url": "https://example.com/hook",
            "secret": "0123456789abcdef", "top": 10, "members": ["ann"]}))
        .unwrap();
        assert_eq!(Webhook::from_json(&h.to_json()).unwrap(), h);
        assert!(h.to_public_json().get("secret").is_none());
        for bad in [
            json!({"name": "", "url": "http://h/"}),
            json!({"name": "a b", "url": "http://h/"}),
            json!({"name": "a", "url": "ftp://h/"}),
            json!({"name": "a", "url": "http:///path"}),
            json!({"name": "a", "url": "http://user:pw@h/"}),
            json!({"name": "a", "url": "http://h/ x"}),
            json!({"name": "a", "url": "http://h/", "secret": "short"}),
            json!({"name": "a", "url": "http://h/", "top": 0}),
            json!({"name": "a", "url": "http://h/", "top": 1001}),
            json!({"name": "a", "url": "http://h/", "members": [""]}),
            json!({"name": "a", "url": "http://h/", "colour": "red"}),
            json!("http://h/"),
        ] {
            assert!(hook(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_carry_over_by_name() {
        let old =
            vec![hook(json!({"name": "a", "url": "http://h/", "secret": "s".repeat(16)})).unwrap()];
        let mut new = vec![hook(json!({"name": "a", "url": "http://h2/"})).unwrap()];
        keep_secrets(&mut new, &old).unwrap();
        assert_eq!(new[0].secret, "s".repeat(16));
        let mut other = vec![hook(json!({"name": "b", "url": "http://h/"})).unwrap()];
        assert!(keep_secrets(&mut other, &old).is_err());
        // A config that leaves a new hook unsigned is a bad config (400
        // invalid_config), whatever the board holds.
        let e = keep_secrets(&mut other, &old).unwrap_err();
        assert!(matches!(e, Error::BadConfig(_)), "{e:?}");
        assert!(e.to_string().contains("needs a secret"), "{e}");
        let twice = vec![new[0].clone(), new[0].clone()];
        assert!(validate(&twice).is_err());
    }

    #[test]
    fn a_later_hook_of_a_name_replaces_the_earlier_one() {
        let list = [
            json!({"name": "a", "url": "http://one/"}),
            json!({"name": "b", "url": "http://two/"}),
            json!({"name": "a", "url": "http://three/", "top": 5}),
        ];
        let hooks = list_from_json(&list).unwrap();
        let got: Vec<(&str, &str, Option<u32>)> = hooks
            .iter()
            .map(|h| (h.name.as_str(), h.url.as_str(), h.top))
            .collect();
        assert_eq!(
            got,
            [("a", "http://three/", Some(5)), ("b", "http://two/", None)]
        );
        // The count is of the entries given.
        let nine = vec![json!({"name": "a", "url": "http://one/"}); MAX_WEBHOOKS + 1];
        assert!(list_from_json(&nine).is_err());
    }
}
