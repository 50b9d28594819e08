//! A selective join reads the rows it joins, not the tables (issue 44): its lookup join probes
//! the other table by key, so the entries read stay a handful whatever the tables' size, where
//! the hash join the same query gets under `/*+ HASH_JOIN */` reads a whole table.

use std::sync::Arc;

use rowdex_store::MemoryStore;
use rowdex_store::metered::MeteredStore;

use crate::{TestResult, rows, table};

const USERS: u64 = 20_000;

#[tokio::test]
async fn selective_joins_read_their_matches_not_the_tables() -> TestResult {
    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = rowdex::Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name TEXT, grp INT);
         CREATE INDEX users_grp ON users (grp);
         CREATE TABLE orders (id INT PRIMARY KEY, user_id INT, amount INT);
         CREATE INDEX orders_user ON orders (user_id);",
    )
    .await?;
    // Four users per group: 17, 5017, 10017 and 15017 are group 17.
    s.execute(&format!(
        "INSERT INTO users WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < {USERS}) SELECT i, 'u' || i, i % 5000 FROM n"
    ))
    .await?;
    // Two orders per user: ids i and i + USERS both belong to user i.
    for half in 0..2 {
        s.execute(&format!(
            "INSERT INTO orders WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
               WHERE i < {USERS}) SELECT i + {}, i, i % 100 FROM n",
            half * USERS
        ))
        .await?;
    }
    // Gathered now, so that no background gathering (autoanalyze) reads while the meter counts.
    s.execute("ANALYZE").await?;
    let group_17 = ["17", "5017", "10017", "15017"];
    let cases: [(&str, Vec<Vec<String>>, u64); 5] = [
        // A point get of the order, one get of its user.
        (
            "SELECT o.id, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.id = 123",
            table(&[&["123", "u123"]]),
            4,
        ),
        // Four users from their index, then the index range of each and its two orders' rows.
        (
            "SELECT u.id, o.id, o.amount FROM users u JOIN orders o ON o.user_id = u.id
               WHERE u.grp = 17 ORDER BY o.id",
            table(&[
                &["17", "17", "17"],
                &["5017", "5017", "17"],
                &["10017", "10017", "17"],
                &["15017", "15017", "17"],
                &["17", "20017", "17"],
                &["5017", "25017", "17"],
                &["10017", "30017", "17"],
                &["15017", "35017", "17"],
            ]),
            30,
        ),
        // IN subquery: its two orders drive, their users are read by key.
        (
            "SELECT u.name FROM users u WHERE u.id IN (SELECT user_id FROM orders WHERE id
               BETWEEN 10 AND 11) ORDER BY u.name",
            table(&[&["u10"], &["u11"]]),
            6,
        ),
        // NOT EXISTS: no order of group 17 has an amount of 99.
        (
            "SELECT u.id FROM users u WHERE u.grp = 17 AND NOT EXISTS
               (SELECT 1 FROM orders o WHERE o.user_id = u.id AND o.amount = 99) ORDER BY u.id",
            table(&[
                &[group_17[0]],
                &[group_17[1]],
                &[group_17[2]],
                &[group_17[3]],
            ]),
            30,
        ),
        // LEFT JOIN: each user of the group keeps its row, without an order.
        (
            "SELECT u.id, o.id FROM users u LEFT JOIN orders o ON o.user_id = u.id
               AND o.amount = 99 WHERE u.grp = 17 ORDER BY u.id",
            group_17
                .iter()
                .map(|id| vec![id.to_string(), "NULL".to_string()])
                .collect(),
            30,
        ),
    ];
    for (sql, expected, max_reads) in cases {
        let plan = rows(&s, &format!("EXPLAIN {sql}")).await?;
        assert!(
            plan.iter().any(|line| line[0].contains("LOOKUP JOIN")),
            "{sql}: {plan:?}"
        );
        meter.reset();
        assert_eq!(rows(&s, sql).await?, expected, "{sql}");
        let read = meter.counts().keys();
        if read > max_reads {
            let analyzed = rows(&s, &format!("EXPLAIN ANALYZE {sql}")).await?;
            panic!("{sql} read {read} entries, expected at most {max_reads}: {analyzed:?}");
        }
        // The same answer from the hash join, which reads a whole table: the meter sees it.
        let hashed = sql.replacen("SELECT", "SELECT /*+ HASH_JOIN */", 1);
        meter.reset();
        assert_eq!(rows(&s, &hashed).await?, expected, "{hashed}");
        let read = meter.counts().keys();
        assert!(read >= USERS, "{hashed} read only {read} entries");
    }
    Ok(())
}
