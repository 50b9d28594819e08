//! Parameter types from casts: `$1::int2`, `CAST($2 AS VARCHAR)`. PostgreSQL types a
//! parameter by the cast applied to it, and drivers rely on it: asyncpg encodes each value by
//! the type Describe reports, SQLAlchemy casts every bound value (`%(x)s::VARCHAR`). DataFusion
//! types a placeholder only where it meets a column, so a prepared statement's description
//! fills the parameters it leaves untyped from the casts found here.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType as ArrowType, Field, TimeUnit};
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType, ExactNumberInfo, Expr, Statement, TimezoneInfo, Value,
    visit_expressions,
};

use crate::values::{STORED_TIME_ZONE, uuid_field};

/// The Arrow field of each parameter `$n` that `statement` casts (index n - 1, named `$n`), the
/// first cast of a parameter deciding; None for the others. A UUID travels as text whose
/// field declares it (`values::DECLARED_TYPE`), so a client is told it is a uuid.
pub(crate) fn parameter_casts(statement: &Statement, parameters: usize) -> Vec<Option<Field>> {
    let mut types = vec![None; parameters];
    let _ = visit_expressions(statement, |expr| {
        if let Expr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
            && let Expr::Value(value) = inner.as_ref()
            && let Value::Placeholder(name) = &value.value
            && let Some(index) = name
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| n.checked_sub(1))
            && let Some(slot) = types.get_mut(index)
            && slot.is_none()
        {
            *slot = cast_field(&format!("${}", index + 1), data_type);
        }
        ControlFlow::<()>::Continue(())
    });
    types
}

/// The field of a parameter named `name` cast to `data_type`.
fn cast_field(name: &str, data_type: &DataType) -> Option<Field> {
    Some(match data_type {
        DataType::Uuid => uuid_field(name, true),
        DataType::Array(
            ArrayElemTypeDef::SquareBracket(element, _)
            | ArrayElemTypeDef::AngleBracket(element)
            | ArrayElemTypeDef::Parenthesis(element),
        ) if **element == DataType::Uuid => Field::new(
            name,
            ArrowType::List(Arc::new(uuid_field(Field::LIST_FIELD_DEFAULT_NAME, true))),
            true,
        ),
        other => Field::new(name, arrow_type(other)?, true),
    })
}

/// The Arrow type rowdex reads a SQL type as, for the types a parameter is cast to.
fn arrow_type(data_type: &DataType) -> Option<ArrowType> {
    Some(match data_type {
        DataType::SmallInt(_) | DataType::Int2(_) => ArrowType::Int16,
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => ArrowType::Int32,
        DataType::BigInt(_) | DataType::Int8(_) => ArrowType::Int64,
        DataType::Real | DataType::Float4 => ArrowType::Float32,
        DataType::Float(_) | DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 => {
            ArrowType::Float64
        }
        DataType::Numeric(info) | DataType::Decimal(info) | DataType::Dec(info) => match info {
            ExactNumberInfo::PrecisionAndScale(p, s) => {
                ArrowType::Decimal128(u8::try_from(*p).ok()?, i8::try_from(*s).ok()?)
            }
            ExactNumberInfo::Precision(p) => ArrowType::Decimal128(u8::try_from(*p).ok()?, 0),
            ExactNumberInfo::None => ArrowType::Decimal128(38, 10),
        },
        DataType::Boolean | DataType::Bool => ArrowType::Boolean,
        DataType::Text
        | DataType::Varchar(_)
        | DataType::CharacterVarying(_)
        | DataType::CharVarying(_)
        | DataType::Char(_)
        | DataType::Character(_)
        | DataType::String(_) => ArrowType::Utf8,
        DataType::Bytea => ArrowType::Binary,
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp(_, TimezoneInfo::Tz | TimezoneInfo::WithTimeZone) => {
            ArrowType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(STORED_TIME_ZONE)))
        }
        DataType::Timestamp(..) => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Uuid => ArrowType::Utf8,
        // `$1::int[]`: an array, which `sql::array_lists` reads as a list of values.
        DataType::Array(
            ArrayElemTypeDef::SquareBracket(element, _)
            | ArrayElemTypeDef::AngleBracket(element)
            | ArrayElemTypeDef::Parenthesis(element),
        ) => ArrowType::List(Arc::new(Field::new_list_field(arrow_type(element)?, true))),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::DECLARED_TYPE;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn casts_type_their_parameters() {
        let statement = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT $1::int2, CAST($2 AS VARCHAR(3)), $3, $1::text, $4::numeric(10,2), $5::uuid, \
             $6::uuid[]",
        )
        .expect("parses")
        .remove(0);
        let casts = parameter_casts(&statement, 6);
        let types: Vec<Option<ArrowType>> = casts
            .iter()
            .map(|f| f.as_ref().map(|f| f.data_type().clone()))
            .collect();
        assert_eq!(
            types[..4],
            [
                Some(ArrowType::Int16),
                Some(ArrowType::Utf8),
                None,
                Some(ArrowType::Decimal128(10, 2)),
            ]
        );
        let uuid = casts[4].as_ref().expect("$5 is cast");
        assert_eq!(
            (uuid.name().as_str(), uuid.metadata().get(DECLARED_TYPE)),
            ("$5", Some(&"UUID".to_string()))
        );
        let Some(ArrowType::List(element)) = casts[5].as_ref().map(|f| f.data_type().clone())
        else {
            panic!("$6 is a list: {:?}", casts[5]);
        };
        assert_eq!(
            element.metadata().get(DECLARED_TYPE),
            Some(&"UUID".to_string())
        );
    }
}
