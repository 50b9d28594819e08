//! Result columns as PostgreSQL types them. rowdex keeps every integer in 64 bits, every float
//! as a double and every string as text; a column declared narrower under PostgreSQL's rules
//! (INTEGER, SMALLINT, REAL, CHAR(n), VARCHAR(n)) carries its declared type in its Arrow
//! field's metadata (`rowdex::DECLARED_TYPE`). On the wire it is described as that type (int4,
//! int2, float4, bpchar, varchar, with the length as type modifier) and its values are sent
//! as that type: narrowed, and CHAR(n) padded with blanks to its length, as PostgreSQL stores
//! it. A column of no declared type is sent as its Arrow type says; a result column that is an
//! untyped NULL is text, as PostgreSQL resolves an unknown literal.

use std::sync::Arc;

use pgwire::api::Type;
use rowdex::DECLARED_TYPE;
use rowdex::arrow::array::{Array, ArrayRef, StringArray, StringBuilder};
use rowdex::arrow::compute::{CastOptions, cast_with_options};
use rowdex::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use rowdex::arrow::error::ArrowError;
use rowdex::arrow::record_batch::RecordBatch;

/// How one result column travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireColumn {
    /// The Arrow type its values are cast to before they are encoded.
    pub arrow: ArrowType,
    /// The PostgreSQL type it is described as, where the Arrow type alone does not say it
    /// (VARCHAR, CHAR: both are Utf8).
    pub pg_type: Option<Type>,
    /// `atttypmod`: a character type's length plus 4, else -1.
    pub type_modifier: i32,
    /// CHAR(n): the length its values are padded to.
    pub pad_to: Option<usize>,
}

/// How `field` travels: by its declared type where it has one that applies to its Arrow type
/// (a cast of an INTEGER column to text keeps the metadata, not the meaning), else as is.
pub fn wire_column(field: &Field) -> WireColumn {
    let stored = field.data_type();
    let plain = WireColumn {
        arrow: match stored {
            ArrowType::Null => ArrowType::Utf8,
            other => other.clone(),
        },
        pg_type: None,
        type_modifier: -1,
        pad_to: None,
    };
    let Some(declared) = field.metadata().get(DECLARED_TYPE) else {
        return plain;
    };
    let (base, length) = match declared.split_once('(') {
        Some((base, rest)) => (base, rest.trim_end_matches(')').parse::<i32>().ok()),
        None => (declared.as_str(), None),
    };
    let text = matches!(
        stored,
        ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::LargeUtf8
    );
    let narrowed = |arrow: ArrowType| WireColumn {
        arrow,
        ..plain.clone()
    };
    let character = |pg_type: Type, pad: bool| WireColumn {
        arrow: ArrowType::Utf8,
        pg_type: Some(pg_type),
        type_modifier: length.map_or(-1, |n| n.saturating_add(4)),
        pad_to: if pad {
            length.and_then(|n| usize::try_from(n).ok())
        } else {
            None
        },
    };
    match (base, stored) {
        ("SMALLINT", ArrowType::Int64) => narrowed(ArrowType::Int16),
        ("INTEGER", ArrowType::Int64) => narrowed(ArrowType::Int32),
        ("REAL", ArrowType::Float64) => narrowed(ArrowType::Float32),
        ("CHAR", _) if text => character(Type::BPCHAR, true),
        ("VARCHAR", _) if text => character(Type::VARCHAR, false),
        // Its canonical text; sent as 16 bytes in binary format (`uuids`).
        ("UUID", _) if text => WireColumn {
            arrow: ArrowType::Utf8,
            pg_type: Some(Type::UUID),
            ..plain
        },
        // Their text; a jsonb in binary format gets its version byte (`jsons`).
        ("JSON", _) if text => WireColumn {
            arrow: ArrowType::Utf8,
            pg_type: Some(Type::JSON),
            ..plain
        },
        ("JSONB", _) if text => WireColumn {
            arrow: ArrowType::Utf8,
            pg_type: Some(Type::JSONB),
            ..plain
        },
        // Lists of those texts (`lists` sends them).
        ("UUID[]", ArrowType::List(_)) => WireColumn {
            pg_type: Some(Type::UUID_ARRAY),
            ..plain
        },
        ("JSONB[]", ArrowType::List(_)) => WireColumn {
            pg_type: Some(Type::JSONB_ARRAY),
            ..plain
        },
        ("JSON[]", ArrowType::List(_)) => WireColumn {
            pg_type: Some(Type::JSON_ARRAY),
            ..plain
        },
        _ => plain,
    }
}

/// `schema` as its rows are sent: each field of the Arrow type [`wire_column`] gives it,
/// keeping its name and metadata.
pub fn wire_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let arrow = wire_column(field).arrow;
            field
                .as_ref()
                .clone()
                .with_data_type(arrow)
                .with_nullable(true)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its columns as `wire` (a [`wire_schema`] with as many fields) sends them:
/// cast where the types differ (an INTEGER's 64-bit values to 32 bits: a value that does not
/// fit is an error, never a wrapped number), CHAR(n) values padded to their length.
pub fn to_wire(batch: RecordBatch, wire: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    let strict = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let columns = batch
        .columns()
        .iter()
        .zip(wire.fields())
        .map(|(column, field)| {
            let column = if column.data_type() == field.data_type() {
                column.clone()
            } else {
                cast_with_options(column, field.data_type(), &strict)?
            };
            Ok(match wire_column(field).pad_to {
                Some(length) => padded(&column, length),
                None => column,
            })
        })
        .collect::<Result<Vec<_>, ArrowError>>()?;
    RecordBatch::try_new(wire.clone(), columns)
}

/// The strings of `column` padded with blanks to `length` characters, built in one reused
/// buffer and copied into the new array's (no string allocated per value).
fn padded(column: &ArrayRef, length: usize) -> ArrayRef {
    let Some(strings) = column.as_any().downcast_ref::<StringArray>() else {
        return column.clone();
    };
    let bytes = strings.value_data().len() + strings.len() * length;
    let mut padded = StringBuilder::with_capacity(strings.len(), bytes);
    let mut text = String::with_capacity(length);
    for value in strings {
        let Some(s) = value else {
            padded.append_null();
            continue;
        };
        // An ASCII string counts its characters in bytes.
        let characters = if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        };
        text.clear();
        text.push_str(s);
        text.extend(std::iter::repeat_n(' ', length.saturating_sub(characters)));
        padded.append_value(&text);
    }
    Arc::new(padded.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex::arrow::array::{Float64Array, Int64Array};
    use std::collections::HashMap;

    fn declared(name: &str, arrow: ArrowType, declared: &str) -> Field {
        Field::new(name, arrow, true).with_metadata(HashMap::from([(
            DECLARED_TYPE.to_string(),
            declared.to_string(),
        )]))
    }

    #[test]
    fn declared_types_narrow_what_they_apply_to() {
        let int = wire_column(&declared("a", ArrowType::Int64, "INTEGER"));
        assert_eq!(int.arrow, ArrowType::Int32);
        let real = wire_column(&declared("r", ArrowType::Float64, "REAL"));
        assert_eq!(real.arrow, ArrowType::Float32);
        let char = wire_column(&declared("c", ArrowType::Utf8, "CHAR(5)"));
        assert_eq!(
            (char.pg_type, char.type_modifier, char.pad_to),
            (Some(Type::BPCHAR), 9, Some(5))
        );
        let varchar = wire_column(&declared("v", ArrowType::Utf8, "VARCHAR"));
        assert_eq!(
            (varchar.pg_type, varchar.type_modifier),
            (Some(Type::VARCHAR), -1)
        );
        // A cast to text kept the INTEGER column's metadata: it is text.
        let cast = wire_column(&declared("a", ArrowType::Utf8, "INTEGER"));
        assert_eq!((cast.arrow, cast.pg_type), (ArrowType::Utf8, None));
        assert_eq!(
            wire_column(&Field::new("n", ArrowType::Null, true)).arrow,
            ArrowType::Utf8
        );
    }

    #[test]
    fn values_are_sent_narrowed_and_padded() {
        let schema = Schema::new(vec![
            declared("a", ArrowType::Int64, "SMALLINT"),
            declared("r", ArrowType::Float64, "REAL"),
            declared("c", ArrowType::Utf8, "CHAR(3)"),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![
                Arc::new(Int64Array::from(vec![Some(7), None])),
                Arc::new(Float64Array::from(vec![0.5, 1.0])),
                Arc::new(StringArray::from(vec![Some("ab"), Some("")])),
            ],
        )
        .expect("batch");
        let wire = wire_schema(&schema);
        let sent = to_wire(batch, &wire).expect("fits");
        assert_eq!(sent.column(0).data_type(), &ArrowType::Int16);
        assert_eq!(sent.column(1).data_type(), &ArrowType::Float32);
        let chars = sent
            .column(2)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("text");
        assert_eq!((chars.value(0), chars.value(1)), ("ab ", "   "));
    }

    #[test]
    fn a_value_that_does_not_fit_is_an_error() {
        let schema = Schema::new(vec![declared("a", ArrowType::Int64, "SMALLINT")]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(Int64Array::from(vec![40_000]))],
        )
        .expect("batch");
        assert!(to_wire(batch, &wire_schema(&schema)).is_err());
    }
}
