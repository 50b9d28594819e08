//! rowdex side by side with what a user would pick instead, SQLite and PostgreSQL, and with the
//! physical limit: the raw fjall / memory store doing the same key operations by hand, without
//! SQL.
//!
//! Engines (`--engines`, in this order by default): `rowdex-memory`, `rowdex-fjall` (default
//! durability, 512 MiB block cache), `sqlite`, `postgres`, `raw-memory`, `raw-fjall`.
//!
//! Three tables of `--rows` rows each (default 1 000 000; `--quick` is 100 000 and fewer
//! repetitions): `orders` (id key; `user_id` indexed, 10 rows per user; `country` indexed, 50
//! values), `pairs` (`a` indexed, 10 % selective; `b` and `c` indexed, 1 % each) and `actions`
//! (key `(uid, ts)`, newest first where the engine can say so, 1 000 actions per user). Cases:
//!
//! 1. point get by primary key: prepared; as ad-hoc SQL text with the id written in it through
//!    each engine's statement cache (rowdex's compiled-query cache lifts the literal; SQLite's
//!    cache is keyed by the whole text, so every new id misses; PostgreSQL plans text every
//!    time); and the same text without a cache (rowdex `Session::set_query_cache(false)`,
//!    SQLite `prepare` per call, PostgreSQL as before);
//! 2. equality lookup through a secondary index, 10 rows;
//! 3. intersections: `a = ? AND b = ?` (10 % x 1 %, about 0.1 %) and `b = ? AND c = ?`
//!    (1 % x 1 %, about 0.01 %); the raw figure reads the `b` index range and looks up the
//!    matching rows;
//! 4. `WHERE uid = ? ORDER BY ts DESC LIMIT 10 OFFSET 20`, and the keyset page in two forms,
//!    `uid = ? AND ts < ?` and `uid = ? AND (uid, ts) < (?, ?)`;
//! 5. bulk load of `orders` from CSV into the table with its two indexes (COPY for rowdex and
//!    PostgreSQL, one transaction of prepared INSERTs for SQLite);
//! 6. `SELECT country, count(*), sum(amount) FROM orders GROUP BY country` (the raw figure is a
//!    scan of every row, grouped by hand).
//!
//! Every call's row count is checked against the data generator (the intersections' exactly,
//! from a table of counts per value pair), each child prints `ROWS case total` besides
//! `RESULT case value`, and the run fails if an engine's total differs from SQLite's. Under the
//! table, the targets (rowdex / SQLite ratios) are printed as met or missed.
//!
//! Fairness: the same data and indexes everywhere, caches warmed by a full read before timing.
//! SQLite: WAL, `synchronous = NORMAL`, `cache_size` equal to fjall's block cache
//! (`DEFAULT_FJALL_CACHE_BYTES`), `ANALYZE` after loading, prepared statements from rusqlite's
//! cache. PostgreSQL 15 (binaries in /usr/lib/postgresql/15/bin, run as user `postgres`; the
//! child makes a fresh cluster with C collation and stops the server when it ends):
//! `shared_buffers = 512MB`, `synchronous_commit = off`, `fsync = on`, loopback TCP through
//! tokio-postgres, COPY, then `ANALYZE`, `VACUUM` (visibility map for index-only scans) and a
//! `CHECKPOINT` before timing, statements prepared once; each call is a network round trip,
//! which the embedded engines do not pay. Durability differs: rowdex's buffered journal and
//! SQLite's WAL with `synchronous = NORMAL` survive a crash of the process but may lose the last
//! writes on a power loss; PostgreSQL with `synchronous_commit = off` may lose the last
//! transactions on a crash of the server.
//!
//! Each engine runs in a child process of its own, so that its peak memory (VmHWM, reset before
//! cases 5 and 6) is its own. PostgreSQL's server runs in processes of its own that the client
//! cannot measure: it has no peak-memory figures. Without PostgreSQL's binaries the `postgres`
//! child fails naming the missing path; the other engines' table is still printed (and the run
//! exits non-zero), so leave it out with `--engines` on such a machine.
//!
//! Run: `cargo bench -p rowdex --bench peers [-- --quick] [--rows N]
//! [--engines rowdex-fjall,sqlite,...] [--cases point,intersect,...] [--repeat N]`
//! (`--repeat` runs each timed case's calls N times over, so that a profiler attached at a
//! case's `CASE` line has time to sample it). On the 2-core
//! development machine `--quick` takes about 20 s for all six engines (a few seconds each); the
//! full run on 1 000 000 rows takes about 8.5 minutes (timed 2026-11-23), loads and VACUUM
//! included.

mod data;
mod measure;
mod pg_server;
mod postgres;
mod queries;
mod raw;
mod rowdex_sql;
mod sqlite;
mod summary;

use std::process::Command;
use std::sync::Arc;

use rowdex::Database;
use rowdex_store::{Durability, FjallStore, MemoryStore};

use crate::data::{BenchResult, Data};
use crate::measure::{Reps, run_engine};
use crate::postgres::Postgres;
use crate::raw::Raw;
use crate::rowdex_sql::Rowdex;
use crate::sqlite::Sqlite;
use crate::summary::Results;

const ENGINES: [&str; 6] = [
    "rowdex-memory",
    "rowdex-fjall",
    "sqlite",
    "postgres",
    "raw-memory",
    "raw-fjall",
];

/// The command line, the parent's and each child's.
struct Args {
    quick: bool,
    rows: u64,
    cases: Option<Vec<String>>,
    engines: Vec<String>,
    /// Set in a child: the engine it measures.
    child: Option<String>,
    /// Each timed case's calls, this many times over.
    repeat: u64,
}

fn comma_list(list: &str) -> Vec<String> {
    list.split(',').map(str::to_string).collect()
}

impl Args {
    fn parse() -> BenchResult<Args> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let value_of = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .cloned()
        };
        let quick = args.iter().any(|a| a == "--quick");
        let rows = match value_of("--rows") {
            Some(n) => n.parse()?,
            None if quick => 100_000,
            None => 1_000_000,
        };
        let engines = match value_of("--engines") {
            Some(list) => comma_list(&list),
            None => ENGINES.iter().map(|e| e.to_string()).collect(),
        };
        Ok(Args {
            quick,
            rows,
            cases: value_of("--cases").map(|list| comma_list(&list)),
            engines,
            child: value_of("--child"),
            repeat: value_of("--repeat").map_or(Ok(1), |n| n.parse())?.max(1),
        })
    }

    fn reps(&self) -> Reps {
        let cases = self.cases.clone();
        if self.quick {
            Reps {
                cases,
                point: 2_000,
                lookup: 1_000,
                intersect: 20,
                aggregate: 1,
                repeat: self.repeat,
            }
        } else {
            Reps {
                cases,
                point: 20_000,
                lookup: 5_000,
                intersect: 100,
                aggregate: 3,
                repeat: self.repeat,
            }
        }
    }

    /// The command that runs `engine` in a child process with the same settings.
    fn child_command(&self, engine: &str) -> BenchResult<Command> {
        let mut command = Command::new(std::env::current_exe()?);
        command.args(["--child", engine, "--rows", &self.rows.to_string()]);
        if self.quick {
            command.arg("--quick");
        }
        command.args(["--repeat", &self.repeat.to_string()]);
        if let Some(cases) = &self.cases {
            command.args(["--cases", &cases.join(",")]);
        }
        Ok(command)
    }
}

/// A child process: measures `engine` and prints its lines.
async fn child(engine: &str, data: Data, reps: Reps) -> BenchResult<()> {
    let temp = tempfile::tempdir()?;
    let dir = temp.path();
    let store_dir = dir.join("store");
    match engine {
        "rowdex-memory" => {
            let db = Database::open_memory().await?;
            run_engine(Rowdex::new(db, data).await?, data, reps, dir).await
        }
        "rowdex-fjall" => {
            let db = Database::open(&store_dir).await?;
            run_engine(Rowdex::new(db, data).await?, data, reps, dir).await
        }
        "sqlite" => {
            let sqlite = Sqlite::new(&dir.join("bench.sqlite"), data)?;
            run_engine(sqlite, data, reps, dir).await
        }
        "postgres" => run_engine(Postgres::start(data).await?, data, reps, dir).await,
        "raw-memory" => {
            let raw = Raw::new(Arc::new(MemoryStore::new()), data);
            run_engine(raw, data, reps, dir).await
        }
        "raw-fjall" => {
            let store = FjallStore::open(&store_dir, Durability::default())?;
            run_engine(Raw::new(Arc::new(store), data), data, reps, dir).await
        }
        other => Err(format!("unknown engine {other}").into()),
    }
}

/// The last lines of a failed child's error output.
fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The parent: runs each engine's child, prints the table and the targets, and fails when a
/// child failed or row totals differ.
fn parent(args: &Args) -> BenchResult<()> {
    let mut results = Results::default();
    let mut reported = Vec::new();
    let mut failures = Vec::new();
    for engine in &args.engines {
        eprintln!("running {engine} on {} rows...", args.rows);
        let output = args.child_command(engine)?.output()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if results.collect(engine, &stdout)? {
            reported.push(engine.clone());
        }
        if !output.status.success() {
            let failure = format!(
                "{engine} failed ({}): {}",
                output.status,
                tail(&output.stderr)
            );
            eprintln!("{failure}");
            failures.push(failure);
        }
    }
    let quick = if args.quick { " (quick)" } else { "" };
    println!("rows per table: {}{quick}", args.rows);
    results.print_table(&reported);
    results.print_targets();
    for mismatch in results.row_mismatches() {
        let failure = format!("row count differs: {mismatch}");
        eprintln!("{failure}");
        failures.push(failure);
    }
    match failures.len() {
        0 => Ok(()),
        n => Err(format!("{n} failure(s), listed above").into()),
    }
}

fn main() -> BenchResult<()> {
    let args = Args::parse()?;
    match &args.child {
        Some(engine) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .thread_stack_size(rowdex::WORKER_STACK_BYTES)
                .enable_all()
                .build()?;
            let data = Data { rows: args.rows };
            runtime.block_on(child(engine, data, args.reps()))
        }
        None => parent(&args),
    }
}
