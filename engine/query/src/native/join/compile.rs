//! Recognising a join the native executor runs (`native::join`), straight from the parsed SQL:
//! tables listed with commas or joined by `[INNER] JOIN t ON ...` or `LEFT [OUTER] JOIN t ON
//! ...`; each ON and the WHERE a conjunction of equalities between two tables' columns and of
//! one table's column-versus-value conditions (as `native::compile` reads them for one table);
//! plain columns selected (`*` and `t.*` too); ORDER BY on columns, LIMIT and OFFSET; `IN` and
//! `[NOT] EXISTS` subqueries among the WHERE clause's conjuncts as semi and anti joined tables
//! (`subquery`). A column two tables have must be qualified, an ON may name only the tables of its FROM item joined so
//! far, as in PostgreSQL, and a LEFT JOIN's table only its own ON may test or join: anything
//! else is left to DataFusion, which answers or refuses it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::sql::sqlparser::ast::{
    JoinConstraint, JoinOperator, ObjectNamePart, Query, SelectItem,
    SelectItemQualifiedWildcardKind, WildcardAdditionalOptions,
};

use crate::db::schema_view::SchemaView;
use crate::native::compile::{limit_offset, order_items, order_target, plain_select};
use crate::native::join::scope::{Found, JoinScope, joined_table};
use crate::native::join::subquery::{self, Filter};
use crate::native::join::{JoinOrderItem, JoinedAs, NativeJoin};
use crate::sql::names::ident_name;
use crate::values::column_field;

/// Compiles `query` if it is a join the native executor can run.
pub(crate) fn compile(schema: &SchemaView, query: &Query) -> Option<NativeJoin> {
    let (select, distinct) = plain_select(query)?;
    // Tables listed with commas join as `JOIN ... ON TRUE` would: their equalities are in
    // the WHERE clause.
    let mut tables = Vec::new();
    let mut ons = Vec::new();
    for from in &select.from {
        let first = tables.len();
        tables.push(joined_table(schema, &from.relation, JoinedAs::Inner)?);
        for join in &from.joins {
            let (on, kind) = match &join.join_operator {
                JoinOperator::Join(JoinConstraint::On(on))
                | JoinOperator::Inner(JoinConstraint::On(on)) => (on, JoinedAs::Inner),
                JoinOperator::Left(JoinConstraint::On(on))
                | JoinOperator::LeftOuter(JoinConstraint::On(on)) => (on, JoinedAs::Left),
                _ => return None,
            };
            if join.global {
                return None;
            }
            tables.push(joined_table(schema, &join.relation, kind)?);
            // The ON sees the tables of its FROM item up to its own.
            ons.push((on, first..tables.len()));
        }
    }
    // The subqueries' tables come after the FROM's, which are all the query itself sees.
    let from_count = tables.len();
    let mut plain = Vec::new();
    let mut filters: Vec<Filter<'_>> = Vec::new();
    if let Some(selection) = &select.selection {
        subquery::split(selection, &mut plain, &mut filters);
    }
    for filter in &filters {
        tables.push(filter.table(schema)?);
    }
    if distinct || tables.len() < 2 {
        return None;
    }
    let mut qualifiers: Vec<&str> = tables.iter().map(|t| t.qualifier.as_str()).collect();
    qualifiers.sort_unstable();
    if qualifiers.windows(2).any(|pair| pair[0] == pair[1]) {
        return None;
    }

    let mut conditions = vec![Vec::new(); tables.len()];
    let mut equalities = Vec::new();
    {
        let scope = JoinScope::new(&tables);
        let mut found = Found::new(tables.len());
        for (on, visible) in ons {
            scope.conjuncts(on, visible.clone(), &mut found)?;
            // A LEFT JOIN's ON tests its own table and joins it to the tables before; the
            // rest of the query never names it but in the columns it selects or orders by.
            let own = visible.end - 1;
            found.admit(&tables, Some(own), &mut conditions, &mut equalities)?;
        }
        for conjunct in plain {
            scope.conjuncts(conjunct, 0..from_count, &mut found)?;
        }
        for (at, filter) in filters.iter().enumerate() {
            filter.read(&scope, from_count + at, 0..from_count, &mut found)?;
        }
        found.admit(&tables, None, &mut conditions, &mut equalities)?;
    }
    for (joined, found) in tables.iter_mut().zip(conditions) {
        joined.conditions = found;
    }

    let scope = JoinScope::new(&tables);
    let mut names = Vec::new();
    let mut output = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::Wildcard(options) if plain_wildcard(options) => {
                for table in 0..from_count {
                    scope.all_columns(table, &mut names, &mut output);
                }
            }
            SelectItem::QualifiedWildcard(
                SelectItemQualifiedWildcardKind::ObjectName(name),
                options,
            ) if plain_wildcard(options) => {
                let [ObjectNamePart::Identifier(qualifier)] = name.0.as_slice() else {
                    return None;
                };
                let qualifier = ident_name(qualifier);
                let table = tables[..from_count]
                    .iter()
                    .position(|t| t.qualifier == qualifier)?;
                scope.all_columns(table, &mut names, &mut output);
            }
            SelectItem::UnnamedExpr(expr) => {
                let column = scope.column(expr, 0..from_count)?;
                names.push(
                    tables[column.table]
                        .table
                        .columns
                        .get(column.column)?
                        .name
                        .clone(),
                );
                output.push(column);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                output.push(scope.column(expr, 0..from_count)?);
                names.push(ident_name(alias));
            }
            _ => return None,
        }
    }

    let mut order = Vec::new();
    for (expr, descending) in order_items(query)? {
        let column = order_target(&names, &output, expr, |e| scope.column(e, 0..from_count))?;
        order.push(JoinOrderItem { column, descending });
    }
    let (limit, offset) = limit_offset(query)?;

    let fields = output
        .iter()
        .zip(&names)
        .map(|(column, name)| {
            let joined = tables.get(column.table)?;
            let field = column_field(joined.table.columns.get(column.column)?);
            // A LEFT JOIN's table may yield no row: NULL in each of its columns.
            let nullable = field.is_nullable() || joined.outer();
            Some(field.with_name(name.clone()).with_nullable(nullable))
        })
        .collect::<Option<Vec<Field>>>()?;
    Some(NativeJoin {
        tables,
        equalities,
        names,
        output,
        order,
        limit,
        offset,
        schema: Arc::new(Schema::new(fields)),
        choice: Arc::default(),
    })
}

fn plain_wildcard(options: &WildcardAdditionalOptions) -> bool {
    options.opt_alias.is_none()
        && options.opt_ilike.is_none()
        && options.opt_exclude.is_none()
        && options.opt_except.is_none()
        && options.opt_replace.is_none()
        && options.opt_rename.is_none()
}
