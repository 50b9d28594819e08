//! Faults injected through the store seam (`rowdex_store::faulty::FaultyStore`), on both
//! stores: for every statement kind and every commit it makes, a commit that fails, one that
//! loses a race, one whose acknowledgement is lost, and a crash that drops the commits not yet
//! synced leave the store exactly as before the statement or exactly as after it (rows, every
//! index, the history keyspace, row counts and statistics), CHECK TABLE clean, before and
//! after the database is opened again. A lost acknowledgement is reported as such, never as a
//! failure, and the retry loop gives up after its bound.
//!
//! Reads fail too (`read_faults_*`): a SELECT through an index, a join, UPDATE ... RETURNING,
//! INSERT ... SELECT, CREATE INDEX's backfill, COPY TO and an INSERT whose trigger reads and
//! writes another table, each with its first, second, middle and last read failing (and its
//! last lookup and last range read), report the injected I/O error and leave the store as
//! before (or, for CREATE INDEX, whose backfill commits pages between its reads, as before or
//! after), CHECK TABLE clean, and so again after the database is opened again. A read that fails only after
//! a delay holds up its own statement, not another session's reads and writes beside it.
//!
//! "Exactly" is a comparison of every key and value in the store, with one normalisation: the
//! row-count deltas each write appends (keyed by the writing process) are summed per table
//! into one figure, since two processes record the same count under different keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rowdex::{Database, ManualClock, Session};
use rowdex_store::faulty::{Fault, FaultyStore, ReadKind};
use rowdex_store::{Direction, KeyRange, KvStore, MemoryStore};

use crate::{TestResult, rows};

/// Rows of `t` before each statement: enough for two backfill pages (512 rows each).
const ROWS: i64 = 600;

/// 2024-01-01T00:00:00Z in microseconds: every run writes at the same times.
const START: i64 = 1_704_067_200_000_000;

type Dump = BTreeMap<Vec<u8>, Vec<u8>>;

/// Where a run's store lives.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Memory,
    Fjall,
}

/// A database over a fresh faulty store, with the schema and rows every statement starts from.
struct Fixture {
    store: Arc<FaultyStore>,
    clock: Arc<ManualClock>,
    db: Database,
    /// Keeps a fjall store's directory alive.
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    async fn new(backend: Backend) -> Result<Fixture, Box<dyn std::error::Error>> {
        let (inner, dir): (Arc<dyn KvStore>, _) = match backend {
            Backend::Memory => (Arc::new(MemoryStore::new()), None),
            Backend::Fjall => {
                let dir = tempfile::tempdir()?;
                let store = rowdex_store::FjallStore::open(
                    dir.path(),
                    rowdex_store::Durability::default(),
                )?;
                (Arc::new(store), Some(dir))
            }
        };
        let store = Arc::new(FaultyStore::new(inner));
        let clock = Arc::new(ManualClock::new(START));
        let db = open(&store, &clock).await?;
        let s = db.session();
        s.execute(
            "CREATE TABLE t (k INT PRIMARY KEY, a INT, b TEXT, c INT) WITH (VERSIONS = 3);
             CREATE INDEX t_a ON t (a);
             CREATE UNIQUE INDEX t_b ON t (b) INCLUDE (c);
             CREATE TABLE s (k INT PRIMARY KEY, v TEXT) WITH (TTL = 1000);
             CREATE INDEX s_v ON s (v);",
        )
        .await?;
        let values: Vec<String> = (1..=ROWS)
            .map(|k| format!("({k}, {}, 'b{k}', {})", k % 40, k % 7))
            .collect();
        s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .await?;
        s.execute("INSERT INTO s VALUES (1, 'x'), (2, 'y'), (3, 'x'), (4, 'z')")
            .await?;
        clock.advance(Duration::from_secs(600));
        // History: older versions of a few rows; and s's rows 3 and 4 outlive 1 and 2.
        s.execute(
            "UPDATE t SET c = c + 10 WHERE k <= 20;
             UPDATE s SET v = 'w' WHERE k >= 3;",
        )
        .await?;
        clock.advance(Duration::from_secs(600));
        Ok(Fixture {
            store,
            clock,
            db,
            _dir: dir,
        })
    }

    /// Opens the database over the store again (as a restarted process would).
    async fn reopen(&mut self) -> Result<(), rowdex::Error> {
        self.db = open(&self.store, &self.clock).await?;
        Ok(())
    }
}

async fn open(
    store: &Arc<FaultyStore>,
    clock: &Arc<ManualClock>,
) -> Result<Database, rowdex::Error> {
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    db.set_clock(clock.clone());
    Ok(db)
}

/// Every key and value of the store, row-count deltas summed per table (see the module text),
/// without the catalog's counters (see below); then what the catalog says of both tables.
async fn state(fixture: &Fixture) -> Result<Dump, rowdex::Error> {
    let mut out = dump(&fixture.store).await?;
    let s = fixture.db.session();
    for (n, sql) in [
        "SHOW INDEXES FROM t",
        "SHOW INDEXES FROM s",
        "SELECT * FROM t WHERE k = 1",
    ]
    .into_iter()
    .enumerate()
    {
        let text = format!("{:?}", rows(&s, sql).await?);
        out.insert(vec![0xff, n as u8], text.into_bytes());
    }
    Ok(out)
}

/// Every key and value of the store, row-count deltas summed per table, without the table
/// definitions (0x00 'T', which carry their schema version), the schema versions (0x00 'V'), the
/// id counter (0x00 'N') and the catalog version (0x00 'C'): a DDL statement undone after a
/// fault leaves those counters
/// advanced (ids are never reused), as PostgreSQL's OIDs move; [`state`] compares what the
/// definitions say instead.
async fn dump(store: &FaultyStore) -> Result<Dump, rowdex::Error> {
    const ROW_COUNT: &[u8] = &[0x00, b'R'];
    const ROW_DELTA: &[u8] = &[0x00, b'D'];
    const COUNTERS: [&[u8]; 4] = [&[0x00, b'T'], &[0x00, b'V'], &[0x00, b'N'], &[0x00, b'C']];
    let mut out = Dump::new();
    let mut counts: BTreeMap<Vec<u8>, i128> = BTreeMap::new();
    let mut range = Some(KeyRange::all());
    while let Some(current) = range {
        let page = store
            .inner()
            .scan_page(&current, Direction::Forward, 4096)
            .await
            .map_err(rowdex::Error::from)?;
        for (key, value) in page.entries {
            if COUNTERS.iter().any(|prefix| key.starts_with(prefix)) {
                continue;
            }
            let counted = if key.starts_with(ROW_COUNT) {
                Some(u64::from_be_bytes(eight(&value)) as i128)
            } else if key.starts_with(ROW_DELTA) {
                Some(i64::from_be_bytes(eight(&value)) as i128)
            } else {
                None
            };
            match counted {
                // The table id follows the two prefix bytes.
                Some(n) => *counts.entry(key[2..6].to_vec()).or_default() += n,
                None => {
                    out.insert(key, value);
                }
            }
        }
        range = page.resume;
    }
    for (table, count) in counts {
        let mut key = ROW_COUNT.to_vec();
        key.extend(table);
        out.insert(key, count.to_be_bytes().to_vec());
    }
    Ok(out)
}

fn eight(bytes: &[u8]) -> [u8; 8] {
    bytes.try_into().unwrap_or([0xff; 8])
}

/// Every index of `t` and `s` checks clean.
async fn assert_check_clean(s: &Session, context: &str) -> TestResult {
    for table in ["t", "s"] {
        let checked = rows(s, &format!("CHECK TABLE {table}")).await?;
        // A row per index: t has two, s one (an empty answer checked nothing).
        assert!(
            !checked.is_empty(),
            "{context}: CHECK TABLE {table} answered nothing"
        );
        for row in checked {
            assert_eq!(
                row.last().map(String::as_str),
                Some("ok"),
                "{context}: CHECK TABLE {table}: {row:?}"
            );
        }
    }
    Ok(())
}

/// Which of the two states `now` is, or a failure naming the first key that differs.
fn before_or_after(now: &Dump, before: &Dump, after: &Dump, context: &str) -> TestResult {
    if now == before || now == after {
        return Ok(());
    }
    let differs = |other: &Dump| {
        now.iter()
            .zip(other.iter())
            .find(|(a, b)| a != b)
            .map(|((k, _), _)| format!("{k:02x?}"))
            .unwrap_or_else(|| format!("{} keys against {}", now.len(), other.len()))
    };
    Err(format!(
        "{context}: the store is neither as before the statement (first difference at {}) nor as after it (at {})",
        differs(before),
        differs(after)
    )
    .into())
}

/// One statement (or script) under test; `{csv}` stands for a CSV file of new rows.
struct Case {
    name: &'static str,
    sql: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "INSERT",
        sql: "INSERT INTO t VALUES (1001, 5, 'new1', 0), (1002, 6, 'new2', 1)",
    },
    Case {
        name: "UPSERT",
        sql: "UPSERT INTO t VALUES (1, 11, 'b1', 9), (1003, 7, 'new3', 2)",
    },
    Case {
        name: "UPDATE of indexed non-key columns",
        sql: "UPDATE t SET a = a + 100, c = 0 WHERE k <= 30",
    },
    Case {
        name: "UPDATE of the key",
        sql: "UPDATE t SET k = k + 5000 WHERE k > 590",
    },
    Case {
        name: "DELETE",
        sql: "DELETE FROM t WHERE a = 3",
    },
    Case {
        name: "REPLACE",
        sql: "INSERT OR REPLACE INTO t VALUES (2, 22, 'b2', 2), (1004, 8, 'new4', 4)",
    },
    Case {
        name: "COPY batch",
        sql: "COPY t FROM '{csv}' WITH (FORMAT csv)",
    },
    Case {
        name: "CREATE INDEX (backfill pages)",
        sql: "CREATE INDEX t_c ON t (c)",
    },
    Case {
        name: "PURGE",
        sql: "PURGE s",
    },
    Case {
        name: "ALTER TABLE ADD COLUMN",
        sql: "ALTER TABLE t ADD COLUMN e INT DEFAULT 7",
    },
    Case {
        name: "transaction",
        sql: "BEGIN; INSERT INTO t VALUES (1005, 9, 'new5', 5); UPDATE t SET a = 0 WHERE k = 7; DELETE FROM t WHERE k = 8; COMMIT",
    },
];

fn case_sql(case: &Case, csv: &Path) -> String {
    case.sql.replace("{csv}", &csv.display().to_string())
}

/// One case on one backend: the healthy run first (its commits are the fault points), then
/// every fault at every commit, then a crash after every commit.
async fn case_under_faults(backend: Backend, case: &Case, csv: &Path) -> TestResult {
    let sql = case_sql(case, csv);
    let healthy = Fixture::new(backend).await?;
    let before = state(&healthy).await?;
    let first = healthy.store.commits()?;
    let applied_before = healthy.store.applied()?;
    healthy.db.session().execute(&sql).await?;
    let commits = healthy.store.commits()? - first;
    let after = state(&healthy).await?;
    assert_ne!(
        before, after,
        "{}: the statement changed nothing",
        case.name
    );
    assert!(commits >= 1, "{}: no commit", case.name);

    // A fault at CREATE INDEX's last commit, its statistics, leaves the index built and
    // visible without them (the statement succeeds with a warning): the state after, with the
    // statistics as before.
    let after_without_statistics = with_statistics_of(&after, &before);
    let gathers_statistics = case.sql.starts_with("CREATE INDEX");

    for point in 1..=commits {
        for fault in [
            Fault::FailBefore,
            Fault::Conflict,
            Fault::LoseAcknowledgement,
            Fault::LoseRequest,
        ] {
            let context = format!("{backend:?}, {}, {fault:?} at commit {point}", case.name);
            let mut run = Fixture::new(backend).await?;
            run.store.fail_commit(point, fault)?;
            let result = run.db.session().execute(&sql).await;
            run.store.heal()?;
            match (&result, fault) {
                (Err(error), Fault::LoseAcknowledgement | Fault::LoseRequest) => assert!(
                    error.is_outcome_unknown(),
                    "{context}: a lost acknowledgement reported as {error:?} ({error})"
                ),
                (Err(error), Fault::FailBefore) => assert!(
                    !error.is_outcome_unknown() && !error.is_retryable(),
                    "{context}: {error:?}"
                ),
                (Err(error), Fault::Conflict) => assert!(
                    error.is_retryable(),
                    "{context}: a conflict reported as {error:?} ({error})"
                ),
                (Ok(_), _) => {}
            }
            let now = state(&run).await?;
            let at_statistics = gathers_statistics && point == commits;
            // (A lost acknowledgement there did write them.)
            let expected = if fault == Fault::LoseAcknowledgement {
                &after
            } else {
                &after_without_statistics
            };
            if at_statistics {
                assert!(result.is_ok(), "{context}: {result:?}");
                assert!(
                    &now == expected,
                    "{context}: not as after the build (statistics as the fault left them)"
                );
            } else {
                before_or_after(&now, &before, &after, &context)?;
                // A request lost on its way applied nothing: a statement of one commit left the
                // store as it was, though it could not say so.
                if fault == Fault::LoseRequest && commits == 1 {
                    assert!(now == before, "{context}: a lost request changed the store");
                }
                if result.is_ok() {
                    assert!(
                        now == after,
                        "{context}: succeeded, but the store is not as after it"
                    );
                }
            }
            assert_check_clean(&run.db.session(), &context).await?;
            run.reopen().await?;
            let reopened = state(&run).await?;
            if at_statistics {
                assert!(
                    &reopened == expected,
                    "{context}, reopened: not as after the build (statistics as the fault left them)"
                );
            } else {
                before_or_after(&reopened, &before, &after, &format!("{context}, reopened"))?;
            }
            assert_check_clean(&run.db.session(), &format!("{context}, reopened")).await?;
        }
    }

    // Crashes: the healthy run's commits dropped from the newest, each state opened afresh.
    let mut crashed = healthy;
    let applied_after = crashed.store.applied()?;
    for keep in (applied_before..applied_after).rev() {
        let context = format!(
            "{backend:?}, {}, crash keeping {} of its {} commits",
            case.name,
            keep - applied_before,
            applied_after - applied_before
        );
        crashed.store.crash(keep).await?;
        crashed.reopen().await?;
        let now = state(&crashed).await?;
        if gathers_statistics && keep + 1 == applied_after {
            assert!(
                now == after_without_statistics,
                "{context}: not as after the build without its statistics"
            );
        } else {
            before_or_after(&now, &before, &after, &context)?;
        }
        assert_check_clean(&crashed.db.session(), &context).await?;
    }
    Ok(())
}

async fn every_case_under_faults(backend: Backend) -> TestResult {
    let dir = tempfile::tempdir()?;
    let csv = dir.path().join("rows.csv");
    let lines: Vec<String> = (2001..=2040)
        .map(|k| format!("{k},{},c{k},{}", k % 40, k % 7))
        .collect();
    std::fs::write(&csv, lines.join("\n") + "\n")?;
    for case in CASES {
        case_under_faults(backend, case, &csv).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_statement_survives_every_fault_in_memory() -> TestResult {
    every_case_under_faults(Backend::Memory).await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_statement_survives_every_fault_on_disk() -> TestResult {
    every_case_under_faults(Backend::Fjall).await
}

/// A write that loses every race gives up after its bound with the retryable error, having
/// changed nothing; the store works again once the races stop.
#[tokio::test]
async fn the_retry_loop_gives_up_after_its_bound() -> TestResult {
    let run = Fixture::new(Backend::Memory).await?;
    let before = state(&run).await?;
    let first = run.store.commits()?;
    run.store.fail_every_commit(Fault::Conflict)?;
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        run.db.session().execute("UPDATE t SET c = 0 WHERE k = 1"),
    )
    .await?;
    run.store.heal()?;
    let error = result
        .err()
        .ok_or("the write succeeded through constant conflicts")?;
    assert!(error.is_retryable(), "{error:?}");
    // Eight attempts (the statement retry bound), one commit each.
    assert_eq!(run.store.commits()? - first, 8);
    assert!(
        state(&run).await? == before,
        "a failed write left something"
    );
    run.db
        .session()
        .execute("UPDATE t SET c = 0 WHERE k = 1")
        .await?;
    Ok(())
}

/// `after` with the table statistics (0x00 'S') of `before`: the state a statement leaves when
/// all of it but its statistics landed.
fn with_statistics_of(after: &Dump, before: &Dump) -> Dump {
    let statistics = |key: &Vec<u8>| key.starts_with(&[0x00, b'S']);
    let mut out: Dump = after
        .iter()
        .filter(|(key, _)| !statistics(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(
        before
            .iter()
            .filter(|(key, _)| statistics(key))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    out
}

/// A statement that reads, with whether it writes (a reader must leave the store as it was),
/// and what is set up before it (not under faults).
struct ReadCase {
    name: &'static str,
    setup: &'static str,
    sql: &'static str,
    writes: bool,
}

const READ_CASES: &[ReadCase] = &[
    ReadCase {
        name: "SELECT through an index",
        setup: "",
        sql: "SELECT count(*), sum(c) FROM t WHERE a = 5",
        writes: false,
    },
    ReadCase {
        name: "join",
        setup: "",
        sql: "SELECT count(*) FROM t JOIN s ON s.k = t.c WHERE t.k <= 100",
        writes: false,
    },
    ReadCase {
        name: "UPDATE ... RETURNING",
        setup: "",
        sql: "UPDATE t SET c = c + 1 WHERE a = 3 RETURNING k, c",
        writes: true,
    },
    ReadCase {
        name: "INSERT ... SELECT",
        setup: "",
        sql: "INSERT INTO t SELECT k + 3000, a, b || 'x', c FROM t WHERE k <= 50",
        writes: true,
    },
    ReadCase {
        name: "CREATE INDEX (backfill pages)",
        setup: "",
        sql: "CREATE INDEX t_c ON t (c)",
        writes: true,
    },
    ReadCase {
        name: "COPY TO",
        setup: "",
        sql: "COPY t TO '{out}' WITH (FORMAT csv)",
        writes: false,
    },
    ReadCase {
        name: "INSERT firing a trigger that reads and writes",
        setup: "CREATE TRIGGER s_touch AFTER INSERT ON s BEGIN \
                UPDATE t SET c = c + 1 WHERE a = NEW.k % 40; END",
        sql: "INSERT INTO s VALUES (10, 'q'), (11, 'r'), (12, 'q')",
        writes: true,
    },
];

async fn setup(fixture: &Fixture, case: &ReadCase) -> TestResult {
    if !case.setup.is_empty() {
        fixture.db.session().execute(case.setup).await?;
    }
    Ok(())
}

/// One read case on one backend: the healthy run counts its reads; then its first, second,
/// middle and last read fail, and its last lookup and last range read, each in a fresh
/// database.
async fn read_case_under_faults(backend: Backend, case: &ReadCase, out: &Path) -> TestResult {
    let sql = case.sql.replace("{out}", &out.display().to_string());
    let healthy = Fixture::new(backend).await?;
    setup(&healthy, case).await?;
    let before = state(&healthy).await?;
    let count = |kind| healthy.store.reads(kind);
    let first = [
        count(None)?,
        count(Some(ReadKind::Lookup))?,
        count(Some(ReadKind::Range))?,
    ];
    healthy.db.session().execute(&sql).await?;
    let reads = count(None)? - first[0];
    let lookups = count(Some(ReadKind::Lookup))? - first[1];
    let range_reads = count(Some(ReadKind::Range))? - first[2];
    let after = state(&healthy).await?;
    assert!(reads >= 1, "{}: no read", case.name);
    assert_eq!(
        before == after,
        !case.writes,
        "{}: writes or not",
        case.name
    );
    let mut points: Vec<(u64, Option<ReadKind>)> = [1, 2, reads.div_ceil(2), reads]
        .into_iter()
        .filter(|point| *point <= reads)
        .map(|point| (point, None))
        .collect();
    points.dedup();
    points.extend(
        [(lookups, ReadKind::Lookup), (range_reads, ReadKind::Range)]
            .into_iter()
            .filter(|(last, _)| *last > 0)
            .map(|(last, kind)| (last, Some(kind))),
    );
    for (point, kind) in points {
        let of = match kind {
            None => format!("read {point} of {reads}"),
            Some(kind) => format!("{kind:?} read {point}, the last of its kind"),
        };
        let context = format!("{backend:?}, {}, {of} fails", case.name);
        let mut run = Fixture::new(backend).await?;
        setup(&run, case).await?;
        run.store.fail_read(point, kind)?;
        let result = run.db.session().execute(&sql).await;
        run.store.heal()?;
        assert_eq!(
            run.store.failed_reads()?,
            1,
            "{context}: the fault did not strike"
        );
        // The injected fault is what a failed statement reports, not a failure of its own. A
        // read whose failure a statement may pass over (CREATE INDEX's statistics, with a
        // warning) leaves it to finish as the healthy run did, but for those.
        if let Err(error) = &result {
            assert!(
                error
                    .to_string()
                    .contains("injected fault: the read failed"),
                "{context}: reported as {error:?} ({error})"
            );
        }
        let now = state(&run).await?;
        if result.is_err() && !case.writes {
            assert!(now == before, "{context}: a failed read changed the store");
        } else if result.is_ok() {
            assert!(
                now == after || now == with_statistics_of(&after, &before),
                "{context}: succeeded, but not as after it"
            );
        } else {
            before_or_after(&now, &before, &after, &context)?;
        }
        assert_check_clean(&run.db.session(), &context).await?;
        run.reopen().await?;
        let reopened = state(&run).await?;
        if reopened != with_statistics_of(&after, &before) {
            before_or_after(&reopened, &before, &after, &format!("{context}, reopened"))?;
        }
        if result.is_err() && !case.writes {
            assert!(reopened == before, "{context}, reopened: changed");
        }
    }
    Ok(())
}

async fn every_read_case_under_faults(backend: Backend) -> TestResult {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("out.csv");
    for case in READ_CASES {
        read_case_under_faults(backend, case, &out).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn read_faults_fail_the_statement_and_change_nothing_in_memory() -> TestResult {
    every_read_case_under_faults(Backend::Memory).await
}

#[tokio::test(flavor = "multi_thread")]
async fn read_faults_fail_the_statement_and_change_nothing_on_disk() -> TestResult {
    every_read_case_under_faults(Backend::Fjall).await
}

/// Every read of a key range fails while planned: a read of the row in it fails, one of the
/// row beside it does not.
#[tokio::test]
async fn reads_in_a_failing_key_range_fail_and_others_go_on() -> TestResult {
    let fixture = Fixture::new(Backend::Memory).await?;
    let s = fixture.db.session();
    let lookups = fixture.store.reads(Some(ReadKind::Lookup))?;
    assert_eq!(cell(&s, "SELECT b FROM t WHERE k = 7").await?, "b7");
    assert!(fixture.store.reads(Some(ReadKind::Lookup))? > lookups);
    let row7 = row_key(&fixture.store, 7).await?;
    let mut after_row7 = row7.clone();
    after_row7.push(0);
    fixture
        .store
        .fail_reads_in(KeyRange::new(row7, Some(after_row7)))?;
    assert_eq!(cell(&s, "SELECT b FROM t WHERE k = 8").await?, "b8");
    let struck = fixture.store.failed_reads()?;
    let failed = s.execute("SELECT b FROM t WHERE k = 7").await;
    assert!(
        fixture.store.failed_reads()? > struck,
        "no read of row 7 failed"
    );
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("injected fault")),
        "{failed:?}"
    );
    fixture.store.heal()?;
    assert_eq!(cell(&s, "SELECT b FROM t WHERE k = 7").await?, "b7");
    Ok(())
}

/// The key of t's row `k` (`k` < 256): the key holding the integer (sign bit flipped,
/// big-endian) whose value holds its text 'b<k>'.
async fn row_key(store: &FaultyStore, k: u8) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let integer = [0x80, 0, 0, 0, 0, 0, 0, k];
    let text = format!("b{k}");
    Ok(dump(store)
        .await?
        .into_iter()
        .find(|(key, value)| {
            key.windows(8).any(|w| w == integer)
                && value.windows(text.len()).any(|w| w == text.as_bytes())
        })
        .map(|(key, _)| key)
        .ok_or_else(|| format!("no key for row {k}"))?)
}

/// A read that fails only after a delay (as a read that times out does) holds up its own
/// statement and no other: while an UPDATE waits on its failing read of row 43, another session
/// reads and updates rows beside it; the UPDATE then reports the fault and leaves nothing of
/// itself behind, on both stores and after reopening.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_failing_after_a_delay_holds_up_only_its_statement() -> TestResult {
    let delay = Duration::from_millis(1500);
    for backend in [Backend::Memory, Backend::Fjall] {
        let mut fixture = Fixture::new(backend).await?;
        let s = fixture.db.session();
        let sum_before = cell(&s, "SELECT sum(c) FROM t WHERE a = 3").await?;
        let row43 = row_key(&fixture.store, 43).await?;
        let mut after_row43 = row43.clone();
        after_row43.push(0);
        fixture.store.delay_read_faults(delay)?;
        fixture
            .store
            .fail_reads_in(KeyRange::new(row43, Some(after_row43)))?;
        let slow = {
            let s = fixture.db.session();
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                let result = s
                    .execute("UPDATE t SET c = c + 1 WHERE a = 3 RETURNING k, c")
                    .await;
                (result.map(|_| ()), started.elapsed())
            })
        };
        let waiting_since = std::time::Instant::now();
        while fixture.store.failed_reads()? == 0 {
            assert!(
                waiting_since.elapsed() < Duration::from_secs(30),
                "{backend:?}: the UPDATE never read row 43"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The UPDATE is now waiting on its failing read; another session goes on beside it.
        let other = fixture.db.session();
        assert_eq!(cell(&other, "SELECT b FROM t WHERE k = 8").await?, "b8");
        other.execute("UPDATE t SET c = 99 WHERE k = 500").await?;
        assert!(
            !slow.is_finished(),
            "{backend:?}: the other session waited for the failing read"
        );
        let (result, elapsed) = slow.await?;
        assert!(elapsed >= delay, "{backend:?}: failed after {elapsed:?}");
        assert!(
            result
                .as_ref()
                .is_err_and(|e| e.to_string().contains("injected fault")),
            "{backend:?}: {result:?}"
        );
        fixture.store.heal()?;
        for round in ["", ", reopened"] {
            let s = fixture.db.session();
            let context = format!("{backend:?}{round}");
            assert_eq!(
                cell(&s, "SELECT sum(c) FROM t WHERE a = 3").await?,
                sum_before,
                "{context}: the failed UPDATE left rows behind"
            );
            assert_eq!(cell(&s, "SELECT c FROM t WHERE k = 500").await?, "99");
            assert_check_clean(&s, &context).await?;
            fixture.reopen().await?;
        }
    }
    Ok(())
}

/// The first cell of the only row.
async fn cell(s: &Session, sql: &str) -> Result<String, Box<dyn std::error::Error>> {
    let result = rows(s, sql).await?;
    Ok(result
        .first()
        .and_then(|row| row.first())
        .cloned()
        .ok_or("no row")?)
}
