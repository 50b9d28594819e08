//! Arrays in PostgreSQL's binary send format, for binary COPY: the number of dimensions (0 for
//! an empty array, else 1), a has-NULLs flag, the element type's oid, the length and lower
//! bound (1) of the dimension, then each element as a 32-bit length (-1 for NULL) and its
//! bytes in its type's send format (integers and floats big-endian, booleans one byte, text as
//! UTF-8, DATE and TIMESTAMP counted from 2000-01-01, a UUID its 16 bytes, a jsonb its text
//! after a version byte).

use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Date32Array, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType as ArrowType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, TimeUnit,
};
use rowdex_catalog::ArrayElement;
use rowdex_codec::{format_bytea, format_date, format_uuid, json, parse_uuid};

use crate::array_text::{canonical_element, element_of_arrow, write_array};
use crate::copy_data::numeric_binary::{numeric_bytes, numeric_text};
use crate::error::{Error, Result};
use crate::time_zone::{TimeZone, postgres_timestamp};

/// Days from 1970-01-01 to 2000-01-01.
const EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The element type of a list column whose field declares `declared` (`UUID[]`, `JSONB[]`:
/// lists of text whose field says what the text is), else the one its Arrow elements read as.
pub fn declared_element(values: &dyn Array, declared: Option<&str>) -> ArrayElement {
    declared
        .and_then(ArrayElement::of_declared_array)
        .unwrap_or_else(|| element_of_arrow(values.data_type()))
}

/// The elements of one list value (`values`) of a column declared `declared` (see
/// [`declared_element`]) in the array send format.
pub fn array_send(values: &dyn Array, declared: Option<&str>) -> Result<Vec<u8>> {
    let element = declared_element(values, declared);
    let mut out = Vec::new();
    let dimensions: i32 = if values.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&dimensions.to_be_bytes());
    out.extend_from_slice(&i32::from(values.null_count() > 0).to_be_bytes());
    out.extend_from_slice(&element.pg_oid().to_be_bytes());
    if values.is_empty() {
        return Ok(out);
    }
    let length = i32::try_from(values.len()).map_err(|_| Error::Unsupported {
        what: "an array of more than 2^31 elements".to_string(),
    })?;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let unsupported = || Error::Unsupported {
        what: format!(
            "COPY ... TO (FORMAT binary) of an array of {}",
            values.data_type()
        ),
    };
    for row in 0..values.len() {
        if values.is_null(row) {
            out.extend_from_slice(&(-1i32).to_be_bytes());
            continue;
        }
        let bytes: Vec<u8> = match values.data_type() {
            ArrowType::Boolean => {
                let flags = values
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(unsupported)?;
                vec![u8::from(flags.value(row))]
            }
            ArrowType::Int16 => values
                .as_primitive::<Int16Type>()
                .value(row)
                .to_be_bytes()
                .to_vec(),
            ArrowType::Int32 => values
                .as_primitive::<Int32Type>()
                .value(row)
                .to_be_bytes()
                .to_vec(),
            ArrowType::Int64 => values
                .as_primitive::<Int64Type>()
                .value(row)
                .to_be_bytes()
                .to_vec(),
            ArrowType::Float32 => values
                .as_primitive::<Float32Type>()
                .value(row)
                .to_be_bytes()
                .to_vec(),
            ArrowType::Float64 => values
                .as_primitive::<Float64Type>()
                .value(row)
                .to_be_bytes()
                .to_vec(),
            ArrowType::Utf8 => {
                let text = values
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(unsupported)?
                    .value(row);
                match element {
                    // Its 16 bytes.
                    ArrayElement::Uuid => parse_uuid(text)
                        .ok_or_else(|| Error::InvalidTextRepresentation {
                            type_name: "uuid",
                            value: text.to_string(),
                        })?
                        .to_vec(),
                    // Its text after the format's version byte (1).
                    ArrayElement::Jsonb => [&[1u8], text.as_bytes()].concat(),
                    _ => text.as_bytes().to_vec(),
                }
            }
            ArrowType::Decimal128(_, scale) => {
                numeric_bytes(values.as_primitive::<Decimal128Type>().value(row), *scale)
            }
            ArrowType::Binary => values.as_binary::<i32>().value(row).to_vec(),
            ArrowType::Date32 => {
                let days = values
                    .as_any()
                    .downcast_ref::<Date32Array>()
                    .ok_or_else(unsupported)?
                    .value(row);
                (days - EPOCH_DAYS).to_be_bytes().to_vec()
            }
            ArrowType::Timestamp(..) => {
                let micros = cast(values, &ArrowType::Timestamp(TimeUnit::Microsecond, None))?;
                let micros = micros
                    .as_any()
                    .downcast_ref::<TimestampMicrosecondArray>()
                    .ok_or_else(unsupported)?
                    .value(row);
                micros.saturating_sub(EPOCH_MICROS).to_be_bytes().to_vec()
            }
            _ => return Err(unsupported()),
        };
        let size = i32::try_from(bytes.len()).map_err(|_| unsupported())?;
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

/// An array of `element`s read from its send format, as its text (`{1,2}`); a message says
/// what is wrong with bytes that are not one.
pub fn array_recv(bytes: &[u8], element: ArrayElement) -> std::result::Result<String, String> {
    let mut at = 0usize;
    let mut take = |n: usize| -> std::result::Result<&[u8], String> {
        let end = at
            .checked_add(n)
            .filter(|end| *end <= bytes.len())
            .ok_or("the array's bytes end early")?;
        let taken = &bytes[at..end];
        at = end;
        Ok(taken)
    };
    let word = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let dimensions = word(take(4)?);
    let _has_nulls = word(take(4)?);
    let oid = word(take(4)?);
    if oid != element.pg_oid() {
        return Err(format!(
            "an array of elements of type oid {oid} where the column holds {}",
            element.pg_name()
        ));
    }
    if dimensions == 0 {
        return Ok("{}".to_string());
    }
    if dimensions != 1 {
        return Err(format!(
            "an array of {dimensions} dimensions (rowdex's arrays have one)"
        ));
    }
    let length = usize::try_from(word(take(4)?)).map_err(|_| "a negative array length")?;
    let _lower_bound = take(4)?;
    let mut texts: Vec<Option<String>> = Vec::with_capacity(length.min(1 << 16));
    for _ in 0..length {
        let size = word(take(4)?);
        if size == -1 {
            texts.push(None);
            continue;
        }
        let value = take(usize::try_from(size).map_err(|_| "a negative element length")?)?;
        texts.push(Some(element_text(value, element)?));
    }
    if at != bytes.len() {
        return Err("bytes past the array's last element".to_string());
    }
    Ok(write_array(texts.iter().map(Option::as_deref)))
}

/// One element's text from its send format.
fn element_text(value: &[u8], element: ArrayElement) -> std::result::Result<String, String> {
    let fixed = |n: usize| -> std::result::Result<&[u8], String> {
        (value.len() == n)
            .then_some(value)
            .ok_or_else(|| format!("a {} element of {} bytes", element.pg_name(), value.len()))
    };
    Ok(match element {
        ArrayElement::Bool => if fixed(1)?[0] != 0 { "t" } else { "f" }.to_string(),
        ArrayElement::Int2 => {
            let b = fixed(2)?;
            i16::from_be_bytes([b[0], b[1]]).to_string()
        }
        ArrayElement::Int4 => {
            let b = fixed(4)?;
            i32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string()
        }
        ArrayElement::Int8 => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "an int8 element")?;
            i64::from_be_bytes(b).to_string()
        }
        ArrayElement::Float4 => {
            let b = fixed(4)?;
            f32::from_be_bytes([b[0], b[1], b[2], b[3]]).to_string()
        }
        ArrayElement::Float8 => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "a float8 element")?;
            f64::from_be_bytes(b).to_string()
        }
        ArrayElement::Text | ArrayElement::Varchar => std::str::from_utf8(value)
            .map_err(|_| "a text element that is not UTF-8")?
            .to_string(),
        ArrayElement::Date => {
            let b = fixed(4)?;
            let days = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            format_date(days.checked_add(EPOCH_DAYS).ok_or("a date out of range")?)
        }
        ArrayElement::Numeric { .. } => {
            let text = numeric_text(value).ok_or("a numeric element that is not one")?;
            canonical_element(&text, element).map_err(|error| error.to_string())?
        }
        ArrayElement::TimestampTz => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "a timestamptz element")?;
            let micros = i64::from_be_bytes(b);
            TimeZone::utc().format_timestamptz(
                micros
                    .checked_add(EPOCH_MICROS)
                    .ok_or("a timestamp out of range")?,
            )
        }
        ArrayElement::Uuid => {
            let bytes: [u8; 16] = fixed(16)?.try_into().map_err(|_| "a uuid element")?;
            format_uuid(&bytes)
        }
        ArrayElement::Json => {
            let text = std::str::from_utf8(value).map_err(|_| "a json element not UTF-8")?;
            json::parse_json(text).map_err(|error| error.to_string())?;
            text.to_string()
        }
        ArrayElement::Bytea => format_bytea(value),
        ArrayElement::Jsonb => match value.split_first() {
            Some((1, text)) => {
                let text = std::str::from_utf8(text).map_err(|_| "a jsonb element not UTF-8")?;
                json::Jsonb::parse(text)
                    .map_err(|error| error.to_string())?
                    .to_text()
            }
            _ => return Err("a jsonb element of an unknown format version".to_string()),
        },
        ArrayElement::Timestamp => {
            let b: [u8; 8] = fixed(8)?.try_into().map_err(|_| "a timestamp element")?;
            let micros = i64::from_be_bytes(b);
            postgres_timestamp(
                micros
                    .checked_add(EPOCH_MICROS)
                    .ok_or("a timestamp out of range")?,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::arrays::list_array;
    use datafusion::arrow::array::ListArray;

    #[test]
    fn arrays_go_out_and_come_back() -> Result<()> {
        for (element, text) in [
            (ArrayElement::Int4, "{1,NULL,-3}"),
            (ArrayElement::Text, r#"{a,"b c",NULL,""}"#),
            (ArrayElement::Bool, "{t,f}"),
            (ArrayElement::Float8, "{1.5,-2}"),
            (ArrayElement::Date, "{2024-02-29}"),
            (ArrayElement::Timestamp, r#"{"2024-01-15 10:00:00.25"}"#),
            (ArrayElement::Int8, "{}"),
            (
                ArrayElement::Uuid,
                "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}",
            ),
            (
                ArrayElement::Jsonb,
                r#"{"{\"a\": [1, null]}",NULL,"\"x\""}"#,
            ),
            (
                ArrayElement::Numeric {
                    precision: 10,
                    scale: 2,
                },
                "{12345.67,-0.50,NULL,0.00}",
            ),
            (ArrayElement::Bytea, r#"{"\\x00ff",NULL,"\\x"}"#),
            (ArrayElement::Json, r#"{"{\"b\": 1,  \"a\": 2}",NULL}"#),
        ] {
            let list = list_array(element, [Some(text)])?;
            let list = list
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or(Error::Unsupported {
                    what: "a list".into(),
                })?;
            let declared = format!("{}[]", element.spelling());
            let bytes = array_send(list.value(0).as_ref(), Some(&declared))?;
            assert_eq!(array_recv(&bytes, element).as_deref(), Ok(text), "{text}");
        }
        assert!(array_recv(&[0, 0, 0, 1], ArrayElement::Int4).is_err());
        Ok(())
    }
}
