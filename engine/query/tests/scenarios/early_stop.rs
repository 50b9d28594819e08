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

/// An IN list on the first key column with ORDER BY the next ones and a LIMIT: each value's
/// range is already in that order, so the ranges are read merged and the merge stops at the
/// limit (`merged` in EXPLAIN), reading a page or so per value instead of every row of each.
/// Random lists, bounds, directions and limits answer as DataFusion's sort of the same rows.
#[tokio::test]
async fn merged_range_scans_stop_at_the_limit_and_answer_as_a_sort() -> TestResult {
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = rowdex::Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE e (host TEXT, ts BIGINT, seq INT, v INT, PRIMARY KEY (host, ts DESC, seq))",
    )
    .await?;
    for host in 0..12 {
        let values: Vec<String> = (0..400)
            .map(|i| {
                // ts repeats across hosts; seq breaks the tie, so the order is total.
                let ts = (i * 7 + host * 3) % 1000;
                format!("('h{host}', {ts}, {}, {i})", host * 1000 + i)
            })
            .collect();
        s.execute(&format!("INSERT INTO e VALUES {}", values.join(", ")))
            .await?;
    }
    let sql = "SELECT host, ts, seq FROM e WHERE host IN ('h3', 'h7', 'h11') \
               ORDER BY ts DESC, seq LIMIT 5";
    let explained = format!("{:?}", rows(&s, &format!("EXPLAIN {sql}")).await?);
    assert!(explained.contains("] merged limit=5"), "{explained}");
    // The first run plans (counting the ranges); the second replays the choice.
    let merged = rows(&s, sql).await?;
    meter.reset();
    assert_eq!(rows(&s, sql).await?, merged);
    let read = meter.counts().keys();
    assert!(read <= 3 * 16 + 8, "the merge read {read} entries of 1,200");

    let mut sorted = db.session();
    sorted.set_executor(rowdex::Executor::DataFusion);
    assert_eq!(merged, rows(&sorted, sql).await?, "{sql}");
    let mut rng = crate::Rng(0x6d65_7267_6564_0001);
    let mut merged_plans = 0;
    for _ in 0..60 {
        let count = rng.int(2, 5);
        let hosts: Vec<String> = (0..count)
            .map(|_| format!("'h{}'", rng.int(0, 14)))
            .collect();
        let bound = match rng.next(3) {
            0 => String::new(),
            1 => format!(" AND ts < {}", rng.int(0, 1000)),
            _ => format!(" AND ts >= {}", rng.int(0, 1000)),
        };
        let (ts, seq) = match rng.next(2) {
            0 => ("ts DESC", "seq"),
            _ => ("ts", "seq DESC"),
        };
        let sql = format!(
            "SELECT host, ts, seq, v FROM e WHERE host IN ({}){bound} ORDER BY {ts}, {seq} LIMIT {}",
            hosts.join(", "),
            rng.int(1, 30)
        );
        let explained = format!("{:?}", rows(&s, &format!("EXPLAIN {sql}")).await?);
        merged_plans += usize::from(explained.contains("merged"));
        assert_eq!(rows(&s, &sql).await?, rows(&sorted, &sql).await?, "{sql}");
    }
    assert!(merged_plans >= 20, "only {merged_plans} of 60 read merged");
    Ok(())
}
