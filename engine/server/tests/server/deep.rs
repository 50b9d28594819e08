//! Statements whose planning goes deep (nested subqueries, joins, function calls) on a server
//! whose connections run on ordinary 2 MiB runtime threads: each plans, or fails with its
//! error, and the server lives on. A debug build's planner frames are large, so these once
//! overflowed the worker's stack and killed the process.

use tokio_postgres::SimpleQueryMessage;

use crate::harness::{TestServer, sqlstate};

/// SQLAlchemy's index reflection query (PostgreSQL dialect) with one call given the wrong
/// number of arguments: the planner's "no function matches" error is found several
/// subqueries and joins down.
const REFLECTION_WITH_A_BAD_CALL: &str = "SELECT pg_catalog.pg_index.indrelid, \
pg_catalog.pg_class.relname, pg_catalog.pg_index.indisunique, idx_cols.elements \
FROM pg_catalog.pg_index JOIN pg_catalog.pg_class ON pg_catalog.pg_index.indexrelid = pg_catalog.pg_class.oid \
LEFT OUTER JOIN (SELECT idx_attr.indexrelid AS indexrelid, min(idx_attr.indrelid) AS min_1, \
array_agg(idx_attr.element ORDER BY idx_attr.ord) AS elements \
FROM (SELECT idx.indexrelid AS indexrelid, idx.indrelid AS indrelid, idx.ord AS ord, \
CASE WHEN (idx.attnum = $1::INTEGER) THEN pg_catalog.pg_get_indexdef(idx.indexrelid, idx.ord + $2::INTEGER, $3) \
ELSE CAST(pg_catalog.pg_attribute.attname AS TEXT) END AS element \
FROM (SELECT pg_catalog.pg_index.indexrelid AS indexrelid, pg_catalog.pg_index.indrelid AS indrelid, \
unnest(pg_catalog.pg_index.indkey) AS attnum, \
unnest(range(1, CAST(coalesce(left(pg_catalog.pg_index.indkey), 0) AS BIGINT) + 1)) AS ord \
FROM pg_catalog.pg_index WHERE NOT pg_catalog.pg_index.indisprimary) AS idx \
LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_attribute.attnum = idx.attnum \
AND pg_catalog.pg_attribute.attrelid = idx.indrelid) AS idx_attr GROUP BY idx_attr.indexrelid) AS idx_cols \
ON pg_catalog.pg_index.indexrelid = idx_cols.indexrelid \
WHERE NOT pg_catalog.pg_index.indisprimary ORDER BY pg_catalog.pg_index.indrelid, pg_catalog.pg_class.relname";

/// `depth` subqueries in FROM, each adding one to the column below it.
fn nested_subqueries(depth: usize) -> String {
    let mut sql = "SELECT 1 AS x".to_string();
    for level in 0..depth {
        sql = format!("SELECT x + 1 AS x FROM ({sql}) AS s{level}");
    }
    sql
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_statements_plan_or_fail_without_taking_the_server_down() {
    let server = TestServer::start().await;
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (id INT PRIMARY KEY, v INT); CREATE INDEX tv ON t (v)")
        .await
        .expect("setup");
    let error = client
        .prepare(REFLECTION_WITH_A_BAD_CALL)
        .await
        .expect_err("left() with one argument");
    assert_eq!(sqlstate(&error), "42883", "{error}");
    for depth in [10, 45, 99] {
        let sql = nested_subqueries(depth);
        let statement = client.prepare(&sql).await.expect("prepare nested");
        let row = client.query_one(&statement, &[]).await.expect("nested");
        assert_eq!(row.get::<_, i64>(0), 1 + depth as i64, "depth {depth}");
    }
    let simple = client
        .simple_query(&nested_subqueries(45))
        .await
        .expect("nested, simple protocol");
    let values: Vec<_> = simple
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(values, ["46"]);
    // Deeper than rowdex plans (a hundred queries, the outermost included): refused with
    // PostgreSQL's "statement too complex", not a crash.
    for sql in [nested_subqueries(100), nested_subqueries(400)] {
        let too_deep = client.simple_query(&sql).await.expect_err("too deep");
        assert_eq!(sqlstate(&too_deep), "54001", "{too_deep}");
        let too_deep = client.prepare(&sql).await.expect_err("too deep");
        assert_eq!(sqlstate(&too_deep), "54001", "{too_deep}");
    }
    // The same connection still answers.
    let row = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 0);
    server.stop().await;
}
