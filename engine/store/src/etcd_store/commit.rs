//! Writes: atomic batches, and transaction commits checked by the cluster.
//!
//! A commit is one etcd transaction. Its compares state what the transaction read: every key
//! it got was last changed at the revision it saw (0 if absent), and no key of a range it
//! scanned changed after its snapshot, which a range compare checks for inserts and updates,
//! while a compare per key the scan returned catches deletes (etcd's range compares do not
//! see them). The cluster applies the writes only if every compare holds, so validation and
//! write are one atomic step there; no lock is held in this process.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::client::Effect;
use super::reader::Reader;
use super::shared::Shared;
use super::wire::{Bytes, Compare, DeleteRequest, PutRequest, RequestOp, TxnRequest, TxnResponse};
use crate::batch::{Mutation, WriteBatch};
use crate::error::{Result, StoreError};
use crate::optimistic::{Committer, ReadSet};

/// Sends `compare` and the batch's writes as one transaction; a failed compare is a conflict.
pub(super) async fn commit(
    shared: &Shared,
    compare: Vec<Compare>,
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
    let success = last
        .into_iter()
        .map(|(key, value)| {
            let key = Bytes(shared.namespaced(&key));
            match value {
                Some(value) => RequestOp::Put(PutRequest {
                    key,
                    value: Bytes(value),
                }),
                None => RequestOp::DeleteRange(DeleteRequest { key }),
            }
        })
        .collect();
    let request = TxnRequest {
        compare,
        success,
        failure: Vec::new(),
    };
    let sequence = shared.pins.commit_started();
    let response: TxnResponse = shared
        .client
        .call("/v3/kv/txn", &request, Effect::Write)
        .await?;
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
}
