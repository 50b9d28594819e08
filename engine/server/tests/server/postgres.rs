//! PostgreSQL 15 as the peer of the client scenarios: a fresh cluster in a temporary directory
//! owned by the `postgres` user, started on a free loopback port and stopped by its pid when
//! the value is dropped (SIGINT, a fast shutdown, then SIGKILL), so no server outlives a test.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio_postgres::NoTls;

/// The operating-system user the server runs as (PostgreSQL refuses to run as root).
const PG_USER: &str = "postgres";
/// How long the server may take to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct PostgresPeer {
    process: Child,
    pub port: u16,
    log: PathBuf,
    /// The cluster and its log; declared last, so removed after the server is stopped.
    _root: TempDir,
}

/// The uid and gid of `PG_USER`.
fn pg_user_ids() -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let output = Command::new("id")
            .args([flag, PG_USER])
            .output()
            .expect("run id");
        assert!(
            output.status.success(),
            "no operating-system user {PG_USER} (scripts/install-clients installs PostgreSQL 15, which creates it)"
        );
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("a numeric id")
    };
    (id("-u"), id("-g"))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

impl PostgresPeer {
    /// initdb and start a server from the binaries in `bin` (PostgreSQL 15's).
    pub async fn start(bin: &Path) -> PostgresPeer {
        let (uid, gid) = pg_user_ids();
        let mut root = tempfile::Builder::new()
            .prefix("rowdex-clients-pg")
            .tempdir()
            .expect("temporary directory");
        std::os::unix::fs::chown(root.path(), Some(uid), Some(gid)).expect("chown");
        let cluster = root.path().join("pg");
        let output = Command::new(bin.join("initdb"))
            .arg("-D")
            .arg(&cluster)
            .args(["-U", PG_USER, "--auth=trust", "-E", "UTF8"])
            .args(["--locale=C", "--no-sync"])
            .uid(uid)
            .gid(gid)
            .current_dir(root.path())
            .output()
            .expect("run initdb");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let log = root.path().join("server.log");
        // A free port can be taken by someone else (another test's server) before postgres
        // binds it: then start again on another.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = free_port();
            let log_file = std::fs::File::create(&log).expect("log file");
            std::os::unix::fs::chown(&log, Some(uid), Some(gid)).expect("chown log");
            let process = Command::new(bin.join("postgres"))
                .arg("-D")
                .arg(&cluster)
                .args(["-p", &port.to_string()])
                .arg("-k")
                .arg(root.path())
                .args(["-c", "listen_addresses=127.0.0.1"])
                .args(["-c", "fsync=off", "-c", "max_connections=40"])
                // The monitoring scenario reads pg_stat_statements, as rowdex has it built in.
                .args(["-c", "shared_preload_libraries=pg_stat_statements"])
                .uid(uid)
                .gid(gid)
                .current_dir(root.path())
                .stdin(Stdio::null())
                .stdout(log_file.try_clone().expect("log file"))
                .stderr(log_file)
                .spawn()
                .expect("start postgres");
            let mut peer = PostgresPeer {
                process,
                port,
                log: log.clone(),
                _root: root,
            };
            match peer.wait_until_ready().await {
                Ok(()) => return peer,
                Err(log_tail) if attempts < 5 && log_tail.contains("already in use") => {
                    // Take the directory back from the failed peer (its process has exited).
                    root = std::mem::replace(
                        &mut peer._root,
                        tempfile::tempdir().expect("temporary directory"),
                    );
                }
                Err(log_tail) => panic!("postgres did not start: {log_tail}"),
            }
        }
    }

    /// Waits until the server accepts a connection; the end of its log if it exits first or
    /// takes longer than `START_TIMEOUT`.
    async fn wait_until_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.process.try_wait() {
                return Err(format!("postgres exited ({status}): {}", self.log_tail()));
            }
            match tokio_postgres::connect(&self.connection_string("postgres"), NoTls).await {
                Ok(_) => return Ok(()),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => {
                    return Err(format!(
                        "postgres accepted no connection in {START_TIMEOUT:?}: {error}; {}",
                        self.log_tail()
                    ));
                }
            }
        }
    }

    pub fn connection_string(&self, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={PG_USER} dbname={dbname}",
            self.port
        )
    }

    pub fn user(&self) -> &'static str {
        PG_USER
    }

    /// Creates the database `name` (empty, from template0).
    pub async fn create_database(&self, name: &str) {
        let (client, connection) =
            tokio_postgres::connect(&self.connection_string("postgres"), NoTls)
                .await
                .expect("connect to postgres");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE template0"))
            .await
            .expect("create database");
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }
}

impl Drop for PostgresPeer {
    fn drop(&mut self) {
        let pid = self.process.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.process.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
