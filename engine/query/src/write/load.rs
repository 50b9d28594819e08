//! Loading batches of new rows (COPY): a batch is encoded first (row keys, cells and index
//! entries, sorted into one run of ascending keys), which needs no store and so can run on
//! another core while the batch before is written; it is then written as that run in a
//! transaction of its own, without a search of the transaction's write buffer per entry.
//!
//! The run is written only when it is the plain case: every key once in the batch, none
//! stored, the table's schema unchanged since the encoding. Anything else goes to the insert
//! engine ([`write_rows`]) row by row, which reports a duplicate key, a UNIQUE clash or an
//! expired row exactly as INSERT does. Inside a transaction block every batch goes that way,
//! into the block's transaction: nothing of the load is committed before the block is.

use std::collections::BTreeSet;
use std::sync::Arc;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_indexer::mutations::row_change;

use crate::db::DbState;
use crate::db::txn::SessionTxn;
use crate::error::Result;
use crate::write::constraints::Checks;
use crate::write::generated::{fill_generated, refuse_generated_targets};
use crate::write::row_writer::RowWriter;
use crate::write::rows::{OnExisting, check_unset_columns, write_rows};

/// A batch of new rows with what writing them puts in the store.
#[derive(Debug)]
pub(crate) struct EncodedRows {
    /// The rows, full width, in their input order (for the row-by-row path).
    rows: Vec<Vec<Datum>>,
    /// The key of each row, in the same order.
    row_keys: Vec<Vec<u8>>,
    /// Every entry the rows write (their own and their index entries), ascending; `None` when
    /// two rows write the same key, or when it was written already.
    run: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    /// (index position, value prefix) of every entry in a UNIQUE index.
    unique_probes: BTreeSet<(usize, Vec<u8>)>,
    /// The time the rows were written at (tables with a TTL).
    now: i64,
    /// The schema version the entries were encoded for.
    schema_version: u32,
}

impl EncodedRows {
    /// How many rows the batch holds.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
}

/// Encodes `rows`, full-width rows of `def` whose `targets` columns a statement set (hidden
/// row ids already given), as written at `now`. Fails when a column left unset is NOT NULL or a
/// row breaks a CHECK constraint.
pub(crate) fn encode_new_rows(
    def: &TableDef,
    targets: &[usize],
    mut rows: Vec<Vec<Datum>>,
    now: i64,
) -> Result<EncodedRows> {
    refuse_generated_targets(def, targets, &rows)?;
    fill_generated(def, &mut rows)?;
    check_unset_columns(def, targets, &rows)?;
    if let Some(checks) = Checks::compile(def)? {
        checks.check(def, &rows)?;
    }
    let cutoff = def.expiry_cutoff(now);
    let mut run = Vec::with_capacity(rows.len() * (1 + def.indexes.len()));
    let mut unique_probes = BTreeSet::new();
    let mut row_keys = Vec::with_capacity(rows.len());
    for row in &rows {
        let change = row_change(def, None, Some(row), now, cutoff);
        run.extend(change.puts);
        unique_probes.extend(change.unique_probes);
        row_keys.push(def.row_key_of(row));
    }
    run.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let distinct = run.windows(2).all(|pair| pair[0].0 != pair[1].0);
    Ok(EncodedRows {
        rows,
        row_keys,
        run: distinct.then_some(run),
        unique_probes,
        now,
        schema_version: def.schema_version,
    })
}

/// Writes an encoded batch in a transaction of its own (see the module header for when it goes
/// row by row instead); returns the rows written. A second call, after a failed one (a
/// conflict to retry), goes row by row.
pub(crate) async fn write_new_rows(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    targets: &[usize],
    batch: &mut EncodedRows,
) -> Result<u64> {
    if txn.is_some() {
        return row_by_row(db, txn, def, targets, batch).await;
    }
    let run = match batch.run.take() {
        Some(run) if batch.schema_version == def.schema_version => run,
        _ => return row_by_row(db, None, def, targets, batch).await,
    };
    let mut writer = RowWriter::begin_at(db, def, None, batch.now).await?;
    // The run holds every row's entry, each once, so the row keys are distinct too.
    let stored = writer.stored_rows(&batch.row_keys).await?;
    if stored.iter().any(Option::is_some) {
        // The transaction is dropped unwritten.
        drop(writer);
        return row_by_row(db, None, def, targets, batch).await;
    }
    let probes = std::mem::take(&mut batch.unique_probes);
    writer.stage_new_run(&batch.rows, run, probes).await?;
    writer.commit().await?;
    Ok(batch.rows.len() as u64)
}

async fn row_by_row(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    targets: &[usize],
    batch: &EncodedRows,
) -> Result<u64> {
    let rows = batch.rows.clone();
    let written = write_rows(db, txn, def, targets, rows, OnExisting::Fail).await?;
    Ok(written.len() as u64)
}
