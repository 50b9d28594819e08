//! PostgreSQL's dialect, as clients write catalog queries, into SQL that rowdex runs: the text
//! is parsed as PostgreSQL and rewritten where rowdex's parser or DataFusion's planner would
//! refuse it, then printed back. Only statements that look like catalog queries (they name
//! `pg_catalog`, a `pg_` table, `information_schema` or a PostgreSQL-only construct) are
//! parsed here; everything else goes to rowdex untouched.
//!
//! The rewrites:
//! - `pg_catalog.f(...)` is `f(...)` (the functions are registered unqualified), and an
//!   unqualified `pg_class` is `pg_catalog.pg_class`;
//! - `a OPERATOR(pg_catalog.~) b` is `a ~ b`; `x COLLATE "C"` is `x`;
//! - `'t'::regclass` is the relation's OID, `oid::regclass` its name (likewise `::regtype`,
//!   `::regnamespace`, `::regrole`); `::pg_catalog.text`, `::name`, `::int2[]` are the types
//!   rowdex has;
//! - `E'\n'` is the string it spells; `'{0}'` compared with an array is the array;
//! - `ARRAY(SELECT 'p' || x FROM unnest(a) x)` is `rowdex_prefix_elements('p', a)`;
//! - `ARRAY(SELECT x FROM ...)` is `(SELECT array_agg(x) FROM ...)`, and a scalar subquery
//!   selecting a plain `x` selects `max(x)`, forms DataFusion can decorrelate;
//! - `current_user` and the like, written without parentheses, are function calls;
//! - `unnest(a) x` names its column `x`; a function call's output column is named after the
//!   function, and output columns that share a name (`SELECT NULL, NULL`) get names of their
//!   own;
//! - `pg_partition_ancestors(rel)` in FROM is the relation itself (no table is a partition), and
//!   psql's `CASE WHEN t.tgparentid != 0 THEN ... END` is NULL (no trigger has a parent).

use std::ops::ControlFlow;

use rowdex::datafusion::sql::sqlparser::ast::{
    BinaryOperator, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments,
    GroupByExpr, Ident, ObjectName, ObjectNamePart, OrderByKind, Query, Select, SelectItem,
    SetExpr, Statement, TableAliasColumnDef, TableFactor, Value, VisitMut, VisitorMut,
};
use rowdex::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use rowdex::datafusion::sql::sqlparser::parser::Parser;

use crate::pg_catalog::introspection::type_lookup;
use crate::pg_catalog::monitoring::MONITORING_VIEWS;
use crate::pg_catalog::prefix_elements::PREFIX_ELEMENTS;
use crate::pg_catalog::tables::PG_CATALOG_TABLES;

/// Words that make a statement worth parsing as PostgreSQL (matched lower-cased).
const MARKERS: [&str; 10] = [
    "pg_",
    "information_schema",
    "operator(",
    "regclass",
    "regtype",
    "regnamespace",
    "collate",
    "current_user",
    // Casts as PostgreSQL prints a DEFAULT (`'open'::character varying`), which tools run
    // back (Alembic's autogenerate compares defaults with `SELECT default = default`).
    "character varying",
    "bpchar",
];

/// The statement rewritten for rowdex, or None when it needs no rewrite (or does not parse
/// as PostgreSQL, in which case rowdex's own parser reports the error).
pub fn rewrite(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    if !MARKERS.iter().any(|m| lower.contains(m)) {
        return None;
    }
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    if let Some(lookup) = type_lookup(&statements) {
        return Some(lookup);
    }
    let mut rewriter = Rewriter { changed: false };
    for statement in &mut statements {
        let _ = statement.visit(&mut rewriter);
    }
    if !rewriter.changed {
        return None;
    }
    let texts: Vec<String> = statements.iter().map(Statement::to_string).collect();
    Some(texts.join(";\n"))
}

/// Whether `table` names a table or view of `pg_catalog`.
fn in_pg_catalog(table: &str) -> bool {
    let table = table.to_ascii_lowercase();
    PG_CATALOG_TABLES.contains(&table.as_str()) || MONITORING_VIEWS.contains(&table.as_str())
}

struct Rewriter {
    changed: bool,
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn post_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<()> {
        let parts = idents(name);
        match parts.as_slice() {
            [table] if in_pg_catalog(table) => {
                *name = object_name(&["pg_catalog", table]);
                self.changed = true;
            }
            // A table function (`pg_catalog.generate_series`, `pg_catalog.unnest`).
            [schema, function]
                if schema.eq_ignore_ascii_case("pg_catalog") && !in_pg_catalog(function) =>
            {
                *name = object_name(&[function]);
                self.changed = true;
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let Some(ancestors) = partition_ancestors(factor) {
            *factor = ancestors;
            self.changed = true;
            return ControlFlow::Continue(());
        }
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        // `unnest(a) x`: in PostgreSQL the alias names the function's one column too.
        if let Some(alias) = alias.as_mut()
            && alias.columns.is_empty()
        {
            alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.clone())];
            self.changed = true;
        }
        // `generate_series(0, f(t.c))`: DataFusion's table function takes constants only; the
        // array it spells, unnested, takes any expression.
        let function = idents(name).last().map(|n| n.to_ascii_lowercase());
        let constant = args.args.iter().all(|arg| {
            matches!(
                arg,
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(_)))
            )
        });
        if function.as_deref() == Some("generate_series") && !constant {
            let listed: Vec<String> = args.args.iter().map(ToString::to_string).collect();
            if let Some(series) = parse_expr(&format!("generate_series({})", listed.join(", "))) {
                *name = object_name(&["unnest"]);
                args.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(series))];
                self.changed = true;
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        // PostgreSQL lets two output columns share a name (`SELECT NULL, NULL`); DataFusion
        // does not, so the later ones get names of their own.
        let mut names: Vec<String> = Vec::new();
        for (position, item) in select.projection.iter_mut().enumerate() {
            let name = match item {
                SelectItem::UnnamedExpr(Expr::Identifier(ident)) => ident.value.clone(),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(|p| p.value.clone()).unwrap_or_default()
                }
                SelectItem::UnnamedExpr(expr) => expr.to_string(),
                SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                _ => continue,
            };
            // A function call's column is named after the function, as in PostgreSQL.
            if let SelectItem::UnnamedExpr(Expr::Function(function)) = item
                && let Some(function_name) = idents(&function.name).last()
                && !names.contains(function_name)
            {
                let function_name = function_name.to_ascii_lowercase();
                *item = SelectItem::ExprWithAlias {
                    expr: Expr::Function(function.clone()),
                    alias: Ident::with_quote('"', function_name.clone()),
                };
                names.push(function_name);
                self.changed = true;
                continue;
            }
            if names.contains(&name)
                && let SelectItem::UnnamedExpr(expr) = item
            {
                *item = SelectItem::ExprWithAlias {
                    expr: expr.clone(),
                    alias: Ident::with_quote('"', format!("?column?{}", position + 1)),
                };
                self.changed = true;
            }
            names.push(name);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(replacement) = replace(expr) {
            *expr = replacement;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// What `expr` becomes, if it changes.
fn replace(expr: &mut Expr) -> Option<Expr> {
    match expr {
        Expr::Function(function) => replace_function(function),
        // psql's `\d` looks up a trigger's parent only `WHEN t.tgparentid != 0`, through a
        // lateral call rowdex cannot plan; no rowdex trigger has a parent, so it is NULL.
        Expr::Case { conditions, .. }
            if conditions
                .iter()
                .any(|when| when.condition.to_string().contains("tgparentid")) =>
        {
            Some(Expr::Value(Value::Null.into()))
        }
        Expr::BinaryOp { left, op, right } => {
            if let BinaryOperator::PGCustomBinaryOperator(parts) = op {
                let operator = standard_operator(parts.last()?)?;
                return Some(Expr::BinaryOp {
                    left: left.clone(),
                    op: operator,
                    right: right.clone(),
                });
            }
            // `polroles = '{0}'`: the literal is an array.
            let array = |side: &Expr| array_literal(side);
            if matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) {
                if let Some(array) = array(right) {
                    return Some(Expr::BinaryOp {
                        left: left.clone(),
                        op: op.clone(),
                        right: Box::new(array),
                    });
                }
                if let Some(array) = array(left) {
                    return Some(Expr::BinaryOp {
                        left: Box::new(array),
                        op: op.clone(),
                        right: right.clone(),
                    });
                }
            }
            None
        }
        Expr::Collate { expr, .. } => Some(expr.as_ref().clone()),
        Expr::Subquery(query) => aggregated_subquery(query),
        Expr::Cast {
            expr: inner,
            data_type,
            ..
        } => replace_cast(inner, data_type),
        Expr::Value(value) => match &value.value {
            Value::EscapedStringLiteral(text) => {
                Some(Expr::value(Value::SingleQuotedString(text.clone())))
            }
            _ => None,
        },
        _ => None,
    }
}

fn replace_function(function: &mut Function) -> Option<Expr> {
    let parts = idents(&function.name);
    let name = parts.last()?.to_ascii_lowercase();
    if name == "array"
        && let FunctionArguments::Subquery(query) = &function.args
    {
        return prefixed_unnest(query).or_else(|| array_subquery(query));
    }
    // `generate_subscripts(array, dim)`: the array's subscripts, as a set-returning call
    // DataFusion unnests in step with an `unnest(array)` beside it (SQLAlchemy's reflection
    // pairs the two over pg_index.indkey and pg_constraint.conkey). They run 1..n, except for
    // pg_index's int2vector and oidvector columns, whose subscripts start at 0 in PostgreSQL
    // (SQLAlchemy asks `pg_get_indexdef(index, ord + 1)` for an expression's text).
    if name == "generate_subscripts"
        && let FunctionArguments::List(list) = &function.args
        && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(array))) = list.args.first()
    {
        let vector = matches!(array, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
            && ["indkey", "indclass", "indoption", "indcollation"]
                .iter()
                .any(|column| array.to_string().to_ascii_lowercase().ends_with(column));
        let first = if vector { 0 } else { 1 };
        return parse_expr(&format!(
            "unnest(range({first}, CAST(coalesce(array_length({array}, 1), 0) AS BIGINT) + {first}))"
        ));
    }
    if matches!(function.args, FunctionArguments::None)
        && matches!(
            name.as_str(),
            "current_user" | "session_user" | "user" | "current_schema" | "current_catalog"
        )
    {
        let name = if name == "user" {
            "current_user"
        } else {
            name.as_str()
        };
        return parse_expr(&format!("{name}()"));
    }
    if parts.len() == 2 && parts[0].eq_ignore_ascii_case("pg_catalog") {
        let mut unqualified = function.clone();
        unqualified.name = object_name(&[&parts[1]]);
        return Some(Expr::Function(unqualified));
    }
    None
}

/// `ARRAY(SELECT 'p' || x FROM unnest(a) x)` as `rowdex_prefix_elements('p', a)`: the same
/// array, without a subquery that unnests what may be an outer query's column (psql's `\d+`
/// does so with a table's TOAST options), which DataFusion cannot decorrelate.
fn prefixed_unnest(query: &Query) -> Option<Expr> {
    if query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [from] = select.from.as_slice() else {
        return None;
    };
    let TableFactor::Table {
        name,
        args: Some(args),
        alias: Some(alias),
        ..
    } = &from.relation
    else {
        return None;
    };
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] = args.args.as_slice() else {
        return None;
    };
    let unnest = idents(name).last()?.eq_ignore_ascii_case("unnest");
    let plain = from.joins.is_empty() && select.selection.is_none() && group_by_is_empty(select);
    let [SelectItem::UnnamedExpr(Expr::BinaryOp { left, op, right })] =
        select.projection.as_slice()
    else {
        return None;
    };
    let prefix = match left.as_ref() {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(prefix) => prefix,
            _ => return None,
        },
        _ => return None,
    };
    let element = matches!(right.as_ref(), Expr::Identifier(ident) if ident.value.eq_ignore_ascii_case(&alias.name.value));
    if !(unnest && plain && element && *op == BinaryOperator::StringConcat) {
        return None;
    }
    parse_expr(&format!(
        "{PREFIX_ELEMENTS}('{}', {array})",
        prefix.replace('\'', "''")
    ))
}

/// `ARRAY(SELECT x FROM ... [ORDER BY ...])` as `(SELECT array_agg(x [ORDER BY ...]) FROM ...)`:
/// the subquery's one column aggregated in place, so that a correlated subquery stays one
/// DataFusion can decorrelate.
fn array_subquery(query: &Query) -> Option<Expr> {
    let mut query = query.clone();
    if query.limit_clause.is_some() {
        return None;
    }
    let order = match query.order_by.take() {
        None => Vec::new(),
        Some(order_by) => match order_by.kind {
            OrderByKind::Expressions(exprs) => exprs,
            OrderByKind::All(_) => return None,
        },
    };
    let element = single_plain_projection(&mut query)?;
    let order: Vec<String> = order
        .iter()
        .map(|o| {
            let target = match &o.expr {
                // `ORDER BY 1`: the one column.
                Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1") => {
                    element.to_string()
                }
                other => other.to_string(),
            };
            format!("{target}{}", o.options)
        })
        .collect();
    let aggregate = if order.is_empty() {
        format!("array_agg({element})")
    } else {
        format!("array_agg({element} ORDER BY {})", order.join(", "))
    };
    set_projection(&mut query, parse_expr(&aggregate)?)?;
    Some(Expr::Subquery(Box::new(query)))
}

/// A scalar subquery that selects a plain expression, as one that selects its `max`: the
/// same value when there is at most one row (more is an error in PostgreSQL), and a form
/// DataFusion can decorrelate.
fn aggregated_subquery(query: &Query) -> Option<Expr> {
    let mut query = query.clone();
    if query.limit_clause.is_some() || query.order_by.is_some() {
        return None;
    }
    let element = single_plain_projection(&mut query)?;
    if is_aggregate(&element) {
        return None;
    }
    set_projection(&mut query, parse_expr(&format!("max({element})"))?)?;
    Some(Expr::Subquery(Box::new(query)))
}

/// The one expression a plain `SELECT` (no GROUP BY, HAVING or DISTINCT) projects.
fn single_plain_projection(query: &mut Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    if select.having.is_some() || select.distinct.is_some() || !group_by_is_empty(select) {
        return None;
    }
    match select.projection.as_slice() {
        [SelectItem::UnnamedExpr(expr)] | [SelectItem::ExprWithAlias { expr, .. }] => {
            Some(expr.clone())
        }
        _ => None,
    }
}

fn set_projection(query: &mut Query, expr: Expr) -> Option<()> {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    select.projection = vec![SelectItem::UnnamedExpr(expr)];
    Some(())
}

fn group_by_is_empty(select: &Select) -> bool {
    match &select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) => exprs.is_empty() && modifiers.is_empty(),
        GroupByExpr::All(_) => false,
    }
}

fn is_aggregate(expr: &Expr) -> bool {
    let Expr::Function(function) = expr else {
        return false;
    };
    let name = idents(&function.name)
        .last()
        .map(|n| n.to_ascii_lowercase())
        .unwrap_or_default();
    matches!(
        name.as_str(),
        "count"
            | "sum"
            | "min"
            | "max"
            | "avg"
            | "array_agg"
            | "string_agg"
            | "bool_and"
            | "bool_or"
            | "every"
    )
}

/// A cast to a PostgreSQL type rowdex lacks, as what rowdex can do.
fn replace_cast(inner: &Expr, data_type: &DataType) -> Option<Expr> {
    let type_name = match data_type {
        DataType::Custom(name, _) => idents(name).last()?.to_ascii_lowercase(),
        DataType::Regclass => "regclass".to_string(),
        DataType::CharacterVarying(_) | DataType::CharVarying(_) => {
            return Some(Expr::Cast {
                kind: rowdex::datafusion::sql::sqlparser::ast::CastKind::DoubleColon,
                expr: Box::new(inner.clone()),
                data_type: DataType::Text,
                array: false,
                format: None,
            });
        }
        DataType::Array(_) => {
            let mapped = standard_type(data_type)?;
            return Some(Expr::Cast {
                kind: rowdex::datafusion::sql::sqlparser::ast::CastKind::DoubleColon,
                expr: Box::new(inner.clone()),
                data_type: mapped,
                array: false,
                format: None,
            });
        }
        _ => return None,
    };
    let call = |function: &str| parse_expr(&format!("{function}({inner})"));
    match type_name.as_str() {
        "regclass" => match inner {
            Expr::Value(value) if matches!(value.value, Value::SingleQuotedString(_)) => {
                call("pg_rowdex_regclass_oid")
            }
            _ => call("pg_rowdex_relation_name"),
        },
        "regtype" => call("pg_rowdex_type_name"),
        "regnamespace" => call("pg_rowdex_namespace_name"),
        "regrole" => call("pg_get_userbyid"),
        "regproc" | "regprocedure" | "regoper" | "regoperator" | "regconfig" => {
            parse_expr(&format!("CAST({inner} AS TEXT)"))
        }
        _ => {
            let mapped = standard_type(data_type)?;
            Some(Expr::Cast {
                kind: rowdex::datafusion::sql::sqlparser::ast::CastKind::DoubleColon,
                expr: Box::new(inner.clone()),
                data_type: mapped,
                array: false,
                format: None,
            })
        }
    }
}

/// A PostgreSQL type name DataFusion does not know, as one it does.
fn standard_type(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Custom(name, _) => {
            let name = idents(name).last()?.to_ascii_lowercase();
            Some(match name.as_str() {
                "text" | "name" | "char" | "\"char\"" | "bpchar" | "varchar" | "cstring" => {
                    DataType::Text
                }
                "int2" | "int4" | "int8" | "oid" | "xid" | "cid" | "tid" => DataType::BigInt(None),
                "bool" => DataType::Boolean,
                "float4" | "float8" => {
                    DataType::Double(rowdex::datafusion::sql::sqlparser::ast::ExactNumberInfo::None)
                }
                _ => return None,
            })
        }
        DataType::Array(element) => {
            use rowdex::datafusion::sql::sqlparser::ast::ArrayElemTypeDef;
            let inner = match element {
                ArrayElemTypeDef::SquareBracket(inner, _)
                | ArrayElemTypeDef::AngleBracket(inner) => inner,
                _ => return None,
            };
            let mapped = standard_type(inner).unwrap_or_else(|| inner.as_ref().clone());
            Some(DataType::Array(ArrayElemTypeDef::SquareBracket(
                Box::new(mapped),
                None,
            )))
        }
        _ => None,
    }
}

/// The standard operator `OPERATOR(pg_catalog.op)` names.
fn standard_operator(op: &str) -> Option<BinaryOperator> {
    Some(match op {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "||" => BinaryOperator::StringConcat,
        "~~" => BinaryOperator::PGLikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        _ => return None,
    })
}

/// `'{1,2}'` as `make_array(1, 2)`; None for any other expression.
fn array_literal(expr: &Expr) -> Option<Expr> {
    let Expr::Value(value) = expr else {
        return None;
    };
    let Value::SingleQuotedString(text) = &value.value else {
        return None;
    };
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let elements: Vec<&str> = inner
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let all_numbers = elements.iter().all(|e| e.parse::<i64>().is_ok());
    let listed: Vec<String> = elements
        .iter()
        .map(|e| {
            if all_numbers {
                e.to_string()
            } else {
                format!("'{}'", e.trim_matches('"').replace('\'', "''"))
            }
        })
        .collect();
    parse_expr(&format!("make_array({})", listed.join(", ")))
}

/// `pg_partition_ancestors(rel)` in FROM (psql's `\d`): a table is never a partition, so its
/// one row is the relation itself, `(SELECT pg_partition_ancestors(rel) AS relid)`.
fn partition_ancestors(factor: &TableFactor) -> Option<TableFactor> {
    let TableFactor::Table {
        name,
        args: Some(args),
        alias,
        ..
    } = factor
    else {
        return None;
    };
    let function = idents(name).last()?.to_ascii_lowercase();
    if function != "pg_partition_ancestors" {
        return None;
    }
    let listed: Vec<String> = args.args.iter().map(ToString::to_string).collect();
    let alias = alias.as_ref().map_or_else(
        || "pg_partition_ancestors".to_string(),
        |a| a.name.to_string(),
    );
    let sql = format!(
        "SELECT * FROM (SELECT pg_partition_ancestors({}) AS relid) AS {alias}",
        listed.join(", ")
    );
    let statement = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?.pop()?;
    let Statement::Query(query) = statement else {
        return None;
    };
    let SetExpr::Select(select) = *query.body else {
        return None;
    };
    select.from.into_iter().next().map(|from| from.relation)
}

fn parse_expr(text: &str) -> Option<Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .ok()?
        .parse_expr()
        .ok()
}

fn idents(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .filter_map(|part| match part {
            ObjectNamePart::Identifier(ident) => Some(ident.value.clone()),
            _ => None,
        })
        .collect()
}

fn object_name(parts: &[&str]) -> ObjectName {
    ObjectName::from(parts.iter().map(|p| Ident::new(*p)).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_syntax_becomes_plain_sql() {
        let sql = "SELECT c.oid::pg_catalog.regclass, pg_catalog.format_type(1, 2)
            FROM pg_catalog.pg_class c
            WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default
              AND c.oid = 'orders'::regclass AND x = E'a\\nb'
              AND c.oid = 'orders'::pg_catalog.regclass";
        let rewritten = rewrite(sql).expect("a rewrite");
        assert!(
            rewritten.contains("pg_rowdex_relation_name(c.oid)"),
            "{rewritten}"
        );
        assert!(rewritten.contains(" format_type(1, 2)"), "{rewritten}");
        assert!(rewritten.contains("c.relname ~ '^(t)$'"), "{rewritten}");
        assert!(
            rewritten.contains("pg_rowdex_regclass_oid('orders')"),
            "{rewritten}"
        );
        assert!(!rewritten.contains("COLLATE"), "{rewritten}");
        assert!(rewritten.contains("x = 'a\nb'"), "{rewritten}");
    }

    #[test]
    fn ordinary_statements_are_left_alone() {
        assert_eq!(rewrite("SELECT * FROM t WHERE id = 1"), None);
        assert_eq!(rewrite("SELECT pg_nonsense FROM (((("), None);
    }

    #[test]
    fn array_subqueries_aggregate() {
        let rewritten =
            rewrite("SELECT ARRAY(SELECT b.rolname FROM pg_roles b) FROM pg_catalog.pg_roles r")
                .expect("a rewrite");
        assert!(
            rewritten.contains("(SELECT array_agg(b.rolname) FROM"),
            "{rewritten}"
        );
        assert!(
            rewritten.contains("FROM pg_catalog.pg_roles b"),
            "{rewritten}"
        );
    }

    #[test]
    fn prefixed_unnests_become_a_function_of_the_array() {
        // psql's `\d+`, over a table's TOAST relation.
        let rewritten = rewrite(
            "SELECT pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x \
             from pg_catalog.unnest(tc.reloptions) x), ', ') FROM pg_catalog.pg_class c \
             LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)",
        )
        .expect("a rewrite");
        assert!(
            rewritten.contains("c.reloptions || rowdex_prefix_elements('toast.', tc.reloptions)"),
            "{rewritten}"
        );
        // Anything else in the subquery keeps it a subquery.
        let filtered = rewrite(
            "SELECT array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x \
             where x <> '') FROM pg_catalog.pg_class tc",
        )
        .expect("a rewrite");
        assert!(!filtered.contains("rowdex_prefix_elements"), "{filtered}");
    }
}
