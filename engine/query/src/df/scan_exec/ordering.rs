//! The order and the constant columns a scan's key path gives its output, as DataFusion's
//! sort expressions: what lets it drop a sort along the key.

use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_expr::{AcrossPartitions, ConstExpr, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::expressions::Column;
use rowdex_planner::{Direction, ScanPlan};

/// The output ordering: the projected key columns after the fixed ones, in scan direction,
/// up to the first key column that is not projected.
pub(crate) fn key_ordering(
    plan: &ScanPlan,
    projection: &[usize],
    schema: &SchemaRef,
) -> Vec<PhysicalSortExpr> {
    let mut ordering = Vec::new();
    for key_column in plan.order_columns().iter().skip(plan.ordered_from()) {
        let Some(output) = projection.iter().position(|c| *c == key_column.column) else {
            break;
        };
        let descending = key_column.desc != (plan.direction == Direction::Reverse);
        let name = schema.field(output).name();
        let expr: Arc<dyn PhysicalExpr> = Arc::new(Column::new(name, output));
        ordering.push(PhysicalSortExpr::new(
            expr,
            SortOptions {
                descending,
                // NULL sorts lowest, in keys as in the session (nulls_min).
                nulls_first: !descending,
            },
        ));
    }
    ordering
}

/// The projected key columns the path fixes, as constants DataFusion can use to drop sorts.
pub(crate) fn key_constants(
    plan: &ScanPlan,
    projection: &[usize],
    schema: &SchemaRef,
) -> Vec<ConstExpr> {
    plan.order_columns()
        .iter()
        .take(plan.fixed_columns())
        .filter_map(|key_column| {
            let output = projection.iter().position(|c| *c == key_column.column)?;
            let expr: Arc<dyn PhysicalExpr> =
                Arc::new(Column::new(schema.field(output).name(), output));
            Some(ConstExpr::new(expr, AcrossPartitions::Uniform(None)))
        })
        .collect()
}
