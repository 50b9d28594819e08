//! Row-count estimates per table, for the planner's cost model.
//!
//! Counting a table on every query would cost more than most queries, and a counter key updated
//! by every write would make concurrent writers conflict on it. So the count lives in memory: the
//! first query that needs it counts the table once (up to [`COUNT_CAP`] rows, beyond which the
//! exact size no longer changes a plan), write statements then add their net row change, and
//! CREATE INDEX, which reads every row anyway, sets it exactly.

use std::collections::HashMap;
use std::sync::Mutex;

use rowdex_catalog::TableDef;
use rowdex_planner::Count;
use rowdex_store::{Direction, KeyRange, KvRead};

use crate::Result;

/// Counting stops here; a larger table is "at least this big" to the planner.
pub(crate) const COUNT_CAP: u64 = 100_000;

#[derive(Debug, Default)]
pub(crate) struct TableStats {
    rows: Mutex<HashMap<u32, u64>>,
}

impl TableStats {
    /// The known estimate, without counting (0 when unknown).
    pub(crate) fn row_estimate(&self, table: &TableDef) -> u64 {
        self.lock().get(&table.id).copied().unwrap_or(0)
    }

    /// The estimate when one is known (after the table was first counted).
    pub(crate) fn known_rows(&self, table: &TableDef) -> Option<u64> {
        self.lock().get(&table.id).copied()
    }

    /// The estimate, counting the table (up to the cap) the first time.
    pub(crate) async fn rows(&self, table: &TableDef, reader: &dyn KvRead) -> Result<u64> {
        if let Some(rows) = self.lock().get(&table.id) {
            return Ok(*rows);
        }
        let ranges: Vec<KeyRange> = table
            .scan_prefixes()
            .iter()
            .map(|prefix| KeyRange::prefix(prefix))
            .collect();
        let count = count_entries(reader, &ranges, COUNT_CAP).await?.entries;
        self.lock().entry(table.id).or_insert(count);
        Ok(count)
    }

    pub(crate) fn set_rows(&self, table_id: u32, rows: u64) {
        self.lock().insert(table_id, rows);
    }

    /// Adds a committed statement's net row change (only to a known estimate).
    pub(crate) fn add(&self, table_id: u32, delta: i64) {
        if let Some(rows) = self.lock().get_mut(&table_id) {
            *rows = rows.saturating_add_signed(delta);
        }
    }

    pub(crate) fn forget(&self, table_id: u32) {
        self.lock().remove(&table_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, u64>> {
        // The map is always consistent between operations; a panic elsewhere cannot tear it.
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Largest page a count reads at once: counting must not hold a large range in memory.
const COUNT_PAGE: u64 = 4096;

/// Counts the entries of `ranges`, stopping at `cap` (an "index dive" when the ranges are a
/// candidate plan's).
pub(crate) async fn count_entries(
    reader: &dyn KvRead,
    ranges: &[KeyRange],
    cap: u64,
) -> Result<Count> {
    let mut entries = 0u64;
    for range in ranges {
        let mut next = Some(range.clone());
        while let Some(current) = next {
            let left = cap.saturating_sub(entries);
            if left == 0 {
                return Ok(Count {
                    entries,
                    exact: false,
                });
            }
            let page = reader
                .scan_page(&current, Direction::Forward, left.min(COUNT_PAGE) as usize)
                .await?;
            entries += page.entries.len() as u64;
            next = page.resume;
        }
    }
    Ok(Count {
        entries,
        exact: true,
    })
}
