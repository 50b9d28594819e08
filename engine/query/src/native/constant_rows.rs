//! The rows of an INSERT's VALUES list whose items are constant expressions (`$1 + 1`,
//! `'a' || 'b'`, `CURRENT_TIMESTAMP`, `lower('X')`), computed by rowdex's own scalar
//! expressions instead of a DataFusion query: an INSERT of a prepared statement with its
//! parameters written in, or pgbench's `... VALUES (..., CURRENT_TIMESTAMP)`.
//!
//! DataFusion types a VALUES list column by column across its rows (an integer in one row and
//! a float in another make a float column); the rows are only taken here when every column's
//! values share one kind, so each value is the one DataFusion's query gives. A column
//! reference, a DECIMAL target (whose literals are read exactly from their text on the other
//! paths) or anything `Scalar` does not evaluate leaves the VALUES to DataFusion.

use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::sql::sqlparser::ast::{Query, SetExpr};
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::Datum;

use crate::native::kind::Kind;
use crate::native::scalar::Scalar;
use crate::native::scope::{Scope, Slot};

/// The VALUES rows of `query` for the `targets` columns of `table`, computed natively; None
/// to leave them to DataFusion.
pub(crate) fn constant_rows(
    table: &TableDef,
    targets: &[usize],
    query: &Query,
) -> Option<Vec<Vec<Datum>>> {
    if query.with.is_some() || query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Values(values) = query.body.as_ref() else {
        return None;
    };
    let decimal_target = targets.iter().any(|c| {
        table
            .columns
            .get(*c)
            .is_some_and(|c| matches!(c.data_type, DataType::Decimal { .. }))
    });
    if decimal_target {
        return None;
    }
    // A scope in which no name is a column: VALUES cannot read the table's row.
    let scope = Scope::new(table, None);
    // One time for the whole statement, as DataFusion's now() is the statement's start.
    let now = statement_time()?;
    let mut kinds: Vec<Kind> = Vec::new();
    let mut rows = Vec::with_capacity(values.rows.len());
    for items in &values.rows {
        let mut row = Vec::with_capacity(items.len());
        for (position, item) in items.iter().enumerate() {
            let scalar = Scalar::compile(&scope, item)?.at_time(&now);
            if scalar.reads_columns() {
                return None;
            }
            let kind = scalar.typed(table, &[])?;
            match kinds.get_mut(position) {
                Some(common) => *common = Kind::common([*common, kind])?,
                None => kinds.push(kind),
            }
            row.push(scalar.evaluate(table, &[], &[])?);
        }
        rows.push(row);
    }
    Some(rows)
}

/// Now, in microseconds since 1970 (UTC), as a TIMESTAMP datum holds it.
fn statement_time() -> Option<Datum> {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_micros()).ok().map(Datum::Timestamp)
}

impl Scalar {
    /// This expression with `now()` as the statement's time `now`.
    fn at_time(self, now: &Datum) -> Scalar {
        self.map_children(&|child| child.at_time(now), now)
    }

    fn map_children(self, map: &dyn Fn(Scalar) -> Scalar, now: &Datum) -> Scalar {
        let boxed = |inner: Box<Scalar>| Box::new(map(*inner));
        match self {
            Scalar::Now => Scalar::Value(Slot::Value(now.clone())),
            Scalar::Negate(inner) => Scalar::Negate(boxed(inner)),
            Scalar::Arithmetic { op, left, right } => Scalar::Arithmetic {
                op,
                left: boxed(left),
                right: boxed(right),
            },
            Scalar::Concat(left, right) => Scalar::Concat(boxed(left), boxed(right)),
            Scalar::Coalesce(args) => Scalar::Coalesce(args.into_iter().map(map).collect()),
            Scalar::Text(function, inner) => Scalar::Text(function, boxed(inner)),
            Scalar::IntegerText(inner) => Scalar::IntegerText(boxed(inner)),
            Scalar::IntegerFloat(inner) => Scalar::IntegerFloat(boxed(inner)),
            // A CASE keeps its conditions as they are: one that reads `now()` is not evaluated.
            other @ (Scalar::Column(_) | Scalar::Value(_) | Scalar::Case { .. }) => other,
        }
    }
}
