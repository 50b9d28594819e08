//! Column types from their SQL spelling: every common alias (INT, BIGINT, VARCHAR(n), DOUBLE
//! PRECISION, TIMESTAMPTZ, JSONB, ...), the narrower type PostgreSQL's rules record, and
//! arrays of the scalar types (`INTEGER[]`, `TEXT[]`).

use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rowdex_catalog::{ArrayElement, ColumnDef, DataType, Declared};

use crate::error::{Error, Result};
use crate::sql::semantics::Semantics;

/// Reads a column type from its SQL spelling: the type that stores it and, under PostgreSQL's
/// rules, the narrower type it was declared as (see [`Declared`]). Under SQLite's every
/// integer is 64-bit and every float a double, whatever the spelling.
pub(crate) fn parse_type(
    data_type: &ast::DataType,
    semantics: Semantics,
) -> Result<(DataType, Option<Declared>)> {
    if let ast::DataType::Array(
        ast::ArrayElemTypeDef::SquareBracket(inner, None)
        | ast::ArrayElemTypeDef::AngleBracket(inner),
    ) = data_type
    {
        return array_type(inner, semantics);
    }
    let text = data_type.to_string().to_uppercase();
    // SQLite's dialect reads `TEXT[]` as a type of that name: the element type before `[]`.
    if let Some(element) = text.strip_suffix("[]") {
        let element = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(element)
            .and_then(|mut parser| parser.parse_data_type())
            .map_err(|_| Error::UnknownType { name: text.clone() })?;
        return array_type(&element, semantics);
    }
    let (base, args) = match text.split_once('(') {
        Some((base, rest)) => (base.trim(), rest.trim_end_matches(')')),
        None => (text.trim(), ""),
    };
    let numbers: Vec<u32> = args
        .split(',')
        .filter_map(|a| a.split_whitespace().next()?.parse().ok())
        .collect();
    let unknown = || Error::UnknownType { name: text.clone() };
    let parsed = match base {
        "BOOLEAN" | "BOOL" => DataType::Boolean,
        "TINYINT" | "SMALLINT" | "INT" | "INTEGER" | "BIGINT" | "INT2" | "INT4" | "INT8"
        | "MEDIUMINT" | "INT64" => DataType::Integer,
        "REAL" | "FLOAT" | "DOUBLE" | "DOUBLE PRECISION" | "FLOAT4" | "FLOAT8" | "FLOAT64" => {
            DataType::Float
        }
        "DECIMAL" | "NUMERIC" | "DEC" => {
            let precision = numbers.first().copied().unwrap_or(38);
            let scale = numbers.get(1).copied().unwrap_or(0);
            if precision == 0 || precision > 38 || scale > precision {
                return Err(unknown());
            }
            DataType::Decimal {
                precision: precision as u8,
                scale: scale as i8,
            }
        }
        "VARCHAR" | "CHAR" | "CHARACTER" | "CHARACTER VARYING" | "NVARCHAR" | "NCHAR"
        | "CHAR VARYING" => DataType::Text {
            max_len: numbers.first().copied(),
        },
        "TEXT" | "STRING" | "CLOB" => DataType::Text { max_len: None },
        "VARBINARY" | "BINARY" => DataType::Bytes {
            max_len: numbers.first().copied(),
        },
        "BYTEA" | "BLOB" | "BYTES" => DataType::Bytes { max_len: None },
        "DATE" => DataType::Date,
        // `TIMESTAMP(3) WITH TIME ZONE` spells its zone after the precision.
        "TIMESTAMP" if text.ends_with(" WITH TIME ZONE") => DataType::TimestampTz,
        "TIMESTAMP" | "DATETIME" | "TIMESTAMP WITHOUT TIME ZONE" => DataType::Timestamp,
        "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => DataType::TimestampTz,
        "UUID" => DataType::Uuid,
        // Text that must be JSON, under either rules: what it holds is not SQLite's to widen.
        "JSON" => return Ok((DataType::Text { max_len: None }, Some(Declared::Json))),
        "JSONB" => return Ok((DataType::Text { max_len: None }, Some(Declared::Jsonb))),
        _ => return Err(unknown()),
    };
    if semantics != Semantics::PostgreSql {
        return Ok((parsed, None));
    }
    let declared = match base {
        "SMALLINT" | "INT2" => Some(Declared::SmallInt),
        "INT" | "INTEGER" | "INT4" => Some(Declared::Integer),
        "REAL" | "FLOAT4" => Some(Declared::Real),
        // FLOAT(p) with p up to 24 is PostgreSQL's REAL.
        "FLOAT" if numbers.first().is_some_and(|p| *p <= 24) => Some(Declared::Real),
        "CHAR" | "CHARACTER" | "NCHAR" => Some(Declared::Char),
        "VARCHAR" | "CHARACTER VARYING" | "NVARCHAR" | "CHAR VARYING" => Some(Declared::Varchar),
        _ => None,
    };
    let parsed = match (declared, parsed) {
        // CHAR without a length is CHAR(1).
        (Some(Declared::Char), DataType::Text { max_len: None }) => {
            DataType::Text { max_len: Some(1) }
        }
        (_, parsed) => parsed,
    };
    Ok((parsed, declared))
}

/// An array column's type from its element's spelling (`INTEGER[]`, `TEXT[]`): the element
/// as PostgreSQL declares it (an `INT` is an int4, a `BIGINT` an int8, under either rules).
fn array_type(
    element: &ast::DataType,
    semantics: Semantics,
) -> Result<(DataType, Option<Declared>)> {
    let unsupported = || Error::Unsupported {
        what: format!(
            "arrays of {element} (rowdex has arrays of BOOLEAN, SMALLINT, INTEGER, BIGINT, REAL, DOUBLE PRECISION, NUMERIC, TEXT, VARCHAR, BYTEA, DATE, TIMESTAMP, TIMESTAMPTZ, UUID, JSON and JSONB, of one dimension)"
        ),
    };
    let (stored, declared) = parse_type(element, Semantics::PostgreSql)?;
    let _ = semantics;
    let element = match (stored, declared) {
        (DataType::Boolean, _) => ArrayElement::Bool,
        (DataType::Integer, Some(Declared::SmallInt)) => ArrayElement::Int2,
        (DataType::Integer, Some(Declared::Integer)) => ArrayElement::Int4,
        (DataType::Integer, None) => ArrayElement::Int8,
        (DataType::Float, Some(Declared::Real)) => ArrayElement::Float4,
        (DataType::Float, None) => ArrayElement::Float8,
        (DataType::Text { .. }, Some(Declared::Varchar | Declared::Char)) => ArrayElement::Varchar,
        (DataType::Text { .. }, None) => ArrayElement::Text,
        (DataType::Date, _) => ArrayElement::Date,
        (DataType::Timestamp, _) => ArrayElement::Timestamp,
        (DataType::TimestampTz, _) => ArrayElement::TimestampTz,
        (DataType::Decimal { precision, scale }, _) => ArrayElement::Numeric { precision, scale },
        (DataType::Uuid, _) => ArrayElement::Uuid,
        (DataType::Text { .. }, Some(Declared::Jsonb)) => ArrayElement::Jsonb,
        (DataType::Text { .. }, Some(Declared::Json)) => ArrayElement::Json,
        (DataType::Bytes { max_len: None }, _) => ArrayElement::Bytea,
        _ => return Err(unsupported()),
    };
    Ok((DataType::Array { element }, None))
}

/// Refuses an array column in a primary key, a unique constraint or an index: its stored text
/// does not sort as PostgreSQL orders arrays, so no key of it would answer a range.
pub(crate) fn refuse_array_key(column: &ColumnDef) -> Result<()> {
    if let DataType::Array { .. } = column.data_type {
        return Err(Error::Unsupported {
            what: format!(
                "the array column {} in a key or an index (an array is compared as a whole by = and searched by = ANY and @>, which read the rows)",
                column.name
            ),
        });
    }
    Ok(())
}
