//! rowdex side by side with what a user would pick instead (SQLite through rusqlite, WAL,
//! synchronous=NORMAL, prepared statements, the same indexes) and with the physical limit (the
//! raw fjall / memory store doing the same key operations by hand, without SQL).
//!
//! Three tables of `--rows` rows each (default 1 000 000; `--quick` is 100 000 and fewer
//! repetitions): `orders` (id key; `user_id` indexed, 10 rows per user; `country` indexed, 50
//! values), `pairs` (`a` indexed, 10 % selective; `b` indexed, 1 %) and `actions` (key `(uid,
//! ts DESC)`, 1 000 actions per user). Cases:
//!
//! 1. point get by primary key, prepared and as ad-hoc SQL text;
//! 2. equality lookup through a secondary index, 10 rows;
//! 3. `a = ? AND b = ?` (about 0.1 %): rowdex's intersection against SQLite's plan; the raw
//!    figure reads the sparser index range and looks up the matching rows;
//! 4. `WHERE uid = ? ORDER BY ts DESC LIMIT 10 OFFSET 20`, and the keyset form;
//! 5. bulk load of `orders` from CSV with its two indexes (COPY for rowdex);
//! 6. `GROUP BY country` over every row (the raw figure is a full scan).
//!
//! Each engine runs in a child process of its own, so that its peak memory (VmHWM, reset before
//! cases 5 and 6) is its own. Run: `cargo bench -p rowdex --bench peers [-- --quick] [--rows N]
//! [--engines rowdex-memory,sqlite,...] [--cases point,intersect,...]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rowdex::{Database, Datum, Session};
use rowdex_store::{Direction, Durability, FjallStore, KeyRange, KvStore, MemoryStore, WriteBatch};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

const ENGINES: [&str; 5] = [
    "rowdex-memory",
    "rowdex-fjall",
    "sqlite",
    "raw-memory",
    "raw-fjall",
];

const COUNTRIES: usize = 50;
const ROWS_PER_USER: u64 = 10;
const ACTIONS_PER_USER: u64 = 1000;

/// splitmix64: deterministic pseudo-random values from a row number.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The data set, a pure function of the row count.
#[derive(Clone, Copy)]
struct Data {
    rows: u64,
}

impl Data {
    fn users(self) -> u64 {
        (self.rows / ROWS_PER_USER).max(1)
    }
    fn order(self, id: u64) -> (u64, String, f64, String) {
        let user = id % self.users();
        let country = format!("country{:02}", mix(id) % COUNTRIES as u64);
        let amount = (mix(id ^ 7) % 100_000) as f64 / 100.0;
        (user, country, amount, format!("note for order {id}"))
    }
    fn pair(self, id: u64) -> (u64, u64) {
        (mix(id) % 10, mix(id ^ 0xabcd) % 100)
    }
    fn action_users(self) -> u64 {
        (self.rows / ACTIONS_PER_USER).max(1)
    }
    /// (uid, ts, kind) of action row `n`.
    fn action(self, n: u64) -> (u64, u64, u64) {
        let uid = n / ACTIONS_PER_USER;
        (uid, 1_000_000 + (n % ACTIONS_PER_USER) * 7, n % 13)
    }
}

/// Repetitions of each measured operation.
#[derive(Clone)]
struct Reps {
    /// Only these timed cases run (`--cases point,intersect,...`); `None` runs all of them. The
    /// load always runs.
    cases: Option<Vec<String>>,
    point: u64,
    lookup: u64,
    intersect: u64,
    aggregate: u64,
}

impl Reps {
    /// Whether the timed case `case` (a `RESULT` name such as `intersect_us`) is to run: a
    /// `--cases` entry matches a case whose name starts with it.
    fn wants(&self, case: &str) -> bool {
        self.cases
            .as_ref()
            .is_none_or(|cases| cases.iter().any(|c| case.starts_with(c.as_str())))
    }
}

/// What one engine does: set up, load, and each case's operation on its i-th input.
trait Engine {
    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()>;
    async fn load_rest(&mut self) -> BenchResult<()>;
    async fn point_get(&mut self, id: u64) -> BenchResult<usize>;
    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize>;
    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize>;
    async fn intersect(&mut self, a: u64, b: u64) -> BenchResult<usize>;
    async fn page(&mut self, uid: u64) -> BenchResult<usize>;
    async fn page_keyset(&mut self, uid: u64, after_ts: u64) -> BenchResult<usize>;
    async fn aggregate(&mut self) -> BenchResult<usize>;
    /// Reads every table once, so that the timed cases see warm caches (fjall's block cache,
    /// SQLite's page cache and the OS's) rather than the first touch of each block.
    async fn warm(&mut self) -> BenchResult<usize>;
}

// ---------------------------------------------------------------- rowdex

struct Rowdex {
    session: Session,
    data: Data,
    point: Option<rowdex::Prepared>,
    lookup: Option<rowdex::Prepared>,
    intersect: Option<rowdex::Prepared>,
    page: Option<rowdex::Prepared>,
    keyset: Option<rowdex::Prepared>,
}

fn count_rows(batches: &[rowdex::arrow::record_batch::RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

fn prepared(slot: &Option<rowdex::Prepared>) -> BenchResult<&rowdex::Prepared> {
    slot.as_ref().ok_or_else(|| "statement not prepared".into())
}

impl Rowdex {
    async fn new(db: Database, data: Data) -> BenchResult<Rowdex> {
        let session = db.session();
        session
            .execute(
                "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, country TEXT,
                   amount DOUBLE, note TEXT);
                 CREATE INDEX orders_user ON orders (user_id);
                 CREATE INDEX orders_country ON orders (country);",
            )
            .await?;
        Ok(Rowdex {
            session,
            data,
            point: None,
            lookup: None,
            intersect: None,
            page: None,
            keyset: None,
        })
    }
}

impl Engine for Rowdex {
    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()> {
        self.session
            .execute(&format!("COPY orders FROM '{}'", csv.display()))
            .await?;
        Ok(())
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        let dir = tempfile::tempdir()?;
        let pairs = dir.path().join("pairs.csv");
        let actions = dir.path().join("actions.csv");
        write_pairs_csv(self.data, &pairs)?;
        write_actions_csv(self.data, &actions)?;
        self.session
            .execute(&format!(
                "CREATE TABLE pairs (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, pad TEXT);
                 CREATE INDEX pairs_a ON pairs (a);
                 CREATE INDEX pairs_b ON pairs (b);
                 COPY pairs FROM '{}';
                 CREATE TABLE actions (uid BIGINT, ts BIGINT, kind BIGINT,
                   PRIMARY KEY (uid, ts DESC));
                 COPY actions FROM '{}';",
                pairs.display(),
                actions.display()
            ))
            .await?;
        let s = &self.session;
        self.point = Some(s.prepare("SELECT * FROM orders WHERE id = $1")?);
        self.lookup = Some(s.prepare("SELECT * FROM orders WHERE user_id = $1")?);
        self.intersect = Some(s.prepare("SELECT * FROM pairs WHERE a = $1 AND b = $2")?);
        self.page = Some(
            s.prepare("SELECT * FROM actions WHERE uid = $1 ORDER BY ts DESC LIMIT 10 OFFSET 20")?,
        );
        self.keyset = Some(s.prepare(
            "SELECT * FROM actions WHERE uid = $1 AND (uid, ts) < ($1, $2) ORDER BY ts DESC LIMIT 10",
        )?);
        Ok(())
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        let batches = prepared(&self.point)?
            .query(&[Datum::Int(id as i64)])
            .await?;
        Ok(count_rows(&batches))
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        let sql = format!("SELECT * FROM orders WHERE id = {id}");
        Ok(count_rows(&self.session.query(&sql).await?))
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        let batches = prepared(&self.lookup)?
            .query(&[Datum::Int(user as i64)])
            .await?;
        Ok(count_rows(&batches))
    }

    async fn intersect(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        let params = [Datum::Int(a as i64), Datum::Int(b as i64)];
        Ok(count_rows(
            &prepared(&self.intersect)?.query(&params).await?,
        ))
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        let batches = prepared(&self.page)?
            .query(&[Datum::Int(uid as i64)])
            .await?;
        Ok(count_rows(&batches))
    }

    async fn page_keyset(&mut self, uid: u64, after_ts: u64) -> BenchResult<usize> {
        let params = [Datum::Int(uid as i64), Datum::Int(after_ts as i64)];
        Ok(count_rows(&prepared(&self.keyset)?.query(&params).await?))
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        let sql = "SELECT country, count(*), sum(amount) FROM orders GROUP BY country";
        Ok(count_rows(&self.session.query(sql).await?))
    }

    async fn warm(&mut self) -> BenchResult<usize> {
        let mut n = 0;
        for table in ["orders", "pairs", "actions"] {
            // count(*) reads every entry of the table without building a result.
            let sql = format!("SELECT count(*) FROM {table}");
            n += count_rows(&self.session.query(&sql).await?);
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------- SQLite

struct Sqlite {
    conn: rusqlite::Connection,
    data: Data,
}

impl Sqlite {
    fn new(path: &Path, data: Data) -> BenchResult<Sqlite> {
        let conn = rusqlite::Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, country TEXT,
               amount REAL, note TEXT);
             CREATE INDEX orders_user ON orders (user_id);
             CREATE INDEX orders_country ON orders (country);",
        )?;
        Ok(Sqlite { conn, data })
    }

    fn count(&self, sql: &str, params: impl rusqlite::Params) -> BenchResult<usize> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let mut rows = statement.query(params)?;
        let mut n = 0;
        while rows.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }
}

impl Engine for Sqlite {
    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()> {
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5)")?;
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_path(csv)?;
            for record in reader.records() {
                let record = record?;
                let field = |i: usize| record.get(i).unwrap_or_default();
                insert.execute(rusqlite::params![
                    field(0).parse::<i64>()?,
                    field(1).parse::<i64>()?,
                    field(2),
                    field(3).parse::<f64>()?,
                    field(4)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        let data = self.data;
        self.conn.execute_batch(
            "CREATE TABLE pairs (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, pad TEXT);
             CREATE INDEX pairs_a ON pairs (a);
             CREATE INDEX pairs_b ON pairs (b);
             CREATE TABLE actions (uid INTEGER, ts INTEGER, kind INTEGER,
               PRIMARY KEY (uid, ts DESC)) WITHOUT ROWID;",
        )?;
        let tx = self.conn.transaction()?;
        {
            let mut insert = tx.prepare("INSERT INTO pairs VALUES (?1, ?2, ?3, ?4)")?;
            for id in 0..data.rows {
                let (a, b) = data.pair(id);
                insert.execute(rusqlite::params![id as i64, a as i64, b as i64, pad(id)])?;
            }
            let mut insert = tx.prepare("INSERT INTO actions VALUES (?1, ?2, ?3)")?;
            for n in 0..data.rows {
                let (uid, ts, kind) = data.action(n);
                insert.execute(rusqlite::params![uid as i64, ts as i64, kind as i64])?;
            }
        }
        tx.commit()?;
        self.conn.execute_batch("ANALYZE")?;
        Ok(())
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        self.count("SELECT * FROM orders WHERE id = ?1", [id as i64])
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        let sql = format!("SELECT * FROM orders WHERE id = {id}");
        let mut statement = self.conn.prepare(&sql)?;
        let mut rows = statement.query([])?;
        let mut n = 0;
        while rows.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        self.count("SELECT * FROM orders WHERE user_id = ?1", [user as i64])
    }

    async fn intersect(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        self.count(
            "SELECT * FROM pairs WHERE a = ?1 AND b = ?2",
            [a as i64, b as i64],
        )
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        self.count(
            "SELECT * FROM actions WHERE uid = ?1 ORDER BY ts DESC LIMIT 10 OFFSET 20",
            [uid as i64],
        )
    }

    async fn page_keyset(&mut self, uid: u64, after_ts: u64) -> BenchResult<usize> {
        self.count(
            "SELECT * FROM actions WHERE uid = ?1 AND (uid, ts) < (?1, ?2) ORDER BY ts DESC LIMIT 10",
            [uid as i64, after_ts as i64],
        )
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        self.count(
            "SELECT country, count(*), sum(amount) FROM orders GROUP BY country",
            [],
        )
    }

    async fn warm(&mut self) -> BenchResult<usize> {
        let mut n = 0;
        for table in ["orders", "pairs", "actions"] {
            n += self.count(&format!("SELECT * FROM {table}"), [])?;
        }
        Ok(n)
    }
}

// ---------------------------------------------------------------- raw store

/// The same key operations written by hand against the store: fixed-width big-endian keys, a
/// row value of the row's fields, index entries `value ‖ id` with empty values.
struct Raw {
    store: Arc<dyn KvStore>,
    data: Data,
}

fn be(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const RAW_BATCH: u64 = 10_000;

impl Raw {
    async fn scan(
        &self,
        range: KeyRange,
        direction: Direction,
        limit: usize,
    ) -> BenchResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let page = self.store.scan_page(&range, direction, limit).await?;
        Ok(page.entries)
    }

    async fn scan_all(&self, range: KeyRange) -> BenchResult<usize> {
        let mut next = Some(range);
        let mut n = 0;
        while let Some(range) = next {
            let page = self
                .store
                .scan_page(&range, Direction::Forward, 1024)
                .await?;
            n += page.entries.len();
            next = page.resume;
        }
        Ok(n)
    }
}

impl Engine for Raw {
    async fn load_orders(&mut self, _csv: &Path) -> BenchResult<()> {
        let mut id = 0;
        while id < self.data.rows {
            let mut batch = WriteBatch::new();
            for id in id..(id + RAW_BATCH).min(self.data.rows) {
                let (user, country, amount, note) = self.data.order(id);
                let value = be(&[
                    &user.to_be_bytes(),
                    country.as_bytes(),
                    &amount.to_be_bytes(),
                    note.as_bytes(),
                ]);
                batch.put(be(&[b"o", &id.to_be_bytes()]), value);
                batch.put(
                    be(&[b"u", &user.to_be_bytes(), &id.to_be_bytes()]),
                    Vec::new(),
                );
                batch.put(
                    be(&[b"c", country.as_bytes(), &id.to_be_bytes()]),
                    Vec::new(),
                );
            }
            self.store.write(batch).await?;
            id += RAW_BATCH;
        }
        Ok(())
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        let mut id = 0;
        while id < self.data.rows {
            let mut batch = WriteBatch::new();
            for id in id..(id + RAW_BATCH).min(self.data.rows) {
                let (a, b) = self.data.pair(id);
                let key = id.to_be_bytes();
                batch.put(
                    be(&[b"p", &key]),
                    be(&[&a.to_be_bytes(), &b.to_be_bytes(), pad(id).as_bytes()]),
                );
                batch.put(be(&[b"a", &[a as u8], &key]), Vec::new());
                batch.put(be(&[b"b", &[b as u8], &key]), Vec::new());
                let (uid, ts, kind) = self.data.action(id);
                batch.put(
                    be(&[b"t", &uid.to_be_bytes(), &(u64::MAX - ts).to_be_bytes()]),
                    kind.to_be_bytes().to_vec(),
                );
            }
            self.store.write(batch).await?;
            id += RAW_BATCH;
        }
        Ok(())
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        let value = self.store.get(&be(&[b"o", &id.to_be_bytes()])).await?;
        Ok(usize::from(value.is_some()))
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        self.point_get(id).await
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        let prefix = be(&[b"u", &user.to_be_bytes()]);
        let entries = self
            .scan(KeyRange::prefix(&prefix), Direction::Forward, 64)
            .await?;
        let keys: Vec<Vec<u8>> = entries
            .iter()
            .map(|(key, _)| be(&[b"o", &key[prefix.len()..]]))
            .collect();
        let rows = self.store.multi_get(&keys).await?;
        Ok(rows.iter().flatten().count())
    }

    /// The optimum the issue sets: read the sparser range (`b`) in full and look up the rows
    /// that also match `a` (which the raw layout cannot know without reading: it is taken from
    /// the data generator, for free).
    async fn intersect(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        let prefix = be(&[b"b", &[b as u8]]);
        let mut next = Some(KeyRange::prefix(&prefix));
        let mut keys = Vec::new();
        while let Some(range) = next {
            let page = self
                .store
                .scan_page(&range, Direction::Forward, 1024)
                .await?;
            for (key, _) in &page.entries {
                let id_bytes = &key[prefix.len()..];
                let id = u64::from_be_bytes(id_bytes.try_into()?);
                if self.data.pair(id).0 == a {
                    keys.push(be(&[b"p", id_bytes]));
                }
            }
            next = page.resume;
        }
        let rows = self.store.multi_get(&keys).await?;
        Ok(rows.iter().flatten().count())
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        let prefix = be(&[b"t", &uid.to_be_bytes()]);
        let entries = self
            .scan(KeyRange::prefix(&prefix), Direction::Forward, 30)
            .await?;
        Ok(entries.len().saturating_sub(20))
    }

    async fn page_keyset(&mut self, uid: u64, after_ts: u64) -> BenchResult<usize> {
        let prefix = be(&[b"t", &uid.to_be_bytes()]);
        let start = be(&[&prefix, &(u64::MAX - after_ts + 1).to_be_bytes()]);
        let range = KeyRange {
            start,
            end: KeyRange::prefix(&prefix).end,
        };
        Ok(self.scan(range, Direction::Forward, 10).await?.len())
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        self.scan_all(KeyRange::prefix(b"o")).await
    }

    async fn warm(&mut self) -> BenchResult<usize> {
        self.scan_all(KeyRange::prefix(b"")).await
    }
}

fn pad(id: u64) -> String {
    format!("pad {id:08}")
}

fn write_orders_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for id in 0..data.rows {
        let (user, country, amount, note) = data.order(id);
        out.write_record([
            id.to_string(),
            user.to_string(),
            country,
            amount.to_string(),
            note,
        ])?;
    }
    out.flush()?;
    Ok(())
}

fn write_pairs_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for id in 0..data.rows {
        let (a, b) = data.pair(id);
        out.write_record([id.to_string(), a.to_string(), b.to_string(), pad(id)])?;
    }
    out.flush()?;
    Ok(())
}

fn write_actions_csv(data: Data, path: &Path) -> BenchResult<()> {
    let mut out = csv::Writer::from_path(path)?;
    for n in 0..data.rows {
        let (uid, ts, kind) = data.action(n);
        out.write_record([uid.to_string(), ts.to_string(), kind.to_string()])?;
    }
    out.flush()?;
    Ok(())
}

// ---------------------------------------------------------------- measuring

/// Peak resident memory of this process since the last reset, in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Starts a new peak-memory window (Linux: writing 5 to clear_refs resets VmHWM).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn report(case: &str, value: f64) {
    println!("RESULT {case} {value}");
}

/// Runs `op` on inputs 0..n and reports the mean time per call in microseconds; checks that
/// every call returned `expect(i)` rows.
async fn time_each<E: Engine>(
    engine: &mut E,
    reps: &Reps,
    case: &str,
    n: u64,
    mut op: impl AsyncFnMut(&mut E, u64) -> BenchResult<usize>,
    expect: impl Fn(u64) -> Option<usize>,
) -> BenchResult<()> {
    if !reps.wants(case) {
        return Ok(());
    }
    // Marks the start of the case for a profiler attached from outside (the parent ignores it).
    println!("CASE {case}");
    // Warm up: the first calls pay for caches and lazily built statistics.
    for i in 0..n.min(50) {
        op(engine, i + n).await?;
    }
    let started = Instant::now();
    for i in 0..n {
        let rows = op(engine, i).await?;
        if let Some(expected) = expect(i)
            && rows != expected
        {
            return Err(format!("{case}: input {i} gave {rows} rows, expected {expected}").into());
        }
    }
    report(case, started.elapsed().as_secs_f64() * 1e6 / n as f64);
    Ok(())
}

async fn run_engine<E: Engine>(
    mut engine: E,
    data: Data,
    reps: Reps,
    dir: &Path,
) -> BenchResult<()> {
    let csv = dir.join("orders.csv");
    write_orders_csv(data, &csv)?;
    reset_peak_rss();
    let started = Instant::now();
    engine.load_orders(&csv).await?;
    let load = started.elapsed();
    report("load_rows_per_s", data.rows as f64 / load.as_secs_f64());
    report("load_s", load.as_secs_f64());
    if let Some(peak) = peak_rss_mib() {
        report("load_peak_mib", peak);
    }
    engine.load_rest().await?;
    engine.warm().await?;

    let rows = data.rows;
    let users = data.users();
    let action_users = data.action_users();
    time_each(
        &mut engine,
        &reps,
        "point_get_us",
        reps.point,
        async |e, i| e.point_get(mix(i) % rows).await,
        |_| Some(1),
    )
    .await?;
    time_each(
        &mut engine,
        &reps,
        "point_get_adhoc_us",
        reps.point,
        async |e, i| e.point_get_adhoc(mix(i) % rows).await,
        |_| Some(1),
    )
    .await?;
    time_each(
        &mut engine,
        &reps,
        "index_lookup_us",
        reps.lookup,
        async |e, i| e.index_lookup(mix(i) % users).await,
        |_| (rows >= ROWS_PER_USER).then_some(ROWS_PER_USER as usize),
    )
    .await?;
    time_each(
        &mut engine,
        &reps,
        "intersect_us",
        reps.intersect,
        async |e, i| e.intersect(i % 10, mix(i) % 100).await,
        |_| None,
    )
    .await?;
    time_each(
        &mut engine,
        &reps,
        "page_us",
        reps.lookup,
        async |e, i| e.page(mix(i) % action_users).await,
        |_| Some(10),
    )
    .await?;
    let after = 1_000_000 + 7 * 500;
    time_each(
        &mut engine,
        &reps,
        "page_keyset_us",
        reps.lookup,
        async |e, i| e.page_keyset(mix(i) % action_users, after).await,
        |_| Some(10),
    )
    .await?;

    if !reps.wants("aggregate_s") {
        return Ok(());
    }
    println!("CASE aggregate_s");
    let mut times = Vec::new();
    reset_peak_rss();
    for _ in 0..reps.aggregate {
        let started = Instant::now();
        let groups = engine.aggregate().await?;
        times.push(started.elapsed());
        if groups == 0 {
            return Err("the aggregate returned nothing".into());
        }
    }
    times.sort();
    let median = times
        .get(times.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO);
    report("aggregate_s", median.as_secs_f64());
    if let Some(peak) = peak_rss_mib() {
        report("aggregate_peak_mib", peak);
    }
    Ok(())
}

async fn child(engine: &str, data: Data, reps: Reps) -> BenchResult<()> {
    let dir = tempfile::tempdir()?;
    let store_dir = dir.path().join("store");
    match engine {
        "rowdex-memory" => {
            run_engine(
                Rowdex::new(Database::open_memory().await?, data).await?,
                data,
                reps,
                dir.path(),
            )
            .await
        }
        "rowdex-fjall" => {
            run_engine(
                Rowdex::new(Database::open(&store_dir).await?, data).await?,
                data,
                reps,
                dir.path(),
            )
            .await
        }
        "sqlite" => {
            run_engine(
                Sqlite::new(&dir.path().join("bench.sqlite"), data)?,
                data,
                reps,
                dir.path(),
            )
            .await
        }
        "raw-memory" => {
            run_engine(
                Raw {
                    store: Arc::new(MemoryStore::new()),
                    data,
                },
                data,
                reps,
                dir.path(),
            )
            .await
        }
        "raw-fjall" => {
            let store = FjallStore::open(&store_dir, Durability::default())?;
            run_engine(
                Raw {
                    store: Arc::new(store),
                    data,
                },
                data,
                reps,
                dir.path(),
            )
            .await
        }
        other => Err(format!("unknown engine {other}").into()),
    }
}

/// One row of the summary: case name, unit, and whether smaller is better.
const CASES: [(&str, &str); 11] = [
    ("point_get_us", "1. point get, prepared (µs)"),
    ("point_get_adhoc_us", "1. point get, ad-hoc SQL (µs)"),
    ("index_lookup_us", "2. index lookup, 10 rows (µs)"),
    ("intersect_us", "3. a = ? AND b = ? (µs)"),
    ("page_us", "4. paging LIMIT 10 OFFSET 20 (µs)"),
    ("page_keyset_us", "4. paging, keyset (µs)"),
    ("load_rows_per_s", "5. bulk load, 2 indexes (rows/s)"),
    ("load_peak_mib", "5. bulk load, peak RSS (MiB)"),
    ("aggregate_s", "6. GROUP BY over all rows (s)"),
    ("aggregate_peak_mib", "6. GROUP BY, peak RSS (MiB)"),
    ("load_s", "5. bulk load (s)"),
];

fn format_value(value: f64) -> String {
    if value >= 1000.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let rows: u64 = match value_of("--rows") {
        Some(n) => n.parse()?,
        None if quick => 100_000,
        None => 1_000_000,
    };
    let cases: Option<Vec<String>> =
        value_of("--cases").map(|list| list.split(',').map(str::to_string).collect());
    let reps = if quick {
        Reps {
            cases: cases.clone(),
            point: 2_000,
            lookup: 1_000,
            intersect: 20,
            aggregate: 1,
        }
    } else {
        Reps {
            cases: cases.clone(),
            point: 20_000,
            lookup: 5_000,
            intersect: 100,
            aggregate: 3,
        }
    };
    let data = Data { rows };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(engine) = value_of("--child") {
        return runtime.block_on(child(&engine, data, reps));
    }
    let engines: Vec<String> = match value_of("--engines") {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => ENGINES.iter().map(|e| e.to_string()).collect(),
    };
    let exe = std::env::current_exe()?;
    let mut results: BTreeMap<(String, String), f64> = BTreeMap::new();
    for engine in &engines {
        eprintln!("running {engine} on {rows} rows...");
        let output = Command::new(&exe)
            .args(["--child", engine, "--rows", &rows.to_string()])
            .args(if quick { vec!["--quick"] } else { vec![] })
            .args(match &cases {
                Some(list) => vec!["--cases".to_string(), list.join(",")],
                None => vec![],
            })
            .output()?;
        if !output.status.success() {
            return Err(format!(
                "{engine} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let ["RESULT", case, value] = parts.as_slice() {
                results.insert((case.to_string(), engine.clone()), value.parse()?);
            }
        }
    }
    println!(
        "rows per table: {rows}{}",
        if quick { " (quick)" } else { "" }
    );
    print!("| case |");
    for engine in &engines {
        print!(" {engine} |");
    }
    println!(" rowdex-memory / sqlite | rowdex-fjall / sqlite | rowdex-fjall / raw-fjall |");
    print!("|---|");
    for _ in 0..engines.len() + 3 {
        print!("---:|");
    }
    println!();
    for (case, label) in CASES {
        print!("| {label} |");
        for engine in &engines {
            match results.get(&(case.to_string(), engine.clone())) {
                Some(value) => print!(" {} |", format_value(*value)),
                None => print!(" |"),
            }
        }
        let ratio = |a: &str, b: &str| {
            let get = |e: &str| results.get(&(case.to_string(), e.to_string())).copied();
            match (get(a), get(b)) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.2}x", x / y),
                _ => String::new(),
            }
        };
        println!(
            " {} | {} | {} |",
            ratio("rowdex-memory", "sqlite"),
            ratio("rowdex-fjall", "sqlite"),
            ratio("rowdex-fjall", "raw-fjall")
        );
    }
    println!(
        "(times: smaller is better; rows/s: larger is better; ratios are rowdex's figure over the peer's)"
    );
    Ok(())
}
