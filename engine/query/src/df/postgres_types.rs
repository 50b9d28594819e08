//! Result types as PostgreSQL gives them where DataFusion's differ, for sessions that follow
//! PostgreSQL (`Semantics::PostgreSql`), applied to a planned statement:
//!
//! - `sum` of a bigint is a numeric (PostgreSQL sums int8 into numeric so it cannot overflow;
//!   clients get a `Decimal`), while the sum of an INTEGER or SMALLINT column stays a bigint.
//!   The aggregate's argument is cast to `Decimal128(38, 0)` and the aggregate keeps its name,
//!   so the plan above it reads the same column, now of the numeric type.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, ExprSchemable, LogicalPlan, cast};

use crate::error::Result;
use crate::values::DECLARED_TYPE;

/// The numeric a bigint is summed into.
const SUM_OF_BIGINTS: ArrowType = ArrowType::Decimal128(38, 0);

/// `plan` with every `sum` of a bigint summing numerics (see the module's list).
pub(crate) fn postgres_result_types(plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut changed = false;
    let plan = plan
        .transform_up(|node| {
            let LogicalPlan::Aggregate(aggregate) = &node else {
                // A node above a changed aggregate takes its new column type.
                return if changed {
                    Ok(Transformed::yes(node.recompute_schema()?))
                } else {
                    Ok(Transformed::no(node))
                };
            };
            let input = aggregate.input.schema();
            let mut rewritten = false;
            let aggr_expr = aggregate
                .aggr_expr
                .iter()
                .map(|expr| {
                    let Expr::AggregateFunction(function) = expr else {
                        return Ok(expr.clone());
                    };
                    let [argument] = function.params.args.as_slice() else {
                        return Ok(expr.clone());
                    };
                    if function.func.name() != "sum" {
                        return Ok(expr.clone());
                    }
                    let (_, field) = argument.to_field(input)?;
                    let narrow = field.metadata().contains_key(DECLARED_TYPE);
                    if *field.data_type() != ArrowType::Int64 || narrow {
                        return Ok(expr.clone());
                    }
                    rewritten = true;
                    let mut params = function.params.clone();
                    params.args = vec![cast(argument.clone(), SUM_OF_BIGINTS)];
                    let summed = Expr::AggregateFunction(AggregateFunction {
                        func: Arc::clone(&function.func),
                        params,
                    });
                    Ok(summed.alias(expr.schema_name().to_string()))
                })
                .collect::<datafusion::common::Result<Vec<_>>>()?;
            if !rewritten {
                return if changed {
                    Ok(Transformed::yes(node.recompute_schema()?))
                } else {
                    Ok(Transformed::no(node))
                };
            }
            changed = true;
            let aggregate = Aggregate::try_new(
                Arc::clone(&aggregate.input),
                aggregate.group_expr.clone(),
                aggr_expr,
            )?;
            Ok(Transformed::yes(LogicalPlan::Aggregate(aggregate)))
        })?
        .data;
    Ok(plan)
}
