//! One client connection: pgwire's simple and extended query handlers over the connection's
//! rowdex [`Session`](rowdex::Session). Each statement runs under the transaction-block rules
//! of [`SessionState`]; results go out as DataRows in the format the client asked for, with
//! PostgreSQL's command tags and SQLSTATE codes.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::{Sink, SinkExt, stream};
use pgwire::api::copy::{CopyHandler, send_copy_in_response};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{
    ExtendedQueryHandler, SimpleQueryHandler, send_describe_response, send_execution_response,
    send_query_response, send_ready_for_query,
};
use pgwire::api::results::{
    CopyResponse, DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo,
    QueryResponse, Response, Tag,
};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use rowdex::arrow::array::StringArray;
use rowdex::arrow::datatypes::{DataType as ArrowType, Field, Schema, SchemaRef};
use rowdex::arrow::record_batch::RecordBatch;
use rowdex::{Output, script_statements};

use crate::batched::Batched;
use crate::copy::{PendingCopy, copy_in_format, send_copy_out};
use crate::cursor_statements;
use crate::cursors::declared_query;
use crate::declared::wire_schema;
use crate::extensions::create_extension;
use crate::kind::{KIND_WORDS, Kind};
use crate::pg_catalog::rewrite::rewrite;
use crate::settings::{parse_reset, parse_set, strip_word};
use crate::sql_prepared;
use crate::sqlstate::{
    FEATURE_NOT_SUPPORTED, IN_FAILED_TRANSACTION, INVALID_PARAMETER_VALUE, PROTOCOL_VIOLATION,
    QUERY_CANCELED, WARNING, error_info, pg_error, statement_error,
};
use crate::state::SessionState;
use crate::statement::{StatementParser, WireStatement};
use crate::types::{data_rows, naive_for_instant, parameter_datum, row_fields, wire_fields};

/// Parameters whose changes a client is told of (ParameterStatus), as PostgreSQL reports them.
const REPORTED_PARAMETERS: [&str; 6] = [
    "application_name",
    "client_encoding",
    "DateStyle",
    "TimeZone",
    "IntervalStyle",
    "standard_conforming_strings",
];

/// What a statement produced and its tag, or the error to send for it.
use crate::cursor_statements::{Portals, Ran};

/// The handlers of one connection.
pub struct Connection {
    state: Arc<SessionState>,
    parser: Arc<StatementParser>,
    /// The COPY FROM STDIN receiving the client's data, if one is.
    copy: PendingCopy,
    /// The names of the prepared statements the client made (Parse with a name), which
    /// DEALLOCATE forgets.
    statement_names: Mutex<BTreeSet<String>>,
}

/// How a simple query's statements ended.
enum QueryEnd {
    /// Every statement ran, or one failed: the query is over.
    Finished,
    /// A COPY FROM STDIN waits for its data: the query goes on after it.
    AwaitingCopyData,
}

impl Connection {
    pub fn new(state: Arc<SessionState>) -> Self {
        let parser = Arc::new(StatementParser::new(state.clone()));
        Connection {
            state,
            parser,
            copy: PendingCopy::default(),
            statement_names: Mutex::default(),
        }
    }

    fn statement_names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.statement_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `DEALLOCATE [PREPARE] name | ALL`: forgets one prepared statement of the connection, or
    /// every one.
    fn deallocate<C>(&self, client: &mut C, sql: &str) -> Ran
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let text = sql.trim().trim_end_matches(';').trim();
        let rest = strip_word(text, "DEALLOCATE").unwrap_or(text);
        let rest = strip_word(rest, "PREPARE").unwrap_or(rest);
        if rest.eq_ignore_ascii_case("ALL") {
            for name in std::mem::take(&mut *self.statement_names()) {
                client.portal_store().rm_statement(&name);
            }
            self.state.sql_statements().clear();
            return Ok((Output::Done, Tag::new("DEALLOCATE ALL")));
        }
        let name = match rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => rest.to_lowercase(),
        };
        let sql_level = self.state.sql_statements().remove(&name);
        if !self.statement_names().remove(&name) && !sql_level {
            return Err(Box::new(error_info(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            )));
        }
        client.portal_store().rm_statement(&name);
        Ok((Output::Done, Tag::new("DEALLOCATE")))
    }

    /// Runs one statement (`sql`, what rowdex runs; `texts`, how the activity shows it and the
    /// statistics count it) under the
    /// transaction-block rules, shown in the server's activity while it runs and counted in its
    /// statement statistics when it succeeds: in a failed block only ROLLBACK
    /// (or COMMIT, which rolls back) and ROLLBACK TO run; BEGIN in a block and COMMIT or
    /// ROLLBACK outside one are warnings, as in PostgreSQL; SET and SHOW of a parameter are
    /// answered here; everything else is `run`. An error inside a block fails the block.
    async fn run_statement<C, F>(
        &self,
        client: &mut C,
        kind: &Kind,
        sql: &str,
        texts: Texts<'_>,
        run: F,
    ) -> Ran
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send,
        C::PortalStore: PortalStore,
        F: Future<Output = rowdex::Result<Output>>,
    {
        let backend = self.state.backend();
        if let Some(backend) = backend {
            backend.statement_started(texts.shown, self.state.session.in_transaction());
        }
        let started = std::time::Instant::now();
        let ran = self.run_in_block(client, kind, sql, run).await;
        let rows = ran.as_ref().ok().map(|(output, _)| match output {
            Output::Affected { rows } => *rows,
            output => output.row_count() as u64,
        });
        self.state
            .statement_done(texts.counted, started.elapsed(), rows);
        // The cursors of a transaction that ended (or of a statement outside one) go with it.
        if !self.state.session.in_transaction() {
            self.state.cursors().end_transaction();
        }
        if let Some(backend) = backend {
            backend.statement_ended(self.state.standing());
        }
        ran
    }

    /// [`Connection::run_statement`] before the end of a transaction closes its cursors.
    async fn run_in_block<C, F>(&self, client: &mut C, kind: &Kind, sql: &str, run: F) -> Ran
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send,
        C::PortalStore: PortalStore,
        F: Future<Output = rowdex::Result<Output>>,
    {
        self.state.start(client);
        let in_block = self.state.session.in_transaction();
        if self.state.block_failed() {
            match kind {
                Kind::Rollback | Kind::Commit => {
                    if in_block {
                        // Ending a failed block cannot fail in a way the client could act on.
                        let _ = self.state.session.execute("ROLLBACK").await;
                    }
                    self.state.set_block_failed(false);
                    return Ok((Output::Done, Tag::new("ROLLBACK")));
                }
                Kind::RollbackTo if in_block => {}
                _ => {
                    return Err(Box::new(error_info(
                        IN_FAILED_TRANSACTION,
                        "current transaction is aborted, commands ignored until end of transaction block",
                    )));
                }
            }
        }
        match kind {
            Kind::Begin if in_block => {
                notice(
                    client,
                    "25001",
                    "there is already a transaction in progress",
                )
                .await;
                return Ok((Output::Done, kind.tag(&Output::Done)));
            }
            Kind::Commit | Kind::Rollback if !in_block => {
                notice(client, "25P01", "there is no transaction in progress").await;
                return Ok((Output::Done, kind.tag(&Output::Done)));
            }
            Kind::Set => return self.set(client, sql).await,
            Kind::Reset => return self.reset(client, sql).await,
            Kind::Deallocate => return self.deallocate(client, sql),
            Kind::CreateExtension => {
                let created = create_extension(sql)
                    .map(|()| (Output::Done, kind.tag(&Output::Done)))
                    .map_err(|(code, message)| Box::new(error_info(code, message)));
                return self.in_block_outcome(created, in_block);
            }
            Kind::ShowParameter(name) => return self.show(name),
            Kind::Fetch | Kind::Move => {
                let portals = client.portal_store().as_any().downcast_ref::<Portals>();
                let ran = cursor_statements::fetch(&self.state, portals, sql, *kind == Kind::Fetch);
                return self.in_block_outcome(ran.await, in_block);
            }
            Kind::Close => {
                return self.in_block_outcome(cursor_statements::close(&self.state, sql), in_block);
            }
            Kind::Declare => {
                let ran = cursor_statements::declare(&self.state, sql, in_block, run).await;
                return self.in_block_outcome(ran, in_block);
            }
            Kind::Prepare => {
                return self.in_block_outcome(sql_prepared::prepare(&self.state, sql), in_block);
            }
            Kind::Execute => {
                let ran = sql_prepared::execute(&self.state, sql).await;
                for warning in self.state.session.notices() {
                    notice(client, WARNING, &warning).await;
                }
                return self.in_block_outcome(ran, in_block);
            }
            _ => {}
        }
        let ran = match self.run_stoppable(run, kind.cancellable(in_block)).await {
            Ok(ran) => ran,
            Err(stopped) => {
                if in_block {
                    self.state.set_block_failed(true);
                }
                return Err(Box::new(error_info(QUERY_CANCELED, stopped.message())));
            }
        };
        match ran {
            Ok(output) => {
                if *kind == Kind::RollbackTo {
                    self.state.set_block_failed(false);
                }
                // What the statement warned about (a key design that will hurt, a storage
                // parameter with no effect, a schema change committed inside a block) goes to
                // the client as WARNING notices; SHOW WARNINGS returns them as rows instead.
                if !kind.is_show_warnings() {
                    for warning in self.state.session.notices() {
                        notice(client, WARNING, &warning).await;
                    }
                }
                let tag = kind.tag(&output);
                Ok((output, tag))
            }
            Err(error) => {
                if in_block && *kind != Kind::Commit {
                    self.state.set_block_failed(true);
                }
                Err(Box::new(statement_error(&error, sql)))
            }
        }
    }

    /// `ran`, having failed the transaction block it ran in if it failed.
    fn in_block_outcome(&self, ran: Ran, in_block: bool) -> Ran {
        if ran.is_err() && in_block {
            self.state.set_block_failed(true);
        }
        ran
    }

    /// Runs `run` until it ends, a cancel request for this connection arrives or the
    /// session's `statement_timeout` runs out. A `droppable` statement (a read, a write inside
    /// a block, whose effects the block's failure undoes) is then dropped: its scans stop at
    /// their next page (store reads yield to the runtime every so often, so a long scan
    /// notices). Any other write runs on, since it may be committing: a cancel raises the
    /// session's interrupt, which ends a wait for a row lock it is in, and rowdex bounds those
    /// waits by `statement_timeout` itself.
    async fn run_stoppable<F>(
        &self,
        run: F,
        droppable: bool,
    ) -> Result<rowdex::Result<Output>, Stopped>
    where
        F: Future<Output = rowdex::Result<Output>>,
    {
        let session = &self.state.session;
        let deadline = session
            .statement_timeout()
            .and_then(|limit| tokio::time::Instant::now().checked_add(limit));
        let cancelled = async {
            match self.state.cancel_key() {
                Some(key) => {
                    if key.arm().await.await.is_err() {
                        // The connection's handle is gone: no cancel can arrive.
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        let timed_out = async {
            match deadline {
                Some(deadline) if droppable => tokio::time::sleep_until(deadline).await,
                _ => std::future::pending().await,
            }
        };
        let mut run = std::pin::pin!(run);
        tokio::select! {
            biased;
            () = cancelled => {}
            () = timed_out => return Err(Stopped::Timeout),
            ran = &mut run => return Ok(ran),
        }
        if droppable {
            return Err(Stopped::Cancelled);
        }
        session.interrupt();
        let ran = run.await;
        session.clear_interrupt();
        Ok(ran)
    }

    /// `SET name = value`: kept for SHOW, and reported back when clients track it.
    async fn set<C>(&self, client: &mut C, sql: &str) -> Ran
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
    {
        let invalid = |message| Box::new(error_info(INVALID_PARAMETER_VALUE, message));
        let (name, value) = parse_set(sql).map_err(invalid)?;
        self.assign(client, name, value).await?;
        Ok((Output::Done, Tag::new("SET")))
    }

    /// `RESET name` / `RESET ALL`: each parameter back to its value at the session's start.
    async fn reset<C>(&self, client: &mut C, sql: &str) -> Ran
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
    {
        let invalid = |message| Box::new(error_info(INVALID_PARAMETER_VALUE, message));
        let starting = self.state.starting_settings();
        for (name, value) in parse_reset(sql, &starting).map_err(invalid)? {
            self.assign(client, name, value).await?;
        }
        Ok((Output::Done, Tag::new("RESET")))
    }

    /// Gives the parameter `name` the value `value`, in the server's settings and in rowdex's
    /// session where it changes how statements run.
    async fn assign<C>(
        &self,
        client: &mut C,
        name: String,
        value: String,
    ) -> Result<(), Box<ErrorInfo>>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
    {
        let invalid = |message| Box::new(error_info(INVALID_PARAMETER_VALUE, message));
        // A value the session cannot take is refused before SHOW would report it.
        self.state
            .apply_transaction_parameter(&name, &value)
            .map_err(invalid)?;
        // SHOW prints a zone by the name the zone database gives it.
        let value = if name.eq_ignore_ascii_case("timezone") {
            self.state.session.time_zone().name()
        } else {
            value
        };
        let name = self.state.settings().assign(&name, &value);
        if name == "application_name"
            && let Some(backend) = self.state.backend()
        {
            backend.set_application_name(&value);
        }
        if REPORTED_PARAMETERS.contains(&name.as_str()) {
            let status = ParameterStatus::new(name, value);
            // A client gone mid-statement is noticed by the next write of its connection.
            let _ = client
                .feed(PgWireBackendMessage::ParameterStatus(status))
                .await;
        }
        Ok(())
    }

    /// `SHOW name` of a session parameter (or `SHOW ALL`).
    fn show(&self, name: &str) -> Ran {
        let settings = self.state.current_settings();
        let (column, values) = if name.eq_ignore_ascii_case("all") {
            ("setting".to_string(), settings.all())
        } else {
            settings.show(name).ok_or_else(|| {
                Box::new(error_info(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                ))
            })?
        };
        // Named as PostgreSQL names the parameter (`TimeZone`, `DateStyle`), however asked.
        let schema = Arc::new(Schema::new(vec![Field::new(
            column,
            ArrowType::Utf8,
            false,
        )]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(values))])
            .map_err(|e| Box::new(error_info("XX000", e.to_string())))?;
        Ok((
            Output::Rows {
                schema,
                batches: vec![batch],
            },
            Tag::new("SHOW"),
        ))
    }
}

/// A WARNING notice (BEGIN inside a transaction, say).
/// Why a statement was dropped before it ended (57014).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Cancelled,
    Timeout,
}

impl Stopped {
    fn message(self) -> &'static str {
        match self {
            Stopped::Cancelled => "canceling statement due to user request",
            Stopped::Timeout => "canceling statement due to statement timeout",
        }
    }
}

async fn notice<C>(client: &mut C, code: &str, message: &str)
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
{
    let mut info = error_info(code, message);
    info.severity = "WARNING".to_string();
    // A notice lost with its connection matters to no one.
    let _ = client
        .feed(PgWireBackendMessage::NoticeResponse(info.into()))
        .await;
}

/// The response for a statement's output: its rows described by `described` (the schema a
/// client was given by Describe) or by their own schema, in `format`.
fn response(
    output: Output,
    tag: Tag,
    format: &Format,
    described: Option<(SchemaRef, Arc<Vec<FieldInfo>>)>,
) -> PgWireResult<Response> {
    match output {
        Output::Rows { schema, batches } => {
            let (wire, fields) = match described {
                Some(described) => described,
                None => {
                    let wire = wire_schema(&schema);
                    let fields = Arc::new(wire_fields(&wire, format)?);
                    (wire, fields)
                }
            };
            let rows = data_rows(&fields, batches, &wire)?;
            let mut response = QueryResponse::new(fields, stream::iter(rows));
            // The statement's own tag without its row count, which pgwire appends: `INSERT 0`
            // for an INSERT ... RETURNING, `UPDATE`, `SHOW`, `SELECT`.
            let text = CommandComplete::from(tag).tag;
            let command = match text.rsplit_once(' ') {
                Some((head, rows)) if rows.parse::<usize>().is_ok() => head,
                _ => text.as_str(),
            };
            response.set_command_tag(command);
            Ok(Response::Query(response))
        }
        _ => Ok(Response::Execution(tag)),
    }
}

/// How a statement is shown in the server's activity (the query string as the client sent it)
/// and counted in its statement statistics (the statement's own text).
struct Texts<'a> {
    shown: &'a str,
    counted: &'a str,
}

impl Connection {
    /// Runs each statement of a simple query in turn, sending each one's response as soon as
    /// it has one (a COPY's data cannot wait for the statements after it), and stops at the
    /// first error, as PostgreSQL does.
    async fn run_simple_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<QueryEnd>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // A catalog query in PostgreSQL's dialect runs as rowdex's SQL (shown in the activity
        // and counted in the statement statistics as the client sent it).
        let sent = query;
        let rewritten = rewrite(query);
        let query = rewritten.as_deref().unwrap_or(query);
        let statements = match script_statements(query) {
            Ok(statements) => statements,
            Err(error) => {
                self.state.fail_block_if_open();
                send_error(client, statement_error(&error, query)).await?;
                return Ok(QueryEnd::Finished);
            }
        };
        if statements.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        // Several reads and writes sent as one string are one transaction, as in PostgreSQL:
        // an error in any of them undoes those before it.
        let implicit = statements.len() > 1
            && !self.state.session.in_transaction()
            && statements
                .iter()
                .all(|statement| implicit_block_statement(&statement.leading_words(1)));
        if implicit && let Err(error) = self.state.session.execute("BEGIN").await {
            send_error(client, statement_error(&error, query)).await?;
            return Ok(QueryEnd::Finished);
        }
        let mut failed = false;
        let last = statements.len().saturating_sub(1);
        for (i, statement) in statements.iter().enumerate() {
            let words = statement.leading_words(KIND_WORDS);
            let kind = Kind::of(&words, |name| self.state.knows_parameter(name));
            // A DECLARE runs its cursor's query; the cursor statements run no rowdex SQL.
            let declared = match kind {
                Kind::Declare => declared_query(&statement.text())
                    .and_then(|query| script_statements(&query).ok())
                    .filter(|statements| statements.len() == 1)
                    .and_then(|mut statements| statements.pop()),
                _ => None,
            };
            let run = self
                .state
                .session
                .run_script_statement(declared.as_ref().unwrap_or(statement));
            let text = statement.text();
            let sql = match kind {
                Kind::Declare
                | Kind::Fetch
                | Kind::Move
                | Kind::Close
                | Kind::Prepare
                | Kind::Execute => text.as_str(),
                _ => query,
            };
            // A rewritten query string is shown as sent; its statements as they ran.
            let shown = if rewritten.is_some() && sql == query {
                sent
            } else {
                sql
            };
            let counted = if rewritten.is_some() && statements.len() == 1 {
                sent
            } else {
                text.as_str()
            };
            let texts = Texts { shown, counted };
            let (output, tag) = match self.run_statement(client, &kind, sql, texts, run).await {
                Ok(ran) => ran,
                Err(info) => {
                    send_error(client, *info).await?;
                    failed = true;
                    break;
                }
            };
            match output {
                Output::CopyIn(copy) if i == last => {
                    let columns = copy.columns();
                    let format = copy_in_format(&copy);
                    self.copy.start(copy, query);
                    let response = CopyResponse::new(format, columns, stream::empty());
                    send_copy_in_response(client, response).await?;
                    client.set_state(PgWireConnectionState::CopyInProgress(false));
                    return Ok(QueryEnd::AwaitingCopyData);
                }
                Output::CopyIn(copy) => {
                    copy.abort().await;
                    let info = error_info(
                        FEATURE_NOT_SUPPORTED,
                        "COPY FROM STDIN must be the last statement of a query string",
                    );
                    send_error(client, info).await?;
                    break;
                }
                Output::CopyOut(copied) => {
                    send_copy_out(client, copied).await?;
                    send_execution_response(client, tag).await?;
                }
                output => match response(output, tag, &Format::UnifiedText, None)? {
                    Response::Query(rows) => send_query_response(client, rows, true).await?,
                    Response::Execution(tag) => send_execution_response(client, tag).await?,
                    _ => {}
                },
            }
        }
        if implicit {
            self.end_implicit_block(client, query, failed).await?;
        }
        Ok(QueryEnd::Finished)
    }

    /// Ends the transaction a query string of several statements ran in: committed when all
    /// of them ran (a commit that fails is the query's error), rolled back otherwise.
    async fn end_implicit_block<C>(
        &self,
        client: &mut C,
        query: &str,
        failed: bool,
    ) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.state.set_block_failed(false);
        let end = if failed { "ROLLBACK" } else { "COMMIT" };
        let ended = self.state.session.execute(end).await;
        self.state.cursors().end_transaction();
        match ended {
            Err(error) if !failed => send_error(client, statement_error(&error, query)).await,
            // A rollback after an error cannot fail in a way the client could act on.
            _ => Ok(()),
        }
    }
}

/// Whether a statement whose first word is `words[0]` runs inside the implicit transaction of
/// a query string of several statements: reads and writes; a string with transaction control,
/// schema changes, COPY or session settings runs statement by statement, as before.
fn implicit_block_statement(words: &[String]) -> bool {
    matches!(
        words.first().map(String::as_str),
        Some("SELECT" | "INSERT" | "UPDATE" | "DELETE" | "UPSERT" | "WITH" | "VALUES" | "TABLE")
    )
}

/// An ErrorResponse for a statement of a simple query.
async fn send_error<C>(client: &mut C, info: ErrorInfo) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client
        .feed(PgWireBackendMessage::ErrorResponse(info.into()))
        .await?;
    Ok(())
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    /// Runs the query's statements (see [`Connection::run_simple_query`]); ReadyForQuery then
    /// reports the transaction state they left, unless a COPY FROM STDIN now waits for data
    /// (ReadyForQuery follows its CopyDone or CopyFail).
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        if let QueryEnd::AwaitingCopyData = self.run_simple_query(client, &query.query).await? {
            client.flush().await?;
            return Ok(());
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        let status = self.state.status();
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await
    }

    /// Runs the query as `on_query` does, sending each statement's response as it comes; the
    /// list returned is therefore empty.
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.run_simple_query(client, query).await?;
        Ok(Vec::new())
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sent = self.copy.data(copy_data.data).await;
        if sent.is_err() {
            // A COPY in a transaction block fails the block, as any failed statement does.
            self.state.fail_block_if_open();
        }
        sent
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let done = self.copy.done(client).await;
        if done.is_err() {
            self.state.fail_block_if_open();
        }
        client.set_transaction_status(self.state.status());
        done
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let error = self.copy.fail(&fail.message).await;
        self.state.fail_block_if_open();
        client.set_transaction_status(self.state.status());
        error
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Arc<WireStatement>;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    /// pgwire's Parse, remembering the statement's name for DEALLOCATE.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_default();
        let parser = self.query_parser();
        match StoredStatement::parse(client, &message, parser).await? {
            Some(statement) => client.portal_store().put_statement(Arc::new(statement)),
            None => client.portal_store().put_empty_statement(&name),
        }
        if !name.is_empty() {
            self.statement_names().insert(name);
        }
        client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// pgwire's Close, forgetting a closed statement's name.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        if message.target_type == TARGET_TYPE_BYTE_STATEMENT {
            client.portal_store().rm_statement(name);
            self.statement_names().remove(name);
        } else {
            client.portal_store().rm_portal(name);
        }
        client
            .feed(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    /// pgwire's Execute, then the transaction state this connection tracks (which a failed
    /// block or a rolled-back COMMIT decides, not the response kind).
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self._on_execute(&mut Batched::new(client), message).await?;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            // The client sends its data only once it has the CopyInResponse.
            client.flush().await?;
        } else {
            client.set_transaction_status(self.state.status());
        }
        Ok(())
    }

    /// pgwire's Describe, its reply buffered until Sync or Flush.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // A cursor DECLARE opened is described as a portal of its name (psycopg asks so).
        if message.target_type == TARGET_TYPE_BYTE_PORTAL
            && let Some(name) = message.name.as_deref().filter(|n| !n.is_empty())
            && client.portal_store().get_portal(name).is_none()
        {
            let schema = self.state.cursors().schema(name);
            if let Some(schema) = schema {
                let fields = row_fields(&schema, &Format::UnifiedText)?;
                let mut batched = Batched::new(client);
                return send_describe_response(&mut batched, &DescribePortalResponse::new(fields))
                    .await;
            }
        }
        self._on_describe(&mut Batched::new(client), message).await
    }

    /// Bind: a portal over the named statement with the client's values (an empty statement
    /// takes none), its BindComplete buffered until Sync or Flush.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement) {
            Some(Entry::Value(stored)) => {
                let portal = Portal::try_new(&message, stored)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => {
                let portal = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal);
            }
            Some(Entry::Empty) => {
                let info = error_info(
                    PROTOCOL_VIOLATION,
                    format!(
                        "bind message supplies {} parameters, but the statement is empty and \
                         takes none",
                        message.parameters.len()
                    ),
                );
                return Err(PgWireError::UserError(Box::new(info)));
            }
            None => return Err(PgWireError::StatementNotFound(statement.to_string())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Self::Statement>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = &target.statement;
        let description = statement
            .description()
            .await
            .map_err(|e| pg_error(&e, &statement.sql))?;
        let parameters = statement.parameter_types(&target.parameter_types, description);
        let fields = match &description.columns {
            Some(schema) => row_fields(schema, &Format::UnifiedText)?,
            None => Vec::new(),
        };
        Ok(DescribeStatementResponse::new(parameters, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Self::Statement>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = &portal.statement.statement;
        statement
            .description()
            .await
            .map_err(|e| pg_error(&e, &statement.sql))?;
        Ok(
            match statement.described_rows(&portal.result_column_format)? {
                Some((_, fields)) => DescribePortalResponse::new(fields.as_ref().clone()),
                None => DescribePortalResponse::no_data(),
            },
        )
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Self::Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement = &portal.statement.statement;
        let mut params = Vec::with_capacity(portal.parameter_len());
        if portal.parameter_len() > 0 {
            let description = statement
                .description()
                .await
                .map_err(|e| pg_error(&e, &statement.sql))?;
            let types = statement.parameter_types(&portal.statement.parameter_types, description);
            for (index, pg_type) in types.iter().enumerate().take(portal.parameter_len()) {
                let datum = parameter_datum(portal, index, pg_type)?;
                let slot = description.parameters.get(index).and_then(Option::as_deref);
                params.push(naive_for_instant(datum, pg_type, slot));
            }
        }
        let run = async {
            match &statement.prepared {
                Some(prepared) => prepared.execute(&params).await,
                None => Ok(Output::Done),
            }
        };
        let texts = Texts {
            shown: &statement.sql,
            counted: &statement.sql,
        };
        let ran = self
            .run_statement(client, &statement.kind, &statement.sql, texts, run)
            .await;
        // An error leaves the connection's state for pgwire to report at Sync.
        client.set_transaction_status(self.state.status());
        let (output, tag) = ran.map_err(PgWireError::UserError)?;
        match output {
            Output::CopyIn(copy) => {
                let columns = copy.columns();
                let format = copy_in_format(&copy);
                self.copy.start(copy, &statement.sql);
                Ok(Response::CopyIn(CopyResponse::new(
                    format,
                    columns,
                    stream::empty(),
                )))
            }
            Output::CopyOut(copied) => {
                send_copy_out(client, copied).await?;
                Ok(Response::Execution(tag))
            }
            output => {
                let format = &portal.result_column_format;
                response(output, tag, format, statement.described_rows(format)?)
            }
        }
    }
}
