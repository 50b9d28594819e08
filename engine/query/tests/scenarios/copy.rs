//! COPY FROM and COPY TO: loads maintain indexes, a bad row or batch stops the load with its line
//! and exactly the rows before it loaded, options are honoured, and an export reads back. A
//! batch that is not all new rows (a key stored or repeated, an expired row in the way) is
//! written row by row with INSERT's answers, and tables with families, hidden row ids or a
//! TTL load like any other.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use rowdex::{COPY_BATCH_ROWS, ManualClock};

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
    check_table(session, "people").await
}

async fn check_table(session: &rowdex::Session, name: &str) -> TestResult {
    for row in rows(session, &format!("CHECK TABLE {name}")).await? {
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
async fn a_bad_row_stops_the_load_after_the_batches_before_its_own() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("people.csv");
    // Row 52345 is on line 52347 (the header is line 1); it is in the second batch.
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
        message.contains(&format!("{COPY_BATCH_ROWS} rows were loaded")),
        "{message}"
    );
    // The first batch, whole; nothing of the second, though 2345 of its rows were good.
    assert_eq!(count(&s).await?, COPY_BATCH_ROWS.to_string());
    assert_eq!(
        rows(&s, "SELECT max(id) FROM people").await?,
        table(&[&[&(COPY_BATCH_ROWS - 1).to_string()]])
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

/// Runs COPY of `text` (CSV without a header) into `table`.
async fn copy_text(
    session: &rowdex::Session,
    dir: &std::path::Path,
    table: &str,
    text: &str,
) -> Result<Vec<rowdex::Output>, rowdex::Error> {
    let path = dir.join(format!("{table}.csv"));
    std::fs::write(&path, text).map_err(|source| rowdex::Error::File {
        action: "write",
        path: path.display().to_string(),
        source,
    })?;
    session
        .execute(&format!("COPY {table} FROM '{}'", path.display()))
        .await
}

/// CSV lines `id,name<id>,id % 7` for each id.
fn people_lines(ids: impl IntoIterator<Item = usize>) -> String {
    ids.into_iter()
        .map(|i| format!("{i},name{i},{}\n", i % 7))
        .collect()
}

#[tokio::test]
async fn keys_already_stored_or_repeated_in_a_batch_fail_it_as_insert_would() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(SCHEMA).await?;
    s.execute("INSERT INTO people VALUES (5, 'name5', 5)")
        .await?;
    // A key the table holds.
    let stored = copy_text(&s, dir.path(), "people", &people_lines(3..9)).await;
    let message = stored
        .err()
        .ok_or("a stored key must fail the batch")?
        .to_string();
    assert!(message.contains("duplicate primary key"), "{message}");
    assert!(message.contains("id = 5"), "{message}");
    assert!(message.contains("lines 1..=6"), "{message}");
    // A key twice in one batch.
    let repeated = people_lines([10, 11, 12, 11, 13]);
    let message = copy_text(&s, dir.path(), "people", &repeated)
        .await
        .err()
        .ok_or("a repeated key must fail the batch")?
        .to_string();
    assert!(message.contains("id = 11"), "{message}");
    // A row repeated whole differs from a UNIQUE clash between two new rows.
    let clash = "20,twin,1\n21,twin,2\n";
    let message = copy_text(&s, dir.path(), "people", clash)
        .await
        .err()
        .ok_or("a UNIQUE clash inside a batch must fail it")?
        .to_string();
    assert!(message.contains("people_name"), "{message}");
    assert_eq!(count(&s).await?, "1");
    check_clean(&s).await?;
    // New keys around the stored one load.
    copy_text(&s, dir.path(), "people", &people_lines((0..5).chain(6..9))).await?;
    assert_eq!(count(&s).await?, "9");
    check_clean(&s).await
}

#[tokio::test]
async fn families_hidden_row_ids_and_null_checks_load_across_batches() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = rowdex::Database::open(dir.path().join("db")).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE docs (id INT PRIMARY KEY, meta.title TEXT, meta.size INT, body TEXT);
         CREATE INDEX docs_size ON docs (size);
         CREATE TABLE log (at INT, msg TEXT NOT NULL);
         CREATE INDEX log_at ON log (at)",
    )
    .await?;
    let n = COPY_BATCH_ROWS + 10;
    let mut docs = String::new();
    let mut log = String::new();
    for i in 0..n {
        let _ = writeln!(docs, "{i},t{i},{},b{i}", i % 100);
        let _ = writeln!(log, "{},m{i}", i % 1000);
    }
    copy_text(&s, dir.path(), "docs", &docs).await?;
    copy_text(&s, dir.path(), "log", &log).await?;
    // Twice: rows without a primary key are never duplicates.
    copy_text(&s, dir.path(), "log", &log).await?;
    let per_size = (0..n).filter(|i| i % 100 == 42).count();
    assert_eq!(
        rows(
            &s,
            "SELECT count(*), min(title), max(body) FROM docs WHERE size = 42"
        )
        .await?,
        table(&[&[&per_size.to_string(), "t10042", "b9942"]])
    );
    assert_eq!(
        rows(&s, "SELECT count(*), count(DISTINCT msg) FROM log").await?,
        table(&[&[&(2 * n).to_string(), &n.to_string()]])
    );
    let at_7 = 2 * (0..n).filter(|i| i % 1000 == 7).count();
    assert_eq!(
        rows(&s, "SELECT count(*) FROM log WHERE at = 7").await?,
        table(&[&[&at_7.to_string()]])
    );
    check_table(&s, "docs").await?;
    check_table(&s, "log").await?;
    // A column the file leaves out must take its NULL: NOT NULL fails the batch, naming it.
    let path = dir.path().join("at_only.csv");
    std::fs::write(&path, "1\n2\n")?;
    let message = s
        .execute(&format!("COPY log (at) FROM '{}'", path.display()))
        .await
        .err()
        .ok_or("a NOT NULL column left out must fail")?
        .to_string();
    assert!(
        message.contains("msg") && message.contains("NOT NULL"),
        "{message}"
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM log").await?,
        table(&[&[&(2 * n).to_string()]])
    );
    Ok(())
}

#[tokio::test]
async fn an_expired_row_gives_its_key_up_and_loaded_rows_carry_the_load_time() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = rowdex::Database::open_memory().await?;
    let clock = Arc::new(ManualClock::new(1_704_067_200_000_000));
    db.set_clock(clock.clone());
    let s = db.session();
    s.execute(
        "CREATE TABLE ev (id INT PRIMARY KEY, grp TEXT, v INT) WITH (TTL = 60);
         CREATE INDEX ev_grp ON ev (grp);
         CREATE UNIQUE INDEX ev_v ON ev (v)",
    )
    .await?;
    s.execute("INSERT INTO ev VALUES (1, 'old', 10), (9, 'old', 20)")
        .await?;
    clock.advance(Duration::from_secs(120));
    // Key 1 and the UNIQUE value 20 are held by expired rows only.
    copy_text(&s, dir.path(), "ev", "0,new,0\n1,new,1\n2,new,20\n").await?;
    assert_eq!(
        rows(&s, "SELECT id, v FROM ev WHERE grp = 'new' ORDER BY id").await?,
        table(&[&["0", "0"], &["1", "1"], &["2", "20"]])
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM ev WHERE grp = 'old'").await?,
        table(&[&["0"]])
    );
    check_table(&s, "ev").await?;
    clock.advance(Duration::from_secs(30));
    assert_eq!(rows(&s, "SELECT count(*) FROM ev").await?, table(&[&["3"]]));
    clock.advance(Duration::from_secs(60));
    assert_eq!(rows(&s, "SELECT count(*) FROM ev").await?, table(&[&["0"]]));
    Ok(())
}

#[tokio::test]
async fn loaded_rows_take_defaults_and_keep_check_constraints() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE stock (id INT PRIMARY KEY, qty INT NOT NULL DEFAULT 1 CHECK (qty >= 0),
                             place TEXT DEFAULT 'shelf', seen DATE DEFAULT CURRENT_DATE)",
    )
    .await?;
    // Columns a COPY leaves out take their defaults, across more than one batch.
    let lines: String = (0..COPY_BATCH_ROWS + 10)
        .map(|i| format!("{i}\n"))
        .collect();
    let path = dir.path().join("ids.csv");
    std::fs::write(&path, lines)?;
    s.execute(&format!("COPY stock (id) FROM '{}'", path.display()))
        .await?;
    assert_eq!(
        rows(
            &s,
            "SELECT count(*), min(qty), max(qty), min(place), count(seen) FROM stock"
        )
        .await?,
        table(&[&[
            &(COPY_BATCH_ROWS + 10).to_string(),
            "1",
            "1",
            "shelf",
            &(COPY_BATCH_ROWS + 10).to_string()
        ]])
    );
    // A row that breaks the CHECK fails its batch, named, and loads nothing of it.
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "900000,5\n900001,-1\n")?;
    let refused = s
        .execute(&format!("COPY stock (id, qty) FROM '{}'", bad.display()))
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("stock_qty_check")),
        "{refused:?}"
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM stock WHERE id >= 900000").await?,
        table(&[&["0"]])
    );
    check_table(&s, "stock").await
}
