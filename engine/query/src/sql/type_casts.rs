//! Casts to the types DataFusion's planner does not know, UUID, JSON and JSONB: `CAST(x AS
//! UUID)`, `x::uuid` and the typed literal `UUID '...'` become `to_uuid(x)`
//! (`functions::uuid`), which checks the text and gives its canonical form, as PostgreSQL's
//! `uuid_in` reads it; `x::json` becomes `json_in(x)` and `x::jsonb` `jsonb_in(x)`
//! (`functions::json`).
//!
//! A VALUES list wants each column typed alike in every row (DataFusion compares the fields'
//! metadata, where these types travel): where one row casts a column to such a type, the
//! other rows' values of that column are cast too, as PostgreSQL resolves the column's type.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, Query, SetExpr, VisitMut, VisitorMut,
    visit_expressions_mut,
};

/// The function a cast to UUID is rewritten to.
pub(crate) const TO_UUID_FUNCTION: &str = "to_uuid";
/// The function a cast to JSON is rewritten to.
pub(crate) const JSON_IN_FUNCTION: &str = "json_in";
/// The function a cast to JSONB is rewritten to.
pub(crate) const JSONB_IN_FUNCTION: &str = "jsonb_in";

/// The function a cast to `data_type` is rewritten to, for the types this module handles.
fn cast_function(data_type: &SqlType) -> Option<&'static str> {
    match data_type {
        SqlType::Uuid => Some(TO_UUID_FUNCTION),
        SqlType::JSON => Some(JSON_IN_FUNCTION),
        SqlType::JSONB => Some(JSONB_IN_FUNCTION),
        _ => None,
    }
}

/// The function `expr` casts with, where it is a cast (or typed literal) of such a type.
fn cast_of(expr: &Expr) -> Option<&'static str> {
    match expr {
        Expr::Cast { data_type, .. } => cast_function(data_type),
        Expr::TypedString(typed) => cast_function(&typed.data_type),
        _ => None,
    }
}

/// Rewrites every cast to UUID, JSON or JSONB in `statement` (or a lone expression) into a
/// call of its function.
pub(crate) fn casts_as_calls<V: VisitMut>(statement: &mut V) {
    let _ = statement.visit(&mut ValuesColumns);
    let _ = visit_expressions_mut(statement, |expr| {
        let Some(function) = cast_of(expr) else {
            return ControlFlow::<()>::Continue(());
        };
        let operand = match expr {
            Expr::Cast { expr: operand, .. } => {
                std::mem::replace(operand.as_mut(), Expr::value(null()))
            }
            Expr::TypedString(typed) => Expr::Value(typed.value.clone()),
            _ => return ControlFlow::Continue(()),
        };
        *expr = call(function, operand);
        ControlFlow::Continue(())
    });
}

/// Casts every value of a VALUES column where some row of it is cast (see the module docs);
/// runs before the casts become calls.
struct ValuesColumns;

impl VisitorMut for ValuesColumns {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let SetExpr::Values(values) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        let width = values.rows.iter().map(|row| row.len()).max().unwrap_or(0);
        for column in 0..width {
            let Some(function) = values
                .rows
                .iter()
                .find_map(|row| row.get(column).and_then(cast_of))
            else {
                continue;
            };
            for row in &mut values.rows {
                if let Some(expr) = row.get_mut(column)
                    && cast_of(expr).is_none()
                {
                    let value = std::mem::replace(expr, Expr::value(null()));
                    *expr = call(function, value);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn null() -> datafusion::sql::sqlparser::ast::Value {
    datafusion::sql::sqlparser::ast::Value::Null
}

fn call(function: &str, operand: Expr) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(function)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(operand))],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).expect("parses");
        casts_as_calls(&mut statements[0]);
        statements[0].to_string()
    }

    #[test]
    fn every_spelling_of_a_uuid_cast_is_a_call() {
        assert_eq!(
            rewritten("SELECT CAST(a AS UUID), 'x'::uuid, UUID 'y', a::text FROM t"),
            "SELECT to_uuid(a), to_uuid('x'), to_uuid('y'), a::TEXT FROM t"
        );
    }

    #[test]
    fn json_casts_are_calls() {
        assert_eq!(
            rewritten("SELECT CAST(a AS JSON), '{}'::jsonb, JSONB '[1]' FROM t"),
            "SELECT json_in(a), jsonb_in('{}'), jsonb_in('[1]') FROM t"
        );
    }

    #[test]
    fn a_values_column_cast_in_one_row_is_cast_in_all() {
        assert_eq!(
            rewritten("INSERT INTO t VALUES ('a', 1), ('b'::uuid, 2), (NULL, 3)"),
            "INSERT INTO t VALUES (to_uuid('a'), 1), (to_uuid('b'), 2), (to_uuid(NULL), 3)"
        );
    }
}
