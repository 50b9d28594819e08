//! What only the etcd backend has: server limits, compaction of old versions, batched reads of
//! many ranges, and losing members of the cluster. The fault cases start their own cluster, since they stop members.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use rowdex_store::etcd_store::local_cluster::{self, LocalEtcdCluster};
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
    // The 40 MiB request below takes seconds to send and refuse in a debug build on a loaded
    // machine: with the default 5 s per call it once timed out ("interrupted ... not applied")
    // before etcd could name its limit, which is what this test is about.
    let options = EtcdOptions {
        call_timeout: Duration::from_secs(60),
        ..EtcdOptions::default()
    };
    let store = connect(crate::cluster(), "limits", options).await;
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

/// When each batch of a workload was sent and when its answer came, by batch number.
type Spans = std::sync::Mutex<Vec<(u32, std::time::Instant, std::time::Instant)>>;

/// Writes `count` numbered batches of two keys each, tolerating failures; returns which
/// were acknowledged and which had an unknown outcome, and records each batch's span in
/// `spans`. A batch whose commit was interrupted (its answer lost, and proved not applied)
/// must not be there.
async fn write_workload(
    store: &EtcdStore,
    from: u32,
    count: u32,
    spans: &Spans,
) -> (Vec<u32>, Vec<u32>) {
    let mut acknowledged = Vec::new();
    let mut unknown = Vec::new();
    let mut interrupted = Vec::new();
    for n in from..from + count {
        let mut batch = WriteBatch::new();
        batch.put(
            format!("row{n:05}").into_bytes(),
            n.to_string().into_bytes(),
        );
        batch.put(format!("idx{n:05}").into_bytes(), Vec::new());
        let sent = std::time::Instant::now();
        let outcome = store.write(batch).await;
        spans
            .lock()
            .expect("spans")
            .push((n, sent, std::time::Instant::now()));
        match outcome {
            Ok(()) => acknowledged.push(n),
            Err(StoreError::CommitOutcomeUnknown { .. }) => unknown.push(n),
            Err(StoreError::Interrupted { .. }) => interrupted.push(n),
            Err(error) => panic!("batch {n}: {error}"),
        }
    }
    for n in interrupted {
        let key = format!("row{n:05}").into_bytes();
        let found = store
            .get(&key)
            .await
            .expect("read an interrupted batch's key");
        assert_eq!(found, None, "batch {n} was interrupted, yet applied");
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
async fn a_cluster_whose_port_was_taken_starts_again_on_fresh_ports() {
    // The first port handed out is held here, as another process's connection could hold it
    // between the pick and etcd's bind: that member exits at once, and the start tries again.
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let held_port = held.local_addr().expect("address").port();
    let mut picks = 0;
    let cluster = LocalEtcdCluster::start_on(3, || {
        picks += 1;
        if picks == 1 {
            Ok(held_port)
        } else {
            local_cluster::free_port()
        }
    })
    .await
    .expect("the start recovers from a taken port");
    assert!(
        picks > 6,
        "the start was not tried again ({picks} ports picked)"
    );
    assert!(
        !cluster
            .endpoints()
            .contains(&format!("127.0.0.1:{held_port}"))
    );
    let store = connect(&cluster, "ports", EtcdOptions::default()).await;
    let spans = Spans::default();
    let (acknowledged, _) = write_workload(&store, 0, 5, &spans).await;
    assert_eq!(check_whole(&store, &acknowledged).await, acknowledged.len());
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_leader_loses_no_acknowledged_write() {
    let mut cluster = LocalEtcdCluster::start(3).await.expect("start a cluster");
    let store = Arc::new(connect(&cluster, "faults", EtcdOptions::default()).await);
    let spans = Arc::new(Spans::default());
    let (mut acknowledged, _) = write_workload(&store, 0, 50, &spans).await;

    // Kill the leader while a writer is busy: once it has written a few batches of its own
    // (the leader is found first: asking the members takes longer than the writer's batches).
    let leader = cluster.leader().await.expect("a leader");
    let writer = {
        let (store, spans) = (Arc::clone(&store), Arc::clone(&spans));
        tokio::spawn(async move { write_workload(&store, 50, 200, &spans).await })
    };
    let waiting = std::time::Instant::now();
    while spans.lock().expect("spans").len() < 55 {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the writer made no progress"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    cluster.kill(leader).expect("kill the leader");
    let killed = std::time::Instant::now();
    let (during, unknown) = writer.await.expect("writer");
    // A batch was in flight at the kill, and the kill held it up: sent before the leader was
    // surely dead, answered well after (a batch takes about a millisecond here; one caught by
    // the loss waits for the election, 500 ms, or for its call's timeout and a fence).
    let in_flight: Vec<u32> = spans
        .lock()
        .expect("spans")
        .iter()
        .filter(|(_, sent, answered)| {
            *sent <= killed
                && answered.saturating_duration_since(killed) >= Duration::from_millis(250)
        })
        .map(|(n, _, _)| *n)
        .collect();
    assert!(
        !in_flight.is_empty(),
        "no write was in flight (and held up) when the leader was killed"
    );
    assert!(
        during.iter().any(|n| *n > in_flight[0]),
        "no write was acknowledged after the leader was killed"
    );
    acknowledged.extend(during);
    let present = check_whole(&store, &acknowledged).await;
    assert!(present >= acknowledged.len());
    assert!(present <= acknowledged.len() + unknown.len());
    let new_leader = cluster.leader().await.expect("a new leader");
    assert_ne!(new_leader, leader);

    // The member comes back and catches up; the store goes on without reconnecting.
    cluster.restart(leader).await.expect("restart");
    let (after, _) = write_workload(&store, 250, 20, &spans).await;
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
    let spans = Spans::default();
    let (mut acknowledged, _) = write_workload(&store, 0, 10, &spans).await;
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
    let (after, _) = write_workload(&store, 10, 10, &spans).await;
    acknowledged.extend(after);
    let present = check_whole(&store, &acknowledged).await;
    // The refused batch may or may not have been applied, but never in part.
    assert!(present == acknowledged.len() || present == acknowledged.len() + 1);
}

/// What the proxy does to the next transaction request it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loss {
    None,
    /// Drop the request before it reaches etcd.
    Request,
    /// Forward the request, then drop etcd's answer.
    Answer,
}

/// What a [`LossyProxy`] counts: the read requests it relayed (ranges and transactions), and
/// the requests and answers it lost (a test's proof that its loss happened).
#[derive(Default)]
struct ProxyCounts {
    reads: std::sync::atomic::AtomicU64,
    lost_requests: std::sync::atomic::AtomicU64,
    lost_answers: std::sync::atomic::AtomicU64,
}

impl ProxyCounts {
    fn bump(counter: &std::sync::atomic::AtomicU64) {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn read(counter: &std::sync::atomic::AtomicU64) -> u64 {
        counter.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A TCP proxy in front of one etcd member that can lose the next transaction's request or
/// its answer, as a dying member or a broken network would, and counts what it relays and loses.
struct LossyProxy {
    address: String,
    next: Arc<std::sync::Mutex<Loss>>,
    counts: Arc<ProxyCounts>,
}

impl LossyProxy {
    async fn start(upstream: String) -> LossyProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let next = Arc::new(std::sync::Mutex::new(Loss::None));
        let counts = Arc::new(ProxyCounts::default());
        let (armed, counting) = (Arc::clone(&next), Arc::clone(&counts));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let (armed, counting) = (Arc::clone(&armed), Arc::clone(&counting));
                tokio::spawn(async move { relay(client, upstream, armed, counting).await });
            }
        });
        LossyProxy {
            address,
            next,
            counts,
        }
    }

    /// Range and transaction requests relayed so far.
    fn reads(&self) -> u64 {
        ProxyCounts::read(&self.counts.reads)
    }

    /// Transaction requests dropped before they reached etcd, and answers dropped after.
    fn lost(&self) -> (u64, u64) {
        (
            ProxyCounts::read(&self.counts.lost_requests),
            ProxyCounts::read(&self.counts.lost_answers),
        )
    }

    fn lose_next(&self, loss: Loss) {
        *self.next.lock().expect("proxy state") = loss;
    }
}

/// Relays one connection, losing what `armed` says for its next transaction request.
async fn relay(
    client: tokio::net::TcpStream,
    upstream: String,
    armed: Arc<std::sync::Mutex<Loss>>,
    counts: Arc<ProxyCounts>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let drop_answer = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dropping = Arc::clone(&drop_answer);
    let answer_counts = Arc::clone(&counts);
    let answers = tokio::spawn(async move {
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let Ok(read) = from_server.read(&mut buffer).await else {
                return;
            };
            if read == 0 {
                return;
            }
            if dropping.load(std::sync::atomic::Ordering::SeqCst) {
                ProxyCounts::bump(&answer_counts.lost_answers);
                return;
            }
            if to_client.write_all(&buffer[..read]).await.is_err() {
                return;
            }
        }
    });
    let mut buffer = vec![0u8; 1 << 16];
    while let Ok(read) = from_client.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        let is_txn = buffer[..read].starts_with(b"POST /v3/kv/txn");
        if is_txn || buffer[..read].starts_with(b"POST /v3/kv/range") {
            ProxyCounts::bump(&counts.reads);
        }
        let loss = if is_txn {
            std::mem::replace(&mut *armed.lock().expect("proxy state"), Loss::None)
        } else {
            Loss::None
        };
        match loss {
            Loss::Request => {
                ProxyCounts::bump(&counts.lost_requests);
                break;
            }
            Loss::Answer => drop_answer.store(true, std::sync::atomic::Ordering::SeqCst),
            Loss::None => {}
        }
        if to_server.write_all(&buffer[..read]).await.is_err() {
            break;
        }
    }
    answers.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_is_lost_is_settled_by_a_fence() {
    let proxy = LossyProxy::start(crate::cluster().endpoints()[0].clone()).await;
    let address = rowdex_store::EtcdAddress {
        endpoints: vec![proxy.address.clone()],
        namespace: "settled".to_string(),
    };
    let store = EtcdStore::connect(&address, EtcdOptions::default())
        .await
        .expect("connect through the proxy");

    // Nothing lost yet, nothing settled.
    let mut batch = WriteBatch::new();
    batch.put(b"z".to_vec(), b"0".to_vec());
    store.write(batch).await.expect("write");
    assert_eq!(proxy.lost(), (0, 0));
    assert_eq!(store.settled_commits(), (0, 0));

    // Applied, answer lost: the fence finds the marker, and the write succeeds, once.
    proxy.lose_next(Loss::Answer);
    let mut batch = WriteBatch::new();
    batch.put(b"a".to_vec(), b"1".to_vec());
    store.write(batch).await.expect("settled as applied");
    assert_eq!(store.get(b"a").await.expect("read"), Some(b"1".to_vec()));
    assert_eq!(proxy.lost(), (0, 1), "the proxy dropped no answer");
    assert_eq!(store.settled_commits(), (1, 0), "no fence settled it");

    // The same for a transaction's commit.
    let mut tx = store.begin().await.expect("begin");
    assert_eq!(tx.get(b"a").await.expect("read"), Some(b"1".to_vec()));
    tx.put(b"b".to_vec(), b"2".to_vec());
    proxy.lose_next(Loss::Answer);
    tx.commit().await.expect("settled as applied");
    assert_eq!(store.get(b"b").await.expect("read"), Some(b"2".to_vec()));
    assert_eq!(proxy.lost(), (0, 2), "the proxy dropped no answer");
    assert_eq!(store.settled_commits(), (2, 0), "no fence settled it");

    // Lost on the way: the fence proves it was not applied, and it never will be.
    proxy.lose_next(Loss::Request);
    let mut batch = WriteBatch::new();
    batch.put(b"c".to_vec(), b"3".to_vec());
    let error = store.write(batch).await.expect_err("not applied");
    assert!(matches!(error, StoreError::Interrupted { .. }), "{error}");
    assert_eq!(store.get(b"c").await.expect("read"), None);
    assert_eq!(proxy.lost(), (1, 2), "the proxy dropped no request");
    assert_eq!(store.settled_commits(), (2, 1), "no fence stopped it");
}

/// The ranges a lookup join probes go to etcd in batches: 250 small ranges read through
/// `scan_ranges_stream` cost a read-only transaction per 100 of them, where reading them one
/// by one costs a range request each; both read the same entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_ranges_are_read_in_batches() {
    let proxy = LossyProxy::start(crate::cluster().endpoints()[0].clone()).await;
    let address = rowdex_store::EtcdAddress {
        endpoints: vec![proxy.address.clone()],
        namespace: "batched".to_string(),
    };
    let store = EtcdStore::connect(&address, EtcdOptions::default())
        .await
        .expect("connect through the proxy");
    let mut batch = WriteBatch::new();
    for i in 0..250u32 {
        for j in 0..2u8 {
            batch.put(format!("p{i:03}-{j}").into_bytes(), vec![j]);
        }
    }
    store.write(batch).await.expect("write");
    let ranges: Vec<KeyRange> = (0..250u32)
        .map(|i| KeyRange::prefix(format!("p{i:03}-").as_bytes()))
        .collect();
    let snapshot = store.snapshot();
    // The snapshot's first read settles its revision.
    snapshot.get(b"p000-0").await.expect("read");

    let before = proxy.reads();
    let batched: Vec<(Vec<u8>, Vec<u8>)> =
        rowdex_store::scan_ranges_stream(snapshot.clone(), ranges.clone(), Direction::Forward, 16)
            .try_collect()
            .await
            .expect("batched read");
    let batched_requests = proxy.reads() - before;

    let before = proxy.reads();
    let mut one_by_one = Vec::new();
    for range in &ranges {
        let page = snapshot
            .scan_page(range, Direction::Forward, 16)
            .await
            .expect("range read");
        assert!(page.resume.is_none());
        one_by_one.extend(page.entries);
    }
    let single_requests = proxy.reads() - before;

    assert_eq!(batched.len(), 500);
    assert_eq!(batched, one_by_one);
    assert_eq!(batched_requests, 3, "250 ranges in batches of 100");
    assert_eq!(single_requests, 250);
}
