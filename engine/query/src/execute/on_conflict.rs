//! `INSERT ... ON CONFLICT (cols) | ON CONSTRAINT name DO UPDATE SET ... [WHERE ...]`, as
//! PostgreSQL and SQLite define it: each proposed row whose arbiter (the primary key, or one
//! UNIQUE index) matches a stored row updates that row instead, with `EXCLUDED.c` naming the
//! proposed value and the table's own name (or alias) the stored one; the others are inserted.
//! A row proposed twice by one statement is an error, as in PostgreSQL.
//!
//! The SET list and WHERE of every conflicting row are evaluated together, in one DataFusion
//! query over an in-memory batch of (stored row, proposed row) pairs, so a statement of many
//! rows costs one evaluation.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::{
    self, AssignmentTarget, ConflictTarget, DoUpdate, Ident, visit_expressions_mut,
};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::txn::SessionTxn;
use crate::error::{Error, Result};
use crate::execute::returning::select_over;
use crate::output::Output;
use crate::sql::names::{ident_name, object_name, visible_column};
use crate::values::{assign, datum_from_array, rows_to_batch, table_schema};
use crate::write::constraints::Checks;
use crate::write::generated::{fill_generated, fill_generated_in, refuse_generated_targets};
use crate::write::row_writer::RowWriter;
use crate::write::rows::{assign_rowids, check_unset_columns, fill_row_defaults, key_text};

/// What decides that a proposed row conflicts: its primary key, or its values in one UNIQUE
/// index (a position in the table's indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arbiter {
    PrimaryKey,
    Unique(usize),
}

/// The prefix the proposed names are given in the evaluated batch (`EXCLUDED.c` becomes
/// `rowdex_excluded_c`).
const EXCLUDED_PREFIX: &str = "rowdex_excluded_";

/// The arbiter a conflict target names: a column list equal (as a set) to the primary key or to
/// a UNIQUE index's columns, or the name of one (`<table>_pkey` for the primary key).
fn arbiter(def: &TableDef, target: Option<&ConflictTarget>) -> Result<Arbiter> {
    let unmatched = || Error::NoConflictArbiter {
        table: def.name.clone(),
    };
    match target {
        None => Err(Error::Unsupported {
            what: "ON CONFLICT DO UPDATE without a conflict target: name the columns, as in \
                   ON CONFLICT (id) DO UPDATE"
                .to_string(),
        }),
        Some(ConflictTarget::Columns(columns)) => {
            let mut named = Vec::with_capacity(columns.len());
            for column in columns {
                let name = ident_name(column);
                named.push(
                    def.column_index(&name)
                        .ok_or_else(|| Error::ColumnNotFound {
                            table: def.name.clone(),
                            column: name,
                        })?,
                );
            }
            named.sort_unstable();
            named.dedup();
            let same = |columns: &mut Vec<usize>| {
                columns.sort_unstable();
                *columns == named
            };
            if same(&mut def.key.iter().map(|k| k.column).collect()) {
                return Ok(Arbiter::PrimaryKey);
            }
            def.ready_indexes()
                // A partial index arbitrates only where its condition is named too, which
                // rowdex does not infer: it is not chosen by its columns.
                .find(|(_, index)| {
                    index.unique
                        && index.filter.is_none()
                        && same(&mut index.columns.iter().map(|k| k.column).collect())
                })
                .map(|(position, _)| Arbiter::Unique(position))
                .ok_or_else(unmatched)
        }
        Some(ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            if name == format!("{}_pkey", def.name) {
                return Ok(Arbiter::PrimaryKey);
            }
            def.ready_indexes()
                .find(|(_, index)| index.unique && index.name == name)
                .map(|(position, _)| Arbiter::Unique(position))
                .ok_or_else(|| Error::ConstraintNotFound {
                    table: def.name.clone(),
                    constraint: name,
                })
        }
    }
}

/// What happens to one proposed row.
enum Fate {
    Insert(Vec<Datum>),
    /// The stored row it conflicts with, and the proposed row.
    Conflict(Vec<Datum>, Vec<Datum>),
    /// A row whose arbiter values an earlier row of the statement proposed (the position of
    /// that row's fate); the stored row it conflicts with, if any, and the proposed row.
    Again(usize, Option<Vec<Datum>>, Vec<Datum>),
}

/// What a conflicting row does: nothing, or DO UPDATE.
#[derive(Clone, Copy)]
pub(crate) enum Action<'a> {
    Nothing,
    Update(&'a DoUpdate),
}

/// Writes `rows` (full rows of `def`, `targets` set by the statement) with ON CONFLICT on the
/// arbiter `target` names, in one transaction; returns the rows inserted or updated, as
/// written, in order.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn insert_or_update(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    alias: &str,
    targets: &[usize],
    mut rows: Vec<Vec<Datum>>,
    target: Option<&ConflictTarget>,
    action: Action<'_>,
) -> Result<Vec<Vec<Datum>>> {
    let arbiter = arbiter(def, target)?;
    let assignments = match action {
        Action::Update(update) => assignments(def, update)?,
        Action::Nothing => Vec::new(),
    };
    assign_rowids(db, def, &mut rows).await?;
    fill_row_defaults(db, txn, def, targets, &mut rows).await?;
    refuse_generated_targets(def, targets, &rows)?;
    fill_generated(def, &mut rows)?;
    // The proposed rows must be valid rows before any conflict is looked for, as in
    // PostgreSQL: a row that breaks a CHECK or NOT NULL fails the statement even if it would
    // have been skipped.
    check_unset_columns(def, targets, &rows)?;
    if let Some(checks) = Checks::compile(def)? {
        checks.check(def, &rows)?;
    }
    // In a transaction block, the proposed keys are locked before conflicts are looked for:
    // a row another transaction is inserting or changing is waited for, then seen as it
    // committed.
    if let Some(txn) = txn {
        txn.lock_keys_for_insert(def, &rows, true).await?;
    }
    let mut writer = RowWriter::begin(db, def, txn).await?;

    // Each proposed row against the rows stored before the statement; a row whose arbiter
    // values an earlier row claimed is decided once the earlier one is.
    let mut claimed: HashMap<Vec<u8>, usize> = HashMap::with_capacity(rows.len());
    let mut fates = Vec::with_capacity(rows.len());
    for row in rows {
        let (claim, holder) = match arbiter {
            Arbiter::PrimaryKey => {
                let key = def.row_key_of(&row);
                let stored = writer.stored_row(&key).await?;
                (Some(key), stored)
            }
            Arbiter::Unique(position) => {
                let index = &def.indexes[position];
                let claim = rowdex_indexer::layout::unique_prefix(index, &row);
                let holders = writer.unique_holders(position, &row).await?;
                (
                    claim,
                    holders
                        .into_iter()
                        .map(|(_, r)| r)
                        .find(|r| writer.is_live(r)),
                )
            }
        };
        let holder = match holder {
            Some(stored) if writer.is_live(&stored) => Some(stored),
            Some(expired) => {
                writer.stage(Some(&expired), None);
                None
            }
            None => None,
        };
        let earlier = claim.and_then(|claim| match claimed.get(&claim) {
            Some(&earlier) => Some(earlier),
            None => {
                claimed.insert(claim, fates.len());
                None
            }
        });
        fates.push(match (earlier, holder) {
            (Some(earlier), holder) => Fate::Again(earlier, holder, row),
            (None, Some(stored)) => Fate::Conflict(stored, row),
            (None, None) => Fate::Insert(row),
        });
    }
    writer.apply().await?;

    // The DO UPDATE of every row that met a stored row, evaluated together.
    let pairs: Vec<(&Vec<Datum>, &Vec<Datum>)> = fates
        .iter()
        .filter_map(|fate| match fate {
            Fate::Conflict(stored, proposed) | Fate::Again(_, Some(stored), proposed) => {
                Some((stored, proposed))
            }
            _ => None,
        })
        .collect();
    let mut updated = match action {
        Action::Update(update) => evaluate(def, alias, &assignments, update, &pairs).await?,
        Action::Nothing => vec![None; pairs.len()],
    }
    .into_iter();

    // Whether each row's fate wrote a row (an insert, or an update its WHERE let through).
    let mut wrote = Vec::with_capacity(fates.len());
    let mut written = Vec::with_capacity(fates.len());
    for fate in fates {
        let (stored, new_row) = match fate {
            Fate::Insert(row) => {
                match writer.stored_row(&def.row_key_of(&row)).await? {
                    Some(other) if writer.is_live(&other) => {
                        return Err(Error::DuplicateKey {
                            table: def.name.clone(),
                            key: key_text(def, &row),
                        });
                    }
                    // An expired row gives its key up.
                    Some(expired) => writer.stage(Some(&expired), None),
                    None => {}
                }
                (None, Some(row))
            }
            Fate::Conflict(stored, _) => {
                let update = updated.next().flatten();
                (Some(stored), update)
            }
            Fate::Again(earlier, stored, _) => {
                let update = if stored.is_some() {
                    updated.next().flatten()
                } else {
                    None
                };
                // It meets the row the earlier proposal wrote: DO NOTHING skips it, DO UPDATE
                // may not write one row twice (PostgreSQL's rule).
                if wrote.get(earlier).copied().unwrap_or(false) {
                    match action {
                        Action::Nothing => {
                            wrote.push(false);
                            continue;
                        }
                        Action::Update(_) => {
                            return Err(Error::ConflictTwice {
                                table: def.name.clone(),
                            });
                        }
                    }
                }
                (stored, update)
            }
        };
        let Some(new_row) = new_row else {
            // Skipped: DO NOTHING, or the DO UPDATE's WHERE was not true.
            wrote.push(false);
            continue;
        };
        if let Some(stored) = &stored {
            let new_key = def.row_key_of(&new_row);
            if new_key != def.row_key_of(stored) && writer.stored_row(&new_key).await?.is_some() {
                return Err(Error::DuplicateKey {
                    table: def.name.clone(),
                    key: key_text(def, &new_row),
                });
            }
        }
        writer.stage(stored.as_deref(), Some(&new_row));
        writer.apply().await?;
        wrote.push(true);
        written.push(new_row);
    }
    writer.commit().await?;
    Ok(written)
}

/// The SET list as (column, expression) pairs, `EXCLUDED.c` rewritten to the batch's name for
/// it; the rightmost assignment to a column wins, as in UPDATE.
fn assignments(def: &TableDef, update: &DoUpdate) -> Result<Vec<(usize, ast::Expr)>> {
    let mut assigned: Vec<(usize, ast::Expr)> = Vec::with_capacity(update.assignments.len());
    for assignment in &update.assignments {
        let AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(Error::Unsupported {
                what: format!("the assignment target {}", assignment.target),
            });
        };
        let position = visible_column(def, &object_name(column)?)?;
        if let Some(expr) = &def.columns[position].generation {
            return Err(Error::GeneratedColumnWritten {
                table: def.name.clone(),
                column: def.columns[position].name.clone(),
                expr: expr.clone(),
            });
        }
        let mut value = assignment.value.clone();
        excluded_as_columns(&mut value);
        assigned.retain(|(c, _)| *c != position);
        assigned.push((position, value));
    }
    Ok(assigned)
}

/// Rewrites `EXCLUDED.c` (any case) into the column the batch holds the proposed `c` in.
fn excluded_as_columns(expr: &mut ast::Expr) {
    let _ = visit_expressions_mut(expr, |e| {
        if let ast::Expr::CompoundIdentifier(parts) = e
            && let [table, column] = parts.as_slice()
            && table.value.eq_ignore_ascii_case("excluded")
        {
            let name = format!("{EXCLUDED_PREFIX}{}", ident_name(column));
            *e = ast::Expr::Identifier(Ident::with_quote('"', name));
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Each conflicting row as the DO UPDATE leaves it (None where its WHERE is not true), in the
/// order of `pairs` (stored row, proposed row).
async fn evaluate(
    def: &TableDef,
    alias: &str,
    assignments: &[(usize, ast::Expr)],
    update: &DoUpdate,
    pairs: &[(&Vec<Datum>, &Vec<Datum>)],
) -> Result<Vec<Option<Vec<Datum>>>> {
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let columns: Vec<usize> = def.visible_columns().map(|(i, _)| i).collect();
    let schema = table_schema(def, &columns);
    let stored: Vec<Vec<Datum>> = pairs.iter().map(|(s, _)| (*s).clone()).collect();
    let proposed: Vec<Vec<Datum>> = pairs.iter().map(|(_, p)| (*p).clone()).collect();
    let stored_batch = rows_to_batch(def, &schema, &columns, &stored)?;
    let proposed_batch = rows_to_batch(def, &schema, &columns, &proposed)?;
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(schema.fields().iter().map(|f| {
        let name = format!("{EXCLUDED_PREFIX}{}", f.name());
        f.as_ref().clone().with_name(name)
    }));
    let mut arrays: Vec<ArrayRef> = stored_batch.columns().to_vec();
    arrays.extend(proposed_batch.columns().iter().cloned());
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;

    let mut list: Vec<String> = assignments
        .iter()
        .enumerate()
        .map(|(i, (_, e))| format!("({e}) AS \"rowdex_set_{i}\""))
        .collect();
    if let Some(selection) = &update.selection {
        let mut selection = selection.clone();
        excluded_as_columns(&mut selection);
        list.push(format!(
            "coalesce(({selection}), false) AS \"rowdex_where\""
        ));
    }
    let Output::Rows { batches, .. } = select_over(batch, alias, &list).await? else {
        return Ok(Vec::new());
    };
    let mut results = Vec::with_capacity(pairs.len());
    let mut pair = pairs.iter();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let Some((stored, _)) = pair.next() else {
                break;
            };
            if update.selection.is_some() {
                let condition = datum_from_array(batch.column(assignments.len()).as_ref(), row)?;
                if condition != Datum::Boolean(true) {
                    results.push(None);
                    continue;
                }
            }
            let mut new_row = (*stored).clone();
            for (i, (column, _)) in assignments.iter().enumerate() {
                let value = datum_from_array(batch.column(i).as_ref(), row)?;
                new_row[*column] = assign(def, &def.columns[*column], value)?;
            }
            results.push(Some(new_row));
        }
    }
    fill_generated_in(def, results.iter_mut().flatten())?;
    Ok(results)
}
