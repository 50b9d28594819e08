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

    /// The estimate, counting the table (up to the cap) the first time.
    pub(crate) async fn rows(&self, table: &TableDef, reader: &dyn KvRead) -> Result<u64> {
        if let Some(rows) = self.lock().get(&table.id) {
            return Ok(*rows);
        }
        let mut count = 0u64;
        for prefix in table.scan_prefixes() {
            let mut range = Some(KeyRange::prefix(&prefix));
            while let Some(current) = range {
                if count >= COUNT_CAP {
                    break;
                }
                let page = reader.scan_page(&current, Direction::Forward, 4096).await?;
                count += page.entries.len() as u64;
                range = page.resume;
            }
        }
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
