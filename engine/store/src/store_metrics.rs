//! What a store reports of itself for monitoring (`rowdex serve --metrics`): the writes it
//! applied, and, where the backend has them, its memtable, flushes, compactions, journal, files
//! and block cache.

/// A store's figures at one moment; `None` where the backend has no such thing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreMetrics {
    /// Batches and transaction commits applied.
    pub commits: u64,
    /// Keys they put or deleted.
    pub keys_written: u64,
    /// Bytes of those keys and values.
    pub bytes_written: u64,
    /// Bytes in the active memtable (fjall).
    pub memtable_bytes: Option<u64>,
    /// Memtables sealed and waiting to be flushed to tables.
    pub sealed_memtables: Option<u64>,
    /// Tables (SSTs) on disk.
    pub tables: Option<u64>,
    /// Compactions running now, finished since open, and the time spent in them.
    pub compactions_running: Option<u64>,
    pub compactions_done: Option<u64>,
    pub compaction_seconds: Option<f64>,
    /// Journal files kept.
    pub journal_files: Option<u64>,
    /// Bytes of every file of the store.
    pub disk_bytes: Option<u64>,
    /// Bytes held by the block cache, and its capacity.
    pub cache_bytes: Option<u64>,
    pub cache_capacity_bytes: Option<u64>,
    /// Block loads served by the cache, and all block loads, since open.
    pub cache_hits: Option<u64>,
    pub block_loads: Option<u64>,
}
