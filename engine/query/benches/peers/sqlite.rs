//! SQLite through rusqlite (`bundled`): WAL, `synchronous = NORMAL`, a page cache as large as
//! fjall's block cache, statements from rusqlite's statement cache, `ANALYZE` after the load.

use std::path::Path;

use rowdex_store::DEFAULT_FJALL_CACHE_BYTES;

use crate::data::{BenchResult, Data, pad};
use crate::measure::{Engine, TABLES};
use crate::queries;

const POINT_GET: &str = "SELECT * FROM orders WHERE id = ?1";
const INDEX_LOOKUP: &str = "SELECT * FROM orders WHERE user_id = ?1";
const INTERSECT_A_B: &str = "SELECT * FROM pairs WHERE a = ?1 AND b = ?2";
const INTERSECT_B_C: &str = "SELECT * FROM pairs WHERE b = ?1 AND c = ?2";
const PAGE: &str = "SELECT * FROM actions WHERE uid = ?1 ORDER BY ts DESC LIMIT 10 OFFSET 20";
const PAGE_KEYSET: &str =
    "SELECT * FROM actions WHERE uid = ?1 AND ts < ?2 ORDER BY ts DESC LIMIT 10";
const PAGE_KEYSET_ROWVALUE: &str =
    "SELECT * FROM actions WHERE uid = ?1 AND (uid, ts) < (?1, ?2) ORDER BY ts DESC LIMIT 10";

pub struct Sqlite {
    conn: rusqlite::Connection,
    data: Data,
}

/// Steps through every row of `statement` and returns how many there were.
fn count_rows(
    statement: &mut rusqlite::Statement<'_>,
    params: impl rusqlite::Params,
) -> BenchResult<usize> {
    let mut rows = statement.query(params)?;
    let mut n = 0;
    while rows.next()?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn int(value: u64) -> i64 {
    value as i64
}

impl Sqlite {
    pub fn new(path: &Path, data: Data) -> BenchResult<Sqlite> {
        let conn = rusqlite::Connection::open(path)?;
        // A negative cache_size is in KiB: the same memory as fjall's block cache.
        let cache_kib = DEFAULT_FJALL_CACHE_BYTES / 1024;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA cache_size = -{cache_kib};
             CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, country TEXT,
               amount REAL, note TEXT);
             CREATE INDEX orders_user ON orders (user_id);
             CREATE INDEX orders_country ON orders (country);"
        ))?;
        Ok(Sqlite { conn, data })
    }

    /// Runs `sql` from the statement cache and counts its rows.
    fn count(&self, sql: &str, params: impl rusqlite::Params) -> BenchResult<usize> {
        let mut statement = self.conn.prepare_cached(sql)?;
        count_rows(&mut statement, params)
    }

    fn insert_pairs(tx: &rusqlite::Transaction<'_>, data: Data) -> BenchResult<()> {
        let mut insert = tx.prepare("INSERT INTO pairs VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for id in 0..data.rows {
            let pair = data.pair(id);
            insert.execute(rusqlite::params![
                int(id),
                int(pair.a),
                int(pair.b),
                int(pair.c),
                pad(id)
            ])?;
        }
        Ok(())
    }

    fn insert_actions(tx: &rusqlite::Transaction<'_>, data: Data) -> BenchResult<()> {
        let mut insert = tx.prepare("INSERT INTO actions VALUES (?1, ?2, ?3)")?;
        for n in 0..data.rows {
            let action = data.action(n);
            insert.execute([int(action.uid), int(action.ts), int(action.kind)])?;
        }
        Ok(())
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
        self.conn.execute_batch(
            "CREATE TABLE pairs (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c INTEGER,
               pad TEXT);
             CREATE INDEX pairs_a ON pairs (a);
             CREATE INDEX pairs_b ON pairs (b);
             CREATE INDEX pairs_c ON pairs (c);
             CREATE TABLE actions (uid INTEGER, ts INTEGER, kind INTEGER,
               PRIMARY KEY (uid, ts DESC)) WITHOUT ROWID;",
        )?;
        let tx = self.conn.transaction()?;
        Self::insert_pairs(&tx, self.data)?;
        Self::insert_actions(&tx, self.data)?;
        tx.commit()?;
        self.conn.execute_batch("ANALYZE")?;
        Ok(())
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        self.count(POINT_GET, [int(id)])
    }

    /// The text with the id in it through rusqlite's statement cache, which is keyed by the
    /// whole text: each new id misses, so this prepares every time plus the cache's upkeep.
    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        self.count(&queries::point_get_adhoc(id), [])
    }

    async fn point_get_adhoc_nocache(&mut self, id: u64) -> BenchResult<usize> {
        let sql = queries::point_get_adhoc(id);
        count_rows(&mut self.conn.prepare(&sql)?, [])
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        self.count(INDEX_LOOKUP, [int(user)])
    }

    async fn intersect_a_b(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        self.count(INTERSECT_A_B, [int(a), int(b)])
    }

    async fn intersect_b_c(&mut self, b: u64, c: u64) -> BenchResult<usize> {
        self.count(INTERSECT_B_C, [int(b), int(c)])
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        self.count(PAGE, [int(uid)])
    }

    async fn page_keyset(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        self.count(PAGE_KEYSET, [int(uid), int(before_ts)])
    }

    async fn page_keyset_rowvalue(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        self.count(PAGE_KEYSET_ROWVALUE, [int(uid), int(before_ts)])
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        self.count(queries::AGGREGATE, [])
    }

    async fn warm(&mut self) -> BenchResult<u64> {
        let mut rows = 0;
        for table in TABLES {
            rows += self.count(&format!("SELECT * FROM {table}"), [])? as u64;
        }
        Ok(rows)
    }
}
