//! The two sides of a join as the lookup-join rule sees them: a side it could probe (a rowdex
//! scan, perhaps under filters and column-only projections, each output column traced to the
//! table column behind it), and what any side is expected to yield and cost.

use std::sync::Arc;

use datafusion::common::JoinType;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;

use rowdex_planner::lookup::JOIN_ROW_NS;

use crate::df::lookup_join::LookupJoinExec;
use crate::df::scan_exec::{ReadEstimate, RowdexScanExec};

/// A side a lookup can read instead: the rowdex scan at its leaf, and for each output column
/// of the side the scanned table's column it is (None: computed).
pub(crate) struct ProbedSide {
    pub(crate) scan: Arc<dyn ExecutionPlan>,
    pub(crate) columns: Vec<Option<usize>>,
}

impl ProbedSide {
    /// `side` as a probed side, when it is one.
    pub(crate) fn find(side: &Arc<dyn ExecutionPlan>) -> Option<ProbedSide> {
        if let Some(scan) = side.downcast_ref::<RowdexScanExec>() {
            return scan.probeable().then(|| ProbedSide {
                scan: side.clone(),
                columns: scan.projection().iter().map(|&c| Some(c)).collect(),
            });
        }
        // A filter with a LIMIT of its own would apply it to each batch of probes.
        if let Some(filter) = side
            .downcast_ref::<FilterExec>()
            .filter(|f| f.fetch().is_none())
        {
            let below = ProbedSide::find(filter.input())?;
            let columns = match filter.projection() {
                Some(projection) => projection
                    .iter()
                    .map(|&i| below.columns.get(i).copied().flatten())
                    .collect(),
                None => below.columns,
            };
            return Some(ProbedSide {
                scan: below.scan,
                columns,
            });
        }
        if let Some(projection) = side.downcast_ref::<ProjectionExec>() {
            let below = ProbedSide::find(projection.input())?;
            let columns = projection
                .expr()
                .iter()
                .map(|p| {
                    let column = p.expr.downcast_ref::<Column>()?;
                    below.columns.get(column.index()).copied().flatten()
                })
                .collect();
            return Some(ProbedSide {
                scan: below.scan,
                columns,
            });
        }
        None
    }

    pub(crate) fn scan(&self) -> Option<&RowdexScanExec> {
        self.scan.downcast_ref::<RowdexScanExec>()
    }
}

/// Plans that yield at most the rows of their one input, and cost no reads of their own.
const PASS_THROUGH: &[&str] = &[
    "FilterExec",
    "ProjectionExec",
    "SortExec",
    "AggregateExec",
    "CoalescePartitionsExec",
    "CoalesceBatchesExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    "SortPreservingMergeExec",
    "ForgetOrderingExec",
];

/// What `side` is expected to yield and cost: a scan's estimate, a join's, or that of the one
/// input of a plan that yields no more rows than it (capped by its LIMIT). None for anything
/// else (a union, a window), which then never drives a lookup unless hinted.
pub(crate) fn side_estimate(side: &Arc<dyn ExecutionPlan>) -> Option<ReadEstimate> {
    if let Some(scan) = side.downcast_ref::<RowdexScanExec>() {
        return scan.read_estimate();
    }
    if let Some(join) = side.downcast_ref::<LookupJoinExec>() {
        return join.total_estimate();
    }
    if let Some(join) = side.downcast_ref::<HashJoinExec>() {
        return hash_join_estimate(join);
    }
    if !PASS_THROUGH.contains(&side.name()) {
        return None;
    }
    let [input] = side.children()[..] else {
        return None;
    };
    let mut estimate = side_estimate(input)?;
    if let Some(fetch) = side.fetch() {
        estimate.rows = estimate.rows.min(fetch as f64);
    }
    Some(estimate)
}

/// A hash join reads both sides and hashes every row. Without statistics of the join columns'
/// values, an equi-join is taken to yield as many rows as its larger side (each row of the
/// many side meets one of the other, as along a foreign key), never more than the product; a
/// semi or anti join at most its output side's rows.
pub(crate) fn hash_join_estimate(join: &HashJoinExec) -> Option<ReadEstimate> {
    let left = side_estimate(join.left())?;
    let right = side_estimate(join.right())?;
    let rows = match join.join_type() {
        JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => left.rows,
        JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => right.rows,
        _ => (left.rows * right.rows).min(left.rows.max(right.rows)),
    };
    Some(ReadEstimate {
        rows,
        cost_us: left.cost_us + right.cost_us + (left.rows + right.rows) * JOIN_ROW_NS / 1000.0,
    })
}
