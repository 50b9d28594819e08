//! On-disk backend: one fjall 3 keyspace holding every key (table prefixes keep tables apart).
//!
//! Writes go through fjall write batches, which are journaled and published atomically under a
//! single sequence number, then pushed as far as the commit's [`Durability`] asks (the one
//! chosen at open unless the batch asks for another) before the write is acknowledged; the
//! `async_wal` flusher pushes what ASYNC_WAL commits left in the journal's buffer. Every read
//! goes through a fjall snapshot, so a multi-key read or a scan page never observes half of a
//! batch.
//!
//! A [`checkpoint`](crate::KvStore::checkpoint), and the drop of the last handle, flush the
//! memtable and keep the journal short (`journal`), so that the next open is quick. `size`
//! estimates how many bytes a key range takes.

mod async_wal;
mod expiry_filter;
mod journal;
mod placement;
mod size;
mod sweeper;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use fjall::config::{HashRatioPolicy, PartitioningPolicy, PinningPolicy};
use fjall::{
    AbstractTree, CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode,
    Readable, SeqNo, Snapshot,
};

use crate::api::{AccessCosts, Capabilities, KvRead, page_turn};
use crate::batch::{MAX_KEY_LEN, Mutation, WriteBatch};
use crate::durability::Durability;
use crate::error::{Result, StoreError};
use crate::optimistic::{Backend, Store};
use crate::range::{
    CountPage, Direction, EntryVisitor, KeyRange, ScanPage, collect_page, count_keys, in_key_order,
    visit_entries,
};
use crate::storage_options::StorageOptions;
use crate::store_metrics::StoreMetrics;

pub use journal::TRIM_MIN_BYTES as JOURNAL_TRIM_MIN_BYTES;

/// Name of the single keyspace holding all data.
const DATA_KEYSPACE: &str = "data";

/// fjall's persist mode for a commit of `durability`: none for SKIP_WAL and ASYNC_WAL (the
/// record stays in the journal writer's buffer), a write to the OS for SYNC_WAL, an fsync for
/// FSYNC_WAL.
fn persist_mode(durability: Durability) -> Option<PersistMode> {
    match durability {
        Durability::SkipWal | Durability::AsyncWal => None,
        Durability::SyncWal => Some(PersistMode::Buffer),
        Durability::FsyncWal => Some(PersistMode::SyncAll),
    }
}

/// Batches of at least this many (ascending, distinct) mutations are ingested as new tables
/// rather than journaled and inserted into the memtable one by one: a bulk load's transactions
/// then cost a sorted table write instead of a journal record and a skip-list insert per key.
/// Each ingestion flushes the memtable and syncs its tables, a few milliseconds of fixed cost,
/// which is what keeps small batches on the journaled path.
pub const INGEST_MIN_MUTATIONS: usize = 16_384;

/// The block cache of [`FjallStore::open`]. fjall's own default (32 MiB) holds the blocks of a
/// few hundred thousand rows: beyond that every read copies a block from the page cache and
/// verifies its checksum, which profiled at 90 % of a point get on a million-row table.
pub const DEFAULT_FJALL_CACHE_BYTES: u64 = 512 * 1024 * 1024;

/// The journal size past which fjall flushes memtables so that old journals can be deleted:
/// what a crash leaves to replay is bounded by about this plus one memtable. fjall's minimum
/// (its default is 512 MiB).
const MAX_JOURNALING_BYTES: u64 = 64 * 1024 * 1024;

/// The store seals the data keyspace's memtable itself once it holds this much, below fjall's
/// own `max_memtable_size` (64 MiB, the default every rowdex keyspace was created with).
///
/// Past that size fjall asks its worker to seal the memtable, with a message per write, on a
/// queue of 1,000. While the one worker (see `FjallStore::open`) is in a long compaction, a
/// stream of small journaled writes (a CREATE INDEX backfill on 10M rows) fills the queue with
/// those requests; the worker, when it gets to the first one, seals the memtable and then
/// blocks sending its own flush request to the full queue it alone drains. That deadlocked a
/// 10M-row load: writes went on into an unsealed memtable (1.7 GB resident) and the close
/// waited forever. Sealing on the writing thread, before fjall would ask, sends one flush
/// request per memtable instead, and fjall's write stall (four sealed memtables) then bounds
/// memory while the worker compacts.
const SEAL_MEMTABLE_BYTES: u64 = 48 * 1024 * 1024;

/// The store also seals the memtable once this many of its entries are dead: versions a later
/// write of the same key shadows, and tombstones.
///
/// fjall's memtable keeps every version of a key until it is flushed (the flush drops the
/// versions no open snapshot can see), and a range read steps over each of them, cloning it,
/// before its merge skips it: a point get finds the newest version by one seek, a range read
/// pays for every version in its span. Under OLTP writes to hot rows (sysbench's
/// oltp_read_write updates, deletes and re-inserts a few hot ids), a 48 MiB memtable holds tens
/// of versions of every hot row, and each 100-row range read walked thousands of entries: its
/// throughput fell by 40 % within a minute of a fresh start, back to its start after a flush.
/// Sealing on dead entries flushes such a memtable every few seconds, while a stream of new keys
/// (inserts, loads) keeps filling memtables to [`SEAL_MEMTABLE_BYTES`].
const SEAL_DEAD_ENTRIES: u64 = 8_192;

/// A memtable is not sealed for its dead entries before it holds this much: a few hot rows
/// updated at a high rate (pgbench's branches) would otherwise flush tiny tables, each a new
/// table for compaction to merge, where the dead versions only cost range reads.
const SEAL_DEAD_MIN_BYTES: u64 = 4 * 1024 * 1024;

/// At most this many mutations of one batch are looked up in the memtable to count its dead
/// entries; a larger batch is sampled at an even stride and the count scaled.
const DEAD_SAMPLES_PER_BATCH: usize = 64;

/// A store kept in a fjall database directory.
pub type FjallStore = Store<FjallBackend>;

/// How the data keyspace lays out its tables, fixed when the keyspace is created (a database
/// created before keeps the options it was created with).
///
/// Point reads are most of an index query's work (row lookups, presence checks), so every
/// table keeps its whole index block and bloom filter in memory (pinned, not partitioned, as
/// RocksDB keeps a table reader's index and filter by default): a read checks the filter,
/// binary-searches the index and loads one data block. fjall's defaults pin only the upper
/// levels and partition the last ones, so a read in a compacted tree first searched a
/// top-level index and fetched a filter partition and an index partition through the block
/// cache (1.2 µs for a presence check, 5 µs for a get in the peers bench's profile). Data
/// blocks carry a hash index, so a point read finds its entry without a binary search.
/// Pinned filters cost about 1.25 bytes per key (10 bits), index blocks about one key per
/// 4 KiB data block.
fn data_keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .filter_block_pinning_policy(PinningPolicy::all(true))
        .index_block_pinning_policy(PinningPolicy::all(true))
        .filter_block_partitioning_policy(PartitioningPolicy::all(false))
        .index_block_partitioning_policy(PartitioningPolicy::all(false))
        .data_block_hash_ratio_policy(HashRatioPolicy::all(DATA_BLOCK_HASH_RATIO))
}

/// The options of a placed prefix's keyspace: the data keyspace's, with the prefix's own on
/// top.
fn placed_keyspace_options(options: &StorageOptions) -> KeyspaceCreateOptions {
    placement::keyspace_options(
        data_keyspace_options(),
        options,
        SEAL_MEMTABLE_BYTES,
        DATA_BLOCK_HASH_RATIO,
    )
}

/// Hash index slots per entry of a data block (the hash index of RocksDB's data blocks uses
/// 0.75 by default).
const DATA_BLOCK_HASH_RATIO: f32 = 0.75;

impl Store<FjallBackend> {
    /// Opens (creating if needed) the database in `dir`.
    ///
    /// Only one `FjallStore` may have a directory open at a time; fjall locks it.
    pub fn open(dir: &Path, durability: Durability) -> Result<Self> {
        Self::open_with_cache(dir, durability, DEFAULT_FJALL_CACHE_BYTES)
    }

    /// The tables of the LSM tree holding the data (a read consults those whose key range
    /// covers it): one per ingested batch after a bulk load, until compaction merges them.
    pub fn table_count(&self) -> usize {
        self.backend().data.table_count()
    }

    /// What the keyspace holding the placed prefix `prefix` is made of, if it is placed.
    pub fn placed_figures(&self, prefix: &[u8]) -> Option<PlacedFigures> {
        let layout = self.backend().layout();
        let keyspace = match layout.owner(prefix, SeqNo::MAX) {
            placement::Owner::Placed(keyspace) => keyspace.clone(),
            placement::Owner::Data => return None,
        };
        Some(PlacedFigures {
            tables: keyspace.table_count(),
            filter_bytes: keyspace.tree.filter_size(),
            disk_bytes: keyspace.disk_space(),
        })
    }

    /// The bytes in the data keyspace's active memtable, as fjall counts them (what a write
    /// adds before it is sealed and flushed into a table).
    pub fn memtable_bytes(&self) -> u64 {
        self.backend().memtable_bytes()
    }

    /// Like [`FjallStore::open`], with a block cache of `cache_bytes` (filled as blocks are
    /// read, so memory grows to it only with use).
    pub fn open_with_cache(dir: &Path, durability: Durability, cache_bytes: u64) -> Result<Self> {
        // One background worker: with more, fjall's worker 0 hands every compaction request
        // back to the queue while another worker compacts, and spins doing so (profiled at a
        // third of a core during a bulk load on two cores). The store has one keyspace, so
        // compactions run one at a time anyway.
        let expiry: expiry_filter::SharedRules = Arc::default();
        let factory: Arc<dyn fjall::compaction::filter::Factory> =
            Arc::new(expiry_filter::ExpiryFactory {
                rules: Arc::clone(&expiry),
            });
        let db = Database::builder(dir)
            .cache_size(cache_bytes)
            // Every keyspace drops what the expiry rules (a table's TTL) call expired.
            .with_compaction_filter_factories(Arc::new(move |_keyspace| Some(Arc::clone(&factory))))
            .worker_threads(1)
            .max_journaling_size(MAX_JOURNALING_BYTES)
            // Uncompressed, so that the journal's padding (see `journal`) counts in full.
            // Only values over 4 KiB were compressed, and a journal now lives briefly.
            .journal_compression(CompressionType::None)
            .open()?;
        let data = db.keyspace(DATA_KEYSPACE, data_keyspace_options)?;
        let padding = db.keyspace(journal::JOURNAL_KEYSPACE, KeyspaceCreateOptions::default)?;
        let placements = db.keyspace(
            placement::PLACEMENTS_KEYSPACE,
            KeyspaceCreateOptions::default,
        )?;
        let layout = Arc::new(RwLock::new(Arc::new(placement::open_layout(
            &db,
            &placements,
            placed_keyspace_options,
        )?)));
        Ok(Store::with_backend(FjallBackend {
            db,
            dir: dir.to_path_buf(),
            data,
            padding,
            placements,
            sweeper: sweeper::Sweeper::start(Arc::clone(&layout)),
            layout,
            durability,
            async_wal: std::sync::OnceLock::new(),
            expiry,
            dead: Mutex::new(DeadEntries::default()),
        }))
    }
}

/// What one placed prefix's keyspace is made of (see [`FjallStore::placed_figures`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedFigures {
    /// Tables (SSTs) of its LSM tree.
    pub tables: usize,
    /// Bytes of the bloom filters of its tables.
    pub filter_bytes: u64,
    /// Bytes of its files.
    pub disk_bytes: u64,
}

/// The fjall database behind a [`FjallStore`].
pub struct FjallBackend {
    db: Database,
    dir: PathBuf,
    data: Keyspace,
    /// The keyspace `journal` pads the journal through.
    padding: Keyspace,
    /// The keyspace `placement` keeps the layout in.
    placements: Keyspace,
    /// Which keyspace holds each placed prefix (see `placement`). Readers take their
    /// snapshot under its read lock, so that a move, made under its write lock, is either
    /// before their snapshot or after their layout.
    layout: Arc<RwLock<Arc<placement::Layout>>>,
    /// Sweeps the placed keyspaces that ask for it (see `sweeper`).
    sweeper: sweeper::Sweeper,
    /// What a commit whose batch asks for nothing gets.
    durability: Durability,
    /// Started at the first ASYNC_WAL commit.
    async_wal: std::sync::OnceLock<async_wal::Flusher>,
    /// What compactions drop as expired (see `expiry_filter`).
    expiry: expiry_filter::SharedRules,
    /// The dead entries counted into the active memtable (see [`SEAL_DEAD_ENTRIES`]).
    dead: Mutex<DeadEntries>,
}

/// Dead entries written into one memtable, by its id.
#[derive(Debug, Default)]
struct DeadEntries {
    memtable: u64,
    count: u64,
}

impl FjallBackend {
    /// Writes an ascending run of mutations as new tables of the LSM tree instead of through
    /// the journal and the memtable. fjall registers the tables under one new sequence number,
    /// so the run becomes visible at once like a batch, and is newer than every older version
    /// of its keys. The tables are written and synced before `finish` returns, so this is at
    /// least as durable as the journaled path.
    fn ingest(&self, keyspace: &Keyspace, ascending: &[&Mutation]) -> Result<()> {
        let mut ingestion = keyspace.start_ingestion()?;
        for mutation in ascending {
            match mutation {
                Mutation::Put { key, value } => {
                    ingestion.write(key.as_slice(), value.as_slice())?
                }
                Mutation::Delete { key } => ingestion.write_tombstone(key.as_slice())?,
            }
        }
        ingestion.finish()?;
        journal::seal_if_long(&self.dir, &self.padding)
    }

    fn memtable_bytes(&self) -> u64 {
        self.data.tree.active_memtable().size()
    }

    /// After a commit of `durability`: an ASYNC_WAL one is left for the flusher to push
    /// (pushed now when no flusher thread could be started).
    fn after_commit(&self, durability: Durability) -> Result<()> {
        if durability == Durability::AsyncWal
            && !self
                .async_wal
                .get_or_init(|| async_wal::Flusher::start(self.db.clone()))
                .wants_push()
        {
            self.db.persist(PersistMode::Buffer)?;
        }
        Ok(())
    }

    /// Seals the memtable of each placed keyspace in `written` that reached its size (the
    /// prefix's MEMSTORE_FLUSHSIZE, else [`SEAL_MEMTABLE_BYTES`]), before fjall would ask.
    fn seal_placed(&self, layout: &placement::Layout, written: &[&Keyspace]) -> Result<()> {
        for keyspace in written {
            let limit = layout
                .memtable_limit(keyspace)
                .unwrap_or(SEAL_MEMTABLE_BYTES);
            if keyspace.tree.active_memtable().size() >= limit {
                keyspace.rotate_memtable()?;
            }
        }
        Ok(())
    }

    /// Seals the data memtable once it reaches [`SEAL_MEMTABLE_BYTES`], or holds
    /// [`SEAL_DEAD_ENTRIES`] dead entries (and at least [`SEAL_DEAD_MIN_BYTES`]); `dead` is what
    /// the batch just committed added to the memtable with id `memtable`.
    fn seal_full_memtable(&self, memtable: u64, dead: u64) -> Result<()> {
        let bytes = self.memtable_bytes();
        let dead_so_far = {
            let mut entries = self.dead.lock().unwrap_or_else(PoisonError::into_inner);
            if entries.memtable != memtable {
                *entries = DeadEntries { memtable, count: 0 };
            }
            entries.count += dead;
            entries.count
        };
        let many_dead = dead_so_far >= SEAL_DEAD_ENTRIES && bytes >= SEAL_DEAD_MIN_BYTES;
        if bytes >= SEAL_MEMTABLE_BYTES || many_dead {
            self.data.rotate_memtable()?;
        }
        Ok(())
    }

    fn view(&self) -> FjallView {
        let layout = self.layout.read().unwrap_or_else(PoisonError::into_inner);
        FjallView {
            snapshot: self.db.snapshot(),
            data: self.data.clone(),
            layout: Arc::clone(&layout),
        }
    }

    fn layout(&self) -> Arc<placement::Layout> {
        Arc::clone(&self.layout.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every keyspace holding data: the data keyspace, the placed ones, the layout's.
    fn data_keyspaces(&self) -> Vec<Keyspace> {
        let layout = self.layout();
        let mut keyspaces = vec![self.data.clone(), self.placements.clone()];
        keyspaces.extend(layout.keyspaces().cloned());
        keyspaces
    }
}

#[async_trait::async_trait]
impl KvRead for FjallBackend {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.view().get(key)
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        page_turn().await;
        self.view().multi_get(keys)
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        page_turn().await;
        self.view().scan(range, direction, limit)
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        page_turn().await;
        self.view().visit(range, direction, limit, visit)
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        page_turn().await;
        self.view().count(range, cap)
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        page_turn().await;
        self.view().contains(keys)
    }
}

impl std::fmt::Debug for FjallBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallStore")
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

impl Backend for FjallBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durable: true,
            native_reverse_scan: true,
            snapshots: true,
            shared: false,
            max_commit_keys: None,
            // fjall 3.1 with 1M rows just loaded: a get ~3.5 µs, opening a range ~5.4 µs, each
            // further entry ~0.28 µs.
            durability: self.durability,
            honours_durability: true,
            costs: AccessCosts {
                seek_ns: 5_400,
                next_ns: 280,
                get_ns: 3_500,
                check_ns: 1_500,
                reverse_reads_whole_range: false,
                range_in_batch_ns: None,
            },
        }
    }

    fn persist(&self) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }

    fn checkpoint(&self) -> Result<()> {
        let data = self.data_keyspaces();
        let keyspaces = (data.as_slice(), &self.padding);
        if !journal::checkpoint(&self.db, &self.dir, keyspaces, journal::CHECKPOINT_WAIT)? {
            return Err(StoreError::Busy {
                what: "the journal could not be trimmed: fjall's worker did not flush in time",
            });
        }
        self.persist()
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        Arc::new(self.view())
    }

    /// A major compaction of every keyspace holding data (the expiry rules' filter drops what
    /// they call expired): every run of level 0 (a bulk load leaves one per ingested batch,
    /// each spanning the table and its indexes) merged into the last level, so a read seeks
    /// one table per key range instead of one per run. Memtables are flushed first, so that
    /// the compaction covers everything written.
    fn compact(&self) -> Result<()> {
        for keyspace in self.data_keyspaces() {
            keyspace.rotate_memtable_and_wait()?;
            keyspace.major_compact()?;
        }
        Ok(())
    }

    /// From the LSM trees' tables and memtables (see `size`), each piece of the range in the
    /// keyspace holding it.
    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        let layout = self.layout();
        if layout.is_empty() {
            return size::range_size(&self.data, range).map(Some);
        }
        let mut bytes = 0u64;
        for (piece, owner) in layout.pieces(range, SeqNo::MAX) {
            bytes += size::range_size(owner.keyspace(&self.data), &piece)?;
        }
        Ok(Some(bytes))
    }

    fn place(&self, prefix: &[u8], options: &StorageOptions) -> Result<bool> {
        let mut layout = self.layout.write().unwrap_or_else(PoisonError::into_inner);
        let moved = placement::place(
            &self.db,
            &self.data,
            &self.placements,
            &layout,
            prefix,
            options,
            placed_keyspace_options,
        )?;
        *layout = Arc::new(moved);
        Ok(true)
    }

    fn placements(&self) -> Vec<(Vec<u8>, StorageOptions)> {
        self.layout().placements()
    }

    /// The database's files: tables, journals and fjall's own (fjall's `disk_space`).
    fn total_size(&self) -> Result<Option<u64>> {
        Ok(Some(self.db.disk_space()?))
    }

    fn set_expiry_rules(&self, rules: Arc<dyn crate::expiry::ExpiryRules>) -> bool {
        *self.expiry.write().unwrap_or_else(PoisonError::into_inner) = Some(rules);
        true
    }

    fn metrics(&self) -> StoreMetrics {
        let tree_metrics = self.data.metrics();
        StoreMetrics {
            memtable_bytes: Some(self.data.tree.active_memtable().size()),
            sealed_memtables: Some(self.data.sealed_memtable_count() as u64),
            tables: Some(self.data.table_count() as u64),
            compactions_running: Some(self.db.active_compactions() as u64),
            compactions_done: Some(self.db.compactions_completed() as u64),
            compaction_seconds: Some(self.db.time_compacting().as_secs_f64()),
            journal_files: Some(self.db.journal_count() as u64),
            disk_bytes: self.db.disk_space().ok(),
            cache_bytes: Some(self.db.cache_size()),
            cache_capacity_bytes: Some(self.db.cache_capacity()),
            cache_hits: Some(tree_metrics.block_load_cached_count() as u64),
            block_loads: Some(tree_metrics.block_loads() as u64),
            ..StoreMetrics::default()
        }
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        // fjall gives every item of a batch the same sequence number, and its API does not
        // promise which of two items for one key wins (in memory or on journal replay); keep
        // only the last operation per key ourselves.
        // A transaction's batch comes out of its ordered write buffer with each key once; only
        // a batch that is not strictly ascending needs the map.
        let mutations = batch.mutations();
        let ascending = mutations
            .windows(2)
            .all(|pair| pair[0].key() < pair[1].key());
        let deduplicated: Vec<&Mutation> = if ascending {
            mutations.iter().collect()
        } else {
            let mut last: BTreeMap<&[u8], &Mutation> = BTreeMap::new();
            for mutation in mutations {
                last.insert(mutation.key(), mutation);
            }
            last.into_values().collect()
        };
        // Each mutation goes to the keyspace holding its key (see `placement`): the data
        // keyspace when nothing is placed.
        let layout = self.layout();
        let owner = |key: &[u8]| -> &Keyspace {
            if layout.is_empty() {
                &self.data
            } else {
                layout.owner(key, SeqNo::MAX).keyspace(&self.data)
            }
        };
        // A large run is ingested when it lands in one keyspace: an ingestion is one
        // keyspace's, and two would publish at two sequence numbers.
        if deduplicated.len() >= INGEST_MIN_MUTATIONS
            && let Some(first) = deduplicated.first().map(|m| owner(m.key()))
            && deduplicated
                .iter()
                .all(|m| owner(m.key()).id() == first.id())
        {
            return self.ingest(first, &deduplicated);
        }
        let memtable = self.data.tree.active_memtable();
        let held = |key: &[u8]| memtable.get(key, SeqNo::MAX).is_some();
        let dead = if layout.is_empty() {
            dead_entries(&deduplicated, held)
        } else {
            let in_data: Vec<&Mutation> = deduplicated
                .iter()
                .copied()
                .filter(|m| owner(m.key()).id() == self.data.id())
                .collect();
            dead_entries(&in_data, held)
        };
        let durability = batch.durability().unwrap_or(self.durability);
        let mut out = self.db.batch().durability(persist_mode(durability));
        // The placed keyspaces written, each once.
        let mut placed: Vec<&Keyspace> = Vec::new();
        for mutation in deduplicated {
            let keyspace = owner(mutation.key());
            if keyspace.id() != self.data.id() && !placed.iter().any(|k| k.id() == keyspace.id()) {
                placed.push(keyspace);
            }
            match mutation {
                Mutation::Put { key, value } => {
                    out.insert(keyspace, key.as_slice(), value.as_slice())
                }
                Mutation::Delete { key } => out.remove(keyspace, key.as_slice()),
            }
        }
        out.commit()?;
        self.after_commit(durability)?;
        self.seal_placed(&layout, &placed)?;
        self.seal_full_memtable(memtable.id(), dead)
    }
}

impl Drop for FjallBackend {
    /// A clean close: the next open need not replay what this process wrote, unless fjall's
    /// worker was too busy compacting to flush it within `journal::CLOSE_WAIT`. An error here
    /// loses nothing (the journal still holds every acknowledged write); it only leaves the
    /// next open slower.
    fn drop(&mut self) {
        // The flusher holds a handle of the database: stopped first, so the database closes
        // with this store.
        drop(self.async_wal.take());
        // Stopped before the close, which would otherwise wait behind a sweep's compaction.
        drop(std::mem::replace(
            &mut self.sweeper,
            sweeper::Sweeper::stopped(),
        ));
        let data = self.data_keyspaces();
        let keyspaces = (data.as_slice(), &self.padding);
        let _ = journal::checkpoint(&self.db, &self.dir, keyspaces, journal::CLOSE_WAIT);
        let _ = self.persist();
    }
}

/// How many dead entries `mutations` leave in the memtable once written: a tombstone is one,
/// and so is the version a put shadows (`held(key)`: the memtable holds a version of `key`).
/// Batches larger than [`DEAD_SAMPLES_PER_BATCH`] are sampled.
fn dead_entries(mutations: &[&Mutation], held: impl Fn(&[u8]) -> bool) -> u64 {
    let stride = mutations.len().div_ceil(DEAD_SAMPLES_PER_BATCH).max(1);
    let sampled = mutations
        .iter()
        .step_by(stride)
        .filter(|mutation| match mutation {
            Mutation::Delete { .. } => true,
            Mutation::Put { key, .. } => held(key),
        })
        .count();
    (sampled * stride) as u64
}

/// Reads at one fjall snapshot; also the `KvRead` handed out by [`KvStore::snapshot`].
struct FjallView {
    snapshot: Snapshot,
    data: Keyspace,
    /// Where the placed prefixes were for this snapshot (see `placement`).
    layout: Arc<placement::Layout>,
}

/// The entries of a range read, in scan order, as fjall lends them.
type Entries<'a> = Box<dyn Iterator<Item = Result<(fjall::UserKey, fjall::UserValue)>> + 'a>;

impl FjallView {
    /// The keyspace holding `key` for this snapshot.
    fn keyspace_of(&self, key: &[u8]) -> &Keyspace {
        if self.layout.is_empty() {
            return &self.data;
        }
        match self.layout.owner(key, self.snapshot.seqno()) {
            placement::Owner::Data => &self.data,
            placement::Owner::Placed(keyspace) => keyspace,
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if !storable(key) {
            return Ok(None);
        }
        let value = self.snapshot.get(self.keyspace_of(key), key)?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        in_key_order(keys, |key| self.get(key))
    }

    fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        in_key_order(keys, |key| {
            if !storable(key) {
                return Ok(false);
            }
            Ok(self.snapshot.contains_key(self.keyspace_of(key), key)?)
        })
    }

    /// The entries of `range` in `direction`, piece by piece from the keyspaces holding them
    /// (the whole range from the data keyspace when nothing is placed).
    fn entries(&self, range: &KeyRange, direction: Direction) -> Entries<'_> {
        let pieces = if self.layout.is_empty() {
            vec![(range.clone(), placement::Owner::Data)]
        } else {
            self.layout.pieces(range, self.snapshot.seqno())
        };
        let mut readers: Vec<Entries<'_>> = Vec::with_capacity(pieces.len());
        for (piece, owner) in pieces {
            let Some((start, end)) = engine_bounds(&piece) else {
                continue;
            };
            let bounds = (start.map(<[u8]>::to_vec), end.map(<[u8]>::to_vec));
            let keyspace = match owner {
                placement::Owner::Data => &self.data,
                placement::Owner::Placed(keyspace) => keyspace,
            };
            let entries = self
                .snapshot
                .range::<Vec<u8>, _>(keyspace, bounds)
                .map(|guard| Ok(guard.into_inner()?));
            readers.push(match direction {
                Direction::Forward => Box::new(entries),
                Direction::Reverse => Box::new(entries.rev()),
            });
        }
        if direction == Direction::Reverse {
            readers.reverse();
        }
        Box::new(readers.into_iter().flatten())
    }

    fn count(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        let Some(bounds) = engine_bounds(range) else {
            return Ok(CountPage::default());
        };
        if !self.layout.is_empty() {
            let keys = self
                .entries(range, Direction::Forward)
                .map(|entry| entry.map(|(key, _)| key));
            return count_keys(keys, range, cap);
        }
        // Keys only: fjall then need not load values that live apart from their keys.
        let keys = self
            .snapshot
            .range::<&[u8], _>(&self.data, bounds)
            .map(|guard| Ok(guard.key()?));
        count_keys(keys, range, cap)
    }

    fn scan(&self, range: &KeyRange, direction: Direction, limit: usize) -> Result<ScanPage> {
        let Some(bounds) = engine_bounds(range) else {
            return Ok(ScanPage::default());
        };
        if !self.layout.is_empty() {
            let entries = self
                .entries(range, direction)
                .map(|entry| entry.map(|(key, value)| (key.to_vec(), value.to_vec())));
            return collect_page(entries, range, direction, limit);
        }
        let entries = self
            .snapshot
            .range::<&[u8], _>(&self.data, bounds)
            .map(|guard| {
                let (key, value) = guard.into_inner()?;
                Ok((key.to_vec(), value.to_vec()))
            });
        match direction {
            Direction::Forward => collect_page(entries, range, direction, limit),
            Direction::Reverse => collect_page(entries.rev(), range, direction, limit),
        }
    }
}

impl FjallView {
    /// [`FjallView::scan`], lending the entries fjall materialized instead of copying them.
    fn visit(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        let Some(bounds) = engine_bounds(range) else {
            return Ok(None);
        };
        if !self.layout.is_empty() {
            let entries = self.entries(range, direction);
            return visit_entries(entries, range, direction, limit, visit);
        }
        let entries = self
            .snapshot
            .range::<&[u8], _>(&self.data, bounds)
            .map(|guard| Ok(guard.into_inner()?));
        match direction {
            Direction::Forward => visit_entries(entries, range, direction, limit, visit),
            Direction::Reverse => visit_entries(entries.rev(), range, direction, limit, visit),
        }
    }
}

#[async_trait::async_trait]
impl KvRead for FjallView {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        FjallView::get(self, key)
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        page_turn().await;
        FjallView::multi_get(self, keys)
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        page_turn().await;
        self.scan(range, direction, limit)
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        page_turn().await;
        self.visit(range, direction, limit, visit)
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        page_turn().await;
        self.count(range, cap)
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        page_turn().await;
        FjallView::contains(self, keys)
    }
}

/// Whether fjall can hold `key`. It asserts on keys it cannot store, so reads treat such keys
/// as absent without asking it.
fn storable(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN
}

type Bounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

/// `range` as bounds fjall accepts, or `None` if it cannot contain a storable key.
///
/// fjall panics on bound keys longer than [`MAX_KEY_LEN`]. Since stored keys are never that
/// long, such a bound is equivalent to one on its first `MAX_KEY_LEN` bytes `p`: a stored key is
/// `>= start` iff it is `> p`, and `< end` iff it is `<= p`.
fn engine_bounds(range: &KeyRange) -> Option<Bounds<'_>> {
    if range.is_empty() {
        return None;
    }
    let start = match range.start.get(..MAX_KEY_LEN) {
        Some(p) if range.start.len() > MAX_KEY_LEN => Bound::Excluded(p),
        _ => Bound::Included(range.start.as_slice()),
    };
    let end = match range.end.as_deref() {
        None => Bound::Unbounded,
        Some(end) => match end.get(..MAX_KEY_LEN) {
            Some(p) if end.len() > MAX_KEY_LEN => Bound::Included(p),
            _ => Bound::Excluded(end),
        },
    };
    // Truncation can make the bounds meet (e.g. `(p, p]`); don't hand the engine an empty or
    // inverted range.
    let empty = match (start, end) {
        (Bound::Excluded(s), Bound::Included(e)) => e <= s,
        (Bound::Excluded(s), Bound::Excluded(e)) => e <= s,
        _ => false,
    };
    (!empty).then_some((start, end))
}
