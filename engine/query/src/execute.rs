//! Statement dispatch: DDL, DML and the SHOW/DESCRIBE family run here; a query goes to the
//! native executor when it can run it, otherwise (and EXPLAIN likewise) through DataFusion with
//! the rowdex tables as providers.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, Statement, TransactionModifier,
};

use crate::database::{Output, Session};
use crate::hints::QueryHints;
use crate::native::{self, Executor, NativeQuery};
use crate::scan_exec::RowdexScanExec;
use crate::statement::{Command, ParsedStatement};
use crate::txn::SessionTxn;
use crate::types::renamed_schema;
use crate::{Error, Result, ddl, dml, indexes, keydesign, rewrite, show, views};

/// How often a write statement that lost a race with a concurrent writer (or a concurrent schema
/// change) is run again before its conflict is reported. Nothing was written by a failed try.
const WRITE_ATTEMPTS: usize = 8;

pub(crate) async fn run_statement(session: &Session, parsed: &ParsedStatement) -> Result<Output> {
    if !matches!(parsed, ParsedStatement::Command(Command::ShowWarnings)) {
        session.set_warnings(Vec::new());
    }
    if let ParsedStatement::Sql { statement, .. } = parsed
        && let Some(output) = transaction_control(session, statement).await?
    {
        return Ok(output);
    }
    if let Some(txn) = session.open_txn() {
        refuse_in_transaction(parsed)?;
        // Inside a transaction a statement runs once: its reads come from the transaction's
        // snapshot, so running it again would meet the same state. A failure undoes the
        // statement alone.
        let savepoint = txn.statement_start().await?;
        let result = run_once(session, parsed).await;
        txn.statement_end(savepoint, result.is_ok()).await?;
        return result;
    }
    let is_write = matches!(
        parsed,
        ParsedStatement::Sql { statement, .. } if matches!(
            statement.as_ref(),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        )
    );
    let mut attempt = 1;
    loop {
        match run_once(session, parsed).await {
            Err(error) if is_write && error.is_retryable() && attempt < WRITE_ATTEMPTS => {
                attempt += 1;
                tokio::task::yield_now().await;
            }
            result => return result,
        }
    }
}

/// Runs BEGIN, COMMIT, ROLLBACK and the savepoint statements; None for any other statement.
async fn transaction_control(session: &Session, statement: &Statement) -> Result<Option<Output>> {
    match statement {
        Statement::StartTransaction {
            modes,
            modifier,
            statements,
            exception,
            ..
        } => {
            // Deferred is what rowdex does anyway (nothing is locked; conflicts show at COMMIT);
            // SQLite's IMMEDIATE/EXCLUSIVE locks and isolation-level modes are not offered.
            if !modes.is_empty()
                || !matches!(modifier, None | Some(TransactionModifier::Deferred))
                || !statements.is_empty()
                || exception.is_some()
            {
                return Err(Error::Unsupported {
                    what: format!("{statement} (only BEGIN [DEFERRED] [TRANSACTION])"),
                });
            }
            if session.in_transaction() {
                return Err(Error::TransactionAlreadyOpen);
            }
            let txn = SessionTxn::begin(session.db.store.as_ref()).await?;
            session.swap_txn(Some(txn));
        }
        Statement::Commit { chain: false, .. } => {
            let txn = session.swap_txn(None).ok_or(Error::NoTransaction)?;
            txn.commit(&session.db).await?;
        }
        Statement::Rollback {
            chain: false,
            savepoint: None,
        } => {
            let txn = session.swap_txn(None).ok_or(Error::NoTransaction)?;
            txn.rollback().await;
        }
        Statement::Rollback {
            chain: false,
            savepoint: Some(name),
        } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.rollback_to(&ident_name(name)).await?;
        }
        Statement::Savepoint { name } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.savepoint(ident_name(name)).await?;
        }
        Statement::ReleaseSavepoint { name } => {
            let txn = session.open_txn().ok_or(Error::NoTransaction)?;
            txn.release(&ident_name(name)).await?;
        }
        Statement::Commit { chain: true, .. } | Statement::Rollback { chain: true, .. } => {
            return Err(Error::Unsupported {
                what: format!("{statement}"),
            });
        }
        _ => return Ok(None),
    }
    Ok(Some(Output::Done))
}

/// Rejects what cannot join a transaction: schema changes and index maintenance commit on
/// their own (the catalog is shared by every session at once), and COPY FROM commits batch by
/// batch.
fn refuse_in_transaction(parsed: &ParsedStatement) -> Result<()> {
    let refused = match parsed {
        ParsedStatement::Command(
            Command::ShowIndexes { .. } | Command::ExplainKey { .. } | Command::ShowWarnings,
        ) => None,
        ParsedStatement::Command(command) => Some(command.to_string()),
        ParsedStatement::Sql { statement, .. } => match statement.as_ref() {
            Statement::Query(_)
            | Statement::Explain { .. }
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::ShowTables { .. }
            | Statement::ExplainTable { .. }
            | Statement::Copy { to: true, .. } => None,
            other => Some(statement_kind(other)),
        },
    };
    match refused {
        Some(statement) => Err(Error::NotInTransaction { statement }),
        None => Ok(()),
    }
}

async fn run_once(session: &Session, parsed: &ParsedStatement) -> Result<Output> {
    let (statement, upsert, hints, families) = match parsed {
        ParsedStatement::Sql {
            statement,
            upsert,
            hints,
            families,
        } => (statement.as_ref(), *upsert, hints, families),
        ParsedStatement::Command(command) => return run_command(session, command).await,
    };
    match statement {
        Statement::Query(query) => {
            let txn = session.open_txn();
            if let Some(native) = native_query(session, query)
                && let Some(output) =
                    native::run(&session.db, txn.as_ref(), &native, &[], hints).await?
            {
                return Ok(output);
            }
            run_query(&statement_context(session, hints), statement.clone()).await
        }
        Statement::Explain {
            statement: explained,
            verbose,
            ..
        } => {
            if let Statement::Query(query) = explained.as_ref()
                && let Some(native) = native_query(session, query)
                && let Some(path) = native::explain(&session.db, &native, hints).await?
            {
                let line = if *verbose {
                    format!(
                        "NativeExec: {path} projection=[{}]",
                        native.names.join(", ")
                    )
                } else {
                    path
                };
                return Ok(text_rows("plan", vec![line]));
            }
            explain(&statement_context(session, hints), explained, *verbose).await
        }
        Statement::CreateTable(create) => ddl::create_table(session, create, families).await,
        Statement::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => ddl::drop(session, *object_type, *if_exists, names).await,
        Statement::Insert(insert) => dml::insert(session, insert, upsert).await,
        Statement::Update(update) => dml::update(session, update).await,
        Statement::Delete(delete) => dml::delete(session, delete).await,
        Statement::CreateIndex(create) => indexes::create_index(session, create).await,
        Statement::Copy { .. } => crate::copy::copy(session, statement).await,
        Statement::CreateView(create) => views::create_view(session, create).await,
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
        Command::ShowWarnings => Ok(text_rows("warning", session.warnings())),
        Command::Purge { table } => crate::purge::purge(session, table).await,
    }
}

/// The native form of a query, when the session lets the native executor run it and it can.
pub(crate) fn native_query(session: &Session, query: &Query) -> Option<NativeQuery> {
    match session.executor {
        Executor::Auto => NativeQuery::compile(&session.db, query),
        Executor::DataFusion => None,
    }
}

/// The session's context for one statement, carrying to the table scans the statement's hints
/// and the session's open transaction, when there are any.
pub(crate) fn statement_context(session: &Session, hints: &QueryHints) -> SessionContext {
    context_with(&session.ctx, hints, session.open_txn())
}

/// `ctx` carrying `hints` and `txn` to its table scans (which read through `txn` when given).
pub(crate) fn context_with(
    ctx: &SessionContext,
    hints: &QueryHints,
    txn: Option<Arc<SessionTxn>>,
) -> SessionContext {
    if hints.is_empty() && txn.is_none() {
        return ctx.clone();
    }
    let mut state = ctx.state();
    if !hints.is_empty() {
        state.config_mut().set_extension(Arc::new(hints.clone()));
    }
    if let Some(txn) = txn {
        state.config_mut().set_extension(txn);
    }
    SessionContext::new_with_state(state)
}

/// Plans and runs a query through DataFusion.
pub(crate) async fn run_query(ctx: &SessionContext, mut statement: Statement) -> Result<Output> {
    rewrite::strip_unary_plus(&mut statement);
    let names = rewrite::unique_output_names(&mut statement);
    let plan = plan_statement(ctx, statement).await?;
    let frame = ctx.execute_logical_plan(plan).await?;
    let mut schema = Arc::new(frame.schema().as_arrow().clone());
    let mut batches = frame.collect().await?;
    if let Some(names) = names.filter(|n| n.len() == schema.fields().len()) {
        // The result carries the names the query gave, repeated ones included.
        schema = renamed_schema(&schema, &names);
        batches = batches
            .into_iter()
            .map(|batch| RecordBatch::try_new(schema.clone(), batch.columns().to_vec()))
            .collect::<std::result::Result<_, _>>()?;
    }
    Ok(Output::Rows { schema, batches })
}

/// EXPLAIN: the access path of every table scan (plain), or the whole DataFusion physical plan
/// (VERBOSE), where each scan prints the same access-path text.
async fn explain(ctx: &SessionContext, statement: &Statement, verbose: bool) -> Result<Output> {
    let logical = plan_statement(ctx, statement.clone()).await?;
    let physical = ctx.state().create_physical_plan(&logical).await?;
    let lines: Vec<String> = if verbose {
        displayable(physical.as_ref())
            .indent(true)
            .to_string()
            .lines()
            .map(str::to_string)
            .collect()
    } else {
        let mut paths = Vec::new();
        collect_paths(&physical, &mut paths);
        if paths.is_empty() {
            paths.push("NO TABLE SCAN".to_string());
        }
        paths
    };
    Ok(text_rows("plan", lines))
}

/// Plans a view's stored query as a query is planned, with rowdex's rewrites (row values spelled
/// out, unary `+` dropped), so a view answers exactly like its query run on its own.
pub(crate) async fn plan_view_query(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan> {
    let statements = crate::statement::split_statements(sql)?;
    match statements.into_iter().next() {
        Some(ParsedStatement::Sql { statement, .. }) => plan_statement(ctx, *statement).await,
        _ => Err(Error::Unsupported {
            what: format!("a view defined as {sql}"),
        }),
    }
}

/// Plans a statement in `ctx`, first checking that every table it names exists, so that an
/// unknown table is reported as such rather than as a planning failure.
pub(crate) async fn plan_statement(
    ctx: &SessionContext,
    mut statement: Statement,
) -> Result<LogicalPlan> {
    rewrite::strip_unary_plus(&mut statement);
    rewrite::empty_in_subqueries_as_constants(&mut statement);
    rewrite::expand_row_comparisons(&mut statement);
    let statement = DfStatement::Statement(Box::new(statement));
    let state = ctx.state();
    for reference in state.resolve_table_references(&statement)? {
        // `versions(t)` and `as_of(t, time)` are table functions; they check `t` themselves.
        let function = state.table_functions().contains_key(reference.table());
        if !function && !ctx.table_exist(reference.clone())? {
            return Err(Error::TableNotFound {
                table: reference.table().to_string(),
            });
        }
    }
    Ok(state.statement_to_plan(statement).await?)
}

fn collect_paths(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<String>) {
    if let Some(scan) = plan.downcast_ref::<RowdexScanExec>() {
        out.push(scan.explain_text());
    }
    for child in plan.children() {
        collect_paths(child, out);
    }
}

/// A one-column text result.
pub(crate) fn text_rows(column: &str, lines: Vec<String>) -> Output {
    let schema = Arc::new(Schema::new(vec![Field::new(
        column,
        ArrowType::Utf8,
        false,
    )]));
    let array: ArrayRef = Arc::new(StringArray::from(lines));
    match RecordBatch::try_new(schema.clone(), vec![array]) {
        Ok(batch) => Output::Rows {
            schema,
            batches: vec![batch],
        },
        Err(_) => Output::Rows {
            schema,
            batches: Vec::new(),
        },
    }
}

/// Rows of text under the named columns, as a result set.
pub(crate) fn text_table<const N: usize>(
    columns: [&str; N],
    rows: &[[String; N]],
) -> Result<Output> {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, ArrowType::Utf8, false))
            .collect::<Vec<_>>(),
    ));
    let arrays: Vec<ArrayRef> = (0..N)
        .map(|i| {
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r[i].as_str()),
            )) as ArrayRef
        })
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}

/// An identifier as DataFusion resolves it: lowercased unless quoted.
pub(crate) fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The table name an object name refers to: its last part, lowercased unless quoted (the same
/// normalisation DataFusion applies, so both sides agree).
pub(crate) fn object_name(name: &ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => Ok(ident_name(ident)),
        _ => Err(Error::Unsupported {
            what: format!("the object name {name}"),
        }),
    }
}

fn statement_kind(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    words.join(" ")
}
