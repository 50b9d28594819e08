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
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::Effect;
use super::reader::Reader;
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
                None => RequestOp::DeleteRange(DeleteRequest { key }),
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
    loop {
        let outcome: Result<TxnResponse> = shared
            .client
            .call("/v3/kv/txn", &fence, Effect::Write)
            .await;
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

/// Commits one transaction: its snapshot's observations become the compares.
pub(super) struct EtcdCommitter {
    pub(super) shared: Arc<Shared>,
    pub(super) snapshot: Arc<Reader>,
}

#[async_trait::async_trait]
impl Committer for EtcdCommitter {
    async fn commit(&self, reads: &ReadSet, batch: WriteBatch) -> Result<()> {
        batch.validate()?;
        let mut compare = Vec::new();
        if let Some(revision) = self.snapshot.pinned_revision() {
            let observed = self.snapshot.observed();
            let mut checked: BTreeMap<&[u8], i64> = BTreeMap::new();
            for key in reads.keys() {
                checked.insert(key, observed.get(key).copied().unwrap_or(0));
            }
            for range in reads.ranges() {
                compare.push(Compare::range_unchanged_since(
                    self.shared.namespaced(&range.start),
                    self.shared.namespaced_end(range.end.as_deref()),
                    revision,
                ));
                for (key, changed) in observed.range::<[u8], _>(range.bounds()) {
                    checked.insert(key, *changed);
                }
            }
            compare.extend(
                checked
                    .into_iter()
                    .map(|(key, changed)| Compare::unchanged(self.shared.namespaced(key), changed)),
            );
        }
        commit(&self.shared, compare, batch).await
    }

    fn latest(&self) -> Arc<dyn KvRead> {
        Arc::new(Reader::snapshot(Arc::clone(&self.shared), false))
    }

    fn moves_snapshots(&self) -> bool {
        // The compares name the revisions the transaction's one snapshot observed.
        false
    }
}
