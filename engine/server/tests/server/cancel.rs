//! Cancel requests and refused startups: a client's CancelRequest stops its long statement
//! with 57014 and the connection goes on (a block it was in fails, and commits nothing); a
//! request with the wrong key stops nothing; a connection whose startup was refused runs
//! nothing it sends afterwards.

use std::time::Duration;

use tokio_postgres::{Client, NoTls};

use crate::harness::{RawClient, TestServer, error_code, sqlstate};

/// Rows of `t`.
const ROWS: i64 = 3_000;

/// A query that reads `t` `steps` times, one row at a time (a recursive query whose every step
/// joins the row before with `t`).
fn stepping(steps: u64) -> String {
    format!(
        "SELECT count(*) FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL \
         SELECT r.n + 1 FROM r JOIN t ON t.id = r.n % {ROWS} + 1 WHERE r.n < {steps}) \
         SELECT n FROM r) AS steps"
    )
}

/// A query no test run would see the end of: a billion steps.
fn endless() -> String {
    stepping(1_000_000_000)
}

async fn fill(client: &Client) {
    client
        .batch_execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
        .await
        .expect("create");
    let values: Vec<String> = (1..=ROWS).map(|i| format!("({i}, {i})")).collect();
    client
        .batch_execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .await
        .expect("fill");
}

/// Runs `sql` on `client` and cancels it from a second connection, again and again until it
/// ends (a request that arrives before the statement starts cancels nothing); the statement's
/// error. Gives up after a minute.
async fn run_and_cancel(client: &Client, sql: &str) -> tokio_postgres::Error {
    let token = client.cancel_token();
    let canceller = async {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel_query(NoTls).await.expect("cancel request");
        }
    };
    let ran = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::select! {
            ran = client.simple_query(sql) => ran,
            () = canceller => unreachable!("the canceller never ends"),
        }
    })
    .await
    .expect("the statement was cancelled within a minute");
    ran.expect_err("cancelled")
}

fn message(error: &tokio_postgres::Error) -> &str {
    error.as_db_error().map_or("", |db| db.message())
}

async fn count(client: &Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("count")
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_stops_a_long_query_and_the_connection_goes_on() {
    let server = TestServer::start().await;
    let client = server.client().await;
    fill(&client).await;

    let error = run_and_cancel(&client, &endless()).await;
    assert_eq!(sqlstate(&error), "57014", "{error}");
    assert_eq!(count(&client).await, ROWS, "the connection goes on");

    // Inside a block the cancel fails the block; ROLLBACK ends it and nothing is kept.
    client
        .batch_execute("BEGIN; INSERT INTO t VALUES (0, 0)")
        .await
        .expect("begin");
    let error = run_and_cancel(&client, &endless()).await;
    assert_eq!(sqlstate(&error), "57014", "{error}");
    let refused = client.batch_execute("SELECT 1").await.expect_err("failed");
    assert_eq!(sqlstate(&refused), "25P02");
    client.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(
        count(&client).await,
        ROWS,
        "the cancelled block kept nothing"
    );
    server.stop().await;
}

/// A write outside a block is not dropped when cancelled (it may be committing): a cancel
/// request wakes it from a wait for a row lock instead, with 57014, and it changes nothing.
/// `statement_timeout` ends such a wait, and a long read, the same way; a value SET refuses
/// changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_or_statement_timeout_ends_a_wait_for_a_row_lock() {
    let server = TestServer::start().await;
    let holder = server.client().await;
    let waiter = server.client().await;
    fill(&holder).await;
    holder
        .batch_execute("BEGIN; UPDATE t SET v = -1 WHERE id = 1")
        .await
        .expect("lock row 1");

    let error = run_and_cancel(&waiter, "UPDATE t SET v = v + 100 WHERE id IN (2, 1)").await;
    assert_eq!(sqlstate(&error), "57014", "{error}");
    assert_eq!(message(&error), "canceling statement due to user request");

    waiter
        .batch_execute("SET statement_timeout = '200ms'")
        .await
        .expect("set statement_timeout");
    let started = std::time::Instant::now();
    let error = waiter
        .batch_execute("DELETE FROM t WHERE id = 1")
        .await
        .expect_err("timed out");
    assert_eq!(sqlstate(&error), "57014", "{error}");
    assert_eq!(
        message(&error),
        "canceling statement due to statement timeout"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    let error = waiter
        .simple_query(&endless())
        .await
        .expect_err("timed out");
    assert_eq!(sqlstate(&error), "57014", "{error}");

    let refused = waiter
        .batch_execute("SET statement_timeout = 'soon'")
        .await
        .expect_err("not a time");
    assert_eq!(sqlstate(&refused), "22023", "{refused}");
    let shown: String = waiter
        .query_one("SHOW statement_timeout", &[])
        .await
        .expect("show")
        .get(0);
    assert_eq!(shown, "200ms");
    waiter
        .batch_execute("SET statement_timeout = 0")
        .await
        .expect("no limit");

    holder.batch_execute("COMMIT").await.expect("commit");
    let values: Vec<i64> = waiter
        .query("SELECT v FROM t WHERE id <= 2 ORDER BY id", &[])
        .await
        .expect("values")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(values, [-1, 2], "the stopped statements changed nothing");
    server.stop().await;
}

/// pg_locks while one connection holds a row and another waits for it: each row names its
/// backend's pid, the table, the mode and whether it is granted, and the usual monitoring
/// query (a waiting lock matched with a granted one on the same row) pairs the two; once the
/// holder commits, nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_locks_names_the_holder_and_the_waiter() {
    let server = TestServer::start().await;
    let holder = server.client().await;
    let waiter = server.client().await;
    let watcher = server.client().await;
    fill(&holder).await;
    let backend = |row: tokio_postgres::Row| row.get::<_, i32>(0);
    let holder_pid = backend(
        holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .expect("pid"),
    );
    let waiter_pid = backend(
        waiter
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .expect("pid"),
    );
    holder
        .batch_execute("BEGIN; UPDATE t SET v = -1 WHERE id = 7")
        .await
        .expect("lock row 7");
    let waiting = waiter.batch_execute("UPDATE t SET v = 0 WHERE id = 7");
    let watch = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let locks: Vec<(i64, String, String, bool)> = watcher
            .query(
                "SELECT l.pid, c.relname, l.mode, l.granted FROM pg_locks l \
                 JOIN pg_class c ON c.oid = l.relation WHERE l.locktype = 'tuple' \
                 ORDER BY l.granted DESC",
                &[],
            )
            .await
            .expect("pg_locks")
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
            .collect();
        let pairs: Vec<(i64, i64)> = watcher
            .query(
                "SELECT blocked.pid, blocking.pid FROM pg_locks blocked \
                 JOIN pg_locks blocking ON blocking.locktype = blocked.locktype \
                 AND (blocking.relation IS NOT DISTINCT FROM blocked.relation) \
                 AND (blocking.page IS NOT DISTINCT FROM blocked.page) \
                 AND (blocking.tuple IS NOT DISTINCT FROM blocked.tuple) \
                 AND blocking.pid <> blocked.pid \
                 WHERE NOT blocked.granted AND blocking.granted",
                &[],
            )
            .await
            .expect("blocking pairs")
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        holder.batch_execute("COMMIT").await.expect("commit");
        (locks, pairs)
    };
    let (waited, (locks, pairs)) = tokio::join!(waiting, watch);
    waited.expect("the waiter ran once the holder committed");
    let (holder_pid, waiter_pid) = (i64::from(holder_pid), i64::from(waiter_pid));
    assert_eq!(
        locks,
        [
            (
                holder_pid,
                "t".to_string(),
                "ExclusiveLock".to_string(),
                true
            ),
            (
                waiter_pid,
                "t".to_string(),
                "ExclusiveLock".to_string(),
                false
            ),
        ]
    );
    assert_eq!(pairs, [(waiter_pid, holder_pid)]);
    let left: i64 = watcher
        .query_one("SELECT count(*) FROM pg_locks", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_with_a_wrong_key_cancels_nothing() {
    let server = TestServer::start().await;
    let client = server.client().await;
    fill(&client).await;
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    // The statement below takes a moment; wrong keys sent while it runs change nothing.
    let sql = stepping(1_500);
    let wrong_keys = async {
        for key in 0..20i32 {
            let mut raw = RawClient::open(&server).await;
            let mut request = 80_877_102i32.to_be_bytes().to_vec();
            request.extend_from_slice(&pid.to_be_bytes());
            request.extend_from_slice(&key.to_be_bytes());
            raw.send_untyped(&request).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let (ran, ()) = tokio::join!(client.query_one(&sql, &[]), wrong_keys);
    let row = ran.expect("not cancelled by a wrong key");
    assert_eq!(row.get::<_, i64>(0), 1_500);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_runs_nothing_it_sends_afterwards() {
    let server = TestServer::with_limit(1).await;
    let first = server.client().await;
    let mut refused = RawClient::open(&server).await;
    refused.start("rowdex").await;
    let (kind, body) = refused.message().await.expect("the refusal");
    assert_eq!(kind, b'E');
    assert_eq!(error_code(&body), "53300");
    // A client that goes on as if it had been let in is not heard.
    refused
        .query("CREATE TABLE intruder (id BIGINT PRIMARY KEY)")
        .await;
    assert_eq!(refused.message().await, None, "nothing follows the refusal");
    let tables = first
        .query(
            "SELECT table_name FROM information_schema.tables WHERE table_name = 'intruder'",
            &[],
        )
        .await
        .expect("tables");
    assert!(
        tables.is_empty(),
        "the refused client's statement did not run"
    );
    server.stop().await;
}
