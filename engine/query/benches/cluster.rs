//! What replication costs: the same workload on the embedded fjall store and on a 3-member etcd
//! cluster on loopback (started by the bench; etcd from `scripts/install-etcd`).
//!
//! Stores, side by side:
//! - `fjall`: the default durability (each commit written to the journal and handed to the OS,
//!   not fsynced);
//! - `fjall-sync`: every commit fsynced (`Durability::FsyncWal`), the durability closest to
//!   etcd's;
//! - `etcd`: three members on one machine and one disk; a commit is acknowledged once two of
//!   them have fsynced it.
//!
//! Cases: a 100,000-row COPY into a table with one index; then, on a database opened afresh,
//! a point get by primary key and an index lookup (10 rows) as prepared statements, and a
//! transfer transaction (BEGIN, two UPDATEs, COMMIT) from one session and from 4 sessions at
//! once. Each case prints its mean time per operation and the ratio to `fjall`.
//!
//! Run with `cargo bench -p rowdex --bench cluster` (`-- --rows N` to change the table size).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rowdex::{Database, Datum, Session};
use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;
use rowdex_store::{Durability, FjallStore};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

const POINT_GETS: usize = 2_000;
const LOOKUPS: usize = 1_000;
const TRANSFERS: usize = 300;
const SESSIONS: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Store {
    Fjall,
    FjallSync,
    Etcd,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Fjall => "fjall",
            Store::FjallSync => "fjall-sync",
            Store::Etcd => "etcd",
        }
    }
}

/// Opens the database of `store` (a directory under `dir`, or `etcd_address`).
async fn open(store: Store, dir: &std::path::Path, etcd_address: &str) -> BenchResult<Database> {
    Ok(match store {
        Store::Fjall => Database::open(dir.join("fjall")).await?,
        Store::FjallSync => {
            let store = FjallStore::open(&dir.join("fjall-sync"), Durability::FsyncWal)?;
            Database::with_store(Arc::new(store)).await?
        }
        Store::Etcd => Database::open_etcd(etcd_address).await?,
    })
}

/// Deterministic pseudo-random ids (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Per-operation mean of `count` operations that took `elapsed`.
fn per_op(elapsed: Duration, count: usize) -> Duration {
    elapsed / u32::try_from(count).unwrap_or(u32::MAX)
}

async fn transfers(session: &Session, rows: u64, seed: u64, count: usize) -> BenchResult<()> {
    let mut rng = Rng(seed);
    let mut done = 0;
    while done < count {
        let (a, b) = (rng.below(rows), rng.below(rows));
        let sql = format!(
            "BEGIN; UPDATE acct SET bal = bal - 1 WHERE id = {a}; \
             UPDATE acct SET bal = bal + 1 WHERE id = {b}; COMMIT;"
        );
        match session.execute(&sql).await {
            Ok(_) => done += 1,
            Err(error) if error.is_retryable() => {
                let _ = session.execute("ROLLBACK").await;
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Times every case on `store`; returns (case, time per operation).
async fn run(
    store: Store,
    rows: u64,
    dir: &std::path::Path,
    etcd_address: &str,
    csv: &std::path::Path,
) -> BenchResult<Vec<(&'static str, Duration)>> {
    let mut out = Vec::new();
    {
        let db = open(store, dir, etcd_address).await?;
        let session = db.session();
        session
            .execute("CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT, k BIGINT, pad TEXT); CREATE INDEX acct_k ON acct (k)")
            .await?;
        let started = Instant::now();
        session
            .execute(&format!("COPY acct FROM '{}' (FORMAT csv)", csv.display()))
            .await?;
        out.push((
            "COPY 100k rows (per row)",
            per_op(started.elapsed(), rows as usize),
        ));
        db.flush().await?;
    }
    let db = open(store, dir, etcd_address).await?;
    let session = db.session();
    let point = session.prepare("SELECT bal FROM acct WHERE id = $1")?;
    let lookup = session.prepare("SELECT id FROM acct WHERE k = $1")?;
    let mut rng = Rng(42);
    // Warm: plans compiled, connections opened.
    point.execute(&[Datum::Int(1)]).await?;
    lookup.execute(&[Datum::Int(1)]).await?;

    let started = Instant::now();
    for _ in 0..POINT_GETS {
        point.execute(&[Datum::Int(rng.below(rows) as i64)]).await?;
    }
    out.push((
        "point get (prepared)",
        per_op(started.elapsed(), POINT_GETS),
    ));

    let groups = (rows / 10).max(1);
    let started = Instant::now();
    for _ in 0..LOOKUPS {
        lookup
            .execute(&[Datum::Int(rng.below(groups) as i64)])
            .await?;
    }
    out.push((
        "index lookup, 10 rows (prepared)",
        per_op(started.elapsed(), LOOKUPS),
    ));

    let started = Instant::now();
    transfers(&session, rows, 7, TRANSFERS).await?;
    out.push(("transfer, 1 session", per_op(started.elapsed(), TRANSFERS)));

    let started = Instant::now();
    let db = Arc::new(db);
    let mut tasks = Vec::new();
    for n in 0..SESSIONS {
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            transfers(&session, rows, 100 + n as u64, TRANSFERS / SESSIONS)
                .await
                .map_err(|error| error.to_string())
        }));
    }
    for task in tasks {
        task.await??;
    }
    out.push((
        "transfer, 4 sessions (throughput, per txn)",
        per_op(started.elapsed(), TRANSFERS / SESSIONS * SESSIONS),
    ));
    let total = session.execute("SELECT sum(bal) FROM acct").await?;
    drop(total);
    Ok(out)
}

fn micros(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let rows: u64 = args
        .iter()
        .position(|arg| arg == "--rows")
        .and_then(|at| args.get(at + 1))
        .map_or(Ok(100_000), |rows| rows.parse())?;
    let dir = tempfile::tempdir()?;
    let csv = dir.path().join("acct.csv");
    let data: String = (0..rows)
        .map(|id| format!("{id},1000,{},{}\n", id / 10, "p".repeat(40)))
        .collect();
    std::fs::write(&csv, data)?;
    let cluster = LocalEtcdCluster::start(3).await?;
    let etcd_address = cluster.address("bench").to_string();
    println!(
        "cluster bench: {rows} rows; etcd {:?}",
        rowdex_store::etcd_store::local_cluster::etcd_binary()?
    );
    let mut results = Vec::new();
    for store in [Store::Fjall, Store::FjallSync, Store::Etcd] {
        let measured = run(store, rows, dir.path(), &etcd_address, &csv).await?;
        for (case, time) in &measured {
            println!("{:<11} {case:<44} {:>10} µs", store.name(), micros(*time));
        }
        results.push((store, measured));
    }
    println!(
        "\n| case | fjall µs | fjall-sync µs | etcd (3 members) µs | etcd / fjall | etcd / fjall-sync |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let base = &results[0].1;
    for (i, (case, fjall)) in base.iter().enumerate() {
        let sync = results[1].1[i].1;
        let etcd = results[2].1[i].1;
        println!(
            "| {case} | {} | {} | {} | {:.1}x | {:.1}x |",
            micros(*fjall),
            micros(sync),
            micros(etcd),
            etcd.as_secs_f64() / fjall.as_secs_f64(),
            etcd.as_secs_f64() / sync.as_secs_f64()
        );
    }
    drop(cluster);
    Ok(())
}
