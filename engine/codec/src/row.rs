//! Stored row values ("cells"): a schema version plus (column id, value) pairs.
//!
//! Rows are not order-preserving, so this format optimises for size. Only the
//! cells handed to [`encode_row`] are stored; a column id absent on decode
//! means NULL to the caller, which is what lets `ALTER TABLE ADD COLUMN` work
//! without rewriting existing rows.
//!
//! Layout, in order:
//!
//! * varint schema version (u32);
//! * varint cell count (u32);
//! * per cell: varint column id (u32), one type byte, then the payload.
//!
//! | type   | value     | payload                                          |
//! |--------|-----------|--------------------------------------------------|
//! | `0x00` | NULL      | none                                             |
//! | `0x01` | false     | none                                             |
//! | `0x02` | true      | none                                             |
//! | `0x03` | INTEGER   | zigzag varint (at most 64 bits)                  |
//! | `0x04` | DOUBLE    | 8 bytes, little-endian IEEE-754 bits, unmodified |
//! | `0x05` | DECIMAL   | zigzag varint (at most 128 bits)                 |
//! | `0x06` | TEXT      | varint byte length, then UTF-8 bytes             |
//! | `0x07` | BYTES     | varint byte length, then the bytes               |
//! | `0x08` | DATE      | zigzag varint (at most 32 bits)                  |
//! | `0x09` | TIMESTAMP | zigzag varint (at most 64 bits)                  |
//! | `0x0A` | UUID      | its 16 bytes                                     |
//!
//! Varints are described in the `varint` submodule. Unlike keys, doubles keep
//! their exact bits (-0.0 and NaN payloads survive), since rows must give
//! back exactly what was stored. Cells are written in the order given and
//! decoded in that order; nothing follows the last cell.

mod varint;

use crate::datum::Datum;
use crate::error::{CodecError, Result};

const TYPE_NULL: u8 = 0x00;
const TYPE_FALSE: u8 = 0x01;
const TYPE_TRUE: u8 = 0x02;
const TYPE_INT: u8 = 0x03;
const TYPE_FLOAT: u8 = 0x04;
const TYPE_DECIMAL: u8 = 0x05;
const TYPE_TEXT: u8 = 0x06;
const TYPE_BYTES: u8 = 0x07;
const TYPE_DATE: u8 = 0x08;
const TYPE_TIMESTAMP: u8 = 0x09;
const TYPE_UUID: u8 = 0x0A;

/// A row as read back from storage.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRow {
    pub schema_version: u32,
    pub cells: Vec<(u32, Datum)>,
}

/// Appends the stored form of a row.
pub fn encode_row(out: &mut Vec<u8>, schema_version: u32, cells: &[(u32, &Datum)]) {
    varint::write(out, u128::from(schema_version));
    // A slice longer than u32::MAX cells cannot come from a real table; saturating
    // keeps encoding infallible, and decoding such a row would then report trailing bytes.
    let count = u32::try_from(cells.len()).unwrap_or(u32::MAX);
    varint::write(out, u128::from(count));
    for (column, datum) in cells {
        varint::write(out, u128::from(*column));
        encode_value(out, datum);
    }
}

fn encode_value(out: &mut Vec<u8>, datum: &Datum) {
    match datum {
        Datum::Null => out.push(TYPE_NULL),
        Datum::Boolean(false) => out.push(TYPE_FALSE),
        Datum::Boolean(true) => out.push(TYPE_TRUE),
        Datum::Int(v) => write_signed(out, TYPE_INT, i128::from(*v)),
        Datum::Float(v) => {
            out.push(TYPE_FLOAT);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Datum::Decimal(v) => write_signed(out, TYPE_DECIMAL, *v),
        Datum::Text(s) => write_bytes(out, TYPE_TEXT, s.as_bytes()),
        Datum::Bytes(b) => write_bytes(out, TYPE_BYTES, b),
        Datum::Date(v) => write_signed(out, TYPE_DATE, i128::from(*v)),
        Datum::Timestamp(v) => write_signed(out, TYPE_TIMESTAMP, i128::from(*v)),
        Datum::Uuid(bytes) => {
            out.push(TYPE_UUID);
            out.extend_from_slice(bytes);
        }
    }
}

fn write_signed(out: &mut Vec<u8>, type_byte: u8, value: i128) {
    out.push(type_byte);
    varint::write(out, varint::zigzag(value));
}

fn write_bytes(out: &mut Vec<u8>, type_byte: u8, bytes: &[u8]) {
    out.push(type_byte);
    // usize always fits in u128.
    varint::write(out, u128::try_from(bytes.len()).unwrap_or(u128::MAX));
    out.extend_from_slice(bytes);
}

/// Decodes a whole row; every byte must belong to it.
pub fn decode_row(bytes: &[u8]) -> Result<DecodedRow> {
    let (schema_version, cells) = cells(bytes)?;
    // Collecting grows with the cells actually read, never with the untrusted count.
    let cells = cells
        .map(|cell| cell.map(|(column, value)| (column, value.to_datum())))
        .collect::<Result<Vec<_>>>()?;
    Ok(DecodedRow {
        schema_version,
        cells,
    })
}

#[derive(Debug)]
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn varint(&mut self, bits: u32, what: &'static str) -> Result<u128> {
        varint::read(self.bytes, &mut self.pos, bits, what)
    }

    fn unsigned_32(&mut self, what: &'static str) -> Result<u32> {
        let offset = self.pos;
        let value = self.varint(32, what)?;
        u32::try_from(value).map_err(|_| CodecError::InvalidVarint { offset })
    }

    fn signed(&mut self, bits: u32, what: &'static str) -> Result<i128> {
        Ok(varint::unzigzag(self.varint(bits, what)?))
    }

    /// Reads a length-prefixed byte string, returning it and where it starts.
    fn length_prefixed(&mut self, what: &'static str) -> Result<(&'a [u8], usize)> {
        let len_offset = self.pos;
        let len = self.varint(64, what)?;
        let start = self.pos;
        let out_of_range = CodecError::LengthOutOfRange {
            len: u64::try_from(len).unwrap_or(u64::MAX),
            offset: len_offset,
            remaining: self.remaining(),
        };
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .ok_or(out_of_range.clone())?;
        let slice = self.bytes.get(start..end).ok_or(out_of_range)?;
        self.pos = end;
        Ok((slice, start))
    }

    fn array_8(&mut self, what: &'static str) -> Result<[u8; 8]> {
        self.array(what)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let truncated = CodecError::Truncated {
            what,
            offset: self.pos,
        };
        let end = self.pos.checked_add(N).ok_or(truncated.clone())?;
        let slice = self.bytes.get(self.pos..end).ok_or(truncated.clone())?;
        let array = slice.try_into().map_err(|_| truncated)?;
        self.pos = end;
        Ok(array)
    }

    fn value_ref(&mut self) -> Result<CellValue<'a>> {
        let type_offset = self.pos;
        let type_byte = *self.bytes.get(type_offset).ok_or(CodecError::Truncated {
            what: "cell",
            offset: type_offset,
        })?;
        self.pos += 1;
        let payload = self.pos;
        // The width-checked varint read already guarantees these fit; the
        // error only keeps the conversion panic-free.
        let narrow = |_: std::num::TryFromIntError| CodecError::InvalidVarint { offset: payload };
        let value = match type_byte {
            TYPE_NULL => CellValue::Null,
            TYPE_FALSE => CellValue::Boolean(false),
            TYPE_TRUE => CellValue::Boolean(true),
            TYPE_INT => CellValue::Int(i64::try_from(self.signed(64, "INTEGER")?).map_err(narrow)?),
            TYPE_FLOAT => {
                CellValue::Float(f64::from_bits(u64::from_le_bytes(self.array_8("DOUBLE")?)))
            }
            TYPE_DECIMAL => CellValue::Decimal(self.signed(128, "DECIMAL")?),
            TYPE_TEXT => {
                let (bytes, start) = self.length_prefixed("TEXT")?;
                let text = std::str::from_utf8(bytes).map_err(|err| CodecError::InvalidUtf8 {
                    offset: start + err.valid_up_to(),
                })?;
                CellValue::Text(text)
            }
            TYPE_BYTES => CellValue::Bytes(self.length_prefixed("BYTES")?.0),
            TYPE_DATE => CellValue::Date(i32::try_from(self.signed(32, "DATE")?).map_err(narrow)?),
            TYPE_TIMESTAMP => {
                CellValue::Timestamp(i64::try_from(self.signed(64, "TIMESTAMP")?).map_err(narrow)?)
            }
            TYPE_UUID => CellValue::Uuid(self.array("UUID")?),
            other => {
                return Err(CodecError::UnknownTag {
                    tag: other,
                    offset: type_offset,
                });
            }
        };
        Ok(value)
    }
}

/// A cell's value borrowed from the stored bytes: what [`Cells`] yields, so a reader that
/// copies values elsewhere (into columnar arrays, say) allocates nothing per cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellValue<'a> {
    Null,
    Boolean(bool),
    Int(i64),
    Float(f64),
    Decimal(i128),
    Text(&'a str),
    Bytes(&'a [u8]),
    Date(i32),
    Timestamp(i64),
    Uuid([u8; 16]),
}

impl CellValue<'_> {
    /// The owned value.
    pub fn to_datum(self) -> Datum {
        match self {
            CellValue::Null => Datum::Null,
            CellValue::Boolean(v) => Datum::Boolean(v),
            CellValue::Int(v) => Datum::Int(v),
            CellValue::Float(v) => Datum::Float(v),
            CellValue::Decimal(v) => Datum::Decimal(v),
            CellValue::Text(v) => Datum::Text(v.to_owned()),
            CellValue::Bytes(v) => Datum::Bytes(v.to_vec()),
            CellValue::Date(v) => Datum::Date(v),
            CellValue::Timestamp(v) => Datum::Timestamp(v),
            CellValue::Uuid(v) => Datum::Uuid(v),
        }
    }
}

impl<'a> From<&'a Datum> for CellValue<'a> {
    fn from(datum: &'a Datum) -> Self {
        match datum {
            Datum::Null => CellValue::Null,
            Datum::Boolean(v) => CellValue::Boolean(*v),
            Datum::Int(v) => CellValue::Int(*v),
            Datum::Float(v) => CellValue::Float(*v),
            Datum::Decimal(v) => CellValue::Decimal(*v),
            Datum::Text(v) => CellValue::Text(v),
            Datum::Bytes(v) => CellValue::Bytes(v),
            Datum::Date(v) => CellValue::Date(*v),
            Datum::Timestamp(v) => CellValue::Timestamp(*v),
            Datum::Uuid(v) => CellValue::Uuid(*v),
        }
    }
}

/// The cells of a stored row, read one at a time without copying: `(column id, value)`.
///
/// Yields the same cells as [`decode_row`], and the same errors: after the last cell, bytes
/// left over are reported as [`CodecError::TrailingBytes`]. Stops after the first error.
#[derive(Debug)]
pub struct Cells<'a> {
    cursor: Cursor<'a>,
    left: u32,
    failed: bool,
}

/// Starts reading the row in `bytes`; returns its schema version and its cells.
pub fn cells(bytes: &[u8]) -> Result<(u32, Cells<'_>)> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let schema_version = cursor.unsigned_32("schema version")?;
    let left = cursor.unsigned_32("cell count")?;
    Ok((
        schema_version,
        Cells {
            cursor,
            left,
            failed: false,
        },
    ))
}

impl<'a> Iterator for Cells<'a> {
    type Item = Result<(u32, CellValue<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.cursor.remaining() == 0 {
                return None;
            }
            self.failed = true;
            return Some(Err(CodecError::TrailingBytes {
                offset: self.cursor.pos,
                count: self.cursor.remaining(),
            }));
        }
        self.left -= 1;
        let cell = self
            .cursor
            .unsigned_32("column id")
            .and_then(|column| Ok((column, self.cursor.value_ref()?)));
        self.failed = cell.is_err();
        Some(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(version: u32, cells: &[(u32, &Datum)]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_row(&mut out, version, cells);
        out
    }

    #[test]
    fn golden_row_bytes() -> Result<()> {
        let values = [
            Datum::Null,
            Datum::Boolean(true),
            Datum::Int(-3),
            Datum::Float(1.5),
            Datum::Decimal(64),
            Datum::Text("hé".into()),
            Datum::Bytes(vec![0, 0xFF]),
            Datum::Date(-1),
            Datum::Timestamp(1),
        ];
        let cells: Vec<(u32, &Datum)> = (1..).zip(values.iter()).collect();
        let bytes = encoded(300, &cells);
        #[rustfmt::skip]
        let expected = [
            0xAC, 0x02, 9,
            1, 0x00,
            2, 0x02,
            3, 0x03, 5,
            4, 0x04, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F,
            5, 0x05, 0x80, 0x01,
            6, 0x06, 3, b'h', 0xC3, 0xA9,
            7, 0x07, 2, 0x00, 0xFF,
            8, 0x08, 1,
            9, 0x09, 2,
        ];
        assert_eq!(bytes, expected);
        let row = decode_row(&bytes)?;
        assert_eq!(row.schema_version, 300);
        let expected_cells: Vec<(u32, Datum)> = (1..).zip(values).collect();
        assert_eq!(row.cells, expected_cells);
        Ok(())
    }

    #[test]
    fn empty_row_and_sparse_ids() -> Result<()> {
        assert_eq!(encoded(0, &[]), [0, 0]);
        let bytes = encoded(7, &[(42, &Datum::Int(1)), (3, &Datum::Null)]);
        let row = decode_row(&bytes)?;
        assert_eq!(row.cells, [(42, Datum::Int(1)), (3, Datum::Null)]);
        Ok(())
    }

    #[test]
    fn floats_are_stored_exactly() -> Result<()> {
        let odd_nan = Datum::Float(f64::from_bits(0xFFF0_0000_0000_0001));
        let row = decode_row(&encoded(1, &[(1, &Datum::Float(-0.0)), (2, &odd_nan)]))?;
        let bits: Vec<u64> = row
            .cells
            .iter()
            .filter_map(|(_, d)| match d {
                Datum::Float(f) => Some(f.to_bits()),
                _ => None,
            })
            .collect();
        assert_eq!(bits, [0x8000_0000_0000_0000, 0xFFF0_0000_0000_0001]);
        Ok(())
    }

    #[test]
    fn malformed_rows_are_rejected() {
        let cases: Vec<(&[u8], CodecError)> = vec![
            (
                &[],
                CodecError::Truncated {
                    what: "schema version",
                    offset: 0,
                },
            ),
            (
                &[1],
                CodecError::Truncated {
                    what: "cell count",
                    offset: 1,
                },
            ),
            (
                &[1, 1, 5],
                CodecError::Truncated {
                    what: "cell",
                    offset: 3,
                },
            ),
            (
                &[1, 1, 5, 0x0B],
                CodecError::UnknownTag {
                    tag: 0x0B,
                    offset: 3,
                },
            ),
            (
                &[1, 1, 5, 0x0A, 1, 2, 3],
                CodecError::Truncated {
                    what: "UUID",
                    offset: 4,
                },
            ),
            (
                &[1, 1, 5, 0x04, 0, 0],
                CodecError::Truncated {
                    what: "DOUBLE",
                    offset: 4,
                },
            ),
            (
                &[1, 1, 5, 0x06, 4, b'a'],
                CodecError::LengthOutOfRange {
                    len: 4,
                    offset: 4,
                    remaining: 1,
                },
            ),
            (
                &[1, 1, 5, 0x06, 2, b'a', 0xFF],
                CodecError::InvalidUtf8 { offset: 6 },
            ),
            (
                &[1, 1, 5, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10],
                CodecError::InvalidVarint { offset: 4 },
            ),
            (
                &[1, 0, 0],
                CodecError::TrailingBytes {
                    offset: 2,
                    count: 1,
                },
            ),
            (
                &[1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
                CodecError::Truncated {
                    what: "column id",
                    offset: 6,
                },
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(decode_row(bytes), Err(expected), "{bytes:02x?}");
        }
    }
}
