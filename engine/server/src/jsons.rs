//! `json` and `jsonb` on the wire. rowdex hands a JSON column over as its text (Arrow Utf8
//! whose field metadata declares JSON or JSONB, see `declared`). In text format that text is
//! the value; in binary format a `json` is its text too, and a `jsonb` is its text after a
//! version byte (1), as PostgreSQL's `jsonb_send` writes it and clients such as asyncpg read
//! it. A parameter arrives in either format and is read as the text the column's conversion
//! parses.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{FieldFormat, FieldInfo};
use rowdex::Datum;
use rowdex::arrow::array::{Array, ArrayRef, BinaryBuilder, StringArray};
use rowdex::arrow::datatypes::DataType as ArrowType;
use rowdex::arrow::error::ArrowError;
use rowdex::arrow::record_batch::RecordBatch;

use crate::wire_columns::replace_columns;

/// The version byte of `jsonb`'s binary format.
const JSONB_VERSION: u8 = 1;

/// A binary JSON parameter of `pg_type` as its text; an error for a `jsonb` of another
/// version or bytes that are not UTF-8.
pub fn binary_parameter(bytes: &[u8], pg_type: &Type) -> Result<Datum, String> {
    let text = if *pg_type == Type::JSONB {
        match bytes.split_first() {
            Some((&JSONB_VERSION, text)) => text,
            Some((version, _)) => {
                return Err(format!("unsupported jsonb version number {version}"));
            }
            None => return Err("a binary jsonb without its version byte".to_string()),
        }
    } else {
        bytes
    };
    std::str::from_utf8(text)
        .map(|text| Datum::Text(text.to_string()))
        .map_err(|_| "a binary json that is not UTF-8".to_string())
}

/// `batch` (already as the wire sends it) with each JSON column that goes out in binary
/// format turned into the bytes PostgreSQL sends, which the encoder writes as they are.
pub fn binary_columns(batch: RecordBatch, fields: &[FieldInfo]) -> Result<RecordBatch, ArrowError> {
    let chosen = |i: usize| {
        fields.get(i).is_some_and(|field| {
            (field.datatype() == &Type::JSON || field.datatype() == &Type::JSONB)
                && field.format() == FieldFormat::Binary
        })
    };
    replace_columns(batch, chosen, &ArrowType::Binary, |i, column| {
        json_bytes(column, fields[i].datatype() == &Type::JSONB)
    })
}

/// The texts of `column` as binary values, after the version byte for a `jsonb`.
fn json_bytes(column: &ArrayRef, jsonb: bool) -> Result<ArrayRef, ArrowError> {
    let Some(texts) = column.as_any().downcast_ref::<StringArray>() else {
        return Err(ArrowError::CastError(format!(
            "a json column came as {}",
            column.data_type()
        )));
    };
    let prefix: &[u8] = if jsonb { &[JSONB_VERSION] } else { &[] };
    let mut out = BinaryBuilder::with_capacity(texts.len(), texts.value_data().len() + texts.len());
    let mut value = Vec::new();
    for text in texts {
        match text {
            None => out.append_null(),
            Some(text) => {
                value.clear();
                value.extend_from_slice(prefix);
                value.extend_from_slice(text.as_bytes());
                out.append_value(&value);
            }
        }
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_jsonb_parameter_loses_its_version_byte() {
        assert_eq!(
            binary_parameter(b"\x01{\"a\": 1}", &Type::JSONB),
            Ok(Datum::Text("{\"a\": 1}".to_string()))
        );
        assert!(binary_parameter(b"\x02{}", &Type::JSONB).is_err());
        assert_eq!(
            binary_parameter(b"[1]", &Type::JSON),
            Ok(Datum::Text("[1]".to_string()))
        );
    }
}
