//! The crate's single error type.

/// Result alias used throughout the store API.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Everything that can go wrong in a store operation.
///
/// Callers are expected to match on [`StoreError::Conflict`] (retry the transaction) and treat
/// most other variants as fatal for the operation at hand.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An optimistic transaction read data that a concurrent commit changed; nothing was
    /// written. Retrying the whole transaction is the expected response.
    #[error("transaction conflict: data read by the transaction was changed concurrently")]
    Conflict,

    /// Waiting for a row lock would close a cycle of transactions waiting for each other;
    /// this one is the victim (PostgreSQL's 40P01). Rolling it back lets the others go on.
    #[error("deadlock detected: this transaction and others wait for each other's row locks")]
    Deadlock,

    /// A row lock was not granted within the lock timeout (PostgreSQL's 55P03).
    #[error("canceling statement due to lock timeout")]
    LockTimeout,

    /// A row lock another transaction holds, asked for with NOWAIT (PostgreSQL's 55P03).
    #[error("could not obtain lock on row: another transaction holds it")]
    LockNotAvailable,

    /// The on-disk engine reported an error (I/O, corruption, a poisoned journal, ...).
    #[error("storage backend error")]
    Backend {
        /// The engine's own error.
        #[from]
        source: fjall::Error,
    },

    /// Reading the database directory failed (the journal's size, at a checkpoint).
    #[error("cannot read the database directory: {source}")]
    Io {
        /// The operating system's error.
        #[from]
        source: std::io::Error,
    },

    /// A commit was sent but its result never came back (a broken connection to a remote
    /// store, say): it may or may not have been applied. Not retryable as it is: running the
    /// same write again could apply it twice.
    #[error(
        "the commit's outcome is unknown ({reason}): it may have been applied; read the data again before repeating it"
    )]
    CommitOutcomeUnknown {
        /// What broke.
        reason: String,
    },

    /// No member of the etcd cluster answered, or none could reach a quorum, for as long as the
    /// store waits; nothing was written.
    #[error("the etcd cluster at {endpoints} is unavailable: {reason}")]
    Unavailable {
        /// The members tried.
        endpoints: String,
        /// The last member's problem.
        reason: String,
    },

    /// The etcd server refused the request as too large for one of its limits; nothing was
    /// written.
    #[error(
        "the etcd server's limit on {limit} refused the request ({detail}); start etcd with a larger {flag}"
    )]
    ServerLimit {
        /// Which limit.
        limit: &'static str,
        /// The etcd flag that raises it.
        flag: &'static str,
        /// The server's message.
        detail: String,
    },

    /// A snapshot read at a revision that has since been compacted away (it lived longer than
    /// the history the store keeps); a new snapshot reads fine.
    #[error("the snapshot is older than the history the store keeps ({detail})")]
    SnapshotTooOld {
        /// The server's message.
        detail: String,
    },

    /// The etcd server answered with an error rowdex has no better name for.
    #[error("etcd error: {message} (code {code})")]
    Remote {
        /// The gRPC status code.
        code: i64,
        /// What the server said.
        message: String,
    },

    /// An `etcd://` address that cannot be used.
    #[error("invalid etcd address {address:?}: {reason}")]
    InvalidAddress {
        /// The address given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A commit's answer was lost, and settling it proved that it was not applied (and now
    /// never will be): nothing was written, and running it again is safe.
    #[error("the commit was interrupted ({reason}) and not applied; run it again")]
    Interrupted {
        /// What broke.
        reason: String,
    },

    /// The store could not finish a maintenance task in time; nothing was lost.
    #[error("store busy: {what}")]
    Busy {
        /// What did not finish.
        what: &'static str,
    },

    /// The store has been shut down. Reserved for backends with an explicit shutdown; the
    /// current backends live as long as any handle to them and never report it.
    #[error("store is closed")]
    Closed,

    /// The transaction was already committed or rolled back (a read through a handle to it
    /// that outlived it).
    #[error("the transaction has already ended")]
    TransactionEnded,

    /// A thread panicked while holding one of the store's internal locks, so the protected
    /// state may be half-updated; the store refuses to continue rather than serve it.
    #[error("store state is unusable: an internal lock was poisoned by a panic")]
    LockPoisoned,

    /// Empty keys are rejected (the on-disk format cannot represent them).
    #[error("keys must not be empty")]
    EmptyKey,

    /// A key longer than [`crate::MAX_KEY_LEN`] was written.
    #[error("key of {len} bytes exceeds the maximum of {max} bytes")]
    KeyTooLarge {
        /// Length of the offending key.
        len: usize,
        /// The limit.
        max: usize,
    },

    /// A value longer than [`crate::MAX_VALUE_LEN`] was written.
    #[error("value of {len} bytes exceeds the maximum of {max} bytes")]
    ValueTooLarge {
        /// Length of the offending value.
        len: usize,
        /// The limit.
        max: usize,
    },

    /// Something the store keeps about itself could not be read back (a placement record).
    #[error("the store's own record of {what} is unreadable: {reason}")]
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// Why it could not be.
        reason: String,
    },

    /// A request the store cannot carry out as asked.
    #[error("the store cannot do this: {what}")]
    Unsupported {
        /// What was asked, and why not.
        what: String,
    },
}
