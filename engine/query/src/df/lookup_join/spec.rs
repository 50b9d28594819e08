//! What a lookup join is, apart from its driving input: the probed side (a template plan with
//! a rowdex scan at its leaf), the lookup that reads it by the join's values, the join's type,
//! conditions and output. Shared, unchanged, by the join node and its streams.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{JoinSide, JoinType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::PhysicalExprRef;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::joins::utils::JoinFilter;
use rowdex_planner::ScanPlan;
use rowdex_planner::lookup::LookupTemplate;

use crate::df::scan_exec::RowdexScanExec;

/// How the matches of a driving row become output rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emit {
    /// A row per (driving, probed) match; with `outer`, a driving row without one is kept,
    /// its probed columns NULL (a LEFT join driven from the left, RIGHT from the right).
    Pairs { outer: bool },
    /// The driving rows with at least one match, each once (a semi join driven by its output
    /// side: `EXISTS`, `IN`).
    Semi,
    /// The driving rows without a match (`NOT EXISTS`).
    Anti,
    /// The probed rows with at least one match, each once (a semi join whose output side is
    /// probed: `orders WHERE user_id IN (SELECT id FROM users WHERE ...)` driven by the users).
    ProbedSemi,
}

impl Emit {
    /// How a join of `join_type` is emitted when its `driving` side drives; None when that side
    /// cannot drive it (its other side must keep unmatched rows, a full join, a mark join).
    pub(crate) fn of(join_type: JoinType, driving: JoinSide, filtered: bool) -> Option<Emit> {
        use JoinSide::{Left, Right};
        Some(match (join_type, driving) {
            (JoinType::Inner, _) => Emit::Pairs { outer: false },
            (JoinType::Left, Left) | (JoinType::Right, Right) => Emit::Pairs { outer: true },
            (JoinType::LeftSemi, Left) | (JoinType::RightSemi, Right) => Emit::Semi,
            (JoinType::LeftAnti, Left) | (JoinType::RightAnti, Right) => Emit::Anti,
            // A filter would have to be true for some match of each probed row: every driving
            // row that shares its key would have to be seen first.
            (JoinType::LeftSemi, Right) | (JoinType::RightSemi, Left) if !filtered => {
                Emit::ProbedSemi
            }
            _ => return None,
        })
    }

    /// Whether the output keeps the driving rows' order.
    pub(crate) fn keeps_driving_order(self) -> bool {
        self != Emit::ProbedSemi
    }
}

/// See the module's header.
#[derive(Debug)]
pub(crate) struct LookupSpec {
    /// The probed side as planned for the hash join: `scan`, perhaps under filters and
    /// projections. Each batch of probes runs it with the scan replaced by the probes' reads.
    pub(crate) probed: Arc<dyn ExecutionPlan>,
    /// The `RowdexScanExec` at its leaf.
    pub(crate) scan: Arc<dyn ExecutionPlan>,
    pub(crate) lookup: LookupTemplate,
    /// Which side of the join the driving input is.
    pub(crate) driving_side: JoinSide,
    /// Each equality of the join: the driving side's expression, and the probed side's column
    /// (its position in the probed side's output), in the lookup's join-column order.
    pub(crate) driving_keys: Vec<PhysicalExprRef>,
    pub(crate) probed_keys: Vec<usize>,
    /// The probed table's column behind each of `probed_keys`.
    pub(crate) join_columns: Vec<usize>,
    pub(crate) join_type: JoinType,
    pub(crate) emit: Emit,
    pub(crate) filter: Option<JoinFilter>,
    /// The join's columns (left then right, or the one side of a semi or anti join) ...
    pub(crate) join_schema: SchemaRef,
    /// ... and which of them it outputs (None: all).
    pub(crate) projection: Option<Vec<usize>>,
    /// EXPLAIN's text for the lookup (`orders using index o_user [user_id = u.id]`).
    pub(crate) described: String,
}

impl LookupSpec {
    pub(crate) fn scan(&self) -> DfResult<&RowdexScanExec> {
        self.scan
            .downcast_ref::<RowdexScanExec>()
            .ok_or_else(|| DataFusionError::Internal("a lookup join without its scan".into()))
    }

    /// The probed side reading the rows of `plan` (a batch of probes).
    pub(crate) fn probed_with(&self, plan: ScanPlan) -> DfResult<Arc<dyn ExecutionPlan>> {
        let probe: Arc<dyn ExecutionPlan> = Arc::new(self.scan()?.probe(plan));
        self.probed
            .clone()
            .transform_up(|node| {
                Ok(if node.downcast_ref::<RowdexScanExec>().is_some() {
                    Transformed::yes(probe.clone())
                } else {
                    Transformed::no(node)
                })
            })
            .data()
    }
}
