//! PostgreSQL 15 as a server of its own, started by the child for the run and stopped at its
//! end: a fresh cluster in a temporary directory owned by `postgres`, reached over loopback TCP
//! through tokio-postgres. Loaded with COPY, then ANALYZE, VACUUM and a CHECKPOINT; the cases
//! run as statements prepared once, the ad-hoc ones as text.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::SinkExt;
use tempfile::TempDir;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, CopyInSink, NoTls, Statement};

use crate::data::{BenchResult, Data, write_actions_csv, write_pairs_csv};
use crate::measure::{Engine, TABLES};
use crate::queries;

/// Where Debian's postgresql-15 package puts the server binaries.
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The operating-system user the server runs as.
const PG_USER: &str = "postgres";
/// How long the server may take to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long each stop signal is given before the next, stronger one: SIGTERM (smart shutdown,
/// with a checkpoint), SIGINT (fast), SIGQUIT (immediate), SIGKILL.
const STOP_SIGNALS: [(&str, Duration); 4] = [
    ("TERM", Duration::from_secs(60)),
    ("INT", Duration::from_secs(10)),
    ("QUIT", Duration::from_secs(5)),
    ("KILL", Duration::from_secs(5)),
];
/// Bytes of CSV per COPY message.
const COPY_CHUNK: usize = 256 * 1024;

/// The path of a PostgreSQL binary, or an error naming the missing path.
fn pg_binary(name: &str) -> BenchResult<PathBuf> {
    let path = Path::new(PG_BIN).join(name);
    if !path.exists() {
        return Err(format!(
            "PostgreSQL binary not found: {} (install PostgreSQL 15's server, or leave the \
             postgres engine out with --engines)",
            path.display()
        )
        .into());
    }
    Ok(path)
}

/// The uid and gid of `PG_USER`.
fn pg_user_ids() -> BenchResult<(u32, u32)> {
    let id = |flag: &str| -> BenchResult<u32> {
        let output = Command::new("id").args([flag, PG_USER]).output()?;
        if !output.status.success() {
            return Err(format!(
                "no user {PG_USER}: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        Ok(String::from_utf8(output.stdout)?.trim().parse()?)
    };
    Ok((id("-u")?, id("-g")?))
}

/// A free loopback TCP port (free when asked; nothing else here takes ports).
fn free_port() -> BenchResult<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A PostgreSQL server started for one child process. Dropping it stops the server (by its pid)
/// and then removes its directory, so that no server outlives the child, on error paths too.
struct Server {
    process: Child,
    port: u16,
    log: PathBuf,
    /// The cluster, the socket and the log. Declared last, so it is removed after `drop` has
    /// stopped the server.
    root: TempDir,
}

impl Server {
    /// Creates a cluster in a new temporary directory and starts a server on it.
    fn start() -> BenchResult<Server> {
        let initdb = pg_binary("initdb")?;
        let postgres = pg_binary("postgres")?;
        let (uid, gid) = pg_user_ids()?;
        // In the system's temporary directory, which every user can traverse.
        let root = tempfile::Builder::new()
            .prefix("rowdex-peers-pg")
            .tempdir()?;
        std::os::unix::fs::chown(root.path(), Some(uid), Some(gid))?;
        let cluster = root.path().join("pg");
        let output = Command::new(&initdb)
            .arg("-D")
            .arg(&cluster)
            // C collation: text compares byte by byte, as in SQLite and rowdex.
            .args([
                "-U",
                PG_USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .uid(uid)
            .gid(gid)
            .current_dir(root.path())
            .output()?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let port = free_port()?;
        let log = root.path().join("server.log");
        let log_file = std::fs::File::create(&log)?;
        let process = Command::new(&postgres)
            .arg("-D")
            .arg(&cluster)
            .args(["-p", &port.to_string()])
            .arg("-k")
            .arg(root.path())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "shared_buffers=512MB",
                "-c",
                "synchronous_commit=off",
                "-c",
                "fsync=on",
                "-c",
                "max_connections=10",
            ])
            .uid(uid)
            .gid(gid)
            .current_dir(root.path())
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()?;
        Ok(Server {
            process,
            port,
            log,
            root,
        })
    }

    /// Connects as `postgres`, retrying until the server accepts (at most `START_TIMEOUT`).
    async fn connect(&mut self) -> BenchResult<Client> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.process.try_wait()? {
                return Err(format!("postgres exited ({status}): {}", self.log_tail()).into());
            }
            let attempt = tokio_postgres::Config::new()
                .host("127.0.0.1")
                .port(self.port)
                .user(PG_USER)
                .dbname("postgres")
                .connect(NoTls)
                .await;
            match attempt {
                Ok((client, connection)) => {
                    tokio::spawn(async move {
                        if let Err(error) = connection.await {
                            eprintln!("postgres connection: {error}");
                        }
                    });
                    return Ok(client);
                }
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => {
                    return Err(format!(
                        "postgres accepted no connection in {START_TIMEOUT:?}: {error}; {}",
                        self.log_tail()
                    )
                    .into());
                }
            }
        }
    }

    /// The end of the server's log, for error messages.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        format!("server log ({}):\n{tail}", self.log.display())
    }

    /// Whether the server process has exited within `grace`.
    fn exits_within(&mut self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        loop {
            match self.process.try_wait() {
                Ok(Some(_)) | Err(_) => return true,
                Ok(None) if Instant::now() >= deadline => return false,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Stops the server by its pid: SIGTERM, then stronger signals if it does not exit.
    fn stop(&mut self) {
        let pid = self.process.id().to_string();
        for (signal, grace) in STOP_SIGNALS {
            if matches!(self.process.try_wait(), Ok(Some(_))) {
                return;
            }
            let sent = Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(&pid)
                .status();
            if let Err(error) = sent {
                eprintln!("could not run kill -{signal} {pid}: {error}");
            }
            if self.exits_within(grace) {
                return;
            }
        }
        eprintln!(
            "postgres (pid {pid}) did not stop; its directory {} is left",
            self.root.path().display()
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Streams the CSV file `csv` into `table` with `COPY ... FROM STDIN`; returns the rows copied.
async fn copy_csv(client: &Client, table: &str, csv: &Path) -> BenchResult<u64> {
    let sink: CopyInSink<VecDeque<u8>> = client
        .copy_in(&format!("COPY {table} FROM STDIN (FORMAT csv)"))
        .await?;
    let mut sink = std::pin::pin!(sink);
    let mut file = std::fs::File::open(csv)?;
    loop {
        let mut chunk = vec![0; COPY_CHUNK];
        let read = file.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        chunk.truncate(read);
        sink.send(VecDeque::from(chunk)).await?;
    }
    Ok(sink.as_mut().finish().await?)
}

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
