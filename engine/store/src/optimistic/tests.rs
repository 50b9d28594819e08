//! What the commit count saves: reads of the latest state that a commit's validation and a
//! lock's "changed since the snapshot?" check make only when something was committed since.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Backend, Store};
use crate::api::{Capabilities, KvRead, KvStore};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::memory::{MemoryBackend, MemoryStore};
use crate::range::{Direction, KeyRange, ScanPage};

/// A memory backend that counts its reads of the latest state: gets, and snapshots taken.
struct Counting {
    inner: MemoryBackend,
    latest_reads: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl KvRead for Counting {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.latest_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.latest_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.latest_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.scan_page(range, direction, limit).await
    }
}

impl Backend for Counting {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        self.latest_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.snapshot()
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        self.inner.apply(batch)
    }

    fn persist(&self) -> Result<()> {
        self.inner.persist()
    }

    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        self.inner.approximate_size(range)
    }

    fn total_size(&self) -> Result<Option<u64>> {
        self.inner.total_size()
    }
}

fn counting_store() -> (Store<Counting>, Arc<AtomicUsize>) {
    let latest_reads = Arc::new(AtomicUsize::new(0));
    let inner = MemoryStore::new().into_backend();
    let backend = Counting {
        inner,
        latest_reads: Arc::clone(&latest_reads),
    };
    (Store::with_backend(backend), latest_reads)
}

fn put(key: &[u8], value: &[u8]) -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(key.to_vec(), value.to_vec());
    batch
}

#[tokio::test]
async fn a_commit_with_nothing_committed_since_its_begin_reads_nothing_again() -> Result<()> {
    let (store, latest_reads) = counting_store();
    store.write(put(b"a", b"1")).await?;
    let mut tx = store.begin().await?;
    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    tx.put(b"b".to_vec(), b"2".to_vec());
    let before = latest_reads.load(Ordering::SeqCst);
    tx.commit().await?;
    assert_eq!(latest_reads.load(Ordering::SeqCst), before);
    assert_eq!(store.get(b"b").await?, Some(b"2".to_vec()));
    Ok(())
}

#[tokio::test]
async fn a_commit_after_another_validates_and_still_sees_conflicts() -> Result<()> {
    let (store, latest_reads) = counting_store();
    store.write(put(b"a", b"1")).await?;
    // Another key committed meanwhile: the read of "a" is checked, and holds.
    let mut tx = store.begin().await?;
    tx.get(b"a").await?;
    tx.put(b"b".to_vec(), b"2".to_vec());
    store.write(put(b"c", b"3")).await?;
    let before = latest_reads.load(Ordering::SeqCst);
    tx.commit().await?;
    assert!(latest_reads.load(Ordering::SeqCst) > before);
    // The key read committed meanwhile: a conflict, as without the count.
    let mut tx = store.begin().await?;
    tx.get(b"a").await?;
    tx.put(b"b".to_vec(), b"4".to_vec());
    store.write(put(b"a", b"5")).await?;
    assert!(tx.commit().await.is_err());
    assert_eq!(store.get(b"b").await?, Some(b"2".to_vec()));
    Ok(())
}

#[tokio::test]
async fn changed_since_snapshot_reads_only_after_a_commit() -> Result<()> {
    let (store, latest_reads) = counting_store();
    store.write(put(b"a", b"1")).await?;
    let mut tx = store.begin().await?;
    let keys = vec![b"a".to_vec()];
    let before = latest_reads.load(Ordering::SeqCst);
    assert!(!tx.changed_since_snapshot(&keys).await?);
    assert_eq!(latest_reads.load(Ordering::SeqCst), before);
    store.write(put(b"z", b"0")).await?;
    assert!(!tx.changed_since_snapshot(&keys).await?);
    assert!(latest_reads.load(Ordering::SeqCst) > before);
    store.write(put(b"a", b"2")).await?;
    assert!(tx.changed_since_snapshot(&keys).await?);
    // Moved to the latest state, the transaction again needs no reads to answer.
    assert!(tx.refresh());
    let before = latest_reads.load(Ordering::SeqCst);
    assert!(!tx.changed_since_snapshot(&keys).await?);
    assert_eq!(latest_reads.load(Ordering::SeqCst), before);
    Ok(())
}
