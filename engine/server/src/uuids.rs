//! UUIDs on the wire. rowdex hands a UUID column over as its canonical text (Arrow Utf8 whose
//! field metadata declares UUID, see `declared`); PostgreSQL's text format is that text, and
//! its binary format the 16 bytes, which clients such as asyncpg ask for. A UUID parameter
//! arrives in either format and is read as the text the column's conversion parses.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use rowdex::Datum;
use rowdex::arrow::array::{Array, ArrayRef, BinaryBuilder, StringArray};
use rowdex::arrow::datatypes::DataType as ArrowType;
use rowdex::arrow::error::ArrowError;
use rowdex::arrow::record_batch::RecordBatch;
use rowdex_codec::{format_uuid, parse_uuid};

use crate::wire_columns::replace_columns;

/// A binary UUID parameter (16 bytes) as its canonical text; None for bytes of another length.
pub fn binary_parameter(bytes: &[u8]) -> Option<Datum> {
    let bytes: [u8; 16] = bytes.try_into().ok()?;
    Some(Datum::Text(format_uuid(&bytes)))
}

/// `batch` (already as the wire sends it) with each UUID column that goes out in binary
/// format turned into its 16-byte values, which the encoder writes as they are.
pub fn binary_columns(batch: RecordBatch, fields: &[FieldInfo]) -> Result<RecordBatch, ArrowError> {
    let binary = |i: usize| {
        fields.get(i).is_some_and(|field| {
            field.datatype() == &Type::UUID && field.format() == FieldFormat::Binary
        })
    };
    replace_columns(batch, binary, &ArrowType::Binary, |_, column| {
        uuid_bytes(column)
    })
}

/// The canonical texts of `column` as 16-byte values.
fn uuid_bytes(column: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let Some(texts) = column.as_any().downcast_ref::<StringArray>() else {
        return Err(ArrowError::CastError(format!(
            "a uuid column came as {}",
            column.data_type()
        )));
    };
    let mut out = BinaryBuilder::with_capacity(texts.len(), texts.len() * 16);
    for text in texts {
        match text {
            None => out.append_null(),
            Some(text) => match parse_uuid(text) {
                Some(bytes) => out.append_value(bytes),
                None => {
                    return Err(ArrowError::CastError(format!(
                        "invalid input syntax for type uuid: \"{text}\""
                    )));
                }
            },
        }
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex::arrow::array::BinaryArray;
    use rowdex::arrow::datatypes::{Field, Schema};

    #[test]
    fn binary_columns_carry_the_bytes_and_text_columns_stay_text() {
        let text = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", ArrowType::Utf8, true),
            Field::new("b", ArrowType::Utf8, true),
        ]));
        let column: ArrayRef = Arc::new(StringArray::from(vec![Some(text), None]));
        let batch = RecordBatch::try_new(schema, vec![column.clone(), column]).expect("batch");
        let fields = vec![
            FieldInfo::new("a".into(), None, None, Type::UUID, FieldFormat::Binary),
            FieldInfo::new("b".into(), None, None, Type::UUID, FieldFormat::Text),
        ];
        let out = binary_columns(batch, &fields).expect("converted");
        let bytes = out
            .column(0)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .expect("binary");
        assert_eq!(bytes.value(0), parse_uuid(text).expect("uuid"));
        assert!(bytes.is_null(1));
        assert_eq!(out.column(1).data_type(), &ArrowType::Utf8);
        assert_eq!(
            binary_parameter(&parse_uuid(text).expect("uuid")),
            Some(Datum::Text(text.to_string()))
        );
        assert_eq!(binary_parameter(&[1, 2, 3]), None);
    }
}
