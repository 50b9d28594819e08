//! `ExactDecimalLiterals`: a number literal compared with (or otherwise coerced to) a DECIMAL
//! keeps the value it was written as.
//!
//! DataFusion reads `8.03` as a Float64, and type coercion casts it to the DECIMAL it meets
//! (`Decimal128(30, 15)` beside a `DECIMAL(12, 2)` column) by multiplying the double: 8.03 is
//! 8.0299999999999993 in binary, so `d = 8.03` found no row holding 8.03, and `d < 8.04` missed
//! rows too. This rule, before any simplification, replaces each cast of a finite Float64
//! literal to a DECIMAL with the DECIMAL read from the float's shortest decimal text (`8.03`,
//! which reads back as the same double), as rowdex converts floats to DECIMAL everywhere else
//! (`values::assign`). A value whose digits do not fit the target is left to the cast, which
//! fails or rounds as before.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr::{Cast, TryCast};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::values::decimal_from_text;

#[derive(Debug, Default)]
pub struct ExactDecimalLiterals;

impl OptimizerRule for ExactDecimalLiterals {
    fn name(&self) -> &str {
        "rowdex_exact_decimal_literals"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        // A select list's output names come from its expressions: keep them.
        let names = NamePreserver::new(&plan);
        plan.map_expressions(|expr| {
            let name = names.save(&expr);
            let rewritten = expr.transform_up(|expr| Ok(exact_literal(expr)))?;
            Ok(rewritten.update_data(|expr| name.restore(expr)))
        })
    }
}

/// `CAST(<float literal> AS DECIMAL(p, s))` as the DECIMAL literal of the float's text.
fn exact_literal(expr: Expr) -> Transformed<Expr> {
    let (literal, data_type) = match &expr {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            (expr.as_ref(), field.data_type())
        }
        _ => return Transformed::no(expr),
    };
    let (
        Expr::Literal(ScalarValue::Float64(Some(value)), _),
        DataType::Decimal128(precision, scale),
    ) = (literal, data_type)
    else {
        return Transformed::no(expr);
    };
    if !value.is_finite() {
        return Transformed::no(expr);
    }
    let fits = |units: i128| units.unsigned_abs() < 10u128.pow(u32::from(*precision));
    match decimal_from_text(&value.to_string(), *scale).filter(|units| fits(*units)) {
        Some(units) => Transformed::yes(Expr::Literal(
            ScalarValue::Decimal128(Some(units), *precision, *scale),
            None,
        )),
        None => Transformed::no(expr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_cast_to_decimal_keep_their_digits() {
        let cast = |value: f64, precision: u8, scale: i8| {
            Expr::Cast(Cast::new(
                Box::new(Expr::Literal(ScalarValue::Float64(Some(value)), None)),
                DataType::Decimal128(precision, scale),
            ))
        };
        let exact = exact_literal(cast(8.03, 30, 15));
        assert!(exact.transformed);
        assert_eq!(
            exact.data,
            Expr::Literal(
                ScalarValue::Decimal128(Some(8_030_000_000_000_000), 30, 15),
                None
            )
        );
        let negative = exact_literal(cast(-0.125, 12, 2)).data;
        assert_eq!(
            negative,
            Expr::Literal(ScalarValue::Decimal128(Some(-13), 12, 2), None)
        );
        // Too many digits for the target, and infinities, are left to the cast.
        assert!(!exact_literal(cast(1e12, 12, 2)).transformed);
        assert!(!exact_literal(cast(f64::INFINITY, 30, 15)).transformed);
    }
}
