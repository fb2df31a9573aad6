//! Redis's glob patterns (KEYS, SCAN MATCH, ZSCAN MATCH, CONFIG GET), byte-wise.

/// Redis's glob match (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`,
/// `[a-z]`, and `\x` for a literal `x`. Byte-wise.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    // Backtracking point for the last `*`: (pattern index after it, string index).
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, s[i]) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Matches `c` against the class starting at `pattern[p] == b'['`; returns
/// (matched, index after the class). An unterminated class runs to the end
/// of the pattern, as in Redis.
fn class_match(pattern: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let not = pattern.get(j) == Some(&b'^');
    if not {
        j += 1;
    }
    let mut matched = false;
    while j < pattern.len() && pattern[j] != b']' {
        if pattern[j] == b'\\' && j + 1 < pattern.len() {
            matched |= pattern[j + 1] == c;
            j += 2;
        } else if j + 2 < pattern.len() && pattern[j + 1] == b'-' && pattern[j + 2] != b']' {
            let (mut lo, mut hi) = (pattern[j], pattern[j + 2]);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            matched |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            matched |= pattern[j] == c;
            j += 1;
        }
    }
    let next = if j < pattern.len() { j + 1 } else { j };
    Some((matched != not, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob() {
        for (p, s, want) in [
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("board:*:week", "board:x:week", true),
            ("*a*b", "xxaxxbxb", true),
            ("", "", true),
            ("a", "", false),
        ] {
            assert_eq!(glob_match(p.as_bytes(), s.as_bytes()), want, "{p} ~ {s}");
        }
    }
}
