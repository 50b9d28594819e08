//! A transaction's row locks: taking them (`lock_row_keys`), checking the locked rows against
//! the statement's snapshot (`check_locked_rows`), and the two together for an UPDATE or
//! DELETE (`lock_rows_for_write`) and an INSERT (`lock_keys_for_insert`: the new rows' keys
//! and UNIQUE values). `SELECT ... FOR UPDATE/SHARE` uses the first two itself.

use std::sync::PoisonError;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_indexer::layout;
use rowdex_store::StoreError;
use rowdex_store::locks::{LockMode, LockWait, Locked};

use super::{SessionTxn, StatementWaits, open};
use crate::db::characteristics::IsolationLevel;
use crate::db::row_locks::{MAX_LOCKED_ROWS, RowsLocked};
use crate::db::statement_stop::StatementStop;
use crate::error::{Error, Result};

impl SessionTxn {
    /// Sets how the statement starting now waits for row locks.
    pub(crate) fn set_statement_waits(&self, wait: LockWait, stop: StatementStop) {
        *self
            .statement_waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = StatementWaits {
            wait: Some(wait),
            stop: Some(stop),
        };
    }

    /// Locks the keys an INSERT of `rows` into `def` writes (each row key, each UNIQUE
    /// index's value) before it looks for them, so that two transactions inserting one key
    /// queue instead of both finding it free: the second waits, and once the first commits,
    /// READ COMMITTED reads on from a fresh snapshot and finds the row (23505, DO NOTHING, or
    /// DO UPDATE of the row as committed); REPEATABLE READ fails with 40001. SERIALIZABLE, a
    /// table keyed by row ids (a fresh id is nobody else's), and a statement of more rows than
    /// `MAX_LOCKED_ROWS` lock nothing and rely on validation at COMMIT.
    ///
    /// `may_read_on` says whether the statement may go on from a fresh snapshot when one of
    /// its keys changed since it started: yes when it only checks whether the key is taken
    /// (a plain INSERT, DO NOTHING) or computes from the row it finds (DO UPDATE); not when it
    /// writes values read before over the row (OR REPLACE, UPSERT of a SELECT's rows), which
    /// then fails with 40001 (an autocommit statement runs again).
    pub(crate) async fn lock_keys_for_insert(
        &self,
        def: &TableDef,
        rows: &[Vec<Datum>],
        may_read_on: bool,
    ) -> Result<()> {
        let isolation = self.characteristics().isolation;
        if rows.is_empty()
            || isolation == IsolationLevel::Serializable
            || rows.len() > MAX_LOCKED_ROWS
            || def.rowid_column().is_some()
        {
            return Ok(());
        }
        let mut row_keys: Vec<Vec<u8>> = rows.iter().map(|row| def.row_key_of(row)).collect();
        row_keys.sort_unstable();
        row_keys.dedup();
        let unique_values: Vec<Vec<u8>> = def
            .indexes
            .iter()
            .flat_map(|index| {
                rows.iter()
                    .filter_map(|row| layout::unique_prefix(index, row))
            })
            .collect();
        let mut keys: Vec<Vec<u8>> = row_keys.iter().cloned().chain(unique_values).collect();
        keys.sort_unstable();
        keys.dedup();
        let (wait, stop) = {
            let waits = self
                .statement_waits
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (waits.wait, waits.stop.clone())
        };
        let stop = stop.unwrap_or_else(StatementStop::unbounded);
        self.lock_row_keys(
            &keys,
            LockMode::Exclusive,
            wait.unwrap_or(LockWait::Wait(None)),
            &stop,
        )
        .await?;
        let has_unique = keys.len() > row_keys.len();
        match self
            .check_locked_rows(&[(def, row_keys.as_slice())])
            .await?
        {
            RowsLocked::FindAgain if may_read_on => Ok(()),
            RowsLocked::FindAgain => Err(Error::WriteConflict),
            // A UNIQUE value's entry has a key of its own the check does not know: a READ
            // COMMITTED insert reads on from the state after the waits, which shows a value
            // another transaction committed meanwhile.
            RowsLocked::AsFound if has_unique && may_read_on && isolation.reads_per_statement() => {
                let mut state = self.state.write().await;
                open(&mut state)?.tx.refresh();
                Ok(())
            }
            RowsLocked::AsFound => Ok(()),
        }
    }

    /// Locks the rows under `row_keys` (row entry keys of `def`) for a write by this
    /// transaction, waiting as `wait` says (within `stop`'s limits) while other transactions
    /// hold them, then checks that none changed since the statement's snapshot (see
    /// [`SessionTxn::check_locked_rows`]).
    pub(crate) async fn lock_rows_for_write(
        &self,
        def: &TableDef,
        row_keys: &[Vec<u8>],
        wait: LockWait,
        stop: &StatementStop,
    ) -> Result<RowsLocked> {
        // SERIALIZABLE validates every read at COMMIT and takes no locks; a statement writing
        // more rows than it may lock relies on validation the same way (its guarded reads of
        // the rows it changes fail the commit if another writer changed one).
        let isolation = self.characteristics().isolation;
        if row_keys.is_empty()
            || isolation == IsolationLevel::Serializable
            || row_keys.len() > MAX_LOCKED_ROWS
        {
            return Ok(RowsLocked::AsFound);
        }
        // One order for every writer: two statements locking overlapping sets in key order
        // cannot deadlock on them.
        let mut sorted = row_keys.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        self.lock_row_keys(&sorted, LockMode::Exclusive, wait, stop)
            .await?;
        self.check_locked_rows(&[(def, sorted.as_slice())]).await
    }

    /// Locks each of `row_keys` in `mode`, in the order given, waiting as `wait` says within
    /// `stop`'s limits; what each request came to (a key skipped under SKIP LOCKED).
    pub(crate) async fn lock_row_keys(
        &self,
        row_keys: &[Vec<u8>],
        mode: LockMode,
        wait: LockWait,
        stop: &StatementStop,
    ) -> Result<Vec<Locked>> {
        self.locks.lock(row_keys, mode, wait, stop).await
    }

    /// Whether the locked rows (row keys of each table) are as the statement's snapshot has
    /// them. A changed one (its writer committed while this transaction waited) moves a READ
    /// COMMITTED transaction's snapshot on ([`RowsLocked::FindAgain`]); at the other levels
    /// (and on a store whose snapshots cannot move) it is a serialization failure.
    pub(crate) async fn check_locked_rows(
        &self,
        rows: &[(&TableDef, &[Vec<u8>])],
    ) -> Result<RowsLocked> {
        let entries: Vec<Vec<u8>> = rows
            .iter()
            .flat_map(|(def, keys)| keys.iter().flat_map(|key| def.entry_keys_of_row(key)))
            .collect();
        if entries.is_empty() {
            return Ok(RowsLocked::AsFound);
        }
        let changed = {
            let state = self.state.read().await;
            let open = state.as_ref().ok_or(StoreError::TransactionEnded)?;
            open.tx.changed_since_snapshot(&entries).await?
        };
        if !changed {
            return Ok(RowsLocked::AsFound);
        }
        if self.characteristics().isolation.reads_per_statement() {
            let mut state = self.state.write().await;
            if open(&mut state)?.tx.refresh() {
                return Ok(RowsLocked::FindAgain);
            }
        }
        Err(Error::WriteConflict)
    }
}
