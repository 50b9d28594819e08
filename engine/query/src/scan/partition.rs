//! Splitting a read of a table by key ranges into partitions that DataFusion runs in
//! parallel (an aggregate over a large table on every core). Each partition reads the rows of
//! one span of primary keys; the spans are cut at the statistics' samples of the key's leading
//! column, so that they hold about as many rows each, and each partition yields its rows in key
//! order. All partitions of one execution read one view of the store ([`SharedRead`]). A large
//! index intersection is split the same way ([`splits_intersection`]; `scan::parallel` runs it).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rowdex_planner::{AccessPath, KeySpan, ScanPlan};
use rowdex_store::KvRead;

use crate::scan::choose::PlanningFacts;

/// Estimated rows below which a scan stays in one partition: a partition costs a task and a
/// merge of its partial results, about what reading a few thousand rows does; split at 100 000
/// rows, each partition still reads for tens of milliseconds.
pub(crate) const PARALLEL_MIN_ROWS: u64 = 100_000;

/// Index entries an intersection is expected to read before its read is split: at ~0.3 us an
/// entry on fjall, 16 384 entries are ~5 ms, against the ~20-50 us a task and its channel cost.
pub(crate) const PARALLEL_MIN_ENTRIES: u64 = 16_384;

/// Most partitions a scan is split into.
const MAX_PARTITIONS: usize = 8;

/// Partitions a large scan is split into: one per core the process may use, at most
/// [`MAX_PARTITIONS`]. Asked once per process: the standard library reads the cgroup files
/// each time, which cost every DataFusion scan a few percent of an OLTP statement.
pub(crate) fn scan_parallelism() -> usize {
    static PARALLELISM: OnceLock<usize> = OnceLock::new();
    *PARALLELISM.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_PARTITIONS))
    })
}

/// The spans `plan` is read in, one per partition in key order, or none when it is read
/// whole: only an unlimited read by key ranges (no OFFSET, LIMIT or resume position, whose
/// counts run across the whole scan) of at least [`PARALLEL_MIN_ROWS`] estimated rows is
/// split, into at most `parallelism` spans.
pub(crate) fn partition_spans(
    plan: &ScanPlan,
    facts: Option<&PlanningFacts>,
    parallelism: usize,
) -> Vec<KeySpan> {
    // A merged range scan's order is its merge's: one reader.
    let by_ranges = matches!(
        plan.path,
        AccessPath::FullScan | AccessPath::RangeScan { .. }
    ) && !plan.merged;
    let whole = reads_whole(plan);
    let Some(facts) = facts.filter(|_| by_ranges && whole && parallelism > 1) else {
        return Vec::new();
    };
    let (rows, samples) = facts.primary_samples();
    // The keys of `keys` inside the plan's ranges (in any bucket it visits), in key order.
    let buckets = plan.bucket_ranges();
    let inside_of = |keys: &[Vec<u8>]| {
        let mut inside: Vec<Vec<u8>> = keys
            .iter()
            .filter(|key| {
                buckets.iter().any(|(prefix, ranges)| {
                    let key = [prefix.as_slice(), key].concat();
                    ranges.iter().any(|range| range.contains(&key))
                })
            })
            .cloned()
            .collect();
        inside.sort_unstable();
        inside
    };
    let inside = inside_of(samples);
    let estimated_rows = match samples.len() {
        0 => rows,
        sampled => inside.len() as u64 * rows / sampled as u64,
    };
    if estimated_rows < PARALLEL_MIN_ROWS {
        return Vec::new();
    }
    // A pre-split table is read region by region (`SPLIT ON`, `NUMREGIONS`).
    let regions = inside_of(&plan.table.split_keys);
    if !regions.is_empty() {
        return region_spans(&regions, parallelism);
    }
    let inside: Vec<&[u8]> = inside.iter().map(Vec::as_slice).collect();
    spans_at(&inside, parallelism)
}

/// Spans cut at the region bounds `splits` (sorted) that fall inside a scan: every bound when
/// there are fewer regions than `parallelism`, else `parallelism - 1` evenly chosen bounds, so
/// each partition reads whole regions.
fn region_spans(splits: &[Vec<u8>], parallelism: usize) -> Vec<KeySpan> {
    // Bound i starts region i + 1; partition k starts at region k * regions / parallelism.
    let regions = splits.len() + 1;
    let cuts: Vec<&Vec<u8>> = if regions <= parallelism {
        splits.iter().collect()
    } else {
        (1..parallelism)
            .filter_map(|k| splits.get((k * regions / parallelism).saturating_sub(1)))
            .collect()
    };
    spans_between(cuts.into_iter().cloned())
}

/// Whether `plan` reads everything its path selects, once: no OFFSET, LIMIT or resume
/// position (whose counts run across the whole read) and not already one partition.
fn reads_whole(plan: &ScanPlan) -> bool {
    plan.offset == 0
        && plan.limit.is_none()
        && plan.resume_after.is_none()
        && plan.partition.is_none()
}

/// Whether `plan` is an index intersection or union worth reading in partitions: unlimited (no
/// OFFSET, LIMIT or resume position) and expected to read at least [`PARALLEL_MIN_ENTRIES`]
/// index entries. Every input of an intersection and every arm of a union is sorted by primary
/// key, so a span of primary keys cuts each of them where it cuts the table ([`sample_spans`]).
pub(crate) fn splits_intersection(plan: &ScanPlan) -> bool {
    let whole = reads_whole(plan);
    let large = plan
        .estimate
        .is_some_and(|estimate| estimate.entries >= PARALLEL_MIN_ENTRIES);
    matches!(
        plan.path,
        AccessPath::IndexIntersection { .. } | AccessPath::IndexUnion { .. }
    ) && whole
        && large
}

/// Up to `parallelism` spans of the whole table cut at the primary key's samples, holding
/// about as many rows each; none without samples or with one partition.
pub(crate) fn sample_spans(facts: &PlanningFacts, parallelism: usize) -> Vec<KeySpan> {
    if parallelism < 2 {
        return Vec::new();
    }
    let (_, samples) = facts.primary_samples();
    let mut inside: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    inside.sort_unstable();
    spans_at(&inside, parallelism)
}

/// Up to `parallelism` spans cut at evenly spaced keys of `inside` (sorted); none when no cut
/// is left.
fn spans_at(inside: &[&[u8]], parallelism: usize) -> Vec<KeySpan> {
    // Cut at evenly spaced samples; a value that fills several shares is cut at once.
    let mut cuts: Vec<&[u8]> = (1..parallelism)
        .filter_map(|k| inside.get(k * inside.len() / parallelism).copied())
        .collect();
    cuts.dedup();
    // A cut at the first sample would leave a partition of less than one sample's share.
    cuts.retain(|cut| inside.first().is_some_and(|first| cut > first));
    if cuts.is_empty() {
        return Vec::new();
    }
    spans_between(cuts.into_iter().map(<[u8]>::to_vec))
}

/// The spans from the table's start to its end, cut at `cuts` (ascending).
fn spans_between(cuts: impl Iterator<Item = Vec<u8>>) -> Vec<KeySpan> {
    let mut bounds: Vec<Option<Vec<u8>>> = vec![None];
    bounds.extend(cuts.map(Some));
    bounds.push(None);
    bounds
        .windows(2)
        .map(|pair| KeySpan {
            from: pair[0].clone(),
            to: pair[1].clone(),
        })
        .collect()
}

/// The one read view every partition of a scan reads, so that together they see one state of
/// the store: opened by the first partition executed, handed to the others, and let go once
/// each has it (a later execution of the plan opens a new one).
#[derive(Default)]
pub(crate) struct SharedRead {
    view: Mutex<Option<(Arc<dyn KvRead>, usize)>>,
}

impl SharedRead {
    /// The view for one of `partitions` partitions, opened by `open` for the first.
    pub(crate) fn take(
        &self,
        partitions: usize,
        open: impl FnOnce() -> Arc<dyn KvRead>,
    ) -> Arc<dyn KvRead> {
        if partitions <= 1 {
            return open();
        }
        // The slot holds a view and a count, consistent at every step: a panic elsewhere
        // cannot leave it half-updated.
        let mut slot = self.view.lock().unwrap_or_else(PoisonError::into_inner);
        let (view, handed) = slot.get_or_insert_with(|| (open(), 0));
        let view = view.clone();
        *handed += 1;
        if *handed >= partitions {
            *slot = None;
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowdex_store::{KvStore, MemoryStore};

    #[test]
    fn the_partitions_of_one_execution_share_one_view() {
        let store = MemoryStore::new();
        let shared = SharedRead::default();
        let mut opened = 0;
        let mut take = |shared: &SharedRead| {
            shared.take(2, || {
                opened += 1;
                store.snapshot()
            })
        };
        let (first, second) = (take(&shared), take(&shared));
        assert!(
            Arc::ptr_eq(&first, &second),
            "both partitions read one view"
        );
        let third = take(&shared);
        assert!(
            !Arc::ptr_eq(&first, &third),
            "the next execution opens its own"
        );
        assert_eq!(opened, 2);
    }

    #[test]
    fn a_pre_split_scan_reads_whole_regions_per_partition() {
        let splits: Vec<Vec<u8>> = [b"c", b"f", b"k", b"p", b"t"]
            .iter()
            .map(|s| s.to_vec())
            .collect();
        type Bound = Option<Vec<u8>>;
        let bounds = |spans: Vec<KeySpan>| -> Vec<(Bound, Bound)> {
            spans.into_iter().map(|span| (span.from, span.to)).collect()
        };
        let key = |s: &[u8]| Some(s.to_vec());
        // Six regions on two cores: three regions each, cut at the third region's start.
        assert_eq!(
            bounds(region_spans(&splits, 2)),
            vec![(None, key(b"k")), (key(b"k"), None)]
        );
        // On three cores: two regions each.
        assert_eq!(
            bounds(region_spans(&splits, 3)),
            vec![(None, key(b"f")), (key(b"f"), key(b"p")), (key(b"p"), None)]
        );
        // Fewer regions than cores: one partition per region.
        assert_eq!(
            bounds(region_spans(&splits[..2], 8)),
            vec![(None, key(b"c")), (key(b"c"), key(b"f")), (key(b"f"), None)]
        );
    }
}
