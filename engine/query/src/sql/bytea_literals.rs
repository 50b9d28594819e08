//! `'\x0001ff'::bytea` (and `CAST(... AS BYTEA)`, `BYTEA '...'`): PostgreSQL reads a string
//! cast to bytea in its hex input form, where DataFusion's cast keeps the string's own UTF-8
//! bytes (`\`, `x`, `0`, ...). A literal in the hex form becomes the binary literal
//! `X'0001ff'`, the bytes it spells; any other string is left to the cast (its bytes are the
//! same either way unless it holds a backslash, PostgreSQL's escape form, not read here).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    DataType as SqlType, Expr, Value, VisitMut, visit_expressions_mut,
};

/// Rewrites every hex-form string cast to BYTEA in `statement` as the bytes it spells.
pub(crate) fn hex_casts_as_bytes<V: VisitMut>(statement: &mut V) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Some(digits) = hex_digits(expr) {
            *expr = binary_literal(digits);
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The hex digits of a hex-form string cast to BYTEA (blanks between them dropped, as
/// PostgreSQL allows them); None for any other expression.
fn hex_digits(expr: &Expr) -> Option<String> {
    let value = match expr {
        Expr::Cast {
            expr: operand,
            data_type: SqlType::Bytea,
            ..
        } => match operand.as_ref() {
            Expr::Value(value) => &value.value,
            _ => return None,
        },
        Expr::TypedString(typed) if typed.data_type == SqlType::Bytea => &typed.value.value,
        _ => return None,
    };
    let Value::SingleQuotedString(text) = value else {
        return None;
    };
    let hex = text.strip_prefix("\\x")?;
    Some(hex.chars().filter(|c| !c.is_ascii_whitespace()).collect())
}

/// The binary literal `X'<digits>'`, which planning refuses when the digits are no hex (an odd
/// count, a letter past f), as PostgreSQL refuses the string.
fn binary_literal(digits: String) -> Expr {
    Expr::value(Value::HexStringLiteral(digits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn hex_form_casts_are_their_bytes() {
        let mut statements = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT '\\x00 01ff'::bytea, CAST('\\xAB' AS BYTEA), 'plain'::bytea, '\\x01'::text",
        )
        .expect("parses");
        hex_casts_as_bytes(&mut statements[0]);
        assert_eq!(
            statements[0].to_string(),
            "SELECT X'0001ff', X'AB', 'plain'::BYTEA, '\\x01'::TEXT"
        );
    }
}
