//! `rowdex serve`: accepts PostgreSQL clients on a TCP address (with TLS for those that ask,
//! when a certificate is given), one task and one rowdex session per connection, at most
//! `max_connections` at once. On shutdown it stops accepting,
//! lets open connections finish for a while, then closes the rest (their open transactions are
//! rolled back, nothing half written stays).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::PgWireServerHandlers;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::tokio::{TlsAcceptor, process_socket};
use rowdex::Database;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::activity::Activities;
use crate::cancel::CancelRegistry;
use crate::connection::Connection;
use crate::error::{Result, ServerError};
use crate::metrics::{ServerMetrics, bind_metrics, serve_metrics};
use crate::server_log::ServerLog;
use crate::startup::{AuthMethod, Authenticator, Startup, TooManyConnections};
use crate::state::{Monitoring, SessionState};
use crate::statement_stats::StatementStats;
use crate::tls::{TlsFiles, acceptor};

/// How the server listens.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: SocketAddr,
    /// Connections served at once; one more is refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// How long shutdown waits for open connections before closing them.
    pub drain: Duration,
    /// How clients authenticate; `Trust` only on a loopback address.
    pub auth: AuthMethod,
    /// The certificate and key to offer TLS with, if any.
    pub tls: Option<TlsFiles>,
    /// Statements that run at least this long are logged with their duration, plan and rows
    /// (`log_min_duration_statement`; a session can SET its own); None logs none.
    pub log_min_duration: Option<Duration>,
    /// Where the log goes.
    pub log: ServerLog,
    /// Where the metrics are served (`GET /metrics`, OpenMetrics text), if anywhere.
    pub metrics: Option<SocketAddr>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 5432)),
            max_connections: 100,
            drain: Duration::from_secs(10),
            auth: AuthMethod::Trust,
            tls: None,
            log_min_duration: None,
            log: ServerLog::stderr(),
            metrics: None,
        }
    }
}

/// A bound listener, ready to serve a database.
pub struct Server {
    listener: TcpListener,
    options: ServeOptions,
    tls: Option<TlsAcceptor>,
    /// The metrics endpoint's listener, when `options.metrics` asks for one.
    metrics: Option<TcpListener>,
}

/// The handlers pgwire asks for, for one connection.
struct ConnectionHandlers {
    connection: Arc<Connection>,
    startup: Arc<Startup>,
    cancels: Arc<CancelRegistry>,
}

impl PgWireServerHandlers for ConnectionHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.connection.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.connection.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.connection.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancels.clone()
    }
}

/// The handlers of a connection over the limit: its startup is refused, but a cancel request
/// it carries is still served (a client at the limit can stop its own long statement).
struct RefusedHandlers {
    cancels: Arc<CancelRegistry>,
}

impl PgWireServerHandlers for RefusedHandlers {
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::new(TooManyConnections::default())
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancels.clone()
    }
}

impl Server {
    /// Binds `options.listen` (port 0 picks a free port; see [`Server::local_addr`]) and
    /// loads the TLS certificate, if one is given.
    pub async fn bind(options: ServeOptions) -> Result<Server> {
        if options.auth == AuthMethod::Trust && !options.listen.ip().is_loopback() {
            return Err(ServerError::TrustOffLoopback {
                addr: options.listen,
            });
        }
        let listener =
            TcpListener::bind(options.listen)
                .await
                .map_err(|source| ServerError::Listen {
                    addr: options.listen,
                    source,
                })?;
        let tls = options.tls.as_ref().map(acceptor).transpose()?;
        let metrics = match options.metrics {
            Some(addr) => Some(
                bind_metrics(addr)
                    .await
                    .map_err(|source| ServerError::Listen { addr, source })?,
            ),
            None => None,
        };
        Ok(Server {
            listener,
            options,
            tls,
            metrics,
        })
    }

    /// The address the metrics are served on, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
            .as_ref()
            .and_then(|listener| listener.local_addr().ok())
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|source| ServerError::Listen {
                addr: self.options.listen,
                source,
            })
    }

    /// Serves `db` until `shutdown` completes, then drains the open connections.
    pub async fn run(self, db: &Database, shutdown: impl Future<Output = ()>) -> Result<()> {
        let permits = Arc::new(Semaphore::new(self.options.max_connections));
        let cancels = Arc::new(CancelRegistry::default());
        let activities = Arc::new(Activities::new(cancels.clone()));
        let statements = Arc::new(StatementStats::default());
        let metrics = Arc::new(ServerMetrics::new(db, activities.clone()));
        // Dropped (and so stopped) when the server's run ends.
        let _metrics_endpoint = self
            .metrics
            .map(|listener| AbortOnDrop(tokio::spawn(serve_metrics(listener, metrics.clone()))));
        let auth = Arc::new(Authenticator::new(self.options.auth, db, cancels.clone()));
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    // A failed accept (a client gone before it completed) concerns that client
                    // alone.
                    let Ok((socket, _peer)) = accepted else { continue };
                    let _ = socket.set_nodelay(true);
                    match permits.clone().try_acquire_owned() {
                        Ok(permit) => {
                            let state = Arc::new(SessionState::new(
                                db,
                                Monitoring {
                                    activities: activities.clone(),
                                    statements: statements.clone(),
                                    metrics: metrics.clone(),
                                    log: self.options.log.clone(),
                                    log_min_duration: self.options.log_min_duration,
                                },
                            ));
                            let terminated = state.terminated();
                            let handlers = ConnectionHandlers {
                                startup: Arc::new(Startup::new(auth.clone(), state.clone())),
                                connection: Arc::new(Connection::new(state)),
                                cancels: cancels.clone(),
                            };
                            let tls = self.tls.clone();
                            connections.spawn(async move {
                                // An I/O error ends this connection only. Terminated, the
                                // connection closes where it is: its open transaction rolls
                                // back, as at shutdown.
                                tokio::select! {
                                    _ = process_socket(socket, tls, handlers) => {}
                                    () = terminated => {}
                                }
                                drop(permit);
                            });
                        }
                        Err(_) => {
                            let handlers = RefusedHandlers { cancels: cancels.clone() };
                            let tls = self.tls.clone();
                            connections.spawn(async move {
                                let _ = process_socket(socket, tls, handlers).await;
                            });
                        }
                    }
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(self.listener);
        let drained = tokio::time::timeout(self.options.drain, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            connections.shutdown().await;
        }
        Ok(())
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
