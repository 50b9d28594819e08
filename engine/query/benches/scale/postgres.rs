//! PostgreSQL 15 as the scale bench's third peer: a server of the bench's own (shared_buffers
//! 512 MiB, like the other engines' caches; synchronous_commit off, which no query here
//! depends on), loaded by COPY from the same CSV files with the same indexes created after
//! the load, then `VACUUM ANALYZE` (so that index-only scans see an all-visible table, as
//! autovacuum would leave it). Unlike the other engines it is not reopened before the queries:
//! its first runs find the load's pages in shared buffers. Every query pays a loopback round
//! trip through tokio-postgres, which the bench measures (`SELECT 1`) and prints beside the
//! figures.

use std::path::Path;
use std::time::Instant;

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use crate::pg_server::{Server, copy_csv};
use crate::shared::{BenchResult, REPS};
use crate::users;

pub struct Peer {
    /// Kept for its lifetime: dropping it stops the server.
    _server: Server,
    client: Client,
    /// The median time of `SELECT 1` through the same client, in ms.
    pub round_trip_ms: f64,
}

/// What one query gave: its times (ms, the first run first), its answer and its plan.
pub struct Run {
    pub times: Vec<f64>,
    pub answer: String,
    pub plan: String,
}

impl Peer {
    /// Starts a server and loads `t` and `u` from the CSV files in `dir`.
    pub async fn load(dir: &Path) -> BenchResult<Peer> {
        let mut server = Server::start()?;
        let client = server.connect().await?;
        let started = Instant::now();
        client
            .batch_execute(
                "CREATE TABLE t (id bigint PRIMARY KEY, a bigint, b bigint, s bigint, c bigint,
                   d bigint, v bigint, pad text)",
            )
            .await?;
        copy_csv(&client, "t", &dir.join("t.csv")).await?;
        client.batch_execute(users::POSTGRES_TABLE).await?;
        copy_csv(
            &client,
            &format!("u ({})", users::COPY_COLUMNS),
            &dir.join(users::CSV),
        )
        .await?;
        let loaded = started.elapsed().as_secs_f64();
        let started = Instant::now();
        client
            .batch_execute(
                "CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b) INCLUDE (a);
                 CREATE INDEX isx ON t (s); CREATE INDEX ic ON t (c); CREATE INDEX idd ON t (d);",
            )
            .await?;
        client.batch_execute(users::POSTGRES_INDEXES).await?;
        client.batch_execute("VACUUM ANALYZE").await?;
        println!(
            "load postgres: COPY {loaded:.1} s, indexes after (and VACUUM ANALYZE) {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut trips = Vec::new();
        for _ in 0..21 {
            let started = Instant::now();
            client.query("SELECT 1", &[]).await?;
            trips.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        trips.sort_by(f64::total_cmp);
        Ok(Peer {
            _server: server,
            client,
            round_trip_ms: trips[trips.len() / 2],
        })
    }

    /// Runs `sql` `1 + REPS` times.
    pub async fn run(&self, sql: &str) -> BenchResult<Run> {
        let plan: Vec<String> = self
            .client
            .query(&format!("EXPLAIN {sql}"), &[])
            .await?
            .iter()
            .map(|row| row.get::<_, String>(0).trim().to_string())
            .collect();
        let mut times = Vec::new();
        let mut answer = String::new();
        for _ in 0..=REPS {
            let started = Instant::now();
            let rows = self.client.query(sql, &[]).await?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            let mut lines = Vec::new();
            for row in &rows {
                let mut cells = Vec::new();
                for (i, column) in row.columns().iter().enumerate() {
                    let cell = match *column.type_() {
                        Type::INT8 => row.get::<_, Option<i64>>(i).map(|v| v.to_string()),
                        Type::INT4 => row.get::<_, Option<i32>>(i).map(|v| v.to_string()),
                        _ => row.get::<_, Option<String>>(i),
                    };
                    cells.push(cell.unwrap_or_else(|| "NULL".into()));
                }
                lines.push(cells.join(","));
            }
            answer = lines.join(";");
        }
        Ok(Run {
            times,
            answer,
            plan: plan.join("; "),
        })
    }
}
