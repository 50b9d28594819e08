//! `x IN (SELECT c FROM t WHERE ...)` and `[NOT] EXISTS (SELECT ... FROM t WHERE t.c = x ...)`
//! among the conjuncts of a join's (or a one-table query's) WHERE clause, read as one more table
//! of the join, semi or anti joined (`JoinedAs::Semi`, `JoinedAs::Anti`): its subquery's own
//! conditions become its conditions, and `x = c` (IN) or each `t.c = x` (EXISTS) an equality
//! with the outer tables, by which it is probed, or by which it drives.
//!
//! Only what means the same as a semi or anti join is read so: a subquery over one base table
//! with a conjunction of conditions on its own columns and (EXISTS) equalities of its columns
//! with the outer tables' columns; no grouping, ordering, limit or nested subquery; `NOT IN`
//! never (a NULL among the subquery's values makes it NULL, which no anti join says). Names
//! inside the subquery resolve in its own table first, as SQL scopes them.

use std::ops::Range;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Query, SelectItem};

use crate::db::schema_view::SchemaView;
use crate::native::compile::plain_select;
use crate::native::join::scope::{Found, JoinScope, joined_table};
use crate::native::join::{ColumnRef, JoinTable, JoinedAs};

/// A conjunct of the WHERE clause that filters by a subquery.
pub(super) enum Filter<'q> {
    In { column: &'q Expr, query: &'q Query },
    Exists { query: &'q Query, negated: bool },
}

/// Splits the conjuncts of `expr` into the subquery filters and the rest.
pub(super) fn split<'q>(expr: &'q Expr, plain: &mut Vec<&'q Expr>, filters: &mut Vec<Filter<'q>>) {
    match expr {
        Expr::Nested(inner) => split(inner, plain, filters),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split(left, plain, filters);
            split(right, plain, filters);
        }
        Expr::InSubquery {
            expr,
            subquery,
            negated: false,
        } => filters.push(Filter::In {
            column: expr,
            query: subquery,
        }),
        Expr::Exists { subquery, negated } => filters.push(Filter::Exists {
            query: subquery,
            negated: *negated,
        }),
        _ => plain.push(expr),
    }
}

impl Filter<'_> {
    fn query(&self) -> &Query {
        match self {
            Filter::In { query, .. } | Filter::Exists { query, .. } => query,
        }
    }

    /// The subquery's table, semi or anti joined; None when the subquery is not one the
    /// native join reads (see the module's header).
    pub(super) fn table(&self, schema: &SchemaView) -> Option<JoinTable> {
        let query = self.query();
        if query.order_by.is_some() || query.limit_clause.is_some() {
            return None;
        }
        let (select, _) = plain_select(query)?;
        let [from] = select.from.as_slice() else {
            return None;
        };
        if !from.joins.is_empty() {
            return None;
        }
        let kind = match self {
            Filter::Exists { negated: true, .. } => JoinedAs::Anti,
            _ => JoinedAs::Semi,
        };
        joined_table(schema, &from.relation, kind)
    }

    /// Reads the subquery's WHERE clause (and for IN its column) into the conditions of its
    /// table `sub` and equalities with the tables `outer`; None when a conjunct is neither.
    pub(super) fn read(
        &self,
        scope: &JoinScope<'_>,
        sub: usize,
        outer: Range<usize>,
        found: &mut Found,
    ) -> Option<()> {
        let (select, _) = plain_select(self.query())?;
        if let Some(selection) = &select.selection {
            let mut plain = Vec::new();
            let mut nested = Vec::new();
            split(selection, &mut plain, &mut nested);
            if !nested.is_empty() {
                return None;
            }
            for conjunct in plain {
                conjunct_of(scope, conjunct, sub, outer.clone(), found)?;
            }
        }
        match self {
            Filter::In { column, .. } => {
                let [
                    SelectItem::UnnamedExpr(selected)
                    | SelectItem::ExprWithAlias { expr: selected, .. },
                ] = select.projection.as_slice()
                else {
                    return None;
                };
                let inner = scope.column(selected, sub..sub + 1)?;
                let outer = scope.column(column, outer)?;
                scope
                    .comparable(inner, outer)
                    .then(|| found.equalities.push((outer, inner)))
            }
            Filter::Exists { .. } => select.projection.iter().all(never_fails).then_some(()),
        }
    }
}

/// Whether an EXISTS subquery's select item can be left unevaluated, as PostgreSQL leaves it:
/// a literal, a column or a wildcard (anything else, DataFusion plans as written).
fn never_fails(item: &SelectItem) -> bool {
    match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => matches!(
            expr,
            Expr::Value(_) | Expr::Identifier(_) | Expr::CompoundIdentifier(_)
        ),
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => true,
        _ => false,
    }
}

/// A conjunct of the WHERE clause of subquery table `sub`: a condition on its own columns, or
/// an equality of one of its columns with a column of the `outer` tables.
fn conjunct_of(
    scope: &JoinScope<'_>,
    expr: &Expr,
    sub: usize,
    outer: Range<usize>,
    found: &mut Found,
) -> Option<()> {
    let resolve = |e: &Expr| {
        scope
            .column(e, sub..sub + 1)
            .or_else(|| scope.column(e, outer.clone()))
    };
    if let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = expr
        && let (Some(a), Some(b)) = (resolve(left), resolve(right))
    {
        let crosses = (a.table == sub) != (b.table == sub);
        let (inner, other): (ColumnRef, ColumnRef) = if a.table == sub { (a, b) } else { (b, a) };
        return (crosses && scope.comparable(inner, other))
            .then(|| found.equalities.push((other, inner)));
    }
    found.condition_of(scope, expr, sub)
}
