//! Building a new index over existing rows (backfill) and checking or repairing an index against
//! its table.
//!
//! **Backfill while writers go on.** The catalog first publishes the index as `Building`: from
//! then on every write statement maintains it (each one reads the table's schema version in its
//! transaction, so a statement planned before the change conflicts and is retried). The backfill
//! then walks the table in pages, each page one optimistic transaction that scans the rows and
//! puts their entries. A writer that changes a row of the page before the page commits makes the
//! page conflict and be redone, at half the size (so a page of rows writers keep updating shrinks
//! until its transaction is short enough to get through); a writer after it maintains the entry
//! itself. Entry puts are
//! idempotent, so overlap costs nothing. Queries ignore the index until it is marked `Ready`, so
//! a failed or interrupted build is never visible; its leftovers are removed by dropping it.
//!
//! **Check** reads rows and entries from one snapshot: every row must have exactly its entry
//! (key and INCLUDE value), and every entry must point at a row that produces it. **Repair**
//! walks the same way in per-page transactions and writes the fixes, so it is safe to run with
//! writers active.

use rowdex_catalog::{IndexDef, TableDef};
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, StoreError, Transaction};

use crate::layout::{decode_entry, entry_key, entry_value, unique_prefix};
use crate::rows::{full_rows, get_rows};
use crate::{IndexError, Result};

/// Rows per backfill or check page.
const PAGE_ROWS: usize = 512;

/// How often one page is retried after losing a race with a writer. A page that lost is redone
/// at half its size (down to one row), so its transaction reads fewer rows for a shorter time:
/// a page holding rows that writers update all the time still gets through.
const PAGE_ATTEMPTS: usize = 24;

/// Fills in `index` from the rows of `table`; calls `progress` with the rows done so far after
/// every page. Fails with [`IndexError::UniqueViolation`] if a UNIQUE index meets a duplicate.
pub async fn backfill(
    store: &dyn KvStore,
    table: &TableDef,
    index: &IndexDef,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<u64> {
    let mut done = 0u64;
    let mut page_rows = PAGE_ROWS;
    for prefix in table.scan_prefixes() {
        let mut range = Some(KeyRange::prefix(&prefix));
        while let Some(current) = range {
            let mut attempt = 0;
            let (rows, resume) = loop {
                attempt += 1;
                let mut tx = store.begin().await?;
                let page = match backfill_page(tx.as_mut(), table, index, &current, page_rows).await
                {
                    Ok(page) => tx.commit().await.map(|()| page).map_err(IndexError::from),
                    Err(error) => Err(error),
                };
                match page {
                    Err(IndexError::Store(StoreError::Conflict)) if attempt < PAGE_ATTEMPTS => {
                        page_rows = (page_rows / 2).max(1);
                    }
                    other => break other?,
                }
            };
            // Back towards full pages once the hot part is behind.
            if attempt == 1 {
                page_rows = (page_rows * 2).min(PAGE_ROWS);
            }
            done += rows;
            progress(done);
            range = resume;
        }
    }
    Ok(done)
}

/// Fills in `index` from the rows of `table` inside `tx`, which reads the rows and takes the
/// entries (a CREATE INDEX inside a transaction block: the index becomes visible with the
/// block's commit, entries and all). Fails as [`backfill`] does.
pub async fn backfill_within(
    tx: &mut dyn Transaction,
    table: &TableDef,
    index: &IndexDef,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<u64> {
    let mut done = 0u64;
    for prefix in table.scan_prefixes() {
        let mut range = Some(KeyRange::prefix(&prefix));
        while let Some(current) = range {
            let (rows, resume) = backfill_page(tx, table, index, &current, PAGE_ROWS).await?;
            done += rows;
            progress(done);
            range = resume;
        }
    }
    Ok(done)
}

/// Puts the entries of one page (at most `rows` rows) into `tx` (not committed).
async fn backfill_page(
    tx: &mut dyn Transaction,
    table: &TableDef,
    index: &IndexDef,
    range: &KeyRange,
    rows: usize,
) -> Result<(u64, Option<KeyRange>)> {
    let page = tx.scan_page(range, Direction::Forward, rows).await?;
    let rows = full_rows(&*tx, table, &page.entries).await?;
    let mut probes = Vec::new();
    for row in rows.into_iter().filter(|row| index.covers_row(row)) {
        tx.put(
            entry_key(table, index, &row),
            entry_value(table, index, &row),
        );
        if let Some(prefix) = unique_prefix(index, &row) {
            probes.push(prefix);
        }
    }
    check_unique(&*tx, table, index, &probes).await?;
    Ok((page.entries.len() as u64, page.resume))
}

/// Fails if any of the value prefixes holds more than one entry.
async fn check_unique(
    reader: &dyn KvRead,
    table: &TableDef,
    index: &IndexDef,
    prefixes: &[Vec<u8>],
) -> Result<()> {
    for prefix in prefixes {
        let page = reader
            .scan_page(&KeyRange::prefix(prefix), Direction::Forward, 2)
            .await?;
        if let [(key, value), _, ..] = page.entries.as_slice() {
            let (row, _) = decode_entry(table, index, key, value)?;
            return Err(IndexError::UniqueViolation {
                index: index.name.clone(),
                value: values_text(table, index, &row),
            });
        }
    }
    Ok(())
}

/// `(a = 1, b = 'x')`: the indexed values of a row, for messages.
pub fn values_text(table: &TableDef, index: &IndexDef, row: &[rowdex_codec::Datum]) -> String {
    let parts: Vec<String> = index
        .columns
        .iter()
        .map(|k| format!("{} = {}", table.columns[k.column].label(), row[k.column]))
        .collect();
    format!("({})", parts.join(", "))
}

/// What [`check`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub rows: u64,
    pub entries: u64,
    /// Rows without their exact entry.
    pub missing: u64,
    /// Entries that no row produces (no row, or a row with other values).
    pub dangling: u64,
    /// Entries written or deleted by a repair.
    pub repaired: u64,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.missing == 0 && self.dangling == 0
    }
}

/// Compares `index` with the rows of `table`; with `repair`, also fixes what differs (per page,
/// in transactions, so writers may run meanwhile).
pub async fn check(
    store: &dyn KvStore,
    table: &TableDef,
    index: &IndexDef,
    repair: bool,
) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let mut ranges: Vec<(KeyRange, Side)> = table
        .scan_prefixes()
        .iter()
        .map(|p| (KeyRange::prefix(p), Side::Rows))
        .collect();
    ranges.push((KeyRange::prefix(&index.prefix()), Side::Entries));
    let snapshot = store.snapshot();
    for (range, side) in ranges {
        let mut next = Some(range);
        while let Some(current) = next {
            next = if repair {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    let mut tx = store.begin().await?;
                    let mut page_report = CheckReport::default();
                    let outcome =
                        check_page(tx.as_mut(), table, index, &current, side, &mut page_report)
                            .await;
                    let outcome = match outcome {
                        Ok(resume) => tx.commit().await.map(|_| resume).map_err(IndexError::from),
                        Err(e) => Err(e),
                    };
                    match outcome {
                        Err(IndexError::Store(StoreError::Conflict)) if attempt < PAGE_ATTEMPTS => {
                        }
                        other => {
                            let resume = other?;
                            report.add(&page_report);
                            break resume;
                        }
                    }
                }
            } else {
                let mut reader = ReadOnly(snapshot.as_ref());
                check_page(&mut reader, table, index, &current, side, &mut report).await?
            };
        }
    }
    Ok(report)
}

impl CheckReport {
    fn add(&mut self, other: &CheckReport) {
        self.rows += other.rows;
        self.entries += other.entries;
        self.missing += other.missing;
        self.dangling += other.dangling;
        self.repaired += other.repaired;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Rows,
    Entries,
}

/// Something to read from and, when repairing, write fixes to.
trait PageTarget: Send {
    fn reader(&self) -> &dyn KvRead;
    /// Whether fixes are kept (a transaction) or dropped (a plain check).
    fn fix(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) -> bool;
}

impl PageTarget for dyn Transaction + '_ {
    fn reader(&self) -> &dyn KvRead {
        self
    }
    fn fix(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) -> bool {
        match value {
            Some(value) => self.put(key, value),
            None => self.delete(key),
        }
        true
    }
}

struct ReadOnly<'a>(&'a dyn KvRead);

impl PageTarget for ReadOnly<'_> {
    fn reader(&self) -> &dyn KvRead {
        self.0
    }
    fn fix(&mut self, _key: Vec<u8>, _value: Option<Vec<u8>>) -> bool {
        false
    }
}

/// Checks one page of rows (each must have its entry) or of entries (each must belong to a row)
/// and returns where the next page starts.
async fn check_page(
    target: &mut (impl PageTarget + ?Sized),
    table: &TableDef,
    index: &IndexDef,
    range: &KeyRange,
    side: Side,
    report: &mut CheckReport,
) -> Result<Option<KeyRange>> {
    let page = target
        .reader()
        .scan_page(range, Direction::Forward, PAGE_ROWS)
        .await?;
    match side {
        Side::Rows => {
            let rows = full_rows(target.reader(), table, &page.entries).await?;
            let mut expected = Vec::with_capacity(rows.len());
            for row in rows.into_iter().filter(|row| index.covers_row(row)) {
                expected.push((
                    entry_key(table, index, &row),
                    entry_value(table, index, &row),
                ));
            }
            let keys: Vec<Vec<u8>> = expected.iter().map(|(k, _)| k.clone()).collect();
            let found = target.reader().multi_get(&keys).await?;
            report.rows += expected.len() as u64;
            for ((key, value), stored) in expected.into_iter().zip(found) {
                if stored.as_ref() != Some(&value) {
                    report.missing += 1;
                    if target.fix(key, Some(value)) {
                        report.repaired += 1;
                    }
                }
            }
        }
        Side::Entries => {
            let mut row_keys = Vec::with_capacity(page.entries.len());
            for (key, value) in &page.entries {
                let pk = decode_entry(table, index, key, value)
                    .map(|(_, pk)| table.row_key(&pk))
                    .unwrap_or_default();
                row_keys.push(pk);
            }
            let rows = get_rows(target.reader(), table, &row_keys).await?;
            report.entries += page.entries.len() as u64;
            for ((entry, stored_value), (row_key, row)) in
                page.entries.iter().zip(row_keys.iter().zip(rows))
            {
                let produced = match row {
                    Some(row) if !row_key.is_empty() && index.covers_row(&row) => {
                        entry_key(table, index, &row) == *entry
                            && entry_value(table, index, &row) == *stored_value
                    }
                    _ => false,
                };
                if !produced {
                    report.dangling += 1;
                    if target.fix(entry.clone(), None) {
                        report.repaired += 1;
                    }
                }
            }
        }
    }
    Ok(page.resume)
}
