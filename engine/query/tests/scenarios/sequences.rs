//! Sequences under concurrency and across reopens: sessions inserting into one SERIAL table at
//! once never get the same value, and a reopened database goes on past every value handed out
//! before (leaving the gap of the range it had not used).

use std::collections::HashSet;

use rowdex::Database;

use crate::{TestResult, rows};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_and_reopens_never_reuse_a_value() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    db.session()
        .execute("CREATE TABLE log (id BIGSERIAL, writer INT, n INT)")
        .await?;
    let mut writers = Vec::new();
    for writer in 0..4 {
        let session = db.session();
        writers.push(tokio::spawn(async move {
            for n in 0..50 {
                let sql =
                    format!("INSERT INTO log (writer, n) VALUES ({writer}, {n}), ({writer}, {n})");
                session.execute(&sql).await?;
            }
            Ok::<_, rowdex::Error>(())
        }));
    }
    for writer in writers {
        writer.await??;
    }
    let session = db.session();
    let ids = rows(&session, "SELECT id FROM log").await?;
    let distinct: HashSet<&String> = ids.iter().map(|r| &r[0]).collect();
    assert_eq!((ids.len(), distinct.len()), (400, 400));
    let largest: i64 = rows(&session, "SELECT max(id) FROM log").await?[0][0].parse()?;
    drop(session);
    drop(db);

    let reopened = Database::open(dir.path()).await?;
    let session = reopened.session();
    let after = rows(
        &session,
        "INSERT INTO log (writer, n) VALUES (9, 9) RETURNING id",
    )
    .await?;
    let after: i64 = after[0][0].parse()?;
    assert!(after > largest, "{after} after {largest}");
    assert_eq!(
        rows(&session, "SELECT currval('log_id_seq')").await?[0][0],
        after.to_string()
    );
    Ok(())
}
