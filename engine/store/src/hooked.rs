//! A store that forwards every call to another store, with hooks where a test wants to step in:
//! beginning a transaction (to run something just before or after its snapshot, or to wrap the
//! transaction it hands out), opening a snapshot, and writing a batch. A transaction can be wrapped the same way,
//! with hooks on its buffered writes and its commit.
//!
//! Tests build their special stores from these (a store that lets another statement commit at
//! the moment a transaction begins, one whose index-only commits lose every race) instead of
//! forwarding each method by hand, so no method is forgotten and answered by a trait default.

use std::sync::Arc;

use crate::api::{Capabilities, KvRead, KvStore, Savepoint, Transaction, Validation};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::range::{CountPage, Direction, KeyRange, ScanPage};

/// What a [`HookedStore`] does around the calls it forwards; each default only forwards.
#[async_trait::async_trait]
pub trait StoreHooks: Send + Sync + 'static {
    /// Begins a transaction on `inner`.
    async fn begin(&self, inner: &dyn KvStore) -> Result<Box<dyn Transaction>> {
        inner.begin().await
    }

    /// Writes `batch` to `inner`.
    async fn write(&self, inner: &dyn KvStore, batch: WriteBatch) -> Result<()> {
        inner.write(batch).await
    }

    /// Opens a snapshot of `inner` (a test may hand out an older view instead).
    fn snapshot(&self, inner: &dyn KvStore) -> Arc<dyn KvRead> {
        inner.snapshot()
    }
}

/// Another store, with [`StoreHooks`] around its `begin` and `write`.
pub struct HookedStore<H> {
    inner: Arc<dyn KvStore>,
    hooks: H,
}

impl<H: StoreHooks> HookedStore<H> {
    pub fn new(inner: Arc<dyn KvStore>, hooks: H) -> Self {
        HookedStore { inner, hooks }
    }

    pub fn hooks(&self) -> &H {
        &self.hooks
    }

    /// The store underneath, without the hooks.
    pub fn inner(&self) -> &Arc<dyn KvStore> {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<H: StoreHooks> KvRead for HookedStore<H> {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.inner.scan_page(range, direction, limit).await
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        self.inner.count_page(range, cap).await
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        self.inner.scan_pages(ranges, direction, limit).await
    }

    fn batches_ranges(&self) -> bool {
        self.inner.batches_ranges()
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        self.inner.contains(keys).await
    }
}

#[async_trait::async_trait]
impl<H: StoreHooks> KvStore for HookedStore<H> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        self.hooks.write(self.inner.as_ref(), batch).await
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        self.hooks.snapshot(self.inner.as_ref())
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        self.hooks.begin(self.inner.as_ref()).await
    }

    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }

    async fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint().await
    }

    async fn compact(&self) -> Result<()> {
        self.inner.compact().await
    }

    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        self.inner.approximate_size(range)
    }

    fn total_size(&self) -> Result<Option<u64>> {
        self.inner.total_size()
    }

    fn metrics(&self) -> crate::StoreMetrics {
        self.inner.metrics()
    }

    fn set_expiry_rules(&self, rules: Arc<dyn crate::expiry::ExpiryRules>) -> bool {
        self.inner.set_expiry_rules(rules)
    }

    async fn place(&self, prefix: &[u8], options: &crate::StorageOptions) -> Result<bool> {
        self.inner.place(prefix, options).await
    }

    fn placements(&self) -> Vec<(Vec<u8>, crate::StorageOptions)> {
        self.inner.placements()
    }
}

/// What a [`HookedTransaction`] does around the calls it forwards; each default does nothing.
#[async_trait::async_trait]
pub trait TransactionHooks: Send + Sync + 'static {
    /// Called with the key of every buffered put or delete, before it is buffered.
    fn on_write(&mut self, _key: &[u8]) {}

    /// Called before the commit is forwarded; an error fails the commit, which then writes
    /// nothing.
    async fn before_commit(&self) -> Result<()> {
        Ok(())
    }
}

/// Another transaction, with [`TransactionHooks`] on its writes and its commit.
pub struct HookedTransaction<H> {
    inner: Box<dyn Transaction>,
    hooks: H,
}

impl<H: TransactionHooks> HookedTransaction<H> {
    pub fn new(inner: Box<dyn Transaction>, hooks: H) -> Self {
        HookedTransaction { inner, hooks }
    }
}

#[async_trait::async_trait]
impl<H: TransactionHooks> KvRead for HookedTransaction<H> {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.inner.scan_page(range, direction, limit).await
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        self.inner.count_page(range, cap).await
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        self.inner.scan_pages(ranges, direction, limit).await
    }

    fn batches_ranges(&self) -> bool {
        self.inner.batches_ranges()
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        self.inner.contains(keys).await
    }
}

#[async_trait::async_trait]
impl<H: TransactionHooks> Transaction for HookedTransaction<H> {
    fn set_validation(&mut self, validation: Validation) {
        self.inner.set_validation(validation);
    }

    fn set_durability(&mut self, durability: Option<crate::Durability>) {
        self.inner.set_durability(durability);
    }

    fn durability(&self) -> Option<crate::Durability> {
        self.inner.durability()
    }

    fn guarded(&self) -> Box<dyn KvRead + '_> {
        self.inner.guarded()
    }

    fn refresh(&mut self) -> bool {
        self.inner.refresh()
    }

    async fn changed_since_snapshot(&self, keys: &[Vec<u8>]) -> Result<bool> {
        self.inner.changed_since_snapshot(keys).await
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.hooks.on_write(&key);
        self.inner.put(key, value);
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.hooks.on_write(&key);
        self.inner.delete(key);
    }

    fn put_run(&mut self, ascending: Vec<(Vec<u8>, Vec<u8>)>) {
        for (key, _) in &ascending {
            self.hooks.on_write(key);
        }
        self.inner.put_run(ascending);
    }

    fn savepoint(&mut self) -> Savepoint {
        self.inner.savepoint()
    }

    fn rollback_to(&mut self, savepoint: Savepoint) {
        self.inner.rollback_to(savepoint);
    }

    fn release(&mut self, savepoint: Savepoint) {
        self.inner.release(savepoint);
    }

    async fn commit(self: Box<Self>) -> Result<()> {
        self.hooks.before_commit().await?;
        self.inner.commit().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::StoreError;
    use crate::memory::MemoryStore;

    /// Counts begins and fails every commit of a transaction that wrote a key starting with
    /// `0xFF`.
    #[derive(Default)]
    struct Counting {
        begins: AtomicUsize,
    }

    struct RefuseFf {
        wrote_ff: bool,
    }

    #[async_trait::async_trait]
    impl TransactionHooks for RefuseFf {
        fn on_write(&mut self, key: &[u8]) {
            self.wrote_ff |= key.first() == Some(&0xFF);
        }

        async fn before_commit(&self) -> Result<()> {
            if self.wrote_ff {
                return Err(StoreError::Conflict);
            }
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl StoreHooks for Counting {
        async fn begin(&self, inner: &dyn KvStore) -> Result<Box<dyn Transaction>> {
            self.begins.fetch_add(1, Ordering::Relaxed);
            let tx = inner.begin().await?;
            Ok(Box::new(HookedTransaction::new(
                tx,
                RefuseFf { wrote_ff: false },
            )))
        }
    }

    #[tokio::test]
    async fn hooks_see_begins_and_can_fail_commits() -> Result<()> {
        let store = HookedStore::new(Arc::new(MemoryStore::new()), Counting::default());
        let mut tx = store.begin().await?;
        tx.put(vec![1], vec![1]);
        tx.commit().await?;
        let mut tx = store.begin().await?;
        tx.put(vec![0xFF], vec![2]);
        assert!(matches!(tx.commit().await, Err(StoreError::Conflict)));
        assert_eq!(store.hooks().begins.load(Ordering::Relaxed), 2);
        // Reads forward: the first commit is there, the refused one is not.
        assert_eq!(store.get(&[1]).await?, Some(vec![1]));
        assert_eq!(store.get(&[0xFF]).await?, None);
        assert_eq!(
            store
                .inner()
                .count_page(&KeyRange::prefix(&[]), 10)
                .await?
                .entries,
            1
        );
        Ok(())
    }
}
