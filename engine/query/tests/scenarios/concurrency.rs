//! Concurrent sessions on one database, on the memory store and on fjall.
//!
//! Several tasks of a multi-thread runtime, each with its own `Session`, run seeded mixes of
//! writes over a small, overlapping key space: transfers between accounts, counter increments,
//! updates of indexed columns, UPSERT / OR REPLACE / OR IGNORE / ON CONFLICT DO NOTHING into a
//! table with a UNIQUE index, multi-row updates and deletes on a salted table, and reads of
//! invariants while the writes go on. Every statement must succeed or fail with a retryable
//! error. Afterwards every index must pass CHECK INDEX, the UNIQUE column must hold no
//! duplicate, and what the successful statements did must add up:
//!
//! - each transfer is one statement updating two balances, so the total of the balances is the
//!   same whatever succeeded or failed: a statement applied by halves, or one that computed
//!   `bal + x` from a stale balance, changes it;
//! - each counter ends at exactly the number of increments acknowledged on it: one lost
//!   update, or one increment applied twice, shows.
//!
//! Deterministic tests at the end interleave another session's commit between an UPDATE's,
//! DELETE's or INSERT ... SELECT's selection of rows and its commit (the lost update the
//! workload above found in an earlier version, where the selection read outside the statement's
//! transaction), and check that the scans of one DataFusion-run statement read one snapshot (a
//! join must not see half of another session's transaction).
//!
//! `ROWDEX_CONCURRENCY_OPS` (default 40) is the number of statements per task.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rowdex::{Characteristics, Database, IsolationLevel, Session};
use rowdex_store::hooked::{HookedStore, StoreHooks};
use rowdex_store::{KvStore, MemoryStore, Transaction};

use crate::{Rng, TestResult, rows, table};

// `Database` and `Session` cross threads: a server hands sessions to tasks on any worker.
const fn assert_send_sync<T: Send + Sync>() {}
const _: () = assert_send_sync::<Database>();
const _: () = assert_send_sync::<Session>();

const ACCOUNTS: i64 = 8;
const START_BALANCE: i64 = 1000;
const COUNTERS: usize = 4;
/// Tasks per run: half take a session from the shared handle, half from their own clone of it.
const TASKS: u64 = 6;

const SCHEMA: &str = "
    CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL, tier INT NOT NULL);
    CREATE INDEX acct_bal ON acct (bal);
    CREATE INDEX acct_tier ON acct (tier);
    CREATE TABLE ctr (id INT PRIMARY KEY, n BIGINT NOT NULL);
    CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE, grp INT, score INT);
    CREATE INDEX users_grp ON users (grp, score);
    CREATE TABLE kv (k INT, sub INT, v INT NOT NULL, tag TEXT, PRIMARY KEY (k, sub DESC))
        WITH (SALT_BUCKETS = 3);
    CREATE INDEX kv_v ON kv (v) INCLUDE (tag);
    INSERT INTO ctr VALUES (0, 0), (1, 0), (2, 0), (3, 0);";

/// Every index of [`SCHEMA`] (table, index), `users_email_key` being the UNIQUE constraint's.
const INDEXES: [(&str, &str); 5] = [
    ("acct", "acct_bal"),
    ("acct", "acct_tier"),
    ("kv", "kv_v"),
    ("users", "users_email_key"),
    ("users", "users_grp"),
];

/// What the tasks did, summed over all of them.
#[derive(Debug, Default)]
struct Counts {
    ops: AtomicU64,
    ok: AtomicU64,
    conflicts: AtomicU64,
    transfers_ok: AtomicU64,
    reads: AtomicU64,
    /// Reads that saw a total other than the constant one: half a transfer, or a total that a
    /// lost update has already moved.
    inconsistent_reads: AtomicU64,
    /// Acknowledged increments per counter.
    increments: [AtomicU64; COUNTERS],
}

/// One seeded statement of the mix: its SQL, the counter it increments if it is one, its kind.
fn statement(rng: &mut Rng) -> (String, Option<usize>, Kind) {
    let a = rng.int(1, ACCOUNTS + 1);
    // Another account than `a`.
    let b = 1 + (a + rng.int(0, ACCOUNTS - 1)) % ACCOUNTS;
    let x = rng.int(1, 100);
    let user = rng.int(0, 16);
    let email = format!("'e{}'", rng.next(8));
    let grp = rng.int(0, 4);
    let k = rng.int(0, 6);
    let sub = rng.int(0, 5);
    let sql = match rng.next(20) {
        // The same transfer as two statements in a session transaction: its COMMIT must fail
        // if either balance changed after the transaction read it.
        0 | 1 => {
            return (
                format!(
                    "BEGIN; UPDATE acct SET bal = bal - {x} WHERE id = {a}; \
                     UPDATE acct SET bal = bal + {x} WHERE id = {b}; COMMIT"
                ),
                None,
                Kind::Transfer,
            );
        }
        2..=4 => {
            return (
                format!(
                    "UPDATE acct SET bal = bal + CASE WHEN id = {a} THEN -{x} ELSE {x} END \
                     WHERE id IN ({a}, {b})"
                ),
                None,
                Kind::Transfer,
            );
        }
        5 => format!("UPDATE acct SET tier = {grp} WHERE id = {a}"),
        6 => format!("UPDATE acct SET tier = tier + 1 WHERE bal > {START_BALANCE}"),
        7 | 8 => {
            let c = rng.next(COUNTERS as u64) as usize;
            return (
                format!("UPDATE ctr SET n = n + 1 WHERE id = {c}"),
                Some(c),
                Kind::Write,
            );
        }
        // Emails come from a space smaller than the ids, so clashes on the UNIQUE index are
        // common; these modes resolve them without an error (skip, or replace the holder).
        9 => format!("INSERT OR IGNORE INTO users VALUES ({user}, {email}, {grp}, {x})"),
        10 => format!("INSERT OR REPLACE INTO users VALUES ({user}, {email}, {grp}, {x})"),
        11 => {
            format!("INSERT INTO users VALUES ({user}, {email}, {grp}, {x}) ON CONFLICT DO NOTHING")
        }
        // Leaves the email alone: a new row gets NULL, which the UNIQUE index allows many times.
        12 => format!("UPSERT INTO users (id, grp, score) VALUES ({user}, {grp}, {x})"),
        13 => format!(
            "UPDATE users SET grp = {grp}, score = score + 1 WHERE id IN ({user}, {})",
            (user + 3) % 16
        ),
        14 => format!("DELETE FROM users WHERE grp = {grp} AND score > {}", x + 50),
        15 => {
            let rows: Vec<String> = (0..1 + rng.next(4))
                .map(|i| format!("({k}, {}, {x}, 't{i}')", (sub + i as i64) % 5))
                .collect();
            format!("INSERT OR REPLACE INTO kv VALUES {}", rows.join(", "))
        }
        16 => format!("INSERT INTO kv VALUES ({k}, {sub}, {x}, NULL) ON CONFLICT DO NOTHING"),
        17 => format!("UPDATE kv SET v = v + 1, tag = 'u' WHERE k = {k}"),
        18 => format!("DELETE FROM kv WHERE k = {k} AND sub >= {sub}"),
        // Reads of the constant total while transfers run, one through the table, one through
        // an index: each statement reads one snapshot, so neither may see half a transfer.
        _ => {
            let sql = match rng.next(2) {
                0 => "SELECT sum(bal), count(*) FROM acct".to_string(),
                _ => format!(
                    "SELECT /*+ INDEX(acct acct_bal) */ sum(bal), count(*) FROM acct \
                     WHERE bal > {}",
                    i64::MIN / 2
                ),
            };
            return (sql, None, Kind::Read);
        }
    };
    (sql, None, Kind::Write)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Transfer,
    Write,
    Read,
}

/// One task: `ops` statements of the mix, each checked to succeed or fail retryably.
/// (The error is a String: it crosses from the spawned task.)
async fn worker(session: Session, seed: u64, ops: u64, counts: Arc<Counts>) -> Result<(), String> {
    let mut rng = Rng(seed | 1);
    let total = (ACCOUNTS * START_BALANCE).to_string();
    for _ in 0..ops {
        let (sql, counter, kind) = statement(&mut rng);
        counts.ops.fetch_add(1, Ordering::Relaxed);
        if kind == Kind::Read {
            let seen = rows(&session, &sql)
                .await
                .map_err(|e| format!("{sql}: {e}"))?;
            counts.ok.fetch_add(1, Ordering::Relaxed);
            counts.reads.fetch_add(1, Ordering::Relaxed);
            if seen != vec![vec![total.clone(), ACCOUNTS.to_string()]] {
                // The first few only: once the stored total has drifted, every read differs.
                if counts.inconsistent_reads.fetch_add(1, Ordering::Relaxed) < 3 {
                    println!("read of a wrong total: {sql} gave {seen:?}");
                }
            }
            continue;
        }
        match session.execute(&sql).await {
            Ok(_) => {
                counts.ok.fetch_add(1, Ordering::Relaxed);
                if kind == Kind::Transfer {
                    counts.transfers_ok.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(c) = counter {
                    counts.increments[c].fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(error) if error.is_retryable() => {
                counts.conflicts.fetch_add(1, Ordering::Relaxed);
                // A script stopped inside its transaction leaves it open (a COMMIT that
                // conflicted has already ended it).
                if session.in_transaction() {
                    session
                        .execute("ROLLBACK")
                        .await
                        .map_err(|e| format!("ROLLBACK after {sql}: {e}"))?;
                }
            }
            Err(error) => return Err(format!("{sql}: non-retryable error: {error}")),
        }
    }
    Ok(())
}

/// Runs the tasks against `db`, then checks the end state.
async fn run(db: &Database, label: &str, isolation: IsolationLevel) -> TestResult {
    let ops: u64 = match std::env::var("ROWDEX_CONCURRENCY_OPS") {
        Ok(text) => text.parse()?,
        Err(_) => 40,
    };
    let setup = db.session();
    setup.execute(SCHEMA).await?;
    let accounts: Vec<String> = (1..=ACCOUNTS)
        .map(|id| format!("({id}, {START_BALANCE}, 0)"))
        .collect();
    setup
        .execute(&format!("INSERT INTO acct VALUES {}", accounts.join(", ")))
        .await?;

    let began = Instant::now();
    let counts = Arc::new(Counts::default());
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let session = if task % 2 == 0 {
            db.session()
        } else {
            db.clone().session()
        };
        session.set_default_characteristics(Characteristics {
            isolation,
            read_only: false,
        });
        let seed = 0x5eed_0000_0000_0000 ^ (task + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        tasks.push(tokio::spawn(worker(session, seed, ops, counts.clone())));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = began.elapsed();
    let s = db.session();

    // Never both halves: a transfer applied by halves, or computed from a stale balance, moves
    // the total. (Read without the index, so a bad index cannot hide a bad row.)
    let balances = rows(&s, "SELECT /*+ NO_INDEX */ sum(bal), count(*) FROM acct").await?;
    let total: i64 = balances[0][0].parse()?;
    // Every acknowledged increment, and only those.
    let stored: Vec<i64> = rows(&s, "SELECT n FROM ctr ORDER BY id")
        .await?
        .iter()
        .map(|r| r[0].parse())
        .collect::<Result<_, _>>()?;
    let acknowledged: Vec<i64> = counts
        .increments
        .iter()
        .map(|n| n.load(Ordering::Relaxed) as i64)
        .collect();
    let lost_increments: i64 = acknowledged.iter().zip(&stored).map(|(a, s)| a - s).sum();
    let inconsistent_reads = counts.inconsistent_reads.load(Ordering::Relaxed);
    println!(
        "concurrency ({label}): {} ops in {:.1} s: {} ok ({} transfers, {} reads), {} \
         conflicts; total {total} (expected {}), counters {stored:?} (acknowledged \
         {acknowledged:?}), {inconsistent_reads} reads of a wrong total",
        counts.ops.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
        counts.ok.load(Ordering::Relaxed),
        counts.transfers_ok.load(Ordering::Relaxed),
        counts.reads.load(Ordering::Relaxed),
        counts.conflicts.load(Ordering::Relaxed),
        ACCOUNTS * START_BALANCE,
    );
    assert_eq!(balances[0][1], ACCOUNTS.to_string(), "{label}: accounts");
    assert_eq!(
        total,
        ACCOUNTS * START_BALANCE,
        "{label}: balances {:?}",
        rows(&s, "SELECT id, bal FROM acct ORDER BY id").await?
    );
    assert_eq!(
        stored, acknowledged,
        "{label}: counters ({lost_increments} lost)"
    );
    assert_eq!(inconsistent_reads, 0, "{label}: reads of a wrong total");
    check_constraints(&s, label).await
}

/// The UNIQUE constraint holds and every index agrees with its table.
async fn check_constraints(s: &Session, label: &str) -> TestResult {
    // Counted over the rows themselves rather than the index.
    let duplicates = rows(
        s,
        "SELECT /*+ NO_INDEX */ email, count(*) FROM users WHERE email IS NOT NULL \
         GROUP BY email HAVING count(*) > 1",
    )
    .await?;
    assert!(
        duplicates.is_empty(),
        "{label}: duplicate emails {duplicates:?}"
    );

    // Found by SHOW INDEXES, so none is skipped.
    let mut listed: Vec<(String, String)> = rows(s, "SHOW INDEXES")
        .await?
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    listed.sort();
    let expected: Vec<(String, String)> = INDEXES
        .iter()
        .map(|(t, i)| (t.to_string(), i.to_string()))
        .collect();
    assert_eq!(listed, expected, "{label}: SHOW INDEXES");
    for (_, index) in &listed {
        let report = rows(s, &format!("CHECK INDEX {index}")).await?;
        assert_eq!(report.len(), 1, "{label}: CHECK INDEX {index}: {report:?}");
        let r = &report[0];
        // index_name, rows, entries, missing, dangling, repaired, status
        assert!(
            r[3] == "0" && r[4] == "0" && r[6] == "ok" && r[1] == r[2],
            "{label}: CHECK INDEX {index}: {r:?}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sessions_on_memory() -> TestResult {
    let db = Database::open_memory().await?;
    run(&db, "memory", IsolationLevel::ReadCommitted).await
}

/// The same mix in SERIALIZABLE transactions: no row locks, every read validated at COMMIT.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_serializable_sessions_on_memory() -> TestResult {
    let db = Database::open_memory().await?;
    run(&db, "memory, serializable", IsolationLevel::Serializable).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_serializable_sessions_on_fjall() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    run(&db, "fjall, serializable", IsolationLevel::Serializable).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sessions_on_fjall() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    run(&db, "fjall", IsolationLevel::ReadCommitted).await?;
    // What the sessions committed concurrently reads back the same after a reopen.
    let before = dump(&db).await?;
    drop(db);
    let db = Database::open(dir.path()).await?;
    assert_eq!(dump(&db).await?, before, "fjall: after reopen");
    check_constraints(&db.session(), "fjall, reopened").await
}

async fn dump(db: &Database) -> Result<Vec<Vec<Vec<String>>>, rowdex::Error> {
    let s = db.session();
    let mut out = Vec::new();
    for table in ["acct", "ctr", "users", "kv"] {
        out.push(rows(&s, &format!("SELECT * FROM {table} ORDER BY 1, 2")).await?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The lost update, made deterministic: a store that lets another statement commit at the moment
// a statement begins its transaction, either just before the transaction's snapshot is taken or
// just after. An UPDATE or DELETE that selected its rows outside its transaction (as an earlier
// version did) lost the first interleaving's commit; one whose transaction reads stale rows must
// fail its commit on the second.
// ---------------------------------------------------------------------------------------------

type Hook = Pin<Box<dyn Future<Output = Result<(), rowdex::Error>> + Send>>;

/// When the hook runs, relative to the snapshot of the transaction being begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    BeforeSnapshot,
    AfterSnapshot,
}

/// Store hooks that run the armed hook, once, at the next `begin`.
#[derive(Default)]
struct Interleaving {
    hook: Mutex<Option<(Hook, Moment)>>,
    /// The hook's outcome, once it has run.
    hook_result: Mutex<Option<Result<(), String>>>,
}

/// A memory store that runs an armed hook at the next `begin`.
type InterleavingStore = HookedStore<Interleaving>;

impl Interleaving {
    fn arm(&self, hook: Hook, moment: Moment) {
        if let Ok(mut slot) = self.hook.lock() {
            *slot = Some((hook, moment));
        }
    }

    async fn run_hook(&self, hook: Hook) {
        let result = hook.await.map_err(|e| e.to_string());
        if let Ok(mut slot) = self.hook_result.lock() {
            *slot = Some(result);
        }
    }

    fn hook_result(&self) -> Option<Result<(), String>> {
        self.hook_result.lock().ok().and_then(|mut r| r.take())
    }
}

#[async_trait::async_trait]
impl StoreHooks for Interleaving {
    async fn begin(&self, inner: &dyn KvStore) -> rowdex_store::Result<Box<dyn Transaction>> {
        // Taken out first: the hook's own statement begins a transaction too.
        let hook = self.hook.lock().ok().and_then(|mut h| h.take());
        match hook {
            Some((hook, Moment::BeforeSnapshot)) => {
                self.run_hook(hook).await;
                inner.begin().await
            }
            Some((hook, Moment::AfterSnapshot)) => {
                let tx = inner.begin().await?;
                self.run_hook(hook).await;
                Ok(tx)
            }
            None => inner.begin().await,
        }
    }
}

/// A database on an [`InterleavingStore`] with `acct (id, bal)` holding (1, 1000), (2, 500).
async fn interleaving() -> Result<(Arc<InterleavingStore>, Database), rowdex::Error> {
    let store = Arc::new(HookedStore::new(
        Arc::new(MemoryStore::new()),
        Interleaving::default(),
    ));
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    db.session()
        .execute(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL);
             INSERT INTO acct VALUES (1, 1000), (2, 500);",
        )
        .await?;
    Ok((store, db))
}

/// The hook's statement: another session's UPDATE, committed in the armed moment.
fn other_statement(db: &Database, sql: &'static str) -> Hook {
    let other = db.session();
    Box::pin(async move { other.execute(sql).await.map(|_| ()) })
}

#[tokio::test]
async fn an_update_does_not_overwrite_a_commit_made_after_it_read() -> TestResult {
    for moment in [Moment::BeforeSnapshot, Moment::AfterSnapshot] {
        let (store, db) = interleaving().await?;
        let s = db.session();
        store.hooks().arm(
            other_statement(&db, "UPDATE acct SET bal = bal + 100 WHERE id = 1"),
            moment,
        );
        // The other UPDATE commits 1100 as this one begins. Serializable outcomes: 1090 (either
        // order), or a retryable error that leaves 1100. Computing 990 from a stale 1000 and
        // writing it loses the other update.
        let result = s
            .execute("UPDATE acct SET bal = bal - 10 WHERE id = 1")
            .await;
        assert_eq!(
            store.hooks().hook_result(),
            Some(Ok(())),
            "{moment:?}: the other UPDATE ran"
        );
        let bal = rows(&s, "SELECT bal FROM acct WHERE id = 1").await?;
        match result {
            Ok(_) => assert_eq!(bal, table(&[&["1090"]]), "{moment:?}: an update was lost"),
            Err(error) => {
                assert!(error.is_retryable(), "{moment:?}: {error}");
                assert_eq!(bal, table(&[&["1100"]]), "{moment:?}");
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_delete_does_not_remove_a_row_that_stopped_matching() -> TestResult {
    for moment in [Moment::BeforeSnapshot, Moment::AfterSnapshot] {
        let (store, db) = interleaving().await?;
        let s = db.session();
        store.hooks().arm(
            other_statement(&db, "UPDATE acct SET bal = 0 WHERE id = 2"),
            moment,
        );
        // The other UPDATE commits bal = 0 as this statement begins, so the row no longer
        // matches and must stay (or the DELETE fail retryably).
        let result = s.execute("DELETE FROM acct WHERE bal = 500").await;
        assert_eq!(
            store.hooks().hook_result(),
            Some(Ok(())),
            "{moment:?}: the other UPDATE ran"
        );
        if let Err(error) = result {
            assert!(error.is_retryable(), "{moment:?}: {error}");
        }
        assert_eq!(
            rows(&s, "SELECT id, bal FROM acct ORDER BY id").await?,
            table(&[&["1", "1000"], &["2", "0"]]),
            "{moment:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_insert_select_does_not_overwrite_a_commit_made_after_it_read() -> TestResult {
    for moment in [Moment::BeforeSnapshot, Moment::AfterSnapshot] {
        let (store, db) = interleaving().await?;
        let s = db.session();
        store.hooks().arm(
            other_statement(&db, "UPDATE acct SET bal = bal + 100 WHERE id = 1"),
            moment,
        );
        // The other UPDATE commits 1100 as this statement begins its transaction. Serializable
        // outcomes: 1090, or a retryable error that leaves 1100; 990 (computed from a stale
        // 1000 read outside the writing transaction) loses the other update.
        let result = s
            .execute("INSERT OR REPLACE INTO acct SELECT id, bal - 10 FROM acct WHERE id = 1")
            .await;
        assert_eq!(
            store.hooks().hook_result(),
            Some(Ok(())),
            "{moment:?}: the other UPDATE ran"
        );
        let bal = rows(&s, "SELECT bal FROM acct WHERE id = 1").await?;
        match result {
            Ok(_) => assert_eq!(bal, table(&[&["1090"]]), "{moment:?}: an update was lost"),
            Err(error) => {
                assert!(error.is_retryable(), "{moment:?}: {error}");
                assert_eq!(bal, table(&[&["1100"]]), "{moment:?}");
            }
        }
    }
    Ok(())
}

/// Store hooks that hand out one given (older) view at the next snapshot, then fresh ones.
#[derive(Default)]
struct StaleSnapshot {
    view: Mutex<Option<Arc<dyn rowdex_store::KvRead>>>,
}

impl StoreHooks for StaleSnapshot {
    fn snapshot(&self, inner: &dyn KvStore) -> Arc<dyn rowdex_store::KvRead> {
        let stale = self.view.lock().ok().and_then(|mut v| v.take());
        stale.unwrap_or_else(|| inner.snapshot())
    }
}

#[tokio::test]
async fn every_scan_of_a_statement_reads_one_snapshot() -> TestResult {
    let store = Arc::new(HookedStore::new(
        Arc::new(MemoryStore::new()),
        StaleSnapshot::default(),
    ));
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    let mut reader = db.session();
    reader.set_executor(rowdex::Executor::DataFusion);
    reader
        .execute(
            "CREATE TABLE a (id INT PRIMARY KEY, v BIGINT);
             CREATE TABLE b (id INT PRIMARY KEY, v BIGINT);
             INSERT INTO a VALUES (1, 100);
             INSERT INTO b VALUES (1, 100);",
        )
        .await?;
    let join = "SELECT a.v + b.v FROM a JOIN b ON a.id = b.id";
    assert_eq!(rows(&reader, join).await?, table(&[&["200"]]));
    // A view from before another session's transaction moves 10 from a to b: the statement's
    // first snapshot is that one, as if the transaction committed while the statement ran.
    let before = store.inner().snapshot();
    db.session()
        .execute("BEGIN; UPDATE a SET v = v - 10; UPDATE b SET v = v + 10; COMMIT;")
        .await?;
    if let Ok(mut slot) = store.hooks().view.lock() {
        *slot = Some(before);
    }
    // One view for both scans: 200 (before the transaction, or after it). A scan each would
    // add a's balance before it to b's after it (210).
    assert_eq!(rows(&reader, join).await?, table(&[&["200"]]));
    assert!(
        store
            .hooks()
            .view
            .lock()
            .map(|v| v.is_none())
            .unwrap_or(false),
        "the statement opened a snapshot"
    );
    Ok(())
}
