//! A table's schema evolving under load: ADD COLUMN with a default, RENAME COLUMN, DROP COLUMN
//! and RENAME TO while another session keeps inserting. Every acknowledged insert is there
//! afterwards, old rows read the added column's default and new rows what they wrote, the
//! indexes check clean, both executors agree, and a reopen changes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rowdex::{Database, Executor};

use crate::{TestResult, rows, table};

const INITIAL: u64 = 300;

/// Inserts rows `INITIAL..` until told to stop, into whatever the table is called now (it
/// follows a RENAME TO); returns the ids acknowledged.
async fn keep_inserting(db: Database, stop: Arc<AtomicBool>, acknowledged: Arc<AtomicU64>) {
    let session = db.session();
    let mut name = "events";
    let mut next = INITIAL;
    while !stop.load(Ordering::SeqCst) {
        let sql = format!(
            "INSERT INTO {name} (id, kind) VALUES ({next}, {})",
            next % 7
        );
        match session.execute(&sql).await {
            Ok(_) => {
                acknowledged.fetch_add(1, Ordering::SeqCst);
                next += 1;
            }
            Err(rowdex::Error::TableNotFound { .. }) if name == "events" => name = "journal",
            // A conflict with a schema change that outlasted the statement's retries: the row
            // was not written, and is offered again.
            Err(error) if error.is_retryable() => {}
            Err(error) => panic!("insert {next} failed: {error}"),
        }
        tokio::task::yield_now().await;
    }
}

async fn answers(db: &Database, executor: Executor) -> Result<Vec<Vec<String>>, rowdex::Error> {
    let mut session = db.session();
    session.set_executor(executor);
    let mut all = rows(
        &session,
        "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM journal",
    )
    .await?;
    all.extend(
        rows(
            &session,
            "SELECT source, count(*) FROM journal GROUP BY source ORDER BY source",
        )
        .await?,
    );
    all.extend(rows(&session, "SELECT count(*) FROM journal WHERE kind = 3").await?);
    all.extend(
        rows(
            &session,
            "SELECT id, kind, source FROM journal WHERE id < 3 ORDER BY id",
        )
        .await?,
    );
    Ok(all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_change_while_another_session_writes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    let session = db.session();
    session
        .execute(
            "CREATE TABLE events (id INT PRIMARY KEY, kind INT, note TEXT, payload TEXT);
             CREATE INDEX events_kind ON events (kind);",
        )
        .await?;
    let values: Vec<String> = (0..INITIAL)
        .map(|i| format!("({i}, {}, 'n{i}', 'p{i}')", i % 7))
        .collect();
    session
        .execute(&format!("INSERT INTO events VALUES {}", values.join(", ")))
        .await?;

    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn(keep_inserting(
        db.clone(),
        stop.clone(),
        acknowledged.clone(),
    ));
    let changes = [
        "ALTER TABLE events ADD COLUMN source TEXT DEFAULT 'import'",
        "ALTER TABLE events RENAME COLUMN note TO remark",
        "ALTER TABLE events DROP COLUMN payload",
        "ALTER TABLE events RENAME TO journal",
        "ALTER TABLE journal ADD COLUMN seen INT",
    ];
    for change in changes {
        // Let some inserts land between the changes.
        let before = acknowledged.load(Ordering::SeqCst);
        while acknowledged.load(Ordering::SeqCst) < before + 20 {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        session.execute(change).await?;
    }
    let before = acknowledged.load(Ordering::SeqCst);
    while acknowledged.load(Ordering::SeqCst) < before + 20 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    stop.store(true, Ordering::SeqCst);
    writer.await?;
    let written = INITIAL + acknowledged.load(Ordering::SeqCst);
    assert!(
        written >= INITIAL + 100,
        "the writer wrote during the changes"
    );

    // Old rows kept their values under the new names; the dropped column is gone.
    assert_eq!(
        rows(
            &session,
            "SELECT id, kind, remark FROM journal WHERE id IN (5, 6) ORDER BY id"
        )
        .await?,
        table(&[&["5", "5", "n5"], &["6", "6", "n6"]])
    );
    let payload = session.execute("SELECT payload FROM journal").await;
    assert!(payload.is_err(), "{payload:?}");
    for row in rows(&session, "CHECK TABLE journal").await? {
        assert_eq!(row.last().map(String::as_str), Some("ok"), "{row:?}");
    }
    let expected = {
        let kind_3 = (0..written).filter(|i| i % 7 == 3).count();
        table(&[
            &[
                &written.to_string(),
                &written.to_string(),
                "0",
                &(written - 1).to_string(),
            ],
            // Every row, before and after the ADD COLUMN, reads its default.
            &["import", &written.to_string()],
            &[&kind_3.to_string()],
            &["0", "0", "import"],
            &["1", "1", "import"],
            &["2", "2", "import"],
        ])
    };
    let native = answers(&db, Executor::Auto).await?;
    assert_eq!(native, expected);
    assert_eq!(answers(&db, Executor::DataFusion).await?, expected);
    drop(session);
    drop(db);

    let reopened = Database::open(dir.path()).await?;
    assert_eq!(answers(&reopened, Executor::Auto).await?, expected);
    assert_eq!(answers(&reopened, Executor::DataFusion).await?, expected);
    Ok(())
}
