//! Row locks across processes sharing one etcd cluster (each `Database` here is a process of
//! its own, as in `cluster`): a writer of one process waits for another process's lock on the
//! row instead of failing at COMMIT, NOWAIT and SKIP LOCKED see the other process's locks,
//! many sessions of two processes add to one counter exactly, a deadlock through two
//! processes (and through a step inside one of them) fails one transaction, and a process
//! that closes gives its locks up at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rowdex::{Database, Error, Session};
use rowdex_store::{EtcdOptions, StoreError};

use crate::cluster::new_database_address;
use crate::{TestResult, rows, table};

async fn open(address: &str) -> Result<Database, Error> {
    // A long lease: locks released here go because they were released, not because it ran out.
    let options = EtcdOptions {
        lock_lease: Duration::from_secs(60),
        ..EtcdOptions::default()
    };
    Database::open_etcd_with_options(address, options).await
}

/// Two processes on a new database holding `acct` with rows 1, 2 and 3 (balance 100).
async fn two_processes(theme: &str) -> Result<(Database, Database), Error> {
    let address = new_database_address(theme);
    let a = open(&address).await?;
    a.session()
        .execute(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL);
             INSERT INTO acct VALUES (1, 100), (2, 100), (3, 100);",
        )
        .await?;
    Ok((a, open(&address).await?))
}

/// A statement running in a task of its own.
type Statement = tokio::task::JoinHandle<Result<Vec<rowdex::Output>, Error>>;

fn spawn(session: &Session, sql: &str) -> Statement {
    let session = session.clone();
    let sql = sql.to_string();
    tokio::spawn(async move { session.execute(&sql).await })
}

/// Gives a spawned statement time to reach the other process's lock and asserts it waits.
async fn assert_waiting<T>(task: &tokio::task::JoinHandle<T>) {
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!task.is_finished(), "the writer did not wait");
}

async fn balances(session: &Session) -> Result<Vec<Vec<String>>, Error> {
    rows(session, "SELECT bal FROM acct ORDER BY id").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_waits_for_another_processes_lock_and_loses_no_update() -> TestResult {
    let (a, b) = two_processes("wait").await?;
    let (sa, sb) = (a.session(), b.session());
    sa.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1")
        .await?;
    // NOWAIT and SKIP LOCKED see the other process's lock.
    let refused = sb
        .execute("SELECT id FROM acct WHERE id = 1 FOR UPDATE NOWAIT")
        .await;
    assert!(
        matches!(refused, Err(Error::Store(StoreError::LockNotAvailable))),
        "{refused:?}"
    );
    assert_eq!(
        rows(&sb, "BEGIN; SELECT id FROM acct FOR UPDATE SKIP LOCKED").await?,
        table(&[&["2"], &["3"]])
    );
    sb.execute("COMMIT").await?;

    let waiting = spawn(&sb, "UPDATE acct SET bal = bal + 10 WHERE id = 1");
    assert_waiting(&waiting).await;

    sa.execute("COMMIT").await?;
    // Granted when A's lock went, it re-reads the row as A committed it: no 40001.
    waiting.await??;
    assert_eq!(balances(&sb).await?, table(&[&["111"], &["100"], &["100"]]));

    // A lock given up by ROLLBACK frees the row the same way, and a lock timeout bounds a
    // wait on another process's lock.
    sb.execute("BEGIN; UPDATE acct SET bal = 0 WHERE id = 2")
        .await?;
    sa.set_lock_timeout(Some(Duration::from_millis(300)));
    let started = Instant::now();
    let timed_out = sa
        .execute("UPDATE acct SET bal = bal + 1 WHERE id = 2")
        .await;
    assert!(
        matches!(timed_out, Err(Error::Store(StoreError::LockTimeout))),
        "{timed_out:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    sa.set_lock_timeout(None);
    let waiting = spawn(&sa, "UPDATE acct SET bal = bal + 1 WHERE id = 2");
    assert_waiting(&waiting).await;
    sb.execute("ROLLBACK").await?;
    waiting.await??;
    assert_eq!(balances(&sa).await?, table(&[&["111"], &["101"], &["100"]]));
    Ok(())
}

/// Ten sessions in each of two processes add to one counter, as single statements and in
/// blocks: READ COMMITTED queues them on the row, so none sees an error and the sum is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_two_processes_add_to_one_counter_exactly() -> TestResult {
    const PER_PROCESS: usize = 10;
    const ADDS: usize = 4;
    let (a, b) = two_processes("counter").await?;
    let (a, b) = (Arc::new(a), Arc::new(b));
    let mut tasks = Vec::new();
    for i in 0..PER_PROCESS * 2 {
        let db = if i % 2 == 0 { &a } else { &b };
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            for _ in 0..ADDS {
                let sql = if i % 4 < 2 {
                    "UPDATE acct SET bal = bal + 1 WHERE id = 3"
                } else {
                    "BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 3; COMMIT"
                };
                session.execute(sql).await?;
            }
            Ok::<(), Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let expected = (100 + PER_PROCESS * 2 * ADDS).to_string();
    assert_eq!(
        rows(&a.session(), "SELECT bal FROM acct WHERE id = 3").await?,
        table(&[&[expected.as_str()]])
    );
    Ok(())
}

fn is_deadlock(result: &Result<Vec<rowdex::Output>, Error>) -> bool {
    matches!(result, Err(Error::Store(StoreError::Deadlock)))
}

/// A in process A and B in process B each hold a row and want the other's: one of them is
/// told 40P01 (no process sees the whole cycle by itself), the other goes on once it rolls
/// back. Then a cycle with a step inside one process: A1 waits in A's own queue for A2, A2
/// waits for B1 in the cluster, B1 waits for A1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_through_two_processes_fails_one_transaction() -> TestResult {
    let (a, b) = two_processes("deadlock").await?;
    let (sa, sb) = (a.session(), b.session());
    sa.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1")
        .await?;
    sb.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 2")
        .await?;
    let first = spawn(&sa, "UPDATE acct SET bal = bal + 10 WHERE id = 2");
    assert_waiting(&first).await;
    let second = spawn(&sb, "UPDATE acct SET bal = bal + 10 WHERE id = 1");
    let victims = settle(vec![(sa.clone(), first), (sb.clone(), second)]).await?;
    assert_eq!(victims.len(), 1, "one victim: {victims:?}");
    let expected = if victims == [0] {
        table(&[&["110"], &["101"], &["100"]])
    } else {
        table(&[&["101"], &["110"], &["100"]])
    };
    assert_eq!(balances(&sa).await?, expected);

    // A1 holds row 1, A2 holds row 3, B1 holds row 2.
    let (a1, a2, b1) = (a.session(), a.session(), b.session());
    a1.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1")
        .await?;
    a2.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 3")
        .await?;
    b1.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 2")
        .await?;
    // A2 waits for A1 in A's queue; B1 waits for A2 in the cluster.
    let a2_waits = spawn(&a2, "UPDATE acct SET bal = bal + 10 WHERE id = 1");
    assert_waiting(&a2_waits).await;
    let b1_waits = spawn(&b1, "UPDATE acct SET bal = bal + 10 WHERE id = 3");
    assert_waiting(&b1_waits).await;
    // A1 closes the cycle by waiting for B1.
    let a1_waits = spawn(&a1, "UPDATE acct SET bal = bal + 10 WHERE id = 2");
    let victims = settle(vec![(a1, a1_waits), (a2, a2_waits), (b1, b1_waits)]).await?;
    assert!(!victims.is_empty(), "no victim");
    Ok(())
}

/// Waits for each statement of `tasks` (one per session, in a block) to end: a deadlock
/// victim's session rolls back (freeing the rows the others wait for), the others commit.
/// The victims' places in `tasks`.
async fn settle(
    tasks: Vec<(Session, Statement)>,
) -> Result<Vec<usize>, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut victims = Vec::new();
    let mut tasks: Vec<_> = tasks.into_iter().enumerate().collect();
    while !tasks.is_empty() {
        assert!(Instant::now() < deadline, "the cycle was never broken");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut left = Vec::new();
        for (at, (session, task)) in tasks {
            if !task.is_finished() {
                left.push((at, (session, task)));
                continue;
            }
            let result = task.await?;
            if is_deadlock(&result) {
                victims.push(at);
                session.execute("ROLLBACK").await?;
            } else {
                result?;
                session.execute("COMMIT").await?;
            }
        }
        tasks = left;
    }
    Ok(victims)
}

/// A process that closes (its `Database` dropped with a transaction open) gives its locks up
/// at once, long before its lease would run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_closes_frees_its_locks_at_once() -> TestResult {
    let (a, b) = two_processes("close").await?;
    let sa = a.session();
    sa.execute(
        "BEGIN; UPDATE acct SET bal = 0 WHERE id = 1; SELECT * FROM acct WHERE id = 2 FOR SHARE",
    )
    .await?;
    let sb = b.session();
    let waiting = spawn(&sb, "UPDATE acct SET bal = bal + 1 WHERE id IN (1, 2)");
    assert_waiting(&waiting).await;
    let started = Instant::now();
    drop(sa);
    drop(a);
    waiting.await??;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited for the lease: {:?}",
        started.elapsed()
    );
    assert_eq!(balances(&sb).await?, table(&[&["101"], &["101"], &["100"]]));
    Ok(())
}
