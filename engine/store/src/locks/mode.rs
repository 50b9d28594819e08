//! Who holds a row lock, and how: the modes and which of them go together, what a request
//! does when it cannot have its lock at once, and what it got.

use std::time::Duration;

/// Who holds a lock: a transaction's id.
pub type Owner = u64;

/// How a key is locked. Shared locks (`FOR SHARE`, `FOR KEY SHARE`) are held together;
/// an exclusive one (a write, `FOR UPDATE`, `FOR NO KEY UPDATE`) alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    Shared,
    Exclusive,
}

impl LockMode {
    pub(crate) fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }
}

/// What a request does when another transaction holds the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockWait {
    /// Wait for it, up to the timeout if there is one (`lock_timeout`).
    Wait(Option<Duration>),
    /// Fail at once (`NOWAIT`): `StoreError::LockNotAvailable`.
    NoWait,
    /// Leave the key out (`SKIP LOCKED`): `Locked::Skipped`.
    SkipLocked,
}

/// What a request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locked {
    Granted,
    /// Another transaction holds the key and the request skips it.
    Skipped,
}
