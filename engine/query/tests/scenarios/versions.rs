//! Tables with `VERSIONS = n`: every overwrite and delete keeps the old row, `as_of(t, time)`
//! gives back the table exactly as it stood at any earlier time, `versions(t)` lists the kept
//! versions, and the history is trimmed to n versions per row.

use std::sync::Arc;
use std::time::Duration;

use rowdex::{Clock, Database, Error, ManualClock, Session};

use crate::{TestResult, affected, rows, table};

/// 2024-01-01 00:00:00 UTC.
const START: i64 = 1_704_067_200_000_000;

async fn database(ddl: &str) -> Result<(Database, Arc<ManualClock>), Error> {
    let db = Database::open_memory().await?;
    let clock = Arc::new(ManualClock::new(START));
    db.set_clock(clock.clone());
    db.session().execute(ddl).await?;
    Ok((db, clock))
}

/// A deterministic mix of writes over a few keys: inserts, updates of values and of keys,
/// deletes, upserts and re-inserts of deleted keys.
fn statements(count: usize) -> Vec<String> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    (0..count)
        .map(|i| {
            let (g, k, v) = (next(3), next(6), next(1000));
            match next(6) {
                0 | 1 => format!("INSERT OR REPLACE INTO h VALUES ('g{g}', {k}, {v}, 'w{i}')"),
                2 => format!("UPDATE h SET v = {v}, note = 'u{i}' WHERE g = 'g{g}' AND k <= {k}"),
                3 => format!("DELETE FROM h WHERE g = 'g{g}' AND k = {k}"),
                4 => format!("UPDATE h SET k = k + 10 WHERE g = 'g{g}' AND k = {k}"),
                _ => format!("UPSERT INTO h (g, k, note) VALUES ('g{g}', {k}, 'up{i}')"),
            }
        })
        .collect()
}

async fn state(session: &Session, from: &str) -> Result<Vec<Vec<String>>, Error> {
    rows(
        session,
        &format!("SELECT g, k, v, note FROM {from} ORDER BY g, k"),
    )
    .await
}

async fn as_of_equals_every_recorded_state(ddl: &str) -> TestResult {
    let (db, clock) = database(ddl).await?;
    let s = db.session();
    s.execute("CREATE INDEX h_v ON h (v)").await?;
    let mut recorded = Vec::new();
    for statement in statements(150) {
        clock.advance(Duration::from_secs(1));
        match s.execute(&statement).await {
            // Moving a row onto a taken key fails, and changes nothing: still a state.
            Ok(_) | Err(Error::DuplicateKey { .. }) => {}
            Err(other) => return Err(other.into()),
        }
        recorded.push((clock.now_micros(), state(&s, "h").await?));
    }
    // Conditions on the key narrow the read to key ranges; others must be judged on the
    // version chosen, not on the current row.
    type Keep = fn(&[String]) -> bool;
    let conditions: [(&str, Keep); 5] = [
        ("TRUE", |_| true),
        ("g = 'g1'", |r| r[0] == "g1"),
        ("g = 'g1' AND k BETWEEN 2 AND 13", |r| {
            r[0] == "g1" && r[1].parse::<i64>().is_ok_and(|k| (2..=13).contains(&k))
        }),
        ("g IN ('g0', 'g2') AND k = 3", |r| {
            (r[0] == "g0" || r[0] == "g2") && r[1] == "3"
        }),
        ("v > 500", |r| r[2].parse::<i64>().is_ok_and(|v| v > 500)),
    ];
    for (at, expected) in &recorded {
        for (condition, keep) in &conditions {
            let got = rows(
                &s,
                &format!(
                    "SELECT g, k, v, note FROM as_of(h, {at}) WHERE {condition} ORDER BY g, k"
                ),
            )
            .await?;
            let wanted: Vec<Vec<String>> = expected.iter().filter(|r| keep(r)).cloned().collect();
            assert_eq!(got, wanted, "as of {at} where {condition}");
        }
    }

    // Before the first write, there was nothing.
    assert_eq!(state(&s, &format!("as_of(h, {START})")).await?, table(&[]));
    Ok(())
}

#[tokio::test]
async fn as_of_gives_back_every_earlier_state() -> TestResult {
    as_of_equals_every_recorded_state(
        "CREATE TABLE h (g TEXT, k INT, v INT, note TEXT, PRIMARY KEY (g, k)) \
         WITH (VERSIONS = 1000)",
    )
    .await
}

#[tokio::test]
async fn as_of_on_a_salted_table_with_a_desc_key() -> TestResult {
    as_of_equals_every_recorded_state(
        "CREATE TABLE h (g TEXT, k INT, v INT, note TEXT, PRIMARY KEY (g, k DESC)) \
         WITH (VERSIONS = 1000, SALT_BUCKETS = 4)",
    )
    .await
}

#[tokio::test]
async fn as_of_on_a_table_with_column_families() -> TestResult {
    // A version holds every family's cells; the current row is put together from its entries.
    as_of_equals_every_recorded_state(
        "CREATE TABLE h (g TEXT, k INT, nums.v INT, note TEXT, PRIMARY KEY (g, k)) \
         WITH (VERSIONS = 1000)",
    )
    .await
}

#[tokio::test]
async fn history_is_trimmed_to_the_kept_versions() -> TestResult {
    let (db, clock) = database(
        "CREATE TABLE h (g TEXT, k INT, v INT, note TEXT, PRIMARY KEY (g, k)) WITH (VERSIONS = 3)",
    )
    .await?;
    let s = db.session();
    let mut times = Vec::new();
    for v in 0..10 {
        clock.advance(Duration::from_secs(1));
        s.execute(&format!(
            "INSERT OR REPLACE INTO h VALUES ('a', 1, {v}, 'n')"
        ))
        .await?;
        times.push(clock.now_micros());
    }
    assert_eq!(
        rows(&s, "SELECT v FROM versions(h)").await?,
        table(&[&["9"], &["8"], &["7"]])
    );
    assert_eq!(
        rows(&s, "SELECT v FROM versions(h, 2)").await?,
        table(&[&["9"], &["8"]])
    );
    // The kept versions answer AS OF exactly; before them, the row is no longer known.
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {})", times[7])).await?,
        table(&[&["7"]])
    );
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {})", times[6])).await?,
        table(&[])
    );
    // A delete is a version too: as of before it the row is there, after it it is not.
    clock.advance(Duration::from_secs(1));
    s.execute("DELETE FROM h WHERE k = 1").await?;
    let deleted = clock.now_micros();
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {})", deleted - 1)).await?,
        table(&[&["9"]])
    );
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {deleted})")).await?,
        table(&[])
    );
    Ok(())
}

#[tokio::test]
async fn rolled_back_writes_leave_no_version() -> TestResult {
    let (db, clock) = database(
        "CREATE TABLE h (g TEXT, k INT, v INT, note TEXT, PRIMARY KEY (g, k)) WITH (VERSIONS = 5)",
    )
    .await?;
    let s = db.session();
    s.execute("INSERT INTO h VALUES ('a', 1, 1, 'n')").await?;
    clock.advance(Duration::from_secs(1));
    s.execute("BEGIN; UPDATE h SET v = 2; DELETE FROM h; ROLLBACK")
        .await?;
    assert_eq!(
        rows(&s, "SELECT v FROM versions(h)").await?,
        table(&[&["1"]])
    );
    Ok(())
}

#[tokio::test]
async fn expired_versions_are_gone_from_history_reads() -> TestResult {
    let (db, clock) = database(
        "CREATE TABLE h (g TEXT, k INT, v INT, note TEXT, PRIMARY KEY (g, k)) \
         WITH (VERSIONS = 10, TTL = 100)",
    )
    .await?;
    let s = db.session();
    s.execute("INSERT INTO h VALUES ('a', 1, 1, 'n')").await?;
    let first = clock.now_micros();
    clock.advance(Duration::from_secs(60));
    s.execute("UPDATE h SET v = 2").await?;
    clock.advance(Duration::from_secs(60));
    // The first version is 120 s old: expired, in AS OF reads too; the second is not.
    assert_eq!(
        rows(&s, "SELECT v FROM versions(h)").await?,
        table(&[&["2"]])
    );
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {first})")).await?,
        table(&[])
    );
    // PURGE removes the expired version (the live row stays), and reads do not change.
    assert_eq!(affected(&s, "PURGE h").await?, 1);
    assert_eq!(affected(&s, "PURGE h").await?, 0);
    assert_eq!(
        rows(&s, "SELECT v FROM versions(h)").await?,
        table(&[&["2"]])
    );
    Ok(())
}

#[tokio::test]
async fn history_reads_explain_their_mistakes() -> TestResult {
    let (db, _clock) = database("CREATE TABLE plain (k INT PRIMARY KEY)").await?;
    let s = db.session();
    let error = |sql: &'static str| {
        let s = &s;
        async move { s.execute(sql).await.err().map(|e| e.to_string()) }
    };
    let message = error("SELECT * FROM as_of(plain, 0)")
        .await
        .unwrap_or_default();
    assert!(message.contains("keeps no older versions"), "{message}");
    let message = error("SELECT * FROM versions(nothing)")
        .await
        .unwrap_or_default();
    assert!(message.contains("nothing does not exist"), "{message}");
    s.execute("CREATE TABLE h (k INT PRIMARY KEY) WITH (VERSIONS = 2)")
        .await?;
    let message = error("SELECT * FROM as_of(h, 'yesterday')")
        .await
        .unwrap_or_default();
    assert!(message.contains("must be a TIMESTAMP literal"), "{message}");
    let message = error("SELECT * FROM as_of(h)").await.unwrap_or_default();
    assert!(
        message.contains("as_of takes a table and a time"),
        "{message}"
    );
    let message = error("SELECT * FROM versions(h, 0)")
        .await
        .unwrap_or_default();
    assert!(message.contains("positive integer"), "{message}");
    let message = error("CREATE TABLE bad (k INT PRIMARY KEY) WITH (VERSIONS = 0)")
        .await
        .unwrap_or_default();
    assert!(
        message.contains("VERSIONS is a number of versions"),
        "{message}"
    );
    Ok(())
}

#[tokio::test]
async fn history_survives_a_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    let clock = Arc::new(ManualClock::new(START));
    let before;
    {
        let db = Database::open(dir.path()).await?;
        db.set_clock(clock.clone());
        let s = db.session();
        s.execute("CREATE TABLE h (k INT PRIMARY KEY, v INT) WITH (VERSIONS = 4)")
            .await?;
        s.execute("INSERT INTO h VALUES (1, 10)").await?;
        before = clock.now_micros();
        clock.advance(Duration::from_secs(1));
        s.execute("UPDATE h SET v = 11").await?;
        db.flush().await?;
    }
    let db = Database::open(dir.path()).await?;
    db.set_clock(clock.clone());
    let s = db.session();
    assert_eq!(
        rows(&s, &format!("SELECT v FROM as_of(h, {before})")).await?,
        table(&[&["10"]])
    );
    assert_eq!(rows(&s, "SELECT v FROM h").await?, table(&[&["11"]]));
    Ok(())
}
