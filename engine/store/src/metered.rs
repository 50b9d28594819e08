//! A store wrapper that counts reads: point gets, range scans opened (pages), entries they
//! returned, and the bytes (keys and values) that came back. Benchmarks use it to report how many keys a query touched, which unlike time does
//! not depend on the machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{
    Capabilities, CountPage, Direction, EntryVisitor, KeyRange, KvRead, KvStore, Result, ScanPage,
    Transaction, WriteBatch,
};

/// Read counters, shared by a [`MeteredStore`] and every snapshot taken from it.
#[derive(Debug, Default)]
pub struct ReadMeter {
    gets: AtomicU64,
    pages: AtomicU64,
    entries: AtomicU64,
    bytes: AtomicU64,
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Keys asked for by get and multi_get.
    pub gets: u64,
    /// Scan pages, each of which opens an iterator (a seek).
    pub pages: u64,
    /// Entries returned by scans.
    pub entries: u64,
    /// Bytes of the keys and values returned, by gets (found keys only) and scans.
    pub bytes: u64,
}

impl ReadCounts {
    /// Every key read, by get or by scan.
    pub fn keys(&self) -> u64 {
        self.gets + self.entries
    }
}

impl ReadMeter {
    pub fn counts(&self) -> ReadCounts {
        ReadCounts {
            gets: self.gets.load(Ordering::Relaxed),
            pages: self.pages.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    pub fn reset(&self) {
        self.gets.store(0, Ordering::Relaxed);
        self.pages.store(0, Ordering::Relaxed);
        self.entries.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }

    fn add_bytes(&self, bytes: usize) {
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Wraps any store; reads through it (and through its snapshots) are counted in [`Self::meter`].
pub struct MeteredStore {
    inner: Arc<dyn KvStore>,
    /// The live store's reads, metered like a snapshot's.
    live: MeteredRead,
}

impl MeteredStore {
    pub fn new(inner: Arc<dyn KvStore>) -> MeteredStore {
        let live = MeteredRead {
            inner: inner.clone(),
            meter: Arc::new(ReadMeter::default()),
        };
        MeteredStore { inner, live }
    }

    pub fn meter(&self) -> Arc<ReadMeter> {
        self.live.meter.clone()
    }
}

/// `reader` with its reads counted in `meter` (EXPLAIN ANALYZE meters one statement's reads
/// this way).
pub fn metered(reader: Arc<dyn KvRead>, meter: Arc<ReadMeter>) -> Arc<dyn KvRead> {
    Arc::new(MeteredRead {
        inner: reader,
        meter,
    })
}

/// A reader whose reads are counted.
struct MeteredRead {
    inner: Arc<dyn KvRead>,
    meter: Arc<ReadMeter>,
}

#[async_trait::async_trait]
impl KvRead for MeteredRead {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.meter.gets.fetch_add(1, Ordering::Relaxed);
        let value = self.inner.get(key).await?;
        if let Some(value) = &value {
            self.meter.add_bytes(key.len() + value.len());
        }
        Ok(value)
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.meter
            .gets
            .fetch_add(keys.len() as u64, Ordering::Relaxed);
        let values = self.inner.multi_get(keys).await?;
        for (key, value) in keys.iter().zip(&values) {
            if let Some(value) = value {
                self.meter.add_bytes(key.len() + value.len());
            }
        }
        Ok(values)
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        let page = self.inner.scan_page(range, direction, limit).await?;
        self.meter.pages.fetch_add(1, Ordering::Relaxed);
        self.meter
            .entries
            .fetch_add(page.entries.len() as u64, Ordering::Relaxed);
        for (key, value) in &page.entries {
            self.meter.add_bytes(key.len() + value.len());
        }
        Ok(page)
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        let pages = self.inner.scan_pages(ranges, direction, limit).await?;
        self.meter
            .pages
            .fetch_add(pages.len() as u64, Ordering::Relaxed);
        for page in &pages {
            self.meter
                .entries
                .fetch_add(page.entries.len() as u64, Ordering::Relaxed);
            for (key, value) in &page.entries {
                self.meter.add_bytes(key.len() + value.len());
            }
        }
        Ok(pages)
    }

    fn batches_ranges(&self) -> bool {
        self.inner.batches_ranges()
    }

    /// Forwarded, so that a metered scan still reads its entries in place.
    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        let (mut entries, mut bytes) = (0u64, 0usize);
        let resume = {
            let mut counting = |key: &[u8], value: &[u8]| {
                entries += 1;
                bytes += key.len() + value.len();
                visit(key, value);
            };
            self.inner
                .visit_page(range, direction, limit, &mut counting)
                .await?
        };
        self.meter.pages.fetch_add(1, Ordering::Relaxed);
        self.meter.entries.fetch_add(entries, Ordering::Relaxed);
        self.meter.add_bytes(bytes);
        Ok(resume)
    }

    /// Forwarded: the store counts without handing the entries out.
    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        let page = self.inner.count_page(range, cap).await?;
        self.meter.pages.fetch_add(1, Ordering::Relaxed);
        self.meter
            .entries
            .fetch_add(page.entries, Ordering::Relaxed);
        Ok(page)
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        self.meter
            .gets
            .fetch_add(keys.len() as u64, Ordering::Relaxed);
        self.inner.contains(keys).await
    }
}

#[async_trait::async_trait]
impl KvRead for MeteredStore {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.live.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.live.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.live.scan_page(range, direction, limit).await
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        self.live.scan_pages(ranges, direction, limit).await
    }

    fn batches_ranges(&self) -> bool {
        self.live.batches_ranges()
    }
}

#[async_trait::async_trait]
impl KvStore for MeteredStore {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(batch).await
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        Arc::new(MeteredRead {
            inner: self.inner.snapshot(),
            meter: self.live.meter.clone(),
        })
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        // Transactions (writes) are not what the meter is for; they read unmetered.
        self.inner.begin().await
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

    fn cluster_locks(&self) -> Option<Arc<dyn crate::locks::ClusterLocks>> {
        self.inner.cluster_locks()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[tokio::test]
    async fn counts_gets_pages_and_entries_through_snapshots() -> Result<()> {
        let store = MeteredStore::new(Arc::new(MemoryStore::new()));
        let mut batch = WriteBatch::new();
        for i in 0..10u8 {
            batch.put(vec![i], vec![i]);
        }
        store.write(batch).await?;
        let snapshot = store.snapshot();
        snapshot.get(&[1]).await?;
        snapshot.multi_get(&[vec![2], vec![3]]).await?;
        snapshot
            .scan_page(&KeyRange::all(), Direction::Forward, 4)
            .await?;
        let counts = store.meter().counts();
        assert_eq!(
            counts,
            ReadCounts {
                gets: 3,
                pages: 1,
                entries: 4,
                // Seven one-byte keys with one-byte values.
                bytes: 14,
            }
        );
        assert_eq!(counts.keys(), 7);
        store.meter().reset();
        assert_eq!(store.meter().counts(), ReadCounts::default());
        Ok(())
    }
}
