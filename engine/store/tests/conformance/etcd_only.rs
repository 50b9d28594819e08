//! What only the etcd backend has: server limits, compaction of old versions, and losing
//! members of the cluster. The fault cases start their own cluster, since they stop members.

use std::sync::Arc;
use std::time::Duration;

use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;
use rowdex_store::{
    Direction, EtcdOptions, EtcdStore, KeyRange, KvRead, KvStore, StoreError, WriteBatch,
};

use crate::common::scan_all;

async fn connect(cluster: &LocalEtcdCluster, namespace: &str, options: EtcdOptions) -> EtcdStore {
    EtcdStore::connect(&cluster.address(namespace), options)
        .await
        .expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_over_the_servers_limit_names_the_flag_and_writes_nothing() {
    let store = connect(crate::cluster(), "limits", EtcdOptions::default()).await;
    // The test cluster allows 20,000 operations per transaction.
    let mut batch = WriteBatch::new();
    for i in 0..20_001u32 {
        batch.put(format!("k{i:06}").into_bytes(), b"v".to_vec());
    }
    let error = store.write(batch).await.expect_err("over the limit");
    assert!(
        matches!(
            error,
            StoreError::ServerLimit {
                flag: "--max-txn-ops",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("--max-txn-ops"), "{error}");
    let left = scan_all(&store, &KeyRange::all(), Direction::Forward, 100)
        .await
        .expect("scan");
    assert!(left.is_empty(), "a refused batch wrote {} keys", left.len());

    // A request over --max-request-bytes (32 MiB here) is refused the same way.
    let mut batch = WriteBatch::new();
    for i in 0..40u32 {
        batch.put(format!("big{i}").into_bytes(), vec![b'x'; 1 << 20]);
    }
    let error = store.write(batch).await.expect_err("over the size limit");
    assert!(
        matches!(
            error,
            StoreError::ServerLimit {
                flag: "--max-request-bytes",
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_stays_below_the_oldest_live_snapshot() {
    let options = EtcdOptions {
        keep_history: Duration::ZERO,
        ..EtcdOptions::default()
    };
    let store = connect(crate::cluster(), "compaction", options).await;
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    store.write(batch).await.expect("write");
    let old = store.snapshot();
    assert_eq!(old.get(b"a").await.expect("read"), Some(b"1".to_vec()));
    for value in 2..20u32 {
        let mut batch = WriteBatch::new();
        batch.put(b"a".to_vec(), value.to_string().into_bytes());
        store.write(batch).await.expect("write");
    }
    let first = store.compact_history().await.expect("compact");
    assert!(first.is_some(), "nothing compacted");
    // The snapshot still reads its revision, untouched by the compaction.
    assert_eq!(
        old.get(b"a").await.expect("read after compaction"),
        Some(b"1".to_vec())
    );
    drop(old);
    let second = store
        .compact_history()
        .await
        .expect("compact")
        .expect("compacted");
    assert!(second > first.unwrap_or(0), "{second} after {first:?}");
    assert_eq!(store.get(b"a").await.expect("read"), Some(b"19".to_vec()));

    // A snapshot of another process older than the history kept fails with a clear error.
    let other = connect(crate::cluster(), "compaction", options).await;
    let stale = other.snapshot();
    assert_eq!(stale.get(b"a").await.expect("read"), Some(b"19".to_vec()));
    for value in 20..25u32 {
        let mut batch = WriteBatch::new();
        batch.put(b"a".to_vec(), value.to_string().into_bytes());
        store.write(batch).await.expect("write");
    }
    store.compact_history().await.expect("compact");
    let error = stale.get(b"a").await.expect_err("compacted away");
    assert!(
        matches!(error, StoreError::SnapshotTooOld { .. }),
        "{error}"
    );
}

/// Writes `count` numbered batches of two keys each, tolerating failures; returns which
/// were acknowledged and which had an unknown outcome.
async fn write_workload(store: &EtcdStore, from: u32, count: u32) -> (Vec<u32>, Vec<u32>) {
    let mut acknowledged = Vec::new();
    let mut unknown = Vec::new();
    for n in from..from + count {
        let mut batch = WriteBatch::new();
        batch.put(
            format!("row{n:05}").into_bytes(),
            n.to_string().into_bytes(),
        );
        batch.put(format!("idx{n:05}").into_bytes(), Vec::new());
        match store.write(batch).await {
            Ok(()) => acknowledged.push(n),
            Err(StoreError::CommitOutcomeUnknown { .. }) => unknown.push(n),
            Err(error) => panic!("batch {n}: {error}"),
        }
    }
    (acknowledged, unknown)
}

/// Every acknowledged batch is there whole, and no batch is there in part.
async fn check_whole(store: &EtcdStore, acknowledged: &[u32]) -> usize {
    let rows = scan_all(store, &KeyRange::prefix(b"row"), Direction::Forward, 500)
        .await
        .expect("scan rows");
    let index = scan_all(store, &KeyRange::prefix(b"idx"), Direction::Forward, 500)
        .await
        .expect("scan index");
    let row_ids: Vec<&[u8]> = rows.iter().map(|(key, _)| &key[3..]).collect();
    let index_ids: Vec<&[u8]> = index.iter().map(|(key, _)| &key[3..]).collect();
    assert_eq!(row_ids, index_ids, "a batch was applied in part");
    for n in acknowledged {
        let id = format!("{n:05}");
        assert!(
            row_ids.contains(&id.as_bytes()),
            "acknowledged batch {n} is missing"
        );
    }
    rows.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_leader_loses_no_acknowledged_write() {
    let mut cluster = LocalEtcdCluster::start(3).await.expect("start a cluster");
    let store = Arc::new(connect(&cluster, "faults", EtcdOptions::default()).await);
    let (mut acknowledged, _) = write_workload(&store, 0, 50).await;

    // Kill the leader while a writer is busy.
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { write_workload(&store, 50, 200).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let leader = cluster.leader().await.expect("a leader");
    cluster.kill(leader).expect("kill the leader");
    let (during, unknown) = writer.await.expect("writer");
    acknowledged.extend(during);
    let present = check_whole(&store, &acknowledged).await;
    assert!(present >= acknowledged.len());
    assert!(present <= acknowledged.len() + unknown.len());
    let new_leader = cluster.leader().await.expect("a new leader");
    assert_ne!(new_leader, leader);

    // The member comes back and catches up; the store goes on without reconnecting.
    cluster.restart(leader).await.expect("restart");
    let (after, _) = write_workload(&store, 250, 20).await;
    acknowledged.extend(after);
    check_whole(&store, &acknowledged).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_quorum_writes_fail_clearly_and_the_store_recovers() {
    let mut cluster = LocalEtcdCluster::start(3).await.expect("start a cluster");
    let options = EtcdOptions {
        call_timeout: Duration::from_secs(1),
        unavailable_after: Duration::from_secs(2),
        ..EtcdOptions::default()
    };
    let store = connect(&cluster, "quorum", options).await;
    let (mut acknowledged, _) = write_workload(&store, 0, 10).await;
    cluster.kill(0).expect("kill");
    cluster.kill(1).expect("kill");
    let mut batch = WriteBatch::new();
    batch.put(b"row99999".to_vec(), b"lost".to_vec());
    batch.put(b"idx99999".to_vec(), Vec::new());
    let error = store.write(batch).await.expect_err("no quorum");
    assert!(
        matches!(
            error,
            StoreError::Unavailable { .. } | StoreError::CommitOutcomeUnknown { .. }
        ),
        "{error}"
    );
    assert!(
        store.get(b"row00000").await.is_err(),
        "a linearizable read without quorum"
    );

    cluster.restart(0).await.expect("restart");
    cluster.restart(1).await.expect("restart");
    let (after, _) = write_workload(&store, 10, 10).await;
    acknowledged.extend(after);
    let present = check_whole(&store, &acknowledged).await;
    // The refused batch may or may not have been applied, but never in part.
    assert!(present == acknowledged.len() || present == acknowledged.len() + 1);
}
