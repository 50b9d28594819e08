//! Works around DataFusion 55 claiming an order for join output that the join does not keep.
//!
//! A hash join (and a nested-loop join) streams its probe side (right) and emits, for each
//! probe row, the matching rows of its build side (left). DataFusion 55 then declares the
//! output ordered by the probe side's order *followed by the build side's*, and, when the
//! probe side has no order, by the build side's order alone. Neither holds: with two probe
//! rows of one key, the build rows repeat, `(1, 100), (1, 200), (1, 100), (1, 200)`, which is
//! not ordered by the second column; and probe order decides the output, not build order. The
//! sort an ORDER BY needs is then removed, and the rows come back out of order (differential
//! finding `join_build_side_order`; upstream apache/datafusion#25052).
//!
//! [`ForgetBuildOrdering`] runs just before `EnsureRequirements` (after `JoinSelection` has chosen
//! the sides) and puts a [`ForgetOrderingExec`] over the build side of each such join: the
//! same rows, with no declared order. The join then declares what it keeps, the probe side's
//! order, and every sort that is needed stays. A build side's order is worth nothing to a hash
//! join, so no plan gets slower.

use std::fmt;
use std::sync::Arc;

use datafusion::common::JoinType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

/// Puts a [`ForgetOrderingExec`] over the build side of every hash and nested-loop join.
#[derive(Debug, Default)]
pub struct ForgetBuildOrdering;

impl PhysicalOptimizerRule for ForgetBuildOrdering {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            // Only these join types keep the probe side's order, where the bad suffix is added.
            let keeps_probe_order =
                |join_type: &JoinType| matches!(join_type, JoinType::Inner | JoinType::Right);
            let is_join = node
                .downcast_ref::<HashJoinExec>()
                .is_some_and(|join| keeps_probe_order(join.join_type()))
                || node
                    .downcast_ref::<NestedLoopJoinExec>()
                    .is_some_and(|join| keeps_probe_order(join.join_type()));
            let children = node.children();
            let Some(build) = children.first().filter(|_| is_join) else {
                return Ok(Transformed::no(node));
            };
            let already = build.downcast_ref::<ForgetOrderingExec>().is_some();
            if already || build.properties().output_ordering().is_none() {
                return Ok(Transformed::no(node));
            }
            let mut children: Vec<Arc<dyn ExecutionPlan>> = children.into_iter().cloned().collect();
            children[0] = Arc::new(ForgetOrderingExec::new(children[0].clone()));
            Ok(Transformed::yes(replace_children_if_necessary(
                node, children,
            )?))
        })
        .data()
    }

    fn name(&self) -> &str {
        "rowdex_forget_build_ordering"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Its input's rows, unchanged, declared in no particular order.
#[derive(Debug)]
pub struct ForgetOrderingExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl ForgetOrderingExec {
    pub fn new(input: Arc<dyn ExecutionPlan>) -> ForgetOrderingExec {
        let properties = input
            .properties()
            .as_ref()
            .clone()
            .with_eq_properties(EquivalenceProperties::new(input.schema()));
        ForgetOrderingExec {
            input,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for ForgetOrderingExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("ForgetOrderingExec")
    }
}

impl ExecutionPlan for ForgetOrderingExec {
    fn name(&self) -> &str {
        "ForgetOrderingExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = children.into_iter().next().ok_or_else(|| {
            DataFusionError::Internal("ForgetOrderingExec needs one child".to_string())
        })?;
        Ok(Arc::new(ForgetOrderingExec::new(input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}
