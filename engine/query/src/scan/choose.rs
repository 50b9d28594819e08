//! Choosing a scan's access path: the planner's candidates, each one's key ranges counted first
//! ("index dives", from one snapshot, up to a cap) when there is a choice, and the cost model
//! comparing them. Both executors choose here.

use std::collections::HashMap;

use rowdex_planner::cost::dive_cap;
use rowdex_planner::{Count, ScanPlan, ScanRequest, candidates, choose, plan_scan};
use rowdex_store::KeyRange;

use crate::db::DbState;
use crate::db::stats::dives;
use crate::error::Result;

/// Rows up to which a LIMIT makes an ordered index scan with row lookups cheaper than reading
/// and sorting the table: a thousand gets cost about what reading 12 000 entries does on fjall.
pub(crate) const ORDERED_LOOKUP_LIMIT: usize = 1000;

/// The cheapest candidate plan for a scan: when there is a choice, each candidate's key ranges
/// are counted first (up to a cap, from one snapshot) and the cost model compares them.
pub(crate) async fn choose_plan(db: &DbState, request: ScanRequest) -> Result<ScanPlan> {
    let plans = candidates(&request);
    choose_among(db, &request, plans).await
}

/// The cheapest of `plans` (candidates for `request`), by their counted key ranges.
pub(crate) async fn choose_among(
    db: &DbState,
    request: &ScanRequest,
    mut plans: Vec<ScanPlan>,
) -> Result<ScanPlan> {
    // Callers never pass an empty list; the primary-key plan stands in if one did.
    let pk_plan = || {
        plan_scan(
            request.table.clone(),
            request.predicates.clone(),
            request.direction,
            request.offset,
            request.limit,
        )
    };
    if plans.len() <= 1 {
        return Ok(plans.pop().unwrap_or_else(pk_plan));
    }
    let snapshot = db.store.snapshot();
    let table_rows = db.stats.rows(&request.table, snapshot.as_ref()).await?;
    // Plans share ranges (an index's range is both a single-index plan and an intersection
    // input): each distinct one is counted once.
    let mut distinct: Vec<Vec<KeyRange>> = Vec::new();
    let mut position: HashMap<Vec<KeyRange>, usize> = HashMap::new();
    let plan_probes: Vec<Vec<usize>> = plans
        .iter()
        .map(|plan| {
            plan.probes()
                .into_iter()
                .map(|probe| {
                    *position.entry(probe.clone()).or_insert_with(|| {
                        distinct.push(probe);
                        distinct.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let counted = dives(snapshot.as_ref(), &distinct, dive_cap(table_rows)).await?;
    let counts: Vec<Vec<Count>> = plan_probes
        .iter()
        .map(|probes| probes.iter().map(|&i| counted[i]).collect())
        .collect();
    let costs = db.store.capabilities().costs;
    Ok(choose(plans, &counts, table_rows, costs).unwrap_or_else(pk_plan))
}
