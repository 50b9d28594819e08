//! Counting the rows a plan selects without reading them: when each entry of the plan's key
//! ranges is one selected row (a read of the table by key, or of an index range, with nothing
//! left to check on the row), the store counts the entries in place (`KvRead::count_page`),
//! which copies and decodes nothing.

use std::sync::Arc;

use rowdex_planner::{AccessPath, ScanPlan};
use rowdex_store::{KeyRange, KvRead};

use crate::error::Result;

/// Entries counted per store call (a call holds one iterator, the next resumes after it; a
/// reader without an in-place count, a transaction, reads a page this large).
const COUNT_CAP: u64 = 1 << 16;

/// The key ranges whose entries are exactly the rows `plan` selects, one entry per row: its row
/// entries of the default family in every bucket it reads, or its index range; None when a row
/// has to be read to know whether it counts (a residual condition, rows that expire, a window)
/// or the plan reads keys one by one, or merges several streams.
pub fn counted_ranges(plan: &ScanPlan, expires: bool) -> Option<Vec<KeyRange>> {
    if !plan.residual.is_empty()
        || expires
        || plan.offset > 0
        || plan.limit.is_some()
        || plan.resume_after.is_some()
    {
        return None;
    }
    match &plan.path {
        AccessPath::FullScan | AccessPath::RangeScan { .. } => Some(
            plan.family_bucket_ranges(0)
                .into_iter()
                .flat_map(|(_, ranges)| ranges)
                .collect(),
        ),
        // Partitions cut key ranges; an index range is read whole.
        AccessPath::IndexScan { input, .. } if plan.partition.is_none() => {
            Some(plan.index_scan_ranges(input))
        }
        _ => None,
    }
}

/// The number of entries in `ranges` (ranges that do not overlap), counted by the store.
pub async fn count_entries(reader: Arc<dyn KvRead>, ranges: Vec<KeyRange>) -> Result<u64> {
    let mut total = 0;
    for range in ranges {
        let mut rest = Some(range);
        while let Some(range) = rest.take() {
            let page = reader.count_page(&range, COUNT_CAP).await?;
            total += page.entries;
            rest = page.resume;
        }
    }
    Ok(total)
}
