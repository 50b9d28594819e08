//! Row locks for pessimistic transactions (issue 45): a lock table in the process, keyed by
//! the keys a transaction locks (row keys, unique index keys), for the embedded stores.
//!
//! Each locked key has a queue (`queue`): its holders and its waiters, first come first served.
//! The table is a concurrent map of those queues, so two transactions locking different keys
//! never touch a common lock; a key's entry lives only while someone holds or waits for it, so
//! memory follows the locks held. A request that must wait says how (`LockWait`): wait (up to
//! a timeout: `lock_timeout`), fail at once (`NOWAIT`), or skip the key (`SKIP LOCKED`). A
//! waiter whose future is dropped (a cancelled statement) leaves the queue.
//!
//! Deadlocks are found when a request starts waiting, the moment a cycle can close: from the
//! blockers of the new waiter, the search follows each blocker to the key it waits for and its
//! blockers there, computed from the queues as they are; reaching the new waiter again is a
//! cycle, and the new waiter is the victim (`StoreError::Deadlock`, 40P01), at once. A search
//! excludes the other searches and every request joining a queue meanwhile (`LockTable::graph`,
//! taken only by requests that wait), so two waits closing one cycle together make one victim,
//! and a cycle found is one that exists.
//!
//! On a store several processes share, the table has the [`ClusterLocks`] of its process:
//! a key granted here is then registered there (by the caller, `ClusterLocks::lock`), and a
//! request waiting here longer than [`CLUSTER_DEADLOCK_CHECK`] publishes whom it waits for,
//! so a cycle running through several processes is found too (once a second, as
//! PostgreSQL's `deadlock_timeout`); released keys are withdrawn from the cluster after.

pub mod cluster;
pub(crate) mod mode;
pub(crate) mod queue;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::oneshot;

use crate::error::{Result, StoreError};
pub use crate::locks::cluster::ClusterLocks;
pub use crate::locks::mode::{LockMode, LockWait, Locked, Owner};
use crate::locks::queue::{Entry, KeyQueue, Waiter};

/// How long a request waits in this process's queue before it looks for a deadlock through
/// the other processes sharing the database (PostgreSQL's `deadlock_timeout`), and again
/// after each such span.
pub const CLUSTER_DEADLOCK_CHECK: Duration = Duration::from_secs(1);

/// One holder or waiter of a locked key, as [`LockTable::entries`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    pub key: Vec<u8>,
    pub owner: Owner,
    /// What the owner was tagged with (the server's backend pid of its session), if anything.
    pub tag: Option<i64>,
    pub mode: LockMode,
    /// Held (true) or waited for (false).
    pub granted: bool,
}

/// See the module's header.
#[derive(Debug, Default)]
pub struct LockTable {
    keys: DashMap<Vec<u8>, KeyQueue>,
    /// A label per owner that has one, for [`LockTable::entries`] (pg_locks' pid).
    tags: DashMap<Owner, i64>,
    /// The keys each waiting transaction waits for, with its ticket in each key's queue (a
    /// transaction may wait for several at once: partitions of one statement).
    waiting: DashMap<Owner, Vec<(Vec<u8>, u64)>>,
    tickets: AtomicU64,
    /// Held exclusively by a deadlock search, shared by a request joining a queue: the only
    /// lock all keys share, taken only by requests that wait. While a search runs, no request
    /// starts waiting; a grant to a waiter or a withdrawal only removes wait-for edges, and an
    /// upgrade granted at once adds edges only to a running transaction, which can close a
    /// cycle only by waiting (and searching) itself. So a cycle found existed, unless one of its
    /// members timed out or was cancelled meanwhile (PostgreSQL's detector has the same window);
    /// without it, a holder that released a key and queued for it again behind the searcher
    /// looked like a cycle.
    graph: RwLock<()>,
    /// The locks of every process sharing the store, when it is shared (see the header).
    cluster: Option<Arc<dyn ClusterLocks>>,
    /// Requests that ended as a deadlock's victim, since the table was made.
    deadlocks: AtomicU64,
}

/// How many lock requests waited, and how many of those a deadlock ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockCounts {
    pub waits: u64,
    pub deadlocks: u64,
}

/// How a wait in a queue ended.
enum WaitEnd {
    Woken,
    /// The queue went away without granting (cannot happen while the request is queued).
    QueueGone,
    /// The wait closes a cycle through other processes.
    Cycle,
}

impl LockTable {
    pub fn new() -> LockTable {
        LockTable::default()
    }

    /// A table for one process of a database that several share through `cluster`.
    pub fn with_cluster(cluster: Arc<dyn ClusterLocks>) -> LockTable {
        LockTable {
            cluster: Some(cluster),
            ..LockTable::default()
        }
    }

    /// The locks shared with the other processes, when the store is shared.
    pub fn cluster(&self) -> Option<&Arc<dyn ClusterLocks>> {
        self.cluster.as_ref()
    }

    /// Locks `key` in `mode` for `owner`, waiting as `wait` says while others hold it. A request
    /// granted as its future is dropped (a cancelled statement) keeps the lock: the owner
    /// releases every key it asked for when it ends, granted or not.
    pub async fn lock(
        &self,
        owner: Owner,
        key: &[u8],
        mode: LockMode,
        wait: LockWait,
    ) -> Result<Locked> {
        // A key already in the table is asked for in place; only a new one is copied.
        let first = match self.keys.get_mut(key) {
            Some(mut queue) => queue.request(owner, mode),
            None => self
                .keys
                .entry(key.to_vec())
                .or_default()
                .request(owner, mode),
        };
        if first == Entry::Granted {
            return Ok(Locked::Granted);
        }
        // Blocked: someone else holds or waits for the key, so its entry stays.
        match wait {
            LockWait::SkipLocked => return Ok(Locked::Skipped),
            LockWait::NoWait => return Err(StoreError::LockNotAvailable),
            LockWait::Wait(_) => {}
        }
        // It must wait: queued while no deadlock search runs (see `graph`), asking again
        // first, since the key may have been released meanwhile.
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let (wake, woken) = oneshot::channel();
        {
            let _graph = self.graph.read().unwrap_or_else(|p| p.into_inner());
            let mut queue = self.keys.entry(key.to_vec()).or_default();
            if queue.request(owner, mode) == Entry::Granted {
                return Ok(Locked::Granted);
            }
            queue.enqueue(Waiter {
                ticket,
                owner,
                mode,
                wake,
            });
        }
        let mut waiting = Waiting {
            table: self,
            owner,
            key,
            ticket,
            done: false,
        };
        self.waiting
            .entry(owner)
            .or_default()
            .push((key.to_vec(), ticket));
        {
            let _search = self.graph.write().unwrap_or_else(|p| p.into_inner());
            if self.closes_cycle(owner) {
                // Out of the queue before the next search runs: one victim per cycle. Granted
                // meanwhile (a member of the cycle gave up), it has the lock after all.
                return match waiting.give_up() {
                    true => Err(self.deadlock()),
                    false => Ok(Locked::Granted),
                };
            }
        }
        let timeout = match wait {
            LockWait::Wait(timeout) => timeout,
            _ => None,
        };
        let granted = match timeout {
            Some(limit) => tokio::time::timeout(limit, self.woken_or_cycle(owner, woken))
                .await
                .ok(),
            None => Some(self.woken_or_cycle(owner, woken).await),
        };
        match granted {
            Some(WaitEnd::Woken) => {
                waiting.done();
                Ok(Locked::Granted)
            }
            // The sender never drops without sending but when the queue is gone.
            Some(WaitEnd::QueueGone) => {
                waiting.give_up();
                Err(StoreError::LockNotAvailable)
            }
            Some(WaitEnd::Cycle) => match waiting.give_up() {
                true => Err(self.deadlock()),
                false => Ok(Locked::Granted),
            },
            None => match waiting.give_up() {
                // Granted just as the time ran out: the lock is held.
                false => Ok(Locked::Granted),
                true => Err(StoreError::LockTimeout),
            },
        }
    }

    /// Counts a deadlock victim and gives its error.
    fn deadlock(&self) -> StoreError {
        self.deadlocks.fetch_add(1, Ordering::Relaxed);
        StoreError::Deadlock
    }

    /// Lock requests that waited (each wait takes a ticket), and deadlock victims, so far.
    pub fn counts(&self) -> LockCounts {
        LockCounts {
            waits: self.tickets.load(Ordering::Relaxed),
            deadlocks: self.deadlocks.load(Ordering::Relaxed),
        }
    }

    /// Waits for `woken`; on a shared store, publishes whom `owner` waits for once every
    /// [`CLUSTER_DEADLOCK_CHECK`] and ends at a cycle through other processes. A cluster that
    /// cannot be asked gives no verdict: the wait goes on.
    async fn woken_or_cycle(&self, owner: Owner, mut woken: oneshot::Receiver<()>) -> WaitEnd {
        let Some(cluster) = &self.cluster else {
            return match woken.await {
                Ok(()) => WaitEnd::Woken,
                Err(_) => WaitEnd::QueueGone,
            };
        };
        let mut published = Published {
            cluster: Arc::clone(cluster),
            owner,
            published: false,
        };
        loop {
            tokio::select! {
                got = &mut woken => {
                    return match got {
                        Ok(()) => WaitEnd::Woken,
                        Err(_) => WaitEnd::QueueGone,
                    };
                }
                () = tokio::time::sleep(CLUSTER_DEADLOCK_CHECK) => {
                    let blockers = self.blockers_of(owner, &mut HashMap::new());
                    published.published = true;
                    if let Ok(true) = cluster.wait_closes_cycle(owner, &blockers).await {
                        return WaitEnd::Cycle;
                    }
                }
            }
        }
    }

    /// Releases every lock `owner` holds on `keys` (at its COMMIT or ROLLBACK, or when its
    /// session ends), granting the waiters each release unblocks; on a shared store, then
    /// withdraws them from the cluster (in the background: a withdrawal that fails is left to
    /// the process's lease).
    pub fn release<'a>(&self, owner: Owner, keys: impl IntoIterator<Item = &'a [u8]>) {
        let Some(cluster) = &self.cluster else {
            return self.release_here(owner, keys);
        };
        let keys: Vec<&[u8]> = keys.into_iter().collect();
        self.release_here(owner, keys.iter().copied());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let cluster = Arc::clone(cluster);
            let keys = keys.iter().map(|key| key.to_vec()).collect();
            runtime.spawn(async move {
                let _ = cluster.release(owner, keys).await;
            });
        }
    }

    /// Releases `owner`'s locks on `keys` in this process only (a key the cluster skipped).
    pub fn release_here<'a>(&self, owner: Owner, keys: impl IntoIterator<Item = &'a [u8]>) {
        for key in keys {
            let idle = match self.keys.get_mut(key) {
                Some(mut queue) => {
                    queue.release(owner);
                    queue.is_idle()
                }
                None => false,
            };
            if idle {
                self.keys.remove_if(key, |_, queue| queue.is_idle());
            }
        }
    }

    /// Labels `owner`'s entries with `tag` until [`LockTable::forget_owner`].
    pub fn tag_owner(&self, owner: Owner, tag: i64) {
        self.tags.insert(owner, tag);
    }

    /// Drops `owner`'s label (it has ended).
    pub fn forget_owner(&self, owner: Owner) {
        self.tags.remove(&owner);
    }

    /// Every holder and waiter of every locked key right now, holders of a key first, then
    /// its waiters in queue order (a moment's view: each key's queue is read on its own).
    pub fn entries(&self) -> Vec<LockEntry> {
        let mut entries = Vec::new();
        for queue in self.keys.iter() {
            let key = queue.key();
            let tag = |owner: Owner| self.tags.get(&owner).map(|tag| *tag);
            for &(owner, mode) in &queue.holders {
                entries.push(LockEntry {
                    key: key.clone(),
                    owner,
                    tag: tag(owner),
                    mode,
                    granted: true,
                });
            }
            for waiter in &queue.waiters {
                entries.push(LockEntry {
                    key: key.clone(),
                    owner: waiter.owner,
                    tag: tag(waiter.owner),
                    mode: waiter.mode,
                    granted: false,
                });
            }
        }
        entries
    }

    /// Keys with a holder or a waiter (what memory the table takes).
    pub fn locked_keys(&self) -> usize {
        self.keys.len()
    }

    /// Whether `owner`, now waiting, waits (through others waiting) for itself. Each owner is
    /// expanded once; in one key's queue the waiters ahead of a waiter are gathered from where
    /// the search last stopped in that queue, so a queue of n waiters costs O(n), not O(n^2).
    fn closes_cycle(&self, owner: Owner) -> bool {
        let mut seen: HashSet<Owner> = HashSet::from([owner]);
        let mut scanned: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut frontier = vec![owner];
        while let Some(next) = frontier.pop() {
            for blocker in self.blockers_of(next, &mut scanned) {
                if blocker == owner {
                    return true;
                }
                if seen.insert(blocker) {
                    frontier.push(blocker);
                }
            }
        }
        false
    }

    /// Whom `owner` waits for now (nobody when it does not wait), but for the waiters of a
    /// queue the search gathered already (`scanned`: how far into each queue it looked).
    fn blockers_of(&self, owner: Owner, scanned: &mut HashMap<Vec<u8>, usize>) -> Vec<Owner> {
        let Some(entry) = self.waiting.get(&owner) else {
            return Vec::new();
        };
        let waits: Vec<(Vec<u8>, u64)> = entry.clone();
        drop(entry);
        let mut out = Vec::new();
        for (key, ticket) in waits {
            let Some(queue) = self.keys.get(&key) else {
                continue;
            };
            let from = scanned.get(&key).copied().unwrap_or(0);
            if let Some(upto) = queue.blockers(ticket, from, &mut out) {
                scanned.insert(key, upto.max(from));
            }
        }
        out
    }
}

/// What a waiter published to the cluster, withdrawn when its wait ends however it ends.
struct Published {
    cluster: Arc<dyn ClusterLocks>,
    owner: Owner,
    published: bool,
}

impl Drop for Published {
    fn drop(&mut self) {
        if self.published
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let cluster = Arc::clone(&self.cluster);
            let owner = self.owner;
            runtime.spawn(async move { cluster.stop_waiting(owner).await });
        }
    }
}

/// A request waiting in a queue; dropped unfinished (the statement was cancelled), it leaves
/// the queue.
struct Waiting<'a> {
    table: &'a LockTable,
    owner: Owner,
    key: &'a [u8],
    ticket: u64,
    done: bool,
}

impl Waiting<'_> {
    /// The request was granted.
    fn done(&mut self) {
        self.done = true;
        self.forget();
    }

    /// Takes this request out of the owner's waits.
    fn forget(&self) {
        let ticket = self.ticket;
        if let Some(mut waits) = self.table.waiting.get_mut(&self.owner) {
            waits.retain(|(_, t)| *t != ticket);
        }
        self.table
            .waiting
            .remove_if(&self.owner, |_, waits| waits.is_empty());
    }

    /// Leaves the queue; false when the lock was granted meanwhile (it is then held, and
    /// released with the owner's other locks).
    fn give_up(&mut self) -> bool {
        self.done = true;
        self.forget();
        let (withdrawn, idle) = match self.table.keys.get_mut(self.key) {
            Some(mut queue) => (queue.withdraw(self.ticket), queue.is_idle()),
            // No queue left: nothing was granted to this request.
            None => (true, false),
        };
        if idle {
            self.table
                .keys
                .remove_if(self.key, |_, queue| queue.is_idle());
        }
        withdrawn
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.give_up();
        }
    }
}

#[cfg(test)]
mod tests;
