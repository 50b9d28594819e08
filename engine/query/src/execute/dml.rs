//! INSERT and UPSERT (UPDATE and DELETE are `execute::update_delete`'s).
//!
//! Every statement computes all its row mutations first, then applies them in one optimistic
//! transaction: all of them land or none does, and a concurrent change to a row the statement
//! read makes the statement fail with a retryable conflict instead of losing an update.
//!
//! Conflict handling follows the syntax users of the field know: plain INSERT rejects an
//! existing key; `UPSERT INTO` (Phoenix) inserts or overwrites the named columns of the existing
//! row; `INSERT OR REPLACE` / `REPLACE INTO` (SQLite, MySQL) replace the whole row;
//! `INSERT OR IGNORE` and `ON CONFLICT DO NOTHING` skip rows whose key exists.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType as ArrowType;
use datafusion::sql::sqlparser::ast::{
    ConflictTarget, Insert, OnConflictAction, OnInsert, SelectItem, SqliteOnConflict, Statement,
    TableObject,
};
use rowdex_catalog::{DataType, TableDef, TriggerEvent, TriggerTiming};
use rowdex_codec::Datum;

use crate::db::txn::{SessionTxn, StatementTxn};
use crate::df::context::{context_with, new_context, plan_statement};
use crate::df::rules::OptimizerRules;
use crate::error::{Error, Result};
use crate::execute::insert_values::{
    exact_decimal_literals, refuse_generated_values, values_with_defaults,
};
use crate::execute::on_conflict::{Action, insert_or_update};
use crate::execute::returning::returning;
use crate::execute::sequences::{bind_sequence_calls, calls_sequences};
use crate::execute::triggers::fire_inserts;
use crate::native::constant_rows::constant_rows;
use crate::output::Output;
use crate::session::{Executor, Session};
use crate::sql::hints::QueryHints;
use crate::sql::literals::literal_rows;
use crate::sql::names::{ident_name, object_name, target_columns};
use crate::sql::rewrite::unique_output_names;
use crate::time_zone::statement_time_zone;
use crate::values::{datum_from_array, full_row};
use crate::write::constraints::default_row;
use crate::write::rows::{OnExisting, fill_row_defaults, write_rows};

pub(crate) async fn insert(session: &Session, insert: &Insert, upsert: bool) -> Result<Output> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(Error::Unsupported {
            what: "INSERT INTO a table function".to_string(),
        });
    };
    let def = session
        .table_def(&object_name(name)?)
        .map_err(|_| Error::TableNotFound {
            table: name.to_string().to_lowercase(),
        })?;
    let mode = on_existing(insert, upsert)?;
    let defaults = default_row(&def)?;
    // `INSERT INTO t DEFAULT VALUES`: one row of defaults.
    let alias = insert.table_alias.as_ref().map(|a| ident_name(&a.alias));
    let alias = alias.as_deref().unwrap_or(&def.name);
    let Some(source) = &insert.source else {
        let proposed = Proposed {
            def: &def,
            alias,
            targets: &[],
            rows: vec![full_row(&def, &defaults, &[], [])?],
            mode,
            on_conflict: on_conflict(insert),
        };
        let written = proposed.write_in_statement(session, None).await?;
        return written_output(&def, alias, insert.returning.as_deref(), &written).await;
    };
    let targets = target_columns(&def, &insert.columns)?;
    refuse_generated_values(&def, &targets, source)?;
    let mut with_defaults = values_with_defaults(&def, &targets, source)?;
    // A DEFAULT that draws from a sequence became `nextval(...)`: give each its value.
    if let Some(query) = with_defaults.take() {
        let mut statement = Statement::Query(query);
        if calls_sequences(&statement) {
            bind_sequence_calls(session, &mut statement).await?;
        }
        if let Statement::Query(query) = statement {
            with_defaults = Some(query);
        }
    }
    let source = with_defaults.as_deref().unwrap_or(source);
    // Rows computed by a query are read in the transaction that writes them: a commit to what
    // the query read, between the read and the write, then conflicts (and the statement is
    // retried) instead of being overwritten by rows computed from the older state.
    let literal = literal_rows(source);
    // Constant expressions (a parameter written in, CURRENT_TIMESTAMP): rowdex computes them,
    // as DataFusion's query would (`native::constant_rows`).
    let constant = match &literal {
        None if session.executor() == Executor::Auto => constant_rows(&def, &targets, source),
        _ => None,
    };
    let (values, statement_txn) = match (literal, constant) {
        (Some(mut rows), _) | (None, Some(mut rows)) => {
            exact_decimal_literals(&def, &targets, source, &mut rows);
            (rows, None)
        }
        (None, None) => {
            let statement_txn = session.statement_txn().await?;
            let source = Statement::Query(Box::new(source.clone()));
            let txn = Some(statement_txn.txn.clone());
            // A TIMESTAMP bound for a TIMESTAMPTZ column is a time of the session's wall
            // clock, as PostgreSQL casts it.
            let instants: Vec<bool> = targets
                .iter()
                .map(|&column| def.columns[column].data_type == DataType::TimestampTz)
                .collect();
            let rows = query_rows_into(session, source, txn, &instants).await?;
            (rows, Some(statement_txn))
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
        let values = row_values.into_iter().map(Ok);
        rows.push(full_row(&def, &defaults, &targets, values)?);
    }
    let proposed = Proposed {
        def: &def,
        alias,
        targets: &targets,
        rows,
        mode,
        on_conflict: on_conflict(insert),
    };
    let written = proposed.write_in_statement(session, statement_txn).await?;
    written_output(&def, alias, insert.returning.as_deref(), &written).await
}

/// The rows an INSERT proposes, and what it does with those whose key exists.
struct Proposed<'a> {
    def: &'a TableDef,
    alias: &'a str,
    targets: &'a [usize],
    rows: Vec<Vec<Datum>>,
    mode: OnExisting,
    /// ON CONFLICT with a conflict target (and DO UPDATE, which needs one).
    on_conflict: Option<(Option<&'a ConflictTarget>, Action<'a>)>,
}

impl Proposed<'_> {
    /// Writes the rows in `statement_txn` (the transaction they were computed in), else in the
    /// session's transaction; returns them as written. A table with INSERT triggers gets a
    /// transaction for the statement, which its triggers' statements share.
    async fn write_in_statement(
        self,
        session: &Session,
        statement_txn: Option<StatementTxn>,
    ) -> Result<Vec<Vec<Datum>>> {
        let statement_txn = match statement_txn {
            None if self.def.has_triggers_on(&TriggerEvent::Insert) => {
                Some(session.statement_txn().await?)
            }
            other => other,
        };
        match statement_txn {
            Some(statement_txn) => {
                let written = self.write(session, Some(&statement_txn.txn)).await?;
                statement_txn.finish(&session.db).await?;
                Ok(written)
            }
            None => self.write(session, session.open_txn().as_ref()).await,
        }
    }

    /// Writes the rows in `txn`, firing the table's INSERT triggers around them.
    async fn write(
        mut self,
        session: &Session,
        txn: Option<&Arc<SessionTxn>>,
    ) -> Result<Vec<Vec<Datum>>> {
        let db = &session.db;
        let (def, alias, targets) = (self.def, self.alias, self.targets);
        let fires = txn.filter(|_| def.has_triggers_on(&TriggerEvent::Insert));
        if let Some(txn) = fires {
            // BEFORE triggers see the values the rows are written with.
            fill_row_defaults(db, Some(txn), def, targets, &mut self.rows).await?;
            fire_inserts(session, txn, def, TriggerTiming::Before, &self.rows).await?;
        }
        let written = match self.on_conflict {
            Some((target, action)) => {
                insert_or_update(db, txn, def, alias, targets, self.rows, target, action).await?
            }
            None => write_rows(db, txn, def, targets, self.rows, self.mode).await?,
        };
        if let Some(txn) = fires {
            fire_inserts(session, txn, def, TriggerTiming::After, &written).await?;
        }
        Ok(written)
    }
}

/// The conflict target and action of `ON CONFLICT (target) DO NOTHING | DO UPDATE`, if the
/// INSERT has one (DO NOTHING without a target skips a clash with any key).
fn on_conflict(insert: &Insert) -> Option<(Option<&ConflictTarget>, Action<'_>)> {
    let Some(OnInsert::OnConflict(conflict)) = &insert.on else {
        return None;
    };
    let target = conflict.conflict_target.as_ref();
    match &conflict.action {
        OnConflictAction::DoUpdate(update) => Some((target, Action::Update(update))),
        OnConflictAction::DoNothing => target.map(|target| (Some(target), Action::Nothing)),
    }
}

/// What a write statement answers: the count of `rows` it wrote or removed, or its RETURNING
/// list over them.
pub(crate) async fn written_output(
    def: &TableDef,
    alias: &str,
    returning_items: Option<&[SelectItem]>,
    rows: &[Vec<Datum>],
) -> Result<Output> {
    match returning_items {
        Some(items) => returning(def, alias, items, rows).await,
        None => Ok(Output::Affected {
            rows: rows.len() as u64,
        }),
    }
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
            // Written by `on_conflict::insert_or_update`; a plain insert otherwise.
            OnConflictAction::DoUpdate(_) => Ok(OnExisting::Fail),
        },
        Some(other) => Err(Error::Unsupported {
            what: format!("{other}"),
        }),
    }
}

/// Runs a query through DataFusion and returns its rows as datums.
pub(crate) async fn query_rows(
    session: &Session,
    statement: Statement,
    expose_hidden: Option<String>,
    txn: Option<Arc<SessionTxn>>,
) -> Result<Vec<Vec<Datum>>> {
    let batches = query_batches(session, statement, expose_hidden, txn).await?;
    rows_of(&batches, &[])
}

/// [`query_rows`] for columns of which those flagged in `instants` are TIMESTAMPTZ: a naive
/// timestamp there is read as a time of the statement's zone.
async fn query_rows_into(
    session: &Session,
    statement: Statement,
    txn: Option<Arc<SessionTxn>>,
    instants: &[bool],
) -> Result<Vec<Vec<Datum>>> {
    let batches = query_batches(session, statement, None, txn).await?;
    rows_of(&batches, instants)
}

/// The rows of `batches` as datums, a naive timestamp in a column flagged in `instants` made
/// the instant it is in the statement's zone (Arrow's cast of a naive time to a zone).
fn rows_of(batches: &[RecordBatch], instants: &[bool]) -> Result<Vec<Vec<Datum>>> {
    // Asked only where an instant column is there (most rows have none).
    let zone: Option<Arc<str>> = instants
        .contains(&true)
        .then(|| Arc::from(statement_time_zone().arrow_name()));
    let mut rows = Vec::new();
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .enumerate()
            .map(|(i, column)| match column.data_type() {
                ArrowType::Timestamp(unit, None) if instants.get(i).copied().unwrap_or(false) => {
                    Ok(cast(column, &ArrowType::Timestamp(*unit, zone.clone()))?)
                }
                _ => Ok(column.clone()),
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        for row in 0..batch.num_rows() {
            let values = columns
                .iter()
                .map(|column| datum_from_array(column.as_ref(), row))
                .collect::<Result<Vec<Datum>>>()?;
            rows.push(values);
        }
    }
    Ok(rows)
}

/// Runs a query through DataFusion and returns its batches.
async fn query_batches(
    session: &Session,
    mut statement: Statement,
    expose_hidden: Option<String>,
    txn: Option<Arc<SessionTxn>>,
) -> Result<Vec<RecordBatch>> {
    let base = match &expose_hidden {
        Some(_) => new_context(
            &session.db,
            session.schema_view(),
            OptimizerRules::new()?,
            expose_hidden,
        ),
        None => session.ctx.clone(),
    };
    let ctx = context_with(&base, &QueryHints::default(), txn, session.semantics);
    // Rows are taken by position, so `SELECT i, i` may name two columns alike.
    let _ = unique_output_names(&mut statement);
    let plan = plan_statement(&ctx, statement).await?;
    Ok(ctx.execute_logical_plan(plan).await?.collect().await?)
}
