//! Column families: a query reads the entries of the families it needs and no others, every
//! write keeps a row's family entries in step (moves, deletes, drops), and expired rows stay
//! invisible whichever family a query reads.

use std::sync::Arc;
use std::time::Duration;

use rowdex::{Database, Executor, ManualClock};
use rowdex_catalog::keyspace;
use rowdex_store::metered::MeteredStore;
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, MemoryStore};

use crate::{TestResult, affected, rows, table};

const ROWS: u64 = 300;

/// A body of about a kilobyte per row in the default family, small columns in `meta`.
const DOCS: &str = "CREATE TABLE docs (id INT PRIMARY KEY, meta.title TEXT, meta.size INT, \
                    body TEXT, tags.tag TEXT)";

async fn load(session: &rowdex::Session) -> Result<(), rowdex::Error> {
    let body = "x".repeat(1000);
    let values: Vec<String> = (0..ROWS)
        .map(|i| format!("({i}, 't{i}', {}, '{body}{i}', 'g{}')", i % 50, i % 7))
        .collect();
    session
        .execute(&format!("INSERT INTO docs VALUES {}", values.join(", ")))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_query_reads_only_the_families_it_needs() -> TestResult {
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = Database::with_store(Arc::new(store)).await?;
    let mut s = db.session();
    s.execute(DOCS).await?;
    s.execute("CREATE INDEX docs_size ON docs (size)").await?;
    load(&s).await?;
    // (query, its answer's first row, at most this many keys read, at most this many bytes)
    let small = ROWS * 64;
    let cases: [(&str, Vec<String>, u64, u64); 6] = [
        // One family, every row: one entry per row, and none of the bodies.
        (
            "SELECT count(*), max(title) FROM docs WHERE title >= 't5'",
            vec!["55".into(), "t99".into()],
            ROWS,
            small,
        ),
        // Key columns only: the row entries (bodies included: they are the row).
        (
            "SELECT count(*) FROM docs",
            vec!["300".into()],
            ROWS,
            u64::MAX,
        ),
        // A point get of one family.
        (
            "SELECT title, tag FROM docs WHERE id = 7",
            vec!["t7".into(), "g0".into()],
            2,
            200,
        ),
        // Through an index: entries, then the row's `meta` entry only.
        (
            "SELECT /*+ INDEX(docs docs_size) */ id, title FROM docs WHERE size = 3 ORDER BY id",
            vec!["3".into(), "t3".into()],
            12,
            12 * 64,
        ),
        // Two small families.
        (
            "SELECT tag, count(*) FROM docs WHERE title LIKE 't1%' GROUP BY tag ORDER BY tag",
            vec!["g0".into(), "15".into()],
            2 * ROWS,
            2 * small,
        ),
        // Every family.
        (
            "SELECT sum(length(body)), count(title), count(tag) FROM docs",
            vec!["300790".into(), "300".into(), "300".into()],
            3 * ROWS,
            u64::MAX,
        ),
    ];
    for executor in [Executor::Auto, Executor::DataFusion] {
        s.set_executor(executor);
        for (sql, first, max_keys, max_bytes) in &cases {
            meter.reset();
            let answer = rows(&s, sql).await?;
            assert_eq!(answer.first(), Some(first), "{executor:?}: {sql}");
            let read = meter.counts();
            assert!(
                read.keys() <= *max_keys && read.bytes <= *max_bytes,
                "{executor:?}: {sql} read {} keys and {} bytes, expected at most {max_keys} \
                 and {max_bytes}",
                read.keys(),
                read.bytes
            );
        }
    }
    Ok(())
}

/// How many row entries and family entries the store holds (of every table: the tests that
/// count have one).
async fn stored_keys(store: &dyn KvRead) -> Result<(usize, usize), rowdex::Error> {
    let count = |tag: u8| async move {
        let page = store
            .scan_page(&KeyRange::prefix(&[tag]), Direction::Forward, 100_000)
            .await?;
        Ok::<_, rowdex::Error>(page.entries.len())
    };
    Ok((
        count(keyspace::TABLE_DATA).await?,
        count(keyspace::FAMILY_DATA).await?,
    ))
}

#[tokio::test]
async fn writes_keep_every_family_entry_in_step() -> TestResult {
    let store: Arc<dyn KvStore> = Arc::new(MemoryStore::new());
    let db = Database::with_store(store.clone()).await?;
    let s = db.session();
    s.execute(&format!("{DOCS} WITH (SALT_BUCKETS = 3)"))
        .await?;
    s.execute("CREATE INDEX docs_tag ON docs (tag) INCLUDE (title)")
        .await?;
    load(&s).await?;
    assert_eq!(stored_keys(store.as_ref()).await?, (300, 600));

    // One family changes, the others keep their values.
    affected(&s, "UPDATE docs SET tag = 'moved' WHERE id < 10").await?;
    // Key moves carry every family along.
    affected(&s, "UPDATE docs SET id = id + 1000 WHERE id >= 290").await?;
    affected(&s, "DELETE FROM docs WHERE id BETWEEN 100 AND 199").await?;
    s.execute("INSERT OR REPLACE INTO docs (id, title) VALUES (5, 'new')")
        .await?;
    assert_eq!(stored_keys(store.as_ref()).await?, (200, 400));
    assert_eq!(
        rows(
            &s,
            "SELECT id, title, size, length(body), tag FROM docs WHERE id IN (4, 5, 1290) \
             ORDER BY id"
        )
        .await?,
        table(&[
            &["4", "t4", "4", "1001", "moved"],
            &["5", "new", "NULL", "NULL", "NULL"],
            &["1290", "t290", "40", "1003", "g3"],
        ])
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM docs WHERE tag = 'moved'").await?,
        table(&[&["9"]])
    );
    let check = rows(&s, "CHECK TABLE docs").await?;
    assert!(
        check
            .iter()
            .all(|r| r.last().is_some_and(|status| status == "ok")),
        "{check:?}"
    );

    s.execute("DROP TABLE docs").await?;
    assert_eq!(stored_keys(store.as_ref()).await?, (0, 0));
    Ok(())
}

#[tokio::test]
async fn families_survive_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let db = Database::open(dir.path()).await?;
        let s = db.session();
        s.execute(DOCS).await?;
        load(&s).await?;
    }
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    assert_eq!(
        rows(&s, "SELECT title, size, tag FROM docs WHERE id = 299").await?,
        table(&[&["t299", "49", "g5"]])
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM docs WHERE tag = 'g1'").await?,
        table(&[&["43"]])
    );
    Ok(())
}

#[tokio::test]
async fn expired_rows_are_invisible_through_any_one_family() -> TestResult {
    let db = Database::open_memory().await?;
    let clock = Arc::new(ManualClock::new(1_704_067_200_000_000));
    db.set_clock(clock.clone());
    let mut s = db.session();
    s.execute("CREATE TABLE ev (id INT PRIMARY KEY, a.x INT, b.y INT, z INT) WITH (TTL = 60)")
        .await?;
    s.execute("INSERT INTO ev VALUES (1, 1, 1, 1), (2, 2, 2, 2)")
        .await?;
    clock.advance(Duration::from_secs(30));
    // Rewriting one family's column stamps every entry of the row.
    s.execute("UPDATE ev SET x = 10 WHERE id = 2").await?;
    clock.advance(Duration::from_secs(40));
    for executor in [Executor::Auto, Executor::DataFusion] {
        s.set_executor(executor);
        for sql in [
            "SELECT id FROM ev",
            "SELECT id, x FROM ev",
            "SELECT id, y FROM ev",
            "SELECT id, z FROM ev",
            "SELECT id FROM ev WHERE id IN (1, 2)",
        ] {
            let answer = rows(&s, sql).await?;
            assert_eq!(
                answer.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
                ["2"],
                "{executor:?}: {sql}"
            );
        }
    }
    assert_eq!(affected(&s, "PURGE ev").await?, 1);
    Ok(())
}
