//! LCS's computation as Redis 7.0 does it (`lcsCommand`): the dynamic
//! programming table of common-subsequence lengths, then the walk back
//! from its corner that yields the subsequence and the matching ranges in
//! Redis's order (from the strings' ends). The table is `(|a|+1)·(|b|+1)`
//! 32-bit cells, so it is reserved against the memory budget before it is
//! allocated: two large strings get an error, not an exhausted server.

use crate::error::{ApiError, Code};
use crate::memory;

use super::MAX_STRING_LEN;

/// One run of consecutive matching bytes: inclusive ranges in each string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LcsRange {
    pub a: (u32, u32),
    pub b: (u32, u32),
}

impl LcsRange {
    /// WITHMATCHLEN's length.
    pub fn match_len(&self) -> u32 {
        self.a.1 - self.a.0 + 1
    }
}

/// The longest common subsequence, its length and its ranges (last
/// first, as Redis lists them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lcs {
    pub text: Vec<u8>,
    pub ranges: Vec<LcsRange>,
}

/// Redis's refusal of strings whose lengths would overflow its indexes.
pub const TOO_LONG: &str = "String too long for LCS";

/// The LCS of `a` and `b`. Errors: [`TOO_LONG`] and a table past
/// `proto-max-bulk-len` (`Code::InvalidArgument`, Redis's texts), and
/// `Code::OutOfMemory` when the table does not fit the memory budget or
/// cannot be allocated.
pub fn lcs(a: &[u8], b: &[u8]) -> Result<Lcs, ApiError> {
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(ApiError::new(Code::InvalidArgument, TOO_LONG));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1).saturating_mul(blen as u64 + 1);
    let too_big = || {
        ApiError::new(
            Code::OutOfMemory,
            format!(
                "Insufficient memory, the LCS table for strings of {alen} and {blen} bytes \
                 ({} bytes) does not fit in the memory budget",
                cells.saturating_mul(4)
            ),
        )
    };
    // Redis's own bound first: no table larger than proto-max-bulk-len.
    if cells.saturating_mul(4) > MAX_STRING_LEN {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let bytes = (cells * 4) as usize;
    let _held = memory::reserve(bytes).map_err(|_| too_big())?;
    let mut t: Vec<u32> = Vec::new();
    t.try_reserve_exact(bytes / 4).map_err(|_| {
        ApiError::new(
            Code::OutOfMemory,
            "Insufficient memory, failed allocating transient memory for LCS",
        )
    })?;
    t.resize(bytes / 4, 0);
    let w = blen + 1;
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let mut idx = t[alen * w + blen] as usize;
    let mut text = vec![0u8; idx];
    let mut ranges = Vec::new();
    // `None`: no range open (Redis marks it with arange_start == alen).
    let mut open: Option<LcsRange> = None;
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            text[idx - 1] = a[i - 1];
            let (ii, jj) = ((i - 1) as u32, (j - 1) as u32);
            match &mut open {
                None => {
                    open = Some(LcsRange {
                        a: (ii, ii),
                        b: (jj, jj),
                    })
                }
                Some(r) if r.a.0 == i as u32 && r.b.0 == j as u32 => {
                    r.a.0 -= 1;
                    r.b.0 -= 1;
                }
                // Not contiguous: the open range ends; this byte starts
                // none (as in Redis).
                Some(_) => emit = true,
            }
            if open.is_some_and(|r| r.a.0 == 0 || r.b.0 == 0) {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if open.is_some() {
                emit = true;
            }
        }
        if emit {
            if let Some(r) = open.take() {
                ranges.push(r);
            }
        }
    }
    Ok(Lcs { text, ranges })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: (u32, u32), b: (u32, u32)) -> LcsRange {
        LcsRange { a, b }
    }

    #[test]
    fn redis_examples() {
        let l = lcs(b"ohmytext", b"mynewtext").unwrap();
        assert_eq!(l.text, b"mytext");
        assert_eq!(l.ranges, [r((4, 7), (5, 8)), r((2, 3), (0, 1))]);
        let l = lcs(b"abcXdefYghi", b"abcZdefWghi").unwrap();
        assert_eq!(l.text, b"abcdefghi");
        assert_eq!(
            l.ranges,
            [r((8, 10), (8, 10)), r((4, 6), (4, 6)), r((0, 2), (0, 2))]
        );
        assert_eq!(l.ranges[0].match_len(), 3);
        assert_eq!(lcs(b"", b"abc").unwrap(), Lcs::default());
        assert_eq!(lcs(b"abc", b"xyz").unwrap(), Lcs::default());
    }

    #[test]
    fn the_table_is_bounded() {
        // 12000 × 12000 cells of 4 bytes: past Redis's 512 MB.
        let a = vec![b'a'; 12_000];
        let e = lcs(&a, &a).unwrap_err();
        assert_eq!(
            e.message,
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
        );
        let huge = vec![b'x'; 1 << 17];
        assert_eq!(lcs(&huge, b"x").unwrap().text, b"x");
    }
}
