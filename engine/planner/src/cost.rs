//! Choosing among candidate plans with a cost model that knows the store's seek, next and get
//! costs, fed with entry counts the executor measures ("index dives": each candidate range is
//! counted up to a cap before planning).

use rowdex_store::AccessCosts;

use crate::path::{AccessPath, Estimate, ScanPlan};

/// A dive always counts at least this far.
pub const DIVE_MIN: u64 = 2_000;

/// How far a dive counts on a table of `table_rows` rows: an eighth of the table. A range larger
/// than that is "large": an index scan with a row lookup per entry then costs more than reading
/// the whole table on every store (the break-even is near 7 % of the rows on fjall), so the exact
/// size no longer changes the choice, and the dive itself reads at most an eighth of a scan.
pub fn dive_cap(table_rows: u64) -> u64 {
    (table_rows / 8).max(DIVE_MIN)
}

/// Entries counted in the ranges of one probe (see [`ScanPlan::probes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub entries: u64,
    /// False when the dive stopped at [`dive_cap`].
    pub exact: bool,
}

/// Entries an index page holds in the adaptive cursor, for the cost of reading sequentially.
const PAGE_ENTRIES: f64 = 64.0;

/// Cost of sorting one buffered primary key, in nanoseconds.
const SORT_NS: f64 = 100.0;

/// Picks the cheapest of `plans`; `counts[i]` holds one count per probe of plan `i`, and
/// `table_rows` is the table's estimated size.
pub fn choose(
    plans: Vec<ScanPlan>,
    counts: &[Vec<Count>],
    table_rows: u64,
    costs: AccessCosts,
) -> Option<ScanPlan> {
    let mut best: Option<ScanPlan> = None;
    for (plan, counts) in plans.into_iter().zip(counts) {
        let (mut plan, estimate) = if matches!(plan.path, AccessPath::IndexIntersection { .. }) {
            arrange_intersection(plan, counts, table_rows, costs)
        } else {
            let estimate = estimate(&plan, counts, table_rows, costs);
            (plan, estimate)
        };
        plan.estimate = Some(estimate);
        let better = best
            .as_ref()
            .and_then(|b| b.estimate)
            .is_none_or(|b| estimate.cost_us < b.cost_us);
        if better {
            best = Some(plan);
        }
    }
    best
}

/// Orders an intersection's inputs sparsest first (the sparsest drives the merge) and picks
/// which of the others to check by lookup rather than read: every choice among the checkable
/// ones is estimated (at most 2^3 of them, as an intersection has at most 4 inputs).
fn arrange_intersection(
    mut plan: ScanPlan,
    counts: &[Count],
    table_rows: u64,
    costs: AccessCosts,
) -> (ScanPlan, Estimate) {
    let AccessPath::IndexIntersection {
        inputs, checked, ..
    } = &mut plan.path
    else {
        let estimate = estimate(&plan, counts, table_rows, costs);
        return (plan, estimate);
    };
    let mut paired: Vec<(crate::path::IndexInput, Count)> = inputs
        .drain(..)
        .chain(checked.drain(..))
        .zip(counts.iter().copied())
        .collect();
    paired.sort_by_key(|(_, count)| count.entries);
    let checkable: Vec<usize> = (1..paired.len())
        .filter(|&i| {
            plan.table
                .indexes
                .get(paired[i].0.index)
                .is_some_and(|index| paired[i].0.checkable(index))
        })
        .collect();
    // An input whose dive stopped short of exact is at least several times denser than the
    // driver (see the dives of `query::db::stats`), and only a lower bound is known of it: reading
    // it could cost anything up to the whole index, so it is checked whenever it can be.
    let must_check: u32 = checkable
        .iter()
        .enumerate()
        .filter(|(_, i)| !paired[**i].1.exact)
        .fold(0, |mask, (bit, _)| mask | (1 << bit));
    let mut best: Option<(ScanPlan, Estimate)> = None;
    for mask in (0..1u32 << checkable.len()).filter(|mask| mask & must_check == must_check) {
        let is_checked = |i: usize| {
            checkable
                .iter()
                .position(|&c| c == i)
                .is_some_and(|bit| mask & (1 << bit) != 0)
        };
        let mut candidate = plan.clone();
        let mut ordered_counts = Vec::with_capacity(paired.len());
        if let AccessPath::IndexIntersection {
            inputs, checked, ..
        } = &mut candidate.path
        {
            for (i, (input, count)) in paired.iter().enumerate() {
                if !is_checked(i) {
                    inputs.push(input.clone());
                    ordered_counts.push(*count);
                }
            }
            for (i, (input, count)) in paired.iter().enumerate() {
                if is_checked(i) {
                    checked.push(input.clone());
                    ordered_counts.push(*count);
                }
            }
        }
        let estimate = estimate(&candidate, &ordered_counts, table_rows, costs);
        if best
            .as_ref()
            .is_none_or(|(_, b)| estimate.cost_us < b.cost_us)
        {
            best = Some((candidate, estimate));
        }
    }
    match best {
        Some(best) => best,
        None => {
            let estimate = estimate(&plan, counts, table_rows, costs);
            (plan, estimate)
        }
    }
}

/// The estimated rows, entries read and cost of one plan.
pub fn estimate(
    plan: &ScanPlan,
    counts: &[Count],
    table_rows: u64,
    costs: AccessCosts,
) -> Estimate {
    let seek = f64::from(costs.seek_ns) / 1000.0;
    let next = f64::from(costs.next_ns) / 1000.0;
    let get = f64::from(costs.get_ns) / 1000.0;
    let table_rows = table_rows.max(1) as f64;
    let size = |count: Option<&Count>| -> f64 {
        match count {
            Some(c) if c.exact => c.entries as f64,
            // A dive stopped before the cap by a sparser candidate counted exactly (see the
            // dives of `query::db::stats`): at least that many, and that is as far as it matters.
            Some(c) if c.entries < dive_cap(table_rows as u64) => c.entries as f64,
            // A capped dive: at least the cap, and assume a sizeable share of the table.
            Some(c) => (c.entries as f64)
                .max(table_rows * 0.3)
                .min(table_rows.max(c.entries as f64)),
            None => table_rows,
        }
    };
    // Rows a scan must produce before a LIMIT stops it (only when nothing is filtered after).
    let wanted = plan
        .limit
        .filter(|_| plan.residual.is_empty())
        .map(|limit| (limit + plan.offset) as f64);
    let stop = |rows: f64| wanted.map_or(rows, |w| rows.min(w));
    let buckets = f64::from(plan.table.salt_buckets.max(1));
    let (rows, entries, cost) = match &plan.path {
        AccessPath::PointGet { .. } => (1.0, 1.0, get),
        AccessPath::MultiGet { keys } => {
            let n = keys.len() as f64;
            (n, n, n * get)
        }
        AccessPath::RangeScan { prefixes, .. } => {
            let n = size(counts.first());
            // Prefixes that fix the salt columns are each sought in their own bucket; others
            // in every bucket.
            let seeks = if plan.table.is_salted() && salt_fixed(plan) {
                prefixes.len() as f64
            } else {
                buckets * prefixes.len().max(1) as f64
            };
            let read = stop(n);
            (n, read, seeks * seek + read * next)
        }
        AccessPath::FullScan => {
            let read = stop(table_rows);
            (table_rows, read, buckets * seek + read * next)
        }
        AccessPath::IndexScan { input, covering } => {
            let n = size(counts.first());
            let read = stop(n);
            let lookups = if *covering { 0.0 } else { read * get };
            (
                n,
                read * if *covering { 1.0 } else { 2.0 },
                input.prefixes.len().max(1) as f64 * seek + read * next + lookups,
            )
        }
        AccessPath::IndexIntersection {
            inputs,
            checked,
            covering,
        } => {
            let sizes: Vec<f64> = (0..inputs.len()).map(|i| size(counts.get(i))).collect();
            let checked_sizes: Vec<f64> = (0..checked.len())
                .map(|i| size(counts.get(inputs.len() + i)))
                .collect();
            let driver = sizes.iter().copied().fold(f64::INFINITY, f64::min);
            // Independent predicates: the match count is the product of the selectivities.
            let merged = sizes
                .iter()
                .fold(table_rows, |acc, n| acc * (n / table_rows))
                .min(driver);
            let matches = checked_sizes
                .iter()
                .fold(merged, |acc, n| acc * (n / table_rows));
            let produced = stop(matches);
            // A LIMIT stops the streaming part early, in proportion.
            let share = if matches > 0.0 {
                produced / matches
            } else {
                1.0
            };
            let mut cost = 0.0;
            let mut read = 0.0;
            for (input, n) in inputs.iter().zip(&sizes) {
                let ordered = plan
                    .table
                    .indexes
                    .get(input.index)
                    .is_some_and(|index| input.pk_ordered(index));
                if !ordered {
                    // Buffered and sorted in full before the merge starts.
                    cost += seek + n * (next + SORT_NS / 1000.0);
                    read += n;
                    continue;
                }
                // The adaptive cursor reads sequentially when entries are dense and seeks
                // when they are sparse; charge the cheaper of the two.
                let sequential = n * next + (n / PAGE_ENTRIES).ceil() * seek;
                let seeking = 2.0 * driver * (seek + next);
                let part = sequential.min(seeking) * share;
                cost += part;
                read += n.min(2.0 * driver) * share;
            }
            // Each candidate the merge yields is looked up in the checked inputs in turn (one
            // key per value tuple), until one rejects it.
            let check = f64::from(costs.check_ns) / 1000.0;
            let mut candidates = merged * share;
            for (input, n) in checked.iter().zip(&checked_sizes) {
                let keys = candidates * input.prefixes.len().max(1) as f64;
                cost += keys * check;
                read += keys;
                candidates *= n / table_rows;
            }
            if !covering {
                cost += produced * get;
                read += produced;
            }
            (matches, read, cost)
        }
    };
    Estimate {
        rows: rows.round() as u64,
        entries: entries.round() as u64,
        cost_us: cost,
    }
}

/// Whether every prefix of a range scan fixes the table's salt columns.
fn salt_fixed(plan: &ScanPlan) -> bool {
    match &plan.path {
        AccessPath::RangeScan { prefixes, .. } => {
            !prefixes.is_empty()
                && prefixes
                    .iter()
                    .all(|tuple| plan.table.salt_of_leading(tuple).is_some())
        }
        _ => false,
    }
}
