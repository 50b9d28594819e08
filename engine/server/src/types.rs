//! Values between the wire and rowdex: the PostgreSQL type of each Arrow column rowdex returns,
//! result batches encoded as DataRow messages (text or binary, by arrow-pg), and a bound
//! parameter's bytes decoded into a [`Datum`] by the type the client sent or rowdex inferred.

use std::sync::Arc;

use arrow_pg::datatypes::{arrow_schema_to_pg_fields, encode_recordbatch, into_pg_type};
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};
use pgwire::api::Type;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::results::FieldInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use rowdex::Datum;
use rowdex::arrow::datatypes::{DataType as ArrowType, Field, SchemaRef};
use rowdex::arrow::record_batch::RecordBatch;
use rowdex_codec::format_timestamp;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use crate::arrays::{array_of, binary_array_text, is_array};
use crate::declared::{to_wire, wire_column, wire_schema};
use crate::sqlstate::{
    INVALID_PARAMETER_VALUE, INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE, error_info,
};
use crate::{jsons, lists, timestamps, uuids};

/// Microseconds in a day.
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The PostgreSQL type a parameter of Arrow field `field` is described as: its column's
/// declared type where it takes one (see `declared`), else its Arrow type's; TEXT where rowdex
/// does not know the type (the client then sends text, which rowdex coerces).
pub fn parameter_type(field: Option<&Field>) -> Type {
    let Some(field) = field else {
        return Type::TEXT;
    };
    let column = wire_column(field);
    // A list (`x = ANY($1)`) is an array of its element's type, unless its column declares
    // what its text elements are (uuid[], jsonb[]).
    if let (ArrowType::List(element), None) = (field.data_type(), &column.pg_type) {
        return array_of(&parameter_type(Some(element))).unwrap_or(Type::TEXT_ARRAY);
    }
    column
        .pg_type
        .or_else(|| into_pg_type(&column.arrow).ok())
        .filter(|t| *t != Type::UNKNOWN)
        .unwrap_or(Type::TEXT)
}

/// The row description of a result with `schema`, each column in the format the client asked,
/// typed as PostgreSQL types it (see `declared`).
pub fn row_fields(schema: &SchemaRef, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    wire_fields(&wire_schema(schema), format)
}

/// The row description of a result sent as `wire` (a `declared::wire_schema`).
pub fn wire_fields(wire: &SchemaRef, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    let fields = arrow_schema_to_pg_fields(wire, format, None)?;
    Ok(fields
        .into_iter()
        .zip(wire.fields())
        .map(|(info, field)| {
            let column = wire_column(field);
            let info = match column.pg_type {
                Some(pg_type) => FieldInfo::new(
                    info.name().to_string(),
                    info.table_id(),
                    info.column_id(),
                    pg_type,
                    info.format(),
                ),
                None => info,
            };
            info.with_type_modifier(column.type_modifier)
        })
        .collect())
}

/// Every row of `batches` as DataRow messages for `fields`, the columns sent as `wire` (the
/// `declared::wire_schema` of the schema an earlier Describe gave, or of the result's own):
/// each batch is cast to those types (see `declared::to_wire`; DataFusion may hand over
/// `Utf8View` where its plan says `Utf8`), so that the rows match what the client decodes them
/// by.
pub fn data_rows(
    fields: &Arc<Vec<FieldInfo>>,
    batches: Vec<RecordBatch>,
    wire: &SchemaRef,
) -> PgWireResult<Vec<PgWireResult<DataRow>>> {
    let mut rows = Vec::new();
    for batch in batches {
        if batch.num_columns() != wire.fields().len() {
            return Err(PgWireError::UserError(Box::new(error_info(
                "XX000",
                format!(
                    "the statement returned {} columns where its description had {}",
                    batch.num_columns(),
                    wire.fields().len()
                ),
            ))));
        }
        let batch = to_wire(batch, wire).map_err(|e| {
            PgWireError::UserError(Box::new(error_info(
                NUMERIC_VALUE_OUT_OF_RANGE,
                e.to_string(),
            )))
        })?;
        let batch = uuids::binary_columns(batch, fields).map_err(|e| {
            PgWireError::UserError(Box::new(error_info(
                INVALID_TEXT_REPRESENTATION,
                e.to_string(),
            )))
        })?;
        let batch = jsons::binary_columns(batch, fields).map_err(|e| {
            PgWireError::UserError(Box::new(error_info(
                INVALID_TEXT_REPRESENTATION,
                e.to_string(),
            )))
        })?;
        let batch = lists::binary_columns(batch, fields).map_err(|e| {
            PgWireError::UserError(Box::new(error_info(
                INVALID_TEXT_REPRESENTATION,
                e.to_string(),
            )))
        })?;
        let batch = timestamps::text_columns(batch, fields)
            .map_err(|e| PgWireError::UserError(Box::new(error_info("22008", e.to_string()))))?;
        let (batch, encoding) = lists::text_columns(batch, fields)
            .map_err(|e| PgWireError::UserError(Box::new(error_info("XX000", e.to_string()))))?;
        rows.extend(encode_recordbatch(encoding, batch));
    }
    Ok(rows)
}

/// A parameter the client sent as a `timestamp` (`pg_type`) for a slot of type timestamptz
/// (`slot`, rowdex's inference): a time of the session's wall clock, as PostgreSQL casts it,
/// so it travels on as its text without an offset, which the column or comparison reads in
/// the session's zone. psycopg sends a naive `datetime` so. Any other datum is left as it is.
pub fn naive_for_instant(datum: Datum, pg_type: &Type, slot: Option<&Field>) -> Datum {
    match datum {
        Datum::Timestamp(micros)
            if *pg_type == Type::TIMESTAMP && parameter_type(slot) == Type::TIMESTAMPTZ =>
        {
            Datum::Text(rowdex::time_zone::postgres_timestamp(micros))
        }
        other => other,
    }
}

/// Parameter `index` of `portal` as a datum, read as `pg_type` in the format the client sent.
pub fn parameter_datum<S: Clone>(
    portal: &Portal<S>,
    index: usize,
    pg_type: &Type,
) -> PgWireResult<Datum> {
    let datum = match *pg_type {
        Type::BOOL => portal
            .parameter::<bool>(index, pg_type)?
            .map(Datum::Boolean),
        Type::INT2 => in_range(
            portal.parameter::<i16>(index, pg_type),
            portal,
            index,
            "smallint",
        )?
        .map(|v| Datum::Int(v.into())),
        Type::INT4 => in_range(
            portal.parameter::<i32>(index, pg_type),
            portal,
            index,
            "integer",
        )?
        .map(|v| Datum::Int(v.into())),
        Type::INT8 => portal.parameter::<i64>(index, pg_type)?.map(Datum::Int),
        Type::OID => portal
            .parameter::<u32>(index, pg_type)?
            .map(|v| Datum::Int(v.into())),
        Type::FLOAT4 => portal
            .parameter::<f32>(index, pg_type)?
            .map(|v| Datum::Float(v.into())),
        Type::FLOAT8 => portal.parameter::<f64>(index, pg_type)?.map(Datum::Float),
        Type::NUMERIC => portal
            .parameter::<Decimal>(index, pg_type)?
            .map(numeric_datum),
        Type::BYTEA => portal
            .parameter::<Vec<u8>>(index, pg_type)?
            .map(Datum::Bytes),
        Type::DATE => portal
            .parameter::<NaiveDate>(index, pg_type)?
            .map(|d| Datum::Date(days_since_epoch(d))),
        Type::TIMESTAMP => portal
            .parameter::<NaiveDateTime>(index, pg_type)?
            .map(|t| Datum::Timestamp(t.and_utc().timestamp_micros())),
        // An instant travels on as text that names its offset: read (in any of PostgreSQL's
        // forms, a time without an offset in the session's zone) where it meets a column.
        Type::TIMESTAMPTZ if !portal.parameter_format.is_binary(index) => {
            let Some(bytes) = parameter_bytes(portal, index)? else {
                return Ok(Datum::Null);
            };
            Some(Datum::Text(String::from_utf8_lossy(bytes).into_owned()))
        }
        Type::TIMESTAMPTZ => portal
            .parameter::<DateTime<FixedOffset>>(index, pg_type)?
            .map(|t| Datum::Text(format!("{}+00", format_timestamp(t.timestamp_micros())))),
        Type::UUID if portal.parameter_format.is_binary(index) => {
            let Some(bytes) = parameter_bytes(portal, index)? else {
                return Ok(Datum::Null);
            };
            return uuids::binary_parameter(bytes).ok_or_else(|| {
                PgWireError::UserError(Box::new(error_info(
                    INVALID_PARAMETER_VALUE,
                    format!(
                        "parameter ${}: {} bytes are no binary uuid",
                        index + 1,
                        bytes.len()
                    ),
                )))
            });
        }
        Type::JSON | Type::JSONB if portal.parameter_format.is_binary(index) => {
            let Some(bytes) = parameter_bytes(portal, index)? else {
                return Ok(Datum::Null);
            };
            return jsons::binary_parameter(bytes, pg_type).map_err(|message| {
                PgWireError::UserError(Box::new(error_info(
                    INVALID_PARAMETER_VALUE,
                    format!("parameter ${}: {message}", index + 1),
                )))
            });
        }
        // An array travels as its text (see `arrays`).
        ref array if is_array(array) && portal.parameter_format.is_binary(index) => {
            return binary_array_datum(portal, index);
        }
        _ => return text_datum(portal, index),
    };
    Ok(datum.unwrap_or(Datum::Null))
}

/// Parameter `index`'s bytes as the client sent them; None for NULL.
fn parameter_bytes<S>(portal: &Portal<S>, index: usize) -> PgWireResult<Option<&[u8]>> {
    portal
        .parameters
        .get(index)
        .map(|bytes| bytes.as_deref())
        .ok_or(PgWireError::ParameterIndexOutOfBound(index))
}

/// A binary array parameter as the array's text.
fn binary_array_datum<S>(portal: &Portal<S>, index: usize) -> PgWireResult<Datum> {
    let Some(bytes) = parameter_bytes(portal, index)? else {
        return Ok(Datum::Null);
    };
    binary_array_text(bytes)
        .map(Datum::Text)
        .map_err(|message| {
            PgWireError::UserError(Box::new(error_info(
                INVALID_PARAMETER_VALUE,
                format!("parameter ${}: {message}", index + 1),
            )))
        })
}

/// A narrow integer parameter as decoded, or, where its text is an integer too wide for the
/// type, PostgreSQL's out-of-range error (22003) rather than a decoding failure.
fn in_range<S, T>(
    decoded: PgWireResult<Option<T>>,
    portal: &Portal<S>,
    index: usize,
    type_name: &str,
) -> PgWireResult<Option<T>> {
    let Err(error) = decoded else {
        return decoded;
    };
    let text = parameter_bytes(portal, index)
        .ok()
        .flatten()
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .filter(|text| text.trim().parse::<i128>().is_ok());
    match text {
        Some(text) => Err(PgWireError::UserError(Box::new(error_info(
            NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "value \"{}\" is out of range for type {type_name}",
                text.trim()
            ),
        )))),
        None => Err(error),
    }
}

/// A parameter of a type rowdex takes as text (TEXT, VARCHAR, a type it does not know): its
/// bytes must be UTF-8 whatever the format.
fn text_datum<S>(portal: &Portal<S>, index: usize) -> PgWireResult<Datum> {
    let Some(bytes) = parameter_bytes(portal, index)? else {
        return Ok(Datum::Null);
    };
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(Datum::Text(text.to_string())),
        Err(_) => Err(PgWireError::UserError(Box::new(error_info(
            INVALID_PARAMETER_VALUE,
            format!("parameter ${} is not UTF-8 text", index + 1),
        )))),
    }
}

/// A NUMERIC parameter: an integer when it has no fraction, a double otherwise (rowdex's
/// DECIMAL columns take either).
fn numeric_datum(value: Decimal) -> Datum {
    if value.fract().is_zero()
        && let Some(int) = value.to_i64()
    {
        return Datum::Int(int);
    }
    value.to_f64().map_or(Datum::Null, Datum::Float)
}

fn days_since_epoch(date: NaiveDate) -> i32 {
    let micros = date
        .and_hms_opt(0, 0, 0)
        .map_or(0, |t| t.and_utc().timestamp_micros());
    i32::try_from(micros.div_euclid(MICROS_PER_DAY)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_count_days_from_1970() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).map(days_since_epoch);
        assert_eq!(day(1970, 1, 1), Some(0));
        assert_eq!(day(1970, 1, 2), Some(1));
        assert_eq!(day(1969, 12, 31), Some(-1));
        assert_eq!(day(2000, 3, 1), Some(11017));
    }

    #[test]
    fn numerics_keep_integers_exact() {
        assert_eq!(numeric_datum(Decimal::new(42, 0)), Datum::Int(42));
        assert_eq!(numeric_datum(Decimal::new(15, 1)), Datum::Float(1.5));
    }

    #[test]
    fn unknown_parameters_are_described_as_text() {
        assert_eq!(parameter_type(None), Type::TEXT);
        let field = |t| Field::new("$1", t, true);
        assert_eq!(parameter_type(Some(&field(ArrowType::Int64))), Type::INT8);
        assert_eq!(parameter_type(Some(&field(ArrowType::Null))), Type::TEXT);
    }
}
