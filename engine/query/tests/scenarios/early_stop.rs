//! LIMIT and key access read only what they need, whatever the table size.

use std::sync::Arc;

use rowdex_store::MemoryStore;
use rowdex_store::metered::MeteredStore;

use crate::{TestResult, rows, table};

#[tokio::test]
async fn key_access_and_limits_read_few_entries_of_a_large_table() -> TestResult {
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = rowdex::Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE e (user_id INT, ts BIGINT, payload TEXT, PRIMARY KEY (user_id, ts DESC))",
    )
    .await?;
    for user in 0..20 {
        let values: Vec<String> = (0..500)
            .map(|ts| format!("({user}, {ts}, 'p{ts}')"))
            .collect();
        s.execute(&format!("INSERT INTO e VALUES {}", values.join(", ")))
            .await?;
    }
    let cases: [(&str, Vec<Vec<String>>, u64); 4] = [
        (
            "SELECT ts FROM e WHERE user_id = 7 AND ts = 123",
            table(&[&["123"]]),
            1,
        ),
        (
            "SELECT ts FROM e WHERE user_id = 7 ORDER BY ts DESC LIMIT 3",
            table(&[&["499"], &["498"], &["497"]]),
            20,
        ),
        (
            "SELECT ts FROM e WHERE user_id = 7 ORDER BY ts LIMIT 2",
            table(&[&["0"], &["1"]]),
            20,
        ),
        (
            "SELECT ts FROM e WHERE user_id = 7 AND ts < 100 ORDER BY ts DESC LIMIT 2 OFFSET 10",
            table(&[&["89"], &["88"]]),
            20,
        ),
    ];
    for (sql, expected, max_reads) in cases {
        meter.reset();
        assert_eq!(rows(&s, sql).await?, expected, "{sql}");
        let read = meter.counts().keys();
        assert!(
            read <= max_reads,
            "{sql} read {read} entries, expected at most {max_reads}"
        );
    }
    Ok(())
}
