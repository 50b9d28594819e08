//! A store wrapper that injects faults at commits, for tests of what a failed or lost write
//! leaves behind (in the style of [`crate::metered::MeteredStore`]: a `KvStore` over another).
//!
//! A *commit* here is what changes the store: a transaction's commit that carries writes, or
//! an atomic batch ([`KvStore::write`]). They are numbered from 1 as they arrive; a fault can
//! be planned for the n-th one from now, or for every one until [`FaultyStore::heal`]:
//! - [`Fault::FailBefore`]: the commit fails with an I/O error and writes nothing;
//! - [`Fault::Conflict`]: it fails as a lost race (retryable) and writes nothing;
//! - [`Fault::LoseAcknowledgement`]: it is applied, then reported as
//!   [`StoreError::CommitOutcomeUnknown`], as when a connection to a remote store breaks
//!   after the request was sent;
//! - [`Fault::LoseRequest`]: it is not applied, and reported as
//!   [`StoreError::CommitOutcomeUnknown`] all the same, as when the connection breaks before
//!   the request arrives: the writer cannot tell the two apart.
//!
//! Reads fail too, where planned ([`FaultyStore::fail_read`], [`FaultyStore::fail_reads_in`]):
//! the n-th read from now (of one kind, or of any), or every read that touches a key range, with
//! an I/O error, at once or after a delay ([`FaultyStore::delay_read_faults`], as a read that
//! times out: the statement waits on it); through the store, its transactions (their guarded
//! reads included) and its snapshots alike. Reads are counted ([`FaultyStore::reads`]) so that a test can aim at each.
//!
//! Every applied commit also records what its keys held before it, so that
//! [`FaultyStore::crash`] can drop the last ones, as a power failure drops the writes a
//! buffered journal had not synced yet (a suffix of them: journals are written in commit
//! order). The before-images are read just before the commit is forwarded, so they are exact
//! when commits do not race each other (one writer at a time), which is how the fault tests
//! use it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::{
    Capabilities, CountPage, Direction, EntryVisitor, KeyRange, KvRead, KvStore, Result, Savepoint,
    ScanPage, StoreError, Transaction, Validation, WriteBatch,
};

/// What happens to a commit a fault is planned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with an I/O error before anything is applied.
    FailBefore,
    /// Fails as a conflict (retryable) before anything is applied.
    Conflict,
    /// Applied, then reported as [`StoreError::CommitOutcomeUnknown`].
    LoseAcknowledgement,
    /// Not applied, and reported as [`StoreError::CommitOutcomeUnknown`].
    LoseRequest,
}

/// The kinds of read, as a read fault names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// `get`, `multi_get`, `contains`: keys looked up.
    Lookup,
    /// `scan_page`, `scan_pages`, `visit_page`, `count_page`: a range read.
    Range,
}

/// Which reads fail.
#[derive(Debug, Clone)]
enum ReadPlan {
    None,
    /// The read numbered `at` (counted over the store's life), of `kind` if given.
    Once {
        at: u64,
        kind: Option<ReadKind>,
    },
    /// Every read that touches `range`.
    Within(KeyRange),
}

/// When planned faults strike.
#[derive(Debug, Clone, Copy)]
enum Plan {
    None,
    /// At the commit numbered `at` (counted over the store's life), once.
    Once {
        at: u64,
        fault: Fault,
    },
    /// At every commit until healed.
    Always(Fault),
}

/// One applied commit's keys with what each held before it (`None`: absent).
type BeforeImage = Vec<(Vec<u8>, Option<Vec<u8>>)>;

#[derive(Debug)]
struct State {
    /// Commits that reached the store, faulted ones included.
    commits: u64,
    plan: Plan,
    /// Reads so far, and of each kind (lookups, range reads).
    reads: u64,
    lookups: u64,
    range_reads: u64,
    /// Reads a fault failed.
    failed_reads: u64,
    read_plan: ReadPlan,
    /// How long a read a fault strikes waits before it fails (a read that times out).
    read_fault_delay: Duration,
    /// Before-images of the applied commits, oldest first.
    applied: Vec<BeforeImage>,
}

/// A [`KvStore`] over another, with faults injected at commits (see the module's text).
pub struct FaultyStore {
    inner: Arc<dyn KvStore>,
    state: Arc<Mutex<State>>,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn KvStore>) -> Self {
        FaultyStore {
            inner,
            state: Arc::new(Mutex::new(State {
                commits: 0,
                plan: Plan::None,
                reads: 0,
                lookups: 0,
                range_reads: 0,
                failed_reads: 0,
                read_plan: ReadPlan::None,
                read_fault_delay: Duration::ZERO,
                applied: Vec::new(),
            })),
        }
    }

    fn state(&self) -> Result<MutexGuard<'_, State>> {
        lock(&self.state)
    }

    /// Commits that reached the store so far, faulted ones included.
    pub fn commits(&self) -> Result<u64> {
        Ok(self.state()?.commits)
    }

    /// Commits applied so far (what [`FaultyStore::crash`] counts).
    pub fn applied(&self) -> Result<usize> {
        Ok(self.state()?.applied.len())
    }

    /// Plans `fault` for the `n`-th commit from now (`n` ≥ 1), in place of any other plan.
    pub fn fail_commit(&self, n: u64, fault: Fault) -> Result<()> {
        let mut state = self.state()?;
        state.plan = Plan::Once {
            at: state.commits + n.max(1),
            fault,
        };
        Ok(())
    }

    /// Plans `fault` for every commit from now until [`FaultyStore::heal`].
    pub fn fail_every_commit(&self, fault: Fault) -> Result<()> {
        self.state()?.plan = Plan::Always(fault);
        Ok(())
    }

    /// Reads so far, of `kind` if given.
    pub fn reads(&self, kind: Option<ReadKind>) -> Result<u64> {
        let state = self.state()?;
        Ok(match kind {
            None => state.reads,
            Some(ReadKind::Lookup) => state.lookups,
            Some(ReadKind::Range) => state.range_reads,
        })
    }

    /// Reads a fault has failed so far (a test's proof that its fault struck).
    pub fn failed_reads(&self) -> Result<u64> {
        Ok(self.state()?.failed_reads)
    }

    /// Fails the `n`-th read from now (`n` ≥ 1; of `kind` if given) with an I/O error, in
    /// place of any other read fault.
    pub fn fail_read(&self, n: u64, kind: Option<ReadKind>) -> Result<()> {
        let mut state = self.state()?;
        let so_far = match kind {
            None => state.reads,
            Some(ReadKind::Lookup) => state.lookups,
            Some(ReadKind::Range) => state.range_reads,
        };
        state.read_plan = ReadPlan::Once {
            at: so_far + n.max(1),
            kind,
        };
        Ok(())
    }

    /// Fails every read that touches `range` until [`FaultyStore::heal`].
    pub fn fail_reads_in(&self, range: KeyRange) -> Result<()> {
        self.state()?.read_plan = ReadPlan::Within(range);
        Ok(())
    }

    /// Makes each read a fault strikes wait `delay` before it fails, as a read that times out
    /// does (the statement waits on it, holding what it holds), until [`FaultyStore::heal`].
    pub fn delay_read_faults(&self, delay: Duration) -> Result<()> {
        self.state()?.read_fault_delay = delay;
        Ok(())
    }

    /// Cancels the planned faults, of commits and of reads, and any delay of read faults.
    pub fn heal(&self) -> Result<()> {
        let mut state = self.state()?;
        state.plan = Plan::None;
        state.read_plan = ReadPlan::None;
        state.read_fault_delay = Duration::ZERO;
        Ok(())
    }

    /// Drops every applied commit after the first `keep`, newest first, restoring what their
    /// keys held: the store is left as if it had crashed before syncing them. A database
    /// open over this store must be opened again afterwards (its caches saw the dropped
    /// writes).
    pub async fn crash(&self, keep: usize) -> Result<()> {
        let dropped: Vec<BeforeImage> = {
            let mut state = self.state()?;
            let keep = keep.min(state.applied.len());
            state.applied.split_off(keep)
        };
        for image in dropped.into_iter().rev() {
            let mut batch = WriteBatch::new();
            for (key, before) in image {
                match before {
                    Some(value) => batch.put(key, value),
                    None => batch.delete(key),
                }
            }
            self.inner.write(batch).await?;
        }
        Ok(())
    }

    /// The store underneath, without the faults.
    pub fn inner(&self) -> &Arc<dyn KvStore> {
        &self.inner
    }
}

fn lock(state: &Mutex<State>) -> Result<MutexGuard<'_, State>> {
    state.lock().map_err(|_| StoreError::LockPoisoned)
}

/// What a read touches, for a fault on a key range.
enum Touched<'a> {
    Keys(&'a [Vec<u8>]),
    Ranges(&'a [KeyRange]),
}

impl Touched<'_> {
    fn meets(&self, range: &KeyRange) -> bool {
        match self {
            Touched::Keys(keys) => keys.iter().any(|key| range.contains(key)),
            // Two half-open ranges meet when each starts before the other ends.
            Touched::Ranges(ranges) => ranges.iter().any(|read| {
                read.end
                    .as_deref()
                    .is_none_or(|end| range.start.as_slice() < end)
                    && range
                        .end
                        .as_deref()
                        .is_none_or(|end| read.start.as_slice() < end)
            }),
        }
    }
}

/// Counts a read of `kind` touching `touched`; `Some(delay)` when a read fault strikes it (it is
/// to fail after `delay`).
fn check_read(
    state: &Mutex<State>,
    kind: ReadKind,
    touched: Touched<'_>,
) -> Result<Option<Duration>> {
    let mut state = lock(state)?;
    state.reads += 1;
    let of_kind = match kind {
        ReadKind::Lookup => {
            state.lookups += 1;
            state.lookups
        }
        ReadKind::Range => {
            state.range_reads += 1;
            state.range_reads
        }
    };
    let strikes = match &state.read_plan {
        ReadPlan::None => false,
        ReadPlan::Once { at, kind: None } => state.reads == *at,
        ReadPlan::Once {
            at,
            kind: Some(planned),
        } => *planned == kind && of_kind == *at,
        ReadPlan::Within(range) => touched.meets(range),
    };
    if !strikes {
        return Ok(None);
    }
    state.failed_reads += 1;
    if matches!(state.read_plan, ReadPlan::Once { .. }) {
        state.read_plan = ReadPlan::None;
    }
    Ok(Some(state.read_fault_delay))
}

/// Lets a read of `kind` touching `touched` through, or fails it (after the planned delay) if a
/// read fault strikes it.
async fn pass_read(state: &Mutex<State>, kind: ReadKind, touched: Touched<'_>) -> Result<()> {
    let Some(delay) = check_read(state, kind, touched)? else {
        return Ok(());
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    Err(StoreError::Io {
        source: std::io::Error::other("injected fault: the read failed"),
    })
}

/// `impl KvRead for` a reader whose `inner` reads and whose `state` plans the faults (the
/// header is given: `#[async_trait]` must see the methods, so it is written here): each read is
/// counted and checked before it is forwarded.
macro_rules! faulty_reads {
    ($($header:tt)*) => {
        #[async_trait::async_trait]
        $($header)* {
        async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            let keys = [key.to_vec()];
            pass_read(&self.state, ReadKind::Lookup, Touched::Keys(&keys)).await?;
            self.inner.get(key).await
        }

        async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
            pass_read(&self.state, ReadKind::Lookup, Touched::Keys(keys)).await?;
            self.inner.multi_get(keys).await
        }

        async fn scan_page(
            &self,
            range: &KeyRange,
            direction: Direction,
            limit: usize,
        ) -> Result<ScanPage> {
            let ranges = std::slice::from_ref(range);
            pass_read(&self.state, ReadKind::Range, Touched::Ranges(ranges)).await?;
            self.inner.scan_page(range, direction, limit).await
        }

        async fn visit_page(
            &self,
            range: &KeyRange,
            direction: Direction,
            limit: usize,
            visit: &mut EntryVisitor<'_>,
        ) -> Result<Option<KeyRange>> {
            let ranges = std::slice::from_ref(range);
            pass_read(&self.state, ReadKind::Range, Touched::Ranges(ranges)).await?;
            self.inner.visit_page(range, direction, limit, visit).await
        }

        async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
            let ranges = std::slice::from_ref(range);
            pass_read(&self.state, ReadKind::Range, Touched::Ranges(ranges)).await?;
            self.inner.count_page(range, cap).await
        }

        async fn scan_pages(
            &self,
            ranges: &[KeyRange],
            direction: Direction,
            limit: usize,
        ) -> Result<Vec<ScanPage>> {
            pass_read(&self.state, ReadKind::Range, Touched::Ranges(ranges)).await?;
            self.inner.scan_pages(ranges, direction, limit).await
        }

        fn batches_ranges(&self) -> bool {
            self.inner.batches_ranges()
        }

        async fn contains(&self, keys: &[Vec<u8>]) -> Result<Vec<bool>> {
            pass_read(&self.state, ReadKind::Lookup, Touched::Keys(keys)).await?;
            self.inner.contains(keys).await
        }
        }
    };
}

/// A snapshot of a [`FaultyStore`], or a transaction's guarded view: reads through the faults.
struct FaultyReader<R> {
    inner: R,
    state: Arc<Mutex<State>>,
}

faulty_reads!(impl KvRead for FaultyReader<Arc<dyn KvRead>>);
faulty_reads!(impl<'a> KvRead for FaultyReader<Box<dyn KvRead + 'a>>);

/// Counts a commit and says which fault, if any, strikes it.
fn next_fault(state: &Mutex<State>) -> Result<Option<Fault>> {
    let mut state = lock(state)?;
    state.commits += 1;
    Ok(match state.plan {
        Plan::None => None,
        Plan::Always(fault) => Some(fault),
        Plan::Once { at, fault } if at == state.commits => {
            state.plan = Plan::None;
            Some(fault)
        }
        Plan::Once { .. } => None,
    })
}

/// Runs one commit of the writes to `keys` through the planned fault: `apply` forwards it.
async fn commit_through<F>(
    inner: &dyn KvStore,
    state: &Mutex<State>,
    mut keys: Vec<Vec<u8>>,
    apply: F,
) -> Result<()>
where
    F: std::future::Future<Output = Result<()>>,
{
    let fault = next_fault(state)?;
    match fault {
        Some(Fault::FailBefore) => {
            return Err(StoreError::Io {
                source: std::io::Error::other("injected fault: the commit failed"),
            });
        }
        Some(Fault::Conflict) => return Err(StoreError::Conflict),
        Some(Fault::LoseRequest) => {
            return Err(StoreError::CommitOutcomeUnknown {
                reason: "injected fault: the request was lost on its way".to_string(),
            });
        }
        Some(Fault::LoseAcknowledgement) | None => {}
    }
    keys.sort();
    keys.dedup();
    let before = inner.multi_get(&keys).await?;
    apply.await?;
    lock(state)?
        .applied
        .push(keys.into_iter().zip(before).collect());
    match fault {
        Some(Fault::LoseAcknowledgement) => Err(StoreError::CommitOutcomeUnknown {
            reason: "injected fault: the acknowledgement was lost".to_string(),
        }),
        _ => Ok(()),
    }
}

faulty_reads!(impl KvRead for FaultyStore);

#[async_trait::async_trait]
impl KvStore for FaultyStore {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return self.inner.write(batch).await;
        }
        let keys = batch.mutations().iter().map(|m| m.key().to_vec()).collect();
        commit_through(
            self.inner.as_ref(),
            &self.state,
            keys,
            self.inner.write(batch),
        )
        .await
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        Arc::new(FaultyReader {
            inner: self.inner.snapshot(),
            state: self.state.clone(),
        })
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        Ok(Box::new(FaultyTransaction {
            inner: self.inner.begin().await?,
            keys: Vec::new(),
            store: self.inner.clone(),
            state: self.state.clone(),
        }))
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

/// A transaction of a [`FaultyStore`]: remembers the keys it writes, for the commit's fault
/// and before-image.
struct FaultyTransaction {
    inner: Box<dyn Transaction>,
    /// Every key put or deleted (a key written and rolled back to a savepoint included: its
    /// before-image is then its current value, which restoring leaves as it is).
    keys: Vec<Vec<u8>>,
    store: Arc<dyn KvStore>,
    state: Arc<Mutex<State>>,
}

faulty_reads!(impl KvRead for FaultyTransaction);

#[async_trait::async_trait]
impl Transaction for FaultyTransaction {
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
        Box::new(FaultyReader {
            inner: self.inner.guarded(),
            state: self.state.clone(),
        })
    }

    fn refresh(&mut self) -> bool {
        self.inner.refresh()
    }

    async fn changed_since_snapshot(&self, keys: &[Vec<u8>]) -> Result<bool> {
        self.inner.changed_since_snapshot(keys).await
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.keys.push(key.clone());
        self.inner.put(key, value);
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.keys.push(key.clone());
        self.inner.delete(key);
    }

    fn put_run(&mut self, ascending: Vec<(Vec<u8>, Vec<u8>)>) {
        self.keys
            .extend(ascending.iter().map(|(key, _)| key.clone()));
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
        let FaultyTransaction {
            inner,
            keys,
            store,
            state,
        } = *self;
        if keys.is_empty() {
            return inner.commit().await;
        }
        commit_through(store.as_ref(), &state, keys, inner.commit()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    async fn put(store: &dyn KvStore, key: &[u8], value: &[u8]) -> Result<()> {
        let mut tx = store.begin().await?;
        tx.put(key.to_vec(), value.to_vec());
        tx.commit().await
    }

    #[tokio::test]
    async fn faults_strike_the_planned_commit_and_crash_drops_a_suffix() -> Result<()> {
        let store = FaultyStore::new(Arc::new(MemoryStore::new()));
        put(&store, b"a", b"1").await?;
        store.fail_commit(2, Fault::FailBefore)?;
        put(&store, b"b", b"1").await?;
        let failed = put(&store, b"c", b"1").await;
        assert!(matches!(failed, Err(StoreError::Io { .. })), "{failed:?}");
        assert_eq!(store.get(b"c").await?, None);
        // A read-only transaction is not a commit.
        store.begin().await?.commit().await?;
        assert_eq!(store.commits()?, 3);

        store.fail_commit(1, Fault::LoseAcknowledgement)?;
        let lost = put(&store, b"a", b"2").await;
        assert!(
            matches!(lost, Err(StoreError::CommitOutcomeUnknown { .. })),
            "{lost:?}"
        );
        assert_eq!(store.get(b"a").await?, Some(b"2".to_vec()));

        // The same report, and nothing applied (nor counted as applied).
        store.fail_commit(1, Fault::LoseRequest)?;
        let lost = put(&store, b"a", b"3").await;
        assert!(
            matches!(lost, Err(StoreError::CommitOutcomeUnknown { .. })),
            "{lost:?}"
        );
        assert_eq!(store.get(b"a").await?, Some(b"2".to_vec()));

        store.fail_every_commit(Fault::Conflict)?;
        for _ in 0..3 {
            assert!(matches!(
                put(&store, b"d", b"1").await,
                Err(StoreError::Conflict)
            ));
        }
        store.heal()?;
        let mut batch = WriteBatch::new();
        batch.put(b"b".to_vec(), b"2".to_vec());
        batch.delete(b"a".to_vec());
        store.write(batch).await?;
        assert_eq!(store.applied()?, 4);

        // Back to after the first two commits: a = 1, b = 1.
        store.crash(2).await?;
        assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));
        assert_eq!(store.get(b"b").await?, Some(b"1".to_vec()));
        assert_eq!(store.applied()?, 2);
        store.crash(0).await?;
        let all = store
            .scan_page(&KeyRange::all(), Direction::Forward, 10)
            .await?;
        assert!(all.entries.is_empty(), "{:?}", all.entries);
        Ok(())
    }

    #[tokio::test]
    async fn reads_fail_where_planned_through_every_reader() -> Result<()> {
        let store = FaultyStore::new(Arc::new(MemoryStore::new()));
        put(&store, b"a", b"1").await?;
        put(&store, b"m", b"1").await?;
        let is_io = |result: &Result<Option<Vec<u8>>>| matches!(result, Err(StoreError::Io { .. }));

        // The second lookup from now fails, once.
        store.fail_read(2, Some(ReadKind::Lookup))?;
        store
            .scan_page(&KeyRange::all(), Direction::Forward, 10)
            .await?;
        assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));
        assert!(is_io(&store.get(b"a").await));
        assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));

        // Through a snapshot and a transaction too; the n-th read of any kind.
        store.fail_read(1, None)?;
        let snapshot = store.snapshot();
        assert!(is_io(&snapshot.get(b"m").await));
        let tx = store.begin().await?;
        store.fail_read(1, None)?;
        assert!(matches!(
            tx.scan_page(&KeyRange::all(), Direction::Forward, 10).await,
            Err(StoreError::Io { .. })
        ));
        store.fail_read(1, None)?;
        assert!(is_io(&tx.guarded().get(b"a").await));

        // Every read touching [k, n) fails until healed; others go on.
        store.fail_reads_in(KeyRange::new(b"k".to_vec(), Some(b"n".to_vec())))?;
        assert_eq!(store.get(b"a").await?, Some(b"1".to_vec()));
        assert!(is_io(&store.get(b"m").await));
        let before_m = KeyRange::new(Vec::new(), Some(b"k".to_vec()));
        assert_eq!(
            store
                .scan_page(&before_m, Direction::Forward, 10)
                .await?
                .entries
                .len(),
            1
        );
        assert!(store.count_page(&KeyRange::all(), 10).await.is_err());
        store.heal()?;
        assert_eq!(store.count_page(&KeyRange::all(), 10).await?.entries, 2);
        assert!(store.reads(None)? >= 10);

        // A delayed fault: the read waits, then fails; healing takes the delay away too.
        store.delay_read_faults(std::time::Duration::from_millis(200))?;
        store.fail_read(1, Some(ReadKind::Lookup))?;
        let started = std::time::Instant::now();
        assert!(is_io(&store.get(b"a").await));
        assert!(started.elapsed() >= std::time::Duration::from_millis(200));
        store.heal()?;
        store.fail_read(1, None)?;
        let started = std::time::Instant::now();
        assert!(is_io(&store.get(b"a").await));
        assert!(started.elapsed() < std::time::Duration::from_millis(200));
        Ok(())
    }
}
