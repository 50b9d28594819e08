//! The memory budget (`Database::set_memory_budget`) at work: an intersection input out of
//! primary-key order that outgrows it filters the looked-up rows instead of being buffered,
//! and a sort without a LIMIT estimated past it is left to DataFusion's sort. Each case gives
//! the same answer as the unbudgeted plan and the primary-key plan, and shows by the entries
//! read (or the plan) that the budget changed what ran.

use std::sync::Arc;

use rowdex::Executor;
use rowdex_store::MemoryStore;
use rowdex_store::metered::MeteredStore;

use crate::{TestResult, rows};

const ROWS: i64 = 20_000;

async fn loaded() -> Result<(rowdex::Database, Arc<rowdex_store::metered::ReadMeter>), rowdex::Error>
{
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = rowdex::Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, v INT)")
        .await?;
    let values: Vec<String> = (0..ROWS)
        .map(|id| {
            format!(
                "({id}, {}, {}, {})",
                id % 10,
                (id * 7919) % ROWS,
                (id * 31) % 997
            )
        })
        .collect();
    for chunk in values.chunks(2_000) {
        s.execute(&format!("INSERT INTO t VALUES {}", chunk.join(",")))
            .await?;
    }
    s.execute("CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b)")
        .await?;
    Ok((db, meter))
}

#[tokio::test]
async fn an_intersection_input_past_the_budget_filters_rows_instead_of_buffering() -> TestResult {
    let (db, meter) = loaded().await?;
    let s = db.session();
    let half = ROWS / 2;
    // ib's range is out of primary-key order: buffered whole, or past the budget, a filter.
    for (select, covering) in [("id, b", false), ("id", true)] {
        let forced = format!(
            "SELECT /*+ INDEX_MERGE(t ia ib) */ {select} FROM t WHERE a = 3 AND b < {half} ORDER BY id"
        );
        let plain = format!(
            "SELECT /*+ NO_INDEX */ {select} FROM t WHERE a = 3 AND b < {half} ORDER BY id"
        );
        let expected = rows(&s, &plain).await?;
        assert!(expected.len() > 500, "{expected:?}");
        let explained = format!("{:?}", rows(&s, &format!("EXPLAIN {forced}")).await?);
        assert!(
            explained.contains("INDEX INTERSECTION") && explained.contains("covering") == covering,
            "{explained}"
        );

        db.set_memory_budget(64 << 20);
        meter.reset();
        assert_eq!(rows(&s, &forced).await?, expected, "{forced}, buffered");
        let buffered = meter.counts().keys();
        assert!(
            buffered >= half as u64,
            "the whole of ib's range is read: {buffered}"
        );

        db.set_memory_budget(1_000);
        meter.reset();
        assert_eq!(
            rows(&s, &forced).await?,
            expected,
            "{forced}, past the budget"
        );
        let filtered = meter.counts().keys();
        // ia's 2,000 entries, their rows, and the page of ib read before the budget ran out.
        assert!(
            filtered < buffered / 2,
            "past the budget ib is not read whole: {filtered} entries against {buffered}"
        );
    }

    // Both inputs out of primary-key order and past the budget: the table in key order, both
    // inputs as filters.
    let both = format!(
        "SELECT /*+ INDEX_MERGE(t ia ib) */ id FROM t WHERE a >= 3 AND a < 5 AND b < {half} ORDER BY id LIMIT 50"
    );
    let plain = format!(
        "SELECT /*+ NO_INDEX */ id FROM t WHERE a >= 3 AND a < 5 AND b < {half} ORDER BY id LIMIT 50"
    );
    let expected = rows(&s, &plain).await?;
    assert_eq!(expected.len(), 50);
    db.set_memory_budget(64 << 20);
    assert_eq!(rows(&s, &both).await?, expected);
    db.set_memory_budget(1_000);
    assert_eq!(rows(&s, &both).await?, expected);
    Ok(())
}

#[tokio::test]
async fn a_sort_without_limit_past_the_budget_is_left_to_datafusion() -> TestResult {
    let (db, _) = loaded().await?;
    let mut native = db.session();
    native.set_executor(Executor::Auto);
    let mut datafusion = db.session();
    datafusion.set_executor(Executor::DataFusion);
    let sql = "SELECT id, v FROM t WHERE a = 3 ORDER BY v, id";
    let expected = rows(&datafusion, sql).await?;
    assert_eq!(expected.len(), (ROWS / 10) as usize);

    let explained = format!("{:?}", rows(&native, &format!("EXPLAIN {sql}")).await?);
    assert!(explained.contains("then sorted by v, id"), "{explained}");
    assert_eq!(rows(&native, sql).await?, expected);

    // 2,000 rows of four columns are past 10 kB: DataFusion's sort (which spills) runs it,
    // over the same scan (EXPLAIN shows DataFusion's scans, without the native sort).
    db.set_memory_budget(10_000);
    let explained = format!("{:?}", rows(&native, &format!("EXPLAIN {sql}")).await?);
    assert!(
        !explained.contains("then sorted by") && explained.contains("INDEX SCAN t using ia"),
        "{explained}"
    );
    assert_eq!(rows(&native, sql).await?, expected);
    // Under a LIMIT the native top-k holds a few rows whatever the budget.
    let limited = format!("{sql} LIMIT 5");
    let explained = format!("{:?}", rows(&native, &format!("EXPLAIN {limited}")).await?);
    assert!(
        explained.contains("then sorted by v, id limit=5"),
        "{explained}"
    );
    assert_eq!(rows(&native, &limited).await?, expected[..5].to_vec());
    Ok(())
}

#[tokio::test]
async fn a_union_arm_past_the_budget_reads_the_table_and_checks_the_or() -> TestResult {
    let (db, meter) = loaded().await?;
    let s = db.session();
    let cut = ROWS / 4;
    // ib's range is out of primary-key order: buffered and sorted, or past the budget, the
    // union reads the table and checks the whole OR on each row.
    for (select, covering) in [("id, b", false), ("id", true)] {
        let forced = format!(
            "SELECT /*+ INDEX_MERGE(t ia ib) */ {select} FROM t WHERE a = 3 OR b < {cut} ORDER BY id"
        );
        let plain =
            format!("SELECT /*+ NO_INDEX */ {select} FROM t WHERE a = 3 OR b < {cut} ORDER BY id");
        let expected = rows(&s, &plain).await?;
        assert!(expected.len() > (cut as usize), "{}", expected.len());
        let explained = format!("{:?}", rows(&s, &format!("EXPLAIN {forced}")).await?);
        assert!(
            explained.contains("INDEX UNION t using ia [a = 3] OR ib [b < 5000]")
                && explained.contains("covering") == covering,
            "{explained}"
        );

        db.set_memory_budget(64 << 20);
        meter.reset();
        assert_eq!(rows(&s, &forced).await?, expected, "{forced}, buffered");
        let buffered = meter.counts().keys();

        db.set_memory_budget(1_000);
        meter.reset();
        assert_eq!(
            rows(&s, &forced).await?,
            expected,
            "{forced}, past the budget"
        );
        let scanned = meter.counts().keys();
        // Within the budget: ia's and ib's ranges (and a lookup per row), less than the
        // table; past it, the table once (after the page of ib read before the budget ran out).
        assert!(
            buffered < ROWS as u64 && scanned >= ROWS as u64,
            "past the budget the table is read instead: {scanned} entries against {buffered}"
        );
    }
    Ok(())
}
