//! The query language (docs/spec.md §3), parsed into folded query words.
//!
//! - Whitespace separates tokens.
//! - `field:token` restricts the token to one of the board's
//!   `search_fields` (the text before the first `:` of a token names the
//!   field; an unknown name is an error). On a board with one search field
//!   a restriction to it changes nothing.
//! - `"…"` forces exact matching of every word inside; the quotes may hold
//!   spaces (`"jean luc"` is two exact words) and may follow a field
//!   (`team:"red sox"`). An unclosed quote runs to the end of the query.
//!   Text right after a closing quote starts a new token.
//! - `tok*` matches by prefix; so does the last token that has a word, unless
//!   quoted. Every other token matches exactly.
//! - A token is tokenised like indexed text (see [`super::text`]): it may
//!   yield several words (`jean-luc` → `jean`, `luc`), which all inherit the
//!   token's field and its exact/prefix mode; a token with no word (`-`) is
//!   ignored; a field followed by no word is an error.

use super::text::for_each_word;
use super::{SearchError, MAX_QUERY_BYTES, MAX_TOKENS, MAX_TOKEN_BYTES};

/// One query word: matches one distinct word occurrence of a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QToken {
    /// Folded.
    pub word: String,
    /// Prefix (`true`) or exact match.
    pub prefix: bool,
    /// Index into the board's `search_fields`; `None`: any field.
    pub field: Option<u8>,
}

impl QToken {
    /// Whether this token matches the indexed word `w` of field `f`.
    #[inline]
    pub fn matches(&self, f: u8, w: &[u8]) -> bool {
        self.field.is_none_or(|x| x == f)
            && if self.prefix {
                w.starts_with(self.word.as_bytes())
            } else {
                w == self.word.as_bytes()
            }
    }
}

struct Raw<'q> {
    field: Option<&'q str>,
    text: &'q str,
    quoted: bool,
    star: bool,
}

fn lex(q: &str) -> Vec<Raw<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = q.len();
    while i < n {
        let rest = &q[i..];
        let ws = rest.len() - rest.trim_start().len();
        i += ws;
        if i >= n {
            break;
        }
        let run_len = q[i..].find(char::is_whitespace).unwrap_or(n - i);
        let run = &q[i..i + run_len];
        let (field, body) = match run.find(':') {
            Some(p) if p > 0 && !run[..p].contains('"') => (Some(&run[..p]), i + p + 1),
            _ => (None, i),
        };
        if q[body..].starts_with('"') {
            let start = body + 1;
            let end = q[start..].find('"').map_or(n, |e| start + e);
            out.push(Raw {
                field,
                text: &q[start..end],
                quoted: true,
                star: false,
            });
            i = (end + 1).min(n);
        } else {
            let end = i + run_len;
            let text = &q[body..end];
            let trimmed = text.trim_end_matches('*');
            out.push(Raw {
                field,
                text: trimmed,
                quoted: false,
                star: trimmed.len() != text.len(),
            });
            i = end;
        }
    }
    out
}

/// Parses `q` for a board searching `fields`.
pub fn parse(q: &str, fields: &[String]) -> Result<Vec<QToken>, SearchError> {
    if q.len() > MAX_QUERY_BYTES {
        return Err(SearchError::QueryTooLong {
            len: q.len(),
            max: MAX_QUERY_BYTES,
        });
    }
    let raws = lex(q);
    let mut groups: Vec<(Vec<String>, &Raw)> = Vec::with_capacity(raws.len());
    let mut count = 0usize;
    let mut buf = String::new();
    for raw in &raws {
        let mut words = Vec::new();
        let mut too_long = None;
        for_each_word(raw.text, &mut buf, |w| {
            if w.len() > MAX_TOKEN_BYTES {
                too_long.get_or_insert(w.len());
            }
            words.push(w.to_string());
        });
        if let Some(len) = too_long {
            return Err(SearchError::TokenTooLong {
                len,
                max: MAX_TOKEN_BYTES,
            });
        }
        if let Some(f) = raw.field {
            if !fields.iter().any(|x| x == f) {
                return Err(SearchError::UnknownField {
                    field: f.to_string(),
                    known: fields.to_vec(),
                });
            }
            if words.is_empty() {
                return Err(SearchError::EmptyField {
                    field: f.to_string(),
                });
            }
        }
        count += words.len();
        if count > MAX_TOKENS {
            return Err(SearchError::TooManyTokens { max: MAX_TOKENS });
        }
        if !words.is_empty() {
            groups.push((words, raw));
        }
    }
    if groups.is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    let last = groups.len() - 1;
    let mut out = Vec::with_capacity(count);
    for (g, (words, raw)) in groups.into_iter().enumerate() {
        let prefix = !raw.quoted && (raw.star || g == last);
        let field = match raw.field {
            // A restriction to a board's only field restricts nothing.
            Some(_) if fields.len() == 1 => None,
            Some(f) => fields.iter().position(|x| x == f).map(|p| p as u8),
            None => None,
        };
        out.extend(words.into_iter().map(|word| QToken {
            word,
            prefix,
            field,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Vec<String> {
        vec!["name".into(), "team".into()]
    }

    fn p(q: &str) -> Vec<(String, bool, Option<u8>)> {
        parse(q, &fields())
            .unwrap()
            .into_iter()
            .map(|t| (t.word, t.prefix, t.field))
            .collect()
    }

    fn t(w: &str, prefix: bool, field: Option<u8>) -> (String, bool, Option<u8>) {
        (w.to_string(), prefix, field)
    }

    #[test]
    fn last_token_and_stars_are_prefixes() {
        assert_eq!(p("al"), [t("al", true, None)]);
        assert_eq!(p("al bo"), [t("al", false, None), t("bo", true, None)]);
        assert_eq!(p("al* bo"), [t("al", true, None), t("bo", true, None)]);
        assert_eq!(
            p("  Al**   BO  "),
            [t("al", true, None), t("bo", true, None)]
        );
        // The last token with a word is the prefix one.
        assert_eq!(p("al -"), [t("al", true, None)]);
        assert_eq!(
            p("a* a* a"),
            [t("a", true, None), t("a", true, None), t("a", true, None)]
        );
    }

    #[test]
    fn quotes_force_exact() {
        assert_eq!(p("\"al\""), [t("al", false, None)]);
        assert_eq!(p("bo \"al\""), [t("bo", false, None), t("al", false, None)]);
        assert_eq!(
            p("\"jean luc\" x"),
            [
                t("jean", false, None),
                t("luc", false, None),
                t("x", true, None)
            ]
        );
        // Unclosed: to the end of the query.
        assert_eq!(
            p("x \"al bo"),
            [
                t("x", false, None),
                t("al", false, None),
                t("bo", false, None)
            ]
        );
        // A star after the quotes is punctuation: still exact.
        assert_eq!(p("\"al\"*"), [t("al", false, None)]);
        // Text stuck to a closing quote is a new token.
        assert_eq!(p("\"al\"bo"), [t("al", false, None), t("bo", true, None)]);
        // A colon inside quotes is not a field.
        assert_eq!(p("\"12:30\""), [t("12", false, None), t("30", false, None)]);
    }

    #[test]
    fn fields_restrict_tokens() {
        assert_eq!(
            p("team:red ali*"),
            [t("red", false, Some(1)), t("ali", true, None)]
        );
        assert_eq!(
            p("ali team:re"),
            [t("ali", false, None), t("re", true, Some(1))]
        );
        assert_eq!(
            p("team:\"red sox\""),
            [t("red", false, Some(1)), t("sox", false, Some(1))]
        );
        assert_eq!(p("name:Jo*"), [t("jo", true, Some(0))]);
        // Several words from one token inherit field and mode.
        assert_eq!(
            p("team:red-sox x"),
            [
                t("red", false, Some(1)),
                t("sox", false, Some(1)),
                t("x", true, None)
            ]
        );
        assert_eq!(p("jean-lu"), [t("jean", true, None), t("lu", true, None)]);
        // A leading colon names no field.
        assert_eq!(p(":al"), [t("al", true, None)]);
        // On a one-field board, a restriction to it is no restriction.
        let one = parse("name:al", &["name".to_string()]).unwrap();
        assert_eq!(one[0].field, None);
    }

    #[test]
    fn errors_are_typed_and_clear() {
        let f = fields();
        assert_eq!(parse("", &f), Err(SearchError::EmptyQuery));
        assert_eq!(parse("  - !! * \"\" ", &f), Err(SearchError::EmptyQuery));
        let e = parse("colour:red", &f).unwrap_err();
        assert!(matches!(&e, SearchError::UnknownField { field, .. } if field == "colour"));
        assert!(e.to_string().contains("\"name\", \"team\""), "{e}");
        assert!(matches!(
            parse("team:", &f),
            Err(SearchError::EmptyField { .. })
        ));
        assert!(matches!(
            parse("team:--", &f),
            Err(SearchError::EmptyField { .. })
        ));
        assert!(matches!(
            parse("re:zero", &f),
            Err(SearchError::UnknownField { .. })
        ));
        let many = vec!["a"; MAX_TOKENS + 1].join(" ");
        assert_eq!(
            parse(&many, &f),
            Err(SearchError::TooManyTokens { max: MAX_TOKENS })
        );
        assert_eq!(
            parse(&vec!["a"; MAX_TOKENS].join(" "), &f).unwrap().len(),
            MAX_TOKENS
        );
        let long = "x".repeat(1024);
        assert_eq!(
            parse(&long, &f),
            Err(SearchError::TokenTooLong {
                len: 1024,
                max: MAX_TOKEN_BYTES
            })
        );
        assert!(parse(&"x".repeat(MAX_TOKEN_BYTES), &f).is_ok());
        assert!(matches!(
            parse(&"a ".repeat(MAX_QUERY_BYTES), &f),
            Err(SearchError::QueryTooLong { .. })
        ));
    }
}
