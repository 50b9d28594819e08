//! Isolation levels as PostgreSQL documents them, and the row locks of READ COMMITTED and
//! REPEATABLE READ writers: each anomaly shown allowed or prevented at each level, a second
//! writer of a row waiting for the first instead of aborting, deadlocks broken at once, locks
//! released however a transaction ends, and many sessions adding to one counter exactly.
//!
//! | anomaly | READ COMMITTED | REPEATABLE READ | SERIALIZABLE |
//! |---|---|---|---|
//! | lost update | prevented (waits, re-reads) | prevented (40001) | prevented (40001) |
//! | non-repeatable read, read skew | allowed | prevented | prevented |
//! | phantom | allowed | prevented | prevented |
//! | write skew | allowed | allowed | prevented |

use std::sync::Arc;
use std::time::Duration;

use rowdex::{Database, Error, IsolationLevel, Session};
use rowdex_store::StoreError;

use crate::{TestResult, rows, table};

async fn stores() -> Result<Vec<(Database, Option<tempfile::TempDir>)>, Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    Ok(vec![
        (Database::open_memory().await?, None),
        (Database::open(dir.path()).await?, Some(dir)),
    ])
}

async fn accounts(db: &Database) -> Result<Session, Error> {
    let s = db.session();
    s.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, owner TEXT NOT NULL, bal INT NOT NULL);
         CREATE INDEX acct_owner ON acct (owner);
         INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 100), (3, 'cy', 100);",
    )
    .await?;
    Ok(s)
}

const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

/// One value of a one-row, one-column query.
async fn value(s: &Session, sql: &str) -> Result<String, Box<dyn std::error::Error>> {
    let found = rows(s, sql).await?;
    match found.as_slice() {
        [row] if row.len() == 1 => Ok(row[0].clone()),
        other => Err(format!("{sql} gave {other:?}").into()),
    }
}

/// Runs `sql` on `session` in a task of its own, so the caller can act while it waits.
fn spawn(
    session: &Session,
    sql: &str,
) -> tokio::task::JoinHandle<Result<Vec<rowdex::Output>, Error>> {
    let session = session.clone();
    let sql = sql.to_string();
    tokio::spawn(async move { session.execute(&sql).await })
}

/// Gives a spawned statement time to reach its lock and asserts it is still waiting there.
async fn assert_waiting<T>(task: &tokio::task::JoinHandle<T>, db: &Database) {
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!task.is_finished(), "the second writer did not wait");
    assert!(db.locked_row_keys() >= 1);
}

fn is_serialization_failure(error: &Error) -> bool {
    matches!(error, Error::WriteConflict | Error::TransactionConflict)
}

#[tokio::test]
async fn the_default_level_is_read_committed() -> TestResult {
    let db = Database::open_memory().await?;
    let s = db.session();
    let level = |s: &Session| s.transaction_characteristics().isolation;
    assert_eq!(level(&s), IsolationLevel::ReadCommitted);
    s.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await?;
    assert_eq!(level(&s), IsolationLevel::RepeatableRead);
    s.execute("COMMIT").await?;
    // The level is fixed once a statement ran, as in PostgreSQL.
    s.execute("CREATE TABLE t (k INT PRIMARY KEY); BEGIN; SELECT * FROM t")
        .await?;
    let error = s
        .execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::IsolationAfterQuery)),
        "{error:?}"
    );
    s.execute("ROLLBACK").await?;
    Ok(())
}

/// Non-repeatable reads, read skew and phantoms: READ COMMITTED sees each statement's
/// commits, REPEATABLE READ and SERIALIZABLE read one snapshot for the whole transaction.
#[tokio::test]
async fn reads_see_later_commits_only_under_read_committed() -> TestResult {
    for (db, _dir) in stores().await? {
        for level in LEVELS {
            let s1 = accounts(&db).await?;
            let s2 = db.session();
            s1.execute(&format!("BEGIN ISOLATION LEVEL {level}"))
                .await?;
            assert_eq!(
                value(&s1, "SELECT bal FROM acct WHERE id = 1").await?,
                "100"
            );
            assert_eq!(value(&s1, "SELECT count(*) FROM acct").await?, "3");
            // A transfer of 50 from ann to bob, and a new account, committed meanwhile.
            s2.execute(
                "BEGIN; UPDATE acct SET bal = bal - 50 WHERE id = 1;
                 UPDATE acct SET bal = bal + 50 WHERE id = 2; COMMIT;
                 INSERT INTO acct VALUES (4, 'dee', 10)",
            )
            .await?;
            let read_committed = level == "READ COMMITTED";
            let (ann, bob, count) = if read_committed {
                ("50", "150", "4")
            } else {
                ("100", "100", "3")
            };
            assert_eq!(
                value(&s1, "SELECT bal FROM acct WHERE id = 1").await?,
                ann,
                "{level}: non-repeatable read"
            );
            // Read skew: ann read before the transfer plus bob read after it.
            assert_eq!(
                value(&s1, "SELECT bal FROM acct WHERE id = 2").await?,
                bob,
                "{level}: read skew"
            );
            assert_eq!(
                value(&s1, "SELECT count(*) FROM acct").await?,
                count,
                "{level}: phantom"
            );
            assert_eq!(
                value(&s1, "SELECT count(*) FROM acct WHERE owner = 'dee'").await?,
                if read_committed { "1" } else { "0" },
                "{level}: phantom through an index"
            );
            s1.execute("COMMIT").await?;
            s1.execute("DROP TABLE acct").await?;
        }
    }
    Ok(())
}

/// Lost update: under READ COMMITTED the second writer of a row waits for the first to
/// commit and then changes the row as committed; under REPEATABLE READ and SERIALIZABLE it
/// fails with a serialization failure and changes nothing.
#[tokio::test]
async fn a_second_writer_waits_and_loses_no_update() -> TestResult {
    for (db, _dir) in stores().await? {
        for level in LEVELS {
            let s1 = accounts(&db).await?;
            let s2 = db.session();
            s1.execute("BEGIN; UPDATE acct SET bal = bal + 10 WHERE id = 1")
                .await?;
            s2.execute(&format!("BEGIN ISOLATION LEVEL {level}"))
                .await?;
            assert_eq!(
                value(&s2, "SELECT bal FROM acct WHERE id = 1").await?,
                "100"
            );
            let second = spawn(&s2, "UPDATE acct SET bal = bal + 20 WHERE id = 1");
            if level != "SERIALIZABLE" {
                assert_waiting(&second, &db).await;
            }
            s1.execute("COMMIT").await?;
            let outcome = second.await?;
            let committed = s2.execute("COMMIT").await;
            let bal = value(&s1, "SELECT bal FROM acct WHERE id = 1").await?;
            match level {
                "READ COMMITTED" => {
                    outcome?;
                    committed?;
                    assert_eq!(bal, "130", "{level}");
                }
                _ => {
                    // The UPDATE itself (REPEATABLE READ) or the COMMIT (SERIALIZABLE) fails.
                    let error = outcome.err().or(committed.err());
                    assert!(
                        error.as_ref().is_some_and(is_serialization_failure),
                        "{level}: {error:?}"
                    );
                    assert_eq!(bal, "110", "{level}");
                }
            }
            assert_eq!(db.locked_row_keys(), 0, "{level}: locks left");
            s1.execute("DROP TABLE acct").await?;
        }
    }
    Ok(())
}

/// A READ COMMITTED UPDATE that waited re-checks its WHERE on the committed row: a row that
/// stopped matching is left alone, one that started matching is changed.
#[tokio::test]
async fn a_waiting_update_rechecks_its_condition() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN; UPDATE acct SET owner = 'gone' WHERE id = 1; UPDATE acct SET owner = 'ann' WHERE id = 3")
            .await?;
        let second = spawn(&s2, "UPDATE acct SET bal = 0 WHERE owner = 'ann'");
        assert_waiting(&second, &db).await;
        s1.execute("COMMIT").await?;
        second.await??;
        assert_eq!(
            rows(&s1, "SELECT id, owner, bal FROM acct ORDER BY id").await?,
            table(&[
                &["1", "gone", "100"],
                &["2", "bob", "100"],
                &["3", "ann", "0"]
            ])
        );
        // The same for a DELETE.
        s1.execute("BEGIN; UPDATE acct SET bal = 5 WHERE id = 2")
            .await?;
        let deleting = spawn(&s2, "DELETE FROM acct WHERE bal = 100");
        assert_waiting(&deleting, &db).await;
        s1.execute("COMMIT").await?;
        deleting.await??;
        assert_eq!(
            rows(&s1, "SELECT id, bal FROM acct ORDER BY id").await?,
            table(&[&["2", "5"], &["3", "0"]])
        );
        assert_eq!(db.locked_row_keys(), 0);
    }
    Ok(())
}

/// Write skew: two transactions read both rows and each changes a different one. Snapshot
/// isolation (REPEATABLE READ) commits both, as PostgreSQL's does; SERIALIZABLE rejects the
/// second.
#[tokio::test]
async fn write_skew_is_allowed_only_below_serializable() -> TestResult {
    for (db, _dir) in stores().await? {
        for level in ["REPEATABLE READ", "SERIALIZABLE"] {
            let s1 = accounts(&db).await?;
            let s2 = db.session();
            for s in [&s1, &s2] {
                s.execute(&format!("BEGIN ISOLATION LEVEL {level}")).await?;
                assert_eq!(
                    value(s, "SELECT sum(bal) FROM acct WHERE id IN (1, 2)").await?,
                    "200"
                );
            }
            s1.execute("UPDATE acct SET bal = 0 WHERE id = 1").await?;
            s2.execute("UPDATE acct SET bal = 0 WHERE id = 2").await?;
            s1.execute("COMMIT").await?;
            let second = s2.execute("COMMIT").await;
            let sum = value(&s1, "SELECT sum(bal) FROM acct WHERE id IN (1, 2)").await?;
            if level == "SERIALIZABLE" {
                assert!(
                    matches!(second, Err(Error::TransactionConflict)),
                    "{second:?}"
                );
                assert_eq!(sum, "100");
            } else {
                second?;
                assert_eq!(sum, "0", "snapshot isolation lets write skew through");
            }
            s1.execute("DROP TABLE acct").await?;
        }
    }
    Ok(())
}

fn is_deadlock(result: &Result<Vec<rowdex::Output>, Error>) -> bool {
    matches!(result, Err(Error::Store(StoreError::Deadlock)))
}

/// Two and three transactions waiting for each other in a cycle: one of them is told at once
/// (40P01), its statement changes nothing, and the others go on once it rolls back.
#[tokio::test]
async fn a_deadlock_fails_one_transaction_and_the_others_go_on() -> TestResult {
    for (db, _dir) in stores().await? {
        for sessions in [2usize, 3] {
            let s0 = accounts(&db).await?;
            let all: Vec<Session> = (0..sessions).map(|_| db.session()).collect();
            for (i, s) in all.iter().enumerate() {
                s.execute(&format!(
                    "BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = {}",
                    i + 1
                ))
                .await?;
            }
            // Each waits for the next one's row; the last closes the cycle.
            let mut waiting = Vec::new();
            for (i, s) in all.iter().enumerate().take(sessions - 1) {
                let task = spawn(
                    s,
                    &format!("UPDATE acct SET bal = bal + 10 WHERE id = {}", i + 2),
                );
                assert_waiting(&task, &db).await;
                waiting.push(task);
            }
            let last = all[sessions - 1]
                .execute("UPDATE acct SET bal = bal + 10 WHERE id = 1")
                .await;
            assert!(is_deadlock(&last), "{sessions} sessions: {last:?}");
            all[sessions - 1].execute("ROLLBACK").await?;
            // Each one's commit frees the row the one before waits for.
            for (task, s) in waiting.into_iter().zip(&all).rev() {
                task.await??;
                s.execute("COMMIT").await?;
            }
            // Session i added 1 to row i+1 and (all but the last) 10 to row i+2; the last one,
            // rolled back, took its 1 with it.
            let expected: Vec<String> = (1..=3usize)
                .map(|id| {
                    let own = u32::from(id < sessions);
                    let next = if (2..=sessions).contains(&id) { 10 } else { 0 };
                    (100 + own + next).to_string()
                })
                .collect();
            let got: Vec<String> = rows(&s0, "SELECT bal FROM acct ORDER BY id")
                .await?
                .into_iter()
                .map(|row| row[0].clone())
                .collect();
            assert_eq!(got, expected, "{sessions} sessions");
            assert_eq!(db.locked_row_keys(), 0);
            s0.execute("DROP TABLE acct").await?;
        }
    }
    Ok(())
}

/// Locks go with the transaction however it ends: ROLLBACK, a failed COMMIT, a dropped
/// session; a waiting writer then gets the row.
#[tokio::test]
async fn locks_are_released_however_a_transaction_ends() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1; DELETE FROM acct WHERE id = 2")
        .await?;
    assert_eq!(db.locked_row_keys(), 2);
    let waiting = spawn(&s0, "UPDATE acct SET bal = bal + 1 WHERE id IN (1, 2)");
    assert_waiting(&waiting, &db).await;
    s1.execute("ROLLBACK").await?;
    waiting.await??;
    assert_eq!(db.locked_row_keys(), 0);

    let s2 = db.session();
    s2.execute("BEGIN; UPDATE acct SET bal = 7 WHERE id = 3")
        .await?;
    let waiting = spawn(&s0, "UPDATE acct SET bal = bal + 1 WHERE id = 3");
    assert_waiting(&waiting, &db).await;
    drop(s2);
    waiting.await??;
    assert_eq!(
        rows(&s0, "SELECT bal FROM acct ORDER BY id").await?,
        table(&[&["101"], &["101"], &["101"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

/// 100 sessions add to one counter at once, in single statements and in transaction blocks:
/// under READ COMMITTED none sees an error and the sum is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_sessions_add_to_one_counter_exactly() -> TestResult {
    const SESSIONS: i64 = 100;
    const ADDS: i64 = 10;
    for (db, _dir) in stores().await? {
        let s0 = db.session();
        s0.execute("CREATE TABLE counter (id INT PRIMARY KEY, n BIGINT NOT NULL); INSERT INTO counter VALUES (1, 0)")
            .await?;
        let db = Arc::new(db);
        let mut tasks = Vec::new();
        for i in 0..SESSIONS {
            let s = db.session();
            tasks.push(tokio::spawn(async move {
                for _ in 0..ADDS {
                    let sql = if i % 2 == 0 {
                        "UPDATE counter SET n = n + 1 WHERE id = 1"
                    } else {
                        "BEGIN; UPDATE counter SET n = n + 1 WHERE id = 1; COMMIT"
                    };
                    s.execute(sql).await?;
                }
                Ok::<(), Error>(())
            }));
        }
        for task in tasks {
            task.await??;
        }
        assert_eq!(
            value(&s0, "SELECT n FROM counter").await?,
            (SESSIONS * ADDS).to_string()
        );
        assert_eq!(db.locked_row_keys(), 0);
    }
    Ok(())
}

/// `lock_timeout` bounds a writer's wait: the statement fails with a lock timeout and changes
/// nothing; without it the writer waits until the row is free.
#[tokio::test]
async fn lock_timeout_ends_a_wait() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1")
        .await?;
    s0.set_lock_timeout(Some(Duration::from_millis(100)));
    let started = std::time::Instant::now();
    let error = s0
        .execute("UPDATE acct SET bal = bal + 1 WHERE id IN (1, 2)")
        .await
        .err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockTimeout))),
        "{error:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(100));
    s1.execute("ROLLBACK").await?;
    assert_eq!(
        rows(&s0, "SELECT bal FROM acct ORDER BY id").await?,
        table(&[&["100"], &["100"], &["100"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

/// `statement_timeout` ends a writer's wait with 57014 and the statement changes nothing; an
/// interrupt (what the server does with a cancel request for a write it cannot drop) wakes a
/// waiter at once, and once cleared the next statement waits as usual.
#[tokio::test]
async fn statement_timeout_and_interrupt_end_a_wait() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    let s1 = db.session();
    s1.execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1")
        .await?;

    s0.set_statement_timeout(Some(Duration::from_millis(150)));
    let started = std::time::Instant::now();
    let error = s0
        .execute("UPDATE acct SET bal = bal + 1 WHERE id IN (2, 1)")
        .await
        .err();
    assert!(matches!(error, Some(Error::StatementTimeout)), "{error:?}");
    assert!(started.elapsed() >= Duration::from_millis(150));
    // A lock_timeout shorter than the statement's limit is the one that ends the wait.
    s0.set_lock_timeout(Some(Duration::from_millis(50)));
    let error = s0.execute("DELETE FROM acct WHERE id = 1").await.err();
    assert!(
        matches!(error, Some(Error::Store(StoreError::LockTimeout))),
        "{error:?}"
    );
    s0.set_lock_timeout(None);
    s0.set_statement_timeout(None);

    let waiting = spawn(&s0, "UPDATE acct SET bal = bal + 10 WHERE owner = 'ann'");
    assert_waiting(&waiting, &db).await;
    s0.interrupt();
    let error = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await??
        .err();
    assert!(
        matches!(error, Some(Error::StatementCancelled)),
        "{error:?}"
    );
    s0.clear_interrupt();

    // Nothing the stopped statements did is left: row 2 is as it was, and once the holder
    // commits the next writer waits for nothing and sees its value.
    let waiting = spawn(&s0, "UPDATE acct SET bal = bal + 10 WHERE id = 1");
    assert_waiting(&waiting, &db).await;
    s1.execute("COMMIT").await?;
    tokio::time::timeout(Duration::from_secs(10), waiting).await???;
    assert_eq!(
        rows(&s0, "SELECT id, bal FROM acct ORDER BY id").await?,
        table(&[&["1", "11"], &["2", "100"], &["3", "100"]])
    );
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}

fn is_duplicate(error: &Error) -> bool {
    matches!(
        error,
        Error::DuplicateKey { .. } | Error::UniqueViolation { .. }
    )
}

/// Two transactions inserting one key (or one UNIQUE value) queue: the second waits, then
/// fails with a duplicate once the first commits, or inserts once it rolls back; an ON
/// CONFLICT DO UPDATE waits for the row's writer and updates the row as it committed.
#[tokio::test]
async fn inserts_of_one_key_queue_behind_each_other() -> TestResult {
    let db = Database::open_memory().await?;
    let s0 = accounts(&db).await?;
    s0.execute("CREATE UNIQUE INDEX acct_owner_unique ON acct (owner)")
        .await?;
    let s1 = db.session();
    for (id, first_ends, second_ok) in [(5, "COMMIT", false), (9, "ROLLBACK", true)] {
        s1.execute(&format!(
            "BEGIN; INSERT INTO acct VALUES ({id}, 'first {id}', 1)"
        ))
        .await?;
        s0.execute("BEGIN").await?;
        let by_key = spawn(
            &s0,
            &format!("INSERT INTO acct VALUES ({id}, 'second {id}', 2)"),
        );
        assert_waiting(&by_key, &db).await;
        s1.execute(first_ends).await?;
        let outcome = tokio::time::timeout(Duration::from_secs(10), by_key).await??;
        match (&outcome, second_ok) {
            (Ok(_), true) => {}
            (Err(error), false) if is_duplicate(error) => {}
            other => panic!("after {first_ends}: {other:?}"),
        }
        s0.execute("ROLLBACK").await?;
    }
    // The same through a UNIQUE index.
    s1.execute("BEGIN; INSERT INTO acct VALUES (6, 'gus', 1)")
        .await?;
    s0.execute("BEGIN").await?;
    let by_value = spawn(&s0, "INSERT INTO acct VALUES (7, 'gus', 2)");
    assert_waiting(&by_value, &db).await;
    s1.execute("COMMIT").await?;
    let error = tokio::time::timeout(Duration::from_secs(10), by_value)
        .await??
        .err();
    assert!(error.as_ref().is_some_and(is_duplicate), "{error:?}");
    s0.execute("ROLLBACK").await?;

    // ON CONFLICT DO UPDATE waits for the row's writer and adds to what it committed.
    s1.execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1")
        .await?;
    s0.execute("BEGIN").await?;
    let upsert = spawn(
        &s0,
        "INSERT INTO acct VALUES (1, 'ann', 0) ON CONFLICT (id) DO UPDATE SET bal = acct.bal + 10",
    );
    assert_waiting(&upsert, &db).await;
    s1.execute("COMMIT").await?;
    tokio::time::timeout(Duration::from_secs(10), upsert).await???;
    s0.execute("COMMIT").await?;
    assert_eq!(
        value(&s0, "SELECT bal FROM acct WHERE id = 1").await?,
        "111"
    );

    // REPEATABLE READ: a key another transaction committed after the snapshot is a
    // serialization failure.
    s0.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await?;
    rows(&s0, "SELECT count(*) FROM acct").await?;
    s1.execute("INSERT INTO acct VALUES (8, 'hal', 1)").await?;
    let error = s0
        .execute("INSERT INTO acct VALUES (8, 'ida', 1)")
        .await
        .err();
    assert!(
        error
            .as_ref()
            .is_some_and(|e| is_serialization_failure(e) || is_duplicate(e)),
        "{error:?}"
    );
    s0.execute("ROLLBACK").await?;
    assert_eq!(db.locked_row_keys(), 0);
    Ok(())
}
