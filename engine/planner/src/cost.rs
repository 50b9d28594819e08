//! Choosing among candidate plans with a cost model that knows the store's seek, next and get
//! costs, fed with entry counts the executor measures ("index dives": each candidate range is
//! counted up to a cap before planning).

use rowdex_catalog::TableStatistics;
use rowdex_store::{AccessCosts, Direction};

use crate::budget::BUFFERED_KEYS_MAX;
use crate::path::{AccessPath, Estimate, IndexInput, ScanPlan, UnionArm};

/// A dive always counts at least this far.
pub const DIVE_MIN: u64 = 2_000;

/// How far a dive counts on a table of `table_rows` rows: an eighth of the table. A range larger
/// than that is "large": an index scan with a row lookup per entry then costs more than reading
/// the whole table on every store (the break-even is near 7 % of the rows on fjall), so the exact
/// size no longer changes the choice, and the dive itself reads at most an eighth of a scan.
pub fn dive_cap(table_rows: u64) -> u64 {
    (table_rows / 8).max(DIVE_MIN)
}

/// What is known of the entries in the ranges of one probe (see [`ScanPlan::probes`]): a count
/// from a dive, exact or stopped short (then a lower bound), and the gathered statistics'
/// estimate (see [`ScanPlan::probe_estimates`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// Entries counted (0 when no dive ran).
    pub entries: u64,
    /// Whether the dive counted every entry; `entries` is otherwise only a lower bound.
    pub exact: bool,
    /// The statistics' estimate, when they hold the probe's key.
    pub estimate: Option<u64>,
}

impl Count {
    /// The size the cost model assumes for the probe on a table of `table_rows` rows: the exact
    /// count; else the larger of the lower bound and the statistics' estimate; without one,
    /// the larger of the lower bound and a sizeable share of the table (a dive stops short
    /// only on a large range, or when a sparser candidate ended the race).
    pub fn size(&self, table_rows: f64) -> f64 {
        if self.exact {
            return self.entries as f64;
        }
        let counted = self.entries as f64;
        match self.estimate {
            Some(estimate) => counted.max(estimate as f64),
            None => counted
                .max(table_rows * UNKNOWN_SHARE)
                .min(table_rows.max(counted)),
        }
    }
}

/// The share of the table a range is assumed to hold when a dive stopped short of counting it
/// and no statistics estimate it.
const UNKNOWN_SHARE: f64 = 0.3;

/// Entries an index page holds in the adaptive cursor, for the cost of reading sequentially.
const PAGE_ENTRIES: f64 = 64.0;

/// Entries a page holds when a cursor reads its range through (its largest page).
const SEQUENTIAL_PAGE_ENTRIES: f64 = 1024.0;

/// Inputs of an intersection weighed for being checked rather than read (2^n choices).
const MAX_CHECKABLE: usize = 12;

/// Cost of one step of a union's merge heap, in nanoseconds (a key comparison and a swap).
const MERGE_NS: f64 = 10.0;

/// Cost of sorting one buffered row or primary key, in nanoseconds (n log n comparisons of a
/// few nanoseconds each, for the few thousand rows a sort after a scan usually holds).
const SORT_NS: f64 = 40.0;

/// The cheapest of `plans` by their estimates (one without an estimate never wins over one
/// with); the first among equals.
pub fn cheapest(plans: impl IntoIterator<Item = ScanPlan>) -> Option<ScanPlan> {
    plans.into_iter().reduce(|best, plan| {
        if cost_of(&plan) < cost_of(&best) {
            plan
        } else {
            best
        }
    })
}

/// `plans` ordered by their estimates, cheapest first (those without one last); equals keep
/// their order.
pub fn by_cost(mut plans: Vec<ScanPlan>) -> Vec<ScanPlan> {
    plans.sort_by(|a, b| cost_of(a).total_cmp(&cost_of(b)));
    plans
}

/// One count per probe of `plan` holding only the estimates of the gathered `statistics` on a
/// table of `table_rows` rows (see [`ScanPlan::probe_estimates`]): the plan as costed without
/// reading the store.
pub fn statistics_counts(
    plan: &ScanPlan,
    statistics: &TableStatistics,
    table_rows: u64,
) -> Vec<Count> {
    plan.probe_estimates(statistics, table_rows)
        .into_iter()
        .map(|estimate| Count {
            estimate: estimate.map(|e| e.entries as u64),
            ..Count::default()
        })
        .collect()
}

/// Every plan with its estimate set (an intersection arranged for its cheapest order).
pub fn estimate_all(
    plans: Vec<ScanPlan>,
    counts: &[Vec<Count>],
    table_rows: u64,
    costs: AccessCosts,
) -> Vec<ScanPlan> {
    plans
        .into_iter()
        .zip(counts)
        .map(|(plan, counts)| {
            let (mut plan, estimate) = if matches!(plan.path, AccessPath::IndexIntersection { .. })
            {
                arrange_intersection(plan, counts, table_rows, costs)
            } else {
                let plan = union_driver(plan, counts, table_rows);
                let estimate = estimate(&plan, counts, table_rows, costs);
                (plan, estimate)
            };
            plan.estimate = Some(estimate);
            plan
        })
        .collect()
}

fn cost_of(plan: &ScanPlan) -> f64 {
    plan.estimate.map_or(f64::INFINITY, |e| e.cost_us)
}

/// For `ORDER BY ... LIMIT`: the cheapest of `ordered` (plans that yield the query's order,
/// estimated without the LIMIT) when reading it until `wanted` rows match costs less than
/// `best` (the best plan whatever its order) read whole plus a sort of its rows; None when
/// sorting is cheaper. The best plan's rows stand for the rows that match (an upper bound when
/// it leaves a residual filter), assumed spread evenly along each order.
pub fn cheapest_in_order(best: Estimate, ordered: Vec<ScanPlan>, wanted: u64) -> Option<ScanPlan> {
    let matching = best.rows;
    let share = if matching >= wanted && matching > 0 {
        wanted as f64 / matching as f64
    } else {
        1.0
    };
    let sorted = best.cost_us + sort_cost(matching);
    cheapest(ordered).filter(|plan| cost_of(plan) * share < sorted)
}

/// The cost of sorting `rows` rows after the scan (a top-k heap under a LIMIT, which costs
/// about as much per row).
fn sort_cost(rows: u64) -> f64 {
    rows as f64 * SORT_NS / 1000.0
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
    let rows = table_rows.max(1) as f64;
    paired.sort_by(|(_, a), (_, b)| a.size(rows).total_cmp(&b.size(rows)));
    let mut checkable: Vec<usize> = (1..paired.len())
        .filter(|&i| {
            plan.table
                .indexes
                .get(paired[i].0.index)
                .is_some_and(|index| paired[i].0.checkable(index))
        })
        .collect();
    // Every choice among the checkable inputs is costed: past a dozen (an intersection of more
    // indexes than any table sensibly has), only the densest dozen are candidates for it.
    if checkable.len() > MAX_CHECKABLE {
        checkable.drain(..checkable.len() - MAX_CHECKABLE);
    }
    // An input whose dive stopped short of exact is at least several times denser than the
    // driver (see the dives of `query::db::stats`), and only a lower bound is known of it: reading
    // it could cost anything up to the whole index, so it is checked whenever it can be.
    let must_check: u32 = checkable
        .iter()
        .enumerate()
        .filter(|(_, i)| !paired[**i].1.exact && paired[**i].1.estimate.is_none())
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
    let size = |count: Option<&Count>| -> f64 { count.map_or(table_rows, |c| c.size(table_rows)) };
    // Rows a scan must produce before a LIMIT stops it (only when nothing is filtered after).
    let wanted = plan
        .limit
        .filter(|_| plan.residual.is_empty())
        .map(|limit| (limit + plan.offset) as f64);
    let stop = |rows: f64| wanted.map_or(rows, |w| rows.min(w));
    // On a backend whose reverse pages read the rest of the range (etcd), the entries of the
    // range a LIMIT spares the client are still read on the server.
    let unread_in_reverse = |range: f64, read: f64| {
        if plan.direction == Direction::Reverse && costs.reverse_reads_whole_range {
            (range - read).max(0.0) * next
        } else {
            0.0
        }
    };
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
            let cost = seeks * seek + read * next + unread_in_reverse(n, read);
            (n, read, cost)
        }
        AccessPath::FullScan => {
            let read = stop(table_rows);
            let cost = buckets * seek + read * next + unread_in_reverse(table_rows, read);
            (table_rows, read, cost)
        }
        AccessPath::IndexScan { input, covering } => {
            let n = size(counts.first());
            let read = stop(n);
            let lookups = if *covering { 0.0 } else { read * get };
            (
                n,
                read * if *covering { 1.0 } else { 2.0 },
                input.prefixes.len().max(1) as f64 * seek
                    + read * next
                    + lookups
                    + unread_in_reverse(n, read),
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
                let (part, entries) =
                    leapfrog_input(plan, input, *n, (driver, share), (seek, next));
                cost += part;
                read += entries;
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
        AccessPath::IndexUnion {
            arms,
            also,
            covering,
            ..
        } => {
            let sizes: Vec<f64> = (0..arms.len()).map(|i| size(counts.get(i))).collect();
            let also_sizes: Vec<f64> = (0..also.len())
                .map(|i| size(counts.get(arms.len() + i)))
                .collect();
            let union = union_rows(&sizes, table_rows);
            // With other inputs, a leapfrog: the sparsest drives, the others are sought.
            let driver = also_sizes.iter().copied().fold(union, f64::min);
            let matches = also_sizes
                .iter()
                .fold(union, |acc, n| acc * (n / table_rows))
                .min(driver);
            let produced = stop(matches);
            // A LIMIT stops the merge early, in proportion.
            let share = if matches > 0.0 {
                produced / matches
            } else {
                1.0
            };
            let mut cost = 0.0;
            let mut read = 0.0;
            // The union: its unordered arms buffered whole; its ordered ones read through
            // (a union alone skips nothing) or, under a sparser input, sought.
            let (mut through, mut through_read, mut arm_ranges) = (0.0, 0.0, 0.0);
            for (arm, n) in arms.iter().zip(&sizes) {
                let (ranges, ordered) = match arm {
                    UnionArm::Index(input) => (
                        input.prefixes.len().max(1) as f64,
                        plan.table
                            .indexes
                            .get(input.index)
                            .is_some_and(|index| input.pk_ordered(index)),
                    ),
                    // In every bucket of a salted table, unless the prefixes fix the salt.
                    UnionArm::Key { prefixes, .. } => {
                        (buckets * prefixes.len().max(1) as f64, true)
                    }
                };
                if !ordered {
                    // Buffered and sorted in full before the merge starts (as an
                    // intersection's input): never past the memory budget.
                    if *n > BUFFERED_KEYS_MAX {
                        cost = f64::INFINITY;
                    }
                    cost += ranges * seek + n * (next + SORT_NS / 1000.0);
                    read += n;
                    continue;
                }
                // Read through, a cursor's pages soon reach their largest size.
                through += n * next + (n / SEQUENTIAL_PAGE_ENTRIES).ceil().max(ranges) * seek;
                through_read += n;
                arm_ranges += ranges;
            }
            let sought = 2.0 * driver * arm_ranges * (seek + next);
            if also.is_empty() || through <= sought {
                cost += through * share;
                read += through_read * share;
            } else {
                cost += sought * share;
                read += (2.0 * driver * arm_ranges).min(through_read) * share;
            }
            for (input, n) in also.iter().zip(&also_sizes) {
                let (part, entries) =
                    leapfrog_input(plan, input, *n, (driver, share), (seek, next));
                cost += part;
                read += entries;
            }
            // The merge's heap: a few comparisons per primary key of every arm.
            cost += read * (arms.len() as f64).log2().max(1.0) * MERGE_NS / 1000.0;
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

/// What reading one leapfrog input of `n` entries costs and reads (cost in µs, entries), the
/// merge's driver holding `driver` keys and a LIMIT stopping the streaming part at `share`; `seek`
/// and `next` in µs.
fn leapfrog_input(
    plan: &ScanPlan,
    input: &IndexInput,
    n: f64,
    (driver, share): (f64, f64),
    (seek, next): (f64, f64),
) -> (f64, f64) {
    let ordered = plan
        .table
        .indexes
        .get(input.index)
        .is_some_and(|index| input.pk_ordered(index));
    // An IN list opens one range per value tuple, each with its own seeks.
    let ranges = input.prefixes.len().max(1) as f64;
    if !ordered {
        // Buffered and sorted in full before the merge starts: never past the memory budget.
        if n > BUFFERED_KEYS_MAX {
            return (f64::INFINITY, n);
        }
        return (ranges * seek + n * (next + SORT_NS / 1000.0), n);
    }
    // The adaptive cursor reads sequentially when entries are dense and seeks when they are
    // sparse; charge the cheaper of the two.
    let sequential = n * next + (n / PAGE_ENTRIES).ceil().max(ranges) * seek;
    let seeking = 2.0 * driver * ranges * (seek + next);
    (sequential.min(seeking) * share, n.min(2.0 * driver) * share)
}

/// A union intersected with other inputs: they drive the leapfrog when one is sparser than the
/// union (by `counts`, the arms' then the inputs').
fn union_driver(mut plan: ScanPlan, counts: &[Count], table_rows: u64) -> ScanPlan {
    if let AccessPath::IndexUnion {
        arms,
        also,
        also_drives,
        ..
    } = &mut plan.path
        && !also.is_empty()
    {
        let rows = table_rows.max(1) as f64;
        let size = |i: usize| counts.get(i).map_or(rows, |c| c.size(rows));
        let sizes: Vec<f64> = (0..arms.len()).map(size).collect();
        let union = union_rows(&sizes, rows);
        *also_drives = (0..also.len()).any(|i| size(arms.len() + i) < union);
    }
    plan
}

/// Rows a union of arms of `sizes` rows yields on a table of `table_rows` rows: independent
/// arms overlap by chance (1 - the product of the shares each misses), at least the largest
/// arm and at most their sum.
fn union_rows(sizes: &[f64], table_rows: f64) -> f64 {
    let missed = sizes
        .iter()
        .fold(1.0, |acc, n| acc * (1.0 - (n / table_rows).min(1.0)));
    let largest = sizes.iter().copied().fold(0.0, f64::max);
    let sum: f64 = sizes.iter().sum();
    (table_rows * (1.0 - missed)).max(largest).min(sum)
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

#[cfg(test)]
mod golden;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_count_is_a_lower_bound_never_a_size() {
        let rows = 200_000.0;
        // A raced dive stopped at 8 000 entries: without statistics, a sizeable share.
        let raced = Count {
            entries: 8_000,
            exact: false,
            estimate: None,
        };
        assert!(raced.size(rows) >= 60_000.0);
        // With an estimate, the larger of the two.
        let estimated = Count {
            estimate: Some(200_000),
            ..raced
        };
        assert!((estimated.size(rows) - 200_000.0).abs() < 1.0);
        let exact = Count {
            entries: 2_000,
            exact: true,
            estimate: Some(10),
        };
        assert!((exact.size(rows) - 2_000.0).abs() < 1.0);
    }
}
