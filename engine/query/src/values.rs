//! Conversions between rowdex values and Arrow: column types, values read out of Arrow arrays,
//! assignment of a value to a column (with the casts a user expects) and of a statement's
//! values to a full row, values compared with a column without changing the comparison, and
//! building batches.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int64Array, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::ScalarValue;
use rowdex_catalog::{ColumnDef, DataType, Declared, TableDef};
pub use rowdex_codec::decimal_from_text;
use rowdex_codec::{Datum, format_uuid, json};

use crate::array_text::array_text_of_list;
use crate::error::{Error, Result};
use crate::time_zone::statement_time_zone;
use rowdex_codec::parse_bytea;

pub(crate) mod arrays;
pub(crate) mod fields;

pub use fields::{
    DECLARED_TYPE, STORED_TIME_ZONE, column_field, renamed_schema, stored_type, table_schema,
};
pub(crate) use fields::{declared_text_field, declared_type_of, is_uuid_field, uuid_field};

/// Reads one value out of any Arrow array DataFusion may hand us.
pub fn datum_from_array(array: &dyn Array, row: usize) -> Result<Datum> {
    if array.is_null(row) {
        return Ok(Datum::Null);
    }
    let scalar = ScalarValue::try_from_array(array, row)?;
    datum_from_scalar(&scalar)
}

pub fn datum_from_scalar(scalar: &ScalarValue) -> Result<Datum> {
    if scalar.is_null() {
        return Ok(Datum::Null);
    }
    let datum = match scalar {
        ScalarValue::Boolean(Some(b)) => Datum::Boolean(*b),
        ScalarValue::Int8(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Datum::Int(*v),
        ScalarValue::UInt8(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::UInt16(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::UInt32(Some(v)) => Datum::Int(i64::from(*v)),
        ScalarValue::UInt64(Some(v)) => match i64::try_from(*v) {
            Ok(v) => Datum::Int(v),
            Err(_) => Datum::Float(*v as f64),
        },
        ScalarValue::Float16(Some(v)) => Datum::Float(f64::from(f32::from(*v))),
        ScalarValue::Float32(Some(v)) => Datum::Float(f64::from(*v)),
        ScalarValue::Float64(Some(v)) => Datum::Float(*v),
        ScalarValue::Decimal128(Some(v), _, scale) => {
            Datum::Float(*v as f64 / 10f64.powi(i32::from(*scale)))
        }
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Datum::Text(s.clone()),
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b))
        | ScalarValue::FixedSizeBinary(_, Some(b)) => Datum::Bytes(b.clone()),
        ScalarValue::Date32(Some(d)) => Datum::Date(*d),
        // A list (an `ARRAY[...]`, an `array_agg`) as an array's text.
        ScalarValue::List(list) if list.len() == 1 => {
            Datum::Text(array_text_of_list(list.value(0).as_ref())?)
        }
        ScalarValue::Date64(Some(ms)) => Datum::Date((ms.div_euclid(86_400_000)) as i32),
        ScalarValue::TimestampSecond(Some(v), _) => Datum::Timestamp(v.saturating_mul(1_000_000)),
        ScalarValue::TimestampMillisecond(Some(v), _) => Datum::Timestamp(v.saturating_mul(1_000)),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Datum::Timestamp(*v),
        ScalarValue::TimestampNanosecond(Some(v), _) => Datum::Timestamp(v.div_euclid(1_000)),
        other => {
            return Err(Error::Unsupported {
                what: format!("values of type {}", other.data_type()),
            });
        }
    };
    Ok(datum)
}

/// Converts a value for storage in `column`, applying the assignment casts a user expects
/// (integer to float, integral float to integer, numbers to text, text to date/time) and the
/// column's NOT NULL and length constraints.
pub fn assign(table: &TableDef, column: &ColumnDef, datum: Datum) -> Result<Datum> {
    let mismatch = |datum: &Datum| Error::TypeMismatch {
        table: table.name.clone(),
        column: column.name.clone(),
        expected: column.data_type.to_string(),
        found: datum.type_name(),
        value: datum.to_string(),
    };
    if datum.is_null() {
        if !column.nullable {
            let is_key = table
                .column_index(&column.name)
                .and_then(|i| table.key_position(i))
                .is_some();
            return Err(if is_key {
                Error::NullInKey {
                    table: table.name.clone(),
                    column: column.name.clone(),
                }
            } else {
                Error::NotNullViolation {
                    table: table.name.clone(),
                    column: column.name.clone(),
                }
            });
        }
        return Ok(Datum::Null);
    }
    let converted = match (&column.data_type, datum) {
        // An array's text, made canonical for its elements (22P02 for one that is no array).
        (DataType::Array { element }, Datum::Text(s)) => {
            Datum::Text(arrays::canonical_array_text(&s, *element)?)
        }
        (t, d) if t.admits(&d) => d,
        (DataType::Float, Datum::Int(v)) => Datum::Float(v as f64),
        (DataType::Integer, Datum::Float(v)) => {
            if v.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&v)
            {
                Datum::Int(v as i64)
            } else {
                return Err(mismatch(&Datum::Float(v)));
            }
        }
        (DataType::Decimal { scale, .. }, Datum::Int(v)) => {
            let unit = 10i128.checked_pow(u32::from(scale.unsigned_abs()));
            match unit.and_then(|unit| i128::from(v).checked_mul(unit)) {
                Some(scaled) => Datum::Decimal(scaled),
                None => return Err(mismatch(&Datum::Int(v))),
            }
        }
        // Through the float's shortest decimal text (1.005 is "1.005"), so a value written as
        // a decimal literal and read as a float rounds as the literal would.
        (DataType::Decimal { scale, .. }, Datum::Float(v)) => {
            match decimal_from_text(&format!("{v}"), *scale) {
                Some(exact) => Datum::Decimal(exact),
                None => return Err(mismatch(&Datum::Float(v))),
            }
        }
        (DataType::Text { .. }, d @ (Datum::Int(_) | Datum::Float(_) | Datum::Boolean(_))) => {
            Datum::Text(d.to_string())
        }
        (DataType::Date, Datum::Text(s)) => match rowdex_codec::parse_date(&s) {
            Some(days) => Datum::Date(days),
            None => return Err(mismatch(&Datum::Text(s))),
        },
        (DataType::Timestamp, Datum::Text(s)) => match rowdex_codec::parse_timestamp(&s) {
            Some(micros) => Datum::Timestamp(micros),
            None => return Err(mismatch(&Datum::Text(s))),
        },
        (DataType::Timestamp, Datum::Date(days)) => {
            Datum::Timestamp(i64::from(days) * 86_400_000_000)
        }
        // Text without an offset, and a date, are times of the statement's zone.
        (DataType::TimestampTz, Datum::Text(s)) => {
            match statement_time_zone().parse_timestamptz(&s) {
                Some(micros) => Datum::Timestamp(micros),
                None => {
                    return Err(Error::InvalidDatetime {
                        type_name: "timestamp with time zone",
                        value: s,
                    });
                }
            }
        }
        (DataType::TimestampTz, Datum::Date(days)) => {
            match statement_time_zone().utc_of_local(i64::from(days) * 86_400_000_000) {
                Some(micros) => Datum::Timestamp(micros),
                None => return Err(mismatch(&Datum::Date(days))),
            }
        }
        // PostgreSQL's hex input form (`'\x0001ff'`) spells the bytes; other text is its own.
        (DataType::Bytes { .. }, Datum::Text(s)) if s.starts_with("\\x") => match parse_bytea(&s) {
            Some(bytes) => Datum::Bytes(bytes),
            None => return Err(mismatch(&Datum::Text(s))),
        },
        (DataType::Bytes { .. }, Datum::Text(s)) => Datum::Bytes(s.into_bytes()),
        (DataType::Uuid, Datum::Text(s)) => match rowdex_codec::parse_uuid(&s) {
            Some(bytes) => Datum::Uuid(bytes),
            None => return Err(mismatch(&Datum::Text(s))),
        },
        (DataType::Text { .. }, Datum::Uuid(bytes)) => Datum::Text(format_uuid(&bytes)),
        // A quoted literal is a constant of no type yet, read as the column's type (`k INTEGER
        // DEFAULT '0'`, `INSERT ... VALUES ('5')`, a parameter sent as text): PostgreSQL's
        // rule, and SQLite's numeric affinity agrees. Text that does not read as the type is
        // still a mismatch.
        (data_type, Datum::Text(s)) => match number_from_text(data_type, &s) {
            Some(value) => value,
            None => return Err(mismatch(&Datum::Text(s))),
        },
        (_, d) => return Err(mismatch(&d)),
    };
    let converted = match column.declared {
        Some(declared) => fit_declared(table, column, declared, converted)?,
        None => converted,
    };
    // DECIMAL(p, s) holds at most p digits: |value| < 10^p in units of the scale.
    if let (DataType::Decimal { precision, scale }, Datum::Decimal(v)) =
        (&column.data_type, &converted)
        && 10i128
            .checked_pow(u32::from(*precision))
            .is_some_and(|limit| v.unsigned_abs() >= limit.unsigned_abs())
    {
        return Err(Error::OutOfRange {
            table: table.name.clone(),
            column: column.name.clone(),
            expected: column.data_type.to_string(),
            value: decimal_text(*v, *scale),
        });
    }
    let length = match (&column.data_type, &converted) {
        (DataType::Text { max_len: Some(max) }, Datum::Text(s)) => Some((*max, s.chars().count())),
        (DataType::Bytes { max_len: Some(max) }, Datum::Bytes(b)) => Some((*max, b.len())),
        _ => None,
    };
    if let Some((max_len, length)) = length
        && length > max_len as usize
    {
        return Err(Error::ValueTooLong {
            table: table.name.clone(),
            column: column.name.clone(),
            max_len,
            length,
        });
    }
    Ok(converted)
}

/// `value` (already of the column's stored type) as the narrower type the column was declared
/// with: an integer must be in its range, a REAL is rounded to single precision, a CHAR(n)
/// loses its trailing blanks (they are padding, given back when it is read).
fn fit_declared(
    table: &TableDef,
    column: &ColumnDef,
    declared: Declared,
    value: Datum,
) -> Result<Datum> {
    let out_of_range = |value: String| Error::OutOfRange {
        table: table.name.clone(),
        column: column.name.clone(),
        expected: column
            .declared_type()
            .unwrap_or_else(|| column.data_type.to_string()),
        value,
    };
    Ok(match (declared, value) {
        (Declared::SmallInt | Declared::Integer, Datum::Int(v)) => {
            if declared
                .integer_range()
                .is_some_and(|range| !range.contains(&v))
            {
                return Err(out_of_range(v.to_string()));
            }
            Datum::Int(v)
        }
        (Declared::Real, Datum::Float(v)) => {
            let single = v as f32;
            if v.is_finite() && !single.is_finite() {
                return Err(out_of_range(v.to_string()));
            }
            Datum::Float(f64::from(single))
        }
        (Declared::Char, Datum::Text(s)) if s.ends_with(' ') => {
            Datum::Text(s.trim_end_matches(' ').to_string())
        }
        (Declared::Json, Datum::Text(s)) => {
            json::parse_json(&s)?;
            Datum::Text(s)
        }
        (Declared::Jsonb, Datum::Text(s)) => Datum::Text(json::Jsonb::parse(&s)?.to_text()),
        (_, value) => value,
    })
}

/// `text` read as a value of the number or boolean type `data_type` (surrounding spaces
/// allowed, as PostgreSQL allows them), None when it does not read as one.
fn number_from_text(data_type: &DataType, text: &str) -> Option<Datum> {
    let text = text.trim();
    match data_type {
        DataType::Integer => text.parse::<i64>().ok().map(Datum::Int),
        DataType::Float => text
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() || !text.contains(|c: char| c.is_ascii_digit()))
            .map(Datum::Float),
        DataType::Decimal { scale, .. } => decimal_from_text(text, *scale).map(Datum::Decimal),
        DataType::Boolean => match text.to_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Some(Datum::Boolean(true)),
            "f" | "false" | "n" | "no" | "off" | "0" => Some(Datum::Boolean(false)),
            _ => None,
        },
        _ => None,
    }
}

/// A DECIMAL's units at `scale` as decimal text (`-1235` at scale 2 is `-12.35`).
fn decimal_text(units: i128, scale: i8) -> String {
    let digits = units.unsigned_abs().to_string();
    let scale = usize::try_from(scale).unwrap_or(0);
    let sign = if units < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

/// A full-width row of `table` holding `values` in the `targets` columns (converted by
/// [`assign`]) and the `defaults` row's values elsewhere (each column's DEFAULT, or NULL). Each
/// value is produced and converted in column order, so the first bad value is the one
/// reported. The caller checks that there is one value per target.
pub fn full_row(
    table: &TableDef,
    defaults: &[Datum],
    targets: &[usize],
    values: impl IntoIterator<Item = Result<Datum>>,
) -> Result<Vec<Datum>> {
    let mut row = defaults.to_vec();
    row.resize(table.columns.len(), Datum::Null);
    for (&column, value) in targets.iter().zip(values) {
        let def = &table.columns[column];
        row[column] = match value? {
            // What DEFAULT gives a generated column: its value is computed when written.
            Datum::Null if def.is_generated() => Datum::Null,
            value => assign(table, def, value)?,
        };
    }
    Ok(row)
}

/// The type of a table column (INTEGER for a position past the end, which no caller passes).
pub fn column_type(table: &TableDef, column: usize) -> DataType {
    table
        .columns
        .get(column)
        .map_or(DataType::Integer, |c| c.data_type)
}

/// The value as the column's own type, only when the conversion loses nothing: comparing the
/// column with the converted value must mean exactly what comparing it with the original does.
/// Both executors bind values with it, so they agree on which comparisons they take.
pub fn exact_value(table: &TableDef, column: usize, value: Datum) -> Option<Datum> {
    let data_type = column_type(table, column);
    if data_type.admits(&value) {
        return Some(value);
    }
    match (data_type, value) {
        (DataType::Float, Datum::Int(v)) if (v as f64) as i64 == v => Some(Datum::Float(v as f64)),
        (DataType::Integer, Datum::Float(v)) if v.fract() == 0.0 && v.abs() < 9.0e15 => {
            Some(Datum::Int(v as i64))
        }
        (DataType::Uuid, Datum::Text(s)) => rowdex_codec::parse_uuid(&s).map(Datum::Uuid),
        _ => None,
    }
}

/// The value at `row` of `array` as a key value of `column`, for probing its key: None when it
/// is NULL or cannot be represented exactly in the column's type (then it equals no value of
/// the column). A DECIMAL is rescaled exactly to the column's scale.
pub(crate) fn key_datum(
    table: &TableDef,
    column: usize,
    array: &dyn Array,
    row: usize,
) -> Result<Option<Datum>> {
    if array.is_null(row) {
        return Ok(None);
    }
    if let (Some(decimals), DataType::Decimal { scale, .. }) = (
        array.as_any().downcast_ref::<Decimal128Array>(),
        column_type(table, column),
    ) {
        let from = decimals.scale();
        let value = decimals.value(row);
        let rescaled = if scale >= from {
            let up = u32::try_from(i32::from(scale) - i32::from(from)).unwrap_or(u32::MAX);
            10i128.checked_pow(up).and_then(|f| value.checked_mul(f))
        } else {
            let down = u32::try_from(i32::from(from) - i32::from(scale)).unwrap_or(u32::MAX);
            10i128
                .checked_pow(down)
                .filter(|f| value % f == 0)
                .map(|f| value / f)
        };
        return Ok(rescaled.map(Datum::Decimal));
    }
    Ok(exact_value(table, column, datum_from_array(array, row)?))
}

/// Builds a batch of `columns` (positions in the table) from full rows.
pub fn rows_to_batch(
    table: &TableDef,
    schema: &SchemaRef,
    columns: &[usize],
    rows: &[Vec<Datum>],
) -> Result<RecordBatch> {
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|&c| column_array(table, c, rows))
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        arrays,
        &options,
    )?)
}

pub(crate) fn column_array(table: &TableDef, column: usize, rows: &[Vec<Datum>]) -> ArrayRef {
    let values = rows.iter().map(|r| r.get(column).unwrap_or(&Datum::Null));
    datum_array(&column_type(table, column), values)
}

/// An Arrow array of `data_type` holding `values` (a value of another type is NULL).
pub(crate) fn datum_array<'a>(
    data_type: &DataType,
    values: impl Iterator<Item = &'a Datum>,
) -> ArrayRef {
    match *data_type {
        DataType::Boolean => Arc::new(
            values
                .map(|d| match d {
                    Datum::Boolean(b) => Some(*b),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        DataType::Integer => Arc::new(
            values
                .map(|d| match d {
                    Datum::Int(v) => Some(*v),
                    _ => None,
                })
                .collect::<Int64Array>(),
        ),
        DataType::Float => Arc::new(
            values
                .map(|d| match d {
                    Datum::Float(v) => Some(*v),
                    _ => None,
                })
                .collect::<Float64Array>(),
        ),
        DataType::Decimal { precision, scale } => {
            let array = values
                .map(|d| match d {
                    Datum::Decimal(v) => Some(*v),
                    _ => None,
                })
                .collect::<Decimal128Array>();
            // Precision and scale come from a validated column definition.
            Arc::new(
                array
                    .clone()
                    .with_precision_and_scale(precision, scale)
                    .unwrap_or(array),
            )
        }
        DataType::Text { .. } => Arc::new(
            values
                .map(|d| match d {
                    Datum::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<StringArray>(),
        ),
        DataType::Bytes { .. } => Arc::new(
            values
                .map(|d| match d {
                    Datum::Bytes(b) => Some(b.as_slice()),
                    _ => None,
                })
                .collect::<BinaryArray>(),
        ),
        DataType::Date => Arc::new(
            values
                .map(|d| match d {
                    Datum::Date(v) => Some(*v),
                    _ => None,
                })
                .collect::<Date32Array>(),
        ),
        DataType::Timestamp => Arc::new(
            values
                .map(|d| match d {
                    Datum::Timestamp(v) => Some(*v),
                    _ => None,
                })
                .collect::<TimestampMicrosecondArray>(),
        ),
        DataType::TimestampTz => Arc::new(
            values
                .map(|d| match d {
                    Datum::Timestamp(v) => Some(*v),
                    _ => None,
                })
                .collect::<TimestampMicrosecondArray>()
                .with_timezone(STORED_TIME_ZONE),
        ),
        DataType::Uuid => Arc::new(
            values
                .map(|d| match d {
                    Datum::Uuid(v) => Some(format_uuid(v)),
                    _ => None,
                })
                .collect::<StringArray>(),
        ),
        DataType::Array { element } => {
            let texts: Vec<Option<&str>> = values
                .map(|d| match d {
                    Datum::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect();
            let rows = texts.len();
            // Stored texts are canonical; one that does not read (none should) is NULL.
            arrays::list_array(element, texts).unwrap_or_else(|_| {
                datafusion::arrow::array::new_null_array(&arrays::list_type(element), rows)
            })
        }
    }
}
