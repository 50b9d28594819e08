//! Running statements: `impl Session { execute, query, query_stream, split, run }` and the
//! dispatcher, the only file that knows every statement kind (the compiled-query cache's part
//! of `execute` included).
//!
//! A statement's life: [`Session::execute`] first tries the text against the compiled-query
//! cache (literals lifted out, a cached native query bound and run); otherwise it splits the
//! text into statements and runs each ([`Session::run`]): transaction control first, then,
//! inside an open transaction, under a statement savepoint, and outside one with retries for a
//! write that lost a race; then dispatched by kind to its file under `execute/`.

pub(crate) mod add_primary_key;
pub(crate) mod alter;
pub(crate) mod alter_generated;
pub(crate) mod alter_type;
pub(crate) mod column_types;
pub(crate) mod commands;
pub(crate) mod comments;
pub(crate) mod copy;
pub(crate) mod create_as;
pub(crate) mod create_like;
pub(crate) mod ddl;
pub(crate) mod dml;
pub(crate) mod durability_setting;
pub(crate) mod expression_index;
pub(crate) mod foreign_key_alter;
pub(crate) mod foreign_keys;
pub(crate) mod indexes;
pub(crate) mod insert_values;
pub(crate) mod keydesign;
pub(crate) mod kinds;
pub(crate) mod locking_select;
pub(crate) mod on_conflict;
pub(crate) mod partial_index;
pub(crate) mod purge;
pub(crate) mod query;
pub(crate) mod returning;
pub(crate) mod roles;
pub(crate) mod schema_txn;
pub(crate) mod sequences;
pub(crate) mod show;
pub(crate) mod statistics;
pub(crate) mod time_zone_setting;
pub(crate) mod transaction;
pub(crate) mod triggers;
pub(crate) mod truncate;
pub(crate) mod update_delete;
pub(crate) mod views;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{Delete, ObjectType, SetExpr, Statement, Update};
use rowdex_codec::Datum;
use rowdex_store::locks::LockWait;

use crate::db::sequences::LAST_VALUES;
use crate::db::statement_stop::StatementStop;
use crate::db::txn::with_query_view;
use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::execute::commands::run_command;
use crate::execute::kinds::{InTransaction, in_transaction, is_query, statement_name, writes};
use crate::native;
use crate::native::cache::{CachedForm, CachedQuery};
use crate::native::select::NativeSelect;
use crate::native::write::NativeWrite;
use crate::output::Output;
use crate::session::{Executor, Session};
use crate::sql::command::Command;
use crate::sql::literals::{Lifted, bind_literals, value_placeholders};
use crate::sql::locking::RowLocking;
use crate::sql::names::{object_name, statement_kind};
use crate::sql::parse::{
    ParsedStatement, ScriptStatement, parse_with_parameters, split_statements,
};
use crate::stack_depth::{DATAFUSION_STACK_BYTES, OnAmpleStack};
use crate::time_zone::in_time_zone;
use crate::write::WRITE_ATTEMPTS;

impl Session {
    /// Runs every statement of `sql` in order and returns their outputs. Stops at the first
    /// error; statements before it stay applied, the failing one changes nothing.
    pub async fn execute(&self, sql: &str) -> Result<Vec<Output>> {
        // Walking, copying and planning a statement recurse through it: see `stack_depth`.
        let run = self.reported(self.execute_here(sql));
        OnAmpleStack::new(DATAFUSION_STACK_BYTES, run).await
    }

    /// [`Session::execute`] on the stack it is polled on.
    async fn execute_here(&self, sql: &str) -> Result<Vec<Output>> {
        if let Some(output) = self.run_cached(sql).await? {
            return Ok(vec![output]);
        }
        let mut outputs = Vec::new();
        for statement in split_statements(sql)? {
            outputs.push(self.run(&statement).await?);
        }
        Ok(outputs)
    }

    /// Runs one statement of a script (see [`crate::script_statements`]): through the
    /// compiled-query cache when it is a native query, as [`Session::execute`] runs a single
    /// statement, and otherwise parsed and run by [`Session::run`].
    pub async fn run_script_statement(&self, statement: &ScriptStatement) -> Result<Output> {
        let run = self.reported(self.run_script_statement_here(statement));
        OnAmpleStack::new(DATAFUSION_STACK_BYTES, run).await
    }

    /// [`Session::run_script_statement`] on the stack it is polled on.
    async fn run_script_statement_here(&self, statement: &ScriptStatement) -> Result<Output> {
        if self.executor == Executor::Auto
            && self.query_cache_enabled
            && let Some(lifted) = Lifted::from_script_statement(statement)
            && let Some(output) = self.run_lifted(lifted).await?
        {
            return Ok(output);
        }
        self.run(&statement.parse()?).await
    }

    /// Runs `sql` through the compiled-query cache when it is one native query: compiled on
    /// the first run of its text (literals aside), bound and run after that. None leaves the
    /// text to the normal path, as it does when the session's cache is off.
    async fn run_cached(&self, sql: &str) -> Result<Option<Output>> {
        if self.executor != Executor::Auto || !self.query_cache_enabled {
            return Ok(None);
        }
        let Some(lifted) = Lifted::from_sql(sql) else {
            return Ok(None);
        };
        self.run_lifted(lifted).await
    }

    /// The cache's part of [`Session::run_cached`], for a statement with its literals lifted.
    async fn run_lifted(&self, lifted: Lifted) -> Result<Option<Output>> {
        Box::pin(in_time_zone(
            self.time_zone(),
            self.run_lifted_in_zone(lifted),
        ))
        .await
    }

    /// [`Session::run_lifted`] inside the session's time zone.
    async fn run_lifted_in_zone(&self, lifted: Lifted) -> Result<Option<Output>> {
        // Another process may have changed the catalog: a cached query re-plans if so, and
        // reads on from the snapshot that checked it.
        let view = self.db.catalog.refresh().await?;
        let entry = match self.query_cache.get(&lifted.key) {
            Some(entry) if entry.is_current(&self.schema_view()) => entry,
            _ => {
                let Some(entry) = self.compile_lifted(&lifted) else {
                    return Ok(None);
                };
                let entry = Arc::new(entry);
                self.query_cache.insert(lifted.key, entry.clone());
                entry
            }
        };
        let query = match &entry.form {
            CachedForm::Query(query) => query,
            CachedForm::Insert => {
                // Integers and strings go back in as the literals they were; any other literal
                // (a float, whose text the value may not give back) takes the normal path.
                if !lifted
                    .literals
                    .iter()
                    .all(|l| matches!(l, Datum::Int(_) | Datum::Text(_)))
                {
                    return Ok(None);
                }
                let bound = bind_literals(&entry.parsed, &lifted.literals)?;
                return self.run(&bound).await.map(Some);
            }
            CachedForm::Write(write) => {
                let compiled = Compiled {
                    write,
                    params: &lifted.literals,
                };
                return self
                    .run_compiled(&entry.parsed, Some(compiled))
                    .await
                    .map(Some);
            }
        };
        self.set_warnings(Vec::new());
        let txn = self.open_txn();
        if let Some(txn) = &txn {
            txn.query_start().await?;
        }
        let output = with_query_view(
            view,
            native::select::run(
                &self.db,
                txn.as_ref(),
                query,
                &lifted.literals,
                &entry.hints,
            ),
        )
        .await?;
        let ParsedStatement::Sql { statement, .. } = &entry.parsed else {
            return Ok(output);
        };
        output
            .map(|output| self.name_output(statement, output))
            .transpose()
    }

    /// The native form of a statement with its literals lifted, if it has one: a query, or an
    /// UPDATE or DELETE without RETURNING (whose column names would come from the lifted
    /// text); an INSERT ... VALUES is kept parsed.
    fn compile_lifted(&self, lifted: &Lifted) -> Option<CachedQuery> {
        let (parsed, parameters) = parse_with_parameters(&lifted.key).ok()?;
        let ParsedStatement::Sql {
            statement,
            hints,
            upsert: false,
            ..
        } = &parsed
        else {
            return None;
        };
        if parameters != lifted.literals.len() {
            return None;
        }
        let schema = self.schema_view();
        let form = match statement.as_ref() {
            Statement::Query(query) => CachedForm::Query(NativeSelect::compile(&schema, query)?),
            Statement::Update(Update {
                returning: None, ..
            })
            | Statement::Delete(Delete {
                returning: None, ..
            }) => CachedForm::Write(NativeWrite::compile(&schema, statement)?),
            // Every literal lifted must come back as a value where binding puts it (not in
            // `TIMESTAMP '...'`, which keeps its string).
            Statement::Insert(insert)
                if insert
                    .source
                    .as_ref()
                    .is_some_and(|source| matches!(source.body.as_ref(), SetExpr::Values(_)))
                    && value_placeholders(statement) == lifted.literals.len() =>
            {
                return Some(CachedQuery {
                    form: CachedForm::Insert,
                    hints: hints.clone(),
                    parsed: parsed.clone(),
                });
            }
            _ => return None,
        };
        self.db.planning.compiled_natively();
        Some(CachedQuery {
            form,
            hints: hints.clone(),
            parsed: parsed.clone(),
        })
    }

    /// Runs a query and returns its batches (the last statement's, for a script).
    pub async fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let outputs = self.execute(sql).await?;
        Ok(match outputs.into_iter().last() {
            Some(Output::Rows { batches, .. }) => batches,
            _ => Vec::new(),
        })
    }

    /// Runs one query and streams its result batches as they are produced, without collecting
    /// them first.
    pub async fn query_stream(&self, sql: &str) -> Result<SendableRecordBatchStream> {
        let mut statements = split_statements(sql)?;
        let statement = match (statements.pop(), statements.is_empty()) {
            (
                Some(ParsedStatement::Sql {
                    statement, hints, ..
                }),
                true,
            ) if matches!(statement.as_ref(), Statement::Query(_)) => {
                let ctx = self.statement_context(&hints);
                let plan = plan_statement(&ctx, *statement).await?;
                return Ok(ctx
                    .execute_logical_plan(plan)
                    .await?
                    .execute_stream()
                    .await?);
            }
            (other, _) => other,
        };
        Err(Error::Unsupported {
            what: format!(
                "streaming anything but one query ({})",
                statement.map_or_else(|| "nothing".to_string(), |s| s.to_string())
            ),
        })
    }

    /// Splits a script into statements without running them (for clients that report each).
    pub fn split(&self, sql: &str) -> Result<Vec<ParsedStatement>> {
        split_statements(sql)
    }

    /// Runs one statement: transaction control first; inside an open transaction, under a
    /// savepoint that undoes it alone if it fails; outside one, again (up to `WRITE_ATTEMPTS`
    /// times) when a write loses a race with a concurrent writer.
    pub async fn run(&self, parsed: &ParsedStatement) -> Result<Output> {
        self.run_compiled(parsed, None).await
    }

    /// [`Session::run`] of a statement with parameters (`parsed`) whose native form is
    /// `compiled`, with the values to run it with: it runs natively when it can, else with
    /// its parameters written in as literals.
    pub(crate) async fn run_compiled(
        &self,
        parsed: &ParsedStatement,
        compiled: Option<Compiled<'_>>,
    ) -> Result<Output> {
        // The values it writes read TIMESTAMPTZ text in the session's zone.
        let run = self.run_compiled_in_zone(parsed, compiled);
        Box::pin(in_time_zone(self.time_zone(), run)).await
    }

    /// [`Session::run_compiled`] inside the session's time zone.
    async fn run_compiled_in_zone(
        &self,
        parsed: &ParsedStatement,
        compiled: Option<Compiled<'_>>,
    ) -> Result<Output> {
        if !matches!(parsed, ParsedStatement::Command(Command::ShowWarnings)) {
            self.set_warnings(Vec::new());
        }
        if let ParsedStatement::Sql { statement, .. } = parsed
            && let Some(output) = transaction::transaction_control(self, statement).await?
        {
            statistics::refresh_outgrown(self);
            return Ok(output);
        }
        if writes(parsed) && self.transaction_characteristics().read_only {
            return Err(Error::ReadOnlyTransaction {
                statement: statement_name(parsed),
            });
        }
        if let Some(txn) = self.open_txn() {
            let schema_change = in_transaction(parsed)? == InTransaction::OnItsOwn;
            if schema_change && txn.has_written() {
                return Err(Error::SchemaChangeAfterWrite {
                    statement: statement_name(parsed),
                });
            }
            // Inside a transaction a statement runs once: its reads come from the transaction's
            // snapshot, so running it again would meet the same state. A failure undoes the
            // statement alone.
            let savepoint = txn.statement_start().await?;
            txn.set_statement_waits(
                LockWait::Wait(self.lock_timeout()),
                StatementStop::starting_now(&self.interrupt, self.statement_timeout()),
            );
            let result = run_once(self, parsed, compiled).await;
            txn.statement_end(savepoint, result.is_ok()).await?;
            if schema_change && result.is_ok() {
                // The block reads on from after the change (the statistics it gathered).
                txn.renew(self.db.store.as_ref()).await?;
                self.add_notice(format!(
                    "{} ran inside a transaction block and is committed already: ROLLBACK does \
                     not undo it (rowdex commits triggers and ANALYZE apart from the block)",
                    statement_name(parsed)
                ));
            }
            return result;
        }
        // Writes, and schema changes (which change nothing when they lose a race for the
        // catalog: concurrent CREATE TABLE in two sessions, say), run again. CREATE INDEX
        // retries its own catalog steps (`indexes::retry_catalog`): its backfill is not redone.
        let is_write = matches!(
            parsed,
            ParsedStatement::Sql { statement, .. } if matches!(
                statement.as_ref(),
                Statement::Insert(_)
                    | Statement::Update(_)
                    | Statement::Delete(_)
                    | Statement::AlterTable(_)
                    | Statement::Truncate(_)
                    | Statement::CreateTable(_)
                    | Statement::CreateView(_)
                    | Statement::CreateSequence { .. }
                    | Statement::Drop { .. }
            )
        );
        let mut attempt = 1;
        loop {
            match run_once(self, parsed, compiled).await {
                Err(error) if is_write && error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                    attempt += 1;
                    self.report.retried(error.is_conflict());
                    tokio::task::yield_now().await;
                }
                result => {
                    if result.is_ok() && !is_query(parsed) {
                        statistics::refresh_outgrown(self);
                    }
                    if let Err(error) = &result
                        && error.is_outcome_unknown()
                    {
                        // A catalog change may have been applied behind the cache's back.
                        let _ = self.db.catalog.reload().await;
                    }
                    return result;
                }
            }
        }
    }
}

/// Runs one statement once, recording the sequence values it takes as the session's
/// (`currval`).
async fn run_once(
    session: &Session,
    parsed: &ParsedStatement,
    compiled: Option<Compiled<'_>>,
) -> Result<Output> {
    // Another process may have changed the catalog (a store shared by several processes); a
    // query reads on from the snapshot that checked it.
    let view = session.db.catalog.refresh().await?;
    let view = view.filter(|_| is_query(parsed));
    let last_values = session.sequence_values.clone();
    // Boxed, and polled with room below it: a statement's future is large, its planning
    // recurses, and callers' stacks are not large.
    LAST_VALUES
        .scope(
            last_values,
            OnAmpleStack::new(
                DATAFUSION_STACK_BYTES,
                with_query_view(view, run_statement(session, parsed, compiled)),
            ),
        )
        .await
}

/// A prepared statement's native form and the values of its parameters, for one run.
#[derive(Clone, Copy)]
pub(crate) struct Compiled<'a> {
    pub(crate) write: &'a NativeWrite,
    pub(crate) params: &'a [Datum],
}

async fn run_statement(
    session: &Session,
    parsed: &ParsedStatement,
    compiled: Option<Compiled<'_>>,
) -> Result<Output> {
    let (statement, upsert, hints, families) = match parsed {
        ParsedStatement::Sql {
            statement,
            upsert,
            hints,
            families,
        } => (statement.as_ref(), *upsert, hints, families),
        ParsedStatement::Command(command) => return run_command(session, command).await,
    };
    if let Some(Compiled { write, params }) = compiled {
        let native = match statement {
            Statement::Update(update) => {
                update_delete::update_native(session, update, write, params, hints).await?
            }
            Statement::Delete(delete) => {
                update_delete::delete_native(session, delete, write, params, hints).await?
            }
            _ => None,
        };
        if let Some(output) = native {
            return returning::name_returned(session, statement, output);
        }
        // Outside what the native executor is sure of: the statement as typed with its
        // values, through DataFusion.
        let bound = bind_literals(parsed, params)?;
        return Box::pin(run_statement(session, &bound, None)).await;
    }
    // `nextval('s')` and `currval('s')` become their values before the statement runs.
    let bound;
    let statement = if sequences::calls_sequences(statement) {
        let mut with_values = statement.clone();
        sequences::bind_sequence_calls(session, &mut with_values).await?;
        bound = with_values;
        &bound
    } else {
        statement
    };
    // The writes, schema changes and COPY are boxed: built in this frame, a debug build keeps
    // a slot for each of their futures in the frame every statement is polled on, and a
    // statement nested in another's poll (a trigger's, a store hook's in a test) doubles it.
    match statement {
        Statement::Query(query) => match RowLocking::of(query)? {
            Some(locking) => {
                Box::pin(locking_select::run(
                    session, statement, query, &locking, hints,
                ))
                .await
            }
            None => query::run_select(session, statement, hints).await,
        },
        Statement::Explain {
            statement: explained,
            verbose,
            analyze,
            options,
            ..
        } => {
            let options = query::explain_options(*analyze, *verbose, options.as_deref())?;
            if options.analyze && !matches!(explained.as_ref(), Statement::Query(_)) {
                // ANALYZE runs what it explains: only a query, whose running changes nothing.
                return Err(Error::Unsupported {
                    what: "EXPLAIN ANALYZE of a statement other than a SELECT".into(),
                });
            }
            match explained.as_ref() {
                Statement::Query(_) => query::run_explain(session, explained, options, hints).await,
                other => update_delete::explain_finding(session, other, options, hints).await,
            }
        }
        Statement::CreateTable(create) if create.query.is_some() => {
            Box::pin(create_as::create_table_as(session, create)).await
        }
        Statement::CreateTable(create) if create.like.is_some() => {
            Box::pin(create_like::create_table_like(session, create)).await
        }
        Statement::CreateTable(create) => {
            Box::pin(ddl::create_table(session, create, families)).await
        }
        Statement::AlterTable(alter) => Box::pin(alter::alter_table(session, alter)).await,
        Statement::CreateSequence {
            if_not_exists,
            name,
            sequence_options,
            ..
        } => sequences::create_sequence(session, name, *if_not_exists, sequence_options).await,
        Statement::Drop {
            object_type: ObjectType::Sequence,
            if_exists,
            names,
            ..
        } => {
            for name in names {
                sequences::drop_sequence(session, &object_name(name)?, *if_exists).await?;
            }
            Ok(Output::Done)
        }
        Statement::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => {
            Box::pin(ddl::drop(
                session,
                *object_type,
                *if_exists,
                names,
                *cascade,
            ))
            .await
        }
        Statement::Insert(insert) => {
            let output = Box::pin(dml::insert(session, insert, upsert)).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::Update(update) => {
            let output = Box::pin(update_delete::update(session, update)).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::Delete(delete) => {
            let output = Box::pin(update_delete::delete(session, delete)).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::CreateIndex(create) => Box::pin(indexes::create_index(session, create)).await,
        Statement::Copy { .. } => Box::pin(copy::copy(session, statement)).await,
        Statement::CreateView(create) => views::create_view(session, create).await,
        Statement::Comment {
            object_type,
            object_name,
            if_exists,
            ..
        } => comments::comment(session, object_type, object_name, *if_exists),
        Statement::CreateTrigger(create) => {
            Box::pin(triggers::create_trigger(session, create)).await
        }
        Statement::DropTrigger(drop) => triggers::drop_trigger(session, drop).await,
        Statement::Truncate(truncate) => truncate::boxed(session, truncate).await,
        Statement::ShowTables { .. } => show::show_tables(session),
        Statement::Set(set) => durability_setting::set(session, set),
        Statement::ShowVariable { variable } => durability_setting::show(session, variable),
        Statement::ExplainTable { table_name, .. } => {
            show::describe(session, &object_name(table_name)?)
        }
        other => Err(Error::Unsupported {
            what: format!("the statement {}", statement_kind(other)),
        }),
    }
}
