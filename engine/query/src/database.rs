//! `Database` (one store and its catalog, shared) and `Session` (a connection that runs SQL).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::sqlparser::ast::Statement;
use rowdex_catalog::{Catalog, TableDef};
use rowdex_store::{Durability, FjallStore, KvStore, MemoryStore};

use crate::Result;
use crate::clock::{Clock, SystemClock};
use crate::native::cache::{CachedQuery, Lifted, QueryCache};
use crate::native::{Executor, NativeQuery};
use crate::prepared::Prepared;
use crate::provider::{RowdexSchema, RowdexTable};
use crate::statement::{ParsedStatement, parse_with_parameters, split_statements};
use crate::stats::TableStats;
use crate::txn::SessionTxn;

/// Shared state behind every session of one database.
pub struct DbInner {
    pub(crate) store: Arc<dyn KvStore>,
    pub(crate) catalog: Catalog,
    /// Next hidden row id per table id, loaded lazily from the table's last key.
    pub(crate) next_rowids: Mutex<HashMap<u32, i64>>,
    pub(crate) stats: TableStats,
    /// Native queries compiled from SQL text, keyed by the text with its literals lifted out.
    pub(crate) query_cache: QueryCache,
    /// What TTLs are measured on.
    clock: RwLock<Arc<dyn Clock>>,
}

impl DbInner {
    /// The clock's time, in microseconds since the epoch.
    pub(crate) fn now_micros(&self) -> i64 {
        self.clock
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .now_micros()
    }

    /// The definition of table `name`, or the error that names it.
    pub(crate) fn table_def(&self, name: &str) -> Result<Arc<TableDef>> {
        self.catalog
            .table(name)
            .ok_or_else(|| crate::Error::TableNotFound {
                table: name.to_string(),
            })
    }

    /// Where `def`'s rows expire now (see `TableDef::expiry_cutoff`): read once per statement,
    /// so that every row of it is judged at the same instant.
    pub(crate) fn expiry_cutoff(&self, def: &TableDef) -> Option<i64> {
        def.ttl_seconds?;
        def.expiry_cutoff(self.now_micros())
    }
}

impl std::fmt::Debug for DbInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbInner")
            .field("tables", &self.catalog.tables().len())
            .finish_non_exhaustive()
    }
}

/// An open rowdex database. Cheap to clone; every clone shares the same store and catalog.
#[derive(Clone, Debug)]
pub struct Database {
    inner: Arc<DbInner>,
}

impl Database {
    /// Opens (or creates) a durable database in `dir`.
    pub async fn open(dir: impl AsRef<Path>) -> Result<Database> {
        let store = FjallStore::open(dir.as_ref(), Durability::default())?;
        Database::with_store(Arc::new(store)).await
    }

    /// A database that lives in memory and is gone when dropped.
    pub async fn open_memory() -> Result<Database> {
        Database::with_store(Arc::new(MemoryStore::new())).await
    }

    /// A database over any store implementation.
    pub async fn with_store(store: Arc<dyn KvStore>) -> Result<Database> {
        let catalog = Catalog::open(store.clone()).await?;
        let inner = DbInner {
            store,
            catalog,
            next_rowids: Mutex::new(HashMap::new()),
            stats: TableStats::default(),
            query_cache: QueryCache::default(),
            clock: RwLock::new(Arc::new(SystemClock)),
        };
        crate::indexes::drop_unfinished_indexes(&inner).await?;
        Ok(Database {
            inner: Arc::new(inner),
        })
    }

    /// Replaces the clock that TTLs are measured on (the system clock by default): a
    /// [`crate::ManualClock`] lets a test or a replay decide what time it is.
    pub fn set_clock(&self, clock: Arc<dyn Clock>) {
        *self
            .inner
            .clock
            .write()
            .unwrap_or_else(PoisonError::into_inner) = clock;
    }

    pub fn session(&self) -> Session {
        Session {
            ctx: new_context(&self.inner, None),
            db: self.inner.clone(),
            progress: None,
            executor: Executor::Auto,
            txn: Arc::default(),
            warnings: Arc::default(),
        }
    }

    /// Names of all tables.
    pub fn table_names(&self) -> Vec<String> {
        self.inner
            .catalog
            .tables()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// A DataFusion `TableProvider` for one table, to register in any `SessionContext`. Scans
    /// push filters, projections and limits down into rowdex's access paths; INSERT INTO
    /// writes through rowdex, indexes included. The table's row count is estimated here, so the
    /// provider's statistics carry it.
    pub async fn table_provider(&self, name: &str) -> Result<Arc<RowdexTable>> {
        let def = self.inner.table_def(name)?;
        let snapshot = self.inner.store.snapshot();
        self.inner.stats.rows(&def, snapshot.as_ref()).await?;
        Ok(Arc::new(RowdexTable::new(def, self.inner.clone(), false)))
    }

    /// A DataFusion `SchemaProvider` that resolves every rowdex table and view by name, live:
    /// tables created later are visible through it too.
    pub fn schema_provider(&self) -> Arc<RowdexSchema> {
        Arc::new(RowdexSchema::new(self.inner.clone(), None))
    }

    /// Registers this database in `ctx` as catalog `catalog` with the schema `public`, so that
    /// `SELECT ... FROM <catalog>.public.t` (or `t`, when it is the default catalog) reads it.
    pub fn register_catalog(&self, ctx: &SessionContext, catalog: &str) -> Result<()> {
        let provider = MemoryCatalogProvider::new();
        provider.register_schema("public", self.schema_provider())?;
        ctx.register_catalog(catalog, Arc::new(provider));
        Ok(())
    }

    /// Makes every acknowledged write durable on disk now (see the store's durability modes).
    pub async fn flush(&self) -> Result<()> {
        Ok(self.inner.store.flush().await?)
    }
}

/// What one statement produced.
#[derive(Debug)]
pub enum Output {
    /// A result set.
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// Rows written by INSERT, UPDATE, DELETE or UPSERT.
    Affected { rows: u64 },
    /// A DDL statement finished.
    Done,
}

impl Output {
    /// The number of rows in a result set (0 for other outputs).
    pub fn row_count(&self) -> usize {
        match self {
            Output::Rows { batches, .. } => batches.iter().map(RecordBatch::num_rows).sum(),
            _ => 0,
        }
    }
}

/// A connection: runs SQL against the database. A clone is a handle to the same connection
/// (its open transaction included) whose settings can be changed apart;
/// [`Database::session`] opens another connection.
#[derive(Clone)]
pub struct Session {
    pub(crate) db: Arc<DbInner>,
    pub(crate) ctx: SessionContext,
    pub(crate) progress: Option<ProgressFn>,
    pub(crate) executor: Executor,
    /// The transaction BEGIN opened, until COMMIT or ROLLBACK.
    txn: Arc<Mutex<Option<Arc<SessionTxn>>>>,
    /// What the last statement warned about (the row-key advisor's findings).
    warnings: Arc<Mutex<Vec<String>>>,
}

/// Called during long operations (an index build, a COPY load) with (what, done, total
/// estimate); `what` names the unit counted.
pub type ProgressFn = Arc<dyn Fn(&str, u64, u64) + Send + Sync>;

impl Session {
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
    }

    /// Whether a transaction is open (BEGIN ran, COMMIT or ROLLBACK has not).
    pub fn in_transaction(&self) -> bool {
        self.open_txn().is_some()
    }

    /// The open transaction, which every statement of the session reads and writes through.
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

    /// Parses `sql`, one statement with parameters (`$1`, `$2`, ... or `?`), for running many
    /// times with different values. A query the native executor runs keeps its compiled form,
    /// so running it again costs no parsing or planning.
    pub fn prepare(&self, sql: &str) -> Result<Prepared> {
        Prepared::new(self.clone(), sql)
    }

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

    /// Runs `sql` through the compiled-query cache when it is one native query: compiled on
    /// the first run of its text (literals aside), bound and run after that. None leaves the
    /// text to the normal path.
    async fn run_cached(&self, sql: &str) -> Result<Option<Output>> {
        if self.executor != Executor::Auto {
            return Ok(None);
        }
        let Some(lifted) = Lifted::from_sql(sql) else {
            return Ok(None);
        };
        let entry = match self.db.query_cache.get(&lifted.key) {
            Some(entry) if entry.query.is_current(&self.db) => entry,
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
                let Some(query) = NativeQuery::compile(&self.db, query) else {
                    return Ok(None);
                };
                let entry = Arc::new(CachedQuery { query, hints });
                self.db.query_cache.insert(lifted.key, entry.clone());
                entry
            }
        };
        let txn = self.open_txn();
        crate::native::run(
            &self.db,
            txn.as_ref(),
            &entry.query,
            &lifted.literals,
            &entry.hints,
        )
        .await
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
                let ctx = crate::execute::statement_context(self, &hints);
                let plan = crate::execute::plan_statement(&ctx, *statement).await?;
                return Ok(ctx
                    .execute_logical_plan(plan)
                    .await?
                    .execute_stream()
                    .await?);
            }
            (other, _) => other,
        };
        Err(crate::Error::Unsupported {
            what: format!(
                "streaming anything but one query ({})",
                statement.map_or_else(|| "nothing".to_string(), |s| s.to_string())
            ),
        })
    }

    /// Runs a SELECT one page at a time: at most `page_size` rows, after the position `cursor`
    /// (from the previous page's [`crate::Page::next`]) when given. Each page resumes the scan
    /// right after the last key the previous one returned, so no key is read twice and rows
    /// written between pages never shift a page (unlike OFFSET). The query must read one table
    /// in the order of its key or of one index (no LIMIT or OFFSET of its own).
    pub async fn query_page(
        &self,
        sql: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<crate::Page> {
        crate::native::paging::query_page(self, sql, page_size, cursor).await
    }

    /// Splits a script into statements without running them (for clients that report each).
    pub fn split(&self, sql: &str) -> Result<Vec<ParsedStatement>> {
        split_statements(sql)
    }

    /// The DataFusion context of this session (rowdex tables in its default schema), for
    /// registering other data next to them.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Runs one statement.
    pub async fn run(&self, statement: &ParsedStatement) -> Result<Output> {
        crate::execute::run_statement(self, statement).await
    }
}

/// A DataFusion context whose default schema is the rowdex catalog.
pub(crate) fn new_context(db: &Arc<DbInner>, expose_hidden: Option<String>) -> SessionContext {
    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema("rowdex", "public")
        .with_information_schema(false)
        .with_target_partitions(1);
    // SQL as in SQLite: NULL is the smallest value, which is also how keys sort.
    config.options_mut().sql_parser.default_null_ordering = "nulls_min".to_string();
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_query_planner(Arc::new(crate::subquery::RowdexQueryPlanner))
        .with_optimizer_rules(crate::predicate_subquery::logical_optimizer_rules())
        .with_physical_optimizer_rules(crate::filter_projection::physical_optimizer_rules())
        .build();
    let ctx = SessionContext::new_with_state(state);
    let catalog = MemoryCatalogProvider::new();
    // Registering into a fresh in-memory catalog cannot fail.
    let _ = catalog.register_schema(
        "public",
        Arc::new(RowdexSchema::new(db.clone(), expose_hidden)),
    );
    ctx.register_catalog("rowdex", Arc::new(catalog));
    crate::history::register(&ctx, db);
    ctx
}
