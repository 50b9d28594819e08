//! Seeing inside a running server: `pg_stat_activity` (who is connected, what runs, what waits
//! for a row lock), `pg_cancel_backend` and `pg_terminate_backend` acting on what it lists,
//! `pg_stat_statements` counting normalized statements, and the size functions following the
//! data.

use std::time::Duration;

use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::harness::{TestServer, sqlstate};

/// A client whose connection says `application_name`.
async fn named_client(server: &TestServer, application_name: &str) -> Client {
    let config = format!(
        "{} application_name={application_name}",
        server.connection_string()
    );
    let (client, connection) = tokio_postgres::connect(&config, NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// `pg_stat_activity`'s row of the backend named `application_name`, as text by column, once
/// `ready` accepts it; panics after 30 s.
async fn activity_of(
    monitor: &Client,
    application_name: &str,
    ready: impl Fn(&[(String, Option<String>)]) -> bool,
) -> Vec<(String, Option<String>)> {
    let sql = format!(
        "SELECT pid, usename, datname, state, wait_event_type, wait_event, query, \
         xact_start IS NOT NULL AS in_transaction, query_start IS NOT NULL AS started, \
         backend_type, client_addr FROM pg_stat_activity \
         WHERE application_name = '{application_name}'"
    );
    let waited = std::time::Instant::now();
    loop {
        let messages = monitor.simple_query(&sql).await.expect("pg_stat_activity");
        let row = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                row.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.name().to_string(), row.get(i).map(str::to_string)))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        });
        if let Some(row) = row
            && ready(&row)
        {
            return row;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "{application_name} never showed as expected in pg_stat_activity"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn column<'a>(row: &'a [(String, Option<String>)], name: &str) -> Option<&'a str> {
    row.iter()
        .find(|(column, _)| column == name)
        .and_then(|(_, value)| value.as_deref())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_activity_shows_sessions_and_lock_waits_and_backends_can_be_stopped() {
    let server = TestServer::start().await;
    let monitor = named_client(&server, "monitor").await;
    monitor
        .batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 0)")
        .await
        .expect("setup");

    // The holder keeps row 1 locked in an open transaction.
    let holder = named_client(&server, "holder").await;
    holder
        .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE k = 1")
        .await
        .expect("lock row 1");
    let held = activity_of(&monitor, "holder", |_| true).await;
    assert_eq!(column(&held, "state"), Some("idle in transaction"));
    assert_eq!(
        column(&held, "query"),
        Some("BEGIN; UPDATE t SET v = 1 WHERE k = 1")
    );
    assert_eq!(column(&held, "in_transaction"), Some("t"));
    assert_eq!(column(&held, "wait_event"), Some("ClientRead"));
    assert_eq!(column(&held, "usename"), Some("rowdex"));
    assert_eq!(column(&held, "datname"), Some("rowdex"));
    assert_eq!(column(&held, "backend_type"), Some("client backend"));
    assert_eq!(column(&held, "client_addr"), Some("127.0.0.1"));

    // The waiter's UPDATE waits for the holder's lock: active, waiting on a Lock.
    let waiter = named_client(&server, "waiter").await;
    let waiting = tokio::spawn(async move {
        let result = waiter.simple_query("UPDATE t SET v = 2 WHERE k = 1").await;
        (waiter, result)
    });
    let waits = activity_of(&monitor, "waiter", |row| {
        column(row, "wait_event_type") == Some("Lock")
    })
    .await;
    assert_eq!(column(&waits, "state"), Some("active"));
    assert_eq!(column(&waits, "wait_event"), Some("transactionid"));
    assert_eq!(
        column(&waits, "query"),
        Some("UPDATE t SET v = 2 WHERE k = 1")
    );

    // pg_cancel_backend stops the waiting statement (57014); the connection goes on.
    let pid = column(&waits, "pid").expect("pid").to_string();
    let cancelled = monitor
        .query_one(&format!("SELECT pg_cancel_backend({pid})"), &[])
        .await
        .expect("pg_cancel_backend");
    assert!(cancelled.get::<_, bool>(0));
    let (waiter, result) = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the cancelled statement ended")
        .expect("waiter task");
    let error = result.expect_err("cancelled");
    assert_eq!(sqlstate(&error), "57014");
    let idle = activity_of(&monitor, "waiter", |row| {
        column(row, "state") == Some("idle")
    })
    .await;
    assert_eq!(column(&idle, "in_transaction"), Some("f"));
    waiter.simple_query("SELECT 1").await.expect("goes on");

    // pg_terminate_backend closes the holder's connection: its transaction rolls back, and it
    // leaves the activity.
    let pid = column(&held, "pid").expect("pid").to_string();
    let terminated = monitor
        .query_one(&format!("SELECT pg_terminate_backend({pid})"), &[])
        .await
        .expect("pg_terminate_backend");
    assert!(terminated.get::<_, bool>(0));
    let waited = std::time::Instant::now();
    while holder.simple_query("SELECT 1").await.is_ok() {
        assert!(waited.elapsed() < Duration::from_secs(30), "never closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = monitor
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'holder'",
            &[],
        )
        .await
        .expect("count");
    assert_eq!(left.get::<_, i64>(0), 0);
    let v = monitor
        .query_one("SELECT v FROM t WHERE k = 1", &[])
        .await
        .expect("row 1");
    assert_eq!(
        v.get::<_, i32>(0),
        0,
        "the terminated transaction committed"
    );
    // The row is free: another write takes it at once.
    waiter
        .simple_query("UPDATE t SET v = 3 WHERE k = 1")
        .await
        .expect("row 1 unlocked");
    let none = monitor
        .query_one("SELECT pg_cancel_backend(1), pg_terminate_backend(1)", &[])
        .await
        .expect("no such backend");
    assert!(!none.get::<_, bool>(0) && !none.get::<_, bool>(1));
    server.stop().await;
}

/// `(query, calls, rows)` of every `pg_stat_statements` entry whose text mentions `t`.
async fn statements_on_t(client: &Client) -> Vec<(String, i64, i64)> {
    client
        .query(
            "SELECT query, calls, rows, total_exec_time, min_exec_time, max_exec_time, \
             mean_exec_time, queryid FROM pg_stat_statements \
             WHERE query LIKE '% t %' OR query LIKE '% t' ORDER BY query",
            &[],
        )
        .await
        .expect("pg_stat_statements")
        .iter()
        .map(|row| {
            let (total, min, max, mean): (f64, f64, f64, f64) =
                (row.get(3), row.get(4), row.get(5), row.get(6));
            assert!(
                total > 0.0 && min <= mean && mean <= max,
                "{total} {min} {mean} {max}"
            );
            (row.get(0), row.get(1), row.get(2))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_statements_counts_each_statement_with_its_constants_lifted() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
        .await
        .expect("create");
    client
        .query_one("SELECT pg_stat_statements_reset()", &[])
        .await
        .expect("reset");
    for k in 1..=3 {
        client
            .simple_query(&format!("INSERT INTO t VALUES ({k}, 'v{k}')"))
            .await
            .expect("insert");
    }
    // The same query as text with constants, and prepared with a parameter: one statement.
    client
        .simple_query("SELECT v FROM t WHERE k = 1")
        .await
        .expect("text");
    let prepared = client
        .prepare("SELECT v FROM t WHERE k = $1")
        .await
        .expect("prepare");
    for k in [2, 3, 4] {
        client.query(&prepared, &[&k]).await.expect("prepared");
    }
    client
        .simple_query("UPDATE t SET v = 'w' WHERE k >= 2")
        .await
        .expect("update");
    assert_eq!(
        statements_on_t(&client).await,
        vec![
            ("INSERT INTO t VALUES ($1, $2)".to_string(), 3, 3),
            ("SELECT v FROM t WHERE k = $1".to_string(), 4, 3),
            ("UPDATE t SET v = $1 WHERE k >= $2".to_string(), 1, 2),
        ]
    );
    // rowdex's own columns: the path each statement's plan took and what it read.
    client
        .batch_execute("CREATE INDEX t_v ON t (v)")
        .await
        .expect("index");
    for _ in 0..2 {
        client
            .simple_query("SELECT k FROM t WHERE v = 'w'")
            .await
            .expect("through the index");
    }
    client
        .simple_query("SELECT v, count(*) FROM t GROUP BY v")
        .await
        .expect("through DataFusion");
    let own: Vec<(String, Option<String>, i64, i64)> = client
        .query(
            "SELECT query, rowdex_access_path, rowdex_entries_read, rowdex_row_gets              FROM pg_stat_statements WHERE query LIKE 'SELECT % FROM t %' ORDER BY query",
            &[],
        )
        .await
        .expect("own columns")
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect();
    let path = |query: &str| {
        own.iter()
            .find(|(text, ..)| text == query)
            .unwrap_or_else(|| panic!("no entry for {query}: {own:?}"))
            .clone()
    };
    let (_, point, entries, gets) = path("SELECT v FROM t WHERE k = $1");
    assert_eq!(point.as_deref(), Some("POINT GET t"));
    assert!(
        gets >= 4 && entries >= gets,
        "{entries} entries, {gets} gets"
    );
    let (_, index, entries, _) = path("SELECT k FROM t WHERE v = $1");
    assert_eq!(index.as_deref(), Some("INDEX SCAN t using t_v"));
    // Two runs, each reading the index's two entries for 'w'.
    assert!(entries >= 4, "{entries}");
    let (_, full, entries, _) = path("SELECT v, count(*) FROM t GROUP BY v");
    assert_eq!(full.as_deref(), Some("FULL SCAN t"));
    assert_eq!(entries, 3, "the three rows");

    // A failed statement is not counted.
    client
        .simple_query("SELECT v FROM t WHERE k = 1 / 0")
        .await
        .expect_err("division by zero");
    assert_eq!(statements_on_t(&client).await.len(), 6);
    let info = client
        .query_one(
            "SELECT dealloc, stats_reset <= now() FROM pg_stat_statements_info",
            &[],
        )
        .await
        .expect("info");
    assert_eq!(info.get::<_, i64>(0), 0);
    assert!(info.get::<_, bool>(1));
    client
        .query_one("SELECT pg_stat_statements_reset()", &[])
        .await
        .expect("reset");
    assert!(statements_on_t(&client).await.is_empty());
    server.stop().await;
}

/// `pg_relation_size`, `pg_table_size`, `pg_indexes_size`, `pg_total_relation_size` of `t`, and
/// `pg_relation_size` of its index and of its primary key.
async fn sizes(client: &Client) -> [i64; 6] {
    let row = client
        .query_one(
            "SELECT pg_relation_size('t'), pg_table_size('t'), pg_indexes_size('t'), \
             pg_total_relation_size('t'), pg_relation_size('t_v'), pg_relation_size('t_pkey')",
            &[],
        )
        .await
        .expect("sizes");
    std::array::from_fn(|i| row.get(i))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_grow_and_shrink_with_the_data() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t (k INT PRIMARY KEY, v TEXT, pad TEXT); CREATE INDEX t_v ON t (v)",
        )
        .await
        .expect("create");
    assert_eq!(sizes(&client).await, [0; 6]);
    client
        .batch_execute(
            "INSERT INTO t SELECT n, 'v' || n, repeat('x', 100) FROM generate_series(1, 2000) AS g(n)",
        )
        .await
        .expect("fill");
    let [rows, table, indexes, total, index, primary] = sizes(&client).await;
    // The in-memory store counts the bytes of the keys and values exactly: each row holds
    // its 100-byte pad.
    assert!(rows > 2000 * 100, "{rows}");
    assert_eq!(table, rows, "no older versions kept");
    assert!(indexes > 2000 * 5 && indexes < rows, "{indexes}");
    assert_eq!((total, index, primary), (rows + indexes, indexes, 0));
    client
        .batch_execute("DELETE FROM t WHERE k > 1000")
        .await
        .expect("delete half");
    let [half, _, half_indexes, ..] = sizes(&client).await;
    assert!(
        half < rows * 6 / 10 && half > rows * 4 / 10,
        "{half} of {rows}"
    );
    assert!(
        half_indexes < indexes * 6 / 10,
        "{half_indexes} of {indexes}"
    );
    let database = client
        .query_one("SELECT pg_database_size(current_database())", &[])
        .await
        .expect("database size");
    assert!(database.get::<_, i64>(0) >= half + half_indexes);
    let nothing = client
        .query_one("SELECT pg_relation_size('no_such_table')", &[])
        .await
        .expect_err("unknown relation");
    assert_eq!(sqlstate(&nothing), "42P01");
    let no_oid = client
        .query_one("SELECT pg_relation_size(999999)", &[])
        .await
        .expect("unknown OID");
    assert_eq!(no_oid.get::<_, Option<i64>>(0), None);
    server.stop().await;
}

/// A write that lost a race and ran again shows it: `rowdex_retries` and `rowdex_conflicts`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_statements_counts_the_retries_of_a_write() {
    use rowdex_store::faulty::{Fault, FaultyStore};
    let store = std::sync::Arc::new(FaultyStore::new(std::sync::Arc::new(
        rowdex_store::MemoryStore::new(),
    )));
    let db = rowdex::Database::with_store(store.clone())
        .await
        .expect("open");
    let server = TestServer::serving(db, crate::harness::test_options(10)).await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 0)")
        .await
        .expect("setup");
    // The UPDATE's first commit is refused as a conflict; its second attempt commits.
    store
        .fail_commit(1, Fault::Conflict)
        .expect("plan the fault");
    client
        .simple_query("UPDATE t SET v = v + 1 WHERE k = 1")
        .await
        .expect("retried");
    let row = client
        .query_one(
            "SELECT calls, rowdex_retries, rowdex_conflicts FROM pg_stat_statements \
             WHERE query = 'UPDATE t SET v = v + $1 WHERE k = $2'",
            &[],
        )
        .await
        .expect("entry");
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (1, 1, 1)
    );
    let v = client
        .query_one("SELECT v FROM t WHERE k = 1", &[])
        .await
        .expect("row");
    assert_eq!(v.get::<_, i32>(0), 1, "applied once");
    server.stop().await;
}

/// `log_min_duration_statement`: statements that ran at least that long are logged with their
/// duration, rows and plan, and EXPLAIN ANALYZE of the same text shows that plan; the server's
/// setting is where sessions start, and a session can SET its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_statements_are_logged_with_their_plan() {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let options = rowdex_server::ServeOptions {
        log: rowdex_server::ServerLog::to(move |line| {
            sink.lock().expect("log").push(line.to_string());
        }),
        log_min_duration: Some(Duration::from_secs(3600)),
        ..crate::harness::test_options(10)
    };
    let server = TestServer::with_options(
        options,
        "CREATE TABLE t (k INT PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v);
         INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'a');",
    )
    .await;
    let client = server.client().await;
    let shown = client
        .query_one("SHOW log_min_duration_statement", &[])
        .await
        .expect("show");
    assert_eq!(shown.get::<_, String>(0), "3600000");
    client
        .simple_query("SELECT k FROM t WHERE v = 'a'")
        .await
        .expect("fast enough");
    assert!(
        lines.lock().expect("log").is_empty(),
        "logged under the bar"
    );

    client
        .batch_execute("SET log_min_duration_statement = 0")
        .await
        .expect("log everything");
    client
        .simple_query("SELECT k FROM t WHERE v = 'a'")
        .await
        .expect("logged");
    let logged = lines.lock().expect("log").clone();
    let line = logged
        .iter()
        .find(|line| line.contains("statement: SELECT k FROM t WHERE v = 'a'"))
        .unwrap_or_else(|| panic!("not logged: {logged:?}"));
    assert!(line.contains("LOG:  duration: "), "{line}");
    assert!(
        line.contains(" ms  rows: 2  plan: INDEX SCAN t using t_v  "),
        "{line}"
    );
    let explained: Vec<String> = client
        .simple_query("EXPLAIN ANALYZE SELECT k FROM t WHERE v = 'a'")
        .await
        .expect("explain analyze")
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert!(
        explained
            .iter()
            .any(|l| l.contains("INDEX SCAN t using t_v")),
        "{explained:?}"
    );

    client
        .batch_execute("SET log_min_duration_statement = -1")
        .await
        .expect("log nothing");
    let before = lines.lock().expect("log").len();
    client
        .simple_query("SELECT k FROM t WHERE v = 'b'")
        .await
        .expect("not logged");
    assert_eq!(lines.lock().expect("log").len(), before);
    let refused = client
        .batch_execute("SET log_min_duration_statement = 'soon'")
        .await
        .expect_err("not a duration");
    assert_eq!(sqlstate(&refused), "22023");
    server.stop().await;
}

/// The value of the sample `name{labels}` in `samples` (`type name{labels} value` lines).
fn sample(samples: &[String], name: &str) -> f64 {
    samples
        .iter()
        .find_map(|line| {
            let (_, rest) = line.split_once(' ')?;
            let (key, value) = rest.rsplit_once(' ')?;
            (key == name).then(|| value.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no sample {name} in {samples:#?}"))
}

/// `--metrics`: the OpenMetrics text Prometheus scrapes, read by the Prometheus Python client's
/// parser, counts statements by kind and outcome, their durations, the connections, the
/// store's writes and reads, and row-lock waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_endpoint_counts_what_the_server_did() {
    let options = rowdex_server::ServeOptions {
        metrics: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
        ..crate::harness::test_options(10)
    };
    let server = TestServer::with_options(options, "").await;
    let url = format!(
        "http://{}/metrics",
        server.metrics_addr.expect("metrics address")
    );
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
        .await
        .expect("create");
    for k in 1..=5 {
        client
            .simple_query(&format!("INSERT INTO t VALUES ({k}, 0)"))
            .await
            .expect("insert");
    }
    for k in 1..=3 {
        client
            .simple_query(&format!("SELECT v FROM t WHERE k = {k}"))
            .await
            .expect("select");
    }
    client
        .simple_query("SELECT v FROM t WHERE k = 1 / 0")
        .await
        .expect_err("division by zero");

    // A row-lock wait: the second UPDATE waits for the first's transaction.
    let holder = server.client().await;
    holder
        .batch_execute("BEGIN; UPDATE t SET v = 1 WHERE k = 1")
        .await
        .expect("lock");
    let waiter = server.client().await;
    let waiting = tokio::spawn(async move {
        waiter
            .simple_query("UPDATE t SET v = 2 WHERE k = 1")
            .await
            .map(|_| ())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    holder.batch_execute("COMMIT").await.expect("commit");
    waiting.await.expect("waiter").expect("the waiting update");

    let samples = crate::drivers::read_metrics(&url).await;
    let statements = |kind: &str, outcome: &str| {
        sample(
            &samples,
            &format!("rowdex_statements_total{{kind=\"{kind}\",outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(statements("insert", "ok"), 5.0);
    assert_eq!(statements("read", "ok"), 3.0);
    assert_eq!(statements("read", "error"), 1.0);
    assert_eq!(statements("ddl", "ok"), 1.0);
    assert_eq!(statements("update", "ok"), 2.0);
    assert_eq!(
        sample(
            &samples,
            "rowdex_statement_duration_seconds_count{kind=\"read\"}"
        ),
        4.0
    );
    assert!(
        sample(
            &samples,
            "rowdex_statement_duration_seconds_sum{kind=\"insert\"}"
        ) > 0.0
    );
    // The waiter's connection closed with its task; the other two are open.
    let waited = std::time::Instant::now();
    let mut samples = samples;
    while sample(&samples, "rowdex_connections{}") != 2.0 {
        assert!(waited.elapsed() < Duration::from_secs(30), "{samples:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        samples = crate::drivers::read_metrics(&url).await;
    }
    assert_eq!(sample(&samples, "rowdex_connections_accepted_total{}"), 3.0);
    assert!(sample(&samples, "rowdex_lock_waits_total{}") >= 1.0);
    assert!(sample(&samples, "rowdex_store_commits_total{}") >= 7.0);
    assert!(sample(&samples, "rowdex_store_bytes_written_total{}") > 0.0);
    assert!(sample(&samples, "rowdex_store_row_gets_total{}") >= 3.0);
    assert!(sample(&samples, "rowdex_store_entries_read_total{}") >= 3.0);

    // Anything but /metrics is not found.
    let mut other = tokio::net::TcpStream::connect(server.metrics_addr.expect("address"))
        .await
        .expect("connect");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    other
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    let mut answer = String::new();
    other.read_to_string(&mut answer).await.expect("answer");
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    server.stop().await;
}

/// Polls `sql` (one row wanted, its columns as text) until `ready` accepts a row, while
/// `running` (the work it watches) has not ended; the row, or None if the work ended first.
async fn watch_progress(
    monitor: &Client,
    sql: &str,
    running: &tokio::task::JoinHandle<()>,
    ready: impl Fn(&[Option<String>]) -> bool,
) -> Option<Vec<Option<String>>> {
    while !running.is_finished() {
        let messages = monitor.simple_query(sql).await.expect("progress view");
        for message in &messages {
            if let SimpleQueryMessage::Row(row) = message {
                let cells: Vec<Option<String>> = (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect();
                if ready(&cells) {
                    return Some(cells);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// `pg_stat_progress_create_index` shows a backfill as it reads the table, and
/// `pg_stat_progress_copy` a COPY FROM STDIN as its batches load; both are empty once the work
/// is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_views_follow_index_builds_and_copies() {
    use futures::SinkExt;
    const ROWS: i64 = 200_000;
    let server = TestServer::start().await;
    let monitor = server.client().await;
    monitor
        .batch_execute(&format!(
            "CREATE TABLE t (k INT PRIMARY KEY, v INT);
             INSERT INTO t SELECT n, n % 1000 FROM generate_series(1, {ROWS}) AS g(n);
             CREATE TABLE c (k INT PRIMARY KEY, v TEXT);"
        ))
        .await
        .expect("setup");
    let relid: i64 = monitor
        .query_one("SELECT 't'::regclass::bigint", &[])
        .await
        .expect("oid")
        .get(0);

    let builder = server.client().await;
    let building = tokio::spawn(async move {
        builder
            .batch_execute("CREATE INDEX t_v ON t (v)")
            .await
            .expect("create index");
    });
    let seen = watch_progress(
        &monitor,
        "SELECT command, phase, relid, tuples_done, tuples_total, pid \
         FROM pg_stat_progress_create_index",
        &building,
        |row| row[3].as_deref().is_some_and(|done| done != "0"),
    )
    .await
    .expect("the backfill never showed in pg_stat_progress_create_index");
    building.await.expect("builder");
    assert_eq!(seen[0].as_deref(), Some("CREATE INDEX"));
    assert_eq!(seen[1].as_deref(), Some("building index: scanning table"));
    assert_eq!(seen[2].as_deref(), Some(relid.to_string().as_str()));
    let done: i64 = seen[3].as_deref().expect("done").parse().expect("number");
    let total: i64 = seen[4].as_deref().expect("total").parse().expect("number");
    // The total is the table's row estimate (raised to the rows read when it falls short).
    assert!(
        done > 0 && done <= total && done < ROWS,
        "{done} of {total}"
    );
    let left = monitor
        .query_one("SELECT count(*) FROM pg_stat_progress_create_index", &[])
        .await
        .expect("after");
    assert_eq!(left.get::<_, i64>(0), 0);

    // COPY FROM STDIN: the first 120,000 rows sent, the load's first batch (50,000 rows) is
    // written while the client holds the rest back.
    let copier = server.client().await;
    let (sent_first, send_first) = tokio::sync::oneshot::channel::<()>();
    let (finish, finished) = tokio::sync::oneshot::channel::<()>();
    let copying = tokio::spawn(async move {
        let sink = copier.copy_in("COPY c FROM STDIN").await.expect("copy in");
        futures::pin_mut!(sink);
        let rows = |from: i64, to: i64| -> bytes::Bytes {
            let text: String = (from..to).map(|k| format!("{k}\tvalue {k}\n")).collect();
            bytes::Bytes::from(text)
        };
        sink.send(rows(0, 120_000)).await.expect("first part");
        let _ = sent_first.send(());
        let _ = finished.await;
        sink.send(rows(120_000, 130_000)).await.expect("rest");
        let loaded = sink.finish().await.expect("finish");
        assert_eq!(loaded, 130_000);
    });
    send_first.await.expect("first part sent");
    let seen = watch_progress(
        &monitor,
        "SELECT command, type, relid, tuples_processed, bytes_processed, bytes_total \
         FROM pg_stat_progress_copy",
        &copying,
        |row| {
            row[3]
                .as_deref()
                .is_some_and(|rows| rows.parse::<i64>().is_ok_and(|n| n >= 50_000))
        },
    )
    .await
    .expect("the load never showed in pg_stat_progress_copy");
    let _ = finish.send(());
    copying.await.expect("copier");
    let c_relid: i64 = monitor
        .query_one("SELECT 'c'::regclass::bigint", &[])
        .await
        .expect("oid")
        .get(0);
    assert_eq!(seen[0].as_deref(), Some("COPY FROM"));
    assert_eq!(seen[1].as_deref(), Some("PIPE"));
    assert_eq!(seen[2].as_deref(), Some(c_relid.to_string().as_str()));
    let bytes: i64 = seen[4].as_deref().expect("bytes").parse().expect("number");
    assert!(bytes > 50_000 * 8, "{bytes}");
    assert_eq!(
        seen[5].as_deref(),
        Some("0"),
        "a client's data has no known size"
    );
    let left = monitor
        .query_one("SELECT count(*) FROM pg_stat_progress_copy", &[])
        .await
        .expect("after");
    assert_eq!(left.get::<_, i64>(0), 0);
    server.stop().await;
}
