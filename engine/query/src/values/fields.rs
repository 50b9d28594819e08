//! The Arrow side of a table's columns: each column type's Arrow type, the field of a column
//! (with the declared type in its metadata), a table's schema, and the fields of the types that
//! travel as text (UUID, JSON).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use rowdex_catalog::{ColumnDef, DataType, TableDef};

use crate::values::arrays::list_type;

pub fn arrow_type(data_type: &DataType) -> ArrowType {
    match data_type {
        DataType::Boolean => ArrowType::Boolean,
        DataType::Integer => ArrowType::Int64,
        DataType::Float => ArrowType::Float64,
        DataType::Decimal { precision, scale } => ArrowType::Decimal128(*precision, *scale),
        DataType::Text { .. } => ArrowType::Utf8,
        DataType::Bytes { .. } => ArrowType::Binary,
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        DataType::TimestampTz => {
            ArrowType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(STORED_TIME_ZONE)))
        }
        // Its canonical text, which sorts as its bytes do; the field's metadata says UUID.
        DataType::Uuid => ArrowType::Utf8,
        DataType::Array { element } => list_type(*element),
    }
}

pub use crate::time_zone::STORED_TIME_ZONE;

/// The field metadata key under which a column's declared type travels with its values (see
/// [`column_field`]).
pub const DECLARED_TYPE: &str = "rowdex.declared_type";

/// A text field of `name` whose values are of the type `declared` (UUID, JSON, JSONB) spells:
/// such a type travels through Arrow as its text.
pub(crate) fn declared_text_field(name: &str, nullable: bool, declared: &str) -> Field {
    Field::new(name, ArrowType::Utf8, nullable).with_metadata(HashMap::from([(
        DECLARED_TYPE.to_string(),
        declared.to_string(),
    )]))
}

/// The declared type `field` carries, if any (see [`column_field`]).
pub(crate) fn declared_type_of(field: &Field) -> Option<&str> {
    field.metadata().get(DECLARED_TYPE).map(String::as_str)
}

/// A text field of `name` whose values are UUIDs (their canonical text): a UUID column's
/// field, a UUID function's result, a parameter cast to uuid.
pub(crate) fn uuid_field(name: &str, nullable: bool) -> Field {
    declared_text_field(name, nullable, "UUID")
}

/// Whether `field`'s values are UUIDs (see [`uuid_field`]).
pub(crate) fn is_uuid_field(field: &Field) -> bool {
    declared_type_of(field) == Some("UUID")
}

/// The Arrow field of a table's column. A column declared narrower than it is stored (INTEGER,
/// REAL, VARCHAR(n), ...) carries the declared type's SQL spelling in its metadata under
/// [`DECLARED_TYPE`]; DataFusion keeps a field's metadata through projections, filters, sorts
/// and joins, so a result's column still says what it was declared as (the PostgreSQL server
/// describes and sends it so).
pub fn column_field(column: &ColumnDef) -> Field {
    let field = Field::new(&column.name, arrow_type(&column.data_type), column.nullable);
    match column.declared_type() {
        Some(declared) => {
            field.with_metadata(HashMap::from([(DECLARED_TYPE.to_string(), declared)]))
        }
        None => field,
    }
}

/// The Arrow schema of `columns` (positions in the table) of a table.
pub fn table_schema(table: &TableDef, columns: &[usize]) -> SchemaRef {
    let fields: Vec<Field> = columns
        .iter()
        .filter_map(|i| table.columns.get(*i))
        .map(column_field)
        .collect();
    Arc::new(Schema::new(fields))
}

/// `schema` with its fields renamed, in order, to `names` (a result's own column names, which
/// may repeat).
pub fn renamed_schema<S: AsRef<str>>(schema: &Schema, names: &[S]) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(names)
        .map(|(field, name)| field.as_ref().clone().with_name(name.as_ref()))
        .collect();
    Arc::new(Schema::new(fields))
}

/// The column type that holds a query's values of Arrow type `arrow`.
pub fn stored_type(arrow: &ArrowType) -> Option<DataType> {
    Some(match arrow {
        ArrowType::Boolean => DataType::Boolean,
        ArrowType::Int8
        | ArrowType::Int16
        | ArrowType::Int32
        | ArrowType::Int64
        | ArrowType::UInt8
        | ArrowType::UInt16
        | ArrowType::UInt32 => DataType::Integer,
        ArrowType::UInt64 | ArrowType::Float16 | ArrowType::Float32 | ArrowType::Float64 => {
            DataType::Float
        }
        ArrowType::Decimal128(precision, scale) if *scale >= 0 && *precision <= 38 => {
            DataType::Decimal {
                precision: *precision,
                scale: *scale,
            }
        }
        // A column of NULLs only (`SELECT NULL AS x`) takes text, as PostgreSQL's `unknown`.
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View | ArrowType::Null => {
            DataType::Text { max_len: None }
        }
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
            DataType::Bytes { max_len: None }
        }
        ArrowType::Date32 | ArrowType::Date64 => DataType::Date,
        ArrowType::Timestamp(_, None) => DataType::Timestamp,
        ArrowType::Timestamp(_, Some(_)) => DataType::TimestampTz,
        _ => return None,
    })
}
