//! The clients applications are written with, each run against `rowdex serve` and PostgreSQL 15
//! side by side: psycopg 3, SQLAlchemy 2 (with pandas), Alembic, asyncpg and node-postgres run
//! the scenarios under `tests/clients/`, and sysbench its own unmodified OLTP workloads.
//!
//! A scenario prints one JSON line per step (its value, or its error's SQLSTATE; see
//! `tests/clients/transcript.py`). It must run clean on PostgreSQL (its own checks pass), and
//! rowdex's transcript must equal PostgreSQL's line for line, except for the steps listed in
//! `tests/clients/known-differences.txt`, each with the reason rowdex differs. A listed step
//! that now matches fails the test too, so the list only ever says what is still true.
//!
//! The clients come from `scripts/install-clients` (which `.ci/test` runs): a virtual
//! environment, node-postgres, Debian's sysbench and PostgreSQL 15. Without them these tests
//! fail, saying what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::TestServer;
use crate::postgres::PostgresPeer;

/// How long one scenario may run on one peer.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(600);

/// Where the installed clients are.
struct Clients {
    python: PathBuf,
    node_modules: PathBuf,
    sysbench: PathBuf,
    postgres_bin: PathBuf,
}

fn cache_dir() -> PathBuf {
    match std::env::var_os("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"),
    }
    .join("rowdex")
}

/// A path from `variable`, else `default`; it must exist.
fn installed(variable: &str, default: PathBuf, what: &str) -> PathBuf {
    let path = std::env::var_os(variable).map_or(default, PathBuf::from);
    assert!(
        path.exists(),
        "{what} not found at {} (scripts/install-clients installs it, and .ci/test runs that \
         script; {variable} points elsewhere)",
        path.display()
    );
    path
}

fn clients() -> Clients {
    let cache = cache_dir();
    Clients {
        python: installed(
            "ROWDEX_CLIENTS_PYTHON",
            cache.join("clients-venv/bin/python"),
            "the clients' Python (psycopg, asyncpg, SQLAlchemy, Alembic, pandas)",
        ),
        node_modules: installed(
            "ROWDEX_CLIENTS_NODE_MODULES",
            cache.join("clients-node/node_modules"),
            "node-postgres",
        ),
        sysbench: installed(
            "ROWDEX_SYSBENCH",
            PathBuf::from("/usr/bin/sysbench"),
            "sysbench",
        ),
        postgres_bin: installed(
            "ROWDEX_POSTGRES_BIN",
            PathBuf::from("/usr/lib/postgresql/15/bin"),
            "PostgreSQL 15's server binaries",
        ),
    }
}

/// The samples of a metrics endpoint, read by the Prometheus Python client's OpenMetrics
/// parser (`tests/clients/read_metrics.py`): `type name{labels} value` lines.
pub(crate) async fn read_metrics(url: &str) -> Vec<String> {
    let python = installed(
        "ROWDEX_CLIENTS_PYTHON",
        cache_dir().join("clients-venv/bin/python"),
        "the clients' Python (prometheus-client)",
    );
    let mut command = Command::new(python);
    command
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(scenarios_dir().join("read_metrics.py"))
        .arg(url);
    let run = run_program(command, Duration::from_secs(60)).await;
    assert!(run.success, "read_metrics.py failed: {}", run.stderr);
    run.stdout.lines().map(str::to_string).collect()
}

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// What one run of a program printed, and how it ended.
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Runs `command` to its end (killed after `timeout`), on a blocking thread.
async fn run_program(mut command: Command, timeout: Duration) -> Run {
    tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the client program");
        let mut stdout_pipe = child.stdout.take().expect("stdout");
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout_pipe.read_to_string(&mut text);
            text
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = stderr.join().unwrap_or_default();
        if status.is_none() {
            stderr.push_str(&format!("\n(killed after {timeout:?})"));
        }
        Run {
            success: status.is_some_and(|s| s.success()),
            stdout: stdout.join().unwrap_or_default(),
            stderr,
        }
    })
    .await
    .expect("program thread")
}

/// A peer's address and login.
struct Target<'a> {
    peer: &'a str,
    port: u16,
    user: &'a str,
    dbname: &'a str,
}

/// The command that runs scenario `file` against `target`.
fn scenario_command(clients: &Clients, file: &str, target: &Target<'_>) -> Command {
    let path = scenarios_dir().join(file);
    let mut command = if file.ends_with(".js") {
        let mut node = Command::new("node");
        node.env("NODE_PATH", &clients.node_modules);
        node
    } else {
        let mut python = Command::new(&clients.python);
        python.env("PYTHONDONTWRITEBYTECODE", "1");
        python
    };
    command
        .arg(path)
        .args(["--host", "127.0.0.1", "--port", &target.port.to_string()])
        .args(["--user", target.user, "--dbname", target.dbname])
        .args(["--peer", target.peer])
        .current_dir(scenarios_dir());
    command
}

/// A transcript: each step's line by (step name, occurrence), in order.
fn transcript(stdout: &str) -> Vec<((String, usize), String)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut steps = Vec::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let parsed: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a transcript line that is not JSON ({e}): {line}"));
        let name = parsed
            .get("step")
            .and_then(|s| s.as_str())
            .unwrap_or_else(|| panic!("a transcript line without a step: {line}"))
            .to_string();
        let occurrence = seen.entry(name.clone()).or_default();
        *occurrence += 1;
        steps.push(((name, *occurrence), line.to_string()));
    }
    steps
}

/// The known differences of `file`: step name -> reason.
fn known_differences(file: &str) -> BTreeMap<String, String> {
    let path = scenarios_dir().join("known-differences.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut known = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, reason) = line
            .split_once(" | ")
            .unwrap_or_else(|| panic!("known-differences.txt: no ` | reason` in {line:?}"));
        let (scenario, step) = key
            .split_once(": ")
            .unwrap_or_else(|| panic!("known-differences.txt: no `file: step` in {line:?}"));
        if scenario == file {
            known.insert(step.to_string(), reason.to_string());
        }
    }
    known
}

fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(400).collect();
    if short.len() < text.len() {
        short.push_str("...");
    }
    short
}

/// Runs scenario `file` on PostgreSQL (a database of its own on `postgres`) and on a fresh
/// `rowdex serve`, and compares the transcripts.
async fn compare_scenario(clients: &Clients, postgres: &PostgresPeer, file: &str) {
    let dbname = format!(
        "sc_{}",
        file.split('.').next().unwrap_or(file).replace('-', "_")
    );
    postgres.create_database(&dbname).await;
    let on_postgres = run_program(
        scenario_command(
            clients,
            file,
            &Target {
                peer: "postgres",
                port: postgres.port,
                user: postgres.user(),
                dbname: &dbname,
            },
        ),
        SCENARIO_TIMEOUT,
    )
    .await;
    assert!(
        on_postgres.success,
        "{file} does not run clean on PostgreSQL 15 (its own checks must pass there):\n{}",
        on_postgres.stderr
    );
    let server = TestServer::start().await;
    let on_rowdex = run_program(
        scenario_command(
            clients,
            file,
            &Target {
                peer: "rowdex",
                port: server.addr.port(),
                user: "rowdex",
                dbname: "rowdex",
            },
        ),
        SCENARIO_TIMEOUT,
    )
    .await;
    server.stop().await;

    let expected = transcript(&on_postgres.stdout);
    assert!(
        !expected.is_empty(),
        "{file} recorded no step on PostgreSQL"
    );
    let got: BTreeMap<(String, usize), String> =
        transcript(&on_rowdex.stdout).into_iter().collect();
    let known = known_differences(file);
    let mut unexpected = Vec::new();
    let mut now_equal = Vec::new();
    let mut differing = BTreeSet::new();
    for ((name, occurrence), line) in &expected {
        let same = got.get(&(name.clone(), *occurrence)) == Some(line);
        if !same {
            differing.insert(name.clone());
        }
        if !same && !known.contains_key(name) {
            let rowdex = got.get(&(name.clone(), *occurrence)).map_or_else(
                || "(no such step: the scenario stopped before it)".into(),
                |l| shorten(l),
            );
            unexpected.push(format!(
                "  {name}\n    postgres: {}\n    rowdex:   {rowdex}",
                shorten(line)
            ));
        }
    }
    for name in known.keys() {
        if !differing.contains(name) {
            now_equal.push(format!("  {name}"));
        }
    }
    println!(
        "{file}: {} steps, {} equal to PostgreSQL's, {} known differences",
        expected.len(),
        expected.len()
            - expected
                .iter()
                .filter(|(k, _)| differing.contains(&k.0))
                .count(),
        known.len()
    );
    assert!(
        unexpected.is_empty() && now_equal.is_empty(),
        "{file} on rowdex differs from PostgreSQL 15 where known-differences.txt does not say so:\n{}\n\
         listed in known-differences.txt but now equal (remove them):\n{}\n\
         rowdex's side of the run, stderr:\n{}",
        unexpected.join("\n"),
        now_equal.join("\n"),
        shorten_tail(&on_rowdex.stderr)
    );
}

/// The last lines of a program's error output.
fn shorten_tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

async fn scenario(file: &str) {
    let clients = clients();
    let postgres = PostgresPeer::start(&clients.postgres_bin).await;
    compare_scenario(&clients, &postgres, file).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_as_postgresql() {
    scenario("psycopg_scenario.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_and_pandas_as_postgresql() {
    scenario("sqlalchemy_scenario.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alembic_as_postgresql() {
    scenario("alembic_scenario.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asyncpg_as_postgresql() {
    scenario("asyncpg_scenario.py").await;
}

/// The types applications declare (UUID, volatile DEFAULTs), through psycopg and asyncpg.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_types_as_postgresql() {
    scenario("types_scenario.py").await;
}

/// JSON and JSONB through psycopg's adapters, asyncpg's codecs, SQLAlchemy's JSONB type and
/// COPY, with the operators and functions applications write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_as_postgresql() {
    scenario("json_scenario.py").await;
}

/// TIMESTAMPTZ in a session whose zone is not UTC: psycopg's aware datetimes (text and binary),
/// asyncpg's codecs, SQLAlchemy's DateTime(timezone=True), COPY, zone-aware functions and casts,
/// SET/RESET TIME ZONE and a zone given at connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamptz_as_postgresql() {
    scenario("timestamptz_scenario.py").await;
}

/// Array columns through psycopg's lists (text and binary), asyncpg's codecs, SQLAlchemy's
/// ARRAY type and reflection, COPY, and the operators and functions written by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_as_postgresql() {
    scenario("arrays_scenario.py").await;
}

/// Foreign keys through SQLAlchemy's models and reflection and psycopg's statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_keys_as_postgresql() {
    scenario("foreign_keys_scenario.py").await;
}

/// Generated columns (one leading the key) and indexes on expressions through SQLAlchemy's
/// models and reflection and psycopg's statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_columns_as_postgresql() {
    scenario("generated_scenario.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitoring_as_postgresql() {
    scenario("monitoring_scenario.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_postgres_as_postgresql() {
    scenario("node_pg_scenario.js").await;
}

/// sysbench's OLTP workloads, each a short run with its unmodified Lua scripts.
const SYSBENCH_WORKLOADS: [&str; 8] = [
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
];

/// The figure sysbench prints after `label` (`transactions:  90  (17.68 per sec.)` -> 90).
fn sysbench_count(output: &str, label: &str) -> Option<u64> {
    output
        .lines()
        .find_map(|line| line.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Runs `sysbench <workload> <action>` against a server.
async fn sysbench(clients: &Clients, target: &Target<'_>, workload: &str, action: &str) -> Run {
    let mut command = Command::new(&clients.sysbench);
    command
        .arg(workload)
        .args(["--db-driver=pgsql", "--pgsql-host=127.0.0.1"])
        .arg(format!("--pgsql-port={}", target.port))
        .arg(format!("--pgsql-user={}", target.user))
        .arg(format!("--pgsql-db={}", target.dbname))
        .args(["--tables=2", "--table-size=500", "--threads=2", "--time=2"])
        .arg(action);
    run_program(command, Duration::from_secs(300)).await
}

/// Prepares, runs and cleans up every OLTP workload on one peer: each step must succeed and
/// each run commit transactions. Returns the errors sysbench ignored (and retried) per
/// workload.
async fn sysbench_workloads(clients: &Clients, target: &Target<'_>) -> Vec<(String, u64)> {
    let mut ignored = Vec::new();
    for workload in SYSBENCH_WORKLOADS {
        for action in ["prepare", "run", "cleanup"] {
            let run = sysbench(clients, target, workload, action).await;
            assert!(
                run.success && !run.stdout.contains("FATAL") && !run.stderr.contains("FATAL"),
                "sysbench {workload} {action} failed on {}:\n{}\n{}",
                target.peer,
                run.stdout,
                run.stderr
            );
            if action == "run" {
                let transactions = sysbench_count(&run.stdout, "transactions:").unwrap_or(0);
                assert!(
                    transactions > 0,
                    "sysbench {workload} committed no transaction on {}:\n{}",
                    target.peer,
                    run.stdout
                );
                let errors = sysbench_count(&run.stdout, "ignored errors:").unwrap_or(0);
                ignored.push((workload.to_string(), errors));
            }
        }
    }
    ignored
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sysbench_oltp_workloads_run_unmodified() {
    let clients = clients();
    let postgres = PostgresPeer::start(&clients.postgres_bin).await;
    postgres.create_database("sbtest").await;
    let on_postgres = sysbench_workloads(
        &clients,
        &Target {
            peer: "postgres",
            port: postgres.port,
            user: postgres.user(),
            dbname: "sbtest",
        },
    )
    .await;
    let server = TestServer::start().await;
    let on_rowdex = sysbench_workloads(
        &clients,
        &Target {
            peer: "rowdex",
            port: server.addr.port(),
            user: "rowdex",
            dbname: "rowdex",
        },
    )
    .await;
    server.stop().await;
    // Errors sysbench ignores are retried serialization failures (40001): rowdex's optimistic
    // transactions abort where PostgreSQL's row locks wait (issue 45 takes that on).
    println!("sysbench ignored errors, postgres: {on_postgres:?}; rowdex: {on_rowdex:?}");
}

#[test]
fn sysbench_counts_are_read() {
    let output = "    transactions:                        90     (17.68 per sec.)\n    ignored errors:                      88     (17.28 per sec.)";
    assert_eq!(sysbench_count(output, "transactions:"), Some(90));
    assert_eq!(sysbench_count(output, "ignored errors:"), Some(88));
    assert_eq!(sysbench_count(output, "queries:"), None);
}

#[test]
fn every_scenario_file_is_run() {
    let mut files: Vec<String> = std::fs::read_dir(scenarios_dir())
        .expect("tests/clients")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with("_scenario.py") || name.ends_with("_scenario.js"))
        .collect();
    files.sort();
    let this = include_str!("drivers.rs");
    for file in files {
        assert!(
            this.contains(&format!("scenario(\"{file}\")")),
            "{file} is in tests/clients but no test runs it"
        );
    }
}
