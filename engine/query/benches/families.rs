//! Column families against one wide row, on the durable store and in memory.
//!
//! Two tables hold the same `ROWDEX_BENCH_ROWS` rows (default 100 000): `wide`, whose row entry
//! holds every column, and `split`, which keeps the small columns (`title`, `size`) in family
//! `meta` and a kilobyte `body` in the default family. Each query runs on both; the output
//! gives the keys and bytes read (counted by a metering store wrapper), the median wall time
//! and the ratio of `split` to `wide`. The load time shows what the second entry per row costs
//! writes.
//!
//! Run with `cargo bench -p rowdex --bench families` (add `-- memory` or `-- fjall` for one
//! store only).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rowdex::{Database, Session};
use rowdex_store::metered::{MeteredStore, ReadMeter};
use rowdex_store::{Durability, FjallStore, KvStore, MemoryStore};

const DEFAULT_ROWS: u64 = 100_000;
const INSERT_BATCH: u64 = 2_000;
const RUNS: usize = 5;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

const TABLES: [(&str, &str); 2] = [
    (
        "wide",
        "CREATE TABLE wide (id BIGINT PRIMARY KEY, title TEXT, size BIGINT, body TEXT)",
    ),
    (
        "split",
        "CREATE TABLE split (id BIGINT PRIMARY KEY, meta.title TEXT, meta.size BIGINT, body TEXT)",
    ),
];

/// Loads `table`; returns the time it took.
async fn load(session: &Session, table: &str, ddl: &str, rows: u64) -> BenchResult<Duration> {
    session.execute(ddl).await?;
    let body = "b".repeat(1000);
    let started = Instant::now();
    let mut start = 0;
    while start < rows {
        let end = (start + INSERT_BATCH).min(rows);
        let values: Vec<String> = (start..end)
            .map(|id| format!("({id}, 'title {id}', {}, '{body}')", id % 1000))
            .collect();
        session
            .execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
            .await?;
        start = end;
    }
    Ok(started.elapsed())
}

struct Measured {
    keys: u64,
    bytes: u64,
    median: Duration,
}

async fn measure(session: &Session, meter: &ReadMeter, sql: &str) -> BenchResult<Measured> {
    let mut times = Vec::with_capacity(RUNS);
    let mut counts = meter.counts();
    for _ in 0..RUNS {
        meter.reset();
        let started = Instant::now();
        session.query(sql).await?;
        times.push(started.elapsed());
        counts = meter.counts();
    }
    times.sort();
    Ok(Measured {
        keys: counts.keys(),
        bytes: counts.bytes,
        median: times[RUNS / 2],
    })
}

async fn run_store(name: &str, store: Arc<dyn KvStore>, rows: u64) -> BenchResult<()> {
    let metered = Arc::new(MeteredStore::new(store));
    let meter = metered.meter();
    let db = Database::with_store(metered).await?;
    let session = db.session();
    println!("\n## {name}: {rows} rows per table");
    for (table, ddl) in TABLES {
        let took = load(&session, table, ddl, rows).await?;
        println!("  load {table:<6} {:>8.2} s", took.as_secs_f64());
    }
    let queries = [
        (
            "small columns, every row",
            "SELECT count(*), max(title) FROM {t} WHERE size > 500",
        ),
        ("body, every row", "SELECT sum(length(body)) FROM {t}"),
        (
            "small columns, 1 000 keys",
            "SELECT count(title) FROM {t} WHERE id BETWEEN 5000 AND 5999",
        ),
        (
            "every column, 1 000 keys",
            "SELECT count(title), sum(length(body)) FROM {t} WHERE id BETWEEN 5000 AND 5999",
        ),
    ];
    println!(
        "\n  {:<28} {:<6} {:>9} {:>12} {:>10} {:>9}",
        "query", "table", "keys", "bytes", "median", "vs wide"
    );
    for (title, template) in queries {
        let mut wide = None;
        for (table, _) in TABLES {
            let sql = template.replace("{t}", table);
            let m = measure(&session, &meter, &sql).await?;
            let base = *wide.get_or_insert(m.median);
            println!(
                "  {:<28} {:<6} {:>9} {:>12} {:>8.2}ms {:>8.3}x",
                title,
                table,
                m.keys,
                m.bytes,
                m.median.as_secs_f64() * 1000.0,
                m.median.as_secs_f64() / base.as_secs_f64()
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
