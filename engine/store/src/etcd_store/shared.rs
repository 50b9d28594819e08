//! What one store shares with its snapshots, readers and transactions: the client, the
//! namespace, the pins of live snapshots, and the bookkeeping of compaction.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::client::{Client, Effect, EtcdOptions};
use super::pin::Pins;
use super::wire;
use crate::error::{Result, StoreError};

/// Commits of this process between two compactions, at least.
const COMPACT_EVERY_COMMITS: u64 = 1000;
/// Time between two automatic compactions, at least.
const COMPACT_INTERVAL: Duration = Duration::from_secs(60);
/// Seconds a lease of commit markers lasts (see the `commit` module).
const MARKER_LEASE_SECONDS: i64 = 120;
/// How long one lease takes new markers: every marker outlives its commit by at least the
/// lease's length minus this, far longer than settling a lost answer may take.
const MARKER_LEASE_REUSE: Duration = Duration::from_secs(30);

/// What one store shares with its snapshots and transactions.
pub(crate) struct Shared {
    pub(super) client: Client,
    pub(super) options: EtcdOptions,
    /// `name/`, in front of every key.
    pub(super) namespace: Vec<u8>,
    /// The first key after the namespace.
    pub(super) namespace_end: Vec<u8>,
    pub(super) pins: Pins,
    pub(super) compaction: Mutex<Compaction>,
    /// `name!c/` and this store's tag: the prefix of its commit markers, outside the
    /// database's keys.
    pub(super) marker_prefix: Vec<u8>,
    /// The lease new markers are put under, and when it was granted.
    pub(super) marker_lease: tokio::sync::Mutex<Option<(i64, Instant)>>,
    /// Commits whose answer was lost and that a fence settled, by outcome.
    pub(super) settled: SettledCounts,
}

/// How many commits whose answer was lost a fence settled, by outcome (what a test asserts to
/// show the fence ran, and what an operator reads to see answers getting lost).
#[derive(Debug, Default)]
pub(super) struct SettledCounts {
    pub(super) applied: std::sync::atomic::AtomicU64,
    pub(super) interrupted: std::sync::atomic::AtomicU64,
}

/// When this process last compacted, and revisions it saw with when it saw them.
#[derive(Debug, Default)]
pub(super) struct Compaction {
    commits_since: u64,
    last_run: Option<Instant>,
    compacted_to: i64,
    /// (when, revision), oldest first, at most one a second.
    seen: VecDeque<(Instant, i64)>,
}

impl Shared {
    pub(super) fn namespaced(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.namespace.len() + key.len());
        out.extend_from_slice(&self.namespace);
        out.extend_from_slice(key);
        out
    }

    pub(super) fn namespaced_end(&self, end: Option<&[u8]>) -> Vec<u8> {
        match end {
            Some(end) => self.namespaced(end),
            None => self.namespace_end.clone(),
        }
    }

    /// The marker key of the commit numbered `sequence`.
    pub(super) fn marker_key(&self, sequence: u64) -> Vec<u8> {
        let mut key = self.marker_prefix.clone();
        key.extend_from_slice(&sequence.to_be_bytes());
        key
    }

    /// The lease to put a new marker under: the current one while it is young, else a new
    /// one. Granting is repeated freely (a lease never used expires by itself).
    pub(super) async fn marker_lease(&self) -> Result<i64> {
        let mut lease = self.marker_lease.lock().await;
        if let Some((id, granted)) = *lease
            && granted.elapsed() < MARKER_LEASE_REUSE
        {
            return Ok(id);
        }
        let request = wire::LeaseGrantRequest {
            ttl: MARKER_LEASE_SECONDS,
        };
        let granted: wire::LeaseGrantResponse = self
            .client
            .call("/v3/lease/grant", &request, Effect::Read)
            .await?;
        *lease = Some((granted.id, Instant::now()));
        Ok(granted.id)
    }

    pub(super) fn strip(&self, mut key: Vec<u8>) -> Result<Vec<u8>> {
        if !key.starts_with(&self.namespace) {
            return Err(StoreError::Remote {
                code: 0,
                message: "etcd returned a key outside the database's namespace".to_string(),
            });
        }
        key.drain(..self.namespace.len());
        Ok(key)
    }

    /// Bookkeeping after a commit: compacts now and then.
    pub(super) async fn after_commit(&self) {
        let due = {
            let mut compaction = self
                .compaction
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            compaction.commits_since += 1;
            compaction.commits_since >= COMPACT_EVERY_COMMITS
                && compaction
                    .last_run
                    .is_none_or(|last| last.elapsed() >= COMPACT_INTERVAL)
        };
        self.note_revision();
        if due {
            // Compaction is housekeeping: a failure here is not the commit's.
            let _ = self.compact().await;
        }
    }

    fn note_revision(&self) {
        let revision = self.pins.newest_seen();
        let mut compaction = self
            .compaction
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let now = Instant::now();
        let fresh = compaction
            .seen
            .back()
            .is_none_or(|(when, _)| now.duration_since(*when) >= Duration::from_secs(1));
        if fresh {
            compaction.seen.push_back((now, revision));
        }
        // Keep one sample older than the history kept, and the newer ones.
        while compaction.seen.len() > 1
            && compaction
                .seen
                .get(1)
                .is_some_and(|(when, _)| now.duration_since(*when) >= self.options.keep_history)
        {
            compaction.seen.pop_front();
        }
    }

    /// Compacts below what any snapshot of this process reads and what other processes may
    /// still read (revisions younger than `keep_history`). Returns the revision compacted to.
    pub(super) async fn compact(&self) -> Result<Option<i64>> {
        self.note_revision();
        let target = {
            let mut compaction = self
                .compaction
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            compaction.commits_since = 0;
            compaction.last_run = Some(Instant::now());
            let old_enough = if self.options.keep_history.is_zero() {
                Some(self.pins.newest_seen())
            } else {
                compaction
                    .seen
                    .iter()
                    .rev()
                    .find(|(when, _)| when.elapsed() >= self.options.keep_history)
                    .map(|(_, revision)| *revision)
            };
            let live = self.pins.oldest_live().unwrap_or(i64::MAX);
            match old_enough {
                Some(revision) if revision.min(live) > compaction.compacted_to => {
                    revision.min(live)
                }
                _ => return Ok(None),
            }
        };
        let request = wire::CompactionRequest { revision: target };
        let outcome: Result<wire::CompactionResponse> = self
            .client
            .call("/v3/kv/compaction", &request, Effect::Write)
            .await;
        match outcome {
            // Another process compacted further already.
            Ok(_) | Err(StoreError::SnapshotTooOld { .. }) => {
                let mut compaction = self
                    .compaction
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner());
                compaction.compacted_to = compaction.compacted_to.max(target);
                Ok(Some(target))
            }
            Err(error) => Err(error),
        }
    }
}
