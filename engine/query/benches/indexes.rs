//! Index intersection against its alternatives, on the durable store and in memory.
//!
//! One table of `ROWDEX_BENCH_ROWS` rows (default 200 000) with three independently indexed
//! columns of known selectivity: `a` (10 %), `b` (1 %) and `c` (1 %). Each query runs with the
//! planner's own choice and with hints that force each alternative (full scan, each single index,
//! the intersection), so the output compares them side by side: keys read (point gets plus
//! entries scanned, counted by a metering store wrapper), scan pages opened (seeks) and the
//! median wall time, with the ratio to the full scan.
//!
//! Run with `cargo bench -p rowdex --bench indexes` (add `-- memory` or `-- fjall` for one
//! store only).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rowdex::{Database, Output, Session};
use rowdex_store::metered::{MeteredStore, ReadMeter};
use rowdex_store::{Durability, FjallStore, KvStore, MemoryStore};

const DEFAULT_ROWS: u64 = 200_000;
const INSERT_BATCH: u64 = 5_000;
const RUNS: usize = 5;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Two independent pseudo-random streams for the 1 % columns (splitmix64).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

async fn load(session: &Session, rows: u64) -> BenchResult<()> {
    session
        .execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, c BIGINT, pad TEXT);
             CREATE INDEX ia ON t (a);
             CREATE INDEX ib ON t (b);
             CREATE INDEX ic ON t (c);",
        )
        .await?;
    let mut start = 0;
    while start < rows {
        let end = (start + INSERT_BATCH).min(rows);
        let values: Vec<String> = (start..end)
            .map(|id| {
                format!(
                    "({id}, {}, {}, {}, 'payload payload payload {id}')",
                    id % 10,
                    mix(id) % 100,
                    mix(id ^ 0x5555) % 100
                )
            })
            .collect();
        session
            .execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .await?;
        start = end;
    }
    Ok(())
}

struct Measured {
    keys: u64,
    pages: u64,
    median: Duration,
    rows: usize,
    plan: String,
}

async fn measure(session: &Session, meter: &ReadMeter, sql: &str) -> BenchResult<Measured> {
    let explained = session.execute(&format!("EXPLAIN {sql}")).await?;
    let plan = match explained.into_iter().last() {
        Some(Output::Rows { batches, .. }) => batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).filter_map(move |r| rowdex::format::cell_text(b.column(0), r))
            })
            .collect::<Vec<_>>()
            .join(" | "),
        _ => String::new(),
    };
    let mut times = Vec::with_capacity(RUNS);
    let mut keys = 0;
    let mut pages = 0;
    let mut rows = 0;
    for _ in 0..RUNS {
        meter.reset();
        let started = Instant::now();
        let batches = session.query(sql).await?;
        times.push(started.elapsed());
        let counts = meter.counts();
        keys = counts.keys();
        pages = counts.pages;
        rows = batches.iter().map(|b| b.num_rows()).sum();
    }
    times.sort();
    Ok(Measured {
        keys,
        pages,
        median: times[RUNS / 2],
        rows,
        plan,
    })
}

async fn run_store(name: &str, store: Arc<dyn KvStore>, rows: u64) -> BenchResult<()> {
    let metered = Arc::new(MeteredStore::new(store));
    let meter = metered.meter();
    let db = Database::with_store(metered).await?;
    let session = db.session();
    let started = Instant::now();
    load(&session, rows).await?;
    println!(
        "\n## {name}: {rows} rows loaded with 3 indexes in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let queries = [
        (
            "a = 3 AND b = 7 (10% x 1%)",
            "a = 3 AND b = 7",
            vec!["ia", "ib"],
        ),
        (
            "b = 7 AND c = 13 (1% x 1%)",
            "b = 7 AND c = 13",
            vec!["ib", "ic"],
        ),
        (
            "a = 3 AND b = 7 AND c = 13",
            "a = 3 AND b = 7 AND c = 13",
            vec!["ia", "ib", "ic"],
        ),
        (
            "b BETWEEN 1 AND 3 AND c = 13 (range input)",
            "b BETWEEN 1 AND 3 AND c = 13",
            vec!["ib", "ic"],
        ),
    ];
    for (title, predicate, indexes) in queries {
        println!("\n{title}");
        println!(
            "  {:<24} {:>9} {:>7} {:>10} {:>8} {:>6}  plan",
            "strategy", "keys", "seeks", "median", "vs full", "rows"
        );
        let mut variants: Vec<(String, String)> = vec![
            ("planner's choice".to_string(), String::new()),
            ("full scan".to_string(), "/*+ NO_INDEX */".to_string()),
        ];
        for index in &indexes {
            variants.push((
                format!("single index {index}"),
                format!("/*+ INDEX(t {index}) */"),
            ));
        }
        variants.push((
            "intersection".to_string(),
            format!("/*+ INDEX_MERGE(t {}) */", indexes.join(" ")),
        ));
        let mut results = Vec::new();
        for (label, hint) in &variants {
            let sql = format!("SELECT {hint} * FROM t WHERE {predicate}");
            results.push((label.clone(), measure(&session, &meter, &sql).await?));
        }
        let full = results
            .iter()
            .find(|(label, _)| label == "full scan")
            .map_or(Duration::from_secs(1), |(_, m)| m.median);
        for (label, m) in &results {
            println!(
                "  {:<24} {:>9} {:>7} {:>8.2}ms {:>7.3}x {:>6}  {}",
                label,
                m.keys,
                m.pages,
                m.median.as_secs_f64() * 1000.0,
                m.median.as_secs_f64() / full.as_secs_f64(),
                m.rows,
                m.plan
            );
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let rows = std::env::var("ROWDEX_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_ROWS);
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if wanted("memory") {
        run_store("memory", Arc::new(MemoryStore::new()), rows).await?;
    }
    if wanted("fjall") {
        let dir = tempfile::tempdir()?;
        let store = FjallStore::open(dir.path(), Durability::default())?;
        run_store("fjall", Arc::new(store), rows).await?;
    }
    Ok(())
}
