//! Every rowdex type through both protocols: text results of the simple protocol as
//! PostgreSQL prints them, binary results and binary parameters of the extended one.

use chrono::{NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::types::Type;

use crate::harness::TestServer;

const CREATE: &str = "CREATE TABLE ty (id BIGINT PRIMARY KEY, b BOOLEAN, i INTEGER, f DOUBLE,
    d DECIMAL(10,2), t TEXT, vc VARCHAR(8), by BYTEA, dt DATE, ts TIMESTAMP)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_round_trip_in_text_and_binary() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client.batch_execute(CREATE).await.expect("create");
    client
        .batch_execute(
            "INSERT INTO ty VALUES (1, true, -7, 2.5, 12.34, 'héllo', 'ab', X'00ff',
             DATE '2024-02-29', TIMESTAMP '2024-02-29 13:14:15.5')",
        )
        .await
        .expect("insert text");

    // Text: the simple protocol.
    let messages = client
        .simple_query("SELECT b, i, f, d, t, vc, by, dt, ts FROM ty WHERE id = 1")
        .await
        .expect("select");
    let row = messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        })
        .expect("a row");
    let text: Vec<&str> = (0..row.len())
        .map(|i| row.get(i).unwrap_or("NULL"))
        .collect();
    assert_eq!(
        text,
        vec![
            "t",
            "-7",
            "2.5",
            "12.34",
            "héllo",
            "ab",
            "\\x00ff",
            "2024-02-29",
            // As PostgreSQL prints it (`server::timestamps`: arrow-pg wrote six digits).
            "2024-02-29 13:14:15.5"
        ]
    );

    // Binary: typed parameters in, typed columns out.
    let insert = client
        .prepare("INSERT INTO ty VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
        .await
        .expect("prepare insert");
    let types: Vec<Type> = insert.params().to_vec();
    assert_eq!(
        types,
        vec![
            Type::INT8,
            Type::BOOL,
            Type::INT4,
            Type::FLOAT8,
            Type::NUMERIC,
            Type::TEXT,
            Type::VARCHAR,
            Type::BYTEA,
            Type::DATE,
            Type::TIMESTAMP
        ]
    );
    let date = NaiveDate::from_ymd_opt(1969, 12, 31).expect("date");
    let time: NaiveDateTime = date.and_hms_micro_opt(23, 59, 59, 250_000).expect("time");
    let decimal = Decimal::new(-995, 2);
    client
        .execute(
            &insert,
            &[
                &2i64,
                &false,
                &42i32,
                &-0.125f64,
                &decimal,
                &"text",
                &"vc",
                &vec![1u8, 2, 3],
                &date,
                &time,
            ],
        )
        .await
        .expect("insert binary");
    let row = client
        .query_one(
            "SELECT b, i, f, d, t, vc, by, dt, ts FROM ty WHERE id = $1",
            &[&2i64],
        )
        .await
        .expect("select binary");
    assert!(!row.get::<_, bool>(0));
    assert_eq!(row.get::<_, i32>(1), 42);
    assert_eq!(row.get::<_, f64>(2), -0.125);
    assert_eq!(row.get::<_, Decimal>(3), decimal);
    assert_eq!(row.get::<_, String>(4), "text");
    assert_eq!(row.get::<_, String>(5), "vc");
    assert_eq!(row.get::<_, Vec<u8>>(6), vec![1, 2, 3]);
    assert_eq!(row.get::<_, NaiveDate>(7), date);
    assert_eq!(row.get::<_, NaiveDateTime>(8), time);
    server.stop().await;
}

/// Columns declared narrower than rowdex stores them are described, sent and bounded as
/// declared, as PostgreSQL has them: SMALLINT and INTEGER hold only their range (22003 past
/// it), REAL rounds to single precision, CHAR(n) is blank-padded; an integer literal is int4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_types_are_described_sent_and_bounded_as_declared() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE nar (id INTEGER PRIMARY KEY, s SMALLINT, r REAL, c CHAR(4), \
             v VARCHAR, big BIGINT);
             INSERT INTO nar VALUES (1, -32768, 0.1, 'ab  ', 'x', 3000000000)",
        )
        .await
        .expect("create and insert");
    let row = client
        .query_one(
            "SELECT id, s, r, c, v, big, 1 AS one, id + 1 AS next FROM nar",
            &[],
        )
        .await
        .expect("select");
    let types: Vec<Type> = row.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(
        types,
        vec![
            Type::INT4,
            Type::INT2,
            Type::FLOAT4,
            Type::BPCHAR,
            Type::VARCHAR,
            Type::INT8,
            Type::INT4,
            // Integer arithmetic keeps its operands' width, as in PostgreSQL.
            Type::INT4
        ]
    );
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, i32>(7), 2);
    // An int4 result past its range fails as PostgreSQL's does (22003); with a bigint
    // operand the arithmetic is bigint.
    let overflow = client
        .query_one("SELECT id * 2147483647 * 2 FROM nar", &[])
        .await
        .expect_err("integer out of range");
    assert_eq!(
        overflow.code().map(|c| c.code()),
        Some("22003"),
        "{overflow:?}"
    );
    let wide = client
        .query_one("SELECT big + id, s + 1::smallint FROM nar", &[])
        .await
        .expect("bigint and smallint arithmetic");
    let types: Vec<Type> = wide.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, vec![Type::INT8, Type::INT2]);
    assert_eq!(wide.get::<_, i64>(0), 3_000_000_001);
    assert_eq!(wide.get::<_, i16>(1), -32767);
    assert_eq!(row.get::<_, i16>(1), -32768);
    assert_eq!(row.get::<_, f32>(2), 0.1f32);
    assert_eq!(row.get::<_, String>(3), "ab  ");
    // PostgreSQL sums a bigint into a numeric, an integer into a bigint.
    let sums = client
        .query_one("SELECT sum(big), sum(id) FROM nar", &[])
        .await
        .expect("sums");
    let types: Vec<Type> = sums.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, vec![Type::NUMERIC, Type::INT8]);
    assert_eq!(
        sums.get::<_, rust_decimal::Decimal>(0),
        rust_decimal::Decimal::from(3_000_000_000i64)
    );
    // The stored value has no trailing blanks: it compares equal to 'ab', as a bpchar does.
    let padded = client
        .query_one("SELECT count(*) FROM nar WHERE c = 'ab'", &[])
        .await
        .expect("compare");
    assert_eq!(padded.get::<_, i64>(0), 1);
    for (sql, what) in [
        ("INSERT INTO nar (id, s) VALUES (2, 32768)", "smallint"),
        ("INSERT INTO nar (id) VALUES (2147483648)", "integer"),
        ("UPDATE nar SET s = s - 1", "smallint by update"),
        ("INSERT INTO nar (id, r) VALUES (3, 1e39)", "real"),
    ] {
        let error = client.batch_execute(sql).await.expect_err(what);
        let code = error.code().map(|c| c.code().to_string());
        assert_eq!(code.as_deref(), Some("22003"), "{what}: {error}");
    }
    let count = client
        .query_one("SELECT count(*) FROM nar", &[])
        .await
        .expect("count");
    assert_eq!(
        count.get::<_, i64>(0),
        1,
        "the refused writes wrote nothing"
    );
    server.stop().await;
}

/// A list bound to `= ANY($1)` (an array parameter, binary from tokio-postgres) selects the
/// rows of its values, and Describe types the parameter as an array of the column's type;
/// `<> ALL($1)` is its complement and an empty array selects nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn array_parameters_are_lists_of_values() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE arr (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO arr VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
        )
        .await
        .expect("create");
    let by_id = client
        .prepare("SELECT id FROM arr WHERE id = ANY($1) ORDER BY id")
        .await
        .expect("prepare");
    assert_eq!(by_id.params(), &[Type::INT4_ARRAY]);
    let ids = |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get(0)).collect::<Vec<i32>>();
    let rows = client
        .query(&by_id, &[&vec![3i32, 1, 99]])
        .await
        .expect("any");
    assert_eq!(ids(rows), vec![1, 3]);
    let rows = client
        .query(&by_id, &[&Vec::<i32>::new()])
        .await
        .expect("empty");
    assert_eq!(ids(rows), Vec::<i32>::new());
    let rows = client
        .query(
            "SELECT id FROM arr WHERE name <> ALL($1) ORDER BY id",
            &[&vec!["a", "d"]],
        )
        .await
        .expect("all");
    assert_eq!(ids(rows), vec![2, 3]);
    let rows = client
        .query(
            "SELECT id FROM arr WHERE id = ANY('{2,4}') ORDER BY id",
            &[],
        )
        .await
        .expect("literal");
    assert_eq!(ids(rows), vec![2, 4]);
    server.stop().await;
}
