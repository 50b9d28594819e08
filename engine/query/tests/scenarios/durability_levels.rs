//! What each DURABILITY survives, proven against a real process: a child (this test binary,
//! re-executed with one ignored test) writes under each durability and is killed with SIGKILL
//! or traced with strace, and the parent reopens its database or reads its trace.
//!
//! - Killed: FSYNC_WAL, SYNC_WAL and (after its flush period) ASYNC_WAL commits survive;
//!   SKIP_WAL commits with nothing pushing them after are lost, whether the table or the
//!   session asked for SKIP_WAL; a commit writing a SKIP_WAL table and a SYNC_WAL one survives
//!   whole (the strongest durability wins).
//! - Traced: a FSYNC_WAL commit fsyncs the journal (a kill cannot show that: the OS keeps its
//!   page cache), and a SKIP_WAL commit does not write it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rowdex::Database;

use crate::{TestResult, rows};

/// The child's database directory and what it runs (see [`child`]).
const CHILD_DIR: &str = "ROWDEX_DURABILITY_CHILD_DIR";
const CHILD_PLAN: &str = "ROWDEX_DURABILITY_CHILD_PLAN";

/// Commits per durability in the traced runs.
const TRACED_COMMITS: usize = 40;

/// The child process: runs the plan `ROWDEX_DURABILITY_CHILD_PLAN` on the database in
/// `ROWDEX_DURABILITY_CHILD_DIR`. `kill`: writes under every durability, prints `ready` and
/// waits to be killed. `commits:NAME`: makes a table of that DURABILITY and writes
/// [`TRACED_COMMITS`] single-row commits to it, then closes.
#[tokio::test]
#[ignore = "child process of the durability_levels tests, which run it"]
async fn child() -> TestResult {
    let (Ok(dir), Ok(plan)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_PLAN)) else {
        return Ok(());
    };
    let db = Database::open(&dir).await?;
    let s = db.session();
    let mut out = std::io::stdout();
    if let Some(durability) = plan.strip_prefix("commits:") {
        s.execute(&format!(
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT) WITH (DURABILITY = '{durability}')"
        ))
        .await?;
        writeln!(out, "\nwriting")?;
        out.flush()?;
        for id in 0..TRACED_COMMITS {
            s.execute(&format!("INSERT INTO t VALUES ({id}, 'v')"))
                .await?;
        }
        writeln!(out, "written")?;
        out.flush()?;
        return Ok(());
    }
    s.execute(
        "CREATE TABLE t_fsync (id INT PRIMARY KEY) WITH (DURABILITY = 'FSYNC_WAL');
         CREATE TABLE t_sync (id INT PRIMARY KEY);
         CREATE TABLE t_async (id INT PRIMARY KEY) WITH (DURABILITY = ASYNC_WAL);
         CREATE TABLE t_skip (id INT PRIMARY KEY) WITH (DURABILITY = 'SKIP_WAL');
         CREATE TABLE t_session (id INT PRIMARY KEY);",
    )
    .await?;
    for id in 0..10 {
        for table in ["t_fsync", "t_sync", "t_async"] {
            s.execute(&format!("INSERT INTO {table} VALUES ({id})"))
                .await?;
        }
    }
    // The ASYNC_WAL flusher pushes the journal within its period.
    tokio::time::sleep(rowdex_store::ASYNC_WAL_PERIOD + Duration::from_millis(700)).await;
    // One commit writing a SKIP_WAL table and a SYNC_WAL one: pushed as SYNC_WAL.
    s.execute("BEGIN; INSERT INTO t_skip VALUES (100); INSERT INTO t_sync VALUES (100); COMMIT")
        .await?;
    // Nothing pushes these: the session's SKIP_WAL over a table without a durability, then
    // the table's own.
    s.execute("SET durability = 'SKIP_WAL'").await?;
    for id in 0..10 {
        s.execute(&format!("INSERT INTO t_session VALUES ({id})"))
            .await?;
    }
    s.execute("SET durability = USE_DEFAULT").await?;
    for id in 0..10 {
        s.execute(&format!("INSERT INTO t_skip VALUES ({id})"))
            .await?;
    }
    writeln!(out, "\nready")?;
    out.flush()?;
    // Killed here; a child left alive closes cleanly, which pushes everything, and the
    // parent then finds the SKIP_WAL rows and fails.
    tokio::time::sleep(Duration::from_secs(60)).await;
    Ok(())
}

/// Starts the child with `plan` on `dir`, under `strace` writing its trace to `trace` if given.
fn spawn_child(
    dir: &Path,
    plan: &str,
    trace: Option<&Path>,
) -> Result<std::process::Child, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let test_args = [
        "durability_levels::child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ];
    let mut command = match trace {
        Some(trace) => {
            let mut command = Command::new("strace");
            command
                .args([
                    "-f",
                    "-y",
                    "-e",
                    "trace=write,pwrite64,writev,fsync,fdatasync",
                    "-o",
                ])
                .arg(trace)
                .arg(exe)
                .args(test_args);
            command
        }
        None => {
            let mut command = Command::new(exe);
            command.args(test_args);
            command
        }
    };
    Ok(command
        .env(CHILD_DIR, dir)
        .env(CHILD_PLAN, plan)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

/// Reads the child's stdout until a line equal to `line` (an error if it ends first), then
/// drains the rest on a thread of its own (a closed pipe would fail the child's next print).
fn wait_for_line(child: &mut std::process::Child, line: &str) -> TestResult {
    let stdout = child.stdout.take().ok_or("the child has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    for read in lines.by_ref() {
        if read?.trim() == line {
            std::thread::spawn(move || lines.for_each(drop));
            return Ok(());
        }
    }
    Err(format!("the child ended without printing {line:?}").into())
}

#[tokio::test]
async fn each_durability_survives_a_kill_as_documented() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut child = spawn_child(dir.path(), "kill", None)?;
    let waited = wait_for_line(&mut child, "ready");
    child.kill()?;
    child.wait()?;
    waited?;
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    let count = |table: &str| format!("SELECT count(*) FROM {table}");
    for (table, survivors) in [
        ("t_fsync", "10"),
        ("t_sync", "11"),
        ("t_async", "10"),
        ("t_skip", "1"),
        ("t_session", "0"),
    ] {
        assert_eq!(
            rows(&s, &count(table)).await?,
            vec![vec![survivors.to_string()]],
            "rows of {table} after the kill"
        );
    }
    // The one SKIP_WAL row that survived came with a SYNC_WAL table's row in one commit.
    assert_eq!(rows(&s, "SELECT id FROM t_skip").await?, vec![vec!["100"]]);
    assert_eq!(
        rows(&s, "SELECT count(*) FROM t_sync WHERE id = 100").await?,
        vec![vec!["1"]]
    );
    // What was lost was lost whole: each table checks clean.
    for table in ["t_fsync", "t_sync", "t_async", "t_skip", "t_session"] {
        s.execute(&format!("CHECK TABLE {table}")).await?;
    }
    Ok(())
}

/// The journal writes and syncs of a traced child's commits to a table of `durability`.
struct JournalCalls {
    writes: usize,
    syncs: usize,
}

fn traced_commits(durability: &str) -> Result<JournalCalls, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let trace = dir.path().join("trace");
    let data = dir.path().join("db");
    let mut child = spawn_child(&data, &format!("commits:{durability}"), Some(&trace))?;
    let waited = wait_for_line(&mut child, "written");
    let status = child.wait()?;
    waited?;
    assert!(status.success(), "the traced child failed: {status}");
    let text = std::fs::read_to_string(&trace)?;
    // `-y` names each descriptor's file: fjall's journals are the database folder's `N.jnl`.
    let folder = format!("<{}/", data.display());
    let mut calls = JournalCalls {
        writes: 0,
        syncs: 0,
    };
    let journal_calls = text
        .lines()
        .filter(|line| line.contains(&folder) && line.contains(".jnl>"));
    for line in journal_calls {
        let call = line.split_whitespace().nth(1).unwrap_or_default();
        if call.starts_with("fsync(") || call.starts_with("fdatasync(") {
            calls.syncs += 1;
        } else if call.starts_with("write") || call.starts_with("pwrite64(") {
            calls.writes += 1;
        }
    }
    Ok(calls)
}

#[test]
fn fsync_wal_syncs_every_commit_and_skip_wal_writes_none() -> TestResult {
    let fsync = traced_commits("FSYNC_WAL")?;
    let sync = traced_commits("SYNC_WAL")?;
    let skip = traced_commits("SKIP_WAL")?;
    eprintln!(
        "journal calls for {TRACED_COMMITS} commits: FSYNC_WAL {} writes {} syncs, SYNC_WAL {} \
         writes {} syncs, SKIP_WAL {} writes {} syncs",
        fsync.writes, fsync.syncs, sync.writes, sync.syncs, skip.writes, skip.syncs
    );
    assert!(
        fsync.syncs >= sync.syncs + TRACED_COMMITS,
        "FSYNC_WAL commits were not each synced"
    );
    assert!(
        sync.writes >= TRACED_COMMITS,
        "SYNC_WAL commits were not each written to the journal"
    );
    // The SKIP_WAL run writes the journal for its CREATE TABLE (the catalog's commit takes the
    // default) and at its clean close, never for a commit.
    assert!(
        skip.writes <= 2,
        "SKIP_WAL commits were written to the journal"
    );
    Ok(())
}
