//! The crate's single error type.
//!
//! Every failure is a decoding failure: encoding cannot fail. Offsets are byte
//! positions counted from the start of the buffer handed to the public
//! decoding function, so a caller can point at the bad byte in a hex dump.

/// Why a key or row could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A type tag that this format never writes (bytes as found in the input,
    /// so for a DESC column this is the inverted tag).
    #[error("unknown type tag {tag:#04x} at offset {offset}")]
    UnknownTag { tag: u8, offset: usize },

    /// The input ended inside a value; `offset` is where the incomplete part starts.
    #[error("input ends inside a {what} value at offset {offset}")]
    Truncated { what: &'static str, offset: usize },

    /// A 0x00 inside an escaped TEXT/BYTES value was followed by something
    /// other than the escape (0xFF) or terminator (0x01) byte.
    #[error("invalid escape byte {byte:#04x} at offset {offset}")]
    BadEscape { byte: u8, offset: usize },

    /// A TEXT value whose bytes are not UTF-8; `offset` is the first bad byte.
    #[error("TEXT value is not valid UTF-8 at offset {offset}")]
    InvalidUtf8 { offset: usize },

    /// A BOOLEAN payload other than the two canonical bytes.
    #[error("invalid BOOLEAN byte {byte:#04x} at offset {offset}")]
    InvalidBoolean { byte: u8, offset: usize },

    /// A FLOAT key payload that the encoder never produces (-0.0 or a NaN
    /// other than the canonical one); accepting it would let two different
    /// keys decode to values that compare equal.
    #[error("non-canonical FLOAT encoding at offset {offset}")]
    NonCanonicalFloat { offset: usize },

    /// Bytes remain after the last expected value.
    #[error("{count} unexpected trailing bytes at offset {offset}")]
    TrailingBytes { offset: usize, count: usize },

    /// A row varint that is longer than its type allows, has bits beyond its
    /// width, or carries redundant trailing zero groups.
    #[error("invalid varint at offset {offset}")]
    InvalidVarint { offset: usize },

    /// A row length prefix pointing past the end of the input.
    #[error("length {len} at offset {offset} exceeds the {remaining} bytes left")]
    LengthOutOfRange {
        len: u64,
        offset: usize,
        remaining: usize,
    },
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, CodecError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_offsets_and_bytes() {
        let err = CodecError::UnknownTag {
            tag: 0x02,
            offset: 7,
        };
        assert_eq!(err.to_string(), "unknown type tag 0x02 at offset 7");
        let err = CodecError::LengthOutOfRange {
            len: 9,
            offset: 3,
            remaining: 2,
        };
        assert_eq!(
            err.to_string(),
            "length 9 at offset 3 exceeds the 2 bytes left"
        );
    }
}
