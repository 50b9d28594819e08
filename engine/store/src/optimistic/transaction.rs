//! The optimistic transaction handed out by every store's `begin`.

use std::sync::Arc;

use super::merge::{Writes, scan_merged};
use super::read_set::ReadSet;
use crate::api::{KvRead, Savepoint, Transaction, Validation};
use crate::batch::{Mutation, WriteBatch};
use crate::durability::Durability;
use crate::error::Result;
use crate::range::{Direction, KeyRange, ScanPage};

/// Where a transaction's writes go at commit: the store's commit lock, which validates what the
/// transaction read against the latest state before applying its batch.
#[async_trait::async_trait]
pub(crate) trait Committer: Send + Sync + 'static {
    /// Validates `reads` and applies `batch` atomically, or fails with a conflict. `begun` is
    /// the [`Committer::mark`] taken before the transaction's first snapshot.
    async fn commit(&self, reads: &ReadSet, begun: Option<u64>, batch: WriteBatch) -> Result<()>;

    /// A view of the latest committed state, read at the moment of each read or pinned at
    /// the first (either serves a comparison with a snapshot).
    fn latest(&self) -> Arc<dyn KvRead>;

    /// The snapshot a transaction moves on to ([`Transaction::refresh`]): the latest state,
    /// which the committer may keep beside the earlier ones to validate against.
    fn next_snapshot(&self) -> Arc<dyn KvRead> {
        self.latest()
    }

    /// Whether a transaction may move its snapshot ([`Transaction::refresh`]): what the
    /// commit validates must not depend on which snapshot a read went to.
    fn moves_snapshots(&self) -> bool;

    /// A mark of the committed state to take just before a snapshot, for
    /// [`Committer::unchanged_since`]; `None` when the committer cannot tell.
    fn mark(&self) -> Option<u64> {
        None
    }

    /// Whether nothing was committed since `mark`: a snapshot taken after it still shows the
    /// latest state. False when the committer cannot tell.
    fn unchanged_since(&self, _mark: u64) -> bool {
        false
    }
}

pub(crate) struct OptimisticTx<C> {
    core: Arc<C>,
    snapshot: Arc<dyn KvRead>,
    /// The committer's mark before the first snapshot (see [`Committer::mark`]).
    begun: Option<u64>,
    /// The committer's mark before the current snapshot.
    snapshot_mark: Option<u64>,
    writes: Writes,
    /// While a savepoint is held: each buffered write's key with what it replaced in `writes`
    /// (`None`: the key had no buffered write), oldest first.
    undo: Option<Vec<UndoRecord>>,
    /// Savepoints taken and neither released nor discarded by rolling back to an earlier one.
    savepoints_held: usize,
    // Reads take `&self` (the `KvRead` contract) yet must grow the read set. An async mutex
    // never blocks a runtime thread and cannot be poisoned, so recording is infallible.
    reads: tokio::sync::Mutex<ReadSet>,
    /// Which reads are recorded in `reads`.
    validation: Validation,
    /// What the commit's batch asks for (None: the store's default).
    durability: Option<Durability>,
}

type UndoRecord = (Vec<u8>, Option<Option<Vec<u8>>>);

impl<C: Committer> OptimisticTx<C> {
    /// A transaction on `snapshot`, taken after the committer's `mark`.
    pub(crate) fn new(core: Arc<C>, snapshot: Arc<dyn KvRead>, mark: Option<u64>) -> Self {
        OptimisticTx {
            core,
            snapshot,
            begun: mark,
            snapshot_mark: mark,
            writes: Writes::new(),
            undo: None,
            savepoints_held: 0,
            reads: tokio::sync::Mutex::new(ReadSet::default()),
            validation: Validation::EveryRead,
            durability: None,
        }
    }

    /// Whether a read through the transaction's own [`KvRead`] is recorded.
    fn records(&self) -> bool {
        self.validation == Validation::EveryRead
    }
}

impl<C: Committer> OptimisticTx<C> {
    fn buffer(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        match &mut self.undo {
            Some(undo) => {
                let replaced = self.writes.insert(key.clone(), value);
                undo.push((key, replaced));
            }
            None => {
                self.writes.insert(key, value);
            }
        }
    }
}

impl<C: Committer> OptimisticTx<C> {
    async fn get_recording(&self, key: &[u8], record: bool) -> Result<Option<Vec<u8>>> {
        // A key the transaction wrote itself does not depend on the snapshot.
        if let Some(own) = self.writes.get(key) {
            return Ok(own.clone());
        }
        let value = self.snapshot.get(key).await?;
        if record {
            self.reads.lock().await.record_key(key, value.as_deref());
        }
        Ok(value)
    }

    async fn multi_get_recording(
        &self,
        keys: &[Vec<u8>],
        record: bool,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        // Fetch everything not overwritten locally in one snapshot call.
        let missing: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| !self.writes.contains_key(k.as_slice()))
            .cloned()
            .collect();
        let fetched = self.snapshot.multi_get(&missing).await?;
        if record {
            let mut reads = self.reads.lock().await;
            for (key, value) in missing.iter().zip(&fetched) {
                reads.record_key(key, value.as_deref());
            }
        }
        let mut fetched = fetched.into_iter();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let value = match self.writes.get(key.as_slice()) {
                Some(own) => own.clone(),
                // `missing` lists exactly these keys in this order, so this never runs dry.
                None => fetched.next().flatten(),
            };
            out.push(value);
        }
        Ok(out)
    }

    async fn scan_page_recording(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        record: bool,
    ) -> Result<ScanPage> {
        let merged = scan_merged(&*self.snapshot, &self.writes, range, direction, limit).await?;
        if let (true, Some(covered)) = (record, merged.covered) {
            self.reads
                .lock()
                .await
                .record_range(covered, direction, merged.digest);
        }
        Ok(merged.page)
    }
}

#[async_trait::async_trait]
impl<C: Committer> KvRead for OptimisticTx<C> {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_recording(key, self.records()).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.multi_get_recording(keys, self.records()).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.scan_page_recording(range, direction, limit, self.records())
            .await
    }
}

/// A transaction's reads, each recorded for validation (see [`Transaction::guarded`]).
struct Guarded<'a, C> {
    tx: &'a OptimisticTx<C>,
}

#[async_trait::async_trait]
impl<C: Committer> KvRead for Guarded<'_, C> {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.tx.get_recording(key, true).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.tx.multi_get_recording(keys, true).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.tx
            .scan_page_recording(range, direction, limit, true)
            .await
    }
}

#[async_trait::async_trait]
impl<C: Committer> Transaction for OptimisticTx<C> {
    fn set_validation(&mut self, validation: Validation) {
        self.validation = validation;
    }

    fn set_durability(&mut self, durability: Option<Durability>) {
        self.durability = durability;
    }

    fn durability(&self) -> Option<Durability> {
        self.durability
    }

    fn guarded(&self) -> Box<dyn KvRead + '_> {
        Box::new(Guarded { tx: self })
    }

    fn refresh(&mut self) -> bool {
        if !self.core.moves_snapshots() {
            return false;
        }
        let mark = self.core.mark();
        self.snapshot = self.core.next_snapshot();
        self.snapshot_mark = mark;
        self.reads.get_mut().moved();
        true
    }

    async fn changed_since_snapshot(&self, keys: &[Vec<u8>]) -> Result<bool> {
        if self
            .snapshot_mark
            .is_some_and(|mark| self.core.unchanged_since(mark))
        {
            return Ok(false);
        }
        let unwritten: Vec<Vec<u8>> = keys
            .iter()
            .filter(|key| !self.writes.contains_key(key.as_slice()))
            .cloned()
            .collect();
        if unwritten.is_empty() {
            return Ok(false);
        }
        let seen = self.snapshot.multi_get(&unwritten).await?;
        let latest = self.core.latest().multi_get(&unwritten).await?;
        Ok(seen != latest)
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.buffer(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.buffer(key, None);
    }

    fn put_run(&mut self, ascending: Vec<(Vec<u8>, Vec<u8>)>) {
        if self.undo.is_some() || ascending.windows(2).any(|pair| pair[0].0 >= pair[1].0) {
            // A savepoint needs what each write replaced; an unsorted run gets no shortcut.
            for (key, value) in ascending {
                self.buffer(key, Some(value));
            }
            return;
        }
        // Built from sorted input in one pass, then merged with what is buffered in another
        // (the run's values win), instead of one tree search and insert per key.
        let mut run: Writes = ascending
            .into_iter()
            .map(|(key, value)| (key, Some(value)))
            .collect();
        self.writes.append(&mut run);
    }

    fn savepoint(&mut self) -> Savepoint {
        let savepoint = Savepoint {
            undo_len: self.undo.get_or_insert_with(Vec::new).len(),
            depth: self.savepoints_held,
        };
        self.savepoints_held += 1;
        savepoint
    }

    fn rollback_to(&mut self, savepoint: Savepoint) {
        let Some(undo) = &mut self.undo else {
            return;
        };
        while undo.len() > savepoint.undo_len {
            let Some((key, replaced)) = undo.pop() else {
                break;
            };
            match replaced {
                Some(value) => self.writes.insert(key, value),
                None => self.writes.remove(&key),
            };
        }
        // The savepoint stays; those taken after it are gone.
        self.savepoints_held = savepoint.depth + 1;
    }

    fn release(&mut self, savepoint: Savepoint) {
        self.savepoints_held = self.savepoints_held.min(savepoint.depth);
        // Records after an inner savepoint still serve the outer ones; only releasing the
        // outermost ends the bookkeeping.
        if self.savepoints_held == 0 {
            self.undo = None;
        }
    }

    async fn commit(self: Box<Self>) -> Result<()> {
        let OptimisticTx {
            core,
            snapshot,
            begun,
            snapshot_mark: _,
            writes,
            undo: _,
            savepoints_held: _,
            reads,
            validation: _,
            durability,
        } = *self;
        // Release the snapshot first so the backend can stop pinning old versions for it.
        drop(snapshot);
        if writes.is_empty() {
            return Ok(());
        }
        let mut batch: WriteBatch = writes
            .into_iter()
            .map(|(key, value)| match value {
                Some(value) => Mutation::Put { key, value },
                None => Mutation::Delete { key },
            })
            .collect();
        batch.set_durability(durability);
        core.commit(&reads.into_inner(), begun, batch).await
    }
}
