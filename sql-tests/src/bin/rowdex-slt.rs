//! `rowdex-slt`: runs sqllogictest files (`.slt`) and SQLite corpus files (`.test`) against
//! rowdex and prints one line per file and backend, then the record totals.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use rowdex_sql_tests::{Backend, collect_files, run_file};

/// Lines shown of each failure message; result diffs can be long.
const SHOWN_LINES: usize = 12;

#[derive(Debug, Parser)]
#[command(name = "rowdex-slt", about = "Run sqllogictest files against rowdex")]
struct Args {
    /// Store to run each file on.
    #[arg(long, value_enum, default_value_t = BackendChoice::Memory)]
    backend: BackendChoice,
    /// Print only the PASS/FAIL lines and the totals.
    #[arg(long)]
    quiet: bool,
    /// Failure messages shown under each FAIL line.
    #[arg(long, value_name = "N", default_value_t = 3)]
    failures: usize,
    /// Test files, or directories searched recursively for *.slt and *.test.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendChoice {
    Memory,
    Fjall,
    Both,
}

impl BackendChoice {
    fn backends(self) -> &'static [Backend] {
        match self {
            BackendChoice::Memory => &[Backend::Memory],
            BackendChoice::Fjall => &[Backend::Fjall],
            BackendChoice::Both => &Backend::ALL,
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut passed = 0usize;
    let mut failed = 0usize;
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
                let report = run_file(&file, backend).await;
                let verdict = if report.is_pass() { "PASS" } else { "FAIL" };
                println!(
                    "{verdict} {} [{backend}] {}/{} ({:.2}s)",
                    file.display(),
                    report.records_passed,
                    report.total(),
                    started.elapsed().as_secs_f64()
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
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
