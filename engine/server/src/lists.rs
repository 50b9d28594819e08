//! Arrays in text format as PostgreSQL writes them (`{1,2}`, `{a,"b c",NULL}`, `{t,f}`,
//! `{1.5,2}`): rowdex's text of each list value (`rowdex::format::list_texts`), which the
//! encoder writes as it is. arrow-pg wrote each element by its own rules (`2.0` for a float,
//! no quoting of an element with a space). Binary format is arrow-pg's, PostgreSQL's array
//! send format, but for arrays of UUID and jsonb, whose elements are text to arrow-pg: their
//! send format is rowdex's (`rowdex::array_send`), 16-byte and versioned elements.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use rowdex::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, RecordBatch, StringArray};
use rowdex::arrow::datatypes::DataType as ArrowType;
use rowdex::arrow::error::ArrowError;
use rowdex::format::list_texts;

use crate::wire_columns::replace_columns;

/// `batch` with each list column that goes out in text format turned into PostgreSQL's text,
/// and the fields to encode it with: such a column's as text, which the encoder writes as it
/// is (it would quote the whole text as one element of an array type). The client was
/// described the array type already.
pub fn text_columns(
    batch: RecordBatch,
    fields: &Arc<Vec<FieldInfo>>,
) -> Result<(RecordBatch, Arc<Vec<FieldInfo>>), ArrowError> {
    let text: Vec<bool> = (0..batch.num_columns())
        .map(|i| {
            fields
                .get(i)
                .is_some_and(|field| field.format() == FieldFormat::Text)
                && matches!(batch.column(i).data_type(), ArrowType::List(_))
        })
        .collect();
    if !text.contains(&true) {
        return Ok((batch, fields.clone()));
    }
    let batch = replace_columns(
        batch,
        |i| text[i],
        &ArrowType::Utf8,
        |_, column| array_texts(column),
    )?;
    let encoding = fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            if text.get(i).copied().unwrap_or(false) {
                FieldInfo::new(
                    field.name().to_string(),
                    field.table_id(),
                    field.column_id(),
                    Type::TEXT,
                    FieldFormat::Text,
                )
            } else {
                field.clone()
            }
        })
        .collect();
    Ok((batch, Arc::new(encoding)))
}

/// `batch` with each uuid[] or jsonb[] column that goes out in binary format turned into its
/// values' send format, which the encoder writes as they are.
pub fn binary_columns(batch: RecordBatch, fields: &[FieldInfo]) -> Result<RecordBatch, ArrowError> {
    let declared = |i: usize| {
        let field = fields.get(i)?;
        if field.format() != FieldFormat::Binary {
            return None;
        }
        match *field.datatype() {
            Type::UUID_ARRAY => Some("UUID[]"),
            Type::JSONB_ARRAY => Some("JSONB[]"),
            Type::JSON_ARRAY => Some("JSON[]"),
            _ => None,
        }
    };
    replace_columns(
        batch,
        |i| declared(i).is_some(),
        &ArrowType::Binary,
        |i, column| array_bytes(column, declared(i)),
    )
}

/// Each list value of `column` in the array send format of a column declared `declared`.
fn array_bytes(column: &ArrayRef, declared: Option<&str>) -> Result<ArrayRef, ArrowError> {
    let lists = column.as_list_opt::<i32>().ok_or_else(|| {
        ArrowError::CastError(format!("an array column came as {}", column.data_type()))
    })?;
    let mut out = BinaryBuilder::new();
    for row in 0..lists.len() {
        if lists.is_null(row) {
            out.append_null();
            continue;
        }
        let bytes = rowdex::array_send(lists.value(row).as_ref(), declared)
            .map_err(|error| ArrowError::CastError(error.to_string()))?;
        out.append_value(bytes);
    }
    Ok(Arc::new(out.finish()))
}

fn array_texts(column: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let texts = list_texts(column.as_ref()).ok_or_else(|| {
        ArrowError::CastError(format!("an array column came as {}", column.data_type()))
    })?;
    Ok(Arc::new(StringArray::from(texts)))
}
