//! Choosing a scan's access path: the planner's candidates, each one's key ranges estimated
//! from the gathered statistics and, where that pays, counted ("index dives", from one
//! snapshot, up to a cap) when there is a choice, and the cost model comparing them. Both
//! executors choose here.

use std::collections::HashMap;
use std::sync::Arc;

use rowdex_catalog::{TableDef, TableStatistics};

use rowdex_planner::cost::{DIVE_MIN, dive_cap};
use rowdex_planner::{
    Count, ScanPlan, ScanRequest, by_cost, candidates, cheapest, cheapest_in_order, estimate_all,
    plan_scan, statistics_counts,
};
use rowdex_store::{AccessCosts, KeyRange};

use crate::db::DbState;
use crate::db::dives::dives;
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

/// The cheapest of `plans` (candidates for `request`), by their estimated key ranges.
pub(crate) async fn choose_among(
    db: &DbState,
    request: &ScanRequest,
    mut plans: Vec<ScanPlan>,
) -> Result<ScanPlan> {
    let chosen = if plans.len() <= 1 {
        // No choice: nothing to estimate.
        plans.pop()
    } else {
        cheapest(estimate_plans(db, request, plans).await?)
    };
    // Callers never pass an empty list; the primary-key plan stands in if one did.
    Ok(chosen.unwrap_or_else(|| {
        plan_scan(
            request.table.clone(),
            request.predicates.clone(),
            request.direction,
            request.offset,
            request.limit,
        )
    }))
}

/// Every candidate for `request` with its estimate, cheapest first: what EXPLAIN VERBOSE shows
/// the planner weighed.
pub(crate) async fn weighed(db: &DbState, request: &ScanRequest) -> Result<Vec<ScanPlan>> {
    let plans = candidates(request);
    if plans.len() <= 1 {
        return Ok(plans);
    }
    Ok(by_cost(estimate_plans(db, request, plans).await?))
}

/// Every plan of `plans` with its estimate: the key ranges of each estimated from the gathered
/// statistics and, where that pays, counted.
pub(crate) async fn estimate_plans(
    db: &DbState,
    request: &ScanRequest,
    plans: Vec<ScanPlan>,
) -> Result<Vec<ScanPlan>> {
    let snapshot = db.store.snapshot();
    let table_rows = db.stats.rows(db.store.as_ref(), &request.table).await?;
    // Figures gathered from an empty table (an index created before the load) say nothing.
    let gathered = db
        .stats
        .gathered(request.table.id)
        .filter(|gathered| gathered.rows > 0);
    // Plans share ranges (an index's range is both a single-index plan and an intersection
    // input): each distinct one is estimated and counted once.
    let mut distinct: Vec<Vec<KeyRange>> = Vec::new();
    let mut estimates: Vec<Option<u64>> = Vec::new();
    let mut coarse: Vec<bool> = Vec::new();
    let mut position: HashMap<Vec<KeyRange>, usize> = HashMap::new();
    let plan_probes: Vec<Vec<usize>> = plans
        .iter()
        .map(|plan| {
            let estimated = gathered
                .as_ref()
                .map(|g| plan.probe_estimates(g, table_rows))
                .unwrap_or_default();
            plan.probes()
                .into_iter()
                .enumerate()
                .map(|(i, probe)| {
                    *position.entry(probe.clone()).or_insert_with(|| {
                        let estimate = estimated.get(i).copied().flatten();
                        distinct.push(probe);
                        estimates.push(estimate.map(|e| e.entries as u64));
                        coarse.push(estimate.is_some_and(|e| e.coarse));
                        distinct.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    // Dives only where they pay: a probe the statistics put under `DIVE_MIN` entries, or
    // estimate only coarsely (a range between few samples, which on a large table may hold
    // far fewer entries), is counted up to `DIVE_MIN` (cheaply, and it catches what the
    // samples missed); any other probe is not counted at all. Without statistics, or where a
    // small estimate proved wrong, every probe is counted, racing the others.
    let (small, mut unknown): (Vec<usize>, Vec<usize>) = (0..distinct.len())
        .filter(|&i| coarse[i] || estimates[i].is_none_or(|e| e <= DIVE_MIN))
        .partition(|&i| estimates[i].is_some());
    let mut counted: Vec<Count> = estimates
        .iter()
        .map(|&estimate| Count {
            estimate,
            ..Count::default()
        })
        .collect();
    let ranges: Vec<Vec<KeyRange>> = small.iter().map(|&i| distinct[i].clone()).collect();
    for (&i, count) in small
        .iter()
        .zip(dives(snapshot.as_ref(), &ranges, DIVE_MIN).await?)
    {
        let coarse_and_large = coarse[i] && estimates[i].is_some_and(|e| e > DIVE_MIN);
        if count.exact || coarse_and_large {
            // A coarse range estimated past the cap and counted past it: the count is a
            // lower bound beside its estimate.
            counted[i] = Count {
                estimate: estimates[i],
                ..count
            };
        } else {
            unknown.push(i);
        }
    }
    let ranges: Vec<Vec<KeyRange>> = unknown.iter().map(|&i| distinct[i].clone()).collect();
    let cap = dive_cap(table_rows);
    for (&i, count) in unknown
        .iter()
        .zip(dives(snapshot.as_ref(), &ranges, cap).await?)
    {
        counted[i] = count;
    }
    let counts: Vec<Vec<Count>> = plan_probes
        .iter()
        .map(|probes| probes.iter().map(|&i| counted[i]).collect())
        .collect();
    let costs = db.store.capabilities().costs;
    Ok(estimate_all(plans, &counts, table_rows, costs))
}

/// For `ORDER BY ... LIMIT`: the cheapest of `ordered` (plans that yield the query's order,
/// for the request without its LIMIT) when reading it until `wanted` rows match costs less than
/// reading `best` whole and sorting what matches; None when sorting is cheaper.
pub(crate) async fn ordered_if_cheaper(
    db: &DbState,
    unlimited: &ScanRequest,
    best: &ScanPlan,
    ordered: Vec<ScanPlan>,
    wanted: usize,
) -> Result<Option<ScanPlan>> {
    if ordered.is_empty() {
        return Ok(None);
    }
    let estimate = match best.estimate {
        Some(estimate) => Some(estimate),
        None => estimate_plans(db, unlimited, vec![best.clone()])
            .await?
            .pop()
            .and_then(|plan| plan.estimate),
    };
    let Some(estimate) = estimate else {
        return Ok(None);
    };
    let ordered = estimate_plans(db, unlimited, ordered).await?;
    Ok(cheapest_in_order(estimate, ordered, wanted as u64))
}

/// What choosing between plans without reading the store needs (DataFusion asks for a scan's
/// order and LIMIT synchronously, after the scan was planned): the gathered statistics, the
/// row count and the store's costs.
#[derive(Debug, Clone)]
pub(crate) struct PlanningFacts {
    statistics: Arc<TableStatistics>,
    rows: u64,
    costs: AccessCosts,
}

impl PlanningFacts {
    /// The facts of `table`, when statistics were gathered and its row count is loaded.
    fn of(db: &DbState, table: &TableDef) -> Option<PlanningFacts> {
        Some(PlanningFacts {
            statistics: db.stats.gathered(table.id).filter(|g| g.rows > 0)?,
            rows: db.stats.known_rows(table)?,
            costs: db.store.capabilities().costs,
        })
    }

    /// [`PlanningFacts::of`], loading the table's row count and statistics first when this
    /// process has not yet: a scan with one candidate path is chosen without them.
    pub(crate) async fn load(db: &DbState, table: &TableDef) -> Result<Option<PlanningFacts>> {
        db.stats.rows(db.store.as_ref(), table).await?;
        Ok(Self::of(db, table))
    }

    /// The table's rows, and the primary key's samples (its leading column's encoded value at
    /// evenly spaced rows).
    pub(crate) fn primary_samples(&self) -> (u64, &[Vec<u8>]) {
        (self.rows, &self.statistics.primary.samples)
    }

    /// `plan` estimated from the statistics alone (no dives).
    fn estimated(&self, plan: &ScanPlan) -> Option<ScanPlan> {
        let counts = statistics_counts(plan, &self.statistics, self.rows);
        estimate_all(vec![plan.clone()], &[counts], self.rows, self.costs).pop()
    }

    /// Whether reading `ordered` (without its LIMIT) until `wanted` rows match costs less than
    /// reading `best` whole and sorting its rows.
    pub(crate) fn ordered_is_cheaper(
        &self,
        best: &ScanPlan,
        ordered: &ScanPlan,
        wanted: usize,
    ) -> bool {
        let best = match best.estimate {
            Some(estimate) => estimate,
            None => match self.estimated(best).and_then(|p| p.estimate) {
                Some(estimate) => estimate,
                None => return false,
            },
        };
        let unlimited = ScanPlan {
            limit: None,
            offset: 0,
            ..ordered.clone()
        };
        self.estimated(&unlimited)
            .and_then(|ordered| cheapest_in_order(best, vec![ordered], wanted as u64))
            .is_some()
    }
}
