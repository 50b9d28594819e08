//! The planner at the sizes users have (issue 20): one table of `--rows` rows (default
//! 10 000 000; `--quick` is 1 000 000) on fjall, loaded by COPY with every index created *after*
//! the load, the database closed and opened again before any query. Each case runs in a child
//! process of its own (a fresh open, so the plan comes from persisted statistics, and its own
//! peak RSS), three ways: rowdex as it plans, rowdex with the best plan forced by a hint, and
//! SQLite on the same rows with the same indexes (`ANALYZE`d, WAL, synchronous=NORMAL, its
//! page cache sized like fjall's block cache). The answers must agree. A fourth run forces
//! rowdex's DataFusion executor, to compare the two executors at this size; a fifth is the
//! store's floor (`raw`): the best plan's reads written by hand against the same store.
//!
//! Table `t (id, a, b, s, c, d, v, pad)`: `a = id % 200` (0.5 % per value), `b` a permutation
//! of the ids, `s` 2 000 rows per value, `c` and `d` 4 values each (25 %), `v` unindexed, `pad`
//! 40 bytes. Indexes: `ia(a)`, `ib(b) INCLUDE (a)` (SQLite: `(b, a)`), `isx(s)`, `ic(c)`,
//! `idd(d)`.
//!
//! A second table, `u` (`users`), holds the cases of indexes not on plain columns: a key led by
//! a generated `reverse(uid)`, an index on `lower(email)`, a partial index. PostgreSQL 15 runs
//! every case too, in a server of the bench's own (see `postgres`; `--no-postgres` leaves it
//! out); its figures include a loopback round trip, measured and printed beside them.
//!
//! Run: `cargo bench -p rowdex --bench scale [-- --quick] [--rows N] [--dir D]
//! [--cases eq,...] [--cache-mib N] [--no-postgres]` (`--cache-mib`: fjall's block cache and
//! SQLite's page cache, 512 MiB by default; PostgreSQL's shared_buffers are 512 MiB). With
//! `--dir`, the loaded databases (and the CSV files PostgreSQL loads) are kept there and
//! reused by later runs with the same row count. To profile one case, run its child alone with
//! more runs: `scale --case NAME --variant plain --dir D/rows-N --rows N --repeat 20000`
//! (under `perf record`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

mod pg_server;
mod postgres;
mod raw;
mod shared;
mod users;

use rowdex::Database;
use rowdex_store::{Durability, FjallStore, KvStore};

use crate::shared::{BenchResult, REPS, mix};

/// Rows per value of `s`.
const S_ROWS: u64 = 2_000;

/// One measured query: the SQL as a user writes it, the hint that forces the best plan, and
/// what the case shows.
struct Case {
    name: &'static str,
    label: &'static str,
    sql: fn(u64) -> String,
    /// The hint comment placed after `SELECT` for the best plan (`""`: the plan as chosen is
    /// the only sensible one).
    best: &'static str,
    /// The query as SQLite and PostgreSQL are given it, when it differs: what a user of
    /// theirs writes for the same answer (a key computed by hand where rowdex computes it).
    peer_sql: Option<fn(u64) -> String>,
}

const CASES: [Case; 12] = [
    Case {
        name: "eq",
        label: "a = 7 (0.5 %), count and max(pad)",
        sql: |_| "SELECT count(*), max(pad) FROM t WHERE a = 7".into(),
        best: "/*+ INDEX(t ia) */",
        peer_sql: None,
    },
    Case {
        name: "covering_range",
        label: "a = 5 AND b >= 0, ib (b) INCLUDE (a)",
        sql: |_| "SELECT max(b) FROM t WHERE a = 5 AND b >= 0".into(),
        best: "/*+ INDEX(t ia) */",
        peer_sql: None,
    },
    Case {
        name: "order_limit",
        label: "s = 5 (2 000 rows) ORDER BY b LIMIT 10",
        sql: |_| "SELECT id, pad FROM t WHERE s = 5 ORDER BY b, id LIMIT 10".into(),
        best: "/*+ INDEX(t isx) */",
        peer_sql: None,
    },
    Case {
        name: "dense_limit",
        label: "c = 1 AND d = 2 (6 %) ORDER BY id LIMIT 1",
        sql: |_| "SELECT id FROM t WHERE c = 1 AND d = 2 ORDER BY id LIMIT 1".into(),
        best: "/*+ NO_INDEX */",
        peer_sql: None,
    },
    Case {
        name: "topk",
        label: "ORDER BY v LIMIT 10, no index on v",
        sql: |_| "SELECT id, v FROM t ORDER BY v, id LIMIT 10".into(),
        best: "",
        peer_sql: None,
    },
    Case {
        name: "intersect_range",
        label: "a = 5 AND b < rows/2, intersection forced by a hint",
        // The hint is the case: an intersection whose second input is half the table, out of
        // primary-key order. SQLite ignores the comment and plans for itself.
        sql: |rows| {
            format!(
                "SELECT /*+ INDEX_MERGE(t ia ib) */ count(*) FROM t WHERE a = 5 AND b < {}",
                rows / 2
            )
        },
        best: "",
        peer_sql: None,
    },
    Case {
        name: "or",
        label: "a = 7 OR s = 5 (0.5 % and 2 000 rows), count and max(pad)",
        sql: |_| "SELECT count(*), max(pad) FROM t WHERE a = 7 OR s = 5".into(),
        best: "/*+ INDEX_MERGE(t ia isx) */",
        peer_sql: None,
    },
    Case {
        name: "count_range",
        label: "count(*) WHERE a BETWEEN 10 AND 19 (5 %), counted in the index",
        sql: |_| "SELECT count(*) FROM t WHERE a BETWEEN 10 AND 19".into(),
        best: "",
        peer_sql: None,
    },
    Case {
        name: "max_indexed",
        label: "max(b): the last entry of ib",
        sql: |_| "SELECT max(b) FROM t".into(),
        best: "",
        peer_sql: None,
    },
    Case {
        name: "expr_eq",
        label: "u: lower(email) = ? (1 row), index on lower(email)",
        sql: |rows| {
            format!(
                "SELECT id, email FROM u WHERE lower(email) = 'user{}@example.com'",
                rows / 3
            )
        },
        best: "",
        peer_sql: None,
    },
    Case {
        name: "partial",
        label: "u: state = 'flagged' AND score < 50000 (0.05 %), partial index over 0.1 %",
        sql: |_| {
            "SELECT count(*), max(score) FROM u WHERE state = 'flagged' AND score < 50000".into()
        },
        best: "",
        peer_sql: None,
    },
    Case {
        name: "reversed_get",
        label: "u: uid = ? on a key led by reverse(uid) (peers: rid = the id reversed by hand)",
        sql: |rows| {
            format!(
                "SELECT id, email FROM u WHERE uid = '{}'",
                users::uid(rows / 7)
            )
        },
        best: "",
        peer_sql: Some(|rows| {
            format!(
                "SELECT id, email FROM u WHERE rid = '{}'",
                users::reversed(&users::uid(rows / 7))
            )
        }),
    },
];

/// The SQL of `case` for `variant` (`plain`, `hinted`, `sqlite` or `postgres`).
fn case_sql(case: &Case, variant: &str, rows: u64) -> String {
    if let ("sqlite" | "postgres", Some(peer_sql)) = (variant, case.peer_sql) {
        return peer_sql(rows);
    }
    let sql = (case.sql)(rows);
    match variant {
        "hinted" if !case.best.is_empty() => {
            sql.replacen("SELECT", &format!("SELECT {}", case.best), 1)
        }
        _ => sql,
    }
}

fn write_csv(rows: u64, path: &Path) -> BenchResult<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let s_values = (rows / S_ROWS).max(1);
    for id in 0..rows {
        let a = id % 200;
        // An odd multiplier modulo a power of two is a permutation; fold it into 0..rows.
        let b = permute(id, rows);
        let s = mix(id ^ 0x5) % s_values;
        let c = mix(id ^ 0xc) % 4;
        let d = mix(id ^ 0xd) % 4;
        let v = mix(id ^ 0x7) >> 1;
        writeln!(
            file,
            "{id},{a},{b},{s},{c},{d},{v},pad-{id:012}-{:020}",
            mix(id) >> 1
        )?;
    }
    file.flush()?;
    Ok(())
}

/// A permutation of `0..rows`: cycle-walking an odd multiplier over the next power of two.
fn permute(id: u64, rows: u64) -> u64 {
    let mask = rows.next_power_of_two() - 1;
    let mut x = id;
    loop {
        x = (x
            .wrapping_mul(0x9e37_79b9_7f4a_7c15 | 1)
            .wrapping_add(12345))
            & mask;
        if x < rows {
            return x;
        }
    }
}

/// A `/proc/self/status` figure (`VmHWM:` peak resident memory, `VmRSS:` now), in MiB.
fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with(field))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 1024.0)
        })
        .unwrap_or(f64::NAN)
}

/// Starts a new peak-memory window (Linux: writing 5 to clear_refs resets VmHWM).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn rowdex_dir(dir: &Path) -> PathBuf {
    dir.join("rowdex")
}

fn sqlite_path(dir: &Path) -> PathBuf {
    dir.join("t.sqlite")
}

const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    PRAGMA cache_size = -524288;";

async fn load_rowdex(dir: &Path, csv: &Path) -> BenchResult<()> {
    let db = Database::open(rowdex_dir(dir)).await?;
    let s = db.session();
    let started = Instant::now();
    s.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, s BIGINT, c BIGINT,
           d BIGINT, v BIGINT, pad TEXT)",
    )
    .await?;
    s.execute(&format!("COPY t FROM '{}'", csv.display()))
        .await?;
    s.execute(users::ROWDEX_TABLE).await?;
    s.execute(&format!(
        "COPY u ({}) FROM '{}'",
        users::COPY_COLUMNS,
        dir.join(users::CSV).display()
    ))
    .await?;
    println!("RESULT load_s {}", started.elapsed().as_secs_f64());
    let started = Instant::now();
    s.execute(
        "CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b) INCLUDE (a);
         CREATE INDEX isx ON t (s); CREATE INDEX ic ON t (c); CREATE INDEX idd ON t (d);",
    )
    .await?;
    s.execute(users::ROWDEX_INDEXES).await?;
    println!("RESULT index_s {}", started.elapsed().as_secs_f64());
    db.flush().await?;
    Ok(())
}

fn load_sqlite(dir: &Path, csv: &Path) -> BenchResult<()> {
    let mut conn = rusqlite::Connection::open(sqlite_path(dir))?;
    conn.execute_batch(SQLITE_PRAGMAS)?;
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, s INTEGER, c INTEGER,
           d INTEGER, v INTEGER, pad TEXT)",
    )?;
    let started = Instant::now();
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_path(csv)?;
        for record in reader.records() {
            let record = record?;
            let int = |i: usize| -> BenchResult<i64> {
                Ok(record.get(i).unwrap_or_default().parse::<i64>()?)
            };
            insert.execute(rusqlite::params![
                int(0)?,
                int(1)?,
                int(2)?,
                int(3)?,
                int(4)?,
                int(5)?,
                int(6)?,
                record.get(7).unwrap_or_default()
            ])?;
        }
    }
    tx.commit()?;
    println!("RESULT load_s {}", started.elapsed().as_secs_f64());
    let started = Instant::now();
    conn.execute_batch(
        "CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b, a); CREATE INDEX isx ON t (s);
         CREATE INDEX ic ON t (c); CREATE INDEX idd ON t (d);",
    )?;
    users::load_sqlite(&mut conn, dir)?;
    conn.execute_batch("ANALYZE;")?;
    println!("RESULT index_s {}", started.elapsed().as_secs_f64());
    Ok(())
}

/// One case in this process: open, run the query `1 + reps` times, print the first and the
/// median of the rest, the peak RSS, the answer and (rowdex) the plan.
/// Runs one case; `cache_mib` sizes fjall's block cache and SQLite's page cache alike.
async fn run_case(
    dir: &Path,
    case: &Case,
    variant: &str,
    (rows, cache_mib): (u64, u64),
    reps: usize,
) -> BenchResult<()> {
    let sql = case_sql(case, variant, rows);
    let mut times = Vec::new();
    let answer = if variant == "sqlite" {
        let conn = rusqlite::Connection::open(sqlite_path(dir))?;
        conn.execute_batch(SQLITE_PRAGMAS)?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{};", cache_mib * 1024))?;
        let plan: Vec<String> = {
            let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let rows = statement.query_map([], |row| row.get::<_, String>(3))?;
            rows.collect::<Result<_, _>>()?
        };
        println!("PLAN {}", plan.join("; "));
        reset_peak_rss();
        println!("RESULT base_mib {}", status_mib("VmRSS:"));
        let mut answer = String::new();
        for _ in 0..=reps {
            let started = Instant::now();
            let mut statement = conn.prepare(&sql)?;
            let width = statement.column_count();
            let mut result = statement.query([])?;
            let mut lines = Vec::new();
            while let Some(row) = result.next()? {
                let cells: Vec<String> = (0..width)
                    .map(|i| match row.get_ref(i) {
                        Ok(rusqlite::types::ValueRef::Integer(n)) => n.to_string(),
                        Ok(rusqlite::types::ValueRef::Text(t)) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        Ok(rusqlite::types::ValueRef::Null) => "NULL".into(),
                        other => format!("{other:?}"),
                    })
                    .collect();
                lines.push(cells.join(","));
            }
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            answer = lines.join(";");
        }
        answer
    } else if variant == "raw" {
        let store = Arc::new(FjallStore::open_with_cache(
            &rowdex_dir(dir),
            Durability::default(),
            cache_mib * 1024 * 1024,
        )?);
        let db = Database::with_store(store.clone()).await?;
        let layout = raw::Layout::of(&db)?;
        println!("PLAN the best plan's reads through KvRead, by hand");
        reset_peak_rss();
        println!("RESULT base_mib {}", status_mib("VmRSS:"));
        let mut answer = String::new();
        for _ in 0..=reps {
            let started = Instant::now();
            let reader = store.snapshot();
            answer = raw::answer(reader.as_ref(), &layout, case.name)
                .await?
                .ok_or("no floor for this case")?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        answer
    } else {
        let store = FjallStore::open_with_cache(
            &rowdex_dir(dir),
            Durability::default(),
            cache_mib * 1024 * 1024,
        )?;
        let db = Database::with_store(Arc::new(store)).await?;
        let mut session = db.session();
        if variant == "datafusion" {
            session.set_executor(rowdex::Executor::DataFusion);
        }
        let explained = session.query(&format!("EXPLAIN {sql}")).await?;
        let mut plan = Vec::new();
        for batch in &explained {
            for row in 0..batch.num_rows() {
                let cells: Vec<String> = batch
                    .columns()
                    .iter()
                    .filter_map(|column| rowdex::format::cell_text(column, row))
                    .collect();
                plan.push(cells.join(" "));
            }
        }
        println!("PLAN {}", plan.join("; ").replace('\n', " "));
        reset_peak_rss();
        println!("RESULT base_mib {}", status_mib("VmRSS:"));
        let mut answer = String::new();
        for _ in 0..=reps {
            let started = Instant::now();
            let batches = session.query(&sql).await?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            let mut lines = Vec::new();
            for batch in &batches {
                for row in 0..batch.num_rows() {
                    let cells: Vec<String> = batch
                        .columns()
                        .iter()
                        .map(|column| {
                            rowdex::format::cell_text(column, row).unwrap_or_else(|| "NULL".into())
                        })
                        .collect();
                    lines.push(cells.join(","));
                }
            }
            answer = lines.join(";");
        }
        answer
    };
    let first = times[0];
    let mut rest = times[1..].to_vec();
    rest.sort_by(f64::total_cmp);
    println!("RESULT first_ms {first}");
    println!("RESULT ms {}", rest[rest.len() / 2]);
    println!("RESULT peak_mib {}", status_mib("VmHWM:"));
    println!("ANSWER {answer}");
    Ok(())
}

/// What one child printed.
#[derive(Default)]
struct ChildReport {
    results: BTreeMap<String, f64>,
    plan: String,
    answer: String,
}

fn run_child(args: &[String]) -> BenchResult<ChildReport> {
    let output = Command::new(std::env::current_exe()?).args(args).output()?;
    if !output.status.success() {
        return Err(format!(
            "child {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let mut report = ChildReport::default();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if let Some(rest) = line.strip_prefix("RESULT ") {
            if let Some((name, value)) = rest.split_once(' ') {
                report.results.insert(name.into(), value.parse()?);
            }
        } else if let Some(plan) = line.strip_prefix("PLAN ") {
            report.plan = plan.into();
        } else if let Some(answer) = line.strip_prefix("ANSWER ") {
            report.answer = answer.into();
        }
    }
    Ok(report)
}

fn fmt_ms(value: Option<f64>) -> String {
    match value {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
        None => String::new(),
    }
}

/// `peak (peak - base)`: the process's peak, and what the query added to the process as opened.
fn memory(peak: Option<f64>, base: Option<f64>) -> String {
    match (peak, base) {
        (Some(peak), Some(base)) => format!("{peak:.0} ({:.0})", peak - base),
        (Some(peak), None) => format!("{peak:.0}"),
        _ => String::new(),
    }
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rows: u64 = match value_of("--rows") {
        Some(n) => n.parse()?,
        None if quick => 1_000_000,
        None => 10_000_000,
    };
    let cache_mib: u64 = match value_of("--cache-mib") {
        Some(n) => n.parse()?,
        None => 512,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(rowdex::WORKER_STACK_BYTES)
        .enable_all()
        .build()?;
    if let (Some(engine), Some(dir)) = (value_of("--load"), value_of("--dir")) {
        let dir = PathBuf::from(dir);
        let csv = dir.join("t.csv");
        return match engine.as_str() {
            "rowdex" => runtime.block_on(load_rowdex(&dir, &csv)),
            _ => load_sqlite(&dir, &csv),
        };
    }
    if let (Some(name), Some(variant), Some(dir)) =
        (value_of("--case"), value_of("--variant"), value_of("--dir"))
    {
        let case = CASES
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| format!("unknown case {name}"))?;
        let reps = match value_of("--repeat") {
            Some(n) => n.parse()?,
            None => REPS,
        };
        return runtime.block_on(run_case(
            Path::new(&dir),
            case,
            &variant,
            (rows, cache_mib),
            reps,
        ));
    }

    let kept = value_of("--dir").map(PathBuf::from);
    let scratch = tempfile::tempdir()?;
    let dir = kept
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf())
        .join(format!("rows-{rows}"));
    let dir_arg = dir.display().to_string();
    let wanted: Option<Vec<String>> =
        value_of("--cases").map(|list| list.split(',').map(str::to_string).collect());
    let mut load = BTreeMap::new();
    // `loaded-u`: the directory holds both tables and keeps their CSV files (PostgreSQL loads
    // them anew on every run).
    if !dir.join("loaded-u").exists() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        eprintln!("writing {rows} rows of CSV...");
        write_csv(rows, &dir.join("t.csv"))?;
        users::write_csv(rows, &dir)?;
        for engine in ["rowdex", "sqlite"] {
            eprintln!("loading {engine}...");
            let report = run_child(&[
                "--load".into(),
                engine.into(),
                "--dir".into(),
                dir_arg.clone(),
            ])?;
            load.insert(engine, report.results);
        }
        std::fs::write(dir.join("loaded-u"), b"")?;
    }

    println!(
        "rows: {rows}{}, caches: {cache_mib} MiB",
        if quick { " (quick)" } else { "" }
    );
    for (engine, results) in &load {
        println!(
            "load {engine}: COPY/INSERT {:.1} s, indexes after {:.1} s",
            results.get("load_s").copied().unwrap_or(f64::NAN),
            results.get("index_s").copied().unwrap_or(f64::NAN)
        );
    }
    // PostgreSQL, unless left out: one server for every case, loaded from the same CSV files.
    let peer = if args.iter().any(|a| a == "--no-postgres") {
        None
    } else {
        eprintln!("loading postgres...");
        let peer = runtime.block_on(postgres::Peer::load(&dir))?;
        println!(
            "PostgreSQL 15 through tokio-postgres over loopback: each of its figures includes a \
             round trip (SELECT 1: {} ms median)",
            fmt_ms(Some(peer.round_trip_ms))
        );
        Some(peer)
    };
    println!(
        "| case | rowdex ms (first) | hinted ms | DataFusion executor ms | SQLite ms | PostgreSQL ms | raw store ms | rowdex / hinted | rowdex / SQLite | rowdex / PostgreSQL | raw store / SQLite | rowdex peak MiB (query's own) | SQLite peak MiB (query's own) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut plans = Vec::new();
    for case in &CASES {
        if let Some(wanted) = &wanted
            && !wanted.iter().any(|w| case.name.starts_with(w.as_str()))
        {
            continue;
        }
        let mut reports = BTreeMap::new();
        for variant in ["plain", "hinted", "datafusion", "sqlite", "raw"] {
            if (variant == "hinted" && case.best.is_empty())
                || (variant == "raw" && !raw::HAS_FLOOR.contains(&case.name))
            {
                continue;
            }
            eprintln!("{} ({variant})...", case.name);
            let report = run_child(&[
                "--case".into(),
                case.name.into(),
                "--variant".into(),
                variant.into(),
                "--dir".into(),
                dir_arg.clone(),
                "--rows".into(),
                rows.to_string(),
                "--cache-mib".into(),
                cache_mib.to_string(),
            ])?;
            reports.insert(variant, report);
        }
        if let Some(peer) = &peer {
            eprintln!("{} (postgres)...", case.name);
            let run = runtime.block_on(peer.run(&case_sql(case, "postgres", rows)))?;
            let mut rest = run.times[1..].to_vec();
            rest.sort_by(f64::total_cmp);
            let mut report = ChildReport {
                plan: run.plan,
                answer: run.answer,
                ..ChildReport::default()
            };
            report.results.insert("first_ms".into(), run.times[0]);
            report.results.insert("ms".into(), rest[rest.len() / 2]);
            reports.insert("postgres", report);
        }
        let get = |variant: &str, what: &str| {
            reports
                .get(variant)
                .or_else(|| reports.get("plain").filter(|_| variant == "hinted"))
                .and_then(|r| r.results.get(what).copied())
        };
        let answers: Vec<&str> = reports.values().map(|r| r.answer.as_str()).collect();
        if answers.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("{}: answers differ: {answers:?}", case.name).into());
        }
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => String::new(),
        };
        println!(
            "| {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            case.label,
            fmt_ms(get("plain", "ms")),
            fmt_ms(get("plain", "first_ms")),
            fmt_ms(get("hinted", "ms")),
            fmt_ms(get("datafusion", "ms")),
            fmt_ms(get("sqlite", "ms")),
            fmt_ms(get("postgres", "ms")),
            fmt_ms(get("raw", "ms")),
            ratio(get("plain", "ms"), get("hinted", "ms")),
            ratio(get("plain", "ms"), get("sqlite", "ms")),
            ratio(get("plain", "ms"), get("postgres", "ms")),
            ratio(get("raw", "ms"), get("sqlite", "ms")),
            memory(get("plain", "peak_mib"), get("plain", "base_mib")),
            memory(get("sqlite", "peak_mib"), get("sqlite", "base_mib")),
        );
        for (variant, report) in &reports {
            plans.push(format!("{} ({variant}): {}", case.name, report.plan));
        }
    }
    println!(
        "(ms: median of {REPS} runs after the first, in a process that just opened the database; first: the first run, planning from persisted statistics included; peak: VmHWM from just before the first run, in brackets less the resident memory at that moment, the open's included)"
    );
    for plan in plans {
        println!("  {plan}");
    }
    Ok(())
}
