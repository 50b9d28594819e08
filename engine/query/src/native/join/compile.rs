//! Recognising a join the native executor runs (`native::join`), straight from the parsed SQL:
//! tables listed with commas or joined by `[INNER] JOIN t ON ...` or `LEFT [OUTER] JOIN t ON
//! ...`; each ON and the WHERE a conjunction of equalities between two tables' columns and of
//! one table's column-versus-value conditions (as `native::compile` reads them for one table);
//! plain columns selected (`*` and `t.*` too); ORDER BY on columns, LIMIT and OFFSET; `IN` and
//! `[NOT] EXISTS` subqueries among the WHERE clause's conjuncts as semi and anti joined tables
//! (`subquery`). A column two tables have must be qualified, an ON may name only the tables of its FROM item joined so
//! far, as in PostgreSQL, and a LEFT JOIN's table only its own ON may test or join: anything
//! else is left to DataFusion, which answers or refuses it.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, JoinConstraint, JoinOperator, ObjectNamePart, Query, SelectItem,
    SelectItemQualifiedWildcardKind, TableFactor, WildcardAdditionalOptions,
};
use rowdex_catalog::DataType;
use rowdex_planner::Predicate;

use crate::db::schema_view::SchemaView;
use crate::native::compile::{limit_offset, order_items, order_target, plain_select, table_ref};
use crate::native::join::subquery::{self, Filter};
use crate::native::join::{ColumnRef, JoinOrderItem, JoinTable, JoinedAs, NativeJoin};
use crate::native::scope::{Scope, Slot};
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

pub(super) fn joined_table(
    schema: &SchemaView,
    relation: &TableFactor,
    kind: JoinedAs,
) -> Option<JoinTable> {
    let (table, qualifier) = table_ref(schema, relation)?;
    Some(JoinTable {
        table,
        qualifier,
        conditions: Vec::new(),
        kind,
    })
}

/// The conjuncts of one ON or of the WHERE clause, as read: each table's conditions, and the
/// equalities between tables.
pub(super) struct Found {
    conditions: Vec<Vec<Predicate<Slot>>>,
    pub(super) equalities: Vec<(ColumnRef, ColumnRef)>,
}

impl Found {
    fn new(tables: usize) -> Found {
        Found {
            conditions: vec![Vec::new(); tables],
            equalities: Vec::new(),
        }
    }

    /// Reads `expr` as a condition on the columns of table `table` alone.
    pub(super) fn condition_of(
        &mut self,
        scope: &JoinScope<'_>,
        expr: &Expr,
        table: usize,
    ) -> Option<()> {
        let mut read = Vec::new();
        scope.scopes.get(table)?.conditions(expr, &mut read)?;
        self.conditions.get_mut(table)?.extend(read);
        Some(())
    }

    /// Moves what was found into the query's conditions and equalities, where a LEFT JOIN's
    /// table allows: only its own ON (`own`) tests it or joins it. None when another names
    /// it, or its ON tests another table.
    fn admit(
        &mut self,
        tables: &[JoinTable],
        own: Option<usize>,
        conditions: &mut [Vec<Predicate<Slot>>],
        equalities: &mut Vec<(ColumnRef, ColumnRef)>,
    ) -> Option<()> {
        let outer = |table: usize| tables.get(table).is_some_and(JoinTable::outer);
        let allowed = |table: usize| match own {
            Some(own) if outer(own) => table == own,
            _ => !outer(table),
        };
        for (table, found) in self.conditions.iter_mut().enumerate() {
            if !found.is_empty() && !allowed(table) {
                return None;
            }
            conditions.get_mut(table)?.append(found);
        }
        for (a, b) in self.equalities.drain(..) {
            let admitted = match own {
                Some(own) if outer(own) => a.table == own || b.table == own,
                _ => !outer(a.table) && !outer(b.table),
            };
            if !admitted {
                return None;
            }
            equalities.push((a, b));
        }
        Some(())
    }
}

fn plain_wildcard(options: &WildcardAdditionalOptions) -> bool {
    options.opt_alias.is_none()
        && options.opt_ilike.is_none()
        && options.opt_exclude.is_none()
        && options.opt_except.is_none()
        && options.opt_replace.is_none()
        && options.opt_rename.is_none()
}

/// The join's tables as SQL names their columns.
pub(super) struct JoinScope<'a> {
    tables: &'a [JoinTable],
    scopes: Vec<Scope<'a>>,
}

impl<'a> JoinScope<'a> {
    fn new(tables: &'a [JoinTable]) -> JoinScope<'a> {
        let scopes = tables
            .iter()
            .map(|joined| Scope {
                table: &joined.table,
                qualifier: joined.qualifier.clone(),
            })
            .collect();
        JoinScope { tables, scopes }
    }

    /// The column `expr` names among the `visible` tables: qualified, or a name only one of
    /// them has.
    pub(super) fn column(&self, expr: &Expr, visible: Range<usize>) -> Option<ColumnRef> {
        let mut found = self
            .scopes
            .iter()
            .enumerate()
            .filter(|(table, _)| visible.contains(table))
            .filter_map(|(table, scope)| {
                Some(ColumnRef {
                    table,
                    column: scope.column(expr)?,
                })
            });
        let column = found.next()?;
        found.next().is_none().then_some(column)
    }

    /// Every visible column of `table`, as `*` selects them.
    fn all_columns(&self, table: usize, names: &mut Vec<String>, output: &mut Vec<ColumnRef>) {
        let Some(joined) = self.tables.get(table) else {
            return;
        };
        for (column, def) in joined.table.columns.iter().enumerate() {
            if !def.hidden {
                names.push(def.name.clone());
                output.push(ColumnRef { table, column });
            }
        }
    }

    /// Reads the conjuncts of `expr` (over the `visible` tables) into `found`: an equality of
    /// two tables' columns, or a condition of the one table it tests. None when a conjunct is
    /// neither.
    fn conjuncts(&self, expr: &Expr, visible: Range<usize>, found: &mut Found) -> Option<()> {
        match expr {
            Expr::Nested(inner) => self.conjuncts(inner, visible, found),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                self.conjuncts(left, visible.clone(), found)?;
                self.conjuncts(right, visible, found)
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if self.column(left, visible.clone()).is_some()
                && self.column(right, visible.clone()).is_some() =>
            {
                let a = self.column(left, visible.clone())?;
                let b = self.column(right, visible)?;
                (a.table != b.table && self.comparable(a, b)).then(|| found.equalities.push((a, b)))
            }
            _ => {
                // A condition on one table's columns: exactly one table must read it so.
                let mut owner = None;
                for (table, scope) in self.scopes.iter().enumerate() {
                    let mut read = Vec::new();
                    if visible.contains(&table) && scope.conditions(expr, &mut read).is_some() {
                        if owner.is_some() {
                            return None;
                        }
                        owner = Some((table, read));
                    }
                }
                let (table, read) = owner?;
                found.conditions.get_mut(table)?.extend(read);
                Some(())
            }
        }
    }

    /// Whether an equality of `a` and `b` means the same compared as values and as encoded
    /// keys: the same type (decimals of one scale), never floats (-0.0 and NaN).
    pub(super) fn comparable(&self, a: ColumnRef, b: ColumnRef) -> bool {
        let data_type = |c: ColumnRef| {
            self.tables
                .get(c.table)
                .and_then(|t| t.table.columns.get(c.column))
                .map(|def| def.data_type)
        };
        match (data_type(a), data_type(b)) {
            (Some(DataType::Float), _) | (_, Some(DataType::Float)) => false,
            (
                Some(DataType::Decimal { scale: x, .. }),
                Some(DataType::Decimal { scale: y, .. }),
            ) => x == y,
            (Some(x), Some(y)) => std::mem::discriminant(&x) == std::mem::discriminant(&y),
            _ => false,
        }
    }
}
