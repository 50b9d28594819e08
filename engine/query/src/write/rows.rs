//! The insert engine every writer of new rows shares (INSERT, UPSERT, COPY, the DataFusion
//! sink): full-width rows written in one transaction, with [`OnExisting`] deciding what an
//! existing key (or a UNIQUE clash) does, the NOT NULL checks, and hidden row ids for tables
//! without a primary key.

use std::sync::Arc;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::block_sequences;
use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};
use crate::values::assign;
use crate::write::constraints::{is_per_row_default, per_row_defaults, sequence_of_default};
use crate::write::generated::{Generation, refuse_generated_targets};
use crate::write::row_writer::RowWriter;
use crate::write::rowids::reserve_rowids;

/// What to do when an inserted key already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnExisting {
    Fail,
    Skip,
    ReplaceRow,
    /// Overwrite the statement's target columns, keep the others.
    MergeColumns,
}

/// Writes full-width rows whose `targets` columns are set (and converted) in one transaction,
/// with `mode` deciding what an existing key does; returns the rows as written (an UPSERT's
/// merged with the row it updated; the skipped left out), in order. Gives rows of a table
/// without a primary key their row ids.
pub(crate) async fn write_rows(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    targets: &[usize],
    mut rows: Vec<Vec<Datum>>,
    mode: OnExisting,
) -> Result<Vec<Vec<Datum>>> {
    let hidden = def.rowid_column();
    assign_rowids(db, def, &mut rows).await?;
    fill_row_defaults(db, txn, def, targets, &mut rows).await?;
    refuse_generated_targets(def, targets, &rows)?;
    let generation = Generation::compile(def)?;
    if let Some(generation) = &generation {
        generation.fill(def, &mut rows)?;
    }
    // An UPSERT that updates an existing row is checked after merging instead.
    if mode != OnExisting::MergeColumns {
        check_unset_columns(def, targets, &rows)?;
    }

    // In a transaction block, the keys are locked before they are looked for.
    if let Some(txn) = txn {
        let may_read_on = matches!(mode, OnExisting::Fail | OnExisting::Skip);
        txn.lock_keys_for_insert(def, &rows, may_read_on).await?;
    }
    let mut writer = RowWriter::begin(db, def, txn).await?;
    let mut prefetched = if hidden.is_none() {
        prefetch_existing(&writer, def, &rows, mode).await?
    } else {
        None
    };
    let mut written = Vec::with_capacity(rows.len());
    for row in rows {
        // The transaction reads its own writes, so a key written earlier in this statement
        // counts as existing too. A fresh hidden row id cannot exist.
        let mut existing = if hidden.is_some() {
            None
        } else if let Some(prefetched) = prefetched.as_mut() {
            prefetched.next().flatten()
        } else {
            writer.stored_row(&def.row_key_of(&row)).await?
        };
        // An expired row is gone for SQL: it is removed (entries too) and the key is free.
        if let Some(old) = existing.take_if(|old| !writer.is_live(old)) {
            writer.stage(Some(&old), None);
        }
        // SQLite's OR IGNORE / OR REPLACE also cover clashes on a UNIQUE index: skip the row, or
        // delete every row it clashes with. (A row skipped for its key needs no look.)
        let skipped_anyway = mode == OnExisting::Skip && existing.is_some();
        if matches!(mode, OnExisting::Skip | OnExisting::ReplaceRow) && !skipped_anyway {
            let (clashing, expired): (Vec<_>, Vec<_>) = writer
                .unique_clashes(&row)
                .await?
                .into_iter()
                .partition(|other| writer.is_live(other));
            for other in &expired {
                writer.stage(Some(other), None);
            }
            if !clashing.is_empty() {
                if mode == OnExisting::Skip {
                    continue;
                }
                for other in &clashing {
                    writer.stage(Some(other), None);
                }
                writer.apply().await?;
            }
        }
        let row = match (existing, mode) {
            (None, OnExisting::MergeColumns) => {
                check_not_null(def, &row)?;
                writer.stage(None, Some(&row));
                row
            }
            (None, _) => {
                writer.stage(None, Some(&row));
                row
            }
            (Some(old), OnExisting::ReplaceRow) => {
                writer.stage(Some(&old), Some(&row));
                row
            }
            (Some(_), OnExisting::Fail) => {
                return Err(Error::DuplicateKey {
                    table: def.name.clone(),
                    key: key_text(def, &row),
                });
            }
            (Some(_), OnExisting::Skip) => continue,
            (Some(old), OnExisting::MergeColumns) => {
                let mut merged = old.clone();
                for &column in targets {
                    merged[column] = row[column].clone();
                }
                if let Some(generation) = &generation {
                    generation.fill(def, std::slice::from_mut(&mut merged))?;
                }
                check_not_null(def, &merged)?;
                writer.stage(Some(&old), Some(&merged));
                merged
            }
        };
        writer.apply().await?;
        written.push(row);
    }
    writer.commit().await?;
    Ok(written)
}

/// The stored rows under the keys of `rows`, read before any of them is written, when that
/// gives the same answers as reading each one just before writing it: the keys are distinct,
/// and writing one row cannot change what another finds (`mode` deletes no other rows; OR
/// IGNORE and OR REPLACE act on UNIQUE clashes, so they read row by row).
async fn prefetch_existing(
    writer: &RowWriter<'_>,
    def: &TableDef,
    rows: &[Vec<Datum>],
    mode: OnExisting,
) -> Result<Option<std::vec::IntoIter<Option<Vec<Datum>>>>> {
    if rows.len() < 2 || !matches!(mode, OnExisting::Fail | OnExisting::MergeColumns) {
        return Ok(None);
    }
    let keys: Vec<Vec<u8>> = rows.iter().map(|row| def.row_key_of(row)).collect();
    let mut sorted: Vec<&Vec<u8>> = keys.iter().collect();
    sorted.sort_unstable();
    if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
        return Ok(None);
    }
    Ok(Some(writer.stored_rows(&keys).await?.into_iter()))
}

/// Gives the rows of a table without a primary key their hidden row ids (fresh ones, so a
/// row given ids before gets new ones); other tables' rows are left as they are.
pub(crate) async fn assign_rowids(
    db: &DbState,
    def: &TableDef,
    rows: &mut [Vec<Datum>],
) -> Result<()> {
    if let Some(rowid_column) = def.rowid_column() {
        let first = reserve_rowids(db, def, rows.len()).await?;
        for (offset, row) in rows.iter_mut().enumerate() {
            row[rowid_column] = Datum::Int(first + offset as i64);
        }
    }
    Ok(())
}

/// Gives the columns a statement does not set whose DEFAULT draws a value per row (from a
/// sequence: SERIAL, identity; or from a volatile function: `gen_random_uuid()`, `random()`)
/// a fresh value in each row that holds none yet (so that filling rows twice, as a table with
/// triggers does before firing them, takes each value once).
pub(crate) async fn fill_row_defaults(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    targets: &[usize],
    rows: &mut [Vec<Datum>],
) -> Result<()> {
    for (position, column) in def.columns.iter().enumerate() {
        if targets.contains(&position) {
            continue;
        }
        let Some(default) = column.default.as_deref() else {
            continue;
        };
        let sequence = sequence_of_default(default);
        if sequence.is_none() && !is_per_row_default(default) {
            continue;
        }
        let unfilled = rows.iter().filter(|row| row[position].is_null()).count();
        if unfilled == 0 {
            continue;
        }
        let values = match &sequence {
            Some(sequence) => {
                block_sequences::next_values(db, txn.map(Arc::as_ref), sequence, unfilled)
                    .await?
                    .into_iter()
                    .map(|value| assign(def, column, Datum::Int(value)))
                    .collect::<Result<Vec<_>>>()?
            }
            None => per_row_defaults(def, column, unfilled)?,
        };
        let mut values = values.into_iter();
        for row in rows.iter_mut().filter(|row| row[position].is_null()) {
            if let Some(value) = values.next() {
                row[position] = value;
            }
        }
    }
    Ok(())
}

/// Checks that the columns a statement does not set (outside `targets`, the hidden row id
/// aside) may hold the NULL they get: NOT NULL is checked for every row.
pub(crate) fn check_unset_columns(
    def: &TableDef,
    targets: &[usize],
    rows: &[Vec<Datum>],
) -> Result<()> {
    let hidden = def.rowid_column();
    for row in rows {
        for (i, column) in def.columns.iter().enumerate() {
            if !targets.contains(&i) && Some(i) != hidden {
                assign(def, column, row[i].clone())?;
            }
        }
    }
    Ok(())
}

fn check_not_null(def: &TableDef, row: &[Datum]) -> Result<()> {
    for (column, value) in def.columns.iter().zip(row) {
        if value.is_null() && !column.nullable {
            assign(def, column, Datum::Null)?;
        }
    }
    Ok(())
}

/// The key of a row as `(a = 1, b = 'x')`, for error messages.
pub(crate) fn key_text(def: &TableDef, row: &[Datum]) -> String {
    let parts: Vec<String> = def
        .key
        .iter()
        .map(|k| format!("{} = {}", def.columns[k.column].name, row[k.column]))
        .collect();
    format!("({})", parts.join(", "))
}
