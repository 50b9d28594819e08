//! `n * INTERVAL '1 hour'`, `INTERVAL '1 day' * n` and `INTERVAL '1 day' / n` become
//! `interval_mul(interval, n)` (`functions::temporal`): DataFusion's planner has no product of
//! an interval and a number. Only an operand that is visibly an interval (an INTERVAL literal,
//! a cast to INTERVAL) is recognised, which is every interval a rowdex statement can hold: no
//! column is an INTERVAL. `age(t)` becomes `age(CAST(CURRENT_DATE AS TIMESTAMP), t)`, the
//! difference from today's midnight, as PostgreSQL defines it.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, Value, VisitMut,
    visit_expressions_mut,
};

/// Rewrites the interval products and one-argument `age` calls of `statement`.
pub(crate) fn products_as_calls<V: VisitMut>(statement: &mut V) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Some(call) = product_call(expr).or_else(|| age_from_today(expr)) {
            *expr = call;
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Whether `expr` is an interval to the eye: a literal or a cast.
fn is_interval(expr: &Expr) -> bool {
    match expr {
        Expr::Interval(_) => true,
        Expr::Cast {
            data_type: SqlType::Interval { .. },
            ..
        } => true,
        Expr::TypedString(typed) => matches!(typed.data_type, SqlType::Interval { .. }),
        Expr::Nested(inner) => is_interval(inner),
        _ => false,
    }
}

fn product_call(expr: &Expr) -> Option<Expr> {
    let Expr::BinaryOp { left, op, right } = expr else {
        return None;
    };
    match op {
        BinaryOperator::Multiply if is_interval(left) && !is_interval(right) => {
            Some(call("interval_mul", vec![*left.clone(), *right.clone()]))
        }
        BinaryOperator::Multiply if is_interval(right) && !is_interval(left) => {
            Some(call("interval_mul", vec![*right.clone(), *left.clone()]))
        }
        BinaryOperator::Divide if is_interval(left) && !is_interval(right) => {
            let inverse = Expr::BinaryOp {
                left: Box::new(Expr::value(Value::Number("1.0".to_string(), false))),
                op: BinaryOperator::Divide,
                right: Box::new(Expr::Nested(right.clone())),
            };
            Some(call("interval_mul", vec![*left.clone(), inverse]))
        }
        _ => None,
    }
}

/// `age(t)` as `age(CAST(CURRENT_DATE AS TIMESTAMP), t)`.
fn age_from_today(expr: &Expr) -> Option<Expr> {
    let Expr::Function(function) = expr else {
        return None;
    };
    if !function.name.to_string().eq_ignore_ascii_case("age") {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(argument))] = list.args.as_slice() else {
        return None;
    };
    let midnight = Expr::Cast {
        kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
        expr: Box::new(Expr::Function(Function {
            name: ObjectName::from(vec![Ident::new("current_date")]),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::None,
            filter: None,
            null_treatment: None,
            over: None,
            within_group: Vec::new(),
        })),
        data_type: SqlType::Timestamp(None, datafusion::sql::sqlparser::ast::TimezoneInfo::None),
        array: false,
        format: None,
    };
    Some(call("age", vec![midnight, argument.clone()]))
}

/// A call of the function `name` with `args`.
pub(crate) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|arg| FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap_or_default();
        products_as_calls(&mut statements);
        statements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn products_with_an_interval_become_calls() {
        assert_eq!(
            rewritten("SELECT 3 * INTERVAL '1 second', INTERVAL '1 day' / 2"),
            "SELECT interval_mul(INTERVAL '1 second', 3), interval_mul(INTERVAL '1 day', 1.0 / (2))"
        );
        assert_eq!(
            rewritten("SELECT ts + n * '1 hour'::interval FROM t"),
            "SELECT ts + interval_mul('1 hour'::INTERVAL, n) FROM t"
        );
        // Products without an interval, and age of two arguments, stay.
        assert_eq!(
            rewritten("SELECT a * b, age(x, y)"),
            "SELECT a * b, age(x, y)"
        );
        assert_eq!(
            rewritten("SELECT age(ts) FROM t"),
            "SELECT age(CAST(current_date AS TIMESTAMP), ts) FROM t"
        );
    }
}
