//! The statistics the planner reads, kept per table: the exact row count, and what ANALYZE
//! last gathered (see `rowdex_catalog::statistics`). Both survive restarts.
//!
//! **Row counts.** A counter key updated by every write would make concurrent writers conflict
//! on it, so each committed write instead puts its net row change under a key of its own in the
//! same transaction (`keyspace::row_delta_key`: blind writes never conflict). The count is the
//! folded base (`keyspace::row_count_key`) plus every delta. A process loads a table's count
//! once, then adds what its own writes commit; every [`FOLD_EVERY`] deltas, and when a load
//! finds more than that, the deltas are folded into the base. A table with no base yet (a
//! database written before the counts were kept) is counted once and gets one.
//!
//! Folding is safe beside concurrent writers: the new base is computed from one snapshot (the
//! base there plus the deltas there), and written in a transaction that re-reads the base (so
//! two folds cannot both apply) and deletes exactly the deltas it summed. A delta committed
//! after the snapshot is not among them and stays for the next fold.
//!
//! **Gathered statistics** are loaded with the count; [`TableStats::refresh_wanted`] names the
//! tables whose count moved more than [`REFRESH_SHARE`] since, for the session to gather again
//! in the background.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use rowdex_catalog::{TableDef, TableStatistics, keyspace};
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, Transaction, scan_stream};

use crate::db::dives::count_entries;
use crate::error::{Error, Result};

/// Unfolded deltas of one table after which they are folded into its base. A fold reads the
/// table's whole delta range, which holds the tombstones of every delta folded before until the
/// store compacts them away, so each fold costs more than the last: at 256, folding took 14 % of
/// a single-row INSERT's time under sysbench's oltp_insert (`perf`, issue 43); at 4096 a fold
/// comes sixteen times less often, and a load reads at most four pages of deltas.
pub(crate) const FOLD_EVERY: u64 = 4096;

/// The share of its rows a table must change by, since its statistics were gathered, before
/// they are gathered again (PostgreSQL's autoanalyze default is 10 %, plus 50 rows).
pub(crate) const REFRESH_SHARE: f64 = 0.2;

/// How long a process trusts what it loaded of a table on a store other processes write too:
/// their writes reach its row counts (and statistics they gathered) this long after, at most.
pub(crate) const SHARED_RELOAD: Duration = Duration::from_secs(10);

/// Rows below which a table's statistics are not refreshed automatically: dives count such a
/// table's ranges in full for less than gathering would cost.
pub(crate) const REFRESH_MIN_ROWS: u64 = 2_000;

/// What one process knows of one table.
#[derive(Debug, Clone, Default)]
struct Known {
    /// The exact row count, as of the last load plus this process's commits since.
    rows: u64,
    /// Deltas written by this process (or found at load) since the last fold.
    unfolded: u64,
    gathered: Option<Arc<TableStatistics>>,
    /// Changes whenever `gathered` is loaded or replaced: a plan choice made under one
    /// generation is kept until the next (see `NativeQuery::plan`).
    generation: u64,
    /// When it was loaded from the store.
    loaded: Option<Instant>,
}

impl Known {
    /// Whether it should be loaded again: on a shared store, once it is [`SHARED_RELOAD`] old.
    fn stale(&self, shared: bool) -> bool {
        shared
            && self
                .loaded
                .is_none_or(|loaded| loaded.elapsed() >= SHARED_RELOAD)
    }
}

#[derive(Debug)]
pub(crate) struct TableStats {
    tables: Mutex<HashMap<u32, Known>>,
    /// Tables a background ANALYZE is running for (at most one per table).
    gathering: Mutex<HashSet<u32>>,
    /// Names this process in the delta keys it writes (random, so that processes sharing a
    /// store never write the same key).
    writer: u64,
    seq: AtomicU64,
    /// The last statistics generation handed out (see `Known::generation`).
    generations: AtomicU64,
}

impl Default for TableStats {
    fn default() -> Self {
        TableStats {
            tables: Mutex::new(HashMap::new()),
            gathering: Mutex::new(HashSet::new()),
            writer: RandomState::new().hash_one(std::process::id()),
            seq: AtomicU64::new(0),
            generations: AtomicU64::new(0),
        }
    }
}

impl TableStats {
    /// The row count when it has been loaded.
    pub(crate) fn known_rows(&self, table: &TableDef) -> Option<u64> {
        self.lock().get(&table.id).map(|k| k.rows)
    }

    /// The gathered statistics, when loaded and gathered.
    pub(crate) fn gathered(&self, table_id: u32) -> Option<Arc<TableStatistics>> {
        self.lock().get(&table_id).and_then(|k| k.gathered.clone())
    }

    /// The exact row count, loading it (and the gathered statistics) the first time, and on
    /// a store other processes write too, again once what was loaded is [`SHARED_RELOAD`] old.
    pub(crate) async fn rows(&self, store: &dyn KvStore, table: &TableDef) -> Result<u64> {
        let shared = store.capabilities().shared;
        if let Some(known) = self.lock().get(&table.id)
            && !known.stale(shared)
        {
            return Ok(known.rows);
        }
        let snapshot = store.snapshot();
        let (base, deltas) = read_counts(snapshot.clone(), table.id).await?;
        let gathered = match snapshot.get(&keyspace::statistics_key(table.id)).await? {
            Some(bytes) => Some(Arc::new(TableStatistics::decode(&bytes)?)),
            None => None,
        };
        let rows = match base {
            Some(base) => with_deltas(base, &deltas),
            None => {
                // Never counted: count it once, from the same snapshot, and keep the figure.
                let ranges: Vec<KeyRange> = table
                    .scan_prefixes()
                    .iter()
                    .map(|prefix| KeyRange::prefix(prefix))
                    .collect();
                count_entries(snapshot.as_ref(), &ranges, u64::MAX)
                    .await?
                    .entries
            }
        };
        // Folding here only saves later loads work: one that loses a race with another fold
        // (or fails to write) leaves the deltas for the next, and the figure stands either way.
        let fold = base.is_none() || deltas.len() as u64 >= FOLD_EVERY;
        let folded = fold
            && write_base(store, table.id, base, rows, &deltas)
                .await
                .is_ok();
        let generation = self.next_generation();
        let loaded = Known {
            rows,
            unfolded: if folded { 0 } else { deltas.len() as u64 },
            gathered,
            generation,
            loaded: Some(Instant::now()),
        };
        let mut tables = self.lock();
        match tables.get_mut(&table.id) {
            // Loaded meanwhile by another task, and still fresh: that figure has this
            // process's commits since added to it.
            Some(known) if !known.stale(shared) => Ok(known.rows),
            Some(known) => {
                *known = loaded;
                Ok(known.rows)
            }
            None => Ok(tables.entry(table.id).or_insert(loaded).rows),
        }
    }

    /// The key and value a write transaction puts to record its net row change `delta` on
    /// `table_id` (nothing for no change).
    pub(crate) fn delta_entry(&self, table_id: u32, delta: i64) -> Option<(Vec<u8>, Vec<u8>)> {
        (delta != 0).then(|| {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            (
                keyspace::row_delta_key(table_id, self.writer, seq),
                delta.to_be_bytes().to_vec(),
            )
        })
    }

    /// Adds a committed write's net row change (the transaction carried its delta entry), and
    /// folds the table's deltas when enough have accumulated.
    pub(crate) async fn committed(&self, store: &dyn KvStore, table_id: u32, delta: i64) {
        if delta == 0 {
            return;
        }
        let fold = {
            let mut tables = self.lock();
            match tables.get_mut(&table_id) {
                Some(known) => {
                    known.rows = known.rows.saturating_add_signed(delta);
                    known.unfolded += 1;
                    known.unfolded >= FOLD_EVERY
                }
                None => false,
            }
        };
        if fold && fold_deltas(store, table_id).await.is_ok() {
            // A failed fold (a concurrent fold won) leaves the deltas for the next one.
            if let Some(known) = self.lock().get_mut(&table_id) {
                known.unfolded = 0;
            }
        }
    }

    /// Sets what was gathered about a table (already stored).
    pub(crate) fn set_gathered(&self, table_id: u32, gathered: TableStatistics) {
        let generation = self.next_generation();
        if let Some(known) = self.lock().get_mut(&table_id) {
            known.gathered = Some(Arc::new(gathered));
            known.generation = generation;
        }
    }

    /// The generation of a table's statistics in this process (0: not loaded yet): plan
    /// choices made under one generation hold until it changes.
    pub(crate) fn generation(&self, table_id: u32) -> u64 {
        self.lock()
            .get(&table_id)
            .map_or(0, |known| known.generation)
    }

    fn next_generation(&self) -> u64 {
        self.generations.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Tables whose row count moved by more than [`REFRESH_SHARE`] since their statistics were
    /// gathered (or that have indexes and none), and that no gathering is running for; they
    /// are marked as being gathered. Call [`TableStats::gathered_done`] after each.
    pub(crate) fn refresh_wanted(&self, tables: &[Arc<TableDef>]) -> Vec<Arc<TableDef>> {
        let known = self.lock();
        let mut gathering = self
            .gathering
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tables
            .iter()
            .filter(|def| def.ready_indexes().next().is_some())
            .filter(|def| {
                known.get(&def.id).is_some_and(|k| {
                    k.rows >= REFRESH_MIN_ROWS
                        && k.gathered.as_ref().is_none_or(|g| {
                            k.rows.abs_diff(g.rows) as f64 > REFRESH_SHARE * g.rows as f64
                        })
                })
            })
            .filter(|def| gathering.insert(def.id))
            .cloned()
            .collect()
    }

    pub(crate) fn gathered_done(&self, table_id: u32) {
        self.gathering
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&table_id);
    }

    /// Forgets a dropped table (its keys are deleted with its rows).
    pub(crate) fn forget(&self, table_id: u32) {
        self.lock().remove(&table_id);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u32, Known>> {
        // The map is always consistent between operations; a panic elsewhere cannot tear it.
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A table's folded base (None: never counted) and its unfolded deltas, read from `reader`.
async fn read_counts(reader: Arc<dyn KvRead>, table_id: u32) -> Result<(Option<u64>, Vec<Delta>)> {
    let base = decode_base(reader.get(&keyspace::row_count_key(table_id)).await?)?;
    let range = KeyRange::prefix(&keyspace::row_delta_prefix(table_id));
    let deltas = scan_stream(reader, range, Direction::Forward, DELTA_PAGE)
        .map_err(Error::from)
        .and_then(|(key, value)| async move { Ok((key, i64::from_be_bytes(fixed(&value)?))) })
        .try_collect()
        .await?;
    Ok((base, deltas))
}

/// Delta entries read per page.
const DELTA_PAGE: usize = 1024;

/// One delta entry: its key and the row change it records.
type Delta = (Vec<u8>, i64);

/// A stored base row count (None: never counted).
fn decode_base(stored: Option<Vec<u8>>) -> Result<Option<u64>> {
    stored
        .map(|bytes| Ok(u64::from_be_bytes(fixed(&bytes)?)))
        .transpose()
}

/// `base` plus the row changes of `deltas`.
fn with_deltas(base: u64, deltas: &[Delta]) -> u64 {
    base.saturating_add_signed(deltas.iter().map(|(_, delta)| delta).sum())
}

fn fixed(bytes: &[u8]) -> Result<[u8; 8]> {
    bytes
        .try_into()
        .map_err(|_| Error::CorruptStatistics(format!("{} bytes, not 8", bytes.len())))
}

/// Folds a table's deltas into its base (see the module header).
async fn fold_deltas(store: &dyn KvStore, table_id: u32) -> Result<()> {
    let snapshot = store.snapshot();
    let (base, deltas) = read_counts(snapshot, table_id).await?;
    let Some(base) = base else {
        // Not counted yet: the next load counts it.
        return Ok(());
    };
    let rows = with_deltas(base, &deltas);
    write_base(store, table_id, Some(base), rows, &deltas).await
}

/// Writes `rows` as the table's base in place of `seen` (the base in the snapshot the figure
/// was computed from) and deletes the `deltas` it includes; a conflict if the base moved.
async fn write_base(
    store: &dyn KvStore,
    table_id: u32,
    seen: Option<u64>,
    rows: u64,
    deltas: &[Delta],
) -> Result<()> {
    let key = keyspace::row_count_key(table_id);
    let mut tx: Box<dyn Transaction> = store.begin().await?;
    if decode_base(tx.get(&key).await?)? != seen {
        return Err(Error::WriteConflict);
    }
    tx.put(key, rows.to_be_bytes().to_vec());
    for (key, _) in deltas {
        tx.delete(key.clone());
    }
    tx.commit().await?;
    Ok(())
}
