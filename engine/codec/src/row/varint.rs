//! LEB128-style varints and zigzag mapping for the row format.
//!
//! Seven bits per byte, least significant group first, high bit set on every
//! byte but the last. Decoding accepts only the minimal encoding of a value
//! that fits the requested width, so each value has exactly one byte form.

use crate::error::{CodecError, Result};

pub(super) fn write(out: &mut Vec<u8>, mut value: u128) {
    while value >= 0x80 {
        out.push(low_group(value) | 0x80);
        value >>= 7;
    }
    out.push(low_group(value));
}

fn low_group(value: u128) -> u8 {
    // The mask makes the conversion lossless, so the fallback never happens.
    u8::try_from(value & 0x7F).unwrap_or(0)
}

/// Maps signed to unsigned so that small magnitudes of either sign stay short.
pub(super) fn zigzag(value: i128) -> u128 {
    ((value << 1) ^ (value >> 127)).cast_unsigned()
}

pub(super) fn unzigzag(value: u128) -> i128 {
    (value >> 1).cast_signed() ^ (value & 1).cast_signed().wrapping_neg()
}

/// Reads a varint of at most `bits` bits starting at `*pos`, advancing `*pos`.
pub(super) fn read(bytes: &[u8], pos: &mut usize, bits: u32, what: &'static str) -> Result<u128> {
    let start = *pos;
    let invalid = CodecError::InvalidVarint { offset: start };
    let mut value: u128 = 0;
    let mut shift: u32 = 0;
    loop {
        let byte = *bytes.get(*pos).ok_or(CodecError::Truncated {
            what,
            offset: start,
        })?;
        let group = u128::from(byte & 0x7F);
        let room = bits.checked_sub(shift).ok_or(invalid.clone())?;
        if room == 0 || (room < 7 && group >> room != 0) {
            return Err(invalid);
        }
        value |= group << shift;
        *pos += 1;
        if byte & 0x80 == 0 {
            // A zero final group after the first byte adds nothing: not minimal.
            if byte == 0 && shift > 0 {
                return Err(invalid);
            }
            return Ok(value);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: u128) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out, value);
        out
    }

    #[test]
    fn known_encodings() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(127), [0x7F]);
        assert_eq!(encoded(128), [0x80, 0x01]);
        assert_eq!(encoded(300), [0xAC, 0x02]);
        assert_eq!(
            encoded(u128::from(u32::MAX)),
            [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]
        );
        assert_eq!(encoded(u128::MAX).len(), 19);
    }

    #[test]
    fn zigzag_interleaves_signs() {
        let pairs = [(0, 0), (-1, 1), (1, 2), (-2, 3), (i128::MAX, u128::MAX - 1)];
        for (signed, unsigned) in pairs {
            assert_eq!(zigzag(signed), unsigned);
            assert_eq!(unzigzag(unsigned), signed);
        }
        assert_eq!(unzigzag(zigzag(i128::MIN)), i128::MIN);
    }

    #[test]
    fn reads_back_at_every_width() -> Result<()> {
        for (value, bits) in [(0, 32), (u128::from(u32::MAX), 32), (u128::MAX, 128)] {
            let bytes = encoded(value);
            let mut pos = 0;
            assert_eq!(read(&bytes, &mut pos, bits, "x")?, value);
            assert_eq!(pos, bytes.len());
        }
        Ok(())
    }

    #[test]
    fn rejects_overlong_overflowing_and_truncated() {
        let invalid = Err(CodecError::InvalidVarint { offset: 1 });
        let cases: [(&[u8], u32); 5] = [
            (&[9, 0x80, 0x00], 32),
            (&[9, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F], 32),
            (&[9, 0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0x00], 32),
            (
                &[
                    9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02,
                ],
                64,
            ),
            (&[9, 0x81, 0x80, 0x00], 64),
        ];
        for (bytes, bits) in cases {
            assert_eq!(read(bytes, &mut 1, bits, "x"), invalid, "{bytes:02x?}");
        }
        assert_eq!(
            read(&[9, 0x80], &mut 1, 64, "id"),
            Err(CodecError::Truncated {
                what: "id",
                offset: 1
            })
        );
    }
}
