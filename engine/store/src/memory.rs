//! In-memory backend with real snapshots.
//!
//! The data is a multi-version map (see the `mvcc` module): a snapshot is just a sequence
//! number registered with the map, so taking one is O(1) and writes never copy the map, while
//! old versions survive exactly as long as some snapshot can still read them. Snapshots
//! unregister themselves on drop.
//!
//! One `RwLock` guards the map. A panic while it is held poisons it, after which every
//! operation reports [`StoreError::LockPoisoned`] rather than read a possibly half-applied
//! batch.

mod mvcc;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use crate::api::{AccessCosts, Capabilities, KvRead, page_turn};
use crate::batch::WriteBatch;
use crate::error::{Result, StoreError};
use crate::optimistic::{Backend, Store};
use crate::range::{CountPage, Direction, EntryVisitor, KeyRange, ScanPage, in_key_order};
use mvcc::MvccState;

type Shared = Arc<RwLock<MvccState>>;

/// A volatile store: fast, isolated like the disk store, gone when dropped.
pub type MemoryStore = Store<MemoryBackend>;

impl Store<MemoryBackend> {
    /// An empty store.
    pub fn new() -> Self {
        Store::with_backend(MemoryBackend {
            state: Shared::default(),
        })
    }
}

impl Default for Store<MemoryBackend> {
    fn default() -> Self {
        MemoryStore::new()
    }
}

/// The latest state of the map, behind a [`MemoryStore`].
pub struct MemoryBackend {
    state: Shared,
}

/// The map as of one sequence number.
struct MemorySnapshot {
    state: Shared,
    seq: u64,
}

fn read(state: &RwLock<MvccState>) -> Result<RwLockReadGuard<'_, MvccState>> {
    state.read().map_err(|_| StoreError::LockPoisoned)
}

/// Which sequence a read observes; `Latest` is resolved under the read lock.
#[derive(Clone, Copy)]
enum At {
    Latest,
    Seq(u64),
}

impl At {
    fn resolve(self, state: &MvccState) -> u64 {
        match self {
            At::Latest => state.committed(),
            At::Seq(seq) => seq,
        }
    }
}

fn get_at(state: &RwLock<MvccState>, at: At, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let state = read(state)?;
    Ok(state.get(key, at.resolve(&state)))
}

fn multi_get_at(
    state: &RwLock<MvccState>,
    at: At,
    keys: &[Vec<u8>],
) -> Result<Vec<Option<Vec<u8>>>> {
    // One guard for all keys, so they come from the same committed state.
    let state = read(state)?;
    let seq = at.resolve(&state);
    in_key_order(keys, |key| Ok(state.get(key, seq)))
}

fn count_at(state: &RwLock<MvccState>, at: At, range: &KeyRange, cap: u64) -> Result<CountPage> {
    let state = read(state)?;
    state.count(range, cap, at.resolve(&state))
}

fn contains_at(state: &RwLock<MvccState>, at: At, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
    let state = read(state)?;
    let seq = at.resolve(&state);
    in_key_order(keys, |key| Ok(state.contains(key, seq)))
}

fn visit_at(
    state: &RwLock<MvccState>,
    at: At,
    (range, direction, limit): (&KeyRange, Direction, usize),
    visit: &mut EntryVisitor<'_>,
) -> Result<Option<KeyRange>> {
    let state = read(state)?;
    state.visit(range, direction, limit, at.resolve(&state), visit)
}

fn scan_at(
    state: &RwLock<MvccState>,
    at: At,
    range: &KeyRange,
    direction: Direction,
    limit: usize,
) -> Result<ScanPage> {
    let state = read(state)?;
    state.scan(range, direction, limit, at.resolve(&state))
}

#[async_trait::async_trait]
impl KvRead for MemoryBackend {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get_at(&self.state, At::Latest, key)
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        page_turn().await;
        multi_get_at(&self.state, At::Latest, keys)
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        page_turn().await;
        scan_at(&self.state, At::Latest, range, direction, limit)
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        page_turn().await;
        visit_at(&self.state, At::Latest, (range, direction, limit), visit)
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        page_turn().await;
        count_at(&self.state, At::Latest, range, cap)
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        page_turn().await;
        contains_at(&self.state, At::Latest, keys)
    }
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl Backend for MemoryBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durable: false,
            native_reverse_scan: true,
            snapshots: true,
            shared: false,
            max_commit_keys: None,
            // A B-tree in memory: seeks are cheap, so seeking beats reading much sooner.
            durability: crate::Durability::SyncWal,
            honours_durability: false,
            costs: AccessCosts {
                seek_ns: 400,
                next_ns: 60,
                get_ns: 300,
                check_ns: 250,
                reverse_reads_whole_range: false,
                range_in_batch_ns: None,
            },
        }
    }

    fn persist(&self) -> Result<()> {
        Ok(())
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        // `snapshot` cannot fail by signature. If the lock is poisoned, register anyway: every
        // read through the snapshot re-checks the lock and reports the poisoning.
        let seq = self
            .state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .pin();
        Arc::new(MemorySnapshot {
            state: Arc::clone(&self.state),
            seq,
        })
    }

    fn apply(&self, batch: WriteBatch) -> Result<()> {
        let mut state = self.state.write().map_err(|_| StoreError::LockPoisoned)?;
        state.apply(batch);
        Ok(())
    }

    /// Exact: the bytes of the keys and values the latest state holds in `range`.
    fn approximate_size(&self, range: &KeyRange) -> Result<Option<u64>> {
        let state = read(&self.state)?;
        Ok(Some(state.size(Some(range), state.committed())))
    }

    /// The bytes of every key and value kept, older versions included.
    fn total_size(&self) -> Result<Option<u64>> {
        let state = read(&self.state)?;
        Ok(Some(state.size(None, state.committed())))
    }
}

#[async_trait::async_trait]
impl KvRead for MemorySnapshot {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get_at(&self.state, At::Seq(self.seq), key)
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        page_turn().await;
        multi_get_at(&self.state, At::Seq(self.seq), keys)
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        page_turn().await;
        scan_at(&self.state, At::Seq(self.seq), range, direction, limit)
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        page_turn().await;
        visit_at(
            &self.state,
            At::Seq(self.seq),
            (range, direction, limit),
            visit,
        )
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        page_turn().await;
        count_at(&self.state, At::Seq(self.seq), range, cap)
    }

    async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
        page_turn().await;
        contains_at(&self.state, At::Seq(self.seq), keys)
    }
}

impl Drop for MemorySnapshot {
    fn drop(&mut self) {
        // Unregistering only lets old versions be pruned; on a poisoned lock the store is
        // unusable anyway, so skipping it loses nothing.
        if let Ok(mut state) = self.state.write() {
            state.unpin(self.seq);
        }
    }
}
