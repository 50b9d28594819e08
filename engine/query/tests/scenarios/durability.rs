//! Data, keys and the catalog survive closing and reopening a durable database.

use crate::{TestResult, rows, table};

#[tokio::test]
async fn rows_and_catalog_survive_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = rowdex::Database::open(dir.path()).await?;
        let s = db.session();
        s.execute(
            "CREATE TABLE actions (user_id INT, ts BIGINT, action TEXT, PRIMARY KEY (user_id, ts DESC));
             CREATE TABLE hits (host VARCHAR(20) PRIMARY KEY, n INT) WITH (SALT_BUCKETS = 4);
             CREATE TABLE log (msg TEXT);
             INSERT INTO actions VALUES (1, 10, 'a'), (1, 20, 'b'), (2, 5, 'c');
             INSERT INTO hits VALUES ('h1', 1), ('h2', 2), ('h3', 3);
             INSERT INTO log VALUES ('first'), ('second');
             UPDATE actions SET action = 'B' WHERE user_id = 1 AND ts = 20;
             DELETE FROM hits WHERE host = 'h2';
             DROP TABLE IF EXISTS missing;",
        )
        .await?;
    }
    let db = rowdex::Database::open(dir.path()).await?;
    let s = db.session();
    assert_eq!(
        rows(&s, "SELECT * FROM actions WHERE user_id = 1").await?,
        table(&[&["1", "20", "B"], &["1", "10", "a"]])
    );
    assert_eq!(
        rows(&s, "SELECT * FROM hits ORDER BY host").await?,
        table(&[&["h1", "1"], &["h3", "3"]])
    );
    // The hidden row id continues after the largest stored one instead of overwriting rows.
    s.execute("INSERT INTO log VALUES ('third')").await?;
    assert_eq!(
        rows(&s, "SELECT msg FROM log").await?,
        table(&[&["first"], &["second"], &["third"]])
    );
    assert_eq!(
        rows(&s, "SHOW TABLES").await?,
        table(&[
            &["actions", "user_id ASC, ts DESC", "0"],
            &["hits", "host ASC", "4"],
            &["log", "_rowid ASC", "0"],
        ])
    );
    Ok(())
}

#[tokio::test]
async fn a_dropped_table_comes_back_empty() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = rowdex::Database::open(dir.path()).await?;
        let s = db.session();
        s.execute("CREATE TABLE t (a INT PRIMARY KEY); INSERT INTO t VALUES (1), (2); DROP TABLE t; CREATE TABLE t (a INT PRIMARY KEY); INSERT INTO t VALUES (3);")
            .await?;
    }
    let db = rowdex::Database::open(dir.path()).await?;
    assert_eq!(
        rows(&db.session(), "SELECT a FROM t").await?,
        table(&[&["3"]])
    );
    Ok(())
}
