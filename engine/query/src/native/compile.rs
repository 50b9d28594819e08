//! Recognising the queries the native executor runs, straight from the parsed SQL: one rowdex
//! table, plain columns (renamed or not), a conjunction of column-versus-value conditions,
//! ORDER BY on columns, LIMIT and OFFSET; or aggregates without GROUP BY (`native::aggregate`),
//! or SELECT DISTINCT ordered by its columns. Values may be literals or parameters (`$n`). Anything
//! else is not compiled, and runs through DataFusion.
//!
//! Only what the predicate IR states exactly is accepted, so both executors give the same
//! answer: a value whose conversion to its column's type would change a comparison leaves the
//! query to DataFusion (when it is bound, see `NativeQuery::bind`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Distinct, Expr, GroupByExpr, LimitClause, ObjectNamePart, OrderByKind, Query,
    Select, SelectFlavor, SelectItem, SetExpr, TableFactor, Value,
};
use rowdex_catalog::{DataType, Declared, TableDef};
use rowdex_codec::Datum;
use rowdex_planner::{CmpOp, Predicate};

use crate::db::schema_view::SchemaView;
use crate::native::aggregate::{Aggregate, AggregateKind};
use crate::native::choice::PlanChoice;
use crate::native::scope::{Scope, Slot, slot};
use crate::sql::names::ident_name;
use crate::values::{renamed_schema, table_schema};
use crate::write::generated::Generation;

/// One ORDER BY item, as a table column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OrderItem {
    pub column: usize,
    pub descending: bool,
}

/// What a native query answers with: the rows it reads, those rows without duplicates, or one
/// row of aggregates over them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    Rows,
    Distinct,
    Aggregate(Vec<Aggregate>),
}

/// A compiled single-table query, with its values still unbound.
#[derive(Debug, Clone)]
pub(crate) struct NativeQuery {
    pub shape: Shape,
    pub table: Arc<TableDef>,
    /// Result column names, and the table column behind each.
    pub names: Vec<String>,
    pub columns: Vec<usize>,
    /// The conjuncts of the WHERE clause.
    pub conditions: Vec<Predicate<Slot>>,
    pub order: Vec<OrderItem>,
    pub limit: Option<Slot>,
    pub offset: Option<Slot>,
    /// The result schema: the columns' types under the names the query gives them.
    pub schema: SchemaRef,
    /// The plan choice of the last run, shared by the clones of this query (a prepared
    /// statement's runs, a cached compiled query's sessions).
    pub choice: Arc<Mutex<Option<PlanChoice>>>,
    /// The table's generated columns, compiled with the query (each run works out the
    /// conditions on them its values imply: `write::implied`).
    pub generation: Option<Arc<Generation>>,
}

/// Compiles `query` if the native executor can run it.
pub(crate) fn compile(schema: &SchemaView, query: &Query) -> Option<NativeQuery> {
    let (select, distinct) = plain_select(query)?;
    if select.from.len() != 1 {
        return None;
    }
    let from = select.from.first()?;
    if !from.joins.is_empty() {
        return None;
    }
    let (table, qualifier) = table_ref(schema, &from.relation)?;
    let scope = Scope {
        table: &table,
        qualifier,
    };

    let mut names = Vec::new();
    let mut columns = Vec::new();
    let mut aggregates = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::Wildcard(options) if options.opt_alias.is_none() => {
                let plain = options.opt_ilike.is_none()
                    && options.opt_exclude.is_none()
                    && options.opt_except.is_none()
                    && options.opt_replace.is_none()
                    && options.opt_rename.is_none();
                if !plain {
                    return None;
                }
                for (i, column) in table.columns.iter().enumerate() {
                    if !column.hidden {
                        names.push(column.name.clone());
                        columns.push(i);
                    }
                }
            }
            SelectItem::UnnamedExpr(expr) => match scope.column(expr) {
                Some(column) => {
                    names.push(table.columns.get(column)?.name.clone());
                    columns.push(column);
                }
                None => {
                    let (aggregate, name) = Aggregate::compile(&scope, expr)?;
                    names.push(name);
                    aggregates.push(aggregate);
                }
            },
            SelectItem::ExprWithAlias { expr, alias } => {
                match scope.column(expr) {
                    Some(column) => columns.push(column),
                    None => aggregates.push(Aggregate::compile(&scope, expr)?.0),
                }
                names.push(ident_name(alias));
            }
            _ => return None,
        }
    }

    // An instant is written in the session's zone, which DataFusion's plan gives it
    // (`df::rules::time_zones`); an array travels as a list only DataFusion builds.
    if columns.iter().any(|&column| {
        table.columns.get(column).is_some_and(|column| {
            matches!(
                column.data_type,
                DataType::TimestampTz | DataType::Array { .. }
            )
        })
    }) {
        return None;
    }

    let mut conditions = Vec::new();
    if let Some(selection) = &select.selection {
        scope.conditions(selection, &mut conditions)?;
    }

    let mut order = Vec::new();
    for (expr, descending) in order_items(query)? {
        let column = order_target(&names, &columns, expr, |e| scope.operand(e))?;
        // A jsonb sorts by its own order, not its text's (`df::rules::jsonb_order`).
        if table
            .columns
            .get(column)
            .is_some_and(|c| c.declared == Some(Declared::Jsonb))
        {
            return None;
        }
        order.push(OrderItem { column, descending });
    }
    let (mut limit, offset) = limit_offset(query)?;

    let (shape, schema) = match (distinct, aggregates.is_empty()) {
        (false, true) => (
            Shape::Rows,
            renamed_schema(&table_schema(&table, &columns), &names),
        ),
        // One row of aggregates over every row that matches (no GROUP BY).
        (false, false) => {
            if !columns.is_empty() || !order.is_empty() || limit.is_some() || offset.is_some() {
                return None;
            }
            let fields = aggregates
                .iter()
                .zip(&names)
                .map(|(aggregate, name)| aggregate.field(&table, name))
                .collect::<Option<Vec<Field>>>()?;
            columns = aggregates.iter().filter_map(|a| a.column).collect();
            // A lone min or max is the first non-NULL value in its column's order: read in
            // that order (along a key or an index that gives it), one row.
            if let [aggregate] = aggregates.as_slice()
                && let (AggregateKind::Min | AggregateKind::Max, Some(column)) =
                    (aggregate.kind, aggregate.column)
            {
                conditions.push(Predicate::IsNotNull { column });
                order.push(OrderItem {
                    column,
                    descending: aggregate.kind == AggregateKind::Max,
                });
                limit = Some(Slot::Value(Datum::Int(1)));
            }
            (Shape::Aggregate(aggregates), Arc::new(Schema::new(fields)))
        }
        // DISTINCT rows in an order that names exactly the selected columns (so equal rows
        // are neighbours once sorted), of types whose equality both executors agree on.
        (true, true) => {
            let selected: HashSet<usize> = columns.iter().copied().collect();
            let ordered: HashSet<usize> = order.iter().map(|item| item.column).collect();
            let comparable = columns.iter().all(|c| {
                table.columns.get(*c).is_some_and(|c| {
                    !matches!(c.data_type, DataType::Float | DataType::Decimal { .. })
                })
            });
            if selected != ordered || !comparable || limit.is_some() || offset.is_some() {
                return None;
            }
            (
                Shape::Distinct,
                renamed_schema(&table_schema(&table, &columns), &names),
            )
        }
        (true, false) => return None,
    };
    let generation = Generation::compile(&table).ok().flatten();
    Some(NativeQuery {
        shape,
        schema,
        table,
        names,
        columns,
        conditions,
        order,
        limit,
        offset,
        choice: Arc::default(),
        generation,
    })
}

/// The SELECT of `query` when it has nothing but a projection, FROM, WHERE, ORDER BY, LIMIT
/// and OFFSET (and DISTINCT: the flag), all the native executor may compile.
pub(crate) fn plain_select(query: &Query) -> Option<(&Select, bool)> {
    let plain_query = query.with.is_none()
        && query.fetch.is_none()
        && query.locks.is_empty()
        && query.for_clause.is_none()
        && query.settings.is_none()
        && query.format_clause.is_none()
        && query.pipe_operators.is_empty();
    if !plain_query {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let distinct = match &select.distinct {
        None => false,
        Some(Distinct::Distinct) => true,
        Some(_) => return None,
    };
    let plain_select = select.select_modifiers.is_none()
        && select.top.is_none()
        && select.exclude.is_none()
        && select.into.is_none()
        && select.lateral_views.is_empty()
        && select.prewhere.is_none()
        && select.connect_by.is_empty()
        && matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        && select.cluster_by.is_empty()
        && select.distribute_by.is_empty()
        && select.sort_by.is_empty()
        && select.having.is_none()
        && select.named_window.is_empty()
        && select.qualify.is_none()
        && select.value_table_mode.is_none()
        && select.flavor == SelectFlavor::Standard;
    plain_select.then_some((select.as_ref(), distinct))
}

/// The LIMIT and OFFSET of `query`, as values or parameters; None for any other form.
pub(crate) fn limit_offset(query: &Query) -> Option<(Option<Slot>, Option<Slot>)> {
    Some(match &query.limit_clause {
        None => (None, None),
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return None;
            }
            let limit = match limit {
                Some(expr) => Some(slot(expr)?),
                None => None,
            };
            let offset = match offset {
                Some(offset) => Some(slot(&offset.value)?),
                None => None,
            };
            (limit, offset)
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            (Some(slot(limit)?), Some(slot(offset)?))
        }
    })
}

/// The ORDER BY items of `query` with whether each is descending; None for a form the key
/// order cannot give (a NULL placement other than the smallest value's, WITH FILL).
pub(crate) fn order_items(query: &Query) -> Option<Vec<(&Expr, bool)>> {
    let Some(order_by) = &query.order_by else {
        return Some(Vec::new());
    };
    let OrderByKind::Expressions(items) = &order_by.kind else {
        return None;
    };
    if order_by.interpolate.is_some() {
        return None;
    }
    items
        .iter()
        .map(|item| {
            let descending = item.options.asc == Some(false);
            // NULL is the smallest value: first ascending, last descending. Another placement
            // is a sort the key order does not give.
            let misplaced = item
                .options
                .nulls_first
                .is_some_and(|first| first == descending);
            (item.with_fill.is_none() && !misplaced).then_some((&item.expr, descending))
        })
        .collect()
}

/// The rowdex table a FROM item names, and the qualifier its columns take (its alias, else its
/// name); None for anything but a plain table name.
pub(crate) fn table_ref(
    schema: &SchemaView,
    relation: &TableFactor,
) -> Option<(Arc<TableDef>, String)> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        with_hints,
        version: None,
        with_ordinality: false,
        partitions,
        json_path: None,
        sample: None,
        index_hints,
    } = relation
    else {
        return None;
    };
    if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
        return None;
    }
    let [ObjectNamePart::Identifier(table_ident)] = name.0.as_slice() else {
        return None;
    };
    let table = schema.table(&ident_name(table_ident))?;
    let qualifier = match alias {
        Some(alias) if alias.columns.is_empty() && alias.at.is_none() => ident_name(&alias.name),
        Some(_) => return None,
        None => table.name.clone(),
    };
    Some((table, qualifier))
}

impl Scope<'_> {
    /// A row-value comparison of columns against values (either side first). Only over NOT
    /// NULL columns: a NULL inside a row value is where SQL engines differ, so such a
    /// comparison is left to DataFusion.
    fn row_compare(&self, left: &Expr, op: CmpOp, right: &Expr) -> Option<Predicate<Slot>> {
        let (Expr::Tuple(left), Expr::Tuple(right)) = (left, right) else {
            return None;
        };
        if left.len() != right.len() || left.is_empty() {
            return None;
        }
        let ordering = matches!(op, CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq);
        let on_columns = |exprs: &[Expr]| -> Option<Vec<usize>> {
            exprs.iter().map(|e| self.operand(e)).collect()
        };
        let (columns, values, op) = match on_columns(left) {
            Some(columns) => (columns, right, op),
            None => (on_columns(right)?, left, op.flipped()),
        };
        let not_null = columns.iter().all(|c| {
            self.table.key_position(*c).is_some()
                || self.table.columns.get(*c).is_some_and(|c| !c.nullable)
        });
        if !ordering || !not_null {
            return None;
        }
        let values = values.iter().map(slot).collect::<Option<Vec<_>>>()?;
        Some(Predicate::RowCompare {
            columns,
            op,
            values,
        })
    }

    /// Adds the conjuncts of `expr`; None when one of them is not a simple condition.
    pub(crate) fn conditions(&self, expr: &Expr, out: &mut Vec<Predicate<Slot>>) -> Option<()> {
        match expr {
            Expr::Nested(inner) => self.conditions(inner, out),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                self.conditions(left, out)?;
                self.conditions(right, out)
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Or,
                right,
            } => {
                let (mut left_arm, mut right_arm) = (Vec::new(), Vec::new());
                self.conditions(left, &mut left_arm)?;
                self.conditions(right, &mut right_arm)?;
                out.extend(Predicate::any_of(vec![left_arm, right_arm]));
                Some(())
            }
            Expr::BinaryOp { left, op, right }
                if matches!(left.as_ref(), Expr::Tuple(_))
                    || matches!(right.as_ref(), Expr::Tuple(_)) =>
            {
                out.push(self.row_compare(left, cmp_op(op)?, right)?);
                Some(())
            }
            Expr::BinaryOp { left, op, right } => {
                if self.compares_in_datafusion(left) || self.compares_in_datafusion(right) {
                    return None;
                }
                let op = cmp_op(op)?;
                let condition = if let Some(column) = self.operand(left) {
                    Predicate::Compare {
                        column,
                        op,
                        value: slot(right)?,
                    }
                } else {
                    Predicate::Compare {
                        column: self.operand(right)?,
                        op: op.flipped(),
                        value: slot(left)?,
                    }
                };
                out.push(condition);
                Some(())
            }
            // A JSON column's literals are normalised by DataFusion (`df::rules::uuid_literals`).
            Expr::Between { expr, .. } | Expr::InList { expr, .. }
                if self.compares_in_datafusion(expr) =>
            {
                None
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => {
                let column = self.operand(expr)?;
                out.push(Predicate::Compare {
                    column,
                    op: CmpOp::GtEq,
                    value: slot(low)?,
                });
                out.push(Predicate::Compare {
                    column,
                    op: CmpOp::LtEq,
                    value: slot(high)?,
                });
                Some(())
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } => {
                let column = self.operand(expr)?;
                let values = list.iter().map(slot).collect::<Option<Vec<_>>>()?;
                out.push(Predicate::InList { column, values });
                Some(())
            }
            Expr::Like {
                negated: false,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => {
                let column = self.operand(expr)?;
                let text_column = matches!(
                    self.table.columns.get(column)?.data_type,
                    DataType::Text { .. }
                );
                let Slot::Value(Datum::Text(pattern)) = slot(pattern)? else {
                    return None;
                };
                // A backslash may be an escape to DataFusion: left to it.
                if !text_column || pattern.contains('\\') {
                    return None;
                }
                out.push(Predicate::Like {
                    column,
                    pattern: pattern.clone(),
                });
                Some(())
            }
            Expr::IsNull(inner) => {
                out.push(Predicate::IsNull {
                    column: self.operand(inner)?,
                });
                Some(())
            }
            Expr::IsNotNull(inner) => {
                out.push(Predicate::IsNotNull {
                    column: self.operand(inner)?,
                });
                Some(())
            }
            _ => None,
        }
    }
}

/// An ORDER BY item's target among the result's columns (`columns`, named `names`): a result
/// position (`ORDER BY 2`), a result name, or the column `by_table` reads the expression as. A
/// name that is both a result alias and a different column is left to DataFusion. Serves one
/// table (columns by position) and joins (columns of several tables) alike.
pub(crate) fn order_target<C: Copy + PartialEq>(
    names: &[String],
    columns: &[C],
    expr: &Expr,
    by_table: impl FnOnce(&Expr) -> Option<C>,
) -> Option<C> {
    if let Expr::Value(value) = expr {
        let Value::Number(text, _) = &value.value else {
            return None;
        };
        let position: usize = text.parse().ok()?;
        return columns.get(position.checked_sub(1)?).copied();
    }
    let by_alias = match expr {
        Expr::Identifier(ident) => {
            let name = ident_name(ident);
            let mut matches = names
                .iter()
                .zip(columns)
                .filter(|(n, _)| **n == name)
                .map(|(_, c)| *c);
            match (matches.next(), matches.next()) {
                (None, _) => None,
                (Some(one), None) => Some(one),
                (Some(_), Some(_)) => return None,
            }
        }
        _ => None,
    };
    match (by_alias, by_table(expr)) {
        (Some(a), Some(t)) if a != t => None,
        (Some(a), _) => Some(a),
        (None, t) => t,
    }
}

pub(crate) fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::NotEq,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::LtEq,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}
