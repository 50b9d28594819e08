//! A bounds-checked cursor over key bytes.
//!
//! DESC columns are stored bit-inverted, so the cursor XORs every byte with a
//! per-column mask: the decoder then only ever sees ASC bytes. Errors report
//! the raw input byte, since that is what a person inspecting the key sees.

use crate::error::{CodecError, Result};

/// Escape lead byte inside TEXT/BYTES payloads (ASC form).
pub(super) const ESCAPE: u8 = 0x00;
/// Follows [`ESCAPE`] to stand for a literal 0x00.
pub(super) const ESCAPED_ZERO: u8 = 0xFF;
/// Follows [`ESCAPE`] to end the value.
pub(super) const TERMINATOR: u8 = 0x01;

pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// 0x00 for ASC, 0xFF for DESC.
    mask: u8,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            mask: 0,
        }
    }

    pub(super) fn set_mask(&mut self, mask: u8) {
        self.mask = mask;
    }

    pub(super) fn mask(&self) -> u8 {
        self.mask
    }

    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes not yet consumed.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    /// Next byte in ASC form.
    pub(super) fn byte(&mut self, what: &'static str) -> Result<u8> {
        let byte = *self.bytes.get(self.pos).ok_or(CodecError::Truncated {
            what,
            offset: self.pos,
        })?;
        self.pos += 1;
        Ok(byte ^ self.mask)
    }

    /// Next `N` bytes in ASC form.
    pub(super) fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let truncated = CodecError::Truncated {
            what,
            offset: self.pos,
        };
        let end = self.pos.checked_add(N).ok_or(truncated.clone())?;
        let slice = self.bytes.get(self.pos..end).ok_or(truncated.clone())?;
        let mut out: [u8; N] = slice.try_into().map_err(|_| truncated)?;
        for b in &mut out {
            *b ^= self.mask;
        }
        self.pos = end;
        Ok(out)
    }

    /// Reads an escaped, terminated payload and returns it unescaped.
    pub(super) fn escaped(&mut self, what: &'static str) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let byte = self.byte(what)?;
            if byte != ESCAPE {
                out.push(byte);
                continue;
            }
            let offset = self.pos;
            match self.byte(what)? {
                ESCAPED_ZERO => out.push(0),
                TERMINATOR => return Ok(out),
                other => {
                    return Err(CodecError::BadEscape {
                        byte: other ^ self.mask,
                        offset,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_applies_to_every_read() -> Result<()> {
        let mut r = Reader::new(&[0xFE, 0x7F, 0xFF, 0x9E, 0xFF, 0xFE]);
        r.set_mask(0xFF);
        assert_eq!(r.byte("x")?, 0x01);
        assert_eq!(r.array::<2>("x")?, [0x80, 0x00]);
        assert_eq!(r.escaped("x")?, vec![0x61]);
        assert_eq!(r.pos(), 6);
        assert!(r.rest().is_empty());
        Ok(())
    }

    #[test]
    fn truncation_reports_where_the_field_starts() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.byte("x"), Ok(1));
        assert_eq!(
            r.array::<4>("INT"),
            Err(CodecError::Truncated {
                what: "INT",
                offset: 1
            })
        );
        // A failed read consumes nothing.
        assert_eq!(r.rest(), &[2, 3]);
    }

    #[test]
    fn bad_escape_reports_raw_byte() {
        let mut r = Reader::new(&[0x61, 0xFF, 0xFD]);
        r.set_mask(0xFF);
        assert_eq!(
            r.escaped("TEXT"),
            Err(CodecError::BadEscape {
                byte: 0xFD,
                offset: 2
            })
        );
    }
}
