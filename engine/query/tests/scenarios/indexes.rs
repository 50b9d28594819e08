//! Secondary indexes give the same answers as the table without them, stay exactly in step with
//! the rows through every kind of write (concurrent ones and an online build included), can be
//! checked and repaired, and survive a reopen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rowdex::{Database, Error, Output, Session};
use rowdex_store::hooked::{HookedStore, HookedTransaction, StoreHooks, TransactionHooks};
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, MemoryStore, WriteBatch};

use crate::{Rng, TestResult, rows, table};

const COLUMNS: &str = "(pk INT PRIMARY KEY, a INT, b INT, c TEXT, d INT)";
const C_VALUES: &[&str] = &["''", "'h'", "'h1'", "'h12'", "'h2'", "NULL"];

/// The indexes every indexed twin gets (index names are unique across tables, hence the prefix).
fn index_ddl(t: &str) -> String {
    format!(
        "CREATE INDEX {t}_a ON {t} (a);
         CREATE INDEX {t}_b ON {t} (b);
         CREATE INDEX {t}_c ON {t} (c);
         CREATE INDEX {t}_ab ON {t} (a DESC, b);
         CREATE INDEX {t}_d ON {t} (d) INCLUDE (c);"
    )
}

/// One row of `COLUMNS` as a VALUES tuple.
fn row_values(rng: &mut Rng, pk: i64) -> String {
    let a = match rng.next(6) {
        0 => "NULL".to_string(),
        _ => rng.int(0, 5).to_string(),
    };
    let b = match rng.next(12) {
        0 => "NULL".to_string(),
        _ => rng.int(0, 7).to_string(),
    };
    let c = rng.pick(C_VALUES);
    let d = match rng.next(12) {
        0 => "NULL".to_string(),
        _ => rng.int(-3, 3).to_string(),
    };
    format!("({pk}, {a}, {b}, {c}, {d})")
}

/// A constant of `column`'s type, sometimes just outside the stored domain.
fn literal(rng: &mut Rng, column: &str, pk_max: i64) -> String {
    match column {
        "a" => rng.int(0, 6).to_string(),
        "b" => rng.int(-1, 8).to_string(),
        "c" => rng
            .pick(&["''", "'h'", "'h1'", "'h12'", "'h2'", "'h3'", "'g'"])
            .to_string(),
        "d" => rng.int(-4, 4).to_string(),
        _ => rng.int(-5, pk_max + 5).to_string(),
    }
}

/// One condition on one column.
fn atom(rng: &mut Rng, pk_max: i64) -> String {
    let column = rng.pick(&["a", "b", "c", "d", "a", "b", "c", "d", "pk"]);
    match rng.next(11) {
        0..=2 => format!("{column} = {}", literal(rng, column, pk_max)),
        3 => {
            let op = rng.pick(&["<", "<=", ">", ">="]);
            format!("{column} {op} {}", literal(rng, column, pk_max))
        }
        4 => format!(
            "{column} BETWEEN {} AND {}",
            literal(rng, column, pk_max),
            literal(rng, column, pk_max)
        ),
        5 => {
            let mut values: Vec<String> = (0..1 + rng.next(3))
                .map(|_| literal(rng, column, pk_max))
                .collect();
            if rng.next(4) == 0 {
                values.push("NULL".to_string());
            }
            format!("{column} IN ({})", values.join(", "))
        }
        6 => format!("{column} {}", rng.pick(&["IS NULL", "IS NOT NULL"])),
        7 => format!(
            "c LIKE {}",
            rng.pick(&["'h1%'", "'h%'", "'h12%'", "'%'", "'h_'"])
        ),
        8 => format!("{column} <> {}", literal(rng, column, pk_max)),
        _ => format!("NOT ({})", atom(rng, pk_max)),
    }
}

fn conjunction(rng: &mut Rng, pk_max: i64) -> String {
    let atoms: Vec<String> = (0..1 + rng.next(3)).map(|_| atom(rng, pk_max)).collect();
    atoms.join(" AND ")
}

/// A WHERE condition: mostly conjunctions (what indexes serve), sometimes a disjunction.
fn condition(rng: &mut Rng, pk_max: i64) -> String {
    if rng.next(5) == 0 {
        format!(
            "({}) OR ({})",
            conjunction(rng, pk_max),
            conjunction(rng, pk_max)
        )
    } else {
        conjunction(rng, pk_max)
    }
}

/// A random query over table `@T`, and whether its result order is defined.
fn random_query(rng: &mut Rng, pk_max: i64) -> (String, bool) {
    let condition = condition(rng, pk_max);
    let limit = 1 + rng.next(25);
    let (select, order, ordered) = match rng.next(7) {
        0 => ("pk, a, b, c, d", format!("ORDER BY pk LIMIT {limit}"), true),
        1 => (
            "pk, a, b, c, d",
            format!("ORDER BY pk DESC LIMIT {limit}"),
            true,
        ),
        2 => (
            "pk, a, b, c, d",
            format!("ORDER BY a DESC, b, pk LIMIT {limit}"),
            true,
        ),
        3 => ("pk, d, c", String::new(), false),
        4 => ("count(*), sum(b), min(c), max(d)", String::new(), false),
        5 => ("pk, a, b, c, d", "ORDER BY pk".to_string(), true),
        _ => ("*", String::new(), false),
    };
    (
        format!("SELECT {select} FROM @T WHERE {condition} {order}"),
        ordered,
    )
}

async fn result(s: &Session, sql: &str, ordered: bool) -> Result<Vec<Vec<String>>, rowdex::Error> {
    let mut out = rows(s, sql).await?;
    if !ordered {
        out.sort();
    }
    Ok(out)
}

/// The first line of EXPLAIN for `sql`.
async fn explain(s: &Session, sql: &str) -> Result<String, rowdex::Error> {
    let lines = rows(s, &format!("EXPLAIN {sql}")).await?;
    Ok(lines
        .first()
        .and_then(|line| line.first())
        .cloned()
        .unwrap_or_default())
}

/// The report of CHECK TABLE, after asserting that every index of `table` is clean: status
/// 'ok', nothing missing or dangling, one entry per row, `expected_rows` rows.
async fn assert_clean(
    s: &Session,
    table: &str,
    expected_rows: Option<usize>,
    context: &str,
) -> Result<Vec<Vec<String>>, Box<dyn std::error::Error>> {
    let report = rows(s, &format!("CHECK TABLE {table}")).await?;
    assert!(
        !report.is_empty(),
        "{context}: CHECK TABLE {table} is empty"
    );
    for index in &report {
        assert_eq!(
            (index[3].as_str(), index[4].as_str(), index[6].as_str()),
            ("0", "0", "ok"),
            "{context}: CHECK TABLE {table}: {index:?}"
        );
        assert_eq!(index[1], index[2], "{context}: rows vs entries {index:?}");
        if let Some(n) = expected_rows {
            assert_eq!(index[1], n.to_string(), "{context}: rows {index:?}");
        }
    }
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// 1. Differential queries: indexed (and salted indexed) twins answer exactly like a plain table.
// ---------------------------------------------------------------------------------------------

#[derive(Default, Debug)]
struct PathsSeen {
    queries: usize,
    index_scans: usize,
    intersections: usize,
    full_scans: usize,
}

async fn differential_queries(seed: u64, seen: &mut PathsSeen) -> TestResult {
    const ROWS: i64 = 300;
    const QUERIES: usize = 70;
    let db = Database::open_memory().await?;
    let s = db.session();
    s.execute(&format!(
        "CREATE TABLE plain {COLUMNS};
         CREATE TABLE indexed {COLUMNS};
         CREATE TABLE salted {COLUMNS} WITH (SALT_BUCKETS = 3);"
    ))
    .await?;
    // Half of the indexes exist before the data (maintained by INSERT), half are backfilled.
    s.execute(&index_ddl("salted")).await?;
    let mut rng = Rng(seed);
    let values: Vec<String> = (0..ROWS)
        .map(|pk| row_values(&mut rng, pk * 2 - 40))
        .collect();
    let values = values.join(", ");
    let changes = "UPDATE @T SET b = b + 1 WHERE pk % 7 = 0;
         UPDATE @T SET a = NULL, c = 'h2' WHERE pk % 13 = 1;
         DELETE FROM @T WHERE pk % 11 = 0;
         UPDATE @T SET pk = pk + 1000, d = 2 WHERE pk % 17 = 2;
         UPSERT INTO @T (pk, a, c) VALUES (3, 4, 'h12'), (4, 1, NULL), (2000, 0, 'h1');
         INSERT OR REPLACE INTO @T VALUES (6, NULL, 5, 'h', -3), (2001, 2, 2, '', 0);";
    for t in ["plain", "indexed", "salted"] {
        s.execute(&format!("INSERT INTO {t} VALUES {values}"))
            .await?;
        s.execute(&changes.replace("@T", t)).await?;
    }
    s.execute(&index_ddl("indexed")).await?;
    assert_clean(&s, "indexed", None, "after load").await?;
    assert_clean(&s, "salted", None, "after load").await?;

    let pk_max = ROWS * 2;
    for _ in 0..QUERIES {
        let (query, ordered) = random_query(&mut rng, pk_max);
        let plain = query.replace("@T", "plain");
        let expected = result(&s, &plain, ordered).await?;
        for t in ["indexed", "salted"] {
            let sql = query.replace("@T", t);
            let got = result(&s, &sql, ordered).await?;
            if got != expected {
                let path = explain(&s, &sql).await?;
                panic!(
                    "seed {seed:#x}: {sql}\n  plan: {path}\n  expected {} rows: {expected:?}\n  got {} rows: {got:?}",
                    expected.len(),
                    got.len()
                );
            }
        }
        let path = explain(&s, &query.replace("@T", "indexed")).await?;
        seen.queries += 1;
        if path.starts_with("INDEX SCAN") {
            seen.index_scans += 1;
        } else if path.starts_with("INDEX INTERSECTION") {
            seen.intersections += 1;
        } else if path.starts_with("FULL SCAN") {
            seen.full_scans += 1;
        }
    }
    Ok(())
}

#[tokio::test]
async fn indexed_tables_answer_like_plain_ones() -> TestResult {
    let mut seen = PathsSeen::default();
    for seed in [0x9e37_79b9_7f4a_7c15, 0x2545_f491_4f6c_dd1d] {
        differential_queries(seed, &mut seen).await?;
    }
    eprintln!("access paths of the indexed twin: {seen:?}");
    // Without these the comparison could pass without ever reading an index.
    assert!(seen.index_scans >= 10, "too few index scans: {seen:?}");
    assert!(seen.intersections >= 3, "too few intersections: {seen:?}");
    assert!(seen.full_scans >= 10, "too few full scans: {seen:?}");
    Ok(())
}

/// Fixed queries whose access path is known, so a planner change that stops using indexes (or
/// an intersection that drops rows) is caught by name rather than by chance.
#[tokio::test]
async fn index_paths_are_chosen_and_exact() -> TestResult {
    let db = Database::open_memory().await?;
    let s = db.session();
    s.execute(&format!(
        "CREATE TABLE plain {COLUMNS}; CREATE TABLE indexed {COLUMNS};"
    ))
    .await?;
    s.execute(&index_ddl("indexed")).await?;
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let values: Vec<String> = (0..400).map(|pk| row_values(&mut rng, pk)).collect();
    let values = values.join(", ");
    for t in ["plain", "indexed"] {
        s.execute(&format!("INSERT INTO {t} VALUES {values}"))
            .await?;
    }
    let cases = [
        (
            "SELECT * FROM @T WHERE a = 3 AND b = 2",
            "INDEX SCAN indexed using indexed_ab",
        ),
        (
            "SELECT * FROM @T WHERE b = 2 AND c = 'h1'",
            "INDEX INTERSECTION",
        ),
        (
            "SELECT * FROM @T WHERE b = 6 AND d = 2 AND c = 'h12'",
            "INDEX INTERSECTION",
        ),
        ("SELECT pk, c FROM @T WHERE d = 1 AND c = 'h2'", "INDEX"),
        (
            "SELECT pk, d, c FROM @T WHERE d = -3",
            "INDEX SCAN indexed using indexed_d",
        ),
        ("SELECT * FROM @T WHERE c LIKE 'h12%' AND b = 1", "INDEX"),
        ("SELECT * FROM @T WHERE b IN (1, 5) AND c IS NULL", "INDEX"),
    ];
    for (query, path) in cases {
        let sql = query.replace("@T", "indexed");
        let plan = explain(&s, &sql).await?;
        assert!(plan.starts_with(path), "{sql}: expected {path}, got {plan}");
        let expected = result(&s, &query.replace("@T", "plain"), false).await?;
        assert!(!expected.is_empty(), "{query} selects nothing");
        assert_eq!(result(&s, &sql, false).await?, expected, "{sql} ({plan})");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. Random writes keep every index exactly in step with its rows.
// ---------------------------------------------------------------------------------------------

/// A random write statement over table `@T` with primary keys in `0..40`.
fn random_write(rng: &mut Rng) -> String {
    const PK: i64 = 40;
    let pk = |rng: &mut Rng| rng.int(0, PK);
    match rng.next(10) {
        0 | 1 => {
            let first = pk(rng);
            let mut tuples = vec![row_values(rng, first)];
            if rng.next(2) == 0 {
                let second = pk(rng);
                tuples.push(row_values(rng, second));
            }
            format!("INSERT INTO @T VALUES {}", tuples.join(", "))
        }
        2 => {
            let key = pk(rng);
            let a = literal(rng, "a", PK);
            let c = rng.pick(C_VALUES);
            format!("UPSERT INTO @T (pk, a, c) VALUES ({key}, {a}, {c})")
        }
        3 => {
            let (k1, k2) = (pk(rng), pk(rng));
            let (b1, d1, b2) = (
                literal(rng, "b", PK),
                literal(rng, "d", PK),
                literal(rng, "b", PK),
            );
            format!("UPSERT INTO @T (pk, b, d) VALUES ({k1}, {b1}, {d1}), ({k2}, {b2}, NULL)")
        }
        4 => {
            let key = pk(rng);
            if rng.next(2) == 0 {
                format!("INSERT OR REPLACE INTO @T VALUES {}", row_values(rng, key))
            } else {
                let c = rng.pick(C_VALUES);
                format!("INSERT OR REPLACE INTO @T (pk, c) VALUES ({key}, {c})")
            }
        }
        5 => {
            let a = literal(rng, "a", PK);
            let c = rng.pick(C_VALUES);
            format!("UPDATE @T SET a = {a}, c = {c} WHERE {}", atom(rng, PK))
        }
        6 => {
            let b = literal(rng, "b", PK);
            format!("UPDATE @T SET d = d + 1, b = {b} WHERE {}", atom(rng, PK))
        }
        7 => {
            let shift = rng.pick(&["- 2", "- 1", "+ 1", "+ 3", "+ 40", "* -1"]);
            format!("UPDATE @T SET pk = pk {shift} WHERE {}", atom(rng, PK))
        }
        8 => format!(
            "UPDATE @T SET a = b, b = a, c = NULL WHERE {}",
            atom(rng, PK)
        ),
        _ => format!("DELETE FROM @T WHERE {}", atom(rng, PK)),
    }
}

fn outcome(result: &Result<Vec<Output>, Error>) -> Result<Vec<u64>, String> {
    match result {
        Ok(outputs) => Ok(outputs
            .iter()
            .map(|o| match o {
                Output::Affected { rows } => *rows,
                _ => 0,
            })
            .collect()),
        Err(e) => Err(e.to_string()),
    }
}

async fn random_writes(db: Database, seed: u64, steps: usize) -> TestResult {
    let s = db.session();
    s.execute(&format!(
        "CREATE TABLE plain {COLUMNS}; CREATE TABLE indexed {COLUMNS};"
    ))
    .await?;
    s.execute(&index_ddl("indexed")).await?;
    s.execute("CREATE INDEX indexed_cd ON indexed (c DESC, d) INCLUDE (a, b)")
        .await?;
    let mut rng = Rng(seed);
    let mut failed = 0;
    for step in 0..steps {
        let write = random_write(&mut rng);
        let on_plain = outcome(&s.execute(&write.replace("@T", "plain")).await);
        let sql = write.replace("@T", "indexed");
        let on_indexed = outcome(&s.execute(&sql).await);
        match (&on_plain, &on_indexed) {
            (Ok(p), Ok(i)) => assert_eq!(p, i, "seed {seed:#x} step {step}: {sql}"),
            (Err(_), Err(_)) => failed += 1,
            _ => panic!(
                "seed {seed:#x} step {step}: {sql}\n  plain: {on_plain:?}\n  indexed: {on_indexed:?}"
            ),
        }
        let all = rows(&s, "SELECT * FROM plain ORDER BY pk").await?;
        assert_eq!(
            rows(&s, "SELECT * FROM indexed ORDER BY pk").await?,
            all,
            "seed {seed:#x} step {step}: {sql}"
        );
        let context = format!("seed {seed:#x} step {step}: after {sql}");
        assert_clean(&s, "indexed", Some(all.len()), &context).await?;
        let (query, ordered) = random_query(&mut rng, 45);
        let indexed_query = query.replace("@T", "indexed");
        assert_eq!(
            result(&s, &indexed_query, ordered).await?,
            result(&s, &query.replace("@T", "plain"), ordered).await?,
            "{context}; query {indexed_query}"
        );
    }
    // The mix must really exercise both outcomes.
    assert!(
        failed > 0 && failed < steps / 2,
        "{failed} of {steps} writes failed"
    );
    Ok(())
}

#[tokio::test]
async fn random_writes_keep_indexes_exact_in_memory() -> TestResult {
    for seed in [0x0bad_5eed_1234_5678, 0x7777_aaaa_3333_1111] {
        random_writes(Database::open_memory().await?, seed, 45).await?;
    }
    Ok(())
}

#[tokio::test]
async fn random_writes_keep_indexes_exact_on_disk() -> TestResult {
    let dir = tempfile::tempdir()?;
    random_writes(Database::open(dir.path()).await?, 0x5151_e0e0_9191_4242, 45).await
}

// ---------------------------------------------------------------------------------------------
// 3. An online index build while several sessions write the same rows.
// ---------------------------------------------------------------------------------------------

const CONCURRENT_ROWS: i64 = 2_000;

/// Writer statements that must commit while each build is held mid-way.
const WRITES_DURING_PAUSE: usize = 25;

/// What the writers and the held builds share.
#[derive(Default)]
struct BuildOverlap {
    /// Writer statements run so far, committed or not.
    done: AtomicUsize,
    /// Writer statements committed so far.
    committed: AtomicUsize,
    /// Backfill pages still to let through before holding one; `None` when disarmed.
    pass: std::sync::Mutex<Option<usize>>,
    /// Writer statements committed while a backfill page was held, over every build.
    overlapped: AtomicUsize,
}

impl BuildOverlap {
    /// Holds the backfill page after the next `pages` ones.
    fn hold_after(&self, pages: usize) {
        *self.pass.lock().unwrap_or_else(|e| e.into_inner()) = Some(pages);
    }

    /// Whether this backfill page is the one to hold (which disarms the hold).
    fn take_hold(&self) -> bool {
        let mut pass = self.pass.lock().unwrap_or_else(|e| e.into_inner());
        match *pass {
            Some(0) => {
                *pass = None;
                true
            }
            Some(n) => {
                *pass = Some(n - 1);
                false
            }
            None => false,
        }
    }

    /// Waits (20 s at most) until the writers have committed `WRITES_DURING_PAUSE` more
    /// statements, and counts them.
    async fn hold(&self) {
        let start = self.committed.load(Ordering::SeqCst);
        let waiting = Instant::now();
        while self.committed.load(Ordering::SeqCst) < start + WRITES_DURING_PAUSE
            && waiting.elapsed() < Duration::from_secs(20)
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let during = self.committed.load(Ordering::SeqCst) - start;
        self.overlapped.fetch_add(during, Ordering::SeqCst);
    }
}

/// Store hooks that hold a backfill page (a transaction writing only index entries) before
/// its commit, as [`BuildOverlap`] says.
struct HoldBackfill(Arc<BuildOverlap>);

/// One transaction under [`HoldBackfill`].
struct HoldIfBackfill {
    overlap: Arc<BuildOverlap>,
    index_only: Option<bool>,
}

#[async_trait::async_trait]
impl TransactionHooks for HoldIfBackfill {
    fn on_write(&mut self, key: &[u8]) {
        let index = key.first() == Some(&0x20);
        self.index_only = Some(self.index_only.unwrap_or(true) && index);
    }

    async fn before_commit(&self) -> rowdex_store::Result<()> {
        if self.index_only == Some(true) && self.overlap.take_hold() {
            self.overlap.hold().await;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl StoreHooks for HoldBackfill {
    async fn begin(
        &self,
        inner: &dyn KvStore,
    ) -> rowdex_store::Result<Box<dyn rowdex_store::Transaction>> {
        Ok(Box::new(HookedTransaction::new(
            inner.begin().await?,
            HoldIfBackfill {
                overlap: self.0.clone(),
                index_only: None,
            },
        )))
    }
}

/// One writer: random small writes until `stop`, then a few more. Lost races and duplicate
/// keys are expected; any other error fails the test.
async fn writer(
    db: Database,
    seed: u64,
    stop: Arc<AtomicBool>,
    overlap: Arc<BuildOverlap>,
) -> Result<(usize, usize), Error> {
    let s = db.session();
    let mut rng = Rng(seed);
    let (mut ok, mut lost) = (0, 0);
    let started = Instant::now();
    let mut after_stop = 0;
    while after_stop < 20 && started.elapsed() < Duration::from_secs(60) {
        if stop.load(Ordering::Relaxed) {
            after_stop += 1;
        }
        // Half the writes hit a few hot rows, half land anywhere (in the pages being built).
        let pk = if rng.next(2) == 0 {
            rng.int(0, 12)
        } else {
            rng.int(0, CONCURRENT_ROWS)
        };
        let a = rng.int(0, 50);
        let b = rng.int(0, 10);
        let c = rng.pick(&["'x'", "'y'", "'z'", "NULL"]);
        let sql = match rng.next(8) {
            0 | 1 => format!("UPDATE t SET a = {a}, b = {b} WHERE pk = {pk}"),
            2 => format!(
                "UPDATE t SET a = a + 1, c = {c} WHERE pk BETWEEN {pk} AND {}",
                pk + 3
            ),
            3 => format!("INSERT INTO t VALUES ({pk}, {a}, {b}, {c})"),
            4 => format!("DELETE FROM t WHERE pk = {pk}"),
            5 => format!("UPSERT INTO t (pk, b, c) VALUES ({pk}, {b}, {c})"),
            6 => format!("UPDATE t SET pk = {} WHERE pk = {pk}", rng.int(0, 12)),
            _ => format!("UPDATE t SET c = {c}, b = {b} WHERE a = {a} AND pk < 12"),
        };
        match s.execute(&sql).await {
            Ok(_) => {
                ok += 1;
                overlap.committed.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) if e.is_retryable() || matches!(e, Error::DuplicateKey { .. }) => lost += 1,
            Err(e) => return Err(e),
        }
        overlap.done.fetch_add(1, Ordering::SeqCst);
    }
    Ok((ok, lost))
}

/// Two indexes built over 2,000 rows while four sessions write them; each build is held after
/// its first backfill page until the writers have committed `WRITES_DURING_PAUSE` statements,
/// so the writes certainly land in the middle of the build.
async fn online_build(inner: Arc<dyn KvStore>) -> TestResult {
    let overlap = Arc::new(BuildOverlap::default());
    let store = Arc::new(HookedStore::new(inner, HoldBackfill(overlap.clone())));
    let db = Database::with_store(store as Arc<dyn KvStore>).await?;
    let s = db.session();
    s.execute("CREATE TABLE t (pk INT PRIMARY KEY, a INT, b INT, c TEXT)")
        .await?;
    let mut rng = Rng(0x0dd_ba11_c0ff_ee00);
    for chunk in 0..CONCURRENT_ROWS / 500 {
        let values: Vec<String> = (chunk * 500..(chunk + 1) * 500)
            .map(|pk| {
                let c = rng.pick(&["'x'", "'y'", "'z'", "NULL"]);
                format!("({pk}, {}, {}, {c})", rng.int(0, 50), rng.int(0, 10))
            })
            .collect();
        s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .await?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|i| {
            tokio::spawn(writer(
                db.clone(),
                0x1000_0000_0000_0001 + i * 0x9e37_79b9,
                stop.clone(),
                overlap.clone(),
            ))
        })
        .collect();
    let waiting = Instant::now();
    while overlap.done.load(Ordering::SeqCst) < 10 && waiting.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let ddls = [
        "CREATE INDEX ia ON t (a)",
        "CREATE INDEX ibc ON t (b DESC, c) INCLUDE (a)",
    ];
    for ddl in ddls {
        // Held after its first page: the second of four is where the writers get in.
        overlap.hold_after(1);
        // A build that loses too many races gives up cleanly; a user would run it again.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match s.execute(ddl).await {
                Ok(_) => break,
                Err(e) if attempt < 10 && e.is_retryable() => {
                    eprintln!("online build: {ddl} lost its races ({e}); running it again");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut totals = (0, 0);
    for w in writers {
        let (ok, lost) = w.await??;
        totals.0 += ok;
        totals.1 += lost;
    }
    let overlapped = overlap.overlapped.load(Ordering::SeqCst);
    eprintln!(
        "online build: {overlapped} writes committed while a build was held mid-way; {} ok, {} lost races",
        totals.0, totals.1
    );
    assert!(
        overlapped >= ddls.len() * WRITES_DURING_PAUSE,
        "only {overlapped} writes committed in the middle of the builds"
    );

    let all = rows(&s, "SELECT pk, a, b, c FROM t ORDER BY pk").await?;
    assert_clean(&s, "t", Some(all.len()), "after the online build").await?;
    // Every index lookup agrees with filtering the full scan.
    let mut used_index = 0;
    for a in ["0", "7", "13", "31", "49", "50"] {
        let sql = format!("SELECT pk, a, b, c FROM t WHERE a = {a} ORDER BY pk");
        let expected: Vec<Vec<String>> = all.iter().filter(|r| r[1] == a).cloned().collect();
        assert_eq!(rows(&s, &sql).await?, expected, "{sql}");
        used_index += usize::from(explain(&s, &sql).await?.starts_with("INDEX"));
    }
    for (b, c) in [("3", "x"), ("0", "y"), ("9", "z"), ("5", "x")] {
        let sql = format!("SELECT pk, a FROM t WHERE b = {b} AND c = '{c}' ORDER BY pk");
        let expected: Vec<Vec<String>> = all
            .iter()
            .filter(|r| r[2] == b && r[3] == c)
            .map(|r| vec![r[0].clone(), r[1].clone()])
            .collect();
        assert_eq!(rows(&s, &sql).await?, expected, "{sql}");
        used_index += usize::from(explain(&s, &sql).await?.starts_with("INDEX"));
    }
    assert!(
        used_index >= 8,
        "only {used_index} of 10 lookups used an index"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn online_index_build_with_concurrent_writers_in_memory() -> TestResult {
    online_build(Arc::new(MemoryStore::new())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn online_index_build_with_concurrent_writers_on_disk() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = rowdex_store::FjallStore::open(dir.path(), rowdex_store::Durability::default())?;
    online_build(Arc::new(store)).await
}

// ---------------------------------------------------------------------------------------------
// 4. CHECK finds an index corrupted behind the engine's back; REPAIR fixes it.
// ---------------------------------------------------------------------------------------------

/// Every index entry in the store (all keys under the index tag byte).
async fn index_entries(
    store: &MemoryStore,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, rowdex_store::StoreError> {
    let page = store
        .scan_page(&KeyRange::prefix(&[0x20]), Direction::Forward, 100_000)
        .await?;
    Ok(page.entries)
}

#[tokio::test]
async fn check_finds_and_repair_fixes_a_corrupted_index() -> TestResult {
    let store = Arc::new(MemoryStore::new());
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE t (pk INT PRIMARY KEY, a INT, c TEXT);
         CREATE INDEX ia ON t (a) INCLUDE (c);
         INSERT INTO t VALUES (1, 10, 'p'), (2, 20, 'q'), (3, 30, 'r'), (4, 10, 's'),
             (5, 50, 't'), (6, 60, 'u'), (7, 10, NULL), (8, 80, 'w'), (9, 90, 'x'), (10, 10, 'y');",
    )
    .await?;
    assert_clean(&s, "t", Some(10), "before the damage").await?;
    let before = index_entries(&store).await?;
    assert_eq!(before.len(), 10);
    s.execute("DELETE FROM t WHERE pk = 5").await?;
    let after = index_entries(&store).await?;
    let gone: Vec<&(Vec<u8>, Vec<u8>)> = before.iter().filter(|e| !after.contains(e)).collect();
    assert_eq!(gone.len(), 1, "DELETE removes exactly its entry");

    // Damage: the deleted row's entry comes back (dangling), a live row loses its entry (missing).
    let mut batch = WriteBatch::new();
    batch.put(gone[0].0.clone(), gone[0].1.clone());
    batch.delete(after[0].0.clone());
    store.write(batch).await?;

    let corrupt = table(&[&["ia", "9", "9", "1", "1", "0", "corrupt"]]);
    assert_eq!(rows(&s, "CHECK TABLE t").await?, corrupt);
    assert_eq!(rows(&s, "CHECK INDEX ia").await?, corrupt);
    // (Its `entries` may count the restored entry too: rows are repaired before entries are read.)
    let report = rows(&s, "REPAIR INDEX ia").await?;
    assert_eq!(report.len(), 1);
    assert_eq!(
        [
            &report[0][0],
            &report[0][1],
            &report[0][3],
            &report[0][4],
            &report[0][5],
            &report[0][6]
        ],
        ["ia", "9", "1", "1", "2", "repaired"],
        "{report:?}"
    );
    assert_clean(&s, "t", Some(9), "after REPAIR INDEX").await?;
    assert_eq!(index_entries(&store).await?, after);

    // A stale INCLUDE value: the key is right, the stored value is not.
    let (key, _) = &after[3];
    let mut batch = WriteBatch::new();
    batch.put(key.clone(), after[4].1.clone());
    store.write(batch).await?;
    let report = rows(&s, "CHECK TABLE t").await?;
    assert_eq!(report[0][6], "corrupt", "{report:?}");
    let report = rows(&s, "REPAIR TABLE t").await?;
    assert_eq!(report[0][6], "repaired", "{report:?}");
    assert_clean(&s, "t", Some(9), "after REPAIR TABLE").await?;
    assert_eq!(index_entries(&store).await?, after);
    assert_eq!(
        rows(&s, "SELECT pk, c FROM t WHERE a = 10 ORDER BY pk").await?,
        table(&[&["1", "p"], &["4", "s"], &["7", "NULL"], &["10", "y"]])
    );

    // DROP INDEX takes its entries with it.
    s.execute("DROP INDEX ia").await?;
    assert!(index_entries(&store).await?.is_empty());
    assert_eq!(rows(&s, "CHECK TABLE t").await?, Vec::<Vec<String>>::new());
    Ok(())
}

/// An index on an expression is checked and repaired like any other: its entries hold the
/// expression's value (the hidden column every write computes), and a stale entry, one holding
/// the value of a row's earlier version, is found dangling.
#[tokio::test]
async fn check_finds_and_repair_fixes_a_corrupted_expression_index() -> TestResult {
    let store = Arc::new(MemoryStore::new());
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE t (pk INT PRIMARY KEY, email TEXT);
         INSERT INTO t VALUES (1, 'Ann@X'), (2, 'bob@x'), (3, 'CY@x'), (4, 'ann@x');
         CREATE INDEX ie ON t (lower(email));",
    )
    .await?;
    assert_clean(&s, "t", Some(4), "after the build").await?;
    let by_expression = "SELECT pk FROM t WHERE lower(email) = 'ann@x' ORDER BY pk";
    assert!(
        explain(&s, by_expression)
            .await?
            .starts_with("INDEX SCAN t using ie"),
        "the expression reads its index"
    );
    assert_eq!(rows(&s, by_expression).await?, table(&[&["1"], &["4"]]));

    // Damage: after row 1's email changes, its old entry (lower = 'ann@x') comes back.
    let before = index_entries(&store).await?;
    s.execute("UPDATE t SET email = 'Zed@X' WHERE pk = 1")
        .await?;
    let after = index_entries(&store).await?;
    let stale: Vec<&(Vec<u8>, Vec<u8>)> = before.iter().filter(|e| !after.contains(e)).collect();
    assert_eq!(stale.len(), 1, "the UPDATE replaced exactly one entry");
    let mut batch = WriteBatch::new();
    batch.put(stale[0].0.clone(), stale[0].1.clone());
    store.write(batch).await?;
    // The index answers wrongly until repaired: row 1 found by its old value.
    assert_eq!(rows(&s, by_expression).await?, table(&[&["1"], &["4"]]));

    let corrupt = table(&[&["ie", "4", "5", "0", "1", "0", "corrupt"]]);
    assert_eq!(rows(&s, "CHECK INDEX ie").await?, corrupt);
    let report = rows(&s, "REPAIR TABLE t").await?;
    assert_eq!(report[0][6], "repaired", "{report:?}");
    assert_clean(&s, "t", Some(4), "after REPAIR TABLE").await?;
    assert_eq!(index_entries(&store).await?, after);
    assert_eq!(rows(&s, by_expression).await?, table(&[&["4"]]));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 5. Indexes survive closing and reopening a durable database.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn indexes_survive_reopen() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(0x4e0e_0e0e_5eed_0001);
    let values: Vec<String> = (0..300).map(|pk| row_values(&mut rng, pk)).collect();
    {
        let db = Database::open(dir.path()).await?;
        let s = db.session();
        s.execute(&format!("CREATE TABLE t {COLUMNS}")).await?;
        s.execute(
            "CREATE INDEX tb ON t (b);
             CREATE INDEX tad ON t (a DESC, d) INCLUDE (c);",
        )
        .await?;
        s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
            .await?;
        // Built after the data (a backfill), then the table changes once more.
        s.execute("CREATE INDEX tc ON t (c)").await?;
        s.execute(
            "CREATE TABLE u (k INT PRIMARY KEY, email TEXT);
             INSERT INTO u VALUES (1, 'a'), (2, 'b'), (3, NULL), (4, NULL);
             CREATE UNIQUE INDEX u_email ON u (email);",
        )
        .await?;
        s.execute("UPDATE t SET b = 6, c = 'h12' WHERE pk < 20; DELETE FROM t WHERE pk >= 290;")
            .await?;
    }
    let db = Database::open(dir.path()).await?;
    let s = db.session();
    let expected_indexes = table(&[
        &["t", "tb", "NO", "b ASC", "", "ready"],
        &["t", "tad", "NO", "a DESC, d ASC", "c", "ready"],
        &["t", "tc", "NO", "c ASC", "", "ready"],
    ]);
    let mut shown = rows(&s, "SHOW INDEXES FROM t").await?;
    shown.sort_by_key(|r| {
        expected_indexes
            .iter()
            .position(|e| e[1] == r[1])
            .unwrap_or(usize::MAX)
    });
    assert_eq!(shown, expected_indexes);
    assert_eq!(
        rows(&s, "SHOW INDEXES FROM u").await?,
        table(&[&["u", "u_email", "YES", "email ASC", "", "ready"]])
    );
    assert_clean(&s, "t", Some(290), "after reopen").await?;

    let all = rows(&s, "SELECT * FROM t ORDER BY pk").await?;
    // On disk a row lookup costs about twelve sequential reads, so these are chosen because
    // they need none (covering) or few.
    type Keep = fn(&[String]) -> bool;
    let cases: [(&str, &str, Keep, &[usize]); 3] = [
        (
            "SELECT pk, b FROM t WHERE b = 6 ORDER BY pk",
            "INDEX SCAN t using tb",
            |r| r[2] == "6",
            &[0, 2],
        ),
        (
            "SELECT pk, a, d, c FROM t WHERE a = 4 AND d = -1 ORDER BY pk",
            "INDEX SCAN t using tad",
            |r| r[1] == "4" && r[4] == "-1",
            &[0, 1, 4, 3],
        ),
        (
            "SELECT pk FROM t WHERE c = 'h12' AND b = 6 ORDER BY pk",
            "INDEX",
            |r| r[3] == "h12" && r[2] == "6",
            &[0],
        ),
    ];
    for (sql, path, keep, columns) in cases {
        let plan = explain(&s, sql).await?;
        assert!(plan.starts_with(path), "{sql}: expected {path}, got {plan}");
        let expected: Vec<Vec<String>> = all
            .iter()
            .filter(|r| keep(r))
            .map(|r| columns.iter().map(|c| r[*c].clone()).collect())
            .collect();
        assert!(!expected.is_empty(), "{sql} selects nothing");
        assert_eq!(rows(&s, sql).await?, expected, "{sql}");
    }

    // Still maintained after the reopen, and UNIQUE still enforced (NULLs may repeat; a swap
    // within one statement is fine).
    for sql in [
        "INSERT INTO u VALUES (5, 'a')",
        "UPDATE u SET email = 'b' WHERE k = 1",
        "UPSERT INTO u (k, email) VALUES (3, 'b')",
    ] {
        let error = s.execute(sql).await.err();
        assert!(
            matches!(error, Some(Error::UniqueViolation { .. })),
            "{sql}: {error:?}"
        );
    }
    s.execute(
        "INSERT INTO u VALUES (5, NULL);
         UPDATE u SET email = CASE k WHEN 1 THEN 'b' ELSE 'a' END WHERE k IN (1, 2);",
    )
    .await?;
    assert_eq!(
        rows(&s, "SELECT k FROM u WHERE email = 'a'").await?,
        table(&[&["2"]])
    );
    assert_clean(&s, "u", Some(5), "after the swap").await?;
    s.execute(
        "UPDATE t SET a = 4, d = -1 WHERE pk = 100; INSERT INTO t VALUES (1000, 4, 6, 'h', -1)",
    )
    .await?;
    assert_clean(&s, "t", Some(291), "after writes on the reopened database").await?;
    let pks = rows(&s, "SELECT pk FROM t WHERE a = 4 AND d = -1 AND pk >= 100").await?;
    assert!(pks.contains(&vec!["100".to_string()]) && pks.contains(&vec!["1000".to_string()]));
    s.execute("DROP INDEX tb").await?;
    assert_eq!(rows(&s, "SHOW INDEXES FROM t").await?.len(), 2);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 6. A build that keeps losing races fails cleanly, with an error that says "retry".
// ---------------------------------------------------------------------------------------------

/// Store hooks under which transactions that write only index entries (backfill and repair
/// pages) lose every race while `starve` is set. Row writes go through untouched.
#[derive(Default)]
struct Starving {
    starve: AtomicBool,
}

/// A transaction's hooks: fails the commit of an index-only transaction begun while starving.
struct IndexOnlyLoses {
    starve: bool,
    index_only: Option<bool>,
}

#[async_trait::async_trait]
impl TransactionHooks for IndexOnlyLoses {
    fn on_write(&mut self, key: &[u8]) {
        let index = key.first() == Some(&0x20);
        self.index_only = Some(self.index_only.unwrap_or(true) && index);
    }

    async fn before_commit(&self) -> rowdex_store::Result<()> {
        if self.starve && self.index_only == Some(true) {
            return Err(rowdex_store::StoreError::Conflict);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl StoreHooks for Starving {
    async fn begin(
        &self,
        inner: &dyn KvStore,
    ) -> rowdex_store::Result<Box<dyn rowdex_store::Transaction>> {
        Ok(Box::new(HookedTransaction::new(
            inner.begin().await?,
            IndexOnlyLoses {
                starve: self.starve.load(Ordering::Relaxed),
                index_only: None,
            },
        )))
    }
}

#[tokio::test]
async fn a_starved_index_build_fails_retryably_and_leaves_nothing() -> TestResult {
    let store = Arc::new(HookedStore::new(
        Arc::new(MemoryStore::new()),
        Starving::default(),
    ));
    let db = Database::with_store(store.clone() as Arc<dyn KvStore>).await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE t (pk INT PRIMARY KEY, a INT);
         INSERT INTO t VALUES (1, 10), (2, 20), (3, 10);",
    )
    .await?;
    store.hooks().starve.store(true, Ordering::Relaxed);
    let error = s.execute("CREATE INDEX ia ON t (a)").await.err();
    store.hooks().starve.store(false, Ordering::Relaxed);
    // Nothing of the failed build is left behind, whatever the error says.
    assert_eq!(
        rows(&s, "SHOW INDEXES FROM t").await?,
        Vec::<Vec<String>>::new()
    );
    let entries = store
        .inner()
        .scan_page(&KeyRange::prefix(&[0x20]), Direction::Forward, 10)
        .await?;
    assert!(entries.entries.is_empty(), "{:?}", entries.entries);
    // It lost races with writers, so running it again may succeed: the error must say so, as
    // the write statements' WriteConflict does.
    let error = error.ok_or("the starved build succeeded")?;
    assert!(
        error.is_retryable(),
        "a CREATE INDEX that lost its races fails with a non-retryable error: {error:?} ({error})"
    );
    s.execute("CREATE INDEX ia ON t (a)").await?;
    assert_clean(&s, "t", Some(3), "after building again").await?;
    Ok(())
}
