//! Cursor paging (`Session::query_page`): every row once, in order, each key read once, and
//! pages that stay right while rows are written between them.

use std::sync::Arc;

use rowdex::Session;
use rowdex_store::MemoryStore;
use rowdex_store::metered::MeteredStore;

use crate::{TestResult, rows};

/// Every page's rows, as text, until the last page.
async fn all_pages(
    s: &Session,
    sql: &str,
    size: usize,
) -> Result<(Vec<Vec<String>>, usize), rowdex::Error> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = s.query_page(sql, size, cursor.as_deref()).await?;
        pages += 1;
        assert!(
            page.row_count() <= size,
            "a page of {} rows",
            page.row_count()
        );
        out.extend(crate::cells(&page.batches));
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok((out, pages)),
        }
    }
}

#[tokio::test]
async fn paging_100k_rows_by_cursor_reads_each_key_once() -> TestResult {
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = rowdex::Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    // The same rows in an unsalted table and in one salted over 4 buckets.
    for (table, salt) in [("ev", ""), ("evs", " WITH (SALT_BUCKETS = 4)")] {
        s.execute(&format!(
            "CREATE TABLE {table} (user_id BIGINT, ts BIGINT, id BIGINT, \
             PRIMARY KEY (user_id, ts DESC, id)){salt}"
        ))
        .await?;
        s.execute(&format!(
            "INSERT INTO {table} WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 \
             FROM n WHERE i < 99999) SELECT i % 10, i / 10, i FROM n"
        ))
        .await?;
    }
    // Unsalted, every key once; salted, each bucket's last small page reads a little past
    // what the merge takes from it.
    for (table, most_reads) in [("ev", 100_000), ("evs", 115_000)] {
        let sql = format!("SELECT user_id, ts, id FROM {table} ORDER BY user_id, ts DESC, id");
        meter.reset();
        let (paged, pages) = all_pages(&s, &sql, 1000).await?;
        let read = meter.counts().keys();
        println!(
            "{table}: {pages} pages, {read} keys read for {} rows",
            paged.len()
        );
        assert_eq!(paged.len(), 100_000);
        // 100 full pages and the empty one that says the end.
        assert_eq!(pages, 101);
        assert!(read <= most_reads, "{table}: paging read {read} keys");
        assert_eq!(paged, rows(&s, &sql).await?, "{table}: paged rows differ");
    }
    Ok(())
}

#[tokio::test]
async fn pages_follow_an_index_and_newest_first_keys() -> TestResult {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        // `kind` in a column family: pages read through that family's entries too.
        "CREATE TABLE a (user_id BIGINT, ts TIMESTAMP, id BIGINT, tags.kind TEXT, \
         PRIMARY KEY (user_id, ts DESC, id DESC)) WITH (SALT_BUCKETS = 8, SALT_ON = (user_id))",
    )
    .await?;
    s.execute("CREATE INDEX a_kind ON a (kind)").await?;
    s.execute("CREATE INDEX a_ts ON a (ts) WITH (SALT_BUCKETS = 4)")
        .await?;
    s.execute(
        "INSERT INTO a WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n \
         WHERE i < 999) SELECT i % 7, to_timestamp_seconds(1767225600 + i / 3 * 60), i, \
         CASE WHEN i % 3 = 0 THEN 'buy' ELSE 'view' END FROM n",
    )
    .await?;
    let cases = [
        // One user, newest first, in the key's order (one bucket).
        "SELECT ts, id FROM a WHERE user_id = 3 ORDER BY ts DESC, id DESC",
        // Oldest first: the same key read in reverse.
        "SELECT ts, id FROM a WHERE user_id = 3 ORDER BY ts, id",
        // Through the index on kind (entries in kind, then key order).
        "SELECT user_id, ts, id FROM a WHERE kind = 'buy'",
        // Every row, merged across the buckets.
        "SELECT user_id, ts, id FROM a",
        // The family alone drives the read, then with the row entries.
        "SELECT user_id, ts, kind FROM a WHERE user_id = 4 ORDER BY ts DESC, id DESC",
        "SELECT user_id, ts, id, kind FROM a",
        // A range of a salted index: its buckets merged into index order, forward and back.
        "SELECT ts, user_id, id FROM a WHERE ts >= TIMESTAMP '2026-01-01 02:00:00' ORDER BY ts",
        "SELECT ts, user_id, id FROM a WHERE ts < TIMESTAMP '2026-01-01 01:00:00' ORDER BY ts DESC",
    ];
    for sql in cases {
        for size in [1, 7, 50] {
            let (paged, _) = all_pages(&s, sql, size).await?;
            assert_eq!(paged, rows(&s, sql).await?, "{sql} by pages of {size}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn pages_stay_right_while_rows_are_written_between_them() -> TestResult {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute("CREATE TABLE f (ts BIGINT PRIMARY KEY, v TEXT)")
        .await?;
    s.execute("INSERT INTO f VALUES (10, 'a'), (20, 'b'), (30, 'c'), (40, 'd'), (50, 'e')")
        .await?;
    let sql = "SELECT ts FROM f ORDER BY ts DESC";
    let first = s.query_page(sql, 2, None).await?;
    let cursor = first.next.clone().ok_or("a full page has a next cursor")?;
    // A newer row (before the cursor) and an older one (after it) arrive, and one row ahead
    // goes away: OFFSET paging would repeat 40; the cursor does not.
    s.execute("INSERT INTO f VALUES (60, 'new'), (5, 'old')")
        .await?;
    s.execute("DELETE FROM f WHERE ts = 30").await?;
    let second = s.query_page(sql, 2, Some(&cursor)).await?;
    assert_eq!(
        crate::cells(&second.batches),
        vec![vec!["20".to_string()], vec!["10".to_string()]]
    );
    Ok(())
}

#[tokio::test]
async fn queries_that_cannot_be_paged_say_why() -> TestResult {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute("CREATE TABLE g (id BIGINT PRIMARY KEY, a INT, b INT)")
        .await?;
    s.execute("CREATE INDEX g_a ON g (a)").await?;
    s.execute("INSERT INTO g VALUES (1, 1, 1), (2, 1, 2), (3, 2, 1)")
        .await?;
    let refused = [
        ("SELECT id FROM g LIMIT 2", "LIMIT or OFFSET"),
        ("SELECT count(*) FROM g", "one table by key or index"),
        ("SELECT id FROM g ORDER BY b", "ORDER BY must follow"),
        ("INSERT INTO g VALUES (9, 9, 9)", "only a SELECT"),
        (
            "SELECT id FROM g /*+ INDEX_MERGE(g g_a g_a) */ WHERE a = 1",
            "",
        ),
    ];
    for (sql, message) in refused {
        match s.query_page(sql, 2, None).await {
            Err(e) => assert!(e.to_string().contains(message), "{sql}: {e}"),
            Ok(_) if message.is_empty() => {}
            Ok(_) => panic!("{sql} was paged"),
        }
    }
    let page = s.query_page("SELECT id FROM g", 2, None).await?;
    let cursor = page.next.ok_or("a full page has a next cursor")?;
    let err = s
        .query_page("SELECT id FROM g WHERE a = 1", 2, Some(&cursor))
        .await
        .err()
        .ok_or("another query's cursor was taken")?;
    assert!(matches!(err, rowdex::Error::CursorMismatch), "{err}");
    let err = s
        .query_page("SELECT id FROM g", 2, Some("01zz"))
        .await
        .err()
        .ok_or("a damaged cursor was taken")?;
    assert!(matches!(err, rowdex::Error::BadCursor), "{err}");
    // The table changed shape since the cursor was made.
    s.execute("CREATE INDEX g_b ON g (b)").await?;
    let err = s
        .query_page("SELECT id FROM g", 2, Some(&cursor))
        .await
        .err()
        .ok_or("a cursor from before an index was added was taken")?;
    assert!(matches!(err, rowdex::Error::CursorMismatch), "{err}");
    // Nothing was written by the refused INSERT.
    assert_eq!(
        rows(&s, "SELECT count(*) FROM g").await?,
        vec![vec!["3".to_string()]]
    );
    Ok(())
}
