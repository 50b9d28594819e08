//! INSERT, UPSERT, UPDATE and DELETE.
//!
//! Every statement computes all its row mutations first, then applies them in one optimistic
//! transaction: all of them land or none does, and a concurrent change to a row the statement
//! read makes the statement fail with a retryable conflict instead of losing an update. UPDATE
//! and DELETE select their rows through that same transaction, so the selection itself is
//! validated at commit: a row changed by another session after it was selected is a conflict.
//!
//! Conflict handling follows the syntax users of the field know: plain INSERT rejects an
//! existing key; `UPSERT INTO` (Phoenix) inserts or overwrites the named columns of the existing
//! row; `INSERT OR REPLACE` / `REPLACE INTO` (SQLite, MySQL) replace the whole row;
//! `INSERT OR IGNORE` and `ON CONFLICT DO NOTHING` skip rows whose key exists.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    self, Assignment, AssignmentTarget, Delete, FromTable, Insert, OnConflictAction, OnInsert,
    SetExpr, SqliteOnConflict, Statement, TableObject, TableWithJoins, UnaryOperator, Update,
    Value,
};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::{Direction, KeyRange};

use crate::database::{DbInner, Output, Session, new_context};
use crate::execute::{context_with, object_name, plan_statement};
use crate::hints::QueryHints;
use crate::statement::ParsedStatement;
use crate::txn::{SessionTxn, StatementTxn};
use crate::types::{assign, datum_from_array};
use crate::write::RowWriter;
use crate::{Error, Result};

/// What to do when an inserted key already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnExisting {
    Fail,
    Skip,
    ReplaceRow,
    /// Overwrite the statement's target columns, keep the others.
    MergeColumns,
}

pub(crate) async fn insert(session: &Session, insert: &Insert, upsert: bool) -> Result<Output> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(Error::Unsupported {
            what: "INSERT INTO a table function".to_string(),
        });
    };
    let def = session
        .db
        .catalog
        .require_table(&object_name(name)?)
        .map_err(|_| Error::TableNotFound {
            table: name.to_string().to_lowercase(),
        })?;
    let mode = on_existing(insert, upsert)?;
    let targets = target_columns(&def, &insert.columns)?;
    let Some(source) = &insert.source else {
        return Err(Error::Unsupported {
            what: "INSERT without VALUES or SELECT".to_string(),
        });
    };
    let values = match literal_rows(source) {
        Some(rows) => rows,
        None => {
            let source = Statement::Query(source.clone());
            query_rows(session, source, None, session.open_txn()).await?
        }
    };
    let mut rows = Vec::with_capacity(values.len());
    for row_values in values {
        if row_values.len() != targets.len() {
            return Err(Error::ColumnCountMismatch {
                table: def.name.clone(),
                expected: targets.len(),
                found: row_values.len(),
            });
        }
        let mut row = vec![Datum::Null; def.columns.len()];
        for (&column, value) in targets.iter().zip(row_values) {
            row[column] = assign(&def, &def.columns[column], value)?;
        }
        rows.push(row);
    }
    let txn = session.open_txn();
    let affected = write_rows(&session.db, txn.as_ref(), &def, &targets, rows, mode).await?;
    Ok(Output::Affected { rows: affected })
}

/// Writes full-width rows whose `targets` columns are set (and converted) in one transaction,
/// with `mode` deciding what an existing key does; returns the rows written. Gives rows of a
/// table without a primary key their row ids.
pub(crate) async fn write_rows(
    db: &DbInner,
    txn: Option<&Arc<SessionTxn>>,
    def: &TableDef,
    targets: &[usize],
    mut rows: Vec<Vec<Datum>>,
    mode: OnExisting,
) -> Result<u64> {
    let hidden = def.rowid_column();
    if let Some(rowid_column) = hidden {
        let first = reserve_rowids(db, def, rows.len()).await?;
        for (offset, row) in rows.iter_mut().enumerate() {
            row[rowid_column] = Datum::Int(first + offset as i64);
        }
    }
    // Columns the statement does not set must still satisfy NOT NULL (an UPSERT that updates an
    // existing row is checked again after merging).
    for row in &rows {
        for (i, column) in def.columns.iter().enumerate() {
            if !targets.contains(&i) && Some(i) != hidden && mode != OnExisting::MergeColumns {
                assign(def, column, row[i].clone())?;
            }
        }
    }

    let mut writer = RowWriter::begin(db, def, txn).await?;
    let mut prefetched = if hidden.is_none() {
        prefetch_existing(&writer, def, &rows, mode).await?
    } else {
        None
    };
    let mut affected = 0u64;
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
        match (existing, mode) {
            (None, OnExisting::MergeColumns) => {
                check_not_null(def, &row)?;
                writer.stage(None, Some(&row));
            }
            (None, _) => writer.stage(None, Some(&row)),
            (Some(old), OnExisting::ReplaceRow) => writer.stage(Some(&old), Some(&row)),
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
                check_not_null(def, &merged)?;
                writer.stage(Some(&old), Some(&merged));
            }
        }
        writer.apply().await?;
        affected += 1;
    }
    writer.commit().await?;
    Ok(affected)
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

pub(crate) async fn update(session: &Session, update: &Update) -> Result<Output> {
    if update.from.is_some() || !update.table.joins.is_empty() {
        return Err(Error::Unsupported {
            what: "UPDATE with FROM or joins".to_string(),
        });
    }
    let def = target_table(session, &update.table)?;
    let mut assigned: Vec<(usize, &ast::Expr)> = Vec::with_capacity(update.assignments.len());
    for Assignment { target, value } in &update.assignments {
        let AssignmentTarget::ColumnName(column) = target else {
            return Err(Error::Unsupported {
                what: format!("the assignment target {target}"),
            });
        };
        let column_name = object_name(column)?;
        let position = visible_column(&def, &column_name)?;
        // As in SQLite, the rightmost assignment to a column wins.
        assigned.retain(|(c, _)| *c != position);
        assigned.push((position, value));
    }
    // Aliased: two assignments with the same text (`SET x = 5, y = 5`) are still two columns.
    let extra: Vec<String> = assigned
        .iter()
        .enumerate()
        .map(|(i, (_, e))| format!("({e}) AS \"__rowdex_set_{i}\""))
        .collect();
    let statement_txn = StatementTxn::begin(&session.db, session.open_txn()).await?;
    let rows = select_rows(
        session,
        &statement_txn,
        &def,
        &update.table,
        &extra,
        update.selection.as_ref(),
    )
    .await?;

    let ncolumns = def.columns.len();
    let mut assignments = Vec::with_capacity(rows.len());
    for mut row in rows {
        let new_values = row.split_off(ncolumns);
        let mut values = Vec::with_capacity(new_values.len());
        for ((column, _), value) in assigned.iter().zip(new_values) {
            values.push((*column, assign(&def, &def.columns[*column], value)?));
        }
        assignments.push((def.row_key_of(&row), values));
    }

    let mut writer = RowWriter::begin(&session.db, &def, Some(&statement_txn.txn)).await?;
    // The old rows are read again through the transaction: the stored rows with everything
    // the statement wrote so far.
    let mut changes = Vec::with_capacity(assignments.len());
    for (old_key, values) in assignments {
        let Some(old_row) = writer.stored_row(&old_key).await? else {
            // Selected and read through one transaction, so this cannot happen short of a
            // damaged store; retrying is still the honest answer.
            return Err(Error::WriteConflict);
        };
        let mut new_row = old_row.clone();
        for (column, value) in values {
            new_row[column] = value;
        }
        changes.push((old_row, new_row));
    }
    let old_keys: HashSet<Vec<u8>> = changes.iter().map(|(old, _)| def.row_key_of(old)).collect();
    let mut new_keys: HashSet<Vec<u8>> = HashSet::with_capacity(changes.len());
    for (old_row, new_row) in &changes {
        let new_key = def.row_key_of(new_row);
        let mut taken = !new_keys.insert(new_key.clone());
        if !taken && !old_keys.contains(&new_key) {
            match writer.stored_row(&new_key).await? {
                Some(other) if writer.is_live(&other) => taken = true,
                // An expired row on the new key is removed to make room.
                Some(expired) => writer.stage(Some(&expired), None),
                None => {}
            }
        }
        if taken {
            return Err(Error::DuplicateKey {
                table: def.name.clone(),
                key: key_text(&def, new_row),
            });
        }
        writer.stage(Some(old_row), Some(new_row));
    }
    writer.commit().await?;
    statement_txn.finish(&session.db).await?;
    Ok(Output::Affected {
        rows: changes.len() as u64,
    })
}

pub(crate) async fn delete(session: &Session, delete: &Delete) -> Result<Output> {
    let tables = match &delete.from {
        FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
    };
    let [table] = tables.as_slice() else {
        return Err(Error::Unsupported {
            what: "DELETE from several tables".to_string(),
        });
    };
    if delete.using.is_some() || !table.joins.is_empty() || delete.limit.is_some() {
        return Err(Error::Unsupported {
            what: "DELETE with USING, joins or LIMIT".to_string(),
        });
    }
    let def = target_table(session, table)?;
    let statement_txn = StatementTxn::begin(&session.db, session.open_txn()).await?;
    let rows = select_rows(
        session,
        &statement_txn,
        &def,
        table,
        &[],
        delete.selection.as_ref(),
    )
    .await?;
    let mut writer = RowWriter::begin(&session.db, &def, Some(&statement_txn.txn)).await?;
    for row in &rows {
        let Some(stored) = writer.stored_row(&def.row_key_of(row)).await? else {
            return Err(Error::WriteConflict);
        };
        writer.stage(Some(&stored), None);
    }
    writer.commit().await?;
    statement_txn.finish(&session.db).await?;
    Ok(Output::Affected {
        rows: rows.len() as u64,
    })
}

fn on_existing(insert: &Insert, upsert: bool) -> Result<OnExisting> {
    if upsert {
        return Ok(OnExisting::MergeColumns);
    }
    if insert.replace_into {
        return Ok(OnExisting::ReplaceRow);
    }
    let from_or = match insert.or {
        None
        | Some(SqliteOnConflict::Abort | SqliteOnConflict::Fail | SqliteOnConflict::Rollback) => {
            OnExisting::Fail
        }
        Some(SqliteOnConflict::Replace) => OnExisting::ReplaceRow,
        Some(SqliteOnConflict::Ignore) => OnExisting::Skip,
    };
    let mode = if insert.ignore {
        OnExisting::Skip
    } else {
        from_or
    };
    match &insert.on {
        None => Ok(mode),
        Some(OnInsert::OnConflict(conflict)) => match &conflict.action {
            OnConflictAction::DoNothing => Ok(OnExisting::Skip),
            OnConflictAction::DoUpdate(_) => Err(Error::Unsupported {
                what: "ON CONFLICT DO UPDATE (use UPSERT INTO or INSERT OR REPLACE)".to_string(),
            }),
        },
        Some(other) => Err(Error::Unsupported {
            what: format!("{other}"),
        }),
    }
}

fn target_table(session: &Session, table: &TableWithJoins) -> Result<Arc<TableDef>> {
    let ast::TableFactor::Table { name, .. } = &table.relation else {
        return Err(Error::Unsupported {
            what: format!("writing to {}", table.relation),
        });
    };
    let name = object_name(name)?;
    session
        .db
        .catalog
        .table(&name)
        .ok_or(Error::TableNotFound { table: name })
}

fn visible_column(def: &TableDef, name: &str) -> Result<usize> {
    def.column_index(name)
        .filter(|i| !def.columns[*i].hidden)
        .ok_or_else(|| Error::ColumnNotFound {
            table: def.name.clone(),
            column: name.to_string(),
        })
}

pub(crate) fn target_columns(def: &TableDef, names: &[ast::ObjectName]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok(def.visible_columns().map(|(i, _)| i).collect());
    }
    let mut targets = Vec::with_capacity(names.len());
    for name in names {
        let column = object_name(name)?;
        let position = visible_column(def, &column)?;
        if targets.contains(&position) {
            return Err(Error::DuplicateTarget { column });
        }
        targets.push(position);
    }
    Ok(targets)
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
fn key_text(def: &TableDef, row: &[Datum]) -> String {
    let parts: Vec<String> = def
        .key
        .iter()
        .map(|k| format!("{} = {}", def.columns[k.column].name, row[k.column]))
        .collect();
    format!("({})", parts.join(", "))
}

/// Rows of a `VALUES` list made only of constants, read without DataFusion (the common bulk
/// INSERT shape, where planning would cost more than the write). None when any item needs
/// evaluation.
fn literal_rows(query: &ast::Query) -> Option<Vec<Vec<Datum>>> {
    if query.with.is_some() || query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Values(values) = query.body.as_ref() else {
        return None;
    };
    values
        .rows
        .iter()
        .map(|row| row.iter().map(literal).collect())
        .collect()
}

fn literal(expr: &ast::Expr) -> Option<Datum> {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            Value::Null => Some(Datum::Null),
            Value::Boolean(b) => Some(Datum::Boolean(*b)),
            Value::SingleQuotedString(s) => Some(Datum::Text(s.clone())),
            Value::Number(text, _) => number(text, false),
            _ => None,
        },
        ast::Expr::UnaryOp { op, expr } => match (op, expr.as_ref()) {
            (UnaryOperator::Minus, ast::Expr::Value(value)) => match &value.value {
                Value::Number(text, _) => number(text, true),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

fn number(text: &str, negative: bool) -> Option<Datum> {
    let signed = if negative {
        format!("-{text}")
    } else {
        text.to_string()
    };
    if let Ok(v) = signed.parse::<i64>() {
        return Some(Datum::Int(v));
    }
    // Integers beyond i64 become doubles, as in SQLite; decimals parse as doubles.
    signed
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(Datum::Float)
}

/// Runs a query through DataFusion and returns its rows as datums.
async fn query_rows(
    session: &Session,
    mut statement: Statement,
    expose_hidden: Option<String>,
    txn: Option<Arc<SessionTxn>>,
) -> Result<Vec<Vec<Datum>>> {
    let base = match &expose_hidden {
        Some(_) => new_context(&session.db, expose_hidden),
        None => session.ctx.clone(),
    };
    let ctx = context_with(&base, &QueryHints::default(), txn);
    // Rows are taken by position, so `SELECT i, i` may name two columns alike.
    let _ = crate::rewrite::unique_output_names(&mut statement);
    let plan = plan_statement(&ctx, statement).await?;
    let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
    let mut rows = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .map(|column| datum_from_array(column.as_ref(), row))
                .collect::<Result<Vec<Datum>>>()?;
            rows.push(values);
        }
    }
    Ok(rows)
}

/// Every column (hidden ones too) of the rows an UPDATE or DELETE targets, followed by the
/// `extra` expressions evaluated on each.
async fn select_rows(
    session: &Session,
    txn: &StatementTxn,
    def: &TableDef,
    table: &TableWithJoins,
    extra: &[String],
    selection: Option<&ast::Expr>,
) -> Result<Vec<Vec<Datum>>> {
    let mut items: Vec<String> = def
        .columns
        .iter()
        .map(|c| format!("\"{}\"", c.name.replace('"', "\"\"")))
        .collect();
    items.extend(extra.iter().cloned());
    let mut sql = format!("SELECT {} FROM {}", items.join(", "), table.relation);
    if let Some(selection) = selection {
        sql.push_str(&format!(" WHERE {selection}"));
    }
    let mut statements = crate::statement::split_statements(&sql)?;
    let Some(ParsedStatement::Sql { statement, .. }) = statements.pop() else {
        return Ok(Vec::new());
    };
    query_rows(
        session,
        *statement,
        Some(def.name.clone()),
        Some(txn.txn.clone()),
    )
    .await
}

/// Reserves `count` consecutive hidden row ids for a table.
async fn reserve_rowids(db: &DbInner, def: &TableDef, count: usize) -> Result<i64> {
    let known = db
        .next_rowids
        .lock()
        .map(|m| m.get(&def.id).copied())
        .unwrap_or(None);
    let next = match known {
        Some(next) => next,
        None => {
            // First insert since open: continue after the largest row id stored.
            let mut largest = 0i64;
            for prefix in def.scan_prefixes() {
                let page = db
                    .store
                    .scan_page(&KeyRange::prefix(&prefix), Direction::Reverse, 1)
                    .await?;
                if let Some((key, value)) = page.entries.first() {
                    let row = def.decode_row(key, value)?;
                    if let Some(Datum::Int(id)) = def.key.first().map(|k| &row[k.column]) {
                        largest = largest.max(*id);
                    }
                }
            }
            largest + 1
        }
    };
    let mut map = db.next_rowids.lock().map_err(|_| Error::WriteConflict)?;
    let entry = map.entry(def.id).or_insert(next);
    let first = (*entry).max(next);
    *entry = first + count as i64;
    Ok(first)
}
