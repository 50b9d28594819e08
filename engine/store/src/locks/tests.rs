//! The lock table's behaviour: sharing and exclusion, fair queues, NOWAIT and SKIP LOCKED,
//! timeouts, cancelled waiters, deadlocks between two and three transactions, and memory that
//! follows the locks held.

use std::sync::Arc;
use std::time::Duration;

use super::{LockMode, LockTable, LockWait, Locked};
use crate::error::StoreError;

const WAIT: LockWait = LockWait::Wait(None);
const SHORT: Duration = Duration::from_millis(50);

/// Whether `future` is still pending after a moment (it waits).
async fn pending<F: std::future::Future + Unpin>(future: &mut F) -> bool {
    tokio::time::timeout(SHORT, future).await.is_err()
}

/// The outcome of `future`, which must come within a few seconds: a request granted or a
/// deadlock found must not be left waiting (a test fails rather than hangs).
async fn at_once<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("answered, not left waiting")
}

#[tokio::test]
async fn shared_locks_are_held_together_and_exclusive_ones_alone() {
    let table = Arc::new(LockTable::new());
    assert_eq!(
        table
            .lock(1, b"k", LockMode::Shared, WAIT)
            .await
            .expect("test step"),
        Locked::Granted
    );
    assert_eq!(
        table
            .lock(2, b"k", LockMode::Shared, WAIT)
            .await
            .expect("test step"),
        Locked::Granted
    );
    let t = Arc::clone(&table);
    let mut writer = Box::pin(async move { t.lock(3, b"k", LockMode::Exclusive, WAIT).await });
    assert!(
        pending(&mut writer).await,
        "an exclusive lock waits for the shared holders"
    );
    table.release(1, [b"k".as_slice()]);
    assert!(pending(&mut writer).await, "one shared holder is left");
    table.release(2, [b"k".as_slice()]);
    assert_eq!(at_once(writer).await.expect("test step"), Locked::Granted);
    // Re-entrant: the holder asks again, in any mode, and has it.
    assert_eq!(
        table
            .lock(3, b"k", LockMode::Shared, WAIT)
            .await
            .expect("test step"),
        Locked::Granted
    );
    assert_eq!(
        table
            .lock(3, b"k", LockMode::Exclusive, WAIT)
            .await
            .expect("test step"),
        Locked::Granted
    );
    table.release(3, [b"k".as_slice()]);
    assert_eq!(table.locked_keys(), 0, "no entry outlives its locks");
}

#[tokio::test]
async fn waiters_are_granted_in_arrival_order() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let (order_tx, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for owner in 2..=5u64 {
        let (t, tx) = (Arc::clone(&table), order_tx.clone());
        tasks.push(tokio::spawn(async move {
            t.lock(owner, b"k", LockMode::Exclusive, WAIT)
                .await
                .expect("test step");
            tx.send(owner).expect("test step");
            tokio::time::sleep(Duration::from_millis(5)).await;
            t.release(owner, [b"k".as_slice()]);
        }));
        // Each is queued before the next arrives.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    table.release(1, [b"k".as_slice()]);
    for task in tasks {
        at_once(task).await.expect("test step");
    }
    let mut order = Vec::new();
    while let Ok(owner) = order_rx.try_recv() {
        order.push(owner);
    }
    assert_eq!(order, vec![2, 3, 4, 5]);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test]
async fn a_shared_request_does_not_pass_a_waiting_exclusive_one() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Shared, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let mut writer = Box::pin(async move { t.lock(2, b"k", LockMode::Exclusive, WAIT).await });
    assert!(pending(&mut writer).await);
    let t = Arc::clone(&table);
    let mut reader = Box::pin(async move { t.lock(3, b"k", LockMode::Shared, WAIT).await });
    assert!(
        pending(&mut reader).await,
        "the reader queues behind the writer"
    );
    table.release(1, [b"k".as_slice()]);
    assert_eq!(at_once(writer).await.expect("test step"), Locked::Granted);
    assert!(pending(&mut reader).await);
    table.release(2, [b"k".as_slice()]);
    assert_eq!(at_once(reader).await.expect("test step"), Locked::Granted);
}

#[tokio::test]
async fn nowait_fails_and_skip_locked_skips_at_once() {
    let table = LockTable::new();
    table
        .lock(1, b"k", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let nowait = table
        .lock(2, b"k", LockMode::Shared, LockWait::NoWait)
        .await;
    assert!(
        matches!(nowait, Err(StoreError::LockNotAvailable)),
        "{nowait:?}"
    );
    let skipped = table
        .lock(2, b"k", LockMode::Exclusive, LockWait::SkipLocked)
        .await;
    assert_eq!(skipped.expect("test step"), Locked::Skipped);
    // A free key is granted either way.
    let free = table
        .lock(2, b"j", LockMode::Exclusive, LockWait::NoWait)
        .await;
    assert_eq!(free.expect("test step"), Locked::Granted);
    table.release(1, [b"k".as_slice()]);
    table.release(2, [b"j".as_slice()]);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test]
async fn a_waiter_times_out_and_leaves_the_queue() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let timed = table
        .lock(2, b"k", LockMode::Exclusive, LockWait::Wait(Some(SHORT)))
        .await;
    assert!(matches!(timed, Err(StoreError::LockTimeout)), "{timed:?}");
    // The one that timed out is not granted later: the next in line is.
    let t = Arc::clone(&table);
    let mut next = Box::pin(async move { t.lock(3, b"k", LockMode::Exclusive, WAIT).await });
    assert!(pending(&mut next).await);
    table.release(1, [b"k".as_slice()]);
    assert_eq!(at_once(next).await.expect("test step"), Locked::Granted);
    table.release(3, [b"k".as_slice()]);
    assert_eq!(
        table.locked_keys(),
        0,
        "the timed-out waiter left nothing behind"
    );
}

#[tokio::test]
async fn a_cancelled_waiter_leaves_the_queue() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let waiter = tokio::spawn(async move { t.lock(2, b"k", LockMode::Exclusive, WAIT).await });
    tokio::time::sleep(SHORT).await;
    waiter.abort();
    assert!(
        waiter
            .await
            .expect_err("the waiter was cancelled")
            .is_cancelled()
    );
    table.release(1, [b"k".as_slice()]);
    assert_eq!(
        table.locked_keys(),
        0,
        "the cancelled waiter was never granted"
    );
    assert_eq!(
        table
            .lock(3, b"k", LockMode::Exclusive, LockWait::NoWait)
            .await
            .expect("test step"),
        Locked::Granted
    );
}

#[tokio::test]
async fn two_transactions_waiting_for_each_other_make_one_victim() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"a", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    table
        .lock(2, b"b", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let mut first = Box::pin(async move { t.lock(1, b"b", LockMode::Exclusive, WAIT).await });
    assert!(pending(&mut first).await, "1 waits for 2");
    // 2 asking for a closes the cycle: 2 is the victim, at once.
    let second = at_once(table.lock(2, b"a", LockMode::Exclusive, WAIT)).await;
    assert!(matches!(second, Err(StoreError::Deadlock)), "{second:?}");
    // The victim rolls back: the survivor goes on.
    table.release(2, [b"b".as_slice()]);
    assert_eq!(at_once(first).await.expect("test step"), Locked::Granted);
    table.release(1, [b"a".as_slice(), b"b".as_slice()]);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test]
async fn a_cycle_of_three_is_found_and_shared_holders_count() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"a", LockMode::Shared, WAIT)
        .await
        .expect("test step");
    table
        .lock(2, b"b", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    table
        .lock(3, b"c", LockMode::Exclusive, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let mut one = Box::pin(async move { t.lock(1, b"b", LockMode::Shared, WAIT).await });
    assert!(pending(&mut one).await, "1 waits for 2");
    let t = Arc::clone(&table);
    let mut two = Box::pin(async move { t.lock(2, b"c", LockMode::Exclusive, WAIT).await });
    assert!(pending(&mut two).await, "2 waits for 3");
    // A shared request beside 1's shared lock is no cycle: granted.
    assert_eq!(
        table
            .lock(3, b"a", LockMode::Shared, WAIT)
            .await
            .expect("test step"),
        Locked::Granted
    );
    // An exclusive one waits for 1, which waits for 2, which waits for 3: a cycle.
    let three = at_once(table.lock(3, b"a", LockMode::Exclusive, WAIT)).await;
    assert!(matches!(three, Err(StoreError::Deadlock)), "{three:?}");
    table.release(3, [b"a".as_slice(), b"c".as_slice()]);
    assert_eq!(at_once(two).await.expect("test step"), Locked::Granted);
    table.release(2, [b"b".as_slice(), b"c".as_slice()]);
    assert_eq!(at_once(one).await.expect("test step"), Locked::Granted);
    table.release(1, [b"a".as_slice(), b"b".as_slice()]);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_transactions_incrementing_one_counter_take_turns() {
    let table = Arc::new(LockTable::new());
    let counter = Arc::new(std::sync::Mutex::new((0u64, false)));
    let mut tasks = Vec::new();
    for owner in 0..100u64 {
        let (t, c) = (Arc::clone(&table), Arc::clone(&counter));
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                t.lock(owner, b"counter", LockMode::Exclusive, WAIT)
                    .await
                    .expect("test step");
                {
                    let mut state = c.lock().expect("test step");
                    assert!(!state.1, "two holders of an exclusive lock");
                    state.1 = true;
                }
                tokio::task::yield_now().await;
                {
                    let mut state = c.lock().expect("test step");
                    state.0 += 1;
                    state.1 = false;
                }
                t.release(owner, [b"counter".as_slice()]);
            }
        }));
    }
    for task in tasks {
        at_once(task).await.expect("test step");
    }
    assert_eq!(counter.lock().expect("test step").0, 1000);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test]
async fn two_shared_holders_upgrading_make_one_victim() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Shared, WAIT)
        .await
        .expect("test step");
    table
        .lock(2, b"k", LockMode::Shared, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let mut first = Box::pin(async move { t.lock(1, b"k", LockMode::Exclusive, WAIT).await });
    assert!(
        pending(&mut first).await,
        "1's upgrade waits for 2's shared lock"
    );
    let second = at_once(table.lock(2, b"k", LockMode::Exclusive, WAIT)).await;
    assert!(matches!(second, Err(StoreError::Deadlock)), "{second:?}");
    table.release(2, [b"k".as_slice()]);
    assert_eq!(at_once(first).await.expect("test step"), Locked::Granted);
    table.release(1, [b"k".as_slice()]);
    assert_eq!(table.locked_keys(), 0);
}

#[tokio::test]
async fn a_lone_holder_upgrades_before_a_waiting_writer() {
    let table = Arc::new(LockTable::new());
    table
        .lock(1, b"k", LockMode::Shared, WAIT)
        .await
        .expect("test step");
    let t = Arc::clone(&table);
    let mut writer = Box::pin(async move { t.lock(2, b"k", LockMode::Exclusive, WAIT).await });
    assert!(pending(&mut writer).await);
    // The writer waits for 1 anyway: 1's upgrade is granted at once, and no deadlock.
    let upgrade = at_once(table.lock(1, b"k", LockMode::Exclusive, WAIT)).await;
    assert_eq!(upgrade.expect("test step"), Locked::Granted);
    assert!(pending(&mut writer).await);
    table.release(1, [b"k".as_slice()]);
    assert_eq!(at_once(writer).await.expect("test step"), Locked::Granted);
    table.release(2, [b"k".as_slice()]);
    assert_eq!(table.locked_keys(), 0);
}

/// Transactions locking two of four keys each, in random order: some meet in cycles. Every
/// cycle makes a victim (which rolls back and tries again), nobody is left waiting, and the
/// table is empty at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_transactions_on_few_keys_never_hang() {
    let table = Arc::new(LockTable::new());
    let victims = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for owner in 0..40u64 {
        let (t, v) = (Arc::clone(&table), Arc::clone(&victims));
        tasks.push(tokio::spawn(async move {
            let mut state = owner.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for _ in 0..20 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let first = [b'a' + (state % 4) as u8];
                let second = [b'a' + ((state / 4) % 4) as u8];
                loop {
                    let mut held: Vec<[u8; 1]> = Vec::new();
                    let mut failed = false;
                    for key in [first, second] {
                        match t.lock(owner, &key, LockMode::Exclusive, WAIT).await {
                            Ok(_) => held.push(key),
                            Err(StoreError::Deadlock) => {
                                failed = true;
                                break;
                            }
                            Err(other) => panic!("{other:?}"),
                        }
                    }
                    tokio::task::yield_now().await;
                    t.release(owner, held.iter().map(|k| k.as_slice()));
                    if !failed {
                        break;
                    }
                    v.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("no transaction left waiting")
            .expect("test step");
    }
    assert_eq!(table.locked_keys(), 0);
    assert!(table.waiting.is_empty(), "no waits left behind");
}
