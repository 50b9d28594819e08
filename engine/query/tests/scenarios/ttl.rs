//! Tables with a TTL, on a clock the test moves: expired rows are invisible on every access
//! path and to every write, index entries expire with their rows, a write refreshes a row, and
//! PURGE gives the space back with the indexes still in step.

use std::sync::Arc;
use std::time::Duration;

use rowdex::{Database, Error, Executor, ManualClock, Session};

use crate::{TestResult, affected, rows, table};

/// 2024-01-01 00:00:00 UTC.
const START: i64 = 1_704_067_200_000_000;

const SCHEMA: &str = "
    CREATE TABLE ev (id INT, grp TEXT, v INT, note TEXT, PRIMARY KEY (id)) WITH (TTL = 60);
    CREATE INDEX ev_grp ON ev (grp);
    CREATE INDEX ev_note ON ev (note) INCLUDE (v);
    CREATE UNIQUE INDEX ev_v ON ev (v)";

async fn database() -> Result<(Database, Arc<ManualClock>), Error> {
    let db = Database::open_memory().await?;
    let clock = Arc::new(ManualClock::new(START));
    db.set_clock(clock.clone());
    db.session().execute(SCHEMA).await?;
    Ok((db, clock))
}

/// The same question on every access path, through both executors.
async fn visible_ids(session: &mut Session) -> Result<Vec<Vec<Vec<String>>>, Error> {
    let queries = [
        "SELECT id FROM ev ORDER BY id",
        "SELECT id FROM ev WHERE id = 1",
        "SELECT id FROM ev WHERE id IN (1, 2, 3) ORDER BY id",
        "SELECT id FROM ev WHERE id BETWEEN 1 AND 3 ORDER BY id",
        "SELECT id FROM ev WHERE grp = 'g' ORDER BY id",
        "SELECT id, note, v FROM ev WHERE note = 'n' ORDER BY id",
        "SELECT id FROM ev WHERE grp = 'g' AND note = 'n' ORDER BY id",
        "SELECT id FROM ev WHERE v = 10",
        "SELECT count(*) FROM ev",
    ];
    let mut out = Vec::new();
    for executor in [Executor::Auto, Executor::DataFusion] {
        session.set_executor(executor);
        for sql in queries {
            out.push(rows(session, sql).await?);
        }
    }
    session.set_executor(Executor::Auto);
    Ok(out)
}

fn repeated(answers: &[Vec<Vec<String>>]) -> Vec<Vec<Vec<String>>> {
    [answers, answers].concat()
}

#[tokio::test]
async fn expired_rows_vanish_from_every_path_and_their_entries_with_them() -> TestResult {
    let (db, clock) = database().await?;
    let mut s = db.session();
    s.execute("INSERT INTO ev VALUES (1, 'g', 10, 'n'), (2, 'g', 20, 'n')")
        .await?;
    clock.advance(Duration::from_secs(30));
    s.execute("INSERT INTO ev VALUES (3, 'g', 30, 'n')").await?;
    let all = visible_ids(&mut s).await?;
    assert_eq!(
        all,
        repeated(&[
            table(&[&["1"], &["2"], &["3"]]),
            table(&[&["1"]]),
            table(&[&["1"], &["2"], &["3"]]),
            table(&[&["1"], &["2"], &["3"]]),
            table(&[&["1"], &["2"], &["3"]]),
            table(&[&["1", "n", "10"], &["2", "n", "20"], &["3", "n", "30"]]),
            table(&[&["1"], &["2"], &["3"]]),
            table(&[&["1"]]),
            table(&[&["3"]]),
        ])
    );
    // 60 s after the first two rows were written: they are gone, row 3 is not.
    clock.advance(Duration::from_secs(30));
    let later = visible_ids(&mut s).await?;
    assert_eq!(
        later,
        repeated(&[
            table(&[&["3"]]),
            vec![],
            table(&[&["3"]]),
            table(&[&["3"]]),
            table(&[&["3"]]),
            table(&[&["3", "n", "30"]]),
            table(&[&["3"]]),
            vec![],
            table(&[&["1"]]),
        ])
    );
    // Cursor paging reads the same live rows.
    let page = s.query_page("SELECT id FROM ev", 10, None).await?;
    assert_eq!(crate::cells(&page.batches), table(&[&["3"]]));
    Ok(())
}

#[tokio::test]
async fn a_write_refreshes_a_row_and_its_entries() -> TestResult {
    let (db, clock) = database().await?;
    let mut s = db.session();
    s.execute("INSERT INTO ev VALUES (1, 'g', 10, 'n'), (2, 'g', 20, 'n')")
        .await?;
    clock.advance(Duration::from_secs(50));
    // No indexed value changes, yet the entries must live as long as the row.
    s.execute("UPDATE ev SET note = 'n' WHERE id = 1").await?;
    clock.advance(Duration::from_secs(20));
    let answers = visible_ids(&mut s).await?;
    assert_eq!(
        answers,
        repeated(&[
            table(&[&["1"]]),
            table(&[&["1"]]),
            table(&[&["1"]]),
            table(&[&["1"]]),
            table(&[&["1"]]),
            table(&[&["1", "n", "10"]]),
            table(&[&["1"]]),
            table(&[&["1"]]),
            table(&[&["1"]]),
        ])
    );
    let checked = rows(&s, "CHECK TABLE ev").await?;
    assert!(
        checked
            .iter()
            .all(|r| r.last().map(String::as_str) == Some("ok"))
    );
    Ok(())
}

#[tokio::test]
async fn writes_see_an_expired_row_as_gone() -> TestResult {
    let (db, clock) = database().await?;
    let s = db.session();
    s.execute("INSERT INTO ev VALUES (1, 'g', 10, 'n'), (2, 'h', 20, 'm')")
        .await?;
    clock.advance(Duration::from_secs(61));
    // UPDATE and DELETE find nothing to change.
    assert_eq!(affected(&s, "UPDATE ev SET v = 99 WHERE id = 1").await?, 0);
    assert_eq!(affected(&s, "DELETE FROM ev WHERE grp = 'h'").await?, 0);
    // The key and the unique value of an expired row are free again, and none of its old
    // entries survives (its grp 'g' and note 'n').
    s.execute("INSERT INTO ev VALUES (1, 'x', 10, 'y')").await?;
    s.execute("INSERT INTO ev VALUES (3, 'x', 20, 'y')").await?;
    assert_eq!(
        rows(&s, "SELECT id, grp, v, note FROM ev ORDER BY id").await?,
        table(&[&["1", "x", "10", "y"], &["3", "x", "20", "y"]])
    );
    assert_eq!(
        rows(&s, "SELECT id FROM ev WHERE grp = 'g'").await?,
        table(&[])
    );
    // An UPDATE may move a row onto an expired row's key.
    clock.advance(Duration::from_secs(30));
    s.execute("INSERT INTO ev VALUES (5, 'old', 50, 'o')")
        .await?;
    clock.advance(Duration::from_secs(61));
    s.execute("INSERT INTO ev VALUES (4, 'new', 40, 'o')")
        .await?;
    assert_eq!(affected(&s, "UPDATE ev SET id = 5 WHERE id = 4").await?, 1);
    // OR IGNORE and OR REPLACE do not see the expired holder of a unique value either.
    clock.advance(Duration::from_secs(61));
    s.execute("INSERT OR IGNORE INTO ev VALUES (7, 'g', 40, 'n')")
        .await?;
    s.execute("INSERT OR REPLACE INTO ev VALUES (8, 'g', 40, 'n')")
        .await?;
    assert_eq!(
        rows(&s, "SELECT id, v FROM ev ORDER BY id").await?,
        table(&[&["8", "40"]])
    );
    let checked = rows(&s, "CHECK TABLE ev").await?;
    assert!(
        checked
            .iter()
            .all(|r| r.last().map(String::as_str) == Some("ok")),
        "{checked:?}"
    );
    Ok(())
}

#[tokio::test]
async fn purge_removes_expired_rows_and_keeps_indexes_in_step() -> TestResult {
    let (db, clock) = database().await?;
    let s = db.session();
    let values: Vec<String> = (0..2500)
        .map(|i| format!("({i}, 'g{}', {i}, 'n')", i % 7))
        .collect();
    s.execute(&format!("INSERT INTO ev VALUES {}", values.join(", ")))
        .await?;
    clock.advance(Duration::from_secs(40));
    s.execute("UPDATE ev SET note = 'kept' WHERE id < 100")
        .await?;
    clock.advance(Duration::from_secs(30));
    // Nothing is removed by reading; PURGE removes what expired, batch by batch.
    assert_eq!(affected(&s, "PURGE ev").await?, 2400);
    assert_eq!(affected(&s, "PURGE TABLE ev").await?, 0);
    let checked = rows(&s, "CHECK TABLE ev").await?;
    for row in &checked {
        // index_name, rows, entries, missing, dangling, repaired, status
        assert_eq!(row[1..], ["100", "100", "0", "0", "0", "ok"], "{checked:?}");
    }
    assert_eq!(
        rows(&s, "SELECT count(*) FROM ev WHERE note = 'kept'").await?,
        table(&[&["100"]])
    );
    s.execute("CREATE TABLE plain (k INT PRIMARY KEY)").await?;
    let error = s.execute("PURGE plain").await.err();
    assert!(matches!(error, Some(Error::NoTtl { .. })), "{error:?}");
    Ok(())
}

#[tokio::test]
async fn the_ttl_survives_a_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    let clock = Arc::new(ManualClock::new(START));
    {
        let db = Database::open(dir.path()).await?;
        db.set_clock(clock.clone());
        let s = db.session();
        s.execute(SCHEMA).await?;
        s.execute("INSERT INTO ev VALUES (1, 'g', 10, 'n')").await?;
        db.flush().await?;
    }
    let db = Database::open(dir.path()).await?;
    db.set_clock(clock.clone());
    let s = db.session();
    assert_eq!(rows(&s, "SELECT id FROM ev").await?, table(&[&["1"]]));
    clock.advance(Duration::from_secs(60));
    assert_eq!(rows(&s, "SELECT id FROM ev").await?, table(&[]));
    Ok(())
}

#[tokio::test]
async fn compaction_drops_expired_rows_with_their_entries_and_versions() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    let clock = Arc::new(ManualClock::new(START));
    db.set_clock(clock.clone());
    let s = db.session();
    s.execute(SCHEMA).await?;
    s.execute(
        "CREATE TABLE hist (id INT PRIMARY KEY, x.a TEXT, v INT) WITH (TTL = 60, VERSIONS = 3)",
    )
    .await?;
    let insert = |first: i32| {
        let ev: Vec<String> = (first..first + 3000)
            .map(|i| format!("({i}, 'g{}', {i}, 'n{i}')", i % 7))
            .collect();
        let hist: Vec<String> = (first..first + 3000)
            .map(|i| format!("({i}, 'a{i}', {i})"))
            .collect();
        format!(
            "INSERT INTO ev VALUES {}; INSERT INTO hist VALUES {}",
            ev.join(", "),
            hist.join(", ")
        )
    };
    s.execute(&insert(0)).await?;
    // Older versions of the first rows, written now, expire with them.
    s.execute("UPDATE hist SET v = v + 1 WHERE id < 3000")
        .await?;
    clock.advance(Duration::from_secs(50));
    s.execute(&insert(10_000)).await?;
    // Compacted once before anything expired (nothing to drop: the sizes compare tables with
    // tables, not with a memtable).
    s.execute("VACUUM").await?;
    clock.advance(Duration::from_secs(20));
    let def = |name: &str| {
        db.table_defs()
            .into_iter()
            .find(|def| def.name == name)
            .ok_or("no such table")
    };
    let before = db.table_sizes(&*def("ev")?)?.ok_or("no sizes")?;
    // VACUUM compacts the store: its filter drops what expired, entries of every kind.
    s.execute("VACUUM").await?;
    let after = db.table_sizes(&*def("ev")?)?.ok_or("no sizes")?;
    eprintln!("ev before {before:?}, after {after:?}");
    assert!(after.rows * 10 < before.rows * 7, "{before:?} -> {after:?}");
    for ((name, was), (_, is)) in before.indexes.iter().zip(&after.indexes) {
        assert!(is * 10 < was * 7, "index {name}: {was} -> {is}");
    }
    // PURGE finds nothing left to remove, and every index is in step with its rows.
    assert_eq!(affected(&s, "PURGE ev").await?, 0);
    assert_eq!(affected(&s, "PURGE hist").await?, 0);
    for table_name in ["ev", "hist"] {
        for row in rows(&s, &format!("CHECK TABLE {table_name}")).await? {
            assert_eq!(row[1..], ["3000", "3000", "0", "0", "0", "ok"], "{row:?}");
        }
    }
    let hist = db.table_sizes(&*def("hist")?)?.ok_or("no sizes")?;
    assert_eq!(hist.history, 0, "expired older versions stay: {hist:?}");
    assert_eq!(
        rows(&s, "SELECT count(*), min(id) FROM ev").await?,
        table(&[&["3000", "10000"]])
    );
    Ok(())
}

/// Bytes of the table `name` and its indexes, as the size functions see them.
fn table_bytes(db: &Database, name: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let def = db
        .table_defs()
        .into_iter()
        .find(|def| def.name == name)
        .ok_or("no such table")?;
    let sizes = db.table_sizes(&def)?.ok_or("no sizes")?;
    Ok(sizes.table() + sizes.indexes.iter().map(|(_, bytes)| bytes).sum::<u64>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_tables_disk_use_stays_flat_under_a_steady_insert_rate() -> TestResult {
    // Real time: the sweeps run on the store's own schedule, every half TTL (1 s here).
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE ticks (id BIGINT PRIMARY KEY, sensor INT, reading TEXT) WITH (TTL = 2);
         CREATE INDEX ticks_sensor ON ticks (sensor);
         CREATE TABLE kept (id BIGINT PRIMARY KEY, sensor INT, reading TEXT);
         CREATE INDEX kept_sensor ON kept (sensor);",
    )
    .await?;
    let mut samples = Vec::new();
    let started = std::time::Instant::now();
    let mut next_id = 0i64;
    // 10 s of inserts, five TTLs: 500 rows every 100 ms into each table.
    while started.elapsed() < Duration::from_secs(10) {
        let rows: Vec<String> = (next_id..next_id + 500)
            .map(|id| {
                format!(
                    "({id}, {}, 'reading number {id} of a steady stream')",
                    id % 97
                )
            })
            .collect();
        next_id += 500;
        for table in ["ticks", "kept"] {
            s.execute(&format!("INSERT INTO {table} VALUES {}", rows.join(", ")))
                .await?;
        }
        samples.push((
            started.elapsed(),
            table_bytes(&db, "ticks")?,
            table_bytes(&db, "kept")?,
        ));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let in_window = |from: u64, to: u64| {
        samples
            .iter()
            .filter(|(at, _, _)| *at >= Duration::from_secs(from) && *at < Duration::from_secs(to))
            .map(|(_, ticks, _)| *ticks)
            .max()
            .unwrap_or(0)
    };
    let (early, late) = (in_window(3, 5), in_window(8, 10));
    let kept = samples.last().map_or(0, |(_, _, kept)| *kept);
    eprintln!(
        "ticks: largest {early} bytes at 3-5 s, {late} at 8-10 s; the table without a TTL: {kept}"
    );
    // Flat once the first rows expire: the last seconds hold no more than the early ones
    // (with room for a sweep's timing), while the table without a TTL kept growing.
    assert!(
        late * 2 < early * 3,
        "ticks grew from {early} to {late} bytes"
    );
    assert!(late * 2 < kept, "ticks {late} bytes, kept {kept}");
    // Every live row is still there, on every path.
    let live: i64 = rows(&s, "SELECT count(*) FROM ticks").await?[0][0].parse()?;
    assert!(live > 0);
    let by_sensor: i64 =
        rows(&s, "SELECT count(*) FROM ticks WHERE sensor = 5").await?[0][0].parse()?;
    assert!(by_sensor * 97 <= live + 97);
    Ok(())
}
