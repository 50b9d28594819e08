//! Casts to UUID, which DataFusion's planner does not know: `CAST(x AS UUID)`, `x::uuid` and
//! the typed literal `UUID '...'` become `to_uuid(x)` (`df::uuid_functions`), which checks the
//! text and gives its canonical form, as PostgreSQL's `uuid_in` reads it.
//!
//! A VALUES list wants each column typed alike in every row (DataFusion compares the fields'
//! metadata, where a uuid's type travels): where one row casts a column to UUID, the other
//! rows' values of that column are cast too, as PostgreSQL resolves the column's type.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, Query, SetExpr, VisitMut, VisitorMut,
    visit_expressions_mut,
};

/// The function a cast to UUID is rewritten to.
pub(crate) const TO_UUID_FUNCTION: &str = "to_uuid";

/// Rewrites every cast to UUID in `statement` (or a lone expression) into a call of
/// [`TO_UUID_FUNCTION`].
pub(crate) fn casts_as_calls<V: VisitMut>(statement: &mut V) {
    let _ = statement.visit(&mut ValuesColumns);
    let _ = visit_expressions_mut(statement, |expr| {
        let operand = match expr {
            Expr::Cast {
                expr: operand,
                data_type: SqlType::Uuid,
                ..
            } => std::mem::replace(operand.as_mut(), Expr::value(null())),
            Expr::TypedString(typed) if typed.data_type == SqlType::Uuid => {
                Expr::Value(typed.value.clone())
            }
            _ => return ControlFlow::<()>::Continue(()),
        };
        *expr = to_uuid_call(operand);
        ControlFlow::Continue(())
    });
}

/// Casts every value of a VALUES column to UUID where some row of it is cast (see the module
/// docs); runs before the casts become calls.
struct ValuesColumns;

impl VisitorMut for ValuesColumns {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let SetExpr::Values(values) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        let width = values.rows.iter().map(|row| row.len()).max().unwrap_or(0);
        for column in 0..width {
            let cast = |expr: &Expr| {
                matches!(
                    expr,
                    Expr::Cast {
                        data_type: SqlType::Uuid,
                        ..
                    }
                ) || matches!(expr, Expr::TypedString(typed) if typed.data_type == SqlType::Uuid)
            };
            if !values
                .rows
                .iter()
                .any(|row| row.get(column).is_some_and(cast))
            {
                continue;
            }
            for row in &mut values.rows {
                if let Some(expr) = row.get_mut(column)
                    && !cast(expr)
                {
                    let value = std::mem::replace(expr, Expr::value(null()));
                    *expr = to_uuid_call(value);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn null() -> datafusion::sql::sqlparser::ast::Value {
    datafusion::sql::sqlparser::ast::Value::Null
}

fn to_uuid_call(operand: Expr) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(TO_UUID_FUNCTION)]),
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
    fn a_values_column_cast_in_one_row_is_cast_in_all() {
        assert_eq!(
            rewritten("INSERT INTO t VALUES ('a', 1), ('b'::uuid, 2), (NULL, 3)"),
            "INSERT INTO t VALUES (to_uuid('a'), 1), (to_uuid('b'), 2), (to_uuid(NULL), 3)"
        );
    }
}
