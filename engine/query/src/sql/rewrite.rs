//! Rewrites of the parsed SQL before DataFusion plans it, where SQL as SQLite and most engines
//! accept it differs from what DataFusion's planner takes:
//!
//! * unary `+` is a no-op on any type (DataFusion refuses it on text);
//! * a result may name two columns alike (`SELECT a AS x, b AS x`), which DataFusion refuses:
//!   the duplicates get unique aliases for planning, and the result gets its names back. The
//!   same goes for unaliased subqueries, which DataFusion names alike.
//! * `x IN ()` (parsed as an empty subquery) is the constant it always is;
//! * a row-value comparison `(a, b) < (x, y)` is spelled out as `a < x OR (a = x AND b < y)`:
//!   DataFusion compares such rows as structs, where a NULL field is simply the smallest value,
//!   whereas in SQL a NULL reached before the deciding pair makes the comparison unknown.
//! * a bare column in an aggregate query (`SELECT COALESCE(3, b) FROM t GROUP BY a`), which
//!   SQLite accepts with the value of some row of the group, reads `first_value(b)`; only tried
//!   when DataFusion refused the query for it.
//! * a division or modulo by zero is NULL, as in SQLite (DataFusion fails the query): `a / b`
//!   reads `a / NULLIF(b, 0)`; only tried when a query failed for it.
//!
//! SQLite's types where DataFusion's differ (NULLIF's, IN across types) are `sqlite_types`.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    OrderBy, OrderByKind, SelectItem, SetExpr, Statement, UnaryOperator, Value, visit_expressions,
    visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::sql::names::AGGREGATES;

/// Drops every unary `+` (keeping its operand parenthesised, so precedence is unchanged).
pub(crate) fn strip_unary_plus(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr: operand,
        } = expr
        {
            let inner = std::mem::replace(
                operand.as_mut(),
                Expr::value(datafusion::sql::sqlparser::ast::Value::Null),
            );
            *expr = Expr::Nested(Box::new(inner));
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `x IN ()` is read as `x IN (SELECT NULL WHERE FALSE)` (see `sql::tokens`); a test against
/// the empty set is false for every `x`, NULL included (and `NOT IN` true), so it becomes that
/// constant. Left as a subquery, DataFusion 55 fails to decorrelate it inside another IN
/// subquery ("single expression required").
pub(crate) fn empty_in_subqueries_as_constants(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::InSubquery {
            subquery, negated, ..
        } = expr
            && subquery.to_string() == "SELECT NULL WHERE FALSE"
        {
            *expr = Expr::Value(Value::Boolean(*negated).into());
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Spells out every row-value comparison (`=`, `<>`, `<`, `<=`, `>`, `>=` between two row
/// values of the same length) with scalar comparisons, AND and OR, which have SQL's semantics.
pub(crate) fn expand_row_comparisons(statement: &mut Statement) {
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::BinaryOp { left, op, right } = expr
            && let (Expr::Tuple(lhs), Expr::Tuple(rhs)) = (left.as_ref(), right.as_ref())
            && lhs.len() == rhs.len()
            && !lhs.is_empty()
            && let Some(expanded) = expand_row_comparison(lhs, op, rhs)
        {
            *expr = expanded;
        }
        ControlFlow::<()>::Continue(())
    });
}

fn expand_row_comparison(lhs: &[Expr], op: &BinaryOperator, rhs: &[Expr]) -> Option<Expr> {
    let binary = |left: &Expr, op: BinaryOperator, right: &Expr| {
        Expr::Nested(Box::new(Expr::BinaryOp {
            left: Box::new(left.clone()),
            op,
            right: Box::new(right.clone()),
        }))
    };
    let pairs = lhs.iter().zip(rhs);
    let join = |parts: Vec<Expr>, op: BinaryOperator| {
        parts
            .into_iter()
            .reduce(|acc, part| binary(&acc, op.clone(), &part))
    };
    match op {
        BinaryOperator::Eq => join(
            pairs
                .map(|(l, r)| binary(l, BinaryOperator::Eq, r))
                .collect(),
            BinaryOperator::And,
        ),
        BinaryOperator::NotEq => join(
            pairs
                .map(|(l, r)| binary(l, BinaryOperator::NotEq, r))
                .collect(),
            BinaryOperator::Or,
        ),
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = match op {
                BinaryOperator::Lt | BinaryOperator::LtEq => BinaryOperator::Lt,
                _ => BinaryOperator::Gt,
            };
            // From the last pair outwards: `l < r OR (l = r AND <rest>)`, the last pair
            // taking the operator itself.
            let mut pairs: Vec<(&Expr, &Expr)> = pairs.collect();
            let (last_l, last_r) = pairs.pop()?;
            let mut expr = binary(last_l, op.clone(), last_r);
            for (l, r) in pairs.into_iter().rev() {
                let equal_then_rest = binary(
                    &binary(l, BinaryOperator::Eq, r),
                    BinaryOperator::And,
                    &expr,
                );
                expr = binary(
                    &binary(l, strict.clone(), r),
                    BinaryOperator::Or,
                    &equal_then_rest,
                );
            }
            Some(expr)
        }
        _ => None,
    }
}

/// Gives repeated output names of a plain top-level SELECT unique aliases. Returns the names the
/// result's columns must carry afterwards, or None when nothing was renamed.
pub(crate) fn unique_output_names(statement: &mut Statement) -> Option<Vec<String>> {
    let Statement::Query(query) = statement else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let names: Option<Vec<String>> = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) => Some(match unnested(expr) {
                Expr::Identifier(ident) => ident.value.clone(),
                Expr::CompoundIdentifier(parts) => parts
                    .last()
                    .map_or_else(|| expr.to_string(), |p| p.value.clone()),
                other => other.to_string(),
            }),
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            // A wildcard's width is unknown here: leave such queries alone.
            _ => None,
        })
        .collect();
    let names = names?;
    // DataFusion names every subquery `(<subquery>)`, so two unaliased ones would clash.
    let renamed: Vec<bool> = {
        let mut seen = HashSet::new();
        select
            .projection
            .iter()
            .zip(&names)
            .map(|(item, name)| {
                // DataFusion's names drop parentheses (`-(col0)` and `-col0` are both
                // `(- t.col0)`): compare without them. Renaming more than needed is harmless.
                let key = match item {
                    SelectItem::UnnamedExpr(expr) => without_parentheses(expr),
                    _ => name.clone(),
                };
                let repeated = !seen.insert(key.to_lowercase());
                repeated || matches!(item, SelectItem::UnnamedExpr(expr) if holds_subquery(expr))
            })
            .collect()
    };
    if !renamed.contains(&true) {
        return None;
    }
    let mut taken: HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
    for (position, ((item, name), renamed)) in select
        .projection
        .iter_mut()
        .zip(&names)
        .zip(renamed)
        .enumerate()
    {
        if !renamed {
            continue;
        }
        let mut unique = format!("{name}__{position}");
        while !taken.insert(unique.to_lowercase()) {
            unique.push('_');
        }
        let expr = match std::mem::replace(
            item,
            SelectItem::UnnamedExpr(Expr::value(datafusion::sql::sqlparser::ast::Value::Null)),
        ) {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => expr,
            other => {
                *item = other;
                continue;
            }
        };
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', unique),
        };
    }
    Some(names)
}

fn holds_subquery(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The expression inside any number of parentheses.
/// Guards every divisor of `statement` (`/`, `%`) as `NULLIF(divisor, 0)`, so that a division
/// by zero is NULL as in SQLite. Returns whether there was one.
pub(crate) fn division_by_zero_as_null(statement: &mut Statement) -> bool {
    let mut changed = false;
    let _ = visit_expressions_mut(statement, |expr| {
        if let Expr::BinaryOp {
            op: BinaryOperator::Divide | BinaryOperator::Modulo,
            right,
            ..
        } = expr
        {
            let guarded = format!("NULLIF({right}, 0)");
            if let Ok(guard) = Parser::new(&GenericDialect {})
                .try_with_sql(&guarded)
                .and_then(|mut p| p.parse_expr())
            {
                **right = guard;
                changed = true;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    changed
}

/// Gives the bare columns of a top-level aggregate query (GROUP BY, in its select list, HAVING
/// and ORDER BY: a column neither grouped by nor inside an aggregate) the value of some row of their
/// group, `first_value(column)`, as SQLite does. Returns whether anything changed.
pub(crate) fn bare_columns_as_first_values(statement: &mut Statement) -> bool {
    let Statement::Query(query) = statement else {
        return false;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return false;
    };
    let GroupByExpr::Expressions(groups, _) = &select.group_by else {
        return false;
    };
    let grouped: HashSet<String> = groups.iter().map(grouping_key).collect();
    if grouped.is_empty() {
        return false;
    }
    let mut changed = false;
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            changed |= wrap_bare_columns(expr, &grouped);
        }
    }
    if let Some(having) = &mut select.having {
        changed |= wrap_bare_columns(having, &grouped);
    }
    if let Some(OrderBy {
        kind: OrderByKind::Expressions(items),
        ..
    }) = &mut query.order_by
    {
        for item in items {
            // `ORDER BY 2` names an output column, which is already taken care of.
            if !matches!(item.expr, Expr::Value(_)) {
                changed |= wrap_bare_columns(&mut item.expr, &grouped);
            }
        }
    }
    changed
}

/// How a grouping expression is recognised: its whole text without parentheses (`col0` and
/// `t.col0` are told apart: wrapping a grouped column is harmless, missing a bare one is not).
fn grouping_key(expr: &Expr) -> String {
    unparenthesised(expr).to_string().to_lowercase()
}

/// Wraps each bare column under `expr` in `first_value`; returns whether one was found.
fn wrap_bare_columns(expr: &mut Expr, grouped: &HashSet<String>) -> bool {
    if grouped.contains(&grouping_key(expr)) {
        return false;
    }
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            let text = format!("first_value({expr})");
            match Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut p| p.parse_expr())
            {
                Ok(wrapped) => {
                    *expr = wrapped;
                    true
                }
                Err(_) => false,
            }
        }
        Expr::Nested(inner)
        | Expr::UnaryOp { expr: inner, .. }
        | Expr::Cast { expr: inner, .. } => wrap_bare_columns(inner, grouped),
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => wrap_bare_columns(inner, grouped),
        Expr::BinaryOp { left, right, .. } => {
            let left = wrap_bare_columns(left, grouped);
            wrap_bare_columns(right, grouped) | left
        }
        Expr::Between {
            expr: inner,
            low,
            high,
            ..
        } => {
            let a = wrap_bare_columns(inner, grouped);
            let b = wrap_bare_columns(low, grouped);
            wrap_bare_columns(high, grouped) | a | b
        }
        Expr::InList {
            expr: inner, list, ..
        } => {
            let mut changed = wrap_bare_columns(inner, grouped);
            for item in list {
                changed |= wrap_bare_columns(item, grouped);
            }
            changed
        }
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let mut changed = false;
            if let Some(operand) = operand {
                changed |= wrap_bare_columns(operand, grouped);
            }
            for when in conditions {
                changed |= wrap_bare_columns(&mut when.condition, grouped);
                changed |= wrap_bare_columns(&mut when.result, grouped);
            }
            if let Some(other) = else_result {
                changed |= wrap_bare_columns(other, grouped);
            }
            changed
        }
        Expr::Function(function) => {
            let name = function.name.to_string().to_lowercase();
            if AGGREGATES.contains(&name.as_str()) || function.over.is_some() {
                return false;
            }
            let FunctionArguments::List(list) = &mut function.args else {
                return false;
            };
            let mut changed = false;
            for arg in &mut list.args {
                if let FunctionArg::Unnamed(FunctionArgExpr::Expr(inner)) = arg {
                    changed |= wrap_bare_columns(inner, grouped);
                }
            }
            changed
        }
        _ => false,
    }
}

/// The output name of `expr` as DataFusion gives it, parentheses aside: a column's own name,
/// else the expression's text with every parenthesised sub-expression unwrapped.
fn without_parentheses(expr: &Expr) -> String {
    let mut bare = unparenthesised(expr);
    // DataFusion names a cast by what it casts (`'x'::timestamp` and `'x'::date` alike).
    while let Expr::Cast { expr: inner, .. } = bare {
        bare = unparenthesised(&inner);
    }
    match &bare {
        Expr::Identifier(ident) => ident.value.clone(),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .map_or_else(|| bare.to_string(), |p| p.value.clone()),
        other => other.to_string(),
    }
}

/// `expr` with every parenthesised sub-expression unwrapped.
pub(crate) fn unparenthesised(expr: &Expr) -> Expr {
    let mut bare = unnested(expr).clone();
    let _ = visit_expressions_mut(&mut bare, |e| {
        if let Expr::Nested(inner) = e {
            let inner = std::mem::replace(
                inner.as_mut(),
                Expr::value(datafusion::sql::sqlparser::ast::Value::Null),
            );
            *e = inner;
        }
        ControlFlow::<()>::Continue(())
    });
    bare
}

fn unnested(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => unnested(inner),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::{ParsedStatement, split_statements};

    fn parse(sql: &str) -> Statement {
        match split_statements(sql).ok().and_then(|mut s| s.pop()) {
            Some(ParsedStatement::Sql { statement, .. }) => *statement,
            other => panic!("not a statement: {other:?}"),
        }
    }

    #[test]
    fn unary_plus_disappears_everywhere() {
        let mut statement = parse("SELECT + a, - + 3, (SELECT + b FROM t) FROM t WHERE + c > 1");
        strip_unary_plus(&mut statement);
        let text = statement.to_string();
        assert!(!text.contains('+'), "{text}");
        assert!(text.contains("-(3)"), "{text}");
    }

    #[test]
    fn duplicate_names_get_unique_aliases_and_are_reported() {
        let mut statement = parse("SELECT a AS x, b AS x, c FROM t");
        let names = unique_output_names(&mut statement);
        assert_eq!(names, Some(vec!["x".into(), "x".into(), "c".into()]));
        assert!(statement.to_string().contains("b AS \"x__1\""));
        let mut unique = parse("SELECT a AS x, b FROM t");
        assert_eq!(unique_output_names(&mut unique), None);
        let mut star = parse("SELECT *, a FROM t");
        assert_eq!(unique_output_names(&mut star), None);
    }
}
