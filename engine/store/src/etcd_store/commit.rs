//! Writes: atomic batches, and transaction commits checked by the cluster.
//!
//! A commit is one etcd transaction. Its compares state what the transaction read: every key
//! it got was last changed at the revision it saw (0 if absent), and no key of a range it
//! scanned changed after its snapshot, which a range compare checks for inserts and updates,
//! while a compare per key the scan returned catches deletes (etcd's range compares do not
//! see them). The cluster applies the writes only if every compare holds, so validation and
//! write are one atomic step there; no lock is held in this process.
//!
//! **A commit whose answer is lost is resolved, not left in doubt.** Every commit also creates
//! a marker key of its own (outside the database's keys, under a lease, so etcd deletes it
//! after a couple of minutes), and requires it absent. When the answer never comes (a member
//! died with the request, a timeout), rowdex sends a fence: create the marker as "aborted" if
//! it is still absent, else read it. A fence that creates it proves the commit was not
//! applied and never will be (its compare on the marker now fails): the commit fails with
//! [`StoreError::Interrupted`], which is safe to run again. A marker already there proves it
//! was applied: the commit succeeds. Only when the cluster cannot be reached for the fence
//! before the marker could expire does the commit end as
//! [`StoreError::CommitOutcomeUnknown`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client::Effect;
use super::reader::{Observed, Reader};
use super::shared::Shared;
use super::wire::{
    Bytes, Compare, DeleteRequest, PutRequest, RangeRequest, RequestOp, TxnRequest, TxnResponse,
};
use crate::api::KvRead;
use crate::batch::{Mutation, WriteBatch};
use crate::error::{Result, StoreError};
use crate::optimistic::{Committer, ReadSet};

/// What a marker holds once its commit was applied.
const APPLIED: &[u8] = b"applied";
/// What a fence writes into the marker of a commit it stops.
const ABORTED: &[u8] = b"aborted";

/// Sends `compare` and the batch's writes as one transaction; a failed compare is a conflict.
pub(super) async fn commit(
    shared: &Shared,
    mut compare: Vec<Compare>,
    batch: WriteBatch,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    batch.validate()?;
    // Later writes of a key win, and etcd refuses a transaction naming a key twice.
    let mut last: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    for mutation in batch.into_mutations() {
        match mutation {
            Mutation::Put { key, value } => last.insert(key, Some(value)),
            Mutation::Delete { key } => last.insert(key, None),
        };
    }
    let mut success: Vec<RequestOp> = last
        .into_iter()
        .map(|(key, value)| {
            let key = Bytes(shared.namespaced(&key));
            match value {
                Some(value) => RequestOp::Put(PutRequest {
                    key,
                    value: Bytes(value),
                    lease: 0,
                }),
                None => RequestOp::DeleteRange(DeleteRequest {
                    key,
                    range_end: None,
                }),
            }
        })
        .collect();
    let sequence = shared.pins.commit_started();
    let marker = shared.marker_key(sequence);
    let lease = shared.marker_lease().await?;
    compare.push(Compare::unchanged(marker.clone(), 0));
    success.push(RequestOp::Put(PutRequest {
        key: Bytes(marker.clone()),
        value: Bytes(APPLIED.to_vec()),
        lease,
    }));
    let request = TxnRequest {
        compare,
        success,
        failure: Vec::new(),
    };
    let sent = Instant::now();
    let response: TxnResponse = match shared
        .client
        .call("/v3/kv/txn", &request, Effect::Write)
        .await
    {
        Ok(response) => response,
        Err(StoreError::CommitOutcomeUnknown { reason }) => {
            let revision = resolve(shared, &marker, lease, sent, reason).await?;
            shared.pins.commit_applied(sequence, revision);
            shared.after_commit().await;
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    if !response.succeeded {
        shared.pins.saw(response.header.revision);
        return Err(StoreError::Conflict);
    }
    shared
        .pins
        .commit_applied(sequence, response.header.revision);
    shared.after_commit().await;
    Ok(())
}

/// Settles a commit whose answer was lost: the revision it was applied at, or
/// [`StoreError::Interrupted`] when a fence proved it was not (and now cannot be).
async fn resolve(
    shared: &Shared,
    marker: &[u8],
    lease: i64,
    sent: Instant,
    reason: String,
) -> Result<i64> {
    // The marker lives at least as long as its lease was granted for minus its reuse; stop
    // well before, since an expired marker would read as "never applied".
    let deadline = (shared.options.unavailable_after * 3).min(Duration::from_secs(30));
    let fence = TxnRequest {
        compare: vec![Compare::unchanged(marker.to_vec(), 0)],
        success: vec![RequestOp::Put(PutRequest {
            key: Bytes(marker.to_vec()),
            value: Bytes(ABORTED.to_vec()),
            lease,
        })],
        failure: vec![RequestOp::Range(RangeRequest {
            key: Bytes(marker.to_vec()),
            ..RangeRequest::default()
        })],
    };
    let settled = fence_until_settled(shared, &fence, sent, deadline, reason).await;
    let counter = match &settled {
        Ok(_) => Some(&shared.settled.applied),
        Err(StoreError::Interrupted { .. }) => Some(&shared.settled.interrupted),
        Err(_) => None,
    };
    if let Some(counter) = counter {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    settled
}

/// Sends `fence` until it gets an answer or `deadline` has passed since the commit was `sent`.
async fn fence_until_settled(
    shared: &Shared,
    fence: &TxnRequest,
    sent: Instant,
    deadline: Duration,
    reason: String,
) -> Result<i64> {
    loop {
        let outcome: Result<TxnResponse> =
            shared.client.call("/v3/kv/txn", fence, Effect::Write).await;
        match outcome {
            Ok(response) if response.succeeded => {
                shared.pins.saw(response.header.revision);
                return Err(StoreError::Interrupted { reason });
            }
            Ok(response) => {
                let found = response
                    .responses
                    .into_iter()
                    .filter_map(|answer| answer.response_range)
                    .flat_map(|range| range.kvs)
                    .next();
                return match found {
                    Some(kv) if kv.value.0 == APPLIED => Ok(kv.mod_revision),
                    _ => Err(StoreError::Interrupted { reason }),
                };
            }
            // The fence is conditional: sending it again is always safe.
            Err(StoreError::CommitOutcomeUnknown { .. } | StoreError::Unavailable { .. })
                if sent.elapsed() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => {
                return Err(StoreError::CommitOutcomeUnknown {
                    reason: format!("{reason}; settling it failed: {error}"),
                });
            }
        }
    }
}

/// Commits one transaction: its snapshots' observations become the compares.
pub(super) struct EtcdCommitter {
    pub(super) shared: Arc<Shared>,
    /// Every snapshot the transaction read from, oldest first: READ COMMITTED moves on to a
    /// new one at each statement and after a wait for a row lock.
    pub(super) snapshots: Mutex<Vec<Arc<Reader>>>,
}

impl EtcdCommitter {
    pub(super) fn new(shared: Arc<Shared>, first: Arc<Reader>) -> EtcdCommitter {
        EtcdCommitter {
            shared,
            snapshots: Mutex::new(vec![first]),
        }
    }

    fn snapshots(&self) -> Vec<Arc<Reader>> {
        self.snapshots
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }
}

#[async_trait::async_trait]
impl Committer for EtcdCommitter {
    /// Each recorded read is compared against the snapshot it came from (a transaction
    /// that moved on keeps its earlier reads recorded, as the in-process stores validate
    /// them): a key must still be as that snapshot saw it, a range unchanged since that
    /// snapshot's revision. (Other processes commit too: nothing here says that nothing was
    /// committed since `_begun`, so every read is compared.)
    async fn commit(&self, reads: &ReadSet, _begun: Option<u64>, batch: WriteBatch) -> Result<()> {
        batch.validate()?;
        let snapshots = self.snapshots();
        let observed: Vec<Observed> = snapshots
            .iter()
            .map(|snapshot| snapshot.observed())
            .collect();
        let mut compare = Vec::new();
        let mut checked: BTreeMap<&[u8], i64> = BTreeMap::new();
        for (key, read_in) in reads.keys() {
            let seen = observed.get(read_in).and_then(|observed| observed.get(key));
            checked.insert(key, seen.copied().unwrap_or(0));
        }
        for (range, read_in) in reads.ranges() {
            // A snapshot that scanned a range has read, so it has a revision.
            let revision = snapshots
                .get(read_in)
                .and_then(|snapshot| snapshot.pinned_revision())
                .ok_or(StoreError::Conflict)?;
            compare.push(Compare::range_unchanged_since(
                self.shared.namespaced(&range.start),
                self.shared.namespaced_end(range.end.as_deref()),
                revision,
            ));
            if let Some(observed) = observed.get(read_in) {
                for (key, changed) in observed.range::<[u8], _>(range.bounds()) {
                    checked.entry(key).or_insert(*changed);
                }
            }
        }
        compare.extend(
            checked
                .into_iter()
                .map(|(key, changed)| Compare::unchanged(self.shared.namespaced(key), changed)),
        );
        commit(&self.shared, compare, batch).await
    }

    fn latest(&self) -> Arc<dyn KvRead> {
        Arc::new(Reader::snapshot(Arc::clone(&self.shared), false))
    }

    fn next_snapshot(&self) -> Arc<dyn KvRead> {
        let snapshot = Arc::new(Reader::snapshot(Arc::clone(&self.shared), true));
        self.snapshots
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(Arc::clone(&snapshot));
        snapshot
    }

    fn moves_snapshots(&self) -> bool {
        // Each snapshot keeps its observations, and the compares are built from all of them.
        true
    }
}
