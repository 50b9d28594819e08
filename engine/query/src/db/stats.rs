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
use rowdex_planner::cost::DIVE_MIN;
use rowdex_store::{KeyRange, KvRead};

use crate::error::Result;

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

/// Counts the entries of `ranges`, stopping at `cap` (an "index dive" when the ranges are a
/// candidate plan's). The store counts in place, without copying entries out.
pub(crate) async fn count_entries(
    reader: &dyn KvRead,
    ranges: &[KeyRange],
    cap: u64,
) -> Result<Count> {
    let mut dive = Dive::new(ranges.to_vec());
    dive.extend_to(reader, cap).await?;
    Ok(dive.count())
}

/// How far past the smallest exactly counted candidate the other candidates are counted. The
/// cost model treats a count stopped there as a large share of the table; since choosing reads
/// at least the smallest candidate, counting much further would cost more than the choice can
/// save. The exception it gives up on: a covering index more than this many times larger than
/// the best exact candidate, which could still have been cheaper (no row lookups).
const RACE_RATIO: u64 = 4;

/// A resumable count of one candidate's key ranges.
struct Dive {
    /// The ranges, the first `next` of them counted in full and `ranges[next]` resumed where
    /// the last count stopped.
    ranges: Vec<KeyRange>,
    next: usize,
    entries: u64,
}

impl Dive {
    fn new(ranges: Vec<KeyRange>) -> Dive {
        Dive {
            ranges,
            next: 0,
            entries: 0,
        }
    }

    fn exact(&self) -> bool {
        self.next == self.ranges.len()
    }

    fn count(&self) -> Count {
        Count {
            entries: self.entries,
            exact: self.exact(),
        }
    }

    /// Counts on until `target` entries are counted or every range is. At the target, the
    /// remaining ranges still get a zero-cap count, which tells an empty rest (exact) from one
    /// holding more.
    async fn extend_to(&mut self, reader: &dyn KvRead, target: u64) -> Result<()> {
        while let Some(range) = self.ranges.get(self.next) {
            let counted = reader
                .count_page(range, target.saturating_sub(self.entries))
                .await?;
            self.entries += counted.entries;
            match counted.resume {
                Some(rest) => {
                    self.ranges[self.next] = rest;
                    break;
                }
                None => self.next += 1,
            }
        }
        Ok(())
    }
}

/// Index dives for several candidates at once, counted side by side in growing rounds
/// (2 000 entries, then four times more each round, up to `cap`): once one candidate is counted
/// exactly, the others are counted only to [`RACE_RATIO`] times its size, so a sparse candidate
/// spares the counting of a dense one to the end.
pub(crate) async fn dives(
    reader: &dyn KvRead,
    candidates: &[Vec<KeyRange>],
    cap: u64,
) -> Result<Vec<Count>> {
    let mut dives: Vec<Dive> = candidates
        .iter()
        .map(|ranges| Dive::new(ranges.clone()))
        .collect();
    let mut round = DIVE_MIN.min(cap);
    loop {
        let smallest_exact = dives.iter().filter(|d| d.exact()).map(|d| d.entries).min();
        let limit = smallest_exact.map_or(cap, |smallest| {
            smallest.saturating_mul(RACE_RATIO).max(DIVE_MIN).min(cap)
        });
        let target = round.min(limit);
        let mut open = false;
        for dive in dives.iter_mut().filter(|d| !d.exact() && d.entries < limit) {
            open = true;
            dive.extend_to(reader, target).await?;
        }
        if !open {
            break;
        }
        round = round.saturating_mul(4);
    }
    Ok(dives.iter().map(Dive::count).collect())
}
