//! A physical optimizer rule that works around DataFusion 55's projection pushdown through a
//! filter that carries its own projection.
//!
//! `FilterExec` may embed a projection of its output. When a narrowing `ProjectionExec` sits
//! above such a filter, `FilterExec::try_swapping_with_projection` rewrites the predicate
//! through the projection as if the projection read the filter's *input*, and moves the
//! projection below the filter unchanged. The projection's column indices refer to the filter's
//! projected output, so the swap is wrong whenever the filter reorders or drops columns: either
//! DataFusion stops with "Input field name a does not match with the projection expression c"
//! (found by the differential tests: `ORDER BY` an unselected key column with a filter on a
//! column that keeps its position), or a predicate is rewritten onto the wrong column.
//!
//! [`SplitFilterProjection`] runs before each `ProjectionPushdown` pass and folds the filter's
//! embedded projection into the projection above it, so the filter passes its input through
//! and every swap the pushdown makes sees consistent indices. ProjectionPushdown embeds a
//! projection into the filter again where that pays, so plans lose nothing.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};

#[derive(Debug, Default)]
pub struct SplitFilterProjection;

impl PhysicalOptimizerRule for SplitFilterProjection {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(projection) = node.downcast_ref::<ProjectionExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(filter) = projection.input().downcast_ref::<FilterExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(embedded) = filter.projection().clone() else {
                return Ok(Transformed::no(node));
            };
            let filter_input = filter.input().schema();
            let exprs = projection
                .expr()
                .iter()
                .map(|item| {
                    let expr = item
                        .expr
                        .clone()
                        .transform_up(|e| {
                            let Some(column) = e.downcast_ref::<Column>() else {
                                return Ok(Transformed::no(e));
                            };
                            // The filter's output column i is its input column embedded[i].
                            let source =
                                embedded.get(column.index()).copied().ok_or_else(|| {
                                    datafusion::error::DataFusionError::Internal(format!(
                                        "column {column} is outside the filter's projection"
                                    ))
                                })?;
                            let name = filter_input.field(source).name();
                            let remapped: Arc<dyn PhysicalExpr> =
                                Arc::new(Column::new(name, source));
                            Ok(Transformed::yes(remapped))
                        })
                        .data()?;
                    Ok(ProjectionExpr {
                        expr,
                        alias: item.alias.clone(),
                    })
                })
                .collect::<DfResult<Vec<_>>>()?;
            let unprojected = FilterExecBuilder::from(filter)
                .apply_projection(None)?
                .build()?;
            let rebuilt = ProjectionExec::try_new(exprs, Arc::new(unprojected))?;
            Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>))
        })
        .data()
    }

    fn name(&self) -> &str {
        "SplitFilterProjection"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
