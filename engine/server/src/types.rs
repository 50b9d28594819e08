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
use rowdex::arrow::compute::cast;
use rowdex::arrow::datatypes::{DataType as ArrowType, SchemaRef};
use rowdex::arrow::record_batch::RecordBatch;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use crate::sqlstate::{INVALID_PARAMETER_VALUE, error_info};

/// Microseconds in a day.
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The PostgreSQL type a parameter of Arrow type `arrow` is described as (TEXT where rowdex
/// does not know the type: the client then sends text, which rowdex coerces).
pub fn parameter_type(arrow: Option<&ArrowType>) -> Type {
    arrow
        .and_then(|t| into_pg_type(t).ok())
        .filter(|t| *t != Type::UNKNOWN)
        .unwrap_or(Type::TEXT)
}

/// The row description of a result with `schema`, each column in the format the client asked.
pub fn row_fields(schema: &SchemaRef, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    arrow_schema_to_pg_fields(schema, format, None)
}

/// Every row of `batches` as DataRow messages for `fields`. Where a batch's column type is not
/// the one `described` (the schema sent in an earlier Describe) says, it is cast to it first,
/// so that the rows match the description the client decodes them by.
pub fn data_rows(
    fields: &Arc<Vec<FieldInfo>>,
    batches: Vec<RecordBatch>,
    described: Option<&SchemaRef>,
) -> PgWireResult<Vec<PgWireResult<DataRow>>> {
    let mut rows = Vec::new();
    for batch in batches {
        let batch = match described {
            Some(schema) => conform(batch, schema)?,
            None => batch,
        };
        rows.extend(encode_recordbatch(fields.clone(), batch));
    }
    Ok(rows)
}

/// `batch` with its columns cast to the types of `schema` where they differ.
fn conform(batch: RecordBatch, schema: &SchemaRef) -> PgWireResult<RecordBatch> {
    if batch.num_columns() != schema.fields().len() {
        return Err(PgWireError::UserError(Box::new(error_info(
            "XX000",
            format!(
                "the statement returned {} columns where its description had {}",
                batch.num_columns(),
                schema.fields().len()
            ),
        ))));
    }
    let same = batch
        .schema()
        .fields()
        .iter()
        .zip(schema.fields())
        .all(|(have, want)| have.data_type() == want.data_type());
    if same {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| cast(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PgWireError::ApiError(Box::new(e)))?;
    let relaxed = Arc::new(rowdex::arrow::datatypes::Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    RecordBatch::try_new(relaxed, columns).map_err(|e| PgWireError::ApiError(Box::new(e)))
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
        Type::INT2 => portal
            .parameter::<i16>(index, pg_type)?
            .map(|v| Datum::Int(v.into())),
        Type::INT4 => portal
            .parameter::<i32>(index, pg_type)?
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
        Type::TIMESTAMPTZ => portal
            .parameter::<DateTime<FixedOffset>>(index, pg_type)?
            .map(|t| Datum::Timestamp(t.timestamp_micros())),
        _ => return text_datum(portal, index),
    };
    Ok(datum.unwrap_or(Datum::Null))
}

/// A parameter of a type rowdex takes as text (TEXT, VARCHAR, a type it does not know): its
/// bytes must be UTF-8 whatever the format.
fn text_datum<S>(portal: &Portal<S>, index: usize) -> PgWireResult<Datum> {
    let Some(bytes) = portal
        .parameters
        .get(index)
        .ok_or(PgWireError::ParameterIndexOutOfBound(index))?
    else {
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
        assert_eq!(parameter_type(Some(&ArrowType::Int64)), Type::INT8);
        assert_eq!(parameter_type(Some(&ArrowType::Null)), Type::TEXT);
    }
}
