//! The engines the join shapes run on, each loaded from the same CSV files with the same
//! indexes and statistics, then reopened before the timed calls: rowdex on fjall through its
//! embedded API (prepared statements), SQLite through rusqlite (its statement cache), and
//! PostgreSQL 15 through tokio-postgres over loopback (prepared statements; each call pays a
//! round trip the embedded engines do not).

use std::path::{Path, PathBuf};

use rowdex::arrow::record_batch::RecordBatch;
use rowdex::{Database, Datum, Prepared, Session};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::pg_server::{Server, copy_csv};
use crate::shapes::{BenchResult, INDEXES, SCHEMA, SHAPES};

/// What the bench asks of an engine.
pub trait JoinEngine {
    /// Creates the tables, loads `users.csv` and `orders.csv` from `csv_dir`, builds the
    /// indexes and gathers statistics.
    async fn load(&mut self, csv_dir: &Path) -> BenchResult<()>;
    /// Closes the database and opens it again; prepares the shapes.
    async fn reopen(&mut self) -> BenchResult<()>;
    /// Runs shape `shape` with `params`; the rows it returned.
    async fn run(&mut self, shape: usize, params: &[i64]) -> BenchResult<usize>;
    /// The engine's plan of shape `shape` for `params`, one line per entry.
    async fn plan(&mut self, shape: usize, params: &[i64]) -> BenchResult<Vec<String>>;
}

/// `sql` with its `$n` parameters written in as literals (for EXPLAIN).
fn with_literals(sql: &str, params: &[i64]) -> String {
    let mut text = sql.to_string();
    for (i, value) in params.iter().enumerate().rev() {
        text = text.replace(&format!("${}", i + 1), &value.to_string());
    }
    text
}

pub struct Rowdex {
    dir: PathBuf,
    db: Option<Database>,
    session: Option<Session>,
    prepared: Vec<Prepared>,
}

impl Rowdex {
    pub fn new(dir: &Path) -> Rowdex {
        Rowdex {
            dir: dir.to_path_buf(),
            db: None,
            session: None,
            prepared: Vec::new(),
        }
    }

    fn session(&self) -> BenchResult<&Session> {
        self.session.as_ref().ok_or_else(|| "not open".into())
    }
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

impl JoinEngine for Rowdex {
    async fn load(&mut self, csv_dir: &Path) -> BenchResult<()> {
        let db = Database::open(&self.dir).await?;
        let session = db.session();
        session.execute(SCHEMA).await?;
        for table in ["users", "orders"] {
            let csv = csv_dir.join(format!("{table}.csv"));
            session
                .execute(&format!("COPY {table} FROM '{}'", csv.display()))
                .await?;
        }
        session.execute(INDEXES).await?;
        session.execute("ANALYZE").await?;
        session.execute("VACUUM").await?;
        db.flush().await?;
        self.db = Some(db);
        Ok(())
    }

    async fn reopen(&mut self) -> BenchResult<()> {
        self.prepared.clear();
        self.session = None;
        if let Some(db) = self.db.take() {
            db.flush().await?;
        }
        let db = Database::open(&self.dir).await?;
        let session = db.session();
        for shape in &SHAPES {
            self.prepared.push(session.prepare(shape.sql)?);
        }
        self.session = Some(session);
        self.db = Some(db);
        Ok(())
    }

    async fn run(&mut self, shape: usize, params: &[i64]) -> BenchResult<usize> {
        let params: Vec<Datum> = params.iter().map(|&v| Datum::Int(v)).collect();
        let statement = self.prepared.get(shape).ok_or("no such shape")?;
        Ok(rows(&statement.query(&params).await?))
    }

    async fn plan(&mut self, shape: usize, params: &[i64]) -> BenchResult<Vec<String>> {
        let sql = format!("EXPLAIN {}", with_literals(SHAPES[shape].sql, params));
        let batches = self.session()?.query(&sql).await?;
        let mut lines = Vec::new();
        for batch in &batches {
            let column = batch.column(0);
            for row in 0..batch.num_rows() {
                lines.push(rowdex::arrow::util::display::array_value_to_string(
                    column, row,
                )?);
            }
        }
        Ok(lines)
    }
}

const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    PRAGMA cache_size = -524288;";

pub struct Sqlite {
    path: PathBuf,
    conn: Option<rusqlite::Connection>,
}

impl Sqlite {
    pub fn new(dir: &Path) -> Sqlite {
        Sqlite {
            path: dir.join("joins.sqlite"),
            conn: None,
        }
    }

    fn conn(&self) -> BenchResult<&rusqlite::Connection> {
        self.conn.as_ref().ok_or_else(|| "not open".into())
    }

    /// The shape's SQL in SQLite's spelling: `?n` parameters, and the integer key as the rowid.
    fn sql(shape: usize) -> String {
        SHAPES[shape].sql.replace('$', "?")
    }
}

impl JoinEngine for Sqlite {
    async fn load(&mut self, csv_dir: &Path) -> BenchResult<()> {
        let mut conn = rusqlite::Connection::open(&self.path)?;
        conn.execute_batch(SQLITE_PRAGMAS)?;
        // The integer key as the rowid, as a user would declare it in SQLite.
        conn.execute_batch(&SCHEMA.replace("id BIGINT PRIMARY KEY", "id INTEGER PRIMARY KEY"))?;
        let tx = conn.transaction()?;
        for (table, columns) in [("users", 4), ("orders", 5)] {
            let placeholders: Vec<String> = (1..=columns).map(|i| format!("?{i}")).collect();
            let mut insert = tx.prepare(&format!(
                "INSERT INTO {table} VALUES ({})",
                placeholders.join(", ")
            ))?;
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_path(csv_dir.join(format!("{table}.csv")))?;
            for record in reader.records() {
                let record = record?;
                let values: Vec<rusqlite::types::Value> = record
                    .iter()
                    .map(|field| match field.parse::<i64>() {
                        Ok(n) => rusqlite::types::Value::Integer(n),
                        Err(_) => rusqlite::types::Value::Text(field.to_string()),
                    })
                    .collect();
                insert.execute(rusqlite::params_from_iter(values))?;
            }
        }
        tx.commit()?;
        conn.execute_batch(&format!("{INDEXES}; ANALYZE;"))?;
        Ok(())
    }

    async fn reopen(&mut self) -> BenchResult<()> {
        self.conn = None;
        let conn = rusqlite::Connection::open(&self.path)?;
        conn.execute_batch(SQLITE_PRAGMAS)?;
        self.conn = Some(conn);
        Ok(())
    }

    async fn run(&mut self, shape: usize, params: &[i64]) -> BenchResult<usize> {
        let conn = self.conn()?;
        let mut statement = conn.prepare_cached(&Self::sql(shape))?;
        let mut result = statement.query(rusqlite::params_from_iter(params))?;
        let mut n = 0;
        while result.next()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    async fn plan(&mut self, shape: usize, params: &[i64]) -> BenchResult<Vec<String>> {
        let sql = format!("EXPLAIN QUERY PLAN {}", Self::sql(shape));
        let conn = self.conn()?;
        let mut statement = conn.prepare(&sql)?;
        let lines = statement
            .query_map(rusqlite::params_from_iter(params), |row| {
                row.get::<_, String>(3)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(lines)
    }
}

pub struct Postgres {
    server: Server,
    client: Option<Client>,
    prepared: Vec<Statement>,
}

impl Postgres {
    pub fn start() -> BenchResult<Postgres> {
        Ok(Postgres {
            server: Server::start()?,
            client: None,
            prepared: Vec::new(),
        })
    }

    fn client(&self) -> BenchResult<&Client> {
        self.client.as_ref().ok_or_else(|| "not connected".into())
    }
}

impl JoinEngine for Postgres {
    async fn load(&mut self, csv_dir: &Path) -> BenchResult<()> {
        let client = self.server.connect().await?;
        client.batch_execute(SCHEMA).await?;
        for table in ["users", "orders"] {
            copy_csv(&client, table, &csv_dir.join(format!("{table}.csv"))).await?;
        }
        client.batch_execute(INDEXES).await?;
        // One at a time: VACUUM refuses to run in the transaction a batch of statements is.
        for statement in ["ANALYZE", "VACUUM", "CHECKPOINT"] {
            client.batch_execute(statement).await?;
        }
        Ok(())
    }

    /// A new connection (a new backend, its caches cold); the server and its shared buffers
    /// stay.
    async fn reopen(&mut self) -> BenchResult<()> {
        self.prepared.clear();
        self.client = None;
        let client = self.server.connect().await?;
        for shape in &SHAPES {
            self.prepared.push(client.prepare(shape.sql).await?);
        }
        self.client = Some(client);
        Ok(())
    }

    async fn run(&mut self, shape: usize, params: &[i64]) -> BenchResult<usize> {
        let statement = self.prepared.get(shape).ok_or("no such shape")?;
        let params: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        Ok(self.client()?.query(statement, &params).await?.len())
    }

    async fn plan(&mut self, shape: usize, params: &[i64]) -> BenchResult<Vec<String>> {
        let sql = format!(
            "EXPLAIN (COSTS OFF) {}",
            with_literals(SHAPES[shape].sql, params)
        );
        let rows = self.client()?.query(&sql, &[]).await?;
        Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
    }
}
