//! [`Database`]: one store with its catalog, opened (on disk, in memory, or over any store)
//! and handed out as sessions, table providers and a schema for a program's own DataFusion
//! context.

use std::path::Path;
use std::sync::Arc;

use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::prelude::SessionContext;
use rowdex_catalog::{Catalog, RoleDef, TableDef, keyspace};
use rowdex_store::locks::LockMode;
use rowdex_store::{
    Durability, EtcdAddress, EtcdOptions, EtcdStore, FjallStore, KvStore, MemoryStore, StoreMetrics,
};

use crate::db::DbState;
use crate::db::clock::Clock;
use crate::db::family_storage::place_table;
use crate::db::planning::Planning;
use crate::db::schema_view::{SchemaView, TxnSlot};
use crate::db::sizes::{TableSizes, table_sizes};
use crate::db::ttl_expiry::TtlExpiry;
use crate::df::context::{RowdexSchema, new_context};
use crate::df::rules::OptimizerRules;
use crate::df::table::RowdexTable;
use crate::error::Result;
use crate::native::cache::QueryCache;
use crate::session::Session;
use crate::write::bulk::drop_unfinished_indexes;

/// What [`Database::metrics`] reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseMetrics {
    pub store: StoreMetrics,
    /// Row-lock requests that had to wait, since the database was opened.
    pub lock_waits: u64,
    /// Transactions a deadlock made its victim.
    pub deadlocks: u64,
}

/// An open rowdex database. Cheap to clone; every clone shares the same store and catalog.
#[derive(Clone, Debug)]
pub struct Database {
    inner: Arc<DbState>,
    /// Native queries compiled from SQL text, shared by every session.
    query_cache: Arc<QueryCache>,
    /// The optimizer rules every session's context is built with (checked at open).
    rules: OptimizerRules,
}

impl Database {
    /// Opens (or creates) a durable database in `dir`.
    pub async fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Database::open_with_durability(dir, Durability::default()).await
    }

    /// [`Database::open`] with `durability` for every commit whose tables and session ask for
    /// none of their own (`rowdex serve --durability`).
    pub async fn open_with_durability(
        dir: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Database> {
        let store = FjallStore::open(dir.as_ref(), durability)?;
        Database::with_store(Arc::new(store)).await
    }

    /// Opens (or creates) the database at `address`,
    /// `etcd://host:port[,host:port...][/name]`: rowdex on a replicated etcd cluster, shared
    /// by every rowdex process that opens the same address (see README, "Running on a
    /// cluster").
    pub async fn open_etcd(address: &str) -> Result<Database> {
        Database::open_etcd_with_options(address, EtcdOptions::default()).await
    }

    /// [`Database::open_etcd`] with the store's timeouts and the history it keeps chosen.
    pub async fn open_etcd_with_options(address: &str, options: EtcdOptions) -> Result<Database> {
        let address: EtcdAddress = address.parse()?;
        let store = EtcdStore::connect(&address, options).await?;
        Database::with_store(Arc::new(store)).await
    }

    /// A database that lives in memory and is gone when dropped.
    pub async fn open_memory() -> Result<Database> {
        Database::with_store(Arc::new(MemoryStore::new())).await
    }

    /// A database over any store implementation.
    pub async fn with_store(store: Arc<dyn KvStore>) -> Result<Database> {
        // A DataFusion whose rules rowdex works around have moved fails here, not silently.
        let rules = OptimizerRules::new()?;
        let catalog = Catalog::open(store.clone()).await?;
        let inner = Arc::new(DbState::new(store, catalog));
        drop_unfinished_indexes(&inner).await?;
        // Each table's prefixes where its options (storage attributes, a TTL's sweeps) say:
        // placed already but for a table from before placements, or a crash between an
        // ALTER's commit and its move.
        for def in inner.catalog.tables() {
            place_table(inner.store.as_ref(), &def, None).await?;
        }
        // Compactions drop the entries of tables with a TTL once expired (a store that
        // compacts; elsewhere PURGE gives their space back).
        inner
            .store
            .set_expiry_rules(Arc::new(TtlExpiry::new(&inner)));
        Ok(Database {
            inner,
            query_cache: Arc::default(),
            rules,
        })
    }

    /// Replaces the clock that TTLs are measured on (the system clock by default): a
    /// [`ManualClock`](crate::ManualClock) lets a test or a replay decide what time it is.
    pub fn set_clock(&self, clock: Arc<dyn Clock>) {
        self.inner.set_clock(clock);
    }

    /// Sets the bytes one sort or one set of buffered intersection inputs of a query may hold
    /// (64 MiB by default, `rowdex_planner::budget::MEMORY_BUDGET_BYTES`). Past it, a sort
    /// without a LIMIT is left to DataFusion's sort, which spills to disk, and an intersection
    /// input out of primary-key order filters the looked-up rows instead of being buffered.
    pub fn set_memory_budget(&self, bytes: usize) {
        self.inner.set_memory_budget(bytes);
    }

    /// Row keys this process's transactions hold or wait for a lock on right now (row locks
    /// of READ COMMITTED and REPEATABLE READ writers, released when each transaction ends).
    pub fn locked_row_keys(&self) -> usize {
        self.inner.locked_keys()
    }

    /// Every holder and waiter of a row lock in this process right now (what pg_locks
    /// shows): the table of the key, the mode, whether it is held, and the transaction and
    /// the label of its session ([`Session::set_lock_tag`](crate::Session::set_lock_tag)).
    pub fn row_locks(&self) -> Vec<RowLock> {
        let tables = self.inner.catalog.tables();
        let table_of = |key: &[u8]| -> Option<String> {
            let id = u32::from_be_bytes(key.get(1..5)?.try_into().ok()?);
            let found = match key.first()? {
                &keyspace::TABLE_DATA | &keyspace::FAMILY_DATA => {
                    tables.iter().find(|table| table.id == id)
                }
                &keyspace::INDEX_DATA => tables
                    .iter()
                    .find(|table| table.indexes.iter().any(|index| index.id == id)),
                _ => None,
            };
            found.map(|table| table.name.clone())
        };
        self.inner
            .lock_entries()
            .into_iter()
            .map(|entry| RowLock {
                table: table_of(&entry.key),
                key: entry.key,
                exclusive: entry.mode == LockMode::Exclusive,
                granted: entry.granted,
                transaction: entry.owner,
                tag: entry.tag,
            })
            .collect()
    }

    /// How many statements this database planned so far: DataFusion's plans and native
    /// compilations (a prepared statement plans once, then only binds and runs).
    pub fn planning(&self) -> Planning {
        self.inner.planning.counts()
    }

    /// A new connection: its own transaction, settings and warnings.
    pub fn session(&self) -> Session {
        let txn = TxnSlot::default();
        let schema = SchemaView::new(self.inner.clone(), txn.clone());
        Session::new(
            self.inner.clone(),
            new_context(&self.inner, schema, self.rules.clone(), None),
            self.query_cache.clone(),
            txn,
        )
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

    /// Every table's definition, indexes included, as the catalog holds it now (what a
    /// PostgreSQL-style `pg_catalog` is built from).
    pub fn table_defs(&self) -> Vec<Arc<TableDef>> {
        self.inner.catalog.tables()
    }

    /// Every view, with the query that defines it.
    pub fn views(&self) -> Vec<(String, String)> {
        let catalog = &self.inner.catalog;
        catalog
            .view_names()
            .into_iter()
            .filter_map(|name| catalog.view(&name).map(|sql| (name, sql)))
            .collect()
    }

    /// The role named `name` (who may log in to `rowdex serve`, with which password
    /// verifier), read from the store.
    pub async fn role(&self, name: &str) -> Result<Option<RoleDef>> {
        Ok(self.inner.catalog.role(name).await?)
    }

    /// What `table` and its indexes take in the store (see [`crate::db::sizes`]), or `None`
    /// when the store cannot tell (etcd).
    pub fn table_sizes(&self, table: &TableDef) -> Result<Option<TableSizes>> {
        table_sizes(self.inner.store.as_ref(), table)
    }

    /// What the whole database takes (on disk, or in memory), or `None` when the store cannot
    /// tell (etcd).
    pub fn database_size(&self) -> Result<Option<u64>> {
        Ok(self.inner.store.total_size()?)
    }

    /// What the store reports of itself (writes applied, memtable, compactions, cache), and
    /// the row-lock waits and deadlocks of this process, for monitoring.
    pub fn metrics(&self) -> DatabaseMetrics {
        let locks = self.inner.lock_counts();
        DatabaseMetrics {
            store: self.inner.store.metrics(),
            lock_waits: locks.waits,
            deadlocks: locks.deadlocks,
        }
    }

    /// Every role, by name.
    pub async fn roles(&self) -> Result<Vec<RoleDef>> {
        Ok(self.inner.catalog.roles().await?)
    }

    /// A DataFusion `TableProvider` for one table, to register in any `SessionContext`. Scans
    /// push filters, projections and limits down into rowdex's access paths; INSERT INTO
    /// writes through rowdex, indexes included. The table's row count is estimated here, so the
    /// provider's statistics carry it.
    pub async fn table_provider(&self, name: &str) -> Result<Arc<RowdexTable>> {
        let def = self.inner.table_def(name)?;
        self.inner
            .stats
            .rows(self.inner.store.as_ref(), &def)
            .await?;
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

    /// [`Database::flush`], and leaves the store so that the next open replays (almost)
    /// nothing: what SQL's `CHECKPOINT` does. Quick unless the journal has grown past
    /// `rowdex_store::JOURNAL_TRIM_MIN_BYTES` since the last one. Dropping the last handle to
    /// the database does the same without reporting errors, and without waiting more than
    /// two seconds for the store's background worker.
    pub async fn checkpoint(&self) -> Result<()> {
        Ok(self.inner.store.checkpoint().await?)
    }
}

/// A holder or waiter of one row lock ([`Database::row_locks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLock {
    /// The table whose row (or UNIQUE value) is locked, if it still exists.
    pub table: Option<String>,
    /// The locked key (a row key, or a UNIQUE index's value prefix).
    pub key: Vec<u8>,
    /// An exclusive lock (a write, FOR UPDATE) or a shared one (FOR SHARE).
    pub exclusive: bool,
    /// Held, or waited for.
    pub granted: bool,
    /// The transaction (unique within the process).
    pub transaction: u64,
    /// Its session's label, if it has one.
    pub tag: Option<i64>,
}
