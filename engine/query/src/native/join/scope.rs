//! Names and conjuncts of a join's SQL, as `compile` and `subquery` read them: the join's
//! tables as SQL names their columns ([`JoinScope`]), and what a conjunction was found to say
//! about them ([`Found`]): each table's conditions and the equalities between tables.

use std::ops::Range;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, TableFactor};
use rowdex_catalog::DataType;
use rowdex_planner::Predicate;

use crate::db::schema_view::SchemaView;
use crate::native::compile::table_ref;
use crate::native::join::{ColumnRef, JoinTable, JoinedAs};
use crate::native::scope::{Scope, Slot};

/// The table `relation` names, joined as `kind`, without conditions yet.
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
    pub(super) conditions: Vec<Vec<Predicate<Slot>>>,
    pub(super) equalities: Vec<(ColumnRef, ColumnRef)>,
}

impl Found {
    pub(super) fn new(tables: usize) -> Found {
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
    pub(super) fn admit(
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

/// The join's tables as SQL names their columns.
pub(super) struct JoinScope<'a> {
    tables: &'a [JoinTable],
    scopes: Vec<Scope<'a>>,
}

impl<'a> JoinScope<'a> {
    pub(super) fn new(tables: &'a [JoinTable]) -> JoinScope<'a> {
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
    pub(super) fn all_columns(
        &self,
        table: usize,
        names: &mut Vec<String>,
        output: &mut Vec<ColumnRef>,
    ) {
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
    pub(super) fn conjuncts(
        &self,
        expr: &Expr,
        visible: Range<usize>,
        found: &mut Found,
    ) -> Option<()> {
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
