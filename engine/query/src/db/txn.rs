//! Multi-statement transactions of a session: BEGIN, COMMIT, ROLLBACK and savepoints.
//!
//! A session transaction is one optimistic store transaction held open across statements.
//! Every read of the session goes through it (its snapshot, overlaid with its own writes) and
//! every write statement buffers into it; nothing reaches the store before COMMIT, which checks
//! that nothing the transaction read was changed by a concurrent commit and then applies all
//! of its writes in one atomic batch. Each statement runs inside a savepoint of its own, so a
//! failing statement is undone alone and the transaction goes on, as in SQLite.
//!
//! Isolation (`db::characteristics`): a SERIALIZABLE transaction validates every read at
//! COMMIT. Under READ COMMITTED and REPEATABLE READ only the writer's own reads are validated
//! (the rows it changes, read after locking them, the keys whose absence an insert relies on,
//! the table's schema version: `GuardedTxn`), and the rows an UPDATE or DELETE finds are
//! locked ([`SessionTxn::lock_rows_for_write`]) so that a second writer waits for the first
//! instead of aborting. READ COMMITTED reads each statement from a fresh snapshot; a locked
//! row found changed since the statement's snapshot makes the statement find its rows again
//! (on a fresh snapshot, the rows it locked staying locked), where REPEATABLE READ and
//! SERIALIZABLE fail with a serialization failure.
//!
//! Schema changes made in the block are written into the same store transaction, and what
//! they change in the catalog is kept as the transaction's [`CatalogEdits`]: the session's own
//! statements see the catalog through them, other sessions see it as committed, COMMIT
//! publishes them and ROLLBACK (or a rollback to a savepoint taken before) forgets them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use datafusion::prelude::SessionConfig;
use rowdex_catalog::CatalogEdits;
use rowdex_store::locks::LockWait;
use rowdex_store::{
    Direction, KeyRange, KvRead, KvStore, Savepoint, ScanPage, StoreError, Transaction, Validation,
};
use tokio::sync::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};

use crate::db::DbState;
use crate::db::characteristics::Characteristics;
use crate::db::commit_durability;
use crate::db::row_locks::RowLocks;
use crate::db::statement_stop::StatementStop;
use crate::error::{Error, Result};

mod row_locking;

/// The open transaction of a session. Shared by the session and by the scans of its
/// statements (as a DataFusion config extension), which read through it.
pub(crate) struct SessionTxn {
    // Reads need `&` access to the transaction across awaits while writes need `&mut`; an
    // async lock lets both happen from any task without blocking a runtime thread.
    state: RwLock<Option<Open>>,
    /// Its isolation level and access mode (BEGIN's modes, then SET TRANSACTION's).
    characteristics: Mutex<Characteristics>,
    /// Whether a statement has buffered a write into it (kept after a rollback to a savepoint:
    /// it only ever errs towards "written").
    written: AtomicBool,
    /// The catalog changes its statements staged, published at COMMIT. A plain lock: read
    /// (never across an await) by every table lookup of the session.
    catalog: Mutex<CatalogEdits>,
    /// Whether a statement has run in it (its isolation level is then fixed).
    started: AtomicBool,
    /// The row locks it holds, released when it ends.
    locks: RowLocks,
    /// How the statement running in it waits for a row lock (see `row_locking`).
    statement_waits: Mutex<StatementWaits>,
}

struct Open {
    tx: Box<dyn Transaction>,
    /// Named savepoints (SAVEPOINT name), oldest first.
    savepoints: Vec<(String, Savepoint)>,
    /// Rows added minus rows removed per table id: written with the transaction's commit (see
    /// `stats`), and added to the row counts once committed.
    row_deltas: HashMap<u32, i64>,
    /// `row_deltas` and the catalog edits as they were at each savepoint still held, to
    /// restore on a rollback to it.
    marks: Vec<Mark>,
}

struct Mark {
    savepoint: Savepoint,
    row_deltas: HashMap<u32, i64>,
    catalog: CatalogEdits,
}

impl Open {
    fn savepoint(&mut self, catalog: &Mutex<CatalogEdits>) -> Savepoint {
        let savepoint = self.tx.savepoint();
        self.marks.push(Mark {
            savepoint,
            row_deltas: self.row_deltas.clone(),
            catalog: lock(catalog).clone(),
        });
        savepoint
    }

    fn rollback_to(&mut self, savepoint: Savepoint, catalog: &Mutex<CatalogEdits>) {
        self.tx.rollback_to(savepoint);
        if let Some(mark) = self.marks.iter().find(|m| m.savepoint == savepoint) {
            self.row_deltas = mark.row_deltas.clone();
            *lock(catalog) = mark.catalog.clone();
        }
    }

    fn release(&mut self, savepoint: Savepoint) {
        self.tx.release(savepoint);
        if let Some(position) = self.marks.iter().position(|m| m.savepoint == savepoint) {
            self.marks.truncate(position);
        }
    }
}

fn lock(catalog: &Mutex<CatalogEdits>) -> MutexGuard<'_, CatalogEdits> {
    catalog.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How the statement running in a transaction waits for a row lock: its `lock_timeout` and
/// its other limits, set when it starts (an INSERT deep in the write path reads them here).
#[derive(Debug, Default)]
pub(crate) struct StatementWaits {
    wait: Option<LockWait>,
    stop: Option<StatementStop>,
}

impl std::fmt::Debug for SessionTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTxn").finish_non_exhaustive()
    }
}

impl SessionTxn {
    /// Opens a transaction with `characteristics` on `db`'s store.
    /// `tag` labels its row locks (the session's backend pid, for pg_locks).
    pub(crate) async fn begin(
        db: &DbState,
        characteristics: Characteristics,
        tag: Option<i64>,
    ) -> Result<Arc<SessionTxn>> {
        let mut tx = db.store.begin().await?;
        tx.set_validation(characteristics.isolation.validation());
        Ok(Arc::new(SessionTxn {
            state: RwLock::new(Some(Open {
                tx,
                savepoints: Vec::new(),
                row_deltas: HashMap::new(),
                marks: Vec::new(),
            })),
            characteristics: Mutex::new(characteristics),
            written: AtomicBool::new(false),
            catalog: Mutex::new(CatalogEdits::default()),
            started: AtomicBool::new(false),
            locks: db.row_locks(tag),
            statement_waits: Mutex::default(),
        }))
    }

    /// Whether a statement (other than transaction control) has run in the transaction.
    pub(crate) fn has_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// The transaction's isolation level and access mode.
    pub(crate) fn characteristics(&self) -> Characteristics {
        *self
            .characteristics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_characteristics(&self, characteristics: Characteristics) {
        *self
            .characteristics
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = characteristics;
    }

    /// Whether any statement has written into the transaction.
    pub(crate) fn has_written(&self) -> bool {
        self.written.load(Ordering::Acquire)
    }

    /// Calls `read` with the catalog changes staged in the transaction (None when there are
    /// none): what the session's lookups overlay on the committed catalog.
    pub(crate) fn with_catalog<R>(&self, read: impl FnOnce(Option<&CatalogEdits>) -> R) -> R {
        let edits = lock(&self.catalog);
        read(Some(&*edits).filter(|edits| !edits.is_empty()))
    }

    /// The catalog changes staged so far, for a schema change to add to
    /// ([`SessionTxn::set_catalog`]).
    pub(crate) fn catalog(&self) -> CatalogEdits {
        lock(&self.catalog).clone()
    }

    /// Replaces the staged catalog changes with `edits` (those of [`SessionTxn::catalog`]
    /// and a schema change's own).
    pub(crate) fn set_catalog(&self, edits: CatalogEdits) {
        *lock(&self.catalog) = edits;
    }

    /// The store transaction itself, for a schema change to stage its catalog writes in (and
    /// read through). Counts as a write. Held, it blocks the transaction's reads: drop it
    /// before reading through the [`SessionTxn`].
    pub(crate) async fn store_tx(
        &self,
    ) -> Result<RwLockMappedWriteGuard<'_, Box<dyn Transaction>>> {
        let mut state = self.state.write().await;
        self.written.store(true, Ordering::Release);
        // A schema change relies on everything it reads (the version keys, the rows an index
        // build scans): validated whatever the isolation level, until the next statement.
        if let Some(open) = state.as_mut() {
            open.tx.set_validation(Validation::EveryRead);
        }
        RwLockWriteGuard::try_map(state, |state| state.as_mut().map(|open| &mut open.tx))
            .map_err(|_| Error::Store(StoreError::TransactionEnded))
    }

    /// Marks where the next statement starts, to undo it alone if it fails. Under READ
    /// COMMITTED the statement reads from a fresh snapshot.
    pub(crate) async fn statement_start(&self) -> Result<Savepoint> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        let isolation = self.characteristics().isolation;
        open.tx.set_validation(isolation.validation());
        if isolation.reads_per_statement() {
            open.tx.refresh();
        }
        self.started.store(true, Ordering::Release);
        Ok(open.savepoint(&self.catalog))
    }

    /// Marks the start of a query run outside [`SessionTxn::statement_start`] (a cached or
    /// prepared native query, a page of a cursor): under READ COMMITTED it reads from a fresh
    /// snapshot.
    pub(crate) async fn query_start(&self) -> Result<()> {
        let isolation = self.characteristics().isolation;
        if isolation.reads_per_statement() {
            let mut state = self.state.write().await;
            let open = open(&mut state)?;
            open.tx.set_validation(isolation.validation());
            open.tx.refresh();
        }
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// Keeps (`succeeded`) or undoes the statement that started at `savepoint`.
    pub(crate) async fn statement_end(&self, savepoint: Savepoint, succeeded: bool) -> Result<()> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        if !succeeded {
            open.rollback_to(savepoint, &self.catalog);
        }
        open.release(savepoint);
        Ok(())
    }

    /// Starts the transaction over on a fresh snapshot of `store`, keeping its characteristics
    /// and its savepoints' names, once a schema change committed inside it: its later reads
    /// must see what the change committed (the rows an index build wrote, say). Only a
    /// transaction that has written nothing may: what it read before is then not validated at
    /// COMMIT, as if the schema change had ended a read-only transaction and begun another.
    pub(crate) async fn renew(&self, store: &dyn KvStore) -> Result<()> {
        if self.has_written() {
            return Err(Error::NotInTransaction {
                statement: "a schema change after a write".into(),
            });
        }
        let mut tx = store.begin().await?;
        tx.set_validation(self.characteristics().isolation.validation());
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        let savepoints: Vec<(String, Savepoint)> = open
            .savepoints
            .iter()
            .map(|(name, _)| (name.clone(), tx.savepoint()))
            .collect();
        let marks = savepoints
            .iter()
            .map(|(_, savepoint)| Mark {
                savepoint: *savepoint,
                row_deltas: HashMap::new(),
                catalog: CatalogEdits::default(),
            })
            .collect();
        *open = Open {
            tx,
            savepoints,
            row_deltas: HashMap::new(),
            marks,
        };
        Ok(())
    }

    /// Buffers a statement's row and index changes: every delete before any put (see
    /// `RowWriter::apply`).
    pub(crate) async fn apply(
        &self,
        deletes: impl Iterator<Item = Vec<u8>>,
        puts: impl Iterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> Result<()> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        self.written.store(true, Ordering::Release);
        for key in deletes {
            open.tx.delete(key);
        }
        for (key, value) in puts {
            open.tx.put(key, value);
        }
        Ok(())
    }

    /// Counts a statement's row changes, written and published to the row counts at commit.
    pub(crate) async fn add_rows(&self, table: u32, delta: i64) -> Result<()> {
        let mut state = self.state.write().await;
        *open(&mut state)?.row_deltas.entry(table).or_default() += delta;
        Ok(())
    }

    /// SAVEPOINT name: a later savepoint of the same name hides the earlier one, as in SQL.
    pub(crate) async fn savepoint(&self, name: String) -> Result<()> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        let savepoint = open.savepoint(&self.catalog);
        open.savepoints.push((name, savepoint));
        Ok(())
    }

    /// ROLLBACK TO SAVEPOINT name: undoes everything since, keeps the savepoint and forgets
    /// the ones taken after it.
    pub(crate) async fn rollback_to(&self, name: &str) -> Result<()> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        let position = find_savepoint(&open.savepoints, name)?;
        let savepoint = open.savepoints[position].1;
        open.savepoints.truncate(position + 1);
        open.rollback_to(savepoint, &self.catalog);
        Ok(())
    }

    /// RELEASE SAVEPOINT name: forgets it and every savepoint after it; the writes stay.
    pub(crate) async fn release(&self, name: &str) -> Result<()> {
        let mut state = self.state.write().await;
        let open = open(&mut state)?;
        let position = find_savepoint(&open.savepoints, name)?;
        let savepoint = open.savepoints[position].1;
        open.savepoints.truncate(position);
        open.release(savepoint);
        Ok(())
    }

    /// A table the transaction writes asks for `asked` (see `commit_durability`).
    pub(crate) async fn ask_durability(&self, asked: rowdex_store::Durability) -> Result<()> {
        let mut state = self.state.write().await;
        commit_durability::ask(open(&mut state)?.tx.as_mut(), asked);
        Ok(())
    }

    /// COMMIT: validates what the transaction read and applies its writes atomically, then
    /// publishes its catalog changes, which it returns (the caller deletes what they dropped).
    /// On a conflict nothing is written and the transaction is over all the same.
    pub(crate) async fn commit(&self, db: &DbState) -> Result<CatalogEdits> {
        let Some(mut open) = self.state.write().await.take() else {
            return Err(Error::NoTransaction);
        };
        for (table, delta) in &open.row_deltas {
            if let Some((key, value)) = db.stats.delta_entry(*table, *delta) {
                open.tx.put(key, value);
            }
        }
        commit_durability::at_commit(open.tx.as_mut());
        let committed = open.tx.commit().await;
        // Applied (or refused): the rows it locked are free for the next writer.
        self.locks.release_all();
        match committed {
            Ok(()) => {
                let edits = std::mem::take(&mut *lock(&self.catalog));
                db.catalog.publish(&edits).await;
                for (table, delta) in open.row_deltas {
                    db.stats.committed(db.store.as_ref(), table, delta).await;
                }
                Ok(edits)
            }
            Err(StoreError::Conflict) => Err(Error::TransactionConflict),
            Err(other) => Err(other.into()),
        }
    }

    /// ROLLBACK: discards every buffered write and staged catalog change.
    pub(crate) async fn rollback(&self) {
        self.state.write().await.take();
        *lock(&self.catalog) = CatalogEdits::default();
        self.locks.release_all();
    }
}

/// The transaction an UPDATE or DELETE runs in: the session's open one, or else one of the
/// statement's own, committed when it ends. The statement selects its rows through it, so a
/// commit by another session that changes a selected row after the selection (and before the
/// statement's commit) is a conflict, not an update lost.
pub(crate) struct StatementTxn {
    pub(crate) txn: Arc<SessionTxn>,
    /// Whether the statement owns the transaction (no session transaction is open).
    own: bool,
}

impl StatementTxn {
    /// The session's transaction `session_txn`, or else one of the statement's own with the
    /// session's `characteristics`.
    pub(crate) async fn begin(
        db: &DbState,
        session_txn: Option<Arc<SessionTxn>>,
        characteristics: Characteristics,
        tag: Option<i64>,
    ) -> Result<Self> {
        Ok(match session_txn {
            Some(txn) => StatementTxn { txn, own: false },
            None => StatementTxn {
                txn: SessionTxn::begin(db, characteristics, tag).await?,
                own: true,
            },
        })
    }

    /// Commits the statement's own transaction; a session transaction goes on.
    pub(crate) async fn finish(self, db: &DbState) -> Result<()> {
        if !self.own {
            return Ok(());
        }
        match self.txn.commit(db).await {
            // The statement alone is retried (see `Session::run` in `execute`).
            Err(Error::TransactionConflict) => Err(Error::WriteConflict),
            Err(other) => Err(other),
            Ok(_) => Ok(()),
        }
    }
}

/// A session transaction's reads that its COMMIT validates at every isolation level (see
/// [`Transaction::guarded`]): what a writer reads of the rows it changes.
pub(crate) struct GuardedTxn {
    pub(crate) txn: Arc<SessionTxn>,
}

#[async_trait::async_trait]
impl KvRead for GuardedTxn {
    async fn get(&self, key: &[u8]) -> rowdex_store::Result<Option<Vec<u8>>> {
        let state = self.txn.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.guarded().get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> rowdex_store::Result<Vec<Option<Vec<u8>>>> {
        let state = self.txn.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.guarded().multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> rowdex_store::Result<ScanPage> {
        let state = self.txn.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.guarded().scan_page(range, direction, limit).await
    }
}

fn open(state: &mut Option<Open>) -> Result<&mut Open> {
    state
        .as_mut()
        .ok_or(Error::Store(StoreError::TransactionEnded))
}

fn find_savepoint(savepoints: &[(String, Savepoint)], name: &str) -> Result<usize> {
    savepoints
        .iter()
        .rposition(|(n, _)| n == name)
        .ok_or_else(|| Error::NoSuchSavepoint {
            name: name.to_string(),
        })
}

#[async_trait::async_trait]
impl KvRead for SessionTxn {
    async fn get(&self, key: &[u8]) -> rowdex_store::Result<Option<Vec<u8>>> {
        let state = self.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> rowdex_store::Result<Vec<Option<Vec<u8>>>> {
        let state = self.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> rowdex_store::Result<ScanPage> {
        let state = self.state.read().await;
        let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
        open.tx.scan_page(range, direction, limit).await
    }
}

/// One view of the store for every scan of a statement run outside a transaction (the two
/// sides of a join, a subquery's table, the partitions of each): opened by the first scan
/// executed and shared by the others, so that the statement sees one committed state rather
/// than one per scan. Set per statement as a DataFusion config extension.
#[derive(Default)]
pub(crate) struct StatementSnapshot {
    view: OnceLock<Arc<dyn KvRead>>,
}

tokio::task_local! {
    /// On a store other processes write too: the snapshot a query's catalog check read
    /// through (`Catalog::refresh`), which the query then reads as well, so that it pays one
    /// linearizable read rather than two. Set for queries only: a statement that writes and
    /// then reads again must see its own writes.
    static QUERY_VIEW: Arc<dyn KvRead>;
}

/// Runs `query` with `view` (from `Catalog::refresh`) as the snapshot its reads start from.
pub(crate) async fn with_query_view<F: std::future::Future>(
    view: Option<Arc<dyn KvRead>>,
    query: F,
) -> F::Output {
    match view {
        Some(view) => QUERY_VIEW.scope(view, query).await,
        None => query.await,
    }
}

/// A fresh snapshot of `store`, or the query's view when one is set (see [`QUERY_VIEW`]).
fn fresh_view(store: &dyn KvStore) -> Arc<dyn KvRead> {
    QUERY_VIEW
        .try_with(Arc::clone)
        .unwrap_or_else(|_| store.snapshot())
}

/// The view a scan of a DataFusion-run statement reads, from its config: the session's
/// transaction, else the statement's snapshot, else (a table used outside rowdex's sessions)
/// a snapshot of its own.
pub(crate) fn scan_view(config: &SessionConfig, store: &dyn KvStore) -> Arc<dyn KvRead> {
    if let Some(txn) = config.get_extension::<SessionTxn>() {
        return txn;
    }
    match config.get_extension::<StatementSnapshot>() {
        Some(statement) => statement.view.get_or_init(|| fresh_view(store)).clone(),
        None => store.snapshot(),
    }
}

/// What a statement reads: the session's open transaction, or else a fresh snapshot of the
/// store (the latest committed state).
pub(crate) fn read_view(db: &DbState, txn: Option<&Arc<SessionTxn>>) -> Arc<dyn KvRead> {
    match txn {
        Some(txn) => txn.clone(),
        None => fresh_view(db.store.as_ref()),
    }
}
