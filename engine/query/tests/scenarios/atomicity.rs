//! A failing statement changes nothing: not part of a multi-row INSERT, not part of an UPDATE.

use crate::{TestResult, rows, table};

async fn setup() -> Result<rowdex::Session, rowdex::Error> {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR(5) NOT NULL, v DOUBLE);
         INSERT INTO t VALUES (1, 'one', 1.0), (2, 'two', 2.0), (3, 'three', 3.0);",
    )
    .await?;
    Ok(s)
}

const ALL: &str = "SELECT * FROM t ORDER BY k";

fn original() -> Vec<Vec<String>> {
    table(&[
        &["1", "one", "1.0"],
        &["2", "two", "2.0"],
        &["3", "three", "3.0"],
    ])
}

#[tokio::test]
async fn failed_statements_leave_the_table_as_it_was() -> TestResult {
    let s = setup().await?;
    let failing = [
        (
            "INSERT INTO t VALUES (4, 'four', 4), (2, 'dup', 0)",
            "duplicate primary key in table t: (k = 2)",
        ),
        (
            "INSERT INTO t VALUES (5, 'five', 5), (6, 'toolong', 6)",
            "value too long for column name",
        ),
        (
            "INSERT INTO t VALUES (7, NULL, 7)",
            "column name of table t is NOT NULL",
        ),
        (
            "INSERT INTO t VALUES (NULL, 'x', 7)",
            "part of the primary key and cannot be NULL",
        ),
        (
            "INSERT INTO t VALUES (8, 'x', 'abc')",
            "column v of table t is DOUBLE",
        ),
        (
            "INSERT INTO t (k, nope) VALUES (9, 1)",
            "column nope does not exist in table t",
        ),
        (
            "INSERT INTO t VALUES (10, 'x')",
            "has 3 target columns but 2 values",
        ),
        (
            "UPDATE t SET k = 1 WHERE k >= 2",
            "duplicate primary key in table t: (k = 1)",
        ),
        (
            "UPDATE t SET k = 9 WHERE k > 1",
            "duplicate primary key in table t: (k = 9)",
        ),
        (
            "UPDATE t SET name = 'longer name' WHERE k = 3",
            "value too long",
        ),
        ("INSERT INTO nope VALUES (1)", "table nope does not exist"),
        ("SELEC * FROM t", "syntax error"),
        ("CREATE TABLE t (a INT)", "table t already exists"),
    ];
    for (sql, message) in failing {
        let error = s
            .execute(sql)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains(message),
            "{sql}: got {error:?}, want {message:?}"
        );
        assert_eq!(rows(&s, ALL).await?, original(), "after {sql}");
    }
    Ok(())
}

#[tokio::test]
async fn updates_that_move_keys_onto_each_other_succeed_together() -> TestResult {
    let s = setup().await?;
    // Every key moves down by one: each new key is an old key the statement also vacates.
    s.execute("UPDATE t SET k = k - 1").await?;
    assert_eq!(
        rows(&s, ALL).await?,
        table(&[
            &["0", "one", "1.0"],
            &["1", "two", "2.0"],
            &["2", "three", "3.0"]
        ])
    );
    Ok(())
}

#[tokio::test]
async fn syntax_errors_carry_the_position() -> TestResult {
    let s = setup().await?;
    let error = s
        .execute("SELECT k\nFROM t WHERE k = = 1")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("Line: 2"), "{error}");
    Ok(())
}
