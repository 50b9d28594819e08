//! A server on a free loopback port over an in-memory database, and clients for it.

use std::net::SocketAddr;
use std::time::Duration;

use rowdex::Database;
use rowdex_server::{AuthMethod, ServeOptions, Server, TlsFiles};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

pub struct TestServer {
    pub addr: SocketAddr,
    /// Where the metrics are served, when the options asked for them.
    pub metrics_addr: Option<SocketAddr>,
    /// The database served, for what a test checks behind the server's back.
    pub db: Database,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::with_limit(100).await
    }

    pub async fn with_limit(max_connections: usize) -> TestServer {
        TestServer::with_options(test_options(max_connections), "").await
    }

    /// A server with `options` (its address replaced by a free loopback port) over a database
    /// on which `setup` ran first (roles, say).
    pub async fn with_options(options: ServeOptions, setup: &str) -> TestServer {
        let db = Database::open_memory().await.expect("open");
        if !setup.is_empty() {
            db.session().execute(setup).await.expect("setup");
        }
        TestServer::serving(db, options).await
    }

    /// A server of `db` (over a store a test controls, say), with `options`.
    pub async fn serving(db: Database, options: ServeOptions) -> TestServer {
        let options = ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..options
        };
        let server = Server::bind(options).await.expect("bind");
        let served = db.clone();
        let addr = server.local_addr().expect("address");
        let metrics_addr = server.metrics_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server
                .run(&served, async {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
        });
        TestServer {
            addr,
            metrics_addr,
            db,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn connection_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=rowdex dbname=rowdex",
            self.addr.port()
        )
    }

    /// A connected client (its connection driven by a task of its own).
    pub async fn client(&self) -> Client {
        let (client, connection) = tokio_postgres::connect(&self.connection_string(), NoTls)
            .await
            .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Stops the server and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task");
        }
    }
}

/// Options of a test server: trust, no TLS, a short drain.
pub fn test_options(max_connections: usize) -> ServeOptions {
    ServeOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        max_connections,
        drain: Duration::from_secs(2),
        auth: AuthMethod::Trust,
        tls: None,
        ..ServeOptions::default()
    }
}

/// The test certificate (self-signed for `localhost` and 127.0.0.1, valid until 2126) and
/// its key, in `tests/server/tls/`.
pub fn test_tls_files() -> TlsFiles {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/tls");
    TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

/// The SQLSTATE of a failed call.
pub fn sqlstate(error: &tokio_postgres::Error) -> String {
    error
        .code()
        .map_or_else(|| format!("no SQLSTATE: {error}"), |c| c.code().to_string())
}

/// Asserts that CHECK TABLE finds every index of `table` in line with its rows (at least one
/// index, each reported `ok`).
pub async fn assert_check_table_clean(client: &Client, table: &str) {
    let messages = client
        .simple_query(&format!("CHECK TABLE {table}"))
        .await
        .expect("check table");
    let statuses: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                row.get(row.len() - 1).map(str::to_string)
            }
            _ => None,
        })
        .collect();
    assert!(
        !statuses.is_empty(),
        "CHECK TABLE {table} reported no index"
    );
    assert!(
        statuses.iter().all(|s| s == "ok"),
        "CHECK TABLE {table}: {statuses:?}"
    );
}

/// A client speaking the protocol by hand, for what a driver never does (vanish mid-COPY, go
/// on after a refused startup, send a cancel request with a wrong key).
pub struct RawClient {
    socket: TcpStream,
}

impl RawClient {
    /// Connected and started (ReadyForQuery received).
    pub async fn connect(server: &TestServer) -> RawClient {
        let mut client = RawClient::open(server).await;
        client.start("rowdex").await;
        client.expect(b'Z').await;
        client
    }

    /// Connected, nothing sent yet.
    pub async fn open(server: &TestServer) -> RawClient {
        let socket = TcpStream::connect(server.addr).await.expect("connect");
        RawClient { socket }
    }

    /// Sends the startup message (protocol 3.0) for `user`.
    pub async fn start(&mut self, user: &str) {
        let mut body = 196_608i32.to_be_bytes().to_vec();
        body.extend_from_slice(format!("user\0{user}\0database\0rowdex\0\0").as_bytes());
        self.send_untyped(&body).await;
    }

    /// Sends a message without a type byte (startup, cancel request): its length, then `body`.
    pub async fn send_untyped(&mut self, body: &[u8]) {
        let mut message = (body.len() as i32 + 4).to_be_bytes().to_vec();
        message.extend_from_slice(body);
        self.socket.write_all(&message).await.expect("send");
    }

    pub async fn send(&mut self, kind: u8, body: &[u8]) {
        let mut message = vec![kind];
        message.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        message.extend_from_slice(body);
        self.socket.write_all(&message).await.expect("send");
    }

    pub async fn query(&mut self, sql: &str) {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body).await;
    }

    /// The next message's type and body, or None once the server has closed the connection.
    pub async fn message(&mut self) -> Option<(u8, Vec<u8>)> {
        let kind = self.socket.read_u8().await.ok()?;
        let length = self.socket.read_i32().await.ok()?;
        let mut body = vec![0; usize::try_from(length - 4).ok()?];
        self.socket.read_exact(&mut body).await.ok()?;
        Some((kind, body))
    }

    /// Reads messages up to and including the first of `kind`; panics on an ErrorResponse.
    pub async fn expect(&mut self, kind: u8) {
        loop {
            let (got, body) = self.message().await.expect("a message");
            assert_ne!(got, b'E', "error: {}", String::from_utf8_lossy(&body));
            if got == kind {
                return;
            }
        }
    }
}

/// The SQLSTATE field of an ErrorResponse's body.
pub fn error_code(body: &[u8]) -> String {
    body.split(|b| *b == 0)
        .find_map(|field| field.strip_prefix(b"C"))
        .map(|code| String::from_utf8_lossy(code).into_owned())
        .unwrap_or_default()
}
