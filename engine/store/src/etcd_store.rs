//! [`EtcdStore`]: the store on an etcd cluster, Raft-replicated across its members.
//!
//! rowdex talks to etcd through the JSON gateway every etcd v3.4+ member serves on its client
//! port (the gRPC API as JSON over HTTP/1.1), with a small client of its own: no gRPC stack and
//! no protobuf compiler in the build, so the default binary reaches a cluster too.
//!
//! * Reads of the latest state are linearizable reads; a snapshot reads at one revision of
//!   etcd's multi-version store (see the `pin` module for how it picks it).
//! * A write batch is one etcd transaction, applied atomically by the cluster.
//! * An optimistic transaction reads a snapshot and commits as one compare-and-write
//!   transaction (see the `commit` module); a failed compare is [`StoreError::Conflict`].
//! * Old versions are compacted by rowdex itself (etcd does not by default), never above the
//!   oldest revision a snapshot of this process reads and never within
//!   [`EtcdOptions::keep_history`] of now, so a snapshot of another process has that long.
//! * What etcd's limits refuse (operations per transaction, request size, storage quota)
//!   fails with [`StoreError::ServerLimit`], naming the server flag that raises the limit.
//!
//! All of a database's keys live under one namespace, `name/`, so several databases can share
//! a cluster.

mod client;
mod commit;
mod http;
pub mod local_cluster;
mod lock_queue;
mod locks;
mod pin;
mod reader;
mod shared;
mod watch;
mod wire;

use std::hash::BuildHasher;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

pub use client::EtcdOptions;
use client::{Client, Effect};
use commit::EtcdCommitter;
use locks::EtcdLocks;
use pin::Pins;
use reader::Reader;
use shared::{Compaction, Shared};

use crate::api::{AccessCosts, Capabilities, KvRead, KvStore, Transaction};
use crate::batch::WriteBatch;
use crate::error::{Result, StoreError};
use crate::locks::ClusterLocks;
use crate::optimistic::OptimisticTx;
use crate::range::{CountPage, Direction, EntryVisitor, KeyRange, ScanPage};

/// The namespace of a database whose address names none.
pub const DEFAULT_NAMESPACE: &str = "rowdex";

/// The keys one commit should carry at most (see [`Capabilities::max_commit_keys`]).
pub const COMMIT_KEYS: usize = 10_000;

/// Where a database lives on a cluster: `etcd://host:port[,host:port...][/name]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdAddress {
    /// The members' client addresses, `host:port`.
    pub endpoints: Vec<String>,
    /// The database's namespace (letters, digits, `_`, `-`, `.`).
    pub namespace: String,
}

impl FromStr for EtcdAddress {
    type Err = StoreError;

    fn from_str(address: &str) -> Result<EtcdAddress> {
        let invalid = |reason: &str| StoreError::InvalidAddress {
            address: address.to_string(),
            reason: reason.to_string(),
        };
        let rest = address
            .strip_prefix("etcd://")
            .ok_or_else(|| invalid("it must start with etcd://"))?;
        let (hosts, namespace) = match rest.split_once('/') {
            Some((hosts, namespace)) => (hosts, namespace),
            None => (rest, DEFAULT_NAMESPACE),
        };
        let mut endpoints = Vec::new();
        for host in hosts.split(',') {
            let Some((name, port)) = host.rsplit_once(':') else {
                return Err(invalid(&format!("{host:?} is not host:port")));
            };
            if name.is_empty() || port.parse::<u16>().is_err() {
                return Err(invalid(&format!("{host:?} is not host:port")));
            }
            endpoints.push(host.to_string());
        }
        let valid_name = !namespace.is_empty()
            && namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid_name {
            return Err(invalid(
                "the database name after / may hold letters, digits, _, - and . only",
            ));
        }
        Ok(EtcdAddress {
            endpoints,
            namespace: namespace.to_string(),
        })
    }
}

impl std::fmt::Display for EtcdAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "etcd://{}/{}", self.endpoints.join(","), self.namespace)
    }
}

/// A store on an etcd cluster (see the module documentation).
pub struct EtcdStore {
    shared: Arc<Shared>,
    latest: Reader,
    address: EtcdAddress,
    /// This process's row locks in the cluster (see the `locks` module).
    locks: Arc<EtcdLocks>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EtcdStore({})", self.address)
    }
}

impl EtcdStore {
    /// Connects to the cluster at `address` and checks that it answers.
    pub async fn connect(address: &EtcdAddress, options: EtcdOptions) -> Result<EtcdStore> {
        if address.endpoints.is_empty() {
            return Err(StoreError::InvalidAddress {
                address: address.to_string(),
                reason: "no endpoint".to_string(),
            });
        }
        let namespace = format!("{}/", address.namespace).into_bytes();
        let mut namespace_end = namespace.clone();
        if let Some(last) = namespace_end.last_mut() {
            *last += 1;
        }
        // Tells this store's commit markers from every other process's.
        let tag = std::collections::hash_map::RandomState::new()
            .hash_one((std::process::id(), std::time::SystemTime::now()));
        let mut marker_prefix = format!("{}!c/", address.namespace).into_bytes();
        marker_prefix.extend_from_slice(&tag.to_be_bytes());
        let shared = Arc::new(Shared {
            client: Client::new(address.endpoints.clone(), options),
            options,
            namespace,
            namespace_end,
            pins: Pins::default(),
            compaction: Mutex::new(Compaction::default()),
            marker_prefix,
            marker_lease: tokio::sync::Mutex::new(None),
            settled: Default::default(),
        });
        let status: wire::StatusResponse = shared
            .client
            .call(
                "/v3/maintenance/status",
                &serde_json::json!({}),
                Effect::Read,
            )
            .await?;
        shared.pins.saw(status.header.revision);
        Ok(EtcdStore {
            latest: Reader::latest(Arc::clone(&shared)),
            locks: Arc::new(EtcdLocks::new(Arc::clone(&shared), &address.namespace, tag)),
            shared,
            address: address.clone(),
        })
    }

    /// Where the store lives.
    pub fn address(&self) -> &EtcdAddress {
        &self.address
    }

    /// The commits of this store whose answer was lost and that a fence settled: (found
    /// applied, stopped before it applied).
    pub fn settled_commits(&self) -> (u64, u64) {
        let settled = &self.shared.settled;
        (
            settled.applied.load(std::sync::atomic::Ordering::Relaxed),
            settled
                .interrupted
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// Compacts now (as [`KvStore::compact`] does); returns the revision compacted to, or
    /// `None` when nothing was old enough.
    pub async fn compact_history(&self) -> Result<Option<i64>> {
        self.shared.compact().await
    }
}

#[async_trait::async_trait]
impl KvRead for EtcdStore {
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.latest.get(key).await
    }

    async fn multi_get(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.latest.multi_get(keys).await
    }

    async fn scan_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
    ) -> Result<ScanPage> {
        self.latest.scan_page(range, direction, limit).await
    }

    async fn visit_page(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        self.latest.visit_page(range, direction, limit, visit).await
    }

    async fn count_page(&self, range: &KeyRange, cap: u64) -> Result<CountPage> {
        self.latest.count_page(range, cap).await
    }

    async fn scan_pages(
        &self,
        ranges: &[KeyRange],
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<ScanPage>> {
        self.latest.scan_pages(ranges, direction, limit).await
    }

    fn batches_ranges(&self) -> bool {
        self.latest.batches_ranges()
    }
}

#[async_trait::async_trait]
impl KvStore for EtcdStore {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // Acknowledged once a quorum of members has it on disk.
            durable: true,
            // A DESCEND range with a limit reads the whole range on the server.
            native_reverse_scan: false,
            snapshots: true,
            shared: true,
            // Half the --max-txn-ops the README suggests (20000), leaving room for the
            // row-count and statistics keys a batch writes beside its rows.
            max_commit_keys: Some(COMMIT_KEYS),
            // Measured on loopback, three members on two cores: a range request costs about
            // 0.5 ms before its first entry and 5-10 µs per entry (JSON both ways); a key read
            // within a batched multi-get (one read-only transaction of up to 100 reads) about
            // 20-40 µs. Index lookups and presence checks are batched that way.
            durability: crate::Durability::FsyncWal,
            honours_durability: false,
            costs: AccessCosts {
                seek_ns: 500_000,
                next_ns: 5_000,
                get_ns: 20_000,
                check_ns: 20_000,
                reverse_reads_whole_range: true,
                // A range read inside a batch of them (`scan_pages`): about what a get in a
                // batched multi-get costs, plus its entries.
                range_in_batch_ns: Some(30_000),
            },
        }
    }

    async fn write(&self, batch: WriteBatch) -> Result<()> {
        commit::commit(&self.shared, Vec::new(), batch).await
    }

    fn snapshot(&self) -> Arc<dyn KvRead> {
        Arc::new(Reader::snapshot(Arc::clone(&self.shared), false))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>> {
        let snapshot = Arc::new(Reader::snapshot(Arc::clone(&self.shared), true));
        let committer = Arc::new(EtcdCommitter::new(
            Arc::clone(&self.shared),
            Arc::clone(&snapshot),
        ));
        Ok(Box::new(OptimisticTx::new(committer, snapshot, None)))
    }

    async fn flush(&self) -> Result<()> {
        // The cluster acknowledges a write once a quorum of members has synced it.
        Ok(())
    }

    async fn compact(&self) -> Result<()> {
        self.shared.compact().await.map(|_| ())
    }

    fn cluster_locks(&self) -> Option<Arc<dyn ClusterLocks>> {
        Some(Arc::clone(&self.locks) as Arc<dyn ClusterLocks>)
    }
}
