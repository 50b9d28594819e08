//! Transactions over the wire: the status ReadyForQuery reports, PostgreSQL's failed-block
//! rules, and many clients moving money concurrently with retries on 40001, their transaction
//! blocks shown to be open at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Barrier;
use tokio_postgres::Client;

use crate::harness::{TestServer, assert_check_table_clean, sqlstate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_block_refuses_statements_until_rollback() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE a (id BIGINT PRIMARY KEY, v BIGINT)")
        .await
        .expect("create");
    client.batch_execute("BEGIN").await.expect("begin");
    client
        .batch_execute("INSERT INTO a VALUES (1, 1)")
        .await
        .expect("insert");
    let error = client
        .batch_execute("INSERT INTO a VALUES (1, 2)")
        .await
        .expect_err("duplicate");
    assert_eq!(sqlstate(&error), "23505");
    let refused = client.batch_execute("SELECT 1").await.expect_err("aborted");
    assert_eq!(sqlstate(&refused), "25P02");
    // COMMIT of a failed block rolls it back.
    let messages = client.simple_query("COMMIT").await.expect("commit");
    assert!(matches!(
        messages.last(),
        Some(tokio_postgres::SimpleQueryMessage::CommandComplete(_))
    ));
    let count = client
        .query_one("SELECT count(*) FROM a", &[])
        .await
        .expect("count");
    assert_eq!(count.get::<_, i64>(0), 0, "the failed block wrote nothing");

    // ROLLBACK TO a savepoint recovers the block, keeping what came before it.
    client
        .batch_execute("BEGIN; INSERT INTO a VALUES (5, 5); SAVEPOINT s")
        .await
        .expect("savepoint");
    client
        .batch_execute("INSERT INTO a VALUES (5, 6)")
        .await
        .expect_err("duplicate");
    client
        .batch_execute("ROLLBACK TO SAVEPOINT s; INSERT INTO a VALUES (6, 6); COMMIT")
        .await
        .expect("recovered");
    let rows = client
        .query("SELECT id FROM a ORDER BY id", &[])
        .await
        .expect("rows");
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, vec![5, 6]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_transactions_commit_and_roll_back() {
    let server = TestServer::start().await;
    let mut client = server.client().await;
    client
        .batch_execute("CREATE TABLE d (id BIGINT PRIMARY KEY)")
        .await
        .expect("create");
    let transaction = client.transaction().await.expect("begin");
    transaction
        .execute("INSERT INTO d VALUES ($1)", &[&1i64])
        .await
        .expect("insert");
    transaction.rollback().await.expect("rollback");
    let transaction = client.transaction().await.expect("begin");
    transaction
        .execute("INSERT INTO d VALUES ($1)", &[&2i64])
        .await
        .expect("insert");
    transaction.commit().await.expect("commit");
    let rows = client.query("SELECT id FROM d", &[]).await.expect("rows");
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, vec![2]);
    // Outside a block, COMMIT and ROLLBACK warn and succeed, as in PostgreSQL.
    client
        .batch_execute("COMMIT; ROLLBACK")
        .await
        .expect("no block");
    server.stop().await;
}

const ACCOUNTS: i64 = 10;
const CLIENTS: usize = 6;
const TRANSFERS: usize = 40;

/// One transfer between two accounts in a transaction, retried while it conflicts or
/// deadlocks.
async fn transfer(client: &Client, from: i64, to: i64) -> usize {
    let mut retries = 0;
    loop {
        let attempt = async {
            client.batch_execute("BEGIN").await?;
            client
                .execute("UPDATE acct SET bal = bal - 1 WHERE id = $1", &[&from])
                .await?;
            client
                .execute("UPDATE acct SET bal = bal + 1 WHERE id = $1", &[&to])
                .await?;
            client.batch_execute("COMMIT").await
        };
        match attempt.await {
            Ok(()) => return retries,
            // A serialization failure, or a deadlock (transfers lock two rows in either order),
            // as a PostgreSQL client retries them.
            Err(error) if matches!(sqlstate(&error).as_str(), "40001" | "40P01") => {
                // A conflict at COMMIT ends the block; one earlier fails it: ROLLBACK either way.
                client.batch_execute("ROLLBACK").await.expect("rollback");
                retries += 1;
            }
            Err(error) => panic!("transfer failed: {error}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transfers_conserve_the_total() {
    let server = TestServer::start().await;
    let setup = server.client().await;
    setup
        .batch_execute(
            "CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL);
             CREATE INDEX acct_bal ON acct (bal)",
        )
        .await
        .expect("create");
    for id in 0..ACCOUNTS {
        setup
            .execute("INSERT INTO acct VALUES ($1, 100)", &[&id])
            .await
            .expect("account");
    }
    let mut tasks = Vec::new();
    // Every client first holds a transaction block open until all of them have one: a server
    // that ran one connection's block at a time would never let them meet.
    let all_open = Arc::new(Barrier::new(CLIENTS));
    for c in 0..CLIENTS {
        let client = Arc::new(server.client().await);
        let all_open = all_open.clone();
        tasks.push(tokio::spawn(async move {
            client.batch_execute("BEGIN").await.expect("begin");
            let id = c as i64 % ACCOUNTS;
            client
                .query_one("SELECT bal FROM acct WHERE id = $1", &[&id])
                .await
                .expect("read in the block");
            tokio::time::timeout(Duration::from_secs(60), all_open.wait())
                .await
                .expect("every client's transaction block open at once");
            client
                .batch_execute("COMMIT")
                .await
                .expect("read-only commit");
            let mut retries = 0;
            let mut spans = Vec::with_capacity(TRANSFERS);
            for i in 0..TRANSFERS {
                let from = ((c * 7 + i * 3) as i64) % ACCOUNTS;
                let to = (from + 1 + (i as i64 % (ACCOUNTS - 1))) % ACCOUNTS;
                let started = Instant::now();
                retries += transfer(&client, from, to).await;
                spans.push((c, started, Instant::now()));
            }
            (retries, spans)
        }));
    }
    let mut retries = 0;
    let mut spans = Vec::new();
    for task in tasks {
        let (client_retries, client_spans) = task.await.expect("client task");
        retries += client_retries;
        spans.extend(client_spans);
    }
    // Transfers of different clients ran at the same time (a server that ran one transfer at a
    // time would have none overlap), whether they then conflicted (retries) or waited.
    let overlapping = spans
        .iter()
        .enumerate()
        .filter(|(i, (client, start, end))| {
            spans[i + 1..]
                .iter()
                .any(|(other, s, e)| other != client && s < end && start < e)
        })
        .count();
    assert!(
        overlapping > TRANSFERS,
        "only {overlapping} transfers overlapped another client's ({retries} retries)"
    );
    let total = setup
        .query_one("SELECT sum(bal) FROM acct", &[])
        .await
        .expect("total");
    // The sum of a bigint is a numeric, as in PostgreSQL.
    assert_eq!(
        total.get::<_, rust_decimal::Decimal>(0),
        rust_decimal::Decimal::from(ACCOUNTS * 100),
        "after {retries} retries"
    );
    assert_check_table_clean(&setup, "acct").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_transaction_leaves_nothing_of_it() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE d (id BIGINT PRIMARY KEY, v BIGINT); CREATE INDEX d_v ON d (v);
             INSERT INTO d VALUES (1, 10)",
        )
        .await
        .expect("setup");
    let gone = server.client().await;
    gone.batch_execute("BEGIN; INSERT INTO d VALUES (2, 20); UPDATE d SET v = 11 WHERE id = 1")
        .await
        .expect("the transaction's statements");
    drop(gone);
    // Its connection closed with the transaction open: nothing of it is kept, and its key is
    // free for the next writer.
    client
        .batch_execute("INSERT INTO d VALUES (2, 21)")
        .await
        .expect("key 2 is free");
    let rows = client
        .query("SELECT id, v FROM d ORDER BY id", &[])
        .await
        .expect("rows");
    let rows: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, vec![(1, 10), (2, 21)]);
    let by_index = client
        .query("SELECT id FROM d WHERE v = 11 OR v = 20", &[])
        .await
        .expect("index");
    assert!(
        by_index.is_empty(),
        "no index entry of the lost transaction"
    );
    assert_check_table_clean(&client, "d").await;
    server.stop().await;
}

/// What drivers and ORMs do inside the transaction their driver opened: read the isolation
/// level, create tables and indexes (before and after writing), load with COPY, and roll it
/// all back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drivers_blocks_hold_show_ddl_and_copy() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        .await
        .expect("begin");
    let level = client
        .simple_query("SHOW TRANSACTION ISOLATION LEVEL")
        .await
        .expect("show inside a block");
    let shown: Vec<String> = level
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(shown, vec!["read committed".to_string()]);
    // Schema changes inside the block are part of it, before and after its writes.
    client
        .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, k INT DEFAULT '0' NOT NULL) WITH (fillfactor = 100)")
        .await
        .expect("create inside a block");
    client
        .batch_execute("CREATE INDEX ON t (k)")
        .await
        .expect("an index without a name");
    let sink = client
        .copy_in::<_, bytes::Bytes>("COPY t (id) FROM STDIN")
        .await
        .expect("copy inside a block");
    futures::pin_mut!(sink);
    use futures::SinkExt;
    sink.send(bytes::Bytes::from_static(b"1\n2\n3\n"))
        .await
        .expect("data");
    assert_eq!(sink.finish().await.expect("copy done"), 3);
    client
        .batch_execute("CREATE INDEX t_k2 ON t (k)")
        .await
        .expect("a schema change after the block's first write");
    let indexed = client
        .query_one("SELECT count(*) FROM t WHERE k = 0", &[])
        .await
        .expect("read through the block's index");
    assert_eq!(indexed.get::<_, i64>(0), 3);
    client.batch_execute("ROLLBACK").await.expect("rollback");
    // ROLLBACK undid the table, its indexes and its rows.
    let gone = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect_err("the table went with the block");
    assert_eq!(sqlstate(&gone), "42P01");
    let index = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE indexname IN ('t_k_idx', 't_k2')",
            &[],
        )
        .await
        .expect("no index left");
    assert_eq!(index.get::<_, i64>(0), 0);
    // Committed, the same block leaves the table, its generated index name and no rows.
    client
        .batch_execute(
            "BEGIN; CREATE TABLE t (id INT PRIMARY KEY, k INT DEFAULT '0' NOT NULL); \
             CREATE INDEX ON t (k); COMMIT",
        )
        .await
        .expect("a committed block");
    let index = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 't_k_idx'",
            &[],
        )
        .await
        .expect("the generated index name");
    assert_eq!(index.get::<_, i64>(0), 1);
    // A read-only transaction refuses writes.
    client
        .batch_execute("BEGIN READ ONLY")
        .await
        .expect("begin");
    let refused = client
        .batch_execute("INSERT INTO t VALUES (9, 9)")
        .await
        .expect_err("a write in a read-only transaction");
    assert_eq!(sqlstate(&refused), "25006");
    client.batch_execute("ROLLBACK").await.expect("rollback");
    // PostgreSQL's rules on the wire: division by zero fails, columns have PostgreSQL's names.
    let error = client
        .simple_query("SELECT 1/0")
        .await
        .expect_err("division by zero");
    assert_eq!(sqlstate(&error), "22012");
    let row = client
        .query_one("SELECT '0'::int + 1, count(*), upper('a') FROM t", &[])
        .await
        .expect("named columns");
    let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, vec!["?column?", "count", "upper"]);
    // DEALLOCATE forgets a prepared statement; DEALLOCATE ALL every one.
    let prepared = client.prepare("SELECT id FROM t").await.expect("prepare");
    client
        .batch_execute("DEALLOCATE ALL")
        .await
        .expect("deallocate all");
    let gone = client
        .query(&prepared, &[])
        .await
        .expect_err("a deallocated statement");
    assert_eq!(sqlstate(&gone), "26000");
    server.stop().await;
}

/// A query string of several reads and writes is one transaction, as in PostgreSQL: an error
/// in one undoes the statements before it, and a string that runs to its end commits them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_string_of_several_statements_is_one_transaction() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE multi (k TEXT PRIMARY KEY, v BIGINT)")
        .await
        .expect("create");
    let error = client
        .batch_execute(
            "INSERT INTO multi VALUES ('a', 1); SELECT 1/0; INSERT INTO multi VALUES ('b', 2)",
        )
        .await
        .expect_err("division by zero");
    assert_eq!(sqlstate(&error), "22012");
    let rows = client
        .query_one("SELECT count(*) FROM multi", &[])
        .await
        .expect("count");
    assert_eq!(rows.get::<_, i64>(0), 0, "the first INSERT was undone");
    client
        .batch_execute(
            "INSERT INTO multi VALUES ('a', 1); UPDATE multi SET v = v + 1 WHERE k = 'a'; \
             INSERT INTO multi VALUES ('b', 2)",
        )
        .await
        .expect("all three");
    let rows = client
        .query_one("SELECT sum(v) FROM multi", &[])
        .await
        .expect("sum");
    assert_eq!(
        rows.get::<_, rust_decimal::Decimal>(0),
        rust_decimal::Decimal::from(4)
    );
    // The connection is idle again: a block can begin.
    client
        .batch_execute("BEGIN; COMMIT")
        .await
        .expect("a block");
    server.stop().await;
}
