//! Schema changes inside a transaction block: CREATE/ALTER/DROP TABLE, CREATE/DROP INDEX,
//! views and sequences are written in the block's own transaction, so the block sees them at
//! once, other sessions only once it commits, and ROLLBACK (or a conflict at COMMIT) leaves
//! nothing of them: no definition, no row, no index entry, no sequence. A commit survives a
//! reopen; a block open when the process stops does not.

use std::sync::Arc;

use rowdex::{Database, Error, Session};
use rowdex_store::{Direction, KeyRange, KvStore, MemoryStore};

use crate::{TestResult, rows, table};

async fn accounts(db: &Database) -> Result<Session, Error> {
    let s = db.session();
    s.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, owner TEXT NOT NULL, bal INT NOT NULL);
         INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 200), (3, 'cy', 300);",
    )
    .await?;
    Ok(s)
}

/// The schema changes of one migration, run inside `s`'s open block.
async fn migrate(s: &Session) -> Result<(), Error> {
    s.execute(
        "CREATE TABLE notes (id SERIAL PRIMARY KEY, acct INT, body TEXT);
         INSERT INTO notes (acct, body) VALUES (1, 'first'), (2, 'second');
         CREATE INDEX notes_acct ON notes (acct);
         ALTER TABLE acct ADD COLUMN tier TEXT DEFAULT 'basic';
         CREATE INDEX acct_bal ON acct (bal);
         CREATE VIEW rich AS SELECT id FROM acct WHERE bal > 150;",
    )
    .await?;
    Ok(())
}

/// What the migration leaves, as `s` sees it.
async fn migrated(s: &Session) -> TestResult {
    assert_eq!(
        rows(s, "SELECT id, acct, body FROM notes ORDER BY id").await?,
        table(&[&["1", "1", "first"], &["2", "2", "second"]])
    );
    assert_eq!(
        rows(s, "SELECT id, tier FROM acct WHERE bal = 200").await?,
        table(&[&["2", "basic"]])
    );
    assert_eq!(
        rows(s, "SELECT id FROM rich ORDER BY id").await?,
        table(&[&["2"], &["3"]])
    );
    let plan = rows(s, "EXPLAIN SELECT id FROM acct WHERE bal = 200").await?;
    assert!(format!("{plan:?}").contains("acct_bal"), "{plan:?}");
    // CHECK INDEX runs outside blocks only.
    for index in ["notes_acct", "acct_bal"]
        .iter()
        .filter(|_| !s.in_transaction())
    {
        let report = rows(s, &format!("CHECK INDEX {index}")).await?;
        assert_eq!(report[0][3..], ["0", "0", "0", "ok"], "{report:?}");
    }
    Ok(())
}

/// Nothing of the migration, as `s` sees it.
async fn not_migrated(s: &Session) -> TestResult {
    assert!(matches!(
        s.execute("SELECT count(*) FROM notes").await,
        Err(Error::TableNotFound { .. })
    ));
    assert!(rows(s, "SELECT tier FROM acct").await.is_err());
    assert!(rows(s, "SELECT id FROM rich").await.is_err());
    assert!(rows(s, "CHECK INDEX acct_bal").await.is_err());
    assert_eq!(
        rows(s, "SELECT id, owner, bal FROM acct ORDER BY id").await?,
        table(&[
            &["1", "ann", "100"],
            &["2", "bob", "200"],
            &["3", "cy", "300"]
        ])
    );
    Ok(())
}

#[tokio::test]
async fn a_block_sees_its_schema_changes_and_others_see_them_once_committed() -> TestResult {
    let dir = tempfile::tempdir()?;
    for db in [
        Database::open_memory().await?,
        Database::open(dir.path()).await?,
    ] {
        let s1 = accounts(&db).await?;
        let s2 = db.session();
        s1.execute("BEGIN").await?;
        migrate(&s1).await?;
        migrated(&s1).await?;
        not_migrated(&s2).await?;
        s1.execute("COMMIT").await?;
        migrated(&s2).await?;
        // The sequence behind SERIAL goes on from what the block took.
        s2.execute("INSERT INTO notes (acct, body) VALUES (3, 'third')")
            .await?;
        assert_eq!(
            rows(&s2, "SELECT id FROM notes WHERE body = 'third'").await?,
            table(&[&["3"]])
        );
    }
    Ok(())
}

#[tokio::test]
async fn rollback_leaves_nothing_of_a_blocks_schema_changes() -> TestResult {
    let store = Arc::new(MemoryStore::new());
    let db = Database::with_store(store.clone()).await?;
    let s = accounts(&db).await?;
    let before = entries(store.as_ref()).await?;
    s.execute("BEGIN").await?;
    migrate(&s).await?;
    s.execute("DROP TABLE acct").await?;
    s.execute("ROLLBACK").await?;
    not_migrated(&s).await?;
    assert_eq!(
        entries(store.as_ref()).await?,
        before,
        "the store as before"
    );
    // The names are free again, the sequence's among them.
    s.execute("BEGIN").await?;
    migrate(&s).await?;
    s.execute("COMMIT").await?;
    migrated(&s).await?;
    Ok(())
}

#[tokio::test]
async fn a_savepoint_undoes_the_schema_changes_after_it() -> TestResult {
    let db = Database::open_memory().await?;
    let s = accounts(&db).await?;
    s.execute(
        "BEGIN; CREATE TABLE kept (id INT PRIMARY KEY); SAVEPOINT sp;
         CREATE TABLE undone (id INT PRIMARY KEY); ALTER TABLE kept ADD COLUMN v INT;
         DROP TABLE acct; ROLLBACK TO SAVEPOINT sp;
         INSERT INTO kept VALUES (1); COMMIT",
    )
    .await?;
    assert_eq!(rows(&s, "SELECT * FROM kept").await?, table(&[&["1"]]));
    assert!(matches!(
        s.execute("SELECT * FROM undone").await,
        Err(Error::TableNotFound { .. })
    ));
    assert_eq!(
        rows(&s, "SELECT count(*) FROM acct").await?,
        table(&[&["3"]])
    );
    // A failed schema change inside the block is undone alone.
    s.execute("BEGIN; CREATE TABLE t (id INT PRIMARY KEY)")
        .await?;
    assert!(
        s.execute("CREATE INDEX t_missing ON t (nope)")
            .await
            .is_err()
    );
    s.execute("CREATE INDEX t_id2 ON t (id); COMMIT").await?;
    assert_eq!(
        rows(&s, "SHOW INDEXES FROM t").await?.len(),
        1,
        "only the index that built"
    );
    Ok(())
}

#[tokio::test]
async fn a_write_committed_meanwhile_makes_the_blocks_schema_change_conflict() -> TestResult {
    let db = Database::open_memory().await?;
    let s1 = accounts(&db).await?;
    let s2 = db.session();
    // The index build read every row of acct: a row written since fails the block's COMMIT,
    // which then leaves nothing.
    s1.execute("BEGIN").await?;
    migrate(&s1).await?;
    s2.execute("INSERT INTO acct VALUES (4, 'dee', 400)")
        .await?;
    let refused = s1.execute("COMMIT").await;
    assert!(
        matches!(refused, Err(Error::TransactionConflict)),
        "{refused:?}"
    );
    s2.execute("DELETE FROM acct WHERE id = 4").await?;
    not_migrated(&s1).await?;
    // Two blocks creating one table: the second to commit fails.
    s1.execute("BEGIN; CREATE TABLE x (id INT PRIMARY KEY); INSERT INTO x VALUES (1)")
        .await?;
    s2.execute("BEGIN; CREATE TABLE x (id INT PRIMARY KEY); INSERT INTO x VALUES (2)")
        .await?;
    s2.execute("COMMIT").await?;
    assert!(matches!(
        s1.execute("COMMIT").await,
        Err(Error::TransactionConflict)
    ));
    assert_eq!(rows(&s1, "SELECT id FROM x").await?, table(&[&["2"]]));
    Ok(())
}

#[tokio::test]
async fn committed_schema_changes_survive_reopen_and_an_open_block_does_not() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = Database::open(dir.path()).await?;
        let s = accounts(&db).await?;
        s.execute("BEGIN").await?;
        migrate(&s).await?;
        s.execute("COMMIT").await?;
        let open = db.session();
        open.execute("BEGIN; DROP TABLE notes; CREATE TABLE gone (id INT PRIMARY KEY)")
            .await?;
        // Closed with that block still open.
    }
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    migrated(&s).await?;
    assert!(matches!(
        s.execute("SELECT * FROM gone").await,
        Err(Error::TableNotFound { .. })
    ));
    Ok(())
}

#[tokio::test]
async fn a_committed_drop_deletes_the_tables_entries() -> TestResult {
    let store = Arc::new(MemoryStore::new());
    let db = Database::with_store(store.clone()).await?;
    let s = accounts(&db).await?;
    let empty = entries(store.as_ref()).await?;
    s.execute("BEGIN").await?;
    migrate(&s).await?;
    s.execute("COMMIT").await?;
    let with_notes = entries(store.as_ref()).await?;
    assert!(with_notes.0 > empty.0 && with_notes.1 > empty.1);
    s.execute("BEGIN; DROP TABLE notes; DROP INDEX acct_bal; COMMIT")
        .await?;
    let after = entries(store.as_ref()).await?;
    // acct's rows and entries stay; notes' rows and both indexes' entries are gone.
    assert_eq!(after.0, empty.0, "row entries");
    assert_eq!(after.1, 0, "index entries");
    Ok(())
}

/// How many row entries and index entries the store holds.
async fn entries(store: &dyn KvStore) -> Result<(usize, usize), Error> {
    let view = store.snapshot();
    let count = |tag: u8| {
        let view = view.clone();
        async move {
            let page = view
                .scan_page(&KeyRange::prefix(&[tag]), Direction::Forward, 100_000)
                .await?;
            Ok::<_, Error>(page.entries.len())
        }
    };
    Ok((
        count(rowdex_catalog::keyspace::TABLE_DATA).await?,
        count(rowdex_catalog::keyspace::INDEX_DATA).await?,
    ))
}
