//! Row locks shared through etcd by every process of one database (see
//! [`crate::locks::cluster`]), in the spirit of TiKV's pessimistic locks: a lock is a key in
//! the cluster, written before the row is, and a transaction that finds another's lock waits
//! for it to go.
//!
//! * A lock is the key `name!l/<hex of the row key>/<process><owner><mode>`, put under the
//!   process's lease: a process that dies stops renewing it, and etcd deletes its locks when
//!   the lease runs out ([`crate::EtcdOptions::lock_lease`]). A process that closes revokes it.
//! * The keys under one row key's prefix are its queue, in the order they were created
//!   (their create revision): replaying them in that order as the process's own queue does
//!   (`replay`) says who holds the row and who waits. A request puts its key and reads the
//!   queue in one etcd transaction (one for up to [`KEYS_PER_REQUEST`] rows).
//! * A waiter watches its row's prefix from the revision it read on, applies each put and
//!   delete to its copy of the queue and replays it, until it holds the row. A watch that
//!   breaks (a member lost, history compacted) is re-read and opened again.
//! * Deadlocks across processes: a request that has waited [`CLUSTER_DEADLOCK_CHECK`] (and
//!   each such span after) puts `name!w/<process><owner>` (whom it waits for, under the
//!   lease) and reads every waiter's; a cycle through it makes it the victim. Requests
//!   waiting in a process's own queue publish theirs the same way
//!   ([`ClusterLocks::wait_closes_cycle`]), so a cycle with a step inside one process is
//!   found too.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::client::Effect;
use super::lock_queue::{Member, Standing, mode_byte, queue_of, reaches, replay};
use super::shared::Shared;
use super::watch::Watch;
use super::wire::{
    Bytes, DeleteRequest, KeyValue, LeaseGrantRequest, LeaseGrantResponse, LeaseKeepAliveStreamed,
    LeaseRequest, PutRequest, RangeRequest, RangeResponse, RequestOp, TxnRequest, TxnResponse,
};
use crate::error::{Result, StoreError};
use crate::locks::{CLUSTER_DEADLOCK_CHECK, ClusterLocks, LockMode, LockWait, Locked, Owner};

/// Rows locked per etcd transaction: two operations each, within etcd's default
/// `--max-txn-ops` (128).
pub(super) const KEYS_PER_REQUEST: usize = 64;

/// This process's locks in the cluster.
pub(crate) struct EtcdLocks {
    shared: Arc<Shared>,
    /// `name!l/`: every row's queue.
    lock_prefix: Vec<u8>,
    /// `name!w/`: whom each waiter waits for.
    wait_prefix: Vec<u8>,
    process: u64,
    lease: Arc<tokio::sync::Mutex<Option<i64>>>,
}

impl std::fmt::Debug for EtcdLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EtcdLocks({:016x})", self.process)
    }
}

impl EtcdLocks {
    /// The locks of process `process` (its tag) of the database named `namespace`.
    pub(super) fn new(shared: Arc<Shared>, namespace: &str, process: u64) -> EtcdLocks {
        EtcdLocks {
            shared,
            lock_prefix: format!("{namespace}!l/").into_bytes(),
            wait_prefix: format!("{namespace}!w/").into_bytes(),
            process,
            lease: Arc::default(),
        }
    }

    fn member(&self, owner: Owner) -> Member {
        let mut member = [0u8; 16];
        member[..8].copy_from_slice(&self.process.to_be_bytes());
        member[8..].copy_from_slice(&owner.to_be_bytes());
        member
    }

    /// The prefix of `key`'s queue, and the first key after it.
    fn queue_range(&self, key: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut start = self.lock_prefix.clone();
        for byte in key {
            start.extend_from_slice(format!("{byte:02x}").as_bytes());
        }
        start.push(b'/');
        let mut end = start.clone();
        // '/' + 1: hex digits never contain '/', so no other row's queue lies between.
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        (start, end)
    }

    fn lock_key(&self, key: &[u8], member: Member, mode: LockMode) -> Vec<u8> {
        let (mut lock, _) = self.queue_range(key);
        lock.extend_from_slice(&member);
        lock.push(mode_byte(mode));
        lock
    }

    fn wait_key(&self, member: Member) -> Vec<u8> {
        let mut key = self.wait_prefix.clone();
        key.extend_from_slice(&member);
        key
    }

    /// The lease this process's locks live under: granted at the first lock and renewed in
    /// the background at a third of its length until the process closes; granted anew when
    /// renewing found it expired (the cluster was out of reach longer than the lease).
    async fn lease(&self) -> Result<i64> {
        let mut lease = self.lease.lock().await;
        if let Some(id) = *lease {
            return Ok(id);
        }
        let ttl = self.shared.options.lock_lease.as_secs().max(1) as i64;
        let granted: LeaseGrantResponse = self
            .shared
            .client
            .call("/v3/lease/grant", &LeaseGrantRequest { ttl }, Effect::Read)
            .await?;
        *lease = Some(granted.id);
        tokio::spawn(keep_alive(
            Arc::downgrade(&self.shared),
            Arc::downgrade(&self.lease),
            granted.id,
            Duration::from_secs(ttl as u64) / 3,
        ));
        Ok(granted.id)
    }

    /// The read of `key`'s queue: its lock keys, without values.
    fn queue_request(&self, key: &[u8]) -> RangeRequest {
        let (start, end) = self.queue_range(key);
        RangeRequest {
            key: Bytes(start),
            range_end: Some(Bytes(end)),
            keys_only: true,
            ..RangeRequest::default()
        }
    }

    /// Reads `key`'s queue at the latest revision.
    async fn read_queue(&self, key: &[u8]) -> Result<(Vec<KeyValue>, i64)> {
        let request = self.queue_request(key);
        let answer: RangeResponse = self
            .shared
            .client
            .call("/v3/kv/range", &request, Effect::Read)
            .await?;
        Ok((answer.kvs, answer.header.revision))
    }

    /// Deletes `keys` (locks given up), as well as it can: a lock left behind goes with the
    /// transaction's release or the lease.
    async fn delete(&self, keys: Vec<Vec<u8>>) {
        delete_keys(&self.shared, keys).await;
    }

    /// Waits until `member` holds `key` (its lock put at `revision`, the queue as then read
    /// `queue`), publishing whom it waits for once every [`CLUSTER_DEADLOCK_CHECK`].
    async fn wait_for(
        &self,
        member: Member,
        key: &[u8],
        mut queue: Vec<KeyValue>,
        mut revision: i64,
        deadline: Option<Instant>,
    ) -> Result<()> {
        let (start, end) = self.queue_range(key);
        // Withdrawn however the wait ends (a cancelled statement drops it mid-wait).
        let mut published = PublishedWait {
            shared: Arc::clone(&self.shared),
            key: self.wait_key(member),
            armed: false,
        };
        let mut next_check = Instant::now() + CLUSTER_DEADLOCK_CHECK;
        let outcome = 'wait: loop {
            let mut watch = match Watch::open(
                &self.shared.client,
                start.clone(),
                end.clone(),
                revision + 1,
            )
            .await
            {
                Ok(watch) => watch,
                Err(error) => break 'wait Err(error),
            };
            // The queue may have moved between the read and the watch's start.
            let standing = replay(&queue_of(&queue), member);
            if standing == Standing::Holds {
                break 'wait Ok(());
            }
            loop {
                let limit = deadline.map_or(next_check, |deadline| deadline.min(next_check));
                tokio::select! {
                    message = watch.next() => match message {
                        Ok(message) => {
                            revision = revision.max(message.header.revision);
                            for event in message.events {
                                queue.retain(|lock| lock.key != event.kv.key);
                                if !event.is_delete() {
                                    queue.push(event.kv);
                                }
                            }
                            if replay(&queue_of(&queue), member) == Standing::Holds {
                                break 'wait Ok(());
                            }
                        }
                        // Broken: read the queue again and watch from there.
                        Err(_) => match self.read_queue(key).await {
                            Ok((read, at)) => {
                                queue = read;
                                revision = at;
                                continue 'wait;
                            }
                            Err(error) => break 'wait Err(error),
                        },
                    },
                    () = tokio::time::sleep_until(limit.into()) => {
                        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                            break 'wait Err(StoreError::LockTimeout);
                        }
                        next_check = Instant::now() + CLUSTER_DEADLOCK_CHECK;
                        let Standing::WaitsFor(blockers) = replay(&queue_of(&queue), member) else {
                            break 'wait Ok(());
                        };
                        published.armed = true;
                        if let Ok(true) = self.closes_cycle(member, &blockers).await {
                            break 'wait Err(StoreError::Deadlock);
                        }
                    }
                }
            }
        };
        drop(published);
        outcome
    }

    /// Publishes that `member` waits for `blockers` and reads every waiter's: whether the
    /// waits lead from `member` back to it.
    async fn closes_cycle(&self, member: Member, blockers: &[Member]) -> Result<bool> {
        let lease = self.lease().await?;
        let mut end = self.wait_prefix.clone();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let request = TxnRequest {
            success: vec![
                RequestOp::Put(PutRequest {
                    key: Bytes(self.wait_key(member)),
                    value: Bytes(blockers.concat()),
                    lease,
                }),
                RequestOp::Range(RangeRequest {
                    key: Bytes(self.wait_prefix.clone()),
                    range_end: Some(Bytes(end)),
                    ..RangeRequest::default()
                }),
            ],
            ..TxnRequest::default()
        };
        let answer: TxnResponse = self
            .shared
            .client
            .call("/v3/kv/txn", &request, Effect::Write)
            .await?;
        let mut waits: HashMap<Member, Vec<Member>> = HashMap::new();
        let published = answer
            .responses
            .get(1)
            .and_then(|response| response.response_range.as_ref());
        for edge in published.map(|range| range.kvs.as_slice()).unwrap_or(&[]) {
            let Some(waiter) = edge.key.0.strip_prefix(self.wait_prefix.as_slice()) else {
                continue;
            };
            let Ok(waiter) = Member::try_from(waiter) else {
                continue;
            };
            let targets = edge
                .value
                .0
                .chunks_exact(16)
                .filter_map(|target| Member::try_from(target).ok())
                .collect();
            waits.insert(waiter, targets);
        }
        Ok(reaches(&waits, member))
    }
}

#[async_trait::async_trait]
impl ClusterLocks for EtcdLocks {
    async fn lock(
        &self,
        owner: Owner,
        keys: &[Vec<u8>],
        mode: LockMode,
        wait: LockWait,
    ) -> Result<Vec<Locked>> {
        let deadline = match wait {
            LockWait::Wait(Some(limit)) => Some(Instant::now() + limit),
            _ => None,
        };
        let lease = self.lease().await?;
        let member = self.member(owner);
        let mut outcomes = Vec::with_capacity(keys.len());
        // (index in keys, the queue as read, the revision read at) of each row held by others.
        let mut blocked = Vec::new();
        for (chunk_at, chunk) in keys.chunks(KEYS_PER_REQUEST).enumerate() {
            let mut success = Vec::with_capacity(chunk.len() * 2);
            for key in chunk {
                success.push(RequestOp::Put(PutRequest {
                    key: Bytes(self.lock_key(key, member, mode)),
                    value: Bytes(Vec::new()),
                    lease,
                }));
                success.push(RequestOp::Range(self.queue_request(key)));
            }
            let request = TxnRequest {
                success,
                ..TxnRequest::default()
            };
            let mut answer: TxnResponse = self
                .shared
                .client
                .call("/v3/kv/txn", &request, Effect::Write)
                .await?;
            for at in 0..chunk.len() {
                let queue = answer
                    .responses
                    .get_mut(2 * at + 1)
                    .and_then(|response| response.response_range.take())
                    .map(|range| range.kvs)
                    .unwrap_or_default();
                if replay(&queue_of(&queue), member) != Standing::Holds {
                    blocked.push((
                        chunk_at * KEYS_PER_REQUEST + at,
                        queue,
                        answer.header.revision,
                    ));
                }
                outcomes.push(Locked::Granted);
            }
        }
        if blocked.is_empty() {
            return Ok(outcomes);
        }
        let withdraw = |from: usize| -> Vec<Vec<u8>> {
            blocked[from..]
                .iter()
                .map(|(index, _, _)| self.lock_key(&keys[*index], member, mode))
                .collect()
        };
        match wait {
            LockWait::NoWait => {
                self.delete(withdraw(0)).await;
                Err(StoreError::LockNotAvailable)
            }
            LockWait::SkipLocked => {
                self.delete(withdraw(0)).await;
                for (index, _, _) in &blocked {
                    outcomes[*index] = Locked::Skipped;
                }
                Ok(outcomes)
            }
            LockWait::Wait(_) => {
                for (at, (index, queue, revision)) in blocked.iter().enumerate() {
                    let waited = self
                        .wait_for(member, &keys[*index], queue.clone(), *revision, deadline)
                        .await;
                    if let Err(error) = waited {
                        self.delete(withdraw(at)).await;
                        return Err(error);
                    }
                }
                Ok(outcomes)
            }
        }
    }

    async fn release(&self, owner: Owner, keys: Vec<Vec<u8>>) -> Result<()> {
        let member = self.member(owner);
        let ranges = keys
            .iter()
            .map(|key| {
                // Both of the owner's locks on the row (shared and exclusive).
                let mut start = self.lock_key(key, member, LockMode::Shared);
                start.pop();
                let mut end = start.clone();
                end.push(u8::MAX);
                (start, Some(end))
            })
            .collect();
        delete_ranges(&self.shared, ranges).await
    }

    async fn wait_closes_cycle(&self, owner: Owner, blockers: &[Owner]) -> Result<bool> {
        let blockers: Vec<Member> = blockers.iter().map(|&other| self.member(other)).collect();
        self.closes_cycle(self.member(owner), &blockers).await
    }

    async fn stop_waiting(&self, owner: Owner) {
        self.delete(vec![self.wait_key(self.member(owner))]).await;
    }
}

impl Drop for EtcdLocks {
    /// A process that closes gives its locks up at once rather than when its lease runs out.
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(id) = self.lease.try_lock().ok().and_then(|lease| *lease) else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        runtime.spawn(async move {
            let request = LeaseRequest { id };
            let _: Result<serde_json::Value> = shared
                .client
                .call("/v3/lease/revoke", &request, Effect::Write)
                .await;
        });
    }
}

/// Deletes `keys`, as well as it can (see [`EtcdLocks::delete`]).
async fn delete_keys(shared: &Shared, keys: Vec<Vec<u8>>) {
    let ranges = keys.into_iter().map(|key| (key, None)).collect();
    let _ = delete_ranges(shared, ranges).await;
}

/// Deletes each key, or `[start, end)`, in etcd transactions of up to 128 operations.
async fn delete_ranges(shared: &Shared, ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<()> {
    for chunk in ranges.chunks(KEYS_PER_REQUEST * 2) {
        let success = chunk
            .iter()
            .map(|(key, end)| {
                RequestOp::DeleteRange(DeleteRequest {
                    key: Bytes(key.clone()),
                    range_end: end.clone().map(Bytes),
                })
            })
            .collect();
        let request = TxnRequest {
            success,
            ..TxnRequest::default()
        };
        let _: TxnResponse = shared
            .client
            .call("/v3/kv/txn", &request, Effect::Write)
            .await?;
    }
    Ok(())
}

/// A waiter's published waits (`name!w/...`), deleted in the background when the wait ends.
struct PublishedWait {
    shared: Arc<Shared>,
    key: Vec<u8>,
    armed: bool,
}

impl Drop for PublishedWait {
    fn drop(&mut self) {
        if self.armed
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let shared = Arc::clone(&self.shared);
            let key = std::mem::take(&mut self.key);
            runtime.spawn(async move { delete_keys(&shared, vec![key]).await });
        }
    }
}

/// Renews lease `id` every `every` while the process's store lives; a lease found expired
/// is forgotten, so the next lock takes a new one.
async fn keep_alive(
    shared: Weak<Shared>,
    lease: Weak<tokio::sync::Mutex<Option<i64>>>,
    id: i64,
    every: Duration,
) {
    loop {
        tokio::time::sleep(every).await;
        let (Some(shared), Some(lease)) = (shared.upgrade(), lease.upgrade()) else {
            return;
        };
        let renewed: Result<LeaseKeepAliveStreamed> = shared
            .client
            .call("/v3/lease/keepalive", &LeaseRequest { id }, Effect::Read)
            .await;
        match renewed {
            Ok(answer) if answer.result.ttl > 0 => {}
            // Unreachable for now: try again at the next turn, while the lease may live.
            Err(StoreError::Unavailable { .. }) => {}
            _ => {
                let mut held = lease.lock().await;
                if *held == Some(id) {
                    *held = None;
                }
                return;
            }
        }
    }
}
