//! Optimistic transactions: own-write visibility, isolation and conflict detection.

use std::sync::Arc;

use rowdex_store::{Direction, KeyRange, KvStore, Result, StoreError, Validation, WriteBatch};

use crate::common::{Entries, entries, put_all, range, reversed, scan_all};

fn is_conflict<T: std::fmt::Debug>(result: Result<T>) -> bool {
    matches!(result, Err(StoreError::Conflict))
}

pub async fn reads_own_writes(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2"), ("c", "3")]).await?;
    let mut tx = store.begin().await?;
    tx.put(b"b".to_vec(), b"20".to_vec());
    tx.delete(b"c".to_vec());
    tx.put(b"e".to_vec(), b"5".to_vec());
    tx.put(b"e".to_vec(), b"50".to_vec());

    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    assert_eq!(tx.get(b"b").await?, Some(b"20".to_vec()));
    assert_eq!(tx.get(b"c").await?, None);
    assert_eq!(tx.get(b"e").await?, Some(b"50".to_vec()));
    let keys = [
        b"e".to_vec(),
        b"c".to_vec(),
        b"a".to_vec(),
        b"z".to_vec(),
        b"b".to_vec(),
    ];
    assert_eq!(
        tx.multi_get(&keys).await?,
        vec![
            Some(b"50".to_vec()),
            None,
            Some(b"1".to_vec()),
            None,
            Some(b"20".to_vec())
        ]
    );

    // Nothing leaks before commit.
    assert_eq!(store.get(b"b").await?, Some(b"2".to_vec()));
    assert_eq!(store.get(b"e").await?, None);
    tx.commit().await?;
    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(all, entries(&[("a", "1"), ("b", "20"), ("e", "50")]));
    Ok(())
}

pub async fn scans_merge_own_writes(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(
        &*store,
        &[
            ("p1", "s"),
            ("p2", "s"),
            ("p3", "s"),
            ("p4", "s"),
            ("p5", "s"),
            ("q", "s"),
        ],
    )
    .await?;
    let mut tx = store.begin().await?;
    tx.put(b"p0".to_vec(), b"t".to_vec());
    tx.delete(b"p2".to_vec());
    tx.delete(b"p3".to_vec());
    tx.put(b"p4".to_vec(), b"t".to_vec());
    tx.put(b"p6".to_vec(), b"t".to_vec());
    tx.delete(b"p9".to_vec());
    tx.put(b"o".to_vec(), b"outside".to_vec());

    let expected = entries(&[
        ("p0", "t"),
        ("p1", "s"),
        ("p4", "t"),
        ("p5", "s"),
        ("p6", "t"),
    ]);
    for limit in [1, 2, 1000] {
        let r = KeyRange::prefix(b"p");
        assert_eq!(
            scan_all(&*tx, &r, Direction::Forward, limit).await?,
            expected,
            "{limit}"
        );
        let rev = scan_all(&*tx, &r, Direction::Reverse, limit).await?;
        assert_eq!(rev, reversed(expected.clone()), "{limit}");
    }
    // Only own writes in range, nothing in the snapshot.
    let only_own = scan_all(&*tx, &range("o", Some("p")), Direction::Forward, 1).await?;
    assert_eq!(only_own, entries(&[("o", "outside")]));
    // Everything in range deleted by the transaction.
    let hidden = tx
        .scan_page(&range("p2", Some("p4")), Direction::Forward, 1)
        .await?;
    assert!(hidden.entries.is_empty());
    assert_eq!(hidden.resume, None);
    Ok(())
}

pub async fn reads_from_its_snapshot(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1")]).await?;
    let tx = store.begin().await?;
    put_all(&*store, &[("a", "2"), ("b", "2")]).await?;
    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    assert_eq!(tx.get(b"b").await?, None);
    let all = scan_all(&*tx, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(all, entries(&[("a", "1")]));
    Ok(())
}

pub async fn write_write_conflict(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("k", "0")]).await?;
    let mut t1 = store.begin().await?;
    let mut t2 = store.begin().await?;
    assert_eq!(t1.get(b"k").await?, Some(b"0".to_vec()));
    assert_eq!(t2.get(b"k").await?, Some(b"0".to_vec()));
    t1.put(b"k".to_vec(), b"1".to_vec());
    t2.put(b"k".to_vec(), b"2".to_vec());
    t1.commit().await?;
    assert!(is_conflict(t2.commit().await));
    assert_eq!(store.get(b"k").await?, Some(b"1".to_vec()));
    Ok(())
}

pub async fn absent_key_read_conflicts_with_insert(store: Arc<dyn KvStore>) -> Result<()> {
    let mut tx = store.begin().await?;
    assert_eq!(tx.get(b"k").await?, None);
    put_all(&*store, &[("k", "other")]).await?;
    tx.put(b"k".to_vec(), b"mine".to_vec());
    assert!(is_conflict(tx.commit().await));
    assert_eq!(store.get(b"k").await?, Some(b"other".to_vec()));
    Ok(())
}

pub async fn range_scan_conflicts_with_insert(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("p1", "x"), ("p3", "x")]).await?;
    let mut tx = store.begin().await?;
    let seen = scan_all(&*tx, &KeyRange::prefix(b"p"), Direction::Forward, 10).await?;
    assert_eq!(seen.len(), 2);
    put_all(&*store, &[("p2", "phantom")]).await?;
    tx.put(b"count".to_vec(), b"2".to_vec());
    assert!(is_conflict(tx.commit().await));

    // Reverse scans are tracked the same way, and so is a changed value.
    let mut tx = store.begin().await?;
    scan_all(&*tx, &KeyRange::prefix(b"p"), Direction::Reverse, 1).await?;
    put_all(&*store, &[("p1", "changed")]).await?;
    tx.put(b"count".to_vec(), b"3".to_vec());
    assert!(is_conflict(tx.commit().await));
    assert_eq!(store.get(b"count").await?, None);
    Ok(())
}

pub async fn range_scan_conflicts_with_delete(store: Arc<dyn KvStore>) -> Result<()> {
    // A delete leaves nothing behind in the range (etcd's range compares miss it): the keys
    // the scan returned are checked one by one.
    put_all(&*store, &[("p1", "x"), ("p2", "x"), ("p3", "x")]).await?;
    let mut tx = store.begin().await?;
    let seen = scan_all(&*tx, &KeyRange::prefix(b"p"), Direction::Forward, 10).await?;
    assert_eq!(seen.len(), 3);
    let mut batch = WriteBatch::new();
    batch.delete(b"p2".to_vec());
    store.write(batch).await?;
    tx.put(b"count".to_vec(), b"3".to_vec());
    assert!(is_conflict(tx.commit().await));
    assert_eq!(store.get(b"count").await?, None);

    // A deleted key read by a point get conflicts too.
    let mut tx = store.begin().await?;
    assert_eq!(tx.get(b"p3").await?, Some(b"x".to_vec()));
    let mut batch = WriteBatch::new();
    batch.delete(b"p3".to_vec());
    store.write(batch).await?;
    tx.put(b"count".to_vec(), b"1".to_vec());
    assert!(is_conflict(tx.commit().await));
    Ok(())
}

pub async fn range_scan_ignores_writes_outside(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("p1", "x"), ("q1", "x")]).await?;
    let mut tx = store.begin().await?;
    scan_all(&*tx, &KeyRange::prefix(b"p"), Direction::Forward, 10).await?;
    put_all(&*store, &[("q2", "x"), ("o", "x"), ("q1", "y")]).await?;
    tx.put(b"p2".to_vec(), b"mine".to_vec());
    tx.commit().await?;
    assert_eq!(store.get(b"p2").await?, Some(b"mine".to_vec()));
    Ok(())
}

pub async fn partial_scan_covers_only_what_was_returned(store: Arc<dyn KvStore>) -> Result<()> {
    let keys: Vec<(String, String)> = (0..10)
        .map(|i| (format!("p{i}"), "x".to_string()))
        .collect();
    let pairs: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    put_all(&*store, &pairs).await?;

    // Forward: read p0, p1 only; a change at p8 is beyond what was read.
    let mut tx = store.begin().await?;
    let page = tx
        .scan_page(&KeyRange::prefix(b"p"), Direction::Forward, 2)
        .await?;
    assert_eq!(page.entries.len(), 2);
    put_all(&*store, &[("p8", "changed"), ("p10", "new")]).await?;
    tx.put(b"w".to_vec(), b"1".to_vec());
    tx.commit().await?;

    // Reverse: read p9, p8 only; a change at p0 is beyond it, one at p8 is not.
    let mut tx = store.begin().await?;
    let page = tx
        .scan_page(&KeyRange::prefix(b"p"), Direction::Reverse, 2)
        .await?;
    assert_eq!(page.entries, entries(&[("p9", "x"), ("p8", "changed")]));
    put_all(&*store, &[("p0", "changed")]).await?;
    tx.put(b"w".to_vec(), b"2".to_vec());
    tx.commit().await?;

    let mut tx = store.begin().await?;
    tx.scan_page(&KeyRange::prefix(b"p"), Direction::Reverse, 2)
        .await?;
    put_all(&*store, &[("p8", "again")]).await?;
    tx.put(b"w".to_vec(), b"3".to_vec());
    assert!(is_conflict(tx.commit().await));
    assert_eq!(store.get(b"w").await?, Some(b"2".to_vec()));
    Ok(())
}

pub async fn conflicting_commit_writes_nothing(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("k", "0"), ("del", "keep")]).await?;
    let before: Entries = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    let mut tx = store.begin().await?;
    tx.get(b"k").await?;
    tx.put(b"a".to_vec(), b"1".to_vec());
    tx.put(b"z".to_vec(), b"1".to_vec());
    tx.delete(b"del".to_vec());
    tx.put(b"k".to_vec(), b"tx".to_vec());
    put_all(&*store, &[("k", "other")]).await?;
    assert!(is_conflict(tx.commit().await));

    let mut expected = before;
    expected.retain(|(k, _)| k != b"k");
    expected.push((b"k".to_vec(), b"other".to_vec()));
    expected.sort();
    let after = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(after, expected);
    Ok(())
}

pub async fn blind_writes_do_not_conflict(store: Arc<dyn KvStore>) -> Result<()> {
    let mut t1 = store.begin().await?;
    let mut t2 = store.begin().await?;
    t1.put(b"k".to_vec(), b"1".to_vec());
    t2.put(b"k".to_vec(), b"2".to_vec());
    t1.commit().await?;
    t2.commit().await?;
    assert_eq!(store.get(b"k").await?, Some(b"2".to_vec()));
    Ok(())
}

pub async fn read_only_commit_succeeds(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("k", "0")]).await?;
    let tx = store.begin().await?;
    assert_eq!(tx.get(b"k").await?, Some(b"0".to_vec()));
    put_all(&*store, &[("k", "1")]).await?;
    // It observed one consistent snapshot and changes nothing, so there is nothing to reject.
    tx.commit().await
}

pub async fn dropped_transaction_writes_nothing(store: Arc<dyn KvStore>) -> Result<()> {
    let mut tx = store.begin().await?;
    tx.put(b"k".to_vec(), b"1".to_vec());
    drop(tx);
    assert_eq!(store.get(b"k").await?, None);
    Ok(())
}

pub async fn rollback_to_savepoint_undoes_later_writes(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2"), ("c", "3")]).await?;
    let mut tx = store.begin().await?;
    tx.put(b"a".to_vec(), b"10".to_vec());
    let outer = tx.savepoint();
    // Overwrite an own write, delete a stored key, add a new one, and write one key twice.
    tx.put(b"a".to_vec(), b"100".to_vec());
    tx.delete(b"b".to_vec());
    tx.put(b"d".to_vec(), b"4".to_vec());
    let inner = tx.savepoint();
    tx.put(b"d".to_vec(), b"40".to_vec());
    tx.delete(b"c".to_vec());
    tx.rollback_to(inner);
    let seen = scan_all(&*tx, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(seen, entries(&[("a", "100"), ("c", "3"), ("d", "4")]));
    tx.rollback_to(outer);
    let seen = scan_all(&*tx, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(seen, entries(&[("a", "10"), ("b", "2"), ("c", "3")]));
    // The savepoint survives its rollback, and a savepoint taken and released in between
    // (one at the same position, as a statement inside it takes) does not end it.
    let statement = tx.savepoint();
    tx.put(b"g".to_vec(), b"7".to_vec());
    tx.release(statement);
    tx.put(b"e".to_vec(), b"5".to_vec());
    tx.rollback_to(outer);
    let seen = scan_all(&*tx, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(seen, entries(&[("a", "10"), ("b", "2"), ("c", "3")]));
    // Released, later writes stay.
    tx.put(b"f".to_vec(), b"6".to_vec());
    tx.release(outer);
    tx.commit().await?;
    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(
        all,
        entries(&[("a", "10"), ("b", "2"), ("c", "3"), ("f", "6")])
    );
    Ok(())
}

/// A run of ascending puts is the same as a put of each: over buffered writes and deletes
/// (the run's values win), under a savepoint (rolled back with the rest), and unsorted.
pub async fn put_run_is_a_put_of_each(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("c", "3"), ("e", "5")]).await?;
    let run = |pairs: &[(&str, &str)]| entries(pairs);
    let mut tx = store.begin().await?;
    tx.put(b"b".to_vec(), b"2".to_vec());
    tx.delete(b"c".to_vec());
    tx.put(b"f".to_vec(), b"6".to_vec());
    tx.put_run(run(&[("b", "20"), ("c", "30"), ("d", "40")]));
    let seen = scan_all(&*tx, &KeyRange::all(), Direction::Forward, 2).await?;
    let expected = [
        ("a", "1"),
        ("b", "20"),
        ("c", "30"),
        ("d", "40"),
        ("e", "5"),
    ];
    assert_eq!(
        seen,
        entries(&[expected.as_slice(), &[("f", "6")]].concat())
    );
    let savepoint = tx.savepoint();
    tx.put_run(run(&[("a", "10"), ("g", "70")]));
    // Not ascending: taken key by key, the later value winning.
    tx.put_run(run(&[("h", "8"), ("g", "71"), ("h", "80")]));
    assert_eq!(tx.get(b"g").await?, Some(b"71".to_vec()));
    assert_eq!(tx.get(b"h").await?, Some(b"80".to_vec()));
    tx.rollback_to(savepoint);
    tx.release(savepoint);
    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    assert_eq!(tx.get(b"g").await?, None);
    tx.put_run(Vec::new());
    tx.commit().await?;
    let all = scan_all(&*store, &KeyRange::all(), Direction::Forward, 10).await?;
    assert_eq!(all, entries(&[expected.as_slice(), &[("f", "6")]].concat()));
    Ok(())
}

pub async fn invalid_write_fails_commit(store: Arc<dyn KvStore>) -> Result<()> {
    let mut tx = store.begin().await?;
    tx.put(b"ok".to_vec(), b"1".to_vec());
    tx.put(Vec::new(), b"1".to_vec());
    assert!(matches!(tx.commit().await, Err(StoreError::EmptyKey)));
    assert_eq!(store.get(b"ok").await?, None);
    Ok(())
}

pub async fn concurrent_increments_are_serialized(store: Arc<dyn KvStore>) -> Result<()> {
    const TASKS: u64 = 8;
    const INCREMENTS: u64 = 25;
    let mut handles = Vec::new();
    for _ in 0..TASKS {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0u64;
            for _ in 0..INCREMENTS {
                loop {
                    let mut tx = store.begin().await?;
                    let current = match tx.get(b"counter").await? {
                        Some(bytes) => u64::from_be_bytes(bytes.try_into().unwrap_or_default()),
                        None => 0,
                    };
                    tx.put(b"counter".to_vec(), (current + 1).to_be_bytes().to_vec());
                    match tx.commit().await {
                        Ok(()) => break,
                        Err(StoreError::Conflict) => conflicts += 1,
                        Err(other) => return Err(other),
                    }
                }
            }
            Ok::<_, StoreError>(conflicts)
        }));
    }
    for handle in handles {
        handle.await.expect("increment task panicked")?;
    }
    let total = store.get(b"counter").await?.expect("counter written");
    assert_eq!(total, (TASKS * INCREMENTS).to_be_bytes().to_vec());
    Ok(())
}

/// A transaction that validates only its guarded reads commits over changes to what it read
/// otherwise, and conflicts on a change to a key or range it read guarded.
pub async fn guarded_validation_checks_only_guarded_reads(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "1"), ("r1", "1")]).await?;
    let mut tx = store.begin().await?;
    tx.set_validation(Validation::GuardedReads);
    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    tx.scan_page(&range("r", Some("s")), Direction::Forward, 10)
        .await?;
    assert_eq!(tx.guarded().get(b"b").await?, Some(b"1".to_vec()));
    put_all(&*store, &[("a", "2"), ("r2", "1")]).await?;
    tx.put(b"c".to_vec(), b"1".to_vec());
    tx.commit().await?;
    assert_eq!(store.get(b"c").await?, Some(b"1".to_vec()));

    let mut tx = store.begin().await?;
    tx.set_validation(Validation::GuardedReads);
    assert_eq!(tx.guarded().get(b"b").await?, Some(b"1".to_vec()));
    put_all(&*store, &[("b", "2")]).await?;
    tx.put(b"d".to_vec(), b"1".to_vec());
    assert!(is_conflict(tx.commit().await));

    let mut tx = store.begin().await?;
    tx.set_validation(Validation::GuardedReads);
    let page = tx
        .guarded()
        .scan_page(&range("r", Some("s")), Direction::Forward, 10)
        .await?;
    assert_eq!(page.entries.len(), 2);
    put_all(&*store, &[("r3", "1")]).await?;
    tx.put(b"d".to_vec(), b"1".to_vec());
    assert!(is_conflict(tx.commit().await));
    assert_eq!(store.get(b"d").await?, None);
    Ok(())
}

/// A refreshed transaction reads what was committed after it began, under its own writes
/// (etcd too: its commit checks each read against the snapshot it came from).
pub async fn refresh_moves_the_snapshot_under_own_writes(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "1")]).await?;
    let mut tx = store.begin().await?;
    tx.put(b"b".to_vec(), b"own".to_vec());
    assert_eq!(tx.get(b"a").await?, Some(b"1".to_vec()));
    put_all(&*store, &[("a", "2"), ("b", "2"), ("c", "2")]).await?;
    assert!(tx.refresh(), "every store moves a snapshot");
    assert_eq!(tx.get(b"a").await?, Some(b"2".to_vec()));
    assert_eq!(tx.get(b"b").await?, Some(b"own".to_vec()));
    assert_eq!(tx.get(b"c").await?, Some(b"2".to_vec()));
    // Under full validation the read of `a` before the move still counts.
    assert!(is_conflict(tx.commit().await));
    Ok(())
}

/// A read made after a move is checked against the snapshot it came from, not the first one:
/// a key changed between the two snapshots and read only after the move, and a range scanned
/// only after it, do not fail the commit; a change after the move does.
pub async fn reads_after_a_move_are_checked_against_the_moved_snapshot(
    store: Arc<dyn KvStore>,
) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("r1", "1")]).await?;
    let mut tx = store.begin().await?;
    assert_eq!(tx.get(b"z").await?, None);
    put_all(&*store, &[("a", "2"), ("r2", "2")]).await?;
    assert!(tx.refresh());
    assert_eq!(tx.get(b"a").await?, Some(b"2".to_vec()));
    let page = tx
        .scan_page(&range("r", Some("s")), Direction::Forward, 10)
        .await?;
    assert_eq!(page.entries.len(), 2);
    tx.put(b"x".to_vec(), b"1".to_vec());
    tx.commit().await?;
    assert_eq!(store.get(b"x").await?, Some(b"1".to_vec()));

    let mut tx = store.begin().await?;
    assert_eq!(tx.get(b"z").await?, None);
    assert!(tx.refresh());
    let page = tx
        .scan_page(&range("r", Some("s")), Direction::Forward, 10)
        .await?;
    assert_eq!(page.entries.len(), 2);
    put_all(&*store, &[("r3", "3")]).await?;
    tx.put(b"y".to_vec(), b"1".to_vec());
    assert!(
        is_conflict(tx.commit().await),
        "an insert into the scanned range"
    );
    assert_eq!(store.get(b"y").await?, None);
    Ok(())
}

/// `changed_since_snapshot` tells a key changed by a later commit from one unchanged or
/// written by the transaction itself.
pub async fn changed_since_snapshot_sees_later_commits(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "1")]).await?;
    let mut tx = store.begin().await?;
    assert!(
        !tx.changed_since_snapshot(&[b"a".to_vec(), b"b".to_vec()])
            .await?
    );
    put_all(&*store, &[("a", "2"), ("n", "new")]).await?;
    assert!(tx.changed_since_snapshot(&[b"a".to_vec()]).await?);
    assert!(tx.changed_since_snapshot(&[b"n".to_vec()]).await?);
    assert!(
        !tx.changed_since_snapshot(&[b"b".to_vec(), b"z".to_vec()])
            .await?
    );
    tx.put(b"a".to_vec(), b"own".to_vec());
    assert!(!tx.changed_since_snapshot(&[b"a".to_vec()]).await?);
    // Recorded for nothing: the commit does not conflict on what was compared.
    tx.commit().await?;
    assert_eq!(store.get(b"a").await?, Some(b"own".to_vec()));
    Ok(())
}
