//! Multi-statement transactions between sessions: what one session's open transaction hides
//! from the others, which concurrent commits make a SERIALIZABLE transaction's COMMIT fail,
//! and that a failed or abandoned transaction leaves no trace, rows and index entries alike, on
//! every store. (The other levels, and the row locks of their writers: `isolation`.)

use rowdex::{Database, Datum, Error, Session};

use crate::{TestResult, rows, table};

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

/// Every index of `acct` agrees with its rows.
async fn indexes_clean(s: &Session) -> TestResult {
    let report = rows(s, "CHECK INDEX acct_owner").await?;
    // index_name, rows, entries, missing, dangling, repaired, status.
    let [row] = report.as_slice() else {
        return Err(format!("CHECK INDEX printed {report:?}").into());
    };
    assert_eq!(row[1], row[2], "{row:?}");
    assert_eq!(&row[3..], ["0", "0", "0", "ok"], "{row:?}");
    Ok(())
}

async fn stores() -> Result<Vec<(Database, Option<tempfile::TempDir>)>, Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    Ok(vec![
        (Database::open_memory().await?, None),
        (Database::open(dir.path()).await?, Some(dir)),
    ])
}

#[tokio::test]
async fn uncommitted_writes_are_invisible_to_other_sessions() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN; UPDATE acct SET owner = 'zed' WHERE id = 1; INSERT INTO acct VALUES (4, 'dee', 100)")
            .await?;
        assert!(s1.in_transaction() && !s2.in_transaction());
        // Not by key, not through the index, not through DataFusion.
        assert_eq!(
            rows(&s2, "SELECT owner FROM acct WHERE id = 1").await?,
            table(&[&["ann"]])
        );
        assert_eq!(
            rows(&s2, "SELECT id FROM acct WHERE owner = 'zed'").await?,
            table(&[])
        );
        assert_eq!(
            rows(&s2, "SELECT count(*) FROM acct").await?,
            table(&[&["3"]])
        );
        // The writer sees them, prepared statements included.
        let by_owner = s1.prepare("SELECT id FROM acct WHERE owner = $1")?;
        assert_eq!(
            crate::cells(&by_owner.query(&[Datum::Text("zed".into())]).await?),
            table(&[&["1"]])
        );
        s1.execute("COMMIT").await?;
        assert_eq!(
            rows(&s2, "SELECT id FROM acct WHERE owner = 'zed'").await?,
            table(&[&["1"]])
        );
        assert_eq!(
            rows(&s2, "SELECT count(*) FROM acct").await?,
            table(&[&["4"]])
        );
        indexes_clean(&s2).await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_transaction_reads_one_snapshot() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await?;
        assert_eq!(
            rows(&s1, "SELECT sum(bal) FROM acct").await?,
            table(&[&["300"]])
        );
        s2.execute("INSERT INTO acct VALUES (4, 'dee', 50); UPDATE acct SET bal = 0 WHERE id = 1")
            .await?;
        // Later commits stay invisible for the whole transaction.
        assert_eq!(
            rows(&s1, "SELECT sum(bal) FROM acct").await?,
            table(&[&["300"]])
        );
        assert_eq!(
            rows(&s1, "SELECT bal FROM acct WHERE id = 1").await?,
            table(&[&["100"]])
        );
        assert_eq!(
            rows(&s1, "SELECT id FROM acct WHERE owner = 'dee'").await?,
            table(&[])
        );
        // A read-only transaction commits: it saw one consistent state.
        s1.execute("COMMIT").await?;
        assert_eq!(
            rows(&s1, "SELECT sum(bal) FROM acct").await?,
            table(&[&["250"]])
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_lost_update_fails_at_commit_and_leaves_nothing() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN ISOLATION LEVEL SERIALIZABLE; UPDATE acct SET bal = bal + 10, owner = 'ann1' WHERE id = 1; INSERT INTO acct VALUES (5, 'eve', 1)")
            .await?;
        s2.execute("BEGIN ISOLATION LEVEL SERIALIZABLE; UPDATE acct SET bal = bal + 20, owner = 'ann2' WHERE id = 1")
            .await?;
        s2.execute("COMMIT").await?;
        let error = s1.execute("COMMIT").await.err();
        assert!(
            matches!(error, Some(Error::TransactionConflict)),
            "{error:?}"
        );
        assert!(error.is_some_and(|e| e.is_retryable()));
        // The failed transaction is over and none of it landed: not its row, not its entries.
        assert!(!s1.in_transaction());
        assert_eq!(
            rows(&s1, "SELECT id, owner, bal FROM acct ORDER BY id").await?,
            table(&[
                &["1", "ann2", "120"],
                &["2", "bob", "100"],
                &["3", "cy", "100"]
            ])
        );
        assert_eq!(
            rows(&s1, "SELECT id FROM acct WHERE owner IN ('ann1', 'eve')").await?,
            table(&[])
        );
        indexes_clean(&s1).await?;
    }
    Ok(())
}

/// Write skew: each transaction reads both rows and changes a different one. Snapshot
/// isolation alone would commit both; validating what was read rejects the second.
#[tokio::test]
async fn write_skew_is_rejected() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        // The rule both keep: ann and bob together hold at least 100.
        s1.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await?;
        s2.execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await?;
        for s in [&s1, &s2] {
            assert_eq!(
                rows(s, "SELECT sum(bal) FROM acct WHERE id IN (1, 2)").await?,
                table(&[&["200"]])
            );
        }
        s1.execute("UPDATE acct SET bal = 0 WHERE id = 1").await?;
        s2.execute("UPDATE acct SET bal = 0 WHERE id = 2").await?;
        s1.execute("COMMIT").await?;
        let error = s2.execute("COMMIT").await.err();
        assert!(
            matches!(error, Some(Error::TransactionConflict)),
            "{error:?}"
        );
        assert_eq!(
            rows(&s2, "SELECT sum(bal) FROM acct WHERE id IN (1, 2)").await?,
            table(&[&["100"]])
        );
    }
    Ok(())
}

#[tokio::test]
async fn disjoint_transactions_both_commit() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN; UPDATE acct SET bal = 1 WHERE id = 1")
            .await?;
        s2.execute("BEGIN; UPDATE acct SET bal = 2 WHERE id = 2")
            .await?;
        s1.execute("COMMIT").await?;
        s2.execute("COMMIT").await?;
        assert_eq!(
            rows(&s1, "SELECT bal FROM acct ORDER BY id").await?,
            table(&[&["1"], &["2"], &["100"]])
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_dropped_session_discards_its_transaction() -> TestResult {
    for (db, _dir) in stores().await? {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s2.execute(
            "BEGIN; DELETE FROM acct WHERE id = 2; UPDATE acct SET owner = 'x' WHERE id = 3",
        )
        .await?;
        drop(s2);
        assert_eq!(
            rows(&s1, "SELECT count(*) FROM acct").await?,
            table(&[&["3"]])
        );
        assert_eq!(
            rows(&s1, "SELECT id FROM acct WHERE owner = 'x'").await?,
            table(&[])
        );
        indexes_clean(&s1).await?;
    }
    Ok(())
}

#[tokio::test]
async fn committed_transactions_survive_reopen_and_open_ones_do_not() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = Database::open(dir.path()).await?;
        let s = accounts(&db).await?;
        s.execute("BEGIN; UPDATE acct SET owner = 'kept' WHERE id = 1; COMMIT")
            .await?;
        s.execute("BEGIN; UPDATE acct SET owner = 'lost' WHERE id = 2")
            .await?;
        // Closed with the transaction still open.
    }
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    assert_eq!(
        rows(&s, "SELECT id, owner FROM acct ORDER BY id").await?,
        table(&[&["1", "kept"], &["2", "bob"], &["3", "cy"]])
    );
    indexes_clean(&s).await?;
    Ok(())
}
