//! A server on a free loopback port over an in-memory database, and clients for it.

use std::net::SocketAddr;
use std::time::Duration;

use rowdex::Database;
use rowdex_server::{ServeOptions, Server};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::with_limit(100).await
    }

    pub async fn with_limit(max_connections: usize) -> TestServer {
        let db = Database::open_memory().await.expect("open");
        let options = ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_connections,
            drain: Duration::from_secs(2),
        };
        let server = Server::bind(options).await.expect("bind");
        let addr = server.local_addr().expect("address");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server
                .run(&db, async {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
        });
        TestServer {
            addr,
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
