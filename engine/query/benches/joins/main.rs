//! Joins on rowdex against SQLite and PostgreSQL 15 on the same data (issue 44): `users` (N
//! rows; `city` and `age` indexed) and `orders` (2N rows; `user_id` indexed), the seven shapes
//! of `shapes.rs`, each engine loaded, indexed and analyzed, then reopened before timing.
//!
//! Each engine runs in a child process of its own (the parent prints the table). A shape's
//! calls get deterministic parameters; 20 calls on other parameters warm the caches first, then
//! the mean time per call is reported. Every call's row count is summed, and the run fails
//! when an engine's total differs from SQLite's. The selective shapes run 200 calls (50 with
//! `--quick`), the full aggregate 3 (1). Under the table: each engine's plan for the first
//! call, so a ratio can be read against the plan that produced it.
//!
//! Fairness: rowdex on fjall (default durability, 512 MiB block cache) and SQLite (WAL,
//! `synchronous = NORMAL`, 512 MiB page cache) are called in-process; PostgreSQL
//! (`shared_buffers = 512MB`, `synchronous_commit = off`) over loopback TCP, so each of its
//! calls includes a round trip (about 50-100 us on this machine) the others do not pay.
//! rowdex and SQLite are closed and opened again after the load (their caches start cold);
//! PostgreSQL gets a new connection, its server and shared buffers stay.
//!
//! Run: `cargo bench -p rowdex --bench joins [-- --quick] [--users N]
//! [--engines rowdex,sqlite,postgres] [--calls N]` (`--calls` sets the calls of each selective
//! shape, so that a profiler attached when a shape's `PLAN` lines appear can sample it). Default N is 1 000 000 (`--quick`: 100 000).

mod pg_server;

mod engines;
mod shapes;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use crate::engines::{JoinEngine, Postgres, Rowdex, Sqlite};
use crate::shapes::{BenchResult, SHAPES, params, write_csv};

const ENGINES: [&str; 3] = ["rowdex", "sqlite", "postgres"];

struct Args {
    quick: bool,
    users: u64,
    engines: Vec<String>,
    child: Option<String>,
    /// Calls per selective shape instead of the default (for a profiler to sample).
    calls: Option<u64>,
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
        let users = match value_of("--users") {
            Some(n) => n.parse()?,
            None if quick => 100_000,
            None => 1_000_000,
        };
        let engines = match value_of("--engines") {
            Some(list) => list.split(',').map(str::to_string).collect(),
            None => ENGINES.iter().map(|e| e.to_string()).collect(),
        };
        Ok(Args {
            quick,
            users,
            engines,
            child: value_of("--child"),
            calls: value_of("--calls").map(|n| n.parse()).transpose()?,
        })
    }

    fn calls(&self, whole: bool) -> u64 {
        if let (Some(calls), false) = (self.calls, whole) {
            return calls;
        }
        match (whole, self.quick) {
            (true, true) => 1,
            (true, false) => 3,
            (false, true) => 50,
            (false, false) => 200,
        }
    }
}

/// A child: loads `engine`, reopens it, times every shape and prints its lines.
async fn child(args: &Args, engine: &str) -> BenchResult<()> {
    let temp = tempfile::tempdir()?;
    let dir = temp.path();
    write_csv(dir, args.users)?;
    match engine {
        "rowdex" => measure(args, Rowdex::new(&dir.join("rowdex")), dir).await,
        "sqlite" => measure(args, Sqlite::new(dir), dir).await,
        "postgres" => measure(args, Postgres::start()?, dir).await,
        other => Err(format!("unknown engine {other}").into()),
    }
}

async fn measure(
    args: &Args,
    mut engine: impl JoinEngine,
    dir: &std::path::Path,
) -> BenchResult<()> {
    let started = Instant::now();
    engine.load(dir).await?;
    println!("RESULT load_s {}", started.elapsed().as_secs_f64());
    engine.reopen().await?;
    for (index, shape) in SHAPES.iter().enumerate() {
        let calls = args.calls(shape.whole);
        for line in engine.plan(index, &params(shape, 0, args.users)).await? {
            println!("PLAN {} {line}", shape.name);
        }
        for i in 0..calls.min(20) {
            engine
                .run(index, &params(shape, i + calls, args.users))
                .await?;
        }
        let mut total = 0;
        let started = Instant::now();
        for i in 0..calls {
            total += engine.run(index, &params(shape, i, args.users)).await? as u64;
        }
        let mean_us = started.elapsed().as_secs_f64() * 1e6 / calls as f64;
        println!("RESULT {} {mean_us}", shape.name);
        println!("ROWS {} {total}", shape.name);
    }
    Ok(())
}

/// What the children printed, by engine.
#[derive(Default)]
struct Collected {
    results: BTreeMap<(String, String), f64>,
    rows: BTreeMap<(String, String), u64>,
    plans: Vec<(String, String, String)>,
}

impl Collected {
    fn take(&mut self, engine: &str, stdout: &str) {
        for line in stdout.lines() {
            let mut words = line.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("RESULT"), Some(case), Some(value)) => {
                    if let Ok(value) = value.parse() {
                        self.results.insert((engine.into(), case.into()), value);
                    }
                }
                (Some("ROWS"), Some(case), Some(value)) => {
                    if let Ok(value) = value.parse() {
                        self.rows.insert((engine.into(), case.into()), value);
                    }
                }
                (Some("PLAN"), Some(case), Some(text)) => {
                    self.plans.push((engine.into(), case.into(), text.into()));
                }
                _ => {}
            }
        }
    }

    fn value(&self, engine: &str, case: &str) -> Option<f64> {
        self.results.get(&(engine.into(), case.into())).copied()
    }

    fn print(&self, engines: &[String]) {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |us| format!("{:.3}", us / 1000.0));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".to_string(),
        };
        let mut header = "| shape |".to_string();
        for engine in engines {
            header.push_str(&format!(" {engine} ms |"));
        }
        header.push_str(" rowdex / postgres | rowdex / sqlite |");
        println!("{header}");
        println!("|{}", "---|".repeat(engines.len() + 3));
        let load = |engine: &str| self.value(engine, "load_s").map(|s| s * 1e6);
        for case in std::iter::once("load_s").chain(SHAPES.iter().map(|s| s.name)) {
            let value = |engine: &str| {
                if case == "load_s" {
                    load(engine)
                } else {
                    self.value(engine, case)
                }
            };
            let mut line = format!("| {case} |");
            for engine in engines {
                line.push_str(&format!(" {} |", ms(value(engine))));
            }
            let rowdex = value("rowdex");
            line.push_str(&format!(
                " {} | {} |",
                ratio(rowdex, value("postgres")),
                ratio(rowdex, value("sqlite"))
            ));
            println!("{line}");
        }
        println!();
        for (engine, case, text) in &self.plans {
            println!("plan {engine} {case}: {text}");
        }
    }

    /// Shapes whose row totals differ from SQLite's (or from the first engine's without it).
    fn mismatches(&self, engines: &[String]) -> Vec<String> {
        let reference = if engines.iter().any(|e| e == "sqlite") {
            "sqlite".to_string()
        } else {
            engines.first().cloned().unwrap_or_default()
        };
        let mut out = Vec::new();
        for shape in &SHAPES {
            let expected = self.rows.get(&(reference.clone(), shape.name.into()));
            for engine in engines {
                let got = self.rows.get(&(engine.clone(), shape.name.into()));
                if got != expected {
                    out.push(format!(
                        "{}: {engine} {got:?} rows, {reference} {expected:?}",
                        shape.name
                    ));
                }
            }
        }
        out
    }
}

fn parent(args: &Args) -> BenchResult<()> {
    let mut collected = Collected::default();
    let mut failures = Vec::new();
    for engine in &args.engines {
        eprintln!("running {engine} on {} users...", args.users);
        let mut command = Command::new(std::env::current_exe()?);
        command.args(["--child", engine, "--users", &args.users.to_string()]);
        if args.quick {
            command.arg("--quick");
        }
        if let Some(calls) = args.calls {
            command.args(["--calls", &calls.to_string()]);
        }
        let output = command.output()?;
        collected.take(engine, &String::from_utf8_lossy(&output.stdout));
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            failures.push(format!(
                "{engine} failed ({}): {}",
                output.status,
                tail.join("\n")
            ));
        }
    }
    println!(
        "users: {}, orders: {}{}",
        args.users,
        2 * args.users,
        if args.quick { " (quick)" } else { "" }
    );
    collected.print(&args.engines);
    failures.extend(collected.mismatches(&args.engines));
    for failure in &failures {
        eprintln!("{failure}");
    }
    match failures.len() {
        0 => Ok(()),
        n => Err(format!("{n} failure(s), listed above").into()),
    }
}

fn main() -> BenchResult<()> {
    let args = Args::parse()?;
    match &args.child {
        Some(engine) => tokio::runtime::Builder::new_multi_thread()
            .thread_stack_size(rowdex::WORKER_STACK_BYTES)
            .enable_all()
            .build()?
            .block_on(child(&args, engine)),
        None => parent(&args),
    }
}
