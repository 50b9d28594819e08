//! `ArrayTextCasts`: an array cast to text is written as PostgreSQL writes arrays (`{1,2}`,
//! `{a,"b c",NULL}`, through `functions::arrays`'s `array_text`), not as Arrow casts a list
//! (`[1, 2]`). Not a DataFusion bug: Arrow's text of a list is its own; rowdex keeps this rule
//! as long as arrays travel as lists. A list of instants is first put in the session's zone,
//! which its text is written in.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::DFSchema;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::df::rules::expression_rewrite::{inputs_schema, rewrite_expressions_keeping_names};
use crate::df::rules::time_zones::{in_zone, session_zone};
use crate::functions::arrays::array_text;

#[derive(Debug, Default)]
pub struct ArrayTextCasts;

impl OptimizerRule for ArrayTextCasts {
    fn name(&self) -> &str {
        "rowdex_array_text_casts"
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
        config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        let zone: Arc<str> = Arc::from(session_zone(&config.options()).arrow_name());
        let schema = inputs_schema(&plan);
        rewrite_expressions_keeping_names(plan, |expr| as_array_text(expr, &schema, &zone))
    }
}

/// `expr` with a cast of a list to text made `array_text(list)`.
fn as_array_text(expr: Expr, schema: &DFSchema, zone: &Arc<str>) -> DfResult<Transformed<Expr>> {
    let (operand, to) = match &expr {
        Expr::Cast(Cast {
            expr: operand,
            field,
        })
        | Expr::TryCast(TryCast {
            expr: operand,
            field,
        }) => (operand, field.data_type()),
        _ => return Ok(Transformed::no(expr)),
    };
    let operand_type = operand.get_type(schema)?;
    let is_list = matches!(operand_type, ArrowType::List(_) | ArrowType::LargeList(_));
    let to_text = matches!(
        to,
        ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::LargeUtf8
    );
    if !is_list || !to_text {
        return Ok(Transformed::no(expr));
    }
    let to = to.clone();
    let operand = match in_zone(&operand_type, zone) {
        Some(zoned) => Expr::Cast(Cast::new(operand.clone(), zoned)),
        None => operand.as_ref().clone(),
    };
    let text = Expr::ScalarFunction(ScalarFunction::new_udf(array_text(), vec![operand]));
    Ok(Transformed::yes(if to == ArrowType::Utf8 {
        text
    } else {
        Expr::Cast(Cast::new(Box::new(text), to))
    }))
}
