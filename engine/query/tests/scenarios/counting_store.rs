//! A store wrapper that counts the entries reads return, to prove scans stop early.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rowdex_store::{
    Capabilities, Direction, KeyRange, KvRead, KvStore, MemoryStore, Result, ScanPage, Transaction,
    WriteBatch,
};

#[derive(Default)]
pub struct CountingStore {
    inner: MemoryStore,
    entries_read: Arc<AtomicUsize>,
}

impl CountingStore {
    pub fn counter(&self) -> Arc<AtomicUsize> {
        self.entries_read.clone()
    }
}

struct CountingRead {
    inner: Arc<dyn KvRead>,
    entries_read: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl KvRead for CountingRead {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.entries_read.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.entries_read.fetch_add(keys.len(), Ordering::Relaxed);
        self.inner.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        let page = self.inner.scan_page(range, direction, limit).await?;
        self.entries_read
            .fetch_add(page.entries.len(), Ordering::Relaxed);
        Ok(page)
    }
}

#[async_trait::async_trait]
impl KvRead for CountingStore {
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
}

#[async_trait::async_trait]
impl KvStore for CountingStore {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(batch).await
    }

    /// Queries read through snapshots, so that is where reads are counted.
    fn snapshot(&self) -> Arc<dyn KvRead> {
        Arc::new(CountingRead {
            inner: self.inner.snapshot(),
            entries_read: self.entries_read.clone(),
        })
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        self.inner.begin().await
    }

    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }
}
