//! Timestamps in text format as PostgreSQL writes them: `2024-01-01 10:31:00`, the fraction of
//! a second only where there is one and without its trailing zeros (`10:31:00.25`), and a
//! `timestamptz` with its offset (`+00`: sessions run in UTC). arrow-pg writes every fraction
//! to six digits and no offset, which psql shows and applications comparing text see.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use rowdex::arrow::array::{
    Array, ArrayRef, RecordBatch, StringBuilder, TimestampMicrosecondArray,
};
use rowdex::arrow::compute::cast;
use rowdex::arrow::datatypes::{DataType as ArrowType, TimeUnit};
use rowdex::arrow::error::ArrowError;
use rowdex_codec::format_timestamp;

use crate::wire_columns::replace_columns;

/// `batch` (already as the wire sends it) with each timestamp column that goes out in text
/// format turned into PostgreSQL's text, which the encoder writes as it is.
pub fn text_columns(batch: RecordBatch, fields: &[FieldInfo]) -> Result<RecordBatch, ArrowError> {
    let text: Vec<bool> = (0..batch.num_columns())
        .map(|i| {
            fields.get(i).is_some_and(|field| {
                (field.datatype() == &Type::TIMESTAMP || field.datatype() == &Type::TIMESTAMPTZ)
                    && field.format() == FieldFormat::Text
            }) && matches!(batch.column(i).data_type(), ArrowType::Timestamp(..))
        })
        .collect();
    replace_columns(
        batch,
        |i| text[i],
        &ArrowType::Utf8,
        |i, column| timestamp_texts(column, fields[i].datatype() == &Type::TIMESTAMPTZ),
    )
}

/// The values of a timestamp column (any unit, with or without a zone) as PostgreSQL's text.
fn timestamp_texts(column: &ArrayRef, zoned: bool) -> Result<ArrayRef, ArrowError> {
    let micros = cast(column, &ArrowType::Timestamp(TimeUnit::Microsecond, None))?;
    let Some(micros) = micros.as_any().downcast_ref::<TimestampMicrosecondArray>() else {
        return Err(ArrowError::CastError(format!(
            "a timestamp column came as {}",
            column.data_type()
        )));
    };
    let mut out = StringBuilder::with_capacity(micros.len(), micros.len() * 29);
    for value in micros {
        match value {
            None => out.append_null(),
            Some(value) => out.append_value(postgres_timestamp(value, zoned)),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// One timestamp as PostgreSQL writes it in UTC.
pub fn postgres_timestamp(micros: i64, zoned: bool) -> String {
    let mut text = format_timestamp(micros);
    if let Some(point) = text.rfind('.')
        && text[point + 1..].chars().all(|c| c.is_ascii_digit())
    {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(trimmed.max(point));
    }
    if zoned {
        text.push_str("+00");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_lose_trailing_zeros() {
        // 2024-01-01 10:31:00 UTC.
        let base = 1_704_105_060_000_000;
        assert_eq!(postgres_timestamp(base, false), "2024-01-01 10:31:00");
        assert_eq!(
            postgres_timestamp(base + 250_000, false),
            "2024-01-01 10:31:00.25"
        );
        assert_eq!(
            postgres_timestamp(base + 1, true),
            "2024-01-01 10:31:00.000001+00"
        );
        assert_eq!(postgres_timestamp(base, true), "2024-01-01 10:31:00+00");
    }
}
