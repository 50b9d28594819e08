//! The row locks of one transaction: its owner id in the database's lock table
//! (`rowdex_store::locks`) and every key it asked for, all released together when it ends
//! (COMMIT, ROLLBACK, or the transaction dropped with its session or connection).
//!
//! A key is asked for once per mode: a transaction that updates the same row twice finds it
//! held and does not touch the lock table again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rowdex_store::locks::{LockMode, LockTable, LockWait, Locked, Owner};

use crate::db::statement_stop::StatementStop;
use crate::error::{Error, Result};

/// The most rows one statement locks: a larger UPDATE or DELETE takes no row locks and relies
/// on validation at COMMIT instead (a lock costs about 100 bytes of memory until the
/// transaction ends, on top of the buffered write of the row itself).
pub(crate) const MAX_LOCKED_ROWS: usize = 10_000;

/// Whether the rows a write locked are as its statement found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowsLocked {
    /// None changed since the statement's snapshot: write them.
    AsFound,
    /// One changed and the transaction reads from a fresh snapshot now: find the rows again
    /// (READ COMMITTED).
    FindAgain,
}

/// One transaction's place in the lock table.
pub(crate) struct RowLocks {
    table: Arc<LockTable>,
    owner: Owner,
    /// Every key asked for, with the strongest mode granted (None: asked, not granted: a wait
    /// that failed or was cancelled, released all the same).
    asked: Mutex<HashMap<Vec<u8>, Option<LockMode>>>,
}

impl RowLocks {
    /// `tag` labels the owner's entries in the table (the session's backend pid).
    pub(crate) fn new(table: Arc<LockTable>, owner: Owner, tag: Option<i64>) -> RowLocks {
        if let Some(tag) = tag {
            table.tag_owner(owner, tag);
        }
        RowLocks {
            table,
            owner,
            asked: Mutex::new(HashMap::new()),
        }
    }

    fn asked(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Option<LockMode>>> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks each of `keys` in `mode`, in the order given, waiting as `wait` says and no
    /// longer than `stop` lets the statement; what each request came to (a key skipped under
    /// SKIP LOCKED). The first failure (a deadlock, a timeout, NOWAIT, a cancel) ends the
    /// run: the keys locked before it stay locked. On a store several processes share, the
    /// keys granted in this process are then locked in the cluster, all in one request.
    pub(crate) async fn lock(
        &self,
        keys: &[Vec<u8>],
        mode: LockMode,
        wait: LockWait,
        stop: &StatementStop,
    ) -> Result<Vec<Locked>> {
        let deadline = match wait {
            LockWait::Wait(Some(limit)) => Some(Instant::now() + limit),
            _ => None,
        };
        let mut outcomes = Vec::with_capacity(keys.len());
        // Keys granted here by this call, for the cluster: (index, what was held before).
        let mut granted_here = Vec::new();
        for key in keys {
            let held = self.asked().get(key).copied().flatten();
            if held == Some(LockMode::Exclusive) || held == Some(mode) {
                outcomes.push(Locked::Granted);
                continue;
            }
            self.asked().entry(key.clone()).or_insert(None);
            let request = async {
                let locked = self.table.lock(self.owner, key, mode, wait).await;
                locked.map_err(Error::from)
            };
            let outcome = stop.bound(request).await?;
            if outcome == Locked::Granted {
                self.asked().insert(key.clone(), Some(mode));
                granted_here.push((outcomes.len(), held));
            }
            outcomes.push(outcome);
        }
        if let Some(cluster) = self.table.cluster()
            && !granted_here.is_empty()
        {
            let wanted: Vec<Vec<u8>> = granted_here
                .iter()
                .map(|(index, _)| keys[*index].clone())
                .collect();
            let wait = match (wait, deadline) {
                (LockWait::Wait(_), Some(deadline)) => {
                    LockWait::Wait(Some(deadline.saturating_duration_since(Instant::now())))
                }
                _ => wait,
            };
            let request = async {
                let locked = cluster.lock(self.owner, &wanted, mode, wait).await;
                locked.map_err(Error::from)
            };
            let clustered = stop.bound(request).await?;
            for ((index, held), outcome) in granted_here.into_iter().zip(clustered) {
                if outcome == Locked::Skipped {
                    // Held by another process: not this transaction's here either.
                    outcomes[index] = Locked::Skipped;
                    if held.is_none() {
                        let key = keys[index].as_slice();
                        self.table.release_here(self.owner, [key]);
                        self.asked().insert(key.to_vec(), None);
                    }
                }
            }
        }
        Ok(outcomes)
    }

    /// Releases every key asked for (the transaction ended).
    pub(crate) fn release_all(&self) {
        let asked = std::mem::take(&mut *self.asked());
        if !asked.is_empty() {
            self.table
                .release(self.owner, asked.keys().map(Vec::as_slice));
        }
    }
}

impl Drop for RowLocks {
    fn drop(&mut self) {
        self.release_all();
        self.table.forget_owner(self.owner);
    }
}
