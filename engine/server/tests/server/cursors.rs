//! SQL cursors over the wire: DECLARE inside a block (or WITH HOLD outside one), FETCH and
//! MOVE in both directions, CLOSE, and a cursor's end with its transaction. The drivers'
//! own cursors (psycopg's named cursors, asyncpg's `Cursor.forward`) are in the clients'
//! scenarios.

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::harness::{TestServer, sqlstate};

/// The first column of each row a simple query returns, and its command tag.
async fn fetched(client: &Client, sql: &str) -> (Vec<String>, String) {
    let messages = client.simple_query(sql).await.expect(sql);
    let mut rows = Vec::new();
    let mut tag = String::new();
    for message in messages {
        match message {
            SimpleQueryMessage::Row(row) => rows.push(row.get(0).unwrap_or("NULL").to_string()),
            SimpleQueryMessage::CommandComplete(count) => tag = count.to_string(),
            _ => {}
        }
    }
    (rows, tag)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_fetch_and_move_in_both_directions_within_their_transaction() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE cur (id INTEGER PRIMARY KEY, v TEXT);
             INSERT INTO cur VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')",
        )
        .await
        .expect("create");
    let outside = client
        .batch_execute("DECLARE c CURSOR FOR SELECT id FROM cur")
        .await
        .expect_err("outside a block");
    assert_eq!(sqlstate(&outside), "25P01");

    client.batch_execute("BEGIN").await.expect("begin");
    client
        .batch_execute("DECLARE c SCROLL CURSOR FOR SELECT id FROM cur ORDER BY id")
        .await
        .expect("declare");
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(fetched(&client, "FETCH 2 FROM c").await.0, ids(&["1", "2"]));
    assert_eq!(fetched(&client, "MOVE FORWARD 2 IN c").await.1, "2");
    assert_eq!(
        fetched(&client, "FETCH BACKWARD 2 c").await.0,
        ids(&["3", "2"])
    );
    assert_eq!(fetched(&client, "FETCH LAST c").await.0, ids(&["5"]));
    assert_eq!(
        fetched(&client, "FETCH NEXT c").await.0,
        Vec::<String>::new()
    );
    assert_eq!(fetched(&client, "FETCH ABSOLUTE 2 c").await.0, ids(&["2"]));
    let (rows, tag) = fetched(&client, "FETCH ALL c").await;
    assert_eq!((rows, tag), (ids(&["3", "4", "5"]), "3".to_string()));
    let twice = client
        .batch_execute("DECLARE c CURSOR FOR SELECT 1")
        .await
        .expect_err("a second c");
    assert_eq!(sqlstate(&twice), "42P03");
    client.batch_execute("ROLLBACK").await.expect("rollback");

    // A cursor ends with its transaction; one WITH HOLD outlives it until CLOSE.
    client.batch_execute("BEGIN").await.expect("begin");
    client
        .batch_execute(
            "DECLARE gone CURSOR FOR SELECT id FROM cur;
             DECLARE kept CURSOR WITH HOLD FOR SELECT v FROM cur ORDER BY id DESC",
        )
        .await
        .expect("declare both");
    client.batch_execute("COMMIT").await.expect("commit");
    let gone = client
        .batch_execute("FETCH gone")
        .await
        .expect_err("closed at commit");
    assert_eq!(sqlstate(&gone), "34000");
    assert_eq!(fetched(&client, "FETCH 2 kept").await.0, ids(&["e", "d"]));
    client.batch_execute("CLOSE kept").await.expect("close");
    let closed = client
        .batch_execute("FETCH kept")
        .await
        .expect_err("closed");
    assert_eq!(sqlstate(&closed), "34000");

    // Through the extended protocol, with a parameter: the rows come typed, in binary.
    client.batch_execute("BEGIN").await.expect("begin");
    client
        .execute(
            "DECLARE p NO SCROLL CURSOR FOR SELECT id, v FROM cur WHERE id > $1 ORDER BY id",
            &[&2i32],
        )
        .await
        .expect("declare with a parameter");
    let rows = client.query("FETCH 2 FROM p", &[]).await.expect("fetch");
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(3, "c".to_string()), (4, "d".to_string())]);
    let back = client
        .batch_execute("FETCH PRIOR p")
        .await
        .expect_err("NO SCROLL");
    assert_eq!(sqlstate(&back), "55000");
    let aborted = client
        .batch_execute("FETCH p")
        .await
        .expect_err("failed block");
    assert_eq!(sqlstate(&aborted), "25P02");
    client.batch_execute("ROLLBACK").await.expect("rollback");
    server.stop().await;
}
