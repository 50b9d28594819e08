//! A selective join reads the rows it joins, not the tables (issue 44): its lookup join probes
//! the other table by key, so the entries read stay a handful whatever the tables' size, where
//! the hash join the same query gets under `/*+ HASH_JOIN */` reads a whole table.

use std::sync::Arc;

use rowdex_store::MemoryStore;
use rowdex_store::metered::MeteredStore;

use crate::{TestResult, cores_for_parallel_check, rows, table};

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

/// The native executor runs a selective join (issue 44) without DataFusion's planning: a
/// prepared join and a join whose literals change from run to run plan once, then only bind
/// and read, and answer what DataFusion answers. A join it should not run (no key reaches the
/// other table) is left to DataFusion.
#[tokio::test]
async fn selective_joins_run_natively_and_plan_once() -> TestResult {
    let (db, s, reference) = users_and_orders().await?;
    let texts = |id: i64| {
        [
            format!(
                "SELECT o.id, o.amount, u.name FROM orders o JOIN users u ON u.id = o.user_id
                   WHERE o.id = {id}"
            ),
            format!(
                "SELECT u.id, o.id FROM users u LEFT JOIN orders o ON o.user_id = u.id
                   AND o.amount > 80 WHERE u.id IN ({id}, {}) ORDER BY u.id, o.id",
                id + 1
            ),
            format!(
                "SELECT u.name, o.amount FROM users u, orders o WHERE o.user_id = u.id
                   AND u.id = {id} ORDER BY o.amount DESC LIMIT 2"
            ),
            // Semi joins: the subquery's users drive; the outer users are probed once each
            // although two orders name them (the driving orders made distinct); anti join.
            format!(
                "SELECT o.id, o.amount FROM orders o WHERE o.user_id IN
                   (SELECT id FROM users WHERE id BETWEEN {id} AND {}) ORDER BY o.id",
                id + 3
            ),
            {
                let a = id % 2000 + 1;
                format!(
                    "SELECT u.id, u.name FROM users u WHERE u.id IN (SELECT user_id FROM orders
                       WHERE id IN ({a}, {}, {}, {})) ORDER BY u.id",
                    a + 2000,
                    a + 1,
                    a + 2001
                )
            },
            format!(
                "SELECT u.id, u.name FROM users u WHERE u.id BETWEEN {id} AND {}
                   AND EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id AND o.amount > 40)
                   ORDER BY u.id",
                id + 5
            ),
            format!(
                "SELECT u.id FROM users u WHERE u.id BETWEEN {id} AND {} AND NOT EXISTS
                   (SELECT 1 FROM orders WHERE user_id = u.id AND amount < 30) ORDER BY u.id",
                id + 20
            ),
        ]
    };
    // Warm: each text compiles and plans on its first run.
    for sql in texts(1) {
        rows(&s, &sql).await?;
    }
    // Each pass runs every text with new literals, natively and through DataFusion. Statistics
    // gathered in the background (after the load) may end a kept choice once: a pass that
    // planned nothing natively must come within three.
    let mut steady = false;
    for _ in 0..3 {
        let before = db.planning();
        for id in [7, 14, 300, 1999, 4000] {
            for sql in texts(id) {
                let native = rows(&s, &sql).await?;
                assert_eq!(native, rows(&reference, &sql).await?, "{sql}");
            }
        }
        let after = db.planning();
        assert_eq!(
            after.datafusion_plans - before.datafusion_plans,
            35,
            "only the reference session's runs went through DataFusion"
        );
        if after.access_path_choices == before.access_path_choices {
            steady = true;
            break;
        }
    }
    assert!(steady, "every pass chose its joins' plans afresh");

    // A prepared join: planned on its first run only.
    let prepared = s.prepare(
        "SELECT o.id, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.id = $1",
    )?;
    let first = prepared.query(&[rowdex::Datum::Int(3)]).await?;
    assert_eq!(crate::cells(&first), table(&[&["3", "u4"]]));
    let mut steady = false;
    for _ in 0..3 {
        let before = db.planning();
        for id in 8..40 {
            let batches = prepared.query(&[rowdex::Datum::Int(id)]).await?;
            let expected = match id % 7 {
                0 => Vec::new(),
                _ => table(&[&[&id.to_string(), &format!("u{}", id + 1)]]),
            };
            assert_eq!(crate::cells(&batches), expected, "order {id}");
        }
        if db.planning() == before {
            steady = true;
            break;
        }
    }
    assert!(steady, "every pass of a prepared join planned");

    // A NULL bound into a LEFT JOIN's ON matches nothing: every user keeps a row of NULLs.
    let outer = s.prepare(
        "SELECT u.id, o.id FROM users u LEFT JOIN orders o ON o.user_id = u.id
           AND o.amount = $1 WHERE u.id IN (5, 6) ORDER BY u.id",
    )?;
    let some = outer.query(&[rowdex::Datum::Int(4)]).await?;
    assert_eq!(crate::cells(&some), table(&[&["5", "4"], &["6", "NULL"]]));
    let none = outer.query(&[rowdex::Datum::Null]).await?;
    assert_eq!(
        crate::cells(&none),
        table(&[&["5", "NULL"], &["6", "NULL"]])
    );

    // Nothing reaches users by a key (grp has no index): DataFusion's hash join runs it.
    let sql = "SELECT u.id, o.id FROM orders o JOIN users u ON u.grp = o.amount WHERE o.id = 5";
    let before = db.planning();
    let answer = rows(&s, sql).await?;
    assert_eq!(answer.len(), 20);
    assert_eq!(db.planning().datafusion_plans, before.datafusion_plans + 1);
    Ok(())
}

/// 2,000 users and 4,000 orders (every seventh without a user), analyzed; a session, and one
/// that runs everything through DataFusion (the reference).
async fn users_and_orders()
-> Result<(rowdex::Database, rowdex::Session, rowdex::Session), rowdex::Error> {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name TEXT, grp INT);
         CREATE TABLE orders (id INT PRIMARY KEY, user_id INT, amount INT);
         CREATE INDEX orders_user ON orders (user_id);
         INSERT INTO users WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < 2000) SELECT i, 'u' || i, i % 100 FROM n;
         INSERT INTO orders WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < 4000) SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE i % 2000 + 1 END,
           i % 90 FROM n;
         ANALYZE",
    )
    .await?;
    let mut reference = db.session();
    reference.set_executor(rowdex::Executor::DataFusion);
    Ok((db, s, reference))
}

/// A native join whose rows outgrow the memory budget gives up and leaves the join to
/// DataFusion, with the same answer (then and on later runs).
#[tokio::test]
async fn a_native_join_past_the_memory_budget_is_left_to_datafusion() -> TestResult {
    let (db, s, reference) = users_and_orders().await?;
    // 64 KiB hold about 250 joined rows of six columns; the join drives from 600 users.
    db.set_memory_budget(64 * 1024);
    let sql = "SELECT /*+ LOOKUP_JOIN(o) */ u.id, o.id FROM users u JOIN orders o
                 ON o.user_id = u.id WHERE u.id BETWEEN 1 AND 600 ORDER BY o.id";
    let expected = rows(&reference, sql).await?;
    assert!(expected.len() > 1000, "{}", expected.len());
    let plan = rows(&s, &format!("EXPLAIN {sql}")).await?;
    assert!(
        plan.iter().any(|l| l[0].contains("LOOKUP JOIN")),
        "{plan:?}"
    );
    for _ in 0..2 {
        let before = db.planning();
        assert_eq!(rows(&s, sql).await?, expected);
        let after = db.planning();
        assert_eq!(
            after.datafusion_plans,
            before.datafusion_plans + 1,
            "DataFusion answered"
        );
    }
    Ok(())
}

/// A native join driven by a large index intersection reads it in partitions of primary keys,
/// one task each (when the machine has more than one core), and answers exactly what
/// DataFusion, reading it whole, answers: every match once, in the same order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_driving_intersection_is_read_in_partitions() -> TestResult {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, a INT, b INT, name TEXT);
         CREATE INDEX users_a ON users (a);
         CREATE INDEX users_b ON users (b);
         CREATE TABLE orders (id INT PRIMARY KEY, user_id INT, amount INT);
         CREATE INDEX orders_user ON orders (user_id);
         INSERT INTO users WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < 40000) SELECT i, i % 2, i % 3, 'u' || i FROM n;
         INSERT INTO orders WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
           WHERE i < 30000) SELECT i, (i * 7) % 40000 + 1, i % 90 FROM n;
         ANALYZE",
    )
    .await?;
    let mut reference = db.session();
    reference.set_executor(rowdex::Executor::DataFusion);
    // a = 1 and b = 2: 20,000 and 13,333 entries merged, 6,667 users.
    let sql =
        "SELECT /*+ INDEX_MERGE(users users_a users_b) LOOKUP_JOIN(o) */ users.id, o.id, o.amount
                 FROM users JOIN orders o ON o.user_id = users.id
                 WHERE users.a = 1 AND users.b = 2 ORDER BY users.id, o.id";
    let plan = rows(&s, &format!("EXPLAIN {sql}")).await?;
    let driving = plan.first().map(|line| line[0].clone()).unwrap_or_default();
    assert!(driving.starts_with("INDEX INTERSECTION users"), "{plan:?}");
    if cores_for_parallel_check("the intersection's split into partitions") > 1 {
        assert!(driving.contains(" in 2 partitions"), "{plan:?}");
    }
    let expected = rows(&reference, sql).await?;
    assert!(expected.len() > 4000, "{}", expected.len());
    for _ in 0..2 {
        let before = db.planning();
        assert_eq!(rows(&s, sql).await?, expected);
        assert_eq!(db.planning().datafusion_plans, before.datafusion_plans);
    }
    Ok(())
}
