//! Parsing of the sorted-set commands of lexicographic ranges and set
//! algebra: the lexicographic range items (ZLEXCOUNT, ZREMRANGEBYLEX and
//! the BYLEX forms of the ZRANGE family, which [`super::command`] parses),
//! and ZUNION, ZINTER, ZDIFF, ZUNIONSTORE, ZINTERSTORE, ZINTERCARD and
//! ZDIFFSTORE, checked in the order of Redis's
//! `zunionInterDiffGenericCommand`: the count and the keys first; the
//! options after, carried in the command as a deferred `Result` since
//! Redis reports them only after the keys' type check.

use bytes::Bytes;
use podium_core::keystore::{LexRange, SetOp};
use podium_engine::Aggregate;

use super::command::{AlgebraOpts, Cmd, StoreOpts};
use super::num::{parse_double, parse_i64};
use super::reply::Reply;

fn eq(a: &[u8], word: &str) -> bool {
    a.eq_ignore_ascii_case(word.as_bytes())
}

/// `zslParseLexRange`'s verdict on a `min max` pair.
pub(super) fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Reply> {
    LexRange::parse(min, max).ok_or_else(|| Reply::err("min or max not valid string range item"))
}

/// The count at `args[at]` and the keys after it; the index of the first
/// argument past them.
fn counted_keys(args: &[Bytes], at: usize, name: &str) -> Result<(Vec<Bytes>, usize), Reply> {
    let n = parse_i64(&args[at])
        .ok_or_else(|| Reply::err("value is not an integer or out of range"))?;
    if n < 1 {
        return Err(Reply::err(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    let room = args.len() - (at + 1);
    if n as u64 > room as u64 {
        return Err(Reply::syntax());
    }
    let end = at + 1 + n as usize;
    Ok((args[at + 1..end].to_vec(), end))
}

/// The options after the `n` keys that end at `from`, in the loop of
/// Redis's `zunionInterDiffGenericCommand`: WEIGHTS and AGGREGATE where
/// the command combines scores (`weighted`: not ZDIFF), WITHSCORES where
/// it replies with the result (`replies`: not the STORE forms).
fn set_options(
    args: &[Bytes],
    from: usize,
    n: usize,
    weighted: bool,
    replies: bool,
) -> Result<AlgebraOpts, Reply> {
    let mut o = AlgebraOpts {
        weights: vec![1.0; n],
        agg: Aggregate::Sum,
        withscores: false,
    };
    let mut j = from;
    while j < args.len() {
        let remaining = args.len() - j;
        if weighted && remaining > n && eq(&args[j], "weights") {
            for (i, w) in args[j + 1..j + 1 + n].iter().enumerate() {
                o.weights[i] =
                    parse_double(w).ok_or_else(|| Reply::err("weight value is not a float"))?;
            }
            j += 1 + n;
        } else if weighted && remaining >= 2 && eq(&args[j], "aggregate") {
            let a = &args[j + 1][..];
            o.agg = if eq(a, "sum") {
                Aggregate::Sum
            } else if eq(a, "min") {
                Aggregate::Min
            } else if eq(a, "max") {
                Aggregate::Max
            } else {
                return Err(Reply::syntax());
            };
            j += 2;
        } else if replies && eq(&args[j], "withscores") {
            o.withscores = true;
            j += 1;
        } else {
            return Err(Reply::syntax());
        }
    }
    Ok(o)
}

/// ZUNION / ZINTER / ZDIFF numkeys key [key ...] [WEIGHTS w ...]
/// [AGGREGATE SUM|MIN|MAX] [WITHSCORES] (ZDIFF: WITHSCORES only).
pub(super) fn algebra(args: &[Bytes], op: SetOp, name: &str) -> Result<Cmd, Reply> {
    let (keys, from) = counted_keys(args, 1, name)?;
    let opts = set_options(args, from, keys.len(), op != SetOp::Diff, true);
    Ok(Cmd::ZAlgebra { keys, op, opts })
}

/// ZUNIONSTORE / ZINTERSTORE destination numkeys key [key ...]
/// [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX].
pub(super) fn store(args: &[Bytes], inter: bool) -> Result<Cmd, Reply> {
    let name = if inter { "zinterstore" } else { "zunionstore" };
    let (keys, from) = counted_keys(args, 2, name)?;
    let opts = set_options(args, from, keys.len(), true, false).map(|o| StoreOpts {
        weights: o.weights,
        agg: o.agg,
    });
    Ok(Cmd::ZStore {
        dest: args[1].clone(),
        keys,
        inter,
        opts,
    })
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub(super) fn intercard(args: &[Bytes]) -> Result<Cmd, Reply> {
    let (keys, from) = counted_keys(args, 1, "zintercard")?;
    let limit = (|| {
        let mut limit = 0;
        let mut j = from;
        while j < args.len() {
            if args.len() - j >= 2 && eq(&args[j], "limit") {
                limit = parse_i64(&args[j + 1])
                    .and_then(|l| u64::try_from(l).ok())
                    .ok_or_else(|| Reply::err("LIMIT can't be negative"))?;
                j += 2;
            } else {
                return Err(Reply::syntax());
            }
        }
        Ok(limit)
    })();
    Ok(Cmd::ZInterCard { keys, limit })
}

/// ZDIFFSTORE destination numkeys key [key ...]: nothing may follow the
/// keys.
pub(super) fn diffstore(args: &[Bytes]) -> Result<Cmd, Reply> {
    let (keys, from) = counted_keys(args, 2, "zdiffstore")?;
    Ok(Cmd::ZDiffStore {
        dest: args[1].clone(),
        keys,
        extra: if from < args.len() {
            Err(Reply::syntax())
        } else {
            Ok(())
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::command::test_parse::{e, p};
    use super::*;

    /// The deferred refusal of a command's options.
    fn deferred(s: &str) -> String {
        let r = match p(s).unwrap() {
            Cmd::ZAlgebra { opts, .. } => opts.err(),
            Cmd::ZInterCard { limit, .. } => limit.err(),
            Cmd::ZDiffStore { extra, .. } => extra.err(),
            other => panic!("{s}: {other:?}"),
        };
        match r {
            Some(Reply::Error(m)) => String::from_utf8(m).unwrap(),
            other => panic!("{s}: expected a deferred error, got {other:?}"),
        }
    }

    #[test]
    fn lex_ranges_and_their_errors() {
        assert_eq!(
            e("zlexcount k a [b"),
            "ERR min or max not valid string range item"
        );
        assert_eq!(
            e("zremrangebylex k [a +b"),
            "ERR min or max not valid string range item"
        );
        assert_eq!(
            e("zrangebylex k - + withscores"),
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
        );
        assert_eq!(e("zrangebylex k - + rev"), "ERR syntax error");
        assert_eq!(
            e("zrangebylex k - + limit 0 x"),
            "ERR value is not an integer or out of range"
        );
        match p("zrevrangebylex k [z (a limit 1 2").unwrap() {
            Cmd::ZRange {
                by:
                    super::super::command::RangeBy::Lex {
                        range,
                        offset,
                        count,
                    },
                rev: true,
                withscores: false,
                ..
            } => {
                assert_eq!(range, LexRange::parse(b"(a", b"[z").unwrap());
                assert_eq!((offset, count), (1, 2));
            }
            other => panic!("{other:?}"),
        }
        // LIMIT with a count of -1 is no limit, allowed by rank too.
        assert!(p("zrange k 0 1 limit 3 -1").is_ok());
    }

    #[test]
    fn algebra_counts_keys_and_defers_its_options() {
        assert_eq!(
            e("zunion 0 a"),
            "ERR at least 1 input key is needed for 'zunion' command"
        );
        assert_eq!(
            e("zintercard -1 a"),
            "ERR at least 1 input key is needed for 'zintercard' command"
        );
        assert_eq!(
            e("zinter x a"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(e("zdiff 3 a b"), "ERR syntax error");
        assert_eq!(e("zdiffstore d 2 a"), "ERR syntax error");
        assert_eq!(deferred("zdiff 1 a weights 2"), "ERR syntax error");
        assert_eq!(deferred("zdiff 1 a aggregate min"), "ERR syntax error");
        assert_eq!(deferred("zunion 2 a b weights 1"), "ERR syntax error");
        assert_eq!(
            deferred("zinter 1 a weights x"),
            "ERR weight value is not a float"
        );
        assert_eq!(deferred("zunion 1 a aggregate avg"), "ERR syntax error");
        assert_eq!(
            deferred("zintercard 1 a limit -1"),
            "ERR LIMIT can't be negative"
        );
        assert_eq!(
            deferred("zintercard 1 a limit x"),
            "ERR LIMIT can't be negative"
        );
        assert_eq!(deferred("zintercard 1 a withscores"), "ERR syntax error");
        assert_eq!(deferred("zdiffstore d 1 a withscores"), "ERR syntax error");
        match p("zunion 2 a b WEIGHTS 2 -1 aggregate MAX withscores").unwrap() {
            Cmd::ZAlgebra {
                keys,
                op: SetOp::Union,
                opts: Ok(o),
            } => {
                assert_eq!(keys.len(), 2);
                assert_eq!(o.weights, vec![2.0, -1.0]);
                assert!(o.withscores && o.agg == Aggregate::Max);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            p("zintercard 2 a b limit 5").unwrap(),
            Cmd::ZInterCard { limit: Ok(5), .. }
        ));
        match p("zrangestore d s (1 5 byscore rev limit 0 2").unwrap() {
            Cmd::ZRangeStore { dest, src, rev, .. } => {
                assert_eq!((&dest[..], &src[..], rev), (&b"d"[..], &b"s"[..], true));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(e("zrangestore d s 0 -1 withscores"), "ERR syntax error");
    }

    /// Transactions and key scopes see every key of the movable-key forms,
    /// a destination included.
    #[test]
    fn movable_keys_of_the_algebra() {
        use super::super::command::lookup;
        let args = |s: &str| -> Vec<Bytes> {
            s.split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let keys = |s: &str| -> Vec<Vec<u8>> {
            let a = args(s);
            lookup(&a)
                .unwrap()
                .key_args(&a)
                .map(<[u8]>::to_vec)
                .collect()
        };
        assert_eq!(
            keys("zunion 2 a b withscores"),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            keys("zdiffstore d 2 a b"),
            vec![b"d".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            keys("zrangestore d s 0 1"),
            vec![b"d".to_vec(), b"s".to_vec()]
        );
        let a = args("zdiffstore d 1 a");
        let w = lookup(&a).unwrap().writes_of(&a);
        assert!(w.may_change(b"d") && !w.may_change(b"x"));
        let a = args("zinter 2 a b");
        assert!(!lookup(&a).unwrap().writes_of(&a).changes_some());
    }
}
