//! COPY FROM and COPY TO: loads maintain indexes, a bad row or batch stops the load with its line
//! and exactly the rows before it loaded, options are honoured, and an export reads back.

use std::fmt::Write as _;

use rowdex::COPY_BATCH_ROWS;

use crate::{TestResult, rows, table};

/// CSV text of `n` rows `id,name,grp` with a header line; `bad` replaces one row's text.
fn people_csv(n: usize, bad: Option<(usize, &str)>) -> String {
    let mut text = String::from("id,name,grp\n");
    for i in 0..n {
        match bad {
            Some((row, line)) if row == i => text.push_str(line),
            _ => {
                let _ = write!(text, "{i},name{i},{}", i % 7);
            }
        }
        text.push('\n');
    }
    text
}

const SCHEMA: &str = "CREATE TABLE people (id INT PRIMARY KEY, name TEXT, grp INT);
    CREATE INDEX people_grp ON people (grp);
    CREATE UNIQUE INDEX people_name ON people (name);";

async fn count(session: &rowdex::Session) -> Result<String, rowdex::Error> {
    Ok(rows(session, "SELECT count(*) FROM people").await?[0][0].clone())
}

/// Runs `COPY people FROM path WITH (HEADER true)`.
async fn load(
    session: &rowdex::Session,
    path: &std::path::Path,
) -> Result<Vec<rowdex::Output>, rowdex::Error> {
    session
        .execute(&format!(
            "COPY people FROM '{}' WITH (HEADER true)",
            path.display()
        ))
        .await
}

async fn check_clean(session: &rowdex::Session) -> TestResult {
    for row in rows(session, "CHECK TABLE people").await? {
        assert_eq!(row.last().map(String::as_str), Some("ok"), "{row:?}");
    }
    Ok(())
}

#[tokio::test]
async fn copy_loads_in_batches_and_maintains_indexes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("people.csv");
    let n = COPY_BATCH_ROWS * 2 + 123;
    std::fs::write(&path, people_csv(n, None))?;
    let db = rowdex::Database::open(dir.path().join("db")).await?;
    let s = db.session();
    s.execute(SCHEMA).await?;
    let out = load(&s, &path).await?;
    assert!(
        matches!(out.last(), Some(rowdex::Output::Affected { rows }) if *rows == n as u64),
        "{out:?}"
    );
    assert_eq!(count(&s).await?, n.to_string());
    let expected = (0..n).filter(|i| i % 7 == 3).count();
    assert_eq!(
        rows(&s, "SELECT count(*) FROM people WHERE grp = 3").await?,
        table(&[&[&expected.to_string()]])
    );
    assert_eq!(
        rows(&s, "SELECT id FROM people WHERE name = 'name20001'").await?,
        table(&[&["20001"]])
    );
    check_clean(&s).await
}

#[tokio::test]
async fn a_bad_row_stops_the_load_after_every_row_before_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("people.csv");
    // Row 12345 is on line 12347 (the header is line 1); it is in the second batch.
    let bad_row = COPY_BATCH_ROWS + 2345;
    std::fs::write(
        &path,
        people_csv(COPY_BATCH_ROWS * 2, Some((bad_row, "x,oops,1"))),
    )?;
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(SCHEMA).await?;
    let error = load(&s, &path).await.err().ok_or("the load should fail")?;
    let message = error.to_string();
    let line = bad_row + 2;
    assert!(message.contains(&format!("line {line}")), "{message}");
    assert!(
        message.contains(&format!("{bad_row} rows before it")),
        "{message}"
    );
    assert_eq!(count(&s).await?, bad_row.to_string());
    assert_eq!(
        rows(&s, "SELECT max(id) FROM people").await?,
        table(&[&[&(bad_row - 1).to_string()]])
    );
    check_clean(&s).await
}

#[tokio::test]
async fn a_batch_that_cannot_be_written_is_not_written_at_all() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("people.csv");
    // A UNIQUE clash with row 0, found only when the second batch is written.
    let clash = COPY_BATCH_ROWS + 10;
    std::fs::write(
        &path,
        people_csv(COPY_BATCH_ROWS * 3, Some((clash, "999999,name0,1"))),
    )?;
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(SCHEMA).await?;
    let error = load(&s, &path).await.err().ok_or("the load should fail")?;
    let message = error.to_string();
    let (first, last) = (COPY_BATCH_ROWS + 2, 2 * COPY_BATCH_ROWS + 1);
    assert!(
        message.contains(&format!("lines {first}..={last}")),
        "{message}"
    );
    assert!(message.contains("name0"), "{message}");
    assert_eq!(count(&s).await?, COPY_BATCH_ROWS.to_string());
    check_clean(&s).await
}

#[tokio::test]
async fn options_columns_and_export_round_trip() -> TestResult {
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "7|'a|b'|\\N\n8|plain|2.5\n")?;
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute("CREATE TABLE m (k INT PRIMARY KEY, label TEXT, v DOUBLE, note TEXT)")
        .await?;
    s.execute(&format!(
        "COPY m (k, label, v) FROM '{}' WITH (DELIMITER '|', QUOTE '''', NULL '\\N')",
        input.display()
    ))
    .await?;
    assert_eq!(
        rows(&s, "SELECT * FROM m ORDER BY k").await?,
        table(&[
            &["7", "a|b", "NULL", "NULL"],
            &["8", "plain", "2.5", "NULL"]
        ])
    );
    let output = dir.path().join("out.csv");
    s.execute(&format!(
        "COPY (SELECT k, label, v FROM m ORDER BY k DESC) TO '{}' WITH (HEADER true)",
        output.display()
    ))
    .await?;
    assert_eq!(
        std::fs::read_to_string(&output)?,
        "k,label,v\n8,plain,2.5\n7,a|b,\n"
    );
    // The export loads back into a table without a primary key.
    s.execute("CREATE TABLE copy_back (k INT, label TEXT, v DOUBLE)")
        .await?;
    s.execute(&format!(
        "COPY copy_back FROM '{}' WITH (HEADER true)",
        output.display()
    ))
    .await?;
    assert_eq!(
        rows(&s, "SELECT * FROM copy_back ORDER BY k").await?,
        table(&[&["7", "a|b", "NULL"], &["8", "plain", "2.5"]])
    );
    // A missing file, a wrong column count and an unknown table are clear errors.
    let missing = s.execute("COPY m FROM '/nonexistent/file.csv'").await;
    assert!(
        missing
            .as_ref()
            .is_err_and(|e| e.to_string().contains("cannot read")),
        "{missing:?}"
    );
    let unknown = s.execute("COPY nope FROM '/tmp/x.csv'").await;
    assert!(
        unknown
            .as_ref()
            .is_err_and(|e| e.to_string().contains("table nope does not exist")),
        "{unknown:?}"
    );
    let short = dir.path().join("short.csv");
    std::fs::write(&short, "9,x\n")?;
    let wrong = s
        .execute(&format!("COPY m FROM '{}'", short.display()))
        .await;
    assert!(
        wrong
            .as_ref()
            .is_err_and(|e| e.to_string().contains("line 1")
                && e.to_string().contains("4 target columns but 2")),
        "{wrong:?}"
    );
    Ok(())
}
