//! `rowdex serve [DIR] [--memory] [--listen ADDR] [--auth trust|scram-sha-256]
//! [--tls-cert FILE --tls-key FILE] [--max-connections N] [--durability D] ...`: opens the database and serves it
//! over the PostgreSQL wire protocol until SIGTERM or Ctrl-C, then drains the open connections
//! and flushes the store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rowdex::Durability;
use rowdex_server::{AuthMethod, ServeOptions, Server, ServerLog, TlsFiles};

use crate::location::Location;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory of the durable database (created if missing).
    #[arg(default_value = "./rowdex-data")]
    dir: PathBuf,
    /// Serve an in-memory database instead of DIR.
    #[arg(long, conflicts_with = "store")]
    memory: bool,
    /// Serve the database on an etcd cluster instead of DIR:
    /// etcd://host:port[,host:port...][/name].
    #[arg(long, value_name = "ADDRESS")]
    store: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5432")]
    listen: SocketAddr,
    /// How clients authenticate: `trust` (any user, no password; loopback addresses only) or
    /// `scram-sha-256` (a password of a role made by CREATE USER ... PASSWORD). Default: trust
    /// on a loopback address, scram-sha-256 elsewhere.
    #[arg(long, value_parser = parse_auth)]
    auth: Option<AuthMethod>,
    /// PEM certificate chain to offer TLS with (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Connections served at once; more are refused.
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Seconds shutdown waits for open connections before closing them.
    #[arg(long, default_value_t = 10)]
    drain_seconds: u64,
    /// Log each statement that runs at least this many milliseconds (0: every statement) to
    /// standard error, with its duration, plan and rows; a session can SET its own
    #[arg(long, value_name = "MS")]
    log_min_duration_statement: Option<u64>,
    /// How far a commit is pushed before it is acknowledged, when neither its tables'
    /// DURABILITY nor its session's synchronous_commit says: SKIP_WAL, ASYNC_WAL, SYNC_WAL
    /// (the default: survives a killed process) or FSYNC_WAL (survives power loss). Only a
    /// directory's store honours it
    #[arg(long, value_parser = parse_durability, default_value = "SYNC_WAL")]
    durability: Durability,
    /// Serve metrics (OpenMetrics text, which Prometheus scrapes) at http://ADDRESS/metrics
    #[arg(long, value_name = "ADDRESS")]
    metrics: Option<std::net::SocketAddr>,
}

pub async fn serve(args: ServeArgs) -> ExitCode {
    let location = Location::from_options(args.dir, args.memory, args.store);
    if args.durability != Durability::default() && !matches!(location, Location::Dir(_)) {
        eprintln!(
            "rowdex serve: --durability {} has no effect on {location}",
            args.durability
        );
    }
    let db = match location.open_with_durability(args.durability).await {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: cannot open {location}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let auth = args.auth.unwrap_or(if args.listen.ip().is_loopback() {
        AuthMethod::Trust
    } else {
        AuthMethod::ScramSha256
    });
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    let options = ServeOptions {
        listen: args.listen,
        max_connections: args.max_connections,
        drain: Duration::from_secs(args.drain_seconds),
        auth,
        tls,
        log_min_duration: args.log_min_duration_statement.map(Duration::from_millis),
        log: ServerLog::stderr(),
        metrics: args.metrics,
    };
    let server = match Server::bind(options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let database = location.to_string();
    match server.local_addr() {
        Ok(addr) => eprintln!("rowdex serve: {database} on {addr}"),
        Err(e) => eprintln!("rowdex serve: {database} ({e})"),
    }
    if let Some(addr) = server.metrics_addr() {
        eprintln!("rowdex serve: metrics at http://{addr}/metrics");
    }
    let served = server.run(&db, stop_signal()).await;
    let flushed = db.flush().await;
    match (served, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        (_, Err(e)) => {
            eprintln!("error: flushing to disk failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        // Without a SIGTERM handler, Ctrl-C still stops the server.
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    eprintln!("rowdex serve: stopping");
}

fn parse_durability(text: &str) -> Result<Durability, String> {
    Durability::from_name(text).ok_or_else(|| {
        format!("unknown durability {text}: use SKIP_WAL, ASYNC_WAL, SYNC_WAL or FSYNC_WAL")
    })
}

fn parse_auth(text: &str) -> Result<AuthMethod, String> {
    match text {
        "trust" => Ok(AuthMethod::Trust),
        "scram-sha-256" => Ok(AuthMethod::ScramSha256),
        other => Err(format!(
            "unknown authentication method {other}: use trust or scram-sha-256"
        )),
    }
}
