//! What a lookup join (`df::lookup_join`) asks of the scan it probes: the conditions and
//! columns the scan was planned with, the facts a join weighs it by, and a scan of another
//! path (a batch of probes) made in its place.

use std::sync::Arc;

use rowdex_planner::{Predicate, ScanPlan};

use super::{JoinFacts, ReadEstimate, RowdexScanExec};

impl RowdexScanExec {
    /// The scan, carrying `facts` for the join above it.
    pub(crate) fn with_join_facts(mut self, facts: JoinFacts) -> Self {
        self.join = Arc::new(facts);
        self
    }

    pub(crate) fn join_facts(&self) -> &JoinFacts {
        &self.join
    }

    /// Every condition pushed into the scan (the path's and the residual's).
    pub(crate) fn predicates(&self) -> &[Predicate] {
        &self.predicates
    }

    /// The table columns it yields, in output order.
    pub(crate) fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// Whether its rows are exactly those of its conditions, read in one go: no LIMIT or
    /// OFFSET, no sort of its own, not one partition of a larger read. Only such a scan can be
    /// replaced by probes.
    pub(crate) fn probeable(&self) -> bool {
        self.pending_order.is_none()
            && self.plan.limit.is_none()
            && self.plan.offset == 0
            && self.plan.partition.is_none()
    }

    /// What reading its path yields and costs (see [`JoinFacts::read_estimate`]).
    pub(crate) fn read_estimate(&self) -> Option<ReadEstimate> {
        self.join.read_estimate(&self.plan)
    }

    /// A scan of `plan` (the reads of a batch of probes) in place of this one: the same
    /// columns, store and expiry cutoff, read whole, its reads counted with this scan's under
    /// EXPLAIN ANALYZE.
    pub(crate) fn probe(&self, plan: ScanPlan) -> RowdexScanExec {
        let mut scan = self.with_plans(plan, None).whole();
        scan.replannable = false;
        scan
    }
}
