//! pgbench, PostgreSQL 15's load generator, against the server: several clients run a
//! transfer script with prepared statements (`-M prepared`) for a few seconds, retrying the
//! transactions that fail with 40001 (`--max-tries`). Nothing else may fail, the total of the
//! balances must be what it was, and every index must be in line with its rows.

use std::process::Command;

use crate::harness::{TestServer, assert_check_table_clean};

const ACCOUNTS: i64 = 100;
const START_BALANCE: i64 = 1000;

const TRANSFER: &str = "\\set a random(1, 100)
\\set b random(1, 100)
\\set x random(1, 10)
BEGIN;
UPDATE acct SET bal = bal - :x WHERE id = :a;
UPDATE acct SET bal = bal + :x WHERE id = :b;
COMMIT;
";

/// Creates `acct` with its `ACCOUNTS` accounts, each holding `START_BALANCE`.
async fn create_accounts(client: &tokio_postgres::Client) {
    client
        .batch_execute("CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL)")
        .await
        .expect("create");
    let values: Vec<String> = (1..=ACCOUNTS)
        .map(|id| format!("({id}, {START_BALANCE})"))
        .collect();
    client
        .batch_execute(&format!("INSERT INTO acct VALUES {}", values.join(", ")))
        .await
        .expect("accounts");
}

/// A number pgbench prints after `label`.
fn figure(output: &str, label: &str) -> u64 {
    output
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("pgbench printed no \"{label}\":\n{output}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_transfers_conserve_the_total() {
    let server = TestServer::start().await;
    let setup = server.client().await;
    create_accounts(&setup).await;
    setup
        .batch_execute("CREATE INDEX acct_bal ON acct (bal)")
        .await
        .expect("index");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("transfer.sql");
    std::fs::write(&script, TRANSFER).expect("script");
    let port = server.addr.port().to_string();
    let script = script.to_str().expect("a UTF-8 temporary path");
    let output = pgbench(
        &port,
        &[
            "-n",
            "-M",
            "prepared",
            "-c",
            "6",
            "-j",
            "2",
            "-T",
            "5",
            "--max-tries",
            "1000",
            "-f",
            script,
        ],
    )
    .await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "pgbench failed:\n{text}");
    let processed = figure(&text, "number of transactions actually processed: ");
    assert!(processed > 0, "{text}");
    assert_eq!(
        figure(&text, "number of failed transactions: "),
        0,
        "{text}"
    );
    let total = setup
        .query_one("SELECT sum(bal) FROM acct", &[])
        .await
        .expect("total");
    // The sum of a bigint is a numeric, as in PostgreSQL.
    assert_eq!(
        total.get::<_, rust_decimal::Decimal>(0),
        rust_decimal::Decimal::from(ACCOUNTS * START_BALANCE),
        "{text}"
    );
    assert_check_table_clean(&setup, "acct").await;
    server.stop().await;
}

/// Runs pgbench with `args` against the server on `port`, on a blocking thread.
async fn pgbench(port: &str, args: &[&str]) -> std::process::Output {
    let mut command = Command::new("pgbench");
    command
        .args(args)
        .args(["-h", "127.0.0.1", "-p", port, "-U", "rowdex", "rowdex"]);
    tokio::task::spawn_blocking(move || {
        command.output().unwrap_or_else(|e| {
            panic!("pgbench (PostgreSQL 15) must be installed to run this test: {e}")
        })
    })
    .await
    .expect("pgbench thread")
}

/// pgbench's own initialisation with its default steps (`dtgvp`): drop and create its tables
/// (with `fillfactor`), generate the data client-side (TRUNCATE and `COPY ... (freeze on)`
/// inside one transaction), vacuum them, and add their primary keys (`ALTER TABLE ... ADD
/// PRIMARY KEY`, which re-keys each table's rows); then its default TPC-B-like script runs on
/// them, and the keys hold: a branch is a point read, a repeated key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initialises_its_tables() {
    let server = TestServer::start().await;
    let port = server.addr.port().to_string();
    let output = pgbench(&port, &["-i", "-s", "1"]).await;
    assert!(
        output.status.success(),
        "pgbench -i failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let client = server.client().await;
    for (table, rows) in [
        ("pgbench_branches", 1),
        ("pgbench_tellers", 10),
        ("pgbench_accounts", 100_000),
    ] {
        let count = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .expect("count");
        assert_eq!(count.get::<_, i64>(0), rows, "{table}");
    }
    let keys = client
        .query(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
             WHERE i.indisprimary ORDER BY c.relname",
            &[],
        )
        .await
        .expect("primary keys");
    let keyed: Vec<String> = keys.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        keyed,
        vec!["pgbench_accounts", "pgbench_branches", "pgbench_tellers"]
    );
    let plan = client
        .simple_query("EXPLAIN SELECT abalance FROM pgbench_accounts WHERE aid = 7")
        .await
        .expect("explain");
    let plan: String = plan
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        plan.contains("POINT GET"),
        "a key lookup after re-keying:\n{plan}"
    );
    let repeated = client
        .batch_execute("INSERT INTO pgbench_branches (bid, bbalance) VALUES (1, 0)")
        .await
        .expect_err("bid is the key now");
    assert_eq!(crate::harness::sqlstate(&repeated), "23505");
    // One client: at scale 1 every transaction updates the one branch, where two clients'
    // optimistic transactions abort each other (the locks of issue 45).
    let run = pgbench(&port, &["-t", "100", "-c", "1"]).await;
    assert!(
        run.status.success(),
        "pgbench's run after its initialisation:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    // TPC-B's invariant: every transaction added its delta to an account, its teller, its
    // branch and the history alike.
    let sums = client
        .query_one(
            "SELECT (SELECT sum(abalance) FROM pgbench_accounts), \
             (SELECT sum(tbalance) FROM pgbench_tellers), \
             (SELECT sum(bbalance) FROM pgbench_branches), \
             (SELECT sum(delta) FROM pgbench_history), \
             (SELECT count(*) FROM pgbench_history)",
            &[],
        )
        .await
        .expect("sums");
    let (accounts, tellers, branches, history): (i64, i64, i64, i64) =
        (sums.get(0), sums.get(1), sums.get(2), sums.get(3));
    assert_eq!((tellers, branches, history), (accounts, accounts, accounts));
    assert_eq!(sums.get::<_, i64>(4), 100, "one client's 100 transactions");
    server.stop().await;
}

/// psql's `\watch` over `pg_stat_activity` during a pgbench run shows pgbench's sessions live,
/// with the statements they run; `pg_stat_statements` then counts the run's statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_watch_shows_a_pgbench_run_live() {
    let server = TestServer::start().await;
    let setup = server.client().await;
    create_accounts(&setup).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("transfer.sql");
    std::fs::write(&script, TRANSFER).expect("script");
    let port = server.addr.port().to_string();
    let script = script.to_str().expect("a UTF-8 temporary path").to_string();
    let run = {
        let port = port.clone();
        tokio::spawn(async move {
            pgbench(
                &port,
                &[
                    "-n",
                    "-M",
                    "prepared",
                    "-c",
                    "4",
                    "-j",
                    "2",
                    "-T",
                    "6",
                    "--max-tries",
                    "1000",
                    "-f",
                    &script,
                ],
            )
            .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;

    // psql watches the sessions every 0.2 s until interrupted (as Ctrl-C stops \watch).
    let watch = "SELECT application_name, state, query FROM pg_stat_activity \
                 WHERE application_name = 'pgbench' ORDER BY pid\n\\watch 0.2\n";
    let mut psql = Command::new("psql")
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "rowdex",
            "rowdex",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql (PostgreSQL 15's client) must be installed to run this test");
    {
        use std::io::Write;
        let mut stdin = psql.stdin.take().expect("stdin");
        stdin.write_all(watch.as_bytes()).expect("write the script");
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let interrupted = Command::new("kill")
        .args(["-INT", &psql.id().to_string()])
        .status()
        .expect("kill");
    assert!(interrupted.success());
    let output = tokio::task::spawn_blocking(move || psql.wait_with_output())
        .await
        .expect("psql thread")
        .expect("psql output");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let rounds = text.matches("(4 rows)").count();
    assert!(
        rounds >= 3,
        "psql's \\watch showed the 4 pgbench sessions {rounds} times:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("pgbench") && l.contains("UPDATE acct SET bal")),
        "no pgbench statement seen:\n{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("pgbench")
            && (l.contains("| active ") || l.contains("| idle in transaction "))),
        "no pgbench session seen at work:\n{text}"
    );

    let output = run.await.expect("pgbench task");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "pgbench failed:\n{report}");
    let processed = figure(&report, "number of transactions actually processed: ");
    let counted = setup
        .query_one(
            "SELECT calls FROM pg_stat_statements \
             WHERE query = 'UPDATE acct SET bal = bal - $1 WHERE id = $2'",
            &[],
        )
        .await
        .expect("the transfer's first UPDATE");
    assert!(
        counted.get::<_, i64>(0) >= processed as i64,
        "{} calls for {processed} transactions",
        counted.get::<_, i64>(0)
    );
    server.stop().await;
}
