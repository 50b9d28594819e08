//! Faults injected through the store seam (`rowdex_store::faulty::FaultyStore`), on both
//! stores: for every statement kind and every commit it makes, a commit that fails, one that
//! loses a race, one whose acknowledgement is lost, and a crash that drops the commits not yet
//! synced leave the store exactly as before the statement or exactly as after it (rows, every
//! index, the history keyspace, row counts and statistics), CHECK TABLE clean, before and
//! after the database is opened again. A lost acknowledgement is reported as such, never as a
//! failure, and the retry loop gives up after its bound.
//!
//! "Exactly" is a comparison of every key and value in the store, with one normalisation: the
//! row-count deltas each write appends (keyed by the writing process) are summed per table
//! into one figure, since two processes record the same count under different keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rowdex::{Database, ManualClock, Session};
use rowdex_store::faulty::{Fault, FaultyStore};
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
        for row in rows(s, &format!("CHECK TABLE {table}")).await? {
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
    let statistics = |key: &Vec<u8>| key.starts_with(&[0x00, b'S']);
    let mut after_without_statistics: Dump = after
        .iter()
        .filter(|(key, _)| !statistics(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    after_without_statistics.extend(
        before
            .iter()
            .filter(|(key, _)| statistics(key))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
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
