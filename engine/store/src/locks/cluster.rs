//! Row locks shared by every process of one database, for a store several processes share
//! (etcd). [`crate::locks::LockTable`] queues the transactions of its own process first; a
//! transaction granted a key there registers it here before it counts as held, so a writer of
//! another process waits for it too.
//!
//! Locks here are an aid to waiting, not what makes transactions correct: a transaction still
//! validates at COMMIT the rows it locked and read, so a registration lost with a process's
//! lease turns a wait into a serialization failure, never into a lost update.

use crate::error::Result;
use crate::locks::mode::{LockMode, LockWait, Locked, Owner};

/// The locks of one process within the locks every process of the database shares.
#[async_trait::async_trait]
pub trait ClusterLocks: Send + Sync + std::fmt::Debug {
    /// Registers `owner`'s lock on each of `keys` in `mode` at once, then waits as `wait` says
    /// (its timeout is the time left) until no registration of another transaction ahead of
    /// it conflicts: what each key came to, in order (`Locked::Skipped` under SKIP LOCKED).
    /// A wait that fails (a deadlock, the timeout, NOWAIT) withdraws the registrations not
    /// granted; the granted stay until [`ClusterLocks::release`].
    async fn lock(
        &self,
        owner: Owner,
        keys: &[Vec<u8>],
        mode: LockMode,
        wait: LockWait,
    ) -> Result<Vec<Locked>>;

    /// Withdraws whatever `owner` registered on `keys` (its transaction ended).
    async fn release(&self, owner: Owner, keys: Vec<Vec<u8>>) -> Result<()>;

    /// Publishes that `owner` waits, in this process's own queues, for `blockers` (owners of
    /// this process), and says whether that closes a cycle of waits through the processes
    /// sharing the database (a deadlock no process sees by itself).
    async fn wait_closes_cycle(&self, owner: Owner, blockers: &[Owner]) -> Result<bool>;

    /// `owner` waits no more: withdraws what [`ClusterLocks::wait_closes_cycle`] published.
    async fn stop_waiting(&self, owner: Owner);
}
