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
            // PostgreSQL prints "13:14:15.5"; arrow-pg's text encoder keeps six digits.
            "2024-02-29 13:14:15.500000"
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
            Type::INT8,
            Type::FLOAT8,
            Type::NUMERIC,
            Type::TEXT,
            Type::TEXT,
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
                &42i64,
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
    assert_eq!(row.get::<_, i64>(1), 42);
    assert_eq!(row.get::<_, f64>(2), -0.125);
    assert_eq!(row.get::<_, Decimal>(3), decimal);
    assert_eq!(row.get::<_, String>(4), "text");
    assert_eq!(row.get::<_, String>(5), "vc");
    assert_eq!(row.get::<_, Vec<u8>>(6), vec![1, 2, 3]);
    assert_eq!(row.get::<_, NaiveDate>(7), date);
    assert_eq!(row.get::<_, NaiveDateTime>(8), time);
    server.stop().await;
}
