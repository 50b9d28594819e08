//! `rowdex-slt`: runs sqllogictest files (`.slt`) and SQLite corpus files (`.test`) against
//! rowdex and prints one line per file and backend, then the record totals.
//! `rowdex-slt differential` compares rowdex with SQLite on random schemas, data and queries
//! instead, and writes each failure, shrunk, as a `.slt` file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use rowdex::Executor;
use rowdex_sql_tests::differential::{self, Config, Restriction, Restrictions};
use rowdex_sql_tests::{Backend, FileReport, collect_files, run_file_with};

/// Failures listed per file and backend in the report.
const REPORTED_FAILURES: usize = 8;

/// Lines shown of each failure message; result diffs can be long.
const SHOWN_LINES: usize = 12;

#[derive(Debug, Parser)]
#[command(
    name = "rowdex-slt",
    about = "Run sqllogictest files against rowdex",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Store to run each file on.
    #[arg(long, value_enum, default_value_t = BackendChoice::Memory)]
    backend: BackendChoice,
    /// Which executor runs queries: the native one where it applies (`auto`), or DataFusion
    /// for all of them.
    #[arg(long, value_enum, default_value_t = ExecutorChoice::Auto)]
    executor: ExecutorChoice,
    /// Print only the PASS/FAIL lines and the totals.
    #[arg(long)]
    quiet: bool,
    /// Failure messages shown under each FAIL line.
    #[arg(long, value_name = "N", default_value_t = 3)]
    failures: usize,
    /// Also write a Markdown conformance table (per file and backend: records passed, time;
    /// then the failing records) to this file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Test files, or directories searched recursively for *.slt and *.test.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compare rowdex with SQLite on random schemas, data and queries; write each failure,
    /// shrunk, as a .slt file with SQLite's answer as the expected result.
    Differential(DifferentialArgs),
}

#[derive(Debug, clap::Args)]
struct DifferentialArgs {
    /// Seed of the run: the same seed generates the same scenarios and queries.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Random queries to compare (each on every configuration).
    #[arg(long, default_value_t = 1000)]
    cases: usize,
    /// Directory for the shrunk failures' .slt files.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Queries per generated scenario (tables, rows, indexes, writes).
    #[arg(long, value_name = "N", default_value_t = 20)]
    queries_per_scenario: usize,
    /// Stores to compare.
    #[arg(long, value_enum, default_value_t = BackendChoice::Both)]
    backend: BackendChoice,
    /// Executors to compare (both unless given).
    #[arg(long, value_enum)]
    executor: Option<ExecutorChoice>,
    /// Whether rowdex runs with the scenario's secondary indexes, without, or both.
    #[arg(long, value_enum, default_value_t = IndexChoice::Both)]
    indexes: IndexChoice,
    /// Lift a generator restriction that avoids an open bug (repeatable).
    #[arg(long = "allow", value_name = "RESTRICTION")]
    allow: Vec<String>,
    /// Lift every generator restriction.
    #[arg(long)]
    allow_all: bool,
    /// Checks the shrinker may run per failure.
    #[arg(long, value_name = "N", default_value_t = 400)]
    shrink_budget: usize,
    /// Failures to shrink at most (later ones are counted only).
    #[arg(long, value_name = "N", default_value_t = 40)]
    max_shrunk: usize,
    /// Stop starting new scenarios after this many minutes.
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
    /// Keep every table under a thousand rows (no tables of thousands, loaded in one
    /// statement; they are slow in a debug build).
    #[arg(long)]
    no_huge_tables: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum IndexChoice {
    With,
    Without,
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendChoice {
    Memory,
    Fjall,
    /// A 3-member etcd cluster on loopback, started by the run (needs etcd installed).
    Etcd,
    /// Memory and fjall.
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExecutorChoice {
    Auto,
    Datafusion,
}

impl BackendChoice {
    fn backends(self) -> &'static [Backend] {
        match self {
            BackendChoice::Memory => &[Backend::Memory],
            BackendChoice::Fjall => &[Backend::Fjall],
            BackendChoice::Etcd => &[Backend::Etcd],
            BackendChoice::Both => &Backend::ALL,
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Differential(options)) = &args.command {
        return run_differential(options).await;
    }
    let executor = match args.executor {
        ExecutorChoice::Auto => Executor::Auto,
        ExecutorChoice::Datafusion => Executor::DataFusion,
    };
    let mut passed = 0usize;
    let mut failed = 0usize;
    let mut results: Vec<FileResult> = Vec::new();
    for root in &args.paths {
        let files = match collect_files(root) {
            Ok(files) => files,
            Err(error) => {
                println!("FAIL {}: {error}", root.display());
                failed += 1;
                continue;
            }
        };
        for file in files {
            for &backend in args.backend.backends() {
                let started = Instant::now();
                let report = run_file_with(&file, backend, executor, usize::MAX).await;
                let seconds = started.elapsed().as_secs_f64();
                let verdict = if report.is_pass() { "PASS" } else { "FAIL" };
                println!(
                    "{verdict} {} [{backend}] {}/{} ({:.2}s)",
                    file.display(),
                    report.records_passed,
                    report.total(),
                    seconds
                );
                if !args.quiet {
                    for failure in report.failures.iter().take(args.failures) {
                        for line in failure.lines().take(SHOWN_LINES) {
                            println!("    {line}");
                        }
                        println!();
                    }
                    let hidden = report.failures.len().saturating_sub(args.failures);
                    if hidden > 0 {
                        println!("    ... and {hidden} more failures\n");
                    }
                }
                passed += report.records_passed;
                failed += report.records_failed;
                let name = match root.parent() {
                    Some(parent) if root.is_dir() => file.strip_prefix(parent).unwrap_or(&file),
                    _ => file.file_name().map_or(file.as_path(), Path::new),
                };
                results.push(FileResult {
                    file: name.display().to_string(),
                    backend,
                    report,
                    seconds,
                });
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if let Some(path) = &args.report {
        let arguments: Vec<String> = std::env::args().skip(1).collect();
        let command = format!(
            "cargo run --release -p rowdex-sql-tests --bin rowdex-slt -- {}",
            arguments.join(" ")
        );
        if let Err(error) = std::fs::write(path, conformance_table(&results, &command)) {
            println!("cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn run_differential(args: &DifferentialArgs) -> ExitCode {
    let mut restrictions = if args.allow_all {
        Restrictions::none()
    } else {
        Restrictions::default()
    };
    for name in &args.allow {
        match name.parse::<Restriction>() {
            Ok(restriction) => restrictions.lift(restriction),
            Err(error) => {
                println!("{error}");
                return ExitCode::FAILURE;
            }
        }
    }
    let executors: &[Executor] = match args.executor {
        None => &[Executor::Auto, Executor::DataFusion],
        Some(ExecutorChoice::Auto) => &[Executor::Auto],
        Some(ExecutorChoice::Datafusion) => &[Executor::DataFusion],
    };
    let indexed: &[bool] = match args.indexes {
        IndexChoice::With => &[true],
        IndexChoice::Without => &[false],
        IndexChoice::Both => &[true, false],
    };
    let configs: Vec<Config> = Config::all()
        .into_iter()
        .filter(|c| {
            args.backend.backends().contains(&c.backend)
                && executors.contains(&c.executor)
                && indexed.contains(&c.indexed)
        })
        .collect();
    let mut options = differential::Options::new(args.seed, args.cases);
    options.queries_per_scenario = args.queries_per_scenario.max(1);
    options.configs = configs;
    options.restrictions = restrictions;
    options.out = args.out.clone();
    options.shrink_budget = args.shrink_budget;
    options.max_shrunk = args.max_shrunk;
    options.huge_tables = !args.no_huge_tables;
    options.time_limit = args
        .minutes
        .map(|m| std::time::Duration::from_secs_f64(m.max(0.0) * 60.0));
    let active: Vec<String> = options
        .restrictions
        .active()
        .iter()
        .map(|r| format!("{r} ({})", r.reason()))
        .collect();
    if !active.is_empty() {
        println!("restrictions for open bugs: {}", active.join("; "));
    }
    let mut progress = |line: &str| println!("{line}");
    match differential::run(&options, &mut progress).await {
        Ok(summary) => {
            println!("{}", summary.report());
            if summary.findings.is_empty() && summary.rejected.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            println!("differential run stopped: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One file's run on one backend.
struct FileResult {
    file: String,
    backend: Backend,
    report: FileReport,
    seconds: f64,
}

/// The Markdown report: a row per file with each backend's passed/total and time, the totals,
/// then the first line of each failure (a few per file).
fn conformance_table(results: &[FileResult], command: &str) -> String {
    let mut backends: Vec<Backend> = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    for result in results {
        if !backends.contains(&result.backend) {
            backends.push(result.backend);
        }
        if !files.contains(&result.file.as_str()) {
            files.push(&result.file);
        }
    }
    let find = |file: &str, backend: Backend| {
        results
            .iter()
            .find(|r| r.file == file && r.backend == backend)
    };
    let mut out = String::new();
    out.push_str("# Conformance on the SQLite sqllogictest corpus\n\n");
    out.push_str(
        "Records passed per file and store (records that `skipif`/`onlyif` guard away from\n",
    );
    out.push_str(
        "engines like rowdex are not counted; `onlyif sqlite` ones run, rowdex answering as\n",
    );
    out.push_str("SQLite), with the time each file took. On purpose, rowdex enforces declared\n");
    out.push_str(
        "`VARCHAR(n)` lengths as PostgreSQL does, where SQLite ignores them: the 4 records of\n",
    );
    out.push_str(
        "`evidence/slt_lang_replace.test` that write 17 to 23 characters into a VARCHAR(16)\n",
    );
    out.push_str("fail for it. Regenerate with\n\n");
    let _ = writeln!(out, "    {command}\n");
    out.push_str("| file |");
    for backend in &backends {
        let _ = write!(out, " {backend} |");
    }
    out.push_str("\n|---|");
    for _ in &backends {
        out.push_str("---|");
    }
    out.push('\n');
    for file in &files {
        let _ = write!(out, "| {file} |");
        for &backend in &backends {
            match find(file, backend) {
                Some(r) => {
                    let mark = if r.report.is_pass() { "" } else { " **fails**" };
                    let _ = write!(
                        out,
                        " {}/{} ({:.1} s){mark} |",
                        r.report.records_passed,
                        r.report.total(),
                        r.seconds
                    );
                }
                None => out.push_str(" - |"),
            }
        }
        out.push('\n');
    }
    out.push_str("| **total** |");
    for &backend in &backends {
        let of_backend = results.iter().filter(|r| r.backend == backend);
        let (passed, total, seconds) = of_backend.fold((0, 0, 0.0), |(p, t, s), r| {
            (
                p + r.report.records_passed,
                t + r.report.total(),
                s + r.seconds,
            )
        });
        let share = if total == 0 {
            100.0
        } else {
            100.0 * passed as f64 / total as f64
        };
        let _ = write!(out, " **{passed}/{total} ({share:.2}%), {seconds:.0} s** |");
    }
    out.push_str("\n\n## Failing records\n\n");
    let failing: Vec<&FileResult> = results.iter().filter(|r| !r.report.is_pass()).collect();
    if failing.is_empty() {
        out.push_str("None.\n");
    }
    for result in failing {
        let _ = writeln!(out, "### {} [{}]\n", result.file, result.backend);
        for failure in result.report.failures.iter().take(REPORTED_FAILURES) {
            // The error's first line, its innermost cause, and the statement.
            let lines: Vec<&str> = failure
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && *l != "caused by")
                .collect();
            let mut summary: Vec<&str> = lines.iter().take(1).copied().collect();
            if let Some(sql) = lines.iter().position(|l| l.starts_with("[SQL]")) {
                if sql > 1 {
                    summary.push(lines[sql - 1]);
                }
                summary.push(lines[sql]);
            }
            let _ = writeln!(out, "- `{}`", summary.join(" / ").replace('`', "'"));
        }
        let more = result
            .report
            .failures
            .len()
            .saturating_sub(REPORTED_FAILURES);
        if more > 0 {
            let _ = writeln!(out, "- ... and {more} more");
        }
        out.push('\n');
    }
    out
}
