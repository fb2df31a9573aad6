//! Scores: validation and the order-preserving 64-bit encoding the tree
//! sorts by.

/// Maps a non-NaN double to a `u64` whose unsigned order is the double's
/// numeric order. `-0.0` and `0.0` encode alike, as they compare equal in
/// Redis too.
#[inline]
pub fn encode(score: f64) -> u64 {
    debug_assert!(!score.is_nan());
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`encode`].
#[inline]
pub fn decode(key: u64) -> f64 {
    if key >> 63 == 1 {
        f64::from_bits(key & !(1 << 63))
    } else {
        f64::from_bits(!key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn special_values_order() {
        let xs = [
            f64::NEG_INFINITY,
            f64::MIN,
            -1.5,
            -f64::MIN_POSITIVE,
            0.0,
            5e-324,
            1.0,
            f64::MAX,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(encode(w[0]) < encode(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(encode(-0.0), encode(0.0));
        for x in xs {
            assert_eq!(decode(encode(x)), x);
        }
    }

    proptest! {
        #[test]
        fn order_preserving(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            prop_assert_eq!(encode(a).cmp(&encode(b)), a.partial_cmp(&b).unwrap());
            if a != 0.0 { prop_assert_eq!(decode(encode(a)).to_bits(), a.to_bits()); }
        }
    }
}
