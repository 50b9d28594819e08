//! Commit serialization and optimistic transactions, written once for every backend.
//!
//! A backend only has to provide latest-state reads, snapshots and atomic batch application
//! (the [`Backend`] trait). [`Core`] wraps it with a per-store commit lock:
//!
//! * a plain [`crate::KvStore::write`] takes the lock and applies the batch;
//! * a transaction reads from a snapshot taken at `begin`, overlays its buffered writes and
//!   records what it read — a fingerprint of every key it got from the snapshot, and for every
//!   scan the part of the range it covered plus a digest of the snapshot entries in it;
//! * at commit, under the lock, every recorded key is re-read and every covered range
//!   re-scanned from the latest state. If any fingerprint or digest differs, another commit
//!   changed something the transaction depended on and it fails with
//!   [`crate::StoreError::Conflict`]; otherwise its writes are applied as one batch while the
//!   lock is still held, so no commit can slip in between validation and write.
//!
//! Because writers validate their reads at the moment they commit, committed transactions are
//! serializable in commit order (ranges are re-scanned, so phantoms are caught too). Writes
//! made without reading (blind writes) never conflict. Fingerprints are 64-bit SipHash values;
//! a collision could hide a conflict with probability around 2^-64 per comparison, which is
//! accepted in exchange for not keeping copies of everything a transaction scanned.

mod merge;
mod read_set;
mod transaction;

use std::sync::Arc;

use crate::{KvRead, Result, Transaction, WriteBatch};
use read_set::ReadSet;
use transaction::OptimisticTx;

/// What a storage engine provides so [`Core`] can build stores and transactions on it.
///
/// Its [`KvRead`] methods read the latest committed state.
pub(crate) trait Backend: KvRead + 'static {
    /// A point-in-time view of the latest committed state.
    fn snapshot(&self) -> Arc<dyn KvRead>;

    /// Applies a validated batch atomically (all visible at once, later ops on a key win).
    /// Only called with the commit lock held.
    fn apply(&self, batch: &WriteBatch) -> Result<()>;
}

/// A backend plus the lock that orders all commits to it.
pub(crate) struct Core<B> {
    backend: B,
    // An async mutex: waiting committers yield to the runtime instead of blocking a worker
    // thread, and it cannot be poisoned. Queued waiters are served in FIFO order.
    commit_lock: tokio::sync::Mutex<()>,
}

impl<B: Backend> Core<B> {
    pub(crate) fn new(backend: B) -> Arc<Self> {
        Arc::new(Core {
            backend,
            commit_lock: tokio::sync::Mutex::new(()),
        })
    }

    pub(crate) fn backend(&self) -> &B {
        &self.backend
    }

    /// Applies a batch, ordered with respect to transaction commits.
    pub(crate) async fn write(&self, batch: &WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.validate()?;
        let _commit = self.commit_lock.lock().await;
        self.backend.apply(batch)
    }

    /// Starts a transaction on a snapshot of the current state.
    pub(crate) fn begin(self: &Arc<Self>) -> Box<dyn Transaction> {
        let snapshot = self.backend.snapshot();
        Box::new(OptimisticTx::new(Arc::clone(self), snapshot))
    }

    /// Validates `reads` against the latest state and applies `batch` if nothing changed.
    async fn commit(&self, reads: &ReadSet, batch: &WriteBatch) -> Result<()> {
        // Reject malformed writes before queueing for the lock; they could never succeed.
        batch.validate()?;
        let _commit = self.commit_lock.lock().await;
        reads.validate(&self.backend).await?;
        self.backend.apply(batch)
    }
}
