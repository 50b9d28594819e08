//! UPDATE and DELETE: the rows a statement changes are selected through the statement's
//! transaction (so the selection itself is validated at commit: a row changed by another
//! session after it was selected is a conflict, not an update lost), then each is rewritten or
//! removed by its key with its index entries, between the table's BEFORE and AFTER triggers.
//!
//! Two ways to find the rows and compute an UPDATE's new values: natively (`native::write`,
//! a prepared or cached statement, without DataFusion) or through a DataFusion query; the
//! writing after it is one and the same (`Changed`).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    self, Assignment, AssignmentTarget, Delete, FromTable, SelectItem, Statement, TableWithJoins,
    Update,
};
use rowdex_catalog::{DataType, TableDef, TriggerTiming};
use rowdex_codec::Datum;
use rowdex_store::locks::LockWait;

use crate::db::row_locks::RowsLocked;
use crate::db::statement_stop::StatementStop;
use crate::db::txn::StatementTxn;
use crate::error::{Error, Result};
use crate::execute::dml::{query_rows, written_output};
use crate::execute::insert_values::is_default_keyword;
use crate::execute::query::run_explain;
use crate::execute::triggers::{fire_deletes, fire_updates};
use crate::format::column_texts;
use crate::native::write::NativeWrite;
use crate::output::Output;
use crate::scan::explain::ExplainOptions;
use crate::session::{Executor, Session};
use crate::sql::hints::QueryHints;
use crate::sql::names::{ident_name, object_name, statement_kind, visible_column};
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::values::assign;
use crate::write::generated::fill_generated_in;
use crate::write::row_writer::RowWriter;
use crate::write::rows::key_text;

/// The name a table goes by in a statement: its alias, or its own name.
fn table_alias(def: &TableDef, table: &TableWithJoins) -> String {
    match &table.relation {
        ast::TableFactor::Table {
            alias: Some(alias), ..
        } => ident_name(&alias.name),
        _ => def.name.clone(),
    }
}

pub(crate) async fn update(session: &Session, update: &Update) -> Result<Output> {
    check_update_form(update)?;
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
        if def.columns[position].generated_always {
            return Err(Error::GeneratedAlways {
                table: def.name.clone(),
                column: column_name,
            });
        }
        if let Some(expr) = &def.columns[position].generation {
            // `SET g = DEFAULT` asks for what the write computes anyway.
            if is_default_keyword(value) {
                continue;
            }
            return Err(Error::GeneratedColumnWritten {
                table: def.name.clone(),
                column: column_name,
                expr: expr.clone(),
            });
        }
        // As in SQLite, the rightmost assignment to a column wins.
        assigned.retain(|(c, _)| *c != position);
        assigned.push((position, value));
    }
    // Aliased: two assignments with the same text (`SET x = 5, y = 5`) are still two columns.
    // A value for an instant is made one in the plan, where a `TIMESTAMP '...'` is read as a
    // time of the session's wall clock (`df::rules::time_zones`).
    let extra: Vec<String> = assigned
        .iter()
        .enumerate()
        .map(|(i, (column, e))| match def.columns[*column].data_type {
            DataType::TimestampTz => format!("CAST(({e}) AS TIMESTAMPTZ) AS \"__rowdex_set_{i}\""),
            _ => format!("({e}) AS \"__rowdex_set_{i}\""),
        })
        .collect();
    let statement_txn = session.statement_txn().await?;
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

    let set: Vec<usize> = assigned.iter().map(|(c, _)| *c).collect();
    let alias = table_alias(&def, &update.table);
    let returning = update.returning.as_deref();
    let changed = Changed {
        def: &def,
        alias: &alias,
        returning,
    };
    changed
        .update(session, statement_txn, &set, assignments)
        .await
}

/// UPDATE run by the native executor (`native::write`): its rows found and its SET list
/// computed without DataFusion, then written as `update` writes. None leaves the statement to
/// `update` (with its parameters bound), before anything is written.
pub(crate) async fn update_native(
    session: &Session,
    update: &Update,
    write: &NativeWrite,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Output>> {
    // Compiled against a definition the table no longer has (another process changed it,
    // or a retry after SchemaChanged): the statement takes the way that reads the current one.
    if !write.is_current(&session.schema_view()) || !write.typed(params) {
        return Ok(None);
    }
    let def = write.table().clone();
    let statement_txn = session.statement_txn().await?;
    let Some(rows) = found_natively(session, write, &statement_txn, params, hints).await? else {
        return Ok(None);
    };
    // Every value is computed before any is converted, as the DataFusion way computes them
    // all in its query first: the first error is the same either way.
    let Some(values) = write.assigned(&rows, params) else {
        return Ok(None);
    };
    let mut assignments = Vec::with_capacity(rows.len());
    for (row, values) in rows.iter().zip(values) {
        let values = values
            .into_iter()
            .map(|(column, value)| Ok((column, assign(&def, &def.columns[column], value)?)))
            .collect::<Result<Vec<_>>>()?;
        assignments.push((def.row_key_of(row), values));
    }
    let set = write.assigned_columns();
    let alias = table_alias(&def, &update.table);
    let changed = Changed {
        def: &def,
        alias: &alias,
        returning: update.returning.as_deref(),
    };
    changed
        .update(session, statement_txn, &set, assignments)
        .await
        .map(Some)
}

/// A row's key, and the values (already of their columns' types) an UPDATE assigns it.
type KeyedAssignment = (Vec<u8>, Vec<(usize, Datum)>);

/// The table an UPDATE or DELETE changes, the name it goes by in the statement, and its
/// RETURNING list.
struct Changed<'a> {
    def: &'a TableDef,
    alias: &'a str,
    returning: Option<&'a [SelectItem]>,
}

impl Changed<'_> {
    /// Rewrites each row found (by key) with its assigned values, in `statement_txn`, firing
    /// the table's UPDATE triggers around the writes; answers the count or RETURNING rows.
    async fn update(
        &self,
        session: &Session,
        statement_txn: StatementTxn,
        set: &[usize],
        assignments: Vec<KeyedAssignment>,
    ) -> Result<Output> {
        let def = self.def;
        let mut writer = RowWriter::begin(&session.db, def, Some(&statement_txn.txn)).await?;
        // The old rows are read again through the transaction: the stored rows with
        // everything the statement wrote so far.
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
        fill_generated_in(def, changes.iter_mut().map(|(_, new_row)| new_row))?;
        let set: Vec<String> = set.iter().map(|c| def.columns[*c].name.clone()).collect();
        let txn = &statement_txn.txn;
        fire_updates(session, txn, def, TriggerTiming::Before, &set, &changes).await?;
        let old_keys: HashSet<Vec<u8>> =
            changes.iter().map(|(old, _)| def.row_key_of(old)).collect();
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
                    key: key_text(def, new_row),
                });
            }
            writer.stage(Some(old_row), Some(new_row));
        }
        writer.commit().await?;
        fire_updates(session, txn, def, TriggerTiming::After, &set, &changes).await?;
        statement_txn.finish(&session.db).await?;
        let written: Vec<Vec<Datum>> = changes.into_iter().map(|(_, new_row)| new_row).collect();
        written_output(def, self.alias, self.returning, &written).await
    }

    /// Removes each of `rows` (found through `statement_txn`, every column), firing the
    /// table's DELETE triggers around the removal; answers the count or RETURNING rows.
    async fn delete(
        &self,
        session: &Session,
        statement_txn: StatementTxn,
        rows: &[Vec<Datum>],
    ) -> Result<Output> {
        let def = self.def;
        let mut writer = RowWriter::begin(&session.db, def, Some(&statement_txn.txn)).await?;
        let mut removed = Vec::with_capacity(rows.len());
        for row in rows {
            let Some(stored) = writer.stored_row(&def.row_key_of(row)).await? else {
                return Err(Error::WriteConflict);
            };
            removed.push(stored);
        }
        let txn = &statement_txn.txn;
        fire_deletes(session, txn, def, TriggerTiming::Before, &removed).await?;
        for stored in &removed {
            writer.stage(Some(stored), None);
        }
        writer.commit().await?;
        fire_deletes(session, txn, def, TriggerTiming::After, &removed).await?;
        statement_txn.finish(&session.db).await?;
        written_output(def, self.alias, self.returning, &removed).await
    }
}

pub(crate) async fn delete(session: &Session, delete: &Delete) -> Result<Output> {
    let table = delete_target(delete)?;
    let def = target_table(session, table)?;
    let statement_txn = session.statement_txn().await?;
    let rows = select_rows(
        session,
        &statement_txn,
        &def,
        table,
        &[],
        delete.selection.as_ref(),
    )
    .await?;
    let alias = table_alias(&def, table);
    let changed = Changed {
        def: &def,
        alias: &alias,
        returning: delete.returning.as_deref(),
    };
    changed.delete(session, statement_txn, &rows).await
}

/// DELETE run by the native executor (`native::write`): its rows found without DataFusion,
/// then removed as `delete` removes them. None leaves the statement to `delete` (with its
/// parameters bound).
pub(crate) async fn delete_native(
    session: &Session,
    delete: &Delete,
    write: &NativeWrite,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Output>> {
    let table = delete_target(delete)?;
    if !write.is_current(&session.schema_view()) {
        return Ok(None);
    }
    let def = write.table().clone();
    let statement_txn = session.statement_txn().await?;
    let Some(rows) = found_natively(session, write, &statement_txn, params, hints).await? else {
        return Ok(None);
    };
    let alias = table_alias(&def, table);
    let changed = Changed {
        def: &def,
        alias: &alias,
        returning: delete.returning.as_deref(),
    };
    changed
        .delete(session, statement_txn, &rows)
        .await
        .map(Some)
}

/// Times a READ COMMITTED statement finds its rows again after a row it locked turned out
/// changed. Each time, the rows it found before stay locked, so only rows it had not found yet
/// can change under it: past this, something rewrites the table faster than the statement
/// can lock it, and the statement gives up with a serialization failure.
const FIND_ATTEMPTS: usize = 64;

/// The rows an UPDATE or DELETE finds, locked before they are written (see
/// `SessionTxn::lock_rows_for_write`).
struct Finding {
    attempts: usize,
    /// How long to wait for a row another transaction holds (the session's `lock_timeout`).
    wait: LockWait,
    /// What else ends a wait: a cancel request, the statement's `statement_timeout`.
    stop: StatementStop,
}

impl Finding {
    fn new(session: &Session) -> Finding {
        Finding {
            attempts: 0,
            wait: LockWait::Wait(session.lock_timeout()),
            stop: StatementStop::starting_now(&session.interrupt, session.statement_timeout()),
        }
    }

    /// Locks the rows found (every column of each); false when one of them changed since the
    /// statement's snapshot and the statement must find its rows again on the fresh one.
    async fn locked(
        &mut self,
        statement_txn: &StatementTxn,
        def: &TableDef,
        rows: &[Vec<Datum>],
    ) -> Result<bool> {
        let keys: Vec<Vec<u8>> = rows.iter().map(|row| def.row_key_of(row)).collect();
        match statement_txn
            .txn
            .lock_rows_for_write(def, &keys, self.wait, &self.stop)
            .await?
        {
            RowsLocked::AsFound => Ok(true),
            RowsLocked::FindAgain => {
                self.attempts += 1;
                if self.attempts >= FIND_ATTEMPTS {
                    return Err(Error::WriteConflict);
                }
                Ok(false)
            }
        }
    }
}

/// The forms of UPDATE rowdex runs: one table, no FROM.
fn check_update_form(update: &Update) -> Result<()> {
    if update.from.is_some() || !update.table.joins.is_empty() {
        return Err(Error::Unsupported {
            what: "UPDATE with FROM or joins".to_string(),
        });
    }
    Ok(())
}

/// The one table a DELETE removes rows from (no USING, joins or LIMIT).
fn delete_target(delete: &Delete) -> Result<&TableWithJoins> {
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
    Ok(table)
}

/// `EXPLAIN UPDATE|DELETE`: the plan of the query that finds the rows the statement changes
/// (each found row is then rewritten or removed with its index entries, by key).
pub(crate) async fn explain_finding(
    session: &Session,
    explained: &Statement,
    options: ExplainOptions,
    hints: &QueryHints,
) -> Result<Output> {
    let (table, selection) = match explained {
        Statement::Update(update) => {
            check_update_form(update)?;
            (&update.table, update.selection.as_ref())
        }
        Statement::Delete(delete) => (delete_target(delete)?, delete.selection.as_ref()),
        other => {
            return Err(Error::Unsupported {
                what: format!(
                    "EXPLAIN of {} (rowdex explains SELECT, UPDATE and DELETE)",
                    statement_kind(other)
                ),
            });
        }
    };
    let def = target_table(session, table)?;
    // Which way the statement runs: found and computed natively, or through DataFusion.
    let native = session.executor() == Executor::Auto
        && NativeWrite::compile(&session.schema_view(), explained)
            .is_some_and(|write| write.typed(&[]) && write.binds(&[]));
    let write = match explained {
        Statement::Update(_) => format!("UPDATE {}", def.name),
        _ => format!("DELETE FROM {}", def.name),
    };
    let path = if native { "native" } else { "DataFusion" };
    let mut lines = vec![format!("{write} ({path})")];
    if let Some(query) = finding_query(&def, table, &[], selection, false)?
        && let Output::Rows { batches, .. } = run_explain(session, &query, options, hints).await?
    {
        for batch in &batches {
            lines.extend(column_texts(batch.column(0).as_ref()).into_iter().flatten());
        }
    }
    Ok(Output::text_rows("plan", lines))
}

fn target_table(session: &Session, table: &TableWithJoins) -> Result<Arc<TableDef>> {
    let ast::TableFactor::Table { name, .. } = &table.relation else {
        return Err(Error::Unsupported {
            what: format!("writing to {}", table.relation),
        });
    };
    let name = object_name(name)?;
    session
        .schema_view()
        .table(&name)
        .ok_or(Error::TableNotFound { table: name })
}

/// The rows a native UPDATE or DELETE changes, found by `write` through `statement_txn` and
/// locked (found again while one turns out changed); None leaves the statement to DataFusion.
async fn found_natively(
    session: &Session,
    write: &NativeWrite,
    statement_txn: &StatementTxn,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Vec<Vec<Datum>>>> {
    let mut finding = Finding::new(session);
    loop {
        let Some(rows) = write
            .rows(&session.db, &statement_txn.txn, params, hints)
            .await?
        else {
            return Ok(None);
        };
        if finding.locked(statement_txn, write.table(), &rows).await? {
            return Ok(Some(rows));
        }
    }
}

/// Every column (hidden ones too) of the rows an UPDATE or DELETE targets, followed by the
/// `extra` expressions evaluated on each, found through `txn` and locked (found again while
/// one turns out changed).
async fn select_rows(
    session: &Session,
    txn: &StatementTxn,
    def: &TableDef,
    table: &TableWithJoins,
    extra: &[String],
    selection: Option<&ast::Expr>,
) -> Result<Vec<Vec<Datum>>> {
    let mut finding = Finding::new(session);
    loop {
        let rows = select_rows_once(session, txn, def, table, extra, selection).await?;
        if finding.locked(txn, def, &rows).await? {
            return Ok(rows);
        }
    }
}

/// One finding of [`select_rows`]: its rows as the transaction's snapshot has them.
async fn select_rows_once(
    session: &Session,
    txn: &StatementTxn,
    def: &TableDef,
    table: &TableWithJoins,
    extra: &[String],
    selection: Option<&ast::Expr>,
) -> Result<Vec<Vec<Datum>>> {
    let Some(statement) = finding_query(def, table, extra, selection, true)? else {
        return Ok(Vec::new());
    };
    // A context that exposes hidden columns is built per statement; a table without any reads
    // through the session's own context (about a millisecond less per UPDATE or DELETE).
    let expose_hidden = def
        .columns
        .iter()
        .any(|c| c.hidden)
        .then(|| def.name.clone());
    let mut rows = query_rows(session, statement, expose_hidden, Some(txn.txn.clone())).await?;
    // A DECIMAL comes back from Arrow as a float and a UUID as its text: give them their
    // stored form, which the row's key is encoded from.
    for (position, column) in def.columns.iter().enumerate() {
        if matches!(column.data_type, DataType::Decimal { .. } | DataType::Uuid) {
            for row in &mut rows {
                let value = std::mem::replace(&mut row[position], Datum::Null);
                row[position] = assign(def, column, value)?;
            }
        }
    }
    Ok(rows)
}

/// `SELECT every column, extra... FROM table WHERE selection`: the query that finds the rows
/// an UPDATE or DELETE changes; hidden columns (a row id) only `with_hidden`, for a context
/// that exposes them.
fn finding_query(
    def: &TableDef,
    table: &TableWithJoins,
    extra: &[String],
    selection: Option<&ast::Expr>,
    with_hidden: bool,
) -> Result<Option<Statement>> {
    let mut items: Vec<String> = def
        .columns
        .iter()
        .filter(|c| with_hidden || !c.hidden)
        .map(|c| format!("\"{}\"", c.name.replace('"', "\"\"")))
        .collect();
    items.extend(extra.iter().cloned());
    let mut sql = format!("SELECT {} FROM {}", items.join(", "), table.relation);
    if let Some(selection) = selection {
        sql.push_str(&format!(" WHERE {selection}"));
    }
    let mut statements = split_statements(&sql)?;
    Ok(match statements.pop() {
        Some(ParsedStatement::Sql { statement, .. }) => Some(*statement),
        _ => None,
    })
}
