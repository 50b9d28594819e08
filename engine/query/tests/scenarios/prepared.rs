//! Prepared statements and the native executor, through the public API: parameters bound by
//! number or position, plans that follow schema changes, statements that fall back to
//! DataFusion, and the two executors agreeing on random queries.

use rowdex::{Database, Datum, Error, Executor, Output};

use crate::{Rng, TestResult, cells, rows, table};

async fn users() -> Result<rowdex::Session, Error> {
    let db = Database::open_memory().await?;
    let session = db.session();
    session
        .execute(
            "CREATE TABLE u (id INT PRIMARY KEY, name TEXT, age INT);
             INSERT INTO u VALUES (1, 'ann', 30), (2, 'bob', 25), (3, 'cy', NULL), (4, 'dee', 25)",
        )
        .await?;
    Ok(session)
}

#[tokio::test]
async fn parameters_bind_by_number_and_by_position() -> TestResult {
    let session = users().await?;
    let by_number = session.prepare("SELECT name FROM u WHERE id = $1")?;
    assert_eq!(by_number.parameter_count(), 1);
    for (id, name) in [(1, "ann"), (3, "cy"), (4, "dee")] {
        let batches = by_number.query(&[Datum::Int(id)]).await?;
        assert_eq!(cells(&batches), table(&[&[name]]));
    }
    assert!(
        by_number
            .query(&[Datum::Int(9)])
            .await?
            .iter()
            .all(|b| b.num_rows() == 0)
    );
    // NULL compares as unknown: no row.
    assert!(
        by_number
            .query(&[Datum::Null])
            .await?
            .iter()
            .all(|b| b.num_rows() == 0)
    );

    let by_position =
        session.prepare("SELECT id FROM u WHERE age = ? AND id > ? ORDER BY id DESC LIMIT ?")?;
    assert_eq!(by_position.parameter_count(), 3);
    let batches = by_position
        .query(&[Datum::Int(25), Datum::Int(0), Datum::Int(1)])
        .await?;
    assert_eq!(cells(&batches), table(&[&["4"]]));

    // A float that is a whole number finds the integer key; one that is not matches nothing,
    // as the same literal would (DataFusion compares the column as a float).
    assert_eq!(
        cells(&by_number.query(&[Datum::Float(2.0)]).await?),
        table(&[&["bob"]])
    );
    assert!(
        by_number
            .query(&[Datum::Float(2.5)])
            .await?
            .iter()
            .all(|b| b.num_rows() == 0)
    );

    let wrong = by_number.query(&[]).await;
    assert!(
        matches!(
            wrong,
            Err(Error::ParameterCount {
                expected: 1,
                given: 0
            })
        ),
        "{wrong:?}"
    );
    let mixed = session.prepare("SELECT * FROM u WHERE id = $1 AND age = ?");
    assert!(matches!(mixed, Err(Error::Parse { .. })), "{mixed:?}");
    let two = session.prepare("SELECT 1; SELECT 2");
    assert!(matches!(two, Err(Error::Parse { .. })), "{two:?}");
    Ok(())
}

#[tokio::test]
async fn writes_and_other_statements_take_parameters_too() -> TestResult {
    let session = users().await?;
    session.execute("CREATE INDEX u_age ON u (age)").await?;
    let insert = session.prepare("INSERT INTO u VALUES ($1, $2, $3)")?;
    for id in 10..20 {
        let output = insert
            .execute(&[
                Datum::Int(id),
                Datum::Text(format!("user '{id}'")),
                Datum::Int(id % 3),
            ])
            .await?;
        assert!(matches!(output, Output::Affected { rows: 1 }));
    }
    let duplicate = insert
        .execute(&[Datum::Int(10), Datum::Null, Datum::Null])
        .await;
    assert!(
        matches!(duplicate, Err(Error::DuplicateKey { .. })),
        "{duplicate:?}"
    );

    let count = session.prepare("SELECT count(*), min(name) FROM u WHERE age = $1")?;
    assert_eq!(
        cells(&count.query(&[Datum::Int(1)]).await?),
        table(&[&["4", "user '10'"]])
    );
    let update = session.prepare("UPDATE u SET age = $2 WHERE id = $1")?;
    update.execute(&[Datum::Int(10), Datum::Int(99)]).await?;
    assert_eq!(
        rows(&session, "SELECT id FROM u WHERE age = 99").await?,
        table(&[&["10"]])
    );
    assert_eq!(
        rows(&session, "CHECK TABLE u").await?,
        table(&[&["u_age", "14", "14", "0", "0", "0", "ok"]])
    );
    let decimal = count.query(&[Datum::Decimal(5)]).await;
    assert!(
        matches!(decimal, Err(Error::Unsupported { .. })),
        "{decimal:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_prepared_query_follows_schema_changes() -> TestResult {
    let session = users().await?;
    let by_age = session.prepare("SELECT id FROM u WHERE age = $1 ORDER BY id")?;
    assert_eq!(
        cells(&by_age.query(&[Datum::Int(25)]).await?),
        table(&[&["2"], &["4"]])
    );
    // A new index changes the table's definition: the query is compiled again and uses it.
    session.execute("CREATE INDEX u_age ON u (age)").await?;
    session
        .execute("INSERT INTO u VALUES (5, 'eve', 25)")
        .await?;
    assert_eq!(
        cells(&by_age.query(&[Datum::Int(25)]).await?),
        table(&[&["2"], &["4"], &["5"]])
    );
    let plan = rows(
        &session,
        "EXPLAIN SELECT id FROM u WHERE age = 25 ORDER BY id",
    )
    .await?;
    assert!(
        plan[0][0].starts_with("INDEX SCAN u using u_age [age = 25] covering"),
        "{plan:?}"
    );
    // The table dropped and made again, with other columns.
    session
        .execute("DROP TABLE u; CREATE TABLE u (id INT PRIMARY KEY, age INT); INSERT INTO u VALUES (7, 25)")
        .await?;
    assert_eq!(
        cells(&by_age.query(&[Datum::Int(25)]).await?),
        table(&[&["7"]])
    );
    session.execute("DROP TABLE u").await?;
    let gone = by_age.query(&[Datum::Int(25)]).await;
    assert!(matches!(gone, Err(Error::TableNotFound { .. })), "{gone:?}");
    Ok(())
}

/// A random single-table query: conditions the native executor takes (and some it leaves to
/// DataFusion), an ORDER BY that ends with the whole key (so the order is total), LIMIT and
/// OFFSET.
fn random_query(rng: &mut Rng) -> String {
    let columns = ["a", "b", "c", "d", "e"];
    let mut conditions = Vec::new();
    for _ in 0..rng.next(4) {
        let column = rng.pick(&columns);
        let value = |rng: &mut Rng| match column {
            "d" => format!("'{}'", rng.pick(&["x", "xy", "y", "", "z"])),
            "e" => format!("{}.5", rng.int(-3, 3)),
            _ => rng.int(-1, 6).to_string(),
        };
        let condition = match rng.next(7) {
            0 => format!("{column} = {}", value(rng)),
            1 => format!(
                "{column} {} {}",
                rng.pick(&["<", "<=", ">", ">=", "<>"]),
                value(rng)
            ),
            2 => format!("{column} IN ({}, {}, NULL)", value(rng), value(rng)),
            3 => format!("{column} BETWEEN {} AND {}", value(rng), value(rng)),
            4 => format!("{column} IS {}NULL", rng.pick(&["", "NOT "])),
            5 if column == "d" => format!("d LIKE '{}%'", rng.pick(&["x", "", "y"])),
            _ => format!("{column} = {}", value(rng)),
        };
        conditions.push(condition);
    }
    let mut sql = "SELECT a, b, c, d, e FROM r".to_string();
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    let mut order: Vec<String> = Vec::new();
    if rng.next(3) > 0 {
        order.push(format!(
            "{} {}",
            rng.pick(&["c", "d", "e", "b"]),
            rng.pick(&["ASC", "DESC"])
        ));
    }
    let key_direction = rng.pick(&["ASC", "DESC"]);
    order.push(format!("a {key_direction}"));
    order.push(format!("b {}", rng.pick(&["ASC", "DESC"])));
    sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
    if rng.next(2) == 0 {
        sql.push_str(&format!(" LIMIT {}", rng.next(6)));
        if rng.next(2) == 0 {
            sql.push_str(&format!(" OFFSET {}", rng.next(4)));
        }
    }
    sql
}

#[tokio::test]
async fn native_and_datafusion_answers_agree() -> TestResult {
    let db = Database::open_memory().await?;
    let native = db.session();
    let mut datafusion = db.session();
    datafusion.set_executor(Executor::DataFusion);
    native
        .execute(
            "CREATE TABLE r (a INT, b INT, c INT, d TEXT, e DOUBLE, PRIMARY KEY (a, b DESC));
             CREATE INDEX r_c ON r (c);
             CREATE INDEX r_dc ON r (d, c) INCLUDE (e)",
        )
        .await?;
    let mut rng = Rng(0x5eed_cafe);
    let mut values = Vec::new();
    for a in 0..6 {
        for b in 0..8 {
            let c = if rng.next(5) == 0 {
                "NULL".to_string()
            } else {
                rng.int(0, 5).to_string()
            };
            let d = rng.pick(&["'x'", "'xy'", "'y'", "''", "NULL"]);
            let e = format!("{}.5", rng.int(-3, 3));
            values.push(format!("({a}, {b}, {c}, {d}, {e})"));
        }
    }
    native
        .execute(&format!("INSERT INTO r VALUES {}", values.join(", ")))
        .await?;
    let mut ran_natively = 0;
    for _ in 0..300 {
        let sql = random_query(&mut rng);
        let expected = rows(&datafusion, &sql).await?;
        let got = rows(&native, &sql).await?;
        assert_eq!(got, expected, "{sql}");
        let plan = rows(&native, &format!("EXPLAIN VERBOSE {sql}")).await?;
        if plan[0][0].starts_with("NativeExec") {
            ran_natively += 1;
        }
    }
    // Most queries are the native executor's (the float literals on the integer columns are
    // not): the comparison is a test of it.
    assert!(ran_natively > 150, "{ran_natively} of 300 ran natively");
    Ok(())
}

#[tokio::test]
async fn sql_text_with_other_literals_reuses_its_compiled_query() -> TestResult {
    let session = users().await?;
    let mut datafusion = session.clone();
    datafusion.set_executor(Executor::DataFusion);
    for (id, name) in [(1, "ann"), (2, "bob"), (4, "dee")] {
        let sql = format!("SELECT name FROM u WHERE id = {id}");
        assert_eq!(rows(&session, &sql).await?, table(&[&[name]]));
    }
    // The same text with literals of other types, quotes inside strings, NULL, a LIMIT.
    for sql in [
        "SELECT name FROM u WHERE id = '2'",
        "SELECT name FROM u WHERE id = 2.0",
        "SELECT name FROM u WHERE id = 2.5",
        "SELECT name FROM u WHERE id = NULL",
        "SELECT id FROM u WHERE name = 'it''s' OR name = 'cy'",
        "SELECT id FROM u WHERE age = 25 ORDER BY id DESC LIMIT 1",
        "SELECT id FROM u WHERE age = 25 ORDER BY id DESC LIMIT 5",
        "SELECT id FROM u WHERE name LIKE 'd%'",
    ] {
        assert_eq!(
            rows(&session, sql).await?,
            rows(&datafusion, sql).await?,
            "{sql}"
        );
    }
    // A table made again with other rows: the cached query follows it.
    session
        .execute("DROP TABLE u; CREATE TABLE u (id INT PRIMARY KEY, name TEXT); INSERT INTO u VALUES (2, 'new')")
        .await?;
    assert_eq!(
        rows(&session, "SELECT name FROM u WHERE id = 2").await?,
        table(&[&["new"]])
    );
    Ok(())
}

#[tokio::test]
async fn a_prepared_query_keeps_its_plan_choice_until_the_statistics_move() -> TestResult {
    use rowdex_store::MemoryStore;
    use rowdex_store::metered::MeteredStore;
    use std::sync::Arc;

    let store = MeteredStore::new(Arc::new(MemoryStore::new()));
    let meter = store.meter();
    let db = Database::with_store(Arc::new(store)).await?;
    let s = db.session();
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)")
        .await?;
    let values: Vec<String> = (0..6_000)
        .map(|id| format!("({id}, {}, {})", id % 60, id % 7))
        .collect();
    s.execute(&format!("INSERT INTO t VALUES {}", values.join(",")))
        .await?;
    s.execute("CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b)")
        .await?;
    let prepared = s.prepare("SELECT id FROM t WHERE a = $1 AND b = $2")?;
    let run = |a: i64, b: i64| {
        let prepared = &prepared;
        let meter = meter.clone();
        async move {
            meter.reset();
            let batches = prepared.query(&[Datum::Int(a), Datum::Int(b)]).await?;
            Ok::<_, Error>((cells(&batches), meter.counts().keys()))
        }
    };
    let expected = |a: i64, b: i64| -> Vec<Vec<String>> {
        (0..6_000i64)
            .filter(|id| id % 60 == a && id % 7 == b)
            .map(|id| vec![id.to_string()])
            .collect()
    };
    // The first run chooses: it counts the candidates' small ranges (dives), then reads.
    let (answer, first) = run(3, 2).await?;
    assert_eq!(answer, expected(3, 2));
    // Later runs with other values replay the choice: the reads alone.
    let (answer, second) = run(5, 4).await?;
    assert_eq!(answer, expected(5, 4));
    let (answer, third) = run(3, 2).await?;
    assert_eq!(answer, expected(3, 2));
    assert!(
        second < first && third < first,
        "a kept choice does not dive again: {first} keys, then {second} and {third}"
    );
    // Gathering the statistics again is a new generation: the next run chooses afresh.
    s.execute("ANALYZE t").await?;
    let (answer, after) = run(3, 2).await?;
    assert_eq!(answer, expected(3, 2));
    assert!(
        after > third,
        "re-chosen after ANALYZE: {after} keys against {third}"
    );
    Ok(())
}

/// A shell's script, run statement by statement through `run_script_statement` (the
/// compiled-query cache first), reads and writes exactly as `execute` does; a syntax error
/// points into the script and stops it there.
#[tokio::test]
async fn a_script_statement_by_statement_matches_execute() -> TestResult {
    let script = "
        SELECT name FROM u WHERE id = 1;
        SELECT name FROM u WHERE id = 2 ;
        BEGIN; UPDATE u SET name = 'b2' WHERE id = 2; SELECT name FROM u WHERE id = 2; ROLLBACK;
        SELECT name FROM u WHERE id = 2;
        /* a comment */ ;
        DROP TABLE u; CREATE TABLE u (id INT PRIMARY KEY, name TEXT);
        INSERT INTO u VALUES (2, 'new');
        SELECT name FROM u WHERE id = 2;
        SELECT count(*) FROM u;";
    let by_statement = users().await?;
    let mut got = Vec::new();
    for statement in rowdex::script_statements(script)? {
        if let Output::Rows { batches, .. } = by_statement.run_script_statement(&statement).await? {
            got.push(cells(&batches));
        }
    }
    let whole = users().await?;
    let mut expected = Vec::new();
    for output in whole.execute(script).await? {
        if let Output::Rows { batches, .. } = output {
            expected.push(cells(&batches));
        }
    }
    assert_eq!(got, expected);
    assert_eq!(got[3], table(&[&["bob"]]));
    assert_eq!(got[4], table(&[&["new"]]));

    let statements = rowdex::script_statements("SELECT 1;\n\nSELEC 2; SELECT 3")?;
    assert_eq!(statements.len(), 3);
    let error = by_statement.run_script_statement(&statements[1]).await;
    let message = error.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("Line: 3"), "{message}");
    Ok(())
}
