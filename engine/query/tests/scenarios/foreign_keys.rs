//! Foreign keys beyond one statement: a delete of a referenced row racing an insert of a row
//! referencing it (only one may commit), schemas created inside a transaction block as
//! migrations do, and cascades at sizes that a recursive implementation would not survive (a
//! chain thousands of rows deep, a parent with tens of thousands of children), on a fjall
//! database reopened before it is checked.

use rowdex::Database;

use crate::{TestResult, rows, table};

const SCHEMA: &str = "
    CREATE TABLE parent (id INT PRIMARY KEY, name TEXT);
    CREATE TABLE child (id INT PRIMARY KEY, parent_id INT REFERENCES parent ON DELETE CASCADE);";

/// The rows of `child` whose parent is gone.
const ORPHANS: &str = "SELECT count(*) FROM child WHERE NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = child.parent_id)";

#[tokio::test]
async fn a_delete_and_an_insert_referencing_the_deleted_row_do_not_both_commit() -> TestResult {
    // Either order of the two commits: the inserting transaction reads the parent's key, the
    // deleting one scans the child's index for references; whichever commits second finds
    // what it read changed.
    for insert_commits_first in [false, true] {
        let db = Database::open_memory().await?;
        let inserter = db.session();
        let deleter = db.session();
        inserter.execute(SCHEMA).await?;
        inserter
            .execute("INSERT INTO parent VALUES (1, 'p')")
            .await?;
        inserter.execute("BEGIN").await?;
        deleter.execute("BEGIN").await?;
        inserter.execute("INSERT INTO child VALUES (10, 1)").await?;
        // The delete does not see the uncommitted child, so it finds nothing to cascade to.
        deleter.execute("DELETE FROM parent WHERE id = 1").await?;
        let (first, second) = if insert_commits_first {
            (&inserter, &deleter)
        } else {
            (&deleter, &inserter)
        };
        first.execute("COMMIT").await?;
        let refused = second.execute("COMMIT").await;
        let error = refused.expect_err("the second commit must not succeed");
        assert!(error.is_retryable(), "{error}");
        assert_eq!(rows(&inserter, ORPHANS).await?, table(&[&["0"]]));
        let expected = if insert_commits_first {
            // The parent and its child stay.
            table(&[&["1", "1"]])
        } else {
            table(&[&["0", "0"]])
        };
        assert_eq!(
            rows(
                &inserter,
                "SELECT (SELECT count(*) FROM parent), (SELECT count(*) FROM child)"
            )
            .await?,
            expected,
            "insert commits first: {insert_commits_first}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_schema_with_foreign_keys_is_created_and_rolled_back_in_a_block() -> TestResult {
    let db = Database::open_memory().await?;
    let s = db.session();
    s.execute("BEGIN").await?;
    s.execute(SCHEMA).await?;
    s.execute("INSERT INTO parent VALUES (1, 'p'); INSERT INTO child VALUES (1, 1)")
        .await?;
    assert!(
        s.execute("INSERT INTO child VALUES (2, 2)").await.is_err(),
        "a missing parent inside the block"
    );
    s.execute("ROLLBACK").await?;
    assert!(
        rows(&s, "SELECT * FROM parent").await.is_err(),
        "rolled back"
    );
    // Again, committed this time, as a migration tool runs it.
    s.execute("BEGIN").await?;
    s.execute(SCHEMA).await?;
    s.execute("COMMIT").await?;
    s.execute("INSERT INTO parent VALUES (1, 'p'); INSERT INTO child VALUES (1, 1)")
        .await?;
    let refused = s.execute("DELETE FROM parent WHERE id = 2").await;
    assert!(refused.is_ok(), "nothing references 2: {refused:?}");
    s.execute("DELETE FROM parent WHERE id = 1").await?;
    assert_eq!(
        rows(&s, "SELECT count(*) FROM child").await?,
        table(&[&["0"]])
    );
    Ok(())
}

#[tokio::test]
async fn cascades_run_through_a_deep_chain_and_a_wide_parent() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = Database::open(dir.path()).await?;
        let s = db.session();
        s.execute(
            "CREATE TABLE node (id INT PRIMARY KEY, up INT REFERENCES node ON DELETE CASCADE);
             CREATE TABLE parent (id INT PRIMARY KEY, name TEXT);
             CREATE TABLE child (id INT PRIMARY KEY, parent_id INT REFERENCES parent ON DELETE CASCADE);
             INSERT INTO node VALUES (0, NULL);
             INSERT INTO node SELECT value, value - 1 FROM generate_series(1, 3000);
             INSERT INTO parent VALUES (1, 'wide'), (2, 'other');
             INSERT INTO child SELECT value, 1 + value % 2 FROM generate_series(1, 40000);",
        )
        .await?;
        // 3000 rounds of cascades, one level each.
        s.execute("DELETE FROM node WHERE id = 1").await?;
        // 20000 children of one parent, in one round.
        s.execute("DELETE FROM parent WHERE id = 1").await?;
    }
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    assert_eq!(
        rows(&s, "SELECT count(*), max(id) FROM node").await?,
        table(&[&["1", "0"]])
    );
    assert_eq!(
        rows(
            &s,
            "SELECT count(*), min(parent_id), max(parent_id) FROM child"
        )
        .await?,
        table(&[&["20000", "2", "2"]])
    );
    assert_eq!(rows(&s, ORPHANS).await?, table(&[&["0"]]));
    for index in ["node_up_idx", "child_parent_id_idx"] {
        let report = rows(&s, &format!("CHECK INDEX {index}")).await?;
        assert_eq!(report[0][6], "ok", "{index}: {report:?}");
    }
    Ok(())
}
