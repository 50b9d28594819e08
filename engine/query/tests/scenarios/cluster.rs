//! Several rowdex processes on one etcd cluster (three members on loopback, started once for
//! this binary). Each `Database` here opens the cluster by itself, with its own store client,
//! catalog cache, statistics and row-id blocks, exactly as a separate `rowdex serve` process
//! would: they share nothing but the cluster. (The server's tests run two real processes.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rowdex::{Database, Datum, Error, Session};
use rowdex_store::etcd_store::local_cluster::LocalEtcdCluster;

use crate::{Rng, TestResult, rows, table};

/// The cluster the cases share (one per test binary).
pub fn cluster() -> &'static LocalEtcdCluster {
    LocalEtcdCluster::shared()
        .expect("a 3-member etcd cluster (scripts/install-etcd installs etcd)")
}

/// The address of a new, empty database on the shared cluster.
pub fn new_database_address(theme: &str) -> String {
    static DATABASES: AtomicUsize = AtomicUsize::new(0);
    let n = DATABASES.fetch_add(1, Ordering::Relaxed);
    cluster().address(&format!("{theme}{n}")).to_string()
}

/// Two "processes" on one new database.
async fn two_processes(theme: &str) -> Result<(Database, Database), Error> {
    let address = new_database_address(theme);
    Ok((
        Database::open_etcd(&address).await?,
        Database::open_etcd(&address).await?,
    ))
}

async fn check_table(session: &Session, name: &str) -> TestResult {
    for row in rows(session, &format!("CHECK TABLE {name}")).await? {
        assert_eq!(row.last().map(String::as_str), Some("ok"), "{row:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_in_one_process_is_seen_by_the_other() -> TestResult {
    let (a, b) = two_processes("ddl").await?;
    let (a, b) = (a.session(), b.session());
    a.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, s TEXT);
         INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 10, 'z');",
    )
    .await?;
    assert_eq!(
        rows(&b, "SELECT id FROM t WHERE a = 10 ORDER BY id").await?,
        table(&[&["1"], &["3"]])
    );
    let prepared = b.prepare("SELECT id FROM t WHERE a = $1 ORDER BY id")?;
    prepared.execute(&[Datum::Int(10)]).await?;
    let plan = rows(&b, "EXPLAIN SELECT id FROM t WHERE a = 10").await?;
    assert!(format!("{plan:?}").contains("FULL SCAN"), "{plan:?}");

    // An index created by A: B plans with it, and B's prepared statement re-plans.
    a.execute("CREATE INDEX ta ON t (a)").await?;
    let plan = rows(&b, "EXPLAIN SELECT id FROM t WHERE a = 10").await?;
    assert!(format!("{plan:?}").contains("ta"), "{plan:?}");
    b.execute("INSERT INTO t VALUES (4, 10, 'w')").await?;
    let found = prepared.execute(&[Datum::Int(10)]).await?;
    assert_eq!(
        crate::cells(&output_batches(found)),
        table(&[&["1"], &["3"], &["4"]])
    );
    check_table(&a, "t").await?;

    // A column added by A: B writes and reads the new shape.
    a.execute("ALTER TABLE t ADD COLUMN c INT DEFAULT 5")
        .await?;
    b.execute("INSERT INTO t VALUES (9, 1, 'q', 7)").await?;
    assert_eq!(
        rows(&b, "SELECT id, c FROM t WHERE id IN (1, 9) ORDER BY id").await?,
        table(&[&["1", "5"], &["9", "7"]])
    );

    // Dropped by A: gone for B.
    a.execute("DROP TABLE t").await?;
    let error = b.execute("SELECT * FROM t").await.expect_err("dropped");
    assert!(error.to_string().contains("not found") || error.to_string().contains("t"));
    assert!(
        b.execute("INSERT INTO t VALUES (5, 1, 'v', 1)")
            .await
            .is_err()
    );
    Ok(())
}

fn output_batches(output: rowdex::Output) -> Vec<rowdex::arrow::array::RecordBatch> {
    match output {
        rowdex::Output::Rows { batches, .. } => batches,
        other => panic!("expected rows, got {other:?}"),
    }
}

/// Runs `sql` (a transaction) until it commits, rolling back after a retryable error.
async fn run_retrying(session: &Session, sql: &str) -> Result<usize, Error> {
    for attempt in 1.. {
        match session.execute(sql).await {
            Ok(_) => return Ok(attempt),
            Err(error) if error.is_retryable() && attempt < 50 => {
                let _ = session.execute("ROLLBACK").await;
            }
            Err(error) => return Err(error),
        }
    }
    unreachable!("the loop returns")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transfers_through_two_processes_conserve_the_total() -> TestResult {
    let (a, b) = two_processes("transfers").await?;
    a.session()
        .execute(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal INT);
             INSERT INTO acct SELECT x, 100 FROM generate_series(1, 8) AS g(x);",
        )
        .await?;
    let mut tasks = Vec::new();
    for (n, db) in [&a, &b, &a, &b].into_iter().enumerate() {
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x9E37_79B9 + n as u64);
            let mut retries = 0;
            for _ in 0..15 {
                let from = rng.int(1, 9);
                let to = rng.int(1, 9);
                let amount = rng.int(1, 30);
                let sql = format!(
                    "BEGIN; UPDATE acct SET bal = bal - {amount} WHERE id = {from}; \
                     UPDATE acct SET bal = bal + {amount} WHERE id = {to}; COMMIT;"
                );
                retries += run_retrying(&session, &sql).await? - 1;
            }
            Ok::<usize, Error>(retries)
        }));
    }
    let mut retries = 0;
    for task in tasks {
        retries += task.await??;
    }
    for db in [&a, &b] {
        assert_eq!(
            rows(&db.session(), "SELECT sum(bal), count(*) FROM acct").await?,
            table(&[&["800", "8"]]),
            "after {retries} retried transfers"
        );
    }
    check_table(&b.session(), "acct").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_index_holds_across_processes() -> TestResult {
    let (a, b) = two_processes("unique").await?;
    a.session()
        .execute(
            "CREATE TABLE u (id INT PRIMARY KEY, email TEXT);
             CREATE UNIQUE INDEX ue ON u (email);",
        )
        .await?;
    let mut tasks = Vec::new();
    for (n, db) in [&a, &b].into_iter().enumerate() {
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            let mut inserted = 0;
            for e in 0..20 {
                let id = n * 100 + e;
                match session
                    .execute(&format!("INSERT INTO u VALUES ({id}, 'user{e}')"))
                    .await
                {
                    Ok(_) => inserted += 1,
                    Err(error) if error.to_string().contains("UNIQUE") => {}
                    Err(error) => return Err(error),
                }
            }
            Ok::<usize, Error>(inserted)
        }));
    }
    let mut inserted = 0;
    for task in tasks {
        inserted += task.await??;
    }
    assert_eq!(inserted, 20, "each email exactly once");
    assert_eq!(
        rows(
            &b.session(),
            "SELECT count(*), count(DISTINCT email) FROM u"
        )
        .await?,
        table(&[&["20", "20"]])
    );
    check_table(&a.session(), "u").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_ids_and_sequences_are_never_handed_out_twice() -> TestResult {
    let (a, b) = two_processes("ids").await?;
    a.session()
        .execute(
            "CREATE TABLE h (v INT);
             CREATE TABLE s (id SERIAL PRIMARY KEY, v INT);",
        )
        .await?;
    let mut tasks = Vec::new();
    for (n, db) in [&a, &b].into_iter().enumerate() {
        let session = db.session();
        tasks.push(tokio::spawn(async move {
            for batch in 0..10 {
                let values: Vec<String> = (0..10)
                    .map(|i| format!("({})", n * 1000 + batch * 10 + i))
                    .collect();
                let values = values.join(", ");
                session
                    .execute(&format!("INSERT INTO h VALUES {values}"))
                    .await?;
                session
                    .execute(&format!("INSERT INTO s (v) VALUES {values}"))
                    .await?;
            }
            Ok::<(), Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let session = a.session();
    assert_eq!(
        rows(&session, "SELECT count(*), count(DISTINCT v) FROM h").await?,
        table(&[&["200", "200"]])
    );
    assert_eq!(
        rows(&session, "SELECT count(*), count(DISTINCT id) FROM s").await?,
        table(&[&["200", "200"]])
    );
    check_table(&session, "h").await?;
    check_table(&session, "s").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_index_in_one_process_while_another_writes() -> TestResult {
    let (a, b) = two_processes("online").await?;
    a.session()
        .execute(
            "CREATE TABLE w (id INT PRIMARY KEY, k INT, pad TEXT);
             INSERT INTO w SELECT x, x % 50, 'p' FROM generate_series(1, 3000) AS g(x);",
        )
        .await?;
    let writer = {
        let session = b.session();
        tokio::spawn(async move {
            let mut rng = Rng(7);
            for n in 0..120 {
                let id = rng.int(1, 4000);
                let sql = match n % 3 {
                    0 => format!("UPSERT INTO w VALUES ({id}, {}, 'w')", rng.int(0, 50)),
                    1 => format!("UPDATE w SET k = {} WHERE id = {id}", rng.int(0, 50)),
                    _ => format!("DELETE FROM w WHERE id = {id}"),
                };
                session.execute(&sql).await?;
            }
            Ok::<(), Error>(())
        })
    };
    a.session().execute("CREATE INDEX wk ON w (k)").await?;
    writer.await??;
    let (a, b) = (a.session(), b.session());
    check_table(&a, "w").await?;
    for k in [0, 17, 49] {
        let by_index = rows(
            &b,
            &format!("SELECT /*+ INDEX(w wk) */ id FROM w WHERE k = {k} ORDER BY id"),
        )
        .await?;
        let by_scan = rows(
            &b,
            &format!("SELECT /*+ NO_INDEX */ id FROM w WHERE k = {k} ORDER BY id"),
        )
        .await?;
        assert_eq!(by_index, by_scan, "k = {k}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_reopened_on_the_cluster_has_everything() -> TestResult {
    let address = new_database_address("reopen");
    {
        let db = Database::open_etcd(&address).await?;
        db.session()
            .execute(
                "CREATE TABLE r (id INT PRIMARY KEY, v TEXT);
                 CREATE INDEX rv ON r (v);
                 INSERT INTO r VALUES (1, 'a'), (2, 'b');",
            )
            .await?;
    }
    let db = Arc::new(Database::open_etcd(&address).await?);
    let session = db.session();
    assert_eq!(
        rows(&session, "SELECT id FROM r WHERE v = 'b'").await?,
        table(&[&["2"]])
    );
    check_table(&session, "r").await
}

/// Inserts rows `from..to` one statement each (an index entry with each), noting which were
/// acknowledged and which ended with an unknown outcome; any other error fails the test.
async fn insert_rows(session: &Session, from: i64, to: i64) -> Result<(Vec<i64>, Vec<i64>), Error> {
    let mut acknowledged = Vec::new();
    let mut unknown = Vec::new();
    for id in from..to {
        match session
            .execute(&format!("INSERT INTO f VALUES ({id}, {}, 'r{id}')", id % 7))
            .await
        {
            Ok(_) => acknowledged.push(id),
            Err(error) if error.is_outcome_unknown() => unknown.push(id),
            Err(error) => return Err(error),
        }
    }
    Ok((acknowledged, unknown))
}

/// Every acknowledged row is there, no more rows than were tried, and the index agrees.
async fn check_rows(session: &Session, acknowledged: &[i64], unknown: &[i64]) -> TestResult {
    let present: Vec<i64> = rows(session, "SELECT id FROM f ORDER BY id")
        .await?
        .iter()
        .map(|row| row[0].parse().expect("an id"))
        .collect();
    for id in acknowledged {
        assert!(present.contains(id), "acknowledged row {id} is missing");
    }
    for id in &present {
        assert!(
            acknowledged.contains(id) || unknown.contains(id),
            "row {id} was never acknowledged nor in doubt"
        );
    }
    check_table(session, "f").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_survive_losing_the_leader() -> TestResult {
    let mut cluster = LocalEtcdCluster::start(3).await?;
    let db = Database::open_etcd(&cluster.address("leader").to_string()).await?;
    let session = db.session();
    session
        .execute("CREATE TABLE f (id INT PRIMARY KEY, k INT, v TEXT); CREATE INDEX fk ON f (k)")
        .await?;
    let (mut acknowledged, mut unknown) = insert_rows(&session, 0, 30).await?;
    let writer = {
        let session = db.session();
        tokio::spawn(async move { insert_rows(&session, 30, 150).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let leader = cluster.leader().await.expect("a leader");
    cluster.kill(leader)?;
    let (during, in_doubt) = writer.await??;
    acknowledged.extend(during);
    unknown.extend(in_doubt);
    check_rows(&session, &acknowledged, &unknown).await?;
    cluster.restart(leader).await?;
    let (after, in_doubt) = insert_rows(&session, 150, 160).await?;
    acknowledged.extend(after);
    unknown.extend(in_doubt);
    check_rows(&session, &acknowledged, &unknown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_quorum_statements_fail_clearly_and_rowdex_goes_on_after() -> TestResult {
    let mut cluster = LocalEtcdCluster::start(3).await?;
    let options = rowdex_store::EtcdOptions {
        call_timeout: std::time::Duration::from_secs(1),
        unavailable_after: std::time::Duration::from_secs(2),
        ..rowdex_store::EtcdOptions::default()
    };
    let db =
        Database::open_etcd_with_options(&cluster.address("quorum").to_string(), options).await?;
    let session = db.session();
    session
        .execute("CREATE TABLE f (id INT PRIMARY KEY, k INT, v TEXT); CREATE INDEX fk ON f (k)")
        .await?;
    let (mut acknowledged, mut unknown) = insert_rows(&session, 0, 10).await?;
    cluster.kill(0)?;
    cluster.kill(1)?;
    // A statement of several rows: all of them or none, whatever the cluster's state.
    let error = session
        .execute("INSERT INTO f VALUES (100, 1, 'a'), (101, 2, 'b'), (102, 3, 'c')")
        .await
        .expect_err("no quorum");
    let message = error.to_string();
    assert!(
        message.contains("unavailable") || error.is_outcome_unknown(),
        "{message}"
    );
    if error.is_outcome_unknown() {
        unknown.extend([100, 101, 102]);
    }
    let read = session.execute("SELECT count(*) FROM f").await;
    assert!(read.is_err(), "a read without quorum answered");

    cluster.restart(0).await?;
    cluster.restart(1).await?;
    let (after, in_doubt) = insert_rows(&session, 10, 20).await?;
    acknowledged.extend(after);
    unknown.extend(in_doubt);
    let present = rows(&session, "SELECT count(*) FROM f WHERE id >= 100").await?;
    assert!(
        present == table(&[&["0"]]) || present == table(&[&["3"]]),
        "the refused statement was applied in part: {present:?}"
    );
    check_rows(&session, &acknowledged, &unknown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_is_batched_under_the_servers_limit_and_a_bigger_statement_is_refused() -> TestResult {
    let db = Database::open_etcd(&new_database_address("copy")).await?;
    let session = db.session();
    session
        .execute("CREATE TABLE c (id INT PRIMARY KEY, k INT, v TEXT); CREATE INDEX ck ON c (k)")
        .await?;
    // 30,000 rows and as many index entries: three times what one commit may carry.
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("rows.csv");
    let data: String = (0..30_000)
        .map(|id| format!("{id},{},row{id}\n", id % 100))
        .collect();
    std::fs::write(&file, data)?;
    session
        .execute(&format!("COPY c FROM '{}' (FORMAT csv)", file.display()))
        .await?;
    assert_eq!(
        rows(&session, "SELECT count(*), count(DISTINCT k) FROM c").await?,
        table(&[&["30000", "100"]])
    );
    check_table(&session, "c").await?;

    // One statement writing 2 x 15,000 keys passes the test cluster's --max-txn-ops (20,000):
    // refused, naming the flag, and nothing written.
    let error = session
        .execute("INSERT INTO c SELECT x, 1, 'big' FROM generate_series(100000, 114999) AS g(x)")
        .await
        .expect_err("over the limit");
    assert!(error.to_string().contains("--max-txn-ops"), "{error}");
    assert_eq!(
        rows(&session, "SELECT count(*) FROM c").await?,
        table(&[&["30000"]])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_counts_written_by_one_process_reach_the_others_estimates() -> TestResult {
    let (a, b) = two_processes("counts").await?;
    let (a, b) = (a.session(), b.session());
    a.execute("CREATE TABLE n (id INT PRIMARY KEY, v INT)")
        .await?;
    let table_rows = |shown: Vec<Vec<String>>| {
        shown
            .into_iter()
            .find(|row| row.get(1).is_some_and(|kind| kind == "TABLE"))
            .and_then(|row| row.get(3).cloned())
    };
    let before = table_rows(rows(&b, "SHOW STATISTICS n").await?);
    assert_eq!(before.as_deref(), Some("0"));
    a.execute("INSERT INTO n SELECT x, x % 10 FROM generate_series(1, 3000) AS g(x)")
        .await?;
    // B loaded the count before A's load; it reloads it once what it holds is 10 s old.
    tokio::time::sleep(std::time::Duration::from_millis(10_500)).await;
    let after = table_rows(rows(&b, "SHOW STATISTICS n").await?);
    assert_eq!(after.as_deref(), Some("3000"));
    Ok(())
}
