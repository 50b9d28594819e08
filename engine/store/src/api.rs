//! The traits the rest of rowdex codes against.

use std::sync::Arc;

use crate::range::EntryVisitor;
use crate::store_metrics::StoreMetrics;
use crate::{CountPage, Direction, KeyRange, Result, ScanPage, WriteBatch};

/// What a backend can do, so callers can pick strategies (e.g. whether reverse scans are cheap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Acknowledged writes survive a restart of the process.
    pub durable: bool,
    /// Reverse scans are served natively rather than by buffering a forward scan.
    pub native_reverse_scan: bool,
    /// [`KvStore::snapshot`] gives a true point-in-time view.
    pub snapshots: bool,
    /// Other processes may open and write the same store at the same time (a cluster), so
    /// what a process caches of it (the catalog) must be checked against it.
    pub shared: bool,
    /// The most keys one atomic batch or transaction commit should carry (`None`: no limit
    /// short of memory). Bulk writers size their batches by it: etcd refuses transactions
    /// past its `--max-txn-ops`.
    pub max_commit_keys: Option<usize>,
    /// What a commit that asks for no durability of its own gets (see [`crate::Durability`]):
    /// the durability the store was opened with (fjall), `FsyncWal` where every commit is
    /// synced by a quorum (etcd), `SyncWal` in memory (where nothing survives a restart).
    /// Whether the store honours a durability asked for: [`Capabilities::honours_durability`].
    pub durability: crate::Durability,
    /// Whether a commit's durability changes what it survives (fjall); the others do one
    /// thing whatever is asked.
    pub honours_durability: bool,
    /// What reads cost on this backend, for the planner's cost model.
    pub costs: AccessCosts,
}

/// Typical costs of the read operations of a backend, in nanoseconds, as measured on a
/// development machine. Only their ratios matter: they decide, for instance, whether seeking an
/// index stream forward beats reading it entry by entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessCosts {
    /// Opening a range scan and reading its first entry.
    pub seek_ns: u32,
    /// Reading the next entry of an open scan.
    pub next_ns: u32,
    /// One point get.
    pub get_ns: u32,
    /// Checking one key's presence ([`KvRead::contains`] on a batch), most often of an absent
    /// key: the probe of an intersection input checked rather than read.
    pub check_ns: u32,
    /// A reverse page makes the backend read the whole rest of the range, not just the page
    /// (etcd sorts a descending range on the server): a reverse scan stopped early by a LIMIT
    /// still pays `next_ns` for every entry of its range.
    pub reverse_reads_whole_range: bool,
    /// Reading one range within a batch of ranges ([`KvRead::scan_pages`]) to its first entry,
    /// where the backend batches them (a batch also pays one `seek_ns`); `None` where each
    /// range is a seek of its own.
    pub range_in_batch_ns: Option<u32>,
}

/// Ranges a reader asks a batching backend for at once (etcd's default limit is 128
/// operations per transaction).
pub const RANGES_PER_BATCH: usize = 100;

/// A backend's page read (a scan or visit page, a count, a batch of gets or presence checks)
/// spends one unit of the running task's tokio budget first, and yields when the budget is
/// spent: a scan of millions of rows then lets the other connections on its worker thread run,
/// and lets a statement waiting on a cancel signal beside its scan notice it. Outside a tokio
/// runtime it does nothing.
pub(crate) async fn page_turn() {
    tokio::task::consume_budget().await;
}

/// Read access: the live store, a snapshot, or a transaction.
#[async_trait::async_trait]
pub trait KvRead: Send + Sync {
    /// The value stored under `key`, if any.
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// The values of several keys, in the order asked, read from one consistent state.
    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>>;

    /// One page of at most `limit` entries of `range` in `direction` (Reverse = descending
    /// keys, starting from the top of the range).
    ///
    /// The page's `resume` is the part of the range not yet returned, or `None` when nothing
    /// is left. With `limit == 0` the page is empty and `resume` tells whether the range holds
    /// any entry at all.
    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage>;

    /// [`KvRead::scan_page`] without a copy per entry: each of at most `limit` entries of
    /// `range` in `direction` is handed to `visit`, in scan order, as borrowed bytes. Returns
    /// the page's `resume` (as `scan_page` does). Backends lend their own data in place (the
    /// default reads a page of copies); a reader that keeps an entry copies it itself.
    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        let page = self.scan_page(range, direction, limit).await?;
        for (key, value) in &page.entries {
            visit(key, value);
        }
        Ok(page.resume)
    }

    /// Counts the entries of `range`, at most `cap` of them, without returning them; the
    /// page's `resume` is what is left of the range when the cap stopped the count. Backends
    /// count in place, without copying entries out (the default reads a page).
    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        let limit = usize::try_from(cap).unwrap_or(usize::MAX);
        let page = self.scan_page(range, Direction::Forward, limit).await?;
        Ok(CountPage {
            entries: page.entries.len() as u64,
            resume: page.resume,
        })
    }

    /// The first page of each of `ranges` (as [`KvRead::scan_page`] reads it, `limit` entries
    /// at most), in the order given, from one consistent state. A backend whose every read is a
    /// round trip answers a batch of ranges in one (etcd: one read-only transaction per
    /// [`RANGES_PER_BATCH`] ranges) and says so by [`KvRead::batches_ranges`]; the default
    /// reads the ranges one by one.
    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        let mut pages = Vec::with_capacity(ranges.len());
        for range in ranges {
            pages.push(self.scan_page(range, direction, limit).await?);
        }
        Ok(pages)
    }

    /// Whether [`KvRead::scan_pages`] reads a batch of ranges in fewer round trips than one
    /// per range: a reader of many small ranges (the probes of a lookup join, an IN list over
    /// an index) then asks for them together.
    fn batches_ranges(&self) -> bool {
        false
    }

    /// Whether each of `keys` is present, read from one consistent state. Backends answer
    /// without copying values out, and an on-disk store may rule a key out by its filters
    /// alone (the default reads the values).
    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        let values = self.multi_get(keys).await?;
        Ok(values.iter().map(Option::is_some).collect())
    }
}

/// A key-value store.
#[async_trait::async_trait]
pub trait KvStore: KvRead {
    /// What this backend offers.
    fn capabilities(&self) -> Capabilities;

    /// Applies the batch atomically: all of it or none of it, visible at once.
    async fn write(&self, batch: WriteBatch) -> Result<()>;

    /// A consistent point-in-time read view; later writes are invisible to it.
    ///
    /// Keep snapshots short-lived: they pin old versions of the data.
    fn snapshot(&self) -> Arc<dyn KvRead>;

    /// Starts an optimistic transaction.
    ///
    /// It reads from a snapshot taken now, sees its own writes and buffers them. Commit checks
    /// that nothing it read (keys it got, and the parts of ranges it scanned) has changed since
    /// the snapshot, then writes atomically; otherwise it returns
    /// [`crate::StoreError::Conflict`] and writes nothing. Dropping it without committing
    /// discards it.
    async fn begin(&self) -> Result<Box<dyn Transaction>>;

    /// Makes every acknowledged write durable now (survives power loss). No-op in memory.
    async fn flush(&self) -> Result<()>;

    /// [`KvStore::flush`], and moves what the store would replay at its next open into its
    /// tables, so that the open is quick (fjall: the memtable flushed, a long journal sealed
    /// and deleted). The store stays usable. Dropping the last handle to a store does the same.
    async fn checkpoint(&self) -> Result<()> {
        self.flush().await
    }

    /// Rewrites the store's tables into as few as it can, waiting until that is done: after a
    /// bulk load, a read then consults one table per key instead of one per loaded batch
    /// (fjall: a major compaction). It costs a rewrite of every stored byte. A no-op in
    /// memory.
    async fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// About how many bytes the entries of `range` take in the store (see each backend for how
    /// exact), or `None` when the backend cannot tell without reading them all (etcd).
    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        let _ = range;
        Ok(None)
    }

    /// About how many bytes the whole store takes (its files, or its memory), or `None` when
    /// the backend cannot tell.
    fn total_size(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// What the store reports of itself for monitoring (see [`StoreMetrics`]).
    fn metrics(&self) -> StoreMetrics {
        StoreMetrics::default()
    }

    /// Keeps the entries under `prefix` apart from the rest, stored with `options` (default
    /// options: with the rest again); those already written move, atomically, and every later
    /// read and write of the prefix goes where they are. False when the store keeps everything
    /// alike (the default answer): memory and etcd. A prefix inside or around a placed one is
    /// refused.
    async fn place(&self, prefix: &[u8], options: &crate::StorageOptions) -> Result<bool> {
        let _ = (prefix, options);
        Ok(false)
    }

    /// The prefixes kept apart, with their options (see [`KvStore::place`]).
    fn placements(&self) -> Vec<(Vec<u8>, crate::StorageOptions)> {
        Vec::new()
    }

    /// Drops the entries `rules` call expired as compaction meets them (see
    /// [`crate::expiry`]); false when the store has no compaction to drop them in (they stay
    /// until deleted), which is what the default answers.
    fn set_expiry_rules(&self, rules: Arc<dyn crate::expiry::ExpiryRules>) -> bool {
        let _ = rules;
        false
    }

    /// The row locks this process shares with the other processes of the database, for a
    /// store several processes share (etcd); `None` when the process is the only one (its
    /// own lock table is then all there is).
    fn cluster_locks(&self) -> Option<Arc<dyn crate::locks::ClusterLocks>> {
        None
    }
}

/// A point in a transaction's buffered writes (see [`Transaction::savepoint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint {
    /// Undo records written before it.
    pub(crate) undo_len: usize,
    /// Savepoints held when it was taken (0: the outermost).
    pub(crate) depth: usize,
}

/// Which of a transaction's reads its commit validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Validation {
    /// Every read: the commit fails if anything the transaction read has changed since
    /// (serializable; what [`KvStore::begin`] starts with).
    #[default]
    EveryRead,
    /// Only the reads made through [`Transaction::guarded`]: a writer that locks the rows it
    /// changes reads them (and the keys whose absence it relies on) that way, and finds the
    /// rows to change with unvalidated reads (read committed, repeatable read).
    GuardedReads,
}

/// An optimistic transaction (see [`KvStore::begin`]).
///
/// Its [`KvRead`] methods read the snapshot overlaid with the transaction's own writes and
/// record what was read for validation at commit (every read, or only guarded ones: see
/// [`Validation`]).
#[async_trait::async_trait]
pub trait Transaction: KvRead {
    /// Sets which reads from now on are recorded for validation at commit (what was recorded
    /// before stays recorded).
    fn set_validation(&mut self, validation: Validation);

    /// Asks the commit for `durability` instead of the store's default (None: the default
    /// again). See [`crate::Durability`] for what each survives.
    fn set_durability(&mut self, durability: Option<crate::Durability>);

    /// The durability the commit asks for (None: the store's default).
    fn durability(&self) -> Option<crate::Durability>;

    /// The transaction's reads, recorded for validation at commit whatever its
    /// [`Validation`].
    fn guarded(&self) -> Box<dyn KvRead + '_>;

    /// Moves the transaction's snapshot to the latest committed state (its own writes stay
    /// on top): the next statement of a read-committed transaction, or one that found a row it
    /// locked changed. What was recorded for validation stays recorded, so a recorded read
    /// that the move shows changed fails the commit. False, changing nothing, where the
    /// backend cannot move a snapshot.
    fn refresh(&mut self) -> bool;

    /// Whether any of `keys` the transaction has not written holds something else in the
    /// latest committed state than in its snapshot: a row it locked was changed by a commit
    /// after its snapshot was taken. Recorded for nothing.
    async fn changed_since_snapshot(&self, keys: &[Vec<u8>]) -> Result<bool>;

    /// Buffers a put; nothing is visible to others before commit.
    fn put(&mut self, key: Vec<u8>, value: Vec<u8>);

    /// Buffers a delete.
    fn delete(&mut self, key: Vec<u8>);

    /// Buffers the puts of a run of strictly ascending keys (a bulk load's batch, sorted by its
    /// writer): the same as a [`Transaction::put`] of each, which is what the default does.
    /// A transaction may take a sorted run more cheaply than key by key.
    fn put_run(&mut self, ascending: Vec<(Vec<u8>, Vec<u8>)>) {
        for (key, value) in ascending {
            self.put(key, value);
        }
    }

    /// Marks the buffered writes as they are now, for [`Transaction::rollback_to`]. From the
    /// first savepoint on, every write also remembers what it replaced, until the outermost
    /// savepoint is released.
    fn savepoint(&mut self) -> Savepoint;

    /// Undoes every write buffered since `savepoint` (and keeps the savepoint, so it can be
    /// rolled back to again). What the undone statements read stays in the read set: the
    /// commit may conflict on it, which is safe, never wrong.
    fn rollback_to(&mut self, savepoint: Savepoint);

    /// Forgets `savepoint` and every one taken after it; the writes since stay buffered.
    fn release(&mut self, savepoint: Savepoint);

    /// Validates the read set and applies the buffered writes atomically.
    ///
    /// Returns [`crate::StoreError::Conflict`] (writing nothing) if a concurrent commit changed
    /// anything this transaction read. A transaction without writes commits trivially: it
    /// already observed one consistent snapshot.
    async fn commit(self: Box<Self>) -> Result<()>;
}
