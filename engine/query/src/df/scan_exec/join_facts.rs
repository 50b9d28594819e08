//! What a scan carries for the join above it to weigh a lookup join (`df::rules::lookup_joins`):
//! the statement's hints for the table, its row count, gathered statistics and the store's
//! access costs. DataFusion's physical rules are synchronous and see no session state, so the
//! facts are loaded when the table is scanned and travel inside the scan node.

use std::sync::Arc;

use rowdex_catalog::{TableDef, TableStatistics};
use rowdex_planner::lookup::JoinHint;
use rowdex_planner::{IndexHint, ScanPlan, estimate_all, statistics_counts};
use rowdex_store::AccessCosts;

use crate::db::DbState;
use crate::sql::hints::QueryHints;

/// See the module's header.
#[derive(Debug, Clone, Default)]
pub(crate) struct JoinFacts {
    /// How the statement's hints let joins read the table.
    pub(crate) hint: JoinHint,
    /// Which indexes the statement's hints let a probe use.
    pub(crate) index_hint: IndexHint,
    /// The table's rows, when counted.
    pub(crate) rows: Option<u64>,
    /// The store's access costs (None in a scan made without a database).
    pub(crate) costs: Option<AccessCosts>,
    /// The statistics ANALYZE gathered, if it ran.
    pub(crate) statistics: Option<Arc<TableStatistics>>,
}

/// Rows a read yields and what it costs, in the units of `AccessCosts` (microseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReadEstimate {
    pub(crate) rows: f64,
    pub(crate) cost_us: f64,
}

impl JoinFacts {
    /// The facts of `table` as this statement reads it (its row count must have been loaded:
    /// `PlanningFacts::load` does).
    pub(crate) fn of(db: &DbState, table: &TableDef, hints: Option<&QueryHints>) -> JoinFacts {
        JoinFacts {
            hint: hints.map_or(JoinHint::Auto, |h| h.join_for_table(&table.name)),
            index_hint: hints.map_or(IndexHint::Auto, |h| h.for_table(&table.name)),
            rows: db.stats.known_rows(table),
            costs: Some(db.store.capabilities().costs),
            statistics: db.stats.gathered(table.id).filter(|g| g.rows > 0),
        }
    }

    /// What reading `plan` yields and costs: its own estimate when the planner weighed it,
    /// else one from the statistics, else from the row count alone (an upper bound: a range
    /// of unknown size counts as the table). None without a row count or costs.
    pub(crate) fn read_estimate(&self, plan: &ScanPlan) -> Option<ReadEstimate> {
        let estimate = match plan.estimate {
            Some(estimate) => estimate,
            None => {
                let rows = self.rows?;
                let counts = match &self.statistics {
                    Some(statistics) => statistics_counts(plan, statistics, rows),
                    None => Vec::new(),
                };
                estimate_all(vec![plan.clone()], &[counts], rows, self.costs?)
                    .pop()?
                    .estimate?
            }
        };
        let mut rows = estimate.rows as f64;
        if let Some(limit) = plan.limit {
            rows = rows.min((limit + plan.offset) as f64);
        }
        Some(ReadEstimate {
            rows,
            cost_us: estimate.cost_us,
        })
    }
}
