//! The server's error type: what can stop `rowdex serve` itself (as opposed to a statement,
//! whose errors go back to its client as PostgreSQL error responses, see `sqlstate`).

use std::net::SocketAddr;

pub type Result<T> = std::result::Result<T, ServerError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "rowdex serve --auth trust accepts connections without a password, which is only allowed on a loopback address; {addr} is not one (use --auth scram-sha-256)"
    )]
    TrustOffLoopback { addr: SocketAddr },
    #[error("TLS cannot use {path}: {reason}")]
    Tls {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("waiting for a signal failed: {0}")]
    Signal(std::io::Error),
    #[error(transparent)]
    Database(#[from] rowdex::Error),
}
