//! Generation and index expressions as PostgreSQL deparses them (`pg_get_expr` of a generated
//! column's `pg_attrdef.adbin`, `information_schema.columns.generation_expression`,
//! `pg_get_indexdef` of an index on an expression): an operator expression in parentheses of
//! its own, a function call as it is.

use rowdex::datafusion::sql::sqlparser::ast::Expr;
use rowdex::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use rowdex::datafusion::sql::sqlparser::parser::Parser;

/// A generation or index expression as PostgreSQL deparses one: an operator expression in
/// parentheses (`(points * 2)`), a function call or a name as it is (`lower(email)`).
pub fn postgres_expression(sql: &str) -> String {
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_expr());
    let Ok(mut expr) = parsed else {
        return sql.to_string();
    };
    while let Expr::Nested(inner) = expr {
        expr = *inner;
    }
    match expr {
        Expr::Function(_) | Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_) => {
            expr.to_string()
        }
        other => format!("({other})"),
    }
}

/// Whether PostgreSQL writes the deparsed expression `text` bare in an index's column list (a
/// function call) rather than in parentheses of its own.
pub fn is_call(text: &str) -> bool {
    text.ends_with(')')
        && text.find('(').is_some_and(|open| {
            open > 0
                && text[..open]
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_')
        })
}
