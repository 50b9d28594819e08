//! `SELECT ... FOR UPDATE | SHARE [OF ...] [NOWAIT | SKIP LOCKED]` as PostgreSQL documents it:
//! a locked row makes writers and other lockers wait; a locking read waits for a writer and
//! returns the row as it committed (or leaves it out when it stopped matching) under READ
//! COMMITTED, fails with 40001 under REPEATABLE READ; NOWAIT fails at once with 55P03; SKIP
//! LOCKED leaves held rows out and counts its LIMIT on the rows it returns, so workers draining
//! one queue never take the same job.

use std::collections::BTreeSet;
use std::time::Duration;

use rowdex::{Database, Error, Session};
use rowdex_store::StoreError;

use crate::{TestResult, rows, table};

async fn accounts(db: &Database) -> Result<Session, Error> {
    let s = db.session();
    s.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, owner TEXT NOT NULL, bal INT NOT NULL);
         CREATE INDEX acct_owner ON acct (owner);
         INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 100), (3, 'cy', 100);
         CREATE TABLE branch (id INT PRIMARY KEY, acct INT NOT NULL, name TEXT);
         INSERT INTO branch VALUES (10, 1, 'north'), (20, 2, 'south');",
    )
    .await?;
    Ok(s)
}

fn spawn(session: &Session, sql: &str) -> tokio::task::JoinHandle<Result<Vec<Vec<String>>, Error>> {
    let session = session.clone();
    let sql = sql.to_string();
    tokio::spawn(async move { rows(&session, &sql).await })
}

/// Gives a spawned statement time to reach its lock and asserts it still waits there.
async fn assert_waiting<T>(task: &tokio::task::JoinHandle<T>) {
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!task.is_finished(), "the statement did not wait");
}

async fn joined<T>(task: tokio::task::JoinHandle<T>) -> Result<T, Box<dyn std::error::Error>> {
    Ok(tokio::time::timeout(Duration::from_secs(10), task).await??)
}

#[tokio::test]
async fn a_locked_row_makes_writers_and_lockers_wait() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN").await?;
    assert_eq!(
        rows(&s1, "SELECT id, bal FROM acct WHERE id = 1 FOR UPDATE").await?,
        table(&[&["1", "100"]])
    );
    // Reading is not blocked; writing and locking are.
    assert_eq!(
        rows(&s0, "SELECT bal FROM acct WHERE id = 1").await?,
        table(&[&["100"]])
    );
    let writer = spawn(&s0, "UPDATE acct SET bal = bal + 1 WHERE id = 1");
    assert_waiting(&writer).await;
    let s2 = db.session();
    let locker = spawn(&s2, "SELECT bal FROM acct WHERE owner = 'ann' FOR SHARE");
    assert_waiting(&locker).await;
    s1.execute("UPDATE acct SET bal = 50 WHERE id = 1").await?;
    // Other rows are free.
    let s3 = db.session();
    rows(&s3, "SELECT id FROM acct WHERE id = 2 FOR UPDATE NOWAIT").await?;
    s1.execute("COMMIT").await?;
    joined(writer).await??;
    // The waiting locker ran again on the newest state: both writes are in what it returns.
    let seen = joined(locker).await??;
    assert!(
        seen == table(&[&["50"]]) || seen == table(&[&["51"]]),
        "{seen:?}"
    );
    assert_eq!(
        rows(&s0, "SELECT bal FROM acct WHERE id = 1").await?,
        table(&[&["51"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

#[tokio::test]
async fn a_locking_read_returns_the_newest_row_or_fails_by_level() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();

    // READ COMMITTED: waits, then the committed value; a row that stopped matching is gone.
    s1.execute(
        "BEGIN; UPDATE acct SET bal = 1 WHERE id = 1; UPDATE acct SET owner = 'zed' WHERE id = 2",
    )
    .await?;
    s0.execute("BEGIN").await?;
    let read = spawn(
        &s0,
        "SELECT id, bal FROM acct WHERE owner IN ('ann', 'bob') ORDER BY id FOR UPDATE",
    );
    assert_waiting(&read).await;
    s1.execute("COMMIT").await?;
    assert_eq!(joined(read).await??, table(&[&["1", "1"]]));
    // The rows it found are locked, the one that left is not.
    let error = rows(&s1, "SELECT id FROM acct WHERE id = 1 FOR SHARE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    s0.execute("COMMIT").await?;

    // REPEATABLE READ: the row changed since the transaction's snapshot: 40001.
    s0.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await?;
    rows(&s0, "SELECT bal FROM acct WHERE id = 3").await?;
    s1.execute("UPDATE acct SET bal = 7 WHERE id = 3").await?;
    let error = rows(&s0, "SELECT bal FROM acct WHERE id = 3 FOR UPDATE")
        .await
        .err();
    assert!(
        matches!(
            error,
            Some(Error::WriteConflict | Error::TransactionConflict)
        ),
        "{error:?}"
    );
    s0.execute("ROLLBACK").await?;
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

#[tokio::test]
async fn nowait_fails_at_once_and_timeouts_end_a_wait() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN").await?;
    rows(&s1, "SELECT * FROM acct WHERE id = 1 FOR UPDATE").await?;

    let started = std::time::Instant::now();
    let error = rows(&s0, "SELECT * FROM acct FOR UPDATE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    // A shared lock is compatible with another, not with the exclusive one held.
    let error = rows(&s0, "SELECT * FROM acct WHERE id = 1 FOR KEY SHARE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    s0.set_lock_timeout(Some(Duration::from_millis(100)));
    let error = rows(&s0, "SELECT * FROM acct WHERE id = 1 FOR SHARE")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockTimeout))),
        "{error:?}"
    );
    s0.set_lock_timeout(None);
    s0.set_statement_timeout(Some(Duration::from_millis(100)));
    let error = rows(&s0, "SELECT * FROM acct WHERE id = 1 FOR UPDATE")
        .await
        .err();
    assert!(matches!(error, Some(Error::StatementTimeout)), "{error:?}");
    s0.set_statement_timeout(None);
    s1.execute("COMMIT").await?;
    assert_eq!(
        rows(
            &s0,
            "SELECT id FROM acct WHERE id = 1 FOR NO KEY UPDATE NOWAIT"
        )
        .await?,
        table(&[&["1"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

#[tokio::test]
async fn shared_locks_are_held_together_and_keep_writers_out() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let (s1, s2) = (db.session(), db.session());
    for s in [&s1, &s2] {
        s.execute("BEGIN").await?;
        assert_eq!(
            rows(s, "SELECT bal FROM acct WHERE id = 2 FOR SHARE").await?,
            table(&[&["100"]])
        );
    }
    let writer = spawn(&s0, "DELETE FROM acct WHERE id = 2");
    assert_waiting(&writer).await;
    s1.execute("COMMIT").await?;
    assert_waiting(&writer).await;
    s2.execute("ROLLBACK").await?;
    joined(writer).await??;
    assert_eq!(
        rows(&s0, "SELECT count(*) FROM acct").await?,
        table(&[&["2"]])
    );
    Ok(())
}

#[tokio::test]
async fn for_update_of_locks_the_tables_it_names() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN").await?;
    assert_eq!(
        rows(
            &s1,
            "SELECT a.id, b.name FROM acct AS a JOIN branch b ON b.acct = a.id \
             WHERE a.id = 1 FOR UPDATE OF b"
        )
        .await?,
        table(&[&["1", "north"]])
    );
    // acct's row is free, branch's is not.
    s0.execute("UPDATE acct SET bal = 5 WHERE id = 1").await?;
    let error = rows(&s0, "SELECT * FROM branch WHERE id = 10 FOR UPDATE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    // OF the side of a LEFT JOIN that is always there locks it, rows without a match too.
    rows(
        &s1,
        "SELECT * FROM acct a LEFT JOIN branch b ON b.acct = a.id WHERE a.id IN (2, 3) \
         FOR UPDATE OF a",
    )
    .await?;
    let error = rows(&s0, "SELECT * FROM acct WHERE id = 3 FOR UPDATE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    s1.execute("COMMIT").await?;

    let error = rows(&s0, "SELECT * FROM acct FOR UPDATE OF nowhere")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::LockedTableNotInFrom { .. })),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn queries_whose_rows_cannot_be_locked_are_refused() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    for sql in [
        "SELECT count(*) FROM acct FOR UPDATE",
        "SELECT DISTINCT owner FROM acct FOR UPDATE",
        "SELECT owner FROM acct GROUP BY owner FOR SHARE",
    ] {
        let error = rows(&s0, sql).await.err();
        assert!(
            matches!(error, Some(Error::LockingNotAllowed { .. })),
            "{sql}: {error:?}"
        );
    }
    let error = rows(
        &s0,
        "SELECT * FROM acct WHERE id IN (SELECT acct FROM branch FOR UPDATE)",
    )
    .await
    .err();
    assert!(
        matches!(error, Some(Error::Unsupported { .. })),
        "{error:?}"
    );
    s0.execute("BEGIN READ ONLY").await?;
    let error = rows(&s0, "SELECT * FROM acct FOR SHARE").await.err();
    assert!(
        matches!(error, Some(Error::ReadOnlyTransaction { .. })),
        "{error:?}"
    );
    s0.execute("ROLLBACK").await?;
    // A table keyed by a hidden row id is locked by it.
    s0.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('a'), ('b')")
        .await?;
    s0.execute("BEGIN").await?;
    assert_eq!(
        rows(&s0, "SELECT body FROM notes WHERE body = 'a' FOR UPDATE").await?,
        table(&[&["a"]])
    );
    let s1 = db.session();
    let error = rows(&s1, "SELECT * FROM notes FOR UPDATE NOWAIT")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockNotAvailable))),
        "{error:?}"
    );
    assert_eq!(
        rows(&s1, "SELECT body FROM notes FOR UPDATE SKIP LOCKED").await?,
        table(&[&["b"]])
    );
    s0.execute("COMMIT").await?;
    assert_eq!(
        rows(&s0, "SELECT * FROM notes ORDER BY body FOR UPDATE").await?,
        table(&[&["a"], &["b"]]),
        "the hidden key is not part of the result"
    );
    Ok(())
}

#[tokio::test]
async fn skip_locked_hands_each_worker_other_rows() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = db.session();
    s0.execute("CREATE TABLE jobs (id INT PRIMARY KEY, state TEXT NOT NULL)")
        .await?;
    let values: Vec<String> = (1..=8).map(|i| format!("({i}, 'ready')")).collect();
    s0.execute(&format!("INSERT INTO jobs VALUES {}", values.join(", ")))
        .await?;
    let next =
        "SELECT id FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";
    let workers: Vec<Session> = (0..3).map(|_| db.session()).collect();
    let mut taken = Vec::new();
    for worker in &workers {
        worker.execute("BEGIN").await?;
        taken.push(rows(worker, next).await?);
    }
    assert_eq!(
        taken,
        [table(&[&["1"]]), table(&[&["2"]]), table(&[&["3"]])]
    );
    // LIMIT and OFFSET count the rows returned, not those skipped.
    assert_eq!(
        rows(
            &s0,
            "SELECT id FROM jobs ORDER BY id LIMIT 2 OFFSET 1 FOR UPDATE SKIP LOCKED"
        )
        .await?,
        table(&[&["5"], &["6"]])
    );
    // A worker that took its job and committed frees it for nobody: it is done.
    workers[1]
        .execute("UPDATE jobs SET state = 'done' WHERE id = 2; COMMIT")
        .await?;
    workers[0].execute("ROLLBACK").await?;
    assert_eq!(rows(&s0, next).await?, table(&[&["1"]]));
    workers[2].execute("COMMIT").await?;
    Ok(())
}

/// Eight workers drain a queue of 400 jobs with SKIP LOCKED: every job is done exactly once
/// and no worker ever waits or fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_drain_a_queue_each_job_once() -> TestResult {
    const JOBS: usize = 400;
    let db = Database::open_memory().await?;
    let s0 = db.session();
    s0.execute(
        "CREATE TABLE queue (id INT PRIMARY KEY, payload TEXT NOT NULL);
         CREATE TABLE done (id INT PRIMARY KEY, worker INT NOT NULL);",
    )
    .await?;
    let values: Vec<String> = (1..=JOBS).map(|i| format!("({i}, 'job {i}')")).collect();
    s0.execute(&format!("INSERT INTO queue VALUES {}", values.join(", ")))
        .await?;
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            let mut done = 0usize;
            loop {
                session.execute("BEGIN").await?;
                let job = rows(
                    &session,
                    "SELECT id FROM queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                )
                .await?;
                let Some(id) = job.first().map(|row| row[0].clone()) else {
                    session.execute("COMMIT").await?;
                    return Ok::<usize, Error>(done);
                };
                session
                    .execute(&format!(
                        "DELETE FROM queue WHERE id = {id}; \
                         INSERT INTO done VALUES ({id}, {worker}); COMMIT"
                    ))
                    .await?;
                done += 1;
            }
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += joined(task).await??;
    }
    assert_eq!(total, JOBS);
    let ids: BTreeSet<String> = rows(&s0, "SELECT id FROM done")
        .await?
        .into_iter()
        .map(|row| row[0].clone())
        .collect();
    assert_eq!(ids.len(), JOBS);
    assert_eq!(
        rows(&s0, "SELECT count(*) FROM queue").await?,
        table(&[&["0"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}
