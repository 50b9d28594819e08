//! [`Session`]: one connection to a database, with what it keeps between statements (its open
//! transaction, the last statement's warnings, its settings) and the context a statement runs
//! in. The statements themselves are run by `impl Session` blocks in the files of the features
//! that add them (`execute`, `prepared`, `paging`), so this file imports none of them.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{Query, Statement};
use rowdex_store::Durability;

use crate::db::DbState;
use crate::db::characteristics::Characteristics;
use crate::db::commit_durability;
use crate::db::schema_view::{SchemaView, TxnSlot};
use crate::db::sequences::LastValues;
use crate::db::statement_report::{StatementFigures, StatementReport};
use crate::db::statement_stop::Interrupt;
use crate::db::txn::{SessionTxn, StatementTxn};
use crate::df::context::context_with;
use crate::df::rules::time_zones::set_session_zone;
use crate::error::Result;
use crate::native::cache::QueryCache;
use crate::native::select::NativeSelect;
use crate::output::Output;
use crate::progress::ProgressFn;
use crate::sql::hints::QueryHints;
use crate::sql::integer_types::IntegerColumns;
use crate::sql::output_names::{postgres_columns, renamed};
use crate::sql::semantics::Semantics;
use crate::time_zone::TimeZone;

/// Which executor runs queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Executor {
    /// The native executor where it applies, DataFusion for everything else.
    #[default]
    Auto,
    /// DataFusion for every query (to compare the two).
    DataFusion,
}

/// A connection: runs SQL against the database. A clone is a handle to the same connection
/// (its open transaction included) whose settings can be changed apart;
/// [`Database::session`](crate::Database::session) opens another connection.
#[derive(Clone)]
pub struct Session {
    pub(crate) db: Arc<DbState>,
    pub(crate) ctx: SessionContext,
    /// Native queries compiled from SQL text, shared by every session of the database.
    pub(crate) query_cache: Arc<QueryCache>,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) executor: Executor,
    /// Whose rules the session follows where SQLite's and PostgreSQL's differ.
    pub(crate) semantics: Semantics,
    /// Whether SQL text goes through the compiled-query cache (true unless
    /// [`Session::set_query_cache`] turned it off).
    pub(crate) query_cache_enabled: bool,
    /// The transaction BEGIN opened, until COMMIT or ROLLBACK.
    txn: TxnSlot,
    /// What the last statement warned about (the row-key advisor's findings).
    warnings: Arc<Mutex<Vec<String>>>,
    /// The part of `warnings` a PostgreSQL client is sent as notices: what PostgreSQL would
    /// warn about too (an option without effect, SET TRANSACTION outside a block, a schema
    /// change committed inside one), not rowdex's own advice.
    notices: Arc<Mutex<Vec<String>>>,
    /// What a transaction is when it begins without saying (`SET SESSION CHARACTERISTICS AS
    /// TRANSACTION ...`, `default_transaction_isolation`); statements outside a transaction
    /// block run under it too.
    default_characteristics: Arc<Mutex<Characteristics>>,
    /// How long a statement waits for a row lock before it fails with 55P03 (`lock_timeout`;
    /// None: as long as it takes).
    lock_timeout: Arc<Mutex<Option<Duration>>>,
    /// How long a statement may wait for row locks in all, from its start, before it fails
    /// with 57014 (`statement_timeout`; None: no limit).
    statement_timeout: Arc<Mutex<Option<Duration>>>,
    /// Raised by a cancel request while a statement runs: its lock waits end with 57014.
    pub(crate) interrupt: Arc<Interrupt>,
    /// What labels the row locks of this connection's transactions (a server's backend pid;
    /// 0: nothing), shown by [`Database::row_locks`](crate::Database::row_locks).
    lock_tag: Arc<AtomicI64>,
    /// The value this session last took from each sequence (`currval`).
    pub(crate) sequence_values: LastValues,
    /// The zone TIMESTAMPTZ values are read and written in (`SET TIME ZONE`).
    time_zone: Arc<Mutex<TimeZone>>,
    /// The durability the session's commits ask for (`SET synchronous_commit`, `SET
    /// durability`; None: what the tables written ask for).
    durability: Arc<Mutex<Option<Durability>>>,
    /// How many triggers are running around the statements of this session: 0 for a
    /// connection, n for the session a trigger's statements run in at nesting level n.
    pub(crate) trigger_depth: usize,
    /// What the current statement did (its path, reads, retries), for
    /// [`Session::take_statement_figures`]; a trigger's statements add to their firing one's.
    pub(crate) report: Arc<StatementReport>,
}

impl Session {
    /// A new connection to the database `db`, whose DataFusion context is `ctx`.
    /// `txn` is where it keeps its open transaction, which `ctx`'s schema reads too.
    pub(crate) fn new(
        db: Arc<DbState>,
        ctx: SessionContext,
        query_cache: Arc<QueryCache>,
        txn: TxnSlot,
    ) -> Self {
        Session {
            db,
            ctx,
            query_cache,
            progress: None,
            executor: Executor::Auto,
            semantics: Semantics::default(),
            query_cache_enabled: true,
            txn,
            sequence_values: LastValues::default(),
            time_zone: Arc::default(),
            durability: Arc::default(),
            warnings: Arc::default(),
            notices: Arc::default(),
            default_characteristics: Arc::default(),
            lock_timeout: Arc::default(),
            statement_timeout: Arc::default(),
            interrupt: Arc::default(),
            lock_tag: Arc::default(),
            trigger_depth: 0,
            report: Arc::default(),
        }
    }

    /// What the last statement did: the access path of its first table scan, the store
    /// entries it read, the keys it looked up, its retries and conflicts. Taking them starts
    /// the count over.
    pub fn take_statement_figures(&self) -> StatementFigures {
        self.report.take()
    }

    /// Runs `statement` as one statement of this session for its report: the report starts
    /// over (unless a trigger's statement adds to its firing one's) and is the task's current
    /// one while it runs.
    pub(crate) async fn reported<F: Future>(&self, statement: F) -> F::Output {
        if self.trigger_depth == 0 {
            self.report.reset();
        }
        let durability = self.durability();
        commit_durability::scoped(durability, self.report.scope(statement)).await
    }

    /// The durability every commit of this session asks for (None: what the tables written
    /// ask for; see `db::commit_durability`).
    pub fn durability(&self) -> Option<Durability> {
        *self
            .durability
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes every commit of this session ask for `durability` (None: what the tables ask
    /// for): `SET synchronous_commit = off` asks for ASYNC_WAL.
    pub fn set_durability(&self, durability: Option<Durability>) {
        *self
            .durability
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = durability;
    }

    /// The session a trigger's statements run in: this connection's settings and sequence
    /// values, with `txn` (the firing statement's transaction) as its open transaction, one
    /// trigger level deeper.
    pub(crate) fn for_trigger(&self, txn: Arc<SessionTxn>) -> Session {
        Session {
            warnings: Arc::default(),
            notices: Arc::default(),
            trigger_depth: self.trigger_depth + 1,
            ..self.with_txn(txn)
        }
    }

    /// This connection with `txn` as its open transaction (a statement that runs several
    /// statements in one transaction of its own, TRUNCATE of several tables).
    pub(crate) fn with_txn(&self, txn: Arc<SessionTxn>) -> Session {
        Session {
            txn: Arc::new(Mutex::new(Some(txn))),
            ..self.clone()
        }
    }

    /// The zone this session reads and writes TIMESTAMPTZ values in (UTC until set).
    pub fn time_zone(&self) -> TimeZone {
        self.time_zone
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes `zone` the session's time zone: text without an offset written to a
    /// TIMESTAMPTZ is read in it, and a query's TIMESTAMPTZ results are given in it.
    pub fn set_time_zone(&self, zone: TimeZone) {
        set_session_zone(
            self.ctx.state_ref().write().config_mut().options_mut(),
            &zone,
        );
        *self
            .time_zone
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = zone;
    }

    /// Reports the progress of long operations (CREATE INDEX on a large table) to `progress`.
    pub fn set_progress(&mut self, progress: ProgressFn) {
        self.progress = Some(progress);
    }

    /// Chooses which executor runs queries (the native one where it applies, by default).
    pub fn set_executor(&mut self, executor: Executor) {
        self.executor = executor;
    }

    pub fn executor(&self) -> Executor {
        self.executor
    }

    /// Chooses whose rules the session follows where SQLite and PostgreSQL differ (SQLite's by
    /// default; `rowdex serve` gives its sessions PostgreSQL's).
    pub fn set_semantics(&mut self, semantics: Semantics) {
        self.semantics = semantics;
    }

    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// Turns the compiled-query cache on or off for this session (on by default). Off, every
    /// statement's text is parsed and compiled on each run, literals and all, as if it had never
    /// been seen; prepared statements are not affected. Benchmarks use it to measure what the
    /// cache saves.
    pub fn set_query_cache(&mut self, enabled: bool) {
        self.query_cache_enabled = enabled;
    }

    /// The warnings of the last statement: CREATE TABLE and CREATE INDEX report key designs
    /// that will hurt (a write hotspot, long keys). `SHOW WARNINGS` returns them as rows.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_warnings(&self, warnings: Vec<String>) {
        *self.warnings.lock().unwrap_or_else(PoisonError::into_inner) = warnings;
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Adds a warning to the current statement's that a PostgreSQL client is also sent as a
    /// notice (see [`Session::notices`]).
    pub(crate) fn add_notice(&self, notice: String) {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(notice.clone());
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(notice);
    }

    /// The last statement's warnings that a PostgreSQL client would get from PostgreSQL too:
    /// a storage parameter without effect, SET TRANSACTION outside a transaction block, a
    /// schema change committed inside one. (The row-key advisor's findings are rowdex's own,
    /// for SHOW WARNINGS.)
    pub fn notices(&self) -> Vec<String> {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The isolation level and access mode of the open transaction, or of the next one.
    pub fn transaction_characteristics(&self) -> Characteristics {
        match self.open_txn() {
            Some(txn) => txn.characteristics(),
            None => self.default_characteristics(),
        }
    }

    /// Changes the open transaction's isolation level and access mode (`SET TRANSACTION`);
    /// outside a transaction it changes nothing, as in PostgreSQL.
    pub fn set_transaction_characteristics(&self, characteristics: Characteristics) {
        if let Some(txn) = self.open_txn() {
            txn.set_characteristics(characteristics);
        }
    }

    /// What a transaction is when BEGIN does not say.
    pub fn default_characteristics(&self) -> Characteristics {
        *self
            .default_characteristics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets what a transaction is when BEGIN does not say (PostgreSQL's
    /// `default_transaction_isolation` and `default_transaction_read_only`).
    pub fn set_default_characteristics(&self, characteristics: Characteristics) {
        *self
            .default_characteristics
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = characteristics;
    }

    /// How long a statement waits for a row lock another transaction holds (None: until it
    /// is free).
    pub fn lock_timeout(&self) -> Option<Duration> {
        *self
            .lock_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets how long a statement waits for a row lock before failing with
    /// `StoreError::LockTimeout` (PostgreSQL's `lock_timeout`; None or zero: no limit).
    pub fn set_lock_timeout(&self, timeout: Option<Duration>) {
        *self
            .lock_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = timeout.filter(|t| !t.is_zero());
    }

    /// How long a statement may wait for row locks, counted from its start (None: no limit).
    pub fn statement_timeout(&self) -> Option<Duration> {
        *self
            .statement_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets how long a statement may wait for row locks before it fails with
    /// `Error::StatementTimeout` (PostgreSQL's `statement_timeout` as far as the library
    /// goes: a server also stops reads at it; None or zero: no limit).
    pub fn set_statement_timeout(&self, timeout: Option<Duration>) {
        *self
            .statement_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = timeout.filter(|t| !t.is_zero());
    }

    /// Asks the statement running on this connection to stop: a wait for a row lock it is in
    /// (or starts) ends with `Error::StatementCancelled` (57014), until
    /// [`Session::clear_interrupt`]. What a cancel request does to a write that cannot be
    /// dropped safely (it may be committing); a statement past its waits runs to its end.
    pub fn interrupt(&self) {
        self.interrupt.raise();
    }

    /// Ends an [`Session::interrupt`]: call it once the interrupted statement has ended.
    pub fn clear_interrupt(&self) {
        self.interrupt.lower();
    }

    /// Labels the row locks this connection's transactions take with `tag` (a server's
    /// backend pid, so that pg_locks can say whose they are).
    pub fn set_lock_tag(&self, tag: i64) {
        self.lock_tag.store(tag, Ordering::Relaxed);
    }

    pub(crate) fn lock_tag(&self) -> Option<i64> {
        Some(self.lock_tag.load(Ordering::Relaxed)).filter(|tag| *tag != 0)
    }

    /// The transaction a statement reads and writes in: the open one, or one of its own with
    /// the session's characteristics, its row locks labelled as the session's.
    pub(crate) async fn statement_txn(&self) -> Result<StatementTxn> {
        StatementTxn::begin(
            &self.db,
            self.open_txn(),
            self.default_characteristics(),
            self.lock_tag(),
        )
        .await
    }

    /// Whether a transaction is open (BEGIN ran, COMMIT or ROLLBACK has not).
    pub fn in_transaction(&self) -> bool {
        self.open_txn().is_some()
    }

    /// The open transaction, which every statement of the session reads and writes through.
    /// The catalog as this session sees it: what committed, with the schema changes of its
    /// open transaction block over it.
    pub fn schema_view(&self) -> SchemaView {
        SchemaView::new(self.db.clone(), self.txn.clone())
    }

    /// The table `name` as this session sees it, or `TableNotFound`.
    pub(crate) fn table_def(&self, name: &str) -> Result<Arc<rowdex_catalog::TableDef>> {
        self.schema_view().require_table(name)
    }

    pub(crate) fn open_txn(&self) -> Option<Arc<SessionTxn>> {
        // The slot holds a plain handle: a panic elsewhere cannot leave it half-written.
        self.txn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the open transaction (None: ends it) and returns the previous one.
    pub(crate) fn swap_txn(&self, txn: Option<Arc<SessionTxn>>) -> Option<Arc<SessionTxn>> {
        std::mem::replace(
            &mut *self.txn.lock().unwrap_or_else(PoisonError::into_inner),
            txn,
        )
    }

    /// The DataFusion context of this session (rowdex tables in its default schema), for
    /// registering other data next to them.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The session's context for one statement, carrying to the table scans the statement's
    /// hints and the session's open transaction, when there are any.
    pub(crate) fn statement_context(&self, hints: &QueryHints) -> SessionContext {
        context_with(&self.ctx, hints, self.open_txn(), self.semantics)
    }

    /// The columns of `statement`'s result (`schema`) as this session names them: PostgreSQL's
    /// names in a session that follows PostgreSQL (see `sql::output_names`), else as they are.
    /// The integer columns of the tables `statement` reads, as this session sees them.
    fn integer_columns(&self, statement: &Statement) -> IntegerColumns {
        let schema = self.schema_view();
        IntegerColumns::of_query(statement, |name| schema.table(name))
    }

    pub(crate) fn name_schema(&self, statement: &Statement, schema: &SchemaRef) -> SchemaRef {
        if self.semantics != Semantics::PostgreSql {
            return schema.clone();
        }
        match postgres_columns(statement, schema, &self.integer_columns(statement)) {
            Some(columns) => renamed(schema, &columns),
            None => schema.clone(),
        }
    }

    /// A query's output with its columns named (and typed) by [`Session::name_schema`]. Each
    /// batch keeps its own column types (DataFusion may hand over `Utf8View` where the plan
    /// says `Utf8`).
    pub(crate) fn name_output(&self, statement: &Statement, output: Output) -> Result<Output> {
        let Output::Rows { schema, batches } = output else {
            return Ok(output);
        };
        let columns = match self.semantics {
            Semantics::PostgreSql => {
                postgres_columns(statement, &schema, &self.integer_columns(statement))
            }
            Semantics::Sqlite => None,
        };
        let Some(columns) = columns.filter(|columns| *renamed(&schema, columns) != *schema) else {
            return Ok(Output::Rows { schema, batches });
        };
        let batches = batches
            .into_iter()
            .map(|batch| {
                RecordBatch::try_new(renamed(&batch.schema(), &columns), batch.columns().to_vec())
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(Output::Rows {
            schema: renamed(&schema, &columns),
            batches,
        })
    }

    /// The native form of a query, when the session lets the native executor run it and it can.
    pub(crate) fn native_query(&self, query: &Query) -> Option<NativeSelect> {
        match self.executor {
            Executor::Auto => {
                let compiled = NativeSelect::compile(&self.schema_view(), query);
                if compiled.is_some() {
                    self.db.planning.compiled_natively();
                }
                compiled
            }
            Executor::DataFusion => None,
        }
    }
}
