//! The one table a native query or write reads, as its SQL names it: columns by name or
//! qualified by the table's name or alias, and the values written in it (literals or
//! parameters). What `compile`, `scalar` and `aggregate` read expressions against.

use datafusion::sql::sqlparser::ast::{Expr, Value};
use rowdex_catalog::{ColumnDef, DataType, Declared, TableDef};
use rowdex_codec::Datum;

use crate::sql::literals::literal_exact;
use crate::sql::names::ident_name;
use crate::write::generated::Generation;

/// A value in the query: written in the SQL, or the n-th parameter (from 0). A compiled
/// query's conditions are the planner's predicates over slots (`Predicate<Slot>`), bound to
/// values at each run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Slot {
    Value(Datum),
    Param(usize),
}

/// The one table a query reads, and the name its columns may be qualified with.
pub(crate) struct Scope<'a> {
    pub(crate) table: &'a TableDef,
    pub(crate) qualifier: String,
}

impl<'a> Scope<'a> {
    /// `table`, its columns qualified by `alias` if it has one, else by its name.
    pub(crate) fn new(table: &'a TableDef, alias: Option<String>) -> Scope<'a> {
        let qualifier = alias.unwrap_or_else(|| table.name.clone());
        Scope { table, qualifier }
    }

    /// Whether `expr` names a column whose comparisons are left to DataFusion: JSON compares by
    /// its own rules (`jsonb`'s order, a literal normalised first), and a TIMESTAMPTZ with
    /// values read in the session's zone (a `TIMESTAMP '...'` is a time of its wall clock),
    /// which DataFusion's plan applies (`df::rules::time_zones`) and a compiled form shared by
    /// sessions of different zones cannot.
    pub(crate) fn compares_in_datafusion(&self, expr: &Expr) -> bool {
        self.column(expr)
            .and_then(|column| self.table.columns.get(column))
            .is_some_and(|column| {
                matches!(column.declared, Some(Declared::Json | Declared::Jsonb))
                    || column.data_type == DataType::TimestampTz
            })
    }

    /// The visible table column an expression names.
    pub(crate) fn column(&self, expr: &Expr) -> Option<usize> {
        let name = match expr {
            Expr::Identifier(ident) => ident_name(ident),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, column] if ident_name(qualifier) == self.qualifier => {
                    ident_name(column)
                }
                _ => return None,
            },
            Expr::Nested(inner) => return self.column(inner),
            _ => return None,
        };
        let position = self.table.column_index(&name)?;
        (!self.table.columns.get(position)?.hidden).then_some(position)
    }

    /// The column a condition or an ORDER BY item reads: a visible column `expr` names, or the
    /// generated column (an expression index's hidden one among them) whose stored value is
    /// `expr`'s, read in its place: `lower(email) = 'x'` is then a condition on it.
    pub(crate) fn operand(&self, expr: &Expr) -> Option<usize> {
        self.column(expr).or_else(|| self.stand_in(expr))
    }

    /// The generated column whose stored value is `expr`'s (see [`Scope::operand`]).
    fn stand_in(&self, expr: &Expr) -> Option<usize> {
        if !self.table.columns.iter().any(ColumnDef::is_generated) {
            return None;
        }
        Generation::compile(self.table)
            .ok()
            .flatten()?
            .column_for_sql(expr, &self.qualifier)
    }
}

/// A literal (read by the exact rule, see `sql::literals`) or a parameter.
pub(crate) fn slot(expr: &Expr) -> Option<Slot> {
    match expr {
        Expr::Nested(inner) => slot(inner),
        Expr::Value(value) => match &value.value {
            Value::Placeholder(name) => {
                let n: usize = name.strip_prefix('$')?.parse().ok()?;
                Some(Slot::Param(n.checked_sub(1)?))
            }
            _ => literal_exact(expr).map(Slot::Value),
        },
        _ => literal_exact(expr).map(Slot::Value),
    }
}
