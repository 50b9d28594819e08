//! Order-preserving ("memcomparable") encoding of key columns.
//!
//! Comparing two encoded keys as plain byte strings gives the same answer as
//! comparing their columns one by one with [`Datum::key_cmp`], honouring each
//! column's [`SortOrder`]. The byte layout is specified in the crate docs.

mod escape;
mod float;
mod reader;
mod tags;

use crate::datum::{Datum, SortOrder};
use crate::error::{CodecError, Result};
use escape::{apply_order, write_escaped, write_terminator};
use float::{float_from_key, float_to_key};
use reader::Reader;
use tags::{
    SIGN_32, SIGN_64, SIGN_128, TAG_BOOLEAN, TAG_BYTES, TAG_DATE, TAG_DECIMAL, TAG_FLOAT, TAG_INT,
    TAG_NULL, TAG_TEXT, TAG_TIMESTAMP, TAG_UUID,
};

pub use escape::{encode_text_prefix, prefix_successor};

/// Appends the memcomparable encoding of one column value.
pub fn encode_datum(out: &mut Vec<u8>, datum: &Datum, order: SortOrder) {
    let start = out.len();
    encode_asc(out, datum);
    apply_order(out, start, order);
}

/// Encodes a composite key, each column with its own order.
pub fn encode_key(out: &mut Vec<u8>, columns: &[(&Datum, SortOrder)]) {
    for (datum, order) in columns {
        encode_datum(out, datum, *order);
    }
}

/// Decodes one column value from the front of `input` and advances `input`
/// past it; on error `input` is left untouched. Error offsets are relative to
/// `input` as passed in.
pub fn decode_datum(input: &mut &[u8], order: SortOrder) -> Result<Datum> {
    let mut reader = Reader::new(input);
    reader.set_mask(mask(order));
    let datum = decode_value(&mut reader)?;
    *input = reader.rest();
    Ok(datum)
}

/// Decodes `orders.len()` values from the start of `input`. Leftover bytes
/// are an error only when `exact`; otherwise they are ignored, which lets a
/// caller read just the leading columns of a longer key.
pub fn decode_key(input: &[u8], orders: &[SortOrder], exact: bool) -> Result<Vec<Datum>> {
    let mut reader = Reader::new(input);
    let mut values = Vec::with_capacity(orders.len());
    for &order in orders {
        reader.set_mask(mask(order));
        values.push(decode_value(&mut reader)?);
    }
    let rest = reader.rest();
    if exact && !rest.is_empty() {
        return Err(CodecError::TrailingBytes {
            offset: reader.pos(),
            count: rest.len(),
        });
    }
    Ok(values)
}

fn mask(order: SortOrder) -> u8 {
    match order {
        SortOrder::Asc => 0x00,
        SortOrder::Desc => 0xFF,
    }
}

fn encode_asc(out: &mut Vec<u8>, datum: &Datum) {
    match datum {
        Datum::Null => out.push(TAG_NULL),
        Datum::Boolean(b) => out.extend_from_slice(&[TAG_BOOLEAN, u8::from(*b)]),
        Datum::Int(v) => {
            out.push(TAG_INT);
            out.extend_from_slice(&(v.cast_unsigned() ^ SIGN_64).to_be_bytes());
        }
        Datum::Float(v) => {
            out.push(TAG_FLOAT);
            out.extend_from_slice(&float_to_key(*v).to_be_bytes());
        }
        Datum::Decimal(v) => {
            out.push(TAG_DECIMAL);
            out.extend_from_slice(&(v.cast_unsigned() ^ SIGN_128).to_be_bytes());
        }
        Datum::Text(s) => {
            out.push(TAG_TEXT);
            write_escaped(out, s.as_bytes());
            write_terminator(out);
        }
        Datum::Bytes(b) => {
            out.push(TAG_BYTES);
            write_escaped(out, b);
            write_terminator(out);
        }
        Datum::Date(v) => {
            out.push(TAG_DATE);
            out.extend_from_slice(&(v.cast_unsigned() ^ SIGN_32).to_be_bytes());
        }
        Datum::Timestamp(v) => {
            out.push(TAG_TIMESTAMP);
            out.extend_from_slice(&(v.cast_unsigned() ^ SIGN_64).to_be_bytes());
        }
        Datum::Uuid(bytes) => {
            out.push(TAG_UUID);
            out.extend_from_slice(bytes);
        }
    }
}

fn decode_value(reader: &mut Reader<'_>) -> Result<Datum> {
    let tag_offset = reader.pos();
    let tag = reader.byte("key")?;
    let offset = reader.pos();
    let datum = match tag {
        TAG_NULL => Datum::Null,
        TAG_BOOLEAN => match reader.byte("BOOLEAN")? {
            0 => Datum::Boolean(false),
            1 => Datum::Boolean(true),
            other => {
                return Err(CodecError::InvalidBoolean {
                    byte: other ^ reader.mask(),
                    offset,
                });
            }
        },
        TAG_INT => Datum::Int(signed_64(reader.array("INTEGER")?)),
        TAG_FLOAT => {
            let key = u64::from_be_bytes(reader.array("DOUBLE")?);
            Datum::Float(float_from_key(key, offset)?)
        }
        TAG_DECIMAL => {
            let raw = u128::from_be_bytes(reader.array("DECIMAL")?);
            Datum::Decimal((raw ^ SIGN_128).cast_signed())
        }
        TAG_TEXT => {
            let bytes = reader.escaped("TEXT")?;
            let text = String::from_utf8(bytes).map_err(|err| {
                let valid = err.utf8_error().valid_up_to();
                let bytes = err.as_bytes();
                // Each 0x00 before the bad byte took two bytes on the wire.
                let zeros = bytes.iter().take(valid).filter(|&&b| b == 0).count();
                CodecError::InvalidUtf8 {
                    offset: offset + valid + zeros,
                }
            })?;
            Datum::Text(text)
        }
        TAG_BYTES => Datum::Bytes(reader.escaped("BYTES")?),
        TAG_DATE => {
            let raw = u32::from_be_bytes(reader.array("DATE")?);
            Datum::Date((raw ^ SIGN_32).cast_signed())
        }
        TAG_TIMESTAMP => Datum::Timestamp(signed_64(reader.array("TIMESTAMP")?)),
        TAG_UUID => Datum::Uuid(reader.array("UUID")?),
        _ => {
            return Err(CodecError::UnknownTag {
                tag: tag ^ reader.mask(),
                offset: tag_offset,
            });
        }
    };
    Ok(datum)
}

fn signed_64(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ SIGN_64).cast_signed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use SortOrder::{Asc, Desc};

    fn encoded(datum: &Datum, order: SortOrder) -> Vec<u8> {
        let mut out = Vec::new();
        encode_datum(&mut out, datum, order);
        out
    }

    #[rustfmt::skip]
    fn golden() -> Vec<(Datum, Vec<u8>, Vec<u8>)> {
        let ff = 0xFF;
        vec![
            (Datum::Null, vec![0x01], vec![0xFE]),
            (Datum::Boolean(false), vec![0x10, 0x00], vec![0xEF, 0xFF]),
            (Datum::Boolean(true), vec![0x10, 0x01], vec![0xEF, 0xFE]),
            (Datum::Int(1), vec![0x20, 0x80, 0, 0, 0, 0, 0, 0, 1], vec![0xDF, 0x7F, ff, ff, ff, ff, ff, ff, 0xFE]),
            (Datum::Int(-1), vec![0x20, 0x7F, ff, ff, ff, ff, ff, ff, ff], vec![0xDF, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            (Datum::Int(i64::MIN), vec![0x20, 0, 0, 0, 0, 0, 0, 0, 0], vec![0xDF, ff, ff, ff, ff, ff, ff, ff, ff]),
            (Datum::Float(1.5), vec![0x30, 0xBF, 0xF8, 0, 0, 0, 0, 0, 0], vec![0xCF, 0x40, 0x07, ff, ff, ff, ff, ff, ff]),
            (Datum::Float(-1.5), vec![0x30, 0x40, 0x07, ff, ff, ff, ff, ff, ff], vec![0xCF, 0xBF, 0xF8, 0, 0, 0, 0, 0, 0]),
            (Datum::Float(0.0), vec![0x30, 0x80, 0, 0, 0, 0, 0, 0, 0], vec![0xCF, 0x7F, ff, ff, ff, ff, ff, ff, ff]),
            (Datum::Float(f64::INFINITY), vec![0x30, 0xFF, 0xF0, 0, 0, 0, 0, 0, 0], vec![0xCF, 0x00, 0x0F, ff, ff, ff, ff, ff, ff]),
            (Datum::Decimal(-2), vec![0x38, 0x7F, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, 0xFE],
                vec![0xC7, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01]),
            (Datum::Text(String::new()), vec![0x40, 0x00, 0x01], vec![0xBF, 0xFF, 0xFE]),
            (Datum::Text("a\0b".into()), vec![0x40, 0x61, 0x00, 0xFF, 0x62, 0x00, 0x01], vec![0xBF, 0x9E, 0xFF, 0x00, 0x9D, 0xFF, 0xFE]),
            (Datum::Text("é".into()), vec![0x40, 0xC3, 0xA9, 0x00, 0x01], vec![0xBF, 0x3C, 0x56, 0xFF, 0xFE]),
            (Datum::Bytes(vec![0x00, 0xFF]), vec![0x50, 0x00, 0xFF, 0xFF, 0x00, 0x01], vec![0xAF, 0xFF, 0x00, 0x00, 0xFF, 0xFE]),
            (Datum::Date(0), vec![0x60, 0x80, 0, 0, 0], vec![0x9F, 0x7F, ff, ff, ff]),
            (Datum::Date(-1), vec![0x60, 0x7F, ff, ff, ff], vec![0x9F, 0x80, 0, 0, 0]),
            (Datum::Timestamp(1), vec![0x70, 0x80, 0, 0, 0, 0, 0, 0, 1], vec![0x8F, 0x7F, ff, ff, ff, ff, ff, ff, 0xFE]),
            (Datum::Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF]), vec![0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF], vec![0x7F, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, ff, 0]),
        ]
    }

    #[test]
    fn golden_bytes_pin_the_format() -> Result<()> {
        for (datum, asc, desc) in golden() {
            assert_eq!(encoded(&datum, Asc), asc, "{datum:?} ASC");
            assert_eq!(encoded(&datum, Desc), desc, "{datum:?} DESC");
            assert_eq!(decode_datum(&mut asc.as_slice(), Asc)?, datum);
            assert_eq!(decode_datum(&mut desc.as_slice(), Desc)?, datum);
        }
        Ok(())
    }

    #[test]
    fn float_specials_normalise() {
        assert_eq!(
            encoded(&Datum::Float(-0.0), Asc),
            encoded(&Datum::Float(0.0), Asc)
        );
        let nan = [0x30, 0xFF, 0xF8, 0, 0, 0, 0, 0, 0];
        assert_eq!(encoded(&Datum::Float(f64::NAN), Asc), nan);
        assert_eq!(encoded(&Datum::Float(-f64::NAN), Asc), nan);
        assert_eq!(
            encoded(&Datum::Float(f64::from_bits(0x7FF0_0000_0000_0001)), Asc),
            nan
        );
    }

    #[test]
    fn composite_key() -> Result<()> {
        let (id, name, none) = (Datum::Int(1), Datum::Text("x".into()), Datum::Null);
        let mut key = Vec::new();
        encode_key(&mut key, &[(&id, Asc), (&name, Desc), (&none, Asc)]);
        assert_eq!(
            key,
            [
                0x20, 0x80, 0, 0, 0, 0, 0, 0, 1, 0xBF, 0x87, 0xFF, 0xFE, 0x01
            ]
        );
        assert_eq!(
            decode_key(&key, &[Asc, Desc, Asc], true)?,
            [id.clone(), name, none]
        );
        assert_eq!(decode_key(&key, &[Asc], false)?, [id]);
        assert_eq!(
            decode_key(&key, &[Asc], true),
            Err(CodecError::TrailingBytes {
                offset: 9,
                count: 5
            })
        );
        Ok(())
    }

    #[test]
    fn decode_datum_advances_only_on_success() -> Result<()> {
        let bytes = [0x01, 0x10, 0x01, 0x02];
        let mut input = &bytes[..];
        assert_eq!(decode_datum(&mut input, Asc)?, Datum::Null);
        assert_eq!(decode_datum(&mut input, Asc)?, Datum::Boolean(true));
        assert_eq!(input, [0x02]);
        let err = decode_datum(&mut input, Asc);
        assert_eq!(
            err,
            Err(CodecError::UnknownTag {
                tag: 0x02,
                offset: 0
            })
        );
        assert_eq!(input, [0x02]);
        Ok(())
    }

    #[test]
    fn malformed_input_is_rejected() {
        let truncated = |what, offset| CodecError::Truncated { what, offset };
        let cases: Vec<(&[u8], SortOrder, CodecError)> = vec![
            (&[], Asc, truncated("key", 0)),
            (
                &[0x00],
                Asc,
                CodecError::UnknownTag {
                    tag: 0x00,
                    offset: 0,
                },
            ),
            (
                &[0xFF],
                Asc,
                CodecError::UnknownTag {
                    tag: 0xFF,
                    offset: 0,
                },
            ),
            (
                &[0x02],
                Desc,
                CodecError::UnknownTag {
                    tag: 0x02,
                    offset: 0,
                },
            ),
            (&[0x20, 0x80], Asc, truncated("INTEGER", 1)),
            (&[0x38, 0x80, 0], Asc, truncated("DECIMAL", 1)),
            (&[0x40, 0x61], Asc, truncated("TEXT", 2)),
            (&[0x50, 0x00], Asc, truncated("BYTES", 2)),
            (
                &[0x10, 0x02],
                Asc,
                CodecError::InvalidBoolean {
                    byte: 0x02,
                    offset: 1,
                },
            ),
            (
                &[0xEF, 0xFD],
                Desc,
                CodecError::InvalidBoolean {
                    byte: 0xFD,
                    offset: 1,
                },
            ),
            (
                &[0x40, 0x61, 0x00, 0x02],
                Asc,
                CodecError::BadEscape {
                    byte: 0x02,
                    offset: 3,
                },
            ),
            (
                &[0x40, 0x00, 0xFF, 0xC3, 0x00, 0x01],
                Asc,
                CodecError::InvalidUtf8 { offset: 3 },
            ),
            (
                &[0x30, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
                Asc,
                CodecError::NonCanonicalFloat { offset: 1 },
            ),
            (
                &[0x30, 0xFF, 0xF8, 0, 0, 0, 0, 0, 1],
                Asc,
                CodecError::NonCanonicalFloat { offset: 1 },
            ),
        ];
        for (bytes, order, expected) in cases {
            assert_eq!(
                decode_datum(&mut &bytes[..], order),
                Err(expected),
                "{bytes:02x?}"
            );
        }
    }

    #[test]
    fn key_offsets_count_from_the_key_start() {
        let key = [0x01, 0xFE, 0x10, 0x05];
        assert_eq!(
            decode_key(&key, &[Asc, Desc, Asc], true),
            Err(CodecError::InvalidBoolean {
                byte: 0x05,
                offset: 3
            })
        );
    }
}
