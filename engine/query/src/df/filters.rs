//! Translation of DataFusion filter expressions into the planner's predicate IR.
//!
//! Only a filter that translates completely is reported to DataFusion as `Exact`: the scan then
//! applies it, either through the key range or as a residual check on each row. Anything else
//! (functions, casts, column-to-column comparisons, NOT around an OR) is left to DataFusion.

use datafusion::logical_expr::{
    Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown, expr::InList, expr::Like,
};
use datafusion::scalar::ScalarValue;
use rowdex_catalog::{ColumnDef, DataType, TableDef};
use rowdex_codec::Datum;
use rowdex_planner::{CmpOp, Predicate};

use crate::df::rules::in_list_folding::unfolded_argument;
use crate::values::{column_type, datum_from_scalar, exact_value};
use crate::write::generated::Generation;

/// What a table provider answers DataFusion for each filter: `usable` (Exact for a scan that
/// applies it, Inexact for one that only narrows its key ranges by it) when it translates,
/// Unsupported otherwise.
pub fn pushdown(
    table: &TableDef,
    filters: &[&Expr],
    usable: TableProviderFilterPushDown,
) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| match translate(table, f) {
            Some(_) => usable.clone(),
            None => TableProviderFilterPushDown::Unsupported,
        })
        .collect()
}

/// The predicates equivalent to `expr`, or None when it cannot be expressed exactly.
pub fn translate(table: &TableDef, expr: &Expr) -> Option<Vec<Predicate>> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                let mut all = translate(table, left)?;
                all.extend(translate(table, right)?);
                Some(all)
            }
            // DataFusion rewrites short IN lists into ORs of equalities: `any_of` folds them
            // back; other ORs stay ORs, each arm a conjunction.
            Operator::Or => Some(Predicate::any_of(vec![
                translate(table, left)?,
                translate(table, right)?,
            ])),
            _ => {
                let op = cmp_op(*op)?;
                if let Some(column) = column_of(table, left)
                    && let Some(value) = column_literal(table, column, right)
                {
                    compare(table, column, op, value)
                } else if let Some(column) = column_of(table, right)
                    && let Some(value) = column_literal(table, column, left)
                {
                    compare(table, column, op.flipped(), value)
                } else {
                    None
                }
            }
        },
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let column = column_of(table, expr)?;
            let mut both = compare(
                table,
                column,
                CmpOp::GtEq,
                column_literal(table, column, low)?,
            )?;
            both.extend(compare(
                table,
                column,
                CmpOp::LtEq,
                column_literal(table, column, high)?,
            )?);
            Some(both)
        }
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let column = column_of(table, expr)?;
            let mut values = Vec::with_capacity(list.len());
            for item in list {
                let value = column_literal(table, column, item)?;
                if value.is_null() {
                    // NULL in an IN list can only make the test unknown, never true.
                    continue;
                }
                values.push(exact_value(table, column, value)?);
            }
            Some(vec![Predicate::InList { column, values }])
        }
        Expr::Like(Like {
            negated: false,
            expr,
            pattern,
            escape_char: None,
            case_insensitive: false,
        }) => {
            let column = column_of(table, expr)?;
            if !matches!(column_type(table, column), DataType::Text { .. }) {
                return None;
            }
            let Datum::Text(pattern) = literal(pattern)? else {
                return None;
            };
            // A backslash may be an escape to DataFusion: left to it.
            if pattern.contains('\\') {
                return None;
            }
            Some(vec![Predicate::Like { column, pattern }])
        }
        Expr::IsNull(inner) => Some(vec![Predicate::IsNull {
            column: column_of(table, inner)?,
        }]),
        Expr::IsNotNull(inner) => Some(vec![Predicate::IsNotNull {
            column: column_of(table, inner)?,
        }]),
        // DataFusion may rewrite a filter after the scan accepted it (constant folding turns
        // `x IS NULL` on a join's NOT NULL side into `false`, and `b IN (false)` becomes
        // `NOT b`); the rewritten forms must translate too, or the pushed filter is lost.
        Expr::Literal(ScalarValue::Boolean(Some(true)), _) => Some(Vec::new()),
        Expr::Literal(ScalarValue::Boolean(_) | ScalarValue::Null, _) => Some(vec![never(table)?]),
        Expr::Not(inner) => boolean_column(table, inner).map(|column| {
            vec![Predicate::Compare {
                column,
                op: CmpOp::Eq,
                value: Datum::Boolean(false),
            }]
        }),
        Expr::ScalarFunction(_) => translate(table, unfolded_argument(expr)?),
        Expr::Column(_) => boolean_column(table, expr).map(|column| {
            vec![Predicate::Compare {
                column,
                op: CmpOp::Eq,
                value: Datum::Boolean(true),
            }]
        }),
        _ => None,
    }
}

/// A predicate no row satisfies: its first key column IS NULL (key columns never are).
fn never(table: &TableDef) -> Option<Predicate> {
    Some(Predicate::IsNull {
        column: table.key.first()?.column,
    })
}

/// The BOOLEAN column `expr` names.
fn boolean_column(table: &TableDef, expr: &Expr) -> Option<usize> {
    column_of(table, expr).filter(|&c| column_type(table, c) == DataType::Boolean)
}

fn compare(table: &TableDef, column: usize, op: CmpOp, value: Datum) -> Option<Vec<Predicate>> {
    if value.is_null() {
        return None;
    }
    let value = exact_value(table, column, value)?;
    Some(vec![Predicate::Compare { column, op, value }])
}

/// The column `expr` reads: a column, or a generated column (an expression index's hidden one
/// among them) whose stored value is the expression's.
fn column_of(table: &TableDef, expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Column(column) => table.column_index(&column.name),
        Expr::ScalarFunction(_) | Expr::BinaryExpr(_) | Expr::Cast(_)
            if table.columns.iter().any(ColumnDef::is_generated) =>
        {
            Generation::compile(table)
                .ok()
                .flatten()?
                .column_for_logical(expr)
        }
        _ => None,
    }
}

/// A literal compared with `column`. A DECIMAL literal (DataFusion casts one to the column's
/// type when the column's scale can hold it) becomes the column's unscaled value; scaling it
/// up is exact, so the comparison keeps its meaning. Any other literal as [`literal`] reads it.
fn column_literal(table: &TableDef, column: usize, expr: &Expr) -> Option<Datum> {
    if let (
        DataType::Decimal { scale, .. },
        Expr::Literal(ScalarValue::Decimal128(value, _, literal_scale), _),
    ) = (column_type(table, column), expr)
    {
        let Some(value) = value else {
            return Some(Datum::Null);
        };
        let up = u32::try_from(i32::from(scale) - i32::from(*literal_scale)).ok()?;
        return value
            .checked_mul(10i128.checked_pow(up)?)
            .map(Datum::Decimal);
    }
    literal(expr)
}

fn literal(expr: &Expr) -> Option<Datum> {
    match expr {
        Expr::Literal(value, _) => scalar(value),
        _ => None,
    }
}

fn scalar(value: &ScalarValue) -> Option<Datum> {
    datum_from_scalar(value).ok()
}

fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}
