//! SQLite's typing where DataFusion's differs, as rewrites of the parsed SQL before planning:
//!
//! * `NULLIF(a, b)` has `a`'s type (DataFusion gives it the type `a` and `b` compare in);
//! * `'text' IN (SELECT number)` and `x'blob' IN (SELECT number)`, which DataFusion fails to
//!   cast, have SQLite's answer: no number equals text that is not a number, or a blob.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Query,
    SelectItem, SetExpr, Statement, Value, visit_expressions, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::sql::rewrite::unparenthesised;

/// `NULLIF(a, b)` is `a` or NULL, so its type is `a`'s, as in SQLite (`NULLIF(53, 1.5) / -71`
/// divides integers); DataFusion gives it the type `a` and `b` are compared in. It becomes
/// `CASE WHEN a = b THEN NULL ELSE a END`, which compares alike and keeps `a`'s type, where `a`
/// calls no function and holds no subquery (evaluating it twice then costs nothing and cannot
/// differ).
pub(crate) fn nullif_as_case(statement: &mut Statement) {
    // A result column keeps the name its text gives it, not the CASE's.
    if let Statement::Query(query) = statement
        && let SetExpr::Select(select) = query.body.as_mut()
    {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item
                && calls_nullif(expr)
            {
                let alias = Ident::with_quote('"', expr.to_string());
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias,
                };
            }
        }
    }
    let _ = visit_expressions_mut(statement, |expr| {
        let Expr::Function(function) = expr else {
            return ControlFlow::<()>::Continue(());
        };
        if !function.name.to_string().eq_ignore_ascii_case("nullif") {
            return ControlFlow::Continue(());
        }
        let FunctionArguments::List(list) = &function.args else {
            return ControlFlow::Continue(());
        };
        let [
            FunctionArg::Unnamed(FunctionArgExpr::Expr(first)),
            FunctionArg::Unnamed(FunctionArgExpr::Expr(second)),
        ] = list.args.as_slice()
        else {
            return ControlFlow::Continue(());
        };
        if !list.clauses.is_empty() || list.duplicate_treatment.is_some() || !is_plain(first) {
            return ControlFlow::Continue(());
        }
        // Built, not printed and parsed again: `- - 36` prints as `--36`, a comment.
        let (first, second) = (first.clone(), second.clone());
        let case = Expr::Case {
            case_token: AttachedToken::empty(),
            end_token: AttachedToken::empty(),
            operand: None,
            conditions: vec![CaseWhen {
                condition: Expr::BinaryOp {
                    left: Box::new(Expr::Nested(Box::new(first.clone()))),
                    op: BinaryOperator::Eq,
                    right: Box::new(Expr::Nested(Box::new(second))),
                },
                result: Expr::value(Value::Null),
            }],
            else_result: Some(Box::new(Expr::Nested(Box::new(first)))),
        };
        *expr = Expr::Nested(Box::new(case));
        ControlFlow::Continue(())
    });
}

/// Whether `expr` calls NULLIF.
fn calls_nullif(expr: &Expr) -> bool {
    visit_expressions(expr, |inner| match inner {
        Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("nullif") => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Whether `expr` calls no function and holds no subquery.
fn is_plain(expr: &Expr) -> bool {
    visit_expressions(expr, |inner| match inner {
        Expr::Function(_) | Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_continue()
}

/// The subqueries of `literal [NOT] IN (subquery)` whose literal SQLite compares unequal to
/// every number (text that does not read as a number, or a blob), for the caller to find which
/// of them select a number.
pub(crate) fn in_subqueries_of_non_numbers(statement: &Statement) -> Vec<Query> {
    let mut found = Vec::new();
    let _ = visit_expressions(statement, |expr| {
        if let Expr::InSubquery { expr, subquery, .. } = expr
            && never_a_number(expr)
        {
            found.push(subquery.as_ref().clone());
        }
        ControlFlow::<()>::Continue(())
    });
    found
}

/// Rewrites `literal [NOT] IN (subquery)`, for the subqueries in `numeric` (by text) whose one
/// column is a number, into the answer a test that no value can pass has: NULL when the
/// subquery yields a NULL, else false (true for NOT IN).
pub(crate) fn in_subqueries_of_non_numbers_answered(
    statement: &mut Statement,
    numeric: &HashSet<String>,
) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::InSubquery {
            expr: operand,
            subquery,
            negated,
        } = expr
            && never_a_number(operand)
            && numeric.contains(&subquery.to_string())
        {
            let text = format!(
                "CASE WHEN EXISTS (SELECT 1 FROM ({subquery}) AS in_rows (v) WHERE v IS NULL) \
                 THEN NULL ELSE {} END",
                if *negated { "TRUE" } else { "FALSE" }
            );
            if let Ok(answer) = Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut parser| parser.parse_expr())
            {
                *expr = answer;
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Whether `expr` is a literal SQLite never finds equal to a number: text that does not read
/// as one, or a blob.
fn never_a_number(expr: &Expr) -> bool {
    let Expr::Value(value) = unparenthesised(expr) else {
        return false;
    };
    match &value.value {
        Value::SingleQuotedString(text) => text.trim().parse::<f64>().is_err(),
        Value::HexStringLiteral(_) => true,
        _ => false,
    }
}
