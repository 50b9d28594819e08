//! `'{1,2}'::int[]`, `CAST('{a,b}' AS TEXT[])`: a text literal cast to an array type becomes
//! `array_in('{1,2}', 'int4')` (`functions::arrays`), which reads the text as PostgreSQL's
//! `array_in` does; Arrow has no cast from text to a list. A cast of anything else to an array
//! type (a list already) is DataFusion's.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlType, ExactNumberInfo, Expr, TimezoneInfo, Value, VisitMut,
    visit_expressions_mut,
};

use crate::sql::interval_products::call;

/// PostgreSQL's name of the element type an array cast names, for the element types rowdex's
/// arrays hold (`numeric(10,2)` with its precision and scale).
fn element_name(element: &SqlType) -> Option<String> {
    let fixed = match element {
        SqlType::Boolean | SqlType::Bool => "bool",
        SqlType::SmallInt(_) | SqlType::Int2(_) => "int2",
        SqlType::Int(_) | SqlType::Integer(_) | SqlType::Int4(_) => "int4",
        SqlType::BigInt(_) | SqlType::Int8(_) => "int8",
        SqlType::Real | SqlType::Float4 => "float4",
        SqlType::Float(_) | SqlType::Double(_) | SqlType::DoublePrecision | SqlType::Float8 => {
            "float8"
        }
        SqlType::Text | SqlType::String(_) => "text",
        SqlType::Varchar(_)
        | SqlType::CharacterVarying(_)
        | SqlType::CharVarying(_)
        | SqlType::Char(_)
        | SqlType::Character(_) => "varchar",
        SqlType::Date => "date",
        SqlType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => "timestamp",
        SqlType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => "timestamptz",
        SqlType::Uuid => "uuid",
        SqlType::JSONB => "jsonb",
        SqlType::JSON => "json",
        SqlType::Bytea => "bytea",
        SqlType::Numeric(info) | SqlType::Decimal(info) | SqlType::Dec(info) => {
            return Some(match info {
                ExactNumberInfo::None => "numeric".to_string(),
                ExactNumberInfo::Precision(precision) => format!("numeric({precision})"),
                ExactNumberInfo::PrecisionAndScale(precision, scale) => {
                    format!("numeric({precision},{scale})")
                }
            });
        }
        _ => return None,
    };
    Some(fixed.to_string())
}

/// The text of a string literal (through parentheses).
fn text_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Nested(inner) => text_literal(inner),
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) => Some(text),
            _ => None,
        },
        _ => None,
    }
}

/// Rewrites every cast of a text literal to an array type in `statement` into `array_in`.
pub(crate) fn array_casts_as_calls<V: VisitMut>(statement: &mut V) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::Cast {
            expr: operand,
            data_type:
                SqlType::Array(
                    ArrayElemTypeDef::SquareBracket(element, None)
                    | ArrayElemTypeDef::AngleBracket(element),
                ),
            ..
        } = expr
            && let Some(name) = element_name(element)
            && let Some(text) = text_literal(operand)
        {
            let text = Expr::value(Value::SingleQuotedString(text.to_string()));
            let name = Expr::value(Value::SingleQuotedString(name));
            *expr = call("array_in", vec![text, name]);
        }
        ControlFlow::<()>::Continue(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn text_cast_to_an_array_is_read_by_array_in() {
        let mut statements = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT '{1,2}'::int[], CAST('{a}' AS TEXT[]), ARRAY[1]::bigint[], '{x}'::uuid[], \
             '{1.5}'::numeric(4,1)[], '{1}'::json[]",
        )
        .expect("parses");
        array_casts_as_calls(&mut statements);
        assert_eq!(
            statements[0].to_string(),
            "SELECT array_in('{1,2}', 'int4'), array_in('{a}', 'text'), ARRAY[1]::BIGINT[], \
             array_in('{x}', 'uuid'), array_in('{1.5}', 'numeric(4,1)'), array_in('{1}', 'json')"
        );
    }
}
