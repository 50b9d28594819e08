//! COPY's binary format, as PostgreSQL defines it (the format asyncpg's
//! `copy_records_to_table` and psycopg's binary copies send): an 11-byte signature, a flags
//! word and a header extension, then one tuple after another (a 16-bit field count, each field
//! a 32-bit length, -1 for NULL, and the value in its type's binary send format), and a field
//! count of -1 to end.
//!
//! A field is read by the type the client was told the column has (`int2`, `int4` or `int8`
//! for an integer column, by its length; `float4` or `float8`; `numeric`; `bool`; text;
//! `bytea`; `date` and `timestamp` counted from 2000-01-01). A NUMERIC is given as its decimal
//! text, which the column's assignment reads at the column's scale.

use std::io::{BufRead, Read};

use rowdex_catalog::{ColumnDef, DataType, Declared};
use rowdex_codec::Datum;

use crate::copy_data::binary_arrays::array_recv;
use crate::copy_data::numeric_binary::numeric_text;
use crate::copy_data::records::{ReadError, Record};

/// The signature every binary COPY starts with.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// The longest header extension read (PostgreSQL defines none; its readers skip any).
const MAX_HEADER_EXTENSION: u32 = 1 << 20;
/// Days from 1970-01-01 (rowdex's epoch) to 2000-01-01 (PostgreSQL's).
const EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const EPOCH_MICROS: i64 = 946_684_800_000_000;

/// One tuple read by a [`BinaryReader`]: each field's bytes, None for NULL.
pub type BinaryRecord = Record<Vec<u8>>;

/// Reads the tuples of one binary COPY.
pub struct BinaryReader<R> {
    source: R,
    /// The tuple read last (1-based), for errors.
    tuple: u64,
    started: bool,
    ended: bool,
}

fn malformed(message: impl Into<String>) -> ReadError {
    ReadError::Malformed(message.into())
}

impl<R: BufRead> BinaryReader<R> {
    pub fn new(source: R) -> Self {
        BinaryReader {
            source,
            tuple: 0,
            started: false,
            ended: false,
        }
    }

    /// The tuple read last (1-based): a binary COPY's "line".
    pub fn line(&self) -> u64 {
        self.tuple
    }

    /// Reads the next tuple into `record`; false at the end of the data.
    pub fn read(&mut self, record: &mut BinaryRecord) -> Result<bool, ReadError> {
        if self.ended {
            return Ok(false);
        }
        if !self.started {
            self.header()?;
            self.started = true;
        }
        let mut count = [0u8; 2];
        if !self.fill(&mut count, true)? {
            // Data that stops where a tuple would start lacks only the trailer.
            self.ended = true;
            return Ok(false);
        }
        let count = i16::from_be_bytes(count);
        if count == -1 {
            self.ended = true;
            return Ok(false);
        }
        self.tuple += 1;
        let count =
            usize::try_from(count).map_err(|_| malformed(format!("a tuple of {count} fields")))?;
        record.clear();
        for _ in 0..count {
            let mut length = [0u8; 4];
            self.fill(&mut length, false)?;
            let length = i32::from_be_bytes(length);
            let field = record.push();
            if length == -1 {
                record.set_last_null();
                continue;
            }
            let length = usize::try_from(length)
                .map_err(|_| malformed(format!("a field of length {length}")))?;
            // Read as the bytes come, so a length the data does not have allocates nothing.
            let read = (&mut self.source)
                .take(length as u64)
                .read_to_end(field)
                .map_err(ReadError::Io)?;
            if read != length {
                return Err(malformed("the binary COPY data ends inside a tuple"));
            }
        }
        Ok(true)
    }

    /// The signature, the flags (no OIDs) and the header extension (skipped).
    fn header(&mut self) -> Result<(), ReadError> {
        let mut signature = [0u8; 11];
        self.fill(&mut signature, false)?;
        if &signature != SIGNATURE {
            return Err(malformed("COPY file signature not recognized"));
        }
        let mut words = [0u8; 8];
        self.fill(&mut words, false)?;
        let flags = u32::from_be_bytes([words[0], words[1], words[2], words[3]]);
        if flags & (1 << 16) != 0 {
            return Err(malformed("binary COPY data with OIDs is not supported"));
        }
        if flags & 0xffff_0000 & !(1 << 16) != 0 {
            return Err(malformed("unrecognized critical flags in COPY file header"));
        }
        let extension = u32::from_be_bytes([words[4], words[5], words[6], words[7]]);
        if extension > MAX_HEADER_EXTENSION {
            return Err(malformed(format!(
                "a COPY header extension of {extension} bytes"
            )));
        }
        let mut skipped = vec![0u8; extension as usize];
        self.fill(&mut skipped, false).map(|_| ())
    }

    /// Fills `buf` from the source; with `may_end`, false when the source has ended before
    /// its first byte.
    fn fill(&mut self, buf: &mut [u8], may_end: bool) -> Result<bool, ReadError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.source.read(&mut buf[filled..]) {
                Ok(0) if filled == 0 && may_end => return Ok(false),
                Ok(0) => return Err(malformed("the binary COPY data ends inside a tuple")),
                Ok(n) => filled += n,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(ReadError::Io(error)),
            }
        }
        Ok(true)
    }
}

/// The value of a binary field for `column`, or what is wrong with its bytes.
pub fn binary_datum(column: &ColumnDef, bytes: &[u8]) -> Result<Datum, String> {
    let wrong = || {
        format!(
            "{} bytes are no binary {} value (column {})",
            bytes.len(),
            column.data_type,
            column.name
        )
    };
    let array = |n: usize| {
        bytes
            .get(..n)
            .filter(|_| bytes.len() == n)
            .ok_or_else(wrong)
    };
    Ok(match column.data_type {
        DataType::Boolean => Datum::Boolean(array(1)?[0] != 0),
        DataType::Integer => match bytes.len() {
            2 => Datum::Int(i16::from_be_bytes([bytes[0], bytes[1]]).into()),
            4 => Datum::Int(i32::from_be_bytes(array(4)?.try_into().map_err(|_| wrong())?).into()),
            8 => Datum::Int(i64::from_be_bytes(
                array(8)?.try_into().map_err(|_| wrong())?,
            )),
            _ => return Err(wrong()),
        },
        DataType::Float => match bytes.len() {
            4 => {
                Datum::Float(f32::from_be_bytes(array(4)?.try_into().map_err(|_| wrong())?).into())
            }
            8 => Datum::Float(f64::from_be_bytes(
                array(8)?.try_into().map_err(|_| wrong())?,
            )),
            _ => return Err(wrong()),
        },
        DataType::Decimal { .. } => Datum::Text(numeric_text(bytes).ok_or_else(wrong)?),
        DataType::Text { .. } => {
            // A jsonb's text follows its format's version byte (1).
            let text = match (column.declared, bytes.split_first()) {
                (Some(Declared::Jsonb), Some((1, text))) => text,
                (Some(Declared::Jsonb), _) => {
                    return Err(format!(
                        "unsupported jsonb version number in the value for column {}",
                        column.name
                    ));
                }
                _ => bytes,
            };
            Datum::Text(
                std::str::from_utf8(text)
                    .map_err(|_| format!("the value for column {} is not UTF-8", column.name))?
                    .to_string(),
            )
        }
        DataType::Bytes { .. } => Datum::Bytes(bytes.to_vec()),
        DataType::Date => {
            let days = i32::from_be_bytes(array(4)?.try_into().map_err(|_| wrong())?);
            if days == i32::MAX || days == i32::MIN {
                return Err(format!(
                    "infinite dates are not supported (column {})",
                    column.name
                ));
            }
            Datum::Date(days.checked_add(EPOCH_DAYS).ok_or_else(wrong)?)
        }
        DataType::Timestamp | DataType::TimestampTz => {
            let micros = i64::from_be_bytes(array(8)?.try_into().map_err(|_| wrong())?);
            if micros == i64::MAX || micros == i64::MIN {
                return Err(format!(
                    "infinite timestamps are not supported (column {})",
                    column.name
                ));
            }
            Datum::Timestamp(micros.checked_add(EPOCH_MICROS).ok_or_else(wrong)?)
        }
        DataType::Uuid => Datum::Uuid(array(16)?.try_into().map_err(|_| wrong())?),
        DataType::Array { element } => Datum::Text(
            array_recv(bytes, element)
                .map_err(|reason| format!("{reason} (column {})", column.name))?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_are_read_until_the_trailer() {
        let mut data = SIGNATURE.to_vec();
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&2i16.to_be_bytes());
        data.extend_from_slice(&4i32.to_be_bytes());
        data.extend_from_slice(&7i32.to_be_bytes());
        data.extend_from_slice(&(-1i32).to_be_bytes());
        data.extend_from_slice(&(-1i16).to_be_bytes());
        let mut reader = BinaryReader::new(&data[..]);
        let mut record = BinaryRecord::default();
        assert!(reader.read(&mut record).expect("a tuple"));
        assert_eq!(record.len(), 2);
        let column = ColumnDef::nullable("n", DataType::Integer);
        let value = record.field(0).map(|b| binary_datum(&column, b));
        assert_eq!(value, Some(Ok(Datum::Int(7))));
        assert_eq!(record.field(1), None);
        assert!(!reader.read(&mut record).expect("the trailer"));
        let mut bad = BinaryReader::new(&b"PGCOPY\n"[..]);
        assert!(bad.read(&mut record).is_err());
    }

    #[test]
    fn dates_and_timestamps_count_from_2000() {
        let date = ColumnDef::nullable("d", DataType::Date);
        assert_eq!(
            binary_datum(&date, &0i32.to_be_bytes()),
            Ok(Datum::Date(10_957))
        );
        let ts = ColumnDef::nullable("t", DataType::Timestamp);
        assert_eq!(
            binary_datum(&ts, &1i64.to_be_bytes()),
            Ok(Datum::Timestamp(946_684_800_000_001))
        );
    }
}
