//! Both query protocols from tokio-postgres: command tags, prepared statements with inferred
//! parameter types, portals fetched a few rows at a time, errors with their SQLSTATEs, and the
//! connection limit.

use tokio_postgres::SimpleQueryMessage;

use crate::harness::{TestServer, sqlstate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_statements_report_postgresql_tags() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let messages = client
        .simple_query(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, v DOUBLE);
             INSERT INTO t VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, 'c', 3.0);
             UPDATE t SET v = 0 WHERE id >= 2;
             DELETE FROM t WHERE id = 3;
             SELECT id, name, v FROM t ORDER BY id",
        )
        .await
        .expect("script");
    let completes: Vec<u64> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(completes, vec![0, 3, 2, 1, 2]);
    let rows: Vec<Vec<Option<String>>> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![Some("1".into()), Some("a".into()), Some("1.5".into())],
            vec![Some("2".into()), Some("b".into()), Some("0".into())],
        ]
    );
    // The statements after an error do not run.
    let error = client
        .simple_query(
            "INSERT INTO t VALUES (9, 'z', 0); SELEC 1; INSERT INTO t VALUES (10, 'y', 0)",
        )
        .await
        .expect_err("syntax error");
    assert_eq!(sqlstate(&error), "42601");
    let count = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("count");
    assert_eq!(count.get::<_, i64>(0), 3);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_infer_parameter_types_and_run_many_times() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT, n DOUBLE)")
        .await
        .expect("create");
    let insert = client
        .prepare("INSERT INTO kv VALUES ($1, $2, $3)")
        .await
        .expect("prepare insert");
    assert_eq!(
        insert.params(),
        &[
            tokio_postgres::types::Type::INT8,
            tokio_postgres::types::Type::TEXT,
            tokio_postgres::types::Type::FLOAT8
        ]
    );
    for k in 0..20i64 {
        let n = k as f64 / 2.0;
        let inserted = client
            .execute(&insert, &[&k, &format!("v{k}"), &n])
            .await
            .expect("insert");
        assert_eq!(inserted, 1);
    }
    let select = client
        .prepare("SELECT k, v, n FROM kv WHERE k >= $1 AND k < $2 ORDER BY k")
        .await
        .expect("prepare select");
    assert_eq!(select.columns().len(), 3);
    assert_eq!(
        select.columns()[0].type_(),
        &tokio_postgres::types::Type::INT8
    );
    let rows = client
        .query(&select, &[&5i64, &8i64])
        .await
        .expect("select");
    let got: Vec<(i64, String, f64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        vec![
            (5, "v5".to_string(), 2.5),
            (6, "v6".to_string(), 3.0),
            (7, "v7".to_string(), 3.5)
        ]
    );
    // An UPDATE's assigned and compared parameters take their columns' types.
    let update = client
        .prepare("UPDATE kv SET v = $1 WHERE k = $2")
        .await
        .expect("prepare update");
    assert_eq!(
        client
            .execute(&update, &[&"new", &3i64])
            .await
            .expect("update"),
        1
    );
    let row = client
        .query_one("SELECT v FROM kv WHERE k = $1", &[&3i64])
        .await
        .expect("read back");
    assert_eq!(row.get::<_, String>(0), "new");
    // NULL parameters.
    let none: Option<f64> = None;
    client
        .execute("UPDATE kv SET n = $1 WHERE k = $2", &[&none, &4i64])
        .await
        .expect("null");
    let row = client
        .query_one("SELECT n FROM kv WHERE k = 4", &[])
        .await
        .expect("null back");
    assert_eq!(row.get::<_, Option<f64>>(0), None);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_return_rows_with_defaults_and_checks() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE item (id BIGINT PRIMARY KEY, qty BIGINT NOT NULL DEFAULT 1 CHECK (qty > 0),
                                note TEXT DEFAULT 'new', added TIMESTAMP DEFAULT now())",
        )
        .await
        .expect("create");
    // A prepared INSERT ... RETURNING describes its rows and its parameter before it runs.
    let insert = client
        .prepare("INSERT INTO item (id) VALUES ($1) RETURNING id, qty, note, added IS NOT NULL")
        .await
        .expect("prepare");
    assert_eq!(insert.params(), &[tokio_postgres::types::Type::INT8]);
    let names: Vec<&str> = insert.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names[..3], ["id", "qty", "note"]);
    let row = client.query_one(&insert, &[&7i64]).await.expect("insert");
    assert_eq!(row.get::<_, i64>(0), 7);
    assert_eq!(row.get::<_, i64>(1), 1);
    assert_eq!(row.get::<_, String>(2), "new");
    assert!(row.get::<_, bool>(3));
    // The simple protocol tags the rows with the write, as PostgreSQL does.
    let messages = client
        .simple_query("UPDATE item SET qty = qty + 4 WHERE id = 7 RETURNING qty")
        .await
        .expect("update");
    let tags: Vec<u64> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(tags, vec![1]);
    // A CHECK violation is 23514 and leaves the row as it was.
    let error = client
        .execute("UPDATE item SET qty = 0 WHERE id = 7", &[])
        .await
        .expect_err("check");
    assert_eq!(sqlstate(&error), "23514");
    let deleted = client
        .query("DELETE FROM item RETURNING qty", &[])
        .await
        .expect("delete");
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].get::<_, i64>(0), 5);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portals_return_rows_a_few_at_a_time() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE p (id BIGINT PRIMARY KEY);
             INSERT INTO p VALUES (1), (2), (3), (4), (5), (6), (7)",
        )
        .await
        .expect("setup");
    let transaction = client.transaction().await.expect("begin");
    let statement = transaction
        .prepare("SELECT id FROM p WHERE id > $1 ORDER BY id")
        .await
        .expect("prepare");
    let portal = transaction.bind(&statement, &[&1i64]).await.expect("bind");
    let mut seen = Vec::new();
    let mut fetches = 0;
    loop {
        let rows = transaction.query_portal(&portal, 4).await.expect("fetch");
        fetches += 1;
        if rows.is_empty() {
            break;
        }
        seen.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
    }
    assert_eq!(seen, vec![2, 3, 4, 5, 6, 7]);
    assert_eq!(fetches, 3, "4 rows, then 2, then none");
    transaction.commit().await.expect("commit");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_the_sqlstate_a_driver_acts_on() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE e (id BIGINT PRIMARY KEY, name VARCHAR(3) NOT NULL);
             CREATE UNIQUE INDEX e_name ON e (name);
             INSERT INTO e VALUES (1, 'a')",
        )
        .await
        .expect("setup");
    let cases = [
        ("SELEC 1", "42601"),
        ("SELECT * FROM missing", "42P01"),
        ("SELECT nope FROM e", "42703"),
        ("INSERT INTO e VALUES (1, 'b')", "23505"),
        ("INSERT INTO e VALUES (2, 'a')", "23505"),
        ("INSERT INTO e VALUES (3, NULL)", "23502"),
        ("INSERT INTO e VALUES (4, 'abcd')", "22001"),
        ("CREATE TABLE e (x BIGINT PRIMARY KEY)", "42P07"),
        ("SELECT no_such_function(1)", "42883"),
        ("SELECT left(id) FROM e", "42883"),
    ];
    for (sql, code) in cases {
        let simple = client.simple_query(sql).await.expect_err(sql);
        assert_eq!(sqlstate(&simple), code, "simple protocol: {sql}");
        let extended = client.execute(sql, &[]).await.expect_err(sql);
        assert_eq!(sqlstate(&extended), code, "extended protocol: {sql}");
    }
    // The connection is still usable and nothing was written.
    let row = client
        .query_one("SELECT count(*) FROM e", &[])
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_refused() {
    let server = TestServer::with_limit(1).await;
    let first = server.client().await;
    let refused = tokio_postgres::connect(&server.connection_string(), tokio_postgres::NoTls)
        .await
        .err()
        .expect("second connection refused");
    assert_eq!(sqlstate(&refused), "53300");
    first
        .simple_query("SELECT 1")
        .await
        .expect("first still served");
    drop(first);
    // The slot is given back once the first connection closes.
    let mut connected = None;
    for _ in 0..50 {
        if let Ok(pair) =
            tokio_postgres::connect(&server.connection_string(), tokio_postgres::NoTls).await
        {
            connected = Some(pair);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(connected.is_some(), "a freed slot is reused");
    drop(connected);
    server.stop().await;
}
