//! The state every session of one database shares ([`DbState`]): the store, the catalog, the
//! row-count estimates ([`stats`]), the next hidden row ids, and the clock TTLs are measured on
//! ([`clock`]); the transactions sessions and statements read and write through ([`txn`]), and
//! the catalog as a session sees it, its own uncommitted schema changes included ([`schema_view`]);
//! what tables and indexes take in the store ([`sizes`]); what a statement did beyond its result
//! ([`statement_report`]).

pub(crate) mod analyze;
pub(crate) mod block_sequences;
pub(crate) mod characteristics;
pub(crate) mod clock;
pub(crate) mod commit_durability;
pub(crate) mod dives;
pub(crate) mod family_storage;
pub(crate) mod planning;
pub(crate) mod row_locks;
pub(crate) mod schema_view;
pub(crate) mod sequences;
pub(crate) mod sizes;
pub(crate) mod statement_report;
pub(crate) mod statement_stop;
pub(crate) mod stats;
pub(crate) mod ttl_expiry;
pub(crate) mod txn;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rowdex_catalog::{Catalog, TableDef};
use rowdex_planner::budget::MEMORY_BUDGET_BYTES;
use rowdex_store::KvStore;
use rowdex_store::locks::LockTable;

use crate::db::clock::{Clock, SystemClock};
use crate::db::planning::PlanCounter;
use crate::db::row_locks::RowLocks;
use crate::db::sequences::SequenceRanges;
use crate::db::stats::TableStats;
use crate::error::{Error, Result};

/// What every session of one database shares.
pub struct DbState {
    pub(crate) store: Arc<dyn KvStore>,
    pub(crate) catalog: Catalog,
    /// Next hidden row id per table id, loaded lazily from the table's last key.
    pub(crate) next_rowids: Mutex<HashMap<u32, i64>>,
    /// On a shared store: per table, the block of hidden row ids taken and not used yet,
    /// `(next, end)` (see `write::rowids`).
    pub(crate) rowid_blocks: Mutex<HashMap<u32, (i64, i64)>>,
    pub(crate) stats: TableStats,
    /// The ranges of sequence values this process took and has not handed out.
    pub(crate) sequences: SequenceRanges,
    /// How many statements were planned (`db::planning`).
    pub(crate) planning: Arc<PlanCounter>,
    /// What TTLs are measured on.
    clock: RwLock<Arc<dyn Clock>>,
    /// Bytes one sort or one set of buffered intersection inputs may hold (see
    /// `rowdex_planner::budget`).
    memory_budget: AtomicUsize,
    /// The row locks of this process's transactions (see `db::row_locks`).
    locks: Arc<LockTable>,
    /// The id the next transaction holds its locks under.
    next_lock_owner: AtomicU64,
}

impl DbState {
    /// The state of a database whose catalog has been loaded from `store`.
    pub(crate) fn new(store: Arc<dyn KvStore>, catalog: Catalog) -> DbState {
        DbState {
            locks: Arc::new(match store.cluster_locks() {
                Some(cluster) => LockTable::with_cluster(cluster),
                None => LockTable::new(),
            }),
            store,
            catalog,
            next_rowids: Mutex::new(HashMap::new()),
            rowid_blocks: Mutex::new(HashMap::new()),
            stats: TableStats::default(),
            sequences: SequenceRanges::default(),
            planning: Arc::default(),
            clock: RwLock::new(Arc::new(SystemClock)),
            memory_budget: AtomicUsize::new(MEMORY_BUDGET_BYTES),
            next_lock_owner: AtomicU64::new(1),
        }
    }

    /// A new transaction's place in the lock table, labelled `tag` (its session's backend
    /// pid, for pg_locks).
    pub(crate) fn row_locks(&self, tag: Option<i64>) -> RowLocks {
        let owner = self.next_lock_owner.fetch_add(1, Ordering::Relaxed);
        RowLocks::new(Arc::clone(&self.locks), owner, tag)
    }

    /// Row-lock requests that waited, and deadlock victims, in this process so far.
    pub(crate) fn lock_counts(&self) -> rowdex_store::locks::LockCounts {
        self.locks.counts()
    }

    /// Every holder and waiter of a row lock in this process right now.
    pub(crate) fn lock_entries(&self) -> Vec<rowdex_store::locks::LockEntry> {
        self.locks.entries()
    }

    /// Row keys locked by this process's transactions right now (held or waited for).
    pub(crate) fn locked_keys(&self) -> usize {
        self.locks.locked_keys()
    }

    /// Bytes one sort or one set of buffered intersection inputs may hold.
    pub(crate) fn memory_budget(&self) -> usize {
        self.memory_budget.load(Ordering::Relaxed)
    }

    pub(crate) fn set_memory_budget(&self, bytes: usize) {
        self.memory_budget.store(bytes, Ordering::Relaxed);
    }

    /// The clock's time, in microseconds since the epoch.
    pub(crate) fn now_micros(&self) -> i64 {
        self.clock
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .now_micros()
    }

    /// Replaces the clock TTLs are measured on.
    pub(crate) fn set_clock(&self, clock: Arc<dyn Clock>) {
        *self.clock.write().unwrap_or_else(PoisonError::into_inner) = clock;
    }

    /// The definition of table `name`, or the error that names it.
    pub(crate) fn table_def(&self, name: &str) -> Result<Arc<TableDef>> {
        self.catalog
            .table(name)
            .ok_or_else(|| Error::TableNotFound {
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

impl std::fmt::Debug for DbState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbState")
            .field("tables", &self.catalog.tables().len())
            .finish_non_exhaustive()
    }
}
