//! Timestamps in text format as PostgreSQL writes them: `2024-01-01 10:31:00`, the fraction of
//! a second only where there is one and without its trailing zeros (`10:31:00.25`), and a
//! `timestamptz` in the zone its column carries (the session's, `rowdex::time_zone`) with that
//! zone's offset (`2024-01-01 11:31:00+01`). arrow-pg writes every fraction to six digits and
//! no offset, which psql shows and applications comparing text see.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use rowdex::arrow::array::{ArrayRef, RecordBatch, StringArray};
use rowdex::arrow::compute::cast;
use rowdex::arrow::datatypes::DataType as ArrowType;
use rowdex::arrow::error::ArrowError;
use rowdex::format;

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

/// The values of a timestamp column (any unit, with or without a zone) as PostgreSQL's text
/// (`rowdex::format::timestamp_texts`); `zoned` ones in the zone the column's type carries
/// (UTC when it carries none), others as the wall-clock time of the instant in UTC.
fn timestamp_texts(column: &ArrayRef, zoned: bool) -> Result<ArrayRef, ArrowError> {
    let column = match (zoned, column.data_type()) {
        (true, ArrowType::Timestamp(unit, None)) => cast(
            column,
            &ArrowType::Timestamp(*unit, Some(Arc::from("+00:00"))),
        )?,
        (false, ArrowType::Timestamp(unit, Some(_))) => {
            cast(column, &ArrowType::Timestamp(*unit, None))?
        }
        _ => column.clone(),
    };
    let texts = format::timestamp_texts(column.as_ref()).ok_or_else(|| {
        ArrowError::CastError(format!("a timestamp column came as {}", column.data_type()))
    })?;
    Ok(Arc::new(StringArray::from(texts)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex::arrow::array::TimestampMicrosecondArray;

    fn texts(column: ArrayRef, zoned: bool) -> Vec<String> {
        let texts = timestamp_texts(&column, zoned).expect("timestamps convert");
        let texts = texts
            .as_any()
            .downcast_ref::<rowdex::arrow::array::StringArray>()
            .expect("text");
        texts
            .iter()
            .map(|t| t.unwrap_or("NULL").to_string())
            .collect()
    }

    #[test]
    fn zoned_values_are_written_in_their_columns_zone() {
        // 2024-01-01 10:31:00 UTC.
        let base = 1_704_105_060_000_000;
        let values = TimestampMicrosecondArray::from(vec![base, base + 250_000]);
        assert_eq!(
            texts(Arc::new(values.clone()), false),
            ["2024-01-01 10:31:00", "2024-01-01 10:31:00.25"]
        );
        let utc = values.clone().with_timezone("+00:00");
        assert_eq!(
            texts(Arc::new(utc), true),
            ["2024-01-01 10:31:00+00", "2024-01-01 10:31:00.25+00"]
        );
        let berlin = values.with_timezone("Europe/Berlin");
        assert_eq!(
            texts(Arc::new(berlin), true),
            ["2024-01-01 11:31:00+01", "2024-01-01 11:31:00.25+01"]
        );
    }
}
