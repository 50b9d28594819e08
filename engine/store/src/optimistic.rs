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
//!
//! Every store is a [`Store`] over its backend: the [`KvRead`] and [`KvStore`] methods are
//! written once here, so a backend implements only its reads, snapshots and batch
//! application.

mod commit_count;
mod merge;
mod read_set;
#[cfg(test)]
mod tests;
mod transaction;

use std::sync::Arc;

use crate::api::{Capabilities, KvRead, KvStore, Transaction};
use crate::batch::{Mutation, WriteBatch};
use crate::error::Result;
use crate::range::{CountPage, Direction, EntryVisitor, KeyRange, ScanPage};
use crate::store_metrics::StoreMetrics;
use commit_count::CommitCount;
pub(crate) use read_set::ReadSet;
use std::sync::atomic::{AtomicU64, Ordering};
pub(crate) use transaction::{Committer, OptimisticTx};

/// What a storage engine provides so [`Core`] can build stores and transactions on it.
///
/// Its [`KvRead`] methods read the latest committed state. (Public in name only, so that
/// [`Store`] can be; it cannot be named outside the crate.)
pub trait Backend: KvRead + 'static {
    /// What the backend offers, costs included.
    fn capabilities(&self) -> Capabilities;

    /// A point-in-time view of the latest committed state.
    fn snapshot(&self) -> Arc<dyn KvRead>;

    /// Applies a validated batch atomically (all visible at once, later ops on a key win).
    /// Only called with the commit lock held.
    fn apply(&self, batch: WriteBatch) -> Result<()>;

    /// Makes every applied batch durable (see [`KvStore::flush`]).
    fn persist(&self) -> Result<()>;

    /// Leaves the backend so that the next open is quick (see [`KvStore::checkpoint`]);
    /// by default, [`Backend::persist`].
    fn checkpoint(&self) -> Result<()> {
        self.persist()
    }

    /// Rewrites the backend's tables into as few as it can (see [`KvStore::compact`]); by
    /// default nothing.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// See [`KvStore::approximate_size`].
    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>>;

    /// See [`KvStore::total_size`].
    fn total_size(&self) -> Result<Option<u64>>;

    /// The backend's own figures (memtable, compactions, cache); writes are counted above it.
    fn metrics(&self) -> StoreMetrics {
        StoreMetrics::default()
    }

    /// Keeps the entries under `prefix` apart with `options` (see [`KvStore::place`]); called
    /// with the commit lock held. By default the backend keeps everything alike: false.
    fn place(&self, prefix: &[u8], options: &crate::StorageOptions) -> Result<bool> {
        let _ = (prefix, options);
        Ok(false)
    }

    /// The prefixes kept apart, with their options.
    fn placements(&self) -> Vec<(Vec<u8>, crate::StorageOptions)> {
        Vec::new()
    }

    /// Drops what `rules` call expired in compactions (see [`KvStore::set_expiry_rules`]); by
    /// default there are none.
    fn set_expiry_rules(&self, rules: Arc<dyn crate::expiry::ExpiryRules>) -> bool {
        let _ = rules;
        false
    }
}

/// A store over one backend: [`crate::FjallStore`] and [`crate::MemoryStore`] are this.
pub struct Store<B> {
    core: Arc<Core<B>>,
}

impl<B: Backend> Store<B> {
    pub(crate) fn with_backend(backend: B) -> Self {
        Store {
            core: Core::new(backend),
        }
    }

    pub(crate) fn backend(&self) -> &B {
        self.core.backend()
    }

    /// The backend, out of a store no transaction holds (tests wrap a backend in their own).
    #[cfg(test)]
    pub(crate) fn into_backend(self) -> B {
        match Arc::try_unwrap(self.core) {
            Ok(core) => core.backend,
            Err(_) => panic!("the store's core is shared"),
        }
    }
}

impl<B: Backend + std::fmt::Debug> std::fmt::Debug for Store<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.backend().fmt(f)
    }
}

#[async_trait::async_trait]
impl<B: Backend> KvRead for Store<B> {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.backend().get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.backend().multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.backend().scan_page(range, direction, limit).await
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        self.backend()
            .visit_page(range, direction, limit, visit)
            .await
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        self.backend().count_page(range, cap).await
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        self.backend().scan_pages(ranges, direction, limit).await
    }

    fn batches_ranges(&self) -> bool {
        self.backend().batches_ranges()
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        self.backend().contains(keys).await
    }
}

#[async_trait::async_trait]
impl<B: Backend> KvStore for Store<B> {
    fn capabilities(&self) -> Capabilities {
        self.backend().capabilities()
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        self.core.write(batch).await
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        self.backend().snapshot()
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        Ok(self.core.begin())
    }

    async fn flush(&self) -> Result<()> {
        self.backend().persist()
    }

    async fn checkpoint(&self) -> Result<()> {
        self.backend().checkpoint()
    }

    async fn compact(&self) -> Result<()> {
        self.backend().compact()
    }

    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        self.backend().approximate_size(range)
    }

    fn total_size(&self) -> Result<Option<u64>> {
        self.backend().total_size()
    }

    fn metrics(&self) -> StoreMetrics {
        self.core.metrics()
    }

    fn set_expiry_rules(&self, rules: Arc<dyn crate::expiry::ExpiryRules>) -> bool {
        self.backend().set_expiry_rules(rules)
    }

    async fn place(&self, prefix: &[u8], options: &crate::StorageOptions) -> Result<bool> {
        self.core.place(prefix, options).await
    }

    fn placements(&self) -> Vec<(Vec<u8>, crate::StorageOptions)> {
        self.backend().placements()
    }
}

/// A backend plus the lock that orders all commits to it.
pub(crate) struct Core<B> {
    backend: B,
    // An async mutex: waiting committers yield to the runtime instead of blocking a worker
    // thread, and it cannot be poisoned. Queued waiters are served in FIFO order.
    commit_lock: tokio::sync::Mutex<()>,
    /// Every batch applied to the backend, for transactions to tell that nothing changed.
    commits: CommitCount,
    /// What the applied batches wrote, for [`KvStore::metrics`].
    written: Written,
}

/// Batches applied, and the keys and bytes they wrote.
#[derive(Debug, Default)]
struct Written {
    batches: AtomicU64,
    keys: AtomicU64,
    bytes: AtomicU64,
}

impl Written {
    fn count(&self, batch: &WriteBatch) {
        let bytes: usize = batch
            .mutations()
            .iter()
            .map(|mutation| match mutation {
                Mutation::Put { key, value } => key.len() + value.len(),
                Mutation::Delete { key } => key.len(),
            })
            .sum();
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.keys.fetch_add(batch.len() as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

impl<B: Backend> Core<B> {
    pub(crate) fn new(backend: B) -> Arc<Self> {
        Arc::new(Core {
            backend,
            commit_lock: tokio::sync::Mutex::new(()),
            commits: CommitCount::default(),
            written: Written::default(),
        })
    }
    pub(crate) fn backend(&self) -> &B {
        &self.backend
    }

    /// Applies a batch, ordered with respect to transaction commits.
    pub(crate) async fn write(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.validate()?;
        let _commit = self.commit_lock.lock().await;
        let _applying = self.commits.applying();
        self.written.count(&batch);
        self.backend.apply(batch)
    }

    /// Moves a prefix (see [`KvStore::place`]), ordered with respect to commits: it counts as
    /// one, so that a transaction that read before it validates its reads again.
    pub(crate) async fn place(
        &self,
        prefix: &[u8],
        options: &crate::StorageOptions,
    ) -> Result<bool> {
        let _commit = self.commit_lock.lock().await;
        let _applying = self.commits.applying();
        self.backend.place(prefix, options)
    }

    /// The backend's figures with the writes applied through this core.
    pub(crate) fn metrics(&self) -> StoreMetrics {
        let mut metrics = self.backend.metrics();
        metrics.commits = self.written.batches.load(Ordering::Relaxed);
        metrics.keys_written = self.written.keys.load(Ordering::Relaxed);
        metrics.bytes_written = self.written.bytes.load(Ordering::Relaxed);
        metrics
    }

    /// Starts a transaction on a snapshot of the current state.
    pub(crate) fn begin(self: &Arc<Self>) -> Box<dyn Transaction> {
        // The mark before the snapshot, as `Transaction::refresh` takes it for a moved one.
        let mark = self.mark();
        let snapshot = self.backend.snapshot();
        Box::new(OptimisticTx::new(Arc::clone(self), snapshot, mark))
    }
}

#[async_trait::async_trait]
impl<B: Backend> Committer for Core<B> {
    /// Validates `reads` against the latest state and applies `batch` if nothing changed.
    /// With nothing applied since `begun` (the mark before the transaction's first snapshot)
    /// every read it made still holds, and none is read again.
    async fn commit(&self, reads: &ReadSet, begun: Option<u64>, batch: WriteBatch) -> Result<()> {
        // Reject malformed writes before queueing for the lock; they could never succeed.
        batch.validate()?;
        let _commit = self.commit_lock.lock().await;
        if !begun.is_some_and(|mark| self.commits.unchanged_since(mark)) {
            reads.validate(&self.backend).await?;
        }
        let _applying = self.commits.applying();
        self.written.count(&batch);
        self.backend.apply(batch)
    }

    fn latest(&self) -> Arc<dyn KvRead> {
        self.backend.snapshot()
    }

    fn mark(&self) -> Option<u64> {
        Some(self.commits.mark())
    }

    fn unchanged_since(&self, mark: u64) -> bool {
        self.commits.unchanged_since(mark)
    }

    fn moves_snapshots(&self) -> bool {
        // Validation re-reads every recorded key and range from the latest state under the
        // commit lock, whichever snapshot it was read from.
        true
    }
}
