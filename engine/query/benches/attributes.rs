//! What each HBase table or family attribute does on the durable store: the same rows loaded
//! into one table per variant, then measured after a VACUUM and a reopen (nothing cached):
//! bytes on disk, a point get of a present key and of an absent one (where a bloom filter
//! saves a block read), and a range scan; and, for DURABILITY, single-row commits per second.
//!
//! Each variant's table differs from `baseline` (no attributes: the shared keyspace) in one
//! attribute. Rows: `ROWDEX_BENCH_ROWS` (default 200 000) of an order line with a text
//! description that compresses as real text does (words from a small vocabulary).
//!
//! Run with `cargo bench -p rowdex --bench attributes` (`-- --quick`: 50 000 rows).
//! `ROWDEX_BENCH_VARIANTS=baseline,compression_lz4` measures only those variants, and
//! `ROWDEX_BENCH_PROBES` sets the point gets per variant (2 000), for a profiler to attach to.

use std::time::{Duration, Instant};

use rowdex::{Database, Session};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// (name, WITH options) of each storage variant.
const VARIANTS: [(&str, &str); 9] = [
    ("baseline", ""),
    ("compression_none", "COMPRESSION = 'NONE'"),
    ("compression_lz4", "COMPRESSION = 'LZ4'"),
    ("bloomfilter_none", "BLOOMFILTER = 'NONE'"),
    ("encoding_none", "DATA_BLOCK_ENCODING = 'NONE'"),
    ("encoding_row_index", "DATA_BLOCK_ENCODING = 'ROW_INDEX_V1'"),
    ("blocksize_16k", "BLOCKSIZE = 16384"),
    ("blocksize_64k", "BLOCKSIZE = 65536"),
    ("max_filesize_4m", "MAX_FILESIZE = 4194304"),
];

const DURABILITIES: [&str; 4] = ["SKIP_WAL", "ASYNC_WAL", "SYNC_WAL", "FSYNC_WAL"];

const WORDS: [&str; 16] = [
    "red", "blue", "cotton", "shirt", "large", "small", "phone", "case", "leather", "black",
    "white", "book", "paper", "cover", "garden", "chair",
];

const INSERT_BATCH: u64 = 2_000;
const DEFAULT_PROBES: u64 = 2_000;
const SCANS: u64 = 20;
const SCAN_ROWS: u64 = 5_000;
const COMMITS: u64 = 500;

fn description(id: u64) -> String {
    (0..12)
        .map(|i| WORDS[((id * 7 + i * 13) ^ (id >> 3)) as usize % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

async fn load(session: &Session, table: &str, options: &str, rows: u64) -> BenchResult<()> {
    let with = if options.is_empty() {
        String::new()
    } else {
        format!(" WITH ({options})")
    };
    session
        .execute(&format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer BIGINT, amount DECIMAL(12,2), \
             description TEXT){with}"
        ))
        .await?;
    let mut start = 0;
    while start < rows {
        let end = (start + INSERT_BATCH).min(rows);
        // Spread ids (every other one) so that a probe of an odd id misses.
        let values: Vec<String> = (start..end)
            .map(|n| {
                let id = n * 2;
                format!(
                    "({id}, {}, {}.{:02}, '{}')",
                    id % 5000,
                    id % 997,
                    id % 100,
                    description(id)
                )
            })
            .collect();
        session
            .execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
            .await?;
        start = end;
    }
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Median time of a point get of `id` over the ids `ids` gives.
async fn point_gets(
    session: &Session,
    table: &str,
    ids: impl Iterator<Item = u64>,
) -> BenchResult<Duration> {
    let mut times = Vec::new();
    for id in ids {
        let started = Instant::now();
        session
            .query(&format!("SELECT amount FROM {table} WHERE id = {id}"))
            .await?;
        times.push(started.elapsed());
    }
    Ok(median(times))
}

async fn scans(session: &Session, table: &str, rows: u64) -> BenchResult<Duration> {
    let mut times = Vec::new();
    for n in 0..SCANS {
        let from = (n * 7919 % rows.saturating_sub(SCAN_ROWS).max(1)) * 2;
        let started = Instant::now();
        session
            .query(&format!(
                "SELECT count(*), max(description) FROM {table} WHERE id >= {from} AND id < {}",
                from + SCAN_ROWS * 2
            ))
            .await?;
        times.push(started.elapsed());
    }
    Ok(median(times))
}

fn micros(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1e6)
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let rows: u64 = match std::env::var("ROWDEX_BENCH_ROWS") {
        Ok(text) => text.parse()?,
        Err(_) if quick => 50_000,
        Err(_) => 200_000,
    };
    let probes: u64 = match std::env::var("ROWDEX_BENCH_PROBES") {
        Ok(text) => text.parse()?,
        Err(_) => DEFAULT_PROBES,
    };
    let chosen: Vec<String> = std::env::var("ROWDEX_BENCH_VARIANTS")
        .map(|names| names.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let variants: Vec<(&str, &str)> = VARIANTS
        .into_iter()
        .filter(|(table, _)| chosen.is_empty() || chosen.iter().any(|c| c == table))
        .collect();
    let dir = tempfile::tempdir()?;
    {
        let db = Database::open(dir.path()).await?;
        let session = db.session();
        for (table, options) in &variants {
            load(&session, table, options, rows).await?;
        }
        session.execute("VACUUM").await?;
    }
    let db = Database::open(dir.path()).await?;
    let session = db.session();
    println!("attributes bench: {rows} rows per table, after VACUUM and a reopen (fjall)");
    println!(
        "{:<20} {:>12} {:>9} {:>12} {:>12} {:>14}",
        "variant", "bytes", "vs base", "get hit µs", "get miss µs", "scan 5k rows µs"
    );
    let mut base_bytes = 0;
    // The baseline again at the end: what measuring order alone changes.
    let order = variants.iter().map(|(table, _)| *table).chain(
        variants
            .iter()
            .any(|(t, _)| *t == "baseline")
            .then_some("baseline"),
    );
    for table in order {
        let def = db
            .table_defs()
            .into_iter()
            .find(|def| def.name == table)
            .ok_or("table missing")?;
        let sizes = db.table_sizes(&def)?.ok_or("no sizes")?;
        let bytes = sizes.table();
        if table == "baseline" {
            base_bytes = bytes;
        }
        // A first pass warms nothing it measures twice: hits and misses use other keys.
        let hits = point_gets(&session, table, (0..probes).map(|n| (n * 7919 % rows) * 2)).await?;
        let misses = point_gets(
            &session,
            table,
            (0..probes).map(|n| (n * 6271 % rows) * 2 + 1),
        )
        .await?;
        let scanned = scans(&session, table, rows).await?;
        // Against the baseline when it was measured (a chosen variant alone has none).
        let ratio = match base_bytes {
            0 => "-".to_string(),
            base => format!("{:.2}x", bytes as f64 / base as f64),
        };
        println!(
            "{:<20} {:>12} {:>9} {:>12} {:>12} {:>14}",
            table,
            bytes,
            ratio,
            micros(hits),
            micros(misses),
            micros(scanned)
        );
    }
    println!();
    println!("DURABILITY: {COMMITS} single-row INSERTs, each its own commit");
    println!("{:<12} {:>14} {:>12}", "durability", "commits/s", "µs each");
    for durability in DURABILITIES {
        let table = format!("d_{}", durability.to_lowercase());
        session
            .execute(&format!(
                "CREATE TABLE {table} (id BIGINT PRIMARY KEY, note TEXT) WITH (DURABILITY = '{durability}')"
            ))
            .await?;
        let started = Instant::now();
        for id in 0..COMMITS {
            session
                .execute(&format!("INSERT INTO {table} VALUES ({id}, 'a note')"))
                .await?;
        }
        let elapsed = started.elapsed();
        println!(
            "{:<12} {:>14.0} {:>12}",
            durability,
            COMMITS as f64 / elapsed.as_secs_f64(),
            micros(elapsed / COMMITS as u32)
        );
    }
    Ok(())
}
