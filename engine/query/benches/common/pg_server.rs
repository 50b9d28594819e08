// Included by `peers/pg_server.rs` and `joins/pg_server.rs` (`include!`, so that each bench's
// module tree stays plain). A PostgreSQL 15 server of a bench's own, shared by the benches that
// compare with it (`peers`, `joins`): a fresh cluster in a temporary directory owned by `postgres` (C
// collation, trust authentication), started on a free loopback port, reached through
// tokio-postgres, and stopped by its pid when dropped; and COPY of a CSV file into a table.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::SinkExt;
use tempfile::TempDir;
use tokio_postgres::{Client, CopyInSink, NoTls};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

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
pub struct Server {
    process: Child,
    port: u16,
    log: PathBuf,
    /// The cluster, the socket and the log. Declared last, so it is removed after `drop` has
    /// stopped the server.
    root: TempDir,
}

impl Server {
    /// Creates a cluster in a new temporary directory and starts a server on it.
    pub fn start() -> BenchResult<Server> {
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
    pub async fn connect(&mut self) -> BenchResult<Client> {
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
pub async fn copy_csv(client: &Client, table: &str, csv: &Path) -> BenchResult<u64> {
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
