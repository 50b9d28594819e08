//! `JsonbOrder`: ORDER BY a `jsonb` sorts as `jsonb` values compare, not as their text.
//!
//! A jsonb travels through DataFusion as its normalised text (`functions::json`), whose order
//! is not PostgreSQL's jsonb order (an object above any array, a longer array above a shorter
//! one, numbers by value). This rule wraps each sort expression of a Sort node that is a jsonb
//! in `jsonb_sort_key(...)`, bytes that sort as the values compare (`codec::json::sort_key`).
//! Not a DataFusion bug: DataFusion has no jsonb type; rowdex keeps this rule as long as jsonb
//! travels as text. The native executor leaves such an ORDER BY to DataFusion.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, ScalarUDF, Sort, SortExpr};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::functions::json::scalar::jsonb_sort_key_function;
use crate::values::declared_type_of;

#[derive(Debug)]
pub struct JsonbOrder {
    sort_key: Arc<ScalarUDF>,
}

impl Default for JsonbOrder {
    fn default() -> JsonbOrder {
        JsonbOrder {
            sort_key: jsonb_sort_key_function(),
        }
    }
}

impl OptimizerRule for JsonbOrder {
    fn name(&self) -> &str {
        "rowdex_jsonb_order"
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
        let LogicalPlan::Sort(sort) = plan else {
            return Ok(Transformed::no(plan));
        };
        let schema = sort.input.schema().clone();
        let is_jsonb = |expr: &Expr| {
            expr.to_field(&schema)
                .is_ok_and(|(_, field)| declared_type_of(&field) == Some("JSONB"))
        };
        if !sort.expr.iter().any(|s| is_jsonb(&s.expr)) {
            return Ok(Transformed::no(LogicalPlan::Sort(sort)));
        }
        let expr = sort
            .expr
            .into_iter()
            .map(|s| {
                if is_jsonb(&s.expr) {
                    SortExpr {
                        expr: Expr::ScalarFunction(ScalarFunction::new_udf(
                            self.sort_key.clone(),
                            vec![s.expr],
                        )),
                        ..s
                    }
                } else {
                    s
                }
            })
            .collect();
        Ok(Transformed::yes(LogicalPlan::Sort(Sort {
            expr,
            input: sort.input,
            fetch: sort.fetch,
        })))
    }
}
