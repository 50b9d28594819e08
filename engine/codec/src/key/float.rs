//! The order-preserving mapping of DOUBLE values onto 64-bit integers.

use super::tags::SIGN_64;
use crate::error::{CodecError, Result};

/// The single NaN that keys store; pinned by value rather than taken from
/// `f64::NAN` so the format cannot drift with the standard library.
const CANONICAL_NAN: u64 = 0x7FF8_0000_0000_0000;

/// Maps a float to an unsigned integer with the same order as `key_cmp`.
///
/// Flipping the sign bit lifts positives above all negatives; inverting
/// negatives entirely also reverses their magnitude order. Normalising first
/// makes -0.0/0.0 and all NaNs collide, as `key_cmp` says they are equal.
pub(super) fn float_to_key(value: f64) -> u64 {
    let bits = if value.is_nan() {
        CANONICAL_NAN
    } else if value == 0.0 {
        0
    } else {
        value.to_bits()
    };
    if bits & SIGN_64 != 0 {
        !bits
    } else {
        bits ^ SIGN_64
    }
}

pub(super) fn float_from_key(key: u64, offset: usize) -> Result<f64> {
    let bits = if key & SIGN_64 != 0 {
        key ^ SIGN_64
    } else {
        !key
    };
    let value = f64::from_bits(bits);
    // Only the encoder's own output is accepted, so decode/encode is the identity on bytes.
    if float_to_key(value) != key {
        return Err(CodecError::NonCanonicalFloat { offset });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_monotonic_over_landmarks() {
        let ascending = [
            f64::NEG_INFINITY,
            f64::MIN,
            -1.0,
            -f64::MIN_POSITIVE,
            -f64::from_bits(1),
            0.0,
            f64::from_bits(1),
            f64::MIN_POSITIVE,
            1.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        let keys: Vec<u64> = ascending.iter().map(|&f| float_to_key(f)).collect();
        assert!(keys.windows(2).all(|w| w.first() < w.last()), "{keys:x?}");
    }

    #[test]
    fn only_canonical_keys_decode() {
        assert_eq!(float_from_key(float_to_key(-2.5), 0), Ok(-2.5));
        assert_eq!(float_to_key(-0.0), float_to_key(0.0));
        assert_eq!(
            float_from_key(!(1_u64 << 63), 4),
            Err(CodecError::NonCanonicalFloat { offset: 4 })
        );
    }
}
