//! COPY over the wire from tokio-postgres: data sent in pieces split anywhere, text and CSV both
//! ways with every kind of value that the formats must keep apart (NULL and the empty string,
//! escapes, line breaks, bytes), errors with their SQLSTATEs, and a COPY the client gives up or
//! drops its connection in the middle of, which loads nothing.

use bytes::Bytes;
use futures::{SinkExt, StreamExt, TryStreamExt, pin_mut};
use tokio_postgres::Client;

use crate::harness::{RawClient, TestServer, assert_check_table_clean, sqlstate};

const CREATE: &str = "CREATE TABLE c (id BIGINT PRIMARY KEY, s TEXT, b BOOLEAN, f DOUBLE,
    by BYTEA, ts TIMESTAMP); CREATE INDEX c_s ON c (s)";

/// Sends `data` to `COPY ...` in pieces of `piece` bytes; returns the rows loaded.
async fn copy_in(client: &Client, statement: &str, data: &[u8], piece: usize) -> u64 {
    let sink = client.copy_in(statement).await.expect("copy in");
    pin_mut!(sink);
    for part in data.chunks(piece) {
        sink.send(Bytes::copy_from_slice(part)).await.expect("data");
    }
    sink.finish().await.expect("finish")
}

async fn copy_out(client: &Client, statement: &str) -> String {
    let stream = client.copy_out(statement).await.expect("copy out");
    pin_mut!(stream);
    let mut text = Vec::new();
    while let Some(chunk) = stream.next().await {
        text.extend_from_slice(&chunk.expect("chunk"));
    }
    String::from_utf8(text).expect("utf-8")
}

/// id, s, whether s is NULL, by.
type StoredRow = (i64, Option<String>, bool, Option<Vec<u8>>);

async fn count(client: &Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM c", &[])
        .await
        .expect("count")
        .get(0)
}

const TEXT_DATA: &str = "1\tplain\tt\t1.5\t\\\\x00ff\t2024-02-29 13:14:15.5\n\
2\t\\N\tf\t\\N\t\\N\t\\N\n\
3\t\ttrue\t-0.25\t\\\\x\t2024-01-01 00:00:00\n\
4\ttab\\there\\nand a line\t\\N\tInfinity\t\\\\x415c78\t\\N\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_format_round_trips_in_pieces() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client.batch_execute(CREATE).await.expect("create");
    // Pieces of 7 bytes split fields, escapes and lines anywhere.
    let loaded = copy_in(&client, "COPY c FROM STDIN", TEXT_DATA.as_bytes(), 7).await;
    assert_eq!(loaded, 4);
    let rows = client
        .query(
            "SELECT id, s, s IS NULL, length(s), by FROM c ORDER BY id",
            &[],
        )
        .await
        .expect("rows");
    let strings: Vec<StoredRow> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(4)))
        .collect();
    assert_eq!(
        strings,
        vec![
            (1, Some("plain".into()), false, Some(vec![0, 255])),
            (2, None, true, None),
            (3, Some(String::new()), false, Some(Vec::new())),
            (
                4,
                Some("tab\there\nand a line".into()),
                false,
                Some(b"A\\x".to_vec())
            ),
        ]
    );
    let out = copy_out(&client, "COPY c TO STDOUT").await;
    assert_eq!(out, TEXT_DATA.replace("\ttrue\t", "\tt\t"));
    assert_check_table_clean(&client, "c").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_keeps_empty_strings_apart_from_null() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client.batch_execute(CREATE).await.expect("create");
    let data = "id,s\n1,\"\"\n2,\n3,\"a,\"\"quoted\"\"\nline\"\n";
    let loaded = copy_in(
        &client,
        "COPY c (id, s) FROM STDIN WITH (FORMAT csv, HEADER true)",
        data.as_bytes(),
        5,
    )
    .await;
    assert_eq!(loaded, 3);
    let nulls: Vec<bool> = client
        .query("SELECT s IS NULL FROM c ORDER BY id", &[])
        .await
        .expect("nulls")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(nulls, vec![false, true, false]);
    let out = copy_out(
        &client,
        "COPY (SELECT id, s FROM c ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER true)",
    )
    .await;
    assert_eq!(out, data);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_or_a_duplicate_key_loads_nothing_of_a_small_copy() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client.batch_execute(CREATE).await.expect("create");
    copy_in(&client, "COPY c (id, s) FROM STDIN", b"1\ta\n", 64).await;

    let bad = "2\tb\n3\tc\tEXTRA\n";
    let sink = client
        .copy_in("COPY c (id, s) FROM STDIN")
        .await
        .expect("copy in");
    pin_mut!(sink);
    // The error surfaces at a later send or at the finish, as with PostgreSQL.
    let sent = sink.send(Bytes::from(bad)).await;
    let error = match sent {
        Err(error) => error,
        Ok(()) => sink.finish().await.expect_err("a record with three fields"),
    };
    assert_eq!(sqlstate(&error), "42601", "{error}");
    assert_eq!(count(&client).await, 1);

    let sink = client
        .copy_in("COPY c (id, s) FROM STDIN")
        .await
        .expect("copy in");
    pin_mut!(sink);
    sink.send(Bytes::from("5\te\n1\tagain\n"))
        .await
        .expect("data");
    let error = sink.finish().await.expect_err("a duplicate key");
    assert_eq!(sqlstate(&error), "23505", "{error}");
    assert_eq!(count(&client).await, 1);

    let Err(error) = client.copy_in::<_, Bytes>("COPY no_such FROM STDIN").await else {
        panic!("COPY into a table that does not exist started");
    };
    assert_eq!(sqlstate(&error), "42P01");
    // The connection goes on as before.
    copy_in(&client, "COPY c (id, s) FROM STDIN", b"6\tf\n", 64).await;
    assert_eq!(count(&client).await, 2);
    assert_check_table_clean(&client, "c").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_given_up_or_cut_off_loads_nothing() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client.batch_execute(CREATE).await.expect("create");

    // Dropping the sink unfinished sends CopyFail.
    {
        let sink = client
            .copy_in::<_, Bytes>("COPY c (id, s) FROM STDIN")
            .await
            .expect("copy in");
        pin_mut!(sink);
        sink.send(Bytes::from("1\ta\n2\tb\n")).await.expect("data");
    }
    assert_eq!(count(&client).await, 0);

    // A client whose connection goes in the middle of its data, without a CopyFail.
    let mut raw = RawClient::connect(&server).await;
    raw.query("COPY c (id, s) FROM STDIN").await;
    raw.expect(b'G').await;
    raw.send(b'd', b"3\tc\n4\td\n").await;
    drop(raw);
    // The server noticed the end of the connection and gave the load up.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(count(&client).await, 0);
    let loaded = copy_in(&client, "COPY c (id, s) FROM STDIN", b"3\tc\n", 64).await;
    assert_eq!(loaded, 1);
    assert_check_table_clean(&client, "c").await;
    server.stop().await;
}

/// COPY FROM STDIN in FORMAT binary, as asyncpg's `copy_records_to_table` and tokio-postgres'
/// `BinaryCopyInWriter` send it: each value in its type's binary form, read back equal; a
/// duplicate key fails the load with 23505 and loads nothing of its batch; COPY TO in FORMAT
/// binary gives the values back in their declared types' binary form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_loads_every_type() {
    use chrono::NaiveDate;
    use rust_decimal::Decimal;
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::{ToSql, Type};

    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE bin (id INTEGER PRIMARY KEY, big BIGINT, sm SMALLINT, r REAL, \
             d DOUBLE PRECISION, n NUMERIC(10,2), t TEXT, ok BOOLEAN, day DATE, \
             ts TIMESTAMP, raw BYTEA)",
        )
        .await
        .expect("create");
    let types = [
        Type::INT4,
        Type::INT8,
        Type::INT2,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::NUMERIC,
        Type::TEXT,
        Type::BOOL,
        Type::DATE,
        Type::TIMESTAMP,
        Type::BYTEA,
    ];
    let day = NaiveDate::from_ymd_opt(1999, 12, 31).expect("date");
    let at = day.and_hms_micro_opt(23, 59, 58, 123_456).expect("time");
    let sink = client
        .copy_in("COPY bin FROM STDIN (FORMAT binary)")
        .await
        .expect("copy in");
    let writer = BinaryCopyInWriter::new(sink, &types);
    pin_mut!(writer);
    let (no_big, no_sm, no_r, no_d) = (None::<i64>, None::<i16>, None::<f32>, None::<f64>);
    let (no_n, no_t, no_ok) = (None::<Decimal>, None::<String>, None::<bool>);
    let (no_day, no_ts, no_raw) = (
        None::<NaiveDate>,
        None::<chrono::NaiveDateTime>,
        None::<Vec<u8>>,
    );
    let rows: [[&(dyn ToSql + Sync); 11]; 2] = [
        [
            &1i32,
            &-9_000_000_000i64,
            &-32768i16,
            &0.5f32,
            &-0.125f64,
            &Decimal::new(-1234567, 2),
            &"tab\there",
            &true,
            &day,
            &at,
            &vec![0u8, 255],
        ],
        [
            &2i32, &no_big, &no_sm, &no_r, &no_d, &no_n, &no_t, &no_ok, &no_day, &no_ts, &no_raw,
        ],
    ];
    for row in &rows {
        writer.as_mut().write(row).await.expect("row");
    }
    assert_eq!(writer.finish().await.expect("finish"), 2);
    let row = client
        .query_one("SELECT * FROM bin WHERE id = 1", &[])
        .await
        .expect("read back");
    assert_eq!(row.get::<_, i64>("big"), -9_000_000_000);
    assert_eq!(row.get::<_, i16>("sm"), -32768);
    assert_eq!(row.get::<_, f32>("r"), 0.5);
    assert_eq!(row.get::<_, f64>("d"), -0.125);
    assert_eq!(row.get::<_, Decimal>("n"), Decimal::new(-1234567, 2));
    assert_eq!(row.get::<_, String>("t"), "tab\there");
    assert!(row.get::<_, bool>("ok"));
    assert_eq!(row.get::<_, NaiveDate>("day"), day);
    assert_eq!(row.get::<_, chrono::NaiveDateTime>("ts"), at);
    assert_eq!(row.get::<_, Vec<u8>>("raw"), vec![0, 255]);
    let nulls = client
        .query_one(
            "SELECT count(*) FROM bin WHERE id = 2 AND big IS NULL AND t IS NULL",
            &[],
        )
        .await
        .expect("nulls");
    assert_eq!(nulls.get::<_, i64>(0), 1);

    // A key already stored fails the load; nothing of it is written.
    let sink = client
        .copy_in("COPY bin (id, t) FROM STDIN (FORMAT binary)")
        .await
        .expect("copy in");
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT4, Type::TEXT]);
    pin_mut!(writer);
    writer.as_mut().write(&[&3i32, &"new"]).await.expect("row");
    writer.as_mut().write(&[&1i32, &"dup"]).await.expect("row");
    let error = writer.finish().await.expect_err("duplicate key");
    assert_eq!(sqlstate(&error), "23505");
    let count = client
        .query_one("SELECT count(*) FROM bin", &[])
        .await
        .expect("count");
    assert_eq!(count.get::<_, i64>(0), 2);
    // COPY TO in FORMAT binary gives every value back in its declared type's binary form.
    let stream = client
        .copy_out("COPY (SELECT * FROM bin ORDER BY id) TO STDOUT (FORMAT binary)")
        .await
        .expect("copy out binary");
    let rows: Vec<tokio_postgres::binary_copy::BinaryCopyOutRow> =
        tokio_postgres::binary_copy::BinaryCopyOutStream::new(stream, &types)
            .try_collect()
            .await
            .expect("binary rows");
    assert_eq!(rows.len(), 2);
    let first = &rows[0];
    assert_eq!(first.get::<i32>(0), 1);
    assert_eq!(first.get::<i64>(1), -9_000_000_000);
    assert_eq!(first.get::<i16>(2), -32768);
    assert_eq!(first.get::<f32>(3), 0.5);
    assert_eq!(first.get::<f64>(4), -0.125);
    assert_eq!(first.get::<Decimal>(5), Decimal::new(-1234567, 2));
    assert_eq!(first.get::<&str>(6), "tab\there");
    assert!(first.get::<bool>(7));
    assert_eq!(first.get::<NaiveDate>(8), day);
    assert_eq!(first.get::<chrono::NaiveDateTime>(9), at);
    assert_eq!(first.get::<Vec<u8>>(10), vec![0, 255]);
    assert_eq!(rows[1].get::<i32>(0), 2);
    assert_eq!(rows[1].get::<Option<i64>>(1), None);
    assert_eq!(rows[1].get::<Option<&str>>(6), None);
    server.stop().await;
}
