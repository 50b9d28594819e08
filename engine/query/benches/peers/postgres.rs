//! PostgreSQL 15 as a server of its own, started by the child for the run and stopped at its
//! end: a fresh cluster in a temporary directory owned by `postgres`, reached over loopback TCP
//! through tokio-postgres. Loaded with COPY, then ANALYZE, VACUUM and a CHECKPOINT; the cases
//! run as statements prepared once, the ad-hoc ones as text. A prepared `SELECT 1` measures what
//! the round trip alone costs (`round_trip_us`), which every case's figure includes.

use std::path::Path;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::data::{BenchResult, Data, write_actions_csv, write_pairs_csv};
use crate::measure::{Engine, TABLES};
use crate::pg_server::{Server, copy_csv};
use crate::queries;

/// Copies `csv` into `table` and checks that every row arrived.
async fn load_table(client: &Client, table: &str, csv: &Path, rows: u64) -> BenchResult<()> {
    let copied = copy_csv(client, table, csv).await?;
    if copied != rows {
        return Err(format!("COPY {table}: {copied} rows, expected {rows}").into());
    }
    Ok(())
}

/// The statements of the parameterized cases and the aggregate, prepared once.
struct Statements {
    round_trip: Statement,
    point_get: Statement,
    index_lookup: Statement,
    intersect_a_b: Statement,
    intersect_b_c: Statement,
    page: Statement,
    page_keyset: Statement,
    page_keyset_rowvalue: Statement,
    aggregate: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> BenchResult<Statements> {
        Ok(Statements {
            round_trip: client.prepare("SELECT 1").await?,
            point_get: client.prepare(queries::POINT_GET).await?,
            index_lookup: client.prepare(queries::INDEX_LOOKUP).await?,
            intersect_a_b: client.prepare(queries::INTERSECT_A_B).await?,
            intersect_b_c: client.prepare(queries::INTERSECT_B_C).await?,
            page: client.prepare(queries::PAGE).await?,
            page_keyset: client.prepare(queries::PAGE_KEYSET).await?,
            page_keyset_rowvalue: client.prepare(queries::PAGE_KEYSET_ROWVALUE).await?,
            aggregate: client.prepare(queries::AGGREGATE).await?,
        })
    }
}

pub struct Postgres {
    /// Declared before `_server`: the connection closes before the server is stopped.
    client: Client,
    statements: Option<Statements>,
    data: Data,
    /// Held for its `Drop`, which stops the server.
    _server: Server,
}

fn int(value: u64) -> i64 {
    value as i64
}

impl Postgres {
    /// Starts a server and creates `orders` with its two indexes.
    pub async fn start(data: Data) -> BenchResult<Postgres> {
        let mut server = Server::start()?;
        let client = server.connect().await?;
        client
            .batch_execute(
                "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, country TEXT,
                   amount DOUBLE PRECISION, note TEXT);
                 CREATE INDEX orders_user ON orders (user_id);
                 CREATE INDEX orders_country ON orders (country);",
            )
            .await?;
        Ok(Postgres {
            client,
            statements: None,
            data,
            _server: server,
        })
    }

    fn statements(&self) -> BenchResult<&Statements> {
        self.statements
            .as_ref()
            .ok_or_else(|| "statements not prepared".into())
    }

    async fn run(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> BenchResult<usize> {
        Ok(self.client.query(statement, params).await?.len())
    }

    /// SQL text through the extended protocol: PostgreSQL parses and plans it on every call
    /// (an unnamed statement); it keeps no plan across statements sent as text.
    async fn run_text(&self, sql: &str) -> BenchResult<usize> {
        Ok(self.client.query(sql, &[]).await?.len())
    }
}

impl Engine for Postgres {
    /// The server's memory is in processes of its own, which this process cannot measure.
    fn peak_memory_is_own(&self) -> bool {
        false
    }

    async fn load_orders(&mut self, csv: &Path) -> BenchResult<()> {
        load_table(&self.client, "orders", csv, self.data.rows).await
    }

    async fn load_rest(&mut self) -> BenchResult<()> {
        let dir = tempfile::tempdir()?;
        let pairs = dir.path().join("pairs.csv");
        let actions = dir.path().join("actions.csv");
        write_pairs_csv(self.data, &pairs)?;
        write_actions_csv(self.data, &actions)?;
        self.client
            .batch_execute(
                "CREATE TABLE pairs (id BIGINT PRIMARY KEY, a BIGINT, b BIGINT, c BIGINT,
                   pad TEXT);
                 CREATE INDEX pairs_a ON pairs (a);
                 CREATE INDEX pairs_b ON pairs (b);
                 CREATE INDEX pairs_c ON pairs (c);
                 CREATE TABLE actions (uid BIGINT, ts BIGINT, kind BIGINT,
                   PRIMARY KEY (uid, ts));",
            )
            .await?;
        load_table(&self.client, "pairs", &pairs, self.data.rows).await?;
        load_table(&self.client, "actions", &actions, self.data.rows).await?;
        // Statistics, the visibility map (index-only scans) and the load's dirty pages written,
        // so that no background work of the load runs during the timed cases.
        self.client.batch_execute("ANALYZE").await?;
        self.client.batch_execute("VACUUM").await?;
        self.client.batch_execute("CHECKPOINT").await?;
        self.statements = Some(Statements::prepare(&self.client).await?);
        Ok(())
    }

    fn has_round_trip(&self) -> bool {
        true
    }

    async fn round_trip(&mut self) -> BenchResult<usize> {
        self.run(&self.statements()?.round_trip, &[]).await
    }

    async fn point_get(&mut self, id: u64) -> BenchResult<usize> {
        self.run(&self.statements()?.point_get, &[&int(id)]).await
    }

    async fn point_get_adhoc(&mut self, id: u64) -> BenchResult<usize> {
        self.run_text(&queries::point_get_adhoc(id)).await
    }

    /// The same as with the cache: PostgreSQL has no cache of plans for text to turn off.
    async fn point_get_adhoc_nocache(&mut self, id: u64) -> BenchResult<usize> {
        self.run_text(&queries::point_get_adhoc(id)).await
    }

    async fn index_lookup(&mut self, user: u64) -> BenchResult<usize> {
        self.run(&self.statements()?.index_lookup, &[&int(user)])
            .await
    }

    async fn intersect_a_b(&mut self, a: u64, b: u64) -> BenchResult<usize> {
        self.run(&self.statements()?.intersect_a_b, &[&int(a), &int(b)])
            .await
    }

    async fn intersect_b_c(&mut self, b: u64, c: u64) -> BenchResult<usize> {
        self.run(&self.statements()?.intersect_b_c, &[&int(b), &int(c)])
            .await
    }

    async fn page(&mut self, uid: u64) -> BenchResult<usize> {
        self.run(&self.statements()?.page, &[&int(uid)]).await
    }

    async fn page_keyset(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        let params: [&(dyn ToSql + Sync); 2] = [&int(uid), &int(before_ts)];
        self.run(&self.statements()?.page_keyset, &params).await
    }

    async fn page_keyset_rowvalue(&mut self, uid: u64, before_ts: u64) -> BenchResult<usize> {
        let params: [&(dyn ToSql + Sync); 2] = [&int(uid), &int(before_ts)];
        self.run(&self.statements()?.page_keyset_rowvalue, &params)
            .await
    }

    async fn aggregate(&mut self) -> BenchResult<usize> {
        self.run(&self.statements()?.aggregate, &[]).await
    }

    async fn warm(&mut self) -> BenchResult<u64> {
        let mut rows = 0;
        for table in TABLES {
            rows += self.run_text(&format!("SELECT * FROM {table}")).await? as u64;
        }
        Ok(rows)
    }
}
