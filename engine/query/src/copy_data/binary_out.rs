//! `COPY ... TO (FORMAT binary)`: rows in PostgreSQL's binary COPY format (see `binary`, which
//! reads it): the header, then per row a 16-bit field count and each field as a 32-bit length
//! (-1 for NULL) and the value in its type's binary send format, then a field count of -1.
//!
//! A value is sent as the type a client is told the column has: a column declared INTEGER or
//! SMALLINT (`values::DECLARED_TYPE`) in 4 or 2 bytes, REAL in 4, other integers in 8 and
//! floats in 8; text as its UTF-8 bytes (a jsonb after a version byte, 1); a UUID as its 16
//! bytes; NUMERIC in base-10000 digits;
//! DATE and TIMESTAMP (TIMESTAMPTZ's UTC instant) counted from 2000-01-01; an array in the
//! array send format (`binary_arrays`).

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    Float64Array, Int64Array, LargeStringArray, StringArray, StringViewArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType as ArrowType, Field, Float32Type, Int16Type, Int32Type, TimeUnit,
};
use datafusion::arrow::record_batch::RecordBatch;

use crate::copy_data::binary_arrays::array_send;
use crate::copy_data::numeric_binary::numeric_bytes;
use crate::error::{Error, Result};
use crate::values::DECLARED_TYPE;

/// The signature, a flags word of 0 and an empty header extension.
pub const BINARY_HEADER: &[u8; 19] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The field count that ends the data.
pub const BINARY_TRAILER: [u8; 2] = [0xff, 0xff];
/// Days from 1970-01-01 to 2000-01-01.
const EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const EPOCH_MICROS: i64 = 946_684_800_000_000;

/// Every row of `batch` in the binary format, each in a piece of its own (a CopyData message
/// each, as PostgreSQL sends them); fails on a column type the format has no encoding for here.
pub fn encode_binary_rows(batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
    let schema = batch.schema();
    let fields = u16::try_from(batch.num_columns()).map_err(|_| Error::Unsupported {
        what: "COPY ... TO (FORMAT binary) of more than 65535 columns".to_string(),
    })?;
    let mut rows = vec![fields.to_be_bytes().to_vec(); batch.num_rows()];
    for (column, field) in batch.columns().iter().zip(schema.fields()) {
        let column = in_microseconds(column)?;
        for (row, out) in rows.iter_mut().enumerate() {
            encode_value(&column, field, row, out)?;
        }
    }
    Ok(rows)
}

/// A timestamp column of any unit in microseconds (a literal's are nanoseconds), the unit
/// PostgreSQL sends; any other column as it is.
fn in_microseconds(column: &ArrayRef) -> Result<ArrayRef> {
    match column.data_type() {
        ArrowType::Timestamp(_, None) => Ok(cast(
            column,
            &ArrowType::Timestamp(TimeUnit::Microsecond, None),
        )?),
        _ => Ok(column.clone()),
    }
}

/// Appends the value at `row` of `column`: its length, then its bytes.
fn encode_value(column: &ArrayRef, field: &Field, row: usize, out: &mut Vec<u8>) -> Result<()> {
    if column.is_null(row) {
        out.extend_from_slice(&(-1i32).to_be_bytes());
        return Ok(());
    }
    let declared = field.metadata().get(DECLARED_TYPE).map(String::as_str);
    let bytes: Vec<u8> = match column.data_type() {
        ArrowType::Boolean => vec![u8::from(as_array::<BooleanArray>(column)?.value(row))],
        ArrowType::Int64 => {
            let value = as_array::<Int64Array>(column)?.value(row);
            match declared.map(|d| d.split('(').next().unwrap_or(d)) {
                Some("SMALLINT") => i16::try_from(value)
                    .map_err(|_| out_of_range(field, value))?
                    .to_be_bytes()
                    .to_vec(),
                Some("INTEGER") => i32::try_from(value)
                    .map_err(|_| out_of_range(field, value))?
                    .to_be_bytes()
                    .to_vec(),
                _ => value.to_be_bytes().to_vec(),
            }
        }
        ArrowType::Int32 => column
            .as_primitive::<Int32Type>()
            .value(row)
            .to_be_bytes()
            .to_vec(),
        ArrowType::Int16 => column
            .as_primitive::<Int16Type>()
            .value(row)
            .to_be_bytes()
            .to_vec(),
        ArrowType::Float32 => column
            .as_primitive::<Float32Type>()
            .value(row)
            .to_be_bytes()
            .to_vec(),
        ArrowType::Float64 => {
            let value = as_array::<Float64Array>(column)?.value(row);
            match declared {
                Some("REAL") => (value as f32).to_be_bytes().to_vec(),
                _ => value.to_be_bytes().to_vec(),
            }
        }
        // A UUID's send format is its 16 bytes.
        ArrowType::Utf8 if declared == Some("UUID") => {
            let text = as_array::<StringArray>(column)?.value(row);
            rowdex_codec::parse_uuid(text)
                .ok_or_else(|| Error::InvalidTextRepresentation {
                    type_name: "uuid",
                    value: text.to_string(),
                })?
                .to_vec()
        }
        // A jsonb's send format is its text after the format's version byte (1).
        ArrowType::Utf8 if declared == Some("JSONB") => {
            let text = as_array::<StringArray>(column)?.value(row);
            let mut bytes = Vec::with_capacity(text.len() + 1);
            bytes.push(1);
            bytes.extend_from_slice(text.as_bytes());
            bytes
        }
        ArrowType::Utf8 => as_array::<StringArray>(column)?
            .value(row)
            .as_bytes()
            .to_vec(),
        ArrowType::LargeUtf8 => as_array::<LargeStringArray>(column)?
            .value(row)
            .as_bytes()
            .to_vec(),
        ArrowType::Utf8View => as_array::<StringViewArray>(column)?
            .value(row)
            .as_bytes()
            .to_vec(),
        ArrowType::Binary => as_array::<BinaryArray>(column)?.value(row).to_vec(),
        ArrowType::Date32 => {
            let days = as_array::<Date32Array>(column)?.value(row) - EPOCH_DAYS;
            days.to_be_bytes().to_vec()
        }
        // A TIMESTAMPTZ's instant counts from 2000-01-01 UTC, whatever zone it carries.
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            let micros = as_array::<TimestampMicrosecondArray>(column)?.value(row);
            micros.saturating_sub(EPOCH_MICROS).to_be_bytes().to_vec()
        }
        ArrowType::List(_) => {
            let lists = column.as_list::<i32>();
            array_send(lists.value(row).as_ref(), declared)?
        }
        ArrowType::Decimal128(_, scale) => {
            let units = as_array::<Decimal128Array>(column)?.value(row);
            numeric_bytes(units, *scale)
        }
        other => {
            return Err(Error::Unsupported {
                what: format!("COPY ... TO (FORMAT binary) of a column of type {other}"),
            });
        }
    };
    let length = i32::try_from(bytes.len()).map_err(|_| Error::Unsupported {
        what: "a COPY value longer than 2 GiB".to_string(),
    })?;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&bytes);
    Ok(())
}

fn as_array<A: 'static>(column: &ArrayRef) -> Result<&A> {
    column
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| Error::Unsupported {
            what: format!(
                "COPY ... TO (FORMAT binary) of a {} column",
                column.data_type()
            ),
        })
}

fn out_of_range(field: &Field, value: i64) -> Error {
    Error::Unsupported {
        what: format!(
            "the value {value} of column {} past its declared type",
            field.name()
        ),
    }
}
