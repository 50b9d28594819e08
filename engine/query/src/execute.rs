//! Running statements: `impl Session { execute, query, query_stream, split, run }` and the
//! dispatcher, the only file that knows every statement kind.
//!
//! A statement's life: [`Session::execute`] first tries the text against the compiled-query
//! cache (literals lifted out, a cached native query bound and run); otherwise it splits the
//! text into statements and runs each ([`Session::run`]): transaction control first, then,
//! inside an open transaction, under a statement savepoint, and outside one with retries for a
//! write that lost a race; then dispatched by kind to its file under `execute/`.

pub(crate) mod add_primary_key;
pub(crate) mod alter;
pub(crate) mod alter_type;
pub(crate) mod comments;
pub(crate) mod copy;
pub(crate) mod create_as;
pub(crate) mod create_like;
pub(crate) mod ddl;
pub(crate) mod dml;
pub(crate) mod indexes;
pub(crate) mod insert_values;
pub(crate) mod keydesign;
pub(crate) mod on_conflict;
pub(crate) mod purge;
pub(crate) mod query;
pub(crate) mod returning;
pub(crate) mod roles;
pub(crate) mod schema_txn;
pub(crate) mod sequences;
pub(crate) mod show;
pub(crate) mod statistics;
pub(crate) mod transaction;
pub(crate) mod triggers;
pub(crate) mod truncate;
pub(crate) mod views;

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};

use crate::db::sequences::LAST_VALUES;
use crate::db::txn::with_query_view;
use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::native;
use crate::native::cache::CachedQuery;
use crate::native::compile::NativeQuery;
use crate::output::Output;
use crate::session::{Executor, Session};
use crate::sql::command::Command;
use crate::sql::literals::Lifted;
use crate::sql::names::{object_name, statement_kind};
use crate::sql::parse::{
    ParsedStatement, ScriptStatement, parse_with_parameters, split_statements,
};
use crate::write::WRITE_ATTEMPTS;

impl Session {
    /// Runs every statement of `sql` in order and returns their outputs. Stops at the first
    /// error; statements before it stay applied, the failing one changes nothing.
    pub async fn execute(&self, sql: &str) -> Result<Vec<Output>> {
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
        // Another process may have changed the catalog: a cached query re-plans if so, and
        // reads on from the snapshot that checked it.
        let view = self.db.catalog.refresh().await?;
        let entry = match self.query_cache.get(&lifted.key) {
            Some(entry) if entry.query.is_current(&self.schema_view()) => entry,
            _ => {
                let Ok((parsed, parameters)) = parse_with_parameters(&lifted.key) else {
                    return Ok(None);
                };
                let ParsedStatement::Sql {
                    statement,
                    hints,
                    upsert: false,
                    ..
                } = parsed
                else {
                    return Ok(None);
                };
                let Statement::Query(query) = statement.as_ref() else {
                    return Ok(None);
                };
                if parameters != lifted.literals.len() {
                    return Ok(None);
                }
                let Some(compiled) = NativeQuery::compile(&self.schema_view(), query) else {
                    return Ok(None);
                };
                let entry = Arc::new(CachedQuery {
                    query: compiled,
                    hints,
                    statement: statement.as_ref().clone(),
                });
                self.query_cache.insert(lifted.key, entry.clone());
                entry
            }
        };
        self.set_warnings(Vec::new());
        let txn = self.open_txn();
        let output = with_query_view(
            view,
            native::run(
                &self.db,
                txn.as_ref(),
                &entry.query,
                &lifted.literals,
                &entry.hints,
            ),
        )
        .await?;
        output
            .map(|output| self.name_output(&entry.statement, output))
            .transpose()
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
            let result = run_once(self, parsed).await;
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
            match run_once(self, parsed).await {
                Err(error) if is_write && error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                    attempt += 1;
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

/// Whether a statement only reads (after which no statistics can have moved).
fn is_query(parsed: &ParsedStatement) -> bool {
    matches!(
        parsed,
        ParsedStatement::Sql { statement, .. } if matches!(
            statement.as_ref(),
            Statement::Query(_) | Statement::Explain { .. }
        )
    )
}

/// How a statement runs inside a transaction block.
#[derive(Debug, PartialEq, Eq)]
enum InTransaction {
    /// As part of the block: read through its snapshot, written into it.
    InBlock,
    /// On its own, committed at once apart from the block (CREATE and DROP TRIGGER, ANALYZE),
    /// allowed only before the block's first write or schema change.
    OnItsOwn,
}

/// How `parsed` runs inside a transaction block, or the error for what cannot run there at
/// all: index checks and rebuilds, PURGE, VACUUM, CHECKPOINT and role changes. (COPY FROM in a
/// block writes into the block's transaction.)
fn in_transaction(parsed: &ParsedStatement) -> Result<InTransaction> {
    let refused = match parsed {
        ParsedStatement::Command(
            Command::ShowIndexes { .. }
            | Command::ExplainKey { .. }
            | Command::ShowWarnings
            | Command::ShowStatistics { .. },
        ) => return Ok(InTransaction::InBlock),
        ParsedStatement::Command(Command::Analyze { .. }) => return Ok(InTransaction::OnItsOwn),
        ParsedStatement::Command(command) => command.to_string(),
        ParsedStatement::Sql { statement, .. } => match statement.as_ref() {
            // Schema changes of tables, indexes, views and sequences are written in the
            // block's transaction (`execute::schema_txn`).
            Statement::Query(_)
            | Statement::Explain { .. }
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::ShowTables { .. }
            | Statement::ExplainTable { .. }
            | Statement::Truncate(_)
            | Statement::Copy { .. }
            | Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::CreateView(_)
            | Statement::CreateSequence { .. }
            | Statement::Comment { .. } => return Ok(InTransaction::InBlock),
            Statement::CreateTrigger(_) | Statement::DropTrigger(_) => {
                return Ok(InTransaction::OnItsOwn);
            }
            other => statement_kind(other),
        },
    };
    Err(Error::NotInTransaction { statement: refused })
}

/// Whether a statement may change the database (so a READ ONLY transaction refuses it).
fn writes(parsed: &ParsedStatement) -> bool {
    match parsed {
        ParsedStatement::Command(command) => !matches!(
            command,
            Command::ShowIndexes { .. }
                | Command::ExplainKey { .. }
                | Command::ShowWarnings
                | Command::ShowStatistics { .. }
                | Command::ShowKeySpread { .. }
                | Command::CheckIndex { repair: false, .. }
                | Command::CheckTable { repair: false, .. }
        ),
        ParsedStatement::Sql { statement, .. } => !matches!(
            statement.as_ref(),
            Statement::Query(_)
                | Statement::Explain { .. }
                | Statement::ShowTables { .. }
                | Statement::ExplainTable { .. }
                | Statement::Copy { to: true, .. }
                | Statement::Set(_)
        ),
    }
}

/// The statement's name for messages, as PostgreSQL names statements (`INSERT`, `CREATE
/// TABLE`, `DROP INDEX`).
fn statement_name(parsed: &ParsedStatement) -> String {
    let statement = match parsed {
        ParsedStatement::Command(command) => return command.to_string(),
        ParsedStatement::Sql { statement, .. } => statement.as_ref(),
    };
    match statement {
        Statement::Insert(_) => "INSERT".into(),
        Statement::Update(_) => "UPDATE".into(),
        Statement::Delete(_) => "DELETE".into(),
        Statement::Copy { .. } => "COPY".into(),
        Statement::Truncate(_) => "TRUNCATE TABLE".into(),
        Statement::CreateTable(_) => "CREATE TABLE".into(),
        Statement::CreateIndex(_) => "CREATE INDEX".into(),
        Statement::CreateView(_) => "CREATE VIEW".into(),
        Statement::CreateSequence { .. } => "CREATE SEQUENCE".into(),
        Statement::CreateTrigger(_) => "CREATE TRIGGER".into(),
        Statement::DropTrigger(_) => "DROP TRIGGER".into(),
        Statement::AlterTable(_) => "ALTER TABLE".into(),
        Statement::Drop { object_type, .. } => format!("DROP {object_type}"),
        other => statement_kind(other),
    }
}

/// Runs one statement of any kind but transaction control.
/// Runs one statement once, recording the sequence values it takes as the session's
/// (`currval`).
async fn run_once(session: &Session, parsed: &ParsedStatement) -> Result<Output> {
    // Another process may have changed the catalog (a store shared by several processes); a
    // query reads on from the snapshot that checked it.
    let view = session.db.catalog.refresh().await?;
    let view = view.filter(|_| is_query(parsed));
    let last_values = session.sequence_values.clone();
    // Boxed: a statement's future is large, and callers' stacks are not.
    LAST_VALUES
        .scope(
            last_values,
            Box::pin(with_query_view(view, run_statement(session, parsed))),
        )
        .await
}

async fn run_statement(session: &Session, parsed: &ParsedStatement) -> Result<Output> {
    let (statement, upsert, hints, families) = match parsed {
        ParsedStatement::Sql {
            statement,
            upsert,
            hints,
            families,
        } => (statement.as_ref(), *upsert, hints, families),
        ParsedStatement::Command(command) => return run_command(session, command).await,
    };
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
    match statement {
        Statement::Query(_) => query::run_select(session, statement, hints).await,
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
                other => dml::explain_finding(session, other, options, hints).await,
            }
        }
        Statement::CreateTable(create) if create.query.is_some() => {
            create_as::create_table_as(session, create).await
        }
        Statement::CreateTable(create) if create.like.is_some() => {
            create_like::create_table_like(session, create).await
        }
        Statement::CreateTable(create) => ddl::create_table(session, create, families).await,
        Statement::AlterTable(alter) => alter::alter_table(session, alter).await,
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
            ..
        } => ddl::drop(session, *object_type, *if_exists, names).await,
        Statement::Insert(insert) => {
            let output = dml::insert(session, insert, upsert).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::Update(update) => {
            let output = dml::update(session, update).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::Delete(delete) => {
            let output = dml::delete(session, delete).await?;
            returning::name_returned(session, statement, output)
        }
        Statement::CreateIndex(create) => indexes::create_index(session, create).await,
        Statement::Copy { .. } => copy::copy(session, statement).await,
        Statement::CreateView(create) => views::create_view(session, create).await,
        Statement::Comment {
            object_type,
            object_name,
            if_exists,
            ..
        } => comments::comment(session, object_type, object_name, *if_exists),
        Statement::CreateTrigger(create) => triggers::create_trigger(session, create).await,
        Statement::DropTrigger(drop) => triggers::drop_trigger(session, drop).await,
        Statement::Truncate(truncate) => truncate::boxed(session, truncate).await,
        Statement::ShowTables { .. } => show::show_tables(session),
        Statement::ExplainTable { table_name, .. } => {
            show::describe(session, &object_name(table_name)?)
        }
        other => Err(Error::Unsupported {
            what: format!("the statement {}", statement_kind(other)),
        }),
    }
}

async fn run_command(session: &Session, command: &Command) -> Result<Output> {
    match command {
        Command::ShowIndexes { table } => indexes::show_indexes(session, table.as_deref()),
        Command::CheckIndex { index, repair } => {
            indexes::check(session, Some(index), None, *repair).await
        }
        Command::CheckTable { table, repair } => {
            indexes::check(session, None, Some(table), *repair).await
        }
        Command::Reindex { target } => indexes::reindex(session, target.as_deref()).await,
        Command::ExplainKey { table } => keydesign::explain_key(session, table),
        Command::ShowKeySpread { table, partitions } => {
            keydesign::key_spread(session, table, *partitions).await
        }
        Command::ShowWarnings => Ok(Output::text_rows("warning", session.warnings())),
        Command::Purge { table } => purge::purge(session, table).await,
        Command::Analyze { table } => statistics::analyze_tables(session, table.as_deref()).await,
        Command::ShowStatistics { table } => statistics::show_statistics(session, table).await,
        Command::Checkpoint => {
            session.db.store.checkpoint().await?;
            Ok(Output::Done)
        }
        Command::Vacuum { analyze, tables } => {
            for table in tables {
                session.table_def(table)?;
            }
            session.db.store.compact().await?;
            if *analyze && tables.is_empty() {
                statistics::analyze_tables(session, None).await?;
            } else if *analyze {
                for table in tables {
                    statistics::analyze_tables(session, Some(table)).await?;
                }
            }
            Ok(Output::Done)
        }
        Command::CreateRole {
            name,
            options,
            user,
        } => roles::create_role(session, name, options, *user).await,
        Command::AlterRole { name, options } => roles::alter_role(session, name, options).await,
        Command::DropRole { names, if_exists } => {
            roles::drop_roles(session, names, *if_exists).await
        }
    }
}
