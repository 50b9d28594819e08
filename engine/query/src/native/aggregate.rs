//! Aggregates the native executor computes itself over the rows of a key or index range:
//! `count(*)`, `count(c)`, `sum(c)`, `avg(c)`, `min(c)`, `max(c)` without GROUP BY, each
//! giving DataFusion's answer under DataFusion's name and type.
//!
//! Only what gives exactly DataFusion's answer compiles or finishes: no float or DECIMAL
//! argument (a float sum depends on the order of additions, which DataFusion's kernels
//! choose), `sum` and `avg` of declared INTEGER and SMALLINT columns only (a BIGINT's sum is a
//! numeric where the session follows PostgreSQL), and a sum that overflows, or an average whose
//! partial sums could round in a float, leaves the query to DataFusion.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, SchemaRef};
use datafusion::sql::sqlparser::ast::{Expr, Function, FunctionArg, FunctionArgExpr};
use rowdex_catalog::{DataType, Declared, TableDef};
use rowdex_codec::Datum;

use crate::error::Result;
use crate::native::scalar::plain_arguments;
use crate::native::scope::Scope;
use crate::values::{column_array, column_field};

/// Integers whose every partial sum stays within this magnitude add exactly in a float.
const EXACT_IN_FLOAT: i128 = 1 << 53;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum AggregateKind {
    CountRows,
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

/// One aggregate of the select list: its function and the table column it reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Aggregate {
    pub kind: AggregateKind,
    /// The argument; None for `count(*)`.
    pub column: Option<usize>,
}

impl Aggregate {
    /// Compiles `expr` if it is an aggregate the native executor computes; with the name
    /// DataFusion gives it (`sum(t.k)`, `count(*)`), qualified as the query qualifies the table.
    pub(crate) fn compile(scope: &Scope<'_>, expr: &Expr) -> Option<(Aggregate, String)> {
        let Expr::Function(function) = expr else {
            return None;
        };
        let argument = single_argument(function)?;
        let name = function.name.to_string().to_lowercase();
        let kind = match name.as_str() {
            "count" => AggregateKind::Count,
            "sum" => AggregateKind::Sum,
            "avg" => AggregateKind::Avg,
            "min" => AggregateKind::Min,
            "max" => AggregateKind::Max,
            _ => return None,
        };
        let Some(argument) = argument else {
            return (kind == AggregateKind::Count).then(|| {
                let aggregate = Aggregate {
                    kind: AggregateKind::CountRows,
                    column: None,
                };
                (aggregate, "count(*)".to_string())
            });
        };
        let column = scope.column(argument)?;
        let def = scope.table.columns.get(column)?;
        let accepted = match kind {
            AggregateKind::Count => true,
            AggregateKind::Sum | AggregateKind::Avg => {
                def.data_type == DataType::Integer
                    && matches!(def.declared, Some(Declared::Integer | Declared::SmallInt))
            }
            // An instant comes out in the session's zone, which DataFusion's plan gives it.
            _ => !matches!(
                def.data_type,
                DataType::Float
                    | DataType::Decimal { .. }
                    | DataType::TimestampTz
                    | DataType::Array { .. }
            ),
        };
        if !accepted {
            return None;
        }
        let aggregate = Aggregate {
            kind,
            column: Some(column),
        };
        Some((
            aggregate,
            format!("{name}({}.{})", scope.qualifier, def.name),
        ))
    }

    /// The result column, as DataFusion types it.
    pub(crate) fn field(&self, table: &TableDef, name: &str) -> Option<Field> {
        Some(match (self.kind, self.column) {
            (AggregateKind::CountRows | AggregateKind::Count, _) => {
                Field::new(name, ArrowType::Int64, false)
            }
            (AggregateKind::Sum, _) => Field::new(name, ArrowType::Int64, true),
            (AggregateKind::Avg, _) => Field::new(name, ArrowType::Float64, true),
            (AggregateKind::Min | AggregateKind::Max, Some(column)) => {
                let mut field = column_field(table.columns.get(column)?)
                    .with_name(name)
                    .with_nullable(true);
                field.set_metadata(HashMap::new());
                field
            }
            (AggregateKind::Min | AggregateKind::Max, None) => return None,
        })
    }
}

/// The `(...)` of a call with one plain argument (Some(expr)) or `*` (None); None for anything
/// else (DISTINCT, FILTER, OVER, ORDER BY inside, several arguments).
fn single_argument(function: &Function) -> Option<Option<&Expr>> {
    match plain_arguments(function)?.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => Some(None),
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))] => Some(Some(expr)),
        _ => None,
    }
}

/// The aggregates' values over `rows` (every column of the table); None where DataFusion's
/// answer could differ (a sum that overflows, an average that a float could round).
pub(crate) fn aggregate_row(aggregates: &[Aggregate], rows: &[Vec<Datum>]) -> Option<Vec<Datum>> {
    aggregates
        .iter()
        .map(|aggregate| aggregate.over(rows))
        .collect()
}

impl Aggregate {
    fn over(&self, rows: &[Vec<Datum>]) -> Option<Datum> {
        let values = || {
            let column = self.column.unwrap_or(0);
            rows.iter()
                .filter_map(move |row| row.get(column))
                .filter(|value| !value.is_null())
        };
        match self.kind {
            AggregateKind::CountRows => i64::try_from(rows.len()).ok().map(Datum::Int),
            AggregateKind::Count => i64::try_from(values().count()).ok().map(Datum::Int),
            AggregateKind::Sum | AggregateKind::Avg => {
                let (mut sum, mut magnitude, mut count) = (0i64, 0i128, 0i64);
                for value in values() {
                    let Datum::Int(v) = value else {
                        return None;
                    };
                    sum = sum.checked_add(*v)?;
                    magnitude += i128::from(*v).abs();
                    count += 1;
                }
                match (self.kind, count) {
                    (_, 0) => Some(Datum::Null),
                    (AggregateKind::Sum, _) => Some(Datum::Int(sum)),
                    _ if magnitude > EXACT_IN_FLOAT => None,
                    _ => Some(Datum::Float(sum as f64 / count as f64)),
                }
            }
            AggregateKind::Min | AggregateKind::Max => {
                let wanted = match self.kind {
                    AggregateKind::Min => Ordering::Less,
                    _ => Ordering::Greater,
                };
                let mut best: Option<&Datum> = None;
                for value in values() {
                    if best.is_none_or(|b| value.key_cmp(b) == wanted) {
                        best = Some(value);
                    }
                }
                Some(best.cloned().unwrap_or(Datum::Null))
            }
        }
    }
}

/// The one-row batch of the aggregates' `values`, in `schema` (see [`Aggregate::field`]).
pub(crate) fn aggregate_batch(
    table: &TableDef,
    schema: &SchemaRef,
    aggregates: &[Aggregate],
    values: Vec<Datum>,
) -> Result<RecordBatch> {
    let arrays: Vec<ArrayRef> = aggregates
        .iter()
        .zip(values)
        .map(|(aggregate, value)| -> ArrayRef {
            match (aggregate.kind, aggregate.column, value) {
                (AggregateKind::Min | AggregateKind::Max, Some(column), value) => {
                    let mut row = vec![Datum::Null; table.columns.len()];
                    if let Some(slot) = row.get_mut(column) {
                        *slot = value;
                    }
                    column_array(table, column, &[row])
                }
                (AggregateKind::Avg, _, Datum::Float(v)) => Arc::new(Float64Array::from(vec![v])),
                (AggregateKind::Avg, _, _) => Arc::new(Float64Array::from(vec![None])),
                (_, _, Datum::Int(v)) => Arc::new(Int64Array::from(vec![v])),
                _ => Arc::new(Int64Array::from(vec![None])),
            }
        })
        .collect();
    Ok(RecordBatch::try_new(schema.clone(), arrays)?)
}
