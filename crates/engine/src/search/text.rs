//! Tokenisation: the one function that turns text into words, for indexing
//! and for queries alike (so a query word and an indexed word compare equal
//! exactly when their folded forms do).
//!
//! 1. NFKD (compatibility decomposition): `ﬁ` → `fi`, `①` → `1`, `é` → `e` +
//!    U+0301, full-width `Ａ` → `A`.
//! 2. Drop combining marks that are not alphabetic: the diacritics
//!    (`José` → `jose`, `Ångström` → `angstrom`, `が` → `か`). Alphabetic
//!    marks — the vowel signs of Indic and South-East Asian scripts — are
//!    letters there and are kept, so `कि` and `का` stay distinct words.
//! 3. Full Unicode lowercase (`ΣΊΣΥΦΟΣ` → `σισυφοσ`, `İ` → `i`).
//! 4. Split on every char that is not alphanumeric (`char::is_alphanumeric`);
//!    empty pieces are dropped. CJK and other scripts are alphanumeric, so a
//!    run such as `王小明` is one word (there is no dictionary segmentation;
//!    prefix search still finds it by `王`).
//!
//! Steps 1–3 run a second time on the rare non-ASCII output that lowercase
//! can leave un-decomposed, so the result is a fixed point. ASCII text takes
//! a fast path with the same result.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Indexed words are cut to at most this many bytes (at a char boundary).
/// Invisible to queries: a query word is at most
/// [`super::MAX_TOKEN_BYTES`] bytes, far shorter, so a cut word still
/// matches every prefix query it matched whole and no exact one it did not.
pub const MAX_WORD_BYTES: usize = 255;

#[inline]
fn dropped(c: char) -> bool {
    is_combining_mark(c) && !c.is_alphabetic()
}

/// Steps 1–3 of the module doc, appended to `out`.
fn fold_into(text: &str, out: &mut String) {
    let start = out.len();
    for c in text.nfkd().filter(|&c| !dropped(c)) {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    // Lowercase may produce a char that decomposes (or a mark); a second
    // pass makes the fold idempotent. It is rarely needed, so check first.
    let folded = &out[start..];
    if !folded.is_ascii()
        && folded
            .nfkd()
            .filter(|&c| !dropped(c))
            .flat_map(char::to_lowercase)
            .ne(folded.chars())
    {
        let again: String = folded
            .nfkd()
            .filter(|&c| !dropped(c))
            .flat_map(char::to_lowercase)
            .collect();
        out.truncate(start);
        out.push_str(&again);
    }
}

/// Cuts `w` to at most [`MAX_WORD_BYTES`] at a char boundary.
#[inline]
pub fn clip(w: &str) -> &str {
    if w.len() <= MAX_WORD_BYTES {
        return w;
    }
    let mut end = MAX_WORD_BYTES;
    while !w.is_char_boundary(end) {
        end -= 1;
    }
    &w[..end]
}

/// Calls `f` with each folded word of `text`, in order. `buf` is scratch
/// space, reused across calls to avoid allocating.
pub(crate) fn for_each_word(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    buf.clear();
    if text.is_ascii() {
        buf.push_str(text);
        buf.make_ascii_lowercase();
        for w in buf.split(|c: char| !c.is_ascii_alphanumeric()) {
            if !w.is_empty() {
                f(w);
            }
        }
        return;
    }
    fold_into(text, buf);
    for w in buf.split(|c: char| !c.is_alphanumeric()) {
        if !w.is_empty() {
            f(w);
        }
    }
}

/// The words of `text` as the search index sees them (folded, in order;
/// indexed words are further cut to 255 bytes). The same function tokenises
/// queries.
///
/// ```
/// use podium_engine::search::tokenize;
/// assert_eq!(tokenize("José-Ángel  O'Brien"), ["jose", "angel", "o", "brien"]);
/// assert_eq!(tokenize("Ångström"), ["angstrom"]);
/// assert_eq!(tokenize("王小明 ＡＢＣ"), ["王小明", "abc"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    for_each_word(text, &mut buf, |w| out.push(w.to_string()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diacritics_are_folded() {
        assert_eq!(tokenize("José"), ["jose"]);
        assert_eq!(tokenize("Ångström"), ["angstrom"]);
        assert_eq!(
            tokenize("Dvořák Müller Çelik"),
            ["dvorak", "muller", "celik"]
        );
        assert_eq!(tokenize("naïve café"), ["naive", "cafe"]);
        // Already decomposed input folds the same.
        assert_eq!(tokenize("Jose\u{301}"), ["jose"]);
        // Japanese voicing marks are diacritics too.
        assert_eq!(tokenize("が"), tokenize("か"));
    }

    #[test]
    fn case_is_folded_with_full_unicode_lowercase() {
        assert_eq!(tokenize("ALICE"), ["alice"]);
        assert_eq!(tokenize("ΣΊΣΥΦΟΣ"), ["σισυφοσ"]);
        assert_eq!(tokenize("İstanbul"), ["istanbul"]);
        assert_eq!(tokenize("ДЖОН"), ["джон"]);
        // Compatibility forms: ligatures, full width, circled, Kelvin sign.
        assert_eq!(
            tokenize("ﬁnal ＡＢＣ ① \u{212A}"),
            ["final", "abc", "1", "k"]
        );
        // A modifier capital letter decomposes to a capital, then lowercases.
        assert_eq!(tokenize("\u{1D2C}"), ["a"]);
    }

    #[test]
    fn punctuation_splits_and_vanishes() {
        assert_eq!(
            tokenize("  jean-luc, O'Brien!! (x_y) a.b "),
            ["jean", "luc", "o", "brien", "x", "y", "a", "b"]
        );
        assert!(tokenize("--- !!! ...").is_empty());
        assert!(tokenize("").is_empty());
        assert_eq!(tokenize("R2-D2 3.14"), ["r2", "d2", "3", "14"]);
        // Emoji and symbols are not alphanumeric.
        assert_eq!(tokenize("ana🙂bob ★"), ["ana", "bob"]);
    }

    #[test]
    fn other_scripts_are_kept_as_words() {
        assert_eq!(tokenize("王小明"), ["王小明"]);
        assert_eq!(tokenize("山田 太郎"), ["山田", "太郎"]);
        assert_eq!(tokenize("김민준"), tokenize("김민준"));
        assert_eq!(tokenize("김민준").len(), 1);
        assert_eq!(tokenize("محمد علي"), ["محمد", "علي"]);
        assert_eq!(tokenize("Ελένη"), ["ελενη"]);
        // Devanagari vowel signs are alphabetic marks: kept, and the word
        // is not split at them.
        let hindi = tokenize("किरण कारण");
        assert_eq!(hindi.len(), 2);
        assert_ne!(hindi[0], hindi[1]);
        // Arabic-Indic digits are numeric.
        assert_eq!(tokenize("٣٤"), ["٣٤"]);
    }

    #[test]
    fn ascii_fast_path_agrees_with_the_general_path() {
        for s in ["Hello World", "a-b_c.d", "MiXeD 123 CaSe", "  ", "x"] {
            let mut general = String::new();
            fold_into(s, &mut general);
            let slow: Vec<String> = general
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect();
            assert_eq!(tokenize(s), slow, "{s:?}");
        }
    }

    #[test]
    fn folding_is_idempotent() {
        for s in [
            "José Ångström",
            "İİ ﬁ ① ᴬᴮ ΣΊΣΥΦΟΣ",
            "ǅemal ǈ ǋ",
            "ﷺ ㌀ ẞ",
            "ᾼ ᾳ Ᾱ",
            "किरण",
        ] {
            let once = tokenize(s);
            let twice: Vec<String> = once.iter().flat_map(|w| tokenize(w)).collect();
            assert_eq!(once, twice, "{s:?}");
        }
    }

    #[test]
    fn clip_cuts_at_char_boundaries() {
        let long = "é".repeat(200); // 400 bytes
        let c = clip(&long);
        assert!(c.len() <= MAX_WORD_BYTES && c.len() >= MAX_WORD_BYTES - 3);
        assert!(long.starts_with(c));
        assert_eq!(clip("abc"), "abc");
    }
}
